//! The `tf` functions of shape manipulation, indexing, sorting, products and linear algebra,
//! and `tf.debugging`: TensorFlow's arguments and checks, then the `jax.numpy` function.

use std::rc::Rc;

use super::errors;
use super::ops::{delegate, missing, tensor_arg, Args};
use super::ops_special::{cast, dims_error, tensor_list};
use super::tensor::{self, to_tensor, unknown_tensor};
use super::TfFn;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::dtypes::DType;
use crate::jax::surface::JaxFn as J;

fn kw(name: &str, v: Value) -> (Rc<str>, Value) {
    (Rc::from(name), v)
}

fn arr(a: &Rc<Array>) -> Value {
    Value::Array(a.clone())
}

fn int_of(v: Option<&Value>) -> Option<i64> {
    v.and_then(crate::interp::ops::as_int)
}

pub fn call(interp: &mut Interp, f: TfFn, p: &Args) -> PyResult<Value> {
    let unknown = |interp: &Interp| Ok(unknown_tensor(interp, super::ops::UNREAD_ARGUMENTS));
    match f {
        TfFn::Reshape => {
            let x = tensor_arg!(interp, f, p, 0, "tensor");
            let Some(v) = p.get(1, "shape") else { return Err(missing(interp, f, "shape")) };
            let dims: Vec<i64> = match v {
                Value::List(_) | Value::Tuple(_) => {
                    let mut out = Vec::new();
                    for d in interp.iterate(v)? {
                        match crate::interp::ops::as_int(&d) {
                            Some(i) => out.push(i),
                            None => return unknown(interp),
                        }
                    }
                    out
                }
                _ => return unknown(interp),
            };
            if dims.iter().all(|&d| d >= 0) {
                let to: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
                if to.iter().product::<usize>() != x.aval.shape.iter().product::<usize>() {
                    return Err(errors::reshape_mismatch(interp, &x.aval.shape, &to));
                }
            }
            let shape = Value::tuple(dims.into_iter().map(Value::Int).collect());
            delegate(interp, J::Reshape, vec![arr(&x), shape], Vec::new())
        }
        TfFn::Transpose => {
            let x = tensor_arg!(interp, f, p, 0, "a");
            let perm = p.get(1, "perm").cloned().unwrap_or(Value::None);
            delegate(interp, J::Transpose, vec![arr(&x), perm], Vec::new())
        }
        TfFn::ExpandDims => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            let Some(axis) = int_of(p.get(1, "axis")) else { return unknown(interp) };
            delegate(interp, J::ExpandDims, vec![arr(&x), Value::Int(axis)], Vec::new())
        }
        TfFn::Squeeze => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            let axis = p.get(1, "axis").cloned().unwrap_or(Value::None);
            delegate(interp, J::Squeeze, vec![arr(&x), axis], Vec::new())
        }
        TfFn::Concat => {
            let Some(values) = p.get(0, "values") else { return Err(missing(interp, f, "values")) };
            let Some(axis) = int_of(p.get(1, "axis")) else { return unknown(interp) };
            let Some(parts) = tensor_list(interp, values)? else { return unknown(interp) };
            let Some(first) = parts.first().cloned() else { return unknown(interp) };
            let nd = first.aval.ndim() as i64;
            if parts.iter().any(|t| t.aval.ndim() as i64 != nd || t.aval.dtype != first.aval.dtype) || axis >= nd || axis < -nd {
                return unknown(interp);
            }
            let ax = if axis < 0 { axis + nd } else { axis } as usize;
            for t in &parts[1..] {
                if let Some(dim) = (0..nd as usize).find(|&d| d != ax && t.aval.shape[d] != first.aval.shape[d]) {
                    return Err(dims_error(interp, &first.aval.shape, &t.aval.shape, ax, dim));
                }
            }
            let list = Value::list(parts.iter().map(arr).collect());
            delegate(interp, J::Concatenate, vec![list, Value::Int(axis)], Vec::new())
        }
        TfFn::Stack => {
            let Some(values) = p.get(0, "values") else { return Err(missing(interp, f, "values")) };
            let axis = int_of(p.get(1, "axis")).unwrap_or(0);
            let Some(parts) = tensor_list(interp, values)? else { return unknown(interp) };
            let Some(first) = parts.first().cloned() else { return unknown(interp) };
            // Differing shapes are TensorFlow's error, whose wording is not modelled.
            if parts.iter().any(|t| t.aval.shape != first.aval.shape || t.aval.dtype != first.aval.dtype) {
                return unknown(interp);
            }
            let list = Value::list(parts.iter().map(arr).collect());
            delegate(interp, J::Stack, vec![list, Value::Int(axis)], Vec::new())
        }
        TfFn::Unstack => {
            let x = tensor_arg!(interp, f, p, 0, "value");
            if int_of(p.get(2, "axis")).unwrap_or(0) != 0 || x.aval.ndim() == 0 {
                return unknown(interp);
            }
            let mut rows = Vec::new();
            for i in 0..x.aval.shape[0] {
                rows.push(tensor::getitem(interp, &x, &Value::Int(i as i64))?);
            }
            Ok(Value::list(rows))
        }
        TfFn::Split => {
            let x = tensor_arg!(interp, f, p, 0, "value");
            let Some(n) = int_of(p.get(1, "num_or_size_splits")) else { return unknown(interp) };
            let axis = int_of(p.get(2, "axis")).unwrap_or(0);
            let parts = delegate(interp, J::Split, vec![arr(&x), Value::Int(n)], vec![kw("axis", Value::Int(axis))])?;
            match parts {
                Value::List(_) | Value::Tuple(_) => Ok(Value::list(interp.iterate(&parts)?.into_iter().map(tensor::mark).collect())),
                other => Ok(other),
            }
        }
        TfFn::Tile => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            let Some(m) = p.get(1, "multiples") else { return Err(missing(interp, f, "multiples")) };
            delegate(interp, J::Tile, vec![arr(&x), m.clone()], Vec::new())
        }
        TfFn::BroadcastTo => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            let Some(shape) = p.get(1, "shape") else { return Err(missing(interp, f, "shape")) };
            delegate(interp, J::BroadcastTo, vec![arr(&x), shape.clone()], Vec::new())
        }
        TfFn::Shape | TfFn::Rank | TfFn::Size => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            let out = match p.get(1, "out_type") {
                Some(Value::DType(d) | Value::TfDType(d)) => *d,
                _ => DType::I32,
            };
            let v = match f {
                TfFn::Shape => Value::list(x.aval.shape.iter().map(|&d| Value::Int(d as i64)).collect()),
                TfFn::Rank => Value::Int(x.aval.ndim() as i64),
                _ => Value::Int(x.aval.shape.iter().product::<usize>() as i64),
            };
            let Some(t) = to_tensor(interp, &v, Some(out))? else { return unknown(interp) };
            // In a graph the shape is an op's output, a symbolic tensor.
            if super::in_graph(interp) {
                let staged = delegate(interp, J::Asarray, vec![arr(&t)], Vec::new())?;
                if let (TfFn::Shape, Value::Array(s)) = (f, &staged) {
                    interp.tf.shape_values.insert(Rc::as_ptr(s) as usize, (s.clone(), x.aval.shape.to_vec()));
                }
                return Ok(staged);
            }
            Ok(Value::Array(t))
        }
        TfFn::Reverse => {
            let x = tensor_arg!(interp, f, p, 0, "tensor");
            let Some(axis) = p.get(1, "axis") else { return Err(missing(interp, f, "axis")) };
            let axes = Value::tuple(interp.iterate(axis)?);
            delegate(interp, J::Flip, vec![arr(&x), axes], Vec::new())
        }
        TfFn::Cast => {
            let x = tensor_arg!(interp, f, p, 0, "x");
            let Some(Value::DType(d) | Value::TfDType(d)) = p.get(1, "dtype") else { return unknown(interp) };
            // An `IndexedSlices` stays one (TensorFlow 2.21).
            let out = cast(interp, Value::Array(x), *d)?;
            Ok(super::tape::kept_slices(p.get(0, "x"), out))
        }
        TfFn::ClipByValue => {
            let x = tensor_arg!(interp, f, p, 0, "t");
            let (Some(lo), Some(hi)) = (p.get(1, "clip_value_min"), p.get(2, "clip_value_max")) else { return unknown(interp) };
            let (Some(lo), Some(hi)) = (to_tensor(interp, lo, Some(x.aval.dtype))?, to_tensor(interp, hi, Some(x.aval.dtype))?) else {
                return unknown(interp);
            };
            if lo.aval.dtype != x.aval.dtype || hi.aval.dtype != x.aval.dtype {
                return Err(errors::dtype_mismatch(interp, "Minimum", ("x", "y"), x.aval.dtype, lo.aval.dtype));
            }
            delegate(interp, J::Clip, vec![arr(&x), arr(&lo), arr(&hi)], Vec::new())
        }
        TfFn::Where => {
            let c = tensor_arg!(interp, f, p, 0, "condition");
            let (Some(x), Some(y)) = (p.get(1, "x"), p.get(2, "y")) else { return unknown(interp) };
            let op = tensor::Binary { op: "SelectV2", node: "SelectV2", inputs: ("t", "e"), jnp: J::Where };
            let Some((a, b)) = tensor::operands(interp, &op, x, y)? else { return unknown(interp) };
            if !c.aval.dtype.is_bool() {
                return unknown(interp);
            }
            delegate(interp, J::Where, vec![arr(&c), arr(&a), arr(&b)], Vec::new())
        }
        TfFn::Gather => {
            let x = tensor_arg!(interp, f, p, 0, "params");
            let idx = tensor_arg!(interp, f, p, 1, "indices");
            if int_of(p.get(4, "batch_dims")).unwrap_or(0) != 0 || !idx.aval.dtype.is_integer() {
                return unknown(interp);
            }
            let axis = int_of(p.get(3, "axis")).unwrap_or(0);
            let nd = x.aval.shape.len() as i64;
            // CPU kernels check the indices (JAX's gather fills instead).
            let size = (-nd..nd).contains(&axis).then(|| x.aval.shape[axis.rem_euclid(nd) as usize]);
            let failing = size.and_then(|size| super::graph_run::gather_out_of_range(p.get(1, "indices")?, &idx, size));
            if let (Some(message), false) = (&failing, super::in_graph(interp)) {
                let listed = matches!(p.get(1, "indices"), Some(Value::List(_) | Value::Tuple(_)));
                return Err(super::graph_run::eager(interp, "GatherV2", message, listed));
            }
            let r = delegate(interp, J::Take, vec![arr(&x), arr(&idx)], vec![kw("axis", Value::Int(axis))])?;
            match (failing, size) {
                (Some(message), _) => super::graph_run::record(interp, &r, "GatherV2", message),
                // Indices that may be an argument: each call's values decide (`graph_run.rs`).
                (None, Some(size)) => {
                    super::graph_run::record_check(interp, &idx, Some(&r), "GatherV2", super::graph_run::RunCheck::Gather { size })
                }
                (None, None) => {}
            }
            Ok(r)
        }
        // One tensor of `params` (not a list of shards, nor `max_norm`): `tf.gather` along
        // axis 0, so a tape's gradient of a variable read only through it is an
        // `IndexedSlices`. An index out of range is not claimed (the node is named otherwise).
        TfFn::EmbeddingLookup => {
            let x = tensor_arg!(interp, f, p, 0, "params");
            let idx = tensor_arg!(interp, f, p, 1, "ids");
            if p.get(2, "max_norm").is_some() || !idx.aval.dtype.is_integer() || x.aval.shape.is_empty() {
                return unknown(interp);
            }
            if super::graph_run::gather_out_of_range(p.get(1, "ids").unwrap_or(&Value::None), &idx, x.aval.shape[0]).is_some() {
                return unknown(interp);
            }
            delegate(interp, J::Take, vec![arr(&x), arr(&idx)], vec![kw("axis", Value::Int(0))])
        }
        TfFn::Sort | TfFn::Argsort => {
            let x = tensor_arg!(interp, f, p, 0, "values");
            let axis = int_of(p.get(1, "axis")).unwrap_or(-1);
            if matches!(p.get(2, "direction"), Some(Value::Str(s)) if &**s != "ASCENDING") {
                return unknown(interp);
            }
            let jf = if f == TfFn::Sort { J::Sort } else { J::Argsort };
            let r = delegate(interp, jf, vec![arr(&x), Value::Int(axis)], Vec::new())?;
            if f == TfFn::Argsort {
                return cast(interp, r, DType::I32);
            }
            Ok(r)
        }
        TfFn::Matmul => matmul(interp, p),
        TfFn::Einsum => {
            let Some(Value::Str(spec)) = p.args.first() else { return unknown(interp) };
            let mut operands = vec![Value::Str(spec.clone())];
            for v in &p.args[1..] {
                match to_tensor(interp, v, None)? {
                    Some(t) => operands.push(arr(&t)),
                    None => return unknown(interp),
                }
            }
            delegate(interp, J::Einsum, operands, Vec::new())
        }
        TfFn::Tensordot => {
            let a = tensor_arg!(interp, f, p, 0, "a");
            let b = tensor_arg!(interp, f, p, 1, "b");
            let Some(axes) = p.get(2, "axes") else { return Err(missing(interp, f, "axes")) };
            if a.aval.dtype != b.aval.dtype {
                return unknown(interp);
            }
            delegate(interp, J::Tensordot, vec![arr(&a), arr(&b)], vec![kw("axes", axes.clone())])
        }
        TfFn::Matvec => {
            let a = tensor_arg!(interp, f, p, 0, "a");
            let b = tensor_arg!(interp, f, p, 1, "b");
            if a.aval.dtype != b.aval.dtype || b.aval.ndim() != 1 || a.aval.ndim() < 2 {
                return unknown(interp);
            }
            delegate(interp, J::Matmul, vec![arr(&a), arr(&b)], Vec::new())
        }
        TfFn::Inv | TfFn::Det | TfFn::Cholesky => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            if !x.aval.dtype.is_floating() {
                return unknown(interp);
            }
            let jf = match f {
                TfFn::Inv => J::LinalgInv,
                TfFn::Det => J::LinalgDet,
                _ => J::LinalgCholesky,
            };
            delegate(interp, jf, vec![arr(&x)], Vec::new())
        }
        TfFn::Solve => {
            let a = tensor_arg!(interp, f, p, 0, "matrix");
            let b = tensor_arg!(interp, f, p, 1, "rhs");
            if a.aval.dtype != b.aval.dtype || !a.aval.dtype.is_floating() {
                return unknown(interp);
            }
            delegate(interp, J::LinalgSolve, vec![arr(&a), arr(&b)], Vec::new())
        }
        TfFn::Trace => {
            let x = tensor_arg!(interp, f, p, 0, "x");
            delegate(interp, J::Trace, vec![arr(&x)], vec![kw("axis1", Value::Int(-2)), kw("axis2", Value::Int(-1))])
        }
        TfFn::Norm => {
            let x = tensor_arg!(interp, f, p, 0, "tensor");
            let euclidean = matches!(p.get(1, "ord"), None) || matches!(p.get(1, "ord"), Some(Value::Str(s)) if &**s == "euclidean");
            if !euclidean || !x.aval.dtype.is_floating() {
                return unknown(interp);
            }
            let axis = p.get(2, "axis").cloned().unwrap_or(Value::None);
            let keepdims = match p.get(3, "keepdims") {
                Some(v) => interp.truthy(v)?,
                None => false,
            };
            let squares = delegate(interp, J::Square, vec![arr(&x)], Vec::new())?;
            let sum = delegate(interp, J::Sum, vec![squares, axis], vec![kw("keepdims", Value::Bool(keepdims))])?;
            delegate(interp, J::Sqrt, vec![sum], Vec::new())
        }
        TfFn::CheckNumerics => {
            let listed = matches!(p.get(0, "tensor"), Some(Value::List(_) | Value::Tuple(_)));
            let x = tensor_arg!(interp, f, p, 0, "tensor");
            match p.get(1, "message") {
                Some(Value::Str(message)) => super::numerics::check(interp, x, message, listed, "CheckNumerics"),
                _ => Ok(Value::Array(x)),
            }
        }
        // `check_numerics` of the tensor made of `t` (so the message always ends ` name: `).
        TfFn::AssertAllFinite => {
            let x = tensor_arg!(interp, f, p, 0, "t");
            match p.get(1, "msg") {
                Some(Value::Str(message)) => super::numerics::check(interp, x, message, false, "VerifyFinite/CheckNumerics"),
                _ => Ok(Value::Array(x)),
            }
        }
        TfFn::EnableCheckNumerics => super::numerics::enable(interp, true),
        TfFn::DisableCheckNumerics => super::numerics::enable(interp, false),
        TfFn::AssertEqual
        | TfFn::AssertNoneEqual
        | TfFn::AssertLess
        | TfFn::AssertLessEqual
        | TfFn::AssertGreater
        | TfFn::AssertGreaterEqual
        | TfFn::AssertPositive
        | TfFn::AssertNegative
        | TfFn::AssertNonNegative
        | TfFn::AssertNonPositive
        | TfFn::AssertRank
        | TfFn::AssertNear
        | TfFn::AssertRankAtLeast
        | TfFn::AssertRankIn
        | TfFn::AssertType
        | TfFn::AssertInteger
        | TfFn::AssertScalar => super::asserts::call(interp, f, p),
        TfFn::AssertShapes => super::assert_shapes::call(interp, p),
        _ => unknown(interp),
    }
}

