//! Calls: binding arguments to parameters, user functions, classes and their instances,
//! bound methods, generators.

use std::cell::RefCell;
use std::rc::Rc;

use crate::interp::value::IndexMap;

use crate::diagnostics::Code;
use crate::syntax::ast::{self, Expr, ExprKind};

use super::builtins::Builtin;
use super::value::{BuiltinClass, Class, Function, GeneratorEnd, Instance, PyIter, Scope, Value};
use super::{Ctx, Flow, Interp, PyResult};

pub type Kwargs = Vec<(Rc<str>, Value)>;

impl<'l> Interp<'l> {
    pub(super) fn eval_call(&mut self, ctx: &Ctx, expr: &Expr, func: &Expr, args: &[Expr], keywords: &[ast::Keyword]) -> PyResult<Value> {
        let callee = self.eval(ctx, func)?;
        let unread = self.print_unread(&callee);
        let mut argv = Vec::with_capacity(args.len());
        for a in args {
            if let ExprKind::Starred(inner) = &a.kind {
                let v = self.eval(ctx, inner)?;
                self.set_span(a.span);
                argv.extend(self.iterate(&v)?);
            } else if unread {
                argv.push(self.print_arg(ctx, a)?);
            } else {
                argv.push(self.eval(ctx, a)?);
            }
        }
        let mut kwargs: Kwargs = Vec::with_capacity(keywords.len());
        for k in keywords {
            let v = self.eval(ctx, &k.value)?;
            match &k.arg {
                Some(name) => kwargs.push((name.clone(), v)),
                None => {
                    self.set_span(k.span);
                    for (key, val) in self.mapping_items(&v)? {
                        match key {
                            Value::Str(s) => kwargs.push((s, val)),
                            _ => return Err(self.type_error("keywords must be strings")),
                        }
                    }
                }
            }
        }
        self.finish_call(ctx, expr, func, &callee, argv, kwargs)
    }

    /// The call `expr` of `callee` (the value of `func`) with its arguments evaluated.
    pub(super) fn finish_call(
        &mut self,
        ctx: &Ctx,
        expr: &Expr,
        func: &Expr,
        callee: &Value,
        argv: Vec<Value>,
        kwargs: Kwargs,
    ) -> PyResult<Value> {
        self.set_span(expr.span);
        crate::interp::model::state::push_call_span(self, (ctx.file, expr.span, func.span));
        let result = self.call(callee, argv, kwargs);
        crate::interp::model::state::pop_call_span(self);
        self.set_span(expr.span);
        result
    }

    pub fn call(&mut self, callee: &Value, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        self.tick()?;
        match callee {
            Value::Function(f) => self.call_function(f, args, kwargs),
            Value::Builtin(b) => self.call_builtin(b, args, kwargs),
            Value::BoundMethod(bm) => {
                let (recv, func) = (&bm.0, &bm.1);
                let mut full = Vec::with_capacity(args.len() + 1);
                full.push(recv.clone());
                full.extend(args);
                self.call(func, full, kwargs)
            }
            Value::Class(c) => self.instantiate(c, args, kwargs),
            Value::Instance(inst) => match inst.class.lookup("__call__") {
                Some(m) => {
                    let bound = self.bind_method(callee, m);
                    self.call(&bound, args, kwargs)
                }
                None => Err(self.type_error(format!("'{}' object is not callable", inst.class.name))),
            },
            Value::DType(d) => {
                let d = *d;
                if crate::interp::model::stmt::recording(self).is_none() {
                    return crate::interp::model::numpy::dtype_call(self, d, args, kwargs);
                }
                // `jnp.float32(0.0)` inside a trace is a statement of the user's (the reproducer
                // writes it).
                let statement_args = args.clone();
                let refs: Vec<&Value> = statement_args.iter().collect();
                crate::interp::model::stmt::recorded(self, crate::interp::model::stmt::Call::DType(d), &refs, &kwargs.clone(), |this| {
                    crate::interp::model::numpy::dtype_call(this, d, args, kwargs)
                })
            }
            Value::StaticMethod(f) => self.call(f, args, kwargs),
            Value::Opaque(o) if o.tracer => Ok(Value::opaque_tracer(format!("{}(...)", o.what))),
            Value::Opaque(o) => match crate::interp::model::entry_hooks::call_opaque(self, o, &args, &kwargs) {
                Some(result) => result,
                // A lookup with no default (`os.environ.get(k)`, `d.get(k)` of an unknown
                // mapping, `os.getenv(k)`) is `None` when the key is missing.
                None if lookup_without_default(&o.what, &args, &kwargs) => Ok(Value::opaque_maybe_none(format!("{}(...)", o.what))),
                None => Ok(Value::opaque(format!("{}(...)", o.what))),
            },
            other => Err(self.type_error(format!("'{}' object is not callable", other.type_name()))),
        }
    }

