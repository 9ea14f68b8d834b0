//! `x.at[idx].set(v)` and its siblings: the `.at` helper objects' indexing and the update
//! they bind (`scatter`, or a gather for `.get`), with JAX's index normalisation.

use super::dispatch::{obj, JaxObject};
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::apply1;
use crate::jax::array::Array;
use crate::jax::ir::{IndexMode, Prim};
use crate::jax::numpy::{self as jnp, operand, Operand};
use std::rc::Rc;

/// `x.at[idx]`: indexing the helper.
pub fn at_getitem(array: &Rc<Array>, index: Value) -> Value {
    obj(JaxObject::AtIndex { array: array.clone(), index })
}

pub(super) fn at_update(
    interp: &mut Interp,
    array: &Rc<Array>,
    index: &Value,
    op: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> PyResult<Value> {
    if op == "apply" {
        // `x.at[idx].apply(f)`: `f` applied to the selected elements. Each element selected once
        // (integers and slices) is `x.at[idx].set(f(x[idx]))` exactly; an index array may select
        // one twice, and then JAX applies `f` twice: the shape and dtype still hold, the values
        // are not computed.
        let func = args.first().cloned().unwrap_or(Value::None);
        let selected = jnp::getitem(interp, array, index)?;
        let applied = interp.call(&func, vec![selected], Vec::new())?;
        let result = at_update(interp, array, index, "set", vec![applied], kwargs)?;
        let selects_by_array = match index {
            Value::Tuple(t) => t.iter().any(|v| !matches!(v, Value::Int(_) | Value::Slice(_) | Value::None | Value::Ellipsis)),
            v => !matches!(v, Value::Int(_) | Value::Slice(_) | Value::None | Value::Ellipsis),
        };
        if let (true, Value::Array(a)) = (selects_by_array, &result) {
            a.forget_values("`.at[].apply` with an index array, which may select an element twice");
        }
        return Ok(result);
    }
    if op == "divide" || op == "power" {
        // JAX: `x / ones_like(x).at[idx].multiply(u)` and `x ** ones_like(x).at[idx].multiply(u)`.
        let ones = jnp::call(interp, crate::jax::surface::JaxFn::OnesLike, vec![Value::Array(array.clone())], Vec::new())?;
        let Value::Array(ones) = ones else { return Ok(ones) };
        let factor = at_update(interp, &ones, index, "mul", args, kwargs)?;
        let bin = if op == "divide" { crate::syntax::ast::BinOp::Div } else { crate::syntax::ast::BinOp::Pow };
        return jnp::binary_op(interp, bin, &Value::Array(array.clone()), &factor);
    }
    let kwarg = |name: &str| kwargs.iter().find(|(k, _)| &**k == name).map(|(_, v)| v.clone()).filter(|v| !v.is_none());
    let (mode_arg, fill_arg) = (kwarg("mode"), kwarg("fill_value"));
    // TL206: a static out-of-bounds index is dropped silently by scatter (checked before the
    // gather below, whose own TL206 would otherwise speak of clamping); `mode='clip'` clamps it.
    let clips = matches!(&mode_arg, Some(Value::Str(m)) if &**m == "clip");
    let items: Vec<Value> = match index {
        Value::Tuple(t) => (**t).clone(),
        other => vec![other.clone()],
    };
    for (dim, it) in items.iter().enumerate().filter(|_| op != "get" && !clips) {
        if let Value::Int(i) = it {
            if let Some(&n) = array.aval.shape.get(dim) {
                if *i >= n as i64 || *i < -(n as i64) {
                    let site = interp.site();
                    let msg = format!(
                        "clamped index: index {i} is out of bounds for axis {dim} with size {n}; JAX drops this `.at[...].{op}` update silently instead of raising"
                    );
                    interp.warn(Code::ClampedIndex, site, msg, Vec::new());
                }
            }
        }
    }
    if op == "get" {
        // Without `mode=`, `.at[idx].get()` is `x[idx]` (`PROMISE_IN_BOUNDS`, which clamps).
        if mode_arg.is_none() {
            return jnp::getitem(interp, array, index);
        }
        let Some((mode, fill_value)) =
            jnp::gather_mode(interp, mode_arg.as_ref(), fill_arg.as_ref(), array.aval.dtype, IndexMode::FillOrDrop)?
        else {
            return Ok(Value::opaque("`.at[].get` with an unknown mode or fill_value"));
        };
        // A static index out of bounds, or an index array: a gather in the mode asked for.
        let static_out_of_bounds = items.iter().enumerate().any(|(d, it)| match (it, array.aval.shape.get(d)) {
            (Value::Int(i), Some(&n)) => *i >= n as i64 || *i < -(n as i64),
            _ => false,
        });
        let (plan, arrays) = scatter_index(interp, array, &items)?;
        let plan = match plan {
            Some(plan) if !arrays.is_empty() || static_out_of_bounds => plan,
            _ => return jnp::getitem(interp, array, index),
        };
        let shapes: Vec<&[usize]> = arrays.iter().map(|a| a.aval.shape.as_slice()).collect();
        crate::jax::prims::indexing::kernels::selection_shape(&array.aval.shape, &plan, &shapes)
            .map_err(|m| interp.raise("IndexError", Code::ShapeMismatch, m))?;
        let mut ins = vec![array.clone()];
        ins.extend(arrays);
        let prim = Prim::Gather { mode, fill_value, index: plan };
        return apply1(interp, prim, &ins).map(Value::Array);
    }
    let mode = match jnp::gather_mode(interp, mode_arg.as_ref(), None, array.aval.dtype, IndexMode::FillOrDrop)? {
        Some((mode, _)) => mode,
        None => return Ok(Value::opaque("`.at[]` update with an unknown mode")),
    };
    let selected = jnp::getitem(interp, array, index)?;
    let upd = args.into_iter().next().unwrap_or(Value::None);
    let u = match operand(interp, &upd)? {
        Operand::Array(u) => u,
        Operand::Unknown => return Ok(Value::opaque("scatter with an unknown update")),
    };
    if let Value::Array(sel) = &selected {
        // `_scatter_impl` broadcasts the update to the slice with `jnp.broadcast_to`.
        if let Some(message) = jnp::broadcast_to_error(&u.aval, &sel.aval.shape) {
            return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
        }
    }
    let u = jnp::convert(interp, &u, array.aval.dtype, array.aval.weak)?;
    let sop = match op {
        "add" => crate::jax::ir::ScatterOp::Add,
        "mul" => crate::jax::ir::ScatterOp::Mul,
        "min" => crate::jax::ir::ScatterOp::Min,
        "max" => crate::jax::ir::ScatterOp::Max,
        _ => crate::jax::ir::ScatterOp::Set,
    };
    let (index, arrays) = scatter_index(interp, array, &items)?;
    // JAX's indexer marks the indices unique when no index array has an axis; the caller
    // can promise it (`unique_indices=True`).
    let promised = kwargs.iter().any(|(k, v)| &**k == "unique_indices" && matches!(v, Value::Bool(true)));
    let unique_indices = promised || arrays.iter().all(|a| a.aval.ndim() == 0);
    let mut ins = vec![array.clone(), u];
    ins.extend(arrays);
    let prim = Prim::Scatter { op: sop, mode, index, unique_indices };
    apply1(interp, prim, &ins).map(Value::Array)
}

/// The indexing expression of `x.at[items]` for `scatter`, with its index arrays; `None`
/// for an expression the kernel does not model (a boolean mask).
pub fn scatter_index(
    interp: &mut Interp,
    array: &Rc<Array>,
    items: &[Value],
) -> PyResult<(Option<Vec<crate::jax::ir::IndexItem>>, Vec<Rc<Array>>)> {
    use crate::jax::ir::IndexItem;
    let nd = array.aval.ndim();
    let consumed = items.iter().filter(|v| !matches!(v, Value::None | Value::Ellipsis)).count();
    let mut plan = Vec::new();
    let mut arrays = Vec::new();
    let mut dim = 0usize;
    for it in items {
        match it {
            Value::None => plan.push(IndexItem::NewAxis),
            Value::Ellipsis => {
                for _ in 0..nd.saturating_sub(consumed) {
                    let len = array.aval.shape.get(dim).copied().unwrap_or(0);
                    plan.push(IndexItem::Slice { start: 0, len, step: 1 });
                    dim += 1;
                }
            }
            Value::Int(_) | Value::Bool(_) => {
                plan.push(IndexItem::Int(crate::interp::ops::as_int(it).unwrap_or(0)));
                dim += 1;
            }
            Value::Slice(sl) => {
                let n = array.aval.shape.get(dim).copied().unwrap_or(0) as i64;
                let (start, stop, step) = interp.slice_indices(sl, n)?;
                let len = crate::interp::ops::range_len(start, stop, step).max(0) as usize;
                plan.push(IndexItem::Slice { start, len, step });
                dim += 1;
            }
            Value::List(_) | Value::Array(_) => match operand(interp, it)? {
                Operand::Array(ix) if ix.aval.dtype.is_integer() => {
                    plan.push(IndexItem::Array);
                    arrays.push(ix);
                    dim += 1;
                }
                _ => return Ok((None, Vec::new())),
            },
            _ => return Ok((None, Vec::new())),
        }
    }
    Ok((Some(plan), arrays))
}
