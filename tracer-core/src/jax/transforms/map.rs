//! `lax.map(f, xs)`, with and without `batch_size=`: bound as JAX binds it, a `scan` with no
//! carry (over `vmap(f)` for batches) inside a trace, the same loop run in values mode.

use super::control_flow::slice_leading;
use super::dispatch::{kw, obj, JaxObject};
use super::pytrees::flatten;
use super::trace::{
    array_avals, array_leaves, bind_control, cached_body, conform_operands, input_leaves, invar_avals, map_abstract, replace_array_leaves,
    trace_call, traced_body,
};
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::eval_control::Loop;
use crate::jax::ir::Prim;
use crate::jax::{apply1, TraceKind};
use std::rc::Rc;

/// `lax.map(f, xs)`: JAX binds it as a `scan` with no carry whose body is `f` on one slice of
/// `xs`, so inside a trace it is that one equation, and in values mode the same loop runs.
/// With `batch_size=` it is [`batched_map`].
pub(super) fn lax_map(interp: &mut Interp, f: &Value, xs: &Value, kwargs: &Kwargs) -> PyResult<Value> {
    if let Some(batch_size) = kw(kwargs, "batch_size").filter(|b| !matches!(b, Value::None)) {
        if let Some(ys) = batched_map(interp, f, xs, batch_size)? {
            return Ok(ys);
        }
    }
    let mut leaves = Vec::new();
    flatten(interp, xs, "", &mut leaves)?;
    let Some(first) = leaves.first().and_then(|(_, v)| v.as_array().cloned()) else {
        return Ok(Value::opaque("lax.map"));
    };
    let n = first.aval.shape.first().copied().unwrap_or(0);
    let x0 = slice_leading(interp, xs)?;
    let out = trace_call(interp, f, vec![x0.clone()], Vec::new(), TraceKind::ControlFlow("scan"), "map")?;
    if !kw(kwargs, "batch_size").is_some_and(|b| !matches!(b, Value::None)) {
        if let Some(ys) = mapped_values(interp, f, xs, &x0, &out, n)? {
            return Ok(ys);
        }
    }
    // Shapes only: inside a trace this binds an opaque equation, so only after the scan
    // could not be bound.
    let deps = array_leaves(interp, &[xs.clone()])?;
    map_abstract(interp, &out, &deps, &|a| a.stacked(n), "map")
}

