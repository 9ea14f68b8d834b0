//! The elementwise functions that are more than one primitive (`divide`, `floor_divide`,
//! `power`, `logaddexp`, `hypot`, `isinf`, `nan_to_num`, `where`, `clip`, ...); the ones that
//! are one primitive are rows of the ufunc table (ufunc.rs).

use super::*;

/// The elementwise functions of the surface dispatch (`dispatch::family` routes them here).
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    use JaxFn as F;
    let Call { f, args, kwargs, p, c, .. } = *cx;
    match f {
        F::Divide | F::TrueDivide => {
            let a = arr!(interp, cx, 0, "x1");
            let b = arr!(interp, cx, 1, "x2");
            true_divide(interp, &a, &b).map(Value::Array)
        }
        F::FloorDivide => {
            let a = arr!(interp, cx, 0, "x1");
            let b = arr!(interp, cx, 1, "x2");
            binary_arrays(interp, BinOp::FloorDiv, &a, &b).map(Value::Array)
        }
        F::Mod | F::Remainder => {
            let a = arr!(interp, cx, 0, "x1");
            let b = arr!(interp, cx, 1, "x2");
            binary_arrays(interp, BinOp::Mod, &a, &b).map(Value::Array)
        }
        F::Power => {
            let a = arr!(interp, cx, 0, "x1");
            let b = arr!(interp, cx, 1, "x2");
            power(interp, &a, &b).map(Value::Array)
        }
        // Both operands promoted to a common inexact dtype (`promote_args_inexact`); SciPy's
        // name takes an integer order only.
        F::ScipyPolygamma | F::LaxPolygamma => {
            let n = arr!(interp, cx, 0, "n");
            let x = arr!(interp, cx, 1, "x");
            if f == F::ScipyPolygamma && !n.aval.dtype.is_integer() {
                let message = format!("Argument `n` to polygamma must be of integer type. Got dtype {}.", n.aval.dtype.name());
                return Err(interp.raise("ValueError", Code::DtypeMismatch, message));
            }
            let (ops, dt, _) = promote_broadcast(interp, &[n, x])?;
            let float = if dt.dtype.is_inexact() { dt.dtype } else { dtypes::default_float(c) };
            let n = convert(interp, &ops[0], float, dt.weak)?;
            let x = convert(interp, &ops[1], float, dt.weak)?;
            binary_prim(interp, BinaryPrim::Polygamma, &n, &x).map(Value::Array)
        }
        F::RightShift => {
            let a = arr!(interp, cx, 0, "x1");
            let prim = if a.aval.dtype.is_unsigned() { BinaryPrim::ShiftRightLogical } else { BinaryPrim::ShiftRightArithmetic };
            // `right_shift(x1, x2)`: its operands read again, as every binary ufunc reads them.
            let a = arr!(interp, cx, 0, "x1");
            let b = arr!(interp, cx, 1, "x2");
            binary_prim(interp, prim, &a, &b).map(Value::Array)
        }
        F::Logaddexp => {
            let a = arr!(interp, cx, 0, "x1");
            let b = arr!(interp, cx, 1, "x2");
            let (ops, _, shape) = promote_broadcast(interp, &[a, b])?;
            let (x, y) = (inexact(interp, &ops[0])?, inexact(interp, &ops[1])?);
            let (x, y) = (broadcast_to_shape(interp, &x, &shape)?, broadcast_to_shape(interp, &y, &shape)?);
            apply1(interp, Prim::Binary(BinaryPrim::Logaddexp), &[x, y]).map(Value::Array)
        }
        F::Hypot => {
            let a = arr!(interp, cx, 0, "x1");
            let b = arr!(interp, cx, 1, "x2");
            let (ops, _, shape) = promote_broadcast(interp, &[a, b])?;
            let (x, y) = (inexact(interp, &ops[0])?, inexact(interp, &ops[1])?);
            let (x, y) = (broadcast_to_shape(interp, &x, &shape)?, broadcast_to_shape(interp, &y, &shape)?);
            hypot(interp, &x, &y).map(Value::Array)
        }
        F::Positive => Ok(Value::Array(arr!(interp, cx, 0, "x"))),
        F::Round => {
            let a = arr!(interp, cx, 0, "a");
            let decimals = p.get(1, "decimals").and_then(crate::interp::ops::as_int).unwrap_or(0);
            if decimals == 0 {
                return unary_prim(interp, UnaryPrim::Round, &a).map(Value::Array);
            }
            if !a.aval.dtype.is_floating() {
                return apply1(interp, Prim::opaque("round", a.aval.clone()), &[a.clone()]).map(Value::Array);
            }
            // JAX's `_round_float`: round(x * 10**decimals) / 10**decimals, in x's dtype; XLA
            // on CPU divides by the constant as a multiplication by its reciprocal, so
            // `jnp.round(0.4, 2)` is 0.39999998 in float32.
            let factor = Array::scalar(10f64.powi(decimals as i32), a.aval.dtype, true);
            let reciprocal = Array::scalar(10f64.powi(-decimals as i32), a.aval.dtype, true);
            let scaled = binary_prim(interp, BinaryPrim::Mul, &a, &factor)?;
            let rounded = unary_prim(interp, UnaryPrim::Round, &scaled)?;
            binary_prim(interp, BinaryPrim::Mul, &rounded, &reciprocal).map(Value::Array)
        }
        F::Trunc => {
            // `where(x < 0, ceil(x), floor(x))`; integers are returned as they are.
            let a = arr!(interp, cx, 0, "x");
            if !a.aval.dtype.is_inexact() {
                return Ok(Value::Array(a));
            }
            let negative = compare_arrays(interp, CmpPrim::Lt, &a, &weak(0.0))?;
            let up = unary_prim(interp, UnaryPrim::Ceil, &a)?;
            let down = unary_prim(interp, UnaryPrim::Floor, &a)?;
            where3(interp, &negative, &up, &down).map(Value::Array)
        }
        F::Log2 | F::Log10 => {
            let a = arr!(interp, cx, 0, "x");
            let l = unary_prim(interp, UnaryPrim::Log, &a)?;
            let k = Array::scalar(if f == F::Log2 { std::f64::consts::LN_2 } else { std::f64::consts::LN_10 }, l.aval.dtype, true);
            true_divide(interp, &l, &k).map(Value::Array)
        }
        F::Reciprocal => {
            let a = arr!(interp, cx, 0, "x");
            let one = Array::scalar(1.0, a.aval.dtype, true);
            true_divide(interp, &one, &a).map(Value::Array)
        }
        F::Deg2rad | F::Rad2deg => {
            let a = arr!(interp, cx, 0, "x");
            let k = if f == F::Deg2rad { std::f64::consts::PI / 180.0 } else { 180.0 / std::f64::consts::PI };
            let a = if a.aval.dtype.is_inexact() { a } else { convert(interp, &a, dtypes::default_float(c), a.aval.weak)? };
            let kk = Array::scalar(k, a.aval.dtype, true);
            binary_prim(interp, BinaryPrim::Mul, &a, &kk).map(Value::Array)
        }
        F::Isnan => {
            // jnp.isnan is `lax.ne(x, x)`.
            let a = arr!(interp, cx, 0, "x");
            apply1(interp, Prim::Compare(CmpPrim::Ne), &[a.clone(), a.clone()]).map(Value::Array)
        }
        F::Isinf => {
            // `abs(x) == inf`; an integer or bool array holds no infinity.
            let a = arr!(interp, cx, 0, "x");
            if !a.aval.dtype.is_inexact() {
                return full(interp, &a.aval.shape, 0.0, DType::Bool).map(Value::Array);
            }
            let magnitude = unary_prim(interp, UnaryPrim::Abs, &a)?;
            compare_arrays(interp, CmpPrim::Eq, &magnitude, &weak(f64::INFINITY)).map(Value::Array)
        }
        F::NanToNum => {
            // `where(isnan(x), nan, x)`, then +inf and -inf replaced the same way, with the
            // replacements `asarray(v, dtype=x.dtype)` (finfo's max and min by default).
            let a = arr!(interp, cx, 0, "x");
            let dt = a.aval.dtype;
            if !dt.is_inexact() {
                return Ok(Value::Array(a));
            }
            if dt.is_complex() {
                return apply1(interp, Prim::opaque("nan_to_num of a complex array", a.aval.clone()), &[a.clone()]).map(Value::Array);
            }
            let largest = dt.largest_finite();
            let replacement = |interp: &mut Interp, i: usize, name: &str, default: f64| -> PyResult<Option<Rc<Array>>> {
                match p.get(i, name) {
                    None | Some(Value::None) => Ok(Some(Array::scalar(default, dt, false))),
                    Some(v) => match operand(interp, v)? {
                        Operand::Array(r) => convert(interp, &r, dt, false).map(Some),
                        Operand::Unknown => Ok(None),
                    },
                }
            };
            let (Some(nan), Some(posinf), Some(neginf)) = (
                replacement(interp, 2, "nan", 0.0)?,
                replacement(interp, 3, "posinf", largest)?,
                replacement(interp, 4, "neginf", -largest)?,
            ) else {
                return apply1(interp, Prim::opaque("nan_to_num", a.aval.clone()), &[a.clone()]).map(Value::Array);
            };
            let is_nan = apply1(interp, Prim::Compare(CmpPrim::Ne), &[a.clone(), a.clone()])?;
            let out = call(interp, F::Where, vec![Value::Array(is_nan), Value::Array(nan), Value::Array(a)], Vec::new())?;
            let Value::Array(out) = out else { return Ok(out) };
            let is_posinf = compare_arrays(interp, CmpPrim::Eq, &out, &weak(f64::INFINITY))?;
            let out = call(interp, F::Where, vec![Value::Array(is_posinf), Value::Array(posinf), Value::Array(out)], Vec::new())?;
            let Value::Array(out) = out else { return Ok(out) };
            let is_neginf = compare_arrays(interp, CmpPrim::Eq, &out, &weak(f64::NEG_INFINITY))?;
            call(interp, F::Where, vec![Value::Array(is_neginf), Value::Array(neginf), Value::Array(out)], Vec::new())
        }
        F::Real | F::Conj => Ok(Value::Array(arr!(interp, cx, 0, "x"))),
        F::Imag => {
            let a = arr!(interp, cx, 0, "x");
            let shape = a.aval.shape.clone();
            full(interp, &shape, 0.0, a.aval.dtype).map(Value::Array)
        }
        F::LogicalNot | F::BitwiseNot | F::Invert => {
            let a = arr!(interp, cx, 0, "x");
            if f != F::LogicalNot && a.aval.dtype.is_inexact() {
                return unary_op(interp, UnaryOp::Invert, &a);
            }
            let a = if f == F::LogicalNot { convert(interp, &a, DType::Bool, false)? } else { a };
            apply1(interp, Prim::Unary(UnaryPrim::Not), &[a.clone()]).map(Value::Array)
        }
        F::Allclose | F::ArrayEqual | F::Isclose => {
            let a = arr!(interp, cx, 0, "a");
            let b = arr!(interp, cx, 1, "b");
            if f == F::ArrayEqual && a.aval.shape != b.aval.shape {
                return Ok(Value::Array(Array::scalar(0.0, DType::Bool, false)));
            }
            let (ops, dt, _) = promote_broadcast(interp, &[a, b])?;
            let eq = compare_arrays(interp, CmpPrim::Eq, &ops[0], &ops[1])?;
            let out = if f == F::ArrayEqual {
                eq
            } else {
                // jnp.isclose: |a - b| <= atol + rtol * |b| where both are finite, and
                // equal infinities; NaN is never close (equal_nan=False).
                let float = if dt.dtype.is_inexact() { dt.dtype } else { dtypes::default_float(c) };
                let x = convert(interp, &ops[0], float, dt.weak)?;
                let y = convert(interp, &ops[1], float, dt.weak)?;
                let tol_arg = |i: usize, name: &str, default: f64| p.get(i, name).and_then(crate::interp::ops::as_f64).unwrap_or(default);
                let (rtol, atol) = (tol_arg(2, "rtol", 1e-5), tol_arg(3, "atol", 1e-8));
                let diff = binary_prim(interp, BinaryPrim::Sub, &x, &y)?;
                let dist = unary_prim(interp, UnaryPrim::Abs, &diff)?;
                let size = unary_prim(interp, UnaryPrim::Abs, &y)?;
                let scaled = binary_prim(interp, BinaryPrim::Mul, &size, &Array::scalar(rtol, float, true))?;
                let tol = binary_prim(interp, BinaryPrim::Add, &scaled, &Array::scalar(atol, float, true))?;
                let within = compare_arrays(interp, CmpPrim::Le, &dist, &tol)?;
                let fx = unary_prim(interp, UnaryPrim::IsFinite, &x)?;
                let fy = unary_prim(interp, UnaryPrim::IsFinite, &y)?;
                let finite = binary_prim(interp, BinaryPrim::And, &fx, &fy)?;
                let near = binary_prim(interp, BinaryPrim::And, &within, &finite)?;
                binary_prim(interp, BinaryPrim::Or, &eq, &near)?
            };
            if f == F::Isclose {
                return Ok(Value::Array(out));
            }
            reduce(interp, &out, ReduceOp::And, None, false, None).map(Value::Array)
        }
        F::Where => {
            if p.get(1, "x").is_none() && p.get(2, "y").is_none() {
                return call(interp, F::Nonzero, args.to_vec(), kwargs.clone());
            }
            let cond = arr!(interp, cx, 0, "condition");
            let x = arr!(interp, cx, 1, "x");
            let y = arr!(interp, cx, 2, "y");
            let shapes: Vec<&[usize]> = vec![&cond.aval.shape, &x.aval.shape, &y.aval.shape];
            let shape = broadcast_shapes(&shapes).map_err(|m| interp.raise("ValueError", Code::ShapeMismatch, m))?;
            let (ops, _, _) = promote_broadcast(interp, &[x, y])?;
            let cb = convert(interp, &cond, DType::Bool, false)?;
            let cb = broadcast_to_shape(interp, &cb, &shape)?;
            let xb = broadcast_to_shape(interp, &ops[0], &shape)?;
            let yb = broadcast_to_shape(interp, &ops[1], &shape)?;
            apply1(interp, Prim::Select, &[cb, yb, xb]).map(Value::Array)
        }
        F::Clip => {
            let a = arr!(interp, cx, 0, "x");
            let mut cur = a;
            if let Some(lo) = p.get(1, "min").or_else(|| p.get(usize::MAX, "a_min")) {
                let lo = arr_or_unknown!(interp, lo);
                cur = binary_prim(interp, BinaryPrim::Max, &cur, &lo)?;
            }
            if let Some(hi) = p.get(2, "max").or_else(|| p.get(usize::MAX, "a_max")) {
                let hi = arr_or_unknown!(interp, hi);
                cur = binary_prim(interp, BinaryPrim::Min, &cur, &hi)?;
            }
            Ok(Value::Array(cur))
        }
        F::LaxIntegerPow => {
            let a = arr!(interp, cx, 0, "x");
            let Some(y) = interp.index_of(p.get(1, "y").unwrap_or(&Value::None))?.and_then(|y| i32::try_from(y).ok()) else {
                return Ok(Value::opaque("lax.integer_pow with an unknown exponent"));
            };
            apply1(interp, Prim::IntegerPow(y), &[a.clone()]).map(Value::Array)
        }
        // lax.clamp(min, x, max): the bounds are scalars or of x's shape; weakly typed
        // Python numbers take x's dtype.
        F::LaxClamp => {
            let (lo, x, hi) = (arr!(interp, cx, 0, "min"), arr!(interp, cx, 1, "x"), arr!(interp, cx, 2, "max"));
            let mut bounds = Vec::with_capacity(2);
            for bound in [lo, hi] {
                let bound = if bound.aval.weak { convert(interp, &bound, x.aval.dtype, false)? } else { bound };
                if bound.aval.dtype != x.aval.dtype || !(bound.aval.ndim() == 0 || bound.aval.shape == x.aval.shape) {
                    return Ok(Value::opaque("lax.clamp with bounds of another dtype or shape"));
                }
                bounds.push(bound);
            }
            let inputs = [bounds[0].clone(), x.clone(), bounds[1].clone()];
            apply1(interp, Prim::Clamp, &inputs).map(Value::Array)
        }
        // `jax/_src/scipy/stats/norm.py`: `(log(2π · scale²) + (x - loc)² / scale²) / -2` in the
        // promoted inexact dtype; `pdf` is its `exp`.
        F::ScipyNormLogpdf | F::ScipyNormPdf => {
            let mut args3 = Vec::with_capacity(3);
            for (i, name, default) in [(0, "x", None), (1, "loc", Some(0)), (2, "scale", Some(1))] {
                let v = match (p.get(i, name), default) {
                    (Some(v), _) => v.clone(),
                    (None, Some(d)) => Value::Int(d),
                    (None, None) => return Err(interp.type_error(format!("{}() missing 1 required positional argument: 'x'", f.name()))),
                };
                args3.push(arr_or_unknown!(interp, &v));
            }
            let wd = promote(&args3.iter().map(|a| a.aval.weak_dtype()).collect::<Vec<_>>(), c);
            let dt = dtypes::canonicalize(wd.dtype.to_inexact(), c);
            let mut v = Vec::with_capacity(3);
            for a in &args3 {
                v.push(Value::Array(convert(interp, a, dt, wd.weak)?));
            }
            let constant = |x: f64| Value::Array(Array::scalar(x, dt, wd.weak));
            let scale_sq = call(interp, F::Square, vec![v[2].clone()], Vec::new())?;
            let scaled = call(interp, F::Multiply, vec![constant(2.0 * std::f64::consts::PI), scale_sq.clone()], Vec::new())?;
            let log_normalizer = call(interp, F::Log, vec![scaled], Vec::new())?;
            let centered = call(interp, F::Subtract, vec![v[0].clone(), v[1].clone()], Vec::new())?;
            let centered_sq = call(interp, F::Square, vec![centered], Vec::new())?;
            let quadratic = call(interp, F::Divide, vec![centered_sq, scale_sq], Vec::new())?;
            let total = call(interp, F::Add, vec![log_normalizer, quadratic], Vec::new())?;
            let logpdf = call(interp, F::Divide, vec![total, constant(-2.0)], Vec::new())?;
            if f == F::ScipyNormPdf {
                call(interp, F::Exp, vec![logpdf], Vec::new())
            } else {
                Ok(logpdf)
            }
        }
        F::Astype => {
            let a = arr!(interp, cx, 0, "x");
            call_array_method(interp, &a, "astype", args[1..].to_vec(), kwargs.clone())
        }
        F::LaxConvertElementType => {
            let a = arr!(interp, cx, 0, "operand");
            match dtype_arg(interp, p.get(1, "new_dtype"))? {
                Some(d) => convert(interp, &a, dtypes::canonicalize(d, c), false).map(Value::Array),
                None => Ok(Value::opaque("convert_element_type")),
            }
        }
        // A pytree of arrays too: the primitive on each inexact leaf, the others as they are.
        F::StopGradient
            if matches!(p.get(0, "x"), Some(Value::Dict(_) | Value::List(_) | Value::Tuple(_) | Value::Instance(_) | Value::None)) =>
        {
            let tree = p.get(0, "x").cloned().unwrap_or(Value::None);
            crate::jax::transforms::trace::try_map_arrays(interp, &tree, &mut |interp, a| {
                if a.aval.dtype.is_inexact() {
                    apply1(interp, Prim::StopGradient, std::slice::from_ref(a))
                } else {
                    Ok(a.clone())
                }
            })
        }
        F::StopGradient => {
            let a = arr!(interp, cx, 0, "x");
            apply1(interp, Prim::StopGradient, &[a.clone()]).map(Value::Array)
        }
        F::LaxSelect => {
            let pred = arr!(interp, cx, 0, "pred");
            let t = arr!(interp, cx, 1, "on_true");
            let fl = arr!(interp, cx, 2, "on_false");
            if t.aval.dtype != fl.aval.dtype {
                return Err(interp.raise(
                    "TypeError",
                    Code::DtypeMismatch,
                    format!(
                        "lax.select requires arguments to have the same dtypes, got {}, {}.",
                        fl.aval.dtype.name(),
                        t.aval.dtype.name()
                    ),
                ));
            }
            apply1(interp, Prim::Select, &[pred, fl, t.clone()]).map(Value::Array)
        }
        F::Select => {
            // The first choice whose condition holds, else the default (JAX: an argmax over
            // the stacked conditions and `select_n`, which picks the same elements).
            let conds = interp.iterate(&cx.first())?;
            let choices = interp.iterate(p.get(1, "choicelist").unwrap_or(&Value::None))?;
            if conds.len() != choices.len() {
                return Err(interp.value_error(format!(
                    "condlist must have length equal to choicelist ({} vs {})",
                    conds.len(),
                    choices.len()
                )));
            }
            if conds.is_empty() {
                return Err(interp.value_error("condlist must be non-empty"));
            }
            let default = p.get(2, "default").cloned().unwrap_or(Value::Int(0));
            let mut arrays = Vec::new();
            for v in conds.iter().chain(&choices).chain(std::iter::once(&default)) {
                arrays.push(arr_or_unknown!(interp, v));
            }
            let shapes: Vec<&[usize]> = arrays.iter().map(|a| a.aval.shape.as_slice()).collect();
            broadcast_shapes(&shapes).map_err(|m| interp.raise("ValueError", Code::ShapeMismatch, m))?;
            let vals: Vec<WeakDType> = arrays[conds.len()..].iter().map(|a| a.aval.weak_dtype()).collect();
            let dt = promote(&vals, c);
            let n = conds.len();
            let mut out = convert(interp, &arrays[2 * n], dt.dtype, dt.weak)?;
            for k in (0..n).rev() {
                let cond = convert(interp, &arrays[k], DType::Bool, false)?;
                let choice = convert(interp, &arrays[n + k], dt.dtype, dt.weak)?;
                let picked = call(interp, F::Where, vec![Value::Array(cond), Value::Array(choice), Value::Array(out)], Vec::new())?;
                let Value::Array(picked) = picked else { return Ok(picked) };
                out = picked;
            }
            Ok(Value::Array(out))
        }
        // `dispatch::family` sends only the functions above here.
        _ => Ok(cx.unrouted()),
    }
}

