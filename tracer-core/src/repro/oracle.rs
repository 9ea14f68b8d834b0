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

    /// The message's first line: the exception class and JAX's own words, with the shapes,
    /// dtypes and sizes the user saw (`TypeError: ... got (8,) and (4,)`). A reduction of a
    /// reproducer keeps it; the lines after it name the reproducer's file and lines.
    pub fn headline(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

/// Which error a reduction must keep raising: the first check of the unreduced program
/// records its headline, and every candidate after it must raise that same headline.
#[derive(Default)]
pub struct Kept {
    headline: Option<String>,
}

impl Kept {
    /// Among `errors` (those at the failing line with the code and class), is there the kept
    /// one? The first call keeps the first of them.
    pub fn holds<'e>(&mut self, mut errors: impl Iterator<Item = &'e RaisedError>) -> bool {
        match &self.headline {
            Some(h) => errors.any(|e| e.headline() == h),
            None => match errors.next() {
                Some(e) => {
                    self.headline = Some(e.headline().to_string());
                    true
                }
                None => false,
            },
        }
    }

    /// Does the kept headline stop at a TensorFlow graph node (`... for '{{node concat}}'`)?
    /// TensorFlow's own message goes on with the node's inputs and their shapes
    /// (`= ConcatV2[...](a, b, concat/axis)' with input shapes: [4,6], [4,8], []`), which
    /// tracelens leaves out (`tf/errors.rs`): a size no headline shows is still in it.
    pub fn leaves_out_node_inputs(&self) -> bool {
        self.headline.as_deref().is_some_and(|h| h.ends_with("}}'"))
    }
}
