//! The primitive registry: for every [`Prim`], its abstract-evaluation rule (output avals
//! from input avals and parameters) and its properties, each one exhaustive match over
//! `Prim` so that a new variant fails to compile until each rule and property is decided.
//!
//! Families: [`elementwise`], [`shape`], [`reductions`], [`indexing`], [`products`],
//! [`linalg`], [`random`], [`control_flow`] (calls, control flow and markers). The
//! properties are in [`properties`]. `check_ir` re-runs [`abstract_eval`] over every traced
//! equation (the tests turn it on), so a rule and the avals a binder declares cannot drift.

#[cfg(feature = "unit-tests")]
pub(crate) mod all;
pub mod batching;
pub mod control_flow;
pub mod conv;
mod conv_batching;
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

use smallvec::smallvec;

use super::ad::{self, AdResult};
use super::array::{Array, NdData, NdDataF32};
use super::aval::Aval;
use super::dtypes::DType;
use super::ir::{Eqn, Jaxpr, Prim};
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
/// is decided, since no method but `batching` and `batch` (no batching rule) has a default. A front end (jax.numpy,
/// TensorFlow) binds the same `Prim` through `apply`.
pub trait Block: BlockEq + std::fmt::Debug {
    /// JAX's name of the primitive, as the jaxpr prints it.
    fn name(&self) -> &'static str;
    /// The parameters as the jaxpr prints them (`name=value`, alphabetical).
    fn params(&self) -> String;
    /// The output avals from the input avals (JAX's shape and dtype rules), or JAX's error.
    fn abstract_eval(&self, prim: &Prim, ins: &[&Aval]) -> RuleResult;
    /// The CPU kernel on `f64` data (`force` rounds the result to the output dtype); `None`
    /// leaves the value unknown, never guessed.
    fn kernel(&self, ins: &[Rc<NdData>], in_dtypes: &[DType], out_shape: &[usize], out_dtype: DType) -> Option<NdData>;
    /// The JVP rule: the outputs' tangents from the inputs' (`None` is a zero tangent).
    fn jvp(&self, interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], tangents: &[Option<Rc<Array>>]) -> Tangents;
    /// The transpose rule: the cotangents of the `active` inputs from the outputs'.
    fn transpose(&self, interp: &mut Interp, ins: &[Rc<Array>], cts: &[Option<Rc<Array>>], active: &[bool]) -> Tangents;
    /// Whether the primitive is linear in the inputs flagged `active` together (a custom
    /// JVP rule's tangent map must be: `custom_rules/`).
    fn linear_in(&self, active: &[bool]) -> bool;
    /// Whether the block has a batching rule for these operands mapped (`mapped[i]`: operand
    /// `i` has a batch dimension). Without one (the default), a `vmap` whose function binds
    /// the block on a mapped operand computes example by example (docs/ARCHITECTURE.md,
    /// "vmap batches by rules, else per example").
    fn batching(&self, _mapped: &[bool]) -> Batching {
        Batching::PerExample
    }
    /// The batching rule, asked only where [`Block::batching`] says [`Batching::Rule`]: the
    /// outputs, batched, with their batch dimensions (`batching.rs`).
    fn batch(&self, _interp: &mut Interp, prim: &Prim, _ins: &[Rc<Array>], _dims: &[batching::BDim]) -> batching::BatchResult {
        Err(ad::no_rule_for(prim))
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

/// How `vmap` maps a primitive applied to mapped operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batching {
    /// A batching rule ([`batch`]) binds the batched primitive(s).
    Rule,
    /// A call (`pjit`, `checkpoint`) or a nested `vmap` equation: its body is batched
    /// (`transforms/batch.rs`, JAX's `_pjit_batcher` and `remat_vmap`; a `vmap` equation
    /// stays one over its own axis, its body batched over the outer one),
    /// when every equation of it that sees a mapped operand can be.
    Call,
    /// `cond`: its branches are batched (`transforms/batch.rs`, JAX's `_cond_batching_rule`;
    /// a mapped index becomes a `select_n` of every branch's outputs).
    Cond,
    /// `scan` and `while`: one loop whose body is batched, its batched carries found by a
    /// fixpoint (`transforms/batch_loops.rs`, JAX's `_scan_batching_rule` and
    /// `_while_loop_batching_rule`; a `while` whose predicate would be batched has none).
    Loop,
    /// No rule: a `vmap` whose function applies it to a mapped operand keeps its function's
    /// per-example trace inside one `vmap` equation, and values are computed example by
    /// example.
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
    /// Its JVP is JAX's symbolic zero (`ad.defjvp_zero`, `stop_gradient`): under `grad` and
    /// `jvp` its outputs are never tracers (`taint.rs`), whatever its inputs.
    pub zero_jvp: bool,
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
        zero_jvp: false,
    };
}

