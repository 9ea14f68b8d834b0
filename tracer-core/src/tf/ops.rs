//! How each function of the `tf` surface is served: `route` is one exhaustive match over
//! `TfFn` (a new entry does not compile until it has a route). Most ops are TensorFlow's
//! argument rules and checks (dtype, shape, axis, with TensorFlow's messages, eager and in a
//! graph) followed by the `jax.numpy` function with the same semantics, so that `tf.matmul`
//! binds what `jnp.matmul` binds. An error the `jnp` layer raises that TensorFlow's checks
//! here did not claim is not reported (its class and message would be JAX's): the result is
//! then unknown.

use std::rc::Rc;

use super::errors;
use super::tensor::{self, mark, to_tensor, unknown_tensor, Binary};
use super::{TfFn, TfValue};
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::dtypes::DType;
use crate::jax::numpy as jnp;
use crate::jax::surface::JaxFn;

/// How a surface function is served.
#[derive(Clone, Copy, Debug)]
pub enum Route {
    /// Two tensors of one dtype, elementwise (`tensor::operands`).
    Binary(Binary),
    /// One tensor `x`, elementwise, as the `jnp` function; `floats` when TensorFlow only
    /// registers the op for floating dtypes (any other input is not claimed: unknown).
    Unary { jnp: JaxFn, floats: bool },
    /// `(input_tensor, axis=None, keepdims=False)`, as the `jnp` reduction; the node name
    /// for graph errors.
    Reduce { jnp: JaxFn, node: &'static str },
    /// An arm of `special`.
    Special,
    /// `function.rs`, `variable.rs` or the interpreter serve it.
    Elsewhere,
}

pub fn route(f: TfFn) -> Route {
    use tensor as t;
    use JaxFn as J;
    use TfFn as F;
    let unary = |jnp, floats| Route::Unary { jnp, floats };
    let reduce = |jnp, node| Route::Reduce { jnp, node };
    match f {
        F::Function
        | F::Variable
        | F::GradientTape
        | F::TensorSpec
        | F::TensorShape
        | F::Print
        | F::Cond
        | F::SwitchCase
        | F::WhileLoop
        | F::TensorArray
        | F::DoNotConvert
        | F::RunFunctionsEagerly
        | F::IsTensor => Route::Elsewhere,
        F::Add => Route::Binary(t::ADD),
        F::Subtract => Route::Binary(t::SUB),
        F::Multiply => Route::Binary(t::MUL),
        F::Floordiv => Route::Binary(t::FLOOR_DIV),
        F::Floormod | F::Mod => Route::Binary(t::FLOOR_MOD),
        F::Pow => Route::Binary(t::POW),
        F::Maximum => Route::Binary(t::MAXIMUM),
        F::Minimum => Route::Binary(t::MINIMUM),
        F::Equal => Route::Binary(t::EQUAL),
        F::NotEqual => Route::Binary(t::NOT_EQUAL),
        F::Less => Route::Binary(t::LESS),
        F::LessEqual => Route::Binary(t::LESS_EQUAL),
        F::Greater => Route::Binary(t::GREATER),
        F::GreaterEqual => Route::Binary(t::GREATER_EQUAL),
        F::LogicalAnd => Route::Binary(t::LOGICAL_AND),
        F::LogicalOr => Route::Binary(t::LOGICAL_OR),
        F::Negative => unary(J::Negative, false),
        F::Abs => unary(J::Abs, false),
        F::Square => unary(J::Square, false),
        F::Sign => unary(J::Sign, false),
        F::Relu => unary(J::NnRelu, false),
        F::Relu6 => unary(J::NnRelu6, false),
        F::LogicalNot => unary(J::LogicalNot, false),
        F::Exp => unary(J::Exp, true),
        F::Log => unary(J::Log, true),
        F::Sqrt => unary(J::Sqrt, true),
        F::Rsqrt => unary(J::LaxRsqrt, true),
        F::Tanh => unary(J::Tanh, true),
        F::Sigmoid => unary(J::NnSigmoid, true),
        F::Sin => unary(J::Sin, true),
        F::Cos => unary(J::Cos, true),
        F::Tan => unary(J::Tan, true),
        F::Floor => unary(J::Floor, true),
        F::Ceil => unary(J::Ceil, true),
        F::Log1p => unary(J::Log1p, true),
        F::Expm1 => unary(J::Expm1, true),
        F::Reciprocal => unary(J::Reciprocal, true),
        F::IsNan => unary(J::Isnan, true),
        F::IsFinite => unary(J::Isfinite, true),
        F::IsInf => unary(J::Isinf, true),
        F::Erf => unary(J::LaxErf, true),
        F::Softplus => unary(J::NnSoftplus, true),
        F::Elu => unary(J::NnElu, true),
        F::Selu => unary(J::NnSelu, true),
        F::ReduceSum => reduce(J::Sum, "Sum"),
        F::ReduceMean => reduce(J::Mean, "Mean"),
        F::ReduceMax => reduce(J::Max, "Max"),
        F::ReduceMin => reduce(J::Min, "Min"),
        F::ReduceProd => reduce(J::Prod, "Prod"),
        F::ReduceAll => reduce(J::All, "All"),
        F::ReduceAny => reduce(J::Any, "Any"),
        F::ReduceLogsumexp => reduce(J::NnLogsumexp, "Max"),
        F::ReduceStd => reduce(J::Std, "Mean"),
        F::ReduceVariance => reduce(J::Var, "Mean"),
        F::Constant
        | F::ConvertToTensor
        | F::Zeros
        | F::Ones
        | F::ZerosLike
        | F::OnesLike
        | F::Fill
        | F::Eye
        | F::Range
        | F::Linspace
        | F::Identity
        | F::OneHot
        | F::StopGradient
        | F::Divide
        | F::Truediv
        | F::SquaredDifference
        | F::Round
        | F::Gelu
        | F::LeakyRelu
        | F::Argmax
        | F::Argmin
        | F::Cumsum
        | F::Cumprod
        | F::UnsortedSegmentSum
        | F::AddN
        | F::Softmax
        | F::LogSoftmax
        | F::L2Normalize
        | F::SparseSoftmaxCrossEntropyWithLogits
        | F::SigmoidCrossEntropyWithLogits
        | F::SoftmaxCrossEntropyWithLogits
        | F::Reshape
        | F::Transpose
        | F::ExpandDims
        | F::Squeeze
        | F::Concat
        | F::Stack
        | F::Unstack
        | F::Split
        | F::Tile
        | F::BroadcastTo
        | F::Shape
        | F::Rank
        | F::Size
        | F::Reverse
        | F::Cast
        | F::ClipByValue
        | F::ClipByNorm
        | F::ScalarMul
        | F::EmbeddingLookup
        | F::Where
        | F::Gather
        | F::GatherNd
        | F::ScatterNd
        | F::TensorScatterNdUpdate
        | F::TensorScatterNdAdd
        | F::TensorScatterNdSub
        | F::TensorScatterNdMin
        | F::TensorScatterNdMax
        | F::Sort
        | F::Argsort
        | F::Matmul
        | F::Einsum
        | F::Tensordot
        | F::Matvec
        | F::Inv
        | F::Det
        | F::Trace
        | F::Cholesky
        | F::Solve
        | F::Norm
        | F::RandomNormal
        | F::RandomUniform
        | F::TruncatedNormal
        | F::StatelessNormal
        | F::StatelessUniform
        | F::StatelessTruncatedNormal
        | F::CheckNumerics
        | F::AssertAllFinite
        | F::EnableCheckNumerics
        | F::DisableCheckNumerics
        | F::AssertEqual
        | F::AssertNoneEqual
        | F::AssertLess
        | F::AssertLessEqual
        | F::AssertGreater
        | F::AssertGreaterEqual
        | F::AssertPositive
        | F::AssertNegative
        | F::AssertNonNegative
        | F::AssertNonPositive
        | F::AssertRank
        | F::AssertRankAtLeast
        | F::AssertRankIn
        | F::AssertNear
        | F::AssertType
        | F::AssertInteger
        | F::AssertScalar
        | F::AssertShapes => Route::Special,
    }
}

/// The arguments of a call, read by position or by name.
pub struct Args<'a> {
    pub args: &'a [Value],
    pub kwargs: &'a Kwargs,
}

