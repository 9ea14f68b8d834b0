//! The reproducers of one analysis: for each error, the program staged out of the trace that
//! raised it when that program re-raises it, else the analysed file cut down to the lines
//! that raise it (docs/reproducers.md).

use crate::diagnostics::Severity;
use crate::interp::{Interp, Site};
use crate::jax::TraceKind;

use super::{locate, AnalysisConfig, Engine, LocatedDiagnostic, ReproProgram, Reproducer};

/// A reproducer for every error that has one: staged out of the trace that raised it when
/// tracing that program re-raises it, else cut from the source of the analysed file. The
/// source cut is the file without its comments, which raises what the file raises; when an
/// import had to go (or a `# tracelens:` comment asked for a trace), one engine run on it
/// checks which errors it still raises.
///
/// In an analysis with named dimensions, `located` holds each error as the first analysis
/// made it (with sizes) and `symbolic` the names with their sizes and the same errors as
/// reported (with the names): a staged program is written with the names first
/// (`Program::symbolic`), kept when it raises the named message, else with the sizes.
pub(super) fn make_reproducers(
    interp: &Interp,
    located: &[LocatedDiagnostic],
    symbolic: Option<(&[(String, usize)], &[LocatedDiagnostic])>,
    config: &AnalysisConfig,
) -> Vec<Reproducer> {
    let mut reproducers = Vec::new();
    let mut sources = Vec::new();
    let mut combined: Option<Option<crate::repro::inline::Combined>> = None;
    for (index, (d, shown, _)) in located.iter().enumerate() {
        if d.severity != Severity::Error {
            continue;
        }
        // The program raises where JAX does (for a leaked tracer, its use, not its escape).
        let (path, span) = d.raised_at();
        let loc = &locate(interp, path, span);
        let Some(file_id) = interp.files.iter().position(|f| f.path == path) else { continue };
        let site = Site { file: file_id as crate::interp::FileId, span };
        let what = crate::jax::stmt::What {
            code: d.code.as_str().to_string(),
            message: d.message.lines().next().unwrap_or("").to_string(),
            fake_array_threshold: config.reproducers.fake_array_threshold,
        };
        let emitted = crate::jax::stmt::emit(interp, site, &what);
        let named = emitted.as_ref().and_then(|p| with_names(p, symbolic, index, d));
        let staged = named
            .or_else(|| emitted.filter(|p| crate::repro::minimise::reproduces(p, &Engine)))
            .or_else(|| error_of_call(interp, site, &what));
        let staged_out = staged.is_some();
        let program = match staged {
            Some(p) => ReproProgram::Staged(p),
            None => {
                // The analysed file with the user's modules it imports written into it.
                // Not when a file does not parse (the cut would not, and tree-sitter's recovery
                // on such text can be slow).
                if interp.files.iter().any(|f| !f.module.errors.is_empty()) {
                    continue;
                }
                let combined = combined.get_or_insert_with(|| {
                    let files: Vec<crate::repro::inline::ProjectFile> = interp
                        .files
                        .iter()
                        .map(|f| crate::repro::inline::ProjectFile {
                            path: &f.path,
                            label: f.path.to_string_lossy().to_string(),
                            text: &f.text,
                        })
                        .collect();
                    crate::repro::inline::combine(&files, &config.search_roots)
                });
                let Some(combined) = combined.as_ref() else { continue };
                match crate::repro::source::SourceProgram::cut(combined, (file_id, loc.line), &what.code, &what.message) {
                    Some(p) => {
                        sources.push(reproducers.len());
                        ReproProgram::Source(p)
                    }
                    None => continue,
                }
            }
        };
        // An error in a module the analysed file imports: the analysed file's lines that led
        // to it (the trace's frames, or the traceback of an exception no trace stages out).
        let via = if file_id == 0 {
            Vec::new()
        } else {
            let mut frames = crate::jax::stmt::error_frames(interp, site);
            if !staged_out || frames.is_empty() {
                frames = interp.uncaught.iter().rev().find(|(s, _)| *s == site).map(|(_, f)| f.clone()).unwrap_or_default();
            }
            let mut lines: Vec<u32> = frames.iter().filter(|s| s.file == 0).map(|s| interp.line_of(*s)).collect();
            lines.dedup();
            lines
        };
        let mut r = Reproducer {
            path: path.to_path_buf(),
            line: loc.line,
            finding_line: shown.line,
            code: what.code,
            program,
            text: String::new(),
            links: Vec::new(),
            via,
            analysed: interp.path(0).to_string_lossy().to_string(),
        };
        let (text, links) = match &r.program {
            ReproProgram::Staged(p) => {
                r.line = p.error_line;
                let rendered = p.render(&crate::repro::Reduction::None, &r.regenerate_command(true));
                (rendered.text, rendered.links)
            }
            ReproProgram::Source(p) => {
                let rendered = p.render(&p.header(&crate::repro::Reduction::None, &r.regenerate_command(true)));
                (rendered.text, rendered.links)
            }
        };
        r.text = text;
        r.links = links;
        reproducers.push(r);
    }
    // The source cuts that are not the file less its comments: kept when they re-raise.
    let unchecked: Vec<(usize, &crate::repro::source::SourceProgram)> = sources
        .iter()
        .filter_map(|&i| match &reproducers[i].program {
            ReproProgram::Source(p) if p.needs_check => Some((i, p)),
            _ => None,
        })
        .collect();
    let programs: Vec<&crate::repro::source::SourceProgram> = unchecked.iter().map(|(_, p)| *p).collect();
    let verdicts = crate::repro::source::reproduces_all(&programs, &Engine);
    let drop: Vec<usize> = unchecked.iter().zip(verdicts).filter(|(_, ok)| !ok).map(|((i, _), _)| *i).collect();
    let mut index = 0;
    reproducers.retain(|_| {
        index += 1;
        !drop.contains(&(index - 1))
    });
    reproducers
}

/// `program` with the analysis' named dimensions, raising the error as it was reported (with
/// the names), when it does.
fn with_names(
    program: &crate::repro::Program,
    symbolic: Option<(&[(String, usize)], &[LocatedDiagnostic])>,
    index: usize,
    original: &crate::diagnostics::Diagnostic,
) -> Option<crate::repro::Program> {
    let (names, reported) = symbolic?;
    let (d, _, _) = reported.get(index)?;
    // The two lists are the same errors in the same order; anything else is not relied on.
    if d.code != original.code || d.span != original.span || d.path != original.path {
        return None;
    }
    // The names become top-level Python names of the program: not one it already has.
    let taken = |n: &str| {
        ["jax", "np", "jnp"].contains(&n)
            || n == program.fn_name
            || program.consts.iter().any(|c| c.name == n)
            || program.helpers.iter().any(|h| h.fn_name == n)
    };
    let identifier = |n: &str| {
        n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if names.iter().any(|(n, _)| !identifier(n) || taken(n)) {
        return None;
    }
    let mut p = program.clone();
    p.symbolic = names.to_vec();
    p.message = d.message.lines().next().unwrap_or("").to_string();
    crate::repro::minimise::reproduces_message(&p, &Engine).then_some(p)
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
    let mut program = crate::jax::stmt::emit_trace(interp, record, what, true).ok()?;
    program.file_label = interp.path(site.file).to_string_lossy().to_string();
    program.error_line = line;
    crate::repro::minimise::reproduces(&program, &Engine).then_some(program)
}
