//! `vmap` by batching rules: the jaxpr `vmap` traced on one example replayed on the batched
//! inputs, each equation with a mapped operand through its primitive's batching rule
//! (`prims::batch`), each other equation bound as it is (JAX's `BatchTrace`, run over the
//! per-example jaxpr instead of over the Python function: the function has been traced
//! once already, on per-example avals, which is what gives JAX's errors and `x.shape`).
//! Used only when every equation that sees a mapped operand has a rule
//! ([`batchable`]); otherwise `vmap` keeps its per-example path (`vmap.rs`).

use std::rc::Rc;

use crate::interp::Interp;
use crate::jax::ad::{AdError, AdResult};
use crate::jax::array::Array;
use crate::jax::ir::{Atom, Jaxpr, VarId};
use crate::jax::prims::batching::{apply_unmapped, BDim};
use crate::jax::prims::{self, Batching};

type HashMap<K, V> = crate::interp::value::HashMap<K, V>;

/// Whether every equation of `jaxpr` applied to a mapped operand has a batching rule, when
/// the inputs flagged in `mapped_invars` are mapped (a value computed from a mapped one is
/// mapped; constants are not).
pub(super) fn batchable(jaxpr: &Jaxpr, mapped_invars: &[bool]) -> bool {
    let mut mapped: HashMap<VarId, ()> = HashMap::default();
    for ((v, _), &m) in jaxpr.invars.iter().zip(mapped_invars) {
        if m {
            mapped.insert(*v, ());
        }
    }
    for eqn in &jaxpr.eqns {
        let flags: Vec<bool> = eqn.inputs.iter().map(|a| matches!(a, Atom::Var(v) if mapped.contains_key(v))).collect();
        if !flags.contains(&true) {
            continue;
        }
        if eqn.outputs.is_empty() || prims::batching(&eqn.prim, &flags) != Batching::Rule {
            return false;
        }
        for (v, _) in &eqn.outputs {
            mapped.insert(*v, ());
        }
    }
    true
}

/// The outputs of `jaxpr` with their batch dimensions, from its constants (not mapped) and
/// its inputs with theirs.
pub(super) fn batch_jaxpr(
    interp: &mut Interp,
    jaxpr: &Jaxpr,
    consts: &[Rc<Array>],
    args: &[(Rc<Array>, BDim)],
) -> AdResult<Vec<(Rc<Array>, BDim)>> {
    if consts.len() != jaxpr.constvars.len() || args.len() != jaxpr.invars.len() {
        return Err(AdError::NoRule("a vmap body whose inputs do not match its jaxpr".into()));
    }
    let mut env: HashMap<VarId, (Rc<Array>, BDim)> = HashMap::default();
    for ((v, _), c) in jaxpr.constvars.iter().zip(consts) {
        env.insert(*v, (c.clone(), None));
    }
    for ((v, _), a) in jaxpr.invars.iter().zip(args) {
        env.insert(*v, a.clone());
    }
    let read = |env: &HashMap<VarId, (Rc<Array>, BDim)>, atom: &Atom| -> AdResult<(Rc<Array>, BDim)> {
        match atom {
            Atom::Var(v) => env.get(v).cloned().ok_or_else(|| AdError::NoRule("an unbound variable".into())),
            Atom::Lit(x, aval) => Ok((Array::scalar(*x, aval.dtype, aval.weak), None)),
        }
    };
    for eqn in &jaxpr.eqns {
        // jax.debug.print and friends: their effect happened when the function was traced.
        if eqn.outputs.is_empty() {
            continue;
        }
        let (ins, dims): (Vec<Rc<Array>>, Vec<BDim>) =
            eqn.inputs.iter().map(|a| read(&env, a)).collect::<AdResult<Vec<_>>>()?.into_iter().unzip();
        let outs = if dims.iter().all(Option::is_none) {
            apply_unmapped(interp, &eqn.prim, &ins, eqn.bodies.clone())?
        } else {
            prims::batch(interp, &eqn.prim, &ins, &dims)?
        };
        if outs.len() != eqn.outputs.len() {
            return Err(AdError::NoRule(format!("{} batched to another number of outputs", eqn.prim.name())));
        }
        for ((v, _), o) in eqn.outputs.iter().zip(outs) {
            env.insert(*v, o);
        }
    }
    jaxpr.outvars.iter().map(|a| read(&env, a)).collect()
}
