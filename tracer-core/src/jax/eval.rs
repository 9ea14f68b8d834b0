//! Concrete values on demand: `force` computes a pending array from its primitive and inputs
//! with the primitive's CPU kernel (its family's file of `jax/prims/`, through the registry's
//! tables `prims::kernel` and `prims::kernel_f32`), rounds it to its dtype and remembers it.
//! A primitive without a kernel gives `None`, and its value stays unknown (never guessed).
//! float32 and bool data take the float32 path (held in `f32`, with the fused masks of
//! `masked_product`/`masked_select` and the row loops the kernels share); integers past 2**53
//! are computed exactly (`eval_ints.rs`).
//!
//! Size: the forcing of every storage (f64, f32, exact integers, keys) and the float32 path's
//! row machinery that the family kernels share.

use std::cell::RefCell;
use std::rc::Rc;

use ndarray::{ArrayD, IxDyn};

use super::array::{Array, ArrayKind, Lazy, NdData, NdDataF32};
use super::dtypes::DType;
use super::eval_cost;
use super::eval_ints::{self, NdInts};
use super::ir::{BinaryPrim, CmpPrim, Prim, UnaryPrim};
use super::prims::random::kernels as random;
pub(crate) use super::rounding::flush_f32;
pub use super::rounding::round_to;

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
    let pending = match &mut *cell.borrow_mut() {
        Lazy::Ready(d) => return Some(Stored::F64(d.clone())),
        Lazy::ReadyF32(d, finite) => return Some(Stored::F32(d.clone(), *finite)),
        Lazy::ReadyInts(d) => return Some(Stored::Ints(d.clone())),
        Lazy::Unknown(_) => return None,
        // Taken out while it is computed rather than cloned (this runs for every computed
        // value): the arrays form no cycle, so nothing reads this cell meanwhile.
        slot @ Lazy::Pending(..) => Ok(std::mem::replace(slot, Lazy::Unknown(COMPUTING))),
        Lazy::Call(call, i) => Err((call.clone(), *i)),
    };
    let (op, inputs) = match pending {
        Ok(Lazy::Pending(op, inputs)) => (op, inputs),
        Ok(_) => return None,
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
    // Every pending operation is a primitive: arrays are made pending by the JAX model alone.
    let computed = match op.get::<Prim>() {
        Some(prim) => compute_pending(cell, &known, prim, &inputs, max_elements, depth),
        None => None,
    };
    // Neither computed nor known to be uncomputable (an input not computed yet, the memory
    // budget for now): pending again, for the next use.
    if matches!(&*cell.borrow(), Lazy::Unknown(why) if *why == COMPUTING) {
        *cell.borrow_mut() = Lazy::Pending(op, inputs);
    }
    computed
}

/// What a pending cell holds while [`force_stored`] computes it.
const COMPUTING: &str = "being computed";

