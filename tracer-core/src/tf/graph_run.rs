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
    pub(super) site: Option<Site>,
    pub(super) node: String,
    pub(super) message: String,
}

/// What an op of a trace checks of one of its inputs when the graph runs, on each call's
/// values: the kernel's error when the check fails.
#[derive(Debug, Clone)]
pub enum RunCheck {
    /// `tf.gather`'s indices into a dimension of `size`.
    Gather { size: usize },
    /// `tf.gather_nd`'s indices (their outer dimensions `outer`) into params of shape `shape`.
    GatherNd { outer: Vec<usize>, shape: Vec<usize> },
    /// An integer divisor of `FloorDiv`/`FloorMod` whose output is not empty.
    DivisorNotZero,
    /// An assert's comparison: every element must hold. `message` is TensorFlow's, of a
    /// failing run (`assertion failed: [Condition x < y did not hold element-wise:]`).
    Holds { message: String },
    /// `tf.debugging.check_numerics(tensor, message)`: no NaN or Inf.
    Finite { message: String },
    /// The check `tf.debugging.enable_check_numerics()` puts after an op of the graph: no NaN
    /// or Inf in its output; `head` is TensorFlow's message up to what it found.
    FiniteV2 { head: String },
    /// `tf.debugging.assert_near(x, y, rtol, atol)` of the checked `x`: failed by a clear
    /// margin (`asserts::clearly_not_near`).
    Near { y: Operand, rtol: f64, atol: f64, message: String },
}

/// A second input of a check: a tensor of the same graph, or one whose value is known.
#[derive(Debug, Clone)]
pub enum Operand {
    Var(VarId),
    Known(Rc<Array>),
}

/// An op of a trace whose failure depends on the call's values: `input` is the variable of
/// the graph it checks, `result` the op's result (`None`: a stateful op, which graph
/// execution runs whether or not anything reads it), `guard` the branches it is in
/// (`guards::current`; `None`: whether it runs is not known from the call's values).
#[derive(Debug, Clone)]
pub struct CallCheck {
    trace: u32,
    pub(super) input: VarId,
    result: Option<VarId>,
    pub(super) site: Option<Site>,
    pub(super) node: String,
    pub(super) check: RunCheck,
    guard: Option<Vec<(Operand, bool)>>,
    /// The tensor loop whose body it is in (`loop_checks::current`): it runs at each
    /// iteration whose values pick `loop_guard`, the branches of the body it is in (each a
    /// predicate of the body's graph and the branch it must pick; empty: directly in it).
    pub(super) in_loop: Option<usize>,
    pub(super) loop_guard: Vec<(Operand, bool)>,
    /// The first variable of the equations that compute the checked op, when they are several
    /// (`tf.reduce_mean`'s sum, then its division; `computed_from`): under the enabled numeric
    /// checks, the values before the op must be finite, not its own steps.
    from: Option<VarId>,
}

impl RunCheck {
    /// The graph variable of a second input the check reads, besides the checked one.
    pub(super) fn other_var(&self) -> Option<VarId> {
        match self {
            RunCheck::Near { y: Operand::Var(v), .. } => Some(*v),
            _ => None,
        }
    }

    /// The kernel's message when `value` fails the check; `None` when it holds or the value
    /// is not known. `other` is the call's value of `other_var`.
    pub(super) fn fails(&self, value: &Rc<Array>, other: Option<&Rc<Array>>) -> Option<String> {
        match self {
            RunCheck::Near { y, rtol, atol, message } => {
                let y = match y {
                    Operand::Var(_) => other?,
                    Operand::Known(y) => y,
                };
                super::asserts::clearly_not_near(value, y, *rtol, *atol)?.then(|| message.clone())
            }
            RunCheck::Gather { size } => gather_out_of_range(&Value::None, value, *size),
            RunCheck::GatherNd { outer, shape } => {
                let rows = super::ops_nd::known_rows(&Value::None, value)?;
                super::ops_nd::out_of_range(&rows, outer, shape, "param shape", ", node name: GatherNd")
            }
            RunCheck::DivisorNotZero => {
                let d = crate::jax::eval::force_ints(&value.known()?, 1 << 16)?;
                d.iter().any(|v| *v == 0).then(|| "Integer division by zero".to_string())
            }
            RunCheck::Holds { message } => {
                let held = crate::jax::eval::force(&value.known()?, 1 << 16)?;
                held.iter().any(|x| *x == 0.0).then(|| message.clone())
            }
            RunCheck::Finite { message } => {
                let (nan, inf, _) = crate::jax::eval::non_finite_counts(value, 1 << 16)?;
                let found = match (inf > 0, nan > 0) {
                    (false, false) => return None,
                    (true, false) => "Inf",
                    (false, true) => "NaN",
                    (true, true) => "Inf and NaN",
                };
                Some(format!("{message} : Tensor had {found} values"))
            }
            RunCheck::FiniteV2 { head } => {
                let found = super::numerics::found_non_finite(value)?;
                Some(format!("{head}\n : Tensor had {found} values"))
            }
        }
    }
}

