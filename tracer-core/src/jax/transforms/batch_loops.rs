//! `scan` and `while` batched (JAX's `_scan_batching_rule` and `_while_loop_batching_rule`,
//! `jax/_src/lax/control_flow/loops.py`): one loop whose body is the old body batched. Which
//! carries are batched is found by a fixpoint (a carry is batched when its initial value is,
//! or when the body makes it so from a batched const, carry or slice); a carry batched so
//! that is not batched on entry is broadcast before the loop. Batched carries have the
//! batch dimension first, batched scanned arrays second (after the scanned axis), and so do
//! the stacked outputs of a `scan`. A `while` whose predicate is batched has every carry
//! batched and its cond returns the batched predicate (`bool[n]`): as in
//! `jax.make_jaxpr(jax.vmap(f))`, the loop runs while any example's predicate holds, and
//! an example whose predicate is false keeps its carry (the select is in JAX's lowering,
//! and in values mode's `while` kernel, `eval_control.rs`).

use std::rc::Rc;

use super::batch::{batch_jaxpr, batchable_with, effect_free, mapped_at, pairs, Batched};
use crate::interp::Interp;
use crate::jax::ad::{AdError, AdResult};
use crate::jax::ad_control::{dependent_outputs, trace_body};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::ir::{Eqn, Jaxpr, Prim};
use crate::jax::prims::batching::{broadcast, matchaxis, moveaxis, BDim};

/// Which of a loop body's carries are batched: those batched on entry, and those the body
/// makes batched from its batched consts, carries and slices, until nothing more changes.
/// `before` and `after` are the flags of the body's binders around the carries.
fn carry_fixpoint(body: &Jaxpr, before: &[bool], init: &[bool], after: &[bool]) -> Vec<bool> {
    let mut carry = init.to_vec();
    for _ in 0..=carry.len() {
        let flags: Vec<bool> = before.iter().chain(&carry).chain(after).copied().collect();
        let out = dependent_outputs(body, &flags);
        let next: Vec<bool> = carry.iter().zip(&out).map(|(c, o)| *c || *o).collect();
        if next == carry {
            break;
        }
        carry = next;
    }
    carry
}

/// A `scan`'s parts: its consts, carries and scanned arrays among the equation's inputs.
struct ScanLayout {
    consts: usize,
    carry: usize,
}

fn scan_layout(eqn: &Eqn) -> Option<(&Jaxpr, ScanLayout)> {
    let Prim::Scan { num_carry, .. } = eqn.prim else { return None };
    let [body] = eqn.bodies.as_slice() else { return None };
    let consts = body.constvars.len();
    let ok = eqn.inputs.len() == consts + body.invars.len() && body.invars.len() >= num_carry && body.outvars.len() >= num_carry;
    ok.then_some((&**body, ScanLayout { consts, carry: num_carry }))
}

/// A `while`'s parts: the cond's and body's consts among the equation's inputs, then the carry.
fn while_layout(eqn: &Eqn) -> Option<(&Jaxpr, &Jaxpr)> {
    let [cond, body] = eqn.bodies.as_slice() else { return None };
    let n = body.invars.len();
    let ok = eqn.inputs.len() == cond.constvars.len() + body.constvars.len() + n && cond.invars.len() == n && body.outvars.len() == n;
    ok.then_some((&**cond, &**body))
}

/// Whether `batch_loop` can batch this `scan` or `while` with these operands mapped.
pub(super) fn loop_batchable(eqn: &Eqn, flags: &[bool]) -> bool {
    if matches!(eqn.prim, Prim::Scan { .. }) {
        let Some((body, l)) = scan_layout(eqn) else { return false };
        let (consts, rest) = flags.split_at(l.consts);
        let (init, xs) = rest.split_at(l.carry);
        let carry = carry_fixpoint(body, consts, init, xs);
        let binders: Vec<bool> = consts.iter().chain(&carry).chain(xs).copied().collect();
        return effect_free(body) && batchable_with(body, &binders);
    }
    if !matches!(eqn.prim, Prim::While) {
        return false;
    }
    let Some((cond, body)) = while_layout(eqn) else { return false };
    let (cconsts, rest) = flags.split_at(cond.constvars.len());
    let bconsts = &rest[..body.constvars.len()];
    let (carry, _) = while_carry(cond, body, flags);
    let cond_flags: Vec<bool> = cconsts.iter().chain(&carry).copied().collect();
    let body_flags: Vec<bool> = bconsts.iter().chain(&carry).copied().collect();
    effect_free(cond) && effect_free(body) && batchable_with(cond, &cond_flags) && batchable_with(body, &body_flags)
}

