//! `tf.print(*inputs, output_stream=sys.stderr, summarize=3, sep=" ", end="\n")`: eagerly it
//! prints at once; in a `tf.function` it is an op of the graph, so it prints each time the
//! graph runs, never while tracing. The graph holds it as a `debug_callback` equation whose
//! inputs are the tensors printed, and the values mode replays it with the call's values
//! (`jax::numerics`, as `jax.debug.print`).
//!
//! The text is TensorFlow's (2.21): a tensor as its summary (`[0 1 2 ... 7 8 9]`: with more
//! than `2 * summarize` entries in a dimension, the first and last `summarize`; rows on lines
//! of their own, blocks apart by blank lines, no column padding), booleans as `1`/`0`, a float
//! in the shortest of `%.6g` / `%.9g` (float64: `%.15g` / `%.17g`) that reads back as the
//! same number; a nested structure printed by Python's `repr` with its dict keys sorted
//! (`tf.nest`'s order) and each tensor as its summary; a top-level Python value by `str`.
//! What tracelens cannot print so (an unknown value, a string tensor, an empty matrix) makes
//! the whole line a note instead of a guess.

use std::rc::Rc;

use crate::interp::call::Kwargs;
use crate::interp::streams::Stream;
use crate::interp::{Interp, PyResult, Value};
use crate::jax::array::Array;
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;

/// Entries printed at each end of a dimension when `summarize` is not given.
const DEFAULT_SUMMARIZE: i64 = 3;

/// `tf.print(...)`.
pub fn print(interp: &mut Interp, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    // A variable prints its value (in a graph: the value it holds when the graph runs).
    let args: Vec<Value> = args.iter().map(|a| read_variables(interp, a)).collect();
    let args = &args[..];
    if interp.jax.trace_depth() > 0 {
        let mut leaves = Vec::new();
        for a in args {
            collect_tensors(a, &mut leaves);
        }
        crate::jax::apply_with_bodies(interp, Prim::DebugCallback, &leaves, Vec::new())?;
        crate::jax::numerics::note_runtime_print(interp, args.to_vec(), kwargs.clone(), replay);
    } else {
        emit(interp, args, kwargs);
    }
    Ok(Value::None)
}

/// `v` with each `tf.Variable` (at the top, or in a list or tuple) read.
fn read_variables(interp: &mut Interp, v: &Value) -> Value {
    match v {
        Value::Builtin(b) => match &**b {
            crate::interp::builtins::Builtin::Tf(super::TfValue::Variable(var)) => Value::Array(super::variable::read(interp, var)),
            _ => v.clone(),
        },
        Value::List(l) => {
            let items = l.borrow().clone();
            Value::list(items.iter().map(|x| read_variables(interp, x)).collect())
        }
        Value::Tuple(t) => Value::tuple(t.iter().map(|x| read_variables(interp, x)).collect()),
        _ => v.clone(),
    }
}

/// The tensors of `v`, in the order `fill` puts values back.
fn collect_tensors(v: &Value, out: &mut Vec<Rc<Array>>) {
    match v {
        Value::Array(a) => out.push(a.clone()),
        Value::List(l) => l.borrow().iter().for_each(|x| collect_tensors(x, out)),
        Value::Tuple(t) => t.iter().for_each(|x| collect_tensors(x, out)),
        Value::Dict(d) => d.borrow().values().iter().for_each(|x| collect_tensors(x, out)),
        _ => {}
    }
}

/// A `tf.print` of a graph run on concrete tensors: `inputs` are the call's values of the
/// tensors the trace saw, in `collect_tensors` order.
fn replay(interp: &mut Interp, args: &[Value], kwargs: &Kwargs, inputs: &[Rc<Array>]) {
    let mut concrete = inputs.iter().cloned();
    let filled: Option<Vec<Value>> = args.iter().map(|a| fill(a, &mut concrete)).collect();
    if let Some(filled) = filled {
        emit(interp, &filled, kwargs);
    }
}

fn fill(v: &Value, concrete: &mut impl Iterator<Item = Rc<Array>>) -> Option<Value> {
    Some(match v {
        Value::Array(_) => Value::Array(concrete.next()?),
        Value::List(l) => {
            let items: Option<Vec<Value>> = l.borrow().iter().map(|x| fill(x, concrete)).collect();
            Value::list(items?)
        }
        Value::Tuple(t) => Value::tuple(t.iter().map(|x| fill(x, concrete)).collect::<Option<Vec<_>>>()?),
        Value::Dict(d) => {
            let mut out = d.borrow().clone();
            for (_, slot) in out.entries.values_mut() {
                *slot = fill(slot, concrete)?;
            }
            Value::Dict(Rc::new(std::cell::RefCell::new(out)))
        }
        other => other.clone(),
    })
}

