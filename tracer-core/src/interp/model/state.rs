//! What the interpreter reads and writes of the models' state (`Interp::jax`, `Interp::tf`),
//! which it holds as the types `ModelTypes` names: the trace depth and what a mutation or a
//! store escapes, the containers born in a trace, assigned values, the call spans, the memo
//! being recorded, the dtype config, global reads, and what a function call saves and
//! restores. The compiler resolves those types to the models' own, so a field read compiles
//! anywhere; this module and `model.rs` are the only files of `interp/` that read one (the
//! architecture test holds that line), so the interpreter's needs of the state stay one list.
//! Each function is a field read or an inherent call of the model's state, inlined as before.

use std::rc::Rc;

use super::super::seen::{Shown, SiteKind};
use super::super::value::{Instance, Value};
use super::super::{Interp, Site};
use super::dtypes::DTypeConfig;
use super::effects::GlobalRead;
use super::surface::JaxFn;
use super::JaxState;

/// Active traces, innermost last.
#[inline]
pub(crate) fn trace_depth(interp: &Interp) -> usize {
    interp.jax.trace_depth()
}

/// Active traces whose bodies are cached or run once per call (jit, scan, ...).
#[inline]
pub(crate) fn staging_depth(interp: &Interp) -> usize {
    interp.jax.staging_depth()
}

/// `jit(step)` for the innermost caching trace, if any.
pub(crate) fn staging_description(interp: &Interp) -> Option<String> {
    interp.jax.staging_description()
}

/// A container or iterator was created now (inside a staging trace, it is the trace's).
#[inline]
pub(crate) fn note_born(interp: &mut Interp, v: &Value) {
    interp.jax.note_born(v)
}

/// The trace a mutation of `obj` escapes, if it was created outside the innermost caching trace.
pub(crate) fn outer_mutation(interp: &Interp, obj: &Value) -> Option<String> {
    interp.jax.outer_mutation(obj)
}

/// `value` was stored in `container`: remembered if it is a tracer that outlives its trace (TL103).
#[inline]
pub(crate) fn check_tracer_store(interp: &mut Interp, container: &Value, value: &Value, site: Option<Site>) {
    interp.jax.check_tracer_store(container, value, site)
}

/// What an assignment inside a trace shows, for the trace's hover and inlay hints.
pub(crate) fn record_value(interp: &mut Interp, site: Site, name: &crate::syntax::ast::Name, shown: Shown, kind: SiteKind) {
    interp.jax.record_value(site, name, shown, kind)
}

/// JAX's class of the tracers of a trace, active or ended (`DynamicJaxprTracer`).
pub(crate) fn tracer_class_of(interp: &Interp, trace: u32) -> &'static str {
    interp.jax.tracer_class_of(trace)
}

/// Calls of jitted functions and `tf.function`s so far, traced or not.
#[inline]
pub(crate) fn staged_calls(interp: &Interp) -> u64 {
    interp.jax.staged_calls
}

/// Traces recorded so far (jit, `tf.function`, and the transformations' bodies).
#[inline]
pub(crate) fn traces_recorded(interp: &Interp) -> usize {
    interp.jax.records.len()
}

/// Whether a jit trace is being recorded for the editor's memo of traces.
#[inline]
pub(crate) fn memo_recording(interp: &Interp) -> bool {
    interp.jax.memo_recording.is_some()
}

/// Whether the traces started now have arguments the interpreter does not know.
pub(crate) fn arguments_unknown(interp: &Interp) -> bool {
    interp.jax.route.arguments_unknown()
}

/// The dtype config (`jax_enable_x64`).
#[inline]
pub(crate) fn dtype_config(interp: &Interp) -> DTypeConfig {
    interp.jax.config
}

/// A call is being evaluated: its file, call expression span and callee span (innermost last).
#[inline]
pub(crate) fn push_call_span(interp: &mut Interp, span: (super::super::FileId, crate::syntax::ast::Span, crate::syntax::ast::Span)) {
    interp.jax.call_spans.push(span)
}

/// The innermost call being evaluated ended.
#[inline]
pub(crate) fn pop_call_span(interp: &mut Interp) {
    interp.jax.call_spans.pop();
}

/// The children the user's flatten function last gave for `inst`, a registered pytree node.
pub(crate) fn custom_children<'i>(interp: &'i Interp, inst: &Rc<Instance>) -> Option<&'i Vec<Value>> {
    interp.jax.custom_children.get(&(Rc::as_ptr(inst) as usize)).map(|(_, children)| children)
}

/// A global read inside a caching trace.
pub(crate) fn note_global_read(interp: &mut Interp, read: GlobalRead) {
    interp.jax.effects.global_reads.push(read)
}

/// The global reads of `name` of the module `module` that traces made.
pub(crate) fn global_reads_of(interp: &Interp, module: usize, name: &str) -> Vec<GlobalRead> {
    interp.jax.effects.global_reads.iter().filter(|r| r.module == module && r.name == name).cloned().collect()
}

/// What a call of a user's function saves of the JAX model's state and restores after it:
/// the API call its equations are stamped with and the depth of recorded statements.
pub(crate) struct CallSaved {
    api: Option<JaxFn>,
    depth: u32,
}

/// A user's function starts: equations bound in it belong to no enclosing API call (a scan
/// body's `jnp.sin` is the user's, not `lax.scan`'s), and its statements are recorded anew.
#[inline]
pub(crate) fn enter_user_function(interp: &mut Interp) -> CallSaved {
    CallSaved { api: interp.jax.current_api.take(), depth: std::mem::take(&mut interp.jax.log.depth) }
}

/// The user's function `enter_user_function` started ended.
#[inline]
pub(crate) fn leave_user_function(interp: &mut Interp, saved: CallSaved) {
    interp.jax.current_api = saved.api;
    interp.jax.log.depth = saved.depth;
}

/// Runs `f` as NumPy computes: at once (inside a `jit` too) and with its 64-bit dtypes.
pub(crate) fn numpy_eager<T>(interp: &mut Interp, f: impl FnOnce(&mut Interp) -> T) -> T {
    let saved = interp.jax.config;
    let saved_eager = interp.jax.numpy_eager;
    interp.jax.config.enable_x64 = true;
    interp.jax.numpy_eager = true;
    let result = f(interp);
    interp.jax.config = saved;
    interp.jax.numpy_eager = saved_eager;
    result
}

/// The JAX model's state, taken out to be freed with an analysis' leftovers.
pub(crate) fn take_jax(interp: &mut Interp) -> JaxState {
    std::mem::take(&mut interp.jax)
}

/// Whether a `tf.function` trace is being run.
#[inline]
pub(crate) fn in_tf_function(interp: &Interp) -> bool {
    !interp.tf.active.is_empty()
}

/// Whether AutoGraph has `return`s pending in a branch of a converted `if`.
#[inline]
pub(crate) fn autograph_returns_pending(interp: &Interp) -> bool {
    interp.tf.autograph.has_pending_returns()
}

/// Whether a `tf.Variable` was created since the last store (and forgets it): the store that
/// follows is its own, no mutation of an outer object.
#[inline]
pub(crate) fn take_variable_just_created(interp: &mut Interp) -> bool {
    std::mem::take(&mut interp.tf.variable_just_created)
}
