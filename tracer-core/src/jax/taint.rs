//! Which values JAX sees as tracers under `grad`/`jvp`: a dependence taint over a
//! differentiation trace's inputs, JAX's nonzero tangents (`Tracer::active`).
//!
//! Under `jax.grad(f, argnums)(*args)` only the differentiated arguments reach `f` as
//! tracers; the others are the concrete arrays they are. JAX's `JVPTrace` and
//! `LinearizeTrace` return a primitive's output as a plain array when its tangent is
//! symbolically zero (`maybe_jvp_tracer`): an output that does not depend on a tracer, an
//! integer or boolean output (a `float0` tangent), the output of a primitive whose JVP is zero
//! (`stop_gradient`, `floor`, `sign`, ...). tracelens' grad trace makes every argument an input,
//! so it keeps that dependence itself: the invariant is that a value flagged here is one JAX
//! certainly sees as a tracer. Where the rule cannot tell (an opaque operation, a user's
//! `custom_jvp` rule under reverse mode), the output is not flagged: NumPy conversion of it
//! stays silent.
//!
//! Equations with bodies follow JAX's JVP rules for them: a call (`pjit`, `checkpoint`,
//! `vmap`) the dependence inside its body; `cond`/`switch` any branch's; `scan` and
//! `while_loop` a fixed point over the carry (a carry that starts or becomes nonzero stays
//! nonzero), then the body's per-step outputs; the `custom_jvp`/`custom_vjp` markers what the
//! user's rule does with the tangents, where that is known without running it.

use std::collections::HashSet;
use std::rc::Rc;

use super::aval::Aval;
use super::custom_rules::CustomCall;
use super::ir::{Atom, Jaxpr, Prim, VarId};
use super::prims::{families, properties};
use super::{TraceFrame, TraceKind};

/// How JAX differentiates in the trace an equation is bound in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// `jax.jvp`, `jacfwd`, `hessian`: `JVPTrace`, which runs a `custom_jvp` rule on
    /// instantiated tangents and refuses a `custom_vjp` function.
    Forward,
    /// `grad`, `vjp`, `jacrev`: `LinearizeTrace`, which keeps a `custom_jvp` rule's tangent
    /// only where it depends on a nonzero tangent.
    #[default]
    Reverse,
    /// Reverse mode inside a forward one (`hessian`'s inner `jacrev`): a `custom_vjp` call
    /// raises JAX's `TypeError` there, so its outputs are not flagged.
    ReverseUnderForward,
}

impl Mode {
    /// How the differentiating trace at `pos` of `traces` runs JAX's rules, and whether a
    /// trace around it differentiates forward.
    pub fn at(traces: &[TraceFrame], pos: usize) -> Mode {
        let forward = |t: &TraceFrame| t.kind == TraceKind::Jvp || t.ad_mode == Mode::Forward;
        match traces.get(pos) {
            Some(t) if forward(t) => Mode::Forward,
            _ if traces[..pos.min(traces.len())].iter().any(forward) => Mode::ReverseUnderForward,
            _ => Mode::Reverse,
        }
    }
}

