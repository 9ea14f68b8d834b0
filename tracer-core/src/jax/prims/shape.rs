//! The primitives that move elements without computing with them (`broadcast_in_dim`,
//! `reshape`, `transpose`, `slice`, `concatenate`, `pad`, ...) and `iota`: their abstract
//! evaluation (the output shape from the parameters, the operand's dtype and weak type),
//! then their CPU kernel (`rearrange`, for any element type).

use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};

use super::{arg, families, type_error, RuleError, RuleResult};
use crate::jax::aval::{shape_tuple, Aval};
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;

fn axis_error(prim: &Prim, what: &str, ndim: usize) -> RuleError {
    type_error(format!("{} got {what} for an operand of rank {ndim}", prim.name()))
}

pub fn broadcast_in_dim(prim: &Prim, ins: &[Aval], shape: &[usize], dims: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let fits = dims.len() == x.ndim()
        && dims.iter().zip(&x.shape).all(|(&d, &n)| shape.get(d).is_some_and(|&m| n == 1 || n == m))
        && dims.windows(2).all(|w| w[0] < w[1]);
    if !fits {
        return Err(type_error(format!(
            "broadcast_in_dim operand shape {} does not fit shape {} with broadcast_dimensions {}",
            x.shape_tuple(),
            shape_tuple(shape),
            shape_tuple(dims)
        )));
    }
    Ok(vec![x.with_shape(shape)])
}

pub fn reshape(prim: &Prim, ins: &[Aval], new_sizes: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let size: u128 = new_sizes.iter().fold(1u128, |a, &d| a.saturating_mul(d as u128));
    if size != x.size() {
        return Err(type_error(format!(
            "reshape total size must be unchanged, got new_sizes {} (of size {size}) for shape {} (of size {}).",
            shape_tuple(new_sizes),
            x.shape_tuple(),
            x.size()
        )));
    }
    Ok(vec![x.with_shape(new_sizes)])
}

pub fn transpose(prim: &Prim, ins: &[Aval], perm: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let mut seen = vec![false; x.ndim()];
    let valid = perm.len() == x.ndim() && perm.iter().all(|&p| p < seen.len() && !std::mem::replace(&mut seen[p], true));
    if !valid {
        return Err(type_error(format!(
            "transpose permutation isn't a permutation of operand dimensions, got permutation {} for operand shape {}.",
            shape_tuple(perm),
            x.shape_tuple()
        )));
    }
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    Ok(vec![x.with_shape(&shape)])
}

pub fn squeeze(prim: &Prim, ins: &[Aval], dims: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if dims.iter().any(|&d| x.shape.get(d) != Some(&1)) {
        return Err(axis_error(prim, &format!("dimensions {} that are not axes of length 1", shape_tuple(dims)), x.ndim()));
    }
    let shape: Vec<usize> = x.shape.iter().enumerate().filter(|(i, _)| !dims.contains(i)).map(|(_, &n)| n).collect();
    Ok(vec![x.with_shape(&shape)])
}

pub fn rev(prim: &Prim, ins: &[Aval], dims: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if dims.iter().any(|&d| d >= x.ndim()) {
        return Err(axis_error(prim, &format!("dimensions {}", shape_tuple(dims)), x.ndim()));
    }
    Ok(vec![x.clone()])
}

pub fn slice(prim: &Prim, ins: &[Aval], start: &[usize], limit: &[usize], strides: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let n = x.ndim();
    let valid = start.len() == n
        && limit.len() == n
        && strides.len() == n
        && (0..n).all(|i| start[i] <= limit[i] && limit[i] <= x.shape[i] && strides[i] > 0);
    if !valid {
        return Err(type_error(format!(
            "slice start_indices {} and limit_indices {} do not fit operand shape {}",
            shape_tuple(start),
            shape_tuple(limit),
            x.shape_tuple()
        )));
    }
    let shape: Vec<usize> = (0..n).map(|i| (limit[i] - start[i]).div_ceil(strides[i])).collect();
    Ok(vec![x.with_shape(&shape)])
}

/// `dynamic_slice(operand, *start_indices)`.
pub fn dynamic_slice(prim: &Prim, ins: &[Aval], sizes: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if sizes.len() != x.ndim() || sizes.iter().zip(&x.shape).any(|(s, n)| s > n) {
        return Err(type_error(format!(
            "slice slice_sizes must be less than or equal to operand shape, got slice_sizes {} for operand shape {}.",
            shape_tuple(sizes),
            x.shape_tuple()
        )));
    }
    Ok(vec![x.with_shape(sizes)])
}

