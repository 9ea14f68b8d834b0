//! Tensors: what `tf.convert_to_tensor` makes of a Python value, TensorFlow's rule for the
//! two inputs of an elementwise op (one dtype, never promoted; a Python number takes the
//! tensor's dtype), and the Python protocol of a tensor — operators, truth, iteration,
//! attributes and `print` — eagerly and while a `tf.function` builds its graph.

use std::rc::Rc;

use super::errors;
pub use super::shape_text::{shape_repr, shape_str};
use super::TfValue;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::dtypes::DType;
use crate::jax::numpy as jnp;
use crate::jax::surface::JaxFn;
use crate::syntax::ast::{BinOp, CmpOp, Expr, UnaryOp};

/// `tf.float32`, `tf.int32`, ...: TensorFlow's dtypes that tracelens models, by their numpy
/// names and TensorFlow's aliases (`tf.float`, `tf.double`, `tf.half`).
pub fn dtype_named(name: &str) -> Option<DType> {
    match name {
        "float" => Some(DType::F32),
        "double" => Some(DType::F64),
        "half" => Some(DType::F16),
        _ => DType::from_numpy_name(name),
    }
}

/// Marks an array as a TensorFlow tensor (a copy when it is shared, so that a JAX array
/// handed to `tf.constant` stays a JAX array).
pub fn mark_array(a: Rc<Array>) -> Rc<Array> {
    if a.tf.get() {
        return a;
    }
    // A strong symbolic tensor is marked as it is: a concrete copy of it would be a constant
    // of the graph whose value is never computed (`tf.constant([4.0, 3.0])` in a
    // `tf.function` returned `<not computed>`), cut from the ops that make it.
    if (Rc::strong_count(&a) == 1 || a.is_tracer()) && !a.aval.weak {
        a.tf.set(true);
        return a;
    }
    let aval = a.aval.clone().weak(false);
    let copy = if a.is_tracer() || a.aval.weak {
        Array::pending(aval, crate::jax::ir::Prim::Unary(crate::jax::ir::UnaryPrim::Copy), vec![a])
    } else {
        a.as_numpy()
    };
    if copy.is_tracer() {
        return copy;
    }
    copy.numpy.set(false);
    copy.tf.set(true);
    copy
}

/// Marks every array of a result (a tuple of them too) as a tensor.
pub fn mark(v: Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(mark_array(a)),
        Value::Tuple(items) => Value::tuple(items.iter().cloned().map(mark).collect()),
        Value::List(items) => Value::list(items.borrow().iter().cloned().map(mark).collect()),
        other => other,
    }
}

/// `tf.convert_to_tensor(v, dtype_hint=hint)`: `None` when the value is not known. Python
/// ints become int32 (or the hint's dtype, when it is numeric), floats float32 (a float is
/// never made an integer), bools bool, nested lists their common type; NumPy arrays keep
/// their dtype; a variable gives its value.
pub fn to_tensor(interp: &mut Interp, v: &Value, hint: Option<DType>) -> PyResult<Option<Rc<Array>>> {
    let target = match v {
        Value::Array(a) if a.tf.get() => {
            super::autograph::check_accessible(interp, a)?;
            return Ok(Some(a.clone()));
        }
        Value::Builtin(b) => match &**b {
            crate::interp::builtins::Builtin::Tf(TfValue::Variable(var)) => return Ok(Some(super::variable::read(interp, var))),
            // TensorFlow converts an IndexedSlices to its dense tensor.
            crate::interp::builtins::Builtin::Tf(TfValue::IndexedSlices(s)) => return Ok(Some(s.dense.clone())),
            _ => return Ok(None),
        },
        Value::Int(_) | Value::UnknownNumber(false) => match hint {
            Some(d) if !d.is_bool() => d,
            _ => DType::I32,
        },
        Value::Float(_) | Value::UnknownNumber(true) => match hint {
            Some(d) if d.is_floating() => d,
            _ => DType::F32,
        },
        Value::Bool(_) => DType::Bool,
        Value::List(_) | Value::Tuple(_) => {
            let items = interp.iterate(v)?;
            // String tensors are not modelled: unknown, never JAX's "not a valid JAX type".
            if items.iter().any(|i| i.is_opaque() || holds_text(i)) {
                return Ok(None);
            }
            if items.iter().any(|i| matches!(i, Value::Array(a) if a.is_tracer())) {
                return autopack(interp, &items, hint);
            }
            let jnp::Operand::Array(a) = exact_operand(interp, v, hint)? else { return Ok(None) };
            let d = match (a.aval.dtype, hint) {
                (d, Some(h)) if d.is_integer() && !h.is_bool() => h,
                (d, Some(h)) if d.is_floating() && h.is_floating() => h,
                (d, _) if d.is_floating() && a.aval.weak => DType::F32,
                (d, _) if d.is_integer() && a.aval.weak => DType::I32,
                (d, _) => d,
            };
            return Ok(Some(mark_array(jnp::convert(interp, &a, d, false)?)));
        }
        Value::Array(a) => {
            // A JAX or NumPy array keeps its dtype (a weak one becomes strong).
            let d = a.aval.dtype;
            return Ok(Some(mark_array(jnp::convert(interp, a, d, false)?)));
        }
        _ => return Ok(None),
    };
    let jnp::Operand::Array(a) = exact_operand(interp, v, Some(target))? else { return Ok(None) };
    Ok(Some(mark_array(jnp::convert(interp, &a, target, false)?)))
}

