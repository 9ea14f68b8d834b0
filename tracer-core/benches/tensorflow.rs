//! TensorFlow benchmark (`cargo bench -p tracer-core --bench tensorflow`): tracelens over the
//! TensorFlow conformance fixtures (`tests/fixtures/tf/{clean,errors,warnings}`) against
//! running each of them under `python` with real TensorFlow, as a ratio measured in the same
//! run (issue 22, point 7: target >= 200x). Also the same fixtures through the `tracelens
//! check` binary, one process each, when `TRACELENS_BIN` names it. Prints figures; asserts
//! nothing (no timed tests).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tracer_core::{analyze_file, AnalysisConfig};

/// The allocator the `tracelens` binary uses, so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/fixtures.rs"]
mod support;
use support::{best_of_three_rounds, python_files, tf_python, Disk};

/// The TensorFlow conformance fixtures that run as scripts, in path order.
fn fixtures() -> Vec<PathBuf> {
    python_files(&["tests/fixtures/tf/clean", "tests/fixtures/tf/errors", "tests/fixtures/tf/warnings"])
}

/// What `check` does, in process: one analysis of the file, nothing rendered.
fn analyse(path: &Path, text: &str) -> Duration {
    let config = AnalysisConfig {
        search_roots: path.parent().map(|p| vec![p.to_path_buf()]).unwrap_or_default(),
        skip_hover_values: true,
        // The benches build with the crate's tests' `check-ir`: the product does not check.
        check_ir: false,
        ..Default::default()
    };
    let start = Instant::now();
    let analysis = analyze_file(path, text, &Disk, &config);
    let took = start.elapsed();
    std::hint::black_box(analysis);
    took
}

/// Runs `program` once per fixture, as a user runs it; the time and how many ran.
fn run_each(files: &[PathBuf], program: &Path, args: &[&str], env: &[(&str, &str)]) -> (Duration, usize) {
    let start = Instant::now();
    let mut ran = 0;
    for p in files {
        let mut command = Command::new(program);
        command.args(args).arg(p).current_dir(p.parent().unwrap_or(Path::new("."))).stdout(Stdio::null()).stderr(Stdio::null());
        for (k, v) in env {
            command.env(k, v);
        }
        if command.status().is_ok() {
            ran += 1;
        }
    }
    (start.elapsed(), ran)
}

fn main() {
    let files = fixtures();
    // 1. tracelens over every fixture, in process, three rounds; the best round counts.
    let (texts, best) = best_of_three_rounds(&files, analyse);
    let each = |d: Duration, n: usize| d.as_secs_f64() * 1e3 / n.max(1) as f64;
    println!(
        "tracelens (in process): {} TensorFlow fixtures analysed in {:.1} ms ({:.2} ms each)",
        texts.len(),
        best.as_secs_f64() * 1e3,
        each(best, texts.len())
    );

    // 2. `tracelens check FILE`, one process each, when the binary is given.
    let binary = std::env::var_os("TRACELENS_BIN").map(PathBuf::from);
    let check = binary.as_ref().map(|b| run_each(&files, b, &["check"], &[]));
    if let Some((took, ran)) = check {
        println!("tracelens check (one process per file): {ran} fixtures in {:.2} s ({:.1} ms each)", took.as_secs_f64(), each(took, ran));
    }

    // 3. The same fixtures under python + real TensorFlow, one process each.
    let Some(python) = tf_python() else {
        println!("real TensorFlow: skipped (set TRACELENS_TF_PYTHON or run `cargo xtask tf-conformance` once to create target/tf-venv)");
        return;
    };
    let (tf, ran) = run_each(&files, &python, &[], &[("TF_CPP_MIN_LOG_LEVEL", "3"), ("CUDA_VISIBLE_DEVICES", "")]);
    println!("real TensorFlow: {ran} fixtures run in {:.1} s ({:.0} ms each)", tf.as_secs_f64(), each(tf, ran));
    println!(
        "ratio: tracelens is {:.0}x faster in process than running the fixtures under TensorFlow (target: >= 200x)",
        tf.as_secs_f64() / best.as_secs_f64().max(1e-9)
    );
    if let Some((took, _)) = check {
        println!(
            "ratio: `tracelens check`, one process per file, is {:.0}x faster than python + TensorFlow",
            tf.as_secs_f64() / took.as_secs_f64().max(1e-9)
        );
    }
}
