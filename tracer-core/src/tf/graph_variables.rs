//! `tf.Variable`s inside a `tf.function` graph, followed so that calling the graph computes
//! what TensorFlow computes: a read of a variable is a `ReadVariableOp` equation of the trace,
//! and an `assign`/`assign_add`/`assign_sub` records the variable's new value in the graph
//! (a later read in the same graph sees it). When the trace ends, the graph is rewritten for
//! calls: each variable read becomes an input (the variable's value at call time) and each
//! variable's last assigned value an extra output, applied to the variable after the call.
//! A read or write tracelens cannot place in the function's own graph (inside a nested body
//! traced first there, or a trace whose arguments are unknown) makes the graph *unfollowed*:
//! its reads are unknown and every call leaves the variables it assigns unknown, never wrong.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::variable::Variable;
use crate::interp::Interp;
use crate::jax::array::Array;
use crate::jax::ir::{Atom, Jaxpr, Prim, VarId};

#[derive(Default)]
pub struct State {
    /// The `ReadVariableOp` results of running traces: (trace id, variable) -> the variable.
    reads: HashMap<(u32, VarId), Rc<Variable>>,
    /// The values variables were assigned in each running trace, in order.
    assigned: HashMap<u32, Vec<Assigned>>,
    /// Traces with a variable read or write tracelens does not follow.
    unfollowed: HashSet<u32>,
}

struct Assigned {
    var: Rc<Variable>,
    value: Rc<Array>,
}

/// A finished graph's variables: what a call reads and writes.
#[derive(Debug)]
pub struct GraphVariables {
    /// The graph with the reads as extra inputs and the writes as extra outputs (`None` when
    /// the graph is unfollowed).
    pub jaxpr: Option<Rc<Jaxpr>>,
    reads: Vec<Rc<Variable>>,
    writes: Vec<Rc<Variable>>,
}

/// The stack position and id of the trace a variable op of the running `tf.function` belongs
/// to, when tracelens follows it there: the top trace is that function's own trace.
pub fn own_frame(interp: &Interp) -> Option<(usize, u32)> {
    let active = interp.tf.active.last()?;
    active.key.as_ref()?;
    let pos = interp.jax.traces.len().checked_sub(1)?;
    let frame = &interp.jax.traces[pos];
    let own = interp.jax.records[frame.record].traced_for == Some(super::function::TRACED_FOR)
        && interp.jax.records[frame.record].jitted == Some(active.function.info);
    (own && !interp.tf.variables.unfollowed.contains(&frame.id)).then_some((pos, frame.id))
}

/// The id of the innermost `tf.function` trace.
fn innermost(interp: &Interp) -> Option<u32> {
    let tf_trace = interp.jax.traces.iter().rev().find(|t| interp.jax.records[t.record].traced_for == Some(super::function::TRACED_FOR));
    tf_trace.map(|t| t.id)
}

/// The innermost `tf.function` trace is not followed any more.
fn give_up(interp: &mut Interp) {
    if let Some(id) = innermost(interp) {
        interp.tf.variables.unfollowed.insert(id);
    }
}

/// A read of `v` in a graph: the value last assigned in this graph, else a new
/// `ReadVariableOp`. `None` when the read is not followed (the caller binds an opaque read).
pub fn read(interp: &mut Interp, v: &Rc<Variable>) -> Option<Rc<Array>> {
    let Some((_, id)) = own_frame(interp) else {
        give_up(interp);
        return None;
    };
    if let Some(a) = interp.tf.variables.assigned.get(&id).and_then(|all| all.iter().rev().find(|a| Rc::ptr_eq(&a.var, v))) {
        return Some(a.value.clone());
    }
    let aval = v.value.borrow().aval.clone();
    let t = crate::jax::apply1(interp, Prim::opaque("ReadVariableOp", aval), &[]).ok()?;
    match t.tracer() {
        Some(tr) if tr.trace == id => {
            interp.tf.variables.reads.insert((id, tr.var), v.clone());
        }
        _ => {
            give_up(interp);
            return None;
        }
    }
    Some(super::tensor::mark_array(t))
}

/// `v` is assigned `value` in a graph. `false` when tracelens does not follow it (the caller
/// forgets the variable's value).
pub fn assign(interp: &mut Interp, v: &Rc<Variable>, value: Rc<Array>) -> bool {
    let id = match own_frame(interp) {
        Some((_, id)) if !value.tracer().is_some_and(|t| t.trace != id) => id,
        _ => {
            // Not followed: the graph's calls leave the variable unknown (`finish`).
            give_up(interp);
            if let Some(id) = innermost(interp) {
                let unknown = Array::unknown(value.aval.clone(), "a variable assigned in a graph tracelens does not follow");
                interp.tf.variables.assigned.entry(id).or_default().push(Assigned { var: v.clone(), value: unknown });
            }
            return false;
        }
    };
    interp.tf.variables.assigned.entry(id).or_default().push(Assigned { var: v.clone(), value });
    true
}

/// Whether `v` was assigned in trace `id` so far.
pub fn assigned_in(interp: &Interp, id: u32, v: &Rc<Variable>) -> bool {
    interp.tf.variables.assigned.get(&id).is_some_and(|all| all.iter().any(|a| Rc::ptr_eq(&a.var, v)))
}

