//! Statements and expressions: the tree-walking core of the interpreter.
//!
//! Size: `exec_stmt` and `eval` are one arm per statement and expression kind of the AST, the core
//! every other module of the interpreter calls into.

use std::cell::RefCell;
use std::rc::Rc;

use crate::interp::value::IndexMap;

use crate::diagnostics::Code;
use crate::syntax::ast::{self, Expr, ExprKind, Stmt, StmtKind};

use super::fork::Slot;
use super::seen::SiteKind;
use super::value::{Dict, Function, ModuleObj, PyIter, Scope, Value};
use super::{Ctx, FileId, Flow, Frame, Interp, PyResult};

impl<'l> Interp<'l> {
    /// Runs a file as a module named `name`; returns the module and the flow that ended it early.
    pub fn run_module(&mut self, file: FileId, name: &str) -> (Rc<ModuleObj>, Option<Flow>) {
        let module = Rc::new(ModuleObj { name: name.to_string(), file: Some(file), dict: RefCell::new(IndexMap::default()), native: None });
        module.dict.borrow_mut().insert(Rc::from("__name__"), Value::str(name));
        let path = self.path(file).to_string_lossy().to_string();
        module.dict.borrow_mut().insert(Rc::from("__file__"), Value::str(&path));
        self.modules.insert(name.to_string(), module.clone());
        let ast = self.files[file as usize].module.clone();
        // The module's docstring (`argparse.ArgumentParser(description=__doc__)`), else None.
        let doc = match ast.body.first().map(|s| &s.kind) {
            Some(StmtKind::Expr(Expr { kind: ExprKind::Str(s), .. })) => Value::Str(s.clone()),
            _ => Value::None,
        };
        module.dict.borrow_mut().insert(Rc::from("__doc__"), doc);
        let ctx = Ctx { scope: None, globals: module.clone(), file };
        self.frames.push(Frame { file, name: Rc::from("<module>"), span: Default::default(), class: None, self_value: None });
        let result = self.exec_block(&ctx, &ast.body);
        self.frames.pop();
        (module, result.err())
    }

    pub fn exec_block(&mut self, ctx: &Ctx, body: &[Stmt]) -> PyResult<()> {
        for stmt in body {
            match self.exec_stmt(ctx, stmt) {
                Ok(()) => {}
                Err(flow) if self.is_unknown_stop(&flow) => self.skip_statement(ctx, stmt, flow)?,
                Err(flow) => return Err(flow),
            }
        }
        Ok(())
    }