/// Python numbers as an array before conversion to `target`: TensorFlow always has 64-bit
/// types, so for a 64-bit target they are read as JAX reads them with x64 on (`0.1` as a
/// double), not rounded to 32 bits first.
fn exact_operand(interp: &mut Interp, v: &Value, target: Option<DType>) -> PyResult<jnp::Operand> {
    let wide = target.is_some_and(|d| matches!(d, DType::F64 | DType::I64 | DType::U64 | DType::C128));
    if !wide || interp.jax.config.enable_x64 {
        return jnp::operand(interp, v);
    }
    interp.jax.config.enable_x64 = true;
    let a = jnp::operand(interp, v);
    interp.jax.config.enable_x64 = false;
    a
}

/// Whether a (nested) Python value holds a string: TensorFlow's `tf.string` data.
fn holds_text(v: &Value) -> bool {
    match v {
        Value::Str(_) => true,
        Value::List(items) => items.borrow().iter().any(holds_text),
        Value::Tuple(items) => items.iter().any(holds_text),
        _ => false,
    }
}

/// A list holding symbolic tensors, converted as TensorFlow packs it (`tf.stack` of its
/// items, Python numbers taking the tensors' dtype); `None` when the items do not have one
/// dtype and shape (TensorFlow's error there is not modelled).
fn autopack(interp: &mut Interp, items: &[Value], hint: Option<DType>) -> PyResult<Option<Rc<Array>>> {
    let dtype = items.iter().find_map(|i| if let Value::Array(a) = i { Some(a.aval.dtype) } else { None }).or(hint);
    let mut parts = Vec::with_capacity(items.len());
    for item in items {
        let Some(t) = to_tensor(interp, item, dtype)? else { return Ok(None) };
        if Some(t.aval.dtype) != dtype
            || parts.first().is_some_and(|p: &Value| matches!(p, Value::Array(a) if a.aval.shape != t.aval.shape))
        {
            return Ok(None);
        }
        parts.push(Value::Array(t));
    }
    match super::ops::delegate(interp, JaxFn::Stack, vec![Value::list(parts)], Vec::new())? {
        Value::Array(a) => Ok(Some(a)),
        _ => Ok(None),
    }
}

/// An elementwise op of two tensors: TensorFlow's name for it, the node name its graph
/// errors print, the names of its two inputs and the `jax.numpy` function with the same
/// semantics on two operands of one dtype.
#[derive(Clone, Copy, Debug)]
pub struct Binary {
    pub op: &'static str,
    pub node: &'static str,
    pub inputs: (&'static str, &'static str),
    pub jnp: JaxFn,
}

const fn binary(op: &'static str, node: &'static str, jnp: JaxFn) -> Binary {
    Binary { op, node, inputs: ("x", "y"), jnp }
}

pub const ADD: Binary = binary("AddV2", "add", JaxFn::Add);
pub const SUB: Binary = binary("Sub", "sub", JaxFn::Subtract);
pub const MUL: Binary = binary("Mul", "mul", JaxFn::Multiply);
pub const REAL_DIV: Binary = binary("RealDiv", "truediv", JaxFn::Divide);
pub const FLOOR_DIV: Binary = binary("FloorDiv", "floordiv", JaxFn::FloorDivide);
pub const FLOOR_MOD: Binary = binary("FloorMod", "mod", JaxFn::Remainder);
pub const POW: Binary = binary("Pow", "pow", JaxFn::Power);
pub const MAXIMUM: Binary = binary("Maximum", "Maximum", JaxFn::Maximum);
pub const MINIMUM: Binary = binary("Minimum", "Minimum", JaxFn::Minimum);
pub const EQUAL: Binary = binary("Equal", "Equal", JaxFn::Equal);
pub const NOT_EQUAL: Binary = binary("NotEqual", "NotEqual", JaxFn::NotEqual);
pub const LESS: Binary = binary("Less", "Less", JaxFn::Less);
pub const LESS_EQUAL: Binary = binary("LessEqual", "LessEqual", JaxFn::LessEqual);
pub const GREATER: Binary = binary("Greater", "Greater", JaxFn::Greater);
pub const GREATER_EQUAL: Binary = binary("GreaterEqual", "GreaterEqual", JaxFn::GreaterEqual);
pub const LOGICAL_AND: Binary = binary("LogicalAnd", "LogicalAnd", JaxFn::LogicalAnd);
pub const LOGICAL_OR: Binary = binary("LogicalOr", "LogicalOr", JaxFn::LogicalOr);

