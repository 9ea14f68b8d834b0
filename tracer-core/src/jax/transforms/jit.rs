//! `jax.jit` with its cache modelled (design.md §4): static arguments, cache keys and
//! entries, tracing the body once per key (or once on the unknown-arguments route when a
//! leaf is unknown), and calls that hit the cache. Why a function is traced again is
//! `retrace.rs`.

use super::dispatch::{kw, obj, JaxObject};
use super::pytrees::{flatten, unflatten, TreeDef};
use super::trace::{
    fun_identity, fun_name, instantiate_outputs, jit_def_site, library_body, param_names, trace_inputs, traced_output, Inputs, TracedOutput,
};
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::{HashKey, Value};
use crate::interp::{Flow, Interp, PyResult, Site};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::dtypes;
use crate::jax::ir::{Jaxpr, Prim};
use crate::jax::numpy::{operand, Operand};
use crate::jax::{apply_with_bodies, TraceKind};
use std::rc::Rc;

/// `jax.jit(f, static_argnums=..., static_argnames=...)`.
#[derive(Debug)]
pub struct Jitted {
    pub fun: Value,
    pub name: String,
    pub static_argnums: Vec<i64>,
    pub static_argnames: Vec<String>,
    pub donate: bool,
    /// Index into `JaxState::jitted`.
    pub info: usize,
    /// The wrapped function's positional parameters, read on every call.
    pub params: Vec<String>,
    /// A shim's wrapper (nnx.jit's) that names the user's arguments after `fun`'s: where the
    /// user's parameters start in `params`. The wrapper returns `(states, out, node_leaves)`.
    pub user_params: Option<usize>,
    /// equinox's `filter_jit` (a shim passes `_tracelens_filter=True`): every array leaf of
    /// the arguments is traced and every other leaf is static, part of the cache key by its
    /// path; outputs that are not arrays come back as the trace left them.
    pub filter: bool,
    /// `jax.pmap`: tracelens does not model its per-device mapping, so every call traces the
    /// body with its dynamic arguments unknown (what does not depend on them is still checked)
    /// and returns an unknown.
    pub pmap: bool,
}

/// Per jitted function: its cache entries and call counts (what `tracelens trace` prints).
#[derive(Debug, Clone)]
pub struct JitInfo {
    /// Held so the function's identity stays unique while its cache entries live (JAX keys
    /// the cache by a weak reference to it).
    pub fun: Value,
    pub name: String,
    pub def_site: Option<Site>,
    pub fun_identity: usize,
    pub entries: Vec<CacheEntry>,
    pub calls: usize,
    /// The loop passes running when the function was jitted (`Interp::loop_passes`).
    pub created_in: Vec<(usize, u64)>,
}

#[derive(Debug, Clone)]
pub struct CacheEntry {
    pub key: CacheKey,
    pub outputs: Vec<Aval>,
    pub out_tree: Rc<TreeDef>,
    pub jaxpr: Option<Rc<Jaxpr>>,
    pub consts: Vec<Rc<Array>>,
    pub record: usize,
    pub call_site: Option<Site>,
    /// `JaxState::entry_run` when it was traced.
    pub entry_run: u32,
    /// filter_jit: the output leaves that are not arrays (`None` for an array); empty for jit.
    pub static_out: Vec<Option<Value>>,
}

#[derive(Debug, Clone)]
pub struct CacheKey {
    pub statics: Vec<(String, HashKey, String)>,
    pub tree: Rc<TreeDef>,
    pub leaves: Vec<(String, Aval)>,
    pub x64: bool,
}

/// Static values compare as Python does, by hash key, never by how they print: `2` and `2.0`
/// are one cache entry to JAX (and to equinox's filter_jit).
impl PartialEq for CacheKey {
    fn eq(&self, other: &Self) -> bool {
        let statics = |k: &CacheKey| k.statics.iter().map(|(n, h, _)| (n.clone(), h.clone())).collect::<Vec<_>>();
        statics(self) == statics(other) && self.tree == other.tree && self.leaves == other.leaves && self.x64 == other.x64
    }
}

