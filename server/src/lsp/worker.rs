//! The analysis thread for documents being edited. One long-lived thread (with the engine's
//! stack) takes analyses in arrival order and keeps an `OpenDocument` per open document: an
//! edit re-parses only around the change, and replays the jit traces of the functions it did
//! not touch. They hold `Rc`s and never leave this thread. An analysis' memory is freed after
//! its result has been delivered (`Leftovers`), before the next analysis starts.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::OnceLock;

use tokio::sync::oneshot;
use tracer_core::analysis::{Deliver, FileAnalysis, LocatedDiagnostic, OpenDocument};
use tracer_core::interp::SourceLoader;
use tracer_core::AnalysisConfig;

type Documents = HashMap<PathBuf, OpenDocument>;
type Job = Box<dyn FnOnce(&mut Documents) + Send>;

fn worker() -> Option<&'static mpsc::Sender<Job>> {
    static WORKER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    WORKER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("tracelens-edits".into())
                .stack_size(super::ANALYSIS_STACK)
                .spawn(move || {
                    let mut documents = Documents::new();
                    while let Ok(job) = rx.recv() {
                        job(&mut documents);
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Analyses `text` as the current version of `path` on the edit thread. With `keep`, the
/// `OpenDocument` is kept for the next version; otherwise it is dropped. The job is queued at
/// once; the located diagnostics are sent to `early` (when given) as soon as the analysis has
/// them, and the whole analysis is what the returned future gives, before the analysis'
/// memory is freed. `Err(Panicked)` if the engine panicked (the document is then dropped
/// too: it starts afresh), `Err(NotRun)` if it was superseded before it started.
pub fn analyse(
    path: PathBuf,
    text: String,
    loader: impl SourceLoader + Send + 'static,
    config: AnalysisConfig,
    keep: bool,
    early: Option<oneshot::Sender<Vec<LocatedDiagnostic>>>,
) -> impl std::future::Future<Output = Result<FileAnalysis, Failed>> {
    let (tx, rx) = oneshot::channel();
    let (panicked_tx, panicked_rx) = oneshot::channel::<()>();
    let job: Job = Box::new(move |documents: &mut Documents| {
        // Superseded while it waited in the queue: not started (the document keeps the
        // version it last analysed).
        if config.budgets.cancel.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
            return;
        }
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let deliver = Delivery { early, whole: tx };
            documents.entry(path.clone()).or_default().analyse_then(&path, &text, &loader, &config, deliver)
        }));
        if outcome.is_err() || !keep {
            documents.remove(&path);
        }
        if outcome.is_err() {
            let _ = panicked_tx.send(());
        }
        // What the analysis left (`Leftovers`) is freed here, once its result is out and
        // before the next edit: it still holds the syntax trees the incremental parser
        // shifts, and shifting a shared tree copies each function after the edit, which
        // costs more than the freeing it would put off.
        drop(outcome);
    });
    let queued = worker().is_some_and(|w| w.send(job).is_ok());
    async move {
        if !queued {
            return Err(Failed::NotRun);
        }
        match rx.await {
            Ok(analysis) => Ok(analysis),
            Err(_) if panicked_rx.await.is_ok() => Err(Failed::Panicked),
            Err(_) => Err(Failed::NotRun),
        }
    }
}

/// Why `analyse` gave no analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failed {
    /// Superseded by a newer edit before it started, or the worker is gone.
    NotRun,
    /// The engine panicked: a bug, reported to the user once per file.
    Panicked,
}

struct Delivery {
    early: Option<oneshot::Sender<Vec<LocatedDiagnostic>>>,
    whole: oneshot::Sender<FileAnalysis>,
}

impl Deliver for Delivery {
    fn diagnostics(&mut self, diagnostics: &[LocatedDiagnostic]) {
        if let Some(early) = self.early.take() {
            let _ = early.send(diagnostics.to_vec());
        }
    }

    fn analysis(self, analysis: FileAnalysis) {
        let _ = self.whole.send(analysis);
    }
}
