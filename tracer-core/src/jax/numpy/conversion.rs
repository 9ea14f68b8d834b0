//! Where Python needs a concrete value from an array (`if x:`, `int(x)`, `x.tolist()`,
//! `operator.index`), exactly where JAX raises its tracer errors (TL101, TL108), the
//! builtins `abs`/`round` and dtypes called as constructors (`jnp.float32(x)`).

use super::*;

/// Python truth of an array (`if x:`): concrete arrays of one element are fine; tracers raise.
pub fn array_bool(interp: &mut Interp, a: &Rc<Array>, what: &str, expr: Option<&Expr>) -> PyResult<bool> {
    if a.known().is_none() && a.is_tracer() {
        return Err(concretization_bool(interp, a, what, expr));
    }
    if a.aval.size() != 1 {
        return Err(
            interp.value_error(format!("The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()"))
        );
    }
    match eval::force(a, interp.budgets.max_elements) {
        Some(d) => Ok(d.iter().next().copied().unwrap_or(0.0) != 0.0),
        None => Err(interp.stop_unknown("the truth of an array whose value is not computed")),
    }
}

/// The text of the expression Python converts (`x.sum() > 0`) and the staging trace it is
/// converted in (`jit(step)`), for TL101's explanation.
pub(super) fn converted_expression(interp: &Interp, expr: Option<&Expr>) -> (String, String) {
    let shown = expr
        .and_then(|e| interp.site().map(|s| (s.file, e.span)))
        .map(|(f, sp)| interp.files[f as usize].text.get(sp.start as usize..sp.end as usize).unwrap_or("").to_string())
        .unwrap_or_default();
    let inside = interp
        .jax
        .traces
        .iter()
        .rev()
        .find(|t| t.kind.is_staging())
        .map(|t| format!("{}({})", t.kind.label(), t.fn_name))
        .unwrap_or_default();
    (shown, inside)
}

pub(super) fn concretization_bool(interp: &mut Interp, a: &Rc<Array>, what: &str, expr: Option<&Expr>) -> Flow {
    crate::jax::stmt::record_concretize(interp, "bool", a);
    let origin = errors::origin(interp, a);
    let (shown, inside) = converted_expression(interp, expr);
    let mut msg = format!("Attempted boolean conversion of {}.", errors::traced_array(a));
    if !origin.is_empty() {
        msg.push('\n');
        msg.push_str(&origin);
    }
    let construct = match what {
        "if" | "while" | "assert" | "and" | "or" | "not" => format!("Python `{what}`"),
        other => format!("`{other}()`"),
    };
    if !shown.is_empty() {
        msg.push_str(&format!(
            "\n{construct} on traced value `{shown}` ({}) inside {inside}: its value is not known while tracing. Use jnp.where or lax.cond, or mark the argument static.",
            a.aval.short()
        ));
    }
    interp.raise("TracerBoolConversionError", Code::Concretization, msg)
}

/// JAX's error for Python control flow on a tracer whose aval the interpreter does not
/// know: the error does not depend on it.
pub fn unknown_tracer_bool(interp: &mut Interp, what: &str, expr: Option<&Expr>) -> Flow {
    let (shown, inside) = converted_expression(interp, expr);
    let construct = match what {
        "if" | "while" | "assert" | "and" | "or" | "not" => format!("Python `{what}`"),
        other => format!("`{other}()`"),
    };
    let mut msg = "Attempted boolean conversion of traced array.".to_string();
    if !shown.is_empty() {
        msg.push_str(&format!(
            "\n{construct} on traced value `{shown}` inside {inside}: its value is not known while tracing (it is computed by JAX from the traced arguments). Use jnp.where or lax.cond, or mark the argument static."
        ));
    }
    interp.raise("TracerBoolConversionError", Code::Concretization, msg)
}

/// `bool(x)`, `any(...)` and friends on arbitrary values.
pub fn python_bool(interp: &mut Interp, v: &Value, what: &str) -> PyResult<bool> {
    match v {
        Value::Array(a) => array_bool(interp, a, what, None),
        _ => interp.truthy(v),
    }
}

/// `x.tolist()`: nested lists of Python `bool`, `int` or `float` as the dtype is.
pub(super) fn nested_list(d: ndarray::ArrayViewD<f64>, dtype: DType) -> Value {
    if d.ndim() == 0 {
        let x = d.iter().next().copied().unwrap_or(0.0);
        return if dtype.is_bool() {
            Value::Bool(x != 0.0)
        } else if dtype.is_integer() {
            Value::Int(x as i64)
        } else {
            Value::Float(x)
        };
    }
    Value::list(d.outer_iter().map(|row| nested_list(row, dtype)).collect())
}

