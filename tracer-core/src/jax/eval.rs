//! CPU kernels: concrete values for primitives, computed on demand with ndarray. A primitive
//! without a kernel yet gives `None`, and its value stays unknown (never guessed).
//!
//! Size: the kernels of every primitive not yet written as a block in `jax/prims/`, their f32 fast
//! paths and the gemm; they move there family by family (issue 21).

use crate::jax::prims::families;
use std::cell::RefCell;
use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};

use super::array::{Array, ArrayKind, Lazy, NdData, NdDataF32};
use super::dtypes::DType;
use super::eval_cost;
use super::eval_ints::{self, NdInts};
use super::indexing;
use super::ir::{ArgOp, BinaryPrim, CmpPrim, Prim, ReduceOp, UnaryPrim};
use super::linalg;
use super::prims::elementwise::{binary_fn, divides_by_reciprocal, exp_in, max_f64, min_f64, next_after_16, reciprocal, unary_fn};
use super::prims::products::{dot_general_kernel, dot_general_kernel_f32, DotDims};
use super::prims::reductions::{reduce_f32, reduce_kernel, reduce_sum_narrow, sort_by_keys, top_k_kernel};
use super::prims::shape::rearrange;
use super::random;

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
        DType::I64 => wrap_int(x as i128, DType::I64),
        DType::U8 => (x as i64 as u8) as f64,
        DType::U16 => (x as i64 as u16) as f64,
        // A key's data is its uint32 words.
        DType::U32 | DType::Key => (x as i64 as u32) as f64,
        DType::U64 => x as u64 as f64,
    }
}

/// Why an int64/uint64 value from 2**53 on is not computed.
pub const INT64_PAST_2_53: &str =
    "int64 values from 2**53 on are held exactly only by the integer kernels, and this operation has none yet";

/// Whether `data` stands for values of `dtype` exactly. The data is f64, so an int64 or
/// uint64 value from 2**53 on may have lost its low bits (`2**53 + 1` reads as `2**53`):
/// such values are not computed rather than printed wrong.
pub fn exact_in_f64(data: &NdData, dtype: DType) -> bool {
    const LIMIT: f64 = 9_007_199_254_740_992.0;
    !matches!(dtype, DType::I64 | DType::U64) || data.iter().all(|x| x.abs() < LIMIT)
}

/// An integer result wrapped to `dtype` as two's complement, as XLA's integer arithmetic
/// does (`int32(2**31 - 1) + 1 == -2**31`, `uint8(0) - 1 == 255`).
pub fn wrap_int(v: i128, dtype: DType) -> f64 {
    eval_ints::wrap(v, dtype) as f64
}

/// A float converted to an integer dtype as XLA converts: toward zero, NaN to 0, and values
/// past the dtype's range saturated (`float32(-2.5).astype(uint8) == 0`).
pub(crate) fn float_to_int(x: f64, dtype: DType) -> f64 {
    if x.is_nan() {
        return 0.0;
    }
    let (lo, hi) = match dtype {
        DType::I8 => (i8::MIN as f64, i8::MAX as f64),
        DType::I16 => (i16::MIN as f64, i16::MAX as f64),
        DType::I32 => (i32::MIN as f64, i32::MAX as f64),
        DType::I64 => (i64::MIN as f64, i64::MAX as f64),
        DType::U8 => (0.0, u8::MAX as f64),
        DType::U16 => (0.0, u16::MAX as f64),
        DType::U32 => (0.0, u32::MAX as f64),
        DType::U64 => (0.0, u64::MAX as f64),
        _ => return x,
    };
    x.trunc().clamp(lo, hi)
}

/// Rounds to `dtype`'s precision: float32 intermediate steps of XLA's formulas.
pub(crate) fn in_precision(x: f64, dtype: DType) -> f64 {
    if dtype == DType::F64 {
        x
    } else {
        x as f32 as f64
    }
}

/// `ln(2)` and `ln(1/2)` as constants of `dtype`.
pub(crate) fn ln2(dtype: DType) -> f64 {
    in_precision(std::f64::consts::LN_2, dtype)
}

/// The data of a concrete array (or a tracer's known primal), computing it if needed.
/// `None` when unknown or larger than `max_elements`, and for typed PRNG keys: their data
/// has a trailing axis for the two key words that their aval does not show, and only the
/// random kernels read it.
pub fn force(array: &Rc<Array>, max_elements: u64) -> Option<Rc<NdData>> {
    force_at_depth(array, max_elements, 0).filter(|d| d.shape() == array.aval.shape.as_slice())
}

/// The data of a typed PRNG key array (dtype `key<fry>`): its `uint32` words, with the
/// trailing axis of 2 its aval does not show. `None` for other arrays and when unknown.
pub fn force_key_data(array: &Rc<Array>, max_elements: u64) -> Option<Rc<NdData>> {
    if !array.aval.dtype.is_key() {
        return None;
    }
    force_at_depth(array, max_elements, 0).filter(|d| d.shape() == held_shape(&array.aval).as_slice())
}

/// The data of any concrete array as it is held: [`force`], or for typed PRNG keys
/// [`force_key_data`] (with the words axis). For code that moves elements without reading them
/// (the control-flow evaluator's slices and stacks).
pub fn force_held(array: &Rc<Array>, max_elements: u64) -> Option<Rc<NdData>> {
    if array.aval.dtype.is_key() {
        force_key_data(array, max_elements)
    } else {
        force(array, max_elements)
    }
}

/// The shape of the data [`force_held`] gives for `aval`: a key's words axis is appended.
pub fn held_shape(aval: &super::aval::Aval) -> Vec<usize> {
    let mut shape = aval.shape.to_vec();
    if aval.dtype.is_key() {
        shape.push(2);
    }
    shape
}

/// Longest chain of pending operations computed in one go (deeper chains stay unknown, so
/// forcing never exhausts the stack).
const MAX_FORCE_DEPTH: usize = 512;

fn force_at_depth(array: &Rc<Array>, max_elements: u64, depth: usize) -> Option<Rc<NdData>> {
    match force_stored(array, max_elements, depth)? {
        Stored::F64(d) => Some(d),
        Stored::F32(d, _) => Some(Rc::new(widen(&d))),
        // Past 2**53: f64 would not hold them (`force_ints` does).
        Stored::Ints(_) => None,
    }
}

/// The value of an integer or bool array, exactly: an int64 value from 2**53 on too.
pub fn force_ints(array: &Rc<Array>, max_elements: u64) -> Option<Rc<NdInts>> {
    if !(array.aval.dtype.is_integer() || array.aval.dtype.is_bool()) {
        return None;
    }
    match force_stored(array, max_elements, 0)? {
        Stored::Ints(d) => Some(d),
        Stored::F64(d) => Some(Rc::new(eval_ints::from_f64(&d))),
        Stored::F32(d, _) => Some(Rc::new(eval_ints::from_f64(&widen(&d)))),
    }
}

