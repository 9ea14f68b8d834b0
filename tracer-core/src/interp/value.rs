//! Python values as the interpreter holds them. Containers share by `Rc`, as Python objects
//! share by reference; anything the interpreter cannot model is `Opaque`.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::rc::Rc;

/// The interpreter's ordered maps (scopes, dicts, attributes): names are looked up on every
/// line, and foldhash hashes a short key in a few instructions where SipHash takes dozens.
/// Deterministic; hash flooding is no concern for a program's own names.
pub type IndexMap<K, V> = indexmap::IndexMap<K, V, foldhash::fast::FixedState>;
/// The interpreter's unordered maps (modules, native attributes), hashed like `IndexMap`.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

use crate::interp::model::array::Array;
use crate::interp::model::dtypes::DType;
use crate::syntax::ast::{self, Name, Span};

use super::builtins::Builtin;
use super::FileId;

#[derive(Clone, Debug)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Complex(f64, f64),
    Str(Rc<str>),
    Tuple(Rc<Vec<Value>>),
    List(Rc<RefCell<Vec<Value>>>),
    Dict(Rc<RefCell<Dict>>),
    Set(Rc<RefCell<Dict>>),
    Range(i64, i64, i64),
    Slice(Rc<[Value; 3]>),
    Ellipsis,
    Function(Rc<Function>),
    Builtin(Rc<Builtin>),
    BoundMethod(Rc<(Value, Value)>),
    Class(Rc<Class>),
    Instance(Rc<Instance>),
    Module(Rc<ModuleObj>),
    Array(Rc<Array>),
    DType(DType),
    /// A TensorFlow `tf.DType` (`tf.float32`, `tensor.dtype`): the same dtype as `DType`,
    /// equal to it, but printed as TensorFlow prints it (`<dtype: 'float32'>`, repr
    /// `tf.float32`) and with TensorFlow's attributes (`is_floating`, `as_numpy_dtype`).
    TfDType(DType),
    Iterator(Rc<RefCell<PyIter>>),
    Property(Rc<Property>),
    StaticMethod(Rc<Value>),
    ClassMethod(Rc<Value>),
    Cell(Rc<RefCell<Value>>),
    /// A Python number whose value is not known (`random.random()`, `time.time()`): `true`
    /// for a float. Arithmetic keeps it a Python number; JAX sees it as a weak scalar.
    UnknownNumber(bool),
    /// Something the interpreter does not model. Every operation on it is opaque too, and
    /// nothing derived from it ever produces a finding.
    Opaque(Rc<Opaque>),
}

