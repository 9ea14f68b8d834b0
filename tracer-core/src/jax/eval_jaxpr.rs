//! Concrete outputs of a staged call: the jaxpr's equations become lazily computed arrays
//! over the concrete inputs, so Python can still see values after a jitted call.

use std::rc::Rc;

use super::array::Array;
use super::ir::{Atom, Eqn, Jaxpr, Prim, VarId};
use crate::interp::value::HashMap;
use crate::interp::PyResult;

/// What the caller of `instantiate_with` does along the way.
pub trait EqnHooks {
    /// Called for each single-output equation in program order, as soon as its output array
    /// exists (values mode computes it there), and with `None` for each equation without
    /// outputs (`jax.debug.print`).
    fn evaluated(&mut self, eqn: &Eqn, out: Option<&Rc<Array>>, inputs: &[Rc<Array>]);
    /// The outputs of a control-flow equation (`cond`, `while`, `scan`, `vmap`) on these
    /// inputs, or `None` to leave them unknown.
    fn control(&mut self, eqn: &Eqn, inputs: &[Rc<Array>]) -> PyResult<Option<Vec<Rc<Array>>>>;
}

/// Lazy instantiation: nothing is computed now, and control flow stays unknown (its values
/// are computed in values mode only, where the interpreter can run its bodies).
struct Lazy;

impl EqnHooks for Lazy {
    fn evaluated(&mut self, _: &Eqn, _: Option<&Rc<Array>>, _: &[Rc<Array>]) {}
    fn control(&mut self, _: &Eqn, _: &[Rc<Array>]) -> PyResult<Option<Vec<Rc<Array>>>> {
        Ok(None)
    }
}

/// `None` when the jaxpr uses something that cannot be instantiated (multi-output equations).
pub fn instantiate(jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>]) -> Option<Vec<Rc<Array>>> {
    instantiate_with(jaxpr, consts, inputs, &mut Lazy).ok().flatten()
}

/// `instantiate`, with `hooks` told of each equation in program order and asked for the
/// outputs of control-flow equations.
pub fn instantiate_with(
    jaxpr: &Jaxpr,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
    hooks: &mut dyn EqnHooks,
) -> PyResult<Option<Vec<Rc<Array>>>> {
    if consts.len() != jaxpr.constvars.len() || inputs.len() != jaxpr.invars.len() {
        return Ok(None);
    }
    // Keyed by variable number with foldhash, each map sized for the whole jaxpr once: with
    // SipHash and growth, hashing was 15% of a `run` that calls a jitted function in a loop
    // (norm_logpdf_mle.py, callgrind).
    let vars = jaxpr.constvars.len() + jaxpr.invars.len() + jaxpr.eqns.len();
    let mut env: HashMap<VarId, Rc<Array>> = HashMap::with_capacity_and_hasher(vars, Default::default());
    for ((v, _), a) in jaxpr.constvars.iter().zip(consts).chain(jaxpr.invars.iter().zip(inputs)) {
        env.insert(*v, a.clone());
    }
    let read = |env: &HashMap<VarId, Rc<Array>>, a: &Atom| -> Option<Rc<Array>> {
        match a {
            Atom::Var(v) => env.get(v).cloned(),
            Atom::Lit(x, aval) => Some(Array::scalar(*x, aval.dtype, aval.weak)),
        }
    };
    // Each variable is dropped after the last equation that reads it (outputs are kept), so
    // an intermediate's data is freed as soon as nothing needs it: the allocator hands the
    // same memory to the next result of that size instead of fresh pages.
    let mut last_use: HashMap<VarId, usize> = HashMap::with_capacity_and_hasher(vars, Default::default());
    // How many equations read each variable (the jaxpr's outputs count as readers too).
    let mut uses: HashMap<VarId, usize> = HashMap::with_capacity_and_hasher(vars, Default::default());
    for (i, eqn) in jaxpr.eqns.iter().enumerate() {
        for a in &eqn.inputs {
            if let Atom::Var(v) = a {
                last_use.insert(*v, i);
                *uses.entry(*v).or_default() += 1;
            }
        }
    }
    for a in &jaxpr.outvars {
        if let Atom::Var(v) = a {
            last_use.insert(*v, usize::MAX);
            *uses.entry(*v).or_default() += 2;
        }
    }
    for (i, eqn) in jaxpr.eqns.iter().enumerate() {
        let ins: Option<Vec<Rc<Array>>> = eqn.inputs.iter().map(|a| read(&env, a)).collect();
        let Some(ins) = ins else { return Ok(None) };
        match (&eqn.prim, eqn.outputs.as_slice()) {
            (Prim::Pjit { .. } | Prim::Remat, _) => {
                let Some(body) = eqn.bodies.first() else { return Ok(None) };
                let n_consts = body.constvars.len().min(ins.len());
                let Some(outs) = instantiate_with(body, &ins[..n_consts], &ins[n_consts..], hooks)? else { return Ok(None) };
                for ((v, _), o) in eqn.outputs.iter().zip(outs) {
                    env.insert(*v, o);
                }
            }
            // A custom_jvp/custom_vjp marker passes on the function's outputs, its last inputs.
            (prim, outs) if prim.custom_call().is_some() => {
                let first = ins.len().saturating_sub(outs.len());
                for ((v, _), o) in outs.iter().zip(&ins[first..]) {
                    env.insert(*v, o.clone());
                }
            }
            (prim, outs) if prim.is_control_flow() => {
                let computed = hooks.control(eqn, &ins)?.filter(|c| c.len() == outs.len());
                for (i, (v, aval)) in outs.iter().enumerate() {
                    let out = match &computed {
                        Some(c) => c[i].clone(),
                        None => Array::unknown(aval.clone(), "control flow inside a traced function is computed in values mode only"),
                    };
                    env.insert(*v, out);
                }
            }
            (prim, [(v, aval)]) => {
                let out = if let Prim::Opaque(_) | Prim::DebugCallback = prim {
                    Array::unknown(aval.clone(), "no kernel")
                } else {
                    Array::pending(aval.clone(), prim.clone(), ins.clone())
                };
                // A comparison, a conversion from bool or a fill with a finite value never
                // makes a NaN or Inf: when one later equation reads its result, it is left to
                // that reader to compute (values mode watches the reader as before), which can
                // fuse it (`eval::masked_product`, `eval::masked_select`: neither the mask nor
                // the zeros of a relu's derivative are stored).
                let lazy = uses.get(v) == Some(&1)
                    && (matches!(prim, Prim::Compare(_))
                        || matches!(prim, Prim::Full { value, .. } if value.is_finite())
                        || matches!(prim, Prim::ConvertElementType { .. })
                            && ins.iter().all(|i| i.aval.dtype == super::dtypes::DType::Bool));
                if !lazy {
                    hooks.evaluated(eqn, Some(&out), &ins);
                }
                env.insert(*v, out);
            }
            (_, outs) => {
                if outs.is_empty() {
                    hooks.evaluated(eqn, None, &ins);
                }
                for (v, aval) in outs {
                    env.insert(*v, Array::unknown(aval.clone(), "multi-output primitive"));
                }
            }
        }
        for a in &eqn.inputs {
            if let Atom::Var(v) = a {
                if last_use.get(v) == Some(&i) {
                    env.remove(v);
                }
            }
        }
    }
    Ok(jaxpr.outvars.iter().map(|a| read(&env, a)).collect())
}