    pub fn call_function(&mut self, f: &Rc<Function>, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        self.called.insert(Rc::as_ptr(&f.def) as usize);
        if crate::interp::model::state::memo_recording(self) {
            crate::interp::model::memo::note_call(self, f);
        }
        let scope = Rc::new(Scope { parent: Some(f.closure.clone()), ..Default::default() });
        self.bind_arguments(f, &scope, args, kwargs)?;
        self.note_parameters(f, &scope);
        let returns = self.dropped_returns;
        let result = if f.def.is_generator { self.run_generator(f, scope) } else { self.run_body(f, scope) };
        // A `return` an unknown chose left this function only: a loop in the caller goes on.
        let own = self.dropped_returns.saturating_sub(returns);
        self.dropped_exits = self.dropped_exits.saturating_sub(own);
        self.dropped_returns = returns;
        result
    }

    pub(crate) fn bind_arguments(&mut self, f: &Function, scope: &Rc<Scope>, args: Vec<Value>, kwargs: Kwargs) -> PyResult<()> {
        let params = &f.def.params;
        let positional: Vec<&ast::Param> = params.posonly.iter().chain(&params.args).collect();
        let mut bound: IndexMap<Rc<str>, Value> = IndexMap::default();
        let fname = f.def.name.as_ref();
        let n_pos = positional.len();
        let mut extra = Vec::new();
        for (i, v) in args.into_iter().enumerate() {
            if i < n_pos {
                bound.insert(positional[i].name.clone(), v);
            } else {
                extra.push(v);
            }
        }
        if !extra.is_empty() && params.vararg.is_none() {
            let given = n_pos + extra.len();
            let req = positional.len();
            return Err(self.type_error(format!(
                "{fname}() takes {req} positional argument{} but {given} {} given",
                if req == 1 { "" } else { "s" },
                if given == 1 { "was" } else { "were" }
            )));
        }
        let mut kw_extra = super::value::Dict::default();
        for (k, v) in kwargs {
            let is_param = params.args.iter().chain(&params.kwonly).any(|p| p.name == k);
            if is_param {
                if bound.contains_key(&k) {
                    return Err(self.type_error(format!("{fname}() got multiple values for argument '{k}'")));
                }
                bound.insert(k, v);
            } else if params.kwarg.is_some() {
                kw_extra.insert(super::value::HashKey::Str(k.clone()), Value::Str(k), v);
            } else {
                return Err(self.type_error(format!("{fname}() got an unexpected keyword argument '{k}'")));
            }
        }
        // Defaults fill the last positional parameters.
        let first_default = n_pos - f.defaults.len().min(n_pos);
        let mut missing = Vec::new();
        for (i, p) in positional.iter().enumerate() {
            if !bound.contains_key(&p.name) {
                if i >= first_default {
                    bound.insert(p.name.clone(), f.defaults[i - first_default].clone());
                } else {
                    missing.push(p.name.clone());
                }
            }
        }
        if !missing.is_empty() {
            return Err(self.type_error(missing_arguments(&fname, &missing)));
        }
        for p in &params.kwonly {
            if !bound.contains_key(&p.name) {
                match f.kw_defaults.iter().find(|(n, _)| *n == p.name) {
                    Some((_, d)) => {
                        bound.insert(p.name.clone(), d.clone());
                    }
                    None => return Err(self.type_error(format!("{fname}() missing 1 required keyword-only argument: '{}'", p.name))),
                }
            }
        }
        let mut vars = scope.vars.borrow_mut();
        for (k, v) in bound {
            vars.insert(k, Rc::new(RefCell::new(v)));
        }
        if let Some(va) = &params.vararg {
            vars.insert(va.name.clone(), Rc::new(RefCell::new(Value::tuple(extra))));
        }
        if let Some(kw) = &params.kwarg {
            vars.insert(kw.name.clone(), Rc::new(RefCell::new(Value::Dict(Rc::new(RefCell::new(kw_extra))))));
        }
        Ok(())
    }

