//! `vmap` by batching rules: the jaxpr `vmap` traced on one example replayed on the batched
//! inputs, each equation with a mapped operand through its primitive's batching rule
//! (`prims::batch`), each other equation bound as it is (JAX's `BatchTrace`, run over the
//! per-example jaxpr instead of over the Python function: the function has been traced
//! once already, on per-example avals, which is what gives JAX's errors and `x.shape`).
//! A call (`pjit`, `checkpoint`) and a `cond` are batched through their bodies here (JAX's
//! `_pjit_batcher`, `remat_vmap` and `_cond_batching_rule`); `scan` and `while` in
//! `batch_loops.rs`. Used only when every equation that sees a mapped operand
//! can be batched ([`batchable`]); otherwise `vmap` keeps its per-example path (`vmap.rs`).

use std::rc::Rc;

use crate::interp::Interp;
use crate::jax::ad::{self, AdError, AdResult};
use crate::jax::ad_control::{dependent_outputs, trace_body};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::ir::{Atom, CmpPrim, Eqn, Jaxpr, Prim, VarId};
use crate::jax::prims::batching::{apply_unmapped, bdim_at_front, matchaxis, moveaxis, BDim};
use crate::jax::prims::{self, Batching};

type HashMap<K, V> = crate::interp::value::HashMap<K, V>;

/// A value with its batch dimension.
pub(crate) type Batched = (Rc<Array>, BDim);

/// Whether every equation of `jaxpr` applied to a mapped operand has a batching rule, when
/// the inputs flagged in `mapped_invars` are mapped (a value computed from a mapped one is
/// mapped; constants are not).
pub(super) fn batchable(jaxpr: &Jaxpr, mapped_invars: &[bool]) -> bool {
    let flags: Vec<bool> = std::iter::repeat(false).take(jaxpr.constvars.len()).chain(mapped_invars.iter().copied()).collect();
    batchable_with(jaxpr, &flags)
}

/// [`batchable`] with the constvars' flags first, then the invars'.
pub(super) fn batchable_with(jaxpr: &Jaxpr, binders: &[bool]) -> bool {
    let mut mapped: HashMap<VarId, ()> = HashMap::default();
    for ((v, _), &m) in jaxpr.constvars.iter().chain(&jaxpr.invars).zip(binders) {
        if m {
            mapped.insert(*v, ());
        }
    }
    let dead = dead_opaque(jaxpr);
    for (eqn, dead) in jaxpr.eqns.iter().zip(dead) {
        let flags: Vec<bool> = eqn.inputs.iter().map(|a| matches!(a, Atom::Var(v) if mapped.contains_key(v))).collect();
        if !flags.contains(&true) || dead {
            continue;
        }
        if eqn.outputs.is_empty() {
            return false;
        }
        let ok = match prims::batching(&eqn.prim, &flags) {
            Batching::Rule => true,
            Batching::PerExample => false,
            Batching::Call => eqn.bodies.first().is_some_and(|b| effect_free(b) && batchable_with(b, &flags)),
            Batching::Cond => cond_batchable(eqn, &flags),
            Batching::Loop => super::batch_loops::loop_batchable(eqn, &flags),
        };
        if !ok {
            return false;
        }
        for (v, _) in &eqn.outputs {
            mapped.insert(*v, ());
        }
    }
    true
}

/// For each equation of `jaxpr`, whether it is an opaque stand-in whose outputs nothing reads
/// (the value `grad` of a function leaves for the function's own output, which `grad` does
/// not return: `transformed`): batching leaves it out, as it computes nothing anyone sees.
fn dead_opaque(jaxpr: &Jaxpr) -> Vec<bool> {
    let mut read: HashMap<VarId, ()> = HashMap::default();
    for a in jaxpr.eqns.iter().flat_map(|e| &e.inputs).chain(&jaxpr.outvars) {
        if let Atom::Var(v) = a {
            read.insert(*v, ());
        }
    }
    let unread = |e: &Eqn| !e.outputs.is_empty() && e.outputs.iter().all(|(v, _)| !read.contains_key(v));
    jaxpr.eqns.iter().map(|e| matches!(e.prim, Prim::Opaque(_)) && unread(e)).collect()
}

