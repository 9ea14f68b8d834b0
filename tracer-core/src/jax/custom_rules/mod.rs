//! `jax.custom_jvp` and `jax.custom_vjp`: derivatives defined by the user's rules
//! (`defjvp`, `defjvps`, `defvjp`) instead of by the function's own code.
//!
//! Called inside a trace, a custom function runs its own code (its equations are recorded as
//! usual, so shapes, values and diagnostics are the body's) and then binds one marker
//! equation, `custom_jvp_call`/`custom_vjp_call`, whose inputs are the array leaves of the
//! arguments and then of the outputs, and whose outputs are the latter unchanged
//! (`Prim::CustomJvpCall`). Automatic differentiation (`ad.rs`) stops at the marker: the
//! body's equations get no cotangent from it, and its derivative is the rule's:
//!
//! - `custom_jvp`, reverse mode: the rule is traced at the replayed primals with fresh tangent
//!   tracers (`rule(*nondiff, primals, tangents)`; operations on the primals alone are
//!   computed, or recorded in the enclosing trace, as JAX's linearization does), giving the
//!   primal output and a jaxpr of the tangent output as a function of the tangents. That
//!   jaxpr must be linear in the tangents; it is linearized and pulled back like any other.
//!   Forward mode replays the same jaxpr on the incoming tangents.
//! - `custom_vjp`: reverse mode calls `fwd(*args)` on the replayed primals, then
//!   `bwd(*nondiff, residuals, g)` on each pullback; forward mode raises JAX's `TypeError`.
//!
//! Under a transformation the primal output of the call is the rule's (`fwd`'s), as in JAX,
//! and the equations that compute it are differentiated again by an enclosing transformation
//! (`hessian` of a `custom_jvp` function uses the derivative of its rule). Whatever is not
//! modelled (keyword arguments, `symbolic_zeros`, a rule of the wrong structure, a function
//! closing over a traced value, a traced `nondiff_argnums` argument) leaves the derivative
//! through the call unknown.
//!
//! Under `vmap` the marker is batched as one marker over the batch and its rules are applied
//! to every example (`custom_rules/batching.rs`).
//!
//! Size: `custom_jvp` and `custom_vjp` share the marker equation, the replay of the primals and the
//! checks of a rule's structure.

pub mod batching;

use crate::jax::prims::families;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::ad::{self, AdError, AdResult, Linearization};
use super::array::Array;
use super::aval::Aval;
use super::ir::{Atom, BinaryPrim, Jaxpr, Prim, ReduceOp, ScatterOp, UnaryPrim, VarId};
use super::numpy::Operand;
use super::TraceKind;
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};

/// The rules registered on a custom function.
#[derive(Clone, Debug)]
pub enum Rules {
    /// None yet: calling the function raises JAX's `AttributeError`.
    Missing,
    /// `f.defjvp(rule)`: `rule(*nondiff, primals, tangents) -> (primal_out, tangent_out)`.
    Jvp(Value),
    /// `f.defjvps(*fns)`: one `fn(g, ans, *primals)` per argument, `None` for none.
    Jvps(Vec<Value>),
    /// `f.defvjp(fwd, bwd)`.
    Vjp { fwd: Value, bwd: Value },
    /// A rule tracelens cannot follow: derivatives through the call stay unknown.
    Unmodelled(&'static str),
    /// The `custom_jvp` rule of a library function, written here.
    Library(LibraryRule),
}

/// The `custom_jvp` rules of JAX's own functions that tracelens binds as their equations.
#[derive(Clone, Copy, Debug)]
pub enum LibraryRule {
    /// `jax.nn.log1mexp`: `defjvps(lambda g, ans, x: g / jnp.expm1(x))`.
    Log1mexp,
}

/// One call of a custom function inside a trace: what its marker equation needs to apply
/// the rule to other values of the same structure.
pub struct CustomCall {
    pub name: String,
    /// The custom function itself (`defjvps` calls it for the primal output, as JAX does).
    this: Value,
    pub(super) rules: Rules,
    nondiff: Vec<usize>,
    /// The arguments and the output as called: their array leaves are replaced by the
    /// marker's inputs (and the cotangents) when a rule is applied.
    args: Vec<Value>,
    out: Value,
    /// For each array leaf of the arguments (the marker's first inputs), its argument.
    leaf_args: Vec<usize>,
    /// The function's code read a traced value that is not one of its arguments: JAX raises
    /// an `UnexpectedTracerError` when differentiating it; here the derivative is unknown.
    closure: Cell<bool>,
    /// The marker batched by `vmap` (`custom_rules/batching.rs`): its rules apply to each example.
    pub(super) batch: Option<CallBatch>,
}

/// A marker batched by `vmap`: every mapped input and output has its batch dimension first.
pub(super) struct CallBatch {
    pub(super) size: usize,
    /// Which of the marker's inputs are mapped.
    pub(super) ins: Vec<bool>,
    /// Which of its outputs are mapped.
    pub(super) outs: Vec<bool>,
    /// The marker one example sees (itself batched under a nested `vmap`).
    pub(super) inner: Rc<CustomCall>,
}

impl CustomCall {
    /// How many of the marker's operands are the arguments' array leaves (the rest are the
    /// function's outputs, which the marker passes on).
    pub fn arg_leaves(&self) -> usize {
        self.leaf_args.len()
    }

    /// Whether the marker's argument leaf `leaf` belongs to a differentiated argument (not one
    /// of `nondiff_argnums`).
    pub fn differentiable_leaf(&self, leaf: usize) -> bool {
        self.leaf_args.get(leaf).is_some_and(|arg| !self.nondiff.contains(arg))
    }

