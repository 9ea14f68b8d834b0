//! Reductions: `sum`/`prod`/`max`/`min`/`all`/`any` with JAX's `_reduction` (dtype rules,
//! `initial=`, `where=`), `mean`, `var`/`std`, `average`, the arg-reductions, cumulative
//! reductions, quantiles (quantile.rs) and `bincount`/`segment_sum`.

use super::*;

/// The reductions functions of the surface dispatch (`dispatch::family` routes them here).
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    use JaxFn as F;
    let Call { f, p, c, keepdims, .. } = *cx;
    match f {
        // zeros(length).at[x].add(weights or 1), as jnp.bincount computes it.
        F::Bincount | F::OpsSegmentSum => {
            let (x, updates) = if f == F::Bincount {
                let x = arr!(interp, cx, 0, "x");
                let w = match p.get(1, "weights") {
                    None | Some(Value::None) => Array::scalar(1.0, dtypes::default_int(c), false),
                    Some(_) => arr!(interp, cx, 1, "weights"),
                };
                (x, w)
            } else {
                (arr!(interp, cx, 1, "segment_ids"), arr!(interp, cx, 0, "data"))
            };
            if !x.aval.dtype.is_integer() || x.aval.ndim() != 1 {
                return Ok(Value::opaque("bincount"));
            }
            let length_arg = if f == F::Bincount { p.get(usize::MAX, "length") } else { p.get(2, "num_segments") };
            let length = match length_arg.filter(|v| !matches!(v, Value::None)) {
                Some(v) => interp.index_of(v)?,
                // Without a length: max(x) + 1 (at least `minlength`), which needs x's values.
                None => match eval::force(&x, interp.budgets.max_elements) {
                    Some(d) => {
                        let min = p.get(2, "minlength").and_then(crate::interp::ops::as_int).unwrap_or(0);
                        Some(d.iter().fold(min.max(0), |m, &v| m.max(v as i64 + 1)))
                    }
                    None => None,
                },
            };
            let Some(length) = length else { return Ok(Value::opaque("bincount of unknown length")) };
            let mut shape = vec![length.max(0) as usize];
            if f == F::OpsSegmentSum {
                shape.extend(updates.aval.shape.iter().skip(1).copied());
            }
            let zeros = full(interp, &shape, 0.0, updates.aval.dtype)?;
            let prim = Prim::Scatter {
                op: crate::jax::ir::ScatterOp::Add,
                mode: crate::jax::ir::IndexMode::FillOrDrop,
                index: Some(vec![IndexItem::Array]),
                unique_indices: false,
            };
            apply1(interp, prim, &[zeros.clone(), updates, x]).map(Value::Array)
        }
        F::Sum | F::Prod | F::Max | F::Min | F::Amax | F::Amin | F::All | F::Any | F::Nansum | F::Nanmax | F::Nanmin => {
            let a = arr!(interp, cx, 0, "a");
            let axes = reduction_axes(interp, p.get(1, "axis"), a.aval.ndim())?;
            let op = match f {
                F::Sum | F::Nansum => ReduceOp::Sum,
                F::Prod => ReduceOp::Prod,
                F::Max | F::Amax | F::Nanmax => ReduceOp::Max,
                F::Min | F::Amin | F::Nanmin => ReduceOp::Min,
                F::All => ReduceOp::And,
                _ => ReduceOp::Or,
            };
            let initial = match p.get(usize::MAX, "initial") {
                Some(v) => Some(arr_or_unknown!(interp, v)),
                None => None,
            };
            let where_ = match p.get(usize::MAX, "where") {
                Some(v) => Some(arr_or_unknown!(interp, v)),
                None => None,
            };
            let jnp_name = match f {
                F::Sum => "sum",
                F::Prod => "prod",
                F::Max | F::Amax => "max",
                F::Min | F::Amin => "min",
                F::All => "all",
                F::Any => "any",
                F::Nansum => "nansum",
                F::Nanmax => "nanmax",
                _ => "nanmin",
            };
            check_where(interp, jnp_name, where_.as_ref())?;
            let name = if op == ReduceOp::Max { "max" } else { "min" };
            if matches!(op, ReduceOp::Max | ReduceOp::Min) && initial.is_none() {
                if where_.is_some() {
                    return Err(interp.value_error(format!(
                        "reduction operation {name} does not have an identity, so to use a where mask one has to specify 'initial'"
                    )));
                }
                let ax = axes.clone().unwrap_or_else(|| (0..a.aval.ndim()).collect());
                if ax.iter().any(|&i| a.aval.shape[i] == 0) {
                    return Err(interp.value_error(format!("zero-size array to reduction operation {name} which has no identity")));
                }
            }
            let dt = dtype_arg(interp, p.get(usize::MAX, "dtype"))?;
            let input = if matches!(op, ReduceOp::And | ReduceOp::Or) { convert(interp, &a, DType::Bool, false)? } else { a };
            let nan_reduction = matches!(f, F::Nansum | F::Nanmax | F::Nanmin) && input.aval.dtype.is_inexact();
            if !nan_reduction {
                return reduce_masked(interp, &input, op, axes, keepdims, dt, initial.as_ref(), where_.as_ref()).map(Value::Array);
            }
            // `_nan_reduction`: NaNs become the reduction's identity; nanmax and nanmin give
            // NaN where every element is NaN.
            let nan = compare_arrays(interp, CmpPrim::Ne, &input, &input)?;
            let fill = full(interp, &input.aval.shape, reduce_identity(op, input.aval.dtype), input.aval.dtype)?;
            let cleaned = apply1(interp, Prim::Select, &[nan.clone(), input.clone(), fill])?;
            let out = reduce_masked(interp, &cleaned, op, axes.clone(), keepdims, dt, initial.as_ref(), where_.as_ref())?;
            if matches!(op, ReduceOp::Sum | ReduceOp::Prod) {
                return Ok(Value::Array(out));
            }
            let all_nan = reduce(interp, &nan, ReduceOp::And, axes, keepdims, None)?;
            let nans = full(interp, &out.aval.shape, f64::NAN, out.aval.dtype)?;
            apply1(interp, Prim::Select, &[all_nan, out.clone(), nans]).map(Value::Array)
        }
        F::Mean | F::Nanmean => {
            let a = arr!(interp, cx, 0, "a");
            let axes = reduction_axes(interp, p.get(1, "axis"), a.aval.ndim())?;
            let dt = dtype_arg(interp, p.get(2, "dtype"))?;
            let where_ = match p.get(usize::MAX, "where") {
                Some(v) => Some(arr_or_unknown!(interp, v)),
                None => None,
            };
            check_where(interp, if f == F::Nanmean { "nanmean" } else { "mean" }, where_.as_ref())?;
            if f == F::Nanmean && a.aval.dtype.is_inexact() {
                // `jnp.nanmean`: the sum of the non-NaN elements over their count.
                let finite_or_inf = compare_arrays(interp, CmpPrim::Eq, &a, &a)?;
                let keep = match &where_ {
                    Some(w) => binary_prim(interp, BinaryPrim::And, &finite_or_inf, w)?,
                    None => finite_or_inf,
                };
                return mean_masked(interp, &a, axes, keepdims, dt, Some(&keep)).map(Value::Array);
            }
            mean_masked(interp, &a, axes, keepdims, dt, where_.as_ref()).map(Value::Array)
        }
        F::Average => {
            let a = arr!(interp, cx, 0, "a");
            let axes = reduction_axes(interp, p.get(1, "axis"), a.aval.ndim())?;
            let returned = match p.get(3, "returned") {
                Some(v) => interp.truthy(v)?,
                None => false,
            };
            let (avg, weights_sum) = match p.get(2, "weights") {
                None => {
                    let float = if a.aval.dtype.is_inexact() { a.aval.dtype } else { a.aval.dtype.to_inexact() };
                    let a = convert(interp, &a, float, a.aval.weak)?;
                    let avg = mean(interp, &a, axes.clone(), keepdims)?;
                    let n: usize = axes.unwrap_or_else(|| (0..a.aval.ndim()).collect()).iter().map(|&i| a.aval.shape[i]).product();
                    let total = full(interp, &[], n as f64, avg.aval.dtype)?;
                    (avg, total)
                }
                Some(w) => {
                    let w = arr_or_unknown!(interp, w);
                    let (ops, dt, _) = promote_broadcast(interp, &[a.clone(), w.clone()])?;
                    // `promote_dtypes_inexact`: int32 and narrower become float32 even with x64.
                    let float = dt.dtype.to_inexact();
                    let (a, mut w) = (convert(interp, &ops[0], float, dt.weak)?, convert(interp, &ops[1], float, dt.weak)?);
                    if a.aval.shape != w.aval.shape {
                        let Some(ax) = axes.clone() else {
                            return Err(interp.value_error("Axis must be specified when shapes of a and weights differ."));
                        };
                        let along: Vec<usize> = ax.iter().map(|&i| a.aval.shape[i]).collect();
                        if w.aval.shape.as_slice() != along.as_slice() {
                            return Err(interp.value_error("Shape of weights must be consistent with shape of a along specified axis."));
                        }
                        // `lax.reshape(weights, new_shape, dimensions=argsort(axis))`.
                        let mut order: Vec<usize> = (0..ax.len()).collect();
                        order.sort_by_key(|&k| ax[k]);
                        if order.iter().enumerate().any(|(k, &o)| k != o) {
                            w = transpose(interp, &w, Some(order))?;
                        }
                        let new_shape: Vec<usize> =
                            a.aval.shape.iter().enumerate().map(|(i, &d)| if ax.contains(&i) { d } else { 1 }).collect();
                        w = reshape_raw(interp, &w, &new_shape)?;
                        w = broadcast_to_shape(interp, &w, &a.aval.shape)?;
                    }
                    let total = reduce(interp, &w, ReduceOp::Sum, axes.clone(), keepdims, None)?;
                    let weighted = binary_prim(interp, BinaryPrim::Mul, &a, &w)?;
                    let s = reduce(interp, &weighted, ReduceOp::Sum, axes, keepdims, None)?;
                    (true_divide(interp, &s, &total)?, total)
                }
            };
            if !returned {
                return Ok(Value::Array(avg));
            }
            let shape = avg.aval.shape.clone();
            let weights_sum = broadcast_to_shape(interp, &weights_sum, &shape)?;
            Ok(Value::tuple(vec![Value::Array(avg), Value::Array(weights_sum)]))
        }
        F::Median | F::Nanmedian | F::Quantile | F::Nanquantile | F::Percentile | F::Nanpercentile => {
            quantile::call_quantile(interp, f, &p)
        }
        F::Var | F::Std => {
            let a = arr!(interp, cx, 0, "a");
            let axes = reduction_axes(interp, p.get(1, "axis"), a.aval.ndim())?;
            let name = if f == F::Std { "std" } else { "var" };
            // `var(a, axis, dtype, out, ddof, keepdims, *, where, mean, correction)`
            let ddof = p.get(4, "ddof");
            let correction = match (p.get(usize::MAX, "correction"), ddof) {
                (None, ddof) => ddof.cloned().unwrap_or(Value::Int(0)),
                (Some(c), None | Some(Value::Int(0))) => c.clone(),
                (Some(_), Some(_)) => return Err(interp.value_error("ddof and correction can't be provided simultaneously.")),
            };
            let correction = arr_or_unknown!(interp, &correction);
            let where_ = match p.get(usize::MAX, "where") {
                Some(v) => Some(arr_or_unknown!(interp, v)),
                None => None,
            };
            check_where(interp, name, where_.as_ref())?;
            let dtype = dtype_arg(interp, p.get(2, "dtype"))?;
            if f == F::Std {
                if let Some(d) = dtype.filter(|d| !d.is_inexact()) {
                    return Err(interp.value_error(format!("dtype argument to jnp.std must be inexact; got {}", d.name())));
                }
            }
            let mean = match p.get(usize::MAX, "mean") {
                Some(v) => Some(arr_or_unknown!(interp, v)),
                None => None,
            };
            if correction.aval.ndim() != 0 || dtype.is_some_and(|d| !d.is_inexact()) {
                // An array of corrections (which broadcasts the result) or an integer
                // computation dtype: not modelled.
                return Ok(Value::opaque("jnp.var with an array correction or an integer dtype"));
            }
            let v = var(interp, &a, axes, keepdims, &VarOptions { correction, dtype, where_, mean })?;
            if f == F::Std {
                return unary_prim(interp, UnaryPrim::Sqrt, &v).map(Value::Array);
            }
            Ok(Value::Array(v))
        }
        F::CountNonzero => {
            let a = arr!(interp, cx, 0, "a");
            let axes = reduction_axes(interp, p.get(1, "axis"), a.aval.ndim())?;
            let zero = Array::scalar(0.0, a.aval.dtype, true);
            let ne = compare_arrays(interp, CmpPrim::Ne, &a, &zero)?;
            reduce(interp, &ne, ReduceOp::Sum, axes, keepdims, None).map(Value::Array)
        }
        F::Argmax | F::Argmin => {
            let a = arr!(interp, cx, 0, "a");
            let axis = single_axis(interp, p.get(1, "axis"), a.aval.ndim())?;
            arg_reduce(interp, &a, if f == F::Argmax { ArgOp::Max } else { ArgOp::Min }, axis, keepdims).map(Value::Array)
        }
        F::Cumsum | F::Cumprod => {
            let a = arr!(interp, cx, 0, "a");
            let (a, axis) = match static_single_axis(interp, p.get(1, "axis"), a.aval.ndim())? {
                Some(ax) => (a, ax),
                None => {
                    let n = a.aval.size() as usize;
                    (reshape_raw(interp, &a, &[n])?, 0)
                }
            };
            let out_dt = if a.aval.dtype.is_bool() || (a.aval.dtype.is_integer() && a.aval.dtype.itemsize() < 4) {
                dtypes::default_int(c)
            } else {
                a.aval.dtype
            };
            let a = convert(interp, &a, out_dt, a.aval.weak)?;
            let op = if f == F::Cumsum { ReduceOp::Sum } else { ReduceOp::Prod };
            apply1(interp, Prim::Cumulative { op, axis, reverse: false }, &[a.clone()]).map(Value::Array)
        }
        // lax.cumsum(operand, axis=0, reverse=False) and friends: no promotion, one axis.
        F::LaxCumsum | F::LaxCumprod | F::LaxCummax | F::LaxCummin => {
            let a = arr!(interp, cx, 0, "operand");
            let axis = interp.index_of(p.get(1, "axis").unwrap_or(&Value::Int(0)))?.unwrap_or(0);
            let axis = normalize_axis(interp, axis, a.aval.ndim())?;
            let reverse = matches!(p.get(2, "reverse"), Some(Value::Bool(true)));
            let op = match f {
                F::LaxCumsum => ReduceOp::Sum,
                F::LaxCumprod => ReduceOp::Prod,
                F::LaxCummax => ReduceOp::Max,
                _ => ReduceOp::Min,
            };
            apply1(interp, Prim::Cumulative { op, axis, reverse }, &[a.clone()]).map(Value::Array)
        }
        // `amax(a, axis, keepdims) - amin(a, axis, keepdims)`.
        F::Ptp => {
            let a = Value::Array(arr!(interp, cx, 0, "a"));
            let mut options: Kwargs = Vec::new();
            for (i, name) in [(1, "axis"), (3, "keepdims")] {
                if let Some(v) = p.get(i, name) {
                    options.push((name.into(), v.clone()));
                }
            }
            let hi = call(interp, F::Amax, vec![a.clone()], options.clone())?;
            let lo = call(interp, F::Amin, vec![a], options)?;
            call(interp, F::Subtract, vec![hi, lo], Vec::new())
        }
        // `dispatch::family` sends only the functions above here.
        _ => Ok(cx.unrouted()),
    }
}

