//! The primitives that move elements without computing with them (`broadcast_in_dim`,
//! `reshape`, `transpose`, `slice`, `concatenate`, `pad`, ...) and `iota`: their abstract
//! evaluation (the output shape from the parameters, the operand's dtype and weak type),
//! then their CPU kernel (`rearrange`, for any element type).

use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};
use smallvec::smallvec;

use super::batching::{self, BDim, BatchResult};
use super::{arg, families, type_error, Jvping, RuleError, RuleResult, Tangents, Transposing};
use crate::diagnostics::Code;
use crate::interp::Interp;
use crate::jax::ad::{self, binary, bind, bind_strong, no_rule, reduce_sum, zeros, AdError, AdResult};
use crate::jax::array::{Array, NdData, NdDataF32};
use crate::jax::aval::{shape_tuple, Aval};
use crate::jax::dtypes::DType;
use crate::jax::eval::{collect_rows, fill, reshape_f32, vectorised, Row, Rows};
use crate::jax::ir::{BinaryPrim, Prim};

fn axis_error(prim: &Prim, what: &str, ndim: usize) -> RuleError {
    type_error(format!("{} got {what} for an operand of rank {ndim}", prim.name()))
}

pub fn broadcast_in_dim(prim: &Prim, ins: &[&Aval], shape: &[usize], dims: &[usize]) -> RuleResult {
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
    Ok(smallvec![x.with_shape(shape)])
}

pub fn reshape(prim: &Prim, ins: &[&Aval], new_sizes: &[usize]) -> RuleResult {
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
    Ok(smallvec![x.with_shape(new_sizes)])
}

pub fn transpose(prim: &Prim, ins: &[&Aval], perm: &[usize]) -> RuleResult {
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
    Ok(smallvec![x.with_shape(&shape)])
}

pub fn squeeze(prim: &Prim, ins: &[&Aval], dims: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if dims.iter().any(|&d| x.shape.get(d) != Some(&1)) {
        return Err(axis_error(prim, &format!("dimensions {} that are not axes of length 1", shape_tuple(dims)), x.ndim()));
    }
    let shape: Vec<usize> = x.shape.iter().enumerate().filter(|(i, _)| !dims.contains(i)).map(|(_, &n)| n).collect();
    Ok(smallvec![x.with_shape(&shape)])
}

pub fn rev(prim: &Prim, ins: &[&Aval], dims: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if dims.iter().any(|&d| d >= x.ndim()) {
        return Err(axis_error(prim, &format!("dimensions {}", shape_tuple(dims)), x.ndim()));
    }
    Ok(smallvec![x.clone()])
}

pub fn slice(prim: &Prim, ins: &[&Aval], start: &[usize], limit: &[usize], strides: &[usize]) -> RuleResult {
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
    Ok(smallvec![x.with_shape(&shape)])
}

/// `dynamic_slice(operand, *start_indices)`.
pub fn dynamic_slice(prim: &Prim, ins: &[&Aval], sizes: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if sizes.len() != x.ndim() || sizes.iter().zip(&x.shape).any(|(s, n)| s > n) {
        return Err(type_error(format!(
            "slice slice_sizes must be less than or equal to operand shape, got slice_sizes {} for operand shape {}.",
            shape_tuple(sizes),
            x.shape_tuple()
        )));
    }
    Ok(smallvec![x.with_shape(sizes)])
}

/// `dynamic_update_slice(operand, update, *start_indices)`: the operand's aval.
pub fn dynamic_update_slice(prim: &Prim, ins: &[&Aval]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let update = arg(prim, ins, 1)?;
    if update.ndim() != x.ndim() || update.shape.iter().zip(&x.shape).any(|(u, n)| u > n) {
        return Err(type_error(format!(
            "dynamic_update_slice update shape must be smaller than operand shape, got update shape {} for operand shape {}.",
            update.shape_tuple(),
            x.shape_tuple()
        )));
    }
    Ok(smallvec![x.clone()])
}

