//! AutoGraph's static view of a control-flow statement inside a converted function: the
//! names it binds (`bound`), and which names are live into and out of it (a backward
//! liveness analysis over the function body, loops to a fixpoint, `break` and `continue`
//! to their targets). From these AutoGraph picks a statement's state: the names it binds
//! that are live in or out (`_get_block_vars`), outputs (live out) first, each group sorted.
//!
//! Names bound inside a nested `def`, `lambda`, class or comprehension are that scope's;
//! attribute and item stores (AutoGraph's composite symbols) are not modelled here.

use std::collections::{BTreeSet, HashSet};

use crate::syntax::ast::{literal_expr, Comprehension, Expr, ExprKind, FStringPart, FunctionDef, Name, Stmt, StmtKind};

type Set = HashSet<Name>;

/// The state AutoGraph threads through one `if`, `while` or `for`.
#[derive(Debug, Clone, Default)]
pub struct BlockVars {
    /// Names the statement's blocks bind (the `for` target too), sorted.
    pub bound: BTreeSet<Name>,
    pub live_in: Set,
    pub live_out: Set,
    /// Names the function declares `global` or `nonlocal`: never part of the state.
    pub declared: Set,
}

impl BlockVars {
    /// AutoGraph's `symbol_names`: bound names live in or out, the outputs (live out)
    /// first, each group in name order; with whether each is an output.
    pub fn symbols(&self) -> Vec<(Name, bool)> {
        let mut out: Vec<(Name, bool)> = self
            .bound
            .iter()
            .filter(|n| !self.declared.contains(*n) && (self.live_in.contains(*n) || self.live_out.contains(*n)))
            .map(|n| (n.clone(), self.live_out.contains(n)))
            .collect();
        out.sort_by(|(a, ao), (b, bo)| bo.cmp(ao).then_with(|| a.cmp(b)));
        out
    }

    /// The outputs alone (`symbols()[..nouts]`).
    pub fn outputs(&self) -> Vec<Name> {
        self.symbols().into_iter().filter(|(_, out)| *out).map(|(n, _)| n).collect()
    }
}

/// The state of `stmt` (an `if`, `while` or `for` of `def`'s body, found by identity).
pub fn block_vars(def: &FunctionDef, stmt: &Stmt) -> Option<BlockVars> {
    let mut analysis = Liveness { target: stmt as *const Stmt, found: None };
    analysis.block(&def.body, Set::new(), None);
    let (live_in, live_out) = analysis.found?;
    let mut bound = BTreeSet::new();
    match &stmt.kind {
        StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
            bound_in_block(body, &mut bound);
            bound_in_block(orelse, &mut bound);
        }
        StmtKind::For { target, body, orelse, .. } => {
            bound_in_target(target, &mut bound);
            bound_in_block(body, &mut bound);
            bound_in_block(orelse, &mut bound);
        }
        _ => return None,
    }
    let mut declared = Set::new();
    declared_in_block(&def.body, &mut declared);
    Some(BlockVars { bound, live_in, live_out, declared })
}

/// Whether nothing can read the result of the call at `call` in `def`'s body: the call is a
/// statement of its own, or the whole value of `name = call` where `name` is not live
/// afterwards and not declared `global`/`nonlocal`. `false` for any other place.
pub fn unread_result(def: &FunctionDef, call: crate::syntax::ast::Span) -> bool {
    let Some(stmt) = statement_of(&def.body, call) else { return false };
    match &stmt.kind {
        StmtKind::Expr(_) => true,
        StmtKind::Assign { targets, .. } => {
            let [Expr { kind: ExprKind::Name(name), .. }] = targets.as_slice() else { return false };
            let mut analysis = Liveness { target: stmt as *const Stmt, found: None };
            analysis.block(&def.body, Set::new(), None);
            let Some((_, live_out)) = analysis.found else { return false };
            let mut declared = Set::new();
            declared_in_block(&def.body, &mut declared);
            !live_out.contains(name) && !declared.contains(name)
        }
        _ => false,
    }
}

/// The statement of `body` (nested blocks included, nested functions not) that is the
/// expression at `span`, or assigns it.
fn statement_of(body: &[Stmt], span: crate::syntax::ast::Span) -> Option<&Stmt> {
    body.iter().find_map(|s| match &s.kind {
        StmtKind::Expr(e) | StmtKind::Assign { value: e, .. } if e.span == span => Some(s),
        StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
            statement_of(body, span).or_else(|| statement_of(orelse, span))
        }
        StmtKind::With { body, .. } => statement_of(body, span),
        StmtKind::Try { body, handlers, orelse, finalbody } => statement_of(body, span)
            .or_else(|| handlers.iter().find_map(|h| statement_of(&h.body, span)))
            .or_else(|| statement_of(orelse, span))
            .or_else(|| statement_of(finalbody, span)),
        _ => None,
    })
}