/// For each output of `prim` bound in a `grad`/`jvp` trace on inputs flagged `active`: whether
/// it depends on a differentiated argument with a tangent JAX does not drop.
pub fn outputs_active(prim: &Prim, active: &[bool], out_avals: &[Aval], bodies: &[Rc<Jaxpr>], mode: Mode) -> Vec<bool> {
    let none = || vec![false; out_avals.len()];
    // JAX's symbolic-zero JVPs (`stop_gradient`, `floor`, comparisons, ...): decided with the
    // primitive's other properties.
    if !active.iter().any(|&a| a) || properties::zero_jvp(prim) {
        return none();
    }
    let through_body = match prim {
        // A call: the dependence inside its body, whose binders are the equation's inputs.
        Prim::Pjit { .. } | Prim::Remat | Prim::Vmap { .. } => match bodies {
            [body] => call_outputs(body, active, mode),
            _ => None,
        },
        Prim::Cond { .. } => cond_outputs(bodies, active, mode),
        Prim::Scan { num_carry, .. } => match bodies {
            [body] => loop_outputs(body, active, body.constvars.len(), *num_carry, mode),
            _ => None,
        },
        Prim::While => match bodies {
            [cond, body] => {
                active.get(cond.constvars.len()..).and_then(|rest| loop_outputs(body, rest, body.constvars.len(), body.invars.len(), mode))
            }
            _ => None,
        },
        Prim::CustomJvpCall { call } | Prim::CustomVjpCall { call } => custom_outputs(prim, call, active, out_avals.len(), mode),
        // An opaque operation's derivative is not modelled: never flagged.
        Prim::Opaque(_) | Prim::DebugCallback => None,
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
        | Prim::Block(_) => Some(vec![true; out_avals.len()]),
    };
    let Some(flags) = through_body else { return none() };
    out_avals.iter().zip(flags.into_iter().chain(std::iter::repeat(false))).map(|(aval, f)| f && aval.dtype.is_inexact()).collect()
}

/// A body called on the equation's inputs (its constvars, then its invars).
fn call_outputs(body: &Jaxpr, active: &[bool], mode: Mode) -> Option<Vec<bool>> {
    (body.constvars.len() + body.invars.len() == active.len()).then(|| body_outputs_active(body, active, mode))
}

/// `cond(index, *consts of each branch, *operands)`: an output is nonzero when it is in any
/// branch (JAX's `_cond_jvp` joins the branches' nonzero outputs). The index is an integer.
fn cond_outputs(branches: &[Rc<Jaxpr>], active: &[bool], mode: Mode) -> Option<Vec<bool>> {
    let consts: usize = branches.iter().map(|b| b.constvars.len()).sum();
    let operands = active.get(1 + consts..)?;
    let mut joined: Option<Vec<bool>> = None;
    let mut offset = 1;
    for branch in branches {
        let own = active.get(offset..offset + branch.constvars.len())?;
        offset += branch.constvars.len();
        let flags: Vec<bool> = own.iter().chain(operands).copied().collect();
        let outs = call_outputs(branch, &flags, mode)?;
        joined = Some(match joined {
            None => outs,
            Some(j) if j.len() == outs.len() => j.into_iter().zip(outs).map(|(a, b)| a || b).collect(),
            Some(_) => return None,
        });
    }
    joined
}

/// `scan(*consts, *carry, *xs)` and a `while_loop` body (`*consts, *carry`): JAX's fixed point
/// (`_scan_jvp`, `_while_loop_jvp`): the carry's nonzero flags grow until the body maps them to
/// themselves; the outputs are that carry, then the body's per-step outputs on it.
fn loop_outputs(body: &Jaxpr, active: &[bool], consts: usize, num_carry: usize, mode: Mode) -> Option<Vec<bool>> {
    if body.constvars.len() + body.invars.len() != active.len() || consts + num_carry > active.len() {
        return None;
    }
    let mut flags = active.to_vec();
    // Each round sets at least one more carry flag, or is the last.
    for _ in 0..=num_carry {
        let outs = body_outputs_active(body, &flags, mode);
        if outs.len() < num_carry {
            return None;
        }
        let carry = &mut flags[consts..consts + num_carry];
        let grown: Vec<bool> = carry.iter().zip(&outs).map(|(&c, &o)| c || o).collect();
        if grown == carry {
            let mut result = grown;
            result.extend_from_slice(&outs[num_carry..]);
            return Some(result);
        }
        carry.copy_from_slice(&grown);
    }
    None
}

