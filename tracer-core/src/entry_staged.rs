//! The last route to a transformed function (design.md §9): a function a staging transform is
//! applied to (`@jax.jit`, `@partial(jax.pmap, axis_name=...)`, `jax.jit(train_step, ...)`,
//! `nnx.jit`, `eqx.filter_jit`, `jax.jit(self.step)` in a method: the class's `step` bound to
//! an unknown `self`) that nothing the analysis ran has called is traced with every argument
//! unknown (`Route::Uncalled`). A step jitted inside a `train_and_evaluate` that only
//! another module's absl `main` calls, or a decorated function no test calls, is still checked
//! for what does not depend on its arguments: a Python `if` on a tracer, a tracer handed to
//! NumPy, a leaked tracer, trace-time effects.
//!
//! The transform is applied as the program would apply it: the site's own expression is
//! evaluated, with the module's globals and with every local of the functions around it
//! unknown (their nested `def`s are defined, so `jax.jit(step)` of a nested `step` is the real
//! closure). The call gets an unknown for each required parameter the transform leaves open.
//! Anything raised on the way that is not one of the shape-independent tracer errors is not a
//! finding: it may come from what is not known.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::diagnostics::Code;
use crate::interp::value::{ModuleObj, Scope, Value};
use crate::interp::{Ctx, FileId, Flow, Frame, Interp};
use crate::syntax::ast::{ClassDef, Expr, ExprKind, FunctionDef, Name, Stmt, StmtKind};

/// The transforms that stage their function out, by the last part of their dotted name.
const STAGING: &[&str] = &["jit", "pmap", "pjit", "filter_jit", "filter_pmap"];

/// Calls that hand on the function they are given: `jit(vmap(step))` stages `step`.
const WRAPPERS: &[&str] =
    &["partial", "vmap", "grad", "value_and_grad", "checkpoint", "remat", "filter_vmap", "filter_grad", "filter_value_and_grad"];

/// Where a staging transform is applied, and to which `def`.
struct Application<'a> {
    /// The functions around the site, outermost first (empty at module level).
    enclosing: Vec<&'a Rc<FunctionDef>>,
    how: How<'a>,
    /// The transformed `def`; for `jit(make_train(config))`, the factory `make_train`.
    target: &'a Rc<FunctionDef>,
    /// The target is a factory: the transformed function is the one it returns.
    factory: bool,
    /// Leading positional parameters and keyword parameters a `partial` binds.
    bound_positional: usize,
    bound_names: Vec<Name>,
    /// `jax.jit(self.step)` in a method of this module-level class: the target is its `step`,
    /// bound to a `self` that is not known.
    method_of: Option<&'a Rc<ClassDef>>,
}

