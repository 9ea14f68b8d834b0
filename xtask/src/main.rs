//! Repository tasks (`cargo xtask ...`): the conformance suite against real JAX, the
//! measurement over checkouts of public JAX projects, and the fuzzer.

mod compare;
mod conformance;
mod forkserver;
mod fuzz;
mod golden;
mod hover;
mod lsp_client;
mod model;
mod pairs;
mod pool;
mod process;
mod projects;
mod python_env;
mod realworld;
mod realworld_bodies;
mod realworld_scan;
mod report;
mod repro;
mod run_suite;
mod runners;
mod sha256;
mod tf_conformance;
mod tf_repro;
mod tf_signatures;
mod tf_stack_depths;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask conformance [OPTIONS]

Runs every fixture under tests/fixtures/ under real JAX 0.10.2 (the oracle) and under
tracelens, and compares them (tests/conformance/README.md). A full run (no --filter, no
--fixtures) also re-runs the golden-table generators with --check (tests/conformance/
gen_ops_golden.py) and fails if a table drifted from what JAX gives.

options:
  --filter SUBSTR   only fixtures whose path (relative to tests/fixtures/) contains SUBSTR
  --jobs N          fixtures run in parallel (default: number of cores)
  --oracle-only     check the fixtures against JAX only; tracelens is neither built nor run
  --json OUT        also write every result, with the raw oracle and tracelens JSON, to OUT
  --fixtures DIR    take fixtures from DIR instead of tests/fixtures/
  --no-cache        rerun the oracle even where target/conformance-cache/ has its result
  --reproducers-only  only the reproducer checks: every error fixture's reproducer and every
                    clean fixture's jitted functions staged out (repro --function), under JAX
  --no-golden       a full run without the golden tables' check (tests/run_all.sh runs it
                    while the tests build)

environment:
  TRACELENS_JAX_PYTHON  a Python interpreter with jax==0.10.2 (default: target/jax-venv,
                        created on first use with python3 -m venv and pip)
  TRACELENS_BIN         a tracelens binary to use instead of building one

usage: cargo xtask realworld [OPTIONS] DIR...

Runs `tracelens check` and `tracelens trace` (--format json, from DIR as the current folder)
on every .py file under each DIR, and on every .ipynb turned into Python (code cells
joined; lines starting with % or ! become `pass  # ...`; written to target/realworld/
PROJECT/PATH.ipynb.py, where a finding's line can be read; a notebook that %runs another
is skipped, as the names it uses come from elsewhere), and prints a Markdown table per
project and in total (tests/realworld/README.md): files; crashes (exit 2, a signal, a
panic, output that is not JSON); timeouts; budget stops (files with a TL900); silent
stops (files whose analysis ended without a finding, as TRACELENS_DEBUG=1 prints; their
reasons are counted below the table); staging-transform sites traced; lines reached under a transformation; findings by code (TL900
left out); milliseconds of `check` per file (mean), wall clock and CPU (user + system). Exit 1 when anything crashed or hung.

A site is a decorator or call of a staging transform: jax.jit / jit, jax.pmap / pmap,
pjit, and the library wrappers nnx.jit, eqx.filter_jit, eqx.filter_pmap (the library
sites). Only these stage a function out with abstract values, where JAX's trace-time
errors happen; vmap and grad alone run eagerly and are not counted. Each site is tied to
the function it transforms (the decorated def; the argument of the call, through partial,
grad, vmap and the like; a lambda; a function returned by a factory defined in the same
file) and counts as traced when `trace` lists that function with a trace; its route is
the trace's `route` field (unknown while the JSON has none). Sites whose function the
text does not tell (`jit(model.apply)` of a library class) are unresolved. Lines
reached: distinct lines where a trace bound or read an array (trace JSON `values`).

options:
  --json OUT        also write every finding (repo, file, line, code, message; a notebook's
                    cell and line in cell; TL900s too) and every site, with the table, to OUT
  --timeout SECS    wall-clock limit per tracelens process (default 60)
  --jobs N          files analysed in parallel (default: number of cores)
";

/// The engine's memory budget counts what each thread holds, as in the `tracelens` binary.
#[global_allocator]
static ALLOCATOR: tracer_core::interp::memory::CountingAllocator<std::alloc::System> =
    tracer_core::interp::memory::CountingAllocator(std::alloc::System);

const HOVER_USAGE: &str = "\
usage: cargo xtask hover [--filter SUBSTR] [--jobs N] [--min PERCENT] [--list] [--json OUT]

Hover coverage: runs every fixture under real JAX with tests/conformance/hover_oracle.py,
which finds each place (a name read or assigned, a parameter in a def or lambda line, an
attribute `self.w`, an item `params[\"w1\"]`) where JAX had an array or a pytree of arrays,
and hovers each of them in `tracelens lsp`. Prints a table by kind, the misses and the
avals that differ from JAX's; fails when fewer than --min percent (default 95) show an aval.
Oracle results are cached in target/conformance-cache/.

