//! Values mode (`tracelens run`, `check --values`): every primitive applied outside a trace
//! is computed as soon as it is bound, in program order, and TL301 names the operation that
//! produced the first NaN or Inf on the way to a value the program looks at (tfdbg's "first
//! offending node", JAX's `jax_debug_nans`/`jax_debug_infs`).
//!
//! A NaN or Inf has an *origin*: the first operation that made it from finite inputs. Each
//! computed array holding one carries its origin, handed on by every operation it flows
//! through. The diagnostic is reported when the program observes such a value (prints it,
//! formats it, turns it into a Python number): an intermediate NaN that a `jnp.where` throws
//! away, as in `jnp.where(x > 0, jnp.log(x), 0.0)`, is never reported.

use std::rc::Rc;

use super::array::{Array, NdData};
use crate::diagnostics::Code;
pub use crate::interp::values_state::{loop_enter, loop_exit, loop_next, NonFinite, PrintReplay, ValuesState};
use crate::interp::{Interp, PyResult, Site};

/// Counts of NaN and Inf elements.
fn non_finite_counts(d: &NdData) -> (usize, usize) {
    super::eval::count_non_finite(d.iter().copied())
}

/// `f32[3] min 0.1353 max inf, 0 NaN, 1 Inf` for one input of an operation.
fn describe_input(a: &Rc<Array>, d: &NdData) -> String {
    let (nan, inf) = non_finite_counts(d);
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    for &x in d.iter().filter(|x| !x.is_nan()) {
        min = min.min(x);
        max = max.max(x);
    }
    let num = |x: f64| super::print::scalar_text(x, a.aval.dtype);
    let range = if d.len() == nan {
        "all NaN".to_string()
    } else if d.len() == 1 {
        format!("= {}", num(min))
    } else {
        format!("min {} max {}", num(min), num(max))
    };
    format!("{} {range}, {nan} NaN, {inf} Inf", a.aval.short())
}

/// "in jit(step) called at train.py:82, the 37th iteration of the loop at train.py:80".
fn context(interp: &Interp, staged: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let (Some(name), Some(site)) = (staged, interp.site()) {
        parts.push(format!("in {name} called at {}", interp.describe_site(site)));
    }
    if let Some(v) = &interp.values {
        for (site, n) in v.loops.iter().rev() {
            parts.push(format!("the {} iteration of the loop at {}", ordinal(*n), interp.describe_site(*site)));
        }
    }
    parts.join(", ")
}

/// `1st`, `2nd`, `3rd`, `11th`, `21st`.
fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Computes `out` now (values mode) and notes where a NaN or Inf in it came from. `site` is
/// the user's line of the operation, `staged` the jitted function it runs in, if any.
pub fn computed(interp: &mut Interp, out: &Rc<Array>, inputs: &[Rc<Array>], op: &str, site: Option<Site>, staged: Option<&str>) {
    if interp.values.is_none() || out.is_tracer() {
        return;
    }
    let max = interp.budgets.max_elements;
    let Some((nan, inf, size)) = super::eval::non_finite_counts(out, max) else { return };
    if nan + inf == 0 {
        return;
    }
    if let Some(v) = interp.values.as_mut() {
        let what = if v.debug_nans && nan > 0 {
            Some("nan")
        } else if v.debug_infs && inf > 0 {
            Some("inf")
        } else {
            None
        };
        if let (Some(what), None) = (what, &v.pending_raise) {
            v.pending_raise = Some((format!("invalid value ({what}) encountered in {op}"), site, staged.map(str::to_string)));
        }
    }
    let Some(values) = interp.values.as_ref() else { return };
    let inherited = inputs.iter().filter_map(|i| values.origin_of(i)).min_by_key(|o| o.seq);
    let origin = match inherited {
        Some(o) if nan > 0 && o.nan_at.is_none() && o.what == "inf" => match site {
            Some(s) => Rc::new(NonFinite { nan_at: Some((s, op.to_string())), ..clone_origin(&o) }),
            None => o,
        },
        Some(o) => o,
        None => {
            // Constants (`jnp.full(3, jnp.inf)`) and values made from Python data hold
            // non-finite values on purpose: only an operation on finite inputs produces one.
            let Some(site) = site else { return };
            if inputs.is_empty() {
                return;
            }
            let mut described = Vec::with_capacity(inputs.len());
            for i in inputs {
                let Some(d) = super::eval::force(i, max) else { return };
                if non_finite_counts(&d) != (0, 0) {
                    return;
                }
                described.push(describe_input(i, &d));
            }
            let Some(values) = interp.values.as_mut() else { return };
            values.next_seq += 1;
            let seq = values.next_seq;
            Rc::new(NonFinite {
                seq,
                site,
                op: op.to_string(),
                what: if nan > 0 { "nan" } else { "inf" },
                counts: (nan, inf, size),
                output: out.aval.short(),
                inputs: described,
                context: context(interp, staged),
                nan_at: None,
            })
        }
    };
    if let Some(values) = interp.values.as_mut() {
        values.origins.insert(Rc::as_ptr(out) as usize, (Rc::downgrade(out), origin));
    }
}

