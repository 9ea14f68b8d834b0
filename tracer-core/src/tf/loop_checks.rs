//! Which tensor loop of the graph an op being traced is in: a `tf.while_loop` body, or the
//! body of AutoGraph's `while` on a tensor (both traced inline, once, on `Placeholder`s of
//! the loop variables). A check bound directly in such a body (an assert, `check_numerics`)
//! runs at every iteration; the call's values decide how many there are and on what values,
//! so `graph_run::on_call` runs the loop on them (`LoopRun`): the test on the carried
//! values, then the body's checks, then the next carried values, until the test is false.
//!
//! AutoGraph's `for` over a tensor is the same loop, its test the count of what it iterates:
//! the rows of a tensor, or `tf.range(start, limit, delta)` with a bound only the graph
//! knows (`Rows`); each iteration's element is the body's `Placeholder` of the target.
//!
//! A loop of the `tf.function`'s own graph whose test (or iterated rows) and every loop
//! variable are tensors of that graph (or known ones) is followed: one outside any loop, in
//! branches or not (it runs at the calls whose values pick every branch it is in, `guard`),
//! and one directly in the body of a followed loop (it runs, whole, at each of that loop's
//! iterations, `parent`), in a branch of that body or not (at the iterations whose values pick
//! the branch, `guard`). A check there that cannot be followed leaves every loop around it
//! unfollowed (`unfollow`).

use std::rc::Rc;

use super::graph_run::Operand;
use super::partial::PartialTensor;
use crate::interp::value::Value;
use crate::interp::{Interp, Site};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::VarId;

/// The loops being traced and those traced, of every running `tf.function` trace.
#[derive(Default)]
pub struct State {
    open: Vec<OpenLoop>,
    pub(super) traced: Vec<LoopRun>,
    next_id: usize,
    /// Each `tf.range` with a tensor bound made in a graph (a `PartialTensor`): its trace and
    /// bounds.
    ranges: Vec<(Rc<PartialTensor>, u32, Rows)>,
    /// What the `for` being staged iterates (its line, its trace), when it is followed.
    pub(super) pending_rows: Option<(Option<Site>, u32, Rows)>,
}

/// What AutoGraph's `for` over a tensor iterates, as a call computes it.
#[derive(Debug, Clone)]
pub enum Rows {
    /// `tf.range(start, limit, delta)`: its elements, of `dtype`.
    Range { start: Operand, limit: Operand, delta: Operand, dtype: DType },
    /// The rows of a tensor.
    Tensor(Operand),
}

/// A loop's test: a tensor the body's graph computes (a `while`), or whether rows are left
/// (a `for`, whose `element` is the body's `Placeholder` of the row).
#[derive(Debug, Clone)]
pub enum Test {
    Graph(Operand),
    Rows { element: VarId, rows: Rows },
}

/// A loop whose body is being traced.
struct OpenLoop {
    id: usize,
    /// A loop of a `tf.function`'s own graph, outside any loop or directly in a followed one.
    followed: bool,
    /// The branches it is in (outside any loop, or within the body of the loop it is in).
    guard: Vec<(Operand, bool)>,
    parent: Option<usize>,
    trace: u32,
    /// `TfState::active`'s length, `Interp::fork_logs`' and `TfState::guards`' in the body.
    depth: usize,
    forks: usize,
    guards: usize,
    /// A `tf.while_loop`'s `maximum_iterations` (an int32 scalar), when given.
    max: Option<Value>,
}

/// A traced loop as a call runs it: the graph's values the loop variables enter with
/// (`init`), the body's `Placeholder`s of them (`carry_in`), what the body gives back
/// (`carry_out`), and the test, computed from `carry_in` at each iteration's start.
#[derive(Debug, Clone)]
pub struct LoopRun {
    pub(super) trace: u32,
    pub(super) id: usize,
    pub(super) init: Vec<Operand>,
    pub(super) carry_in: Vec<VarId>,
    pub(super) carry_out: Vec<Operand>,
    pub(super) test: Test,
    /// The branches whose predicates the call's values must pick for it to run (outside any
    /// loop: of the call's graph; in a loop's body: of one iteration's), each with the branch
    /// it must pick.
    pub(super) guard: Vec<(Operand, bool)>,
    /// The followed loop whose body it is in: it runs at each of its iterations that `guard`
    /// picks.
    pub(super) parent: Option<usize>,
    /// What its state holds after it, one tensor per loop variable (empty: not followed).
    pub(super) exits: Vec<(VarId, Aval)>,
    /// At most this many iterations (`tf.while_loop`'s `maximum_iterations`, an int32 scalar).
    pub(super) max: Option<Operand>,
}

