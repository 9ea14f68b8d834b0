//! `jax.random` values, bit-exact with JAX 0.10.2 on CPU: Threefry-2x32 keys and bits (with
//! `jax_threefry_partitionable`, which is on by default in 0.10.2), and the samplers built on
//! them, which replay the float operations XLA's CPU backend runs for them.
//!
//! Bit-exactness rests on three facts about the XLA build JAX 0.10.2 ships, read from its
//! optimized HLO, LLVM IR and machine code (`XLA_FLAGS=--xla_dump_to=...`):
//!
//! * `log` (f32), `log1p` and `erf_inv` are XLA's own polynomial and rational approximations,
//!   reproduced operation by operation below; `log` (f64) is the C library's `log`, which is
//!   what Rust's `f64::ln` calls too.
//! * XLA compiles with LLVM's `FPOpFusion::Fast`, so on a CPU with FMA (every x86-64 since
//!   2013, every AArch64) a multiply whose only use is an add becomes one fused multiply-add.
//!   Every such pair is a `mul_add` here; every other multiply and add rounds on its own.
//! * Everything else (uniform bits to floats, comparisons, integer arithmetic) is exact.
//!
//! A typed key (`jax.random.key`) has the aval `u32[...]` but carries its two words in a
//! trailing axis of length 2 that the aval does not show; `eval::force` hides such data from
//! everything but the kernels here. A legacy key (`PRNGKey`) is a plain `u32[..., 2]` array.
//!
//! Size: the Threefry bits, the float approximations XLA replays and every sampler built on them,
//! checked bit for bit together (tests at the end).

use crate::jax::prims::families;
use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};

use crate::jax::array::NdData;
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::eval::{max_f32, min_f32};
use crate::jax::ir::Prim;
use crate::jax::prims::elementwise::max_f64;

/// A Threefry-2x32 key: the two words of a PRNG key.
pub type Key = [u32; 2];

// ---------------------------------------------------------------------------------------
// Threefry-2x32 and the key operations.

const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

/// The Threefry-2x32 block cipher with 20 rounds: `key` encrypts the counter pair `x`.
pub fn threefry2x32(key: Key, x: [u32; 2]) -> [u32; 2] {
    let ks = [key[0], key[1], key[0] ^ key[1] ^ 0x1BD1_1BDA];
    let mut x0 = x[0].wrapping_add(ks[0]);
    let mut x1 = x[1].wrapping_add(ks[1]);
    for group in 0..5usize {
        for &r in &ROTATIONS[group % 2] {
            x0 = x0.wrapping_add(x1);
            x1 = x1.rotate_left(r) ^ x0;
        }
        x0 = x0.wrapping_add(ks[(group + 1) % 3]);
        x1 = x1.wrapping_add(ks[(group + 2) % 3]).wrapping_add(group as u32 + 1);
    }
    [x0, x1]
}

/// The key of an integer seed. A 64-bit seed gives its high and low words; a narrower one
/// (and every seed with x64 off, where Python ints become int32) gives `[0, seed mod 2**32]`.
pub fn seed(value: i128, wide: bool) -> Key {
    if wide {
        let v = value as u64;
        [(v >> 32) as u32, v as u32]
    } else {
        [0, value as u32]
    }
}

/// The counter pair of element `i` of a flattened shape: the 64-bit index as two words.
fn counter(i: usize) -> [u32; 2] {
    let i = i as u64;
    [(i >> 32) as u32, i as u32]
}

/// `jax.random.split(key, num)` with `num` keys in all (the partitionable, fold-like split).
pub fn split(key: Key, num: usize) -> Vec<Key> {
    (0..num).map(|i| threefry2x32(key, counter(i))).collect()
}

/// `jax.random.fold_in(key, data)`: the original (non-partitionable) hash of the counter
/// array `[0, data]`, which Threefry encrypts as the single pair `(0, data)`.
pub fn fold_in(key: Key, data: u32) -> Key {
    threefry2x32(key, [0, data])
}

