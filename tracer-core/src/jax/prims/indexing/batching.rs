//! The batching rules of the indexing primitives (`prims::batch`), after JAX's
//! `_gather_batching_rule`, `_scatter_batching_rule` and `_dynamic_slice_batching_rule` /
//! `_dynamic_update_slice_batching_rule` (which go through `gather` and `scatter`).
//!
//! tracelens' `gather` and `scatter` are NumPy indexing (`x[items]`, one integer array per
//! array item), not XLA's dimension numbers, so the rules are written in that model:
//! - only the operand mapped: a full slice over the batch axis in front of the items (JAX
//!   adds the batch axis to the offset dimensions);
//! - an index array mapped: each mapped index array with its batch axis first and padded
//!   with axes of 1 to the rank of the batched broadcast, so the index arrays broadcast to
//!   the batch followed by their per-example broadcast; a mapped operand then gets one more
//!   index array, an `iota` over the batch axis, placed before the first integer item with
//!   the operand's batch axis moved there, so that the integer items stay adjacent and the
//!   selection keeps the per-example layout (JAX's `operand_batching_dims`).
//!
//! `dynamic_slice` and `dynamic_update_slice` with unmapped start indices are bound again
//! with the batch axis sliced whole from 0; with a mapped start index they become a
//! `gather` / `scatter` of each window's indices (the start wrapped and clamped as
//! `dynamic_slice` does, plus an `iota`), as JAX's rules do.

use std::rc::Rc;

use crate::interp::Interp;
use crate::jax::ad::{self, bind, AdError, AdResult};
use crate::jax::array::Array;
use crate::jax::dtypes::DType;
use crate::jax::ir::{BinaryPrim, CmpPrim, IndexItem, IndexMode, Prim, ScatterOp};
use crate::jax::prims::batching::{self, moveaxis, BDim, BatchResult};

/// Whether `item` is an integer item of the advanced block (with an index array present,
/// static integers are advanced too, as in NumPy).
fn advanced(item: &IndexItem, any_array: bool) -> bool {
    item.is_array() || (any_array && matches!(item, IndexItem::Int(_)))
}

/// The position of the first advanced item, when there is an index array.
fn first_advanced(items: &[IndexItem]) -> Option<usize> {
    let any = items.iter().any(IndexItem::is_array);
    items.iter().position(|i| advanced(i, any))
}

/// The axis of `x[items]` where the broadcast of the index arrays starts: in front when the
/// integer items are not adjacent, else after the sliced and new axes before them.
fn block_start(items: &[IndexItem]) -> usize {
    let any = items.iter().any(IndexItem::is_array);
    let positions: Vec<usize> = items.iter().enumerate().filter(|(_, i)| advanced(i, any)).map(|(p, _)| p).collect();
    let adjacent = positions.windows(2).all(|w| w[1] == w[0] + 1);
    match positions.first() {
        Some(&first) if adjacent => items[..first].iter().filter(|i| !advanced(i, any)).count(),
        _ => 0,
    }
}

/// The axis of `x[items]` of the slice item at position 0 (`items[0]` a slice).
fn leading_slice_axis(items: &[IndexItem], broadcast_rank: usize) -> usize {
    let any = items.iter().any(IndexItem::is_array);
    let positions: Vec<usize> = items.iter().enumerate().filter(|(_, i)| advanced(i, any)).map(|(p, _)| p).collect();
    let adjacent = positions.windows(2).all(|w| w[1] == w[0] + 1);
    if any && !adjacent {
        broadcast_rank
    } else {
        0
    }
}

