//! Replaying remembered jit traces (`jax::memo`, the editor's analyses) gives exactly the
//! analysis a fresh one gives: every fixture and example, put through random edits (many of
//! them breaking the syntax or changing what a traced function does), is analysed after each
//! edit both ways, and the diagnostics, the traced functions (with every hover value, trace
//! and jaxpr) and the printed output must be the same.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::analysis::{analyze_parsed_then, FileAnalysis, OpenDocument};
use tracer_core::interp::SourceLoader;
use tracer_core::syntax::parse;
use tracer_core::AnalysisConfig;

mod common;
use common::{boundary, fixture_and_example_files, Rng};

struct Disk;
impl SourceLoader for Disk {
    fn read(&self, p: &Path) -> Option<Rc<str>> {
        std::fs::read_to_string(p).ok().map(Into::into)
    }
}

/// One edit as typing makes them: a comment or blank line added, a character typed or
/// deleted, a number changed, a line duplicated.
fn edit(text: &mut String, rng: &mut Rng) {
    const INSERTS: [&str; 8] = ["# note\n", "\n", "x", "1", "  # typed", " ", "y = 1\n", "."];
    let at = boundary(text, rng.below(text.len() + 1));
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    match rng.below(4) {
        0 => text.insert_str(line_start, INSERTS[rng.below(2)]),
        1 => text.insert_str(at, INSERTS[2 + rng.below(INSERTS.len() - 2)]),
        2 => {
            let end = boundary(text, (at + 1).min(text.len()));
            text.replace_range(at..end.max(at), "");
        }
        _ => {
            let end = text[at..].find('\n').map_or(text.len(), |n| at + n + 1);
            let line = text[line_start..end].to_string();
            text.insert_str(line_start, &line);
        }
    }
}

/// What a user sees of an analysis, as text.
fn seen(a: &FileAnalysis) -> String {
    format!("{:#?}\n{:#?}\n{}\n{:?}", a.diagnostics, a.functions, a.stdout, a.stops)
}

/// A fresh analysis of `text`, or with `document`, the editor's analysis of its next version.
fn analyse(path: &Path, text: &str, document: Option<&mut OpenDocument>) -> FileAnalysis {
    // The step budget bounds the work and is the same on every machine; the wall-time budget
    // (700 ms) is not, and an analysis it cut short on a loaded machine would differ from its
    // twin that it did not.
    let mut config = AnalysisConfig::default();
    config.budgets.max_time = std::time::Duration::from_secs(120);
    let mut out = None;
    let _ = match document {
        Some(document) => document.analyse_then(path, text, &Disk, &config, |a| out = Some(a)),
        None => analyze_parsed_then(path, text, Some(parse(text)), &Disk, &config, |a| out = Some(a)),
    };
    out.expect("an analysis")
}

/// Panics with the first line where the remembered analysis and the fresh one differ.
fn assert_same(path: &Path, when: &str, remembered: &FileAnalysis, fresh: &FileAnalysis, current: &str, previous: &str) {
    let (r, f) = (seen(remembered), seen(fresh));
    if r != f {
        let diff = r.lines().zip(f.lines()).enumerate().find(|(_, (a, b))| a != b);
        panic!(
            "{}: {when}, replaying remembered traces differs from a fresh analysis\nfirst difference (line {:?}):\n  replayed: {:?}\n  fresh:    {:?}\ntext:\n{current}\nthe text before it:\n{previous}",
            path.display(),
            diff.map(|d| d.0),
            diff.map(|d| d.1 .0),
            diff.map(|d| d.1 .1)
        );
    }
}

/// Runs `edits` random edits on `text`, analysing each version with the memo, and afresh
/// wherever the memo did something: the first analysis, which remembers traces (remembering
/// must change nothing), and every edit after which a trace was replayed. An edit after which
/// nothing was replayed ran the fresh analysis' own code, and a file whose first analysis
/// remembered nothing (no jit trace to remember: a TensorFlow program, one whose traces raise
/// or print) is not edited: neither proves anything, and they were most of this test's time.
fn check_file(path: &Path, text: &str, rng: &mut Rng, edits: usize) -> (usize, usize) {
    let mut document = OpenDocument::default();
    let mut current = text.to_string();
    let first = analyse(path, &current, Some(&mut document));
    if document.memo().is_empty() {
        return (0, 0);
    }
    assert_same(path, "on the first analysis", &first, &analyse(path, &current, None), &current, "");
    let mut traces = 0;
    // The last replaying analysis, held through the next one as the editor holds it for hover:
    // the values it shares with the memo must not move when the next edit moves the memo's.
    let mut held: Option<(FileAnalysis, String)> = None;
    for step in 0..edits {
        let previous = current.clone();
        // Every other step undoes the previous edit, as an editor's undo does.
        if step % 2 == 0 {
            edit(&mut current, rng);
        } else {
            current = text.to_string();
        }
        let replayed_before = document.memo().replayed();
        let remembered = analyse(path, &current, Some(&mut document));
        if document.memo().replayed() == replayed_before {
            continue;
        }
        let fresh = analyse(path, &current, None);
        assert_same(path, &format!("after edit {step}"), &remembered, &fresh, &current, &previous);
        traces += fresh.functions.iter().map(|f| f.traces.len()).sum::<usize>();
        if let Some((analysis, as_it_was)) = held.take() {
            assert!(seen(&analysis) == as_it_was, "{}: after edit {step}, an analysis held from before it changed", path.display());
        }
        let as_it_is = seen(&remembered);
        held = Some((remembered, as_it_is));
    }
    (document.memo().replayed(), traces)
}