/// A tensor loop's body begins to be traced (`extra_forks`: paths the loop itself opens,
/// `Interp::run_logged`'s); its id, for `end`.
pub fn begin(interp: &mut Interp, extra_forks: usize) -> usize {
    let id = interp.tf.loops.next_id;
    interp.tf.loops.next_id += 1;
    let trace = interp.jax.traces.last().map_or(u32::MAX, |t| t.id);
    let own = interp.jax.traces.last().is_some_and(|t| interp.jax.records[t.record].traced_for == Some(super::function::TRACED_FOR));
    let depth = interp.tf.active.len();
    let (followed, guard, parent) = match interp.tf.loops.open.last() {
        // In a followed loop's body, directly or in branches of its graph (and no other path
        // between): it runs at the iterations whose values pick them.
        Some(outer) => {
            let guard = (own && outer.followed && outer.trace == trace && outer.depth == depth)
                .then(|| super::guards::since(interp, outer.guards, outer.forks, trace))
                .flatten();
            (guard.is_some(), guard.unwrap_or_default(), Some(outer.id))
        }
        None => match super::guards::current(interp, trace).filter(|_| own) {
            Some(guard) => (true, guard, None),
            None => (false, Vec::new(), None),
        },
    };
    let open = OpenLoop {
        id,
        followed,
        guard,
        parent,
        trace,
        depth,
        forks: interp.fork_logs.len() + extra_forks,
        guards: interp.tf.guards.len(),
        max: None,
    };
    interp.tf.loops.open.push(open);
    id
}

/// Whether a loop body is being traced (a check bound there does not run once per call).
pub fn in_loop(interp: &Interp) -> bool {
    !interp.tf.loops.open.is_empty()
}

/// The id of the followed loop whose body an op bound now in trace `trace` is in, with the
/// branches of that body it is in (empty: directly in the body), each predicate a tensor of
/// the body's graph (or a known one) with the branch it must pick.
pub fn current(interp: &Interp, trace: u32) -> Option<(usize, Vec<(Operand, bool)>)> {
    let open = interp.tf.loops.open.last()?;
    if !open.followed || open.trace != trace || open.depth != interp.tf.active.len() {
        return None;
    }
    Some((open.id, super::guards::since(interp, open.guards, open.forks, trace)?))
}

/// Loop `id`, whose body is being traced, is not one a call can run (its checks leave the loops
/// around it unfollowed, and what it gives is unknown).
pub fn not_followed(interp: &mut Interp, id: usize) {
    if let Some(open) = interp.tf.loops.open.iter_mut().rfind(|o| o.id == id) {
        open.followed = false;
    }
}

/// Loop `id`, whose body is being traced, stops after `max` iterations (a `tf.while_loop`'s
/// `maximum_iterations`, an int32 scalar of the graph or known).
pub fn cap(interp: &mut Interp, id: usize, max: Value) {
    if let Some(open) = interp.tf.loops.open.iter_mut().rfind(|o| o.id == id) {
        open.max = Some(max);
    }
}

/// A check in the loop bodies being traced that a call cannot run where it stands: no loop
/// around it is followed, since a check after it could be claimed before it fails.
pub fn unfollow(interp: &mut Interp) {
    for open in &mut interp.tf.loops.open {
        open.followed = false;
    }
}

