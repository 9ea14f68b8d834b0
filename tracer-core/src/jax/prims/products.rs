//! `dot_general`: its abstract evaluation (the batch axes, then the free axes of `lhs`, then
//! those of `rhs`; weakly typed only if both operands are), its CPU kernel (one GEMM per
//! batch element) and its JVP and transpose rules, side by side.

use std::rc::Rc;

use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn};
use smallvec::smallvec;

use super::batching::{BDim, BatchResult};
use super::{arg, type_error, RuleResult};
use crate::interp::Interp;
use crate::jax::ad::{self, AdError, AdResult};
use crate::jax::array::{Array, NdData, NdDataF32};
use crate::jax::aval::{shape_tuple, Aval, Shape};
use crate::jax::dtypes::DType;
use crate::jax::eval::{flush_all, flush_f32};
use crate::jax::ir::{BinaryPrim, Prim};

/// `numbers` are `[lhs_contract, rhs_contract, lhs_batch, rhs_batch]`.
pub fn dot_general(prim: &Prim, ins: &[&Aval], numbers: [&Vec<usize>; 4]) -> RuleResult {
    let (l, r) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
    let [lc, rc, lb, rb] = numbers;
    // On the stack, nothing collected: every matmul's `bind` comes here.
    let sizes = |a: &Aval, dims: &[usize]| -> Option<Shape> {
        let mut out = Shape::new();
        for &d in dims {
            out.push(*a.shape.get(d)?);
        }
        Some(out)
    };
    let (Some(lcs), Some(rcs), Some(lbs), Some(rbs)) = (sizes(l, lc), sizes(r, rc), sizes(l, lb), sizes(r, rb)) else {
        return Err(type_error(format!(
            "dot_general dimension numbers out of range for operands of shapes {} and {}",
            l.shape_tuple(),
            r.shape_tuple()
        )));
    };
    if lbs != rbs {
        return Err(type_error(format!(
            "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same shape, got {} and {}.",
            shape_tuple(&lbs),
            shape_tuple(&rbs)
        )));
    }
    if lcs != rcs {
        return Err(type_error(format!(
            "dot_general requires contracting dimensions to have the same shape, got {} and {}.",
            shape_tuple(&lcs),
            shape_tuple(&rcs)
        )));
    }
    // Batch dimensions, then each operand's free ones in order.
    let mut shape = lbs;
    for (a, contract, batch) in [(l, lc, lb), (r, rc, rb)] {
        for (i, &n) in a.shape.iter().enumerate() {
            if !contract.contains(&i) && !batch.contains(&i) {
                shape.push(n);
            }
        }
    }
    Ok(smallvec![Aval { shape, dtype: l.dtype, weak: false }.weak(l.weak && r.weak)])
}

/// The dimension numbers of a `dot_general`.
pub struct DotDims<'a> {
    pub lhs_contract: &'a [usize],
    pub rhs_contract: &'a [usize],
    pub lhs_batch: &'a [usize],
    pub rhs_batch: &'a [usize],
}

/// The kernel in f64 of `dot_general`.
pub(crate) fn kernel(prim: &Prim, ins: &[Rc<NdData>], out_shape: &[usize], out_dtype: DType) -> Option<NdData> {
    let Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } = prim else { return None };
    let dims = DotDims { lhs_contract, rhs_contract, lhs_batch, rhs_batch };
    dot_general_kernel(&ins[0], &ins[1], &dims, out_shape, out_dtype)
}

/// The float32 path's kernel of `dot_general` (sgemm), for a float32 result.
pub(crate) fn kernel_f32(prim: &Prim, ins: &[NdDataF32], out_shape: &[usize], out_dtype: DType) -> Option<(NdDataF32, bool)> {
    let Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } = prim else { return None };
    if out_dtype != DType::F32 {
        return None;
    }
    let dims = DotDims { lhs_contract, rhs_contract, lhs_batch, rhs_batch };
    let mut out = dot_general_kernel_f32(&ins[0], &ins[1], &dims, out_shape)?;
    // One pass flushes subnormals and sees whether everything is finite, so that values mode
    // does not read the product again.
    let finite = match out.as_slice_mut() {
        Some(s) => flush_all(s),
        None => {
            out.mapv_inplace(flush_f32);
            false
        }
    };
    Some((out.into_shared(), finite))
}

