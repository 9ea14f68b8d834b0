//! The `jax.random` API: keys from seeds, `split`/`fold_in`, and each sampler's argument
//! checks, output avals and the `random_<dist>` draw it binds. The draws' kernels (threefry
//! and each distribution's sampling) live in `jax/random.rs`.

use super::dispatch::{kw, shape_of};
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::apply1;
use crate::jax::array::Array;
use crate::jax::aval::{shape_tuple, Aval};
use crate::jax::dtypes::{self, DType};
use crate::jax::ir::Prim;
use crate::jax::numpy::{self as jnp, operand, Operand};
use crate::jax::surface::JaxFn;
use std::rc::Rc;

pub(super) fn random(interp: &mut Interp, f: JaxFn, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    use JaxFn as F;
    let key = args.first().cloned().or_else(|| kw(kwargs, "key").cloned()).unwrap_or(Value::None);
    let key = match &key {
        Value::Array(k) => k.clone(),
        _ => return Ok(Value::opaque("a random value")),
    };
    // A raw `u32[..., 2]` array is a legacy key (`PRNGKey`); a typed key has dtype `key<fry>`.
    let legacy = !key.aval.dtype.is_key() && key.aval.shape.last() == Some(&2) && key.aval.dtype == DType::U32;
    if !legacy && !key.aval.dtype.is_key() {
        // Not a key JAX accepts; its error is not modelled.
        return Ok(Value::opaque("a random value"));
    }
    let key_batch: Vec<usize> = if legacy { key.aval.shape[..key.aval.ndim() - 1].to_vec() } else { key.aval.shape.to_vec() };
    // `key_data` and `clone` take key arrays of any shape and do not consume the key.
    let any_shape = matches!(f, F::RandomKeyData | F::RandomClone);
    if !any_shape {
        crate::jax::effects::on_key_use(interp, &key, f.name());
    }
    if !key_batch.is_empty() && !any_shape {
        return Err(interp.value_error(format!(
            "{} accepts a single key, but was given a key array of shape {} != (). Use jax.vmap for batching.",
            f.name(),
            shape_tuple(&key_batch)
        )));
    }
    let c = interp.jax.config;
    // The argument named `name`, or else the positional one at `i`.
    let param = |name: &str, i: usize| -> Option<Value> { kw(kwargs, name).or_else(|| args.get(i)).filter(|v| !v.is_none()).cloned() };
    let shape_kw = |interp: &mut Interp, i: usize| -> PyResult<Option<Vec<usize>>> {
        match param("shape", i) {
            Some(v) => shape_of(interp, &v),
            None => Ok(Some(Vec::new())),
        }
    };
    let dtype = |interp: &mut Interp, i: usize, default: DType| -> PyResult<DType> {
        Ok(jnp::dtype_arg(interp, param("dtype", i).as_ref())?.map(|d| dtypes::canonicalize(d, c)).unwrap_or(default))
    };
    let flag = |v: Option<Value>, default: bool| -> Rc<Array> {
        let b = match v {
            None => default,
            Some(Value::Bool(b)) => b,
            Some(Value::Int(i)) => i != 0,
            Some(_) => return Array::unknown(Aval::scalar(DType::Bool), "a flag that is not a Python bool"),
        };
        Array::scalar(f64::from(u8::from(b)), DType::Bool, false)
    };
    let int = |x: i64| Array::scalar(x as f64, DType::I32, false);
    let key_in = |params: Vec<Rc<Array>>| -> Vec<Rc<Array>> { std::iter::once(key.clone()).chain(params).collect() };
    match f {
        F::RandomSplit => {
            let mut s = match param("num", 1) {
                None => vec![2],
                Some(Value::Int(n)) => vec![n.max(0) as usize],
                Some(v) => match shape_of(interp, &v)? {
                    Some(s) => s,
                    None => return Ok(Value::opaque("split")),
                },
            };
            let shape = s.clone();
            s.extend(key.aval.shape.iter().copied());
            apply1(interp, Prim::RandomSplit { shape }, std::slice::from_ref(&key)).map(Value::Array)
        }
        F::RandomFoldIn => {
            // `jnp.asarray(data, dtype='uint32')`: a Python int outside uint32 is an
            // OverflowError in JAX, left unknown here; an array is converted.
            let data = match param("data", 1) {
                Some(Value::Int(d)) if (0..=i64::from(u32::MAX)).contains(&d) => Array::scalar(d as f64, DType::U32, false),
                Some(Value::Int(_)) | None => Array::unknown(Aval::scalar(DType::U32), "fold_in data out of range"),
                Some(v) => match operand(interp, &v)? {
                    Operand::Array(a) if a.aval.ndim() == 0 && (a.aval.dtype.is_integer() || a.aval.dtype.is_bool()) => {
                        jnp::convert(interp, &a, DType::U32, false)?
                    }
                    Operand::Array(a) => a,
                    Operand::Unknown => Array::unknown(Aval::scalar(DType::U32), "unknown fold_in data"),
                },
            };
            if data.aval.ndim() > 0 {
                // JAX's message, its missing space included.
                return Err(interp.type_error(format!(
                    "fold_in accepts a scalar, but was given an array ofshape {} != (). Use jax.vmap for batching.",
                    shape_tuple(&data.aval.shape)
                )));
            }
            apply1(interp, Prim::RandomFoldIn, &[key.clone(), data]).map(Value::Array)
        }
        // A copy of the key that key-reuse checking (JAX's `jax_debug_key_reuse`) counts apart.
        F::RandomClone => apply1(interp, Prim::RandomClone, std::slice::from_ref(&key)).map(Value::Array),
        F::RandomKeyData => {
            // `_check_prng_key` wraps legacy `uint32[..., 2]` data into typed keys first, so
            // the jaxpr is `random_wrap` then `random_unwrap`, as JAX's.
            let key = if legacy { apply1(interp, Prim::RandomWrap, std::slice::from_ref(&key))? } else { key };
            apply1(interp, Prim::RandomUnwrap, std::slice::from_ref(&key)).map(Value::Array)
        }
        F::RandomNormal => {
            let Some(s) = shape_kw(interp, 1)? else {
                return Ok(Value::opaque("normal"));
            };
            let d = dtype(interp, 2, dtypes::default_float(c))?;
            draw(interp, "normal", &key_in(vec![]), Aval::new(&s, d))
        }
        F::RandomTruncatedNormal => {
            let (Some(lower), Some(upper)) = (param("lower", 1), param("upper", 2)) else {
                return Ok(Value::opaque("truncated_normal"));
            };
            let (lower, upper) = (random_param(interp, &lower)?, random_param(interp, &upper)?);
            let s = match param("shape", 3) {
                Some(v) => shape_of(interp, &v)?,
                None => jnp::broadcast_shapes(&[&lower.aval.shape, &upper.aval.shape]).ok().map(|s| s.to_vec()),
            };
            let Some(s) = s else {
                return Ok(Value::opaque("truncated_normal"));
            };
            let d = dtype(interp, 4, dtypes::default_float(c))?;
            draw(interp, "truncated_normal", &key_in(vec![lower, upper]), Aval::new(&s, d))
        }
        F::RandomUniform => {
            let Some(s) = shape_kw(interp, 1)? else {
                return Ok(Value::opaque("uniform"));
            };
            let d = dtype(interp, 2, dtypes::default_float(c))?;
            let lo = random_param(interp, &param("minval", 3).unwrap_or(Value::Float(0.0)))?;
            let hi = random_param(interp, &param("maxval", 4).unwrap_or(Value::Float(1.0)))?;
            draw(interp, "uniform", &key_in(vec![lo, hi]), Aval::new(&s, d))
        }
        // Transforms of a uniform draw, as `jax/_src/random/core.py` writes them; the lax
        // operations are jnp's on arrays of one float dtype.
        F::RandomExponential | F::RandomGumbel | F::RandomLaplace | F::RandomLogistic | F::RandomCauchy => {
            let Some(s) = shape_kw(interp, 1)? else {
                return Ok(Value::opaque(f.name()));
            };
            let d = dtype(interp, 2, dtypes::default_float(c))?;
            if !d.is_floating() {
                return Err(interp.value_error(format!("dtype argument to `{}` must be a float dtype, got {}", f.name(), d.name())));
            }
            // gumbel's `high` and `highest` modes draw other bits: not modelled.
            let low = match param("mode", 3) {
                None => true,
                Some(Value::Str(m)) => &*m == "low",
                Some(_) => false,
            };
            if f == F::RandomGumbel && !low {
                return Ok(Value::opaque("gumbel in a mode other than 'low'"));
            }
            let (tiny, eps) = (d.smallest_normal(), d.epsilon());
            let (lo, hi) = match f {
                F::RandomExponential => (0.0, 1.0),
                F::RandomGumbel | F::RandomLogistic => (tiny, 1.0),
                F::RandomLaplace => (-1.0 + eps / 2.0, 1.0), // finfo.epsneg
                _ => (eps, 1.0),
            };
            let bounds = vec![Array::scalar(lo, d, true), Array::scalar(hi, d, true)];
            let u = draw(interp, "uniform", &key_in(bounds), Aval::new(&s, d))?;
            let op = |interp: &mut Interp, g: JaxFn, args: Vec<Value>| jnp::call(interp, g, args, Vec::new());
            let neg_log1p_neg = |interp: &mut Interp, x: Value| -> PyResult<Value> {
                let t = op(interp, F::Negative, vec![x])?;
                op(interp, F::Log1p, vec![t])
            };
            match f {
                // -log1p(-u)
                F::RandomExponential => {
                    let t = neg_log1p_neg(interp, u)?;
                    op(interp, F::Negative, vec![t])
                }
                // -log(-log(u))
                F::RandomGumbel => {
                    let t = op(interp, F::Log, vec![u])?;
                    let t = op(interp, F::Negative, vec![t])?;
                    let t = op(interp, F::Log, vec![t])?;
                    op(interp, F::Negative, vec![t])
                }
                // sign(u) * log1p(-abs(u))
                F::RandomLaplace => {
                    let sign = op(interp, F::Sign, vec![u.clone()])?;
                    let t = op(interp, F::Abs, vec![u])?;
                    let t = neg_log1p_neg(interp, t)?;
                    op(interp, F::Multiply, vec![sign, t])
                }
                // log(u) - log1p(-u)
                F::RandomLogistic => {
                    let l = op(interp, F::Log, vec![u.clone()])?;
                    let t = neg_log1p_neg(interp, u)?;
                    op(interp, F::Subtract, vec![l, t])
                }
                // tan(pi * (u - 0.5))
                _ => {
                    let t = op(interp, F::Subtract, vec![u, Value::Float(0.5)])?;
                    let t = op(interp, F::Multiply, vec![t, Value::Float(std::f64::consts::PI)])?;
                    op(interp, F::Tan, vec![t])
                }
            }
        }
        // `(2 * bernoulli(key, 0.5, shape).astype(dtype) - 1).astype(dtype)`
        F::RandomRademacher => {
            let Some(s) = shape_kw(interp, 1)? else {
                return Ok(Value::opaque("rademacher"));
            };
            let d = dtype(interp, 2, dtypes::default_int(c))?;
            let half = Array::scalar(0.5, dtypes::default_float(c), true);
            let b = apply1(interp, Prim::Random { dist: "bernoulli", shape: s.to_vec(), dtype: DType::Bool }, &key_in(vec![half]))?;
            let b = jnp::convert(interp, &b, d, false)?;
            let t = jnp::call(interp, F::Multiply, vec![Value::Int(2), Value::Array(b)], Vec::new())?;
            match jnp::call(interp, F::Subtract, vec![t, Value::Int(1)], Vec::new())? {
                Value::Array(o) => jnp::convert(interp, &o, d, false).map(Value::Array),
                other => Ok(other),
            }
        }
        F::RandomBernoulli => {
            let p = random_param(interp, &param("p", 1).unwrap_or(Value::Float(0.5)))?;
            let s = match param("shape", 2) {
                Some(v) => shape_of(interp, &v)?,
                None => Some(p.aval.shape.to_vec()),
            };
            let Some(s) = s else {
                return Ok(Value::opaque("bernoulli"));
            };
            draw(interp, "bernoulli", &key_in(vec![p]), Aval::new(&s, DType::Bool))
        }
        F::RandomCategorical => {
            let logits = match param("logits", 1) {
                Some(Value::Array(l)) => l,
                _ => return Ok(Value::opaque("categorical")),
            };
            let axis = param("axis", 2).as_ref().and_then(crate::interp::ops::as_int).unwrap_or(-1);
            let nd = logits.aval.ndim() as i64;
            let ax = if axis < 0 { axis + nd } else { axis };
            let mut s: Vec<usize> = logits.aval.shape.iter().enumerate().filter(|(i, _)| *i as i64 != ax).map(|(_, &d)| d).collect();
            if let Some(v) = param("shape", 3) {
                if let Some(sh) = shape_of(interp, &v)? {
                    s = sh;
                }
            }
            let replace = param("replace", 4);
            // Without replacement the samples are `lax.top_k`'s indices: int32 under x64 too.
            let dtype = match replace {
                Some(Value::Bool(false)) | Some(Value::Int(0)) => DType::I32,
                _ => dtypes::default_int(c),
            };
            let params = vec![logits, int(axis), flag(replace, true)];
            draw(interp, "categorical", &key_in(params), Aval::new(&s, dtype))
        }
        F::RandomRandint => {
            let Some(s) = shape_kw(interp, 1)? else {
                return Ok(Value::opaque("randint"));
            };
            let d = dtype(interp, 4, dtypes::default_int(c))?;
            let (Some(lo), Some(hi)) = (param("minval", 2), param("maxval", 3)) else {
                return Ok(Value::opaque("randint"));
            };
            let (lo, hi) = (random_param(interp, &lo)?, random_param(interp, &hi)?);
            draw(interp, "randint", &key_in(vec![lo, hi]), Aval::new(&s, d))
        }
        F::RandomPermutation => match param("x", 1) {
            Some(Value::Int(n)) => draw(interp, "permutation", &key_in(vec![]), Aval::new(&[n.max(0) as usize], dtypes::default_int(c))),
            Some(Value::Array(x)) if x.aval.ndim() > 0 => {
                let nd = x.aval.ndim() as i64;
                let axis = param("axis", 2).as_ref().and_then(crate::interp::ops::as_int).unwrap_or(0);
                let axis = if axis < 0 { axis + nd } else { axis };
                let params = vec![x.clone(), int(axis), flag(param("independent", 3), false)];
                draw(interp, "permutation", &key_in(params), Aval::new(&x.aval.shape, x.aval.dtype))
            }
            _ => Ok(Value::opaque("permutation")),
        },
        F::RandomChoice => {
            let Some(s) = shape_kw(interp, 2)? else {
                return Ok(Value::opaque("choice"));
            };
            let index_dtype = dtypes::default_int(c);
            let axis = param("axis", 5).as_ref().and_then(crate::interp::ops::as_int).unwrap_or(0);
            let (a, aval) = match param("a", 1) {
                Some(Value::Int(n)) => (Array::scalar(n as f64, index_dtype, true), Aval::new(&s, index_dtype)),
                // JAX reads a scalar `a` as `concrete_or_error(int, a)`: a tracer is its error.
                Some(Value::Array(a)) if a.aval.ndim() == 0 && a.is_jax_tracer() => {
                    let (what, origin) = (crate::jax::errors::traced_array(&a), crate::jax::errors::origin(interp, &a));
                    let message = format!(
                        "Abstract tracer value encountered where concrete value is expected: {what}\nThe error occurred in jax.random.choice()\n{origin}"
                    );
                    return Err(interp.raise("ConcretizationTypeError", crate::diagnostics::Code::Concretization, message));
                }
                Some(Value::Array(a)) if a.aval.ndim() == 0 => (a.clone(), Aval::new(&s, index_dtype)),
                Some(Value::Array(a)) => {
                    let nd = a.aval.ndim() as i64;
                    let ax = if axis < 0 { axis + nd } else { axis };
                    if !(0..nd).contains(&ax) {
                        return Ok(Value::opaque("choice"));
                    }
                    let ax = ax as usize;
                    let mut shape = a.aval.shape[..ax].to_vec();
                    shape.extend(s.iter().copied());
                    shape.extend(a.aval.shape[ax + 1..].iter().copied());
                    let aval = Aval::new(&shape, a.aval.dtype);
                    let axis_in = Array::scalar(ax as f64, index_dtype, false);
                    let mut params = vec![a.clone(), flag(param("replace", 3), true), axis_in];
                    if let Some(p) = param("p", 4) {
                        params.push(random_param(interp, &p)?);
                    }
                    return draw(interp, "choice", &key_in(params), aval);
                }
                _ => return Ok(Value::opaque("choice")),
            };
            let mut params = vec![a, flag(param("replace", 3), true), Array::scalar(0.0, index_dtype, false)];
            if let Some(p) = param("p", 4) {
                params.push(random_param(interp, &p)?);
            }
            draw(interp, "choice", &key_in(params), aval)
        }
        _ => Ok(Value::opaque("random")),
    }
}