/// An array's data as it is stored: float32 and bool values computed by the float32 path
/// stay in f32 until something outside the kernels asks for them.
enum Stored {
    F64(Rc<NdData>),
    /// With whether every element is known to be finite (`Lazy::ReadyF32`).
    F32(NdDataF32, bool),
    /// int64/uint64 data holding a value from 2**53 on (`Lazy::ReadyInts`).
    Ints(Rc<NdInts>),
}

/// f32 data as `NdData`, in standard layout.
fn widen(d: &NdDataF32) -> NdData {
    d.mapv(f64::from).as_standard_layout().into_owned()
}

/// The dtypes whose values the float32 path holds in f32: every value of them is exact there.
fn held_in_f32(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::Bool)
}

/// NaN and Inf counts of an array's value, and its size, computing it if needed and without
/// widening f32 data. `None` when the value is not computed (see `force`).
pub fn non_finite_counts(array: &Rc<Array>, max_elements: u64) -> Option<(usize, usize, usize)> {
    /// A first pass that only asks whether anything is not finite (it vectorises), then
    /// the counts when something is.
    fn counts<T: Copy + Into<f64>>(values: &ndarray::ArrayRef<T, IxDyn>, is_finite: impl Fn(T) -> bool) -> (usize, usize) {
        let any_not_finite = match values.as_slice_memory_order() {
            Some(s) => vectorised(
                #[inline(always)]
                || s.iter().fold(false, |any, &x| any | !is_finite(x)),
            ),
            None => values.iter().any(|&x| !is_finite(x)),
        };
        if !any_not_finite {
            (0, 0)
        } else {
            count_non_finite(values.iter().map(|&x| x.into()))
        }
    }
    let (nan, inf, size) = match force_stored(array, max_elements, 0)? {
        Stored::F64(d) if d.shape() == array.aval.shape.as_slice() => {
            let (nan, inf) = counts(&d, |x: f64| x.is_finite());
            (nan, inf, d.len())
        }
        Stored::F32(d, true) if d.shape() == array.aval.shape.as_slice() => (0, 0, d.len()),
        Stored::F32(d, false) if d.shape() == array.aval.shape.as_slice() => {
            let (nan, inf) = counts(&d, |x: f32| x.is_finite());
            (nan, inf, d.len())
        }
        Stored::Ints(d) => (0, 0, d.len()),
        _ => return None,
    };
    Some((nan, inf, size))
}

/// Counts of NaN and Inf values.
pub fn count_non_finite(values: impl Iterator<Item = f64>) -> (usize, usize) {
    values.fold((0, 0), |(n, i), x| (n + usize::from(x.is_nan()), i + usize::from(x.is_infinite())))
}

fn force_stored(array: &Rc<Array>, max_elements: u64, depth: usize) -> Option<Stored> {
    let known = array.known()?;
    let ArrayKind::Concrete(cell) = &known.kind else {
        return None;
    };
    // Complex values are not modelled (data is real f64): unknown, never wrong.
    // The extent, not the size: an empty array with a huge axis is not made either.
    if known.aval.extent() > max_elements as u128 || known.aval.dtype.is_complex() || depth > MAX_FORCE_DEPTH {
        return None;
    }
    let pending = match &*cell.borrow() {
        Lazy::Ready(d) => return Some(Stored::F64(d.clone())),
        Lazy::ReadyF32(d, finite) => return Some(Stored::F32(d.clone(), *finite)),
        Lazy::ReadyInts(d) => return Some(Stored::Ints(d.clone())),
        Lazy::Unknown(_) => return None,
        Lazy::Pending(prim, inputs) => Ok((prim.clone(), inputs.clone())),
        Lazy::Call(call, i) => Err((call.clone(), *i)),
    };
    let (prim, inputs) = match pending {
        Ok(pending) => pending,
        Err((call, i)) => {
            let data = call.output(i).and_then(|out| force_stored(&out, max_elements, depth + 1));
            *cell.borrow_mut() = match &data {
                Some(Stored::F64(d)) => Lazy::Ready(d.clone()),
                Some(Stored::F32(d, finite)) => Lazy::ReadyF32(d.clone(), *finite),
                Some(Stored::Ints(d)) => Lazy::ReadyInts(d.clone()),
                None => Lazy::Unknown("it depends on a value that is not computed"),
            };
            return data;
        }
    };
    if inputs.iter().any(|i| i.aval.dtype.is_complex()) {
        return None;
    }
    // Decided before any input is computed: a kernel cannot be stopped halfway.
    let in_avals: Vec<&super::aval::Aval> = inputs.iter().map(|i| &i.aval).collect();
    if eval_cost::cost(&prim, &in_avals, &known.aval) > eval_cost::MAX_COST {
        *cell.borrow_mut() = Lazy::Unknown(eval_cost::TOO_COSTLY);
        return None;
    }
    if !crate::interp::memory::fits(crate::interp::memory::array_bytes(known.aval.size())) {
        // Not remembered: the memory may be free again at the next use.
        return None;
    }
    let in_dtypes: Vec<DType> = inputs.iter().map(|i| i.aval.dtype).collect();
    if held_in_f32(known.aval.dtype) && in_dtypes.iter().all(|&d| held_in_f32(d)) && super::prims::properties::has_f32_kernel(&prim) {
        let mut datas = Vec::with_capacity(inputs.len());
        let mut inputs_finite = true;
        let fused = masked_product(&prim, &inputs, &known.aval, max_elements, depth)
            .or_else(|| masked_select(&prim, &inputs, &known.aval, max_elements, depth));
        if let Some((data, finite)) = fused {
            *cell.borrow_mut() = Lazy::ReadyF32(data.clone(), finite);
            return Some(Stored::F32(data, finite));
        }
        for i in &inputs {
            let (data, finite) = force_f32(i, max_elements, depth + 1)?;
            datas.push(data);
            inputs_finite &= finite;
        }
        if let Some((data, finite)) = kernel_f32(&prim, &datas, &in_dtypes, &known.aval.shape, known.aval.dtype) {
            let finite = finite || (inputs_finite && keeps_finite(&prim));
            *cell.borrow_mut() = Lazy::ReadyF32(data.clone(), finite);
            return Some(Stored::F32(data, finite));
        }
    }
    let mut stored = Vec::with_capacity(inputs.len());
    for i in &inputs {
        stored.push(force_stored(i, max_elements, depth + 1)?);
    }
    // A jitted call's value comes from its instantiated body (eval_jaxpr.rs), never from a
    // kernel: its inputs (a model's parameters) are not widened for nothing.
    if super::prims::properties::is_call(&prim) {
        *cell.borrow_mut() = Lazy::Unknown("no CPU kernel for this operation yet");
        return None;
    }
    if stored.iter().any(|d| matches!(d, Stored::Ints(_))) {
        return exact_ints(cell, &prim, &stored, &in_dtypes, &known.aval.shape, known.aval.dtype);
    }
    let datas: Vec<Rc<NdData>> = stored
        .iter()
        .map(|d| match d {
            Stored::F64(d) => d.clone(),
            Stored::F32(d, _) => Rc::new(widen(d)),
            Stored::Ints(_) => unreachable!("exact integers are computed by `exact_ints` above"),
        })
        .collect();
    let avals: Vec<&super::aval::Aval> = inputs.iter().map(|i| &i.aval).collect();
    let result = if super::prims::properties::is_random(&prim) {
        random::kernel(&prim, &random::inputs(&avals, &datas), &known.aval)
    } else if inputs.iter().zip(&datas).any(|(i, d)| d.shape() != i.aval.shape.as_slice()) {
        random::key_layout_kernel(&prim, &random::inputs(&avals, &datas), &known.aval)
    } else {
        kernel(&prim, &datas, &in_dtypes, &known.aval.shape, known.aval.dtype)
    };
    let mut slot = cell.borrow_mut();
    match result {
        Some(mut data) => {
            let dtype = known.aval.dtype;
            if !dtype.is_floating() || dtype != DType::F64 {
                data.mapv_inplace(|x| round_to(x, dtype));
            }
            if !exact_in_f64(&data, dtype) {
                // Past 2**53 in f64: computed again, exactly.
                drop(slot);
                return exact_ints(cell, &prim, &stored, &in_dtypes, &known.aval.shape, dtype);
            }
            let data = Rc::new(data);
            *slot = Lazy::Ready(data.clone());
            Some(Stored::F64(data))
        }
        None => {
            *slot = Lazy::Unknown("no CPU kernel for this operation yet");
            None
        }
    }
}

