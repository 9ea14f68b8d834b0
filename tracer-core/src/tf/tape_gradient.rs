//! `tape.gradient` inside a `tf.function`, computed by the JAX model's autodiff (`jax/ad.rs`)
//! on the equations the tape recorded: the equations of the graph bound while the tape was
//! open that the target depends on, cut at the sources (the `ReadVariableOp`s of variables
//! read under the tape, and the tensors given to `watch`). That slice is replayed and pulled
//! back from a cotangent of ones (TensorFlow's default `output_gradients`), so the gradient
//! equations are bound into the graph like any op. A source the slice does not reach gets
//! `None`, as TensorFlow gives it. Anything tracelens cannot vouch for — a primitive without a
//! rule, a variable assigned in the graph before the gradient, a tensor used before it was watched, variable
//! ops the graph does not follow — leaves the gradient to the caller's unknown.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::slices::Recipe;
use super::tape::{Gradient, Slicing, Tape};
use super::variable::Variable;
use crate::interp::Interp;
use crate::jax::ad;
use crate::jax::array::{Array, ArrayKind, Tracer};
use crate::jax::aval::Aval;
use crate::jax::ir::{Atom, Jaxpr, Prim, VarId};

/// The gradients of one target with respect to every source the tape recorded.
pub struct Computed {
    trace: u32,
    /// Each source's cotangent (`None`: the target does not depend on it).
    cts: HashMap<VarId, Option<Rc<Array>>>,
    /// The variables read under the tape, each with its `ReadVariableOp` results.
    reads: Vec<(Rc<Variable>, Vec<VarId>)>,
    /// The sources the slice reads only as the params of `tf.gather` (`gathered_only`).
    gathered: HashSet<VarId>,
    /// How to compute the `(values, indices)` of each `IndexedSlices` gradient, by its first
    /// source.
    parts: HashMap<VarId, Rc<Recipe>>,
}

impl Computed {
    /// The gradient with respect to variable `v`.
    pub fn of_variable(&self, interp: &mut Interp, v: &Rc<Variable>) -> Gradient {
        // A read after an assign in the graph is the assigned value, not a `ReadVariableOp`
        // the tape could record: not followed.
        if super::graph_variables::assigned_in(interp, self.trace, v) {
            return Gradient::Unknown;
        }
        let Some((_, vars)) = self.reads.iter().find(|(r, _)| Rc::ptr_eq(r, v)) else {
            return Gradient::Unconnected;
        };
        let mut sum: Option<Rc<Array>> = None;
        for ct in vars.iter().filter_map(|x| self.cts.get(x).cloned().flatten()) {
            sum = Some(match sum {
                None => ct,
                Some(s) => match crate::jax::apply1(interp, Prim::Binary(crate::jax::ir::BinaryPrim::Add), &[s, ct]) {
                    Ok(total) => total,
                    Err(_) => return Gradient::Unknown,
                },
            });
        }
        let aval = v.value.borrow().aval.clone().weak(false);
        match sum {
            Some(s) => ad::with_aval(interp, s, &aval).map_or(Gradient::Unknown, Gradient::Known),
            None => Gradient::Unconnected,
        }
    }

    /// Whether the gradient with respect to `v` is an `IndexedSlices`: every read of it the
    /// target reaches is read only by `tf.gather`.
    pub fn sliced_variable(&self, v: &Rc<Variable>) -> Slicing {
        let Some((_, vars)) = self.reads.iter().find(|(r, _)| Rc::ptr_eq(r, v)) else { return Slicing::Dense };
        let connected = connected(&self.cts, vars);
        match connected.first() {
            Some(first) if connected.iter().all(|x| self.gathered.contains(x)) => Slicing::Sliced(self.parts.get(first).cloned()),
            _ => Slicing::Dense,
        }
    }

    /// Whether the gradient with respect to a watched tensor is an `IndexedSlices`.
    pub fn sliced_tensor(&self, a: &Rc<Array>) -> Slicing {
        match a.tracer().filter(|t| t.trace == self.trace && self.gathered.contains(&t.var)) {
            Some(t) => Slicing::Sliced(self.parts.get(&t.var).cloned()),
            None => Slicing::Dense,
        }
    }