enum How<'a> {
    /// `@transform` on the def; the class it is a method of, for a module-level class.
    Decorated(Option<&'a Rc<ClassDef>>),
    /// `transform(target, ...)`: this expression.
    Applied(&'a Expr),
}

/// Traces every staged function of the file that nothing traced.
pub fn trace_unreached(interp: &mut Interp, file: FileId, module: &Rc<ModuleObj>) {
    if !interp.abstract_unknowns {
        return;
    }
    let ast = interp.files[file as usize].module.clone();
    let mentions = Mentions::of(&interp.files[file as usize].text);
    let mut found = Vec::new();
    walk_block(&mentions, &ast.body, &ast.body, &mut Vec::new(), None, &mut found);
    if !found.is_empty() {
        define_what_the_module_did_not_reach(interp, file, module, &ast.body);
    }
    // Where the traces of this file's functions were defined, by function name: records are
    // only ever added, and the ones a `trace_one` adds are indexed before the next check.
    let mut traced_defs: HashMap<String, Vec<u32>> = HashMap::new();
    let mut indexed = 0;
    for app in found {
        // Called, or traced: an editor's analysis replays remembered traces without their
        // calls, and with the spans of the text they were made on, so a trace of a function
        // of this name in this file counts.
        if interp.called.contains(&(Rc::as_ptr(app.target) as usize)) {
            continue;
        }
        for r in &interp.jax.records[indexed..] {
            if let Some(site) = r.def_site.filter(|s| s.file == file) {
                traced_defs.entry(r.fn_name.clone()).or_default().push(site.span.start);
            }
        }
        indexed = interp.jax.records.len();
        // By its definition's place too: two classes of the file often both have a `step`.
        let name = app.target.name.as_ref();
        let def = app.target.span;
        if traced_defs.get(name).is_some_and(|starts| starts.iter().any(|&start| start >= def.start && start < def.end)) {
            continue;
        }
        trace_one(interp, file, module, &app);
    }
}

/// The module-level `def`s and classes a module stopped before (a notebook's cell that raises
/// on purpose, a training loop that ran out of the time budget) are defined now, as the
/// functions nested in a function that never ran are: a later cell's `@jax.jit` function, or
/// the function a later `eqx.filter_jit(loss)` names, is then still reached. A definition
/// whose decorators or defaults fail stays undefined.
fn define_what_the_module_did_not_reach(interp: &mut Interp, file: FileId, module: &Rc<ModuleObj>, body: &[Stmt]) {
    let ctx = Ctx { scope: None, globals: module.clone(), file };
    for stmt in body {
        let name = match &stmt.kind {
            StmtKind::FunctionDef(def) => &def.name,
            StmtKind::ClassDef(class) => &class.name,
            _ => continue,
        };
        if module.dict.borrow().contains_key(name.as_ref()) {
            continue;
        }
        interp.restart_clock();
        let _ = interp.exec_block(&ctx, std::slice::from_ref(stmt));
    }
}

fn trace_one(interp: &mut Interp, file: FileId, module: &Rc<ModuleObj>, app: &Application) {
    let span = match app.how {
        How::Applied(e) => e.span,
        How::Decorated(_) => app.target.name_span,
    };
    interp.restart_clock();
    interp.frames.push(Frame { file, name: Rc::from("<tracelens: not called>"), span, class: None, self_value: None });
    let route = std::mem::replace(&mut interp.jax.route, crate::jax::Route::Uncalled);
    let result = staged_value(interp, file, module, app).and_then(|staged| {
        let (mut args, kwargs) = match (app.factory, staged_def(&staged)) {
            (false, _) => unknown_arguments(app.target, app.bound_positional, &app.bound_names),
            (true, Some(def)) => unknown_arguments(&def, 0, &[]),
            (true, None) => return Ok(Value::None),
        };
        if !app.factory && app.bound_positional == 0 && app.bound_names.is_empty() {
            annotated_arrays_are_tracers(&staged, app.target, &mut args);
        }
        interp.call(&staged, args, kwargs)
    });
    interp.jax.route = route;
    interp.frames.pop();
    match result {
        Ok(_) => {}
        Err(Flow::Raise(exc)) if matches!(exc.code, Code::Concretization | Code::TracerToNumpy | Code::LeakedTracer) => {
            interp.report_uncaught(Flow::Raise(exc), &format!("the trace of {}", app.target.name));
        }
        Err(Flow::Raise(exc)) => {
            let why = format!("{} raised while traced with unknown arguments, not reported", exc.class.name);
            interp.stops.push((exc.site, format!("the trace of {}: {why}", app.target.name)));
        }
        Err(flow) => interp.report_uncaught(flow, &format!("the trace of {}", app.target.name)),
    }
}

/// The transformed function, as the program would have made it.
fn staged_value(interp: &mut Interp, file: FileId, module: &Rc<ModuleObj>, app: &Application) -> crate::interp::PyResult<Value> {
    let unknown = || Value::opaque("not called: a transformed function nothing the analysis ran called");
    if let (How::Decorated(class), true) = (&app.how, app.enclosing.is_empty()) {
        let found = match class {
            None => module.dict.borrow().get(app.target.name.as_ref()).cloned(),
            Some(c) => match module.dict.borrow().get(c.name.as_ref()) {
                Some(Value::Class(cls)) => cls.dict.borrow().get(app.target.name.as_ref()).cloned(),
                _ => None,
            },
        };
        return Ok(found.unwrap_or_else(unknown));
    }
    // Inside functions that never ran: their locals are unknown, their nested defs defined.
    let mut scope: Option<Rc<Scope>> = None;
    for def in &app.enclosing {
        let inner = Rc::new(Scope { parent: scope.clone(), ..Scope::default() });
        let mut names = Vec::new();
        params_of(def, &mut names);
        bound_names(&def.body, &mut names);
        for n in names {
            inner.vars.borrow_mut().insert(n, Rc::new(RefCell::new(Value::opaque("a local of a function that never ran"))));
        }
        let ctx = Ctx { scope: Some(inner.clone()), globals: module.clone(), file };
        for stmt in nested_defs(&def.body) {
            // A def whose decorators or defaults fail stays unknown.
            let _ = interp.exec_block(&ctx, std::slice::from_ref(stmt));
        }
        scope = Some(inner);
    }
    let ctx = Ctx { scope, globals: module.clone(), file };
    if let (Some(class), How::Applied(expr)) = (app.method_of, &app.how) {
        return staged_method(interp, &ctx, module, class, app.target, expr).map(|v| v.unwrap_or_else(unknown));
    }
    match app.how {
        How::Applied(expr) => interp.eval(&ctx, expr),
        How::Decorated(_) => interp.eval(&ctx, &Expr { kind: ExprKind::Name(app.target.name.clone()), span: app.target.name_span }),
    }
}

/// `jax.jit(self.step, ...)` applied to the class's `step` bound to an unknown `self`: every
/// attribute the body reads of `self` is then unknown (`None` when the site is not a plain
/// call, or the class's `step` is not a plain function).
fn staged_method(
    interp: &mut Interp,
    ctx: &Ctx,
    module: &Rc<ModuleObj>,
    class: &ClassDef,
    target: &FunctionDef,
    site: &Expr,
) -> crate::interp::PyResult<Option<Value>> {
    let ExprKind::Call { func, args, keywords } = &site.kind else { return Ok(None) };
    let method = match module.dict.borrow().get(class.name.as_ref()) {
        Some(Value::Class(cls)) => cls.dict.borrow().get(target.name.as_ref()).cloned(),
        _ => None,
    };
    let Some(method @ Value::Function(_)) = method else { return Ok(None) };
    if args.iter().chain(keywords.iter().map(|k| &k.value)).any(|a| matches!(a.kind, ExprKind::Starred(_))) {
        return Ok(None);
    }
    let transform = interp.eval(ctx, func)?;
    let unknown_self = Value::opaque("self of a method a transform was applied to in a method that never ran");
    let mut call_args = vec![Value::BoundMethod(Rc::new((unknown_self, method)))];
    for a in &args[1..] {
        call_args.push(interp.eval(ctx, a)?);
    }
    let mut kwargs = Vec::new();
    for k in keywords {
        let Some(name) = &k.arg else { return Ok(None) };
        kwargs.push((name.clone(), interp.eval(ctx, &k.value)?));
    }
    interp.call(&transform, call_args, kwargs).map(Some)
}

/// The `def` of the user function a `jax.jit` wraps (for a factory's product).
fn staged_def(staged: &Value) -> Option<Rc<FunctionDef>> {
    use crate::interp::builtins::Builtin;
    use crate::jax::api::JaxObject;
    match staged {
        Value::Builtin(b) => match &**b {
            Builtin::Object(JaxObject::Jitted(j)) => match &j.fun {
                Value::Function(f) => Some(f.def.clone()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// A parameter annotated as one array (`x: jax.Array`, `jnp.ndarray`, `Float[Array, "b n"]`)
/// that `jax.jit` or `jax.pmap` traces (it is not static) is certainly a tracer in the body,
/// whatever the caller passes: an array, a NumPy array or a Python number all become one. Its
/// aval stays unknown (no shape is claimed), but Python control flow on it is JAX's error.
/// equinox's `filter_jit` is left out: it makes every leaf that is not an array static.
fn annotated_arrays_are_tracers(staged: &Value, def: &FunctionDef, args: &mut [Value]) {
    use crate::interp::builtins::Builtin;
    use crate::jax::api::JaxObject;
    let Value::Builtin(b) = staged else { return };
    let Builtin::Object(JaxObject::Jitted(j)) = &**b else { return };
    if j.filter {
        return;
    }
    let params = def.params.posonly.iter().chain(&def.params.args);
    for (i, (param, arg)) in params.zip(args.iter_mut()).enumerate() {
        let is_static =
            j.static_argnums.iter().any(|&n| n == i as i64) || j.static_argnames.iter().any(|n| n.as_str() == param.name.as_ref());
        if !is_static && param.annotation.as_ref().is_some_and(is_array_annotation) {
            *arg = Value::opaque_tracer("an argument annotated as an array, traced though nothing called it");
        }
    }
}

/// `jax.Array`, `jnp.ndarray`, `chex.Array`, `Array`, and jaxtyping's `Float[Array, "..."]`.
pub(crate) fn is_array_annotation(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Name(n) => n.as_ref() == "Array",
        ExprKind::Attribute { value, attr, .. } => {
            matches!(&value.kind, ExprKind::Name(m) if matches!(m.as_ref(), "jax" | "jnp" | "chex"))
                && matches!(attr.as_ref(), "Array" | "ndarray")
        }
        ExprKind::Subscript { value, index } => {
            let dtype_name = match &value.kind {
                ExprKind::Name(n) => n.as_ref(),
                ExprKind::Attribute { attr, .. } => attr.as_ref(),
                _ => return false,
            };
            let jaxtyping = matches!(
                dtype_name,
                "Float"
                    | "Float32"
                    | "Float16"
                    | "BFloat16"
                    | "Int"
                    | "Int32"
                    | "Integer"
                    | "Bool"
                    | "Real"
                    | "Inexact"
                    | "UInt8"
                    | "Int8"
                    | "UInt32"
                    | "Shaped"
            );
            matches!(&index.kind, ExprKind::Tuple(items) if jaxtyping && items.first().is_some_and(is_array_annotation))
        }
        _ => false,
    }
}

/// An unknown for every required parameter the transform leaves open (`self` included).
fn unknown_arguments(def: &FunctionDef, bound_positional: usize, bound_names: &[Name]) -> (Vec<Value>, crate::interp::call::Kwargs) {
    let unknown = || Value::opaque("an argument of a function traced though nothing called it");
    let params = &def.params;
    let positional = params.posonly.iter().chain(&params.args).skip(bound_positional);
    let args = positional.take_while(|p| p.default.is_none() && !bound_names.contains(&p.name)).map(|_| unknown()).collect();
    let kwargs = params
        .kwonly
        .iter()
        .filter(|p| p.default.is_none() && !bound_names.contains(&p.name))
        .map(|p| (p.name.clone(), unknown()))
        .collect();
    (args, kwargs)
}

/// Where a module's source names `jit` or `pmap`: every name `is_staging_name` accepts
/// contains one, and names are compared as written (`syntax/lower.rs`: not NFKC-normalised).
/// The walk skips the statements that hold none, on every analysis of an editor's edits: the
/// statements of a 2,000-line module, all but the `@jax.jit` lines. The source is searched
/// once, not statement by statement.
struct Mentions {
    /// The (start, end) of each occurrence, in order (they cannot overlap).
    at: Vec<(u32, u32)>,
    len: u32,
}

impl Mentions {
    fn of(source: &str) -> Mentions {
        let [jit, pmap] = staging_finders();
        let bytes = source.as_bytes();
        let mut at: Vec<(u32, u32)> = jit.find_iter(bytes).map(|i| (i as u32, i as u32 + 3)).collect();
        at.extend(pmap.find_iter(bytes).map(|i| (i as u32, i as u32 + 4)));
        at.sort_unstable();
        Mentions { at, len: source.len() as u32 }
    }

    /// Whether a statement's source (with its decorators) may name a staging transform.
    fn may_stage(&self, stmt: &Stmt) -> bool {
        let decorators = match &stmt.kind {
            StmtKind::FunctionDef(def) => def.decorators.as_slice(),
            StmtKind::ClassDef(class) => class.decorators.as_slice(),
            _ => &[],
        };
        let start = decorators.iter().map(|d| d.span.start).fold(stmt.span.start, u32::min);
        let end = stmt.span.end;
        // A span that is not in the text (it never is) is walked, as before.
        if start > end || end > self.len {
            return true;
        }
        let first = self.at.partition_point(|&(at, _)| at < start);
        self.at.get(first).is_some_and(|&(_, to)| to <= end)
    }
}

/// The searchers for `jit` and `pmap`, built once: `memmem::find` builds its searcher on
/// every call, and every analysis searches its module (`Mentions::of`).
fn staging_finders() -> &'static [memchr::memmem::Finder<'static>; 2] {
    static FINDERS: std::sync::OnceLock<[memchr::memmem::Finder<'static>; 2]> = std::sync::OnceLock::new();
    FINDERS.get_or_init(|| [memchr::memmem::Finder::new(b"jit"), memchr::memmem::Finder::new(b"pmap")])
}

fn walk_block<'a>(
    mentions: &Mentions,
    module: &'a [Stmt],
    body: &'a [Stmt],
    enclosing: &mut Vec<&'a Rc<FunctionDef>>,
    class: Option<&'a Rc<ClassDef>>,
    out: &mut Vec<Application<'a>>,
) {
    for stmt in body {
        if !mentions.may_stage(stmt) {
            continue;
        }
        match &stmt.kind {
            StmtKind::FunctionDef(def) => {
                if def.decorators.iter().any(is_staging_decorator) {
                    let how = How::Decorated(if enclosing.is_empty() { class } else { None });
                    out.push(Application {
                        enclosing: enclosing.clone(),
                        how,
                        target: def,
                        factory: false,
                        bound_positional: 0,
                        bound_names: Vec::new(),
                        method_of: None,
                    });
                }
                enclosing.push(def);
                walk_block(mentions, module, &def.body, enclosing, None, out);
                enclosing.pop();
            }
            StmtKind::ClassDef(c) => {
                walk_block(mentions, module, &c.body, enclosing, if enclosing.is_empty() { Some(c) } else { None }, out)
            }
            StmtKind::If { test, body, orelse } | StmtKind::While { test, body, orelse } => {
                walk_expr(module, test, enclosing, out);
                walk_block(mentions, module, body, enclosing, class, out);
                walk_block(mentions, module, orelse, enclosing, class, out);
            }
            StmtKind::For { iter, body, orelse, .. } => {
                walk_expr(module, iter, enclosing, out);
                walk_block(mentions, module, body, enclosing, class, out);
                walk_block(mentions, module, orelse, enclosing, class, out);
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                walk_block(mentions, module, body, enclosing, class, out);
                for h in handlers {
                    walk_block(mentions, module, &h.body, enclosing, class, out);
                }
                walk_block(mentions, module, orelse, enclosing, class, out);
                walk_block(mentions, module, finalbody, enclosing, class, out);
            }
            StmtKind::With { items, body } => {
                for item in items {
                    walk_expr(module, &item.context, enclosing, out);
                }
                walk_block(mentions, module, body, enclosing, class, out);
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) | StmtKind::AugAssign { value: e, .. } => walk_expr(module, e, enclosing, out),
            StmtKind::Assign { value, .. } | StmtKind::AnnAssign { value: Some(value), .. } => walk_expr(module, value, enclosing, out),
            _ => {}
        }
    }
}

/// Finds `transform(target, ...)` and `partial(transform, ...)(target)` in `e`.
fn walk_expr<'a>(module: &'a [Stmt], e: &'a Expr, enclosing: &[&'a Rc<FunctionDef>], out: &mut Vec<Application<'a>>) {
    match &e.kind {
        ExprKind::Call { func, args, keywords } => {
            if is_staging_callee(func) {
                let first = args.first();
                if let Some((target, bound_positional, bound_names)) = first.and_then(|a| target_of(a, module, enclosing)) {
                    let how = How::Applied(e);
                    out.push(Application {
                        enclosing: enclosing.to_vec(),
                        how,
                        target,
                        factory: false,
                        bound_positional,
                        bound_names,
                        method_of: None,
                    });
                } else if let Some((class, target)) = first.and_then(|a| self_method_of(a, module, enclosing)) {
                    out.push(Application {
                        enclosing: enclosing.to_vec(),
                        how: How::Applied(e),
                        target,
                        factory: false,
                        bound_positional: 1,
                        bound_names: Vec::new(),
                        method_of: Some(class),
                    });
                } else if let Some(factory) = first.and_then(|a| factory_of(a, module, enclosing)) {
                    let how = How::Applied(e);
                    out.push(Application {
                        enclosing: enclosing.to_vec(),
                        how,
                        target: factory,
                        factory: true,
                        bound_positional: 0,
                        bound_names: Vec::new(),
                        method_of: None,
                    });
                }
            }
            walk_expr(module, func, enclosing, out);
            for a in args {
                walk_expr(module, a, enclosing, out);
            }
            for k in keywords {
                walk_expr(module, &k.value, enclosing, out);
            }
        }
        ExprKind::Tuple(items) | ExprKind::List(items) | ExprKind::Set(items) => {
            for item in items {
                walk_expr(module, item, enclosing, out);
            }
        }
        ExprKind::Dict(items) => {
            for (_, v) in items {
                walk_expr(module, v, enclosing, out);
            }
        }
        ExprKind::Starred(inner) | ExprKind::Attribute { value: inner, .. } | ExprKind::Subscript { value: inner, .. } => {
            walk_expr(module, inner, enclosing, out)
        }
        ExprKind::IfExp { body, orelse, .. } => {
            walk_expr(module, body, enclosing, out);
            walk_expr(module, orelse, enclosing, out);
        }
        _ => {}
    }
}

/// The dotted name an expression spells (`jax.jit`, `nnx.jit`), if it is one.
/// Whether `e` is a dotted name (`jax.jit`, `nnx.jit`, `jit`).
fn is_dotted(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Name(_) => true,
        ExprKind::Attribute { value, .. } => is_dotted(value),
        _ => false,
    }
}

/// The last part of a dotted name (`jit` of `jax.jit`). Every expression of the module is
/// asked, on every analysis: it allocates nothing.
fn last_part(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Name(n) => Some(n),
        ExprKind::Attribute { value, attr, .. } if is_dotted(value) => Some(attr),
        _ => None,
    }
}

