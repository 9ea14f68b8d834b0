//! Fixed workloads for instruction counts (`cargo bench -p tracer-core --bench instructions
//! --no-run`, then the built binary under `valgrind --tool=callgrind`): the engine's figures
//! for a refactor's before and after, which wall time on a shared machine cannot give.
//!
//! `instructions fixtures` analyses every conformance fixture (`tests/fixtures/{clean,errors,
//! warnings}`) and every example once, as `check` does; `instructions values` runs every
//! `tests/fixtures/run/` program in values mode (the evaluator's kernels and derivative
//! rules); `instructions edits N` opens the LSP bench's 2,000-line module as the editor does
//! (`OpenDocument`, hover values recorded) and analyses it again after each of N one-character
//! edits (run it with N and with 0 and subtract: the instructions of N edits); `instructions
//! trace FILE` analyses one file as the engine bench's "trace alone" row does (parsed first, no
//! jaxpr text, hover values recorded): read `analyze_remembering`'s inclusive count, which
//! leaves the parse out. The time budget
//! is an hour, so only the step budget can stop an analysis and the
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
        "edits" => return edits(std::env::args().nth(2).and_then(|n| n.parse().ok()).unwrap_or(20)),
        "trace" => return trace(std::path::Path::new(&std::env::args().nth(2).unwrap_or_default())),
        "fixtures" => (python_files(&["tests/fixtures/clean", "tests/fixtures/errors", "tests/fixtures/warnings", "examples"]), false),
        "values" => (python_files(&["tests/fixtures/run"]), true),
        _ => {
            eprintln!("usage: instructions fixtures|values|edits N|trace FILE");
            std::process::exit(2);
        }
    };
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    // What hover and inlay hints read, apart: a change to how values are kept shows here alone.
    let mut shown = std::collections::hash_map::DefaultHasher::new();
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
                t.values.iter().for_each(|v| hash_value(&v, &mut shown));
            }
        }
        analysis.values.iter().for_each(|v| hash_value(v, &mut shown));
        analysis.stdout.hash(&mut digest);
    }
    println!(
        "{workload}: {} files, {diagnostics} diagnostics, {traces} traces, digest {:016x}, values digest {:016x}",
        files.len(),
        digest.finish(),
        shown.finish()
    );
}

fn hash_value(v: &tracer_core::analysis::TracedValue, into: &mut impl Hasher) {
    let at = &v.location;
    // The file's name: the digest is the same wherever the repository is.
    (at.path.file_name(), at.line, at.column, at.end_line, at.end_column, at.span.start, at.span.end).hash(into);
    (&*v.name, v.aval.text(), v.aval.hover_text(), v.assigned, v.kind.label(), v.pytree, &v.preview, &v.summary).hash(into);
}

/// The LSP bench's module (`server/benches/lsp.rs`'s `generated_module(2000)`): jitted layers,
/// each called from a loop, with a comment in each traced body.
fn bench_module() -> String {
    let mut src = String::from("import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n");
    let mut i = 0;
    while src.lines().count() < 2000 {
        src.push_str(&format!(
            "@jax.jit\ndef layer_{i}(params, x):\n    h = jnp.tanh(x @ params['w'] + params['b'])\n    # normalise each row to unit length\n    h = h / (jnp.linalg.norm(h, axis=-1, keepdims=True) + 1e-6)\n    logits = h @ params['out']\n    loss = jax.nn.logsumexp(logits, axis=-1).mean()\n    return loss, h\n\n\ndef init_{i}(d):\n    return {{'w': jnp.ones((d, 32)), 'b': jnp.zeros(32), 'out': jnp.ones((32, 10))}}\n\n\nparams_{i} = init_{i}(16)\nfor step in range(2):\n    loss_{i}, h_{i} = layer_{i}(params_{i}, jnp.ones((8, 16)))\n\n\n"
        ));
        i += 1;
    }
    src
}

/// The editor's analyses of the bench module: opened, then `n` edits that alternate between
/// `jnp.tanh(` -> `jnp.tan(` in a layer in the middle and back, each analysed as the language
/// server does (incremental parse, trace memo, hover values, no jaxpr text).
fn edits(n: usize) {
    let path = std::path::PathBuf::from("generated_2000_lines.py");
    let module = bench_module();
    let at = module.len() / 2 + module[module.len() / 2..].find("jnp.tanh(").unwrap_or(0) + "jnp.tan".len();
    let mut edited = module.clone();
    edited.remove(at);
    let mut config = AnalysisConfig { skip_jaxpr_text: true, check_ir: false, ..Default::default() };
    config.budgets.max_time = Duration::from_secs(3600);
    let mut document = tracer_core::analysis::OpenDocument::default();
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    let mut shown = std::collections::hash_map::DefaultHasher::new();
    let (mut diagnostics, mut values) = (0usize, 0usize);
    for i in 0..=n {
        let text = if i % 2 == 1 { &edited } else { &module };
        document.analyse_then(&path, text, &Disk, &config, |analysis: tracer_core::analysis::FileAnalysis| {
            diagnostics += analysis.diagnostics.len();
            for (d, at, _) in &analysis.diagnostics {
                (d.code.as_str(), &d.message, at.line, at.column).hash(&mut digest);
            }
            values += analysis.values.len() + analysis.functions.iter().flat_map(|f| &f.traces).map(|t| t.values.len()).sum::<usize>();
            for t in analysis.functions.iter().flat_map(|f| &f.traces) {
                t.values.iter().for_each(|v| hash_value(&v, &mut shown));
            }
            analysis.values.iter().for_each(|v| hash_value(v, &mut shown));
        });
    }
    println!(
        "edits: {n} edits, {diagnostics} diagnostics, {values} values, digest {:016x}, values digest {:016x}",
        digest.finish(),
        shown.finish()
    );
}

/// One analysis of `path`, parsed beforehand, as the engine bench times "trace alone".
fn trace(path: &std::path::Path) {
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("instructions trace: cannot read {}", path.display());
        std::process::exit(2);
    };
    let mut config = AnalysisConfig { skip_jaxpr_text: true, check_ir: false, ..Default::default() };
    config.budgets.max_time = Duration::from_secs(3600);
    let parsed = tracer_core::syntax::parse(&text);
    let (mut diagnostics, mut values) = (0usize, 0usize);
    let leftovers = tracer_core::analysis::analyze_parsed_then(
        path,
        &text,
        Some(parsed),
        &Disk,
        &config,
        |analysis: tracer_core::analysis::FileAnalysis| {
            diagnostics = analysis.diagnostics.len();
            values = analysis.values.len() + analysis.functions.iter().flat_map(|f| &f.traces).map(|t| t.values.len()).sum::<usize>();
        },
    );
    drop(leftovers);
    println!("trace: {}, {diagnostics} diagnostics, {values} values", path.display());
}
