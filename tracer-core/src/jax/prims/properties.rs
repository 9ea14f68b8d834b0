//! The properties of each primitive, decided in one place: [`props`] is one exhaustive match
//! over [`Prim`] listing every variant once, so a new variant does not compile until it is
//! decided whether it takes PRNG keys, is a random primitive, has a float32 kernel, is a
//! call or control flow, calls LAPACK, has derivative rules and whether its JVP is zero. A primitive written as a
//! block (`Prim::Block`) states its own (`Block::props`).

use super::Props;
use crate::jax::ir::{BinaryPrim, CmpPrim, LinalgOp, Prim, ReduceOp, ScatterOp, UnaryPrim};

/// Every property of `prim`.
pub fn props(prim: &Prim) -> Props {
    // The shapes most primitives share.
    const NONE: Props = Props::NONE;
    // Moves elements without computing with them: keys pass, derivatives are linear.
    const MOVES: Props = Props { takes_keys: true, ad_rule: Some(true), ..NONE };
    const RANDOM: Props = Props { takes_keys: true, is_random: true, ..NONE };
    const CONTROL: Props = Props { takes_keys: true, is_control_flow: true, ..NONE };
    const CALL: Props = Props { takes_keys: true, is_call: true, ad_rule: Some(true), ..NONE };
    const DIFFERENTIABLE: Props = Props { ad_rule: Some(true), ..NONE };
    const F32: Props = Props { has_f32_kernel: true, ad_rule: Some(true), ..NONE };
    match prim {
        Prim::Block(b) => b.0.props(),
        Prim::Unary(u) => Props {
            takes_keys: *u == UnaryPrim::Copy,
            has_f32_kernel: true,
            // `is_finite` and `not` have boolean results; `imag` has no rule yet.
            ad_rule: if matches!(u, UnaryPrim::IsFinite | UnaryPrim::Not) { None } else { Some(*u != UnaryPrim::Imag) },
            zero_jvp: unary_zero_jvp(*u),
            ..NONE
        },
        Prim::Binary(b) => Props { has_f32_kernel: true, ad_rule: binary_ad_rule(*b), ..NONE },
        Prim::Compare(c) => Props { takes_keys: matches!(c, CmpPrim::Eq | CmpPrim::Ne), has_f32_kernel: true, zero_jvp: true, ..NONE },
        Prim::Select => Props { has_f32_kernel: true, ..MOVES },
        Prim::Clamp | Prim::IntegerPow(_) => F32,
        Prim::ConvertElementType { new_dtype, .. } => Props { takes_keys: new_dtype.is_key(), ..F32 },
        Prim::StopGradient => Props { has_f32_kernel: true, zero_jvp: true, ..MOVES },
        Prim::BroadcastInDim { .. } | Prim::Reshape { .. } | Prim::Squeeze { .. } | Prim::Transpose { .. } => {
            Props { has_f32_kernel: true, ..MOVES }
        }
        Prim::Rev { .. }
        | Prim::Slice { .. }
        | Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::Concatenate { .. }
        | Prim::Gather { .. } => MOVES,
        Prim::Scatter { op, .. } => Props { takes_keys: *op == ScatterOp::Set, ..DIFFERENTIABLE },
        Prim::Pad { .. } | Prim::Sort { .. } | Prim::TopK { .. } => DIFFERENTIABLE,
        // Constants and indices: JAX's JVP of each is zero.
        Prim::Iota { .. } | Prim::Full { .. } | Prim::ArgReduce { .. } | Prim::TopKIndices { .. } => Props { zero_jvp: true, ..NONE },
        Prim::Reduce { op, .. } => Props {
            has_f32_kernel: true,
            ad_rule: match op {
                ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod => Some(true),
                ReduceOp::And | ReduceOp::Or => None,
            },
            ..NONE
        },
        Prim::Cumulative { op, .. } => Props { ad_rule: Some(!matches!(op, ReduceOp::And | ReduceOp::Or)), ..NONE },
        Prim::DotGeneral { .. } => F32,
        Prim::RandomBits { .. }
        | Prim::RandomSeed { .. }
        | Prim::RandomSplit { .. }
        | Prim::RandomFoldIn
        | Prim::RandomUnwrap
        | Prim::RandomWrap
        | Prim::RandomClone
        | Prim::Random { .. } => RANDOM,
        Prim::Pjit { .. } | Prim::Remat => CALL,
        // The user's rules (custom_rules/).
        Prim::CustomJvpCall { .. } | Prim::CustomVjpCall { .. } => CALL,
        // Resolved by the replay instead (unrolled, one body per example), not a rule.
        Prim::Opaque(_) => Props { ad_rule: Some(false), ..CALL },
        // A `cond` on a traced index, forward mode through a `while` (ad_control.rs); reverse
        // mode through a `while` is JAX's error, as JAX has no transpose for it either.
        Prim::Cond { .. } | Prim::While => Props { ad_rule: Some(true), ..CONTROL },
        Prim::Scan { .. } | Prim::Vmap { .. } => Props { ad_rule: Some(false), ..CONTROL },
        Prim::DebugCallback => Props { takes_keys: true, ..NONE },
        Prim::Linalg(op) => linalg_props(*op),
    }
}