fn clone_origin(o: &NonFinite) -> NonFinite {
    NonFinite {
        seq: o.seq,
        site: o.site,
        op: o.op.clone(),
        what: o.what,
        counts: o.counts,
        output: o.output.clone(),
        inputs: o.inputs.clone(),
        context: o.context.clone(),
        nan_at: o.nan_at.clone(),
    }
}

/// `to` holds data taken from `from` (a slice of it, a stacked row, a loop's carry): a NaN or
/// Inf in `to` keeps the origin it had in `from`.
pub fn inherit(interp: &mut Interp, to: &Rc<Array>, from: &[Rc<Array>]) {
    let Some(values) = interp.values.as_ref() else { return };
    let Some(origin) = from.iter().filter_map(|f| values.origin_of(f)).min_by_key(|o| o.seq) else { return };
    let max = interp.budgets.max_elements;
    if super::eval::force(to, max).is_none_or(|d| non_finite_counts(&d) == (0, 0)) {
        return;
    }
    if let Some(values) = interp.values.as_mut() {
        values.origins.insert(Rc::as_ptr(to) as usize, (Rc::downgrade(to), origin));
    }
}

/// The program looks at `a` (prints it, formats it, converts it to a Python number): if it
/// holds a NaN or Inf made by an operation, report TL301 at that operation, once per run.
pub fn observed(interp: &mut Interp, a: &Rc<Array>, how: &str) {
    let Some(values) = interp.values.as_ref() else { return };
    if values.reported {
        return;
    }
    let Some(origin) = a.known().and_then(|k| values.origin_of(&k)) else { return };
    if let Some(v) = interp.values.as_mut() {
        v.reported = true;
    }
    let (nan, inf, total) = origin.counts;
    let mut message = format!(
        "FloatingPointError: invalid value ({}) encountered in {}: the output {} has {nan} NaN and {inf} Inf of {total} values, from finite inputs:",
        origin.what, origin.op, origin.output
    );
    for (i, text) in origin.inputs.iter().enumerate() {
        message.push_str(&format!("\n  input {i}: {text}"));
    }
    if !origin.context.is_empty() {
        message.push_str(&format!("\n  {}", origin.context));
    }
    let mut related = Vec::new();
    if let Some((site, op)) = &origin.nan_at {
        related.push((*site, format!("the Inf becomes NaN here ({op})")));
    }
    if let Some(site) = interp.site() {
        if site != origin.site {
            related.push((site, format!("the value is {how} here")));
        }
    }
    let diag = interp.diagnostic(Code::NanInf, origin.site, message, related);
    interp.diagnostics.push(diag);
}

