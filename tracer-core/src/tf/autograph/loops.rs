//! A converted `while` on a symbolic tensor and `for` over one (AutoGraph's `while_stmt` and
//! `for_stmt`, staged as `tf.while_loop`). The loop's state is the names its body binds that
//! are live into or out of it (`scope::BlockVars::symbols`). Before the loop each is made a
//! tensor (a Python `0` an int32 one), and the test and the body are traced once with
//! symbolic tensors of those avals; then, name by name in AutoGraph's order and at the
//! loop's line, each must keep its nested structure (`TypeError`), not become `None`
//! (`ValueError`), keep its dtype (`TypeError: 'i' has dtype int32 before the loop, but
//! dtype float32 after one iteration`) and a shape at least as specific (`ValueError: 'y' has
//! shape (1,) before the loop, but shape (2,) after one iteration. ...`).
//!
//! After the loop its state holds symbolic tensors of the entry avals, and every tensor the
//! body made is the body graph's: one kept elsewhere (appended to a Python list) and used
//! after the loop is TensorFlow's `InaccessibleTensorError` (`check_accessible`). A name of
//! the state that is unbound (or `None`) before the loop is not checked; AutoGraph traces
//! the body a first time to find its type, which is modelled as a pass whose writes are
//! undone.

use std::rc::Rc;

use super::{local, raise_at, LoopBody};
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Ctx, Flow, Interp, PyResult, Site};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::ir::Prim;
use crate::repro::converted::Converted;
use crate::syntax::ast::{Expr, ExprKind, Stmt, StmtKind};
use crate::tf::tensor::{mark_array, to_tensor};

/// Stages `stmt`, a `while` whose test gave the symbolic tensor `pred`; `Ok(false)` when the
/// model cannot place it (the interpreter's abstract loop runs it instead).
pub fn while_stmt(interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: super::Staged) -> PyResult<bool> {
    let (StmtKind::While { test, body, .. }, super::Staged::Test(pred)) = (&stmt.kind, staged) else { return Ok(false) };
    let site = interp.site();
    super::check_condition(interp, &pred, "while loop", site)?;
    staged_loop(interp, ctx, stmt, Loop { test: Some((test, pred)), target: None, rows: None, body, site })
}

/// Stages `stmt`, a `for` over a symbolic tensor (its rows are the elements).
pub fn for_stmt(interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: super::Staged) -> PyResult<bool> {
    let (StmtKind::For { target, body, .. }, super::Staged::Iterate(element)) = (&stmt.kind, staged) else { return Ok(false) };
    let site = interp.site();
    let trace = interp.jax.traces.last().map_or(u32::MAX, |t| t.id);
    // What it iterates, followed at each call when its target is one name.
    let rows = crate::tf::loop_checks::take_rows(interp, site, trace).filter(|_| matches!(target.kind, ExprKind::Name(_)));
    staged_loop(interp, ctx, stmt, Loop { test: None, target: Some((target, element)), rows, body, site })
}

