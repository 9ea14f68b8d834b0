//! Python's builtins: the functions, the methods of builtin types, and the exception classes
//! (with JAX's error classes in their real hierarchy).
//!
//! Size: `call_python_builtin` (~520 lines) and `call_method` (~240) are one arm per builtin and
//! per method of a builtin type; a table of builtins, as `jax/numpy/` has for its functions, would
//! split them.

use std::cell::RefCell;
use std::rc::Rc;

use crate::interp::value::IndexMap;

use crate::diagnostics::Code;
use crate::interp::model::surface::JaxFn;
use crate::interp::model::{JaxObject, TfObject, TfObjectView};

use super::call::Kwargs;
use super::lazy_iter::Lazy;
use super::ops::{as_f64, as_int};
use super::value::{BuiltinClass, Class, Dict, HashKey, Instance, Property, PyIter, Value};
use super::{Interp, PyResult};

/// A callable the interpreter implements natively.
#[derive(Debug)]
pub enum Builtin {
    /// A Python builtin or a modelled standard-library function, by qualified name.
    Fn(&'static str),
    /// A method of a builtin type, bound to its receiver: `xs.append`.
    Method { recv: Value, name: Rc<str> },
    /// A function of JAX's API surface.
    Jax(JaxFn),
    /// A callable JAX object: a jitted function, a vmapped function, `x.at[i].set`, ...
    Object(JaxObject),
    /// `functools.partial(func, *args, **kwargs)`.
    /// `attrs`: what the program set on it (`p.__doc__ = ...`).
    Partial { func: Value, args: Vec<Value>, kwargs: Kwargs, attrs: RefCell<IndexMap<Rc<str>, Value>> },
    /// `super()` bound to a class and an object.
    Super { class: Rc<Class>, obj: Value },
    /// A function or object of TensorFlow's API (`crate::tf`).
    Tf(TfObject),
}

impl Builtin {
    /// `functools.partial(func, *args, **kwargs)`, with no attributes set yet.
    pub fn partial(func: Value, args: Vec<Value>, kwargs: Kwargs) -> Builtin {
        Builtin::Partial { func, args, kwargs, attrs: Default::default() }
    }

    pub fn name(&self) -> String {
        match self {
            Builtin::Fn(n) => n.to_string(),
            Builtin::Method { name, .. } => name.to_string(),
            Builtin::Jax(f) => f.qualified_name().to_string(),
            Builtin::Object(o) => o.describe(),
            Builtin::Partial { .. } => "functools.partial".into(),
            Builtin::Super { .. } => "super".into(),
            Builtin::Tf(t) => t.describe(),
        }
    }
    pub fn type_name(&self) -> &'static str {
        match self {
            Builtin::Partial { .. } => "functools.partial",
            Builtin::Object(_) => "PjitFunction",
            Builtin::Tf(t) => t.type_name(),
            Builtin::Fn(n) if PY_TYPES.contains(n) => "type",
            _ => "builtin_function_or_method",
        }
    }
}

/// Builtins that are types in Python: `isinstance(x, int)` works on them.
const PY_TYPES: &[&str] =
    &["int", "float", "bool", "str", "list", "tuple", "dict", "set", "frozenset", "type", "complex", "range", "slice", "NoneType"];

const BUILTIN_FNS: &[&str] = &[
    "print",
    "len",
    "range",
    "enumerate",
    "zip",
    "map",
    "filter",
    "sum",
    "min",
    "max",
    "abs",
    "round",
    "sorted",
    "reversed",
    "any",
    "all",
    "isinstance",
    "issubclass",
    "int",
    "float",
    "bool",
    "str",
    "list",
    "tuple",
    "dict",
    "set",
    "frozenset",
    "iter",
    "next",
    "getattr",
    "hasattr",
    "setattr",
    "type",
    "divmod",
    "pow",
    "repr",
    "callable",
    "id",
    "hash",
    "super",
    "property",
    "staticmethod",
    "classmethod",
    "format",
    "chr",
    "ord",
    "complex",
    "slice",
    "NotImplemented",
    "open",
    "input",
    "vars",
    "globals",
    "locals",
    "delattr",
    "exit",
    "quit",
];

pub struct BuiltinClasses {
    /// foldhash, not SipHash: every process builds this map of 86 classes (nothing iterates it).
    classes: super::value::HashMap<&'static str, Rc<Class>>,
}

impl BuiltinClasses {
    pub fn new() -> BuiltinClasses {
        let mut classes: super::value::HashMap<&'static str, Rc<Class>> = super::value::HashMap::default();
        let object = new_class("object", Vec::new(), Some(BuiltinClass::Object));
        classes.insert("object", object.clone());
        // CPython's exception and warning classes in their real hierarchy, then JAX's and
        // the standard library's that programs catch.
        for (name, base) in super::stdlib::exception_classes() {
            if let Some(base) = classes.get(base).cloned() {
                classes.insert(name, new_class(name, vec![base], Some(BuiltinClass::Exception)));
            }
        }
        let library: &[(&'static str, &'static str)] = &[
            ("FrozenInstanceError", "AttributeError"),
            ("JAXTypeError", "TypeError"),
            ("JAXIndexError", "IndexError"),
            ("ConcretizationTypeError", "JAXTypeError"),
            ("TracerBoolConversionError", "ConcretizationTypeError"),
            ("TracerIntegerConversionError", "JAXTypeError"),
            ("TracerArrayConversionError", "JAXTypeError"),
            ("UnexpectedTracerError", "JAXTypeError"),
            ("KeyReuseError", "JAXTypeError"),
            ("NonConcreteBooleanIndexError", "JAXIndexError"),
        ];
        let tf_classes = crate::interp::model::tf::EXCEPTION_CLASSES.iter().chain(crate::interp::model::tf::AUTOGRAPH_EXCEPTION_CLASSES);
        for (name, base) in library.iter().chain(tf_classes) {
            if let Some(base) = classes.get(base).cloned() {
                classes.insert(name, new_class(name, vec![base], Some(BuiltinClass::Exception)));
            }
        }
        classes.insert("NamedTuple", new_class("NamedTuple", vec![object.clone()], Some(BuiltinClass::Tuple)));
        classes.insert("Field", new_class("Field", vec![object.clone()], None));
        // NumPy's `finfo` and `iinfo` objects (interp/dtype_info.rs).
        classes.insert("finfo", new_class("finfo", vec![object.clone()], None));
        classes.insert("iinfo", new_class("iinfo", vec![object.clone()], None));
        // `enum.Enum` and its kin: their metaclass turns class attributes into members, which
        // the interpreter does not follow, so members and instances are unknown.
        let enum_class = new_class("Enum", vec![object], None);
        enum_class.dict.borrow_mut().insert(Rc::from("__tracelens_opaque_base__"), Value::Bool(true));
        enum_class.dict.borrow_mut().insert(Rc::from("__tracelens_enum__"), Value::Bool(true));
        classes.insert("Enum", enum_class);
        BuiltinClasses { classes }
    }

    pub fn get(&self, name: &str) -> Rc<Class> {
        match self.classes.get(name) {
            Some(c) => c.clone(),
            None => self.classes["Exception"].clone(),
        }
    }

    pub fn lookup(&self, name: &str) -> Option<Rc<Class>> {
        self.classes.get(name).cloned()
    }
}

impl Default for BuiltinClasses {
    fn default() -> Self {
        Self::new()
    }
}

fn new_class(name: &str, bases: Vec<Rc<Class>>, builtin: Option<BuiltinClass>) -> Rc<Class> {
    Rc::new(Class {
        name: Rc::from(name),
        qualname: name.to_string(),
        bases,
        dict: RefCell::new(IndexMap::default()),
        builtin,
        is_dataclass: Default::default(),
        frozen: Default::default(),
        fields: RefCell::new(Vec::new()),
        is_namedtuple: Default::default(),
        pytree: RefCell::new(None),
        def_span: None,
    })
}

pub fn make_exception_instance(class: &Rc<Class>, message: &str) -> Value {
    let mut attrs = IndexMap::default();
    attrs.insert(Rc::from("args"), Value::tuple(vec![Value::str(message)]));
    Value::Instance(Rc::new(Instance { class: class.clone(), attrs: RefCell::new(attrs), tuple: None }))
}

pub fn exception_message(inst: &Instance) -> String {
    match inst.attrs.borrow().get("args") {
        Some(Value::Tuple(args)) => match args.as_slice() {
            [] => String::new(),
            [Value::Str(s)] => s.to_string(),
            [Value::Int(i)] => i.to_string(),
            [Value::Float(f)] => super::value::repr_float(*f),
            // Several arguments print as their tuple, `('a', 1)`, when each is a literal.
            many if many.len() > 1 && many.iter().all(|a| matches!(a, Value::Str(_) | Value::Int(_) | Value::Float(_))) => {
                let items: Vec<String> = many
                    .iter()
                    .map(|a| match a {
                        Value::Str(s) => super::ops::py_str_repr(s),
                        Value::Int(i) => i.to_string(),
                        Value::Float(f) => super::value::repr_float(*f),
                        _ => String::new(),
                    })
                    .collect();
                format!("({})", items.join(", "))
            }
            // What an argument tracelens does not know (or cannot print without the
            // interpreter) says is not known: never a made-up text.
            _ => "(a message tracelens does not know)".to_string(),
        },
        _ => String::new(),
    }
}

