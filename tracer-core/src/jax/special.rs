//! `lgamma` (`jax.scipy.special.gammaln`, `lax.lgamma`) and `digamma` as XLA computes them:
//! Lanczos' approximation (g = 7, 8 coefficients) with Euler's reflection below 0.5, every
//! step in the dtype (float32 for float32, bfloat16 and float16, which XLA upcasts; float64
//! for float64), in the order of operations of the decomposition XLA compiles (StableHLO's
//! `materializeLgamma` and `materializeDigamma` for `chlo.lgamma`/`chlo.digamma`). The result differs from the correctly rounded value by tens of ulp in places,
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
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn floor(self) -> Self;
    fn abs(self) -> Self;
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
    let log_y = (log_sqrt_two_pi + (z + one_half - t / log_t) * log_t) + x.ln();
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