struct Loop<'a> {
    /// A `while`'s test, and the tensor it gave before the loop.
    test: Option<(&'a Expr, Rc<Array>)>,
    target: Option<(&'a Expr, Aval)>,
    /// What a `for` iterates, when a call's values can follow it (`loop_checks::Rows`).
    rows: Option<crate::tf::loop_checks::Rows>,
    body: &'a [Stmt],
    site: Option<Site>,
}

fn staged_loop(interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, lp: Loop) -> PyResult<bool> {
    let Some((_, vars)) = super::block_vars(interp, ctx, stmt) else { return Ok(false) };
    let Some(trace) = interp.jax.traces.last().map(|t| t.id) else { return Ok(false) };
    let symbols = vars.symbols();
    // The state before the loop (a name unbound there, or `None`, is not checked).
    let init: Vec<Option<Value>> = symbols.iter().map(|(n, _)| local(ctx, n).filter(|v| !v.is_none())).collect();
    if init.iter().any(Option::is_none) {
        // AutoGraph stages one iteration to find the types of what is not yet bound.
        interp.run_undone(|i| -> PyResult<()> {
            enter_pass(i, ctx, &lp)?;
            match i.run_loop_pass_unjoined(|i| i.exec_block(ctx, lp.body)) {
                Ok(()) | Err(Flow::Break | Flow::Continue | Flow::Raise(_)) => Ok(()),
                Err(other) => Err(other),
            }
        })?;
    }
    // Each name of the state enters the body as a symbolic tensor of its value's avals.
    let mut entry: Vec<Option<Value>> = Vec::with_capacity(symbols.len());
    for ((name, _), before) in symbols.iter().zip(&init) {
        let placed = match before {
            Some(v) => placeholders(interp, v)?,
            None => None,
        };
        if let Some(p) = &placed {
            interp.store_name(ctx, name, p.clone(), None)?;
        }
        entry.push(placed);
    }
    let first_eqn = interp.jax.traces.last().map_or(0, |t| t.jaxpr.eqns.len());
    // The body (and the test) is a graph of its own under the loop's scope; a check bound in
    // it runs at each iteration (`loop_checks.rs`).
    let scope = crate::tf::graph_names::while_scope(interp);
    crate::tf::graph_names::enter_branch(interp, scope.as_deref());
    let id = crate::tf::loop_checks::begin(interp, 1);
    let unbound = symbols.iter().zip(&init).filter(|(_, before)| before.is_none()).map(|((n, _), _)| n.clone()).collect();
    interp.tf.autograph.tensor_loops.push((lp.site, unbound));
    let (mut test, mut element) = (None, None);
    let (ran, written) = interp.run_logged(|i| -> PyResult<()> {
        (test, element) = enter_pass(i, ctx, &lp)?;
        i.run_loop_pass_unjoined(|i| i.exec_block(ctx, lp.body))
    });
    interp.tf.autograph.tensor_loops.pop();
    crate::tf::graph_names::leave_branch(interp, scope.as_deref());
    let state: Option<(Vec<Value>, Vec<Value>)> = init
        .iter()
        .zip(&entry)
        .map(|(before, entered)| Some((crate::tf::loop_checks::entry_tensor(before.as_ref()?)?, entered.clone()?)))
        .collect::<Option<Vec<_>>>()
        .map(|pairs| pairs.into_iter().unzip());
    let (init_values, entered) = state.unwrap_or_default();
    let exits: Vec<Value> = symbols.iter().map(|(n, _)| local(ctx, n).unwrap_or(Value::None)).collect();
    let exits = if entered.len() == symbols.len() { exits } else { Vec::new() };
    let traced = match &lp.target {
        None => crate::tf::loop_checks::Traced::While(test.as_ref()),
        Some(_) => crate::tf::loop_checks::Traced::For(element.as_ref().zip(lp.rows.clone())),
    };
    crate::tf::loop_checks::end(interp, id, &init_values, &entered, &exits, traced);
    let body = body_vars(interp, trace, first_eqn);
    match ran {
        Ok(()) | Err(Flow::Break | Flow::Continue) => {}
        Err(Flow::Return(_)) => {
            forget_state(interp, ctx, &symbols)?;
            return Err(interp.stop_unknown("a return inside a TensorFlow loop"));
        }
        Err(flow @ Flow::Raise(_)) => return Err(flow),
        Err(other) => {
            interp.note_went_past(&other, "the state of a TensorFlow loop is unknown after it");
            forget_state(interp, ctx, &symbols)?;
            return Ok(true);
        }
    }
    let mut state = (Vec::new(), Vec::new(), Vec::new());
    for (((name, _), entered), before) in symbols.iter().zip(&entry).zip(&init) {
        let (Some(entered), Some(before)) = (entered, before) else { continue };
        let exit = local(ctx, name).unwrap_or(Value::None);
        state.0.push(name.to_string());
        state.1.push(before.clone());
        state.2.push(exit.clone());
        if let Err(flow) = verify(interp, name, entered, &exit, lp.site) {
            return Err(recorded(interp, &lp, state, flow));
        }
    }
    // After the loop: the state as the loop's outputs, and whatever else the body stored
    // (an attribute, a dict item, a local) as tensors of the loop rather than of its body.
    let mut exits = Vec::with_capacity(symbols.len());
    for ((name, _), entered) in symbols.iter().zip(&entry) {
        let after = match entered {
            Some(v) => placeholders(interp, v)?.unwrap_or_else(|| crate::tf::tensor::unknown_tensor(interp, "a loop output")),
            None => crate::tf::tensor::unknown_tensor(interp, "a loop output tracelens does not follow"),
        };
        exits.push(after.clone());
        interp.store_name(ctx, name, after, None)?;
    }
    // A call runs a loop around this one with these values as its results (`loop_run.rs`).
    crate::tf::loop_checks::exited(interp, id, &exits);
    for slot in written {
        if let Some(v) = slot.read() {
            if holds_body_tensor(interp, &v, body) {
                let replaced = placeholders(interp, &v)?.unwrap_or_else(|| crate::tf::tensor::unknown_tensor(interp, "a loop output"));
                slot.write(Some(replaced));
            }
        }
    }
    if let Some(body) = body {
        interp.tf.autograph.loop_bodies.push(body);
    }
    Ok(true)
}

/// `flow`, raised checking a `while` loop's state, recorded for the reproducer: the state
/// (`names`, as it enters the loop and after one pass) bound before the loop and in its body,
/// the body's ops computed before it (from the loop variables' specs), read after it.
fn recorded(interp: &mut Interp, lp: &Loop, (names, before, after): (Vec<String>, Vec<Value>, Vec<Value>), flow: Flow) -> Flow {
    let Some((_, pred)) = &lp.test else { return flow };
    let c = Converted { keyword: "while".into(), before: names.clone(), main: names.clone(), orelse: Vec::new(), after: names };
    super::recorded(interp, lp.site, c, pred, [before, after, Vec::new(), Vec::new()], flow)
}

/// The start of one staged pass: the test (a `while`'s, which it gives back) or the target
/// (a `for`'s, whose placeholder it gives back).
fn enter_pass(interp: &mut Interp, ctx: &Ctx, lp: &Loop) -> PyResult<(Option<Value>, Option<Rc<Array>>)> {
    let (mut tested, mut element) = (None, None);
    if let Some((test, _)) = &lp.test {
        tested = Some(interp.eval(ctx, test)?);
    }
    if let Some((target, aval)) = &lp.target {
        let item = placeholder(interp, aval.clone())?;
        interp.assign(ctx, target, Value::Array(item.clone()))?;
        element = Some(item);
    }
    Ok((tested, element))
}

/// A symbolic tensor of `aval` in the running graph (a loop variable's placeholder).
fn placeholder(interp: &mut Interp, aval: Aval) -> PyResult<Rc<Array>> {
    let t = crate::jax::apply1(interp, Prim::opaque("Placeholder", aval), &[])?;
    Ok(mark_array(t))
}

/// `v` with each leaf made a fresh symbolic tensor of its avals (Python numbers first made
/// tensors); `None` when a leaf is something else.
fn placeholders(interp: &mut Interp, v: &Value) -> PyResult<Option<Value>> {
    Ok(Some(match v {
        Value::Tuple(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items.iter() {
                let Some(p) = placeholders(interp, item)? else { return Ok(None) };
                out.push(p);
            }
            Value::tuple(out)
        }
        Value::List(items) => {
            let items = items.borrow().clone();
            let mut out = Vec::with_capacity(items.len());
            for item in &items {
                let Some(p) = placeholders(interp, item)? else { return Ok(None) };
                out.push(p);
            }
            Value::list(out)
        }
        Value::Array(a) => Value::Array(placeholder(interp, a.aval.clone().weak(false))?),
        Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
            let Some(t) = to_tensor(interp, v, None)? else { return Ok(None) };
            Value::Array(placeholder(interp, t.aval.clone())?)
        }
        Value::Builtin(b) => match &**b {
            crate::interp::builtins::Builtin::Tf(crate::tf::TfValue::TensorArray(ta)) => crate::tf::tensor_array::loop_placeholder(ta),
            _ => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

/// Every name of the state is unknown after a loop tracelens could not follow.
fn forget_state(interp: &mut Interp, ctx: &Ctx, symbols: &[(crate::syntax::ast::Name, bool)]) -> PyResult<()> {
    for (name, _) in symbols {
        let v = crate::tf::tensor::unknown_tensor(interp, "the state of a TensorFlow loop tracelens did not follow");
        interp.store_name(ctx, name, v, None)?;
    }
    Ok(())
}

/// `verify_tf_loop_vars` for one name: its value entering the body and after one pass.
fn verify(interp: &mut Interp, name: &str, entry: &Value, exit: &Value, site: Option<Site>) -> PyResult<()> {
    let same_structure = |a: &Value, b: &Value| -> bool {
        match (a, b) {
            (Value::Tuple(x), Value::Tuple(y)) => x.len() == y.len(),
            (Value::List(x), Value::List(y)) => x.borrow().len() == y.borrow().len(),
            (Value::Tuple(_) | Value::List(_), _) | (_, Value::Tuple(_) | Value::List(_)) => false,
            _ => true,
        }
    };
    if !same_structure(entry, exit) {
        let msg = format!("'{name}' does not have the same nested structure after one iteration.\n\nThe two structures don't have the same nested structure.");
        return Err(raise_at(interp, site, "TypeError", msg));
    }
    match (entry, exit) {
        (Value::Tuple(_) | Value::List(_), _) => {
            let (a, b) = (interp.iterate(entry)?, interp.iterate(exit)?);
            for (p, q) in a.iter().zip(&b) {
                verify(interp, name, p, q, site)?;
            }
            return Ok(());
        }
        (_, Value::None) => {
            return Err(raise_at(interp, site, "ValueError", format!("'{name}' is None at the end of the iteration.")));
        }
        _ => {}
    }
    let (Value::Array(a), Some(b)) = (entry, exit_tensor(interp, exit)?) else { return Ok(()) };
    if a.aval.dtype != b.aval.dtype {
        let msg =
            format!("'{name}' has dtype {} before the loop, but dtype {} after one iteration", a.aval.dtype.name(), b.aval.dtype.name());
        return Err(raise_at(interp, site, "TypeError", msg));
    }
    if a.aval.shape != b.aval.shape {
        let shape = |s: &[usize]| crate::jax::aval::shape_tuple(s);
        let msg = format!(
            "'{name}' has shape {} before the loop, but shape {} after one iteration. Use tf.autograph.experimental.set_loop_options to set shape invariants.",
            shape(&a.aval.shape),
            shape(&b.aval.shape)
        );
        return Err(raise_at(interp, site, "ValueError", msg));
    }
    Ok(())
}

/// A value after the body as a tensor (Python numbers made tensors); `None` when it is not one.
fn exit_tensor(interp: &mut Interp, v: &Value) -> PyResult<Option<Rc<Array>>> {
    match v {
        Value::Array(_) | Value::Bool(_) | Value::Int(_) | Value::Float(_) => to_tensor(interp, v, None),
        Value::Builtin(_) if crate::interp::model::tf::is_tf(v) => to_tensor(interp, v, None),
        _ => Ok(None),
    }
}

/// The variables of the tensors a loop body bound into `trace`, from its equation `from` on.
fn body_vars(interp: &Interp, trace: u32, from: usize) -> Option<LoopBody> {
    let frame = interp.jax.traces.last().filter(|t| t.id == trace)?;
    let vars = frame.jaxpr.eqns.get(from..)?.iter().flat_map(|e| e.outputs.iter().map(|(v, _)| *v));
    let (lo, hi) = vars.fold((u32::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
    (lo <= hi).then_some(LoopBody { trace, from: lo, to: hi })
}

fn in_body(a: &Array, body: &LoopBody) -> bool {
    a.tracer().is_some_and(|t| t.trace == body.trace && (body.from..=body.to).contains(&t.var))
}

fn holds_body_tensor(interp: &Interp, v: &Value, body: Option<LoopBody>) -> bool {
    let Some(body) = body else { return false };
    match v {
        Value::Array(a) => in_body(a, &body),
        Value::Tuple(items) => items.iter().any(|i| holds_body_tensor(interp, i, Some(body))),
        Value::List(items) => items.borrow().iter().any(|i| holds_body_tensor(interp, i, Some(body))),
        _ => false,
    }
}

/// A tensor about to be used: one of an ended graph (a `tf.function`'s kept in a global, a
/// tensor loop body's kept in a Python list) is out of scope: TensorFlow's
/// `InaccessibleTensorError` in a graph, `TypeError` eagerly (TL103).
pub fn check_accessible(interp: &mut Interp, a: &Rc<Array>) -> PyResult<()> {
    out_of_scope(interp, a, false)
}

/// A tensor a `tf.function` returns: one a loop body made is out of scope there, and
/// TensorFlow raises at the call.
pub fn check_output(interp: &mut Interp, a: &Rc<Array>) -> PyResult<()> {
    out_of_scope(interp, a, true)
}

fn out_of_scope(interp: &mut Interp, a: &Rc<Array>, output: bool) -> PyResult<()> {
    let Some(t) = a.tracer() else { return Ok(()) };
    let ended = !interp.jax.is_active(t.trace);
    let in_loop = !ended && interp.tf.autograph.loop_bodies.iter().any(|b| in_body(a, b));
    if !ended && !in_loop {
        return Ok(());
    }
    if ended {
        // The store that let it out is the leak's cause, not an outer mutation (TL202).
        interp.jax.effects.leaked_traces.insert(t.trace);
    }
    let in_graph = crate::tf::in_graph(interp);
    let shown = format!("<tf.Tensor '?:0' shape={} dtype={}>", a.aval.shape_tuple(), a.aval.dtype.name());
    let msg = format!(
        "{shown} is out of scope and cannot be used here. Use return values, explicit Python locals or TensorFlow collections to access it.\nPlease see https://www.tensorflow.org/guide/function#all_outputs_of_a_tffunction_must_be_return_values for more information."
    );
    let class = if in_graph { "InaccessibleTensorError" } else { "TypeError" };
    let use_site = interp.site();
    let mut flow = interp.raise(class, Code::LeakedTracer, msg);
    if let Flow::Raise(exc) = &mut flow {
        if in_loop && !output {
            // TensorFlow's message names the body line that made the tensor; it is raised there.
            if let (Some(origin), Some(used)) = (a.origin, use_site) {
                exc.site = Some(origin);
                exc.related.push((used, "the tensor is used here, outside the loop body that made it".into()));
            }
        } else {
            let address = Rc::as_ptr(a) as usize;
            let escaped = interp.jax.effects.tracer_stores.iter().find(|(_, _, p)| *p == address).map(|(s, _, _)| *s);
            if let Some(site) = escaped {
                exc.related.push((site, crate::diagnostics::LEAK_ESCAPE_NOTE.into()));
            }
        }
    }
    Err(flow)
}