impl<'a> Args<'a> {
    pub fn get(&self, i: usize, name: &str) -> Option<&'a Value> {
        self.kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v).or_else(|| self.args.get(i)).filter(|v| !v.is_none())
    }
}

/// Calls a `tf` surface function. An op called by user code in a trace is a statement of the
/// reproducer under its TensorFlow name (the `jnp` calls serving it are not); so are
/// `tf.cond`, `tf.switch_case` and `tf.while_loop`, whose functions are written from what
/// they recorded.
pub fn call(interp: &mut Interp, f: TfFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let control_flow = matches!(f, TfFn::Cond | TfFn::SwitchCase | TfFn::WhileLoop);
    if (matches!(route(f), Route::Elsewhere) && !control_flow) || crate::jax::stmt::recording(interp).is_none() {
        return serve(interp, f, args, kwargs);
    }
    let statement_args = args.clone();
    let statement_kwargs = kwargs.clone();
    let refs: Vec<&Value> = statement_args.iter().collect();
    crate::jax::stmt::recorded(interp, crate::jax::stmt::Call::TfApi(f), &refs, &statement_kwargs, move |interp| {
        serve(interp, f, args, kwargs)
    })
}

fn serve(interp: &mut Interp, f: TfFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let p = Args { args: &args, kwargs: &kwargs };
    match route(f) {
        Route::Binary(op) => match (p.get(0, "x"), p.get(1, "y")) {
            (Some(x), Some(y)) => {
                let out = tensor::apply_binary(interp, &op, x, y)?;
                // The graph's name of the op as this function writes it (`tf.add`: `Add`).
                let base = match f {
                    TfFn::Add => "Add",
                    TfFn::Subtract => "Sub",
                    TfFn::Multiply => "Mul",
                    TfFn::Pow => "Pow",
                    _ => return Ok(out),
                };
                Ok(tensor::named_in_graph(interp, base, op.op, x, y, out))
            }
            _ => Err(missing(interp, f, "x")),
        },
        Route::Unary { jnp, floats } => {
            let Some(x) = first_tensor(interp, &p, &["x", "features"])? else {
                return Ok(unknown_tensor(interp, "an op on a value that is not known"));
            };
            if floats && !x.aval.dtype.is_inexact() {
                return Ok(unknown_tensor(interp, "a floating-point op on a tensor of another dtype"));
            }
            let out = delegate(interp, jnp, vec![Value::Array(x.clone())], Vec::new())?;
            if let Some(op) = super::numerics::unary_op(f) {
                if super::in_graph(interp) {
                    super::numerics::in_graph_op(interp, op, &x, &out);
                }
                super::numerics::after_op(interp, op, &[x], &out)?;
            }
            Ok(out)
        }
        Route::Reduce { jnp, node } => {
            let Some(x) = first_tensor(interp, &p, &["input_tensor"])? else {
                return reduce_partial(interp, &p, jnp);
            };
            let axis = p.get(1, "axis").cloned().unwrap_or(Value::None);
            check_axes(interp, &axis, x.aval.ndim(), node)?;
            // TensorFlow takes a list of axes where `jax.numpy` wants a tuple.
            let axis = match axis {
                Value::List(l) => Value::tuple(l.borrow().clone()),
                other => other,
            };
            let keepdims = match p.get(2, "keepdims") {
                Some(v) => Value::Bool(interp.truthy(v)?),
                None => Value::Bool(false),
            };
            if matches!(jnp, JaxFn::All | JaxFn::Any) && !x.aval.dtype.is_bool() {
                return Ok(unknown_tensor(interp, "a logical reduction of a tensor that is not bool"));
            }
            let start = super::graph_run::next_equation(interp);
            let out = delegate(interp, jnp, vec![Value::Array(x.clone()), axis], vec![(Rc::from("keepdims"), keepdims)])?;
            // Named `Sum`, `Mean`, ... in a graph (the others are under a scope of their own).
            if super::in_graph(interp)
                && matches!(f, TfFn::ReduceSum | TfFn::ReduceMean | TfFn::ReduceMax | TfFn::ReduceMin | TfFn::ReduceProd)
            {
                super::numerics::in_graph_made(interp, node, node, &[&Value::Array(x.clone())], &[x], &out);
                // One op in TensorFlow (`Mean`), a sum and a division here.
                super::graph_run::computed_from(interp, &out, start);
            }
            Ok(out)
        }
        Route::Special => super::ops_special::call(interp, f, &p),
        Route::Elsewhere => match f {
            TfFn::Function => super::function::make(interp, &args, &kwargs),
            TfFn::Variable => super::variable::make(interp, &p),
            TfFn::GradientTape => super::tape::make(interp, &p),
            TfFn::TensorSpec => tensor_spec(interp, &p),
            TfFn::TensorShape => tensor_shape(interp, &p),
            TfFn::Print => super::print::print(interp, p.args, p.kwargs),
            TfFn::Cond => super::control::cond(interp, &p),
            TfFn::SwitchCase => super::switch_case::switch_case(interp, &p),
            TfFn::WhileLoop => super::while_loop::while_loop(interp, &p),
            TfFn::TensorArray => super::tensor_array::make(interp, &p),
            TfFn::DoNotConvert => super::function::do_not_convert(interp, &args),
            // `p.get` reads a `None` argument as absent: `tf.is_tensor(None)` is False.
            TfFn::IsTensor => Ok(match (p.get(0, "x"), args.len() + kwargs.len()) {
                (Some(x), _) => crate::interp::model::tf::classes::is_tensor(x),
                (None, 1) => Value::Bool(false),
                _ => Value::opaque("tf.is_tensor()"),
            }),
            TfFn::RunFunctionsEagerly => Err(interp.stop_unknown("tf.config.run_functions_eagerly is not modelled")),
            _ => Ok(Value::opaque(format!("tf.{}", f.name()))),
        },
    }
}