/// The index arrays of a gather or scatter with a mapped one: each mapped one with its batch
/// axis first and axes of 1 after it up to `1 + rank` (the rank of the per-example
/// broadcast), the unmapped ones as they are; and that rank.
fn batched_indices(interp: &mut Interp, idx: &[Rc<Array>], dims: &[BDim]) -> AdResult<(Vec<Rc<Array>>, usize)> {
    let per_example: Vec<Vec<usize>> = idx
        .iter()
        .zip(dims)
        .map(|(a, d)| {
            let mut s = a.aval.shape.to_vec();
            if let Some(d) = d {
                s.remove(*d);
            }
            s
        })
        .collect();
    let shapes: Vec<&[usize]> = per_example.iter().map(Vec::as_slice).collect();
    let rank = crate::jax::numpy::broadcast_shapes(&shapes).map_err(AdError::NoRule)?.len();
    let mut out = Vec::with_capacity(idx.len());
    for ((a, d), s) in idx.iter().zip(dims).zip(&per_example) {
        let Some(d) = d else {
            out.push(a.clone());
            continue;
        };
        let front = moveaxis(interp, a, *d, 0)?;
        let mut shape = vec![front.aval.shape[0]];
        shape.extend(std::iter::repeat(1).take(rank - s.len()));
        shape.extend(s.iter().copied());
        out.push(ad::reshape(interp, &front, &shape)?);
    }
    Ok((out, rank))
}

/// An `int32` iota over the batch axis, shaped `(n, 1, ..., 1)` of rank `1 + rank`.
fn batch_iota(interp: &mut Interp, n: usize, rank: usize) -> AdResult<Rc<Array>> {
    let mut shape = vec![n];
    shape.extend(std::iter::repeat(1).take(rank));
    bind(interp, Prim::Iota { dtype: DType::I32, shape, dimension: 0 }, &[])
}

/// How a mapped operand and index arrays are laid out for a batched gather or scatter.
struct Layout {
    operand: Rc<Array>,
    items: Vec<IndexItem>,
    indices: Vec<Rc<Array>>,
    /// The batch axis of the operand, and of the selection `operand[items]`.
    operand_axis: usize,
    selection_axis: usize,
}

/// The operand (broadcast when `None` and `broadcast`), items and index arrays of the
/// batched indexing, with where the batch axis lands.
fn layout(
    interp: &mut Interp,
    x: &Rc<Array>,
    xd: BDim,
    items: &[IndexItem],
    idx: &[Rc<Array>],
    idx_dims: &[BDim],
    size: usize,
) -> AdResult<Layout> {
    if idx_dims.iter().all(Option::is_none) {
        let operand = batching::bdim_at_front(interp, x, xd, size)?;
        let items: Vec<IndexItem> =
            std::iter::once(IndexItem::Slice { start: 0, len: size, step: 1 }).chain(items.iter().cloned()).collect();
        let shapes: Vec<Vec<usize>> = idx.iter().map(|a| a.aval.shape.to_vec()).collect();
        let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let rank = crate::jax::numpy::broadcast_shapes(&shapes).map_err(AdError::NoRule)?.len();
        let selection_axis = leading_slice_axis(&items, rank);
        return Ok(Layout { operand, items, indices: idx.to_vec(), operand_axis: 0, selection_axis });
    }
    let (mut indices, rank) = batched_indices(interp, idx, idx_dims)?;
    let selection_axis = block_start(items);
    let q = first_advanced(items).ok_or_else(|| AdError::NoRule("a mapped index array without an array item".into()))?;
    match xd {
        None => Ok(Layout { operand: x.clone(), items: items.to_vec(), indices, operand_axis: 0, selection_axis }),
        Some(d) => {
            // The batch axis of the operand indexed by an iota, just before the first integer item.
            let at = items[..q].iter().filter(|i| !matches!(i, IndexItem::NewAxis)).count();
            let operand = moveaxis(interp, x, d, at)?;
            let mut items = items.to_vec();
            items.insert(q, IndexItem::Array);
            let before = items[..q].iter().filter(|i| i.is_array()).count();
            let iota = batch_iota(interp, size, rank)?;
            indices.insert(before, iota);
            Ok(Layout { operand, items, indices, operand_axis: at, selection_axis })
        }
    }
}

/// `gather` batched.
pub(crate) fn gather(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let Prim::Gather { mode, fill_value, index } = prim else { return Err(ad::no_rule_for(prim)) };
    let size = batching::axis_size(ins, dims)?;
    let (x, idx) = ins.split_first().ok_or_else(|| ad::no_rule_for(prim))?;
    let l = layout(interp, x, dims[0], index, idx, &dims[1..], size)?;
    let operands: Vec<Rc<Array>> = std::iter::once(l.operand).chain(l.indices).collect();
    let out = bind(interp, Prim::Gather { mode: *mode, fill_value: *fill_value, index: l.items }, &operands)?;
    Ok(vec![(out, Some(l.selection_axis))])
}