/// `n` random words of `width` bits (8, 16, 32 or 64), one per element of a flattened shape.
pub fn bits(key: Key, width: u32, n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| {
            let [b1, b2] = threefry2x32(key, counter(i));
            match width {
                64 => (u64::from(b1) << 32) | u64::from(b2),
                32 => u64::from(b1 ^ b2),
                w => u64::from(b1 ^ b2) & ((1u64 << w) - 1),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// XLA CPU's float functions.

fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}
fn d(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// XLA CPU's `log` for f32: a Cephes-style polynomial on the mantissa in `[sqrt(1/2), sqrt(2))`.
pub fn log_f32(a: f32) -> f32 {
    if a == 0.0 {
        return f32::NEG_INFINITY;
    }
    if a == f32::INFINITY {
        return f32::INFINITY;
    }
    if a.is_nan() || a < 0.0 {
        return f32::NAN;
    }
    let b = if a > f32::MIN_POSITIVE { a } else { f32::MIN_POSITIVE };
    let bits = b.to_bits();
    let exponent = ((bits >> 23) as i32 - 127) as f32 + 1.0;
    let m = f((bits & 0x807F_FFFF) | 0x3F00_0000);
    let below = m < f(0x3F35_04F3);
    let x = (m - 1.0) + if below { m } else { 0.0 };
    let e = exponent - if below { 1.0 } else { 0.0 };
    let z = x * x;
    let x3 = z * x;
    let y1 = x.mul_add(f(0x3D90_21BB), f(0xBDEB_D1B8)).mul_add(x, f(0x3DEF_251A));
    let y2 = x.mul_add(f(0xBDFE_5D4F), f(0x3E11_E9BF)).mul_add(x, f(0xBE2A_AE50));
    let y3 = x.mul_add(f(0x3E4C_CEAC), f(0xBE7F_FFFC)).mul_add(x, f(0x3EAA_AAAA));
    let y = y1.mul_add(x3, y2).mul_add(x3, y3);
    let tail = y.mul_add(x3, e * f(0xB95E_8083));
    let head = z.mul_add(-0.5, x);
    e.mul_add(f(0x3F31_8000), head + tail)
}

/// The Cephes rational approximation XLA's `log1p` uses for `|x| < sqrt(2) - 1`, without the
/// leading coefficients (1 for the denominator; the numerator's is the f64 one, rounded).
const LOG1P_DEN_F32: [u32; 6] = [0x4171_01AD, 0x42A6_185B, 0x435D_C32D, 0x439A_8CA3, 0x4358_6D8A, 0x4270_7982];
const LOG1P_NUM_F32: [u32; 6] = [0x3EFF_40C5, 0x40D2_84FA, 0x41EF_4B9C, 0x4273_CC76, 0x4264_73AD, 0x41A0_5101];
const LOG1P_DEN_F64: [u64; 6] = [
    0x402E_2035_9E90_3E37,
    0x4054_C30B_5221_3498,
    0x406B_B865_90FC_FB56,
    0x4073_5194_5DC9_08A5,
    0x406B_0DB1_3E48_E066,
    0x404E_0F30_4466_448E,
];
const LOG1P_NUM_F64: [u64; 7] = [
    0x3F07_BC09_62B3_95CA,
    0x3FDF_E818_A0FE_1A83,
    0x401A_509F_46F4_FA53,
    0x403D_E973_8B8C_B9C9,
    0x404E_798E_B86C_3351,
    0x404C_8E75_9747_9A10,
    0x4034_0A20_2D99_830A,
];

/// XLA CPU's `log1p` for f32.
pub fn log1p_f32(x: f32) -> f32 {
    let large = log_f32(x + 1.0);
    let x2 = x * x;
    // `x * 0` is kept (it is NaN for an infinite x), so the polynomials start from it.
    let zero = x * 0.0;
    let den = LOG1P_DEN_F32.iter().fold(zero + 1.0, |acc, &c| acc.mul_add(x, f(c)));
    let num = LOG1P_NUM_F32.iter().fold(zero + d(LOG1P_NUM_F64[0]) as f32, |acc, &c| acc.mul_add(x, f(c)));
    let small = x + x2.mul_add(-0.5, (x * x2) * (num / den));
    if x.abs() < f(0x3ED4_13CD) {
        small
    } else {
        large
    }
}

/// XLA CPU's `log1p` for f64.
pub fn log1p_f64(x: f64) -> f64 {
    let large = (x + 1.0).ln();
    let x2 = x * x;
    let zero = x * 0.0;
    let den = LOG1P_DEN_F64.iter().fold(zero + 1.0, |acc, &c| acc.mul_add(x, d(c)));
    let num = LOG1P_NUM_F64[1..].iter().fold(zero + d(LOG1P_NUM_F64[0]), |acc, &c| acc.mul_add(x, d(c)));
    let small = x + x2.mul_add(-0.5, (x * x2) * (num / den));
    if x.abs() < d(0x3FDA_8279_99FC_EF32) {
        small
    } else {
        large
    }
}

/// Giles' single-precision `erfinv` polynomials, for `w < 5` and `w >= 5`.
const ERF_INV_F32: [[u32; 9]; 2] = [
    [0x32F1_6588, 0x34B8_4B36, 0xB66C_7357, 0xB693_5AC1, 0x3965_32DB, 0xBAA4_5408, 0xBB88_E4EF, 0x3E7C_8F63, 0x3FC0_2E2F],
    [0xB951_F09B, 0x38D3_B56B, 0x3AB0_DC72, 0xBB70_BDE7, 0x3BBC_127B, 0xBBF9_C5D7, 0x3C1A_A57E, 0x3F80_36DB, 0x4035_4F7E],
];

/// XLA's `erf_inv` for f32 (CHLO's decomposition: Giles' approximation on `-log1p(-x*x)`).
pub fn erf_inv_f32(x: f32) -> f32 {
    let l = log1p_f32(x * -x);
    let near = l > -5.0;
    let t = if near { -2.5 - l } else { (-l).sqrt() - 3.0 };
    let c = &ERF_INV_F32[usize::from(!near)];
    let p = c[1..].iter().fold(f(c[0]), |acc, &k| acc.mul_add(t, f(k)));
    x * if x.abs() == 1.0 { f32::INFINITY } else { p }
}

/// Giles' double-precision `erfinv` polynomials, for `w < 6.25`, `w < 16` and `w >= 16`.
const ERF_INV_F64_A: [f64; 23] = [
    -3.644_412_064_017_82e-21,
    -1.685_059_138_182_016_6e-19,
    1.285_848_071_525_64e-18,
    1.115_787_767_802_518_1e-17,
    -1.333_171_662_854_621e-16,
    2.097_276_787_596_856_2e-17,
    6.637_638_134_358_324e-15,
    -4.054_566_272_975_207e-14,
    -8.151_934_197_605_472e-14,
    2.633_509_315_308_232_3e-12,
    -1.297_513_325_345_353_2e-11,
    -5.415_412_054_294_628e-11,
    1.051_212_273_321_532_3e-9,
    -4.112_633_980_346_984e-9,
    -2.907_036_995_788_200_5e-8,
    4.234_787_782_793_240_4e-7,
    -1.365_469_200_083_467_9e-6,
    -1.388_252_336_278_646_9e-5,
    0.000_186_734_208_034_057_14,
    -0.000_740_702_534_166_267,
    -0.006_033_670_871_430_149,
    0.240_158_182_425_589_62,
    1.653_654_562_683_102_7,
];
const ERF_INV_F64_B: [f64; 19] = [
    2.213_737_692_177_578_7e-9,
    9.075_656_193_888_539e-8,
    -2.751_740_629_706_454_5e-7,
    1.823_962_921_438_922_8e-8,
    1.502_740_396_890_982_8e-6,
    -4.013_867_526_981_546e-6,
    2.923_444_908_995_544_6e-6,
    1.247_530_448_167_177_9e-5,
    -4.731_822_900_905_573_4e-5,
    6.828_485_145_957_318e-5,
    2.403_111_038_709_789_4e-5,
    -0.000_355_037_520_362_847_5,
    0.000_953_289_379_737_380_5,
    -0.001_688_275_556_023_504_7,
    0.002_491_442_096_107_851,
    -0.003_751_208_507_569_241,
    0.005_370_914_553_590_064,
    1.005_258_967_694_159_2,
    3.083_885_610_492_220_8,
];
const ERF_INV_F64_C: [f64; 17] = [
    -2.710_992_061_643_857_3e-11,
    -2.555_641_816_996_525e-10,
    1.507_657_269_350_054_8e-9,
    -3.789_465_440_126_737e-9,
    7.615_701_208_078_34e-9,
    -1.496_002_662_714_924e-8,
    2.914_795_345_090_108e-8,
    -6.771_199_775_845_234e-8,
    2.290_048_222_802_665_5e-7,
    -9.929_827_294_231_7e-7,
    4.526_062_597_223_154e-6,
    -1.968_177_810_553_167e-5,
    7.599_527_703_001_776e-5,
    -0.000_215_030_119_300_444_77,
    -0.000_138_719_318_336_231_22,
    1.010_300_464_864_534_4,
    4.849_906_401_408_584,
];

/// XLA's `erf_inv` for f64 (CHLO's decomposition of Giles' double-precision approximation).
pub fn erf_inv_f64(x: f64) -> f64 {
    let l = log1p_f64(x * -x);
    let (t, c): (f64, &[f64]) = if l > -6.25 {
        (-3.125 - l, &ERF_INV_F64_A)
    } else if l > -16.0 {
        ((-l).sqrt() - 3.25, &ERF_INV_F64_B)
    } else {
        ((-l).sqrt() - 5.0, &ERF_INV_F64_C)
    };
    let p = c[1..].iter().fold(c[0], |acc, &k| acc.mul_add(t, k));
    x * if x.abs() == 1.0 { f64::INFINITY } else { p }
}

/// XLA CPU's `erf` for f32: a rational approximation on `x` clamped to `[-3.92, 3.92]`.
pub fn erf_f32(x: f32) -> f32 {
    if x.is_nan() {
        return f32::NAN;
    }
    let bound = f(0x406F_9C68);
    if x.abs() >= bound {
        return 1.0f32.copysign(x);
    }
    let z = x * x;
    let num =
        [0x3D50_B6EB, 0x3E3D_A740, 0x3F90_6EBA].iter().fold(z.mul_add(f(0x3970_2D51), f(0x3B5F_5DA2)), |acc, &c| acc.mul_add(z, f(c)));
    let den = [0x3A85_6D28, 0x3C66_87D4, 0x3DE3_4C21, 0x3EFE_B44A, 0x3F80_0000]
        .iter()
        .fold(z.mul_add(f(0xB3FD_3906), f(0x37C5_88DF)), |acc, &c| acc.mul_add(z, f(c)));
    (x * num) / den
}

/// `lax.nextafter(x, toward)` for f32.
fn next_after_f32(x: f32, toward: f32) -> f32 {
    if x.is_nan() || toward.is_nan() {
        return f32::NAN;
    }
    if x == toward {
        return toward;
    }
    if x == 0.0 {
        return f32::from_bits(1).copysign(toward);
    }
    let up = (toward > x) == (x > 0.0);
    f32::from_bits(if up { x.to_bits() + 1 } else { x.to_bits() - 1 })
}

// ---------------------------------------------------------------------------------------
// The samplers, on flattened data.

/// A float dtype the samplers compute in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Float {
    F32,
    F64,
}

impl Float {
    fn of(dtype: DType) -> Option<Float> {
        match dtype {
            DType::F32 => Some(Float::F32),
            DType::F64 => Some(Float::F64),
            _ => None,
        }
    }
    fn width(self) -> u32 {
        match self {
            Float::F32 => 32,
            Float::F64 => 64,
        }
    }
    /// `bitcast(bits >> (width - mantissa) | bits(1.0)) - 1`: uniform in `[0, 1)`.
    fn unit(self, bits: u64) -> f64 {
        match self {
            Float::F32 => f64::from(f((bits as u32 >> 9) | 0x3F80_0000) - 1.0),
            Float::F64 => d((bits >> 12) | 0x3FF0_0000_0000_0000) - 1.0,
        }
    }
    fn round(self, x: f64) -> f64 {
        match self {
            Float::F32 => f64::from(x as f32),
            Float::F64 => x,
        }
    }
}

/// `jax.random.uniform`: `max(lo, unit * (hi - lo) + lo)`, the multiply-add fused.
pub fn uniform(key: Key, dt: Float, lo: &[f64], hi: &[f64]) -> Vec<f64> {
    let n = lo.len();
    bits(key, dt.width(), n)
        .into_iter()
        .zip(lo.iter().zip(hi))
        .map(|(b, (&lo, &hi))| {
            let u = dt.unit(b);
            match dt {
                Float::F32 => {
                    let (lo, hi) = (lo as f32, hi as f32);
                    f64::from(max_f32(lo, (u as f32).mul_add(hi - lo, lo)))
                }
                Float::F64 => max_f64(lo, u.mul_add(hi - lo, lo)),
            }
        })
        .collect()
}

/// `jax.random.normal`: `sqrt(2) * erf_inv(uniform(nextafter(-1, 0), 1))`.
pub fn normal(key: Key, dt: Float, n: usize) -> Vec<f64> {
    match dt {
        Float::F32 => {
            let lo = f64::from(next_after_f32(-1.0, 0.0));
            uniform(key, dt, &vec![lo; n], &vec![1.0; n])
                .into_iter()
                .map(|u| f64::from(erf_inv_f32(u as f32) * std::f32::consts::SQRT_2))
                .collect()
        }
        Float::F64 => {
            let lo = -1.0 + f64::EPSILON / 2.0;
            uniform(key, dt, &vec![lo; n], &vec![1.0; n]).into_iter().map(|u| erf_inv_f64(u) * std::f64::consts::SQRT_2).collect()
        }
    }
}

/// `jax.random.truncated_normal` in f32 (XLA's f64 `erf` is not reproduced).
pub fn truncated_normal_f32(key: Key, lower: &[f64], upper: &[f64]) -> Vec<f64> {
    let inv_sqrt2 = f(0x3F35_04F3);
    let a: Vec<f64> = lower.iter().map(|&l| f64::from(erf_f32(l as f32 * inv_sqrt2))).collect();
    let b: Vec<f64> = upper.iter().map(|&u| f64::from(erf_f32(u as f32 * inv_sqrt2))).collect();
    uniform(key, Float::F32, &a, &b)
        .into_iter()
        .zip(lower.iter().zip(upper))
        .map(|(u, (&l, &h))| {
            let out = erf_inv_f32(u as f32) * std::f32::consts::SQRT_2;
            let lo = next_after_f32(l as f32, f32::INFINITY);
            let hi = next_after_f32(h as f32, f32::NEG_INFINITY);
            f64::from(min_f32(hi, max_f32(lo, out)))
        })
        .collect()
}

/// `jax.random.gumbel` (mode "low"): `-log(-log(uniform(tiny, 1)))`.
pub fn gumbel(key: Key, dt: Float, n: usize) -> Vec<f64> {
    bits(key, dt.width(), n)
        .into_iter()
        .map(|b| match dt {
            Float::F32 => {
                let u = max_f32(f32::MIN_POSITIVE, dt.unit(b) as f32);
                f64::from(-log_f32(-log_f32(u)))
            }
            Float::F64 => {
                let u = max_f64(f64::MIN_POSITIVE, dt.unit(b));
                -(-u.ln()).ln()
            }
        })
        .collect()
}

/// An integer dtype as `randint` samples it: width and signedness.
#[derive(Clone, Copy, Debug)]
struct IntType {
    bits: u32,
    signed: bool,
}

impl IntType {
    fn of(dtype: DType) -> Option<IntType> {
        let bits = match dtype {
            DType::I8 | DType::U8 => 8,
            DType::I16 | DType::U16 => 16,
            DType::I32 | DType::U32 => 32,
            DType::I64 | DType::U64 => 64,
            _ => return None,
        };
        Some(IntType { bits, signed: dtype.is_signed_integer() })
    }
    fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }
    fn max(self) -> i128 {
        if self.signed {
            (1i128 << (self.bits - 1)) - 1
        } else {
            (1i128 << self.bits) - 1
        }
    }
    fn mask(self) -> u64 {
        if self.bits == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }
    /// The value of the low `bits` of `x` read as this type.
    fn wrap(self, x: i128) -> i128 {
        let u = (x as u128 as u64) & self.mask();
        if self.signed && (u >> (self.bits - 1)) & 1 == 1 {
            i128::from(u) - (1i128 << self.bits)
        } else {
            i128::from(u)
        }
    }
}

/// XLA's unsigned remainder: `x % 0` is `x`.
fn rem_u(x: u64, y: u64) -> u64 {
    if y == 0 {
        x
    } else {
        x % y
    }
}

/// `jax.random.randint` sampling in `dt` (at least 32 bits wide), with bounds of the integer
/// dtypes `lo_t`/`hi_t`, already broadcast: the modulus of two words of random bits.
fn randint_wide(key: Key, dt: IntType, lo: &[i128], lo_t: IntType, hi: &[i128], hi_t: IntType) -> Vec<i128> {
    let n = lo.len();
    let halves = split(key, 2);
    let (higher, lower) = (bits(halves[0], dt.bits, n), bits(halves[1], dt.bits, n));
    let hi_cap = dt.max().min(hi_t.max());
    let mask = dt.mask();
    (0..n)
        .map(|i| {
            let out_of_range = hi[i] > hi_cap;
            let lo_c = lo[i].clamp(dt.min().max(lo_t.min()), dt.max().min(lo_t.max()));
            let hi_c = hi[i].clamp(dt.min().max(hi_t.min()), dt.max().min(hi_t.max()));
            let mut span = (dt.wrap(hi_c - lo_c) as u64) & mask;
            if hi_c <= lo_c {
                span = 1;
            }
            if out_of_range && hi_c > lo_c {
                span = span.wrapping_add(1) & mask;
            }
            let half = 1u64 << (dt.bits / 2);
            let mut multiplier = rem_u(half, span);
            multiplier = rem_u(multiplier.wrapping_mul(multiplier) & mask, span);
            let offset = rem_u(rem_u(higher[i], span).wrapping_mul(multiplier).wrapping_add(rem_u(lower[i], span)) & mask, span);
            dt.wrap(lo_c + i128::from(offset))
        })
        .collect()
}

/// `jax.random.randint(key, shape, lo, hi, dtype)` on broadcast bounds of dtypes `lo_d`/`hi_d`.
pub fn randint(key: Key, dtype: DType, lo: &[i128], lo_d: DType, hi: &[i128], hi_d: DType) -> Option<Vec<i128>> {
    let dt = IntType::of(dtype)?;
    let (lo_t, hi_t) = (IntType::of(lo_d)?, IntType::of(hi_d)?);
    if dt.bits >= 32 {
        return Some(randint_wide(key, dt, lo, lo_t, hi, hi_t));
    }
    // Narrow dtypes sample in int32 between bounds cast to int32 and clipped to the dtype.
    let i32_t = IntType { bits: 32, signed: true };
    let lo: Vec<i128> = lo.iter().map(|&v| i32_t.wrap(v).clamp(dt.min(), dt.max())).collect();
    let hi: Vec<i128> = hi.iter().map(|&v| i32_t.wrap(v).clamp(dt.min(), dt.max() + 1)).collect();
    Some(randint_wide(key, i32_t, &lo, i32_t, &hi, i32_t).into_iter().map(|v| dt.wrap(v)).collect())
}

/// How many sorts `_shuffle` makes for `size` elements: `ceil(3 * ln(size) / ln(2**32 - 1))`.
fn shuffle_rounds(size: usize) -> usize {
    (3.0 * (size.max(1) as f64).ln() / f64::from(u32::MAX).ln()).ceil() as usize
}

/// `_shuffle(key, x, axis)`: sorts each lane of `x` along `axis` by fresh random words, once
/// per round. `None` when two words in a lane tie (XLA's unstable sort decides those).
fn shuffle(mut key: Key, x: &NdData, axis: usize) -> Option<NdData> {
    let mut x = x.clone();
    for _ in 0..shuffle_rounds(x.len()) {
        let keys = split(key, 2);
        key = keys[0];
        let words = bits(keys[1], 32, x.len());
        let words = ArrayD::from_shape_vec(IxDyn(x.shape()), words).ok()?;
        for (mut lane, wlane) in x.lanes_mut(Axis(axis)).into_iter().zip(words.lanes(Axis(axis))) {
            let mut pairs: Vec<(u64, f64)> = wlane.iter().copied().zip(lane.iter().copied()).collect();
            pairs.sort_by_key(|p| p.0);
            if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
                return None;
            }
            for (dst, (_, v)) in lane.iter_mut().zip(pairs) {
                *dst = v;
            }
        }
    }
    Some(x)
}

