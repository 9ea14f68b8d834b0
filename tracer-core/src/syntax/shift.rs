//! Moves every span of a lowered statement by a byte offset: how the incremental parse reuses
//! a top-level statement whose text did not change but whose position did.

use std::rc::Rc;

use super::ast::*;

fn span(s: &mut Span, delta: i64) {
    s.start = (i64::from(s.start) + delta) as u32;
    s.end = (i64::from(s.end) + delta) as u32;
}

pub(crate) fn shift_stmt(stmt: &mut Stmt, d: i64) {
    span(&mut stmt.span, d);
    match &mut stmt.kind {
        StmtKind::Expr(e) => shift_expr(e, d),
        StmtKind::Assign { targets, value } => {
            exprs(targets, d);
            shift_expr(value, d);
        }
        StmtKind::AnnAssign { target, annotation, value } => {
            shift_expr(target, d);
            shift_expr(annotation, d);
            opt(value, d);
        }
        StmtKind::AugAssign { target, value, .. } => {
            shift_expr(target, d);
            shift_expr(value, d);
        }
        StmtKind::FunctionDef(def) => function(def, d),
        StmtKind::ClassDef(def) => {
            let def = Rc::make_mut(def);
            span(&mut def.span, d);
            span(&mut def.name_span, d);
            exprs(&mut def.bases, d);
            keywords(&mut def.keywords, d);
            stmts(&mut def.body, d);
            exprs(&mut def.decorators, d);
        }
        StmtKind::Return(value) => opt(value, d),
        StmtKind::If { test, body, orelse } | StmtKind::While { test, body, orelse } => {
            shift_expr(test, d);
            stmts(body, d);
            stmts(orelse, d);
        }
        StmtKind::For { target, iter, body, orelse } => {
            shift_expr(target, d);
            shift_expr(iter, d);
            stmts(body, d);
            stmts(orelse, d);
        }
        StmtKind::Break | StmtKind::Continue | StmtKind::Pass | StmtKind::Global(_) | StmtKind::Nonlocal(_) => {}
        StmtKind::Raise { exc, cause } => {
            opt(exc, d);
            opt(cause, d);
        }
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            stmts(body, d);
            for handler in handlers {
                opt(&mut handler.typ, d);
                stmts(&mut handler.body, d);
                span(&mut handler.span, d);
            }
            stmts(orelse, d);
            stmts(finalbody, d);
        }
        StmtKind::With { items, body } => {
            for item in items {
                shift_expr(&mut item.context, d);
                opt(&mut item.target, d);
            }
            stmts(body, d);
        }
        StmtKind::Assert { test, msg } => {
            shift_expr(test, d);
            opt(msg, d);
        }
        StmtKind::Import(names) | StmtKind::ImportFrom { names, .. } => {
            for alias in names {
                span(&mut alias.span, d);
            }
        }
        StmtKind::Delete(targets) => exprs(targets, d),
    }
}

fn stmts(body: &mut [Stmt], d: i64) {
    for stmt in body {
        shift_stmt(stmt, d);
    }
}

fn exprs(list: &mut [Expr], d: i64) {
    for e in list {
        shift_expr(e, d);
    }
}

fn opt(e: &mut Option<Expr>, d: i64) {
    if let Some(e) = e {
        shift_expr(e, d);
    }
}

fn boxed(e: &mut Option<Box<Expr>>, d: i64) {
    if let Some(e) = e {
        shift_expr(e, d);
    }
}

fn keywords(list: &mut [Keyword], d: i64) {
    for k in list {
        span(&mut k.span, d);
        shift_expr(&mut k.value, d);
    }
}

fn function(def: &mut Rc<FunctionDef>, d: i64) {
    let def = Rc::make_mut(def);
    span(&mut def.span, d);
    span(&mut def.name_span, d);
    let p = &mut def.params;
    for param in p.posonly.iter_mut().chain(&mut p.args).chain(&mut p.vararg).chain(&mut p.kwonly).chain(&mut p.kwarg) {
        span(&mut param.span, d);
        opt(&mut param.annotation, d);
        opt(&mut param.default, d);
    }
    stmts(&mut def.body, d);
    exprs(&mut def.decorators, d);
    opt(&mut def.returns, d);
}

fn generators(list: &mut [Comprehension], d: i64) {
    for g in list {
        shift_expr(&mut g.target, d);
        shift_expr(&mut g.iter, d);
        exprs(&mut g.ifs, d);
    }
}

fn fstring(parts: &mut [FStringPart], d: i64) {
    for part in parts {
        if let FStringPart::Formatted { value, format_spec, .. } = part {
            shift_expr(value, d);
            fstring(format_spec, d);
        }
    }
}

pub(crate) fn shift_expr(e: &mut Expr, d: i64) {
    span(&mut e.span, d);
    match &mut e.kind {
        ExprKind::Name(_) | literal_expr!() => {}
        ExprKind::FString(parts) => fstring(parts, d),
        ExprKind::Tuple(items) | ExprKind::List(items) | ExprKind::Set(items) => exprs(items, d),
        ExprKind::Dict(items) => {
            for (key, value) in items {
                opt(key, d);
                shift_expr(value, d);
            }
        }
        ExprKind::Attribute { value, attr_span, .. } => {
            shift_expr(value, d);
            span(attr_span, d);
        }
        ExprKind::Subscript { value, index } => {
            shift_expr(value, d);
            shift_expr(index, d);
        }
        ExprKind::Slice { lower, upper, step } => {
            boxed(lower, d);
            boxed(upper, d);
            boxed(step, d);
        }
        ExprKind::Call { func, args, keywords: kws } => {
            shift_expr(func, d);
            exprs(args, d);
            keywords(kws, d);
        }
        ExprKind::Starred(inner) | ExprKind::YieldFrom(inner) | ExprKind::Await(inner) | ExprKind::UnaryOp { operand: inner, .. } => {
            shift_expr(inner, d)
        }
        ExprKind::Yield(inner) => boxed(inner, d),
        ExprKind::BinOp { left, right, .. } | ExprKind::NamedExpr { target: left, value: right } => {
            shift_expr(left, d);
            shift_expr(right, d);
        }
        ExprKind::BoolOp { values, .. } => exprs(values, d),
        ExprKind::Compare { left, comparators, .. } => {
            shift_expr(left, d);
            exprs(comparators, d);
        }
        ExprKind::IfExp { test, body, orelse } => {
            shift_expr(test, d);
            shift_expr(body, d);
            shift_expr(orelse, d);
        }
        ExprKind::Lambda(def) => function(def, d),
        ExprKind::ListComp { elt, generators: gens }
        | ExprKind::SetComp { elt, generators: gens }
        | ExprKind::GeneratorExp { elt, generators: gens } => {
            shift_expr(elt, d);
            generators(gens, d);
        }
        ExprKind::DictComp { key, value, generators: gens } => {
            shift_expr(key, d);
            shift_expr(value, d);
            generators(gens, d);
        }
    }
}