/// `scatter` batched: the operand always mapped (broadcast when it is not), the updates
/// broadcast to the batched selection.
pub(crate) fn scatter(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let Prim::Scatter { op, mode, index: Some(index), unique_indices } = prim else { return Err(ad::no_rule_for(prim)) };
    let size = batching::axis_size(ins, dims)?;
    let [x, u, idx @ ..] = ins else { return Err(ad::no_rule_for(prim)) };
    let params = (*op, *mode, index.as_slice(), *unique_indices);
    match dims[0] {
        Some(d) => scatter_into(interp, (x, d), (u, dims[1]), idx, &dims[2..], size, params),
        // Every example writes into its own copy of the operand.
        None => {
            let operand = batching::broadcast(interp, x, size, 0)?;
            scatter_into(interp, (&operand, 0), (u, dims[1]), idx, &dims[2..], size, params)
        }
    }
}

type ScatterParams<'a> = (ScatterOp, IndexMode, &'a [IndexItem], bool);

#[allow(clippy::too_many_arguments)]
fn scatter_into(
    interp: &mut Interp,
    (x, xd): (&Rc<Array>, usize),
    (u, ud): (&Rc<Array>, BDim),
    idx: &[Rc<Array>],
    idx_dims: &[BDim],
    size: usize,
    (op, mode, index, unique_indices): ScatterParams,
) -> BatchResult {
    let l = layout(interp, x, Some(xd), index, idx, idx_dims, size)?;
    let shapes: Vec<&[usize]> = l.indices.iter().map(|a| a.aval.shape.as_slice()).collect();
    let selection = super::kernels::selection_shape(&l.operand.aval.shape, &l.items, &shapes).map_err(AdError::NoRule)?;
    let updates = updates_to(interp, u, ud, &selection, l.selection_axis)?;
    let operands: Vec<Rc<Array>> = [l.operand, updates].into_iter().chain(l.indices).collect();
    let batched = Prim::Scatter { op, mode, index: Some(l.items), unique_indices };
    Ok(vec![(bind(interp, batched, &operands)?, Some(l.operand_axis))])
}

/// The updates of a batched scatter broadcast to the batched selection `shape`, whose batch
/// axis is `axis` (a per-example update broadcasts to the per-example selection, NumPy's
/// way; a scalar one that is not mapped is left to the scatter to broadcast).
fn updates_to(interp: &mut Interp, u: &Rc<Array>, ud: BDim, shape: &[usize], axis: usize) -> AdResult<Rc<Array>> {
    if ud.is_none() && u.aval.ndim() == 0 {
        return Ok(u.clone());
    }
    let per_example_rank = shape.len() - 1;
    let u = match ud {
        Some(d) => moveaxis(interp, u, d, 0)?,
        None => u.clone(),
    };
    let own = u.aval.ndim() - usize::from(ud.is_some());
    let lead = per_example_rank.checked_sub(own).ok_or_else(|| AdError::NoRule("scatter updates of a higher rank".into()))?;
    let mut map: Vec<usize> = Vec::with_capacity(u.aval.ndim());
    if ud.is_some() {
        map.push(axis);
    }
    map.extend((0..own).map(|j| batching::bump(lead + j, axis)));
    if u.aval.shape.as_slice() == shape && map.iter().enumerate().all(|(i, &m)| i == m) {
        return Ok(u);
    }
    ad::broadcast_in_dim(interp, &u, shape, &map)
}

