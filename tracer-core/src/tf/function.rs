//! `tf.function` with its cache modelled (the tf.function guide's rules): a call's key is
//! built from its arguments — a tensor by its shape and dtype, a variable by its identity, a
//! Python value by its value, a list/tuple/dict by its structure and the keys of its leaves,
//! any other object by its identity — and a call whose key no earlier trace covers traces
//! the Python function again (TL210/TL211, worded after TensorFlow's retracing warning).
//! A trace is a jit trace of the shared engine (`TraceKind::Jit`, reported as
//! `tf.function`) whose tensor arguments are symbolic tensors; Python arguments stay Python
//! values. `input_signature` fixes the one key (TL113 for a call that does not fit it);
//! `None` dimensions, and the shapes `reduce_retracing=True` relaxes, are traced as symbolic
//! tensors of unknown shape, which check everything that does not depend on the shape.
//! Variables may be created on the first trace only; TensorFlow traces a function that
//! created one a second time to check it, and raises there (TL220).

use std::cell::RefCell;
use std::rc::Rc;

use super::retrace::{retrace_cause, Asked};
pub use super::signature::{shape_text, spec_text, Signature};
use super::{signature, tensor, TfValue};
use crate::diagnostics::Code;
use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::value::{HashKey, Value};
use crate::interp::{Flow, Interp, PyResult, Site};
use crate::jax::api::{fun_def_site, fun_name, param_names, JitInfo};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::ir::Jaxpr;
use crate::jax::{Route, TraceKind};

/// What a `tf.function` trace is reported as (`TraceRecord::traced_for`).
pub const TRACED_FOR: &str = "tf.function";

#[derive(Debug)]
pub struct TfFunction {
    pub fun: Value,
    pub name: String,
    pub autograph: bool,
    /// `None` without `input_signature`; a signature tracelens cannot read makes every call
    /// a trace with unknown arguments.
    pub signature: Option<Signature>,
    pub reduce_retracing: bool,
    /// Index into `JaxState::jitted` (call counts for TL201).
    pub info: usize,
    pub params: Vec<String>,
    pub entries: RefCell<Vec<Entry>>,
}

/// One traced graph: its key, and what a call of it returns.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: Key,
    pub call_site: Option<Site>,
    pub record: usize,
    /// The output structure with `None` for each tensor leaf, and the graph to evaluate them.
    pub outputs: Option<Outputs>,
    /// The op that makes every run of this graph fail, and the ops whose failure depends on
    /// the call's tensors (`graph_run.rs`).
    pub failure: super::graph_run::Settled,
}

#[derive(Debug, Clone)]
pub struct Outputs {
    pub template: Value,
    pub avals: Vec<Aval>,
    pub jaxpr: Rc<Jaxpr>,
    pub consts: Vec<Rc<Array>>,
    /// The variables a call reads and writes (`graph_variables.rs`).
    pub variables: Option<Rc<super::graph_variables::GraphVariables>>,
}

/// A call's cache key: the arguments' structure and the key of each leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub structure: String,
    pub leaves: Vec<(String, Leaf)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Leaf {
    /// A tensor: its dimensions (`None` where the trace does not fix one) and dtype.
    Tensor(Option<Vec<Option<usize>>>, crate::jax::dtypes::DType),
    /// A variable: its shape and dtype, and which of the call's variables it is (the index
    /// of its first place among them), so that passing one variable twice keys apart from
    /// passing two. Two variables alike in shape and dtype share a trace (TensorFlow 2.21).
    Variable(Vec<usize>, crate::jax::dtypes::DType, usize),
    Python(HashKey, String),
    Identity(usize),
}

impl Leaf {
    /// Whether a trace made for `self` serves a call with `other` (TensorFlow's subtype rule:
    /// a `None` dimension accepts any size).
    pub(super) fn covers(&self, other: &Leaf) -> bool {
        match (self, other) {
            (Leaf::Tensor(None, a), Leaf::Tensor(_, b)) => a == b,
            (Leaf::Tensor(Some(s), a), Leaf::Tensor(Some(o), b)) => {
                a == b && s.len() == o.len() && s.iter().zip(o).all(|(x, y)| x.is_none() || x == y)
            }
            (x, y) => x == y,
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Leaf::Tensor(shape, d) => format!("TensorSpec(shape={}, dtype=tf.{})", shape_text(shape.as_deref()), d.name()),
            Leaf::Variable(shape, d, _) => {
                format!(
                    "a tf.Variable of shape={} and dtype=tf.{}",
                    shape_text(Some(&shape.iter().map(|&n| Some(n)).collect::<Vec<_>>())),
                    d.name()
                )
            }
            Leaf::Python(_, shown) => shown.clone(),
            Leaf::Identity(_) => "an object".into(),
        }
    }
}

