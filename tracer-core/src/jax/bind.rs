//! `bind`: a primitive applied to arrays, its output avals from the primitive's rule
//! (`prims/`), recorded as an equation of the innermost trace that sees an operand, or
//! computed lazily on concrete inputs; and what `check_ir` asks of every binder.

use std::rc::Rc;

use smallvec::smallvec;

use super::array::{self, Array, ArrayKind, Lazy, Tracer};
use super::array_model;
use super::aval::Aval;
use super::ir::{Atom, Eqn, Jaxpr, Prim, VarId};
use super::state::TraceKind;
use super::{dtypes, eager_log, errors, eval_control, numerics, prims, taint};
use crate::diagnostics::Code;
use crate::interp::{Interp, PyResult};
use std::cell::RefCell;

/// JAX's `bind`: applies `prim` to `inputs`, its output avals given by the primitive's rule
/// (`prims/`); where the rule rejects the avals it raises JAX's exception. Every front end
/// binds through here (or [`apply`], [`apply1`]): no caller passes output avals. A value the
/// model does not compute is `Prim::opaque(name, aval)`, whose aval is its parameter.
pub fn apply_with_bodies(interp: &mut Interp, prim: Prim, inputs: &[Rc<Array>], bodies: Vec<Rc<Jaxpr>>) -> PyResult<Vec<Rc<Array>>> {
    let outs = rule_avals(interp, &prim, inputs, &bodies)?;
    Ok(bind_with_bodies(interp, prim, inputs, outs, bodies)?.into_vec())
}

pub fn apply(interp: &mut Interp, prim: Prim, inputs: &[Rc<Array>]) -> PyResult<Vec<Rc<Array>>> {
    apply_with_bodies(interp, prim, inputs, Vec::new())
}

pub fn apply1(interp: &mut Interp, prim: Prim, inputs: &[Rc<Array>]) -> PyResult<Rc<Array>> {
    let avals = rule_avals(interp, &prim, inputs, &[])?;
    let outs = bind_with_bodies(interp, prim, inputs, avals, Vec::new())?;
    outs.into_iter().next().ok_or_else(|| interp.stop_unknown("a primitive without outputs".to_string()))
}

/// The arrays one `bind` gives: inline for the one output almost every primitive has.
type Outs = smallvec::SmallVec<[Rc<Array>; 1]>;

/// Binds `Opaque(name)` (a value tracelens does not compute) where JAX binds `model`: its
/// output aval is `model`'s rule's, so that an uncomputed case still carries JAX's aval.
pub fn apply_opaque1(interp: &mut Interp, name: &'static str, model: &Prim, inputs: &[Rc<Array>]) -> PyResult<Rc<Array>> {
    let aval = rule_avals(interp, model, inputs, &[])?.into_iter().next();
    let aval = aval.ok_or_else(|| interp.stop_unknown(format!("{} without outputs", model.name())))?;
    apply1(interp, Prim::opaque(name, aval), inputs)
}

/// The output avals `prim`'s rule gives for `inputs`, or JAX's exception.
pub fn rule_avals(interp: &mut Interp, prim: &Prim, inputs: &[Rc<Array>], bodies: &[Rc<Jaxpr>]) -> PyResult<prims::Avals> {
    // Borrowed, on the stack for the usual one to four operands: this runs at every `bind`.
    // Pushed: `SmallVec`'s `collect` goes through its generic `extend`, several times the cost.
    let mut in_avals: smallvec::SmallVec<[&Aval; 4]> = smallvec::SmallVec::new();
    for input in inputs {
        in_avals.push(&input.aval);
    }
    match prims::abstract_eval(prim, &in_avals, bodies) {
        Ok(outs) => Ok(outs),
        Err(prims::RuleError::Invalid { class, message }) => Err(interp.raise(class, Code::PythonException, message)),
        Err(prims::RuleError::Declared(why)) => Err(interp.stop_unknown(format!("{} bound without its avals: {why}", prim.name()))),
    }
}

