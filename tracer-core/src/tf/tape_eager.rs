//! An eager `tf.GradientTape` (outside any `tf.function`): while it records, every primitive
//! bound on concrete tensors is logged (`jax/eager_log.rs`), and each read of a variable is a
//! fresh tensor (TensorFlow's `ReadVariableOp`) remembered with its variable. `gradient`
//! slices the log from the target back to the sources (those reads, and the tensors given to
//! `watch`) and differentiates it with the JAX model's autodiff, as `tape_gradient.rs` does
//! in a graph. A variable the target does not reach through the log gets `None`, as
//! TensorFlow gives it, when the slice holds no op tracelens does not follow (an opaque op
//! could hide the link). What tracelens cannot vouch for leaves the gradient unknown: a
//! watched tensor the log does not reach, a variable assigned while the tape recorded, a
//! tensor used before it was watched, a nested `tf.function` call, `stop_recording`/`reset`,
//! a gradient taken while another tape records (that tape would record the gradient's ops),
//! a full log.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::slices::Recipe;
use super::tape::{Gradient, Slicing, Tape};
use super::variable::Variable;
use crate::interp::Interp;
use crate::jax::ad;
use crate::jax::array::Array;
use crate::jax::eager_log::{self, Recorded};
use crate::jax::ir::{BinaryPrim, Prim, VarId};

/// What an eager tape recorded.
#[derive(Default)]
pub struct EagerTape {
    /// The equations recorded by segments that ended (`stop`).
    eqns: Vec<Rc<Recorded>>,
    /// Where the running segment starts in the open log.
    start: Option<usize>,
    /// Each variable read while recording: the variable, the tensor read, and its position.
    reads: Vec<(Rc<Variable>, Rc<Array>, usize)>,
    assigned: Vec<Rc<Variable>>,
    /// Something tracelens does not follow happened: no gradient is computed.
    pub unfollowed: bool,
    /// The tape recorded eagerly at least once.
    pub used: bool,
}

fn position(interp: &Interp, e: &EagerTape) -> usize {
    let open = match (e.start, &interp.jax.eager_log) {
        (Some(s), Some(log)) => log.eqns.len().saturating_sub(s),
        _ => 0,
    };
    e.eqns.len() + open
}

/// The tape starts recording (`__enter__` outside any trace).
pub fn start(interp: &mut Interp, tape: &Rc<Tape>) {
    let log = interp.jax.eager_log.get_or_insert_with(Default::default);
    let at = log.eqns.len();
    let mut e = tape.eager.borrow_mut();
    e.start = Some(at);
    e.used = true;
    drop(e);
    interp.tf.recording.push(tape.clone());
}

/// The tape stops recording (`__exit__`): its segment of the log is its own.
pub fn stop(interp: &mut Interp, tape: &Rc<Tape>) {
    let mut e = tape.eager.borrow_mut();
    let Some(start) = e.start.take() else { return };
    if let Some(log) = &interp.jax.eager_log {
        let segment = log.eqns.get(start..).unwrap_or_default().to_vec();
        e.eqns.extend(segment);
        e.unfollowed |= log.full;
    }
    drop(e);
    interp.tf.recording.retain(|t| !Rc::ptr_eq(t, tape));
    if interp.tf.recording.is_empty() {
        interp.jax.eager_log = None;
    }
}

/// A read of `v` outside any trace: a fresh tensor of its value, which each recording tape
/// remembers as a read of `v`.
pub fn read(interp: &mut Interp, v: &Rc<Variable>, value: Rc<Array>) -> Rc<Array> {
    if interp.tf.recording.is_empty() {
        return value;
    }
    let fresh = value.as_jax();
    fresh.tf.set(true);
    for tape in interp.tf.recording.clone() {
        let at = position(interp, &tape.eager.borrow());
        tape.eager.borrow_mut().reads.push((v.clone(), fresh.clone(), at));
    }
    fresh
}

/// `v` is assigned outside any trace: a gradient with respect to it is not followed by the
/// tapes recording now.
pub fn assigned(interp: &Interp, v: &Rc<Variable>) {
    for tape in &interp.tf.recording {
        tape.eager.borrow_mut().assigned.push(v.clone());
    }
}

/// The tape's position now (for `watch`).
pub fn now(interp: &Interp, tape: &Tape) -> usize {
    position(interp, &tape.eager.borrow())
}

