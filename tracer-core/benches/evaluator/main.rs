//! Evaluator benchmark (`cargo bench -p tracer-core --bench evaluator`): a 1024×1024 float32
//! matmul through the CPU evaluator's `dot_general` kernel, in GFLOP/s, against this
//! machine's single-core float32 peak measured in the same run by a tight FMA loop (and,
//! when `TRACELENS_JAX_PYTHON` names a Python with NumPy, NumPy's OpenBLAS sgemm on one
//! thread, for reference); then the MLP forward+backward step of `mlp.rs` in tracelens,
//! NumPy and `jax.jit`. Prints figures; asserts no timing, only that the three MLP answers
//! agree.
//!
//! Times are the thread's CPU time (`/proc/thread-self/schedstat` on Linux, wall time
//! elsewhere), best of several runs: on a shared machine, time spent descheduled would
//! otherwise be counted against whichever measurement it fell in.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ndarray::{ArrayD, IxDyn};

/// The allocator the `tracelens` binary uses, so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The allocator option `tracelens run` sets (`keep_freed_memory` in `server/src/main.rs`):
/// mimalloc keeps freed memory 10 s instead of 1 s before returning it to the OS.
fn keep_freed_memory_as_tracelens_run_does() {
    // mimalloc.h, `mi_option_e`: `mi_option_purge_delay` is the 16th option (milliseconds).
    const PURGE_DELAY: std::ffi::c_int = 15;
    extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    // SAFETY: plain setter and getter of the option table of the mimalloc linked in above;
    // only its documented default is replaced, as the binary does.
    unsafe {
        if mi_option_get(PURGE_DELAY) == 1000 {
            mi_option_set(PURGE_DELAY, 10_000);
        }
    }
}

mod mlp;
use tracer_core::jax::dtypes::DType;
use tracer_core::jax::prims::products::{dot_general_kernel as dot_general, dot_general_kernel_f32 as dot_general_f32, DotDims};

const N: usize = 1024;
const REPEATS: usize = 5;

fn main() {
    keep_freed_memory_as_tracelens_run_does();
    // The core's clock moves with its turbo (10-15% between runs of the loop on the same
    // machine), so the peak is measured before and after the products, and the higher kept.
    let peak_before = peak_gflops();
    let matmul = evaluator_matmul_f32_gflops();
    let matmul_widened = evaluator_matmul_gflops(DType::F32);
    let matmul_f64 = evaluator_matmul_gflops(DType::F64);
    let peak_after = peak_gflops();
    let peak = peak_before.max(peak_after);
    println!(
        "float32 peak, one core ({}): {peak:.1} GFLOP/s (the higher of {peak_before:.1} before the products and {peak_after:.1} after)",
        peak_method()
    );
    println!("evaluator dot_general, f32[{N},{N}] @ f32[{N},{N}] (f32 data, sgemm), one core: {matmul:.1} GFLOP/s");
    println!("ratio to peak: {:.0}% (target >= 50%)", 100.0 * matmul / peak);
    println!("the same from f64-held data (converted to f32 and back), one core: {matmul_widened:.1} GFLOP/s");
    println!("evaluator dot_general, f64[{N},{N}] @ f64[{N},{N}] (dgemm), one core: {matmul_f64:.1} GFLOP/s");
    for kernels in openblas_kernels() {
        match numpy_sgemm_gflops(kernels) {
            Some(numpy) => println!(
                "NumPy/OpenBLAS sgemm ({}), one thread, same shapes: {numpy:.1} GFLOP/s ({:.0}% of peak)",
                kernels.describe(),
                100.0 * numpy / peak
            ),
            None => println!("NumPy reference skipped (set TRACELENS_JAX_PYTHON to a Python with NumPy)"),
        }
    }
    mlp::run();
}

/// Best of `REPEATS` float32 products on f32 data, as the evaluator's float32 path holds it.
fn evaluator_matmul_f32_gflops() -> f64 {
    let a = ArrayD::from_shape_fn(IxDyn(&[N, N]), |ix| ((ix[0] * 7 + ix[1] * 3) % 17) as f32 * 0.125 - 1.0).into_shared();
    let b = ArrayD::from_shape_fn(IxDyn(&[N, N]), |ix| ((ix[0] * 5 + ix[1] * 11) % 13) as f32 * 0.25 - 1.5).into_shared();
    let dims = DotDims { lhs_contract: &[1], rhs_contract: &[0], lhs_batch: &[], rhs_batch: &[] };
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let start = Clock::start();
        let out = dot_general_f32(black_box(&a), black_box(&b), &dims, &[N, N]);
        best = best.min(start.seconds());
        assert!(out.is_some_and(|o| o.shape() == [N, N]));
    }
    2.0 * (N * N * N) as f64 / best / 1e9
}

