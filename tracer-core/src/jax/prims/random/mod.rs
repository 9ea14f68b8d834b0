//! The PRNG primitives on typed keys (`key<fry>`, each element one key) and their raw
//! `uint32[..., 2]` data: their abstract evaluation here, their kernels (Threefry, the
//! samplers bit for bit as XLA computes them) in [`kernels`]. None is differentiable.

pub mod kernels;

use std::rc::Rc;

use smallvec::smallvec;

use super::batching::{moveaxis, single, vectorized, BDim, BatchResult};
use super::{arg, families, type_error, RuleResult};
use crate::interp::Interp;
use crate::jax::ad::{self, AdResult};
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
        return Ok(smallvec![Aval::new(&seeds.shape, DType::Key)]);
    }
    let mut shape = seeds.shape.to_vec();
    shape.push(2);
    Ok(smallvec![Aval::new(&shape, DType::U32)])
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
    Ok(smallvec![Aval::new(&[key_batch(key), shape].concat(), DType::U32)])
}

/// A draw `random_<dist>(keys, params...)`: `shape` samples per key, after the keys' shape,
/// as `random_bits` and the samplers built on it give them under `vmap`.
pub fn draw(prim: &Prim, ins: &[&Aval], shape: &[usize], dtype: DType) -> RuleResult {
    let key = arg(prim, ins, 0)?;
    Ok(smallvec![Aval::new(&[key_batch(key), shape].concat(), dtype)])
}

/// `random_fold_in(keys, msgs)`: the keys' shape and the messages' broadcast (JAX's
/// `broadcasting_shape_rule`), each key folded with its message.
pub fn fold_in(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let (key, msgs) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
    let batch =
        crate::jax::numpy::broadcast_shapes(&[key_batch(key), &msgs.shape]).map_err(|m| type_error(format!("random_fold_in: {m}")))?;
    let words = if key.dtype.is_key() { &[][..] } else { &key.shape[key.ndim().saturating_sub(1)..] };
    Ok(smallvec![key.with_shape(&[&batch[..], words].concat())])
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
    Ok(smallvec![key.with_shape(&out)])
}

/// `random_unwrap`: each key's two `uint32` words on a new last axis.
pub fn unwrap(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let key = arg(prim, ins, 0)?;
    if !key.dtype.is_key() {
        return Err(type_error(format!("random_unwrap takes an array of PRNG keys, got {}", key.long())));
    }
    let mut shape = key.shape.to_vec();
    shape.push(2);
    Ok(smallvec![Aval::new(&shape, DType::U32)])
}

/// `random_wrap`: the raw data's last axis of two words, one key each.
pub fn wrap(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let data = arg(prim, ins, 0)?;
    if let Some((2, batch)) = data.shape.split_last().filter(|_| data.dtype == DType::U32) {
        return Ok(smallvec![Aval::new(batch, DType::Key)]);
    }
    Err(type_error(format!("random_wrap takes uint32 key data of shape (..., 2), got {}", data.long())))
}

// ---------------------------------------------------------------------------------------
// Batching: JAX's rules are vectorized over key arrays (`defvectorized` for `random_seed`,
// `random_split`, `random_bits`, `random_unwrap`, `random_clone`; `defbroadcasting` for
// `random_fold_in`; `random_wrap` with the batch dimension first), and so is a draw here,
// which stands for JAX's sampler built on `random_bits`.

