//! The reductions and the primitives that order along one axis (`reduce_sum`, `argmax`,
//! `cumsum`, `sort`, `top_k`): their abstract evaluation, then the CPU kernels of
//! `reduce_*` (in f64, the float32 path's, and XLA's narrow-float `reduce_sum`), `top_k` and
//! `sort`.

use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};
use smallvec::smallvec;

use super::batching::{self, BDim, BatchResult};
use super::elementwise::{max_f64, min_f64};
use super::indexing::zero_fill_gather;
use super::{arg, families, type_error, Jvping, RuleResult, Tangents, Transposing};
use crate::interp::Interp;
use crate::jax::ad::{binary, bind, broadcast_in_dim, compare, mask_as, no_rule, reduce_sum, reshape, scalar, zeros, AdError, AdResult};
use crate::jax::array::{Array, NdData, NdDataF32};
use crate::jax::aval::{shape_tuple, Aval, Shape};
use crate::jax::dtypes::DType;
use crate::jax::eval::{round_to, vectorised};
use crate::jax::ir::{ArgOp, BinaryPrim, CmpPrim, IndexItem, IndexMode, Prim, ReduceOp, ScatterOp};

fn without_axes(x: &Aval, axes: &[usize]) -> Shape {
    // Pushed, not collected (`SmallVec`'s `collect` is its generic `extend`): every reduction's
    // `bind` comes here.
    let mut shape = Shape::new();
    for (i, &n) in x.shape.iter().enumerate() {
        if !axes.contains(&i) {
            shape.push(n);
        }
    }
    shape
}

pub fn reduce(prim: &Prim, ins: &[&Aval], axes: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axes.iter().any(|&a| a >= x.ndim()) {
        return Err(type_error(format!("{} axes {} out of range for operand shape {}", prim.name(), shape_tuple(axes), x.shape_tuple())));
    }
    Ok(smallvec![Aval { shape: without_axes(x, axes), dtype: x.dtype, weak: x.weak }])
}

pub fn arg_reduce(prim: &Prim, ins: &[&Aval], axis: usize, index_dtype: DType) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axis >= x.ndim() || x.shape[axis] == 0 {
        return Err(type_error(format!("{} requires a non-empty axis {axis} of operand shape {}", prim.name(), x.shape_tuple())));
    }
    Ok(smallvec![Aval::new(&without_axes(x, &[axis]), index_dtype)])
}

pub fn cumulative(prim: &Prim, ins: &[&Aval], axis: usize) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axis >= x.ndim() {
        return Err(type_error(format!("{} axis {axis} out of range for operand shape {}", prim.name(), x.shape_tuple())));
    }
    Ok(smallvec![x.clone()])
}

