//! Automatic differentiation with values: the JVP (forward) and transpose (reverse) rules of
//! each differentiable primitive, applied to a traced jaxpr. `linearize` replays the jaxpr
//! equation by equation with `bind` (so the primal values are computed lazily by the CPU
//! kernels, or recorded into the enclosing trace inside `jit`); `pullback` and `pushforward`
//! then bind the equations of the backward or forward pass the same way. Because every rule
//! is made of ordinary primitives, the passes are themselves differentiable: `hessian` is
//! `jacfwd(jacrev(f))`, and `grad` inside `jit` becomes equations of the jitted body.
//!
//! A primitive without a rule makes the derivative *unknown* (`AdError::NoRule`), never a
//! guess. Rules per primitive (the table is `rule_status` below):
//! - elementwise primitives give their partial derivatives (`partials`), from which both the
//!   JVP (`t_out = Σ t_i · ∂_i`) and the transpose (`ct_i = sum_to_shape(g · ∂_i)`) follow;
//! - structural linear primitives (reshape, transpose, broadcast, slice, concatenate,
//!   reductions, dot_general, ...) apply themselves to tangents and have a transpose rule
//!   each (`transpose`).
//!
//! Size: the JVP and transpose rules of every primitive not yet written as a block in `jax/prims/`
//! (`conv.rs` is); they move there family by family (issue 21), and this file shrinks with each.

use crate::jax::prims::families;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::array::Array;
use super::aval::Aval;
use super::dtypes::DType;
use super::ir::{Atom, BinaryPrim, CmpPrim, EighInput, Eqn, IndexItem, Jaxpr, Prim, ReduceOp, ScatterOp, UnaryPrim, VarId};
use super::numpy::linalg_api;
use super::prims::products::{self, DotDims};
use super::surface::JaxFn;
use super::{apply1, bind1, bind_with_bodies};
use crate::diagnostics::Code;
use crate::interp::{Flow, Interp};

/// Why a derivative could not be computed.
pub enum AdError {
    /// A primitive on the differentiated path has no rule: the derivative stays unknown.
    NoRule(String),
    /// A Python exception (JAX's error for reverse-mode through `while_loop`, a leaked tracer).
    Raise(Flow),
}

impl From<Flow> for AdError {
    fn from(f: Flow) -> AdError {
        AdError::Raise(f)
    }
}

pub type AdResult<T> = Result<T, AdError>;

/// A jaxpr replayed on concrete (or outer-trace) inputs, remembering every intermediate value
/// and which of them depend on the differentiated inputs.
pub struct Linearization {
    tape: Tape,
    /// The replayed outputs of the jaxpr, one per outvar.
    pub outputs: Vec<Rc<Array>>,
    /// Number of leading constvars among the jaxpr's binders (constvars then invars).
    n_consts: usize,
    /// For each constvar: its data is unknown, so it may stand for something computed from
    /// the inputs that the model could not follow (`x[mask]`): taking it for a constant
    /// could give a wrong derivative. Such values count as active, and a derivative that
    /// needs their cotangent or tangent is unknown.
    untracked: Vec<bool>,
}

pub(super) struct Tape {
    jaxpr: Rc<Jaxpr>,
    env: HashMap<VarId, Rc<Array>>,
    active: HashSet<VarId>,
    /// Tapes of the bodies of `pjit`/`checkpoint` equations, by equation index.
    bodies: HashMap<usize, Tape>,
    /// What the user's rule gave at each active `custom_jvp_call`/`custom_vjp_call`.
    custom: HashMap<usize, super::custom_rules::Linearized>,
}

/// Replays `jaxpr` on `consts` and `inputs`; `active[i]` says whether input `i` is
/// differentiated.
pub fn linearize(
    interp: &mut Interp,
    jaxpr: &Rc<Jaxpr>,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
    active: &[bool],
) -> AdResult<Linearization> {
    if consts.len() != jaxpr.constvars.len() || inputs.len() != jaxpr.invars.len() || active.len() != inputs.len() {
        return Err(AdError::NoRule("a trace whose inputs do not match its jaxpr".into()));
    }
    let args: Vec<Rc<Array>> = consts.iter().chain(inputs).cloned().collect();
    let untracked: Vec<bool> = consts.iter().map(|c| is_unknown(c)).collect();
    let flags: Vec<bool> = untracked.iter().chain(active).copied().collect();
    let tape = forward(interp, jaxpr, &args, &flags)?;
    let outputs = jaxpr.outvars.iter().map(|a| read(&tape.env, a)).collect::<AdResult<Vec<_>>>()?;
    Ok(Linearization { tape, outputs, n_consts: consts.len(), untracked })
}

/// A concrete array whose data is known to be unknown (not merely not computed yet).
fn is_unknown(a: &Rc<Array>) -> bool {
    matches!(&a.kind, super::array::ArrayKind::Concrete(cell) if matches!(&*cell.borrow(), super::array::Lazy::Unknown(_)))
}

impl Tape {
    /// The replayed value of `atom`.
    pub(super) fn read(&self, atom: &Atom) -> AdResult<Rc<Array>> {
        read(&self.env, atom)
    }
}

impl Linearization {
    /// Whether output `i` depends on a differentiated input.
    pub fn output_is_active(&self, i: usize) -> bool {
        matches!(self.tape.jaxpr.outvars.get(i), Some(Atom::Var(v)) if self.tape.active.contains(v))
    }
}

/// Reverse mode: the cotangents of the inputs given cotangents of the outputs (`None` is a
/// zero). Returns one entry per input; `None` where the cotangent is zero.
pub fn pullback(interp: &mut Interp, lin: &Linearization, cts: &[Option<Rc<Array>>]) -> AdResult<Vec<Option<Rc<Array>>>> {
    let all = backward(interp, &lin.tape, cts)?;
    if all.iter().zip(&lin.untracked).any(|(ct, &untracked)| untracked && ct.is_some()) {
        return Err(AdError::NoRule("a value computed from the inputs in a way the model does not follow".into()));
    }
    Ok(all.into_iter().skip(lin.n_consts).collect())
}

/// Forward mode: the tangents of the outputs given tangents of the inputs (`None` is a zero).
pub fn pushforward(interp: &mut Interp, lin: &Linearization, tangents: &[Option<Rc<Array>>]) -> AdResult<Vec<Option<Rc<Array>>>> {
    let ins: Vec<Option<Rc<Array>>> = std::iter::repeat_n(None, lin.n_consts).chain(tangents.iter().cloned()).collect();
    forward_tangents(interp, &lin.tape, &ins, &lin.untracked)
}

/// A zero array of `aval` (bound, so it is a constant of the enclosing trace inside `jit`).
pub fn zeros(interp: &mut Interp, aval: &Aval) -> AdResult<Rc<Array>> {
    Ok(apply1(interp, Prim::full(0.0, aval), &[])?)
}

/// `x` with exactly the aval `aval` (dtype and weak type), converting when they differ.
pub fn with_aval(interp: &mut Interp, x: Rc<Array>, aval: &Aval) -> AdResult<Rc<Array>> {
    if x.aval == *aval {
        return Ok(x);
    }
    if x.aval.shape != aval.shape {
        return Err(AdError::NoRule(format!("a cotangent of shape {} for {}", x.aval.short(), aval.short())));
    }
    bind(interp, Prim::ConvertElementType { new_dtype: aval.dtype, weak_type: aval.weak }, &[x])
}

/// Whether values of this dtype have derivatives (complex numbers are not modelled).
pub fn differentiable(dtype: DType) -> bool {
    dtype.is_floating()
}

fn read(env: &HashMap<VarId, Rc<Array>>, atom: &Atom) -> AdResult<Rc<Array>> {
    match atom {
        Atom::Var(v) => env.get(v).cloned().ok_or_else(|| AdError::NoRule("an unbound variable".into())),
        Atom::Lit(x, aval) => Ok(Array::scalar(*x, aval.dtype, aval.weak)),
    }
}

pub(super) fn forward(interp: &mut Interp, jaxpr: &Rc<Jaxpr>, args: &[Rc<Array>], active_args: &[bool]) -> AdResult<Tape> {
    let mut tape =
        Tape { jaxpr: jaxpr.clone(), env: HashMap::new(), active: HashSet::new(), bodies: HashMap::new(), custom: HashMap::new() };
    for (((v, _), a), &act) in jaxpr.constvars.iter().chain(&jaxpr.invars).zip(args).zip(active_args) {
        tape.env.insert(*v, a.clone());
        if act && differentiable(a.aval.dtype) {
            tape.active.insert(*v);
        }
    }
    for (i, eqn) in jaxpr.eqns.iter().enumerate() {
        // jax.debug.print and friends: their effect happened when the function was traced.
        if matches!(eqn.prim, Prim::DebugCallback) || eqn.outputs.is_empty() {
            continue;
        }
        let ins = eqn.inputs.iter().map(|a| read(&tape.env, a)).collect::<AdResult<Vec<_>>>()?;
        let is_active = eqn.inputs.iter().any(|a| matches!(a, Atom::Var(v) if tape.active.contains(v)));
        if let (Some(call), true) = (eqn.prim.custom_call(), is_active) {
            let outs = forward_custom(interp, &mut tape, i, eqn, call, &ins)?;
            for ((v, _), o) in eqn.outputs.iter().zip(outs) {
                tape.env.insert(*v, o);
            }
            continue;
        }
        // Calls are differentiated through their bodies; `cond`, `scan` and `vmap` through the
        // branch taken, the loop unrolled or one body per example (`ir::resolve_control`).
        let inlined = match &eqn.prim {
            Prim::Pjit { .. } | Prim::Remat => eqn.bodies.first().cloned(),
            Prim::Cond { .. } | Prim::Scan { .. } | Prim::Vmap { .. } => resolved_control(eqn, &ins),
            // JAX differentiates these through a composition (`ad_compositions.rs`).
            Prim::Reduce { op: ReduceOp::Prod, .. } | Prim::Cumulative { op: ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min, .. }
                if is_active =>
            {
                let avals: Vec<Aval> = ins.iter().map(|a| a.aval.clone()).collect();
                super::ad_compositions::composition(eqn, &avals).map(Rc::new)
            }
            families::elementwise!()
            | families::movement!()
            | families::reductions!()
            | families::random!()
            | Prim::Iota { .. }
            | Prim::Full { .. }
            | Prim::DotGeneral { .. }
            | Prim::Gather { .. }
            | Prim::Scatter { .. }
            | Prim::While
            | Prim::CustomJvpCall { .. }
            | Prim::CustomVjpCall { .. }
            | Prim::DebugCallback
            | Prim::StopGradient
            | Prim::Opaque(_)
            | Prim::Linalg(_)
            | Prim::Block(_) => None,
        };
        let outs: Vec<Rc<Array>> = match inlined {
            Some(body) if body.constvars.len() + body.invars.len() == ins.len() => {
                let flags: Vec<bool> = eqn.inputs.iter().map(|a| matches!(a, Atom::Var(v) if tape.active.contains(v))).collect();
                let sub = forward(interp, &body, &ins, &flags)?;
                let outs = body.outvars.iter().map(|a| read(&sub.env, a)).collect::<AdResult<Vec<_>>>()?;
                for (atom, (v, _)) in body.outvars.iter().zip(&eqn.outputs) {
                    if matches!(atom, Atom::Var(w) if sub.active.contains(w)) {
                        tape.active.insert(*v);
                    }
                }
                tape.bodies.insert(i, sub);
                outs
            }
            _ => {
                if is_active {
                    no_rule_in_jax(interp, &eqn.prim)?;
                }
                let avals = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
                let outs = bind_with_bodies(interp, eqn.prim.clone(), &ins, avals, eqn.bodies.clone())?;
                if is_active && !matches!(eqn.prim, Prim::StopGradient) {
                    for (v, a) in &eqn.outputs {
                        if differentiable(a.dtype) {
                            tape.active.insert(*v);
                        }
                    }
                }
                outs
            }
        };
        for ((v, _), o) in eqn.outputs.iter().zip(outs) {
            tape.env.insert(*v, o);
        }
    }
    Ok(tape)
}

/// The most equations an unrolled `scan` or `vmap` may have for automatic differentiation.
const MAX_UNROLLED_EQNS: usize = 20_000;

/// A `cond` whose branch index is known, a `scan` or a `vmap`, as a jaxpr without control flow.
fn resolved_control(eqn: &Eqn, ins: &[Rc<Array>]) -> Option<Rc<Jaxpr>> {
    let index = if let Prim::Cond { .. } = eqn.prim {
        Some(super::eval::force(ins.first()?, 1)?.iter().next().copied()?.max(0.0) as usize)
    } else {
        None
    };
    let avals: Vec<Aval> = ins.iter().map(|a| a.aval.clone()).collect();
    super::ir::resolve_control(eqn, &avals, index, MAX_UNROLLED_EQNS).map(Rc::new)
}

fn accumulate(interp: &mut Interp, map: &mut HashMap<VarId, Rc<Array>>, v: VarId, ct: Rc<Array>) -> AdResult<()> {
    let sum = match map.remove(&v) {
        Some(prev) => binary(interp, BinaryPrim::Add, &prev, &ct)?,
        None => ct,
    };
    map.insert(v, sum);
    Ok(())
}

pub(super) fn backward(interp: &mut Interp, tape: &Tape, out_cts: &[Option<Rc<Array>>]) -> AdResult<Vec<Option<Rc<Array>>>> {
    let jaxpr = &tape.jaxpr;
    let mut cts: HashMap<VarId, Rc<Array>> = HashMap::new();
    for (atom, ct) in jaxpr.outvars.iter().zip(out_cts) {
        if let (Atom::Var(v), Some(ct)) = (atom, ct) {
            if tape.active.contains(v) {
                accumulate(interp, &mut cts, *v, ct.clone())?;
            }
        }
    }
    for (i, eqn) in jaxpr.eqns.iter().enumerate().rev() {
        let gs: Vec<Option<Rc<Array>>> = eqn.outputs.iter().map(|(v, _)| cts.remove(v)).collect();
        if gs.iter().all(Option::is_none) {
            continue;
        }
        let ins = eqn.inputs.iter().map(|a| read(&tape.env, a)).collect::<AdResult<Vec<_>>>()?;
        let in_cts = match tape.bodies.get(&i) {
            Some(sub) => backward(interp, sub, &gs)?,
            None if let Some(custom) = tape.custom.get(&i) => super::custom_rules::transpose(interp, custom, &ins, &gs)?,
            None => {
                let outs = eqn.outputs.iter().map(|(v, _)| read(&tape.env, &Atom::Var(*v))).collect::<AdResult<Vec<_>>>()?;
                let active: Vec<bool> = eqn.inputs.iter().map(|a| matches!(a, Atom::Var(v) if tape.active.contains(v))).collect();
                transpose(interp, eqn, &ins, &outs, &gs, &active)?
            }
        };
        for (atom, ct) in eqn.inputs.iter().zip(in_cts) {
            if let (Atom::Var(v), Some(ct)) = (atom, ct) {
                if tape.active.contains(v) {
                    accumulate(interp, &mut cts, *v, ct)?;
                }
            }
        }
    }
    Ok(jaxpr.constvars.iter().chain(&jaxpr.invars).map(|(v, _)| cts.remove(v)).collect())
}