impl<'l> Interp<'l> {
    pub fn builtin_value(&self, name: &str) -> Option<Value> {
        if let Some(c) = self.classes.lookup(name) {
            if name != "Field"
                && name != "Enum"
                && name != "NamedTuple"
                && name != "FrozenInstanceError"
                && !name.starts_with("JAX")
                && !name.contains("Tracer")
                && name != "ConcretizationTypeError"
                && name != "KeyReuseError"
                && name != "NonConcreteBooleanIndexError"
            {
                return Some(Value::Class(c));
            }
        }
        match name {
            "None" => Some(Value::None),
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "__name__" => Some(Value::str("__main__")),
            "Ellipsis" => Some(Value::Ellipsis),
            "__debug__" => Some(Value::Bool(true)),
            _ => match BUILTIN_FNS.iter().find(|n| **n == name) {
                Some(n) => Some(Value::Builtin(Rc::new(Builtin::Fn(n)))),
                // A builtin CPython has and the interpreter does not model (`bytearray`,
                // `exec`, `memoryview`): callable, and what it returns is unknown.
                None => match super::stdlib::builtin(name)? {
                    (_, super::stdlib::BuiltinKind::Alias { of }) => self.builtin_value(of),
                    (n, _) => Some(Value::Builtin(Rc::new(Builtin::Fn(n)))),
                },
            },
        }
    }

    pub fn call_builtin(&mut self, b: &Rc<Builtin>, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        match &**b {
            Builtin::Fn(name) => {
                if let Some(v) = self.call_python_builtin(name, &args, &kwargs)? {
                    return Ok(v);
                }
                super::modules::call_stdlib(self, name, args, kwargs)
            }
            Builtin::Method { recv, name } => self.call_method(recv, name, args, kwargs),
            Builtin::Jax(f) => crate::interp::model::api::call_jax_fn(self, *f, args, kwargs),
            Builtin::Object(o) => crate::interp::model::api::call_jax_object(self, o, args, kwargs),
            Builtin::Partial { func, args: a0, kwargs: k0, .. } => {
                let mut all = a0.clone();
                all.extend(args);
                let mut kw = k0.clone();
                for (k, v) in kwargs {
                    kw.retain(|(n, _)| *n != k);
                    kw.push((k, v));
                }
                self.call(func, all, kw)
            }
            Builtin::Super { .. } => Err(self.type_error("'super' object is not callable")),
            Builtin::Tf(t) => crate::interp::model::tf::call(self, t, args, kwargs),
        }
    }

