//! The elementwise primitives' CPU kernels on one element: `unary_fn`, `binary_fn` (in f64,
//! the caller rounds to the dtype), with XLA's own `exp`, `tanh` and `erfc` where JAX's values
//! differ from the correctly rounded ones, and the helpers the kernels on arrays share.

use crate::jax::dtypes::DType;
use crate::jax::eval::{flush_f32, in_precision, ln2, round_to};
use crate::jax::ir::{BinaryPrim, UnaryPrim};

/// The elementwise function of a binary primitive, in f64 (the caller rounds the result to
/// the dtype); `int` when the operands are integers or bools. `None` without a kernel.
pub(crate) fn binary_fn(b: BinaryPrim, int: bool) -> Option<fn(f64, f64) -> f64> {
    Some(match (b, int) {
        (BinaryPrim::Add, _) => |x, y| x + y,
        (BinaryPrim::Sub, _) => |x, y| x - y,
        (BinaryPrim::Mul, _) => |x, y| x * y,
        (BinaryPrim::Div, false) => |x, y| x / y,
        // lax.div on integers rounds toward zero.
        (BinaryPrim::Div, true) => |x: f64, y: f64| if y == 0.0 { 0.0 } else { (x / y).trunc() },
        (BinaryPrim::Rem, false) => |x: f64, y: f64| x % y,
        (BinaryPrim::Rem, true) => |x: f64, y: f64| if y == 0.0 { 0.0 } else { x % y },
        (BinaryPrim::Pow, _) => f64::powf,
        (BinaryPrim::Max, _) => max_f64,
        (BinaryPrim::Min, _) => min_f64,
        (BinaryPrim::Atan2, _) => f64::atan2,
        (BinaryPrim::And, _) => |x, y| ((x as i64) & (y as i64)) as f64,
        (BinaryPrim::Or, _) => |x, y| ((x as i64) | (y as i64)) as f64,
        (BinaryPrim::Xor, _) => |x, y| ((x as i64) ^ (y as i64)) as f64,
        (BinaryPrim::ShiftLeft, _) => |x, y| ((x as i64).wrapping_shl(y as u32)) as f64,
        (BinaryPrim::ShiftRightArithmetic, _) => |x, y| ((x as i64).wrapping_shr(y as u32)) as f64,
        // Bound for unsigned operands only (jnp.right_shift), whose values are >= 0.
        (BinaryPrim::ShiftRightLogical, _) => {
            |x: f64, y: f64| if (0.0..64.0).contains(&y) { ((x as u64) >> (y as u32)) as f64 } else { 0.0 }
        }
        (BinaryPrim::NextAfter | BinaryPrim::Polygamma | BinaryPrim::Logaddexp, _) => return None,
    })
}

/// `nextafter` on a 16-bit float held in `f64` (every such value is exact there), stepping
/// its bit pattern as XLA's `NextAfter` does: NaN if either is NaN, `y` when they are equal,
/// the smallest subnormal signed like `y` from zero; the caller rounds (and flushes) to the
/// dtype.
pub(crate) fn next_after_16(x: f64, y: f64, to_bits: impl Fn(f64) -> u16, from_bits: impl Fn(u16) -> f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == y {
        return y;
    }
    if x == 0.0 {
        return from_bits(1).copysign(y);
    }
    // Sign and magnitude: a larger magnitude is a larger pattern of the same sign.
    let bits = to_bits(x);
    let away_from_zero = (x < y) == (x > 0.0);
    from_bits(if away_from_zero { bits + 1 } else { bits - 1 })
}

/// Whether XLA computes a division whose divisor has `divisor_shape` as a multiplication by
/// its reciprocal: its algebraic simplifier rewrites `x / broadcast(s)` to
/// `x * broadcast(1 / s)` for a scalar `s` broadcast to the output's shape (jnp's `x / 7`,
/// and `mean`'s division of a sum by the count). A divisor of the output's shape divides.
pub(crate) fn divides_by_reciprocal(divisor_shape: &[usize], out_shape: &[usize]) -> bool {
    divisor_shape != out_shape && divisor_shape.iter().all(|&d| d == 1)
}

/// `1 / y` as XLA computes it for that rewrite: in float16 for float16 (so
/// `jnp.arange(10, dtype=jnp.float16) / 7` holds 0.714 where 5/7 rounds to 0.7144), in
/// float32 for bfloat16 (which XLA widens first) and float32, in float64 for float64.
pub(crate) fn reciprocal(y: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F64 | DType::F16 => round_to(1.0 / y, dtype),
        _ => round_to(1.0 / y, DType::F32),
    }
}