/// `dynamic_update_slice(operand, update, *start_indices)`: the operand's aval.
pub fn dynamic_update_slice(prim: &Prim, ins: &[Aval]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let update = arg(prim, ins, 1)?;
    if update.ndim() != x.ndim() || update.shape.iter().zip(&x.shape).any(|(u, n)| u > n) {
        return Err(type_error(format!(
            "dynamic_update_slice update shape must be smaller than operand shape, got update shape {} for operand shape {}.",
            update.shape_tuple(),
            x.shape_tuple()
        )));
    }
    Ok(vec![x.clone()])
}

pub fn concatenate(prim: &Prim, ins: &[Aval], dimension: usize) -> RuleResult {
    let first = arg(prim, ins, 0)?;
    if dimension >= first.ndim() {
        return Err(axis_error(prim, &format!("dimension {dimension}"), first.ndim()));
    }
    let mut shape = first.shape.to_vec();
    shape[dimension] = 0;
    for a in ins {
        let same_rest = a.ndim() == first.ndim() && (0..a.ndim()).all(|i| i == dimension || a.shape[i] == first.shape[i]);
        if !same_rest {
            return Err(type_error(format!(
                "Cannot concatenate arrays with shapes that differ in dimensions other than the one being concatenated: \
                 concatenating along dimension {dimension} for shapes {}.",
                ins.iter().map(|a| a.shape_tuple()).collect::<Vec<_>>().join(", ")
            )));
        }
        shape[dimension] += a.shape[dimension];
    }
    let weak = ins.iter().all(|a| a.weak);
    Ok(vec![Aval::new(&shape, first.dtype).weak(weak)])
}

/// `pad(operand, padding_value)`: each axis `lo + n + (n - 1) * interior + hi` long.
pub fn pad(prim: &Prim, ins: &[Aval], config: &[(i64, i64, i64)]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if config.len() != x.ndim() {
        return Err(type_error(format!(
            "length of padding_config must equal the number of axes of operand, got padding_config {config:?} for operand shape {}",
            x.shape_tuple()
        )));
    }
    let mut shape = Vec::with_capacity(config.len());
    for (&n, &(lo, hi, interior)) in x.shape.iter().zip(config) {
        let n = n as i64;
        let len = lo + hi + n + (n - 1).max(0) * interior;
        if interior < 0 || len < 0 {
            return Err(type_error(format!("Dimension size after padding is not at least 0, got {len} for padding config {config:?}")));
        }
        shape.push(len as usize);
    }
    Ok(vec![x.with_shape(&shape)])
}

pub fn iota(dtype: DType, shape: &[usize], dimension: usize) -> RuleResult {
    if dimension >= shape.len() {
        return Err(type_error(format!(
            "iota dimension must be between 0 and len(shape), got dimension={dimension} for shape {}",
            shape_tuple(shape)
        )));
    }
    Ok(vec![Aval::new(shape, dtype)])
}

// ---------------------------------------------------------------------------------------
// The CPU kernel of the primitives that only move elements.

