//! The primitive registry: for every [`Prim`], its abstract-evaluation rule (output avals
//! from input avals and parameters) and its properties, each one exhaustive match over
//! `Prim` so that a new variant fails to compile until each rule and property is decided.
//!
//! Families: [`elementwise`], [`shape`], [`reductions`], [`indexing`], [`products`],
//! [`linalg`], [`random`], [`control_flow`] (calls, control flow and markers). The
//! properties are in [`properties`]. `check_ir` re-runs [`abstract_eval`] over every traced
//! equation (the tests turn it on), so a rule and the avals a binder declares cannot drift.

pub mod control_flow;
pub mod elementwise;
pub mod indexing;
pub mod linalg;
pub mod products;
pub mod properties;
pub mod random;
pub mod reductions;
pub mod shape;

use std::rc::Rc;

use super::aval::Aval;
use super::ir::{Jaxpr, Prim};

/// Why a rule gives no output avals.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleError {
    /// The outputs are not a function of the input avals and parameters (an `Opaque`
    /// stand-in, a constant whose shape is not a parameter, a draw from a distribution):
    /// the binder declares them. The text says why.
    Declared(&'static str),
    /// JAX raises when binding the primitive to these avals: its exception class and message.
    Invalid { class: &'static str, message: String },
}

pub type RuleResult = Result<Vec<Aval>, RuleError>;

pub(crate) fn type_error(message: impl Into<String>) -> RuleError {
    RuleError::Invalid { class: "TypeError", message: message.into() }
}

/// The input aval `i`, or the error of a primitive given too few operands.
pub(crate) fn arg<'a>(prim: &Prim, ins: &'a [Aval], i: usize) -> Result<&'a Aval, RuleError> {
    ins.get(i).ok_or_else(|| type_error(format!("{} takes at least {} operands, got {}", prim.name(), i + 1, ins.len())))
}

/// The output avals of `prim` applied to operands of `in_avals` (JAX's abstract evaluation).
/// `bodies` are the equation's bodies (a `pjit`'s jaxpr, a `scan`'s body, `cond`'s branches).
pub fn abstract_eval(prim: &Prim, in_avals: &[Aval], bodies: &[Rc<Jaxpr>]) -> RuleResult {
    use elementwise as ew;
    let ins = in_avals;
    match prim {
        Prim::Unary(u) => ew::unary(prim, *u, ins),
        Prim::Binary(b) => ew::binary(prim, *b, ins),
        Prim::Compare(_) => ew::compare(prim, ins),
        Prim::Select => ew::select(prim, ins),
        Prim::Clamp => ew::clamp(prim, ins),
        Prim::IntegerPow(_) | Prim::StopGradient => ew::same(prim, ins),
        Prim::ConvertElementType { new_dtype, weak_type } => ew::convert(prim, ins, *new_dtype, *weak_type),
        Prim::BroadcastInDim { shape: out, broadcast_dimensions } => shape::broadcast_in_dim(prim, ins, out, broadcast_dimensions),
        Prim::Reshape { new_sizes } => shape::reshape(prim, ins, new_sizes),
        Prim::Transpose { permutation } => shape::transpose(prim, ins, permutation),
        Prim::Squeeze { dimensions } => shape::squeeze(prim, ins, dimensions),
        Prim::Rev { dimensions } => shape::rev(prim, ins, dimensions),
        Prim::Slice { start, limit, strides } => shape::slice(prim, ins, start, limit, strides),
        Prim::DynamicSlice { sizes } => shape::dynamic_slice(prim, ins, sizes),
        Prim::DynamicUpdateSlice => shape::dynamic_update_slice(prim, ins),
        Prim::Concatenate { dimension } => shape::concatenate(prim, ins, *dimension),
        Prim::Pad { config } => shape::pad(prim, ins, config),
        Prim::Iota { dtype, shape: dims, dimension } => shape::iota(*dtype, dims, *dimension),
        Prim::Full { .. } => Err(RuleError::Declared("`full`'s shape and dtype are not among its parameters")),
        Prim::Reduce { axes, .. } => reductions::reduce(prim, ins, axes),
        Prim::ArgReduce { axis, index_dtype, .. } => reductions::arg_reduce(prim, ins, *axis, *index_dtype),
        Prim::Cumulative { axis, .. } => reductions::cumulative(prim, ins, *axis),
        Prim::Sort { dimension, num_keys } => reductions::sort(prim, ins, *dimension, *num_keys),
        Prim::TopK { k } => reductions::top_k(prim, ins, *k, false),
        Prim::TopKIndices { k } => reductions::top_k(prim, ins, *k, true),
        Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
            products::dot_general(prim, ins, [lhs_contract, rhs_contract, lhs_batch, rhs_batch])
        }
        Prim::Gather { index, .. } => indexing::gather(prim, ins, index),
        Prim::Scatter { index, .. } => indexing::scatter(prim, ins, index.as_deref()),
        Prim::RandomBits { shape: dims } => random::bits(dims),
        Prim::RandomSeed => Err(RuleError::Declared("`random_seed` makes a typed key for `key()` and its raw data for `PRNGKey()`")),
        Prim::RandomSplit { shape: dims } => random::split(prim, ins, dims),
        Prim::RandomFoldIn | Prim::RandomClone => ew::same(prim, ins),
        Prim::RandomUnwrap => random::unwrap(prim, ins),
        Prim::RandomWrap => random::wrap(prim, ins),
        Prim::Random { .. } => Err(RuleError::Declared("a draw's shape and dtype are the caller's arguments, not parameters")),
        Prim::Pjit { .. } | Prim::Remat => control_flow::call(bodies),
        Prim::Scan { length, num_carry, .. } => control_flow::scan(prim, ins, bodies, *length, *num_carry),
        Prim::Cond { .. } => control_flow::cond(prim, bodies),
        Prim::While => control_flow::while_loop(prim, ins, bodies),
        Prim::Vmap { axis_size, out_axes, .. } => control_flow::vmap(prim, bodies, *axis_size, *out_axes),
        Prim::CustomJvpCall { call } | Prim::CustomVjpCall { call } => control_flow::custom_call(prim, ins, call),
        Prim::DebugCallback => Ok(Vec::new()),
        Prim::Opaque(_) => Err(RuleError::Declared("an operation without a primitive-level model has no rule")),
        Prim::Linalg(op) => linalg::abstract_eval(prim, *op, ins),
    }
}
