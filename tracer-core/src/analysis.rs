//! One file's analysis: run it as a script and its `test_*` functions as tests, then collect
//! diagnostics, traces and per-value avals as plain data (design.md §9, §11).

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::interp::value::Value;
use crate::interp::{Budgets, Interp, Site, SourceLoader};
use crate::jax::TraceKind;
use crate::syntax::ast::{Span, StmtKind};

#[derive(Clone, Debug, Default)]
pub struct AnalysisConfig {
    pub budgets: Budgets,
    /// Folders searched for project-local imports (the workspace root first).
    pub search_roots: Vec<PathBuf>,
    /// Validate every traced jaxpr with `check_ir` (tests turn this on).
    pub check_ir: bool,
    /// Leave `Trace::jaxpr` empty: printing every traced body is a good part of an analysis,
    /// and an editor shows one only on request.
    pub skip_jaxpr_text: bool,
    /// Values mode (`check --values`): compute every array as it is made and report the
    /// first NaN/Inf (TL301).
    pub values: bool,
    pub reproducers: crate::repro::ReproConfig,
}

/// A diagnostic with its location and the locations of its related notes.
pub type LocatedDiagnostic = (Diagnostic, Location, Vec<Location>);

/// A position in a file, 1-based line and column (code points), as the CLI contract prints.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    /// Shared: an analysis locates thousands of values in the same few files.
    pub path: Arc<Path>,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct TracedValue {
    pub location: Location,
    pub name: String,
    pub aval: String,
    /// An assignment target (shown as an inlay hint) rather than a use of the name.
    pub assigned: bool,
}

#[derive(Clone, Debug)]
pub struct Trace {
    pub call: Option<Location>,
    pub args: Vec<String>,
    /// `None` for a trace that raised.
    pub outputs: Option<Vec<String>>,
    pub cause: String,
    pub jaxpr: String,
    pub values: Vec<TracedValue>,
}

#[derive(Clone, Debug)]
pub struct TracedFunction {
    pub name: String,
    pub location: Location,
    pub transform: String,
    pub traces: Vec<Trace>,
}

#[derive(Clone, Debug, Default)]
pub struct FileAnalysis {
    pub diagnostics: Vec<LocatedDiagnostic>,
    pub functions: Vec<TracedFunction>,
    pub stdout: String,
    /// Where and why analysis stopped silently on an unknown value (for `--debug` output).
    pub stops: Vec<(Option<Location>, String)>,
    /// Problems `check_ir` found in the traced jaxprs (empty unless `check_ir` was asked for).
    pub ir_problems: Vec<String>,
    /// Every file the analysis read (the file itself and the modules it imported).
    pub files: Vec<PathBuf>,
    /// Standalone pure-JAX programs that re-raise the errors raised inside traces.
    pub reproducers: Vec<Reproducer>,
    /// For each trace of the functions named in `ReproConfig::functions`, the program it
    /// stages out and the avals of its results; `None` for a trace a standalone program
    /// cannot say.
    pub collected: Vec<Option<(crate::repro::Program, Vec<String>)>>,
}

/// A reproducer for one error: the program as data, and as emitted (unreduced) text with
/// which emitted line stands for which user line. `minimised` delta-debugs it.
#[derive(Clone, Debug)]
pub struct Reproducer {
    pub path: PathBuf,
    pub line: u32,
    pub code: String,
    pub program: crate::repro::Program,
    /// The unreduced program, as `tracelens repro --unreduced` writes it.
    pub text: String,
    /// (0-based line in `text`, 1-based line in the user's file).
    pub links: Vec<(usize, u32)>,
}

impl Reproducer {
    /// The command that writes this reproducer again.
    pub fn regenerate_command(&self, unreduced: bool) -> String {
        let flag = if unreduced { " --unreduced" } else { "" };
        format!("tracelens repro {} --line {}{flag}", self.program.file_label, self.line)
    }