/// `lax.dot_general`: both operands permuted to (batch, free, contracting) and reshaped to
/// 3-D, then one matrix product per batch element with the `gemm` crate's GEMM
/// (docs/evaluator.md), which takes the permuted operands as strided views: a transposed
/// operand is not copied. float32 (and narrower) operands
/// multiply in float32, as XLA's CPU dot does: sgemm is twice as fast as dgemm and
/// accumulates as JAX does.
pub fn dot_general_kernel(lhs: &NdData, rhs: &NdData, dims: &DotDims, out_shape: &[usize], out_dtype: DType) -> Option<NdData> {
    let (l, r, sizes) = dot_operands(lhs.view(), rhs.view(), dims)?;
    let out = if out_dtype == DType::F64 || out_dtype.is_integer() {
        batched_matmul(l, r, sizes)?
    } else {
        batched_matmul(l.mapv(|x| x as f32).view(), r.mapv(|x| x as f32).view(), sizes)?.mapv(f64::from)
    };
    out.into_shape_with_order(IxDyn(out_shape)).ok()
}

/// `dot_general` of float32 data held in f32 (the float32 path): no conversion at all.
pub fn dot_general_kernel_f32(lhs: &NdDataF32, rhs: &NdDataF32, dims: &DotDims, out_shape: &[usize]) -> Option<ArrayD<f32>> {
    let (l, r, sizes) = dot_operands(lhs.view(), rhs.view(), dims)?;
    batched_matmul(l, r, sizes)?.into_shape_with_order(IxDyn(out_shape)).ok()
}

/// The operands of a `dot_general` as views permuted to (batch, free, contracting) and
/// (batch, contracting, free), with the sizes `[batch, m, k, n]` of the products.
fn dot_operands<'a, T>(
    lhs: ArrayViewD<'a, T>,
    rhs: ArrayViewD<'a, T>,
    dims: &DotDims,
) -> Option<(ArrayViewD<'a, T>, ArrayViewD<'a, T>, [usize; 4])> {
    let (lc, rc, lb, rb) = (dims.lhs_contract, dims.rhs_contract, dims.lhs_batch, dims.rhs_batch);
    let lfree: Vec<usize> = (0..lhs.ndim()).filter(|d| !lc.contains(d) && !lb.contains(d)).collect();
    let rfree: Vec<usize> = (0..rhs.ndim()).filter(|d| !rc.contains(d) && !rb.contains(d)).collect();
    let lperm: Vec<usize> = lb.iter().chain(&lfree).chain(lc).copied().collect();
    let rperm: Vec<usize> = rb.iter().chain(rc).chain(&rfree).copied().collect();
    let valid = |perm: &[usize], ndim: usize| perm.len() == ndim && (0..ndim).all(|d| perm.contains(&d));
    if !valid(&lperm, lhs.ndim()) || !valid(&rperm, rhs.ndim()) {
        return None;
    }
    let size = |shape: &[usize], dims: &[usize]| dims.iter().map(|&d| shape[d]).product::<usize>();
    let (b, m, k, n) = (size(lhs.shape(), lb), size(lhs.shape(), &lfree), size(lhs.shape(), lc), size(rhs.shape(), &rfree));
    if size(rhs.shape(), rb) != b || size(rhs.shape(), rc) != k {
        return None;
    }
    Some((lhs.permuted_axes(IxDyn(&lperm)), rhs.permuted_axes(IxDyn(&rperm)), [b, m, k, n]))
}

fn batched_matmul<T>(l: ArrayViewD<T>, r: ArrayViewD<T>, [b, m, k, n]: [usize; 4]) -> Option<ArrayD<T>>
where
    T: ZeroSign + Default,
{
    // Views when the permuted axes merge into 3-D as they are (always for 2-D operands, so a
    // transposed matrix reaches the GEMM as strides), copies in logical order otherwise.
    let l = l.to_shape((b, m, k)).ok()?;
    let r = r.to_shape((b, k, n)).ok()?;
    if k == 0 {
        return Some(ndarray::Array3::<T>::zeros((b, m, n)).into_dyn());
    }
    let column_major = m >= 2 && n >= 2 && column_major_destination([m, k, n], &l.strides()[1..], &r.strides()[1..]);
    Some(gemm_into_new(l.view(), r.view(), [b, m, k, n], column_major))
}

