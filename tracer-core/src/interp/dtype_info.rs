//! NumPy's dtype objects as library code builds them: `np.dtype(x)` (which `jnp.dtype` is),
//! and `finfo` / `iinfo` with the limits of a dtype (`jnp.finfo(x.dtype).eps`,
//! `jnp.iinfo(jnp.int32).max`). Libraries normalise their `dtype=` arguments through
//! `jnp.dtype` and compare the results (gymnax's spaces, lineax), and clip or pad with
//! `finfo`'s limits, so knowing them keeps the analysis on the path the program takes. A
//! dtype object is the interpreter's `Value::DType`, the same as `jnp.float32`.
//!
//! Each answer was run against NumPy 2.4 / JAX 0.10.2
//! (`run/dtype_objects_finfo_and_iinfo.py`). What is not read here is unknown, never an
//! error: an argument that is neither a dtype, a dtype's name nor a Python type, and
//! `finfo` of an integer dtype (NumPy's `ValueError` names the scalar type, which the model
//! does not tell apart from the dtype).

use std::rc::Rc;

use super::builtins::Builtin;
use super::call::Kwargs;
use super::value::Value;
use super::{Interp, PyResult};
use crate::interp::model::array::Array;
use crate::interp::model::dtypes::DType;

/// The functions of this file, as `np.X` / `jnp.X` name them.
const FUNCTIONS: &[&str] = &["dtype", "finfo", "iinfo"];

/// NumPy's names for dtypes beyond each dtype's own name (`np.dtype("f4")`), as NumPy 2.4
/// reads them. tracelens' short names (`f32`, `i8`) are not NumPy's and are not taken.
const NUMPY_ALIASES: &[(&str, DType)] = &[
    ("float", DType::F64),
    ("double", DType::F64),
    ("single", DType::F32),
    ("half", DType::F16),
    ("int", DType::I64),
    ("int_", DType::I64),
    ("complex", DType::C128),
    ("bool_", DType::Bool),
    ("?", DType::Bool),
    ("f", DType::F32),
    ("d", DType::F64),
    ("f2", DType::F16),
    ("f4", DType::F32),
    ("f8", DType::F64),
    ("i", DType::I32),
    ("l", DType::I64),
    ("b", DType::I8),
    ("B", DType::U8),
    ("i1", DType::I8),
    ("i2", DType::I16),
    ("i4", DType::I32),
    ("i8", DType::I64),
    ("u1", DType::U8),
    ("u2", DType::U16),
    ("u4", DType::U32),
    ("u8", DType::U64),
    ("c8", DType::C64),
    ("c16", DType::C128),
];

/// `np.dtype` / `jnp.dtype`, `np.finfo` / `jnp.finfo`, `np.iinfo` / `jnp.iinfo` as a
/// builtin; `None` for any other name.
pub fn attr(module: &str, name: &str) -> Option<Value> {
    if !matches!(module, "numpy" | "jax.numpy") {
        return None;
    }
    let full = match name {
        "dtype" => "numpy.dtype",
        "finfo" => "numpy.finfo",
        "iinfo" => "numpy.iinfo",
        _ => return None,
    };
    Some(Value::Builtin(Rc::new(Builtin::Fn(full))))
}

/// Calls the function `name` (`dtype`, `finfo`, `iinfo`, without `numpy.`); `None` for a
/// name that is not one of them.
pub fn call(interp: &mut Interp, name: &str, args: &[Value], kwargs: &Kwargs) -> PyResult<Option<Value>> {
    if !FUNCTIONS.contains(&name) {
        return Ok(None);
    }
    let first = args.first().or_else(|| kwargs.first().map(|(_, v)| v));
    let unknown = || Value::opaque(format!("np.{name} of a value tracelens does not read"));
    if args.len() + kwargs.len() != 1 {
        return Ok(Some(unknown()));
    }
    Ok(Some(match name {
        "dtype" => first.and_then(dtype_of).map_or_else(unknown, Value::DType),
        // `finfo` reads an array's dtype too (`jnp.finfo(x).eps`).
        "finfo" => match first.and_then(|v| dtype_of(v).or_else(|| array_dtype(v))) {
            Some(d) if d.is_inexact() => finfo(interp, d),
            _ => unknown(),
        },
        _ => match first.and_then(dtype_of) {
            Some(d) if d.is_integer() => iinfo(interp, d),
            _ => unknown(),
        },
    }))
}

