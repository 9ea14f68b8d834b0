//! `tracelens run`: a program run as `python FILE` would run it, on the interpreter and the
//! CPU kernels, in values mode (every array computed as it is made). The result is plain
//! data: what the program printed, how it ended, what tracelens could not compute.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::analysis::{locate_diagnostics, AnalysisConfig, LocatedDiagnostic};
use crate::interp::{Flow, Interp, Site, SourceLoader, StopReason};

/// One frame of a Python-style traceback (user frames only).
#[derive(Clone, Debug, PartialEq)]
pub struct TracebackFrame {
    pub path: PathBuf,
    pub line: u32,
    /// The function's name, `<module>` for the module body.
    pub function: String,
    /// The source line, stripped as Python strips it.
    pub source: String,
}

/// How the run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum RunOutcome {
    /// The module ran to its end.
    Completed,
    /// An exception nobody caught: the traceback (outermost first) and `Class: message`.
    Raised { traceback: Vec<TracebackFrame>, exception: String },
    /// tracelens could not go on: a value it cannot compute decided control flow, or a
    /// budget ran out. `at` is `file:line`.
    Stopped { at: Option<String>, why: String },
}

#[derive(Clone, Debug)]
pub struct RunResult {
    pub stdout: String,
    /// What the program wrote to `sys.stderr`, before tracelens' own notes.
    pub stderr: String,
    pub outcome: RunOutcome,
    /// What tracelens says about the run: values printed as `<not computed: ...>`, and why.
    pub notes: Vec<String>,
    /// Findings of the run: TL301 (the first NaN/Inf), and errors JAX raises while tracing.
    pub diagnostics: Vec<LocatedDiagnostic>,
}

/// JAX's exception classes live in `jax.errors`; Python's traceback names them with it.
const JAX_ERROR_CLASSES: &[&str] = &[
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracerArrayConversionError",
    "UnexpectedTracerError",
    "NonConcreteBooleanIndexError",
    "KeyReuseError",
    "JaxRuntimeError",
];

/// Runs `path` as `__main__` in values mode. Never panics; returns within the budgets.
pub fn run_file(path: &Path, text: &str, loader: &dyn SourceLoader, config: &AnalysisConfig) -> RunResult {
    let mut budgets = config.budgets.clone();
    // CPython raises MemoryError when an allocation fails.
    budgets.over_memory = crate::interp::memory::OverMemory::MemoryError;
    if let Some(marks) = crate::syntax::punctuation_marks_over(text, budgets.max_source_marks) {
        let why = format!("the file has {marks} punctuation marks and line breaks, over the parse budget ({})", budgets.max_source_marks);
        return RunResult {
            stdout: String::new(),
            stderr: String::new(),
            outcome: RunOutcome::Stopped { at: Some(format!("{}:1", path.display())), why },
            notes: Vec::new(),
            diagnostics: Vec::new(),
        };
    }
    let mut interp = Interp::new(loader, config.search_roots.clone(), budgets, &crate::models::MODELS);
    interp.shim_roots = config.shim_roots.clone();
    interp.values = Some(Default::default());
    interp.abstract_unknowns = false;
    // `run` shows what the program prints, never a hover: previews of every value would cost
    // a third of a run (formatting each small array as NumPy prints it) for nothing.
    interp.seen.off = true;
    let file = interp.add_file(path.to_path_buf(), Rc::from(text));
    let module_ast = interp.files[file as usize].module.clone();
    let syntax_error = module_ast.errors.first().map(|e| (Site { file, span: e.span }, e.message.clone()));
    let (_module, flow) = interp.run_module(file, "__main__");
    let outcome = match (syntax_error, flow) {
        // Python compiles the whole file first: a syntax error means nothing runs.
        (Some((site, message)), _) => {
            interp.stdout.clear();
            interp.stderr.clear();
            RunOutcome::Raised { traceback: vec![frame(&interp, "<module>", site)], exception: format!("SyntaxError: {message}") }
        }
        (None, None) => RunOutcome::Completed,
        (None, Some(Flow::Raise(exc))) => {
            let mut traceback: Vec<TracebackFrame> = exc.traceback.iter().map(|(name, site)| frame(&interp, name, *site)).collect();
            if let (Some(last), Some(site)) = (traceback.last_mut(), exc.site) {
                *last = frame(&interp, &last.function.clone(), site);
            }
            let class = if JAX_ERROR_CLASSES.contains(&exc.class.name.as_ref()) {
                format!("jax.errors.{}", exc.class.name)
            } else {
                exc.class.name.to_string()
            };
            let exception = if exc.message.is_empty() { class } else { format!("{class}: {}", exc.message) };
            RunOutcome::Raised { traceback, exception }
        }
        (None, Some(Flow::Stop(reason, site))) => {
            let why = match reason {
                StopReason::Budget(why) => why,
                StopReason::Unknown(why) => format!("{why} is needed here and tracelens cannot compute it"),
                StopReason::End(why) => why,
            };
            RunOutcome::Stopped { at: site.map(|s| interp.describe_site(s)), why }
        }
        (None, Some(Flow::Return(_) | Flow::Break | Flow::Continue)) => RunOutcome::Completed,
    };
    let notes = interp.values.as_ref().map(|v| v.notes.clone()).unwrap_or_default();
    let mut diagnostics = interp.diagnostics.clone();
    diagnostics.retain(|d| d.code == crate::diagnostics::Code::NanInf);
    RunResult {
        stdout: std::mem::take(&mut interp.stdout),
        stderr: std::mem::take(&mut interp.stderr),
        outcome,
        notes,
        diagnostics: locate_diagnostics(&interp, diagnostics),
    }
}

fn frame(interp: &Interp, function: &str, site: Site) -> TracebackFrame {
    let f = &interp.files[site.file as usize];
    let line = f.line_index().line_of(site.span.start);
    let start = f.line_index().line_start(line) as usize;
    let end = f.text[start..].find('\n').map(|e| start + e).unwrap_or(f.text.len());
    TracebackFrame {
        path: f.path.clone(),
        line: line + 1,
        function: function.to_string(),
        source: f.text.get(start..end).unwrap_or("").trim().to_string(),
    }
}
