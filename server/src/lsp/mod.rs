//! `tracelens lsp`: the language server. Text synchronisation goes through one document
//! store, applied in version order; tracing runs on its own threads, debounced and cancelled
//! when a newer edit arrives; results are published only for the version they were made from.

mod convert;
mod documents;
mod features;
mod framing;
mod reproducer_links;
mod worker;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value as Json;
use tower_lsp_server::jsonrpc::{Error as RpcError, ErrorCode, Result as RpcResult};
use tower_lsp_server::ls_types::{self as lsp, Uri};
use tower_lsp_server::{Client, LanguageServer, LspService};
use tracer_core::analysis::{FileAnalysis, LocatedDiagnostic};
use tracer_core::diagnostics::{Code, Severity};
use tracer_core::interp::SourceLoader;

use crate::config::Config;
use convert::{LineText, PositionEncoding};
use documents::{Documents, Edit};
use features::Analysed;

/// Settings from the client (`workspace/configuration`, section `tracelens`), on top of
/// `pyproject.toml`.
#[derive(Clone, Debug)]
pub struct Settings {
    pub project: Config,
    pub debounce: Duration,
    pub inlay_hints: bool,
    pub inlay_scalars: bool,
    pub workspace_scan: bool,
    /// Where `tracelens.repro` writes reproducers, relative to the workspace folder.
    pub reproducer_folder: PathBuf,
    /// The values pass (TL301): after an open document's diagnostics are out and the
    /// document has been left alone for `values_delay`, it is evaluated on the CPU within
    /// `values_budget`, and a NaN/Inf found is added to its diagnostics.
    pub values: bool,
    pub values_delay: Duration,
    pub values_budget: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            project: Config::default(),
            debounce: Duration::from_millis(150),
            inlay_hints: true,
            inlay_scalars: false,
            workspace_scan: true,
            reproducer_folder: PathBuf::from("repro"),
            values: true,
            values_delay: Duration::from_millis(300),
            values_budget: Duration::from_millis(2000),
        }
    }
}

