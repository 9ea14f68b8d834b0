//! TensorFlow's numeric checks on known values: `tf.debugging.check_numerics(t, message)`
//! and, once `tf.debugging.enable_check_numerics()` has been called, the check TensorFlow
//! adds after every eager op (its `CheckNumericsV2` callback): the first op whose float
//! output holds a NaN or an Inf raises `InvalidArgumentError` there, worded as TensorFlow
//! 2.21 words it. These are TL301's semantics turned into TensorFlow's error: the op that
//! made the first NaN/Inf from finite inputs.
//!
//! Claimed only where the answer is certain: the op's inputs and output are known (forced
//! within a budget), its inputs are finite (a NaN/Inf already in an input came from an op or
//! a constant TensorFlow may have checked elsewhere), and the op is one of `OPS` (TensorFlow's
//! op type, which the message names). In a graph, the one-tensor ops of `OPS` are checked
//! at each call (`in_graph_op`); the two-tensor ops and `tf.matmul` there are not claimed
//! (their graph names, `add` or `Add_1`, depend on how they were written).

use std::rc::Rc;

use super::TfFn;
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;

/// What `check_numerics` and `enable_check_numerics` read of a tensor: the values forced
/// within this many elements.
const BUDGET: u64 = 1 << 16;

/// The TensorFlow op type of each one-tensor op that can make a NaN or an Inf out of finite
/// inputs (checked by the enabled callback; the others cannot trip it).
const OPS: &[(TfFn, &str)] = &[
    (TfFn::Exp, "Exp"),
    (TfFn::Log, "Log"),
    (TfFn::Sqrt, "Sqrt"),
    (TfFn::Rsqrt, "Rsqrt"),
    (TfFn::Square, "Square"),
    (TfFn::Tan, "Tan"),
    (TfFn::Log1p, "Log1p"),
    (TfFn::Expm1, "Expm1"),
    (TfFn::Reciprocal, "Reciprocal"),
];

/// TensorFlow's op type of the one-tensor op `f`, when the enabled check covers it.
pub fn unary_op(f: TfFn) -> Option<&'static str> {
    OPS.iter().find(|(g, _)| *g == f).map(|(_, op)| *op)
}

/// `tf.debugging.enable_check_numerics()` / `disable_check_numerics()`.
pub fn enable(interp: &mut Interp, on: bool) -> PyResult<Value> {
    interp.tf.check_numerics = on;
    Ok(Value::None)
}

/// Counts of -Inf, +Inf and NaN elements of a known float tensor; `None` when it is not
/// known (or not a float tensor).
fn counts(a: &Rc<Array>) -> Option<(usize, usize, usize)> {
    if !a.aval.dtype.is_floating() || a.is_tracer() {
        return None;
    }
    let data = crate::jax::eval::force(&a.known()?, BUDGET)?;
    let mut c = (0, 0, 0);
    for &x in data.iter() {
        if x.is_nan() {
            c.2 += 1;
        } else if x == f64::NEG_INFINITY {
            c.0 += 1;
        } else if x == f64::INFINITY {
            c.1 += 1;
        }
    }
    Some(c)
}

/// `-Inf, +Inf, and NaN` as TensorFlow's kernels list what they found.
fn listed(items: &[&str]) -> String {
    match items {
        [one] => one.to_string(),
        [a, b] => format!("{a} and {b}"),
        _ => format!("{}, and {}", items[..items.len() - 1].join(", "), items[items.len() - 1]),
    }
}