/// The keyword `jax.pmap` hands `make_jit` (it makes a `Jitted` with `pmap` set).
pub(super) const PMAP_MARK: &str = "_tracelens_pmap";

pub(super) fn make_jit(interp: &mut Interp, fun: Value, kwargs: &Kwargs) -> PyResult<Value> {
    let mut static_argnums = Vec::new();
    let mut static_argnames = Vec::new();
    if let Some(v) = kw(kwargs, "static_argnums") {
        match v {
            Value::Int(i) => static_argnums.push(*i),
            Value::None => {}
            other => {
                for x in interp.iterate(other)? {
                    if let Some(i) = crate::interp::ops::as_int(&x) {
                        static_argnums.push(i);
                    }
                }
            }
        }
    }
    if let Some(v) = kw(kwargs, "static_argnames") {
        match v {
            Value::Str(s) => static_argnames.push(s.to_string()),
            Value::None => {}
            other => {
                for x in interp.iterate(other)? {
                    if let Value::Str(s) = x {
                        static_argnames.push(s.to_string());
                    }
                }
            }
        }
    }
    if fun.is_opaque() {
        return Ok(Value::opaque("jit of an unknown function"));
    }
    let params = param_names(&fun);
    let has_kwargs = matches!(&fun, Value::Function(f) if f.def.params.kwarg.is_some());
    let kwonly: Vec<String> = match &fun {
        Value::Function(f) => f.def.params.kwonly.iter().map(|p| p.name.to_string()).collect(),
        _ => Vec::new(),
    };
    // JAX checks static_argnums when jit wraps the function, against its positional parameters.
    let has_varargs = matches!(&fun, Value::Function(f) if f.def.params.vararg.is_some());
    if matches!(fun, Value::Function(_)) && !has_varargs {
        if static_argnums.iter().any(|&i| i >= params.len() as i64 || i < -(params.len() as i64)) {
            return Err(interp.raise(
                "ValueError",
                Code::BadStaticArg,
                format!(
                    "Jitted function has static_argnums={}, but only accepts {} positional arguments.",
                    tuple_text(&static_argnums),
                    params.len()
                ),
            ));
        }
    }
    if matches!(fun, Value::Function(_)) {
        let bad: Vec<&String> = static_argnames.iter().filter(|n| !params.contains(n) && !kwonly.contains(n)).collect();
        if !bad.is_empty() && !has_kwargs {
            let set = bad.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
            return Err(interp.raise(
                "ValueError",
                Code::BadStaticArg,
                format!("Jitted function has invalid argnames {{{set}}} in static_argnames. Function does not take these args."),
            ));
        }
        // static_argnames also mark the positional parameter of that name static, and vice versa.
        for n in static_argnames.clone() {
            if let Some(i) = params.iter().position(|p| *p == n) {
                if !static_argnums.contains(&(i as i64)) {
                    static_argnums.push(i as i64);
                }
            }
        }
        for &i in &static_argnums.clone() {
            if i >= 0 && (i as usize) < params.len() && !static_argnames.contains(&params[i as usize]) {
                static_argnames.push(params[i as usize].clone());
            }
        }
    }
    let identity = fun_identity(&fun);
    let name = fun_name(&fun);
    let def_site = jit_def_site(&fun);
    let info = match interp.jax.jitted.iter().position(|j| j.fun_identity == identity && identity != 0) {
        Some(i) => i,
        None => {
            interp.jax.jitted.push(JitInfo {
                fun: fun.clone(),
                name: name.clone(),
                def_site,
                fun_identity: identity,
                entries: Vec::new(),
                calls: 0,
                created_in: interp.loop_passes.clone(),
            });
            interp.jax.jitted.len() - 1
        }
    };
    let filter = kw(kwargs, "_tracelens_filter").is_some_and(|v| matches!(v, Value::Bool(true)));
    let pmap = kw(kwargs, PMAP_MARK).is_some();
    // A shim's wrapper taking the user's arguments as `*args` after its own (nnx.jit's) passes
    // `_tracelens_names_from=fun`: those positions take `fun`'s names (`x`, not `args[5]`).
    let user_params = kw(kwargs, "_tracelens_names_from").map(|_| params.len());
    let params = match kw(kwargs, "_tracelens_names_from") {
        Some(user) => [params, param_names(&user)].concat(),
        None => params,
    };
    Ok(obj(JaxObject::Jitted(Rc::new(Jitted {
        fun,
        name,
        static_argnums,
        static_argnames,
        donate: false,
        info,
        params,
        user_params,
        filter,
        pmap,
    }))))
}

