//! The `tf` functions that are more than one elementwise or reduction op (`ops::route`'s
//! `Special`): creation (with x64 on, `super::with_x64`), shape manipulation, indexing,
//! products, losses and assertions, each with TensorFlow's argument names, defaults and
//! checks, then the `jax.numpy` functions that compute the same thing.

use std::rc::Rc;

use super::errors;
use super::ops::{check_axes, delegate, missing, shape_dims, tensor_arg, Args};
use super::tensor::{self, to_tensor, unknown_tensor};
use super::TfFn;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::dtypes::DType;
use crate::jax::numpy as jnp;
use crate::jax::surface::JaxFn as J;

fn kw(name: &str, v: Value) -> (Rc<str>, Value) {
    (Rc::from(name), v)
}

fn arr(a: &Rc<Array>) -> Value {
    Value::Array(a.clone())
}

fn dtype_of(v: Option<&Value>) -> Option<Option<DType>> {
    match v {
        None => Some(None),
        Some(Value::DType(d) | Value::TfDType(d)) => Some(Some(*d)),
        Some(_) => None,
    }
}

/// A shape argument whose every dimension is known, as a Python tuple; `None` otherwise.
fn static_shape(interp: &mut Interp, v: Option<&Value>) -> PyResult<Option<Value>> {
    let Some(v) = v else { return Ok(None) };
    if let Value::Int(i) = v {
        return Ok((*i >= 0).then(|| Value::tuple(vec![Value::Int(*i)])));
    }
    match shape_dims(interp, v)? {
        Some(dims) if dims.iter().all(Option::is_some) => {
            Ok(Some(Value::tuple(dims.iter().map(|d| Value::Int(d.unwrap_or(0) as i64)).collect())))
        }
        _ => Ok(None),
    }
}