/// The gradients of one target with respect to the tape's sources.
pub struct Computed {
    cts: HashMap<usize, Rc<Array>>,
    /// The sources the target reaches through the recorded ops (the target itself included).
    reached: HashSet<usize>,
    sources: HashSet<usize>,
    reads: Vec<(Rc<Variable>, Rc<Array>)>,
    assigned: Vec<Rc<Variable>>,
    /// The sources the target reaches only as the params of `tf.gather`
    /// (`tape_gradient::gathered_only`).
    gathered: HashSet<usize>,
    /// What the target was differentiated on, for an `IndexedSlices` gradient's parts.
    slice: Option<(Rc<crate::jax::ir::Jaxpr>, Vec<Rc<Array>>, Vec<Rc<Array>>)>,
}

impl Computed {
    /// The gradient with respect to `v`.
    pub fn of_variable(&self, interp: &mut Interp, v: &Rc<Variable>) -> Gradient {
        if self.assigned.iter().any(|a| Rc::ptr_eq(a, v)) {
            return Gradient::Unknown;
        }
        let mut reads = self.reads.iter().filter(|(r, _)| Rc::ptr_eq(r, v));
        if !reads.any(|(_, read)| self.reached.contains(&(Rc::as_ptr(read) as usize))) {
            return Gradient::Unconnected;
        }
        let mut sum: Option<Rc<Array>> = None;
        for (_, read) in self.reads.iter().filter(|(r, _)| Rc::ptr_eq(r, v)) {
            let Some(ct) = self.cts.get(&(Rc::as_ptr(read) as usize)).cloned() else { continue };
            sum = Some(match sum {
                None => ct,
                Some(s) => match crate::jax::apply1(interp, Prim::Binary(BinaryPrim::Add), &[s, ct]) {
                    Ok(total) => total,
                    Err(_) => return Gradient::Unknown,
                },
            });
        }
        let aval = v.value.borrow().aval.clone().weak(false);
        known(sum.and_then(|g| ad::with_aval(interp, g, &aval).ok()))
    }

    /// Whether the gradient with respect to `v` is an `IndexedSlices`.
    pub fn sliced_variable(&self, v: &Rc<Variable>) -> Slicing {
        let reached: Vec<usize> = self
            .reads
            .iter()
            .filter(|(r, _)| Rc::ptr_eq(r, v))
            .map(|(_, read)| Rc::as_ptr(read) as usize)
            .filter(|read| self.reached.contains(read))
            .collect();
        if !reached.is_empty() && reached.iter().all(|read| self.gathered.contains(read)) {
            Slicing::Sliced(self.recipe(&reached))
        } else {
            Slicing::Dense
        }
    }

    /// Whether the gradient with respect to a watched tensor is an `IndexedSlices`.
    pub fn sliced_tensor(&self, a: &Rc<Array>) -> Slicing {
        let at = Rc::as_ptr(a) as usize;
        if self.gathered.contains(&at) {
            Slicing::Sliced(self.recipe(&[at]))
        } else {
            Slicing::Dense
        }
    }

    /// How to compute the parts of the gradient with respect to the sources `at`.
    fn recipe(&self, at: &[usize]) -> Option<Rc<Recipe>> {
        let (jaxpr, consts, sources) = self.slice.as_ref()?;
        let positions = at.iter().filter_map(|a| sources.iter().position(|s| Rc::as_ptr(s) as usize == *a)).collect();
        Some(Recipe::new(jaxpr.clone(), consts, sources, positions, None))
    }

    /// The gradient with respect to a watched tensor.
    pub fn of_tensor(&self, interp: &mut Interp, a: &Rc<Array>) -> Gradient {
        let at = Rc::as_ptr(a) as usize;
        if self.sources.contains(&at) && !self.reached.contains(&at) {
            return Gradient::Unconnected;
        }
        let Some(ct) = self.cts.get(&at).cloned() else { return Gradient::Unknown };
        known(ad::with_aval(interp, ct, &a.aval.clone().weak(false)).ok())
    }
}

/// A gradient computed (`Some`), or not known.
fn known(g: Option<Rc<Array>>) -> Gradient {
    match g {
        Some(g) => Gradient::Known(g),
        None => Gradient::Unknown,
    }
}

