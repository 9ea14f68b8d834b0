//! Tracing a Python function for a transformation: the worker behind every transformation
//! (`trace_with_record`) with its inputs and outputs, the identity and name a traced
//! function is reported under, and the cache of traced control-flow bodies that the
//! `scan`/`while`/`cond`/`vmap` equations bind.

use super::dispatch::{is_transformation, JaxObject};
use super::jit::canonical_aval;
use super::pytrees::{flatten, leaf_avals, tuple_paths, unflatten, TreeDef};
use crate::diagnostics::Code;
use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, PyResult, Site};
use crate::jax::ad::AdTrace;
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::eval_control::Body;
use crate::jax::ir::{Jaxpr, Prim};
use crate::jax::numpy::{self as jnp, operand, Operand};
use crate::jax::{apply1, apply_with_bodies, TraceKind};
use std::rc::Rc;

/// The function a transformation object stands for: `f` of `jax.grad(f)`, `jax.vmap(f)`,
/// `jax.jacfwd(f)`, a `functools.wraps` wrapper or a `custom_jvp`.
fn transformed_fun(o: &JaxObject) -> Option<&Value> {
    match o {
        JaxObject::Wrapped { fun, .. }
        | JaxObject::Grad { fun, .. }
        | JaxObject::Jacobian { fun, .. }
        | JaxObject::Vmapped { fun, .. }
        | JaxObject::CustomDerivative { fun, .. } => Some(fun),
        _ => None,
    }
}

/// The function a wrapper stands for, as `functools.wraps` and JAX's `inspect.unwrap` see it:
/// a library shim's wrapper (`nnx.jit`) sets `__wrapped__` to the user's function, whose name
/// and definition its traces are reported under.
pub(super) fn unwrapped(v: &Value) -> Option<Value> {
    let is_fun = |w: &Value| match w {
        Value::Function(_) => true,
        Value::Builtin(b) => matches!(&**b, Builtin::Partial { .. }),
        _ => false,
    };
    match v {
        Value::Function(f) => f.attrs.borrow().get("__wrapped__").filter(|w| is_fun(w)).cloned(),
        _ => None,
    }
}

/// The user's function a library shim's function runs as its whole body, as the shim
/// declares it: a function (`apply_fn.__tracelens_body__ = f`: haiku's `transform(f).apply`
/// calls `f`), or for a method the name of the method of its instance it runs
/// (`Module.apply.__tracelens_body__ = "__call__"`: linen's `model.apply` runs the module's
/// `__call__`). Its name and definition are what `trace` and hover report a `jit` of the
/// shim's function under; JAX itself names the shim's function (`apply_fn`), as its messages
/// still do.
pub fn library_body(v: &Value) -> Option<(String, Site)> {
    let (function, receiver) = match v {
        Value::Function(f) => (f, None),
        Value::BoundMethod(bm) => match &bm.1 {
            Value::Function(f) => (f, Some(&bm.0)),
            _ => return None,
        },
        _ => return None,
    };
    let declared = function.attrs.borrow().get("__tracelens_body__").cloned()?;
    let body = match (declared, receiver) {
        (body @ Value::Function(_), _) => body,
        (Value::Str(method), Some(Value::Instance(instance))) => {
            instance.class.lookup(&method).filter(|m| matches!(m, Value::Function(_)))?
        }
        _ => return None,
    };
    Some((fun_name(&body), fun_def_site(&body)?))
}

pub fn fun_name(v: &Value) -> String {
    if let Some(inner) = unwrapped(v) {
        return fun_name(&inner);
    }
    match v {
        Value::Function(f) => f.def.name.to_string(),
        Value::Builtin(b) => match &**b {
            Builtin::Partial { func, .. } => fun_name(func),
            Builtin::Object(JaxObject::Jitted(j)) => j.name.clone(),
            Builtin::Object(o) if let Some(fun) = transformed_fun(o) => fun_name(fun),
            other => other.name(),
        },
        Value::BoundMethod(bm) => fun_name(&bm.1),
        Value::Instance(i) => i.class.name.to_string(),
        _ => "<unknown>".into(),
    }
}