/// The unary primitives whose JVP is JAX's symbolic zero: piecewise constant functions
/// (`sign`, `floor`, `ceil`, `round`) and the boolean `is_finite`. `not` acts on integers and
/// booleans, whose tangents are `float0` anyway.
fn unary_zero_jvp(u: UnaryPrim) -> bool {
    use UnaryPrim as U;
    match u {
        U::Sign | U::Floor | U::Ceil | U::Round | U::IsFinite => true,
        U::Neg
        | U::Exp
        | U::Exp2
        | U::Log
        | U::Log1p
        | U::Expm1
        | U::Tanh
        | U::Logistic
        | U::Sin
        | U::Cos
        | U::Tan
        | U::Asin
        | U::Acos
        | U::Atan
        | U::Sinh
        | U::Cosh
        | U::Asinh
        | U::Acosh
        | U::Atanh
        | U::Sqrt
        | U::Rsqrt
        | U::Cbrt
        | U::Abs
        | U::Not
        | U::Erf
        | U::Erfc
        | U::ErfInv
        | U::Lgamma
        | U::Digamma
        | U::Real
        | U::Imag
        | U::Conj
        | U::Square
        | U::Copy => false,
    }
}

/// Bitwise and shift operations act on integers: nothing to differentiate.
fn binary_ad_rule(b: BinaryPrim) -> Option<bool> {
    match b {
        BinaryPrim::Add
        | BinaryPrim::Sub
        | BinaryPrim::Mul
        | BinaryPrim::Div
        | BinaryPrim::Pow
        | BinaryPrim::Max
        | BinaryPrim::Min
        | BinaryPrim::Atan2
        | BinaryPrim::Rem
        | BinaryPrim::Polygamma
        | BinaryPrim::Logaddexp => Some(true),
        BinaryPrim::NextAfter => Some(false),
        BinaryPrim::And
        | BinaryPrim::Or
        | BinaryPrim::Xor
        | BinaryPrim::ShiftLeft
        | BinaryPrim::ShiftRightArithmetic
        | BinaryPrim::ShiftRightLogical => None,
    }
}

/// A linear-algebra operation's properties: whether JAX lowers it to a LAPACK routine on CPU
/// (`getrf`, `potrf`, `syevd`, `gesdd`, `geqrf`), which exists for 32- and 64-bit floats
/// only, and its AD coverage (pivots and permutations are integers; `geqrf` has no rule in
/// JAX either).
fn linalg_props(op: LinalgOp) -> Props {
    use LinalgOp as L;
    const LAPACK: Props = Props { calls_lapack: true, ad_rule: Some(true), ..Props::NONE };
    const COMPOSED: Props = Props { ad_rule: Some(true), ..Props::NONE };
    match op {
        L::Lu
        | L::Cholesky
        | L::EighValues { .. }
        | L::EighVectors { .. }
        | L::SvdValues
        | L::SvdU { .. }
        | L::SvdVh { .. }
        | L::QrQ { .. }
        | L::QrR { .. }
        | L::Pinv { .. } => LAPACK,
        L::LuPivots | L::LuPermutation => Props { ad_rule: None, ..LAPACK },
        L::Geqrf | L::GeqrfTaus => Props { ad_rule: Some(false), ..LAPACK },
        L::PivotsToPermutation { .. } => Props::NONE,
        L::LinearSolve { .. }
        | L::Det
        | L::DetFused { .. }
        | L::SlogdetSign
        | L::SlogdetLogAbs
        | L::Cofactor
        | L::CofactorJvp
        | L::TriangularSolve { .. }
        | L::Expm { .. } => COMPOSED,
    }
}

/// Whether JAX lowers the operation to a LAPACK routine on CPU, for 32- and 64-bit floats only.
pub fn calls_lapack(op: LinalgOp) -> bool {
    linalg_props(op).calls_lapack
}

/// Whether JAX applies `prim` to typed PRNG key arrays: the random primitives, those that
/// move elements without computing with them, equality, and calls and control flow.
pub fn takes_keys(prim: &Prim) -> bool {
    props(prim).takes_keys
}

/// The PRNG primitives, whose kernels are in `jax/random.rs`.
pub fn is_random(prim: &Prim) -> bool {
    props(prim).is_random
}

/// Whether the float32 path of the evaluator (`eval.rs`'s `kernel_f32`) has kernels for
/// `prim` (on float32 and bool data).
pub fn has_f32_kernel(prim: &Prim) -> bool {
    props(prim).has_f32_kernel
}

/// A call or a marker whose value comes from its body (`eval_jaxpr.rs`) or is not computed,
/// never from a kernel of its own: a jitted call, a checkpoint, an `Opaque` stand-in and
/// the custom-rule markers.
pub fn is_call(prim: &Prim) -> bool {
    props(prim).is_call
}

/// `cond`, `while`, `scan` and `vmap`: equations whose bodies the evaluator runs
/// (`eval_control.rs`), printed in JAX's multi-line form.
pub fn is_control_flow(prim: &Prim) -> bool {
    props(prim).is_control_flow
}

/// Whether JAX's JVP of `prim` is the symbolic zero, so that its outputs are never tracers
/// under `grad`/`jvp` (`taint.rs`).
pub fn zero_jvp(prim: &Prim) -> bool {
    props(prim).zero_jvp
}

/// Whether a primitive has AD rules (`ad.rs`; for docs and the coverage test): `Some(true)`
/// when it is differentiable with a rule, `Some(false)` when it has none, `None` when it has
/// no derivative to take (integer/boolean results, randomness, constants).
pub fn ad_rule(prim: &Prim) -> Option<bool> {
    props(prim).ad_rule
}
