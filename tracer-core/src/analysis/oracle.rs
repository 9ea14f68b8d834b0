//! The analysis pipeline as the reproducers' oracle (`repro::Oracle`): one analysis of the
//! reproducer's text, alone, with no reproducers of its own.

use std::path::Path;
use std::rc::Rc;

use super::{analyze_file, AnalysisConfig};
use crate::diagnostics::Severity;
use crate::interp::SourceLoader;
use crate::repro::{Oracle, OracleLimits, RaisedError};

/// The engine, as `repro/` asks it whether a program still raises its error.
pub struct Engine;

/// Reproducers import only what the engine models: no file is read.
struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _: &Path) -> Option<Rc<str>> {
        None
    }
}

impl Oracle for Engine {
    fn errors(&self, text: &str, limits: &OracleLimits) -> Vec<RaisedError> {
        let mut config = AnalysisConfig::default();
        config.reproducers.skip = true;
        config.module_only = limits.module_only;
        config.skip_jaxpr_text = true;
        config.budgets.max_time = limits.max_time;
        if let Some(steps) = limits.max_steps {
            config.budgets.max_steps = steps;
        }
        let analysis = analyze_file(Path::new("reproducer.py"), text, &NoFiles, &config);
        analysis
            .diagnostics
            .iter()
            .filter(|(d, _, _)| d.severity == Severity::Error)
            .map(|(d, loc, related)| {
                // Where the program raises: a leaked tracer is reported where it escaped.
                let (_, raised) = d.raised_at();
                let line =
                    d.related.iter().zip(related).find(|(r, _)| r.span == raised && d.span != raised).map_or(loc.line, |(_, l)| l.line);
                RaisedError { line, code: d.code.as_str().to_string(), message: d.message.clone() }
            })
            .collect()
    }
}