/// What the graph of a finished trace does at its calls: fail at every one (`failure`), or
/// at those whose values fail one of `checks` (ops that run at every call).
#[derive(Debug, Clone, Default)]
pub struct Settled {
    failure: Option<GraphFailure>,
    checks: Vec<CallCheck>,
    /// Traced with `tf.debugging.enable_check_numerics()` on: every op with a float output
    /// is checked, in the order the ops were made, with the checks above.
    numerics: bool,
    /// The tensor loops whose bodies hold some of `checks`.
    loops: Vec<super::loop_checks::LoopRun>,
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
    let conditional = !super::guards::current(interp, t.trace).is_some_and(|g| g.is_empty());
    let failing = Failing { trace: t.trace, var: t.var, site: interp.site(), node, message, conditional };
    interp.tf.failing.push(failing);
}

/// Records an op just bound inside a `tf.function` trace whose failure depends on the call's
/// values: `check` of `input` (a tensor of the trace), the op's result `result` (`None` for a
/// stateful op, which runs whether or not its result is read). Nothing is recorded for an
/// input that is not a tensor of the innermost trace.
pub fn record_check(interp: &mut Interp, input: &Rc<Array>, result: Option<&Value>, node: &str, check: RunCheck) {
    let Some(i) = input.tracer().filter(|_| !interp.tf.active.is_empty()) else { return };
    let result = match result {
        Some(Value::Array(a)) => match a.tracer() {
            Some(t) if t.trace == i.trace => Some(t.var),
            _ => return,
        },
        Some(_) => return,
        None => None,
    };
    // A tensor of the running `tf.function`'s own graph (not of a body traced on its own).
    let own = interp.jax.traces.iter().rev().find(|t| interp.jax.records[t.record].traced_for == Some(super::function::TRACED_FOR));
    if own.is_none_or(|t| t.id != i.trace) {
        return;
    }
    let guard = super::guards::current(interp, i.trace);
    let (in_loop, loop_guard) = match super::loop_checks::current(interp, i.trace) {
        Some((id, branches)) => (Some(id), branches),
        None => {
            if super::loop_checks::in_loop(interp) {
                super::loop_checks::unfollow(interp);
            }
            (None, Vec::new())
        }
    };
    let site = interp.site();
    interp.tf.run_checks.push(CallCheck {
        trace: i.trace,
        input: i.var,
        result,
        site,
        node: node.to_string(),
        check,
        guard,
        in_loop,
        loop_guard,
        from: None,
    });
}

/// How many equations the innermost trace holds: where the op about to be bound begins.
pub fn next_equation(interp: &Interp) -> Option<usize> {
    interp.jax.traces.last().map(|t| t.jaxpr.eqns.len())
}