pub fn concatenate(prim: &Prim, ins: &[&Aval], dimension: usize) -> RuleResult {
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
    Ok(smallvec![Aval::new(&shape, first.dtype).weak(weak)])
}

/// `pad(operand, padding_value)`: each axis `lo + n + (n - 1) * interior + hi` long.
pub fn pad(prim: &Prim, ins: &[&Aval], config: &[(i64, i64, i64)]) -> RuleResult {
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
    Ok(smallvec![x.with_shape(&shape)])
}

pub fn iota(dtype: DType, shape: &[usize], dimension: usize) -> RuleResult {
    if dimension >= shape.len() {
        return Err(type_error(format!(
            "iota dimension must be between 0 and len(shape), got dimension={dimension} for shape {}",
            shape_tuple(shape)
        )));
    }
    Ok(smallvec![Aval::new(shape, dtype)])
}

// ---------------------------------------------------------------------------------------
// The CPU kernel of the primitives that only move elements.

/// The kernel in f64 of a primitive of this family: [`rearrange`], or the array `iota` and
/// `full` make; `None` for a case without a kernel.
pub(crate) fn kernel(prim: &Prim, ins: &[Rc<NdData>], out_shape: &[usize]) -> Option<NdData> {
    if let Some(moved) = rearrange(prim, ins, out_shape, |&x| x as i64) {
        return Some(moved);
    }
    Some(match prim {
        Prim::Full { value, .. } => ArrayD::from_elem(IxDyn(out_shape), *value),
        Prim::Iota { shape, dimension, .. } => ArrayD::from_shape_fn(IxDyn(shape), |idx| idx[*dimension] as f64),
        families::movement!() | families::all_but!(movement creation) => return None,
    })
}

/// The float32 path's kernel: broadcasts, reshapes and transposes share the data or copy it
/// by rows; `None` leaves the others to [`kernel`].
pub(crate) fn kernel_f32(prim: &Prim, ins: &[NdDataF32], out_shape: &[usize]) -> Option<(NdDataF32, bool)> {
    Some((
        match prim {
            Prim::BroadcastInDim { shape: target, broadcast_dimensions } => {
                let a = &ins[0];
                let mut expanded = vec![1usize; target.len()];
                for (i, &d) in broadcast_dimensions.iter().enumerate() {
                    *expanded.get_mut(d)? = *a.shape().get(i)?;
                }
                if let Some(rows) = a.as_slice().and_then(|s| Rows::of(s, &expanded, target)) {
                    return Some(vectorised(
                        #[inline(always)]
                        || {
                            collect_rows(
                                target,
                                #[inline(always)]
                                |r, cols, dst| match rows.row(r, cols) {
                                    Row::Values(v) => fill(dst, v, |x| x),
                                    Row::Same(x) => dst.fill(std::mem::MaybeUninit::new(x)),
                                },
                            )
                        },
                    ));
                }
                let r = a.to_shape(IxDyn(&expanded)).ok()?;
                r.broadcast(IxDyn(target))?.to_owned().into_shared()
            }
            Prim::Reshape { new_sizes } => reshape_f32(&ins[0], new_sizes)?,
            Prim::Squeeze { .. } => reshape_f32(&ins[0], out_shape)?,
            Prim::Transpose { permutation } => {
                let valid = permutation.len() == ins[0].ndim() && (0..permutation.len()).all(|d| permutation.contains(&d));
                if !valid {
                    return None;
                }
                ins[0].clone().permuted_axes(IxDyn(permutation))
            }
            Prim::Rev { .. }
            | Prim::Slice { .. }
            | Prim::DynamicSlice { .. }
            | Prim::DynamicUpdateSlice
            | Prim::Concatenate { .. }
            | Prim::Pad { .. }
            | families::creation!()
            | families::all_but!(movement creation) => return None,
        },
        false,
    ))
}

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
        // With interior padding (`lax.pad(x, v, [(1, 1, 1)])`): each operand element at
        // `lo + i * (interior + 1)` along each axis, where that falls inside the output
        // (a negative edge crops).
        Prim::Pad { config } if ins.len() == 2 && config.len() == ins[0].ndim() && config.iter().all(|c| c.2 >= 0) => {
            let fill = ins[1].iter().next().cloned()?;
            let mut out = ArrayD::from_elem(IxDyn(out_shape), fill);
            let mut at = vec![0usize; config.len()];
            'elements: for (idx, x) in ins[0].indexed_iter() {
                for (d, &(lo, _, interior)) in config.iter().enumerate() {
                    let p = lo + idx[d] as i64 * (interior + 1);
                    match usize::try_from(p).ok().filter(|&p| out_shape.get(d).is_some_and(|&n| p < n)) {
                        Some(p) => at[d] = p,
                        None => continue 'elements,
                    }
                }
                out[IxDyn(&at)] = x.clone();
            }
            out
        }
        Prim::DynamicSlice { .. } | Prim::DynamicUpdateSlice | Prim::Pad { .. } | families::all_but!(movement) => return None,
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

