//! The properties of each primitive, each one exhaustive match over [`Prim`]: adding a
//! variant fails to compile until it is decided whether it takes PRNG keys, is a random
//! primitive, has a float32 kernel, calls LAPACK, runs bodies, has a CPU kernel of its own
//! and has derivative rules.

use crate::jax::ir::{BinaryPrim, CmpPrim, LinalgOp, Prim, ReduceOp, ScatterOp, UnaryPrim};

/// Whether JAX applies `prim` to typed PRNG key arrays: the random primitives, those that
/// move elements without computing with them, equality, and calls and control flow.
pub fn takes_keys(prim: &Prim) -> bool {
    match prim {
        Prim::Block(b) => b.0.props().takes_keys,
        Prim::Compare(c) => matches!(c, CmpPrim::Eq | CmpPrim::Ne),
        Prim::ConvertElementType { new_dtype, .. } => new_dtype.is_key(),
        Prim::Scatter { op, .. } => *op == ScatterOp::Set,
        Prim::Unary(u) => *u == UnaryPrim::Copy,
        Prim::RandomBits { .. }
        | Prim::RandomSeed
        | Prim::RandomSplit { .. }
        | Prim::RandomFoldIn
        | Prim::RandomUnwrap
        | Prim::RandomWrap
        | Prim::RandomClone
        | Prim::Random { .. }
        | Prim::Select
        | Prim::BroadcastInDim { .. }
        | Prim::Reshape { .. }
        | Prim::Transpose { .. }
        | Prim::Squeeze { .. }
        | Prim::Rev { .. }
        | Prim::Slice { .. }
        | Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::Concatenate { .. }
        | Prim::Gather { .. }
        | Prim::StopGradient
        | Prim::Pjit { .. }
        | Prim::Scan { .. }
        | Prim::Cond { .. }
        | Prim::While
        | Prim::Vmap { .. }
        | Prim::CustomJvpCall { .. }
        | Prim::CustomVjpCall { .. }
        | Prim::Remat
        | Prim::DebugCallback
        | Prim::Opaque(_) => true,
        Prim::Binary(_)
        | Prim::Clamp
        | Prim::IntegerPow(_)
        | Prim::Pad { .. }
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::Reduce { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Sort { .. }
        | Prim::DotGeneral { .. }
        | Prim::TopK { .. }
        | Prim::TopKIndices { .. }
        | Prim::Linalg(_) => false,
    }
}

/// The PRNG primitives, whose kernels are in `jax/random.rs`.
pub fn is_random(prim: &Prim) -> bool {
    match prim {
        Prim::Block(b) => b.0.props().is_random,
        Prim::RandomSeed
        | Prim::RandomSplit { .. }
        | Prim::RandomFoldIn
        | Prim::RandomUnwrap
        | Prim::RandomWrap
        | Prim::RandomClone
        | Prim::RandomBits { .. }
        | Prim::Random { .. } => true,
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
        | Prim::Linalg(_) => false,
    }
}

/// Whether the float32 path of the evaluator (`eval.rs`'s `kernel_f32`) has kernels for
/// `prim` (on float32 and bool data).
pub fn has_f32_kernel(prim: &Prim) -> bool {
    match prim {
        Prim::Block(b) => b.0.props().has_f32_kernel,
        Prim::Unary(_)
        | Prim::Binary(_)
        | Prim::Compare(_)
        | Prim::Select
        | Prim::Clamp
        | Prim::IntegerPow(_)
        | Prim::ConvertElementType { .. }
        | Prim::StopGradient
        | Prim::BroadcastInDim { .. }
        | Prim::Reshape { .. }
        | Prim::Squeeze { .. }
        | Prim::Transpose { .. }
        | Prim::Reduce { .. }
        | Prim::DotGeneral { .. } => true,
        Prim::Rev { .. }
        | Prim::Slice { .. }
        | Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::Concatenate { .. }
        | Prim::Pad { .. }
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Sort { .. }
        | Prim::Gather { .. }
        | Prim::Scatter { .. }
        | Prim::TopK { .. }
        | Prim::TopKIndices { .. }
        | Prim::RandomBits { .. }
        | Prim::RandomSeed
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
        | Prim::Opaque(_)
        | Prim::Linalg(_) => false,
    }
}

/// A call or a marker whose value comes from its body (`eval_jaxpr.rs`) or is not computed,
/// never from a kernel of its own: a jitted call, a checkpoint, an `Opaque` stand-in and
/// the custom-rule markers.
pub fn is_call(prim: &Prim) -> bool {
    match prim {
        Prim::Block(b) => b.0.props().is_call,
        Prim::Pjit { .. } | Prim::Remat | Prim::Opaque(_) | Prim::CustomJvpCall { .. } | Prim::CustomVjpCall { .. } => true,
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
        | Prim::RandomSeed
        | Prim::RandomSplit { .. }
        | Prim::RandomFoldIn
        | Prim::RandomUnwrap
        | Prim::RandomWrap
        | Prim::RandomClone
        | Prim::Random { .. }
        | Prim::Scan { .. }
        | Prim::Cond { .. }
        | Prim::While
        | Prim::Vmap { .. }
        | Prim::DebugCallback
        | Prim::StopGradient
        | Prim::Linalg(_) => false,
    }
}

/// `cond`, `while`, `scan` and `vmap`: equations whose bodies the evaluator runs
/// (`eval_control.rs`), printed in JAX's multi-line form.
pub fn is_control_flow(prim: &Prim) -> bool {
    match prim {
        Prim::Block(b) => b.0.props().is_control_flow,
        Prim::Scan { .. } | Prim::Cond { .. } | Prim::While | Prim::Vmap { .. } => true,
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
        | Prim::RandomSeed
        | Prim::RandomSplit { .. }
        | Prim::RandomFoldIn
        | Prim::RandomUnwrap
        | Prim::RandomWrap
        | Prim::RandomClone
        | Prim::Random { .. }
        | Prim::Pjit { .. }
        | Prim::CustomJvpCall { .. }
        | Prim::CustomVjpCall { .. }
        | Prim::Remat
        | Prim::DebugCallback
        | Prim::StopGradient
        | Prim::Opaque(_)
        | Prim::Linalg(_) => false,
    }
}

/// Whether JAX lowers the operation to a LAPACK routine on CPU (`getrf`, `potrf`, `syevd`,
/// `gesdd`, `geqrf`), which exists for 32- and 64-bit floats only.
pub fn calls_lapack(op: LinalgOp) -> bool {
    use LinalgOp as L;
    match op {
        L::Lu
        | L::LuPivots
        | L::LuPermutation
        | L::Cholesky
        | L::EighValues { .. }
        | L::EighVectors { .. }
        | L::SvdValues
        | L::SvdU { .. }
        | L::SvdVh { .. }
        | L::QrQ { .. }
        | L::QrR { .. }
        | L::Geqrf
        | L::GeqrfTaus
        | L::Pinv { .. } => true,
        L::LinearSolve { .. }
        | L::Det
        | L::DetFused { .. }
        | L::SlogdetSign
        | L::SlogdetLogAbs
        | L::Cofactor
        | L::CofactorJvp
        | L::TriangularSolve { .. }
        | L::PivotsToPermutation { .. }
        | L::Expm { .. } => false,
    }
}

/// Whether a primitive has AD rules (`ad.rs`; for docs and the coverage test): `Some(true)`
/// when it is differentiable with a rule, `Some(false)` when it has none, `None` when it has
/// no derivative to take (integer/boolean results, randomness, constants).
pub fn ad_rule(prim: &Prim) -> Option<bool> {
    Some(match prim {
        Prim::Block(b) => return b.0.props().ad_rule,
        Prim::Unary(UnaryPrim::IsFinite | UnaryPrim::Not) => return None,
        Prim::Unary(u) => !matches!(u, UnaryPrim::Imag),
        Prim::Binary(b) => match b {
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
            | BinaryPrim::Logaddexp => true,
            BinaryPrim::NextAfter => false,
            // Bitwise and shift operations act on integers: nothing to differentiate.
            BinaryPrim::And
            | BinaryPrim::Or
            | BinaryPrim::Xor
            | BinaryPrim::ShiftLeft
            | BinaryPrim::ShiftRightArithmetic
            | BinaryPrim::ShiftRightLogical => return None,
        },
        Prim::Select
        | Prim::Clamp
        | Prim::IntegerPow(_)
        | Prim::ConvertElementType { .. }
        | Prim::BroadcastInDim { .. }
        | Prim::Reshape { .. }
        | Prim::Transpose { .. }
        | Prim::Squeeze { .. }
        | Prim::Rev { .. }
        | Prim::Concatenate { .. }
        | Prim::DotGeneral { .. }
        | Prim::StopGradient
        | Prim::Pjit { .. }
        | Prim::Remat
        | Prim::Gather { .. }
        | Prim::Sort { .. }
        | Prim::Pad { .. }
        | Prim::Slice { .. }
        | Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::TopK { .. }
        | Prim::Scatter { .. } => true,
        // The user's rules (custom_rules.rs).
        Prim::CustomJvpCall { .. } | Prim::CustomVjpCall { .. } => true,
        Prim::Linalg(LinalgOp::LuPivots | LinalgOp::LuPermutation | LinalgOp::PivotsToPermutation { .. }) => return None,
        Prim::Linalg(LinalgOp::Geqrf | LinalgOp::GeqrfTaus) => false,
        Prim::Linalg(
            LinalgOp::LinearSolve { .. }
            | LinalgOp::Cholesky
            | LinalgOp::Det
            | LinalgOp::DetFused { .. }
            | LinalgOp::SlogdetSign
            | LinalgOp::SlogdetLogAbs
            | LinalgOp::Cofactor
            | LinalgOp::CofactorJvp
            | LinalgOp::TriangularSolve { .. }
            | LinalgOp::EighValues { .. }
            | LinalgOp::EighVectors { .. }
            | LinalgOp::SvdValues
            | LinalgOp::SvdU { .. }
            | LinalgOp::SvdVh { .. }
            | LinalgOp::QrQ { .. }
            | LinalgOp::QrR { .. }
            | LinalgOp::Pinv { .. }
            | LinalgOp::Lu
            | LinalgOp::Expm { .. },
        ) => true,
        Prim::Reduce { op, .. } | Prim::Cumulative { op, .. } => match op {
            ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod => true,
            ReduceOp::And | ReduceOp::Or if matches!(prim, Prim::Cumulative { .. }) => false,
            ReduceOp::And | ReduceOp::Or => return None,
        },
        Prim::Compare(_)
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::ArgReduce { .. }
        | Prim::TopKIndices { .. }
        | Prim::RandomBits { .. }
        | Prim::RandomSeed
        | Prim::RandomSplit { .. }
        | Prim::RandomFoldIn
        | Prim::RandomUnwrap
        | Prim::RandomWrap
        | Prim::RandomClone
        | Prim::Random { .. }
        | Prim::DebugCallback => return None,
        // A `cond` on a traced index, forward mode through a `while` (ad_control.rs); reverse
        // mode through a `while` is JAX's error, as JAX has no transpose for it either.
        Prim::Cond { .. } | Prim::While => true,
        // Resolved by the replay instead: unrolled, one body per example.
        Prim::Scan { .. } | Prim::Vmap { .. } | Prim::Opaque(_) => false,
    })
}
