//! Output formats: ruff-like text with code frames (annotate-snippets), JSON and SARIF for tools,
//! and the `trace` report.

use std::fmt::Write as _;

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
use serde_json::{json, Value};
use tracer_core::analysis::FileAnalysis;
use tracer_core::diagnostics::Severity;

use crate::check::Finding;
use crate::files::read_source;

pub fn findings_json(findings: &[Finding]) -> Value {
    Value::Array(
        findings
            .iter()
            .map(|f| {
                json!({
                    "path": f.path,
                    "code": f.code,
                    "name": f.name,
                    "severity": f.severity.as_str(),
                    "line": f.location.line,
                    "column": f.location.column,
                    "end_line": f.location.end_line,
                    "end_column": f.location.end_column,
                    "message": f.message,
                    "related": f.related.iter().map(|(p, l, m)| json!({"path": p, "line": l.line, "column": l.column, "message": m})).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

pub fn findings_sarif(findings: &[Finding]) -> Value {
    let mut rules: Vec<&str> = findings.iter().map(|f| f.code).collect();
    rules.sort_unstable();
    rules.dedup();
    json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {"name": "tracelens", "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.iter().map(|r| json!({"id": r})).collect::<Vec<_>>()}},
            "results": findings.iter().map(|f| json!({
                "ruleId": f.code,
                "level": match f.severity { Severity::Error => "error", Severity::Warning => "warning", Severity::Info => "note" },
                "message": {"text": f.message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": f.path},
                    "region": {"startLine": f.location.line, "startColumn": f.location.column,
                               "endLine": f.location.end_line, "endColumn": f.location.end_column}
                }}],
            })).collect::<Vec<_>>(),
        }]
    })
}

/// `stdin`: the path shown and the text of a source read from standard input, whose code
/// frames come from that text rather than the disk.
pub fn findings_text(findings: &[Finding], color: bool, files: usize, stdin: Option<(&str, &str)>) -> String {
    let mut out = findings_frames_with(findings, color, stdin);
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    let warnings = findings.iter().filter(|f| f.severity == Severity::Warning).count();
    let _ = writeln!(
        out,
        "Checked {files} file{}: {errors} error{}, {warnings} warning{}.",
        if files == 1 { "" } else { "s" },
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    );
    out
}

/// Each finding with its code frame (ruff-like), without the summary line.
pub fn findings_frames(findings: &[Finding], color: bool) -> String {
    findings_frames_with(findings, color, None)
}

fn findings_frames_with(findings: &[Finding], color: bool, stdin: Option<(&str, &str)>) -> String {
    let renderer = if color { Renderer::styled() } else { Renderer::plain() };
    let mut out = String::new();
    for f in findings {
        let source = match stdin {
            Some((shown, text)) if shown == f.path => text.to_string(),
            _ => read_source(std::path::Path::new(&f.path)).or_else(|| read_source(&f.location.path)).unwrap_or_default(),
        };
        let (first_line, last_line) = (f.location.line.saturating_sub(1) as usize, f.location.end_line.saturating_sub(1) as usize);
        let lines: Vec<&str> = source.split_inclusive('\n').collect();
        let excerpt: String = lines.get(first_line..=last_line.min(lines.len().saturating_sub(1))).map(|l| l.concat()).unwrap_or_default();
        let excerpt_start: usize = lines.iter().take(first_line).map(|l| l.len()).sum();
        let start = (f.location.span.start as usize).saturating_sub(excerpt_start).min(excerpt.len());
        let end = (f.location.span.end as usize).saturating_sub(excerpt_start).clamp(start, excerpt.len().max(start));
        let (excerpt, start, end) = clip_excerpt(&excerpt, start, end);
        let level = match f.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Info => Level::INFO,
        };
        let (title, rest) = match f.message.split_once('\n') {
            Some((t, r)) => (t.to_string(), Some(r.to_string())),
            None => (f.message.clone(), None),
        };
        let label = format!("{} {}", f.code, f.name);
        let mut group = level.primary_title(title).id(f.code).element(
            Snippet::source(excerpt.as_str())
                .line_start(f.location.line as usize)
                .path(f.path.as_str())
                .annotation(AnnotationKind::Primary.span(start..end.max(start)).label(label.as_str())),
        );
        if let Some(rest) = &rest {
            group = group.element(Level::NOTE.message(rest.as_str()));
        }
        let related: Vec<String> = f.related.iter().map(|(p, l, m)| format!("{p}:{}:{}: {m}", l.line, l.column)).collect();
        for r in &related {
            group = group.element(Level::NOTE.message(r.as_str()));
        }
        let _ = writeln!(out, "{}\n", renderer.render(&[group]));
    }
    out
}

/// Longest excerpt line shown whole; a longer one shows a window around the finding.
const WIDEST_LINE: usize = 240;
/// Most lines of an excerpt; a finding over more shows its first line.
const MOST_LINES: usize = 12;

