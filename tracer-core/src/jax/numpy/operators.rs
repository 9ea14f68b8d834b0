//! Python's operators on arrays (`x + y`, `x // y`, `x < y`, `-x`, `~x`) as jnp binds them,
//! NumPy mode (all operands NumPy arrays compute as NumPy does), and the unary primitives'
//! dtype rule (`promote_args_inexact` for the transcendental ones).

use super::*;

/// Operations whose array operands are all NumPy arrays compute as NumPy does: 64-bit, and
/// the result is a NumPy array again.
pub fn in_numpy_mode(interp: &mut Interp, operands: &[&Value], f: impl FnOnce(&mut Interp) -> PyResult<Value>) -> PyResult<Value> {
    // Checked without collecting them: this runs at every operator.
    let mut arrays = operands.iter().filter_map(|v| v.as_array()).peekable();
    let numpy = arrays.peek().is_some() && arrays.all(|a| a.numpy.get() && !a.is_tracer());
    if !numpy {
        return f(interp);
    }
    let result = crate::interp::model::state::numpy_eager(interp, f);
    Ok(mark_numpy(result?))
}

/// Marks the arrays of a result as NumPy arrays (copying any that are shared with jax).
pub fn mark_numpy(v: Value) -> Value {
    match v {
        Value::Array(a) => {
            if Rc::strong_count(&a) == 1 {
                a.numpy.set(true);
                Value::Array(a)
            } else {
                Value::Array(a.as_numpy())
            }
        }
        Value::Tuple(items) => Value::tuple(items.iter().cloned().map(mark_numpy).collect()),
        other => other,
    }
}

pub(super) fn binary_arrays(interp: &mut Interp, op: BinOp, a: &Rc<Array>, b: &Rc<Array>) -> PyResult<Rc<Array>> {
    match op {
        BinOp::Add => binary_prim(interp, BinaryPrim::Add, a, b),
        BinOp::Sub => binary_prim(interp, BinaryPrim::Sub, a, b),
        BinOp::Mul => binary_prim(interp, BinaryPrim::Mul, a, b),
        BinOp::Div => true_divide(interp, a, b),
        BinOp::FloorDiv | BinOp::Mod => floor_divide_or_remainder(interp, op, a, b),
        BinOp::Pow => power(interp, a, b),
        BinOp::MatMul => matmul(interp, a, b, "matmul"),
        BinOp::BitAnd => binary_prim(interp, BinaryPrim::And, a, b),
        BinOp::BitOr => binary_prim(interp, BinaryPrim::Or, a, b),
        BinOp::BitXor => binary_prim(interp, BinaryPrim::Xor, a, b),
        BinOp::LShift => binary_prim(interp, BinaryPrim::ShiftLeft, a, b),
        BinOp::RShift => binary_prim(interp, BinaryPrim::ShiftRightArithmetic, a, b),
    }
}