/// Applies a primitive to arrays with the output aval its rule gave: [`apply`]'s worker, and
/// `ad.rs`'s (whose builders turn a rule's refusal into an unknown derivative, and keep JAX's
/// strong type where JAX's own rule binds another composition). Private to `jax/`: nothing
/// else passes avals. Outputs are tracers of the innermost relevant trace, or concrete
/// arrays computed lazily.
pub(super) fn bind1(interp: &mut Interp, prim: Prim, inputs: &[Rc<Array>], out_aval: Aval) -> PyResult<Rc<Array>> {
    let outs = bind_with_bodies(interp, prim, inputs, smallvec![out_aval], Vec::new())?;
    outs.into_iter().next().ok_or_else(|| interp.stop_unknown("a primitive without outputs".to_string()))
}

/// `bind`'s dispatcher, kept small (it runs at every primitive an analysis applies): the
/// rare checks, the concrete route and the traced route are functions of their own, so an
/// edit's hot path (module code on concrete arrays) runs from a few cache lines.
fn bind_with_bodies(
    interp: &mut Interp,
    prim: Prim,
    inputs: &[Rc<Array>],
    out_avals: prims::Avals,
    bodies: Vec<Rc<Jaxpr>>,
) -> PyResult<Outs> {
    if inputs.iter().any(|i| i.aval.dtype.is_key()) && !prims::properties::takes_keys(&prim) {
        return Err(refuse_keys(interp, &prim));
    }
    if let (Prim::Linalg(op), Some(first)) = (&prim, inputs.first()) {
        if matches!(first.aval.dtype, dtypes::DType::F16 | dtypes::DType::BF16) && prims::properties::calls_lapack(*op) {
            return Err(refuse_half_precision_lapack(interp, first.aval.dtype));
        }
    }
    if interp.jax.check_rules {
        check_rule(interp, &prim, inputs, &out_avals, &bodies);
    }
    let site = interp.site();
    // The innermost trace that sees an input; a tracer of no active trace has leaked.
    let (mut top_input, mut leaked) = (None, false);
    for t in inputs.iter().filter_map(|i| i.tracer()) {
        match interp.jax.position(t.trace) {
            Some(pos) => top_input = top_input.max(Some(pos)),
            None => leaked = true,
        }
    }
    if leaked {
        note_leaked_tracers(interp, inputs)?;
    }
    let state = &interp.jax;
    let staging = if state.numpy_eager { None } else { state.innermost_staging() };
    let target = match (top_input, staging) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    match target {
        Some(pos) => bind_traced(interp, prim, inputs, out_avals, bodies, site, pos),
        None => bind_concrete(interp, prim, inputs, out_avals, bodies, site),
    }
}

/// JAX refuses most primitives on typed PRNG keys, with messages that depend on the
/// primitive; not modelled, so the analysis stops here without a diagnostic.
#[cold]
#[inline(never)]
fn refuse_keys(interp: &mut Interp, prim: &Prim) -> crate::interp::Flow {
    interp.stop_unknown(format!("{} applied to PRNG keys", prim.name()))
}

/// LAPACK has no 16-bit routines: JAX's lowering of these primitives raises.
#[cold]
#[inline(never)]
fn refuse_half_precision_lapack(interp: &mut Interp, dtype: dtypes::DType) -> crate::interp::Flow {
    let class = if dtype == dtypes::DType::F16 { "numpy.float16" } else { "ml_dtypes.bfloat16" };
    let message = format!("(KeyError(<class '{class}'>), 'Unsupported dtype {}.')", dtype.name());
    interp.raise("NotImplementedError", Code::PythonException, message)
}

/// A tracer whose trace has ended escaped it (UnexpectedTracerError). Inside a `jit`, JAX
/// takes it in as a constant and raises at the jitted call (the outermost one, which
/// compiles); a `vmap` tracer it rejects at once.
#[cold]
#[inline(never)]
fn note_leaked_tracers(interp: &mut Interp, inputs: &[Rc<Array>]) -> PyResult<()> {
    for i in inputs {
        if let Some(t) = i.tracer() {
            if !interp.jax.is_active(t.trace) {
                interp.jax.effects.leaked_traces.insert(t.trace);
                let batched = interp.jax.ended(t.trace).is_some_and(|(class, _)| class == "BatchTracer");
                let outer_jit = interp.jax.traces.iter_mut().find(|f| f.kind == TraceKind::Jit);
                match outer_jit {
                    Some(jit) if !batched => {
                        jit.leaked.get_or_insert_with(|| i.clone());
                    }
                    _ => return Err(errors::leaked_tracer(interp, i)),
                }
            }
        }
    }
    Ok(())
}

