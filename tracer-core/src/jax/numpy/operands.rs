//! jnp's operands: Python values as arrays (`jnp.asarray`), JAX's implicit promotion and
//! NumPy broadcasting with their messages, the conversions and reshapes every family binds,
//! `jnp.power`/`true_divide` and the axis arguments (`axis=-1`, `axis=(0, 1)`).

use super::*;

pub use crate::interp::model::numpy::Operand;

pub(super) fn cfg(interp: &Interp) -> dtypes::DTypeConfig {
    interp.jax.config
}

/// Implicit promotion of operands (never fails in JAX's default promotion mode).
pub fn promote(operands: &[WeakDType], c: dtypes::DTypeConfig) -> WeakDType {
    match dtypes::lattice_result_type(operands, c) {
        Ok(w) => w,
        Err(_) => operands.first().copied().unwrap_or(WeakDType { dtype: dtypes::default_float(c), weak: false }),
    }
}

/// `jnp.asarray(v)` for the values Python code passes to jnp functions.
pub fn operand(interp: &mut Interp, v: &Value) -> PyResult<Operand> {
    let c = cfg(interp);
    Ok(Operand::Array(match v {
        Value::Array(a) => a.clone(),
        Value::Bool(b) => Array::scalar(*b as i64 as f64, DType::Bool, false),
        Value::Int(i) => {
            let wd = dtypes::python_scalar_dtype(PyScalarKind::Int, c);
            Array::python_int(*i, wd.dtype)
        }
        Value::Float(f) => {
            let wd = dtypes::python_scalar_dtype(PyScalarKind::Float, c);
            Array::scalar(*f, wd.dtype, true)
        }
        Value::UnknownNumber(is_float) => {
            let kind = if *is_float { PyScalarKind::Float } else { PyScalarKind::Int };
            let wd = dtypes::python_scalar_dtype(kind, c);
            Array::unknown(Aval::scalar(wd.dtype).weak(true), "a Python number whose value is not known")
        }
        Value::List(_) | Value::Tuple(_) => {
            if let Some(a) = super::literal::numbers_array(interp, v)? {
                return Ok(Operand::Array(a));
            }
            let items = interp.iterate(v)?;
            return stack_python(interp, &items);
        }
        Value::Complex(..) => {
            // A Python complex is a weak complex scalar; complex values are not computed.
            let wd = dtypes::python_scalar_dtype(PyScalarKind::Complex, c);
            Array::unknown(Aval::scalar(wd.dtype).weak(true), "complex values are not computed")
        }
        Value::Opaque(_) => return Ok(Operand::Unknown),
        Value::Instance(_) => match interp.call_dunder(v, "__jax_array__", Vec::new())? {
            Some(Value::Array(a)) => a,
            _ => return Ok(Operand::Unknown),
        },
        // NumPy makes arrays of strings, `None` and other objects (dtype `<U5`, `object`),
        // which tracelens does not model: unknown, never JAX's refusal.
        _ if interp.jax.numpy_eager => return Ok(Operand::Unknown),
        other => {
            let shown = interp.repr(other).unwrap_or_default();
            return Err(interp.type_error(format!("Value {shown} with type <class '{}'> is not a valid JAX type", other.type_name())));
        }
    }))
}

