//! The primitive registry: for every [`Prim`], its abstract-evaluation rule (output avals
//! from input avals and parameters) and its properties, each one exhaustive match over
//! `Prim` so that a new variant fails to compile until each rule and property is decided.
//!
//! Families: [`elementwise`], [`shape`], [`reductions`], [`indexing`], [`products`],
//! [`linalg`], [`random`], [`control_flow`] (calls, control flow and markers). The
//! properties are in [`properties`]. `check_ir` re-runs [`abstract_eval`] over every traced
//! equation (the tests turn it on), so a rule and the avals a binder declares cannot drift.

#[cfg(test)]
pub(crate) mod all;
pub mod control_flow;
pub mod conv;
pub mod elementwise;
pub mod families;
pub mod indexing;
pub mod linalg;
pub mod products;
pub mod properties;
pub mod random;
pub mod reductions;
pub mod shape;

use std::rc::Rc;

use super::ad::AdResult;
use super::array::{Array, NdData};
use super::aval::Aval;
use super::dtypes::DType;
use super::ir::{Jaxpr, Prim};
use crate::interp::Interp;

/// A primitive written as one block, in the manner of autodidax and JAX's `lax.py`: its
/// parameters are a struct implementing this trait, and each of its rules is a method, side
/// by side in its family's file (`conv.rs` is the worked example). It is bound as
/// `Prim::Block` (`Prim::block(Conv { .. })`), and every transformation (the rules here,
/// the kernels of `eval.rs`, the rules of `ad.rs`, the properties) asks the block.
///
/// A trait rather than a table of function pointers or a `Prim` variant per primitive: the
/// parameters are the receiver, so a rule reads `self.window_strides` instead of
/// destructuring a `Prim`; a new primitive is one new file and its binder, with no arm to
/// add to any match; and the compiler still refuses a block until every rule and property
/// is decided, since no method but `batching` has a default. A front end (jax.numpy,
/// TensorFlow) binds the same `Prim` through `apply`.
pub trait Block: BlockEq + std::fmt::Debug {
    /// JAX's name of the primitive, as the jaxpr prints it.
    fn name(&self) -> &'static str;
    /// The parameters as the jaxpr prints them (`name=value`, alphabetical).
    fn params(&self) -> String;
    /// The output avals from the input avals (JAX's shape and dtype rules), or JAX's error.
    fn abstract_eval(&self, prim: &Prim, ins: &[Aval]) -> RuleResult;
    /// The CPU kernel on `f64` data (`force` rounds the result to the output dtype); `None`
    /// leaves the value unknown, never guessed.
    fn kernel(&self, ins: &[Rc<NdData>], in_dtypes: &[DType], out_shape: &[usize], out_dtype: DType) -> Option<NdData>;
    /// The JVP rule: the outputs' tangents from the inputs' (`None` is a zero tangent).
    fn jvp(&self, interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], tangents: &[Option<Rc<Array>>]) -> AdResult<Vec<Option<Rc<Array>>>>;
    /// The transpose rule: the cotangents of the `active` inputs from the outputs'.
    fn transpose(
        &self,
        interp: &mut Interp,
        ins: &[Rc<Array>],
        cts: &[Option<Rc<Array>>],
        active: &[bool],
    ) -> AdResult<Vec<Option<Rc<Array>>>>;
    /// Whether the primitive is linear in the inputs flagged `active` together (a custom
    /// JVP rule's tangent map must be: `custom_rules.rs`).
    fn linear_in(&self, active: &[bool]) -> bool;
    /// The batching slot. There are no batching rules: `vmap` traces its function once on
    /// per-example avals (docs/ARCHITECTURE.md, "vmap traces per example"), so every block
    /// says [`Batching::PerExample`]; a block that gains a rule says so here.
    fn batching(&self) -> Batching {
        Batching::PerExample
    }
    fn props(&self) -> Props;
}

/// Equality of blocks of any type (`Prim` derives `PartialEq`), given to every block that
/// derives `PartialEq`.
pub trait BlockEq {
    fn as_any(&self) -> &dyn std::any::Any;
    fn eq_block(&self, other: &dyn Block) -> bool;
}

impl<T: Block + PartialEq + 'static> BlockEq for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn eq_block(&self, other: &dyn Block) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

/// A bound block: what `Prim::Block` holds.
#[derive(Clone, Debug)]
pub struct BlockPrim(pub Rc<dyn Block>);

impl PartialEq for BlockPrim {
    fn eq(&self, other: &BlockPrim) -> bool {
        self.0.eq_block(&*other.0)
    }
}

/// How `vmap` maps a primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batching {
    /// The function is traced on one example's avals and the mapped axis is added to its
    /// outputs; values are computed example by example.
    PerExample,
}

