//! Abstract evaluation of the PRNG primitives on typed keys (`key<fry>`, each element one
//! key) and their raw `uint32[..., 2]` data.

use super::{arg, type_error, RuleResult};
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;

pub fn bits(shape: &[usize]) -> RuleResult {
    Ok(vec![Aval::new(shape, DType::U32)])
}

/// `random_split(keys, shape)`: the keys' batch shape followed by `shape` (and, for raw
/// `uint32` key data, its last axis of two words).
pub fn split(prim: &Prim, ins: &[Aval], shape: &[usize]) -> RuleResult {
    let key = arg(prim, ins, 0)?;
    let (batch, words) = match key.shape.split_last() {
        Some((&n, batch)) if !key.dtype.is_key() => (batch, Some(n)),
        _ => (&key.shape[..], None),
    };
    let mut out = batch.to_vec();
    out.extend_from_slice(shape);
    out.extend(words);
    Ok(vec![key.with_shape(&out)])
}

/// `random_unwrap`: each key's two `uint32` words on a new last axis.
pub fn unwrap(prim: &Prim, ins: &[Aval]) -> RuleResult {
    let key = arg(prim, ins, 0)?;
    if !key.dtype.is_key() {
        return Err(type_error(format!("random_unwrap takes an array of PRNG keys, got {}", key.long())));
    }
    let mut shape = key.shape.to_vec();
    shape.push(2);
    Ok(vec![Aval::new(&shape, DType::U32)])
}

/// `random_wrap`: the raw data's last axis of two words, one key each.
pub fn wrap(prim: &Prim, ins: &[Aval]) -> RuleResult {
    let data = arg(prim, ins, 0)?;
    match data.shape.split_last() {
        Some((2, batch)) if data.dtype == DType::U32 => Ok(vec![Aval::new(batch, DType::Key)]),
        _ => Err(type_error(format!("random_wrap takes uint32 key data of shape (..., 2), got {}", data.long()))),
    }
}