/// The test of a loop whose body was traced: a `while`'s tensor, or a `for`'s element (the
/// body's `Placeholder` of its target) with what it iterates.
pub enum Traced<'a> {
    While(Option<&'a Value>),
    For(Option<(&'a Rc<Array>, Rows)>),
}

/// The body of loop `id` was traced: `init` the values the loop variables enter with,
/// `carry_in` the body's symbolic tensors of them, `carry_out` what the body gave back, `test`
/// the test computed from `carry_in` (or the rows a `for` iterates). The loop is followed at
/// the calls when every one of them is a tensor of the graph (or a known one); otherwise its
/// checks say nothing.
pub fn end(interp: &mut Interp, id: usize, init: &[Value], carry_in: &[Value], carry_out: &[Value], test: Traced) {
    let Some(at) = interp.tf.loops.open.iter().rposition(|o| o.id == id) else { return };
    let open = interp.tf.loops.open.remove(at);
    // A followed loop that a call cannot run leaves the loop around it unfollowed: its checks
    // at an iteration could not be put in order with this loop's.
    let lost = |interp: &mut Interp| {
        if let Some(outer) = interp.tf.loops.open.last_mut().filter(|o| open.parent == Some(o.id)) {
            outer.followed = false;
        }
    };
    if !open.followed || init.len() != carry_in.len() || init.len() != carry_out.len() {
        if open.followed {
            lost(interp);
        }
        return;
    }
    let operand = |v: &Value| -> Option<Operand> {
        let Value::Array(a) = v else { return None };
        match a.tracer() {
            Some(t) if t.trace == open.trace => Some(Operand::Var(t.var)),
            Some(_) => None,
            None => Some(Operand::Known(a.clone())),
        }
    };
    let var = |v: &Value| match operand(v) {
        Some(Operand::Var(v)) => Some(v),
        _ => None,
    };
    let run = (|| {
        Some(LoopRun {
            trace: open.trace,
            id,
            init: init.iter().map(operand).collect::<Option<_>>()?,
            carry_in: carry_in.iter().map(var).collect::<Option<_>>()?,
            carry_out: carry_out.iter().map(operand).collect::<Option<_>>()?,
            test: match test {
                Traced::While(test) => Test::Graph(operand(test?)?),
                Traced::For(rows) => {
                    let (element, rows) = rows?;
                    Test::Rows { element: var(&Value::Array(element.clone()))?, rows }
                }
            },
            guard: open.guard.clone(),
            parent: open.parent,
            exits: Vec::new(),
            max: match &open.max {
                Some(m) => Some(operand(m)?),
                None => None,
            },
        })
    })();
    match run {
        Some(run) => interp.tf.loops.traced.push(run),
        None => lost(interp),
    }
}

/// Loop `id` is staged: its state holds `after` (one value per loop variable, in `end`'s
/// order), the tensors a loop around it reads of it.
pub fn exited(interp: &mut Interp, id: usize, after: &[Value]) {
    let Some(run) = interp.tf.loops.traced.iter_mut().rfind(|l| l.id == id) else { return };
    let exits: Option<Vec<(VarId, Aval)>> = after
        .iter()
        .map(|v| match v {
            Value::Array(a) => a.tracer().filter(|t| t.trace == run.trace).map(|t| (t.var, a.aval.clone())),
            _ => None,
        })
        .collect();
    if let Some(exits) = exits.filter(|e| e.len() == run.carry_in.len()) {
        run.exits = exits;
    }
}

/// A Python number the loop starts from, as the tensor the loop carries (`0` an int32).
pub fn entry_tensor(v: &Value) -> Option<Value> {
    use crate::jax::dtypes::DType;
    let (x, dtype) = match v {
        Value::Array(_) => return Some(v.clone()),
        Value::Bool(b) => (f64::from(u8::from(*b)), DType::Bool),
        Value::Int(i) => (*i as f64, DType::I32),
        Value::Float(f) => (*f, DType::F32),
        _ => return None,
    };
    Some(Value::Array(Array::scalar(x, dtype, false)))
}

/// The bounds of a `tf.range` just made in a graph with a tensor bound (`made`, a
/// `PartialTensor`), as TensorFlow reads them (`tf.range(n)` is `range(0, n, 1)`), for a
/// `for` over it. Bounds that are not Python numbers or tensors of the graph are not kept.
pub fn record_range(interp: &mut Interp, made: &Value, bounds: [Option<&Value>; 3], dtype: DType) {
    let Some(p) = super::partial::of(made) else { return };
    let Some(trace) = interp.jax.traces.last().map(|t| t.id) else { return };
    let operand = |v: &Value| -> Option<Operand> {
        match v {
            Value::Int(i) => Some(Operand::Known(Array::scalar(*i as f64, dtype, false))),
            Value::Float(f) => Some(Operand::Known(Array::scalar(*f, dtype, false))),
            Value::Array(a) => match a.tracer() {
                Some(t) if t.trace == trace => Some(Operand::Var(t.var)),
                Some(_) => None,
                None => Some(Operand::Known(a.clone())),
            },
            _ => None,
        }
    };
    let [start, limit, delta] = bounds;
    let (start, limit) = match (start, limit) {
        (Some(s), Some(l)) => (operand(s), operand(l)),
        (Some(l), None) => (Some(Operand::Known(Array::scalar(0.0, dtype, false))), operand(l)),
        _ => return,
    };
    let delta = match delta {
        Some(d) => operand(d),
        None => Some(Operand::Known(Array::scalar(1.0, dtype, false))),
    };
    let (Some(start), Some(limit), Some(delta)) = (start, limit, delta) else { return };
    let rows = Rows::Range { start, limit, delta, dtype };
    interp.tf.loops.ranges.push((p.clone(), trace, rows));
}

/// A `for` at the running line is about to be staged over `p`, a `tf.range` of the graph.
pub fn iterating_range(interp: &mut Interp, p: &PartialTensor) {
    let found = interp.tf.loops.ranges.iter().rev().find(|(r, _, _)| std::ptr::eq(Rc::as_ptr(r), p)).map(|(_, t, rows)| (*t, rows.clone()));
    let site = interp.site();
    interp.tf.loops.pending_rows = found.map(|(trace, rows)| (site, trace, rows));
}

/// A `for` at the running line is about to be staged over the rows of tensor `a` (of the
/// innermost trace, or known).
pub fn iterating_tensor(interp: &mut Interp, a: &Rc<Array>) {
    let Some(trace) = interp.jax.traces.last().map(|t| t.id) else { return };
    let rows = match a.tracer() {
        Some(t) if t.trace == trace => Rows::Tensor(Operand::Var(t.var)),
        Some(_) => {
            interp.tf.loops.pending_rows = None;
            return;
        }
        None => Rows::Tensor(Operand::Known(a.clone())),
    };
    let site = interp.site();
    interp.tf.loops.pending_rows = Some((site, trace, rows));
}

/// What the `for` at `site` of trace `trace` iterates, recorded as it was staged.
pub fn take_rows(interp: &mut Interp, site: Option<Site>, trace: u32) -> Option<Rows> {
    let (at, t, rows) = interp.tf.loops.pending_rows.take()?;
    (at == site && t == trace).then_some(rows)
}
