//! The elementwise primitives (`lax.add`, `lax.sin`, `select_n`, `convert_element_type`):
//! their abstract evaluation (operands of one shape, a rank-0 operand such as a literal
//! standing for any shape; the output of that shape, weakly typed only if every operand is),
//! then their CPU kernels on one element ([`scalar`]: `unary_fn`, `binary_fn`, with XLA's own
//! `exp`, `tanh` and `erfc` where JAX's values differ from the correctly rounded ones).
//! `eval.rs` maps them over arrays, and keeps the float32 fast path.

pub mod derivatives;
pub mod scalar;

use std::rc::Rc;

use ndarray::IxDyn;
use smallvec::smallvec;

use super::batching::{self, BDim, BatchResult};
use super::{arg, families, type_error, RuleResult};
use crate::jax::array::{NdData, NdDataF32};
use crate::jax::aval::{Aval, Shape};
use crate::jax::dtypes::DType;
use crate::jax::eval::{broadcast_to, float_to_int, flush_f32, max_f32, min_f32, round_to, wrap_int, zip_f32};
use crate::jax::ir::{BinaryPrim, CmpPrim, Prim, UnaryPrim};
pub(crate) use scalar::*;

/// The shape operands combine to (JAX's `broadcasting_shape_rule`): a rank-0 operand (a
/// literal) stands for any shape; the others have one rank, and an axis of 1 stretches to
/// the others' length. JAX's message for others.
pub(crate) fn common_shape(prim: &Prim, avals: &[&Aval]) -> Result<Shape, crate::jax::prims::RuleError> {
    // One pass, nothing collected: every elementwise `bind` comes here. A mismatch reports
    // a rank difference anywhere before a length difference, as JAX checks ranks first.
    let mut ranked = avals.iter().copied().filter(|a| !a.shape.is_empty());
    let Some(first) = ranked.next() else { return Ok(Shape::new()) };
    let mut shape = Shape::from_slice(&first.shape);
    for a in ranked {
        if a.ndim() != shape.len() {
            return Err(broadcast_error(prim, avals));
        }
        for (out, &n) in shape.iter_mut().zip(&a.shape) {
            if *out == 1 {
                *out = n;
            } else if n != 1 && n != *out {
                return Err(broadcast_error(prim, avals));
            }
        }
    }
    Ok(shape)
}

/// JAX's message for operands that do not broadcast: of different ranks (rank-0 operands
/// aside), else of incompatible lengths.
#[cold]
fn broadcast_error(prim: &Prim, avals: &[&Aval]) -> crate::jax::prims::RuleError {
    let ranked: Vec<&Aval> = avals.iter().copied().filter(|a| !a.shape.is_empty()).collect();
    let mut ranks: Vec<usize> = ranked.iter().map(|a| a.ndim()).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if ranks.len() > 1 {
        let ranks: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
        return type_error(format!("{}: arrays must have the same number of dimensions, got {{{}}}", prim.name(), ranks.join(", ")));
    }
    let shapes: Vec<String> = ranked.iter().map(|a| a.shape_tuple()).collect();
    type_error(format!("{} got incompatible shapes for broadcasting: {}.", prim.name(), shapes.join(", ")))
}

/// The dtype of an elementwise result: that of the first operand that is not weakly typed
/// (a literal defers to the array it meets), else the first's.
fn operand_dtype(avals: &[&Aval]) -> DType {
    avals.iter().find(|a| !a.weak).or(avals.first()).map_or(DType::F32, |a| a.dtype)
}

fn elementwise(prim: &Prim, avals: &[&Aval]) -> Result<Aval, crate::jax::prims::RuleError> {
    let shape = common_shape(prim, avals)?;
    Ok(Aval { shape, dtype: operand_dtype(avals), weak: false }.weak(avals.iter().all(|a| a.weak)))
}

pub fn unary(prim: &Prim, u: UnaryPrim, ins: &[&Aval]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let to_real = matches!(u, UnaryPrim::Abs | UnaryPrim::Real | UnaryPrim::Imag) && x.dtype.is_complex();
    Ok(smallvec![if u == UnaryPrim::IsFinite {
        x.with_dtype(DType::Bool)
    } else if to_real {
        Aval::new(&x.shape, x.dtype.real_dtype()).weak(x.weak)
    } else {
        x.clone()
    }])
}