/// The check just recorded on `out` is of an op whose equations begin at `start` (from
/// `next_equation`) in `out`'s trace: those before it are what must be finite.
pub fn computed_from(interp: &mut Interp, out: &Value, start: Option<usize>) {
    let (Value::Array(out), Some(start)) = (out, start) else { return };
    let Some(t) = out.tracer() else { return };
    let Some(frame) = interp.jax.traces.iter().rev().find(|f| f.id == t.trace) else { return };
    let Some(first) = frame.jaxpr.eqns.get(start).and_then(|e| e.outputs.first()).map(|(v, _)| *v) else { return };
    if let Some(check) = interp.tf.run_checks.last_mut().filter(|c| c.trace == t.trace && c.input == t.var) {
        check.from = Some(first);
    }
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
    let checks: Vec<CallCheck> = {
        let all = std::mem::take(&mut interp.tf.run_checks);
        let (mine, rest) = all.into_iter().partition(|c| c.trace == trace);
        interp.tf.run_checks = rest;
        mine
    };
    let loops: Vec<super::loop_checks::LoopRun> = {
        let all = std::mem::take(&mut interp.tf.loops.traced);
        let (mine, rest) = all.into_iter().partition(|l| l.trace == trace);
        interp.tf.loops.traced = rest;
        mine
    };
    let numerics = interp.tf.check_numerics;
    if mine.is_empty() && checks.is_empty() {
        return Settled { numerics, ..Settled::default() };
    }
    let runs = reaching_outputs(jaxpr, false);
    // An op that runs at every call its branches are taken: one whose result reaches the
    // outputs, or a stateful one, outside any loop body.
    // Claimed in a branch: a stateful check (its node named in the branch's scope); not a
    // gather or division there (`cond/GatherV2`, whose numbering is not followed).
    // In a followed loop's body: a stateful check, run at each iteration.
    // A loop is run when every loop around it is.
    let chained = |id: usize| {
        let mut at = loops.iter().find(|l| l.id == id);
        for _ in 0..loops.len() {
            match at {
                Some(l) => match l.parent {
                    Some(p) => at = loops.iter().find(|o| o.id == p),
                    None => return true,
                },
                None => return false,
            }
        }
        false
    };
    let checks: Vec<CallCheck> = checks
        .into_iter()
        .filter(|c| match c.in_loop {
            Some(id) => c.result.is_none() && chained(id),
            None => c.guard.as_ref().is_some_and(|g| c.result.is_none() || g.is_empty()) && c.result.is_none_or(|r| runs.contains(&r)),
        })
        .collect();
    // The loops holding a check, and those around them.
    let mut kept: HashSet<usize> = checks.iter().filter_map(|c| c.in_loop).collect();
    while let Some(p) = loops.iter().filter(|l| kept.contains(&l.id)).find_map(|l| l.parent.filter(|p| !kept.contains(p))) {
        kept.insert(p);
    }
    // And the loops in their bodies, for what their state holds after them.
    while let Some(l) = loops.iter().find(|l| !kept.contains(&l.id) && l.parent.is_some_and(|p| kept.contains(&p))) {
        kept.insert(l.id);
    }
    let loops = loops.into_iter().filter(|l| kept.contains(&l.id)).collect();
    let may_run = reaching_outputs(jaxpr, true);
    let mut failure = None;
    for f in mine.into_iter().filter(|f| !f.conditional) {
        if runs.contains(&f.var) {
            failure.get_or_insert(GraphFailure { site: f.site, node: f.node.to_string(), message: f.message });
        } else if !may_run.contains(&f.var) && f.site.is_some_and(|s| unread(interp, s)) {
            let msg = format!(
                "pruned op: graph execution never runs this {} in tf.function({function}), because nothing uses its result, so its error never happens: run eagerly it raises InvalidArgumentError: {}",
                f.node, f.message
            );
            interp.warn(Code::PrunedOp, f.site, msg, Vec::new());
        }
    }
    Settled { failure, checks, numerics, loops }
}

