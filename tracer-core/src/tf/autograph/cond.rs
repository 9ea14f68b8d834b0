//! A converted `if` on a symbolic tensor (AutoGraph's `if_stmt`, staged as `tf.cond`): both
//! branches are traced, the main one first, and the names they bind that are live after
//! the statement are its outputs. TensorFlow checks them in this order, at the `if` line:
//!
//! - after the main branch, each output must be bound there (`ValueError: 'y' must also be
//!   initialized in the main branch`), then after the else branch the same;
//! - then, name by name, both branches' values must have one nested structure (`TypeError`),
//!   no leaf may be `None` (`ValueError`), and leaf by leaf the tensors (Python numbers made
//!   tensors) must have one dtype (`TypeError: 'y' has dtype int32 in the main branch, but
//!   dtype float32 in the else branch`); shapes may differ (the output's are then unknown).
//!
//! A `return` in a branch makes AutoGraph thread a return value (`retval_`) through the
//! conditional: returns in both branches are checked as an output; a return in one branch
//! whose other branch goes on (an `if` among the function's own statements) is checked when
//! the function ends, against what it returns there, and a function that then ends without
//! a `return` is `ValueError: the else branch must also have a return statement.`; inside a
//! tensor loop such a return is not supported (`NotImplementedError`, at the loop's line).

use std::cell::RefCell;
use std::rc::Rc;

use super::{local, raise_at, scope};
use crate::interp::value::Value;
use crate::interp::{Ctx, Flow, Interp, PyResult, Site};
use crate::jax::array::Array;
use crate::repro::converted::{Converted, RETURN};
use crate::syntax::ast::{FunctionDef, Stmt, StmtKind};
use crate::tf::ops::delegate;
use crate::tf::partial;
use crate::tf::recursion::{RECURSION_CLASS, RECURSION_MESSAGE};
use crate::tf::tensor::{to_tensor, unknown_tensor};

/// A `return` in one branch of a converted `if` whose other branch went on.
pub struct PendingReturn {
    /// The number of frames while the function ran: its `return` is checked when it ends.
    depth: usize,
    value: Value,
    pred: Rc<Array>,
    site: Option<Site>,
    /// Whether the `return` was in the main branch (else in the else branch).
    in_main: bool,
    /// Whether the function had kept a return an unknown chose before this `if` (then the
    /// fork's kept return is joined with it: not told apart if the rest raises).
    kept_before: bool,
}

impl PendingReturn {
    /// Its `if`'s site, when the `return` is pending in the frame at `depth`.
    pub fn site_at(&self, depth: usize) -> Option<Option<Site>> {
        (self.depth == depth).then_some(self.site)
    }
}

/// How one branch ended.
struct Branch {
    /// The outputs' values at its end (`None`: unbound).
    values: Vec<Option<Value>>,
    returned: Option<Value>,
    raised: Option<Flow>,
    /// It went past what the interpreter cannot follow (or left by `break`/`continue`).
    incomplete: bool,
}