    fn exec_stmt(&mut self, ctx: &Ctx, stmt: &Stmt) -> PyResult<()> {
        self.tick()?;
        self.set_span(stmt.span);
        match &stmt.kind {
            StmtKind::Expr(e) => {
                self.eval(ctx, e)?;
            }
            StmtKind::Assign { targets, value } => {
                let v = self.eval(ctx, value)?;
                for t in targets {
                    self.assign(ctx, t, v.clone())?;
                }
            }
            StmtKind::AnnAssign { target, annotation, value } => {
                if let Some(value) = value {
                    let v = self.eval(ctx, value)?;
                    self.assign(ctx, target, v)?;
                } else if ctx.scope.is_none() {
                    let ann = self.eval(ctx, annotation).unwrap_or(Value::None);
                    self.record_annotation(ctx, target, ann);
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                let current = self.eval(ctx, target)?;
                let rhs = self.eval(ctx, value)?;
                self.set_span(stmt.span);
                let result = self.inplace_op(*op, current, rhs)?;
                self.assign(ctx, target, result)?;
            }
            StmtKind::FunctionDef(def) => {
                let f = self.make_function(ctx, def.clone(), false)?;
                let decorated = self.apply_decorators(ctx, &def.decorators, f)?;
                self.store_shared_name(ctx, &def.name, decorated, Some(def.name_span))?;
            }
            StmtKind::ClassDef(def) => {
                let class = self.make_class(ctx, def)?;
                self.store_shared_name(ctx, &def.name, class, Some(def.name_span))?;
            }
            StmtKind::Return(value) => {
                let v = match value {
                    Some(e) => self.eval(ctx, e)?,
                    None => Value::None,
                };
                return Err(Flow::Return(v));
            }
            StmtKind::If { test, body, orelse } => {
                let reads_before = self.entry_state.flag_reads;
                match self.test(ctx, test, "if") {
                    Ok(taken) => {
                        let branch = if taken { body } else { orelse };
                        let outer = |name: &str| {
                            ctx.scope
                                .as_ref()
                                .is_some_and(|s| s.globals.borrow().iter().chain(s.nonlocals.borrow().iter()).any(|g| g.as_ref() == name))
                        };
                        // Only a trace's mutations can be TL202: no syntax walk on other `if`s.
                        let once = taken
                            && crate::interp::model::state::staging_depth(self) > 0
                            && super::once_guard::flips_its_guard(test, body, outer);
                        self.once_guarded += u32::from(once);
                        let ran = self.exec_branch(ctx, branch, reads_before);
                        self.once_guarded -= u32::from(once);
                        ran?
                    }
                    Err(flow)
                        if self.autograph_handles(&flow, |i, pred| crate::interp::model::tf::autograph::if_stmt(i, ctx, stmt, pred))? => {}
                    Err(flow) if self.is_unknown_stop(&flow) => {
                        self.note_went_past(&flow, "both branches of the `if` analysed");
                        self.fork(|i| i.exec_block(ctx, body), |i| i.exec_block(ctx, orelse))?;
                    }
                    Err(flow) => return Err(flow),
                }
            }
            StmtKind::While { test, body, orelse } => {
                let mut watch = self.watch_loop();
                loop {
                    self.tick()?;
                    match self.test(ctx, test, "while") {
                        Ok(true) => {}
                        Ok(false) => {
                            self.exec_block(ctx, orelse)?;
                            break;
                        }
                        Err(flow)
                            if self.autograph_handles(&flow, |i, pred| {
                                crate::interp::model::tf::autograph::while_stmt(i, ctx, stmt, pred)
                            })? =>
                        {
                            break
                        }
                        Err(flow) if self.is_unknown_stop(&flow) => {
                            self.note_went_past(&flow, "the `while` body analysed once more");
                            self.loop_over_unknown(ctx, None, body)?;
                            break;
                        }
                        Err(flow) => return Err(flow),
                    }
                    let (exits, went_past) = (self.dropped_exits, self.went_past);
                    let (mark, ran, written) = self.watched_pass(ctx, body, watch.as_mut());
                    // A `while` whose pass went past an unknown may end on it: `while True:`
                    // over a data iterator would otherwise run to the budget.
                    let cut_short = self.dropped_exits != exits || (self.abstract_unknowns && self.went_past != went_past);
                    let goes_on = matches!(ran, Ok(()) | Err(Flow::Continue));
                    let repeats = goes_on && !cut_short && self.pass_repeats(watch.as_mut(), &written);
                    self.end_loop_pass(mark, (cut_short || repeats) && goes_on);
                    match ran {
                        Ok(()) | Err(Flow::Continue) => {}
                        Err(Flow::Break) => break,
                        Err(other) => return Err(other),
                    }
                    if repeats {
                        // The passes only call what is traced: one more stands for the rest
                        // (`loop_summary.rs`).
                        self.summarise_loop(ctx, None, body, written)?;
                        break;
                    }
                    if cut_short {
                        // `while True:` with no `break` is left only by the `return` or `raise`
                        // an unknown chose: what follows it never runs, and the function's
                        // result is that `return`'s, which this path does not hold.
                        if self.dropped_exits != exits && ctx.scope.is_some() && never_falls_out(test, body) {
                            return Err(Flow::Return(Value::opaque("the result of a `while True:` loop an unknown leaves")));
                        }
                        // An unknown chose between going on and leaving the loop: this pass
                        // stands for the passes after it.
                        break;
                    }
                }
            }
            StmtKind::For { target, iter, body, orelse } => {
                let it = match self.eval(ctx, iter).and_then(|v| {
                    self.set_span(iter.span);
                    self.get_iter(&v)
                }) {
                    Ok(it) => it,
                    Err(flow)
                        if self.autograph_handles(&flow, |i, t| crate::interp::model::tf::autograph::for_stmt(i, ctx, stmt, t))? =>
                    {
                        return Ok(())
                    }
                    Err(flow) if self.is_unknown_stop(&flow) => {
                        self.note_went_past(&flow, "the `for` body analysed once with an unknown element");
                        return self.loop_over_unknown(ctx, Some(target), body);
                    }
                    Err(flow) => return Err(flow),
                };
                let site = self.site();
                if let Some(site) = site {
                    crate::interp::model::numerics::loop_enter(self, site);
                }
                let run = self.exec_for_items(ctx, target, iter.span, &it, body);
                if site.is_some() {
                    crate::interp::model::numerics::loop_exit(self);
                }
                let broke = run?;
                if !broke {
                    self.exec_block(ctx, orelse)?;
                }
            }
            StmtKind::Break => return Err(Flow::Break),
            StmtKind::Continue => return Err(Flow::Continue),
            StmtKind::Pass => {}
            StmtKind::Raise { exc, cause: _ } => return Err(self.exec_raise(ctx, exc.as_ref(), stmt)?),
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                let result = self.exec_try(ctx, body, handlers, orelse);
                match self.exec_block(ctx, finalbody) {
                    Ok(()) => result?,
                    Err(flow) => return Err(flow),
                }
            }
            StmtKind::With { items, body } => {
                let mut exits = Vec::new();
                for item in items {
                    let manager = self.eval(ctx, &item.context)?;
                    let entered = self.enter_context(&manager)?;
                    if let Some(target) = &item.target {
                        self.assign(ctx, target, entered)?;
                    }
                    exits.push(manager);
                }
                let mut result = self.exec_block(ctx, body);
                // `with self.assertRaises(E):`, `with pytest.raises(E):` expect the exception.
                if matches!(result, Err(Flow::Raise(_)))
                    && exits.iter().any(|m| crate::interp::model::entry_hooks::expects_exception(self, m))
                {
                    result = Ok(());
                }
                for manager in exits.into_iter().rev() {
                    let raised = match &result {
                        Err(Flow::Raise(exc)) => Some(exc.clone()),
                        _ => None,
                    };
                    match self.exit_context(&manager, raised.as_deref())? {
                        Some(true) => result = Ok(()),
                        Some(false) => {}
                        None => {
                            let class = raised.map(|e| e.class.name.clone()).unwrap_or_default();
                            result = Err(self.stop_unknown(format!(
                                "{class} raised inside `with` over a context manager tracelens does not know, whose __exit__ may handle it"
                            )));
                        }
                    }
                }
                result?;
            }
            StmtKind::Assert { test, msg } => {
                let reads_before = self.entry_state.flag_reads;
                let t = self.eval(ctx, test)?;
                self.set_span(test.span);
                if !self.truthy_at(&t, "assert", test)? {
                    let message = match msg {
                        Some(m) => {
                            let v = self.eval(ctx, m)?;
                            self.to_str(&v)?
                        }
                        None => String::new(),
                    };
                    self.set_span(stmt.span);
                    let mut flow = self.raise("AssertionError", Code::PythonException, message);
                    if let Flow::Raise(exc) = &mut flow {
                        exc.conditional |= crate::interp::model::entry_hooks::decided_by_command_line(self, Some(reads_before));
                    }
                    return Err(flow);
                }
            }
            StmtKind::Import(aliases) => {
                for alias in aliases {
                    self.set_span(alias.span);
                    let top = self.import_module(ctx, &alias.name, 0)?;
                    match &alias.asname {
                        Some(asname) => {
                            let m = self.import_module(ctx, &alias.name, 0)?;
                            let leaf = self.resolve_submodule(&m, &alias.name);
                            self.store_name(ctx, asname, leaf, None)?;
                        }
                        None => {
                            let first = alias.name.split('.').next().unwrap_or(&alias.name).to_string();
                            let v = if alias.name.contains('.') { self.import_module(ctx, &first, 0)? } else { top };
                            self.store_name(ctx, &first, v, None)?;
                        }
                    }
                }
            }
            StmtKind::ImportFrom { module, names, level } => {
                let modname = module.as_deref().unwrap_or("");
                let m = self.import_module(ctx, modname, *level)?;
                if names.is_empty() {
                    self.import_star(ctx, &m)?;
                }
                for alias in names {
                    self.set_span(alias.span);
                    let v = self.import_from(ctx, &m, modname, *level, &alias.name)?;
                    let bind = alias.asname.clone().unwrap_or_else(|| alias.name.clone());
                    self.store_name(ctx, &bind, v, None)?;
                }
            }
            StmtKind::Global(names) => {
                if let Some(scope) = &ctx.scope {
                    scope.globals.borrow_mut().extend(names.iter().cloned());
                }
            }
            StmtKind::Nonlocal(names) => {
                if let Some(scope) = &ctx.scope {
                    scope.nonlocals.borrow_mut().extend(names.iter().cloned());
                }
            }
            StmtKind::Delete(targets) => {
                for t in targets {
                    self.delete(ctx, t)?;
                }
            }
        }
        Ok(())
    }

