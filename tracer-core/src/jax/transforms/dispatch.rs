//! The entry points the interpreter calls: `JaxObject` (the callables and helpers JAX's API
//! returns), the dispatch of each `jax.*` function to the module that models it, and calls,
//! attributes and methods of those objects.

use super::at::at_update;
use super::autodiff::{grad_call, vjp_values, VjpValuesOf};
use super::control_flow::{cond, fori_loop, scan, switch, while_loop};
use super::jit::{call_jitted, make_jit, Jitted, PMAP_MARK};
use super::map::lax_map;
use super::pytrees::{unflatten, TreeDef};
use super::trace::{abstract_output, array_leaves, fun_def_site, map_arrays, trace_call};
use super::vmap::vmap_call;
use super::{autodiff, pytrees, random};
use crate::diagnostics::Code;
use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;
use crate::jax::numpy as jnp;
use crate::jax::surface::JaxFn;
use crate::jax::{apply_with_bodies, TraceKind};
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
        rules: RefCell<crate::jax::custom_rules::Rules>,
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
            JaxObject::Jitted(j) if j.pmap => format!("pmap({})", j.name),
            JaxObject::Jitted(j) => format!("jit({})", j.name),
            JaxObject::Vmapped { .. } => "vmap".into(),
            JaxObject::Grad { .. } => "grad".into(),
            _ => "jax object".into(),
        }
    }
}

/// `isinstance(v, jax.Array)`, `isinstance(v, jax.core.Tracer)` and
/// `isinstance(v, jax.ShapeDtypeStruct)`: a NumPy array or a `ShapeDtypeStruct` is neither
/// of the first two; an unknown value may be either, unless it is certainly a tracer.
pub fn isinstance_jax(v: &Value, f: JaxFn) -> Option<bool> {
    let is_struct = |v: &Value| matches!(v, Value::Array(a) if jnp::is_shape_dtype_struct(a));
    match (f, v) {
        (JaxFn::ShapeDtypeStruct, Value::Opaque(o)) => (o.tracer).then_some(false),
        (JaxFn::ShapeDtypeStruct, _) => Some(is_struct(v)),
        (JaxFn::ArrayType | JaxFn::CoreTracer, _) if is_struct(v) => Some(false),
        (JaxFn::ArrayType | JaxFn::CoreTracer, Value::Opaque(o)) => o.tracer.then_some(true),
        (JaxFn::ArrayType | JaxFn::CoreTracer, Value::UnknownNumber(_)) => Some(false),
        (JaxFn::ArrayType, Value::Array(a)) => Some(!a.numpy.get() && !a.tf.get()),
        (JaxFn::CoreTracer, Value::Array(a)) => Some(a.is_tracer() && !a.tf.get()),
        (JaxFn::ArrayType | JaxFn::CoreTracer, _) => Some(false),
        _ => None,
    }
}