// ---------------------------------------------------------------------------------------
// The derivative rules: each primitive of this family is linear in its array operands, and
// applies itself (or its transpose) to tangents (cotangents); `iota` and `full` have none.

/// The JVP rule of a primitive of this family: the output's tangent from the operands'.
pub(crate) fn jvp_rule(interp: &mut Interp, j: Jvping) -> Tangents {
    let Jvping { eqn, ins, ts, .. } = j;
    let instantiate = |interp: &mut Interp, i: usize| ad::instantiate(interp, ins, ts, i);
    let t = match &eqn.prim {
        Prim::BroadcastInDim { .. }
        | Prim::Reshape { .. }
        | Prim::Squeeze { .. }
        | Prim::Transpose { .. }
        | Prim::Rev { .. }
        | Prim::Slice { .. } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            bind(interp, eqn.prim.clone(), std::slice::from_ref(t))?
        }
        Prim::Concatenate { .. } => {
            let parts = (0..ins.len()).map(|i| instantiate(interp, i)).collect::<AdResult<Vec<_>>>()?;
            bind(interp, eqn.prim.clone(), &parts)?
        }
        Prim::Full { .. } | Prim::Iota { .. } => return Ok(vec![None]),
        // Linear in (operand, padding value) together.
        Prim::Pad { .. } if ins.len() == 2 => {
            if ts[0].is_none() && ts[1].is_none() {
                return Ok(vec![None]);
            }
            let operands = [instantiate(interp, 0)?, instantiate(interp, 1)?];
            bind(interp, eqn.prim.clone(), &operands)?
        }
        // Linear in the operand; the start indices have no tangent.
        Prim::DynamicSlice { .. } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            if ins.len() != 1 + ins[0].aval.ndim() {
                return Err(no_rule(eqn));
            }
            let operands: Vec<Rc<Array>> = std::iter::once(t.clone()).chain(ins[1..].iter().cloned()).collect();
            bind(interp, eqn.prim.clone(), &operands)?
        }
        Prim::DynamicUpdateSlice if ins.len() == 2 + ins[0].aval.ndim() => {
            if ts[0].is_none() && ts[1].is_none() {
                return Ok(vec![None]);
            }
            let mut operands = vec![instantiate(interp, 0)?, instantiate(interp, 1)?];
            operands.extend(ins[2..].iter().cloned());
            bind(interp, eqn.prim.clone(), &operands)?
        }
        Prim::DynamicUpdateSlice | Prim::Pad { .. } | families::all_but!(movement creation) => return Err(no_rule(eqn)),
    };
    Ok(vec![Some(t)])
}