/// A number or array operand of an activation's formula, weakly typed when it is a Python
/// number (`alpha`, constants).
pub(super) fn num(interp: &mut Interp, v: &Value) -> PyResult<Option<Rc<Array>>> {
    Ok(match operand(interp, v)? {
        Operand::Array(a) => Some(a),
        Operand::Unknown => None,
    })
}

/// `jnp.where(c, x, y)` of arrays, through `jnp.where` itself (promotion, broadcasting).
pub(super) fn where3(interp: &mut Interp, c: &Rc<Array>, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Rc<Array>> {
    match call(interp, JaxFn::Where, vec![Value::Array(c.clone()), Value::Array(x.clone()), Value::Array(y.clone())], Vec::new())? {
        Value::Array(r) => Ok(r),
        _ => Err(interp.value_error("jnp.where of unknown operands")),
    }
}

/// `jnp.hypot` of operands already promoted to one inexact dtype and shape, with JAX's
/// scaling (`max * sqrt(1 + (min/max)**2)`), its `0` where both are zero and its `inf` where
/// either is infinite (even against a NaN), in JAX's order of equations.
pub(super) fn hypot(interp: &mut Interp, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Rc<Array>> {
    let (x, y) = (unary_prim(interp, UnaryPrim::Abs, x)?, unary_prim(interp, UnaryPrim::Abs, y)?);
    let inf = weak(f64::INFINITY);
    let x_inf = compare_arrays(interp, CmpPrim::Eq, &x, &inf)?;
    let y_inf = compare_arrays(interp, CmpPrim::Eq, &y, &inf)?;
    let either_inf = binary_prim(interp, BinaryPrim::Or, &x_inf, &y_inf)?;
    let big = binary_prim(interp, BinaryPrim::Max, &x, &y)?;
    let small = binary_prim(interp, BinaryPrim::Min, &x, &y)?;
    let zero = compare_arrays(interp, CmpPrim::Eq, &big, &weak(0.0))?;
    let ones = full(interp, &big.aval.shape, 1.0, big.aval.dtype)?;
    let safe_big = where3(interp, &zero, &ones, &big)?;
    let ratio = true_divide(interp, &small, &safe_big)?;
    let squared = unary_prim(interp, UnaryPrim::Square, &ratio)?;
    let sum = binary_prim(interp, BinaryPrim::Add, &weak(1.0), &squared)?;
    let root = unary_prim(interp, UnaryPrim::Sqrt, &sum)?;
    let scaled = binary_prim(interp, BinaryPrim::Mul, &big, &root)?;
    let finite = where3(interp, &zero, &big, &scaled)?;
    let infs = full(interp, &finite.aval.shape, f64::INFINITY, finite.aval.dtype)?;
    where3(interp, &either_inf, &infs, &finite)
}

pub(super) fn weak(v: f64) -> Rc<Array> {
    Array::scalar(v, DType::F64, true)
}