/// The products of `batched_matmul` (k > 0), computed into a column-major buffer and
/// transposed, or straight into the row-major result.
fn gemm_into_new<T>(l: ndarray::ArrayView3<T>, r: ndarray::ArrayView3<T>, [b, m, k, n]: [usize; 4], column_major: bool) -> ArrayD<T>
where
    T: ZeroSign + Default,
{
    configure_gemm(m * k + k * n);
    // The column-major product, when it is the faster way round; it is then transposed into
    // the row-major result.
    let mut scratch: Vec<T> = Vec::with_capacity(if column_major { m * n } else { 0 });
    // The GEMM overwrites its destination without reading it: no zeroing first.
    let mut out = ndarray::Array3::<T>::uninit((b, m, n));
    for bi in 0..b {
        let (lhs, rhs) = (l.index_axis(Axis(0), bi), r.index_axis(Axis(0), bi));
        let mut dst = out.index_axis_mut(Axis(0), bi);
        let (dst_ptr, dst_rs, dst_cs) = if column_major {
            (scratch.as_mut_ptr(), 1, m as isize)
        } else {
            (dst.as_mut_ptr().cast::<T>(), dst.strides()[0], dst.strides()[1])
        };
        let into = Strided { ptr: dst_ptr, rs: dst_rs, cs: dst_cs };
        let lhs = Strided { ptr: lhs.as_ptr(), rs: lhs.strides()[0], cs: lhs.strides()[1] };
        let rhs = Strided { ptr: rhs.as_ptr(), rs: rhs.strides()[0], cs: rhs.strides()[1] };
        // SAFETY: each pointer and its strides describe a live buffer of the given shape
        // (m×k, k×n, m×n, the last one writable and not aliased: a row of `out` or `scratch`,
        // whose capacity is m·n).
        unsafe { gemm_oriented([m, k, n], into, lhs, rhs) };
        if column_major {
            // SAFETY: the GEMM above wrote all m·n elements of `scratch` (k > 0).
            unsafe { scratch.set_len(m * n) };
            let dst = dst.as_slice_mut().expect("a batch of a new C-order array is contiguous");
            transpose_into(&scratch, n, m, dst);
            // SAFETY: T is Copy; the next batch overwrites every element before reading any.
            unsafe { scratch.set_len(0) };
        }
    }
    // SAFETY: k > 0, so the GEMM wrote every element of every batch (above).
    let mut out = unsafe { out.assume_init() };
    for bi in 0..b {
        xla_zero_signs(out.index_axis_mut(Axis(0), bi), l.index_axis(Axis(0), bi), r.index_axis(Axis(0), bi));
    }
    out.into_dyn()
}

/// A matrix in memory: its first element and the distances between rows and between columns.
#[derive(Clone, Copy)]
struct Strided<P> {
    ptr: P,
    rs: isize,
    cs: isize,
}

/// `dst = lhs·rhs` (m×k times k×n, every element of `dst` written, none read) by the raw GEMM
/// of `gemm-f32` / `gemm-f64`, in the orientation its microkernel is fast in. The kernel
/// writes whole tiles only into a destination whose columns are contiguous; any other layout
/// goes through a scratch tile element by element, at half the speed (the evaluator bench on
/// Zen 5 with AVX-512: a 1024³ sgemm 54 against 107 GFLOP/s, the MLP step 5.8 against 4.4
/// ms). So a row-major destination is computed as the transposed product, `dstᵀ = rhsᵀ·lhsᵀ`,
/// and a negative stride is walked from its other end: what the `gemm` crate's entry point
/// does before it calls the same kernel (the evaluator called that entry point before the
/// registry of #21). Each element is the same dot product, summed in the same order.
///
/// # Safety
/// Each matrix must be a live buffer of its shape; `dst` writable and aliasing neither
/// operand; `T` is `f32` or `f64` (`ZeroSign::gemm_fn`).
unsafe fn gemm_oriented<T: ZeroSign>([m, k, n]: [usize; 3], dst: Strided<*mut T>, lhs: Strided<*const T>, rhs: Strided<*const T>) {
    let transpose = dst.cs.unsigned_abs() < dst.rs.unsigned_abs();
    let ([m, n], mut dst, mut lhs, mut rhs) = if transpose {
        let swap = |a: Strided<*const T>| Strided { ptr: a.ptr, rs: a.cs, cs: a.rs };
        ([n, m], Strided { ptr: dst.ptr, rs: dst.cs, cs: dst.rs }, swap(rhs), swap(lhs))
    } else {
        ([m, n], dst, lhs, rhs)
    };
    // The offset, in elements, of the last of `count` rows, columns or terms `stride` apart.
    let last = |count: usize, stride: isize| (count.max(1) - 1) as isize * stride;
    if dst.rs < 0 {
        dst.ptr = dst.ptr.wrapping_offset(last(m, dst.rs));
        lhs.ptr = lhs.ptr.wrapping_offset(last(m, lhs.rs));
        (dst.rs, lhs.rs) = (-dst.rs, -lhs.rs);
    }
    if dst.cs < 0 {
        dst.ptr = dst.ptr.wrapping_offset(last(n, dst.cs));
        rhs.ptr = rhs.ptr.wrapping_offset(last(n, rhs.cs));
        (dst.cs, rhs.cs) = (-dst.cs, -rhs.cs);
    }
    if lhs.cs < 0 {
        lhs.ptr = lhs.ptr.wrapping_offset(last(k, lhs.cs));
        rhs.ptr = rhs.ptr.wrapping_offset(last(k, rhs.rs));
        (lhs.cs, rhs.rs) = (-lhs.cs, -rhs.rs);
    }
    // SAFETY: the same buffers as given, each described from another corner or transposed,
    // and T is f32 or f64, the types the kernel multiplies (MaybeUninit<T> has T's layout).
    // With `read_dst` false, dst = 0·dst + 1·lhs·rhs: every element is written, none read.
    unsafe {
        T::gemm_fn()(
            m,
            n,
            k,
            dst.ptr,
            dst.cs,
            dst.rs,
            false,
            lhs.ptr,
            lhs.cs,
            lhs.rs,
            rhs.ptr,
            rhs.cs,
            rhs.rs,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            gemm_common::Parallelism::None,
        );
    }
}

