//! `jnp.quantile`, `nanquantile`, `percentile`, `nanpercentile`, `median` and `nanmedian`,
//! bound as the lax primitives JAX's `_quantile` binds (jax/_src/numpy/reductions.py):
//! the reduced axes moved last and flattened, NaN rows made NaN (or, in the `nan` forms,
//! NaNs sorted last and counted), `sort`, the low and high positions from `floor`/`ceil`
//! of `q * (n - 1)` clamped into the row, two gathers, and the method's combination. The
//! values, dtypes and derivatives then follow from those primitives' kernels and rules.

use super::*;

/// Which of the six functions is called: the name JAX's messages use, and whether NaNs
/// are ignored (`nanquantile`) rather than propagated (`quantile`).
#[derive(Clone, Copy)]
struct QuantileKind {
    name: &'static str,
    squash_nans: bool,
}

/// The interpolation between the two order statistics around `q * (n - 1)`.
#[derive(Clone, Copy, PartialEq)]
enum Method {
    Linear,
    Lower,
    Higher,
    Midpoint,
    Nearest,
    InvertedCdf,
}

/// `jnp.quantile(a, q, axis=None, out=None, overwrite_input=False, method='linear',
/// keepdims=False, *, weights=None)` and its three siblings taking `q`; `median(a, axis=None,
/// out=None, overwrite_input=False, keepdims=False)` and `nanmedian` are `q=0.5` with
/// `method='midpoint'`. `percentile` divides `q`, promoted to inexact, by 100 first.
pub(super) fn call_quantile(interp: &mut Interp, f: JaxFn, p: &Args) -> PyResult<Value> {
    use JaxFn as F;
    let kind = match f {
        F::Quantile | F::Percentile | F::Median => QuantileKind { name: "quantile", squash_nans: false },
        _ => QuantileKind { name: "nanquantile", squash_nans: true },
    };
    let is_median = matches!(f, F::Median | F::Nanmedian);
    let Some(a_value) = p.get(0, "a") else {
        return Err(interp.type_error(format!("{}() missing 1 required positional argument: 'a'", f.name())));
    };
    let a = arr_or_unknown!(interp, a_value);
    let q = if is_median {
        Array::scalar(0.5, dtypes::default_float(cfg(interp)), true)
    } else {
        let Some(q_value) = p.get(1, "q") else {
            return Err(interp.type_error(format!("{}() missing 1 required positional argument: 'q'", f.name())));
        };
        arr_or_unknown!(interp, q_value)
    };
    // Positions after `a` (and `q`): axis, out, overwrite_input, [method,] keepdims.
    let first = if is_median { 1 } else { 2 };
    let axis = p.get(first, "axis");
    let out = p.get(first + 1, "out");
    let overwrite_input = match p.get(first + 2, "overwrite_input") {
        Some(v) => interp.truthy(v)?,
        None => false,
    };
    let (method, keepdims_at) =
        if is_median { (Some(Value::Str("midpoint".into())), first + 3) } else { (p.get(first + 3, "method").cloned(), first + 4) };
    let keepdims = match p.get(keepdims_at, "keepdims") {
        Some(v) => interp.truthy(v)?,
        None => false,
    };
    let weights = match p.get(usize::MAX, "weights") {
        Some(w) => Some(arr_or_unknown!(interp, w)),
        None => None,
    };
    // `percentile`: `q, = promote_dtypes_inexact(q)` then `q / 100` inside `jit`, where
    // XLA's algebraic simplifier makes the division by the literal a multiplication by its
    // reciprocal, for a scalar `q` too (`percentile(arange(10), 33)` is 2.9699998, as
    // `33 * f32(0.01)` is 0.32999998); the division kernel does so for a 1-D `q` itself.
    let q = if matches!(f, F::Percentile | F::Nanpercentile) {
        let q = inexact(interp, &q)?;
        if q.aval.ndim() == 0 && matches!(q.aval.dtype, DType::F32 | DType::F64) {
            let reciprocal = Array::scalar(0.01, q.aval.dtype, true);
            binary_prim(interp, BinaryPrim::Mul, &q, &reciprocal)?
        } else {
            true_divide(interp, &q, &Array::scalar(100.0, q.aval.dtype, true))?
        }
    } else {
        q
    };
    if overwrite_input || out.is_some() {
        return Err(interp.value_error(format!("jax.numpy.{} does not support overwrite_input=True or out != None", kind.name)));
    }
    let method = match method.as_ref() {
        None => Method::Linear,
        Some(Value::Str(m)) => match &**m {
            "linear" => Method::Linear,
            "lower" => Method::Lower,
            "higher" => Method::Higher,
            "midpoint" => Method::Midpoint,
            "nearest" => Method::Nearest,
            "inverted_cdf" => Method::InvertedCdf,
            _ => return Err(bad_method(interp)),
        },
        Some(_) => return Err(bad_method(interp)),
    };
    quantile(interp, kind, &a, &q, axis, method, keepdims, weights.as_ref()).map(Value::Array)
}

