//! Creation: `array`/`asarray`, `zeros`/`ones`/`full`/`empty` and their `_like`s, `arange`,
//! `linspace`/`logspace`, `eye`/`identity`/`tri`/`tril`/`triu`, `meshgrid`, `diag`, and the
//! shape and dtype arguments they read (TL207 for a 64-bit dtype while x64 is off).

use super::*;

/// The creation functions of the surface dispatch (`dispatch::family` routes them here).
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    use JaxFn as F;
    let Call { f, args, p, c, .. } = *cx;
    match f {
        F::Array | F::Asarray => {
            let v = cx.first();
            let a = arr_or_unknown!(interp, &v);
            // jnp.asarray keeps a jax array as it is (weak type included), canonicalizes a NumPy
            // array, keeps a Python scalar weakly typed (`jnp.array(0)` is ~i32[]) and makes a
            // nested list strongly typed.
            let weak = match &v {
                Value::Array(orig) => orig.aval.weak && !orig.numpy.get(),
                Value::Int(_) | Value::Float(_) | Value::Complex(..) | Value::UnknownNumber(_) => true,
                _ => false,
            };
            let d = dtypes::canonicalize(a.aval.dtype, c);
            let a = convert(interp, &a, d, weak)?;
            // What comes back is a JAX array, even when no conversion was needed.
            let a = if a.numpy.get() { a.as_jax() } else { a };
            match dtype_arg(interp, p.get(1, "dtype"))? {
                Some(d) => {
                    note_x64(interp, d);
                    convert(interp, &a, dtypes::canonicalize(d, c), false).map(Value::Array)
                }
                None => Ok(Value::Array(a)),
            }
        }
        F::Zeros | F::Ones | F::Empty | F::Full => {
            let Some(shape) = shape_arg(interp, &cx.named(0, "shape"))? else {
                return Ok(Value::opaque("array of unknown shape"));
            };
            let (value, dt_index) = match f {
                F::Full => {
                    let fill = p.get(1, "fill_value").cloned().unwrap_or(Value::Int(0));
                    let fa = arr_or_unknown!(interp, &fill);
                    let default = dtypes::canonicalize(fa.aval.dtype, c);
                    let given = p.get(2, "dtype").filter(|v| !matches!(v, Value::None));
                    let d = creation_dtype(interp, given, default)?;
                    // `lax.full` keeps a weakly typed fill value's weak type when no dtype is
                    // given: `jnp.full((2,), 1.5)` is f32 weak_type=True.
                    let weak = given.is_none() && fa.aval.weak;
                    let converted = convert(interp, &fa, d, weak)?;
                    let fb = broadcast_to_shape(interp, &converted, &shape)?;
                    return Ok(Value::Array(fb));
                }
                F::Ones => (1.0, 1),
                _ => (0.0, 1),
            };
            let d = creation_dtype(interp, p.get(dt_index, "dtype"), dtypes::default_float(c))?;
            full(interp, &shape, value, d).map(Value::Array)
        }
        F::ZerosLike | F::OnesLike | F::EmptyLike | F::FullLike => {
            let a = arr!(interp, cx, 0, "a");
            let (value, di) = match f {
                F::OnesLike => (1.0, 1),
                F::FullLike => (p.get(1, "fill_value").and_then(crate::interp::ops::as_f64).unwrap_or(0.0), 2),
                _ => (0.0, 1),
            };
            let d = creation_dtype(interp, p.get(di, "dtype"), a.aval.dtype)?;
            let shape = a.aval.shape.clone();
            full(interp, &shape, value, d).map(Value::Array)
        }
        F::Arange => {
            let mut nums = Vec::new();
            for (i, name) in ["start", "stop", "step"].iter().enumerate() {
                if let Some(v) = p.get(i, name) {
                    if let Value::Array(t) = v {
                        if t.is_tracer() && t.known().is_none() {
                            let origin = errors::origin(interp, t);
                            let arg = if args.len() == 1 { "stop" } else { name };
                            return Err(interp.raise(
                                "ConcretizationTypeError",
                                Code::DynamicShape,
                                format!("Abstract tracer value encountered where concrete value is expected: {}\nIt arose in the jnp.arange argument '{arg}'\n{origin}", errors::traced_array(t)),
                            ));
                        }
                    }
                    nums.push(v.clone());
                }
            }
            let fl: Vec<f64> = nums
                .iter()
                .filter_map(|v| match v {
                    Value::Array(a) => eval::force(a, 16).and_then(|d| d.iter().next().copied()),
                    other => crate::interp::ops::as_f64(other),
                })
                .collect();
            if fl.len() != nums.len() {
                return Ok(Value::opaque("arange"));
            }
            let (start, stop, step) = match fl.as_slice() {
                [b] => (0.0, *b, 1.0),
                [a, b] => (*a, *b, 1.0),
                [a, b, s] => (*a, *b, *s),
                _ => return Ok(Value::opaque("arange")),
            };
            let any_float = nums.iter().any(|v| matches!(v, Value::Float(_)) || matches!(v, Value::Array(a) if a.aval.dtype.is_inexact()));
            let default = if any_float { dtypes::default_float(c) } else { dtypes::default_int(c) };
            let d = creation_dtype(interp, p.get(3, "dtype"), default)?;
            let n = if step == 0.0 { 0.0 } else { ((stop - start) / step).ceil().max(0.0) };
            if n.is_nan() || n >= usize::MAX as f64 {
                return Ok(Value::opaque("arange of more elements than a shape holds"));
            }
            let n = n as usize;
            let max = interp.budgets.max_elements;
            let make = || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n]), |i| eval::round_to(start + step * i[0] as f64, d));
            Ok(Value::Array(Array::ready_if_small(Aval::new(&[n], d), max, make)))
        }
        F::Linspace => linspace(interp, &p),
        F::Logspace => {
            // `power(base, linspace(start, stop, num, endpoint, axis=axis))` in the inexact
            // dtype, converted to `dtype`.
            let (Some(start), Some(stop)) = (p.get(0, "start").cloned(), p.get(1, "stop").cloned()) else {
                return Ok(Value::opaque("logspace"));
            };
            let (Operand::Array(a0), Operand::Array(a1)) = (operand(interp, &start)?, operand(interp, &stop)?) else {
                return Ok(Value::opaque("logspace"));
            };
            let natural = dtypes::canonicalize(promote(&[a0.aval.weak_dtype(), a1.aval.weak_dtype()], c).dtype.to_inexact(), c);
            let d = creation_dtype(interp, p.get(5, "dtype"), natural)?;
            let computation = dtypes::canonicalize(d.to_inexact(), c);
            // linspace converts its bounds to `dtype` itself, and computes only Python numbers.
            let mut lin_kwargs: Kwargs = vec![("dtype".into(), Value::Str(computation.name().into()))];
            for (i, name) in [(2, "num"), (3, "endpoint"), (6, "axis")] {
                if let Some(v) = p.get(i, name) {
                    lin_kwargs.push((name.into(), v.clone()));
                }
            }
            let lin = call(interp, F::Linspace, vec![start, stop], lin_kwargs)?;
            let base = p.get(4, "base").cloned().unwrap_or(Value::Float(10.0));
            let powered = call(interp, F::Power, vec![base, lin], Vec::new())?;
            match powered {
                Value::Array(x) => convert(interp, &x, d, false).map(Value::Array),
                other => Ok(other),
            }
        }
        F::ResultType | F::PromoteTypes => {
            let mut wds = Vec::new();
            for v in args {
                match (dtype_arg(interp, Some(v))?, v) {
                    (Some(d), Value::DType(_) | Value::TfDType(_) | Value::Str(_)) => wds.push(WeakDType { dtype: d, weak: false }),
                    (Some(_), Value::Array(a)) => wds.push(a.aval.weak_dtype()),
                    _ => match operand(interp, v)? {
                        Operand::Array(a) => wds.push(a.aval.weak_dtype()),
                        Operand::Unknown => return Ok(Value::opaque("result_type of an unknown value")),
                    },
                }
            }
            if wds.is_empty() {
                return Err(interp.value_error("at least one array or dtype is required"));
            }
            if f == F::PromoteTypes && wds.len() == 2 {
                return Ok(Value::DType(dtypes::promote_types(wds[0].dtype, wds[1].dtype, c)));
            }
            // `result_type` gives the dtype JAX would make (float32 for NumPy float64 inputs
            // without x64); `promote_types` does not narrow.
            match dtypes::result_type(&wds, c) {
                Ok(w) => Ok(Value::DType(dtypes::canonicalize(w.dtype, c))),
                Err(_) => Err(interp.value_error("at least one array or dtype is required")),
            }
        }
        F::Eye | F::Identity => {
            let Some(n) = interp.index_of(&cx.named(0, if f == F::Eye { "N" } else { "n" }))? else {
                return Ok(Value::opaque("array of unknown shape"));
            };
            let n = n.max(0) as usize;
            let m = match p.get(1, "M") {
                Some(v) if f == F::Eye => interp.index_of(v)?.unwrap_or(n as i64).max(0) as usize,
                _ => n,
            };
            let d = creation_dtype(interp, p.get(if f == F::Eye { 3 } else { 1 }, "dtype"), dtypes::default_float(c))?;
            // The diagonal `k` (above the main one when positive).
            let k = match p.get(2, "k") {
                Some(v) if f == F::Eye => match interp.index_of(v)? {
                    Some(k) => k,
                    None => return Ok(Value::Array(Array::unknown(Aval::new(&[n, m], d), "eye with a diagonal not known"))),
                },
                _ => 0,
            };
            let make = || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n, m]), |i| (i[1] as i64 - i[0] as i64 == k) as i64 as f64);
            Ok(Value::Array(Array::ready_if_small(Aval::new(&[n, m], d), interp.budgets.max_elements, make)))
        }
        F::Tril | F::Triu => {
            let a = arr!(interp, cx, 0, "m");
            let nd = a.aval.ndim();
            let k = p.get(1, "k").and_then(crate::interp::ops::as_int).unwrap_or(0);
            if nd < 2 {
                return apply1(interp, Prim::opaque(if f == F::Tril { "tril" } else { "triu" }, a.aval.clone()), &[a.clone()])
                    .map(Value::Array);
            }
            // jnp.where(mask, m, 0) with the constant mask `j - i <= k` (tril) or `>= k` (triu).
            let make = || {
                ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&a.aval.shape), |ix| {
                    let d = ix[nd - 1] as i64 - ix[nd - 2] as i64;
                    (if f == F::Tril { d <= k } else { d >= k }) as i64 as f64
                })
            };
            let mask = Array::ready_if_small(a.aval.with_dtype(DType::Bool).weak(false), interp.budgets.max_elements, make);
            let shape = a.aval.shape.clone();
            let zeros = full(interp, &shape, 0.0, a.aval.dtype)?;
            apply1(interp, Prim::Select, &[mask, zeros, a.clone()]).map(Value::Array)
        }
        F::Tri => {
            let Some(n) = interp.index_of(&cx.named(0, "N"))? else {
                return Ok(Value::opaque("array of unknown shape"));
            };
            let n = n.max(0) as usize;
            let m = p.get(1, "M").and_then(crate::interp::ops::as_int).map(|m| m.max(0) as usize).unwrap_or(n);
            let d = creation_dtype(interp, p.get(3, "dtype"), dtypes::default_float(c))?;
            let make = || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n, m]), |i| (i[1] <= i[0]) as i64 as f64);
            Ok(Value::Array(Array::ready_if_small(Aval::new(&[n, m], d), interp.budgets.max_elements, make)))
        }
        F::LaxIota => {
            let d = dtype_arg(interp, p.get(0, "dtype"))?.unwrap_or(DType::I32);
            let n = p.get(1, "size").and_then(crate::interp::ops::as_int).unwrap_or(0).max(0) as usize;
            Ok(Value::Array(Array::built(Aval::new(&[n], dtypes::canonicalize(d, c)), || {
                ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n]), |i| i[0] as f64)
            })))
        }
        F::Append => {
            let a = arr!(interp, cx, 0, "arr");
            let b = arr!(interp, cx, 1, "values");
            match p.get(2, "axis") {
                Some(ax) => {
                    let ax = interp.index_of(ax)?.unwrap_or(0);
                    concatenate(interp, &[a, b], ax).map(Value::Array)
                }
                None => {
                    let (n, m) = (a.aval.size() as usize, b.aval.size() as usize);
                    let a1 = reshape_raw(interp, &a, &[n])?;
                    let b1 = reshape_raw(interp, &b, &[m])?;
                    concatenate(interp, &[a1, b1], 0).map(Value::Array)
                }
            }
        }
        F::Diag => {
            let a = arr!(interp, cx, 0, "v");
            let k = match p.get(1, "k") {
                None => 0,
                Some(v) => match interp.index_of(v)? {
                    Some(k) => k,
                    None => return Ok(Value::opaque("diag with an offset that is not an int")),
                },
            };
            match a.aval.ndim() {
                1 if k != 0 => diag_offset(interp, &a, k).map(Value::Array),
                // `diag(m, k)` of a matrix is its `k`-th diagonal.
                2 if k != 0 => super::call(interp, F::Diagonal, vec![Value::Array(a.clone()), Value::Int(k)], Vec::new()),
                1 => {
                    // jnp.where(eye, v[None, :], 0)
                    let n = a.aval.shape[0];
                    let eye = Array::built(Aval::new(&[n, n], DType::Bool), || {
                        ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n, n]), |ix| (ix[0] == ix[1]) as i64 as f64)
                    });
                    let prim = Prim::BroadcastInDim { shape: vec![n, n], broadcast_dimensions: vec![1] };
                    let rows = apply1(interp, prim, &[a.clone()])?;
                    let zeros = full(interp, &[n, n], 0.0, a.aval.dtype)?;
                    apply1(interp, Prim::Select, &[eye, zeros, rows]).map(Value::Array)
                }
                2 => {
                    let n = a.aval.shape[0].min(a.aval.shape[1]);
                    let ix =
                        Array::built(Aval::new(&[n], DType::I32), || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n]), |i| i[0] as f64));
                    let prim = Prim::Gather {
                        mode: crate::jax::ir::IndexMode::Clip,
                        fill_value: None,
                        index: vec![IndexItem::Array, IndexItem::Array],
                    };
                    apply1(interp, prim, &[a.clone(), ix.clone(), ix]).map(Value::Array)
                }
                _ => Err(interp.value_error("diag input must be 1d or 2d")),
            }
        }
        F::Meshgrid => {
            // One `broadcast_in_dim` per argument, the first two swapped for `indexing='xy'`.
            let mut arrays = Vec::new();
            for v in args {
                arrays.push(arr_or_unknown!(interp, v));
            }
            let indexing = match p.get(usize::MAX, "indexing") {
                None => "xy".to_string(),
                Some(Value::Str(s)) => s.to_string(),
                Some(_) => return Ok(Value::opaque("meshgrid")),
            };
            if indexing != "xy" && indexing != "ij" {
                return Err(interp.value_error(format!("Valid values for indexing are 'xy' and 'ij', got {indexing}")));
            }
            if arrays.iter().any(|a| a.aval.ndim() != 1) {
                let shapes: Vec<String> = arrays.iter().map(|a| a.aval.shape_tuple()).collect();
                return Err(interp.value_error(format!("Arguments to jax.numpy.meshgrid must be 1D, got shapes [{}]", shapes.join(", "))));
            }
            let sparse = matches!(p.get(usize::MAX, "sparse"), Some(Value::Bool(true)));
            let xy = indexing == "xy" && arrays.len() >= 2;
            if xy {
                arrays.swap(0, 1);
            }
            let full_shape: Vec<usize> = arrays.iter().map(|a| if sparse { 1 } else { a.aval.shape[0] }).collect();
            let mut outs = Vec::with_capacity(arrays.len());
            for (i, a) in arrays.iter().enumerate() {
                let mut shape = full_shape.clone();
                shape[i] = a.aval.shape[0];
                let prim = Prim::BroadcastInDim { shape: shape.clone(), broadcast_dimensions: vec![i] };
                outs.push(Value::Array(apply1(interp, prim, std::slice::from_ref(a))?));
            }
            if xy {
                outs.swap(0, 1);
            }
            Ok(interp.new_list(outs))
        }
        // `dispatch::family` sends only the functions above here.
        _ => Ok(cx.unrouted()),
    }
}

