//! tracer-core: the tracelens engine. Interprets a Python program, models what `jax.jit`
//! and the other JAX transformations do to it, and returns traces plus diagnostics.
//! Knows nothing of LSP, JSON or tokio, and does no IO of its own.

// With the unit tests compiled in, a test left out of its list is dead code (unit_tests.rs).
#![cfg_attr(feature = "unit-tests", deny(dead_code))]

pub mod analysis;
pub mod diagnostics;
pub mod entry;
pub mod entry_argparse;
pub mod entry_hooks;
pub mod entry_staged;
pub mod interp;
pub mod jax;
mod models;
pub mod repro;
pub mod run;
pub mod symbolic;
pub mod syntax;
pub mod test_runner;
pub mod tf;
#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod unit_tests;

pub use analysis::{analyze_file, analyze_parsed, AnalysisConfig, FileAnalysis};
pub use run::{run_file, RunOutcome, RunResult};
