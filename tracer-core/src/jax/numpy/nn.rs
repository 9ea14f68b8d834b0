//! `jax.nn`: the activations written with the operations `jax/_src/nn/functions.py` uses,
//! `softmax`/`log_softmax`, `standardize`, `logsumexp` and friends, `one_hot`.

use super::*;

/// The nn functions of the surface dispatch (`dispatch::family` routes them here).
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    use JaxFn as F;
    let Call { f, args, p, c, keepdims, .. } = *cx;
    match f {
        F::NnRelu => {
            let a = arr!(interp, cx, 0, "x");
            let zero = Array::scalar(0.0, a.aval.dtype, true);
            binary_prim(interp, BinaryPrim::Max, &a, &zero).map(Value::Array)
        }
        // `jnp.minimum(jnp.maximum(x, 0), 6.)`, as JAX writes it; its derivative is its
        // `custom_jvp` rule's (`ad::partials`, keyed on the equations' API).
        F::NnRelu6 => {
            let a = arr!(interp, cx, 0, "x");
            let a = inexact(interp, &a)?;
            let zero = Array::scalar(0.0, a.aval.dtype, true);
            let six = Array::scalar(6.0, a.aval.dtype, true);
            let r = binary_prim(interp, BinaryPrim::Max, &a, &zero)?;
            binary_prim(interp, BinaryPrim::Min, &r, &six).map(Value::Array)
        }
        F::NnIdentity => Ok(Value::Array(arr!(interp, cx, 0, "x"))),
        F::NnGelu
        | F::NnSilu
        | F::NnSwish
        | F::NnSoftplus
        | F::NnElu
        | F::NnLeakyRelu
        | F::NnLogSigmoid
        | F::NnSoftSign
        | F::NnHardTanh
        | F::NnCelu
        | F::NnSelu
        | F::NnMish
        | F::NnSquareplus
        | F::NnSparsePlus
        | F::NnSparseSigmoid
        | F::NnHardSigmoid
        | F::NnHardSilu
        | F::NnHardSwish
        | F::NnGlu => {
            let a = arr!(interp, cx, 0, "x");
            let param = |i: usize, name: &str, default: f64| p.get(i, name).cloned().unwrap_or(Value::Float(default));
            let extra = match f {
                F::NnElu | F::NnCelu => Some(param(1, "alpha", 1.0)),
                F::NnLeakyRelu => Some(param(1, "negative_slope", 1e-2)),
                F::NnSquareplus => Some(p.get(1, "b").cloned().unwrap_or(Value::Int(4))),
                F::NnGlu => Some(p.get(1, "axis").cloned().unwrap_or(Value::Int(-1))),
                F::NnGelu => Some(p.get(1, "approximate").cloned().unwrap_or(Value::Bool(true))),
                _ => None,
            };
            activation(interp, f, &a, extra.as_ref())
        }
        F::NnSoftmax | F::NnLogSoftmax if p.get(usize::MAX, "where").is_none() && p.get(usize::MAX, "initial").is_none() => {
            let a = arr!(interp, cx, 0, "x");
            let axes = reduction_axes(interp, Some(p.get(1, "axis").unwrap_or(&Value::Int(-1))), a.aval.ndim().max(1))?;
            let a = inexact(interp, &a)?;
            // jax.nn.softmax / log_softmax: shift by the maximum so that exp cannot overflow.
            let x_max = reduce(interp, &a, ReduceOp::Max, axes.clone(), true, None)?;
            let shifted = binary_prim(interp, BinaryPrim::Sub, &a, &x_max)?;
            let e = unary_prim(interp, UnaryPrim::Exp, &shifted)?;
            let total = reduce(interp, &e, ReduceOp::Sum, axes, true, None)?;
            if f == F::NnSoftmax {
                return binary_prim(interp, BinaryPrim::Div, &e, &total).map(Value::Array);
            }
            let log_total = unary_prim(interp, UnaryPrim::Log, &total)?;
            binary_prim(interp, BinaryPrim::Sub, &shifted, &log_total).map(Value::Array)
        }
        F::NnStandardize if a_is_inexact(&args) => {
            // mean(x, axis, keepdims=True, where); variance: "fast" (the default)
            // mean(square(x)) - square(mean), clipped at 0, or "stable" mean(square(x - mean));
            // then (x - mean) * rsqrt(variance + epsilon).
            let x = arr!(interp, cx, 0, "x");
            let axes = reduction_axes(interp, Some(p.get(1, "axis").unwrap_or(&Value::Int(-1))), x.aval.ndim())?;
            let where_ = match p.get(5, "where") {
                Some(v) => Some(arr_or_unknown!(interp, v)),
                None => None,
            };
            let mean = match p.get(2, "mean") {
                Some(v) => arr_or_unknown!(interp, v),
                None => mean_masked(interp, &x, axes.clone(), true, None, where_.as_ref())?,
            };
            let variance = match p.get(3, "variance") {
                Some(v) => arr_or_unknown!(interp, v),
                None => {
                    let algorithm = match p.get(usize::MAX, "algorithm") {
                        Some(Value::Str(s)) => s.to_string(),
                        Some(_) => return Ok(Value::opaque("standardize with an unknown algorithm")),
                        None => "fast".to_string(),
                    };
                    if algorithm == "stable" {
                        let d = binary_prim(interp, BinaryPrim::Sub, &x, &mean)?;
                        let sq = unary_prim(interp, UnaryPrim::Square, &d)?;
                        mean_masked(interp, &sq, axes, true, None, where_.as_ref())?
                    } else if algorithm == "fast" {
                        let sq = unary_prim(interp, UnaryPrim::Square, &x)?;
                        let m2 = mean_masked(interp, &sq, axes, true, None, where_.as_ref())?;
                        let msq = unary_prim(interp, UnaryPrim::Square, &mean)?;
                        let v = binary_prim(interp, BinaryPrim::Sub, &m2, &msq)?;
                        binary_prim(interp, BinaryPrim::Max, &v, &Array::scalar(0.0, DType::I64, true))?
                    } else {
                        return Err(interp.value_error(format!("Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")));
                    }
                }
            };
            let eps = match p.get(4, "epsilon") {
                Some(v) => arr_or_unknown!(interp, v),
                None => Array::scalar(1e-5, DType::F64, true),
            };
            let d = binary_prim(interp, BinaryPrim::Sub, &x, &mean)?;
            let ve = binary_prim(interp, BinaryPrim::Add, &variance, &eps)?;
            let r = unary_prim(interp, UnaryPrim::Rsqrt, &ve)?;
            binary_prim(interp, BinaryPrim::Mul, &d, &r).map(Value::Array)
        }
        F::NnSoftmax | F::NnLogSoftmax | F::NnStandardize => {
            let a = arr!(interp, cx, 0, "x");
            let _ = reduction_axes(interp, Some(p.get(1, "axis").unwrap_or(&Value::Int(-1))), a.aval.ndim().max(1))?;
            let a = inexact(interp, &a)?;
            apply1(
                interp,
                Prim::opaque(
                    match f {
                        F::NnSoftmax => "softmax",
                        F::NnLogSoftmax => "log_softmax",
                        _ => "standardize",
                    },
                    a.aval.clone(),
                ),
                &[a.clone()],
            )
            .map(Value::Array)
        }
        F::NnLogsumexp | F::ScipyLogsumexp => {
            let a = arr!(interp, cx, 0, "a");
            let axes = reduction_axes(interp, p.get(1, "axis"), a.aval.ndim())?;
            let a = inexact(interp, &a)?;
            if p.get(usize::MAX, "b").is_some() || p.get(usize::MAX, "return_sign").is_some() {
                let r = reduce(interp, &a, ReduceOp::Max, axes, keepdims, None)?;
                return apply1(interp, Prim::opaque("logsumexp", r.aval.clone()), &[a]).map(Value::Array);
            }
            logsumexp(interp, &a, axes, keepdims).map(Value::Array)
        }
        // `lse - log(count)`, the count converted to the result's dtype (a constant, so its
        // log is what XLA's `log` gives for it).
        F::NnLogmeanexp if p.get(usize::MAX, "where").is_none() => {
            let a = arr!(interp, cx, 0, "x");
            let axes = reduction_axes(interp, p.get(1, "axis"), a.aval.ndim())?;
            let a = inexact(interp, &a)?;
            let n: usize = match &axes {
                Some(ax) => ax.iter().map(|&i| a.aval.shape[i]).product(),
                None => a.aval.shape.iter().product(),
            };
            let lse = logsumexp(interp, &a, axes, keepdims)?;
            let count = full(interp, &[], n as f64, lse.aval.dtype)?;
            let log_count = unary_prim(interp, UnaryPrim::Log, &count)?;
            binary_prim(interp, BinaryPrim::Sub, &lse, &log_count).map(Value::Array)
        }
        // `where(x < log(2), log(-expm1(-x)), log1p(-exp(-x)))`, with `log(2.0)` a float32 (or
        // float64) constant as JAX binds it. Its derivative is its `custom_jvp` rule
        // (`g / expm1(x)`), not that of these equations (`custom_rules::library`).
        F::NnLog1mexp => {
            let x = arr!(interp, cx, 0, "x");
            let x = inexact(interp, &x)?;
            let eqn_counts = crate::jax::custom_rules::eqn_counts(interp);
            let two = Array::scalar(2.0, x.aval.dtype, false);
            let c = unary_prim(interp, UnaryPrim::Log, &two)?;
            let small = compare_arrays(interp, CmpPrim::Lt, &x, &c)?;
            let n = unary_prim(interp, UnaryPrim::Neg, &x)?;
            let e = unary_prim(interp, UnaryPrim::Expm1, &n)?;
            let e = unary_prim(interp, UnaryPrim::Neg, &e)?;
            let near = unary_prim(interp, UnaryPrim::Log, &e)?;
            let n = unary_prim(interp, UnaryPrim::Neg, &x)?;
            let e = unary_prim(interp, UnaryPrim::Exp, &n)?;
            let e = unary_prim(interp, UnaryPrim::Neg, &e)?;
            let far = unary_prim(interp, UnaryPrim::Log1p, &e)?;
            let out = where3(interp, &small, &near, &far)?;
            let rule = crate::jax::custom_rules::LibraryRule::Log1mexp;
            crate::jax::custom_rules::library(interp, "log1mexp", rule, vec![Value::Array(x)], Value::Array(out), &eqn_counts)
        }
        F::NnLogmeanexp => {
            let a = arr!(interp, cx, 0, "x");
            let axes = reduction_axes(interp, p.get(1, "axis"), a.aval.ndim())?;
            let a = inexact(interp, &a)?;
            let r = reduce(interp, &a, ReduceOp::Max, axes, keepdims, None)?;
            apply1(interp, Prim::opaque("logmeanexp", r.aval.clone()), &[a]).map(Value::Array)
        }
        F::NnOneHot => {
            let a = arr!(interp, cx, 0, "x");
            let Some(n) = p.get(1, "num_classes").map(|v| interp.index_of(v)).transpose()?.flatten() else {
                return Ok(Value::opaque("one_hot"));
            };
            let d = creation_dtype(interp, p.get(usize::MAX, "dtype"), dtypes::default_float(c))?;
            let mut shape = a.aval.shape.to_vec();
            shape.push(n as usize);
            if a.aval.dtype.is_integer() && !d.is_complex() {
                // jax.nn.one_hot: `x[..., None] == arange(num_classes)`, as `dtype`.
                let column = reshape_raw(interp, &a, &shape[..shape.len() - 1].iter().copied().chain([1]).collect::<Vec<_>>())?;
                let classes = apply1(interp, Prim::Iota { dtype: a.aval.dtype, shape: vec![n as usize], dimension: 0 }, &[])?;
                let hits = compare_arrays(interp, CmpPrim::Eq, &column, &classes)?;
                return convert(interp, &hits, d, false).map(Value::Array);
            }
            apply1(interp, Prim::opaque("one_hot", Aval::new(&shape, d)), &[a]).map(Value::Array)
        }
        // `dispatch::family` sends only the functions above here.
        _ => Ok(cx.unrouted()),
    }
}

