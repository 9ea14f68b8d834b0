//! `tf.gather_nd`, `tf.scatter_nd` and `tf.tensor_scatter_nd_{update,add,sub,min,max}`:
//! TensorFlow's dtype and shape checks (eager kernel errors, graph shape-inference errors),
//! then the JAX model's `gather` and `scatter` primitives, bound as `jax.numpy` indexing
//! binds them: the last axis of `indices` is split into one index array per indexed
//! dimension, `params[tuple(cols)]` for the gather, `tensor.at[tuple(cols)].set(updates)`
//! (`add`, `min`, `max`; `sub` adds the negated updates) for the scatter. Where TensorFlow
//! and JAX part (an index out of range: TensorFlow's CPU kernels raise, JAX clamps or
//! drops), indices whose values are known are checked first, eagerly at the op and in a
//! graph when it runs (`graph_run.rs`); what is not known is not claimed.

use std::rc::Rc;

use super::errors::{self, dims};
use super::ops::{missing, Args};
use super::tensor::{self, to_tensor, unknown_tensor};
use super::TfFn;
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::numpy as jnp;
use crate::jax::surface::JaxFn as J;

/// How a scatter combines an update with what is there, and TensorFlow's node for it.
fn scatter_kind(f: TfFn) -> Option<(&'static str, &'static str)> {
    Some(match f {
        TfFn::TensorScatterNdUpdate => ("TensorScatterUpdate", "set"),
        TfFn::TensorScatterNdAdd => ("TensorScatterAdd", "add"),
        TfFn::TensorScatterNdSub => ("TensorScatterSub", "add"),
        TfFn::TensorScatterNdMin => ("TensorScatterMin", "min"),
        TfFn::TensorScatterNdMax => ("TensorScatterMax", "max"),
        TfFn::ScatterNd => ("ScatterNd", "add"),
        _ => return None,
    })
}

/// A Python list or tuple argument: TensorFlow 2.21's eager error then ends without ` name: `.
fn listed(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::List(_) | Value::Tuple(_)))
}

/// The eager prefix of errors raised inside an op's kernel.
fn wrapped(node: &str) -> String {
    format!("{{{{function_node __wrapped__{node}_device_/job:localhost/replica:0/task:0/device:CPU:0}}}}")
}

fn eager_error(interp: &Interp, node: &str, message: &str, listed: bool, code: Code) -> Flow {
    let name = if listed { "" } else { " name: " };
    interp.raise("InvalidArgumentError", code, format!("{} {message} [Op:{node}]{name}", wrapped(node)))
}

