//! A branch that runs once: `if not self.built: ...; self.built = True`, or `if g is None:
//! g = make()` on a global. The branch sets an attribute or name its own test reads, so it runs on the first call whether or not the function is
//! traced, and what it changes outside the trace (the lazily built layer's sizes and flags)
//! changes once either way: not a trace-time surprise (TL202).

use crate::syntax::ast::{Expr, ExprKind, Stmt, StmtKind};

/// Whether `body`, the branch taken on `test`, assigns an attribute (`self.built`) or a
/// `global`/`nonlocal` name (`outer`) that `test` reads. A local name is no guard: it starts
/// afresh on every call.
pub(super) fn flips_its_guard(test: &Expr, body: &[Stmt], outer: impl Fn(&str) -> bool) -> bool {
    let mut read = Vec::new();
    attributes_read(test, &mut read);
    read.retain(|d| d.contains('.') || outer(d));
    !read.is_empty() && assigns_any(body, &read)
}

/// `a.b.c` for an attribute chain on a name, `None` for anything else.
fn dotted(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) => Some(n.to_string()),
        ExprKind::Attribute { value, attr, .. } => Some(format!("{}.{attr}", dotted(value)?)),
        _ => None,
    }
}

fn attributes_read(e: &Expr, out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Attribute { .. } | ExprKind::Name(_) => out.extend(dotted(e)),
        ExprKind::UnaryOp { operand, .. } => attributes_read(operand, out),
        ExprKind::BoolOp { values, .. } => values.iter().for_each(|v| attributes_read(v, out)),
        ExprKind::Compare { left, comparators, .. } => {
            attributes_read(left, out);
            comparators.iter().for_each(|c| attributes_read(c, out));
        }
        _ => {}
    }
}

fn assigns_any(body: &[Stmt], read: &[String]) -> bool {
    let hits = |target: &Expr| dotted(target).is_some_and(|d| read.contains(&d));
    body.iter().any(|stmt| match &stmt.kind {
        StmtKind::Assign { targets, .. } => targets.iter().any(hits),
        StmtKind::AnnAssign { target, .. } | StmtKind::AugAssign { target, .. } => hits(target),
        StmtKind::If { body, orelse, .. } => assigns_any(body, read) || assigns_any(orelse, read),
        StmtKind::With { body, .. } => assigns_any(body, read),
        _ => false,
    })
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn guard_and_branch(source: &str) -> bool {
        let module = crate::syntax::parse(source);
        let Some(StmtKind::If { test, body, .. }) = module.body.first().map(|s| &s.kind) else { panic!("not an if: {source}") };
        flips_its_guard(test, body, |name| name == "g")
    }

    fn a_branch_that_sets_the_flag_its_test_reads_runs_once() {
        assert!(guard_and_branch("if not self.built:\n    self.w = 1\n    self.built = True\n"));
        assert!(guard_and_branch("if self.w is None:\n    self.w = make()\n"));
        assert!(guard_and_branch("if self.count == 0 and ready:\n    self.count += 1\n"));
        assert!(!guard_and_branch("if not self.built:\n    self.w = 1\n"));
        assert!(!guard_and_branch("if self.training:\n    other.training = False\n"));
        assert!(guard_and_branch("if g is None:\n    g = tf.random.Generator.from_seed(1)\n"));
        assert!(!guard_and_branch("if g is None:\n    h = 1\n"));
        assert!(!guard_and_branch("if lr is None:\n    lr = 0.1\n    history.append(lr)\n"));
    }

    crate::unit_tests::list![a_branch_that_sets_the_flag_its_test_reads_runs_once];
}
