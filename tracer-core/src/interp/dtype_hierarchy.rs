//! NumPy's scalar-type hierarchy as `issubdtype` and `isinstance` read it: the abstract
//! classes `np.generic > np.number > np.integer | np.inexact > ...` (which `jax.numpy`
//! re-exports), `np.ndarray`, and `issubdtype(a, b)` for a dtype, a Python type or a dtype
//! name against a dtype or one of those classes. Library code branches on these to convert
//! its arguments (`if jnp.issubdtype(x.dtype, jnp.floating): ...`), so knowing them keeps
//! the analysis on the path the program takes.

use std::rc::Rc;

use super::builtins::Builtin;
use super::value::Value;
use crate::interp::model::dtypes::DType;

/// The abstract classes, by name (`np.floating`, `jnp.floating`), as `Builtin::Fn` names.
const CATEGORIES: &[&str] = &[
    "numpy.generic",
    "numpy.number",
    "numpy.integer",
    "numpy.signedinteger",
    "numpy.unsignedinteger",
    "numpy.inexact",
    "numpy.floating",
    "numpy.complexfloating",
];

/// `np.X` / `jnp.X` for an abstract class or `ndarray` (`jnp.ndarray` is `jax.Array`, not
/// this); `None` for any other name.
pub fn attr(module: &str, name: &str) -> Option<Value> {
    let full = CATEGORIES.iter().find(|c| c.strip_prefix("numpy.") == Some(name));
    let full = match (full, module, name) {
        (Some(c), "numpy" | "jax.numpy", _) => *c,
        (None, "numpy", "ndarray") => "numpy.ndarray",
        (None, "numpy" | "jax.numpy", "issubdtype") => "numpy.issubdtype",
        _ => return None,
    };
    Some(Value::Builtin(Rc::new(Builtin::Fn(full))))
}

/// The dtype `issubdtype` makes of its first argument: what `np.dtype` makes of it.
pub fn dtype_of(v: &Value) -> Option<DType> {
    super::dtype_info::dtype_of(v)
}

/// Whether `d` is under the abstract class `category`.
fn under(d: DType, category: &str) -> bool {
    match category {
        "numpy.generic" => true,
        "numpy.number" => d.is_integer() || d.is_inexact(),
        "numpy.integer" => d.is_integer(),
        "numpy.signedinteger" => d.is_signed_integer(),
        "numpy.unsignedinteger" => d.is_unsigned(),
        "numpy.inexact" => d.is_inexact(),
        "numpy.floating" => d.is_floating(),
        "numpy.complexfloating" => d.is_complex(),
        _ => false,
    }
}

/// `issubdtype(a, b)`: a Python bool, or an unknown when either side is not one tracelens
/// reads (an unknown, a key dtype, a Python type as the second argument).
pub fn issubdtype(a: &Value, b: &Value) -> Value {
    let unknown = || Value::opaque("issubdtype of a dtype tracelens does not read");
    let Some(d) = dtype_of(a) else { return unknown() };
    if d.is_key() {
        return unknown();
    }
    match b {
        Value::DType(e) if !e.is_key() => Value::Bool(d == *e),
        Value::Builtin(c) => match &**c {
            Builtin::Fn(name) if CATEGORIES.contains(name) => Value::Bool(under(d, name)),
            _ => unknown(),
        },
        _ => unknown(),
    }
}

/// `isinstance(v, np.ndarray)` and `isinstance(v, np.floating)`-like checks: `None` when not
/// known (an unknown value; a NumPy 0-d array, which the model does not tell from a NumPy
/// scalar). `name` is the `Builtin::Fn` name; `None` too for a name not of this file.
pub fn isinstance(v: &Value, name: &str) -> Option<bool> {
    if name == "numpy.ndarray" {
        return match v {
            Value::Opaque(o) if o.tracer => Some(false),
            Value::Opaque(_) => None,
            Value::Array(a) if a.numpy.get() && a.aval.shape.is_empty() => None,
            Value::Array(a) => Some(a.numpy.get() && !a.tf.get()),
            _ => Some(false),
        };
    }
    if CATEGORIES.contains(&name) {
        // NumPy scalars are instances of these; Python numbers and containers are not.
        return match v {
            Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Complex(..) | Value::Str(_) | Value::None => Some(false),
            Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_) => Some(false),
            _ => None,
        };
    }
    None
}
