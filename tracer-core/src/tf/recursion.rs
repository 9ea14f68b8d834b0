//! A recursion through other functions back into a `tf.function` being traced: two
//! `tf.function`s calling each other under `if`s on tensors (the guide's even/odd), or a
//! `tf.function` calling a Python helper that calls it back. TensorFlow traces the call
//! again inside the running trace, and again, until Python's recursion limit, and AutoGraph
//! raises `StagingError` at the first call. The user line its message names last is the
//! frame the limit was reached in: one of the cycle's lines, which one depending on how deep
//! the Python stack was when the first call began (the even/odd pair names one `if` under up
//! to 20 extra frames and the other from 21).
//!
//! No line is TensorFlow's at every depth, so tracelens names one TensorFlow names at some:
//! the call that re-enters the function being traced, as AutoGraph's frames name it. A
//! call among a function's own statements is named at its line; a call in a branch of an
//! `if` on a tensor, or after such an `if` whose other branch returns (AutoGraph guards the
//! rest of the function with that `if`'s conditional), is named at the `if`. Where the call
//! stands anywhere else (in a loop, a `with`, a nested block, a lambda, after other compound
//! statements), the frame AutoGraph names is not known: the error is left to the rules of a
//! path not known (`recursion_error`).

use std::rc::Rc;

use super::autograph::scope::enclosing_def;
use super::function::TfFunction;
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, Site};
use crate::syntax::ast::{Stmt, StmtKind};

/// Where a recursion into `f` through other functions is reported: the re-entering call (see
/// the module's text). `None` for a call of `f` from its own body (`autograph::cond` places
/// that one) and for calls whose frame AutoGraph names is not known.
pub fn cycle_site(interp: &Interp, f: &TfFunction) -> Option<Site> {
    if !f.autograph || interp.tf.autograph.in_tensor_loop() {
        return None;
    }
    let Value::Function(target) = &f.fun else { return None };
    let depth = interp.frames.len();
    let frame = interp.frames.last().filter(|fr| !interp.is_library(fr.file))?;
    let module = interp.files.get(frame.file as usize)?.module.clone();
    let def = enclosing_def(&module.body, frame.span)?;
    // A call of `f` from its own body, or from a lambda or a nested function's frame.
    if Rc::ptr_eq(def, &target.def) || *frame.name != *def.name {
        return None;
    }
    let holds = |s: &Stmt| s.span.start <= frame.span.start && frame.span.end <= s.span.end;
    let index = def.body.iter().position(holds)?;
    let (earlier, stmt) = (&def.body[..index], &def.body[index]);
    let at = |s: &Stmt| Some(Site { file: frame.file, span: s.span });
    match &stmt.kind {
        // In a branch of a converted `if` of this trace's own function, among the branch's
        // own statements, with nothing but plain statements before the `if`.
        StmtKind::If { body, orelse, .. } => {
            let own_branch = super::guards::in_converted_if(interp) && body.iter().chain(orelse).any(|s| holds(s) && plain(s));
            (own_branch && earlier.iter().all(plain) && innermost_trace_is(interp, def)).then(|| at(stmt)).flatten()
        }
        _ if plain(stmt) => {
            let compound: Vec<&Stmt> = earlier.iter().filter(|s| !plain(s)).collect();
            match compound[..] {
                [] => at(stmt),
                // The rest of the function after an `if` on a tensor whose branch returned.
                [the_if] if matches!(the_if.kind, StmtKind::If { .. }) => {
                    let pending = interp.tf.autograph.pending_return_sites(depth);
                    match pending[..] {
                        [Some(site)]
                            if site.file == frame.file && the_if.span.start <= site.span.start && site.span.end <= the_if.span.end =>
                        {
                            at(the_if)
                        }
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// A statement with no block of its own.
fn plain(s: &Stmt) -> bool {
    matches!(
        s.kind,
        StmtKind::Expr(_)
            | StmtKind::Assign { .. }
            | StmtKind::AnnAssign { .. }
            | StmtKind::AugAssign { .. }
            | StmtKind::Return(_)
            | StmtKind::Pass
    )
}

/// Whether the innermost `tf.function` trace running is of `def` (so the converted `if`
/// being traced is one of `def`'s, not of a function that called it).
fn innermost_trace_is(interp: &Interp, def: &Rc<crate::syntax::ast::FunctionDef>) -> bool {
    interp.tf.active.last().is_some_and(|a| matches!(&a.function.fun, Value::Function(fun) if Rc::ptr_eq(&fun.def, def)))
}

/// What TensorFlow 2.21's AutoGraph wraps the `RecursionError` in.
pub const RECURSION_CLASS: &str = "StagingError";
/// The last paragraph of its message.
pub const RECURSION_MESSAGE: &str = "RecursionError: maximum recursion depth exceeded while calling a Python object";
/// The last paragraph's beginning, for a recursion through other functions: what follows
/// (`in comparison`, `while calling a Python object`, nothing) depends on the operation the
/// limit was reached in, which changes with the depth of the stack (the module's text).
pub const RECURSION_CYCLE_MESSAGE: &str = "RecursionError: maximum recursion depth exceeded";

/// A recursive call of a `tf.function` in its own trace: TensorFlow traces the call again
/// inside the trace, and again, until Python's recursion limit, and AutoGraph raises
/// `StagingError` at the outermost call. The user line its message names last is the frame
/// the limit was reached in, which depends on the stack: it is stable (and reported, by
/// `autograph::cond`) only for a recursive `return` that is a whole branch of an `if` on a
/// tensor opening the function; elsewhere the error is raised as on a path not known.
/// A recursion through other functions is reported at the call that re-enters `f`
/// (`cycle_site`), where its frame is known.
pub(super) fn recursion_error(interp: &Interp, f: &TfFunction) -> Flow {
    if let Some(site) = cycle_site(interp, f) {
        let mut flow = interp.raise(RECURSION_CLASS, Code::PythonException, RECURSION_CYCLE_MESSAGE);
        if let Flow::Raise(exc) = &mut flow {
            exc.site = Some(site);
            exc.conditional |= crate::interp::model::state::arguments_unknown(interp);
        }
        return flow;
    }
    let mut flow = interp.raise(RECURSION_CLASS, Code::PythonException, RECURSION_MESSAGE);
    if let Flow::Raise(exc) = &mut flow {
        // Out of a branch of a converted `if`, `autograph::cond` decides.
        exc.conditional |= interp.abstract_unknowns && !super::guards::in_converted_if(interp);
    }
    flow
}