/// The transpose rule of a primitive of this family: the cotangents of the `active` operands.
pub(crate) fn transpose_rule(interp: &mut Interp, t: Transposing, cts: &mut [Option<Rc<Array>>]) -> AdResult<()> {
    let Transposing { eqn, ins, out: _, g, active } = t;
    let in_shape = |i: usize| ins[i].aval.shape.to_vec();
    match &eqn.prim {
        Prim::Full { .. } | Prim::Iota { .. } => {}
        Prim::Reshape { .. } | Prim::Squeeze { .. } => cts[0] = Some(ad::reshape(interp, g, &in_shape(0))?),
        Prim::Transpose { permutation } => {
            let mut inverse = vec![0; permutation.len()];
            for (i, &p) in permutation.iter().enumerate() {
                *inverse.get_mut(p).ok_or_else(|| no_rule(eqn))? = i;
            }
            cts[0] = Some(bind(interp, Prim::Transpose { permutation: inverse }, std::slice::from_ref(g))?);
        }
        Prim::Rev { dimensions } => {
            cts[0] = Some(bind(interp, Prim::Rev { dimensions: dimensions.clone() }, std::slice::from_ref(g))?);
        }
        Prim::BroadcastInDim { shape, broadcast_dimensions } => {
            let src = in_shape(0);
            if broadcast_dimensions.windows(2).any(|w| w[0] >= w[1]) || broadcast_dimensions.len() != src.len() {
                return Err(no_rule(eqn));
            }
            let axes: Vec<usize> = (0..shape.len())
                .filter(|d| match broadcast_dimensions.iter().position(|b| b == d) {
                    None => true,
                    Some(i) => src[i] == 1 && shape[*d] != 1,
                })
                .collect();
            let summed = reduce_sum(interp, g, &axes)?;
            cts[0] = Some(ad::reshape(interp, &summed, &src)?);
        }
        Prim::Slice { start, strides, .. } => cts[0] = Some(unslice(interp, g, start, strides, &in_shape(0))?),
        Prim::Concatenate { dimension } if ins.iter().all(|x| *dimension < x.aval.ndim()) => {
            let mut offset = 0;
            for (i, x) in ins.iter().enumerate() {
                let size = x.aval.shape.get(*dimension).copied().unwrap_or(0);
                if active[i] {
                    let mut start = vec![0; x.aval.ndim()];
                    let mut limit = g.aval.shape.to_vec();
                    start[*dimension] = offset;
                    limit[*dimension] = offset + size;
                    let prim = Prim::Slice { start, limit, strides: vec![1; x.aval.ndim()] };
                    cts[i] = Some(bind(interp, prim, std::slice::from_ref(g))?);
                }
                offset += size;
            }
        }
        // The operand's part of the cotangent, cut out again; the padding value's is the rest.
        Prim::Pad { config } if ins.len() == 2 && config.iter().all(|&(lo, hi, interior)| lo >= 0 && hi >= 0 && interior == 0) => {
            let start: Vec<usize> = config.iter().map(|c| c.0 as usize).collect();
            let limit: Vec<usize> = start.iter().zip(&ins[0].aval.shape).map(|(s, n)| s + n).collect();
            // JAX cuts it out with a `pad` by a strongly typed zero: strongly typed.
            let inner = bind_strong(interp, Prim::Slice { start, limit, strides: vec![1; config.len()] }, std::slice::from_ref(g))?;
            if active[1] && !active[0] {
                // JAX 0.10.2's `_pad_transpose` sums the operand's cotangent to get the padding
                // value's, and has none when the operand is not differentiated.
                return Err(AdError::Raise(interp.raise(
                    "TypeError",
                    Code::PythonException,
                    "Error interpreting argument to reduce_sum as a JAX value. The problematic value is of type <class 'NoneType'> and was passed to reduce_sum at position 0.\n",
                )));
            }
            if active[1] {
                let all: Vec<usize> = (0..g.aval.ndim()).collect();
                let total = reduce_sum(interp, g, &all)?;
                let kept = reduce_sum(interp, &inner, &all)?;
                cts[1] = Some(binary(interp, BinaryPrim::Sub, &total, &kept)?);
            }
            if active[0] {
                cts[0] = Some(inner);
            }
        }
        // JAX's `_dynamic_slice_transpose_rule`: the cotangent written into (strongly typed)
        // zeros at the same, equally clamped, place.
        Prim::DynamicSlice { .. } if ins.len() == 1 + ins[0].aval.ndim() => {
            if active[0] {
                let aval = ins[0].aval.clone().weak(false);
                let mut operands = vec![zeros(interp, &aval)?, g.clone()];
                operands.extend(ins[1..].iter().cloned());
                cts[0] = Some(bind(interp, Prim::DynamicUpdateSlice, &operands)?);
            }
        }
        // JAX's `_dynamic_update_slice_transpose_rule`: the operand gets the cotangent with the
        // window zeroed, the update the window.
        Prim::DynamicUpdateSlice if ins.len() == 2 + ins[0].aval.ndim() => {
            if active[0] {
                let mut operands = vec![g.clone(), zeros(interp, &ins[1].aval.clone().weak(g.aval.weak))?];
                operands.extend(ins[2..].iter().cloned());
                cts[0] = Some(bind(interp, Prim::DynamicUpdateSlice, &operands)?);
            }
            if active[1] {
                let sizes = ins[1].aval.shape.to_vec();
                let operands: Vec<Rc<Array>> = std::iter::once(g.clone()).chain(ins[2..].iter().cloned()).collect();
                cts[1] = Some(bind(interp, Prim::DynamicSlice { sizes: sizes.clone() }, &operands)?);
            }
        }
        Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::Concatenate { .. }
        | Prim::Pad { .. }
        | families::all_but!(movement creation) => return Err(no_rule(eqn)),
    }
    Ok(())
}