/// Differentiates `target` with respect to what `tape` recorded eagerly.
pub fn compute(interp: &mut Interp, tape: &Tape, target: &Rc<Array>) -> Option<Computed> {
    // Another tape recording now would record this gradient's ops, which are not logged.
    for t in &interp.tf.recording {
        if !std::ptr::eq(Rc::as_ptr(t), tape) {
            t.eager.borrow_mut().unfollowed = true;
        }
    }
    let e = tape.eager.borrow();
    if e.unfollowed || !e.used || target.is_tracer() {
        return None;
    }
    let mut eqns = e.eqns.clone();
    if let (Some(start), Some(log)) = (e.start, &interp.jax.eager_log) {
        if log.full {
            return None;
        }
        eqns.extend(log.eqns.get(start..).unwrap_or_default().iter().cloned());
    }
    let mut sources: Vec<Rc<Array>> = Vec::new();
    for (_, read, _) in &e.reads {
        if !sources.iter().any(|s| Rc::ptr_eq(s, read)) {
            sources.push(read.clone());
        }
    }
    for (a, at) in tape.watched() {
        // A use before `watch` is not recorded by TensorFlow: not followed.
        let used_before = eqns[..at.min(eqns.len())].iter().any(|r| r.reads(&a));
        if !used_before && !a.is_tracer() && !sources.iter().any(|s| Rc::ptr_eq(s, &a)) {
            sources.push(a);
        }
    }
    let reads = e.reads.iter().map(|(v, r, _)| (v.clone(), r.clone())).collect();
    let assigned = e.assigned.clone();
    drop(e);
    let (jaxpr, consts) = eager_log::slice(&eqns, std::slice::from_ref(target), &sources)?;
    // An op tracelens does not follow could take a source the slice does not show.
    if jaxpr.eqns.iter().any(|e| matches!(e.prim, Prim::Opaque(_))) {
        return None;
    }
    let reached = reached(&jaxpr, &sources);
    let gathered: HashSet<usize> =
        super::tape_gradient::gathered_only(&jaxpr, sources.len()).into_iter().map(|i| Rc::as_ptr(&sources[i]) as usize).collect();
    let saved = interp.jax.eager_log.take();
    let jaxpr = Rc::new(jaxpr);
    let cts = differentiate(interp, jaxpr.clone(), &consts, &sources);
    interp.jax.eager_log = saved;
    let cts = sources.iter().zip(cts?).filter_map(|(s, ct)| Some((Rc::as_ptr(s) as usize, ct?))).collect();
    let ids = sources.iter().map(|s| Rc::as_ptr(s) as usize).collect();
    let slice = (!gathered.is_empty()).then(|| (jaxpr, consts, sources));
    Some(Computed { cts, reached, sources: ids, reads, assigned, gathered, slice })
}

/// The sources (the jaxpr's invars, in order) whose gradient reaches its output (the target):
/// along equations other than `stop_gradient`, through floating values only. TensorFlow's tape
/// passes no gradient through `tf.stop_gradient` or an integer tensor (`tf.cast` to `int32`
/// and back): a source the target reaches only that way gets `None`.
fn reached(jaxpr: &crate::jax::ir::Jaxpr, sources: &[Rc<Array>]) -> HashSet<usize> {
    use crate::jax::ir::Atom;
    let Some(Atom::Var(target)) = jaxpr.outvars.first() else { return HashSet::new() };
    let reaches = |source: VarId| {
        let mut live = HashSet::from([source]);
        for e in jaxpr.eqns.iter().filter(|e| !matches!(e.prim, Prim::StopGradient)) {
            if e.inputs.iter().any(|a| matches!(a, Atom::Var(v) if live.contains(v))) {
                live.extend(e.outputs.iter().filter(|(_, aval)| aval.dtype.is_inexact()).map(|(v, _)| *v));
            }
        }
        live.contains(target)
    };
    let invars = jaxpr.invars.iter().map(|(v, _)| *v);
    sources.iter().zip(invars).filter(|(_, v)| reaches(*v)).map(|(s, _)| Rc::as_ptr(s) as usize).collect()
}

fn differentiate(
    interp: &mut Interp,
    jaxpr: Rc<crate::jax::ir::Jaxpr>,
    consts: &[Rc<Array>],
    sources: &[Rc<Array>],
) -> Option<Vec<Option<Rc<Array>>>> {
    let active = vec![true; sources.len()];
    let lin = ad::linearize(interp, &jaxpr, consts, sources, &active).ok()?;
    let out = lin.outputs.first()?.aval.clone();
    let ones = crate::jax::apply1(interp, Prim::full(1.0, &out), &[]).ok()?;
    ad::pullback(interp, &lin, &[Some(ones)]).ok()
}

impl EagerTape {
    pub fn is_recording(&self) -> bool {
        self.start.is_some()
    }
}

/// A non-persistent tape's record, no longer needed after its one gradient.
pub fn release(tape: &Tape) {
    let mut e = tape.eager.borrow_mut();
    e.eqns = Vec::new();
    e.reads = Vec::new();
    e.unfollowed = true;
}

/// The per-tape state, made with the tape.
pub fn new_state() -> RefCell<EagerTape> {
    RefCell::new(EagerTape::default())
}
