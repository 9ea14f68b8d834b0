//! JAX's transformations as higher-order APIs: `jit` with its cache modelled (design.md §4),
//! `vmap`, `grad` and friends, the `lax` control-flow primitives, pytrees and `jax.random`.
//! Being split by concern into `transforms/`; what is still here has not moved yet.

use super::ad::{self, AdTrace};
use super::array::Array;
use super::aval::Aval;
use super::dtypes::DType;
use super::eval_control::Body;
use super::ir::{Jaxpr, Prim};
use super::numpy::{self as jnp, operand, Operand};
use super::surface::JaxFn;
pub use super::transforms::at::at_getitem;
use super::transforms::at::at_update;
pub use super::transforms::at::scatter_index;
use super::transforms::autodiff::{check_jvp_tangents, grad_call, vjp_values, with_replayed_outputs, VjpValuesOf};
use super::transforms::control_flow::{cond, fori_loop, scan, switch, while_loop};
pub use super::transforms::jit::CacheKey;
pub use super::transforms::jit::JitInfo;
pub use super::transforms::jit::Jitted;
use super::transforms::jit::{call_jitted, canonical_aval, make_jit};
use super::transforms::map::lax_map;
pub use super::transforms::pytrees::class_children;
pub use super::transforms::pytrees::flatten;
pub use super::transforms::pytrees::TreeDef;
use super::transforms::pytrees::{flatten_with_is_leaf, leaf_avals, tree_map, tuple_paths, unflatten};
use super::transforms::random::{python_seed, random, wrap_key_data};
use super::transforms::vmap::vmap_call;
use super::{bind1, bind_with_bodies, TraceKind};
use crate::diagnostics::Code;
use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::value::{HashKey, PytreeRegistration, Value};
use crate::interp::{Flow, Interp, PyResult, Site};
use std::cell::RefCell;
use std::rc::Rc;

/// A callable or helper object of JAX's API.
#[derive(Debug)]
pub enum JaxObject {
    Jitted(Rc<Jitted>),
    Vmapped {
        fun: Value,
        in_axes: Value,
        out_axes: Value,
        axis_size: Option<usize>,
    },
    Grad {
        fun: Value,
        argnums: Value,
        has_aux: bool,
        with_value: bool,
    },
    Jacobian {
        fun: Value,
        argnums: Value,
        has_aux: bool,
        kind: &'static str,
    },
    /// `jax.checkpoint(f)`, `jax.named_call(f)`: traced inline.
    Wrapped {
        fun: Value,
        kind: &'static str,
    },
    CustomDerivative {
        fun: Value,
        kind: &'static str,
        rules: RefCell<super::custom_rules::Rules>,
        nondiff_argnums: Vec<usize>,
    },
    /// `x.at`, `x.at[idx]`, `x.at[idx].set`.
    At {
        array: Rc<Array>,
    },
    AtIndex {
        array: Rc<Array>,
        index: Value,
    },
    AtUpdate {
        array: Rc<Array>,
        index: Value,
        op: &'static str,
    },
    TreeDef(Rc<TreeDef>),
    VjpFn {
        inputs: Vec<Aval>,
        /// The linearized function and the primals it was taken at, when its values can be
        /// computed.
        linear: Option<Rc<VjpValuesOf>>,
    },
    /// A transformation applied partially: `jax.jit(static_argnums=...)` used as a decorator factory.
    PendingJit(Kwargs),
}

impl JaxObject {
    pub fn describe(&self) -> String {
        match self {
            JaxObject::Jitted(j) => format!("jit({})", j.name),
            JaxObject::Vmapped { .. } => "vmap".into(),
            JaxObject::Grad { .. } => "grad".into(),
            _ => "jax object".into(),
        }
    }
}

pub fn isinstance_jax(v: &Value, f: JaxFn) -> Option<bool> {
    match f {
        JaxFn::ArrayType => Some(matches!(v, Value::Array(_))),
        _ => None,
    }
}

pub fn jax_fn_getattr(_interp: &mut Interp, f: JaxFn, name: &str) -> PyResult<Option<Value>> {
    Ok(match name {
        "__name__" => Some(Value::str(f.name())),
        _ => Some(Value::opaque(format!("{}.{name}", f.qualified_name()))),
    })
}

pub(super) fn obj(o: JaxObject) -> Value {
    Value::Builtin(Rc::new(Builtin::Object(o)))
}

pub(super) fn kw<'a>(kwargs: &'a Kwargs, name: &str) -> Option<&'a Value> {
    kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v)
}

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
    match v {
        Value::Function(f) => f.attrs.borrow().get("__wrapped__").filter(|w| matches!(w, Value::Function(_))).cloned(),
        _ => None,
    }
}

