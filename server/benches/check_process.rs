//! Whole-process benchmark (`cargo bench -p tracelens --bench check_process`): `tracelens check
//! FILE` against `python FILE` under real JAX on the conformance fixtures, one process each,
//! as a user (or a pre-commit hook) runs them: start-up, imports and exit included. The two
//! commands run in turn on the same fixture (check, python, check, python, ...) and each pair
//! gives a ratio, so that a machine whose load drifts during the run weighs on both alike.
//! Prints per-fixture and overall figures (the median over fixtures of each fixture's median
//! pair ratio); asserts nothing (no timed tests).
//!
//! Wall time is a clock read around spawning and reaping the child; CPU time (user + system)
//! is the kernel's count for that child (`wait4`). Environment: `TRACELENS_BIN` (default: the
//! binary cargo built for this bench), `TRACELENS_JAX_PYTHON` (default `target/jax-venv`),
//! `TRACELENS_BENCH_EVERY` (every k-th fixture in path order; default 4),
//! `TRACELENS_BENCH_PAIRS` (pairs per fixture after one warm-up of each; default 3).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../tracer-core/benches/support/fixtures.rs"]
mod support;
use support::{fixtures, jax_python, repo_root};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(default)
}

/// One finished process: its wall and CPU time.
#[derive(Clone, Copy)]
struct Ran {
    wall: Duration,
    cpu: Duration,
}

/// Runs `program args` in `cwd` with its output thrown away; `None` if it cannot start.
fn run(program: &Path, args: &[&Path], cwd: &Path) -> Option<Ran> {
    let start = Instant::now();
    let child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("JAX_PLATFORMS", "cpu")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain data that `wait4` fills; the pid is our own child's.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    if pid != child.id() as libc::pid_t {
        return None;
    }
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    Some(Ran { wall, cpu: tv(usage.ru_utime) + tv(usage.ru_stime) })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

fn quantile(mut xs: Vec<f64>, q: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(((xs.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One fixture's figures: medians over its pairs.
struct Fixture {
    name: String,
    check_wall: f64,
    python_wall: f64,
    check_cpu: f64,
    python_cpu: f64,
    wall_ratio: f64,
    cpu_ratio: f64,
}

fn main() {
    let tracelens = std::env::var_os("TRACELENS_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tracelens")));
    let Some(python) = jax_python() else {
        println!("real JAX: skipped (set TRACELENS_JAX_PYTHON or run `cargo xtask conformance` once to create target/jax-venv)");
        return;
    };
    let (every, pairs) = (env_number("TRACELENS_BENCH_EVERY", 4), env_number("TRACELENS_BENCH_PAIRS", 3));
    let all = fixtures();
    let chosen: Vec<&PathBuf> = all.iter().step_by(every).collect();
    println!(
        "`tracelens check FILE` against `python FILE` (JAX on CPU), whole processes: {} of {} fixtures (every {every}), {pairs} pairs each after one warm-up",
        chosen.len(),
        all.len()
    );
    let check = Path::new("check");
    let mut results = Vec::new();
    for path in chosen {
        let cwd = path.parent().unwrap_or(Path::new("."));
        let file = Path::new(path.file_name().unwrap_or_default());
        let name = path.strip_prefix(repo_root().join("tests/fixtures")).unwrap_or(path).display().to_string();
        // Warm-up: the page cache holds both programs and what they read.
        let (Some(_), Some(_)) = (run(&tracelens, &[check, file], cwd), run(&python, &[file], cwd)) else {
            println!("  {name}: cannot start one of the two programs");
            continue;
        };
        let mut runs: Vec<(Ran, Ran)> = Vec::new();
        for _ in 0..pairs {
            if let (Some(a), Some(b)) = (run(&tracelens, &[check, file], cwd), run(&python, &[file], cwd)) {
                runs.push((a, b));
            }
        }
        let of = |f: &dyn Fn(&(Ran, Ran)) -> f64| median(runs.iter().map(f).collect());
        let fixture = Fixture {
            name,
            check_wall: of(&|(a, _)| ms(a.wall)),
            python_wall: of(&|(_, b)| ms(b.wall)),
            check_cpu: of(&|(a, _)| ms(a.cpu)),
            python_cpu: of(&|(_, b)| ms(b.cpu)),
            wall_ratio: of(&|(a, b)| b.wall.as_secs_f64() / a.wall.as_secs_f64().max(1e-9)),
            cpu_ratio: of(&|(a, b)| b.cpu.as_secs_f64() / a.cpu.as_secs_f64().max(1e-6)),
        };
        println!(
            "  {:<72} check {:7.2} ms ({:6.2} CPU)  python {:8.1} ms ({:7.1} CPU)  ratio {:6.0}x wall, {:6.0}x CPU",
            fixture.name,
            fixture.check_wall,
            fixture.check_cpu,
            fixture.python_wall,
            fixture.python_cpu,
            fixture.wall_ratio,
            fixture.cpu_ratio
        );
        results.push(fixture);
    }
    if results.is_empty() {
        return;
    }
    let column = |f: &dyn Fn(&Fixture) -> f64| results.iter().map(f).collect::<Vec<f64>>();
    println!(
        "check: median {:.2} ms wall, {:.2} ms CPU per process; python: median {:.1} ms wall, {:.1} ms CPU",
        median(column(&|f| f.check_wall)),
        median(column(&|f| f.check_cpu)),
        median(column(&|f| f.python_wall)),
        median(column(&|f| f.python_cpu))
    );
    let ratios = column(&|f| f.wall_ratio);
    println!(
        "ratio python/check per process, wall (paired): median {:.0}x, 10th percentile {:.0}x, min {:.0}x over {} fixtures (target: >= 200x)",
        median(ratios.clone()),
        quantile(ratios.clone(), 0.1),
        quantile(ratios, 0.0),
        results.len()
    );
    let cpu = column(&|f| f.cpu_ratio);
    println!("ratio python/check per process, CPU time: median {:.0}x, min {:.0}x", median(cpu.clone()), quantile(cpu, 0.0));
}