/// The text a program sees in place of an array whose value is not computed, and a note
/// saying why (on stderr for `tracelens run`).
pub fn not_computed(interp: &mut Interp, a: &Rc<Array>) -> String {
    let why = why_not_computed(interp, a);
    let marker = format!("<not computed: {}>", a.aval.short());
    let at = interp.site().map(|s| format!("{}: ", interp.describe_site(s))).unwrap_or_default();
    if let Some(v) = interp.values.as_mut() {
        v.notes.push(format!("{at}the value of {} is not computed ({why}); printed {marker}", a.aval.short()));
    }
    marker
}

/// Why `a`'s value is unknown, in words.
pub fn why_not_computed(interp: &Interp, a: &Rc<Array>) -> String {
    let max = interp.budgets.max_elements;
    if a.aval.size() > max as u128 {
        return format!("{} elements, over the budget of {max} elements per array", a.aval.size());
    }
    if a.aval.dtype.is_complex() {
        return "complex values are not modelled".into();
    }
    match a.known().as_deref().map(|k| &k.kind) {
        Some(super::array::ArrayKind::Concrete(cell)) => match &*cell.borrow() {
            super::array::Lazy::Unknown(why) => why.to_string(),
            _ => "it depends on a value that is not computed".into(),
        },
        _ => "a traced value".into(),
    }
}

/// The time budget, checked after each eager evaluation: a run that computes for too long
/// stops with TL900 rather than hanging.
/// Values mode computes each value bound outside traces as it is made, in program order.
pub fn computed_eagerly(interp: &mut Interp, outs: &[Rc<Array>], inputs: &[Rc<Array>], name: &str, site: Option<Site>) -> PyResult<()> {
    for o in outs {
        computed(interp, o, inputs, name, site, None);
    }
    raise_pending(interp)?;
    tick(interp)
}

pub fn tick(interp: &mut Interp) -> PyResult<()> {
    if interp.values.is_some() {
        interp.tick()?;
    }
    Ok(())
}

/// Raises the FloatingPointError that `jax_debug_nans`/`jax_debug_infs` asked for, if an
/// operation of the evaluation that just ran produced a NaN/Inf. Its traceback ends at the
/// operation's line, inside the jitted function when it ran in one (as JAX's de-optimized
/// re-run shows it).
pub fn raise_pending(interp: &mut Interp) -> PyResult<()> {
    let Some((message, site, staged)) = interp.values.as_mut().and_then(|v| v.pending_raise.take()) else { return Ok(()) };
    let flow = interp.raise("FloatingPointError", Code::PythonException, message);
    let crate::interp::Flow::Raise(mut exc) = flow else { return Err(flow) };
    if let Some(site) = site {
        if exc.site != Some(site) {
            let name = staged.as_deref().and_then(|s| s.split_once('(')).map(|(_, rest)| rest.trim_end_matches(')')).unwrap_or("<jit>");
            exc.traceback.push((Rc::from(name), site));
        }
        exc.site = Some(site);
    }
    Err(crate::interp::Flow::Raise(exc))
}

/// `raise_pending` after a jitted call: JAX checks a jitted function's outputs and re-runs it
/// op by op only when one holds a NaN/Inf, so a NaN that `jnp.where` discarded inside the
/// function raises nothing.
pub fn raise_pending_after_jit(interp: &mut Interp, outputs: &[Rc<Array>]) -> PyResult<()> {
    // Only a values-mode run with a NaN/Inf pending computes the outputs: an ordinary
    // analysis leaves them lazy.
    if interp.values.as_ref().is_none_or(|v| v.pending_raise.is_none()) {
        return Ok(());
    }
    let max = interp.budgets.max_elements;
    let reaches_output = outputs.iter().any(|o| super::eval::force(o, max).is_some_and(|d| non_finite_counts(&d) != (0, 0)));
    if !reaches_output {
        if let Some(v) = interp.values.as_mut() {
            v.pending_raise = None;
        }
    }
    raise_pending(interp)
}