/// The block of a primitive written as one ([`Block`]); `None` for those whose rules are
/// still spread over `eval.rs`, `ad.rs` and this folder's family files.
pub fn block(prim: &Prim) -> Option<&dyn Block> {
    match prim {
        Prim::Block(b) => Some(&*b.0),
        families::all_but!(blocks) => None,
    }
}

// ---------------------------------------------------------------------------------------
// The registry's tables: one exhaustive match per transformation, each routing a family to
// the functions of its file (its kernels and derivative rules beside its rule), as
// autodidax keeps one table per transformation.

/// The CPU kernel of `prim` in f64 (`eval::force` computes the operands and rounds the result
/// to `out_dtype`); `None` where there is none, and the value stays unknown.
pub(crate) fn kernel(prim: &Prim, ins: &[Rc<NdData>], in_dtypes: &[DType], out_shape: &[usize], out_dtype: DType) -> Option<NdData> {
    match prim {
        families::elementwise!() => elementwise::kernel(prim, ins, in_dtypes, out_shape, out_dtype),
        families::movement!() | families::creation!() => shape::kernel(prim, ins, out_shape),
        families::reductions!() => reductions::kernel(prim, ins, out_shape, out_dtype),
        families::indexing!() => indexing::kernel(prim, ins, out_shape, out_dtype),
        Prim::DotGeneral { .. } => products::kernel(prim, ins, out_shape, out_dtype),
        Prim::Linalg(op) => linalg::kernels::kernel(*op, ins, out_shape),
        Prim::Block(b) => b.0.kernel(ins, in_dtypes, out_shape, out_dtype),
        // The PRNG kernels take keys (`eval::force` hands them to `jax/random.rs`); calls and
        // control flow are computed from their bodies (`eval_jaxpr.rs`, `eval_control.rs`).
        families::random!() | families::control_flow!() | families::calls!() | families::markers!() => None,
    }
}

/// The float32 path's kernel (float32 and bool data held in `f32`; `properties::props`
/// says which primitives have one): exactly what [`kernel`] followed by rounding gives, with
/// whether every element is known to be finite. `None` leaves the operation to [`kernel`].
pub(crate) fn kernel_f32(
    prim: &Prim,
    ins: &[NdDataF32],
    in_dtypes: &[DType],
    out_shape: &[usize],
    out_dtype: DType,
) -> Option<(NdDataF32, bool)> {
    match prim {
        families::elementwise!() => elementwise::kernel_f32(prim, ins, in_dtypes, out_shape, out_dtype),
        families::movement!() | families::creation!() => shape::kernel_f32(prim, ins, out_shape),
        families::reductions!() => reductions::kernel_f32(prim, ins, out_shape, out_dtype),
        Prim::DotGeneral { .. } => products::kernel_f32(prim, ins, out_shape, out_dtype),
        families::indexing!()
        | families::random!()
        | families::control_flow!()
        | families::calls!()
        | families::markers!()
        | Prim::Linalg(_)
        | Prim::Block(_) => None,
    }
}

/// The JVP rule of `prim` (one output, differentiable: `ad.rs` has checked both): the
/// output's tangent from the operands' (`None` is a zero tangent).
pub(crate) fn jvp(interp: &mut Interp, j: Jvping) -> Tangents {
    let Jvping { eqn, ins, ts, .. } = j;
    match &eqn.prim {
        families::elementwise!() => elementwise::derivatives::jvp_rule(interp, j),
        families::movement!() | families::creation!() => shape::jvp_rule(interp, j),
        families::reductions!() => reductions::jvp_rule(interp, j),
        families::indexing!() => indexing::jvp_rule(interp, j),
        Prim::DotGeneral { .. } => products::bilinear_jvp(interp, &eqn.prim, ins, ts),
        Prim::Linalg(op) => linalg::derivatives::linalg_jvp(interp, *op, j),
        Prim::Block(b) => b.0.jvp(interp, &eqn.prim, ins, ts),
        // `cond` and `while` are differentiated by `ad_control.rs`, the calls through their
        // bodies (`ad.rs`); randomness and markers have no derivative.
        families::random!() | families::control_flow!() | families::calls!() | families::markers!() => Err(ad::no_rule(eqn)),
    }
}

