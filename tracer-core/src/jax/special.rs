//! `lgamma` (`jax.scipy.special.gammaln`, `lax.lgamma`), `digamma` and `polygamma` as XLA
//! computes them:
//! Lanczos' approximation (g = 7, 8 coefficients) with Euler's reflection below 0.5, every
//! step in the dtype (float32 for float32, bfloat16 and float16, which XLA upcasts; float64
//! for float64), in the order of operations of the decomposition XLA compiles (StableHLO's
//! `materializeLgamma` and `materializeDigamma` for `chlo.lgamma`/`chlo.digamma`;
//! `materializePolygamma` and `materializeZeta`: the Hurwitz zeta function by ten terms of its
//! series and a 12-term Euler-Maclaurin correction). The result differs from the correctly rounded value by tens of ulp in places,
//! as JAX's does; what remains between the two is the last bits of `log`, `log1p` and `sin`,
//! which XLA evaluates with its own approximations (docs/evaluator.md).

use super::dtypes::DType;

const LANCZOS_GAMMA: f64 = 7.0;
const BASE_LANCZOS_COEFF: f64 = 0.999_999_999_999_809_932_276_847_004_734_78;
const LANCZOS_COEFFICIENTS: [f64; 8] = [
    676.520_368_121_885_098_567_009_190_444_019,
    -1_259.139_216_722_402_870_471_560_787_552_83,
    771.323_428_777_653_078_848_652_825_889_4,
    -176.615_029_162_140_599_065_845_513_54,
    12.507_343_278_686_904_814_458_936_853,
    -0.138_571_095_265_720_116_895_547_07,
    9.984_369_578_019_570_859_563e-6,
    1.505_632_735_149_311_558_34e-7,
];

/// The float operations the formulas need, in the precision of `Self`.
trait Real:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    fn c(x: f64) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp(self) -> Self;
    /// `self * a + b` rounded once, as XLA's CPU code contracts a product and a sum.
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn floor(self) -> Self;
    fn abs(self) -> Self;
    fn powf(self, y: Self) -> Self;
    fn rem(self, y: Self) -> Self;
    fn is_finite(self) -> bool;
    fn is_infinite(self) -> bool;
    fn wide(self) -> f64;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            fn c(x: f64) -> Self {
                x as $t
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn mul_add(self, a: Self, b: Self) -> Self {
                <$t>::mul_add(self, a, b)
            }
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn powf(self, y: Self) -> Self {
                <$t>::powf(self, y)
            }
            fn rem(self, y: Self) -> Self {
                self % y
            }
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            fn wide(self) -> f64 {
                self as f64
            }
        }
    };
}
real!(f32);
real!(f64);

fn lgamma_in<T: Real>(input: T) -> T {
    let (one_half, one) = (T::c(0.5), T::c(1.0));
    let pi = T::c(std::f64::consts::PI);
    let log_pi = T::c(std::f64::consts::PI.ln());
    let log_sqrt_two_pi = T::c((2f64.ln() + std::f64::consts::PI.ln()) / 2.0);
    let gamma_plus_half = T::c(LANCZOS_GAMMA + 0.5);
    let log_gamma_plus_half = T::c((LANCZOS_GAMMA + 0.5).ln());
    let reflect = input < one_half;
    let z = if reflect { -input } else { input - one };
    let mut x = T::c(BASE_LANCZOS_COEFF);
    for (i, &c) in LANCZOS_COEFFICIENTS.iter().enumerate() {
        x = x + T::c(c) / (z + T::c((i + 1) as f64));
    }
    let t = gamma_plus_half + z;
    let log_t = log_gamma_plus_half + (z / gamma_plus_half).ln_1p();
    // `log(sqrt(2π)) + (z + ½ - t / log t) · log t`: XLA's CPU code fuses the product and
    // the sum into one fused multiply-add (one rounding), which decides the last bits near
    // lgamma's zeros (`lgamma(2.0)` is exactly 0, `lgamma(3.0)` 0.69314742 in float32).
    let log_y = (z + one_half - t / log_t).mul_add(log_t, log_sqrt_two_pi) + x.ln();
    let abs_input = input.abs();
    let abs_frac = abs_input - abs_input.floor();
    let reduced = if abs_frac > one_half { one - abs_frac } else { abs_frac };
    let denom = (pi * reduced).sin().ln();
    let reflection = if denom.is_finite() { log_pi - denom - log_y } else { -denom };
    let result = if reflect { reflection } else { log_y };
    if input.is_infinite() {
        T::c(f64::INFINITY)
    } else {
        result
    }
}