/// `jax.core.valid_jaxtype(x)`: whether JAX can make an abstract value of `x` (arrays, NumPy
/// arrays and scalars, Python numbers; not `None`, strings, containers or other objects).
fn valid_jaxtype(v: &Value) -> Value {
    match v {
        Value::Array(a) if !a.tf.get() => Value::Bool(true),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Complex(..) | Value::UnknownNumber(_) => Value::Bool(true),
        Value::None | Value::Str(_) | Value::Tuple(_) | Value::List(_) | Value::Dict(_) => Value::Bool(false),
        Value::Instance(_) => Value::Bool(false),
        _ => Value::opaque("jax.core.valid_jaxtype of a value tracelens cannot classify"),
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
    if crate::jax::stmt::recording(interp).is_none() {
        return crate::jax::stmt::unrecorded(interp, |interp| run(interp, args, kwargs));
    }
    let statement_args: Vec<Value> = args.clone();
    let statement_kwargs = kwargs.clone();
    let refs: Vec<&Value> = statement_args.iter().collect();
    crate::jax::stmt::recorded(interp, crate::jax::stmt::Call::Api(f.qualified_name()), &refs, &statement_kwargs, move |interp| {
        run(interp, args, kwargs)
    })
}

fn call_jax_fn_inner(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    use JaxFn as F;
    let (args, kwargs) = crate::jax::signatures::bind_required(f, args, kwargs);
    // From here on every required parameter of JAX's signature is at its position.
    if let Some(message) = crate::jax::signatures::missing_arguments(f, args.len(), &kwargs) {
        return Err(interp.type_error(message));
    }
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
    match f {
        F::Jit => {
            if args.is_empty() {
                return Ok(obj(JaxObject::PendingJit(kwargs)));
            }
            make_jit(interp, arg(0), &kwargs)
        }
        F::Pmap => {
            // pmap's static arguments are its `static_broadcasted_argnums`; its other options
            // (axis_name, in_axes, devices, donation) only matter per device.
            let mut kwargs: Kwargs = kwargs
                .into_iter()
                .filter_map(|(k, v)| match k.as_ref() {
                    "static_broadcasted_argnums" => Some((Rc::from("static_argnums"), v)),
                    "static_argnums" | "static_argnames" => None,
                    _ => Some((k, v)),
                })
                .collect();
            kwargs.push((Rc::from(PMAP_MARK), Value::Bool(true)));
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
                return Ok(Value::Builtin(Rc::new(Builtin::partial(Value::Builtin(Rc::new(Builtin::Jax(f))), Vec::new(), kwargs))));
            }
            Ok(obj(JaxObject::Wrapped { fun: arg(0), kind: if f == F::NamedCall { "named_call" } else { "checkpoint" } }))
        }
        F::CustomJvp | F::CustomVjp => {
            let nondiff: Vec<usize> = match kw(&kwargs, "nondiff_argnums") {
                Some(v) => interp.iterate(v)?.iter().filter_map(crate::interp::ops::as_int).map(|i| i as usize).collect(),
                None => Vec::new(),
            };
            if args.is_empty() {
                return Ok(Value::Builtin(Rc::new(Builtin::partial(Value::Builtin(Rc::new(Builtin::Jax(f))), Vec::new(), kwargs))));
            }
            Ok(obj(JaxObject::CustomDerivative {
                fun: arg(0),
                kind: if f == F::CustomJvp { "custom_jvp" } else { "custom_vjp" },
                rules: RefCell::new(crate::jax::custom_rules::Rules::Missing),
                nondiff_argnums: nondiff,
            }))
        }
        F::Jvp => {
            let symbolic_zeros = kw(&kwargs, "_tracelens_symbolic_zeros").is_some_and(|v| matches!(v, Value::Bool(true)));
            autodiff::jvp_call(interp, &args, symbolic_zeros)
        }
        F::Vjp => autodiff::vjp_call(interp, &args),
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
        F::ExportSymbolicShape => Ok(super::export::symbolic_shape(interp, &args, &kwargs)),
        F::ExportExport => Ok(super::export::export(&args)),
        F::Typeof => Ok(Value::opaque("an aval")),
        F::ArrayType => Ok(Value::opaque("jax.Array")),
        F::CoreTracer => Ok(Value::opaque("jax.core.Tracer")),
        F::ValidJaxtype => Ok(valid_jaxtype(&args.first().cloned().unwrap_or(Value::None))),
        F::TreeMap
        | F::TreeMap2
        | F::JaxTreeMap
        | F::TreeReduce
        | F::TreeReduce2
        | F::TreeAll
        | F::TreeAll2
        | F::TreeLeaves
        | F::TreeLeaves2
        | F::JaxTreeLeaves
        | F::TreeFlatten
        | F::TreeFlatten2
        | F::TreeStructure
        | F::TreeStructure2
        | F::TreeUnflatten
        | F::TreeUnflatten2
        | F::RegisterPytreeNode
        | F::RegisterPytreeNodeClass
        | F::RegisterDataclass => pytrees::call_tree_fn(interp, f, &args, &kwargs),
        // `jax.debug.print()` without a format returns a decorator (its `fmt` defaults to None).
        F::DebugPrint if args.is_empty() => Ok(Value::opaque("jax.debug.print")),
        F::DebugPrint => {
            if interp.jax.trace_depth() > 0 {
                let leaves: Vec<Rc<Array>> =
                    args[1..].iter().chain(kwargs.iter().map(|(_, v)| v)).filter_map(|a| a.as_array().cloned()).collect();
                apply_with_bodies(interp, Prim::DebugCallback, &leaves, Vec::new())?;
                crate::jax::numerics::note_debug_print(interp, args.clone(), kwargs.clone());
            } else if let Value::Str(fmt) = arg(0) {
                let text = interp.getattr(&Value::Str(fmt), "format")?;
                let as_arg = |v: &Value| match v {
                    Value::Array(a) => crate::jax::numerics::debug_print_arg(a),
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
        F::ConfigRead => Ok(match arg(0) {
            Value::Str(name) if name.as_ref() == "jax_enable_x64" => Value::Bool(interp.jax.config.enable_x64),
            _ => Value::opaque("jax.config.read of a flag tracelens does not read"),
        }),
        // A dtype, or its name; not a Python type or a key dtype.
        F::CanonicalizeDtype => Ok(match arg(0) {
            Value::DType(d) if !d.is_key() => Value::DType(crate::jax::dtypes::canonicalize(d, interp.jax.config)),
            Value::Str(s) => match DType::all().iter().find(|d| d.name() == s.as_ref()) {
                Some(d) => Value::DType(crate::jax::dtypes::canonicalize(*d, interp.jax.config)),
                None => Value::opaque("jax.dtypes.canonicalize_dtype of a dtype tracelens does not read"),
            },
            _ => Value::opaque("jax.dtypes.canonicalize_dtype of a dtype tracelens does not read"),
        }),
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
        F::LaxCond | F::LaxSwitch => {
            // The older calling convention: one pytree operand passed as `operand=`.
            let mut args = args;
            if let Some((_, operand)) = kwargs.iter().find(|(k, _)| k.as_ref() == "operand") {
                let fixed = if f == F::LaxCond { 3 } else { 2 };
                if args.len() != fixed {
                    return Err(interp.stop_unknown("`operand=` with other than the leading positional arguments"));
                }
                args.push(operand.clone());
            }
            if f == F::LaxCond {
                cond(interp, &args)
            } else {
                switch(interp, &args)
            }
        }
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
        F::RandomKey | F::RandomPRNGKey => random::key_from_seed(interp, f, &args),
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
        | F::RandomClone => random::random(interp, f, &args, &kwargs),
        F::RandomWrapKeyData => random::wrap_key_data(interp, &args, &kwargs),
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
    if crate::jax::stmt::recording(interp).is_some() {
        if let Some((api, fun, options)) = transform_call(o) {
            let def_site = fun_def_site(fun);
            return crate::jax::stmt::recorded_transform(interp, api, def_site, options, args, kwargs, |interp, args, kwargs| {
                call_jax_object_inner(interp, o, args, kwargs)
            });
        }
    }
    call_jax_object_inner(interp, o, args, kwargs)
}

/// A function transformation's result (`jax.grad(f)`), which another one may trace.
pub(super) fn is_transformation(v: &Value) -> bool {
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
        JaxObject::Jacobian { fun, argnums, has_aux, kind } => autodiff::jacobian_call(interp, fun, argnums, *has_aux, kind, args, kwargs),
        JaxObject::Wrapped { fun, .. } => interp.call(fun, args, kwargs),
        JaxObject::CustomDerivative { fun, kind, rules, nondiff_argnums } => {
            // Its rule, not its code, defines its derivative (`custom_rules/`).
            let rules = rules.borrow().clone();
            let this = obj(JaxObject::CustomDerivative {
                fun: fun.clone(),
                kind,
                rules: RefCell::new(rules.clone()),
                nondiff_argnums: nondiff_argnums.clone(),
            });
            crate::jax::custom_rules::call(interp, this, fun, kind, &rules, nondiff_argnums, args, kwargs)
        }
        JaxObject::At { .. } => Err(interp.type_error("'_IndexUpdateHelper' object is not callable")),
        JaxObject::AtIndex { .. } => Err(interp.type_error("'_IndexUpdateRef' object is not callable")),
        JaxObject::AtUpdate { array, index, op } => {
            // `x.at[i].set(v)` is one statement of the user's code for the reproducer.
            let mut refs: Vec<Value> = vec![Value::Array(array.clone()), index.clone()];
            refs.extend(args.iter().cloned());
            let refs: Vec<&Value> = refs.iter().collect();
            let statement_kwargs = kwargs.clone();
            crate::jax::stmt::recorded(interp, crate::jax::stmt::Call::AtUpdate(op), &refs, &statement_kwargs, |interp| {
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
        (JaxObject::Jitted(_), "lower" | "trace" | "eval_shape") => {
            Some(Value::Builtin(Rc::new(Builtin::Method { recv: Value::Builtin(b.clone()), name: Rc::from(name) })))
        }
        (JaxObject::Jitted(_), "clear_cache" | "_cache_size") => Some(Value::opaque(format!("jit .{name}"))),
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
        // `jitted.lower(x)`, `.trace(x)`, `.eval_shape(x)`, often with `jax.ShapeDtypeStruct`s:
        // JAX traces through the same cache as a call (a later call with those avals does not
        // trace again), but nothing is called, so the call count stays.
        (JaxObject::Jitted(j), "lower" | "trace" | "eval_shape") => {
            let calls = interp.jax.jitted[j.info].calls;
            let out = interp.call(&Value::Builtin(Rc::new(Builtin::Object(JaxObject::Jitted(j.clone())))), args, kwargs);
            interp.jax.jitted[j.info].calls = calls;
            let out = out?;
            if name == "eval_shape" {
                return map_arrays(interp, &out, &|a| Array::unknown(a.aval.clone(), jnp::EVAL_SHAPE_RESULT));
            }
            Ok(Value::opaque(format!("the result of jit .{name}")))
        }
        (JaxObject::CustomDerivative { rules, .. }, _) => {
            use crate::jax::custom_rules::Rules;
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

/// What the interpreter reads of a JAX object itself.
impl crate::interp::model::JaxObjectView for JaxObject {
    fn at_array(&self) -> Option<&Rc<Array>> {
        match self {
            JaxObject::At { array } => Some(array),
            _ => None,
        }
    }

    fn treedefs_equal(&self, other: &Self) -> Option<Option<bool>> {
        match (self, other) {
            (JaxObject::TreeDef(x), JaxObject::TreeDef(y)) => Some(x.equals(y)),
            _ => None,
        }
    }

    fn python_text(&self) -> Option<Option<String>> {
        match self {
            JaxObject::TreeDef(t) => Some(t.python_text()),
            _ => None,
        }
    }
}