/// `prim` on integer inputs of which one holds a value from 2**53 on, or whose f64 result
/// would (`eval_ints`): computed exactly, stored as f64 again when every value fits it.
fn exact_ints(
    cell: &RefCell<Lazy>,
    prim: &Prim,
    inputs: &[Stored],
    in_dtypes: &[DType],
    out_shape: &[usize],
    out_dtype: DType,
) -> Option<Stored> {
    let ints: Option<Vec<Rc<NdInts>>> = inputs
        .iter()
        .zip(in_dtypes)
        .map(|(d, dtype)| match d {
            Stored::Ints(d) => Some(d.clone()),
            Stored::F64(d) if dtype.is_integer() || dtype.is_bool() => Some(Rc::new(eval_ints::from_f64(d))),
            // A predicate, held in f32 as bools are.
            Stored::F32(d, _) if dtype.is_bool() => Some(Rc::new(eval_ints::from_f64(&widen(d)))),
            _ => None,
        })
        .collect();
    let computed = ints.and_then(|ints| eval_ints::kernel(prim, &ints, in_dtypes, out_shape, out_dtype));
    let (lazy, stored) = match computed {
        Some(eval_ints::Computed::Ints(d)) if !eval_ints::fits_f64(&d) => {
            let d = Rc::new(d);
            (Lazy::ReadyInts(d.clone()), Stored::Ints(d))
        }
        Some(eval_ints::Computed::Ints(d)) => {
            let d = Rc::new(eval_ints::to_f64(&d));
            (Lazy::Ready(d.clone()), Stored::F64(d))
        }
        Some(eval_ints::Computed::Floats(d)) => {
            let d = Rc::new(d);
            (Lazy::Ready(d.clone()), Stored::F64(d))
        }
        None => {
            *cell.borrow_mut() = Lazy::Unknown(INT64_PAST_2_53);
            return None;
        }
    };
    *cell.borrow_mut() = lazy;
    Some(stored)
}

/// A pending operation's primitive and inputs, when `array` is still to be computed.
fn pending(array: &Rc<Array>) -> Option<(Prim, Vec<Rc<Array>>)> {
    let known = array.known()?;
    let ArrayKind::Concrete(cell) = &known.kind else { return None };
    let pending = match &*cell.borrow() {
        Lazy::Pending(prim, inputs) => Some((prim.clone(), inputs.clone())),
        _ => None,
    };
    pending
}

/// `$row_loop(args..., cmp)` with the comparison `$cmp` as a closure on two f32s, one
/// monomorphised loop per comparison (the fused loops of `masked_product`, `masked_select`).
macro_rules! by_comparison {
    ($cmp:expr, $row_loop:ident($($arg:expr),*)) => {
        match $cmp {
            CmpPrim::Eq => $row_loop($($arg,)* |p: f32, q: f32| p == q),
            CmpPrim::Ne => $row_loop($($arg,)* |p: f32, q: f32| p != q),
            CmpPrim::Lt => $row_loop($($arg,)* |p: f32, q: f32| p < q),
            CmpPrim::Le => $row_loop($($arg,)* |p: f32, q: f32| p <= q),
            CmpPrim::Gt => $row_loop($($arg,)* |p: f32, q: f32| p > q),
            CmpPrim::Ge => $row_loop($($arg,)* |p: f32, q: f32| p >= q),
        }
    };
}

/// `x * convert(a <cmp> b)` in float32, the mask of a `relu`'s or `where`'s derivative, in
/// one pass over `x`, `a` and `b` when the comparison and the conversion are still pending
/// (values mode leaves them to their one reader, `eval_jaxpr::instantiate_with`): neither
/// the comparison's nor the conversion's array is materialised. Each element is what the
/// three kernels give one after the other. `None` when the operation is not of this form or
/// an operand is not in a layout `Rows` takes.
fn masked_product(
    prim: &Prim,
    inputs: &[Rc<Array>],
    aval: &super::aval::Aval,
    max_elements: u64,
    depth: usize,
) -> Option<(NdDataF32, bool)> {
    if !matches!(prim, Prim::Binary(BinaryPrim::Mul)) || aval.dtype != DType::F32 || inputs.len() != 2 {
        return None;
    }
    let mask_at =
        inputs.iter().position(|i| i.aval.dtype == DType::F32 && matches!(pending(i), Some((Prim::ConvertElementType { .. }, _))))?;
    let (_, converted) = pending(&inputs[mask_at])?;
    let [truth] = converted.as_slice() else { return None };
    let (Prim::Compare(cmp), compared) = pending(truth)? else { return None };
    let [a, b] = compared.as_slice() else { return None };
    if truth.aval.dtype != DType::Bool || a.aval.dtype != DType::F32 || b.aval.dtype != DType::F32 {
        return None;
    }
    let x = force_f32(&inputs[1 - mask_at], max_elements, depth + 1)?.0;
    let (a, b) = (force_f32(a, max_elements, depth + 1)?.0, force_f32(b, max_elements, depth + 1)?.0);
    let shape = aval.shape.as_slice();
    let (x, a, b) = (rows(&x, shape)?, rows(&a, shape)?, rows(&b, shape)?);
    // `mul`'s operands in their order: the mask is 0.0 or 1.0, never NaN, so the product's
    // bits do not depend on the order anyway.
    Some(by_comparison!(cmp, mask_rows(x, a, b, shape)))
}