/// Each start index of a dynamic slice of per-example `dims` (window `sizes`) as an index
/// array of shape `(n, 1.., sizes[d], ..1)`: the start wrapped once from the end and clamped
/// so the window fits (what `dynamic_slice` does), plus an iota over the window.
fn window_indices(
    interp: &mut Interp,
    starts: &[Rc<Array>],
    dims: &[BDim],
    operand: &[usize],
    sizes: &[usize],
    n: usize,
) -> AdResult<Vec<Rc<Array>>> {
    let k = operand.len();
    let mut out = Vec::with_capacity(k);
    for (d, (s, sd)) in starts.iter().zip(dims).enumerate() {
        let dt = s.aval.dtype;
        let s = s.clone();
        let negative = ad::compare(interp, CmpPrim::Lt, &s, &Array::scalar(0.0, dt, false))?;
        let wrapped = ad::binary(interp, BinaryPrim::Add, &s, &Array::scalar(operand[d] as f64, dt, false))?;
        let s = bind(interp, Prim::Select, &[negative, s, wrapped])?;
        let room = operand[d].saturating_sub(sizes[d]) as f64;
        let s = bind(interp, Prim::Clamp, &[Array::scalar(0.0, dt, false), s, Array::scalar(room, dt, false)])?;
        let mut shape = vec![1; 1 + k];
        shape[0] = n;
        let s = ad::broadcast_in_dim(interp, &s, &shape, if sd.is_some() { &[0] } else { &[] })?;
        let mut iota_shape = vec![1; 1 + k];
        iota_shape[1 + d] = sizes[d];
        let iota = bind(interp, Prim::Iota { dtype: dt, shape: iota_shape, dimension: 1 + d }, &[])?;
        out.push(ad::binary(interp, BinaryPrim::Add, &s, &iota)?);
    }
    Ok(out)
}

/// `dynamic_slice(x, *starts)` batched.
pub(crate) fn dynamic_slice(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let Prim::DynamicSlice { sizes } = prim else { return Err(ad::no_rule_for(prim)) };
    let size = batching::axis_size(ins, dims)?;
    let (x, starts) = ins.split_first().ok_or_else(|| ad::no_rule_for(prim))?;
    if dims[1..].iter().all(Option::is_none) {
        let bd = dims[0].ok_or_else(|| ad::no_rule_for(prim))?;
        let mut sizes = sizes.clone();
        sizes.insert(bd, size);
        let dt = starts.first().map_or(DType::I32, |s| s.aval.dtype);
        let mut operands = vec![x.clone()];
        operands.extend(starts.iter().cloned());
        operands.insert(1 + bd, Array::scalar(0.0, dt, false));
        return Ok(vec![(bind(interp, Prim::DynamicSlice { sizes }, &operands)?, Some(bd))]);
    }
    let operand_shape = per_example(x, dims[0]);
    let indices = window_indices(interp, starts, &dims[1..], &operand_shape, sizes, size)?;
    let items = vec![IndexItem::Array; indices.len()];
    let l = layout(interp, x, dims[0], &items, &indices, &vec![Some(0); indices.len()], size)?;
    let operands: Vec<Rc<Array>> = std::iter::once(l.operand).chain(l.indices).collect();
    let out = bind(interp, Prim::Gather { mode: IndexMode::Clip, fill_value: None, index: l.items }, &operands)?;
    Ok(vec![(out, Some(l.selection_axis))])
}

/// `dynamic_update_slice(x, update, *starts)` batched.
pub(crate) fn dynamic_update_slice(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let size = batching::axis_size(ins, dims)?;
    let [x, u, starts @ ..] = ins else { return Err(ad::no_rule_for(prim)) };
    let x = batching::bdim_at_front(interp, x, dims[0], size)?;
    let u_front = batching::bdim_at_front(interp, u, dims[1], size)?;
    if dims[2..].iter().all(Option::is_none) {
        let dt = starts.first().map_or(DType::I32, |s| s.aval.dtype);
        let operands: Vec<Rc<Array>> = [x, u_front, Array::scalar(0.0, dt, false)].into_iter().chain(starts.iter().cloned()).collect();
        return Ok(vec![(bind(interp, Prim::DynamicUpdateSlice, &operands)?, Some(0))]);
    }
    let operand_shape = x.aval.shape[1..].to_vec();
    let sizes = u_front.aval.shape[1..].to_vec();
    let indices = window_indices(interp, starts, &dims[2..], &operand_shape, &sizes, size)?;
    let items = vec![IndexItem::Array; indices.len()];
    let params = (ScatterOp::Set, IndexMode::Clip, items.as_slice(), true);
    scatter_into(interp, (&x, 0), (&u_front, Some(0)), &indices, &vec![Some(0); indices.len()], size, params)
}

/// The shape of one example of `x`.
fn per_example(x: &Rc<Array>, d: BDim) -> Vec<usize> {
    let mut s = x.aval.shape.to_vec();
    if let Some(d) = d {
        s.remove(d);
    }
    s
}