/// The two operands of an elementwise op as tensors of one dtype: a Python number takes the
/// other operand's dtype; two tensors of different dtypes are TensorFlow's error. `None`
/// when an operand is not known.
pub fn operands(interp: &mut Interp, op: &Binary, x: &Value, y: &Value) -> PyResult<Option<(Rc<Array>, Rc<Array>)>> {
    let python = |v: &Value| matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::UnknownNumber(_) | Value::List(_));
    let (a, b) = if python(x) && !python(y) {
        let Some(b) = to_tensor(interp, y, None)? else { return Ok(None) };
        let Some(a) = to_tensor(interp, x, Some(b.aval.dtype))? else { return Ok(None) };
        (a, b)
    } else {
        let Some(a) = to_tensor(interp, x, None)? else { return Ok(None) };
        let Some(b) = to_tensor(interp, y, Some(a.aval.dtype))? else { return Ok(None) };
        (a, b)
    };
    if a.aval.dtype != b.aval.dtype {
        if interp.tf.numpy_behavior {
            return Ok(None);
        }
        return Err(errors::dtype_mismatch(interp, op.op, op.inputs, a.aval.dtype, b.aval.dtype));
    }
    if jnp::broadcast_shapes(&[&a.aval.shape, &b.aval.shape]).is_err() {
        return Err(errors::broadcast_mismatch(interp, op.op, op.node, &a.aval.shape, &b.aval.shape));
    }
    Ok(Some((a, b)))
}

/// `op(x, y)` with TensorFlow's rules, bound as the `jax.numpy` function binds it.
pub fn apply_binary(interp: &mut Interp, op: &Binary, x: &Value, y: &Value) -> PyResult<Value> {
    let Some((a, b)) = operands(interp, op, x, y)? else { return Ok(unknown_tensor(interp, "an op on a value that is not known")) };
    if op.op == "RealDiv" && a.aval.dtype.is_integer() {
        return int_truediv(interp, &a, &b);
    }
    let inputs = [a.clone(), b.clone()];
    let b = if op.op == "RealDiv" { exact_divisor(interp, &a, b, y)? } else { b };
    // An integer `//` or `%` by zero is the CPU kernel's error (JAX's gives a number):
    // eagerly at once, in a graph when (if) the graph runs the op (`graph_run.rs`).
    let by_zero = matches!(op.op, "FloorDiv" | "FloorMod") && {
        let size = jnp::broadcast_shapes(&[&a.aval.shape, &b.aval.shape]).map_or(0, |s| s.iter().product());
        super::graph_run::divides_by_zero(y, &b, size)
    };
    if by_zero && !super::in_graph(interp) {
        let listed = [x, y].iter().any(|v| matches!(v, Value::List(_) | Value::Tuple(_)));
        return Err(super::graph_run::eager(interp, op.op, "Integer division by zero", listed));
    }
    let r = super::ops::delegate(interp, op.jnp, vec![Value::Array(a.clone()), Value::Array(b.clone())], Vec::new())?;
    super::numerics::after_op(interp, op.op, &inputs, &r)?;
    if by_zero {
        super::graph_run::record(interp, &r, op.node, "Integer division by zero".to_string());
    } else if matches!(op.op, "FloorDiv" | "FloorMod") && b.aval.dtype.is_integer() {
        // A divisor the graph computes from the call's values: each call's decide.
        let size: usize = jnp::broadcast_shapes(&[&a.aval.shape, &b.aval.shape]).map_or(0, |s| s.iter().product());
        if size > 0 {
            super::graph_run::record_check(interp, &b, Some(&r), op.node, super::graph_run::RunCheck::DivisorNotZero);
        }
    }
    Ok(r)
}