/// No equation of `jaxpr` is there for its effect alone (`jax.debug.print`): JAX refuses a
/// mapped `cond` over one, and a rebuilt body would lose it.
pub(super) fn effect_free(jaxpr: &Jaxpr) -> bool {
    jaxpr.eqns.iter().all(|e| !e.outputs.is_empty())
}

/// The inputs of `cond` branch `k` among the equation's (index first, then each branch's
/// consts, then the operands): the range of its consts and where the operands start.
fn cond_layout(eqn: &Eqn) -> Option<(Vec<std::ops::Range<usize>>, usize)> {
    let n_ops = eqn.bodies.first()?.invars.len();
    let first_operand = eqn.inputs.len().checked_sub(n_ops)?;
    let mut ranges = Vec::with_capacity(eqn.bodies.len());
    let mut start = 1;
    for b in &eqn.bodies {
        ranges.push(start..start + b.constvars.len());
        start += b.constvars.len();
    }
    (start == first_operand && eqn.bodies.iter().all(|b| b.invars.len() == n_ops)).then_some((ranges, first_operand))
}

fn cond_batchable(eqn: &Eqn, flags: &[bool]) -> bool {
    let Some((ranges, first_operand)) = cond_layout(eqn) else { return false };
    if !eqn.bodies.iter().all(|b| effect_free(b)) {
        return false;
    }
    // A mapped index maps every operand (JAX broadcasts them all before the `select_n`).
    let all = flags[0];
    eqn.bodies.iter().zip(&ranges).all(|(b, r)| {
        let binders: Vec<bool> = flags[r.clone()].iter().chain(&flags[first_operand..]).map(|&f| f || all).collect();
        batchable_with(b, &binders)
    })
}