/// `f(*args)` with `n_args` positional arguments binds without error: every parameter is a
/// plain positional one and the count is within what the defaults allow.
fn binds_trivially(f: &crate::interp::value::Function, n_args: usize, no_kwargs: bool) -> bool {
    let p = &f.def.params;
    let positional = p.posonly.len() + p.args.len();
    let required = positional - f.defaults.len().min(positional);
    no_kwargs && p.vararg.is_none() && p.kwarg.is_none() && p.kwonly.is_empty() && (required..=positional).contains(&n_args)
}

pub(super) fn call_jitted(interp: &mut Interp, j: &Rc<Jitted>, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    interp.jax.staged_calls += 1;
    // The program called it, even if the call raises before any trace (an unhashable static
    // argument): the route for what nothing called (`entry_staged.rs`) must not trace it.
    if let Value::Function(f) = super::trace::unwrapped(&j.fun).unwrap_or_else(|| j.fun.clone()) {
        interp.called.insert(Rc::as_ptr(&f.def) as usize);
    }
    // Arguments that do not fit the signature fail before any cache lookup (no retrace).
    // JAX still counts it as a trace (a cache miss whose tracing raised), but it is no retrace
    // worth explaining.
    let bind_check = match &j.fun {
        Value::Function(f) if !binds_trivially(f, args.len(), kwargs.is_empty()) => Some(f),
        _ => None,
    };
    if let Some(f) = bind_check {
        check_signature(interp, j, f, &args, &kwargs)?;
    }
    let params = &j.params;
    let nargs = args.len() as i64;
    // pmap: the body sees one device's slice of each argument, which is not modelled.
    let (args, kwargs) = if j.pmap { unknown_dynamic_arguments(j, args, kwargs) } else { (args, kwargs) };
    // Split static from dynamic arguments.
    let mut statics = Vec::new();
    let mut dyn_args = Vec::new();
    let mut dyn_positions = Vec::new();
    // A static argument whose hash is not known (a config from an unknown loader): the body
    // is traced with it as it is, on the unknown-arguments route.
    let mut unknown_static = false;
    for (i, a) in args.iter().enumerate() {
        let is_static = j.static_argnums.iter().any(|&s| s == i as i64 || (s < 0 && s + nargs == i as i64));
        if is_static {
            let h = match interp.hash_key(a) {
                Ok(h) => h,
                Err(Flow::Stop(crate::interp::StopReason::Unknown(_), _)) if interp.abstract_unknowns => {
                    unknown_static = true;
                    continue;
                }
                Err(hashing @ Flow::Raise(_)) => {
                    let r = interp.repr(a).unwrap_or_else(|_| "...".into());
                    return Err(unhashable_static(interp, a, &r, &hashing));
                }
                Err(e) => return Err(e),
            };
            let name = params.get(i).cloned().unwrap_or_else(|| format!("args[{i}]"));
            let shown = interp.repr(a).unwrap_or_default();
            statics.push((name, h, shown));
        } else {
            dyn_args.push(a.clone());
            dyn_positions.push(i);
        }
    }
    let mut dyn_kwargs = Vec::new();
    for (k, v) in &kwargs {
        if j.static_argnames.iter().any(|n| n == k.as_ref()) {
            let h = match interp.hash_key(v) {
                Ok(h) => h,
                Err(Flow::Stop(crate::interp::StopReason::Unknown(_), _)) if interp.abstract_unknowns => {
                    unknown_static = true;
                    continue;
                }
                Err(hashing @ Flow::Raise(_)) => {
                    let r = interp.repr(v).unwrap_or_default();
                    return Err(unhashable_static(interp, v, &r, &hashing));
                }
                Err(e) => return Err(e),
            };
            let shown = interp.repr(v).unwrap_or_default();
            statics.push((k.to_string(), h, shown));
        } else {
            dyn_kwargs.push((k.clone(), v.clone()));
        }
    }
    // Flatten dynamic arguments to leaves with their paths and avals.
    let mut leaves = Vec::new();
    let mut trees = Vec::new();
    let vararg = if j.user_params.is_none() { super::trace::vararg_name(&j.fun) } else { None };
    for (n, a) in dyn_args.iter().enumerate() {
        let p = dyn_positions[n];
        let pname = params.get(p).cloned().unwrap_or_else(|| match &vararg {
            Some(v) => format!("{v}[{}]", p - params.len()),
            None => format!("args[{p}]"),
        });
        trees.push(flatten(interp, a, &pname, &mut leaves)?);
    }
    for (k, v) in &dyn_kwargs {
        trees.push(flatten(interp, v, k, &mut leaves)?);
    }
    let mut leaf_avals = Vec::with_capacity(leaves.len());
    let mut unknown_leaves = false;
    for (path, leaf) in leaves.iter_mut() {
        // The key keeps the path; the leaves are read for their values only from here on.
        let path = std::mem::take(path);
        match &*leaf {
            Value::Opaque(_) | Value::UnknownNumber(_) if j.filter && interp.abstract_unknowns => unknown_leaves = true,
            Value::Opaque(_) if interp.abstract_unknowns => unknown_leaves = true,
            Value::Opaque(_) => return Ok(Value::opaque("result of a jitted call on unknown arguments")),
            Value::UnknownNumber(_) if j.filter => return Ok(Value::opaque("result of a jitted call on unknown arguments")),
            Value::Array(a) => {
                let d = dtypes::canonicalize(a.aval.dtype, interp.jax.config);
                // A NumPy array is never weakly typed (`np.full(3, 2.0)` is float64).
                let weak = a.aval.weak && !a.numpy.get();
                leaf_avals.push((path, Aval { shape: a.aval.shape.clone(), dtype: d, weak }));
            }
            // filter_jit: what is not an array is static, hashed as equinox hashes it.
            other if j.filter => match interp.hash_key(other) {
                Ok(h) => {
                    let shown = interp.repr(other).unwrap_or_default();
                    statics.push((path, h, shown));
                }
                // equinox hashes the static leaves: one that cannot be hashed is its error.
                Err(hashing @ Flow::Raise(_)) if matches!(&hashing, Flow::Raise(e) if !e.conditional) => {
                    let shown = interp.repr(other).unwrap_or_default();
                    return Err(unhashable_filtered_static(interp, &path, &shown, &hashing));
                }
                Err(Flow::Raise(_)) => return Ok(Value::opaque("result of a filtered jitted call on an unhashable leaf")),
                Err(e) => return Err(e),
            },
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                if let Operand::Array(a) = operand(interp, leaf)? {
                    leaf_avals.push((path, a.aval.clone()));
                }
            }
            other => return Err(not_an_array_argument(interp, j, other, &path)),
        }
    }
    if unknown_leaves || unknown_static {
        return trace_with_unknown_arguments(interp, j, &args, &dyn_positions, kwargs);
    }
    let key = CacheKey { statics, tree: Rc::new(TreeDef::Tuple(trees)), leaves: leaf_avals, x64: interp.jax.config.enable_x64 };
    interp.jax.jitted[j.info].calls += 1;
    let call_site = interp.site();
    let hit = interp.jax.jitted[j.info].entries.iter().position(|e| e.key == key);
    let entry_index = match hit {
        Some(i) => i,
        None => cache_miss(interp, j, key, &args, &dyn_positions, &kwargs, call_site)?,
    };
    let entry = &interp.jax.jitted[j.info].entries[entry_index];
    let (mut ins, jaxpr, out_tree) = (entry.consts.clone(), entry.jaxpr.clone(), entry.out_tree.clone());
    let static_out = entry.static_out.clone();
    let n_consts = ins.len();
    // The call: a pjit equation in an enclosing trace, or concrete outputs evaluated lazily.
    for (_, leaf) in &leaves {
        if j.filter && !matches!(leaf, Value::Array(_)) {
            continue;
        }
        if let Operand::Array(a) = operand(interp, leaf)? {
            ins.push(a);
        }
    }
    let bodies: Vec<Rc<Jaxpr>> = jaxpr.iter().cloned().collect();
    let bound = apply_with_bodies(interp, Prim::Pjit { name: j.name.clone() }, &ins, bodies)?;
    let outs = match &jaxpr {
        Some(jx) => {
            let (consts, args) = ins.split_at(n_consts);
            instantiate_outputs(interp, jx, consts, args, bound, || format!("jit({})", j.name))?
        }
        None => bound,
    };
    // JAX hands back new arrays, never the arguments themselves: an output that is an input
    // (`jax.jit(lambda v: v)(x) is x` is False, a NumPy argument comes back a JAX array) is a
    // new array with its value.
    let outs: Vec<Rc<Array>> = outs.into_iter().map(|o| if ins.iter().any(|i| Rc::ptr_eq(i, &o)) { o.as_jax() } else { o }).collect();
    let mut arrays = outs.into_iter().map(Value::Array);
    let out_leaves: Vec<Value> = if static_out.is_empty() {
        arrays.collect()
    } else {
        static_out.into_iter().map(|s| s.or_else(|| arrays.next()).unwrap_or(Value::None)).collect()
    };
    unflatten(interp, &out_tree, &mut out_leaves.into_iter())
}