fn is_staging_name(e: &Expr) -> bool {
    last_part(e).is_some_and(|n| STAGING.contains(&n))
}

/// `jax.jit` or `partial(jax.jit, ...)`: a callee that, called with a function, stages it.
fn is_staging_callee(func: &Expr) -> bool {
    match &func.kind {
        ExprKind::Call { func: inner, args, .. } if last_part(inner) == Some("partial") => args.first().is_some_and(is_staging_name),
        _ => is_staging_name(func),
    }
}

/// `@jax.jit`, `@partial(jax.jit, static_argnums=0)`, `@nnx.jit(donate_argnums=0)`.
fn is_staging_decorator(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Call { func, .. } => is_staging_callee(e) || is_staging_callee(func),
        _ => is_staging_name(e),
    }
}

/// The `def` an argument of a transform stands for, with what a `partial` binds of it.
fn target_of<'a>(e: &'a Expr, module: &'a [Stmt], enclosing: &[&'a Rc<FunctionDef>]) -> Option<(&'a Rc<FunctionDef>, usize, Vec<Name>)> {
    match &e.kind {
        ExprKind::Name(n) => find_def(n, module, enclosing).map(|d| (d, 0, Vec::new())),
        // `jax.pmap(lambda x: lax.psum(x, "i"), "i")`.
        ExprKind::Lambda(def) => Some((def, 0, Vec::new())),
        ExprKind::Call { func, args, keywords } if last_part(func).is_some_and(|p| WRAPPERS.contains(&p)) => {
            let (def, positional, mut names) = target_of(args.first()?, module, enclosing)?;
            if last_part(func) != Some("partial") {
                return Some((def, positional, names));
            }
            if args.iter().chain(keywords.iter().map(|k| &k.value)).any(|a| matches!(a.kind, ExprKind::Starred(_))) {
                return None;
            }
            names.extend(keywords.iter().filter_map(|k| k.arg.clone()));
            Some((def, positional + args.len() - 1, names))
        }
        _ => None,
    }
}

