//! One file's analysis: run it as a script and its tests as tests (`test_runner`), then collect
//! diagnostics, traces and per-value avals as plain data (design.md §9, §11).

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use crate::diagnostics::{Code, Diagnostic};
use crate::interp::{Budgets, Interp, Site, SourceLoader};
use crate::jax::TraceKind;
use crate::syntax::ast::Span;

pub mod graph;
mod oracle;
mod reproducers;
mod values;
pub use oracle::Engine;
#[cfg(feature = "unit-tests")]
pub(crate) use values::tests as values_tests;
pub use values::{TraceValues, TracedValue, ValueRef};

#[derive(Clone, Debug)]
pub struct AnalysisConfig {
    pub budgets: Budgets,
    /// Folders searched for project-local imports (the workspace root first).
    pub search_roots: Vec<PathBuf>,
    /// The user's shim folders (`[tool.tracelens] shims`): Python models of libraries the
    /// project imports, searched before the bundled shims (`interp/shims.rs`).
    pub shim_roots: Vec<PathBuf>,
    /// Re-run each primitive's rule at every `bind` and over every traced equation
    /// (`check_ir`), reporting disagreements in `FileAnalysis::ir_problems`. On by default in
    /// the crate's own tests (the `check-ir` feature, which also fails the analysis on a
    /// disagreement), off in the product.
    pub check_ir: bool,
    /// Leave `Trace::jaxpr` empty: printing every traced body is a good part of an analysis,
    /// and an editor shows one only on request.
    pub skip_jaxpr_text: bool,
    /// Fill `Trace::graph`: each trace's jaxpr as a dataflow graph (`trace --format dot`).
    pub trace_graphs: bool,
    /// Values mode (`check --values`): compute every array as it is made and report the
    /// first NaN/Inf (TL301).
    pub values: bool,
    /// Nothing reads `FileAnalysis::stdout` (`check`): a `print` of arrays needs their avals,
    /// not their values, and does not compute them.
    pub stdout_unread: bool,
    /// Nothing reads the values behind hover (`check`): record none (`interp::seen`).
    pub skip_hover_values: bool,
    /// Run the module only, as Python runs a script: not its tests, and no function nothing
    /// called (the oracle of source reproducers).
    pub module_only: bool,
    pub reproducers: crate::repro::ReproConfig,
}

