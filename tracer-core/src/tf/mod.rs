//! The TensorFlow front end (design.md §11): `tf.*` as a second model on the same
//! interpreter, primitives, IR and diagnostics as JAX. A tensor is a `jax::array::Array`
//! marked `tf` (its operators, truth, attributes and printing follow TensorFlow); every op
//! binds the same primitives as its `jax.numpy` counterpart, after TensorFlow's own dtype and
//! shape rules (no implicit promotion; Python numbers take the tensor's dtype); `tf.function`
//! is a jit trace with TensorFlow's cache-key rules and messages.
//!
//! - `surface.rs`: the modelled `tf` surface, one table.
//! - `ops.rs`: how each surface function is served (mostly: checked, then a jnp function).
//!   `ops_nd.rs`: `gather_nd`, `scatter_nd`, `tensor_scatter_nd_*` on the gather/scatter prims.
//! - `tensor.rs`: conversions to tensors, TensorFlow's binary-op rule, and the Python
//!   protocol of tensors (operators, truth, attributes, `print`).
//! - `function.rs`: `tf.function`, its cache and retracing. `variable.rs`: `tf.Variable`.
//! - `asserts.rs`: `tf.debugging.assert_*`, one table of what each checks.
//! - `errors.rs`: TensorFlow's exception classes and messages.
//! - `control.rs`: `tf.cond` (eager: the branch taken; in a graph: both branches traced).
//! - `autograph/`: `if`/`while`/`for` on symbolic tensors in converted code, with AutoGraph's
//!   rules and errors.
//! - `tape.rs`, `tape_gradient.rs`, `tape_eager.rs`: `tf.GradientTape`; `gradient` by the
//!   JAX model's autodiff on the equations the tape recorded (in a graph, or eagerly).
//! - `graph_variables.rs`, `graph_call.rs`: variables read and assigned in a graph, as
//!   inputs and outputs of each call of it.

mod assert_shapes;
mod asserts;
pub mod autograph;
mod branches;
mod concrete;
mod control;
pub mod errors;
pub mod function;
mod graph_call;
pub(crate) mod graph_names;
mod graph_run;
pub mod graph_variables;
pub(crate) mod guards;
pub mod handed_out;
mod loop_checks;
mod loop_run;
pub mod names;
mod nest;
mod numerics;
pub mod ops;
mod ops_nd;
mod ops_shape;
mod ops_special;
pub mod partial;
pub mod partial_tensor;
mod print;
#[cfg(feature = "unit-tests")]
pub(crate) use print::tests as print_tests;
pub(crate) mod recursion;
mod retrace;
pub mod shape_text;
mod signature;
pub mod slices;
pub mod surface;
mod switch_case;
pub mod tape;
mod tape_eager;
mod tape_gradient;
pub mod tensor;
pub mod tensor_array;
pub mod variable;
mod while_loop;

use std::rc::Rc;

use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::dtypes::DType;
pub use function::TfState;
pub use surface::TfFn;

/// The bundled shim holding the TensorFlow classes modelled in Python (`tf.Module`,
/// `tf.random.Generator`, `tf.UnconnectedGradients`).
const PYTHON_CLASSES: &str = "_tracelens_tf";

/// The objects TensorFlow's API returns that are not tensors.
#[derive(Clone, Debug)]
pub enum TfValue {
    Fn(TfFn),
    /// `tf.function(f, ...)`.
    Function(Rc<function::TfFunction>),
    /// `f.get_concrete_function(...)`: the function it traced (or found) for those arguments.
    Concrete(Rc<function::TfFunction>, usize),
    Variable(Rc<variable::Variable>),
    /// `tf.GradientTape(...)`, also what `with ... as tape` binds.
    Tape(Rc<tape::Tape>),
    /// `tf.TensorSpec(shape, dtype)`; `None` dimensions (or an unknown rank) as `None`.
    Spec(Rc<TensorSpec>),
    /// `tensor.shape` / `tf.TensorShape`: dimensions, `None` where a trace does not know one.
    Shape(Rc<Vec<Option<usize>>>),
    /// A method bound to a TensorFlow object (`v.assign`, `f.get_concrete_function`).
    Method(Box<TfValue>, Rc<str>),
    /// A symbolic tensor whose shape is known only in part (`partial.rs`).
    Partial(Rc<partial::PartialTensor>),
    /// `tf.TensorArray(...)` (`tensor_array.rs`).
    TensorArray(Rc<tensor_array::TensorArray>),
    /// A `tf.IndexedSlices` gradient (of a variable read only through `tf.gather`): the
    /// dense tensor it converts to, and its parts when known (`slices.rs`).
    IndexedSlices(Rc<slices::Slices>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    pub shape: Option<Vec<Option<usize>>>,
    pub dtype: DType,
    pub name: Option<String>,
}

impl TfValue {
    pub fn value(self) -> Value {
        Value::Builtin(Rc::new(Builtin::Tf(self)))
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            TfValue::Fn(_) | TfValue::Method(..) => "function",
            TfValue::Function(_) => "Function",
            TfValue::Concrete(..) => "ConcreteFunction",
            TfValue::Variable(_) => "ResourceVariable",
            TfValue::Tape(_) => "GradientTape",
            TfValue::Spec(_) => "TensorSpec",
            TfValue::Shape(_) => "TensorShape",
            TfValue::Partial(_) => "SymbolicTensor",
            TfValue::TensorArray(_) => "TensorArray",
            TfValue::IndexedSlices(_) => "IndexedSlices",
        }
    }