/// A call whose key no cache entry has: the trace is replayed from the memo or traced, and
/// becomes a new entry, whose index it returns.
#[inline(never)]
fn cache_miss(
    interp: &mut Interp,
    j: &Rc<Jitted>,
    key: CacheKey,
    args: &[Value],
    dyn_positions: &[usize],
    kwargs: &Kwargs,
    call_site: Option<Site>,
) -> PyResult<usize> {
    let cause = super::retrace::retrace_cause(interp, j, &key, call_site);
    // A filtered trace's static outputs are Python values the memo does not keep.
    let replayed = if j.filter { None } else { crate::jax::memo::replay(interp, j, &key, call_site, &cause) };
    let (record, jaxpr, consts, out_tree, outputs, static_out) = match replayed {
        Some((record, jaxpr, out_tree, outputs)) => (record, Some(jaxpr), Vec::new(), out_tree, outputs, Vec::new()),
        None => {
            if !j.filter {
                crate::jax::memo::start(interp, j);
            }
            let traced = trace_jit_body(interp, j, args, dyn_positions, kwargs.clone(), &cause);
            let (_, record, jaxpr, consts, out_tree, outputs, static_out) = match traced {
                Ok(body) => body,
                Err(flow) => {
                    if !j.filter {
                        crate::jax::memo::abandon(interp);
                    }
                    return Err(flow);
                }
            };
            if !j.filter {
                crate::jax::memo::finish(interp, j, &key, record);
            }
            (record, jaxpr, consts, out_tree, outputs, static_out)
        }
    };
    // The trace's arguments are the key's leaves, in order: they name them.
    if let Some(r) = interp.jax.records.get_mut(record).filter(|r| r.args.len() == key.leaves.len()) {
        r.arg_paths = key.leaves.iter().map(|(path, _)| path.clone()).collect();
        r.out_paths = super::pytrees::result_paths(&out_tree, j.user_params.map(|at| &j.params[at..]));
    }
    let entry_run = interp.jax.entry_run;
    interp.jax.jitted[j.info].entries.push(CacheEntry { key, outputs, out_tree, jaxpr, consts, record, call_site, entry_run, static_out });
    Ok(interp.jax.jitted[j.info].entries.len() - 1)
}