/// `untracked[i]`: binder `i` has an unknown tangent (see `Linearization::untracked`).
pub(super) fn forward_tangents(
    interp: &mut Interp,
    tape: &Tape,
    in_tangents: &[Option<Rc<Array>>],
    untracked: &[bool],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let jaxpr = &tape.jaxpr;
    let mut tan: HashMap<VarId, Rc<Array>> = HashMap::new();
    // Outputs of equations without a JVP rule: an error only if an output of the jaxpr needs
    // them (forward mode visits every equation the inputs reach, used or not).
    let mut no_tangent: HashMap<VarId, String> = HashMap::new();
    for ((v, _), _) in jaxpr.constvars.iter().chain(&jaxpr.invars).zip(untracked).filter(|(_, &u)| u) {
        no_tangent.insert(*v, "a value computed from the inputs in a way the model does not follow".into());
    }
    for ((v, _), t) in jaxpr.constvars.iter().chain(&jaxpr.invars).zip(in_tangents) {
        if let Some(t) = t {
            if tape.active.contains(v) {
                tan.insert(*v, t.clone());
            }
        }
    }
    let live = live_through_custom_calls(jaxpr);
    for (i, eqn) in jaxpr.eqns.iter().enumerate() {
        if !live[i] {
            continue;
        }
        let ts: Vec<Option<Rc<Array>>> = eqn.inputs.iter().map(|a| if let Atom::Var(v) = a { tan.get(v).cloned() } else { None }).collect();
        let blocked =
            eqn.inputs[..custom_arguments(eqn)].iter().find_map(|a| if let Atom::Var(v) = a { no_tangent.get(v).cloned() } else { None });
        if let Some(why) = blocked {
            for (v, _) in &eqn.outputs {
                no_tangent.insert(*v, why.clone());
            }
            continue;
        }
        if ts.iter().all(Option::is_none) || matches!(eqn.prim, Prim::DebugCallback) {
            continue;
        }
        let ins = eqn.inputs.iter().map(|a| read(&tape.env, a)).collect::<AdResult<Vec<_>>>()?;
        let result = match tape.bodies.get(&i) {
            Some(sub) => forward_tangents(interp, sub, &ts, &[]),
            None if let Some(custom) = tape.custom.get(&i) => super::custom_rules::jvp(interp, custom, &ins, &ts),
            None => {
                let outs = eqn.outputs.iter().map(|(v, _)| read(&tape.env, &Atom::Var(*v))).collect::<AdResult<Vec<_>>>()?;
                jvp(interp, eqn, &ins, &outs, &ts)
            }
        };
        let out_tangents = match result {
            Ok(ts) => ts,
            Err(AdError::NoRule(why)) => {
                for (v, _) in &eqn.outputs {
                    no_tangent.insert(*v, why.clone());
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        for ((v, _), t) in eqn.outputs.iter().zip(out_tangents) {
            if let Some(t) = t {
                if tape.active.contains(v) {
                    tan.insert(*v, t);
                }
            }
        }
    }
    if let Some(why) = jaxpr.outvars.iter().find_map(|a| if let Atom::Var(v) = a { no_tangent.get(v).cloned() } else { None }) {
        return Err(AdError::NoRule(why));
    }
    Ok(jaxpr.outvars.iter().map(|a| if let Atom::Var(v) = a { tan.get(v).cloned() } else { None }).collect())
}

// ---------------------------------------------------------------------------------------
// `custom_jvp`/`custom_vjp` calls: their markers are differentiated by the user's rules
// (custom_rules.rs), never through the function's own equations before them.

/// The replay of an active marker: the call's outputs under differentiation, with what the
/// passes need kept on the tape.
fn forward_custom(
    interp: &mut Interp,
    tape: &mut Tape,
    i: usize,
    eqn: &Eqn,
    call: &Rc<super::custom_rules::CustomCall>,
    ins: &[Rc<Array>],
) -> AdResult<Vec<Rc<Array>>> {
    let flags: Vec<bool> = eqn.inputs.iter().map(|a| matches!(a, Atom::Var(v) if tape.active.contains(v))).collect();
    let avals: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
    let vjp = matches!(eqn.prim, Prim::CustomVjpCall { .. });
    let (outs, lin) = super::custom_rules::linearize(interp, call, vjp, ins, &flags, &avals)?;
    for (v, a) in &eqn.outputs {
        if differentiable(a.dtype) {
            tape.active.insert(*v);
        }
    }
    tape.custom.insert(i, lin);
    Ok(outs)
}

/// How many of an equation's inputs carry derivatives into it: a marker's first inputs (the
/// arguments' leaves; the function's own outputs after them do not), every input otherwise.
fn custom_arguments(eqn: &Eqn) -> usize {
    match eqn.prim.custom_call() {
        Some(_) => eqn.inputs.len().saturating_sub(eqn.outputs.len()),
        None => eqn.inputs.len(),
    }
}

/// Which equations forward mode visits: in a jaxpr with markers, those the outputs need
/// (the equations of a custom function's own code are not differentiated: JAX applies the
/// rule instead); every equation otherwise.
fn live_through_custom_calls(jaxpr: &Jaxpr) -> Vec<bool> {
    if !jaxpr.eqns.iter().any(|e| e.prim.custom_call().is_some()) {
        return vec![true; jaxpr.eqns.len()];
    }
    let mut needed: HashSet<VarId> = jaxpr.outvars.iter().filter_map(|a| if let Atom::Var(v) = a { Some(*v) } else { None }).collect();
    let mut live = vec![false; jaxpr.eqns.len()];
    for (i, eqn) in jaxpr.eqns.iter().enumerate().rev() {
        if eqn.outputs.iter().any(|(v, _)| needed.contains(v)) {
            live[i] = true;
            for a in &eqn.inputs[..custom_arguments(eqn)] {
                if let Atom::Var(v) = a {
                    needed.insert(*v);
                }
            }
        }
    }
    live
}

/// `linearize` of a custom_jvp rule's tangent map: its consts are primal values (known, never
/// differentiated), every input a tangent.
pub(super) fn linearize_rule(
    interp: &mut Interp,
    jaxpr: &Rc<Jaxpr>,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
) -> AdResult<Linearization> {
    if consts.len() != jaxpr.constvars.len() || inputs.len() != jaxpr.invars.len() {
        return Err(AdError::NoRule("a custom_jvp rule whose inputs do not match its jaxpr".into()));
    }
    let args: Vec<Rc<Array>> = consts.iter().chain(inputs).cloned().collect();
    let flags: Vec<bool> = consts.iter().map(|_| false).chain(inputs.iter().map(|_| true)).collect();
    let tape = forward(interp, jaxpr, &args, &flags)?;
    let outputs = jaxpr.outvars.iter().map(|a| read(&tape.env, a)).collect::<AdResult<Vec<_>>>()?;
    Ok(Linearization { tape, outputs, n_consts: consts.len(), untracked: vec![false; consts.len()] })
}

/// The outputs of `jaxpr` on `consts` and `inputs`, each equation bound (nothing differentiated).
pub(super) fn replay(interp: &mut Interp, jaxpr: &Rc<Jaxpr>, consts: &[Rc<Array>], inputs: &[Rc<Array>]) -> AdResult<Vec<Rc<Array>>> {
    if consts.len() != jaxpr.constvars.len() || inputs.len() != jaxpr.invars.len() {
        return Err(AdError::NoRule("a custom_jvp rule whose inputs do not match its jaxpr".into()));
    }
    let args: Vec<Rc<Array>> = consts.iter().chain(inputs).cloned().collect();
    let tape = forward(interp, jaxpr, &args, &vec![false; args.len()])?;
    jaxpr.outvars.iter().map(|a| read(&tape.env, a)).collect()
}

// ---------------------------------------------------------------------------------------
// Small builders: each binds one primitive with the output aval it has.

/// Binds `prim` with the output aval its rule (`prims/`) gives. Operands a rule rejects are
/// a derivative rule's mistake, not the user's: the derivative is then unknown.
pub(crate) fn bind(interp: &mut Interp, prim: Prim, ins: &[Rc<Array>]) -> AdResult<Rc<Array>> {
    let aval = rule_aval(&prim, ins)?;
    Ok(bind1(interp, prim, ins, aval)?)
}

/// [`bind`], strongly typed: where JAX's own rule binds another composition with a strongly
/// typed constant (`_pad_transpose`'s `pad` by a strong zero where this binds a `slice`, the
/// zero blocks of `expm`'s Fréchet derivative), its result is strong even when a weakly
/// typed operand would keep the primitive bound here weak.
fn bind_strong(interp: &mut Interp, prim: Prim, ins: &[Rc<Array>]) -> AdResult<Rc<Array>> {
    let aval = rule_aval(&prim, ins)?.weak(false);
    Ok(bind1(interp, prim, ins, aval)?)
}

/// The one output aval of `prim`'s rule on `ins`.
fn rule_aval(prim: &Prim, ins: &[Rc<Array>]) -> AdResult<Aval> {
    let in_avals: Vec<Aval> = ins.iter().map(|i| i.aval.clone()).collect();
    match super::prims::abstract_eval(prim, &in_avals, &[]) {
        Ok(mut outs) if outs.len() == 1 => Ok(outs.remove(0)),
        Ok(_) => Err(AdError::NoRule(format!("{} with other than one output", prim.name()))),
        Err(e) => Err(AdError::NoRule(format!("{} on {}: {e:?}", prim.name(), aval_list(&in_avals)))),
    }
}

fn aval_list(avals: &[Aval]) -> String {
    avals.iter().map(Aval::short).collect::<Vec<_>>().join(", ")
}

pub(crate) fn binary(interp: &mut Interp, op: BinaryPrim, a: &Rc<Array>, b: &Rc<Array>) -> AdResult<Rc<Array>> {
    bind(interp, Prim::Binary(op), &[a.clone(), b.clone()])
}

fn unary(interp: &mut Interp, op: UnaryPrim, a: &Rc<Array>) -> AdResult<Rc<Array>> {
    bind(interp, Prim::Unary(op), std::slice::from_ref(a))
}

/// A weakly typed scalar of `like`'s dtype (JAX's `_one(x)`/`full_like(x, v, shape=())` in a
/// rule, for a weakly typed `like`).
fn scalar(value: f64, like: &Aval) -> Rc<Array> {
    Array::scalar(value, like.dtype, true)
}

/// JAX's `_const(x, v)` in a rule: a scalar of `x`'s dtype, weakly typed only when `x` is a
/// weakly typed scalar (otherwise a NumPy array, strongly typed). It decides the weak type of
/// the derivative: `jax.grad(lambda w: jnp.sum(jnp.sqrt(w)))` of a weakly typed array is
/// strongly typed, of a weakly typed scalar weakly typed.
fn konst(value: f64, like: &Aval) -> Rc<Array> {
    Array::scalar(value, like.dtype, like.weak && like.ndim() == 0)
}

fn compare(interp: &mut Interp, op: CmpPrim, a: &Rc<Array>, b: &Rc<Array>) -> AdResult<Rc<Array>> {
    bind(interp, Prim::Compare(op), &[a.clone(), b.clone()])
}

/// A boolean mask as 0/1 values of `dtype`.
/// Weakly typed when `weak`: JAX's rules build such masks with `_ones(z)`/`full_like`, which
/// keep `z`'s weak type (`maximum`, `relu`, `clamp`), or convert them (`reduce_max`: strong).
fn mask_as(interp: &mut Interp, mask: &Rc<Array>, dtype: DType, weak: bool) -> AdResult<Rc<Array>> {
    bind(interp, Prim::ConvertElementType { new_dtype: dtype, weak_type: weak }, std::slice::from_ref(mask))
}

pub(crate) fn reshape(interp: &mut Interp, a: &Rc<Array>, shape: &[usize]) -> AdResult<Rc<Array>> {
    if a.aval.shape.as_slice() == shape {
        return Ok(a.clone());
    }
    bind(interp, Prim::Reshape { new_sizes: shape.to_vec() }, std::slice::from_ref(a))
}

fn reduce_sum(interp: &mut Interp, a: &Rc<Array>, axes: &[usize]) -> AdResult<Rc<Array>> {
    if axes.is_empty() {
        return Ok(a.clone());
    }
    bind(interp, Prim::Reduce { op: ReduceOp::Sum, axes: axes.to_vec() }, std::slice::from_ref(a))
}

/// Broadcasts `a` to `shape`, numpy-style.
fn broadcast_to(interp: &mut Interp, a: &Rc<Array>, shape: &[usize]) -> AdResult<Rc<Array>> {
    if a.aval.shape.as_slice() == shape {
        return Ok(a.clone());
    }
    let off = shape.len().checked_sub(a.aval.ndim()).ok_or_else(|| AdError::NoRule("broadcast to a smaller rank".into()))?;
    let dims: Vec<usize> = (off..shape.len()).collect();
    broadcast_in_dim(interp, a, shape, &dims)
}

fn broadcast_in_dim(interp: &mut Interp, a: &Rc<Array>, shape: &[usize], dims: &[usize]) -> AdResult<Rc<Array>> {
    let prim = Prim::BroadcastInDim { shape: shape.to_vec(), broadcast_dimensions: dims.to_vec() };
    bind(interp, prim, std::slice::from_ref(a))
}

/// The transpose of numpy-style broadcasting: sums `g` down to `target`'s shape.
fn sum_to_shape(interp: &mut Interp, g: &Rc<Array>, target: &[usize]) -> AdResult<Rc<Array>> {
    let shape = g.aval.shape.to_vec();
    if shape == target {
        return Ok(g.clone());
    }
    let lead = shape.len().checked_sub(target.len()).ok_or_else(|| AdError::NoRule("a cotangent of lower rank".into()))?;
    let axes: Vec<usize> = (0..shape.len()).filter(|&i| i < lead || (target[i - lead] == 1 && shape[i] != 1)).collect();
    let summed = reduce_sum(interp, g, &axes)?;
    reshape(interp, &summed, target)
}

// ---------------------------------------------------------------------------------------
// Elementwise primitives: partial derivatives.

/// `∂out/∂input` of an elementwise primitive, as a factor that multiplies a tangent.
enum Partial {
    Zero,
    One,
    MinusOne,
    Times(Rc<Array>),
    /// The tangent where the boolean mask is true, 0 elsewhere: `select_n(mask, 0, t)`, as a
    /// `custom_jvp` rule writes it (`jax.nn.relu`). Unlike a product with a 0/1 mask, a
    /// negative or NaN tangent gives `0.`, not `-0.` or `nan`, where the mask is false.
    Where(Rc<Array>),
    /// `tanh`'s rule as JAX writes it, `(t + t · ans) · (1 - ans)`, whose rounding differs
    /// from `t · (1 - ans²)` where `ans` is near ±1 (`gelu`'s derivative); transposed,
    /// `u + u · ans` with `u = t · (1 - ans)`.
    Tanh(Rc<Array>),
    /// `abs`'s rule as JAX writes it, `select(x >= 0, t, -t)`: `t` itself at ±0 (where
    /// `sign(x) · t` would give 0) and `-t` at NaN. The mask is `x >= 0`.
    Signed(Rc<Array>),
}

fn apply(interp: &mut Interp, t: &Rc<Array>, d: &Partial, transposed: bool) -> AdResult<Option<Rc<Array>>> {
    Ok(match d {
        Partial::Tanh(ans) => {
            let one_minus = binary(interp, BinaryPrim::Sub, &scalar(1.0, &ans.aval), ans)?;
            Some(if transposed {
                let u = binary(interp, BinaryPrim::Mul, t, &one_minus)?;
                let v = binary(interp, BinaryPrim::Mul, &u, ans)?;
                binary(interp, BinaryPrim::Add, &u, &v)?
            } else {
                let v = binary(interp, BinaryPrim::Mul, t, ans)?;
                let s = binary(interp, BinaryPrim::Add, t, &v)?;
                binary(interp, BinaryPrim::Mul, &s, &one_minus)?
            })
        }
        Partial::Signed(nonnegative) => {
            let t = broadcast_to(interp, t, &nonnegative.aval.shape)?;
            let negated = unary(interp, UnaryPrim::Neg, &t)?;
            Some(bind(interp, Prim::Select, &[nonnegative.clone(), negated, t.clone()])?)
        }
        Partial::Zero => None,
        Partial::One => Some(t.clone()),
        Partial::MinusOne => Some(unary(interp, UnaryPrim::Neg, t)?),
        Partial::Times(f) => Some(binary(interp, BinaryPrim::Mul, t, f)?),
        Partial::Where(mask) => {
            let t = broadcast_to(interp, t, &mask.aval.shape)?;
            let z = zeros(interp, &t.aval)?;
            Some(bind(interp, Prim::Select, &[mask.clone(), z, t.clone()])?)
        }
    })
}

/// The partial derivatives of an elementwise primitive with respect to each input, or `None`
/// when the primitive is not elementwise. `x`, `y` are the inputs and `out` the output.
fn partials(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], out: &Rc<Array>, need: &[bool]) -> AdResult<Option<Vec<Partial>>> {
    use Partial::*;
    let times = |a: Rc<Array>| Times(a);
    let x = match ins.first() {
        Some(x) => x.clone(),
        None => return Ok(None),
    };
    let one = scalar(1.0, &x.aval);
    let const_one = konst(1.0, &x.aval);
    Ok(Some(match &eqn.prim {
        Prim::Unary(u) => vec![match u {
            UnaryPrim::Neg => MinusOne,
            UnaryPrim::Copy | UnaryPrim::Real | UnaryPrim::Conj => One,
            UnaryPrim::Sign | UnaryPrim::Floor | UnaryPrim::Ceil | UnaryPrim::Round => Zero,
            UnaryPrim::Exp => times(out.clone()),
            UnaryPrim::Exp2 => times(binary(interp, BinaryPrim::Mul, out, &konst(std::f64::consts::LN_2, &x.aval))?),
            UnaryPrim::Log => times(binary(interp, BinaryPrim::Div, &one, &x)?),
            UnaryPrim::Log1p => {
                let xp1 = binary(interp, BinaryPrim::Add, &x, &one)?;
                times(binary(interp, BinaryPrim::Div, &one, &xp1)?)
            }
            UnaryPrim::Expm1 => times(binary(interp, BinaryPrim::Add, out, &one)?),
            // JAX: g * (1 + ans) * (1 - ans)
            UnaryPrim::Tanh => Tanh(out.clone()),
            UnaryPrim::Logistic => {
                let m = binary(interp, BinaryPrim::Sub, &one, out)?;
                times(binary(interp, BinaryPrim::Mul, out, &m)?)
            }
            UnaryPrim::Sin => times(unary(interp, UnaryPrim::Cos, &x)?),
            UnaryPrim::Cos => {
                let sin = unary(interp, UnaryPrim::Sin, &x)?;
                times(unary(interp, UnaryPrim::Neg, &sin)?)
            }
            UnaryPrim::Tan => {
                let sq = binary(interp, BinaryPrim::Mul, out, out)?;
                times(binary(interp, BinaryPrim::Add, &const_one, &sq)?)
            }
            UnaryPrim::Sinh => times(unary(interp, UnaryPrim::Cosh, &x)?),
            UnaryPrim::Cosh => times(unary(interp, UnaryPrim::Sinh, &x)?),
            UnaryPrim::Asin | UnaryPrim::Acos => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let diff = binary(interp, BinaryPrim::Sub, &const_one, &sq)?;
                let d = unary(interp, UnaryPrim::Rsqrt, &diff)?;
                if *u == UnaryPrim::Asin {
                    times(d)
                } else {
                    times(unary(interp, UnaryPrim::Neg, &d)?)
                }
            }
            UnaryPrim::Atan => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let den = binary(interp, BinaryPrim::Add, &const_one, &sq)?;
                times(binary(interp, BinaryPrim::Div, &one, &den)?)
            }
            UnaryPrim::Asinh => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let sum = binary(interp, BinaryPrim::Add, &sq, &one)?;
                times(unary(interp, UnaryPrim::Rsqrt, &sum)?)
            }
            UnaryPrim::Acosh => {
                let m = binary(interp, BinaryPrim::Sub, &x, &one)?;
                let p = binary(interp, BinaryPrim::Add, &x, &one)?;
                let prod = binary(interp, BinaryPrim::Mul, &m, &p)?;
                times(unary(interp, UnaryPrim::Rsqrt, &prod)?)
            }
            UnaryPrim::Atanh => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let den = binary(interp, BinaryPrim::Sub, &one, &sq)?;
                times(binary(interp, BinaryPrim::Div, &one, &den)?)
            }
            // JAX: g * (0.5 / ans)
            UnaryPrim::Sqrt => times(binary(interp, BinaryPrim::Div, &konst(0.5, &x.aval), out)?),
            // JAX: g * (-0.5 * (ans / x))
            UnaryPrim::Rsqrt => {
                let r = binary(interp, BinaryPrim::Div, out, &x)?;
                times(binary(interp, BinaryPrim::Mul, &r, &konst(-0.5, &x.aval))?)
            }
            // JAX: g * (1/3 * ans ** -2)
            UnaryPrim::Cbrt => {
                let p = bind(interp, Prim::IntegerPow(-2), std::slice::from_ref(out))?;
                times(binary(interp, BinaryPrim::Mul, &p, &konst(1.0 / 3.0, &x.aval))?)
            }
            UnaryPrim::Abs => Signed(compare(interp, CmpPrim::Ge, &x, &scalar(0.0, &x.aval))?),
            UnaryPrim::Square => times(binary(interp, BinaryPrim::Mul, &x, &konst(2.0, &x.aval))?),
            UnaryPrim::Erf => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let neg = unary(interp, UnaryPrim::Neg, &sq)?;
                let e = unary(interp, UnaryPrim::Exp, &neg)?;
                times(binary(interp, BinaryPrim::Mul, &e, &konst(std::f64::consts::FRAC_2_SQRT_PI, &x.aval))?)
            }
            // JAX: g * (-2 / sqrt(pi)) * exp(-x²).
            UnaryPrim::Erfc => {
                let sq = unary(interp, UnaryPrim::Square, &x)?;
                let neg = unary(interp, UnaryPrim::Neg, &sq)?;
                let e = unary(interp, UnaryPrim::Exp, &neg)?;
                times(binary(interp, BinaryPrim::Mul, &konst(-std::f64::consts::FRAC_2_SQRT_PI, &x.aval), &e)?)
            }
            UnaryPrim::IsFinite | UnaryPrim::Not => Zero,
            // JAX: g * digamma(x), and digamma's: g * polygamma(1, x).
            UnaryPrim::Lgamma => times(unary(interp, UnaryPrim::Digamma, &x)?),
            UnaryPrim::Digamma => times(binary(interp, BinaryPrim::Polygamma, &konst(1.0, &x.aval), &x)?),
            // JAX: sqrt(pi)/2 * (g * exp(square(ans))).
            UnaryPrim::ErfInv => {
                let sq = unary(interp, UnaryPrim::Square, out)?;
                let e = unary(interp, UnaryPrim::Exp, &sq)?;
                times(binary(interp, BinaryPrim::Mul, &konst(std::f64::consts::PI.sqrt() / 2.0, &x.aval), &e)?)
            }
            UnaryPrim::Imag => return Err(AdError::NoRule(u.name().into())),
        }],
        Prim::IntegerPow(n) => vec![match n {
            0 => Zero,
            1 => One,
            _ => {
                let p = bind(interp, Prim::IntegerPow(n - 1), std::slice::from_ref(&x))?;
                times(binary(interp, BinaryPrim::Mul, &p, &konst(*n as f64, &x.aval))?)
            }
        }],
        Prim::Binary(b) => {
            let y = ins.get(1).cloned().ok_or_else(|| AdError::NoRule(b.name().into()))?;
            match b {
                BinaryPrim::Add => vec![One, One],
                BinaryPrim::Sub => vec![One, MinusOne],
                BinaryPrim::Mul => vec![times(y), times(x)],
                BinaryPrim::Div => {
                    let inv = binary(interp, BinaryPrim::Div, &one, &y)?;
                    let q = binary(interp, BinaryPrim::Div, out, &y)?;
                    let dy = unary(interp, UnaryPrim::Neg, &q)?;
                    vec![times(inv), times(dy)]
                }
                // JAX: ∂x = y * x ** (y - 1); ∂y = log(x where x != 0 else 1) * ans.
                BinaryPrim::Pow if !need.get(1).copied().unwrap_or(true) => {
                    let ym1 = binary(interp, BinaryPrim::Sub, &y, &scalar(1.0, &y.aval))?;
                    let p = binary(interp, BinaryPrim::Pow, &x, &ym1)?;
                    vec![times(binary(interp, BinaryPrim::Mul, &y, &p)?), Zero]
                }
                BinaryPrim::Pow => {
                    let ym1 = binary(interp, BinaryPrim::Sub, &y, &scalar(1.0, &y.aval))?;
                    let p = binary(interp, BinaryPrim::Pow, &x, &ym1)?;
                    let dx = binary(interp, BinaryPrim::Mul, &y, &p)?;
                    let is_zero = compare(interp, CmpPrim::Eq, &x, &scalar(0.0, &x.aval))?;
                    let ones = broadcast_to(interp, &one, &x.aval.shape)?;
                    let safe = bind(interp, Prim::Select, &[is_zero, x.clone(), ones])?;
                    let log = unary(interp, UnaryPrim::Log, &safe)?;
                    let dy = binary(interp, BinaryPrim::Mul, &log, out)?;
                    vec![times(dx), times(dy)]
                }
                BinaryPrim::Max | BinaryPrim::Min => {
                    // jax.nn.relu is a custom_jvp whose rule is `select(x > 0, g, zeros)`:
                    // its derivative at 0 is 0, and a negative or NaN tangent gives 0. where
                    // x <= 0. jnp.maximum splits a tie evenly (JAX's `_balanced_eq`).
                    match eqn.api {
                        Some(JaxFn::NnRelu) if *b == BinaryPrim::Max => vec![Where(compare(interp, CmpPrim::Gt, &x, &y)?), Zero],
                        // relu6's rule, `select((x > 0) & (x < 6), g, 0)`, as its two
                        // equations' selections: `x > 0` for the `max`, `max(x, 0) < 6` for
                        // the `min` (the same values, NaN included).
                        Some(JaxFn::NnRelu6) if *b == BinaryPrim::Max => vec![Where(compare(interp, CmpPrim::Gt, &x, &y)?), Zero],
                        Some(JaxFn::NnRelu6) => vec![Where(compare(interp, CmpPrim::Lt, &x, &y)?), Zero],
                        Some(JaxFn::TreeMap | JaxFn::TreeMap2 | JaxFn::JaxTreeMap) => {
                            return Err(AdError::NoRule(format!("{} under tree_map (relu or maximum?)", b.name())))
                        }
                        _ => {
                            // ∂x = 1 where only x is the result, 0.5 where both are, 0 elsewhere.
                            let dt = out.aval.dtype;
                            let ex = compare(interp, CmpPrim::Eq, &x, out)?;
                            let fx = mask_as(interp, &ex, dt, out.aval.weak)?;
                            let ey = compare(interp, CmpPrim::Eq, &y, out)?;
                            let fy = mask_as(interp, &ey, dt, out.aval.weak)?;
                            let half = scalar(0.5, &out.aval);
                            let oneo = scalar(1.0, &out.aval);
                            let hx = binary(interp, BinaryPrim::Mul, &fx, &half)?;
                            let hx = binary(interp, BinaryPrim::Sub, &oneo, &hx)?;
                            let hy = binary(interp, BinaryPrim::Mul, &fy, &half)?;
                            let hy = binary(interp, BinaryPrim::Sub, &oneo, &hy)?;
                            let dx = binary(interp, BinaryPrim::Mul, &fx, &hy)?;
                            let dy = binary(interp, BinaryPrim::Mul, &fy, &hx)?;
                            vec![times(dx), times(dy)]
                        }
                    }
                }
                // `jnp.logaddexp`'s custom_jvp: ∂x = exp(x - out), ∂y = exp(y - out), with
                // +inf (only +inf: `_replace_inf` compares with `inf`) replaced by 0 first, so
                // (-inf, -inf) gives exp(-inf - -inf) = NaN as in JAX.
                BinaryPrim::Logaddexp => {
                    let finite_or_zero = |interp: &mut Interp, v: &Rc<Array>| -> AdResult<Rc<Array>> {
                        let inf = compare(interp, CmpPrim::Eq, v, &scalar(f64::INFINITY, &v.aval))?;
                        let zeros = broadcast_to(interp, &konst(0.0, &v.aval), &v.aval.shape)?;
                        bind(interp, Prim::Select, &[inf, v.clone(), zeros])
                    };
                    let o = finite_or_zero(interp, out)?;
                    let (fx, fy) = (finite_or_zero(interp, &x)?, finite_or_zero(interp, &y)?);
                    let dx = binary(interp, BinaryPrim::Sub, &fx, &o)?;
                    let dy = binary(interp, BinaryPrim::Sub, &fy, &o)?;
                    vec![times(unary(interp, UnaryPrim::Exp, &dx)?), times(unary(interp, UnaryPrim::Exp, &dy)?)]
                }
                // JAX: ∂x = polygamma(n + 1, x); the order has none (a ValueError in JAX).
                BinaryPrim::Polygamma => {
                    if need.first().copied().unwrap_or(true) {
                        return Err(AdError::Raise(interp.raise(
                            "ValueError",
                            Code::PythonException,
                            "polygamma gradient with respect to m is not supported",
                        )));
                    }
                    let n1 = binary(interp, BinaryPrim::Add, &x, &konst(1.0, &x.aval))?;
                    vec![Zero, times(binary(interp, BinaryPrim::Polygamma, &n1, &y)?)]
                }
                BinaryPrim::Atan2 => {
                    let xx = binary(interp, BinaryPrim::Mul, &x, &x)?;
                    let yy = binary(interp, BinaryPrim::Mul, &y, &y)?;
                    let den = binary(interp, BinaryPrim::Add, &xx, &yy)?;
                    let dx = binary(interp, BinaryPrim::Div, &y, &den)?;
                    let q = binary(interp, BinaryPrim::Div, &x, &den)?;
                    let dy = unary(interp, UnaryPrim::Neg, &q)?;
                    vec![times(dx), times(dy)]
                }
                // JAX: ∂y = -sign(x / y) * floor(|x / y|)
                BinaryPrim::Rem => {
                    let q = binary(interp, BinaryPrim::Div, &x, &y)?;
                    let sign = unary(interp, UnaryPrim::Sign, &q)?;
                    let abs = unary(interp, UnaryPrim::Abs, &q)?;
                    let floor = unary(interp, UnaryPrim::Floor, &abs)?;
                    let t = binary(interp, BinaryPrim::Mul, &sign, &floor)?;
                    vec![One, times(unary(interp, UnaryPrim::Neg, &t)?)]
                }
                BinaryPrim::NextAfter => {
                    no_rule_in_jax(interp, &eqn.prim)?;
                    return Err(AdError::NoRule(b.name().into()));
                }
                _ => return Err(AdError::NoRule(b.name().into())),
            }
        }
        // lax.clamp(min, x, max), with JAX's masks.
        Prim::Clamp => {
            let (lo, op, hi) = match ins {
                [lo, op, hi] => (lo, op, hi),
                _ => return Err(AdError::NoRule("clamp".into())),
            };
            let dt = out.aval.dtype;
            let m = |interp: &mut Interp, a: &Rc<Array>, c: CmpPrim, b: &Rc<Array>| -> AdResult<Rc<Array>> {
                let mask = compare(interp, c, a, b)?;
                mask_as(interp, &mask, dt, out.aval.weak)
            };
            let (a, b) = (m(interp, lo, CmpPrim::Gt, op)?, m(interp, lo, CmpPrim::Lt, hi)?);
            let dlo = binary(interp, BinaryPrim::Mul, &a, &b)?;
            let (a, b) = (m(interp, op, CmpPrim::Gt, lo)?, m(interp, op, CmpPrim::Lt, hi)?);
            let dop = binary(interp, BinaryPrim::Mul, &a, &b)?;
            let dhi = m(interp, hi, CmpPrim::Lt, op)?;
            vec![times(dlo), times(dop), times(dhi)]
        }
        families::movement!()
        | families::reductions!()
        | families::random!()
        | families::control_flow!()
        | families::calls!()
        | Prim::Compare(_)
        | Prim::Select
        | Prim::ConvertElementType { .. }
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::DotGeneral { .. }
        | Prim::Gather { .. }
        | Prim::Scatter { .. }
        | Prim::DebugCallback
        | Prim::StopGradient
        | Prim::Opaque(_)
        | Prim::Linalg(_)
        | Prim::Block(_) => return Ok(None),
    }))
}