    /// Runs a generator function to its end, collecting what it yields (up to a cap); how the
    /// run ended is replayed when the consumer gets past the last item.
    fn run_generator(&mut self, f: &Rc<Function>, scope: Rc<Scope>) -> PyResult<Value> {
        self.generators.push(Vec::new());
        let exits = self.dropped_exits;
        // Python runs a generator lazily: a method's generator sees its object as it is when
        // advanced, which the program may change after making it.
        let first = f.def.params.posonly.first().or(f.def.params.args.first()).map(|p| p.name.clone());
        let object = first.and_then(|n| scope.vars.borrow().get(&n).map(|v| v.borrow().clone()));
        let result = self.run_body(f, scope);
        let items = self.generators.pop().unwrap_or_default();
        let end = match result {
            // An unknown chose between going on and leaving (`if idx == len(data): return`
            // in a `while True:`): how many items it yields, and so where it ends, is unknown.
            Ok(_) if self.dropped_exits != exits => GeneratorEnd::Truncated("a generator an unknown may have ended".into()),
            Ok(_) => GeneratorEnd::Returned,
            Err(Flow::Raise(exc)) => GeneratorEnd::Raised(exc),
            Err(Flow::Stop(super::StopReason::Unknown(why) | super::StopReason::End(why), _)) => GeneratorEnd::Truncated(why),
            Err(other) => return Err(other),
        };
        let end = match object {
            Some(Value::Instance(inst)) if !matches!(end, GeneratorEnd::Truncated(_)) => {
                let attrs = inst.attrs.borrow().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                GeneratorEnd::WhileUnchanged(Value::Instance(inst), attrs, Box::new(end))
            }
            _ => end,
        };
        Ok(Value::Iterator(Rc::new(RefCell::new(PyIter::Generator {
            items: Rc::new(items),
            pos: 0,
            name: Rc::from(f.def.name.as_ref()),
            end: Rc::new(end),
        }))))
    }

    pub(super) fn yield_value(&mut self, v: Value) -> PyResult<()> {
        match self.generators.last_mut() {
            Some(items) if items.len() >= GENERATOR_ITEMS => Err(self.stop_end(GENERATOR_CAP)),
            Some(items) => {
                items.push(v);
                Ok(())
            }
            None => Err(self.raise("SyntaxError", Code::PythonException, "'yield' outside function")),
        }
    }

    pub fn bind_method(&self, recv: &Value, func: Value) -> Value {
        match func {
            Value::Function(_) | Value::Builtin(_) => Value::BoundMethod(Rc::new((recv.clone(), func))),
            Value::StaticMethod(f) => (*f).clone(),
            Value::ClassMethod(f) => {
                let cls = match recv {
                    Value::Instance(i) => Value::Class(i.class.clone()),
                    other => other.clone(),
                };
                Value::BoundMethod(Rc::new((cls, (*f).clone())))
            }
            other => other,
        }
    }