/// Stages `stmt`, an `if` whose test gave the symbolic tensor `pred`. `Ok(false)` when the
/// model cannot place the statement: the interpreter's abstract `if` runs it instead.
pub fn if_stmt(interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: super::Staged) -> PyResult<bool> {
    let (StmtKind::If { body, orelse, .. }, super::Staged::Test(pred)) = (&stmt.kind, staged) else { return Ok(false) };
    let site = interp.site();
    super::check_condition(interp, &pred, "if statement", site)?;
    let Some((def, vars)) = super::block_vars(interp, ctx, stmt) else { return Ok(false) };
    let returns = (scope::returns_in(body), scope::returns_in(orelse));
    if returns.0 || returns.1 {
        if let Some(loop_site) = interp.tf.autograph.tensor_loops.last().map(|(site, _)| *site) {
            let msg = "a return statement cannot be placed inside this TensorFlow loop; this may happen if a return statement depends on a static Python condition such as a hyperparameter";
            return Err(raise_at(interp, loop_site, "NotImplementedError", msg.into()));
        }
    }
    let outputs = vars.outputs();
    let ends: RefCell<Vec<Branch>> = RefCell::new(Vec::new());
    let run = |i: &mut Interp, block: &[Stmt]| -> PyResult<()> {
        // TensorFlow stops at the first branch that raises.
        if ends.borrow().iter().any(|b| b.raised.is_some()) {
            return Ok(());
        }
        let ran = i.exec_block(ctx, block);
        let values = outputs.iter().map(|n| local(ctx, n)).collect();
        let mut end = Branch { values, returned: None, raised: None, incomplete: false };
        let flow = match ran {
            Ok(()) => Ok(()),
            Err(Flow::Return(v)) => {
                end.returned = Some(v.clone());
                Err(Flow::Return(v))
            }
            Err(raised @ Flow::Raise(_)) => {
                end.raised = Some(raised);
                Ok(())
            }
            Err(other) => {
                end.incomplete = true;
                Err(other)
            }
        };
        ends.borrow_mut().push(end);
        flow
    };
    // Each branch is a graph of its own under the scope `cond`, run when `pred` picks it.
    let scope = crate::tf::graph_names::cond_scope(interp);
    let branch = |i: &mut Interp, taken: bool, block: &[Stmt]| {
        crate::tf::guards::enter(i, &pred, taken, true);
        crate::tf::graph_names::enter_branch(i, scope.as_deref());
        let out = run(i, block);
        crate::tf::graph_names::leave_branch(i, scope.as_deref());
        crate::tf::guards::leave(i);
        out
    };
    let kept_before = interp.keeps_early_return();
    let forked = interp.fork_both_taken(|i| branch(i, true, body), |i| branch(i, false, orelse));
    let mut ends = ends.into_inner();
    if let Some((in_main, raised)) = ends.iter_mut().enumerate().find_map(|(i, b)| Some((i == 0, b.raised.take()?))) {
        // Both branches are traced, so the raise happens even where the other branch
        // returned: the fork kept that return as a way out of the function (as for a Python
        // `if` on an unknown), which would drop the raise at the function's end.
        if kept_before {
            // Joined with an earlier kept return: not told apart here.
            return Err(interp.stop_unknown("an AutoGraph if whose branch raises, after a return an unknown chose"));
        }
        if ends.iter().any(|b| b.returned.is_some()) {
            interp.both_paths_taken(true);
        }
        let block = if in_main { body } else { orelse };
        return Err(raised_while_tracing(interp, &def, stmt, block, site, raised));
    }
    if ends.len() != 2 || ends.iter().any(|b| b.incomplete) {
        return forked.map(|()| true);
    }
    let (main, other) = (&ends[0], &ends[1]);
    match (&main.returned, &other.returned) {
        (Some(a), Some(b)) => {
            let merged = merge(interp, &pred, "retval_", a, b, site).map_err(|flow| {
                let c = Converted {
                    keyword: "if".into(),
                    before: Vec::new(),
                    main: vec![RETURN.into()],
                    orelse: vec![RETURN.into()],
                    after: Vec::new(),
                };
                super::recorded(interp, site, c, &pred, [Vec::new(), vec![a.clone()], vec![b.clone()], Vec::new()], flow)
            })?;
            return Err(Flow::Return(merged));
        }
        (Some(v), None) | (None, Some(v)) => {
            if scope::is_top_level(&def.body, stmt) {
                let depth = interp.frames.len();
                let pending = PendingReturn { depth, value: v.clone(), pred, site, in_main: main.returned.is_some(), kept_before };
                interp.tf.autograph.pending_returns.push(pending);
            }
            // Both branches are traced: the function's end joins the two ways
            // (`function_ends`), not the fork's kept return.
            interp.both_paths_taken(false);
            return forked.map(|()| true);
        }
        (None, None) => {}
    }
    forked?;
    let merged = merge_outputs(interp, &pred, &outputs, (main, other), (&def, site)).map_err(|flow| {
        // The statement as the reproducer writes it: each branch binds what it bound.
        let bound = |b: &Branch| -> (Vec<String>, Vec<Value>) {
            outputs.iter().zip(&b.values).filter_map(|(n, v)| Some((n.to_string(), v.clone()?))).unzip()
        };
        let ((main_names, main_values), (else_names, else_values)) = (bound(main), bound(other));
        let c = Converted {
            keyword: "if".into(),
            before: Vec::new(),
            main: main_names,
            orelse: else_names,
            after: outputs.iter().map(|n| n.to_string()).collect(),
        };
        super::recorded(interp, site, c, &pred, [Vec::new(), main_values, else_values, Vec::new()], flow)
    })?;
    for (name, value) in merged {
        interp.store_name(ctx, &name, value, None)?;
    }
    Ok(true)
}

