//! `tf.while_loop(cond, body, loop_vars, shape_invariants=None, ...)`. Its loop variables (a
//! tuple or list; Python numbers made tensors) are passed to `cond` and `body` as separate
//! arguments, and the result has their structure. Eagerly it is a Python loop over tensors.
//! In a graph `cond` and `body` are traced once with symbolic tensors of the variables'
//! avals, and TensorFlow checks, at the call: `body` returns as many values as there are
//! loop variables (`ValueError`), each of the dtype it entered with (`TypeError: Loop var
//! ... enters the loop with type ... but has type ... after 1 iteration`) and, unless
//! `shape_invariants` is given, of the shape it entered with (`ValueError: Input tensor ...
//! enters the loop with shape (1,), but has shape (2,) after one iteration`); the outputs
//! are symbolic tensors of the entry avals.
//!
//! Not modelled (the result is unknown): nested structures inside the loop variables,
//! TensorArrays among them, and `maximum_iterations`' effect on values.

use std::rc::Rc;

use super::ops::Args;
use super::tensor::{mark_array, to_tensor, unknown_tensor};
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::ir::Prim;

pub fn while_loop(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let (Some(cond), Some(body), Some(vars)) = (p.get(0, "cond"), p.get(1, "body"), p.get(2, "loop_vars")) else {
        return Ok(unknown_tensor(interp, "a tf.while_loop whose arguments tracelens does not read"));
    };
    let is_list = match vars {
        Value::List(_) => true,
        Value::Tuple(_) => false,
        _ => return Ok(unknown_tensor(interp, "a tf.while_loop over a value that is not a tuple or list")),
    };
    let mut tensors = Vec::new();
    for v in interp.iterate(vars)? {
        match to_tensor(interp, &v, None)? {
            Some(t) => tensors.push(t),
            None => return Ok(unknown_tensor(interp, "a tf.while_loop over values tracelens does not follow")),
        }
    }
    let pack = |items: Vec<Value>| if is_list { Value::list(items) } else { Value::tuple(items) };
    if !super::in_graph(interp) {
        return eager(interp, cond, body, tensors, is_list);
    }
    let shape_invariants = p.get(3, "shape_invariants").is_some();
    let entry: Vec<Rc<Array>> = tensors.iter().map(|t| placeholder(interp, t)).collect::<PyResult<_>>()?;
    let args: Vec<Value> = entry.iter().cloned().map(Value::Array).collect();
    interp.call(cond, args.clone(), Vec::new())?;
    let out = interp.call(body, args, Vec::new())?;
    let outs = match &out {
        Value::Tuple(_) | Value::List(_) => interp.iterate(&out)?,
        single => vec![single.clone()],
    };
    if outs.len() != entry.len() {
        let msg = format!(
            "The two structures don't have the same nested structure.\n\nFirst structure: a sequence of {} values (body's output)\n\nSecond structure: a sequence of {} values (loop_vars)",
            outs.len(),
            entry.len()
        );
        return Err(interp.raise("ValueError", Code::ControlFlowSignature, msg));
    }
    for (i, (before, after)) in entry.iter().zip(&outs).enumerate() {
        let Some(after) = to_tensor(interp, after, None)? else { continue };
        let name = format!("loop_vars[{i}]");
        if before.aval.dtype != after.aval.dtype {
            let msg = format!(
                "Loop var {name} enters the loop with type <dtype: '{}'> but has type <dtype: '{}'> after 1 iteration. {name} type should remain constant.",
                before.aval.dtype.name(),
                after.aval.dtype.name()
            );
            return Err(interp.raise("TypeError", Code::ControlFlowSignature, msg));
        }
        if !shape_invariants && before.aval.shape != after.aval.shape {
            let msg = format!(
                "Input tensor `{name}` enters the loop with shape {}, but has shape {} after one iteration. To allow the shape to vary across iterations, use the `shape_invariants` argument of tf.while_loop to specify a less-specific shape.",
                before.aval.shape_tuple(),
                after.aval.shape_tuple()
            );
            return Err(interp.raise("ValueError", Code::ControlFlowSignature, msg));
        }
    }
    if shape_invariants {
        return Ok(pack(entry.iter().map(|_| unknown_tensor(interp, "a loop variable with a shape invariant")).collect()));
    }
    let results: Vec<Value> = tensors.iter().map(|t| placeholder(interp, t).map(Value::Array)).collect::<PyResult<_>>()?;
    Ok(pack(results))
}

/// A symbolic tensor of `t`'s avals in the running graph.
fn placeholder(interp: &mut Interp, t: &Rc<Array>) -> PyResult<Rc<Array>> {
    let a = crate::jax::apply1(interp, Prim::opaque("Placeholder", t.aval.clone().weak(false)), &[])?;
    Ok(mark_array(a))
}

/// Eagerly: `while cond(*vars): vars = body(*vars)`; the result is the container the body
/// last returned (the loop variables' when it never ran).
fn eager(interp: &mut Interp, cond: &Value, body: &Value, init: Vec<Rc<Array>>, mut is_list: bool) -> PyResult<Value> {
    let mut vars: Vec<Value> = init.into_iter().map(Value::Array).collect();
    loop {
        interp.tick()?;
        let go = interp.call(cond, vars.clone(), Vec::new())?;
        if !interp.truthy(&go)? {
            return Ok(if is_list { Value::list(vars) } else { Value::tuple(vars) });
        }
        let out = interp.call(body, vars.clone(), Vec::new())?;
        let outs = match &out {
            Value::Tuple(_) | Value::List(_) => interp.iterate(&out)?,
            _ => return Ok(unknown_tensor(interp, "a tf.while_loop whose body returns a single value")),
        };
        is_list = matches!(out, Value::List(_));
        if outs.len() != vars.len() {
            return Ok(unknown_tensor(interp, "a tf.while_loop whose body changes the number of loop variables"));
        }
        let mut next = Vec::with_capacity(outs.len());
        for o in &outs {
            match to_tensor(interp, o, None)? {
                Some(t) => next.push(Value::Array(t)),
                None => return Ok(unknown_tensor(interp, "a tf.while_loop whose body returns values tracelens does not follow")),
            }
        }
        vars = next;
    }
}