/// Best of `REPEATS` products: the machine is shared, so the fastest run is the least
/// disturbed one. Inputs are held as the evaluator holds them (f64 data of an f32 array).
fn evaluator_matmul_gflops(dtype: DType) -> f64 {
    let a = ArrayD::from_shape_fn(IxDyn(&[N, N]), |ix| f64::from(((ix[0] * 7 + ix[1] * 3) % 17) as f32 * 0.125 - 1.0));
    let b = ArrayD::from_shape_fn(IxDyn(&[N, N]), |ix| f64::from(((ix[0] * 5 + ix[1] * 11) % 13) as f32 * 0.25 - 1.5));
    let dims = DotDims { lhs_contract: &[1], rhs_contract: &[0], lhs_batch: &[], rhs_batch: &[] };
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let start = Clock::start();
        let out = dot_general(black_box(&a), black_box(&b), &dims, &[N, N], dtype);
        best = best.min(start.seconds());
        assert!(out.is_some_and(|o| o.shape() == [N, N]));
    }
    2.0 * (N * N * N) as f64 / best / 1e9
}

/// This thread's CPU time when the OS reports it, else wall time.
struct Clock {
    wall: Instant,
    cpu: Option<Duration>,
}

impl Clock {
    fn start() -> Clock {
        Clock { wall: Instant::now(), cpu: thread_cpu_time() }
    }
    fn seconds(&self) -> f64 {
        match (self.cpu, thread_cpu_time()) {
            (Some(start), Some(now)) => (now - start).as_secs_f64(),
            _ => self.wall.elapsed().as_secs_f64(),
        }
    }
}

/// The first field of `/proc/thread-self/schedstat`: nanoseconds this thread ran on a CPU.
fn thread_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok().map(Duration::from_nanos)
}

/// The widest fused multiply-add this CPU has: the peak is that instruction's issue rate.
#[derive(Clone, Copy, PartialEq)]
enum Fma {
    Avx512,
    Avx2,
    Scalar,
}

impl Fma {
    fn detect() -> Fma {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                return Fma::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Fma::Avx2;
            }
        }
        Fma::Scalar
    }

    fn lanes(self) -> f64 {
        match self {
            Fma::Avx512 => 16.0,
            Fma::Avx2 => 8.0,
            Fma::Scalar => 1.0,
        }
    }
}

fn peak_method() -> &'static str {
    match Fma::detect() {
        Fma::Avx512 => "AVX-512 FMA loop, 12 independent 16-lane accumulators",
        Fma::Avx2 => "AVX2 FMA loop, 12 independent 8-lane accumulators",
        Fma::Scalar => "scalar multiply-add loop: no AVX2+FMA on this CPU, so this underestimates the peak",
    }
}

/// Float32 FLOP/s of a loop that does nothing but independent fused multiply-adds of the
/// widest vectors the CPU has: enough accumulators to cover the FMA latency on both ports,
/// so it runs at the core's issue rate.
fn peak_gflops() -> f64 {
    const ITERS: u64 = 50_000_000;
    let fma = Fma::detect();
    let mut best = f64::INFINITY;
    let mut sink = 0.0f32;
    for _ in 0..REPEATS {
        let start = Clock::start();
        sink += fma_loop(fma, black_box(ITERS));
        best = best.min(start.seconds());
    }
    black_box(sink);
    ITERS as f64 * 12.0 * fma.lanes() * 2.0 / best / 1e9
}

fn fma_loop(fma: Fma, iters: u64) -> f32 {
    #[cfg(target_arch = "x86_64")]
    match fma {
        // SAFETY: AVX-512F was detected at run time.
        Fma::Avx512 => return unsafe { fma_loop_avx512(iters) },
        // SAFETY: AVX2 and FMA were detected at run time.
        Fma::Avx2 => return unsafe { fma_loop_avx2(iters) },
        Fma::Scalar => {}
    }
    let _ = fma;
    let mut acc = [0.0f32; 12];
    for _ in 0..iters {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = a.mul_add(0.999_999, i as f32 * 1e-7);
        }
    }
    acc.iter().sum()
}