/// Arguments that do not fit the signature fail before any cache lookup (no retrace). JAX
/// still counts it as a trace (a cache miss whose tracing raised), but it is no retrace
/// worth explaining.
#[cold]
#[inline(never)]
fn check_signature(
    interp: &mut Interp,
    j: &Jitted,
    f: &Rc<crate::interp::value::Function>,
    args: &[Value],
    kwargs: &Kwargs,
) -> PyResult<()> {
    let scratch = Rc::new(crate::interp::value::Scope::default());
    if let Err(e) = interp.bind_arguments(f, &scratch, args.to_vec(), kwargs.clone()) {
        let site = interp.site();
        interp.jax.push_trace(
            TraceKind::Jit,
            j.name.clone(),
            jit_def_site(&j.fun),
            site,
            "the arguments do not match the signature".into(),
            Some(j.info),
        );
        interp.jax.abort_trace();
        return Err(e);
    }
    Ok(())
}

/// JAX's error for a dynamic leaf that is not an array, a Python number or a pytree.
#[cold]
#[inline(never)]
fn not_an_array_argument(interp: &mut Interp, j: &Jitted, leaf: &Value, path: &str) -> Flow {
    let tn = match leaf {
        Value::Instance(i) => format!("__main__.{}", i.class.name),
        v => v.type_name(),
    };
    let where_ = jit_def_site(&j.fun).map(|s| interp.describe_site(s)).unwrap_or_default();
    interp.raise(
        "TypeError",
        Code::InvalidPytree,
        format!(
            "Error interpreting argument to <function {} at {where_}> as an abstract array. The problematic value is of type <class '{tn}'> and was passed to the function at path {path}.\nThis typically means that a jit-wrapped function was called with a non-array argument, and this argument was not marked as static using the static_argnums or static_argnames parameters of jax.jit.",
            j.name
        ),
    )
}