/// `jax.random.wrap_key_data(key_data)`: `uint32` data of shape `(..., 2)` as typed keys of
/// shape `(...)`, with JAX's `TypeError` for data of another dtype or shape.
pub(super) fn wrap_key_data(interp: &mut Interp, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    let data = args.first().or_else(|| kw(kwargs, "key_data")).cloned().unwrap_or(Value::None);
    let data = match &data {
        Value::Array(a) if !a.aval.dtype.is_key() => a.clone(),
        _ => return Ok(Value::opaque("wrap_key_data")),
    };
    let invalid = "JAX encountered invalid PRNG key data:";
    if data.aval.dtype != DType::U32 {
        return Err(interp.type_error(format!("{invalid} expected key_data.dtype = uint32; got dtype={}", data.aval.dtype.name())));
    }
    if data.aval.ndim() == 0 {
        return Err(interp.type_error(format!("{invalid} expected key_data.ndim >= 1; got ndim=0")));
    }
    let Some((&2, _)) = data.aval.shape.split_last() else {
        // JAX's message names the implementation object's repr; it is not reproduced.
        return Ok(Value::opaque("wrap_key_data of data not ending in 2"));
    };
    apply1(interp, Prim::RandomWrap, std::slice::from_ref(&data)).map(Value::Array)
}