pub fn call(interp: &mut Interp, f: TfFn, p: &Args) -> PyResult<Value> {
    let unknown = |interp: &Interp| Ok(unknown_tensor(interp, "an nd gather or scatter tracelens does not follow"));
    if f == TfFn::GatherNd {
        let (Some(params), Some(raw)) = (p.get(0, "params"), p.get(1, "indices")) else { return Err(missing(interp, f, "params")) };
        let (Some(x), Some(idx)) = (to_tensor(interp, params, None)?, to_tensor(interp, raw, None)?) else { return unknown(interp) };
        let any_listed = listed(Some(params)) || listed(Some(raw));
        return gather_nd(interp, p, &x, raw, &idx, any_listed);
    }
    let Some((node, op)) = scatter_kind(f) else { return unknown(interp) };
    let any_listed = (0..3).any(|i| listed(p.args.get(i)));
    let (Some(raw), Some(raw_updates)) =
        (p.get(usize::from(f != TfFn::ScatterNd), "indices"), p.get(1 + usize::from(f != TfFn::ScatterNd), "updates"))
    else {
        return Err(missing(interp, f, "indices"));
    };
    let tensor = if f == TfFn::ScatterNd {
        let Some(updates) = to_tensor(interp, raw_updates, None)? else { return unknown(interp) };
        let Some(shape) = p.get(2, "shape") else { return Err(missing(interp, f, "shape")) };
        let Some(dims) = super::ops::shape_dims(interp, shape)? else { return unknown(interp) };
        let Some(dims) = dims.into_iter().collect::<Option<Vec<usize>>>() else { return unknown(interp) };
        let shape = Value::tuple(dims.iter().map(|&d| Value::Int(d as i64)).collect());
        let zeros = super::with_x64(interp, |i| {
            super::ops::delegate(i, J::Zeros, vec![shape], vec![(Rc::from("dtype"), Value::DType(updates.aval.dtype))])
        })?;
        let Value::Array(z) = zeros else { return unknown(interp) };
        z
    } else {
        let Some(t) = p.get(0, "tensor") else { return Err(missing(interp, f, "tensor")) };
        let Some(t) = to_tensor(interp, t, None)? else { return unknown(interp) };
        t
    };
    let Some(idx) = to_tensor(interp, raw, None)? else { return unknown(interp) };
    let Some(updates) = to_tensor(interp, raw_updates, Some(tensor.aval.dtype))? else { return unknown(interp) };
    if !idx.aval.dtype.is_integer() || idx.aval.ndim() == 0 {
        return unknown(interp);
    }
    if updates.aval.dtype != tensor.aval.dtype {
        // Only a tensor of another dtype is claimed: Python numbers take the tensor's.
        if f == TfFn::ScatterNd || !matches!(raw_updates, Value::Array(_)) {
            return unknown(interp);
        }
        return Err(updates_dtype(interp, node, tensor.aval.dtype, updates.aval.dtype, any_listed));
    }
    let k = idx.aval.shape[idx.aval.ndim() - 1];
    let outer = &idx.aval.shape[..idx.aval.ndim() - 1];
    if k == 0 || k > tensor.aval.ndim() {
        return unknown(interp);
    }
    let (u, r) = (&updates.aval.shape, outer.len());
    if u.len() != r + tensor.aval.ndim() - k {
        return unknown(interp);
    }
    if let Some(j) = (0..r).find(|&j| outer[j] != u[j]) {
        return Err(outer_mismatch(interp, f, node, &idx.aval.shape, u, j, any_listed));
    }
    if u[r..] != tensor.aval.shape[k..] {
        return unknown(interp);
    }
    let known = known_rows(raw, &idx);
    if let Some(rows) = &known {
        if let Some(message) = out_of_range(rows, outer, &tensor.aval.shape, "shape", "") {
            if !super::in_graph(interp) {
                return Err(eager_error(interp, node, &message, any_listed, Code::PythonException));
            }
            let r = scatter(interp, &tensor, &idx, &updates, f, op)?;
            super::graph_run::record(interp, &r, node, message);
            return Ok(r);
        }
    }
    let r = scatter(interp, &tensor, &idx, &updates, f, op)?;
    // Two updates of one element: which one `update` keeps is not claimed (`add`, `min` and
    // `max` do not depend on the order).
    let duplicates = known.as_ref().map_or(true, |rows| (1..rows.len()).any(|i| rows[..i].contains(&rows[i])));
    if let (true, Value::Array(a)) = (duplicates && op == "set", &r) {
        a.forget_values("a tensor scatter that updates an element twice");
    }
    Ok(r)
}