/// Whether a product is faster computed column-major and transposed into the row-major
/// result than computed row-major, as `gemm` is handed it otherwise. `gemm` computes a
/// row-major destination as the transposed product, so its left operand (the one its
/// microkernel reads down columns) is then `rhsᵀ`, and a column-major destination keeps
/// `lhs` there. An operand that is not laid out that way is copied ("packed") first, at
/// about 0.6 ns an element; the microkernel runs at about a third of its rate when the
/// destination's contiguous axis is shorter than 64 (a partial tile); and the transpose of
/// the result costs about 0.35 ns an element. Measured for the MLP's eight products on
/// Zen 5 with gemm's AVX-512 kernels (docs/evaluator.md, "Which way round"): the slowest,
/// `dz @ w2.T` (128×512·512×512, `w2` row-major), goes from 475 to 357 µs this way round;
/// `h.T @ dlogits` (512×128·128×10) from 19 to 7 µs. The result is the same either way:
/// every element is one dot product summed in the same order.
fn column_major_destination([m, k, n]: [usize; 3], lhs_strides: &[isize], rhs_strides: &[isize]) -> bool {
    const PACK_NS: f64 = 0.6;
    const TRANSPOSE_NS: f64 = 0.35;
    let flops = 2.0 * (m * k * n) as f64;
    let compute_ns = |contiguous: usize| flops / if contiguous >= 64 { 220.0 } else { 70.0 };
    // Row-major: the microkernel reads `rhsᵀ` (n×k) down its columns, i.e. `rhs` along rows.
    let rhs_row_major = rhs_strides[1] == 1;
    let row = compute_ns(n) + if rhs_row_major { 0.0 } else { PACK_NS * (n * k) as f64 };
    // Column-major: it reads `lhs` (m×k) down its columns.
    let lhs_column_major = lhs_strides[0] == 1;
    let column = compute_ns(m) + if lhs_column_major { 0.0 } else { PACK_NS * (m * k) as f64 } + TRANSPOSE_NS * (m * n) as f64;
    column < row
}

/// `src`, `rows`×`cols` row-major, transposed into `dst` (`cols`×`rows` row-major) through
/// 8×8 tiles held in registers, each read along `src`'s rows and written along `dst`'s: a
/// plain loop writes one element per cache line (about 30% slower on a 512×128 result).
fn transpose_into<T: Copy + Default>(src: &[T], rows: usize, cols: usize, dst: &mut [std::mem::MaybeUninit<T>]) {
    const TILE: usize = 8;
    debug_assert!(src.len() == rows * cols && dst.len() == rows * cols);
    let (full_rows, full_cols) = (rows / TILE * TILE, cols / TILE * TILE);
    for i0 in (0..full_rows).step_by(TILE) {
        for j0 in (0..full_cols).step_by(TILE) {
            let mut tile = [[T::default(); TILE]; TILE];
            for (a, src_row) in src[i0 * cols..].chunks(cols).take(TILE).enumerate() {
                for (b, &x) in src_row[j0..j0 + TILE].iter().enumerate() {
                    tile[b][a] = x;
                }
            }
            for (b, column) in tile.iter().enumerate() {
                let at = (j0 + b) * rows + i0;
                for (d, &x) in dst[at..at + TILE].iter_mut().zip(column) {
                    *d = std::mem::MaybeUninit::new(x);
                }
            }
        }
    }
    // The edges the tiles leave: the last `cols % 8` columns of the tiled rows, then the
    // last `rows % 8` rows whole.
    for i in 0..rows {
        for j in if i < full_rows { full_cols } else { 0 }..cols {
            dst[j * rows + i] = std::mem::MaybeUninit::new(src[i * cols + j]);
        }
    }
}

