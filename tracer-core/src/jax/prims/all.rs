//! One of each primitive (each reduction and scatter op separately, one block of each
//! kind), for the tests that must cover every primitive: the AD coverage table of
//! docs/autodiff.md, and that every primitive has its row in docs/ir.md.

use crate::jax::dtypes::DType;
use crate::jax::ir::*;

/// One of each primitive (each reduction and scatter op separately); the coverage table
/// of docs/autodiff.md.
pub(crate) fn all_prims() -> Vec<Prim> {
    use UnaryPrim as U;
    let unary = [
        U::Neg,
        U::Sign,
        U::Floor,
        U::Ceil,
        U::Round,
        U::IsFinite,
        U::Exp,
        U::Exp2,
        U::Log,
        U::Log1p,
        U::Expm1,
        U::Tanh,
        U::Logistic,
        U::Sin,
        U::Cos,
        U::Tan,
        U::Asin,
        U::Acos,
        U::Atan,
        U::Sinh,
        U::Cosh,
        U::Asinh,
        U::Acosh,
        U::Atanh,
        U::Sqrt,
        U::Rsqrt,
        U::Cbrt,
        U::Abs,
        U::Not,
        U::Erf,
        U::Erfc,
        U::ErfInv,
        U::Lgamma,
        U::Digamma,
        U::Real,
        U::Imag,
        U::Conj,
        U::Square,
        U::Copy,
    ];
    use BinaryPrim as B;
    let binary = [
        B::Add,
        B::Sub,
        B::Mul,
        B::Div,
        B::Rem,
        B::Pow,
        B::Max,
        B::Min,
        B::Atan2,
        B::And,
        B::Or,
        B::Xor,
        B::ShiftLeft,
        B::ShiftRightArithmetic,
        B::ShiftRightLogical,
        B::NextAfter,
        B::Polygamma,
        B::Logaddexp,
    ];
    let mut prims: Vec<Prim> = unary.into_iter().map(Prim::Unary).chain(binary.into_iter().map(Prim::Binary)).collect();
    let reduce_ops = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::And, ReduceOp::Or];
    prims.extend(reduce_ops.iter().map(|&op| Prim::Reduce { op, axes: vec![0] }));
    prims.extend(reduce_ops[..4].iter().map(|&op| Prim::Cumulative { op, axis: 0, reverse: false }));
    let scatter_ops = [ScatterOp::Set, ScatterOp::Add, ScatterOp::Mul, ScatterOp::Min, ScatterOp::Max];
    prims.extend(scatter_ops.iter().map(|&op| Prim::Scatter {
        op,
        mode: IndexMode::Clip,
        index: Some(vec![IndexItem::Array]),
        unique_indices: false,
    }));
    prims.extend([
        Prim::Compare(CmpPrim::Lt),
        Prim::Select,
        Prim::Clamp,
        Prim::IntegerPow(2),
        Prim::ConvertElementType { new_dtype: DType::F32, weak_type: false },
        Prim::BroadcastInDim { shape: vec![2], broadcast_dimensions: vec![0] },
        Prim::Reshape { new_sizes: vec![2] },
        Prim::Transpose { permutation: vec![0] },
        Prim::Squeeze { dimensions: vec![0] },
        Prim::Rev { dimensions: vec![0] },
        Prim::Slice { start: vec![0], limit: vec![1], strides: vec![1] },
        Prim::DynamicSlice { sizes: vec![1] },
        Prim::DynamicUpdateSlice,
        Prim::Concatenate { dimension: 0 },
        Prim::Pad { config: vec![(0, 0, 0)] },
        Prim::Iota { dtype: DType::I32, shape: vec![2], dimension: 0 },
        Prim::Full { value: 0.0, shape: vec![2], dtype: DType::F32, weak_type: false },
        Prim::ArgReduce { op: crate::jax::ir::ArgOp::Max, axis: 0, index_dtype: DType::I32 },
        Prim::Sort { dimension: 0, num_keys: 1 },
        Prim::DotGeneral { lhs_contract: vec![1], rhs_contract: vec![0], lhs_batch: vec![], rhs_batch: vec![] },
        Prim::Gather { mode: IndexMode::Clip, fill_value: None, index: vec![IndexItem::Array] },
        Prim::TopK { k: 1 },
        Prim::TopKIndices { k: 1 },
        Prim::RandomBits { shape: vec![] },
        Prim::RandomSeed { raw: false },
        Prim::RandomSplit { shape: vec![] },
        Prim::RandomFoldIn,
        Prim::RandomUnwrap,
        Prim::RandomWrap,
        Prim::RandomClone,
        Prim::Random { dist: "normal", shape: vec![3], dtype: DType::F32 },
        Prim::Pjit { name: "f".into() },
        Prim::Scan { length: 1, reverse: false, num_carry: 0 },
        Prim::Cond { branches: 2 },
        Prim::While,
        Prim::Vmap { axis_size: 1, in_axes: vec![Some(0)], out_axes: 0 },
        Prim::CustomJvpCall { call: crate::jax::custom_rules::CustomCall::for_tests() },
        Prim::CustomVjpCall { call: crate::jax::custom_rules::CustomCall::for_tests() },
        Prim::Remat,
        Prim::DebugCallback,
        Prim::StopGradient,
    ]);
    use crate::jax::ir::LinalgOp as L;
    let linalg = [
        L::LinearSolve { transpose: false },
        L::Cholesky,
        L::Det,
        L::SlogdetSign,
        L::SlogdetLogAbs,
        L::Cofactor,
        L::CofactorJvp,
        L::DetFused { double: false },
        L::TriangularSolve { lower: true, transpose_a: false, unit_diagonal: false },
        L::EighValues { input: EighInput::Symmetrized },
        L::EighVectors { input: EighInput::Lower },
        L::SvdValues,
        L::SvdU { full: false },
        L::SvdVh { full: false },
        L::QrQ { full: false },
        L::QrR { full: false },
        L::Geqrf,
        L::GeqrfTaus,
        L::Pinv { double: false },
        L::Lu,
        L::LuPivots,
        L::LuPermutation,
        L::PivotsToPermutation { size: 1 },
        L::Expm { double: false, upper_triangular: false, max_squarings: 16 },
    ];
    prims.extend(linalg.into_iter().map(Prim::Linalg));
    prims.push(Prim::block(super::conv::Conv {
        window_strides: vec![1],
        padding: vec![(0, 0)],
        lhs_dilation: vec![1],
        rhs_dilation: vec![1],
        dimension_numbers: super::conv::ConvDimensionNumbers { lhs_spec: vec![0, 1, 2], rhs_spec: vec![0, 1, 2], out_spec: vec![0, 1, 2] },
        feature_group_count: 1,
        batch_group_count: 1,
        preferred_element_type: None,
    }));
    prims
}

fn every_primitive_has_its_row_in_docs_ir_md() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ir.md")).unwrap_or_default();
    let missing: Vec<String> = all_prims().iter().map(Prim::name).filter(|n| !doc.contains(&format!("`{n}`"))).collect();
    assert!(missing.is_empty(), "primitives without their row in docs/ir.md's primitive table: {missing:?}");
}

crate::unit_tests::list![every_primitive_has_its_row_in_docs_ir_md];
