//! Derivatives of control-flow equations whose path is not known while differentiating: a
//! `cond`/`switch` whose branch index is a traced value (`jax.jit(jax.grad(f))`), and forward
//! mode through a `while` loop. As in JAX (jax/_src/lax/control_flow/conditionals.py and
//! loops.py), the derivative is itself control flow, run with the concrete index or trip
//! count when the evaluator reaches it:
//! - the JVP of a `cond` is a `cond` over the JVP'd branches;
//! - its transpose is a `cond` over the transposed branches. JAX passes the residuals of the
//!   forward branches to them; here each transposed branch recomputes its branch's primal
//!   values from the `cond`'s inputs before pulling back (the same values, computed twice);
//! - the JVP of a `while` is a `while` over the primal and tangent carries. Reverse mode
//!   stays JAX's `ValueError` (`ad::transpose`).
//!
//! A branch or body is traced as a closure in its own `ControlFlow` trace: the values it uses
//! from outside (the equation's inputs, their tangents) become its constvars, which the new
//! equation passes as its leading inputs, as the IR's control-flow equations do.

use std::collections::HashSet;
use std::rc::Rc;

use super::ad::{self, AdError, AdResult};
use super::apply_with_bodies;
use super::array::Array;
use super::aval::Aval;
use super::ir::{Atom, Eqn, Jaxpr, Prim, VarId};
use super::TraceKind;
use crate::interp::Interp;

/// A jaxpr traced from `build` on fresh inputs of `in_avals`, with the values it closed over
/// (also the batched bodies of `vmap`'s rules for calls and `cond`: `transforms/batch.rs`).
pub(crate) fn trace_body(
    interp: &mut Interp,
    label: &'static str,
    in_avals: &[Aval],
    build: impl FnOnce(&mut Interp, &[Rc<Array>]) -> AdResult<Vec<Rc<Array>>>,
) -> AdResult<(Rc<Jaxpr>, Vec<Rc<Array>>)> {
    let site = interp.site();
    interp.jax.push_trace(TraceKind::ControlFlow(label), format!("{label} (derivative)"), None, site, String::new(), None);
    let inputs: Vec<Rc<Array>> = in_avals.iter().enumerate().map(|(j, a)| interp.jax.new_input(a.clone(), None, j, None, true)).collect();
    match build(interp, &inputs) {
        Ok(outs) => Ok(interp.jax.pop_trace_with_consts(&outs)),
        Err(e) => {
            interp.jax.abort_trace();
            Err(e)
        }
    }
}

/// Binds a control-flow equation over traced bodies: `leading` inputs first (the index),
/// then each body's consts in order, then `operands`.
fn bind_traced(
    interp: &mut Interp,
    prim: Prim,
    leading: &[Rc<Array>],
    bodies: Vec<(Rc<Jaxpr>, Vec<Rc<Array>>)>,
    operands: &[Rc<Array>],
) -> AdResult<Vec<Rc<Array>>> {
    let mut ins: Vec<Rc<Array>> = leading.to_vec();
    for (_, consts) in &bodies {
        ins.extend(consts.iter().cloned());
    }
    ins.extend(operands.iter().cloned());
    let jaxprs = bodies.into_iter().map(|(j, _)| j).collect();
    Ok(apply_with_bodies(interp, prim, &ins, jaxprs)?)
}

/// `x` with exactly the aval `aval`, or zeros of it for a zero (co)tangent.
fn or_zeros(interp: &mut Interp, x: Option<Rc<Array>>, aval: &Aval) -> AdResult<Rc<Array>> {
    match x {
        Some(x) => ad::with_aval(interp, x, aval),
        None => ad::zeros(interp, aval),
    }
}

/// The inputs of `cond` branch `k` among the equation's inputs (index first, then each
/// branch's consts, then the operands): their positions, in the branch's binder order.
fn branch_inputs(eqn: &Eqn, k: usize) -> AdResult<Vec<usize>> {
    let n_ops = eqn.bodies.first().map_or(0, |b| b.invars.len());
    let first_operand = eqn.inputs.len().checked_sub(n_ops).ok_or_else(|| AdError::NoRule("a malformed cond".into()))?;
    let start = 1 + eqn.bodies[..k].iter().map(|b| b.constvars.len()).sum::<usize>();
    let consts = eqn.bodies[k].constvars.len();
    if start + consts > first_operand || 1 + eqn.bodies.iter().map(|b| b.constvars.len()).sum::<usize>() != first_operand {
        return Err(AdError::NoRule("a malformed cond".into()));
    }
    Ok((start..start + consts).chain(first_operand..eqn.inputs.len()).collect())
}