    /// The gradient with respect to a watched tensor.
    pub fn of_tensor(&self, interp: &mut Interp, a: &Rc<Array>) -> Gradient {
        let Some(t) = a.tracer().filter(|t| t.trace == self.trace) else { return Gradient::Unknown };
        match self.cts.get(&t.var).cloned() {
            None => Gradient::Unknown,
            Some(None) => Gradient::Unconnected,
            Some(Some(ct)) => ad::with_aval(interp, ct, &a.aval.clone().weak(false)).map_or(Gradient::Unknown, Gradient::Known),
        }
    }
}

/// Differentiates `target` with respect to everything `tape` recorded, when the tape and the
/// target are in the graph being traced and tracelens follows it.
pub fn compute(interp: &mut Interp, tape: &Tape, target: &Rc<Array>) -> Option<Computed> {
    let (trace, start, end) = tape.span.get()?;
    let (pos, id) = super::graph_variables::own_frame(interp)?;
    let target_var = target.tracer().filter(|t| t.trace == id && id == trace)?.var;
    let frame = &interp.jax.traces[pos].jaxpr;
    let end = end.unwrap_or(frame.eqns.len()).min(frame.eqns.len());
    // The sources: variable reads under the tape, and watched tensors of this graph.
    let mut reads: Vec<(Rc<Variable>, Vec<VarId>)> = Vec::new();
    let mut sources: Vec<VarId> = Vec::new();
    for e in &frame.eqns[start.min(end)..end] {
        let Some((var, _)) = e.outputs.first() else { continue };
        if let Some(v) = super::graph_variables::read_of(interp, id, *var) {
            match reads.iter_mut().find(|(r, _)| Rc::ptr_eq(r, &v)) {
                Some((_, vars)) => vars.push(*var),
                None => reads.push((v, vec![*var])),
            }
            sources.push(*var);
        }
    }
    for (a, at) in tape.watched() {
        let Some(t) = a.tracer().filter(|t| t.trace == id) else { continue };
        // A use before `watch` would not be recorded by TensorFlow: not followed.
        let (from, to) = (start.min(at).min(end), at.min(end));
        let used_before = frame.eqns[from..to].iter().any(|e| e.inputs.iter().any(|i| matches!(i, Atom::Var(v) if *v == t.var)));
        if !used_before && !sources.contains(&t.var) {
            sources.push(t.var);
        }
    }
    let (jaxpr, free) = slice(frame, start.min(end), end, target_var, &sources);
    let mut inputs = Vec::with_capacity(sources.len() + free.len());
    for (var, aval) in jaxpr.invars.iter() {
        let value = match interp.jax.const_value(pos, *var) {
            Some(c) => c.clone(),
            None => tracer(id, *var, aval),
        };
        inputs.push(value);
    }
    let active: Vec<bool> = (0..inputs.len()).map(|i| i < sources.len()).collect();
    let gathered: HashSet<VarId> = gathered_only(&jaxpr, sources.len()).into_iter().map(|i| sources[i]).collect();
    let jaxpr = Rc::new(jaxpr);
    let lin = ad::linearize(interp, &jaxpr, &[], &inputs, &active).ok()?;
    let out = lin.outputs.first()?.aval.clone();
    let ones = crate::jax::apply1(interp, Prim::full(1.0, &out), &[]).ok()?;
    let cts = ad::pullback(interp, &lin, &[Some(ones)]).ok()?;
    let cts: HashMap<VarId, Option<Rc<Array>>> = sources.iter().zip(cts).map(|(v, ct)| (*v, ct)).collect();
    // Each `IndexedSlices` gradient's parts: a variable's connected reads, or a tensor.
    let mut groups: Vec<Vec<VarId>> = reads.iter().map(|(_, vars)| connected(&cts, vars)).collect();
    groups.extend(gathered.iter().filter(|x| !reads.iter().any(|(_, vars)| vars.contains(x))).map(|x| vec![*x]));
    let mut parts = HashMap::new();
    for group in groups.into_iter().filter(|g| !g.is_empty() && g.iter().all(|x| gathered.contains(x))) {
        let at: Vec<usize> = group.iter().filter_map(|x| sources.iter().position(|s| s == x)).collect();
        parts.insert(group[0], Recipe::new(jaxpr.clone(), &[], &inputs, at, Some(id)));
    }
    Some(Computed { trace: id, cts, reads, gathered, parts })
}