impl Key {
    fn covers(&self, other: &Key) -> bool {
        self.structure == other.structure
            && self.leaves.len() == other.leaves.len()
            && self.leaves.iter().zip(&other.leaves).all(|((_, a), (_, b))| a.covers(b))
    }
}

/// The `tf.function` traces being run, innermost last.
#[derive(Default)]
pub struct TfState {
    pub active: Vec<ActiveTrace>,
    /// Functions wrapped in `tf.autograph.experimental.do_not_convert` (by definition).
    pub not_converted: std::collections::HashSet<usize>,
    /// A trace just created a variable; the next store of a value outside the trace keeps
    /// it (not an outer mutation, TL202).
    pub variable_just_created: bool,
    pub autograph: super::autograph::State,
    /// The running `tf.function` trace read a `None` dimension of a shape (`partial.rs`).
    pub none_dimension_read: bool,
    /// TensorFlow's name of a symbolic input tensor (`x:0`), by identity, where it is exact: a
    /// tensor passed as a named parameter is the `Placeholder` of that name (`run_body`).
    pub graph_input_names: std::collections::HashMap<usize, String>,
    /// `tf.shape(x)` of a tensor of static shape, in a graph: a symbolic tensor whose value
    /// TensorFlow's shape inference knows (`constant_value`), by identity.
    pub shape_values: std::collections::HashMap<usize, (Rc<Array>, Vec<usize>)>,
    /// Ops of the running traces that fail whenever they run (`graph_run.rs`).
    pub failing: Vec<super::graph_run::Failing>,
    /// Ops of the running traces whose failure depends on each call's values (`graph_run.rs`).
    pub run_checks: Vec<super::graph_run::CallCheck>,
    /// The tensor loops of the running traces whose bodies hold such ops (`loop_checks.rs`).
    pub loops: super::loop_checks::State,
    /// The branches of `tf.cond` and of AutoGraph's `if` being traced (inline), innermost
    /// last: what they bind runs only when the predicate picks them (`guards.rs`).
    pub guards: Vec<super::guards::Guard>,
    /// `tf.experimental.numpy.experimental_enable_numpy_behavior()` was called: tensors have
    /// NumPy's methods and operands of different dtypes promote, which is not modelled, so
    /// those become unknown rather than TensorFlow's errors.
    pub numpy_behavior: bool,
    /// `tf.debugging.enable_check_numerics()` was called (and not disabled since): the first
    /// eager op whose output holds a NaN or an Inf raises (`numerics.rs`).
    pub check_numerics: bool,
    /// Variable reads and writes of the running traces (`graph_variables.rs`).
    pub variables: super::graph_variables::State,
    /// The eager `GradientTape`s recording now (`tape_eager.rs`).
    pub recording: Vec<Rc<super::tape::Tape>>,
}

pub struct ActiveTrace {
    pub function: Rc<TfFunction>,
    /// The key being traced (`None` on the unknown-arguments route).
    pub key: Option<Key>,
    /// Variables may not be created in this trace (it is not the function's first).
    pub forbid_variables: bool,
    pub created_variables: bool,
    /// How many paths past an unknown (`Interp::fork_logs`) were open when the trace began:
    /// more while tracing is a branch or loop body of the graph (AutoGraph's `if`/`while`).
    pub forks: usize,
    /// TensorFlow's names used in the graph and the branch graphs being traced
    /// (`graph_names.rs`), innermost last.
    pub names: Vec<super::graph_names::Scope>,
}

impl TfFunction {
    /// A `tf.function` on a method is one Function per instance in TensorFlow: the instance
    /// a key's trace is for (`None` for a plain function).
    pub(super) fn owner(&self, k: &Key) -> Option<Leaf> {
        if self.is_method() {
            k.leaves.first().map(|(_, l)| l.clone())
        } else {
            None
        }
    }

    fn is_method(&self) -> bool {
        self.params.first().is_some_and(|p| p == "self")
    }
}