/// `jnp.floor_divide` and `jnp.remainder` as JAX composes them (`floor_divide`,
/// `_float_divmod` and `remainder` in jax/_src/numpy/ufuncs.py): `lax.div` and `lax.rem`
/// round toward zero, and selects move the results to Python's signs (`-7 // 2 == -4`,
/// `-7 % 2 == 1`, `-inf // 2` is NaN).
pub(super) fn floor_divide_or_remainder(interp: &mut Interp, op: BinOp, a: &Rc<Array>, b: &Rc<Array>) -> PyResult<Rc<Array>> {
    let (ops, dt, shape) = promote_broadcast(interp, &[a.clone(), b.clone()])?;
    let dtype = dt.dtype;
    let plain = if op == BinOp::Mod { BinaryPrim::Rem } else { BinaryPrim::Div };
    if !(dtype.is_integer() || dtype.is_floating()) {
        return binary_prim(interp, plain, a, b);
    }
    let x = broadcast_to_shape(interp, &ops[0], &shape)?;
    let y = broadcast_to_shape(interp, &ops[1], &shape)?;
    let zero = Array::scalar(0.0, dtype, true);
    let one = Array::scalar(1.0, dtype, true);
    let select = |interp: &mut Interp, pred: &Rc<Array>, on_true: &Rc<Array>, on_false: &Rc<Array>| {
        apply1(interp, Prim::Select, &[pred.clone(), on_false.clone(), on_true.clone()])
    };
    if op == BinOp::Mod {
        let y = if dtype.is_integer() {
            let y_zero = compare_arrays(interp, CmpPrim::Eq, &y, &zero)?;
            let ones = broadcast_to_shape(interp, &Array::scalar(1.0, dtype, false), &shape)?;
            select(interp, &y_zero, &ones, &y)?
        } else {
            y
        };
        let m = binary_prim(interp, BinaryPrim::Rem, &x, &y)?;
        let m_nonzero = compare_arrays(interp, CmpPrim::Ne, &m, &zero)?;
        let m_negative = compare_arrays(interp, CmpPrim::Lt, &m, &zero)?;
        let y_negative = compare_arrays(interp, CmpPrim::Lt, &y, &zero)?;
        let signs_differ = compare_arrays(interp, CmpPrim::Ne, &m_negative, &y_negative)?;
        let add_y = binary_prim(interp, BinaryPrim::And, &signs_differ, &m_nonzero)?;
        let sum = binary_prim(interp, BinaryPrim::Add, &m, &y)?;
        return select(interp, &add_y, &sum, &m);
    }
    if dtype.is_unsigned() {
        return binary_prim(interp, BinaryPrim::Div, &x, &y);
    }
    if dtype.is_integer() {
        let q = binary_prim(interp, BinaryPrim::Div, &x, &y)?;
        let sign_x = unary_prim(interp, UnaryPrim::Sign, &x)?;
        let sign_y = unary_prim(interp, UnaryPrim::Sign, &y)?;
        let signs_differ = compare_arrays(interp, CmpPrim::Ne, &sign_x, &sign_y)?;
        let r = binary_prim(interp, BinaryPrim::Rem, &x, &y)?;
        let r_nonzero = compare_arrays(interp, CmpPrim::Ne, &r, &zero)?;
        let lower = binary_prim(interp, BinaryPrim::And, &signs_differ, &r_nonzero)?;
        let q_minus_one = binary_prim(interp, BinaryPrim::Sub, &q, &one)?;
        return select(interp, &lower, &q_minus_one, &q);
    }
    let m = binary_prim(interp, BinaryPrim::Rem, &x, &y)?;
    let y_zero = compare_arrays(interp, CmpPrim::Eq, &y, &zero)?;
    let x_minus_m = binary_prim(interp, BinaryPrim::Sub, &x, &m)?;
    let corrected = select(interp, &y_zero, &x, &x_minus_m)?;
    let q = binary_prim(interp, BinaryPrim::Div, &corrected, &y)?;
    let m_nonzero = compare_arrays(interp, CmpPrim::Ne, &m, &zero)?;
    let sign_y = unary_prim(interp, UnaryPrim::Sign, &y)?;
    let sign_m = unary_prim(interp, UnaryPrim::Sign, &m)?;
    let signs_differ = compare_arrays(interp, CmpPrim::Ne, &sign_y, &sign_m)?;
    let lower = binary_prim(interp, BinaryPrim::And, &m_nonzero, &signs_differ)?;
    let q_minus_one = binary_prim(interp, BinaryPrim::Sub, &q, &one)?;
    let q = select(interp, &lower, &q_minus_one, &q)?;
    unary_prim(interp, UnaryPrim::Round, &q)
}