/// Which carries of a `while` are batched, and whether its predicate is, from which of its
/// inputs are (JAX's `_while_loop_batching_rule`): the body's fixpoint, then, when the cond
/// makes the predicate batched from its consts or those carries, every carry (an example
/// that is done keeps its carry while the others go on).
fn while_carry(cond: &Jaxpr, body: &Jaxpr, flags: &[bool]) -> (Vec<bool>, bool) {
    let (cconsts, rest) = flags.split_at(cond.constvars.len().min(flags.len()));
    let (bconsts, init) = rest.split_at(body.constvars.len().min(rest.len()));
    let carry = carry_fixpoint(body, bconsts, init, &[]);
    let cond_flags: Vec<bool> = cconsts.iter().chain(&carry).copied().collect();
    let pred = dependent_outputs(cond, &cond_flags).first().copied().unwrap_or(true);
    if pred {
        (vec![true; carry.len()], true)
    } else {
        (carry, false)
    }
}

/// A `scan` or `while` batched; asked only where [`loop_batchable`] says so.
pub(super) fn batch_loop(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], dims: &[BDim], size: usize) -> AdResult<Vec<Batched>> {
    if let Prim::Scan { length, reverse, num_carry } = &eqn.prim {
        return batch_scan(interp, eqn, ins, dims, size, (*length, *reverse, *num_carry));
    }
    if matches!(eqn.prim, Prim::While) {
        return batch_while(interp, eqn, ins, dims, size);
    }
    Err(AdError::NoRule(format!("{} is not a loop", eqn.prim.name())))
}

/// The carries' initial values for the batched loop: a batched carry with its batch
/// dimension first (broadcast there when it was not batched on entry), the rest as they are.
fn loop_init(interp: &mut Interp, init: &[Rc<Array>], dims: &[BDim], carry: &[bool], size: usize) -> AdResult<Vec<Batched>> {
    let mut out = Vec::with_capacity(init.len());
    for ((x, d), &b) in init.iter().zip(dims).zip(carry) {
        out.push(match (b, d) {
            (true, Some(d)) => (moveaxis(interp, x, *d, 0)?, Some(0)),
            (true, None) => (broadcast(interp, x, size, 0)?, Some(0)),
            (false, None) => (x.clone(), None),
            (false, Some(_)) => return Err(AdError::NoRule("a loop carry batched on entry left unbatched".into())),
        });
    }
    Ok(out)
}

/// The batched body's carries as the loop needs them: a batched one first, an unbatched one
/// still unbatched.
fn carry_out(interp: &mut Interp, outs: Vec<Batched>, carry: &[bool], size: usize) -> AdResult<Vec<Rc<Array>>> {
    let mut res = Vec::with_capacity(outs.len());
    for ((x, d), &b) in outs.into_iter().zip(carry) {
        res.push(match (b, d) {
            (true, d) => matchaxis(interp, &x, d, 0, size)?,
            (false, None) => x,
            (false, Some(_)) => return Err(AdError::NoRule("a loop body batched a carry the fixpoint did not".into())),
        });
    }
    Ok(res)
}

