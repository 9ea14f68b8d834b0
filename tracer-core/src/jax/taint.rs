//! Which values JAX sees as tracers under `grad`/`jvp`: a dependence taint over a
//! differentiation trace's inputs, JAX's nonzero tangents (`Tracer::active`).
//!
//! Under `jax.grad(f, argnums)(*args)` only the differentiated arguments reach `f` as
//! `JVPTracer`s/`LinearizeTracer`s; the others are the concrete arrays they are. JAX's
//! `JVPTrace` returns a primitive's output as a plain array when its tangent is symbolically
//! zero (`maybe_jvp_tracer`): an output that does not depend on a tracer, an integer or boolean
//! output (a `float0` tangent), the output of a primitive whose JVP is zero (`stop_gradient`,
//! `floor`, `sign`, ...). tracelens' grad trace makes every argument an input, so it keeps that
//! dependence itself: the invariant is that a value flagged here is one JAX certainly sees as
//! a tracer. Where the rule cannot tell (control flow, an opaque operation), the output is not
//! flagged: NumPy conversion of it stays silent, as it was before the taint.

use std::collections::HashSet;
use std::rc::Rc;

use super::aval::Aval;
use super::ir::{Atom, Jaxpr, Prim, UnaryPrim, VarId};
use super::prims::families;

/// For each output of `prim` bound in a `grad`/`jvp` trace on inputs flagged `active`: whether
/// it depends on a differentiated argument with a tangent JAX does not drop.
pub fn outputs_active(prim: &Prim, active: &[bool], out_avals: &[Aval], bodies: &[Rc<Jaxpr>]) -> Vec<bool> {
    if !active.iter().any(|&a| a) || zero_derivative(prim) {
        return vec![false; out_avals.len()];
    }
    let through_body = match prim {
        // A jitted call or a checkpoint: the dependence inside its body.
        Prim::Pjit { .. } | Prim::Remat => match bodies {
            [body] if body.constvars.len() + body.invars.len() == active.len() => Some(body_outputs_active(body, active)),
            _ => return vec![false; out_avals.len()],
        },
        // JAX's rules for these decide per output with fixed points over carries and branches,
        // and an opaque operation's derivative is not modelled: never flagged.
        Prim::Cond { .. }
        | Prim::Scan { .. }
        | Prim::While
        | Prim::Vmap { .. }
        | Prim::CustomJvpCall { .. }
        | Prim::CustomVjpCall { .. }
        | Prim::Opaque(_)
        | Prim::DebugCallback => return vec![false; out_avals.len()],
        families::elementwise!()
        | families::movement!()
        | families::reductions!()
        | families::random!()
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::DotGeneral { .. }
        | Prim::Gather { .. }
        | Prim::Scatter { .. }
        | Prim::Linalg(_)
        | Prim::Block(_) => None,
    };
    out_avals
        .iter()
        .enumerate()
        .map(|(i, aval)| aval.dtype.is_inexact() && through_body.as_ref().is_none_or(|flags| flags.get(i).copied().unwrap_or(false)))
        .collect()
}

/// Primitives whose JVP is JAX's symbolic zero (`ad.defjvp_zero`, `stop_gradient`): their
/// outputs are never tracers under `grad`. Random primitives' outputs are keys or integers.
fn zero_derivative(prim: &Prim) -> bool {
    matches!(
        prim,
        Prim::StopGradient
            | Prim::Unary(UnaryPrim::Sign | UnaryPrim::Floor | UnaryPrim::Ceil | UnaryPrim::Round | UnaryPrim::IsFinite)
            | Prim::Compare(_)
            | Prim::ArgReduce { .. }
            | Prim::TopKIndices { .. }
            | Prim::Iota { .. }
            | Prim::Full { .. }
    )
}

/// Which outputs of `body` (binders: constvars then invars, flagged by `active`) are tainted,
/// equation by equation with `outputs_active`.
fn body_outputs_active(body: &Jaxpr, active: &[bool]) -> Vec<bool> {
    let mut tainted: HashSet<VarId> =
        body.constvars.iter().chain(&body.invars).zip(active).filter(|(_, &a)| a).map(|((v, _), _)| *v).collect();
    for eqn in &body.eqns {
        let flags: Vec<bool> = eqn.inputs.iter().map(|a| matches!(a, Atom::Var(v) if tainted.contains(v))).collect();
        let avals: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
        let outs = outputs_active(&eqn.prim, &flags, &avals, &eqn.bodies);
        tainted.extend(eqn.outputs.iter().zip(outs).filter(|(_, a)| *a).map(|((v, _), _)| *v));
    }
    body.outvars.iter().map(|a| matches!(a, Atom::Var(v) if tainted.contains(v))).collect()
}