/// The traced output, the trace record, the jaxpr and its constants, the output tree, the
/// output avals, and (filter_jit) the output leaves that are not arrays, `None` for an array.
type JitBody = (Value, usize, Option<Rc<Jaxpr>>, Vec<Rc<Array>>, Rc<TreeDef>, Vec<Aval>, Vec<Option<Value>>);

/// A jitted call with leaves the interpreter does not know (a batch from an unmodelled data
/// loader, a model from an unmodelled library). JAX traces it with avals tracelens cannot
/// give, so the body is traced with those leaves unknown — once per function and call site —
/// and what does not depend on them is checked: a Python `if` on the result of a `jnp` op,
/// a trace-time `print`, a leaked tracer. The call returns an unknown, and no cache entry:
/// retracing is only ever reported between known keys.
fn trace_with_unknown_arguments(
    interp: &mut Interp,
    j: &Rc<Jitted>,
    args: &[Value],
    dyn_positions: &[usize],
    kwargs: Kwargs,
) -> PyResult<Value> {
    let unknown = || Value::opaque("the result of a jitted call on unknown arguments");
    let site = interp.site();
    // A summarised loop's last pass stands for calls that hit the cache of a function the
    // loop traced: not traced again on the unknowns that pass has (`loop_summary.rs`).
    if interp.summary_passes > 0 && interp.jax.traced_before(jit_def_site(&j.fun)) {
        return Ok(cache_hit_of_unknown_values(interp, j, site).unwrap_or_else(unknown));
    }
    if !interp.jax.traced_with_unknowns.insert((j.info, site)) {
        return Ok(unknown());
    }
    // Traced from the route that calls what nothing called, or from annotations that leave
    // some arguments' shapes unstated (`key: jax.Array`), it keeps that route's name.
    let unknown_route = match interp.jax.route {
        r @ (crate::jax::Route::Uncalled | crate::jax::Route::Annotations) => r,
        _ => crate::jax::Route::UnknownArguments,
    };
    let route = std::mem::replace(&mut interp.jax.route, unknown_route);
    let traced = trace_jit_body(interp, j, args, dyn_positions, kwargs, "traced with arguments the interpreter does not know");
    interp.jax.route = route;
    match traced {
        Ok(_) => Ok(unknown()),
        // Only what does not depend on the unknown arguments is a finding: Python control
        // flow and conversions on tracers, and leaked tracers. A shape, dtype or structure
        // error, or a plain Python exception, may come from what is not known.
        Err(Flow::Raise(exc)) if !matches!(exc.code, Code::Concretization | Code::TracerToNumpy | Code::LeakedTracer) => {
            Err(interp.stop_unknown(format!("{} raised while traced with unknown arguments", exc.class.name)))
        }
        Err(flow) => Err(flow),
    }
}

