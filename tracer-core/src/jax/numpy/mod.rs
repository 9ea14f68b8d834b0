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
use nn::*;
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
    let first = || args.first().cloned().unwrap_or(Value::None);
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
        F::Dot | F::Matmul | F::Vdot | F::Inner => {
            let a = arr!(0, "a");
            let b = arr!(1, "b");
            if a.aval.ndim() == 0 || b.aval.ndim() == 0 {
                if f == F::Matmul {
                    return matmul(interp, &a, &b, "matmul").map(Value::Array);
                }
                return binary_prim(interp, BinaryPrim::Mul, &a, &b).map(Value::Array);
            }
            match f {
                F::Matmul => matmul(interp, &a, &b, "matmul"),
                F::Vdot => {
                    let (n, m) = (a.aval.size() as usize, b.aval.size() as usize);
                    let (a, b) = (reshape_raw(interp, &a, &[n])?, reshape_raw(interp, &b, &[m])?);
                    products::dot(interp, &a, &b)
                }
                F::Inner => {
                    let (la, lb) = (a.aval.ndim() - 1, b.aval.ndim() - 1);
                    products::contract(interp, &a, &b, vec![la], vec![lb])
                }
                _ => products::dot(interp, &a, &b),
            }
            .map(Value::Array)
        }
        F::Outer => {
            let a = arr!(0, "a");
            let b = arr!(1, "b");
            let (n, m) = (a.aval.size() as usize, b.aval.size() as usize);
            let a2 = reshape_raw(interp, &a, &[n, 1])?;
            let b2 = reshape_raw(interp, &b, &[1, m])?;
            binary_prim(interp, BinaryPrim::Mul, &a2, &b2).map(Value::Array)
        }
        F::Einsum => {
            if args.is_empty() && !kwargs.iter().any(|(k, _)| k.as_ref() == "subscripts") {
                return Err(interp.type_error("einsum() missing 1 required positional argument: 'subscripts'"));
            }
            let Value::Str(spec) = first() else {
                return Ok(Value::opaque("einsum"));
            };
            let mut ops = Vec::new();
            for v in &args[1..] {
                ops.push(arr_or_unknown!(interp, v));
            }
            let preferred = dtype_arg(interp, p.get(usize::MAX, "preferred_element_type"))?;
            products::einsum(interp, &spec, &ops, preferred)
        }
        F::Tensordot => {
            let a = arr!(0, "a");
            let b = arr!(1, "b");
            let axes = p.get(2, "axes").cloned().unwrap_or(Value::Int(2));
            let (na, nb) = (a.aval.ndim(), b.aval.ndim());
            let (la, lb): (Vec<usize>, Vec<usize>) = match &axes {
                Value::Int(k) => {
                    if *k < 0 || *k as usize > na.min(nb) {
                        let message = format!(
                            "Number of tensordot axes (axes {k}) exceeds input ranks ({} and {})",
                            shape_tuple(&a.aval.shape),
                            shape_tuple(&b.aval.shape)
                        );
                        return Err(interp.type_error(message));
                    }
                    let k = *k as usize;
                    ((na - k..na).collect(), (0..k).collect())
                }
                other => {
                    let pair = interp.iterate(other)?;
                    let conv = |interp: &mut Interp, v: &Value, nd: usize| -> PyResult<Option<Vec<usize>>> {
                        if let Value::Int(i) = v {
                            return Ok(Some(vec![normalize_axis(interp, *i, nd)?]));
                        }
                        let mut axes = Vec::new();
                        for x in interp.iterate(v)? {
                            let Some(i) = crate::interp::ops::as_int(&x) else { return Ok(None) };
                            axes.push(normalize_axis(interp, i, nd)?);
                        }
                        Ok(Some(axes))
                    };
                    let (Some(x), Some(y)) = (pair.first(), pair.get(1)) else {
                        return Err(
                            interp.type_error("tensordot axes argument must be an int, a pair of ints, or a pair of lists/tuples of ints.")
                        );
                    };
                    let (Some(x), Some(y)) = (conv(interp, x, na)?, conv(interp, y, nb)?) else {
                        return Ok(Value::opaque("tensordot with axes not known"));
                    };
                    (x, y)
                }
            };
            products::contract(interp, &a, &b, la, lb).map(Value::Array)
        }
        F::Trace => {
            let a = arr!(0, "a");
            let nd = a.aval.ndim();
            let int_arg = |i: usize, name: &str, default: i64| match p.get(i, name) {
                None => Some(default),
                Some(v) => crate::interp::ops::as_int(v),
            };
            let (Some(offset), Some(axis1), Some(axis2)) = (int_arg(1, "offset", 0), int_arg(2, "axis1", 0), int_arg(3, "axis2", 1)) else {
                // An offset or axis that is not a Python int: not modelled.
                let shape = a.aval.shape.iter().skip(2).copied().collect::<Vec<_>>();
                return bind1(interp, Prim::Opaque("trace"), &[a.clone()], a.aval.with_shape(&shape)).map(Value::Array);
            };
            let (ax1, ax2) = (normalize_axis(interp, axis1, nd)?, normalize_axis(interp, axis2, nd)?);
            if ax1 == ax2 {
                return Err(interp.value_error(format!("axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")));
            }
            let dt = dtype_arg(interp, p.get(4, "dtype"))?;
            trace(interp, &a, offset, ax1, ax2, dt).map(Value::Array)
        }
        F::LinalgNorm | F::LinalgLstsq | F::LinalgMatrixRank | F::LinalgMatrixPower | F::LinalgCond | F::LinalgSvdvals => {
            linalg_api::call(interp, f, &p)
        }
        F::ScipyExpm => linalg_api::expm(interp, &p),
        F::ScipyLu | F::ScipyLuFactor | F::ScipyLuSolve | F::LaxLinalgLu | F::LaxLinalgLuPivotsToPermutation => {
            linalg_api::call_lu(interp, f, &p)
        }
        F::NnRelu => {
            let a = arr!(0, "x");
            let zero = Array::scalar(0.0, a.aval.dtype, true);
            binary_prim(interp, BinaryPrim::Max, &a, &zero).map(Value::Array)
        }
        // `jnp.minimum(jnp.maximum(x, 0), 6.)`, as JAX writes it; its derivative is its
        // `custom_jvp` rule's (`ad::partials`, keyed on the equations' API).
        F::NnRelu6 => {
            let a = arr!(0, "x");
            let a = inexact(interp, &a)?;
            let zero = Array::scalar(0.0, a.aval.dtype, true);
            let six = Array::scalar(6.0, a.aval.dtype, true);
            let r = binary_prim(interp, BinaryPrim::Max, &a, &zero)?;
            binary_prim(interp, BinaryPrim::Min, &r, &six).map(Value::Array)
        }
        F::NnSigmoid => unary!(UnaryPrim::Logistic),
        F::NnIdentity => Ok(Value::Array(arr!(0, "x"))),
        F::NnGelu
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
        | F::NnGlu => {
            let a = arr!(0, "x");
            let param = |i: usize, name: &str, default: f64| p.get(i, name).cloned().unwrap_or(Value::Float(default));
            let extra = match f {
                F::NnElu | F::NnCelu => Some(param(1, "alpha", 1.0)),
                F::NnLeakyRelu => Some(param(1, "negative_slope", 1e-2)),
                F::NnSquareplus => Some(p.get(1, "b").cloned().unwrap_or(Value::Int(4))),
                F::NnGlu => Some(p.get(1, "axis").cloned().unwrap_or(Value::Int(-1))),
                F::NnGelu => Some(p.get(1, "approximate").cloned().unwrap_or(Value::Bool(true))),
                _ => None,
            };
            activation(interp, f, &a, extra.as_ref())
        }
        F::NnSoftmax | F::NnLogSoftmax if p.get(usize::MAX, "where").is_none() && p.get(usize::MAX, "initial").is_none() => {
            let a = arr!(0, "x");
            let axes = axes_arg(interp, Some(p.get(1, "axis").unwrap_or(&Value::Int(-1))), a.aval.ndim().max(1))?;
            let a = inexact(interp, &a)?;
            // jax.nn.softmax / log_softmax: shift by the maximum so that exp cannot overflow.
            let x_max = reduce(interp, &a, ReduceOp::Max, axes.clone(), true, None)?;
            let shifted = binary_prim(interp, BinaryPrim::Sub, &a, &x_max)?;
            let e = unary_prim(interp, UnaryPrim::Exp, &shifted)?;
            let total = reduce(interp, &e, ReduceOp::Sum, axes, true, None)?;
            if f == F::NnSoftmax {
                return binary_prim(interp, BinaryPrim::Div, &e, &total).map(Value::Array);
            }
            let log_total = unary_prim(interp, UnaryPrim::Log, &total)?;
            binary_prim(interp, BinaryPrim::Sub, &shifted, &log_total).map(Value::Array)
        }
        F::NnStandardize if a_is_inexact(&args) => {
            // mean(x, axis, keepdims=True, where); variance: "fast" (the default)
            // mean(square(x)) - square(mean), clipped at 0, or "stable" mean(square(x - mean));
            // then (x - mean) * rsqrt(variance + epsilon).
            let x = arr!(0, "x");
            let axes = axes_arg(interp, Some(p.get(1, "axis").unwrap_or(&Value::Int(-1))), x.aval.ndim())?;
            let where_ = match p.get(5, "where") {
                Some(v) => Some(arr_or_unknown!(interp, v)),
                None => None,
            };
            let mean = match p.get(2, "mean") {
                Some(v) => arr_or_unknown!(interp, v),
                None => mean_masked(interp, &x, axes.clone(), true, None, where_.as_ref())?,
            };
            let variance = match p.get(3, "variance") {
                Some(v) => arr_or_unknown!(interp, v),
                None => {
                    let algorithm = match p.get(usize::MAX, "algorithm") {
                        Some(Value::Str(s)) => s.to_string(),
                        Some(_) => return Ok(Value::opaque("standardize with an unknown algorithm")),
                        None => "fast".to_string(),
                    };
                    if algorithm == "stable" {
                        let d = binary_prim(interp, BinaryPrim::Sub, &x, &mean)?;
                        let sq = unary_prim(interp, UnaryPrim::Square, &d)?;
                        mean_masked(interp, &sq, axes, true, None, where_.as_ref())?
                    } else if algorithm == "fast" {
                        let sq = unary_prim(interp, UnaryPrim::Square, &x)?;
                        let m2 = mean_masked(interp, &sq, axes, true, None, where_.as_ref())?;
                        let msq = unary_prim(interp, UnaryPrim::Square, &mean)?;
                        let v = binary_prim(interp, BinaryPrim::Sub, &m2, &msq)?;
                        binary_prim(interp, BinaryPrim::Max, &v, &Array::scalar(0.0, DType::I64, true))?
                    } else {
                        return Err(interp.value_error(format!("Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")));
                    }
                }
            };
            let eps = match p.get(4, "epsilon") {
                Some(v) => arr_or_unknown!(interp, v),
                None => Array::scalar(1e-5, DType::F64, true),
            };
            let d = binary_prim(interp, BinaryPrim::Sub, &x, &mean)?;
            let ve = binary_prim(interp, BinaryPrim::Add, &variance, &eps)?;
            let r = unary_prim(interp, UnaryPrim::Rsqrt, &ve)?;
            binary_prim(interp, BinaryPrim::Mul, &d, &r).map(Value::Array)
        }
        F::NnSoftmax | F::NnLogSoftmax | F::NnStandardize => {
            let a = arr!(0, "x");
            let _ = axes_arg(interp, Some(p.get(1, "axis").unwrap_or(&Value::Int(-1))), a.aval.ndim().max(1))?;
            let a = inexact(interp, &a)?;
            bind1(
                interp,
                Prim::Opaque(match f {
                    F::NnSoftmax => "softmax",
                    F::NnLogSoftmax => "log_softmax",
                    _ => "standardize",
                }),
                &[a.clone()],
                a.aval.clone(),
            )
            .map(Value::Array)
        }
        F::NnLogsumexp | F::ScipyLogsumexp => {
            let a = arr!(0, "a");
            let axes = axes_arg(interp, p.get(1, "axis"), a.aval.ndim())?;
            let a = inexact(interp, &a)?;
            if p.get(usize::MAX, "b").is_some() || p.get(usize::MAX, "return_sign").is_some() {
                let r = reduce(interp, &a, ReduceOp::Max, axes, keepdims, None)?;
                return bind1(interp, Prim::Opaque("logsumexp"), &[a], r.aval.clone()).map(Value::Array);
            }
            logsumexp(interp, &a, axes, keepdims).map(Value::Array)
        }
        // `lse - log(count)`, the count converted to the result's dtype (a constant, so its
        // log is what XLA's `log` gives for it).
        F::NnLogmeanexp if p.get(usize::MAX, "where").is_none() => {
            let a = arr!(0, "x");
            let axes = axes_arg(interp, p.get(1, "axis"), a.aval.ndim())?;
            let a = inexact(interp, &a)?;
            let n: usize = match &axes {
                Some(ax) => ax.iter().map(|&i| a.aval.shape[i]).product(),
                None => a.aval.shape.iter().product(),
            };
            let lse = logsumexp(interp, &a, axes, keepdims)?;
            let count = full(interp, &[], n as f64, lse.aval.dtype)?;
            let log_count = unary_prim(interp, UnaryPrim::Log, &count)?;
            binary_prim(interp, BinaryPrim::Sub, &lse, &log_count).map(Value::Array)
        }
        // `where(x < log(2), log(-expm1(-x)), log1p(-exp(-x)))`, with `log(2.0)` a float32 (or
        // float64) constant as JAX binds it. Its derivative is its `custom_jvp` rule
        // (`g / expm1(x)`), not that of these equations (`custom_rules::library`).
        F::NnLog1mexp => {
            let x = arr!(0, "x");
            let x = inexact(interp, &x)?;
            let eqn_counts = super::custom_rules::eqn_counts(interp);
            let two = Array::scalar(2.0, x.aval.dtype, false);
            let c = unary_prim(interp, UnaryPrim::Log, &two)?;
            let small = compare_arrays(interp, CmpPrim::Lt, &x, &c)?;
            let n = unary_prim(interp, UnaryPrim::Neg, &x)?;
            let e = unary_prim(interp, UnaryPrim::Expm1, &n)?;
            let e = unary_prim(interp, UnaryPrim::Neg, &e)?;
            let near = unary_prim(interp, UnaryPrim::Log, &e)?;
            let n = unary_prim(interp, UnaryPrim::Neg, &x)?;
            let e = unary_prim(interp, UnaryPrim::Exp, &n)?;
            let e = unary_prim(interp, UnaryPrim::Neg, &e)?;
            let far = unary_prim(interp, UnaryPrim::Log1p, &e)?;
            let out = where3(interp, &small, &near, &far)?;
            let rule = super::custom_rules::LibraryRule::Log1mexp;
            super::custom_rules::library(interp, "log1mexp", rule, vec![Value::Array(x)], Value::Array(out), &eqn_counts)
        }
        F::NnLogmeanexp => {
            let a = arr!(0, "x");
            let axes = axes_arg(interp, p.get(1, "axis"), a.aval.ndim())?;
            let a = inexact(interp, &a)?;
            let r = reduce(interp, &a, ReduceOp::Max, axes, keepdims, None)?;
            bind1(interp, Prim::Opaque("logmeanexp"), &[a], r.aval.clone()).map(Value::Array)
        }
        F::NnOneHot => {
            let a = arr!(0, "x");
            let Some(n) = p.get(1, "num_classes").map(|v| interp.index_of(v)).transpose()?.flatten() else {
                return Ok(Value::opaque("one_hot"));
            };
            let d = creation_dtype(interp, p.get(usize::MAX, "dtype"), dtypes::default_float(c))?;
            let mut shape = a.aval.shape.to_vec();
            shape.push(n as usize);
            if a.aval.dtype.is_integer() && !d.is_complex() {
                // jax.nn.one_hot: `x[..., None] == arange(num_classes)`, as `dtype`.
                let column = reshape_raw(interp, &a, &shape[..shape.len() - 1].iter().copied().chain([1]).collect::<Vec<_>>())?;
                let classes = bind1(
                    interp,
                    Prim::Iota { dtype: a.aval.dtype, shape: vec![n as usize], dimension: 0 },
                    &[],
                    Aval::new(&[n as usize], a.aval.dtype),
                )?;
                let hits = compare_arrays(interp, CmpPrim::Eq, &column, &classes)?;
                return convert(interp, &hits, d, false).map(Value::Array);
            }
            bind1(interp, Prim::Opaque("one_hot"), &[a], Aval::new(&shape, d)).map(Value::Array)
        }
        F::LaxDotGeneral => {
            let a = arr!(0, "lhs");
            let b = arr!(1, "rhs");
            let Some(numbers) = p.get(2, "dimension_numbers") else {
                return Err(interp.type_error("dot_general() missing 1 required positional argument: 'dimension_numbers'"));
            };
            let preferred = dtype_arg(interp, p.get(4, "preferred_element_type"))?.map(|d| dtypes::canonicalize(d, c));
            products::lax_dot_general(interp, &a, &b, numbers, preferred)
        }
        F::LinalgSolve => {
            let (a, b) = (arr!(0, "a"), arr!(1, "b"));
            let dt = float_of(interp, &[a.clone(), b.clone()]);
            if a.aval.ndim() < 2 {
                return Err(
                    interp.value_error(format!("left hand array must be at least two dimensional; got a.shape={}", a.aval.shape_tuple()))
                );
            }
            // JAX >= 0.5: `b` is a vector only when it is 1-D (`(m,m),(m)->(m)`), otherwise a
            // stack of matrices (`(m,m),(m,n)->(m,n)`) whose batch axes broadcast with `a`'s.
            let nd = a.aval.ndim();
            let (m, rows) = (a.aval.shape[nd - 1], a.aval.shape[nd - 2]);
            let vector = b.aval.ndim() == 1;
            let signature = if vector { "(m,m),(m)->(m)" } else { "(m,m),(m,n)->(m,n)" };
            let bm = if vector { b.aval.shape.first().copied() } else { b.aval.shape.get(b.aval.ndim().wrapping_sub(2)).copied() };
            for other in [Some(rows), bm] {
                if let Some(k) = other.filter(|&k| k != m) {
                    return Err(interp.value_error(format!(
                        "inconsistent size for core dimension 'm': {k} vs {m} on vectorized function with excluded=frozenset() and signature='{signature}'"
                    )));
                }
            }
            let b_batch: &[usize] = if vector { &[] } else { &b.aval.shape[..b.aval.ndim().saturating_sub(2)] };
            let batch = broadcast_shapes(&[&a.aval.shape[..nd - 2], b_batch]).map_err(|msg| interp.value_error(msg))?;
            let (a2, b2) = (convert(interp, &a, dt, false)?, convert(interp, &b, dt, false)?);
            let b2 = if vector { reshape_raw(interp, &b2, &[m, 1])? } else { b2 };
            let n = b2.aval.shape.last().copied().unwrap_or(1);
            let out: Vec<usize> = batch.iter().copied().chain([m, n]).collect();
            // jnp.vectorize broadcasts both operands to the batch axes.
            let a2 = broadcast_to_shape(interp, &a2, &[batch.as_slice(), &[m, m]].concat())?;
            let b2 = broadcast_to_shape(interp, &b2, &out)?;
            let x = linalg_api::solve_system(interp, &a2, &b2)?;
            if vector {
                return reshape_raw(interp, &x, &out[..out.len() - 1]).map(Value::Array);
            }
            Ok(Value::Array(x))
        }
        F::ScipyChoSolve | F::ScipySolveTriangular => {
            let (a, b) = if f == F::ScipyChoSolve {
                let factor = p.get(0, "c_and_lower").cloned().unwrap_or(Value::None);
                let parts = interp.iterate(&factor)?;
                let c0 = parts.first().cloned().unwrap_or(Value::None);
                (arr_or_unknown!(interp, &c0), arr!(1, "b"))
            } else {
                (arr!(0, "a"), arr!(1, "b"))
            };
            let dt = float_of(interp, &[a.clone(), b.clone()]);
            let n = a.aval.shape.last().copied().unwrap_or(0);
            if a.aval.ndim() < 2 || a.aval.shape[a.aval.ndim() - 2] != n {
                return Err(interp.raise(
                    "ValueError",
                    Code::ShapeMismatch,
                    format!("The last two dimensions of a must be square; got a.shape={}", a.aval.shape_tuple()),
                ));
            }
            // JAX's `jnp.vectorize` signatures: `b` is a (stack of) vector(s) when it is 1-D, or
            // has one axis fewer than `a` and ends in `n`; otherwise a stack of `(n, k)`
            // matrices. The batch axes of `a` and `b` broadcast.
            let (a_nd, b_nd) = (a.aval.ndim(), b.aval.ndim());
            let vector = b_nd == 1 || (a_nd == b_nd + 1 && b.aval.shape.last() == Some(&n));
            let (signature, core) = if vector { ("(n,n),(n)->(n)", 1) } else { ("(n,n),(n,k)->(n,k)", 2) };
            if b_nd < core {
                return Ok(Value::opaque("solve of a scalar"));
            }
            let bn = b.aval.shape[b_nd - core];
            if bn != n {
                return Err(interp.value_error(format!(
                    "inconsistent size for core dimension 'n': {bn} vs {n} on vectorized function with excluded=frozenset() and signature='{signature}'"
                )));
            }
            let batch = broadcast_shapes(&[&a.aval.shape[..a_nd - 2], &b.aval.shape[..b_nd - core]]).map_err(|m| interp.value_error(m))?;
            let (a2, b2) = (convert(interp, &a, dt, false)?, convert(interp, &b, dt, false)?);
            // The triangular solves JAX binds: `solve_triangular`'s one, and `cho_solve`'s two
            // (`c x = b` through `cᵀ`: lower `L y = b, Lᵀ x = y`; upper `Uᵀ y = b, U x = y`).
            let solves: Vec<(bool, bool)> = if f == F::ScipyChoSolve {
                let factor = p.get(0, "c_and_lower").cloned().unwrap_or(Value::None);
                let parts = interp.iterate(&factor)?;
                let lower = match parts.get(1) {
                    Some(v) => interp.truthy(v)?,
                    None => false,
                };
                vec![(lower, !lower), (lower, lower)]
            } else {
                let lower = match p.get(3, "lower") {
                    Some(v) => interp.truthy(v)?,
                    None => false,
                };
                let trans = match p.get(2, "trans") {
                    Some(Value::Str(t)) => &**t != "N",
                    Some(v) => crate::interp::ops::as_int(v).unwrap_or(0) != 0,
                    None => false,
                };
                vec![(lower, trans)]
            };
            let unit_diagonal = match p.get(4, "unit_diagonal") {
                Some(v) if f == F::ScipySolveTriangular => interp.truthy(v)?,
                _ => false,
            };
            // Both broadcast to the batch axes, a vector `b` as `b[..., None]`.
            let a_shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
            let a2 = broadcast_to_shape(interp, &a2, &a_shape)?;
            let b_core = &b2.aval.shape[b_nd - core..];
            let b_shape: Vec<usize> = batch.iter().chain(b_core).copied().collect();
            let b2 = broadcast_to_shape(interp, &b2, &b_shape)?;
            let out_shape = b_shape.clone();
            let b3 = if vector { reshape_raw(interp, &b2, &[b_shape.as_slice(), &[1]].concat())? } else { b2 };
            let mut x = b3;
            for (lower, transpose_a) in solves {
                let op = LinalgOp::TriangularSolve { lower, transpose_a, unit_diagonal };
                let aval = x.aval.clone();
                x = bind1(interp, Prim::Linalg(op), &[a2.clone(), x], aval)?;
            }
            if vector {
                x = reshape_raw(interp, &x, &out_shape)?;
            }
            Ok(Value::Array(x))
        }
        F::LinalgInv | F::ScipyInv | F::LinalgCholesky | F::ScipyCholesky | F::ScipyChoFactor => {
            // `jax.scipy.linalg.inv` is `jnp.linalg.inv`.
            let f = if f == F::ScipyInv { F::LinalgInv } else { f };
            let a = arr!(0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let nd = a.aval.ndim();
            if f == F::LinalgInv && (nd < 2 || a.aval.shape[nd - 1] != a.aval.shape[nd - 2]) {
                return Err(interp.value_error(format!("Argument to inv must have shape [..., n, n], got {}.", a.aval.shape_tuple())));
            }
            let a2 = convert(interp, &a, dt, false)?;
            let lower = p.get(1, "lower").cloned().unwrap_or(Value::Bool(false));
            // jax.scipy.linalg's factor is upper triangular unless `lower=True`.
            let upper = matches!(f, F::ScipyCholesky | F::ScipyChoFactor) && !matches!(lower, Value::Bool(true));
            let square = nd >= 2 && a.aval.shape[nd - 1] == a.aval.shape[nd - 2];
            let out = if !square {
                bind1(interp, Prim::Opaque(if f == F::LinalgInv { "inv" } else { "cholesky" }), &[a2], a.aval.with_dtype(dt))?
            } else {
                if f == F::LinalgInv {
                    return linalg_api::inv(interp, &a2).map(Value::Array);
                }
                let op = LinalgOp::Cholesky;
                let mut perm: Vec<usize> = (0..nd).collect();
                perm.swap(nd - 1, nd - 2);
                // `cholesky(a.mT).mT`, as jax.scipy.linalg factors the upper triangle (the
                // kernel symmetrises either way; the derivative sees the transposed tangent).
                let a2 =
                    if upper { bind1(interp, Prim::Transpose { permutation: perm.clone() }, &[a2.clone()], a2.aval.clone())? } else { a2 };
                let out = bind1(interp, Prim::Linalg(op), &[a2], a.aval.with_dtype(dt))?;
                if upper {
                    bind1(interp, Prim::Transpose { permutation: perm }, &[out.clone()], out.aval.clone())?
                } else {
                    out
                }
            };
            if f == F::ScipyChoFactor {
                return Ok(Value::tuple(vec![Value::Array(out), lower]));
            }
            Ok(Value::Array(out))
        }
        F::LinalgPinv => {
            let a = arr!(0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let mut s = a.aval.shape.to_vec();
            let nd = s.len();
            if nd >= 2 {
                s.swap(nd - 1, nd - 2);
            }
            let (rtol, rcond) = (p.get(1, "rtol"), p.get(usize::MAX, "rcond"));
            if rtol.is_some() && rcond.is_some() {
                return Err(interp.value_error("pinv: only one of rtol and rcond may be specified."));
            }
            let hermitian = match p.get(2, "hermitian") {
                Some(v) => interp.truthy(v)?,
                None => false,
            };
            let mut a2 = convert(interp, &a, dt, false)?;
            let square = nd >= 2 && a.aval.shape[nd - 1] == a.aval.shape[nd - 2];
            // JAX's cutoff is `rtol · s_max`, `rtol` defaulting to `10 · max(m, n) · eps`;
            // a given one (broadcast over the batch axes) is the kernel's second operand.
            // `hermitian=True` decomposes the symmetrised matrix (`svd` through `eigh`), and
            // so does its derivative. 16-bit floats raise JAX's error when it is bound.
            let mut inputs = Vec::new();
            if let Some(r) = rtol.or(rcond) {
                let r = arr_or_unknown!(interp, r);
                let batch = &a.aval.shape[..nd.saturating_sub(2)];
                if broadcast_shapes(&[r.aval.shape.as_slice(), batch]).ok().as_deref() == Some(batch) {
                    let r = convert(interp, &r, dt, false)?;
                    inputs.push(broadcast_to_shape(interp, &r, batch)?);
                }
            }
            let computed = nd >= 2 && (!hermitian || square) && inputs.len() == usize::from(rtol.or(rcond).is_some());
            if hermitian && square {
                a2 = linalg_api::symmetrize(interp, &a2)?;
            }
            inputs.insert(0, a2);
            let prim = if computed { Prim::Linalg(LinalgOp::Pinv { double: dt == DType::F64 }) } else { Prim::Opaque("pinv") };
            bind1(interp, prim, &inputs, Aval::new(&s, dt)).map(Value::Array)
        }
        F::LinalgDet | F::ScipyDet | F::LinalgSlogdet => {
            // `jax.scipy.linalg.det` is `jnp.linalg.det`.
            let f = if f == F::ScipyDet { F::LinalgDet } else { f };
            let a = arr!(0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let nd = a.aval.ndim();
            if nd < 2 || a.aval.shape[nd - 1] != a.aval.shape[nd - 2] {
                let name = if f == F::LinalgDet { "_det()" } else { "slogdet" };
                return Err(interp.value_error(format!("Argument to {name} must have shape [..., n, n], got {}", a.aval.shape_tuple())));
            }
            let a = convert(interp, &a, dt, false)?;
            if f == F::LinalgSlogdet {
                let (sign, log) = linalg_api::slogdet(interp, &a)?;
                return Ok(Value::tuple(vec![Value::Array(sign), Value::Array(log)]));
            }
            linalg_api::det(interp, &a).map(Value::Array)
        }
        F::LinalgEigh | F::LinalgEigvalsh => {
            let a = arr!(0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let nd = a.aval.ndim();
            let w: Vec<usize> = a.aval.shape[..nd.saturating_sub(1)].to_vec();
            let symmetrize = match p.get(2, "symmetrize_input") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            let square = nd >= 2 && a.aval.shape[nd - 1] == a.aval.shape[nd - 2];
            let a2 = convert(interp, &a, dt, false)?;
            // `UPLO=None` is `lower=True`; with `symmetrize_input=False` LAPACK reads that
            // triangle only.
            let triangle = match p.get(1, "UPLO") {
                None => EighInput::Lower,
                Some(Value::Str(s)) if &**s == "L" => EighInput::Lower,
                Some(Value::Str(s)) if &**s == "U" => EighInput::Upper,
                Some(other) => {
                    let shown = match other {
                        Value::Str(s) => s.to_string(),
                        other => interp.repr(other)?,
                    };
                    return Err(interp.value_error(format!("UPLO must be one of None, 'L', or 'U', got {shown}")));
                }
            };
            // JAX's `eigh_jvp_rule` decomposes `symmetrize(a)`: a differentiated `eigh` of one
            // triangle gives the eigenpairs of `(a + aᵀ) / 2` as its primal outputs, not those
            // of the triangle. Whether JAX differentiates it depends on whether `a` depends on
            // the differentiated inputs, which is not known here: under `grad`/`jvp` a traced
            // operand's values are not computed.
            let differentiated = matches!(a.kind, ArrayKind::Tracer(_))
                && interp.jax.traces.iter().any(|t| matches!(t.kind, super::TraceKind::Grad | super::TraceKind::Jvp));
            let input = match (symmetrize, differentiated) {
                (true, _) => Some(EighInput::Symmetrized),
                (false, false) => Some(triangle),
                (false, true) => None,
            };
            let (wv, v) = if let (true, Some(input)) = (square, input) {
                let wv = bind1(interp, Prim::Linalg(LinalgOp::EighValues { input }), &[a2.clone()], Aval::new(&w, dt))?;
                let v = bind1(interp, Prim::Linalg(LinalgOp::EighVectors { input }), &[a2], a.aval.with_dtype(dt))?;
                (wv, v)
            } else {
                let wv = bind1(interp, Prim::Opaque("eigh"), &[a2.clone()], Aval::new(&w, dt))?;
                let v = bind1(interp, Prim::Opaque("eigh"), &[a2], a.aval.with_dtype(dt))?;
                (wv, v)
            };
            if f == F::LinalgEigvalsh {
                return Ok(Value::Array(wv));
            }
            Ok(Value::tuple(vec![Value::Array(wv), Value::Array(v)]))
        }
        F::LinalgSvd | F::LinalgQr => {
            let a = arr!(0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let nd = a.aval.ndim();
            if nd < 2 {
                return Ok(Value::opaque("svd of a vector"));
            }
            let (m, n) = (a.aval.shape[nd - 2], a.aval.shape[nd - 1]);
            let k = m.min(n);
            let batch: Vec<usize> = a.aval.shape[..nd - 2].to_vec();
            let with = |extra: &[usize]| -> Vec<usize> { batch.iter().copied().chain(extra.iter().copied()).collect() };
            let a2 = convert(interp, &a, dt, false)?;
            if f == F::LinalgQr {
                let mode = match p.get(1, "mode") {
                    Some(Value::Str(mode)) => mode.to_string(),
                    _ => "reduced".to_string(),
                };
                if !matches!(mode.as_str(), "reduced" | "complete" | "r" | "raw") {
                    return Err(interp.value_error(format!("Unsupported QR decomposition mode '{mode}'")));
                }
                if mode == "raw" {
                    // `geqrf`'s packed factors, transposed, and the reflectors' scale factors.
                    let packed = bind1(interp, Prim::Linalg(LinalgOp::Geqrf), &[a2.clone()], a2.aval.clone())?;
                    let taus = bind1(interp, Prim::Linalg(LinalgOp::GeqrfTaus), &[a2], Aval::new(&with(&[k]), dt))?;
                    let h = linalg_api::swap_last_axes(interp, &packed)?;
                    return Ok(Value::tuple(vec![Value::Array(h), Value::Array(taus)]));
                }
                let full = mode == "complete";
                let (q_shape, r_shape) = if full { (with(&[m, m]), with(&[m, n])) } else { (with(&[m, k]), with(&[k, n])) };
                let (q_prim, r_prim) = (Prim::Linalg(LinalgOp::QrQ { full }), Prim::Linalg(LinalgOp::QrR { full }));
                let r = bind1(interp, r_prim, &[a2.clone()], Aval::new(&r_shape, dt))?;
                if mode == "r" {
                    return Ok(Value::Array(r));
                }
                let q = bind1(interp, q_prim, &[a2], Aval::new(&q_shape, dt))?;
                return Ok(Value::tuple(vec![Value::Array(q), Value::Array(r)]));
            }
            let full = match p.get(1, "full_matrices") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            let compute_uv = match p.get(2, "compute_uv") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            // `hermitian=True` goes through `eigh` of the symmetrised matrix in JAX: the SVD
            // of that matrix, whose singular values are the eigenvalues' magnitudes; its
            // vectors, defined up to sign, may differ from JAX's in sign (as `svd`'s do).
            let hermitian = match p.get(3, "hermitian") {
                Some(v) => interp.truthy(v)?,
                None => false,
            };
            let a2 = if hermitian && m == n { linalg_api::symmetrize(interp, &a2)? } else { a2 };
            let prim = |op: LinalgOp| if hermitian && m != n { Prim::Opaque("svd") } else { Prim::Linalg(op) };
            let s = bind1(interp, prim(LinalgOp::SvdValues), &[a2.clone()], Aval::new(&with(&[k]), dt))?;
            if !compute_uv {
                return Ok(Value::Array(s));
            }
            let (u, vh) = if full { (with(&[m, m]), with(&[n, n])) } else { (with(&[m, k]), with(&[k, n])) };
            let u = bind1(interp, prim(LinalgOp::SvdU { full }), &[a2.clone()], Aval::new(&u, dt))?;
            let vh = bind1(interp, prim(LinalgOp::SvdVh { full }), &[a2], Aval::new(&vh, dt))?;
            Ok(Value::tuple(vec![Value::Array(u), Value::Array(s), Value::Array(vh)]))
        }
        _ => Ok(Value::opaque(format!("result of {}", f.qualified_name()))),
    }
}
