//! `conv_general_dilated`'s batching rule (JAX's `_conv_general_dilated_batch_rule`,
//! jax/_src/lax/convolution.py): the examples folded into one of the convolution's own axes,
//! one convolution bound, and the examples split out of its output again. A mapped `lhs`
//! alone is folded into the batch axis; a mapped kernel alone into the output features; both
//! mapped, the `lhs` into its features as that many more feature groups and the kernel into
//! its output features. Cases JAX handles with `batch_group_count` (and a mapped kernel with
//! feature groups) have no rule here: `vmap` keeps its per-example path for them.

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
        match mapped {
            [true, false] | [true, true] => self.batch_group_count == 1,
            [false, true] => self.batch_group_count == 1 && self.feature_group_count == 1,
            _ => false,
        }
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
        let (new_lhs, new_rhs, n, out_axis) = match (ld, rd) {
            (Some(l), None) if self.batch_group_count == 1 => (fold(interp, lhs, *l, lb)?, rhs.clone(), lhs.aval.shape[*l], ob),
            (Some(l), Some(r)) if self.batch_group_count == 1 => {
                let n = lhs.aval.shape[*l];
                conv.feature_group_count *= n;
                (fold(interp, lhs, *l, lf)?, fold(interp, rhs, *r, ro)?, n, of)
            }
            (None, Some(r)) if self.batch_group_count == 1 && self.feature_group_count == 1 => {
                (lhs.clone(), fold(interp, rhs, *r, ro)?, rhs.aval.shape[*r], of)
            }
            _ => return Err(AdError::NoRule("conv_general_dilated batched with groups".into())),
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