/// The JVP of a `cond` whose index is not known: a `cond` over the JVP'd branches, each taking
/// the tangents that are not zero and giving one tangent per floating-point output.
pub(super) fn cond_jvp(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], ts: &[Option<Rc<Array>>]) -> AdResult<Vec<Option<Rc<Array>>>> {
    let tangents: Vec<Rc<Array>> = ts.iter().flatten().cloned().collect();
    let tangent_avals: Vec<Aval> = tangents.iter().map(|t| t.aval.clone()).collect();
    let out_avals: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
    let differentiable: Vec<usize> = (0..out_avals.len()).filter(|&j| ad::differentiable(out_avals[j].dtype)).collect();
    let mut bodies = Vec::with_capacity(eqn.bodies.len());
    for (k, body) in eqn.bodies.iter().enumerate() {
        let positions = branch_inputs(eqn, k)?;
        let traced = trace_body(interp, "cond", &tangent_avals, |interp, tangent_ins| {
            let args: Vec<Rc<Array>> = positions.iter().map(|&p| ins[p].clone()).collect();
            let mut given = tangent_ins.iter();
            let all: Vec<Option<Rc<Array>>> = ts.iter().map(|t| t.as_ref().and_then(|_| given.next().cloned())).collect();
            let branch_ts: Vec<Option<Rc<Array>>> = positions.iter().map(|&p| all[p].clone()).collect();
            let flags: Vec<bool> = branch_ts.iter().map(Option::is_some).collect();
            let tape = ad::forward(interp, body, &args, &flags)?;
            let out_ts = ad::forward_tangents(interp, &tape, &branch_ts, &[])?;
            let mut outs = Vec::with_capacity(differentiable.len());
            for &j in &differentiable {
                outs.push(or_zeros(interp, out_ts.get(j).cloned().flatten(), &out_avals[j])?);
            }
            Ok(outs)
        })?;
        bodies.push(traced);
    }
    let prim = Prim::Cond { branches: eqn.bodies.len() };
    let outs = bind_traced(interp, prim, &ins[..1], bodies, &tangents)?;
    let mut result = vec![None; out_avals.len()];
    for (j, t) in differentiable.into_iter().zip(outs) {
        result[j] = Some(t);
    }
    Ok(result)
}

/// The transpose of a `cond` whose index is not known: a `cond` over the transposed branches,
/// each taking the outputs' cotangents and giving one cotangent per active input (zeros for
/// the inputs its branch does not read: the other branches' consts).
pub(super) fn cond_transpose(
    interp: &mut Interp,
    eqn: &Eqn,
    ins: &[Rc<Array>],
    gs: &[Option<Rc<Array>>],
    active: &[bool],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let cotangents: Vec<Rc<Array>> = gs.iter().flatten().cloned().collect();
    let cotangent_avals: Vec<Aval> = cotangents.iter().map(|g| g.aval.clone()).collect();
    let targets: Vec<usize> =
        (1..ins.len()).filter(|&j| active.get(j).copied().unwrap_or(false) && ad::differentiable(ins[j].aval.dtype)).collect();
    let mut bodies = Vec::with_capacity(eqn.bodies.len());
    for (k, body) in eqn.bodies.iter().enumerate() {
        let positions = branch_inputs(eqn, k)?;
        let traced = trace_body(interp, "cond", &cotangent_avals, |interp, cotangent_ins| {
            let args: Vec<Rc<Array>> = positions.iter().map(|&p| ins[p].clone()).collect();
            let flags: Vec<bool> = positions.iter().map(|p| targets.contains(p)).collect();
            let tape = ad::forward(interp, body, &args, &flags)?;
            let mut given = cotangent_ins.iter();
            let out_cts: Vec<Option<Rc<Array>>> = gs.iter().map(|g| g.as_ref().and_then(|_| given.next().cloned())).collect();
            let in_cts = ad::backward(interp, &tape, &out_cts)?;
            let mut by_input: Vec<Option<Rc<Array>>> = vec![None; ins.len()];
            for (&p, ct) in positions.iter().zip(in_cts) {
                by_input[p] = ct;
            }
            let mut outs = Vec::with_capacity(targets.len());
            for &j in &targets {
                outs.push(or_zeros(interp, by_input[j].take(), &ins[j].aval)?);
            }
            Ok(outs)
        })?;
        bodies.push(traced);
    }
    let prim = Prim::Cond { branches: eqn.bodies.len() };
    let outs = bind_traced(interp, prim, &ins[..1], bodies, &cotangents)?;
    let mut result = vec![None; ins.len()];
    for (j, ct) in targets.into_iter().zip(outs) {
        result[j] = Some(ct);
    }
    Ok(result)
}