// ---------------------------------------------------------------------------------------
// The rules.

fn no_rule(eqn: &Eqn) -> AdError {
    AdError::NoRule(eqn.prim.name())
}

/// JAX's error for reverse mode through a loop whose trip count is not static.
fn while_loop_error(interp: &Interp) -> AdError {
    AdError::Raise(interp.raise(
        "ValueError",
        Code::PythonException,
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic start/stop values. Try using lax.scan, or using fori_loop with static start/stop.",
    ))
}

/// The JVP rule: tangents of the outputs from tangents of the inputs (`None` = zero).
fn jvp(
    interp: &mut Interp,
    eqn: &Eqn,
    ins: &[Rc<Array>],
    outs: &[Rc<Array>],
    ts: &[Option<Rc<Array>>],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    if let Prim::Cond { .. } = eqn.prim {
        return super::ad_control::cond_jvp(interp, eqn, ins, ts);
    }
    if let Prim::While = eqn.prim {
        return super::ad_control::while_jvp(interp, eqn, ins, ts);
    }
    let out = match outs {
        [out] => out,
        _ => return Err(no_rule(eqn)),
    };
    let out_aval = &out.aval;
    if !differentiable(out_aval.dtype) {
        return Ok(vec![None]);
    }
    if let Some(block) = super::prims::block(&eqn.prim) {
        return block.jvp(interp, &eqn.prim, ins, ts);
    }
    let need: Vec<bool> = ts.iter().map(Option::is_some).collect();
    if let Some(ds) = partials(interp, eqn, ins, out, &need)? {
        let mut total: Option<Rc<Array>> = None;
        for (t, d) in ts.iter().zip(&ds) {
            let Some(t) = t else { continue };
            let Some(term) = apply(interp, t, d, false)? else { continue };
            let term = broadcast_to(interp, &term, &out_aval.shape)?;
            total = Some(match total {
                Some(acc) => binary(interp, BinaryPrim::Add, &acc, &term)?,
                None => term,
            });
        }
        return Ok(vec![total]);
    }
    // Linear primitives apply themselves to the tangents (zeros standing for missing ones);
    // dot_general is bilinear.
    let instantiate = |interp: &mut Interp, i: usize| -> AdResult<Rc<Array>> {
        match &ts[i] {
            Some(t) => Ok(t.clone()),
            None => zeros(interp, &ins[i].aval),
        }
    };
    let t = match &eqn.prim {
        Prim::StopGradient => return Ok(vec![None]),
        Prim::ConvertElementType { .. } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            with_aval(interp, t.clone(), out_aval)?
        }
        Prim::BroadcastInDim { .. }
        | Prim::Reshape { .. }
        | Prim::Squeeze { .. }
        | Prim::Transpose { .. }
        | Prim::Rev { .. }
        | Prim::Slice { .. }
        | Prim::Reduce { op: ReduceOp::Sum, .. }
        | Prim::Cumulative { op: ReduceOp::Sum, .. } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            bind(interp, eqn.prim.clone(), std::slice::from_ref(t))?
        }
        Prim::Concatenate { .. } => {
            let parts = (0..ins.len()).map(|i| instantiate(interp, i)).collect::<AdResult<Vec<_>>>()?;
            bind(interp, eqn.prim.clone(), &parts)?
        }
        // select_n(pred, on_false, on_true): the predicate has no tangent.
        Prim::Select => {
            let f = instantiate(interp, 1)?;
            let t = instantiate(interp, 2)?;
            bind(interp, Prim::Select, &[ins[0].clone(), f, t])?
        }
        Prim::Reduce { op: ReduceOp::Max | ReduceOp::Min, axes } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            let (loc, counts) = chooser_locations(interp, &ins[0], out, axes)?;
            let masked = binary(interp, BinaryPrim::Mul, t, &loc)?;
            let picked = reduce_sum(interp, &masked, axes)?;
            binary(interp, BinaryPrim::Div, &picked, &counts)?
        }
        Prim::DotGeneral { .. } => return products::bilinear_jvp(interp, &eqn.prim, ins, ts),
        Prim::Full { .. } | Prim::Iota { .. } => return Ok(vec![None]),
        // Linear in (operand, padding value) together.
        Prim::Pad { .. } if ins.len() == 2 => {
            if ts[0].is_none() && ts[1].is_none() {
                return Ok(vec![None]);
            }
            let operands = [instantiate(interp, 0)?, instantiate(interp, 1)?];
            bind(interp, eqn.prim.clone(), &operands)?
        }
        // The tangent goes where its element goes: sorted by the keys of the operand.
        Prim::Sort { num_keys: 1, .. } if ins.len() == 1 => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            bind(interp, eqn.prim.clone(), &[ins[0].clone(), t.clone()])?
        }
        // Linear in the operand; the index arrays (and start indices) have no tangent.
        Prim::Gather { .. } | Prim::DynamicSlice { .. } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            if matches!(eqn.prim, Prim::DynamicSlice { .. }) && ins.len() != 1 + ins[0].aval.ndim() {
                return Err(no_rule(eqn));
            }
            let operands: Vec<Rc<Array>> = std::iter::once(t.clone()).chain(ins[1..].iter().cloned()).collect();
            // JAX's `_gather_jvp_rule` gathers the tangent with a fill of 0.
            let prim = match &eqn.prim {
                Prim::Gather { mode, index, .. } => zero_fill_gather(*mode, index),
                other => other.clone(),
            };
            bind(interp, prim, &operands)?
        }
        // `scatter-add`, `scatter` (set) and `dynamic_update_slice` are linear in (operand,
        // updates) together.
        Prim::Scatter { op: ScatterOp::Add | ScatterOp::Set, index: Some(_), .. } if ins.len() >= 2 => {
            if ts[0].is_none() && ts[1].is_none() {
                return Ok(vec![None]);
            }
            let mut operands = vec![instantiate(interp, 0)?, instantiate(interp, 1)?];
            operands.extend(ins[2..].iter().cloned());
            bind(interp, eqn.prim.clone(), &operands)?
        }
        Prim::DynamicUpdateSlice if ins.len() == 2 + ins[0].aval.ndim() => {
            if ts[0].is_none() && ts[1].is_none() {
                return Ok(vec![None]);
            }
            let mut operands = vec![instantiate(interp, 0)?, instantiate(interp, 1)?];
            operands.extend(ins[2..].iter().cloned());
            bind(interp, eqn.prim.clone(), &operands)?
        }
        Prim::Scatter { op: ScatterOp::Mul, mode, index: Some(index), unique_indices } if ins.len() >= 2 => {
            let mut total: Option<Rc<Array>> = None;
            // Linear in the operand: its tangent is scaled at the same places.
            if let Some(tx) = &ts[0] {
                let operands: Vec<Rc<Array>> = [tx.clone(), ins[1].clone()].into_iter().chain(ins[2..].iter().cloned()).collect();
                total = Some(bind(interp, eqn.prim.clone(), &operands)?);
            }
            // JAX's `_scatter_mul_jvp_rhs`: `x * scatter_add(zeros, idx, tu)`, for unique indices.
            if let Some(tu) = &ts[1] {
                unique_scatter_indices(interp, *unique_indices)?;
                let operands: Vec<Rc<Array>> =
                    [zeros(interp, &ins[0].aval)?, tu.clone()].into_iter().chain(ins[2..].iter().cloned()).collect();
                let prim = Prim::Scatter { op: ScatterOp::Add, mode: *mode, index: Some(index.clone()), unique_indices: false };
                let spread = bind(interp, prim, &operands)?;
                let term = binary(interp, BinaryPrim::Mul, &ins[0], &spread)?;
                total = Some(match total {
                    Some(acc) => binary(interp, BinaryPrim::Add, &acc, &term)?,
                    None => term,
                });
            }
            return Ok(vec![total]);
        }
        Prim::Scatter { op: ScatterOp::Min | ScatterOp::Max, mode, index: Some(index), .. } if ins.len() >= 2 => {
            if ts[0].is_none() && ts[1].is_none() {
                return Ok(vec![None]);
            }
            let sc = ExtremalScatter::new(interp, eqn, *mode, index, ins, out)?;
            let (tx, tu) = (instantiate(interp, 0)?, instantiate(interp, 1)?);
            let picked = sc.gather(interp, &tx)?;
            let from_x = binary(interp, BinaryPrim::Mul, &picked, &sc.operand_coef)?;
            let tu = broadcast_to(interp, &tu, &sc.selected)?;
            let from_u = binary(interp, BinaryPrim::Mul, &tu, &sc.update_coef)?;
            let moved = binary(interp, BinaryPrim::Add, &from_x, &from_u)?;
            sc.scatter_add(interp, &tx, &moved)?
        }
        Prim::Linalg(op) => return linalg_jvp(interp, *op, symmetrised(eqn), ins, out, ts),
        Prim::TopK { k } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            let places = TopKPlaces::new(interp, &ins[0], *k, out_aval)?;
            let mut operands = vec![t.clone()];
            operands.extend(places.arrays.iter().cloned());
            bind(interp, zero_fill_gather(super::ir::IndexMode::PromiseInBounds, &places.index), &operands)?
        }
        families::random!()
        | families::control_flow!()
        | families::calls!()
        | Prim::Unary(_)
        | Prim::Binary(_)
        | Prim::Compare(_)
        | Prim::Clamp
        | Prim::IntegerPow(_)
        | Prim::DynamicUpdateSlice
        | Prim::Pad { .. }
        | Prim::Reduce { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Sort { .. }
        | Prim::Scatter { .. }
        | Prim::TopKIndices { .. }
        | Prim::DebugCallback
        | Prim::Opaque(_)
        | Prim::Block(_) => return Err(no_rule(eqn)),
    };
    Ok(vec![Some(t)])
}

