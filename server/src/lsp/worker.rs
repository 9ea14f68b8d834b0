//! The analysis thread for documents being edited. One long-lived thread (with the engine's
//! stack) takes analyses in arrival order and keeps, per open document, its incremental
//! parser, so an edit re-parses only around the change and reuses the lowering of every
//! top-level statement it did not touch (`tracer_core::syntax::IncrementalParser`), and its
//! remembered jit traces, so the next analysis replays the traces of functions the edit did
//! not touch (`tracer_core::jax::memo`). Both hold `Rc`s and never leave this thread. Freeing an analysis' memory waits until the thread is
//! idle, so that the next edit's diagnostics do not wait for it.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use tracer_core::analysis::FileAnalysis;
use tracer_core::interp::{Leftovers, SourceLoader};
use tracer_core::jax::memo::TraceMemo;
use tracer_core::syntax::IncrementalParser;
use tracer_core::AnalysisConfig;

/// What the thread keeps of an open document between its analyses.
#[derive(Default)]
struct Document {
    parser: IncrementalParser,
    memo: TraceMemo,
    /// The text last analysed: the memo follows the edit from it to the next.
    text: String,
}

type Parsers = HashMap<PathBuf, Document>;
type Job = Box<dyn FnOnce(&mut Parsers) -> Option<Leftovers> + Send>;

/// How long the thread must have had nothing to do before it frees what earlier analyses
/// left: an edit that arrives sooner is analysed first.
const IDLE: Duration = Duration::from_millis(1);
/// At most this many analyses' memory waits to be freed; beyond it, the oldest is freed at once.
const MAX_LEFTOVERS: usize = 4;

fn worker() -> Option<&'static mpsc::Sender<Job>> {
    static WORKER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    WORKER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("tracelens-edits".into())
                .stack_size(super::ANALYSIS_STACK)
                .spawn(move || {
                    let mut parsers = Parsers::new();
                    let mut leftovers: Vec<Leftovers> = Vec::new();
                    loop {
                        let job = if leftovers.is_empty() {
                            rx.recv().ok()
                        } else {
                            match rx.recv_timeout(IDLE) {
                                Ok(job) => Some(job),
                                Err(mpsc::RecvTimeoutError::Timeout) => {
                                    leftovers.clear();
                                    continue;
                                }
                                Err(mpsc::RecvTimeoutError::Disconnected) => None,
                            }
                        };
                        let Some(job) = job else { break };
                        leftovers.extend(job(&mut parsers));
                        if leftovers.len() > MAX_LEFTOVERS {
                            leftovers.remove(0);
                        }
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Analyses `text` as the current version of `path` on the edit thread. With `keep`, the
/// parser is kept for the next version (an open document); otherwise it is dropped. The
/// result is handed back before the analysis' memory is freed. `None` if the engine panicked
/// (the document's parser is then dropped too: it starts afresh).
pub async fn analyse(
    path: PathBuf,
    text: String,
    loader: impl SourceLoader + Send + 'static,
    config: AnalysisConfig,
    keep: bool,
) -> Option<FileAnalysis> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move |parsers: &mut Parsers| {
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let doc = parsers.entry(path.clone()).or_default();
            let module = doc.parser.parse(&text);
            doc.memo.edit(&doc.text, &text);
            doc.text.clone_from(&text);
            let memo = Some(&mut doc.memo).filter(|_| !config.values);
            tracer_core::analysis::analyze_remembering(&path, &text, Some(module), &loader, &config, memo, |analysis| {
                let _ = tx.send(analysis);
            })
        }));
        if outcome.is_err() || !keep {
            parsers.remove(&path);
        }
        outcome.ok()
    });
    worker()?.send(job).ok()?;
    rx.await.ok()
}
