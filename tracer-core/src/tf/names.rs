//! The names of TensorFlow the interpreter needs before any TensorFlow object exists: the
//! modules that are modelled (which `import` resolves) and the exception classes (which the
//! builtin classes include, so `except tf.errors.InvalidArgumentError` names a class). A leaf:
//! it names no other module, so the interpreter reads it without entering the models.

/// The modules of TensorFlow that are modelled (attributes come from `surface.rs`).
pub const TF_MODULES: &[&str] = &[
    "tensorflow",
    "tensorflow.math",
    "tensorflow.nn",
    "tensorflow.linalg",
    "tensorflow.random",
    "tensorflow.debugging",
    "tensorflow.autograph",
    "tensorflow.autograph.experimental",
    "tensorflow.config",
    "tensorflow.errors",
];

/// TensorFlow's exception classes, with their bases, as `tf.errors` and
/// `tensorflow.python.framework.errors_impl` define them.
pub const EXCEPTION_CLASSES: &[(&str, &str)] = &[
    ("OpError", "Exception"),
    ("InvalidArgumentError", "OpError"),
    ("OutOfRangeError", "OpError"),
    ("OperatorNotAllowedInGraphError", "TypeError"),
    ("InaccessibleTensorError", "ValueError"),
];

/// AutoGraph's exception classes (`tensorflow.python.autograph`), which `tf.errors` does not
/// name: `StagingError` wraps an error raised while converting or tracing (a recursive
/// `tf.function`'s `RecursionError`).
pub const AUTOGRAPH_EXCEPTION_CLASSES: &[(&str, &str)] =
    &[("PyCTError", "Exception"), ("AutoGraphError", "PyCTError"), ("StagingError", "AutoGraphError")];