/// The transpose of a slice: `g` placed at `start`, every `stride`-th element, in zeros of
/// `shape` (JAX pads with interior padding; here each axis is interleaved with zeros and
/// padded with concatenate).
fn unslice(interp: &mut Interp, g: &Rc<Array>, start: &[usize], strides: &[usize], shape: &[usize]) -> AdResult<Rc<Array>> {
    if start.len() != shape.len() || g.aval.ndim() != shape.len() {
        return Err(AdError::NoRule("a slice of another rank".into()));
    }
    let mut cur = g.clone();
    for axis in 0..shape.len() {
        let stride = strides.get(axis).copied().unwrap_or(1).max(1);
        let k = cur.aval.shape[axis];
        if stride > 1 && k > 0 {
            // [.., k, ..] -> [.., k, 1, ..] ++ zeros [.., k, stride-1, ..] -> [.., k*stride, ..]
            let mut s1 = cur.aval.shape.to_vec();
            s1.insert(axis + 1, 1);
            let col = ad::reshape(interp, &cur, &s1)?;
            let mut sz = s1.clone();
            sz[axis + 1] = stride - 1;
            let z = zeros(interp, &cur.aval.with_shape(&sz).weak(false))?;
            let mut s2 = s1.clone();
            s2[axis + 1] = stride;
            let spread = bind_strong(interp, Prim::Concatenate { dimension: axis + 1 }, &[col, z])?;
            let mut s3 = cur.aval.shape.to_vec();
            s3[axis] = k * stride;
            cur = ad::reshape(interp, &spread, &s3)?;
        }
        let extent = shape[axis].saturating_sub(start[axis]);
        let len = cur.aval.shape[axis];
        if len > extent {
            let mut limit = cur.aval.shape.to_vec();
            limit[axis] = extent;
            let prim = Prim::Slice { start: vec![0; shape.len()], limit: limit.clone(), strides: vec![1; shape.len()] };
            cur = bind(interp, prim, std::slice::from_ref(&cur))?;
        }
        let (before, after) = (start[axis], extent.saturating_sub(cur.aval.shape[axis]));
        if before == 0 && after == 0 {
            continue;
        }
        let mut ops = Vec::new();
        for (size, is_before) in [(before, true), (after, false)] {
            if size == 0 {
                continue;
            }
            let mut s = cur.aval.shape.to_vec();
            s[axis] = size;
            // JAX pads with `_const(t, 0)`: strongly typed, and so is the result.
            let z = zeros(interp, &cur.aval.with_shape(&s).weak(false))?;
            if is_before {
                ops.push(z);
                ops.push(cur.clone());
            } else {
                if ops.is_empty() {
                    ops.push(cur.clone());
                }
                ops.push(z);
            }
        }
        let mut total = cur.aval.shape.to_vec();
        total[axis] = shape[axis];
        cur = bind_strong(interp, Prim::Concatenate { dimension: axis }, &ops)?;
    }
    Ok(cur)
}

