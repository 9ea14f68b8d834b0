//! The reductions and the primitives that order along one axis (`reduce_sum`, `argmax`,
//! `cumsum`, `sort`, `top_k`): their abstract evaluation, then the CPU kernels of
//! `reduce_*` (in f64, the float32 path's, and XLA's narrow-float `reduce_sum`), `top_k` and
//! `sort`.

use ndarray::{ArrayD, Axis, IxDyn};

use super::{arg, type_error, RuleResult};
use crate::jax::array::{NdData, NdDataF32};
use crate::jax::aval::{shape_tuple, Aval};
use crate::jax::dtypes::DType;
use crate::jax::eval::{round_to, vectorised};
use crate::jax::ir::{Prim, ReduceOp};

fn without_axes(x: &Aval, axes: &[usize]) -> Vec<usize> {
    x.shape.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &n)| n).collect()
}

pub fn reduce(prim: &Prim, ins: &[Aval], axes: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axes.iter().any(|&a| a >= x.ndim()) {
        return Err(type_error(format!("{} axes {} out of range for operand shape {}", prim.name(), shape_tuple(axes), x.shape_tuple())));
    }
    Ok(vec![x.with_shape(&without_axes(x, axes))])
}

pub fn arg_reduce(prim: &Prim, ins: &[Aval], axis: usize, index_dtype: DType) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axis >= x.ndim() || x.shape[axis] == 0 {
        return Err(type_error(format!("{} requires a non-empty axis {axis} of operand shape {}", prim.name(), x.shape_tuple())));
    }
    Ok(vec![Aval::new(&without_axes(x, &[axis]), index_dtype)])
}

pub fn cumulative(prim: &Prim, ins: &[Aval], axis: usize) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axis >= x.ndim() {
        return Err(type_error(format!("{} axis {axis} out of range for operand shape {}", prim.name(), x.shape_tuple())));
    }
    Ok(vec![x.clone()])
}