pub fn compare_op(interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value> {
    in_numpy_mode(interp, &[l, r], |interp| compare_values(interp, op, l, r))
}

pub(super) fn compare_values(interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value> {
    let a = arr_or_unknown!(interp, l);
    let b = arr_or_unknown!(interp, r);
    // Keys compare for equality with keys only; the other cases are not modelled.
    let keys = (a.aval.dtype.is_key(), b.aval.dtype.is_key());
    if keys != (false, false) && (keys != (true, true) || !matches!(op, CmpOp::Eq | CmpOp::NotEq)) {
        return Ok(Value::opaque("a comparison of PRNG keys"));
    }
    let c = match op {
        CmpOp::Eq => CmpPrim::Eq,
        CmpOp::NotEq => CmpPrim::Ne,
        CmpOp::Lt => CmpPrim::Lt,
        CmpOp::LtE => CmpPrim::Le,
        CmpOp::Gt => CmpPrim::Gt,
        CmpOp::GtE => CmpPrim::Ge,
        _ => return Ok(Value::opaque("comparison")),
    };
    compare_arrays(interp, c, &a, &b).map(Value::Array)
}

pub(super) fn compare_arrays(interp: &mut Interp, c: CmpPrim, a: &Rc<Array>, b: &Rc<Array>) -> PyResult<Rc<Array>> {
    check_equal_rank_shapes(interp, &Prim::Compare(c), a, b)?;
    let (ops, _, shape) = promote_broadcast(interp, &[a.clone(), b.clone()])?;
    let x = broadcast_rank(interp, &ops[0], shape.len())?;
    let y = broadcast_rank(interp, &ops[1], shape.len())?;
    apply1(interp, Prim::Compare(c), &[x, y])
}

/// `promote_args_inexact` of one operand: bool and integers become `dtypes.to_inexact_dtype`
/// of their dtype (float32 up to 32 bits, float64 for 64-bit integers, which is the default
/// float for a Python number), keeping a weak type.
pub(super) fn inexact(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Rc<Array>> {
    if a.aval.dtype.is_inexact() {
        return Ok(a.clone());
    }
    let float = dtypes::canonicalize(a.aval.dtype.to_inexact(), cfg(interp));
    convert(interp, a, float, a.aval.weak)
}

pub(super) fn unary_prim(interp: &mut Interp, u: UnaryPrim, a: &Rc<Array>) -> PyResult<Rc<Array>> {
    let needs_float = matches!(
        u,
        UnaryPrim::Exp
            | UnaryPrim::Exp2
            | UnaryPrim::Log
            | UnaryPrim::Log1p
            | UnaryPrim::Expm1
            | UnaryPrim::Tanh
            | UnaryPrim::Logistic
            | UnaryPrim::Sin
            | UnaryPrim::Cos
            | UnaryPrim::Tan
            | UnaryPrim::Asin
            | UnaryPrim::Acos
            | UnaryPrim::Atan
            | UnaryPrim::Sinh
            | UnaryPrim::Cosh
            | UnaryPrim::Asinh
            | UnaryPrim::Acosh
            | UnaryPrim::Atanh
            | UnaryPrim::Sqrt
            | UnaryPrim::Rsqrt
            | UnaryPrim::Cbrt
            | UnaryPrim::Erf
            | UnaryPrim::Erfc
            | UnaryPrim::ErfInv
            | UnaryPrim::Lgamma
            | UnaryPrim::Digamma
    );
    let a = if needs_float { inexact(interp, a)? } else { a.clone() };
    if matches!(u, UnaryPrim::Floor | UnaryPrim::Ceil | UnaryPrim::Round) && !a.aval.dtype.is_inexact() {
        return Ok(a);
    }
    apply1(interp, Prim::Unary(u), &[a])
}

pub fn unary_op(interp: &mut Interp, op: UnaryOp, a: &Rc<Array>) -> PyResult<Value> {
    if a.aval.dtype.is_key() {
        return match op {
            UnaryOp::Neg => Err(interp.raise(
                "TypeError",
                Code::DtypeMismatch,
                "neg does not accept dtype key<fry>. Accepted dtypes are subtypes of integer, floating, complexfloating.",
            )),
            UnaryOp::Pos => Ok(Value::Array(a.clone())),
            UnaryOp::Invert | UnaryOp::Not => Ok(Value::opaque("an operation on PRNG keys")),
        };
    }
    Ok(Value::Array(match op {
        UnaryOp::Neg => unary_prim(interp, UnaryPrim::Neg, a)?,
        UnaryOp::Pos => a.clone(),
        UnaryOp::Invert => {
            if a.aval.dtype.is_inexact() {
                return Err(interp.raise(
                    "TypeError",
                    Code::DtypeMismatch,
                    format!(
                        "not does not accept dtype {} at position 0. Accepted dtypes at position 0 are subtypes of integer, bool.",
                        a.aval.dtype.name()
                    ),
                ));
            }
            apply1(interp, Prim::Unary(UnaryPrim::Not), std::slice::from_ref(a))?
        }
        UnaryOp::Not => return Ok(Value::Bool(!array_bool(interp, a, "not", None)?)),
    }))
}
