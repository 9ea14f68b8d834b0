//! `jax.lax` functions bound as JAX 0.10.2's wrappers bind them (jax/_src/lax/lax.py,
//! slicing.py): no dtype promotion (a Python scalar is its own weak dtype, which must match
//! the other operands'), no rank broadcasting, and each shape or dtype error raised with
//! the class and the message of JAX's shape and dtype rules, the shape rule first. A case
//! whose outcome JAX leaves to XLA (a `slice` past the end, `select_n` with an integer
//! `which`, interior padding) has the right shape or is unknown, never a guessed value.

use super::*;

mod conv;
mod rules;
use rules::*;

/// The dtypes a primitive accepts, as its dtype rule names them in its message.
#[derive(Clone, Copy)]
pub(super) enum Accepts {
    /// `_float | _complex`.
    Inexact,
    /// `_float`.
    Floating,
    /// `_num`: `_int | _float | _complex`.
    Number,
    /// `abs`: `_signedint | _float | _complex`.
    SignedOrInexact,
    /// `_bool_or_int`.
    IntOrBool,
    /// `_int`.
    Integer,
    /// `_ordered`: `_int | _float | _bool`.
    Ordered,
    /// `_any`.
    Any,
}

impl Accepts {
    fn admits(self, d: DType) -> bool {
        match self {
            Accepts::Inexact => d.is_inexact(),
            Accepts::Floating => d.is_floating(),
            Accepts::Number => d.is_integer() || d.is_inexact(),
            Accepts::SignedOrInexact => d.is_signed_integer() || d.is_inexact(),
            Accepts::IntOrBool => d.is_integer() || d.is_bool(),
            Accepts::Integer => d.is_integer(),
            Accepts::Ordered => d.is_integer() || d.is_floating() || d.is_bool(),
            Accepts::Any => !d.is_key(),
        }
    }

    /// The type names as JAX 0.10.2 prints the set (checked against its messages).
    fn names(self) -> &'static str {
        match self {
            Accepts::Inexact => "floating, complexfloating",
            Accepts::Floating => "floating",
            Accepts::Number => "integer, floating, complexfloating",
            Accepts::SignedOrInexact => "floating, complexfloating, signedinteger",
            Accepts::IntOrBool => "integer, bool",
            Accepts::Integer => "integer",
            Accepts::Ordered => "integer, floating, bool",
            Accepts::Any => "integer, floating, complexfloating, bool",
        }
    }
}

/// The `jnp` function JAX's `check_same_dtypes` suggests for a primitive, if any.
fn jnp_equivalent(name: &str) -> Option<&'static str> {
    Some(match name {
        "add" => "add",
        "sub" => "subtract",
        "mul" => "multiply",
        "div" => "divide",
        "max" => "maximum",
        "min" => "minimum",
        "eq" => "equal",
        "ne" => "not_equal",
        "atan2" => "arctan2",
        "nextafter" => "nextafter",
        "shift_left" => "left_shift",
        "shift_right_logical" | "shift_right_arithmetic" => "right_shift",
        "concatenate" => "concatenate",
        "select" => "where",
        _ => return None,
    })
}

/// JAX's `check_same_dtypes(name, *avals)`.
fn check_same_dtypes(interp: &mut Interp, name: &str, arrays: &[&Rc<Array>]) -> PyResult<()> {
    let Some(first) = arrays.first() else { return Ok(()) };
    if arrays.iter().all(|a| a.aval.dtype == first.aval.dtype) {
        return Ok(());
    }
    let listed = arrays.iter().map(|a| a.aval.dtype.name()).collect::<Vec<_>>().join(", ");
    let tip = jnp_equivalent(name)
        .map(|j| format!(" (Tip: jnp.{j} is a similar function that does automatic type promotion on inputs)."))
        .unwrap_or_default();
    Err(interp.raise(
        "TypeError",
        Code::DtypeMismatch,
        format!("lax.{name} requires arguments to have the same dtypes, got {listed}.{tip}"),
    ))
}