impl Default for AnalysisConfig {
    fn default() -> AnalysisConfig {
        AnalysisConfig {
            budgets: Budgets::default(),
            search_roots: Vec::new(),
            shim_roots: Vec::new(),
            check_ir: cfg!(feature = "check-ir"),
            skip_jaxpr_text: false,
            trace_graphs: false,
            values: false,
            stdout_unread: false,
            skip_hover_values: false,
            module_only: false,
            reproducers: crate::repro::ReproConfig::default(),
        }
    }
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

pub use crate::interp::seen::{AvalText, SiteKind};

#[derive(Clone, Debug)]
pub struct Trace {
    pub call: Option<Location>,
    pub args: Vec<String>,
    /// Each argument leaf's path (`params['w1']`), beside `args`, when known; else empty.
    pub arg_paths: Vec<String>,
    /// Each output leaf's path (`result[0]['loss']`), beside `outputs`, when known; else empty.
    pub out_paths: Vec<String>,
    /// `None` for a trace that raised, or that ended on what tracelens does not know
    /// (`unknown_end`).
    pub outputs: Option<Vec<String>>,
    /// The trace ended on a value tracelens does not know, not on an exception.
    pub unknown_end: bool,
    pub cause: String,
    /// How the analysis reached this trace (`called`, `annotations`, `unknown arguments`).
    pub route: &'static str,
    pub jaxpr: String,
    /// The jaxpr as a dataflow graph, when `AnalysisConfig::trace_graphs` asked for it.
    pub graph: Option<graph::TraceGraph>,
    /// The values seen inside the trace (and the traces inside it), written out when read.
    pub values: TraceValues,
    /// A `tf.function` trace's concrete function's input parameters as TensorFlow prints
    /// them; `None` for other traces, and where tracelens does not render one.
    pub input_parameters: Option<Vec<crate::jax::InputParameter>>,
}

#[derive(Clone, Debug)]
pub struct TracedFunction {
    pub name: String,
    pub location: Location,
    pub transform: String,
    pub traces: Vec<Trace>,
    /// The library function JAX traces when this is a user's function run as its whole body
    /// (`apply_fn` for haiku's `jax.jit(model.apply)`), which JAX's messages name.
    pub through: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct FileAnalysis {
    pub diagnostics: Vec<LocatedDiagnostic>,
    pub functions: Vec<TracedFunction>,
    /// Values seen outside any trace (module level, code no transformation traced):
    /// concrete arrays and pytrees of them, a few per place.
    pub values: Vec<TracedValue>,
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
    pub collected: Vec<Result<(crate::repro::Program, Vec<String>), String>>,
}

/// A reproducer for one error: the program as data, and as emitted (unreduced) text with
/// which emitted line stands for which user line. `minimised` delta-debugs it. Only
/// programs on which tracing re-raises the error are kept (an editor offers every one).
#[derive(Clone, Debug)]
pub struct Reproducer {
    pub path: PathBuf,
    /// The line where the error is raised, and the reproducer raises it.
    pub line: u32,
    /// The line the finding is reported at: `line`, except for a leaked tracer, reported
    /// where it escaped (`Diagnostic::cause_first`).
    pub finding_line: u32,
    pub code: String,
    pub program: ReproProgram,
    /// The unreduced program, as `tracelens repro --unreduced` writes it.
    pub text: String,
    /// (0-based line in `text`, 1-based line in the user's file).
    pub links: Vec<(usize, u32)>,
    /// For an error raised in another file than the analysed one (a helper module it
    /// imports): the lines of the analysed file whose calls led to it, outermost first.
    /// `tracelens repro FILE --line N` with any of them writes this reproducer.
    pub via: Vec<u32>,
    /// The analysed file, as the regenerate command names it.
    pub analysed: String,
}

/// How a reproducer was made.
#[derive(Clone, Debug)]
pub enum ReproProgram {
    /// Staged out of the trace that raised the error (`jax::stmt`).
    Staged(crate::repro::Program),
    /// Cut from the user's source (`repro::source`), for errors no trace stages out.
    Source(crate::repro::source::SourceProgram),
}

impl Reproducer {
    /// Whether this is the reproducer of the finding at, or the error raised at, `line`.
    pub fn is_at(&self, line: u32) -> bool {
        self.line == line || self.finding_line == line
    }

    fn file_label(&self) -> &str {
        match &self.program {
            ReproProgram::Staged(p) => &p.file_label,
            ReproProgram::Source(p) => &p.file_label,
        }
    }

    /// The command that writes this reproducer again: for an error in another file, from
    /// the analysed file's line that leads to it (the innermost).
    pub fn regenerate_command(&self, unreduced: bool) -> String {
        let flag = if unreduced { " --unreduced" } else { "" };
        match self.via.last() {
            Some(line) => format!("tracelens repro {} --line {line}{flag}", self.analysed),
            None => format!("tracelens repro {} --line {}{flag}", self.file_label(), self.line),
        }
    }