/// `select_n(a <cmp> b, f, t)` in float32, the derivative of a `relu` (its `custom_jvp` rule
/// selects the tangent where `x > 0`, zeros elsewhere) or a `jnp.where` on a comparison, in
/// one pass when the comparison is still pending (values mode leaves it to its one reader):
/// the predicate is never stored, and an operand still pending as a `full` (the zeros) is
/// read as its one value instead of being filled in. Each element is `t` where the comparison
/// holds and `f` elsewhere, as the two kernels give one after the other. `None` when the
/// operation is not of this form or an operand is not in a layout `Rows` takes.
fn masked_select(
    prim: &Prim,
    inputs: &[Rc<Array>],
    aval: &super::aval::Aval,
    max_elements: u64,
    depth: usize,
) -> Option<(NdDataF32, bool)> {
    let [truth, on_false, on_true] = inputs else { return None };
    if !matches!(prim, Prim::Select) || aval.dtype != DType::F32 || truth.aval.dtype != DType::Bool {
        return None;
    }
    let (Prim::Compare(cmp), compared) = pending(truth)? else { return None };
    let [a, b] = compared.as_slice() else { return None };
    if [a, b, on_false, on_true].iter().any(|i| i.aval.dtype != DType::F32) {
        return None;
    }
    let shape = aval.shape.as_slice();
    // An operand pending as `full`: its one value, exact in f32 (or `None`: computed).
    let filled = |x: &Rc<Array>| match pending(x) {
        Some((Prim::Full { value, .. }, _)) if f64::from(value as f32) == value || value.is_nan() => Some(value as f32),
        _ => None,
    };
    let (f_fill, t_fill) = (filled(on_false), filled(on_true));
    let force = |x: &Rc<Array>, fill: Option<f32>| match fill {
        Some(_) => Some(None),
        None => force_f32(x, max_elements, depth + 1).map(|d| Some(d.0)),
    };
    let (fd, td) = (force(on_false, f_fill)?, force(on_true, t_fill)?);
    let (ad, bd) = (force_f32(a, max_elements, depth + 1)?.0, force_f32(b, max_elements, depth + 1)?.0);
    fn operand<'a>(d: &'a Option<NdDataF32>, fill: Option<f32>, shape: &[usize]) -> Option<Rows<'a>> {
        match (d, fill) {
            (Some(d), _) => rows(d, shape),
            (None, fill) => fill.map(Rows::Scalar),
        }
    }
    let (f, t) = (operand(&fd, f_fill, shape)?, operand(&td, t_fill, shape)?);
    let (a, b) = (rows(&ad, shape)?, rows(&bd, shape)?);
    Some(by_comparison!(cmp, select_rows(a, b, f, t, shape)))
}

/// `if cmp(a, b) { t } else { f }`, row by row (`masked_select`).
#[inline(always)]
fn select_rows(a: Rows, b: Rows, f: Rows, t: Rows, shape: &[usize], cmp: impl Fn(f32, f32) -> bool) -> (NdDataF32, bool) {
    let pick = |p: f32, q: f32, f: f32, t: f32| if cmp(p, q) { t } else { f };
    vectorised(
        #[inline(always)]
        || {
            collect_rows(
                shape,
                #[inline(always)]
                |r, cols, dst| match (a.row(r, cols), b.row(r, cols), f.row(r, cols), t.row(r, cols)) {
                    // A relu's derivative: `x > 0` picks the cotangent, zeros elsewhere.
                    (Row::Values(a), Row::Same(q), Row::Same(f), Row::Values(t)) => {
                        assert!(a.len() == dst.len() && t.len() == dst.len(), "an elementwise row has the output's length");
                        for ((d, &p), &t) in dst.iter_mut().zip(a).zip(t) {
                            d.write(pick(p, q, f, t));
                        }
                    }
                    (a, b, f, t) => {
                        for (j, d) in dst.iter_mut().enumerate() {
                            d.write(pick(a.at(j), b.at(j), f.at(j), t.at(j)));
                        }
                    }
                },
            )
        },
    )
}

/// `x * (cmp(a, b) as f32)`, row by row (`masked_product`).
#[inline(always)]
fn mask_rows(x: Rows, a: Rows, b: Rows, shape: &[usize], cmp: impl Fn(f32, f32) -> bool) -> (NdDataF32, bool) {
    let masked = |x: f32, p: f32, q: f32| flush_f32(x * f32::from(u8::from(cmp(p, q))));
    vectorised(
        #[inline(always)]
        || {
            collect_rows(
                shape,
                #[inline(always)]
                |r, cols, dst| match (x.row(r, cols), a.row(r, cols), b.row(r, cols)) {
                    (Row::Values(x), Row::Values(a), Row::Same(q)) => {
                        assert!(x.len() == dst.len() && a.len() == dst.len(), "an elementwise row has the output's length");
                        for ((d, &x), &p) in dst.iter_mut().zip(x).zip(a) {
                            d.write(masked(x, p, q));
                        }
                    }
                    (x, a, b) => {
                        for (j, d) in dst.iter_mut().enumerate() {
                            d.write(masked(x.at(j), a.at(j), b.at(j)));
                        }
                    }
                },
            )
        },
    )
}

/// The value of a float32 or bool array in f32, for the float32 path, and whether every
/// element is known to be finite. Data held as f64 (an array made from Python numbers, a
/// random draw) is narrowed once, exactly, and kept so.
fn force_f32(array: &Rc<Array>, max_elements: u64, depth: usize) -> Option<(NdDataF32, bool)> {
    match force_stored(array, max_elements, depth)? {
        Stored::F32(d, finite) => Some((d, finite)),
        Stored::F64(d) => {
            if d.shape() != array.aval.shape.as_slice() {
                return None;
            }
            let narrowed = d.mapv(|x| x as f32).into_shared();
            if let Some(known) = array.known() {
                if let ArrayKind::Concrete(cell) = &known.kind {
                    let mut slot = cell.borrow_mut();
                    if matches!(&*slot, Lazy::Ready(_)) {
                        *slot = Lazy::ReadyF32(narrowed.clone(), false);
                    }
                }
            }
            Some((narrowed, false))
        }
        // Only float32 and bool arrays are asked for here.
        Stored::Ints(_) => None,
    }
}

/// Whether the float32 path's kernel for `prim` gives finite values from finite inputs: the
/// operations that only move, pick or compare values (and negate them), so that values mode
/// need not look for a NaN or Inf in their output when it knows their inputs have none.
fn keeps_finite(prim: &Prim) -> bool {
    matches!(
        prim,
        Prim::Unary(UnaryPrim::Neg | UnaryPrim::Abs | UnaryPrim::Copy | UnaryPrim::Real | UnaryPrim::Conj)
            | Prim::StopGradient
            | Prim::Compare(_)
            | Prim::Select
            | Prim::Clamp
            | Prim::ConvertElementType { .. }
            | Prim::BroadcastInDim { .. }
            | Prim::Reshape { .. }
            | Prim::Squeeze { .. }
            | Prim::Transpose { .. }
            | Prim::Binary(BinaryPrim::Max | BinaryPrim::Min)
    )
}