/// `gemm` copies ("packs") an operand into its microkernel's layout when the product is
/// large enough for the copy to pay; its thresholds were tuned for AVX2. With its AVX-512
/// kernels (docs/evaluator.md, "On an AVX-512 machine") the copying was 15% of the MLP
/// step, and products whose operands hold up to a million elements in all (4 MB of
/// float32; the MLP step's largest is 2 MB) are a little faster without it: `tracelens run`
/// of the bench's step, 300 steps against 1, best of five, 2.29 against 2.41–2.44 ms a step
/// in one session, then 2.45–2.74 against 2.57–2.75 ms over four more pairs (the unpacked
/// one faster in six of eight comparisons, by up to 7%). A 1024³ product, 2 million
/// elements, loses a third without packing (179 against 268 GFLOP/s) and keeps `gemm`'s
/// own thresholds. Packing copies values and never changes the order of a sum, so results
/// are the same either way. The thresholds are process-wide: two threads multiplying at
/// once may see each other's, which changes their speed, never a value.
fn configure_gemm(operand_elements: usize) {
    const UNPACKED_UP_TO: usize = 1 << 20;
    // `gemm` caps its thresholds at 256 (tiles): at the cap it packs only an operand of
    // more than 256 tiles' rows or columns, which a product of this size rarely has.
    const CAP: usize = 256;
    static DEFAULTS: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
    let (lhs, rhs) = *DEFAULTS
        .get_or_init(|| (gemm_common::gemm::get_lhs_packing_threshold_single_thread(), gemm_common::gemm::get_rhs_packing_threshold()));
    let (lhs, rhs) = if operand_elements <= UNPACKED_UP_TO { (CAP, CAP) } else { (lhs, rhs) };
    gemm_common::gemm::set_lhs_packing_threshold_single_thread(lhs);
    gemm_common::gemm::set_rhs_packing_threshold(rhs);
}

/// The element types of the GEMM, and what `xla_zero_signs` needs of them.
trait ZeroSign: ndarray::LinalgScalar + PartialEq {
    /// The columns of one tile of XLA's vector-matrix product.
    const TILE: usize;
    const NEG_ZERO: Self;
    fn is_neg_zero(self) -> bool;
    /// The GEMM for this type, chosen for the CPU on first use (`gemm-f32`, `gemm-f64`).
    fn gemm_fn() -> GemmFn<Self>;
}

/// `dst = alpha·dst + beta·lhs·rhs` over strided buffers: m, n, k, then dst (pointer, column
/// stride, row stride, whether it is read), lhs and rhs (pointer, column and row strides),
/// alpha, beta, three conjugation flags and the parallelism.
type GemmFn<T> = unsafe fn(
    usize,
    usize,
    usize,
    *mut T,
    isize,
    isize,
    bool,
    *const T,
    isize,
    isize,
    *const T,
    isize,
    isize,
    T,
    T,
    bool,
    bool,
    bool,
    gemm_common::Parallelism,
);

impl ZeroSign for f32 {
    const TILE: usize = 8;
    const NEG_ZERO: f32 = -0.0;
    fn is_neg_zero(self) -> bool {
        self.to_bits() == 0x8000_0000
    }
    fn gemm_fn() -> GemmFn<f32> {
        gemm_f32::gemm::f32::get_gemm_fn()
    }
}

impl ZeroSign for f64 {
    const TILE: usize = 4;
    const NEG_ZERO: f64 = -0.0;
    fn is_neg_zero(self) -> bool {
        self.to_bits() == 0x8000_0000_0000_0000
    }
    fn gemm_fn() -> GemmFn<f64> {
        gemm_f64::gemm::f64::get_gemm_fn()
    }
}

