//! Engine benchmark (`cargo bench -p tracer-core`): the median time to trace a generated
//! 2,000-line JAX module (first, in a fresh process), then tracelens against real JAX on the
//! conformance fixtures, as a ratio measured in the same run. Prints figures; asserts nothing
//! (no timed tests).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The allocator the `tracelens` binary uses, so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use tracer_core::{analyze_file, AnalysisConfig};

#[path = "support/fixtures.rs"]
mod support;
use support::{best_of_three_rounds, fixtures, jax_python, Disk};

fn analyse(path: &Path, text: &str) -> Duration {
    let config = AnalysisConfig {
        search_roots: path.parent().map(|p| vec![p.to_path_buf()]).unwrap_or_default(),
        check_ir: false,
        ..Default::default()
    };
    let start = Instant::now();
    let analysis = analyze_file(path, text, &Disk, &config);
    let took = start.elapsed();
    std::hint::black_box(analysis);
    took
}

/// A realistic module of `n_blocks` layers, each a jitted function called from a loop.
fn generated_module(lines: usize) -> String {
    let mut src = String::from("import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n");
    let mut i = 0;
    while src.lines().count() < lines {
        src.push_str(&format!(
            "@jax.jit\ndef layer_{i}(params, x):\n    h = jnp.tanh(x @ params['w'] + params['b'])\n    h = h / (jnp.linalg.norm(h, axis=-1, keepdims=True) + 1e-6)\n    logits = h @ params['out']\n    loss = jax.nn.logsumexp(logits, axis=-1).mean()\n    return loss, h\n\n\ndef init_{i}(d):\n    return {{'w': jnp.ones((d, 32)), 'b': jnp.zeros(32), 'out': jnp.ones((32, 10))}}\n\n\nparams_{i} = init_{i}(16)\nfor step in range(2):\n    loss_{i}, h_{i} = layer_{i}(params_{i}, jnp.ones((8, 16)))\n\n\n"
        ));
        i += 1;
    }
    src
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    // The module first, in a fresh process: figures taken after the fixtures pass would
    // depend on how many fixtures ran before them (the allocator's state they leave).
    // 1. median time to trace a generated 2,000-line module.
    let module = generated_module(2000);
    let path = PathBuf::from("generated_2000_lines.py");
    let times: Vec<Duration> = (0..21).map(|_| analyse(&path, &module)).collect();
    let parse: Vec<Duration> = (0..21)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(tracer_core::syntax::parse(&module));
            start.elapsed()
        })
        .collect();
    // The trace alone: the module parsed beforehand, timed until the result is delivered.
    let skip_text = AnalysisConfig { skip_jaxpr_text: true, check_ir: false, ..Default::default() };
    let traces: Vec<Duration> = (0..21)
        .map(|_| {
            let parsed = tracer_core::syntax::parse(&module);
            let start = Instant::now();
            let mut took = Duration::ZERO;
            let leftovers = tracer_core::analysis::analyze_parsed_then(&path, &module, Some(parsed), &Disk, &skip_text, |analysis| {
                took = start.elapsed();
                std::hint::black_box(analysis);
            });
            drop(leftovers);
            took
        })
        .collect();
    println!(
        "2,000-line module ({} lines), from nothing (parse + trace): median {:.2} ms over {} runs, of which parsing {:.2} ms",
        module.lines().count(),
        median(times.clone()).as_secs_f64() * 1e3,
        times.len(),
        median(parse).as_secs_f64() * 1e3
    );
    println!(
        "2,000-line module, trace alone (parsed beforehand, until the result is delivered): median {:.2} ms (target: <= 5 ms)",
        median(traces).as_secs_f64() * 1e3
    );

    // 2. The same module analysed again after a one-character edit, as the editor does on
    // every keystroke: the incremental parser re-parses around the edit and reuses the
    // lowering of the statements it did not touch; the interpreter runs the whole module
    // again, and replays the jit traces of the functions the edit did not touch (the editor's
    // trace memo). For reference, the same edits with every function re-traced.
    let at = module.len() / 2 + module[module.len() / 2..].find("jnp.tanh(").unwrap_or(0) + "jnp.tan".len();
    let mut edited = module.clone();
    edited.remove(at);
    let config = AnalysisConfig { skip_jaxpr_text: true, check_ir: false, ..Default::default() };
    // The editor's way: an `OpenDocument` (incremental parse and trace memo).
    let mut document = tracer_core::analysis::OpenDocument::default();
    drop(document.analyse_then(&path, &module, &Disk, &config, drop));
    let mut remembered = Vec::new();
    for i in 0..21 {
        let text = if i % 2 == 0 { &edited } else { &module };
        let start = Instant::now();
        document.analyse_then(&path, text, &Disk, &config, |analysis| {
            remembered.push(start.elapsed());
            std::hint::black_box(analysis);
        });
    }
    // For reference, the same edits with every function traced again; the parse is timed
    // here, where it is a step of its own (it is the same work in both loops).
    let mut parser = tracer_core::syntax::IncrementalParser::default();
    let first = parser.parse(&module);
    parser.give_back(first);
    let (mut parses, mut retraced) = (Vec::new(), Vec::new());
    for i in 0..21 {
        let text = if i % 2 == 0 { &edited } else { &module };
        let start = Instant::now();
        let parsed = parser.parse(text);
        parses.push(start.elapsed());
        let leftovers = tracer_core::analysis::analyze_parsed_then(&path, text, Some(parsed), &Disk, &config, |analysis| {
            retraced.push(start.elapsed());
            std::hint::black_box(analysis);
        });
        // The tree goes back to the parser once the analysis is freed, as `OpenDocument` does.
        let tree = leftovers.module_of(&path);
        drop(leftovers);
        if let Some(tree) = tree.and_then(|t| std::rc::Rc::try_unwrap(t).ok()) {
            parser.give_back(tree);
        }
    }
    let ms = |d: Vec<Duration>| median(d).as_secs_f64() * 1e3;
    let (remembered, parsing, retraced) = (ms(remembered), ms(parses), ms(retraced));
    println!(
        "2,000-line module after a one-character edit, as the editor analyses it (incremental parse, traces of untouched functions replayed): median {remembered:.2} ms, of which parsing {parsing:.2} ms (target: <= 5 ms)"
    );
    println!("  the same edits with every function re-traced: median {retraced:.2} ms");

    let files = fixtures();
    // 3. tracelens over every fixture, in process, three rounds; the best round counts.
    let (texts, best) = best_of_three_rounds(&files, analyse);
    println!(
        "tracelens: {} fixtures analysed in {:.1} ms ({:.2} ms each)",
        texts.len(),
        best.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e3 / texts.len().max(1) as f64
    );

    // 4. the same fixtures under python + real JAX, one process each, as a user runs them.
    match jax_python() {
        Some(python) => {
            let start = Instant::now();
            let mut ran = 0;
            for (p, _) in &texts {
                let status = Command::new(&python)
                    .arg(p)
                    .current_dir(p.parent().unwrap_or(Path::new(".")))
                    .env("JAX_PLATFORMS", "cpu")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
                if status.is_ok() {
                    ran += 1;
                }
            }
            let jax = start.elapsed();
            println!(
                "real JAX:  {ran} fixtures run in {:.1} s ({:.0} ms each)",
                jax.as_secs_f64(),
                jax.as_secs_f64() * 1e3 / ran.max(1) as f64
            );
            println!(
                "ratio:     tracelens is {:.0}x faster than running the fixtures under JAX (target: >= 200x)",
                jax.as_secs_f64() / best.as_secs_f64().max(1e-9)
            );
        }
        None => println!("real JAX:  skipped (set TRACELENS_JAX_PYTHON or run `cargo xtask conformance` once to create target/jax-venv)"),
    }
}