    /// The branch an `if` chose; one chosen by a test that read a command-line value is run
    /// as flag-guarded (`entry_hooks::decided_by_command_line`).
    fn exec_branch(&mut self, ctx: &Ctx, branch: &[Stmt], reads_before: u64) -> PyResult<()> {
        if self.entry_state.flag_reads == reads_before || !self.abstract_unknowns {
            return self.exec_block(ctx, branch);
        }
        self.entry_state.flag_guards.push(self.frames.len());
        let ran = self.exec_block(ctx, branch);
        self.entry_state.flag_guards.pop();
        ran
    }

    fn exec_raise(&mut self, ctx: &Ctx, exc: Option<&Expr>, stmt: &Stmt) -> PyResult<Flow> {
        let Some(exc) = exc else {
            return Ok(self.raise("RuntimeError", Code::PythonException, "No active exception to reraise"));
        };
        let v = self.eval(ctx, exc)?;
        self.set_span(stmt.span);
        let instance = match &v {
            Value::Class(_) => self.call(&v, Vec::new(), Vec::new())?,
            _ => v,
        };
        match &instance {
            Value::Instance(inst) if inst.class.derives_builtin(super::value::BuiltinClass::Exception) => {
                // `raise ValueError(x.shape)` prints its argument's text, as Python's traceback
                // does; a class's own `__str__` is not run here, and an unknown text is said so.
                let text = if inst.class.lookup("__str__").is_none() { self.to_str(&instance).ok() } else { None };
                let message = text.unwrap_or_else(|| super::builtins::exception_message(inst));
                let mut code = super::exception_code::code_for_exception_class(&inst.class).unwrap_or(Code::PythonException);
                // A shim's own check (flax's ScopeParamShapeError) on a path an unknown chose
                // compared an unknown value: it is not known to fail, so it is not a finding.
                if self.in_library() && self.in_conditional_path() {
                    code = Code::PythonException;
                }
                Ok(Flow::Raise(Box::new(super::PyException {
                    value: instance.clone(),
                    class: inst.class.clone(),
                    message,
                    code,
                    site: self.site(),
                    related: Vec::new(),
                    traceback: self.traceback(),
                    conditional: self.in_conditional_path() || crate::interp::model::entry_hooks::decided_by_command_line(self, None),
                })))
            }
            Value::Opaque(_) => Ok(self.stop_unknown("raise of an unknown exception")),
            _ => Ok(self.type_error("exceptions must derive from BaseException")),
        }
    }

    /// The iterations of a `for` loop; whether it ended with `break`.
    fn exec_for_items(&mut self, ctx: &Ctx, target: &Expr, iter_span: ast::Span, it: &Value, body: &[Stmt]) -> PyResult<bool> {
        let mut watch = self.watch_loop();
        loop {
            self.tick()?;
            self.set_span(iter_span);
            let item = match self.next_item(it) {
                Ok(Some(item)) => item,
                Ok(None) => return Ok(false),
                Err(flow) if self.is_unknown_stop(&flow) => {
                    // The rest of the items are unknown: one more pass stands for them all.
                    self.note_went_past(&flow, "the `for` body analysed once more with an unknown element");
                    self.loop_over_unknown(ctx, Some(target), body)?;
                    return Ok(true);
                }
                Err(flow) => return Err(flow),
            };
            crate::interp::model::numerics::loop_next(self);
            self.assign(ctx, target, item)?;
            let exits = self.dropped_exits;
            let (mark, ran, written) = self.watched_pass(ctx, body, watch.as_mut());
            let cut_short = self.dropped_exits != exits;
            let goes_on = matches!(ran, Ok(()) | Err(Flow::Continue));
            let repeats = goes_on && !cut_short && self.pass_repeats(watch.as_mut(), &written);
            self.end_loop_pass(mark, (cut_short || repeats) && goes_on);
            match ran {
                Ok(()) | Err(Flow::Continue) => {}
                Err(Flow::Break) => return Ok(true),
                Err(other) => return Err(other),
            }
            if cut_short {
                // An unknown chose between going on and leaving the loop: this pass stands
                // for the passes after it.
                return Ok(true);
            }
            if repeats {
                // The passes only call what is traced: one with the element unknown stands
                // for the rest (`loop_summary.rs`).
                self.summarise_loop(ctx, Some(target), body, written)?;
                return Ok(true);
            }
        }
    }

    /// Whether AutoGraph staged the statement whose test (or iterable) stopped with `flow`
    /// (a symbolic tensor in converted code): `stage` runs it as TensorFlow would.
    fn autograph_handles(
        &mut self,
        flow: &Flow,
        stage: impl FnOnce(&mut Self, crate::interp::model::tf::autograph::Staged) -> PyResult<bool>,
    ) -> PyResult<bool> {
        match crate::interp::model::tf::autograph::take(self, flow) {
            Some(pred) => stage(self, pred),
            None => Ok(false),
        }
    }

    /// The test of an `if` or `while`, as a Python bool.
    fn test(&mut self, ctx: &Ctx, test: &Expr, what: &str) -> PyResult<bool> {
        let t = self.eval(ctx, test)?;
        self.set_span(test.span);
        self.truthy_at(&t, what, test)
    }