/// `lax.max`: NaN propagates, and -0.0 orders below 0.0.
pub(crate) fn max_f64(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == y {
        if x.is_sign_positive() {
            x
        } else {
            y
        }
    } else {
        x.max(y)
    }
}

/// `lax.min`: NaN propagates, and -0.0 orders below 0.0.
pub(crate) fn min_f64(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == y {
        if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else {
        x.min(y)
    }
}

/// XLA's float32 `exp` on CPU (the Cephes polynomial it substitutes for `llvm.exp.f32`):
/// x clamped to [-87.8, 88.8], n = floor(x·log2(e) + ½) clamped to [-127, 128], the
/// Cody-Waite reduction r = x - n·0.693359375 - n·(-2.12194440e-4), a degree-5 polynomial
/// in r, and the result scaled by 2^n, with subnormal results flushed to zero as XLA's CPU
/// code runs. Every multiply-add is fused, as LLVM contracts them. Bit for bit what JAX
/// 0.10.2 gives on 8,000 points of [-87, 88] and [-2, 2]; the correctly rounded `exp` is an
/// ulp away on one point in ten, which a cancellation (`1 - sigmoid(x)`) multiplies.
fn xla_exp_f32(x: f32) -> f32 {
    #[allow(clippy::excessive_precision)]
    const P: [f32; 6] = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1];
    if x.is_nan() {
        return x;
    }
    let x = x.clamp(-87.8, 88.8);
    #[allow(clippy::excessive_precision)]
    let n = x.mul_add(1.44269504088896341, 0.5).floor().clamp(-127.0, 128.0);
    let r = (-0.693359375f32).mul_add(n, x);
    #[allow(clippy::excessive_precision)]
    let r = 2.12194440e-4f32.mul_add(n, r);
    let z = P[2..].iter().fold(r.mul_add(P[0], P[1]), |acc, &k| acc.mul_add(r, k));
    let z = 1.0 + z.mul_add(r * r, r);
    // z · 2^n, with 2^128 taken as 2 · 2^127 and 2^-127 as 0.
    let e = n as i32;
    let scaled = match e {
        -127 => 0.0,
        128 => z * 2.0 * f32::from_bits(254 << 23),
        _ => z * f32::from_bits(((e + 127) as u32) << 23),
    };
    flush_f32(scaled)
}

/// XLA's float32 `erfc` (CHLO's decomposition, as JAX 0.10.2 compiles it for the CPU): for
/// |x| < 1, 1 - x·P(x²) with a degree-6 polynomial; above, exp(-x²)/|x| times a polynomial
/// in 1/x² (degree 8 below 2, degree 7 from 2 on), 0 once -x² < -88.72 and reflected as
/// 2 - erfc(|x|) for negative x. Multiply-adds are fused and subnormals flushed, as on the
/// CPU. Bit for bit what JAX gives on 13,000 points of [-10, 10]; libm's `erfc` differs from
/// it by up to 10 ulp (x = -1), and `gelu(approximate=False)` shows it.
fn xla_erfc_f32(x: f32) -> f32 {
    #[allow(clippy::excessive_precision)]
    const SMALL: [f32; 7] = [7.85386146e-05, -0.000801019371, 0.00518832775, -0.0268538129, 0.112835854, -0.37612626, 1.12837911];
    #[allow(clippy::excessive_precision)]
    const BELOW_2: [f32; 9] =
        [0.0232682, -0.138703942, 0.368742466, -0.582473278, 0.621000469, -0.494451523, 0.340488, -0.274112701, 0.563825965];
    #[allow(clippy::excessive_precision)]
    const FROM_2: [f32; 8] = [-10.477664, 12.9772, -7.49551868, 2.92101908, -1.01526523, 0.42184633, -0.282076746, 0.564189494];
    let horner = |t: f32, c: &[f32]| c[2..].iter().fold(t.mul_add(c[0], c[1]), |acc, &k| acc.mul_add(t, k));
    let (ax, x2) = (x.abs(), x * x);
    if ax < 1.0 {
        return (-x).mul_add(horner(x2, &SMALL), 1.0);
    }
    #[allow(clippy::excessive_precision)]
    let tail = if -x2 < -88.7228394 {
        0.0
    } else {
        let q = flush_f32(xla_exp_f32(-x2) * (1.0 / ax));
        let z = 1.0 / x2;
        flush_f32(q * if ax < 2.0 { horner(z, &BELOW_2) } else { horner(z, &FROM_2) })
    };
    if x < 0.0 {
        2.0 - tail
    } else {
        tail
    }
}

