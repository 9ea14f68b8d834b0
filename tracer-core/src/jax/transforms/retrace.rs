//! Why a jitted function is traced again (TL210, TL211): the difference between a new cache
//! key and the closest earlier one, worded like JAX's `explain_cache_misses`.

use super::jit::{CacheKey, Jitted};
use super::pytrees::TreeDef;
use super::trace::unwrapped;
use crate::diagnostics::Code;
use crate::interp::value::{HashKey, Value};
use crate::interp::{Interp, Site};
use std::rc::Rc;

/// Why a jitted function is traced again: the difference to the closest earlier cache key,
/// worded like JAX's explain_cache_misses. Reports TL210/TL211 as a side effect.
pub(super) fn retrace_cause(interp: &mut Interp, j: &Rc<Jitted>, key: &CacheKey, call_site: Option<Site>) -> String {
    let info = interp.jax.jitted[j.info].clone();
    if info.entries.is_empty() {
        // A function never seen; but another defined on the same line was: a new function
        // object per loop iteration.
        // JAX: "seen another function defined on the same line": the same `def`/`lambda`
        // evaluated again, i.e. a new function object for the same source.
        // Wrappers (a shim's `nnx.jit`) count as the function they wrap, as JAX's source info does.
        let same_source =
            |a: &Value, b: &Value| match (&unwrapped(a).unwrap_or_else(|| a.clone()), &unwrapped(b).unwrap_or_else(|| b.clone())) {
                (Value::Function(x), Value::Function(y)) => !Rc::ptr_eq(x, y) && Rc::ptr_eq(&x.def, &y.def),
                (Value::BoundMethod(x), Value::BoundMethod(y)) => match (&x.1, &y.1) {
                    (Value::Function(f), Value::Function(g)) => !Rc::ptr_eq(x, y) && Rc::ptr_eq(&f.def, &g.def),
                    _ => false,
                },
                _ => false,
            };
        // Only when this one was made in the pass of a loop that is running, the other in an
        // earlier pass of that loop, and the same line called it: a factory (`make_step(opt)`)
        // called twice, or once per call of a function that loops, makes functions of one
        // source that each have their own cache and first call.
        let run = interp.jax.entry_run;
        let this_pass = info.created_in.iter().find(|p| interp.loop_passes.contains(p)).copied();
        let same_line = this_pass.is_some_and(|(body, pass)| {
            interp.jax.jitted.iter().enumerate().any(|(i, o)| {
                i != j.info
                    && o.created_in.iter().any(|&(b, p)| b == body && p != pass)
                    && o.entries.iter().any(|e| e.entry_run == run && e.call_site == call_site)
                    && same_source(&o.fun, &info.fun)
            })
        });
        if same_line {
            let line = info.def_site.map(|s| interp.line_of(s)).unwrap_or(0);
            let msg = format!(
                "retrace in loop: a new function object `{}` is created on every loop iteration at line {line}, so jit never finds it in its cache and traces it again on every call; define (and jit) it once, outside the loop",
                j.name
            );
            let related = info.def_site.map(|s| vec![(s, "the function is defined here".to_string())]).unwrap_or_default();
            interp.warn(Code::RetraceInLoop, call_site, msg, related);
            return format!("a new function object is created on every loop iteration at line {line}");
        }
        return "first call".into();
    }
    // The closest previous key of this run (`entry_run`), else of any: fewest differing leaves.
    let run = interp.jax.entry_run;
    let this_run = info.entries.iter().any(|e| e.entry_run == run);
    let mut best: Option<(usize, Vec<String>)> = None;
    for e in info.entries.iter().filter(|e| !this_run || e.entry_run == run) {
        let diffs = key_diff(&e.key, key, &j.params);
        if best.as_ref().map(|(n, _)| diffs.len() < *n).unwrap_or(true) {
            best = Some((diffs.len(), diffs));
        }
    }
    let reasons = best.map(|(_, d)| d).unwrap_or_default();
    let reason = if reasons.is_empty() { "cache miss explanation unavailable".to_string() } else { reasons.join("; ") };
    let prev = info.entries.last().and_then(|e| e.call_site);
    let mut related = Vec::new();
    if let Some(p) = prev {
        related.push((p, "previous trace from this call".to_string()));
    }
    if let Some(d) = info.def_site {
        related.push((d, format!("{} is defined here", j.name)));
    }
    let traces = info.entries.len() + 1;
    if !this_run {
        return reason;
    }
    let many_here = interp.jax.jitted[j.info].entries.iter().filter(|e| e.call_site == call_site).count() >= 2;
    if many_here {
        let msg =
            format!("retrace in loop: jit({}) is traced again on most calls from this line ({traces} traces so far): {reason}", j.name);
        interp.warn(Code::RetraceInLoop, call_site, msg, related);
    } else {
        let msg = format!("retrace: jit({}) is traced again ({traces} traces) because {reason}", j.name);
        interp.warn(Code::Retrace, call_site, msg, related);
    }
    reason
}