/// An exception raised in a branch of the converted `if` `stmt` (the branch `block`): both
/// branches are traced, so it is raised whatever the tensor is (a user's `raise` raises at
/// its line). In a trace with unknown arguments the `if` may be Python's at the real call:
/// the exception is then one of a path not known to be taken. A recursive call returned as
/// the whole branch of an `if` opening the function is the `StagingError` TensorFlow names at
/// the `if` (see `function::recursion_error`).
fn raised_while_tracing(interp: &Interp, def: &FunctionDef, stmt: &Stmt, block: &[Stmt], site: Option<Site>, raised: Flow) -> Flow {
    let Flow::Raise(mut exc) = raised else { return raised };
    if crate::interp::model::state::arguments_unknown(interp) {
        exc.conditional = true;
    } else if exc.class.name.as_ref() == RECURSION_CLASS && exc.message == RECURSION_MESSAGE {
        let opens_function = def.body.first().is_some_and(|first| std::ptr::eq(first, stmt));
        let whole_branch = matches!(block, [only] if matches!(only.kind, StmtKind::Return(Some(_)))
            && exc.site.is_some_and(|s| only.span.start <= s.span.start && s.span.end <= only.span.end));
        if opens_function && whole_branch {
            exc.site = site;
        } else {
            exc.conditional = interp.abstract_unknowns;
        }
    }
    Flow::Raise(exc)
}

/// The outputs of a converted `if` whose branches both went on (`Branch::values` of each,
/// one per output), checked as TensorFlow checks them, each with its joined value.
fn merge_outputs(
    interp: &mut Interp,
    pred: &Rc<Array>,
    outputs: &[Rc<str>],
    (main, other): (&Branch, &Branch),
    (def, site): (&FunctionDef, Option<Site>),
) -> PyResult<Vec<(Rc<str>, Value)>> {
    for (branch, label) in [(main, "main"), (other, "else")] {
        if let Some(i) = branch.values.iter().position(Option::is_none) {
            let msg = format!("'{}' must also be initialized in the {label} branch", outputs[i]);
            // In a tensor loop of the same function the name, unbound before the loop, is a
            // loop variable (the way around the branch reads the last iteration's value):
            // AutoGraph names the loop, with the branch's error as a note.
            if let Some((loop_site, unbound)) = enclosing_tensor_loop(interp, def, site) {
                // Another name of the loop's state unbound before it could be the one
                // AutoGraph names first: not claimed.
                if unbound.iter().any(|n| *n != outputs[i]) {
                    return Err(interp.stop_unknown("a tensor loop whose state has several names unbound before it"));
                }
                let msg = format!("'{}' must be defined before the loop\nNote: AutoGraph tried to define it automatically, but ran into a ValueError: {msg}", outputs[i]);
                return Err(raise_at(interp, Some(loop_site), "ValueError", msg));
            }
            return Err(raise_at(interp, site, "ValueError", msg));
        }
    }
    let mut merged = Vec::with_capacity(outputs.len());
    for (i, name) in outputs.iter().enumerate() {
        let (Some(a), Some(b)) = (&main.values[i], &other.values[i]) else { continue };
        merged.push((name.clone(), merge(interp, pred, name, a, b, site)?));
    }
    Ok(merged)
}

/// The innermost tensor loop being staged, when it is a statement of `def` holding the
/// converted `if` at `site` (not a loop of a function that called `def`).
/// With the names of its state unbound before it.
fn enclosing_tensor_loop<'a>(interp: &'a Interp, def: &FunctionDef, site: Option<Site>) -> Option<(Site, &'a [crate::syntax::ast::Name])> {
    let (looped, unbound) = interp.tf.autograph.tensor_loops.last()?;
    let (looped, at) = ((*looped)?, site?);
    let in_def = def.span.start <= looped.span.start && looped.span.start < def.span.end;
    (looped.file == at.file && in_def && looped.span.start <= at.span.start).then_some((looped, unbound.as_slice()))
}