pub fn call(interp: &mut Interp, f: TfFn, p: &Args) -> PyResult<Value> {
    let unknown = |interp: &Interp| Ok(unknown_tensor(interp, super::ops::UNREAD_ARGUMENTS));
    match f {
        TfFn::Constant | TfFn::ConvertToTensor => {
            let Some(value) = p.get(0, "value") else { return Err(missing(interp, f, "value")) };
            let Some(dtype) = dtype_of(p.get(1, "dtype")) else { return unknown(interp) };
            if p.get(2, "shape").is_some() && f == TfFn::Constant {
                return unknown(interp);
            }
            let hint = dtype.or(match p.get(usize::MAX, "dtype_hint") {
                Some(Value::DType(d) | Value::TfDType(d)) => Some(*d),
                _ => None,
            });
            let Some(t) = to_tensor(interp, value, hint)? else { return unknown(interp) };
            match dtype {
                Some(d) if d != t.aval.dtype => {
                    // A float value for an integer dtype is TensorFlow's TypeError, not modelled.
                    if t.aval.dtype.is_floating() && !d.is_floating() {
                        return unknown(interp);
                    }
                    Ok(tensor::mark(Value::Array(jnp::convert(interp, &t, d, false)?)))
                }
                _ => Ok(Value::Array(t)),
            }
        }
        TfFn::Zeros | TfFn::Ones => {
            let Some(shape) = static_shape(interp, p.get(0, "shape"))? else { return unknown(interp) };
            let Some(dtype) = dtype_of(p.get(1, "dtype")) else { return unknown(interp) };
            let jf = if f == TfFn::Zeros { J::Zeros } else { J::Ones };
            super::with_x64(interp, |i| delegate(i, jf, vec![shape], vec![kw("dtype", Value::DType(dtype.unwrap_or(DType::F32)))]))
        }
        TfFn::ZerosLike | TfFn::OnesLike => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            let Some(dtype) = dtype_of(p.get(1, "dtype")) else { return unknown(interp) };
            let jf = if f == TfFn::ZerosLike { J::ZerosLike } else { J::OnesLike };
            let dtype = dtype.unwrap_or(x.aval.dtype);
            super::with_x64(interp, |i| delegate(i, jf, vec![arr(&x)], vec![kw("dtype", Value::DType(dtype))]))
        }
        TfFn::Fill => {
            let Some(shape) = static_shape(interp, p.get(0, "dims"))? else { return unknown(interp) };
            let value = tensor_arg!(interp, f, p, 1, "value");
            let dtype = Value::DType(value.aval.dtype);
            super::with_x64(interp, |i| delegate(i, J::Full, vec![shape, arr(&value)], vec![kw("dtype", dtype)]))
        }
        TfFn::Eye => {
            let (Some(Value::Int(n)), m) = (p.get(0, "num_rows"), p.get(1, "num_columns")) else { return unknown(interp) };
            if p.get(2, "batch_shape").is_some() {
                return unknown(interp);
            }
            let Some(dtype) = dtype_of(p.get(3, "dtype")) else { return unknown(interp) };
            let m = m.cloned().unwrap_or(Value::Int(*n));
            let (n, dtype) = (Value::Int(*n), Value::DType(dtype.unwrap_or(DType::F32)));
            super::with_x64(interp, |i| delegate(i, J::Eye, vec![n, m], vec![kw("dtype", dtype)]))
        }
        TfFn::Range => {
            let mut numbers = Vec::new();
            let mut symbolic: Option<DType> = None;
            for (i, name) in ["start", "limit", "delta"].iter().enumerate() {
                match p.get(i, name) {
                    Some(v @ (Value::Int(_) | Value::Float(_))) => numbers.push(v.clone()),
                    Some(v) => match super::partial::dims_of(v) {
                        // A bound only the graph knows: a 1-D tensor of unknown length.
                        Some((dims, d)) if dims.is_empty() && super::in_graph(interp) => {
                            symbolic.get_or_insert(d);
                        }
                        _ => return unknown(interp),
                    },
                    None => {}
                }
            }
            let Some(dtype) = dtype_of(p.get(3, "dtype")) else { return unknown(interp) };
            if let Some(d) = symbolic {
                let dtype = dtype.unwrap_or(d);
                let made = super::partial::make(interp, vec![None], dtype, None)?;
                // A `for` over it is followed at each call (`loop_checks.rs`).
                let bounds = [p.get(0, "start"), p.get(1, "limit"), p.get(2, "delta")];
                super::loop_checks::record_range(interp, &made, bounds, dtype);
                return Ok(made);
            }
            let float = numbers.iter().any(|v| matches!(v, Value::Float(_)));
            let d = dtype.unwrap_or(if float { DType::F32 } else { DType::I32 });
            super::with_x64(interp, |i| delegate(i, J::Arange, numbers, vec![kw("dtype", Value::DType(d))]))
        }
        TfFn::Linspace => {
            let (Some(start), Some(stop), Some(Value::Int(n))) = (p.get(0, "start"), p.get(1, "stop"), p.get(2, "num")) else {
                return unknown(interp);
            };
            let (Some(a), Some(b)) = (to_tensor(interp, start, None)?, to_tensor(interp, stop, None)?) else { return unknown(interp) };
            if !a.aval.dtype.is_floating() || a.aval.dtype != b.aval.dtype || a.aval.ndim() > 0 || b.aval.ndim() > 0 {
                return unknown(interp);
            }
            delegate(interp, J::Linspace, vec![arr(&a), arr(&b), Value::Int(*n)], vec![kw("dtype", Value::DType(a.aval.dtype))])
        }
        // An `IndexedSlices` stays one (TensorFlow 2.21).
        TfFn::Identity => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            Ok(super::tape::kept_slices(p.get(0, "input"), Value::Array(x)))
        }
        // The value unchanged, and no gradient through it (`lax.stop_gradient`): a tape's
        // source reached only through it gets TensorFlow's `None` in a graph.
        TfFn::StopGradient => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            delegate(interp, J::StopGradient, vec![Value::Array(x)], Vec::new())
        }
        TfFn::OneHot => {
            let indices = tensor_arg!(interp, f, p, 0, "indices");
            let Some(Value::Int(depth)) = p.get(1, "depth") else { return unknown(interp) };
            if p.get(2, "on_value").is_some() || p.get(3, "off_value").is_some() || p.get(4, "axis").is_some() {
                return unknown(interp);
            }
            let Some(dtype) = dtype_of(p.get(5, "dtype")) else { return unknown(interp) };
            if !indices.aval.dtype.is_integer() {
                return unknown(interp);
            }
            delegate(
                interp,
                J::NnOneHot,
                vec![arr(&indices), Value::Int(*depth)],
                vec![kw("dtype", Value::DType(dtype.unwrap_or(DType::F32)))],
            )
        }
        TfFn::Divide | TfFn::Truediv => match (p.get(0, "x"), p.get(1, "y")) {
            (Some(x), Some(y)) => {
                let out = tensor::truediv(interp, x, y)?;
                Ok(tensor::named_in_graph(interp, "truediv", "RealDiv", x, y, out))
            }
            _ => Err(missing(interp, f, "x")),
        },
        TfFn::SquaredDifference => {
            let (Some(x), Some(y)) = (p.get(0, "x"), p.get(1, "y")) else { return Err(missing(interp, f, "x")) };
            let op = tensor::Binary { op: "SquaredDifference", node: "SquaredDifference", inputs: ("x", "y"), jnp: J::Subtract };
            let Some((a, b)) = tensor::operands(interp, &op, x, y)? else { return unknown(interp) };
            let d = delegate(interp, J::Subtract, vec![arr(&a), arr(&b)], Vec::new())?;
            delegate(interp, J::Square, vec![d], Vec::new())
        }
        TfFn::Round => {
            let x = tensor_arg!(interp, f, p, 0, "x");
            delegate(interp, J::Round, vec![arr(&x)], Vec::new())
        }
        TfFn::Gelu => {
            let x = tensor_arg!(interp, f, p, 0, "features");
            let approximate = match p.get(1, "approximate") {
                Some(v) => interp.truthy(v)?,
                None => false,
            };
            if !x.aval.dtype.is_floating() {
                return unknown(interp);
            }
            delegate(interp, J::NnGelu, vec![arr(&x)], vec![kw("approximate", Value::Bool(approximate))])
        }
        TfFn::LeakyRelu => {
            let x = tensor_arg!(interp, f, p, 0, "features");
            let alpha = p.get(1, "alpha").cloned().unwrap_or(Value::Float(0.2));
            if !x.aval.dtype.is_floating() {
                return unknown(interp);
            }
            delegate(interp, J::NnLeakyRelu, vec![arr(&x)], vec![kw("negative_slope", alpha)])
        }
        TfFn::Argmax | TfFn::Argmin => {
            let x = tensor_arg!(interp, f, p, 0, "input");
            let axis = p.get(1, "axis").cloned().unwrap_or(Value::Int(0));
            check_axes(interp, &axis, x.aval.ndim(), if f == TfFn::Argmax { "ArgMax" } else { "ArgMin" })?;
            let Some(out) = dtype_of(p.get(2, "output_type")) else { return unknown(interp) };
            let jf = if f == TfFn::Argmax { J::Argmax } else { J::Argmin };
            let r = delegate(interp, jf, vec![arr(&x), axis], Vec::new())?;
            cast(interp, r, out.unwrap_or(DType::I64))
        }
        TfFn::Cumsum | TfFn::Cumprod => {
            let x = tensor_arg!(interp, f, p, 0, "x");
            let axis = p.get(1, "axis").cloned().unwrap_or(Value::Int(0));
            for (i, name) in [(2, "exclusive"), (3, "reverse")] {
                if let Some(v) = p.get(i, name) {
                    if interp.truthy(v)? {
                        return unknown(interp);
                    }
                }
            }
            let jf = if f == TfFn::Cumsum { J::Cumsum } else { J::Cumprod };
            delegate(interp, jf, vec![arr(&x), axis], vec![kw("dtype", Value::DType(x.aval.dtype))])
        }
        // `jax.ops.segment_sum` (with TensorFlow's negative ids dropped) on 1-D ids
        // that index `data`'s rows. An id known to be `num_segments` or more (TensorFlow's
        // InvalidArgumentError), ids of another shape, or `num_segments` not known: unknown.
        TfFn::UnsortedSegmentSum => {
            let data = tensor_arg!(interp, f, p, 0, "data");
            let ids = tensor_arg!(interp, f, p, 1, "segment_ids");
            let Some(n) = p.get(2, "num_segments") else { return Err(missing(interp, f, "num_segments")) };
            let known =
                |a: &Rc<Array>| crate::jax::eval::force(&a.known()?, 1 << 16).map(|d| d.iter().map(|x| *x as i64).collect::<Vec<i64>>());
            let n = match n {
                Value::Int(n) => Some(*n),
                Value::Array(a) if a.aval.ndim() == 0 && a.aval.dtype.is_integer() => known(a).and_then(|v| v.first().copied()),
                _ => None,
            };
            let rows = ids.aval.ndim() == 1 && data.aval.shape.first() == ids.aval.shape.first() && ids.aval.dtype.is_integer();
            let (Some(n), true) = (n.filter(|n| *n >= 0), rows) else { return unknown(interp) };
            if known(&ids).is_some_and(|v| v.iter().any(|i| *i >= n)) {
                return unknown(interp);
            }
            // A negative id is dropped by TensorFlow; the scatter would count it from the end,
            // so it is moved past the last segment, where the scatter drops it too.
            let negative = delegate(interp, J::Less, vec![arr(&ids), Value::Int(0)], Vec::new())?;
            let ids = delegate(interp, J::Where, vec![negative, Value::Int(n), arr(&ids)], Vec::new())?;
            delegate(interp, J::OpsSegmentSum, vec![arr(&data), ids], vec![kw("num_segments", Value::Int(n))])
        }
        TfFn::AddN => {
            let Some(inputs) = p.get(0, "inputs") else { return Err(missing(interp, f, "inputs")) };
            let items = interp.iterate(inputs)?;
            let mut total: Option<Value> = None;
            for item in items {
                total = Some(match total {
                    None => item,
                    Some(t) => tensor::apply_binary(interp, &tensor::ADD, &t, &item)?,
                });
            }
            total.map_or_else(|| unknown(interp), Ok)
        }
        TfFn::Softmax | TfFn::LogSoftmax => {
            let x = tensor_arg!(interp, f, p, 0, "logits");
            let axis = p.get(1, "axis").cloned().unwrap_or(Value::Int(-1));
            if !x.aval.dtype.is_floating() {
                return unknown(interp);
            }
            let jf = if f == TfFn::Softmax { J::NnSoftmax } else { J::NnLogSoftmax };
            delegate(interp, jf, vec![arr(&x)], vec![kw("axis", axis)])
        }
        TfFn::L2Normalize => {
            let x = tensor_arg!(interp, f, p, 0, "x");
            let axis = p.get(1, "axis").cloned().unwrap_or(Value::None);
            if !x.aval.dtype.is_floating() {
                return unknown(interp);
            }
            let squares = delegate(interp, J::Square, vec![arr(&x)], Vec::new())?;
            let sum = delegate(interp, J::Sum, vec![squares, axis], vec![kw("keepdims", Value::Bool(true))])?;
            let eps = Value::Array(jnp::convert(interp, &Array::scalar(1e-12, DType::F64, false), x.aval.dtype, false)?);
            let floor = delegate(interp, J::Maximum, vec![sum, eps], Vec::new())?;
            let scale = delegate(interp, J::LaxRsqrt, vec![floor], Vec::new())?;
            delegate(interp, J::Multiply, vec![arr(&x), scale], Vec::new())
        }
        // TensorFlow's steps: `t * clip_norm / maximum(sqrt(sum(t * t, axes)), clip_norm)` (its
        // `where` on a zero sum changes no value). On an `IndexedSlices` the norm is its
        // slices' (a repeated index counted once per slice), so the result is an
        // `IndexedSlices` whose values are not computed.
        TfFn::ClipByNorm => {
            let t = tensor_arg!(interp, f, p, 0, "t");
            let Some(clip) = p.get(1, "clip_norm") else { return Err(missing(interp, f, "clip_norm")) };
            if !t.aval.dtype.is_floating() {
                return unknown(interp);
            }
            if let Some(slices) = super::tape::slices_not_computed(p.get(0, "t"), &t) {
                return Ok(slices);
            }
            let Some(clip) = scalar_of(interp, clip, &t)? else { return unknown(interp) };
            let axes = match p.get(2, "axes") {
                None => Value::None,
                Some(Value::Int(a)) => Value::Int(*a),
                Some(v @ (Value::List(_) | Value::Tuple(_))) => Value::tuple(interp.iterate(v)?),
                Some(_) => return unknown(interp),
            };
            check_axes(interp, &axes, t.aval.ndim(), "Sum")?;
            // The ops `*`, `tf.reduce_sum`, `tf.sqrt`, `tf.maximum` and `/` are.
            let squares = tensor::apply_binary(interp, &tensor::MUL, &arr(&t), &arr(&t))?;
            let sum = delegate(interp, J::Sum, vec![squares, axes], vec![kw("keepdims", Value::Bool(true))])?;
            let norm = delegate(interp, J::Sqrt, vec![sum], Vec::new())?;
            let scaled = tensor::apply_binary(interp, &tensor::MUL, &arr(&t), &arr(&clip))?;
            let floor = tensor::apply_binary(interp, &tensor::MAXIMUM, &norm, &arr(&clip))?;
            tensor::truediv(interp, &scaled, &floor)
        }
        // `scalar * x`, the scalar of `x`'s dtype. On an `IndexedSlices` it scales the slices
        // (a repeated index's before they are summed): an `IndexedSlices` whose values are not
        // computed.
        TfFn::ScalarMul => {
            let x = tensor_arg!(interp, f, p, 1, "x");
            let Some(scalar) = p.get(0, "scalar") else { return Err(missing(interp, f, "scalar")) };
            if let Some(slices) = super::tape::slices_not_computed(p.get(1, "x"), &x) {
                return Ok(slices);
            }
            let Some(scalar) = scalar_of(interp, scalar, &x)? else { return unknown(interp) };
            tensor::apply_binary(interp, &tensor::MUL, &arr(&scalar), &arr(&x))
        }
        TfFn::SparseSoftmaxCrossEntropyWithLogits => {
            let labels = tensor_arg!(interp, f, p, 0, "labels");
            let logits = tensor_arg!(interp, f, p, 1, "logits");
            sparse_softmax_cross_entropy(interp, &labels, &logits)
        }
        TfFn::SigmoidCrossEntropyWithLogits => {
            let labels = tensor_arg!(interp, f, p, 0, "labels");
            let logits = tensor_arg!(interp, f, p, 1, "logits");
            sigmoid_cross_entropy(interp, &labels, &logits)
        }
        TfFn::RandomNormal | TfFn::RandomUniform | TfFn::TruncatedNormal => {
            let Some(shape) = static_shape(interp, p.get(0, "shape"))? else { return unknown(interp) };
            let dims: Vec<usize> = interp.iterate(&shape)?.iter().filter_map(crate::interp::ops::as_int).map(|d| d as usize).collect();
            let dtype_at = if f == TfFn::RandomUniform { 3 } else { 3 };
            let Some(dtype) = dtype_of(p.get(dtype_at, "dtype")) else { return unknown(interp) };
            let dtype = dtype.unwrap_or(DType::F32);
            if !dtype.is_floating() {
                return unknown(interp);
            }
            let name = match f {
                TfFn::RandomNormal => "RandomStandardNormal",
                TfFn::RandomUniform => "RandomUniform",
                _ => "TruncatedNormal",
            };
            random_tensor(interp, name, crate::jax::aval::Aval::new(&dims, dtype))
        }
        TfFn::StatelessNormal | TfFn::StatelessUniform | TfFn::StatelessTruncatedNormal => {
            let Some(seed) = p.get(1, "seed") else { return Err(missing(interp, f, "seed")) };
            let Some(seed) = to_tensor(interp, seed, None)? else { return unknown(interp) };
            let node = match f {
                TfFn::StatelessNormal => "stateless_random_normal",
                TfFn::StatelessUniform => "stateless_random_uniform",
                _ => "stateless_truncated_normal",
            };
            errors::stateless_seed(interp, node, &seed.aval.shape)?;
            let Some(shape) = static_shape(interp, p.get(0, "shape"))? else { return unknown(interp) };
            let dims: Vec<usize> = interp.iterate(&shape)?.iter().filter_map(crate::interp::ops::as_int).map(|d| d as usize).collect();
            let Some(dtype) = dtype_of(p.get(4, "dtype")) else { return unknown(interp) };
            let dtype = dtype.unwrap_or(DType::F32);
            if !dtype.is_floating() {
                return unknown(interp);
            }
            random_tensor(interp, "StatelessRandom", crate::jax::aval::Aval::new(&dims, dtype))
        }
        TfFn::SoftmaxCrossEntropyWithLogits => {
            let labels = tensor_arg!(interp, f, p, 0, "labels");
            let logits = tensor_arg!(interp, f, p, 1, "logits");
            if labels.aval != logits.aval || !logits.aval.dtype.is_floating() || logits.aval.ndim() == 0 {
                return unknown(interp);
            }
            let log_p = delegate(interp, J::NnLogSoftmax, vec![arr(&logits)], vec![kw("axis", Value::Int(-1))])?;
            let prod = delegate(interp, J::Multiply, vec![arr(&labels), log_p], Vec::new())?;
            let sum = delegate(interp, J::Sum, vec![prod, Value::Int(-1)], Vec::new())?;
            delegate(interp, J::Negative, vec![sum], Vec::new())
        }
        TfFn::GatherNd
        | TfFn::ScatterNd
        | TfFn::TensorScatterNdUpdate
        | TfFn::TensorScatterNdAdd
        | TfFn::TensorScatterNdSub
        | TfFn::TensorScatterNdMin
        | TfFn::TensorScatterNdMax => super::ops_nd::call(interp, f, p),
        _ => super::ops_shape::call(interp, f, p),
    }
}

