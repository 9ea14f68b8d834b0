//! Errors a `tf.function`'s graph raises only when it runs, and the ops graph execution
//! prunes (TL213). An op whose failure is certain from what the trace knows (a `tf.gather`
//! whose constant indices are out of range on CPU, an integer `//` or `%` by a constant
//! divisor holding a zero) is recorded while tracing, and so is a `tf.gather` whose indices
//! are one of the function's tensor arguments, checked at each call on the call's values.
//! When the trace ends, its fate follows from the graph: an op whose result reaches the
//! outputs through plain equations runs, so every call of the graph raises TensorFlow's
//! `Graph execution error` at the call; an op whose result nothing can read (its statement
//! discards it, or assigns it to a name never read again) and that reaches neither the
//! outputs nor any higher-order equation is pruned, so its error never happens (TL213).
//! Anything between — a result read by code whose graph effect tracelens does not follow
//! (`tf.print`, a variable update, a nested function) — is left silent.

use std::collections::HashSet;
use std::rc::Rc;

use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, Site};
use crate::jax::array::Array;
use crate::jax::ir::{Atom, Jaxpr, VarId};

/// An op of a trace that fails whenever it runs.
#[derive(Debug, Clone)]
pub struct Failing {
    /// The trace (`TraceFrame::id`) and the variable the op's result is bound to.
    trace: u32,
    var: VarId,
    site: Option<Site>,
    /// TensorFlow's node type (`GatherV2`) and the kernel's message.
    node: &'static str,
    message: String,
    /// Bound in a branch or loop body of the graph (`tf.cond`, AutoGraph's `if`, `while` and
    /// `for` on tensors): whether it runs depends on the call's values, so it is left silent.
    conditional: bool,
}

/// The op of a finished trace that makes every run of its graph fail.
#[derive(Debug, Clone)]
pub struct GraphFailure {
    site: Option<Site>,
    node: &'static str,
    message: String,
}

/// A `tf.gather` of a trace whose indices are one of the function's tensor arguments: whether
/// it fails depends on each call's values.
#[derive(Debug, Clone)]
pub struct ArgumentIndices {
    trace: u32,
    indices: VarId,
    result: VarId,
    size: usize,
    site: Option<Site>,
    conditional: bool,
}

/// What the graph of a finished trace does at its calls: fail at every one (`failure`), or
/// fail at those whose tensor argument `input` holds an index out of `[0, size)` for a
/// gather that runs at every call (`checks`).
#[derive(Debug, Clone, Default)]
pub struct Settled {
    failure: Option<GraphFailure>,
    checks: Vec<(usize, usize, Option<Site>)>,
}

/// The first index of `indices` outside `[0, size)`, in TensorFlow's words:
/// `indices[1] = 7 is not in [0, 4)` (`indices = 7 ...` for a scalar). `None` when every
/// index is in range or the indices are not known. `raw` is the argument as the user passed
/// it: Python ints are known inside a graph, where the tensor made of them is symbolic.
pub fn gather_out_of_range(raw: &Value, indices: &Rc<Array>, size: usize) -> Option<String> {
    let values: Vec<i64> = match python_ints(raw) {
        Some(v) => v,
        None => {
            let data = crate::jax::eval::force(&indices.known()?, 1 << 16)?;
            data.iter().map(|v| *v as i64).collect()
        }
    };
    let shape = &indices.aval.shape;
    if values.len() != shape.iter().product::<usize>() {
        return None;
    }
    let (flat, value) = values.into_iter().enumerate().find(|(_, v)| *v < 0 || *v >= size as i64)?;
    if shape.is_empty() {
        return Some(format!("indices = {value} is not in [0, {size})"));
    }
    let mut position = vec![0; shape.len()];
    let mut rest = flat;
    for (p, d) in position.iter_mut().zip(shape).rev() {
        *p = rest % d.max(&1);
        rest /= d.max(&1);
    }
    let position: Vec<String> = position.iter().map(usize::to_string).collect();
    Some(format!("indices[{}] = {value} is not in [0, {size})", position.join(",")))
}