pub fn binary(prim: &Prim, _b: BinaryPrim, ins: &[&Aval]) -> RuleResult {
    let (x, y) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
    Ok(smallvec![elementwise(prim, &[x, y])?])
}

pub fn compare(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let (x, y) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
    Ok(smallvec![Aval { shape: common_shape(prim, &[x, y])?, dtype: DType::Bool, weak: false }])
}

/// `select_n(which, *cases)`: the cases' aval.
pub fn select(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let which = arg(prim, ins, 0)?;
    arg(prim, ins, 1)?;
    let cases: Vec<&Aval> = ins[1..].to_vec();
    let mut all: Vec<&Aval> = cases.clone();
    all.push(which);
    let shape = common_shape(prim, &all)?;
    Ok(smallvec![Aval::new(&shape, operand_dtype(&cases)).weak(cases.iter().all(|a| a.weak))])
}

/// `clamp(min, x, max)`: `x`'s aval.
pub fn clamp(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let x = arg(prim, ins, 1)?;
    Ok(smallvec![x.clone()])
}

/// The operand's aval unchanged (`integer_pow`, `stop_gradient`, `random_clone`).
pub fn same(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    Ok(smallvec![arg(prim, ins, 0)?.clone()])
}

pub fn convert(prim: &Prim, ins: &[&Aval], dtype: DType, weak: bool) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    Ok(smallvec![x.with_dtype(dtype).weak(weak)])
}

// ---------------------------------------------------------------------------------------
// The CPU kernels on arrays: `eval::force` computes the operands, calls these through the
// registry's tables and rounds the result to the output dtype.

