//! Fixed workloads for instruction counts (`cargo bench -p tracer-core --bench instructions
//! --no-run`, then the built binary under `valgrind --tool=callgrind`): the engine's figures
//! for a refactor's before and after, which wall time on a shared machine cannot give.
//!
//! `instructions fixtures` analyses every conformance fixture (`tests/fixtures/{clean,errors,
//! warnings}`) and every example once, as `check` does; `instructions values` runs every
//! `tests/fixtures/run/` program in values mode (the evaluator's kernels and derivative
//! rules). The time budget is an hour, so only the step budget can stop an analysis and the
//! work is the same under callgrind as without it. Each prints a digest of what the analyses
//! found (diagnostics, traced functions, printed output), which must not change when the
//! engine is only rearranged.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use tracer_core::{analyze_file, AnalysisConfig};

/// The allocator the `tracelens` binary uses, so the counts are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/fixtures.rs"]
mod support;
use support::{python_files, Disk};

fn main() {
    let workload = std::env::args().nth(1).unwrap_or_default();
    let (files, values) = match workload.as_str() {
        "fixtures" => (python_files(&["tests/fixtures/clean", "tests/fixtures/errors", "tests/fixtures/warnings", "examples"]), false),
        "values" => (python_files(&["tests/fixtures/run"]), true),
        _ => {
            eprintln!("usage: instructions fixtures|values");
            std::process::exit(2);
        }
    };
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    let (mut diagnostics, mut traces) = (0usize, 0usize);
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        let mut config = AnalysisConfig {
            search_roots: path.parent().map(|p| vec![p.to_path_buf()]).unwrap_or_default(),
            values,
            check_ir: false,
            ..Default::default()
        };
        config.budgets.max_time = Duration::from_secs(3600);
        let analysis = analyze_file(path, &text, &Disk, &config);
        diagnostics += analysis.diagnostics.len();
        for (d, at, _) in &analysis.diagnostics {
            (d.code.as_str(), &d.message, at.line, at.column).hash(&mut digest);
        }
        for f in &analysis.functions {
            traces += f.traces.len();
            for t in &f.traces {
                (&t.args, &t.outputs, &t.jaxpr).hash(&mut digest);
            }
        }
        analysis.stdout.hash(&mut digest);
    }
    println!("{workload}: {} files, {diagnostics} diagnostics, {traces} traces, digest {:016x}", files.len(), digest.finish());
}