/// Whether `stmt` is one of `body`'s own statements (not nested in another block).
pub fn is_top_level(body: &[Stmt], stmt: &Stmt) -> bool {
    body.iter().any(|s| std::ptr::eq(s, stmt))
}

/// The innermost function definition in `body` whose span holds `span`.
pub fn enclosing_def(body: &[Stmt], span: crate::syntax::ast::Span) -> Option<&std::rc::Rc<FunctionDef>> {
    let holds = |s: &Stmt| s.span.start <= span.start && span.end <= s.span.end;
    let s = body.iter().find(|s| holds(s))?;
    match &s.kind {
        StmtKind::FunctionDef(def) => enclosing_def(&def.body, span).or(Some(def)),
        StmtKind::ClassDef(class) => enclosing_def(&class.body, span),
        StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
            enclosing_def(body, span).or_else(|| enclosing_def(orelse, span))
        }
        StmtKind::With { body, .. } => enclosing_def(body, span),
        StmtKind::Try { body, handlers, orelse, finalbody } => enclosing_def(body, span)
            .or_else(|| handlers.iter().find_map(|h| enclosing_def(&h.body, span)))
            .or_else(|| enclosing_def(orelse, span))
            .or_else(|| enclosing_def(finalbody, span)),
        _ => None,
    }
}

/// Whether a block holds a `return` (not counting nested functions).
pub fn returns_in(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
            returns_in(body) || returns_in(orelse)
        }
        StmtKind::With { body, .. } => returns_in(body),
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            returns_in(body) || handlers.iter().any(|h| returns_in(&h.body)) || returns_in(orelse) || returns_in(finalbody)
        }
        _ => false,
    })
}

struct Loop {
    after: Set,
    head: Set,
}

struct Liveness {
    target: *const Stmt,
    found: Option<(Set, Set)>,
}

impl Liveness {
    /// The names live before `body`, given those live after it.
    fn block(&mut self, body: &[Stmt], mut live: Set, lp: Option<&Loop>) -> Set {
        for s in body.iter().rev() {
            live = self.stmt(s, live, lp);
        }
        live
    }