/// `sort(*operands)` along `dimension` by the first `num_keys`: here one equation gives the
/// last operand sorted (the values a `sort` of keys and values is bound for).
pub fn sort(prim: &Prim, ins: &[&Aval], dimension: usize, _num_keys: usize) -> RuleResult {
    let first = arg(prim, ins, 0)?;
    if dimension >= first.ndim() || ins.iter().any(|a| a.shape != first.shape) {
        return Err(type_error(format!(
            "sort operands must have the same shape and a dimension {dimension} below their rank, got {}",
            ins.iter().map(|a| a.shape_tuple()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(smallvec![(*ins[ins.len() - 1]).clone()])
}

/// `top_k`'s values (or, with `indices`, their `int32` indices): the last axis cut to `k`.
pub fn top_k(prim: &Prim, ins: &[&Aval], k: usize, indices: bool) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let Some(&last) = x.shape.last() else {
        return Err(type_error("top_k operand must have >= 1 dimension, got ()"));
    };
    if k > last {
        return Err(type_error(format!("k argument to top_k must be no larger than minor dimension; {k} vs {}", x.shape_tuple())));
    }
    let mut shape = x.shape.to_vec();
    *shape.last_mut().unwrap_or(&mut 0) = k;
    Ok(smallvec![if indices { Aval::new(&shape, DType::I32) } else { x.with_shape(&shape) }])
}

// ---------------------------------------------------------------------------------------
// The CPU kernels of `reduce_*`.

/// `reduce_*` over `axes`, in f64: sums and products accumulate there and are rounded to the
/// dtype once, at the end.
/// The kernel in f64 of a reduction, a cumulative reduction, `top_k` or `sort`; `None` for
/// a case without a kernel.
pub(crate) fn kernel(prim: &Prim, ins: &[Rc<NdData>], out_shape: &[usize], out_dtype: DType) -> Option<NdData> {
    Some(match prim {
        Prim::Reduce { op: ReduceOp::Sum, axes } if matches!(out_dtype, DType::BF16 | DType::F16) => {
            reduce_sum_narrow(&ins[0], axes, out_dtype)?
        }
        Prim::Reduce { op, axes } => reduce_kernel((*ins[0]).clone(), op, axes),
        Prim::ArgReduce { op, axis, .. } => ins[0].map_axis(Axis(*axis), |l| {
            let mut best = 0usize;
            for (i, &x) in l.iter().enumerate() {
                let b = l[best];
                if b.is_nan() {
                    break;
                }
                let better = x.is_nan() || if *op == ArgOp::Max { x > b } else { x < b };
                if better {
                    best = i;
                }
            }
            best as f64
        }),
        Prim::Cumulative { axis, .. } if *axis >= ins[0].ndim() => return None,
        Prim::Cumulative { op, axis, reverse } => {
            let mut a = (*ins[0]).clone();
            if *reverse {
                a.invert_axis(Axis(*axis));
            }
            for mut lane in a.lanes_mut(Axis(*axis)) {
                let mut acc: Option<f64> = None;
                for x in lane.iter_mut() {
                    let v = match (acc, op) {
                        (None, _) => *x,
                        (Some(p), ReduceOp::Sum) => p + *x,
                        (Some(p), ReduceOp::Prod) => p * *x,
                        // NaN propagates, as in `lax.max`/`lax.min`.
                        (Some(p), ReduceOp::Max) => max_f64(p, *x),
                        (Some(p), _) => min_f64(p, *x),
                    };
                    *x = v;
                    acc = Some(v);
                }
            }
            if *reverse {
                a.invert_axis(Axis(*axis));
            }
            a.as_standard_layout().to_owned()
        }
        Prim::TopK { k } | Prim::TopKIndices { k } => top_k_kernel(&ins[0], *k, matches!(prim, Prim::TopKIndices { .. }), out_shape)?,
        // `sort` of one operand sorts it; of two (`argsort`, the JVP of `sort`), it orders
        // the second by the keys of the first and gives that. Stable, NaN last.
        Prim::Sort { dimension, .. } if ins.len() <= 2 => {
            sort_by_keys(&ins[0], &ins[ins.len() - 1], *dimension, |x: &f64, y: &f64| match (x.is_nan(), y.is_nan()) {
                (false, false) => x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal),
                (nan_x, nan_y) => nan_x.cmp(&nan_y),
            })?
        }
        Prim::Sort { .. } | families::all_but!(reductions) => return None,
    })
}

/// The float32 path's kernel of a reduction; `None` leaves the others to [`kernel`].
pub(crate) fn kernel_f32(prim: &Prim, ins: &[NdDataF32], out_shape: &[usize], out_dtype: DType) -> Option<(NdDataF32, bool)> {
    let store = move |y: f64| round_to(y, out_dtype) as f32;
    let Prim::Reduce { op, axes } = prim else { return None };
    let out = match reduce_f32(&ins[0], op, axes, out_shape) {
        Some(out) => out,
        None => reduce_kernel(ins[0].mapv(f64::from), op, axes).mapv(store).into_shared(),
    };
    Some((out, false))
}

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

// ---------------------------------------------------------------------------------------
// The derivative rules: `reduce_sum` and `cumsum` are linear; `reduce_max`/`reduce_min` share
// the tangent among the places that tie for the result; `sort` and `top_k` move it with
// the elements.

/// The JVP rule of a primitive of this family: the output's tangent from the operand's.
pub(crate) fn jvp_rule(interp: &mut Interp, j: Jvping) -> Tangents {
    let Jvping { eqn, ins, out, ts } = j;
    let out_aval = &out.aval;
    let t = match &eqn.prim {
        Prim::Reduce { op: ReduceOp::Sum, .. } | Prim::Cumulative { op: ReduceOp::Sum, .. } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            bind(interp, eqn.prim.clone(), std::slice::from_ref(t))?
        }
        Prim::Reduce { op: ReduceOp::Max | ReduceOp::Min, axes } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            let (loc, counts) = chooser_locations(interp, &ins[0], out, axes)?;
            let masked = binary(interp, BinaryPrim::Mul, t, &loc)?;
            let picked = reduce_sum(interp, &masked, axes)?;
            binary(interp, BinaryPrim::Div, &picked, &counts)?
        }
        // The tangent goes where its element goes: sorted by the keys of the operand.
        Prim::Sort { num_keys: 1, .. } if ins.len() == 1 => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            bind(interp, eqn.prim.clone(), &[ins[0].clone(), t.clone()])?
        }
        Prim::TopK { k } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            let places = TopKPlaces::new(interp, &ins[0], *k, out_aval)?;
            let mut operands = vec![t.clone()];
            operands.extend(places.arrays.iter().cloned());
            bind(interp, zero_fill_gather(IndexMode::PromiseInBounds, &places.index), &operands)?
        }
        Prim::Reduce { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Sort { .. }
        | Prim::TopKIndices { .. }
        | families::all_but!(reductions) => return Err(no_rule(eqn)),
    };
    Ok(vec![Some(t)])
}

