//! The diagnostic catalog (shared/spec/diagnostics.md) as data, and the findings the engine
//! reports. Plain data: the server renders them for the terminal, JSON, SARIF or LSP.

use std::path::PathBuf;

use crate::syntax::ast::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

macro_rules! declare_codes {
    ($($variant:ident = $code:literal, $name:literal, $severity:ident, $summary:literal;)*) => {
        /// A stable diagnostic code. Codes never change meaning once shipped.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant),* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];
            /// `TL104`
            pub fn as_str(self) -> &'static str { match self { $(Code::$variant => $code),* } }
            /// `shape-mismatch`
            pub fn name(self) -> &'static str { match self { $(Code::$variant => $name),* } }
            pub fn default_severity(self) -> Severity { match self { $(Code::$variant => Severity::$severity),* } }
            pub fn summary(self) -> &'static str { match self { $(Code::$variant => $summary),* } }
            pub fn from_str(s: &str) -> Option<Code> {
                match s { $($code | $name => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

declare_codes! {
    Concretization = "TL101", "concretization", Error, "a traced value is used where Python needs a concrete one";
    TracerToNumpy = "TL102", "tracer-to-numpy", Error, "a traced value is converted to a NumPy array or Python value";
    LeakedTracer = "TL103", "leaked-tracer", Error, "a traced value escapes its transformation and is used later";
    ShapeMismatch = "TL104", "shape-mismatch", Error, "incompatible shapes";
    DtypeMismatch = "TL105", "dtype-mismatch", Error, "an operation rejects a dtype";
    NonScalarGrad = "TL106", "non-scalar-grad", Error, "grad of a function whose output is not a real scalar";
    ImmutableUpdate = "TL107", "immutable-update", Error, "item or slice assignment on an immutable array";
    DynamicShape = "TL108", "dynamic-shape", Error, "a shape depends on a traced value";
    ControlFlowSignature = "TL109", "control-flow-signature", Error, "control-flow branches or carries differ in type";
    VmapAxes = "TL110", "vmap-axes", Error, "vmap axes do not match the arguments";
    BadStaticArg = "TL111", "bad-static-arg", Error, "a static argument is unhashable, misnamed or traced";
    InvalidPytree = "TL112", "invalid-pytree", Error, "a non-array leaf or mismatched pytrees";
    SignatureMismatch = "TL113", "signature-mismatch", Error, "a call does not fit a function's declared signature";
    PythonException = "TL190", "python-exception", Error, "the program raises a Python exception";
    PrintAtTrace = "TL201", "print-at-trace", Warning, "print runs only while tracing";
    OuterMutation = "TL202", "outer-mutation", Warning, "a traced function mutates outer state once per trace";
    IteratorAtTrace = "TL203", "iterator-at-trace", Warning, "an iterator is advanced once per trace";
    FrozenValue = "TL204", "frozen-value", Warning, "an impure value is frozen into the trace";
    KeyReuse = "TL205", "key-reuse", Warning, "the same PRNG key is consumed twice";
    ClampedIndex = "TL206", "clamped-index", Warning, "an out-of-bounds static index is clamped or dropped";
    X64Truncation = "TL207", "x64-truncation", Warning, "a 64-bit dtype is silently 32-bit";
    Retrace = "TL210", "retrace", Warning, "a jitted function is traced again";
    RetraceInLoop = "TL211", "retrace-in-loop", Warning, "retracing on every loop iteration";
    LargeConstant = "TL212", "large-constant", Warning, "a large concrete array is baked into the trace";
    PrunedOp = "TL213", "pruned-op", Warning, "an op of a tf.function whose result nothing uses never runs";
    TfVariableCreation = "TL220", "tf-variable-creation", Error, "a tf.Variable is created on a trace other than a tf.function's first";
    NanInf = "TL301", "nan-inf", Warning, "an operation produces the first NaN or Inf the program sees";
    NotAnalysed = "TL900", "not-analysed", Info, "part of the file was not analysed";
}

#[derive(Clone, Debug, PartialEq)]
pub struct Related {
    pub path: PathBuf,
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub path: PathBuf,
    pub span: Span,
    pub message: String,
    pub related: Vec<Related>,
}

/// The related note of a TL103 found where the leaked tracer was stored.
pub const LEAK_ESCAPE_NOTE: &str = "the tracer escaped here: stored where it outlives its transformation";
/// The related note of a TL103 reported at its escape, on the line where JAX raises.
pub const LEAK_USE_NOTE: &str = "the leaked tracer is used here, where JAX raises UnexpectedTracerError";

impl Diagnostic {
    /// Where the cause and the symptom are on different lines, the cause becomes the primary
    /// range and the symptom a related note (shared/spec/diagnostics.md): a leaked tracer is
    /// reported where it escaped (the `append`, the attribute or `global` store), with its
    /// later use, where JAX raises, first among the related notes.
    pub fn cause_first(mut self) -> Diagnostic {
        if self.code != Code::LeakedTracer {
            return self;
        }
        let Some(i) = self.related.iter().position(|r| r.message == LEAK_ESCAPE_NOTE) else { return self };
        let escape = self.related.remove(i);
        let path = std::mem::replace(&mut self.path, escape.path);
        let span = std::mem::replace(&mut self.span, escape.span);
        self.related.insert(0, Related { path, span, message: LEAK_USE_NOTE.to_string() });
        self
    }

    /// Where the real framework raises: the primary range, or for a leaked tracer reported
    /// at its escape (`cause_first`), its use.
    pub fn raised_at(&self) -> (&std::path::Path, Span) {
        match self.related.iter().find(|r| r.message == LEAK_USE_NOTE) {
            Some(r) if self.code == Code::LeakedTracer => (&r.path, r.span),
            _ => (&self.path, self.span),
        }
    }
}