/// A reduction of a tensor whose shape is known only in part: over every axis it is a
/// scalar of the input's dtype; anything else is not followed.
fn reduce_partial(interp: &mut Interp, p: &Args, jnp: JaxFn) -> PyResult<Value> {
    let input = p.kwargs.iter().find(|(k, _)| k.as_ref() == "input_tensor").map(|(_, v)| v).or_else(|| p.args.first());
    let partial = input.and_then(super::partial::of);
    let keepdims = p.get(2, "keepdims").is_some_and(|v| matches!(v, Value::Bool(true)));
    match partial {
        Some(x) if p.get(1, "axis").is_none() && !keepdims => {
            let logical = matches!(jnp, JaxFn::All | JaxFn::Any);
            let floats_only = matches!(jnp, JaxFn::NnLogsumexp | JaxFn::Std | JaxFn::Var | JaxFn::Mean);
            if logical != x.dtype.is_bool() || (floats_only && !x.dtype.is_inexact()) {
                return Ok(unknown_tensor(interp, "a reduction tracelens does not follow"));
            }
            super::partial::make(interp, Vec::new(), x.dtype, None)
        }
        _ => Ok(unknown_tensor(interp, "a reduction of a value that is not known")),
    }
}

/// The `jax.numpy` function `f` on operands TensorFlow's checks accepted; its result is a
/// tensor. An error `jnp` raises there is JAX's wording, not TensorFlow's: not reported.
pub fn delegate(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    match jnp::call(interp, f, args, kwargs) {
        Ok(v) => Ok(mark(v)),
        Err(Flow::Raise(exc)) => {
            interp.stops.push((
                exc.site,
                format!("tf op: jax.numpy.{} raised {} where TensorFlow's own check is not modelled", f.name(), exc.class.name),
            ));
            Ok(unknown_tensor(interp, "an op whose TensorFlow error is not modelled"))
        }
        Err(e) => Err(e),
    }
}

