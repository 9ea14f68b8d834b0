//! Analysing one source text as `/project/main.py`, with no other file on disk, and reading
//! what a user sees of it: findings (`line code`, TL900 budget stops included) and traced
//! functions (`name:def line traces`).

use std::path::PathBuf;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, run_file, AnalysisConfig, FileAnalysis, RunResult};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _: &std::path::Path) -> Option<std::rc::Rc<str>> {
        None
    }
}

pub fn analyze(source: &str) -> FileAnalysis {
    let config = AnalysisConfig { search_roots: vec![PathBuf::from("/project")], ..Default::default() };
    analyze_file(&PathBuf::from("/project/main.py"), source, &NoFiles, &config)
}

/// `python /project/main.py` on tracelens' interpreter (`tracelens run`).
#[allow(dead_code)] // each test binary includes this module and uses part of it
pub fn run(source: &str) -> RunResult {
    let config = AnalysisConfig { search_roots: vec![PathBuf::from("/project")], ..Default::default() };
    run_file(&PathBuf::from("/project/main.py"), source, &NoFiles, &config)
}

/// `line code` of every finding, TL900 included.
pub fn findings(analysis: &FileAnalysis) -> Vec<String> {
    analysis.diagnostics.iter().map(|(d, loc, _)| format!("{} {}", loc.line, d.code.as_str())).collect()
}

/// `name:def line traces` of every traced function.
pub fn traced(analysis: &FileAnalysis) -> Vec<String> {
    analysis.functions.iter().map(|f| format!("{}:{} {}", f.name, f.location.line, f.traces.len())).collect()
}