/// Which outputs of `jaxpr` depend on the binders flagged in `active` (constvars then
/// invars), through any equation (also which outputs of a `cond` branch `vmap` maps).
pub(crate) fn dependent_outputs(jaxpr: &Jaxpr, active: &[bool]) -> Vec<bool> {
    let mut live: HashSet<VarId> =
        jaxpr.constvars.iter().chain(&jaxpr.invars).zip(active).filter(|(_, &a)| a).map(|((v, _), _)| *v).collect();
    for eqn in &jaxpr.eqns {
        if eqn.inputs.iter().any(|a| matches!(a, Atom::Var(v) if live.contains(v))) {
            live.extend(eqn.outputs.iter().map(|(v, _)| *v));
        }
    }
    jaxpr.outvars.iter().map(|a| matches!(a, Atom::Var(v) if live.contains(v))).collect()
}

/// The JVP of a `while` loop: a `while` whose carry is the primal carry followed by the
/// tangents of the carries that a tangent reaches (the initial tangents, or tangents of the
/// body's consts, carried around the loop until nothing more changes), as JAX's `_while_loop_jvp`.
pub(super) fn while_jvp(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], ts: &[Option<Rc<Array>>]) -> AdResult<Vec<Option<Rc<Array>>>> {
    let [cond, body] = eqn.bodies.as_slice() else { return Err(AdError::NoRule("a malformed while".into())) };
    let (n_cond, n_body) = (cond.constvars.len(), body.constvars.len());
    let n_carry = body.invars.len();
    if n_cond + n_body + n_carry != ins.len() || body.outvars.len() != n_carry || eqn.outputs.len() != n_carry {
        return Err(AdError::NoRule("a malformed while".into()));
    }
    let carry_avals: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
    let body_const_ts: Vec<Option<Rc<Array>>> = ts[n_cond..n_cond + n_body].to_vec();
    let init = &ins[n_cond + n_body..];
    let init_ts = &ts[n_cond + n_body..];
    let floating = |j: usize| ad::differentiable(carry_avals[j].dtype);
    let mut carried: Vec<bool> = (0..n_carry).map(|j| init_ts[j].is_some() && floating(j)).collect();
    loop {
        let flags: Vec<bool> = body_const_ts.iter().map(Option::is_some).chain(carried.iter().copied()).collect();
        let reached = dependent_outputs(body, &flags);
        let next: Vec<bool> = (0..n_carry).map(|j| carried[j] || (reached[j] && floating(j))).collect();
        if next == carried {
            break;
        }
        carried = next;
    }
    let tangent_slots: Vec<usize> = (0..n_carry).filter(|&j| carried[j]).collect();
    let mut loop_avals = carry_avals.clone();
    loop_avals.extend(tangent_slots.iter().map(|&j| carry_avals[j].clone()));

    let cond_consts = &ins[..n_cond];
    let cond_traced = trace_body(interp, "while", &loop_avals, |interp, state| ad::replay(interp, cond, cond_consts, &state[..n_carry]))?;
    let body_consts = &ins[n_cond..n_cond + n_body];
    let body_traced = trace_body(interp, "while", &loop_avals, |interp, state| {
        let (carry, carry_ts) = state.split_at(n_carry);
        let args: Vec<Rc<Array>> = body_consts.iter().chain(carry).cloned().collect();
        let mut given = carry_ts.iter();
        let carry_ts: Vec<Option<Rc<Array>>> = carried.iter().map(|&c| if c { given.next().cloned() } else { None }).collect();
        let arg_ts: Vec<Option<Rc<Array>>> = body_const_ts.iter().cloned().chain(carry_ts).collect();
        let flags: Vec<bool> = arg_ts.iter().map(Option::is_some).collect();
        let tape = ad::forward(interp, body, &args, &flags)?;
        let mut outs = body.outvars.iter().map(|a| tape.read(a)).collect::<AdResult<Vec<_>>>()?;
        let out_ts = ad::forward_tangents(interp, &tape, &arg_ts, &[])?;
        for &j in &tangent_slots {
            outs.push(or_zeros(interp, out_ts.get(j).cloned().flatten(), &carry_avals[j])?);
        }
        Ok(outs)
    })?;
    let mut operands: Vec<Rc<Array>> = init.to_vec();
    for &j in &tangent_slots {
        operands.push(or_zeros(interp, init_ts[j].clone(), &carry_avals[j])?);
    }
    let outs = bind_traced(interp, Prim::While, &[], vec![cond_traced, body_traced], &operands)?;
    let mut result = vec![None; n_carry];
    for (k, &j) in tangent_slots.iter().enumerate() {
        result[j] = outs.get(n_carry + k).cloned();
    }
    Ok(result)
}