/// Whether an integer `divisor` of `FloorDiv`/`FloorMod` certainly holds a zero, which the
/// CPU kernel rejects (`Integer division by zero`) when the op's output is not empty. `raw` is
/// the divisor as the user passed it (Python ints are known inside a graph too).
pub fn divides_by_zero(raw: &Value, divisor: &Rc<Array>, output_size: usize) -> bool {
    if !divisor.aval.dtype.is_integer() || output_size == 0 {
        return false;
    }
    match python_ints(raw) {
        Some(values) => values.contains(&0),
        None => divisor.known().and_then(|k| crate::jax::eval::force_ints(&k, 1 << 16)).is_some_and(|d| d.iter().any(|v| *v == 0)),
    }
}

/// A Python int, or a (nested) list or tuple of them, flattened in row-major order.
pub(super) fn python_ints(v: &Value) -> Option<Vec<i64>> {
    fn walk(v: &Value, out: &mut Vec<i64>) -> Option<()> {
        match v {
            Value::Int(i) => out.push(*i),
            Value::List(items) => items.borrow().iter().try_for_each(|x| walk(x, out))?,
            Value::Tuple(items) => items.iter().try_for_each(|x| walk(x, out))?,
            _ => return None,
        }
        Some(())
    }
    let mut out = Vec::new();
    walk(v, &mut out)?;
    Some(out)
}

/// The eager kernel's error for a failing `node`. TensorFlow 2.21 ends it with ` name: `
/// unless the op's input was a Python list (`listed`).
pub fn eager(interp: &Interp, node: &str, message: &str, listed: bool) -> Flow {
    let name = if listed { "" } else { " name: " };
    let msg =
        format!("{{{{function_node __wrapped__{node}_device_/job:localhost/replica:0/task:0/device:CPU:0}}}} {message} [Op:{node}]{name}");
    interp.raise("InvalidArgumentError", Code::PythonException, msg)
}

/// Records that the op just bound to `result`, inside a `tf.function` trace, fails whenever
/// it runs.
pub fn record(interp: &mut Interp, result: &Value, node: &'static str, message: String) {
    let Value::Array(a) = result else { return };
    let Some(t) = a.tracer().filter(|_| !interp.tf.active.is_empty()) else { return };
    let failing = Failing { trace: t.trace, var: t.var, site: interp.site(), node, message, conditional: conditional(interp) };
    interp.tf.failing.push(failing);
}

/// Records the `tf.gather` just bound to `result` inside a `tf.function` trace, of
/// `indices` (which may be one of the function's tensor arguments) into a dimension of `size`.
pub fn record_gather(interp: &mut Interp, result: &Value, indices: &Rc<Array>, size: usize) {
    let (Value::Array(a), Some(i)) = (result, indices.tracer()) else { return };
    let Some(t) = a.tracer().filter(|t| !interp.tf.active.is_empty() && t.trace == i.trace) else { return };
    let gather =
        ArgumentIndices { trace: t.trace, indices: i.var, result: t.var, size, site: interp.site(), conditional: conditional(interp) };
    interp.tf.argument_indices.push(gather);
}

/// Whether what is bound now is in a branch or loop body of the graph: a `tf.cond` branch,
/// or AutoGraph's `if`, `while` or `for` on a tensor (a fork opened since the trace began).
fn conditional(interp: &Interp) -> bool {
    interp.tf.cond_branches > 0
        || interp.tf.autograph.in_tensor_loop()
        || interp.tf.active.last().is_some_and(|trace| interp.fork_logs.len() > trace.forks)
}