    /// The reproducer delta-debugged with the engine as the oracle (see `repro::minimise`);
    /// `None` when tracing the emitted program does not re-raise the error in the engine.
    pub fn minimised(&self, config: &crate::repro::minimise::MinimiseConfig) -> Option<String> {
        match &self.program {
            ReproProgram::Staged(program) => {
                let m = crate::repro::minimise::minimise(program, config, &Engine);
                let reduction =
                    crate::repro::Reduction::Minimised { lines_before: program.code_lines(), runs: m.runs, cut_short: m.cut_short };
                m.verified.then(|| m.program.render(&reduction, &self.regenerate_command(false)).text)
            }
            ReproProgram::Source(program) => {
                let (best, runs, verified, cut_short) = crate::repro::source::minimise(program, config, &Engine);
                let reduction = crate::repro::Reduction::Minimised { lines_before: program.code_lines(), runs, cut_short };
                verified.then(|| best.render(&best.header(&reduction, &self.regenerate_command(false))).text)
            }
        }
    }
}

/// Where an analysis hands out its results, each as soon as it is ready: the diagnostics
/// first (an editor shows them while the rest, the traced values behind hover and inlay
/// hints, is gathered), then the whole analysis. A closure taking the `FileAnalysis` is one.
pub trait Deliver {
    /// The diagnostics the analysis will deliver, located; before `analysis`.
    fn diagnostics(&mut self, _diagnostics: &[LocatedDiagnostic]) {}
    fn analysis(self, analysis: FileAnalysis);
}

impl<F: FnOnce(FileAnalysis)> Deliver for F {
    fn analysis(self, analysis: FileAnalysis) {
        self(analysis)
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
    deliver: impl Deliver,
) -> crate::interp::Leftovers {
    analyze_remembering(path, text, module, loader, config, None, deliver)
}

/// One file as an editor analyses it, version after version: each version is parsed from
/// the last one (`syntax::IncrementalParser`), and the jit traces of the functions the edit
/// did not touch are replayed rather than traced again (`jax::memo`).
#[derive(Default)]
pub struct OpenDocument {
    parser: crate::syntax::IncrementalParser,
    memo: crate::jax::memo::TraceMemo,
    /// The last analysis' syntax tree, given back to the parser at the next version once the
    /// analysis' leftovers are freed (`IncrementalParser::give_back`).
    lent: Option<Rc<crate::syntax::ast::Module>>,
}

impl OpenDocument {
    /// `analyze_parsed_then` for the next version of the document. Values mode traces
    /// everything (the memo only follows the edit).
    pub fn analyse_then(
        &mut self,
        path: &Path,
        text: &str,
        loader: &dyn SourceLoader,
        config: &AnalysisConfig,
        deliver: impl Deliver,
    ) -> crate::interp::Leftovers {
        if crate::syntax::punctuation_marks_over(text, config.budgets.max_source_marks).is_some() {
            // Not parsed, and the last version's tree is let go: the analysis says why.
            *self = OpenDocument::default();
            return analyze_remembering(path, text, None, loader, config, None, deliver);
        }
        // The last version's tree, whose analysis has been freed since (the caller frees the
        // leftovers before the next version; if it has not, the parse reads the whole text).
        if let Some(module) = self.lent.take().and_then(|m| Rc::try_unwrap(m).ok()) {
            self.parser.give_back(module);
        }
        let module = self.parser.parse(text);
        self.memo.edit(self.parser.last_edit());
        let memo = Some(&mut self.memo).filter(|_| !config.values);
        let leftovers = analyze_remembering(path, text, Some(module), loader, config, memo, deliver);
        self.lent = leftovers.module_of(path);
        leftovers
    }

    /// Whether the last version's parse re-parsed only the top-level statement its edit was
    /// in (it can once the version before it was given back, see `lent`).
    pub fn reparsed_one_statement(&self) -> bool {
        self.parser.reparsed_one_statement()
    }