/// Gives a product's zeros the sign XLA's order of accumulation gives them (JAX 0.10.2 on
/// CPU, measured; docs/evaluator.md). XLA multiplies once when `k == 1` (`-0. · 1.` is
/// `-0.`) and otherwise sums from `+0.` (a sum of `-0.` products is `0.`), except in the last
/// `n % TILE` columns of a vector-matrix product (`m == 1 < n`), which it sums from the
/// first product (`-0.` when every product is). `gemm` sums from `+0.` except for `k <= 2`,
/// which it sums from the first product: only those and the vector-matrix tail are visited.
fn xla_zero_signs<T: ZeroSign>(mut dst: ndarray::ArrayViewMut2<T>, lhs: ndarray::ArrayView2<T>, rhs: ndarray::ArrayView2<T>) {
    let (m, k, n) = (lhs.nrows(), lhs.ncols(), rhs.ncols());
    let tail = if m == 1 && n >= 2 { n / T::TILE * T::TILE } else { n };
    if k > 2 && tail == n {
        return;
    }
    for ((i, j), d) in dst.indexed_iter_mut() {
        if *d != T::zero() {
            continue;
        }
        let from_first_product = k == 1 || j >= tail;
        let negative = from_first_product && (0..k).all(|p| (lhs[[i, p]] * rhs[[p, j]]).is_neg_zero());
        *d = if negative { T::NEG_ZERO } else { T::zero() };
    }
}

// ---------------------------------------------------------------------------------------
// The JVP and transpose rules.

/// The JVP of a primitive bilinear in its two operands (`dot_general`, and
/// `conv_general_dilated` in `conv.rs`): `f(t_lhs, rhs) + f(lhs, t_rhs)`, a term dropped
/// when its tangent is zero.
pub(crate) fn bilinear_jvp(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], tangents: &[Option<Rc<Array>>]) -> super::Tangents {
    let mut total: Option<Rc<Array>> = None;
    for (i, t) in tangents.iter().enumerate().take(2) {
        let Some(t) = t else { continue };
        let operands = if i == 0 { [t.clone(), ins[1].clone()] } else { [ins[0].clone(), t.clone()] };
        let term = ad::bind(interp, prim.clone(), &operands)?;
        total = Some(match total {
            Some(acc) => ad::binary(interp, BinaryPrim::Add, &acc, &term)?,
            None => term,
        });
    }
    Ok(vec![total])
}

/// `dot_general`'s transpose: the cotangent of each active operand from the output's `g`
/// (JAX's `_dot_general_transpose_lhs` and `_rhs`, the latter the former with the operands
/// swapped), written into `cts`.
pub fn dot_general_transpose(
    interp: &mut Interp,
    dims: &DotDims,
    ins: &[Rc<Array>],
    g: &Rc<Array>,
    active: &[bool],
    cts: &mut [Option<Rc<Array>>],
) -> AdResult<()> {
    if active[0] {
        cts[0] = Some(transpose_lhs(interp, g, &ins[0].aval, &ins[1], dims, false)?);
    }
    if active[1] {
        let swapped = DotDims {
            lhs_contract: dims.rhs_contract,
            rhs_contract: dims.lhs_contract,
            lhs_batch: dims.rhs_batch,
            rhs_batch: dims.lhs_batch,
        };
        cts[1] = Some(transpose_lhs(interp, g, &ins[1].aval, &ins[0], &swapped, true)?);
    }
    Ok(())
}