/// `x[idx] = value` on a NumPy array in values mode: the new values, computed now (values
/// mode has computed every array made from the old ones already). `false` when they cannot
/// be computed, and the caller forgets them.
pub fn numpy_setitem(interp: &mut Interp, a: &Rc<Array>, idx: &Value, value: &Value) -> PyResult<bool> {
    let items: Vec<Value> = match idx {
        Value::Tuple(t) => (**t).clone(),
        other => vec![other.clone()],
    };
    let (Some(index), arrays) = crate::jax::api::scatter_index(interp, a, &items)? else { return Ok(false) };
    let Operand::Array(u) = operand(interp, value)? else { return Ok(false) };
    let max = interp.budgets.max_elements;
    let (Some(data), Some(updates)) = (eval::force(a, max), eval::force(&u, max)) else { return Ok(false) };
    let Some(indices) = arrays.iter().map(|i| eval::force(i, max)).collect::<Option<Vec<_>>>() else { return Ok(false) };
    let dtype = a.aval.dtype;
    let new = crate::jax::prims::indexing::kernels::scatter(
        crate::jax::ir::ScatterOp::Set,
        &data,
        &updates,
        &indices,
        &index,
        crate::jax::ir::IndexMode::FillOrDrop,
        dtype,
    );
    let (Some(mut new), super::array::ArrayKind::Concrete(cell)) = (new, &a.kind) else { return Ok(false) };
    new.mapv_inplace(|x| eval::round_to(x, dtype));
    if !eval::exact_in_f64(&new, dtype) {
        return Ok(false);
    }
    *cell.borrow_mut() = super::array::Lazy::Ready(Rc::new(new));
    Ok(true)
}

pub fn array_to_python(interp: &mut Interp, a: &Rc<Array>, func: &str) -> PyResult<Value> {
    if a.known().is_none() && a.is_tracer() {
        return Err(concretization_error(interp, a, func));
    }
    if a.aval.ndim() != 0 && !a.numpy.get() && !a.tf.get() {
        let ndim = a.aval.ndim();
        return Err(interp.type_error(format!("Only scalar arrays can be converted to Python scalars; got arr.ndim={ndim}")));
    }
    if a.aval.size() != 1 {
        return Err(interp.type_error("only length-1 arrays can be converted to Python scalars"));
    }
    // An integer exactly (an int64 past 2**53 too), when Python's int fits it.
    if func == "int" {
        if let Some(v) = eval::force_ints(a, interp.budgets.max_elements).and_then(|d| d.iter().next().copied()) {
            if let Ok(v) = i64::try_from(v) {
                crate::jax::numerics::observed(interp, a, "converted to a Python number");
                return Ok(Value::Int(v));
            }
        }
    }
    match eval::force(a, interp.budgets.max_elements).and_then(|d| d.iter().next().copied()) {
        Some(x) => {
            crate::jax::numerics::observed(interp, a, "converted to a Python number");
            Ok(if func == "int" { Value::Int(x.trunc() as i64) } else { Value::Float(x) })
        }
        None => Ok(Value::opaque("a value not computed")),
    }
}