/// `jnp.array([[1., 2.], [3., 4.]])`: nested Python sequences become one strong-typed array.
pub(super) fn stack_python(interp: &mut Interp, items: &[Value]) -> PyResult<Operand> {
    let mut arrays = Vec::with_capacity(items.len());
    for it in items {
        match operand(interp, it)? {
            Operand::Array(a) => arrays.push(a),
            Operand::Unknown => return Ok(Operand::Unknown),
        }
    }
    if arrays.is_empty() {
        return Ok(Operand::Array(Array::ready(
            Aval::new(&[0], dtypes::default_float(cfg(interp))),
            ndarray::ArrayD::zeros(ndarray::IxDyn(&[0])),
        )));
    }
    let wds: Vec<WeakDType> = arrays.iter().map(|a| a.aval.weak_dtype()).collect();
    let mut dt = promote(&wds, cfg(interp));
    // A literal list is strongly typed: jnp.array([1.0]) is float32, not ~float32.
    dt.weak = false;
    let shape0 = arrays[0].aval.shape.clone();
    if arrays.iter().any(|a| a.aval.shape != shape0) {
        return Err(interp.value_error("setting an array element with a sequence. The requested array has an inhomogeneous shape"));
    }
    let mut out_shape = Shape::from_slice(&[arrays.len()]);
    out_shape.extend(shape0.iter().copied());
    let converted: Vec<Rc<Array>> = arrays.iter().map(|a| convert(interp, a, dt.dtype, false)).collect::<PyResult<_>>()?;
    let expanded: Vec<Rc<Array>> = converted
        .iter()
        .map(|a| {
            let mut s: Vec<usize> = vec![1];
            s.extend(a.aval.shape.iter().copied());
            reshape_raw(interp, a, &s)
        })
        .collect::<PyResult<_>>()?;
    Ok(Operand::Array(apply1(interp, Prim::Concatenate { dimension: 0 }, &expanded)?))
}

pub fn convert(interp: &mut Interp, a: &Rc<Array>, dtype: DType, weak: bool) -> PyResult<Rc<Array>> {
    if a.aval.dtype == dtype && a.aval.weak == weak {
        return Ok(a.clone());
    }
    apply1(interp, Prim::ConvertElementType { new_dtype: dtype, weak_type: weak }, std::slice::from_ref(a))
}

pub(super) fn reshape_raw(interp: &mut Interp, a: &Rc<Array>, shape: &[usize]) -> PyResult<Rc<Array>> {
    if a.aval.shape.as_slice() == shape {
        return Ok(a.clone());
    }
    apply1(interp, Prim::Reshape { new_sizes: shape.to_vec() }, std::slice::from_ref(a))
}

/// NumPy broadcasting of shapes, with JAX's message on failure.
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Shape, String> {
    let ndim = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = Shape::from_elem(1, ndim);
    for s in shapes {
        let off = ndim - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[off + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                let list = shapes.iter().map(|s| shape_tuple(s)).collect::<Vec<_>>().join(", ");
                return Err(format!("Incompatible shapes for broadcasting: shapes=[{list}]"));
            }
        }
    }
    Ok(out)
}

pub(super) fn broadcast_to_shape(interp: &mut Interp, a: &Rc<Array>, shape: &[usize]) -> PyResult<Rc<Array>> {
    if a.aval.shape.as_slice() == shape {
        return Ok(a.clone());
    }
    let off = shape.len() - a.aval.ndim();
    let dims: Vec<usize> = (off..shape.len()).collect();
    apply1(interp, Prim::BroadcastInDim { shape: shape.to_vec(), broadcast_dimensions: dims }, std::slice::from_ref(a))
}

/// Promotes and broadcasts operands as jnp's binary functions do.
pub(super) fn promote_broadcast(interp: &mut Interp, arrays: &[Rc<Array>]) -> PyResult<(Vec<Rc<Array>>, WeakDType, Shape)> {
    // On the stack, pushed (see `rule_avals`): every binary jnp operation comes here.
    let mut wds: smallvec::SmallVec<[WeakDType; 4]> = smallvec::SmallVec::new();
    let mut shapes: smallvec::SmallVec<[&[usize]; 4]> = smallvec::SmallVec::new();
    for a in arrays {
        wds.push(a.aval.weak_dtype());
        shapes.push(a.aval.shape.as_slice());
    }
    let dt = promote(&wds, cfg(interp));
    let shape = broadcast_shapes(&shapes).map_err(|m| interp.raise("ValueError", Code::ShapeMismatch, m))?;
    let mut out = Vec::with_capacity(arrays.len());
    for a in arrays {
        let c = convert(interp, a, dt.dtype, dt.weak)?;
        out.push(c);
    }
    Ok((out, dt, shape))
}