/// `jax.random.permutation(key, x, axis, independent)` for an array `x` of rank >= 1.
pub fn permutation(key: Key, x: &NdData, axis: usize, independent: bool) -> Option<NdData> {
    if axis >= x.ndim() {
        return None;
    }
    if independent || x.ndim() == 1 {
        return shuffle(key, x, axis);
    }
    let n = x.shape()[axis];
    let order = shuffle(key, &ArrayD::from_shape_fn(IxDyn(&[n]), |i| i[0] as f64), 0)?;
    let idx: Vec<usize> = order.iter().map(|&i| i as usize).collect();
    Some(x.select(Axis(axis), &idx))
}

// ---------------------------------------------------------------------------------------
// Kernels: the random primitives on concrete data.

/// One input of a kernel: its aval and its data (for a typed key, with the words axis).
pub struct Input<'a> {
    pub aval: &'a Aval,
    pub data: &'a NdData,
}

/// The keys in `input` and their batch shape, for a typed or a legacy key.
fn keys_of(input: &Input) -> Option<(Vec<Key>, Vec<usize>)> {
    let shape = input.data.shape();
    let aval = input.aval.shape.as_slice();
    let typed = shape.len() == aval.len() + 1 && shape[..aval.len()] == *aval;
    let legacy = shape == aval && input.aval.dtype == DType::U32;
    if !(typed || legacy) || shape.last() != Some(&2) {
        return None;
    }
    let words = input.data.as_standard_layout();
    let mut keys = Vec::with_capacity(words.len() / 2);
    let mut it = words.iter();
    while let (Some(&a), Some(&b)) = (it.next(), it.next()) {
        keys.push([word(a)?, word(b)?]);
    }
    Some((keys, shape[..shape.len() - 1].to_vec()))
}

