//! The autodiff API surface: `jax.grad`/`value_and_grad` calls, `jax.jvp`'s tangent checks,
//! `jax.vjp`'s function with values, and the replayed outputs that replace traced ones.
//! The differentiation itself (linearize, JVP and transpose rules) lives in `jax/ad*.rs`.

use super::dispatch::{obj, JaxObject};
use super::jit::canonical_aval;
use super::pytrees::{flatten, leaf_avals, unflatten};
use super::trace::{abstract_output, array_leaves, map_abstract, numbers_as_arrays, trace_with_record};
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::ad::{self, VjpValues};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::numpy::{operand, Operand};
use crate::jax::TraceKind;
use std::rc::Rc;

/// `jax.jvp`'s checks of each primal against its tangent: the tangent dtype of the primal's
/// (`float0` for integers and booleans), and the same shape.
fn check_jvp_tangents(interp: &mut Interp, primals: &[Value], tangents: &[Value]) -> PyResult<()> {
    let (ps, ts) = (array_leaves(interp, primals)?, array_leaves(interp, tangents)?);
    if ps.len() != ts.len() {
        return Ok(()); // a structure JAX would refuse, or leaves not modelled: not checked
    }
    for (p, t) in ps.iter().zip(&ts) {
        let (pd, td) = (p.aval.dtype, t.aval.dtype);
        let expected = if pd.is_integer() || pd == DType::Bool { None } else { Some(pd) };
        if expected != Some(td) {
            let expected = match expected {
                Some(d) => d.name().to_string(),
                None => "[('float0', 'V')]".to_string(),
            };
            return Err(interp.type_error(format!(
                "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case of int/bool primal dtype the tangent dtype must be float0.Got primal dtype {} and so expected tangent dtype {expected}, but got tangent dtype {} instead.",
                pd.name(),
                td.name()
            )));
        }
        if p.aval.shape != t.aval.shape {
            return Err(interp.raise(
                "ValueError",
                Code::ShapeMismatch,
                format!(
                    "jvp called with different primal and tangent shapes;Got primal shape {} and tangent shape as {}",
                    p.aval.shape_tuple(),
                    t.aval.shape_tuple()
                ),
            ));
        }
    }
    Ok(())
}

/// The outputs of a differentiated function as its replay (`ad::linearize`) computed them,
/// in place of the traced ones, when their leaves match: inside a staging trace the traced
/// ones would be opaque, and outside one they have no values where the function went through
/// control flow the trace only recorded (a `vmap` inside `grad`), whereas the replay resolved it.
fn with_replayed_outputs(interp: &mut Interp, out: Value, outputs: &[Rc<Array>]) -> PyResult<Value> {
    let (tree, leaves) = leaf_avals(interp, &out)?;
    let same = leaves.len() == outputs.len()
        && leaves.iter().zip(outputs).all(|(l, o)| l.as_ref().is_some_and(|a| a.shape == o.aval.shape && a.dtype == o.aval.dtype));
    if !same {
        return Ok(out);
    }
    unflatten(interp, &tree, &mut outputs.iter().cloned().map(Value::Array).collect::<Vec<_>>().into_iter())
}

