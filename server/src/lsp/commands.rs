//! Commands (`tracelens.repro`, `tracelens.openReproducer`) and reproducer links: writing a
//! reproducer, finding the reproducer line that stands for a source line, and back.

#[allow(unused_imports)]
use super::*;

impl Backend {
    /// `tracelens.repro` [uri, 0-based line, {show}?]: writes the reproducer of the error at that
    /// line to `<workspace folder>/<reproducer folder>/<file>_line<N>.py` and answers
    /// `{uri, path}`; with `show`, also asks the client to open it. `{message}` says why when
    /// there is no reproducer at that line (with `show`, the client is shown it too).
    /// Every trace of `function` in the document as analysed in `a`, staged out: the text is
    /// traced again, collecting that function's traces.
    pub(super) async fn function_reproducer(&self, path: &Path, a: &Arc<Analysed>, shown: &str, function: &str) -> Result<String, String> {
        let f2 = function.to_string();
        let collect = move |config: &mut tracer_core::AnalysisConfig| {
            config.reproducers.skip = true;
            config.reproducers.functions = vec![f2];
        };
        let analysis = self.reanalyse(path, a, collect).await;
        match analysis {
            Some(analysis) => crate::check::function_reproducer_text(&analysis, path, shown, function).map(|(text, _)| text),
            None => Err(format!("{shown}: internal error while staging out {function}")),
        }
    }

    /// `tracelens.repro` [uri, 0-based line, {show}?]: writes the reproducer of the error at that
    /// line to `<workspace folder>/<reproducer folder>/<file>_line<N>.py` and answers
    /// `{uri, path}`; with `show`, also asks the client to open it. `{message}` says why when
    /// there is no reproducer at that line (with `show`, the client is shown it too).
    pub(super) async fn write_reproducer(&self, uri: Option<Uri>, line: u32, show: bool) -> RpcResult<Option<Json>> {
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

    /// `tracelens.graph` [uri, line?, {function}?]: the document's traced computation as a
    /// dataflow graph (`crate::graph`): `{dot, svg, error}`, `svg` null and `error` saying why
    /// when Graphviz's `dot` cannot draw it; `{message}` when the file traced nothing. The
    /// equations on the line of a NaN/Inf the values pass found (TL301) are marked.
    pub(super) async fn trace_graph(&self, uri: Option<Uri>, function: Option<String>) -> RpcResult<Option<Json>> {
        let Some((path, a, _)) = (match uri.as_ref() {
            Some(u) => self.analysed_current(u).await,
            None => None,
        }) else {
            return Ok(None);
        };
        let graphs = |config: &mut tracer_core::AnalysisConfig| {
            config.trace_graphs = true;
            config.reproducers.skip = true;
        };
        let Some(analysis) = self.reanalyse(&path, &a, graphs).await else {
            return Ok(None);
        };
        let options = crate::graph::GraphOptions { function, nan_line: crate::graph::first_nan_line(&a.analysis, &path) };
        let dot = crate::graph::dot(&analysis, &path, &options);
        if !analysis.functions.iter().any(|f| *f.location.path == *path && f.traces.iter().any(|t| t.graph.is_some())) {
            return Ok(Some(serde_json::json!({ "message": "nothing in this file was traced" })));
        }
        let dot2 = dot.clone();
        let svg = tokio::task::spawn_blocking(move || crate::graph::svg(&dot2)).await.unwrap_or_else(|e| Err(e.to_string()));
        let (svg, error) = match svg {
            Ok(svg) => (Json::String(svg), Json::Null),
            Err(why) => (Json::Null, Json::String(why)),
        };
        Ok(Some(serde_json::json!({ "dot": dot, "svg": svg, "error": error })))
    }

    /// The document as analysed in `a`, traced again on a blocking thread with the
    /// configuration `adjust` makes (what an ordinary analysis leaves out: jaxpr text, graphs).
    pub(super) async fn reanalyse(
        &self,
        path: &Path,
        a: &Arc<Analysed>,
        adjust: impl FnOnce(&mut tracer_core::AnalysisConfig) + Send + 'static,
    ) -> Option<FileAnalysis> {
        let (overlay, roots, settings) = {
            let st = self.lock();
            (st.docs.snapshot(), st.roots.clone(), st.settings.clone())
        };
        let (p2, text) = (path.to_path_buf(), a.text.clone());
        let cancel = Arc::new(AtomicBool::new(false));
        tokio::task::spawn_blocking(move || analyse_blocking(p2, text, overlay, roots, settings, cancel, adjust)).await.ok().flatten()
    }

    /// Asks the client to open `uri` (at `line`, 0-based), when it can.
    pub(super) async fn show(&self, uri: Uri, line: Option<u32>) {
        if !self.lock().show_document {
            return;
        }
        let selection =
            line.map(|l| lsp::Range { start: lsp::Position { line: l, character: 0 }, end: lsp::Position { line: l, character: 0 } });
        let show = lsp::ShowDocumentParams { uri, external: None, take_focus: Some(true), selection };
        let _ = self.client.show_document(show).await;
    }

    /// The workspace folder of `path` (or its folder) and the reproducer folder in it.
    pub(super) fn reproducer_folder(&self, path: &Path) -> (PathBuf, PathBuf) {
        let st = self.lock();
        let root = st.roots.iter().find(|r| path.starts_with(r)).cloned();
        let root = root.unwrap_or_else(|| path.parent().map(Path::to_path_buf).unwrap_or_default());
        let folder = root.join(&st.settings.reproducer_folder);
        (root, folder)
    }

    /// The reproducer lines that stand for lines of `source`, newest reproducer first (reads
    /// the reproducer folder on a blocking thread).
    pub(super) async fn reproducer_lines(&self, source: &Path) -> Vec<reproducer_links::ReproducerLine> {
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
    pub(super) async fn open_reproducer(&self, uri: Option<Uri>, line: u32, show: bool) -> RpcResult<Option<Json>> {
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

    /// Where the reproducer links of `text` (the document at `path`) lead: (link, source file).
    pub(super) async fn resolved_links(&self, path: &Path, text: &str) -> Vec<(reproducer_links::Link, PathBuf)> {
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
    pub(super) async fn reproducer_definition(&self, uri: &Uri, line: u32) -> Option<lsp::Location> {
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
}

/// The code action "Write a pure-JAX reproducer of CODE": `tracelens.repro` on `line` (1-based).
pub(super) fn reproducer_action(uri: &Uri, line: u32, code: &str, diagnostic: Option<lsp::Diagnostic>) -> lsp::CodeActionOrCommand {
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
