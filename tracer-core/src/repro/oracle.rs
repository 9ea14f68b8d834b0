//! The engine as the reproducers' oracle, as `repro/` sees it: a reproducer is kept (and a
//! minimiser's candidate accepted) when tracing its text raises the same error. `repro/`
//! sits below the analysis pipeline and does not call it; the pipeline hands itself in as
//! an `Oracle` (`analysis::Engine`), so the two do not import each other in a circle.

use std::time::Duration;

/// Traces a standalone program's text (a file that imports only what the engine models).
pub trait Oracle {
    /// The errors tracing `text` raises, within `limits`.
    fn errors(&self, text: &str, limits: &OracleLimits) -> Vec<RaisedError>;
}

/// How long one oracle run may take, and what it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct OracleLimits {
    pub max_time: Duration,
    /// `None`: the engine's default step budget.
    pub max_steps: Option<u64>,
    /// Run the module only, not its tests (as Python runs a script).
    pub module_only: bool,
}

/// An error diagnostic of an oracle run.
#[derive(Clone, Debug, PartialEq)]
pub struct RaisedError {
    /// 1-based line in the traced text.
    pub line: u32,
    /// The diagnostic code (`TL104`).
    pub code: String,
    /// Its message, starting with the exception class (`TypeError: ...`).
    pub message: String,
}

impl RaisedError {
    /// Is this the error `code` with exception `class` at 1-based `line`?
    pub fn is(&self, line: u32, code: &str, class: &str) -> bool {
        self.line == line && self.code == code && self.message.split(':').next().is_some_and(|c| c == class)
    }
}
