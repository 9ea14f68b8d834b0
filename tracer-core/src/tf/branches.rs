//! The outputs of a graph conditional's branches (`tf.cond`, `tf.switch_case`), merged as
//! TensorFlow 2.21 merges them: each branch's output is one value or a flat tuple or list of
//! tensors and Python numbers; every branch must agree with the first in structure and
//! dtypes, shapes may differ and are relaxed to `None` dimensions; the result is a select
//! over the branches, which binds what `jnp.where` binds.
//!
//! Not modelled (unknown, so silent): outputs that differ in structure (TensorFlow raises
//! `TypeError`, `ValueError` or `AssertionError` depending on how), outputs of another form,
//! and leaves whose values are not known.

use std::rc::Rc;

use super::ops::delegate;
use super::tensor::{to_tensor, unknown_tensor};
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::surface::JaxFn;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Single,
    Tuple,
    List,
}

/// A branch output as its structure and leaves: one value, or a flat tuple or list.
fn leaves(v: &Value) -> Option<(Kind, Vec<Value>)> {
    let leaf = |v: &Value| matches!(v, Value::Array(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_));
    match v {
        Value::Tuple(t) if t.iter().all(leaf) => Some((Kind::Tuple, t.to_vec())),
        Value::List(l) if l.borrow().iter().all(leaf) => Some((Kind::List, l.borrow().clone())),
        v if leaf(v) => Some((Kind::Single, vec![v.clone()])),
        _ => None,
    }
}

/// The conditional `op` (`tf.cond`) whose branches are named by `label` (`true_fn`,
/// `branches[1]`) returned `outs`, the branch at `preds[i]` taken when `preds[i]` holds, the
/// last one otherwise (`preds` has one predicate fewer than `outs`, the first first):
/// their merged output, TensorFlow's `TypeError` (TL109) when a dtype differs from the first
/// branch's, or an unknown tensor where the rules above are not followed.
pub fn merge(interp: &mut Interp, op: &str, label: impl Fn(usize) -> String, preds: &[Rc<Array>], outs: &[Value]) -> PyResult<Value> {
    let mut structured = Vec::with_capacity(outs.len());
    for out in outs {
        match leaves(out) {
            Some(s) => structured.push(s),
            None => return Ok(unknown_tensor(interp, &format!("{op} branches whose outputs are not tensors"))),
        }
    }
    let (kind, first) = (structured[0].0, structured[0].1.len());
    if structured.iter().any(|(k, l)| *k != kind || l.len() != first) {
        return Ok(unknown_tensor(interp, &format!("{op} branches whose outputs differ in structure")));
    }
    let mut tensors: Vec<Vec<Rc<Array>>> = Vec::with_capacity(structured.len());
    for (_, values) in &structured {
        let mut branch = Vec::with_capacity(values.len());
        for v in values {
            match to_tensor(interp, v, None)? {
                Some(t) => branch.push(t),
                None => return Ok(unknown_tensor(interp, &format!("{op} branch outputs that are not known"))),
            }
        }
        tensors.push(branch);
    }
    for (b, branch) in tensors.iter().enumerate().skip(1) {
        if let Some((x, y)) = tensors[0].iter().zip(branch).find(|(x, y)| x.aval.dtype != y.aval.dtype) {
            let describe = |a: &Array| format!("Tensor(shape={}, dtype={})", a.aval.shape_tuple(), a.aval.dtype.name());
            let (first, other) = (label(0), label(b));
            let msg = format!(
                "{first} and {other} arguments to {op} must have the same number, type, and overall structure of return values.\n\n{first} output: {x}\n{other} output: {y}\n\nError details:\n{x} and {y} have different types",
                x = describe(x),
                y = describe(y)
            );
            return Err(interp.raise("TypeError", Code::ControlFlowSignature, msg));
        }
    }
    let mut result = Vec::with_capacity(first);
    for leaf in 0..first {
        let column: Vec<&Rc<Array>> = tensors.iter().map(|t| &t[leaf]).collect();
        result.push(select(interp, op, preds, &column)?);
    }
    Ok(match kind {
        Kind::Single => result.pop().unwrap_or(Value::None),
        Kind::Tuple => Value::tuple(result),
        Kind::List => Value::list(result),
    })
}

/// One output of the branches: the one whose predicate holds, as a chain of selects ending
/// with the last branch; when the shapes differ, a tensor of the shape common to them all
/// (TensorFlow relaxes the differing dimensions to `None`), its values not followed.
fn select(interp: &mut Interp, op: &str, preds: &[Rc<Array>], column: &[&Rc<Array>]) -> PyResult<Value> {
    let first = column[0];
    if column.iter().any(|a| a.aval.shape != first.aval.shape) {
        let dims = |a: &Array| a.aval.shape.iter().map(|&d| Some(d)).collect::<Vec<_>>();
        let mut common = Some(dims(first));
        for a in &column[1..] {
            common = common.and_then(|c| super::partial::most_specific_common(&c, &dims(a)));
        }
        return match common {
            Some(common) => super::partial::make(interp, common, first.aval.dtype, None),
            None => Ok(unknown_tensor(interp, &format!("a {op} whose branches return different ranks"))),
        };
    }
    let mut acc = Value::Array(column[column.len() - 1].clone());
    for (pred, out) in preds.iter().zip(column).rev() {
        acc = delegate(interp, JaxFn::Where, vec![Value::Array(pred.clone()), Value::Array((*out).clone()), acc], Vec::new())?;
    }
    Ok(acc)
}