/// The properties of a primitive the engine asks about, all decided in one place per
/// primitive ([`properties::props`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Props {
    /// JAX applies it to typed PRNG key arrays.
    pub takes_keys: bool,
    /// A PRNG primitive, whose kernel is in `jax/random.rs`.
    pub is_random: bool,
    /// The float32 path of the evaluator (`eval.rs`'s `kernel_f32`) has its kernel.
    pub has_f32_kernel: bool,
    /// A call or a marker whose value comes from its body or is not computed.
    pub is_call: bool,
    /// `cond`, `while`, `scan`, `vmap`: the evaluator runs its bodies (`eval_control.rs`).
    pub is_control_flow: bool,
    /// JAX lowers it to a LAPACK routine on CPU, for 32- and 64-bit floats only.
    pub calls_lapack: bool,
    /// `Some(true)`: differentiable, with rules; `Some(false)`: differentiable, no rule yet;
    /// `None`: nothing to differentiate (integer results, randomness, constants).
    pub ad_rule: Option<bool>,
}

impl Props {
    /// Nothing of the above: an ordinary primitive, not differentiable.
    pub const NONE: Props = Props {
        takes_keys: false,
        is_random: false,
        has_f32_kernel: false,
        is_call: false,
        is_control_flow: false,
        calls_lapack: false,
        ad_rule: None,
    };
}

/// The block of a primitive written as one ([`Block`]); `None` for those whose rules are
/// still spread over `eval.rs`, `ad.rs` and this folder's family files.
pub fn block(prim: &Prim) -> Option<&dyn Block> {
    match prim {
        Prim::Block(b) => Some(&*b.0),
        Prim::Unary(_)
        | Prim::Binary(_)
        | Prim::Compare(_)
        | Prim::Select
        | Prim::Clamp
        | Prim::IntegerPow(_)
        | Prim::ConvertElementType { .. }
        | Prim::BroadcastInDim { .. }
        | Prim::Reshape { .. }
        | Prim::Transpose { .. }
        | Prim::Squeeze { .. }
        | Prim::Rev { .. }
        | Prim::Slice { .. }
        | Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::Concatenate { .. }
        | Prim::Pad { .. }
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::Reduce { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Sort { .. }
        | Prim::DotGeneral { .. }
        | Prim::Gather { .. }
        | Prim::Scatter { .. }
        | Prim::TopK { .. }
        | Prim::TopKIndices { .. }
        | Prim::RandomBits { .. }
        | Prim::RandomSeed { .. }
        | Prim::RandomSplit { .. }
        | Prim::RandomFoldIn
        | Prim::RandomUnwrap
        | Prim::RandomWrap
        | Prim::RandomClone
        | Prim::Random { .. }
        | Prim::Pjit { .. }
        | Prim::Scan { .. }
        | Prim::Cond { .. }
        | Prim::While
        | Prim::Vmap { .. }
        | Prim::CustomJvpCall { .. }
        | Prim::CustomVjpCall { .. }
        | Prim::Remat
        | Prim::DebugCallback
        | Prim::StopGradient
        | Prim::Opaque(_)
        | Prim::Linalg(_) => None,
    }
}

/// Why a rule gives no output avals.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleError {
    /// The outputs are not a function of the input avals and parameters (an `Opaque`
    /// stand-in, a call whose body is not at hand):
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
        Prim::Full { shape: dims, dtype, weak_type, .. } => Ok(vec![Aval::new(dims, *dtype).weak(*weak_type)]),
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
        Prim::RandomSeed { raw } => random::seed(prim, ins, *raw),
        Prim::RandomSplit { shape: dims } => random::split(prim, ins, dims),
        Prim::RandomFoldIn | Prim::RandomClone => ew::same(prim, ins),
        Prim::RandomUnwrap => random::unwrap(prim, ins),
        Prim::RandomWrap => random::wrap(prim, ins),
        Prim::Random { shape: dims, dtype, .. } => Ok(vec![Aval::new(dims, *dtype)]),
        Prim::Pjit { .. } | Prim::Remat => control_flow::call(bodies),
        Prim::Scan { length, num_carry, .. } => control_flow::scan(prim, ins, bodies, *length, *num_carry),
        Prim::Cond { .. } => control_flow::cond(prim, bodies),
        Prim::While => control_flow::while_loop(prim, ins, bodies),
        Prim::Vmap { axis_size, out_axes, .. } => control_flow::vmap(prim, bodies, *axis_size, *out_axes),
        Prim::CustomJvpCall { call } | Prim::CustomVjpCall { call } => control_flow::custom_call(prim, ins, call),
        Prim::DebugCallback => Ok(Vec::new()),
        Prim::Opaque(_) => Err(RuleError::Declared("an operation without a primitive-level model has no rule")),
        Prim::Linalg(op) => linalg::abstract_eval(prim, *op, ins),
        Prim::Block(b) => b.0.abstract_eval(prim, ins),
    }
}
