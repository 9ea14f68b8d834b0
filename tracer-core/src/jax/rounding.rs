//! Element values rounded to what their dtype holds, as XLA on CPU rounds them: float32
//! subnormals flushed, bfloat16/float16 rounded to nearest, integers wrapped as two's
//! complement. A leaf below the evaluator (`eval.rs` and `eval_ints.rs` re-export it), so the
//! printer and the array layer's users round without reaching the evaluator.

use super::dtypes::DType;

/// Rounds a value to what `dtype` can hold.
pub fn round_to(x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::Bool => (x != 0.0) as i64 as f64,
        // XLA on CPU flushes float32 subnormals to zero: exp(-101.0) is 0.0, not 1.4e-44.
        DType::F32 | DType::C64 => flush_f32(x as f32) as f64,
        // XLA on CPU computes bfloat16 and float16 operations in float32 and rounds each
        // result to the narrow type (round to nearest, ties to even): `1/3` in bfloat16 is
        // 0.333984375. bfloat16 has float32's exponent range, so its subnormals are float32
        // subnormals, flushed like them (`jnp.array([1e-40], jnp.bfloat16) * 1` is `[0]`);
        // float16 subnormals are normal float32 numbers and survive (`1e-07`).
        DType::BF16 => half::bf16::from_f32(flush_f32(x as f32)).to_f64(),
        DType::F16 => half::f16::from_f32(x as f32).to_f64(),
        DType::F64 | DType::C128 => x,
        DType::I8 => (x as i64 as i8) as f64,
        DType::I16 => (x as i64 as i16) as f64,
        DType::I32 => (x as i64 as i32) as f64,
        DType::I64 => wrap(x as i128, DType::I64) as f64,
        DType::U8 => (x as i64 as u8) as f64,
        DType::U16 => (x as i64 as u16) as f64,
        // A key's data is its uint32 words.
        DType::U32 | DType::Key => (x as i64 as u32) as f64,
        DType::U64 => x as u64 as f64,
    }
}

/// float32 subnormals flushed to zero, as XLA on CPU does (`round_to`).
#[inline(always)]
pub(crate) fn flush_f32(x: f32) -> f32 {
    if x.abs() < f32::MIN_POSITIVE {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// `v` wrapped to `dtype` as two's complement, as XLA's integer arithmetic does
/// (`int32(2**31 - 1) + 1 == -2**31`, `uint8(0) - 1 == 255`).
pub fn wrap(v: i128, dtype: DType) -> i128 {
    match dtype {
        DType::I8 => v as i8 as i128,
        DType::I16 => v as i16 as i128,
        DType::I32 => v as i32 as i128,
        DType::I64 => v as i64 as i128,
        DType::U8 => v as u8 as i128,
        DType::U16 => v as u16 as i128,
        DType::U32 => v as u32 as i128,
        DType::U64 => v as u64 as i128,
        DType::Bool => i128::from(v != 0),
        _ => v,
    }
}