/// A random tensor of a known aval whose values are not modelled: an op of the graph inside
/// a `tf.function`, an array of unknown values eagerly.
fn random_tensor(interp: &mut Interp, op: &'static str, aval: crate::jax::aval::Aval) -> PyResult<Value> {
    if interp.jax.staging_depth() > 0 {
        let t = crate::jax::apply1(interp, crate::jax::ir::Prim::opaque(op, aval), &[])?;
        return Ok(tensor::mark(Value::Array(t)));
    }
    let a = Array::unknown(aval, "a TensorFlow random draw (its values are not modelled)");
    a.tf.set(true);
    Ok(Value::Array(a))
}

/// `tf.cast(x, dtype)` of a result that may be unknown.
pub fn cast(interp: &mut Interp, v: Value, d: DType) -> PyResult<Value> {
    match v {
        Value::Array(a) => Ok(tensor::mark(Value::Array(jnp::convert(interp, &a, d, false)?))),
        other => Ok(other),
    }
}

/// `tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)`: `-log_softmax(logits)`
/// at each label, of the labels' shape.
fn sparse_softmax_cross_entropy(interp: &mut Interp, labels: &Rc<Array>, logits: &Rc<Array>) -> PyResult<Value> {
    let (ls, gs) = (&labels.aval.shape, &logits.aval.shape);
    if gs.is_empty() || ls.len() + 1 != gs.len() || ls[..] != gs[..gs.len() - 1] {
        if ls.len() + 1 == gs.len() {
            let msg = format!(
                "`labels.shape` must equal `logits.shape` except for the last dimension. Received: labels.shape={} and logits.shape={}",
                crate::jax::aval::shape_tuple(ls),
                crate::jax::aval::shape_tuple(gs)
            );
            return Err(interp.raise("ValueError", crate::diagnostics::Code::ShapeMismatch, msg));
        }
        return Ok(unknown_tensor(interp, "a cross entropy of labels and logits of other ranks"));
    }
    if !labels.aval.dtype.is_integer() || !logits.aval.dtype.is_floating() {
        return Ok(unknown_tensor(interp, "a cross entropy of labels or logits of another dtype"));
    }
    let classes = gs[gs.len() - 1] as i64;
    let log_p = delegate(interp, J::NnLogSoftmax, vec![arr(logits)], vec![kw("axis", Value::Int(-1))])?;
    let picks = delegate(interp, J::NnOneHot, vec![arr(labels), Value::Int(classes)], vec![kw("dtype", Value::DType(logits.aval.dtype))])?;
    let prod = delegate(interp, J::Multiply, vec![picks, log_p], Vec::new())?;
    let sum = delegate(interp, J::Sum, vec![prod, Value::Int(-1)], Vec::new())?;
    delegate(interp, J::Negative, vec![sum], Vec::new())
}