pub(super) fn fun_name(v: &Value) -> String {
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

pub(super) fn fun_def_site(v: &Value) -> Option<Site> {
    if let Some(inner) = unwrapped(v) {
        return fun_def_site(&inner);
    }
    match v {
        // JAX names `co_firstlineno`: the first decorator line of a decorated function.
        Value::Function(f) => {
            Some(Site { file: f.file, span: crate::syntax::ast::Span { start: f.def.span.start, end: f.def.name_span.end } })
        }
        Value::Builtin(b) => match &**b {
            Builtin::Partial { func, .. } => fun_def_site(func),
            // A Jacobian's traces are not reported under the function's definition.
            Builtin::Object(JaxObject::Jacobian { .. }) => None,
            Builtin::Object(o) => transformed_fun(o).and_then(fun_def_site),
            _ => None,
        },
        Value::BoundMethod(bm) => fun_def_site(&bm.1),
        _ => None,
    }
}

pub(super) fn param_names(v: &Value) -> Vec<String> {
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

/// Identity of the underlying Python function, which keys JAX's tracing cache.
pub(super) fn fun_identity(v: &Value) -> usize {
    v.identity().unwrap_or(0)
}

pub fn call_jax_fn(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    // The outermost API call names the equations bound under it (`jnp.linalg.norm` binds
    // several primitives; all of them stand for that one user-level call).
    let outer = interp.jax.current_api;
    let run = move |interp: &mut Interp, args, kwargs| {
        if outer.is_none() {
            interp.jax.current_api = Some(f);
        }
        let result = call_jax_fn_inner(interp, f, args, kwargs);
        interp.jax.current_api = outer;
        result
    };
    // Outside a recording trace there is no statement to record: no copies of the arguments.
    if super::stmt::recording(interp).is_none() {
        return super::stmt::unrecorded(interp, |interp| run(interp, args, kwargs));
    }
    let statement_args: Vec<Value> = args.clone();
    let statement_kwargs = kwargs.clone();
    let refs: Vec<&Value> = statement_args.iter().collect();
    super::stmt::recorded(interp, super::stmt::Call::Api(f.qualified_name()), &refs, &statement_kwargs, move |interp| {
        run(interp, args, kwargs)
    })
}

fn call_jax_fn_inner(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    use JaxFn as F;
    let (args, kwargs) = super::signatures::bind_required(f, args, kwargs);
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
    match f {
        F::Jit => {
            if args.is_empty() {
                return Ok(obj(JaxObject::PendingJit(kwargs)));
            }
            make_jit(interp, arg(0), &kwargs)
        }
        F::Vmap => Ok(obj(JaxObject::Vmapped {
            fun: arg(0),
            in_axes: kw(&kwargs, "in_axes").cloned().or_else(|| args.get(1).cloned()).unwrap_or(Value::Int(0)),
            out_axes: kw(&kwargs, "out_axes").cloned().or_else(|| args.get(2).cloned()).unwrap_or(Value::Int(0)),
            axis_size: kw(&kwargs, "axis_size").and_then(crate::interp::ops::as_int).map(|n| n as usize),
        })),
        F::Grad | F::ValueAndGrad => Ok(obj(JaxObject::Grad {
            fun: arg(0),
            argnums: kw(&kwargs, "argnums").cloned().or_else(|| args.get(1).cloned()).unwrap_or(Value::Int(0)),
            has_aux: match kw(&kwargs, "has_aux") {
                Some(v) => interp.truthy(v)?,
                None => false,
            },
            with_value: f == F::ValueAndGrad,
        })),
        F::Jacfwd | F::Jacrev | F::Hessian => Ok(obj(JaxObject::Jacobian {
            fun: arg(0),
            argnums: kw(&kwargs, "argnums").cloned().or_else(|| args.get(1).cloned()).unwrap_or(Value::Int(0)),
            has_aux: match kw(&kwargs, "has_aux") {
                Some(v) => interp.truthy(v)?,
                None => false,
            },
            kind: match f {
                F::Jacfwd => "jacfwd",
                F::Jacrev => "jacrev",
                _ => "hessian",
            },
        })),
        F::Checkpoint | F::Remat | F::NamedCall => {
            if args.is_empty() {
                return Ok(Value::Builtin(Rc::new(Builtin::Partial {
                    func: Value::Builtin(Rc::new(Builtin::Jax(f))),
                    args: Vec::new(),
                    kwargs,
                })));
            }
            Ok(obj(JaxObject::Wrapped { fun: arg(0), kind: if f == F::NamedCall { "named_call" } else { "checkpoint" } }))
        }
        F::CustomJvp | F::CustomVjp => {
            let nondiff: Vec<usize> = match kw(&kwargs, "nondiff_argnums") {
                Some(v) => interp.iterate(v)?.iter().filter_map(crate::interp::ops::as_int).map(|i| i as usize).collect(),
                None => Vec::new(),
            };
            if args.is_empty() {
                return Ok(Value::Builtin(Rc::new(Builtin::Partial {
                    func: Value::Builtin(Rc::new(Builtin::Jax(f))),
                    args: Vec::new(),
                    kwargs,
                })));
            }
            Ok(obj(JaxObject::CustomDerivative {
                fun: arg(0),
                kind: if f == F::CustomJvp { "custom_jvp" } else { "custom_vjp" },
                rules: RefCell::new(super::custom_rules::Rules::Missing),
                nondiff_argnums: nondiff,
            }))
        }
        F::Jvp => {
            let fun = arg(0);
            // Python numbers are weakly typed scalars to jvp, as to jit: traced, with a tangent.
            let primals = interp.iterate(&arg(1))?.iter().map(|v| numbers_as_arrays(interp, v)).collect::<PyResult<Vec<_>>>()?;
            let tangents = interp.iterate(&arg(2))?.iter().map(|v| numbers_as_arrays(interp, v)).collect::<PyResult<Vec<_>>>()?;
            check_jvp_tangents(interp, &primals, &tangents)?;
            let deps = array_leaves(interp, &[Value::tuple(primals.clone()), Value::tuple(tangents.clone())])?;
            let (out, _, trace) = trace_with_record(interp, &fun, primals, Vec::new(), TraceKind::Jvp, "jvp", None, String::new())?;
            // A tangent has its primal's type, weak type included.
            let tangent = map_abstract(interp, &out, &deps, &|a| a.clone(), "jvp_tangent")?;
            let Some(trace) = trace else { return Ok(Value::tuple(vec![out, tangent])) };
            // The tangent leaves, matched to the input tracers argument by argument.
            let mut by_arg: Vec<std::vec::IntoIter<Rc<Array>>> = Vec::new();
            for t in &tangents {
                by_arg.push(array_leaves(interp, std::slice::from_ref(t))?.into_iter());
            }
            let ts: Vec<Option<Rc<Array>>> = trace.inputs.iter().map(|(i, _)| by_arg.get_mut(*i).and_then(Iterator::next)).collect();
            let (tree, expected) = leaf_avals(interp, &tangent)?;
            let (Some(expected), true) = (expected.into_iter().collect::<Option<Vec<Aval>>>(), ts.iter().all(Option::is_some)) else {
                return Ok(Value::tuple(vec![out, tangent]));
            };
            let (out, tangent) = match ad::jvp_values(interp, &trace, &ts, &expected)? {
                Some((outputs, values)) => (
                    with_replayed_outputs(interp, out, &outputs)?,
                    unflatten(interp, &tree, &mut values.into_iter().map(Value::Array).collect::<Vec<_>>().into_iter())?,
                ),
                None => (out, tangent),
            };
            Ok(Value::tuple(vec![out, tangent]))
        }
        F::Vjp => {
            let fun = arg(0);
            let primals = args[1..].to_vec();
            let inputs: Vec<Aval> = primals.iter().filter_map(|p| p.as_array().map(|a| a.aval.clone())).collect();
            let (out, _, trace) =
                trace_with_record(interp, &fun, primals.clone(), Vec::new(), TraceKind::Grad, "vjp", None, String::new())?;
            let linear = match &trace {
                Some(trace) => ad::vjp_linearize(interp, trace)?.map(|lin| Rc::new(VjpValuesOf { lin, primals })),
                None => None,
            };
            let out = match &linear {
                Some(l) => with_replayed_outputs(interp, out, l.lin.outputs())?,
                None => out,
            };
            Ok(Value::tuple(vec![out, obj(JaxObject::VjpFn { inputs, linear })]))
        }
        F::EvalShape => {
            let fun = arg(0);
            let rest = args[1..].to_vec();
            let out = trace_call(interp, &fun, rest, kwargs, TraceKind::Staging("eval_shape"), "eval_shape")?;
            map_arrays(interp, &out, &|a| Array::unknown(a.aval.clone(), jnp::EVAL_SHAPE_RESULT))
        }
        F::MakeJaxpr => Ok(Value::opaque("make_jaxpr")),
        F::DevicePut | F::BlockUntilReady => Ok(arg(0)),
        F::ShapeDtypeStruct => {
            let Some(shape) = shape_of(interp, &arg(0))? else {
                return Ok(Value::opaque("ShapeDtypeStruct"));
            };
            let d = jnp::dtype_arg(interp, args.get(1).or_else(|| kw(&kwargs, "dtype")))?.unwrap_or(DType::F32);
            let weak = match kw(&kwargs, "weak_type") {
                None | Some(Value::Bool(false)) => false,
                Some(Value::Bool(true)) => true,
                Some(_) => return Ok(Value::opaque("ShapeDtypeStruct")),
            };
            Ok(Value::Array(Array::unknown(Aval::new(&shape, d).weak(weak), jnp::SHAPE_DTYPE_STRUCT)))
        }
        F::Typeof => Ok(Value::opaque("an aval")),
        F::ArrayType => Ok(Value::opaque("jax.Array")),
        F::TreeMap | F::TreeMap2 | F::JaxTreeMap => tree_map(interp, &args, &kwargs),
        // functools.reduce(function, tree_leaves(tree)[, initializer])
        F::TreeReduce | F::TreeReduce2 => {
            let mut leaves = Vec::new();
            flatten(interp, &arg(1), "", &mut leaves)?;
            let mut values = leaves.into_iter().map(|(_, v)| v);
            let Some(mut acc) = args.get(2).cloned().or_else(|| values.next()) else {
                return Err(interp.type_error("reduce() of empty iterable with no initial value"));
            };
            for v in values {
                acc = interp.call(&arg(0), vec![acc, v], Vec::new())?;
            }
            Ok(acc)
        }
        F::TreeLeaves | F::TreeLeaves2 | F::JaxTreeLeaves => {
            let mut leaves = Vec::new();
            flatten_with_is_leaf(interp, &arg(0), kw(&kwargs, "is_leaf").or(args.get(1)), &mut leaves)?;
            Ok(interp.new_list(leaves.into_iter().map(|(_, v)| v).collect()))
        }
        F::TreeFlatten | F::TreeFlatten2 => {
            let mut leaves = Vec::new();
            let tree = flatten_with_is_leaf(interp, &arg(0), kw(&kwargs, "is_leaf").or(args.get(1)), &mut leaves)?;
            let l = interp.new_list(leaves.into_iter().map(|(_, v)| v).collect());
            Ok(Value::tuple(vec![l, obj(JaxObject::TreeDef(Rc::new(tree)))]))
        }
        // An unknown part may stand for any subtree: the structure is not known.
        F::TreeStructure | F::TreeStructure2 if arg(0).holds_unknown() => Ok(Value::opaque("the structure of a tree with unknown parts")),
        F::TreeStructure | F::TreeStructure2 => {
            let mut leaves = Vec::new();
            let tree = flatten(interp, &arg(0), "", &mut leaves)?;
            Ok(obj(JaxObject::TreeDef(Rc::new(tree))))
        }
        F::TreeUnflatten | F::TreeUnflatten2 => {
            let Value::Builtin(b) = arg(0) else {
                return Ok(Value::opaque("tree_unflatten"));
            };
            let Builtin::Object(JaxObject::TreeDef(t)) = &*b else {
                return Ok(Value::opaque("tree_unflatten"));
            };
            let leaves = interp.iterate(&arg(1))?;
            if leaves.len() != t.num_leaves() {
                return Err(interp.raise(
                    "ValueError",
                    Code::InvalidPytree,
                    format!(
                        "Too {} leaves for PyTreeDef; expected {}, got {}.",
                        if leaves.len() > t.num_leaves() { "many" } else { "few" },
                        t.num_leaves(),
                        leaves.len()
                    ),
                ));
            }
            unflatten(interp, t, &mut leaves.into_iter())
        }
        F::RegisterPytreeNode => {
            if let Value::Class(c) = arg(0) {
                *c.pytree.borrow_mut() = Some(PytreeRegistration::Custom { flatten: arg(1), unflatten: arg(2) });
            }
            Ok(Value::None)
        }
        F::RegisterPytreeNodeClass => {
            if let Value::Class(c) = &arg(0) {
                let fl = c.lookup("tree_flatten").unwrap_or(Value::None);
                let uf = c.lookup("tree_unflatten").map(|u| match u {
                    Value::ClassMethod(f) => Value::BoundMethod(Rc::new((arg(0), (*f).clone()))),
                    other => other,
                });
                *c.pytree.borrow_mut() = Some(PytreeRegistration::Custom { flatten: fl, unflatten: uf.unwrap_or(Value::None) });
            }
            Ok(arg(0))
        }
        F::RegisterDataclass => {
            if let Value::Class(c) = &arg(0) {
                let names = |interp: &mut Interp, v: Option<&Value>| -> PyResult<Option<Vec<Rc<str>>>> {
                    Ok(match v {
                        Some(v) => Some(
                            interp.iterate(v)?.into_iter().filter_map(|x| if let Value::Str(s) = x { Some(s) } else { None }).collect(),
                        ),
                        None => None,
                    })
                };
                let data = names(interp, kw(&kwargs, "data_fields").or(args.get(1)))?;
                let meta = names(interp, kw(&kwargs, "meta_fields").or(args.get(2)))?.unwrap_or_default();
                // Without explicit field lists, fields marked `field(metadata=dict(static=True))` are meta.
                let mut meta = meta;
                if data.is_none() {
                    for f in c.fields.borrow().iter() {
                        if let Some(Value::Instance(field)) = c.lookup(f) {
                            if let Some(Value::Dict(md)) = field.attrs.borrow().get("metadata") {
                                let is_static = md
                                    .borrow()
                                    .get(&HashKey::Str(Rc::from("static")))
                                    .map(|v| matches!(v, Value::Bool(true)))
                                    .unwrap_or(false);
                                if is_static && !meta.contains(f) {
                                    meta.push(f.clone());
                                }
                            }
                        }
                    }
                }
                let data = data.unwrap_or_else(|| c.fields.borrow().iter().filter(|f| !meta.contains(f)).cloned().collect());
                *c.pytree.borrow_mut() = Some(PytreeRegistration::Fields { data, meta });
            }
            Ok(arg(0))
        }
        F::DebugPrint => {
            if interp.jax.trace_depth() > 0 {
                let leaves: Vec<Rc<Array>> =
                    args[1..].iter().chain(kwargs.iter().map(|(_, v)| v)).filter_map(|a| a.as_array().cloned()).collect();
                bind_with_bodies(interp, Prim::DebugCallback, &leaves, Vec::new(), Vec::new())?;
                super::numerics::note_debug_print(interp, args.clone(), kwargs.clone());
            } else if let Value::Str(fmt) = arg(0) {
                let text = interp.getattr(&Value::Str(fmt), "format")?;
                let as_arg = |v: &Value| match v {
                    Value::Array(a) => super::numerics::debug_print_arg(a),
                    other => other.clone(),
                };
                let positional: Vec<Value> = args[1..].iter().map(as_arg).collect();
                let keywords: Kwargs = kwargs.iter().map(|(k, v)| (k.clone(), as_arg(v))).collect();
                if let Ok(Value::Str(s)) = interp.call(&text, positional, keywords) {
                    interp.stdout.push_str(&s);
                    interp.stdout.push('\n');
                }
            }
            Ok(Value::None)
        }
        F::ConfigUpdate => {
            if let (Value::Str(name), v) = (arg(0), arg(1)) {
                if name.as_ref() == "jax_enable_x64" {
                    interp.jax.config.enable_x64 = interp.truthy(&v)?;
                }
                if matches!(name.as_ref(), "jax_debug_nans" | "jax_debug_infs") {
                    let on = interp.truthy(&v)?;
                    if let Some(values) = interp.values.as_mut() {
                        if name.as_ref() == "jax_debug_nans" {
                            values.debug_nans = on;
                        } else {
                            values.debug_infs = on;
                        }
                    }
                }
            }
            Ok(Value::None)
        }
        F::LaxScan => scan(interp, &args, &kwargs),
        F::LaxCond => cond(interp, &args),
        F::LaxSwitch => switch(interp, &args),
        F::LaxWhileLoop => while_loop(interp, &args),
        F::LaxForiLoop => fori_loop(interp, &args, &kwargs),
        F::LaxMap => {
            for (i, name) in ["f", "xs"].into_iter().enumerate() {
                if args.len() <= i && !kwargs.iter().any(|(k, _)| k.as_ref() == name) {
                    return Err(interp.type_error(format!("map() missing 1 required positional argument: '{name}'")));
                }
            }
            lax_map(interp, &arg(0), &arg(1), &kwargs)
        }
        F::RandomKey | F::RandomPRNGKey => {
            let seed = arg(0);
            if let Value::Array(a) = &seed {
                if a.aval.dtype.is_inexact() {
                    return Err(interp.type_error(format!("PRNG key seed must be an integer; got {}", a.aval.long())));
                }
            }
            if let Value::Array(a) = &seed {
                if a.aval.dtype.is_key() {
                    let name = if f == F::RandomPRNGKey { "PRNGKey" } else { "key" };
                    return Err(interp.type_error(format!("{name} accepts a scalar seed, but was given a PRNG key.")));
                }
            }
            // `key(seed)` is one typed key, `key<fry>[]`; `PRNGKey(seed)` its raw data, `u32[2]`.
            let aval = if f == F::RandomPRNGKey { Aval::new(&[2], DType::U32) } else { Aval::scalar(DType::Key) };
            let seed = match &seed {
                Value::Int(n) => python_seed(interp, *n),
                Value::Bool(b) => python_seed(interp, i64::from(*b)),
                other => match operand(interp, other)? {
                    Operand::Array(s) => s,
                    Operand::Unknown => return Ok(Value::opaque("a PRNG key")),
                },
            };
            Ok(Value::Array(bind1(interp, Prim::RandomSeed, &[seed], aval)?))
        }
        F::RandomSplit
        | F::RandomFoldIn
        | F::RandomNormal
        | F::RandomUniform
        | F::RandomBernoulli
        | F::RandomCategorical
        | F::RandomRandint
        | F::RandomPermutation
        | F::RandomChoice
        | F::RandomTruncatedNormal
        | F::RandomExponential
        | F::RandomGumbel
        | F::RandomLaplace
        | F::RandomLogistic
        | F::RandomCauchy
        | F::RandomRademacher
        | F::RandomKeyData
        | F::RandomClone => random(interp, f, &args, &kwargs),
        F::RandomWrapKeyData => wrap_key_data(interp, &args, &kwargs),
        _ => jnp::call(interp, f, args, kwargs),
    }
}

pub(super) fn shape_of(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<usize>>> {
    let items = match v {
        Value::Tuple(_) | Value::List(_) => interp.iterate(v)?,
        Value::Int(_) => vec![v.clone()],
        _ => return Ok(None),
    };
    Ok(items.iter().map(crate::interp::ops::as_int).map(|i| i.map(|i| i.max(0) as usize)).collect())
}

pub fn call_jax_object(interp: &mut Interp, o: &JaxObject, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    // A transformation called inside a trace is one statement of the user's code for the
    // reproducer, uncurried as JAX's tool does: `jax.value_and_grad(loss_fn)(params, x)`.
    if super::stmt::recording(interp).is_some() {
        if let Some((api, fun, options)) = transform_call(o) {
            let def_site = fun_def_site(fun);
            return super::stmt::recorded_transform(interp, api, def_site, options, args, kwargs, |interp, args, kwargs| {
                call_jax_object_inner(interp, o, args, kwargs)
            });
        }
    }
    call_jax_object_inner(interp, o, args, kwargs)
}

/// A function transformation's result (`jax.grad(f)`), which another one may trace.
fn is_transformation(v: &Value) -> bool {
    matches!(v, Value::Builtin(b) if matches!(&**b, Builtin::Object(o) if transform_call(o).is_some()))
}

/// For a function transformation: the API the reproducer calls, the user function and the
/// options that differ from the API's defaults. `jax.hessian` is traced as `jacfwd` of
/// `jacrev`; its trace of the user function is the inner one.
fn transform_call(o: &JaxObject) -> Option<(&'static str, &Value, Vec<(&'static str, Value)>)> {
    let not = |v: &Value, default: i64| !matches!(v, Value::Int(i) if *i == default);
    Some(match o {
        JaxObject::Grad { fun, argnums, has_aux, with_value } => {
            let mut options = Vec::new();
            if not(argnums, 0) {
                options.push(("argnums", argnums.clone()));
            }
            if *has_aux {
                options.push(("has_aux", Value::Bool(true)));
            }
            (if *with_value { "jax.value_and_grad" } else { "jax.grad" }, fun, options)
        }
        JaxObject::Vmapped { fun, in_axes, out_axes, axis_size } => {
            let mut options = Vec::new();
            if not(in_axes, 0) {
                options.push(("in_axes", in_axes.clone()));
            }
            if not(out_axes, 0) {
                options.push(("out_axes", out_axes.clone()));
            }
            if let Some(n) = axis_size {
                options.push(("axis_size", Value::Int(*n as i64)));
            }
            ("jax.vmap", fun, options)
        }
        JaxObject::Jacobian { fun, argnums, has_aux, kind } => {
            let mut options = Vec::new();
            if not(argnums, 0) {
                options.push(("argnums", argnums.clone()));
            }
            if *has_aux {
                options.push(("has_aux", Value::Bool(true)));
            }
            let api = match *kind {
                "jacfwd" => "jax.jacfwd",
                "jacrev" => "jax.jacrev",
                _ => "jax.hessian",
            };
            (api, fun, options)
        }
        _ => return None,
    })
}

fn call_jax_object_inner(interp: &mut Interp, o: &JaxObject, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    match o {
        JaxObject::Jitted(j) => call_jitted(interp, j, args, kwargs),
        JaxObject::PendingJit(kw0) => {
            let mut kw = kw0.clone();
            kw.extend(kwargs);
            make_jit(interp, args.into_iter().next().unwrap_or(Value::None), &kw)
        }
        JaxObject::Vmapped { fun, in_axes, out_axes, axis_size } => vmap_call(interp, fun, in_axes, out_axes, *axis_size, args, kwargs),
        JaxObject::Grad { fun, argnums, has_aux, with_value } => grad_call(interp, fun, argnums, *has_aux, *with_value, args, kwargs),
        JaxObject::Jacobian { fun, argnums, has_aux, kind } => {
            let argnum = crate::interp::ops::as_int(argnums).unwrap_or(0) as usize;
            let x_aval = args.get(argnum).and_then(|a| a.as_array().map(|a| a.aval.clone()));
            let deps = array_leaves(interp, &args)?;
            // hessian is jacfwd(jacrev(f)): the inner Jacobian's passes are recorded in the
            // outer trace, which differentiates them again.
            let inner;
            let (traced_fun, forward) = match *kind {
                "hessian" => {
                    inner = obj(JaxObject::Jacobian { fun: fun.clone(), argnums: argnums.clone(), has_aux: *has_aux, kind: "jacrev" });
                    (&inner, true)
                }
                k => (fun, k == "jacfwd"),
            };
            let (out, _, trace) = trace_with_record(interp, traced_fun, args, kwargs, TraceKind::Grad, kind, None, String::new())?;
            let Some(x) = x_aval else {
                return Ok(Value::opaque("jacobian"));
            };
            let jac = map_abstract(
                interp,
                &out,
                &deps,
                &|a| {
                    // (For hessian, `a` is already the inner Jacobian's: out.shape + x.shape.)
                    let mut s: Vec<usize> = a.shape.to_vec();
                    s.extend(x.shape.iter().copied());
                    a.with_shape(&s)
                },
                kind,
            )?;
            let (Some(trace), false) = (trace, *has_aux) else { return Ok(jac) };
            let (tree, expected) = leaf_avals(interp, &jac)?;
            let Some(expected) = expected.into_iter().collect::<Option<Vec<Aval>>>() else { return Ok(jac) };
            match ad::jacobian_values(interp, &trace, argnum, forward, &expected)? {
                Some(values) => unflatten(interp, &tree, &mut values.into_iter().map(Value::Array).collect::<Vec<_>>().into_iter()),
                None => Ok(jac),
            }
        }
        JaxObject::Wrapped { fun, .. } => interp.call(fun, args, kwargs),
        JaxObject::CustomDerivative { fun, kind, rules, nondiff_argnums } => {
            // Its rule, not its code, defines its derivative (`custom_rules.rs`).
            let rules = rules.borrow().clone();
            let this = obj(JaxObject::CustomDerivative {
                fun: fun.clone(),
                kind,
                rules: RefCell::new(rules.clone()),
                nondiff_argnums: nondiff_argnums.clone(),
            });
            super::custom_rules::call(interp, this, fun, kind, &rules, nondiff_argnums, args, kwargs)
        }
        JaxObject::At { .. } => Err(interp.type_error("'_IndexUpdateHelper' object is not callable")),
        JaxObject::AtIndex { .. } => Err(interp.type_error("'_IndexUpdateRef' object is not callable")),
        JaxObject::AtUpdate { array, index, op } => {
            // `x.at[i].set(v)` is one statement of the user's code for the reproducer.
            let mut refs: Vec<Value> = vec![Value::Array(array.clone()), index.clone()];
            refs.extend(args.iter().cloned());
            let refs: Vec<&Value> = refs.iter().collect();
            let statement_kwargs = kwargs.clone();
            super::stmt::recorded(interp, super::stmt::Call::AtUpdate(op), &refs, &statement_kwargs, |interp| {
                at_update(interp, array, index, op, args, kwargs)
            })
        }
        JaxObject::TreeDef(_) => Err(interp.type_error("'PyTreeDef' object is not callable")),
        JaxObject::VjpFn { inputs, linear } => {
            if let Some(v) = linear {
                if let Some(cts) = vjp_values(interp, v, &args)? {
                    return Ok(cts);
                }
            }
            let deps = array_leaves(interp, &args)?;
            let mut outs = Vec::new();
            for a in inputs {
                outs.push(Value::Array(abstract_output(interp, a.clone(), &deps, "vjp")?));
            }
            Ok(Value::tuple(outs))
        }
    }
}

pub fn object_getattr(interp: &mut Interp, b: &Rc<Builtin>, o: &JaxObject, name: &str) -> PyResult<Option<Value>> {
    Ok(match (o, name) {
        (JaxObject::At { array }, _) if name == "__getitem__" => {
            let _ = array;
            None
        }
        (
            JaxObject::AtIndex { array, index },
            "set" | "add" | "mul" | "multiply" | "min" | "max" | "get" | "divide" | "power" | "apply",
        ) => {
            let op: &'static str = match name {
                "apply" => "apply",
                "set" => "set",
                "add" => "add",
                "mul" | "multiply" => "mul",
                "min" => "min",
                "max" => "max",
                "divide" => "divide",
                "power" => "power",
                _ => "get",
            };
            Some(obj(JaxObject::AtUpdate { array: array.clone(), index: index.clone(), op }))
        }
        (JaxObject::CustomDerivative { .. }, "defjvp" | "defvjp" | "defjvps") => {
            Some(Value::Builtin(Rc::new(Builtin::Method { recv: Value::Builtin(b.clone()), name: Rc::from(name) })))
        }
        (JaxObject::Jitted(j), "__wrapped__") => Some(j.fun.clone()),
        (JaxObject::Jitted(j), "__name__") => Some(Value::str(&j.name)),
        (JaxObject::Jitted(_), "lower" | "trace" | "eval_shape" | "clear_cache" | "_cache_size") => {
            Some(Value::opaque(format!("jit .{name}")))
        }
        (JaxObject::TreeDef(t), "num_leaves") => Some(Value::Int(t.num_leaves() as i64)),
        (JaxObject::TreeDef(_), "unflatten") => {
            Some(Value::Builtin(Rc::new(Builtin::Method { recv: Value::Builtin(b.clone()), name: Rc::from(name) })))
        }
        _ => {
            let _ = interp;
            None
        }
    })
}

pub fn call_object_method(interp: &mut Interp, o: &JaxObject, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    match (o, name) {
        (JaxObject::CustomDerivative { rules, .. }, _) => {
            use super::custom_rules::Rules;
            let symbolic_zeros = kw(&kwargs, "symbolic_zeros").is_some_and(|v| !matches!(v, Value::Bool(false) | Value::None));
            let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
            *rules.borrow_mut() = match name {
                _ if symbolic_zeros => Rules::Unmodelled("a custom rule with symbolic_zeros=True"),
                "defjvp" => Rules::Jvp(arg(0)),
                "defjvps" => Rules::Jvps(args.clone()),
                _ => Rules::Vjp { fwd: arg(0), bwd: arg(1) },
            };
            // `f.defjvp` is used as a decorator: it returns the rule.
            Ok(if name == "defjvp" { arg(0) } else { Value::None })
        }
        (JaxObject::TreeDef(t), "unflatten") => {
            let leaves = interp.iterate(&args.first().cloned().unwrap_or(Value::None))?;
            unflatten(interp, t, &mut leaves.into_iter())
        }
        _ => Err(interp.raise("AttributeError", Code::PythonException, format!("object has no attribute '{name}'"))),
    }
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
    out_avals: Vec<Aval>,
) -> PyResult<Vec<Rc<Array>>> {
    let mut ins: Vec<Rc<Array>> = index.into_iter().collect();
    for b in bodies {
        ins.extend(b.consts.iter().cloned());
    }
    ins.extend(operands);
    bind_with_bodies(interp, prim, &ins, out_avals, bodies.iter().map(|b| b.jaxpr.clone()).collect())
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
pub(super) fn replace_array_leaves(interp: &mut Interp, v: &Value, arrays: &mut std::vec::IntoIter<Rc<Array>>) -> PyResult<Value> {
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

/// The worker behind every transformation: returns the outputs (tracers of the outer trace,
/// or concrete arrays) and the index of the trace record.
#[allow(clippy::too_many_arguments)]
/// Replaces the array leaves of one argument with input tracers of the top trace.
/// Under grad/jvp (`primal`), the tracers keep the concrete value behind them.
#[allow(clippy::too_many_arguments)]
pub(super) fn trace_inputs(
    interp: &mut Interp,
    arg: &Value,
    index: usize,
    primal: bool,
    arrays_only: bool,
    call_site: Option<Site>,
    originals: &mut Vec<(usize, Rc<Array>)>,
) -> PyResult<Value> {
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
                    originals.push((index, a.clone()));
                    let input = interp.jax.new_input(canonical_aval(interp, &a.aval), known, index, call_site);
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

/// Flattens a traced function's output into arrays, raising JAX's TL112 error for a leaf that
/// is not a valid JAX type (a string, an unregistered class instance). Aborts the top trace
/// on every path but success.
pub(super) fn traced_output(interp: &mut Interp, fun: &Value, label: &str, out: &Value) -> PyResult<TracedOutput> {
    let mut leaves = Vec::new();
    let tree = match flatten(interp, out, "", &mut leaves) {
        Ok(t) => Rc::new(t),
        Err(e) => {
            interp.jax.abort_trace();
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
                interp.jax.abort_trace();
                return Err(e);
            }
        };
        interp.jax.abort_trace();
        if !invalid {
            let what = match leaf {
                Value::Opaque(o) => o.what.clone(),
                other => other.type_name(),
            };
            return Ok(TracedOutput::Unknown(what));
        }
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
    for (i, a) in args.iter().enumerate() {
        traced_args.push(trace_inputs(interp, a, i, !staging, false, call_site, &mut originals)?);
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
            interp.jax.abort_trace();
            return Err(e);
        }
    };
    let (out_tree, arrays) = match traced_output(interp, fun, label, &out)? {
        TracedOutput::Arrays(tree, arrays) => (tree, arrays),
        TracedOutput::Unknown(what) => {
            return Ok((Value::opaque(format!("result of a traced function with an unknown output ({what})")), record, None))
        }
    };
    let consts = interp.jax.captured_consts();
    interp.jax.records[record].consts = consts.clone();
    let jaxpr = interp.jax.pop_trace(&arrays);
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
        let bound = bind_with_bodies(interp, prim, &ins, avals.clone(), vec![jaxpr.clone()])?;
        let label = format!("{}({name})", kind.label());
        outs.extend(instantiate_outputs(interp, &jaxpr, &consts, &ins[consts.len()..], bound, &label)?);
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
pub(super) fn instantiate_outputs(
    interp: &mut Interp,
    jaxpr: &Rc<Jaxpr>,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
    bound: Vec<Rc<Array>>,
    label: &str,
) -> PyResult<Vec<Rc<Array>>> {
    if bound.iter().any(|b| b.is_tracer()) {
        return Ok(bound);
    }
    let instantiated = if interp.values.is_some() {
        // Values mode: each equation is computed in program order, at its own line, and
        // control flow runs its bodies.
        super::eval_jaxpr::instantiate_with(jaxpr, consts, inputs, &mut super::eval_control::ValuesHooks { interp, label })?
    } else {
        let avals = bound.iter().map(|b| b.aval.clone()).collect();
        return Ok(super::array::StagedCall::outputs(jaxpr.clone(), consts.to_vec(), inputs.to_vec(), avals));
    };
    if let Some(outs) = &instantiated {
        super::numerics::raise_pending_after_jit(interp, outs)?;
    }
    Ok(match instantiated {
        Some(outs) if outs.len() == bound.len() => outs,
        _ => bound,
    })
}

/// The results of a transformation whose values are not computed: tracers of the enclosing
/// staging trace when there is one (so Python cannot see them, exactly as in JAX), concrete
/// arrays of unknown value otherwise. `inputs` are what the results depend on.
/// A pytree with its Python numbers (leaves that are `int`, `float` or `bool`) made arrays, as
/// JAX's transformations see them.
fn numbers_as_arrays(interp: &mut Interp, v: &Value) -> PyResult<Value> {
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

pub fn abstract_output(interp: &mut Interp, aval: Aval, inputs: &[Rc<Array>], why: &'static str) -> PyResult<Rc<Array>> {
    // Under grad/jvp the result must stay connected to its inputs, or differentiation would
    // take it for a constant: it is an opaque equation of that trace.
    let live_tracers = inputs.iter().filter_map(|i| i.tracer()).map(|t| interp.jax.is_active(t.trace)).collect::<Vec<bool>>();
    let under_ad = !live_tracers.is_empty() && live_tracers.iter().all(|&live| live);
    if interp.jax.innermost_staging().is_some() || under_ad {
        bind1(interp, Prim::Opaque(why), inputs, aval)
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

pub(super) fn map_arrays(interp: &mut Interp, v: &Value, f: &dyn Fn(&Rc<Array>) -> Rc<Array>) -> PyResult<Value> {
    let mut leaves = Vec::new();
    let tree = flatten(interp, v, "", &mut leaves)?;
    let mapped: Vec<Value> = leaves
        .into_iter()
        .map(|(_, l)| match &l {
            Value::Array(a) => Value::Array(f(a)),
            _ => l,
        })
        .collect();
    unflatten(interp, &tree, &mut mapped.into_iter())
}
