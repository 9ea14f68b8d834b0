//! The MLP step of issue #3, point 6: `jax.value_and_grad(loss)` under `jax.jit` for a
//! 784→512→512→10 float32 MLP on a batch of 128, run three ways in one bench run:
//!
//! - tracelens: `mlp_model.py` plus a driver, run by `tracer_core::run_file` in values mode,
//!   the path `tracelens run` takes. The step's time is the difference between a program that
//!   calls the step `1 + STEPS` times and one that calls it once, over `STEPS`: parsing,
//!   initialisation and tracing cancel out, and what is left is evaluating the traced step
//!   (with the jit call's own interpreter work). The whole one-step program is timed too.
//! - NumPy, a hand-written forward and backward (`mlp_reference.py`), on one OpenBLAS thread;
//! - `jax.jit` of the same step on CPU, after warm-up, with XLA on one thread.
//!
//! The loss and the gradient's norm must agree between the three within float32 tolerance:
//! a fast wrong answer is worthless, so a disagreement fails the bench.

use std::path::Path;

use tracer_core::interp::SourceLoader;
use tracer_core::{run_file, AnalysisConfig, RunOutcome};

use super::{openblas_kernels, Clock, OpenBlasKernels, REPEATS};

const MODEL: &str = include_str!("mlp_model.py");
const REFERENCE: &str = include_str!("mlp_reference.py");

/// Steps in the longer program; the per-step time is its extra time over them.
const STEPS: usize = 100;

/// Relative tolerance of the loss and gradient-norm check: float32 sums over up to 784
/// products, in whatever order each implementation adds them, agree to a few ulp per term;
/// 1e-5 is about 80 float32 ulp, and a wrong gradient is off by far more.
const TOLERANCE: f64 = 1e-5;

/// One implementation's answer and time per step (thread or process CPU seconds).
pub struct Measured {
    pub name: &'static str,
    pub loss: f64,
    pub grad_norm: f64,
    pub seconds: f64,
}

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<std::rc::Rc<str>> {
        None
    }
}

pub fn run() {
    let (tracelens, whole_program) = tracelens_step();
    println!();
    println!("MLP step: jit(value_and_grad(loss)), 784->512->512->10, f32, batch 128, softmax cross-entropy");
    println!("{:<40} {:>10} {:>20} {:>20}", "", "ms/step", "loss", "grad norm");
    let print = |m: &Measured, what: &str| println!("{what:<40} {:>10.2} {:>20} {:>20}", m.seconds * 1e3, m.loss, m.grad_norm);
    print(&tracelens, "tracelens evaluator (values mode, 1 core)");
    println!("tracelens, the whole one-step program (parse, init, trace, step, print): {:.1} ms", whole_program * 1e3);
    let Some(mut references) = python_references(OpenBlasKernels::Default) else {
        println!("NumPy and jax.jit skipped (set TRACELENS_JAX_PYTHON to a Python with NumPy and JAX)");
        return;
    };
    if openblas_kernels().contains(&OpenBlasKernels::Avx512) {
        let forced = python_references(OpenBlasKernels::Avx512).unwrap_or_default();
        references.extend(forced.into_iter().map(|r| Measured { name: "numpy (AVX-512)", ..r }));
    }
    for r in &references {
        let what = match r.name {
            "numpy" => "NumPy by hand (OpenBLAS, 1 thread)",
            "numpy (AVX-512)" => "NumPy, OpenBLAS's AVX-512 kernels",
            _ => "jax.jit (XLA CPU, 1 thread)",
        };
        print(r, what);
    }
    for r in &references {
        let target = if r.name.starts_with("numpy") { 1.0 } else { 0.5 };
        println!("tracelens vs {}: {:.2}x (target >= {target}x)", r.name, r.seconds / tracelens.seconds);
    }
    let mut wrong = Vec::new();
    for r in &references {
        for (what, ours, theirs) in [("loss", tracelens.loss, r.loss), ("grad norm", tracelens.grad_norm, r.grad_norm)] {
            let rel = (ours - theirs).abs() / theirs.abs();
            println!("{what} vs {}: relative difference {rel:.1e} (tolerance {TOLERANCE:.0e})", r.name);
            if !(rel <= TOLERANCE) {
                wrong.push(format!("{what}: tracelens {ours} vs {} {theirs}", r.name));
            }
        }
    }
    assert!(wrong.is_empty(), "the MLP step disagrees: {}", wrong.join("; "));
}