pub(super) fn reduce(
    interp: &mut Interp,
    a: &Rc<Array>,
    op: ReduceOp,
    axes: Option<Vec<usize>>,
    keepdims: bool,
    dtype: Option<DType>,
) -> PyResult<Rc<Array>> {
    reduce_masked(interp, a, op, axes, keepdims, dtype, None, None)
}

/// The identity JAX's `_reduction_init_val` gives `op` in `dtype`: `-inf`/`inf` for a float
/// `max`/`min`, the dtype's bounds for an integer one, `False`/`True` for bool.
pub(super) fn reduce_identity(op: ReduceOp, dtype: DType) -> f64 {
    let extreme = |x: f64| {
        if dtype.is_bool() {
            f64::from(u8::from(x > 0.0))
        } else if dtype.is_inexact() {
            x
        } else {
            eval::float_to_int(x, dtype)
        }
    };
    match op {
        ReduceOp::Sum | ReduceOp::Or => 0.0,
        ReduceOp::Prod | ReduceOp::And => 1.0,
        ReduceOp::Max => extreme(f64::NEG_INFINITY),
        ReduceOp::Min => extreme(f64::INFINITY),
    }
}

/// JAX's `_reduction` with `initial=` and `where=`: masked-out elements become the
/// reduction's identity (`_where(where, a, init_val)`) before the reduction, and `initial`
/// (converted to the computation dtype) is combined with the result after it, by the same
/// operation (`max(initial, reduce_max(a))`), before `keepdims` and the final conversion.
#[allow(clippy::too_many_arguments)]
pub(super) fn reduce_masked(
    interp: &mut Interp,
    a: &Rc<Array>,
    op: ReduceOp,
    axes: Option<Vec<usize>>,
    keepdims: bool,
    dtype: Option<DType>,
    initial: Option<&Rc<Array>>,
    where_: Option<&Rc<Array>>,
) -> PyResult<Rc<Array>> {
    let axes = axes.unwrap_or_else(|| (0..a.aval.ndim()).collect());
    let mut input = a.clone();
    let c = cfg(interp);
    let out_dtype = match (op, dtype) {
        (_, Some(d)) => dtypes::canonicalize(d, c),
        (ReduceOp::Sum | ReduceOp::Prod, None)
            if a.aval.dtype.is_bool() || (a.aval.dtype.is_integer() && a.aval.dtype.itemsize() < dtypes::default_int(c).itemsize()) =>
        {
            if a.aval.dtype.is_unsigned() {
                dtypes::canonicalize(DType::U64, c)
            } else {
                dtypes::default_int(c)
            }
        }
        (ReduceOp::And | ReduceOp::Or, _) => DType::Bool,
        _ => a.aval.dtype,
    };
    // jnp.sum and jnp.prod accumulate bfloat16 and float16 in float32 and round the result
    // once (`upcast_f16_for_computation` in jax/_src/numpy/reductions.py), as the jaxpr shows:
    // convert_element_type to f32, reduce_sum, convert_element_type back.
    if matches!(op, ReduceOp::Sum | ReduceOp::Prod) && matches!(out_dtype, DType::BF16 | DType::F16) {
        let wide = convert(interp, &input, DType::F32, false)?;
        let r = reduce_masked(interp, &wide, op, Some(axes), keepdims, None, initial, where_)?;
        return convert(interp, &r, out_dtype, false);
    }
    // JAX's `_reduction` converts with `lax.convert_element_type`, which drops a weak type:
    // `jnp.sum` of a weakly typed array is strongly typed (and so is its gradient's seed).
    if out_dtype != a.aval.dtype || a.aval.weak {
        input = convert(interp, &input, out_dtype, false)?;
    }
    if let Some(w) = where_ {
        // `_where(where, a, init_val)` broadcasts the mask, the operand and the scalar
        // identity together; a mask of higher rank broadcasts the operand too, and the
        // reduced axes (numbered by the operand's rank) then count from the front of the
        // broadcast shape: `jnp.sum(x of (4,), where=mask of (3, 4))` is of shape (4,).
        let shape =
            broadcast_shapes(&[&w.aval.shape, &input.aval.shape, &[]]).map_err(|m| interp.raise("ValueError", Code::ShapeMismatch, m))?;
        let mask = broadcast_to_shape(interp, w, &shape)?;
        let operand = broadcast_to_shape(interp, &input, &shape)?;
        let fill = full(interp, &shape, reduce_identity(op, out_dtype), out_dtype)?;
        input = apply1(interp, Prim::Select, &[mask, fill, operand.clone()])?;
    }
    let mut r = apply1(interp, Prim::Reduce { op, axes: axes.clone() }, &[input.clone()])?;
    if let Some(init) = initial {
        if init.aval.ndim() != 0 {
            let message = format!("initial value must be a scalar. Got array of shape {}", shape_tuple(&init.aval.shape));
            return Err(interp.value_error(message));
        }
        let init = convert(interp, init, out_dtype, false)?;
        let combine = match op {
            ReduceOp::Sum => BinaryPrim::Add,
            ReduceOp::Prod => BinaryPrim::Mul,
            ReduceOp::Max if out_dtype.is_bool() => BinaryPrim::Or,
            ReduceOp::Min if out_dtype.is_bool() => BinaryPrim::And,
            ReduceOp::Max => BinaryPrim::Max,
            ReduceOp::Min => BinaryPrim::Min,
            ReduceOp::And => BinaryPrim::And,
            ReduceOp::Or => BinaryPrim::Or,
        };
        r = binary_prim(interp, combine, &init, &r)?;
    }
    if keepdims {
        let kept: Vec<usize> = input.aval.shape.iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect();
        return reshape_raw(interp, &r, &kept);
    }
    Ok(r)
}

