//! JAX's `check_arraylike`: most `jax.numpy` functions take arrays and scalars only, and a
//! Python list or tuple where an array goes is JAX's `TypeError` ("sum requires ndarray or
//! scalar arguments, got <class 'list'> at position 0."), raised before anything is traced.
//! NumPy (`np.*`) takes them, so the check is for `jax.numpy` alone. Which functions check
//! which arguments, and the name each gives, were read off JAX 0.10.2 (`jnp.abs([1.0])`
//! says `absolute`); functions that take sequences (`array`, `stack`, `array_equal`) or that
//! JAX rejects another way (`average`) are not listed.

use super::dispatch::{family, Family};
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::surface::JaxFn;

/// Which positional arguments JAX checks.
enum Checked {
    /// Every positional argument (the ufuncs and binary elementwise functions).
    All,
    /// The first `n`.
    First(usize),
}

/// The functions outside the ufunc table that check their arguments.
fn checked(f: JaxFn) -> Option<Checked> {
    use JaxFn as F;
    Some(match f {
        F::Divide | F::TrueDivide | F::FloorDivide | F::Mod | F::Remainder | F::Power | F::Hypot | F::Logaddexp | F::RightShift => {
            Checked::All
        }
        F::Allclose | F::Isclose => Checked::First(2),
        F::Dot | F::Matmul | F::Outer => Checked::First(2),
        F::Positive
        | F::Round
        | F::Trunc
        | F::Log2
        | F::Log10
        | F::Reciprocal
        | F::Deg2rad
        | F::Rad2deg
        | F::Isnan
        | F::Isinf
        | F::NanToNum
        | F::Real
        | F::Imag
        | F::Conj
        | F::LogicalNot
        | F::BitwiseNot
        | F::Invert
        | F::Where
        | F::Clip
        | F::Sum
        | F::Prod
        | F::Mean
        | F::Var
        | F::Std
        | F::Max
        | F::Min
        | F::Amax
        | F::Amin
        | F::All
        | F::Any
        | F::Argmax
        | F::Argmin
        | F::Cumsum
        | F::Cumprod
        | F::Nansum
        | F::Nanmean
        | F::Nanmax
        | F::Nanmin
        | F::Median
        | F::Nanmedian
        | F::Ptp
        | F::CountNonzero
        | F::Reshape
        | F::Transpose
        | F::Ravel
        | F::Squeeze
        | F::ExpandDims
        | F::Flip
        | F::Roll
        | F::Tile
        | F::Repeat
        | F::BroadcastTo
        | F::Pad
        | F::Diag
        | F::ZerosLike
        | F::OnesLike
        | F::FullLike
        | F::Sort
        | F::Argsort
        | F::Take => Checked::First(1),
        _ => return None,
    })
}

/// The name JAX's message gives `f`: its own, or the function it is an alias of.
fn jax_name(f: JaxFn) -> &'static str {
    use JaxFn as F;
    match f {
        F::Abs => "absolute",
        F::Divide => "true_divide",
        F::Mod => "remainder",
        F::Conj => "conjugate",
        F::Amax => "max",
        F::Amin => "min",
        _ => f.name(),
    }
}

/// JAX's `TypeError` when `f` is a `jax.numpy` function handed a list or tuple where it
/// checks for an array.
pub(super) fn check(interp: &mut Interp, f: JaxFn, args: &[Value]) -> PyResult<()> {
    if interp.jax.numpy_eager || !f.qualified_name().starts_with("jax.numpy.") {
        return Ok(());
    }
    let checked = match family(f) {
        Family::Ufunc => Checked::All,
        _ => match checked(f) {
            Some(c) => c,
            None => return Ok(()),
        },
    };
    let n = match checked {
        Checked::All => args.len(),
        Checked::First(n) => n.min(args.len()),
    };
    for (position, arg) in args[..n].iter().enumerate() {
        let class = match arg {
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            _ => continue,
        };
        let message = format!("{} requires ndarray or scalar arguments, got <class '{class}'> at position {position}.", jax_name(f));
        return Err(interp.raise("TypeError", Code::PythonException, message));
    }
    Ok(())
}
