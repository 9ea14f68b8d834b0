//! `tracelens check` and `tracelens trace`: analyse files in parallel, print results.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rayon::prelude::*;
use serde_json::json;
use tracer_core::analysis::{FileAnalysis, Location};
use tracer_core::diagnostics::Severity;
use tracer_core::jax::Route;
use tracer_core::{analyze_file, AnalysisConfig};

pub(crate) use crate::analysis_stack::{on_analysis_stack, ANALYSIS_STACK};
use crate::config::Config;
use crate::files::{python_files, read_source, FsLoader};
use crate::render;
use crate::Format;

/// One reported diagnostic, with paths relative to the current directory.
pub struct Finding {
    pub path: String,
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    pub location: Location,
    pub message: String,
    pub related: Vec<(String, Location, String)>,
}

pub(crate) fn config_for(path: &Path, project: &Config) -> AnalysisConfig {
    let mut roots = vec![std::env::current_dir().unwrap_or_default()];
    if let Some(root) = project.source.as_ref().and_then(|p| p.parent()) {
        roots.push(root.to_path_buf());
    }
    project.analysis(path, roots)
}

pub(crate) fn relative(p: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let abs = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
    abs.strip_prefix(&cwd).map(|r| r.to_path_buf()).unwrap_or(abs).to_string_lossy().to_string()
}

/// What a command shows of an analysis: `check` only its findings, so it makes no
/// reproducer (an engine run per error) and prints no traced body; `trace` and `repro` do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shown {
    Findings,
    Everything,
    /// The traces as graphs (`trace --format dot|svg`): no reproducers, no jaxpr text.
    Graphs,
}

/// Analyses one file, in values mode when `values` (`check --values`), making reproducers as
/// `repro` asks; a panic inside the engine becomes an internal-error finding.
fn analyze_path_with(path: &Path, project: &Config, values: bool, repro: &ReproOptions, shown: Shown) -> Result<FileAnalysis, String> {
    if let Some(why) = crate::files::notebook_refusal(path) {
        return Err(why);
    }
    let text = read_source(path).ok_or_else(|| format!("{}: cannot read the file", path.display()))?;
    analyze_source(path, &text, project, values, repro, shown)
}

/// `analyze_path_with` on a source already read (`check --stdin-filename`).
fn analyze_source(
    path: &Path,
    text: &str,
    project: &Config,
    values: bool,
    repro: &ReproOptions,
    shown: Shown,
) -> Result<FileAnalysis, String> {
    let loader = FsLoader::default();
    let mut config = config_for(path, project);
    config.values = values;
    if shown == Shown::Graphs {
        config.trace_graphs = true;
        config.skip_jaxpr_text = true;
        config.reproducers.skip = true;
    }
    if shown == Shown::Findings {
        config.skip_jaxpr_text = true;
        config.reproducers.skip = true;
        // What the program prints is shown only to debug tracelens.
        config.stdout_unread = std::env::var_os("TRACELENS_DEBUG").is_none();
        config.skip_hover_values = true;
    }
    if let Some(n) = repro.fake_array_threshold {
        config.reproducers.fake_array_threshold = n;
    }
    config.reproducers.functions = repro.function.iter().cloned().collect();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| analyze_file(path, text, &loader, &config)))
        .map_err(|_| format!("{}: internal error in the tracelens engine (please report it)", path.display()))
}

pub(crate) fn pool() -> rayon::ThreadPool {
    match rayon::ThreadPoolBuilder::new().stack_size(ANALYSIS_STACK).build() {
        Ok(p) => p,
        Err(_) => rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap_or_else(|_| std::process::abort()),
    }
}

/// `tracelens check`'s flags besides the paths.
pub struct CheckOptions {
    pub format: Format,
    pub color: bool,
    pub values: bool,
    /// `--select`: replaces the project's `select`.
    pub select: Option<Vec<String>>,
    /// `--ignore`: added to the project's `ignore`.
    pub ignore: Vec<String>,
    /// `--stdin-filename`: the one source is standard input, reported as this path.
    pub stdin_filename: Option<PathBuf>,
    /// `--exit-zero`: findings never make the status 1.
    pub exit_zero: bool,
}

