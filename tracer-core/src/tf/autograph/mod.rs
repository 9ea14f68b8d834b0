//! AutoGraph, modelled: inside a `tf.function` whose code AutoGraph converts, an `if` or
//! `while` whose test is a symbolic tensor, and a `for` over one, become TensorFlow's
//! conditional and loop with AutoGraph's rules (TensorFlow 2.21,
//! `autograph/operators/control_flow.py`), each raising what TensorFlow raises at the user's
//! line:
//!
//! - `cond.rs`: both branches are traced; every name either binds that is live after the
//!   `if` must be bound by both, with one nested structure and, leaf by leaf, one dtype; a
//!   `return` in one branch needs one in the other (or after the `if`), of the same dtype.
//! - `loops.rs`: the loop's state (names the body binds that are live into or out of it) is
//!   made tensors, the body traced once, and each name must keep its structure, dtype and
//!   shape after one iteration; a `return` under a condition inside the loop is not
//!   supported; a tensor made in the body and kept in a Python list is out of scope after it.
//! - `scope.rs`: the static analysis (bound names, liveness) these rules are read from.
//!
//! The interpreter hands a statement here when its test or iterable is a symbolic tensor in
//! converted code (`tensor::truth`, `tensor::iterate` leave the predicate in `State` and
//! stop; `exec.rs` takes it back). What the model cannot follow (a branch that goes past an
//! unknown, a statement it cannot place in its function) goes back to the interpreter's
//! abstract control flow, which reports nothing it does not know.

mod cond;
mod loops;
pub mod scope;

use std::collections::HashMap;
use std::rc::Rc;

use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Ctx, Flow, Interp, PyResult, Site, StopReason};
use crate::jax::array::Array;
use crate::repro::converted::Converted;
use crate::syntax::ast::{FunctionDef, Stmt};

pub use crate::interp::model::tf::autograph::Staged;
pub use cond::{function_ends, if_stmt};
pub use loops::{check_accessible, check_output, for_stmt, while_stmt};

/// AutoGraph's state in one analysis.
#[derive(Default)]
pub struct State {
    /// What a converted `if`/`while` test or `for` iterable gave, and where.
    pending: Option<(Staged, Option<Site>)>,
    /// The tensor loops being traced, innermost last (their `while`/`for` lines), each with
    /// the names of its state unbound before it.
    tensor_loops: Vec<(Option<Site>, Vec<crate::syntax::ast::Name>)>,
    /// The bodies of tensor loops traced so far: their tensors (variables `from..to` of a
    /// trace) are out of scope once the loop ends.
    loop_bodies: Vec<LoopBody>,
    /// `return`s in one branch of a converted `if` whose other branch went on: the function
    /// must return after it too (`cond::function_ends`).
    pending_returns: Vec<cond::PendingReturn>,
    /// `scope::block_vars` of the statements seen, by where they are.
    block_vars: HashMap<(u32, u32), Option<Rc<scope::BlockVars>>>,
}

#[derive(Clone, Copy)]
struct LoopBody {
    trace: u32,
    from: u32,
    to: u32,
}

impl State {
    /// Whether a tensor loop's body is being traced (it may run any number of times).
    pub fn in_tensor_loop(&self) -> bool {
        !self.tensor_loops.is_empty()
    }
    pub fn has_pending_returns(&self) -> bool {
        !self.pending_returns.is_empty()
    }
    /// The sites of the converted `if`s whose `return` is pending in the frame at `depth`
    /// (`Interp::frames`' length while it runs).
    pub fn pending_return_sites(&self, depth: usize) -> Vec<Option<Site>> {
        self.pending_returns.iter().filter_map(|p| p.site_at(depth)).collect()
    }
}

/// `if t:`/`while t:` on a symbolic tensor in converted code: AutoGraph stages it. The
/// statement's handler takes the predicate back (`take`); anything else that catches the
/// stop sees an unknown, as before.
pub fn convert_test(interp: &mut Interp, pred: &Rc<Array>, what: &str) -> Flow {
    let flow = interp.stop_unknown(format!("AutoGraph turns `{what}` on a tensor into a graph conditional or loop"));
    if matches!(what, "if" | "while") {
        interp.tf.autograph.pending = Some((Staged::Test(pred.clone()), interp.site()));
    }
    flow
}