/// Writes the line to its stream, or notes why it cannot be printed.
fn emit(interp: &mut Interp, args: &[Value], kwargs: &Kwargs) {
    // Nothing reads what `check` prints.
    if interp.values.is_none() {
        return;
    }
    let kw = |name: &str| kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v.clone());
    let stream = match kw("output_stream") {
        None => Some(Stream::Stderr),
        Some(v) => Stream::of(&v),
    };
    let Some(stream) = stream else { return };
    let text = |v: Option<Value>, default: &str| match v {
        Some(Value::Str(s)) => Some(s.to_string()),
        None | Some(Value::None) => Some(default.to_string()),
        Some(_) => None,
    };
    let summarize = match kw("summarize") {
        None | Some(Value::None) => Some(DEFAULT_SUMMARIZE),
        Some(Value::Int(n)) => Some(n),
        Some(_) => None,
    };
    let (Some(sep), Some(end), Some(summarize)) = (text(kw("sep"), " "), text(kw("end"), "\n"), summarize) else {
        note_unprintable(interp);
        return;
    };
    let mut parts = Vec::with_capacity(args.len());
    for a in args {
        let part = match a {
            Value::Str(s) => Some(s.to_string()),
            Value::Array(t) => summary(interp, t, summarize),
            Value::List(_) | Value::Tuple(_) | Value::Dict(_) => structure(interp, a, summarize),
            // A dtype is printed by its repr: `tf.float32`.
            Value::TfDType(_) => interp.repr(a).ok(),
            other => interp.to_str(other).ok(),
        };
        match part {
            Some(p) => parts.push(p),
            None => {
                note_unprintable(interp);
                return;
            }
        }
    }
    interp.write_stream(stream, &(parts.join(&sep) + &end));
}

fn note_unprintable(interp: &mut Interp) {
    let at = interp.site().map(|s| format!("{}: ", interp.describe_site(s))).unwrap_or_default();
    if let Some(v) = interp.values.as_mut() {
        v.notes.push(format!("{at}tf.print printed nothing here: a value tracelens cannot format as TensorFlow does"));
    }
}

/// A nested structure as `tf.print` shows it: Python's `repr`, dict keys sorted, tensors as
/// their summaries.
fn structure(interp: &mut Interp, v: &Value, summarize: i64) -> Option<String> {
    Some(match v {
        Value::Array(t) => summary(interp, t, summarize)?,
        Value::List(l) => {
            let items: Option<Vec<String>> = l.borrow().iter().map(|x| structure(interp, x, summarize)).collect();
            format!("[{}]", items?.join(", "))
        }
        Value::Tuple(t) => {
            let items: Option<Vec<String>> = t.iter().map(|x| structure(interp, x, summarize)).collect();
            let items = items?;
            if items.len() == 1 {
                format!("({},)", items[0])
            } else {
                format!("({})", items.join(", "))
            }
        }
        Value::Dict(d) => {
            let mut entries = d.borrow().items();
            // `tf.nest` sorts a dict's keys; only keys of one comparable kind are modelled.
            let str_key = |k: &Value| if let Value::Str(s) = k { Some(s.clone()) } else { None };
            let int_key = |k: &Value| if let Value::Int(n) = k { Some(*n) } else { None };
            if entries.iter().all(|(k, _)| str_key(k).is_some()) {
                entries.sort_by_key(|(k, _)| str_key(k));
            } else if entries.iter().all(|(k, _)| int_key(k).is_some()) {
                entries.sort_by_key(|(k, _)| int_key(k));
            } else {
                return None;
            }
            let mut items = Vec::with_capacity(entries.len());
            for (k, v) in &entries {
                items.push(format!("{}: {}", interp.repr(k).ok()?, structure(interp, v, summarize)?));
            }
            format!("{{{}}}", items.join(", "))
        }
        other if other.is_opaque() => return None,
        other => interp.repr(other).ok()?,
    })
}