pub(super) fn shape_arg(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<usize>>> {
    // The usual shape, `(8, 16)` or `3`: plain non-negative ints, nothing to look up.
    match v {
        Value::Int(i) if *i >= 0 => return Ok(Some(vec![*i as usize])),
        Value::Tuple(items) if items.iter().all(|x| matches!(x, Value::Int(i) if *i >= 0)) => {
            return Ok(Some(items.iter().map(|x| if let Value::Int(i) = x { *i as usize } else { 0 }).collect()));
        }
        _ => {}
    }
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
        Some(Value::DType(d) | Value::TfDType(d)) => Some(*d),
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
            out = apply1(interp, Prim::Concatenate { dimension: axis }, &[out.clone(), e])?;
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
    apply1(interp, Prim::Full { value: eval::round_to(value, dtype), shape: shape.to_vec(), dtype, weak_type: false }, &[])
}

/// `jnp.diag(v, k)` of a vector, `k != 0`: an `n + |k|` square of zeros with `v` on the
/// `k`-th diagonal (`out[i, i + k] = v[i]` above the main one, `out[i - k, i] = v[i]` below).
fn diag_offset(interp: &mut Interp, v: &Rc<Array>, k: i64) -> PyResult<Rc<Array>> {
    let off = k.unsigned_abs() as usize;
    let n = v.aval.shape[0] + off;
    let padding = full(interp, &[off], 0.0, v.aval.dtype)?;
    let padded = concatenate(interp, &[v.clone(), padding], 0)?;
    let mask = Array::built(Aval::new(&[n, n], DType::Bool), || {
        ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n, n]), |ix| (ix[1] as i64 - ix[0] as i64 == k) as i64 as f64)
    });
    // Above the main diagonal row `i` holds `v[i]`; below it column `j` holds `v[j]`.
    let along = if k > 0 { 0 } else { 1 };
    let prim = Prim::BroadcastInDim { shape: vec![n, n], broadcast_dimensions: vec![along] };
    let spread = apply1(interp, prim, &[padded])?;
    let zeros = full(interp, &[n, n], 0.0, v.aval.dtype)?;
    apply1(interp, Prim::Select, &[mask, zeros, spread])
}