    /// The reproducer delta-debugged with the engine as the oracle (see `repro::minimise`);
    /// `None` when tracing the emitted program does not re-raise the error in the engine.
    pub fn minimised(&self, config: &crate::repro::minimise::MinimiseConfig) -> Option<String> {
        let m = crate::repro::minimise::minimise(&self.program, config);
        let reduction = crate::repro::Reduction::Minimised { lines_before: self.program.code_lines(), runs: m.runs };
        m.verified.then(|| m.program.render(&reduction, &self.regenerate_command(false)).text)
    }
}

/// Analyses `path`. Never panics on any input and always returns within the budgets.
pub fn analyze_file(path: &Path, text: &str, loader: &dyn SourceLoader, config: &AnalysisConfig) -> FileAnalysis {
    analyze_parsed(path, text, None, loader, config)
}

/// `analyze_file` with the module already parsed from `text`, as an editor's incremental
/// parser gives it (`syntax::IncrementalParser`).
pub fn analyze_parsed(
    path: &Path,
    text: &str,
    module: Option<crate::syntax::ast::Module>,
    loader: &dyn SourceLoader,
    config: &AnalysisConfig,
) -> FileAnalysis {
    let mut result = None;
    analyze_parsed_then(path, text, module, loader, config, |analysis| result = Some(analysis));
    result.unwrap_or_default()
}

/// `analyze_parsed`, handing the result to `deliver` before the interpreter's memory is
/// freed: freeing it is a good part of an analysis, and an editor need not wait for it. The
/// memory is returned: dropping the `Leftovers` frees it, whenever the caller chooses.
pub fn analyze_parsed_then(
    path: &Path,
    text: &str,
    module: Option<crate::syntax::ast::Module>,
    loader: &dyn SourceLoader,
    config: &AnalysisConfig,
    deliver: impl FnOnce(FileAnalysis),
) -> crate::interp::Leftovers {
    let mut interp = Interp::new(loader, config.search_roots.clone(), config.budgets.clone());
    if config.values {
        interp.values = Some(Default::default());
    }
    let file = interp.add_parsed_file(path.to_path_buf(), Rc::from(text), module);
    let module_ast = interp.files[file as usize].module.clone();
    for err in &module_ast.errors {
        let site = Site { file, span: err.span };
        let diag = interp.diagnostic(Code::PythonException, site, format!("SyntaxError: {}", err.message), Vec::new());
        interp.diagnostics.push(diag);
        break;
    }
    let (module, flow) = interp.run_module(file, "__main__");
    if let Some(flow) = flow {
        interp.report_uncaught(flow, "the module");
    }
    // Test functions run as tests, each on a fresh budget.
    let tests: Vec<(String, Value)> = module_ast
        .body
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::FunctionDef(def) if def.name.starts_with("test_") => {
                module.dict.borrow().get(def.name.as_ref()).map(|v| (def.name.to_string(), v.clone()))
            }
            _ => None,
        })
        .collect();
    for (name, f) in tests {
        interp.restart_clock();
        interp.frames.push(crate::interp::Frame { file, name: Rc::from("<test>"), span: Span::default(), class: None, self_value: None });
        let result = interp.call(&f, Vec::new(), Vec::new());
        interp.frames.pop();
        if let Err(flow) = result {
            interp.report_uncaught(flow, &format!("test {name}"));
        }
    }
    crate::entry::trace_uncalled(&mut interp, file, &module);
    let mut diagnostics = interp.diagnostics.clone();
    diagnostics.extend(crate::jax::effects::finish(&interp));
    crate::jax::effects::prune(&interp, &mut diagnostics);
    apply_ignore_comments(&interp, &mut diagnostics);
    let located = locate_diagnostics(&interp, diagnostics);
    let mut ir_problems = Vec::new();
    if config.check_ir {
        for rec in &interp.jax.records {
            if let Some(jaxpr) = &rec.jaxpr {
                ir_problems.extend(crate::jax::ir::check_ir(jaxpr).into_iter().map(|p| format!("{}: {p}", rec.fn_name)));
            }
        }
    }
    let mut reproducers = Vec::new();
    for (d, _, _) in &located {
        if d.severity != Severity::Error || config.reproducers.skip {
            continue;
        }
        let Some(file_id) = interp.files.iter().position(|f| f.path == d.path) else { continue };
        let site = Site { file: file_id as crate::interp::FileId, span: d.span };
        let what = crate::jax::stmt::What {
            code: d.code.as_str().to_string(),
            message: d.message.lines().next().unwrap_or("").to_string(),
            fake_array_threshold: config.reproducers.fake_array_threshold,
        };
        let program = crate::jax::stmt::emit(&interp, site, &what).or_else(|| error_of_call(&interp, site, &what));
        if let Some(program) = program {
            let mut r = Reproducer {
                path: d.path.clone(),
                line: program.error_line,
                code: what.code,
                program,
                text: String::new(),
                links: Vec::new(),
            };
            let rendered = r.program.render(&crate::repro::Reduction::None, &r.regenerate_command(true));
            r.text = rendered.text;
            r.links = rendered.links;
            reproducers.push(r);
        }
    }
    let mut collected = Vec::new();
    for name in &config.reproducers.functions {
        let what = crate::jax::stmt::What {
            code: String::new(),
            message: String::new(),
            fake_array_threshold: config.reproducers.fake_array_threshold,
        };
        for (record, rec) in interp.jax.records.iter().enumerate() {
            if rec.fn_name != *name || rec.def_site.is_none_or(|s| s.file != 0) {
                continue;
            }
            let outputs = rec.outputs.as_ref().map(|o| o.iter().map(|a| a.short()).collect::<Vec<_>>());
            let program = outputs.and_then(|o| crate::jax::stmt::emit_trace(&interp, record, &what, false).map(|p| (p, o)));
            collected.push(program);
        }
    }
    let stops = interp.stops.iter().map(|(s, why)| (s.map(|s| locate(&interp, interp.path(s.file), s.span)), why.clone())).collect();
    deliver(FileAnalysis {
        diagnostics: located,
        functions: collect_functions(&interp, !config.skip_jaxpr_text),
        stdout: interp.stdout.clone(),
        stops,
        ir_problems,
        files: interp.files.iter().map(|f| f.path.clone()).collect(),
        reproducers,
        collected,
    });
    interp.take_leftovers()
}