/// The outputs of `jaxpr` with their batch dimensions, from its constants and its inputs
/// with theirs; `size` is the length of the mapped axis.
pub(crate) fn batch_jaxpr(interp: &mut Interp, jaxpr: &Jaxpr, consts: &[Batched], args: &[Batched], size: usize) -> AdResult<Vec<Batched>> {
    if consts.len() != jaxpr.constvars.len() || args.len() != jaxpr.invars.len() {
        return Err(AdError::NoRule("a vmap body whose inputs do not match its jaxpr".into()));
    }
    let mut env: HashMap<VarId, Batched> = HashMap::default();
    for ((v, _), a) in jaxpr.constvars.iter().chain(&jaxpr.invars).zip(consts.iter().chain(args)) {
        env.insert(*v, a.clone());
    }
    let read = |env: &HashMap<VarId, Batched>, atom: &Atom| -> AdResult<Batched> {
        match atom {
            Atom::Var(v) => env.get(v).cloned().ok_or_else(|| AdError::NoRule("an unbound variable".into())),
            Atom::Lit(x, aval) => Ok((Array::scalar(*x, aval.dtype, aval.weak), None)),
        }
    };
    for (eqn, dead) in jaxpr.eqns.iter().zip(dead_opaque(jaxpr)) {
        // jax.debug.print and friends: their effect happened when the function was traced.
        if eqn.outputs.is_empty() || dead {
            continue;
        }
        let (ins, dims): (Vec<Rc<Array>>, Vec<BDim>) =
            eqn.inputs.iter().map(|a| read(&env, a)).collect::<AdResult<Vec<_>>>()?.into_iter().unzip();
        let outs = if dims.iter().all(Option::is_none) {
            apply_unmapped(interp, &eqn.prim, &ins, eqn.bodies.clone())?
        } else {
            let flags: Vec<bool> = dims.iter().map(Option::is_some).collect();
            match prims::batching(&eqn.prim, &flags) {
                Batching::Rule => prims::batch(interp, &eqn.prim, &ins, &dims)?,
                Batching::Call if matches!(eqn.prim, Prim::Vmap { .. }) => batch_vmap(interp, eqn, &ins, &dims, size)?,
                Batching::Call => batch_call(interp, eqn, &ins, &dims, size)?,
                Batching::Cond => batch_cond(interp, eqn, &ins, &dims, size)?,
                Batching::Loop => super::batch_loops::batch_loop(interp, eqn, &ins, &dims, size)?,
                Batching::PerExample => return Err(ad::no_rule(eqn)),
            }
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

pub(super) fn pairs(ins: &[Rc<Array>], dims: &[BDim]) -> Vec<Batched> {
    ins.iter().cloned().zip(dims.iter().copied()).collect()
}

/// Each value with its batch dimension moved to `dst`, an unmapped one left as it is (the
/// operands and outputs of a rebuilt `pjit`, `cond` or `scan`).
pub(super) fn mapped_at(interp: &mut Interp, values: impl IntoIterator<Item = Batched>, dst: usize) -> AdResult<Vec<Batched>> {
    let mut out = Vec::new();
    for (x, d) in values {
        out.push(match d {
            Some(d) => (moveaxis(interp, &x, d, dst)?, Some(dst)),
            None => (x, None),
        });
    }
    Ok(out)
}

/// A `pjit` or `checkpoint` batched (JAX's `_pjit_batcher`, `remat_vmap`): inside a trace,
/// one such call whose body is the old body batched, its mapped outputs with the batch dimension first; outside any trace,
/// the body's equations batched in place (the values are the same).
fn batch_call(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], dims: &[BDim], size: usize) -> AdResult<Vec<Batched>> {
    let body = eqn.bodies.first().ok_or_else(|| ad::no_rule(eqn))?;
    let nc = body.constvars.len();
    if ins.len() != nc + body.invars.len() {
        return Err(AdError::NoRule("a pjit whose inputs do not match its body".into()));
    }
    if interp.jax.trace_depth() == 0 {
        let all = pairs(ins, dims);
        return batch_jaxpr(interp, body, &all[..nc], &all[nc..], size);
    }
    let in_avals: Vec<Aval> = ins.iter().map(|x| x.aval.clone()).collect();
    let mut out_dims = Vec::new();
    let (jaxpr, consts) = trace_body(interp, "pjit", &in_avals, |interp, fresh| {
        let all = pairs(fresh, dims);
        let outs = batch_jaxpr(interp, body, &all[..nc], &all[nc..], size)?;
        let (res, ds): (Vec<Rc<Array>>, Vec<BDim>) = mapped_at(interp, outs, 0)?.into_iter().unzip();
        out_dims = ds;
        Ok(res)
    })?;
    let operands: Vec<Rc<Array>> = consts.into_iter().chain(ins.iter().cloned()).collect();
    let outs = crate::jax::apply_with_bodies(interp, eqn.prim.clone(), &operands, vec![jaxpr])?;
    Ok(outs.into_iter().zip(out_dims).collect())
}

/// A `vmap` equation under another `vmap` (its function kept the per-example path, a
/// primitive in it has no rule for what the inner `vmap` maps): one `vmap` equation over
/// the inner axis as before, whose body is the old body batched by the outer `vmap`'s rules,
/// as JAX's nested `BatchTrace`s batch every equation once for each `vmap`. Each input the
/// outer `vmap` maps has its batch dimension first (an inner-mapped operand's inner axis one
/// further), the old body's consts become inputs the inner `vmap` does not map, and every
/// output is batched first (broadcast where the body leaves it unmapped, as `out_axes` is
/// one axis for all), the inner axis one further.
fn batch_vmap(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], dims: &[BDim], size: usize) -> AdResult<Vec<Batched>> {
    let (Prim::Vmap { axis_size, in_axes, out_axes }, Some(body)) = (&eqn.prim, eqn.bodies.first()) else {
        return Err(ad::no_rule(eqn));
    };
    let nc = body.constvars.len();
    if ins.len() != nc + in_axes.len() || body.invars.len() != in_axes.len() {
        return Err(AdError::NoRule("a vmap whose inputs do not match its body".into()));
    }
    let inner = std::iter::repeat(None).take(nc).chain(in_axes.iter().copied());
    let binders = body.constvars.iter().chain(&body.invars).map(|(_, a)| a);
    let (mut operands, mut new_axes, mut avals) = (Vec::new(), Vec::new(), Vec::new());
    for (((x, d), ax), binder) in ins.iter().zip(dims).zip(inner).zip(binders) {
        let (x, ax, aval) = match d {
            Some(d) => {
                let shape: Vec<usize> = std::iter::once(size).chain(binder.shape.iter().copied()).collect();
                (moveaxis(interp, x, *d, 0)?, ax.map(|a| a + 1), binder.with_shape(&shape))
            }
            None => (x.clone(), ax, binder.clone()),
        };
        operands.push(x);
        new_axes.push(ax);
        avals.push(aval);
    }
    let body_dims: Vec<BDim> = dims.iter().map(|d| d.map(|_| 0)).collect();
    let (jaxpr, consts) = trace_body(interp, "vmap", &avals, |interp, fresh| {
        let all = pairs(fresh, &body_dims);
        let outs = batch_jaxpr(interp, body, &all[..nc], &all[nc..], size)?;
        outs.into_iter().map(|(x, d)| matchaxis(interp, &x, d, 0, size)).collect()
    })?;
    let prim = Prim::Vmap { axis_size: *axis_size, in_axes: new_axes, out_axes: out_axes + 1 };
    let operands: Vec<Rc<Array>> = consts.into_iter().chain(operands).collect();
    let outs = crate::jax::apply_with_bodies(interp, prim, &operands, vec![jaxpr])?;
    Ok(outs.into_iter().map(|o| (o, Some(0))).collect())
}

/// A `cond` batched (JAX's `_cond_batching_rule`).
fn batch_cond(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], dims: &[BDim], size: usize) -> AdResult<Vec<Batched>> {
    let (ranges, first_operand) = cond_layout(eqn).ok_or_else(|| AdError::NoRule("a malformed cond".into()))?;
    if dims[0].is_some() {
        return cond_to_select(interp, eqn, ins, dims, size, &ranges, first_operand);
    }
    // An unmapped index: one `cond` over the batched branches, the operands' batch
    // dimensions first, an output mapped in any branch mapped (first) in every branch.
    let ops = mapped_at(interp, pairs(&ins[first_operand..], &dims[first_operand..]), 0)?;
    let mut out_mapped = vec![false; eqn.outputs.len()];
    for (b, r) in eqn.bodies.iter().zip(&ranges) {
        let binders: Vec<bool> = dims[r.clone()].iter().chain(ops.iter().map(|(_, d)| d)).map(Option::is_some).collect();
        for (m, dep) in out_mapped.iter_mut().zip(dependent_outputs(b, &binders)) {
            *m |= dep;
        }
    }
    let op_avals: Vec<Aval> = ops.iter().map(|(x, _)| x.aval.clone()).collect();
    let op_dims: Vec<BDim> = ops.iter().map(|(_, d)| *d).collect();
    let mut branches = Vec::with_capacity(eqn.bodies.len());
    let mut branch_consts = Vec::new();
    for (b, r) in eqn.bodies.iter().zip(&ranges) {
        let consts = pairs(&ins[r.clone()], &dims[r.clone()]);
        let (jaxpr, captured) = trace_body(interp, "cond", &op_avals, |interp, fresh| {
            let outs = batch_jaxpr(interp, b, &consts, &pairs(fresh, &op_dims), size)?;
            let mut res = Vec::with_capacity(outs.len());
            for ((x, d), &m) in outs.into_iter().zip(&out_mapped) {
                res.push(match (m, d) {
                    (true, d) => matchaxis(interp, &x, d, 0, size)?,
                    (false, None) => x,
                    (false, Some(_)) => return Err(AdError::NoRule("a cond branch output mapped unexpectedly".into())),
                });
            }
            Ok(res)
        })?;
        branches.push(jaxpr);
        branch_consts.extend(captured);
    }
    let operands: Vec<Rc<Array>> = std::iter::once(ins[0].clone()).chain(branch_consts).chain(ops.into_iter().map(|(x, _)| x)).collect();
    let outs = crate::jax::apply_with_bodies(interp, eqn.prim.clone(), &operands, branches)?;
    Ok(outs.into_iter().zip(out_mapped).map(|(o, m)| (o, m.then_some(0))).collect())
}

