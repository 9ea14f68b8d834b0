//! Primitives bound on concrete arrays, recorded while a front end asks for it (TensorFlow's
//! `GradientTape` outside a `tf.function`, which records the eager ops run under it): each
//! with its inputs (kept alive) and its outputs (held weakly, so that recording changes no
//! array's sharing; the allocation stays, so an identity is never reused while recorded).
//! [`slice`] turns the equations a target depends on into a jaxpr that `ad.rs` can
//! linearize, cut at the sources. A budget bounds the log: past it, it is `full` and a
//! derivative from it is not computed.

use std::collections::{HashMap, HashSet};
use std::rc::{Rc, Weak};

use super::array::Array;
use super::aval::Aval;
use super::ir::{Atom, Eqn, Jaxpr, Prim, VarId};
use crate::interp::Interp;

/// Equations recorded at most (a training step of a few thousand eager ops fits many times).
const MAX_RECORDED: usize = 100_000;

pub struct Recorded {
    prim: Prim,
    /// A primitive with bodies (a jitted call, control flow) is recorded so that a target
    /// depending on it is refused, not followed.
    has_bodies: bool,
    inputs: Vec<Rc<Array>>,
    outputs: Vec<(Weak<Array>, Aval)>,
}

#[derive(Default)]
pub struct EagerLog {
    pub eqns: Vec<Rc<Recorded>>,
    pub full: bool,
}

/// Records `prim` bound on concrete `inputs` to `outs` when a log is open.
pub fn record(interp: &mut Interp, prim: Prim, has_bodies: bool, inputs: &[Rc<Array>], outs: &[Rc<Array>]) {
    let Some(log) = interp.jax.eager_log.as_mut() else { return };
    if log.eqns.len() >= MAX_RECORDED {
        log.full = true;
        return;
    }
    let outputs = outs.iter().map(|o| (Rc::downgrade(o), o.aval.clone())).collect();
    log.eqns.push(Rc::new(Recorded { prim, has_bodies, inputs: inputs.to_vec(), outputs }));
}

impl Recorded {
    /// Whether `a` is one of the equation's inputs.
    pub fn reads(&self, a: &Rc<Array>) -> bool {
        self.inputs.iter().any(|i| Rc::ptr_eq(i, a))
    }
}

fn id(a: &Rc<Array>) -> usize {
    Rc::as_ptr(a) as usize
}

/// The equations of `eqns` that `targets` depend on, cut at `sources`, as a jaxpr whose
/// constvars are the other values they read (with those values) and whose invars are the
/// sources. `None` when a kept equation has bodies, or a target is neither computed by the
/// equations nor a source (it does not depend on them).
pub fn slice(eqns: &[Rc<Recorded>], targets: &[Rc<Array>], sources: &[Rc<Array>]) -> Option<(Jaxpr, Vec<Rc<Array>>)> {
    let cut: HashSet<usize> = sources.iter().map(id).collect();
    let mut live: HashSet<usize> = targets.iter().map(id).collect();
    let mut kept = Vec::new();
    for e in eqns.iter().rev() {
        let outs: Vec<usize> = e.outputs.iter().map(|(w, _)| w.as_ptr() as usize).collect();
        if !outs.iter().any(|o| live.contains(o)) || outs.iter().any(|o| cut.contains(o)) {
            continue;
        }
        if e.has_bodies {
            return None;
        }
        kept.push(e.clone());
        live.extend(e.inputs.iter().map(id));
    }
    kept.reverse();
    let mut vars: HashMap<usize, VarId> = HashMap::new();
    let mut next: VarId = 0;
    let fresh = |next: &mut VarId| {
        let v = *next;
        *next += 1;
        v
    };
    let invars: Vec<(VarId, Aval)> = sources
        .iter()
        .map(|s| {
            let v = fresh(&mut next);
            vars.insert(id(s), v);
            (v, s.aval.clone())
        })
        .collect();
    let (mut constvars, mut consts) = (Vec::new(), Vec::new());
    let mut out_eqns = Vec::with_capacity(kept.len());
    for e in &kept {
        let mut inputs = Vec::with_capacity(e.inputs.len());
        for i in &e.inputs {
            let v = match vars.get(&id(i)) {
                Some(v) => *v,
                None => {
                    let v = fresh(&mut next);
                    vars.insert(id(i), v);
                    constvars.push((v, i.aval.clone()));
                    consts.push(i.clone());
                    v
                }
            };
            inputs.push(Atom::Var(v));
        }
        let outputs = e
            .outputs
            .iter()
            .map(|(w, aval)| {
                let v = fresh(&mut next);
                vars.insert(w.as_ptr() as usize, v);
                (v, aval.clone())
            })
            .collect();
        out_eqns.push(Eqn { prim: e.prim.clone(), inputs, outputs, site: None, bodies: Vec::new(), api: None });
    }
    let outvars = targets.iter().map(|t| vars.get(&id(t)).map(|v| Atom::Var(*v))).collect::<Option<Vec<_>>>()?;
    Some((Jaxpr { constvars, invars, eqns: out_eqns, outvars, var_avals: Vec::new() }, consts))
}
