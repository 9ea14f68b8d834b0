//! What the oracle (real JAX) and tracelens each report about one fixture, as read from JSON.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The JSON object `tests/conformance/oracle.py` prints.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OracleReport {
    #[serde(default)]
    pub fixture: String,
    #[serde(default)]
    pub jax_version: String,
    #[serde(default)]
    pub annotations: Vec<Annotation>,
    #[serde(default)]
    pub exception: Option<JaxException>,
    #[serde(default)]
    pub jit_traces: Vec<JitFunction>,
    #[serde(default)]
    pub revealed: Vec<Revealed>,
    /// How many times each `# warning:` line ran.
    #[serde(default)]
    pub line_hits: BTreeMap<u32, u64>,
    #[serde(default)]
    pub stdout: String,
    /// Wall time of the fixture itself under JAX, without interpreter start-up and imports.
    #[serde(default)]
    pub run_seconds: f64,
    #[serde(default)]
    pub oracle_error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationKind {
    Error,
    Warning,
    Revealed,
    Traces,
}

/// One expectation comment, already attached to the line it speaks of.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Annotation {
    pub kind: AnnotationKind,
    /// `None` when a comment standing alone is followed by no code.
    pub line: Option<u32>,
    #[serde(default)]
    pub comment_line: u32,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub exception: Option<String>,
    #[serde(default)]
    pub substring: Option<String>,
    #[serde(default)]
    pub avals: Option<Vec<String>>,
    #[serde(default)]
    pub count: Option<u32>,
    /// Why the comment could not be read, when it could not.
    #[serde(default)]
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JaxException {
    #[serde(rename = "class")]
    pub class_name: String,
    pub message: String,
    /// The innermost traceback frame in the fixture file.
    pub line: Option<u32>,
}

/// Every jit trace JAX made of the functions with one name defined at one line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JitFunction {
    pub name: String,
    pub def_line: Option<u32>,
    /// First decorator line through the `def` line.
    pub def_lines_span: [u32; 2],
    pub traces: u32,
    #[serde(default)]
    pub per_trace: Vec<OracleTrace>,
    #[serde(default)]
    pub calls: Vec<OracleCall>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OracleTrace {
    pub call_line: Option<u32>,
    #[serde(default)]
    pub args: Vec<String>,
    /// `None` when tracing raised.
    pub outputs: Option<Vec<String>>,
    #[serde(default)]
    pub cause: Option<String>,
    /// Each argument leaf's path as JAX's debug info names it (`params['w']`).
    #[serde(default)]
    pub arg_paths: Vec<String>,
    /// Each output leaf's path (`result[0]['loss']`); `None` when tracing raised.
    #[serde(default)]
    pub out_paths: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OracleCall {
    pub call_line: Option<u32>,
    pub outputs: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Revealed {
    pub line: u32,
    pub target: Option<String>,
    /// The line of the target name itself, which tracelens' `values` use.
    #[serde(default)]
    pub target_line: Option<u32>,
    #[serde(default)]
    pub unsupported: Option<String>,
    #[serde(default)]
    pub runs: u64,
    /// Distinct avals of the target while it held a tracer, in order of first appearance.
    #[serde(default)]
    pub avals: Vec<String>,
    /// What it held outside any trace (concrete arrays, Python values).
    #[serde(default)]
    pub untraced: Vec<String>,
}

/// One object of `tracelens check --format json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Diagnostic {
    #[serde(default)]
    pub path: String,
    pub code: String,
    #[serde(default)]
    pub name: String,
    pub severity: String,
    pub line: u32,
    #[serde(default)]
    pub column: u32,
    pub message: String,
    #[serde(default)]
    pub related: Vec<RelatedNote>,
}

/// One of a diagnostic's `related` locations.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RelatedNote {
    #[serde(default)]
    pub path: String,
    pub line: u32,
    #[serde(default)]
    pub message: String,
}

/// The related note of a TL103 on the line where JAX raises: tracelens reports a leaked
/// tracer where it escaped, and its use, where JAX raises, as this note.
pub const LEAK_USE_NOTE: &str = "the leaked tracer is used here, where JAX raises UnexpectedTracerError";

impl Diagnostic {
    pub fn is_finding(&self) -> bool {
        self.severity == "error" || self.severity == "warning"
    }

    /// The line where JAX raises this error: the diagnostic's own line, except for a leaked
    /// tracer (TL103), reported at its escape with JAX's line as a related note.
    pub fn jax_line(&self) -> u32 {
        match self.related.iter().find(|r| r.message == LEAK_USE_NOTE) {
            Some(r) if self.code == "TL103" => r.line,
            _ => self.line,
        }
    }
}

/// `tracelens trace --format json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TraceReport {
    #[serde(default)]
    pub functions: Vec<TracedFunction>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TracedFunction {
    pub name: String,
    #[serde(default)]
    pub path: String,
    pub line: u32,
    #[serde(default)]
    pub transform: String,
    #[serde(default)]
    pub traces: Vec<TracelensTrace>,
    /// The library function JAX traces when this user's function is its whole body
    /// (haiku's `apply_fn`): JAX's tracer records only the fixture's own functions.
    #[serde(default)]
    pub through: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TracelensTrace {
    #[serde(default)]
    pub call_line: Option<u32>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Absent or `null` for a trace that did not finish.
    #[serde(default)]
    pub outputs: Option<Vec<String>>,
    #[serde(default)]
    pub cause: Option<String>,
    /// How tracelens reached the trace: `called`, `annotations`, `unknown arguments`.
    #[serde(default)]
    pub route: Option<String>,
    /// Each argument and output leaf's path, when tracelens knows them (else empty).
    #[serde(default)]
    pub arg_paths: Vec<String>,
    #[serde(default)]
    pub out_paths: Vec<String>,
    #[serde(default)]
    pub values: Vec<TracedValue>,
}

/// The aval of an assignment target inside a traced function.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TracedValue {
    pub line: u32,
    #[serde(default)]
    pub column: u32,
    pub name: String,
    pub aval: String,
}

/// What tracelens said about one fixture.
#[derive(Debug, Clone, Default)]
pub struct TracelensReport {
    pub diagnostics: Vec<Diagnostic>,
    pub trace: TraceReport,
    /// The tool itself failed (crash, bad JSON, exit status 2).
    pub failures: Vec<String>,
}
