//! Scheduling analyses of open documents: each edit is analysed at once (or after an adaptive
//! delay when analyses of the file are slow), a newer edit cancels an older analysis, files
//! that import an edited one are analysed again, and results are stored only for the version
//! they were made from.

#[allow(unused_imports)]
use super::*;

/// The values pass of an open document (`Settings::values`): once the document has been left
/// alone for `values_delay`, evaluates it on the CPU (values mode, on its own thread and within
/// `values_budget`) and adds the NaN/Inf it finds (TL301) to the diagnostics of that version.
/// A newer edit cancels it; a pass that runs out of budget adds nothing.
pub(super) async fn values_pass(
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
        store_result(&mut st, &path, Analysed { version, text: a.text.clone(), analysis, started: a.started }).0
    };
    notice.send(&client).await;
}

/// What the client is told once a file's result changed.
pub(super) enum Notice {
    /// It pulls open documents' diagnostics itself: ask it to pull again.
    Refresh,
    /// Push these files' diagnostics: the file analysed first, then the files whose shown
    /// findings its analysis changes (`reached_files`).
    Publish(Vec<(Uri, Vec<lsp::Diagnostic>, Option<i32>)>),
}

impl Notice {
    pub(super) async fn send(self, client: &Client) {
        match self {
            Notice::Refresh => {
                let _ = client.send_request::<lsp::request::WorkspaceDiagnosticRefresh>(()).await;
            }
            Notice::Publish(files) => {
                for (uri, diags, version) in files {
                    client.publish_diagnostics(uri, diags, version).await;
                }
            }
        }
    }
}

/// Whether a result of `version` is published to the client, rather than pulled by it: a
/// client that pulls does so for its open documents only.
pub(super) fn pushed(pull: bool, version: i32) -> bool {
    !pull || version < 0
}

/// Makes `analysed` the latest result for `path`: what to tell the client, and the result it
/// replaces (to be freed after telling, not before).
pub(super) fn store_result(st: &mut State, path: &Path, analysed: Analysed) -> (Notice, Option<Arc<Analysed>>) {
    let analysed = Arc::new(analysed);
    let previous = st.results.insert(path.to_path_buf(), analysed.clone());
    let notice = if pushed(st.pull, analysed.version) {
        let mut files: Vec<_> = publish_params(st, path, &analysed).into_iter().collect();
        files.extend(others_to_publish(st, path, &analysed, previous.as_deref()));
        Notice::Publish(files)
    } else {
        Notice::Refresh
    };
    (notice, previous)
}

/// The diagnostics of the other files `path`'s new analysis changes the shown findings of
/// (`reached_files`), for those a push client is shown.
pub(super) fn others_to_publish(
    st: &State,
    path: &Path,
    current: &Analysed,
    previous: Option<&Analysed>,
) -> Vec<(Uri, Vec<lsp::Diagnostic>, Option<i32>)> {
    reached_files(st, path, current, previous)
        .into_iter()
        .filter_map(|other| {
            let a = st.results.get(&other)?;
            // Its own analysis is older than its text: the new one publishes it.
            let stale = st.edited.get(&other).is_some_and(|&at| at > a.started);
            if stale || !pushed(st.pull, a.version) {
                return None;
            }
            publish_params(st, &other, a)
        })
        .collect()
}