/// The kernel in f64: the result before rounding to `out_dtype`, or `None` for a case
/// without a kernel (the value then stays unknown).
pub(crate) fn kernel(prim: &Prim, ins: &[Rc<NdData>], in_dtypes: &[DType], out_shape: &[usize], out_dtype: DType) -> Option<NdData> {
    let int_out = out_dtype.is_integer();
    Some(match prim {
        Prim::Unary(u) => {
            let a = &ins[0];
            let f = unary_fn(*u, out_dtype)?;
            if *u == UnaryPrim::Not && int_out {
                a.mapv(|x| !(x as i64) as f64)
            } else if int_out && matches!(u, UnaryPrim::Square | UnaryPrim::Neg | UnaryPrim::Abs) {
                a.mapv(|x| {
                    let x = x as i128;
                    wrap_int(
                        if *u == UnaryPrim::Square {
                            x * x
                        } else if *u == UnaryPrim::Neg {
                            -x
                        } else {
                            x.abs()
                        },
                        out_dtype,
                    )
                })
            } else {
                a.mapv(|x| f(x))
            }
        }
        Prim::Binary(b) => {
            let a = broadcast_to(&ins[0], out_shape)?;
            let c = broadcast_to(&ins[1], out_shape)?;
            let int = in_dtypes.first().map(|d| d.is_integer() || d.is_bool()).unwrap_or(false);
            if int && int_out && matches!(b, BinaryPrim::Add | BinaryPrim::Sub | BinaryPrim::Mul) {
                // In i128, then wrapped: an f64 product of two int32s is not exact.
                let f: fn(i128, i128) -> i128 = match b {
                    BinaryPrim::Add => |x, y| x + y,
                    BinaryPrim::Sub => |x, y| x - y,
                    _ => |x, y| x * y,
                };
                return Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| wrap_int(f(x as i128, y as i128), out_dtype)));
            }
            // `x ** 2` on integers is `integer_pow` in JAX: exact, wrapping.
            if int && int_out && *b == BinaryPrim::Pow {
                return Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| match u32::try_from(y as i64) {
                    Ok(y) => wrap_int((x as i128).wrapping_pow(y), out_dtype),
                    Err(_) => f64::NAN,
                }))
                .filter(|d| !d.iter().any(|v| v.is_nan()));
            }
            // `jnp.logaddexp` as `lax_other.logaddexp` writes it, each step rounded to the
            // dtype: `max(x, y) + log1p(exp(-|x - y|))`, or `x + y` where `x - y` is NaN (a
            // NaN operand, or infinities of the same sign).
            if *b == BinaryPrim::Logaddexp {
                let r = move |v: f64| round_to(v, out_dtype);
                return Some(ndarray::Zip::from(&a).and(&c).map_collect(move |&x, &y| {
                    let delta = r(x - y);
                    if delta.is_nan() {
                        r(x + y)
                    } else {
                        r(max_f64(x, y) + r(r(exp_in(r(-delta.abs()), out_dtype)).ln_1p()))
                    }
                }));
            }
            // XLA's polygamma, in float32 for float32 and narrower (special.rs).
            if *b == BinaryPrim::Polygamma {
                return Some(ndarray::Zip::from(&a).and(&c).map_collect(|&n, &x| crate::jax::special::polygamma(n, x, out_dtype)));
            }
            // The next float32/float64 after x toward y; subnormal results flush as XLA's do.
            if *b == BinaryPrim::NextAfter {
                return match out_dtype {
                    DType::F32 => {
                        Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| f64::from(libm::nextafterf(x as f32, y as f32))))
                    }
                    DType::F64 => Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| libm::nextafter(x, y))),
                    DType::BF16 => Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| {
                        next_after_16(x, y, |v| half::bf16::from_f64(v).to_bits(), |b| half::bf16::from_bits(b).to_f64())
                    })),
                    DType::F16 => Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| {
                        next_after_16(x, y, |v| half::f16::from_f64(v).to_bits(), |b| half::f16::from_bits(b).to_f64())
                    })),
                    _ => None,
                };
            }
            if *b == BinaryPrim::Div && !int && divides_by_reciprocal(ins[1].shape(), out_shape) {
                let r = ins[1].iter().next().map(|&y| reciprocal(y, out_dtype))?;
                return Some(a.mapv(|x| x * r));
            }
            let f = binary_fn(*b, int)?;
            ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| f(x, y))
        }
        Prim::Compare(c) => {
            let a = broadcast_to(&ins[0], out_shape)?;
            let b = broadcast_to(&ins[1], out_shape)?;
            let f: fn(f64, f64) -> bool = match c {
                CmpPrim::Eq => |x, y| x == y,
                CmpPrim::Ne => |x, y| x != y,
                CmpPrim::Lt => |x, y| x < y,
                CmpPrim::Le => |x, y| x <= y,
                CmpPrim::Gt => |x, y| x > y,
                CmpPrim::Ge => |x, y| x >= y,
            };
            ndarray::Zip::from(&a).and(&b).map_collect(|&x, &y| f(x, y) as i64 as f64)
        }
        Prim::Select if ins.len() == 3 => {
            let p = broadcast_to(&ins[0], out_shape)?;
            let f = broadcast_to(&ins[1], out_shape)?;
            let t = broadcast_to(&ins[2], out_shape)?;
            ndarray::Zip::from(&p).and(&f).and(&t).map_collect(|&p, &f, &t| if p != 0.0 { t } else { f })
        }
        // `select_n(which, *cases)` with more than two cases (`vmap` of `switch`): case `which`.
        Prim::Select => {
            let p = broadcast_to(ins.first()?, out_shape)?;
            let cases: Vec<NdData> = ins[1..].iter().map(|c| broadcast_to(c, out_shape)).collect::<Option<_>>()?;
            let mut out = p.clone();
            for (o, (idx, &w)) in out.iter_mut().zip(p.indexed_iter()) {
                *o = cases.get(w as usize)?[&idx];
            }
            out
        }
        Prim::Clamp => {
            let lo = broadcast_to(&ins[0], out_shape)?;
            let x = broadcast_to(&ins[1], out_shape)?;
            let hi = broadcast_to(&ins[2], out_shape)?;
            ndarray::Zip::from(&lo).and(&x).and(&hi).map_collect(|&l, &x, &h| x.max(l).min(h))
        }
        Prim::IntegerPow(y) if int_out => {
            let y = u32::try_from(*y).ok()?;
            ins[0].mapv(|x| wrap_int((x as i128).wrapping_pow(y), out_dtype))
        }
        Prim::IntegerPow(y) => ins[0].mapv(|x| x.powi(*y)),
        Prim::ConvertElementType { .. } if int_out && in_dtypes.first().is_some_and(|d| d.is_floating()) => {
            ins[0].mapv(|x| float_to_int(x, out_dtype))
        }
        Prim::ConvertElementType { .. } | Prim::StopGradient => (*ins[0]).clone(),
        families::all_but!(elementwise) => return None,
    })
}