/// XLA's float64 `tanh` on CPU (`EmitFastTanhF64`, from Eigen's `ptanh_double`): ±1 from
/// |x| ≥ 20, otherwise a degree 19/18 rational function of x clamped to ±17.714196154005176,
/// its polynomials in x² evaluated by fused multiply-adds (LLVM contracts them). Bit for bit
/// what JAX 0.10.2 gives on 4,000 points of [-20, 20]; libm's `tanh` is up to 7 ulp away,
/// which `1 + tanh(x)` near x = -7 (in `gelu`) turns into a visible difference.
fn xla_tanh_f64(x: f64) -> f64 {
    #[allow(clippy::excessive_precision)]
    const NUMERATOR: [f64; 10] = [
        2.6158007860482230e-23,
        7.6534862268749319e-19,
        3.1309488231386680e-15,
        4.2303918148209176e-12,
        2.4618379131293676e-09,
        6.8644367682497074e-07,
        9.3839087674268880e-05,
        5.9809711724441161e-03,
        1.5184719640284322e-01,
        1.0,
    ];
    #[allow(clippy::excessive_precision)]
    const DENOMINATOR: [f64; 10] = [
        6.463747022670968018e-21,
        5.782506856739003571e-17,
        1.293019623712687916e-13,
        1.123643448069621992e-10,
        4.492975677839633985e-08,
        8.785185266237658698e-06,
        8.295161192716231542e-04,
        3.437448108450402717e-02,
        4.851805297361760360e-01,
        1.0,
    ];
    if x.abs() >= 20.0 {
        return 1f64.copysign(x);
    }
    #[allow(clippy::excessive_precision)]
    let c = x.clamp(-17.714196154005176, 17.714196154005176);
    let c2 = c * c;
    let p = NUMERATOR[1..].iter().fold(NUMERATOR[0], |acc, &k| c2.mul_add(acc, k));
    let q = DENOMINATOR[1..].iter().fold(DENOMINATOR[0], |acc, &k| c2.mul_add(acc, k));
    c * p / q
}

/// `exp` as XLA computes it in `dtype`: its own float32 polynomial for float32 and the
/// 16-bit types (which it computes in float32), the correctly rounded value for float64.
pub(crate) fn exp_in(x: f64, dtype: DType) -> f64 {
    if dtype == DType::F64 {
        x.exp()
    } else {
        f64::from(xla_exp_f32(x as f32))
    }
}

/// XLA's float32 `tanh` on CPU (`EmitFastTanh`): `x` itself below 0.0004 in magnitude,
/// otherwise a degree 13/6 rational function of `x` clamped to ±7.99881172, its polynomials
/// evaluated by fused multiply-adds. Bit for bit what JAX 0.10.2 gives (checked on 2,000
/// points of [-9, 9]); libm's `tanh` differs from it by an ulp or two, which a cancellation
/// such as `1 + tanh(x)` in `gelu` turns into hundreds.
fn xla_tanh_f32(x: f32) -> f32 {
    #[allow(clippy::excessive_precision)]
    const NUMERATOR: [f32; 7] = [
        -2.76076847742355e-16,
        2.00018790482477e-13,
        -8.60467152213735e-11,
        5.12229709037114e-08,
        1.48572235717979e-05,
        6.37261928875436e-04,
        4.89352455891786e-03,
    ];
    #[allow(clippy::excessive_precision)]
    const DENOMINATOR: [f32; 4] = [1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03];
    if x.abs() < 0.0004 || x.is_nan() {
        return x;
    }
    #[allow(clippy::excessive_precision)]
    let c = x.clamp(-7.99881172180175781, 7.99881172180175781);
    let c2 = c * c;
    let p = NUMERATOR[1..].iter().fold(NUMERATOR[0], |acc, &k| acc.mul_add(c2, k));
    let q = DENOMINATOR[1..].iter().fold(DENOMINATOR[0], |acc, &k| acc.mul_add(c2, k));
    c * p / q
}