    pub(super) fn make_class(&mut self, ctx: &Ctx, def: &ast::ClassDef) -> PyResult<Value> {
        let mut bases = Vec::new();
        let mut namedtuple = false;
        // A subclass of a named tuple class is a named tuple with its base's fields.
        let mut inherited_fields: Option<Vec<Rc<str>>> = None;
        let mut opaque_base = false;
        let mut testcase = false;
        for b in &def.bases {
            let v = self.eval(ctx, b)?;
            match v {
                Value::Class(c) => {
                    if c.name.as_ref() == "NamedTuple" && c.builtin == Some(BuiltinClass::Tuple) {
                        namedtuple = true;
                    } else if c.is_namedtuple.get() && inherited_fields.is_none() {
                        inherited_fields = Some(c.fields.borrow().clone());
                    }
                    bases.push(c);
                }
                Value::Opaque(ref o) => {
                    opaque_base = true;
                    // unittest's, absltest's, parameterized's, JAX's own `JaxTestCase`.
                    testcase |= o.what.ends_with("TestCase");
                }
                Value::Builtin(ref b) if matches!(**b, Builtin::Fn("typing.Generic")) => {}
                _ => opaque_base = true,
            }
        }
        if bases.is_empty() {
            bases.push(self.classes.get("object"));
        }
        let body = self.exec_class_body(ctx, def)?;
        let class = Rc::new(Class {
            name: def.name.clone(),
            qualname: def.name.to_string(),
            bases,
            dict: RefCell::new(body),
            builtin: None,
            is_dataclass: Default::default(),
            frozen: Default::default(),
            fields: RefCell::new(Vec::new()),
            is_namedtuple: Default::default(),
            pytree: RefCell::new(None),
            def_span: Some((ctx.file, def.span)),
        });
        for v in class.dict.borrow().values() {
            let f = match v {
                Value::Function(f) => Some(f.clone()),
                Value::StaticMethod(inner) | Value::ClassMethod(inner) => match &**inner {
                    Value::Function(f) => Some(f.clone()),
                    _ => None,
                },
                Value::Property(p) => match &p.fget {
                    Value::Function(f) => Some(f.clone()),
                    _ => None,
                },
                _ => None,
            };
            if let Some(f) = f {
                f.attrs.borrow_mut().insert(Rc::from("__tracelens_class__"), Value::Class(class.clone()));
            }
        }
        if opaque_base {
            // A base we do not model (e.g. flax.nnx.Module) may define anything: stay silent.
            class.dict.borrow_mut().insert(Rc::from("__tracelens_opaque_base__"), Value::Bool(true));
        }
        if testcase {
            class.dict.borrow_mut().insert(Rc::from("__tracelens_testcase__"), Value::Bool(true));
        }
        if namedtuple {
            class.is_namedtuple.set(true);
            *class.fields.borrow_mut() = annotation_names(&class);
        } else if let Some(fields) = inherited_fields {
            class.is_namedtuple.set(true);
            *class.fields.borrow_mut() = fields;
        }
        // `type.__new__` calls the nearest base's `__init_subclass__` (an implicit classmethod)
        // before the decorators run: flax.linen's Module makes every subclass a dataclass there.
        let hook = class.mro().iter().skip(1).find_map(|c| c.dict.borrow().get("__init_subclass__").cloned());
        if let Some(Value::Function(_) | Value::ClassMethod(_)) = hook {
            let hook = match hook {
                Some(Value::ClassMethod(inner)) => (*inner).clone(),
                other => other.unwrap_or(Value::None),
            };
            self.call(&hook, vec![Value::Class(class.clone())], Vec::new())?;
        }
        let mut value = Value::Class(class);
        for d in def.decorators.iter().rev() {
            let dec = self.eval(ctx, d)?;
            self.set_span(d.span);
            value = self.call(&dec, vec![value], Vec::new())?;
        }
        Ok(value)
    }