/// The batching rules (`prims::batch`, JAX's `_*_batch_rule`s of `lax.py` and `slicing.py`):
/// the batch dimension moved first where the parameters speak of the whole shape
/// (`broadcast_in_dim`, `reshape`, `transpose`, `squeeze`, `concatenate`), else the axes
/// named shifted past it (`rev`, `slice`, `pad` by an unmapped value). `dynamic_slice` and
/// `dynamic_update_slice` (JAX batches them into `gather`/`scatter`) have none yet.
pub(crate) fn batch_rule(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    use batching::{bump, moveaxis, single};
    match prim {
        Prim::BroadcastInDim { shape, broadcast_dimensions } => {
            let (x, bd) = single(ins, dims)?;
            let n = x.aval.shape[bd];
            let x = moveaxis(interp, x, bd, 0)?;
            let shape: Vec<usize> = std::iter::once(n).chain(shape.iter().copied()).collect();
            let bdims: Vec<usize> = std::iter::once(0).chain(broadcast_dimensions.iter().map(|d| d + 1)).collect();
            Ok(vec![(ad::broadcast_in_dim(interp, &x, &shape, &bdims)?, Some(0))])
        }
        Prim::Reshape { new_sizes } => {
            let (x, bd) = single(ins, dims)?;
            let n = x.aval.shape[bd];
            let x = moveaxis(interp, x, bd, 0)?;
            let new_sizes = std::iter::once(n).chain(new_sizes.iter().copied()).collect();
            Ok(vec![(bind(interp, Prim::Reshape { new_sizes }, &[x])?, Some(0))])
        }
        Prim::Transpose { permutation } => {
            let (x, bd) = single(ins, dims)?;
            let permutation = std::iter::once(bd).chain(permutation.iter().map(|&i| bump(i, bd))).collect();
            Ok(vec![(bind(interp, Prim::Transpose { permutation }, &[x.clone()])?, Some(0))])
        }
        Prim::Squeeze { dimensions } => {
            let (x, bd) = single(ins, dims)?;
            let x = moveaxis(interp, x, bd, 0)?;
            let dimensions = dimensions.iter().map(|d| d + 1).collect();
            Ok(vec![(bind(interp, Prim::Squeeze { dimensions }, &[x])?, Some(0))])
        }
        Prim::Rev { dimensions } => {
            let (x, bd) = single(ins, dims)?;
            let dimensions = dimensions.iter().map(|&i| bump(i, bd)).collect();
            Ok(vec![(bind(interp, Prim::Rev { dimensions }, &[x.clone()])?, Some(bd))])
        }
        Prim::Slice { start, limit, strides } => {
            let (x, bd) = single(ins, dims)?;
            let insert = |v: &[usize], at: usize| -> Vec<usize> {
                let mut v = v.to_vec();
                v.insert(bd.min(v.len()), at);
                v
            };
            let prim = Prim::Slice { start: insert(start, 0), limit: insert(limit, x.aval.shape[bd]), strides: insert(strides, 1) };
            Ok(vec![(bind(interp, prim, &[x.clone()])?, Some(bd))])
        }
        Prim::Concatenate { dimension } => {
            let size = batching::axis_size(ins, dims)?;
            let mut args = Vec::with_capacity(ins.len());
            for (x, d) in ins.iter().zip(dims) {
                args.push(batching::bdim_at_front(interp, x, *d, size)?);
            }
            Ok(vec![(bind(interp, Prim::Concatenate { dimension: dimension + 1 }, &args)?, Some(0))])
        }
        Prim::Pad { config } => match (ins, dims) {
            ([x, value], [Some(bd), None]) => {
                let mut config = config.clone();
                config.insert((*bd).min(config.len()), (0, 0, 0));
                Ok(vec![(bind(interp, Prim::Pad { config }, &[x.clone(), value.clone()])?, Some(*bd))])
            }
            ([x, value], [xd, Some(0)]) if value.aval.ndim() == 1 => pad_by_mapped_value(interp, config, x, *xd, value),
            _ => Err(AdError::NoRule("pad by a mapped padding value".into())),
        },
        // Through `gather`/`scatter` when a start index is mapped, as JAX's rules.
        Prim::DynamicSlice { .. } => super::indexing::batching::dynamic_slice(interp, prim, ins, dims),
        Prim::DynamicUpdateSlice => super::indexing::batching::dynamic_update_slice(interp, prim, ins, dims),
        Prim::Iota { .. } | Prim::Full { .. } => Err(AdError::NoRule(prim.name())),
        families::all_but!(movement creation) => Err(AdError::NoRule(prim.name())),
    }
}

