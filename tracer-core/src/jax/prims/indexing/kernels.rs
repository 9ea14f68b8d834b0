//! NumPy indexing with integer arrays, as `gather` and `scatter` compute it: the shape of a
//! selection `x[items]`, where each of its elements comes from in `x`, and the two kernels
//! (`x[idx]` reads those places, `x.at[idx].add(u)` writes them).
//!
//! JAX's semantics, checked by rows of tests/conformance/gen_ops_golden.py:
//! - negative indices count from the end (`-1` is the last element), except in an
//!   `IndexItem::RawArray` (`jnp.take(mode='clip')`), where they are out of bounds;
//! - `gather` (`x[idx]`) clamps an index still out of bounds to the nearest end under `Clip`
//!   and `PromiseInBounds` (`x[idx]`), and reads the fill value under `FillOrDrop`
//!   (`jnp.take`'s default);
//! - `scatter` (`x.at[idx].op(u)`) drops an update whose index is out of bounds under
//!   `FillOrDrop` (the default of `.at[]`) and `PromiseInBounds` (as XLA on CPU does), and
//!   clamps it under `Clip`;
//! - updates apply in the row-major order of the selection: duplicate indices accumulate for
//!   `add`/`mul`/`min`/`max`, and the last one wins for `set`.

use std::rc::Rc;

use ndarray::{ArrayD, IxDyn};

use crate::jax::array::NdData;
use crate::jax::dtypes::DType;
use crate::jax::eval::wrap_int;
use crate::jax::ir::{FillValue, IndexItem, IndexMode, ScatterOp};

/// What one axis of a selection ranges over.
#[derive(Clone, Copy)]
enum SelectionAxis {
    /// Item `p` of the plan (a slice or a new axis).
    Item(usize),
    /// Axis `k` of the index arrays' broadcast shape.
    Advanced(usize),
}

/// The layout of `x[items]` for an operand of `shape` and index arrays of `index_shapes`.
struct Selection {
    items: Vec<IndexItem>,
    /// The operand axis each item indexes (`None` for a new axis).
    dims: Vec<Option<usize>>,
    broadcast: Vec<usize>,
    axes: Vec<SelectionAxis>,
    shape: Vec<usize>,
}

/// The shape NumPy gives `x[items]`, or why the indexing is invalid.
pub fn selection_shape(shape: &[usize], items: &[IndexItem], index_shapes: &[&[usize]]) -> Result<Vec<usize>, String> {
    selection(shape, items, index_shapes).map(|s| s.shape)
}

fn selection(shape: &[usize], items: &[IndexItem], index_shapes: &[&[usize]]) -> Result<Selection, String> {
    let used = items.iter().filter(|i| !matches!(i, IndexItem::NewAxis)).count();
    if used > shape.len() {
        return Err(format!("Too many indices: {}-dimensional array indexed with {used} regular indices.", shape.len()));
    }
    if items.iter().filter(|i| i.is_array()).count() != index_shapes.len() {
        return Err("index arrays do not match the indexing expression".into());
    }
    let mut items = items.to_vec();
    items.extend(shape[used..].iter().map(|&n| IndexItem::Slice { start: 0, len: n, step: 1 }));
    let mut dims = Vec::with_capacity(items.len());
    let mut next = 0;
    for item in &items {
        if matches!(item, IndexItem::NewAxis) {
            dims.push(None);
        } else {
            dims.push(Some(next));
            next += 1;
        }
    }
    let broadcast = crate::jax::numpy::broadcast_shapes(index_shapes)?.to_vec();
    let any_array = !index_shapes.is_empty();
    // With an index array present, static integers are advanced indices too (NumPy).
    let advanced: Vec<usize> =
        items.iter().enumerate().filter(|(_, i)| i.is_array() || (any_array && matches!(i, IndexItem::Int(_)))).map(|(p, _)| p).collect();
    let adjacent = advanced.windows(2).all(|w| w[1] == w[0] + 1);
    let advanced_axes = (0..broadcast.len()).map(SelectionAxis::Advanced);
    let mut axes = Vec::new();
    if any_array && !adjacent {
        axes.extend(advanced_axes.clone());
    }
    for (p, item) in items.iter().enumerate() {
        match item {
            IndexItem::Slice { .. } | IndexItem::NewAxis => axes.push(SelectionAxis::Item(p)),
            _ if any_array && adjacent && advanced.first() == Some(&p) => axes.extend(advanced_axes.clone()),
            _ => {}
        }
    }
    let shape = axes
        .iter()
        .map(|a| match *a {
            SelectionAxis::Advanced(k) => broadcast[k],
            SelectionAxis::Item(p) => match items[p] {
                IndexItem::Slice { len, .. } => len,
                _ => 1,
            },
        })
        .collect();
    Ok(Selection { items, dims, broadcast, axes, shape })
}