/// JAX's `check_where(name, where)`: a reduction's mask must be boolean.
pub(super) fn check_where(interp: &mut Interp, name: &str, where_: Option<&Rc<Array>>) -> PyResult<()> {
    match where_ {
        Some(w) if !w.aval.dtype.is_bool() => Err(interp
            .value_error(format!("jnp.{name}: where must be None or a boolean array; got where.dtype=dtype('{}').", w.aval.dtype.name()))),
        _ => Ok(()),
    }
}

/// `jnp.mean(a, axis, dtype, keepdims, where)`: the sum in the computation dtype (the
/// result dtype, float32 for bfloat16 and float16) divided by the count of elements (of
/// the mask's true elements with `where=`), converted to the result dtype, which is
/// `dtypes.to_inexact_dtype` of `a`'s when no `dtype=` is given: float32 for bool and
/// integers up to 32 bits, float64 for 64-bit ones, whatever x64 says (JAX 0.10.2).
pub(super) fn mean(interp: &mut Interp, a: &Rc<Array>, axes: Option<Vec<usize>>, keepdims: bool) -> PyResult<Rc<Array>> {
    mean_masked(interp, a, axes, keepdims, None, None)
}

pub(super) fn mean_masked(
    interp: &mut Interp,
    a: &Rc<Array>,
    axes: Option<Vec<usize>>,
    keepdims: bool,
    dtype: Option<DType>,
    where_: Option<&Rc<Array>>,
) -> PyResult<Rc<Array>> {
    let c = cfg(interp);
    let result = match dtype {
        Some(d) => dtypes::canonicalize(d, c),
        None => a.aval.dtype.to_inexact(),
    };
    let compute = if matches!(result, DType::BF16 | DType::F16) { DType::F32 } else { result };
    check_where(interp, "mean", where_)?;
    let axes_v = axes.unwrap_or_else(|| (0..a.aval.ndim()).collect());
    let count = count(interp, a, &axes_v, keepdims, where_, compute)?;
    let s = reduce_masked(interp, a, ReduceOp::Sum, Some(axes_v), keepdims, Some(compute), None, where_)?;
    let m = match where_ {
        None => true_divide(interp, &s, &count)?,
        Some(_) => binary_prim(interp, BinaryPrim::Div, &s, &count)?,
    };
    convert(interp, &m, result, false)
}

