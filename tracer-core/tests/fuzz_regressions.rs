//! Every crash the fuzzer (`cargo xtask fuzz`) or a user ever found, in `tests/fuzz/crashes/`:
//! each runs through `check`, `trace`, `repro` and `run` without a panic and in bounded time.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tracer_core::interp::SourceLoader;
use tracer_core::repro::minimise::MinimiseConfig;
use tracer_core::{analyze_file, run_file, AnalysisConfig};

/// As in the `tracelens` binary: the memory budget sees what each thread holds.
#[global_allocator]
static ALLOCATOR: tracer_core::interp::memory::CountingAllocator<std::alloc::System> =
    tracer_core::interp::memory::CountingAllocator(std::alloc::System);

/// Far above what any of them takes alone (under 1 s), for a machine busy with other builds.
const TIME_BOUND: Duration = Duration::from_secs(20);

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

fn crashes() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz/crashes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fuzz/crashes")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    files
}

/// Runs `command` on a thread with the CLI's stack; `Err` with the panic's message.
fn on_analysis_thread(command: impl FnOnce() + Send + 'static) -> Result<Duration, String> {
    let handle = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let start = Instant::now();
            command();
            start.elapsed()
        })
        .expect("spawn analysis thread");
    handle
        .join()
        .map_err(|e| e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default())
}

#[test]
fn every_recorded_crash_runs_through_all_four_commands() {
    tracer_core::interp::memory::set_memory_probe(tracer_core::interp::memory::counted_thread_bytes);
    let files = crashes();
    assert!(files.len() >= 21, "the crashes of issue 20 are recorded");
    let mut failures = Vec::new();
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read crash")).into_owned();
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = PathBuf::from(format!("/fuzz/{name}"));
        let commands: [(&str, Box<dyn FnOnce() + Send>); 4] = {
            let (t1, t2, t3, t4) = (text.clone(), text.clone(), text.clone(), text.clone());
            let (p1, p2, p3, p4) = (path.clone(), path.clone(), path.clone(), path.clone());
            [
                ("check", Box::new(move || drop(analyze_file(&p1, &t1, &NoFiles, &AnalysisConfig::default())))),
                (
                    "trace",
                    Box::new(move || {
                        let functions = analyze_file(&p2, &t2, &NoFiles, &AnalysisConfig::default()).functions;
                        let mut config = AnalysisConfig::default();
                        config.reproducers.functions = functions.iter().map(|f| f.name.clone()).collect();
                        drop(analyze_file(&p2, &t2, &NoFiles, &config));
                    }),
                ),
                (
                    "repro",
                    Box::new(move || {
                        for r in analyze_file(&p3, &t3, &NoFiles, &AnalysisConfig::default()).reproducers.iter().take(2) {
                            drop(r.minimised(&MinimiseConfig::default()));
                        }
                    }),
                ),
                (
                    "run",
                    Box::new(move || {
                        let mut config = AnalysisConfig::default();
                        config.budgets.max_steps = u64::MAX;
                        config.budgets.max_time = Duration::from_secs(3);
                        drop(run_file(&p4, &t4, &NoFiles, &config));
                    }),
                ),
            ]
        };
        for (command, run) in commands {
            match on_analysis_thread(run) {
                Ok(took) if took > TIME_BOUND => failures.push(format!("{name}: {command} took {took:?}")),
                Ok(_) => {}
                Err(why) => failures.push(format!("{name}: {command} panicked: {why}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn run_raises_memory_error_where_cpython_would() {
    tracer_core::interp::memory::set_memory_probe(tracer_core::interp::memory::counted_thread_bytes);
    for source in ["x = 'a' * 10**12\n", "x = [0] * 10**12\n", "x = ''.center(10**12)\n", "x = '{:>1000000000}'.format(1)\n"] {
        let source = source.to_string();
        let outcome = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || run_file(Path::new("/fuzz/memory.py"), &source, &NoFiles, &AnalysisConfig::default()).outcome)
            .expect("spawn")
            .join()
            .expect("no panic");
        match outcome {
            tracer_core::RunOutcome::Raised { exception, traceback } => {
                assert_eq!(exception, "MemoryError");
                assert_eq!(traceback.last().map(|f| f.line), Some(1));
            }
            other => panic!("expected MemoryError, got {other:?}"),
        }
    }
}

#[test]
fn check_leaves_an_over_budget_value_unknown_and_says_so() {
    let source = "import jax.numpy as jnp\nx = 'a' * 10**12\ny = jnp.ones(3) @ jnp.ones(4)\n";
    let a = analyze_file(Path::new("/fuzz/memory.py"), source, &NoFiles, &AnalysisConfig::default());
    let found: Vec<(String, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code.as_str().to_string(), l.line)).collect();
    // The analysis goes on past the string it did not build: the shape error two lines on is found.
    assert_eq!(found, vec![("TL900".to_string(), 2), ("TL104".to_string(), 3)], "{:?}", a.diagnostics);
    let message = &a.diagnostics[0].0.message;
    assert!(message.contains("not computed") && message.contains("memory budget"), "{message}");
}