/// Whether `vmap` has a rule for `prim` with these operands mapped: every PRNG primitive, a
/// draw whose key alone is mapped, a draw whose parameters are elementwise (`minval`,
/// `maxval`, `lower`, `upper`, `p`: [`ELEMENTWISE_PARAMS`]) with some of them mapped, and a
/// draw of `categorical`, `permutation` or `choice` with a mapped `logits`, `x`, `a` or `p`.
pub(crate) fn has_batch_rule(prim: &Prim, mapped: &[bool]) -> bool {
    if let Prim::Random { dist, .. } = prim {
        let params_mapped = mapped.get(1..).is_some_and(|m| m.contains(&true));
        return match params_mapped {
            true => ELEMENTWISE_PARAMS.contains(dist) || ["categorical", "permutation", "choice"].contains(dist),
            false => mapped.first() == Some(&true),
        };
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
    let mut operands = vec![keys_in_front(interp, prim, n, ins, dims)?];
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

/// The key of a draw with a mapped parameter as a batch of `n` keys in front: one key per
/// example (a typed key of shape `()`, or raw data of shape `(2,)`), an unmapped one broadcast
/// so that every example draws from the same key, as JAX's unbatched `random_bits` does.
fn keys_in_front(interp: &mut Interp, prim: &Prim, n: usize, ins: &[Rc<Array>], dims: &[BDim]) -> AdResult<Rc<Array>> {
    let (Some(key), Some(kd)) = (ins.first(), dims.first()) else { return Err(ad::no_rule_for(prim)) };
    if key_batch(&key.aval).len() != usize::from(kd.is_some()) {
        return Err(ad::no_rule_for(prim));
    }
    match kd {
        Some(d) => moveaxis(interp, key, *d, 0),
        None => super::batching::broadcast(interp, key, n, 0),
    }
}

/// `categorical` with mapped `logits`, as JAX batches its sampler: the argmax of Gumbel noise
/// plus the logits. The noise is one draw `random_gumbel` (XLA's arithmetic, the noise
/// `categorical`'s kernel draws), of the sample's shape with the logits' axis in place, from
/// the unmapped key (the same noise for every example, JAX's `random_bits` of an unbatched
/// key) or over the mapped keys; the logits, batched first, are added, and `argmax` takes
/// the axis; `replace=False` is [`categorical_without_replacement`]. Logits that are not
/// floating are refused (JAX's Gumbel noise has their dtype).
fn categorical_with_mapped_logits(
    interp: &mut Interp,
    prim: &Prim,
    shape: &[usize],
    dtype: DType,
    ins: &[Rc<Array>],
    dims: &[BDim],
) -> BatchResult {
    let ([key, logits, axis, replace], [kd, Some(ld), None, None]) = (ins, dims) else { return Err(ad::no_rule_for(prim)) };
    let scalar_of = |a: &Rc<Array>| {
        let data = a.known().and_then(|k| crate::jax::eval::force(&k, 1))?;
        (data.ndim() == 0).then(|| data.iter().next().copied()).flatten()
    };
    let rank = logits.aval.ndim() - 1;
    let (Some(axis), Some(replace)) = (scalar_of(axis), scalar_of(replace)) else { return Err(ad::no_rule_for(prim)) };
    let axis = if axis < 0.0 { axis + rank as f64 } else { axis };
    if replace == 0.0 && (0.0..rank as f64).contains(&axis) && logits.aval.dtype.is_floating() {
        return categorical_without_replacement(interp, shape, (key, *kd), (logits, *ld), axis as usize);
    }
    if replace != 1.0 {
        return Err(ad::no_rule_for(prim));
    }
    let (Some(prefix), true) = (shape.len().checked_sub(rank.saturating_sub(1)), (0.0..rank as f64).contains(&axis)) else {
        return Err(ad::no_rule_for(prim));
    };
    if !logits.aval.dtype.is_floating() || rank == 0 {
        return Err(ad::no_rule_for(prim));
    }
    let (n, axis) = (logits.aval.shape[*ld], axis as usize);
    let example: Vec<usize> = logits.aval.shape.iter().enumerate().filter(|(i, _)| i != ld).map(|(_, &s)| s).collect();
    // The noise's shape: the sample's, the logits' axis put back in its place.
    let mut noise_shape = shape.to_vec();
    noise_shape.insert(prefix + axis, example[axis]);
    let gumbel = Prim::Random { dist: "gumbel", shape: noise_shape.clone(), dtype: logits.aval.dtype };
    let (key, nd) = match kd {
        Some(d) => (moveaxis(interp, key, *d, 0)?, Some(0)),
        None => (key.clone(), None),
    };
    let noise = ad::bind(interp, gumbel, &[key])?;
    // The logits as `expand_dims` and `+` broadcast them against the noise, batched first.
    let logits = moveaxis(interp, logits, *ld, 0)?;
    let full: Vec<usize> = std::iter::once(n).chain(noise_shape.iter().copied()).collect();
    let logits = match logits.aval.shape[1..] == noise_shape[..] {
        true => logits,
        false => {
            ad::broadcast_in_dim(interp, &logits, &full, &std::iter::once(0).chain(1 + prefix..1 + prefix + rank).collect::<Vec<_>>())?
        }
    };
    let add = Prim::Binary(crate::jax::ir::BinaryPrim::Add);
    let (sum, sd) = super::batching::broadcasting(interp, &add, &[noise, logits], &[nd, Some(0)])?.remove(0);
    let sum = super::batching::bdim_at_front(interp, &sum, sd, n)?;
    let argmax = Prim::ArgReduce { op: crate::jax::ir::ArgOp::Max, axis: 1 + prefix + axis, index_dtype: dtype };
    Ok(vec![(ad::bind(interp, argmax, &[sum])?, Some(0))])
}

/// `categorical(..., replace=False)` with mapped `logits`, as JAX batches its sampler: one
/// Gumbel noise of an example's logits' shape (`random_gumbel` from the unmapped key, the
/// same noise for every example, or over the mapped keys) plus the logits, the class axis
/// moved last, `top_k`'s indices, and `lax.reshape` of `(k, *batch)` to the sample's shape.
fn categorical_without_replacement(
    interp: &mut Interp,
    shape: &[usize],
    (key, kd): (&Rc<Array>, BDim),
    (logits, ld): (&Rc<Array>, usize),
    axis: usize,
) -> BatchResult {
    let logits = moveaxis(interp, logits, ld, 0)?;
    let (n, example) = (logits.aval.shape[0], logits.aval.shape[1..].to_vec());
    let gumbel = Prim::Random { dist: "gumbel", shape: example.clone(), dtype: logits.aval.dtype };
    let (key, nd) = match kd {
        Some(d) => (moveaxis(interp, key, d, 0)?, Some(0)),
        None => (key.clone(), None),
    };
    let noise = ad::bind(interp, gumbel, &[key])?;
    let add = Prim::Binary(crate::jax::ir::BinaryPrim::Add);
    let (sum, sd) = super::batching::broadcasting(interp, &add, &[noise, logits], &[nd, Some(0)])?.remove(0);
    let sum = super::batching::bdim_at_front(interp, &sum, sd, n)?;
    let rank = example.len();
    let last: Vec<usize> = std::iter::once(0).chain((1..=rank).filter(|&i| i != 1 + axis)).chain([1 + axis]).collect();
    let sum = moved(interp, sum, last)?;
    let batch: usize = sum.aval.shape[1..rank].iter().product();
    let k = shape.iter().product::<usize>().checked_div(batch).ok_or_else(|| ad::no_rule_for(&add))?;
    let top = ad::bind(interp, Prim::TopKIndices { k }, &[sum])?;
    let top = moved(interp, top, [0, rank].into_iter().chain(1..rank).collect())?;
    let full: Vec<usize> = std::iter::once(n).chain(shape.iter().copied()).collect();
    Ok(vec![(ad::reshape(interp, &top, &full)?, Some(0))])
}

/// `x` transposed by `permutation`, left as it is where that moves nothing (as
/// `jnp.moveaxis` and `lax.reshape` leave it).
fn moved(interp: &mut Interp, x: Rc<Array>, permutation: Vec<usize>) -> AdResult<Rc<Array>> {
    match permutation.iter().enumerate().all(|(i, &p)| i == p) {
        true => Ok(x),
        false => ad::bind(interp, Prim::Transpose { permutation }, &[x]),
    }
}

/// `permutation` with a mapped `x`, `choice` with a mapped `a` or `p`: one draw over a batch
/// of keys ([`keys_in_front`]) that reads each key's own parameters in the rows of its
/// parameters batched first, as the per-example draw would (`kernels.rs`). `permutation`
/// has its mapped `x` batched first and its `axis` and `independent` as they are; `choice`
/// has every parameter batched first, unmapped ones broadcast (its batched `axis` marks the
/// draw whose parameters are per key). A `choice` from a mapped `arange(a)` (JAX wants a
/// concrete `a`) keeps the per-example path.
fn draw_per_key(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let n = super::batching::axis_size(ins, dims)?;
    let choice = matches!(prim, Prim::Random { dist: "choice", .. });
    let a_rank = ins.get(1).zip(dims.get(1)).map(|(a, d)| a.aval.ndim() - usize::from(d.is_some()));
    if (choice && a_rank == Some(0)) || (!choice && dims[2..].iter().any(Option::is_some)) {
        return Err(ad::no_rule_for(prim));
    }
    let mut operands = vec![keys_in_front(interp, prim, n, ins, dims)?];
    for (x, d) in ins[1..].iter().zip(&dims[1..]) {
        operands.push(match (d, choice) {
            (None, false) => x.clone(),
            (d, _) => super::batching::bdim_at_front(interp, x, *d, n)?,
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
        Prim::Random { dist: "categorical", shape, dtype } if dims[1..].iter().any(Option::is_some) => {
            categorical_with_mapped_logits(interp, prim, shape, *dtype, ins, dims)
        }
        Prim::Random { dist: "permutation" | "choice", .. } if dims[1..].iter().any(Option::is_some) => {
            draw_per_key(interp, prim, ins, dims)
        }
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