/// For each element of `x[items]` in row-major order, its flat (row-major) offset in `x`;
/// `None` where an index is out of bounds and not `clamp`ed. `None` overall when the
/// indexing does not fit the operand.
fn positions(shape: &[usize], items: &[IndexItem], indices: &[Rc<NdData>], clamp: bool) -> Option<(Vec<usize>, Vec<Option<usize>>)> {
    let index_shapes: Vec<&[usize]> = indices.iter().map(|i| i.shape()).collect();
    let sel = selection(shape, items, &index_shapes).ok()?;
    let views: Vec<_> = indices.iter().map(|i| i.broadcast(IxDyn(&sel.broadcast))).collect::<Option<_>>()?;
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    // Where each item's value is read from in a selection index.
    let mut axis_of_item = vec![usize::MAX; sel.items.len()];
    let mut advanced_axes = Vec::new();
    for (a, axis) in sel.axes.iter().enumerate() {
        match *axis {
            SelectionAxis::Item(p) => axis_of_item[p] = a,
            SelectionAxis::Advanced(_) => advanced_axes.push(a),
        }
    }
    let resolve = |i: i64, n: usize, from_end: bool| -> Option<usize> {
        let n = n as i64;
        let i = if i < 0 && from_end { i + n } else { i };
        if (0..n).contains(&i) {
            Some(i as usize)
        } else if !clamp || n == 0 {
            None
        } else {
            Some(i.clamp(0, n - 1) as usize)
        }
    };
    let total: usize = sel.shape.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut at = vec![0usize; sel.shape.len()];
    for _ in 0..total {
        let advanced_ix: Vec<usize> = advanced_axes.iter().map(|&a| at[a]).collect();
        let mut offset = Some(0usize);
        let mut next_array = 0;
        for (p, item) in sel.items.iter().enumerate() {
            let Some(d) = sel.dims[p] else { continue };
            let i = match *item {
                IndexItem::Int(i) => resolve(i, shape[d], true),
                IndexItem::Slice { start, step, .. } => usize::try_from(start + at[axis_of_item[p]] as i64 * step).ok(),
                IndexItem::Array | IndexItem::RawArray => {
                    let v = views[next_array][IxDyn(&advanced_ix)];
                    next_array += 1;
                    resolve(v as i64, shape[d], *item == IndexItem::Array)
                }
                IndexItem::NewAxis => Some(0),
            };
            offset = match (offset, i) {
                (Some(o), Some(i)) if i < shape[d] => Some(o + i * strides[d]),
                _ => None,
            };
        }
        out.push(offset);
        // Row-major increment of the selection index.
        for a in (0..at.len()).rev() {
            at[a] += 1;
            if at[a] < sel.shape[a] {
                break;
            }
            at[a] = 0;
        }
    }
    Some((sel.shape, out))
}

/// Selections larger than this are not computed.
const MAX_SELECTION: usize = 1 << 26;

fn flat(a: &NdData) -> Vec<f64> {
    a.as_standard_layout().iter().copied().collect()
}

/// The value a `FillOrDrop` gather of `dtype` reads out of bounds, converted to the dtype
/// as `lax.full_like` converts it (`-99` is 157 in uint8, `2.7` is 2 in int32); JAX's
/// default when `fill` is `None`. `None` where the value does not fit the `f64` data (the
/// int64 minimum, the uint64 maximum).
pub fn fill_element(fill: Option<FillValue>, dtype: DType) -> Option<f64> {
    use crate::jax::eval::{float_to_int, round_to};
    let v = match (fill, dtype) {
        (None, DType::Bool) => 1.0,
        (None, _) if dtype.is_signed_integer() => float_to_int(f64::NEG_INFINITY, dtype),
        (None, _) if dtype.is_integer() => float_to_int(f64::INFINITY, dtype),
        (None, _) => f64::NAN,
        (Some(FillValue::Int(i)), _) if dtype.is_integer() => wrap_int(i, dtype),
        (Some(FillValue::Float(f)), _) if dtype.is_integer() => float_to_int(f, dtype),
        (Some(f), _) => round_to(f.as_f64(), dtype),
    };
    // The f64 data holds int64 values exactly below 2**53 only (`eval::exact_in_f64`).
    (!dtype.is_integer() || v.abs() < 2f64.powi(53)).then_some(v)
}