fn word(x: f64) -> Option<u32> {
    (x >= 0.0 && x <= f64::from(u32::MAX) && x.fract() == 0.0).then_some(x as u32)
}

fn keys_data(batch: &[usize], keys: &[Key]) -> Option<NdData> {
    let mut shape = batch.to_vec();
    shape.push(2);
    ArrayD::from_shape_vec(IxDyn(&shape), keys.iter().flat_map(|k| [f64::from(k[0]), f64::from(k[1])]).collect()).ok()
}

/// `input` broadcast to `shape` and flattened.
fn flat(input: &Input, shape: &[usize]) -> Option<Vec<f64>> {
    Some(input.data.broadcast(IxDyn(shape))?.iter().copied().collect())
}

/// `input` broadcast to `shape` as integers, `None` if a value is not an integer.
fn flat_int(input: &Input, shape: &[usize]) -> Option<Vec<i128>> {
    flat(input, shape)?.into_iter().map(|x| (x.fract() == 0.0 && x.abs() < 9.0e15).then_some(x as i128)).collect()
}

fn scalar(input: Option<&Input>) -> Option<f64> {
    let input = input?;
    (input.data.ndim() == 0).then(|| input.data.iter().next().copied()).flatten()
}

fn shaped(shape: &[usize], values: Vec<f64>) -> Option<NdData> {
    ArrayD::from_shape_vec(IxDyn(shape), values).ok()
}