/// Twelve named accumulators, so that they stay in registers, each `a = a * m + c`.
macro_rules! fma_loop {
    ($name:ident, $features:literal, $set1:ident, $fmadd:ident, $add:ident, $store:ident, $lanes:literal) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name(iters: u64) -> f32 {
            use std::arch::x86_64::*;
            let m = $set1(0.999_999);
            let c = $set1(1e-7);
            let mut acc = [c; 12];
            let [mut a0, mut a1, mut a2, mut a3, mut a4, mut a5, mut a6, mut a7, mut a8, mut a9, mut a10, mut a11] = acc;
            for _ in 0..iters {
                a0 = $fmadd(a0, m, c);
                a1 = $fmadd(a1, m, c);
                a2 = $fmadd(a2, m, c);
                a3 = $fmadd(a3, m, c);
                a4 = $fmadd(a4, m, c);
                a5 = $fmadd(a5, m, c);
                a6 = $fmadd(a6, m, c);
                a7 = $fmadd(a7, m, c);
                a8 = $fmadd(a8, m, c);
                a9 = $fmadd(a9, m, c);
                a10 = $fmadd(a10, m, c);
                a11 = $fmadd(a11, m, c);
            }
            acc = [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11];
            let mut total = $set1(0.0);
            for a in acc {
                total = $add(total, a);
            }
            let mut lanes = [0.0f32; $lanes];
            $store(lanes.as_mut_ptr(), total);
            lanes.iter().sum()
        }
    };
}

fma_loop!(fma_loop_avx2, "avx2,fma", _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps, 8);
fma_loop!(fma_loop_avx512, "avx512f", _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_storeu_ps, 16);

/// NumPy's float32 matmul of the same shapes on one OpenBLAS thread, best of `REPEATS`.
fn numpy_sgemm_gflops(kernels: OpenBlasKernels) -> Option<f64> {
    let python = std::env::var_os("TRACELENS_JAX_PYTHON")?;
    let script = format!(
        "import time, numpy as np\na = np.random.default_rng(0).standard_normal(({N}, {N})).astype(np.float32)\nb = a.T.copy()\nbest = 1e9\nfor _ in range({REPEATS}):\n    t = time.thread_time(); a @ b; best = min(best, time.thread_time() - t)\nprint(2 * {N}**3 / best / 1e9)\n"
    );
    let mut command = std::process::Command::new(python);
    command.args(["-c", &script]).env("OPENBLAS_NUM_THREADS", "1").env("OMP_NUM_THREADS", "1");
    kernels.apply(&mut command);
    let out = command.output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Which of OpenBLAS's kernels NumPy's reference runs. OpenBLAS picks them by CPU model, and
/// the one NumPy 2.4 bundles (0.3.31) takes this machine's Zen 5 for a Haswell: AVX2
/// kernels on a CPU with AVX-512. So where the CPU has AVX-512 the reference also runs with
/// `OPENBLAS_CORETYPE=SkylakeX`, OpenBLAS's AVX-512 kernels, the fastest NumPy can be here.
#[derive(Clone, Copy, PartialEq)]
pub enum OpenBlasKernels {
    /// What OpenBLAS picks by itself, as a user's NumPy runs.
    Default,
    /// `OPENBLAS_CORETYPE=SkylakeX`.
    Avx512,
}

impl OpenBlasKernels {
    pub fn describe(self) -> &'static str {
        match self {
            OpenBlasKernels::Default => "the kernels OpenBLAS picks",
            OpenBlasKernels::Avx512 => "AVX-512 kernels, OPENBLAS_CORETYPE=SkylakeX",
        }
    }

    pub fn apply(self, command: &mut std::process::Command) {
        if self == OpenBlasKernels::Avx512 {
            command.env("OPENBLAS_CORETYPE", "SkylakeX");
        }
    }
}

pub fn openblas_kernels() -> Vec<OpenBlasKernels> {
    let mut kernels = vec![OpenBlasKernels::Default];
    if Fma::detect() == Fma::Avx512 {
        kernels.push(OpenBlasKernels::Avx512);
    }
    kernels
}
