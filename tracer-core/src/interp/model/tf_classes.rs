//! The Python classes of TensorFlow's values, as TensorFlow 2.21 has them: what
//! `type(t).__name__`, `isinstance(t, tf.Tensor)` and `tf.is_tensor(t)` answer. A tensor is
//! an `EagerTensor` outside a graph and a `SymbolicTensor` in a `tf.function`'s graph (a
//! tensor captured from outside stays eager); a variable is a `ResourceVariable`, no
//! `tf.Tensor` but a tensor for `tf.is_tensor`, as is an `IndexedSlices` gradient. Anything
//! tracelens does not know to be one or the other answers unknown. The interpreter's side of
//! it: the classes of TensorFlow's own objects come through `TfObjectView::class_name`.

use std::rc::Rc;

use super::super::builtins::Builtin;
use super::super::value::Value;
use super::TfObjectView;

/// Each class: the name `type(t)` is known by here, `__name__`, and where it is defined.
pub const CLASSES: &[(&str, &str, &str)] = &[
    ("tensorflow.EagerTensor", "EagerTensor", "tensorflow.python.framework.ops"),
    ("tensorflow.SymbolicTensor", "SymbolicTensor", "tensorflow.python.framework.ops"),
    ("tensorflow.ResourceVariable", "ResourceVariable", "tensorflow.python.ops.resource_variable_ops"),
    ("tensorflow.IndexedSlices", "IndexedSlices", "tensorflow.python.framework.indexed_slices"),
];

/// The class `type(v)` names, for a TensorFlow tensor, variable or `IndexedSlices`.
pub fn class_of(v: &Value) -> Option<&'static str> {
    let class = match v {
        Value::Array(a) if a.tf.get() && a.is_tracer() => "tensorflow.SymbolicTensor",
        Value::Array(a) if a.tf.get() => "tensorflow.EagerTensor",
        Value::Builtin(b) => match &**b {
            Builtin::Tf(t) => return t.class_name(),
            _ => return None,
        },
        _ => return None,
    };
    Some(class)
}

/// `type(v)` of a TensorFlow value: the class, by its name.
pub fn type_of(v: &Value) -> Option<Value> {
    class_of(v).map(|c| Value::Builtin(Rc::new(Builtin::Fn(c))))
}

/// `str(type(v))`: `<class 'tensorflow.python.framework.ops.EagerTensor'>`.
pub fn class_text(name: &str) -> Option<String> {
    CLASSES.iter().find(|(n, ..)| *n == name).map(|(_, short, module)| format!("<class '{module}.{short}'>"))
}

/// `isinstance(v, tf.Tensor)` (eager and symbolic tensors are; variables, `IndexedSlices`
/// and Python values are not) and `isinstance(v, tf.IndexedSlices)`; `None` when tracelens
/// does not know.
pub fn is_instance(v: &Value, class: &str) -> Option<bool> {
    match (class_of(v), class) {
        (Some("tensorflow.EagerTensor" | "tensorflow.SymbolicTensor"), "tensorflow.Tensor") => Some(true),
        (Some(c), _) => Some(c == class),
        (None, _) => python_value(v).then_some(false),
    }
}

/// `tf.is_tensor(v)`: any of TensorFlow's tensor-like values, variables and `IndexedSlices`
/// included; Python numbers, strings and containers are not.
pub fn is_tensor(v: &Value) -> Value {
    match class_of(v) {
        Some(_) => Value::Bool(true),
        None if python_value(v) => Value::Bool(false),
        None => Value::opaque("tf.is_tensor of a value tracelens does not know"),
    }
}

/// A plain Python value (no tensor in any TensorFlow sense).
fn python_value(v: &Value) -> bool {
    matches!(
        v,
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::List(_) | Value::Tuple(_) | Value::Dict(_)
    )
}