/// Integer results as data; `None` if one is beyond what an f64 holds exactly.
fn int_data(shape: &[usize], values: Vec<i128>) -> Option<NdData> {
    let exact = values.iter().all(|v| v.unsigned_abs() <= 1u128 << 53);
    exact.then(|| shaped(shape, values.into_iter().map(|v| v as f64).collect())).flatten()
}

/// The data of a random primitive on concrete inputs, laid out as `out` (with the words
/// axis for typed keys). `None` when the value cannot be reproduced exactly.
pub fn kernel(prim: &Prim, ins: &[Input], out: &Aval) -> Option<NdData> {
    let size: usize = out.shape.iter().product();
    match prim {
        Prim::RandomSeed { .. } => {
            let seed = ins.first()?;
            if !seed.aval.dtype.is_integer() {
                return None;
            }
            let wide = seed.aval.dtype.itemsize() == 8;
            let keys: Option<Vec<Key>> = seed
                .data
                .iter()
                .map(|&v| {
                    let v = if seed.aval.dtype == DType::U64 { v as u64 as i128 } else { v as i64 as i128 };
                    (v.unsigned_abs() <= 1u128 << 53).then(|| self::seed(v, wide))
                })
                .collect();
            keys_data(seed.data.shape(), &keys?)
        }
        Prim::RandomSplit { shape } => {
            let (keys, batch) = keys_of(ins.first()?)?;
            let n: usize = shape.iter().product();
            keys_data(&[&batch[..], shape].concat(), &keys.into_iter().flat_map(|k| split(k, n)).collect::<Vec<_>>())
        }
        // Each key folded with its message, keys and messages broadcast against each other.
        Prim::RandomFoldIn => {
            let (keys, batch) = keys_of(ins.first()?)?;
            let data = ins.get(1)?;
            if !(data.aval.dtype.is_integer() || data.aval.dtype.is_bool()) {
                return None;
            }
            let out_batch = if out.dtype.is_key() { &out.shape[..] } else { out.shape.split_last()?.1 };
            let which = ArrayD::from_shape_vec(IxDyn(&batch), (0..keys.len()).collect()).ok()?;
            let which = which.broadcast(IxDyn(out_batch))?;
            let msgs = flat(data, out_batch)?;
            let u32_of = |v: f64| if data.aval.dtype == DType::U64 { v as u64 as u32 } else { v as i64 as u32 };
            let folded: Vec<Key> = which.iter().zip(msgs).map(|(&i, v)| fold_in(keys[i], u32_of(v))).collect();
            keys_data(out_batch, &folded)
        }
        Prim::RandomUnwrap | Prim::RandomClone => {
            let (keys, batch) = keys_of(ins.first()?)?;
            keys_data(&batch, &keys)
        }
        // `uint32[..., 2]` data becomes the words of keys `[...]`: the same data.
        Prim::RandomWrap => {
            let data = ins.first()?;
            if data.aval.dtype != DType::U32 {
                return None;
            }
            let (keys, batch) = keys_of(data)?;
            keys_data(&batch, &keys)
        }
        // One key's bits after another's (JAX's rule is vectorized over key arrays).
        Prim::RandomBits { shape } => {
            let (keys, _) = keys_of(ins.first()?)?;
            let width = (out.dtype.itemsize() * 8) as u32;
            let n: usize = shape.iter().product();
            let words = keys.into_iter().flat_map(|k| bits(k, width, n));
            int_data(&out.shape, words.map(i128::from).collect())
        }
        // A draw per key, one after another: its parameters the same for every key (`vmap` of
        // a sampler whose key alone is mapped), but one row per key of a parameter batched
        // like the keys (`vmap` of a sampler with a mapped parameter, `super::batch_rule`): an
        // elementwise parameter (`super::ELEMENTWISE_PARAMS`) or `permutation`'s `x` of the
        // keys' shape and the sample's, and every parameter of a `choice` whose `axis` has
        // the keys' shape.
        Prim::Random { dist, shape, .. } => {
            let (keys, batch) = keys_of(ins.first()?)?;
            if batch.is_empty() {
                return draw(dist, *keys.first()?, &ins[1..], out, size);
            }
            let one = Aval::new(shape, out.dtype);
            let n: usize = shape.iter().product();
            let full: Vec<usize> = batch.iter().chain(shape).copied().collect();
            let choice_per_key = *dist == "choice" && ins.get(3).is_some_and(|a| a.data.shape() == batch.as_slice());
            let per_key = |p: &Input| match *dist {
                "choice" => choice_per_key && p.data.shape().starts_with(&batch),
                d => (super::ELEMENTWISE_PARAMS.contains(&d) || d == "permutation") && p.data.shape() == full.as_slice(),
            };
            let mut flat_params = Vec::with_capacity(ins.len() - 1);
            for p in &ins[1..] {
                flat_params.push(match per_key(p) {
                    true => {
                        let row = p.data.shape()[batch.len()..].to_vec();
                        let flat = p.data.to_shape(IxDyn(&[keys.len(), row.iter().product()])).ok()?.to_owned();
                        Some((flat, row))
                    }
                    false => None,
                });
            }
            let mut values = Vec::with_capacity(size);
            for (i, k) in keys.into_iter().enumerate() {
                let rows: Vec<Option<NdData>> = flat_params
                    .iter()
                    .map(|f| f.as_ref().and_then(|(f, row)| f.index_axis(Axis(0), i).to_shape(IxDyn(row)).ok().map(|r| r.to_owned())))
                    .collect();
                let params: Vec<Input> =
                    ins[1..].iter().zip(&rows).map(|(p, r)| Input { aval: p.aval, data: r.as_ref().unwrap_or(p.data) }).collect();
                values.extend(draw(dist, k, &params, &one, n)?.as_standard_layout().iter().copied());
            }
            shaped(&out.shape, values)
        }
        families::all_but!(random) => None,
    }
}

