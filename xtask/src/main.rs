//! Repository tasks (`cargo xtask ...`): the conformance suite against real JAX.

mod compare;
mod conformance;
mod golden;
mod model;
mod process;
mod python_env;
mod report;
mod repro;
mod run_suite;
mod runners;
mod sha256;

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

environment:
  TRACELENS_JAX_PYTHON  a Python interpreter with jax==0.10.2 (default: target/jax-venv,
                        created on first use with python3 -m venv and pip)
  TRACELENS_BIN         a tracelens binary to use instead of building one
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
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

fn parse_conformance(args: &[String]) -> Result<conformance::Options, String> {
    let mut options = conformance::Options {
        filter: None,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        oracle_only: false,
        json_out: None,
        fixtures_dir: None,
        read_cache: true,
        reproducers_only: false,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let (flag, inline_value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| inline_value.clone().or_else(|| rest.next().cloned()).ok_or_else(|| format!("{name} needs a value"));
        match flag {
            "--filter" => options.filter = Some(value("--filter")?),
            "--jobs" | "-j" => {
                let text = value("--jobs")?;
                options.jobs = text.parse().map_err(|_| format!("--jobs takes a number, got {text:?}"))?;
            }
            "--oracle-only" => options.oracle_only = true,
            "--json" => options.json_out = Some(PathBuf::from(value("--json")?)),
            "--fixtures" => options.fixtures_dir = Some(PathBuf::from(value("--fixtures")?)),
            "--no-cache" => options.read_cache = false,
            "--reproducers-only" => options.reproducers_only = true,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(options)
}
