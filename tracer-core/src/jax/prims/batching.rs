//! Batching rules: what `vmap` binds for one equation of a per-example jaxpr, in the shape
//! of JAX's `primitive_batchers` (`jax/_src/interpreters/batching.py`). A rule takes the
//! operands, batched, and each one's batch dimension ([`BDim`], JAX's
//! `BatchTracer.batch_dim`: an axis, or `None` for an operand that is the same for every
//! example) and binds the batched primitive(s), returning each output with its batch
//! dimension. The registry's table (`prims::batch`) routes a family to its rules, written
//! beside its other rules in the family's file; the helpers every rule is made of are here.
//!
//! An equation none of whose operands is mapped is bound as it is and its outputs are not
//! mapped (JAX never hands such an equation to a batching tracer), whatever its primitive:
//! [`apply_unmapped`]. Only an equation with a mapped operand needs a rule.

use std::rc::Rc;

use crate::interp::Interp;
use crate::jax::ad::{self, bind, AdError, AdResult};
use crate::jax::array::Array;
use crate::jax::ir::Prim;

/// The batch dimension of a value under `vmap`: the axis that runs over the examples, or
/// `None` when the value is the same for every example (JAX's `not_mapped`).
pub type BDim = Option<usize>;

/// The outputs of a batching rule, each with its batch dimension.
pub type BatchResult = AdResult<Vec<(Rc<Array>, BDim)>>;

/// The equation bound as it is: none of its operands is mapped.
pub(crate) fn apply_unmapped(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], bodies: Vec<Rc<crate::jax::ir::Jaxpr>>) -> BatchResult {
    let outs = crate::jax::apply_with_bodies(interp, prim.clone(), ins, bodies)?;
    Ok(outs.into_iter().map(|o| (o, None)).collect())
}

/// `x` with its axis `src` moved to `dst` (JAX's `batching.moveaxis`: one `transpose`, none
/// when the axis is already there).
pub(crate) fn moveaxis(interp: &mut Interp, x: &Rc<Array>, src: usize, dst: usize) -> AdResult<Rc<Array>> {
    if src == dst {
        return Ok(x.clone());
    }
    let mut perm: Vec<usize> = (0..x.aval.ndim()).filter(|&i| i != src).collect();
    if dst > perm.len() {
        return Err(AdError::NoRule("moveaxis out of range".into()));
    }
    perm.insert(dst, src);
    bind(interp, Prim::Transpose { permutation: perm }, std::slice::from_ref(x))
}

/// `x` with a new axis of length `size` at `axis`, every example the same (JAX's
/// `batching.broadcast`: one `broadcast_in_dim`).
pub(crate) fn broadcast(interp: &mut Interp, x: &Rc<Array>, size: usize, axis: usize) -> AdResult<Rc<Array>> {
    let mut shape = x.aval.shape.to_vec();
    if axis > shape.len() {
        return Err(AdError::NoRule("broadcast axis out of range".into()));
    }
    shape.insert(axis, size);
    let dims: Vec<usize> = (0..shape.len()).filter(|&i| i != axis).collect();
    ad::broadcast_in_dim(interp, x, &shape, &dims)
}

/// `x` with its batch dimension first, or a new leading axis of `size` for an unmapped `x`
/// (JAX's `bdim_at_front`).
pub(crate) fn bdim_at_front(interp: &mut Interp, x: &Rc<Array>, bdim: BDim, size: usize) -> AdResult<Rc<Array>> {
    match bdim {
        Some(d) => moveaxis(interp, x, d, 0),
        None => broadcast(interp, x, size, 0),
    }
}

/// `x` with its batch dimension at `dst`, broadcast there when it is not mapped (JAX's
/// `matchaxis`, as `vmap` applies it to each output for `out_axes`).
pub(crate) fn matchaxis(interp: &mut Interp, x: &Rc<Array>, src: BDim, dst: usize, size: usize) -> AdResult<Rc<Array>> {
    match src {
        Some(s) => moveaxis(interp, x, s, dst),
        None => broadcast(interp, x, size, dst),
    }
}

/// The length of the mapped axis, from the first mapped operand.
pub(crate) fn axis_size(ins: &[Rc<Array>], dims: &[BDim]) -> AdResult<usize> {
    ins.iter()
        .zip(dims)
        .find_map(|(x, d)| d.and_then(|d| x.aval.shape.get(d).copied()))
        .ok_or_else(|| AdError::NoRule("a batching rule with no mapped operand".into()))
}

/// The rule of a primitive applied to each element with the same operand shapes, its rank-0
/// operands broadcast (JAX's `broadcast_batcher`): where every mapped operand has the batch
/// dimension at the same place and the same shape and the rest are scalars, the primitive
/// as it is; otherwise each operand of rank above 0 with its batch dimension first (an
/// unmapped one with a leading axis of 1, which the primitive broadcasts), and mapped
/// scalars given trailing axes of 1.
pub(crate) fn broadcasting(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let Some((shape, dim)) = ins.iter().zip(dims).find_map(|(x, d)| d.map(|d| (x.aval.shape.clone(), d))) else {
        return apply_unmapped(interp, prim, ins, Vec::new());
    };
    let agree = ins.iter().zip(dims).filter(|(x, _)| x.aval.ndim() > 0).all(|(x, d)| x.aval.shape == shape && *d == Some(dim));
    if agree {
        let outs = crate::jax::apply(interp, prim.clone(), ins)?;
        return Ok(outs.into_iter().map(|o| (o, Some(dim))).collect());
    }
    let mut args = Vec::with_capacity(ins.len());
    for (x, d) in ins.iter().zip(dims) {
        args.push(if x.aval.ndim() > 0 { bdim_at_front(interp, x, *d, 1)? } else { x.clone() });
    }
    let ndim = args.iter().map(|a| a.aval.ndim()).max().unwrap_or(0);
    for (a, d) in args.iter_mut().zip(dims) {
        if d.is_some() && a.aval.ndim() != ndim {
            // A mapped scalar (`f32[n]` now) against operands of rank `ndim`: trailing 1s.
            let mut shape = a.aval.shape.to_vec();
            let dims: Vec<usize> = (0..shape.len()).collect();
            shape.resize(ndim, 1);
            *a = ad::broadcast_in_dim(interp, a, &shape, &dims)?;
        }
    }
    let outs = crate::jax::apply(interp, prim.clone(), &args)?;
    Ok(outs.into_iter().map(|o| (o, Some(0))).collect())
}

/// The rule of a primitive of one operand applied to each element (JAX's
/// `vectorized_batcher`): bound as it is, the batch dimension where it was.
pub(crate) fn vectorized(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let outs = crate::jax::apply(interp, prim.clone(), ins)?;
    let d = dims.first().copied().flatten();
    Ok(outs.into_iter().map(|o| (o, d)).collect())
}

/// An axis of the per-example operand as an axis of the batched one whose batch dimension
/// is `bdim` (JAX's `axis if axis < bdim else axis + 1`).
pub(crate) fn bump(axis: usize, bdim: usize) -> usize {
    if axis < bdim {
        axis
    } else {
        axis + 1
    }
}

/// The one operand and its batch dimension of a rule of one operand.
pub(crate) fn single<'a>(ins: &'a [Rc<Array>], dims: &[BDim]) -> AdResult<(&'a Rc<Array>, usize)> {
    match (ins, dims) {
        ([x], [Some(d)]) => Ok((x, *d)),
        _ => Err(AdError::NoRule("a batching rule of one mapped operand".into())),
    }
}