/// `self.step` in a method of a module-level class (`self.step = jax.jit(self.step)` in
/// `__init__`, as RL agents do): the class and its own `def step`. Only directly in the
/// method whose first parameter is `self`; a method the class inherits is not looked for.
fn self_method_of<'a>(
    e: &'a Expr,
    module: &'a [Stmt],
    enclosing: &[&'a Rc<FunctionDef>],
) -> Option<(&'a Rc<ClassDef>, &'a Rc<FunctionDef>)> {
    let ExprKind::Attribute { value, attr, .. } = &e.kind else { return None };
    let [method] = enclosing else { return None };
    let first = method.params.posonly.iter().chain(&method.params.args).next()?;
    if !matches!(&value.kind, ExprKind::Name(n) if n.as_ref() == "self") || first.name.as_ref() != "self" {
        return None;
    }
    let defines = |body: &'a [Stmt], name: &str| {
        body.iter().find_map(|s| match &s.kind {
            StmtKind::FunctionDef(d) if d.name.as_ref() == name => Some(d),
            _ => None,
        })
    };
    module.iter().find_map(|s| match &s.kind {
        StmtKind::ClassDef(c) if defines(&c.body, &method.name).is_some_and(|d| Rc::ptr_eq(d, method)) => {
            defines(&c.body, attr).filter(|d| d.decorators.is_empty()).map(|d| (c, d))
        }
        _ => None,
    })
}