/// Whether trace `id`'s variable ops are all followed.
pub fn followed(interp: &Interp, id: u32) -> bool {
    !interp.tf.variables.unfollowed.contains(&id)
}

/// The variable `var` of trace `id` is a `ReadVariableOp` of, if it is one.
pub fn read_of(interp: &Interp, id: u32, var: VarId) -> Option<Rc<Variable>> {
    interp.tf.variables.reads.get(&(id, var)).cloned()
}

/// A running trace raised or ended unknown: every variable it assigned is unknown now.
pub fn abandon(interp: &mut Interp, id: u32) {
    for a in take(interp, id).1 {
        super::variable::forget(&a.var);
    }
}

fn take(interp: &mut Interp, id: u32) -> (Vec<(VarId, Rc<Variable>)>, Vec<Assigned>, bool) {
    let state = &mut interp.tf.variables;
    let mut reads: Vec<(VarId, Rc<Variable>)> = Vec::new();
    state.reads.retain(|(t, var), v| {
        if *t == id {
            reads.push((*var, v.clone()));
        }
        *t != id
    });
    reads.sort_by_key(|(var, _)| *var);
    let assigned = state.assigned.remove(&id).unwrap_or_default();
    let unfollowed = state.unfollowed.remove(&id);
    (reads, assigned, unfollowed)
}

/// Trace `id` ended with `jaxpr` (its closed-over values `consts`): the graph a call runs.
/// `None` when it neither reads nor writes a variable.
pub fn finish(interp: &mut Interp, id: u32, jaxpr: &Jaxpr, consts: &mut Vec<Rc<Array>>) -> Option<Rc<GraphVariables>> {
    let (reads, assigned, unfollowed) = take(interp, id);
    if reads.is_empty() && assigned.is_empty() && !unfollowed {
        return None;
    }
    let mut writes: Vec<Rc<Variable>> = Vec::new();
    for a in &assigned {
        if !writes.iter().any(|w| Rc::ptr_eq(w, &a.var)) {
            writes.push(a.var.clone());
        }
    }
    if unfollowed {
        return Some(Rc::new(GraphVariables { jaxpr: None, reads: Vec::new(), writes }));
    }
    let mut next = jaxpr
        .constvars
        .iter()
        .chain(&jaxpr.invars)
        .map(|(v, _)| *v)
        .chain(jaxpr.eqns.iter().flat_map(|e| e.outputs.iter().map(|(v, _)| *v)))
        .max()
        .map_or(0, |m| m + 1);
    let mut out = jaxpr.clone();
    // Each variable read becomes one input; its ReadVariableOp equations are dropped.
    let mut rename: HashMap<VarId, VarId> = HashMap::new();
    let mut inputs: Vec<Rc<Variable>> = Vec::new();
    for (var, v) in &reads {
        let i = match inputs.iter().position(|x| Rc::ptr_eq(x, v)) {
            Some(i) => i,
            None => {
                inputs.push(v.clone());
                out.invars.push((next, v.value.borrow().aval.clone()));
                next += 1;
                inputs.len() - 1
            }
        };
        rename.insert(*var, out.invars[jaxpr.invars.len() + i].0);
    }
    out.eqns.retain(|e| !e.outputs.iter().any(|(v, _)| rename.contains_key(v)));
    let renamed = |a: &Atom| match a {
        Atom::Var(v) => Atom::Var(*rename.get(v).unwrap_or(v)),
        other => other.clone(),
    };
    for e in &mut out.eqns {
        e.inputs = e.inputs.iter().map(renamed).collect();
    }
    out.outvars = out.outvars.iter().map(renamed).collect();
    // Each written variable's last value becomes an output.
    let mut extra = Vec::new();
    for w in &writes {
        let last = assigned.iter().rev().find(|a| Rc::ptr_eq(&a.var, w))?;
        let atom = match last.value.tracer() {
            Some(t) if t.trace == id => renamed(&Atom::Var(t.var)),
            Some(_) => return Some(Rc::new(GraphVariables { jaxpr: None, reads: Vec::new(), writes })),
            None => {
                out.constvars.push((next, last.value.aval.clone()));
                extra.push(last.value.clone());
                next += 1;
                Atom::Var(next - 1)
            }
        };
        out.outvars.push(atom);
    }
    consts.extend(extra);
    Some(Rc::new(GraphVariables { jaxpr: Some(Rc::new(out)), reads: inputs, writes }))
}

impl GraphVariables {
    /// The extra inputs of a call: each variable's value now.
    pub fn inputs(&self, interp: &mut Interp) -> Vec<Rc<Array>> {
        if self.jaxpr.is_none() {
            return Vec::new();
        }
        self.reads.iter().map(|v| super::variable::read(interp, v)).collect()
    }

    /// The call's outputs, with the variables' new values taken off the end and stored.
    pub fn apply(&self, interp: &mut Interp, mut outs: Vec<Rc<Array>>) -> Vec<Rc<Array>> {
        if self.jaxpr.is_none() || outs.len() < self.writes.len() {
            for w in &self.writes {
                super::variable::forget(w);
            }
            return outs;
        }
        let values = outs.split_off(outs.len() - self.writes.len());
        for (w, value) in self.writes.iter().zip(values) {
            super::variable::store(interp, w, value);
        }
        outs
    }
}