/// On threads with the stack the `tracelens` binary gives its analyses (256 MiB): a random
/// edit can make a function recurse until the interpreter's recursion limit, deeper than a
/// test thread's default stack holds. The files are shared out over the machine's cores; each
/// file has its own random stream, so its edits do not depend on how they were shared.
#[test]
fn replayed_traces_match_fresh_analyses_on_every_fixture() {
    let files = fixture_and_example_files();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let (mut replayed, mut traces) = (0, 0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let files = &files;
                std::thread::Builder::new()
                    .stack_size(256 << 20)
                    .spawn_scoped(scope, move || {
                        let (mut replayed, mut traces) = (0, 0);
                        for (index, path) in files.iter().enumerate().skip(worker).step_by(workers) {
                            let Ok(text) = std::fs::read_to_string(path) else { continue };
                            let mut rng = Rng((0x9e37_79b9_7f4a_7c15 ^ (index as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d)) | 1);
                            let (r, t) = check_file(path, &text, &mut rng, 6);
                            replayed += r;
                            traces += t;
                        }
                        (replayed, traces)
                    })
                    .expect("spawn an analysis thread")
            })
            .collect();
        for handle in handles {
            match handle.join() {
                Ok((r, t)) => {
                    replayed += r;
                    traces += t;
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    println!("{} files: {replayed} of {traces} traces replayed", files.len());
    // The comparison proves something only where traces were replayed. Most fixtures' traces
    // are not remembered (they raise, warn, print, close over arrays or nest jits); `traces`
    // counts those of the analyses compared after an edit.
    assert!(replayed >= 200, "only {replayed} of {traces} traces were replayed");
}

/// The language-server benchmark's module: edits in one layer replay every other layer.
#[test]
fn an_edit_in_one_function_retraces_only_that_function() {
    let mut src = String::from("import jax\nimport jax.numpy as jnp\n\nEPS = 1e-6\n\n");
    for i in 0..20 {
        src.push_str(&format!(
            "@jax.jit\ndef layer_{i}(params, x):\n    # normalise each row\n    h = jnp.tanh(x @ params['w'] + params['b'])\n    h = h / (jnp.linalg.norm(h, axis=-1, keepdims=True) + EPS)\n    return jax.nn.logsumexp(h @ params['out'], axis=-1).mean(), h\n\n\n\
             params_{i} = {{'w': jnp.ones((16, 32)), 'b': jnp.zeros(32), 'out': jnp.ones((32, 10))}}\n\
             for step in range(2):\n    loss_{i}, h_{i} = layer_{i}(params_{i}, jnp.ones((8, 16)))\n\n\n"
        ));
    }
    let path = PathBuf::from("layers.py");
    let mut document = OpenDocument::default();
    analyse(&path, &src, Some(&mut document));
    assert_eq!(document.memo().len(), 20);
    let at = src.find("def layer_7").unwrap() + src[src.find("def layer_7").unwrap()..].find("tanh").unwrap();
    let mut edited = src.clone();
    edited.replace_range(at..at + 4, "tan");
    for text in [&edited, &src] {
        let replayed = document.memo().replayed();
        let remembered = analyse(&path, text, Some(&mut document));
        assert_eq!(seen(&remembered), seen(&analyse(&path, text, None)));
        assert_eq!(document.memo().replayed() - replayed, 19, "every layer but the edited one is replayed");
        // The last version's syntax tree came back to the parser once its analysis was freed.
        assert!(document.reparsed_one_statement());
    }
    // While something still holds the last analysis' tree, the next version is parsed whole,
    // and the analysis is the same.
    let config = AnalysisConfig::default();
    let held = document.analyse_then(&path, &edited, &Disk, &config, |_| ());
    let remembered = analyse(&path, &src, Some(&mut document));
    assert!(!document.reparsed_one_statement());
    assert_eq!(seen(&remembered), seen(&analyse(&path, &src, None)));
    drop(held);
}

/// A comment or blank line after a function's last statement, and the start of the next line
/// of code, are part of what an edit can change in that function: uncommenting `return` there
/// (or indenting the next statement) changes the function, so its remembered trace must not
/// be replayed. Found by the test above, which once replayed a `prepare` that returned
/// nothing for the `prepare` that returns its batch.
#[test]
fn lines_after_a_function_that_can_join_its_body_forget_its_trace() {
    let original = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef prepare(batch):\n    batch = batch / 255.0\n    return batch - batch.mean()\n\n\nprint(prepare(jnp.ones((8, 4))))\n";
    let commented = original.replace("    return batch", "    # typed  return batch");
    let indented = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef prepare(batch):\n    batch = batch / 255.0\n    y = batch * 2\nprint(prepare(jnp.ones((8, 4))))\n";
    let joined = indented.replace("\nprint(", "\n    return y\nprint(");
    let path = PathBuf::from("memo_edit.py");
    for versions in [[original, commented.as_str(), original], [indented, joined.as_str(), indented]] {
        let mut document = OpenDocument::default();
        for (step, text) in versions.iter().enumerate() {
            let remembered = seen(&analyse(&path, text, Some(&mut document)));
            let fresh = seen(&analyse(&path, text, None));
            assert!(remembered == fresh, "step {step}: the replayed analysis differs from a fresh one for\n{text}");
        }
    }
}
