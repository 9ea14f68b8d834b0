//! `jax.custom_jvp` and `jax.custom_vjp` under `vmap`: the marker's batching rule and the
//! derivatives through a batched marker.
//!
//! The function's own code is batched equation by equation before its marker (it is in the
//! jaxpr), so the marker's rule binds one marker on the batched values, its mapped inputs and
//! outputs with the batch dimension first, remembering the marker one example sees
//! ([`CallBatch`]). A derivative through it applies the user's rules to every example, as
//! JAX's `_custom_jvp_call_vmap`/`_custom_vjp_call_vmap` batch the rule functions
//! themselves: the rule is traced once on one example's avals (through the per-example
//! marker, so a marker batched twice recurses) and that jaxpr batched by rules
//! (`transforms/batch.rs`). `custom_jvp`: the tangent map of the batched rule, linearized as a
//! per-example one is. `custom_vjp`: `fwd` batched, its residuals kept with their batch
//! dimensions, then `bwd` batched on them and the cotangents; the cotangent of an unmapped
//! argument is summed over the examples, as JAX's `batch_custom_vjp_bwd` does; batched twice
//! (a `vmap` of a `vmap`), one example of the outer `vmap` runs the inner one's batched `fwd`
//! and `bwd`, the residuals' inner batch dimensions kept in `Linearized::BatchedVjp`'s
//! `deeper`. A rule that cannot be batched leaves the derivative unknown.

use std::rc::Rc;

use super::{self as rules, CallBatch, CustomCall, Linearized, Rules};
use crate::interp::value::Value;
use crate::interp::Interp;
use crate::jax::ad::{self, AdError, AdResult};
use crate::jax::ad_control::trace_body;
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::ir::Prim;
use crate::jax::prims::batching::{axis_size, matchaxis, moveaxis, BDim, BatchResult};
use crate::jax::transforms::batch::{batch_jaxpr, Batched};
use crate::jax::TraceKind;

/// The batching rule of a marker: one marker on the batched operands, batch dimensions first.
pub(crate) fn batch_rule(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let Some(call) = prim.custom_call() else { return Err(ad::no_rule_for(prim)) };
    let size = axis_size(ins, dims)?;
    let mut front = Vec::with_capacity(ins.len());
    for (x, d) in ins.iter().zip(dims) {
        front.push(match d {
            Some(d) => moveaxis(interp, x, *d, 0)?,
            None => x.clone(),
        });
    }
    let n_in = call.arg_leaves().min(ins.len());
    let outs: Vec<bool> = dims[n_in..].iter().map(Option::is_some).collect();
    let batch = CallBatch { size, ins: dims.iter().map(Option::is_some).collect(), outs: outs.clone(), inner: call.clone() };
    let batched = call.batched(batch);
    let prim =
        if let Prim::CustomVjpCall { .. } = prim { Prim::CustomVjpCall { call: batched } } else { Prim::CustomJvpCall { call: batched } };
    let marked = crate::jax::apply_with_bodies(interp, prim, &front, Vec::new())?;
    Ok(marked.into_iter().zip(outs).map(|(o, m)| (o, m.then_some(0))).collect())
}

/// One example's aval of a value whose batch dimension, if `mapped`, is first.
fn example(aval: &Aval, mapped: bool) -> Aval {
    if !mapped || aval.shape.is_empty() {
        return aval.clone();
    }
    aval.with_shape(&aval.shape[1..]).weak(aval.weak)
}

/// One example's aval of a value batched along `d`.
fn example_at(aval: &Aval, d: BDim) -> Aval {
    match d {
        Some(d) if d < aval.shape.len() => {
            let mut s = aval.shape.to_vec();
            s.remove(d);
            aval.with_shape(&s).weak(aval.weak)
        }
        _ => aval.clone(),
    }
}

/// `x`, batched along `d`, as a marker output: batched first if `mapped`, unmapped otherwise.
fn as_output(interp: &mut Interp, x: Rc<Array>, d: BDim, mapped: bool, size: usize) -> AdResult<Rc<Array>> {
    match (mapped, d) {
        (true, d) => matchaxis(interp, &x, d, 0, size),
        (false, None) => Ok(x),
        (false, Some(_)) => Err(AdError::NoRule("a custom rule whose output is mapped where the function's is not".into())),
    }
}