fn broadcast_to(a: &NdData, shape: &[usize]) -> Option<NdData> {
    a.broadcast(IxDyn(shape)).map(|v| v.to_owned())
}

fn kernel(prim: &Prim, ins: &[Rc<NdData>], in_dtypes: &[DType], out_shape: &[usize], out_dtype: DType) -> Option<NdData> {
    if let Some(moved) = rearrange(prim, ins, out_shape, |&x| x as i64) {
        return Some(moved);
    }
    let int_out = out_dtype.is_integer();
    Some(match prim {
        Prim::Unary(u) => {
            let a = &ins[0];
            let f = unary_fn(*u, out_dtype)?;
            if *u == UnaryPrim::Not && int_out {
                a.mapv(|x| !(x as i64) as f64)
            } else if int_out && matches!(u, UnaryPrim::Square | UnaryPrim::Neg | UnaryPrim::Abs) {
                a.mapv(|x| {
                    let x = x as i128;
                    wrap_int(
                        if *u == UnaryPrim::Square {
                            x * x
                        } else if *u == UnaryPrim::Neg {
                            -x
                        } else {
                            x.abs()
                        },
                        out_dtype,
                    )
                })
            } else {
                a.mapv(|x| f(x))
            }
        }
        Prim::Binary(b) => {
            let a = broadcast_to(&ins[0], out_shape)?;
            let c = broadcast_to(&ins[1], out_shape)?;
            let int = in_dtypes.first().map(|d| d.is_integer() || d.is_bool()).unwrap_or(false);
            if int && int_out && matches!(b, BinaryPrim::Add | BinaryPrim::Sub | BinaryPrim::Mul) {
                // In i128, then wrapped: an f64 product of two int32s is not exact.
                let f: fn(i128, i128) -> i128 = match b {
                    BinaryPrim::Add => |x, y| x + y,
                    BinaryPrim::Sub => |x, y| x - y,
                    _ => |x, y| x * y,
                };
                return Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| wrap_int(f(x as i128, y as i128), out_dtype)));
            }
            // `x ** 2` on integers is `integer_pow` in JAX: exact, wrapping.
            if int && int_out && *b == BinaryPrim::Pow {
                return Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| match u32::try_from(y as i64) {
                    Ok(y) => wrap_int((x as i128).wrapping_pow(y), out_dtype),
                    Err(_) => f64::NAN,
                }))
                .filter(|d| !d.iter().any(|v| v.is_nan()));
            }
            // `jnp.logaddexp` as `lax_other.logaddexp` writes it, each step rounded to the
            // dtype: `max(x, y) + log1p(exp(-|x - y|))`, or `x + y` where `x - y` is NaN (a
            // NaN operand, or infinities of the same sign).
            if *b == BinaryPrim::Logaddexp {
                let r = move |v: f64| round_to(v, out_dtype);
                return Some(ndarray::Zip::from(&a).and(&c).map_collect(move |&x, &y| {
                    let delta = r(x - y);
                    if delta.is_nan() {
                        r(x + y)
                    } else {
                        r(max_f64(x, y) + r(r(exp_in(r(-delta.abs()), out_dtype)).ln_1p()))
                    }
                }));
            }
            // XLA's polygamma, in float32 for float32 and narrower (special.rs).
            if *b == BinaryPrim::Polygamma {
                return Some(ndarray::Zip::from(&a).and(&c).map_collect(|&n, &x| super::special::polygamma(n, x, out_dtype)));
            }
            // The next float32/float64 after x toward y; subnormal results flush as XLA's do.
            if *b == BinaryPrim::NextAfter {
                return match out_dtype {
                    DType::F32 => {
                        Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| f64::from(libm::nextafterf(x as f32, y as f32))))
                    }
                    DType::F64 => Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| libm::nextafter(x, y))),
                    DType::BF16 => Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| {
                        next_after_16(x, y, |v| half::bf16::from_f64(v).to_bits(), |b| half::bf16::from_bits(b).to_f64())
                    })),
                    DType::F16 => Some(ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| {
                        next_after_16(x, y, |v| half::f16::from_f64(v).to_bits(), |b| half::f16::from_bits(b).to_f64())
                    })),
                    _ => None,
                };
            }
            if *b == BinaryPrim::Div && !int && divides_by_reciprocal(ins[1].shape(), out_shape) {
                let r = ins[1].iter().next().map(|&y| reciprocal(y, out_dtype))?;
                return Some(a.mapv(|x| x * r));
            }
            let f = binary_fn(*b, int)?;
            ndarray::Zip::from(&a).and(&c).map_collect(|&x, &y| f(x, y))
        }
        Prim::Compare(c) => {
            let a = broadcast_to(&ins[0], out_shape)?;
            let b = broadcast_to(&ins[1], out_shape)?;
            let f: fn(f64, f64) -> bool = match c {
                CmpPrim::Eq => |x, y| x == y,
                CmpPrim::Ne => |x, y| x != y,
                CmpPrim::Lt => |x, y| x < y,
                CmpPrim::Le => |x, y| x <= y,
                CmpPrim::Gt => |x, y| x > y,
                CmpPrim::Ge => |x, y| x >= y,
            };
            ndarray::Zip::from(&a).and(&b).map_collect(|&x, &y| f(x, y) as i64 as f64)
        }
        Prim::Select => {
            let p = broadcast_to(&ins[0], out_shape)?;
            let f = broadcast_to(&ins[1], out_shape)?;
            let t = broadcast_to(&ins[2], out_shape)?;
            ndarray::Zip::from(&p).and(&f).and(&t).map_collect(|&p, &f, &t| if p != 0.0 { t } else { f })
        }
        Prim::Clamp => {
            let lo = broadcast_to(&ins[0], out_shape)?;
            let x = broadcast_to(&ins[1], out_shape)?;
            let hi = broadcast_to(&ins[2], out_shape)?;
            ndarray::Zip::from(&lo).and(&x).and(&hi).map_collect(|&l, &x, &h| x.max(l).min(h))
        }
        Prim::IntegerPow(y) if int_out => {
            let y = u32::try_from(*y).ok()?;
            ins[0].mapv(|x| wrap_int((x as i128).wrapping_pow(y), out_dtype))
        }
        Prim::IntegerPow(y) => ins[0].mapv(|x| x.powi(*y)),
        Prim::ConvertElementType { .. } if int_out && in_dtypes.first().is_some_and(|d| d.is_floating()) => {
            ins[0].mapv(|x| float_to_int(x, out_dtype))
        }
        Prim::ConvertElementType { .. } | Prim::StopGradient => (*ins[0]).clone(),
        Prim::Full { value, .. } => ArrayD::from_elem(IxDyn(out_shape), *value),
        Prim::Iota { shape, dimension, .. } => ArrayD::from_shape_fn(IxDyn(shape), |idx| idx[*dimension] as f64),
        Prim::Reduce { op: ReduceOp::Sum, axes } if matches!(out_dtype, DType::BF16 | DType::F16) => {
            reduce_sum_narrow(&ins[0], axes, out_dtype)?
        }
        Prim::Reduce { op, axes } => reduce_kernel((*ins[0]).clone(), op, axes),
        Prim::ArgReduce { op, axis, .. } => ins[0].map_axis(Axis(*axis), |l| {
            let mut best = 0usize;
            for (i, &x) in l.iter().enumerate() {
                let b = l[best];
                if b.is_nan() {
                    break;
                }
                let better = x.is_nan() || if *op == ArgOp::Max { x > b } else { x < b };
                if better {
                    best = i;
                }
            }
            best as f64
        }),
        Prim::Cumulative { axis, .. } if *axis >= ins[0].ndim() => return None,
        Prim::Cumulative { op, axis, reverse } => {
            let mut a = (*ins[0]).clone();
            if *reverse {
                a.invert_axis(Axis(*axis));
            }
            for mut lane in a.lanes_mut(Axis(*axis)) {
                let mut acc: Option<f64> = None;
                for x in lane.iter_mut() {
                    let v = match (acc, op) {
                        (None, _) => *x,
                        (Some(p), ReduceOp::Sum) => p + *x,
                        (Some(p), ReduceOp::Prod) => p * *x,
                        // NaN propagates, as in `lax.max`/`lax.min`.
                        (Some(p), ReduceOp::Max) => max_f64(p, *x),
                        (Some(p), _) => min_f64(p, *x),
                    };
                    *x = v;
                    acc = Some(v);
                }
            }
            if *reverse {
                a.invert_axis(Axis(*axis));
            }
            a.as_standard_layout().to_owned()
        }
        Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
            let dims = DotDims { lhs_contract, rhs_contract, lhs_batch, rhs_batch };
            dot_general_kernel(&ins[0], &ins[1], &dims, out_shape, out_dtype)?
        }
        Prim::Linalg(op) => linalg::kernel(*op, ins, out_shape)?,
        Prim::Block(b) => b.0.kernel(ins, in_dtypes, out_shape, out_dtype)?,
        Prim::Gather { mode, fill_value, index } => indexing::gather(&ins[0], &ins[1..], index, *mode, *fill_value, out_dtype, out_shape)?,
        Prim::Scatter { op, mode, index: Some(index), .. } if ins.len() >= 2 => {
            indexing::scatter(*op, &ins[0], &ins[1], &ins[2..], index, *mode, out_dtype)?
        }
        Prim::TopK { k } | Prim::TopKIndices { k } => top_k_kernel(&ins[0], *k, matches!(prim, Prim::TopKIndices { .. }), out_shape)?,
        // `sort` of one operand sorts it; of two (`argsort`, the JVP of `sort`), it orders
        // the second by the keys of the first and gives that. Stable, NaN last.
        Prim::Sort { dimension, .. } if ins.len() <= 2 => {
            sort_by_keys(&ins[0], &ins[ins.len() - 1], *dimension, |x: &f64, y: &f64| match (x.is_nan(), y.is_nan()) {
                (false, false) => x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal),
                (nan_x, nan_y) => nan_x.cmp(&nan_y),
            })?
        }
        families::movement!()
        | families::random!()
        | families::control_flow!()
        | families::calls!()
        | Prim::Sort { .. }
        | Prim::Scatter { .. }
        | Prim::DebugCallback
        | Prim::Opaque(_) => return None,
    })
}

