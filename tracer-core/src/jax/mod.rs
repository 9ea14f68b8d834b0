//! The JAX model: arrays as avals with data on demand, traces that record IR, the
//! transformations as higher-order APIs, and jax.numpy on top (design.md §1–4).

pub mod ad;
pub mod ad_compositions;
pub mod ad_control;
pub mod api;
pub mod array;
pub mod array_model;
pub mod aval;
mod bind;
pub mod custom_rules;
pub mod dtypes;
pub mod eager_log;
pub mod effects;
pub mod error_codes;
pub mod errors;
pub mod eval;
pub mod eval_control;
pub mod eval_cost;
pub mod eval_ints;
pub mod eval_jaxpr;
pub mod ir;
pub mod memo;
pub mod numerics;
pub mod numpy;
pub mod prims;
pub mod print;
pub mod rounding;
pub mod signatures;
pub mod special;
mod state;
pub mod stmt;
pub mod surface;
pub mod taint;
pub mod transforms;
pub mod value_log;

use bind::bind1;
pub use bind::{apply, apply1, apply_opaque1, apply_with_bodies, rule_avals};
pub use state::{InputParameter, JaxState, ReplayedValues, Route, TraceFrame, TraceKind, TraceRecord, ValueRecord};

use crate::diagnostics::Code;
use crate::interp::Interp;

/// Raises `class` with `code` at the current user line.
pub fn raise(interp: &Interp, class: &str, code: Code, message: impl Into<String>) -> crate::interp::Flow {
    interp.raise(class, code, message)
}
