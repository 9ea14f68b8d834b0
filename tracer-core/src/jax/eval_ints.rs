//! Exact integers: the kernels for int64 and uint64 values from 2**53 on.
//!
//! The evaluator holds elements as f64 (array.rs), which is exact for every integer below
//! 2**53. An int64 or uint64 array holding a larger value (a literal such as `2**60`, or a
//! result such as `2**52 * 4 + 1`) is held in i128 instead, as `Lazy::ReadyInts`, and the
//! operations on it run here, with XLA's integer semantics: two's complement wrapping to the
//! dtype, division toward zero, shifts past the width. A result whose values all fit below
//! 2**53 goes back to f64, so everything downstream of it runs on the usual kernels; an
//! operation without a kernel here leaves its result not computed, never wrong.

use crate::jax::prims::families;
use std::rc::Rc;

use ndarray::{Axis, IxDyn};

use super::array::NdData;
use super::dtypes::DType;
use super::eval;
use super::ir::{ArgOp, BinaryPrim, CmpPrim, Prim, ReduceOp, UnaryPrim};
use super::prims::indexing::kernels as indexing;
use super::prims::products::{dot_general_kernel, DotDims};

/// Integer elements held exactly: every int64 and uint64 value fits an i128, and so does
/// the product of two of them before it is wrapped.
pub use super::array::NdInts;
pub use super::rounding::wrap;

/// 2**53: from here on an f64 no longer holds every integer.
const F64_EXACT: i128 = 1 << 53;

/// Whether integer data of `dtype` fits f64 exactly, so that it can be held as `NdData`.
pub fn fits_f64(d: &NdInts) -> bool {
    d.iter().all(|&v| v.abs() < F64_EXACT)
}

/// f64-held integer or bool data as exact integers (exact: such data is below 2**53).
pub fn from_f64(d: &NdData) -> NdInts {
    d.mapv(|x| x as i128)
}

/// Exact integers as f64 data (the caller checks `fits_f64` when it needs exactness).
pub fn to_f64(d: &NdInts) -> NdData {
    d.mapv(|v| v as f64)
}

/// What an operation on exact integers gives: integers (wrapped to the result's dtype), or
/// floats and bools (a comparison, a conversion), which f64 holds as usual.
pub enum Computed {
    Ints(NdInts),
    Floats(NdData),
}