/// `make_train(config)`: a call of a `def` that returns the function to transform.
fn factory_of<'a>(e: &'a Expr, module: &'a [Stmt], enclosing: &[&'a Rc<FunctionDef>]) -> Option<&'a Rc<FunctionDef>> {
    match &e.kind {
        ExprKind::Call { func, .. } => match &func.kind {
            ExprKind::Name(n) => find_def(n, module, enclosing),
            _ => None,
        },
        _ => None,
    }
}

/// The `def name` visible from a site: nested in the functions around it (innermost first),
/// then at module level.
fn find_def<'a>(name: &str, module: &'a [Stmt], enclosing: &[&'a Rc<FunctionDef>]) -> Option<&'a Rc<FunctionDef>> {
    let bodies = enclosing.iter().rev().map(|d| d.body.as_slice()).chain(std::iter::once(module));
    for body in bodies {
        if let Some(def) = nested_defs(body).find_map(|s| match &s.kind {
            StmtKind::FunctionDef(d) if d.name.as_ref() == name => Some(d),
            _ => None,
        }) {
            return Some(def);
        }
    }
    None
}

/// The `def` statements of a block, in its nested `if`/`for`/`with`/`try` blocks too (not in
/// the functions and classes it defines).
fn nested_defs(body: &[Stmt]) -> impl Iterator<Item = &Stmt> {
    let mut out = Vec::new();
    fn go<'a>(body: &'a [Stmt], out: &mut Vec<&'a Stmt>) {
        for s in body {
            match &s.kind {
                StmtKind::FunctionDef(_) => out.push(s),
                StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                    go(body, out);
                    go(orelse, out);
                }
                StmtKind::With { body, .. } => go(body, out),
                StmtKind::Try { body, handlers, orelse, finalbody } => {
                    go(body, out);
                    for h in handlers {
                        go(&h.body, out);
                    }
                    go(orelse, out);
                    go(finalbody, out);
                }
                _ => {}
            }
        }
    }
    go(body, &mut out);
    out.into_iter()
}

