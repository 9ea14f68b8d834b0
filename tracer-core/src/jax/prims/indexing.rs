//! Abstract evaluation of `gather` and `scatter` as tracelens models them: NumPy indexing
//! with one integer array input per array item of the index (`jax/indexing.rs`).

use super::{arg, type_error, RuleResult};
use crate::jax::aval::Aval;
use crate::jax::indexing::selection_shape;
use crate::jax::ir::{IndexItem, Prim};

/// `gather(operand, *index_arrays)`: the selection's shape, the operand's dtype.
pub fn gather(prim: &Prim, ins: &[Aval], index: &[IndexItem]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let index_shapes: Vec<&[usize]> = ins[1..].iter().map(|a| &a.shape[..]).collect();
    let shape = selection_shape(&x.shape, index, &index_shapes).map_err(type_error)?;
    Ok(vec![x.with_shape(&shape)])
}

/// `scatter(operand, updates, *index_arrays)`: the operand's aval.
pub fn scatter(prim: &Prim, ins: &[Aval], _index: Option<&[IndexItem]>) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    arg(prim, ins, 1)?;
    Ok(vec![x.clone()])
}
