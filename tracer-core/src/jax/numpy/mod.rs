//! jax.numpy, jax.lax, jax.nn and jax.scipy on top of the primitives: JAX's user-facing
//! semantics (weak-type promotion, broadcasting, argument checks and their messages), and the
//! conversions where Python needs a concrete value — exactly where JAX raises its tracer
//! errors. This file holds the entry point (`call`) and what every family shares; the
//! functions live by family in the files beside it (docs/ARCHITECTURE.md has the map).

use std::rc::Rc;

use super::array::{self, Array, ArrayKind, Lazy};
use super::aval::{join_dims, shape_tuple, Aval, Shape};
use super::bind1;
use super::dtypes::{self, DType, PyScalarKind, WeakDType};
use super::errors;
use super::eval;
use super::ir::{ArgOp, BinaryPrim, CmpPrim, EighInput, FillValue, IndexItem, IndexMode, LinalgOp, Prim, ReduceOp, UnaryPrim};
use super::surface::JaxFn;
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, PyResult};
use crate::syntax::ast::{BinOp, CmpOp, Expr, UnaryOp};

macro_rules! arr_or_unknown {
    ($interp:expr, $v:expr) => {
        match operand($interp, $v)? {
            Operand::Array(a) => a,
            Operand::Unknown => {
                return Ok(match $v {
                    v @ Value::Opaque(_) => v.clone(),
                    other => Value::opaque(format!("jax.numpy on a {}", other.type_name())),
                })
            }
        }
    };
}

/// The array argument `i`/`name` of a surface call (`cx`), or the function's `TypeError`
/// when it is missing; an argument that is not an array ends the call with an unknown result.
macro_rules! arr {
    ($interp:ident, $cx:ident, $i:expr, $name:expr) => {
        match $cx.p.get($i, $name) {
            Some(v) => arr_or_unknown!($interp, v),
            None => return Err($interp.type_error(format!("{}() missing 1 required positional argument: '{}'", $cx.f.name(), $name))),
        }
    };
}

mod conversion;
mod creation;
mod elementwise;
mod indexing;
mod lax;
mod linalg;
pub(super) mod linalg_api;
mod methods;
mod nn;
mod operands;
mod operators;
mod pad;
mod products;
mod quantile;
mod reductions;
mod repr;
mod shape;
mod sort;
mod ufunc;

pub use conversion::*;
pub use creation::*;
use elementwise::*;
pub use indexing::*;
use linalg::*;
pub use methods::*;
pub use operands::*;
pub use operators::*;
use products::{matmul, squeeze};
use reductions::*;
pub use repr::*;
pub use shape::*;
use ufunc::*;

/// The positional and keyword arguments of a call, read by position or by name.
#[derive(Clone, Copy)]
struct Args<'a> {
    args: &'a [Value],
    kwargs: &'a Kwargs,
}

impl<'a> Args<'a> {
    fn get(&self, i: usize, name: &str) -> Option<&'a Value> {
        self.kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v).or_else(|| self.args.get(i)).filter(|v| !v.is_none())
    }
}

/// One call of a surface function, as each family reads it.
#[derive(Clone, Copy)]
struct Call<'a> {
    f: JaxFn,
    args: &'a [Value],
    kwargs: &'a Kwargs,
    p: Args<'a>,
    /// The dtype configuration (x64) at the call.
    c: dtypes::DTypeConfig,
    /// `keepdims=`, read for every function but `jax.lax`'s, as `jnp`'s reductions take it.
    keepdims: bool,
}

impl Call<'_> {
    /// The first positional argument (`None` when there is none).
    fn first(&self) -> Value {
        self.args.first().cloned().unwrap_or(Value::None)
    }

    /// Parameter `i`, given by position or by its name (`np.ones(shape=(2, 3))`).
    fn named(&self, i: usize, name: &str) -> Value {
        self.p.get(i, name).cloned().unwrap_or(Value::None)
    }

    /// The result of a function no family computes: unknown.
    fn unrouted(&self) -> Value {
        Value::opaque(format!("result of {}", self.f.qualified_name()))
    }
}