options:
  --filter SUBSTR   only fixtures whose path (relative to tests/fixtures/) contains SUBSTR
  --jobs N          fixtures in parallel, one server each (default: number of cores)
  --min PERCENT     the coverage required (default 95)
  --list            print every miss (default: the first six of each kind)
  --json OUT        every site hovered, with JAX's avals and the hover's text
";

const FUZZ_USAGE: &str = "\
usage: cargo xtask fuzz [--minutes N | --batches N] [--jobs N] [--seed S] [--batch N] [--first-batch K] [--no-write]

Mutates tests/fixtures/**/*.py and examples/*.py (API swaps, extreme numbers and shapes,
deleted and duplicated lines and tokens, spliced programs, huge literals, deep nesting, odd
bytes and line breaks) and runs each mutant through check, trace, repro and run in a child
process. Every panic, abort, run over 5 s or over 1 GiB of memory that happens again alone is
minimised and written to tests/fuzz/crashes/NNN.py (tracer-core/tests/fuzz_regressions.rs).
Exit status 1 when a crash was found. The same seed gives the same mutants.

options:
  --minutes N   how long to fuzz (default 1)
  --batches N   run batches K..K+N, however long they take (the same inputs on every machine)
  --jobs N      child processes at a time, each on its own batch (default: the cores)
  --seed S      the mutation seed (default 1)
  --batch N     mutants per child process (default 40)
  --first-batch K
                start at batch K (to replay what a faster machine reached)
  --no-write    report crashes without writing fixtures
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("fuzz-child") => {
            tracer_core::interp::memory::set_memory_probe(tracer_core::interp::memory::counted_thread_bytes);
            match args.get(1) {
                Some(dir) => fuzz::child::main(std::path::Path::new(dir)),
                None => ExitCode::from(2),
            }
        }
        Some("fuzz") if args[1..].iter().any(|a| a == "--help" || a == "-h") => {
            print!("{FUZZ_USAGE}");
            ExitCode::SUCCESS
        }
        Some("fuzz") => match parse_fuzz(&args[1..]) {
            Ok(options) => match fuzz::run(&conformance::workspace_root(), &options) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(why) => {
                    eprintln!("fuzz: {why}");
                    ExitCode::from(2)
                }
            },
            Err(why) => {
                eprintln!("{why}\n\n{FUZZ_USAGE}");
                ExitCode::from(2)
            }
        },
        Some("conformance") if args[1..].iter().any(|a| a == "--help" || a == "-h") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some("conformance") => match parse_conformance(&args[1..]) {
            Ok(options) => match conformance::run(options) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(why) => {
                    eprintln!("conformance: {why}");
                    ExitCode::from(2)
                }
            },
            Err(why) => {
                eprintln!("{why}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("tf-conformance") if args[1..].iter().any(|a| a == "--help" || a == "-h") => {
            print!("{TF_USAGE}");
            ExitCode::SUCCESS
        }
        Some("tf-conformance") => match parse_tf_conformance(&args[1..]) {
            Ok(options) => match tf_conformance::run(options) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(why) => {
                    eprintln!("tf-conformance: {why}");
                    ExitCode::from(2)
                }
            },
            Err(why) => {
                eprintln!("{why}\n\n{TF_USAGE}");
                ExitCode::from(2)
            }
        },
        Some("hover") if args[1..].iter().any(|a| a == "--help" || a == "-h") => {
            print!("{HOVER_USAGE}");
            ExitCode::SUCCESS
        }
        Some("hover") => match parse_hover(&args[1..]) {
            Ok(options) => match hover::run(options) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(why) => {
                    eprintln!("hover: {why}");
                    ExitCode::from(2)
                }
            },
            Err(why) => {
                eprintln!("{why}\n\n{HOVER_USAGE}");
                ExitCode::from(2)
            }
        },
        Some("realworld") if args[1..].iter().any(|a| a == "--help" || a == "-h") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some("realworld") => match parse_realworld(&args[1..]) {
            Ok(options) => match run_realworld(options) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(why) => {
                    eprintln!("realworld: {why}");
                    ExitCode::from(2)
                }
            },
            Err(why) => {
                eprintln!("{why}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("help" | "--help" | "-h") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprint!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn parse_hover(args: &[String]) -> Result<hover::Options, String> {
    let mut options = hover::Options {
        filter: None,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        min_percent: 95.0,
        list: false,
        json_out: None,
    };
    each_flag(args, |flag, value| {
        match flag {
            "--filter" => options.filter = Some(value("--filter")?),
            "--jobs" | "-j" => options.jobs = number("--jobs", &value("--jobs")?)?,
            "--min" => options.min_percent = value("--min")?.parse().map_err(|_| "--min takes a number".to_string())?,
            "--list" => options.list = true,
            "--json" => options.json_out = Some(PathBuf::from(value("--json")?)),
            other => return Err(format!("unknown option {other:?}")),
        }
        Ok(())
    })?;
    Ok(options)
}

fn parse_conformance(args: &[String]) -> Result<conformance::Options, String> {
    let mut options = conformance::Options {
        filter: None,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        oracle_only: false,
        json_out: None,
        fixtures_dir: None,
        read_cache: true,
        reproducers_only: false,
        golden: true,
    };
    each_flag(args, |flag, value| {
        match flag {
            "--filter" => options.filter = Some(value("--filter")?),
            "--jobs" | "-j" => options.jobs = number("--jobs", &value("--jobs")?)?,
            "--oracle-only" => options.oracle_only = true,
            "--json" => options.json_out = Some(PathBuf::from(value("--json")?)),
            "--fixtures" => options.fixtures_dir = Some(PathBuf::from(value("--fixtures")?)),
            "--no-cache" => options.read_cache = false,
            "--reproducers-only" => options.reproducers_only = true,
            "--no-golden" => options.golden = false,
            other => return Err(format!("unknown option {other:?}")),
        }
        Ok(())
    })?;
    Ok(options)
}

const TF_USAGE: &str = "\
usage: cargo xtask tf-conformance [--filter SUBSTR] [--jobs N] [--oracle-only] [--no-cache]

Runs every fixture under tests/fixtures/tf/ under real TensorFlow 2.21.0 (tensorflow-cpu,
imported once per job; each fixture forked from it: tests/conformance/tf_oracle.py) and under
tracelens, and compares them as `cargo xtask conformance` compares the JAX fixtures. A run
without --filter also checks every row of tracer-core/src/tf/surface.rs against TensorFlow.

environment:
  TRACELENS_TF_PYTHON   a Python interpreter with tensorflow-cpu==2.21.0 (default:
                        target/tf-venv, created on first use with python3 -m venv and pip)
  TRACELENS_BIN         a tracelens binary to use instead of building one
";

fn parse_tf_conformance(args: &[String]) -> Result<tf_conformance::Options, String> {
    let mut options = tf_conformance::Options {
        filter: None,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        oracle_only: false,
        read_cache: true,
    };
    each_flag(args, |flag, value| {
        match flag {
            "--filter" => options.filter = Some(value("--filter")?),
            "--jobs" | "-j" => options.jobs = number("--jobs", &value("--jobs")?)?,
            "--oracle-only" => options.oracle_only = true,
            "--no-cache" => options.read_cache = false,
            other => return Err(format!("unknown option {other:?}")),
        }
        Ok(())
    })?;
    Ok(options)
}

fn run_realworld(options: realworld::Options) -> Result<bool, String> {
    let root = conformance::workspace_root();
    let target_dir = conformance::target_dir(&root);
    let binary = conformance::build_tracelens(&root, &target_dir)?;
    let commit = std::process::Command::new("git")
        .args(["log", "-1", "--format=%h %s"])
        .current_dir(&root)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    realworld::run(options, &binary, &commit, &target_dir.join("realworld"))
}

fn parse_realworld(args: &[String]) -> Result<realworld::Options, String> {
    let mut options = realworld::Options {
        dirs: Vec::new(),
        json_out: None,
        timeout: std::time::Duration::from_secs(60),
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    each_flag(args, |flag, value| {
        match flag {
            "--json" => options.json_out = Some(PathBuf::from(value("--json")?)),
            "--timeout" => options.timeout = std::time::Duration::from_secs(number::<u64>("--timeout", &value("--timeout")?)?.max(1)),
            "--jobs" | "-j" => options.jobs = number("--jobs", &value("--jobs")?)?,
            other if other.starts_with('-') => return Err(format!("unknown option {other:?}")),
            dir => options.dirs.push(PathBuf::from(dir)),
        }
        Ok(())
    })?;
    if options.dirs.is_empty() {
        return Err("realworld needs at least one DIR".to_string());
    }
    Ok(options)
}

/// The value of a flag that takes a number.
fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{flag} takes a whole number, got {text:?}"))
}

/// Walks the arguments, calling `handle(flag, value)` for each; `value(name)` takes the
/// flag's value, written `--flag=value` or as the next argument.
fn each_flag(
    args: &[String],
    mut handle: impl FnMut(&str, &mut dyn FnMut(&str) -> Result<String, String>) -> Result<(), String>,
) -> Result<(), String> {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let (flag, inline_value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| inline_value.clone().or_else(|| rest.next().cloned()).ok_or_else(|| format!("{name} needs a value"));
        handle(flag, &mut value)?;
    }
    Ok(())
}

fn parse_fuzz(args: &[String]) -> Result<fuzz::Options, String> {
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut options = fuzz::Options { minutes: 1.0, batches: None, seed: 1, batch: 40, jobs, first_batch: 0, write: true };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--minutes" => options.minutes = value("--minutes")?.parse().map_err(|_| "--minutes takes a number")?,
            "--batches" => options.batches = Some(value("--batches")?.parse().map_err(|_| "--batches takes an integer")?),
            "--seed" => options.seed = value("--seed")?.parse().map_err(|_| "--seed takes an integer")?,
            "--batch" => options.batch = value("--batch")?.parse().map_err(|_| "--batch takes an integer")?,
            "--jobs" => options.jobs = value("--jobs")?.parse().map_err(|_| "--jobs takes an integer")?,
            "--first-batch" => options.first_batch = value("--first-batch")?.parse().map_err(|_| "--first-batch takes an integer")?,
            "--no-write" => options.write = false,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}