/// The innermost `tf.function` being traced.
pub fn innermost<'a>(interp: &'a Interp) -> Option<&'a Rc<TfFunction>> {
    interp.tf.active.last().map(|a| &a.function)
}

/// `tf.function(f, input_signature=None, autograph=True, jit_compile=None,
/// reduce_retracing=False)`, and `@tf.function(...)` with keywords only.
pub fn make(interp: &mut Interp, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    let kw = |name: &str| kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v.clone());
    let fun = args.first().cloned().or_else(|| kw("func")).filter(|f| !f.is_none());
    let Some(fun) = fun else {
        // `@tf.function(...)`: a decorator that makes the function with these options.
        let options = Value::Builtin(Rc::new(Builtin::Tf(TfValue::Fn(super::TfFn::Function))));
        return Ok(Value::Builtin(Rc::new(Builtin::partial(options, Vec::new(), kwargs.clone()))));
    };
    if fun.is_opaque() {
        return Ok(Value::opaque("tf.function of an unknown function"));
    }
    let mut autograph = match kw("autograph") {
        Some(v) => interp.truthy(&v)?,
        None => true,
    };
    if let Value::Function(f) = &fun {
        if interp.tf.not_converted.contains(&(Rc::as_ptr(&f.def) as usize)) {
            autograph = false;
        }
    }
    let reduce_retracing = match kw("reduce_retracing").or_else(|| kw("experimental_relax_shapes")) {
        Some(v) => interp.truthy(&v)?,
        None => false,
    };
    let signature = signature::read(interp, kw("input_signature").or_else(|| args.get(1).cloned()))?;
    let name = fun_name(&fun);
    interp.jax.jitted.push(JitInfo {
        fun: fun.clone(),
        name: name.clone(),
        def_site: fun_def_site(&fun),
        fun_identity: 0,
        entries: Vec::new(),
        calls: 0,
        created_in: interp.loop_passes.clone(),
    });
    let info = interp.jax.jitted.len() - 1;
    let params = param_names(&fun);
    let f = TfFunction { fun, name, autograph, signature, reduce_retracing, info, params, entries: RefCell::new(Vec::new()) };
    Ok(TfValue::Function(Rc::new(f)).value())
}

/// `tf.autograph.experimental.do_not_convert(f)`: `f`, whose code AutoGraph leaves as it is.
pub fn do_not_convert(interp: &mut Interp, args: &[Value]) -> PyResult<Value> {
    match args.first() {
        Some(Value::Function(f)) => {
            interp.tf.not_converted.insert(Rc::as_ptr(&f.def) as usize);
            Ok(Value::Function(f.clone()))
        }
        Some(other) => Ok(other.clone()),
        // `@do_not_convert()` is not modelled.
        None => Ok(Value::opaque("tf.autograph.experimental.do_not_convert()")),
    }
}

/// `Function.method(...)`.
pub fn call_method(interp: &mut Interp, f: &Rc<TfFunction>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    match name {
        "get_concrete_function" => {
            let args = with_signature_specs(f, args, &kwargs);
            let (args, kwargs) = if args.is_empty() && kwargs.is_empty() { (args, kwargs) } else { super::concrete::bind(f, args, kwargs) };
            let (key, _) = match find_key(interp, f, &args, &kwargs, true)? {
                Some(k) => k,
                None => return Ok(Value::opaque("a concrete function of arguments tracelens does not know")),
            };
            let entry = match lookup(f, &key) {
                Some(i) => i,
                None => match trace(interp, f, &key, &args, &kwargs, Asked::Concrete)? {
                    Some(i) => i,
                    None => return Ok(Value::opaque("a concrete function traced with unknown arguments")),
                },
            };
            Ok(TfValue::Concrete(f.clone(), entry).value())
        }
        "experimental_get_tracing_count" => Ok(Value::Int(f.entries.borrow().len() as i64)),
        _ => Ok(Value::opaque(format!("tf.function.{name}()"))),
    }
}

/// `obj.method.get_concrete_function()` with an `input_signature`: the instance, then the specs.
fn with_signature_specs(f: &TfFunction, mut args: Vec<Value>, kwargs: &Kwargs) -> Vec<Value> {
    if let Some(Signature::Specs(specs)) = &f.signature {
        if f.is_method() && args.len() == 1 && kwargs.is_empty() {
            args.extend(specs.iter().map(|s| TfValue::Spec(s.clone()).value()));
        }
    }
    args
}