fn key_diff(old: &CacheKey, new: &CacheKey, params: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if old.x64 != new.x64 {
        out.push("jax_enable_x64 changed".into());
    }
    for (n, h, shown) in &new.statics {
        match old.statics.iter().find(|(m, _, _)| m == n) {
            Some((_, oh, oshown)) if oh != h => out.push(format!("static argument {n} changed value: {oshown} -> {shown}")),
            None => out.push(format!("static argument {n} is new")),
            _ => {}
        }
    }
    if old.tree != new.tree {
        // A static field of a pytree node (an equinox Module's `field(static=True)`, a
        // `register_dataclass` meta field) is part of the structure: name it.
        let mut path = String::new();
        match static_field_diff(&old.tree, &new.tree, params, &mut path) {
            Some(diff) => out.push(diff),
            None => out.push(format!("the pytree structure of the arguments changed: {} -> {}", old.tree.describe(), new.tree.describe())),
        }
        return out;
    }
    for ((path, a), (_, b)) in old.leaves.iter().zip(&new.leaves) {
        if a == b {
            continue;
        }
        let what = if a.shape != b.shape {
            "shape"
        } else if a.dtype != b.dtype {
            "dtype"
        } else {
            "weak type"
        };
        out.push(format!("argument {path} changed {what}: {} -> {}", a.short(), b.short()));
    }
    out
}

/// The first static field whose value differs between two argument trees of the same shape,
/// worded like a static argument's change (`static field model.act changed value: ...`).
fn static_field_diff(old: &TreeDef, new: &TreeDef, params: &[String], path: &mut String) -> Option<String> {
    let shown = |k: &HashKey| match k {
        HashKey::Int(i) => i.to_string(),
        HashKey::Str(s) => format!("'{s}'"),
        HashKey::None => "None".into(),
        HashKey::Float(bits) => f64::from_bits(*bits).to_string(),
        _ => "another value".into(),
    };
    let base = path.len();
    let top = path.is_empty();
    let result = match (old, new) {
        (TreeDef::Tuple(a), TreeDef::Tuple(b)) | (TreeDef::List(a), TreeDef::List(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| {
                path.truncate(base);
                match params.get(i).filter(|_| top) {
                    Some(name) => path.push_str(name),
                    None => path.push_str(&format!("[{i}]")),
                }
                static_field_diff(x, y, &[], path)
            })
        }
        (TreeDef::Dict(a), TreeDef::Dict(b)) if a.len() == b.len() => a.iter().zip(b).find_map(|((ka, x), (kb, y))| {
            path.truncate(base);
            crate::interp::pytree_nodes::Key::of_dict_key(ka).push_onto(path);
            if ka != kb {
                return None;
            }
            static_field_diff(x, y, &[], path)
        }),
        (TreeDef::Node { class: ca, meta: ma, children: a, names }, TreeDef::Node { class: cb, meta: mb, children: b, .. })
            if ca == cb && a.len() == b.len() && ma.len() == mb.len() =>
        {
            let changed = ma.iter().zip(mb).find(|(x, y)| x != y && x.name == y.name && !x.name.is_empty());
            match changed {
                Some((x, y)) => Some(format!("static field {path}.{} changed value: {} -> {}", x.name, shown(&x.key), shown(&y.key))),
                None => a.iter().zip(b).enumerate().find_map(|(i, (x, y))| {
                    path.truncate(base);
                    match names.get(i) {
                        Some(n) => path.push_str(&super::pytrees::key_suffix(n)),
                        None => path.push_str(&format!("[{i}]")),
                    }
                    static_field_diff(x, y, &[], path)
                }),
            }
        }
        _ => None,
    };
    path.truncate(base);
    result
}
