//! What the client is shown of an analysis: diagnostics as LSP data, with severities from
//! the settings, errors raised in imported modules shown at the importing line.

#[allow(unused_imports)]
use super::*;

/// Diagnostics of `path` from its analysis, as LSP data, with severities from the settings.
pub(super) fn lsp_diagnostics(st: &State, path: &Path, text: &str, diagnostics: &[LocatedDiagnostic]) -> Vec<lsp::Diagnostic> {
    // Indexing the text's lines costs about as much as the rest of a publish: only when needed.
    if !diagnostics.iter().any(|(d, _, _)| d.path == path) {
        return Vec::new();
    }
    lsp_diagnostics_in(st, path, &LineText::new(text), diagnostics)
}

fn lsp_diagnostics_in(st: &State, path: &Path, lines: &LineText, diagnostics: &[LocatedDiagnostic]) -> Vec<lsp::Diagnostic> {
    let enc = st.encoding;
    let mut out = Vec::new();
    for (d, loc, related) in diagnostics {
        if d.path != path {
            continue;
        }
        let Some(severity) = lsp_severity(&st.settings.project, d.code, d.severity) else { continue };
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
            severity: Some(severity),
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
pub(super) fn analysis_diagnostics(st: &State, path: &Path, a: &Analysed) -> Vec<lsp::Diagnostic> {
    let raised = features::raised_elsewhere(a, path);
    let own = a.analysis.diagnostics.iter().any(|(d, _, _)| d.path == path);
    let importers = importers_reaching(st, path);
    if !own && raised.is_empty() && importers.is_empty() && ended_early(path, a).next().is_none() {
        return Vec::new();
    }
    // One index of the text's lines for the whole publish.
    let lines = LineText::new(&a.text);
    let enc = st.encoding;
    let mut out = lsp_diagnostics_in(st, path, &lines, &a.analysis.diagnostics);
    for e in raised {
        let located = &a.analysis.diagnostics[e.diagnostic];
        let Some(severity) = lsp_severity(&st.settings.project, located.0.code, located.0.severity) else { continue };
        out.push(raised_elsewhere_diagnostic(path, &e, located, severity, &lines, enc));
    }
    out.extend(reached_from_importers(st, path, a, &importers, &lines));
    out.extend(stop_hints(st, path, a, &lines));
    out
}

/// The stored analyses of other files that found something in `path` (a `train_step` of
/// `path` traced with `main.py`'s arguments), in path order, each only if `path` has not
/// changed since it began: its locations in `path` would be stale.
pub(super) fn importers_reaching<'a>(st: &'a State, path: &Path) -> Vec<(&'a PathBuf, &'a Arc<Analysed>)> {
    let changed = st.edited.get(path).copied().unwrap_or(0);
    let mut out: Vec<_> = st
        .results
        .iter()
        .filter(|(p, o)| p.as_path() != path && o.started >= changed && o.analysis.diagnostics.iter().any(|(d, _, _)| d.path == path))
        .collect();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

/// A finding in `path` is shown in `path`, wherever the entry point that reached it is
/// (issue 18 point 6): the findings importers' analyses make in `path` that `path`'s own
/// analysis does not make at the same place with the same code, each once (the first
/// importer in path order), with the call in the importer that reached it as related
/// information ("reached from here").
fn reached_from_importers(
    st: &State,
    path: &Path,
    a: &Analysed,
    importers: &[(&PathBuf, &Arc<Analysed>)],
    lines: &LineText,
) -> Vec<lsp::Diagnostic> {
    let same = |(d, l, _): &LocatedDiagnostic, (e, m, _): &LocatedDiagnostic| d.code == e.code && l.span == m.span;
    let mut shown: Vec<&LocatedDiagnostic> = Vec::new();
    let mut out = Vec::new();
    for (importer, o) in importers {
        let name = importer.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let importer_lines = LineText::new(&o.text);
        for located in o.analysis.diagnostics.iter().filter(|(d, _, _)| d.path == path) {
            let own = a.analysis.diagnostics.iter().any(|mine| mine.0.path == path && same(mine, located));
            if own || shown.iter().any(|s| same(s, located)) || located.1.span.end as usize > a.text.len() {
                continue;
            }
            shown.push(located);
            let Some(mut d) = lsp_diagnostics_in(st, path, lines, std::slice::from_ref(located)).pop() else { continue };
            let entry = features::entry_into(o, importer, &located.1, located.0.code.as_str());
            let related = entry.and_then(|loc| {
                let uri = convert::uri_of(importer)?;
                let range = importer_lines.location_range(&loc, st.encoding);
                let message = format!("reached from {name}: the entry point there traces it");
                Some(lsp::DiagnosticRelatedInformation { location: lsp::Location { uri, range }, message })
            });
            if let Some(r) = related {
                d.related_information.get_or_insert_with(Vec::new).push(r);
            }
            if let Some(data) = d.data.as_mut().and_then(|v| v.as_object_mut()) {
                data.insert("reachedFrom".into(), serde_json::Value::String(importer.to_string_lossy().into_owned()));
            }
            out.push(d);
        }
    }
    out
}

/// The other files whose shown diagnostics may change when `path`'s analysis changes from
/// `previous` to `current`: those either finds something in, that have a stored analysis.
pub(super) fn reached_files(st: &State, path: &Path, current: &Analysed, previous: Option<&Analysed>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = current
        .analysis
        .diagnostics
        .iter()
        .chain(previous.into_iter().flat_map(|p| &p.analysis.diagnostics))
        .map(|(d, _, _)| d.path.clone())
        .filter(|p| p != path && st.results.contains_key(p))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The LSP severity of a finding: as configured, except that TL900 (a budget stopped the
/// analysis) is a hint, which editors show faintly, unless the user chose its severity. It
/// says what was not checked, not what is wrong.
pub(super) fn lsp_severity(project: &Config, code: Code, default: Severity) -> Option<lsp::DiagnosticSeverity> {
    let severity = project.severity_of(code, default)?;
    let chosen = project.severity.iter().any(|(c, _)| c == code.as_str() || c == code.name());
    Some(if code == Code::NotAnalysed && !chosen { lsp::DiagnosticSeverity::HINT } else { convert::severity(severity) })
}

/// Where an unknown value ended an entry point or a trace early (`FileAnalysis::stops` that
/// end one, in `path`), once per line: (location, message).
pub(super) fn ended_early<'a>(path: &'a Path, a: &'a Analysed) -> impl Iterator<Item = (&'a tracer_core::analysis::Location, String)> + 'a {
    const ENDED: &str = " not analysed past this point: ";
    let mut lines = std::collections::HashSet::new();
    a.analysis.stops.iter().filter_map(move |(loc, why)| {
        let loc = loc.as_ref().filter(|l| *l.path == *path)?;
        let (entry, why) = why.split_once(ENDED)?;
        lines.insert(loc.line).then(|| (loc, format!("not analysed past this point in {entry}: {why}")))
    })
}

/// TL900 hints at the lines where an unknown value ended an entry point or a trace early
/// (`ended_early`): the checks after them did not run.
fn stop_hints(st: &State, path: &Path, a: &Analysed, lines: &LineText) -> Vec<lsp::Diagnostic> {
    let Some(severity) = lsp_severity(&st.settings.project, Code::NotAnalysed, Severity::Info) else { return Vec::new() };
    ended_early(path, a)
        .filter(|(loc, _)| !ignored_on_line(lines, loc.line, Code::NotAnalysed))
        .map(|(loc, message)| lsp::Diagnostic {
            range: lines.location_range(loc, st.encoding),
            severity: Some(severity),
            code: Some(lsp::NumberOrString::String(Code::NotAnalysed.as_str().to_string())),
            source: Some("tracelens".into()),
            message,
            data: Some(serde_json::json!({ "name": Code::NotAnalysed.name(), "start": loc.span.start, "end": loc.span.end })),
            ..Default::default()
        })
        .collect()
}

/// Whether line `line` (1-based) of the text silences `code` (`# tracelens: ignore[TL900]`, or
/// `# tracelens: ignore` alone), as the engine reads the comment for its own findings
/// (`apply_ignore_comments`: the line as its index has it, up to the next `\n`). Found through
/// the publish's line index: walking the text's lines for each hint made a publish quadratic
/// (the LSP bench's 2,000-line module, stopped at some 60 places when its analysis ran out of
/// time under callgrind, walked about 84,000 lines per publish: 16M instructions).
fn ignored_on_line(lines: &LineText, line: u32, code: Code) -> bool {
    let Some(line) = Some(line.saturating_sub(1)).filter(|&l| (l as usize) < lines.index.line_count()) else { return false };
    let start = lines.line_start(line) as usize;
    let rest = lines.text.get(start..).unwrap_or("");
    let l = rest.split('\n').next().unwrap_or("");
    let Some((_, rest)) = l.split_once("# tracelens: ignore") else { return false };
    match rest.strip_prefix('[') {
        Some(codes) => codes.split(']').next().unwrap_or("").split(',').any(|c| c.trim() == code.as_str() || c.trim() == code.name()),
        None => true,
    }
}
/// The diagnostic standing in `path` for an error raised in another file (`RaisedElsewhere`):
/// its message, where it is raised, and that place as related information.
pub(super) fn raised_elsewhere_diagnostic(
    path: &Path,
    e: &features::RaisedElsewhere,
    (d, loc, _): &tracer_core::analysis::LocatedDiagnostic,
    severity: lsp::DiagnosticSeverity,
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
        severity: Some(severity),
        code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
        code_description: None,
        source: Some("tracelens".into()),
        message: format!("{}\n(raised in {shown}:{} under the call on this line)", d.message, loc.line),
        related_information: related,
        tags: None,
        data: Some(serde_json::json!({ "name": d.code.name(), "raisedIn": shown, "raisedAt": loc.line })),
    }
}

pub(super) fn publish_params(st: &State, path: &Path, a: &Analysed) -> Option<(Uri, Vec<lsp::Diagnostic>, Option<i32>)> {
    let uri = convert::uri_of(path)?;
    let version = if a.version >= 0 { Some(a.version) } else { None };
    Some((uri, analysis_diagnostics(st, path, a), version))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The comment silences a TL900 hint on its own line only, by code or by name, or alone.
    #[test]
    fn an_ignore_comment_silences_the_hint_on_its_line() {
        let text = "x = f()\r\ny = g()  # tracelens: ignore[TL900]\nz = h()  # tracelens: ignore[TL201]\nw = k()  # tracelens: ignore\n";
        let lines = LineText::new(text);
        let ignored: Vec<bool> = (1..=6).map(|line| ignored_on_line(&lines, line, Code::NotAnalysed)).collect();
        assert_eq!(ignored, [false, true, false, true, false, false]);
        let by_name = LineText::new("a = 1\nb = c()  # tracelens: ignore[TL201, not-analysed]\n");
        assert!(ignored_on_line(&by_name, 2, Code::NotAnalysed));
    }
}