/// TensorFlow divides element by element: eagerly always, and in a graph by a divisor the
/// graph computes. Only a constant divisor in a graph is a multiplication by its reciprocal
/// (Grappler's rewrite, which XLA's simplifier also makes for any scalar divisor, and which
/// the shared kernel models for a divisor broadcast to the output). So any other divisor is
/// broadcast to the output's shape first, and the kernel divides. (`raw` is the divisor as
/// written: a Python number or an eager tensor is a constant of the graph.)
fn exact_divisor(interp: &mut Interp, a: &Rc<Array>, b: Rc<Array>, raw: &Value) -> PyResult<Rc<Array>> {
    let Ok(out) = jnp::broadcast_shapes(&[&a.aval.shape, &b.aval.shape]) else { return Ok(b) };
    let constant = match raw {
        Value::Array(r) => !r.is_tracer(),
        _ => true,
    };
    let constant_in_graph = super::in_graph(interp) && constant;
    if out[..] == b.aval.shape[..] || constant_in_graph || !b.aval.dtype.is_inexact() {
        return Ok(b);
    }
    let shape = Value::tuple(out.iter().map(|&d| Value::Int(d as i64)).collect());
    match super::ops::delegate(interp, JaxFn::BroadcastTo, vec![Value::Array(b.clone()), shape], Vec::new())? {
        Value::Array(wide) => Ok(mark_array(wide)),
        _ => Ok(b),
    }
}

/// `x / y` of integer tensors: both are cast to float64 (float32 for 8- and 16-bit ones).
fn int_truediv(interp: &mut Interp, a: &Rc<Array>, b: &Rc<Array>) -> PyResult<Value> {
    let d = if matches!(a.aval.dtype, DType::I8 | DType::I16 | DType::U8 | DType::U16) { DType::F32 } else { DType::F64 };
    let x = jnp::convert(interp, a, d, false)?;
    let y = jnp::convert(interp, b, d, false)?;
    super::ops::delegate(interp, JaxFn::Divide, vec![Value::Array(x), Value::Array(y)], Vec::new())
}

/// The result of an op whose inputs are not known: inside a graph it is certainly a symbolic
/// tensor (Python control flow on it is TensorFlow's business), elsewhere just unknown.
pub fn unknown_tensor(interp: &Interp, why: &str) -> Value {
    if super::in_graph(interp) {
        Value::opaque_tracer(why)
    } else {
        Value::opaque(why)
    }
}

/// Python's binary operators with a tensor (or variable) on either side.
pub fn binary_operator(interp: &mut Interp, op: BinOp, l: &Value, r: &Value) -> PyResult<Value> {
    let spec = match op {
        BinOp::Add => ADD,
        BinOp::Sub => SUB,
        BinOp::Mul => MUL,
        BinOp::FloorDiv => FLOOR_DIV,
        BinOp::Mod => FLOOR_MOD,
        BinOp::Pow => POW,
        BinOp::BitAnd => LOGICAL_AND,
        BinOp::BitOr => LOGICAL_OR,
        BinOp::Div => {
            let out = truediv(interp, l, r)?;
            return Ok(named_in_graph(interp, "truediv", "RealDiv", l, r, out));
        }
        BinOp::MatMul => return super::ops::call(interp, super::TfFn::Matmul, vec![l.clone(), r.clone()], Vec::new()),
        _ => return Ok(unknown_tensor(interp, "an operator TensorFlow tracelens does not model")),
    };
    if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Pow) {
        let out = apply_binary(interp, &spec, l, r)?;
        return Ok(named_in_graph(interp, spec.node, spec.op, l, r, out));
    }
    // `[7, 8] // t`: the reflected operator converts the list to a tensor of `t`'s dtype
    // before the op, so the op's error reads as one of tensors.
    if let (Value::List(_) | Value::Tuple(_), Some(d)) = (l, tensor_dtype(r)) {
        if let Some(converted) = to_tensor(interp, l, Some(d))? {
            return apply_binary(interp, &spec, &Value::Array(converted), r);
        }
    }
    apply_binary(interp, &spec, l, r)
}

/// `x / y` (`tf.math.truediv`): integers are divided as floats; two float tensors must have
/// one dtype, which truediv checks itself before any op.
pub fn truediv(interp: &mut Interp, l: &Value, r: &Value) -> PyResult<Value> {
    if let (Some(a), Some(b)) = (tensor_dtype(l), tensor_dtype(r)) {
        if a != b && a.is_floating() && b.is_floating() {
            return Err(interp.raise(
                "TypeError",
                crate::diagnostics::Code::DtypeMismatch,
                format!("`x` and `y` must have the same dtype, got tf.{} != tf.{}.", a.name(), b.name()),
            ));
        }
    }
    apply_binary(interp, &REAL_DIV, l, r)
}