/// What a call that hits the cache entry traced at `site` (else the latest) returns, its
/// arrays of the entry's avals with their values unknown: in a summarised loop's last pass,
/// the call stands for the cache hits of the passes after those walked.
fn cache_hit_of_unknown_values(interp: &mut Interp, j: &Rc<Jitted>, site: Option<Site>) -> Option<Value> {
    let entries = &interp.jax.jitted[j.info].entries;
    let entry = entries.iter().rev().find(|e| e.call_site == site).or(entries.last())?;
    let (out_tree, static_out, outputs) = (entry.out_tree.clone(), entry.static_out.clone(), entry.outputs.clone());
    let mut arrays = outputs.into_iter().map(|aval| Value::Array(Array::unknown(aval, "the result of a jitted call in a summarised loop")));
    let leaves: Vec<Value> = if static_out.is_empty() {
        arrays.collect()
    } else {
        static_out.into_iter().map(|s| s.or_else(|| arrays.next()).unwrap_or(Value::None)).collect()
    };
    unflatten(interp, &out_tree, &mut leaves.into_iter()).ok()
}

fn trace_jit_body(
    interp: &mut Interp,
    j: &Rc<Jitted>,
    args: &[Value],
    dyn_positions: &[usize],
    kwargs: Kwargs,
    cause: &str,
) -> PyResult<JitBody> {
    let call_site = interp.site();
    let pos = interp.jax.push_trace(TraceKind::Jit, j.name.clone(), jit_def_site(&j.fun), call_site, cause.to_string(), Some(j.info));
    let record = interp.jax.traces[pos].record;
    if j.pmap {
        interp.jax.records[record].traced_for = Some("pmap");
    }
    interp.jax.records[record].shown_as = library_body(&j.fun);
    interp.jax.traces[pos].arg_names = j.params.clone();
    interp.jax.records[record].arg_names = j.params.clone();
    let run = || -> PyResult<Value> {
        let mut call_args = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            call_args.push(if dyn_positions.contains(&i) {
                trace_inputs(interp, a, i, Inputs::staged(j.filter), call_site, &mut Vec::new())?
            } else {
                a.clone()
            });
        }
        let mut call_kwargs = Vec::new();
        let nparams = interp.jax.traces[pos].arg_names.len();
        for (k, v) in kwargs {
            if j.static_argnames.iter().any(|n| n == k.as_ref()) {
                call_kwargs.push((k, v));
                continue;
            }
            let idx = interp.jax.traces[pos].arg_names.iter().position(|n| n == k.as_ref()).unwrap_or(nparams);
            let traced = trace_inputs(interp, &v, idx, Inputs::staged(j.filter), call_site, &mut Vec::new())?;
            call_kwargs.push((k, traced));
        }
        interp.call(&j.fun, call_args, call_kwargs)
    };
    // The trace ends here whatever happens inside: an analysis that goes on past an unknown
    // must not go on inside a trace that is over.
    let out = match run() {
        Ok(out) => out,
        Err(e) => {
            interp.jax.abort_trace_on(&e);
            return Err(e);
        }
    };
    let leaked = interp.jax.traces[pos].leaked.take();
    // filter_jit: the leaves that are not arrays come back as they are (equinox's `Static`).
    let (dynamic, static_out, full_tree) = if j.filter {
        let mut leaves = Vec::new();
        let tree = match flatten(interp, &out, "", &mut leaves) {
            Ok(t) => t,
            Err(e) => {
                interp.jax.abort_trace();
                return Err(e);
            }
        };
        let is_dynamic = |v: &Value| matches!(v, Value::Array(_) | Value::Opaque(_));
        let dynamic = leaves.iter().filter(|(_, v)| is_dynamic(v)).map(|(_, v)| v.clone()).collect();
        let static_out = leaves.into_iter().map(|(_, v)| if is_dynamic(&v) { None } else { Some(v) }).collect();
        (Value::tuple(dynamic), static_out, Some(Rc::new(tree)))
    } else {
        (out.clone(), Vec::new(), None)
    };
    // `traced_output` ends the trace itself on every path but success.
    let (out_tree, arrays) = match traced_output(interp, &j.fun, "jit", &dynamic)? {
        TracedOutput::Arrays(tree, arrays) => (full_tree.unwrap_or(tree), arrays),
        TracedOutput::Unknown(what) => return Err(interp.stop_unknown(format!("a jitted function returned an unknown value ({what})"))),
    };
    let consts = interp.jax.captured_consts();
    interp.jax.records[record].consts = consts.clone();
    let jaxpr = interp.jax.pop_trace(&arrays);
    // JAX lets a leaked tracer into a jitted function as a constant, finishes the trace, and
    // raises when the jitted call compiles, at the call.
    if let Some(leaked) = leaked {
        return Err(crate::jax::errors::leaked_tracer(interp, &leaked));
    }
    let outputs = arrays.iter().map(|a| a.aval.clone()).collect();
    Ok((out, record, Some(jaxpr), consts, out_tree, outputs, static_out))
}