    pub fn describe(&self) -> String {
        match self {
            TfValue::Fn(f) => format!("tf.{}", f.name()),
            TfValue::Function(f) => format!("tf.function({})", f.name),
            TfValue::Concrete(f, _) => format!("ConcreteFunction {}", f.name),
            TfValue::Variable(_) => "tf.Variable".into(),
            TfValue::Tape(_) => "tf.GradientTape".into(),
            TfValue::Spec(_) => "tf.TensorSpec".into(),
            TfValue::Shape(_) => "tf.TensorShape".into(),
            TfValue::Method(recv, name) => format!("{}.{name}", recv.describe()),
            TfValue::Partial(p) => partial::text(p, false),
            TfValue::TensorArray(_) => "tf.TensorArray".into(),
            TfValue::IndexedSlices(_) => "tf.IndexedSlices".into(),
        }
    }
}

/// An attribute of a `tf.DType` (`tf.float32.name`, `t.dtype.is_floating`), as TensorFlow
/// 2.21 has them; one tracelens does not model is opaque.
pub fn dtype_attr(d: DType, name: &str) -> Value {
    match name {
        "name" => Value::str(d.name()),
        "size" => Value::Int(d.itemsize() as i64),
        "is_floating" => Value::Bool(d.is_floating()),
        "is_integer" => Value::Bool(d.is_integer()),
        "is_bool" => Value::Bool(d.is_bool()),
        "is_complex" => Value::Bool(d.is_complex()),
        "is_unsigned" => Value::Bool(d.is_unsigned()),
        "base_dtype" => Value::TfDType(d),
        "real_dtype" => Value::TfDType(d.real_dtype()),
        // The NumPy type: `np.zeros(3, t.dtype.as_numpy_dtype)`.
        "as_numpy_dtype" => Value::DType(d),
        _ => Value::opaque(format!("tf.{}.{name}", d.name())),
    }
}

/// `tf.<name>`: a surface function, a dtype, a submodule's attribute; `None` for what
/// TensorFlow does not have, opaque for what it has and tracelens does not model.
pub fn module_attr(interp: &mut Interp, module: &str, name: &str) -> Option<Value> {
    if let Some(f) = TfFn::lookup(module, name) {
        return Some(TfValue::Fn(f).value());
    }
    if module == "tensorflow" {
        if let Some(d) = tensor::dtype_named(name) {
            return Some(Value::TfDType(d));
        }
        match name {
            "newaxis" => return Some(Value::None),
            "Tensor" => return Some(Value::Builtin(Rc::new(Builtin::Fn("tensorflow.Tensor")))),
            "IndexedSlices" => return Some(Value::Builtin(Rc::new(Builtin::Fn("tensorflow.IndexedSlices")))),
            // Python classes of the bundled `_tracelens_tf` shim.
            "Module" | "UnconnectedGradients" => {
                let shim = interp.import_shim(PYTHON_CLASSES)?;
                return interp.getattr(&shim, name).ok();
            }
            _ => {}
        }
    }
    if module == "tensorflow.random" && name == "Generator" {
        let shim = interp.import_shim(PYTHON_CLASSES)?;
        return interp.getattr(&shim, name).ok();
    }
    if module == "tensorflow.errors" {
        if let Some((class, _)) = names::EXCEPTION_CLASSES.iter().find(|(c, _)| *c == name) {
            return interp.classes.lookup(class).map(Value::Class);
        }
    }
    None
}

