//! The PRNG primitives on typed keys (`key<fry>`, each element one key) and their raw
//! `uint32[..., 2]` data: their abstract evaluation here, their kernels (Threefry, the
//! samplers bit for bit as XLA computes them) in [`kernels`]. None is differentiable.

pub mod kernels;

use super::{arg, type_error, RuleResult};
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;

/// `random_seed(seeds)`: one typed key per integer seed, or with `raw` (`PRNGKey`) each
/// key's two `uint32` words on a new last axis.
pub fn seed(prim: &Prim, ins: &[&Aval], raw: bool) -> RuleResult {
    let seeds = arg(prim, ins, 0)?;
    if !(seeds.dtype.is_integer() || seeds.dtype.is_bool()) {
        return Err(type_error(format!("random_seed takes integer seeds, got {}", seeds.long())));
    }
    if !raw {
        return Ok(vec![Aval::new(&seeds.shape, DType::Key)]);
    }
    let mut shape = seeds.shape.to_vec();
    shape.push(2);
    Ok(vec![Aval::new(&shape, DType::U32)])
}

pub fn bits(shape: &[usize]) -> RuleResult {
    Ok(vec![Aval::new(shape, DType::U32)])
}

/// `random_split(keys, shape)`: the keys' batch shape followed by `shape` (and, for raw
/// `uint32` key data, its last axis of two words).
pub fn split(prim: &Prim, ins: &[&Aval], shape: &[usize]) -> RuleResult {
    let key = arg(prim, ins, 0)?;
    let raw = key.shape.split_last().filter(|_| !key.dtype.is_key());
    let (batch, words) = raw.map_or((&key.shape[..], None), |(&n, batch)| (batch, Some(n)));
    let mut out = batch.to_vec();
    out.extend_from_slice(shape);
    out.extend(words);
    Ok(vec![key.with_shape(&out)])
}

/// `random_unwrap`: each key's two `uint32` words on a new last axis.
pub fn unwrap(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let key = arg(prim, ins, 0)?;
    if !key.dtype.is_key() {
        return Err(type_error(format!("random_unwrap takes an array of PRNG keys, got {}", key.long())));
    }
    let mut shape = key.shape.to_vec();
    shape.push(2);
    Ok(vec![Aval::new(&shape, DType::U32)])
}

/// `random_wrap`: the raw data's last axis of two words, one key each.
pub fn wrap(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let data = arg(prim, ins, 0)?;
    if let Some((2, batch)) = data.shape.split_last().filter(|_| data.dtype == DType::U32) {
        return Ok(vec![Aval::new(batch, DType::Key)]);
    }
    Err(type_error(format!("random_wrap takes uint32 key data of shape (..., 2), got {}", data.long())))
}