/// The transpose rule of `prim`: the cotangents of the `active` operands from the outputs'.
pub(crate) fn transpose(
    interp: &mut Interp,
    eqn: &Eqn,
    ins: &[Rc<Array>],
    outs: &[Rc<Array>],
    gs: &[Option<Rc<Array>>],
    active: &[bool],
) -> Tangents {
    if let Prim::Block(b) = &eqn.prim {
        return b.0.transpose(interp, ins, gs, active);
    }
    let (out, g) = match (outs, gs) {
        ([out], [Some(g)]) => (out, g),
        _ => return Err(ad::no_rule(eqn)),
    };
    let t = Transposing { eqn, ins, out, g, active };
    let mut cts = vec![None; ins.len()];
    match &eqn.prim {
        families::elementwise!() => elementwise::derivatives::transpose_rule(interp, t, &mut cts)?,
        families::movement!() | families::creation!() => shape::transpose_rule(interp, t, &mut cts)?,
        families::reductions!() => reductions::transpose_rule(interp, t, &mut cts)?,
        families::indexing!() => indexing::transpose_rule(interp, t, &mut cts)?,
        Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
            let dims = products::DotDims { lhs_contract, rhs_contract, lhs_batch, rhs_batch };
            products::dot_general_transpose(interp, &dims, ins, g, active, &mut cts)?;
        }
        Prim::Linalg(op) => return linalg::derivatives::linalg_transpose(interp, *op, t),
        families::random!() | families::control_flow!() | families::calls!() | families::markers!() | Prim::Block(_) => {
            return Err(ad::no_rule(eqn))
        }
    }
    Ok(cts)
}

/// What a family's JVP rule is given: the equation, its operands and its one output, and
/// the operands' tangents `ts` (`None` is a zero tangent).
#[derive(Clone, Copy)]
pub(crate) struct Jvping<'a> {
    pub eqn: &'a Eqn,
    pub ins: &'a [Rc<Array>],
    pub out: &'a Rc<Array>,
    pub ts: &'a [Option<Rc<Array>>],
}

/// What a JVP or transpose rule gives: a tangent (cotangent) per output (per operand),
/// `None` for a zero.
pub(crate) type Tangents = AdResult<Vec<Option<Rc<Array>>>>;

/// What a family's transpose rule is given: the equation, its operands and its output, the
/// output's cotangent `g`, and which operands want a cotangent (`active`). The rule writes
/// those into the slots the registry hands it, one per operand (`None` is a zero).
#[derive(Clone, Copy)]
pub(crate) struct Transposing<'a> {
    pub eqn: &'a Eqn,
    pub ins: &'a [Rc<Array>],
    pub out: &'a Rc<Array>,
    pub g: &'a Rc<Array>,
    pub active: &'a [bool],
}

/// Whether `prim` applied to operands of which `mapped[i]` are mapped has a batching rule
/// (an equation with no mapped operand needs none: `batching::apply_unmapped`).
pub fn batching(prim: &Prim, mapped: &[bool]) -> Batching {
    let rule = match prim {
        families::elementwise!() => elementwise::has_batch_rule(prim),
        families::movement!() | families::creation!() => shape::has_batch_rule(prim, mapped),
        families::reductions!() => reductions::has_batch_rule(prim),
        families::indexing!() => indexing::has_batch_rule(prim),
        Prim::DotGeneral { .. } | Prim::Linalg(_) => true,
        families::random!() => random::has_batch_rule(prim, mapped),
        Prim::Block(b) => return b.0.batching(mapped),
        // A nested `vmap` equation is batched through its body too (`transforms/batch.rs`).
        Prim::Pjit { .. } | Prim::Remat | Prim::Vmap { .. } => return Batching::Call,
        Prim::Cond { .. } => return Batching::Cond,
        Prim::Scan { .. } | Prim::While => return Batching::Loop,
        // The custom-derivative markers: one batched marker (`custom_rules/batching.rs`), batched
        // again under a nested `vmap`.
        Prim::CustomJvpCall { .. } | Prim::CustomVjpCall { .. } => true,
        families::markers!() => false,
    };
    if rule {
        Batching::Rule
    } else {
        Batching::PerExample
    }
}