/// A call of a graph, `jaxpr` on `consts` and `inputs` (as the call computes it): one that
/// fails raises TensorFlow's `Graph execution error` at the call, with the failing op's line
/// related. The checks are made in the order their ops were traced, on the values the graph
/// computes from the call's; one whose value is not known says nothing. Inside another graph
/// the call is an op of that graph, which may prune it: silent.
pub fn on_call(interp: &mut Interp, settled: &Settled, jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>]) -> Result<(), Flow> {
    if super::in_graph(interp) {
        return Ok(());
    }
    if let Some(failure) = &settled.failure {
        return Err(raise(interp, failure));
    }
    if settled.checks.is_empty() {
        return Ok(());
    }
    // The checked values, computed by the graph's equations up to them (lazily: forcing one
    // computes what it needs). A variable the graph the call runs does not define (a variable
    // read, which becomes an input) is not checked.
    let defined: HashSet<VarId> = jaxpr
        .constvars
        .iter()
        .chain(&jaxpr.invars)
        .map(|(v, _)| *v)
        .chain(jaxpr.eqns.iter().flat_map(|e| e.outputs.iter().map(|(v, _)| *v)))
        .collect();
    let guard_vars = |c: &CallCheck| -> Vec<VarId> {
        c.guard.iter().flatten().filter_map(|(p, _)| if let Operand::Var(v) = p { Some(*v) } else { None }).collect()
    };
    let checks: Vec<&CallCheck> = settled
        .checks
        .iter()
        .filter(|c| {
            c.in_loop.is_some()
                || defined.contains(&c.input)
                    && c.check.other_var().is_none_or(|v| defined.contains(&v))
                    && guard_vars(c).iter().all(|v| defined.contains(v))
        })
        .collect();
    // Each check's input, then its second input (if it reads one), then its branches'
    // predicates.
    let mut sub = jaxpr.clone();
    sub.outvars = checks
        .iter()
        .filter(|c| c.in_loop.is_none())
        .flat_map(|c| std::iter::once(c.input).chain(c.check.other_var()).chain(guard_vars(c)))
        .map(Atom::Var)
        .collect();
    let Some(values) = crate::jax::eval_jaxpr::instantiate(&sub, consts, inputs) else { return Ok(()) };
    let mut values = values.iter();
    let mut loops_run = HashSet::new();
    for c in &checks {
        if let Some(id) = c.in_loop {
            // The outermost loop around it runs, every check of its body and of the loops in
            // it at each iteration, when the first of them is reached; one the enabled
            // numeric checks could precede is not claimed.
            let Some(root) = super::loop_run::outermost(&settled.loops, id) else { return Ok(()) };
            if !loops_run.insert(root.id) {
                continue;
            }
            match super::loop_run::run(interp, root, (&settled.loops, &checks), jaxpr, consts, inputs)? {
                Some(None) if !settled.numerics => continue,
                Some(Some(failure)) if !settled.numerics => return Err(raise(interp, &failure)),
                _ => return Ok(()),
            }
        }
        let Some(value) = values.next() else { return Ok(()) };
        let other = if c.check.other_var().is_some() { values.next() } else { None };
        // Whether the call takes every branch the check is in; one whose predicate is not
        // known leaves this check, and those after it, unclaimed.
        let mut runs = true;
        for (pred, taken) in c.guard.iter().flatten() {
            let pred = match pred {
                Operand::Var(_) => values.next().cloned(),
                Operand::Known(a) => Some(a.clone()),
            };
            let Some(held) = pred.and_then(|p| p.known()).and_then(|k| crate::jax::eval::force(&k, 1 << 16)) else { return Ok(()) };
            let Some(held) = held.iter().next().map(|x| *x != 0.0) else { return Ok(()) };
            runs &= held == *taken;
        }
        if !runs {
            continue;
        }
        if let Some(message) = c.check.fails(value, other) {
            if settled.numerics && !finite_before(jaxpr, consts, inputs, c.from.unwrap_or(c.input)) {
                return Ok(());
            }
            return Err(raise(interp, &GraphFailure { site: c.site, node: c.node.clone(), message }));
        }
    }
    Ok(())
}

/// With every float op of the graph checked (`enable_check_numerics`), in the order the ops
/// were made: whether each float value the graph computes before `var` (its inputs
/// included) is known and finite, so that no check before `var`'s fails first.
fn finite_before(jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>], var: VarId) -> bool {
    let Some(at) = jaxpr.eqns.iter().position(|e| e.outputs.iter().any(|(v, _)| *v == var)) else { return false };
    let before = &jaxpr.eqns[..at];
    if before.iter().any(|e| !e.bodies.is_empty()) {
        return false;
    }
    let mut sub = jaxpr.clone();
    sub.outvars = before.iter().flat_map(|e| e.outputs.iter().map(|(v, _)| Atom::Var(*v))).collect();
    let Some(values) = crate::jax::eval_jaxpr::instantiate(&sub, consts, inputs) else { return false };
    values
        .iter()
        .chain(inputs)
        .chain(consts)
        .filter(|a| a.aval.dtype.is_floating())
        .all(|a| crate::jax::eval::non_finite_counts(a, 1 << 16).is_some_and(|(nan, inf, _)| nan + inf == 0))
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