/// `sort(*operands)` along `dimension` by the first `num_keys`: here one equation gives the
/// last operand sorted (the values a `sort` of keys and values is bound for).
pub fn sort(prim: &Prim, ins: &[Aval], dimension: usize, _num_keys: usize) -> RuleResult {
    let first = arg(prim, ins, 0)?;
    if dimension >= first.ndim() || ins.iter().any(|a| a.shape != first.shape) {
        return Err(type_error(format!(
            "sort operands must have the same shape and a dimension {dimension} below their rank, got {}",
            ins.iter().map(|a| a.shape_tuple()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(vec![ins[ins.len() - 1].clone()])
}

/// `top_k`'s values (or, with `indices`, their `int32` indices): the last axis cut to `k`.
pub fn top_k(prim: &Prim, ins: &[Aval], k: usize, indices: bool) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let Some(&last) = x.shape.last() else {
        return Err(type_error("top_k operand must have >= 1 dimension, got ()"));
    };
    if k > last {
        return Err(type_error(format!("k argument to top_k must be no larger than minor dimension; {k} vs {}", x.shape_tuple())));
    }
    let mut shape = x.shape.to_vec();
    *shape.last_mut().unwrap_or(&mut 0) = k;
    Ok(vec![if indices { Aval::new(&shape, DType::I32) } else { x.with_shape(&shape) }])
}

// ---------------------------------------------------------------------------------------
// The CPU kernels of `reduce_*`.

/// `reduce_*` over `axes`, in f64: sums and products accumulate there and are rounded to the
/// dtype once, at the end.
pub(crate) fn reduce_kernel(mut a: NdData, op: &ReduceOp, axes: &[usize]) -> NdData {
    let mut axes = axes.to_vec();
    axes.sort_unstable();
    for &ax in axes.iter().rev() {
        a = match op {
            ReduceOp::Sum => a.sum_axis(Axis(ax)),
            ReduceOp::Prod => a.map_axis(Axis(ax), |l| l.iter().product()),
            ReduceOp::Max => a.map_axis(Axis(ax), |l| {
                l.iter().fold(f64::NEG_INFINITY, |m, &x| if x.is_nan() || m.is_nan() { f64::NAN } else { m.max(x) })
            }),
            ReduceOp::Min => {
                a.map_axis(Axis(ax), |l| l.iter().fold(f64::INFINITY, |m, &x| if x.is_nan() || m.is_nan() { f64::NAN } else { m.min(x) }))
            }
            ReduceOp::And => a.map_axis(Axis(ax), |l| l.iter().all(|&x| x != 0.0) as i64 as f64),
            ReduceOp::Or => a.map_axis(Axis(ax), |l| l.iter().any(|&x| x != 0.0) as i64 as f64),
        };
    }
    a
}

/// `reduce_sum` bound on bfloat16 or float16 data (the transpose of a broadcast, `lax`
/// calls; `jnp.sum` widens to float32 first): XLA on CPU adds in the narrow type, rounding
/// after every addition, in order along the reduced elements (row-major over `axes`), and
/// splits more than 32 of them into ceil(n / 32) equal runs whose sums it adds the same
/// way (its tree-reduction rewrite). Checked against JAX for up to 37 elements; longer
/// reductions are within a few ulp of it.
pub(crate) fn reduce_sum_narrow(a: &NdData, axes: &[usize], dtype: DType) -> Option<NdData> {
    fn run(values: &[f64], dtype: DType) -> f64 {
        const WINDOW: usize = 32;
        if values.len() <= WINDOW {
            return values.iter().fold(0.0, |acc, &x| round_to(acc + x, dtype));
        }
        let runs = values.len().div_ceil(WINDOW);
        let width = values.len().div_ceil(runs);
        let partial: Vec<f64> = values.chunks(width).map(|c| run(c, dtype)).collect();
        run(&partial, dtype)
    }
    let kept: Vec<usize> = (0..a.ndim()).filter(|d| !axes.contains(d)).collect();
    let mut sorted = axes.to_vec();
    sorted.sort_unstable();
    let perm: Vec<usize> = kept.iter().chain(&sorted).copied().collect();
    let out_shape: Vec<usize> = kept.iter().map(|&d| a.shape()[d]).collect();
    let n: usize = sorted.iter().map(|&d| a.shape()[d]).product();
    let m: usize = out_shape.iter().product();
    let moved = a.view().permuted_axes(IxDyn(&perm));
    let flat: Vec<f64> = moved.iter().copied().collect();
    let sums: Vec<f64> = if n == 0 { vec![0.0; m] } else { flat.chunks(n).map(|lane| run(lane, dtype)).collect() };
    ArrayD::from_shape_vec(IxDyn(&out_shape), sums).ok()
}

/// `reduce_sum`/`max`/`min` of row-major float32 data over one axis, accumulating in f64
/// exactly as `reduce` does (in the same order: lane sums for the innermost axis, row after
/// row otherwise), without first widening the whole operand. `None` for the other cases.
pub(crate) fn reduce_f32(a: &NdDataF32, op: &ReduceOp, axes: &[usize], out_shape: &[usize]) -> Option<NdDataF32> {
    let (&[axis], Some(data)) = (axes, a.as_slice()) else { return None };
    let shape = a.shape();
    let len = *shape.get(axis)?;
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    // No data (an empty outer axis) is left to the general reduction: the lane buffer is as
    // long as the reduced axis, which an empty array may still have huge.
    if data.is_empty() || len == 0 || inner == 0 || outer * inner != out_shape.iter().product::<usize>() {
        return None;
    }
    let out = vectorised(
        #[inline(always)]
        || match op {
            ReduceOp::Sum if inner > 1 => Some(reduce_rows(data, len, inner, 0.0, |acc, x| acc + x)),
            ReduceOp::Sum => Some(sum_lanes(data, len)),
            ReduceOp::Max => {
                Some(reduce_rows(data, len, inner, f64::NEG_INFINITY, |m, x| if x.is_nan() || m.is_nan() { f64::NAN } else { m.max(x) }))
            }
            ReduceOp::Min => {
                Some(reduce_rows(data, len, inner, f64::INFINITY, |m, x| if x.is_nan() || m.is_nan() { f64::NAN } else { m.min(x) }))
            }
            _ => None,
        },
    )?;
    ArrayD::from_shape_vec(IxDyn(out_shape), out).ok().map(|a| a.into_shared())
}

/// Sums of each contiguous lane of `len` values, in f64 and rounded to float32 once.
#[inline(always)]
fn sum_lanes(data: &[f32], len: usize) -> Vec<f32> {
    // ndarray sums a contiguous lane with several partial sums: the same, on a copy of the
    // lane in f64.
    let mut lane = vec![0.0f64; len];
    let mut out = Vec::with_capacity(data.len() / len);
    for chunk in data.chunks_exact(len) {
        for (l, &x) in lane.iter_mut().zip(chunk) {
            *l = f64::from(x);
        }
        out.push(round_to(ndarray::aview1(&lane).sum(), DType::F32) as f32);
    }
    out
}

/// `fold` from `start` over the `len` rows of `inner` values of each block of `data`, row
/// after row, in f64, each result rounded to float32 once.
#[inline(always)]
fn reduce_rows(data: &[f32], len: usize, inner: usize, start: f64, fold: impl Fn(f64, f64) -> f64) -> Vec<f32> {
    let mut out = Vec::with_capacity(data.len() / len);
    let mut acc = vec![start; inner];
    for block in data.chunks_exact(len * inner) {
        acc.fill(start);
        for row in block.chunks_exact(inner) {
            for (a, &x) in acc.iter_mut().zip(row) {
                *a = fold(*a, f64::from(x));
            }
        }
        out.extend(acc.iter().map(|&x| round_to(x, DType::F32) as f32));
    }
    out
}

/// `lax.top_k` along the last axis: the `k` largest elements of each row in XLA's total order
/// (`nan` above `inf`, `0.` above `-0.`, `-nan` below `-inf`), equal ones in index order; their
/// values, or their `indices`.
pub(crate) fn top_k_kernel(x: &NdData, k: usize, indices: bool, out_shape: &[usize]) -> Option<NdData> {
    let last = x.ndim().checked_sub(1)?;
    let mut out = ArrayD::zeros(IxDyn(out_shape));
    if out.ndim() != x.ndim() || out_shape[last] != k || k > x.shape()[last] {
        return None;
    }
    for (row, mut dst) in x.lanes(Axis(last)).into_iter().zip(out.lanes_mut(Axis(last))) {
        let mut order: Vec<usize> = (0..row.len()).collect();
        // Stable: equal elements keep their index order.
        order.sort_by(|&i, &j| row[j].total_cmp(&row[i]));
        for (d, &i) in dst.iter_mut().zip(&order) {
            *d = if indices { i as f64 } else { row[i] };
        }
    }
    Some(out)
}

/// `values` ordered along `dimension` as a stable sort orders `keys` by `cmp`: `sort` of one
/// operand (`values` is `keys`), or `argsort`'s second operand. `None` when the shapes differ.
pub(crate) fn sort_by_keys<T: Copy>(
    keys: &ArrayD<T>,
    values: &ArrayD<T>,
    dimension: usize,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Option<ArrayD<T>> {
    let mut out = values.clone();
    if out.shape() != keys.shape() {
        return None;
    }
    for (key_lane, mut lane) in keys.lanes(Axis(dimension)).into_iter().zip(out.lanes_mut(Axis(dimension))) {
        let mut order: Vec<usize> = (0..key_lane.len()).collect();
        order.sort_by(|&i, &j| cmp(&key_lane[i], &key_lane[j]));
        let sorted: Vec<T> = order.iter().map(|&i| lane[i]).collect();
        lane.iter_mut().zip(sorted).for_each(|(dst, src)| *dst = src);
    }
    Some(out)
}