/// The transpose rule of a primitive of this family: the cotangent of the operand.
pub(crate) fn transpose_rule(interp: &mut Interp, t: Transposing, cts: &mut [Option<Rc<Array>>]) -> AdResult<()> {
    let Transposing { eqn, ins, out, g, active } = t;
    let in_shape = |i: usize| ins[i].aval.shape.to_vec();
    match &eqn.prim {
        Prim::Reduce { op: ReduceOp::Sum, axes } => {
            let kept: Vec<usize> = (0..ins[0].aval.ndim()).filter(|d| !axes.contains(d)).collect();
            cts[0] = Some(broadcast_in_dim(interp, g, &in_shape(0), &kept)?);
        }
        Prim::Reduce { op: ReduceOp::Max | ReduceOp::Min, axes } => {
            let (loc, counts) = chooser_locations(interp, &ins[0], out, axes)?;
            let share = binary(interp, BinaryPrim::Div, g, &counts)?;
            let kept: Vec<usize> = (0..ins[0].aval.ndim()).filter(|d| !axes.contains(d)).collect();
            let spread = broadcast_in_dim(interp, &share, &in_shape(0), &kept)?;
            cts[0] = Some(binary(interp, BinaryPrim::Mul, &spread, &loc)?);
        }
        Prim::Cumulative { op: ReduceOp::Sum, axis, reverse } => {
            let prim = Prim::Cumulative { op: ReduceOp::Sum, axis: *axis, reverse: !reverse };
            cts[0] = Some(bind(interp, prim, std::slice::from_ref(g))?);
        }
        // Each cotangent goes back to where its element came from: `perm = argsort(x)`,
        // `ct[perm] = g` (1-D; other ranks have no rule yet).
        // JAX's sort JVP gathers the tangent where an iota sorted along with the keys says each
        // element came from; the transpose adds the cotangent back at those places. For any rank
        // and axis the places are flat indices into the operand: the sorted iota on the sorted
        // axis, each other axis' own iota, times the strides.
        Prim::Sort { dimension, num_keys: 1 } if ins.len() == 1 && *dimension < ins[0].aval.ndim() => {
            if active[0] {
                let shape = in_shape(0);
                let iota = |interp: &mut Interp, dimension: usize| {
                    bind(interp, Prim::Iota { dtype: DType::I32, shape: shape.clone(), dimension }, &[])
                };
                let sorted_iota = iota(interp, *dimension)?;
                let perm = bind(interp, eqn.prim.clone(), &[ins[0].clone(), sorted_iota])?;
                let mut flat: Option<Rc<Array>> = None;
                let mut stride = 1usize;
                for axis in (0..shape.len()).rev() {
                    let coord = if axis == *dimension { perm.clone() } else { iota(interp, axis)? };
                    let term = match stride {
                        1 => coord,
                        _ => binary(interp, BinaryPrim::Mul, &coord, &scalar(stride as f64, &Aval::scalar(DType::I32)))?,
                    };
                    flat = Some(match flat {
                        Some(sum) => binary(interp, BinaryPrim::Add, &sum, &term)?,
                        None => term,
                    });
                    stride *= shape[axis];
                }
                let places = match flat {
                    Some(f) => reshape(interp, &f, &[stride])?,
                    None => return Err(no_rule(eqn)),
                };
                let flat_aval = Aval::new(&[stride], ins[0].aval.dtype).weak(ins[0].aval.weak);
                let operands = [zeros(interp, &flat_aval)?, reshape(interp, g, &[stride])?, places];
                let prim =
                    Prim::Scatter { op: ScatterOp::Add, mode: IndexMode::Clip, index: Some(vec![IndexItem::Array]), unique_indices: false };
                let summed = bind(interp, prim, &operands)?;
                cts[0] = Some(reshape(interp, &summed, &shape)?);
            }
        }
        Prim::TopK { k } => {
            if active[0] {
                let places = TopKPlaces::new(interp, &ins[0], *k, &out.aval)?;
                let aval = ins[0].aval.clone().weak(false);
                let mut operands = vec![zeros(interp, &aval)?, g.clone()];
                operands.extend(places.arrays);
                let prim = Prim::Scatter {
                    op: ScatterOp::Add,
                    mode: IndexMode::PromiseInBounds,
                    index: Some(places.index),
                    unique_indices: false,
                };
                cts[0] = Some(bind(interp, prim, &operands)?);
            }
        }
        Prim::Reduce { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Sort { .. }
        | Prim::TopKIndices { .. }
        | families::all_but!(reductions) => return Err(no_rule(eqn)),
    }
    Ok(())
}

/// `reduce_max`/`reduce_min`: 0/1 locations of the chosen elements (ties share) and their
/// counts per output element (JAX's `_reduce_chooser_jvp_rule`).
fn chooser_locations(interp: &mut Interp, x: &Rc<Array>, out: &Rc<Array>, axes: &[usize]) -> AdResult<(Rc<Array>, Rc<Array>)> {
    let kept: Vec<usize> = (0..x.aval.ndim()).filter(|d| !axes.contains(d)).collect();
    let ob = broadcast_in_dim(interp, out, &x.aval.shape, &kept)?;
    let eq = compare(interp, CmpPrim::Eq, x, &ob)?;
    let loc = mask_as(interp, &eq, x.aval.dtype, false)?;
    let counts = reduce_sum(interp, &loc, axes)?;
    Ok((loc, counts))
}

/// Where `lax.top_k` found its values, as the index arrays of a gather: the position itself
/// along every axis but the last, `top_k`'s indices along it. JAX's `_top_k_jvp` gathers the
/// tangent there; its transpose adds the cotangent back into zeros at the same places.
struct TopKPlaces {
    index: Vec<IndexItem>,
    arrays: Vec<Rc<Array>>,
}

impl TopKPlaces {
    fn new(interp: &mut Interp, x: &Rc<Array>, k: usize, out: &Aval) -> AdResult<TopKPlaces> {
        let nd = out.ndim();
        let last = nd.checked_sub(1).ok_or_else(|| AdError::NoRule("top_k of a scalar".into()))?;
        let mut arrays = Vec::with_capacity(nd);
        for d in 0..last {
            let mut shape = vec![1; nd];
            shape[d] = out.shape[d];
            arrays.push(Array::built(Aval::new(&shape, DType::I32), || {
                ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&shape), |i| i[d] as f64)
            }));
        }
        arrays.push(bind(interp, Prim::TopKIndices { k }, std::slice::from_ref(x))?);
        Ok(TopKPlaces { index: vec![IndexItem::Array; nd], arrays })
    }
}

