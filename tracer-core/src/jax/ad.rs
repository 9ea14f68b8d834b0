//! Automatic differentiation with values, applied to a traced jaxpr. `linearize` replays the
//! jaxpr equation by equation with `bind` (so the primal values are computed lazily by the
//! CPU kernels, or recorded into the enclosing trace inside `jit`); `pullback` and
//! `pushforward` then bind the equations of the backward or forward pass the same way.
//! Because every rule is made of ordinary primitives, the passes are themselves
//! differentiable: `hessian` is `jacfwd(jacrev(f))`, and `grad` inside `jit` becomes
//! equations of the jitted body.
//!
//! The rules of each primitive (its JVP and transpose) sit beside its abstract-evaluation rule
//! in its family's file of `jax/prims/`, written with the small builders here (`bind`,
//! `binary`, `reshape`, `sum_to_shape`, ...): elementwise primitives give their partial
//! derivatives, from which both the JVP (`t_out = Σ t_i · ∂_i`) and the transpose
//! (`ct_i = sum_to_shape(g · ∂_i)`) follow; structural linear primitives apply themselves to
//! tangents and have a transpose rule each. A primitive without a rule makes the derivative
//! *unknown* (`AdError::NoRule`), never a guess.
//!
//! Size: the replay of a jaxpr forward and backward (control flow and custom rules included),
//! the builders every rule is written with, and the entry points of `grad`/`jacfwd`/`vjp`.

use crate::jax::prims::families;
// Keyed by variable number with foldhash, which hashes an integer in a few instructions
// where SipHash takes dozens: these maps are read at every equation of a differentiated
// jaxpr (3% of run mixed_precision_bf16_mlp.py, callgrind). Nothing iterates them.
type HashMap<K, V> = crate::interp::value::HashMap<K, V>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;
use std::rc::Rc;