/// Calling a `tf.function`.
pub fn call(interp: &mut Interp, f: &Rc<TfFunction>, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    if let Value::Function(fun) = &f.fun {
        interp.called.insert(Rc::as_ptr(&fun.def) as usize);
    }
    interp.jax.jitted[f.info].calls += 1;
    interp.jax.staged_calls += 1;
    let (args, kwargs) = super::concrete::bind(f, args, kwargs);
    let Some((key, tensors)) = find_key(interp, f, &args, &kwargs, false)? else {
        return trace_unknown(interp, f, args, kwargs);
    };
    let entry = match lookup(f, &key) {
        Some(i) => i,
        None if recursing(interp, f, &key) => return Err(super::recursion::recursion_error(interp, f)),
        None => match trace(interp, f, &key, &args, &kwargs, Asked::Call)? {
            Some(i) => i,
            None => return Ok(tensor::unknown_tensor(interp, "the result of a tf.function traced with unknown arguments")),
        },
    };
    super::graph_call::run_entry(interp, f, entry, &tensors)
}

/// `f` is called, inside its own trace, with a key that trace covers.
fn recursing(interp: &Interp, f: &Rc<TfFunction>, key: &Key) -> bool {
    interp.tf.active.iter().any(|a| Rc::ptr_eq(&a.function, f) && a.key.as_ref().is_some_and(|k| k.covers(key)))
}

/// Calling `f.get_concrete_function(...)`'s result.
pub fn call_concrete(interp: &mut Interp, f: &Rc<TfFunction>, entry: usize, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    interp.jax.jitted[f.info].calls += 1;
    let (args, kwargs) = super::concrete::bind(f, args, kwargs);
    match find_key(interp, f, &args, &kwargs, false)? {
        Some((key, tensors)) if f.entries.borrow()[entry].key.covers(&key) => super::graph_call::run_entry(interp, f, entry, &tensors),
        _ => Ok(tensor::unknown_tensor(interp, "a concrete function called with arguments tracelens does not match")),
    }
}

fn lookup(f: &TfFunction, key: &Key) -> Option<usize> {
    f.entries.borrow().iter().position(|e| e.key.covers(key))
}

/// The key of a call and its tensor leaves (`None` when a leaf is unknown). With
/// `input_signature` the key is the signature's, after checking the call against it.
fn find_key(
    interp: &mut Interp,
    f: &Rc<TfFunction>,
    args: &[Value],
    kwargs: &Kwargs,
    specs_allowed: bool,
) -> PyResult<Option<(Key, Vec<Rc<Array>>)>> {
    let mut builder = KeyBuilder {
        structure: String::new(),
        leaves: Vec::new(),
        variables: Vec::new(),
        tensors: Vec::new(),
        unknown: false,
        specs_allowed,
    };
    match &f.signature {
        Some(Signature::Unread) => return Ok(None),
        Some(Signature::Specs(specs)) => {
            if args.is_empty() && kwargs.is_empty() && specs_allowed {
                let leaves = specs.iter().enumerate().map(|(i, s)| (param(f, i), Leaf::Tensor(s.shape.clone(), s.dtype))).collect();
                return Ok(Some((Key { structure: format!("({})", "T,".repeat(specs.len())), leaves }, Vec::new())));
            }
            // A method's signature is for the arguments after `self`.
            let skip = usize::from(f.is_method() && !args.is_empty());
            signature::check(interp, f, specs, &args[skip..], kwargs, skip)?;
        }
        None => {}
    }
    builder.structure.push('(');
    for (i, a) in args.iter().enumerate() {
        builder.add(interp, a, &param(f, i))?;
    }
    for (k, v) in kwargs {
        builder.structure.push_str(k);
        builder.structure.push('=');
        builder.add(interp, v, k)?;
    }
    builder.structure.push(')');
    if builder.unknown {
        return Ok(None);
    }
    let mut key = Key { structure: builder.structure, leaves: builder.leaves };
    if let Some(Signature::Specs(specs)) = &f.signature {
        let skip = usize::from(f.is_method() && !args.is_empty());
        for ((_, leaf), spec) in key.leaves.iter_mut().skip(skip).zip(specs) {
            *leaf = Leaf::Tensor(spec.shape.clone(), spec.dtype);
        }
    } else if f.reduce_retracing {
        relax(f, &mut key);
    }
    Ok(Some((key, builder.tensors)))
}