    /// The rule is one of JAX's own (`jax.nn.relu`, `logsumexp`, ...), written here: its
    /// tangent depends on the incoming tangents wherever the output depends on the argument.
    pub fn has_library_rule(&self) -> bool {
        matches!(self.rules, Rules::Library(_))
    }

    /// The function's code read a traced value that is not one of its arguments.
    pub fn closes_over_tracer(&self) -> bool {
        self.closure.get()
    }
}

impl CustomCall {
    /// This call batched by `vmap` (its inputs' and outputs' batch dimensions first).
    pub(super) fn batched(self: &Rc<Self>, batch: CallBatch) -> Rc<CustomCall> {
        Rc::new(CustomCall {
            name: self.name.clone(),
            this: self.this.clone(),
            rules: self.rules.clone(),
            nondiff: self.nondiff.clone(),
            args: self.args.clone(),
            out: self.out.clone(),
            leaf_args: self.leaf_args.clone(),
            closure: Cell::new(self.closure.get()),
            batch: Some(batch),
        })
    }
}

impl std::fmt::Debug for CustomCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomCall({})", self.name)
    }
}

impl CustomCall {
    /// A call with no rule (a marker kind being chosen, or a test listing every primitive).
    pub fn for_tests() -> Rc<CustomCall> {
        Rc::new(CustomCall::placeholder())
    }

    fn placeholder() -> CustomCall {
        CustomCall {
            name: "f".into(),
            this: Value::None,
            rules: Rules::Missing,
            nondiff: Vec::new(),
            args: Vec::new(),
            out: Value::None,
            leaf_args: Vec::new(),
            closure: Cell::new(false),
            batch: None,
        }
    }
}

