//! Python's integer and float-to-integer arithmetic where Rust's would overflow, saturate or
//! differ: `abs`, `round`, `int(float)`, three-argument `pow`, `chr`. An integer past `i64` is
//! an unknown value (the interpreter holds no big integers), never a wrapped or clamped one.

use super::value::Value;

/// A Python exception (class and message), as `ops::OpError`.
pub type PyError = (&'static str, String);

fn big() -> Value {
    Value::opaque("an integer too large to model")
}

/// `abs(i)`: `abs(-2**63)` is past `i64`.
pub fn abs(i: i64) -> Value {
    i.checked_abs().map(Value::Int).unwrap_or_else(big)
}

/// `int(f)` and `round(f)`'s integer: an integer past `i64` is unknown.
pub fn float_to_int(f: f64) -> Result<Value, PyError> {
    if f.is_nan() {
        return Err(("ValueError", "cannot convert float NaN to integer".into()));
    }
    if f.is_infinite() {
        return Err(("OverflowError", "cannot convert float infinity to integer".into()));
    }
    // Every f64 in [-2**63, 2**63) converts exactly.
    if (-9.223_372_036_854_775_808e18..9.223_372_036_854_775_808e18).contains(&f) {
        Ok(Value::Int(f as i64))
    } else {
        Ok(big())
    }
}

/// `round(i, ndigits)` for a negative `ndigits`: to a multiple of `10**-ndigits`, halves to
/// even, as Python rounds integers.
pub fn round_int(i: i64, ndigits: i64) -> Value {
    if ndigits >= 0 {
        return Value::Int(i);
    }
    // 10**39 is past i128, and past twice any i64: everything rounds to 0 there.
    let Some(step) = u32::try_from(ndigits.unsigned_abs()).ok().filter(|k| *k <= 38).map(|k| 10i128.pow(k)) else {
        return Value::Int(0);
    };
    let i = i128::from(i);
    let (q, r) = (i.div_euclid(step), i.rem_euclid(step));
    let up = 2 * r > step || (2 * r == step && q % 2 != 0);
    let rounded = (q + i128::from(up)) * step;
    i64::try_from(rounded).map(Value::Int).unwrap_or_else(|_| big())
}

/// `round(f, ndigits)`: past the float's precision either way it is `f` itself or a zero.
pub fn round_float(f: f64, ndigits: i64, round_half_even: impl Fn(f64) -> f64) -> f64 {
    if !f.is_finite() || ndigits > 308 {
        return f;
    }
    if ndigits < -308 {
        return 0.0 * f;
    }
    let m = 10f64.powi(ndigits as i32);
    let scaled = f * m;
    if !scaled.is_finite() {
        return f;
    }
    round_half_even(scaled) / m
}

/// `pow(base, exp, modulus)` on integers (a negative `exp` is a modular inverse's power).
pub fn pow_mod(base: i64, exp: i64, modulus: i64) -> Result<Value, PyError> {
    if modulus == 0 {
        return Err(("ValueError", "pow() 3rd argument cannot be 0".into()));
    }
    let m = i128::from(modulus).abs();
    let mut b = i128::from(base).rem_euclid(m);
    if exp < 0 {
        b = inverse(b, m).ok_or(("ValueError", "base is not invertible for the given modulus".to_string()))?;
    }
    let mut e = exp.unsigned_abs();
    let mut result: i128 = 1 % m;
    while e > 0 {
        if e & 1 == 1 {
            result = result * b % m;
        }
        b = b * b % m;
        e >>= 1;
    }
    // The result has the modulus's sign, as Python's `%` gives it.
    if modulus < 0 && result != 0 {
        result -= m;
    }
    i64::try_from(result).map(Value::Int).map_err(|_| ("OverflowError", "pow() result out of range".to_string()))
}

/// The inverse of `a` modulo `m` (`0 <= a < m`), by the extended Euclidean algorithm.
fn inverse(a: i128, m: i128) -> Option<i128> {
    let (mut old_r, mut r) = (a, m);
    let (mut old_s, mut s) = (1i128, 0i128);
    while r != 0 {
        let q = old_r / r;
        (old_r, r) = (r, old_r - q * r);
        (old_s, s) = (s, old_s - q * s);
    }
    (old_r == 1).then(|| old_s.rem_euclid(m))
}

/// `chr(i)`: `None` for a surrogate (a Python string can hold one; a Rust one cannot).
pub fn chr(i: i64) -> Result<Option<char>, PyError> {
    if !(0..0x110000).contains(&i) {
        return Err(("ValueError", "chr() arg not in range(0x110000)".into()));
    }
    Ok(char::from_u32(i as u32))
}

/// Whether `s` is a decimal integer literal as `int()` reads it (one too large for `i64` is
/// an unknown value, not a `ValueError`).
pub fn is_decimal_literal(s: &str) -> bool {
    let s = s.trim();
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_')
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn int(v: Value) -> Option<i64> {
        match v {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    fn as_cpython_computes_them() {
        // Each expected value printed by CPython 3.11.
        assert_eq!(int(pow_mod(3, 4, 5).unwrap_or(big())), Some(1));
        assert_eq!(int(pow_mod(3, -1, 7).unwrap_or(big())), Some(5));
        assert_eq!(int(pow_mod(-9223372036854775808, 2, 9223372036854775807).unwrap_or(big())), Some(1));
        assert_eq!(int(pow_mod(2, 10, -7).unwrap_or(big())), Some(-5));
        assert!(pow_mod(2, -1, 4).is_err());
        assert_eq!(int(round_int(9223372036854775807, -18)), Some(9000000000000000000));
        assert_eq!(int(round_int(25, -1)), Some(20));
        assert_eq!(int(round_int(35, -1)), Some(40));
        assert_eq!(int(round_int(-25, -1)), Some(-20));
        assert_eq!(int(round_int(-9223372036854775808, -1)), None);
        assert_eq!(int(abs(-9223372036854775808)), None);
        assert_eq!(int(float_to_int(1e19).unwrap_or(Value::Int(0))), None);
        assert_eq!(int(float_to_int(-9.223372036854775808e18).unwrap_or(Value::Int(0))), Some(i64::MIN));
        assert!(chr(0x110000).is_err() && chr(-1).is_err());
        assert!(is_decimal_literal(" -1_000 ") && !is_decimal_literal("1__0") && !is_decimal_literal("0x10"));
    }

    crate::unit_tests::list![as_cpython_computes_them];
}