/// The float32 path: kernels on f32 data for operations whose inputs and output are float32
/// or bool. Each gives exactly what `kernel` followed by `round_to` gives (arithmetic in
/// f32 rounds as the f64 result rounded to f32 does, since f64 holds more than twice f32's
/// precision; everything else computes in f64 per element and rounds). Layout changes
/// (transpose, reshape, a conversion to the same dtype) share the data instead of copying.
/// `None` leaves the operation to `kernel`. With the result, whether every element of it is
/// known to be finite (the kernels that check it as they write say so; the others say `false`).
fn kernel_f32(prim: &Prim, ins: &[NdDataF32], in_dtypes: &[DType], out_shape: &[usize], out_dtype: DType) -> Option<(NdDataF32, bool)> {
    let store = move |y: f64| round_to(y, out_dtype) as f32;
    let shape = IxDyn(out_shape);
    Some((
        match prim {
            Prim::Unary(UnaryPrim::Neg) => ins[0].mapv(|x| -x).into_shared(),
            Prim::Unary(UnaryPrim::Abs) => ins[0].mapv(f32::abs).into_shared(),
            Prim::Unary(UnaryPrim::Copy | UnaryPrim::Real | UnaryPrim::Conj) | Prim::StopGradient => ins[0].clone(),
            Prim::Unary(u) => {
                let f = unary_fn(*u, out_dtype)?;
                ins[0].mapv(|x| store(f(f64::from(x)))).into_shared()
            }
            Prim::Binary(b) => {
                let (x, y) = (&ins[0], &ins[1]);
                let int = in_dtypes.first().is_some_and(|d| d.is_bool());
                return match (b, int) {
                    (BinaryPrim::Add, false) => zip_f32(x, y, out_shape, |p, q| flush_f32(p + q)),
                    (BinaryPrim::Sub, false) => zip_f32(x, y, out_shape, |p, q| flush_f32(p - q)),
                    (BinaryPrim::Mul, false) => zip_f32(x, y, out_shape, |p, q| flush_f32(p * q)),
                    (BinaryPrim::Div, false) if divides_by_reciprocal(y.shape(), out_shape) => {
                        let r = y.iter().next().map(|&q| reciprocal(q.into(), out_dtype) as f32)?;
                        zip_f32(x, y, out_shape, move |p, _| flush_f32(p * r))
                    }
                    (BinaryPrim::Div, false) => zip_f32(x, y, out_shape, |p, q| flush_f32(p / q)),
                    (BinaryPrim::Max, _) => zip_f32(x, y, out_shape, max_f32),
                    (BinaryPrim::Min, _) => zip_f32(x, y, out_shape, min_f32),
                    _ => {
                        let f = binary_fn(*b, int)?;
                        zip_f32(x, y, out_shape, |p, q| store(f(p.into(), q.into())))
                    }
                };
            }
            Prim::Compare(c) => {
                let (x, y) = (&ins[0], &ins[1]);
                let truth = |t: bool| f32::from(u8::from(t));
                return match c {
                    CmpPrim::Eq => zip_f32(x, y, out_shape, |p, q| truth(p == q)),
                    CmpPrim::Ne => zip_f32(x, y, out_shape, |p, q| truth(p != q)),
                    CmpPrim::Lt => zip_f32(x, y, out_shape, |p, q| truth(p < q)),
                    CmpPrim::Le => zip_f32(x, y, out_shape, |p, q| truth(p <= q)),
                    CmpPrim::Gt => zip_f32(x, y, out_shape, |p, q| truth(p > q)),
                    CmpPrim::Ge => zip_f32(x, y, out_shape, |p, q| truth(p >= q)),
                };
            }
            Prim::Select => {
                let (p, f, t) = (ins[0].broadcast(shape.clone())?, ins[1].broadcast(shape.clone())?, ins[2].broadcast(shape)?);
                ndarray::Zip::from(&p).and(&f).and(&t).map_collect(|&p, &f, &t| if p != 0.0 { t } else { f }).into_shared()
            }
            Prim::Clamp => {
                let (lo, x, hi) = (ins[0].broadcast(shape.clone())?, ins[1].broadcast(shape.clone())?, ins[2].broadcast(shape)?);
                ndarray::Zip::from(&lo).and(&x).and(&hi).map_collect(|&l, &x, &h| x.max(l).min(h)).into_shared()
            }
            Prim::IntegerPow(y) => ins[0].mapv(|x| store(f64::from(x).powi(*y))).into_shared(),
            // float32 to float32, or bool to float32: the values are already exact.
            Prim::ConvertElementType { .. } if out_dtype == DType::F32 || in_dtypes.first() == Some(&out_dtype) => ins[0].clone(),
            Prim::ConvertElementType { .. } => ins[0].mapv(|x| store(x.into())).into_shared(),
            Prim::BroadcastInDim { shape: target, broadcast_dimensions } => {
                let a = &ins[0];
                let mut expanded = vec![1usize; target.len()];
                for (i, &d) in broadcast_dimensions.iter().enumerate() {
                    *expanded.get_mut(d)? = *a.shape().get(i)?;
                }
                if let Some(rows) = a.as_slice().and_then(|s| Rows::of(s, &expanded, target)) {
                    return Some(vectorised(
                        #[inline(always)]
                        || {
                            collect_rows(
                                target,
                                #[inline(always)]
                                |r, cols, dst| match rows.row(r, cols) {
                                    Row::Values(v) => fill(dst, v, |x| x),
                                    Row::Same(x) => dst.fill(std::mem::MaybeUninit::new(x)),
                                },
                            )
                        },
                    ));
                }
                let r = a.to_shape(IxDyn(&expanded)).ok()?;
                r.broadcast(IxDyn(target))?.to_owned().into_shared()
            }
            Prim::Reshape { new_sizes } => reshape_f32(&ins[0], new_sizes)?,
            Prim::Squeeze { .. } => reshape_f32(&ins[0], out_shape)?,
            Prim::Transpose { permutation } => {
                let valid = permutation.len() == ins[0].ndim() && (0..permutation.len()).all(|d| permutation.contains(&d));
                if !valid {
                    return None;
                }
                ins[0].clone().permuted_axes(IxDyn(permutation))
            }
            Prim::Reduce { op, axes } => match reduce_f32(&ins[0], op, axes, out_shape) {
                Some(out) => out,
                None => reduce_kernel(ins[0].mapv(f64::from), op, axes).mapv(store).into_shared(),
            },
            Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } if out_dtype == DType::F32 => {
                let dims = DotDims { lhs_contract, rhs_contract, lhs_batch, rhs_batch };
                let mut out = dot_general_kernel_f32(&ins[0], &ins[1], &dims, out_shape)?;
                // One pass flushes subnormals and sees whether everything is finite, so that
                // values mode does not read the product again.
                let finite = match out.as_slice_mut() {
                    Some(s) => flush_all(s),
                    None => {
                        out.mapv_inplace(flush_f32);
                        false
                    }
                };
                return Some((out.into_shared(), finite));
            }
            families::random!()
            | families::control_flow!()
            | families::calls!()
            | Prim::Rev { .. }
            | Prim::Slice { .. }
            | Prim::DynamicSlice { .. }
            | Prim::DynamicUpdateSlice
            | Prim::Concatenate { .. }
            | Prim::Pad { .. }
            | Prim::Iota { .. }
            | Prim::Full { .. }
            | Prim::ArgReduce { .. }
            | Prim::Cumulative { .. }
            | Prim::Sort { .. }
            | Prim::DotGeneral { .. }
            | Prim::Gather { .. }
            | Prim::Scatter { .. }
            | Prim::TopK { .. }
            | Prim::TopKIndices { .. }
            | Prim::DebugCallback
            | Prim::Opaque(_)
            | Prim::Linalg(_)
            | Prim::Block(_) => return None,
        },
        false,
    ))
}