    fn stmt(&mut self, s: &Stmt, out: Set, lp: Option<&Loop>) -> Set {
        let is_target = std::ptr::eq(s, self.target);
        let live_out = if is_target { Some(out.clone()) } else { None };
        let live_in = match &s.kind {
            StmtKind::Expr(e) => with_reads(out, e),
            StmtKind::Assign { targets, value } => {
                let mut live = out;
                for t in targets {
                    kill_target(t, &mut live);
                }
                for t in targets {
                    target_reads(t, &mut live);
                }
                with_reads(live, value)
            }
            StmtKind::AnnAssign { target, value: Some(value), .. } => {
                let mut live = out;
                kill_target(target, &mut live);
                target_reads(target, &mut live);
                with_reads(live, value)
            }
            StmtKind::AnnAssign { .. } | StmtKind::Pass | StmtKind::Global(_) | StmtKind::Nonlocal(_) => out,
            StmtKind::AugAssign { target, value, .. } => {
                let mut live = with_reads(out, value);
                reads(target, &mut live);
                live
            }
            StmtKind::FunctionDef(def) => {
                let mut live = out;
                live.remove(&def.name);
                def_reads(def, &mut live);
                live
            }
            StmtKind::ClassDef(class) => {
                let mut live = out;
                live.remove(&class.name);
                class.bases.iter().chain(&class.decorators).for_each(|e| reads(e, &mut live));
                let mut inner = Set::new();
                for st in &class.body {
                    inner.extend(self.stmt_reads(st));
                }
                live.extend(inner);
                live
            }
            StmtKind::Return(value) => value.iter().fold(Set::new(), with_reads),
            StmtKind::Raise { exc, cause } => exc.iter().chain(cause).fold(Set::new(), with_reads),
            StmtKind::Break => lp.map_or(out, |l| l.after.clone()),
            StmtKind::Continue => lp.map_or(out, |l| l.head.clone()),
            StmtKind::If { test, body, orelse } => {
                let mut live = self.block(body, out.clone(), lp);
                live.extend(self.block(orelse, out.clone(), lp));
                with_reads(live, test)
            }
            StmtKind::While { test, body, orelse } => {
                let exit = self.block(orelse, out.clone(), lp);
                let mut head = with_reads(exit.clone(), test);
                loop {
                    let inner = Loop { after: out.clone(), head: head.clone() };
                    let body_in = self.block(body, head.clone(), Some(&inner));
                    let mut next = with_reads(exit.clone(), test);
                    next.extend(body_in);
                    if next == head {
                        break;
                    }
                    head = next;
                }
                head
            }
            StmtKind::For { target, iter, body, orelse } => {
                let exit = self.block(orelse, out.clone(), lp);
                let mut head = exit.clone();
                loop {
                    let inner = Loop { after: out.clone(), head: head.clone() };
                    let mut body_in = self.block(body, head.clone(), Some(&inner));
                    kill_target(target, &mut body_in);
                    target_reads(target, &mut body_in);
                    let mut next = exit.clone();
                    next.extend(body_in);
                    if next == head {
                        break;
                    }
                    head = next;
                }
                with_reads(head, iter)
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                let after = self.block(finalbody, out.clone(), lp);
                let mut live = self.block(orelse, after.clone(), lp);
                let mut handled = Set::new();
                for h in handlers {
                    let mut l = self.block(&h.body, after.clone(), lp);
                    if let Some(n) = &h.name {
                        l.remove(n);
                    }
                    if let Some(t) = &h.typ {
                        reads(t, &mut l);
                    }
                    handled.extend(l);
                }
                live.extend(handled.iter().cloned());
                let mut body_in = self.block(body, live, lp);
                body_in.extend(handled);
                // The handlers and `finally` may run after any statement of the body.
                body_in.extend(after);
                body_in
            }
            StmtKind::With { items, body } => {
                let mut live = self.block(body, out, lp);
                for item in items.iter().rev() {
                    if let Some(t) = &item.target {
                        kill_target(t, &mut live);
                        target_reads(t, &mut live);
                    }
                    reads(&item.context, &mut live);
                }
                live
            }
            StmtKind::Assert { test, msg } => {
                let live = with_reads(out, test);
                msg.iter().fold(live, with_reads)
            }
            StmtKind::Import(aliases) => {
                let mut live = out;
                for a in aliases {
                    let bound = a.asname.clone().unwrap_or_else(|| Name::from(a.name.split('.').next().unwrap_or(&a.name)));
                    live.remove(&bound);
                }
                live
            }
            StmtKind::ImportFrom { names, .. } => {
                let mut live = out;
                for a in names {
                    live.remove(a.asname.as_ref().unwrap_or(&a.name));
                }
                live
            }
            StmtKind::Delete(targets) => {
                let mut live = out;
                for t in targets {
                    kill_target(t, &mut live);
                    target_reads(t, &mut live);
                }
                live
            }
        };
        if let Some(live_out) = live_out {
            self.found = Some((live_in.clone(), live_out));
        }
        live_in
    }

    /// Every name a statement reads, at any depth (for a class body).
    fn stmt_reads(&mut self, s: &Stmt) -> Set {
        let target = std::mem::replace(&mut self.target, std::ptr::null());
        let found = self.found.take();
        let live = self.block(std::slice::from_ref(s), Set::new(), None);
        self.target = target;
        self.found = found;
        live
    }
}

fn with_reads(mut live: Set, e: &Expr) -> Set {
    reads(e, &mut live);
    live
}

/// The names an assignment target binds leave the live set.
fn kill_target(t: &Expr, live: &mut Set) {
    match &t.kind {
        ExprKind::Name(n) => {
            live.remove(n);
        }
        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|i| kill_target(i, live)),
        ExprKind::Starred(inner) => kill_target(inner, live),
        _ => {}
    }
}

/// What storing into a target reads: `a` and `i` in `a[i] = v`, `obj` in `obj.x = v`.
fn target_reads(t: &Expr, live: &mut Set) {
    match &t.kind {
        ExprKind::Name(_) => {}
        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|i| target_reads(i, live)),
        ExprKind::Starred(inner) => target_reads(inner, live),
        ExprKind::Attribute { value, .. } => reads(value, live),
        ExprKind::Subscript { value, index } => {
            reads(value, live);
            reads(index, live);
        }
        _ => reads(t, live),
    }
}

