//! `tf.cond`: eagerly, the branch the predicate picks is called (its output returned as it
//! is, as TensorFlow does); inside a graph, both branches are traced and their outputs
//! merged by TensorFlow's rule (`branches.rs`).
//!
//! Not modelled (unknown, so silent): a Python `bool` predicate inside a graph (TensorFlow's
//! `TypeError`), a predicate that is not a scalar `bool` tensor, and what `branches.rs`
//! leaves unknown.

use super::ops::Args;
use super::tensor::unknown_tensor;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};

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
    let label = |b: usize| if b == 0 { "true_fn" } else { "false_fn" }.to_string();
    super::branches::merge(interp, "tf.cond", label, &[pred], &[on_true, on_false])
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