/// The float32 path's kernel (float32 or bool data held in `f32`): exactly what [`kernel`]
/// followed by rounding gives, with whether every element is known to be finite.
pub(crate) fn kernel_f32(
    prim: &Prim,
    ins: &[NdDataF32],
    in_dtypes: &[DType],
    out_shape: &[usize],
    out_dtype: DType,
) -> Option<(NdDataF32, bool)> {
    let store = move |y: f64| round_to(y, out_dtype) as f32;
    let shape = IxDyn(out_shape);
    Some((
        match prim {
            Prim::Unary(UnaryPrim::Neg) => ins[0].mapv(|x| -x).into_shared(),
            Prim::Unary(UnaryPrim::Abs) => ins[0].mapv(f32::abs).into_shared(),
            Prim::Unary(UnaryPrim::Copy | UnaryPrim::Real | UnaryPrim::Conj) | Prim::StopGradient => ins[0].clone(),
            Prim::Unary(u) => {
                let f = unary_fn(*u, out_dtype)?;
                ins[0].mapv(|x| store(f(f64::from(x)))).into_shared()
            }
            Prim::Binary(b) => {
                let (x, y) = (&ins[0], &ins[1]);
                let int = in_dtypes.first().is_some_and(|d| d.is_bool());
                return match (b, int) {
                    (BinaryPrim::Add, false) => zip_f32(x, y, out_shape, |p, q| flush_f32(p + q)),
                    (BinaryPrim::Sub, false) => zip_f32(x, y, out_shape, |p, q| flush_f32(p - q)),
                    (BinaryPrim::Mul, false) => zip_f32(x, y, out_shape, |p, q| flush_f32(p * q)),
                    (BinaryPrim::Div, false) if divides_by_reciprocal(y.shape(), out_shape) => {
                        let r = y.iter().next().map(|&q| reciprocal(q.into(), out_dtype) as f32)?;
                        zip_f32(x, y, out_shape, move |p, _| flush_f32(p * r))
                    }
                    (BinaryPrim::Div, false) => zip_f32(x, y, out_shape, |p, q| flush_f32(p / q)),
                    (BinaryPrim::Max, _) => zip_f32(x, y, out_shape, max_f32),
                    (BinaryPrim::Min, _) => zip_f32(x, y, out_shape, min_f32),
                    _ => {
                        let f = binary_fn(*b, int)?;
                        zip_f32(x, y, out_shape, |p, q| store(f(p.into(), q.into())))
                    }
                };
            }
            Prim::Compare(c) => {
                let (x, y) = (&ins[0], &ins[1]);
                let truth = |t: bool| f32::from(u8::from(t));
                return match c {
                    CmpPrim::Eq => zip_f32(x, y, out_shape, |p, q| truth(p == q)),
                    CmpPrim::Ne => zip_f32(x, y, out_shape, |p, q| truth(p != q)),
                    CmpPrim::Lt => zip_f32(x, y, out_shape, |p, q| truth(p < q)),
                    CmpPrim::Le => zip_f32(x, y, out_shape, |p, q| truth(p <= q)),
                    CmpPrim::Gt => zip_f32(x, y, out_shape, |p, q| truth(p > q)),
                    CmpPrim::Ge => zip_f32(x, y, out_shape, |p, q| truth(p >= q)),
                };
            }
            Prim::Select if ins.len() == 3 => {
                let (p, f, t) = (ins[0].broadcast(shape.clone())?, ins[1].broadcast(shape.clone())?, ins[2].broadcast(shape)?);
                ndarray::Zip::from(&p).and(&f).and(&t).map_collect(|&p, &f, &t| if p != 0.0 { t } else { f }).into_shared()
            }
            // More than two cases: the f64 kernel.
            Prim::Select => return None,
            Prim::Clamp => {
                let (lo, x, hi) = (ins[0].broadcast(shape.clone())?, ins[1].broadcast(shape.clone())?, ins[2].broadcast(shape)?);
                ndarray::Zip::from(&lo).and(&x).and(&hi).map_collect(|&l, &x, &h| x.max(l).min(h)).into_shared()
            }
            Prim::IntegerPow(y) => ins[0].mapv(|x| store(f64::from(x).powi(*y))).into_shared(),
            // float32 to float32, or bool to float32: the values are already exact.
            Prim::ConvertElementType { .. } if out_dtype == DType::F32 || in_dtypes.first() == Some(&out_dtype) => ins[0].clone(),
            Prim::ConvertElementType { .. } => ins[0].mapv(|x| store(x.into())).into_shared(),
            families::all_but!(elementwise) => return None,
        },
        false,
    ))
}