impl Settings {
    /// Client settings replace the previous client settings, on top of the project's.
    fn apply_client(&mut self, base: &Config, v: &Json) {
        self.project = base.clone();
        if let Some(ms) = v.get("debounceMs").and_then(Json::as_u64) {
            self.debounce = Duration::from_millis(ms);
        }
        if let Some(b) = v.pointer("/inlayHints/enabled").and_then(Json::as_bool) {
            self.inlay_hints = b;
        }
        if let Some(b) = v.pointer("/inlayHints/scalars").and_then(Json::as_bool) {
            self.inlay_scalars = b;
        }
        if let Some(b) = v.get("workspaceScan").and_then(Json::as_bool) {
            self.workspace_scan = b;
        }
        if let Some(sev) = v.get("severity").and_then(Json::as_object) {
            for (code, level) in sev {
                let level = match level.as_str() {
                    Some("error") => Some(Severity::Error),
                    Some("warning") => Some(Severity::Warning),
                    Some("info") => Some(Severity::Info),
                    Some("ignore") => None,
                    _ => continue,
                };
                self.project.severity.retain(|(c, _)| c != code);
                self.project.severity.push((code.clone(), level));
            }
        }
        if let Some(list) = v.get("ignore").and_then(Json::as_array) {
            self.project.ignore.extend(list.iter().filter_map(|x| x.as_str().map(str::to_string)));
        }
        // Relative and without `..`: reproducers are never written outside the workspace.
        let inside = |d: &Path| d.components().all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
        if let Some(dir) =
            v.get("reproducerFolder").and_then(Json::as_str).map(Path::new).filter(|d| !d.as_os_str().is_empty() && inside(d))
        {
            self.reproducer_folder = dir.to_path_buf();
        }
        // Shim folders from the client come before the project's (absolute, or relative to the
        // pyproject.toml's folder like the project's own).
        if let Some(list) = v.get("shims").and_then(Json::as_array) {
            let mut shims: Vec<PathBuf> = list.iter().filter_map(|x| x.as_str().map(PathBuf::from)).collect();
            shims.append(&mut self.project.shims);
            self.project.shims = shims;
        }
        if let Some(n) = v.get("largeConstantBytes").and_then(Json::as_u64) {
            self.project.large_constant_bytes = Some(n);
        }
        self.values = v.pointer("/values/enabled").and_then(Json::as_bool).or(self.project.values).unwrap_or(true);
        if let Some(ms) = v.pointer("/values/delayMs").and_then(Json::as_u64) {
            self.values_delay = Duration::from_millis(ms);
        }
        if let Some(ms) = v.pointer("/values/budgetMs").and_then(Json::as_u64) {
            self.values_budget = Duration::from_millis(ms);
        }
    }
}

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
    }));
    let shared = state.clone();
    runtime.block_on(async {
        let (service, socket) = LspService::new(move |client| Backend {
            client,
            state: shared,
            generation: Arc::new(AtomicU64::new(0)),
            traced: Arc::new(tokio::sync::Notify::new()),
        });
        framing::serve_filtered(service, socket).await;
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

/// Imports read open documents first, then the disk.
struct OverlayLoader {
    overlay: HashMap<PathBuf, String>,
    disk: crate::files::FsLoader,
}

impl SourceLoader for OverlayLoader {
    fn read(&self, path: &Path) -> Option<std::rc::Rc<str>> {
        match self.overlay.get(path) {
            Some(t) => Some(std::rc::Rc::from(t.as_str())),
            None => self.disk.read(path),
        }
    }
}

use crate::check::ANALYSIS_STACK;

/// How the server analyses `path`: imports resolved from the workspace roots and the file's
/// folder, the project's budgets, and `cancel` to stop it early.
fn analysis_config(path: &Path, roots: Vec<PathBuf>, settings: &Settings, cancel: Arc<AtomicBool>) -> tracer_core::AnalysisConfig {
    let mut config = settings.project.analysis(path, roots);
    config.budgets.cancel = Some(cancel);
    // Traced bodies are printed only when `tracelens.trace` asks for them.
    config.skip_jaxpr_text = true;
    config
}

/// The values pass of an open document (`Settings::values`): once the document has been left
/// alone for `values_delay`, evaluates it on the CPU (values mode, on its own thread and within
/// `values_budget`) and adds the NaN/Inf it finds (TL301) to the diagnostics of that version.
/// A newer edit cancels it; a pass that runs out of budget adds nothing.
async fn values_pass(
    state: Arc<Mutex<State>>,
    client: Client,
    path: PathBuf,
    version: i32,
    generation: u64,
    cancel: Arc<AtomicBool>,
    settings: Settings,
) {
    tokio::time::sleep(settings.values_delay).await;
    let job = {
        let st = state.lock().unwrap_or_else(|p| p.into_inner());
        let current = st.scheduled.get(&path).map(|(g, _)| *g) == Some(generation);
        match st.results.get(&path) {
            Some(a) if current && a.version == version && !cancel.load(Ordering::Relaxed) => {
                Some((a.text.clone(), st.docs.snapshot(), st.roots.clone()))
            }
            _ => None,
        }
    };
    let Some((text, overlay, roots)) = job else { return };
    let (p2, c2, budget) = (path.clone(), cancel.clone(), settings.values_budget);
    let values = move |config: &mut tracer_core::AnalysisConfig| {
        config.values = true;
        config.reproducers.skip = true;
        config.budgets.max_time = budget;
    };
    let analysis =
        tokio::task::spawn_blocking(move || analyse_blocking(p2, text, overlay, roots, settings, c2, values)).await.ok().flatten();
    let Some(analysis) = analysis else { return };
    let found: Vec<_> = analysis.diagnostics.into_iter().filter(|(d, _, _)| d.code == Code::NanInf).collect();
    if found.is_empty() {
        return;
    }
    let notice = {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        let Some(a) = st.results.get(&path).cloned() else { return };
        if cancel.load(Ordering::Relaxed) || a.version != version {
            return;
        }
        let mut analysis = a.analysis.clone();
        analysis.diagnostics.extend(found);
        store_result(&mut st, &path, Analysed { version, text: a.text.clone(), analysis }).0
    };
    notice.send(&client).await;
}

/// What the client is told once a file's result changed.
enum Notice {
    /// It pulls open documents' diagnostics itself: ask it to pull again.
    Refresh,
    Publish(Option<(Uri, Vec<lsp::Diagnostic>, Option<i32>)>),
}

impl Notice {
    async fn send(self, client: &Client) {
        match self {
            Notice::Refresh => {
                let _ = client.send_request::<lsp::request::WorkspaceDiagnosticRefresh>(()).await;
            }
            Notice::Publish(Some((uri, diags, version))) => client.publish_diagnostics(uri, diags, version).await,
            Notice::Publish(None) => {}
        }
    }
}

/// Whether a result of `version` is published to the client, rather than pulled by it: a
/// client that pulls does so for its open documents only.
fn pushed(pull: bool, version: i32) -> bool {
    !pull || version < 0
}

/// Makes `analysed` the latest result for `path`: what to tell the client, and the result it
/// replaces (to be freed after telling, not before).
fn store_result(st: &mut State, path: &Path, analysed: Analysed) -> (Notice, Option<Arc<Analysed>>) {
    let analysed = Arc::new(analysed);
    let previous = st.results.insert(path.to_path_buf(), analysed.clone());
    let notice = if pushed(st.pull, analysed.version) { Notice::Publish(publish_params(st, path, &analysed)) } else { Notice::Refresh };
    (notice, previous)
}

/// Runs engine work (tracing, and the reproducer's minimiser, which traces again) on a thread
/// of its own with the engine's stack, and waits for it; a panic becomes `None`. Call it from
/// a blocking thread, never from the runtime's workers.
fn on_engine_stack<T: Send + 'static>(name: &str, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let handle = std::thread::Builder::new()
        .name(name.into())
        .stack_size(ANALYSIS_STACK)
        .spawn(move || std::panic::catch_unwind(AssertUnwindSafe(work)).ok())
        .ok()?;
    handle.join().ok().flatten()
}

/// Analyses one file on a thread with the engine's stack; a panic becomes `None`.
/// `adjust` changes the analysis config on top of the settings (printed bodies, values mode,
/// functions to stage out).
fn analyse_blocking(
    path: PathBuf,
    text: String,
    overlay: HashMap<PathBuf, String>,
    roots: Vec<PathBuf>,
    settings: Settings,
    cancel: Arc<AtomicBool>,
    adjust: impl FnOnce(&mut tracer_core::AnalysisConfig) + Send + 'static,
) -> Option<FileAnalysis> {
    on_engine_stack("tracelens-analysis", move || {
        let loader = OverlayLoader { overlay, disk: crate::files::FsLoader::default() };
        let mut config = analysis_config(&path, roots, &settings, cancel);
        adjust(&mut config);
        tracer_core::analyze_file(&path, &text, &loader, &config)
    })
}

impl Backend {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock must not take the server down with it.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Schedules tracing of `path` after the debounce delay; a newer schedule supersedes it.
    fn schedule(&self, path: PathBuf) {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let cancel = Arc::new(AtomicBool::new(false));
        let debounce = {
            let mut st = self.lock();
            if let Some((_, old)) = st.scheduled.insert(path.clone(), (generation, cancel.clone())) {
                old.store(true, Ordering::Relaxed);
            }
            st.settings.debounce
        };
        let state = self.state.clone();
        let client = self.client.clone();
        let traced = self.traced.clone();
        let this = self.clone();
        tokio::spawn(async move {
            if !debounce.is_zero() {
                tokio::time::sleep(debounce).await;
            }
            let job = {
                let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                if st.scheduled.get(&path).map(|(g, _)| *g) != Some(generation) {
                    return;
                }
                let enc = st.encoding;
                st.docs.flush(&path, enc);
                let (text, version) = match st.docs.get(&path) {
                    Some(d) => (d.text(), d.version),
                    None => match crate::files::read_source(&path) {
                        Some(t) => (t, -1),
                        None => return,
                    },
                };
                let started = this.generation.load(Ordering::SeqCst);
                (text, version, st.docs.snapshot(), st.roots.clone(), st.settings.clone(), st.pull, started)
            };
            let (text, version, overlay, roots, settings, pull, started) = job;
            let loader = OverlayLoader { overlay, disk: crate::files::FsLoader::default() };
            let config = analysis_config(&path, roots, &settings, cancel.clone());
            // Pushed diagnostics go out as soon as the analysis has them; what hover, inlay
            // hints and code lenses read is gathered after (`tracer_core::analysis::Deliver`).
            let (early_tx, early_rx) = tokio::sync::oneshot::channel();
            let whole =
                worker::analyse(path.clone(), text.clone(), loader, config, version >= 0, pushed(pull, version).then_some(early_tx));
            // Errors raised in other files are shown once their reproducers are known.
            let early = early_rx.await.ok().filter(|d: &Vec<LocatedDiagnostic>| d.iter().all(|(d, _, _)| d.path == path));
            if let Some(diagnostics) = early {
                let publish = {
                    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                    let current = st.docs.get(&path).map(|d| d.version).unwrap_or(-1);
                    if cancel.load(Ordering::Relaxed) || current != version {
                        None
                    } else {
                        st.early.insert(path.clone(), version);
                        convert::uri_of(&path)
                            .map(|uri| (uri, lsp_diagnostics(&st, &path, &text, &diagnostics), (version >= 0).then_some(version)))
                    }
                };
                if let Some((uri, diagnostics, version)) = publish {
                    client.publish_diagnostics(uri, diagnostics, version).await;
                }
            }
            let analysis = whole.await;
            let (notice, previous, stale) = {
                let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                let published = st.early.get(&path) == Some(&version);
                if published {
                    st.early.remove(&path);
                }
                let current = st.docs.get(&path).map(|d| d.version).unwrap_or(-1);
                let Some(analysis) = analysis.filter(|_| !cancel.load(Ordering::Relaxed) && current == version) else {
                    drop(st);
                    // Requests waiting for this version's analysis stop waiting.
                    traced.notify_waiters();
                    return;
                };
                // A file this analysis read changed after it started.
                let stale = analysis.files.iter().any(|f| f != &path && st.edited.get(f).is_some_and(|&at| at > started));
                let (notice, previous) = store_result(&mut st, &path, Analysed { version, text, analysis });
                // The same diagnostics as published early: published once.
                (if published { Notice::Publish(None) } else { notice }, previous, stale)
            };
            traced.notify_waiters();
            notice.send(&client).await;
            // The previous version's analysis is freed once the diagnostics are out.
            drop(previous);
            if stale {
                this.schedule(path);
                return;
            }
            if settings.values && version >= 0 {
                values_pass(state, client, path, version, generation, cancel, settings).await;
            }
        });
    }

    /// Stamps a change of `path`'s text with a new generation (see `State::edited`). Called
    /// under the same lock as the change, so an analysis that snapshots the text after it
    /// reads a generation at least as new.
    fn edited(&self, st: &mut State, path: &Path) {
        let at = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        st.edited.insert(path.to_path_buf(), at);
    }

    /// Files whose last analysis read `changed` (they import it), other than itself.
    fn dependents(&self, changed: &Path) -> Vec<PathBuf> {
        let st = self.lock();
        st.results
            .iter()
            .filter(|(p, a)| p.as_path() != changed && a.analysis.files.iter().any(|f| f == changed))
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// `tracelens.repro` [uri, 0-based line, {show}?]: writes the reproducer of the error at that
    /// line to `<workspace folder>/<reproducer folder>/<file>_line<N>.py` and answers
    /// `{uri, path}`; with `show`, also asks the client to open it. `{message}` says why when
    /// there is no reproducer at that line (with `show`, the client is shown it too).
    /// Every trace of `function` in the document as analysed in `a`, staged out: the text is
    /// traced again, collecting that function's traces.
    async fn function_reproducer(&self, path: &Path, a: &Arc<Analysed>, shown: &str, function: &str) -> Result<String, String> {
        let (overlay, roots, settings) = {
            let st = self.lock();
            (st.docs.snapshot(), st.roots.clone(), st.settings.clone())
        };
        let (p2, text, f2) = (path.to_path_buf(), a.text.clone(), function.to_string());
        let collect = move |config: &mut tracer_core::AnalysisConfig| {
            config.reproducers.skip = true;
            config.reproducers.functions = vec![f2];
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let analysis =
            tokio::task::spawn_blocking(move || analyse_blocking(p2, text, overlay, roots, settings, cancel, collect)).await.ok().flatten();
        match analysis {
            Some(analysis) => crate::check::function_reproducer_text(&analysis, path, shown, function).map(|(text, _)| text),
            None => Err(format!("{shown}: internal error while staging out {function}")),
        }
    }

    async fn write_reproducer(&self, uri: Option<Uri>, line: u32, show: bool) -> RpcResult<Option<Json>> {
        let Some((path, a, _)) = (match uri.as_ref() {
            Some(u) => self.analysed_current(u).await,
            None => None,
        }) else {
            return Ok(None);
        };
        let (root, folder) = self.reproducer_folder(&path);
        // The reproducer's header and links name the user's file relative to the workspace.
        let shown = path.strip_prefix(&root).unwrap_or(&path).to_string_lossy().into_owned();
        let (a2, p2, s2) = (a.clone(), path.clone(), shown.clone());
        let made = tokio::task::spawn_blocking(move || {
            on_engine_stack("tracelens-reproducer", move || crate::check::reproducer_text(&a2.analysis, &p2, &s2, line))
        })
        .await
        .ok()
        .flatten()
        .ok_or_else(|| internal("tracelens.repro"))?;
        // No error at a traced function's own line (its "Generate reproducer" lens): stage
        // out every trace of the function instead, as `tracelens repro --function` does.
        let function = a
            .analysis
            .functions
            .iter()
            .find(|f| *f.location.path == *path && f.location.line == line)
            .map(|f| f.name.clone())
            .filter(|_| made.is_err());
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "repro".into());
        let (made, file_name) = match function {
            Some(name) => {
                (self.function_reproducer(&path, &a, &shown, &name).await, format!("{stem}_{}", tracer_core::jax::stmt::sanitize(&name)))
            }
            None => (made, format!("{stem}_line{line}")),
        };
        let text = match made {
            Ok(text) => text,
            Err(why) => {
                if show {
                    self.client.show_message(lsp::MessageType::INFO, format!("tracelens: {why}")).await;
                }
                return Ok(Some(serde_json::json!({ "message": why })));
            }
        };
        let out = folder.join(format!("{file_name}.py"));
        let target = out.clone();
        // File IO on a blocking thread, not on the runtime's two workers.
        let written = tokio::task::spawn_blocking(move || {
            target.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&target, text))
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)));
        if let Err(e) = written {
            return Err(RpcError { code: ErrorCode::InternalError, message: format!("{}: {e}", out.display()).into(), data: None });
        }
        let Some(out_uri) = convert::uri_of(&out) else { return Ok(None) };
        if show {
            self.show(out_uri.clone(), None).await;
        }
        Ok(Some(serde_json::json!({"uri": out_uri.as_str(), "path": out.to_string_lossy()})))
    }

    /// Asks the client to open `uri` (at `line`, 0-based), when it can.
    async fn show(&self, uri: Uri, line: Option<u32>) {
        if !self.lock().show_document {
            return;
        }
        let selection =
            line.map(|l| lsp::Range { start: lsp::Position { line: l, character: 0 }, end: lsp::Position { line: l, character: 0 } });
        let show = lsp::ShowDocumentParams { uri, external: None, take_focus: Some(true), selection };
        let _ = self.client.show_document(show).await;
    }

    /// The workspace folder of `path` (or its folder) and the reproducer folder in it.
    fn reproducer_folder(&self, path: &Path) -> (PathBuf, PathBuf) {
        let st = self.lock();
        let root = st.roots.iter().find(|r| path.starts_with(r)).cloned();
        let root = root.unwrap_or_else(|| path.parent().map(Path::to_path_buf).unwrap_or_default());
        let folder = root.join(&st.settings.reproducer_folder);
        (root, folder)
    }

    /// The reproducer lines that stand for lines of `source`, newest reproducer first (reads
    /// the reproducer folder on a blocking thread).
    async fn reproducer_lines(&self, source: &Path) -> Vec<reproducer_links::ReproducerLine> {
        let (_, folder) = self.reproducer_folder(source);
        let (roots, overlay) = {
            let st = self.lock();
            (st.roots.clone(), st.docs.snapshot())
        };
        let source = source.to_path_buf();
        tokio::task::spawn_blocking(move || reproducer_links::lines_linking_to(&folder, &source, &roots, &overlay))
            .await
            .unwrap_or_default()
    }

    /// `tracelens.openReproducer` [uri, 0-based line, {show}?]: the reproducer line that stands
    /// for that source line (or, inside a traced function, the nearest one above it), as
    /// `{uri, path, line}`; with `show`, the client opens it there. `{message}` when none.
    async fn open_reproducer(&self, uri: Option<Uri>, line: u32, show: bool) -> RpcResult<Option<Json>> {
        let Some(path) = uri.as_ref().and_then(convert::path_of) else { return Ok(None) };
        let lines = self.reproducer_lines(&path).await;
        // Within the traced function around the line, when the file is analysed.
        let analysed = match uri.as_ref() {
            Some(u) => self.analysed_current(u).await,
            None => None,
        };
        let within = analysed.and_then(|(p, a, _)| features::function_lines(&a, &p, line)).unwrap_or((line, line));
        let Some(found) = reproducer_links::best_for_line(&lines, line, within).cloned() else {
            let (_, folder) = self.reproducer_folder(&path);
            let why = format!("no reproducer in {} stands for line {line}", folder.display());
            if show {
                self.client.show_message(lsp::MessageType::INFO, format!("tracelens: {why}")).await;
            }
            return Ok(Some(serde_json::json!({ "message": why })));
        };
        let Some(target) = convert::uri_of(&found.reproducer) else { return Ok(None) };
        if show {
            self.show(target.clone(), Some(found.line)).await;
        }
        Ok(Some(serde_json::json!({"uri": target.as_str(), "path": found.reproducer.to_string_lossy(), "line": found.line})))
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

    /// Where the reproducer links of `text` (the document at `path`) lead: (link, source file).
    async fn resolved_links(&self, path: &Path, text: &str) -> Vec<(reproducer_links::Link, PathBuf)> {
        let links = reproducer_links::links(text);
        if links.is_empty() {
            return Vec::new();
        }
        let roots = self.lock().roots.clone();
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            links.into_iter().filter_map(|l| reproducer_links::resolve(&l.path, &path, &roots).map(|p| (l, p))).collect()
        })
        .await
        .unwrap_or_default()
    }

    /// Go to definition on a line of a reproducer: the source line its link names.
    async fn reproducer_definition(&self, uri: &Uri, line: u32) -> Option<lsp::Location> {
        let path = convert::path_of(uri)?;
        let (text, enc) = self.document_text(&path)?;
        if !reproducer_links::is_reproducer(&text) {
            return None;
        }
        let line_text = text.split_inclusive('\n').nth(line as usize)?;
        let (link, source) = self.resolved_links(&path, line_text).await.into_iter().next()?;
        let source_text = self.document_text(&source).map(|(t, _)| t)?;
        guarded("go to definition", || {
            let lines = LineText::new(&source_text);
            let row = link.target_line.saturating_sub(1);
            // The first non-blank character of the line.
            let start = lines.line_start(row) as usize;
            let indent = source_text[start..].len() - source_text[start..].trim_start_matches([' ', '\t']).len();
            let at = lines.position((start + indent) as u32, enc);
            Some(lsp::Location { uri: convert::uri_of(&source)?, range: lsp::Range { start: at, end: at } })
        })
        .ok()
        .flatten()
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
    /// hints, code lenses and code actions read) is stored, so wait for that, bounded.
    async fn analysed_current(&self, uri: &Uri) -> Option<(PathBuf, Arc<Analysed>, PositionEncoding)> {
        let path = convert::path_of(uri);
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
    /// most two seconds.
    async fn wait_until(&self, ready: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        loop {
            // Registered before looking, so that an analysis stored in between still wakes us.
            let stored = self.traced.notified();
            if ready() || tokio::time::timeout_at(deadline, stored).await.is_err() {
                return;
            }
        }
    }

    async fn scan_workspace(&self) {
        let (roots, scan) = {
            let st = self.lock();
            (st.roots.clone(), st.settings.workspace_scan)
        };
        if !scan || roots.is_empty() {
            return;
        }
        let files = crate::files::python_files(&roots).unwrap_or_default();
        if files.is_empty() {
            return;
        }
        let token = lsp::NumberOrString::String("tracelens/scan".into());
        let created = self
            .client
            .send_request::<lsp::request::WorkDoneProgressCreate>(lsp::WorkDoneProgressCreateParams { token: token.clone() })
            .await
            .is_ok();
        let progress = if created { Some(self.client.progress(token, "tracelens").with_percentage(0).begin().await) } else { None };
        let total = files.len();
        for (done, path) in files.into_iter().enumerate() {
            if self.lock().shutting_down {
                return;
            }
            let open = self.lock().docs.get(&path).is_some();
            if !open {
                let Some(text) = crate::files::read_source(&path) else { continue };
                let (overlay, roots, settings) = {
                    let st = self.lock();
                    (st.docs.snapshot(), st.roots.clone(), st.settings.clone())
                };
                let (p2, t2) = (path.clone(), text.clone());
                let cancel = Arc::new(AtomicBool::new(false));
                let analysis = tokio::task::spawn_blocking(move || analyse_blocking(p2, t2, overlay, roots, settings, cancel, |_| {}))
                    .await
                    .ok()
                    .flatten();
                if let Some(analysis) = analysis {
                    let publish = {
                        let mut st = self.lock();
                        let analysed = Arc::new(Analysed { version: -1, text, analysis });
                        st.results.insert(path.clone(), analysed.clone());
                        publish_params(&st, &path, &analysed)
                    };
                    if let Some((uri, diags, version)) = publish {
                        self.client.publish_diagnostics(uri, diags, version).await;
                    }
                }
            }
            if let Some(p) = &progress {
                let pct = ((done + 1) * 100 / total) as u32;
                p.report_with_message(format!("{}/{} files traced", done + 1, total), pct).await;
            }
        }
        if let Some(p) = progress {
            p.finish_with_message(format!("{total} files traced")).await;
        }
    }
}

/// Diagnostics of `path` from its analysis, as LSP data, with severities from the settings.
fn lsp_diagnostics(st: &State, path: &Path, text: &str, diagnostics: &[LocatedDiagnostic]) -> Vec<lsp::Diagnostic> {
    let lines = LineText::new(text);
    let enc = st.encoding;
    let mut out = Vec::new();
    for (d, loc, related) in diagnostics {
        if d.path != path {
            continue;
        }
        let Some(severity) = st.settings.project.severity_of(d.code, d.severity) else { continue };
        let related_info: Vec<lsp::DiagnosticRelatedInformation> = related
            .iter()
            .zip(&d.related)
            .filter_map(|(l, r)| {
                let uri = convert::uri_of(&l.path)?;
                let range = if *l.path == *path {
                    lines.location_range(l, enc)
                } else {
                    let other = crate::files::read_source(&l.path)?;
                    LineText::new(&other).location_range(l, enc)
                };
                Some(lsp::DiagnosticRelatedInformation { location: lsp::Location { uri, range }, message: r.message.clone() })
            })
            .collect();
        out.push(lsp::Diagnostic {
            range: lines.location_range(loc, enc),
            severity: Some(convert::severity(severity)),
            code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
            code_description: None,
            source: Some("tracelens".into()),
            message: d.message.clone(),
            related_information: if related_info.is_empty() { None } else { Some(related_info) },
            tags: None,
            data: Some(serde_json::json!({ "name": d.code.name(), "start": loc.span.start, "end": loc.span.end })),
        });
    }
    out
}

/// `lsp_diagnostics` of a whole analysis: with each error raised in a module this file
/// imports shown at the line of this file that leads to it (which needs its reproducers).
fn analysis_diagnostics(st: &State, path: &Path, a: &Analysed) -> Vec<lsp::Diagnostic> {
    let lines = LineText::new(&a.text);
    let enc = st.encoding;
    let mut out = lsp_diagnostics(st, path, &a.text, &a.analysis.diagnostics);
    for e in features::raised_elsewhere(a, path) {
        let located = &a.analysis.diagnostics[e.diagnostic];
        let Some(severity) = st.settings.project.severity_of(located.0.code, located.0.severity) else { continue };
        out.push(raised_elsewhere_diagnostic(path, &e, located, severity, &lines, enc));
    }
    out
}

/// The diagnostic standing in `path` for an error raised in another file (`RaisedElsewhere`):
/// its message, where it is raised, and that place as related information.
fn raised_elsewhere_diagnostic(
    path: &Path,
    e: &features::RaisedElsewhere,
    (d, loc, _): &tracer_core::analysis::LocatedDiagnostic,
    severity: Severity,
    lines: &LineText,
    enc: PositionEncoding,
) -> lsp::Diagnostic {
    let dir = path.parent().unwrap_or(Path::new(""));
    let shown = d.path.strip_prefix(dir).unwrap_or(&d.path).to_string_lossy().into_owned();
    let related = convert::uri_of(&d.path).and_then(|uri| {
        let other = crate::files::read_source(&d.path)?;
        let range = LineText::new(&other).location_range(loc, enc);
        Some(vec![lsp::DiagnosticRelatedInformation { location: lsp::Location { uri, range }, message: "raised here".into() }])
    });
    lsp::Diagnostic {
        range: lines.range(e.span.0, e.span.1, enc),
        severity: Some(convert::severity(severity)),
        code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
        code_description: None,
        source: Some("tracelens".into()),
        message: format!("{}\n(raised in {shown}:{} under the call on this line)", d.message, loc.line),
        related_information: related,
        tags: None,
        data: Some(serde_json::json!({ "name": d.code.name(), "raisedIn": shown, "raisedAt": loc.line })),
    }
}

fn publish_params(st: &State, path: &Path, a: &Analysed) -> Option<(Uri, Vec<lsp::Diagnostic>, Option<i32>)> {
    let uri = convert::uri_of(path)?;
    let version = if a.version >= 0 { Some(a.version) } else { None };
    Some((uri, analysis_diagnostics(st, path, a), version))
}

/// The code action "Write a pure-JAX reproducer of CODE": `tracelens.repro` on `line` (1-based).
fn reproducer_action(uri: &Uri, line: u32, code: &str, diagnostic: Option<lsp::Diagnostic>) -> lsp::CodeActionOrCommand {
    lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
        title: format!("Write a pure-JAX reproducer of {code}"),
        kind: Some(lsp::CodeActionKind::EMPTY),
        diagnostics: diagnostic.map(|x| vec![x]),
        command: Some(lsp::Command {
            title: "Write a reproducer".into(),
            command: "tracelens.repro".into(),
            arguments: Some(vec![
                Json::String(uri.as_str().to_string()),
                Json::from(line.saturating_sub(1)),
                serde_json::json!({"show": true}),
            ]),
        }),
        ..Default::default()
    })
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

