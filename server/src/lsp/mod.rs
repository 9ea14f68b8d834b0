//! `tracelens lsp`: the language server. Text synchronisation goes through one document
//! store, applied in version order; tracing runs on its own threads, at once (paced only when
//! a file's analyses are slow, `pacing`) and cancelled when a newer edit arrives; results are
//! published only for the version they were made from.

mod commands;
mod convert;
mod documents;
mod engine;
mod features;
mod framing;
mod handlers;
mod hover;
mod pacing;
mod publish;
mod reproducer_links;
mod scan;
mod schedule;
mod settings;
mod status;
mod stdio;
mod worker;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use tower_lsp_server::jsonrpc::{Error as RpcError, ErrorCode, Result as RpcResult};
use tower_lsp_server::ls_types::{self as lsp, Uri};
use tower_lsp_server::{Client, LanguageServer, LspService};
use tracer_core::analysis::{FileAnalysis, LocatedDiagnostic};
use tracer_core::diagnostics::{Code, Severity};
use tracer_core::interp::SourceLoader;

use crate::config::Config;
use commands::*;
use convert::{LineText, PositionEncoding};
use documents::{Documents, Edit};
use engine::*;
use features::Analysed;
use publish::*;
pub use settings::Settings;
use status::status_of;

struct State {
    docs: Documents,
    /// `[tool.tracelens]` from pyproject.toml, before client settings.
    base: Config,
    /// The client pulls diagnostics (`textDocument/diagnostic`): open documents are not pushed.
    pull: bool,
    /// The client answers `workspace/configuration`.
    configuration: bool,
    /// `shutdown` arrived: start no more work.
    shutting_down: bool,
    /// The client opens documents on `window/showDocument`.
    show_document: bool,
    encoding: PositionEncoding,
    roots: Vec<PathBuf>,
    settings: Settings,
    /// Latest analysis per file (open documents and, after the scan, the workspace).
    results: HashMap<PathBuf, Arc<Analysed>>,
    /// Per file: the generation of the newest scheduled analysis and its cancel flag.
    scheduled: HashMap<PathBuf, (u64, Arc<AtomicBool>)>,
    /// Per file: the version whose diagnostics were published ahead of the rest of its
    /// analysis, until that analysis is stored.
    early: HashMap<PathBuf, i32>,
    /// Per file: the generation at which its text last changed (opened, edited, saved,
    /// closed). An analysis that started before a file it read changed is traced again once
    /// stored: `dependents` only sees analyses already stored, so an edit that lands while
    /// an importer's analysis is still running would otherwise leave that importer stale.
    edited: HashMap<PathBuf, u64>,
    /// Per file: how long its recent analyses took, and whether one is under way.
    pacing: HashMap<PathBuf, pacing::Pacing>,
    /// The workspace scan is under way.
    scanning: bool,
    /// The client shows `$/progress` (`window.workDoneProgress`).
    work_done_progress: bool,
}

#[derive(Clone)]
pub struct Backend {
    client: Client,
    state: Arc<Mutex<State>>,
    generation: Arc<AtomicU64>,
    /// Woken whenever an analysis of an open document is stored (pulls wait on it).
    traced: Arc<tokio::sync::Notify>,
}

/// Runs the server on stdin/stdout until `exit`.
pub fn run() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the language server runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let state = Arc::new(Mutex::new(State {
        docs: Documents::default(),
        base: Config::default(),
        pull: false,
        configuration: false,
        shutting_down: false,
        show_document: false,
        encoding: PositionEncoding::Utf16,
        roots: Vec::new(),
        settings: Settings::default(),
        results: HashMap::new(),
        scheduled: HashMap::new(),
        early: HashMap::new(),
        edited: HashMap::new(),
        pacing: HashMap::new(),
        scanning: false,
        work_done_progress: false,
    }));
    let shared = state.clone();
    runtime.block_on(async {
        let (service, socket) = LspService::build(move |client| Backend {
            client,
            state: shared,
            generation: Arc::new(AtomicU64::new(0)),
            traced: Arc::new(tokio::sync::Notify::new()),
        })
        .custom_method("tracelens/status", Backend::status)
        .finish();
        // On a worker, not on this thread: the tasks it wakes (and that wake it) run beside it.
        let _ = tokio::spawn(framing::serve_filtered(service, socket)).await;
    });
    // The stdin reader may still be blocked in a read: do not wait for it.
    runtime.shutdown_background();
    // As the protocol asks: 0 after `shutdown`, 1 when the client went away without it.
    if state.lock().unwrap_or_else(|p| p.into_inner()).shutting_down {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    }
}

use crate::check::ANALYSIS_STACK;

impl Backend {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock must not take the server down with it.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The text of a document: the open one (edits applied), else the disk's.
    fn document_text(&self, path: &Path) -> Option<(String, PositionEncoding)> {
        let mut st = self.lock();
        let enc = st.encoding;
        let path = path.to_path_buf();
        st.docs.flush(&path, enc);
        match st.docs.get(&path) {
            Some(d) => Some((d.text(), enc)),
            None => {
                drop(st);
                crate::files::read_source(&path).map(|t| (t, enc))
            }
        }
    }

    fn analysed(&self, uri: &Uri) -> Option<(PathBuf, Arc<Analysed>, PositionEncoding)> {
        let path = convert::path_of(uri)?;
        let st = self.lock();
        let a = st.results.get(&path)?.clone();
        // Results of an older version would point at the wrong text.
        let version = st.docs.get(&path).map(|d| d.version).unwrap_or(-1);
        (a.version == version).then_some((path, a, st.encoding))
    }

    /// `analysed`, for a request that comes right after the diagnostics of the current
    /// version: they are published before the rest of its analysis (what hovers, inlay
    /// hints, code lenses and code actions read) is stored, so wait for that, bounded. Only
    /// for an open document: a closed one is analysed again from the disk for its
    /// diagnostics, and a request on it gets nothing whether or not that analysis is done.
    async fn analysed_current(&self, uri: &Uri) -> Option<(PathBuf, Arc<Analysed>, PositionEncoding)> {
        let path = convert::path_of(uri);
        if path.as_ref().is_some_and(|path| self.lock().docs.get(path).is_none()) {
            return None;
        }
        self.wait_until(|| {
            path.as_ref().is_none_or(|path| {
                let st = self.lock();
                let version = st.docs.get(path).map(|d| d.version).unwrap_or(-1);
                st.early.get(path) != Some(&version)
            })
        })
        .await;
        self.analysed(uri)
    }

    /// Waits until `ready` holds, checking it again each time an analysis is stored, for at
    /// most five seconds: the analysis's budget is CPU time, which a loaded machine stretches
    /// in wall time, and a client that no longer wants the answer cancels the request (which
    /// drops the wait).
    async fn wait_until(&self, ready: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            // Registered before looking, so that an analysis stored in between still wakes us.
            let stored = self.traced.notified();
            if ready() || tokio::time::timeout_at(deadline, stored).await.is_err() {
                return;
            }
        }
    }
}

fn internal(what: &str) -> RpcError {
    let mut e = RpcError::internal_error();
    e.message = format!("tracelens: internal error in {what}").into();
    e
}

/// Runs a feature; a panic inside it becomes an LSP error instead of a dead server.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> RpcResult<T> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|_| internal(what))
}