/// After the eager op `op` (TensorFlow's op type) computed `out` from `inputs`: with the
/// check enabled, TensorFlow's `InvalidArgumentError` when `out` holds a NaN or an Inf.
pub fn after_op(interp: &mut Interp, op: &str, inputs: &[Rc<Array>], out: &Value) -> PyResult<()> {
    if !interp.tf.check_numerics || super::in_graph(interp) {
        return Ok(());
    }
    let Value::Array(out) = out else { return Ok(()) };
    let Some((neg_inf, pos_inf, nan)) = counts(out) else { return Ok(()) };
    if neg_inf + pos_inf + nan == 0 {
        return Ok(());
    }
    for i in inputs {
        let finite = if i.aval.dtype.is_floating() {
            counts(i) == Some((0, 0, 0))
        } else {
            i.known().and_then(|k| crate::jax::eval::force(&k, BUDGET)).is_some()
        };
        if !finite {
            return Ok(());
        }
    }
    let mut text = format!(
        "{{{{function_node __wrapped__CheckNumericsV2_device_/job:localhost/replica:0/task:0/device:CPU:0}}}} \n\n\
         !!! Detected Infinity or NaN in output 0 of eagerly-executing op \"{op}\" (# of outputs: 1) !!!\n  \
         dtype: <dtype: '{}'>\n  shape: {}\n",
        out.aval.dtype.name(),
        crate::jax::aval::shape_tuple(&out.aval.shape)
    );
    let mut found = Vec::new();
    for (n, what, word) in [(neg_inf, "-Inf", "-Inf"), (pos_inf, "+Inf", "+Inf"), (nan, "+NaN", "NaN")] {
        if n > 0 {
            text.push_str(&format!("  # of {what} elements: {n}\n"));
            found.push(word);
        }
    }
    text.push('\n');
    if let [one] = inputs {
        text.push_str(&format!("  Input tensor: {}\n", super::tensor::str(interp, one)?));
    } else {
        text.push_str(&format!("  Input tensors ({}):\n", inputs.len()));
        for (k, i) in inputs.iter().enumerate() {
            text.push_str(&format!("         {k}: {}\n", super::tensor::str(interp, i)?));
        }
    }
    text.push_str(&format!("\n : Tensor had {} values [Op:CheckNumericsV2] name: ", listed(&found)));
    Err(interp.raise("InvalidArgumentError", Code::PythonException, text))
}

/// What TensorFlow's `CheckNumericsV2` says it found in a known float tensor (`-Inf`,
/// `+Inf and NaN`, ...); `None` when every element is finite or the value is not known.
pub fn found_non_finite(a: &Rc<Array>) -> Option<String> {
    let (neg_inf, pos_inf, nan) = counts(a)?;
    let found: Vec<&str> = [(neg_inf, "-Inf"), (pos_inf, "+Inf"), (nan, "NaN")].iter().filter(|(n, _)| *n > 0).map(|(_, w)| *w).collect();
    (!found.is_empty()).then(|| listed(&found))
}

/// The one-tensor op `op` (TensorFlow's op type) just made `out` from `x` inside a
/// `tf.function`: it takes its name in the graph (`Log`, `Log_1`, ...), and with
/// `enable_check_numerics()` on, the check TensorFlow puts after it fails the calls whose
/// values make a NaN or an Inf there (`graph_run.rs`), with TensorFlow's message: the op,
/// its output's dtype and shape, its input when it is one of the function's arguments
/// (`Tensor("q:0", ...)`), the graph's name; the stack trace TensorFlow adds is not written.
pub fn in_graph_op(interp: &mut Interp, op: &str, x: &Rc<Array>, out: &Value) {
    let Some(name) = super::graph_names::unique(interp, op) else { return };
    let Value::Array(out) = out else { return };
    if !interp.tf.check_numerics || !out.aval.dtype.is_floating() {
        return;
    }
    let Some(function) = super::function::innermost(interp).map(|f| f.name.clone()) else { return };
    let mut head = format!(
        "!!! Detected Infinity or NaN in output 0 of graph op \"{op}\" (# of outputs: 1) !!!\n  dtype: <dtype: '{}'>\n  shape: {}\n\n",
        out.aval.dtype.name(),
        crate::jax::aval::shape_tuple(&out.aval.shape)
    );
    if let Some(input) = interp.tf.graph_input_names.get(&(Rc::as_ptr(x) as usize)) {
        let shape = crate::jax::aval::shape_tuple(&x.aval.shape);
        head.push_str(&format!("  Input tensor: Tensor(\"{input}\", shape={shape}, dtype={})\n", x.aval.dtype.name()));
    }
    head.push_str(&format!("  Graph name: \"{function}\"\n"));
    let check = super::graph_run::RunCheck::FiniteV2 { head };
    super::graph_run::record_check(interp, out, None, &format!("{name}/CheckNumericsV2"), check);
}