/// The operations that only move elements (broadcast, reshape, transpose, slices, concatenation,
/// padding), for any element type: the f64-held kernels and the exact integers of
/// `eval_ints` share them. `None` when `prim` is not one of them or its inputs do not fit
/// it; `index` reads a scalar start of a dynamic slice.
pub(crate) fn rearrange<T: Clone>(prim: &Prim, ins: &[Rc<ArrayD<T>>], out_shape: &[usize], index: impl Fn(&T) -> i64) -> Option<ArrayD<T>> {
    let starts = |arrays: &[Rc<ArrayD<T>>]| arrays.iter().map(|a| a.iter().next().map(&index)).collect::<Option<Vec<i64>>>();
    Some(match prim {
        Prim::BroadcastInDim { shape, broadcast_dimensions } => {
            let a = &ins[0];
            let mut expanded = vec![1usize; shape.len()];
            for (i, &d) in broadcast_dimensions.iter().enumerate() {
                expanded[d] = a.shape()[i];
            }
            let r = a.to_shape(IxDyn(&expanded)).ok()?.to_owned();
            r.broadcast(IxDyn(shape))?.to_owned()
        }
        Prim::Reshape { new_sizes } => {
            let std = ins[0].as_standard_layout().to_owned();
            std.into_shape_with_order(IxDyn(new_sizes)).ok()?
        }
        Prim::Squeeze { .. } => {
            let std = ins[0].as_standard_layout().to_owned();
            std.into_shape_with_order(IxDyn(out_shape)).ok()?
        }
        Prim::Transpose { permutation } => {
            // `permuted_axes` panics on anything but a permutation of the axes.
            let mut sorted = permutation.clone();
            sorted.sort_unstable();
            if sorted.iter().enumerate().any(|(i, &p)| i != p) || sorted.len() != ins[0].ndim() {
                return None;
            }
            (*ins[0]).clone().permuted_axes(IxDyn(permutation)).as_standard_layout().to_owned()
        }
        Prim::Rev { dimensions } => {
            let mut a = (*ins[0]).clone();
            for &d in dimensions {
                a.invert_axis(Axis(d));
            }
            a.as_standard_layout().to_owned()
        }
        Prim::Slice { start, limit, strides } => {
            let a = &ins[0];
            let info: Vec<ndarray::SliceInfoElem> = start
                .iter()
                .zip(limit)
                .zip(strides)
                .map(|((&s, &l), &st)| ndarray::SliceInfoElem::Slice { start: s as isize, end: Some(l as isize), step: st.max(1) as isize })
                .collect();
            a.slice(info.as_slice()).to_owned()
        }
        // `lax.dynamic_slice(x, starts, sizes)`: inputs are the operand, then one scalar start
        // index per axis; each is clamped so the slice fits (`dynamic_window`).
        Prim::DynamicSlice { sizes } if ins.len() == 1 + sizes.len() => {
            let window = dynamic_window(ins[0].shape(), sizes, &starts(&ins[1..])?)?;
            ins[0].slice(window.as_slice()).to_owned()
        }
        // `lax.dynamic_update_slice(x, update, starts)`: the update written over the window.
        Prim::DynamicUpdateSlice if ins.len() == 2 + ins[0].ndim() && ins[1].ndim() == ins[0].ndim() => {
            let window = dynamic_window(ins[0].shape(), ins[1].shape(), &starts(&ins[2..])?)?;
            let mut out = (*ins[0]).clone();
            out.slice_mut(window.as_slice()).assign(&*ins[1]);
            out
        }
        Prim::Concatenate { dimension } => {
            let views: Vec<_> = ins.iter().map(|a| a.view()).collect();
            ndarray::concatenate(Axis(*dimension), &views).ok()?
        }
        // lax.pad with edge padding of either sign and no interior padding.
        Prim::Pad { config } if ins.len() == 2 && config.iter().all(|c| c.2 == 0) => {
            let fill = ins[1].iter().next().cloned()?;
            let mut out = ArrayD::from_elem(IxDyn(out_shape), fill);
            // The part of the operand that survives negative padding, and where it goes.
            let src: Vec<ndarray::SliceInfoElem> =
                config.iter().zip(ins[0].shape()).map(|(&(lo, hi, _), &n)| slice_elem((-lo).max(0), n as i64 - (-hi).max(0), n)).collect();
            let dst: Vec<ndarray::SliceInfoElem> =
                config.iter().zip(out_shape).map(|(&(lo, hi, _), &n)| slice_elem(lo.max(0), n as i64 - hi.max(0), n)).collect();
            let part = ins[0].slice(src.as_slice());
            let mut place = out.slice_mut(dst.as_slice());
            if place.shape() != part.shape() {
                return None;
            }
            place.assign(&part);
            out
        }
        families::elementwise!()
        | families::reductions!()
        | families::random!()
        | families::control_flow!()
        | families::calls!()
        | Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::Pad { .. }
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::DotGeneral { .. }
        | Prim::Gather { .. }
        | Prim::Scatter { .. }
        | Prim::DebugCallback
        | Prim::StopGradient
        | Prim::Opaque(_)
        | Prim::Linalg(_)
        | Prim::Block(_) => return None,
    })
}

/// The window of a `dynamic_slice`/`dynamic_update_slice` of `sizes` in an operand of
/// `shape`, at the scalar `starts`: as `lax.dynamic_slice` says, a negative start counts from
/// the end, and then each start is clamped to `0..=n - size` so the window fits (XLA never
/// reads or writes out of bounds). `None` when a size exceeds its axis.
fn dynamic_window(shape: &[usize], sizes: &[usize], starts: &[i64]) -> Option<Vec<ndarray::SliceInfoElem>> {
    if sizes.len() != shape.len() || starts.len() != shape.len() {
        return None;
    }
    let mut window = Vec::with_capacity(shape.len());
    for ((&n, &size), start) in shape.iter().zip(sizes).zip(starts) {
        let room = n.checked_sub(size)? as i64;
        let raw = *start;
        let from = if raw < 0 { raw + n as i64 } else { raw }.clamp(0, room) as isize;
        window.push(ndarray::SliceInfoElem::Slice { start: from, end: Some(from + size as isize), step: 1 });
    }
    Some(window)
}

/// `start..end` clamped to an axis of length `n` (empty when reversed).
fn slice_elem(start: i64, end: i64, n: usize) -> ndarray::SliceInfoElem {
    let start = start.clamp(0, n as i64);
    ndarray::SliceInfoElem::Slice { start: start as isize, end: Some(end.clamp(start, n as i64) as isize), step: 1 }
}