/// Whether `--select`/`--ignore` name a code (`TL104`), a prefix of codes (`TL1`) or a name
/// (`shape-mismatch`), as pyproject.toml's lists do.
fn known_selector(s: &str) -> bool {
    !s.is_empty() && tracer_core::diagnostics::Code::ALL.iter().any(|c| c.as_str().starts_with(s) || c.name() == s)
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

pub fn run_check(paths: Vec<PathBuf>, opts: CheckOptions) -> ExitCode {
    if let Some(bad) = opts.select.iter().flatten().chain(&opts.ignore).find(|s| !known_selector(s)) {
        return usage_error(&format!("--select/--ignore: {bad:?} is no tracelens code, prefix of codes or name (see docs/diagnostics/)"));
    }
    let stdin_named = opts.stdin_filename.as_ref().map(|name| (std::env::current_dir().unwrap_or_default().join(name), name.clone()));
    if stdin_named.is_some() && !(paths.is_empty() || paths == [PathBuf::from("-")]) {
        return usage_error("--stdin-filename checks the source read from standard input: give no paths (or `-`)");
    }
    let paths = if paths.is_empty() { vec![PathBuf::from(".")] } else { paths };
    let files = match &stdin_named {
        Some((path, _)) => vec![path.clone()],
        None => match python_files(&paths) {
            Ok(f) => f,
            Err(e) => return usage_error(&e.to_string()),
        },
    };
    let discover_from = stdin_named.as_ref().map_or(&paths[0], |(path, _)| path);
    let mut project = match Config::discover(discover_from) {
        Ok(c) => c,
        Err(e) => return usage_error(&e),
    };
    if opts.select.is_some() {
        project.select = opts.select.clone();
    }
    project.ignore.extend(opts.ignore.iter().cloned());
    let (format, color, values) = (opts.format, opts.color, opts.values);
    let mut stdin_text = String::new();
    let results: Vec<(PathBuf, Result<FileAnalysis, String>)> = match &stdin_named {
        Some((path, _)) => {
            let mut bytes = Vec::new();
            if let Err(e) = std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes) {
                return usage_error(&format!("cannot read standard input: {e}"));
            }
            let Ok(text) = String::from_utf8(bytes) else { return usage_error("standard input is not UTF-8 text") };
            stdin_text = text;
            let analysis =
                on_analysis_stack(|| analyze_source(path, &stdin_text, &project, values, &ReproOptions::default(), Shown::Findings));
            vec![(path.clone(), analysis)]
        }
        None if files.len() == 1 => files
            .iter()
            .map(|f| (f.clone(), on_analysis_stack(|| analyze_path_with(f, &project, values, &ReproOptions::default(), Shown::Findings))))
            .collect(),
        None => pool().install(|| {
            files
                .par_iter()
                .map(|f| (f.clone(), analyze_path_with(f, &project, values, &ReproOptions::default(), Shown::Findings)))
                .collect()
        }),
    };
    // A module that several analysed files import is analysed from each of them: its
    // findings are reported once, from an analysis that traced the function around it with
    // known arguments when one did (an importer calling `train_step` with its batch says
    // more than the module's own trace of it with unknown arguments), then from the
    // module's own analysis, else from the first importer's (files are in path order).
    let mut found: Vec<(bool, bool, usize, Finding)> = Vec::new();
    let mut internal = false;
    for (index, (file, result)) in results.iter().enumerate() {
        match result {
            Ok(a) => {
                if std::env::var_os("TRACELENS_DEBUG").is_some() {
                    eprint!("{}", a.stdout);
                    for (loc, why) in &a.stops {
                        let at = loc.as_ref().map(|l| format!("{}:{}", relative(&l.path), l.line)).unwrap_or_default();
                        eprintln!("tracelens: {at}: {why}");
                    }
                }
                let analysed = relative(file);
                found.extend(a.diagnostics.iter().filter_map(|located| {
                    let f = finding_of(located, &project)?;
                    let (d, loc, _) = located;
                    Some((arguments_unknown_at(a, &d.path, loc.line), f.path != analysed, index, f))
                }));
            }
            Err(e) => {
                eprintln!("error: {e}");
                internal = true;
            }
        }
    }
    // The source from standard input is reported under the name given.
    if let Some((path, name)) = &stdin_named {
        let shown = relative(path);
        for (_, _, _, f) in found.iter_mut().filter(|(_, _, _, f)| f.path == shown) {
            f.path = name.to_string_lossy().into_owned();
        }
    }
    // Stable: among equal places, known arguments first, then the file's own analysis,
    // then analysis order.
    found.sort_by(|(a_guessed, a_other, a_index, a), (b_guessed, b_other, b_index, b)| {
        (&a.path, a.location.line, a.location.column, a.code, a_guessed, a_other, a_index).cmp(&(
            &b.path,
            b.location.line,
            b.location.column,
            b.code,
            b_guessed,
            b_other,
            b_index,
        ))
    });
    // Within one analysis two messages at one place are two findings; across analyses the
    // same code at the same span is one finding, whatever its message counts (TL201's "ran
    // N times" depends on the entry point).
    found.dedup_by(|(_, _, later_index, later), (_, _, kept_index, kept)| {
        later.path == kept.path
            && later.location == kept.location
            && later.code == kept.code
            && (later.message == kept.message || later_index != kept_index)
    });
    let findings: Vec<Finding> = found.into_iter().map(|(_, _, _, f)| f).collect();
    let out = match format {
        Format::Json => serde_json::to_string_pretty(&render::findings_json(&findings)).unwrap_or_default() + "\n",
        Format::Sarif => serde_json::to_string_pretty(&render::findings_sarif(&findings)).unwrap_or_default() + "\n",
        Format::Github => render::findings_github(&findings),
        Format::Text => {
            let shown = stdin_named.as_ref().map(|(_, name)| name.to_string_lossy().into_owned());
            render::findings_text(&findings, color, files.len(), shown.as_deref().map(|s| (s, stdin_text.as_str())))
        }
    };
    let _ = std::io::stdout().write_all(out.as_bytes());
    if internal {
        return ExitCode::from(2);
    }
    if !opts.exit_zero && findings.iter().any(|f| f.severity == Severity::Error) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Whether `a` traced the function around line `line` of `path` (the nearest traced `def`
/// at or above it) only with arguments it did not know (the unknown-arguments and uncalled
/// routes): a finding there is the one an analysis with known arguments states more exactly.
fn arguments_unknown_at(a: &FileAnalysis, path: &Path, line: u32) -> bool {
    let around = a.functions.iter().filter(|f| *f.location.path == *path && f.location.line <= line).max_by_key(|f| f.location.line);
    let guessed = |route: &str| [Route::UnknownArguments, Route::Uncalled].iter().any(|r| r.label() == route);
    around.is_some_and(|f| !f.traces.is_empty() && f.traces.iter().all(|t| guessed(t.route)))
}

/// The findings the project's configuration keeps, with paths relative to the current folder.
pub fn findings_of(diagnostics: &[tracer_core::analysis::LocatedDiagnostic], project: &Config) -> Vec<Finding> {
    diagnostics.iter().filter_map(|located| finding_of(located, project)).collect()
}

/// One diagnostic as a finding, unless the project's configuration drops its code.
fn finding_of((d, loc, rel): &tracer_core::analysis::LocatedDiagnostic, project: &Config) -> Option<Finding> {
    let severity = project.severity_of(d.code, d.severity)?;
    Some(Finding {
        path: relative(&d.path),
        code: d.code.as_str(),
        name: d.code.name(),
        severity,
        location: loc.clone(),
        message: d.message.clone(),
        related: d.related.iter().zip(rel).map(|(r, l)| (relative(&r.path), l.clone(), r.message.clone())).collect(),
    })
}

/// `trace` and `repro`: one file, with the project's configuration; exit 2 (said on stderr)
/// when it cannot be analysed.
fn analyze_one(file: &Path, repro: &ReproOptions) -> Result<FileAnalysis, ExitCode> {
    analyze_one_with(file, false, repro, Shown::Everything)
}

fn analyze_one_with(file: &Path, values: bool, repro: &ReproOptions, shown: Shown) -> Result<FileAnalysis, ExitCode> {
    if !file.is_file() {
        eprintln!("error: {}: no such file", file.display());
        return Err(ExitCode::from(2));
    }
    let project = Config::discover(file).unwrap_or_default();
    on_analysis_stack(|| analyze_path_with(file, &project, values, repro, shown)).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

/// A trace's JSON with, for a `tf.function` trace whose concrete signature tracelens renders,
/// `input_parameters` (an addition to the contract's fields: each parameter's name, kind and
/// type as TensorFlow prints them).
fn trace_json(t: &tracer_core::analysis::Trace, mut trace: serde_json::Value) -> serde_json::Value {
    if let Some(params) = &t.input_parameters {
        trace["input_parameters"] =
            params.iter().map(|p| json!({"name": p.name, "kind": p.kind, "type": p.spec})).collect::<Vec<_>>().into();
    }
    trace
}

pub fn run_trace(file: PathBuf, format: crate::TraceFormat, function: Option<String>, values: bool) -> ExitCode {
    use crate::TraceFormat;
    let graphs = matches!(format, TraceFormat::Dot | TraceFormat::Svg);
    let shown = if graphs { Shown::Graphs } else { Shown::Everything };
    let analysis = match analyze_one_with(&file, values, &ReproOptions::default(), shown) {
        Ok(a) => a,
        Err(code) => return code,
    };
    if graphs {
        // The graph names the analysed file's own traces: the path the analysis gave it.
        let path = analysis.files.first().cloned().unwrap_or_else(|| file.clone());
        let options = crate::graph::GraphOptions { nan_line: crate::graph::first_nan_line(&analysis, &path), function };
        let dot = crate::graph::dot(&analysis, &path, &options);
        let out = match format {
            TraceFormat::Svg => match crate::graph::svg(&dot) {
                Ok(svg) => svg,
                Err(why) => {
                    eprintln!("error: {why}");
                    return ExitCode::from(2);
                }
            },
            _ => dot,
        };
        let _ = std::io::stdout().write_all(out.as_bytes());
        let raised = analysis.diagnostics.iter().any(|(d, _, _)| d.severity == Severity::Error);
        return if raised { ExitCode::from(1) } else { ExitCode::SUCCESS };
    }
    let json_out = matches!(format, TraceFormat::Json);
    let out = if json_out {
        let functions: Vec<serde_json::Value> = analysis
            .functions
            .iter()
            .map(|f| {
                let mut function = json!({
                    "name": f.name,
                    "path": relative(&f.location.path),
                    "line": f.location.line,
                    "transform": f.transform,
                    "traces": f.traces.iter().map(|t| trace_json(t, json!({
                        "call_line": t.call.as_ref().map(|c| c.line),
                        "args": t.args,
                        "arg_paths": t.arg_paths,
                        "outputs": t.outputs,
                        "out_paths": t.out_paths,
                        "cause": t.cause,
                        "route": t.route,
                        "jaxpr": t.jaxpr,
                        "values": t.values.iter().filter(|v| v.assigned && !v.pytree).map(|v| json!({
                            "path": relative(&v.location.path),
                            "line": v.location.line,
                            "column": v.location.column,
                            "name": &*v.name,
                            "aval": v.aval.text(),
                        })).collect::<Vec<_>>(),
                    }))).collect::<Vec<_>>(),
                });
                if let Some(through) = &f.through {
                    function["through"] = json!(through);
                }
                function
            })
            .collect();
        serde_json::to_string_pretty(&json!({ "functions": functions })).unwrap_or_default() + "\n"
    } else {
        render::trace_text(&analysis, &relative(&file))
    };
    let _ = std::io::stdout().write_all(out.as_bytes());
    if analysis.diagnostics.iter().any(|(d, _, _)| d.severity == Severity::Error) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// How `tracelens repro` and the server's `tracelens.repro` write a reproducer.
#[derive(Clone, Debug, Default)]
pub struct ReproOptions {
    /// Write the emitted program as it is, without delta debugging.
    pub unreduced: bool,
    /// Overrides the project's (or the default) `fake_array_threshold`.
    pub fake_array_threshold: Option<u64>,
    /// Stage out every trace of this function (`--function`).
    pub function: Option<String>,
}

/// The reproducer of the error at `line` (1-based) of `path`, minimised, naming the file as
/// `shown` in its header and links; or why there is none, in the words of `tracelens repro`.
/// Shared by `tracelens repro` and the server's `tracelens.repro`.
pub fn reproducer_text(analysis: &FileAnalysis, path: &Path, shown: &str, line: u32) -> Result<String, String> {
    reproducer_text_with(analysis, path, shown, line, &ReproOptions::default())
}

pub fn reproducer_text_with(
    analysis: &FileAnalysis,
    path: &Path,
    shown: &str,
    line: u32,
    options: &ReproOptions,
) -> Result<String, String> {
    // An error at that line, else one raised in a module the file imports, under a call made
    // at that line (the innermost such call first).
    let found = analysis.reproducers.iter().find(|r| r.path == path && r.is_at(line)).or_else(|| {
        let mut under: Vec<&tracer_core::analysis::Reproducer> = analysis.reproducers.iter().filter(|r| r.via.contains(&line)).collect();
        under.sort_by_key(|r| r.via.iter().rev().position(|l| *l == line));
        under.first().copied()
    });
    if let Some(r) = found {
        // The analysis keeps only programs on which tracelens itself re-raises the error.
        // Minimising analyses the program again and again: on the engine's stack, as every
        // analysis runs (`repro` calls this on the main thread, whose stack a deeply nested
        // value of the program would overflow when it is freed).
        let text = if options.unreduced {
            Some(r.text.clone())
        } else {
            on_analysis_stack(|| r.minimised(&tracer_core::repro::minimise::MinimiseConfig::default()))
        };
        if let Some(text) = text {
            return Ok(with_labels(&text, analysis, path, shown));
        }
        return Err(format!(
            "{shown}:{line}: the standalone program tracelens can write for this error does not re-raise it when traced, so none is written"
        ));
    }
    let has_error = analysis.diagnostics.iter().any(|(d, l, _)| d.path == path && l.line == line && d.severity == Severity::Error);
    Err(if has_error {
        format!("{shown}:{line}: this error cannot be reproduced standalone yet (no trace stages it out, and the program cut down to jax, numpy and functools, with the modules of yours it imports written into it, does not raise it: it needs another import, two of your files bind one name, or it is raised in a test function)")
    } else {
        format!("{shown}:{line}: no error to reproduce at this line")
    })
}

/// `text` with every file of the analysis named as the reproducer's links name it: the
/// analysed file as `shown`, a module it imports relative to the same folder (`lib/model.py`
/// next to `main.py`), others as they are.
fn with_labels(text: &str, analysis: &FileAnalysis, path: &Path, shown: &str) -> String {
    let shown_dir = Path::new(shown).parent().unwrap_or(Path::new(""));
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut renames: Vec<(String, String)> = vec![(path.to_string_lossy().into_owned(), shown.to_string())];
    for f in analysis.files.iter().filter(|f| f.as_path() != path) {
        if let Ok(rest) = f.strip_prefix(dir).map(|rest| shown_dir.join(rest)) {
            renames.push((f.to_string_lossy().into_owned(), rest.to_string_lossy().into_owned()));
        }
    }
    // Longest first: a path that ends another is not renamed inside it.
    renames.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut line = line.to_string();
        for (from, to) in renames.iter().filter(|(from, _)| !from.is_empty()) {
            for (before, after) in [(format!(" {from}:"), format!(" {to}:")), (format!(" {from} "), format!(" {to} "))] {
                line = line.replace(&before, &after);
            }
        }
        out.push_str(&line);
    }
    out
}

pub fn run_repro(file: PathBuf, line: u32, output: Option<PathBuf>, options: &ReproOptions) -> ExitCode {
    let analysis = match analyze_one(&file, options) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match reproducer_text_with(&analysis, &file, &relative(&file), line, options) {
        Ok(text) => write_reproducer(&text, output),
        Err(why) => {
            eprintln!("{why}");
            ExitCode::from(1)
        }
    }
}

/// `tracelens repro FILE --function NAME`: every trace of the function, staged out.
pub fn run_repro_function(file: PathBuf, function: &str, output: Option<PathBuf>, options: &ReproOptions) -> ExitCode {
    let options = ReproOptions { function: Some(function.to_string()), ..options.clone() };
    let analysis = match analyze_one(&file, &options) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let shown = relative(&file);
    match function_reproducer_text(&analysis, &file, &shown, function) {
        Ok((text, warning)) => {
            if let Some(w) = warning {
                eprintln!("{w}");
            }
            write_reproducer(&text, output)
        }
        Err(why) => {
            eprintln!("{why}");
            ExitCode::from(1)
        }
    }
}

/// The program staging out every trace of `function` that `analysis` collected (an analysis
/// made with `reproducers.functions` naming it), naming the file as `shown`; with a warning when
/// some traces cannot be staged out. Shared by `tracelens repro --function` and the server's
/// "Generate reproducer" lens on a traced function without an error.
pub fn function_reproducer_text(
    analysis: &FileAnalysis,
    file: &Path,
    shown: &str,
    function: &str,
) -> Result<(String, Option<String>), String> {
    if analysis.collected.is_empty() {
        return Err(format!("{shown}: no traced call of {function}"));
    }
    let programs: Vec<(tracer_core::repro::Program, Vec<String>)> = analysis.collected.iter().flatten().cloned().collect();
    let mut warning = None;
    if programs.len() < analysis.collected.len() {
        let reasons: Vec<&str> = analysis.collected.iter().filter_map(|c| c.as_ref().err()).map(String::as_str).collect();
        let why = format!(
            "{shown}: {} of {} traces of {function} cannot be staged out standalone yet: {}",
            analysis.collected.len() - programs.len(),
            analysis.collected.len(),
            reasons.join("; ")
        );
        if programs.is_empty() {
            return Err(why);
        }
        warning = Some(why);
    }
    let mut header = vec![format!("tracelens: every traced call of {function} in {shown} ({} traces), staged out", programs.len())];
    for (i, (p, outs)) in programs.iter().enumerate() {
        let args: Vec<String> = p.params.iter().map(|x| x.aval.short()).collect();
        header.push(format!(
            "trace {}: {}({}) -> {}  (line {}, bound to out{})",
            i + 1,
            p.fn_name,
            args.join(", "),
            outs.join(", "),
            p.call_line,
            i + 1
        ));
    }
    header.push(format!("regenerate: tracelens repro {shown} --function {function}"));
    let text = tracer_core::repro::render_collection(&programs, &header).text;
    Ok((with_labels(&text, analysis, file, shown), warning))
}

fn write_reproducer(text: &str, output: Option<PathBuf>) -> ExitCode {
    match output {
        Some(out) => {
            if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
                if let Err(e) = std::fs::create_dir_all(parent) {
                    eprintln!("error: {}: {e}", parent.display());
                    return ExitCode::from(2);
                }
            }
            if let Err(e) = std::fs::write(&out, text) {
                eprintln!("error: {}: {e}", out.display());
                return ExitCode::from(2);
            }
            eprintln!("wrote {}", out.display());
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
    ExitCode::SUCCESS
}
