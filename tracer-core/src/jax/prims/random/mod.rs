//! The PRNG primitives on typed keys (`key<fry>`, each element one key) and their raw
//! `uint32[..., 2]` data: their abstract evaluation here, their kernels (Threefry, the
//! samplers bit for bit as XLA computes them) in [`kernels`]. None is differentiable.

pub mod kernels;

use std::rc::Rc;

use super::batching::{moveaxis, single, vectorized, BDim, BatchResult};
use super::{arg, families, type_error, RuleResult};
use crate::interp::Interp;
use crate::jax::ad;
use crate::jax::array::Array;
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

/// The shape of the keys in `key`: a typed key array's shape, or raw `uint32` key data's
/// without its last axis of two words.
pub fn key_batch(key: &Aval) -> &[usize] {
    match key.shape.split_last() {
        Some((_, batch)) if !key.dtype.is_key() => batch,
        _ => &key.shape,
    }
}

/// `random_bits(keys, shape)`: `shape` bits per key, after the keys' shape (JAX's rule is
/// vectorized over key arrays).
pub fn bits(prim: &Prim, ins: &[&Aval], shape: &[usize]) -> RuleResult {
    let key = arg(prim, ins, 0)?;
    Ok(vec![Aval::new(&[key_batch(key), shape].concat(), DType::U32)])
}

/// A draw `random_<dist>(keys, params...)`: `shape` samples per key, after the keys' shape,
/// as `random_bits` and the samplers built on it give them under `vmap`.
pub fn draw(prim: &Prim, ins: &[&Aval], shape: &[usize], dtype: DType) -> RuleResult {
    let key = arg(prim, ins, 0)?;
    Ok(vec![Aval::new(&[key_batch(key), shape].concat(), dtype)])
}