/// jax.numpy broadcasts operands of different ranks itself (a ValueError when it cannot), but
/// hands operands of equal rank to the lax primitive, whose error is a TypeError naming it.
pub(super) fn check_equal_rank_shapes(interp: &mut Interp, prim: &Prim, l: &Rc<Array>, r: &Rc<Array>) -> PyResult<()> {
    let (sl, sr) = (l.aval.shape.as_slice(), r.aval.shape.as_slice());
    // Compared in place: every binary jnp operation comes here.
    if sl.len() == sr.len() && !sl.iter().zip(sr).all(|(&a, &b)| a == b || a == 1 || b == 1) {
        let message = format!("{} got incompatible shapes for broadcasting: {}, {}.", prim.name(), shape_tuple(sl), shape_tuple(sr));
        return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    }
    Ok(())
}

pub(super) fn binary_prim(interp: &mut Interp, prim: BinaryPrim, l: &Rc<Array>, r: &Rc<Array>) -> PyResult<Rc<Array>> {
    check_equal_rank_shapes(interp, &Prim::Binary(prim), l, r)?;
    let (ops, dt, shape) = promote_broadcast(interp, &[l.clone(), r.clone()])?;
    check_binary_dtype(interp, prim, dt.dtype)?;
    let a = broadcast_rank(interp, &ops[0], shape.len())?;
    let b = broadcast_rank(interp, &ops[1], shape.len())?;
    apply1(interp, Prim::Binary(prim), &[a, b])
}

/// The start indices of `lax.dynamic_slice`/`dynamic_update_slice`: a sequence of integer
/// scalars (Python ints or arrays, traced or not) or a 1-D integer array, one per axis of an
/// operand of rank `ndim`, as scalar arrays; `None` when they are not that (the value of the
/// operation is then not computed).
pub(super) fn start_indices(interp: &mut Interp, v: Option<&Value>, sliced: &Array) -> PyResult<Option<Vec<Rc<Array>>>> {
    let ndim = sliced.aval.ndim();
    let items: Vec<Value> = match v {
        Some(Value::Tuple(t)) => t.to_vec(),
        Some(Value::List(l)) => l.borrow().clone(),
        // A 0-d array is not a sequence of starts (JAX takes its `len()`): left unknown.
        Some(Value::Array(a)) if a.aval.ndim() == 0 => return Ok(None),
        Some(v @ Value::Array(_)) => vec![v.clone()],
        _ => return Ok(None),
    };
    let mut out = Vec::with_capacity(ndim);
    for item in &items {
        let Operand::Array(i) = operand(interp, item)? else { return Ok(None) };
        if !i.aval.dtype.is_integer() {
            return Ok(None);
        }
        match i.aval.ndim() {
            0 => out.push(i),
            // One array of all the starts: element k is the start on axis k.
            1 if items.len() == 1 => {
                for k in 0..i.aval.shape[0] {
                    let prim = Prim::Slice { start: vec![k], limit: vec![k + 1], strides: vec![1] };
                    let one = apply1(interp, prim, std::slice::from_ref(&i))?;
                    out.push(reshape_raw(interp, &one, &[])?);
                }
            }
            _ => return Ok(None),
        }
    }
    if out.len() != ndim {
        // `_dynamic_slice_indices`, before anything is bound.
        return Err(interp.raise(
            "ValueError",
            Code::ShapeMismatch,
            format!("Length of slice indices must match number of operand dimensions ({} vs {})", out.len(), sliced.aval.shape_tuple()),
        ));
    }
    Ok(Some(out))
}

/// `jnp.power`: a floating base to a concrete integer scalar power is `lax.integer_pow`
/// (JAX: `x ** 2` is exact, keeps the base's type and differentiates as `2 * x`); everything
/// else is `pow` after promotion.
pub(super) fn power(interp: &mut Interp, l: &Rc<Array>, r: &Rc<Array>) -> PyResult<Rc<Array>> {
    if l.aval.dtype.is_floating() && r.aval.dtype.is_integer() && r.aval.ndim() == 0 && !r.is_tracer() {
        let exponent = super::eval::force(r, 1).and_then(|d| d.iter().next().copied());
        if let Some(y) = exponent.filter(|y| y.fract() == 0.0 && y.abs() <= f64::from(i32::MAX)) {
            return apply1(interp, Prim::IntegerPow(y as i32), std::slice::from_ref(l));
        }
    }
    binary_prim(interp, BinaryPrim::Pow, l, r)
}