fn bad_method(interp: &mut Interp) -> Flow {
    interp.value_error("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' or 'inverted_cdf'")
}

/// JAX's `_quantile`: `a` promoted to inexact, the reduced axes made one last axis (or,
/// for one int axis, left in place), then the order statistics read and combined.
#[allow(clippy::too_many_arguments)]
fn quantile(
    interp: &mut Interp,
    kind: QuantileKind,
    a: &Rc<Array>,
    q: &Rc<Array>,
    axis: Option<&Value>,
    method: Method,
    keepdims: bool,
    weights: Option<&Rc<Array>>,
) -> PyResult<Rc<Array>> {
    let (a, weights) = match weights {
        Some(w) => {
            if w.aval.dtype.is_complex() {
                return Err(interp.value_error("Weights cannot be complex types."));
            }
            if method != Method::InvertedCdf {
                let name = method_name(method);
                return Err(interp.raise(
                    "NotImplementedError",
                    Code::PythonException,
                    format!("{name} doesn't support weights. Only method 'inverted_cdf' supports weights."),
                ));
            }
            // `promote_dtypes_inexact(a, weights)`.
            let dt = promote(&[a.aval.weak_dtype(), w.aval.weak_dtype()], cfg(interp));
            let float = if dt.dtype.is_inexact() { dt.dtype } else { dtypes::canonicalize(dt.dtype.to_inexact(), cfg(interp)) };
            let a = convert(interp, a, float, dt.weak)?;
            let mut w = convert(interp, w, float, dt.weak)?;
            if w.aval.shape != a.aval.shape {
                let Some(axes) = axes_arg(interp, axis, a.aval.ndim())? else {
                    return Err(interp.value_error("Weights shape must match 'a' shape when axis is None."));
                };
                let along: Vec<usize> = axes.iter().map(|&i| a.aval.shape[i]).collect();
                if w.aval.shape.as_slice() != along.as_slice() {
                    return Err(interp.value_error(format!(
                        "Weights shape {} must match reduction axes {}",
                        shape_tuple(&w.aval.shape),
                        shape_tuple(&along)
                    )));
                }
                let prim = Prim::BroadcastInDim { shape: a.aval.shape.clone().to_vec(), broadcast_dimensions: axes };
                w = bind1(interp, prim, std::slice::from_ref(&w), w.aval.with_shape(&a.aval.shape))?;
            }
            (a, Some(w))
        }
        None => (inexact(interp, a)?, None),
    };
    if a.aval.dtype.is_complex() {
        return Err(interp.value_error("quantile does not support complex input, as the operation is poorly defined."));
    }
    let nd = a.aval.ndim();
    // `keepdim`: the shape a `keepdims=True` result takes when the axes were flattened.
    let (a, weights, axis, keepdim): (Rc<Array>, Option<Rc<Array>>, usize, Option<Vec<usize>>) = match axis {
        None => {
            let n = a.aval.size() as usize;
            let w = weights.map(|w| reshape_raw(interp, &w, &[n])).transpose()?;
            (reshape_raw(interp, &a, &[n])?, w, 0, keepdims.then(|| vec![1; nd]))
        }
        Some(Value::Tuple(items)) => {
            let mut axes = Vec::with_capacity(items.len());
            for item in items.iter() {
                let Some(i) = interp.index_of(item)? else {
                    return Err(interp.type_error("axis must be an integer"));
                };
                axes.push(normalize_axis(interp, i, nd)?);
            }
            let mut seen = axes.clone();
            seen.sort_unstable();
            seen.dedup();
            if seen.len() != axes.len() {
                return Err(interp.value_error("repeated axis"));
            }
            let keepdim: Vec<usize> = (0..nd).map(|d| if axes.contains(&d) { 1 } else { a.aval.shape[d] }).collect();
            // JAX's permutation: the kept axes swapped, in order, into the leading places.
            let mut dimensions: Vec<usize> = (0..nd).collect();
            for (i, s) in (0..nd).filter(|d| !axes.contains(d)).enumerate() {
                dimensions.swap(i, s);
            }
            let mut shape: Vec<usize> = (0..nd).filter(|d| !axes.contains(d)).map(|d| a.aval.shape[d]).collect();
            shape.push(axes.iter().map(|&d| a.aval.shape[d]).product());
            let identity = dimensions.iter().enumerate().all(|(i, &d)| i == d);
            let mut flatten = |x: &Rc<Array>| -> PyResult<Rc<Array>> {
                let moved = if identity { x.clone() } else { transpose(interp, x, Some(dimensions.clone()))? };
                reshape_raw(interp, &moved, &shape)
            };
            let w = weights.as_ref().map(&mut flatten).transpose()?;
            let a = flatten(&a)?;
            (a, w, shape.len() - 1, Some(keepdim))
        }
        Some(v) => {
            let Some(i) = interp.index_of(v)? else {
                return Err(interp.type_error(format!("'{}' object cannot be interpreted as an integer", v.type_name())));
            };
            (a.clone(), weights, normalize_axis(interp, i, nd)?, None)
        }
    };
    let keepdim = if keepdims { keepdim } else { None };
    if q.aval.ndim() > 1 {
        return Err(interp.value_error(format!("q must be have rank <= 1, got shape {}", shape_tuple(&q.aval.shape))));
    }
    let q_shape: Vec<usize> = q.aval.shape.to_vec();
    let q_ndim = q_shape.len();
    let a_shape: Vec<usize> = a.aval.shape.to_vec();
    // The shape after the reduction, and the result's (before a `keepdims` reshape).
    let reduced: Vec<usize> = (0..a_shape.len()).filter_map(|d| if d == axis { keepdims.then_some(1) } else { Some(a_shape[d]) }).collect();
    let out_shape: Vec<usize> = q_shape.iter().chain(reduced.iter()).copied().collect();
    if q.aval.dtype.is_bool() {
        return Err(interp.raise(
            "TypeError",
            Code::DtypeMismatch,
            "mul does not accept dtype bool at position 0. Accepted dtypes at position 0 are subtypes of integer, floating, complexfloating.",
        ));
    }
    if !q.aval.dtype.is_inexact() {
        return Err(interp.raise(
            "TypeError",
            Code::DtypeMismatch,
            format!("floor does not accept dtype {}. Accepted dtypes are subtypes of floating.", q.aval.dtype.name()),
        ));
    }
    let result_dtype = a.aval.dtype;
    // An empty row: the read of its low position fails, in the `nan` forms as NumPy-style
    // indexing of a 1-D array, otherwise in the gather's check of its slice sizes.
    if a_shape[axis] == 0 {
        if kind.squash_nans && a_shape.len() == 1 {
            return Err(interp.raise("IndexError", Code::ShapeMismatch, "index is out of bounds for axis 0 with size 0"));
        }
        return Err(
            interp.type_error(format!("Slice size at index {axis} in gather op is out of range, must be within [0, 0 + 1), got 1."))
        );
    }
    let q_dtype = q.aval.dtype;
    let int = dtypes::default_int(cfg(interp));
    let nan = Array::scalar(f64::NAN, result_dtype, true);
    let one = |v: f64, like: &Rc<Array>| Array::scalar(v, like.aval.dtype, true);
    if method == Method::InvertedCdf {
        let shape = InvertedCdfShape { axis, q_ndim, keepdims, out_shape: &out_shape };
        let result = inverted_cdf(interp, kind, &a, q, weights.as_ref(), shape)?;
        return finish(interp, &result, &q_shape, keepdim, result_dtype);
    }
    let (sorted, low, high, low_weight, high_weight) = if kind.squash_nans {
        // NaNs (of either sign) made positive NaNs, so that the sort puts them last.
        let is_nan = compare_arrays(interp, CmpPrim::Ne, &a, &a)?;
        let cleaned = where3(interp, &is_nan, &nan, &a)?;
        let sorted = bind1(interp, Prim::Sort { dimension: axis, num_keys: 1 }, &[cleaned.clone()], cleaned.aval.clone())?;
        let is_nan = compare_arrays(interp, CmpPrim::Ne, &sorted, &sorted)?;
        let not_nan = unary_prim(interp, UnaryPrim::Not, &is_nan)?;
        let counts = reduce(interp, &not_nan, ReduceOp::Sum, Some(vec![axis]), keepdims, Some(q_dtype))?;
        // `q` along the leading axes, the counts along the others.
        let q_full: Vec<usize> = q_shape.iter().copied().chain(std::iter::repeat(1).take(reduced.len())).collect();
        let q = reshape_raw(interp, q, &q_full)?;
        let counts_full: Vec<usize> = std::iter::repeat(1).take(q_ndim).chain(reduced.iter().copied()).collect();
        let counts = reshape_raw(interp, &counts, &counts_full)?;
        let last = binary_prim(interp, BinaryPrim::Sub, &counts, &one(1.0, &counts))?;
        let position = binary_prim(interp, BinaryPrim::Mul, &q, &last)?;
        let (low, high, low_weight, high_weight) = positions(interp, &position)?;
        let zero = one(0.0, &low);
        let clamp = |interp: &mut Interp, x: &Rc<Array>| -> PyResult<Rc<Array>> {
            let at_most = binary_prim(interp, BinaryPrim::Min, x, &last)?;
            binary_prim(interp, BinaryPrim::Max, &zero, &at_most)
        };
        let low = clamp(interp, &low)?;
        let high = clamp(interp, &high)?;
        (sorted, convert(interp, &low, int, false)?, convert(interp, &high, int, false)?, low_weight, high_weight)
    } else {
        // Rows holding a NaN become all NaN (their quantiles are NaN).
        let is_nan = compare_arrays(interp, CmpPrim::Ne, &a, &a)?;
        let any_nan = reduce(interp, &is_nan, ReduceOp::Or, Some(vec![axis]), true, None)?;
        let cleaned = where3(interp, &any_nan, &nan, &a)?;
        let sorted = bind1(interp, Prim::Sort { dimension: axis, num_keys: 1 }, &[cleaned.clone()], cleaned.aval.clone())?;
        let n = Array::scalar(a_shape[axis] as f64, q_dtype, false);
        let last = binary_prim(interp, BinaryPrim::Sub, &n, &one(1.0, &n))?;
        let position = binary_prim(interp, BinaryPrim::Mul, q, &last)?;
        let (low, high, low_weight, high_weight) = positions(interp, &position)?;
        let zero = Array::scalar(0.0, low.aval.dtype, false);
        let clamp = |interp: &mut Interp, x: &Rc<Array>| -> PyResult<Rc<Array>> {
            let last = convert(interp, &last, x.aval.dtype, false)?;
            bind1(interp, Prim::Clamp, &[zero.clone(), x.clone(), last], x.aval.clone())
        };
        let low = clamp(interp, &low)?;
        let high = clamp(interp, &high)?;
        let (low, high) = (convert(interp, &low, int, false)?, convert(interp, &high, int, false)?);
        // One position per quantile: `q`'s axis first, unit axes for the rest.
        let full: Vec<usize> = q_shape.iter().copied().chain(std::iter::repeat(1).take(reduced.len())).collect();
        let (low, high) = (reshape_raw(interp, &low, &full)?, reshape_raw(interp, &high, &full)?);
        let spread = |interp: &mut Interp, w: &Rc<Array>| -> PyResult<Rc<Array>> {
            if q_ndim == 0 {
                return Ok(w.clone());
            }
            let prim = Prim::BroadcastInDim { shape: out_shape.clone(), broadcast_dimensions: vec![0] };
            bind1(interp, prim, std::slice::from_ref(w), w.aval.with_shape(&out_shape))
        };
        let (low_weight, high_weight) = (spread(interp, &low_weight)?, spread(interp, &high_weight)?);
        (sorted, low, high, low_weight, high_weight)
    };
    let low_value = gather_along(interp, &sorted, &low, axis, q_ndim, keepdims, &out_shape)?;
    let high_value = gather_along(interp, &sorted, &high, axis, q_ndim, keepdims, &out_shape)?;
    let result = match method {
        Method::Linear => {
            let low_value = convert(interp, &low_value, q_dtype, false)?;
            let high_value = convert(interp, &high_value, q_dtype, false)?;
            let l = binary_prim(interp, BinaryPrim::Mul, &low_value, &low_weight)?;
            let h = binary_prim(interp, BinaryPrim::Mul, &high_value, &high_weight)?;
            binary_prim(interp, BinaryPrim::Add, &l, &h)?
        }
        Method::Lower => low_value,
        Method::Higher => high_value,
        Method::Nearest => {
            let half = one(0.5, &high_weight);
            let pred = compare_arrays(interp, CmpPrim::Le, &high_weight, &half)?;
            // `lax.select(pred, low, high)`: `select_n(pred, high, low)`.
            apply1(interp, Prim::Select, &[pred, high_value.clone(), low_value])?
        }
        Method::Midpoint => {
            let sum = binary_prim(interp, BinaryPrim::Add, &low_value, &high_value)?;
            binary_prim(interp, BinaryPrim::Mul, &sum, &one(0.5, &sum))?
        }
        // `inverted_cdf` returned above, before the positions were read; not reached.
        Method::InvertedCdf => low_value,
    };
    finish(interp, &result, &q_shape, keepdim, result_dtype)
}