/// What a nested `def` reads where it is defined: its decorators and defaults, and every
/// name its body reads (a closure may read any of them when it is called).
fn def_reads(def: &FunctionDef, live: &mut Set) {
    def.decorators.iter().for_each(|e| reads(e, live));
    let params = &def.params;
    for p in params.posonly.iter().chain(&params.args).chain(&params.kwonly) {
        if let Some(d) = &p.default {
            reads(d, live);
        }
    }
    let mut inner = Liveness { target: std::ptr::null(), found: None };
    live.extend(inner.block(&def.body, Set::new(), None));
}

/// Every name an expression reads (a comprehension's and a lambda's own names excepted).
fn reads(e: &Expr, live: &mut Set) {
    match &e.kind {
        ExprKind::Name(n) => {
            live.insert(n.clone());
        }
        literal_expr!() => {}
        ExprKind::FString(parts) => fstring_reads(parts, live),
        ExprKind::Tuple(items) | ExprKind::List(items) | ExprKind::Set(items) => items.iter().for_each(|i| reads(i, live)),
        ExprKind::Dict(items) => {
            for (k, v) in items {
                if let Some(k) = k {
                    reads(k, live);
                }
                reads(v, live);
            }
        }
        ExprKind::Attribute { value, .. } => reads(value, live),
        ExprKind::Subscript { value, index } => {
            reads(value, live);
            reads(index, live);
        }
        ExprKind::Slice { lower, upper, step } => {
            for part in [lower, upper, step].into_iter().flatten() {
                reads(part, live);
            }
        }
        ExprKind::Call { func, args, keywords } => {
            reads(func, live);
            args.iter().for_each(|a| reads(a, live));
            keywords.iter().for_each(|k| reads(&k.value, live));
        }
        ExprKind::Starred(inner) | ExprKind::Await(inner) | ExprKind::YieldFrom(inner) => reads(inner, live),
        ExprKind::Yield(inner) => {
            if let Some(inner) = inner {
                reads(inner, live);
            }
        }
        ExprKind::BinOp { left, right, .. } => {
            reads(left, live);
            reads(right, live);
        }
        ExprKind::UnaryOp { operand, .. } => reads(operand, live),
        ExprKind::BoolOp { values, .. } => values.iter().for_each(|v| reads(v, live)),
        ExprKind::Compare { left, comparators, .. } => {
            reads(left, live);
            comparators.iter().for_each(|c| reads(c, live));
        }
        ExprKind::IfExp { test, body, orelse } => {
            reads(test, live);
            reads(body, live);
            reads(orelse, live);
        }
        ExprKind::Lambda(def) => {
            let mut inner = Set::new();
            def_reads(def, &mut inner);
            let params = &def.params;
            for p in params.posonly.iter().chain(&params.args).chain(&params.kwonly).chain(&params.vararg).chain(&params.kwarg) {
                inner.remove(&p.name);
            }
            live.extend(inner);
        }
        ExprKind::ListComp { elt, generators } | ExprKind::SetComp { elt, generators } | ExprKind::GeneratorExp { elt, generators } => {
            comprehension_reads(std::slice::from_ref(elt.as_ref()), generators, live)
        }
        ExprKind::DictComp { key, value, generators } => comprehension_reads(&[(**key).clone(), (**value).clone()], generators, live),
        ExprKind::NamedExpr { value, .. } => reads(value, live),
    }
}

fn fstring_reads(parts: &[FStringPart], live: &mut Set) {
    for p in parts {
        if let FStringPart::Formatted { value, format_spec, .. } = p {
            reads(value, live);
            fstring_reads(format_spec, live);
        }
    }
}

fn comprehension_reads(elts: &[Expr], generators: &[Comprehension], live: &mut Set) {
    let mut inner = Set::new();
    elts.iter().for_each(|e| reads(e, &mut inner));
    for g in generators.iter().rev() {
        g.ifs.iter().for_each(|e| reads(e, &mut inner));
        kill_target(&g.target, &mut inner);
        reads(&g.iter, &mut inner);
    }
    live.extend(inner);
}

