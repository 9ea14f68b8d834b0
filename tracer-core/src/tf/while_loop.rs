//! `tf.while_loop(cond, body, loop_vars, shape_invariants=None, ...)`. Its loop variables (a
//! tuple or list, whose items may nest tuples, lists and dicts of tensors and TensorArrays;
//! Python numbers made tensors) are passed to `cond` and `body` as separate arguments, and
//! the result has their structure. Eagerly it is a Python loop over tensors. In a graph
//! `cond` and `body` are traced once with symbolic tensors of the variables' avals (of their
//! `shape_invariants`, when given), and TensorFlow checks, at the call: `body` returns the
//! loop variables' nested structure (`ValueError: The two structures don't have the same
//! nested structure.`), each tensor of the dtype it entered with (`TypeError: Loop var ...
//! enters the loop with type ... but has type ... after 1 iteration`) and of the shape it
//! entered with, or one its invariant allows (`ValueError: Input tensor ... enters the loop
//! with shape (1,), but has shape (2,) after one iteration`); the outputs are symbolic
//! tensors of the entry avals, or of the invariants' shapes.
//!
//! A tensor is named as TensorFlow names it, by its graph tensor, where tracelens knows that
//! name exactly (an argument of the `tf.function`, `x:0`), and otherwise by its path in
//! `loop_vars` (`loop_vars[1]['h']` where TensorFlow says `ones:0`). Not modelled (the result is unknown): a single
//! tensor as `loop_vars`, an invariant that does not fit the value it is given for, and
//! `maximum_iterations`' effect on values (the loop's checks, and a loop around it, are then not
//! run on a call's values).

use std::collections::HashMap;
use std::rc::Rc;

use super::nest;
use super::ops::Args;
use super::tensor::{mark_array, to_tensor, unknown_tensor};
use super::{partial, TfValue};
use crate::diagnostics::Code;
use crate::interp::builtins::Builtin;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;

type Dims = Vec<Option<usize>>;