/// The end of a function (its body's flow) that holds a pending `return` of a converted
/// `if`: the return value of both ways through the `if`, checked and joined.
pub fn function_ends(interp: &mut Interp, ran: PyResult<()>) -> PyResult<()> {
    let depth = interp.frames.len();
    let state = &mut interp.tf.autograph.pending_returns;
    let Some(at) = state.iter().rposition(|p| p.depth == depth) else { return ran };
    let pending = state.remove(at);
    state.retain(|p| p.depth != depth);
    let later = match ran {
        Ok(()) => None,
        Err(Flow::Return(v)) => Some(v),
        // The rest of the function is the converted `if`'s other branch, traced whatever
        // the tensor is: its raise happens (the fork kept the `return` as a way out).
        Err(Flow::Raise(_)) if pending.kept_before => {
            return Err(interp.stop_unknown("an AutoGraph if's other branch raises, after a return an unknown chose"));
        }
        Err(Flow::Raise(mut exc)) => {
            interp.forget_early_return();
            // As for a raise in a branch (`raised_while_tracing`).
            exc.conditional |= crate::interp::model::state::arguments_unknown(interp);
            return Err(Flow::Raise(exc));
        }
        Err(other) => return Err(other),
    };
    // The statement as the reproducer writes it: its branch returns, the other goes on to
    // the function's end, which returns `later` (or nothing).
    let returning = vec![RETURN.to_string()];
    let (main_part, else_part) = if pending.in_main { (returning.clone(), Vec::new()) } else { (Vec::new(), returning.clone()) };
    let mut c = Converted { keyword: "if".into(), before: Vec::new(), main: main_part, orelse: else_part, after: Vec::new() };
    let mut parts = if pending.in_main {
        [Vec::new(), vec![pending.value.clone()], Vec::new(), Vec::new()]
    } else {
        [Vec::new(), Vec::new(), vec![pending.value.clone()], Vec::new()]
    };
    let Some(later) = later else {
        let missing = if pending.in_main { "else" } else { "main" };
        let msg = format!("the {missing} branch must also have a return statement.");
        let flow = raise_at(interp, pending.site, "ValueError", msg);
        return Err(super::recorded(interp, pending.site, c, &pending.pred, parts, flow));
    };
    let (main, other) = if pending.in_main { (&pending.value, &later) } else { (&later, &pending.value) };
    let merged = merge(interp, &pending.pred, "retval_", main, other, pending.site).map_err(|flow| {
        c.after = returning;
        parts[3] = vec![later.clone()];
        super::recorded(interp, pending.site, c, &pending.pred, parts, flow)
    })?;
    Err(Flow::Return(merged))
}

/// The two branches' values of one output, checked as TensorFlow checks them, and the
/// conditional's output.
fn merge(interp: &mut Interp, pred: &Rc<Array>, name: &str, a: &Value, b: &Value, site: Option<Site>) -> PyResult<Value> {
    if let Some(why) = structure_difference(a, b) {
        let msg = format!(
            "'{name}' must have the same nested structure in the main and else branches:\n\nThe two structures don't have the same nested structure.\n\n{why}"
        );
        return Err(raise_at(interp, site, "TypeError", msg));
    }
    merge_leaves(interp, pred, name, a, b, site)
}