    fn call_python_builtin(&mut self, name: &str, args: &[Value], kwargs: &Kwargs) -> PyResult<Option<Value>> {
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
        let kw = |k: &str| kwargs.iter().find(|(n, _)| n.as_ref() == k).map(|(_, v)| v.clone());
        if let (Some(Value::UnknownNumber(is_float)), "int" | "float" | "abs" | "round" | "min" | "max") = (args.first(), name) {
            return Ok(Some(Value::UnknownNumber(match name {
                "int" => false,
                "float" => true,
                _ => *is_float,
            })));
        }
        if let (Some(v), "int" | "float" | "complex" | "bool") = (args.first(), name) {
            if let Some(converted) = crate::interp::model::tf::tensor::python_conversion(self, name, v)? {
                return Ok(Some(converted));
            }
        }
        // Python's conversions of a tracer, whatever its aval: JAX's errors.
        if let (Some(v), "int" | "float" | "complex" | "bool") = (args.first(), name) {
            if matches!(v, Value::Opaque(o) if o.tracer) && !self.in_library() {
                return Err(match name {
                    "bool" => crate::interp::model::numpy::unknown_tracer_bool(self, "bool", None),
                    _ => crate::interp::model::numpy::unknown_tracer_to_python(self, name),
                });
            }
        }
        if args.iter().any(|a| a.is_opaque())
            && !matches!(
                name,
                "print"
                    | "isinstance"
                    | "len"
                    | "list"
                    | "tuple"
                    | "hasattr"
                    | "getattr"
                    | "setattr"
                    | "object.__setattr__"
                    | "object.__new__"
                    | "type"
                    | "callable"
                    | "id"
                    | "repr"
                    | "str"
                    // A partial only holds its arguments: calling it passes the unknown on.
                    | "functools.partial"
            )
        {
            return Ok(Some(Value::opaque(format!("result of {name}() on an unknown value"))));
        }
        Ok(Some(match name {
            "print" => {
                crate::interp::model::effects::on_print(self, args)?;
                let sep = match kw("sep") {
                    Some(Value::Str(s)) => s.to_string(),
                    _ => " ".into(),
                };
                let end = match kw("end") {
                    Some(Value::Str(s)) => s.to_string(),
                    _ => "\n".into(),
                };
                let mut parts = Vec::new();
                for a in args {
                    // Nobody reads what an analysis prints (`check`): arrays are not computed
                    // to be printed. Only values whose printing cannot raise or call user code.
                    if self.stdout_unread && self.values.is_none() && printable_without_effects(a, 0, &mut 0) {
                        parts.push(String::new());
                        continue;
                    }
                    match self.to_str(a) {
                        Ok(s) => parts.push(s),
                        Err(super::Flow::Stop(_, site)) => {
                            let at = site.map(|s| format!("{}: ", self.describe_site(s))).unwrap_or_default();
                            if let Some(v) = self.values.as_mut() {
                                v.notes.push(format!("{at}printed <unknown>: a value tracelens does not model"));
                            }
                            parts.push("<unknown>".into())
                        }
                        Err(e) => return Err(e),
                    }
                }
                if let Some(stream) = super::streams::print_target(kw("file").as_ref()) {
                    self.write_stream(stream, &parts.join(&sep));
                    self.write_stream(stream, &end);
                }
                Value::None
            }
            "len" => match &arg(0) {
                v if self.is_unsized(v) => Value::UnknownNumber(false),
                Value::Str(s) => Value::Int(s.chars().count() as i64),
                Value::List(l) => Value::Int(l.borrow().len() as i64),
                Value::Tuple(t) => Value::Int(t.len() as i64),
                Value::Dict(d) | Value::Set(d) => Value::Int(d.borrow().len() as i64),
                Value::Range(a, b, s) => match i64::try_from(super::ops::range_len_exact(*a, *b, *s)) {
                    Ok(n) => Value::Int(n),
                    Err(_) => {
                        return Err(self.raise("OverflowError", Code::PythonException, "Python int too large to convert to C ssize_t"))
                    }
                },
                Value::Array(a) if a.tf.get() && a.is_tracer() => Value::UnknownNumber(false),
                v if crate::interp::model::tf::partial::of(v).is_some() => Value::UnknownNumber(false),
                Value::Array(a) => match a.aval.shape.first() {
                    Some(n) => Value::Int(*n as i64),
                    None => return Err(self.type_error("len() of unsized object")),
                },
                Value::Builtin(b) if let Some(dims) = crate::interp::model::tf::shape_dims(b) => Value::Int(dims.len() as i64),
                Value::Opaque(_) => Value::opaque("len of an unknown value"),
                // An enum class: its members, which the interpreter counts when their values
                // are distinct literals (equal ones are aliases).
                Value::Class(c) if super::stdlib::is_enum(c) => super::stdlib::enum_len(c).map_or(Value::UnknownNumber(false), Value::Int),
                v @ Value::Instance(inst) => match &inst.tuple {
                    Some(t) => Value::Int(t.len() as i64),
                    None => match self.call_dunder(v, "__len__", Vec::new())? {
                        Some(n) => n,
                        None => return Err(self.type_error(format!("object of type '{}' has no len()", inst.class.name))),
                    },
                },
                v => return Err(self.type_error(format!("object of type '{}' has no len()", v.type_name()))),
            },
            "range" => {
                let mut ints = Vec::new();
                for a in args {
                    match self.index_of(a)? {
                        Some(i) => ints.push(i),
                        None => {
                            let msg = format!("'{}' object cannot be interpreted as an integer", a.type_name());
                            if let Some(flow) =
                                a.is_none().then(|| crate::interp::model::tf::partial::none_dimension_error(self, &msg)).flatten()
                            {
                                return Err(flow);
                            }
                            return Err(self.type_error(msg));
                        }
                    }
                }
                match ints.as_slice() {
                    [b] => Value::Range(0, *b, 1),
                    [a, b] => Value::Range(*a, *b, 1),
                    [a, b, s] => {
                        if *s == 0 {
                            return Err(self.value_error("range() arg 3 must not be zero"));
                        }
                        Value::Range(*a, *b, *s)
                    }
                    _ => return Err(self.type_error("range expected at most 3 arguments")),
                }
            }
            "enumerate" => {
                let start = match kw("start").or_else(|| args.get(1).cloned()) {
                    Some(v) => as_int(&v).unwrap_or(0),
                    None => 0,
                };
                let inner = self.get_iter(&arg(0))?;
                self.make_lazy(Lazy::Enumerate { inner, next: start })
            }
            "zip" => {
                let strict = match kw("strict") {
                    Some(v) => self.truthy(&v)?,
                    None => false,
                };
                let inners = self.iterators_of(args)?;
                self.make_lazy(Lazy::Zip { inners, strict })
            }
            "map" if args.len() < 2 => return Err(self.type_error("map() must have at least two arguments.")),
            "map" => {
                let inners = self.iterators_of(&args[1..])?;
                self.make_lazy(Lazy::Map { f: args[0].clone(), inners })
            }
            "filter" => {
                let inner = self.get_iter(&arg(1))?;
                self.make_lazy(Lazy::Filter { f: arg(0), inner })
            }
            "sum" => {
                let mut acc = kw("start").or_else(|| args.get(1).cloned()).unwrap_or(Value::Int(0));
                for x in self.iterate(&arg(0))? {
                    self.tick()?;
                    acc = self.binary_op(crate::syntax::ast::BinOp::Add, acc, x)?;
                }
                acc
            }
            "min" | "max" => {
                let items = if args.len() == 1 { self.iterate(&arg(0))? } else { args.to_vec() };
                let key = kw("key");
                if items.is_empty() {
                    if let Some(d) = kw("default") {
                        return Ok(Some(d));
                    }
                    return Err(self.value_error(format!("{name}() iterable argument is empty")));
                }
                let mut best = items[0].clone();
                let mut best_key = match &key {
                    Some(k) => self.call(k, vec![best.clone()], Vec::new())?,
                    None => best.clone(),
                };
                for x in items.into_iter().skip(1) {
                    let xk = match &key {
                        Some(k) => self.call(k, vec![x.clone()], Vec::new())?,
                        None => x.clone(),
                    };
                    let op = if name == "min" { crate::syntax::ast::CmpOp::Lt } else { crate::syntax::ast::CmpOp::Gt };
                    let better = self.compare(op, &xk, &best_key)?;
                    match crate::interp::model::numpy::python_bool(self, &better, "bool") {
                        Ok(true) => {
                            best = x;
                            best_key = xk;
                        }
                        Ok(false) => {}
                        // Concrete numbers whose values are not computed: the result is one of
                        // them, so it has their promoted aval and an unknown value.
                        Err(super::Flow::Stop(super::StopReason::Unknown(_), _)) if key.is_none() => {
                            match unknown_extremum(self, &best, &x)? {
                                Some(v) => {
                                    best = v.clone();
                                    best_key = v;
                                }
                                None => return Err(self.stop_unknown(format!("{name}() of values that are not computed"))),
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                best
            }
            "abs" => match &arg(0) {
                Value::Int(i) => super::int_math::abs(*i),
                Value::Bool(b) => Value::Int(*b as i64),
                Value::Float(f) => Value::Float(f.abs()),
                Value::Complex(a, b) => Value::Float(a.hypot(*b)),
                Value::Array(a) => crate::interp::model::numpy::abs(self, a)?,
                v => match self.call_dunder(v, "__abs__", Vec::new())? {
                    Some(r) => r,
                    None => return Err(self.type_error(format!("bad operand type for abs(): '{}'", v.type_name()))),
                },
            },
            "round" => {
                let digits = args.get(1).cloned().or_else(|| kw("ndigits"));
                match (&arg(0), digits.as_ref().and_then(as_int)) {
                    (Value::Float(f), None) => super::int_math::float_to_int(round_half_even(*f))
                        .map_err(|(class, message)| self.raise(class, Code::PythonException, message))?,
                    (Value::Float(f), Some(d)) => Value::Float(super::int_math::round_float(*f, d, round_half_even)),
                    (Value::Int(i), Some(d)) => super::int_math::round_int(*i, d),
                    (Value::Int(i), None) => Value::Int(*i),
                    (Value::Array(a), _) => crate::interp::model::numpy::round(self, a, digits)?,
                    (v, _) => return Err(self.type_error(format!("type {} doesn't define __round__ method", v.type_name()))),
                }
            }
            "sorted" => {
                let mut items = self.iterate(&arg(0))?;
                self.sort_values(&mut items, kw("key"), kw("reverse"))?;
                self.new_list(items)
            }
            "reversed" => {
                let mut items = self.iterate(&arg(0))?;
                items.reverse();
                seq_iter(items, "list_reverseiterator")
            }
            "any" | "all" => {
                let want = name == "any";
                for x in self.iterate(&arg(0))? {
                    if crate::interp::model::numpy::python_bool(self, &x, "bool")? == want {
                        return Ok(Some(Value::Bool(want)));
                    }
                }
                Value::Bool(!want)
            }
            "isinstance" => match self.isinstance(&arg(0), &arg(1))? {
                Some(b) => Value::Bool(b),
                None => Value::opaque("isinstance with an unknown type"),
            },
            "issubclass" => match (&arg(0), &arg(1)) {
                (Value::Class(a), Value::Class(b)) => Value::Bool(a.is_subclass_of(b)),
                _ => Value::opaque("issubclass"),
            },
            "int" => match &arg(0) {
                Value::None if args.is_empty() => Value::Int(0),
                Value::Int(i) => Value::Int(*i),
                Value::Bool(b) => Value::Int(*b as i64),
                Value::Float(f) => super::int_math::float_to_int(f.trunc())
                    .map_err(|(class, message)| self.raise(class, Code::PythonException, message))?,
                Value::Str(s) => match s.trim().replace('_', "").parse::<i64>() {
                    Ok(i) => Value::Int(i),
                    Err(_) if super::int_math::is_decimal_literal(s) => Value::opaque("an integer too large to model"),
                    Err(_) => {
                        return Err(self.value_error(format!("invalid literal for int() with base 10: {}", super::ops::py_str_repr(s))))
                    }
                },
                Value::Array(a) => crate::interp::model::numpy::array_to_python(self, a, "int")?,
                v => {
                    return Err(self.type_error(format!(
                        "int() argument must be a string, a bytes-like object or a real number, not '{}'",
                        v.type_name()
                    )))
                }
            },
            "float" => match &arg(0) {
                Value::None if args.is_empty() => Value::Float(0.0),
                Value::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
                    "inf" | "+inf" | "infinity" => Value::Float(f64::INFINITY),
                    "-inf" | "-infinity" => Value::Float(f64::NEG_INFINITY),
                    "nan" => Value::Float(f64::NAN),
                    t => match t.parse::<f64>() {
                        Ok(f) => Value::Float(f),
                        Err(_) => {
                            return Err(self.value_error(format!("could not convert string to float: {}", super::ops::py_str_repr(s))))
                        }
                    },
                },
                Value::Array(a) => crate::interp::model::numpy::array_to_float(self, a)?,
                v => match as_f64(v) {
                    Some(f) => Value::Float(f),
                    None => {
                        return Err(self.type_error(format!("float() argument must be a string or a real number, not '{}'", v.type_name())))
                    }
                },
            },
            "complex" => match (&arg(0), &arg(1)) {
                (a, Value::None) => Value::Complex(as_f64(a).unwrap_or(0.0), 0.0),
                (a, b) => Value::Complex(as_f64(a).unwrap_or(0.0), as_f64(b).unwrap_or(0.0)),
            },
            "bool" => {
                if args.is_empty() {
                    Value::Bool(false)
                } else if let Value::Array(a) = &arg(0) {
                    // A concrete array whose value is not computed gives an unknown bool, not a stop.
                    if !a.is_tracer() && crate::interp::model::eval::force(self, a, self.budgets.max_elements).is_none() {
                        return Ok(Some(Value::opaque("bool of an array whose value is not computed")));
                    }
                    Value::Bool(crate::interp::model::numpy::python_bool(self, &arg(0), "bool")?)
                } else {
                    Value::Bool(crate::interp::model::numpy::python_bool(self, &arg(0), "bool")?)
                }
            }
            "str" => {
                if args.is_empty() {
                    Value::str("")
                } else {
                    match self.to_str(&arg(0)) {
                        Ok(s) => Value::str(&s),
                        Err(super::Flow::Stop(..)) => Value::opaque("str of an unknown value"),
                        Err(e) => return Err(e),
                    }
                }
            }
            "repr" => match self.repr(&arg(0)) {
                Ok(s) => Value::str(&s),
                Err(super::Flow::Stop(..)) => Value::opaque("repr of an unknown value"),
                Err(e) => return Err(e),
            },
            "format" => {
                let spec = match &arg(1) {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                };
                Value::str(&self.format_value(&arg(0), &spec)?)
            }
            "list" => {
                if arg(0).is_opaque() {
                    return Ok(Some(Value::opaque("list of an unknown iterable")));
                }
                let items = if args.is_empty() { Vec::new() } else { self.iterate(&arg(0))? };
                self.new_list(items)
            }
            "tuple" => {
                if arg(0).is_opaque() {
                    return Ok(Some(Value::opaque("tuple of an unknown iterable")));
                }
                Value::tuple(if args.is_empty() { Vec::new() } else { self.iterate(&arg(0))? })
            }
            "set" | "frozenset" => {
                let items = if args.is_empty() { Vec::new() } else { self.iterate(&arg(0))? };
                self.make_set(items)?
            }
            "dict" => {
                let mut d = Dict::default();
                if let Some(src) = args.first() {
                    let pairs = match src {
                        Value::Dict(_) => self.mapping_items(src)?,
                        other => {
                            let mut pairs = Vec::new();
                            for item in self.iterate(other)? {
                                let kv = self.iterate(&item)?;
                                if kv.len() != 2 {
                                    return Err(self.value_error("dictionary update sequence element has wrong length"));
                                }
                                pairs.push((kv[0].clone(), kv[1].clone()));
                            }
                            pairs
                        }
                    };
                    for (k, v) in pairs {
                        let h = self.hash_key(&k)?;
                        d.insert(h, k, v);
                    }
                }
                for (k, v) in kwargs {
                    d.insert(HashKey::Str(k.clone()), Value::Str(k.clone()), v.clone());
                }
                self.new_dict(d)
            }
            "iter" => self.get_iter(&arg(0))?,
            "next" => {
                let it = arg(0);
                if let Value::Instance(_) = it {
                    // A user iterator: `next(it)` is `it.__next__()`.
                    if let Some(v) = self.call_dunder(&it, "__next__", Vec::new())? {
                        return Ok(Some(v));
                    }
                }
                crate::interp::model::effects::on_next(self, &it)?;
                match self.next_item(&it)? {
                    Some(v) => v,
                    None => match args.get(1) {
                        Some(d) => d.clone(),
                        None => return Err(self.raise("StopIteration", Code::PythonException, "")),
                    },
                }
            }
            "getattr" => {
                let Value::Str(attr) = arg(1) else { return Ok(Some(Value::opaque("getattr"))) };
                match self.getattr_opt(&arg(0), &attr)? {
                    Some(v) => v,
                    None => match args.get(2) {
                        Some(d) => d.clone(),
                        None => {
                            return Err(self.raise(
                                "AttributeError",
                                Code::PythonException,
                                format!("'{}' object has no attribute '{attr}'", arg(0).type_name()),
                            ))
                        }
                    },
                }
            }
            "hasattr" => {
                let Value::Str(attr) = arg(1) else { return Ok(Some(Value::opaque("hasattr"))) };
                if arg(0).is_opaque() {
                    return Ok(Some(Value::opaque("hasattr on an unknown value")));
                }
                match self.getattr_opt(&arg(0), &attr) {
                    Ok(v) => Value::Bool(v.is_some()),
                    Err(super::Flow::Raise(_)) => Value::Bool(false),
                    Err(e) => return Err(e),
                }
            }
            "setattr" => {
                let Value::Str(attr) = arg(1) else { return Ok(Some(Value::None)) };
                self.setattr(&arg(0), &attr, arg(2))?;
                Value::None
            }
            // `object.__setattr__` skips the class's own `__setattr__`, so a frozen
            // dataclass's too.
            "object.__setattr__" => {
                let Value::Str(attr) = arg(1) else { return Ok(Some(Value::None)) };
                match arg(0) {
                    Value::Instance(inst) if inst.class.frozen.get() && inst.tuple.is_none() => {
                        self.note_mutation(&arg(0), "attribute assignment")?;
                        inst.attrs.borrow_mut().insert(attr, arg(2));
                    }
                    obj => self.setattr(&obj, &attr, arg(2))?,
                }
                Value::None
            }
            // Only a class made of Python code is made here; one deriving a builtin type
            // (`tuple.__new__` reached through it) holds what tracelens does not model.
            "numpy.issubdtype" => super::dtype_hierarchy::issubdtype(&arg(0), &arg(1)),
            "object.__new__" => match arg(0) {
                Value::Class(c) if c.mro().iter().all(|b| b.builtin.is_none() || b.builtin == Some(BuiltinClass::Object)) => {
                    self.bare_instance(&c)
                }
                _ => Value::opaque("the result of object.__new__"),
            },
            "delattr" => Value::None,
            "type" if args.len() == 3 => self.make_type(args)?,
            "type" => match &arg(0) {
                Value::Instance(i) => Value::Class(i.class.clone()),
                v @ Value::Array(_) if crate::interp::model::api::isinstance_jax(self, v, JaxFn::ShapeDtypeStruct) == Some(true) => {
                    Value::Builtin(Rc::new(Builtin::Jax(JaxFn::ShapeDtypeStruct)))
                }
                Value::Opaque(_) => Value::opaque("type of an unknown value"),
                v if crate::interp::model::tf::classes::class_of(v).is_some() => {
                    crate::interp::model::tf::classes::type_of(v).unwrap_or_else(|| Value::opaque("a type"))
                }
                // A value of one of Python's classes. Not `type`: what answers `type` here (a
                // class, a NumPy scalar type) may have another metaclass.
                v => {
                    let name = v.type_name();
                    match PY_TYPES.iter().find(|t| **t == name && **t != "type") {
                        Some(t) => Value::Builtin(Rc::new(Builtin::Fn(t))),
                        None => Value::opaque("a type"),
                    }
                }
            },
            "divmod" => {
                let q = self.binary_op(crate::syntax::ast::BinOp::FloorDiv, arg(0), arg(1))?;
                let r = self.binary_op(crate::syntax::ast::BinOp::Mod, arg(0), arg(1))?;
                Value::tuple(vec![q, r])
            }
            "pow" => match (args.get(2).or(kw("mod").as_ref()).cloned(), as_int(&arg(0)), as_int(&arg(1))) {
                (None | Some(Value::None), _, _) => self.binary_op(crate::syntax::ast::BinOp::Pow, arg(0), arg(1))?,
                (Some(m), Some(base), Some(exp)) if as_int(&m).is_some() => super::int_math::pow_mod(base, exp, as_int(&m).unwrap_or(1))
                    .map_err(|(class, message)| self.raise(class, Code::PythonException, message))?,
                (Some(m), _, _) if [&arg(0), &arg(1), &m].iter().any(|v| v.is_opaque()) => Value::opaque("pow"),
                _ => return Err(self.type_error("pow() 3rd argument not allowed unless all arguments are integers")),
            },
            "callable" => Value::Bool(
                matches!(arg(0), Value::Function(_) | Value::Builtin(_) | Value::BoundMethod(_) | Value::Class(_))
                    || matches!(&arg(0), Value::Instance(i) if i.class.lookup("__call__").is_some()),
            ),
            "id" => Value::Int(arg(0).identity().unwrap_or(0) as i64),
            "hash" => match self.hash_key(&arg(0))? {
                HashKey::Int(i) => Value::Int(i),
                _ => Value::opaque("a hash"),
            },
            "chr" => match as_int(&arg(0)).map(super::int_math::chr) {
                Some(Ok(Some(c))) => Value::str(c.encode_utf8(&mut [0; 4])),
                Some(Err((class, message))) => return Err(self.raise(class, Code::PythonException, message)),
                _ => Value::opaque("a character"),
            },
            "ord" => match &arg(0) {
                Value::Str(s) => Value::Int(s.chars().next().map(|c| c as i64).unwrap_or(0)),
                _ => return Err(self.type_error("ord() expected a character")),
            },
            "slice" => match args.len() {
                1 => Value::Slice(Rc::new([Value::None, arg(0), Value::None])),
                2 => Value::Slice(Rc::new([arg(0), arg(1), Value::None])),
                _ => Value::Slice(Rc::new([arg(0), arg(1), arg(2)])),
            },
            "property" => Value::Property(Rc::new(Property { fget: arg(0), fset: kw("fset").or_else(|| args.get(1).cloned()) })),
            "staticmethod" => Value::StaticMethod(Rc::new(arg(0))),
            "classmethod" => Value::ClassMethod(Rc::new(arg(0))),
            "super" => self.make_super(args)?,
            // An instance's attributes, as a new dict (a snapshot: writes to it do not reach the object).
            "vars" if matches!(arg(0), Value::Instance(_)) => {
                let Value::Instance(i) = arg(0) else { return Ok(Some(Value::opaque("result of vars()"))) };
                let mut d = Dict::default();
                for (k, v) in i.attrs.borrow().iter() {
                    d.insert(HashKey::Str(k.clone()), Value::Str(k.clone()), v.clone());
                }
                Value::Dict(Rc::new(RefCell::new(d)))
            }
            "open" | "input" | "vars" | "globals" | "locals" => Value::opaque(format!("result of {name}()")),
            "exit" | "quit" => return Err(self.stop_end("the program exits")),
            "NotImplemented" => Value::None,
            _ => return Ok(None),
        }))
    }

    /// `type(name, bases, namespace)`: a new class, as a `class` statement would make. A base
    /// the interpreter does not model makes its instances unknown, as in `make_class`.
    fn make_type(&mut self, args: &[Value]) -> PyResult<Value> {
        let (Value::Str(name), Value::Tuple(base_values), Value::Dict(namespace)) = (&args[0], &args[1], &args[2]) else {
            return Ok(Value::opaque("a class made by type()"));
        };
        let mut bases = Vec::new();
        let mut opaque_base = false;
        for b in base_values.iter() {
            match b {
                Value::Class(c) => bases.push(c.clone()),
                _ => opaque_base = true,
            }
        }
        if bases.is_empty() {
            bases.push(self.classes.get("object"));
        }
        let class = new_class(name, bases, None);
        for (k, v) in namespace.borrow().items() {
            if let Value::Str(k) = k {
                class.dict.borrow_mut().insert(k, v);
            }
        }
        if opaque_base {
            class.dict.borrow_mut().insert(Rc::from("__tracelens_opaque_base__"), Value::Bool(true));
        }
        Ok(Value::Class(class))
    }

    /// What a `for` loop sees of an object whose `__iter__` returned `it`, a user object with
    /// `__next__`: the items `__next__` returns until it raises `StopIteration`, collected
    /// as a generator's are (another exception is replayed where the consumer reaches it; an
    /// iterator that does not end is followed for `MAX_USER_ITEMS` items, then unknown).
    pub fn drain_user_iterator(&mut self, it: &Value) -> PyResult<Value> {
        const MAX_USER_ITEMS: usize = 10_000;
        let Value::Instance(inst) = it else { return self.get_iter(it) };
        if inst.class.lookup("__next__").is_none() {
            return Err(self.type_error(format!("iter() returned non-iterator of type '{}'", inst.class.name)));
        }
        let mut items = Vec::new();
        let end = loop {
            if items.len() >= MAX_USER_ITEMS {
                break super::value::GeneratorEnd::Truncated(format!("a {} iterator that did not end", inst.class.name));
            }
            match self.call_dunder(it, "__next__", Vec::new()) {
                Ok(Some(v)) => items.push(v),
                Ok(None) => break super::value::GeneratorEnd::Returned,
                Err(super::Flow::Raise(exc)) if exc.class.is_subclass_of(&self.classes.get("StopIteration")) => {
                    break super::value::GeneratorEnd::Returned
                }
                Err(super::Flow::Raise(exc)) => break super::value::GeneratorEnd::Raised(exc),
                Err(other) => return Err(other),
            }
        };
        let name: Rc<str> = inst.class.name.clone();
        Ok(Value::Iterator(Rc::new(RefCell::new(PyIter::Generator { items: Rc::new(items), pos: 0, name, end: Rc::new(end) }))))
    }

    fn make_super(&mut self, args: &[Value]) -> PyResult<Value> {
        let (class, obj) = match args {
            [Value::Class(c), obj] => (c.clone(), obj.clone()),
            _ => {
                let Some(frame) = self.frames.last() else {
                    return Ok(Value::opaque("super"));
                };
                match (&frame.class, &frame.self_value) {
                    (Some(c), Some(s)) => (c.clone(), s.clone()),
                    _ => return Ok(Value::opaque("super() outside a method")),
                }
            }
        };
        Ok(Value::Builtin(Rc::new(Builtin::Super { class, obj })))
    }

    pub fn isinstance(&mut self, v: &Value, typ: &Value) -> PyResult<Option<bool>> {
        // An unknown may be of any type; one certainly a tracer is an array, of no Python type.
        if matches!(v, Value::Opaque(o) if !o.tracer) && !matches!(typ, Value::Tuple(_)) {
            return Ok(None);
        }
        Ok(Some(match typ {
            Value::Tuple(types) => {
                for t in types.iter() {
                    match self.isinstance(v, t)? {
                        Some(true) => return Ok(Some(true)),
                        Some(false) => {}
                        None => return Ok(None),
                    }
                }
                false
            }
            Value::Class(c) => match v {
                Value::Instance(i) => i.class.is_subclass_of(c),
                Value::Opaque(_) => return Ok(None),
                _ => c.builtin == Some(BuiltinClass::Object),
            },
            Value::Builtin(b) => match &**b {
                Builtin::Fn(name) => {
                    let tn = v.type_name();
                    match *name {
                        // A number whose value is not known: an int when no path made it a float.
                        "int" if matches!(v, Value::UnknownNumber(false)) => true,
                        "int" | "float" | "bool" | "complex" if matches!(v, Value::UnknownNumber(_)) => return Ok(None),
                        "int" => matches!(v, Value::Int(_) | Value::Bool(_)),
                        "float" => matches!(v, Value::Float(_)),
                        n if n.starts_with("numpy.") => match super::dtype_hierarchy::isinstance(v, n) {
                            Some(b) => b,
                            None => return Ok(None),
                        },
                        "tuple" => matches!(v, Value::Tuple(_)) || matches!(v, Value::Instance(i) if i.tuple.is_some()),
                        "tensorflow.Tensor" | "tensorflow.IndexedSlices" => match crate::interp::model::tf::classes::is_instance(v, name) {
                            Some(b) => b,
                            None => return Ok(None),
                        },
                        // chex names a wrapped function by `fn.func.__name__` when it is a partial.
                        "functools.partial" => match v {
                            Value::Builtin(b) => matches!(**b, Builtin::Partial { .. }),
                            Value::Instance(i) if i.class.lookup("__tracelens_opaque_base__").is_some() => return Ok(None),
                            _ => false,
                        },
                        n if PY_TYPES.contains(&n) => tn == n,
                        n if n.starts_with("collections.abc.") => match abc_instance(v, &n["collections.abc.".len()..]) {
                            Some(b) => b,
                            None => return Ok(None),
                        },
                        _ => return Ok(None),
                    }
                }
                Builtin::Jax(f) => match crate::interp::model::api::isinstance_jax(self, v, *f) {
                    Some(b) => b,
                    None => return Ok(None),
                },
                Builtin::Tf(t) => match crate::interp::model::tf::isinstance(self, v, t) {
                    Some(b) => b,
                    None => return Ok(None),
                },
                _ => return Ok(None),
            },
            Value::Opaque(_) => return Ok(None),
            _ => return Ok(None),
        }))
    }

    pub fn sort_values(&mut self, items: &mut Vec<Value>, key: Option<Value>, reverse: Option<Value>) -> PyResult<()> {
        let mut keyed = Vec::with_capacity(items.len());
        for x in items.drain(..) {
            let k = match &key {
                Some(k) if !k.is_none() => self.call(k, vec![x.clone()], Vec::new())?,
                _ => x.clone(),
            };
            keyed.push((k, x));
        }
        // Insertion sort through the interpreter's comparison keeps errors (and unknowns) exact.
        let mut sorted: Vec<(Value, Value)> = Vec::with_capacity(keyed.len());
        for (k, x) in keyed {
            let mut pos = sorted.len();
            while pos > 0 {
                let ord = self.py_cmp(&k, &sorted[pos - 1].0)?;
                match ord {
                    Some(std::cmp::Ordering::Less) => pos -= 1,
                    Some(_) => break,
                    // Numbers (or tuples of them) whose values are not known: their order is
                    // not known either, which is no error of the program's.
                    None if unknown_order(&k) || unknown_order(&sorted[pos - 1].0) => {
                        return Err(self.stop_unknown("sorting values whose order is not known"))
                    }
                    None => return Err(self.type_error("'<' not supported between instances")),
                }
            }
            sorted.insert(pos, (k, x));
        }
        let rev = match reverse {
            Some(r) => self.truthy(&r)?,
            None => false,
        };
        items.extend(sorted.into_iter().map(|(_, x)| x));
        if rev {
            items.reverse();
        }
        Ok(())
    }

    fn call_method(&mut self, recv: &Value, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
        if let Some(stream) = super::streams::Stream::of(recv) {
            return self.call_stream_method(stream, name, &args);
        }
        match recv {
            // `Point._make(iterable)`: the named tuple of the iterable's items.
            Value::Class(_) if name == "_make" => {
                let items = self.iterate(&arg(0))?;
                self.call(recv, items, Vec::new())
            }
            Value::List(list) => {
                match name {
                    "append" | "extend" | "insert" | "pop" | "remove" | "clear" | "sort" | "reverse" => {
                        self.note_mutation(recv, &format!("list.{name}"))?;
                        if name == "append" || name == "insert" {
                            let site = self.site();
                            crate::interp::model::state::check_tracer_store(self, recv, args.last().unwrap_or(&Value::None), site);
                        }
                    }
                    _ => {}
                }
                Ok(match name {
                    "append" => {
                        list.borrow_mut().push(arg(0));
                        Value::None
                    }
                    "extend" => {
                        let items = self.iterate(&arg(0))?;
                        let bytes = (list.borrow().len() + items.len()) as u128 * super::memory::VALUE_BYTES;
                        self.afford_or_stop(bytes, "the extended list")?;
                        list.borrow_mut().extend(items);
                        Value::None
                    }
                    "insert" => {
                        let n = list.borrow().len() as i64;
                        let i = as_int(&arg(0)).unwrap_or(0);
                        let i = if i < 0 { (i + n).max(0) } else { i.min(n) };
                        list.borrow_mut().insert(i as usize, arg(1));
                        Value::None
                    }
                    "pop" => {
                        let n = list.borrow().len() as i64;
                        if n == 0 {
                            return Err(self.raise("IndexError", Code::PythonException, "pop from empty list"));
                        }
                        let i = if args.is_empty() { n - 1 } else { as_int(&arg(0)).unwrap_or(n - 1) };
                        let i = if i < 0 { i + n } else { i };
                        if i < 0 || i >= n {
                            return Err(self.raise("IndexError", Code::PythonException, "pop index out of range"));
                        }
                        list.borrow_mut().remove(i as usize)
                    }
                    "remove" => {
                        let items = list.borrow().clone();
                        for (i, x) in items.iter().enumerate() {
                            if self.py_eq(x, &arg(0))? {
                                list.borrow_mut().remove(i);
                                return Ok(Value::None);
                            }
                        }
                        return Err(self.value_error("list.remove(x): x not in list"));
                    }
                    "clear" => {
                        list.borrow_mut().clear();
                        Value::None
                    }
                    "reverse" => {
                        list.borrow_mut().reverse();
                        Value::None
                    }
                    "sort" => {
                        let mut items = list.borrow().clone();
                        let key = kwargs.iter().find(|(k, _)| k.as_ref() == "key").map(|(_, v)| v.clone());
                        let rev = kwargs.iter().find(|(k, _)| k.as_ref() == "reverse").map(|(_, v)| v.clone());
                        self.sort_values(&mut items, key, rev)?;
                        *list.borrow_mut() = items;
                        Value::None
                    }
                    "copy" => {
                        let items = list.borrow().clone();
                        self.new_list(items)
                    }
                    "index" | "count" => {
                        let items = list.borrow().clone();
                        self.seq_index_count(name, &items, &arg(0))?
                    }
                    _ => return self.unmodelled_method(recv, name),
                })
            }
            Value::Tuple(t) => match name {
                "index" | "count" => self.seq_index_count(name, t, &arg(0)),
                _ => self.unmodelled_method(recv, name),
            },
            Value::Instance(inst) if inst.tuple.is_some() => match name {
                "_replace" => {
                    let mut items = inst.tuple.clone().unwrap_or_default();
                    let fields = inst.class.fields.borrow().clone();
                    for (k, v) in kwargs {
                        if let Some(i) = fields.iter().position(|f| *f == k) {
                            items[i] = v;
                        }
                    }
                    Ok(Value::Instance(Rc::new(Instance {
                        class: inst.class.clone(),
                        attrs: RefCell::new(IndexMap::default()),
                        tuple: Some(items),
                    })))
                }
                "_asdict" => {
                    let mut d = Dict::default();
                    let fields = inst.class.fields.borrow().clone();
                    for (f, v) in fields.iter().zip(inst.tuple.clone().unwrap_or_default()) {
                        d.insert(HashKey::Str(f.clone()), Value::Str(f.clone()), v);
                    }
                    Ok(self.new_dict(d))
                }
                "index" | "count" => self.seq_index_count(name, &inst.tuple.clone().unwrap_or_default(), &arg(0)),
                _ => self.unmodelled_method(recv, name),
            },
            Value::Dict(d) => {
                if matches!(name, "update" | "pop" | "setdefault" | "clear" | "popitem") {
                    self.note_mutation(recv, &format!("dict.{name}"))?;
                }
                if self.is_unsized(recv) {
                    if let Some(v) = self.unsized_dict_method(d, name, &args)? {
                        return Ok(v);
                    }
                }
                Ok(match name {
                    "get" => {
                        let h = self.hash_key(&arg(0))?;
                        d.borrow().get(&h).cloned().unwrap_or_else(|| arg(1))
                    }
                    // A keys view is set-like (`{"a"} <= d.keys()`, `d.keys() == {"a", "b"}`,
                    // `d.keys() - {"a"}`) and iterates in the dict's order: a set holding the
                    // keys in that order.
                    "keys" => {
                        let entries = d.borrow().entries.iter().map(|(h, (k, _))| (h.clone(), (k.clone(), Value::None))).collect();
                        let v = Value::Set(Rc::new(RefCell::new(Dict { entries })));
                        crate::interp::model::state::note_born(self, &v);
                        v
                    }
                    "values" => seq_value(d.borrow().values(), "dict_values"),
                    "items" => seq_value(d.borrow().items().into_iter().map(|(k, v)| Value::tuple(vec![k, v])).collect(), "dict_items"),
                    "update" => {
                        let mut pairs = if args.is_empty() { Vec::new() } else { self.mapping_items(&arg(0))? };
                        pairs.extend(kwargs.into_iter().map(|(k, v)| (Value::Str(k), v)));
                        for (k, v) in pairs {
                            let h = self.hash_key(&k)?;
                            d.borrow_mut().insert(h, k, v);
                        }
                        Value::None
                    }
                    "pop" => {
                        let h = self.hash_key(&arg(0))?;
                        let removed = d.borrow_mut().entries.shift_remove(&h);
                        match removed {
                            Some((_, v)) => v,
                            None if args.len() > 1 => arg(1),
                            None => {
                                return Err(self.key_error(&arg(0))?);
                            }
                        }
                    }
                    "setdefault" => {
                        let h = self.hash_key(&arg(0))?;
                        let existing = d.borrow().get(&h).cloned();
                        match existing {
                            Some(v) => v,
                            None => {
                                d.borrow_mut().insert(h, arg(0), arg(1));
                                arg(1)
                            }
                        }
                    }
                    "copy" => {
                        let c = d.borrow().clone();
                        self.new_dict(c)
                    }
                    "clear" => {
                        d.borrow_mut().entries.clear();
                        Value::None
                    }
                    _ => return self.unmodelled_method(recv, name),
                })
            }
            Value::Set(d) => Ok(match name {
                "add" => {
                    self.note_mutation(recv, "set.add")?;
                    let h = self.hash_key(&arg(0))?;
                    d.borrow_mut().insert(h, arg(0), Value::None);
                    Value::None
                }
                "update" => {
                    for x in self.iterate(&arg(0))? {
                        let h = self.hash_key(&x)?;
                        d.borrow_mut().insert(h, x, Value::None);
                    }
                    Value::None
                }
                "discard" | "remove" => {
                    let h = self.hash_key(&arg(0))?;
                    d.borrow_mut().entries.shift_remove(&h);
                    Value::None
                }
                "union" | "intersection" | "difference" => {
                    let other = self.iterate(&arg(0))?;
                    let other = self.make_set(other)?;
                    let op = match name {
                        "union" => crate::syntax::ast::BinOp::BitOr,
                        "intersection" => crate::syntax::ast::BinOp::BitAnd,
                        _ => crate::syntax::ast::BinOp::Sub,
                    };
                    self.binary_op(op, recv.clone(), other)?
                }
                "copy" => Value::Set(Rc::new(RefCell::new(d.borrow().clone()))),
                _ => return self.unmodelled_method(recv, name),
            }),
            Value::Str(s) => self.str_method(s, name, &args, &kwargs),
            Value::Float(f) => match name {
                "is_integer" => Ok(Value::Bool(f.fract() == 0.0)),
                "conjugate" => Ok(Value::Float(*f)),
                _ => self.unmodelled_method(recv, name),
            },
            Value::Int(i) => match name {
                "bit_length" => Ok(Value::Int(64 - i.unsigned_abs().leading_zeros() as i64)),
                "conjugate" => Ok(Value::Int(*i)),
                _ => self.unmodelled_method(recv, name),
            },
            Value::Array(a) if a.tf.get() => {
                let mut all = vec![recv.clone()];
                all.extend(args.iter().cloned());
                let refs: Vec<&Value> = all.iter().collect();
                let kw = kwargs.clone();
                crate::interp::model::stmt::recorded(self, crate::interp::model::stmt::Call::Method(name.to_string()), &refs, &kw, |this| {
                    crate::interp::model::tf::tensor::call_method(this, a, name, args, kwargs)
                })
            }
            Value::Array(a) => {
                let mut all = vec![recv.clone()];
                all.extend(args.iter().cloned());
                let refs: Vec<&Value> = all.iter().collect();
                let kw = kwargs.clone();
                crate::interp::model::stmt::recorded(self, crate::interp::model::stmt::Call::Method(name.to_string()), &refs, &kw, |this| {
                    crate::interp::model::numpy::call_array_method(this, a, name, args, kwargs)
                })
            }
            Value::Builtin(b) => match &**b {
                Builtin::Object(o) => crate::interp::model::api::call_object_method(self, o, name, args, kwargs),
                Builtin::Tf(t) => crate::interp::model::tf::call_method(self, t, name, args, kwargs),
                Builtin::Fn("numpy.random.Generator") => super::modules::numpy_random(self, name, &args, &kwargs),
                Builtin::Fn("logging.Logger") => super::modules::logger_call(self, name, &args),
                _ => self.unmodelled_method(recv, name),
            },
            Value::Iterator(_) if name == "__next__" => self.next_item(recv).map(|v| v.unwrap_or(Value::None)),
            // `@x.setter` makes a new property with the setter; `@x.getter` one with the getter.
            Value::Property(p) => Ok(match name {
                "setter" => Value::Property(Rc::new(Property { fget: p.fget.clone(), fset: Some(arg(0)) })),
                "getter" => Value::Property(Rc::new(Property { fget: arg(0), fset: p.fset.clone() })),
                _ => recv.clone(),
            }),
            _ => self.unmodelled_method(recv, name),
        }
    }

    fn seq_index_count(&mut self, name: &str, items: &[Value], x: &Value) -> PyResult<Value> {
        let mut count = 0;
        for (i, item) in items.iter().enumerate() {
            if self.py_eq(item, x)? {
                if name == "index" {
                    return Ok(Value::Int(i as i64));
                }
                count += 1;
            }
        }
        if name == "index" {
            return Err(self.value_error("tuple.index(x): x not in tuple"));
        }
        Ok(Value::Int(count))
    }

    /// A method call the model has no arm for: unknown if Python's type has the method,
    /// else Python's AttributeError.
    fn unmodelled_method(&self, recv: &Value, name: &str) -> PyResult<Value> {
        if super::ops::python_has_attribute(recv, name) {
            return Ok(Value::opaque(format!("{}.{name}(...)", recv.type_name())));
        }
        Err(self.raise("AttributeError", Code::PythonException, format!("'{}' object has no attribute '{name}'", recv.type_name())))
    }

    fn str_method(&mut self, s: &Rc<str>, name: &str, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
        let sarg = |i: usize| match args.get(i) {
            Some(Value::Str(x)) => Some(x.to_string()),
            _ => None,
        };
        Ok(match name {
            "format" => {
                let mut out = String::new();
                let mut auto = 0usize;
                let mut chars = s.chars().peekable();
                while let Some(c) = chars.next() {
                    if c == '{' {
                        if chars.peek() == Some(&'{') {
                            chars.next();
                            out.push('{');
                            continue;
                        }
                        let mut field = String::new();
                        for n in chars.by_ref() {
                            if n == '}' {
                                break;
                            }
                            field.push(n);
                        }
                        let (name_part, spec) = match field.split_once(':') {
                            Some((a, b)) => (a.to_string(), b.to_string()),
                            None => (field.clone(), String::new()),
                        };
                        let (name_part, conv) = match name_part.split_once('!') {
                            Some((a, b)) => (a.to_string(), b.chars().next()),
                            None => (name_part, None),
                        };
                        let v = if name_part.is_empty() {
                            auto += 1;
                            arg(auto - 1)
                        } else if let Ok(i) = name_part.parse::<usize>() {
                            arg(i)
                        } else {
                            kwargs.iter().find(|(k, _)| k.as_ref() == name_part).map(|(_, v)| v.clone()).unwrap_or(Value::None)
                        };
                        let text = match conv {
                            Some('r') => self.repr(&v)?,
                            _ => self.format_value(&v, &spec)?,
                        };
                        out.push_str(&text);
                    } else if c == '}' && chars.peek() == Some(&'}') {
                        chars.next();
                        out.push('}');
                    } else {
                        out.push(c);
                    }
                }
                Value::str(&out)
            }
            "join" => {
                let mut parts: Vec<Rc<str>> = Vec::new();
                for x in self.iterate(&arg(0))? {
                    match x {
                        Value::Str(p) => parts.push(p),
                        Value::Opaque(_) => return Ok(Value::opaque("text joined from an unknown value")),
                        other => {
                            return Err(self.type_error(format!("sequence item 0: expected str instance, {} found", other.type_name())))
                        }
                    }
                }
                let bytes = parts.iter().map(|p| p.len() as u128).sum::<u128>() + parts.len() as u128 * s.len() as u128;
                if !self.afford(bytes, "the joined string")? {
                    return Ok(Value::opaque("the joined string"));
                }
                let mut joined = String::with_capacity(bytes as usize);
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        joined.push_str(s);
                    }
                    joined.push_str(part);
                }
                Value::str(&joined)
            }
            "split" => {
                let count = match sarg(0) {
                    Some(sep) if sep.is_empty() => return Err(self.value_error("empty separator")),
                    Some(sep) => s.matches(sep.as_str()).count() + 1,
                    None => s.split_whitespace().count(),
                };
                // Each part is a value in the list and a string of its own.
                if !self.afford(s.len() as u128 + count as u128 * (super::memory::VALUE_BYTES + 32), "the split parts")? {
                    return Ok(Value::opaque("the split parts"));
                }
                let parts: Vec<Value> = match sarg(0) {
                    Some(sep) => s.split(sep.as_str()).map(Value::str).collect(),
                    None => s.split_whitespace().map(Value::str).collect(),
                };
                self.new_list(parts)
            }
            "strip" => Value::str(s.trim()),
            "lstrip" => Value::str(s.trim_start()),
            "rstrip" => Value::str(s.trim_end()),
            "upper" => Value::str(&s.to_uppercase()),
            "lower" => Value::str(&s.to_lowercase()),
            "title" => Value::str(s),
            "startswith" => Value::Bool(sarg(0).map(|p| s.starts_with(p.as_str())).unwrap_or(false)),
            "endswith" => Value::Bool(sarg(0).map(|p| s.ends_with(p.as_str())).unwrap_or(false)),
            "replace" => match (sarg(0), sarg(1)) {
                (Some(a), Some(b)) => {
                    let matches = if a.is_empty() { s.len() + 1 } else { s.len() / a.len() };
                    if !self.afford(s.len() as u128 + matches as u128 * b.len() as u128, "the replaced string")? {
                        return Ok(Value::opaque("the replaced string"));
                    }
                    Value::str(&s.replace(a.as_str(), b.as_str()))
                }
                _ => Value::Str(s.clone()),
            },
            "find" => Value::Int(sarg(0).and_then(|p| s.find(p.as_str())).map(|i| s[..i].chars().count() as i64).unwrap_or(-1)),
            "count" => Value::Int(sarg(0).map(|p| s.matches(p.as_str()).count() as i64).unwrap_or(0)),
            "isdigit" => Value::Bool(!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())),
            "isalpha" => Value::Bool(!s.is_empty() && s.chars().all(|c| c.is_alphabetic())),
            "ljust" | "rjust" | "center" => {
                let w = as_int(&arg(0)).unwrap_or(0).max(0) as usize;
                let align = match name {
                    "ljust" => "<",
                    "rjust" => ">",
                    _ => "^",
                };
                Value::str(&self.format_value(&Value::Str(s.clone()), &format!("{align}{w}"))?)
            }
            "encode" => Value::opaque("bytes"),
            _ => return self.unmodelled_method(&Value::Str(s.clone()), name),
        })
    }
}