/// Where a function is defined, for the records of the transformations that trace it. A
/// Jacobian's own traces (the inner `jacrev` that `jacfwd` traces inside `jax.hessian`) are
/// not reported under `f`'s definition: their outputs are not `f`'s, and a reproducer staged
/// out of `f`'s site would return them.
pub fn fun_def_site(v: &Value) -> Option<Site> {
    def_site(v, false)
}

/// Where `jax.jit` reports a function: `jacfwd`/`jacrev`/`hessian` wrap theirs as
/// `functools.wraps` does, so `jax.jit(jax.hessian(f))` is reported under `f`'s definition
/// (JAX's `fun_sourceinfo` follows `__wrapped__`), as a `grad` of it is.
pub fn jit_def_site(v: &Value) -> Option<Site> {
    def_site(v, true)
}

fn def_site(v: &Value, through_jacobians: bool) -> Option<Site> {
    if let Some(inner) = unwrapped(v) {
        return def_site(&inner, through_jacobians);
    }
    match v {
        // JAX names `co_firstlineno`: the first decorator line of a decorated function.
        Value::Function(f) => {
            Some(Site { file: f.file, span: crate::syntax::ast::Span { start: f.def.span.start, end: f.def.name_span.end } })
        }
        Value::Builtin(b) => match &**b {
            Builtin::Partial { func, .. } => def_site(func, through_jacobians),
            Builtin::Object(JaxObject::Jacobian { .. }) if !through_jacobians => None,
            Builtin::Object(o) => transformed_fun(o).and_then(|f| def_site(f, through_jacobians)),
            _ => None,
        },
        Value::BoundMethod(bm) => def_site(&bm.1, through_jacobians),
        _ => None,
    }
}