/// `tf.gather_nd(params, indices, batch_dims=0)`. With `batch_dims = b`, the first `b`
/// dimensions of both are a batch: each example's indices index its own slice of `params`
/// (bound as a gather whose first `b` index arrays are the batch positions).
fn gather_nd(interp: &mut Interp, p: &Args, x: &Rc<Array>, raw: &Value, idx: &Rc<Array>, any_listed: bool) -> PyResult<Value> {
    let unknown = |interp: &Interp| Ok(unknown_tensor(interp, "an nd gather tracelens does not follow"));
    let b = match p.get(2, "batch_dims") {
        None => 0,
        Some(Value::Int(b)) if *b >= 0 => *b as usize,
        Some(_) => return unknown(interp),
    };
    if idx.aval.dtype.is_floating() {
        return Err(float_indices(interp, idx.aval.dtype, any_listed));
    }
    if !idx.aval.dtype.is_integer() || idx.aval.ndim() == 0 {
        return unknown(interp);
    }
    let k = idx.aval.shape[idx.aval.ndim() - 1];
    let rank = x.aval.ndim();
    if b > 0 {
        // Batch dimensions that differ are a reshape's error in TensorFlow: not claimed.
        if b >= idx.aval.ndim() || b + k > rank || x.aval.shape[..b] != idx.aval.shape[..b] || k == 0 {
            return unknown(interp);
        }
        if known_rows(raw, idx)
            .is_some_and(|rows| rows.iter().any(|row| row.iter().zip(&x.aval.shape[b..]).any(|(&i, &d)| i < 0 || i >= d as i64)))
        {
            return unknown(interp);
        }
        let Some(mut cols) = columns(interp, idx, k)? else { return unknown(interp) };
        let outer: Vec<usize> = idx.aval.shape[..idx.aval.ndim() - 1].to_vec();
        let mut batch = Vec::new();
        for d in 0..b {
            let Some(iota) = batch_positions(interp, &outer, d)? else { return unknown(interp) };
            batch.push(iota);
        }
        batch.append(&mut cols);
        let got = jnp::getitem(interp, x, &Value::tuple(batch));
        return lift(interp, got, "gather_nd");
    }
    if k > rank {
        if super::in_graph(interp) {
            let msg = format!(
                "indices.shape[-1] must be <= params.rank, but saw indices shape: {} and params shape: {} for '{{{{node GatherNd}}}}' with input shapes: {}, {}.",
                dims(&idx.aval.shape),
                dims(&x.aval.shape),
                dims(&x.aval.shape),
                dims(&idx.aval.shape)
            );
            return Err(interp.raise("ValueError", Code::ShapeMismatch, msg));
        }
        let message = format!("index innermost dimension length must be <= params rank; saw: {k} vs. {rank}");
        return Err(eager_error(interp, "GatherNd", &message, any_listed, Code::ShapeMismatch));
    }
    if k == 0 {
        return unknown(interp);
    }
    let outer = &idx.aval.shape[..idx.aval.ndim() - 1];
    let failing = known_rows(raw, idx).and_then(|rows| out_of_range(&rows, outer, &x.aval.shape, "param shape", ", node name: GatherNd"));
    if let (Some(message), false) = (&failing, super::in_graph(interp)) {
        return Err(eager_error(interp, "GatherNd", message, any_listed, Code::PythonException));
    }
    let cols = columns(interp, idx, k)?;
    let Some(cols) = cols else { return unknown(interp) };
    let got = jnp::getitem(interp, x, &Value::tuple(cols));
    let r = lift(interp, got, "gather_nd")?;
    match failing {
        Some(message) => super::graph_run::record(interp, &r, "GatherNd", message),
        // Indices the graph computes from the call's values: each call's decide (`graph_run.rs`).
        None => {
            let check = super::graph_run::RunCheck::GatherNd { outer: outer.to_vec(), shape: x.aval.shape.to_vec() };
            super::graph_run::record_check(interp, idx, Some(&r), "GatherNd", check);
        }
    }
    Ok(r)
}

/// The position along dimension `d` of each element of an array of shape `outer`: an
/// `arange` along `d`, broadcast over the others.
fn batch_positions(interp: &mut Interp, outer: &[usize], d: usize) -> PyResult<Option<Value>> {
    let iota = super::ops::delegate(
        interp,
        J::Arange,
        vec![Value::Int(outer[d] as i64)],
        vec![(Rc::from("dtype"), Value::DType(crate::jax::dtypes::DType::I32))],
    )?;
    let along: Vec<Value> = (0..outer.len()).map(|i| Value::Int(if i == d { outer[d] as i64 } else { 1 })).collect();
    let column = super::ops::delegate(interp, J::Reshape, vec![iota, Value::tuple(along)], Vec::new())?;
    let full = Value::tuple(outer.iter().map(|&n| Value::Int(n as i64)).collect());
    let wide = super::ops::delegate(interp, J::BroadcastTo, vec![column, full], Vec::new())?;
    Ok(matches!(wide, Value::Array(_)).then_some(wide))
}