pub(super) fn grad_call(
    interp: &mut Interp,
    fun: &Value,
    argnums: &Value,
    has_aux: bool,
    with_value: bool,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> PyResult<Value> {
    let nums: Vec<usize> = match argnums {
        Value::Int(i) => vec![*i as usize],
        Value::Tuple(t) => t.iter().filter_map(crate::interp::ops::as_int).map(|i| i as usize).collect(),
        _ => vec![0],
    };
    let name = if with_value { "value_and_grad" } else { "grad" };
    for &n in &nums {
        let Some(a) = args.get(n) else {
            return Err(interp.type_error(format!("differentiating with respect to argnums={n} requires at least {} positional arguments to be passed by the caller, but got only {} positional arguments.", n + 1, args.len())));
        };
        let mut leaves = Vec::new();
        flatten(interp, a, "", &mut leaves)?;
        for (_, leaf) in leaves {
            if let Operand::Array(x) = operand(interp, &leaf)? {
                if !x.aval.dtype.is_inexact() {
                    return Err(interp.raise(
                        "TypeError",
                        Code::DtypeMismatch,
                        format!("{name} requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), but got {}. If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to True.", x.aval.dtype.name()),
                    ));
                }
            }
        }
    }
    // Argument numbers the model cannot read differentiate nothing it would flag.
    let read = matches!(argnums, Value::Int(_) | Value::Tuple(_));
    interp.jax.differentiated = Some(if read { nums.clone() } else { Vec::new() });
    let (mut out, _, trace) = trace_with_record(interp, fun, args.clone(), kwargs, TraceKind::Grad, name, None, String::new())?;
    // A non-scalar output is JAX's TypeError below: no backward pass is run for it (its
    // cotangent would not have the output's shape).
    let primal = match (&out, has_aux) {
        (Value::Tuple(parts), true) => parts.first().cloned(),
        (other, _) => Some(other.clone()),
    };
    let non_scalar = matches!(&primal, Some(Value::Array(a)) if a.aval.ndim() != 0);
    let values = match &trace {
        Some(trace) if !matches!(out, Value::Opaque(_)) && !non_scalar => ad::grad_values(interp, trace, &nums)?,
        _ => None,
    };
    if let Some(v) = &values {
        out = with_replayed_outputs(interp, out, &v.outputs)?;
    }
    // Inside a jit every output of grad is a tracer, even of a function whose output the
    // interpreter does not know (an unknown argument): its value is certainly a tracer.
    let staged = interp.jax.staging_depth() > 0;
    let (primal_out, aux) = if has_aux && matches!(out, Value::Opaque(_)) {
        (out.clone(), Some(Value::opaque("the auxiliary output of a function with unknown output")))
    } else if has_aux {
        let parts = interp.iterate(&out)?;
        if parts.len() != 2 {
            return Err(
                interp.type_error(format!("{name} with has_aux=True requires the function to return a pair, got {} values", parts.len()))
            );
        }
        (parts[0].clone(), Some(parts[1].clone()))
    } else {
        (out, None)
    };
    let unknown_output = matches!(primal_out, Value::Opaque(_));
    match &primal_out {
        Value::Array(a) => {
            if a.aval.ndim() != 0 {
                return Err(interp.raise(
                    "TypeError",
                    Code::NonScalarGrad,
                    format!("Gradient only defined for scalar-output functions. Output had shape: {}.", a.aval.shape_tuple()),
                ));
            }
            if a.aval.dtype.is_complex() {
                return Err(interp.raise(
                    "TypeError",
                    Code::NonScalarGrad,
                    format!(
                        "{name} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got {}. For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions involving complex outputs, use jax.vjp directly.",
                        a.aval.dtype.name()
                    ),
                ));
            }
            if !a.aval.dtype.is_inexact() {
                return Err(interp.raise(
                    "TypeError",
                    Code::DtypeMismatch,
                    format!("{name} requires real- or complex-valued outputs (output dtype that is a sub-dtype of np.inexact), but got {}. For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions involving complex outputs, use jax.vjp directly.", a.aval.dtype.name()),
                ));
            }
        }
        Value::Opaque(_) if !staged => return Ok(Value::opaque("grad of a function with unknown output")),
        Value::Opaque(_) => {}
        other => {
            let shown = match other {
                Value::Tuple(items) => {
                    let parts: Vec<String> = items
                        .iter()
                        .map(|x| match x {
                            Value::Array(a) => format!("JitTracer({})", a.aval.long_weak()),
                            v => interp.repr(v).unwrap_or_default(),
                        })
                        .collect();
                    format!("({})", parts.join(", "))
                }
                v => interp.repr(v).unwrap_or_default(),
            };
            return Err(interp.raise(
                "TypeError",
                Code::NonScalarGrad,
                format!("Gradient only defined for scalar-output functions. Output was {shown}."),
            ));
        }
    }
    let mut grads = Vec::new();
    for (k, &n) in nums.iter().enumerate() {
        // The gradient has the structure and avals of the argument (a Python float gives ~f32[]).
        let mut leaves = Vec::new();
        let tree = flatten(interp, &args[n], "", &mut leaves)?;
        let mut g_leaves = Vec::new();
        let deps = array_leaves(interp, &args)?;
        let mut computed = values.as_ref().and_then(|v| v.grads.get(k)).cloned().unwrap_or_default().into_iter();
        for (_, leaf) in leaves {
            g_leaves.push(match operand(interp, &leaf)? {
                // Of a function whose output is unknown: a tracer whose weak type (which the
                // backward pass decides) is not known either.
                Operand::Array(_) if unknown_output => Value::opaque_tracer("the gradient of a function with unknown output"),
                Operand::Array(a) => {
                    let aval = canonical_aval(interp, &a.aval);
                    match computed.next() {
                        // Its weak type is the one the backward pass gave it (`ad::input_cotangent`).
                        Some(g) if g.aval.shape == aval.shape && g.aval.dtype == aval.dtype => Value::Array(g),
                        _ => Value::Array(abstract_output(interp, aval, &deps, "grad")?),
                    }
                }
                // Its gradient has the unknown's structure, not known either.
                Operand::Unknown if staged => Value::opaque("the gradient with respect to an unknown value"),
                Operand::Unknown => return Ok(Value::opaque("grad with respect to an unknown value")),
            });
        }
        grads.push(unflatten(interp, &tree, &mut g_leaves.into_iter())?);
    }
    let primal_out = match primal_out {
        Value::Opaque(o) if !o.tracer => Value::opaque_tracer(o.what.clone()),
        other => other,
    };
    let g = if matches!(argnums, Value::Tuple(_)) { Value::tuple(grads) } else { grads.into_iter().next().unwrap_or(Value::None) };
    Ok(match (with_value, aux) {
        (false, None) => g,
        (false, Some(aux)) => Value::tuple(vec![g, aux]),
        (true, None) => Value::tuple(vec![primal_out, g]),
        (true, Some(aux)) => Value::tuple(vec![Value::tuple(vec![primal_out, aux]), g]),
    })
}

/// `jax.vjp`'s function with values: the linearization and the primals it was taken at.
#[derive(Debug)]
pub struct VjpValuesOf {
    lin: VjpValues,
    primals: Vec<Value>,
}

/// Calls a `vjp` function on output cotangents: one cotangent per primal, shaped like it.
/// `None` when the values cannot be computed.
pub(super) fn vjp_values(interp: &mut Interp, v: &VjpValuesOf, args: &[Value]) -> PyResult<Option<Value>> {
    let cts = array_leaves(interp, args)?;
    let Some(per_arg) = ad::vjp_apply(interp, &v.lin, &cts)? else { return Ok(None) };
    let mut result = Vec::with_capacity(v.primals.len());
    for (i, p) in v.primals.iter().enumerate() {
        let mut leaves = Vec::new();
        let tree = flatten(interp, p, "", &mut leaves)?;
        let cts = per_arg.get(i).cloned().unwrap_or_default();
        if cts.len() != leaves.len() {
            return Ok(None);
        }
        result.push(unflatten(interp, &tree, &mut cts.into_iter().map(Value::Array).collect::<Vec<_>>().into_iter())?);
    }
    Ok(Some(Value::tuple(result)))
}

/// `jax.jvp(fun, primals, tangents)`: the outputs and their tangents, computed when the
/// replay can (`ad::jvp_values`), abstract otherwise.
///
/// With `symbolic_zeros` (equinox's `filter_jvp` shim asks for it), an output whose tangent
/// JAX keeps as a symbolic zero gets `None` for its tangent, and one the rules cannot decide
/// (`taint::jvp_symbolic_zeros`) an unknown.
pub(super) fn jvp_call(interp: &mut Interp, args: &[Value], symbolic_zeros: bool) -> PyResult<Value> {
    let (out, tangent, jaxpr) = jvp_outputs(interp, args)?;
    if !symbolic_zeros {
        return Ok(Value::tuple(vec![out, tangent]));
    }
    let mut leaves = Vec::new();
    let tree = flatten(interp, &tangent, "", &mut leaves)?;
    let zeros = jaxpr.map(|j| crate::jax::taint::jvp_symbolic_zeros(&j)).unwrap_or_default();
    let unknown = || Value::opaque("a tangent of filter_jvp that may be a symbolic zero");
    let marked: Vec<Value> = if zeros.len() == leaves.len() {
        leaves
            .into_iter()
            .zip(zeros)
            .map(|((_, leaf), zero)| match zero {
                Some(false) => leaf,
                Some(true) => Value::None,
                None => unknown(),
            })
            .collect()
    } else {
        leaves.iter().map(|_| unknown()).collect()
    };
    let tangent = unflatten(interp, &tree, &mut marked.into_iter())?;
    Ok(Value::tuple(vec![out, tangent]))
}

/// `jax.jvp`'s outputs and tangents, and the trace's jaxpr when there is one.
fn jvp_outputs(interp: &mut Interp, args: &[Value]) -> PyResult<(Value, Value, Option<Rc<crate::jax::ir::Jaxpr>>)> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
    let fun = arg(0);
    // Python numbers are weakly typed scalars to jvp, as to jit: traced, with a tangent.
    let primals = interp.iterate(&arg(1))?.iter().map(|v| numbers_as_arrays(interp, v)).collect::<PyResult<Vec<_>>>()?;
    let tangents = interp.iterate(&arg(2))?.iter().map(|v| numbers_as_arrays(interp, v)).collect::<PyResult<Vec<_>>>()?;
    check_jvp_tangents(interp, &primals, &tangents)?;
    let deps = array_leaves(interp, &[Value::tuple(primals.clone()), Value::tuple(tangents.clone())])?;
    interp.jax.differentiated = None;
    let (out, _, trace) = trace_with_record(interp, &fun, primals, Vec::new(), TraceKind::Jvp, "jvp", None, String::new())?;
    // A tangent has its primal's type, weak type included.
    let tangent = map_abstract(interp, &out, &deps, &|a| a.clone(), "jvp_tangent")?;
    let Some(trace) = trace else { return Ok((out, tangent, None)) };
    let jaxpr = Some(trace.jaxpr.clone());
    // The tangent leaves, matched to the input tracers argument by argument.
    let mut by_arg: Vec<std::vec::IntoIter<Rc<Array>>> = Vec::new();
    for t in &tangents {
        by_arg.push(array_leaves(interp, std::slice::from_ref(t))?.into_iter());
    }
    let ts: Vec<Option<Rc<Array>>> = trace.inputs.iter().map(|(i, _)| by_arg.get_mut(*i).and_then(Iterator::next)).collect();
    let (tree, expected) = leaf_avals(interp, &tangent)?;
    let (Some(expected), true) = (expected.into_iter().collect::<Option<Vec<Aval>>>(), ts.iter().all(Option::is_some)) else {
        return Ok((out, tangent, jaxpr));
    };
    let (out, tangent) = match ad::jvp_values(interp, &trace, &ts, &expected)? {
        Some((outputs, values)) => (
            with_replayed_outputs(interp, out, &outputs)?,
            unflatten(interp, &tree, &mut values.into_iter().map(Value::Array).collect::<Vec<_>>().into_iter())?,
        ),
        None => (out, tangent),
    };
    Ok((out, tangent, jaxpr))
}