/// `max(a, b)` of two numbers (scalars or arrays) whose order is not known: an array of their
/// promoted aval whose value is not known. `None` when they are not both numeric.
fn unknown_extremum(interp: &mut Interp, a: &Value, b: &Value) -> PyResult<Option<Value>> {
    use crate::interp::model::numpy::{operand, Operand};
    let numeric = |v: &Value| matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Array(_) | Value::UnknownNumber(_));
    if !numeric(a) || !numeric(b) {
        return Ok(None);
    }
    let (Operand::Array(x), Operand::Array(y)) = (operand(interp, a)?, operand(interp, b)?) else { return Ok(None) };
    if x.is_tracer() || y.is_tracer() {
        return Ok(None);
    }
    let Ok(shape) = crate::interp::model::numpy::broadcast_shapes(interp, &[&x.aval.shape, &y.aval.shape]) else { return Ok(None) };
    let dt = crate::interp::model::numpy::promote(
        interp,
        &[x.aval.weak_dtype(), y.aval.weak_dtype()],
        crate::interp::model::state::dtype_config(interp),
    );
    let aval = crate::interp::model::aval::Aval { shape, dtype: dt.dtype, weak: dt.weak };
    Ok(Some(Value::Array(crate::interp::model::array::Array::unknown(aval, "an extremum of values that are not computed"))))
}