/// JAX's `_dot_general_transpose_lhs`: the cotangent of the left operand `x` of
/// `dot_general(x, y)` given the output cotangent `g` (`swap_ans` when `x` is the right one).
fn transpose_lhs(interp: &mut Interp, g: &Rc<Array>, x: &Aval, y: &Rc<Array>, d: &DotDims, swap_ans: bool) -> AdResult<Rc<Array>> {
    let (lc, rc, lb, rb) = (d.lhs_contract, d.rhs_contract, d.lhs_batch, d.rhs_batch);
    if lc.len() != rc.len() || lb.len() != rb.len() {
        return Err(AdError::NoRule("dot_general with mismatched dimension numbers".into()));
    }
    let x_kept: Vec<usize> = (0..x.ndim()).filter(|i| !lc.contains(i) && !lb.contains(i)).collect();
    let y_kept: Vec<usize> = (0..y.aval.ndim()).filter(|i| !rc.contains(i) && !rb.contains(i)).collect();
    let nb = lb.len();
    let ans_y: Vec<usize> =
        if swap_ans { (nb..nb + y_kept.len()).collect() } else { (nb + x_kept.len()..nb + x_kept.len() + y_kept.len()).collect() };
    let prim = Prim::DotGeneral { lhs_contract: ans_y, rhs_contract: y_kept, lhs_batch: (0..nb).collect(), rhs_batch: rb.to_vec() };
    // Weakly typed only if both operands are, as every `dot_general`.
    let prod = ad::bind(interp, prim, &[g.clone(), y.clone()])?;
    // x_contract sorted by the order of y_contract.
    let mut order: Vec<usize> = (0..rc.len()).collect();
    order.sort_by_key(|&i| rc[i]);
    let x_contract_sorted: Vec<usize> = order.iter().map(|&i| lc[i]).collect();
    let layout: Vec<usize> = lb.iter().chain(&x_kept).chain(&x_contract_sorted).copied().collect();
    if layout.len() != prod.aval.ndim() {
        return Err(AdError::NoRule("dot_general of an unexpected rank".into()));
    }
    let mut out_axes: Vec<usize> = (0..layout.len()).collect();
    out_axes.sort_by_key(|&i| layout[i]);
    if out_axes.iter().enumerate().all(|(i, &a)| i == a) {
        return ad::reshape(interp, &prod, &x.shape);
    }
    ad::bind(interp, Prim::Transpose { permutation: out_axes }, std::slice::from_ref(&prod))
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    /// A batch of two deterministic `rows`×`cols` operands, C order.
    fn operands(rows: usize, cols: usize, seed: u32) -> ndarray::Array3<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        ndarray::Array3::from_shape_fn((2, rows, cols), |_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state as f32 / u32::MAX as f32) * 2.0 - 1.0
        })
    }

    fn a_product_is_the_same_bits_either_way_round_in_every_layout() {
        // The MLP's shapes that take the column-major path, odd sizes around the 8×8
        // transpose tiles and gemm's 16-row vectors, and the k ≤ 2 products gemm sums from
        // their first term.
        let shapes = [[128, 512, 512], [512, 128, 10], [128, 10, 512], [13, 29, 7], [70, 3, 9], [9, 1, 17], [2, 2, 2], [33, 64, 65]];
        for (s, [m, k, n]) in shapes.into_iter().enumerate() {
            for (lhs_transposed, rhs_transposed) in [(false, false), (true, false), (false, true), (true, true)] {
                let seed = s as u32 * 2;
                // A transposed operand is stored the other way round and viewed as m×k (k×n).
                let l3 = if lhs_transposed { operands(k, m, seed).permuted_axes([0, 2, 1]) } else { operands(m, k, seed) };
                let r3 = if rhs_transposed { operands(n, k, seed + 1).permuted_axes([0, 2, 1]) } else { operands(k, n, seed + 1) };
                let row = gemm_into_new(l3.view(), r3.view(), [2, m, k, n], false);
                let column = gemm_into_new(l3.view(), r3.view(), [2, m, k, n], true);
                let bits = |a: &ArrayD<f32>| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&row), bits(&column), "{m}x{k}x{n}, transposed {lhs_transposed}/{rhs_transposed}");
                // And both are the product: against a float64 sum of the same terms.
                for ((bi, i, j), &got) in row.clone().into_dimensionality::<ndarray::Ix3>().unwrap().indexed_iter() {
                    let exact: f64 = (0..k).map(|p| f64::from(l3[[bi, i, p]]) * f64::from(r3[[bi, p, j]])).sum();
                    assert!((f64::from(got) - exact).abs() <= 1e-5 * k as f64, "{m}x{k}x{n} [{bi},{i},{j}]: {got} vs {exact}");
                }
            }
        }
    }

    fn a_product_of_reversed_views_is_the_product() {
        // Negative strides (a view read backwards along rows, columns or both) are walked
        // from their other end; the destination is row-major (transposed for the GEMM) or
        // column-major (not).
        use ndarray::s;
        let [m, k, n] = [13, 29, 7];
        let (l3, r3) = (operands(m, k, 4), operands(k, n, 5));
        let views = [
            (l3.slice(s![.., ..;-1, ..]), r3.slice(s![.., .., ..])),
            (l3.slice(s![.., .., ..;-1]), r3.slice(s![.., ..;-1, ..])),
            (l3.slice(s![.., ..;-1, ..;-1]), r3.slice(s![.., ..;-1, ..;-1])),
        ];
        for (v, (l, r)) in views.into_iter().enumerate() {
            for column_major in [false, true] {
                let got = gemm_into_new(l.view(), r.view(), [2, m, k, n], column_major).into_dimensionality::<ndarray::Ix3>().unwrap();
                for ((bi, i, j), &got) in got.indexed_iter() {
                    let exact: f64 = (0..k).map(|p| f64::from(l[[bi, i, p]]) * f64::from(r[[bi, p, j]])).sum();
                    assert!(
                        (f64::from(got) - exact).abs() <= 1e-5 * k as f64,
                        "view {v}, column-major {column_major} [{bi},{i},{j}]: {got} vs {exact}"
                    );
                }
            }
        }
    }

    fn the_mlp_products_go_the_faster_way_round() {
        let row_major = |rows: isize| [rows, 1];
        let transposed = |rows: isize| [1, rows];
        // `dz @ w2.T`: packing the 512×512 `w2` costs more than transposing the 128×512 result.
        assert!(column_major_destination([128, 512, 512], &row_major(512), &transposed(512)));
        // `h.T @ dlogits`: a row-major result would be 10 wide, a partial tile.
        assert!(column_major_destination([512, 128, 10], &transposed(512), &row_major(10)));
        // Row-major operands, and `x.T @ dz` (no packing either way): as gemm is handed them.
        assert!(!column_major_destination([128, 784, 512], &row_major(784), &row_major(512)));
        assert!(!column_major_destination([128, 512, 10], &row_major(512), &row_major(10)));
        assert!(!column_major_destination([784, 128, 512], &transposed(784), &row_major(512)));
        assert!(!column_major_destination([128, 10, 512], &row_major(10), &transposed(10)));
    }

    crate::unit_tests::list![
        a_product_is_the_same_bits_either_way_round_in_every_layout,
        a_product_of_reversed_views_is_the_product,
        the_mlp_products_go_the_faster_way_round
    ];
}

