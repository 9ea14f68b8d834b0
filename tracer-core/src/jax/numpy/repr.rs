//! Printing arrays: `repr`/`str`/`format` as JAX prints arrays, tracers, typed keys and
//! `ShapeDtypeStruct`s, and the markers values mode shows for arrays it did not compute.

use super::*;

/// Why the value of a `jax.ShapeDtypeStruct(shape, dtype)` is not computed: it has none.
pub const SHAPE_DTYPE_STRUCT: &str = "a ShapeDtypeStruct has no values";
/// Why the value of a `jax.eval_shape` result (a `ShapeDtypeStruct` in JAX) is not computed.
pub const EVAL_SHAPE_RESULT: &str = "eval_shape";

/// `ShapeDtypeStruct(shape=(2, 3), dtype=float32)` when `a` stands for a `ShapeDtypeStruct`
/// (made by `jax.ShapeDtypeStruct` or returned by `jax.eval_shape`), as JAX prints one:
/// `str` and `repr` alike, with `, weak_type=True` for a weakly typed one.
pub(super) fn shape_dtype_struct_text(a: &Rc<Array>) -> Option<String> {
    is_shape_dtype_struct(a).then(|| {
        let weak = if a.aval.weak { ", weak_type=True" } else { "" };
        format!("ShapeDtypeStruct(shape={}, dtype={}{weak})", a.aval.shape_tuple(), a.aval.dtype.name())
    })
}

/// Whether `a` stands for a `ShapeDtypeStruct` (made by `jax.ShapeDtypeStruct` or returned
/// by `jax.eval_shape`) rather than an array.
pub fn is_shape_dtype_struct(a: &Array) -> bool {
    let ArrayKind::Concrete(cell) = &a.kind else { return false };
    matches!(&*cell.borrow(), Lazy::Unknown(why) if *why == SHAPE_DTYPE_STRUCT || *why == EVAL_SHAPE_RESULT)
}

/// `l == r` when either stands for a `ShapeDtypeStruct`, as JAX's `__eq__`: equal shape,
/// dtype and weak type against another struct, `False` against anything else. `None` when
/// neither is a struct (an array comparison).
pub fn shape_dtype_struct_eq(l: &Value, r: &Value) -> Option<bool> {
    let struct_of = |v: &Value| match v {
        Value::Array(a) if is_shape_dtype_struct(a) => Some(a.aval.clone()),
        _ => None,
    };
    match (struct_of(l), struct_of(r)) {
        (None, None) => None,
        (Some(a), Some(b)) => Some(a.shape == b.shape && a.dtype == b.dtype && a.weak == b.weak),
        _ => Some(false),
    }
}

/// `repr(x)` as JAX prints arrays and tracers.
pub fn array_repr(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    if let Some(text) = shape_dtype_struct_text(a) {
        return Ok(text);
    }
    if let Some(t) = a.tracer() {
        let kind = interp.jax.traces.iter().find(|f| f.id == t.trace).map(|f| f.kind.clone());
        return Ok(match kind {
            Some(crate::jax::TraceKind::Vmap) => {
                format!("VmapTracer(aval={}, batched=?)", a.aval.long_weak())
            }
            Some(crate::jax::TraceKind::Grad) => "GradTracer(...)".into(),
            _ => format!("JitTracer({})", a.aval.long_weak()),
        });
    }
    if a.aval.dtype.is_key() {
        return key_array_text(interp, a);
    }
    check_numpy_rank(interp, a)?;
    match eval::force(a, interp.budgets.max_elements) {
        Some(d) => {
            crate::jax::numerics::observed(interp, a, "printed");
            Ok(crate::jax::print::array_repr(&d, a.aval.dtype, a.aval.weak))
        }
        None => match past_f64(interp, a) {
            Some(d) => Ok(crate::jax::print::ints_repr(&d, a.aval.dtype, a.aval.weak)),
            None => not_computed_text(interp, a),
        },
    }
}

/// Printing goes through a NumPy array, which has at most 64 dimensions (JAX's arrays have any).
pub(super) fn check_numpy_rank(interp: &mut Interp, a: &Rc<Array>) -> PyResult<()> {
    if a.aval.ndim() > 64 {
        return Err(interp.value_error("number of dimensions must be within [0, 64]"));
    }
    Ok(())
}

/// `str` and `repr` of a typed key array, which JAX prints alike: its shape and dtype, then
/// its `uint32` words as `str(jax.random.key_data(keys))`.
pub(super) fn key_array_text(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    match eval::force_key_data(a, interp.budgets.max_elements.saturating_mul(2)) {
        Some(d) => Ok(format!(
            "Array({}, dtype={}) overlaying:\n{}",
            a.aval.shape_tuple(),
            a.aval.dtype.name(),
            crate::jax::print::array_str(&d, DType::U32)
        )),
        None => not_computed_text(interp, a),
    }
}

/// Values mode shows an array it could not compute as a marker (and says why); otherwise
/// the analysis of this entry point ends here, silently.
pub(super) fn not_computed_text(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    if interp.values.is_some() {
        return Ok(crate::jax::numerics::not_computed(interp, a));
    }
    Err(interp.stop_unknown("the text of an array whose value is not computed"))
}

pub fn array_str(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    if a.is_tracer() || a.aval.dtype.is_key() {
        return array_repr(interp, a);
    }
    if let Some(text) = shape_dtype_struct_text(a) {
        return Ok(text);
    }
    check_numpy_rank(interp, a)?;
    match eval::force(a, interp.budgets.max_elements) {
        Some(d) => {
            crate::jax::numerics::observed(interp, a, "printed");
            Ok(crate::jax::print::array_str(&d, a.aval.dtype))
        }
        None => match past_f64(interp, a) {
            Some(d) => Ok(crate::jax::print::ints_str(&d)),
            None => not_computed_text(interp, a),
        },
    }
}

/// The value of an int64/uint64 array that f64 does not hold (one value from 2**53 on), exactly.
pub(super) fn past_f64(interp: &mut Interp, a: &Rc<Array>) -> Option<Rc<crate::jax::eval_ints::NdInts>> {
    let d = eval::force_ints(a, interp.budgets.max_elements)?;
    crate::jax::numerics::observed(interp, a, "printed");
    Some(d)
}

pub fn array_format(interp: &mut Interp, a: &Rc<Array>, spec: &str) -> PyResult<String> {
    if a.is_tracer() && a.known().is_none() {
        return Err(interp.raise("TypeError", Code::PythonException, "unsupported format string passed to DynamicJaxprTracer.__format__"));
    }
    if a.aval.dtype.is_key() && spec.is_empty() {
        return array_str(interp, a);
    }
    if a.aval.ndim() == 0 {
        if let Some(x) = eval::force(a, 1).and_then(|d| d.iter().next().copied()) {
            crate::jax::numerics::observed(interp, a, "formatted");
            let v = if a.aval.dtype.is_integer() { Value::Int(x as i64) } else { Value::Float(x) };
            return interp.format_value(&v, spec);
        }
    }
    if interp.values.is_some() && (a.aval.ndim() == 0 || eval::force(a, interp.budgets.max_elements).is_none()) {
        return Ok(crate::jax::numerics::not_computed(interp, a));
    }
    Err(interp.stop_unknown("formatting an array whose value is not computed"))
}