/// The batching rule of `prim` (JAX's `primitive_batchers[prim]`): the operands, batched,
/// with their batch dimensions (at least one mapped) in; the outputs bound batched with
/// theirs out. Asked only where [`batching`] says [`Batching::Rule`].
pub(crate) fn batch(interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], dims: &[batching::BDim]) -> batching::BatchResult {
    match prim {
        families::elementwise!() => elementwise::batch_rule(interp, prim, ins, dims),
        families::movement!() | families::creation!() => shape::batch_rule(interp, prim, ins, dims),
        families::reductions!() => reductions::batch_rule(interp, prim, ins, dims),
        families::indexing!() => indexing::batch_rule(interp, prim, ins, dims),
        Prim::DotGeneral { .. } => products::batch_rule(interp, prim, ins, dims),
        Prim::Linalg(op) => linalg::batching::batch_rule(interp, prim, *op, ins, dims),
        families::random!() => random::batch_rule(interp, prim, ins, dims),
        Prim::Block(b) => b.0.batch(interp, prim, ins, dims),
        Prim::CustomJvpCall { .. } | Prim::CustomVjpCall { .. } => crate::jax::custom_rules::batching::batch_rule(interp, prim, ins, dims),
        families::control_flow!() | Prim::Pjit { .. } | Prim::Remat | families::markers!() => Err(ad::no_rule_for(prim)),
    }
}

/// Why a rule gives no output avals.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleError {
    /// The outputs are not a function of the input avals and parameters (a call whose body
    /// is not at hand): the equation cannot be bound. The text says why.
    Declared(&'static str),
    /// JAX raises when binding the primitive to these avals: its exception class and message.
    Invalid { class: &'static str, message: String },
}

/// A primitive's output avals: inline for the one output almost every primitive has (a rule
/// runs at every `bind`).
pub type Avals = smallvec::SmallVec<[Aval; 1]>;

pub type RuleResult = Result<Avals, RuleError>;

pub(crate) fn type_error(message: impl Into<String>) -> RuleError {
    RuleError::Invalid { class: "TypeError", message: message.into() }
}

/// The input aval `i`, or the error of a primitive given too few operands.
pub(crate) fn arg<'a>(prim: &Prim, ins: &[&'a Aval], i: usize) -> Result<&'a Aval, RuleError> {
    ins.get(i).copied().ok_or_else(|| type_error(format!("{} takes at least {} operands, got {}", prim.name(), i + 1, ins.len())))
}

/// The output avals of `prim` applied to operands of `in_avals` (JAX's abstract evaluation).
/// `bodies` are the equation's bodies (a `pjit`'s jaxpr, a `scan`'s body, `cond`'s branches).
pub fn abstract_eval(prim: &Prim, in_avals: &[&Aval], bodies: &[Rc<Jaxpr>]) -> RuleResult {
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
        Prim::Full { shape: dims, dtype, weak_type, .. } => Ok(smallvec![Aval::new(dims, *dtype).weak(*weak_type)]),
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
        Prim::RandomBits { shape: dims } => random::bits(prim, ins, dims),
        Prim::RandomSeed { raw } => random::seed(prim, ins, *raw),
        Prim::RandomSplit { shape: dims } => random::split(prim, ins, dims),
        Prim::RandomFoldIn => random::fold_in(prim, ins),
        Prim::RandomClone => ew::same(prim, ins),
        Prim::RandomUnwrap => random::unwrap(prim, ins),
        Prim::RandomWrap => random::wrap(prim, ins),
        Prim::Random { shape: dims, dtype, .. } => random::draw(prim, ins, dims, *dtype),
        Prim::Pjit { .. } | Prim::Remat => control_flow::call(bodies),
        Prim::Scan { length, num_carry, .. } => control_flow::scan(prim, ins, bodies, *length, *num_carry),
        Prim::Cond { .. } => control_flow::cond(prim, bodies),
        Prim::While => control_flow::while_loop(prim, ins, bodies),
        Prim::Vmap { axis_size, out_axes, .. } => control_flow::vmap(prim, bodies, *axis_size, *out_axes),
        Prim::CustomJvpCall { call } | Prim::CustomVjpCall { call } => control_flow::custom_call(prim, ins, call),
        Prim::DebugCallback => Ok(Avals::new()),
        Prim::Opaque(op) => Ok(smallvec![op.out.clone()]),
        Prim::Linalg(op) => linalg::abstract_eval(prim, *op, ins),
        Prim::Block(b) => b.0.abstract_eval(prim, ins),
    }
}