/// TensorFlow has its 64-bit dtypes whatever JAX's `jax_enable_x64` says: a TensorFlow op
/// that makes a tensor of a dtype it is given (computed with the `jnp` function of its
/// meaning) runs with x64 on, so `tf.ones(n, dtype=tf.int64)` is int64, with no TL207. Only
/// there: elsewhere x64 would change the dtypes `jnp` infers, which TensorFlow's do not follow.
pub fn with_x64<T>(interp: &mut Interp, f: impl FnOnce(&mut Interp) -> T) -> T {
    let saved = interp.jax.config;
    interp.jax.config.enable_x64 = true;
    let out = f(interp);
    interp.jax.config = saved;
    out
}

/// Calls a TensorFlow object.
pub fn call(interp: &mut Interp, v: &TfValue, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    match v {
        TfValue::Fn(f) => ops::call(interp, *f, args, kwargs),
        TfValue::Function(f) => function::call(interp, f, args, kwargs),
        TfValue::Concrete(f, entry) => function::call_concrete(interp, f, *entry, args, kwargs),
        TfValue::Method(recv, name) => call_method(interp, recv, name, args, kwargs),
        TfValue::Variable(_)
        | TfValue::Tape(_)
        | TfValue::Spec(_)
        | TfValue::Shape(_)
        | TfValue::Partial(_)
        | TfValue::TensorArray(_)
        | TfValue::IndexedSlices(_) => Err(interp.type_error(format!("'{}' object is not callable", v.type_name()))),
    }
}

/// `obj.name(...)` on a TensorFlow object.
pub fn call_method(interp: &mut Interp, recv: &TfValue, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    match recv {
        TfValue::Variable(v) => variable::call_method(interp, v, name, args, kwargs),
        TfValue::Tape(t) => tape::call_method(interp, t, name, args, kwargs),
        TfValue::Function(f) => function::call_method(interp, f, name, args, kwargs),
        TfValue::Shape(dims) => tensor::shape_method(interp, dims, name, args),
        TfValue::Partial(p) => Ok(partial::call_method(p, name)),
        TfValue::TensorArray(ta) => tensor_array::call_method(interp, ta, name, args, kwargs),
        _ => Ok(Value::opaque(format!("{}.{name}()", recv.describe()))),
    }
}

/// `obj.name` on a TensorFlow object; `None` is Python's AttributeError.
pub fn getattr(interp: &mut Interp, v: &TfValue, name: &str) -> PyResult<Option<Value>> {
    let method = |n: &str| Some(TfValue::Method(Box::new(v.clone()), Rc::from(n)).value());
    Ok(match v {
        TfValue::Variable(var) => return variable::getattr(interp, var, name),
        TfValue::Tape(t) => tape::getattr(t, name),
        TfValue::Partial(p) => return partial::getattr(interp, p, name),
        TfValue::TensorArray(ta) => tensor_array::getattr(ta, name),
        TfValue::IndexedSlices(s) => return slices::getattr(interp, s, name),
        TfValue::Function(f) => match name {
            "get_concrete_function" | "experimental_get_tracing_count" | "pretty_printed_concrete_signatures" => method(name),
            "python_function" => Some(f.fun.clone()),
            "__name__" => Some(Value::str(&f.name)),
            _ => Some(Value::opaque(format!("tf.function.{name}"))),
        },
        TfValue::Shape(dims) => match name {
            "as_list" | "is_fully_defined" | "is_compatible_with" => method(name),
            "rank" | "ndims" => Some(Value::Int(dims.len() as i64)),
            // `Dimension` objects (`.value`, `is_compatible_with`), which are not modelled.
            "dims" => Some(Value::list(dims.iter().map(|_| Value::opaque("a tf.compat.v1.Dimension")).collect())),
            _ => None,
        },
        TfValue::Spec(spec) => match name {
            "dtype" => Some(Value::TfDType(spec.dtype)),
            "shape" => Some(match &spec.shape {
                Some(dims) => TfValue::Shape(Rc::new(dims.clone())).value(),
                None => Value::opaque("the shape of a TensorSpec of unknown rank"),
            }),
            "name" => Some(spec.name.as_deref().map_or(Value::None, Value::str)),
            _ => None,
        },
        _ => Some(Value::opaque(format!("{}.{name}", v.describe()))),
    })
}