use super::array::Array;
use super::aval::Aval;
use super::dtypes::DType;
use super::ir::{Atom, BinaryPrim, CmpPrim, Eqn, Jaxpr, Prim, ReduceOp, UnaryPrim, VarId};
use super::{apply1, apply_with_bodies, bind1};
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
    let mut tape = Tape {
        jaxpr: jaxpr.clone(),
        env: HashMap::default(),
        active: HashSet::default(),
        bodies: HashMap::default(),
        custom: HashMap::default(),
    };
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
            Prim::While | Prim::CustomJvpCall { .. } | Prim::CustomVjpCall { .. } | families::all_but!(control_flow calls) => None,
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
                let outs = apply_with_bodies(interp, eqn.prim.clone(), &ins, eqn.bodies.clone())?;
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
    let mut cts: HashMap<VarId, Rc<Array>> = HashMap::default();
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
            // JAX refuses reverse mode through a while loop, whatever its carry.
            None if matches!(&eqn.prim, Prim::While) || matches!(&eqn.prim, Prim::Opaque(op) if op.name == "while") => {
                return Err(while_loop_error(interp))
            }
            None => {
                let active: Vec<bool> = eqn.inputs.iter().map(|a| matches!(a, Atom::Var(v) if tape.active.contains(v))).collect();
                if let Prim::Cond { .. } = eqn.prim {
                    // A `cond` the replay could not resolve (its index is traced): a `cond` of transposes.
                    super::ad_control::cond_transpose(interp, eqn, &ins, &gs, &active)?
                } else {
                    let outs = eqn.outputs.iter().map(|(v, _)| read(&tape.env, &Atom::Var(*v))).collect::<AdResult<Vec<_>>>()?;
                    super::prims::transpose(interp, eqn, &ins, &outs, &gs, &active)?
                }
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
    let mut tan: HashMap<VarId, Rc<Array>> = HashMap::default();
    // Outputs of equations without a JVP rule: an error only if an output of the jaxpr needs
    // them (forward mode visits every equation the inputs reach, used or not).
    let mut no_tangent: HashMap<VarId, String> = HashMap::default();
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
// (custom_rules/), never through the function's own equations before them.

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
pub(crate) fn bind_strong(interp: &mut Interp, prim: Prim, ins: &[Rc<Array>]) -> AdResult<Rc<Array>> {
    let aval = rule_aval(&prim, ins)?.weak(false);
    Ok(bind1(interp, prim, ins, aval)?)
}

/// The one output aval of `prim`'s rule on `ins`.
fn rule_aval(prim: &Prim, ins: &[Rc<Array>]) -> AdResult<Aval> {
    let in_avals: Vec<&Aval> = ins.iter().map(|i| &i.aval).collect();
    match super::prims::abstract_eval(prim, &in_avals, &[]) {
        Ok(mut outs) if outs.len() == 1 => Ok(outs.remove(0)),
        Ok(_) => Err(AdError::NoRule(format!("{} with other than one output", prim.name()))),
        Err(e) => Err(AdError::NoRule(format!("{} on {}: {e:?}", prim.name(), aval_list(&in_avals)))),
    }
}

fn aval_list(avals: &[&Aval]) -> String {
    avals.iter().map(|a| a.short()).collect::<Vec<_>>().join(", ")
}

pub(crate) fn binary(interp: &mut Interp, op: BinaryPrim, a: &Rc<Array>, b: &Rc<Array>) -> AdResult<Rc<Array>> {
    bind(interp, Prim::Binary(op), &[a.clone(), b.clone()])
}

pub(crate) fn unary(interp: &mut Interp, op: UnaryPrim, a: &Rc<Array>) -> AdResult<Rc<Array>> {
    bind(interp, Prim::Unary(op), std::slice::from_ref(a))
}

/// A weakly typed scalar of `like`'s dtype (JAX's `_one(x)`/`full_like(x, v, shape=())` in a
/// rule, for a weakly typed `like`).
pub(crate) fn scalar(value: f64, like: &Aval) -> Rc<Array> {
    Array::scalar(value, like.dtype, true)
}

/// JAX's `_const(x, v)` in a rule: a scalar of `x`'s dtype, weakly typed only when `x` is a
/// weakly typed scalar (otherwise a NumPy array, strongly typed). It decides the weak type of
/// the derivative: `jax.grad(lambda w: jnp.sum(jnp.sqrt(w)))` of a weakly typed array is
/// strongly typed, of a weakly typed scalar weakly typed.
pub(crate) fn konst(value: f64, like: &Aval) -> Rc<Array> {
    Array::scalar(value, like.dtype, like.weak && like.ndim() == 0)
}

pub(crate) fn compare(interp: &mut Interp, op: CmpPrim, a: &Rc<Array>, b: &Rc<Array>) -> AdResult<Rc<Array>> {
    bind(interp, Prim::Compare(op), &[a.clone(), b.clone()])
}

/// A boolean mask as 0/1 values of `dtype`.
/// Weakly typed when `weak`: JAX's rules build such masks with `_ones(z)`/`full_like`, which
/// keep `z`'s weak type (`maximum`, `relu`, `clamp`), or convert them (`reduce_max`: strong).
pub(crate) fn mask_as(interp: &mut Interp, mask: &Rc<Array>, dtype: DType, weak: bool) -> AdResult<Rc<Array>> {
    bind(interp, Prim::ConvertElementType { new_dtype: dtype, weak_type: weak }, std::slice::from_ref(mask))
}

pub(crate) fn reshape(interp: &mut Interp, a: &Rc<Array>, shape: &[usize]) -> AdResult<Rc<Array>> {
    if a.aval.shape.as_slice() == shape {
        return Ok(a.clone());
    }
    bind(interp, Prim::Reshape { new_sizes: shape.to_vec() }, std::slice::from_ref(a))
}

pub(crate) fn reduce_sum(interp: &mut Interp, a: &Rc<Array>, axes: &[usize]) -> AdResult<Rc<Array>> {
    if axes.is_empty() {
        return Ok(a.clone());
    }
    bind(interp, Prim::Reduce { op: ReduceOp::Sum, axes: axes.to_vec() }, std::slice::from_ref(a))
}

/// Broadcasts `a` to `shape`, numpy-style.
pub(crate) fn broadcast_to(interp: &mut Interp, a: &Rc<Array>, shape: &[usize]) -> AdResult<Rc<Array>> {
    if a.aval.shape.as_slice() == shape {
        return Ok(a.clone());
    }
    let off = shape.len().checked_sub(a.aval.ndim()).ok_or_else(|| AdError::NoRule("broadcast to a smaller rank".into()))?;
    let dims: Vec<usize> = (off..shape.len()).collect();
    broadcast_in_dim(interp, a, shape, &dims)
}

pub(crate) fn broadcast_in_dim(interp: &mut Interp, a: &Rc<Array>, shape: &[usize], dims: &[usize]) -> AdResult<Rc<Array>> {
    let prim = Prim::BroadcastInDim { shape: shape.to_vec(), broadcast_dimensions: dims.to_vec() };
    bind(interp, prim, std::slice::from_ref(a))
}

/// The tangent of operand `i`, or zeros of its aval where it has none (a linear rule applies
/// itself to every operand's tangent).
pub(crate) fn instantiate(interp: &mut Interp, ins: &[Rc<Array>], ts: &[Option<Rc<Array>>], i: usize) -> AdResult<Rc<Array>> {
    match &ts[i] {
        Some(t) => Ok(t.clone()),
        None => zeros(interp, &ins[i].aval),
    }
}

/// The transpose of numpy-style broadcasting: sums `g` down to `target`'s shape.
pub(crate) fn sum_to_shape(interp: &mut Interp, g: &Rc<Array>, target: &[usize]) -> AdResult<Rc<Array>> {
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
// The rules: `ad.rs` handles what is not a primitive's own (a `cond` or `while` equation, an
// output that is not differentiable); each primitive's JVP and transpose rules sit beside its
// abstract-evaluation rule in its family's file of `prims/`, reached through the registry's
// tables (`prims::jvp`, `prims::transpose`).

pub(crate) fn no_rule(eqn: &Eqn) -> AdError {
    no_rule_for(&eqn.prim)
}

pub(crate) fn no_rule_for(prim: &Prim) -> AdError {
    AdError::NoRule(prim.name())
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
    super::prims::jvp(interp, super::prims::Jvping { eqn, ins, out, ts })
}

/// JAX's error for a primitive it has no JVP rule for (`geqrf`, `nextafter`), raised when a
/// tangent reaches it: while JAX linearizes, so also where its result is not used.
pub(crate) fn no_rule_in_jax(interp: &Interp, prim: &Prim) -> AdResult<()> {
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

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

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
        assert_eq!(crate::jax::prims::properties::ad_rule(&Prim::opaque("softmax", Aval::scalar(DType::F32))), Some(false));
    }

    crate::unit_tests::list![rule_coverage_is_what_the_docs_say];
}
