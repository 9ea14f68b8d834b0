//! What a NumPy function does when handed a JAX tracer, as NumPy 2 is written.
//!
//! Most NumPy functions convert their operands with `np.asarray`, which calls
//! `jax.Array.__array__`, and that raises JAX's `TracerArrayConversionError` on a tracer
//! (TL102). Some never convert: `_wrapreduction`/`_wrapfunc` hand a non-ndarray to its own
//! method (`np.sum(x)` is `x.sum()`, `np.argsort(x)` is `x.argsort()`), `flip` indexes,
//! `moveaxis` calls `.transpose`, `real`/`imag` read the attribute, `array_equal` catches the
//! conversion's error and answers `False`. Those return what `jax.numpy` does. Each row here
//! was run against JAX 0.10.2 with NumPy 2.4 (`clean/numpy_functions_that_defer_to_jax_arrays.py`
//! and the TL102 fixtures); a function in neither table and not modelled is left unknown.

use std::rc::Rc;

use crate::interp::call::Kwargs;
use crate::interp::model::array::Array;
use crate::interp::model::surface::JaxFn;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};

/// NumPy functions that call the array's method of the second name. (`np.argsort` passes
/// `stable=None`, which JAX 0.10.2 accepts while tracing and fails to lower once the result
/// is used: tracing is all tracelens models.)
const DEFERS_TO_METHOD: &[(&str, &str)] = &[
    ("sum", "sum"),
    ("mean", "mean"),
    ("max", "max"),
    ("amax", "max"),
    ("min", "min"),
    ("amin", "min"),
    ("prod", "prod"),
    ("std", "std"),
    ("var", "var"),
    ("argmax", "argmax"),
    ("argmin", "argmin"),
    ("any", "any"),
    ("all", "all"),
    ("cumsum", "cumsum"),
    ("cumprod", "cumprod"),
    ("reshape", "reshape"),
    ("transpose", "transpose"),
    ("round", "round"),
    ("around", "round"),
    ("argsort", "argsort"),
    ("squeeze", "squeeze"),
    ("repeat", "repeat"),
];

/// NumPy functions that reach the array through indexing, attributes or a method that
/// `jax.numpy`'s function of the same name models.
const DEFERS_TO_JNP: &[&str] =
    &["flip", "moveaxis", "real", "imag", "result_type", "searchsorted", "shape", "ndim", "size", "iscomplexobj", "isrealobj", "isreal"];

/// NumPy functions whose result with a JAX array JAX does not decide the way tracelens models
/// it: `take` passes `mode='raise'`, which `jnp.take` refuses with `NotImplementedError`;
/// `permute_dims`/`unstack`/`array_equiv` are not modelled. Unknown, never a finding.
const UNKNOWN_WITH_TRACER: &[&str] = &["take", "permute_dims", "unstack", "array_equiv"];

/// NumPy functions that tracelens does not compute but knows convert their operands with
/// `np.asarray`: a tracer among them is TL102; otherwise their result is unknown.
pub const CONVERTS_UNMODELLED: &[&str] = &[
    "partition",
    "argpartition",
    "resize",
    "histogram",
    "histogram_bin_edges",
    "copy",
    "digitize",
    "interp",
    "flatnonzero",
    "cov",
    "corrcoef",
    "polyfit",
    "convolve",
    "cross",
    "kron",
    "trapezoid",
];

/// `np.<func>(*args)` where `tracer` is an operand JAX sees as a tracer.
pub fn call_with_tracer(interp: &mut Interp, func: &str, args: Vec<Value>, kwargs: Kwargs, tracer: &Rc<Array>) -> PyResult<Value> {
    // A NumPy array first hands the tracer to NumPy's own method, which converts it.
    let first = match args.first() {
        Some(Value::Array(a)) if a.refuses_numpy_conversion() => Some(a.clone()),
        _ => None,
    };
    if let (Some(&(_, method)), Some(a)) = (DEFERS_TO_METHOD.iter().find(|(f, _)| *f == func), &first) {
        return crate::interp::model::numpy::call_array_method(interp, a, method, args[1..].to_vec(), kwargs);
    }
    if DEFERS_TO_JNP.contains(&func) && (first.is_some() || func == "result_type") {
        return match JaxFn::lookup("jax.numpy", func) {
            Some(f) => crate::interp::model::numpy::call(interp, f, args, kwargs),
            None => Ok(Value::opaque(format!("np.{func}"))),
        };
    }
    if func == "array_equal" {
        return Ok(Value::Bool(false));
    }
    if UNKNOWN_WITH_TRACER.contains(&func) {
        return Ok(Value::opaque(format!("np.{func}")));
    }
    Err(crate::interp::model::numpy::numpy_conversion_error(interp, tracer))
}