/// The batching rules (`prims::batch`): one operand, the batch dimension where it was;
/// operands broadcast against each other (JAX's `broadcast_batcher`); `select_n`'s and
/// `clamp`'s own rules.
pub(crate) fn batch_rule(
    interp: &mut crate::interp::Interp,
    prim: &Prim,
    ins: &[Rc<crate::jax::array::Array>],
    dims: &[BDim],
) -> BatchResult {
    match prim {
        Prim::Unary(_) | Prim::IntegerPow(_) | Prim::ConvertElementType { .. } | Prim::StopGradient => {
            batching::vectorized(interp, prim, ins, dims)
        }
        Prim::Binary(_) | Prim::Compare(_) => batching::broadcasting(interp, prim, ins, dims),
        Prim::Select => select_batch(interp, ins, dims),
        Prim::Clamp => clamp_batch(interp, ins, dims),
        families::all_but!(elementwise) => Err(crate::jax::ad::AdError::NoRule(prim.name())),
    }
}

/// `clamp(min, x, max)` batched (JAX's `_clamp_batch_rule`): bound as it is where the bounds
/// are scalars or agree with `x`; otherwise every operand of rank above 0 with its batch
/// dimension first and the bounds broadcast to `x`.
fn clamp_batch(interp: &mut crate::interp::Interp, ins: &[Rc<crate::jax::array::Array>], dims: &[BDim]) -> BatchResult {
    use crate::jax::ad::{bind, broadcast_in_dim};
    let size = batching::axis_size(ins, dims)?;
    let ([lo, x, hi], [ld, xd, hd]) = (ins, dims) else {
        return Err(crate::jax::ad::AdError::NoRule("clamp of other than three operands".into()));
    };
    let rank = |a: &Rc<crate::jax::array::Array>| a.aval.ndim();
    if ld == xd && xd == hd {
        let same = lo.aval.shape == x.aval.shape && hi.aval.shape == x.aval.shape;
        if same || (rank(lo) == 0 && rank(hi) == 0) {
            return Ok(vec![(bind(interp, Prim::Clamp, ins)?, *xd)]);
        }
        if let (1, 1, Some(ldim), Some(hdim)) = (rank(lo), rank(hi), ld, hd) {
            let shape = x.aval.shape.to_vec();
            let lo = broadcast_in_dim(interp, lo, &shape, &[*ldim])?;
            let hi = broadcast_in_dim(interp, hi, &shape, &[*hdim])?;
            return Ok(vec![(bind(interp, Prim::Clamp, &[lo, x.clone(), hi])?, *xd)]);
        }
    } else if rank(lo) == 0 && rank(hi) == 0 && xd.is_some() {
        return Ok(vec![(bind(interp, Prim::Clamp, ins)?, *xd)]);
    }
    let front = |interp: &mut crate::interp::Interp, a: &Rc<crate::jax::array::Array>, d: BDim| {
        if a.aval.ndim() > 0 {
            batching::bdim_at_front(interp, a, d, size)
        } else {
            Ok(a.clone())
        }
    };
    let (mut lo, mut x, mut hi) = (front(interp, lo, *ld)?, front(interp, x, *xd)?, front(interp, hi, *hd)?);
    let xs = x.aval.shape.to_vec();
    for b in [&mut lo, &mut hi] {
        if x.aval.ndim() > 0 && b.aval.ndim() == 0 {
            *b = crate::jax::ad::broadcast_to(interp, b, &xs)?;
        } else if 0 < b.aval.ndim() && b.aval.ndim() < x.aval.ndim() {
            *b = broadcast_in_dim(interp, b, &xs, &[0])?;
        }
    }
    if lo.aval.ndim() > x.aval.ndim() {
        let shape = lo.aval.shape.to_vec();
        x = crate::jax::ad::broadcast_to(interp, &x, &shape)?;
    }
    Ok(vec![(bind(interp, Prim::Clamp, &[lo, x, hi])?, Some(0))])
}

