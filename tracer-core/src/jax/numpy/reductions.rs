//! Reductions: `sum`/`prod`/`max`/`min`/`all`/`any` with JAX's `_reduction` (dtype rules,
//! `initial=`, `where=`), `mean`, `var`/`std`, `average`, the arg-reductions, cumulative
//! reductions, quantiles (quantile.rs) and `bincount`/`segment_sum`.

use super::*;

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
        input = bind1(interp, Prim::Select, &[mask, fill, operand.clone()], operand.aval.clone())?;
    }
    let out_shape: Vec<usize> = input.aval.shape.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect();
    let aval = Aval { shape: Shape::from_slice(&out_shape), dtype: out_dtype, weak: false };
    let mut r = bind1(interp, Prim::Reduce { op, axes: axes.clone() }, &[input.clone()], aval)?;
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
    pub(super) correction: Rc<Array>,
    pub(super) dtype: Option<DType>,
    pub(super) where_: Option<Rc<Array>>,
    /// `mean=`: the mean to centre on instead of computing it.
    pub(super) mean: Option<Rc<Array>>,
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
    bind1(interp, Prim::Select, &[positive, nan, v.clone()], v.aval.clone())
}

pub(super) fn arg_reduce(interp: &mut Interp, a: &Rc<Array>, op: ArgOp, axis: Option<Vec<usize>>, keepdims: bool) -> PyResult<Rc<Array>> {
    let (input, axis) = match axis {
        Some(ax) => (a.clone(), ax[0]),
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
    let out: Vec<usize> = input.aval.shape.iter().enumerate().filter(|(i, _)| *i != axis).map(|(_, &d)| d).collect();
    let r = bind1(interp, Prim::ArgReduce { op, axis, index_dtype: idx }, &[input.clone()], Aval::new(&out, idx))?;
    if keepdims {
        let kept: Vec<usize> = input.aval.shape.iter().enumerate().map(|(i, &d)| if i == axis { 1 } else { d }).collect();
        return reshape_raw(interp, &r, &kept);
    }
    Ok(r)
}