#[derive(Debug)]
pub struct Opaque {
    pub what: String,
    /// Certainly a tracer, of an aval the interpreter does not know (design.md §6): the
    /// result of a `jnp`/`lax` op or of arithmetic on a tracer, inside a trace. Python
    /// control flow on it is JAX's error whatever its aval; a value that is only maybe a
    /// tracer (an argument the interpreter does not know) is never this.
    pub tracer: bool,
    /// May be `None`: `is None` on it is unknown. Other unknowns answer `is None` with False,
    /// a measured choice (design.md §6 would make every one unknown, but on the real projects
    /// that forked so many `if x is None:` defaults that distrax ran out of budget, and lost
    /// its true findings): only values that are `None` in the common case are marked, a
    /// lookup with no default (`os.environ.get(k)`, `d.get(k)` of an unknown mapping) and a
    /// gradient TensorFlow may give as `None`.
    pub maybe_none: bool,
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(Rc::from(s))
    }
    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(RefCell::new(items)))
    }
    /// The dtype a NumPy/JAX dtype or a TensorFlow `tf.DType` stands for.
    pub fn as_dtype(&self) -> Option<DType> {
        match self {
            Value::DType(d) | Value::TfDType(d) => Some(*d),
            _ => None,
        }
    }
    pub fn opaque(what: impl Into<String>) -> Value {
        Value::Opaque(Rc::new(Opaque { what: what.into(), tracer: false, maybe_none: false }))
    }
    /// An unknown that may be `None` (`Opaque::maybe_none`).
    pub fn opaque_maybe_none(what: impl Into<String>) -> Value {
        Value::Opaque(Rc::new(Opaque { what: what.into(), tracer: false, maybe_none: true }))
    }
    /// An unknown that is certainly a tracer (`Opaque::tracer`).
    pub fn opaque_tracer(what: impl Into<String>) -> Value {
        Value::Opaque(Rc::new(Opaque { what: what.into(), tracer: true, maybe_none: false }))
    }
    /// Whether the value is, or holds somewhere in its containers, something unknown: its
    /// pytree structure and avals are then not all known.
    pub fn holds_unknown(&self) -> bool {
        match self {
            Value::Opaque(_) => true,
            Value::Tuple(t) => t.iter().any(Value::holds_unknown),
            Value::List(l) => l.borrow().iter().any(Value::holds_unknown),
            Value::Dict(d) => d.borrow().entries.values().any(|(_, v)| v.holds_unknown()),
            Value::Instance(i) => {
                i.attrs.borrow().values().any(Value::holds_unknown) || i.tuple.as_ref().is_some_and(|t| t.iter().any(Value::holds_unknown))
            }
            _ => false,
        }
    }
    /// A tracer whose value Python cannot see, known or of unknown aval: its truth, `int()`
    /// and `float()` are JAX's errors. A `grad`/`jvp` tracer carries its value, so an unknown
    /// computed from one is only an unknown (`if` works on it in JAX; `float()` does only on a
    /// value that does not depend on a differentiated argument).
    pub fn is_certain_tracer(&self) -> bool {
        match self {
            Value::Array(a) => a.is_tracer() && a.known().is_none(),
            Value::Opaque(o) => o.tracer,
            _ => false,
        }
    }
    pub fn is_none(&self) -> bool {
        matches!(self, Value::None)
    }
    pub fn is_opaque(&self) -> bool {
        matches!(self, Value::Opaque(_))
    }
    pub fn as_array(&self) -> Option<&Rc<Array>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Python's `type(x).__name__` for the builtin types.
    pub fn type_name(&self) -> String {
        match self {
            Value::None => "NoneType".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Complex(..) => "complex".into(),
            Value::Str(_) => "str".into(),
            Value::Tuple(_) => "tuple".into(),
            Value::List(_) => "list".into(),
            Value::Dict(_) => "dict".into(),
            Value::Set(_) => "set".into(),
            Value::Range(..) => "range".into(),
            Value::Slice(_) => "slice".into(),
            Value::Ellipsis => "ellipsis".into(),
            Value::Function(_) => "function".into(),
            Value::Builtin(b) => b.type_name().into(),
            Value::BoundMethod(_) => "method".into(),
            Value::Class(_) => "type".into(),
            Value::Instance(i) => i.class.name.to_string(),
            Value::Module(_) => "module".into(),
            Value::Array(a) => {
                if a.is_tracer() {
                    "DynamicJaxprTracer".into()
                } else {
                    "ArrayImpl".into()
                }
            }
            Value::DType(_) => "type".into(),
            Value::TfDType(_) => "DType".into(),
            Value::Iterator(it) => it.borrow().type_name().into(),
            Value::Property(_) => "property".into(),
            Value::StaticMethod(_) => "staticmethod".into(),
            Value::ClassMethod(_) => "classmethod".into(),
            Value::Cell(_) => "cell".into(),
            Value::UnknownNumber(f) => if *f { "float" } else { "int" }.into(),
            Value::Opaque(_) => "object".into(),
        }
    }

    /// Identity for `is` and for identity-hashed dict keys; `None` for value types.
    pub fn identity(&self) -> Option<usize> {
        Some(match self {
            Value::List(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Dict(r) | Value::Set(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Function(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Builtin(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Class(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Instance(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Module(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Array(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Iterator(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Opaque(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Tuple(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::BoundMethod(r) => Rc::as_ptr(r) as *const u8 as usize,
            Value::Property(r) => Rc::as_ptr(r) as *const u8 as usize,
            _ => return None,
        })
    }
}

/// A hashable projection of a value, for dict keys, sets and jit cache keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HashKey {
    None,
    Int(i64),
    /// Floats that are not whole numbers, by bits (whole floats hash as `Int`, as in Python).
    Float(u64),
    Str(Rc<str>),
    Tuple(Vec<HashKey>),
    Ellipsis,
    DType(DType),
    Slice(Box<[HashKey; 3]>),
    Identity(usize),
}

#[derive(Clone, Debug, Default)]
pub struct Dict {
    pub entries: IndexMap<HashKey, (Value, Value)>,
}

impl Dict {
    pub fn get(&self, key: &HashKey) -> Option<&Value> {
        self.entries.get(key).map(|(_, v)| v)
    }
    pub fn insert(&mut self, key: HashKey, k: Value, v: Value) {
        match self.entries.get_mut(&key) {
            Some(slot) => slot.1 = v,
            None => {
                self.entries.insert(key, (k, v));
            }
        }
    }
    pub fn keys(&self) -> Vec<Value> {
        self.entries.values().map(|(k, _)| k.clone()).collect()
    }
    pub fn values(&self) -> Vec<Value> {
        self.entries.values().map(|(_, v)| v.clone()).collect()
    }
    pub fn items(&self) -> Vec<(Value, Value)> {
        self.entries.values().cloned().collect()
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

pub struct Function {
    pub def: Rc<ast::FunctionDef>,
    pub file: FileId,
    pub qualname: String,
    /// The module globals the function was defined in.
    pub globals: Rc<ModuleObj>,
    pub defaults: Vec<Value>,
    pub kw_defaults: Vec<(Name, Value)>,
    /// Cells of the enclosing function scopes, innermost first.
    pub closure: Rc<Scope>,
    /// Attributes set on the function object (`f.__name__`, decorators that tag functions).
    pub attrs: RefCell<IndexMap<Name, Value>>,
    pub is_lambda: bool,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<function {}>", self.qualname)
    }
}

/// A function scope's variables, shared with closures defined inside it.
#[derive(Debug, Default)]
pub struct Scope {
    pub vars: RefCell<IndexMap<Name, Rc<RefCell<Value>>>>,
    pub parent: Option<Rc<Scope>>,
    /// Names declared `global` in this scope.
    pub globals: RefCell<Vec<Name>>,
    /// Names declared `nonlocal` in this scope.
    pub nonlocals: RefCell<Vec<Name>>,
    /// A class body's namespace: invisible to the functions defined in it.
    pub is_class: bool,
}

impl Scope {
    pub fn lookup_cell(&self, name: &str) -> Option<Rc<RefCell<Value>>> {
        if let Some(cell) = self.vars.borrow().get(name) {
            return Some(cell.clone());
        }
        self.parent.as_ref().and_then(|p| p.lookup_cell(name))
    }
}

#[derive(Debug)]
pub struct Class {
    pub name: Name,
    pub qualname: String,
    pub bases: Vec<Rc<Class>>,
    pub dict: RefCell<IndexMap<Name, Value>>,
    /// The builtin type this class is or derives from, when it matters to semantics.
    pub builtin: Option<BuiltinClass>,
    pub is_dataclass: Cell<bool>,
    pub frozen: Cell<bool>,
    /// Field names of a dataclass or NamedTuple, in order.
    pub fields: RefCell<Vec<Name>>,
    pub is_namedtuple: Cell<bool>,
    /// Registered as a pytree node (`register_pytree_node`, `register_dataclass`, flax-style).
    pub pytree: RefCell<Option<PytreeRegistration>>,
    pub def_span: Option<(FileId, Span)>,
}

#[derive(Clone, Debug)]
pub enum PytreeRegistration {
    /// Data fields are children; meta fields are static.
    Fields { data: Vec<Name>, meta: Vec<Name> },
    /// User flatten/unflatten functions, and (a shim's `_tracelens_keys`) a function of the
    /// aux data giving each child's key as `keystr` writes it (`.linear`, `['b']`), as a
    /// library registering with `register_pytree_with_keys` names them.
    Custom { flatten: Value, unflatten: Value, keys: Option<Value> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltinClass {
    Object,
    Exception,
    Tuple,
    Dict,
    List,
    Int,
    Float,
    Str,
}

impl Class {
    /// Method resolution order for single (and simple multiple) inheritance.
    pub fn mro(self: &Rc<Class>) -> Vec<Rc<Class>> {
        let mut out: Vec<Rc<Class>> = vec![self.clone()];
        for base in &self.bases {
            for c in base.mro() {
                if !out.iter().any(|o| Rc::ptr_eq(o, &c)) {
                    out.push(c);
                }
            }
        }
        out
    }
    pub fn lookup(self: &Rc<Class>, name: &str) -> Option<Value> {
        for c in self.mro() {
            if let Some(v) = c.dict.borrow().get(name) {
                return Some(v.clone());
            }
        }
        None
    }
    pub fn is_subclass_of(self: &Rc<Class>, other: &Rc<Class>) -> bool {
        self.mro().iter().any(|c| Rc::ptr_eq(c, other))
    }
    pub fn derives_builtin(self: &Rc<Class>, b: BuiltinClass) -> bool {
        self.mro().iter().any(|c| c.builtin == Some(b))
    }
}

#[derive(Debug)]
pub struct Instance {
    pub class: Rc<Class>,
    pub attrs: RefCell<IndexMap<Name, Value>>,
    /// For NamedTuple instances and tuple subclasses: the tuple items.
    pub tuple: Option<Vec<Value>>,
}

#[derive(Debug)]
pub struct ModuleObj {
    pub name: String,
    pub file: Option<FileId>,
    pub dict: RefCell<IndexMap<Name, Value>>,
    /// For modelled library modules (`jax.numpy`, `math`): attribute lookup goes through
    /// the model; unknown attributes are opaque.
    pub native: Option<super::modules::NativeModule>,
}

#[derive(Debug)]
pub struct Property {
    pub fget: Value,
    pub fset: Option<Value>,
}

/// Python iterators: over a snapshot of items (lists are snapshotted lazily by index so that
/// appends during iteration behave as in Python), over a range, or a generator's yields.
#[derive(Debug)]
pub enum PyIter {
    Seq {
        items: Rc<Vec<Value>>,
        pos: usize,
        kind: &'static str,
    },
    List {
        list: Rc<RefCell<Vec<Value>>>,
        pos: usize,
    },
    Range {
        next: i64,
        stop: i64,
        step: i64,
    },
    /// A generator, run eagerly when created: the items it yielded, and how its run ended.
    Generator {
        items: Rc<Vec<Value>>,
        pos: usize,
        name: Rc<str>,
        end: Rc<GeneratorEnd>,
    },
    Count {
        next: Value,
        step: Value,
    },
    /// `enumerate`, `zip`, `map`, `filter`, `itertools.chain` (`lazy_iter.rs`).
    Lazy(super::lazy_iter::Lazy),
    Opaque,
}

impl PyIter {
    pub fn type_name(&self) -> &'static str {
        match self {
            PyIter::Seq { kind, .. } => kind,
            PyIter::List { .. } => "list_iterator",
            PyIter::Range { .. } => "range_iterator",
            PyIter::Generator { .. } => "generator",
            PyIter::Count { .. } => "itertools.count",
            PyIter::Lazy(lazy) => lazy.type_name(),
            PyIter::Opaque => "iterator",
        }
    }
}

/// How an eagerly run generator ended. Whatever happened after the last item collected is
/// replayed when the consumer gets there, so an exception raised late in a generator is
/// raised only if the program actually advances that far.
#[derive(Debug)]
pub enum GeneratorEnd {
    Returned,
    Raised(Box<super::PyException>),
    /// The interpreter stopped following it (too many items, or an unknown value).
    Truncated(String),
    /// A generator method's end, which holds only while its object's attributes are the ones
    /// its eager run read (the object, the attributes then): a reader whose `repeat()` is
    /// called after the generator was made goes on where the run returned.
    WhileUnchanged(Value, Vec<(Name, Value)>, Box<GeneratorEnd>),
}

pub fn repr_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == f.trunc() && f.abs() < 1e16 {
        return format!("{f:.1}");
    }
    // Python switches to exponent notation outside [1e-4, 1e16); Rust's `{}` never does, so
    // the magnitude decides which one form is written (a literal like `1e-6` is repr'd at
    // every call the reproducer records).
    if f.abs() >= 1e16 || f.abs() < 1e-4 {
        let e = format!("{f:e}");
        // Python writes 1e-05 with a signed, two-digit exponent.
        if let Some((mant, exp)) = e.split_once('e') {
            let (sign, digits) = if let Some(d) = exp.strip_prefix('-') { ("-", d) } else { ("+", exp) };
            let mut out = String::new();
            let _ = write!(out, "{mant}e{sign}{digits:0>2}");
            return out;
        }
    }
    format!("{f}")
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    /// Python 3.11's `repr` of each value (printed by CPython, not assumed).
    fn floats_repr_as_python_writes_them() {
        let cases = [
            (1e-06, "1e-06"),
            (1e-05, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (123.456, "123.456"),
            (0.1, "0.1"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (-2.5e-7, "-2.5e-07"),
            (2.0, "2.0"),
            (1e22, "1e+22"),
        ];
        for (f, python) in cases {
            assert_eq!(super::repr_float(f), python, "{f:e}");
        }
    }

    crate::unit_tests::list![floats_repr_as_python_writes_them];
}