fn params_of(def: &FunctionDef, out: &mut Vec<Name>) {
    let p = &def.params;
    out.extend(p.posonly.iter().chain(&p.args).chain(&p.vararg).chain(&p.kwonly).chain(&p.kwarg).map(|p| p.name.clone()));
}

/// The names a block binds (assignments, loop and `with` targets, imports, defs, classes).
fn bound_names(body: &[Stmt], out: &mut Vec<Name>) {
    fn targets(e: &Expr, out: &mut Vec<Name>) {
        match &e.kind {
            ExprKind::Name(n) => out.push(n.clone()),
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|i| targets(i, out)),
            ExprKind::Starred(inner) => targets(inner, out),
            _ => {}
        }
    }
    for s in body {
        match &s.kind {
            StmtKind::Assign { targets: ts, .. } => ts.iter().for_each(|t| targets(t, out)),
            StmtKind::AnnAssign { target, .. } | StmtKind::AugAssign { target, .. } => targets(target, out),
            StmtKind::FunctionDef(d) => out.push(d.name.clone()),
            StmtKind::ClassDef(c) => out.push(c.name.clone()),
            StmtKind::For { target, body, orelse, .. } => {
                targets(target, out);
                bound_names(body, out);
                bound_names(orelse, out);
            }
            StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
                bound_names(body, out);
                bound_names(orelse, out);
            }
            StmtKind::With { items, body } => {
                items.iter().filter_map(|i| i.target.as_ref()).for_each(|t| targets(t, out));
                bound_names(body, out);
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                bound_names(body, out);
                for h in handlers {
                    out.extend(h.name.clone());
                    bound_names(&h.body, out);
                }
                bound_names(orelse, out);
                bound_names(finalbody, out);
            }
            StmtKind::Import(aliases) | StmtKind::ImportFrom { names: aliases, .. } => {
                for a in aliases {
                    let bound = a.asname.clone().unwrap_or_else(|| Rc::from(a.name.split('.').next().unwrap_or_default()));
                    out.push(bound);
                }
            }
            _ => {}
        }
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    /// `may_stage` skips statements whose text has neither `jit` nor `pmap`: every staging
    /// name must contain one of them, or its sites would never be walked.
    fn every_staging_name_is_found_by_the_text_filter() {
        for name in super::STAGING {
            assert!(name.contains("jit") || name.contains("pmap"), "{name}");
        }
    }

    crate::unit_tests::list![every_staging_name_is_found_by_the_text_filter];
}