    pub fn instantiate(&mut self, class: &Rc<Class>, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        if class.is_namedtuple.get() {
            let fields = class.fields.borrow().clone();
            let defaults: Vec<Option<Value>> = fields.iter().map(|f| class.dict.borrow().get(f).cloned()).collect();
            let mut items: Vec<Option<Value>> = vec![None; fields.len()];
            for (i, a) in args.into_iter().enumerate() {
                if i >= items.len() {
                    return Err(self.type_error(format!("{}() takes {} positional arguments", class.name, fields.len())));
                }
                items[i] = Some(a);
            }
            for (k, v) in kwargs {
                match fields.iter().position(|f| *f == k) {
                    Some(i) => items[i] = Some(v),
                    None => return Err(self.type_error(format!("{}() got an unexpected keyword argument '{k}'", class.name))),
                }
            }
            let mut out = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                match item.or_else(|| defaults[i].clone()) {
                    Some(v) => out.push(v),
                    None => {
                        return Err(
                            self.type_error(format!("{}.__new__() missing 1 required positional argument: '{}'", class.name, fields[i]))
                        )
                    }
                }
            }
            return Ok(Value::Instance(Rc::new(Instance {
                class: class.clone(),
                attrs: RefCell::new(IndexMap::default()),
                tuple: Some(out),
            })));
        }
        if class.lookup("__tracelens_opaque_base__").is_some() {
            return Ok(Value::opaque(format!("an instance of {}", class.name)));
        }
        // A class's own `__new__` (an implicit static method) makes the object, as `type.__call__`
        // does: `__init__` runs only when what it returns is an instance of the class.
        if let Some(new) = class.lookup("__new__") {
            let new = match new {
                Value::StaticMethod(f) => (*f).clone(),
                other => other,
            };
            if matches!(new, Value::Function(_)) {
                let mut new_args = Vec::with_capacity(args.len() + 1);
                new_args.push(Value::Class(class.clone()));
                new_args.extend(args.iter().cloned());
                let made = self.call(&new, new_args, kwargs.clone())?;
                return match &made {
                    Value::Instance(i) if i.class.is_subclass_of(class) && i.tuple.is_none() => {
                        self.initialise(&i.class.clone(), made.clone(), args, kwargs)
                    }
                    _ => Ok(made),
                };
            }
        }
        let inst = self.bare_instance(class);
        self.initialise(class, inst, args, kwargs)
    }

    /// `object.__new__(class)`: an instance with no attributes yet.
    pub fn bare_instance(&mut self, class: &Rc<Class>) -> Value {
        let inst = Value::Instance(Rc::new(Instance { class: class.clone(), attrs: RefCell::new(IndexMap::default()), tuple: None }));
        crate::interp::model::state::note_born(self, &inst);
        inst
    }

    /// What `type.__call__` does after `__new__`: the exception's `args`, `__init__` (or a
    /// dataclass's generated one) and `__post_init__`.
    fn initialise(&mut self, class: &Rc<Class>, inst: Value, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        if class.derives_builtin(BuiltinClass::Exception) {
            if let Value::Instance(i) = &inst {
                i.attrs.borrow_mut().insert(Rc::from("args"), Value::tuple(args.clone()));
            }
        }
        match class.lookup("__init__") {
            // An `__init__` wrapped by a decorator tracelens does not model may set anything.
            Some(Value::Opaque(_)) => return Ok(Value::opaque(format!("an instance of {}", class.name))),
            Some(init) if !matches!(init, Value::Builtin(_)) => {
                let bound = self.bind_method(&inst, init);
                self.call(&bound, args, kwargs)?;
            }
            _ => {
                if class.is_dataclass.get() {
                    self.dataclass_init(class, &inst, args, kwargs)?;
                }
            }
        }
        if let Some(post) = class.lookup("__post_init__") {
            if class.is_dataclass.get() {
                let bound = self.bind_method(&inst, post);
                self.call(&bound, Vec::new(), Vec::new())?;
            }
        }
        Ok(inst)
    }

    fn dataclass_init(&mut self, class: &Rc<Class>, inst: &Value, args: Vec<Value>, kwargs: Kwargs) -> PyResult<()> {
        let Value::Instance(i) = inst else {
            return Ok(());
        };
        // A `field(init=False)` is no parameter of `__init__`: it gets its default, if any.
        let all: Vec<Rc<str>> = class.fields.borrow().clone();
        let fields: Vec<Rc<str>> = all.iter().filter(|f| !field_init_false(class, f)).cloned().collect();
        let mut values: Vec<Option<Value>> = vec![None; fields.len()];
        for (n, a) in args.into_iter().enumerate() {
            if n >= fields.len() {
                return Err(self.type_error(format!(
                    "{}.__init__() takes {} positional arguments but {} were given",
                    class.name,
                    fields.len() + 1,
                    n + 2
                )));
            }
            values[n] = Some(a);
        }
        for (k, v) in kwargs {
            match fields.iter().position(|f| *f == k) {
                Some(n) => values[n] = Some(v),
                None => return Err(self.type_error(format!("{}.__init__() got an unexpected keyword argument '{k}'", class.name))),
            }
        }
        let mut given = values.into_iter();
        for field in &all {
            let not_init = field_init_false(class, field);
            let v = if not_init { None } else { given.next().flatten() };
            let v = match v {
                Some(v) => Some(v),
                None => self.dataclass_default(class, field)?,
            };
            match v {
                Some(v) => {
                    i.attrs.borrow_mut().insert(field.clone(), v);
                }
                None if not_init => {}
                None => return Err(self.type_error(format!("{}.__init__() missing 1 required positional argument: '{field}'", class.name))),
            }
        }
        Ok(())
    }

    fn dataclass_default(&mut self, class: &Rc<Class>, field: &str) -> PyResult<Option<Value>> {
        let Some(d) = class.lookup(field) else {
            return Ok(None);
        };
        if let Value::Instance(fi) = &d {
            if fi.class.name.as_ref() == "Field" {
                let factory = fi.attrs.borrow().get("default_factory").cloned();
                if let Some(f) = factory {
                    return Ok(Some(self.call(&f, Vec::new(), Vec::new())?));
                }
                return Ok(fi.attrs.borrow().get("default").cloned());
            }
        }
        Ok(Some(d))
    }
}