/// `pad` by a mapped padding value, as JAX's `_pad_batch_rule`: the operand (broadcast first
/// when it is not mapped) padded with zeros, a mask of where the operand's elements landed
/// (`True` padded with `False`), and a `select` of the operand's elements and each example's
/// padding value broadcast along the batch axis.
fn pad_by_mapped_value(interp: &mut Interp, config: &[(i64, i64, i64)], x: &Rc<Array>, xd: BDim, value: &Rc<Array>) -> BatchResult {
    let n = value.aval.shape[0];
    let (x, bd) = match xd {
        Some(d) => (x.clone(), d),
        None => (batching::broadcast(interp, x, n, 0)?, 0),
    };
    let mut config = config.to_vec();
    config.insert(bd.min(config.len()), (0, 0, 0));
    let zero = Array::scalar(0.0, x.aval.dtype, x.aval.weak);
    let padded = bind(interp, Prim::Pad { config: config.clone() }, &[x.clone(), zero])?;
    let ones = ad::broadcast_to(interp, &Array::scalar(1.0, DType::Bool, false), &x.aval.shape)?;
    let mask = bind(interp, Prim::Pad { config }, &[ones, Array::scalar(0.0, DType::Bool, false)])?;
    let value = ad::broadcast_in_dim(interp, value, &padded.aval.shape, &[bd])?;
    Ok(vec![(bind(interp, Prim::Select, &[mask, value, padded])?, Some(bd))])
}

/// Whether [`batch_rule`] batches `prim` with these operands mapped.
pub(crate) fn has_batch_rule(prim: &Prim, mapped: &[bool]) -> bool {
    match prim {
        Prim::BroadcastInDim { .. }
        | Prim::Reshape { .. }
        | Prim::Transpose { .. }
        | Prim::Squeeze { .. }
        | Prim::Rev { .. }
        | Prim::Slice { .. }
        | Prim::Concatenate { .. } => true,
        Prim::Pad { .. } => mapped.len() == 2,
        Prim::DynamicSlice { .. } | Prim::DynamicUpdateSlice => true,
        Prim::Iota { .. } | Prim::Full { .. } => false,
        families::all_but!(movement creation) => false,
    }
}