/// `jax.nn.logsumexp` as JAX computes it: the finite maximum, held constant for AD, is taken
/// out before the exponentials and added back after the log.
pub(super) fn logsumexp(interp: &mut Interp, a: &Rc<Array>, axes: Option<Vec<usize>>, keepdims: bool) -> PyResult<Rc<Array>> {
    let amax = reduce(interp, a, ReduceOp::Max, axes.clone(), true, None)?;
    let finite = unary_prim(interp, UnaryPrim::IsFinite, &amax)?;
    let zeros = full(interp, &amax.aval.shape.clone(), 0.0, amax.aval.dtype)?;
    let amax = apply1(interp, Prim::Select, &[finite, zeros, amax.clone()])?;
    let amax = apply1(interp, Prim::StopGradient, &[amax.clone()])?;
    let shifted = binary_prim(interp, BinaryPrim::Sub, a, &amax)?;
    let e = unary_prim(interp, UnaryPrim::Exp, &shifted)?;
    let total = reduce(interp, &e, ReduceOp::Sum, axes, keepdims, None)?;
    let log = unary_prim(interp, UnaryPrim::Log, &total)?;
    let shape = log.aval.shape.clone();
    let amax = reshape_raw(interp, &amax, &shape)?;
    binary_prim(interp, BinaryPrim::Add, &log, &amax)
}