/// `reduce_retracing=True`: a tensor whose shape differs from an earlier trace's of the
/// same rank and dtype is traced with every dimension unknown.
fn relax(f: &TfFunction, key: &mut Key) {
    let entries = f.entries.borrow();
    if entries.iter().any(|e| e.key.covers(key)) {
        return;
    }
    let (structure, n) = (key.structure.clone(), key.leaves.len());
    for e in entries.iter().filter(|e| e.key.structure == structure && e.key.leaves.len() == n) {
        for ((_, old), (_, new)) in e.key.leaves.iter().zip(key.leaves.iter_mut()) {
            if let (Leaf::Tensor(Some(o), a), Leaf::Tensor(Some(n), b)) = (old, &*new) {
                if a == b && o.len() == n.len() && o != n {
                    let dims = o.iter().zip(n).map(|(x, y)| if x == y { *x } else { None }).collect();
                    *new = Leaf::Tensor(Some(dims), *b);
                }
            }
        }
    }
}

pub(super) fn param(f: &TfFunction, i: usize) -> String {
    f.params.get(i).cloned().unwrap_or_else(|| format!("args_{i}"))
}

struct KeyBuilder {
    structure: String,
    leaves: Vec<(String, Leaf)>,
    /// The variables met so far, by identity (`Leaf::Variable`'s index).
    variables: Vec<usize>,
    tensors: Vec<Rc<Array>>,
    unknown: bool,
    specs_allowed: bool,
}

impl KeyBuilder {
    fn add(&mut self, interp: &mut Interp, v: &Value, path: &str) -> PyResult<()> {
        match v {
            Value::Array(a) => {
                self.structure.push_str("T,");
                let leaf = Leaf::Tensor(Some(a.aval.shape.iter().map(|&d| Some(d)).collect()), a.aval.dtype);
                self.leaves.push((path.to_string(), leaf));
                let t = if a.tf.get() { a.clone() } else { tensor::to_tensor(interp, v, None)?.unwrap_or_else(|| a.clone()) };
                self.tensors.push(t);
            }
            Value::List(_) | Value::Tuple(_) => {
                let (open, close) = if matches!(v, Value::List(_)) { ('[', ']') } else { ('(', ')') };
                self.structure.push(open);
                for (i, item) in interp.iterate(v)?.iter().enumerate() {
                    self.add(interp, item, &format!("{path}[{i}]"))?;
                }
                self.structure.push(close);
            }
            Value::Dict(d) => {
                self.structure.push('{');
                let items: Vec<(Value, Value)> = d.borrow().items();
                for (k, item) in items {
                    let shown = interp.repr(&k)?;
                    self.structure.push_str(&shown);
                    self.structure.push(':');
                    self.add(interp, &item, &format!("{path}[{shown}]"))?;
                }
                self.structure.push('}');
            }
            Value::Builtin(b) if let Builtin::Tf(TfValue::Variable(var)) = &**b => {
                self.structure.push_str("V,");
                let id = Rc::as_ptr(var) as usize;
                let alias = match self.variables.iter().position(|&v| v == id) {
                    Some(i) => i,
                    None => {
                        self.variables.push(id);
                        self.variables.len() - 1
                    }
                };
                let value = var.value.borrow();
                self.leaves.push((path.to_string(), Leaf::Variable(value.aval.shape.to_vec(), value.aval.dtype, alias)));
            }
            Value::Builtin(b) if let Builtin::Tf(TfValue::Partial(_)) = &**b => self.unknown = true,
            Value::Builtin(b) if let Builtin::Tf(TfValue::Spec(s)) = &**b => {
                if !self.specs_allowed {
                    self.unknown = true;
                    return Ok(());
                }
                self.structure.push_str("T,");
                self.leaves.push((path.to_string(), Leaf::Tensor(s.shape.clone(), s.dtype)));
            }
            Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => {
                self.structure.push_str("P,");
                let h = interp.hash_key(v)?;
                let shown = interp.repr(v)?;
                self.leaves.push((path.to_string(), Leaf::Python(h, shown)));
            }
            Value::Opaque(_) | Value::UnknownNumber(_) => self.unknown = true,
            // A NamedTuple or other pytree-like object: flattened by TensorFlow, not modelled.
            Value::Instance(i) if i.tuple.is_some() || i.class.is_dataclass.get() => self.unknown = true,
            // An object that gives its own trace type (`__tf_tracing_type__`): its rules are
            // the user's Python, not modelled.
            Value::Instance(i) if i.class.lookup("__tf_tracing_type__").is_some() => self.unknown = true,
            other => {
                self.structure.push_str("O,");
                self.leaves.push((path.to_string(), Leaf::Identity(other.identity().unwrap_or(0))));
            }
        }
        Ok(())
    }
}