/// What the failing ops recorded in trace `trace` come to, now that its graph is `jaxpr`:
/// the failure of every run of the graph, if one is certain; each pruned one is reported
/// (TL213).
pub fn settle(interp: &mut Interp, trace: u32, jaxpr: &Jaxpr, function: &str) -> Settled {
    let mine: Vec<Failing> = {
        let all = std::mem::take(&mut interp.tf.failing);
        let (mine, rest) = all.into_iter().partition(|f| f.trace == trace);
        interp.tf.failing = rest;
        mine
    };
    let gathers: Vec<ArgumentIndices> = {
        let all = std::mem::take(&mut interp.tf.argument_indices);
        let (mine, rest) = all.into_iter().partition(|g| g.trace == trace);
        interp.tf.argument_indices = rest;
        mine
    };
    if mine.is_empty() && gathers.is_empty() {
        return Settled::default();
    }
    let runs = reaching_outputs(jaxpr, false);
    // A gather that runs at every call, of indices that are the call's `input`th tensor.
    let checks = gathers
        .iter()
        .filter(|g| !g.conditional && runs.contains(&g.result))
        .filter_map(|g| Some((jaxpr.invars.iter().position(|(v, _)| *v == g.indices)?, g.size, g.site)))
        .collect();
    let may_run = reaching_outputs(jaxpr, true);
    let mut failure = None;
    for f in mine.into_iter().filter(|f| !f.conditional) {
        if runs.contains(&f.var) {
            failure.get_or_insert(GraphFailure { site: f.site, node: f.node, message: f.message });
        } else if !may_run.contains(&f.var) && f.site.is_some_and(|s| unread(interp, s)) {
            let msg = format!(
                "pruned op: graph execution never runs this {} in tf.function({function}), because nothing uses its result, so its error never happens: run eagerly it raises InvalidArgumentError: {}",
                f.node, f.message
            );
            interp.warn(Code::PrunedOp, f.site, msg, Vec::new());
        }
    }
    Settled { failure, checks }
}

/// A call of a graph on the call's tensor arguments `tensors`: one that fails raises
/// TensorFlow's `Graph execution error` at the call, with the failing op's line related.
/// Inside another graph the call is an op of that graph, which may prune it: silent.
pub fn on_call(interp: &Interp, settled: &Settled, tensors: &[Rc<Array>]) -> Result<(), Flow> {
    if super::in_graph(interp) {
        return Ok(());
    }
    if let Some(failure) = &settled.failure {
        return Err(raise(interp, failure));
    }
    for &(input, size, site) in &settled.checks {
        let Some(indices) = tensors.get(input) else { continue };
        if let Some(message) = gather_out_of_range(&Value::None, indices, size) {
            return Err(raise(interp, &GraphFailure { site, node: "GatherV2", message }));
        }
    }
    Ok(())
}

fn raise(interp: &Interp, failure: &GraphFailure) -> Flow {
    let line = failure.site.map(|s| interp.line_of(s)).unwrap_or(0);
    let msg = format!("Graph execution error: Detected at node {} defined at line {line}: {}", failure.node, failure.message);
    let mut flow = interp.raise("InvalidArgumentError", Code::PythonException, msg);
    if let (Flow::Raise(e), Some(site)) = (&mut flow, failure.site) {
        e.related.push((site, format!("the {} that fails when the graph runs", failure.node)));
    }
    flow
}

/// Whether nothing can read the result of the call at `site` (`scope::unread_result`).
fn unread(interp: &Interp, site: Site) -> bool {
    let Some(file) = interp.files.get(site.file as usize) else { return false };
    let module = file.module.clone();
    super::autograph::scope::enclosing_def(&module.body, site.span)
        .is_some_and(|def| super::autograph::scope::unread_result(def, site.span))
}

/// The variables whose values the outputs of `jaxpr` need: through equations without
/// bodies only, or (`through_bodies`) through every equation, taking a higher-order
/// equation to need all its inputs.
fn reaching_outputs(jaxpr: &Jaxpr, through_bodies: bool) -> HashSet<VarId> {
    let mut live: HashSet<VarId> = jaxpr.outvars.iter().filter_map(|a| if let Atom::Var(v) = a { Some(*v) } else { None }).collect();
    for eqn in jaxpr.eqns.iter().rev() {
        if !eqn.outputs.iter().any(|(v, _)| live.contains(v)) || (!through_bodies && !eqn.bodies.is_empty()) {
            continue;
        }
        live.extend(eqn.inputs.iter().filter_map(|a| if let Atom::Var(v) = a { Some(*v) } else { None }));
    }
    live
}