/// Functions of the `jax.numpy` layer whose result is not an array.
const NON_ARRAY_RESULTS: &[&str] = &[
    "shape",
    "ndim",
    "size",
    "result_type",
    "promote_types",
    "issubdtype",
    "isdtype",
    "finfo",
    "iinfo",
    "dtype",
    "can_cast",
    "iscomplexobj",
    "isrealobj",
    "isscalar",
    "tree_structure",
    "tree_leaves",
    "tree_flatten",
];

/// Calls a jax.numpy / jax.nn / jax.lax function that maps arrays to arrays.
pub fn call(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    // An op on a tracer gives a tracer, whatever else is unknown (design.md §6).
    let on_tracer = args.iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| match v {
        Value::List(l) => l.borrow().iter().any(Value::is_certain_tracer),
        Value::Tuple(t) => t.iter().any(Value::is_certain_tracer),
        v => v.is_certain_tracer(),
    });
    let result = call_surface(interp, f, args, kwargs);
    match result {
        Ok(Value::Opaque(o)) if on_tracer && !o.tracer && !NON_ARRAY_RESULTS.contains(&f.name()) => {
            Ok(Value::opaque_tracer(o.what.clone()))
        }
        other => other,
    }
}

fn call_surface(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    use JaxFn as F;
    let c = cfg(interp);
    let p = Args { args: &args, kwargs: &kwargs };
    macro_rules! arr {
        ($i:expr, $name:expr) => {
            match p.get($i, $name) {
                Some(v) => arr_or_unknown!(interp, v),
                None => return Err(interp.type_error(format!("{}() missing 1 required positional argument: '{}'", f.name(), $name))),
            }
        };
    }
    macro_rules! unary {
        ($u:expr) => {{
            let a = arr!(0, "x");
            return unary_prim(interp, $u, &a).map(Value::Array);
        }};
    }
    macro_rules! binary {
        ($b:expr) => {{
            let (first, second) = binary_parameter_names(f.name());
            let a = arr!(0, first);
            let b = arr!(1, second);
            return binary_prim(interp, $b, &a, &b).map(Value::Array);
        }};
    }
    macro_rules! compare {
        ($c:expr) => {{
            let a = arr!(0, "x1");
            let b = arr!(1, "x2");
            return compare_arrays(interp, $c, &a, &b).map(Value::Array);
        }};
    }
    if lax::handles(f) {
        return lax::call(interp, f, &p);
    }
    let keepdims = match p.get(usize::MAX, "keepdims") {
        Some(v) => interp.truthy(v)?,
        None => false,
    };
    let cx = Call { f, args: &args, kwargs: &kwargs, p, c, keepdims };
    match f {
        F::NnRelu
        | F::NnRelu6
        | F::NnIdentity
        | F::NnGelu
        | F::NnSilu
        | F::NnSwish
        | F::NnSoftplus
        | F::NnElu
        | F::NnLeakyRelu
        | F::NnLogSigmoid
        | F::NnSoftSign
        | F::NnHardTanh
        | F::NnCelu
        | F::NnSelu
        | F::NnMish
        | F::NnSquareplus
        | F::NnSparsePlus
        | F::NnSparseSigmoid
        | F::NnHardSigmoid
        | F::NnHardSilu
        | F::NnHardSwish
        | F::NnGlu
        | F::NnSoftmax
        | F::NnLogSoftmax
        | F::NnStandardize
        | F::NnLogsumexp
        | F::ScipyLogsumexp
        | F::NnLogmeanexp
        | F::NnLog1mexp
        | F::NnOneHot => nn::serve(interp, &cx),
        F::Dot
        | F::Matmul
        | F::Vdot
        | F::Inner
        | F::Outer
        | F::Einsum
        | F::Tensordot
        | F::Trace
        | F::LinalgNorm
        | F::LinalgLstsq
        | F::LinalgMatrixRank
        | F::LinalgMatrixPower
        | F::LinalgCond
        | F::LinalgSvdvals
        | F::ScipyExpm
        | F::ScipyLu
        | F::ScipyLuFactor
        | F::ScipyLuSolve
        | F::LaxLinalgLu
        | F::LaxLinalgLuPivotsToPermutation
        | F::LaxDotGeneral
        | F::LinalgSolve
        | F::ScipyChoSolve
        | F::ScipySolveTriangular
        | F::LinalgInv
        | F::ScipyInv
        | F::LinalgCholesky
        | F::ScipyCholesky
        | F::ScipyChoFactor
        | F::LinalgPinv
        | F::LinalgDet
        | F::ScipyDet
        | F::LinalgSlogdet
        | F::LinalgEigh
        | F::LinalgEigvalsh
        | F::LinalgSvd
        | F::LinalgQr => linalg::serve(interp, &cx),
        F::Sort | F::Argsort | F::Nonzero | F::Argwhere | F::Unique | F::Searchsorted | F::LaxTopK => sort::serve(interp, &cx),
        F::Take | F::TakeAlongAxis | F::LaxDynamicSlice | F::LaxDynamicSliceInDim | F::LaxDynamicUpdateSlice | F::Diagonal => {
            indexing::serve(interp, &cx)
        }
        F::Reshape
        | F::Ravel
        | F::Transpose
        | F::Swapaxes
        | F::Moveaxis
        | F::ExpandDims
        | F::Squeeze
        | F::BroadcastTo
        | F::Concatenate
        | F::Hstack
        | F::Vstack
        | F::Stack
        | F::Split
        | F::ArraySplit
        | F::Tile
        | F::Repeat
        | F::Flip
        | F::Fliplr
        | F::Flipud
        | F::Rot90
        | F::Diff
        | F::Roll
        | F::Pad
        | F::AtLeast1d
        | F::AtLeast2d
        | F::Shape
        | F::Ndim
        | F::Size
        | F::LaxBroadcastInDim => shape::serve(interp, &cx),
        F::Bincount
        | F::OpsSegmentSum
        | F::Sum
        | F::Prod
        | F::Max
        | F::Min
        | F::Amax
        | F::Amin
        | F::All
        | F::Any
        | F::Nansum
        | F::Nanmax
        | F::Nanmin
        | F::Mean
        | F::Nanmean
        | F::Average
        | F::Median
        | F::Nanmedian
        | F::Quantile
        | F::Nanquantile
        | F::Percentile
        | F::Nanpercentile
        | F::Var
        | F::Std
        | F::CountNonzero
        | F::Argmax
        | F::Argmin
        | F::Cumsum
        | F::Cumprod
        | F::LaxCumsum
        | F::LaxCumprod
        | F::LaxCummax
        | F::LaxCummin
        | F::Ptp => reductions::serve(interp, &cx),
        F::Divide
        | F::TrueDivide
        | F::FloorDivide
        | F::Mod
        | F::Remainder
        | F::Power
        | F::ScipyPolygamma
        | F::LaxPolygamma
        | F::RightShift
        | F::Logaddexp
        | F::Hypot
        | F::Positive
        | F::Round
        | F::Trunc
        | F::Log2
        | F::Log10
        | F::Reciprocal
        | F::Deg2rad
        | F::Rad2deg
        | F::Isnan
        | F::Isinf
        | F::NanToNum
        | F::Real
        | F::Conj
        | F::Imag
        | F::LogicalNot
        | F::BitwiseNot
        | F::Invert
        | F::Allclose
        | F::ArrayEqual
        | F::Isclose
        | F::Where
        | F::Clip
        | F::LaxIntegerPow
        | F::LaxClamp
        | F::ScipyNormLogpdf
        | F::ScipyNormPdf
        | F::Astype
        | F::LaxConvertElementType
        | F::StopGradient
        | F::LaxSelect
        | F::Select => elementwise::serve(interp, &cx),
        F::Array
        | F::Asarray
        | F::Zeros
        | F::Ones
        | F::Empty
        | F::Full
        | F::ZerosLike
        | F::OnesLike
        | F::EmptyLike
        | F::FullLike
        | F::Arange
        | F::Linspace
        | F::Logspace
        | F::ResultType
        | F::PromoteTypes
        | F::Eye
        | F::Identity
        | F::Tril
        | F::Triu
        | F::Tri
        | F::LaxIota
        | F::Append
        | F::Diag
        | F::Meshgrid => creation::serve(interp, &cx),
        F::Add => binary!(BinaryPrim::Add),
        F::Subtract => binary!(BinaryPrim::Sub),
        F::Multiply => binary!(BinaryPrim::Mul),
        F::Maximum => binary!(BinaryPrim::Max),
        F::Minimum => binary!(BinaryPrim::Min),
        F::Arctan2 => binary!(BinaryPrim::Atan2),
        // jnp.fmod is lax.rem (C's fmod: the sign of the dividend) after promotion; an integer
        // divisor of 0 becomes 1 first, which the integer `rem` kernel's 0 already gives.
        F::Fmod => binary!(BinaryPrim::Rem),
        F::Nextafter => binary!(BinaryPrim::NextAfter),
        F::ScipyErf => unary!(UnaryPrim::Erf),
        F::ScipyErfc => unary!(UnaryPrim::Erfc),
        F::ScipyErfinv => unary!(UnaryPrim::ErfInv),
        F::ScipyGammaln => unary!(UnaryPrim::Lgamma),
        F::ScipyDigamma => unary!(UnaryPrim::Digamma),
        F::BitwiseAnd | F::LogicalAnd => binary!(BinaryPrim::And),
        F::LeftShift => binary!(BinaryPrim::ShiftLeft),
        F::BitwiseOr | F::LogicalOr => binary!(BinaryPrim::Or),
        F::BitwiseXor | F::LogicalXor => binary!(BinaryPrim::Xor),
        F::Negative => unary!(UnaryPrim::Neg),
        F::Abs | F::Absolute => unary!(UnaryPrim::Abs),
        F::Sign => unary!(UnaryPrim::Sign),
        F::Floor => unary!(UnaryPrim::Floor),
        F::Ceil => unary!(UnaryPrim::Ceil),
        F::Rint => unary!(UnaryPrim::Round),
        F::Exp => unary!(UnaryPrim::Exp),
        F::Exp2 => unary!(UnaryPrim::Exp2),
        F::Expm1 => unary!(UnaryPrim::Expm1),
        F::Log => unary!(UnaryPrim::Log),
        F::Log1p => unary!(UnaryPrim::Log1p),
        F::Sqrt => unary!(UnaryPrim::Sqrt),
        F::Cbrt => unary!(UnaryPrim::Cbrt),
        F::Square => unary!(UnaryPrim::Square),
        F::Sin => unary!(UnaryPrim::Sin),
        F::Cos => unary!(UnaryPrim::Cos),
        F::Tan => unary!(UnaryPrim::Tan),
        F::Arcsin => unary!(UnaryPrim::Asin),
        F::Arccos => unary!(UnaryPrim::Acos),
        F::Arctan => unary!(UnaryPrim::Atan),
        F::Sinh => unary!(UnaryPrim::Sinh),
        F::Cosh => unary!(UnaryPrim::Cosh),
        F::Tanh | F::NnTanh => unary!(UnaryPrim::Tanh),
        F::Arcsinh => unary!(UnaryPrim::Asinh),
        F::Arccosh => unary!(UnaryPrim::Acosh),
        F::Arctanh => unary!(UnaryPrim::Atanh),
        F::Isfinite => unary!(UnaryPrim::IsFinite),
        F::Equal => compare!(CmpPrim::Eq),
        F::NotEqual => compare!(CmpPrim::Ne),
        F::Less => compare!(CmpPrim::Lt),
        F::LessEqual => compare!(CmpPrim::Le),
        F::Greater => compare!(CmpPrim::Gt),
        F::GreaterEqual => compare!(CmpPrim::Ge),
        F::NnSigmoid => unary!(UnaryPrim::Logistic),
        _ => Ok(Value::opaque(format!("result of {}", f.qualified_name()))),
    }
}