/// `select_n(which, *cases)` batched (JAX's `_select_batch_rule`): bound as it is where the
/// batch dimensions agree (a per-example scalar `which` broadcast to the cases), else every
/// operand with its batch dimension first.
fn select_batch(interp: &mut crate::interp::Interp, ins: &[Rc<crate::jax::array::Array>], dims: &[BDim]) -> BatchResult {
    use crate::jax::ad::{bind, broadcast_in_dim};
    let size = batching::axis_size(ins, dims)?;
    let (which, cases) = ins.split_first().ok_or_else(|| crate::jax::ad::AdError::NoRule("select_n without operands".into()))?;
    let (wd, case_dims) = (dims[0], &dims[1..]);
    let first = &cases[0];
    if case_dims.iter().all(|d| *d == wd) {
        let bd = wd.unwrap_or(0);
        let which =
            if which.aval.shape == first.aval.shape { which.clone() } else { broadcast_in_dim(interp, which, &first.aval.shape, &[bd])? };
        let args: Vec<_> = std::iter::once(which).chain(cases.iter().cloned()).collect();
        return Ok(vec![(bind(interp, Prim::Select, &args)?, wd)]);
    }
    if which.aval.ndim() == 0 && case_dims.iter().all(Option::is_some) {
        let bd = case_dims[0].unwrap_or(0);
        if case_dims.iter().all(|d| *d == case_dims[0]) {
            return Ok(vec![(bind(interp, Prim::Select, ins)?, Some(bd))]);
        }
        if cases.iter().all(|c| c.aval.shape == first.aval.shape) {
            let mut args = vec![which.clone(), first.clone()];
            for (c, d) in cases.iter().zip(case_dims).skip(1) {
                args.push(batching::moveaxis(interp, c, d.unwrap_or(0), bd)?);
            }
            return Ok(vec![(bind(interp, Prim::Select, &args)?, Some(bd))]);
        }
    }
    let mut which = if which.aval.ndim() > 0 { batching::bdim_at_front(interp, which, wd, size)? } else { which.clone() };
    let mut cases: Vec<_> = cases.to_vec();
    if !cases.iter().all(|c| c.aval.ndim() == 0) {
        for (c, d) in cases.iter_mut().zip(case_dims) {
            *c = batching::bdim_at_front(interp, c, *d, size)?;
        }
    }
    let case_shape = cases[0].aval.shape.to_vec();
    if which.aval.ndim() > 0 && which.aval.ndim() < case_shape.len() {
        which = broadcast_in_dim(interp, &which, &case_shape, &[0])?;
    }
    if which.aval.ndim() > case_shape.len() {
        let shape = which.aval.shape.to_vec();
        for c in cases.iter_mut() {
            *c = crate::jax::ad::broadcast_to(interp, c, &shape)?;
        }
    }
    let args: Vec<_> = std::iter::once(which).chain(cases).collect();
    Ok(vec![(bind(interp, Prim::Select, &args)?, Some(0))])
}

/// Whether [`batch_rule`] batches `prim`.
pub(crate) fn has_batch_rule(prim: &Prim) -> bool {
    match prim {
        Prim::Unary(_) | Prim::IntegerPow(_) | Prim::ConvertElementType { .. } | Prim::StopGradient => true,
        Prim::Binary(_) | Prim::Compare(_) | Prim::Select => true,
        Prim::Clamp => true,
        families::all_but!(elementwise) => false,
    }
}