/// The first argument (by position, or by one of TensorFlow's names for it) as a tensor.
pub fn first_tensor(interp: &mut Interp, p: &Args, names: &[&str]) -> PyResult<Option<Rc<Array>>> {
    let v = names.iter().find_map(|n| p.kwargs.iter().find(|(k, _)| k.as_ref() == *n).map(|(_, v)| v)).or_else(|| p.args.first());
    match v {
        Some(v) => to_tensor(interp, v, None),
        None => Ok(None),
    }
}

/// Parameter `i` (or `name`) of `f` as a tensor: `None` when tracelens does not read it,
/// TypeError when it is missing. `tensor_arg!` returns the unknown tensor on `None`.
pub fn tensor_param(interp: &mut Interp, f: TfFn, p: &Args, i: usize, name: &str) -> PyResult<Option<Rc<Array>>> {
    match p.get(i, name) {
        Some(v) => to_tensor(interp, v, None),
        None => Err(missing(interp, f, name)),
    }
}

/// `tensor_arg!(interp, f, p, i, "name")`, in an op's `call`: parameter `i` of `f` as a
/// tensor ([`tensor_param`]), or the op's result is the unknown tensor (returned at once)
/// when tracelens does not read it.
macro_rules! tensor_arg {
    ($interp:ident, $f:expr, $p:expr, $i:expr, $name:expr) => {
        match $crate::tf::ops::tensor_param($interp, $f, $p, $i, $name)? {
            Some(t) => t,
            None => return Ok($crate::tf::tensor::unknown_tensor($interp, $crate::tf::ops::UNREAD_ARGUMENTS)),
        }
    };
}
pub(super) use tensor_arg;