/// A batched `custom_jvp` rule: traced on one example's primals and tangents (the marker one
/// example sees, linearized and applied forward), that jaxpr batched with the batched primals
/// and fresh batched tangents; the tangent map is what depends on the latter.
pub(super) fn linearize_jvp(
    interp: &mut Interp,
    batch: &CallBatch,
    ins: &[Rc<Array>],
    active: &[bool],
    out_avals: &[Aval],
) -> AdResult<(Vec<Rc<Array>>, Linearized)> {
    let n_in = ins.len().saturating_sub(out_avals.len());
    let inner = batch.inner.clone();
    let slots: Vec<usize> = (0..n_in).filter(|&i| inner.differentiable_leaf(i)).collect();
    let one_in: Vec<Aval> = ins.iter().zip(&batch.ins).map(|(x, &m)| example(&x.aval, m)).collect();
    let one_out: Vec<Aval> = out_avals.iter().zip(&batch.outs).map(|(a, &m)| example(a, m)).collect();
    let mut in_avals = one_in.clone();
    in_avals.extend(slots.iter().map(|&s| one_in[s].clone()));
    let (rule, consts) = trace_body(interp, "custom_jvp", &in_avals, |interp, fresh| {
        let (primals, tangents) = fresh.split_at(ins.len());
        let (mut outs, lin) = rules::linearize(interp, &inner, false, primals, active, &one_out)?;
        if let Linearized::Unknown(why) = lin {
            return Err(AdError::NoRule(why));
        }
        let mut ts = vec![None; primals.len()];
        for (&s, t) in slots.iter().zip(tangents) {
            ts[s] = Some(t.clone());
        }
        for (t, a) in rules::jvp(interp, &lin, primals, &ts)?.into_iter().zip(&one_out) {
            outs.push(match t {
                Some(t) => t,
                None => ad::zeros(interp, a)?,
            });
        }
        Ok(outs)
    })?;
    let site = interp.site();
    interp.jax.push_trace(TraceKind::Jvp, format!("{} (custom_jvp rule, batched)", inner.name), None, site, String::new(), None);
    let trace_id = interp.jax.traces.last().map(|t| t.id);
    let mut args: Vec<Batched> = ins.iter().cloned().zip(batch.ins.iter().map(|&m| m.then_some(0))).collect();
    let mut avals = Vec::with_capacity(slots.len());
    for (j, &s) in slots.iter().enumerate() {
        let aval = ins[s].aval.clone();
        let unknown = Array::unknown(aval.clone(), "a tangent inside a custom_jvp rule");
        let t = interp.jax.new_input(aval.clone(), Some(unknown), j, None, true);
        args.push((t, batch.ins[s].then_some(0)));
        avals.push(aval);
    }
    let consts: Vec<Batched> = consts.into_iter().map(|c| (c, None)).collect();
    let batched = batch_jaxpr(interp, &rule, &consts, &args, batch.size).and_then(|outs| {
        let mut res = Vec::with_capacity(outs.len());
        for (k, (x, d)) in outs.into_iter().enumerate() {
            let mapped = batch.outs.get(k % out_avals.len().max(1)).copied().unwrap_or(false);
            res.push(as_output(interp, x, d, mapped, batch.size)?);
        }
        Ok(res)
    });
    let mut primal = match batched {
        Ok(res) => res,
        Err(e) => {
            interp.jax.abort_trace();
            return Err(e);
        }
    };
    let tangent = primal.split_off(out_avals.len().min(primal.len()));
    match rules::jvp_linearized(interp, trace_id, primal, tangent, slots, avals, out_avals)? {
        Ok(r) => Ok(r),
        Err(why) => Err(AdError::NoRule(why)),
    }
}

/// A batched `custom_vjp` call's forward pass: `fwd` traced on one example, batched; the
/// primal outputs as the marker's, the residuals' leaves with their batch dimensions. Under
/// nested `vmap`s one example of this one runs the inner `vmap`'s forward pass (this, one
/// level in), whose residuals' batch dimensions go to `deeper`.
pub(super) fn linearize_vjp(
    interp: &mut Interp,
    call: &Rc<CustomCall>,
    batch: &CallBatch,
    ins: &[Rc<Array>],
    out_avals: &[Aval],
) -> AdResult<(Vec<Rc<Array>>, Linearized)> {
    let inner = batch.inner.clone();
    let Rules::Vjp { fwd, .. } = &call.rules else { return Err(AdError::NoRule("a custom_vjp without fwd".into())) };
    let fwd = fwd.clone();
    let n_in = ins.len().saturating_sub(out_avals.len());
    let one_all: Vec<Aval> = ins.iter().zip(&batch.ins).map(|(x, &m)| example(&x.aval, m)).collect();
    let one_out: Vec<Aval> = out_avals.iter().zip(&batch.outs).map(|(a, &m)| example(a, m)).collect();
    let mut tree = Value::None;
    let mut deeper = Vec::new();
    let (traced, consts) = trace_body(interp, "custom_vjp", &one_all, |interp, fresh| {
        if let Some(inner_batch) = &inner.batch {
            let (mut outs, lin) = linearize_vjp(interp, &inner, inner_batch, fresh, &one_out)?;
            let Linearized::BatchedVjp { residuals, deeper: below, tree: t, .. } = lin else {
                return Err(AdError::NoRule("a custom_vjp forward pass that is not batched".into()));
            };
            let (res, dims): (Vec<Rc<Array>>, Vec<BDim>) = residuals.into_iter().unzip();
            outs.extend(res);
            deeper = std::iter::once(dims).chain(below).collect();
            tree = t;
            return Ok(outs);
        }
        let args = rules::primal_args(interp, &inner, &fresh[..n_in])?;
        let out = rules::call_user(interp, &fwd, args)?;
        let Some([primal, residuals]) = rules::pair(interp, &out)? else {
            return Err(AdError::NoRule("a custom_vjp fwd that does not return a pair".into()));
        };
        let Some(mut outs) = rules::primal_outputs(interp, &primal, &one_out)? else {
            return Err(AdError::NoRule("a custom_vjp fwd whose output does not match the function's".into()));
        };
        outs.extend(rules::array_leaves(interp, &residuals)?);
        tree = residuals;
        Ok(outs)
    })?;
    let args: Vec<Batched> = ins.iter().cloned().zip(batch.ins.iter().map(|&m| m.then_some(0))).collect();
    let consts: Vec<Batched> = consts.into_iter().map(|c| (c, None)).collect();
    let mut outs = batch_jaxpr(interp, &traced, &consts, &args, batch.size)?;
    let residuals = outs.split_off(out_avals.len().min(outs.len()));
    let mut primal = Vec::with_capacity(outs.len());
    for ((x, d), &m) in outs.into_iter().zip(&batch.outs) {
        primal.push(as_output(interp, x, d, m, batch.size)?);
    }
    let primals = ins[..n_in].to_vec();
    Ok((primal, Linearized::BatchedVjp { call: call.clone(), primals, residuals, deeper, tree }))
}