/// Flushes float32 subnormals to zero in place (`flush_f32`); whether every value is finite.
/// A read-only pass looks for both first: a product rarely holds a subnormal, and reading
/// the values is cheaper than writing them all back.
fn flush_all(values: &mut [f32]) -> bool {
    // On the magnitude's bits: 1..=0x7fffff are the subnormals, 0x7f800000 and up Inf and
    // NaN. The smallest `magnitude - 1` (0 wraps to the largest u32, so zeros never count)
    // and the largest magnitude decide both, with two unsigned min/max per vector.
    let (smallest, largest) = vectorised(
        #[inline(always)]
        || {
            let (mut smallest, mut largest) = (u32::MAX, 0u32);
            for &x in values.iter() {
                let magnitude = x.to_bits() & 0x7fff_ffff;
                smallest = smallest.min(magnitude.wrapping_sub(1));
                largest = largest.max(magnitude);
            }
            (smallest, largest)
        },
    );
    if smallest < 0x007f_ffff {
        values.iter_mut().for_each(|x| *x = flush_f32(*x));
    }
    largest < 0x7f80_0000
}

/// Runs `f` compiled for AVX2 when the CPU has it (checked once, then cached by the standard
/// library): the binary is built for baseline x86-64, whose 128-bit SSE2 vectors halve the
/// speed of the float32 path's loops over rows and products. `f` and what it calls are
/// inlined into the AVX2 function, so its loops vectorise 8 floats wide. The same
/// operations in the same order: only the instructions differ, never a value (Rust never
/// reassociates or contracts float arithmetic).
#[inline(always)]
pub(crate) fn vectorised<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (detected just above).
            return unsafe { avx2(f) };
        }
    }
    f()
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

/// `lax.max` in f32, as `max_f64` gives it (NaN propagates, -0.0 orders below 0.0), written
/// with selects only, so that a loop of it vectorises.
#[inline(always)]
pub(crate) fn max_f32(x: f32, y: f32) -> f32 {
    let larger = if x > y { x } else { y };
    // Equal values have equal bits except for 0.0 and -0.0, whose AND is 0.0.
    let m = if x == y { f32::from_bits(x.to_bits() & y.to_bits()) } else { larger };
    if x.is_nan() || y.is_nan() {
        f32::NAN
    } else {
        m
    }
}