fn digamma_in<T: Real>(input: T) -> T {
    let (zero, one_half, one) = (T::c(0.0), T::c(0.5), T::c(1.0));
    let pi = T::c(std::f64::consts::PI);
    let lanczos_gamma = T::c(LANCZOS_GAMMA);
    let gamma_plus_half = T::c(LANCZOS_GAMMA + 0.5);
    let log_gamma_plus_half = T::c((LANCZOS_GAMMA + 0.5).ln());
    let reflect = input < one_half;
    let z = if reflect { -input } else { input - one };
    let mut num = zero;
    let mut denom = T::c(BASE_LANCZOS_COEFF);
    for (i, &c) in LANCZOS_COEFFICIENTS.iter().enumerate() {
        let k = z + T::c((i + 1) as f64);
        num = num - T::c(c) / (k * k);
        denom = denom + T::c(c) / k;
    }
    let t = gamma_plus_half + z;
    let log_t = log_gamma_plus_half + (z / gamma_plus_half).ln_1p();
    let y = log_t + num / denom - lanczos_gamma / t;
    let reduced = input + (input + one_half).floor().abs();
    let reflection = y - pi * (pi * reduced).cos() / (pi * reduced).sin();
    let result = if reflect { reflection } else { y };
    // Poles at zero and the negative integers.
    if input <= zero && input == input.floor() {
        T::c(f64::NAN)
    } else {
        result
    }
}

/// `lgamma(x)` for an element of `dtype` held in `f64`; the caller rounds to the dtype.
pub fn lgamma(x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F64 => lgamma_in(x),
        _ => lgamma_in(x as f32).wide(),
    }
}

/// `digamma(x)` for an element of `dtype` held in `f64`; the caller rounds to the dtype.
pub fn digamma(x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F64 => digamma_in(x),
        _ => digamma_in(x as f32).wide(),
    }
}

/// The coefficients of XLA's Euler-Maclaurin correction, innermost first: `B_2k / (2k)!`
/// for k = 12 down to 1 (`1/12` last), as the compiled `zeta` holds them.
const ZETA_COEFFS: [f64; 12] = [
    -1.395_446_468_581_252_2e-19,
    5.509_002_828_360_229_5e-18,
    -2.174_868_698_558_061_7e-16,
    8.586_062_056_277_845_2e-15,
    -3.389_680_296_322_583_2e-13,
    1.338_253_653_068_467_9e-11,
    -5.284_190_138_687_493_2e-10,
    2.087_675_698_786_81e-8,
    -8.267_195_767_195_767_5e-7,
    3.306_878_306_878_307_1e-5,
    -0.001_388_888_888_888_888_9,
    0.083_333_333_333_333_329,
];

