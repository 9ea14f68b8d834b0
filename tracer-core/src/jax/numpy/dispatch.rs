//! The routing table of the surface: every function of `surface::JaxFn` goes to one family
//! (one file of this folder) or, for the functions `jax/api.rs` serves (transformations,
//! control flow, random, pytrees), to none. The match is exhaustive on purpose: a new
//! `JaxFn` does not compile until it is given a family here.

use super::JaxFn;

/// The file of `jax/numpy/` that serves a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    /// lax.rs: `jax.lax`'s wrappers, which promote nothing and take no `keepdims=`.
    Lax,
    /// ufunc.rs: a row of the ufunc table, one elementwise primitive.
    Ufunc,
    /// creation.rs.
    Creation,
    /// elementwise.rs: elementwise functions of more than one primitive.
    Elementwise,
    /// reductions.rs.
    Reductions,
    /// shape.rs.
    Shape,
    /// indexing.rs.
    Indexing,
    /// sort.rs: sorting and searching.
    Sort,
    /// linalg.rs: products and linear algebra.
    Linalg,
    /// nn.rs: `jax.nn`.
    Nn,
    /// Served before `jnp` is reached (jax/api.rs, the interpreter's modules): a call that
    /// gets here anyway has an unknown result.
    Elsewhere,
}

