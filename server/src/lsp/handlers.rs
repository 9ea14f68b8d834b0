//! The protocol's handlers: initialize, text synchronisation, and the features (hover, inlay
//! hints, code lenses, code actions, definitions, links, pulled diagnostics, commands).

#[allow(unused_imports)]
use super::*;

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
            st.work_done_progress = params.capabilities.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false);
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
                    commands: vec![
                        "tracelens.trace".into(),
                        "tracelens.graph".into(),
                        "tracelens.repro".into(),
                        "tracelens.openReproducer".into(),
                    ],
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
            hover::hover(&a, &path, offset).map(|(text, (s, e))| lsp::Hover {
                contents: lsp::HoverContents::Markup(lsp::MarkupContent { kind: lsp::MarkupKind::Markdown, value: text }),
                range: Some(lines.range(s, e, enc)),
            })
        })
    }

    async fn inlay_hint(&self, params: lsp::InlayHintParams) -> RpcResult<Option<Vec<lsp::InlayHint>>> {
        let (enabled, kinds) = {
            let st = self.lock();
            (st.settings.inlay_hints, st.settings.inlay_kinds)
        };
        if !enabled {
            return Ok(None);
        }
        let Some((path, a, enc)) = self.analysed_current(&params.text_document.uri).await else { return Ok(None) };
        guarded("inlay hints", || {
            let lines = LineText::new(&a.text);
            let range = (lines.offset(params.range.start, enc), lines.offset(params.range.end, enc));
            Some(
                hover::inlay_hints(&a, &path, range, kinds)
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
                if a.analysis.reproducers.iter().any(|r| r.path == path && r.is_at(loc.line)) {
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
        if params.command == "tracelens.graph" {
            let function = params.arguments.get(2).and_then(|o| o.get("function")).and_then(Json::as_str).map(str::to_string);
            return self.trace_graph(uri, function).await;
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
        let Some(analysis) = self.reanalyse(&path, &a, |config| config.skip_jaxpr_text = false).await else {
            return Ok(None);
        };
        guarded("tracelens.trace", || {
            let f = analysis
                .functions
                .iter()
                .filter(|f| *f.location.path == *path && f.location.line <= line)
                .max_by_key(|f| f.location.line)?;
            let mut text = hover::function_summary(f);
            for (i, t) in f.traces.iter().enumerate() {
                text.push_str(&format!("\n\n# trace {}\n{}", i + 1, t.jaxpr));
            }
            Some(Json::String(text))
        })
    }
}