/// Traces `f` for `key`; the index of the new entry, `None` when the trace went past an
/// unknown result.
fn trace(interp: &mut Interp, f: &Rc<TfFunction>, key: &Key, args: &[Value], kwargs: &Kwargs, asked: Asked) -> PyResult<Option<usize>> {
    let call_site = interp.site();
    let cause = retrace_cause(interp, f, key, call_site, asked);
    // A tf.function on a method is one Function per instance in TensorFlow: variables may
    // be created on the first trace for each instance.
    let first = !f.entries.borrow().iter().any(|e| f.owner(&e.key) == f.owner(key));
    let traced = trace_once(interp, f, key, args, kwargs, cause.clone(), !first)?;
    let (entry, created_variables) = match traced {
        Some(t) => t,
        None => return Ok(None),
    };
    f.entries.borrow_mut().push(entry);
    let index = f.entries.borrow().len() - 1;
    // A first trace that created variables is traced again, where creating one is an error.
    if created_variables {
        let again =
            trace_once(interp, f, key, args, kwargs, "TensorFlow traces a function that created variables a second time".into(), true)?;
        if let Some((entry, _)) = again {
            f.entries.borrow_mut()[index].record = entry.record;
        }
    }
    Ok(Some(index))
}

/// One trace of `f`'s body; the entry and whether it created variables.
fn trace_once(
    interp: &mut Interp,
    f: &Rc<TfFunction>,
    key: &Key,
    args: &[Value],
    kwargs: &Kwargs,
    cause: String,
    forbid_variables: bool,
) -> PyResult<Option<(Entry, bool)>> {
    let call_site = interp.site();
    let unknown_shapes =
        key.leaves.iter().any(|(_, l)| matches!(l, Leaf::Tensor(s, _) if s.as_ref().is_none_or(|d| d.iter().any(Option::is_none))));
    let route = if unknown_shapes { std::mem::replace(&mut interp.jax.route, Route::UnknownArguments) } else { interp.jax.route };
    let pos = interp.jax.push_trace(TraceKind::Jit, f.name.clone(), fun_def_site(&f.fun), call_site, cause, Some(f.info));
    let (record, trace_id) = (interp.jax.traces[pos].record, interp.jax.traces[pos].id);
    interp.jax.records[record].traced_for = Some(TRACED_FOR);
    interp.jax.traces[pos].arg_names = f.params.clone();
    interp.jax.records[record].arg_names = f.params.clone();
    interp.jax.records[record].input_parameters = super::concrete::input_parameters(interp, f, key, args, kwargs).map(Rc::new);
    let forks = interp.fork_logs.len();
    interp.tf.active.push(ActiveTrace {
        function: f.clone(),
        key: Some(key.clone()),
        forbid_variables,
        created_variables: false,
        forks,
        names: Vec::new(),
    });
    let none_read = std::mem::replace(&mut interp.tf.none_dimension_read, false);
    let ran = run_body(interp, f, key, args, kwargs, call_site);
    interp.tf.none_dimension_read = none_read;
    let created = interp.tf.active.pop().is_some_and(|a| a.created_variables);
    interp.tf.variable_just_created = false;
    interp.jax.route = route;
    let out = match ran {
        Ok(out) => out,
        Err(e) => {
            if interp.jax.traces.len() > pos {
                interp.jax.abort_trace_on(&e);
            }
            super::graph_variables::abandon(interp, trace_id);
            return Err(e);
        }
    };
    let mut arrays = Vec::new();
    let template = output_template(&out, &mut arrays);
    for a in &arrays {
        if let Err(e) = super::autograph::check_output(interp, a) {
            interp.jax.abort_trace();
            super::graph_variables::abandon(interp, trace_id);
            return Err(e);
        }
    }
    let template = match template {
        Some(t) if !unknown_shapes => t,
        _ => {
            interp.jax.abort_trace_unknown();
            super::graph_variables::abandon(interp, trace_id);
            return Ok(Some((Entry { key: key.clone(), call_site, record, outputs: None, failure: Default::default() }, created)));
        }
    };
    let (jaxpr, mut consts) = interp.jax.pop_trace_with_consts(&arrays);
    let failure = super::graph_run::settle(interp, trace_id, &jaxpr, &f.name);
    interp.jax.records[record].consts = consts.clone();
    let variables = super::graph_variables::finish(interp, trace_id, &jaxpr, &mut consts);
    let outputs = Outputs { template, avals: arrays.iter().map(|a| a.aval.clone()).collect(), jaxpr, consts, variables };
    Ok(Some((Entry { key: key.clone(), call_site, record, outputs: Some(outputs), failure }, created)))
}