/// The family that serves `f`.
pub(super) fn family(f: JaxFn) -> Family {
    use JaxFn as F;
    match f {
        F::LaxAdd
        | F::LaxSub
        | F::LaxMul
        | F::LaxDiv
        | F::LaxRem
        | F::LaxMax
        | F::LaxMin
        | F::LaxExp
        | F::LaxLog
        | F::LaxTanh
        | F::LaxRsqrt
        | F::LaxBitwiseAnd
        | F::LaxRsqrtAlias
        | F::LaxNeg
        | F::LaxSign
        | F::LaxFloor
        | F::LaxCeil
        | F::LaxRound
        | F::LaxIsFinite
        | F::LaxAbs
        | F::LaxExp2
        | F::LaxExpm1
        | F::LaxLog1p
        | F::LaxSin
        | F::LaxCos
        | F::LaxTan
        | F::LaxAsin
        | F::LaxAcos
        | F::LaxAtan
        | F::LaxSinh
        | F::LaxCosh
        | F::LaxAsinh
        | F::LaxAcosh
        | F::LaxAtanh
        | F::LaxLogistic
        | F::LaxSquare
        | F::LaxCbrt
        | F::LaxErf
        | F::LaxErfc
        | F::LaxBitwiseNot
        | F::LaxReciprocal
        | F::LaxPow
        | F::LaxAtan2
        | F::LaxBitwiseOr
        | F::LaxBitwiseXor
        | F::LaxShiftLeft
        | F::LaxShiftRightArithmetic
        | F::LaxShiftRightLogical
        | F::LaxNextafter
        | F::LaxEq
        | F::LaxNe
        | F::LaxLt
        | F::LaxLe
        | F::LaxGt
        | F::LaxGe
        | F::LaxSelectN
        | F::LaxSlice
        | F::LaxSliceInDim
        | F::LaxIndexInDim
        | F::LaxDynamicIndexInDim
        | F::LaxConcatenate
        | F::LaxReshape
        | F::LaxTranspose
        | F::LaxRev
        | F::LaxSqueeze
        | F::LaxExpandDims
        | F::LaxBroadcast
        | F::LaxBroadcastToRank
        | F::LaxFull
        | F::LaxFullLike
        | F::LaxCollapse
        | F::LaxPad
        | F::LaxReduceSum
        | F::LaxReduceMax
        | F::LaxReduceMin
        | F::LaxReduceProd
        | F::LaxReduceAnd
        | F::LaxReduceOr
        | F::LaxArgmax
        | F::LaxArgmin
        | F::LaxSort
        | F::LaxSortKeyVal
        | F::LaxConvGeneralDilated
        | F::LaxConv
        | F::LaxConvWithGeneralPadding
        | F::LaxErfInv
        | F::LaxLgamma
        | F::LaxDigamma => Family::Lax,
        F::Add
        | F::Subtract
        | F::Multiply
        | F::Fmod
        | F::Nextafter
        | F::Maximum
        | F::Minimum
        | F::Arctan2
        | F::Negative
        | F::Abs
        | F::Absolute
        | F::Sign
        | F::Floor
        | F::Ceil
        | F::Rint
        | F::Exp
        | F::Exp2
        | F::Expm1
        | F::Log
        | F::Log1p
        | F::Sqrt
        | F::Cbrt
        | F::Square
        | F::Sin
        | F::Cos
        | F::Tan
        | F::Arcsin
        | F::Arccos
        | F::Arctan
        | F::Sinh
        | F::Cosh
        | F::Tanh
        | F::Arcsinh
        | F::Arccosh
        | F::Arctanh
        | F::Isfinite
        | F::Equal
        | F::NotEqual
        | F::Less
        | F::LessEqual
        | F::Greater
        | F::GreaterEqual
        | F::LogicalAnd
        | F::LogicalOr
        | F::LogicalXor
        | F::BitwiseAnd
        | F::BitwiseOr
        | F::BitwiseXor
        | F::LeftShift
        | F::NnSigmoid
        | F::NnTanh
        | F::ScipyErf
        | F::ScipyErfc
        | F::ScipyErfinv
        | F::ScipyGammaln
        | F::ScipyDigamma => Family::Ufunc,
        F::Array
        | F::Asarray
        | F::Zeros
        | F::Ones
        | F::Full
        | F::Empty
        | F::ZerosLike
        | F::OnesLike
        | F::FullLike
        | F::EmptyLike
        | F::Arange
        | F::Linspace
        | F::Logspace
        | F::Eye
        | F::Identity
        | F::Tri
        | F::Tril
        | F::Triu
        | F::Meshgrid
        | F::Append
        | F::Diag
        | F::ResultType
        | F::PromoteTypes
        | F::LaxIota => Family::Creation,
        F::StopGradient
        | F::Divide
        | F::TrueDivide
        | F::FloorDivide
        | F::Mod
        | F::Remainder
        | F::Power
        | F::Hypot
        | F::Positive
        | F::Round
        | F::Trunc
        | F::Log2
        | F::Log10
        | F::Logaddexp
        | F::Reciprocal
        | F::Deg2rad
        | F::Rad2deg
        | F::Isnan
        | F::Isinf
        | F::NanToNum
        | F::Real
        | F::Imag
        | F::Conj
        | F::LogicalNot
        | F::BitwiseNot
        | F::RightShift
        | F::Invert
        | F::Allclose
        | F::Isclose
        | F::ArrayEqual
        | F::Where
        | F::Select
        | F::Clip
        | F::Astype
        | F::LaxIntegerPow
        | F::LaxClamp
        | F::LaxConvertElementType
        | F::LaxSelect
        | F::ScipyNormLogpdf
        | F::ScipyNormPdf
        | F::ScipyPolygamma
        | F::LaxPolygamma => Family::Elementwise,
        F::Sum
        | F::Prod
        | F::Mean
        | F::Var
        | F::Std
        | F::Max
        | F::Min
        | F::Amax
        | F::Amin
        | F::All
        | F::Any
        | F::Argmax
        | F::Argmin
        | F::Cumsum
        | F::Cumprod
        | F::Nansum
        | F::Nanmean
        | F::Nanmax
        | F::Nanmin
        | F::Median
        | F::Nanmedian
        | F::Quantile
        | F::Nanquantile
        | F::Percentile
        | F::Nanpercentile
        | F::CountNonzero
        | F::Average
        | F::Ptp
        | F::Bincount
        | F::LaxCumsum
        | F::LaxCumprod
        | F::LaxCummax
        | F::LaxCummin
        | F::OpsSegmentSum => Family::Reductions,
        F::Reshape
        | F::Ravel
        | F::Transpose
        | F::Swapaxes
        | F::Moveaxis
        | F::ExpandDims
        | F::Squeeze
        | F::BroadcastTo
        | F::Concatenate
        | F::Stack
        | F::Hstack
        | F::Vstack
        | F::Split
        | F::ArraySplit
        | F::Tile
        | F::Repeat
        | F::Flip
        | F::Fliplr
        | F::Rot90
        | F::Flipud
        | F::Diff
        | F::Roll
        | F::Pad
        | F::AtLeast1d
        | F::AtLeast2d
        | F::Shape
        | F::Ndim
        | F::Size
        | F::LaxBroadcastInDim => Family::Shape,
        F::Diagonal | F::Take | F::TakeAlongAxis | F::LaxDynamicSlice | F::LaxDynamicSliceInDim | F::LaxDynamicUpdateSlice => {
            Family::Indexing
        }
        F::Sort | F::Argsort | F::Nonzero | F::Argwhere | F::Unique | F::Searchsorted | F::LaxTopK => Family::Sort,
        F::Dot
        | F::Matmul
        | F::Vdot
        | F::Inner
        | F::Outer
        | F::Einsum
        | F::Tensordot
        | F::Trace
        | F::LinalgNorm
        | F::LinalgSolve
        | F::LinalgInv
        | F::LinalgPinv
        | F::LinalgCholesky
        | F::LinalgDet
        | F::LinalgSlogdet
        | F::LinalgEigh
        | F::LinalgEigvalsh
        | F::LinalgSvd
        | F::LinalgQr
        | F::LinalgLstsq
        | F::LinalgMatrixRank
        | F::LinalgMatrixPower
        | F::LinalgCond
        | F::LinalgSvdvals
        | F::ScipyChoFactor
        | F::ScipyChoSolve
        | F::ScipySolveTriangular
        | F::ScipyCholesky
        | F::ScipyInv
        | F::ScipyDet
        | F::ScipyLu
        | F::ScipyLuFactor
        | F::ScipyLuSolve
        | F::ScipyExpm
        | F::LaxLinalgLu
        | F::LaxLinalgLuPivotsToPermutation
        | F::LaxDotGeneral => Family::Linalg,
        F::NnRelu
        | F::NnGelu
        | F::NnSilu
        | F::NnSwish
        | F::NnSoftplus
        | F::NnSoftmax
        | F::NnLogSoftmax
        | F::NnLogsumexp
        | F::NnLogmeanexp
        | F::NnLog1mexp
        | F::NnOneHot
        | F::NnStandardize
        | F::NnLogSigmoid
        | F::NnSoftSign
        | F::NnHardTanh
        | F::NnRelu6
        | F::NnCelu
        | F::NnSelu
        | F::NnGlu
        | F::NnElu
        | F::NnLeakyRelu
        | F::NnMish
        | F::NnSquareplus
        | F::NnSparsePlus
        | F::NnSparseSigmoid
        | F::NnHardSigmoid
        | F::NnHardSilu
        | F::NnHardSwish
        | F::NnIdentity
        | F::ScipyLogsumexp => Family::Nn,
        F::Jit
        | F::Pmap
        | F::Vmap
        | F::Grad
        | F::ValueAndGrad
        | F::Jvp
        | F::Vjp
        | F::Jacfwd
        | F::Jacrev
        | F::Hessian
        | F::Checkpoint
        | F::Remat
        | F::NamedCall
        | F::CustomJvp
        | F::CustomVjp
        | F::EvalShape
        | F::MakeJaxpr
        | F::DevicePut
        | F::BlockUntilReady
        | F::ShapeDtypeStruct
        | F::ArrayType
        | F::Typeof
        | F::JaxTreeMap
        | F::JaxTreeLeaves
        | F::LaxScan
        | F::LaxCond
        | F::LaxSwitch
        | F::LaxWhileLoop
        | F::LaxForiLoop
        | F::LaxMap
        | F::RandomKey
        | F::RandomPRNGKey
        | F::RandomSplit
        | F::RandomFoldIn
        | F::RandomNormal
        | F::RandomUniform
        | F::RandomBernoulli
        | F::RandomCategorical
        | F::RandomRandint
        | F::RandomPermutation
        | F::RandomChoice
        | F::RandomTruncatedNormal
        | F::RandomExponential
        | F::RandomGumbel
        | F::RandomLaplace
        | F::RandomLogistic
        | F::RandomCauchy
        | F::RandomRademacher
        | F::RandomKeyData
        | F::RandomWrapKeyData
        | F::RandomClone
        | F::TreeMap
        | F::TreeLeaves
        | F::TreeFlatten
        | F::TreeUnflatten
        | F::TreeStructure
        | F::RegisterPytreeNode
        | F::RegisterPytreeNodeClass
        | F::RegisterDataclass
        | F::TreeMap2
        | F::TreeLeaves2
        | F::TreeFlatten2
        | F::TreeUnflatten2
        | F::TreeStructure2
        | F::TreeReduce
        | F::TreeReduce2
        | F::DebugPrint
        | F::ConfigUpdate
        | F::ExportSymbolicShape
        | F::ExportExport => Family::Elsewhere,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{lax, ufunc};
    use super::*;

    #[test]
    fn the_ufunc_family_is_exactly_the_rows_of_the_table() {
        for &f in JaxFn::ALL {
            assert_eq!(family(f) == Family::Ufunc, ufunc::lookup(f).is_some(), "{}", f.qualified_name());
        }
        for (i, (f, _)) in ufunc::UFUNCS.iter().enumerate() {
            assert!(ufunc::UFUNCS[..i].iter().all(|(g, _)| g != f), "{} has two rows", f.qualified_name());
        }
    }

    #[test]
    fn the_lax_tables_functions_are_routed_to_lax() {
        for &f in JaxFn::ALL {
            if lax::unary_of(f).is_some() || lax::binary_of(f).is_some() {
                assert_eq!(family(f), Family::Lax, "{}", f.qualified_name());
            }
        }
    }
}