pub fn while_loop(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let (Some(cond), Some(body), Some(vars)) = (p.get(0, "cond"), p.get(1, "body"), p.get(2, "loop_vars")) else {
        return Ok(unknown_tensor(interp, "a tf.while_loop whose arguments tracelens does not read"));
    };
    if !matches!(vars, Value::List(_) | Value::Tuple(_)) {
        return Ok(unknown_tensor(interp, "a tf.while_loop over a value that is not a tuple or list"));
    }
    let Some(vars) = nest::map(interp, vars, "loop_vars", &mut |i, leaf, _| leaf_value(i, leaf))? else {
        return Ok(unknown_tensor(interp, "a tf.while_loop over values tracelens does not follow"));
    };
    let max = p.get(7, "maximum_iterations").filter(|m| !m.is_none());
    if !super::in_graph(interp) {
        let max = match max {
            Some(m) => match eager_count(m) {
                Some(n) => Some(n),
                None => return Ok(unknown_tensor(interp, "a tf.while_loop whose maximum_iterations tracelens does not know")),
            },
            None => None,
        };
        return eager(interp, cond, body, vars, max);
    }
    // TensorFlow's messages name a loop variable by its graph tensor (`x:0`); where that
    // name is not known exactly, by its path in `loop_vars`.
    let mut names: HashMap<String, String> = HashMap::new();
    nest::map(interp, &vars, "loop_vars", &mut |i, leaf, path| {
        if let Some(name) = graph_name(i, leaf) {
            names.insert(path.to_string(), name);
        }
        Ok(Some(leaf.clone()))
    })?;
    let invariants = match p.get(3, "shape_invariants") {
        Some(inv) => match invariants(&vars, inv) {
            Some(map) => map,
            None => return Ok(unknown_like(interp, &vars)),
        },
        None => HashMap::new(),
    };
    // The body's arguments: each leaf a symbolic value of its avals (or its invariant).
    let mut fits = true;
    let entry = nest::map(interp, &vars, "loop_vars", &mut |i, leaf, path| {
        let inv = invariants.get(path);
        if let (Some(inv), Some((dims, _))) = (inv, partial::dims_of(leaf)) {
            fits &= compatible(inv, &dims);
        }
        symbolic_like(i, leaf, inv).map(Some)
    })?
    .expect("every leaf was followed");
    if !fits {
        return Ok(unknown_like(interp, &vars));
    }
    let args = interp.iterate(&entry)?;
    // `cond` and `body` as the reproducer writes them (`def body(i, acc): ...`).
    // Each a graph of its own under the loop's scope (`while/assert_less/...`); the checks
    // of the body run at each iteration (`loop_checks.rs`).
    let op = crate::jax::stmt::running_op(interp);
    let scope = super::graph_names::while_scope(interp);
    super::graph_names::enter_branch(interp, scope.as_deref());
    let test = crate::jax::stmt::call_passed(interp, op, "cond", cond, args.clone());
    super::graph_names::leave_branch(interp, scope.as_deref());
    let test = test?;
    super::graph_names::enter_branch(interp, scope.as_deref());
    let id = super::loop_checks::begin(interp, 0);
    // A call stops it after `maximum_iterations` passes (an int32 scalar in TensorFlow's
    // graph); one tracelens does not read is not followed.
    if let Some(m) = max {
        match graph_count(m) {
            Some(count) => super::loop_checks::cap(interp, id, count),
            None => super::loop_checks::not_followed(interp, id),
        }
    }
    let out = crate::jax::stmt::call_passed(interp, op, "body", body, args.clone());
    super::graph_names::leave_branch(interp, scope.as_deref());
    let traced = match &out {
        Ok(v @ (Value::Tuple(_) | Value::List(_))) => interp.iterate(v).ok(),
        _ => None,
    };
    let init = interp.iterate(&vars).unwrap_or_default();
    super::loop_checks::end(
        interp,
        id,
        &init,
        &args,
        traced.as_deref().unwrap_or_default(),
        super::loop_checks::Traced::While(Some(&test)),
    );
    let out = out?;
    let outs = match &out {
        Value::Tuple(_) | Value::List(_) => interp.iterate(&out)?,
        single => vec![single.clone()],
    };
    let entry_items = interp.iterate(&entry)?;
    if outs.len() != entry_items.len() {
        let msg = format!(
            "The two structures don't have the same nested structure.\n\nFirst structure: a sequence of {} values (body's output)\n\nSecond structure: a sequence of {} values (loop_vars)",
            outs.len(),
            entry_items.len()
        );
        return Err(interp.raise("ValueError", Code::ControlFlowSignature, msg));
    }
    let (entry_seq, out_seq) = (Value::tuple(entry_items), Value::tuple(outs));
    if !nest::same_structure(&entry_seq, &out_seq) {
        let msg = "The two structures don't have the same nested structure.\n\nFirst structure: the body's output\n\nSecond structure: loop_vars\n\nMore specifically: a nested sequence or dict differs in length or keys".to_string();
        return Err(interp.raise("ValueError", Code::ControlFlowSignature, msg));
    }
    let mut pairs = Vec::new();
    nest::zip_leaves(&entry_seq, &out_seq, "loop_vars", &mut pairs);
    for (before, after, path) in &pairs {
        let name = names.get(path).unwrap_or(path);
        check_leaf(interp, before, after, name, invariants.get(path))?;
    }
    let result = nest::map(interp, &vars, "loop_vars", &mut |i, leaf, path| symbolic_like(i, leaf, invariants.get(path)).map(Some))?;
    let result = result.expect("every leaf was followed");
    // A call runs a loop around this one with these values as the loop's results
    // (`loop_run.rs`), when each loop variable is one tensor.
    if let Ok(after) = interp.iterate(&result) {
        super::loop_checks::exited(interp, id, &after);
    }
    Ok(result)
}

/// The graph tensor name of a loop variable's leaf, where tracelens knows it exactly.
fn graph_name(interp: &Interp, leaf: &Value) -> Option<String> {
    match leaf {
        Value::Array(a) => interp.tf.graph_input_names.get(&(Rc::as_ptr(a) as usize)).cloned(),
        _ => None,
    }
}