/// `indices[..., j]` for each `j < k`: the index arrays of the `k` indexed dimensions.
fn columns(interp: &mut Interp, idx: &Rc<Array>, k: usize) -> PyResult<Option<Vec<Value>>> {
    let mut cols = Vec::new();
    for j in 0..k {
        let got = jnp::getitem(interp, idx, &Value::tuple(vec![Value::Ellipsis, Value::Int(j as i64)]));
        let col = lift(interp, got, "gather_nd")?;
        if !matches!(col, Value::Array(_)) {
            return Ok(None);
        }
        cols.push(col);
    }
    Ok(Some(cols))
}

/// The scatter itself: `.at[cols].<op>(updates)` on the JAX model.
fn scatter(interp: &mut Interp, tensor: &Rc<Array>, idx: &Rc<Array>, updates: &Rc<Array>, f: TfFn, op: &str) -> PyResult<Value> {
    let k = idx.aval.shape[idx.aval.ndim() - 1];
    let Some(cols) = columns(interp, idx, k)? else { return Ok(unknown_tensor(interp, "a scatter of unknown indices")) };
    let mut upd = Value::Array(updates.clone());
    if f == TfFn::TensorScatterNdSub {
        upd = super::ops::delegate(interp, J::Negative, vec![upd], Vec::new())?;
    }
    let at = crate::jax::transforms::at::at_getitem(tensor, Value::tuple(cols));
    let method = interp.getattr(&at, op)?;
    let r = interp.call(&method, vec![upd], Vec::new());
    lift(interp, r, "tensor_scatter_nd")
}

/// A result of the JAX model as a tensor; an error JAX raises there is not TensorFlow's.
fn lift(interp: &mut Interp, r: PyResult<Value>, what: &str) -> PyResult<Value> {
    match r {
        Ok(v) => Ok(tensor::mark(v)),
        Err(Flow::Raise(exc)) => {
            interp
                .stops
                .push((exc.site, format!("tf.{what}: the JAX model raised {} where TensorFlow's check is not modelled", exc.class.name)));
            Ok(unknown_tensor(interp, "an nd op whose TensorFlow error is not modelled"))
        }
        Err(e) => Err(e),
    }
}

/// The index rows (`indices` reshaped to `[-1, k]`) when their values are known: Python ints
/// as the user wrote them (known in a graph too), or a concrete tensor's values.
pub(super) fn known_rows(raw: &Value, idx: &Rc<Array>) -> Option<Vec<Vec<i64>>> {
    let k = *idx.aval.shape.last()?;
    let values: Vec<i64> = match super::graph_run::python_ints(raw) {
        Some(v) => v,
        None => crate::jax::eval::force_ints(&idx.known()?, 1 << 16)?.iter().map(|&v| v as i64).collect(),
    };
    if k == 0 || values.len() != idx.aval.shape.iter().product::<usize>() {
        return None;
    }
    Some(values.chunks(k).map(<[i64]>::to_vec).collect())
}

/// The first index row that does not index into `shape` (TensorFlow's CPU kernels take no
/// negative index), in the kernel's words: `indices[1] = [3, 0] does not index into param
/// shape [3,4]`, the row's position over the outer dimensions of `indices`.
pub(super) fn out_of_range(rows: &[Vec<i64>], outer: &[usize], shape: &[usize], what: &str, tail: &str) -> Option<String> {
    let (flat, row) = rows.iter().enumerate().find(|(_, row)| row.iter().zip(shape).any(|(&i, &d)| i < 0 || i >= d as i64))?;
    // The zip above stops at the row's length: the first `k` dimensions are the indexed ones.
    let mut position = vec![0; outer.len()];
    let mut rest = flat;
    for (p, d) in position.iter_mut().zip(outer).rev() {
        *p = rest % d.max(&1);
        rest /= d.max(&1);
    }
    let position: Vec<String> = position.iter().map(usize::to_string).collect();
    let row: Vec<String> = row.iter().map(i64::to_string).collect();
    let full = dims(shape);
    Some(format!("indices[{}] = [{}] does not index into {what} {full}{tail}", position.join(","), row.join(", ")))
}