/// Where `lax.top_k` found its values, as the index arrays of a gather: the position itself
/// along every axis but the last, `top_k`'s indices along it. JAX's `_top_k_jvp` gathers the
/// tangent there; its transpose adds the cotangent back into zeros at the same places.
struct TopKPlaces {
    index: Vec<IndexItem>,
    arrays: Vec<Rc<Array>>,
}

impl TopKPlaces {
    fn new(interp: &mut Interp, x: &Rc<Array>, k: usize, out: &Aval) -> AdResult<TopKPlaces> {
        let nd = out.ndim();
        let last = nd.checked_sub(1).ok_or_else(|| AdError::NoRule("top_k of a scalar".into()))?;
        let mut arrays = Vec::with_capacity(nd);
        for d in 0..last {
            let mut shape = vec![1; nd];
            shape[d] = out.shape[d];
            arrays.push(Array::built(Aval::new(&shape, DType::I32), || {
                ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&shape), |i| i[d] as f64)
            }));
        }
        arrays.push(bind(interp, Prim::TopKIndices { k }, std::slice::from_ref(x))?);
        Ok(TopKPlaces { index: vec![IndexItem::Array; nd], arrays })
    }
}

/// The gather JAX's rules bind on tangents and cotangents (`_gather_jvp_rule`, the
/// transposes of `scatter-add` and `scatter-mul`): the equation's mode with `fill_value=0`,
/// so what `FILL_OR_DROP` fills or drops gets a zero derivative.
fn zero_fill_gather(mode: super::ir::IndexMode, index: &[IndexItem]) -> Prim {
    Prim::Gather { mode, fill_value: Some(super::ir::FillValue::Int(0)), index: index.to_vec() }
}

/// JAX differentiates `scatter-mul` with respect to its updates only when the equation says
/// its indices are unique (`unique_indices=True`: passed by the caller, or set by JAX when no
/// index array has an axis), and raises `NotImplementedError` otherwise. With the flag it
/// applies the rule for unique indices whatever the indices are, duplicates included.
fn unique_scatter_indices(interp: &Interp, unique_indices: bool) -> AdResult<()> {
    if unique_indices {
        return Ok(());
    }
    Err(AdError::Raise(interp.raise(
        "NotImplementedError",
        Code::PythonException,
        "scatter_mul gradients are only implemented if `unique_indices=True`",
    )))
}

/// `scatter-min`/`scatter-max` (`x.at[idx].min(u)`): JAX's `_scatter_extremal_jvp`. At each
/// written place the operand and the updates that tie for the result share its tangent
/// evenly; the others get none. Both the JVP and the transpose are linear maps built from
/// these coefficients, which have the shape of the selection `x[idx]`.
struct ExtremalScatter {
    mode: super::ir::IndexMode,
    index: Vec<IndexItem>,
    indices: Vec<Rc<Array>>,
    selected: Vec<usize>,
    operand_coef: Rc<Array>,
    update_coef: Rc<Array>,
}

impl ExtremalScatter {
    fn new(
        interp: &mut Interp,
        eqn: &Eqn,
        mode: super::ir::IndexMode,
        index: &[IndexItem],
        ins: &[Rc<Array>],
        out: &Rc<Array>,
    ) -> AdResult<ExtremalScatter> {
        let (x, u) = (&ins[0], &ins[1]);
        let indices: Vec<Rc<Array>> = ins[2..].to_vec();
        let shapes: Vec<&[usize]> = indices.iter().map(|a| a.aval.shape.as_slice()).collect();
        let selected = super::indexing::selection_shape(&x.aval.shape, index, &shapes).map_err(|_| no_rule(eqn))?;
        let mut sc = ExtremalScatter {
            mode,
            index: index.to_vec(),
            indices,
            selected: selected.clone(),
            operand_coef: x.clone(),
            update_coef: x.clone(),
        };
        let dt = x.aval.dtype;
        let sel = Aval::new(&selected, dt);
        let ub = broadcast_to(interp, u, &selected)?;
        let initial = sc.gather(interp, x)?;
        let target = sc.gather(interp, out)?;
        let successful = compare(interp, CmpPrim::Eq, &ub, &target)?;
        let retained = compare(interp, CmpPrim::Eq, &initial, &target)?;
        let zero_x = zeros(interp, &x.aval.clone().weak(false))?;
        let zero_sel = zeros(interp, &sel)?;
        let one_sel = apply1(interp, Prim::full(1.0, &sel), &[])?;
        let wins = mask_as(interp, &successful, dt, false)?;
        let wins_at = sc.scatter_add(interp, &zero_x, &wins)?;
        let num_updates = sc.gather(interp, &wins_at)?;
        let refs_at = sc.scatter_add(interp, &zero_x, &one_sel)?;
        let num_refs = sc.gather(interp, &refs_at)?;
        // JAX divides by counts that are 0 where the result is selected away (or, for
        // dropped out-of-bounds updates, scattered nowhere); dividing by at least 1 gives the
        // same values without the intermediate infinities that TL301 would report.
        let one = konst(1.0, &sel);
        let safe_updates = binary(interp, BinaryPrim::Max, &num_updates, &one)?;
        let safe_refs = binary(interp, BinaryPrim::Max, &num_refs, &one)?;
        let plus_one = binary(interp, BinaryPrim::Add, &num_updates, &one)?;
        let share_with_operand = binary(interp, BinaryPrim::Div, &one, &plus_one)?;
        let share_among_updates = binary(interp, BinaryPrim::Div, &one, &safe_updates)?;
        let update_share = bind(interp, Prim::Select, &[retained.clone(), share_among_updates, share_with_operand.clone()])?;
        sc.update_coef = bind(interp, Prim::Select, &[successful, zero_sel.clone(), update_share])?;
        let operand_share = bind(interp, Prim::Select, &[retained, zero_sel, share_with_operand])?;
        let lost = binary(interp, BinaryPrim::Sub, &operand_share, &one)?;
        sc.operand_coef = binary(interp, BinaryPrim::Div, &lost, &safe_refs)?;
        Ok(sc)
    }

    fn gather(&self, interp: &mut Interp, a: &Rc<Array>) -> AdResult<Rc<Array>> {
        let operands: Vec<Rc<Array>> = std::iter::once(a.clone()).chain(self.indices.iter().cloned()).collect();
        // `lax.gather`'s defaults, as `_scatter_extremal_jvp` calls it: `FILL_OR_DROP` with
        // the dtype's fill (NaN for floats).
        let prim = Prim::Gather { mode: super::ir::IndexMode::FillOrDrop, fill_value: None, index: self.index.clone() };
        bind(interp, prim, &operands)
    }

    fn scatter_add(&self, interp: &mut Interp, base: &Rc<Array>, updates: &Rc<Array>) -> AdResult<Rc<Array>> {
        let operands: Vec<Rc<Array>> = [base.clone(), updates.clone()].into_iter().chain(self.indices.iter().cloned()).collect();
        let prim = Prim::Scatter { op: ScatterOp::Add, mode: self.mode, index: Some(self.index.clone()), unique_indices: false };
        bind(interp, prim, &operands)
    }
}

// ---------------------------------------------------------------------------------------
// Linear algebra (`Prim::Linalg`): the rules of jax/_src/numpy/linalg.py and
// jax/_src/lax/linalg.py, written with the same primitives (so they are differentiable in
// turn, except through `cofactor`). The operands are stacks of matrices `[..., m, m]`.

/// Whether a `cholesky` equation symmetrises its input: `jnp.linalg.cholesky` does (its
/// derivative sees `(da + daᵀ) / 2`), `jax.scipy.linalg.cholesky` and `cho_factor` do not
/// (`symmetrize_input=False`), and their derivatives see the tangent as it is.
fn symmetrised(eqn: &Eqn) -> bool {
    !matches!(eqn.api, Some(JaxFn::ScipyCholesky | JaxFn::ScipyChoFactor))
}

fn linalg(interp: &mut Interp, op: super::ir::LinalgOp, ins: &[Rc<Array>]) -> AdResult<Rc<Array>> {
    bind(interp, Prim::Linalg(op), ins)
}

/// `l⁻¹ b`, or `l⁻ᵀ b` when `transpose`, for a lower-triangular `l` (a `triangular_solve`).
fn lower_solve(interp: &mut Interp, l: &Rc<Array>, b: &Rc<Array>, transpose: bool) -> AdResult<Rc<Array>> {
    let op = super::ir::LinalgOp::TriangularSolve { lower: true, transpose_a: transpose, unit_diagonal: false };
    linalg(interp, op, &[l.clone(), b.clone()])
}

/// `x` with its last two axes swapped (`x.mT`).
fn mat_t(interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let nd = x.aval.ndim();
    if nd < 2 {
        return Err(AdError::NoRule("a matrix of rank below 2".into()));
    }
    let mut perm: Vec<usize> = (0..nd).collect();
    perm.swap(nd - 1, nd - 2);
    bind(interp, Prim::Transpose { permutation: perm }, std::slice::from_ref(x))
}

/// The product of `x[..., m, k]` and `y[..., k, n]` with the same batch axes.
fn matmul(interp: &mut Interp, x: &Rc<Array>, y: &Rc<Array>) -> AdResult<Rc<Array>> {
    let nd = x.aval.ndim();
    if nd < 2 || y.aval.ndim() != nd || x.aval.shape[..nd - 2] != y.aval.shape[..nd - 2] {
        return Err(AdError::NoRule("a product of matrices with different batch axes".into()));
    }
    let batch: Vec<usize> = (0..nd - 2).collect();
    let prim = Prim::DotGeneral { lhs_contract: vec![nd - 1], rhs_contract: vec![nd - 2], lhs_batch: batch.clone(), rhs_batch: batch };
    bind(interp, prim, &[x.clone(), y.clone()])
}

/// `[m, m]` of `dtype` broadcast to `like`'s shape: 1 below the diagonal when `lower`, and
/// `diagonal` on it (JAX's `eye` for a trace, and `phi`'s mask in the Cholesky rule).
fn diagonal_mask(interp: &mut Interp, like: &Aval, lower: bool, diagonal: f64) -> AdResult<Rc<Array>> {
    let nd = like.ndim();
    let m = like.shape[nd - 1];
    let rows = bind(interp, Prim::Iota { dtype: DType::I32, shape: vec![m, m], dimension: 0 }, &[])?;
    let cols = bind(interp, Prim::Iota { dtype: DType::I32, shape: vec![m, m], dimension: 1 }, &[])?;
    let on = compare(interp, CmpPrim::Eq, &rows, &cols)?;
    let mut mask = mask_as(interp, &on, like.dtype, false)?;
    if diagonal != 1.0 {
        mask = binary(interp, BinaryPrim::Mul, &mask, &konst(diagonal, &mask.aval))?;
    }
    if lower {
        let below = compare(interp, CmpPrim::Gt, &rows, &cols)?;
        let below = mask_as(interp, &below, like.dtype, false)?;
        mask = binary(interp, BinaryPrim::Add, &mask, &below)?;
    }
    broadcast_to(interp, &mask, &like.shape)
}

/// `g[...]` broadcast over the last two axes of `like` (a cotangent of `det`/`slogdet`).
fn spread_over_matrices(interp: &mut Interp, g: &Rc<Array>, like: &Aval) -> AdResult<Rc<Array>> {
    let dims: Vec<usize> = (0..g.aval.ndim()).collect();
    broadcast_in_dim(interp, g, &like.shape, &dims)
}

/// The matrix operand of a linear-algebra equation (the kernels need at least two axes).
fn square_operand(op: super::ir::LinalgOp, ins: &[Rc<Array>]) -> AdResult<Rc<Array>> {
    match ins.first() {
        Some(a) if a.aval.ndim() >= 2 => Ok(a.clone()),
        _ => Err(AdError::NoRule(format!("{} of a vector", Prim::Linalg(op).name()))),
    }
}

/// `(x + x.mT) / 2`
fn symmetric_part(interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let xt = mat_t(interp, x)?;
    let sum = binary(interp, BinaryPrim::Add, x, &xt)?;
    binary(interp, BinaryPrim::Mul, &sum, &konst(0.5, &sum.aval))
}

fn sum_matrices(interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let nd = x.aval.ndim();
    reduce_sum(interp, x, &[nd - 2, nd - 1])
}

/// JAX has no derivative for `geqrf` (`jnp.linalg.qr(a, mode="raw")`) and raises.
fn no_geqrf_rule(interp: &Interp, op: super::ir::LinalgOp) -> AdResult<()> {
    if let super::ir::LinalgOp::Geqrf | super::ir::LinalgOp::GeqrfTaus = op {
        return no_rule_in_jax(interp, &Prim::Linalg(op));
    }
    Ok(())
}

/// JAX's error for a primitive it has no JVP rule for (`geqrf`, `nextafter`), raised when a
/// tangent reaches it: while JAX linearizes, so also where its result is not used.
fn no_rule_in_jax(interp: &Interp, prim: &Prim) -> AdResult<()> {
    let name = if let Prim::Binary(BinaryPrim::NextAfter) = prim {
        "nextafter"
    } else if let Prim::Linalg(super::ir::LinalgOp::Geqrf | super::ir::LinalgOp::GeqrfTaus) = prim {
        "geqrf"
    } else {
        return Ok(());
    };
    let message = format!("Differentiation rule for '{name}' not implemented");
    Err(AdError::Raise(interp.raise("NotImplementedError", Code::PythonException, message)))
}