/// The result of `prim` on exact-integer inputs, or `None` when it has no kernel here.
pub fn kernel(prim: &Prim, ins: &[Rc<NdInts>], in_dtypes: &[DType], out_shape: &[usize], out_dtype: DType) -> Option<Computed> {
    if let Some(moved) = crate::jax::prims::shape::rearrange(prim, ins, out_shape, |&v| i64::try_from(v).unwrap_or(i64::MAX)) {
        return Some(Computed::Ints(moved));
    }
    // `x[idx]`, `jnp.take`, `.at[].get`: an index past 2**53 is out of bounds whatever its
    // rounding, so the indices go to f64; JAX's default fill of int64 is -2**63.
    if let Prim::Gather { mode, fill_value, index } = prim {
        let indices: Vec<Rc<NdData>> = ins.get(1..)?.iter().map(|d| Rc::new(to_f64(d))).collect();
        let fill = || indexing::fill_integer(*fill_value, out_dtype);
        return indexing::gather_elements(ins.first()?, &indices, index, *mode, out_shape, fill).map(Computed::Ints);
    }
    let in_dtype = *in_dtypes.first()?;
    if !(in_dtype.is_integer() || in_dtype.is_bool()) {
        return None;
    }
    let bits = in_dtype.bits() as i128;
    let ints = |d: NdInts| Some(Computed::Ints(d.mapv(|v| wrap(v, out_dtype))));
    match prim {
        Prim::Unary(u) => {
            let f: fn(i128) -> i128 = match u {
                UnaryPrim::Neg => |x| -x,
                UnaryPrim::Abs => i128::abs,
                UnaryPrim::Sign => i128::signum,
                UnaryPrim::Square => |x| x * x,
                // Logical on bools, bitwise on integers.
                UnaryPrim::Not if out_dtype.is_bool() => |x| i128::from(x == 0),
                UnaryPrim::Not => |x| !x,
                UnaryPrim::Copy => |x| x,
                _ => return None,
            };
            ints(ins[0].mapv(f))
        }
        Prim::IntegerPow(y) => {
            let y = u32::try_from(*y).ok()?;
            ints(ins[0].mapv(|x| power(x, y, out_dtype)))
        }
        Prim::Binary(b) => {
            let f: Box<dyn Fn(i128, i128) -> i128> = match b {
                BinaryPrim::Add => Box::new(|x, y| x + y),
                BinaryPrim::Sub => Box::new(|x, y| x - y),
                BinaryPrim::Mul => Box::new(|x, y| x.wrapping_mul(y)),
                // Toward zero; by zero, 0 (as the f64-held kernels give it).
                BinaryPrim::Div => Box::new(|x, y| if y == 0 { 0 } else { x / y }),
                BinaryPrim::Rem => Box::new(|x, y| if y == 0 { 0 } else { x % y }),
                BinaryPrim::Max => Box::new(|x: i128, y| x.max(y)),
                BinaryPrim::Min => Box::new(|x: i128, y| x.min(y)),
                BinaryPrim::And => Box::new(|x, y| x & y),
                BinaryPrim::Or => Box::new(|x, y| x | y),
                BinaryPrim::Xor => Box::new(|x, y| x ^ y),
                // A shift by the width or more (or a negative one) shifts everything out.
                BinaryPrim::ShiftLeft => Box::new(move |x, y| if (0..bits).contains(&y) { x << y } else { 0 }),
                BinaryPrim::ShiftRightArithmetic => Box::new(move |x, y| {
                    if (0..bits).contains(&y) {
                        x >> y
                    } else if x < 0 {
                        -1
                    } else {
                        0
                    }
                }),
                BinaryPrim::ShiftRightLogical => Box::new(move |x, y| {
                    let unsigned = x & ((1i128 << bits) - 1);
                    if (0..bits).contains(&y) {
                        unsigned >> y
                    } else {
                        0
                    }
                }),
                BinaryPrim::Pow => Box::new(move |x, y| u32::try_from(y).map_or(0, |y| power(x, y, out_dtype))),
                _ => return None,
            };
            ints(zip(&ins[0], &ins[1], out_shape, f)?)
        }
        Prim::Compare(c) => {
            let f: fn(&i128, &i128) -> bool = match c {
                CmpPrim::Eq => i128::eq,
                CmpPrim::Ne => i128::ne,
                CmpPrim::Lt => i128::lt,
                CmpPrim::Le => i128::le,
                CmpPrim::Gt => i128::gt,
                CmpPrim::Ge => i128::ge,
            };
            Some(Computed::Floats(to_f64(&zip(&ins[0], &ins[1], out_shape, |x, y| i128::from(f(&x, &y)))?)))
        }
        Prim::Select if ins.len() == 3 => {
            let shape = IxDyn(out_shape);
            let (p, f, t) = (ins[0].broadcast(shape.clone())?, ins[1].broadcast(shape.clone())?, ins[2].broadcast(shape)?);
            ints(ndarray::Zip::from(&p).and(&f).and(&t).map_collect(|&p, &f, &t| if p != 0 { t } else { f }))
        }
        Prim::Clamp => {
            let shape = IxDyn(out_shape);
            let (lo, x, hi) = (ins[0].broadcast(shape.clone())?, ins[1].broadcast(shape.clone())?, ins[2].broadcast(shape)?);
            ints(ndarray::Zip::from(&lo).and(&x).and(&hi).map_collect(|&l, &x, &h| x.max(l).min(h)))
        }
        Prim::ConvertElementType { .. } if out_dtype.is_integer() || out_dtype.is_bool() => ints((*ins[0]).clone()),
        // To a float: rounded to nearest (even on ties), as XLA converts.
        Prim::ConvertElementType { .. } if out_dtype.is_floating() => {
            Some(Computed::Floats(ins[0].mapv(|v| eval::round_to(v as f64, out_dtype))))
        }
        Prim::StopGradient => ints((*ins[0]).clone()),
        Prim::Reduce { op, axes } => {
            let mut a = (*ins[0]).clone();
            let mut axes = axes.clone();
            axes.sort_unstable();
            for &ax in axes.iter().rev() {
                a = a.map_axis(Axis(ax), |lane| match op {
                    ReduceOp::Sum => lane.iter().fold(0, |s, &x| wrap(s + x, out_dtype)),
                    ReduceOp::Prod => lane.iter().fold(1i128, |p, &x| wrap(p.wrapping_mul(x), out_dtype)),
                    // The identities of an empty lane are the dtype's extremes.
                    ReduceOp::Max => lane.iter().copied().max().unwrap_or_else(|| extreme(out_dtype, false)),
                    ReduceOp::Min => lane.iter().copied().min().unwrap_or_else(|| extreme(out_dtype, true)),
                    ReduceOp::And => i128::from(lane.iter().all(|&x| x != 0)),
                    ReduceOp::Or => i128::from(lane.iter().any(|&x| x != 0)),
                });
            }
            ints(a)
        }
        Prim::Cumulative { op, axis, reverse } => {
            let mut a = (*ins[0]).clone();
            for mut lane in a.lanes_mut(Axis(*axis)) {
                let mut acc: Option<i128> = None;
                let mut step = |x: &mut i128| {
                    let v = match (acc, op) {
                        (None, _) => *x,
                        (Some(p), ReduceOp::Sum) => wrap(p + *x, out_dtype),
                        (Some(p), ReduceOp::Prod) => wrap(p.wrapping_mul(*x), out_dtype),
                        (Some(p), ReduceOp::Max) => p.max(*x),
                        (Some(p), _) => p.min(*x),
                    };
                    *x = v;
                    acc = Some(v);
                };
                if *reverse {
                    lane.iter_mut().rev().for_each(&mut step);
                } else {
                    lane.iter_mut().for_each(&mut step);
                }
            }
            ints(a)
        }
        // The first extreme along the axis.
        Prim::ArgReduce { op, axis, .. } => ints(ins[0].map_axis(Axis(*axis), |lane| {
            let mut best = 0usize;
            for (i, &x) in lane.iter().enumerate() {
                if if *op == ArgOp::Max { x > lane[best] } else { x < lane[best] } {
                    best = i;
                }
            }
            best as i128
        })),
        // `sort` of one operand sorts it; of two (`argsort`), orders the second by the first.
        Prim::Sort { dimension, .. } if ins.len() <= 2 => {
            ints(crate::jax::prims::reductions::sort_by_keys(&ins[0], &ins[ins.len() - 1], *dimension, i128::cmp)?)
        }
        Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
            // An integer product through f64 is exact only below 2**53: computed there when
            // every partial sum provably stays below it, else not computed.
            let dims = DotDims { lhs_contract, rhs_contract, lhs_batch, rhs_batch };
            let k: usize = lhs_contract.iter().map(|&d| ins[0].shape()[d]).product();
            let max = |d: &NdInts| d.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0);
            let bound = max(&ins[0]).checked_mul(max(&ins[1]))?.checked_mul(k as u128)?;
            if bound >= F64_EXACT as u128 {
                return None;
            }
            let product = dot_general_kernel(&to_f64(&ins[0]), &to_f64(&ins[1]), &dims, out_shape, DType::F64)?;
            ints(from_f64(&product))
        }
        families::movement!()
        | families::random!()
        | families::control_flow!()
        | families::calls!()
        | Prim::ConvertElementType { .. }
        // `select_n` of more than two cases: the f64-held kernel.
        | Prim::Select
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::Sort { .. }
        | Prim::Gather { .. }
        | Prim::Scatter { .. }
        | Prim::TopK { .. }
        | Prim::TopKIndices { .. }
        | Prim::DebugCallback
        | Prim::Opaque(_)
        | Prim::Linalg(_)
        | Prim::Block(_) => None,
    }
}