/// `dot_general`'s batching rule (JAX's `_dot_batch_rule` and `_dot_general_batch_dim_nums`):
/// two mapped operands make their batch dimensions a new first batch dimension of the
/// product; one mapped operand makes its batch dimension one more free dimension, whose
/// place among the result's dimensions the rule computes.
pub(crate) fn batch_rule(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[BDim]) -> BatchResult {
    let Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } = prim else {
        return Err(AdError::NoRule(prim.name()));
    };
    let ([lhs, rhs], [lbd, rbd]) = (ins, dims) else { return Err(AdError::NoRule("dot_general of other than two operands".into())) };
    let bumped = |dims: &[usize], b: usize| -> Vec<usize> { dims.iter().map(|&d| if d >= b { d + 1 } else { d }).collect() };
    let (prim, out) = match (lbd, rbd) {
        (Some(l), Some(r)) => {
            let prim = Prim::DotGeneral {
                lhs_contract: bumped(lhs_contract, *l),
                rhs_contract: bumped(rhs_contract, *r),
                lhs_batch: std::iter::once(*l).chain(bumped(lhs_batch, *l)).collect(),
                rhs_batch: std::iter::once(*r).chain(bumped(rhs_batch, *r)).collect(),
            };
            (prim, 0)
        }
        (Some(l), None) => {
            // The free dimensions of the per-example lhs before its batch dimension come first.
            let per_example = lhs.aval.ndim() - 1;
            let free_before = (0..per_example).filter(|d| !lhs_batch.contains(d) && !lhs_contract.contains(d) && *d < *l).count();
            let prim = Prim::DotGeneral {
                lhs_contract: bumped(lhs_contract, *l),
                rhs_contract: rhs_contract.clone(),
                lhs_batch: bumped(lhs_batch, *l),
                rhs_batch: rhs_batch.clone(),
            };
            (prim, lhs_batch.len() + free_before)
        }
        (None, Some(r)) => {
            let per_example = rhs.aval.ndim() - 1;
            let free_before = (0..per_example).filter(|d| !rhs_batch.contains(d) && !rhs_contract.contains(d) && *d < *r).count();
            let prim = Prim::DotGeneral {
                lhs_contract: lhs_contract.clone(),
                rhs_contract: bumped(rhs_contract, *r),
                lhs_batch: lhs_batch.clone(),
                rhs_batch: bumped(rhs_batch, *r),
            };
            (prim, lhs.aval.ndim() - lhs_contract.len() + free_before)
        }
        (None, None) => return Err(AdError::NoRule("dot_general with no mapped operand".into())),
    };
    Ok(vec![(ad::bind(interp, prim, &[lhs.clone(), rhs.clone()])?, Some(out))])
}