/// The unary primitive of a `lax` function, and the dtypes it accepts.
pub(super) fn unary_of(f: JaxFn) -> Option<(UnaryPrim, Accepts)> {
    use Accepts as A;
    use JaxFn as F;
    use UnaryPrim as U;
    Some(match f {
        F::LaxNeg => (U::Neg, A::Number),
        F::LaxSign => (U::Sign, A::Number),
        F::LaxFloor => (U::Floor, A::Floating),
        F::LaxCeil => (U::Ceil, A::Floating),
        F::LaxRound => (U::Round, A::Floating),
        F::LaxIsFinite => (U::IsFinite, A::Floating),
        F::LaxAbs => (U::Abs, A::SignedOrInexact),
        F::LaxExp => (U::Exp, A::Inexact),
        F::LaxExp2 => (U::Exp2, A::Inexact),
        F::LaxExpm1 => (U::Expm1, A::Inexact),
        F::LaxLog => (U::Log, A::Inexact),
        F::LaxLog1p => (U::Log1p, A::Inexact),
        F::LaxTanh => (U::Tanh, A::Inexact),
        F::LaxLogistic => (U::Logistic, A::Inexact),
        F::LaxSin => (U::Sin, A::Inexact),
        F::LaxCos => (U::Cos, A::Inexact),
        F::LaxTan => (U::Tan, A::Inexact),
        F::LaxAsin => (U::Asin, A::Inexact),
        F::LaxAcos => (U::Acos, A::Inexact),
        F::LaxAtan => (U::Atan, A::Inexact),
        F::LaxSinh => (U::Sinh, A::Inexact),
        F::LaxCosh => (U::Cosh, A::Inexact),
        F::LaxAsinh => (U::Asinh, A::Inexact),
        F::LaxAcosh => (U::Acosh, A::Inexact),
        F::LaxAtanh => (U::Atanh, A::Inexact),
        F::LaxRsqrtAlias => (U::Sqrt, A::Inexact),
        F::LaxRsqrt => (U::Rsqrt, A::Inexact),
        F::LaxCbrt => (U::Cbrt, A::Floating),
        F::LaxSquare => (U::Square, A::Number),
        F::LaxErf => (U::Erf, A::Floating),
        F::LaxErfc => (U::Erfc, A::Floating),
        F::LaxErfInv => (U::ErfInv, A::Floating),
        F::LaxLgamma => (U::Lgamma, A::Floating),
        F::LaxDigamma => (U::Digamma, A::Floating),
        F::LaxBitwiseNot => (U::Not, A::IntOrBool),
        _ => return None,
    })
}