/// The step's evaluation time, its loss and gradient norm, and the best time of the whole
/// one-step program. The two programs run in turns, `REPEATS` times each; the step is the
/// difference of their best times over `STEPS`. With 100 steps, a one-step program slowed
/// by 10 ms in all its runs (the allocator's first pages, a neighbour) moves the step by
/// 0.1 ms, where 20 steps let it move by 0.5 ms. The median of the pairs' differences is
/// printed beside it, and a disagreement of more than 10% between the two is reported.
fn tracelens_step() -> (Measured, f64) {
    let (mut ones, mut manys) = (Vec::new(), Vec::new());
    let mut answers = Vec::new();
    for _ in 0..REPEATS {
        let (one, answer_one) = timed_run(1);
        let (many, answer_many) = timed_run(1 + STEPS);
        assert_eq!(answer_one, answer_many, "the step's answer changed between runs");
        ones.push(one);
        manys.push(many);
        answers.push(answer_one);
    }
    let best = |times: &[f64]| times.iter().copied().fold(f64::INFINITY, f64::min);
    let step = (best(&manys) - best(&ones)) / STEPS as f64;
    let mut pairs: Vec<f64> = manys.iter().zip(&ones).map(|(many, one)| (many - one) / STEPS as f64).collect();
    pairs.sort_by(f64::total_cmp);
    let median = pairs[pairs.len() / 2];
    println!(
        "tracelens step: {:.3} ms from the best runs, {:.3} ms the median of {} pairs{}",
        step * 1e3,
        median * 1e3,
        pairs.len(),
        if (median - step).abs() > 0.1 * step { " (they differ by more than 10%: the machine is noisy)" } else { "" }
    );
    let (loss, grad_norm) = answers[0];
    ((Measured { name: "tracelens", loss, grad_norm, seconds: step }), best(&ones))
}

fn timed_run(steps: usize) -> (f64, (f64, f64)) {
    let program = format!(
        "{MODEL}\nfor _ in range({steps}):\n    value, grads = step(params, x, y)\nprint(repr(float(value)), repr(float(grad_norm(grads))))\n"
    );
    let mut config = AnalysisConfig::default();
    config.budgets.max_time = std::time::Duration::from_secs(600);
    config.budgets.max_steps = u64::MAX;
    let start = Clock::start();
    let result = run_file(Path::new("mlp.py"), &program, &NoFiles, &config);
    let seconds = start.seconds();
    assert_eq!(result.outcome, RunOutcome::Completed, "{}\n{:?}", result.stdout, result.notes);
    let numbers: Vec<f64> = result.stdout.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert!(numbers.len() == 2, "the MLP program printed {:?} ({:?})", result.stdout, result.notes);
    (seconds, (numbers[0], numbers[1]))
}

/// NumPy and `jax.jit` on this machine, from the Python at `TRACELENS_JAX_PYTHON`; NumPy
/// alone with OpenBLAS's AVX-512 kernels, since XLA does not use OpenBLAS.
fn python_references(kernels: OpenBlasKernels) -> Option<Vec<Measured>> {
    let python = std::env::var_os("TRACELENS_JAX_PYTHON")?;
    let numpy_only = kernels == OpenBlasKernels::Avx512;
    let mut command = std::process::Command::new(python);
    command.args(["-c", &format!("{MODEL}\n{REFERENCE}"), &(4 * REPEATS).to_string()]);
    if numpy_only {
        command.arg("numpy-only");
    }
    command
        .env("OPENBLAS_NUM_THREADS", "1")
        .env("OMP_NUM_THREADS", "1")
        .env("JAX_PLATFORMS", "cpu")
        .env("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1");
    kernels.apply(&mut command);
    let output = command.output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let measured: Vec<Measured> = text
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let name = match words.first()? {
                &"numpy" => "numpy",
                &"jax" => "jax.jit",
                _ => return None,
            };
            let number = |i: usize| words.get(i)?.parse::<f64>().ok();
            Some(Measured { name, loss: number(1)?, grad_norm: number(2)?, seconds: number(3)? })
        })
        .collect();
    if measured.len() != if numpy_only { 1 } else { 2 } {
        eprintln!("the Python reference failed:\n{}", String::from_utf8_lossy(&output.stderr));
        return None;
    }
    Some(measured)
}
