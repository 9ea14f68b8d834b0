//! `tf.switch_case(branch_index, branch_fns, default=None, name='switch_case')`, as
//! TensorFlow 2.21 runs it. `branch_fns` is a list (or tuple) of functions, a dict of
//! `int` keys, or a list of `(int, fn)` pairs, the keys `0..n` in any order; `default` is
//! one more branch, after them. The index must be an integer tensor (a Python `int` is
//! TensorFlow's `TypeError`, eagerly and in a graph), and an index outside `0..n` picks the
//! last branch (`default` when given).
//!
//! Eagerly the branch the index picks is called, its output returned as it is. In a graph
//! every branch is traced in order (its prints and Python side effects happen once each),
//! each a graph of its own under the scope `switch_case/indexed_case/` (`name` replaces
//! `switch_case`), whose ops run at the calls whose index picks it (`guards.rs`). Their
//! outputs are merged as `tf.cond`'s are, each against `branches[0]` (`branches.rs`).
//!
//! Not modelled (unknown, so silent): an index whose value is not known eagerly, or that is
//! not a scalar, `branch_fns` entries of any other form, and what `branches.rs` leaves
//! unknown.

use std::rc::Rc;

use super::ops::{delegate, Args};
use super::tensor::unknown_tensor;
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::stmt::{call_passed_at, running_op, Slot};
use crate::jax::surface::JaxFn;

/// `tf.switch_case(branch_index, branch_fns, default=None, name='switch_case')`.
pub fn switch_case(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let (Some(index), Some(fns)) = (p.get(0, "branch_index"), p.get(1, "branch_fns")) else {
        return Ok(unknown_tensor(interp, "a tf.switch_case whose arguments tracelens does not read"));
    };
    // TensorFlow checks the index before anything else (`_indexed_case_verify_and_canonicalize_args`).
    let index = match index {
        Value::Array(a) => a.clone(),
        Value::Int(_) | Value::Bool(_) => {
            let class = if matches!(index, Value::Bool(_)) { "bool" } else { "int" };
            let msg = format!("'branch_index' must be a Tensor, got <class '{class}'>");
            return Err(interp.raise("TypeError", Code::PythonException, msg));
        }
        _ => return Ok(unknown_tensor(interp, "a tf.switch_case on an index that is not a tensor")),
    };
    if !index.aval.dtype.is_integer() {
        let msg = format!("'branch_index' must be an integer Tensor, got <dtype: '{}'>", index.aval.dtype.name());
        return Err(interp.raise("TypeError", Code::PythonException, msg));
    }
    let Some(listed) = canonical(interp, fns)? else {
        return Ok(unknown_tensor(interp, "tf.switch_case branch_fns of a form tracelens does not read"));
    };
    // Each branch with where it stands in the call (`calls.rs` names it there for the
    // reproducer): an item of `branch_fns`, then `default`.
    let mut branches: Vec<(Value, Slot)> =
        listed.into_iter().map(|(f, at)| (f, Slot { pos: 1, kw: "branch_fns", item: Some(at) })).collect();
    if let Some(default) = p.get(2, "default") {
        branches.push((default.clone(), Slot { pos: 2, kw: "default", item: None }));
    }
    if index.aval.ndim() != 0 {
        return Ok(unknown_tensor(interp, "a tf.switch_case on an index that is not a scalar"));
    }
    if !super::in_graph(interp) {
        return eager(interp, &index, &branches);
    }
    let name = match p.get(3, "name") {
        None => "switch_case".to_string(),
        Some(Value::Str(s)) => s.to_string(),
        Some(_) => return Ok(unknown_tensor(interp, "a tf.switch_case whose name is not a string")),
    };
    graph(interp, &index, &branches, &name)
}