/// Why an op's result is the unknown tensor when tracelens does not read its arguments.
pub const UNREAD_ARGUMENTS: &str = "a tf op with arguments tracelens does not read";

pub fn missing(interp: &Interp, f: TfFn, name: &str) -> Flow {
    interp.type_error(format!("{}() missing 1 required positional argument: '{name}'", f.name()))
}

/// An `axis` argument of a reduction, checked against the rank as TensorFlow does.
pub fn check_axes(interp: &mut Interp, axis: &Value, ndim: usize, node: &str) -> PyResult<()> {
    let axes = match axis {
        Value::Int(i) => vec![*i],
        Value::List(_) | Value::Tuple(_) => interp.iterate(axis)?.iter().filter_map(crate::interp::ops::as_int).collect(),
        _ => return Ok(()),
    };
    for a in axes {
        if a >= ndim as i64 || a < -(ndim as i64) {
            return Err(errors::reduction_axis(interp, a, ndim, node));
        }
    }
    Ok(())
}

/// `tf.TensorSpec(shape, dtype=tf.float32, name=None)`.
fn tensor_spec(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let shape = match p.get(0, "shape") {
        None => None,
        Some(v) => match shape_dims(interp, v)? {
            Some(dims) => Some(dims),
            None => return Ok(Value::opaque("a TensorSpec of a shape tracelens does not read")),
        },
    };
    let dtype = match p.get(1, "dtype") {
        Some(Value::DType(d) | Value::TfDType(d)) => *d,
        Some(_) => return Ok(Value::opaque("a TensorSpec of a dtype tracelens does not model")),
        None => DType::F32,
    };
    let name = match p.get(2, "name") {
        Some(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    };
    Ok(TfValue::Spec(Rc::new(super::TensorSpec { shape, dtype, name })).value())
}

/// `tf.TensorShape(dims)`: a list or tuple of sizes and `None`s, or another `TensorShape`. A
/// shape of unknown rank (`tf.TensorShape(None)`) is not represented: it is opaque, and so is
/// whatever else tracelens cannot read as dimensions.
fn tensor_shape(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    match p.get(0, "dims") {
        Some(Value::None) | None => Ok(Value::opaque("a TensorShape of unknown rank")),
        Some(v) => Ok(match shape_dims(interp, v)? {
            Some(dims) => TfValue::Shape(Rc::new(dims)).value(),
            None => Value::opaque("a TensorShape of dimensions tracelens does not read"),
        }),
    }
}

/// A shape argument with `None` for dimensions not known (`[None, 3]`, a `TensorShape`);
/// `None` when it cannot be read.
pub fn shape_dims(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<Option<usize>>>> {
    if let Value::Builtin(b) = v {
        if let crate::interp::builtins::Builtin::Tf(TfValue::Shape(dims)) = &**b {
            return Ok(Some(dims.to_vec()));
        }
    }
    if let Value::Array(a) = v {
        if let Some((_, dims)) = interp.tf.shape_values.get(&(Rc::as_ptr(a) as usize)) {
            return Ok(Some(dims.iter().map(|&d| Some(d)).collect()));
        }
        if a.is_tracer() || a.aval.ndim() != 1 || !a.aval.dtype.is_integer() {
            return Ok(None);
        }
        let Some(data) = crate::jax::eval::force_ints(a, 64) else { return Ok(None) };
        return Ok(data.iter().map(|&d| usize::try_from(d).ok().map(Some)).collect());
    }
    if !matches!(v, Value::List(_) | Value::Tuple(_)) {
        return Ok(None);
    }
    let mut dims = Vec::new();
    for d in interp.iterate(v)? {
        match d {
            Value::None => dims.push(None),
            Value::Int(i) if i >= 0 => dims.push(Some(i as usize)),
            _ => return Ok(None),
        }
    }
    Ok(Some(dims))
}