/// Lines and columns for diagnostics and their related notes.
pub(crate) fn locate_diagnostics(interp: &Interp, diagnostics: Vec<Diagnostic>) -> Vec<LocatedDiagnostic> {
    diagnostics
        .into_iter()
        .map(|d| {
            let loc = locate(interp, &d.path, d.span);
            let rel = d.related.iter().map(|r| locate(interp, &r.path, r.span)).collect();
            (d, loc, rel)
        })
        .collect()
}

/// An error raised by a transformation's call itself (`jax.grad(f)(x)` of a non-scalar `f`):
/// the program that stages out the trace started at that call and calls it the same way,
/// kept only when tracing it raises the same error in tracelens.
fn error_of_call(interp: &Interp, site: Site, what: &crate::jax::stmt::What) -> Option<crate::repro::Program> {
    let line = interp.line_of(site);
    let record = interp
        .jax
        .records
        .iter()
        .rposition(|r| r.call_site.is_some_and(|c| c.file == site.file && interp.line_of(c) == line) && r.kind == TraceKind::Grad)?;
    let mut program = crate::jax::stmt::emit_trace(interp, record, what, true)?;
    program.file_label = interp.path(site.file).to_string_lossy().to_string();
    program.error_line = line;
    crate::repro::minimise::reproduces(&program).then_some(program)
}

fn locate(interp: &Interp, path: &Path, span: Span) -> Location {
    match interp.files.iter().find(|f| f.path == path) {
        Some(f) => locate_in(f, Arc::from(path), span),
        None => Location { path: Arc::from(path), line: 1, column: 1, end_line: 1, end_column: 1, span },
    }
}

fn locate_in(f: &crate::interp::SourceFile, path: Arc<Path>, span: Span) -> Location {
    let start = f.line_index.line_col(&f.text, span.start);
    let end = f.line_index.line_col(&f.text, span.end);
    Location { path, line: start.line + 1, column: start.col + 1, end_line: end.line + 1, end_column: end.col + 1, span }
}