fn linalg_jvp(
    interp: &mut Interp,
    op: super::ir::LinalgOp,
    symmetrise: bool,
    ins: &[Rc<Array>],
    out: &Rc<Array>,
    ts: &[Option<Rc<Array>>],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    use super::ir::LinalgOp as L;
    no_geqrf_rule(interp, op)?;
    let a = &square_operand(op, ins)?;
    match op {
        L::TriangularSolve { lower, transpose_a, unit_diagonal } => {
            return triangular_solve_jvp(interp, Triangle { lower, transpose_a, unit_diagonal }, a, out, ts);
        }
        L::Lu => {
            let Some(ta) = ts.first().cloned().flatten() else { return Ok(vec![None]) };
            let lu = LuFactors::new(interp, a, out)?;
            return lu.jvp(interp, &ta).map(|t| vec![Some(t)]);
        }
        L::LuPivots | L::LuPermutation | L::PivotsToPermutation { .. } => return Ok(vec![None]),
        L::Expm { double, .. } => {
            let Some(ta) = ts.first().cloned().flatten() else { return Ok(vec![None]) };
            return expm_frechet(interp, double, a, &ta).map(|t| vec![Some(t)]);
        }
        L::EighValues { .. }
        | L::EighVectors { .. }
        | L::SvdValues
        | L::SvdU { .. }
        | L::SvdVh { .. }
        | L::QrQ { .. }
        | L::QrR { .. }
        | L::Pinv { .. } => {
            let Some(ta) = ts.first().cloned().flatten() else { return Ok(vec![None]) };
            if let L::Pinv { .. } = op {
                return pinv_jvp(interp, a, out, &ta).map(|t| vec![Some(t)]);
            }
            return decomposition_jvp(interp, op, a, &ta).map(|t| vec![Some(t)]);
        }
        _ => {}
    }
    let t = match op {
        // JAX's `custom_linear_solve` rule: dx = solve(db - op(da) · x), op(da) being daᵀ
        // for the transposed solve, with the same factors (a `custom_linear_solve` again, so
        // its own derivative in `a` follows).
        L::LinearSolve { transpose } => {
            let (Some(lu), Some(permutation)) = (ins.get(1), ins.get(2)) else {
                return Err(AdError::NoRule("custom_linear_solve without its factors".into()));
            };
            let mut rhs = ts.get(3).cloned().flatten();
            if let Some(ta) = &ts[0] {
                let ta = if transpose { mat_t(interp, ta)? } else { ta.clone() };
                let p = matmul(interp, &ta, out)?;
                rhs = Some(match rhs {
                    Some(r) => binary(interp, BinaryPrim::Sub, &r, &p)?,
                    None => unary(interp, UnaryPrim::Neg, &p)?,
                });
            }
            let Some(rhs) = rhs else { return Ok(vec![None]) };
            linalg_api::solve_with_factors(interp, a, lu, permutation, &rhs, transpose)?
        }
        // The formula's derivative, bound before it, is its own.
        L::DetFused { .. } => return Ok(vec![ts.get(1).cloned().flatten()]),
        L::CofactorJvp => {
            if ts[0].is_some() {
                return Err(AdError::NoRule("cofactor_jvp with respect to the matrix".into()));
            }
            let Some(t) = ts.get(1).cloned().flatten() else { return Ok(vec![None]) };
            linalg(interp, L::CofactorJvp, &[a.clone(), t])?
        }
        L::SlogdetSign => return Ok(vec![None]),
        _ => {
            let Some(ta) = &ts[0] else { return Ok(vec![None]) };
            match op {
                // The cofactors' derivative (the Hessian of `det` applied to `da`).
                L::Cofactor => linalg(interp, L::CofactorJvp, &[a.clone(), ta.clone()])?,
                // JAX's `_det_jvp`: trace(adj(a) · da), the cofactors times the tangent.
                L::Det => {
                    let cof = linalg(interp, L::Cofactor, std::slice::from_ref(a))?;
                    let p = binary(interp, BinaryPrim::Mul, &cof, ta)?;
                    sum_matrices(interp, &p)?
                }
                // JAX's `_slogdet_jvp`: trace(solve(a, da)).
                L::SlogdetLogAbs => {
                    let s = linalg_api::solve_system(interp, a, ta)?;
                    let eye = diagonal_mask(interp, &a.aval, false, 1.0)?;
                    let p = binary(interp, BinaryPrim::Mul, &s, &eye)?;
                    sum_matrices(interp, &p)?
                }
                // JAX's `_cholesky_jvp_rule` on the symmetrised tangent: L · phi(L⁻¹ σ L⁻ᵀ),
                // `phi` keeping the lower triangle with the diagonal halved.
                L::Cholesky => {
                    let sym = if symmetrise { symmetric_part(interp, ta)? } else { ta.clone() };
                    let y = lower_solve(interp, out, &sym, false)?;
                    let yt = mat_t(interp, &y)?;
                    let x = lower_solve(interp, out, &yt, false)?;
                    let phi = diagonal_mask(interp, &out.aval, true, 0.5)?;
                    let p = binary(interp, BinaryPrim::Mul, &x, &phi)?;
                    matmul(interp, out, &p)?
                }
                _ => return Err(AdError::NoRule(Prim::Linalg(op).name())),
            }
        }
    };
    Ok(vec![Some(t)])
}

/// The transposes of the linearised rules above (JAX derives them by transposing the JVP).
fn linalg_transpose(
    interp: &mut Interp,
    op: super::ir::LinalgOp,
    symmetrise: bool,
    ins: &[Rc<Array>],
    out: &Rc<Array>,
    g: &Rc<Array>,
    active: &[bool],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    use super::ir::LinalgOp as L;
    no_geqrf_rule(interp, op)?;
    let a = &square_operand(op, ins)?;
    let mut cts: Vec<Option<Rc<Array>>> = vec![None; ins.len()];
    match op {
        L::TriangularSolve { lower, transpose_a, unit_diagonal } => {
            return triangular_solve_transpose(interp, Triangle { lower, transpose_a, unit_diagonal }, a, out, g, active);
        }
        L::Lu => {
            if active[0] {
                let lu = LuFactors::new(interp, a, out)?;
                cts[0] = Some(lu.transpose(interp, g)?);
            }
            return Ok(cts);
        }
        L::LuPivots | L::LuPermutation | L::PivotsToPermutation { .. } => return Ok(cts),
        L::Expm { double, .. } => {
            if active[0] {
                let at = mat_t(interp, a)?;
                cts[0] = Some(expm_frechet(interp, double, &at, g)?);
            }
            return Ok(cts);
        }
        L::Pinv { .. } => {
            if active[0] {
                cts[0] = Some(pinv_transpose(interp, a, out, g)?);
            }
            return Ok(cts);
        }
        L::EighValues { .. } | L::EighVectors { .. } | L::SvdValues | L::SvdU { .. } | L::SvdVh { .. } | L::QrQ { .. } | L::QrR { .. } => {
            if active[0] {
                cts[0] = Some(decomposition_transpose(interp, op, a, g)?);
            }
            return Ok(cts);
        }
        _ => {}
    }
    let ct_a = match op {
        // ct_b = op(a)⁻ᵀ g (the other solve with the same factors); ct_a = -ct_b · xᵀ, or
        // -x · ct_bᵀ for the transposed solve.
        L::LinearSolve { transpose } => {
            let (Some(lu), Some(permutation)) = (ins.get(1), ins.get(2)) else {
                return Err(AdError::NoRule("custom_linear_solve without its factors".into()));
            };
            let ct_b = linalg_api::solve_with_factors(interp, a, lu, permutation, g, !transpose)?;
            if active.get(3).copied().unwrap_or(false) {
                cts[3] = Some(ct_b.clone());
            }
            if !active[0] {
                return Ok(cts);
            }
            let p = if transpose {
                let ct_bt = mat_t(interp, &ct_b)?;
                matmul(interp, out, &ct_bt)?
            } else {
                let xt = mat_t(interp, out)?;
                matmul(interp, &ct_b, &xt)?
            };
            unary(interp, UnaryPrim::Neg, &p)?
        }
        L::Cofactor => linalg(interp, L::CofactorJvp, &[a.clone(), g.clone()])?,
        L::DetFused { .. } => {
            if active.get(1).copied().unwrap_or(false) {
                cts[1] = Some(g.clone());
            }
            return Ok(cts);
        }
        L::CofactorJvp => {
            if active[0] {
                return Err(AdError::NoRule("cofactor_jvp with respect to the matrix".into()));
            }
            if active.get(1).copied().unwrap_or(false) {
                cts[1] = Some(linalg(interp, L::CofactorJvp, &[a.clone(), g.clone()])?);
            }
            return Ok(cts);
        }
        L::SlogdetSign => return Ok(cts),
        L::Det => {
            let cof = linalg(interp, L::Cofactor, std::slice::from_ref(a))?;
            let gs = spread_over_matrices(interp, g, &a.aval)?;
            binary(interp, BinaryPrim::Mul, &gs, &cof)?
        }
        L::SlogdetLogAbs => {
            let inv = linalg_api::inv(interp, a)?;
            let inv_t = mat_t(interp, &inv)?;
            let gs = spread_over_matrices(interp, g, &a.aval)?;
            binary(interp, BinaryPrim::Mul, &gs, &inv_t)?
        }
        // sym(L⁻ᵀ · phi(Lᵀ g) · L⁻¹)
        L::Cholesky => {
            let lt = mat_t(interp, out)?;
            let p = matmul(interp, &lt, g)?;
            let phi = diagonal_mask(interp, &out.aval, true, 0.5)?;
            let q = binary(interp, BinaryPrim::Mul, &p, &phi)?;
            let qt = mat_t(interp, &q)?;
            let w = lower_solve(interp, out, &qt, true)?;
            let wt = mat_t(interp, &w)?;
            let z = lower_solve(interp, out, &wt, true)?;
            if symmetrise {
                symmetric_part(interp, &z)?
            } else {
                z
            }
        }
        _ => return Err(AdError::NoRule(Prim::Linalg(op).name())),
    };
    if active[0] {
        cts[0] = Some(ct_a);
    }
    Ok(cts)
}

/// What the rules of `lu` (JAX's `_lu_jvp_rule`, for square matrices) need: the packed
/// factors `lu`, the masks of their triangles, and the row permutation as a matrix `P`
/// (`P a = L U`).
struct LuFactors {
    lu: Rc<Array>,
    /// 1 strictly below the diagonal.
    strictly_lower: Rc<Array>,
    /// 1 on and above the diagonal.
    upper: Rc<Array>,
    l: Rc<Array>,
    u: Rc<Array>,
    permutation: Rc<Array>,
}

impl LuFactors {
    fn new(interp: &mut Interp, a: &Rc<Array>, lu: &Rc<Array>) -> AdResult<LuFactors> {
        let nd = a.aval.ndim();
        let m = a.aval.shape[nd - 1];
        if a.aval.shape[nd - 2] != m {
            return Err(AdError::NoRule("lu of a matrix that is not square".into()));
        }
        let strictly_lower = diagonal_mask(interp, &lu.aval, true, 0.0)?;
        let with_diagonal = diagonal_mask(interp, &lu.aval, true, 1.0)?;
        let upper = mat_t(interp, &with_diagonal)?;
        let below = keep_where(interp, lu, &strictly_lower)?;
        let eye = diagonal_mask(interp, &lu.aval, false, 1.0)?;
        let l = binary(interp, BinaryPrim::Add, &below, &eye)?;
        let u = keep_where(interp, lu, &upper)?;
        // P[..., i, j] = (permutation[..., i] == j)
        let order = linalg(interp, super::ir::LinalgOp::LuPermutation, std::slice::from_ref(a))?;
        let spread = spread_vector(interp, &order, &a.aval.shape, false)?;
        let columns = Prim::Iota { dtype: DType::I32, shape: a.aval.shape.to_vec(), dimension: nd - 1 };
        let columns = bind(interp, columns, &[])?;
        let same = compare(interp, CmpPrim::Eq, &spread, &columns)?;
        let permutation = mask_as(interp, &same, a.aval.dtype, false)?;
        Ok(LuFactors { lu: lu.clone(), strictly_lower, upper, l, u, permutation })
    }

    /// `L · tril(M, -1) + triu(M) · U` with `M = L⁻¹ P da U⁻¹`.
    fn jvp(&self, interp: &mut Interp, ta: &Rc<Array>) -> AdResult<Rc<Array>> {
        let x = matmul(interp, &self.permutation, ta)?;
        let la = Triangle { lower: true, transpose_a: false, unit_diagonal: true }.solve(interp, &self.lu, &x)?;
        // la · U⁻¹ = (U⁻ᵀ · laᵀ)ᵀ
        let la_t = mat_t(interp, &la)?;
        let m_t = Triangle { lower: false, transpose_a: true, unit_diagonal: false }.solve(interp, &self.lu, &la_t)?;
        let middle = mat_t(interp, &m_t)?;
        let below = keep_where(interp, &middle, &self.strictly_lower)?;
        let above = keep_where(interp, &middle, &self.upper)?;
        let l_dot = matmul(interp, &self.l, &below)?;
        let u_dot = matmul(interp, &above, &self.u)?;
        binary(interp, BinaryPrim::Add, &l_dot, &u_dot)
    }

    /// The transpose of `jvp`: `Pᵀ L⁻ᵀ (tril(Lᵀ g, -1) + triu(g Uᵀ)) U⁻ᵀ`.
    fn transpose(&self, interp: &mut Interp, g: &Rc<Array>) -> AdResult<Rc<Array>> {
        let l_t = mat_t(interp, &self.l)?;
        let from_l = matmul(interp, &l_t, g)?;
        let from_l = keep_where(interp, &from_l, &self.strictly_lower)?;
        let u_t = mat_t(interp, &self.u)?;
        let from_u = matmul(interp, g, &u_t)?;
        let from_u = keep_where(interp, &from_u, &self.upper)?;
        let middle = binary(interp, BinaryPrim::Add, &from_l, &from_u)?;
        // middle · U⁻ᵀ = (U⁻¹ · middleᵀ)ᵀ
        let middle_t = mat_t(interp, &middle)?;
        let solved_t = Triangle { lower: false, transpose_a: false, unit_diagonal: false }.solve(interp, &self.lu, &middle_t)?;
        let solved = mat_t(interp, &solved_t)?;
        let x = Triangle { lower: true, transpose_a: true, unit_diagonal: true }.solve(interp, &self.lu, &solved)?;
        let p_t = mat_t(interp, &self.permutation)?;
        matmul(interp, &p_t, &x)
    }
}

/// The Fréchet derivative of `expm` at `a` in the direction `e`: the upper right block of
/// `expm([[a, e], [0, a]])` (Van Loan's identity, which `jax.scipy.linalg.expm_frechet`'s
/// block method also uses). JAX differentiates its Padé approximation instead; the two agree
/// to the approximation's accuracy, a few ulp. Its transpose is the same at `aᵀ`. The block
/// is not capped at `max_squarings`, and is not upper triangular.
fn expm_frechet(interp: &mut Interp, double: bool, a: &Rc<Array>, e: &Rc<Array>) -> AdResult<Rc<Array>> {
    let nd = a.aval.ndim();
    let n = a.aval.shape[nd - 1];
    let e = broadcast_to(interp, e, &a.aval.shape)?;
    let top = bind_strong(interp, Prim::Concatenate { dimension: nd - 1 }, &[a.clone(), e])?;
    let zero = zeros(interp, &a.aval)?;
    let bottom = bind_strong(interp, Prim::Concatenate { dimension: nd - 1 }, &[zero, a.clone()])?;
    let block = bind_strong(interp, Prim::Concatenate { dimension: nd - 2 }, &[top, bottom])?;
    let op = super::ir::LinalgOp::Expm { double, upper_triangular: false, max_squarings: u32::MAX };
    let exp = linalg(interp, op, &[block])?;
    let mut start = vec![0; nd];
    start[nd - 1] = n;
    let mut limit = exp.aval.shape.to_vec();
    limit[nd - 2] = n;
    bind_strong(interp, Prim::Slice { start, limit, strides: vec![1; nd] }, &[exp])
}

/// The parameters of a `triangular_solve` equation.
#[derive(Clone, Copy)]
struct Triangle {
    lower: bool,
    transpose_a: bool,
    unit_diagonal: bool,
}

impl Triangle {
    fn solve(self, interp: &mut Interp, a: &Rc<Array>, b: &Rc<Array>) -> AdResult<Rc<Array>> {
        let op =
            super::ir::LinalgOp::TriangularSolve { lower: self.lower, transpose_a: self.transpose_a, unit_diagonal: self.unit_diagonal };
        linalg(interp, op, &[a.clone(), b.clone()])
    }

    /// `x` with every element outside the triangle the solve reads set to zero (the
    /// diagonal too when it is taken as ones): JAX's `tril`/`triu` of `a`'s tangent.
    fn mask(self, interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
        let lower = diagonal_mask(interp, &x.aval, true, if self.unit_diagonal { 0.0 } else { 1.0 })?;
        let mask = if self.lower { lower } else { mat_t(interp, &lower)? };
        keep_where(interp, x, &mask)
    }

    /// `op(m)`: `m`, or `mᵀ` when the solve transposes `a`.
    fn apply(self, interp: &mut Interp, m: &Rc<Array>) -> AdResult<Rc<Array>> {
        if self.transpose_a {
            mat_t(interp, m)
        } else {
            Ok(m.clone())
        }
    }
}