/// The reads among `vars` the target reaches.
fn connected(cts: &HashMap<VarId, Option<Rc<Array>>>, vars: &[VarId]) -> Vec<VarId> {
    vars.iter().filter(|x| cts.get(x).is_some_and(Option::is_some)).copied().collect()
}

/// The first `sources` inputs of `jaxpr` (a tape's slice) that it reads, and reads only as
/// the params of `tf.gather` along axis 0 (`jnp.take`'s gather with its fill, the index array
/// first): TensorFlow's gradient of `GatherV2`/`ResourceGather` there is an `IndexedSlices`,
/// and a sum of them is one too; any other use makes it dense.
pub(super) fn gathered_only(jaxpr: &Jaxpr, sources: usize) -> Vec<usize> {
    use crate::jax::ir::{IndexItem, IndexMode};
    let is_take = |prim: &Prim| {
        let Prim::Gather { mode: IndexMode::FillOrDrop, fill_value: Some(_), index } = prim else { return false };
        matches!(index.first(), Some(IndexItem::Array))
            && index[1..].iter().all(|item| matches!(item, IndexItem::Slice { start: 0, step: 1, .. }))
    };
    let mut out = Vec::new();
    for (i, (var, _)) in jaxpr.invars.iter().take(sources).enumerate() {
        let reads = |a: &Atom| matches!(a, Atom::Var(v) if v == var);
        let mut uses = jaxpr.eqns.iter().filter(|e| e.inputs.iter().any(reads)).peekable();
        let used = uses.peek().is_some();
        let only_gathered = uses.all(|e| is_take(&e.prim) && e.inputs.first().is_some_and(reads) && !e.inputs[1..].iter().any(reads));
        if used && only_gathered && !jaxpr.outvars.iter().any(reads) {
            out.push(i);
        }
    }
    out
}

/// The equations of `graph.eqns[start..end]` that `target` depends on, cut at `sources`,
/// as a jaxpr whose inputs are the sources then every other value it reads.
fn slice(graph: &Jaxpr, start: usize, end: usize, target: VarId, sources: &[VarId]) -> (Jaxpr, Vec<VarId>) {
    let cut: HashSet<VarId> = sources.iter().copied().collect();
    let mut live: HashSet<VarId> = HashSet::from([target]);
    let mut kept = Vec::new();
    for e in graph.eqns[start..end].iter().rev() {
        if !e.outputs.iter().any(|(v, _)| live.contains(v)) || e.outputs.iter().any(|(v, _)| cut.contains(v)) {
            continue;
        }
        kept.push(e.clone());
        live.extend(e.inputs.iter().filter_map(|a| if let Atom::Var(v) = a { Some(*v) } else { None }));
    }
    kept.reverse();
    let mut avals: HashMap<VarId, Aval> = graph.constvars.iter().chain(&graph.invars).cloned().collect();
    avals.extend(graph.eqns.iter().flat_map(|e| e.outputs.iter().cloned()));
    let defined: HashSet<VarId> = kept.iter().flat_map(|e| e.outputs.iter().map(|(v, _)| *v)).collect();
    let mut free: Vec<VarId> = Vec::new();
    let target_atom = Atom::Var(target);
    let uses = kept.iter().flat_map(|e| e.inputs.iter()).chain(std::iter::once(&target_atom));
    for a in uses {
        if let Atom::Var(v) = a {
            if !defined.contains(v) && !cut.contains(v) && !free.contains(v) {
                free.push(*v);
            }
        }
    }
    let aval = |v: &VarId| (*v, avals.get(v).cloned().unwrap_or_else(|| Aval::scalar(crate::jax::dtypes::DType::F32)));
    let invars = sources.iter().chain(&free).map(aval).collect();
    let jaxpr = Jaxpr { constvars: Vec::new(), invars, eqns: kept, outvars: vec![Atom::Var(target)], var_avals: Vec::new() };
    (jaxpr, free)
}

/// A tracer of trace `trace` standing for its variable `var`.
pub(super) fn tracer(trace: u32, var: VarId, aval: &Aval) -> Rc<Array> {
    Rc::new(Array {
        aval: aval.clone(),
        kind: ArrayKind::Tracer(Tracer { trace, var, primal: None, active: true }),
        origin: None,
        numpy: Default::default(),
        tf: std::cell::Cell::new(true),
    })
}