    fn exec_try(&mut self, ctx: &Ctx, body: &[Stmt], handlers: &[ast::ExceptHandler], orelse: &[Stmt]) -> PyResult<()> {
        match self.exec_block(ctx, body) {
            Ok(()) => self.exec_block(ctx, orelse),
            Err(Flow::Raise(exc)) => {
                for handler in handlers {
                    let matches = match &handler.typ {
                        None => true,
                        Some(t) => {
                            let typ = self.eval(ctx, t)?;
                            match self.exception_matches(&exc, &typ) {
                                Some(m) => m,
                                None => return Err(self.stop_unknown("except clause with an unknown exception type")),
                            }
                        }
                    };
                    if matches {
                        if let Some(name) = &handler.name {
                            self.store_name(ctx, name, exc.value.clone(), None)?;
                        }
                        return self.exec_block(ctx, &handler.body);
                    }
                }
                Err(Flow::Raise(exc))
            }
            Err(other) => Err(other),
        }
    }

    fn exception_matches(&self, exc: &super::PyException, typ: &Value) -> Option<bool> {
        match typ {
            Value::Class(c) => Some(exc.class.is_subclass_of(c)),
            Value::Tuple(items) => {
                let mut any = false;
                for t in items.iter() {
                    any |= self.exception_matches(exc, t)?;
                }
                Some(any)
            }
            _ => None,
        }
    }

    /// Evaluates a function body in a fresh frame. Used by `call`.
    pub(super) fn run_body(&mut self, f: &Function, scope: Rc<Scope>) -> PyResult<Value> {
        if self.frames.len() >= self.budgets.max_recursion {
            return Err(self.raise("RecursionError", Code::PythonException, "maximum recursion depth exceeded"));
        }
        // A recursive walk over an unknown (`def walk(x): ... for c in x: walk(c)`) would
        // follow every branch of every test on it at each level until the recursion limit,
        // doubling the work per level: the inner call on unknowns returns an unknown.
        let on_unknowns = self.abstract_unknowns && self.in_conditional_path() && only_unknowns(&scope);
        let key = (f.file, f.def.span);
        if on_unknowns && self.unknown_recursion.contains(&key) {
            self.went_past += 1;
            return Ok(Value::opaque("the result of a recursive call on unknown values"));
        }
        if on_unknowns {
            self.unknown_recursion.push(key);
        }
        let result = self.run_body_in_frame(f, scope);
        if on_unknowns {
            self.unknown_recursion.pop();
        }
        result
    }

    fn run_body_in_frame(&mut self, f: &Function, scope: Rc<Scope>) -> PyResult<Value> {
        let ctx = Ctx { scope: Some(scope), globals: f.globals.clone(), file: f.file };
        let class = match f.attrs.borrow().get("__tracelens_class__") {
            Some(Value::Class(c)) => Some(c.clone()),
            _ => None,
        };
        let self_value = match (&class, f.def.params.posonly.iter().chain(&f.def.params.args).next()) {
            (Some(_), Some(p)) => ctx.scope.as_ref().and_then(|s| s.vars.borrow().get(&p.name).map(|c| c.borrow().clone())),
            _ => None,
        };
        self.frames.push(Frame { file: f.file, name: Rc::from(f.def.name.as_ref()), span: f.def.span, class, self_value });
        let saved = crate::interp::model::state::enter_user_function(self);
        let result = if f.is_lambda {
            match f.def.body.first().map(|s| &s.kind) {
                Some(StmtKind::Return(Some(e))) => self.eval(&ctx, e),
                _ => Ok(Value::None),
            }
        } else {
            let mut ran = self.exec_block(&ctx, &f.def.body);
            if crate::interp::model::state::autograph_returns_pending(self) {
                ran = crate::interp::model::tf::autograph::function_ends(self, ran);
            }
            match ran {
                Ok(()) => Ok(Value::None),
                Err(Flow::Return(v)) => Ok(v),
                Err(other) => Err(other),
            }
        };
        // The returns an unknown chose on the way join what the function ends with.
        let result = self.end_with_early_returns(self.frames.len(), result);
        // A call whose analysis needed an unknown returns an unknown; its caller goes on.
        let result = match result {
            Err(flow) if self.is_unknown_stop(&flow) => {
                self.note_went_past(&flow, "the call returns an unknown");
                Ok(Value::opaque("the result of a call the interpreter could not follow"))
            }
            other => other,
        };
        self.frames.pop();
        if self.conditional_from.is_some_and(|depth| depth > self.frames.len()) {
            self.conditional_from = None;
        }
        crate::interp::model::state::leave_user_function(self, saved);
        result
    }