/// A loop variable's leaf as the loop carries it: a tensor (Python numbers converted), a
/// partly known tensor or a TensorArray; `None` for anything else.
fn leaf_value(interp: &mut Interp, leaf: &Value) -> PyResult<Option<Value>> {
    if let Value::Builtin(b) = leaf {
        if let Builtin::Tf(TfValue::TensorArray(_) | TfValue::Partial(_)) = &**b {
            return Ok(Some(leaf.clone()));
        }
    }
    Ok(to_tensor(interp, leaf, None)?.map(Value::Array))
}

/// The `shape_invariants` of each tensor leaf, by path; `None` when they do not have the
/// loop variables' structure or a leaf is not a `tf.TensorShape`.
fn invariants(vars: &Value, inv: &Value) -> Option<HashMap<String, Dims>> {
    if !nest::same_structure(vars, inv) {
        return None;
    }
    let mut pairs = Vec::new();
    nest::zip_leaves(vars, inv, "loop_vars", &mut pairs);
    let mut out = HashMap::new();
    for (_, shape, path) in pairs {
        match &shape {
            Value::Builtin(b) => match &**b {
                Builtin::Tf(TfValue::Shape(d)) => {
                    out.insert(path, (**d).clone());
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    Some(out)
}

fn compatible(inv: &[Option<usize>], dims: &[Option<usize>]) -> bool {
    inv.len() == dims.len() && inv.iter().zip(dims).all(|(a, b)| a.is_none() || b.is_none() || a == b)
}

/// A fresh symbolic value like `leaf` in the running graph: a tensor of its avals (of the
/// invariant's shape when there is one), a TensorArray of its element shape.
fn symbolic_like(interp: &mut Interp, leaf: &Value, inv: Option<&Dims>) -> PyResult<Value> {
    if let Value::Builtin(b) = leaf {
        if let Builtin::Tf(TfValue::TensorArray(ta)) = &**b {
            return Ok(super::tensor_array::loop_placeholder(ta));
        }
    }
    let Some((dims, dtype)) = partial::dims_of(leaf) else {
        return Ok(unknown_tensor(interp, "a loop variable tracelens does not follow"));
    };
    let dims = inv.cloned().unwrap_or(dims);
    match dims.iter().copied().collect::<Option<Vec<usize>>>() {
        Some(shape) => Ok(Value::Array(placeholder(interp, Aval::new(&shape, dtype))?)),
        None => partial::make(interp, dims, dtype, None),
    }
}

/// Every leaf of `vars` unknown (the loop is not followed).
fn unknown_like(interp: &mut Interp, vars: &Value) -> Value {
    let why = "a tf.while_loop whose shape invariants tracelens does not follow";
    nest::map(interp, vars, "", &mut |i, _, _| Ok(Some(unknown_tensor(i, why))))
        .ok()
        .flatten()
        .unwrap_or_else(|| unknown_tensor(interp, why))
}

/// TensorFlow's checks of one loop variable after one pass of the body.
fn check_leaf(interp: &mut Interp, before: &Value, after: &Value, name: &str, inv: Option<&Dims>) -> PyResult<()> {
    let Some((entry_dims, entry_dtype)) = partial::dims_of(before) else { return Ok(()) };
    let exit = match partial::dims_of(after) {
        Some(d) => Some(d),
        None => leaf_value(interp, after)?.and_then(|v| partial::dims_of(&v)),
    };
    let Some((exit_dims, exit_dtype)) = exit else { return Ok(()) };
    if entry_dtype != exit_dtype {
        return Err(dtype_changed(interp, name, entry_dtype, exit_dtype));
    }
    // Only a shape known in full is compared: a dimension tracelens lost is not a change.
    if exit_dims.iter().any(Option::is_none) {
        return Ok(());
    }
    let (allowed, changed) = match inv {
        Some(inv) => (inv.clone(), !compatible(inv, &exit_dims)),
        None => (entry_dims.clone(), entry_dims != exit_dims),
    };
    if changed {
        let shape = super::tensor::shape_str;
        let msg = format!(
            "Input tensor `{name}` enters the loop with shape {}, but has shape {} after one iteration. To allow the shape to vary across iterations, use the `shape_invariants` argument of tf.while_loop to specify a less-specific shape.",
            shape(&allowed),
            shape(&exit_dims)
        );
        return Err(interp.raise("ValueError", Code::ControlFlowSignature, msg));
    }
    Ok(())
}

fn dtype_changed(interp: &Interp, name: &str, before: DType, after: DType) -> crate::interp::Flow {
    let msg = format!(
        "Loop var {name} enters the loop with type <dtype: '{}'> but has type <dtype: '{}'> after 1 iteration. {name} type should remain constant.",
        before.name(),
        after.name()
    );
    interp.raise("TypeError", Code::ControlFlowSignature, msg)
}

/// A symbolic tensor of `aval` in the running graph.
fn placeholder(interp: &mut Interp, aval: Aval) -> PyResult<Rc<crate::jax::array::Array>> {
    let a = crate::jax::apply1(interp, Prim::opaque("Placeholder", aval.weak(false)), &[])?;
    Ok(mark_array(a))
}

/// `maximum_iterations` eagerly: TensorFlow's `int(...)` of a Python `int` or a known
/// integer scalar tensor.
fn eager_count(m: &Value) -> Option<i64> {
    match m {
        Value::Int(n) => Some(*n),
        Value::Array(a) if a.aval.shape.is_empty() && !a.is_tracer() && a.aval.dtype.is_integer() => {
            crate::jax::eval::force(a, 1)?.iter().next().map(|x| *x as i64)
        }
        _ => None,
    }
}

/// `maximum_iterations` in a graph: a Python `int`, or an int32 scalar tensor (of the graph or
/// known), as the loop counter compares it.
fn graph_count(m: &Value) -> Option<Value> {
    match m {
        Value::Int(n) => i32::try_from(*n).ok().map(|n| Value::Array(crate::jax::array::Array::scalar(f64::from(n), DType::I32, false))),
        Value::Array(a) if a.aval.shape.is_empty() && a.aval.dtype == DType::I32 => Some(m.clone()),
        _ => None,
    }
}

/// Eagerly: `while cond(*vars): vars = body(*vars)`; the result is the container the body
/// last returned (the loop variables' when it never ran). With `maximum_iterations` (`max`)
/// the test is `k < max and cond(*vars)`, `cond` called either way.
fn eager(interp: &mut Interp, cond: &Value, body: &Value, mut vars: Value, max: Option<i64>) -> PyResult<Value> {
    let mut k: i64 = 0;
    loop {
        interp.tick()?;
        let args = interp.iterate(&vars)?;
        let go = interp.call(cond, args.clone(), Vec::new())?;
        if let Some(max) = max {
            // TensorFlow's `logical_and` of the count and the test: a test that is not a
            // boolean is its error, not claimed.
            let boolean = match &go {
                Value::Bool(_) => true,
                Value::Array(a) => a.aval.dtype == DType::Bool,
                _ => false,
            };
            if !boolean {
                return Ok(unknown_tensor(interp, "a tf.while_loop whose cond does not give a boolean"));
            }
            if k >= max {
                return Ok(vars);
            }
        }
        if !interp.truthy(&go)? {
            return Ok(vars);
        }
        k += 1;
        let out = interp.call(body, args, Vec::new())?;
        if !matches!(out, Value::Tuple(_) | Value::List(_)) {
            return Ok(unknown_tensor(interp, "a tf.while_loop whose body returns a single value"));
        }
        let Some(next) = nest::map(interp, &out, "loop_vars", &mut |i, leaf, _| leaf_value(i, leaf))? else {
            return Ok(unknown_tensor(interp, "a tf.while_loop whose body returns values tracelens does not follow"));
        };
        // With a cap, TensorFlow also tells a list from a tuple (and raises a long TypeError).
        let same = if max.is_some() { nest::same_structure_and_types(&vars, &next) } else { nest::same_structure(&vars, &next) };
        if !same {
            return Ok(unknown_tensor(interp, "a tf.while_loop whose body changes the structure of its loop variables"));
        }
        vars = next;
    }
}