/// `lax.min` in f32, as `min_f64` gives it.
#[inline(always)]
pub(crate) fn min_f32(x: f32, y: f32) -> f32 {
    let smaller = if x < y { x } else { y };
    // Equal values have equal bits except for 0.0 and -0.0, whose OR is -0.0.
    let m = if x == y { f32::from_bits(x.to_bits() | y.to_bits()) } else { smaller };
    if x.is_nan() || y.is_nan() {
        f32::NAN
    } else {
        m
    }
}

/// An elementwise operation on two operands broadcast to `out_shape`. Operands in standard
/// layout that are the output's shape, a scalar, a row repeated over the rows or one value
/// per row (a bias, a per-example normaliser) take a loop over contiguous rows that
/// vectorises; other layouts go through ndarray's broadcasting `Zip`.
fn zip_f32(x: &NdDataF32, y: &NdDataF32, out_shape: &[usize], f: impl Fn(f32, f32) -> f32) -> Option<(NdDataF32, bool)> {
    if let (Some(a), Some(b)) = (rows(x, out_shape), rows(y, out_shape)) {
        return Some(vectorised(
            #[inline(always)]
            || {
                collect_rows(
                    out_shape,
                    #[inline(always)]
                    |r, _, dst| match (a.row(r, dst.len()), b.row(r, dst.len())) {
                        (Row::Values(p), Row::Values(q)) => {
                            assert!(p.len() == dst.len() && q.len() == dst.len(), "an elementwise row has the output's length");
                            for ((d, &p), &q) in dst.iter_mut().zip(p).zip(q) {
                                d.write(f(p, q));
                            }
                        }
                        (Row::Values(p), Row::Same(q)) => fill(dst, p, |p| f(p, q)),
                        (Row::Same(p), Row::Values(q)) => fill(dst, q, |q| f(p, q)),
                        (Row::Same(p), Row::Same(q)) => dst.fill(std::mem::MaybeUninit::new(f(p, q))),
                    },
                )
            },
        ));
    }
    let shape = IxDyn(out_shape);
    let (x, y) = (x.broadcast(shape.clone())?, y.broadcast(shape)?);
    Some((ndarray::Zip::from(&x).and(&y).map_collect(|&p, &q| f(p, q)).into_shared(), false))
}

/// How a row-major operand meets a row-major output seen as rows of its last axis.
#[derive(Clone, Copy)]
enum Rows<'a> {
    /// One value for every element (a scalar, or any shape of one element).
    Scalar(f32),
    /// The output's own shape.
    Full(&'a [f32]),
    /// One row repeated over every row (`[1, n]` against `[m, n]`).
    Repeated(&'a [f32]),
    /// One value per row (`[m, 1]` against `[m, n]`).
    PerRow(&'a [f32]),
}

/// One row of an operand: its values, or one value for the whole row.
enum Row<'a> {
    Values(&'a [f32]),
    Same(f32),
}

impl Row<'_> {
    /// The element in column `j`.
    #[inline(always)]
    fn at(&self, j: usize) -> f32 {
        match self {
            Row::Values(v) => v[j],
            Row::Same(v) => *v,
        }
    }
}

/// A row-major f32 array as it broadcasts to `shape`, when `Rows` takes its layout.
fn rows<'a>(d: &'a NdDataF32, shape: &[usize]) -> Option<Rows<'a>> {
    d.as_slice().and_then(|s| Rows::of(s, d.shape(), shape))
}

impl<'a> Rows<'a> {
    /// `data` (row-major, of `shape`) as it broadcasts to `out_shape`, when it is one of the
    /// cases above.
    fn of(data: &'a [f32], shape: &[usize], out_shape: &[usize]) -> Option<Rows<'a>> {
        if data.len() == 1 {
            return Some(Rows::Scalar(data[0]));
        }
        if shape == out_shape {
            return Some(Rows::Full(data));
        }
        let ((&cols, lead), (&last, own_lead)) = (out_shape.split_last()?, shape.split_last()?);
        if lead.len() != own_lead.len() {
            None
        } else if last == cols && own_lead.iter().all(|&d| d == 1) {
            Some(Rows::Repeated(data))
        } else if last == 1 && own_lead == lead {
            Some(Rows::PerRow(data))
        } else {
            None
        }
    }

    #[inline(always)]
    fn row(self, r: usize, cols: usize) -> Row<'a> {
        match self {
            Rows::Scalar(x) => Row::Same(x),
            Rows::Full(s) => Row::Values(&s[r * cols..(r + 1) * cols]),
            Rows::Repeated(s) => Row::Values(s),
            Rows::PerRow(s) => Row::Same(s[r]),
        }
    }
}

/// A new row-major f32 array of `shape`, written one row (of its last axis) at a time by
/// `row(index, columns, destination)`, which must write the whole destination; and whether
/// every element is finite, seen row by row while the row is still in cache.
#[inline(always)]
fn collect_rows(shape: &[usize], mut row: impl FnMut(usize, usize, &mut [std::mem::MaybeUninit<f32>])) -> (NdDataF32, bool) {
    let total: usize = shape.iter().product();
    let cols = shape.last().copied().unwrap_or(1);
    let mut data: Vec<f32> = Vec::with_capacity(total);
    let mut finite = true;
    if cols > 0 {
        for (r, dst) in data.spare_capacity_mut()[..total].chunks_exact_mut(cols).enumerate() {
            row(r, cols, dst);
            // SAFETY: `row` wrote every element of `dst`.
            let written = unsafe { &*(dst as *const [std::mem::MaybeUninit<f32>] as *const [f32]) };
            finite &= written.iter().fold(true, |all, x| all & x.is_finite());
        }
    }
    // SAFETY: the chunks cover all `total` elements (`cols` divides `total`, and `total` is
    // 0 when `cols` is) and `row` wrote each of them.
    unsafe { data.set_len(total) };
    match ArrayD::from_shape_vec(IxDyn(shape), data) {
        Ok(a) => (a.into_shared(), finite),
        Err(_) => (ArrayD::zeros(IxDyn(shape)).into_shared(), true),
    }
}

/// Writes `f` of each of `values` into `dst`, which has their length.
#[inline(always)]
fn fill(dst: &mut [std::mem::MaybeUninit<f32>], values: &[f32], f: impl Fn(f32) -> f32) {
    assert!(values.len() == dst.len(), "an elementwise row has the output's length");
    for (d, &v) in dst.iter_mut().zip(values) {
        d.write(f(v));
    }
}

/// f32 data in a new shape, in row-major order: shared when it is in standard layout.
fn reshape_f32(a: &NdDataF32, shape: &[usize]) -> Option<NdDataF32> {
    let standard = if a.is_standard_layout() { a.clone() } else { a.as_standard_layout().into_owned().into_shared() };
    standard.into_shape_with_order(IxDyn(shape)).ok()
}
