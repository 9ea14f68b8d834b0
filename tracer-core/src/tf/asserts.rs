//! `tf.debugging.assert_*`, as one table: what each one checks, and where TensorFlow 2.21
//! raises. Checks of the static shape, rank and dtype (`assert_rank`, `assert_type`,
//! `assert_scalar`, ..., and the shape and dtype of a comparison's operands) raise while the
//! graph is built, as eagerly: tracelens raises them wherever the shape or dtype is known,
//! a `None` dimension included (a rank is known without its sizes). Checks of values
//! (`assert_less`, `assert_positive`, `assert_near`, ...) raise eagerly when the values are
//! known; inside a `tf.function` they fail the call whose values break them, when the graph
//! runs (`graph_run.rs`), and a value tracelens does not know is never reported on. Messages are TensorFlow's, but for the graph tensor's
//! name (`a:0`) TensorFlow puts in some of them, and a comparison's value dump, of which the
//! first line (`Condition x < y did not hold.`) is given.

use std::rc::Rc;

use super::graph_run::{Operand, RunCheck};
use super::ops::Args;
use super::shape_text::shape_str;
use super::tensor::{self, Binary};
use super::TfFn;
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::dtypes::DType;
use crate::jax::surface::JaxFn;

#[derive(Clone, Copy)]
enum Check {
    /// `x <op> y` element-wise, by TensorFlow's comparison op.
    Compare(&'static str, Binary),
    /// `x <op> 0` element-wise.
    Sign(&'static str, Binary),
    Rank,
    RankAtLeast,
    RankIn,
    Type,
    Integer,
    Scalar,
    /// `|x - y| <= atol + rtol * |y|` element-wise (`assert_near`).
    Near,
}

const fn cmp(op: &'static str, node: &'static str, jnp: JaxFn) -> Binary {
    Binary { op, node, inputs: ("x", "y"), jnp }
}

/// The modelled asserts; one missing here is opaque (its result unknown, never a finding).
fn check(f: TfFn) -> Option<Check> {
    use Check as C;
    Some(match f {
        TfFn::AssertEqual => C::Compare("==", cmp("Equal", "assert_equal_1/Equal", JaxFn::Equal)),
        TfFn::AssertNoneEqual => C::Compare("!=", cmp("NotEqual", "assert_none_equal/NotEqual", JaxFn::NotEqual)),
        TfFn::AssertLess => C::Compare("<", cmp("Less", "assert_less/Less", JaxFn::Less)),
        TfFn::AssertLessEqual => C::Compare("<=", cmp("LessEqual", "assert_less_equal/LessEqual", JaxFn::LessEqual)),
        TfFn::AssertGreater => C::Compare(">", cmp("Greater", "assert_greater/Greater", JaxFn::Greater)),
        TfFn::AssertGreaterEqual => C::Compare(">=", cmp("GreaterEqual", "assert_greater_equal/GreaterEqual", JaxFn::GreaterEqual)),
        TfFn::AssertPositive => C::Sign(">", cmp("Less", "assert_positive/assert_less/Less", JaxFn::Greater)),
        TfFn::AssertNegative => C::Sign("<", cmp("Less", "assert_negative/assert_less/Less", JaxFn::Less)),
        TfFn::AssertNonNegative => C::Sign(">=", cmp("LessEqual", "assert_non_negative/assert_less_equal/LessEqual", JaxFn::GreaterEqual)),
        TfFn::AssertNonPositive => C::Sign("<=", cmp("LessEqual", "assert_non_positive/assert_less_equal/LessEqual", JaxFn::LessEqual)),
        TfFn::AssertRank => C::Rank,
        TfFn::AssertRankAtLeast => C::RankAtLeast,
        TfFn::AssertRankIn => C::RankIn,
        TfFn::AssertType => C::Type,
        TfFn::AssertInteger => C::Integer,
        TfFn::AssertScalar => C::Scalar,
        TfFn::AssertNear => C::Near,
        _ => return None,
    })
}

pub fn call(interp: &mut Interp, f: TfFn, p: &Args) -> PyResult<Value> {
    let Some(check) = check(f) else { return Ok(Value::opaque(format!("tf.debugging.{}", f.name()))) };
    let name = if matches!(check, Check::Type | Check::Scalar) { "tensor" } else { "x" };
    let Some(x) = p.get(0, name) else { return Ok(Value::None) };
    // The assert's name scope in the graph being traced (`assert_less_1`), taken whether or
    // not the check is claimed, as TensorFlow takes it.
    let scope = graph_scope(interp, check);
    // Its `Assert` op's data are the tensors and strings it prints: all `int32` or strings,
    // TensorFlow makes a plain `Assert`, else one guarded by a `cond` (`AssertGuard`).
    let int32 = [Some(x), p.get(1, "y")].into_iter().flatten().any(|v| matches!(v, Value::Array(a) if a.aval.dtype == DType::I32));
    let node = scope.map(|s| format!("{s}/Assert/{}", if int32 { "Assert" } else { "AssertGuard/Assert" }));
    // A message given as a string is put first, as TensorFlow does; any other is not followed.
    let message = match p.kwargs.iter().find(|(k, _)| k.as_ref() == "message").map(|(_, v)| v) {
        None | Some(Value::None) => None,
        Some(Value::Str(s)) => Some(s.to_string()),
        Some(_) => return Ok(Value::None),
    };
    match check {
        Check::Near => {
            let Some(near) = Near::of(p) else { return Ok(Value::None) };
            if super::in_graph(interp) {
                near.record(interp, message.as_deref(), node.as_deref());
            } else if let Some(msg) = near.eager_failure(message.as_deref()) {
                return Err(interp.raise("InvalidArgumentError", Code::PythonException, msg));
            }
        }
        Check::Compare(symbol, op) => {
            let Some(y) = p.get(1, "y") else { return Ok(Value::None) };
            let held = tensor::apply_binary(interp, &op, x, y)?;
            if super::in_graph(interp) && !fails(&held) {
                let prefix = message.as_ref().map(|m| format!("[{m}] ")).unwrap_or_default();
                let text = format!("assertion failed: {prefix}[Condition x {symbol} y did not hold element-wise:]");
                in_graph(interp, &held, node.as_deref(), text);
            }
            if !super::in_graph(interp) && fails(&held) {
                let prefix = message.map(|m| format!("{m}\n")).unwrap_or_default();
                let msg = format!("{prefix}Condition x {symbol} y did not hold.");
                return Err(interp.raise("InvalidArgumentError", Code::PythonException, msg));
            }
        }
        Check::Sign(symbol, op) => {
            let Some((_, dtype)) = super::partial::dims_of(x).or_else(|| match x {
                Value::Array(a) => Some((Vec::new(), a.aval.dtype)),
                _ => None,
            }) else {
                return Ok(Value::None);
            };
            if dtype.is_unsigned() || dtype.is_bool() || dtype.is_complex() {
                return Ok(Value::None);
            }
            let held = tensor::apply_binary(interp, &op, x, &Value::Int(0))?;
            if super::in_graph(interp) && !fails(&held) {
                let prefix = message.as_ref().map(|m| format!("{m}.  ")).unwrap_or_default();
                let text = format!("assertion failed: [{prefix}] [Condition x {symbol} 0 did not hold element-wise:]");
                in_graph(interp, &held, node.as_deref(), text);
            }
            if let (false, true, Value::Array(t)) = (super::in_graph(interp), fails(&held), x) {
                let prefix = message.map(|m| format!("{m}.  ")).unwrap_or_default();
                let newline = if symbol == "<=" { "" } else { "\n" };
                let shape = crate::jax::aval::shape_tuple(&t.aval.shape);
                let msg = format!(
                    "{prefix}\nCondition x {symbol} 0 did not hold element-wise:{newline}x (shape={shape} dtype={}) = ",
                    t.aval.dtype.name()
                );
                return Err(interp.raise("InvalidArgumentError", Code::PythonException, msg));
            }
        }
        Check::Rank | Check::RankAtLeast | Check::RankIn => {
            let Some((dims, _)) = static_shape(x) else { return Ok(Value::None) };
            let Some(wanted) = ranks(interp, p, check)? else { return Ok(Value::None) };
            let rank = dims.len() as i64;
            let (holds, text) = match check {
                Check::Rank => (rank == wanted[0], format!("rank {}", wanted[0])),
                Check::RankAtLeast => (rank >= wanted[0], format!("rank at least {}", wanted[0])),
                _ => (wanted.contains(&rank), format!("rank in {}", python_tuple(&wanted))),
            };
            if !holds {
                let prefix = message.map(|m| format!("{m}.  ")).unwrap_or_default();
                let msg = format!("{prefix}Tensor  must have {text}.  Received rank {rank}, shape {}", shape_str(&dims));
                return Err(interp.raise("ValueError", Code::ShapeMismatch, msg));
            }
        }
        Check::Type | Check::Integer | Check::Scalar => {
            if message.is_some() {
                return Ok(Value::None);
            }
            let Some((dims, dtype)) = static_shape(x) else { return Ok(Value::None) };
            match check {
                Check::Type => {
                    let Some(Value::TfDType(want) | Value::DType(want)) = p.get(1, "tf_type") else { return Ok(Value::None) };
                    if *want != dtype {
                        let msg = format!("tensor must be of type tf.{}; got tf.{}", want.name(), dtype.name());
                        return Err(interp.raise("TypeError", Code::DtypeMismatch, msg));
                    }
                }
                Check::Integer => {
                    if !dtype.is_integer() {
                        let msg = format!("Expected \"x\" to be integer type.  Found: tensor of dtype <dtype: '{}'>", dtype.name());
                        return Err(interp.raise("TypeError", Code::DtypeMismatch, msg));
                    }
                }
                _ => {
                    if !dims.is_empty() {
                        let msg = format!("Expected scalar shape, saw shape: {}.", shape_str(&dims));
                        return Err(interp.raise("ValueError", Code::ShapeMismatch, msg));
                    }
                }
            }
        }
    }
    Ok(Value::None)
}

/// The static shape and dtype of a tensor argument (a `None` dimension where a trace does
/// not know it); `None` for a Python value or what is not known.
fn static_shape(x: &Value) -> Option<(Vec<Option<usize>>, DType)> {
    match x {
        Value::Array(a) => Some((a.aval.shape.iter().map(|&d| Some(d)).collect(), a.aval.dtype)),
        _ => super::partial::dims_of(x),
    }
}

/// The rank(s) an assert asks for, when given as Python ints.
fn ranks(interp: &mut Interp, p: &Args, check: Check) -> PyResult<Option<Vec<i64>>> {
    let name = if matches!(check, Check::RankIn) { "ranks" } else { "rank" };
    let Some(v) = p.get(1, name) else { return Ok(None) };
    match (check, v) {
        (Check::RankIn, Value::List(_) | Value::Tuple(_)) => {
            let items = interp.iterate(v)?;
            Ok(items.iter().map(|i| if let Value::Int(r) = i { Some(*r) } else { None }).collect())
        }
        (Check::RankIn, _) => Ok(None),
        (_, Value::Int(r)) => Ok(Some(vec![*r])),
        _ => Ok(None),
    }
}

/// `(0, 2)`, `(2,)`: a Python tuple of ints.
fn python_tuple(items: &[i64]) -> String {
    match items {
        [one] => format!("({one},)"),
        _ => format!("({})", items.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// A value check inside a `tf.function`: its `Assert` op is stateful, so it runs at every
/// call, and fails those whose values make the comparison `held` false somewhere
/// (`graph_run.rs`). One whose values the trace already knows is left alone (TensorFlow
/// checks it while building the graph, in other words).
fn in_graph(interp: &mut Interp, held: &Value, node: Option<&str>, message: String) {
    let (Value::Array(a), Some(node)) = (held, node) else { return };
    let check = RunCheck::Holds { message };
    super::graph_run::record_check(interp, a, None, node, check);
}

/// The name scope a value assert takes in the graph being traced (`graph_names.rs`): its
/// comparison's scope in the table (`assert_positive/assert_less`) made unique; `None`
/// eagerly and for the other asserts.
fn graph_scope(interp: &mut Interp, check: Check) -> Option<String> {
    if !super::in_graph(interp) {
        return None;
    }
    let base = match check {
        Check::Compare(_, op) | Check::Sign(_, op) => op.node.rsplit_once('/').map_or(op.node, |(scope, _)| scope),
        Check::Near => "assert_near",
        _ => return None,
    };
    // The table names `assert_equal`'s comparison by the scope the first one gets.
    let base = if base == "assert_equal_1" { "assert_equal" } else { base };
    super::graph_names::scoped(interp, base)
}

/// A `tf.debugging.assert_near(x, y, rtol, atol)` tracelens can decide: two `float32` or
/// `float64` tensors of one dtype and shape (or one of them a single element), the
/// tolerances Python numbers or left to their default (`10 * eps` of the dtype).
struct Near {
    x: Rc<Array>,
    y: Rc<Array>,
    dtype: DType,
    /// The tolerances as TensorFlow holds them, in the dtype of `x`.
    rtol: f64,
    atol: f64,
}

impl Near {
    fn of(p: &Args) -> Option<Near> {
        let (Some(Value::Array(x)), Some(Value::Array(y))) = (p.get(0, "x"), p.get(1, "y")) else { return None };
        // `message` given by position (index 4) is not followed.
        if p.args.len() > 4 || !matches!(x.aval.dtype, DType::F32 | DType::F64) || y.aval.dtype != x.aval.dtype {
            return None;
        }
        if x.aval.shape != y.aval.shape && x.aval.size() != 1 && y.aval.size() != 1 {
            return None;
        }
        let dtype = x.aval.dtype;
        let in_dtype = |v: f64| if dtype == DType::F32 { v as f32 as f64 } else { v };
        let default = in_dtype(10.0 * if dtype == DType::F32 { f32::EPSILON as f64 } else { f64::EPSILON });
        let tolerance = |i: usize, name: &str| match p.get(i, name) {
            None => Some(default),
            Some(Value::Float(f)) => Some(in_dtype(*f)),
            Some(Value::Int(i)) => Some(in_dtype(*i as f64)),
            Some(_) => None,
        };
        let (rtol, atol) = (tolerance(2, "rtol")?, tolerance(3, "atol")?);
        (rtol >= 0.0 && atol >= 0.0).then(|| Near { x: x.clone(), y: y.clone(), dtype, rtol, atol })
    }

    /// Eagerly, TensorFlow's message when the known values fail the check by a clear
    /// margin: the `message` line, then the tolerances as its summarized data prints them.
    fn eager_failure(&self, message: Option<&str>) -> Option<String> {
        if !clearly_not_near(&self.x, &self.y, self.rtol, self.atol)? {
            return None;
        }
        let name = self.dtype.name();
        let text = |v: f64| format!("tf.Tensor({}, shape=(), dtype={name})", crate::jax::print::scalar_text(v, self.dtype));
        let prefix = message.map(|m| format!("{m}.  \n")).unwrap_or_default();
        Some(format!("{prefix}x and y not equal to tolerance rtol = {}, atol = {}", text(self.rtol), text(self.atol)))
    }

    /// In a `tf.function`, the check is an `Assert` op (stateful: it runs at every call),
    /// made on each call's values (`graph_run.rs`); `y` a tensor of the same graph or a known
    /// one. With both known TensorFlow still fails only at the call: not claimed.
    fn record(&self, interp: &mut Interp, message: Option<&str>, node: Option<&str>) {
        let (Some(x), Some(node)) = (self.x.tracer(), node) else { return };
        let scope = node.split_once("/Assert/").map_or(node, |(scope, _)| scope);
        let y = match self.y.tracer() {
            Some(t) if t.trace == x.trace => Operand::Var(t.var),
            Some(_) => return,
            None => Operand::Known(self.y.clone()),
        };
        let prefix = message.map(|m| format!("{m}.  ")).unwrap_or_default();
        let name = self.dtype.name();
        let tensor = |t: &str| format!("Tensor(\\\"{scope}/{t}:0\\\", shape=(), dtype={name})");
        let message =
            format!("assertion failed: [{prefix}] [x and y not equal to tolerance rtol = {}, atol = {}]", tensor("rtol"), tensor("atol"));
        let check = RunCheck::Near { y, rtol: self.rtol, atol: self.atol, message };
        super::graph_run::record_check(interp, &self.x, None, node, check);
    }
}

/// Whether known `x` and `y` (one shape, or one of them a single element) certainly fail
/// `|x - y| <= atol + rtol * |y|` somewhere: by more than twice the bound, as tracelens
/// computes in `float64` what TensorFlow computes in the tensors' dtype. `None`: not known.
pub(super) fn clearly_not_near(x: &Rc<Array>, y: &Rc<Array>, rtol: f64, atol: f64) -> Option<bool> {
    let values = |a: &Rc<Array>| crate::jax::eval::force(&a.known()?, 1 << 16).map(|v| v.iter().copied().collect::<Vec<f64>>());
    let (xs, ys) = (values(x)?, values(y)?);
    if xs.len() != ys.len() && xs.len() != 1 && ys.len() != 1 {
        return None;
    }
    let at = |v: &[f64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
    Some((0..xs.len().max(ys.len())).any(|i| {
        let (a, b) = (at(&xs, i), at(&ys, i));
        a.is_finite() && b.is_finite() && (a - b).abs() > 2.0 * (atol + rtol * b.abs()) + 1e-30
    }))
}

/// Whether a comparison's result is known and false somewhere.
fn fails(held: &Value) -> bool {
    let Value::Array(a) = held else { return false };
    let Some(known) = a.known() else { return false };
    crate::jax::eval::force(&known, 1 << 16).is_some_and(|v| v.iter().any(|x| *x == 0.0))
}
