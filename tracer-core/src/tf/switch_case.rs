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
//! outputs are checked as TensorFlow checks them (each against `branches[0]`: same
//! structure, same dtypes, shapes may differ and are relaxed to `None` dimensions) and the
//! result is a select over the branches, which binds what `jnp.where` binds, as `tf.cond`
//! does (`control.rs`).
//!
//! Not modelled (unknown, so silent): an index whose value is not known eagerly, or that is
//! not a scalar, branch outputs that differ in structure (TensorFlow raises `TypeError`,
//! `ValueError` or `AssertionError` depending on how) or are not tensors, Python numbers or
//! flat tuples/lists of them, and `branch_fns` entries of any other form.

use std::rc::Rc;

use super::control::{leaves, Kind};
use super::ops::{delegate, Args};
use super::tensor::{to_tensor, unknown_tensor};
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, PyResult};
use crate::jax::array::Array;
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
    let Some(mut branches) = canonical(interp, fns)? else {
        return Ok(unknown_tensor(interp, "tf.switch_case branch_fns of a form tracelens does not read"));
    };
    if let Some(default) = p.get(2, "default") {
        branches.push(default.clone());
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

/// The branch functions in index order, or `None` when `fns` is not of a form TensorFlow
/// takes as tracelens reads it; TensorFlow's `ValueError` for no branch, or keys that are not
/// `0..n`.
fn canonical(interp: &mut Interp, fns: &Value) -> PyResult<Option<Vec<Value>>> {
    let items: Vec<Value> = match fns {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        Value::Dict(d) => d.borrow().entries.values().map(|(k, v)| Value::tuple(vec![k.clone(), v.clone()])).collect(),
        _ => return Ok(None),
    };
    if items.is_empty() {
        return Err(interp.raise("ValueError", Code::PythonException, "Must provide at least one item in 'branch_fns'".to_string()));
    }
    let pair = |v: &Value| match v {
        Value::Tuple(t) if t.len() == 2 => match &t[0] {
            Value::Int(k) => Some((*k, t[1].clone())),
            _ => None,
        },
        _ => None,
    };
    let is_dict = matches!(fns, Value::Dict(_));
    if !is_dict && items.iter().all(|v| !matches!(v, Value::Tuple(_))) {
        return Ok(Some(items));
    }
    let Some(mut pairs) = items.iter().map(pair).collect::<Option<Vec<_>>>() else { return Ok(None) };
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
fn eager(interp: &mut Interp, index: &Rc<Array>, branches: &[Value]) -> PyResult<Value> {
    let value = if index.is_tracer() { None } else { crate::jax::eval::force(index, 1).and_then(|d| d.iter().next().copied()) };
    let Some(i) = value else {
        return Ok(unknown_tensor(interp, "a tf.switch_case on an index that is not known"));
    };
    let last = branches.len() - 1;
    let picked = if i < 0.0 || i >= branches.len() as f64 { last } else { i as usize };
    interp.call(&branches[picked], Vec::new(), Vec::new())
}

/// In a graph: every branch traced, checked against the first, and selected by the index.
fn graph(interp: &mut Interp, index: &Rc<Array>, branches: &[Value], name: &str) -> PyResult<Value> {
    let n = branches.len();
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
    for (i, f) in branches.iter().enumerate() {
        super::guards::enter(interp, &preds[i], true, false);
        super::graph_names::enter_branch(interp, scope.as_deref());
        let out = interp.call(f, Vec::new(), Vec::new());
        super::graph_names::leave_branch(interp, scope.as_deref());
        super::guards::leave(interp);
        outs.push(out?);
    }
    let mut structured = Vec::with_capacity(n);
    for out in &outs {
        let Some((kind, values)) = leaves(out) else {
            return Ok(unknown_tensor(interp, "tf.switch_case branches whose outputs are not tensors"));
        };
        let mut tensors = Vec::with_capacity(values.len());
        for v in &values {
            match to_tensor(interp, v, None)? {
                Some(t) => tensors.push(t),
                None => return Ok(unknown_tensor(interp, "tf.switch_case branch outputs that are not known")),
            }
        }
        structured.push((kind, tensors));
    }
    let (kind, first) = structured[0].clone();
    for (b, (k, tensors)) in structured.iter().enumerate().skip(1) {
        if *k != kind || tensors.len() != first.len() {
            return Ok(unknown_tensor(interp, "tf.switch_case branches whose outputs differ in structure"));
        }
        if let Some((x, y)) = first.iter().zip(tensors).find(|(x, y)| x.aval.dtype != y.aval.dtype) {
            return Err(dtype_error(interp, b, x, y));
        }
    }
    let mut result = Vec::with_capacity(first.len());
    for leaf in 0..first.len() {
        let column: Vec<Rc<Array>> = structured.iter().map(|(_, t)| t[leaf].clone()).collect();
        result.push(select(interp, &preds, &column)?);
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
fn select(interp: &mut Interp, preds: &[Rc<Array>], column: &[Rc<Array>]) -> PyResult<Value> {
    let first = &column[0];
    if column.iter().any(|a| a.aval.shape != first.aval.shape) {
        let dims = |a: &Array| a.aval.shape.iter().map(|&d| Some(d)).collect::<Vec<_>>();
        let mut common = Some(dims(first));
        for a in &column[1..] {
            common = common.and_then(|c| super::partial::most_specific_common(&c, &dims(a)));
        }
        return match common {
            Some(common) => super::partial::make(interp, common, first.aval.dtype, None),
            None => Ok(unknown_tensor(interp, "a tf.switch_case whose branches return different ranks")),
        };
    }
    let mut acc = Value::Array(column[column.len() - 1].clone());
    for (pred, out) in preds.iter().zip(column).rev().skip(1) {
        acc = delegate(interp, JaxFn::Where, vec![Value::Array(pred.clone()), Value::Array(out.clone()), acc], Vec::new())?;
    }
    Ok(acc)
}

/// TensorFlow's `TypeError` for a branch whose output dtype differs from `branches[0]`'s.
fn dtype_error(interp: &mut Interp, b: usize, x: &Array, y: &Array) -> Flow {
    let describe = |a: &Array| format!("Tensor(shape={}, dtype={})", a.aval.shape_tuple(), a.aval.dtype.name());
    let msg = format!(
        "branches[0] and branches[{b}] arguments to tf.switch_case must have the same number, type, and overall structure of return values.\n\nbranches[0] output: {x}\nbranches[{b}] output: {y}\n\nError details:\n{x} and {y} have different types",
        x = describe(x),
        y = describe(y)
    );
    interp.raise("TypeError", Code::ControlFlowSignature, msg)
}