/// The part of `excerpt` a terminal shows for the span `start..end` (byte offsets in it),
/// with the span's offsets in that part: a 10 MB line or a whole module is never drawn.
fn clip_excerpt(excerpt: &str, start: usize, end: usize) -> (String, usize, usize) {
    let mut excerpt = excerpt;
    let mut end = end;
    if excerpt.lines().count() > MOST_LINES {
        let first = excerpt.split_inclusive('\n').next().unwrap_or("");
        excerpt = first;
        end = end.min(first.trim_end_matches(['\n', '\r']).len()).max(start.min(first.len()));
    }
    if excerpt.lines().all(|l| l.len() <= WIDEST_LINE) {
        return (excerpt.to_string(), start, end);
    }
    // A window of the span's first line: a little before the span, and at most the widest.
    let line_start = excerpt[..start.min(excerpt.len())].rfind('\n').map_or(0, |i| i + 1);
    let line_end = excerpt[line_start..].find('\n').map_or(excerpt.len(), |i| line_start + i);
    let floor = |mut i: usize| {
        while !excerpt.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let from = floor(start.saturating_sub(WIDEST_LINE / 4).max(line_start));
    let to = floor((from + WIDEST_LINE).min(line_end));
    let (before, after) = (if from > line_start { "…" } else { "" }, if to < line_end { "…" } else { "" });
    let shown = format!("{before}{}{after}", &excerpt[from..to]);
    let shown_len = shown.len();
    let shift = |i: usize| (i.clamp(from, to) - from + before.len()).min(shown_len);
    let (start, end) = (shift(start), shift(end.max(start)));
    (shown, start, end)
}

/// GitHub Actions workflow commands, one a finding: `::error file=F,line=L,col=C,endLine=..,
/// endColumn=..,title=TL104 shape-mismatch::message` (`::warning` for warnings, `::notice` for
/// infos), escaped as GitHub documents and its toolkit does (`%`, CR and LF everywhere, `:`
/// and `,` in properties too), so that each shows at its line in a pull request.
pub fn findings_github(findings: &[Finding]) -> String {
    let data = |s: &str| s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    let property = |s: &str| data(s).replace(':', "%3A").replace(',', "%2C");
    let mut out = String::new();
    for f in findings {
        let command = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let l = &f.location;
        let _ = writeln!(
            out,
            "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}",
            property(&f.path),
            l.line,
            l.column,
            l.end_line,
            l.end_column,
            property(&format!("{} {}", f.code, f.name)),
            data(&f.message)
        );
    }
    out
}

/// Each aval after its leaf's path when the trace knows them (`params['w1']: f32[4,3]`).
fn named(paths: &[String], avals: &[String]) -> Vec<String> {
    if paths.len() != avals.len() {
        return avals.to_vec();
    }
    paths.iter().zip(avals).map(|(p, a)| format!("{p}: {a}")).collect()
}

pub fn trace_text(a: &FileAnalysis, path: &str) -> String {
    let mut out = String::new();
    if a.functions.is_empty() {
        let _ = writeln!(out, "{path}: no traced functions");
    }
    for f in &a.functions {
        // A function of another module (traced from this file's entry points) is shown where it is.
        let here = std::path::Path::new(path);
        let shown = if *f.location.path == *here || here.ends_with(&*f.location.path) {
            path.to_string()
        } else {
            let cwd = std::env::current_dir().unwrap_or_default();
            f.location.path.strip_prefix(&cwd).unwrap_or(&f.location.path).display().to_string()
        };
        // A user's function run as a library function's body: JAX traces (and names) that one.
        let through = f.through.as_ref().map(|t| format!(" (as the library's {t})")).unwrap_or_default();
        let _ = writeln!(out, "{}({}) at {}:{}{through}  traced {}×", f.transform, f.name, shown, f.location.line, f.traces.len());
        for (i, t) in f.traces.iter().enumerate() {
            let call = t.call.as_ref().map(|c| format!("line {}", c.line)).unwrap_or_else(|| "?".into());
            let outputs = match &t.outputs {
                Some(o) => format!("({})", named(&t.out_paths, o).join(", ")),
                // Traced with unknown arguments, a trace ends where an unknown stops it.
                None if t.unknown_end || (t.route != "called" && t.route != "annotations") => "not known".to_string(),
                None => "raised".to_string(),
            };
            let route = if t.route == "called" { String::new() } else { format!("  (route: {})", t.route) };
            // Each argument leaf by its path when the trace knows them (`params['w1']: f32[4,3]`).
            let args = named(&t.arg_paths, &t.args);
            let _ = writeln!(out, "  trace {} from {call}: ({}) -> {outputs}  [{}]{route}", i + 1, args.join(", "), t.cause);
            // A tf.function's concrete function, as `pretty_printed_concrete_signatures()` prints it.
            if let Some(params) = &t.input_parameters {
                let _ = writeln!(out, "    Input Parameters:");
                for p in params {
                    let _ = writeln!(out, "      {} ({}): {}", p.name, p.kind, p.spec);
                }
            }
            for line in t.jaxpr.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
        out.push('\n');
    }
    out
}