/// The draw `random_<dist>`. Its inputs after the key, as `transforms/random.rs` binds them:
///
/// | dist | params |
/// | --- | --- |
/// | `normal` | — |
/// | `gumbel` | — (the noise of `categorical` batched by `vmap`: `super::batch_rule`) |
/// | `uniform`, `randint` | `minval`, `maxval` |
/// | `truncated_normal` | `lower`, `upper` |
/// | `bernoulli` | `p` (its dtype is the one the uniform draw is made in) |
/// | `categorical` | `logits`, `axis`, `replace` |
/// | `permutation` | none (`arange(n)`, `n` the output length), or `x`, `axis`, `independent` |
/// | `choice` | `a`, `replace`, `axis` (see [`choice`]), and `p` when given |
fn draw(dist: &str, key: Key, params: &[Input], out: &Aval, size: usize) -> Option<NdData> {
    let shape = out.shape.as_slice();
    match dist {
        "normal" if params.is_empty() => shaped(shape, normal(key, Float::of(out.dtype)?, size)),
        "gumbel" if params.is_empty() => shaped(shape, gumbel(key, Float::of(out.dtype)?, size)),
        "uniform" => {
            let dt = Float::of(out.dtype)?;
            let lo: Vec<f64> = flat(params.first()?, shape)?.into_iter().map(|x| dt.round(x)).collect();
            let hi: Vec<f64> = flat(params.get(1)?, shape)?.into_iter().map(|x| dt.round(x)).collect();
            shaped(shape, uniform(key, dt, &lo, &hi))
        }
        "truncated_normal" if out.dtype == DType::F32 => {
            let lo = flat(params.first()?, shape)?;
            let hi = flat(params.get(1)?, shape)?;
            shaped(shape, truncated_normal_f32(key, &lo, &hi))
        }
        "bernoulli" => {
            let p = params.first()?;
            let dt = Float::of(p.aval.dtype)?;
            let u = uniform(key, dt, &vec![0.0; size], &vec![1.0; size]);
            let p = flat(p, shape)?;
            shaped(shape, u.into_iter().zip(p).map(|(u, p)| f64::from(u8::from(u < p))).collect())
        }
        "randint" => {
            let (lo, hi) = (params.first()?, params.get(1)?);
            let values = randint(key, out.dtype, &flat_int(lo, shape)?, lo.aval.dtype, &flat_int(hi, shape)?, hi.aval.dtype)?;
            int_data(shape, values)
        }
        "categorical" => categorical(key, params, out),
        "permutation" => {
            if params.is_empty() {
                let n = *shape.first()?;
                return shuffle(key, &ArrayD::from_shape_fn(IxDyn(&[n]), |i| i[0] as f64), 0);
            }
            let x = params.first()?;
            let axis = scalar(params.get(1))? as usize;
            permutation(key, x.data, axis, scalar(params.get(2))? != 0.0)
        }
        "choice" => choice(key, params, out),
        _ => None,
    }
}

/// `categorical(key, logits, axis, shape, replace)`: with `replace`, the argmax of Gumbel
/// noise plus the logits; without, the top `k` of one Gumbel noise of the logits' shape plus
/// the logits ([`categorical_without_replacement`]). Params: logits, axis, replace.
fn categorical(key: Key, params: &[Input], out: &Aval) -> Option<NdData> {
    let logits = params.first()?;
    let dt = Float::of(logits.aval.dtype)?;
    let rank = logits.data.ndim();
    let axis = scalar(params.get(1))? as i64;
    let axis = if axis < 0 { axis + rank as i64 } else { axis };
    if axis < 0 || axis as usize >= rank {
        return None;
    }
    let axis = axis as usize;
    if scalar(params.get(2))? == 0.0 {
        return categorical_without_replacement(key, dt, logits.data, axis, out);
    }
    let batch = rank - 1;
    let shape = out.shape.as_slice();
    let prefix = shape.len().checked_sub(batch)?;
    let mut noise_shape = shape.to_vec();
    noise_shape.insert(prefix + axis, logits.data.shape()[axis]);
    let noise = gumbel(key, dt, noise_shape.iter().product());
    let mut expanded = vec![1usize; prefix];
    expanded.extend_from_slice(logits.data.shape());
    let l = logits.data.to_shape(IxDyn(&expanded)).ok()?;
    let l = l.broadcast(IxDyn(&noise_shape))?;
    let sum: Vec<f64> = noise.iter().zip(l.iter()).map(|(&g, &x)| dt.round(g + x)).collect();
    let sum = ArrayD::from_shape_vec(IxDyn(&noise_shape), sum).ok()?;
    let arg = sum.map_axis(Axis(prefix + axis), |lane| {
        let mut best = 0usize;
        for (i, &x) in lane.iter().enumerate() {
            if x.is_nan() {
                return i as f64;
            }
            if x > lane[best] {
                best = i;
            }
        }
        best as f64
    });
    (arg.shape() == shape).then_some(arg)
}

/// JAX's `_categorical` without replacement: `logits + gumbel(key, logits.shape)`, its
/// class axis moved last, `lax.top_k` of `k = prod(shape[:-len(batch)])` indices, which
/// `lax.reshape` with `dimensions=(k's axis, *the rest)` lays out as `shape`.
fn categorical_without_replacement(key: Key, dt: Float, logits: &NdData, axis: usize, out: &Aval) -> Option<NdData> {
    let noise = gumbel(key, dt, logits.len());
    let sum: Vec<f64> = logits.iter().zip(&noise).map(|(&x, &g)| dt.round(x + g)).collect();
    let sum = ArrayD::from_shape_vec(logits.raw_dim(), sum).ok()?;
    // `jnp.moveaxis(x, axis, -1)`.
    let moved: Vec<usize> = (0..logits.ndim()).filter(|&i| i != axis).chain([axis]).collect();
    let sum = sum.permuted_axes(IxDyn(&moved)).as_standard_layout().to_owned();
    let batch: usize = sum.shape()[..sum.ndim() - 1].iter().product();
    let k = out.shape.iter().product::<usize>().checked_div(batch)?;
    let mut top_shape = sum.shape().to_vec();
    *top_shape.last_mut()? = k;
    let top = crate::jax::prims::reductions::top_k_kernel(&sum, k, true, &top_shape)?;
    // `(k, *batch)`, then the sample's shape.
    let last = top.ndim() - 1;
    let front: Vec<usize> = std::iter::once(last).chain(0..last).collect();
    let top = top.permuted_axes(IxDyn(&front)).as_standard_layout().to_owned();
    top.into_shape_with_order(IxDyn(&out.shape)).ok()
}