/// `for x in t:` over a symbolic tensor in converted code, whose rows have this aval.
pub fn convert_iteration(interp: &mut Interp, row: crate::jax::aval::Aval) -> Flow {
    let flow = interp.stop_unknown("AutoGraph turns a loop over a tensor into a tf.while_loop");
    interp.tf.autograph.pending = Some((Staged::Iterate(row), interp.site()));
    flow
}

/// The predicate (or iterated rows) behind `flow`, if AutoGraph converts the statement
/// that raised it.
pub fn take(interp: &mut Interp, flow: &Flow) -> Option<Staged> {
    let Flow::Stop(StopReason::Unknown(_), site) = flow else { return None };
    let (pred, at) = interp.tf.autograph.pending.take()?;
    (at == *site).then_some(pred)
}

/// The function definition whose body holds `stmt` (a statement of the running file), and
/// AutoGraph's state for the statement.
fn block_vars(interp: &mut Interp, ctx: &Ctx, stmt: &Stmt) -> Option<(Rc<FunctionDef>, Rc<scope::BlockVars>)> {
    let module = interp.files.get(ctx.file as usize)?.module.clone();
    let def = scope::enclosing_def(&module.body, stmt.span)?.clone();
    let key = (ctx.file, stmt.span.start);
    let vars = match interp.tf.autograph.block_vars.get(&key) {
        Some(v) => v.clone(),
        None => {
            let v = scope::block_vars(&def, stmt).map(Rc::new);
            interp.tf.autograph.block_vars.insert(key, v.clone());
            v
        }
    };
    Some((def, vars?))
}

/// A name's value in the running function's own scope (`None` when it is unbound there).
fn local(ctx: &Ctx, name: &str) -> Option<crate::interp::value::Value> {
    let scope = ctx.scope.as_ref()?;
    let cell = scope.vars.borrow().get(name).cloned()?;
    let v = cell.borrow().clone();
    Some(v)
}

/// Raises `class: message` at `site` (the converted statement's line), as a TL109: the
/// statement's state does not fit TensorFlow's control flow.
fn raise_at(interp: &Interp, site: Option<Site>, class: &str, message: String) -> Flow {
    raise_code_at(interp, site, class, Code::ControlFlowSignature, message)
}

fn raise_code_at(interp: &Interp, site: Option<Site>, class: &str, code: Code, message: String) -> Flow {
    let mut flow = interp.raise(class, code, message);
    if let (Flow::Raise(exc), Some(site)) = (&mut flow, site) {
        exc.site = Some(site);
    }
    flow
}

/// `_verify_tf_condition`: the test of a converted statement must be a scalar bool tensor.
/// `tag` is TensorFlow's name for the statement (`if statement`, `while loop`).
fn check_condition(interp: &mut Interp, pred: &Rc<Array>, tag: &str, site: Option<Site>) -> PyResult<()> {
    let hint = "to check for None, use `is not None`";
    let shown = |interp: &Interp| crate::tf::tensor::symbolic_str(interp, pred);
    let flow = if !pred.aval.dtype.is_bool() {
        let msg = format!(
            "condition of {tag} expected to be `tf.bool` scalar, got {}; to use as boolean Tensor, use `tf.cast`; {hint}",
            shown(interp)
        );
        raise_code_at(interp, site, "ValueError", Code::DtypeMismatch, msg)
    } else if pred.aval.shape.iter().product::<usize>() > 1 {
        let msg = format!("condition of {tag} expected to be `tf.bool` scalar, got {}; {hint}", shown(interp));
        raise_code_at(interp, site, "ValueError", Code::ShapeMismatch, msg)
    } else {
        return Ok(());
    };
    let keyword = tag.split(' ').next().unwrap_or(tag);
    Err(recorded(interp, site, Converted::test_only(keyword), pred, [Vec::new(), Vec::new(), Vec::new(), Vec::new()], flow))
}

/// `flow`, an error TensorFlow raises at a converted statement, recorded for the reproducer
/// (`jax::stmt::record_converted`): the statement with its test and the values `c` binds.
fn recorded(interp: &mut Interp, site: Option<Site>, c: Converted, test: &Rc<Array>, parts: [Vec<Value>; 4], flow: Flow) -> Flow {
    if let (Some(site), Flow::Raise(_)) = (site, &flow) {
        crate::jax::stmt::record_converted(interp, site, c, &Value::Array(test.clone()), parts);
    }
    flow
}