/// Runs the body with each tensor argument a symbolic tensor (of unknown shape where the
/// key leaves a dimension open).
fn run_body(
    interp: &mut Interp,
    f: &Rc<TfFunction>,
    key: &Key,
    args: &[Value],
    kwargs: &Kwargs,
    call_site: Option<Site>,
) -> PyResult<Value> {
    let mut leaves = key.leaves.iter();
    let mut call_args = Vec::with_capacity(args.len());
    let specs_only = args.is_empty() && kwargs.is_empty() && !key.leaves.is_empty();
    if specs_only {
        for (i, (_, leaf)) in key.leaves.iter().enumerate() {
            call_args.push(symbolic(interp, leaf, i, &param(f, i), call_site));
        }
    }
    for (i, a) in args.iter().enumerate() {
        let replaced = replace_tensors(interp, a, &mut leaves, i, &param(f, i), call_site)?;
        // Not under an `input_signature`, whose specs may rename the placeholder.
        if let (Value::Array(_), Value::Array(input), None, false, Some(name)) =
            (a, &replaced, &f.signature, f.is_method(), f.params.get(i))
        {
            interp.tf.graph_input_names.insert(Rc::as_ptr(input) as usize, format!("{name}:0"));
        }
        call_args.push(replaced);
    }
    let mut call_kwargs = Vec::with_capacity(kwargs.len());
    for (k, v) in kwargs {
        let i = f.params.iter().position(|p| p == k.as_ref()).unwrap_or(f.params.len());
        call_kwargs.push((k.clone(), replace_tensors(interp, v, &mut leaves, i, k, call_site)?));
    }
    interp.call(&f.fun, call_args, call_kwargs)
}

/// A symbolic tensor for a leaf of the key: an input of the trace, or (shape not fixed) a
/// tensor of unknown shape.
fn symbolic(interp: &mut Interp, leaf: &Leaf, index: usize, name: &str, call_site: Option<Site>) -> Value {
    match leaf {
        Leaf::Tensor(Some(dims), dtype) if dims.iter().all(Option::is_some) => {
            let shape: Vec<usize> = dims.iter().map(|d| d.unwrap_or(0)).collect();
            let input = interp.jax.new_input(Aval::new(&shape, *dtype), None, index, call_site, true);
            input.tf.set(true);
            interp.jax.input_paths.insert(Rc::as_ptr(&input) as usize, name.to_string());
            Value::Array(input)
        }
        Leaf::Tensor(Some(dims), dtype) => {
            let p = super::partial::PartialTensor { dims: dims.clone(), dtype: *dtype, name: Some(name.to_string()) };
            TfValue::Partial(Rc::new(p)).value()
        }
        _ => Value::opaque_tracer(format!("the symbolic tensor {name}, whose shape is not fixed")),
    }
}