/// `jax.vjp(fun, *primals)`: the outputs and the `vjp` function, with values when the
/// linearization can be computed.
pub(super) fn vjp_call(interp: &mut Interp, args: &[Value]) -> PyResult<Value> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
    let fun = arg(0);
    let primals = args[1..].to_vec();
    let inputs: Vec<Aval> = primals.iter().filter_map(|p| p.as_array().map(|a| a.aval.clone())).collect();
    interp.jax.differentiated = None;
    let (out, _, trace) = trace_with_record(interp, &fun, primals.clone(), Vec::new(), TraceKind::Grad, "vjp", None, String::new())?;
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

/// A call of `jax.jacfwd(f)`, `jax.jacrev(f)` or `jax.hessian(f)`.
pub(super) fn jacobian_call(
    interp: &mut Interp,
    fun: &Value,
    argnums: &Value,
    has_aux: bool,
    kind: &'static str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> PyResult<Value> {
    // `argnums=-1` counts from the last argument, as JAX does.
    let argnum = crate::interp::ops::as_int(argnums).unwrap_or(0);
    let argnum = usize::try_from(if argnum < 0 { argnum + args.len() as i64 } else { argnum }).unwrap_or(usize::MAX);
    let x_aval = args.get(argnum).and_then(|a| a.as_array().map(|a| a.aval.clone()));
    let deps = array_leaves(interp, &args)?;
    // hessian is jacfwd(jacrev(f)): the inner Jacobian's passes are recorded in the
    // outer trace, which differentiates them again.
    let inner;
    let (traced_fun, forward) = match kind {
        "hessian" => {
            inner = obj(JaxObject::Jacobian { fun: fun.clone(), argnums: argnums.clone(), has_aux, kind: "jacrev" });
            (&inner, true)
        }
        k => (fun, k == "jacfwd"),
    };
    interp.jax.differentiated = Some(vec![argnum]);
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
    let (Some(trace), false) = (trace, has_aux) else { return Ok(jac) };
    let (tree, expected) = leaf_avals(interp, &jac)?;
    let Some(expected) = expected.into_iter().collect::<Option<Vec<Aval>>>() else { return Ok(jac) };
    match ad::jacobian_values(interp, &trace, argnum, forward, &expected)? {
        Some(values) => unflatten(interp, &tree, &mut values.into_iter().map(Value::Array).collect::<Vec<_>>().into_iter()),
        None => Ok(jac),
    }
}