pub fn param_names(v: &Value) -> Vec<String> {
    match v {
        Value::Function(f) => f.def.params.posonly.iter().chain(&f.def.params.args).map(|p| p.name.to_string()).collect(),
        Value::BoundMethod(bm) => param_names(&bm.1).into_iter().skip(1).collect(),
        Value::Builtin(b) => match &**b {
            Builtin::Partial { func, args, .. } => param_names(func).into_iter().skip(args.len()).collect(),
            Builtin::Object(o) => transformed_fun(o).map(param_names).unwrap_or_default(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The name of the wrapped function's `*args` parameter, if it has one: JAX names the
/// arguments it gathers `batch[0]`, `batch[1]` after it.
pub fn vararg_name(v: &Value) -> Option<String> {
    match v {
        Value::Function(f) => f.def.params.vararg.as_ref().map(|p| p.name.to_string()),
        Value::BoundMethod(bm) => vararg_name(&bm.1),
        Value::Builtin(b) => match &**b {
            Builtin::Partial { func, .. } => vararg_name(func),
            Builtin::Object(o) => transformed_fun(o).and_then(vararg_name),
            _ => None,
        },
        _ => None,
    }
}

/// Identity of the underlying Python function, which keys JAX's tracing cache.
pub(super) fn fun_identity(v: &Value) -> usize {
    v.identity().unwrap_or(0)
}

/// Traces `fun(*args)` in a new trace whose inputs stand for the array leaves of `args`.
pub fn trace_call(interp: &mut Interp, fun: &Value, args: Vec<Value>, kwargs: Kwargs, kind: TraceKind, label: &str) -> PyResult<Value> {
    // JAX caches the bodies of scan/cond/while/fori on the function object and input types,
    // like jit: a body defined once at module level is traced once.
    let cache_key = match (&kind, kwargs.is_empty()) {
        (TraceKind::ControlFlow(_), true) => Some(body_cache_key(interp, fun, &args, label)?),
        _ => None,
    };
    if let Some(key) = &cache_key {
        if let Some(entry) = interp.jax.body_cache.iter().find(|e| e.key == *key) {
            // Only the structure and types are used: the caller binds the equation that
            // stands for the whole construct, with the cached body (`traced_body`).
            let (tree, avals) = (entry.out_tree.clone(), entry.outputs.clone());
            let leaves: Vec<Value> = avals.into_iter().map(|a| Value::Array(Array::unknown(a, BODY_OUTPUT))).collect();
            return unflatten(interp, &tree, &mut leaves.into_iter());
        }
    }
    let (out, record, _) = trace_with_record(interp, fun, args, kwargs, kind, label, None, String::new())?;
    if let Some(key) = cache_key {
        let (tree, avals) = leaf_avals(interp, &out)?;
        if let Some(avals) = avals.into_iter().collect::<Option<Vec<Aval>>>() {
            interp.jax.body_cache.push(BodyCacheEntry { key, fun: fun.clone(), out_tree: Rc::new(tree), outputs: avals, record });
        }
    }
    Ok(out)
}

/// Values mode: the traced body of a control-flow function for these (abstract) arguments,
/// as `trace_call` cached it.
pub(super) fn cached_body(interp: &mut Interp, fun: &Value, args: &[Value], label: &str) -> PyResult<Option<Body>> {
    if interp.values.is_none() || interp.jax.trace_depth() > 0 {
        return Ok(None);
    }
    traced_body(interp, fun, args, label)
}

/// What a control-flow body's trace returns to its caller: only the structure and types of
/// its outputs; the caller binds one equation for the whole construct.
pub(super) const BODY_OUTPUT: &str = "the output of a traced body";

/// The traced body of a control-flow function for these (abstract) arguments, as `trace_call`
/// cached it; `None` when it was not cached or closes over a tracer of a trace that ended.
pub(super) fn traced_body(interp: &mut Interp, fun: &Value, args: &[Value], label: &str) -> PyResult<Option<Body>> {
    let key = body_cache_key(interp, fun, args, label)?;
    let Some(record) = interp.jax.body_cache.iter().find(|e| e.key == key).map(|e| e.record) else { return Ok(None) };
    Ok(record_body(interp, record))
}

/// The jaxpr and consts of a finished trace, if it can still be bound.
pub(super) fn record_body(interp: &Interp, record: usize) -> Option<Body> {
    let r = &interp.jax.records[record];
    let stale = r.consts.iter().any(|c| c.tracer().is_some_and(|t| !interp.jax.is_active(t.trace)));
    let jaxpr = r.jaxpr.clone().filter(|_| !stale)?;
    Some(Body { jaxpr, consts: r.consts.clone() })
}

/// The array leaves of `values` as the inputs of a traced body with input types `want`,
/// converted where weak-type promotion changed them (JAX's `_promote_weak_typed_inputs`);
/// `None` when a leaf is unknown or does not fit.
pub(super) fn conform_operands(interp: &mut Interp, values: &[&Value], want: &[Aval]) -> PyResult<Option<Vec<Rc<Array>>>> {
    let mut leaves = Vec::new();
    for v in values {
        match input_leaves(interp, v)? {
            Some(l) => leaves.extend(l),
            None => return Ok(None),
        }
    }
    if leaves.len() != want.len() || leaves.iter().zip(want).any(|(l, w)| l.aval.shape != w.shape) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(leaves.len());
    for (l, w) in leaves.iter().zip(want) {
        out.push(jnp::convert(interp, l, w.dtype, w.weak)?);
    }
    Ok(Some(out))
}

/// Inside a trace: binds the one equation that stands for a `scan`/`while`/`cond`/`vmap`, its
/// inputs laid out as `Prim` says (the index of a cond, each body's consts, the operands).
/// Outside any trace, values mode runs the bodies directly (`eval_control.rs`) instead.
pub(super) fn bind_control(
    interp: &mut Interp,
    prim: Prim,
    index: Option<Rc<Array>>,
    bodies: &[Body],
    operands: Vec<Rc<Array>>,
) -> PyResult<Vec<Rc<Array>>> {
    let mut ins: Vec<Rc<Array>> = index.into_iter().collect();
    for b in bodies {
        ins.extend(b.consts.iter().cloned());
    }
    ins.extend(operands);
    apply_with_bodies(interp, prim, &ins, bodies.iter().map(|b| b.jaxpr.clone()).collect())
}

pub(super) fn invar_avals(body: &Body) -> Vec<Aval> {
    body.jaxpr.invars.iter().map(|(_, a)| a.clone()).collect()
}

/// The array leaves of `v` as a traced function's inputs see them (Python numbers become
/// arrays); `None` when a leaf is unknown.
pub(super) fn input_leaves(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<Rc<Array>>>> {
    let mut leaves = Vec::new();
    flatten(interp, v, "", &mut leaves)?;
    let mut out = Vec::new();
    for (_, leaf) in leaves {
        if let Value::Array(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::UnknownNumber(_) = leaf {
            match operand(interp, &leaf)? {
                Operand::Array(a) => out.push(a),
                Operand::Unknown => return Ok(None),
            }
        }
    }
    Ok(Some(out))
}

/// `v` with its array leaves replaced, in order, by `arrays`.
pub(in crate::jax) fn replace_array_leaves(interp: &mut Interp, v: &Value, arrays: &mut std::vec::IntoIter<Rc<Array>>) -> PyResult<Value> {
    let mut leaves = Vec::new();
    let tree = flatten(interp, v, "", &mut leaves)?;
    let mapped: Vec<Value> = leaves
        .into_iter()
        .map(|(_, l)| match &l {
            Value::Array(_) => arrays.next().map(Value::Array).unwrap_or(l),
            _ => l,
        })
        .collect();
    unflatten(interp, &tree, &mut mapped.into_iter())
}

/// The avals of the array leaves of some values.
pub(super) fn array_avals(interp: &mut Interp, values: &[&Value]) -> PyResult<Vec<Aval>> {
    let mut out = Vec::new();
    for v in values {
        let mut leaves = Vec::new();
        flatten(interp, v, "", &mut leaves)?;
        out.extend(leaves.iter().filter_map(|(_, l)| l.as_array().map(|a| a.aval.clone())));
    }
    Ok(out)
}

/// A traced control-flow body, cached as JAX caches it.
pub struct BodyCacheEntry {
    pub key: BodyKey,
    /// Held so the function's identity stays unique while the entry lives.
    pub fun: Value,
    pub out_tree: Rc<TreeDef>,
    pub outputs: Vec<Aval>,
    /// The trace record holding the body's jaxpr and constants.
    pub record: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BodyKey {
    fun: usize,
    label: String,
    tree: TreeDef,
    avals: Vec<Option<Aval>>,
}

fn body_cache_key(interp: &mut Interp, fun: &Value, args: &[Value], label: &str) -> PyResult<BodyKey> {
    let (tree, avals) = leaf_avals(interp, &Value::tuple(args.to_vec()))?;
    Ok(BodyKey { fun: fun_identity(fun), label: label.to_string(), tree, avals })
}

/// How one argument's array leaves become input tracers.
#[derive(Clone, Copy)]
pub(super) struct Inputs {
    /// Under grad/jvp the tracers keep the concrete value behind them.
    pub primal: bool,
    /// The argument is differentiated (every argument of a staging trace is): its inexact
    /// leaves are JAX tracers (`Tracer::active`).
    pub differentiated: bool,
    /// Python numbers pass through unchanged (`vmap`).
    pub arrays_only: bool,
}

impl Inputs {
    /// The inputs of a staging trace (`jit`): abstract, every one a JAX tracer.
    pub(super) fn staged(arrays_only: bool) -> Inputs {
        Inputs { primal: false, differentiated: true, arrays_only }
    }
}

/// Replaces the array leaves of one argument with input tracers of the top trace.
pub(super) fn trace_inputs(
    interp: &mut Interp,
    arg: &Value,
    index: usize,
    how: Inputs,
    call_site: Option<Site>,
    originals: &mut Vec<(usize, Rc<Array>)>,
) -> PyResult<Value> {
    let Inputs { primal, differentiated, arrays_only } = how;
    let mut leaves = Vec::new();
    let tree = flatten(interp, arg, "", &mut leaves)?;
    let mut index_paths = Vec::with_capacity(leaves.len());
    tuple_paths(&tree, &mut String::new(), &mut index_paths);
    let mut index_paths = index_paths.into_iter();
    let mut traced = Vec::with_capacity(leaves.len());
    for (path, leaf) in leaves {
        let index_path = index_paths.next();
        traced.push(match &leaf {
            Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::UnknownNumber(_) if arrays_only => leaf,
            Value::Array(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::UnknownNumber(_) => match operand(interp, &leaf)? {
                Operand::Array(a) => {
                    let known = if primal { Some(a.clone()) } else { None };
                    let active = (differentiated && a.aval.dtype.is_inexact()) || a.is_jax_tracer();
                    originals.push((index, a.clone()));
                    let input = interp.jax.new_input(canonical_aval(interp, &a.aval), known, index, call_site, active);
                    interp.jax.input_paths.insert(Rc::as_ptr(&input) as usize, path);
                    if let Some(p) = index_path {
                        interp.jax.input_index_paths.insert(Rc::as_ptr(&input) as usize, p);
                    }
                    Value::Array(input)
                }
                Operand::Unknown => leaf,
            },
            _ => leaf,
        });
    }
    unflatten(interp, &tree, &mut traced.into_iter())
}

/// What a traced function's output is to its transformation.
pub(super) enum TracedOutput {
    Arrays(Rc<TreeDef>, Vec<Rc<Array>>),
    /// A leaf the interpreter cannot know: the transformation's result is unknown.
    Unknown(String),
}

impl crate::jax::JaxState {
    /// Whether the function defined at `def_site` has been traced (jit, `tf.function`).
    pub fn traced_before(&self, def_site: Option<Site>) -> bool {
        def_site.is_some() && self.records.iter().any(|r| r.def_site == def_site)
    }

    /// Ends the innermost trace, without outputs, because `e` left its body: an exception
    /// makes it a trace that raised; a stop (an unknown, a budget, the program's end) one
    /// whose outputs are not known, which is what `trace` and hover then say.
    pub fn abort_trace_on(&mut self, e: &Flow) {
        if matches!(e, Flow::Stop(..)) {
            self.abort_trace_unknown();
        } else {
            self.abort_trace();
        }
    }

    /// Ends the innermost trace on an output tracelens does not know (not an exception).
    pub fn abort_trace_unknown(&mut self) {
        if let Some(record) = self.traces.last().map(|t| t.record) {
            self.records[record].unknown_end = true;
        }
        self.abort_trace();
    }
}

/// Flattens a traced function's output into arrays, raising JAX's TL112 error for a leaf that
/// is not a valid JAX type (a string, an unregistered class instance). Aborts the top trace
/// on every path but success.
pub(super) fn traced_output(interp: &mut Interp, fun: &Value, label: &str, out: &Value) -> PyResult<TracedOutput> {
    let mut leaves = Vec::new();
    let tree = match flatten(interp, out, "", &mut leaves) {
        Ok(t) => Rc::new(t),
        Err(e) => {
            interp.jax.abort_trace_on(&e);
            return Err(e);
        }
    };
    if let Some(record) = interp.jax.traces.last().map(|t| t.record) {
        interp.jax.records[record].out_tree = Some(tree.clone());
    }
    let mut arrays = Vec::with_capacity(leaves.len());
    for (path, leaf) in &leaves {
        let invalid = match operand(interp, leaf) {
            Ok(Operand::Array(a)) => {
                arrays.push(a);
                continue;
            }
            Ok(Operand::Unknown) => matches!(leaf, Value::Instance(i) if i.class.lookup("__tracelens_opaque_base__").is_none()),
            Err(Flow::Raise(_)) => true,
            Err(e) => {
                interp.jax.abort_trace_on(&e);
                return Err(e);
            }
        };
        if !invalid {
            interp.jax.abort_trace_unknown();
            let what = match leaf {
                Value::Opaque(o) => o.what.clone(),
                other => other.type_name(),
            };
            return Ok(TracedOutput::Unknown(what));
        }
        interp.jax.abort_trace();
        let where_ = fun_def_site(fun).map(|s| interp.describe_site(s)).unwrap_or_default();
        let tn = match leaf {
            Value::Instance(i) => format!("__main__.{}", i.class.name),
            other => other.type_name(),
        };
        // JAX names the leaf's position when the output is a container.
        let at = if path.is_empty() { String::new() } else { format!(" at output component {path}") };
        return Err(interp.raise(
            "TypeError",
            Code::InvalidPytree,
            format!(
                "function {} at {where_} traced for {label} returned a value of type <class '{tn}'>{at}, which is not a valid JAX type",
                fun_name(fun)
            ),
        ));
    }
    Ok(TracedOutput::Arrays(tree, arrays))
}

/// The worker behind every transformation: returns the outputs (tracers of the outer trace,
/// or concrete arrays) and the index of the trace record.
#[allow(clippy::too_many_arguments)]
pub(super) fn trace_with_record(
    interp: &mut Interp,
    fun: &Value,
    args: Vec<Value>,
    kwargs: Kwargs,
    kind: TraceKind,
    label: &str,
    jitted: Option<usize>,
    cause: String,
) -> PyResult<(Value, usize, Option<AdTrace>)> {
    let call_site = interp.site();
    let name = fun_name(fun);
    let staging = kind.is_staging();
    let pos = interp.jax.push_trace(kind.clone(), name.clone(), fun_def_site(fun), call_site, cause, jitted);
    interp.jax.traces[pos].forward = label == "jacfwd";
    if matches!(label, "jacfwd" | "hessian") {
        interp.jax.traces[pos].ad_mode = crate::jax::taint::Mode::Forward;
    }
    let record = interp.jax.traces[pos].record;
    // `lax.map` and `while_loop` trace functions of JAX's own or two functions under one label.
    if matches!(kind, TraceKind::ControlFlow(_)) {
        interp.jax.records[record].traced_for = match label {
            "scan" => Some("scan"),
            "cond" => Some("cond"),
            "fori_loop" => Some("fori_loop"),
            _ => None,
        };
    }
    interp.jax.traces[pos].arg_names = param_names(fun);
    interp.jax.records[record].arg_names = param_names(fun);
    let mut traced_args = Vec::with_capacity(args.len());
    let mut originals = Vec::new();
    let differentiated = interp.jax.differentiated.take();
    // vmap passes what it does not map through unchanged, as JAX does: a Python number is
    // never mapped (it has no axis), so `if not flag:` on `in_axes=None`'s `True` is plain Python.
    let arrays_only = matches!(kind, TraceKind::Vmap);
    for (i, a) in args.iter().enumerate() {
        // Under grad, the differentiated arguments are JAX tracers; the others only where
        // they already were (an outer grad's).
        let differentiates = staging || differentiated.as_ref().is_none_or(|d| d.contains(&i));
        let inputs = Inputs { primal: !staging, differentiated: differentiates, arrays_only };
        traced_args.push(trace_inputs(interp, a, i, inputs, call_site, &mut originals)?);
    }
    let result = if is_transformation(fun) {
        // `jax.vmap(jax.grad(loss))`: the transformation traced here is called by user code
        // as far as the reproducer is concerned (the statement the trace records).
        let api = interp.jax.current_api.take();
        let depth = std::mem::take(&mut interp.jax.log.depth);
        let r = interp.call(fun, traced_args, kwargs);
        interp.jax.current_api = api;
        interp.jax.log.depth = depth;
        r
    } else {
        // A library function traced directly (`jax.jvp(jax.nn.relu, ...)`) binds its equations
        // as itself, not as the API that traces it: `relu`'s derivative rule keys on that.
        let api = interp.jax.current_api.take();
        let r = interp.call(fun, traced_args, kwargs);
        interp.jax.current_api = api;
        r
    };
    let out = match result {
        Ok(v) => v,
        Err(e) => {
            interp.jax.abort_trace_on(&e);
            return Err(e);
        }
    };
    let (out_tree, arrays) = match traced_output(interp, fun, label, &out)? {
        TracedOutput::Arrays(tree, arrays) => (tree, arrays),
        TracedOutput::Unknown(what) => {
            return Ok((Value::opaque(format!("result of a traced function with an unknown output ({what})")), record, None))
        }
    };
    // In a staging trace, an output the trace closed over (a cond branch returning a
    // module-level array) is one of its constvars too, so its consts are taken after the
    // outputs are placed: nothing computed there from the trace's abstract inputs is
    // concrete. Under grad/jvp a concrete output may have been computed from the primals by
    // a model the trace could not follow (a boolean mask): taken for a constant it would
    // differentiate to zero, so it is left out, and the mismatch of consts and constvars
    // makes the gradient unknown (`ad::linearize`).
    let (jaxpr, consts) = if staging {
        interp.jax.pop_trace_with_consts(&arrays)
    } else {
        let consts = interp.jax.captured_consts();
        (interp.jax.pop_trace(&arrays), consts)
    };
    interp.jax.records[record].consts = consts.clone();
    // The outputs seen by the caller: concrete values flow out of grad/jvp traces; staging
    // traces bind one higher-order equation whose outputs are what the caller gets.
    let mut outs = Vec::with_capacity(arrays.len());
    let avals: Vec<Aval> = arrays.iter().map(|a| a.aval.clone()).collect();
    if matches!(kind, TraceKind::ControlFlow(_) | TraceKind::Vmap) {
        // The caller binds one equation for the whole construct (`bind_control`).
        outs.extend(avals.iter().map(|a| Array::unknown(a.clone(), BODY_OUTPUT)));
    } else if staging {
        let mut ins: Vec<Rc<Array>> = consts.clone();
        for a in &args {
            let mut l = Vec::new();
            flatten(interp, a, "", &mut l)?;
            for (_, leaf) in l {
                if let Ok(Operand::Array(x)) = operand(interp, &leaf) {
                    ins.push(x);
                }
            }
        }
        let prim = match &kind {
            TraceKind::Jit => Prim::Pjit { name: name.clone() },
            _ => Prim::Remat,
        };
        let bound = apply_with_bodies(interp, prim, &ins, vec![jaxpr.clone()])?;
        outs.extend(instantiate_outputs(interp, &jaxpr, &consts, &ins[consts.len()..], bound, || format!("{}({name})", kind.label()))?);
    } else {
        let deps = array_leaves(interp, &args)?;
        for a in &arrays {
            outs.push(match a.tracer().and_then(|t| t.primal.clone()) {
                Some(p) => p,
                None => abstract_output(interp, a.aval.clone(), &deps, "transformed")?,
            });
        }
    }
    let value = unflatten(interp, &out_tree, &mut outs.into_iter().map(Value::Array).collect::<Vec<_>>().into_iter())?;
    let ad = (!staging).then(|| AdTrace { jaxpr, consts, inputs: originals });
    Ok((value, record, ad))
}

/// Outputs of a staged call: when every input is concrete, the jaxpr is evaluated lazily on
/// them, so Python can still see the values (`if loss < tol: break` after a jitted step).
pub fn instantiate_outputs(
    interp: &mut Interp,
    jaxpr: &Rc<Jaxpr>,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
    bound: Vec<Rc<Array>>,
    label: impl FnOnce() -> String,
) -> PyResult<Vec<Rc<Array>>> {
    if bound.iter().any(|b| b.is_tracer()) {
        return Ok(bound);
    }
    let instantiated = if interp.values.is_some() {
        // Values mode: each equation is computed in program order, at its own line, and
        // control flow runs its bodies. The label is written out only here: a jitted call
        // outside values mode (every call of an editor's analysis) never reads it.
        let label = label();
        crate::jax::eval_jaxpr::instantiate_with(
            jaxpr,
            consts,
            inputs,
            &mut crate::jax::eval_control::ValuesHooks { interp, label: &label },
        )?
    } else {
        let avals = bound.iter().map(|b| b.aval.clone()).collect();
        return Ok(crate::jax::array_model::StagedCall::outputs(jaxpr.clone(), consts.to_vec(), inputs.to_vec(), avals));
    };
    if let Some(outs) = &instantiated {
        crate::jax::numerics::raise_pending_after_jit(interp, outs)?;
    }
    Ok(match instantiated {
        Some(outs) if outs.len() == bound.len() => outs,
        _ => bound,
    })
}

/// A pytree with its Python numbers (leaves that are `int`, `float` or `bool`) made arrays, as
/// JAX's transformations see them.
pub(super) fn numbers_as_arrays(interp: &mut Interp, v: &Value) -> PyResult<Value> {
    let mut leaves = Vec::new();
    let tree = flatten(interp, v, "", &mut leaves)?;
    if !leaves.iter().any(|(_, l)| matches!(l, Value::Int(_) | Value::Float(_) | Value::Bool(_))) {
        return Ok(v.clone());
    }
    let mut mapped = Vec::with_capacity(leaves.len());
    for (_, l) in leaves {
        mapped.push(match l {
            l @ (Value::Int(_) | Value::Float(_) | Value::Bool(_)) => match jnp::operand(interp, &l)? {
                jnp::Operand::Array(a) => Value::Array(a),
                jnp::Operand::Unknown => l,
            },
            l => l,
        });
    }
    unflatten(interp, &tree, &mut mapped.into_iter())
}

pub(super) fn map_abstract(
    interp: &mut Interp,
    v: &Value,
    inputs: &[Rc<Array>],
    f: &dyn Fn(&Aval) -> Aval,
    why: &'static str,
) -> PyResult<Value> {
    let mut leaves = Vec::new();
    let tree = flatten(interp, v, "", &mut leaves)?;
    let mut mapped = Vec::with_capacity(leaves.len());
    for (_, l) in leaves {
        mapped.push(match &l {
            Value::Array(a) => Value::Array(abstract_output(interp, f(&a.aval), inputs, why)?),
            _ => l,
        });
    }
    unflatten(interp, &tree, &mut mapped.into_iter())
}

/// The results of a transformation whose values are not computed: tracers of the enclosing
/// staging trace when there is one (so Python cannot see them, exactly as in JAX), concrete
/// arrays of unknown value otherwise. `inputs` are what the results depend on.
pub fn abstract_output(interp: &mut Interp, aval: Aval, inputs: &[Rc<Array>], why: &'static str) -> PyResult<Rc<Array>> {
    // Under grad/jvp the result must stay connected to its inputs, or differentiation would
    // take it for a constant: it is an opaque equation of that trace.
    let live_tracers = inputs.iter().filter_map(|i| i.tracer()).map(|t| interp.jax.is_active(t.trace)).collect::<Vec<bool>>();
    let under_ad = !live_tracers.is_empty() && live_tracers.iter().all(|&live| live);
    if interp.jax.innermost_staging().is_some() || under_ad {
        apply1(interp, Prim::opaque(why, aval), inputs)
    } else {
        Ok(Array::unknown(aval, why))
    }
}

/// The array leaves of some values (what a transformation's results depend on).
pub(super) fn array_leaves(interp: &mut Interp, values: &[Value]) -> PyResult<Vec<Rc<Array>>> {
    let mut out = Vec::new();
    for v in values {
        let mut leaves = Vec::new();
        flatten(interp, v, "", &mut leaves)?;
        out.extend(leaves.into_iter().filter_map(|(_, l)| l.as_array().cloned()));
    }
    Ok(out)
}

/// `v` with each array leaf replaced by `f` of it, which may raise (`lax.stop_gradient` of a
/// pytree binds its primitive on each leaf).
pub fn try_map_arrays(
    interp: &mut Interp,
    v: &Value,
    f: &mut dyn FnMut(&mut Interp, &Rc<Array>) -> PyResult<Rc<Array>>,
) -> PyResult<Value> {
    let mut leaves = Vec::new();
    let tree = flatten(interp, v, "", &mut leaves)?;
    let mut mapped = Vec::with_capacity(leaves.len());
    for (_, leaf) in leaves {
        mapped.push(match &leaf {
            Value::Array(a) => Value::Array(f(interp, a)?),
            _ => leaf,
        });
    }
    unflatten(interp, &tree, &mut mapped.into_iter())
}

pub(super) fn map_arrays(interp: &mut Interp, v: &Value, f: &dyn Fn(&Rc<Array>) -> Rc<Array>) -> PyResult<Value> {
    try_map_arrays(interp, v, &mut |_, a| Ok(f(a)))
}