/// `tf.matmul(a, b, transpose_a=False, transpose_b=False)` of matrices (rank 2): one dtype,
/// matching inner dimensions, with TensorFlow's messages. Batched products, whose errors
/// are worded otherwise, are computed but their errors not claimed.
fn matmul(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let (Some(x), Some(y)) = (p.get(0, "a"), p.get(1, "b")) else { return Err(missing(interp, TfFn::Matmul, "a")) };
    let (Some(mut a), Some(mut b)) = (to_tensor(interp, x, None)?, to_tensor(interp, y, None)?) else {
        return Ok(unknown_tensor(interp, "a product of values that are not known"));
    };
    if a.aval.dtype != b.aval.dtype {
        if super::in_graph(interp) {
            return Err(errors::dtype_mismatch(interp, "MatMul", ("a", "b"), a.aval.dtype, b.aval.dtype));
        }
        let msg = format!(
            "cannot compute _MklMatMul as input #1(zero-based) was expected to be a {} tensor but is a {} tensor [Op:MatMul] name: ",
            errors::kernel_dtype_name(a.aval.dtype),
            errors::kernel_dtype_name(b.aval.dtype)
        );
        return Err(interp.raise("InvalidArgumentError", crate::diagnostics::Code::DtypeMismatch, msg));
    }
    let inputs = [a.clone(), b.clone()];
    let mut transposed = false;
    for (flag, name, t) in [(2, "transpose_a", &mut a), (3, "transpose_b", &mut b)] {
        if let Some(v) = p.get(flag, name) {
            if interp.truthy(v)? {
                transposed = true;
                if t.aval.ndim() < 2 {
                    return Ok(unknown_tensor(interp, "a transposed product of a vector"));
                }
                let swapped = delegate(interp, J::Moveaxis, vec![arr(t), Value::Int(-1), Value::Int(-2)], Vec::new())?;
                let Value::Array(s) = swapped else { return Ok(swapped) };
                *t = s;
            }
        }
    }
    let (sa, sb) = (a.aval.shape.clone(), b.aval.shape.clone());
    if sa.len() < 2 || sb.len() < 2 {
        return Ok(unknown_tensor(interp, "a product of tensors of rank below 2"));
    }
    let inner = (sa[sa.len() - 1], sb[sb.len() - 2]);
    if inner.0 != inner.1 {
        if sa.len() == 2 && sb.len() == 2 {
            return Err(errors::matmul_mismatch(interp, &sa, &sb, inner));
        }
        return Ok(unknown_tensor(interp, "a batched product of mismatched matrices"));
    }
    let out = delegate(interp, J::Matmul, vec![arr(&a), arr(&b)], Vec::new())?;
    super::numerics::after_op(interp, "MatMul", &inputs, &out)?;
    if super::in_graph(interp) {
        if sa.len() == 2 && sb.len() == 2 && !transposed {
            super::numerics::in_graph_made(interp, "MatMul", "MatMul", &[x, y], &inputs, &out);
        } else {
            // Its name is taken; the check of a batched or transposed product is not claimed.
            super::graph_names::unique(interp, "MatMul");
        }
    }
    Ok(out)
}