/// The batching rules (`prims::batch`; JAX's `reducer_batcher` and `_cumred_batch_rule`):
/// the axes reduced or scanned shifted past the batch dimension, which stays where it was
/// among the axes left; `sort` (JAX's `_sort_batch_rule`) and `top_k` below.
pub(crate) fn batch_rule(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    if let Prim::Sort { dimension, num_keys } = prim {
        return sort_batch(interp, ins, dims, *dimension, *num_keys);
    }
    let (x, bd) = batching::single(ins, dims)?;
    let shifted = |axes: &[usize]| -> (Vec<usize>, usize) {
        let axes: Vec<usize> = axes.iter().map(|&a| batching::bump(a, bd)).collect();
        let out = (0..x.aval.ndim()).filter(|i| !axes.contains(i)).position(|i| i == bd).unwrap_or(0);
        (axes, out)
    };
    let (prim, out) = match prim {
        Prim::Reduce { op, axes } => {
            let (axes, out) = shifted(axes);
            (Prim::Reduce { op: *op, axes }, Some(out))
        }
        Prim::ArgReduce { op, axis, index_dtype } => {
            let (axes, out) = shifted(&[*axis]);
            (Prim::ArgReduce { op: *op, axis: axes[0], index_dtype: *index_dtype }, Some(out))
        }
        Prim::Cumulative { op, axis, reverse } => {
            (Prim::Cumulative { op: *op, axis: batching::bump(*axis, bd), reverse: *reverse }, Some(bd))
        }
        // Along the last axis: where the batch dimension is the last, it is moved to the
        // front (JAX's `top_k` takes an `axis` and shifts it past the batch dimension).
        Prim::TopK { .. } | Prim::TopKIndices { .. } => {
            let last = x.aval.ndim() - 1;
            if bd == last {
                let front = batching::moveaxis(interp, x, bd, 0)?;
                return Ok(vec![(bind(interp, prim.clone(), &[front])?, Some(0))]);
            }
            (prim.clone(), Some(bd))
        }
        Prim::Sort { .. } | families::all_but!(reductions) => return Err(AdError::NoRule(prim.name())),
    };
    Ok(vec![(bind(interp, prim, &[x.clone()])?, out)])
}

