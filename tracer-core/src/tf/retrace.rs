//! Why a `tf.function` call traces again: the closest earlier key and what changed from it,
//! TL210 (retrace) and TL211 (retrace in a loop, or a new `tf.function` made on every
//! iteration), worded as TensorFlow's retracing warning.

use std::rc::Rc;

use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, Site};

use super::function::{Entry, Key, Leaf, TfFunction};
use crate::jax::api::fun_def_site;

/// Why this call traces again, and TL210/TL211 when it is a retrace.
pub(super) fn retrace_cause(interp: &mut Interp, f: &Rc<TfFunction>, key: &Key, call_site: Option<Site>, asked: Asked) -> String {
    let entries: Vec<Entry> = f.entries.borrow().iter().filter(|e| f.owner(&e.key) == f.owner(key)).cloned().collect();
    let Some(closest) = entries.iter().min_by_key(|e| key_diff(&e.key, key).len()) else {
        return first_call(interp, f, call_site);
    };
    let diffs = key_diff(&closest.key, key);
    let reason = if diffs.is_empty() { "its arguments changed".to_string() } else { diffs.join("; ") };
    // A concrete function asked for a new signature is the trace the user wants (an exported
    // signature, a graph to inspect), not a cache miss.
    if asked == Asked::Concrete {
        return reason;
    }
    let traces = entries.len() + 1;
    let mut related = Vec::new();
    if let Some(p) = entries.last().and_then(|e| e.call_site) {
        related.push((p, "previous trace from this call".to_string()));
    }
    if let Some(d) = fun_def_site(&f.fun) {
        related.push((d, format!("{} is defined here", f.name)));
    }
    let advice = "tf.function traces again for every new Python value, tensor shape or dtype it is called with; pass tensors rather than Python values, or give it an input_signature or reduce_retracing=True";
    if entries.iter().filter(|e| e.call_site == call_site).count() >= 2 {
        let msg = format!("retrace in loop: tf.function `{}` triggered tf.function retracing on most calls from this line ({traces} traces so far): {reason}; {advice}", f.name);
        interp.warn(Code::RetraceInLoop, call_site, msg, related);
    } else {
        let msg = format!("retrace: tf.function `{}` triggered tf.function retracing ({traces} traces) because {reason}; {advice}", f.name);
        interp.warn(Code::Retrace, call_site, msg, related);
    }
    reason
}

/// A first trace; TL211 when an earlier pass of a loop that is running made another
/// `tf.function` of the same Python function, which was called too: a new Function (and
/// cache) on every iteration, TensorFlow's retracing cause (1).
fn first_call(interp: &mut Interp, f: &Rc<TfFunction>, call_site: Option<Site>) -> String {
    let same_source = |a: &Value, b: &Value| match (a, b) {
        (Value::Function(x), Value::Function(y)) => Rc::ptr_eq(&x.def, &y.def),
        _ => false,
    };
    let info = &interp.jax.jitted[f.info];
    let this_pass = info.created_in.iter().find(|p| interp.loop_passes.contains(p)).copied();
    let again = this_pass.is_some_and(|(body, pass)| {
        interp.jax.jitted[..f.info]
            .iter()
            .any(|o| o.calls > 0 && same_source(&o.fun, &info.fun) && o.created_in.iter().any(|&(b, p)| b == body && p != pass))
    });
    if again {
        let msg = format!(
            "retrace in loop: a new tf.function of `{}` is made on every loop iteration, so each call traces it again (tf.function retracing cause (1): creating @tf.function repeatedly in a loop); make the tf.function once, outside the loop",
            f.name
        );
        let related = fun_def_site(&f.fun).map(|s| vec![(s, "the function is defined here".to_string())]).unwrap_or_default();
        interp.warn(Code::RetraceInLoop, call_site, msg, related);
        return "a new tf.function is made on every loop iteration".into();
    }
    "first call".into()
}

pub(super) fn key_diff(old: &Key, new: &Key) -> Vec<String> {
    if old.structure != new.structure || old.leaves.len() != new.leaves.len() {
        return vec!["the structure of its arguments changed".into()];
    }
    let mut out = Vec::new();
    for ((path, a), (_, b)) in old.leaves.iter().zip(&new.leaves) {
        if a.covers(b) {
            continue;
        }
        out.push(match (a, b) {
            (Leaf::Python(..), Leaf::Python(..)) => {
                format!("the Python argument {path} changed value: {} -> {}", a.describe(), b.describe())
            }
            (Leaf::Tensor(_, x), Leaf::Tensor(_, y)) if x != y => {
                format!("argument {path} changed dtype: {} -> {}", a.describe(), b.describe())
            }
            (Leaf::Tensor(..), Leaf::Tensor(..)) => format!("argument {path} changed shape: {} -> {}", a.describe(), b.describe()),
            (Leaf::Variable(_, _, i), Leaf::Variable(_, _, j)) if i != j => {
                format!("argument {path} changed which tf.Variable it shares with the other arguments")
            }
            _ => format!("argument {path} changed: {} -> {}", a.describe(), b.describe()),
        });
    }
    out
}

/// What makes a trace: a call of the function, or `get_concrete_function`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Asked {
    Call,
    Concrete,
}