fn merge_leaves(interp: &mut Interp, pred: &Rc<Array>, name: &str, a: &Value, b: &Value, site: Option<Site>) -> PyResult<Value> {
    match (a, b) {
        (Value::Tuple(x), Value::Tuple(y)) => {
            let mut out = Vec::with_capacity(x.len());
            for (p, q) in x.iter().zip(y.iter()) {
                out.push(merge_leaves(interp, pred, name, p, q, site)?);
            }
            return Ok(Value::tuple(out));
        }
        (Value::List(x), Value::List(y)) => {
            let (x, y) = (x.borrow().clone(), y.borrow().clone());
            let mut out = Vec::with_capacity(x.len());
            for (p, q) in x.iter().zip(y.iter()) {
                out.push(merge_leaves(interp, pred, name, p, q, site)?);
            }
            return Ok(Value::list(out));
        }
        _ => {}
    }
    if a.is_none() {
        return Err(raise_at(interp, site, "ValueError", format!("'{name}' is None at the end of the main branch.")));
    }
    if b.is_none() {
        return Err(raise_at(interp, site, "ValueError", format!("'{name}' is None at the end of the else branch.")));
    }
    let (Some(x), Some(y)) = (leaf_tensor(interp, a)?, leaf_tensor(interp, b)?) else {
        return Ok(match (a.identity(), b.identity()) {
            (Some(p), Some(q)) if p == q => a.clone(),
            _ => unknown_tensor(interp, "a tf.cond output tracelens does not follow"),
        });
    };
    let ((x_dims, x_dtype), (y_dims, y_dtype)) = (leaf_dims(&x), leaf_dims(&y));
    if x_dtype != y_dtype {
        let msg = format!("'{name}' has dtype {} in the main branch, but dtype {} in the else branch", x_dtype.name(), y_dtype.name());
        return Err(raise_at(interp, site, "TypeError", msg));
    }
    match (&x, &y) {
        (Value::Array(p), Value::Array(q)) if p.aval.shape == q.aval.shape => {
            delegate(interp, crate::jax::surface::JaxFn::Where, vec![Value::Array(pred.clone()), x.clone(), y.clone()], Vec::new())
        }
        // TensorFlow relaxes the dimensions that differ to `None`.
        _ => match partial::most_specific_common(&x_dims, &y_dims) {
            Some(dims) => partial::make(interp, dims, x_dtype, None),
            None => Ok(unknown_tensor(interp, "a tf.cond output whose branches differ in rank")),
        },
    }
}

/// A leaf as TensorFlow's conditional takes it: a tensor (known or in part), a variable's
/// value, a Python number made a tensor; `None` for anything else.
fn leaf_tensor(interp: &mut Interp, v: &Value) -> PyResult<Option<Value>> {
    if partial::of(v).is_some() {
        return Ok(Some(v.clone()));
    }
    let is_tensor = matches!(v, Value::Array(_) | Value::Bool(_) | Value::Int(_) | Value::Float(_)) || crate::interp::model::tf::is_tf(v);
    if !is_tensor {
        return Ok(None);
    }
    Ok(to_tensor(interp, v, None)?.map(Value::Array))
}

fn leaf_dims(v: &Value) -> (Vec<Option<usize>>, crate::jax::dtypes::DType) {
    partial::dims_of(v).unwrap_or((Vec::new(), crate::jax::dtypes::DType::F32))
}

/// Why two values do not have one nested structure (tf.nest's rule: tuples, lists and dicts
/// are structure, of the same type and length; anything else is a leaf).
fn structure_difference(a: &Value, b: &Value) -> Option<String> {
    let describe = |v: &Value| match v {
        Value::Tuple(t) => format!("type=tuple len={}", t.len()),
        Value::List(l) => format!("type=list len={}", l.borrow().len()),
        Value::Dict(d) => format!("type=dict len={}", d.borrow().len()),
        _ => "a single value".to_string(),
    };
    let differs = || Some(format!("First structure: {}\n\nSecond structure: {}", describe(a), describe(b)));
    match (a, b) {
        (Value::Tuple(x), Value::Tuple(y)) => {
            if x.len() != y.len() {
                return differs();
            }
            x.iter().zip(y.iter()).find_map(|(p, q)| structure_difference(p, q))
        }
        (Value::List(x), Value::List(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            if x.len() != y.len() {
                return differs();
            }
            x.iter().zip(y.iter()).find_map(|(p, q)| structure_difference(p, q))
        }
        (Value::Dict(x), Value::Dict(y)) => {
            let (kx, ky): (Vec<_>, Vec<_>) = (x.borrow().entries.keys().cloned().collect(), y.borrow().entries.keys().cloned().collect());
            if kx.len() != ky.len() || kx.iter().any(|k| !ky.contains(k)) {
                return differs();
            }
            None
        }
        (Value::Tuple(_) | Value::List(_) | Value::Dict(_), _) | (_, Value::Tuple(_) | Value::List(_) | Value::Dict(_)) => differs(),
        _ => None,
    }
}