/// `random_fold_in(keys, msgs)`: the keys' shape and the messages' broadcast (JAX's
/// `broadcasting_shape_rule`), each key folded with its message.
pub fn fold_in(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let (key, msgs) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
    let batch =
        crate::jax::numpy::broadcast_shapes(&[key_batch(key), &msgs.shape]).map_err(|m| type_error(format!("random_fold_in: {m}")))?;
    let words = if key.dtype.is_key() { &[][..] } else { &key.shape[key.ndim().saturating_sub(1)..] };
    Ok(vec![key.with_shape(&[&batch[..], words].concat())])
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

// ---------------------------------------------------------------------------------------
// Batching: JAX's rules are vectorized over key arrays (`defvectorized` for `random_seed`,
// `random_split`, `random_bits`, `random_unwrap`, `random_clone`; `defbroadcasting` for
// `random_fold_in`; `random_wrap` with the batch dimension first), and so is a draw here,
// which stands for JAX's sampler built on `random_bits`.

/// Whether `vmap` has a rule for `prim` with these operands mapped: every PRNG primitive, a
/// draw whose key alone is mapped, and a draw whose parameters are elementwise (`minval`,
/// `maxval`, `lower`, `upper`, `p`: [`ELEMENTWISE_PARAMS`]) with some of them mapped (one with
/// mapped `logits` keeps the per-example path).
pub(crate) fn has_batch_rule(prim: &Prim, mapped: &[bool]) -> bool {
    if let Prim::Random { dist, .. } = prim {
        let params_mapped = mapped.get(1..).is_some_and(|m| m.contains(&true));
        return if params_mapped { ELEMENTWISE_PARAMS.contains(dist) } else { mapped.first() == Some(&true) };
    }
    matches!(prim, families::random!())
}

/// The draws whose parameters broadcast to the sample's shape, element by element: under
/// `vmap` a mapped parameter is one value per example and sample (`kernels.rs` draws each
/// key with its example's parameters).
pub(crate) const ELEMENTWISE_PARAMS: [&str; 4] = ["uniform", "randint", "truncated_normal", "bernoulli"];

/// A draw with a mapped parameter: one draw over a batch of keys (an unmapped key broadcast,
/// so that every example draws from the same key, as JAX's unbatched `random_bits` does), each
/// mapped parameter broadcast to `(n, *shape)`; the samples batched first.
fn draw_with_mapped_params(interp: &mut Interp, prim: &Prim, shape: &[usize], ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let n = super::batching::axis_size(ins, dims)?;
    let (Some(key), Some(kd)) = (ins.first(), dims.first()) else { return Err(ad::no_rule_for(prim)) };
    // One key per example: a typed key of shape (), or raw data of shape (2,).
    let one_key = |a: &Aval, mapped: bool| key_batch(a).len() == usize::from(mapped);
    if !one_key(&key.aval, kd.is_some()) {
        return Err(ad::no_rule_for(prim));
    }
    let key = match kd {
        Some(d) => moveaxis(interp, key, *d, 0)?,
        None => super::batching::broadcast(interp, key, n, 0)?,
    };
    let mut operands = vec![key];
    for (x, d) in ins[1..].iter().zip(&dims[1..]) {
        operands.push(match d {
            None => x.clone(),
            Some(d) => {
                let x = moveaxis(interp, x, *d, 0)?;
                let rank = x.aval.ndim() - 1;
                if rank > shape.len() {
                    return Err(ad::no_rule_for(prim));
                }
                let full: Vec<usize> = std::iter::once(n).chain(shape.iter().copied()).collect();
                let at: Vec<usize> = std::iter::once(0).chain(1 + shape.len() - rank..1 + shape.len()).collect();
                ad::broadcast_in_dim(interp, &x, &full, &at)?
            }
        });
    }
    let outs = crate::jax::apply(interp, prim.clone(), &operands)?;
    Ok(outs.into_iter().map(|o| (o, Some(0))).collect())
}

/// The batching rule of a PRNG primitive (asked where [`has_batch_rule`] says so): bound as
/// it is on the batched keys, whose batch dimension stays where it is (an axis of the keys,
/// never raw key data's axis of two words), the messages of `random_fold_in` and the data of
/// `random_wrap` with theirs first.
pub(crate) fn batch_rule(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    match prim {
        Prim::RandomFoldIn => {
            let ([key, msgs], [kd, md]) = (ins, dims) else { return Err(ad::no_rule_for(prim)) };
            // Per example one key and one message (`fold_in` refuses arrays of either).
            let per_example = |x: &Aval, d: BDim| key_batch(x).len() == usize::from(d.is_some());
            if !(per_example(&key.aval, *kd) && msgs.aval.ndim() == usize::from(md.is_some())) {
                return Err(ad::no_rule_for(prim));
            }
            let key = match kd {
                Some(d) => moveaxis(interp, key, *d, 0)?,
                None => key.clone(),
            };
            let msgs = match md {
                Some(d) => moveaxis(interp, msgs, *d, 0)?,
                None => msgs.clone(),
            };
            let outs = crate::jax::apply(interp, prim.clone(), &[key, msgs])?;
            Ok(outs.into_iter().map(|o| (o, Some(0))).collect())
        }
        Prim::RandomWrap => {
            let (x, d) = single(ins, dims)?;
            let x = moveaxis(interp, x, d, 0)?;
            let outs = crate::jax::apply(interp, prim.clone(), &[x])?;
            Ok(outs.into_iter().map(|o| (o, Some(0))).collect())
        }
        // Seeds are not keys: every axis of theirs is one of the keys'.
        Prim::RandomSeed { .. } => vectorized(interp, prim, ins, dims),
        Prim::Random { shape, .. } if dims[1..].iter().any(Option::is_some) => draw_with_mapped_params(interp, prim, shape, ins, dims),
        Prim::RandomBits { .. } | Prim::RandomSplit { .. } | Prim::RandomUnwrap | Prim::RandomClone | Prim::Random { .. } => {
            let (key, d) = match (ins.first(), dims.first()) {
                (Some(k), Some(Some(d))) => (k, *d),
                _ => return Err(ad::no_rule_for(prim)),
            };
            // Raw key data batched along its words' axis: the batch moved in front of it.
            let (key, d) = if d >= key_batch(&key.aval).len() { (moveaxis(interp, key, d, 0)?, 0) } else { (key.clone(), d) };
            let operands: Vec<Rc<Array>> = std::iter::once(key).chain(ins[1..].iter().cloned()).collect();
            let outs = crate::jax::apply(interp, prim.clone(), &operands)?;
            Ok(outs.into_iter().map(|o| (o, Some(d))).collect())
        }
        families::all_but!(random) => Err(ad::no_rule_for(prim)),
    }
}