fn batch_scan(
    interp: &mut Interp,
    eqn: &Eqn,
    ins: &[Rc<Array>],
    dims: &[BDim],
    size: usize,
    params: (usize, bool, usize),
) -> AdResult<Vec<Batched>> {
    let (length, reverse, num_carry) = params;
    let (body, l) = scan_layout(eqn).ok_or_else(|| AdError::NoRule("a malformed scan".into()))?;
    let flags: Vec<bool> = dims.iter().map(Option::is_some).collect();
    let (c_flags, rest) = flags.split_at(l.consts);
    let (i_flags, x_flags) = rest.split_at(l.carry);
    let carry = carry_fixpoint(body, c_flags, i_flags, x_flags);
    // Consts batched first, scanned arrays batched second (JAX's `new_consts`, `new_xs`).
    let consts = mapped_at(interp, pairs(&ins[..l.consts], &dims[..l.consts]), 0)?;
    let init = loop_init(interp, &ins[l.consts..l.consts + l.carry], &dims[l.consts..l.consts + l.carry], &carry, size)?;
    let xs = mapped_at(interp, pairs(&ins[l.consts + l.carry..], &dims[l.consts + l.carry..]), 1)?;
    // The body sees one slice of each scanned array: its batch dimension first.
    let slice = |x: &Rc<Array>| x.aval.with_shape(&x.aval.shape[1.min(x.aval.ndim())..]);
    let in_avals: Vec<Aval> = init.iter().map(|(x, _)| x.aval.clone()).chain(xs.iter().map(|(x, _)| slice(x))).collect();
    let in_dims: Vec<BDim> = init.iter().map(|(_, d)| *d).chain(xs.iter().map(|(_, d)| d.map(|_| 0))).collect();
    let mut ys_dims = Vec::new();
    let (jaxpr, captured) = trace_body(interp, "scan", &in_avals, |interp, fresh| {
        let mut outs = batch_jaxpr(interp, body, &consts, &pairs(fresh, &in_dims), size)?;
        let ys = outs.split_off(num_carry.min(outs.len()));
        let mut res = carry_out(interp, outs, &carry, size)?;
        for (y, d) in mapped_at(interp, ys, 0)? {
            res.push(y);
            ys_dims.push(d.map(|_| 1));
        }
        Ok(res)
    })?;
    let operands: Vec<Rc<Array>> =
        captured.into_iter().chain(init.into_iter().map(|(x, _)| x)).chain(xs.into_iter().map(|(x, _)| x)).collect();
    let outs = crate::jax::apply_with_bodies(interp, Prim::Scan { length, reverse, num_carry }, &operands, vec![jaxpr])?;
    let out_dims = carry.iter().map(|&b| b.then_some(0)).chain(ys_dims);
    Ok(outs.into_iter().zip(out_dims).collect())
}

fn batch_while(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], dims: &[BDim], size: usize) -> AdResult<Vec<Batched>> {
    let (cond, body) = while_layout(eqn).ok_or_else(|| AdError::NoRule("a malformed while".into()))?;
    let (nc, nb) = (cond.constvars.len(), body.constvars.len());
    let flags: Vec<bool> = dims.iter().map(Option::is_some).collect();
    let (carry, pred_batched) = while_carry(cond, body, &flags);
    let init = loop_init(interp, &ins[nc + nb..], &dims[nc + nb..], &carry, size)?;
    let in_avals: Vec<Aval> = init.iter().map(|(x, _)| x.aval.clone()).collect();
    let in_dims: Vec<BDim> = init.iter().map(|(_, d)| *d).collect();
    let cconsts = pairs(&ins[..nc], &dims[..nc]);
    let (cond_jaxpr, cond_captured) = trace_body(interp, "while", &in_avals, |interp, fresh| {
        let outs = batch_jaxpr(interp, cond, &cconsts, &pairs(fresh, &in_dims), size)?;
        match outs.as_slice() {
            [(pred, None)] if !pred_batched => Ok(vec![pred.clone()]),
            [(pred, d)] if pred_batched => Ok(vec![matchaxis(interp, pred, *d, 0, size)?]),
            _ => Err(AdError::NoRule("a while whose predicate is batched where the fixpoint said not".into())),
        }
    })?;
    let bconsts = pairs(&ins[nc..nc + nb], &dims[nc..nc + nb]);
    let (body_jaxpr, body_captured) = trace_body(interp, "while", &in_avals, |interp, fresh| {
        let outs = batch_jaxpr(interp, body, &bconsts, &pairs(fresh, &in_dims), size)?;
        carry_out(interp, outs, &carry, size)
    })?;
    let operands: Vec<Rc<Array>> = cond_captured.into_iter().chain(body_captured).chain(init.into_iter().map(|(x, _)| x)).collect();
    let outs = crate::jax::apply_with_bodies(interp, Prim::While, &operands, vec![cond_jaxpr, body_jaxpr])?;
    Ok(outs.into_iter().zip(carry.iter().map(|&b| b.then_some(0))).collect())
}