    /// The document's remembered traces.
    pub fn memo(&self) -> &crate::jax::memo::TraceMemo {
        &self.memo
    }
}

/// `analyze_parsed_then` that replays the traces `memo` remembers and remembers this
/// analysis' traces for the next one; the memo has followed the edit since its last analysis.
fn analyze_remembering(
    path: &Path,
    text: &str,
    module: Option<crate::syntax::ast::Module>,
    loader: &dyn SourceLoader,
    config: &AnalysisConfig,
    mut memo: Option<&mut crate::jax::memo::TraceMemo>,
    mut deliver: impl Deliver,
) -> crate::interp::Leftovers {
    let (mut interp, _) = run(path, text, module, loader, config, memo.as_deref_mut(), 0);
    let mut diagnostics = finished_diagnostics(&interp);
    // Named dimensions: the findings that hold for every size are those a second analysis,
    // with other sizes, makes too (`crate::symbolic`); names go back into their numbers.
    let mut renamed_functions = None;
    let mut originals = None;
    if interp.entry_state.dims.used() {
        let (mut second, _) = run(path, text, None, loader, config, None, 1);
        let renamer = crate::symbolic::Renamer::new(&interp.entry_state.dims, &second.entry_state.dims);
        let (kept, kept_originals) = crate::symbolic::keep_common(diagnostics, &finished_diagnostics(&second), &renamer);
        diagnostics = kept;
        originals = Some(locate_diagnostics(&interp, kept_originals));
        renamed_functions = Some((renamer, collect_functions(&mut second, !config.skip_jaxpr_text, false)));
    }
    let located = locate_diagnostics(&interp, diagnostics);
    deliver.diagnostics(&located);
    let mut ir_problems = std::mem::take(&mut interp.jax.rule_problems);
    if config.check_ir {
        for rec in &interp.jax.records {
            if let Some(jaxpr) = &rec.jaxpr {
                ir_problems.extend(crate::jax::ir::check_ir(jaxpr).into_iter().map(|p| format!("{}: {p}", rec.fn_name)));
            }
        }
    }
    // In the crate's tests every analysis is checked: a rule that disagrees with an equation
    // it made, or with the avals a binder gave, fails the test that traced it.
    #[cfg(feature = "check-ir")]
    if config.check_ir && !ir_problems.is_empty() {
        panic!("check_ir: {} problems in {}:\n{}", ir_problems.len(), path.display(), ir_problems.join("\n"));
    }
    let reproducers = if config.reproducers.skip {
        Vec::new()
    } else {
        // With named dimensions, a reproducer passes them to `lower` where it can, else it
        // raises with the sizes of the first analysis and says so in its message.
        let symbolic = originals.as_ref().map(|_| (interp.entry_state.dims.names(), located.as_slice()));
        reproducers::make_reproducers(&interp, originals.as_ref().unwrap_or(&located), symbolic, config)
    };
    let mut collected = Vec::new();
    // Staging every trace out is bounded as the analysis is: a loop of 65,536 traced steps
    // (a fuzzed input) otherwise spends seconds here after the interpreter's budget held.
    let collect_deadline = crate::interp::clock::CpuInstant::now().checked_add(config.budgets.max_time);
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
            // `jax.jit(jax.grad(f))` traces `f` twice, the inner trace inside the outer one:
            // the outer trace's program already calls the transformation.
            if rec.parent.is_some_and(|p| interp.jax.records[p].fn_name == *name && interp.jax.records[p].def_site == rec.def_site) {
                continue;
            }
            let line = rec.call_site.map(|s| interp.line_of(s)).unwrap_or(0);
            if collect_deadline.is_some_and(|d| crate::interp::clock::CpuInstant::now() > d) {
                collected.push(Err(format!("the trace called at line {line}: not staged out, the time budget ran out")));
                continue;
            }
            let program = match &rec.outputs {
                None => Err("the trace raised".to_string()),
                Some(o) => crate::jax::stmt::emit_trace(&interp, record, &what, false)
                    .map(|p| (p, o.iter().map(crate::repro::result_aval).collect())),
            }
            .map_err(|why| format!("the trace called at line {line}: {why}"));
            collected.push(program);
        }
    }
    let stops = interp.stops.iter().map(|(s, why)| (s.map(|s| locate(&interp, interp.path(s.file), s.span)), why.clone())).collect();
    if let (Some(memo), Some(mut kept)) = (memo, interp.jax.memo.take()) {
        kept.end();
        *memo = kept;
    }
    let mut functions = collect_functions(&mut interp, !config.skip_jaxpr_text, config.trace_graphs);
    if let Some((renamer, second)) = renamed_functions {
        rename_symbolic_traces(&mut functions, &second, &renamer);
    }
    deliver.analysis(FileAnalysis {
        diagnostics: located,
        functions,
        values: collect_concrete_values(&interp),
        stdout: interp.stdout.clone(),
        stops,
        ir_problems,
        // Bundled shims are not files anyone can edit or watch.
        files: interp.files.iter().filter(|f| !f.path.starts_with(crate::interp::shims::BUNDLED_ROOT)).map(|f| f.path.clone()).collect(),
        reproducers,
        collected,
    });
    interp.take_leftovers()
}

/// Runs the file as a script, its tests and its other entry points, in a new interpreter
/// whose named dimensions take the sizes of instantiation `dims_instance` (`crate::symbolic`).
fn run<'l>(
    path: &Path,
    text: &str,
    module: Option<crate::syntax::ast::Module>,
    loader: &'l dyn SourceLoader,
    config: &AnalysisConfig,
    memo: Option<&mut crate::jax::memo::TraceMemo>,
    dims_instance: u8,
) -> (Interp<'l>, crate::interp::FileId) {
    let mut interp = Interp::new(loader, config.search_roots.clone(), config.budgets.clone(), &crate::models::MODELS);
    interp.shim_roots = config.shim_roots.clone();
    interp.entry_state.dims.instance = dims_instance;
    interp.jax.check_rules = config.check_ir;
    if config.values {
        interp.values = Some(Default::default());
    }
    interp.stdout_unread = config.stdout_unread;
    interp.seen.off = config.skip_hover_values;
    // Parsing costs about a microsecond a token whatever comes after: a file past the token
    // budget (a million-element literal) is not parsed at all, and says so.
    let too_large = if module.is_none() { crate::syntax::punctuation_marks_over(text, config.budgets.max_source_marks) } else { None };
    let module = if too_large.is_some() { Some(crate::syntax::ast::Module { body: Vec::new(), errors: Vec::new() }) } else { module };
    let file = interp.add_parsed_file(path.to_path_buf(), Rc::from(text), module);
    if let Some(marks) = too_large {
        let first_line = text.find('\n').unwrap_or(text.len()).min(u32::MAX as usize);
        let site = Site { file, span: Span::new(0, first_line) };
        let message = format!(
            "not analysed: the file has {marks} punctuation marks and line breaks, over the parse budget ({})",
            config.budgets.max_source_marks
        );
        let diag = interp.diagnostic(Code::NotAnalysed, site, message, Vec::new());
        interp.diagnostics.push(diag);
    }
    if let Some(memo) = memo {
        memo.begin(file);
        interp.jax.memo = Some(std::mem::take(memo));
    }
    let module_ast = interp.files[file as usize].module.clone();
    if let Some(err) = module_ast.errors.first() {
        let site = Site { file, span: err.span };
        let diag = interp.diagnostic(Code::PythonException, site, format!("SyntaxError: {}", err.message), Vec::new());
        interp.diagnostics.push(diag);
    }
    let conftests = if config.module_only { Vec::new() } else { crate::test_runner::import_conftests(&mut interp, file) };
    let (module, flow) = interp.run_module(file, "__main__");
    if let Some(flow) = flow {
        interp.report_uncaught(flow, "the module");
    }
    // Tests run as their runners run them (unittest, pytest), each on a fresh budget; then
    // the functions nothing ran are traced by the other routes. Neither is what Python does
    // with the file as a script: a source reproducer's oracle runs the module alone, or a
    // cut that no longer calls the function would still "raise" its error.
    if !config.module_only {
        crate::test_runner::run_tests(&mut interp, file, &module, &conftests);
        crate::entry::trace_uncalled(&mut interp, file, &module);
        crate::entry_staged::trace_unreached(&mut interp, file, &module);
    }
    (interp, file)
}