/// A `custom_jvp`/`custom_vjp` marker (inputs: the arguments' leaves, then the function's
/// outputs, which it passes on). Under forward mode JAX runs a `custom_jvp` rule whenever an
/// argument's tangent is nonzero, on instantiated tangents: every output is then a tracer;
/// a `custom_vjp` function raises there. Under reverse mode a `custom_vjp` call gives every
/// output a tangent once an argument has one; a `custom_jvp` output is a tracer only if the
/// rule's tangent depends on a nonzero tangent, which JAX's own rules do wherever the output
/// depends on the argument, and a user's rule may not (`jnp.zeros_like(t)`): not flagged.
fn custom_outputs(prim: &Prim, call: &CustomCall, active: &[bool], outs: usize, mode: Mode) -> Option<Vec<bool>> {
    let leaves = call.arg_leaves();
    if active.len() != leaves + outs || call.closes_over_tracer() {
        return None;
    }
    let any_argument = active[..leaves].iter().enumerate().any(|(i, &a)| a && call.differentiable_leaf(i));
    let jvp = matches!(prim, Prim::CustomJvpCall { .. });
    match mode {
        Mode::Forward if jvp => Some(vec![any_argument; outs]),
        Mode::Reverse | Mode::ReverseUnderForward if jvp && call.has_library_rule() => Some(active[leaves..].to_vec()),
        Mode::Reverse if !jvp => Some(vec![any_argument; outs]),
        _ => None,
    }
}

/// Which outputs of `body` (binders: constvars then invars, flagged by `active`) are tainted,
/// equation by equation with `outputs_active`.
fn body_outputs_active(body: &Jaxpr, active: &[bool], mode: Mode) -> Vec<bool> {
    let mut tainted: HashSet<VarId> =
        body.constvars.iter().chain(&body.invars).zip(active).filter(|(_, &a)| a).map(|((v, _), _)| *v).collect();
    for eqn in &body.eqns {
        let flags: Vec<bool> = eqn.inputs.iter().map(|a| matches!(a, Atom::Var(v) if tainted.contains(v))).collect();
        let avals: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
        let outs = outputs_active(&eqn.prim, &flags, &avals, &eqn.bodies, mode);
        tainted.extend(eqn.outputs.iter().zip(outs).filter(|(_, a)| *a).map(|((v, _), _)| *v));
    }
    body.outvars.iter().map(|a| matches!(a, Atom::Var(v) if tainted.contains(v))).collect()
}

/// For each output of a `jax.jvp` trace (`jaxpr`, every input differentiated): whether JAX's
/// tangent for it is a symbolic zero, as equinox's `filter_jvp` reports with `None`.
/// `Some(false)`: certainly not (a tracer by the rules above); `Some(true)`: certainly (JAX
/// hands back a plain array: it depends on no input, or it is an integer or boolean output of a
/// primitive, or the output of one whose JVP is zero); `None`: the rules cannot tell (an input
/// itself of an integer type, whose tangent is `float0`, or a call whose body they do not flag).
pub fn jvp_symbolic_zeros(jaxpr: &Jaxpr) -> Vec<Option<bool>> {
    let active: Vec<bool> =
        jaxpr.constvars.iter().map(|_| false).chain(jaxpr.invars.iter().map(|(_, aval)| aval.dtype.is_inexact())).collect();
    let tracers = body_outputs_active(jaxpr, &active, Mode::Forward);
    // Certainly plain arrays: JAX binds the primitive on primals alone when no input is a
    // tracer, and `maybe_jvp_tracer` drops a zero or `float0` tangent.
    let mut nonzero_maybe: HashSet<VarId> = jaxpr.invars.iter().map(|(v, _)| *v).collect();
    for eqn in &jaxpr.eqns {
        let any_input = eqn.inputs.iter().any(|a| matches!(a, Atom::Var(v) if nonzero_maybe.contains(v)));
        if any_input && !properties::zero_jvp(&eqn.prim) {
            nonzero_maybe.extend(eqn.outputs.iter().filter(|(_, aval)| aval.dtype.is_inexact()).map(|(v, _)| *v));
        }
    }
    jaxpr
        .outvars
        .iter()
        .zip(tracers)
        .map(|(atom, tracer)| match atom {
            _ if tracer => Some(false),
            Atom::Var(v) if nonzero_maybe.contains(v) => None,
            _ => Some(true),
        })
        .collect()
}
