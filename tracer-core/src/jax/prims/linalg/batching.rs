//! The batching rules of the linear-algebra primitives (JAX's `linalg_primitive`, which
//! registers `batching.expand_dims_batcher` for each, and `_triangular_solve_batching_rule`).
//! Every [`LinalgOp`] works on the trailing (matrix or vector) axes of its operands and
//! maps over their leading ones, all operands sharing them; so a batch dimension moved to
//! the front is one more leading axis, and the primitive is bound as it is.

use std::rc::Rc;

use crate::interp::Interp;
use crate::jax::ad::{self, AdError};
use crate::jax::array::Array;
use crate::jax::ir::{LinalgOp, Prim};
use crate::jax::prims::batching::{axis_size, bdim_at_front, moveaxis, BDim, BatchResult};

/// The batched `prim` (`Prim::Linalg(op)`): every operand with its batch dimension first,
/// an unmapped one broadcast along a new leading axis, and the outputs batched at 0 (JAX's
/// `expand_dims_batcher`); `triangular_solve` with its matrix unmapped solves the examples
/// as more columns of the right-hand side instead, as JAX does.
pub(crate) fn batch_rule(interp: &mut Interp, prim: &Prim, op: LinalgOp, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    if let (LinalgOp::TriangularSolve { .. }, [a, b], [None, Some(bd)]) = (op, ins, dims) {
        return solve_columns(interp, prim, a, b, *bd);
    }
    let size = axis_size(ins, dims)?;
    let mut args = Vec::with_capacity(ins.len());
    for (x, d) in ins.iter().zip(dims) {
        args.push(bdim_at_front(interp, x, *d, size)?);
    }
    let outs = crate::jax::apply(interp, prim.clone(), &args)?;
    Ok(outs.into_iter().map(|o| (o, Some(0))).collect())
}

/// `triangular_solve(a, b)` with only `b` mapped (left side, `b[..., m, n]`): the batch
/// axis moved last and folded into the columns, `b[..., m, n·size]`, one solve, unfolded;
/// the batch dimension is the last axis.
fn solve_columns(interp: &mut Interp, prim: &Prim, a: &Rc<Array>, b: &Rc<Array>, bd: usize) -> BatchResult {
    let last = b.aval.ndim().checked_sub(1).ok_or_else(|| AdError::NoRule("triangular_solve of a scalar".into()))?;
    let moved = moveaxis(interp, b, bd, last)?;
    let shape = moved.aval.shape.to_vec();
    if shape.len() < 3 {
        return Err(AdError::NoRule("triangular_solve of a vector".into()));
    }
    let mut flat = shape[..shape.len() - 2].to_vec();
    flat.push(shape[shape.len() - 2] * shape[shape.len() - 1]);
    let folded = ad::reshape(interp, &moved, &flat)?;
    let out = crate::jax::apply(interp, prim.clone(), &[a.clone(), folded])?;
    let out = out.into_iter().next().ok_or_else(|| AdError::NoRule("triangular_solve without an output".into()))?;
    Ok(vec![(ad::reshape(interp, &out, &shape)?, Some(last))])
}