/// Outside every trace: concrete arrays, the first output computed from the inputs on
/// demand (a pending op), or a one-equation staged call for a primitive with bodies.
#[inline(never)]
fn bind_concrete(
    interp: &mut Interp,
    prim: Prim,
    inputs: &[Rc<Array>],
    out_avals: prims::Avals,
    bodies: Vec<Rc<Jaxpr>>,
    site: Option<crate::interp::Site>,
) -> PyResult<Outs> {
    // A custom_jvp/custom_vjp marker's outputs are its last inputs (the function's own
    // outputs): outside any trace there is nothing to mark.
    if prim.custom_call().is_some() {
        return Ok(inputs[inputs.len().saturating_sub(out_avals.len())..].iter().cloned().collect());
    }
    let values_mode = interp.values.is_some();
    let name = if values_mode { prim.label() } else { std::borrow::Cow::Borrowed("") };
    let recorded = interp.jax.eager_log.is_some().then(|| (prim.clone(), !bodies.is_empty()));
    // A jitted call (`pjit`) stays pending, run equation by equation: `jax_debug_nans` names the op in it.
    let outs: Outs = if bodies.is_empty() || matches!(prim, Prim::Pjit { .. }) {
        let mut prim = Some(prim).filter(|p| !matches!(p, Prim::Opaque(_)));
        // Pushed, not collected from `out_avals` (which reallocates at every bind).
        let mut outs = Outs::with_capacity(out_avals.len());
        for aval in out_avals {
            // The first output is computed from the inputs on demand; others are not.
            let lazy = match prim.take() {
                Some(p) => Lazy::Pending(array::PendingOp::new(p), inputs.to_vec()),
                None => Lazy::Unknown("not computed"),
            };
            outs.push(Rc::new(Array {
                aval,
                kind: ArrayKind::Concrete(RefCell::new(lazy)),
                origin: site,
                numpy: Default::default(),
                tf: Default::default(),
            }));
        }
        outs
    } else {
        Outs::from_vec(staged_equation(interp, prim, inputs, out_avals, bodies)?)
    };
    if let Some((prim, has_bodies)) = recorded {
        eager_log::record(interp, prim, has_bodies, inputs, &outs);
    }
    if values_mode {
        numerics::computed_eagerly(interp, &outs, inputs, &name, site)?;
    }
    Ok(outs)
}

/// Inside the trace at `pos` (the innermost one that sees an input, or the staging one):
/// tracers of that trace, recorded as an equation of its jaxpr.
#[inline(never)]
fn bind_traced(
    interp: &mut Interp,
    prim: Prim,
    inputs: &[Rc<Array>],
    out_avals: prims::Avals,
    bodies: Vec<Rc<Jaxpr>>,
    site: Option<crate::interp::Site>,
    pos: usize,
) -> PyResult<Outs> {
    let aliased = prim.custom_call().is_some();
    let first_alias = inputs.len().saturating_sub(out_avals.len());
    let state = &mut interp.jax;
    let atoms: Vec<Atom> = inputs.iter().map(|i| state.atom_in(pos, i)).collect();
    // Known values flow through non-staging traces (grad/jvp): Python can still see them.
    let primal_inputs: Option<Vec<Rc<Array>>> =
        if state.traces[pos].kind.is_staging() { None } else { inputs.iter().map(|i| i.known()).collect() };
    let staging_frame = state.traces[pos].kind.is_staging();
    // A control-flow equation's primal values (a `while` under `jax.jvp`) are its bodies run.
    let staged_primals = match &primal_inputs {
        Some(ins) if !bodies.is_empty() && !matches!(prim, Prim::Pjit { .. }) => {
            Some(staged_equation(interp, prim.clone(), ins, out_avals.clone(), bodies.clone())?)
        }
        _ => None,
    };
    // Which outputs JAX sees as tracers: all of a staging trace's; under grad/jvp those that
    // depend on a differentiated argument (a custom rule's marker passes its outputs' on).
    // (`None`: all, as in every staging trace, without a vector per equation.)
    let active: Option<Vec<bool>> = (!staging_frame).then(|| {
        let flags: Vec<bool> = inputs.iter().map(|i| i.is_jax_tracer()).collect();
        let mode = taint::Mode::at(&interp.jax.traces, pos);
        taint::outputs_active(&prim, &flags, &out_avals, &bodies, mode)
    });
    let state = &mut interp.jax;
    let frame = &mut state.traces[pos];
    let mut outs = Outs::with_capacity(out_avals.len());
    let mut out_vars = Vec::with_capacity(out_avals.len());
    for (i, aval) in out_avals.into_iter().enumerate() {
        let var = frame.next_var;
        frame.next_var += 1;
        out_vars.push((var, aval.clone()));
        let primal = match (&primal_inputs, i) {
            _ if aliased && !staging_frame => inputs.get(first_alias + i).and_then(|o| o.known()),
            (Some(_), _) if let Some(known) = &staged_primals => known.get(i).cloned(),
            (Some(ins), 0) if !matches!(prim, Prim::Opaque(_)) => Some(Array::pending(aval.clone(), prim.clone(), ins.clone())),
            (Some(_), _) => Some(Array::unknown(aval.clone(), "not computed")),
            (None, _) => None,
        };
        outs.push(Rc::new(Array {
            aval,
            kind: ArrayKind::Tracer(Tracer { trace: frame.id, var, primal, active: active.as_ref().is_none_or(|a| a[i]) }),
            origin: site,
            numpy: Default::default(),
            tf: Default::default(),
        }));
    }
    let api = state.current_api;
    let frame = &mut state.traces[pos];
    frame.jaxpr.eqns.push(Eqn { prim, inputs: atoms, outputs: out_vars, site, bodies, api });
    Ok(outs)
}