pub(super) fn a_is_inexact(args: &[Value]) -> bool {
    matches!(args.first(), Some(Value::Array(a)) if a.aval.dtype.is_inexact())
}

/// The `jax.nn` activations, written with the operations `jax/_src/nn/functions.py` uses, in
/// its order, so that values, dtypes and derivatives (kinks included) are JAX's; `softplus`,
/// `log_sigmoid` and `mish` go through `jnp.logaddexp`, whose derivative is its `custom_jvp`
/// rule (`BinaryPrim::Logaddexp`), and `hard_sigmoid`/`hard_silu` through `relu6`, whose
/// equations carry relu6's rule.
pub(super) fn activation(interp: &mut Interp, f: JaxFn, x: &Rc<Array>, extra: Option<&Value>) -> PyResult<Value> {
    use JaxFn as F;
    let c = |v: f64| weak(v);
    let b = |interp: &mut Interp, op: BinaryPrim, l: &Rc<Array>, r: &Rc<Array>| binary_prim(interp, op, l, r);
    let softplus = |interp: &mut Interp, x: &Rc<Array>| -> PyResult<Rc<Array>> {
        // `jnp.logaddexp(x, 0)`.
        let x = inexact(interp, x)?;
        let zeros = full(interp, &x.aval.shape, 0.0, x.aval.dtype)?;
        let zeros = convert(interp, &zeros, x.aval.dtype, x.aval.weak)?;
        apply1(interp, Prim::Binary(BinaryPrim::Logaddexp), &[x.clone(), zeros])
    };
    let extra_arr = |interp: &mut Interp| -> PyResult<Option<Rc<Array>>> {
        match extra {
            Some(v) => num(interp, v),
            None => Ok(None),
        }
    };
    macro_rules! known {
        ($e:expr) => {
            match $e {
                Some(a) => a,
                None => return Ok(Value::opaque("an activation's parameter")),
            }
        };
    }
    let out = match f {
        F::NnSilu | F::NnSwish => {
            let s = unary_prim(interp, UnaryPrim::Logistic, x)?;
            b(interp, BinaryPrim::Mul, x, &s)?
        }
        F::NnGelu => {
            let approximate = match extra {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            let x = inexact(interp, x)?;
            let dt = x.aval.dtype;
            if approximate {
                // x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))), the constant
                // a NumPy scalar of x's dtype.
                let k = Array::scalar(eval::round_to((2.0 / std::f64::consts::PI).sqrt(), dt), dt, false);
                let cube = apply1(interp, Prim::IntegerPow(3), std::slice::from_ref(&x))?;
                let t = b(interp, BinaryPrim::Mul, &c(0.044715), &cube)?;
                let t = b(interp, BinaryPrim::Add, &x, &t)?;
                let t = b(interp, BinaryPrim::Mul, &k, &t)?;
                let t = unary_prim(interp, UnaryPrim::Tanh, &t)?;
                let t = b(interp, BinaryPrim::Add, &c(1.0), &t)?;
                let cdf = b(interp, BinaryPrim::Mul, &c(0.5), &t)?;
                b(interp, BinaryPrim::Mul, &x, &cdf)?
            } else {
                // 0.5 * x * erfc(-x * sqrt(1/2)).
                let k = Array::scalar(eval::round_to(0.5f64.sqrt(), dt), dt, false);
                let neg = unary_prim(interp, UnaryPrim::Neg, &x)?;
                let t = b(interp, BinaryPrim::Mul, &neg, &k)?;
                let e = unary_prim(interp, UnaryPrim::Erfc, &t)?;
                let h = b(interp, BinaryPrim::Mul, &c(0.5), &x)?;
                let r = b(interp, BinaryPrim::Mul, &h, &e)?;
                convert(interp, &r, dt, false)?
            }
        }
        F::NnSoftplus => softplus(interp, x)?,
        F::NnLogSigmoid => {
            let n = unary_prim(interp, UnaryPrim::Neg, x)?;
            let s = softplus(interp, &n)?;
            unary_prim(interp, UnaryPrim::Neg, &s)?
        }
        F::NnMish => {
            let s = softplus(interp, x)?;
            let t = unary_prim(interp, UnaryPrim::Tanh, &s)?;
            b(interp, BinaryPrim::Mul, x, &t)?
        }
        F::NnSoftSign => {
            let m = unary_prim(interp, UnaryPrim::Abs, x)?;
            let d = b(interp, BinaryPrim::Add, &m, &Array::scalar(1.0, DType::I64, true))?;
            true_divide(interp, x, &d)?
        }
        F::NnElu | F::NnSelu => {
            // where(x > 0, x, alpha * expm1(where(x > 0, 0., x))); selu scales it.
            let alpha = if f == F::NnSelu { c(1.6732632423543772848170429916717) } else { known!(extra_arr(interp)?) };
            let pos = compare_arrays(interp, CmpPrim::Gt, x, &Array::scalar(0.0, DType::I64, true))?;
            let safe = where3(interp, &pos, &c(0.0), x)?;
            let e = unary_prim(interp, UnaryPrim::Expm1, &safe)?;
            let neg = b(interp, BinaryPrim::Mul, &alpha, &e)?;
            let r = where3(interp, &pos, x, &neg)?;
            if f == F::NnSelu {
                b(interp, BinaryPrim::Mul, &c(1.0507009873554804934193349852946), &r)?
            } else {
                r
            }
        }
        F::NnLeakyRelu => {
            let slope = known!(extra_arr(interp)?);
            let pos = compare_arrays(interp, CmpPrim::Ge, x, &Array::scalar(0.0, DType::I64, true))?;
            let neg = b(interp, BinaryPrim::Mul, &slope, x)?;
            where3(interp, &pos, x, &neg)?
        }
        F::NnHardTanh => {
            let one = Array::scalar(1.0, DType::I64, true);
            let minus_one = Array::scalar(-1.0, DType::I64, true);
            let low = compare_arrays(interp, CmpPrim::Lt, x, &minus_one)?;
            let inner = where3(interp, &low, &minus_one, x)?;
            let high = compare_arrays(interp, CmpPrim::Gt, x, &one)?;
            where3(interp, &high, &one, &inner)?
        }
        F::NnCelu => {
            // maximum(x, 0.0) + alpha * expm1(minimum(x, 0.0) / alpha).
            let alpha = known!(extra_arr(interp)?);
            let hi = b(interp, BinaryPrim::Max, x, &c(0.0))?;
            let lo = b(interp, BinaryPrim::Min, x, &c(0.0))?;
            let q = true_divide(interp, &lo, &alpha)?;
            let e = unary_prim(interp, UnaryPrim::Expm1, &q)?;
            let t = b(interp, BinaryPrim::Mul, &alpha, &e)?;
            b(interp, BinaryPrim::Add, &hi, &t)?
        }
        F::NnSquareplus => {
            // (x + sqrt(square(x) + b)) / 2.
            let bb = known!(extra_arr(interp)?);
            let (ops, _, _) = promote_broadcast(interp, &[x.clone(), bb])?;
            let sq = unary_prim(interp, UnaryPrim::Square, &ops[0])?;
            let s = b(interp, BinaryPrim::Add, &sq, &ops[1])?;
            let r = unary_prim(interp, UnaryPrim::Sqrt, &s)?;
            let y = b(interp, BinaryPrim::Add, &ops[0], &r)?;
            true_divide(interp, &y, &Array::scalar(2.0, DType::I64, true))?
        }
        F::NnSparsePlus => {
            // where(x <= -1, 0, where(x >= 1, x, (x + 1)**2 / 4)).
            let x1 = b(interp, BinaryPrim::Add, x, &c(1.0))?;
            let sq = apply1(interp, Prim::IntegerPow(2), std::slice::from_ref(&x1))?;
            let quarter = true_divide(interp, &sq, &Array::scalar(4.0, DType::I64, true))?;
            let high = compare_arrays(interp, CmpPrim::Ge, x, &c(1.0))?;
            let inner = where3(interp, &high, x, &quarter)?;
            let low = compare_arrays(interp, CmpPrim::Le, x, &c(-1.0))?;
            where3(interp, &low, &c(0.0), &inner)?
        }
        F::NnSparseSigmoid => {
            // 0.5 * clip(x + 1.0, 0.0, 2.0).
            let x1 = b(interp, BinaryPrim::Add, x, &c(1.0))?;
            let lo = b(interp, BinaryPrim::Max, &c(0.0), &x1)?;
            let hi = b(interp, BinaryPrim::Min, &c(2.0), &lo)?;
            b(interp, BinaryPrim::Mul, &c(0.5), &hi)?
        }
        F::NnHardSigmoid | F::NnHardSilu | F::NnHardSwish => {
            // relu6(x + 3.) / 6., times x for hard_silu; relu6's equations carry its rule.
            let x3 = b(interp, BinaryPrim::Add, x, &c(3.0))?;
            let outer = interp.jax.current_api;
            interp.jax.current_api = Some(F::NnRelu6);
            let r6 = (|| {
                let zero = Array::scalar(0.0, DType::I64, true);
                let r = b(interp, BinaryPrim::Max, &x3, &zero)?;
                b(interp, BinaryPrim::Min, &r, &c(6.0))
            })();
            interp.jax.current_api = outer;
            let hs = true_divide(interp, &r6?, &c(6.0))?;
            if f == F::NnHardSigmoid {
                hs
            } else {
                b(interp, BinaryPrim::Mul, x, &hs)?
            }
        }
        F::NnGlu => {
            let axis = match extra {
                Some(v) => interp.index_of(v)?.unwrap_or(-1),
                None => -1,
            };
            let ax = normalize_axis(interp, axis, x.aval.ndim())?;
            if x.aval.shape[ax] % 2 != 0 {
                return Err(interp.raise("AssertionError", Code::ShapeMismatch, "axis size must be divisible by 2"));
            }
            let half = x.aval.shape[ax] / 2;
            let mut parts = Vec::new();
            for k in 0..2 {
                let mut shape = x.aval.shape.to_vec();
                shape[ax] = half;
                let mut start = vec![0; shape.len()];
                start[ax] = k * half;
                let limit: Vec<usize> = start.iter().zip(&shape).map(|(s, n)| s + n).collect();
                let slice = Prim::Slice { start, limit, strides: vec![1; shape.len()] };
                parts.push(apply1(interp, slice, std::slice::from_ref(x))?);
            }
            let s = unary_prim(interp, UnaryPrim::Logistic, &parts[1])?;
            b(interp, BinaryPrim::Mul, &parts[0], &s)?
        }
        _ => return Ok(Value::opaque("jax.nn activation")),
    };
    Ok(Value::Array(out))
}