/// Rank-promotes by prepending unit dimensions (jnp keeps size-1 broadcasting implicit).
pub(super) fn broadcast_rank(interp: &mut Interp, a: &Rc<Array>, ndim: usize) -> PyResult<Rc<Array>> {
    if a.aval.ndim() == ndim {
        return Ok(a.clone());
    }
    let mut s = vec![1; ndim - a.aval.ndim()];
    s.extend(a.aval.shape.iter().copied());
    reshape_raw(interp, a, &s)
}

/// lax's dtype rule for the bitwise primitives, with its message (`and does not accept dtype
/// float32 at position 0. ...`).
pub(super) fn check_binary_dtype(interp: &mut Interp, prim: BinaryPrim, dtype: DType) -> PyResult<()> {
    let bitwise =
        matches!(prim, BinaryPrim::And | BinaryPrim::Or | BinaryPrim::Xor | BinaryPrim::ShiftLeft | BinaryPrim::ShiftRightArithmetic);
    if bitwise && dtype.is_inexact() {
        let accepted = if matches!(prim, BinaryPrim::ShiftLeft | BinaryPrim::ShiftRightArithmetic) { "integer" } else { "integer, bool" };
        return Err(interp.raise(
            "TypeError",
            Code::DtypeMismatch,
            format!(
                "{} does not accept dtype {} at position 0. Accepted dtypes at position 0 are subtypes of {accepted}.",
                prim.name(),
                dtype.name()
            ),
        ));
    }
    Ok(())
}

pub(super) fn true_divide(interp: &mut Interp, l: &Rc<Array>, r: &Rc<Array>) -> PyResult<Rc<Array>> {
    let (mut ops, mut dt, shape) = promote_broadcast(interp, &[l.clone(), r.clone()])?;
    if !dt.dtype.is_inexact() {
        // `promote_args_inexact`: int32 / int32 is float32 even with x64 on.
        let f = dtypes::canonicalize(dt.dtype.to_inexact(), cfg(interp));
        dt = WeakDType { dtype: f, weak: dt.weak };
        ops = ops.iter().map(|o| convert(interp, o, f, dt.weak)).collect::<PyResult<_>>()?;
    }
    let a = broadcast_rank(interp, &ops[0], shape.len())?;
    let b = broadcast_rank(interp, &ops[1], shape.len())?;
    apply1(interp, Prim::Binary(BinaryPrim::Div), &[a, b])
}

pub fn binary_op(interp: &mut Interp, op: BinOp, l: &Value, r: &Value) -> PyResult<Value> {
    let a = arr_or_unknown!(interp, l);
    let b = arr_or_unknown!(interp, r);
    if a.aval.dtype.is_key() || b.aval.dtype.is_key() {
        return key_arithmetic(interp, op, &a, &b);
    }
    in_numpy_mode(interp, &[l, r], |interp| binary_arrays(interp, op, &a, &b).map(Value::Array))
}

/// Arithmetic with a typed PRNG key, which JAX refuses. Its `TypeError` is raised where
/// JAX's wording is known: `jnp`'s check that a key and a non-key array do not promote
/// (`add does not accept dtypes key<fry>, int32.`). Elsewhere (two keys, other operators,
/// NumPy operands) the result is unknown, without a diagnostic.
pub(super) fn key_arithmetic(interp: &mut Interp, op: BinOp, a: &Rc<Array>, b: &Rc<Array>) -> PyResult<Value> {
    let name = match op {
        BinOp::Add => "add",
        BinOp::Sub => "subtract",
        BinOp::Mul => "multiply",
        BinOp::Div => "true_divide",
        _ => return Ok(Value::opaque("arithmetic on PRNG keys")),
    };
    if a.aval.dtype.is_key() == b.aval.dtype.is_key() || a.numpy.get() || b.numpy.get() {
        return Ok(Value::opaque("arithmetic on PRNG keys"));
    }
    Err(interp.raise(
        "TypeError",
        Code::DtypeMismatch,
        format!("{name} does not accept dtypes {}, {}.", a.aval.dtype.name(), b.aval.dtype.name()),
    ))
}