/// JAX's `_triangular_solve_jvp_rule_a` and the solve's linearity in `b`:
/// `dx = op(a)⁻¹ (db - op(tri(da)) · x)`.
fn triangular_solve_jvp(
    interp: &mut Interp,
    triangle: Triangle,
    a: &Rc<Array>,
    out: &Rc<Array>,
    ts: &[Option<Rc<Array>>],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let mut rhs = ts.get(1).cloned().flatten();
    if let Some(ta) = ts.first().cloned().flatten() {
        let da = triangle.mask(interp, &ta)?;
        let da = triangle.apply(interp, &da)?;
        let p = matmul(interp, &da, out)?;
        rhs = Some(match rhs {
            Some(r) => binary(interp, BinaryPrim::Sub, &r, &p)?,
            None => unary(interp, UnaryPrim::Neg, &p)?,
        });
    }
    let Some(rhs) = rhs else { return Ok(vec![None]) };
    Ok(vec![Some(triangle.solve(interp, a, &rhs)?)])
}

/// `ct_b = op(a)⁻ᵀ g`; `ct_a = tri(-ct_b · xᵀ)`, transposed when the solve transposes `a`
/// (JAX's `_triangular_solve_transpose_rule` and the transpose of the JVP in `a`).
fn triangular_solve_transpose(
    interp: &mut Interp,
    triangle: Triangle,
    a: &Rc<Array>,
    out: &Rc<Array>,
    g: &Rc<Array>,
    active: &[bool],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let flipped = Triangle { transpose_a: !triangle.transpose_a, ..triangle };
    let ct_b = flipped.solve(interp, a, g)?;
    let mut cts = vec![None, None];
    if active.first().copied().unwrap_or(false) {
        let xt = mat_t(interp, out)?;
        let p = matmul(interp, &ct_b, &xt)?;
        let p = unary(interp, UnaryPrim::Neg, &p)?;
        let p = triangle.apply(interp, &p)?;
        cts[0] = Some(triangle.mask(interp, &p)?);
    }
    if active.get(1).copied().unwrap_or(false) {
        cts[1] = Some(ct_b);
    }
    Ok(cts)
}

/// `x` where `mask` (0 or 1, of `x`'s dtype) is 1, and +0 elsewhere: JAX's `tril`/`triu`,
/// a `select`, so a zeroed negative element is +0, not the -0 of a product.
fn keep_where(interp: &mut Interp, x: &Rc<Array>, mask: &Rc<Array>) -> AdResult<Rc<Array>> {
    let pred = compare(interp, CmpPrim::Ne, mask, &konst(0.0, &mask.aval))?;
    let zero = zeros(interp, &x.aval)?;
    bind(interp, Prim::Select, &[pred, zero, x.clone()])
}

/// `v[..., k]` as the rows (`along_rows`: `v[..., None, :]`) or the columns
/// (`v[..., :, None]`) of `[..., r, c]`.
fn spread_vector(interp: &mut Interp, v: &Rc<Array>, shape: &[usize], along_rows: bool) -> AdResult<Rc<Array>> {
    let nd = shape.len();
    let dims: Vec<usize> = (0..nd - 2).chain([if along_rows { nd - 1 } else { nd - 2 }]).collect();
    broadcast_in_dim(interp, v, shape, &dims)
}

/// The diagonal of the square matrices `x[..., k, k]`, as `[..., k]`.
fn matrix_diagonal(interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let eye = diagonal_mask(interp, &x.aval, false, 1.0)?;
    let p = binary(interp, BinaryPrim::Mul, x, &eye)?;
    reduce_sum(interp, &p, &[x.aval.ndim() - 2])
}

/// The factors of `eigh`, the thin `svd` and the reduced `qr` of `a`, as the rules need them.
struct Factors {
    /// `eigh`'s eigenvectors, `svd`'s thin `U`, `qr`'s reduced `Q`.
    left: Rc<Array>,
    /// `eigh`'s eigenvalues, `svd`'s singular values (`[..., k]`), `qr`'s reduced `R`.
    middle: Rc<Array>,
    /// `svd`'s thin `V` (`Vhᵀ`); `eigh`'s eigenvectors again; unused for `qr`.
    right: Rc<Array>,
}

fn factors(interp: &mut Interp, op: super::ir::LinalgOp, a: &Rc<Array>) -> AdResult<Factors> {
    use super::ir::LinalgOp as L;
    match op {
        L::EighValues { .. } | L::EighVectors { .. } => {
            // JAX's `eigh_jvp_rule` decomposes `symmetrize(a)`, whichever triangle the
            // primitive reads (its tangent is then `a_dot` as it is).
            let input = EighInput::Symmetrized;
            let v = linalg(interp, L::EighVectors { input }, std::slice::from_ref(a))?;
            let w = linalg(interp, L::EighValues { input }, std::slice::from_ref(a))?;
            Ok(Factors { left: v.clone(), middle: w, right: v })
        }
        L::SvdValues | L::SvdU { .. } | L::SvdVh { .. } => {
            let u = linalg(interp, L::SvdU { full: false }, std::slice::from_ref(a))?;
            let s = linalg(interp, L::SvdValues, std::slice::from_ref(a))?;
            let vh = linalg(interp, L::SvdVh { full: false }, std::slice::from_ref(a))?;
            let v = mat_t(interp, &vh)?;
            Ok(Factors { left: u, middle: s, right: v })
        }
        _ => {
            let q = linalg(interp, L::QrQ { full: false }, std::slice::from_ref(a))?;
            let r = linalg(interp, L::QrR { full: false }, std::slice::from_ref(a))?;
            Ok(Factors { left: q.clone(), middle: r, right: q })
        }
    }
}

/// `F[..., i, j] = 1 / (w_j - w_i)` off the diagonal and 0 on it, JAX's `Fmat` of
/// `eigh_jvp_rule` (infinite for a repeated eigenvalue, as in JAX).
fn eigen_gaps(interp: &mut Interp, w: &Rc<Array>, like: &Aval) -> AdResult<Rc<Array>> {
    let rows = spread_vector(interp, w, &like.shape, true)?;
    let cols = spread_vector(interp, w, &like.shape, false)?;
    let eye = diagonal_mask(interp, like, false, 1.0)?;
    let d = binary(interp, BinaryPrim::Sub, &rows, &cols)?;
    let d = binary(interp, BinaryPrim::Add, &eye, &d)?;
    let f = binary(interp, BinaryPrim::Div, &konst(1.0, &d.aval), &d)?;
    binary(interp, BinaryPrim::Sub, &f, &eye)
}

/// `F[..., i, j] = 1 / (s_j² - s_i²)` off the diagonal and 0 on it, JAX's `F` of
/// `_svd_jvp_rule` (infinite for a repeated singular value, as in JAX).
fn singular_gaps(interp: &mut Interp, s: &Rc<Array>, like: &Aval) -> AdResult<Rc<Array>> {
    let rows = spread_vector(interp, s, &like.shape, true)?;
    let cols = spread_vector(interp, s, &like.shape, false)?;
    let sum = binary(interp, BinaryPrim::Add, &rows, &cols)?;
    let diff = binary(interp, BinaryPrim::Sub, &rows, &cols)?;
    let d = binary(interp, BinaryPrim::Mul, &sum, &diff)?;
    let eye = diagonal_mask(interp, like, false, 1.0)?;
    let d = binary(interp, BinaryPrim::Add, &d, &eye)?;
    let f = binary(interp, BinaryPrim::Div, &konst(1.0, &d.aval), &d)?;
    binary(interp, BinaryPrim::Sub, &f, &eye)
}

/// JAX's `_pinv_jvp` (Golub and Pereyra): with `P = pinv(a)`,
/// `dP = -P·da·P + P·Pᵀ·daᵀ·(I - a·P) + (I - P·a)·daᵀ·Pᵀ·P`.
fn pinv_jvp(interp: &mut Interp, a: &Rc<Array>, p: &Rc<Array>, ta: &Rc<Array>) -> AdResult<Rc<Array>> {
    let (complement_left, complement_right) = pinv_complements(interp, a, p)?;
    let pt = mat_t(interp, p)?;
    let tat = mat_t(interp, ta)?;
    let x = matmul(interp, p, ta)?;
    let first = matmul(interp, &x, p)?;
    let ppt = matmul(interp, p, &pt)?;
    let x = matmul(interp, &ppt, &tat)?;
    let second = matmul(interp, &x, &complement_left)?;
    let ptp = matmul(interp, &pt, p)?;
    let x = matmul(interp, &complement_right, &tat)?;
    let third = matmul(interp, &x, &ptp)?;
    let sum = binary(interp, BinaryPrim::Add, &second, &third)?;
    binary(interp, BinaryPrim::Sub, &sum, &first)
}

/// `I - a·P` (`m`×`m`) and `I - P·a` (`n`×`n`).
fn pinv_complements(interp: &mut Interp, a: &Rc<Array>, p: &Rc<Array>) -> AdResult<(Rc<Array>, Rc<Array>)> {
    let ap = matmul(interp, a, p)?;
    let eye = diagonal_mask(interp, &ap.aval, false, 1.0)?;
    let left = binary(interp, BinaryPrim::Sub, &eye, &ap)?;
    let pa = matmul(interp, p, a)?;
    let eye = diagonal_mask(interp, &pa.aval, false, 1.0)?;
    let right = binary(interp, BinaryPrim::Sub, &eye, &pa)?;
    Ok((left, right))
}

/// The transpose of `pinv_jvp`'s map: `-Pᵀ·g·Pᵀ + (I - a·P)·gᵀ·P·Pᵀ + Pᵀ·P·gᵀ·(I - P·a)`.
fn pinv_transpose(interp: &mut Interp, a: &Rc<Array>, p: &Rc<Array>, g: &Rc<Array>) -> AdResult<Rc<Array>> {
    let (complement_left, complement_right) = pinv_complements(interp, a, p)?;
    let pt = mat_t(interp, p)?;
    let gt = mat_t(interp, g)?;
    let x = matmul(interp, &pt, g)?;
    let first = matmul(interp, &x, &pt)?;
    let ppt = matmul(interp, p, &pt)?;
    let x = matmul(interp, &complement_left, &gt)?;
    let second = matmul(interp, &x, &ppt)?;
    let ptp = matmul(interp, &pt, p)?;
    let x = matmul(interp, &ptp, &gt)?;
    let third = matmul(interp, &x, &complement_right)?;
    let sum = binary(interp, BinaryPrim::Add, &second, &third)?;
    binary(interp, BinaryPrim::Sub, &sum, &first)
}

/// JAX's rules for the decompositions (jax/_src/lax/linalg.py): `eigh_jvp_rule` on the
/// symmetrised tangent (`jnp.linalg.eigh` symmetrises its input), `_svd_jvp_rule` for the
/// singular values and the thin `U` and `Vh` (`full_matrices=False`; real matrices, so its
/// `dUdV_diag` term is zero), and `qr_jvp_rule` for the reduced `qr` of a matrix with
/// `m >= n`. The full `U`/`Vh`, and `qr` of a wide matrix or in `mode="complete"`, where
/// JAX raises NotImplementedError, have no rule: their derivative stays unknown.
fn decomposition_jvp(interp: &mut Interp, op: super::ir::LinalgOp, a: &Rc<Array>, ta: &Rc<Array>) -> AdResult<Rc<Array>> {
    use super::ir::LinalgOp as L;
    let nd = a.aval.ndim();
    let (m, n) = (a.aval.shape[nd - 2], a.aval.shape[nd - 1]);
    match op {
        L::EighValues { input } | L::EighVectors { input } => {
            let f = factors(interp, op, a)?;
            let sym = if input == EighInput::Symmetrized { symmetric_part(interp, ta)? } else { ta.clone() };
            let vt = mat_t(interp, &f.left)?;
            let p = matmul(interp, &vt, &sym)?;
            let s = matmul(interp, &p, &f.left)?;
            if matches!(op, L::EighValues { .. }) {
                return matrix_diagonal(interp, &s);
            }
            let gaps = eigen_gaps(interp, &f.middle, &s.aval)?;
            let p = binary(interp, BinaryPrim::Mul, &gaps, &s)?;
            matmul(interp, &f.left, &p)
        }
        L::SvdValues => {
            let f = factors(interp, op, a)?;
            let ut = mat_t(interp, &f.left)?;
            let p = matmul(interp, &ut, ta)?;
            let s = matmul(interp, &p, &f.right)?;
            matrix_diagonal(interp, &s)
        }
        L::SvdU { full: false } | L::SvdVh { full: false } => {
            let f = factors(interp, op, a)?;
            let (u, s, v) = (&f.left, &f.middle, &f.right);
            let ut = mat_t(interp, u)?;
            let p = matmul(interp, &ut, ta)?;
            let ds = matmul(interp, &p, v)?;
            let gaps = singular_gaps(interp, s, &ds.aval)?;
            let (s_row, s_col) = (spread_vector(interp, s, &ds.aval.shape, true)?, spread_vector(interp, s, &ds.aval.shape, false)?);
            // dU = U (F ∘ (dS·S + S·dSᵀ)) [+ (I - UUᵀ) dA V S⁻¹ when m > n]
            // dV = V (F ∘ (S·dS + dSᵀ·S)) [+ (I - VVᵀ) dAᵀ U S⁻¹ when n > m]; dVh = dVᵀ.
            let along_u = matches!(op, L::SvdU { .. });
            let scaled = binary(interp, BinaryPrim::Mul, &ds, if along_u { &s_row } else { &s_col })?;
            let scaled_t = mat_t(interp, &scaled)?;
            let sum = binary(interp, BinaryPrim::Add, &scaled, &scaled_t)?;
            let inner = binary(interp, BinaryPrim::Mul, &gaps, &sum)?;
            let (basis, other) = if along_u { (u, v) } else { (v, u) };
            let mut d = matmul(interp, basis, &inner)?;
            if (along_u && m > n) || (!along_u && n > m) {
                let da = if along_u { ta.clone() } else { mat_t(interp, ta)? };
                let dav = matmul(interp, &da, other)?;
                let bt = mat_t(interp, basis)?;
                let p = matmul(interp, &bt, &dav)?;
                let p = matmul(interp, basis, &p)?;
                let rest = binary(interp, BinaryPrim::Sub, &dav, &p)?;
                let s_rows = spread_vector(interp, s, &rest.aval.shape, true)?;
                let rest = binary(interp, BinaryPrim::Div, &rest, &s_rows)?;
                d = binary(interp, BinaryPrim::Add, &d, &rest)?;
            }
            if along_u {
                Ok(d)
            } else {
                mat_t(interp, &d)
            }
        }
        L::QrQ { full } | L::QrR { full } if m >= n && (!full || m == n) => {
            let f = factors(interp, op, a)?;
            let (q, r) = (&f.left, &f.middle);
            // Y = da · R⁻¹, from Rᵀ Yᵀ = daᵀ.
            let upper_t = Triangle { lower: false, transpose_a: true, unit_diagonal: false };
            let dat = mat_t(interp, ta)?;
            let yt = upper_t.solve(interp, r, &dat)?;
            let y = mat_t(interp, &yt)?;
            let qt = mat_t(interp, q)?;
            let z = matmul(interp, &qt, &y)?;
            let below = diagonal_mask(interp, &z.aval, true, 0.0)?;
            let lo = keep_where(interp, &z, &below)?;
            let lo_t = mat_t(interp, &lo)?;
            let skew = binary(interp, BinaryPrim::Sub, &lo, &lo_t)?;
            if matches!(op, L::QrQ { .. }) {
                let d = binary(interp, BinaryPrim::Sub, &skew, &z)?;
                let p = matmul(interp, q, &d)?;
                binary(interp, BinaryPrim::Add, &p, &y)
            } else {
                let d = binary(interp, BinaryPrim::Sub, &z, &skew)?;
                matmul(interp, &d, r)
            }
        }
        _ => Err(AdError::NoRule(Prim::Linalg(op).name())),
    }
}