/// Calls are compared by identity: two calls are the same rule only if they are one call.
impl PartialEq for CustomCall {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

/// A custom function called (`f(*args, **kwargs)`): its own code runs; inside a trace its
/// outputs then pass through the marker equation that carries the rule.
pub fn call(
    interp: &mut Interp,
    this: Value,
    fun: &Value,
    kind: &'static str,
    rules: &Rules,
    nondiff: &[usize],
    args: Vec<Value>,
    kwargs: Kwargs,
) -> PyResult<Value> {
    let name = super::api::fun_name(fun);
    if matches!(rules, Rules::Missing) {
        let (what, how) = if kind == "custom_jvp" { ("JVP", "defjvp") } else { ("VJP", "defvjp") };
        let message = format!("No {what} defined for {kind} function {name} using {how}.");
        return Err(interp.raise("AttributeError", Code::PythonException, message));
    }
    // JAX binds keyword arguments to positions first, defaults included, and the rules see
    // them so.
    let (args, kwargs) = match positional_arguments(interp, fun, kind, &name, args, kwargs)? {
        Ok(args) => (args, Vec::new()),
        Err(unresolved) => unresolved,
    };
    if interp.jax.traces.is_empty() {
        return interp.call(fun, args, kwargs);
    }
    let eqn_counts: Vec<usize> = interp.jax.traces.iter().map(|t| t.jaxpr.eqns.len()).collect();
    let out = interp.call(fun, args.clone(), kwargs.clone())?;
    let rules = if kwargs.is_empty() { rules.clone() } else { Rules::Unmodelled("a custom function called with keyword arguments") };
    let prim = if kind == "custom_jvp" {
        Prim::CustomJvpCall { call: Rc::new(CustomCall::placeholder()) }
    } else {
        Prim::CustomVjpCall { call: Rc::new(CustomCall::placeholder()) }
    };
    mark(interp, Marked { name, this, rules, nondiff: nondiff.to_vec(), args, out, prim }, &eqn_counts)
}

/// Arguments left as given: without keywords they are positions already (a `*args`
/// function's extra ones included).
#[allow(clippy::type_complexity)]
fn unplaced(args: Vec<Value>, kwargs: Kwargs) -> Result<Vec<Value>, (Vec<Value>, Kwargs)> {
    if kwargs.is_empty() {
        Ok(args)
    } else {
        Err((args, kwargs))
    }
}

/// JAX's `resolve_kwargs`: a custom function's arguments as positions, keyword arguments
/// placed by the signature and defaults filled in (`Ok(Ok(args))`), and JAX's `TypeError`
/// for a keyword that has no position (keyword-only, or collected by `**kwargs`). What this
/// cannot place (not a plain function, an unknown keyword, a missing argument, which the
/// call itself then reports) is given back unchanged (`Ok(Err(..))`).
#[allow(clippy::type_complexity)]
fn positional_arguments(
    interp: &mut Interp,
    fun: &Value,
    kind: &str,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> PyResult<Result<Vec<Value>, (Vec<Value>, Kwargs)>> {
    let Value::Function(f) = fun else {
        return Ok(unplaced(args, kwargs));
    };
    let params = &f.def.params;
    let positional: Vec<&Rc<str>> = params.posonly.iter().chain(&params.args).map(|p| &p.name).collect();
    let unplaceable: Vec<&str> = kwargs
        .iter()
        .filter(|(k, _)| !params.args.iter().any(|p| p.name == *k))
        .filter(|(k, _)| params.kwonly.iter().any(|p| p.name == *k) || params.kwarg.is_some())
        .map(|(k, _)| k.as_ref())
        .collect();
    if !unplaceable.is_empty() {
        let message = format!(
            "The input arguments to the {kind}-decorated function {name} could not be resolved to positional-only arguments. Binding failed with the error:\nThe following keyword arguments could not be resolved to positions: {}",
            unplaceable.join(", ")
        );
        return Err(interp.raise("TypeError", Code::PythonException, message));
    }
    let first_default = positional.len() - f.defaults.len().min(positional.len());
    let by_keyword = |name: &Rc<str>| kwargs.iter().find(|(k, _)| k == name && params.args.iter().any(|p| &p.name == name));
    let mut placed = Vec::with_capacity(positional.len());
    for (i, param) in positional.iter().enumerate() {
        let value = match (args.get(i), by_keyword(param)) {
            (Some(v), None) => v.clone(),
            (None, Some((_, v))) => v.clone(),
            (None, None) if i >= first_default => f.defaults[i - first_default].clone(),
            // Given twice, or missing: the call itself raises Python's error.
            _ => return Ok(unplaced(args, kwargs)),
        };
        placed.push(value);
    }
    let every_keyword_placed = kwargs.iter().all(|(k, _)| by_keyword(k).is_some());
    if args.len() > positional.len() || !every_keyword_placed {
        return Ok(unplaced(args, kwargs));
    }
    Ok(Ok(placed))
}

/// A library function whose derivative is a `custom_jvp` rule (`jax.nn.log1mexp`): its
/// result `out` of `args`, marked so that derivatives through it are the rule's.
/// `eqn_counts` are the trace lengths before its equations were bound.
pub fn library(interp: &mut Interp, name: &str, rule: LibraryRule, args: Vec<Value>, out: Value, eqn_counts: &[usize]) -> PyResult<Value> {
    if interp.jax.traces.is_empty() {
        return Ok(out);
    }
    let prim = Prim::CustomJvpCall { call: Rc::new(CustomCall::placeholder()) };
    let rules = Rules::Library(rule);
    mark(interp, Marked { name: name.into(), this: Value::None, rules, nondiff: Vec::new(), args, out, prim }, eqn_counts)
}

/// A library rule's `(primal_out, tangent_out)` at `primals` and `tangents` (one each).
fn library_rule(interp: &mut Interp, rule: LibraryRule, call: &CustomCall, primals: &[Value], tangents: &[Value]) -> PyResult<Value> {
    let (Some(x), Some(t)) = (primals.first(), tangents.first()) else { return Ok(Value::None) };
    match rule {
        LibraryRule::Log1mexp => {
            let _ = call;
            let ans = super::numpy::call(interp, super::surface::JaxFn::NnLog1mexp, vec![x.clone()], Vec::new())?;
            let e = super::numpy::call(interp, super::surface::JaxFn::Expm1, vec![x.clone()], Vec::new())?;
            let dt = super::numpy::binary_op(interp, crate::syntax::ast::BinOp::Div, t, &e)?;
            Ok(Value::tuple(vec![ans, dt]))
        }
    }
}

/// The lengths of the active traces' jaxprs (the start of a custom function's equations).
pub fn eqn_counts(interp: &Interp) -> Vec<usize> {
    interp.jax.traces.iter().map(|t| t.jaxpr.eqns.len()).collect()
}

/// A custom function's call, made: what its marker records.
struct Marked {
    name: String,
    this: Value,
    rules: Rules,
    nondiff: Vec<usize>,
    args: Vec<Value>,
    out: Value,
    /// The marker's kind (its call is replaced).
    prim: Prim,
}

/// Binds the marker after a custom function's equations; returns its outputs in place of the
/// function's.
fn mark(interp: &mut Interp, m: Marked, eqn_counts: &[usize]) -> PyResult<Value> {
    let Marked { name, this, rules, nondiff, args, out, prim } = m;
    let mut in_leaves = Vec::new();
    let mut leaf_args = Vec::new();
    for (i, a) in args.iter().enumerate() {
        for leaf in array_leaves(interp, a)? {
            in_leaves.push(leaf);
            leaf_args.push(i);
        }
    }
    let out_leaves = array_leaves(interp, &out)?;
    if out_leaves.is_empty() {
        return Ok(out);
    }
    let n_in = in_leaves.len();
    let call =
        Rc::new(CustomCall { name, this, rules, nondiff, args, out: out.clone(), leaf_args, closure: Cell::new(false), batch: None });
    let prim = if let Prim::CustomVjpCall { .. } = prim {
        Prim::CustomVjpCall { call: call.clone() }
    } else {
        Prim::CustomJvpCall { call: call.clone() }
    };
    let mut ins = in_leaves;
    ins.extend(out_leaves);
    let marked = super::apply_with_bodies(interp, prim, &ins, Vec::new())?;
    call.closure.set(reads_other_tracers(interp, &call, eqn_counts, n_in));
    super::memo::spoil(interp);
    super::api::replace_array_leaves(interp, &out, &mut marked.into_iter())
}

/// The array leaves of a pytree.
pub(super) fn array_leaves(interp: &mut Interp, v: &Value) -> PyResult<Vec<Rc<Array>>> {
    let mut leaves = Vec::new();
    super::api::flatten(interp, v, "", &mut leaves)?;
    Ok(leaves.into_iter().filter_map(|(_, l)| l.as_array().cloned()).collect())
}

/// Whether the outputs of the call's marker (the last equation of the trace it went to)
/// depend on a traced value other than the arguments: an input of a trace, an equation made
/// before the call, or a tracer closed over. Values made during the call from the arguments
/// and constants, in any trace, are the function's own.
fn reads_other_tracers(interp: &Interp, call: &Rc<CustomCall>, eqn_counts: &[usize], n_in: usize) -> bool {
    let traces = &interp.jax.traces;
    let is_marker = |f: &super::TraceFrame| f.jaxpr.eqns.last().is_some_and(|e| e.prim.custom_call().is_some_and(|c| Rc::ptr_eq(c, call)));
    let Some(pos) = traces.iter().position(is_marker) else { return false };
    let Some(marker) = traces[pos].jaxpr.eqns.last() else { return false };
    let n_in = n_in.min(marker.inputs.len());
    let mut args: HashSet<(usize, VarId)> = marker.inputs[..n_in].iter().filter_map(var).map(|v| (pos, v)).collect();
    // An argument that is a tracer of another trace is an argument there too.
    for v in marker.inputs[..n_in].iter().filter_map(var) {
        if let Some(t) = interp.jax.const_value(pos, v).and_then(|c| c.tracer()) {
            if let Some(q) = traces.iter().position(|f| f.id == t.trace) {
                args.insert((q, t.var));
            }
        }
    }
    // The equations each trace recorded during the call, by output.
    let mut made_here: HashMap<(usize, VarId), &super::ir::Eqn> = HashMap::new();
    for (q, frame) in traces.iter().enumerate() {
        let end = if q == pos { frame.jaxpr.eqns.len() - 1 } else { frame.jaxpr.eqns.len() };
        let start = eqn_counts.get(q).copied().unwrap_or(end).min(end);
        for e in &frame.jaxpr.eqns[start..end] {
            made_here.extend(e.outputs.iter().map(|(w, _)| ((q, *w), e)));
        }
    }
    let mut stack: Vec<(usize, VarId)> = marker.inputs[n_in..].iter().filter_map(var).map(|v| (pos, v)).collect();
    let mut seen = HashSet::new();
    while let Some((q, v)) = stack.pop() {
        if args.contains(&(q, v)) || !seen.insert((q, v)) {
            continue;
        }
        if let Some(eqn) = made_here.get(&(q, v)) {
            stack.extend(eqn.inputs.iter().filter_map(var).map(|w| (q, w)));
            continue;
        }
        // A concrete constant closed over is a constant for JAX too.
        match interp.jax.const_value(q, v) {
            Some(c) => match c.tracer() {
                None => {}
                Some(t) => match traces.iter().position(|f| f.id == t.trace) {
                    Some(r) => stack.push((r, t.var)),
                    None => return true,
                },
            },
            None => return true,
        }
    }
    false
}

fn var(a: &Atom) -> Option<VarId> {
    match a {
        Atom::Var(v) => Some(*v),
        Atom::Lit(..) => None,
    }
}

// ---------------------------------------------------------------------------------------
// Automatic differentiation through a marker (called from `ad.rs`).

/// What a pass needs from the replay of one active marker.
pub enum Linearized {
    /// A `custom_jvp` rule's tangent map: its jaxpr (tangents in, primal outputs then tangent
    /// outputs out), the values it closed over, and its linearization at zero tangents (`Err`:
    /// why it cannot be transposed; forward mode applies it all the same, as JAX does).
    Jvp {
        jaxpr: Rc<Jaxpr>,
        consts: Vec<Rc<Array>>,
        lin: Result<Linearization, String>,
        /// For each tangent input of the jaxpr: the marker input it is the tangent of.
        slots: Vec<usize>,
        avals: Vec<Aval>,
        n_out: usize,
    },
    /// A `custom_vjp` call: its primal inputs and what `fwd` returned as residuals.
    Vjp { call: Rc<CustomCall>, primals: Vec<Rc<Array>>, residuals: Value },
    /// A batched `custom_vjp` call (`custom_rules/batching.rs`): its batched primal inputs, the
    /// leaves of what `fwd` returned for every example with their batch dimensions, and the
    /// residuals' tree as one example's `fwd` returned it. Under nested `vmap`s, `deeper`
    /// holds the residuals' batch dimensions one example of each outer `vmap` sees, the next
    /// inner `vmap`'s first (empty for a call batched once).
    BatchedVjp {
        call: Rc<CustomCall>,
        primals: Vec<Rc<Array>>,
        residuals: Vec<(Rc<Array>, Option<usize>)>,
        deeper: Vec<Vec<Option<usize>>>,
        tree: Value,
    },
    /// The derivative through this call is not modelled.
    Unknown(String),
}

/// The replay of a marker some of whose inputs are differentiated: the call's primal outputs
/// under differentiation (the rule's, as JAX's) and what the passes need.
pub(super) fn linearize(
    interp: &mut Interp,
    call: &Rc<CustomCall>,
    vjp: bool,
    ins: &[Rc<Array>],
    active: &[bool],
    out_avals: &[Aval],
) -> AdResult<(Vec<Rc<Array>>, Linearized)> {
    let n_in = ins.len().saturating_sub(out_avals.len());
    let own = ins[n_in..].to_vec();
    let unknown = |why: &str| Ok((own.clone(), Linearized::Unknown(why.to_string())));
    if call.closure.get() {
        return unknown("a custom function that closes over a traced value");
    }
    let args_active = active[..n_in].iter().any(|&a| a);
    if !args_active {
        return unknown("a custom function whose outputs depend on a differentiated value it is not given");
    }
    if (0..n_in).any(|i| active[i] && call.nondiff.contains(&call.leaf_args[i])) {
        return unknown("a differentiated value passed as a nondiff_argnums argument");
    }
    // Batched by `vmap`: the rules applied to every example (`custom_rules/batching.rs`).
    if let Some(batch) = &call.batch {
        let batched = match (&call.rules, vjp) {
            (Rules::Vjp { .. }, true) => batching::linearize_vjp(interp, call, batch, ins, out_avals),
            (Rules::Jvp(_) | Rules::Jvps(_) | Rules::Library(_), false) => batching::linearize_jvp(interp, batch, ins, active, out_avals),
            _ => return unknown("a custom function without a rule of its kind"),
        };
        return match batched {
            Err(AdError::NoRule(why)) => unknown(&why),
            other => other,
        };
    }
    let args = primal_args(interp, call, &ins[..n_in])?;
    let result = match (&call.rules, vjp) {
        (Rules::Vjp { fwd, .. }, true) => {
            let fwd = fwd.clone();
            let out = call_user(interp, &fwd, args)?;
            let Some([primal, residuals]) = pair(interp, &out)? else { return unknown("a custom_vjp fwd that does not return a pair") };
            match primal_outputs(interp, &primal, out_avals)? {
                Some(outs) => (outs, Linearized::Vjp { call: call.clone(), primals: ins[..n_in].to_vec(), residuals }),
                None => return unknown("a custom_vjp fwd whose output does not match the function's"),
            }
        }
        (Rules::Jvp(_) | Rules::Jvps(_) | Rules::Library(_), false) => match trace_jvp_rule(interp, call, &args, out_avals)? {
            Ok(r) => r,
            Err(why) => return unknown(&why),
        },
        (Rules::Unmodelled(why), _) => return unknown(why),
        _ => return unknown("a custom function without a rule of its kind"),
    };
    Ok(result)
}

/// The arguments of the call with their array leaves replaced by `leaves`, in order.
pub(super) fn primal_args(interp: &mut Interp, call: &CustomCall, leaves: &[Rc<Array>]) -> PyResult<Vec<Value>> {
    let replaced = super::api::replace_array_leaves(interp, &Value::tuple(call.args.clone()), &mut leaves.to_vec().into_iter())?;
    interp.iterate(&replaced)
}

/// Calls a user rule the way a traced function is called: not as the API running now.
pub(super) fn call_user(interp: &mut Interp, f: &Value, args: Vec<Value>) -> PyResult<Value> {
    let api = interp.jax.current_api.take();
    let r = interp.call(f, args, Vec::new());
    interp.jax.current_api = api;
    r
}

/// The two items of a tuple or list of length 2.
pub(super) fn pair(interp: &mut Interp, v: &Value) -> PyResult<Option<[Value; 2]>> {
    if !matches!(v, Value::Tuple(_) | Value::List(_)) {
        return Ok(None);
    }
    let items = interp.iterate(v)?;
    Ok(<[Value; 2]>::try_from(items).ok())
}

/// The array leaves of a rule's output, Python numbers as arrays; `None` if a leaf is
/// something else.
fn output_leaves(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<Rc<Array>>>> {
    let mut leaves = Vec::new();
    super::api::flatten(interp, v, "", &mut leaves)?;
    let mut out = Vec::with_capacity(leaves.len());
    for (_, l) in leaves {
        match &l {
            Value::Array(a) => out.push(a.clone()),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => match super::numpy::operand(interp, &l)? {
                Operand::Array(a) => out.push(a),
                Operand::Unknown => return Ok(None),
            },
            _ => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// A rule's primal output as the marker's outputs (shapes checked, dtypes as declared).
pub(super) fn primal_outputs(interp: &mut Interp, v: &Value, avals: &[Aval]) -> AdResult<Option<Vec<Rc<Array>>>> {
    let Some(leaves) = output_leaves(interp, v)? else { return Ok(None) };
    if leaves.len() != avals.len() || leaves.iter().zip(avals).any(|(l, a)| l.aval.shape != a.shape) {
        return Ok(None);
    }
    let mut outs = Vec::with_capacity(leaves.len());
    for (l, a) in leaves.into_iter().zip(avals) {
        outs.push(ad::with_aval(interp, l, a)?);
    }
    Ok(Some(outs))
}

/// Traces a `custom_jvp` rule at the primals `args` with tangent tracers; `Err` says why the
/// derivative is not modelled.
fn trace_jvp_rule(
    interp: &mut Interp,
    call: &Rc<CustomCall>,
    args: &[Value],
    out_avals: &[Aval],
) -> AdResult<Result<(Vec<Rc<Array>>, Linearized), String>> {
    let site = interp.site();
    interp.jax.push_trace(TraceKind::Jvp, format!("{} (custom_jvp rule)", call.name), None, site, String::new(), None);
    let trace_id = interp.jax.traces.last().map(|t| t.id);
    let mut slots = Vec::new();
    let mut avals = Vec::new();
    let mut nondiff_args = Vec::new();
    let mut primals = Vec::new();
    let mut tangents = Vec::new();
    let mut slot = 0;
    let mut traced: PyResult<()> = Ok(());
    for (j, a) in args.iter().enumerate() {
        let leaves = match array_leaves(interp, a) {
            Ok(l) => l,
            Err(e) => {
                traced = Err(e);
                break;
            }
        };
        if call.nondiff.contains(&j) {
            slot += leaves.len();
            nondiff_args.push(a.clone());
            continue;
        }
        let mut ts = Vec::with_capacity(leaves.len());
        for leaf in leaves {
            let unknown = Array::unknown(leaf.aval.clone(), "a tangent inside a custom_jvp rule");
            ts.push(interp.jax.new_input(leaf.aval.clone(), Some(unknown), j, None, true));
            slots.push(slot);
            avals.push(leaf.aval.clone());
            slot += 1;
        }
        match super::api::replace_array_leaves(interp, a, &mut ts.into_iter()) {
            Ok(t) => tangents.push(t),
            Err(e) => {
                traced = Err(e);
                break;
            }
        }
        primals.push(a.clone());
    }
    let out = traced.and_then(|()| match &call.rules {
        Rules::Jvp(rule) => {
            let mut rule_args = nondiff_args.clone();
            rule_args.push(Value::tuple(primals.clone()));
            rule_args.push(Value::tuple(tangents.clone()));
            let rule = rule.clone();
            call_user(interp, &rule, rule_args)
        }
        Rules::Jvps(fns) => {
            let fns = fns.clone();
            jvps_rule(interp, call, &fns, &nondiff_args, &primals, &tangents)
        }
        Rules::Library(rule) => {
            let api = interp.jax.current_api.take();
            let r = library_rule(interp, *rule, call, &primals, &tangents);
            interp.jax.current_api = api;
            r
        }
        _ => Ok(Value::None),
    });
    let out = match out {
        Ok(v) => v,
        Err(e) => {
            interp.jax.abort_trace();
            return Err(AdError::Raise(e));
        }
    };
    let parts = match pair(interp, &out) {
        Ok(Some([p, t])) => match (output_leaves(interp, &p), output_leaves(interp, &t)) {
            (Ok(Some(p)), Ok(Some(t))) => Some((p, t)),
            (Err(e), _) | (_, Err(e)) => {
                interp.jax.abort_trace();
                return Err(AdError::Raise(e));
            }
            _ => None,
        },
        Ok(None) => None,
        Err(e) => {
            interp.jax.abort_trace();
            return Err(AdError::Raise(e));
        }
    };
    let Some((primal_leaves, tangent_leaves)) = parts.filter(|(p, t)| p.len() == out_avals.len() && t.len() == out_avals.len()) else {
        interp.jax.abort_trace();
        return Ok(Err("a custom_jvp rule whose output does not match the function's".into()));
    };
    jvp_linearized(interp, trace_id, primal_leaves, tangent_leaves, slots, avals, out_avals)
}

/// The end of a `custom_jvp` rule's trace (`trace_id`, still open: it is popped here) whose
/// tangent inputs are those of the marker's inputs `slots` (of avals `avals`): the primal
/// outputs and the tangent map, linearized; `Err` says why the derivative is not modelled.
#[allow(clippy::type_complexity)]
pub(super) fn jvp_linearized(
    interp: &mut Interp,
    trace_id: Option<u32>,
    primal_leaves: Vec<Rc<Array>>,
    tangent_leaves: Vec<Rc<Array>>,
    slots: Vec<usize>,
    avals: Vec<Aval>,
    out_avals: &[Aval],
) -> AdResult<Result<(Vec<Rc<Array>>, Linearized), String>> {
    let mut all = primal_leaves.clone();
    all.extend(tangent_leaves.iter().cloned());
    let (jaxpr, consts) = interp.jax.pop_trace_with_consts(&all);
    let of_rule_trace = |a: &Rc<Array>| a.tracer().is_some_and(|t| Some(t.trace) == trace_id);
    if primal_leaves.iter().any(of_rule_trace) {
        return Ok(Err("a custom_jvp rule whose primal output depends on the tangents".into()));
    }
    if tangent_leaves.iter().zip(out_avals).any(|(t, a)| t.aval.shape != a.shape) {
        return Ok(Err("a custom_jvp rule whose tangent output does not match the function's output".into()));
    }
    let Some(outs) = primal_outputs(interp, &Value::tuple(primal_leaves.into_iter().map(Value::Array).collect()), out_avals)? else {
        return Ok(Err("a custom_jvp rule whose primal output does not match the function's".into()));
    };
    let mut zero_tangents = Vec::with_capacity(avals.len());
    for a in &avals {
        zero_tangents.push(ad::zeros(interp, a)?);
    }
    let lin = match nonlinear(&jaxpr) {
        Some(why) => Err(why),
        None => Ok(ad::linearize_rule(interp, &jaxpr, &consts, &zero_tangents)?),
    };
    Ok(Ok((outs, Linearized::Jvp { jaxpr, consts, lin, slots, avals, n_out: out_avals.len() })))
}

/// `defjvps`' rule, as JAX writes it: the primal output is the custom function applied to the
/// primals, the tangent the sum of `fn(t, ans, *primals)` over the arguments with a function.
fn jvps_rule(
    interp: &mut Interp,
    call: &CustomCall,
    fns: &[Value],
    nondiff: &[Value],
    primals: &[Value],
    tangents: &[Value],
) -> PyResult<Value> {
    if !nondiff.is_empty() {
        return Ok(Value::None);
    }
    let this = call.this.clone();
    let ans = interp.call(&this, primals.to_vec(), Vec::new())?;
    let mut total: Option<Vec<Rc<Array>>> = None;
    for (f, t) in fns.iter().zip(tangents) {
        if f.is_none() {
            continue;
        }
        let mut fn_args = vec![t.clone(), ans.clone()];
        fn_args.extend(primals.iter().cloned());
        let term = call_user(interp, f, fn_args)?;
        let Some(leaves) = output_leaves(interp, &term)? else { return Ok(Value::None) };
        total = Some(match total {
            None => leaves,
            Some(prev) if prev.len() == leaves.len() => {
                let mut sums = Vec::with_capacity(prev.len());
                for (a, b) in prev.iter().zip(&leaves) {
                    let s = super::numpy::binary_op(
                        interp,
                        crate::syntax::ast::BinOp::Add,
                        &Value::Array(a.clone()),
                        &Value::Array(b.clone()),
                    )?;
                    let Some(s) = s.as_array().cloned() else { return Ok(Value::None) };
                    sums.push(s);
                }
                sums
            }
            Some(_) => return Ok(Value::None),
        });
    }
    let tangent = match total {
        Some(leaves) => super::api::replace_array_leaves(interp, &ans, &mut leaves.into_iter())?,
        None => {
            let mut zeros = Vec::new();
            for a in array_leaves(interp, &ans)? {
                zeros.push(super::numpy::call(interp, super::surface::JaxFn::ZerosLike, vec![Value::Array(a)], Vec::new())?);
            }
            let zeros: Vec<Rc<Array>> = zeros.iter().filter_map(|z| z.as_array().cloned()).collect();
            super::api::replace_array_leaves(interp, &ans, &mut zeros.into_iter())?
        }
    };
    Ok(Value::tuple(vec![ans, tangent]))
}

/// Why a rule's tangent map is not linear in the tangents (the jaxpr's invars), if it is
/// not: JAX transposes it, which fails for anything else.
fn nonlinear(jaxpr: &Jaxpr) -> Option<String> {
    let active: Vec<bool> = jaxpr.constvars.iter().map(|_| false).chain(jaxpr.invars.iter().map(|_| true)).collect();
    nonlinear_in(jaxpr, &active)
}

fn nonlinear_in(jaxpr: &Jaxpr, active_binders: &[bool]) -> Option<String> {
    let mut active: HashSet<VarId> = HashSet::new();
    for ((v, _), &a) in jaxpr.constvars.iter().chain(&jaxpr.invars).zip(active_binders) {
        if a {
            active.insert(*v);
        }
    }
    for eqn in &jaxpr.eqns {
        let flags: Vec<bool> = eqn.inputs.iter().map(|a| var(a).is_some_and(|v| active.contains(&v))).collect();
        let n = flags.iter().filter(|&&f| f).count();
        if n == 0 {
            continue;
        }
        let only = |allowed: &[usize]| flags.iter().enumerate().all(|(i, &f)| !f || allowed.contains(&i));
        let linear = match &eqn.prim {
            Prim::Unary(u) => matches!(u, UnaryPrim::Neg | UnaryPrim::Copy | UnaryPrim::Real | UnaryPrim::Conj),
            Prim::Binary(BinaryPrim::Add | BinaryPrim::Sub) => true,
            Prim::Binary(BinaryPrim::Mul) => n == 1,
            Prim::Binary(BinaryPrim::Div) => only(&[0]),
            Prim::DotGeneral { .. } => n == 1,
            Prim::Block(b) => b.0.linear_in(&flags),
            Prim::Select => !flags[0],
            Prim::ConvertElementType { .. }
            | Prim::BroadcastInDim { .. }
            | Prim::Reshape { .. }
            | Prim::Transpose { .. }
            | Prim::Squeeze { .. }
            | Prim::Rev { .. }
            | Prim::Slice { .. }
            | Prim::Concatenate { .. }
            | Prim::Pad { .. }
            | Prim::DynamicUpdateSlice
            | Prim::StopGradient => true,
            Prim::Reduce { op: ReduceOp::Sum, .. } | Prim::Cumulative { op: ReduceOp::Sum, .. } => true,
            Prim::Gather { .. } | Prim::DynamicSlice { .. } => only(&[0]),
            Prim::Scatter { op: ScatterOp::Add | ScatterOp::Set, .. } => only(&[0, 1]),
            Prim::Pjit { .. } | Prim::Remat => match eqn.bodies.first() {
                Some(body) => {
                    if let Some(why) = nonlinear_in(body, &flags) {
                        return Some(why);
                    }
                    true
                }
                None => false,
            },
            families::reductions!()
            | families::random!()
            | families::control_flow!()
            | Prim::Binary(_)
            | Prim::Compare(_)
            | Prim::Clamp
            | Prim::IntegerPow(_)
            | Prim::Iota { .. }
            | Prim::Full { .. }
            | Prim::Scatter { .. }
            | Prim::CustomJvpCall { .. }
            | Prim::CustomVjpCall { .. }
            | Prim::DebugCallback
            | Prim::Opaque(_)
            | Prim::Linalg(_) => false,
        };
        if !linear {
            return Some(format!("a custom_jvp rule whose tangent output is not linear in the tangents ({})", eqn.prim.name()));
        }
        for (v, _) in &eqn.outputs {
            active.insert(*v);
        }
    }
    None
}

/// Reverse mode through an active marker: the cotangents of its inputs (the arguments'
/// leaves, then the function's own outputs, which get none) for those of its outputs.
pub(super) fn transpose(
    interp: &mut Interp,
    lin: &Linearized,
    ins: &[Rc<Array>],
    gs: &[Option<Rc<Array>>],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let mut cts: Vec<Option<Rc<Array>>> = vec![None; ins.len()];
    match lin {
        Linearized::Unknown(why) => return Err(AdError::NoRule(why.clone())),
        Linearized::Jvp { lin, slots, n_out, .. } => {
            let lin = lin.as_ref().map_err(|why| AdError::NoRule(why.clone()))?;
            let mut out_cts: Vec<Option<Rc<Array>>> = vec![None; *n_out];
            out_cts.extend(gs.iter().cloned());
            let in_cts = ad::pullback(interp, lin, &out_cts)?;
            for (&slot, ct) in slots.iter().zip(in_cts) {
                cts[slot] = ct;
            }
        }
        Linearized::Vjp { call, primals, residuals } => {
            let n_in = primals.len();
            let mut g_leaves = Vec::with_capacity(gs.len());
            for (g, o) in gs.iter().zip(&ins[n_in..]) {
                g_leaves.push(match g {
                    Some(g) => g.clone(),
                    None => ad::zeros(interp, &o.aval)?,
                });
            }
            let in_avals: Vec<Aval> = ins.iter().map(|x| x.aval.clone()).collect();
            cts = bwd_cotangents(interp, call, primals, residuals.clone(), g_leaves, &in_avals)?;
        }
        Linearized::BatchedVjp { call, primals, residuals, deeper, tree } => {
            cts = batching::transpose_vjp(interp, call, primals.len(), residuals, deeper, tree, ins, gs)?;
        }
    }
    Ok(cts)
}

/// `bwd(*nondiff, residuals, g)` of a `custom_vjp` call at `primals` (its argument leaves)
/// for the cotangents `g_leaves` of its outputs: the cotangent of each of the marker's
/// inputs (`in_avals`), `None` where `bwd` gives `None` or for the function's own outputs.
pub(super) fn bwd_cotangents(
    interp: &mut Interp,
    call: &CustomCall,
    primals: &[Rc<Array>],
    residuals: Value,
    g_leaves: Vec<Rc<Array>>,
    in_avals: &[Aval],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let Rules::Vjp { bwd, .. } = &call.rules else { return Err(AdError::NoRule("a custom_vjp without bwd".into())) };
    let mut cts: Vec<Option<Rc<Array>>> = vec![None; in_avals.len()];
    let n_in = primals.len();
    let g_tree = super::api::replace_array_leaves(interp, &call.out, &mut g_leaves.into_iter())?;
    let args = primal_args(interp, call, primals)?;
    let mut bwd_args: Vec<Value> = call.nondiff.iter().filter_map(|&i| args.get(i).cloned()).collect();
    bwd_args.push(residuals);
    bwd_args.push(g_tree);
    let bwd = bwd.clone();
    let result = call_user(interp, &bwd, bwd_args)?;
    let entries = match &result {
        Value::Tuple(_) | Value::List(_) => interp.iterate(&result)?,
        _ => return Err(AdError::NoRule("a custom_vjp bwd that does not return a tuple".into())),
    };
    let diff: Vec<usize> = (0..args.len()).filter(|i| !call.nondiff.contains(i)).collect();
    if entries.len() != diff.len() {
        return Err(AdError::NoRule("a custom_vjp bwd whose output does not match the arguments".into()));
    }
    for (&j, entry) in diff.iter().zip(&entries) {
        if entry.is_none() {
            continue;
        }
        let slots: Vec<usize> = (0..n_in).filter(|&i| call.leaf_args[i] == j).collect();
        let mut arg_leaves = Vec::new();
        super::api::flatten(interp, &args[j], "", &mut arg_leaves)?;
        let mut ct_leaves = Vec::new();
        super::api::flatten(interp, entry, "", &mut ct_leaves)?;
        if arg_leaves.len() != ct_leaves.len() {
            return Err(AdError::NoRule("a custom_vjp bwd whose output does not match the arguments".into()));
        }
        let picked: Vec<Value> =
            arg_leaves.iter().zip(ct_leaves).filter(|((_, a), _)| a.as_array().is_some()).map(|(_, (_, c))| c).collect();
        for (&slot, c) in slots.iter().zip(picked) {
            let ct = match super::numpy::operand(interp, &c)? {
                Operand::Array(a) => a,
                Operand::Unknown => return Err(AdError::NoRule("an unknown cotangent".into())),
            };
            let aval = &in_avals[slot];
            if ct.aval.shape != aval.shape {
                return Err(AdError::NoRule("a custom_vjp bwd whose output does not match the arguments".into()));
            }
            cts[slot] = Some(ad::with_aval(interp, ct, aval)?);
        }
    }
    Ok(cts)
}

/// Forward mode through an active marker: the tangents of its outputs for those of its
/// inputs (`None` is a zero).
pub(super) fn jvp(interp: &mut Interp, lin: &Linearized, ins: &[Rc<Array>], ts: &[Option<Rc<Array>>]) -> AdResult<Vec<Option<Rc<Array>>>> {
    match lin {
        Linearized::Unknown(why) => Err(AdError::NoRule(why.clone())),
        Linearized::Vjp { .. } | Linearized::BatchedVjp { .. } => {
            let message = "can't apply forward-mode autodiff (jvp) to a custom_vjp function.";
            Err(AdError::Raise(interp.raise("TypeError", Code::PythonException, message)))
        }
        Linearized::Jvp { jaxpr, consts, slots, avals, n_out, .. } => {
            let n_in = ins.len().saturating_sub(*n_out);
            if ts[..n_in].iter().all(Option::is_none) {
                return Ok(vec![None; *n_out]);
            }
            let mut tangents = Vec::with_capacity(slots.len());
            for (&slot, aval) in slots.iter().zip(avals) {
                tangents.push(match &ts[slot] {
                    Some(t) => t.clone(),
                    None => ad::zeros(interp, aval)?,
                });
            }
            let outs = ad::replay(interp, jaxpr, consts, &tangents)?;
            Ok(outs.into_iter().skip(*n_out).map(Some).collect())
        }
    }
}