/// `fill_element` for an integer dtype, exactly: JAX's default (the minimum of a signed,
/// the maximum of an unsigned dtype, `-2**63` for int64) and integer fills wrapped to the
/// dtype; a float fill only where `fill_element` holds it.
pub fn fill_integer(fill: Option<FillValue>, dtype: DType) -> Option<i128> {
    let bits = dtype.bits();
    match fill {
        None if dtype.is_signed_integer() => Some(-(1i128 << (bits - 1))),
        None if dtype.is_integer() => Some((1i128 << bits) - 1),
        Some(FillValue::Int(i)) if dtype.is_integer() => Some(crate::jax::eval_ints::wrap(i, dtype)),
        _ => fill_element(fill, dtype).map(|v| v as i128),
    }
}

/// `x[items]` (the `gather` kernel): an out-of-bounds index reads `fill` under
/// `FillOrDrop` (see `fill_element`) and the nearest element otherwise. An integer fill past
/// 2**53 (the int64 minimum, JAX's default) is rounded here, and the caller computes the
/// result again exactly (`eval_ints`), as for any int64 result past 2**53.
pub fn gather(
    a: &NdData,
    indices: &[Rc<NdData>],
    items: &[IndexItem],
    mode: IndexMode,
    fill: Option<FillValue>,
    dtype: DType,
    out_shape: &[usize],
) -> Option<NdData> {
    let fill = || if dtype.is_integer() { fill_integer(fill, dtype).map(|v| v as f64) } else { fill_element(fill, dtype) };
    gather_elements(a, indices, items, mode, out_shape, fill)
}

/// The gather kernel for elements of any type (f64 data, or `eval_ints`' exact integers);
/// `fill` gives the element an out-of-bounds index reads under `FillOrDrop`.
pub fn gather_elements<T: Copy>(
    a: &ArrayD<T>,
    indices: &[Rc<NdData>],
    items: &[IndexItem],
    mode: IndexMode,
    out_shape: &[usize],
    fill: impl Fn() -> Option<T>,
) -> Option<ArrayD<T>> {
    if indices.iter().map(|i| i.len()).any(|n| n > MAX_SELECTION) {
        return None;
    }
    let (shape, places) = positions(a.shape(), items, indices, mode != IndexMode::FillOrDrop)?;
    if shape != out_shape || places.len() > MAX_SELECTION {
        return None;
    }
    let data: Vec<T> = a.as_standard_layout().iter().copied().collect();
    let mut fill_v = None;
    let mut values = Vec::with_capacity(places.len());
    for p in places {
        values.push(match p {
            Some(p) => data[p],
            // Nothing to clamp to on an empty axis: not computed.
            None if mode != IndexMode::FillOrDrop => return None,
            None => match fill_v {
                Some(v) => v,
                None => *fill_v.insert(fill()?),
            },
        });
    }
    ArrayD::from_shape_vec(IxDyn(&shape), values).ok()
}

/// `x.at[items].op(updates)` (the `scatter` kernels): `updates` broadcast to the selection's
/// shape and applied in its row-major order; out-of-bounds updates dropped, except under
/// `Clip`. Integer `add`/`mul` wrap as XLA's do.
pub fn scatter(
    op: ScatterOp,
    a: &NdData,
    updates: &NdData,
    indices: &[Rc<NdData>],
    items: &[IndexItem],
    mode: IndexMode,
    dtype: DType,
) -> Option<NdData> {
    let (shape, places) = positions(a.shape(), items, indices, mode == IndexMode::Clip)?;
    if places.len() > MAX_SELECTION {
        return None;
    }
    let updates = updates.broadcast(IxDyn(&shape))?;
    let mut data = flat(a);
    let int = dtype.is_integer();
    for (place, &u) in places.into_iter().zip(updates.iter()) {
        let Some(p) = place else { continue };
        let x = data[p];
        data[p] = match op {
            ScatterOp::Set => u,
            ScatterOp::Add if int => wrap_int(x as i128 + u as i128, dtype),
            ScatterOp::Mul if int => wrap_int(x as i128 * u as i128, dtype),
            ScatterOp::Add => x + u,
            ScatterOp::Mul => x * u,
            ScatterOp::Min if x.is_nan() || u.is_nan() => f64::NAN,
            ScatterOp::Max if x.is_nan() || u.is_nan() => f64::NAN,
            ScatterOp::Min => x.min(u),
            ScatterOp::Max => x.max(u),
        };
    }
    ArrayD::from_shape_vec(IxDyn(a.shape()), data).ok()
}
