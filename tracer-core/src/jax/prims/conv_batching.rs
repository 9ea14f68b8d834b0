//! `conv_general_dilated`'s batching rule (JAX's `_conv_general_dilated_batch_rule`,
//! jax/_src/lax/convolution.py): the examples folded into one of the convolution's own axes,
//! one convolution bound, and the examples split out of its output again. A mapped `lhs`
//! alone is folded into the batch axis; a mapped kernel alone into the output features; both
//! mapped, the `lhs` into its features as that many more feature groups and the kernel into
//! its output features. With groups of the convolution's own, the examples go inside each
//! group: both mapped with batch groups, the `lhs` into its batch axis as that many more
//! batch groups; a mapped `lhs` alone with batch groups, into its batch axis within each
//! group; a mapped kernel alone with groups, into its output features within each group,
//! the output's features regrouped after.

use std::rc::Rc;

use super::batching::{moveaxis, BDim, BatchResult};
use super::conv::Conv;
use crate::interp::Interp;
use crate::jax::ad::{self, AdError, AdResult};
use crate::jax::array::Array;
use crate::jax::ir::Prim;

impl Conv {
    /// Whether [`Conv::batch_rule`] batches operands mapped so.
    pub(super) fn has_batch_rule(&self, mapped: &[bool]) -> bool {
        // JAX's rule asserts that one of the group counts is 1 (the shape rule refuses both).
        matches!(mapped, [true, false] | [true, true] | [false, true]) && (self.batch_group_count == 1 || self.feature_group_count == 1)
    }

    pub(super) fn batch_rule(&self, interp: &mut Interp, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
        let ([lhs, rhs], [ld, rd]) = (ins, dims) else {
            return Err(AdError::NoRule("conv_general_dilated takes two operands".into()));
        };
        let dn = &self.dimension_numbers;
        let (lhs_spec, rhs_spec, out_spec) = (&dn.lhs_spec, &dn.rhs_spec, &dn.out_spec);
        let (Some(&lb), Some(&lf), Some(&ro), Some(&ob), Some(&of)) =
            (lhs_spec.first(), lhs_spec.get(1), rhs_spec.first(), out_spec.first(), out_spec.get(1))
        else {
            return Err(AdError::NoRule("conv_general_dilated without dimension numbers".into()));
        };
        let mut conv = self.clone();
        let (bgc, fgc) = (self.batch_group_count, self.feature_group_count);
        let (new_lhs, new_rhs, n, out_axis) = match (ld, rd) {
            (Some(l), None) if bgc == 1 => (fold(interp, lhs, *l, lb)?, rhs.clone(), lhs.aval.shape[*l], ob),
            // The examples inside each batch group: groups out of the batch axis, the
            // examples into what is left of it, the groups back in front.
            (Some(l), None) => {
                let grouped = unfold(interp, lhs, lb + usize::from(*l <= lb), bgc)?;
                let inner = fold(interp, &grouped, l + usize::from(lb < *l), lb + 1)?;
                (fold(interp, &inner, lb, lb)?, rhs.clone(), lhs.aval.shape[*l], ob)
            }
            (Some(l), Some(r)) => {
                let n = lhs.aval.shape[*l];
                let new_lhs = if bgc > 1 {
                    conv.batch_group_count *= n;
                    fold(interp, lhs, *l, lb)?
                } else {
                    conv.feature_group_count *= n;
                    fold(interp, lhs, *l, lf)?
                };
                (new_lhs, fold(interp, rhs, *r, ro)?, n, of)
            }
            (None, Some(r)) if bgc == 1 && fgc == 1 => (lhs.clone(), fold(interp, rhs, *r, ro)?, rhs.aval.shape[*r], of),
            // The examples inside each group of output features, and out of them again after.
            (None, Some(r)) => {
                let groups = fgc.max(bgc);
                let n = rhs.aval.shape[*r];
                let grouped = unfold(interp, rhs, ro + usize::from(*r <= ro), groups)?;
                let inner = fold(interp, &grouped, r + usize::from(ro < *r), ro + 1)?;
                let new_rhs = fold(interp, &inner, ro, ro)?;
                let out = ad::bind(interp, Prim::block(conv), &[lhs.clone(), new_rhs])?;
                let out = unfold(interp, &out, of, groups)?;
                let out = unfold(interp, &out, of + 1, n)?;
                return Ok(vec![(fold(interp, &out, of, of + 1)?, Some(of))]);
            }
            _ => return Err(AdError::NoRule("conv_general_dilated with no mapped operand".into())),
        };
        let out = ad::bind(interp, Prim::block(conv), &[new_lhs, new_rhs])?;
        Ok(vec![(unfold(interp, &out, out_axis, n)?, Some(out_axis))])
    }
}

/// `x` with its axis `src` merged into the axis `dst` counts once `src` is removed, the
/// examples outermost (JAX's `_reshape_axis_into`).
fn fold(interp: &mut Interp, x: &Rc<Array>, src: usize, dst: usize) -> AdResult<Rc<Array>> {
    let n = x.aval.shape.get(src).copied().unwrap_or(0);
    let mut shape = x.aval.shape.to_vec();
    shape.remove(src);
    if n == 0 || dst >= shape.len() {
        return Err(AdError::NoRule("conv_general_dilated batched over no examples".into()));
    }
    shape[dst] *= n;
    let moved = moveaxis(interp, x, src, dst)?;
    ad::reshape(interp, &moved, &shape)
}

/// `x` with its axis `axis` split into `n` examples and the rest (JAX's `_reshape_axis_out_of`).
fn unfold(interp: &mut Interp, x: &Rc<Array>, axis: usize, n: usize) -> AdResult<Rc<Array>> {
    let mut shape = x.aval.shape.to_vec();
    let len = shape.get(axis).copied().unwrap_or(0);
    if n == 0 || len % n != 0 {
        return Err(AdError::NoRule("conv_general_dilated output not divisible by its examples".into()));
    }
    shape.splice(axis..=axis, [n, len / n]);
    ad::reshape(interp, x, &shape)
}