impl LanguageServer for Backend {
    async fn initialize(&self, params: lsp::InitializeParams) -> RpcResult<lsp::InitializeResult> {
        let encoding = convert::negotiate(&params);
        let mut roots: Vec<PathBuf> = params.workspace_folders.iter().flatten().filter_map(|f| convert::path_of(&f.uri)).collect();
        #[allow(deprecated)]
        if roots.is_empty() {
            if let Some(p) = params.root_uri.as_ref().and_then(convert::path_of) {
                roots.push(p);
            }
        }
        let pull = {
            let mut st = self.lock();
            st.encoding = encoding;
            st.base = roots.first().and_then(|r| Config::discover(r).ok()).unwrap_or_default();
            st.settings.project = st.base.clone();
            if let Some(opts) = &params.initialization_options {
                let base = st.base.clone();
                st.settings.apply_client(&base, opts);
            }
            let pulls = params.capabilities.text_document.as_ref().is_some_and(|t| t.diagnostic.is_some());
            let refresh = params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.diagnostics.as_ref())
                .and_then(|d| d.refresh_support)
                .unwrap_or(false);
            // Pull only when the server can tell the client to pull again after a trace ends;
            // otherwise a pull answered before the trace would leave stale diagnostics.
            st.pull = pulls && refresh;
            st.configuration = params.capabilities.workspace.as_ref().and_then(|w| w.configuration).unwrap_or(false);
            st.show_document = params.capabilities.window.as_ref().and_then(|w| w.show_document.as_ref()).is_some_and(|s| s.support);
            st.roots = roots;
            st.pull
        };
        Ok(lsp::InitializeResult {
            server_info: Some(lsp::ServerInfo { name: "tracelens".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
            capabilities: lsp::ServerCapabilities {
                position_encoding: Some(encoding.to_lsp()),
                text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(lsp::TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                    save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
                    ..Default::default()
                })),
                hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
                inlay_hint_provider: Some(lsp::OneOf::Left(true)),
                code_lens_provider: Some(lsp::CodeLensOptions { resolve_provider: Some(false) }),
                code_action_provider: Some(lsp::CodeActionProviderCapability::Options(lsp::CodeActionOptions {
                    code_action_kinds: Some(vec![lsp::CodeActionKind::QUICKFIX]),
                    ..Default::default()
                })),
                definition_provider: Some(lsp::OneOf::Left(true)),
                document_link_provider: Some(lsp::DocumentLinkOptions {
                    resolve_provider: Some(false),
                    work_done_progress_options: Default::default(),
                }),
                // Offered only to a client that will pull: one that can pull but not be told to
                // pull again (Neovim 0.11) would pull besides the pushes, and show each twice.
                diagnostic_provider: pull.then(|| {
                    lsp::DiagnosticServerCapabilities::Options(lsp::DiagnosticOptions {
                        identifier: Some("tracelens".into()),
                        inter_file_dependencies: true,
                        workspace_diagnostics: false,
                        ..Default::default()
                    })
                }),
                execute_command_provider: Some(lsp::ExecuteCommandOptions {
                    commands: vec!["tracelens.trace".into(), "tracelens.repro".into(), "tracelens.openReproducer".into()],
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    async fn initialized(&self, _: lsp::InitializedParams) {
        // In a task of its own: the server's `exit` waits for running handlers, and this one
        // waits on the client (configuration) and on the whole workspace.
        let this = self.clone();
        tokio::spawn(async move {
            if this.lock().configuration {
                let items = vec![lsp::ConfigurationItem { scope_uri: None, section: Some("tracelens".into()) }];
                if let Ok(values) = this.client.configuration(items).await {
                    if let Some(v) = values.first() {
                        let mut st = this.lock();
                        let base = st.base.clone();
                        st.settings.apply_client(&base, v);
                    }
                }
            }
            this.scan_workspace().await;
        });
    }

    async fn shutdown(&self) -> RpcResult<()> {
        let mut st = self.lock();
        st.shutting_down = true;
        for (_, cancel) in st.scheduled.values() {
            cancel.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    async fn did_open(&self, params: lsp::DidOpenTextDocumentParams) {
        let Some(path) = convert::path_of(&params.text_document.uri) else { return };
        let pull = {
            let mut st = self.lock();
            st.docs.open(path.clone(), &params.text_document.text, params.text_document.version);
            self.edited(&mut st, &path);
            st.pull
        };
        if pull {
            // From now on the client pulls this document's diagnostics; withdraw the ones the
            // workspace scan pushed, or the client would show both.
            self.client.publish_diagnostics(params.text_document.uri, Vec::new(), None).await;
        }
        self.schedule(path);
    }

    async fn did_change(&self, params: lsp::DidChangeTextDocumentParams) {
        let Some(path) = convert::path_of(&params.text_document.uri) else { return };
        let edits: Vec<Edit> = params
            .content_changes
            .into_iter()
            .map(|c| Edit { range: c.range.map(|r| ((r.start.line, r.start.character), (r.end.line, r.end.character))), text: c.text })
            .collect();
        {
            let mut st = self.lock();
            let enc = st.encoding;
            st.docs.change(&path, params.text_document.version, edits, enc);
            self.edited(&mut st, &path);
        }
        self.schedule(path.clone());
        for dependent in self.dependents(&path) {
            self.schedule(dependent);
        }
    }

    async fn did_save(&self, params: lsp::DidSaveTextDocumentParams) {
        let Some(path) = convert::path_of(&params.text_document.uri) else { return };
        self.edited(&mut self.lock(), &path);
        for dependent in self.dependents(&path) {
            self.schedule(dependent);
        }
    }

    async fn did_close(&self, params: lsp::DidCloseTextDocumentParams) {
        let Some(path) = convert::path_of(&params.text_document.uri) else { return };
        let mut st = self.lock();
        st.docs.close(&path);
        self.edited(&mut st, &path);
        // The file is still part of the workspace: keep its diagnostics, from the disk text.
        st.results.remove(&path);
        drop(st);
        self.schedule(path);
    }

    async fn did_change_configuration(&self, params: lsp::DidChangeConfigurationParams) {
        let v = params.settings.get("tracelens").cloned().unwrap_or(params.settings);
        {
            let mut st = self.lock();
            let base = st.base.clone();
            st.settings.apply_client(&base, &v);
        }
        let open = self.lock().docs.paths();
        for p in open {
            self.schedule(p);
        }
    }

    async fn hover(&self, params: lsp::HoverParams) -> RpcResult<Option<lsp::Hover>> {
        let Some((path, a, enc)) = self.analysed_current(&params.text_document_position_params.text_document.uri).await else {
            return Ok(None);
        };
        let pos = params.text_document_position_params.position;
        guarded("hover", || {
            let lines = LineText::new(&a.text);
            let offset = lines.offset(pos, enc);
            features::hover(&a, &path, offset).map(|(text, (s, e))| lsp::Hover {
                contents: lsp::HoverContents::Markup(lsp::MarkupContent { kind: lsp::MarkupKind::Markdown, value: text }),
                range: Some(lines.range(s, e, enc)),
            })
        })
    }

    async fn inlay_hint(&self, params: lsp::InlayHintParams) -> RpcResult<Option<Vec<lsp::InlayHint>>> {
        let (enabled, scalars) = {
            let st = self.lock();
            (st.settings.inlay_hints, st.settings.inlay_scalars)
        };
        if !enabled {
            return Ok(None);
        }
        let Some((path, a, enc)) = self.analysed_current(&params.text_document.uri).await else { return Ok(None) };
        guarded("inlay hints", || {
            let lines = LineText::new(&a.text);
            let range = (lines.offset(params.range.start, enc), lines.offset(params.range.end, enc));
            Some(
                features::inlay_hints(&a, &path, range, scalars)
                    .into_iter()
                    .map(|(offset, label)| lsp::InlayHint {
                        position: lines.position(offset, enc),
                        label: lsp::InlayHintLabel::String(label),
                        kind: Some(lsp::InlayHintKind::TYPE),
                        text_edits: None,
                        tooltip: None,
                        padding_left: None,
                        padding_right: None,
                        data: None,
                    })
                    .collect(),
            )
        })
    }

    async fn code_lens(&self, params: lsp::CodeLensParams) -> RpcResult<Option<Vec<lsp::CodeLens>>> {
        let uri = params.text_document.uri;
        let Some((path, a, enc)) = self.analysed_current(&uri).await else { return Ok(None) };
        // Only read the reproducer folder when the file has traced functions.
        let reproducer_lines = if a.analysis.functions.is_empty() { Vec::new() } else { self.reproducer_lines(&path).await };
        guarded("code lens", || {
            let lines = LineText::new(&a.text);
            let lens = |(s, e): (u32, u32), title: String, command: &str, arguments: Option<Vec<Json>>| lsp::CodeLens {
                range: lines.range(s, e, enc),
                command: Some(lsp::Command { title, command: command.into(), arguments }),
                data: None,
            };
            let on_line = |line: u32| {
                Some(vec![Json::String(uri.as_str().to_string()), Json::from(line.saturating_sub(1)), serde_json::json!({"show": true})])
            };
            let mut out: Vec<lsp::CodeLens> =
                features::code_lenses(&a, &path).into_iter().map(|(span, title)| lens(span, title, "", None)).collect();
            for l in features::reproducer_lenses(&a, &path) {
                out.push(lens(l.span, "Generate reproducer".into(), "tracelens.repro", on_line(l.repro_line)));
                let first = l.lines.0;
                if let Some(found) = reproducer_links::best_for_line(&reproducer_lines, first, l.lines)
                    .or_else(|| reproducer_lines.iter().find(|r| l.lines.0 <= r.source_line && r.source_line <= l.lines.1))
                {
                    let name = found.reproducer.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    let title = format!("Open reproducer {name}:{}", found.line + 1);
                    out.push(lens(l.span, title, "tracelens.openReproducer", on_line(found.source_line)));
                }
            }
            Some(out)
        })
    }

    async fn document_link(&self, params: lsp::DocumentLinkParams) -> RpcResult<Option<Vec<lsp::DocumentLink>>> {
        let Some(path) = convert::path_of(&params.text_document.uri) else { return Ok(None) };
        let Some((text, enc)) = self.document_text(&path) else { return Ok(None) };
        let resolved = self.resolved_links(&path, &text).await;
        guarded("document links", || {
            let lines = LineText::new(&text);
            Some(
                resolved
                    .into_iter()
                    .filter_map(|(link, source)| {
                        let target = convert::uri_of(&source)?;
                        // `#L15` opens the file at that line (VS Code's link opener reads it).
                        let target: Uri = format!("{}#L{}", target.as_str(), link.target_line).parse().ok()?;
                        Some(lsp::DocumentLink {
                            range: lines.range(link.start, link.end, enc),
                            target: Some(target),
                            tooltip: Some(format!("{} line {}", link.path, link.target_line)),
                            data: None,
                        })
                    })
                    .collect(),
            )
        })
    }

    async fn goto_definition(&self, params: lsp::GotoDefinitionParams) -> RpcResult<Option<lsp::GotoDefinitionResponse>> {
        let uri = params.text_document_position_params.text_document.uri.clone();
        let pos = params.text_document_position_params.position;
        if let Some(location) = self.reproducer_definition(&uri, pos.line).await {
            return Ok(Some(lsp::GotoDefinitionResponse::Scalar(location)));
        }
        let Some((path, a, enc)) = self.analysed_current(&uri).await else { return Ok(None) };
        guarded("go to definition", || {
            let lines = LineText::new(&a.text);
            let offset = lines.offset(pos, enc);
            let f = features::definition(&a, &path, offset)?;
            let target_uri = convert::uri_of(&f.location.path)?;
            let range = if *f.location.path == *path {
                lines.location_range(&f.location, enc)
            } else {
                let text = crate::files::read_source(&f.location.path)?;
                LineText::new(&text).location_range(&f.location, enc)
            };
            Some(lsp::GotoDefinitionResponse::Scalar(lsp::Location { uri: target_uri, range }))
        })
    }

    async fn code_action(&self, params: lsp::CodeActionParams) -> RpcResult<Option<lsp::CodeActionResponse>> {
        let uri = params.text_document.uri.clone();
        let Some((path, a, enc)) = self.analysed_current(&uri).await else { return Ok(None) };
        guarded("code actions", || {
            let lines = LineText::new(&a.text);
            let (rs, re) = (lines.offset(params.range.start, enc), lines.offset(params.range.end, enc));
            let shown = analysis_diagnostics(&self.lock(), &path, &a);
            let mut actions = Vec::new();
            for (d, loc, _) in &a.analysis.diagnostics {
                if d.path != path || loc.span.end < rs || loc.span.start > re {
                    continue;
                }
                let lsp_diag = shown
                    .iter()
                    .find(|x| {
                        x.range == lines.location_range(loc, enc) && x.code == Some(lsp::NumberOrString::String(d.code.as_str().into()))
                    })
                    .cloned();
                // (title, edits, preferred)
                let mut fixes: Vec<(String, Vec<features::TextEdit>, bool)> = Vec::new();
                match d.code.as_str() {
                    "TL107" => {
                        if let Some(e) = features::immutable_update_fix(&a.text, loc.span.start, loc.span.end) {
                            fixes.push((format!("Use `{}`", e.text.trim()), vec![e], true));
                        }
                    }
                    "TL201" => {
                        if let Some(e) = features::print_fix(&a.text, loc.span.start, loc.span.end) {
                            fixes.push(("Print runtime values with jax.debug.print".into(), vec![e], true));
                        }
                    }
                    "TL101" | "TL108" => {
                        if let Some((edits, names)) = features::static_argnames_fix(&a.text, &d.message) {
                            fixes.push((format!("Mark {} static (static_argnames)", names.join(", ")), edits, false));
                        }
                    }
                    _ => {}
                }
                let ignore = features::ignore_edit(&a.text, loc.span.start, d.code.as_str());
                fixes.push((format!("Ignore {} on this line", d.code.as_str()), vec![ignore], false));
                for (title, edits, preferred) in fixes {
                    let text_edits =
                        edits.into_iter().map(|e| lsp::TextEdit { range: lines.range(e.start, e.end, enc), new_text: e.text }).collect();
                    let changes = HashMap::from([(uri.clone(), text_edits)]);
                    actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                        title,
                        kind: Some(lsp::CodeActionKind::QUICKFIX),
                        diagnostics: lsp_diag.clone().map(|x| vec![x]),
                        edit: Some(lsp::WorkspaceEdit { changes: Some(changes), ..Default::default() }),
                        is_preferred: Some(preferred),
                        ..Default::default()
                    }));
                }
                if a.analysis.reproducers.iter().any(|r| r.path == path && r.line == loc.line) {
                    actions.push(reproducer_action(&uri, loc.line, d.code.as_str(), lsp_diag.clone()));
                }
            }
            // An error raised in a module under a call of this file: its reproducer, written
            // from the line that leads to it.
            for e in features::raised_elsewhere(&a, &path) {
                if e.span.1 < rs || e.span.0 > re {
                    continue;
                }
                let code = a.analysis.diagnostics[e.diagnostic].0.code.as_str();
                let range = lines.range(e.span.0, e.span.1, enc);
                let lsp_diag = shown.iter().find(|x| x.range == range && x.code == Some(lsp::NumberOrString::String(code.into()))).cloned();
                actions.push(reproducer_action(&uri, e.line, code, lsp_diag));
            }
            Some(actions)
        })
    }

    async fn diagnostic(&self, params: lsp::DocumentDiagnosticParams) -> RpcResult<lsp::DocumentDiagnosticReportResult> {
        // While the current version is being traced, wait for it (bounded) rather than answer
        // with nothing, which would clear the client's diagnostics on every keystroke.
        let uri = &params.text_document.uri;
        self.wait_until(|| self.analysed(uri).is_some()).await;
        let current = self.analysed(uri);
        let (items, result_id) = match current {
            Some((path, a, _)) => (analysis_diagnostics(&self.lock(), &path, &a), Some(a.version.to_string())),
            None => match params.previous_result_id {
                // Not traced in time: keep what the client shows; the refresh after the trace
                // brings the new report.
                Some(result_id) => {
                    return Ok(lsp::DocumentDiagnosticReportResult::Report(lsp::DocumentDiagnosticReport::Unchanged(
                        lsp::RelatedUnchangedDocumentDiagnosticReport {
                            related_documents: None,
                            unchanged_document_diagnostic_report: lsp::UnchangedDocumentDiagnosticReport { result_id },
                        },
                    )));
                }
                None => (Vec::new(), None),
            },
        };
        Ok(lsp::DocumentDiagnosticReportResult::Report(lsp::DocumentDiagnosticReport::Full(lsp::RelatedFullDocumentDiagnosticReport {
            related_documents: None,
            full_document_diagnostic_report: lsp::FullDocumentDiagnosticReport { result_id, items },
        })))
    }

    async fn execute_command(&self, params: lsp::ExecuteCommandParams) -> RpcResult<Option<Json>> {
        let uri: Option<Uri> = params.arguments.first().and_then(|v| v.as_str()).and_then(|s| s.parse().ok());
        let line = params.arguments.get(1).and_then(Json::as_u64).unwrap_or(0) as u32 + 1;
        if params.command == "tracelens.repro" {
            let show = params.arguments.get(2).and_then(|o| o.get("show")).and_then(Json::as_bool).unwrap_or(false);
            return self.write_reproducer(uri, line, show).await;
        }
        if params.command == "tracelens.openReproducer" {
            let show = params.arguments.get(2).and_then(|o| o.get("show")).and_then(Json::as_bool).unwrap_or(false);
            return self.open_reproducer(uri, line, show).await;
        }
        // `tracelens.trace` [uri, line]: the traces and jaxpr-like bodies of the traced function
        // defined at or enclosing that line, as text.
        if params.command != "tracelens.trace" {
            return Err(RpcError::method_not_found());
        }
        let Some((path, a, _)) = (match uri.as_ref() {
            Some(u) => self.analysed_current(u).await,
            None => None,
        }) else {
            return Ok(None);
        };
        // Analyses for diagnostics leave the traced bodies unprinted: trace this text again.
        let (overlay, roots, settings) = {
            let st = self.lock();
            (st.docs.snapshot(), st.roots.clone(), st.settings.clone())
        };
        let (p2, text) = (path.clone(), a.text.clone());
        let cancel = Arc::new(AtomicBool::new(false));
        let Some(analysis) = tokio::task::spawn_blocking(move || {
            analyse_blocking(p2, text, overlay, roots, settings, cancel, |config| config.skip_jaxpr_text = false)
        })
        .await
        .ok()
        .flatten() else {
            return Ok(None);
        };
        guarded("tracelens.trace", || {
            let f = analysis
                .functions
                .iter()
                .filter(|f| *f.location.path == *path && f.location.line <= line)
                .max_by_key(|f| f.location.line)?;
            let mut text = features::function_summary(f);
            for (i, t) in f.traces.iter().enumerate() {
                text.push_str(&format!("\n\n# trace {}\n{}", i + 1, t.jaxpr));
            }
            Some(Json::String(text))
        })
    }
}