/// `choice(key, a, shape, replace, p=None, axis)`. Params: `a` (a scalar int for
/// `arange(a)`, or an array), `replace`, and `axis` as a scalar of the default int dtype,
/// which is the dtype `randint` draws the indices in; a fourth, `p` ([`choice_with_p`]).
fn choice(key: Key, params: &[Input], out: &Aval) -> Option<NdData> {
    let a = &params[0];
    let replace = scalar(params.get(1))? != 0.0;
    match params.len() {
        3 => {}
        4 => return choice_with_p(key, a, replace, scalar(params.get(2))? as usize, &params[3], out),
        _ => return None,
    }
    let index_dtype = params[2].aval.dtype;
    let shape = out.shape.as_slice();
    if a.data.ndim() == 0 {
        let n = scalar(Some(a))? as i128;
        let draws: usize = shape.iter().product();
        if draws == 0 {
            return shaped(shape, vec![0.0; 0]);
        }
        if n <= 0 || (!replace && draws as i128 > n) {
            return None;
        }
        if replace {
            let values = randint(key, index_dtype, &vec![0; draws], index_dtype, &vec![n; draws], index_dtype)?;
            return int_data(shape, values);
        }
        // Drawing without replacement shuffles the whole population: not computed past the
        // element budget's default, whatever the sample's size.
        if n > 4_000_000 {
            return None;
        }
        let perm = shuffle(key, &ArrayD::from_shape_fn(IxDyn(&[n.max(0) as usize]), |i| i[0] as f64), 0)?;
        return shaped(shape, perm.iter().take(draws).copied().collect());
    }
    let axis = scalar(params.get(2))? as usize;
    let arr = a.data;
    let rank = arr.ndim();
    if axis >= rank {
        return None;
    }
    let n = arr.shape()[axis];
    // The output shape is `a.shape[:axis] + sample_shape + a.shape[axis + 1:]`.
    let sample_shape = shape.get(axis..(axis + shape.len() + 1).checked_sub(rank)?)?;
    let draws: usize = sample_shape.iter().product();
    if n == 0 || (!replace && draws > n) {
        return None;
    }
    let picked = if replace {
        let idx = randint(key, index_dtype, &vec![0; draws], index_dtype, &vec![n as i128; draws], index_dtype)?;
        let idx: Vec<usize> = idx.into_iter().map(|i| i as usize).collect();
        arr.select(Axis(axis), &idx)
    } else {
        let perm = permutation(key, arr, axis, false)?;
        perm.slice_axis(Axis(axis), ndarray::Slice::from(..draws)).to_owned()
    };
    picked.as_standard_layout().to_owned().into_shape_with_order(IxDyn(shape)).ok()
}

/// `choice` with `p` and without replacement, JAX's Gumbel top-k trick: the indices of the
/// `draws` largest of `gumbel(key, (n,), p.dtype) + log(p)` (`lax.top_k`'s order), which
/// are the sample for `arange(a)` and pick from an array `a` along `axis`. With replacement
/// JAX draws against `cumsum(p)`, which XLA sums in its reduce-window order (not the
/// running sum past 32 elements): not computed.
fn choice_with_p(key: Key, a: &Input, replace: bool, axis: usize, p: &Input, out: &Aval) -> Option<NdData> {
    let dt = Float::of(p.aval.dtype)?;
    if replace || p.data.ndim() != 1 {
        return None;
    }
    let n = p.data.len();
    let rank = a.data.ndim();
    let draws: usize = match rank {
        0 => out.shape.iter().product(),
        _ => out.shape.get(axis..(axis + out.shape.len() + 1).checked_sub(rank)?)?.iter().product(),
    };
    let from = if rank == 0 { scalar(Some(a))? } else { *a.data.shape().get(axis)? as f64 };
    if from != n as f64 || draws > n || n == 0 {
        return None;
    }
    let log = |x: f64| match dt {
        Float::F32 => f64::from(log_f32(x as f32)),
        Float::F64 => x.ln(),
    };
    let scores: Vec<f64> = gumbel(key, dt, n).into_iter().zip(p.data.iter()).map(|(g, &q)| dt.round(g + log(q))).collect();
    let scores = ArrayD::from_shape_vec(IxDyn(&[n]), scores).ok()?;
    let top = crate::jax::prims::reductions::top_k_kernel(&scores, draws, true, &[draws])?;
    let idx: Vec<usize> = top.iter().map(|&i| i as usize).collect();
    let picked = match rank {
        0 => ArrayD::from_shape_vec(IxDyn(&[draws]), top.iter().copied().collect()).ok()?,
        _ => a.data.select(Axis(axis), &idx),
    };
    picked.as_standard_layout().to_owned().into_shape_with_order(IxDyn(&out.shape)).ok()
}