/// Whether the class attribute of a dataclass field is `dataclasses.field(init=False)`.
fn field_init_false(class: &Rc<Class>, field: &str) -> bool {
    match class.lookup(field) {
        Some(Value::Instance(fi)) if fi.class.name.as_ref() == "Field" => {
            matches!(fi.attrs.borrow().get("init"), Some(Value::Bool(false)))
        }
        _ => false,
    }
}

pub(super) const GENERATOR_CAP: &str = "a generator yielded more items than the interpreter follows";

/// How many items a generator is run for (it runs eagerly, when made). An endless one
/// (`while True: yield batch`) always runs to this cap, so the cap is what it costs: at
/// 10,000 items of `jax.random` draws that was most of the analysis' 700 ms time budget, and
/// whether the budget ran out inside it changed from run to run (optax's
/// `examples/meta_learning.ipynb`). Past the cap the generator's items are unknown.
pub(super) const GENERATOR_ITEMS: usize = 1_000;

pub fn annotation_names(class: &Class) -> Vec<Rc<str>> {
    match class.dict.borrow().get("__annotations__") {
        Some(Value::Dict(d)) => d.borrow().keys().into_iter().filter_map(|k| if let Value::Str(s) = k { Some(s) } else { None }).collect(),
        _ => Vec::new(),
    }
}

/// Python's `TypeError` message for a call of `fname` without the required positional
/// parameters `missing`: `f() missing 2 required positional arguments: 'a' and 'b'`.
pub fn missing_arguments(fname: &str, missing: &[impl AsRef<str>]) -> String {
    let names: Vec<String> = missing.iter().map(|n| format!("'{}'", n.as_ref())).collect();
    let list = match names.as_slice() {
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
        [] => String::new(),
    };
    let plural = if names.len() == 1 { "" } else { "s" };
    format!("{fname}() missing {} required positional argument{plural}: {list}", names.len())
}

/// `what(args)` is a lookup that gives `None` for a missing key: a method `get` or the
/// function `getenv` called with the key alone, or with `None` as its default.
fn lookup_without_default(what: &str, args: &[Value], kwargs: &[(Rc<str>, Value)]) -> bool {
    let name = what.rsplit('.').next().unwrap_or(what);
    matches!(name, "get" | "getenv") && kwargs.is_empty() && matches!(args, [_] | [_, Value::None])
}