/// The end of `_quantile`: with `keepdims` over flattened axes, the result reshaped to
/// `q`'s shape and the input's with unit reduced axes; then converted to `a`'s dtype
/// (strongly typed, as `lax.convert_element_type` makes it).
fn finish(interp: &mut Interp, result: &Rc<Array>, q_shape: &[usize], keepdim: Option<Vec<usize>>, dtype: DType) -> PyResult<Rc<Array>> {
    let result = match keepdim {
        Some(k) => {
            let shape: Vec<usize> = q_shape.iter().chain(k.iter()).copied().collect();
            reshape_raw(interp, result, &shape)?
        }
        None => result.clone(),
    };
    convert(interp, &result, dtype, false)
}

/// Where the reduction runs and what shape the result takes before `finish`.
struct InvertedCdfShape<'a> {
    axis: usize,
    q_ndim: usize,
    keepdims: bool,
    out_shape: &'a [usize],
}

/// `method='inverted_cdf'`: the first sorted element whose cumulative weight (NaN data and
/// negative or NaN weights counting 0) reaches `q` times the row's total, NaN where a
/// weight is bad or (without `nan`) the row holds a NaN, or (with it) holds only NaNs.
fn inverted_cdf(
    interp: &mut Interp,
    kind: QuantileKind,
    a: &Rc<Array>,
    q: &Rc<Array>,
    weights: Option<&Rc<Array>>,
    shape: InvertedCdfShape,
) -> PyResult<Rc<Array>> {
    let InvertedCdfShape { axis, q_ndim, keepdims, out_shape } = shape;
    // `lax.mul(q, total_weight)` takes no promotion, and no weak type either.
    if q.aval.dtype != a.aval.dtype {
        let message = format!(
            "lax.mul requires arguments to have the same dtypes, got {}, {}. (Tip: jnp.multiply is a similar function that does automatic type promotion on inputs).",
            q.aval.dtype.name(),
            a.aval.dtype.name()
        );
        return Err(interp.raise("TypeError", Code::DtypeMismatch, message));
    }
    let n = a.aval.shape[axis];
    let cleaned = if kind.squash_nans {
        let is_nan = compare_arrays(interp, CmpPrim::Ne, a, a)?;
        where3(interp, &is_nan, &Array::scalar(f64::NAN, a.aval.dtype, true), a)?
    } else {
        let is_nan = compare_arrays(interp, CmpPrim::Ne, a, a)?;
        let any_nan = reduce(interp, &is_nan, ReduceOp::Or, Some(vec![axis]), true, None)?;
        where3(interp, &any_nan, &Array::scalar(f64::NAN, a.aval.dtype, true), a)?
    };
    let sort = Prim::Sort { dimension: axis, num_keys: 1 };
    let sorted = bind1(interp, sort.clone(), std::slice::from_ref(&cleaned), cleaned.aval.clone())?;
    let weights = match weights {
        // `lax.sort_key_val(a, weights)`: the weights in the order of the sorted data.
        Some(w) => bind1(interp, sort, &[cleaned.clone(), w.clone()], w.aval.clone())?,
        None => full(interp, &a.aval.shape, 1.0, a.aval.dtype)?,
    };
    let zeros = full(interp, &weights.aval.shape, 0.0, weights.aval.dtype)?;
    let negative = compare_arrays(interp, CmpPrim::Lt, &weights, &zeros)?;
    let nan_weight = compare_arrays(interp, CmpPrim::Ne, &weights, &weights)?;
    let bad_weights = binary_prim(interp, BinaryPrim::Or, &negative, &nan_weight)?;
    let nan_data = compare_arrays(interp, CmpPrim::Ne, &sorted, &sorted)?;
    let dropped = binary_prim(interp, BinaryPrim::Or, &bad_weights, &nan_data)?;
    // `lax.select(dropped, zeros, weights)`.
    let clean_weights = apply1(interp, Prim::Select, &[dropped, weights.clone(), zeros])?;
    let cumulative = Prim::Cumulative { op: ReduceOp::Sum, axis, reverse: false };
    let cum_weights = bind1(interp, cumulative, std::slice::from_ref(&clean_weights), clean_weights.aval.clone())?;
    // `index_in_dim(cum_weights, -1, axis, keepdims)`: the row totals.
    let mut start = vec![0; cum_weights.aval.ndim()];
    start[axis] = n - 1;
    let limit = cum_weights.aval.shape.to_vec();
    let mut last_shape = limit.clone();
    last_shape[axis] = 1;
    let strides = vec![1; limit.len()];
    let total =
        bind1(interp, Prim::Slice { start, limit, strides }, std::slice::from_ref(&cum_weights), cum_weights.aval.with_shape(&last_shape))?;
    let reduced: Vec<usize> = out_shape[q_ndim..].to_vec();
    let total = if keepdims { total } else { reshape_raw(interp, &total, &reduced)? };
    let leading = |interp: &mut Interp, x: &Rc<Array>, front: &[usize], back: usize| -> PyResult<Rc<Array>> {
        let shape: Vec<usize> = front.iter().copied().chain(x.aval.shape.iter().copied()).chain(std::iter::repeat(1).take(back)).collect();
        reshape_raw(interp, x, &shape)
    };
    let unit_q = vec![1; q_ndim];
    let total_f = leading(interp, &total, &unit_q, 0)?;
    let q_f = leading(interp, q, &[], total.aval.ndim())?;
    let target = binary_prim(interp, BinaryPrim::Mul, &q_f, &total_f)?;
    let target = if keepdims {
        target
    } else {
        let mut s = target.aval.shape.to_vec();
        s.insert(axis + q_ndim, 1);
        reshape_raw(interp, &target, &s)?
    };
    let cum_f = leading(interp, &cum_weights, &unit_q, 0)?;
    let below = compare_arrays(interp, CmpPrim::Lt, &cum_f, &target)?;
    let int = dtypes::default_int(cfg(interp));
    let below = convert(interp, &below, int, false)?;
    let index = reduce(interp, &below, ReduceOp::Sum, Some(vec![axis + q_ndim]), keepdims, None)?;
    let valid_counts = if kind.squash_nans {
        let valid = unary_prim(interp, UnaryPrim::Not, &nan_data)?;
        reduce(interp, &valid, ReduceOp::Sum, Some(vec![axis]), keepdims, Some(q.aval.dtype))?
    } else {
        full(interp, &total.aval.shape, n as f64, q.aval.dtype)?
    };
    let limit = binary_prim(interp, BinaryPrim::Sub, &valid_counts, &Array::scalar(1.0, q.aval.dtype, true))?;
    let max_index = convert(interp, &limit, int, false)?;
    let max_index = leading(interp, &max_index, &unit_q, 0)?;
    let index = binary_prim(interp, BinaryPrim::Min, &index, &max_index)?;
    let index = binary_prim(interp, BinaryPrim::Max, &Array::scalar(0.0, int, true), &index)?;
    // Read along `axis` at `index`, in place along the other axes.
    let mut take_shape = out_shape.to_vec();
    let index = if keepdims {
        take_shape.remove(q_ndim + axis);
        reshape_raw(interp, &index, &take_shape)?
    } else {
        index
    };
    let result = gather_along(interp, &sorted, &index, axis, q_ndim, false, &take_shape)?;
    let result = if keepdims { reshape_raw(interp, &result, out_shape)? } else { result };
    let all_nan = compare_arrays(interp, CmpPrim::Eq, &valid_counts, &Array::scalar(0.0, q.aval.dtype, true))?;
    let any_bad_weight = reduce(interp, &bad_weights, ReduceOp::Or, Some(vec![axis]), keepdims, None)?;
    let force_nan = if kind.squash_nans {
        binary_prim(interp, BinaryPrim::Or, &any_bad_weight, &all_nan)?
    } else {
        let any_nan = reduce(interp, &nan_data, ReduceOp::Or, Some(vec![axis]), keepdims, None)?;
        binary_prim(interp, BinaryPrim::Or, &any_bad_weight, &any_nan)?
    };
    let force_nan = leading(interp, &force_nan, &unit_q, 0)?;
    where3(interp, &force_nan, &Array::scalar(f64::NAN, result.aval.dtype, true), &result)
}