/// The transposes of `decomposition_jvp`'s linear maps.
fn decomposition_transpose(interp: &mut Interp, op: super::ir::LinalgOp, a: &Rc<Array>, g: &Rc<Array>) -> AdResult<Rc<Array>> {
    use super::ir::LinalgOp as L;
    let nd = a.aval.ndim();
    let (m, n) = (a.aval.shape[nd - 2], a.aval.shape[nd - 1]);
    match op {
        // sym(V · (F ∘ Vᵀg) · Vᵀ), sym(V · diag(g) · Vᵀ); without the sym for a triangle.
        L::EighValues { input } | L::EighVectors { input } => {
            let f = factors(interp, op, a)?;
            let vt = mat_t(interp, &f.left)?;
            let inner = if matches!(op, L::EighValues { .. }) {
                let gs = spread_vector(interp, g, &a.aval.shape, true)?;
                let eye = diagonal_mask(interp, &a.aval, false, 1.0)?;
                binary(interp, BinaryPrim::Mul, &gs, &eye)?
            } else {
                let p = matmul(interp, &vt, g)?;
                let gaps = eigen_gaps(interp, &f.middle, &p.aval)?;
                binary(interp, BinaryPrim::Mul, &gaps, &p)?
            };
            let p = matmul(interp, &f.left, &inner)?;
            let p = matmul(interp, &p, &vt)?;
            if input == EighInput::Symmetrized {
                return symmetric_part(interp, &p);
            }
            Ok(p)
        }
        // U · diag(g) · Vᵀ
        L::SvdValues => {
            let f = factors(interp, op, a)?;
            let gs = spread_vector(interp, g, &f.left.aval.shape, true)?;
            let p = binary(interp, BinaryPrim::Mul, &f.left, &gs)?;
            let vh = mat_t(interp, &f.right)?;
            matmul(interp, &p, &vh)
        }
        // With K = F ∘ (Bᵀ G) for the basis B (U, or V with G = gᵀ for Vh): U · M · Vᵀ,
        // M = (K + Kᵀ)·S for U and S·(K + Kᵀ) for V, plus the part of G outside B's span.
        L::SvdU { full: false } | L::SvdVh { full: false } => {
            let f = factors(interp, op, a)?;
            let (u, s, v) = (&f.left, &f.middle, &f.right);
            let along_u = matches!(op, L::SvdU { .. });
            let g = if along_u { g.clone() } else { mat_t(interp, g)? };
            let (basis, other) = if along_u { (u, v) } else { (v, u) };
            let bt = mat_t(interp, basis)?;
            let h = matmul(interp, &bt, &g)?;
            let gaps = singular_gaps(interp, s, &h.aval)?;
            let k = binary(interp, BinaryPrim::Mul, &gaps, &h)?;
            let kt = mat_t(interp, &k)?;
            let sum = binary(interp, BinaryPrim::Add, &k, &kt)?;
            let spread = spread_vector(interp, s, &sum.aval.shape, along_u)?;
            let mid = binary(interp, BinaryPrim::Mul, &sum, &spread)?;
            let vt = mat_t(interp, v)?;
            let p = matmul(interp, u, &mid)?;
            let mut ct = matmul(interp, &p, &vt)?;
            if (along_u && m > n) || (!along_u && n > m) {
                let p = matmul(interp, basis, &h)?;
                let rest = binary(interp, BinaryPrim::Sub, &g, &p)?;
                let s_rows = spread_vector(interp, s, &rest.aval.shape, true)?;
                let rest = binary(interp, BinaryPrim::Div, &rest, &s_rows)?;
                let ot = mat_t(interp, other)?;
                let extra = if along_u {
                    matmul(interp, &rest, &ot)?
                } else {
                    let p = matmul(interp, &rest, &ot)?;
                    mat_t(interp, &p)?
                };
                ct = binary(interp, BinaryPrim::Add, &ct, &extra)?;
            }
            Ok(ct)
        }
        L::QrQ { full } | L::QrR { full } if m >= n && (!full || m == n) => {
            let f = factors(interp, op, a)?;
            let (q, r) = (&f.left, &f.middle);
            let qt = mat_t(interp, q)?;
            // The cotangents of Z = Qᵀ Y, of the skew part and of Y, from dQ = Q (skew - Z) + Y
            // or dR = (Z - skew) R.
            let (g_z, g_skew, mut g_y) = if matches!(op, L::QrQ { .. }) {
                let p = matmul(interp, &qt, g)?;
                (unary(interp, UnaryPrim::Neg, &p)?, p, Some(g.clone()))
            } else {
                let rt = mat_t(interp, r)?;
                let p = matmul(interp, g, &rt)?;
                (p.clone(), unary(interp, UnaryPrim::Neg, &p)?, None)
            };
            // skew = lo - loᵀ, lo = tril(Z, -1)
            let g_skew_t = mat_t(interp, &g_skew)?;
            let g_lo = binary(interp, BinaryPrim::Sub, &g_skew, &g_skew_t)?;
            let below = diagonal_mask(interp, &g_lo.aval, true, 0.0)?;
            let g_lo = keep_where(interp, &g_lo, &below)?;
            let g_z = binary(interp, BinaryPrim::Add, &g_z, &g_lo)?;
            let p = matmul(interp, q, &g_z)?;
            let total = match g_y.take() {
                Some(gy) => binary(interp, BinaryPrim::Add, &gy, &p)?,
                None => p,
            };
            // da = g_Y · R⁻ᵀ, from R daᵀ = g_Yᵀ.
            let upper = Triangle { lower: false, transpose_a: false, unit_diagonal: false };
            let tt = mat_t(interp, &total)?;
            let x = upper.solve(interp, r, &tt)?;
            mat_t(interp, &x)
        }
        _ => Err(AdError::NoRule(Prim::Linalg(op).name())),
    }
}

/// `reduce_max`/`reduce_min`: 0/1 locations of the chosen elements (ties share) and their
/// counts per output element (JAX's `_reduce_chooser_jvp_rule`).
fn chooser_locations(interp: &mut Interp, x: &Rc<Array>, out: &Rc<Array>, axes: &[usize]) -> AdResult<(Rc<Array>, Rc<Array>)> {
    let kept: Vec<usize> = (0..x.aval.ndim()).filter(|d| !axes.contains(d)).collect();
    let ob = broadcast_in_dim(interp, out, &x.aval.shape, &kept)?;
    let eq = compare(interp, CmpPrim::Eq, x, &ob)?;
    let loc = mask_as(interp, &eq, x.aval.dtype, false)?;
    let counts = reduce_sum(interp, &loc, axes)?;
    Ok((loc, counts))
}

/// The transpose (VJP) rule: cotangents of the inputs from cotangents of the outputs. Only
/// entries for `active` inputs are used.
fn transpose(
    interp: &mut Interp,
    eqn: &Eqn,
    ins: &[Rc<Array>],
    outs: &[Rc<Array>],
    gs: &[Option<Rc<Array>>],
    active: &[bool],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    // JAX refuses reverse mode through a while loop, whatever its carry.
    if matches!(eqn.prim, Prim::While | Prim::Opaque("while")) {
        return Err(while_loop_error(interp));
    }
    // A `cond` the replay could not resolve (its index is traced): a `cond` of transposes.
    if matches!(eqn.prim, Prim::Cond { .. }) {
        return super::ad_control::cond_transpose(interp, eqn, ins, gs, active);
    }
    if let Some(block) = super::prims::block(&eqn.prim) {
        return block.transpose(interp, ins, gs, active);
    }
    let (out, g) = match (outs, gs) {
        ([out], [Some(g)]) => (out, g),
        _ => return Err(no_rule(eqn)),
    };
    let n = ins.len();
    let mut cts: Vec<Option<Rc<Array>>> = vec![None; n];
    if let Some(ds) = partials(interp, eqn, ins, out, active)? {
        for (i, d) in ds.iter().enumerate() {
            if !active.get(i).copied().unwrap_or(false) {
                continue;
            }
            if let Some(c) = apply(interp, g, d, true)? {
                cts[i] = Some(sum_to_shape(interp, &c, &ins[i].aval.shape)?);
            }
        }
        return Ok(cts);
    }
    let in_shape = |i: usize| ins[i].aval.shape.to_vec();
    match &eqn.prim {
        Prim::StopGradient | Prim::Full { .. } | Prim::Iota { .. } => {}
        Prim::ConvertElementType { .. } => {
            if differentiable(ins[0].aval.dtype) {
                cts[0] = Some(with_aval(interp, g.clone(), &ins[0].aval)?);
            }
        }
        Prim::Reshape { .. } | Prim::Squeeze { .. } => cts[0] = Some(reshape(interp, g, &in_shape(0))?),
        Prim::Transpose { permutation } => {
            let mut inverse = vec![0; permutation.len()];
            for (i, &p) in permutation.iter().enumerate() {
                *inverse.get_mut(p).ok_or_else(|| no_rule(eqn))? = i;
            }
            cts[0] = Some(bind(interp, Prim::Transpose { permutation: inverse }, std::slice::from_ref(g))?);
        }
        Prim::Rev { dimensions } => {
            cts[0] = Some(bind(interp, Prim::Rev { dimensions: dimensions.clone() }, std::slice::from_ref(g))?);
        }
        Prim::BroadcastInDim { shape, broadcast_dimensions } => {
            let src = in_shape(0);
            if broadcast_dimensions.windows(2).any(|w| w[0] >= w[1]) || broadcast_dimensions.len() != src.len() {
                return Err(no_rule(eqn));
            }
            let axes: Vec<usize> = (0..shape.len())
                .filter(|d| match broadcast_dimensions.iter().position(|b| b == d) {
                    None => true,
                    Some(i) => src[i] == 1 && shape[*d] != 1,
                })
                .collect();
            let summed = reduce_sum(interp, g, &axes)?;
            cts[0] = Some(reshape(interp, &summed, &src)?);
        }
        Prim::Reduce { op: ReduceOp::Sum, axes } => {
            let kept: Vec<usize> = (0..ins[0].aval.ndim()).filter(|d| !axes.contains(d)).collect();
            cts[0] = Some(broadcast_in_dim(interp, g, &in_shape(0), &kept)?);
        }
        Prim::Reduce { op: ReduceOp::Max | ReduceOp::Min, axes } => {
            let (loc, counts) = chooser_locations(interp, &ins[0], out, axes)?;
            let share = binary(interp, BinaryPrim::Div, g, &counts)?;
            let kept: Vec<usize> = (0..ins[0].aval.ndim()).filter(|d| !axes.contains(d)).collect();
            let spread = broadcast_in_dim(interp, &share, &in_shape(0), &kept)?;
            cts[0] = Some(binary(interp, BinaryPrim::Mul, &spread, &loc)?);
        }
        Prim::Cumulative { op: ReduceOp::Sum, axis, reverse } => {
            let prim = Prim::Cumulative { op: ReduceOp::Sum, axis: *axis, reverse: !reverse };
            cts[0] = Some(bind(interp, prim, std::slice::from_ref(g))?);
        }
        Prim::Slice { start, strides, .. } => cts[0] = Some(unslice(interp, g, start, strides, &in_shape(0))?),
        Prim::Concatenate { dimension } if ins.iter().all(|x| *dimension < x.aval.ndim()) => {
            let mut offset = 0;
            for (i, x) in ins.iter().enumerate() {
                let size = x.aval.shape.get(*dimension).copied().unwrap_or(0);
                if active[i] {
                    let mut start = vec![0; x.aval.ndim()];
                    let mut limit = g.aval.shape.to_vec();
                    start[*dimension] = offset;
                    limit[*dimension] = offset + size;
                    let prim = Prim::Slice { start, limit, strides: vec![1; x.aval.ndim()] };
                    cts[i] = Some(bind(interp, prim, std::slice::from_ref(g))?);
                }
                offset += size;
            }
        }
        Prim::Select => {
            let z = zeros(interp, &g.aval)?;
            let pred = ins[0].clone();
            if active[1] {
                let c = bind(interp, Prim::Select, &[pred.clone(), g.clone(), z.clone()])?;
                cts[1] = Some(sum_to_shape(interp, &c, &in_shape(1))?);
            }
            if active[2] {
                let c = bind(interp, Prim::Select, &[pred, z, g.clone()])?;
                cts[2] = Some(sum_to_shape(interp, &c, &in_shape(2))?);
            }
        }
        Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
            let dims = DotDims { lhs_contract, rhs_contract, lhs_batch, rhs_batch };
            products::dot_general_transpose(interp, &dims, ins, g, active, &mut cts)?;
        }
        // The operand's part of the cotangent, cut out again; the padding value's is the rest.
        Prim::Pad { config } if ins.len() == 2 && config.iter().all(|&(lo, hi, interior)| lo >= 0 && hi >= 0 && interior == 0) => {
            let start: Vec<usize> = config.iter().map(|c| c.0 as usize).collect();
            let limit: Vec<usize> = start.iter().zip(&ins[0].aval.shape).map(|(s, n)| s + n).collect();
            // JAX cuts it out with a `pad` by a strongly typed zero: strongly typed.
            let inner = bind_strong(interp, Prim::Slice { start, limit, strides: vec![1; config.len()] }, std::slice::from_ref(g))?;
            if active[1] && !active[0] {
                // JAX 0.10.2's `_pad_transpose` sums the operand's cotangent to get the padding
                // value's, and has none when the operand is not differentiated.
                return Err(AdError::Raise(interp.raise(
                    "TypeError",
                    Code::PythonException,
                    "Error interpreting argument to reduce_sum as a JAX value. The problematic value is of type <class 'NoneType'> and was passed to reduce_sum at position 0.\n",
                )));
            }
            if active[1] {
                let all: Vec<usize> = (0..g.aval.ndim()).collect();
                let total = reduce_sum(interp, g, &all)?;
                let kept = reduce_sum(interp, &inner, &all)?;
                cts[1] = Some(binary(interp, BinaryPrim::Sub, &total, &kept)?);
            }
            if active[0] {
                cts[0] = Some(inner);
            }
        }
        // Each cotangent goes back to where its element came from: `perm = argsort(x)`,
        // `ct[perm] = g` (1-D; other ranks have no rule yet).
        // JAX's sort JVP gathers the tangent where an iota sorted along with the keys says each
        // element came from; the transpose adds the cotangent back at those places. For any rank
        // and axis the places are flat indices into the operand: the sorted iota on the sorted
        // axis, each other axis' own iota, times the strides.
        Prim::Sort { dimension, num_keys: 1 } if ins.len() == 1 && *dimension < ins[0].aval.ndim() => {
            if active[0] {
                let shape = in_shape(0);
                let iota = |interp: &mut Interp, dimension: usize| {
                    bind(interp, Prim::Iota { dtype: DType::I32, shape: shape.clone(), dimension }, &[])
                };
                let sorted_iota = iota(interp, *dimension)?;
                let perm = bind(interp, eqn.prim.clone(), &[ins[0].clone(), sorted_iota])?;
                let mut flat: Option<Rc<Array>> = None;
                let mut stride = 1usize;
                for axis in (0..shape.len()).rev() {
                    let coord = if axis == *dimension { perm.clone() } else { iota(interp, axis)? };
                    let term = match stride {
                        1 => coord,
                        _ => binary(interp, BinaryPrim::Mul, &coord, &scalar(stride as f64, &Aval::scalar(DType::I32)))?,
                    };
                    flat = Some(match flat {
                        Some(sum) => binary(interp, BinaryPrim::Add, &sum, &term)?,
                        None => term,
                    });
                    stride *= shape[axis];
                }
                let places = match flat {
                    Some(f) => reshape(interp, &f, &[stride])?,
                    None => return Err(no_rule(eqn)),
                };
                let flat_aval = Aval::new(&[stride], ins[0].aval.dtype).weak(ins[0].aval.weak);
                let operands = [zeros(interp, &flat_aval)?, reshape(interp, g, &[stride])?, places];
                let prim = Prim::Scatter {
                    op: ScatterOp::Add,
                    mode: super::ir::IndexMode::Clip,
                    index: Some(vec![IndexItem::Array]),
                    unique_indices: false,
                };
                let summed = bind(interp, prim, &operands)?;
                cts[0] = Some(reshape(interp, &summed, &shape)?);
            }
        }
        // The transpose of reading places is adding into them (JAX's `_gather_transpose_rule`).
        Prim::Gather { mode, index, .. } => {
            if active[0] {
                // Into strongly typed zeros, as JAX's `_gather_transpose_rule`.
                let mut operands = vec![zeros(interp, &ins[0].aval.clone().weak(false))?, g.clone()];
                operands.extend(ins[1..].iter().cloned());
                let prim = Prim::Scatter { op: ScatterOp::Add, mode: *mode, index: Some(index.clone()), unique_indices: false };
                cts[0] = Some(bind(interp, prim, &operands)?);
            }
        }
        // JAX's `_dynamic_slice_transpose_rule`: the cotangent written into (strongly typed)
        // zeros at the same, equally clamped, place.
        Prim::DynamicSlice { .. } if ins.len() == 1 + ins[0].aval.ndim() => {
            if active[0] {
                let aval = ins[0].aval.clone().weak(false);
                let mut operands = vec![zeros(interp, &aval)?, g.clone()];
                operands.extend(ins[1..].iter().cloned());
                cts[0] = Some(bind(interp, Prim::DynamicUpdateSlice, &operands)?);
            }
        }
        // JAX's `_dynamic_update_slice_transpose_rule`: the operand gets the cotangent with the
        // window zeroed, the update the window.
        Prim::DynamicUpdateSlice if ins.len() == 2 + ins[0].aval.ndim() => {
            if active[0] {
                let mut operands = vec![g.clone(), zeros(interp, &ins[1].aval.clone().weak(g.aval.weak))?];
                operands.extend(ins[2..].iter().cloned());
                cts[0] = Some(bind(interp, Prim::DynamicUpdateSlice, &operands)?);
            }
            if active[1] {
                let sizes = ins[1].aval.shape.to_vec();
                let operands: Vec<Rc<Array>> = std::iter::once(g.clone()).chain(ins[2..].iter().cloned()).collect();
                cts[1] = Some(bind(interp, Prim::DynamicSlice { sizes: sizes.clone() }, &operands)?);
            }
        }
        Prim::Scatter { op: op @ (ScatterOp::Add | ScatterOp::Set), mode, index: Some(index), .. } if ins.len() >= 2 => {
            if active[0] {
                cts[0] = Some(if *op == ScatterOp::Add {
                    g.clone()
                } else {
                    // What `set` overwrote does not reach the output.
                    let mut operands = vec![g.clone(), zeros(interp, &ins[1].aval)?];
                    operands.extend(ins[2..].iter().cloned());
                    bind(interp, eqn.prim.clone(), &operands)?
                });
            }
            if active[1] {
                // With an index array, `set` may write one place twice, and only the last
                // update reaches the output: not modelled.
                if *op == ScatterOp::Set && index.iter().any(|i| matches!(i, IndexItem::Array)) {
                    return Err(no_rule(eqn));
                }
                let operands: Vec<Rc<Array>> = std::iter::once(g.clone()).chain(ins[2..].iter().cloned()).collect();
                let prim = zero_fill_gather(*mode, index);
                let picked = bind(interp, prim, &operands)?;
                cts[1] = Some(sum_to_shape(interp, &picked, &ins[1].aval.shape)?);
            }
        }
        // JAX's `_scatter_mul_transpose_rule`: the operand's cotangent is scaled by the same
        // updates; the updates' is `(g · x)[idx]`, for unique indices only.
        Prim::Scatter { op: ScatterOp::Mul, mode, index: Some(index), unique_indices } if ins.len() >= 2 => {
            if active[1] {
                unique_scatter_indices(interp, *unique_indices)?;
                let gx = binary(interp, BinaryPrim::Mul, g, &ins[0])?;
                let operands: Vec<Rc<Array>> = std::iter::once(gx.clone()).chain(ins[2..].iter().cloned()).collect();
                let prim = zero_fill_gather(*mode, index);
                let picked = bind(interp, prim, &operands)?;
                cts[1] = Some(sum_to_shape(interp, &picked, &ins[1].aval.shape)?);
            }
            if active[0] {
                let operands: Vec<Rc<Array>> = [g.clone(), ins[1].clone()].into_iter().chain(ins[2..].iter().cloned()).collect();
                cts[0] = Some(bind(interp, eqn.prim.clone(), &operands)?);
            }
        }
        // The transpose of `_scatter_extremal_jvp`'s linear map.
        Prim::Scatter { op: ScatterOp::Min | ScatterOp::Max, mode, index: Some(index), .. } if ins.len() >= 2 => {
            let sc = ExtremalScatter::new(interp, eqn, *mode, index, ins, out)?;
            let picked = sc.gather(interp, g)?;
            if active[0] {
                let back = binary(interp, BinaryPrim::Mul, &picked, &sc.operand_coef)?;
                let zero = zeros(interp, &g.aval)?;
                let spread = sc.scatter_add(interp, &zero, &back)?;
                cts[0] = Some(binary(interp, BinaryPrim::Add, g, &spread)?);
            }
            if active[1] {
                let to_u = binary(interp, BinaryPrim::Mul, &picked, &sc.update_coef)?;
                cts[1] = Some(sum_to_shape(interp, &to_u, &ins[1].aval.shape)?);
            }
        }
        Prim::Linalg(op) => return linalg_transpose(interp, *op, symmetrised(eqn), ins, out, g, active),
        Prim::TopK { k } => {
            if active[0] {
                let places = TopKPlaces::new(interp, &ins[0], *k, &out.aval)?;
                let aval = ins[0].aval.clone().weak(false);
                let mut operands = vec![zeros(interp, &aval)?, g.clone()];
                operands.extend(places.arrays);
                let prim = Prim::Scatter {
                    op: ScatterOp::Add,
                    mode: super::ir::IndexMode::PromiseInBounds,
                    index: Some(places.index),
                    unique_indices: false,
                };
                cts[0] = Some(bind(interp, prim, &operands)?);
            }
        }
        families::random!()
        | families::control_flow!()
        | families::calls!()
        | Prim::Unary(_)
        | Prim::Binary(_)
        | Prim::Compare(_)
        | Prim::Clamp
        | Prim::IntegerPow(_)
        | Prim::DynamicSlice { .. }
        | Prim::DynamicUpdateSlice
        | Prim::Concatenate { .. }
        | Prim::Pad { .. }
        | Prim::Reduce { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Sort { .. }
        | Prim::Scatter { .. }
        | Prim::TopKIndices { .. }
        | Prim::DebugCallback
        | Prim::Opaque(_)
        | Prim::Block(_) => return Err(no_rule(eqn)),
    }
    Ok(cts)
}

