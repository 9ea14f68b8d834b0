//! JAX's error messages, worded as JAX 0.10.2 words them (shared/reference §2–3), with the
//! origin sentence that names the traced function and the arguments a value depends on.

use super::array::Array;
use super::ir::{Atom, Jaxpr, VarId};
use crate::diagnostics::Code;
use crate::interp::{Flow, Interp};

/// `traced array with shape float32[3]`
pub fn traced_array(a: &Array) -> String {
    format!("traced array with shape {}", a.aval.long())
}

/// JAX's `_origin_msg`: which function was being traced and which arguments the value
/// depends on.
pub fn origin(interp: &Interp, a: &Array) -> String {
    let Some(t) = a.tracer() else {
        return String::new();
    };
    let Some(frame) = interp.jax.traces.iter().find(|f| f.id == t.trace) else {
        return String::new();
    };
    if matches!(frame.kind, super::TraceKind::Vmap) {
        return String::new();
    }
    let at = frame.def_site.map(|s| interp.describe_site(s)).unwrap_or_default();
    // JAX names pmap's own wrapper there (`_fun ... for shard_map`); the user's function is the useful name.
    let purpose = interp.jax.records.get(frame.record).and_then(|r| r.traced_for.filter(|t| *t == "pmap")).unwrap_or(frame.kind.label());
    let mut head = format!("The error occurred while tracing the function {} at {} for {purpose}.", frame.fn_name, at);
    let mut deps = depends_on(&frame.jaxpr, t.var);
    if !frame.kind.is_staging() {
        // Under grad only the differentiated arguments are tracers (`taint.rs`).
        let active: Vec<VarId> =
            interp.jax.input_keep.iter().filter_map(|i| i.tracer()).filter(|i| i.trace == t.trace && i.active).map(|i| i.var).collect();
        deps.retain(|v| active.contains(v));
    }
    let mut names: Vec<String> = Vec::new();
    for (var, arg) in &frame.invar_args {
        if deps.contains(var) {
            if let Some(n) = frame.arg_names.get(*arg) {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
    }
    let tail = match names.len() {
        0 => String::new(),
        1 => format!(" This concrete value was not available in Python because it depends on the value of the argument {}.", names[0]),
        2 => format!(
            " This concrete value was not available in Python because it depends on the values of the arguments {} and {}.",
            names[0], names[1]
        ),
        _ => format!(
            " This concrete value was not available in Python because it depends on the values of the arguments {}, and {}.",
            names[..names.len() - 1].join(", "),
            names[names.len() - 1]
        ),
    };
    head.push_str(&tail);
    head
}

/// The input variables `var` depends on, following the equations backwards.
pub fn depends_on(jaxpr: &Jaxpr, var: VarId) -> Vec<VarId> {
    let mut wanted = vec![var];
    for eqn in jaxpr.eqns.iter().rev() {
        if eqn.outputs.iter().any(|(v, _)| wanted.contains(v)) {
            for i in &eqn.inputs {
                if let Atom::Var(v) = i {
                    if !wanted.contains(v) {
                        wanted.push(*v);
                    }
                }
            }
        }
    }
    jaxpr.invars.iter().map(|(v, _)| *v).filter(|v| wanted.contains(v)).collect()
}

pub fn leaked_tracer(interp: &Interp, a: &Array) -> Flow {
    // JAX names the tracer after the transformation that made it, and says where a staged
    // value was created; a tracer of `grad`, `jvp` or `vmap` carries no such record.
    let ended = a.tracer().and_then(|t| interp.jax.ended(t.trace));
    let tracer = ended.map_or("DynamicJaxprTracer", |(class, _)| class);
    let staged = tracer == "DynamicJaxprTracer";
    let mut msg = format!(
        "Encountered an unexpected tracer. A function transformed by JAX had a side effect, allowing for a reference to an \
         intermediate value with type {} wrapped in a {tracer} to escape the scope of the transformation.\n\
         JAX transformations require that functions explicitly return their outputs, and disallow saving intermediate values to global state.",
        a.aval.long()
    );
    if let Some((_, record)) = ended {
        if let (Some(label), Some(def)) = (record.traced_for, record.def_site) {
            msg.push_str(&format!(
                "\nThe function being traced when the value leaked was {} at {} traced for {label}.",
                record.fn_name,
                interp.describe_site(def)
            ));
        }
    }
    if staged {
        let created = a.origin.map(|s| interp.describe_site(s)).unwrap_or_default();
        msg.push_str(&format!("\nThe leaked intermediate value was created on line {created}."));
    }
    // Where it escaped: the first store of this very tracer somewhere that outlives its trace.
    let address = a as *const Array as usize;
    let escaped = interp.jax.effects.tracer_stores.iter().find(|(_, _, p)| *p == address).map(|(s, _, _)| *s);
    let mut flow = interp.raise("UnexpectedTracerError", Code::LeakedTracer, msg);
    if let Flow::Raise(exc) = &mut flow {
        if let Some(site) = escaped {
            exc.related.push((site, crate::diagnostics::LEAK_ESCAPE_NOTE.into()));
        }
        if let Some(origin) = a.origin {
            exc.related.push((origin, "the leaked value was created here, inside a transformation".into()));
        }
    }
    flow
}