/// `indices` of a floating dtype given to `tf.gather_nd`.
fn float_indices(interp: &Interp, d: crate::jax::dtypes::DType, any_listed: bool) -> Flow {
    if super::in_graph(interp) {
        let msg =
            format!("Value passed to parameter 'indices' has DataType {} not in list of allowed values: int16, int32, int64", d.name());
        return interp.raise("TypeError", Code::DtypeMismatch, msg);
    }
    let msg = format!(
        "Value for attr 'Tindices' of {} is not in the list of allowed values: int16, int32, int64\n\t; NodeDef: {{{{node GatherNd}}}}; Op<name=GatherNd; signature=params:Tparams, indices:Tindices -> output:Tparams; attr=Tparams:type; attr=Tindices:type,allowed=[DT_INT16, DT_INT32, DT_INT64]; attr=bad_indices_policy:string,default=\"\"> [Op:GatherNd]",
        errors::kernel_dtype_name(d)
    );
    let _ = any_listed;
    interp.raise("InvalidArgumentError", Code::DtypeMismatch, msg)
}

/// `updates` of another dtype than `tensor`.
fn updates_dtype(interp: &Interp, node: &str, want: crate::jax::dtypes::DType, got: crate::jax::dtypes::DType, any_listed: bool) -> Flow {
    if super::in_graph(interp) {
        let msg = format!(
            "Input 'updates' of '{node}' Op has type {} that does not match type {} of argument 'tensor'.",
            got.name(),
            want.name()
        );
        return interp.raise("TypeError", Code::DtypeMismatch, msg);
    }
    let name = if any_listed { "" } else { " name: " };
    let msg = format!(
        "cannot compute {node} as input #2(zero-based) was expected to be a {} tensor but is a {} tensor [Op:{node}]{name}",
        errors::kernel_dtype_name(want),
        errors::kernel_dtype_name(got)
    );
    interp.raise("InvalidArgumentError", Code::DtypeMismatch, msg)
}

/// The outer dimensions of `indices` (all but its last) differ from the first ones of
/// `updates`, at dimension `j`.
fn outer_mismatch(interp: &Interp, f: TfFn, node: &str, idx: &[usize], u: &[usize], j: usize, any_listed: bool) -> Flow {
    let r = idx.len() - 1;
    if super::in_graph(interp) {
        let msg = format!(
            "Dimensions [0,{r}) of indices[shape={}] = {} must match dimensions [0,{r}) of updates[shape={}] = {}: Dimension {j} in both shapes must be equal, but are {} and {}. Shapes are {} and {}. for '{{{{node {node}}}}}'",
            dims(idx),
            dims(&idx[..r]),
            dims(u),
            dims(&u[..r]),
            idx[j],
            u[j],
            dims(&idx[..r]),
            dims(&u[..r])
        );
        return interp.raise("ValueError", Code::ShapeMismatch, msg);
    }
    let message = if f == TfFn::ScatterNd {
        format!("Dimensions [0,{r}) of indices[shape={}] must match dimensions [0,{r}) of updates[shape={}]", dims(idx), dims(u))
    } else {
        format!("Outer dimensions of indices and update must match. Indices shape: {}, updates shape:{}", dims(idx), dims(u))
    };
    // The scatter_nd kernel's message ends at `[Op:ScatterNd]` however it was called.
    eager_error(interp, node, &message, any_listed || f == TfFn::ScatterNd, Code::ShapeMismatch)
}
