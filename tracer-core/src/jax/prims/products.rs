//! Abstract evaluation of `dot_general`: the batch axes, then the free axes of `lhs`, then
//! those of `rhs`; weakly typed only if both operands are.

use super::{arg, type_error, RuleResult};
use crate::jax::aval::{shape_tuple, Aval};
use crate::jax::ir::Prim;

/// `numbers` are `[lhs_contract, rhs_contract, lhs_batch, rhs_batch]`.
pub fn dot_general(prim: &Prim, ins: &[Aval], numbers: [&Vec<usize>; 4]) -> RuleResult {
    let (l, r) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
    let [lc, rc, lb, rb] = numbers;
    let sizes = |a: &Aval, dims: &[usize]| dims.iter().map(|&d| a.shape.get(d).copied()).collect::<Option<Vec<usize>>>();
    let (Some(lcs), Some(rcs), Some(lbs), Some(rbs)) = (sizes(l, lc), sizes(r, rc), sizes(l, lb), sizes(r, rb)) else {
        return Err(type_error(format!(
            "dot_general dimension numbers out of range for operands of shapes {} and {}",
            l.shape_tuple(),
            r.shape_tuple()
        )));
    };
    if lbs != rbs {
        return Err(type_error(format!(
            "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same shape, got {} and {}.",
            shape_tuple(&lbs),
            shape_tuple(&rbs)
        )));
    }
    if lcs != rcs {
        return Err(type_error(format!(
            "dot_general requires contracting dimensions to have the same shape, got {} and {}.",
            shape_tuple(&lcs),
            shape_tuple(&rcs)
        )));
    }
    let free = |a: &Aval, contract: &[usize], batch: &[usize]| -> Vec<usize> {
        (0..a.ndim()).filter(|i| !contract.contains(i) && !batch.contains(i)).map(|i| a.shape[i]).collect()
    };
    let mut shape = lbs;
    shape.extend(free(l, lc, lb));
    shape.extend(free(r, rc, rb));
    Ok(vec![Aval::new(&shape, l.dtype).weak(l.weak && r.weak)])
}