/// A tensor's summary, or `None` when its values are not known here (or not computed: over
/// the run's element budget).
fn summary(interp: &Interp, t: &Rc<Array>, summarize: i64) -> Option<String> {
    let dtype = t.aval.dtype;
    if dtype.is_complex() || dtype.is_key() {
        return None;
    }
    let data = crate::jax::eval::force(t, interp.budgets.max_elements)?;
    let shape = t.aval.shape.clone();
    if shape.len() > 1 && shape.contains(&0) {
        return None;
    }
    let flat: Vec<f64> = data.iter().copied().collect();
    let mut out = String::new();
    write_block(&mut out, &flat, &shape, 0, shape.len(), summarize, dtype);
    Some(out)
}

/// The entries at `flat` of a block of `shape` at nesting `depth` of an array of `ndim`.
fn write_block(out: &mut String, flat: &[f64], shape: &[usize], depth: usize, ndim: usize, summarize: i64, dtype: DType) {
    let Some((&n, inner)) = shape.split_first() else {
        out.push_str(&element(flat.first().copied().unwrap_or(0.0), dtype));
        return;
    };
    let stride: usize = inner.iter().product();
    let shown: Vec<Option<usize>> = if summarize >= 0 && n as i64 > 2 * summarize {
        let s = summarize as usize;
        (0..s).map(Some).chain(std::iter::once(None)).chain((n - s..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    };
    let sep = if inner.is_empty() { " ".to_string() } else { "\n".repeat(ndim - depth - 1) + &" ".repeat(depth + 1) };
    out.push('[');
    for (i, entry) in shown.iter().enumerate() {
        if i > 0 {
            out.push_str(&sep);
        }
        match entry {
            Some(k) => write_block(out, &flat[k * stride..(k + 1) * stride], inner, depth + 1, ndim, summarize, dtype),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}

/// One entry of a tensor.
fn element(x: f64, dtype: DType) -> String {
    if dtype.is_bool() {
        return if x != 0.0 { "1" } else { "0" }.into();
    }
    if dtype.is_integer() {
        return format!("{}", x as i128);
    }
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if dtype == DType::F64 {
        let short = c_g(x, 15);
        if short.parse::<f64>().ok() == Some(x) {
            short
        } else {
            c_g(x, 17)
        }
    } else {
        // float32 (and the half types, which it holds exactly).
        let x = x as f32 as f64;
        let short = c_g(x, 6);
        if short.parse::<f32>().ok() == Some(x as f32) {
            short
        } else {
            c_g(x, 9)
        }
    }
}

/// C's `printf("%.{precision}g", x)` for a finite `x`.
fn c_g(x: f64, precision: usize) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let p = precision.max(1);
    // The decimal exponent after rounding to `p` significant digits.
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mantissa = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn floats_print_as_tensorflow_prints_them() {
        // What TensorFlow 2.21's tf.print shows for these float32 / float64 scalars.
        let f32s = [(1.5, "1.5"), (2.0, "2"), (0.1, "0.1"), (1e-7, "1e-07"), (123456.7, "123456.703"), (1e10, "1e+10")];
        for (x, want) in f32s {
            assert_eq!(element(x as f32 as f64, DType::F32), want, "{x}");
        }
        assert_eq!(element(1234567.0, DType::F32), "1234567");
        assert_eq!(element(1.0 / 3.0, DType::F32), "0.333333343");
        assert_eq!(element(1.0 / 3.0, DType::F64), "0.33333333333333331");
        assert_eq!(element(1e-5, DType::F64), "1e-05");
        assert_eq!(element(-0.0, DType::F32), "-0");
        assert_eq!(element(1.0, DType::Bool), "1");
    }

    fn layout_summarises_each_dimension() {
        let flat: Vec<f64> = (0..64).map(f64::from).collect();
        let mut out = String::new();
        write_block(&mut out, &flat, &[8, 8], 0, 2, 3, DType::I32);
        assert_eq!(
            out,
            "[[0 1 2 ... 5 6 7]\n [8 9 10 ... 13 14 15]\n [16 17 18 ... 21 22 23]\n ...\n [40 41 42 ... 45 46 47]\n [48 49 50 ... 53 54 55]\n [56 57 58 ... 61 62 63]]"
        );
        let flat: Vec<f64> = (0..24).map(f64::from).collect();
        let mut out = String::new();
        write_block(&mut out, &flat, &[2, 3, 4], 0, 3, 3, DType::I32);
        assert_eq!(out, "[[[0 1 2 3]\n  [4 5 6 7]\n  [8 9 10 11]]\n\n [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]");
    }

    crate::unit_tests::list![floats_print_as_tensorflow_prints_them, layout_summarises_each_dimension];
}