/// Records where the avals a binder declares differ from what `prim`'s rule gives.
fn check_rule(interp: &mut Interp, prim: &Prim, inputs: &[Rc<Array>], out_avals: &[Aval], bodies: &[Rc<Jaxpr>]) {
    let in_avals: Vec<&Aval> = inputs.iter().map(|i| &i.aval).collect();
    let problem = match prims::abstract_eval(prim, &in_avals, bodies) {
        Ok(outs) if outs[..] == out_avals[..] => return,
        Err(prims::RuleError::Declared(_)) => return,
        Ok(outs) => {
            let text = |avals: &[Aval]| avals.iter().map(Aval::short).collect::<Vec<_>>().join(", ");
            format!("declares outputs ({}) but its rule gives ({})", text(out_avals), text(&outs))
        }
        Err(prims::RuleError::Invalid { class, message }) => format!("is bound where its rule raises {class}: {message}"),
    };
    let site = interp.site().map(|s| format!(" at {:?}", s.span)).unwrap_or_default();
    let shown: Vec<String> = in_avals.iter().map(|a| a.short()).collect();
    interp.jax.rule_problems.push(format!("bind of {}({}){site} {problem}", prim.name(), shown.join(", ")));
}

/// Concrete arrays standing for the outputs of one equation with bodies (`cond`, `while`,
/// `scan`, `vmap`) on concrete inputs (a pending array holds no bodies): computed now in
/// values mode, as a jitted call's control flow is; a one-equation staged call otherwise,
/// which leaves them not computed.
fn staged_equation(
    interp: &mut Interp,
    prim: Prim,
    inputs: &[Rc<Array>],
    out_avals: prims::Avals,
    bodies: Vec<Rc<Jaxpr>>,
) -> PyResult<Vec<Rc<Array>>> {
    let invars: Vec<(VarId, Aval)> = inputs.iter().enumerate().map(|(i, a)| (i as VarId, a.aval.clone())).collect();
    let outputs: Vec<(VarId, Aval)> = out_avals.iter().enumerate().map(|(i, a)| ((inputs.len() + i) as VarId, a.clone())).collect();
    let eqn = Eqn {
        prim,
        inputs: invars.iter().map(|(v, _)| Atom::Var(*v)).collect(),
        outputs: outputs.clone(),
        site: interp.site(),
        bodies,
        api: None,
    };
    if interp.values.is_some() {
        let label = eqn.prim.name();
        if let Some(outs) = eval_control::control_eqn(interp, &eqn, inputs, &label)?.filter(|o| o.len() == out_avals.len()) {
            return Ok(outs);
        }
    }
    let jaxpr = Jaxpr { invars, eqns: vec![eqn], outvars: outputs.iter().map(|(v, _)| Atom::Var(*v)).collect(), ..Jaxpr::default() };
    Ok(array_model::StagedCall::outputs(Rc::new(jaxpr), Vec::new(), inputs.to_vec(), out_avals.into_vec()))
}