/// A Python int seed as `random_seed` takes it: through an int64 NumPy scalar, which is
/// int32 with x64 off (the seed mod 2**32, never an OverflowError). A seed an f64 cannot
/// hold exactly gives an unknown key.
fn python_seed(interp: &Interp, n: i64) -> Rc<Array> {
    if !interp.jax.config.enable_x64 {
        return Array::scalar(f64::from(n as i32), DType::I32, false);
    }
    if n.unsigned_abs() <= 1 << 53 {
        Array::exact_scalar(n as f64, DType::I64)
    } else {
        Array::unknown(Aval::scalar(DType::I64), "a seed beyond 2**53")
    }
}

/// A numeric parameter of a sampler (`minval`, `p`, ...) as an input of its draw.
fn random_param(interp: &mut Interp, v: &Value) -> PyResult<Rc<Array>> {
    Ok(match operand(interp, v)? {
        Operand::Array(a) => a,
        Operand::Unknown => Array::unknown(Aval::scalar(dtypes::default_float(interp.jax.config)).weak(true), "an unknown parameter"),
    })
}

/// Binds the draw `random_<dist>` of `inputs` (the key, then the sampler's parameters, as
/// `random::kernel` reads them). `bind` leaves a `Prim::Random` made outside any trace
/// unknown, so such a draw is made pending here instead, and computed when Python needs it.
fn draw(interp: &mut Interp, dist: &'static str, inputs: &[Rc<Array>], aval: Aval) -> PyResult<Value> {
    apply1(interp, Prim::Random { dist, shape: aval.shape.to_vec(), dtype: aval.dtype }, inputs).map(Value::Array)
}