/// One equation of a traced body evaluated in values mode: its output computed (and watched
/// for NaN/Inf), or, for `jax.debug.print`, the text printed with the values of this call.
pub fn evaluated(interp: &mut Interp, eqn: &super::ir::Eqn, out: Option<&Rc<Array>>, inputs: &[Rc<Array>], label: &str) {
    match out {
        Some(out) => computed(interp, out, inputs, &eqn.prim.label(), eqn.site, Some(label)),
        None if matches!(eqn.prim, super::ir::Prim::DebugCallback) => replay_debug_print(interp, eqn.site, inputs),
        None => {}
    }
}

/// Values mode: remembers a `jax.debug.print` traced at the current line.
pub fn note_debug_print(interp: &mut Interp, args: Vec<crate::interp::Value>, kwargs: crate::interp::call::Kwargs) {
    note_print(interp, args, kwargs, None);
}

/// Values mode: remembers a print op of another front end traced at the current line, which
/// `replay` prints each time the traced function runs.
pub fn note_runtime_print(interp: &mut Interp, args: Vec<crate::interp::Value>, kwargs: crate::interp::call::Kwargs, replay: PrintReplay) {
    note_print(interp, args, kwargs, Some(replay));
}

fn note_print(interp: &mut Interp, args: Vec<crate::interp::Value>, kwargs: crate::interp::call::Kwargs, replay: Option<PrintReplay>) {
    let Some(site) = interp.site() else { return };
    if let Some(v) = interp.values.as_mut() {
        v.debug_prints.insert(site, (args, kwargs, replay));
    }
}

/// Prints what `jax.debug.print` at `site` prints when its traced function runs on `inputs`
/// (its array arguments, positional then keyword, in order).
fn replay_debug_print(interp: &mut Interp, site: Option<Site>, inputs: &[Rc<Array>]) {
    use crate::interp::Value;
    let Some((args, kwargs, replay)) = site.and_then(|s| interp.values.as_ref().and_then(|v| v.debug_prints.get(&s).cloned())) else {
        return;
    };
    if let Some(replay) = replay {
        return replay(interp, &args, &kwargs, inputs);
    }
    let Some(Value::Str(fmt)) = args.first().cloned() else { return };
    let mut concrete = inputs.iter().cloned();
    let mut fill = |v: &Value| match v {
        Value::Array(_) => concrete.next().map(|a| debug_print_arg(&a)),
        other => Some(other.clone()),
    };
    let positional: Option<Vec<Value>> = args[1..].iter().map(&mut fill).collect();
    let keywords: Option<crate::interp::call::Kwargs> = kwargs.iter().map(|(k, v)| fill(v).map(|v| (k.clone(), v))).collect();
    let (Some(positional), Some(keywords)) = (positional, keywords) else { return };
    let Ok(format) = interp.getattr(&Value::Str(fmt), "format") else { return };
    if let Ok(Value::Str(text)) = interp.call(&format, positional, keywords) {
        interp.stdout.push_str(&text);
        interp.stdout.push('\n');
    }
}

/// What `jax.debug.print` formats for an array argument: it hands NumPy arrays to
/// `str.format`, and a 0-d NumPy array formats as its Python scalar (`lr=0.10000000149011612`).
pub fn debug_print_arg(a: &Rc<Array>) -> crate::interp::Value {
    use crate::interp::Value;
    if a.aval.ndim() == 0 && !a.is_tracer() {
        if let Some(x) = super::eval::force(a, 1).and_then(|d| d.iter().next().copied()) {
            let dtype = a.aval.dtype;
            return if dtype.is_bool() {
                Value::Bool(x != 0.0)
            } else if dtype.is_integer() {
                Value::Int(x as i64)
            } else if dtype.is_complex() {
                Value::Array(a.clone())
            } else {
                Value::Float(x)
            };
        }
    }
    Value::Array(a.clone())
}
