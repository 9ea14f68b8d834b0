//! Concrete outputs of a staged call: the jaxpr's equations become lazily computed arrays
//! over the concrete inputs, so Python can still see values after a jitted call.

use std::collections::HashMap;
use std::rc::Rc;

use super::array::Array;
use super::ir::{Atom, Eqn, Jaxpr, Prim, VarId};

/// `None` when the jaxpr uses something that cannot be instantiated (multi-output equations).
pub fn instantiate(jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>]) -> Option<Vec<Rc<Array>>> {
    instantiate_with(jaxpr, consts, inputs, &mut |_, _, _| {})
}

/// `instantiate`, calling `on_eqn(eqn, output, inputs)` for each single-output equation in
/// program order, as soon as its output array exists (values mode computes it there), and
/// `on_eqn(eqn, None, inputs)` for each equation without outputs (`jax.debug.print`).
pub fn instantiate_with(
    jaxpr: &Jaxpr,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
    on_eqn: &mut dyn FnMut(&Eqn, Option<&Rc<Array>>, &[Rc<Array>]),
) -> Option<Vec<Rc<Array>>> {
    if consts.len() != jaxpr.constvars.len() || inputs.len() != jaxpr.invars.len() {
        return None;
    }
    let mut env: HashMap<VarId, Rc<Array>> = HashMap::new();
    for ((v, _), a) in jaxpr.constvars.iter().zip(consts).chain(jaxpr.invars.iter().zip(inputs)) {
        env.insert(*v, a.clone());
    }
    let read = |env: &HashMap<VarId, Rc<Array>>, a: &Atom| -> Option<Rc<Array>> {
        match a {
            Atom::Var(v) => env.get(v).cloned(),
            Atom::Lit(x, aval) => Some(Array::scalar(*x, aval.dtype, aval.weak)),
        }
    };
    for eqn in &jaxpr.eqns {
        let ins: Option<Vec<Rc<Array>>> = eqn.inputs.iter().map(|a| read(&env, a)).collect();
        let ins = ins?;
        match (&eqn.prim, eqn.outputs.as_slice()) {
            (Prim::Pjit { .. } | Prim::Remat, _) => {
                let body = eqn.bodies.first()?;
                let n_consts = body.constvars.len();
                let outs = instantiate_with(body, &ins[..n_consts.min(ins.len())], &ins[n_consts.min(ins.len())..], on_eqn)?;
                for ((v, _), o) in eqn.outputs.iter().zip(outs) {
                    env.insert(*v, o);
                }
            }
            (prim, [(v, aval)]) => {
                let out = match prim {
                    Prim::Opaque(_) | Prim::DebugCallback => Array::unknown(aval.clone(), "no kernel"),
                    _ => Array::pending(aval.clone(), prim.clone(), ins.clone()),
                };
                on_eqn(eqn, Some(&out), &ins);
                env.insert(*v, out);
            }
            (_, outs) => {
                if outs.is_empty() {
                    on_eqn(eqn, None, &ins);
                }
                for (v, aval) in outs {
                    env.insert(*v, Array::unknown(aval.clone(), "multi-output primitive"));
                }
            }
        }
    }
    jaxpr.outvars.iter().map(|a| read(&env, a)).collect()
}