/// The transpose of a slice: `g` placed at `start`, every `stride`-th element, in zeros of
/// `shape` (JAX pads with interior padding; here each axis is interleaved with zeros and
/// padded with concatenate).
fn unslice(interp: &mut Interp, g: &Rc<Array>, start: &[usize], strides: &[usize], shape: &[usize]) -> AdResult<Rc<Array>> {
    if start.len() != shape.len() || g.aval.ndim() != shape.len() {
        return Err(AdError::NoRule("a slice of another rank".into()));
    }
    let mut cur = g.clone();
    for axis in 0..shape.len() {
        let stride = strides.get(axis).copied().unwrap_or(1).max(1);
        let k = cur.aval.shape[axis];
        if stride > 1 && k > 0 {
            // [.., k, ..] -> [.., k, 1, ..] ++ zeros [.., k, stride-1, ..] -> [.., k*stride, ..]
            let mut s1 = cur.aval.shape.to_vec();
            s1.insert(axis + 1, 1);
            let col = reshape(interp, &cur, &s1)?;
            let mut sz = s1.clone();
            sz[axis + 1] = stride - 1;
            let z = zeros(interp, &cur.aval.with_shape(&sz).weak(false))?;
            let mut s2 = s1.clone();
            s2[axis + 1] = stride;
            let spread = bind_strong(interp, Prim::Concatenate { dimension: axis + 1 }, &[col, z])?;
            let mut s3 = cur.aval.shape.to_vec();
            s3[axis] = k * stride;
            cur = reshape(interp, &spread, &s3)?;
        }
        let extent = shape[axis].saturating_sub(start[axis]);
        let len = cur.aval.shape[axis];
        if len > extent {
            let mut limit = cur.aval.shape.to_vec();
            limit[axis] = extent;
            let prim = Prim::Slice { start: vec![0; shape.len()], limit: limit.clone(), strides: vec![1; shape.len()] };
            cur = bind(interp, prim, std::slice::from_ref(&cur))?;
        }
        let (before, after) = (start[axis], extent.saturating_sub(cur.aval.shape[axis]));
        if before == 0 && after == 0 {
            continue;
        }
        let mut ops = Vec::new();
        for (size, is_before) in [(before, true), (after, false)] {
            if size == 0 {
                continue;
            }
            let mut s = cur.aval.shape.to_vec();
            s[axis] = size;
            // JAX pads with `_const(t, 0)`: strongly typed, and so is the result.
            let z = zeros(interp, &cur.aval.with_shape(&s).weak(false))?;
            if is_before {
                ops.push(z);
                ops.push(cur.clone());
            } else {
                if ops.is_empty() {
                    ops.push(cur.clone());
                }
                ops.push(z);
            }
        }
        let mut total = cur.aval.shape.to_vec();
        total[axis] = shape[axis];
        cur = bind_strong(interp, Prim::Concatenate { dimension: axis }, &ops)?;
    }
    Ok(cur)
}

// ---------------------------------------------------------------------------------------
// Entry points for the transformations in transforms/ (autodiff.rs, dispatch.rs).

/// What AD needs from a grad/jvp trace: its jaxpr, the values it closed over, and the value
/// behind each input tracer with the index of the argument it came from.
pub struct AdTrace {
    pub jaxpr: Rc<Jaxpr>,
    pub consts: Vec<Rc<Array>>,
    pub inputs: Vec<(usize, Rc<Array>)>,
}

impl std::fmt::Debug for Linearization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Linearization({} outputs)", self.outputs.len())
    }
}

/// Unknown derivatives become `None`; Python exceptions propagate.
fn finish<T>(r: AdResult<T>) -> crate::interp::PyResult<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(AdError::NoRule(_)) => Ok(None),
        Err(AdError::Raise(f)) => Err(f),
    }
}

/// Most forward or backward passes one Jacobian may take, and most elements it may have.
const MAX_JACOBIAN_PASSES: usize = 1024;
const MAX_JACOBIAN_ELEMENTS: u128 = 1 << 20;

impl AdTrace {
    /// Replays the trace at its inputs (with the avals they were traced with), differentiating
    /// the inputs of the arguments `active` selects.
    fn linearize(&self, interp: &mut Interp, active: &dyn Fn(usize) -> bool) -> AdResult<Linearization> {
        if self.inputs.len() != self.jaxpr.invars.len() {
            return Err(AdError::NoRule("inputs that do not match the trace".into()));
        }
        let mut inputs = Vec::with_capacity(self.inputs.len());
        for ((_, x), (_, aval)) in self.inputs.iter().zip(&self.jaxpr.invars) {
            inputs.push(with_aval(interp, x.clone(), aval)?);
        }
        let flags: Vec<bool> = self.inputs.iter().map(|(i, _)| active(*i)).collect();
        linearize(interp, &self.jaxpr, &self.consts, &inputs, &flags)
    }

    /// Positions of the inputs that came from argument `arg`.
    fn inputs_of(&self, arg: usize) -> Vec<usize> {
        self.inputs.iter().enumerate().filter(|(_, (i, _))| *i == arg).map(|(j, _)| j).collect()
    }

    fn input_aval(&self, j: usize) -> AdResult<Aval> {
        self.jaxpr.invars.get(j).map(|(_, a)| a.clone()).ok_or_else(|| AdError::NoRule("an input".into()))
    }

    /// The cotangent of input `j`, zeros when none reached it, with the input's aval.
    fn input_ct(&self, interp: &mut Interp, cts: &[Option<Rc<Array>>], j: usize) -> AdResult<Rc<Array>> {
        input_cotangent(interp, cts.get(j).cloned().flatten(), &self.input_aval(j)?)
    }
}

/// The cotangent of an input of aval `aval` (`None` is a zero), in the input's dtype. Its weak
/// type is the one the transpose rules gave it, as in JAX: the gradient of a weakly typed
/// parameter is weakly typed only when every operation on the way back kept it so (a
/// `dot_general` with a strongly typed operand, `x[0]` or `sqrt` make it strong); a strongly
/// typed input's is always strongly typed.
fn input_cotangent(interp: &mut Interp, ct: Option<Rc<Array>>, aval: &Aval) -> AdResult<Rc<Array>> {
    match ct {
        Some(c) => {
            let weak = aval.weak && c.aval.weak;
            with_aval(interp, c, &aval.clone().weak(weak))
        }
        None => zeros(interp, aval),
    }
}

/// The values of `grad`/`value_and_grad`: the replayed outputs, and for each differentiated
/// argument the gradient of output 0 with respect to each of its leaves.
pub struct GradValues {
    pub outputs: Vec<Rc<Array>>,
    pub grads: Vec<Vec<Rc<Array>>>,
}

pub fn grad_values(interp: &mut Interp, ad: &AdTrace, argnums: &[usize]) -> crate::interp::PyResult<Option<GradValues>> {
    finish(grad_values_inner(interp, ad, argnums))
}

fn grad_values_inner(interp: &mut Interp, ad: &AdTrace, argnums: &[usize]) -> AdResult<GradValues> {
    let lin = ad.linearize(interp, &|i| argnums.contains(&i))?;
    let out = lin.outputs.first().ok_or_else(|| AdError::NoRule("a function without outputs".into()))?;
    let mut cts = vec![None; lin.outputs.len()];
    cts[0] = Some(Array::scalar(1.0, out.aval.dtype, out.aval.weak));
    let in_cts = pullback(interp, &lin, &cts)?;
    let mut grads = Vec::with_capacity(argnums.len());
    for &n in argnums {
        let leaves = ad.inputs_of(n).into_iter().map(|j| ad.input_ct(interp, &in_cts, j)).collect::<AdResult<Vec<_>>>()?;
        grads.push(leaves);
    }
    Ok(GradValues { outputs: lin.outputs, grads })
}

/// The values of `jacfwd`/`jacrev` with respect to argument `argnum` (one array): one
/// Jacobian per output leaf, of shape `out.shape + x.shape`, with the avals `expected`.
pub fn jacobian_values(
    interp: &mut Interp,
    ad: &AdTrace,
    argnum: usize,
    forward: bool,
    expected: &[Aval],
) -> crate::interp::PyResult<Option<Vec<Rc<Array>>>> {
    finish(jacobian_values_inner(interp, ad, argnum, forward, expected))
}

fn one_hot(aval: &Aval, k: usize) -> Rc<Array> {
    Array::built(aval.clone().weak(false), || {
        let mut data = ndarray::ArrayD::<f64>::zeros(ndarray::IxDyn(&aval.shape));
        if let Some(x) = data.iter_mut().nth(k) {
            *x = 1.0;
        }
        data
    })
}

fn jacobian_values_inner(interp: &mut Interp, ad: &AdTrace, argnum: usize, forward: bool, expected: &[Aval]) -> AdResult<Vec<Rc<Array>>> {
    let [jx] = ad.inputs_of(argnum)[..] else {
        return Err(AdError::NoRule("a Jacobian with respect to a pytree".into()));
    };
    let x_aval = ad.input_aval(jx)?;
    let lin = ad.linearize(interp, &|i| i == argnum)?;
    let outs: Vec<Aval> = lin.outputs.iter().map(|o| o.aval.clone()).collect();
    let n = x_aval.size();
    let m: u128 = outs.iter().map(Aval::size).sum();
    let passes = if forward { n } else { m };
    if outs.len() != expected.len()
        || passes > MAX_JACOBIAN_PASSES as u128
        || n.saturating_mul(m) > MAX_JACOBIAN_ELEMENTS
        || passes == 0
        || outs.iter().any(|o| o.size() == 0)
        || outs.iter().any(|o| !differentiable(o.dtype))
    {
        return Err(AdError::NoRule("a Jacobian too large to compute".into()));
    }
    let x_shape = x_aval.shape.to_vec();
    let mut jacobians = Vec::with_capacity(outs.len());
    if forward {
        let mut columns: Vec<Vec<Rc<Array>>> = vec![Vec::new(); outs.len()];
        for k in 0..n as usize {
            let mut tangents = vec![None; ad.inputs.len()];
            tangents[jx] = Some(one_hot(&x_aval, k));
            let out_tangents = pushforward(interp, &lin, &tangents)?;
            for (j, o) in outs.iter().enumerate() {
                let t = match out_tangents.get(j).cloned().flatten() {
                    Some(t) => t,
                    None => zeros(interp, &o.clone().weak(false))?,
                };
                let mut s = o.shape.to_vec();
                s.push(1);
                columns[j].push(reshape(interp, &t, &s)?);
            }
        }
        for ((o, cols), want) in outs.iter().zip(columns).zip(expected) {
            let mut s = o.shape.to_vec();
            s.push(n as usize);
            let stacked = bind(interp, Prim::Concatenate { dimension: o.ndim() }, &cols)?;
            let jac = reshape(interp, &stacked, &want.shape)?;
            jacobians.push(with_aval(interp, jac, want)?);
        }
    } else {
        for (j, (o, want)) in outs.iter().zip(expected).enumerate() {
            let mut rows = Vec::new();
            for k in 0..o.size() as usize {
                let mut cts = vec![None; outs.len()];
                cts[j] = Some(one_hot(o, k));
                let in_cts = pullback(interp, &lin, &cts)?;
                let row = ad.input_ct(interp, &in_cts, jx)?;
                let s: Vec<usize> = std::iter::once(1).chain(x_shape.iter().copied()).collect();
                rows.push(reshape(interp, &row, &s)?);
            }
            let stacked = bind(interp, Prim::Concatenate { dimension: 0 }, &rows)?;
            let jac = reshape(interp, &stacked, &want.shape)?;
            jacobians.push(with_aval(interp, jac, want)?);
        }
    }
    Ok(jacobians)
}

/// The replayed outputs of `jax.jvp`'s function and its output tangents for the given input
/// tangents (one per input, `None` for zero), with the avals `expected`.
pub fn jvp_values(
    interp: &mut Interp,
    ad: &AdTrace,
    tangents: &[Option<Rc<Array>>],
    expected: &[Aval],
) -> crate::interp::PyResult<Option<(Vec<Rc<Array>>, Vec<Rc<Array>>)>> {
    finish((|| {
        let lin = ad.linearize(interp, &|_| true)?;
        let outs = pushforward(interp, &lin, tangents)?;
        let mut result = Vec::with_capacity(expected.len());
        for (t, want) in outs.into_iter().zip(expected) {
            result.push(match t {
                Some(t) => with_aval(interp, t, want)?,
                None => zeros(interp, want)?,
            });
        }
        Ok((lin.outputs, result))
    })())
}

/// `jax.vjp`'s linearized function: the replayed trace and the avals of its inputs.
#[derive(Debug)]
pub struct VjpValues {
    lin: Linearization,
    /// For each input: the argument it came from and the aval it was traced with.
    inputs: Vec<(usize, Aval)>,
}

impl VjpValues {
    /// The replayed outputs of the function.
    pub fn outputs(&self) -> &[Rc<Array>] {
        &self.lin.outputs
    }
}

pub fn vjp_linearize(interp: &mut Interp, ad: &AdTrace) -> crate::interp::PyResult<Option<VjpValues>> {
    finish((|| {
        let lin = ad.linearize(interp, &|_| true)?;
        let inputs = (0..ad.inputs.len()).map(|j| Ok((ad.inputs[j].0, ad.input_aval(j)?))).collect::<AdResult<Vec<_>>>()?;
        Ok(VjpValues { lin, inputs })
    })())
}

/// The cotangents of the inputs, grouped by argument, for cotangents of the outputs.
pub fn vjp_apply(interp: &mut Interp, v: &VjpValues, cts: &[Rc<Array>]) -> crate::interp::PyResult<Option<Vec<Vec<Rc<Array>>>>> {
    finish((|| {
        if cts.len() != v.lin.outputs.len() {
            return Err(AdError::NoRule("cotangents that do not match the outputs".into()));
        }
        let cts: Vec<Option<Rc<Array>>> = cts.iter().map(|c| Some(c.clone())).collect();
        let in_cts = pullback(interp, &v.lin, &cts)?;
        let n_args = v.inputs.iter().map(|(i, _)| i + 1).max().unwrap_or(0);
        let mut per_arg: Vec<Vec<Rc<Array>>> = vec![Vec::new(); n_args];
        for (j, (arg, aval)) in v.inputs.iter().enumerate() {
            per_arg[*arg].push(input_cotangent(interp, in_cts.get(j).cloned().flatten(), aval)?);
        }
        Ok(per_arg)
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_coverage_is_what_the_docs_say() {
        let prims = crate::jax::prims::all::all_prims();
        let names = |want: Option<bool>| -> Vec<String> {
            prims.iter().filter(|p| crate::jax::prims::properties::ad_rule(p) == want).map(|p| p.name()).collect()
        };
        let with_rule = names(Some(true));
        let without = names(Some(false));
        let not_differentiable = names(None);
        assert_eq!(with_rule.len(), 105, "{with_rule:?}");
        assert_eq!(without, ["imag", "nextafter", "scan", "vmap", "geqrf", "geqrf_taus"]);
        assert_eq!(not_differentiable.len(), 27, "{not_differentiable:?}");
        assert_eq!(crate::jax::prims::properties::ad_rule(&Prim::Opaque("softmax")), Some(false));
    }
}