/// The analysis' diagnostics, with the end-of-run warnings, pruned and with the
/// `# tracelens: ignore` comments applied.
fn finished_diagnostics(interp: &Interp) -> Vec<Diagnostic> {
    let mut diagnostics = interp.diagnostics.clone();
    diagnostics.extend(crate::jax::effects::finish(interp));
    crate::jax::effects::prune(interp, &mut diagnostics);
    let mut diagnostics: Vec<Diagnostic> = diagnostics.into_iter().map(Diagnostic::cause_first).collect();
    apply_ignore_comments(interp, &mut diagnostics);
    diagnostics
}

/// The traces made with named dimensions, shown with the names: each string of the first
/// analysis against the same string of the second. When both analyses traced the same
/// functions the same number of times, every trace is paired with its counterpart (a
/// `jax.export.symbolic_shape` seed traces by a call, not by the annotations route; a trace
/// the sizes do not reach is the same text twice and stays as it is); otherwise only the
/// annotations route's traces are, in order.
fn rename_symbolic_traces(functions: &mut [TracedFunction], second: &[TracedFunction], renamer: &crate::symbolic::Renamer) {
    let aligned =
        functions.len() == second.len() && functions.iter().zip(second).all(|(a, b)| a.name == b.name && a.traces.len() == b.traces.len());
    let annotated = |f: &TracedFunction| -> Vec<(String, usize)> {
        f.traces
            .iter()
            .enumerate()
            .filter(|(_, t)| aligned || t.route == crate::jax::Route::Annotations.label())
            .map(|(i, _)| (f.name.clone(), i))
            .collect()
    };
    let theirs: Vec<&Trace> = second.iter().flat_map(|f| annotated(f).into_iter().map(move |(_, i)| &f.traces[i])).collect();
    let mut theirs = theirs.into_iter();
    for f in functions.iter_mut() {
        for (_, i) in annotated(f) {
            let Some(other) = theirs.next() else { return };
            let trace = &mut f.traces[i];
            // Where the other sizes made another trace, the names of the sizes alone.
            let rename = |a: &mut String, b: &str| *a = renamer.rename(a, b).unwrap_or_else(|| renamer.rename_alone(a));
            for (a, b) in trace.args.iter_mut().zip(&other.args) {
                rename(a, b);
            }
            // Outputs the other sizes change otherwise (another branch taken, or an error
            // raised) are what jax.export calls inconclusive: it raises, and so the trace has none.
            trace.outputs = match (&trace.outputs, &other.outputs) {
                (Some(ours), Some(theirs)) if ours.len() == theirs.len() => {
                    ours.iter().zip(theirs).map(|(a, b)| renamer.rename(a, b)).collect::<Option<Vec<String>>>()
                }
                _ => None,
            };
            rename(&mut trace.jaxpr, &other.jaxpr);
            let same_values = trace.values.len() == other.values.len();
            let theirs: Vec<TracedValue> = other.values.iter().collect();
            for (i, value) in trace.values.written_mut().iter_mut().enumerate() {
                match theirs.get(i).filter(|_| same_values) {
                    Some(b) => {
                        let mut text = value.aval.text().into_owned();
                        rename(&mut text, &b.aval.text());
                        value.aval = AvalText::Text(text);
                    }
                    None => value.aval = AvalText::Text(renamer.rename_alone(&value.aval.text())),
                }
            }
        }
    }
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

fn locate(interp: &Interp, path: &Path, span: Span) -> Location {
    match interp.files.iter().find(|f| f.path == path) {
        Some(f) => locate_in(f, Arc::from(path), span),
        None => Location::unknown(Arc::from(path), span),
    }
}

fn locate_in(f: &crate::interp::SourceFile, path: Arc<Path>, span: Span) -> Location {
    Location::in_text(f.line_index(), &f.text, path, span)
}

impl Location {
    /// `span` of `text` (whose lines `lines` are), 1-based.
    fn in_text(lines: &crate::syntax::LineIndex, text: &str, path: Arc<Path>, span: Span) -> Location {
        let (start, end) = lines.span_line_cols(text, span.start, span.end);
        Location { path, line: start.line + 1, column: start.col + 1, end_line: end.line + 1, end_column: end.col + 1, span }
    }

    /// `span` in a file whose text the analysis does not have: its first line.
    fn unknown(path: Arc<Path>, span: Span) -> Location {
        Location { path, line: 1, column: 1, end_line: 1, end_column: 1, span }
    }
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
            _ => Location::unknown(Arc::from(Path::new("")), site.span),
        }
    }
}