/// `out`, the op `op` (TensorFlow's type) just made of `l` and `r`, named `base` in the graph
/// being traced (`numerics::in_graph_made`); nothing outside a graph.
pub fn named_in_graph(interp: &mut Interp, base: &str, op: &str, l: &Value, r: &Value, out: Value) -> Value {
    if super::in_graph(interp) {
        let inputs: Vec<Rc<Array>> = [l, r].iter().filter_map(|v| if let Value::Array(a) = v { Some(a.clone()) } else { None }).collect();
        super::numerics::in_graph_made(interp, base, op, &[l, r], &inputs, &out);
    }
    out
}

fn tensor_dtype(v: &Value) -> Option<DType> {
    match v {
        Value::Array(a) if a.tf.get() => Some(a.aval.dtype),
        _ => None,
    }
}

/// Comparisons with a tensor on either side: elementwise, as `tf.math.less` and friends.
pub fn compare_operator(interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value> {
    let spec = match op {
        CmpOp::Lt => LESS,
        CmpOp::LtE => LESS_EQUAL,
        CmpOp::Gt => GREATER,
        CmpOp::GtE => GREATER_EQUAL,
        CmpOp::Eq | CmpOp::NotEq => return equality(interp, op == CmpOp::Eq, l, r),
        _ => return Ok(unknown_tensor(interp, "a tensor identity or membership test")),
    };
    apply_binary(interp, &spec, l, r)
}

/// `==`/`!=` with a tensor: elementwise (`tf.math.equal`) when both sides are tensors or
/// Python numbers of one dtype whose shapes broadcast. TensorFlow answers a plain `False`
/// (`True` for `!=`) when the shapes do not broadcast, and other operands compare by
/// identity: neither is modelled (unknown).
fn equality(interp: &mut Interp, eq: bool, l: &Value, r: &Value) -> PyResult<Value> {
    let comparable = |v: &Value| matches!(v, Value::Array(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_));
    if !comparable(l) || !comparable(r) {
        return Ok(unknown_tensor(interp, "a tensor compared with a value that is not a tensor"));
    }
    let dtype = |v: &Value| if let Value::Array(a) = v { Some(a.aval.dtype) } else { None };
    // A Python number must take the tensor's dtype: an int an integer or float tensor's, a
    // float a float tensor's, a bool a bool tensor's (other pairs are not modelled).
    let adapts = |n: &Value, t: &Value| match (n, dtype(t)) {
        (Value::Array(_), _) | (_, None) => true,
        (Value::Int(_), Some(d)) => d.is_integer() || d.is_floating(),
        (Value::Float(_), Some(d)) => d.is_floating(),
        (Value::Bool(_), Some(d)) => d.is_bool(),
        _ => false,
    };
    if !adapts(l, r) || !adapts(r, l) {
        return Ok(unknown_tensor(interp, "a tensor compared with a Python number of another kind"));
    }
    let (Some(a), Some(b)) = (dtype(l).or(dtype(r)), dtype(r).or(dtype(l))) else {
        return Ok(unknown_tensor(interp, "an equality of values that are not tensors"));
    };
    let shapes = |v: &Value| if let Value::Array(a) = v { a.aval.shape.to_vec() } else { Vec::new() };
    if a != b || jnp::broadcast_shapes(&[&shapes(l), &shapes(r)]).is_err() {
        return Ok(unknown_tensor(interp, "a tensor equality TensorFlow answers with a Python bool"));
    }
    apply_binary(interp, if eq { &EQUAL } else { &NOT_EQUAL }, l, r)
}

/// `-t`, `abs(t)`, `~t`.
pub fn unary_operator(interp: &mut Interp, op: UnaryOp, a: &Rc<Array>) -> PyResult<Value> {
    match op {
        UnaryOp::Neg => super::ops::delegate(interp, JaxFn::Negative, vec![Value::Array(a.clone())], Vec::new()),
        UnaryOp::Pos => Ok(Value::Array(a.clone())),
        UnaryOp::Invert if a.aval.dtype.is_bool() => {
            super::ops::delegate(interp, JaxFn::LogicalNot, vec![Value::Array(a.clone())], Vec::new())
        }
        _ => Ok(unknown_tensor(interp, "an operator TensorFlow tracelens does not model")),
    }
}

/// Whether AutoGraph converts the code now running: the innermost `tf.function` being
/// traced was not made with `autograph=False` (nor its Python function wrapped in
/// `tf.autograph.experimental.do_not_convert`).
pub fn autograph_active(interp: &Interp) -> bool {
    super::function::innermost(interp).is_some_and(|f| f.autograph)
}

/// `if t:`, `while t:`, `bool(t)`. A symbolic tensor in code AutoGraph converts is a
/// `tf.cond`/`tf.while_loop` whose branches are both traced: the interpreter goes on as it
/// does past an unknown test (both branches, one loop pass). Without AutoGraph it is
/// `OperatorNotAllowedInGraphError`.
pub fn truth(interp: &mut Interp, a: &Rc<Array>, what: &str, expr: Option<&Expr>) -> PyResult<bool> {
    if a.known().is_none() && a.is_tracer() {
        if interp.in_library() {
            return Err(interp.stop_unknown("a shim's test of a symbolic tensor"));
        }
        if autograph_active(interp) && what != "bool" {
            return Err(super::autograph::convert_test(interp, a, what));
        }
        if !autograph_active(interp) {
            // The reproducer's `if t:`, in a function traced with `autograph=False`.
            crate::jax::stmt::record_concretize(interp, "bool", a);
        }
        return Err(errors::bool_in_graph(interp));
    }
    jnp::array_bool(interp, a, what, expr)
}

/// `int(t)`, `float(t)`, `bool(t)` of a tensor or variable (`None` for other values). A
/// symbolic tensor gives a symbolic result (AutoGraph converts the call to a cast) or, for
/// `bool` without AutoGraph, TensorFlow's error; a concrete one its value.
pub fn python_conversion(interp: &mut Interp, name: &str, v: &Value) -> PyResult<Option<Value>> {
    let symbolic = super::partial::of(v).is_some() || (matches!(v, Value::Opaque(o) if o.tracer) && super::in_graph(interp));
    if symbolic && !interp.in_library() {
        // A symbolic tensor of unknown shape: `bool` is a test, `int`/`float` a cast.
        if name == "bool" {
            return super::partial::truth(interp, "bool").map(|b| Some(Value::Bool(b)));
        }
        return Ok(Some(Value::opaque_tracer(format!("{name}() of a symbolic tensor, a cast in the graph"))));
    }
    let t = match v {
        Value::Array(a) if a.tf.get() => a.clone(),
        Value::Builtin(b) => match &**b {
            crate::interp::builtins::Builtin::Tf(TfValue::Variable(var)) => super::variable::read(interp, var),
            _ => return Ok(None),
        },
        _ => return Ok(None),
    };
    if t.is_tracer() {
        if name == "bool" {
            return truth(interp, &t, "bool", None).map(|b| Some(Value::Bool(b)));
        }
        return Ok(Some(Value::opaque_tracer(format!("{name}() of a symbolic tensor, a cast in the graph"))));
    }
    Ok(Some(match name {
        "bool" => Value::Bool(truth(interp, &t, "bool", None)?),
        "int" | "float" => jnp::array_to_python(interp, &t, name)?,
        _ => Value::opaque("complex() of a tensor"),
    }))
}

/// `for x in t:`: eagerly the rows of the tensor; on a symbolic tensor a `tf.while_loop`
/// under AutoGraph (one pass of the body stands for all), `OperatorNotAllowedInGraphError`
/// without.
pub fn iterate(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Vec<Value>> {
    // A known tensor too (`tf.range(5)` in a graph): AutoGraph stages a loop over any tensor.
    if a.is_tracer() || (a.tf.get() && super::in_graph(interp) && autograph_active(interp) && !interp.in_library()) {
        if autograph_active(interp) && !interp.in_library() {
            if a.aval.ndim() == 0 {
                return Err(interp.stop_unknown("a loop over a scalar tensor"));
            }
            let row = crate::jax::aval::Aval::new(&a.aval.shape[1..], a.aval.dtype);
            super::loop_checks::iterating_tensor(interp, a);
            return Err(super::autograph::convert_iteration(interp, row));
        }
        return Err(errors::iterate_in_graph(interp));
    }
    let rows = jnp::iterate_array(interp, a)?;
    Ok(rows.into_iter().map(mark).collect())
}

/// `t.shape`, `t.dtype`, `t.numpy`, ... ; `None` is Python's AttributeError.
pub fn getattr(interp: &mut Interp, a: &Rc<Array>, name: &str) -> PyResult<Option<Value>> {
    let method = |n: &str| {
        Some(Value::Builtin(Rc::new(crate::interp::builtins::Builtin::Method { recv: Value::Array(a.clone()), name: Rc::from(n) })))
    };
    Ok(match name {
        "shape" => Some(shape_value(&a.aval.shape)),
        "dtype" => Some(Value::TfDType(a.aval.dtype)),
        "ndim" => Some(Value::Int(a.aval.ndim() as i64)),
        // A symbolic tensor has no value to give.
        "numpy" if a.is_tracer() => {
            return Err(interp.raise(
                "AttributeError",
                crate::diagnostics::Code::TracerToNumpy,
                "'SymbolicTensor' object has no attribute 'numpy'",
            ))
        }
        "numpy" | "get_shape" | "set_shape" => method(name),
        "T" if !interp.tf.numpy_behavior => None,
        _ => Some(unknown_tensor(interp, "an attribute of a tensor tracelens does not model")),
    })
}

/// `t.numpy()`, `t.get_shape()`.
pub fn call_method(_interp: &mut Interp, a: &Rc<Array>, name: &str, _args: Vec<Value>, _kwargs: Kwargs) -> PyResult<Value> {
    match name {
        "numpy" => Ok(jnp::mark_numpy(Value::Array(a.as_numpy()))),
        "get_shape" => Ok(shape_value(&a.aval.shape)),
        _ => Ok(Value::opaque(format!("tensor.{name}()"))),
    }
}

pub fn shape_value(shape: &[usize]) -> Value {
    TfValue::Shape(Rc::new(shape.iter().map(|&d| Some(d)).collect())).value()
}

/// `t[...]`: NumPy-style indexing, as `jnp` models it. An integer index out of bounds raises
/// TensorFlow's `StridedSlice` error (JAX would clamp it); another index TensorFlow rejects
/// is not claimed: the result is then unknown.
pub fn getitem(interp: &mut Interp, a: &Rc<Array>, idx: &Value) -> PyResult<Value> {
    if let Some((index, dim)) = out_of_bounds(a, idx) {
        return Err(super::errors::slice_index(interp, index, dim));
    }
    match jnp::getitem(interp, a, idx) {
        Ok(v) => Ok(mark(v)),
        Err(Flow::Raise(_)) => Ok(unknown_tensor(interp, "an index TensorFlow checks itself")),
        Err(e) => Err(e),
    }
}

/// The first integer index out of its dimension's bounds in `t[idx]`, as `StridedSlice`
/// reports it (a negative index plus the dimension's size), with the input dimension it
/// indexes; `None` when every index is in bounds or the index has a part whose dimensions
/// are not read here (a list, a boolean or non-scalar tensor, an unknown value).
fn out_of_bounds(a: &Array, idx: &Value) -> Option<(i64, usize)> {
    let items: &[Value] = match idx {
        Value::Tuple(items) => items,
        single => std::slice::from_ref(single),
    };
    let int = super::tensor_array::known_int;
    let mut consumed = 0;
    for item in items {
        match item {
            Value::None | Value::Ellipsis => {}
            Value::Slice(_) => consumed += 1,
            other => {
                int(other)?;
                consumed += 1;
            }
        }
    }
    let nd = a.aval.shape.len();
    if consumed > nd || items.iter().filter(|v| matches!(v, Value::Ellipsis)).count() > 1 {
        return None;
    }
    let mut dim = 0;
    for item in items {
        match item {
            Value::None => {}
            Value::Ellipsis => dim += nd - consumed,
            Value::Slice(_) => dim += 1,
            other => {
                let (i, n) = (int(other)?, a.aval.shape[dim] as i64);
                if i < -n || i >= n {
                    return Some((if i < 0 { i + n } else { i }, dim));
                }
                dim += 1;
            }
        }
    }
    None
}

/// `t[i] = v`: tensors are immutable (TL107), eager or symbolic.
pub fn item_assignment(interp: &Interp, a: &Array) -> Flow {
    let class = if a.is_tracer() { "SymbolicTensor" } else { "tensorflow.python.framework.ops.EagerTensor" };
    interp.raise("TypeError", crate::diagnostics::Code::ImmutableUpdate, format!("'{class}' object does not support item assignment"))
}

/// `print(t)`, `str(t)`: `tf.Tensor(<value>, shape=(2,), dtype=float32)` eagerly, and
/// `Tensor("x:0", shape=(2,), dtype=float32)` for a symbolic tensor (named after the
/// argument it stands for; other graph tensors' names are not modelled).
pub fn str(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    let shape = crate::jax::aval::shape_tuple(&a.aval.shape);
    let dtype = a.aval.dtype.name();
    if a.is_tracer() {
        return Ok(symbolic_str(interp, a));
    }
    let value = jnp::array_str(interp, &plain(a))?;
    let sep = if value.contains('\n') { "\n" } else { "" };
    Ok(format!("tf.Tensor({sep}{value}, shape={shape}, dtype={dtype})"))
}

/// `str()` of a symbolic tensor: `Tensor("x:0", shape=(2,), dtype=float32)`.
pub fn symbolic_str(interp: &Interp, a: &Array) -> String {
    let shape = crate::jax::aval::shape_tuple(&a.aval.shape);
    let name = interp.jax.input_paths.get(&(a as *const Array as usize)).cloned().unwrap_or_else(|| "?".to_string());
    format!("Tensor(\"{name}:0\", shape={shape}, dtype={})", a.aval.dtype.name())
}

/// `repr(t)`: `<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>`.
pub fn repr(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    let shape = crate::jax::aval::shape_tuple(&a.aval.shape);
    let dtype = a.aval.dtype.name();
    if a.is_tracer() {
        let name = interp.jax.input_paths.get(&(Rc::as_ptr(a) as usize)).cloned().unwrap_or_else(|| "?".to_string());
        return Ok(format!("<tf.Tensor '{name}:0' shape={shape} dtype={dtype}>"));
    }
    let value = numpy_text(interp, a)?;
    Ok(format!("<tf.Tensor: shape={shape}, dtype={dtype}, numpy={value}>"))
}

/// The `numpy=` part of a tensor's or variable's repr: a scalar as the Python value
/// (`1.0`, `0.10000000149011612`, `3`, `True`), else NumPy's `array(...)`.
pub fn numpy_text(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    if a.aval.ndim() == 0 {
        let d = a.aval.dtype;
        if d.is_floating() || d.is_integer() || d.is_bool() {
            if let Some(x) = crate::jax::eval::force(a, 1).and_then(|v| v.iter().next().copied()) {
                let python = if d.is_bool() {
                    Value::Bool(x != 0.0)
                } else if d.is_integer() {
                    Value::Int(x as i64)
                } else {
                    Value::Float(x)
                };
                return interp.repr(&python);
            }
        }
    }
    let value = jnp::array_repr(interp, &plain(a).as_numpy())?;
    Ok(value.replacen("Array(", "array(", 1))
}

/// The same value as a plain (NumPy-printing) array.
fn plain(a: &Rc<Array>) -> Rc<Array> {
    a.as_numpy()
}

/// `TensorShape` methods: `as_list()`, `is_fully_defined()`.
pub fn shape_method(interp: &mut Interp, dims: &[Option<usize>], name: &str, _args: Vec<Value>) -> PyResult<Value> {
    match name {
        "as_list" => {
            if dims.iter().any(Option::is_none) {
                interp.tf.none_dimension_read = true;
            }
            Ok(Value::list(dims.iter().map(|d| d.map_or(Value::None, |d| Value::Int(d as i64))).collect()))
        }
        "is_fully_defined" => Ok(Value::Bool(dims.iter().all(Option::is_some))),
        _ => Err(interp.stop_unknown(format!("TensorShape.{name}() is not modelled"))),
    }
}

/// `shape[i]`: an int (or `None` for a dimension a trace does not know), `shape[a:b]` a shape.
pub fn shape_getitem(interp: &mut Interp, dims: &[Option<usize>], idx: &Value) -> PyResult<Value> {
    match idx {
        Value::Int(i) => {
            let n = dims.len() as i64;
            let k = if *i < 0 { *i + n } else { *i };
            match usize::try_from(k).ok().and_then(|k| dims.get(k)) {
                Some(None) => {
                    interp.tf.none_dimension_read = true;
                    Ok(Value::None)
                }
                Some(d) => Ok(d.map_or(Value::None, |d| Value::Int(d as i64))),
                None => Err(interp.raise("IndexError", crate::diagnostics::Code::PythonException, "list index out of range")),
            }
        }
        Value::Slice(_) => {
            let items: Vec<Value> = dims.iter().map(|d| d.map_or(Value::None, |d| Value::Int(d as i64))).collect();
            let sliced = interp.getitem(&Value::list(items), idx.clone())?;
            let out: Vec<Option<usize>> =
                interp.iterate(&sliced)?.iter().map(|v| crate::interp::ops::as_int(v).map(|i| i as usize)).collect();
            Ok(TfValue::Shape(Rc::new(out)).value())
        }
        _ => Ok(Value::opaque("a TensorShape indexed by something else")),
    }
}

/// A shape's dimensions as Python sees them when it iterates it.
pub fn shape_items(dims: &[Option<usize>]) -> Vec<Value> {
    dims.iter().map(|d| d.map_or(Value::None, |d| Value::Int(d as i64))).collect()
}