    pub fn eval(&mut self, ctx: &Ctx, expr: &Expr) -> PyResult<Value> {
        match &expr.kind {
            ExprKind::Name(name) => self.load_name(ctx, name, expr),
            ExprKind::Int(i) => Ok(Value::Int(*i)),
            ExprKind::BigInt(_) => Ok(Value::opaque("an integer too large to model")),
            ExprKind::Float(f) => Ok(Value::Float(*f)),
            ExprKind::Imag(f) => Ok(Value::Complex(0.0, *f)),
            ExprKind::Str(s) => Ok(Value::Str(s.clone())),
            ExprKind::Bytes(_) => Ok(Value::opaque("bytes")),
            ExprKind::FString(parts) => match self.eval_fstring(ctx, parts) {
                Ok(s) => Ok(Value::str(&s)),
                // Text built from an unknown value is unknown text, not a reason to stop.
                Err(super::Flow::Stop(super::StopReason::Unknown(_), _)) => Ok(Value::opaque("an f-string of an unknown value")),
                Err(e) => Err(e),
            },
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::NoneLit => Ok(Value::None),
            ExprKind::Ellipsis => Ok(Value::Ellipsis),
            ExprKind::Tuple(items) => Ok(Value::tuple(self.eval_items(ctx, items)?)),
            ExprKind::List(items) => {
                let items = self.eval_items(ctx, items)?;
                Ok(self.new_list(items))
            }
            ExprKind::Set(items) => {
                let items = self.eval_items(ctx, items)?;
                self.make_set(items)
            }
            ExprKind::Dict(pairs) => {
                let mut d = Dict::default();
                for (k, v) in pairs {
                    match k {
                        Some(k) => {
                            let kv = self.eval(ctx, k)?;
                            let vv = self.eval(ctx, v)?;
                            let h = self.hash_key(&kv)?;
                            d.insert(h, kv, vv);
                        }
                        None => {
                            let m = self.eval(ctx, v)?;
                            for (k, v) in self.mapping_items(&m)? {
                                let h = self.hash_key(&k)?;
                                d.insert(h, k, v);
                            }
                        }
                    }
                }
                Ok(self.new_dict(d))
            }
            ExprKind::Attribute { value, attr, .. } => {
                let obj = self.eval(ctx, value)?;
                self.set_span(expr.span);
                let v = self.getattr(&obj, attr)?;
                self.note_expression(ctx.file, expr.span, &v, SiteKind::Attribute);
                Ok(v)
            }
            ExprKind::Subscript { value, index } => {
                let obj = self.eval(ctx, value)?;
                let constant_key = matches!(index.kind, ExprKind::Int(_) | ExprKind::Str(_)) && !matches!(obj, Value::Array(_));
                let idx = self.eval(ctx, index)?;
                self.set_span(expr.span);
                let v = self.getitem(&obj, idx)?;
                if constant_key {
                    self.note_expression(ctx.file, expr.span, &v, SiteKind::Item);
                }
                Ok(v)
            }
            ExprKind::Slice { lower, upper, step } => {
                let mut part = |e: &Option<Box<Expr>>| -> PyResult<Value> {
                    match e {
                        Some(e) => self.eval(ctx, e),
                        None => Ok(Value::None),
                    }
                };
                let (l, u, s) = (part(lower)?, part(upper)?, part(step)?);
                Ok(Value::Slice(Rc::new([l, u, s])))
            }
            ExprKind::Call { func, args, keywords } => self.eval_call(ctx, expr, func, args, keywords),
            ExprKind::Starred(_) => Err(self.raise("SyntaxError", Code::PythonException, "can't use starred expression here")),
            ExprKind::BinOp { left, op, right } => {
                let l = self.eval(ctx, left)?;
                let r = self.eval(ctx, right)?;
                self.set_span(expr.span);
                self.binary_op(*op, l, r)
            }
            ExprKind::UnaryOp { op, operand } => {
                // `-9223372036854775808` is int64's minimum, which the literal alone exceeds.
                if let (ast::UnaryOp::Neg, ExprKind::BigInt(digits)) = (op, &operand.kind) {
                    if &**digits == "9223372036854775808" {
                        return Ok(Value::Int(i64::MIN));
                    }
                }
                let v = self.eval(ctx, operand)?;
                self.set_span(expr.span);
                self.unary_op(*op, v, operand)
            }
            ExprKind::BoolOp { op, values } => self.bool_op(ctx, *op, values),
            ExprKind::Compare { left, ops, comparators } => {
                let mut l = self.eval(ctx, left)?;
                let mut result = Value::Bool(true);
                for (i, (op, right)) in ops.iter().zip(comparators).enumerate() {
                    let r = self.eval(ctx, right)?;
                    self.set_span(expr.span);
                    result = self.compare(*op, &l, &r)?;
                    if i + 1 < ops.len() {
                        if !self.truthy_at(&result, "chained comparison", expr)? {
                            return Ok(result);
                        }
                        l = r;
                    }
                }
                Ok(result)
            }
            ExprKind::IfExp { test, body, orelse } => {
                let t = self.eval(ctx, test)?;
                self.set_span(test.span);
                match self.truthy_at(&t, "if", test) {
                    Ok(true) => self.eval(ctx, body),
                    Ok(false) => self.eval(ctx, orelse),
                    Err(flow) if self.is_unknown_stop(&flow) => {
                        self.note_went_past(&flow, "both arms of the conditional expression analysed");
                        self.fork_values(|i| i.eval(ctx, body), |i| i.eval(ctx, orelse))
                    }
                    Err(flow) => Err(flow),
                }
            }
            ExprKind::Lambda(def) => self.make_function(ctx, def.clone(), true),
            ExprKind::ListComp { elt, generators } => {
                let mut out = Vec::new();
                self.comprehension(ctx, generators, &mut |this, c| {
                    out.push(this.eval(c, elt)?);
                    Ok(())
                })?;
                Ok(self.new_list(out))
            }
            ExprKind::GeneratorExp { elt, generators } => {
                let mut out = Vec::new();
                self.comprehension(ctx, generators, &mut |this, c| {
                    out.push(this.eval(c, elt)?);
                    Ok(())
                })?;
                Ok(Value::Iterator(Rc::new(RefCell::new(PyIter::Generator {
                    items: Rc::new(out),
                    pos: 0,
                    name: Rc::from("<genexpr>"),
                    end: Rc::new(super::value::GeneratorEnd::Returned),
                }))))
            }
            ExprKind::SetComp { elt, generators } => {
                let mut out = Vec::new();
                self.comprehension(ctx, generators, &mut |this, c| {
                    out.push(this.eval(c, elt)?);
                    Ok(())
                })?;
                self.make_set(out)
            }
            ExprKind::DictComp { key, value, generators } => {
                let mut d = Dict::default();
                self.comprehension(ctx, generators, &mut |this, c| {
                    let k = this.eval(c, key)?;
                    let v = this.eval(c, value)?;
                    let h = this.hash_key(&k)?;
                    d.insert(h, k, v);
                    Ok(())
                })?;
                Ok(self.new_dict(d))
            }
            ExprKind::NamedExpr { target, value } => {
                let v = self.eval(ctx, value)?;
                self.assign(ctx, target, v.clone())?;
                Ok(v)
            }
            ExprKind::Yield(value) => {
                let v = match value {
                    // A value computed from an unknown (`yield tuple(a[i] for a in arrays)`)
                    // is still yielded, unknown: skipping the statement would yield nothing.
                    Some(e) => match self.eval(ctx, e) {
                        Ok(v) => v,
                        Err(flow) if self.is_unknown_stop(&flow) => {
                            self.note_went_past(&flow, "the generator yields an unknown value");
                            Value::opaque("a value a generator yields, computed from an unknown")
                        }
                        Err(flow) => return Err(flow),
                    },
                    None => Value::None,
                };
                self.yield_value(v)?;
                Ok(Value::None)
            }
            ExprKind::YieldFrom(e) => {
                let v = self.eval(ctx, e)?;
                // `yield from` an iterable the interpreter cannot follow (a data loader it does
                // not model) ends what is known of the generator here, as the item cap does:
                // skipping the statement would make `while True: yield from loader` yield nothing.
                let truncate = |s: &mut Self, flow: Flow| match &flow {
                    Flow::Stop(crate::interp::StopReason::Unknown(why), _) if s.is_unknown_stop(&flow) => {
                        s.stop_end(format!("`yield from` over an unknown value ({why})"))
                    }
                    _ => flow,
                };
                let it = self.get_iter(&v).map_err(|f| truncate(self, f))?;
                while let Some(item) = self.next_item(&it).map_err(|f| truncate(self, f))? {
                    self.yield_value(item)?;
                }
                Ok(Value::None)
            }
            ExprKind::Await(_) => Ok(Value::opaque("await")),
        }
    }

