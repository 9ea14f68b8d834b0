//! The primitive families as patterns, for the matches over `Prim` outside `prims/` that
//! give a whole family one answer (no elementwise kernel for the random primitives, no
//! derivative rule for the calls here, ...): `families::random!() | families::calls!() =>
//! None`. Each match stays exhaustive (no `_ =>` arm), so a new variant still fails to
//! compile until it is put in a family here or decided in each match; a family macro names
//! every variant of its family, as `prims/mod.rs`'s rules group them.

/// `Unary`, `Binary`, `Compare`, `Select`, `Clamp`, `IntegerPow`, `ConvertElementType`,
/// `StopGradient`.
macro_rules! elementwise {
    () => {
        $crate::jax::ir::Prim::Unary(_)
            | $crate::jax::ir::Prim::Binary(_)
            | $crate::jax::ir::Prim::Compare(_)
            | $crate::jax::ir::Prim::Select
            | $crate::jax::ir::Prim::Clamp
            | $crate::jax::ir::Prim::IntegerPow(_)
            | $crate::jax::ir::Prim::ConvertElementType { .. }
            | $crate::jax::ir::Prim::StopGradient
    };
}

/// The primitives that move elements without computing with them.
macro_rules! movement {
    () => {
        $crate::jax::ir::Prim::BroadcastInDim { .. }
            | $crate::jax::ir::Prim::Reshape { .. }
            | $crate::jax::ir::Prim::Transpose { .. }
            | $crate::jax::ir::Prim::Squeeze { .. }
            | $crate::jax::ir::Prim::Rev { .. }
            | $crate::jax::ir::Prim::Slice { .. }
            | $crate::jax::ir::Prim::DynamicSlice { .. }
            | $crate::jax::ir::Prim::DynamicUpdateSlice
            | $crate::jax::ir::Prim::Concatenate { .. }
            | $crate::jax::ir::Prim::Pad { .. }
    };
}

/// The arrays made from parameters alone: `iota`, `full`.
macro_rules! creation {
    () => {
        $crate::jax::ir::Prim::Iota { .. } | $crate::jax::ir::Prim::Full { .. }
    };
}

/// NumPy indexing with index arrays: `gather`, `scatter`.
macro_rules! indexing {
    () => {
        $crate::jax::ir::Prim::Gather { .. } | $crate::jax::ir::Prim::Scatter { .. }
    };
}

/// The reductions, scans and sorts along axes.
macro_rules! reductions {
    () => {
        $crate::jax::ir::Prim::Reduce { .. }
            | $crate::jax::ir::Prim::ArgReduce { .. }
            | $crate::jax::ir::Prim::Cumulative { .. }
            | $crate::jax::ir::Prim::Sort { .. }
            | $crate::jax::ir::Prim::TopK { .. }
            | $crate::jax::ir::Prim::TopKIndices { .. }
    };
}

/// The PRNG primitives and the draws.
macro_rules! random {
    () => {
        $crate::jax::ir::Prim::RandomBits { .. }
            | $crate::jax::ir::Prim::RandomSeed { .. }
            | $crate::jax::ir::Prim::RandomSplit { .. }
            | $crate::jax::ir::Prim::RandomFoldIn
            | $crate::jax::ir::Prim::RandomUnwrap
            | $crate::jax::ir::Prim::RandomWrap
            | $crate::jax::ir::Prim::RandomClone
            | $crate::jax::ir::Prim::Random { .. }
    };
}

/// The control-flow primitives, whose bodies the evaluator runs.
macro_rules! control_flow {
    () => {
        $crate::jax::ir::Prim::Scan { .. }
            | $crate::jax::ir::Prim::Cond { .. }
            | $crate::jax::ir::Prim::While
            | $crate::jax::ir::Prim::Vmap { .. }
    };
}

/// The calls of a body: `pjit`, `remat` and the custom-derivative markers.
macro_rules! calls {
    () => {
        $crate::jax::ir::Prim::Pjit { .. }
            | $crate::jax::ir::Prim::Remat
            | $crate::jax::ir::Prim::CustomJvpCall { .. }
            | $crate::jax::ir::Prim::CustomVjpCall { .. }
    };
}

/// The equations that compute nothing themselves: a `debug_callback`, an `Opaque` stand-in.
macro_rules! markers {
    () => {
        $crate::jax::ir::Prim::DebugCallback | $crate::jax::ir::Prim::Opaque(_)
    };
}

/// `dot_general`, the products family's one primitive.
macro_rules! products {
    () => {
        $crate::jax::ir::Prim::DotGeneral { .. }
    };
}

/// The LAPACK-backed primitives.
macro_rules! linalg {
    () => {
        $crate::jax::ir::Prim::Linalg(_)
    };
}

/// The primitives written as one block (`prims::Block`).
macro_rules! blocks {
    () => {
        $crate::jax::ir::Prim::Block(_)
    };
}

// The families partition `Prim`: every variant is in exactly one of the macros above. A
// family's own functions (its kernels, its derivative rules) match over `Prim` with their
// variants' arms and `all_but!(family)`, so that a variant added to a family does not
// compile until the family decides it, and one added to no family does not compile in the
// registry's tables.

/// Writes `all_but!(family ...)`: every primitive but those of the families named, e.g.
/// `all_but!(movement creation)`. The partition is the list given here, written once;
/// `all_but!` walks it, leaving out each family that is among those named and joining the
/// others' patterns with `|`. `$d` is `$`, for the macro it writes.
macro_rules! partition {
    ($d:tt [$($family:ident)+]) => {
        /// Every primitive but those of the families named: `all_but!(movement creation)`.
        macro_rules! all_but {
            ($d($d skip:ident)+) => {
                $crate::jax::prims::families::all_but!(@walk [$($family)+] [$d($d skip)+] [])
            };
            // The next family: kept unless it is among those named.
            (@walk [$d head:ident $d($d rest:ident)*] $d skip:tt $d kept:tt) => {
                $crate::jax::prims::families::all_but!(@in $d head $d skip [$d($d rest)*] $d skip $d kept)
            };
            (@walk [] $d skip:tt [| $d first:ident $d(| $d more:ident)*]) => {
                $crate::jax::prims::families::$d first!() $d(| $crate::jax::prims::families::$d more!())*
            };
            // Named: left out.
            $( (@in $family [$family $d($d names:ident)*] $d rest:tt $d skip:tt $d kept:tt) => {
                $crate::jax::prims::families::all_but!(@walk $d rest $d skip $d kept)
            }; )+
            (@in $d f:ident [$d other:ident $d($d names:ident)*] $d rest:tt $d skip:tt $d kept:tt) => {
                $crate::jax::prims::families::all_but!(@in $d f [$d($d names)*] $d rest $d skip $d kept)
            };
            // Not named: kept.
            (@in $d f:ident [] $d rest:tt $d skip:tt [$d($d kept:tt)*]) => {
                $crate::jax::prims::families::all_but!(@walk $d rest $d skip [$d($d kept)* | $d f])
            };
        }
        pub(crate) use all_but;
    };
}

partition!($ [elementwise movement creation reductions indexing random control_flow calls markers products linalg blocks]);

pub(crate) use {blocks, calls, control_flow, creation, elementwise, indexing, linalg, markers, movement, products, random, reductions};