/// `# tracelens: ignore[TL201]` (or `ignore` alone) on a line silences it.
fn apply_ignore_comments(interp: &Interp, diagnostics: &mut Vec<Diagnostic>) {
    diagnostics.retain(|d| {
        let Some(f) = interp.files.iter().find(|f| f.path == d.path) else {
            return true;
        };
        let line = f.line_index().line_of(d.span.start);
        let start = f.line_index().line_start(line) as usize;
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

/// The traced functions, with what their traces recorded: the last use of the records and
/// of the values, which are moved out of `interp` rather than copied.
fn collect_functions(interp: &mut Interp, jaxpr_text: bool, graphs: bool) -> Vec<TracedFunction> {
    let records = std::mem::take(&mut interp.jax.records);
    let mut out: Vec<TracedFunction> = Vec::new();
    let store = Arc::new(values::ValueStore::take(interp));
    let interp = &*interp;
    let locator = Locator::new(interp);
    // Each value belongs to its trace and to every trace around it that is reported.
    let reported: Vec<bool> = records.iter().map(|r| reported_def(r).is_some()).collect();
    let parents: Vec<Option<usize>> = records.iter().map(|r| r.parent).collect();
    let places = values::places(&store, &parents, &reported);
    for (mut rec, at) in records.into_iter().zip(places) {
        let Some(def) = reported_def(&rec) else { continue };
        let is_jit = matches!(rec.kind, TraceKind::Jit);
        let (name, def, through) = match rec.shown_as.take() {
            // A library layer's own `__call__` (linen's `nn.Dense(4).apply`) is no user function.
            Some((body, site)) if is_jit && !interp.is_library(site.file) => (body, site, Some(std::mem::take(&mut rec.fn_name))),
            _ => (std::mem::take(&mut rec.fn_name), def, None),
        };
        let location = locator.locate(def);
        let transform = match (&rec.kind, rec.traced_for) {
            (TraceKind::Jit, Some(label @ ("pmap" | crate::tf::function::TRACED_FOR))) => label,
            (kind, _) => kind.label(),
        }
        .to_string();
        let values = TraceValues::stored(&store, at);
        let trace = Trace {
            call: rec.call_site.map(|s| locator.locate(s)),
            args: rec.args.iter().map(|a| a.short()).collect(),
            arg_paths: std::mem::take(&mut rec.arg_paths),
            out_paths: std::mem::take(&mut rec.out_paths),
            outputs: rec.outputs.as_ref().map(|o| o.iter().map(|a| a.short()).collect()),
            unknown_end: rec.unknown_end,
            cause: std::mem::take(&mut rec.cause),
            route: rec.route.label(),
            jaxpr: rec.jaxpr.as_ref().filter(|_| jaxpr_text).map(|j| j.pretty(0)).unwrap_or_default(),
            graph: rec
                .jaxpr
                .as_ref()
                .filter(|_| graphs)
                .map(|j| graph::TraceGraph::of(j, &rec.arg_names, &mut |e| e.site.map(|s| locator.locate(s)))),
            values,
            input_parameters: rec.input_parameters.take().map(std::rc::Rc::unwrap_or_clone),
        };
        // The line first: comparing paths walks their components.
        match out.iter_mut().find(|f| {
            f.location.line == location.line
                && f.name == name
                && f.transform == transform
                && f.through == through
                && f.location.path == location.path
        }) {
            Some(f) => f.traces.push(trace),
            None => out.push(TracedFunction { name, location, transform, traces: vec![trace], through }),
        }
    }
    out
}

/// Where the function of a trace the analysis reports was defined: the top-level
/// transformations are reported, jit traces and the outermost trace of other kinds.
fn reported_def(record: &crate::jax::TraceRecord) -> Option<Site> {
    (matches!(record.kind, TraceKind::Jit) || record.parent.is_none()).then_some(record.def_site).flatten()
}

fn collect_concrete_values(interp: &Interp) -> Vec<TracedValue> {
    let locator = Locator::new(interp);
    let shown = interp.seen.shown_all(interp);
    // Made room for at once: `filter_map` would grow it from nothing, moving the values (168
    // bytes each) several times over, and almost every record shows something.
    let mut values = Vec::with_capacity(shown.len());
    values.extend(interp.seen.records().iter().zip(shown).filter_map(|(v, shown)| {
        let shown = shown?;
        Some(TracedValue {
            location: locator.locate(v.site),
            name: Arc::from(&*v.name),
            assigned: v.kind == SiteKind::Assigned,
            kind: v.kind,
            pytree: shown.is_tree(),
            preview: v.preview.clone(),
            summary: shown.summary().map(str::to_string),
            aval: AvalText::Seen(shown),
        })
    }));
    values
}
