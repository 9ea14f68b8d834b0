//! The state of values mode (`tracelens run`, `check --values`) the interpreter holds
//! (`Interp::values`): the Python loops being run, which it keeps itself, and what the JAX
//! model's `numerics.rs` notes there as it computes (origins of NaN/Inf values, replayed debug
//! prints, a pending FloatingPointError). `numerics.rs` re-exports these at their old paths.

use std::collections::HashMap;
use std::rc::{Rc, Weak};

use super::model::array::Array;
use super::{Interp, Site};

/// The state of values mode, owned by the interpreter (`Interp::values`).
#[derive(Default)]
pub struct ValuesState {
    /// What tracelens has to say while running: values it did not compute, and why.
    pub notes: Vec<String>,
    /// Origins of the NaN/Inf values held by computed arrays, by array identity. The `Weak`
    /// keeps the allocation, so an identity is never reused while its entry lives.
    pub(crate) origins: HashMap<usize, (Weak<Array>, Rc<NonFinite>)>,
    pub(crate) next_seq: u64,
    /// TL301 is reported once per run: for the first observed value holding a NaN or Inf.
    pub(crate) reported: bool,
    /// The Python `for`/`while` loops being run, innermost last: (loop site, iteration, 1-based).
    pub loops: Vec<(Site, u64)>,
    /// `jax.config.update("jax_debug_nans", True)` / `"jax_debug_infs"`: the first operation
    /// whose output holds a NaN (Inf) raises FloatingPointError, as in JAX.
    pub debug_nans: bool,
    pub debug_infs: bool,
    /// The arguments of each `jax.debug.print` inside a trace, by its line, replayed with
    /// concrete values when the traced function is evaluated.
    pub(crate) debug_prints: HashMap<Site, (Vec<crate::interp::Value>, crate::interp::call::Kwargs, Option<PrintReplay>)>,
    /// The FloatingPointError to raise once the current evaluation returns: its message, the
    /// operation's line, and the jitted function it ran in.
    pub(crate) pending_raise: Option<(String, Option<Site>, Option<String>)>,
}

/// Where a NaN or Inf was first produced.
#[derive(Debug)]
pub struct NonFinite {
    pub(crate) seq: u64,
    pub(crate) site: Site,
    /// JAX's primitive name (`log`, `div`, `exp`).
    pub(crate) op: String,
    /// `nan` or `inf`, as `jax_debug_nans` words it.
    pub(crate) what: &'static str,
    /// How many of the output's elements are NaN / Inf, and its aval.
    pub(crate) counts: (usize, usize, usize),
    pub(crate) output: String,
    /// One line per input: aval, min, max, NaN and Inf counts.
    pub(crate) inputs: Vec<String>,
    /// The call that fed the operation: the jitted function and the loop iteration.
    pub(crate) context: String,
    /// When the first non-finite value was an Inf: where it later became NaN.
    pub(crate) nan_at: Option<(Site, String)>,
}

impl ValuesState {
    pub(crate) fn origin_of(&self, a: &Rc<Array>) -> Option<Rc<NonFinite>> {
        let (weak, origin) = self.origins.get(&(Rc::as_ptr(a) as usize))?;
        (weak.upgrade().is_some_and(|w| Rc::ptr_eq(&w, a))).then(|| origin.clone())
    }
}

/// Values mode: a Python loop at `site` starts (`iteration` 0) or moves to its next iteration.
pub fn loop_enter(interp: &mut Interp, site: Site) {
    if let Some(v) = interp.values.as_mut() {
        v.loops.push((site, 0));
    }
}

pub fn loop_next(interp: &mut Interp) {
    if let Some((_, n)) = interp.values.as_mut().and_then(|v| v.loops.last_mut()) {
        *n += 1;
    }
}

pub fn loop_exit(interp: &mut Interp) {
    if let Some(v) = interp.values.as_mut() {
        v.loops.pop();
    }
}

/// How a front end's own print op inside a trace prints when the graph runs (`tf.print`):
/// given the traced call's arguments and the concrete values of the tensors among them.
pub type PrintReplay = fn(&mut Interp, &[crate::interp::Value], &crate::interp::call::Kwargs, &[Rc<Array>]);