/// `tf.debugging.check_numerics(tensor, message)` run eagerly on a known float tensor:
/// TensorFlow's `InvalidArgumentError` when it holds a NaN or an Inf, else the tensor.
/// `listed`: the argument was a Python list (TensorFlow's message then has no ` name: `).
/// `node`: the op's name in a graph (`VerifyFinite/CheckNumerics` for `assert_all_finite`).
pub fn check(interp: &mut Interp, x: Rc<Array>, message: &str, listed: bool, node: &str) -> PyResult<Value> {
    if super::in_graph(interp) {
        // A stateful op: it runs at every call, on the call's values (`graph_run.rs`).
        let check = super::graph_run::RunCheck::Finite { message: message.to_string() };
        let node = super::graph_names::scoped(interp, node).unwrap_or_else(|| node.to_string());
        super::graph_run::record_check(interp, &x, None, &node, check);
        return Ok(Value::Array(x));
    }
    let Some((neg_inf, pos_inf, nan)) = counts(&x) else { return Ok(Value::Array(x)) };
    let found = match (neg_inf + pos_inf > 0, nan > 0) {
        (false, false) => return Ok(Value::Array(x)),
        (true, false) => "Inf",
        (false, true) => "NaN",
        (true, true) => "Inf and NaN",
    };
    let text = format!("{message} : Tensor had {found} values");
    Err(super::graph_run::eager(interp, "CheckNumerics", &text, listed))
}

/// A two-tensor op or a reduction just made `out` inside a `tf.function` (`op` TensorFlow's
/// op type, `base` the name the graph gives it as it was written: `mul` for `*`, `Mul` for
/// `tf.multiply`, `truediv` for `/` and `tf.divide`, `Sum` for `tf.reduce_sum`): it takes its
/// name in the graph, and with `enable_check_numerics()` on, the check TensorFlow puts after
/// it fails the calls whose values make a NaN or an Inf there (`graph_run.rs`). `operands`
/// are the values as the user passed them: a Python number is a constant made in the op's
/// scope (`pow/y`), which the enabled check covers first, so the op's own check is
/// `pow/CheckNumericsV2_1` (a variable's read is not checked there); a tensor that is not one
/// of the graph's (an eager tensor captured) leaves the check unclaimed. The inputs are listed in the message when each is
/// one of the function's arguments (a reduction's axis is a constant whose name is not
/// followed: not listed).
pub fn in_graph_made(interp: &mut Interp, base: &str, op: &str, operands: &[&Value], inputs: &[Rc<Array>], out: &Value) {
    let Some(name) = super::graph_names::unique(interp, base) else { return };
    let Value::Array(out) = out else { return };
    if !interp.tf.check_numerics || !out.aval.dtype.is_floating() {
        return;
    }
    let mut converted = 0;
    for v in operands {
        match v {
            Value::Int(_) | Value::Float(_) => converted += 1,
            Value::Array(a) if a.is_tracer() => {}
            Value::Builtin(b) if matches!(&**b, crate::interp::builtins::Builtin::Tf(super::TfValue::Variable(_))) => {}
            _ => return,
        }
    }
    let Some(function) = super::function::innermost(interp).map(|f| f.name.clone()) else { return };
    let mut head = format!(
        "!!! Detected Infinity or NaN in output 0 of graph op \"{op}\" (# of outputs: 1) !!!\n  dtype: <dtype: '{}'>\n  shape: {}\n\n",
        out.aval.dtype.name(),
        crate::jax::aval::shape_tuple(&out.aval.shape)
    );
    let named: Option<Vec<String>> = inputs
        .iter()
        .map(|x| {
            let input = interp.tf.graph_input_names.get(&(Rc::as_ptr(x) as usize))?;
            let shape = crate::jax::aval::shape_tuple(&x.aval.shape);
            Some(format!("Tensor(\"{input}\", shape={shape}, dtype={})", x.aval.dtype.name()))
        })
        .collect();
    if let Some(named) = named.filter(|n| n.len() == 2 && operands.len() == 2) {
        head.push_str("  Input tensors (2):\n");
        for (k, t) in named.iter().enumerate() {
            head.push_str(&format!("         {k}: {t}\n"));
        }
    }
    head.push_str(&format!("  Graph name: \"{function}\"\n"));
    let node = match converted {
        0 => format!("{name}/CheckNumericsV2"),
        n => format!("{name}/CheckNumericsV2_{n}"),
    };
    let check = super::graph_run::RunCheck::FiniteV2 { head };
    super::graph_run::record_check(interp, out, None, &node, check);
}