/// `sort` batched (JAX's `_sort_batch_rule`): every operand with the batch dimension of the
/// first mapped one (an unmapped operand broadcast there), the sorted axis shifted past it.
fn sort_batch(interp: &mut Interp, ins: &[Rc<Array>], dims: &[BDim], dimension: usize, num_keys: usize) -> BatchResult {
    let (proto, bd) = ins.iter().zip(dims).find_map(|(x, d)| d.map(|d| (x.clone(), d))).ok_or_else(|| AdError::NoRule("sort".into()))?;
    let mut args = Vec::with_capacity(ins.len());
    for (x, d) in ins.iter().zip(dims) {
        args.push(match d {
            Some(d) => batching::moveaxis(interp, x, *d, bd)?,
            None => {
                let keep: Vec<usize> = (0..proto.aval.ndim()).filter(|&i| i != bd).collect();
                crate::jax::ad::broadcast_in_dim(interp, x, &proto.aval.shape, &keep)?
            }
        });
    }
    let dimension = dimension + usize::from(bd <= dimension);
    let outs = crate::jax::apply(interp, Prim::Sort { dimension, num_keys }, &args)?;
    Ok(outs.into_iter().map(|o| (o, Some(bd))).collect())
}

/// Whether [`batch_rule`] batches `prim`.
pub(crate) fn has_batch_rule(prim: &Prim) -> bool {
    match prim {
        Prim::Reduce { .. } | Prim::ArgReduce { .. } | Prim::Cumulative { .. } => true,
        Prim::Sort { .. } | Prim::TopK { .. } | Prim::TopKIndices { .. } => true,
        families::all_but!(reductions) => false,
    }
}