/// The branch functions in index order, each with its place in `branch_fns` (the list's
/// item, or the dict's entry, it stands at), or `None` when `fns` is not of a form
/// TensorFlow takes as tracelens reads it; TensorFlow's `ValueError` for no branch, or keys
/// that are not `0..n`.
fn canonical(interp: &mut Interp, fns: &Value) -> PyResult<Option<Vec<(Value, usize)>>> {
    let items: Vec<Value> = match fns {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        Value::Dict(d) => d.borrow().entries.values().map(|(k, v)| Value::tuple(vec![k.clone(), v.clone()])).collect(),
        _ => return Ok(None),
    };
    if items.is_empty() {
        return Err(interp.raise("ValueError", Code::PythonException, "Must provide at least one item in 'branch_fns'".to_string()));
    }
    let pair = |(at, v): (usize, &Value)| match v {
        Value::Tuple(t) if t.len() == 2 => match &t[0] {
            Value::Int(k) => Some((*k, (t[1].clone(), at))),
            _ => None,
        },
        _ => None,
    };
    let is_dict = matches!(fns, Value::Dict(_));
    if !is_dict && items.iter().all(|v| !matches!(v, Value::Tuple(_))) {
        return Ok(Some(items.into_iter().enumerate().map(|(at, f)| (f, at)).collect()));
    }
    let Some(mut pairs) = items.iter().enumerate().map(pair).collect::<Option<Vec<_>>>() else { return Ok(None) };
    let mut keys: Vec<i64> = pairs.iter().map(|(k, _)| *k).collect();
    keys.sort_unstable();
    let n = keys.len() as i64;
    let distinct = keys.windows(2).all(|w| w[0] != w[1]);
    if keys[0] < 0 || keys[keys.len() - 1] >= n || !distinct {
        let found = keys.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(",");
        let msg = format!("branch indices (keys) must form contiguous range of [0 to {n}) but found {{{found}}}");
        return Err(interp.raise("ValueError", Code::PythonException, msg));
    }
    pairs.sort_by_key(|(k, _)| *k);
    Ok(Some(pairs.into_iter().map(|(_, f)| f).collect()))
}

/// Eagerly the branch the index picks is called (the last one for an index out of range),
/// and its output returned untouched; an index whose value is not known calls none.
fn eager(interp: &mut Interp, index: &Rc<Array>, branches: &[(Value, Slot)]) -> PyResult<Value> {
    let value = if index.is_tracer() { None } else { crate::jax::eval::force(index, 1).and_then(|d| d.iter().next().copied()) };
    let Some(i) = value else {
        return Ok(unknown_tensor(interp, "a tf.switch_case on an index that is not known"));
    };
    let last = branches.len() - 1;
    let picked = if i < 0.0 || i >= branches.len() as f64 { last } else { i as usize };
    interp.call(&branches[picked].0, Vec::new(), Vec::new())
}

/// In a graph: every branch traced, checked against the first, and selected by the index.
fn graph(interp: &mut Interp, index: &Rc<Array>, branches: &[(Value, Slot)], name: &str) -> PyResult<Value> {
    let n = branches.len();
    // Each branch as the reproducer writes it (`def branch_1(): ...`, `tf.cond`'s way).
    let op = running_op(interp);
    // The predicate under which each branch runs: `index == i`, the last branch also for an
    // index out of range.
    let idx = Value::Array(index.clone());
    let mut preds = Vec::with_capacity(n);
    for i in 0..n {
        let pred = if i + 1 < n {
            delegate(interp, JaxFn::Equal, vec![idx.clone(), Value::Int(i as i64)], Vec::new())?
        } else {
            let below = delegate(interp, JaxFn::Less, vec![idx.clone(), Value::Int(0)], Vec::new())?;
            let from_last = delegate(interp, JaxFn::GreaterEqual, vec![idx.clone(), Value::Int(i as i64)], Vec::new())?;
            delegate(interp, JaxFn::LogicalOr, vec![below, from_last], Vec::new())?
        };
        let Value::Array(pred) = pred else {
            return Ok(unknown_tensor(interp, "a tf.switch_case whose branch predicates are not known"));
        };
        preds.push(pred);
    }
    let scope = super::graph_names::unique(interp, name).map(|s| format!("{s}/indexed_case"));
    let mut outs = Vec::with_capacity(n);
    for (i, (f, slot)) in branches.iter().enumerate() {
        super::guards::enter(interp, &preds[i], true, false);
        super::graph_names::enter_branch(interp, scope.as_deref());
        let role = if slot.item.is_some() { format!("branch_{i}") } else { "default".to_string() };
        let out = call_passed_at(interp, op, *slot, &role, f, Vec::new());
        super::graph_names::leave_branch(interp, scope.as_deref());
        super::guards::leave(interp);
        outs.push(out?);
    }
    let label = |b: usize| format!("branches[{b}]");
    super::branches::merge(interp, "tf.switch_case", label, &preds[..n - 1], &outs)
}