pub(super) fn normalize_axis(interp: &mut Interp, axis: i64, ndim: usize) -> PyResult<usize> {
    let n = ndim as i64;
    if axis < -n || axis >= n {
        return Err(interp.raise("ValueError", Code::ShapeMismatch, format!("axis {axis} is out of bounds for array of dimension {ndim}")));
    }
    Ok(if axis < 0 { (axis + n) as usize } else { axis as usize })
}

/// `axes_arg` for reductions (`sum`, `mean`, `var`, `softmax`, `logsumexp`, ...): an axis
/// given twice is JAX's `ValueError: duplicate value in 'axis': (1, 1)`.
pub(super) fn reduction_axes(interp: &mut Interp, v: Option<&Value>, ndim: usize) -> PyResult<Option<Vec<usize>>> {
    let axes = axes_arg(interp, v, ndim)?;
    if let (Some(axes), Some(given)) = (&axes, v) {
        if axes.iter().enumerate().any(|(i, a)| axes[..i].contains(a)) {
            let shown = interp.repr(given)?;
            return Err(interp.raise("ValueError", Code::ShapeMismatch, format!("duplicate value in 'axis': {shown}")));
        }
    }
    Ok(axes)
}

/// An `axis: int | None` parameter (argmax, cumsum, take, repeat): None when not given or
/// None, else the axis normalized against `ndim`. JAX reads it with `operator.index`, so a
/// tuple, a list or a float is Python's TypeError; never an empty list of axes.
pub(super) fn single_axis(interp: &mut Interp, v: Option<&Value>, ndim: usize) -> PyResult<Option<usize>> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(x) => match interp.index_of(x)? {
            Some(i) => Ok(Some(normalize_axis(interp, i, ndim)?)),
            None => Err(interp.type_error(format!("'{}' object cannot be interpreted as an integer", x.type_name()))),
        },
    }
}

/// `single_axis` for a function JAX jits with `axis` static (cumsum, sort): a list or an
/// array cannot be hashed, which is JAX's ValueError before `operator.index` sees it.
pub(super) fn static_single_axis(interp: &mut Interp, v: Option<&Value>, ndim: usize) -> PyResult<Option<usize>> {
    let type_name = match v {
        Some(Value::List(_)) => "list",
        Some(Value::Array(_)) => "jaxlib._jax.ArrayImpl",
        _ => return single_axis(interp, v, ndim),
    };
    let shown = match v {
        Some(axis) => interp.to_str(axis)?,
        None => String::new(),
    };
    Err(interp.raise(
        "ValueError",
        Code::BadStaticArg,
        format!("Non-hashable static arguments are not supported. An error occurred while trying to hash an object of type <class '{type_name}'>, {shown}. The error was:\nTypeError: unhashable type: '{type_name}'\n"),
    ))
}

pub(super) fn axes_arg(interp: &mut Interp, v: Option<&Value>, ndim: usize) -> PyResult<Option<Vec<usize>>> {
    match v {
        None | Some(Value::None) => Ok(None),
        // A list is taken as a tuple is: `jnp.sum(x, axis=[-1])` works in JAX (a few functions
        // that hash their axis reject it; tracelens says nothing there).
        Some(v @ (Value::Tuple(_) | Value::List(_))) => {
            let t = match v {
                Value::List(items) => items.borrow().clone(),
                Value::Tuple(items) => items.to_vec(),
                _ => Vec::new(),
            };
            let mut out = Vec::new();
            for x in t.iter() {
                let i = interp.index_of(x)?.unwrap_or(0);
                out.push(normalize_axis(interp, i, ndim)?);
            }
            Ok(Some(out))
        }
        Some(x) => {
            let i = match interp.index_of(x)? {
                Some(i) => i,
                None => return Err(interp.type_error("axis must be an integer")),
            };
            Ok(Some(vec![normalize_axis(interp, i, ndim)?]))
        }
    }
}
