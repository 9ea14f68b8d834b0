//! Symbolic tensors whose shape TensorFlow knows only in part: an argument traced for an
//! `input_signature` with `None` dimensions, `tf.range` with a tensor bound, the output of a
//! conditional whose branches disagree on a dimension. tracelens' avals have every
//! dimension, so such a tensor is not an array: it carries its rank, its known dimensions
//! and its dtype. What reads only those (`x.shape`, `x.dtype`, a loop over its rows, its
//! text) is answered as TensorFlow answers; an op on it gives a symbolic tensor tracelens
//! does not follow (unknown, never a finding).

use std::rc::Rc;

use super::{errors, TfValue};
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;

pub use super::partial_tensor::PartialTensor;

/// A symbolic tensor of these dimensions: a `PartialTensor`, or a tensor of the running
/// graph when every dimension is known.
pub fn make(interp: &mut Interp, dims: Vec<Option<usize>>, dtype: DType, name: Option<String>) -> PyResult<Value> {
    if dims.iter().all(Option::is_some) && interp.jax.staging_depth() > 0 {
        let shape: Vec<usize> = dims.iter().map(|d| d.unwrap_or(0)).collect();
        let t = crate::jax::apply1(interp, crate::jax::ir::Prim::opaque("Placeholder", Aval::new(&shape, dtype)), &[])?;
        return Ok(Value::Array(super::tensor::mark_array(t)));
    }
    Ok(TfValue::Partial(Rc::new(PartialTensor { dims, dtype, name })).value())
}

pub use crate::interp::model::tf::partial::of;

/// The dimensions and dtype of a tensor, known or in part (`None` for other values).
pub fn dims_of(v: &Value) -> Option<(Vec<Option<usize>>, DType)> {
    match v {
        Value::Array(a) if a.tf.get() => Some((a.aval.shape.iter().map(|&d| Some(d)).collect(), a.aval.dtype)),
        _ => of(v).map(|p| (p.dims.clone(), p.dtype)),
    }
}

/// Two tensors' shapes joined as TensorFlow's conditional joins its branches': a dimension
/// they disagree on is `None` (`None` when the ranks differ).
pub fn most_specific_common(a: &[Option<usize>], b: &[Option<usize>]) -> Option<Vec<Option<usize>>> {
    (a.len() == b.len()).then(|| a.iter().zip(b).map(|(x, y)| if x == y { *x } else { None }).collect())
}

pub fn getattr(interp: &mut Interp, p: &Rc<PartialTensor>, name: &str) -> PyResult<Option<Value>> {
    Ok(Some(match name {
        "shape" => TfValue::Shape(Rc::new(p.dims.clone())).value(),
        "dtype" => Value::TfDType(p.dtype),
        "ndim" => Value::Int(p.dims.len() as i64),
        "numpy" => {
            return Err(interp.raise(
                "AttributeError",
                crate::diagnostics::Code::TracerToNumpy,
                "'SymbolicTensor' object has no attribute 'numpy'",
            ))
        }
        "get_shape" => TfValue::Method(Box::new(TfValue::Partial(p.clone())), Rc::from(name)).value(),
        _ => Value::opaque_tracer("an attribute of a symbolic tensor tracelens does not model"),
    }))
}

pub fn call_method(p: &Rc<PartialTensor>, name: &str) -> Value {
    match name {
        "get_shape" => TfValue::Shape(Rc::new(p.dims.clone())).value(),
        _ => Value::opaque_tracer("a method of a symbolic tensor tracelens does not model"),
    }
}

/// `str()` / `repr()`: `Tensor("x:0", shape=(None, 3), dtype=float32)`.
pub fn text(p: &PartialTensor, repr: bool) -> String {
    let name = p.name.as_deref().unwrap_or("?");
    let shape = super::tensor::shape_str(&p.dims);
    let dtype = p.dtype.name();
    if repr {
        format!("<tf.Tensor '{name}:0' shape={shape} dtype={dtype}>")
    } else {
        format!("Tensor(\"{name}:0\", shape={shape}, dtype={dtype})")
    }
}

/// Python truth of a symbolic tensor: converted code stages it (not followed: both ways are
/// analysed); elsewhere TensorFlow's `OperatorNotAllowedInGraphError`.
pub fn truth(interp: &mut Interp, what: &str) -> PyResult<bool> {
    if interp.in_library() {
        return Err(interp.stop_unknown("a shim's test of a symbolic tensor"));
    }
    if super::tensor::autograph_active(interp) {
        return Err(interp.stop_unknown(format!("AutoGraph stages `{what}` on a symbolic tensor of unknown shape")));
    }
    Err(errors::bool_in_graph(interp))
}

/// `for x in t:` over a partly known tensor: converted code stages a loop over its rows
/// (when a row's shape is known); elsewhere TensorFlow's error.
pub fn iterate(interp: &mut Interp, p: &PartialTensor) -> PyResult<Vec<Value>> {
    if super::tensor::autograph_active(interp) && !interp.in_library() {
        let row: Option<Vec<usize>> = p.dims.iter().skip(1).copied().collect();
        return Err(match (p.dims.is_empty(), row) {
            (false, Some(row)) => {
                super::loop_checks::iterating_range(interp, p);
                super::autograph::convert_iteration(interp, Aval::new(&row, p.dtype))
            }
            _ => interp.stop_unknown("AutoGraph stages a loop over rows whose shape is not known"),
        });
    }
    Err(errors::iterate_in_graph(interp))
}

/// Python's `TypeError` for a `None` operand, inside a `tf.function` trace that read a `None`
/// dimension of a tensor's shape: the dimension is used as a number (TL108), which holds
/// for no input of the signature; `None` elsewhere.
pub fn none_dimension_error(interp: &Interp, message: &str) -> Option<crate::interp::Flow> {
    if !interp.tf.none_dimension_read || !super::in_graph(interp) {
        return None;
    }
    Some(interp.raise("TypeError", crate::diagnostics::Code::DynamicShape, message))
}