/// A `cond` whose index is mapped: every branch run on every example (its operands selected
/// against their stopped gradients where it is not taken, for reverse mode's sake, as JAX
/// does), then a `select_n` by the index of each output.
fn cond_to_select(
    interp: &mut Interp,
    eqn: &Eqn,
    ins: &[Rc<Array>],
    dims: &[BDim],
    size: usize,
    ranges: &[std::ops::Range<usize>],
    first_operand: usize,
) -> AdResult<Vec<Batched>> {
    let mut front = Vec::with_capacity(ins.len());
    for (x, d) in ins.iter().zip(dims) {
        front.push(bdim_at_front(interp, x, *d, size)?);
    }
    let index = front[0].clone();
    let mut branch_outs: Vec<Vec<Rc<Array>>> = Vec::with_capacity(eqn.bodies.len());
    for (k, (b, r)) in eqn.bodies.iter().zip(ranges).enumerate() {
        let taken = ad::compare(interp, CmpPrim::Eq, &index, &Array::scalar(k as f64, index.aval.dtype, false))?;
        let mut guarded = Vec::new();
        for x in front[r.clone()].iter().chain(&front[first_operand..]) {
            let stopped = ad::bind(interp, Prim::StopGradient, std::slice::from_ref(x))?;
            let which = spread(interp, &taken, &x.aval.shape)?;
            guarded.push((ad::bind(interp, Prim::Select, &[which, stopped, x.clone()])?, Some(0)));
        }
        let nc = r.len();
        let outs = batch_jaxpr(interp, b, &guarded[..nc], &guarded[nc..], size)?;
        let mut at_front = Vec::with_capacity(outs.len());
        for (x, d) in outs {
            at_front.push(bdim_at_front(interp, &x, d, size)?);
        }
        branch_outs.push(at_front);
    }
    let mut result = Vec::with_capacity(eqn.outputs.len());
    for j in 0..eqn.outputs.len() {
        let cases: Vec<Rc<Array>> = branch_outs.iter().map(|o| o.get(j).cloned()).collect::<Option<_>>().ok_or_else(|| ad::no_rule(eqn))?;
        let which = spread(interp, &index, &cases[0].aval.shape)?;
        let operands: Vec<Rc<Array>> = std::iter::once(which).chain(cases).collect();
        result.push((ad::bind(interp, Prim::Select, &operands)?, Some(0)));
    }
    Ok(result)
}

/// A batched per-example scalar (`(n,)`) broadcast along the leading axis of `shape` (JAX's
/// `_bcast_select`'s predicate).
fn spread(interp: &mut Interp, x: &Rc<Array>, shape: &[usize]) -> AdResult<Rc<Array>> {
    if x.aval.shape.as_slice() == shape {
        return Ok(x.clone());
    }
    ad::broadcast_in_dim(interp, x, shape, &[0])
}