/// `isinstance(v, tf.X)` for the classes of the surface; `None` when it is not known.
pub fn isinstance(v: &Value, class: &TfValue) -> Option<bool> {
    match (class, v) {
        (TfValue::Fn(TfFn::Variable), Value::Builtin(b)) => Some(matches!(&**b, Builtin::Tf(TfValue::Variable(_)))),
        (TfValue::Fn(TfFn::Variable), Value::Opaque(_) | Value::UnknownNumber(_)) => None,
        // A user class is a variable only through a base tracelens does not model.
        (TfValue::Fn(TfFn::Variable), Value::Instance(i)) => i.class.lookup("__tracelens_opaque_base__").is_none().then_some(false),
        (TfValue::Fn(TfFn::Variable), _) => Some(false),
        (TfValue::Fn(TfFn::TensorSpec), Value::Builtin(b)) => Some(matches!(&**b, Builtin::Tf(TfValue::Spec(_)))),
        (TfValue::Fn(TfFn::TensorShape), Value::Builtin(b)) => Some(matches!(&**b, Builtin::Tf(TfValue::Shape(_)))),
        _ => None,
    }
}

/// Whether an active trace is a `tf.function`'s: TensorFlow builds a graph there, and ops
/// raise graph-construction errors (`ValueError`, `TypeError`) instead of eager ones
/// (`InvalidArgumentError`).
pub fn in_graph(interp: &Interp) -> bool {
    interp.jax.traces.iter().any(|t| interp.jax.records[t.record].traced_for == Some(function::TRACED_FOR))
}

/// `str()` and `repr()` of a TensorFlow object.
pub fn text(interp: &mut Interp, v: &TfValue, repr: bool) -> PyResult<String> {
    Ok(match v {
        TfValue::Shape(dims) if repr => tensor::shape_repr(dims),
        TfValue::Shape(dims) => tensor::shape_str(dims),
        TfValue::Spec(spec) => function::spec_text(spec),
        TfValue::Partial(p) => partial::text(p, repr),
        TfValue::IndexedSlices(s) => return slices::text(interp, s, repr),
        TfValue::Variable(var) => {
            let value = var.value.borrow().clone();
            let numpy = tensor::numpy_text(interp, &value)?;
            let shape = crate::jax::aval::shape_tuple(&value.aval.shape);
            format!("<tf.Variable '{}:0' shape={shape} dtype={}, numpy={numpy}>", var.name, value.aval.dtype.name())
        }
        TfValue::Function(f) => {
            format!("<tensorflow.python.eager.polymorphic_function.polymorphic_function.Function object at {:#x}>", Rc::as_ptr(f) as usize)
        }
        other => format!("<{}>", other.describe()),
    })
}

/// `obj[idx]` on a TensorFlow object: a shape's dimensions, a variable's value.
pub fn getitem(interp: &mut Interp, v: &TfValue, idx: &Value) -> PyResult<Value> {
    match v {
        TfValue::Shape(dims) => tensor::shape_getitem(interp, dims, idx),
        TfValue::Variable(var) => {
            let t = variable::read(interp, var);
            tensor::getitem(interp, &t, idx)
        }
        TfValue::Partial(_) => Ok(tensor::unknown_tensor(interp, "an item of a symbolic tensor of unknown shape")),
        other => Err(interp.type_error(format!("'{}' object is not subscriptable", other.type_name()))),
    }
}

/// What the interpreter reads of a TensorFlow object itself.
impl crate::interp::model::TfObjectView for TfValue {
    fn shape_dims(&self) -> Option<&Rc<Vec<Option<usize>>>> {
        match self {
            TfValue::Shape(dims) => Some(dims),
            _ => None,
        }
    }

    fn partial(&self) -> Option<&Rc<partial::PartialTensor>> {
        match self {
            TfValue::Partial(p) => Some(p),
            _ => None,
        }
    }

    fn is_tape(&self) -> bool {
        matches!(self, TfValue::Tape(_))
    }

    fn is_tensor_like(&self) -> bool {
        matches!(self, TfValue::Variable(_) | TfValue::Partial(_))
    }

    fn is_indexed_slices(&self) -> bool {
        matches!(self, TfValue::IndexedSlices(_))
    }

    fn is_function_method(&self) -> bool {
        matches!(self, TfValue::Method(recv, _) if matches!(**recv, TfValue::Function(_)))
    }

    fn class_name(&self) -> Option<&'static str> {
        match self {
            TfValue::Partial(_) => Some("tensorflow.SymbolicTensor"),
            TfValue::Variable(_) => Some("tensorflow.ResourceVariable"),
            TfValue::IndexedSlices(_) => Some("tensorflow.IndexedSlices"),
            _ => None,
        }
    }
}