/// A structural primitive applied to typed keys, whose data has the words axis last: the
/// same operation on the data with that axis carried along. `None` for anything else.
pub fn key_layout_kernel(prim: &Prim, ins: &[Input], out: &Aval) -> Option<NdData> {
    let typed = |i: &Input| i.aval.dtype.is_key() && i.data.ndim() == i.aval.ndim() + 1 && i.data.shape().last() == Some(&2);
    let out_shape = crate::jax::eval::held_shape(out);
    match prim {
        // `select_n(which, *cases)` of keys: the predicate has no words axis.
        Prim::Select => {
            let (which, cases) = ins.split_first()?;
            if which.aval.dtype.is_key() || !cases.iter().all(typed) {
                return None;
            }
            let which: Vec<f64> = which.data.broadcast(IxDyn(&out.shape))?.iter().copied().collect();
            let cases: Vec<Vec<f64>> =
                cases.iter().map(|c| Some(c.data.broadcast(IxDyn(&out_shape))?.iter().copied().collect())).collect::<Option<_>>()?;
            let mut words = Vec::with_capacity(2 * which.len());
            for (i, &w) in which.iter().enumerate() {
                words.extend_from_slice(cases.get(w as usize)?.get(2 * i..2 * i + 2)?);
            }
            return ArrayD::from_shape_vec(IxDyn(&out_shape), words).ok();
        }
        // Keys are equal when both their words are.
        Prim::Compare(c @ (crate::jax::ir::CmpPrim::Eq | crate::jax::ir::CmpPrim::Ne)) => {
            let (a, b) = (ins.first()?, ins.get(1)?);
            if !typed(a) || !typed(b) {
                return None;
            }
            let eq = *c == crate::jax::ir::CmpPrim::Eq;
            let key_shape = crate::jax::eval::held_shape(&out.with_dtype(DType::Key));
            let (a, b) = (a.data.broadcast(IxDyn(&key_shape))?, b.data.broadcast(IxDyn(&key_shape))?);
            let same = ndarray::Zip::from(a.lanes(Axis(out.ndim())))
                .and(b.lanes(Axis(out.ndim())))
                .map_collect(|x, y| f64::from(u8::from((x == y) == eq)));
            return Some(same.into_dyn()).filter(|d| d.shape() == out.shape.as_slice());
        }
        families::movement!()
        | families::reductions!()
        | families::random!()
        | families::control_flow!()
        | families::calls!()
        | Prim::Unary(_)
        | Prim::Binary(_)
        | Prim::Compare(_)
        | Prim::Clamp
        | Prim::IntegerPow(_)
        | Prim::ConvertElementType { .. }
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::DotGeneral { .. }
        | Prim::Gather { .. }
        | Prim::Scatter { .. }
        | Prim::DebugCallback
        | Prim::StopGradient
        | Prim::Opaque(_)
        | Prim::Linalg(_)
        | Prim::Block(_) => {}
    }
    if !ins.iter().all(typed) {
        return None;
    }
    let a = ins.first()?.data;
    Some(match prim {
        Prim::Slice { start, limit, strides } => {
            let mut info: Vec<ndarray::SliceInfoElem> = start
                .iter()
                .zip(limit)
                .zip(strides)
                .map(|((&s, &l), &st)| ndarray::SliceInfoElem::Slice { start: s as isize, end: Some(l as isize), step: st.max(1) as isize })
                .collect();
            info.push(ndarray::SliceInfoElem::Slice { start: 0, end: None, step: 1 });
            if info.len() != a.ndim() {
                return None;
            }
            a.slice(info.as_slice()).to_owned()
        }
        Prim::Reshape { .. } | Prim::Squeeze { .. } => a.as_standard_layout().to_owned().into_shape_with_order(IxDyn(&out_shape)).ok()?,
        Prim::Concatenate { dimension } => {
            let views: Vec<_> = ins.iter().map(|i| i.data.view()).collect();
            ndarray::concatenate(Axis(*dimension), &views).ok()?
        }
        Prim::Transpose { permutation } => {
            let mut p = permutation.clone();
            p.push(p.len());
            a.clone().permuted_axes(IxDyn(&p)).as_standard_layout().to_owned()
        }
        Prim::Rev { dimensions } => {
            let mut a = a.clone();
            for &d in dimensions {
                a.invert_axis(Axis(d));
            }
            a.as_standard_layout().to_owned()
        }
        Prim::BroadcastInDim { shape, broadcast_dimensions } => {
            let mut expanded = vec![1usize; shape.len()];
            for (i, &d) in broadcast_dimensions.iter().enumerate() {
                expanded[d] = *a.shape().get(i)?;
            }
            expanded.push(2);
            let r = a.to_shape(IxDyn(&expanded)).ok()?.to_owned();
            r.broadcast(IxDyn(&out_shape))?.to_owned()
        }
        Prim::Unary(crate::jax::ir::UnaryPrim::Copy) | Prim::StopGradient => a.clone(),
        Prim::Unary(_)
        | Prim::Binary(_)
        | Prim::Compare(_)
        | Prim::Select
        | Prim::Clamp
        | Prim::IntegerPow(_)
        | Prim::ConvertElementType { .. }
        | Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::Pad { .. }
        | families::all_but!(elementwise movement) => return None,
    })
    .filter(|d: &NdData| d.shape() == out_shape.as_slice())
}

/// Keeps the kernel inputs alive while they are borrowed as [`Input`]s.
pub fn inputs<'a>(avals: &'a [&'a Aval], datas: &'a [Rc<NdData>]) -> Vec<Input<'a>> {
    avals.iter().zip(datas).map(|(aval, data)| Input { aval, data }).collect()
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn threefry_matches_the_random123_known_answers() {
        assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6B20_0159, 0x99BA_4EFE]);
        assert_eq!(threefry2x32([u32::MAX, u32::MAX], [u32::MAX, u32::MAX]), [0x1CB9_96FC, 0xBB00_2BE7]);
        assert_eq!(threefry2x32([0x1319_8A2E, 0x0370_7344], [0x243F_6A88, 0x85A3_08D3]), [0xC492_3A9C, 0x483D_F7A0]);
    }

    fn keys_split_and_fold_in_as_jax_does() {
        // jax.random.key_data(jax.random.split(jax.random.key(0))) and fold_in(key(0), 1).
        assert_eq!(split(seed(0, false), 2), vec![[1_797_259_609, 2_579_123_966], [928_981_903, 3_453_687_069]]);
        assert_eq!(fold_in(seed(0, false), 1), [928_981_903, 3_453_687_069]);
        assert_eq!(fold_in(seed(0, false), u32::MAX), [743_310_391, 3_789_761_811]);
        assert_eq!(seed(-1, false), [0, u32::MAX]);
        assert_eq!(seed(-1, true), [u32::MAX, u32::MAX]);
        assert_eq!(seed(1 << 32, false), [0, 0]);
    }

    fn normal_and_uniform_of_key_zero() {
        let n: Vec<f32> = normal(seed(0, false), Float::F32, 3).into_iter().map(|x| x as f32).collect();
        assert_eq!(n, vec![1.622_642_2, 2.025_264_7, -0.433_594_44]);
        let u: Vec<f32> = uniform(seed(0, false), Float::F32, &[0.0; 3], &[1.0; 3]).into_iter().map(|x| x as f32).collect();
        assert_eq!(u, vec![0.947_667, 0.978_579_9, 0.332_291_48]);
    }

    fn xla_log_is_exact_where_it_must_be() {
        assert_eq!(log_f32(1.0), 0.0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert!(log_f32(-1.0).is_nan());
        assert_eq!(log1p_f32(0.0), 0.0);
        assert!((log_f32(2.0) - std::f32::consts::LN_2).abs() <= f32::EPSILON);
    }

    fn randint_wraps_like_unsigned_xla_arithmetic() {
        let i32_t = DType::I32;
        let v = randint(seed(0, false), i32_t, &[0; 5], i32_t, &[10; 5], i32_t).unwrap_or_default();
        assert_eq!(v, vec![9, 0, 2, 3, 1]);
    }

    crate::unit_tests::list![
        threefry_matches_the_random123_known_answers,
        keys_split_and_fold_in_as_jax_does,
        normal_and_uniform_of_key_zero,
        xla_log_is_exact_where_it_must_be,
        randint_wraps_like_unsigned_xla_arithmetic
    ];
}