/// The names a block binds (AutoGraph's `bound`), not counting nested scopes.
fn bound_in_block(body: &[Stmt], out: &mut BTreeSet<Name>) {
    for s in body {
        match &s.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| bound_in_target(t, out)),
            StmtKind::AnnAssign { target, value: Some(_), .. } | StmtKind::AugAssign { target, .. } => bound_in_target(target, out),
            StmtKind::FunctionDef(def) => {
                out.insert(def.name.clone());
            }
            StmtKind::ClassDef(class) => {
                out.insert(class.name.clone());
            }
            StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
                bound_in_block(body, out);
                bound_in_block(orelse, out);
            }
            StmtKind::For { target, body, orelse, .. } => {
                bound_in_target(target, out);
                bound_in_block(body, out);
                bound_in_block(orelse, out);
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                bound_in_block(body, out);
                for h in handlers {
                    if let Some(n) = &h.name {
                        out.insert(n.clone());
                    }
                    bound_in_block(&h.body, out);
                }
                bound_in_block(orelse, out);
                bound_in_block(finalbody, out);
            }
            StmtKind::With { items, body } => {
                items.iter().filter_map(|i| i.target.as_ref()).for_each(|t| bound_in_target(t, out));
                bound_in_block(body, out);
            }
            StmtKind::Import(aliases) => {
                for a in aliases {
                    out.insert(a.asname.clone().unwrap_or_else(|| Name::from(a.name.split('.').next().unwrap_or(&a.name))));
                }
            }
            StmtKind::ImportFrom { names, .. } => {
                for a in names {
                    out.insert(a.asname.clone().unwrap_or_else(|| a.name.clone()));
                }
            }
            _ => {}
        }
    }
}

fn bound_in_target(t: &Expr, out: &mut BTreeSet<Name>) {
    match &t.kind {
        ExprKind::Name(n) => {
            out.insert(n.clone());
        }
        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|i| bound_in_target(i, out)),
        ExprKind::Starred(inner) => bound_in_target(inner, out),
        _ => {}
    }
}

fn declared_in_block(body: &[Stmt], out: &mut Set) {
    for s in body {
        match &s.kind {
            StmtKind::Global(names) | StmtKind::Nonlocal(names) => out.extend(names.iter().cloned()),
            StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                declared_in_block(body, out);
                declared_in_block(orelse, out);
            }
            StmtKind::With { body, .. } => declared_in_block(body, out),
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                declared_in_block(body, out);
                handlers.iter().for_each(|h| declared_in_block(&h.body, out));
                declared_in_block(orelse, out);
                declared_in_block(finalbody, out);
            }
            _ => {}
        }
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn vars_of(src: &str, nth: usize) -> BlockVars {
        let module = crate::syntax::parse(src);
        let StmtKind::FunctionDef(def) = &module.body[0].kind else { panic!("no def") };
        let mut found = Vec::new();
        collect_control(&def.body, &mut found);
        block_vars(def, found[nth]).expect("the statement is in the function")
    }

    fn collect_control<'a>(body: &'a [Stmt], out: &mut Vec<&'a Stmt>) {
        for s in body {
            if let StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } = &s.kind {
                out.push(s);
                collect_control(body, out);
                collect_control(orelse, out);
            }
        }
    }

    fn names(v: &[Name]) -> Vec<&str> {
        v.iter().map(|n| n.as_ref()).collect()
    }

    fn a_name_set_in_a_branch_and_read_after_is_an_output() {
        let v = vars_of("def f(x):\n    if x > 0:\n        y = 1\n        z = 2\n    return y\n", 0);
        assert_eq!(names(&v.outputs()), ["y"]);
    }

    fn a_name_assigned_again_before_any_read_is_not_live() {
        let v = vars_of("def f(x):\n    if x > 0:\n        y = 1\n    y = 2\n    return y\n", 0);
        assert!(v.outputs().is_empty());
    }

    fn a_loop_carries_what_its_body_reads_before_writing() {
        let v = vars_of(
            "def f(x):\n    s = 0\n    i = 0\n    while i < x:\n        t = i * 2\n        s = s + t\n        i = i + 1\n    return s\n",
            0,
        );
        let symbols: Vec<(String, bool)> = v.symbols().into_iter().map(|(n, o)| (n.to_string(), o)).collect();
        assert_eq!(symbols, [("s".to_string(), true), ("i".to_string(), false)]);
    }

    fn a_read_at_the_top_of_an_enclosing_loop_is_live_after_an_inner_if() {
        let v = vars_of(
            "def f(x):\n    for k in range(3):\n        print(y)\n        if x > 0:\n            y = 1\n        else:\n            y = 2\n",
            1,
        );
        assert_eq!(names(&v.outputs()), ["y"]);
    }

    crate::unit_tests::list![
        a_name_set_in_a_branch_and_read_after_is_an_output,
        a_name_assigned_again_before_any_read_is_not_live,
        a_loop_carries_what_its_body_reads_before_writing,
        a_read_at_the_top_of_an_enclosing_loop_is_live_after_an_inner_if
    ];
}