/// JAX's `_count(a, axis, keepdims, where, dtype)`: the number of elements reduced, a
/// weakly typed scalar without a mask, else the mask broadcast to `a`'s shape (with
/// `lax.broadcast_to`'s errors) and summed in `dtype`.
pub(super) fn count(
    interp: &mut Interp,
    a: &Rc<Array>,
    axes: &[usize],
    keepdims: bool,
    where_: Option<&Rc<Array>>,
    dtype: DType,
) -> PyResult<Rc<Array>> {
    match where_ {
        None => {
            let n: usize = axes.iter().map(|&i| a.aval.shape[i]).product();
            Ok(Array::scalar(n as f64, dtype, true))
        }
        Some(w) => {
            let mask = broadcast_to_checked(interp, w, &a.aval.shape)?;
            reduce(interp, &mask, ReduceOp::Sum, Some(axes.to_vec()), keepdims, Some(dtype))
        }
    }
}

/// What `jnp.var`/`jnp.std` take besides `a`, `axis` and `keepdims`.
pub(super) struct VarOptions {
    /// `correction=` (or `ddof=`), converted to the computation dtype; a scalar.
    correction: Rc<Array>,
    dtype: Option<DType>,
    where_: Option<Rc<Array>>,
    /// `mean=`: the mean to centre on instead of computing it.
    mean: Option<Rc<Array>>,
}