/// The elementwise function of a unary primitive on floats, in f64 (the caller rounds the
/// result to `dtype`); `None` for the primitives without a kernel.
pub(crate) fn unary_fn(u: UnaryPrim, dtype: DType) -> Option<Box<dyn Fn(f64) -> f64>> {
    let f: fn(f64) -> f64 = match u {
        UnaryPrim::Neg => |x| -x,
        UnaryPrim::Sign => |x: f64| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        },
        UnaryPrim::Floor => f64::floor,
        UnaryPrim::Ceil => f64::ceil,
        UnaryPrim::Round => |x: f64| {
            let r = x.round();
            if (x - x.trunc()).abs() == 0.5 {
                2.0 * (x / 2.0).round()
            } else {
                r
            }
        },
        UnaryPrim::IsFinite => |x: f64| x.is_finite() as i64 as f64,
        UnaryPrim::Exp if dtype != DType::F64 => |x: f64| f64::from(xla_exp_f32(x as f32)),
        UnaryPrim::Exp => f64::exp,
        // JAX lowers exp2 to exp(log(2) * x), the constant and the product in the dtype
        // itself (bfloat16 too: `jnp.exp2(jnp.bfloat16(88.5))` is 3.99e26, not 2**88.5).
        UnaryPrim::Exp2 => return Some(Box::new(move |x| exp_in(round_to(x * round_to(std::f64::consts::LN_2, dtype), dtype), dtype))),
        UnaryPrim::Log => f64::ln,
        UnaryPrim::Log1p => f64::ln_1p,
        UnaryPrim::Expm1 => f64::exp_m1,
        // XLA computes float32 (and 16-bit) tanh with its own rational approximation.
        UnaryPrim::Tanh if dtype != DType::F64 => |x: f64| f64::from(xla_tanh_f32(x as f32)),
        UnaryPrim::Tanh => xla_tanh_f64,
        // XLA expands logistic to 1 / (exp(-x) + 1), each step in the dtype (float32 for the
        // 16-bit types).
        UnaryPrim::Logistic if dtype != DType::F64 => |x: f64| {
            let e = xla_exp_f32(-x as f32);
            f64::from(flush_f32(1.0 / (e + 1.0)))
        },
        UnaryPrim::Logistic => |x: f64| 1.0 / (1.0 + (-x).exp()),
        UnaryPrim::Sin => f64::sin,
        UnaryPrim::Cos => f64::cos,
        UnaryPrim::Tan => f64::tan,
        UnaryPrim::Asin => f64::asin,
        UnaryPrim::Acos => f64::acos,
        UnaryPrim::Atan => f64::atan,
        UnaryPrim::Sinh => return Some(Box::new(move |x| sinh(x, dtype))),
        // XLA: exp(x + log(1/2)) + exp(-x + log(1/2)), each step in the dtype.
        UnaryPrim::Cosh => {
            return Some(Box::new(move |x| {
                let h = -ln2(dtype);
                exp_in(in_precision(x + h, dtype), dtype) + exp_in(in_precision(-x + h, dtype), dtype)
            }))
        }
        UnaryPrim::Asinh => f64::asinh,
        UnaryPrim::Acosh => f64::acosh,
        UnaryPrim::Atanh => f64::atanh,
        UnaryPrim::Sqrt => f64::sqrt,
        UnaryPrim::Rsqrt => |x: f64| 1.0 / x.sqrt(),
        UnaryPrim::Cbrt => f64::cbrt,
        UnaryPrim::Abs => f64::abs,
        UnaryPrim::Not => |x: f64| if x == 0.0 { 1.0 } else { 0.0 },
        UnaryPrim::Square => |x| x * x,
        UnaryPrim::Copy | UnaryPrim::Real | UnaryPrim::Conj => |x| x,
        UnaryPrim::Imag => |_| 0.0,
        UnaryPrim::Erf => libm::erf,
        UnaryPrim::Erfc if dtype != DType::F64 => |x: f64| f64::from(xla_erfc_f32(x as f32)),
        UnaryPrim::Erfc => libm::erfc,
        // XLA's Lanczos approximations, step by step (special.rs).
        UnaryPrim::Lgamma => return Some(Box::new(move |x| crate::jax::special::lgamma(x, dtype))),
        UnaryPrim::Digamma => return Some(Box::new(move |x| crate::jax::special::digamma(x, dtype))),
        // XLA's own approximations (CHLO's decomposition), as `jax.random.normal` uses them.
        UnaryPrim::ErfInv if dtype != DType::F64 => |x: f64| f64::from(crate::jax::prims::random::kernels::erf_inv_f32(x as f32)),
        UnaryPrim::ErfInv => crate::jax::prims::random::kernels::erf_inv_f64,
    };
    Some(Box::new(f))
}

/// `sinh` as XLA computes it: `exp(x + log(1/2)) - exp(-x + log(1/2))` for |x| >= 1, and
/// from `expm1` below, each step in the dtype.
pub(crate) fn sinh(x: f64, dtype: DType) -> f64 {
    if x.abs() >= 1.0 {
        let h = -ln2(dtype);
        exp_in(in_precision(x + h, dtype), dtype) - exp_in(in_precision(-x + h, dtype), dtype)
    } else {
        let e = in_precision(x.exp_m1(), dtype);
        0.5 * (e + in_precision(e / in_precision(e + 1.0, dtype), dtype))
    }
}