/// Locates sites of an analysis' files, sharing one path per file.
struct Locator<'a> {
    files: &'a [crate::interp::SourceFile],
    paths: Vec<Arc<Path>>,
}

impl<'a> Locator<'a> {
    fn new(interp: &'a Interp) -> Locator<'a> {
        Locator { files: &interp.files, paths: interp.files.iter().map(|f| Arc::from(f.path.as_path())).collect() }
    }

    fn locate(&self, site: Site) -> Location {
        let i = site.file as usize;
        match (self.files.get(i), self.paths.get(i)) {
            (Some(f), Some(path)) => locate_in(f, path.clone(), site.span),
            _ => Location { path: Arc::from(Path::new("")), line: 1, column: 1, end_line: 1, end_column: 1, span: site.span },
        }
    }
}

/// `# tracelens: ignore[TL201]` (or `ignore` alone) on a line silences it.
fn apply_ignore_comments(interp: &Interp, diagnostics: &mut Vec<Diagnostic>) {
    diagnostics.retain(|d| {
        let Some(f) = interp.files.iter().find(|f| f.path == d.path) else {
            return true;
        };
        let line = f.line_index.line_of(d.span.start);
        let start = f.line_index.line_start(line) as usize;
        let end = f.text[start..].find('\n').map(|e| start + e).unwrap_or(f.text.len());
        let text = &f.text[start..end];
        let Some(pos) = text.find("# tracelens: ignore") else {
            return true;
        };
        let rest = &text[pos + "# tracelens: ignore".len()..];
        match rest.strip_prefix('[') {
            Some(codes) => {
                let codes = codes.split(']').next().unwrap_or("");
                !codes.split(',').any(|c| c.trim() == d.code.as_str() || c.trim() == d.code.name())
            }
            None => false,
        }
    });
    diagnostics.sort_by_key(|d| (d.path.clone(), d.span.start, d.code));
    diagnostics.dedup_by(|a, b| a.path == b.path && a.span == b.span && a.code == b.code && a.message == b.message);
}

fn collect_functions(interp: &Interp, jaxpr_text: bool) -> Vec<TracedFunction> {
    let mut out: Vec<TracedFunction> = Vec::new();
    let locator = Locator::new(interp);
    // Each value belongs to its trace and to every trace around it.
    let mut values_by_record: Vec<Vec<usize>> = vec![Vec::new(); interp.jax.records.len()];
    for (i, v) in interp.jax.values.iter().enumerate() {
        let mut record = Some(v.record);
        for _ in 0..values_by_record.len() {
            let Some(r) = record.filter(|&r| r < values_by_record.len()) else { break };
            values_by_record[r].push(i);
            record = interp.jax.records[r].parent;
        }
    }
    for (index, rec) in interp.jax.records.iter().enumerate() {
        // Report top-level transformations: jit traces, and the outermost trace of other kinds.
        let is_jit = matches!(rec.kind, TraceKind::Jit);
        if !is_jit && rec.parent.is_some() {
            continue;
        }
        let Some(def) = rec.def_site else { continue };
        let location = locator.locate(def);
        let transform = rec.kind.label().to_string();
        let values = values_by_record[index]
            .iter()
            .map(|&v| &interp.jax.values[v])
            .map(|v| TracedValue { location: locator.locate(v.site), name: v.name.clone(), aval: v.aval.short(), assigned: v.assigned })
            .collect();
        let trace = Trace {
            call: rec.call_site.map(|s| locator.locate(s)),
            args: rec.args.iter().map(|a| a.short()).collect(),
            outputs: rec.outputs.as_ref().map(|o| o.iter().map(|a| a.short()).collect()),
            cause: rec.cause.clone(),
            jaxpr: rec.jaxpr.as_ref().filter(|_| jaxpr_text).map(|j| j.pretty(0)).unwrap_or_default(),
            values,
        };
        match out.iter_mut().find(|f| {
            f.location.path == location.path && f.location.line == location.line && f.name == rec.fn_name && f.transform == transform
        }) {
            Some(f) => f.traces.push(trace),
            None => out.push(TracedFunction { name: rec.fn_name.clone(), location, transform, traces: vec![trace] }),
        }
    }
    out
}
