//! `jax.nn`: the activations written with the operations `jax/_src/nn/functions.py` uses,
//! `softmax`/`log_softmax`, `standardize`, `logsumexp` and friends, `one_hot`.

use super::*;

/// `jax.nn.logsumexp` as JAX computes it: the finite maximum, held constant for AD, is taken
/// out before the exponentials and added back after the log.
pub(super) fn logsumexp(interp: &mut Interp, a: &Rc<Array>, axes: Option<Vec<usize>>, keepdims: bool) -> PyResult<Rc<Array>> {
    let amax = reduce(interp, a, ReduceOp::Max, axes.clone(), true, None)?;
    let finite = unary_prim(interp, UnaryPrim::IsFinite, &amax)?;
    let zeros = full(interp, &amax.aval.shape.clone(), 0.0, amax.aval.dtype)?;
    let amax = bind1(interp, Prim::Select, &[finite, zeros, amax.clone()], amax.aval.clone())?;
    let amax = bind1(interp, Prim::StopGradient, &[amax.clone()], amax.aval.clone())?;
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
        bind1(interp, Prim::Binary(BinaryPrim::Logaddexp), &[x.clone(), zeros], x.aval.clone())
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
                let cube = bind1(interp, Prim::IntegerPow(3), std::slice::from_ref(&x), x.aval.clone())?;
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
            let sq = bind1(interp, Prim::IntegerPow(2), std::slice::from_ref(&x1), x1.aval.clone())?;
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
                parts.push(bind1(interp, slice, std::slice::from_ref(x), x.aval.with_shape(&shape))?);
            }
            let s = unary_prim(interp, UnaryPrim::Logistic, &parts[1])?;
            b(interp, BinaryPrim::Mul, &parts[0], &s)?
        }
        _ => return Ok(Value::opaque("jax.nn activation")),
    };
    Ok(Value::Array(out))
}
