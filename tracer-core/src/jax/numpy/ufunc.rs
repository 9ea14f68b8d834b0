//! The ufunc table: every `jax.numpy` / `jax.scipy.special` / `jax.nn` function that is one
//! elementwise primitive is a row (function → primitive), and one generic function serves
//! them all with the dtype rule of the row's kind. Functions that are more than one
//! primitive are in elementwise.rs; `jax.lax`'s, which promote nothing, in lax.rs.

use super::*;

/// What a row binds: one primitive, with the dtype rule of its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ufunc {
    /// One operand `x`, through `unary_prim`: `promote_args_inexact` for the transcendental
    /// primitives, the identity for rounding an integer, a bool result for `isfinite`.
    Unary(UnaryPrim),
    /// Two operands (named as `binary_parameter_names` says), promoted and broadcast
    /// together, with lax's dtype rule for the bitwise primitives.
    Binary(BinaryPrim),
    /// Two operands, each made bool first (`x != 0`, as JAX's `_logical_op` does), then the
    /// bitwise primitive: `logical_and(1.5, 0.0)` is `False`, never a dtype error.
    Logical(BinaryPrim),
    /// Two operands `x1` and `x2`, promoted and broadcast; a bool result.
    Compare(CmpPrim),
}

use BinaryPrim as B;
use CmpPrim as C;
use JaxFn as F;
use Ufunc::{Binary, Compare, Logical, Unary};
use UnaryPrim as U;

/// The functions that are one elementwise primitive.
pub(super) const UFUNCS: &[(JaxFn, Ufunc)] = &[
    (F::Add, Binary(B::Add)),
    (F::Subtract, Binary(B::Sub)),
    (F::Multiply, Binary(B::Mul)),
    (F::Maximum, Binary(B::Max)),
    (F::Minimum, Binary(B::Min)),
    (F::Arctan2, Binary(B::Atan2)),
    // jnp.fmod is lax.rem (C's fmod: the sign of the dividend) after promotion; an integer
    // divisor of 0 becomes 1 first, which the integer `rem` kernel's 0 already gives.
    (F::Fmod, Binary(B::Rem)),
    (F::Nextafter, Binary(B::NextAfter)),
    (F::ScipyErf, Unary(U::Erf)),
    (F::ScipyErfc, Unary(U::Erfc)),
    (F::ScipyErfinv, Unary(U::ErfInv)),
    (F::ScipyGammaln, Unary(U::Lgamma)),
    (F::ScipyDigamma, Unary(U::Digamma)),
    (F::BitwiseAnd, Binary(B::And)),
    (F::LogicalAnd, Logical(B::And)),
    (F::LeftShift, Binary(B::ShiftLeft)),
    (F::BitwiseOr, Binary(B::Or)),
    (F::LogicalOr, Logical(B::Or)),
    (F::BitwiseXor, Binary(B::Xor)),
    (F::LogicalXor, Logical(B::Xor)),
    (F::Negative, Unary(U::Neg)),
    (F::Abs, Unary(U::Abs)),
    (F::Absolute, Unary(U::Abs)),
    (F::Sign, Unary(U::Sign)),
    (F::Floor, Unary(U::Floor)),
    (F::Ceil, Unary(U::Ceil)),
    (F::Rint, Unary(U::Round)),
    (F::Exp, Unary(U::Exp)),
    (F::Exp2, Unary(U::Exp2)),
    (F::Expm1, Unary(U::Expm1)),
    (F::Log, Unary(U::Log)),
    (F::Log1p, Unary(U::Log1p)),
    (F::Sqrt, Unary(U::Sqrt)),
    (F::Cbrt, Unary(U::Cbrt)),
    (F::Square, Unary(U::Square)),
    (F::Sin, Unary(U::Sin)),
    (F::Cos, Unary(U::Cos)),
    (F::Tan, Unary(U::Tan)),
    (F::Arcsin, Unary(U::Asin)),
    (F::Arccos, Unary(U::Acos)),
    (F::Arctan, Unary(U::Atan)),
    (F::Sinh, Unary(U::Sinh)),
    (F::Cosh, Unary(U::Cosh)),
    (F::Tanh, Unary(U::Tanh)),
    (F::NnTanh, Unary(U::Tanh)),
    (F::Arcsinh, Unary(U::Asinh)),
    (F::Arccosh, Unary(U::Acosh)),
    (F::Arctanh, Unary(U::Atanh)),
    (F::Isfinite, Unary(U::IsFinite)),
    (F::Equal, Compare(C::Eq)),
    (F::NotEqual, Compare(C::Ne)),
    (F::Less, Compare(C::Lt)),
    (F::LessEqual, Compare(C::Le)),
    (F::Greater, Compare(C::Gt)),
    (F::GreaterEqual, Compare(C::Ge)),
    (F::NnSigmoid, Unary(U::Logistic)),
];

/// The row of `f`, if it has one.
pub(super) fn lookup(f: JaxFn) -> Option<Ufunc> {
    UFUNCS.iter().find(|(g, _)| *g == f).map(|&(_, u)| u)
}

/// A row of the table applied to a call: its operands read (a `TypeError` naming the
/// missing one), then the primitive bound with its kind's dtype rule.
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    let Some(ufunc) = lookup(cx.f) else { return Ok(cx.unrouted()) };
    match ufunc {
        Unary(prim) => {
            let a = arr!(interp, cx, 0, "x");
            unary_prim(interp, prim, &a).map(Value::Array)
        }
        Binary(prim) => {
            let (first, second) = binary_parameter_names(cx.f.name());
            let a = arr!(interp, cx, 0, first);
            let b = arr!(interp, cx, 1, second);
            binary_prim(interp, prim, &a, &b).map(Value::Array)
        }
        Logical(prim) => {
            let (first, second) = binary_parameter_names(cx.f.name());
            let a = arr!(interp, cx, 0, first);
            let b = arr!(interp, cx, 1, second);
            let a = convert(interp, &a, DType::Bool, false)?;
            let b = convert(interp, &b, DType::Bool, false)?;
            binary_prim(interp, prim, &a, &b).map(Value::Array)
        }
        Compare(prim) => {
            let a = arr!(interp, cx, 0, "x1");
            let b = arr!(interp, cx, 1, "x2");
            compare_arrays(interp, prim, &a, &b).map(Value::Array)
        }
    }
}

/// The parameter names of a two-argument jnp function, as its `TypeError` for a missing
/// argument names them: JAX 0.10.2's ufuncs take `(x, y)`, the other binary functions
/// `(x1, x2)` (listed from the installed JAX by calling each with one argument).
pub(super) fn binary_parameter_names(name: &str) -> (&'static str, &'static str) {
    const X_Y: [&str; 20] = [
        "add",
        "subtract",
        "multiply",
        "maximum",
        "minimum",
        "greater",
        "less",
        "equal",
        "not_equal",
        "bitwise_and",
        "logical_and",
        "nextafter",
        "float_power",
        "left_shift",
        "greater_equal",
        "less_equal",
        "logical_or",
        "logical_xor",
        "bitwise_or",
        "bitwise_xor",
    ];
    if X_Y.contains(&name) {
        ("x", "y")
    } else {
        ("x1", "x2")
    }
}