/// `tf.nn.sigmoid_cross_entropy_with_logits(labels, logits)`, elementwise as TensorFlow
/// writes it for stability: `relu(x) - x * z + log1p(exp(-|x|))`.
fn sigmoid_cross_entropy(interp: &mut Interp, labels: &Rc<Array>, logits: &Rc<Array>) -> PyResult<Value> {
    let (ls, gs) = (&labels.aval.shape, &logits.aval.shape);
    if ls != gs {
        let msg = format!(
            "`logits` and `labels` must have the same shape, received ({} vs {}).",
            crate::tf::tensor::shape_str(&gs.iter().map(|d| Some(*d)).collect::<Vec<_>>()),
            crate::tf::tensor::shape_str(&ls.iter().map(|d| Some(*d)).collect::<Vec<_>>())
        );
        return Err(interp.raise("ValueError", crate::diagnostics::Code::ShapeMismatch, msg));
    }
    if labels.aval.dtype != logits.aval.dtype || !logits.aval.dtype.is_floating() {
        return Ok(unknown_tensor(interp, "a cross entropy of labels or logits of another dtype"));
    }
    let relu = delegate(interp, J::NnRelu, vec![arr(logits)], Vec::new())?;
    let xz = delegate(interp, J::Multiply, vec![arr(logits), arr(labels)], Vec::new())?;
    let abs = delegate(interp, J::Abs, vec![arr(logits)], Vec::new())?;
    let neg = delegate(interp, J::Negative, vec![abs], Vec::new())?;
    let exp = delegate(interp, J::Exp, vec![neg], Vec::new())?;
    let soft = delegate(interp, J::Log1p, vec![exp], Vec::new())?;
    let diff = delegate(interp, J::Subtract, vec![relu, xz], Vec::new())?;
    delegate(interp, J::Add, vec![diff, soft], Vec::new())
}