/// The binary primitive of a `lax` function and the dtypes it accepts at each position.
pub(super) enum BinaryKind {
    Arith(BinaryPrim, Accepts, Accepts),
    Compare(CmpPrim, &'static str, Accepts),
}

pub(super) fn binary_of(f: JaxFn) -> Option<BinaryKind> {
    use Accepts as A;
    use BinaryKind::{Arith, Compare};
    use BinaryPrim as B;
    use JaxFn as F;
    Some(match f {
        F::LaxAdd => Arith(B::Add, A::Number, A::Number),
        F::LaxSub => Arith(B::Sub, A::Number, A::Number),
        F::LaxMul => Arith(B::Mul, A::Number, A::Number),
        F::LaxDiv => Arith(B::Div, A::Number, A::Number),
        F::LaxRem => Arith(B::Rem, A::Number, A::Number),
        F::LaxMax => Arith(B::Max, A::Any, A::Any),
        F::LaxMin => Arith(B::Min, A::Any, A::Any),
        F::LaxPow => Arith(B::Pow, A::Inexact, A::Number),
        F::LaxAtan2 => Arith(B::Atan2, A::Inexact, A::Inexact),
        F::LaxNextafter => Arith(B::NextAfter, A::Floating, A::Floating),
        F::LaxBitwiseAnd => Arith(B::And, A::IntOrBool, A::IntOrBool),
        F::LaxBitwiseOr => Arith(B::Or, A::IntOrBool, A::IntOrBool),
        F::LaxBitwiseXor => Arith(B::Xor, A::IntOrBool, A::IntOrBool),
        F::LaxShiftLeft => Arith(B::ShiftLeft, A::Integer, A::Integer),
        F::LaxShiftRightArithmetic => Arith(B::ShiftRightArithmetic, A::Integer, A::Integer),
        F::LaxShiftRightLogical => Arith(B::ShiftRightLogical, A::Integer, A::Integer),
        F::LaxEq => Compare(CmpPrim::Eq, "eq", A::Any),
        F::LaxNe => Compare(CmpPrim::Ne, "ne", A::Any),
        F::LaxLt => Compare(CmpPrim::Lt, "lt", A::Ordered),
        F::LaxLe => Compare(CmpPrim::Le, "le", A::Ordered),
        F::LaxGt => Compare(CmpPrim::Gt, "gt", A::Ordered),
        F::LaxGe => Compare(CmpPrim::Ge, "ge", A::Ordered),
        _ => return None,
    })
}

/// An array argument, or `None` (the result is then unknown) for a value that is not one.
fn array_arg(interp: &mut Interp, f: JaxFn, p: &Args, i: usize, name: &str) -> PyResult<Option<Rc<Array>>> {
    let Some(v) = p.get(i, name) else {
        return Err(interp.type_error(format!("{}() missing 1 required positional argument: '{name}'", f.name())));
    };
    Ok(match operand(interp, v)? {
        Operand::Array(a) if !a.aval.dtype.is_key() => Some(a),
        _ => None,
    })
}

/// A static integer argument (`None` when it is something else).
fn int_arg(p: &Args, i: usize, name: &str) -> Option<i64> {
    p.get(i, name).and_then(crate::interp::ops::as_int)
}

/// A sequence of static integers (`None` when it is something else).
fn ints_arg(interp: &mut Interp, p: &Args, i: usize, name: &str) -> PyResult<Option<Vec<i64>>> {
    match p.get(i, name) {
        Some(v @ (Value::Tuple(_) | Value::List(_))) => Ok(interp.iterate(v)?.iter().map(crate::interp::ops::as_int).collect()),
        _ => Ok(None),
    }
}

/// A Python tuple of integers as `str` prints it.
fn int_tuple_text(items: &[i64]) -> String {
    match items {
        [one] => format!("({one},)"),
        _ => format!("({})", items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

fn unknown(f: JaxFn) -> Value {
    Value::opaque(format!("lax.{}", f.name()))
}

/// Binds `prim` with a result whose values are not computed (a case JAX leaves to XLA).
fn not_computed(interp: &mut Interp, f: JaxFn, inputs: &[Rc<Array>], aval: Aval) -> PyResult<Value> {
    apply1(interp, Prim::opaque(f.name(), aval), inputs).map(Value::Array)
}

pub(super) fn call(interp: &mut Interp, f: JaxFn, p: &Args) -> PyResult<Value> {
    use JaxFn as F;
    macro_rules! arr {
        ($i:expr, $name:expr) => {
            match array_arg(interp, f, p, $i, $name)? {
                Some(a) => a,
                None => return Ok(unknown(f)),
            }
        };
    }
    if let Some((prim, accepts)) = unary_of(f) {
        let x = arr!(0, "x");
        return unary(interp, f, prim, accepts, &x, p);
    }
    if let Some(kind) = binary_of(f) {
        let x = arr!(0, "x");
        let y = arr!(1, "y");
        return binary(interp, kind, &x, &y).map(Value::Array);
    }
    match f {
        F::LaxReciprocal => {
            // `integer_pow(x, -1)`.
            let x = arr!(0, "x");
            if !x.aval.dtype.is_inexact() {
                let message = format!("Integers cannot be raised to negative powers, got integer_pow({}, -1)", x.aval.long());
                return Err(interp.raise("TypeError", Code::DtypeMismatch, message));
            }
            apply1(interp, Prim::IntegerPow(-1), std::slice::from_ref(&x)).map(Value::Array)
        }
        F::LaxSelectN => select_n(interp, f, p),
        F::LaxSlice => {
            let x = arr!(0, "operand");
            let (Some(start), Some(limit)) = (ints_arg(interp, p, 1, "start_indices")?, ints_arg(interp, p, 2, "limit_indices")?) else {
                return Ok(unknown(f));
            };
            let strides = match p.get(3, "strides") {
                None => Some(vec![1; start.len()]),
                Some(_) => ints_arg(interp, p, 3, "strides")?,
            };
            let Some(strides) = strides else { return Ok(unknown(f)) };
            slice(interp, f, &x, &start, &limit, &strides)
        }
        F::LaxSliceInDim | F::LaxIndexInDim => {
            let x = arr!(0, "operand");
            let nd = x.aval.ndim() as i64;
            let axis = int_arg(p, if f == F::LaxSliceInDim { 4 } else { 2 }, "axis").unwrap_or(0);
            if axis < -nd || axis >= nd {
                return Ok(unknown(f));
            }
            let ax = if axis < 0 { axis + nd } else { axis } as usize;
            let n = x.aval.shape[ax] as i64;
            let wrap = |i: i64| if i < 0 { i + n } else { i };
            let mut start = vec![0; x.aval.ndim()];
            let mut limit: Vec<i64> = x.aval.shape.iter().map(|&d| d as i64).collect();
            let mut strides = vec![1; x.aval.ndim()];
            if f == F::LaxIndexInDim {
                let Some(index) = int_arg(p, 1, "index") else { return Ok(unknown(f)) };
                let i = wrap(index);
                if !(0..n).contains(&i) {
                    let message = format!("index {index} is out of bounds for axis {axis} with size {n}");
                    return Err(interp.raise("IndexError", Code::ShapeMismatch, message));
                }
                start[ax] = i;
                limit[ax] = i + 1;
                let one = slice(interp, f, &x, &start, &limit, &strides)?;
                let keepdims = match p.get(3, "keepdims") {
                    Some(v) => interp.truthy(v)?,
                    None => true,
                };
                return match one {
                    Value::Array(a) if !keepdims => squeeze(interp, &a, &[ax]).map(Value::Array),
                    other => Ok(other),
                };
            }
            let bound = |v: Option<&Value>, default: i64| match v {
                None => Some(default),
                Some(v) => crate::interp::ops::as_int(v).map(wrap),
            };
            let (Some(lo), Some(hi)) = (bound(p.get(1, "start_index"), 0), bound(p.get(2, "limit_index"), n)) else {
                return Ok(unknown(f));
            };
            let Some(stride) = (match p.get(3, "stride") {
                None => Some(1),
                Some(v) => crate::interp::ops::as_int(v),
            }) else {
                return Ok(unknown(f));
            };
            start[ax] = lo;
            limit[ax] = hi;
            strides[ax] = stride;
            slice(interp, f, &x, &start, &limit, &strides)
        }
        F::LaxDynamicIndexInDim => {
            // `dynamic_slice_in_dim(operand, index, 1, axis)`, squeezed unless `keepdims`.
            let (Some(x), Some(index)) = (p.get(0, "operand"), p.get(1, "index")) else { return Ok(unknown(f)) };
            let axis = p.get(2, "axis").cloned().unwrap_or(Value::Int(0));
            let in_range = |a: &Rc<Array>| crate::interp::ops::as_int(&axis).is_some_and(|ax| ax >= 0 && (ax as usize) < a.aval.ndim());
            if !matches!(operand(interp, x)?, Operand::Array(a) if in_range(&a)) {
                return Ok(unknown(f));
            }
            let args = [x.clone(), index.clone(), Value::Int(1), axis.clone()];
            let kwargs = Kwargs::new();
            let slice = super::call(interp, F::LaxDynamicSliceInDim, args.to_vec(), kwargs)?;
            let keepdims = match p.get(3, "keepdims") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            match (slice, crate::interp::ops::as_int(&axis)) {
                (Value::Array(a), Some(ax)) if !keepdims => squeeze(interp, &a, &[ax as usize]).map(Value::Array),
                (other, _) => Ok(other),
            }
        }
        F::LaxConcatenate => {
            let Some(list @ (Value::Tuple(_) | Value::List(_) | Value::Array(_))) = p.get(0, "operands") else { return Ok(unknown(f)) };
            let Some(arrays) = array_list(interp, list)? else { return Ok(unknown(f)) };
            let Some(dimension) = int_arg(p, 1, "dimension") else { return Ok(unknown(f)) };
            lax_concatenate(interp, &arrays, dimension)
        }
        F::LaxReshape => {
            let x = arr!(0, "operand");
            let Some(sizes) = ints_arg(interp, p, 1, "new_sizes")? else { return Ok(unknown(f)) };
            if sizes.iter().any(|&s| s < 0) {
                let message = format!("reshape new_sizes must all be positive, got {}.", int_tuple_text(&sizes));
                return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
            }
            let sizes: Vec<usize> = sizes.iter().map(|&s| s as usize).collect();
            if sizes.iter().fold(1u128, |n, &s| n.saturating_mul(s as u128)) != x.aval.size() {
                // JAX's error here comes from XLA's verifier, with source locations.
                return Ok(unknown(f));
            }
            let x = match p.get(2, "dimensions") {
                None => x,
                Some(_) => {
                    let Some(perm) = permutation(interp, p, 2, "dimensions", x.aval.ndim())? else { return Ok(unknown(f)) };
                    products::permute(interp, &x, perm)?
                }
            };
            reshape_raw(interp, &x, &sizes).map(Value::Array)
        }
        F::LaxTranspose => {
            let x = arr!(0, "operand");
            let Some(perm) = ints_arg(interp, p, 1, "permutation")? else { return Ok(unknown(f)) };
            let nd = x.aval.ndim();
            if perm.iter().any(|&d| d < 0) {
                return Ok(unknown(f));
            }
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            if sorted != (0..nd as i64).collect::<Vec<_>>() {
                let message = format!(
                    "transpose permutation isn't a permutation of operand dimensions, got permutation {} for operand shape {}.",
                    int_tuple_text(&perm),
                    x.aval.shape_tuple()
                );
                return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
            }
            products::permute(interp, &x, perm.iter().map(|&d| d as usize).collect()).map(Value::Array)
        }
        F::LaxRev => {
            let x = arr!(0, "operand");
            let Some(dims) = ints_arg(interp, p, 1, "dimensions")? else { return Ok(unknown(f)) };
            let nd = x.aval.ndim() as i64;
            let mut unique = dims.clone();
            unique.sort_unstable();
            unique.dedup();
            if unique.len() != dims.len() {
                let message = format!("rev dimensions must be unique, got {}.", int_tuple_text(&dims));
                return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
            }
            if dims.iter().any(|&d| d < 0) {
                return Ok(unknown(f));
            }
            if dims.iter().any(|&d| d >= nd) {
                let message = format!(
                    "rev dimensions must all be less than operand ndim, got dimensions {} for operand ndim {nd}.",
                    int_tuple_text(&dims)
                );
                return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
            }
            let dimensions: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
            apply1(interp, Prim::Rev { dimensions }, std::slice::from_ref(&x)).map(Value::Array)
        }
        F::LaxSqueeze => {
            let x = arr!(0, "array");
            let Some(dims) = ints_arg(interp, p, 1, "dimensions")? else { return Ok(unknown(f)) };
            let mut axes = Vec::with_capacity(dims.len());
            for d in dims {
                axes.push(normalize_axis(interp, d, x.aval.ndim())?);
            }
            axes.sort_unstable();
            let text = int_tuple_text(&axes.iter().map(|&a| a as i64).collect::<Vec<_>>());
            if axes.windows(2).any(|w| w[0] == w[1]) {
                return Err(interp.raise("ValueError", Code::ShapeMismatch, format!("dimensions are not unique: {text}")));
            }
            if axes.iter().any(|&a| x.aval.shape[a] != 1) {
                let message = format!(
                    "cannot select an axis to squeeze out which has size not equal to one, got shape={} and dimensions={text}",
                    x.aval.shape_tuple()
                );
                return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
            }
            squeeze(interp, &x, &axes).map(Value::Array)
        }
        F::LaxExpandDims => {
            let x = arr!(0, "array");
            let Some(dims) = ints_arg(interp, p, 1, "dimensions")? else { return Ok(unknown(f)) };
            let out_nd = x.aval.ndim() + dims.len();
            let mut axes = Vec::with_capacity(dims.len());
            for d in dims {
                axes.push(normalize_axis(interp, d, out_nd)?);
            }
            let mut unique = axes.clone();
            unique.sort_unstable();
            unique.dedup();
            if unique.len() != axes.len() {
                let text = int_tuple_text(&axes.iter().map(|&a| a as i64).collect::<Vec<_>>());
                return Err(interp.raise("ValueError", Code::ShapeMismatch, format!("repeated axis in lax.expand_dims: {text}")));
            }
            let mut shape = x.aval.shape.to_vec();
            for &a in &unique {
                shape.insert(a, 1);
            }
            let kept: Vec<usize> = (0..out_nd).filter(|d| !unique.contains(d)).collect();
            let prim = Prim::BroadcastInDim { shape: shape.clone(), broadcast_dimensions: kept };
            apply1(interp, prim, std::slice::from_ref(&x)).map(Value::Array)
        }
        F::LaxBroadcast | F::LaxBroadcastToRank => {
            let x = arr!(0, if f == F::LaxBroadcast { "operand" } else { "x" });
            let sizes = if f == F::LaxBroadcast {
                match ints_arg(interp, p, 1, "sizes")? {
                    Some(s) if s.iter().all(|&d| d >= 0) => s.iter().map(|&d| d as usize).collect(),
                    _ => return Ok(unknown(f)),
                }
            } else {
                let Some(rank) = int_arg(p, 1, "rank") else { return Ok(unknown(f)) };
                // JAX builds the shape `(1,) * (rank - ndim)` in Python first.
                let added = rank.saturating_sub(x.aval.ndim() as i64).max(0) as u128;
                if !interp.afford(added * crate::interp::memory::VALUE_BYTES, "a shape of that many dimensions")? {
                    return Ok(unknown(f));
                }
                vec![1; added as usize]
            };
            let shape: Vec<usize> = sizes.iter().chain(x.aval.shape.iter()).copied().collect();
            broadcast_to_shape(interp, &x, &shape).map(Value::Array)
        }
        F::LaxFull | F::LaxFullLike => {
            let (shape, dtype, weak_default) = if f == F::LaxFull {
                let Some(v @ (Value::Tuple(_) | Value::List(_) | Value::Int(_))) = p.get(0, "shape") else { return Ok(unknown(f)) };
                let Some(shape) = shape_arg(interp, v)? else { return Ok(unknown(f)) };
                (shape, None, None)
            } else {
                let x = arr!(0, "x");
                let shape = match p.get(3, "shape") {
                    None => x.aval.shape.to_vec(),
                    Some(v) => match shape_arg(interp, v)? {
                        Some(s) => s,
                        None => return Ok(unknown(f)),
                    },
                };
                (shape, Some(x.aval.dtype), Some(x.aval.weak))
            };
            let fill = arr!(1, "fill_value");
            if fill.aval.ndim() != 0 {
                let message =
                    format!("{} must be called with scalar fill_value, got fill_value.shape {}.", f.name(), fill.aval.shape_tuple());
                return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
            }
            let requested = dtype_arg(interp, p.get(2, "dtype"))?.map(|d| dtypes::canonicalize(d, cfg(interp)));
            // `full`: the fill value's own dtype and weak type unless a dtype is given;
            // `full_like`: `x`'s dtype, weak when `x` is and no dtype is given.
            let (dtype, weak) = match (requested, dtype, weak_default) {
                (Some(d), _, _) => (d, false),
                (None, Some(d), Some(w)) => (d, w),
                _ => (fill.aval.dtype, fill.aval.weak),
            };
            let fill = convert(interp, &fill, dtype, weak)?;
            broadcast_to_shape(interp, &fill, &shape).map(Value::Array)
        }
        F::LaxCollapse => {
            let x = arr!(0, "operand");
            let nd = x.aval.ndim() as i64;
            let Some(start) = int_arg(p, 1, "start_dimension") else { return Ok(unknown(f)) };
            let stop = match p.get(2, "stop_dimension") {
                None => Some(nd),
                Some(v) => crate::interp::ops::as_int(v),
            };
            let Some(stop) = stop else { return Ok(unknown(f)) };
            let (start, stop) = (if start < 0 { start + nd } else { start }, if stop < 0 { stop + nd } else { stop });
            if !(0 <= start && start <= stop && stop <= nd) {
                return Ok(unknown(f));
            }
            let (start, stop) = (start as usize, stop as usize);
            let s = &x.aval.shape;
            let mut shape: Vec<usize> = s[..start].to_vec();
            shape.push(s[start..stop].iter().product());
            shape.extend_from_slice(&s[stop..]);
            reshape_raw(interp, &x, &shape).map(Value::Array)
        }
        F::LaxPad => pad(interp, f, p),
        F::LaxReduceSum | F::LaxReduceMax | F::LaxReduceMin | F::LaxReduceProd | F::LaxReduceAnd | F::LaxReduceOr => {
            let x = arr!(0, "operand");
            let Some(axes) = ints_arg(interp, p, 1, "axes")? else { return Ok(unknown(f)) };
            lax_reduce(interp, f, &x, &axes)
        }
        F::LaxArgmax | F::LaxArgmin => {
            let x = arr!(0, "operand");
            let Some(axis) = int_arg(p, 1, "axis") else { return Ok(unknown(f)) };
            let Some(index_dtype) = dtype_arg(interp, p.get(2, "index_dtype"))? else { return Ok(unknown(f)) };
            let nd = x.aval.ndim();
            if axis < 0 || axis >= nd as i64 {
                let message = format!("Invalid axis {axis} for operand shape {}", x.aval.shape_tuple());
                return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
            }
            let ax = axis as usize;
            if x.aval.shape[ax] == 0 {
                let message =
                    format!("argmin and argmax require non-empty reduced dimension. operand.shape={} axis={ax}", x.aval.shape_tuple());
                return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
            }
            if !index_dtype.is_integer() {
                let message = format!("index_dtype must be an integer type, but got {}", index_dtype.name());
                return Err(interp.raise("TypeError", Code::DtypeMismatch, message));
            }
            let index_dtype = dtypes::canonicalize(index_dtype, cfg(interp));
            let op = if f == F::LaxArgmax { ArgOp::Max } else { ArgOp::Min };
            apply1(interp, Prim::ArgReduce { op, axis: ax, index_dtype }, std::slice::from_ref(&x)).map(Value::Array)
        }
        F::LaxSort => {
            let Some(v) = p.get(0, "operand") else { return Ok(unknown(f)) };
            let sequence = matches!(v, Value::Tuple(_) | Value::List(_));
            let operands = if sequence {
                match array_list(interp, v)? {
                    Some(a) => a,
                    None => return Ok(unknown(f)),
                }
            } else {
                match v {
                    Value::Array(a) => vec![a.clone()],
                    _ => return Ok(unknown(f)),
                }
            };
            let num_keys = int_arg(p, 3, "num_keys").unwrap_or(1);
            let stable = match p.get(2, "is_stable") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            if operands.is_empty() {
                return Err(interp.type_error("Sort requires at least one operand"));
            }
            if !sequence && num_keys != 1 {
                return Err(interp.value_error(format!("num_keys={num_keys} must equal 1 for a single operand.")));
            }
            if num_keys < 1 || num_keys as usize > operands.len() {
                let message = format!("num_keys={num_keys} must be between 1 and len(operand)={}", operands.len());
                return Err(interp.value_error(message));
            }
            let dimension = int_arg(p, 1, "dimension").unwrap_or(-1);
            let sorted = sort(interp, f, &operands, num_keys as usize, dimension, stable)?;
            Ok(if sequence { Value::tuple(sorted) } else { sorted.into_iter().next().unwrap_or(Value::None) })
        }
        F::LaxConvGeneralDilated | F::LaxConv | F::LaxConvWithGeneralPadding => conv::call(interp, f, p),
        F::LaxSortKeyVal => {
            let keys = arr!(0, "keys");
            let values = arr!(1, "values");
            let stable = match p.get(3, "is_stable") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            let dimension = int_arg(p, 2, "dimension").unwrap_or(-1);
            Ok(Value::tuple(sort(interp, f, &[keys, values], 1, dimension, stable)?))
        }
        _ => Ok(unknown(f)),
    }
}