/// The Hurwitz zeta function `sum_k (q + k)^-x` as XLA compiles `chlo.zeta` (JAX 0.10.2's
/// HLO, step by step): ten terms of the series, then the Euler-Maclaurin correction at
/// `a = q + 10` by Horner's rule. For `q < 0` (not an integer) the correction is evaluated
/// where it does not converge and the result is far from the function's value, as JAX's is.
fn zeta_in<T: Real>(x: T, q: T) -> T {
    let (zero, one, two) = (T::c(0.0), T::c(1.0), T::c(2.0));
    let neg_x = -x;
    let a = q + T::c(10.0);
    let mut initial_sum = q.powf(neg_x);
    for k in 1..10 {
        initial_sum = initial_sum + (q + T::c(f64::from(k))).powf(neg_x);
    }
    let neg_power = a.powf(neg_x);
    let s = initial_sum + neg_power * a / (x + T::c(-1.0));
    let a_inverse_square = one / (a * a);
    let mut horner = zero;
    for (i, &c) in ZETA_COEFFS.iter().enumerate() {
        if i == 0 {
            horner = T::c(c);
            continue;
        }
        let k = f64::from(2 * (12 - i as u32));
        let factor = (x + T::c(k)) * (x + T::c(k - 1.0));
        horner = factor * (a_inverse_square * horner) + T::c(c);
    }
    let correction = neg_power * (x / a * horner + T::c(0.5));
    let mut out = s + correction;
    // The series alone when the correction is below its resolution.
    let smallest = T::c(if std::mem::size_of::<T>() == 4 { f64::from(f32::from_bits(1)) } else { f64::from_bits(1) });
    if neg_power.abs() < initial_sum.abs() * smallest {
        out = initial_sum;
    }
    let nan = T::c(f64::NAN);
    if x < one {
        out = nan;
    }
    let q_le_zero = q <= zero;
    let x_is_int = x == x.floor();
    if q_le_zero && !x_is_int {
        out = nan;
    }
    // A pole at the integers q <= 0: +inf for an even x, NaN otherwise.
    if q_le_zero && q == q.floor() {
        out = if x_is_int && x.rem(two) == zero { T::c(f64::INFINITY) } else { nan };
    }
    if x == one {
        out = T::c(f64::INFINITY);
    }
    out
}

/// `polygamma(n, x)`, XLA's `chlo.polygamma`: `(-1)^(n+1) n! zeta(n + 1, x)` (with `n!` as
/// `exp(lgamma(n + 1))`), `digamma(x)` for `n = 0`, NaN unless `n` is a natural number.
fn polygamma_in<T: Real>(n: T, x: T) -> T {
    let (zero, one, two) = (T::c(0.0), T::c(1.0), T::c(2.0));
    let sign = two * n.rem(two) - one;
    let n_plus_one = n + one;
    // `n!` as XLA computes it, `exp(lgamma(n + 1))` in the dtype: 2.0000005 for 2! in
    // float32, which JAX's values of order 2 and up carry.
    let factorial = lgamma_in(n_plus_one).exp();
    let result = sign * factorial * zeta_in(n_plus_one, x);
    let result = if n == zero { digamma_in(x) } else { result };
    if n != n.floor() || n < zero {
        T::c(f64::NAN)
    } else {
        result
    }
}

/// `polygamma(n, x)` for elements of `dtype` held in `f64`; the caller rounds to the dtype.
pub fn polygamma(n: f64, x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F64 => polygamma_in(n, x),
        _ => polygamma_in(n as f32, x as f32).wide(),
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn polygamma_is_what_jax_computes() {
        // JAX 0.10.2 on CPU (float64): polygamma(1, x), including the diverged value at a
        // negative x.
        for (x, want) in [(2.5, 0.4903577561002349), (0.5, 4.93480220054468), (3.0, 0.39493406684822646), (-10.5, 2854289648047.3677)] {
            let got = polygamma(1.0, x, DType::F64);
            assert!((got - want).abs() <= 8.0 * f64::EPSILON * want.abs(), "polygamma(1, {x}) = {got}, JAX {want}");
        }
        for (x, want) in [(2.5f32, 0.49035775661468506f32), (0.5, 4.934802055358887), (100.0, 0.01005016639828682)] {
            let got = polygamma(1.0, f64::from(x), DType::F32) as f32;
            assert!((got - want).abs() <= 2.0 * f32::EPSILON * want.abs(), "polygamma(1, {x}) = {got}, JAX {want}");
        }
    }

    crate::unit_tests::list![polygamma_is_what_jax_computes];
}