/// `jax.random.key(seed)` (one typed key) and `jax.random.PRNGKey(seed)` (its raw `u32[2]` data).
pub(super) fn key_from_seed(interp: &mut Interp, f: JaxFn, args: &[Value]) -> PyResult<Value> {
    use JaxFn as F;
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
    let seed = arg(0);
    if let Value::Array(a) = &seed {
        if a.aval.dtype.is_inexact() {
            return Err(interp.type_error(format!("PRNG key seed must be an integer; got {}", a.aval.long())));
        }
    }
    if let Value::Array(a) = &seed {
        if a.aval.dtype.is_key() {
            let name = if f == F::RandomPRNGKey { "PRNGKey" } else { "key" };
            return Err(interp.type_error(format!("{name} accepts a scalar seed, but was given a PRNG key.")));
        }
    }
    // `key(seed)` is one typed key, `key<fry>[]`; `PRNGKey(seed)` its raw data, `u32[2]`.
    let prim = Prim::RandomSeed { raw: f == F::RandomPRNGKey };
    let seed = match &seed {
        Value::Int(n) => python_seed(interp, *n),
        Value::Bool(b) => python_seed(interp, i64::from(*b)),
        other => match operand(interp, other)? {
            Operand::Array(s) => s,
            Operand::Unknown => return Ok(Value::opaque("a PRNG key")),
        },
    };
    Ok(Value::Array(apply1(interp, prim, &[seed])?))
}