/// `float(x)` (and `math.f(x)`, `'%f' % x`, which call it): JAX refuses every tracer,
/// even one under `grad` or `jvp` whose value is known (where `int(x)` and `x.item()` work);
/// a value computed from `grad`'s other arguments only is a concrete array there.
pub fn array_to_float(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Value> {
    if a.is_jax_tracer() && !a.tf.get() {
        return Err(concretization_error(interp, a, "float"));
    }
    array_to_python(interp, a, "float")
}

fn concretization_error(interp: &mut Interp, a: &Rc<Array>, func: &str) -> Flow {
    crate::jax::stmt::record_concretize(interp, if func == "int" { "int" } else { "float" }, a);
    let origin = errors::origin(interp, a);
    let msg = format!(
        "Abstract tracer value encountered where concrete value is expected: {}\nThe problem arose with the `{func}` function. If trying to convert the data type of a value, try using `x.astype({func})` or `jnp.array(x, {func})` instead.\n{origin}",
        errors::traced_array(a)
    );
    interp.raise("ConcretizationTypeError", Code::Concretization, msg)
}

/// `int(x)`, `float(x)`, `complex(x)` of a tracer whose aval the interpreter does not know.
pub fn unknown_tracer_to_python(interp: &mut Interp, func: &str) -> Flow {
    let inside = interp.jax.staging_description().map(|d| format!(" inside {d}")).unwrap_or_default();
    let msg = format!(
        "Abstract tracer value encountered where concrete value is expected: a traced array{inside}\nThe problem arose with the `{func}` function. If trying to convert the data type of a value, try using `x.astype({func})` or `jnp.array(x, {func})` instead."
    );
    interp.raise("ConcretizationTypeError", Code::Concretization, msg)
}

/// `operator.index(x)`: list indexing, `range(x)`.
pub fn array_index(interp: &mut Interp, a: &Rc<Array>) -> PyResult<i64> {
    if a.known().is_none() && a.is_tracer() {
        return Err(index_error_from_tracer(interp, a));
    }
    if !a.aval.dtype.is_integer() || a.aval.ndim() != 0 {
        return Err(interp.type_error("only integer scalar arrays can be converted to a scalar index"));
    }
    match eval::force(a, interp.budgets.max_elements).and_then(|d| d.iter().next().copied()) {
        Some(x) => Ok(x as i64),
        None => Err(interp.stop_unknown("an index whose value is not computed")),
    }
}

pub fn index_error_from_tracer(interp: &mut Interp, a: &Rc<Array>) -> Flow {
    crate::jax::stmt::record_concretize(interp, "operator.index", a);
    let origin = errors::origin(interp, a);
    let msg = format!("The __index__() method was called on {}\n{origin}", errors::traced_array(a));
    interp.raise("TracerIntegerConversionError", Code::Concretization, msg)
}

pub fn immutable_update_error(interp: &mut Interp, _a: &Rc<Array>) -> Flow {
    interp.raise(
        "TypeError",
        Code::ImmutableUpdate,
        "JAX arrays are immutable and do not support in-place item assignment. Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html",
    )
}

/// A tracer stored into a NumPy array, `dest[idx] = v`. Into a slice NumPy calls `__array__`
/// (JAX's `TracerArrayConversionError`); into one element it converts `v` as a Python scalar
/// of `dest`'s kind: `int()` for integers, whose refusal JAX words itself, and for floats and
/// bools a refusal NumPy rewords as its own `ValueError`. Other element kinds (complex) are not
/// checked against NumPy: the analysis stops there without a finding.
pub fn numpy_store_error(interp: &mut Interp, dest: &Rc<Array>, idx: &Value, v: &Rc<Array>) -> Flow {
    let items: &[Value] = match idx {
        Value::Tuple(t) => t,
        other => std::slice::from_ref(other),
    };
    let one_element = items.len() == dest.aval.ndim() && items.iter().all(|i| matches!(i, Value::Int(_)));
    if !one_element {
        return numpy_conversion_error(interp, v);
    }
    let dtype = dest.aval.dtype;
    if dtype.is_integer() && v.aval.ndim() == 0 {
        return concretization_error(interp, v, "int");
    }
    if dtype.is_floating() || dtype.is_bool() {
        return interp.raise("ValueError", Code::TracerToNumpy, "setting an array element with a sequence.");
    }
    interp.stop_unknown("a tracer stored into one element of a NumPy array of this kind")
}

/// A NumPy function was handed a tracer (`np.asarray(x)`, `np.sin(x)`).
pub fn numpy_conversion_error(interp: &mut Interp, a: &Rc<Array>) -> Flow {
    crate::jax::stmt::record_concretize(interp, "np.asarray", a);
    let origin = errors::origin(interp, a);
    let msg = format!("The numpy.ndarray conversion method __array__() was called on {}\n{origin}", errors::traced_array(a));
    interp.raise("TracerArrayConversionError", Code::TracerToNumpy, msg)
}

/// TL212: a large concrete array read inside a trace becomes a constant of the trace.
pub fn note_captured_constant(interp: &mut Interp, a: &Rc<Array>) {
    // With arguments unknown, a concrete array may stand for what an argument would hold (a
    // library's `merge` of an unknown state hands back the model it knows): not a finding.
    if a.is_tracer() || interp.jax.staging_depth() == 0 || interp.jax.route.arguments_unknown() {
        return;
    }
    let bytes = a.aval.size().saturating_mul(a.aval.dtype.itemsize() as u128);
    if bytes > interp.budgets.large_constant_bytes as u128 {
        // Once per array and trace: a constant is baked in once, however often it is read.
        let record = interp.jax.traces.last().map(|t| t.record).unwrap_or(0);
        let seen = &mut interp.jax.effects.captured_constants;
        if seen.iter().any(|(x, r)| Rc::ptr_eq(x, a) && *r == record) {
            return;
        }
        seen.push((a.clone(), record));
        let inside = interp.jax.staging_description().unwrap_or_default();
        let site = interp.site();
        let msg = format!(
            "large constant: a concrete {} array ({:.1} MiB) is captured by {inside} and baked into the trace as a constant; pass it as an argument instead",
            a.aval.short(),
            bytes as f64 / (1u128 << 20) as f64
        );
        interp.warn(Code::LargeConstant, site, msg, Vec::new());
    }
}

pub fn abs(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Value> {
    unary_prim(interp, UnaryPrim::Abs, a).map(Value::Array)
}

pub fn round(interp: &mut Interp, a: &Rc<Array>, _digits: Option<Value>) -> PyResult<Value> {
    unary_prim(interp, UnaryPrim::Round, a).map(Value::Array)
}

/// `jnp.float32(x)`: a dtype called as a constructor.
pub fn dtype_call(interp: &mut Interp, d: DType, args: Vec<Value>, _kwargs: Kwargs) -> PyResult<Value> {
    let Some(v) = args.first() else {
        return Ok(Value::Array(Array::scalar(0.0, d, false)));
    };
    let a = arr_or_unknown!(interp, v);
    let target = dtypes::canonicalize(d, cfg(interp));
    let converted = convert(interp, &a, target, false)?;
    // `np.float32(tensor)` of an eager TensorFlow tensor is a NumPy value (the dtype value
    // does not tell `np.` from `jnp.`; TensorFlow code means NumPy's).
    if a.tf.get() && !converted.is_tracer() {
        return Ok(mark_numpy(Value::Array(converted.as_numpy())));
    }
    Ok(Value::Array(converted))
}
