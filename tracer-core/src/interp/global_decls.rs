//! Module globals that a function binds through a `global` statement: until that function
//! runs the name is unbound, and a hook or callback the analysis never calls (pytest's
//! `pytest_configure`, a framework's setup function) may be what runs it first. A read of
//! such a name that finds nothing is unknown, never a NameError.

use crate::syntax::ast::{Stmt, StmtKind};

/// Whether a function defined anywhere in `stmts` (nested in classes, branches and other
/// functions included) declares `global name`.
pub fn bound_by_a_function(stmts: &[Stmt], name: &str) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::FunctionDef(def) => declares(&def.body, name) || bound_by_a_function(&def.body, name),
        StmtKind::ClassDef(class) => bound_by_a_function(&class.body, name),
        other => blocks(other).iter().any(|b| bound_by_a_function(b, name)),
    })
}

/// Whether `global name` stands in this function body (outside its nested functions).
fn declares(body: &[Stmt], name: &str) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Global(names) => names.iter().any(|n| n.as_ref() == name),
        StmtKind::FunctionDef(_) | StmtKind::ClassDef(_) => false,
        other => blocks(other).iter().any(|b| declares(b, name)),
    })
}

/// The statement blocks a compound statement holds.
fn blocks(kind: &StmtKind) -> Vec<&[Stmt]> {
    match kind {
        StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
            vec![body, orelse]
        }
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            let mut out: Vec<&[Stmt]> = vec![body, orelse, finalbody];
            out.extend(handlers.iter().map(|h| h.body.as_slice()));
            out
        }
        StmtKind::With { body, .. } => vec![body],
        _ => Vec::new(),
    }
}