/// `lax.map(f, xs, batch_size=b)` as JAX binds it (`_batch_and_remainder`): the first
/// `b * (n // b)` rows of each leaf reshaped to `(n // b, b, ...)` and mapped by a scan
/// whose body is `vmap(f)`, the remaining rows by `vmap(f)` directly, the two joined back
/// along the leading axis (`b = 0`: one `vmap` over everything). `None` when `xs` has no
/// array leaf or `f`'s results are not arrays (shapes only then).
fn batched_map(interp: &mut Interp, f: &Value, xs: &Value, batch_size: &Value) -> PyResult<Option<Value>> {
    let b = match batch_size {
        Value::Int(b) => *b,
        Value::Bool(b) => i64::from(*b),
        Value::Float(_) => return Err(interp.type_error("'float' object cannot be interpreted as an integer")),
        _ => return Ok(None),
    };
    let leaves = array_leaves(interp, std::slice::from_ref(xs))?;
    let Some(&n) = leaves.first().and_then(|l| l.aval.shape.first()) else { return Ok(None) };
    let n = n as i64;
    if b < 0 && n > 0 {
        // Python's divmod floors: a negative count of batches reaches `reshape`.
        let batches = -((n - b - 1) / -b);
        let rest: Vec<String> = leaves[0].aval.shape.iter().skip(1).map(|d| d.to_string()).collect();
        let sizes = [batches.to_string(), b.to_string()].into_iter().chain(rest).collect::<Vec<_>>().join(", ");
        return Err(interp.type_error(format!("reshape new_sizes must all be positive, got ({sizes}).")));
    }
    let (batches, remainder) = if b <= 0 { (0, n as usize) } else { ((n / b) as usize, (n % b) as usize) };
    let batch_elems = batches * b.max(0) as usize;
    let vmapped = obj(JaxObject::Vmapped { fun: f.clone(), in_axes: Value::Int(0), out_axes: Value::Int(0), axis_size: None });
    let rows = |interp: &mut Interp, leaf: &Rc<Array>, start: usize, stop: usize| -> PyResult<Rc<Array>> {
        if start == 0 && stop == leaf.aval.shape[0] {
            return Ok(leaf.clone());
        }
        let mut shape = leaf.aval.shape.to_vec();
        let (mut starts, mut limits) = (vec![0; shape.len()], shape.clone());
        (starts[0], limits[0], shape[0]) = (start, stop, stop - start);
        let prim = Prim::Slice { start: starts, limit: limits, strides: vec![1; shape.len()] };
        apply1(interp, prim, std::slice::from_ref(leaf))
    };
    let reshape = |interp: &mut Interp, leaf: &Rc<Array>, shape: Vec<usize>| -> PyResult<Rc<Array>> {
        apply1(interp, Prim::Reshape { new_sizes: shape.clone() }, std::slice::from_ref(leaf))
    };
    let mut scan_leaves = Vec::new();
    let mut remainder_leaves = Vec::new();
    for leaf in &leaves {
        if leaf.aval.shape.first().copied() != Some(n as usize) {
            return Ok(None);
        }
        if batches > 0 {
            let head = rows(interp, leaf, 0, batch_elems)?;
            let shape: Vec<usize> = [batches, b as usize].into_iter().chain(leaf.aval.shape.iter().skip(1).copied()).collect();
            scan_leaves.push(reshape(interp, &head, shape)?);
        }
        if batches == 0 || remainder > 0 {
            remainder_leaves.push(rows(interp, leaf, batch_elems, n as usize)?);
        }
    }
    let remainder_xs =
        (!remainder_leaves.is_empty()).then(|| replace_array_leaves(interp, xs, &mut remainder_leaves.into_iter())).transpose()?;
    let scan_ys = match batches {
        0 => None,
        _ => {
            let scan_xs = replace_array_leaves(interp, xs, &mut scan_leaves.into_iter())?;
            Some(lax_map(interp, &vmapped, &scan_xs, &Kwargs::new())?)
        }
    };
    let remainder_ys = match remainder_xs {
        Some(r) => Some(interp.call(&vmapped, vec![r], Kwargs::new())?),
        None => None,
    };
    let Some(scan_ys) = scan_ys else { return Ok(remainder_ys) };
    let mut joined = Vec::new();
    let scanned = array_leaves(interp, std::slice::from_ref(&scan_ys))?;
    let tails = match &remainder_ys {
        Some(r) => array_leaves(interp, std::slice::from_ref(r))?,
        None => Vec::new(),
    };
    if remainder_ys.is_some() && tails.len() != scanned.len() {
        return Ok(None);
    }
    for (k, y) in scanned.iter().enumerate() {
        // `x.reshape(-1, *x.shape[2:])`, then `lax.concatenate([x, tail], 0)`.
        let Some(rows_per_batch) = y.aval.shape.get(1) else { return Ok(None) };
        let shape: Vec<usize> = [y.aval.shape[0] * rows_per_batch].into_iter().chain(y.aval.shape.iter().skip(2).copied()).collect();
        let flat = reshape(interp, y, shape)?;
        joined.push(match tails.get(k) {
            Some(tail) if tail.aval.ndim() == flat.aval.ndim() => {
                let mut shape = flat.aval.shape.to_vec();
                shape[0] += tail.aval.shape[0];
                apply1(interp, Prim::Concatenate { dimension: 0 }, &[flat, tail.clone()])?
            }
            Some(_) => return Ok(None),
            None => flat,
        });
    }
    replace_array_leaves(interp, &scan_ys, &mut joined.into_iter()).map(Some)
}

/// `lax.map`'s results as a `scan` with no carry: one equation inside a trace, the loop run
/// in values mode outside one. `out` is the body's output for one slice `x0` of `xs`.
fn mapped_values(interp: &mut Interp, f: &Value, xs: &Value, x0: &Value, out: &Value, n: usize) -> PyResult<Option<Value>> {
    let y_avals = array_avals(interp, &[out])?.iter().map(|a| a.stacked(n)).collect::<Vec<_>>();
    let outs = if interp.jax.trace_depth() > 0 {
        let Some(body) = traced_body(interp, f, std::slice::from_ref(x0), "map")? else { return Ok(None) };
        let want: Vec<Aval> = invar_avals(&body).iter().map(|a| a.stacked(n)).collect();
        let Some(operands) = conform_operands(interp, &[xs], &want)? else { return Ok(None) };
        let prim = Prim::Scan { length: n, reverse: false, num_carry: 0 };
        bind_control(interp, prim, None, &[body], operands)?
    } else {
        let (Some(body), Some(x)) = (cached_body(interp, f, std::slice::from_ref(x0), "map")?, input_leaves(interp, xs)?) else {
            return Ok(None);
        };
        let at = Loop { site: interp.site(), label: "map" };
        match crate::jax::eval_control::scan(interp, &body, &[], &x, n, false, &y_avals, at)? {
            Some(outs) => outs,
            None => return Ok(None),
        }
    };
    replace_array_leaves(interp, out, &mut outs.into_iter()).map(Some)
}