fn method_name(method: Method) -> &'static str {
    match method {
        Method::Linear => "linear",
        Method::Lower => "lower",
        Method::Higher => "higher",
        Method::Midpoint => "midpoint",
        Method::Nearest => "nearest",
        Method::InvertedCdf => "inverted_cdf",
    }
}

/// `floor` and `ceil` of the fractional position, and the weights of the two neighbours:
/// `high_weight = position - low`, `low_weight = 1 - high_weight`.
fn positions(interp: &mut Interp, position: &Rc<Array>) -> PyResult<(Rc<Array>, Rc<Array>, Rc<Array>, Rc<Array>)> {
    let low = unary_prim(interp, UnaryPrim::Floor, position)?;
    let high = unary_prim(interp, UnaryPrim::Ceil, position)?;
    let high_weight = binary_prim(interp, BinaryPrim::Sub, position, &low)?;
    let one = Array::scalar(1.0, high_weight.aval.dtype, true);
    let low_weight = binary_prim(interp, BinaryPrim::Sub, &one, &high_weight)?;
    Ok((low, high, low_weight, high_weight))
}

/// `sorted` read at `index` along `axis` and in place along its other axes, into
/// `out_shape` (`q`'s axes, then the other axes of `sorted`, `axis` kept as 1 with
/// `keepdims`): `index` has `out_shape`'s rank and broadcasts to it.
fn gather_along(
    interp: &mut Interp,
    sorted: &Rc<Array>,
    index: &Rc<Array>,
    axis: usize,
    q_ndim: usize,
    keepdims: bool,
    out_shape: &[usize],
) -> PyResult<Rc<Array>> {
    let rank = out_shape.len();
    let mut inputs = vec![sorted.clone()];
    for d in 0..sorted.aval.ndim() {
        if d == axis {
            inputs.push(index.clone());
            continue;
        }
        let at = q_ndim + if keepdims || d < axis { d } else { d - 1 };
        let mut s = vec![1; rank];
        s[at] = sorted.aval.shape[d];
        inputs.push(Array::built(Aval::new(&s, index.aval.dtype), || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&s), |i| i[at] as f64)));
    }
    let prim = Prim::Gather { mode: IndexMode::PromiseInBounds, fill_value: None, index: vec![IndexItem::Array; sorted.aval.ndim()] };
    bind1(interp, prim, &inputs, sorted.aval.with_shape(out_shape))
}
