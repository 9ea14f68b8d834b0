//! Creation: `array`/`asarray`, `zeros`/`ones`/`full`/`empty` and their `_like`s, `arange`,
//! `linspace`/`logspace`, `eye`/`identity`/`tri`/`tril`/`triu`, `meshgrid`, `diag`, and the
//! shape and dtype arguments they read (TL207 for a 64-bit dtype while x64 is off).

use super::*;

pub(super) fn shape_arg(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<usize>>> {
    let items = match v {
        Value::Tuple(_) | Value::List(_) => interp.iterate(v)?,
        Value::Opaque(_) => return Ok(None),
        other => vec![other.clone()],
    };
    let mut out = Vec::with_capacity(items.len());
    for it in &items {
        match it {
            Value::Array(a) if a.is_tracer() && a.known().is_none() => {
                let shown = items.iter().map(|x| match x {
                    Value::Array(t) if t.is_tracer() => {
                        format!("JitTracer({})", t.aval.long_weak())
                    }
                    Value::Int(i) => i.to_string(),
                    _ => "?".into(),
                });
                let list: Vec<String> = shown.collect();
                let tuple = if list.len() == 1 { format!("({},)", list[0]) } else { format!("({})", list.join(", ")) };
                let origin = errors::origin(interp, a);
                return Err(interp.raise(
                    "TypeError",
                    Code::DynamicShape,
                    format!("Shapes must be 1D sequences of concrete values of integer type, got {tuple}.\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.\n{origin}"),
                ));
            }
            Value::Opaque(_) => return Ok(None),
            _ => match interp.index_of(it)? {
                Some(i) if i >= 0 => out.push(i as usize),
                Some(i) => {
                    return Err(interp.type_error(format!("Shapes must be 1D sequences of integer scalars, got negative dimension {i}")))
                }
                None => {
                    let shown = interp.repr(v).unwrap_or_default();
                    return Err(interp.type_error(format!("Shapes must be 1D sequences of concrete values of integer type, got {shown}.")));
                }
            },
        }
    }
    Ok(Some(out))
}

pub fn dtype_arg(interp: &mut Interp, v: Option<&Value>) -> PyResult<Option<DType>> {
    let c = cfg(interp);
    Ok(match v {
        None | Some(Value::None) => None,
        // An unknown dtype is not the default one: what is made of it is unknown too.
        Some(Value::Opaque(_)) => return Err(interp.stop_unknown("a dtype that is not known")),
        Some(Value::DType(d)) => Some(*d),
        Some(Value::Str(s)) => DType::from_name(s),
        Some(Value::Builtin(b)) => match b.name().as_str() {
            "float" => Some(dtypes::default_float(c)),
            "int" => Some(dtypes::default_int(c)),
            "bool" => Some(DType::Bool),
            "complex" => Some(dtypes::default_complex(c)),
            _ => None,
        },
        Some(Value::Array(a)) => Some(a.aval.dtype),
        _ => None,
    })
}

/// TL207: a 64-bit dtype requested while x64 is off is silently 32-bit.
pub(super) fn note_x64(interp: &mut Interp, requested: DType) {
    let c = cfg(interp);
    let got = dtypes::canonicalize(requested, c);
    if got != requested {
        let site = interp.site();
        let msg = format!(
            "x64 truncation: {} requested, but jax_enable_x64 is off, so the array is {} (JAX warns: Explicitly requested dtype {} requested in ... is not available, and will be truncated to dtype {})",
            requested.name(),
            got.name(),
            requested.name(),
            got.name()
        );
        interp.warn(Code::X64Truncation, site, msg, Vec::new());
    }
}

pub(super) fn creation_dtype(interp: &mut Interp, v: Option<&Value>, default: DType) -> PyResult<DType> {
    Ok(match dtype_arg(interp, v)? {
        Some(d) => {
            note_x64(interp, d);
            dtypes::canonicalize(d, cfg(interp))
        }
        None => default,
    })
}

/// `jnp.linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0)` as
/// JAX's `_linspace` binds it: the bounds broadcast and converted to the inexact dtype,
/// `start * (1 - step) + stop * step` with `step = iota(div) / div` (`div` being `num - 1`
/// with the endpoint, `num` without), the endpoint `stop` itself, `floor` for an integer
/// dtype. Each operation rounds in the dtype, as XLA's do, so the values are JAX's
/// (`linspace(-4, -1, 4)[1]` is -2.9999998 in float32).
pub(super) fn linspace(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    use JaxFn as F;
    let c = cfg(interp);
    let num = match p.get(2, "num") {
        None => 50,
        Some(v) => match interp.index_of(v)? {
            Some(n) => n,
            None => return Ok(Value::opaque("linspace with a num that is not an int")),
        },
    };
    if num < 0 {
        return Err(interp.value_error(format!("Number of samples, {num}, must be non-negative.")));
    }
    let num = num as usize;
    let flag = |i: usize, name: &str, default: bool| match p.get(i, name) {
        None => Some(default),
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::Int(k)) => Some(*k != 0),
        Some(_) => None,
    };
    let (Some(endpoint), Some(retstep)) = (flag(3, "endpoint", true), flag(4, "retstep", false)) else {
        return Ok(Value::opaque("linspace"));
    };
    let (Some(start), Some(stop)) = (p.get(0, "start"), p.get(1, "stop")) else {
        return Err(interp.type_error("linspace() missing 1 required positional argument: 'stop'"));
    };
    let (Operand::Array(start), Operand::Array(stop)) = (operand(interp, start)?, operand(interp, stop)?) else {
        return Ok(Value::opaque("linspace of unknown bounds"));
    };
    let natural = dtypes::canonicalize(promote(&[start.aval.weak_dtype(), stop.aval.weak_dtype()], c).dtype.to_inexact(), c);
    let dtype = creation_dtype(interp, p.get(5, "dtype"), natural)?;
    let comp = dtypes::canonicalize(dtype.to_inexact(), c);
    let (start, stop) = (convert(interp, &start, comp, false)?, convert(interp, &stop, comp, false)?);
    let bounds =
        broadcast_shapes(&[&start.aval.shape, &stop.aval.shape]).map_err(|m| interp.raise("ValueError", Code::ShapeMismatch, m))?;
    let (start, stop) = (broadcast_to_shape(interp, &start, &bounds)?, broadcast_to_shape(interp, &stop, &bounds)?);
    let axis = match p.get(6, "axis") {
        None => 0,
        Some(v) => interp.index_of(v)?.unwrap_or(0),
    };
    let rank = bounds.len() as i64 + 1;
    if axis < -rank || axis >= rank {
        return Ok(Value::opaque("linspace with an axis out of range"));
    }
    let axis = if axis < 0 { (rank + axis) as usize } else { axis as usize };
    let mut with_one: Vec<usize> = bounds.to_vec();
    with_one.insert(axis, 1);
    let as_array = |v: Value| match v {
        Value::Array(a) => Some(a),
        _ => None,
    };
    let scalar = |x: f64| Value::Array(Array::scalar(x, comp, false));
    let div = if endpoint { num.saturating_sub(1) } else { num };
    let (out, delta) = if num > 1 {
        let span = call(interp, F::Subtract, vec![Value::Array(stop.clone()), Value::Array(start.clone())], Vec::new())?;
        let delta = call(interp, F::Divide, vec![span, scalar(div as f64)], Vec::new())?;
        let mut iota_shape = vec![1; with_one.len()];
        iota_shape[axis] = div;
        let make = || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&iota_shape), |k| k[axis] as f64);
        let iota = Array::ready_if_small(Aval::new(&iota_shape, comp), interp.budgets.max_elements, make);
        let step = call(interp, F::Divide, vec![Value::Array(iota), scalar(div as f64)], Vec::new())?;
        let rest = call(interp, F::Subtract, vec![Value::Int(1), step.clone()], Vec::new())?;
        let s = reshape_raw(interp, &start, &with_one)?;
        let e = reshape_raw(interp, &stop, &with_one)?;
        let left = call(interp, F::Multiply, vec![Value::Array(s), rest], Vec::new())?;
        let right = call(interp, F::Multiply, vec![Value::Array(e.clone()), step], Vec::new())?;
        let Some(mut out) = as_array(call(interp, F::Add, vec![left, right], Vec::new())?) else {
            return Ok(Value::opaque("linspace"));
        };
        if endpoint {
            let mut shape = out.aval.shape.to_vec();
            shape[axis] += 1;
            out = bind1(interp, Prim::Concatenate { dimension: axis }, &[out.clone(), e], out.aval.with_shape(&shape))?;
        }
        (out, delta)
    } else if num == 1 {
        let delta = if endpoint {
            scalar(f64::NAN)
        } else {
            call(interp, F::Subtract, vec![Value::Array(stop.clone()), Value::Array(start.clone())], Vec::new())?
        };
        (reshape_raw(interp, &start, &with_one)?, delta)
    } else {
        let mut shape = bounds.to_vec();
        shape.insert(axis, 0);
        (full(interp, &shape, 0.0, comp)?, scalar(f64::NAN))
    };
    let out = if dtype.is_integer() { unary_prim(interp, UnaryPrim::Floor, &out)? } else { out };
    let result = Value::Array(convert(interp, &out, dtype, false)?);
    Ok(if retstep { Value::tuple(vec![result, delta]) } else { result })
}

pub(super) fn full(interp: &mut Interp, shape: &[usize], value: f64, dtype: DType) -> PyResult<Rc<Array>> {
    let aval = Aval::new(shape, dtype);
    bind1(interp, Prim::Full { value: eval::round_to(value, dtype) }, &[], aval)
}