/// The first `n` tensors of a list argument (`tf.concat(values, axis)`), `None` when one is
/// not known.
pub fn tensor_list(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<Rc<Array>>>> {
    let mut out = Vec::new();
    for item in interp.iterate(v)? {
        match to_tensor(interp, &item, out.first().map(|a: &Rc<Array>| a.aval.dtype))? {
            Some(t) => out.push(t),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

pub fn dims_error(interp: &Interp, a: &[usize], b: &[usize], axis: usize, dim: usize) -> crate::interp::Flow {
    errors::concat_mismatch(interp, a, b, axis, dim)
}

/// A scalar argument of an op on `x`, as the tensor of `x`'s dtype TensorFlow converts it to:
/// a Python number that fits it, or a scalar tensor of that dtype; `None` otherwise (not
/// claimed).
fn scalar_of(interp: &mut Interp, v: &Value, x: &Rc<Array>) -> PyResult<Option<Rc<Array>>> {
    let dtype = x.aval.dtype;
    let fits = match v {
        Value::Float(_) => dtype.is_inexact(),
        Value::Int(_) => !dtype.is_bool(),
        _ => true,
    };
    if !fits {
        return Ok(None);
    }
    let hint = matches!(v, Value::Int(_) | Value::Float(_)).then_some(dtype);
    Ok(to_tensor(interp, v, hint)?.filter(|s| s.aval.dtype == dtype && s.aval.shape.is_empty()))
}