/// The dtype `np.dtype(v)` makes: a dtype, one of its names, a Python type (NumPy's
/// defaults: `int` is int64, `float` float64), or `None` (float64).
pub fn dtype_of(v: &Value) -> Option<DType> {
    match v {
        Value::DType(d) if !d.is_key() => Some(*d),
        Value::Str(s) => DType::all()
            .iter()
            .copied()
            .find(|d| d.name() == s.as_ref())
            .or_else(|| NUMPY_ALIASES.iter().find(|(n, _)| *n == s.as_ref()).map(|(_, d)| *d)),
        Value::None => Some(DType::F64),
        Value::Builtin(b) => match &**b {
            Builtin::Fn("int") => Some(DType::I64),
            Builtin::Fn("float") => Some(DType::F64),
            Builtin::Fn("bool") => Some(DType::Bool),
            Builtin::Fn("complex") => Some(DType::C128),
            _ => None,
        },
        _ => None,
    }
}

fn array_dtype(v: &Value) -> Option<DType> {
    match v {
        Value::Array(a) if !a.aval.dtype.is_key() => Some(a.aval.dtype),
        _ => None,
    }
}

/// A new instance of the builtin class `class` with these attributes.
fn info_object(interp: &mut Interp, class: &str, attrs: Vec<(&str, Value)>) -> Value {
    let class = interp.classes.get(class);
    let inst = interp.bare_instance(&class);
    if let Value::Instance(i) = &inst {
        let mut held = i.attrs.borrow_mut();
        for (name, v) in attrs {
            held.insert(Rc::from(name), v);
        }
    }
    inst
}

/// `finfo(d)`: a complex dtype's is its component's. The limits are NumPy scalars of the
/// dtype (`np.float32(1.1920929e-07)`, strongly typed: `x + finfo.eps` promotes as a
/// float32 array would); `bits` is a Python int.
fn finfo(interp: &mut Interp, d: DType) -> Value {
    let d = match d {
        DType::C64 => DType::F32,
        DType::C128 => DType::F64,
        d => d,
    };
    let eps = d.epsilon();
    // NumPy's `precision` is `int(-log10(eps))` and `resolution` `10 ** -precision`.
    let precision = (-eps.log10()).floor() as i32;
    // A NumPy scalar keeps its dtype (float64 too, whatever `jax_enable_x64` says).
    let scalar = |x: f64| crate::interp::model::numpy::mark_numpy(interp, Value::Array(Array::scalar(x, d, false)));
    let attrs = vec![
        ("eps", scalar(eps)),
        ("max", scalar(d.largest_finite())),
        ("min", scalar(-d.largest_finite())),
        ("tiny", scalar(d.smallest_normal())),
        ("smallest_normal", scalar(d.smallest_normal())),
        ("resolution", scalar(10f64.powi(-precision))),
        ("precision", Value::Int(i64::from(precision))),
        ("bits", Value::Int(d.itemsize() as i64 * 8)),
        ("dtype", Value::DType(d)),
    ];
    info_object(interp, "finfo", attrs)
}

/// `iinfo(d)`: its limits are Python ints.
fn iinfo(interp: &mut Interp, d: DType) -> Value {
    let bits = d.itemsize() as u32 * 8;
    let (min, max) = if d.is_unsigned() { (0i128, (1i128 << bits) - 1) } else { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) };
    let int = |n: i128| i64::try_from(n).map_or_else(|_| Value::opaque("a uint64 limit"), Value::Int);
    let attrs = vec![("min", int(min)), ("max", int(max)), ("bits", Value::Int(i64::from(bits))), ("dtype", Value::DType(d))];
    info_object(interp, "iinfo", attrs)
}