/// The arguments of a pmapped call with every dynamic one unknown.
fn unknown_dynamic_arguments(j: &Jitted, args: Vec<Value>, kwargs: Kwargs) -> (Vec<Value>, Kwargs) {
    let nargs = args.len() as i64;
    let unknown = || Value::opaque("a per-device slice of a pmapped argument (pmap's mapping is not modelled)");
    let args = args
        .into_iter()
        .enumerate()
        .map(|(i, a)| if j.static_argnums.iter().any(|&s| s == i as i64 || (s < 0 && s + nargs == i as i64)) { a } else { unknown() })
        .collect();
    let kwargs =
        kwargs.into_iter().map(|(k, v)| if j.static_argnames.iter().any(|n| n == k.as_ref()) { (k, v) } else { (k, unknown()) }).collect();
    (args, kwargs)
}

/// JAX's error for a static argument that cannot be hashed; `hashing` is the TypeError
/// hashing raised, which names the innermost unhashable value (`unhashable type: 'Config'`).
fn unhashable_static(interp: &Interp, v: &Value, shown: &str, hashing: &Flow) -> Flow {
    let tn = type_path(v);
    let error = match hashing {
        Flow::Raise(e) if e.message.starts_with("unhashable type") => e.message.clone(),
        _ => format!("unhashable type: '{}'", tn.rsplit('.').next().unwrap_or(&tn)),
    };
    interp.raise(
        "ValueError",
        Code::BadStaticArg,
        format!(
            "Non-hashable static arguments are not supported. An error occurred while trying to hash an object of type <class '{tn}'>, {shown}. The error was:\nTypeError: {error}\n"
        ),
    )
}

/// equinox's error for a static leaf of filter_jit's arguments that cannot be hashed: equinox
/// hashes the static part of the arguments as one tuple, so JAX's message names a tuple.
fn unhashable_filtered_static(interp: &Interp, path: &str, shown: &str, hashing: &Flow) -> Flow {
    let error = match hashing {
        Flow::Raise(e) => e.message.clone(),
        _ => "unhashable type".to_string(),
    };
    interp.raise(
        "ValueError",
        Code::BadStaticArg,
        format!(
            "Non-hashable static arguments are not supported. An error occurred while trying to hash an object of type <class 'tuple'>, the static part of the arguments, which holds {path} = {shown}. The error was:\nTypeError: {error}\n"
        ),
    )
}

/// The class of `v` as `type()` prints it (`__main__.Config` for the program's own classes).
fn type_path(v: &Value) -> String {
    match v {
        Value::Array(_) => "jaxlib._jax.ArrayImpl".to_string(),
        Value::Instance(i) => format!("__main__.{}", i.class.name),
        other => other.type_name(),
    }
}

/// The aval a transformation sees for an argument: NumPy's 64-bit dtypes are canonicalized.
pub(super) fn canonical_aval(interp: &Interp, aval: &Aval) -> Aval {
    Aval { shape: aval.shape.clone(), dtype: dtypes::canonicalize(aval.dtype, interp.jax.config), weak: aval.weak }
}

fn tuple_text(v: &[i64]) -> String {
    match v {
        [x] => format!("({x},)"),
        _ => format!("({})", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")),
    }
}