/// Reverse mode through a batched `custom_vjp` marker: `bwd` traced on one example's
/// residuals, cotangents and primals, batched; each argument's cotangent with the batch
/// first, summed over the examples for an unmapped argument. Under nested `vmap`s one
/// example of this one runs the inner `vmap`'s reverse pass (this, one level in) instead.
#[allow(clippy::too_many_arguments)]
pub(super) fn transpose_vjp(
    interp: &mut Interp,
    call: &Rc<CustomCall>,
    n_in: usize,
    residuals: &[Batched],
    deeper: &[Vec<BDim>],
    tree: &Value,
    ins: &[Rc<Array>],
    gs: &[Option<Rc<Array>>],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let Some(batch) = &call.batch else { return Err(AdError::NoRule("a batched custom_vjp without its batch".into())) };
    let inner = batch.inner.clone();
    let mut args: Vec<Batched> = residuals.to_vec();
    for ((g, o), &m) in gs.iter().zip(&ins[n_in..]).zip(&batch.outs) {
        args.push(match g {
            Some(g) => (g.clone(), m.then_some(0)),
            None => (ad::zeros(interp, &example(&o.aval, m))?, None),
        });
    }
    args.extend(ins.iter().cloned().zip(batch.ins.iter().map(|&m| m.then_some(0))));
    let avals: Vec<Aval> = args.iter().map(|(x, d)| example_at(&x.aval, *d)).collect();
    let one_in: Vec<Aval> = ins.iter().zip(&batch.ins).map(|(x, &m)| example(&x.aval, m)).collect();
    let (n_res, n_g) = (residuals.len(), gs.len());
    let mut given: Vec<usize> = Vec::new();
    let (traced, consts) = trace_body(interp, "custom_vjp", &avals, |interp, fresh| {
        let g = fresh[n_res..n_res + n_g].to_vec();
        let one = &fresh[n_res + n_g..];
        let cts = match deeper.split_first() {
            Some((dims, below)) => {
                let res: Vec<Batched> = fresh[..n_res].iter().cloned().zip(dims.iter().copied()).collect();
                let g: Vec<Option<Rc<Array>>> = g.into_iter().map(Some).collect();
                transpose_vjp(interp, &inner, n_in, &res, below, tree, one, &g)?
            }
            None => {
                let res = crate::jax::api::replace_array_leaves(interp, tree, &mut fresh[..n_res].to_vec().into_iter())?;
                rules::bwd_cotangents(interp, &inner, &one[..n_in], res, g, &one_in)?
            }
        };
        let mut outs = Vec::new();
        for (slot, ct) in cts.into_iter().enumerate() {
            if let Some(ct) = ct {
                given.push(slot);
                outs.push(ct);
            }
        }
        Ok(outs)
    })?;
    let consts: Vec<Batched> = consts.into_iter().map(|c| (c, None)).collect();
    let outs = batch_jaxpr(interp, &traced, &consts, &args, batch.size)?;
    let mut cts = vec![None; ins.len()];
    for (slot, (x, d)) in given.into_iter().zip(outs) {
        let ct = match (batch.ins[slot], d) {
            (true, d) => matchaxis(interp, &x, d, 0, batch.size)?,
            (false, Some(d)) => ad::reduce_sum(interp, &x, &[d])?,
            (false, None) => x,
        };
        cts[slot] = Some(ad::with_aval(interp, ct, &ins[slot].aval)?);
    }
    Ok(cts)
}
