//! `tf.cond`: eagerly, the branch the predicate picks is called (its output returned as it
//! is, as TensorFlow does); inside a graph, both branches are traced, their outputs checked
//! against each other by TensorFlow's rule (same structure and dtypes; shapes may differ) and
//! the result is a select of the two, which binds what `jnp.where` binds.
//!
//! Not modelled (unknown, so silent): a Python `bool` predicate inside a graph (TensorFlow's
//! `TypeError`), a predicate that is not a scalar `bool` tensor, branch outputs that differ
//! in structure (TensorFlow raises `TypeError`, `ValueError` or `AssertionError` depending
//! on how), and outputs that are not tensors, Python numbers or tuples/lists of them.

use super::ops::{delegate, Args};
use super::tensor::{to_tensor, unknown_tensor};
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::surface::JaxFn;

/// `tf.cond(pred, true_fn, false_fn, name=None)`.
pub fn cond(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let (Some(pred), Some(true_fn), Some(false_fn)) = (p.get(0, "pred"), p.get(1, "true_fn"), p.get(2, "false_fn")) else {
        return Ok(unknown_tensor(interp, "a tf.cond whose arguments tracelens does not read"));
    };
    if !super::in_graph(interp) {
        return eager(interp, pred, true_fn, false_fn);
    }
    let Value::Array(pred) = pred else {
        return Ok(unknown_tensor(interp, "a tf.cond on a predicate that is not a tensor"));
    };
    if !pred.aval.dtype.is_bool() || pred.aval.ndim() != 0 {
        return Ok(unknown_tensor(interp, "a tf.cond on a predicate that is not a scalar bool"));
    }
    let pred = pred.clone();
    // Each branch as the reproducer writes it (`def true_fn(): ...`).
    let op = crate::jax::stmt::running_op(interp);
    // Each branch is a graph of its own under the scope `cond` (`graph_names.rs`), whose ops
    // run when the predicate picks it (`guards.rs`).
    let scope = super::graph_names::cond_scope(interp);
    let branch = |interp: &mut Interp, taken: bool, name: &str, f: &Value| {
        super::guards::enter(interp, &pred, taken, false);
        super::graph_names::enter_branch(interp, scope.as_deref());
        let out = crate::jax::stmt::call_passed(interp, op, name, f, Vec::new());
        super::graph_names::leave_branch(interp, scope.as_deref());
        super::guards::leave(interp);
        out
    };
    let on_true = branch(interp, true, "true_fn", true_fn);
    let on_false = on_true.is_ok().then(|| branch(interp, false, "false_fn", false_fn));
    let (on_true, on_false) = (on_true?, on_false.unwrap_or(Ok(Value::None))?);
    let (Some((t_kind, t_leaves)), Some((f_kind, f_leaves))) = (leaves(&on_true), leaves(&on_false)) else {
        return Ok(unknown_tensor(interp, "tf.cond branches whose outputs are not tensors"));
    };
    if t_kind != f_kind || t_leaves.len() != f_leaves.len() {
        return Ok(unknown_tensor(interp, "tf.cond branches whose outputs differ in structure"));
    }
    let mut pairs = Vec::with_capacity(t_leaves.len());
    for (t, f) in t_leaves.iter().zip(&f_leaves) {
        match (to_tensor(interp, t, None)?, to_tensor(interp, f, None)?) {
            (Some(t), Some(f)) => pairs.push((t, f)),
            _ => return Ok(unknown_tensor(interp, "tf.cond branch outputs that are not known")),
        }
    }
    if let Some((t, f)) = pairs.iter().find(|(t, f)| t.aval.dtype != f.aval.dtype) {
        let describe = |a: &crate::jax::array::Array| format!("Tensor(shape={}, dtype={})", a.aval.shape_tuple(), a.aval.dtype.name());
        let msg = format!(
            "true_fn and false_fn arguments to tf.cond must have the same number, type, and overall structure of return values.\n\ntrue_fn output: {a}\nfalse_fn output: {b}\n\nError details:\n{a} and {b} have different types",
            a = describe(t),
            b = describe(f)
        );
        return Err(interp.raise("TypeError", Code::ControlFlowSignature, msg));
    }
    let mut outs = Vec::with_capacity(pairs.len());
    for (t, f) in pairs {
        if t.aval.shape != f.aval.shape {
            // TensorFlow relaxes the differing dimensions to `None`.
            let dims = |a: &crate::jax::array::Array| a.aval.shape.iter().map(|&d| Some(d)).collect::<Vec<_>>();
            match super::partial::most_specific_common(&dims(&t), &dims(&f)) {
                Some(common) => outs.push(super::partial::make(interp, common, t.aval.dtype, None)?),
                None => outs.push(unknown_tensor(interp, "a tf.cond whose branches return different ranks")),
            }
            continue;
        }
        outs.push(delegate(interp, JaxFn::Where, vec![Value::Array(pred.clone()), Value::Array(t), Value::Array(f)], Vec::new())?);
    }
    Ok(match t_kind {
        Kind::Single => outs.pop().unwrap_or(Value::None),
        Kind::Tuple => Value::tuple(outs),
        Kind::List => Value::list(outs),
    })
}

/// Eagerly `tf.cond` calls the branch the predicate picks and returns its output untouched.
fn eager(interp: &mut Interp, pred: &Value, true_fn: &Value, false_fn: &Value) -> PyResult<Value> {
    let taken = match pred {
        Value::Bool(b) => Some(*b),
        Value::Array(a) if a.aval.dtype.is_bool() && a.aval.ndim() == 0 && !a.is_tracer() => {
            crate::jax::eval::force(a, 1).and_then(|d| d.iter().next().copied()).map(|x| x != 0.0)
        }
        _ => None,
    };
    match taken {
        Some(true) => interp.call(true_fn, Vec::new(), Vec::new()),
        Some(false) => interp.call(false_fn, Vec::new(), Vec::new()),
        // Which branch runs is not known, so neither is called.
        None => Ok(unknown_tensor(interp, "a tf.cond on a predicate that is not known")),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Single,
    Tuple,
    List,
}

/// A branch output as its structure and leaves: one value, or a flat tuple or list.
pub(super) fn leaves(v: &Value) -> Option<(Kind, Vec<Value>)> {
    let leaf = |v: &Value| matches!(v, Value::Array(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_));
    match v {
        Value::Tuple(t) if t.iter().all(leaf) => Some((Kind::Tuple, t.to_vec())),
        Value::List(l) if l.borrow().iter().all(leaf) => Some((Kind::List, l.borrow().clone())),
        v if leaf(v) => Some((Kind::Single, vec![v.clone()])),
        _ => None,
    }
}