fn replace_tensors<'k>(
    interp: &mut Interp,
    v: &Value,
    leaves: &mut impl Iterator<Item = &'k (String, Leaf)>,
    index: usize,
    name: &str,
    call_site: Option<Site>,
) -> PyResult<Value> {
    Ok(match v {
        Value::Array(_) => match leaves.next() {
            Some((_, leaf)) => symbolic(interp, leaf, index, name, call_site),
            None => v.clone(),
        },
        Value::Builtin(b) if matches!(&**b, Builtin::Tf(TfValue::Variable(_) | TfValue::Spec(_))) => {
            let leaf = leaves.next();
            match (&**b, leaf) {
                (Builtin::Tf(TfValue::Spec(_)), Some((_, leaf))) => symbolic(interp, leaf, index, name, call_site),
                _ => v.clone(),
            }
        }
        Value::List(_) | Value::Tuple(_) => {
            let mut items = Vec::new();
            for (i, item) in interp.iterate(v)?.iter().enumerate() {
                items.push(replace_tensors(interp, item, leaves, index, &format!("{name}_{i}"), call_site)?);
            }
            if matches!(v, Value::List(_)) {
                Value::list(items)
            } else {
                Value::tuple(items)
            }
        }
        Value::Dict(d) => {
            let items: Vec<(Value, Value)> = d.borrow().items();
            let mut out = crate::interp::value::Dict::default();
            for (k, item) in items {
                let replaced = replace_tensors(interp, &item, leaves, index, name, call_site)?;
                let h = interp.hash_key(&k)?;
                out.insert(h, k, replaced);
            }
            interp.new_dict(out)
        }
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => {
            leaves.next();
            v.clone()
        }
        _ => {
            leaves.next();
            v.clone()
        }
    })
}

/// The output with its tensors taken out (`None` in their place), or `None` when it holds
/// something that is neither a tensor nor a plain Python value.
fn output_template(out: &Value, arrays: &mut Vec<Rc<Array>>) -> Option<Value> {
    Some(match out {
        Value::Array(a) => {
            arrays.push(a.clone());
            Value::Ellipsis
        }
        Value::Tuple(items) => Value::tuple(items.iter().map(|i| output_template(i, arrays)).collect::<Option<Vec<_>>>()?),
        Value::List(items) => Value::list(items.borrow().iter().map(|i| output_template(i, arrays)).collect::<Option<Vec<_>>>()?),
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => out.clone(),
        _ => return None,
    })
}

/// A call with an argument tracelens does not know (or a signature it cannot read): traced
/// once per call site with those arguments unknown; only what does not depend on them is
/// reported, and the result is unknown.
fn trace_unknown(interp: &mut Interp, f: &Rc<TfFunction>, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let site = interp.site();
    let unknown = Value::opaque("the result of a tf.function called with arguments tracelens does not know");
    // A summarised loop's last pass stands for calls that hit the cache (`loop_summary.rs`).
    if interp.summary_passes > 0 && interp.jax.traced_before(fun_def_site(&f.fun)) {
        return Ok(unknown);
    }
    if !interp.jax.traced_with_unknowns.insert((f.info, site)) {
        return Ok(unknown);
    }
    let route = std::mem::replace(&mut interp.jax.route, Route::UnknownArguments);
    let pos = interp.jax.push_trace(
        TraceKind::Jit,
        f.name.clone(),
        fun_def_site(&f.fun),
        site,
        "traced with arguments the interpreter does not know".into(),
        Some(f.info),
    );
    let record = interp.jax.traces[pos].record;
    interp.jax.records[record].traced_for = Some(TRACED_FOR);
    let forks = interp.fork_logs.len();
    interp.tf.active.push(ActiveTrace {
        function: f.clone(),
        key: None,
        forbid_variables: false,
        created_variables: false,
        forks,
        names: Vec::new(),
    });
    let args: Vec<Value> = args.iter().map(|a| unknown_leaves(a)).collect();
    let kwargs: Kwargs = kwargs.into_iter().map(|(k, v)| (k, unknown_leaves(&v))).collect();
    let ran = interp.call(&f.fun, args, kwargs);
    interp.tf.active.pop();
    interp.jax.route = route;
    if interp.jax.traces.len() > pos {
        interp.jax.abort_trace();
    }
    match ran {
        Ok(_) => Ok(unknown),
        Err(Flow::Raise(exc)) if !matches!(exc.code, Code::Concretization | Code::TracerToNumpy | Code::LeakedTracer) => {
            Err(interp.stop_unknown(format!("{} raised while traced with unknown arguments", exc.class.name)))
        }
        Err(flow) => Err(flow),
    }
}

/// Tensors become symbolic tensors of unknown shape; other values stay.
fn unknown_leaves(v: &Value) -> Value {
    match v {
        Value::Array(_) => Value::opaque_tracer("a symbolic tensor of an argument tracelens does not know"),
        Value::List(items) => Value::list(items.borrow().iter().map(unknown_leaves).collect()),
        Value::Tuple(items) => Value::tuple(items.iter().map(unknown_leaves).collect()),
        other => other.clone(),
    }
}
