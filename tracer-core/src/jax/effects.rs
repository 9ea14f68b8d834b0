//! Trace-time side effects (TL201–TL205): Python code that runs once per trace rather than
//! once per call, and PRNG keys consumed twice.

use std::collections::HashMap;
use std::rc::Rc;

use super::array::Array;
use crate::diagnostics::{Code, Diagnostic};
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult, Site};

#[derive(Default)]
pub struct EffectState {
    /// print sites inside caching traces: how often each ran, and for which jitted function.
    pub prints: Vec<PrintSite>,
    /// Keys consumed so far, kept alive so their identity stays unique: (key, first use site, api).
    pub consumed_keys: Vec<(Rc<Array>, Option<Site>, &'static str)>,
    /// Traces whose tracers were stored outside them (for leak diagnostics).
    pub stored_tracers: std::collections::HashSet<u32, foldhash::fast::FixedState>,
    /// Mutations of outer state that stored a tracer: (site, trace id, the tracer's address,
    /// kept alive by where it was stored).
    pub tracer_stores: Vec<(Site, u32, usize)>,
    /// Globals read inside caching traces (TL204 when reassigned later).
    pub global_reads: Vec<GlobalRead>,
    /// Large constants already reported, per trace record (TL212).
    pub captured_constants: Vec<(Rc<Array>, usize)>,
    /// Traces whose leaked tracers raised UnexpectedTracerError.
    pub leaked_traces: std::collections::HashSet<u32, foldhash::fast::FixedState>,
}

pub use crate::interp::model::effects::GlobalRead;

pub struct PrintSite {
    pub site: Site,
    pub runs: usize,
    /// The outermost jitted function whose trace ran the print.
    pub jitted: Option<usize>,
    pub inside: String,
    /// Some run of it was in a trace with unknown arguments, whose count is not known.
    pub uncounted: bool,
}

/// `print(...)` inside a caching trace (TL201): counted now, reported at the end with the
/// number of calls the jitted function received.
pub fn on_print(interp: &mut Interp, _args: &[Value]) -> PyResult<()> {
    // Trace-time effects of library code (shims) are the library's, not the user's.
    if interp.in_library() {
        return Ok(());
    }
    let Some(inside) = interp.jax.staging_description() else {
        return Ok(());
    };
    let Some(site) = interp.site() else {
        return Ok(());
    };
    let jitted =
        interp.jax.traces.iter().find(|t| matches!(t.kind, super::TraceKind::Jit)).and_then(|t| interp.jax.records[t.record].jitted);
    let uncounted = interp.jax.route.arguments_unknown();
    match interp.jax.effects.prints.iter_mut().find(|p| p.site == site) {
        Some(p) => {
            p.runs += 1;
            p.uncounted |= uncounted;
        }
        None => interp.jax.effects.prints.push(PrintSite { site, runs: 1, jitted, inside, uncounted }),
    }
    Ok(())
}

/// `next(it)` inside a caching trace on an iterator made outside it (TL203).
pub fn on_next(interp: &mut Interp, it: &Value) -> PyResult<()> {
    if !matches!(it, Value::Iterator(_)) || interp.in_library() {
        return Ok(());
    }
    if let Some(inside) = interp.jax.outer_mutation(it) {
        let site = interp.site();
        let msg = format!(
            "iterator at trace time: next() advances a Python iterator inside {inside}; it advances once per trace, and the value it returns is frozen into the trace, so later calls reuse it"
        );
        interp.warn(Code::IteratorAtTrace, site, msg, Vec::new());
    }
    Ok(())
}

/// Python-level randomness or time read inside a caching trace (TL204).
pub fn on_impure_call(interp: &mut Interp, what: &str) {
    if interp.in_library() {
        return;
    }
    if let Some(inside) = interp.jax.staging_description() {
        let site = interp.site();
        let msg = format!("frozen value: `{what}` runs once, while {inside} is traced; its result is baked into the trace as a constant and every later call sees the same value");
        interp.warn(Code::FrozenValue, site, msg, Vec::new());
    }
}

/// A PRNG key passed to a consuming `jax.random` function (TL205 on the second use).
pub fn on_key_use(interp: &mut Interp, key: &Rc<Array>, api: &'static str) {
    // A shim's own key handling (flax derives a key per parameter with `fold_in`) is the
    // library's business: neither a use nor a reuse of the user's.
    if interp.in_library() {
        return;
    }
    let site = interp.site();
    let previous = interp.jax.effects.consumed_keys.iter().find(|(k, _, _)| Rc::ptr_eq(k, key)).map(|(_, s, a)| (*s, *a));
    match previous {
        Some((first, first_api)) => {
            if first == site {
                return;
            }
            let msg = format!(
                "key reuse: this PRNG key was already consumed by jax.random.{first_api}; jax.random.{api} with the same key gives correlated (often identical) random numbers. Split the key first: `key, subkey = jax.random.split(key)`"
            );
            let related =
                first.map(|s| vec![(s, format!("the key was first consumed here by jax.random.{first_api}"))]).unwrap_or_default();
            interp.warn(Code::KeyReuse, site, msg, related);
        }
        None => interp.jax.effects.consumed_keys.push((key.clone(), site, api)),
    }
}

/// Final clean-up of warnings made redundant by a stronger finding at the same place:
/// TL211 supersedes TL210 at a call site; a TL103 error supersedes the TL202 mutation that
/// stored the leaked tracer.
pub fn prune(interp: &Interp, diagnostics: &mut Vec<Diagnostic>) {
    let retrace_in_loop: Vec<(std::path::PathBuf, crate::syntax::ast::Span)> =
        diagnostics.iter().filter(|d| d.code == Code::RetraceInLoop).map(|d| (d.path.clone(), d.span)).collect();
    let leak_sites: Vec<Site> = interp
        .jax
        .effects
        .tracer_stores
        .iter()
        .filter(|(_, t, _)| interp.jax.effects.leaked_traces.contains(t))
        .map(|(s, _, _)| *s)
        .collect();
    diagnostics.retain(|d| match d.code {
        Code::Retrace => !retrace_in_loop.contains(&(d.path.clone(), d.span)),
        Code::OuterMutation => !leak_sites.iter().any(|s| interp.path(s.file) == d.path && s.span == d.span),
        _ => true,
    });
}

/// The TL201 diagnostics, once the run is over and call counts are known.
pub fn finish(interp: &Interp) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut seen: HashMap<Site, ()> = HashMap::new();
    for p in &interp.jax.effects.prints {
        if seen.insert(p.site, ()).is_some() {
            continue;
        }
        let calls = p.jitted.map(|j| interp.jax.jitted[j].calls).unwrap_or(0);
        // TensorFlow's graph-time print is tf.print.
        let runtime_print = if p.inside.starts_with("tf.function(") { "tf.print" } else { "jax.debug.print" };
        let times = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let msg = if p.uncounted {
            format!(
                "print at trace time: this print inside {} runs only while the function is traced (how many times is not known: it was traced with arguments tracelens does not know), prints tracers rather than values, and is silent on cached calls; use {runtime_print} to print runtime values",
                p.inside
            )
        } else if calls > 0 {
            format!(
                "print at trace time: this print inside {} ran {} over {}: it runs only while the function is traced, prints tracers rather than values, and is silent on cached calls; use {runtime_print} to print runtime values",
                p.inside,
                times(p.runs, "time"),
                times(calls, "call")
            )
        } else {
            format!(
                "print at trace time: this print inside {} ran {} while tracing: it prints tracers rather than values; use {runtime_print} to print runtime values",
                p.inside,
                times(p.runs, "time")
            )
        };
        out.push(interp.diagnostic(Code::PrintAtTrace, p.site, msg, Vec::new()));
    }
    out
}