    fn eval_items(&mut self, ctx: &Ctx, items: &[Expr]) -> PyResult<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for e in items {
            if let ExprKind::Starred(inner) = &e.kind {
                let v = self.eval(ctx, inner)?;
                out.extend(self.iterate(&v)?);
            } else {
                out.push(self.eval(ctx, e)?);
            }
        }
        Ok(out)
    }

    fn comprehension(
        &mut self,
        ctx: &Ctx,
        generators: &[ast::Comprehension],
        body: &mut dyn FnMut(&mut Self, &Ctx) -> PyResult<()>,
    ) -> PyResult<()> {
        let scope = Rc::new(Scope { parent: ctx.scope.clone(), ..Default::default() });
        let inner = Ctx { scope: Some(scope), globals: ctx.globals.clone(), file: ctx.file };
        self.comprehension_level(ctx, &inner, generators, body)
    }

    fn comprehension_level(
        &mut self,
        outer: &Ctx,
        inner: &Ctx,
        generators: &[ast::Comprehension],
        body: &mut dyn FnMut(&mut Self, &Ctx) -> PyResult<()>,
    ) -> PyResult<()> {
        let Some((first, rest)) = generators.split_first() else {
            return body(self, inner);
        };
        // The first iterable is evaluated in the enclosing scope, as in Python.
        let iterable = if std::ptr::eq(outer, inner) { self.eval(inner, &first.iter)? } else { self.eval(outer, &first.iter)? };
        let it = self.get_iter(&iterable)?;
        'items: while let Some(item) = self.next_item(&it)? {
            self.tick()?;
            self.assign(inner, &first.target, item)?;
            for cond in &first.ifs {
                let c = self.eval(inner, cond)?;
                if !self.truthy_at(&c, "if", cond)? {
                    continue 'items;
                }
            }
            self.comprehension_level(inner, inner, rest, body)?;
        }
        Ok(())
    }

    fn eval_fstring(&mut self, ctx: &Ctx, parts: &[ast::FStringPart]) -> PyResult<String> {
        self.fstring_with(ctx, parts, &mut |interp, ctx, e, _| interp.eval(ctx, e).map(Some))
    }

    /// An f-string whose values `value_of` evaluates, told whether the field has no format
    /// spec; a value it gives as `None` is left out.
    pub(super) fn fstring_with(
        &mut self,
        ctx: &Ctx,
        parts: &[ast::FStringPart],
        value_of: &mut dyn FnMut(&mut Self, &Ctx, &Expr, bool) -> PyResult<Option<Value>>,
    ) -> PyResult<String> {
        let mut out = String::new();
        for part in parts {
            match part {
                ast::FStringPart::Literal(s) => out.push_str(s),
                ast::FStringPart::Formatted { value, conversion, format_spec, debug_text } => {
                    let v = value_of(self, ctx, value, format_spec.is_empty())?;
                    self.set_span(value.span);
                    if let Some(d) = debug_text {
                        out.push_str(d);
                    }
                    let spec = self.eval_fstring(ctx, format_spec)?;
                    let Some(v) = v else { continue };
                    let conv = conversion.or(if debug_text.is_some() && spec.is_empty() { Some('r') } else { None });
                    let s = match conv {
                        Some('r') => self.repr(&v)?,
                        Some('s') => self.to_str(&v)?,
                        _ => self.format_value(&v, &spec)?,
                    };
                    self.afford_or_stop(out.len() as u128 + s.len() as u128, "the formatted string")?;
                    out.push_str(&s);
                }
            }
        }
        Ok(out)
    }

    pub fn assign(&mut self, ctx: &Ctx, target: &Expr, value: Value) -> PyResult<()> {
        match &target.kind {
            ExprKind::Name(name) => {
                self.note_value(ctx.file, target.span, name, &value, SiteKind::Assigned);
                self.store_shared_name(ctx, name, value, Some(target.span))
            }
            ExprKind::Tuple(items) | ExprKind::List(items) if self.abstract_unknowns && value.is_opaque() => {
                // Unpacking an unknown: each part is unknown (and a tracer if it is one).
                let part = |v: &Value| {
                    if v.is_certain_tracer() {
                        Value::opaque_tracer("a part of a tracer")
                    } else {
                        Value::opaque("a part of an unknown value")
                    }
                };
                for item in items {
                    let inner = match &item.kind {
                        ExprKind::Starred(inner) => inner,
                        _ => item,
                    };
                    self.assign(ctx, inner, part(&value))?;
                }
                Ok(())
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                self.set_span(target.span);
                let values = self.iterate(&value)?;
                let star = items.iter().position(|e| matches!(e.kind, ExprKind::Starred(_)));
                match star {
                    None => {
                        if values.len() != items.len() && self.is_unsized(&value) {
                            return Err(self.stop_unknown("unpacking a list whose length is not known"));
                        }
                        if values.len() != items.len() {
                            let msg = if values.len() > items.len() {
                                format!("too many values to unpack (expected {})", items.len())
                            } else {
                                format!("not enough values to unpack (expected {}, got {})", items.len(), values.len())
                            };
                            return Err(self.value_error(msg));
                        }
                        for (t, v) in items.iter().zip(values) {
                            self.assign(ctx, t, v)?;
                        }
                    }
                    Some(s) => {
                        let after = items.len() - s - 1;
                        if values.len() < items.len() - 1 && self.is_unsized(&value) {
                            return Err(self.stop_unknown("unpacking a list whose length is not known"));
                        }
                        if values.len() < items.len() - 1 {
                            return Err(self.value_error(format!(
                                "not enough values to unpack (expected at least {}, got {})",
                                items.len() - 1,
                                values.len()
                            )));
                        }
                        let mut values = values;
                        let tail = values.split_off(values.len() - after);
                        let middle = values.split_off(s);
                        for (t, v) in items[..s].iter().zip(values) {
                            self.assign(ctx, t, v)?;
                        }
                        if let ExprKind::Starred(inner) = &items[s].kind {
                            let l = self.new_list(middle);
                            self.assign(ctx, inner, l)?;
                        }
                        for (t, v) in items[s + 1..].iter().zip(tail) {
                            self.assign(ctx, t, v)?;
                        }
                    }
                }
                Ok(())
            }
            ExprKind::Attribute { value: obj, attr, .. } => {
                let o = self.eval(ctx, obj)?;
                self.set_span(target.span);
                self.note_expression(ctx.file, target.span, &value, SiteKind::Attribute);
                self.setattr(&o, attr, value)
            }
            ExprKind::Subscript { value: obj, index } => {
                let o = self.eval(ctx, obj)?;
                let i = self.eval(ctx, index)?;
                self.set_span(target.span);
                if matches!(index.kind, ExprKind::Int(_) | ExprKind::Str(_)) && !matches!(o, Value::Array(_)) {
                    self.note_expression(ctx.file, target.span, &value, SiteKind::Item);
                }
                self.setitem(&o, i, value)
            }
            ExprKind::Starred(inner) => self.assign(ctx, inner, value),
            _ => Err(self.raise("SyntaxError", Code::PythonException, "cannot assign to expression")),
        }
    }

    fn delete(&mut self, ctx: &Ctx, target: &Expr) -> PyResult<()> {
        match &target.kind {
            ExprKind::Name(name) => {
                if let Some(scope) = &ctx.scope {
                    if scope.vars.borrow_mut().shift_remove(name.as_ref()).is_some() {
                        return Ok(());
                    }
                }
                ctx.globals.dict.borrow_mut().shift_remove(name.as_ref());
                Ok(())
            }
            ExprKind::Subscript { value, index } => {
                let o = self.eval(ctx, value)?;
                let i = self.eval(ctx, index)?;
                self.delitem(&o, i)
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for t in items {
                    self.delete(ctx, t)?;
                }
                Ok(())
            }
            ExprKind::Attribute { value, attr, .. } => {
                let o = self.eval(ctx, value)?;
                if let Value::Instance(inst) = &o {
                    inst.attrs.borrow_mut().shift_remove(attr.as_ref());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    pub fn load_name(&mut self, ctx: &Ctx, name: &str, expr: &Expr) -> PyResult<Value> {
        let v = self.load_name_inner(ctx, name, expr)?;
        match &expr.kind {
            ExprKind::Name(shared) => self.note_value(ctx.file, expr.span, shared, &v, SiteKind::Use),
            _ => self.note_value(ctx.file, expr.span, &name.into(), &v, SiteKind::Use),
        }
        Ok(v)
    }

    fn load_name_inner(&mut self, ctx: &Ctx, name: &str, expr: &Expr) -> PyResult<Value> {
        if let Some(scope) = &ctx.scope {
            if !scope.globals.borrow().iter().any(|g| g.as_ref() == name) {
                if let Some(cell) = lookup_cell_skipping_classes(scope, name) {
                    let v = cell.borrow().clone();
                    if let Value::Array(a) = &v {
                        crate::interp::model::numpy::note_captured_constant(self, a);
                    }
                    return Ok(v);
                }
            }
        }
        if let Some(v) = ctx.globals.dict.borrow().get(name) {
            let v = v.clone();
            self.note_global_read(ctx, name, &v, expr);
            if crate::interp::model::state::memo_recording(self) {
                crate::interp::model::memo::note_read(self, ctx.file, name, Some(&v));
            }
            return Ok(v);
        }
        if let Some(v) = self.builtin_value(name) {
            if crate::interp::model::state::memo_recording(self) {
                crate::interp::model::memo::note_read(self, ctx.file, name, None);
            }
            return Ok(v);
        }
        if let Some(v) = self.star_imported_name(ctx, name)? {
            return Ok(v);
        }
        self.set_span(expr.span);
        let file = ctx.globals.file.unwrap_or(ctx.file);
        if super::global_decls::bound_by_a_function(&self.files[file as usize].module.body, name) {
            return Err(self.stop_unknown(format!("the global {name}, which a function the analysis did not run may bind")));
        }
        Err(self.raise("NameError", Code::PythonException, format!("name '{name}' is not defined")))
    }

    pub fn store_name(&mut self, ctx: &Ctx, name: &str, value: Value, span: Option<ast::Span>) -> PyResult<()> {
        self.store_shared_name(ctx, &Rc::from(name), value, span)
    }

    /// `store_name` of a name the syntax tree holds: the binding shares its text.
    pub fn store_shared_name(&mut self, ctx: &Ctx, name: &ast::Name, value: Value, _span: Option<ast::Span>) -> PyResult<()> {
        let name = name.clone();
        let logging = self.logging_writes();
        match &ctx.scope {
            None => {
                if logging {
                    self.note_write(Slot::Global(ctx.globals.clone(), name.clone()));
                }
                ctx.globals.dict.borrow_mut().insert(name.clone(), value);
                self.note_global_rebind(ctx, &name);
            }
            Some(scope) => {
                if scope.globals.borrow().contains(&name) {
                    self.note_outer_rebind(&name, "global", &value);
                    if logging {
                        self.note_write(Slot::Global(ctx.globals.clone(), name.clone()));
                    }
                    ctx.globals.dict.borrow_mut().insert(name, value);
                } else if scope.nonlocals.borrow().contains(&name) {
                    match scope.parent.as_ref().and_then(|p| lookup_cell_skipping_classes(p, &name)) {
                        Some(cell) => {
                            self.note_outer_rebind(&name, "nonlocal", &value);
                            if logging {
                                self.note_write(Slot::Cell(cell.clone()));
                            }
                            *cell.borrow_mut() = value;
                        }
                        None => {
                            return Err(self.raise("SyntaxError", Code::PythonException, format!("no binding for nonlocal '{name}' found")))
                        }
                    }
                } else {
                    if logging {
                        self.note_write(Slot::Local(scope.clone(), name.clone()));
                    }
                    let existing = scope.vars.borrow().get(&name).cloned();
                    match existing {
                        Some(cell) => *cell.borrow_mut() = value,
                        None => {
                            scope.vars.borrow_mut().insert(name, Rc::new(RefCell::new(value)));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    pub fn make_function(&mut self, ctx: &Ctx, def: Rc<ast::FunctionDef>, is_lambda: bool) -> PyResult<Value> {
        let mut defaults = Vec::new();
        for p in def.params.posonly.iter().chain(&def.params.args) {
            if let Some(d) = &p.default {
                defaults.push(self.eval(ctx, d)?);
            }
        }
        let mut kw_defaults = Vec::new();
        for p in &def.params.kwonly {
            if let Some(d) = &p.default {
                kw_defaults.push((p.name.clone(), self.eval(ctx, d)?));
            }
        }
        let qualname = match self.frames.last() {
            Some(f) if f.name.as_ref() != "<module>" => format!("{}.<locals>.{}", f.name, def.name),
            _ => def.name.to_string(),
        };
        let closure = match &ctx.scope {
            Some(s) => s.clone(),
            None => Rc::new(Scope::default()),
        };
        Ok(Value::Function(Rc::new(Function {
            def,
            file: ctx.file,
            qualname,
            globals: ctx.globals.clone(),
            defaults,
            kw_defaults,
            closure,
            attrs: RefCell::new(IndexMap::default()),
            is_lambda,
        })))
    }

    fn apply_decorators(&mut self, ctx: &Ctx, decorators: &[Expr], mut value: Value) -> PyResult<Value> {
        for d in decorators.iter().rev() {
            let dec = self.eval(ctx, d)?;
            self.set_span(d.span);
            value = self.call(&dec, vec![value], Vec::new())?;
        }
        Ok(value)
    }

    fn record_annotation(&mut self, ctx: &Ctx, target: &Expr, annotation: Value) {
        if let ExprKind::Name(name) = &target.kind {
            let mut dict = ctx.globals.dict.borrow_mut();
            let entry = dict.entry(Rc::from("__annotations__")).or_insert_with(|| Value::Dict(Rc::new(RefCell::new(Dict::default()))));
            if let Value::Dict(d) = entry {
                d.borrow_mut().insert(super::value::HashKey::Str(name.clone()), Value::Str(name.clone()), annotation);
            }
        }
    }

    pub(super) fn exec_class_body(&mut self, ctx: &Ctx, def: &ast::ClassDef) -> PyResult<IndexMap<Rc<str>, Value>> {
        let scope = Rc::new(Scope { parent: ctx.scope.clone(), is_class: true, ..Default::default() });
        let inner = Ctx { scope: Some(scope.clone()), globals: ctx.globals.clone(), file: ctx.file };
        let mut annotations = Vec::new();
        for stmt in &def.body {
            if let StmtKind::AnnAssign { target, value, annotation } = &stmt.kind {
                if let ExprKind::Name(n) = &target.kind {
                    let ann = self.eval(&inner, annotation).unwrap_or(Value::None);
                    annotations.push((n.clone(), ann, value.is_some()));
                }
            }
            self.exec_stmt(&inner, stmt)?;
        }
        let mut out: IndexMap<Rc<str>, Value> = scope.vars.borrow().iter().map(|(k, v)| (k.clone(), v.borrow().clone())).collect();
        // The methods keep this scope as their parent (it is skipped by name lookup) and the
        // scope holds the methods: empty it, or the class never gets freed.
        let vars = std::mem::take(&mut *scope.vars.borrow_mut());
        drop(vars);
        let mut ann_dict = Dict::default();
        for (n, ann, _) in annotations {
            ann_dict.insert(super::value::HashKey::Str(n.clone()), Value::Str(n.clone()), ann);
        }
        out.insert(Rc::from("__annotations__"), Value::Dict(Rc::new(RefCell::new(ann_dict))));
        Ok(out)
    }
}

/// Variable lookup through enclosing function scopes; class bodies are not visible to the
/// functions defined in them (Python's scoping rule).
pub(super) fn lookup_cell_skipping_classes(scope: &Rc<Scope>, name: &str) -> Option<Rc<RefCell<Value>>> {
    if let Some(cell) = scope.vars.borrow().get(name) {
        return Some(cell.clone());
    }
    let mut cur = scope.parent.clone();
    while let Some(s) = cur {
        if !s.is_class {
            if let Some(cell) = s.vars.borrow().get(name) {
                return Some(cell.clone());
            }
        }
        cur = s.parent.clone();
    }
    None
}

/// A `while` loop whose test is a true constant and whose body has no `break` of its own.
fn never_falls_out(test: &Expr, body: &[Stmt]) -> bool {
    (matches!(test.kind, ExprKind::Bool(true)) || matches!(test.kind, ExprKind::Int(n) if n != 0)) && !breaks(body)
}

/// Whether a `break` in `body` leaves the loop `body` belongs to (not one nested in it).
fn breaks(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Break => true,
        StmtKind::If { body, orelse, .. } => breaks(body) || breaks(orelse),
        StmtKind::With { body, .. } => breaks(body),
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            breaks(body) || handlers.iter().any(|h| breaks(&h.body)) || breaks(orelse) || breaks(finalbody)
        }
        _ => false,
    })
}

/// Whether a function's frame holds arguments and every one is unknown (not a tracer, whose
/// aval is what a trace follows).
fn only_unknowns(scope: &Scope) -> bool {
    let vars = scope.vars.borrow();
    !vars.is_empty()
        && vars.values().all(|cell| match &*cell.borrow() {
            Value::Opaque(o) => !o.tracer,
            Value::UnknownNumber(_) => true,
            _ => false,
        })
}