impl Backend {
    /// Schedules tracing of `path`: at once, or after the delay `pacing` gives (a fixed one
    /// with `debounceMs`). A newer schedule supersedes it and cancels it if it is running.
    pub(super) fn schedule(&self, path: PathBuf) {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let cancel = Arc::new(AtomicBool::new(false));
        let delay = {
            let mut st = self.lock();
            if let Some((_, old)) = st.scheduled.insert(path.clone(), (generation, cancel.clone())) {
                old.store(true, Ordering::Relaxed);
            }
            let (fixed, open) = (st.settings.debounce, st.docs.get(&path).is_some());
            let pacing = st.pacing.entry(path.clone()).or_default();
            if open {
                pacing.edited(Instant::now());
            }
            let delay = pacing.delay(fixed, open);
            pacing.in_flight = Some(generation);
            delay
        };
        let state = self.state.clone();
        let client = self.client.clone();
        let traced = self.traced.clone();
        let this = self.clone();
        tokio::spawn(async move {
            // Declared first, so dropped last: after every lock below is released.
            let in_flight = InFlight { state: state.clone(), path: path.clone(), generation };
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let began = Instant::now();
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
            let analysis = match whole.await {
                Ok(analysis) => Some(analysis),
                Err(worker::Failed::Panicked) => {
                    report_internal_error(&client, &path).await;
                    None
                }
                Err(worker::Failed::NotRun) => None,
            };
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
                st.pacing.entry(path.clone()).or_default().record(began.elapsed());
                // A file this analysis read changed after it started.
                let stale = analysis.files.iter().any(|f| f != &path && st.edited.get(f).is_some_and(|&at| at > started));
                let analysed = Analysed { version, text, analysis, started };
                // Published again with what the early publish could not hold: where an unknown
                // ended the analysis early, and the findings importers' analyses make in this
                // file (one that finished while this one ran is not published for it again).
                let late_hints =
                    published && (ended_early(&path, &analysed).next().is_some() || !importers_reaching(&st, &path).is_empty());
                let (notice, previous) = store_result(&mut st, &path, analysed);
                // The same diagnostics as published early: published once.
                let notice = match notice {
                    // The file's own diagnostics went out early: only the other files' now.
                    Notice::Publish(mut files) if published && !late_hints => {
                        let own = convert::uri_of(&path);
                        files.retain(|(uri, _, _)| Some(uri) != own.as_ref());
                        Notice::Publish(files)
                    }
                    notice => notice,
                };
                (notice, previous, stale)
            };
            traced.notify_waiters();
            notice.send(&client).await;
            this.send_status().await;
            // The previous version's analysis is freed once the diagnostics are out.
            drop(previous);
            if stale {
                this.schedule(path);
                return;
            }
            // The values pass is not an analysis the next edit should wait for.
            drop(in_flight);
            if settings.values && version >= 0 {
                values_pass(state, client, path, version, generation, cancel, settings).await;
            }
        });
    }

    /// Stamps a change of `path`'s text with a new generation (see `State::edited`). Called
    /// under the same lock as the change, so an analysis that snapshots the text after it
    /// reads a generation at least as new.
    pub(super) fn edited(&self, st: &mut State, path: &Path) {
        let at = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        st.edited.insert(path.to_path_buf(), at);
    }

    /// Files whose last analysis read `changed` (they import it), other than itself.
    pub(super) fn dependents(&self, changed: &Path) -> Vec<PathBuf> {
        let st = self.lock();
        st.results
            .iter()
            .filter(|(p, a)| p.as_path() != changed && a.analysis.files.iter().any(|f| f == changed))
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// Marks the end of an analysis of `path` in its `Pacing` (however the task ends), unless a
/// newer one took its place.
struct InFlight {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    generation: u64,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = st.pacing.get_mut(&self.path) {
            if p.in_flight == Some(self.generation) {
                p.in_flight = None;
            }
        }
    }
}

/// An engine panic (caught: the server goes on) is a tracelens bug: the user is asked, once
/// per file and session, to report it.
async fn report_internal_error(client: &Client, path: &Path) {
    static REPORTED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let first = {
        let mut reported = REPORTED.lock().unwrap_or_else(|p| p.into_inner());
        let first = !reported.iter().any(|p| p == path);
        if first {
            reported.push(path.to_path_buf());
        }
        first
    };
    let message = format!(
        "tracelens: internal error while analysing {} (a tracelens bug; please report it, with the file). Its diagnostics are not shown until the next edit.",
        path.display()
    );
    client.log_message(lsp::MessageType::ERROR, message.clone()).await;
    if first {
        client.show_message(lsp::MessageType::ERROR, message).await;
    }
}