/// `x ** y` wrapped to `dtype` at every step, as XLA's repeated squaring does.
fn power(x: i128, y: u32, dtype: DType) -> i128 {
    let (mut base, mut exp, mut acc) = (wrap(x, dtype), y, 1i128);
    while exp > 0 {
        if exp & 1 == 1 {
            acc = wrap(acc.wrapping_mul(base), dtype);
        }
        base = wrap(base.wrapping_mul(base), dtype);
        exp >>= 1;
    }
    acc
}

/// The smallest (`min`) or largest value of an integer dtype.
fn extreme(dtype: DType, min: bool) -> i128 {
    let bits = dtype.bits() as u32;
    match (dtype.is_unsigned(), min) {
        (true, true) => 0,
        (true, false) => (1i128 << bits) - 1,
        (false, true) => -(1i128 << (bits - 1)),
        (false, false) => (1i128 << (bits - 1)) - 1,
    }
}

/// `f` elementwise on `x` and `y` broadcast to `shape`.
fn zip(x: &NdInts, y: &NdInts, shape: &[usize], f: impl Fn(i128, i128) -> i128) -> Option<NdInts> {
    let shape = IxDyn(shape);
    let (x, y) = (x.broadcast(shape.clone())?, y.broadcast(shape)?);
    Some(ndarray::Zip::from(&x).and(&y).map_collect(|&x, &y| f(x, y)))
}