fn seq_iter(items: Vec<Value>, kind: &'static str) -> Value {
    Value::Iterator(Rc::new(RefCell::new(PyIter::Seq { items: Rc::new(items), pos: 0, kind })))
}

/// Dict views are modelled as tuples: iterable, sized, indexable after `list()`.
fn seq_value(items: Vec<Value>, _kind: &'static str) -> Value {
    Value::tuple(items)
}

fn round_half_even(f: f64) -> f64 {
    let r = f.round();
    if (f - f.trunc()).abs() == 0.5 {
        2.0 * (f / 2.0).round()
    } else {
        r
    }
}

/// Methods of builtin types, bound to their receiver.
pub fn builtin_method(recv: &Value, name: &str) -> Option<Value> {
    let known: &[&str] = match recv {
        Value::List(_) => &["append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "copy", "index", "count"],
        Value::Tuple(_) => &["index", "count"],
        Value::Dict(_) => &["get", "keys", "values", "items", "update", "pop", "setdefault", "copy", "clear"],
        Value::Set(_) => &["add", "update", "discard", "remove", "union", "intersection", "difference", "copy"],
        Value::Str(_) => &[
            "format",
            "join",
            "split",
            "strip",
            "lstrip",
            "rstrip",
            "upper",
            "lower",
            "title",
            "startswith",
            "endswith",
            "replace",
            "find",
            "count",
            "isdigit",
            "isalpha",
            "ljust",
            "rjust",
            "center",
            "encode",
        ],
        Value::Float(_) => &["is_integer", "conjugate"],
        Value::Int(_) => &["bit_length", "conjugate"],
        Value::Instance(i) if i.tuple.is_some() => &["_replace", "_asdict", "index", "count"],
        Value::Iterator(_) => &["__next__"],
        Value::Property(_) => &["setter", "getter", "deleter"],
        _ => &[],
    };
    known.contains(&name).then(|| Value::Builtin(Rc::new(Builtin::Method { recv: recv.clone(), name: Rc::from(name) })))
}

pub fn builtin_getattr(interp: &mut Interp, b: &Rc<Builtin>, name: &str) -> PyResult<Option<Value>> {
    if let Some(stream) = super::streams::Stream::of_builtin(b) {
        return Ok(interp.stream_getattr(stream, name).or_else(|| Some(Value::opaque(format!("{}.{name}", stream.name())))));
    }
    match &**b {
        Builtin::Partial { func, args, kwargs, attrs } => Ok(match name {
            _ if attrs.borrow().contains_key(name) => attrs.borrow().get(name).cloned(),
            // functools.partial's own docstring.
            "__doc__" => Some(Value::str(
                "partial(func, *args, **keywords) - new function with partial application\n    of the given arguments and keywords.\n",
            )),
            "func" => Some(func.clone()),
            "args" => Some(Value::tuple(args.clone())),
            "keywords" => {
                let mut d = Dict::default();
                for (k, v) in kwargs {
                    d.insert(HashKey::Str(k.clone()), Value::Str(k.clone()), v.clone());
                }
                Some(interp.new_dict(d))
            }
            _ => None,
        }),
        Builtin::Object(o) => crate::interp::model::api::object_getattr(interp, b, o, name),
        Builtin::Tf(t) => crate::interp::model::tf::getattr(interp, t, name),
        Builtin::Super { class, obj } => {
            let mro = match obj {
                Value::Instance(i) => i.class.mro(),
                Value::Class(c) => c.mro(),
                _ => return Ok(None),
            };
            let start = mro.iter().position(|c| std::rc::Rc::ptr_eq(c, class)).map(|p| p + 1).unwrap_or(mro.len());
            for c in &mro[start..] {
                if let Some(v) = c.dict.borrow().get(name).cloned() {
                    // `__new__` is a static method even undecorated: `super().__new__(cls)`.
                    if name == "__new__" {
                        return Ok(Some(match v {
                            Value::StaticMethod(f) => (*f).clone(),
                            other => other,
                        }));
                    }
                    return Ok(Some(interp.bind_method(obj, v)));
                }
            }
            // A base class we do not model (a TestCase's `setUp`) may define anything.
            // The flag is in the dict of the class whose bases are unknown: `class` or a later one.
            if mro[start.saturating_sub(1)..].iter().any(|c| c.dict.borrow().contains_key("__tracelens_opaque_base__")) {
                return Ok(Some(Value::opaque(format!("super().{name}"))));
            }
            if name == "__init__" {
                return Ok(Some(Value::Builtin(Rc::new(Builtin::Fn("object.__init__")))));
            }
            if name == "__new__" {
                return Ok(Some(Value::Builtin(Rc::new(Builtin::Fn("object.__new__")))));
            }
            // `super().__init_subclass__(**kwargs)` at the top of a hierarchy: object's, which does nothing.
            if name == "__init_subclass__" {
                return Ok(Some(Value::Builtin(Rc::new(Builtin::Fn("object.__init_subclass__")))));
            }
            Ok(None)
        }
        Builtin::Fn(n) => Ok(match (*n, name) {
            ("logging.Logger", "name" | "level" | "handlers" | "parent" | "propagate" | "disabled" | "filters" | "manager" | "root") => {
                Some(Value::opaque(format!("Logger.{name}")))
            }
            ("numpy.random.Generator" | "logging.Logger", _) => {
                Some(Value::Builtin(Rc::new(Builtin::Method { recv: Value::Builtin(b.clone()), name: Rc::from(name) })))
            }
            (_, "__name__") => Some(Value::str(n.rsplit('.').next().unwrap_or(n))),
            _ => None,
        }),
        Builtin::Jax(f) => crate::interp::model::api::jax_fn_getattr(interp, *f, name),
        Builtin::Method { .. } => Ok(None),
    }
}

pub fn enter_builtin_context(interp: &mut Interp, b: &Rc<Builtin>) -> PyResult<Value> {
    Ok(match &**b {
        // `with tf.GradientTape() as tape:` binds the tape itself, which records from here.
        Builtin::Tf(t) if t.is_tape() => {
            crate::interp::model::tf::call_method(interp, t, "__enter__", Vec::new(), Vec::new())?;
            Value::Builtin(b.clone())
        }
        _ => Value::None,
    })
}

pub fn exit_builtin_context(interp: &mut Interp, b: &Rc<Builtin>) {
    match &**b {
        Builtin::Tf(t) if t.is_tape() => {
            let _ = crate::interp::model::tf::call_method(interp, t, "__exit__", Vec::new(), Vec::new());
        }
        _ => {}
    }
}

/// Whether comparing `v` can need a value the interpreter does not know: an unknown, a number of
/// unknown value, or a tuple or list holding one.
pub(crate) fn unknown_order(v: &Value) -> bool {
    match v {
        Value::Opaque(_) | Value::UnknownNumber(_) => true,
        Value::Tuple(t) => t.iter().any(unknown_order),
        Value::List(l) => l.borrow().iter().any(unknown_order),
        _ => false,
    }
}

/// Printing `v` raises nothing and runs no user code: Python scalars, strings, arrays of at
/// most 64 dimensions (NumPy's limit), and tuples, lists and dicts of those. `seen` counts
/// the values looked at: past 10,000 the answer is no (and printing goes the budgeted way).
pub(super) fn printable_without_effects(v: &Value, depth: usize, seen: &mut usize) -> bool {
    *seen += 1;
    if depth > 8 || *seen > 10_000 {
        return false;
    }
    match v {
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => true,
        Value::Array(a) => a.aval.ndim() <= 64,
        Value::Tuple(t) => t.iter().all(|x| printable_without_effects(x, depth + 1, seen)),
        Value::List(l) => l.borrow().iter().all(|x| printable_without_effects(x, depth + 1, seen)),
        Value::Dict(d) => d
            .borrow()
            .entries
            .values()
            .all(|(k, x)| printable_without_effects(k, depth + 1, seen) && printable_without_effects(x, depth + 1, seen)),
        _ => false,
    }
}

/// `isinstance(v, collections.abc.<abc>)` for the builtin types; `None` for a value whose
/// class may register with the ABC or implement its protocol (instances, unknowns).
fn abc_instance(v: &Value, abc: &str) -> Option<bool> {
    let scalar = matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::None);
    Some(match abc {
        "Mapping" | "MutableMapping" => match v {
            Value::Dict(_) => true,
            Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Set(_) | Value::Range(..) | Value::Array(_) => false,
            _ if scalar => false,
            _ => return None,
        },
        "Sequence" | "MutableSequence" => match v {
            Value::List(_) => true,
            Value::Tuple(_) | Value::Str(_) | Value::Range(..) => abc == "Sequence",
            Value::Dict(_) | Value::Set(_) | Value::Array(_) => false,
            _ if scalar => false,
            _ => return None,
        },
        "Set" => match v {
            Value::Set(_) => true,
            Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Dict(_) | Value::Range(..) | Value::Array(_) => false,
            _ if scalar => false,
            _ => return None,
        },
        // Arrays have `__len__`, `__iter__` and `__contains__`: they are collections.
        "Iterable" | "Collection" | "Sized" | "Container" => match v {
            Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Dict(_) | Value::Set(_) | Value::Range(..) | Value::Array(_) => true,
            _ if scalar => false,
            _ => return None,
        },
        "Callable" => match v {
            Value::Function(_) | Value::BoundMethod(_) | Value::Class(_) => true,
            Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Dict(_) | Value::Set(_) | Value::Range(..) | Value::Array(_) => false,
            _ if scalar => false,
            _ => return None,
        },
        _ => return None,
    })
}