/// `jnp.var` as JAX's `_var` binds it: `a` in the computation dtype (`_var_promote_types`:
/// bool and integers through `to_inexact_dtype`, bfloat16 and float16 in float32), centred
/// on the (masked) mean, squared, summed over the mask and divided by `_count - correction`,
/// converted to the result dtype, and NaN where that normalizer is not positive.
pub(super) fn var(
    interp: &mut Interp,
    a: &Rc<Array>,
    axes: Option<Vec<usize>>,
    keepdims: bool,
    options: &VarOptions,
) -> PyResult<Rc<Array>> {
    let result = match options.dtype {
        Some(d) => dtypes::canonicalize(d, cfg(interp)),
        None if a.aval.dtype.is_inexact() => a.aval.dtype.real_dtype(),
        None => a.aval.dtype.to_inexact(),
    };
    let compute = if matches!(result, DType::BF16 | DType::F16) { DType::F32 } else { result };
    let x = convert(interp, a, compute, false)?;
    let where_ = options.where_.as_ref();
    let m = match &options.mean {
        Some(m) => convert(interp, m, compute, false)?,
        None => mean_masked(interp, &x, axes.clone(), true, Some(compute), where_)?,
    };
    let d = binary_prim(interp, BinaryPrim::Sub, &x, &m)?;
    let sq = unary_prim(interp, UnaryPrim::Square, &d)?;
    let axes_v = axes.unwrap_or_else(|| (0..a.aval.ndim()).collect());
    let n = count(interp, &x, &axes_v, keepdims, where_, compute)?;
    let n = convert(interp, &n, compute, false)?;
    let correction = convert(interp, &options.correction, compute, false)?;
    let normalizer = binary_prim(interp, BinaryPrim::Sub, &n, &correction)?;
    let s = reduce_masked(interp, &sq, ReduceOp::Sum, Some(axes_v), keepdims, Some(compute), None, where_)?;
    // The normalizer is computed at run time (the correction is an argument of JAX's
    // jitted `_var`), so XLA divides by it rather than multiplying by its reciprocal as it
    // does for a constant divisor: broadcast, it divides element by element here too.
    let normalizer_wide = broadcast_to_shape(interp, &normalizer, &s.aval.shape)?;
    let v = binary_prim(interp, BinaryPrim::Div, &s, &normalizer_wide)?;
    let v = convert(interp, &v, result, false)?;
    // `_where(normalizer > 0, result, nan)`
    let positive = compare_arrays(interp, CmpPrim::Gt, &normalizer, &Array::scalar(0.0, compute, true))?;
    let positive = broadcast_to_shape(interp, &positive, &v.aval.shape)?;
    let nan = full(interp, &v.aval.shape, f64::NAN, result)?;
    apply1(interp, Prim::Select, &[positive, nan, v.clone()])
}

pub(super) fn arg_reduce(interp: &mut Interp, a: &Rc<Array>, op: ArgOp, axis: Option<usize>, keepdims: bool) -> PyResult<Rc<Array>> {
    let (input, axis) = match axis {
        Some(ax) => (a.clone(), ax),
        None => {
            let n = a.aval.size() as usize;
            (reshape_raw(interp, a, &[n])?, 0)
        }
    };
    if input.aval.shape.get(axis) == Some(&0) {
        let name = if op == ArgOp::Max { "argmax" } else { "argmin" };
        return Err(interp.value_error(format!("attempt to get {name} of an empty sequence")));
    }
    let idx = dtypes::default_int(cfg(interp));
    let r = apply1(interp, Prim::ArgReduce { op, axis, index_dtype: idx }, &[input.clone()])?;
    if keepdims {
        let kept: Vec<usize> = input.aval.shape.iter().enumerate().map(|(i, &d)| if i == axis { 1 } else { d }).collect();
        return reshape_raw(interp, &r, &kept);
    }
    Ok(r)
}