/// [`force_stored`]'s work on a pending value, `prim` of `inputs`: its data, stored in `cell`
/// when computed or when it cannot be.
fn compute_pending(
    cell: &RefCell<Lazy>,
    known: &Rc<Array>,
    prim: &Prim,
    inputs: &[Rc<Array>],
    max_elements: u64,
    depth: usize,
) -> Option<Stored> {
    if inputs.iter().any(|i| i.aval.dtype.is_complex()) {
        return None;
    }
    // Decided before any input is computed: a kernel cannot be stopped halfway.
    // On the stack for the usual one to four operands, pushed rather than collected (see
    // `rule_avals`): this runs for every computed value.
    let mut in_avals: smallvec::SmallVec<[&super::aval::Aval; 4]> = smallvec::SmallVec::new();
    let mut in_dtypes: smallvec::SmallVec<[DType; 4]> = smallvec::SmallVec::new();
    for input in inputs {
        in_avals.push(&input.aval);
        in_dtypes.push(input.aval.dtype);
    }
    // Decided once: `props` is one match over every primitive.
    let props = super::prims::properties::props(prim);
    if eval_cost::cost(prim, &in_avals, &known.aval) > eval_cost::MAX_COST {
        *cell.borrow_mut() = Lazy::Unknown(eval_cost::TOO_COSTLY);
        return None;
    }
    if !crate::interp::memory::fits(crate::interp::memory::array_bytes(known.aval.size())) {
        // Not remembered: the memory may be free again at the next use.
        return None;
    }
    if !crate::interp::memory::in_time(known.aval.size()) {
        // Not remembered either: the interpreter's next step stops on the time budget.
        return None;
    }
    if held_in_f32(known.aval.dtype) && in_dtypes.iter().all(|&d| held_in_f32(d)) && props.has_f32_kernel {
        let mut datas = Vec::with_capacity(inputs.len());
        let mut inputs_finite = true;
        let fused = masked_product(prim, inputs, &known.aval, max_elements, depth)
            .or_else(|| masked_select(prim, inputs, &known.aval, max_elements, depth));
        if let Some((data, finite)) = fused {
            *cell.borrow_mut() = Lazy::ReadyF32(data.clone(), finite);
            return Some(Stored::F32(data, finite));
        }
        for i in inputs {
            let (data, finite) = force_f32(i, max_elements, depth + 1)?;
            datas.push(data);
            inputs_finite &= finite;
        }
        if let Some((data, finite)) = super::prims::kernel_f32(prim, &datas, &in_dtypes, &known.aval.shape, known.aval.dtype) {
            let finite = finite || (inputs_finite && keeps_finite(prim));
            *cell.borrow_mut() = Lazy::ReadyF32(data.clone(), finite);
            return Some(Stored::F32(data, finite));
        }
    }
    let mut stored = Vec::with_capacity(inputs.len());
    for i in inputs {
        stored.push(force_stored(i, max_elements, depth + 1)?);
    }
    // A jitted call's value comes from its instantiated body (eval_jaxpr.rs), never from a
    // kernel: its inputs (a model's parameters) are not widened for nothing.
    if props.is_call {
        *cell.borrow_mut() = Lazy::Unknown("no CPU kernel for this operation yet");
        return None;
    }
    if stored.iter().any(|d| matches!(d, Stored::Ints(_))) {
        return exact_ints(cell, prim, &stored, &in_dtypes, &known.aval.shape, known.aval.dtype);
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
    let result = if props.is_random {
        random::kernel(prim, &random::inputs(&avals, &datas), &known.aval)
    } else if inputs.iter().zip(&datas).any(|(i, d)| d.shape() != i.aval.shape.as_slice()) {
        random::key_layout_kernel(prim, &random::inputs(&avals, &datas), &known.aval)
    } else {
        super::prims::kernel(prim, &datas, &in_dtypes, &known.aval.shape, known.aval.dtype)
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
                return exact_ints(cell, prim, &stored, &in_dtypes, &known.aval.shape, dtype);
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
        Lazy::Pending(op, inputs) => op.get::<Prim>().map(|prim| (prim.clone(), inputs.clone())),
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

pub(crate) fn broadcast_to(a: &NdData, shape: &[usize]) -> Option<NdData> {
    a.broadcast(IxDyn(shape)).map(|v| v.to_owned())
}

/// Flushes float32 subnormals to zero in place (`flush_f32`); whether every value is finite.
/// A read-only pass looks for both first: a product rarely holds a subnormal, and reading
/// the values is cheaper than writing them all back.
pub(crate) fn flush_all(values: &mut [f32]) -> bool {
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
pub(crate) fn zip_f32(x: &NdDataF32, y: &NdDataF32, out_shape: &[usize], f: impl Fn(f32, f32) -> f32) -> Option<(NdDataF32, bool)> {
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
pub(crate) enum Rows<'a> {
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
pub(crate) enum Row<'a> {
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
pub(crate) fn rows<'a>(d: &'a NdDataF32, shape: &[usize]) -> Option<Rows<'a>> {
    d.as_slice().and_then(|s| Rows::of(s, d.shape(), shape))
}

impl<'a> Rows<'a> {
    /// `data` (row-major, of `shape`) as it broadcasts to `out_shape`, when it is one of the
    /// cases above.
    pub(crate) fn of(data: &'a [f32], shape: &[usize], out_shape: &[usize]) -> Option<Rows<'a>> {
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
    pub(crate) fn row(self, r: usize, cols: usize) -> Row<'a> {
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
pub(crate) fn collect_rows(shape: &[usize], mut row: impl FnMut(usize, usize, &mut [std::mem::MaybeUninit<f32>])) -> (NdDataF32, bool) {
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
pub(crate) fn fill(dst: &mut [std::mem::MaybeUninit<f32>], values: &[f32], f: impl Fn(f32) -> f32) {
    assert!(values.len() == dst.len(), "an elementwise row has the output's length");
    for (d, &v) in dst.iter_mut().zip(values) {
        d.write(f(v));
    }
}

/// f32 data in a new shape, in row-major order: shared when it is in standard layout.
pub(crate) fn reshape_f32(a: &NdDataF32, shape: &[usize]) -> Option<NdDataF32> {
    let standard = if a.is_standard_layout() { a.clone() } else { a.as_standard_layout().into_owned().into_shared() };
    standard.into_shape_with_order(IxDyn(shape)).ok()
}
