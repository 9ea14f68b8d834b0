//! The JAX model: arrays as avals with data on demand, traces that record IR, the
//! transformations as higher-order APIs, and jax.numpy on top (design.md §1–4).

pub mod ad;
pub mod ad_compositions;
pub mod ad_control;
pub mod api;
pub mod array;
pub mod array_model;
pub mod aval;
pub mod custom_rules;
pub mod dtypes;
pub mod eager_log;
pub mod effects;
pub mod error_codes;
pub mod errors;
pub mod eval;
pub mod eval_control;
pub mod eval_cost;
pub mod eval_ints;
pub mod eval_jaxpr;
pub mod ir;
pub mod memo;
pub mod numerics;
pub mod numpy;
pub mod prims;
pub mod print;
pub mod rounding;
pub mod signatures;
pub mod special;
pub mod stmt;
pub mod surface;
pub mod taint;
pub mod transforms;

use crate::interp::value::HashMap;
use std::rc::Rc;

use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult, Site};
use array::{Array, ArrayKind, Lazy, Tracer};
use aval::Aval;
use dtypes::DTypeConfig;
use ir::{Atom, Eqn, Jaxpr, Prim, VarId};
use std::cell::RefCell;

/// How the analysis reached a trace (design.md §9): the routes, best first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Route {
    /// The program called the function: a module run as a script, a test, an entry point.
    #[default]
    Called,
    /// A `# tracelens: trace` comment or jaxtyping annotations gave the arguments' avals.
    Annotations,
    /// Called with arguments the interpreter does not know (values of an unmodelled
    /// library, a data loader, a config): unknown leaves stay unknown in the trace, and
    /// only what does not depend on them is reported.
    UnknownArguments,
    /// Nothing the analysis ran called it: a function a staging transform is applied to
    /// (decorated, or handed to `jax.jit(...)` in code that never ran) is traced with every
    /// argument unknown, as `UnknownArguments` is.
    Uncalled,
}

impl Route {
    pub fn label(self) -> &'static str {
        match self {
            Route::Called => "called",
            Route::Annotations => "annotations",
            Route::UnknownArguments => "unknown arguments",
            Route::Uncalled => "not called (unknown arguments)",
        }
    }

    /// The trace's arguments are not known: only what does not depend on them is a finding.
    pub fn arguments_unknown(self) -> bool {
        matches!(self, Route::UnknownArguments | Route::Uncalled)
    }
}

/// What kind of transformation a trace belongs to.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceKind {
    /// `jax.jit`: abstract values, cached by the jit cache (`transforms/jit.rs`).
    Jit,
    Vmap,
    Grad,
    Jvp,
    /// The body of `lax.scan`/`while_loop`/`fori_loop`/`cond`/`map`: abstract values.
    ControlFlow(&'static str),
    /// `eval_shape`, `make_jaxpr`, `checkpoint` and the like: abstract values.
    Staging(&'static str),
}

impl TraceKind {
    /// Values in this trace are abstract: Python cannot see them (JAX's DynamicJaxprTrace).
    pub fn is_staging(&self) -> bool {
        matches!(self, TraceKind::Jit | TraceKind::ControlFlow(_) | TraceKind::Staging(_) | TraceKind::Vmap)
    }
    /// JAX's name for the transformation in messages (`for jit`, `for scan`).
    pub fn label(&self) -> &'static str {
        match self {
            TraceKind::Jit => "jit",
            TraceKind::Vmap => "vmap",
            TraceKind::Grad => "grad",
            TraceKind::Jvp => "jvp",
            TraceKind::ControlFlow(n) | TraceKind::Staging(n) => n,
        }
    }
}

/// An active trace: the IR it is recording and what it is tracing.
pub struct TraceFrame {
    pub id: u32,
    pub kind: TraceKind,
    /// The traced function's name and where it was defined.
    pub fn_name: String,
    pub def_site: Option<Site>,
    /// Argument names for messages (`depends on the value of the argument x`).
    pub arg_names: Vec<String>,
    pub jaxpr: Jaxpr,
    next_var: VarId,
    /// Tracers of outer traces and concrete arrays closed over, by identity.
    consts: Vec<(usize, VarId, Rc<Array>)>,
    /// For each input var, the index of the argument it came from.
    pub invar_args: Vec<(VarId, usize)>,
    /// Index into `JaxState::records` of the trace record being filled.
    pub record: usize,
    /// A `grad`-kind trace that differentiates forward (`jacfwd`): JAX's tracers there are
    /// `JVPTracer`s.
    pub forward: bool,
    /// How JAX differentiates here (`taint::Mode`): `jvp`, `jacfwd` and `hessian` forward,
    /// `grad`, `vjp` and `jacrev` by linearizing.
    pub ad_mode: taint::Mode,
    /// A tracer of an ended trace that this (outermost `jit`) trace took in as a constant,
    /// as JAX does: the jitted call raises once its tracing ends.
    pub leaked: Option<Rc<Array>>,
}

impl TraceFrame {
    /// The class of JAX's tracers in this trace, as its messages name them.
    fn tracer_class(&self) -> &'static str {
        match self.kind {
            TraceKind::Grad if self.forward => "JVPTracer",
            TraceKind::Grad => "LinearizeTracer",
            TraceKind::Jvp => "JVPTracer",
            TraceKind::Vmap => "BatchTracer",
            _ => "DynamicJaxprTracer",
        }
    }
}

/// A finished (or aborted) trace, for `tracelens trace`, hover and the reproducer.
#[derive(Clone, Debug)]
pub struct TraceRecord {
    pub kind: TraceKind,
    pub fn_name: String,
    pub def_site: Option<Site>,
    pub call_site: Option<Site>,
    pub args: Vec<Aval>,
    /// Each argument leaf's path as JAX's `keystr` names it after the parameter
    /// (`params['w1']`, `state.opt_state[0].mu`), beside `args`, when the transformation
    /// knows them (a jit trace: its cache key's paths); empty otherwise.
    pub arg_paths: Vec<String>,
    /// Each output leaf's path, beside `outputs`, as JAX's debug info names them
    /// (`result[0]['loss']`; an nnx.jit trace's updated state as `model['linear/kernel']`),
    /// when the transformation knows them (a jit trace); empty otherwise.
    pub out_paths: Vec<String>,
    /// `None` while tracing, and for a trace that raised or ended on an unknown.
    pub outputs: Option<Vec<Aval>>,
    /// The trace ended on what tracelens does not know (`abort_trace_on`), not on an exception.
    pub unknown_end: bool,
    pub cause: String,
    pub jaxpr: Option<Rc<Jaxpr>>,
    /// The jitted function this trace belongs to (index into `JaxState::jitted`).
    pub jitted: Option<usize>,
    /// The trace record of the enclosing trace, if any.
    pub parent: Option<usize>,
    /// The traced function's parameter names (for the reproducer).
    pub arg_names: Vec<String>,
    /// The concrete arrays the trace closed over (its jaxpr's constvars), for values mode.
    pub consts: Vec<Rc<Array>>,
    /// The structure of what the traced function returned (the reproducer writes a
    /// function passed to `lax.scan` returning `(carry, y)` as the user did).
    pub out_tree: Option<Rc<api::TreeDef>>,
    /// The arrays the traced function returned (the reproducer finds a result the trace
    /// closed over, such as a `jnp.nonzero` result it did not stage, by them).
    pub output_arrays: Vec<Rc<Array>>,
    /// What JAX's messages say the function was traced for (`jit`, `scan`, `cond`,
    /// `fori_loop`), where tracelens knows it.
    pub traced_for: Option<&'static str>,
    /// How the analysis reached this trace.
    pub route: Route,
    /// For a `jit` of a library shim's function that runs a user's function as its body
    /// (haiku's `apply_fn`): that function's name and definition, which `trace` and hover
    /// report the trace under (`fn_name` and `def_site` stay the shim's, as JAX names it).
    pub shown_as: Option<(String, Site)>,
    /// A `tf.function` trace's input parameters as TensorFlow prints its concrete function's
    /// signature (`tf/concrete.rs`); `None` for other traces and where not rendered.
    pub input_parameters: Option<Rc<Vec<InputParameter>>>,
}

/// One parameter of a concrete function as TensorFlow prints it:
/// `x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)`.
#[derive(Clone, Debug, PartialEq)]
pub struct InputParameter {
    pub name: String,
    /// `POSITIONAL_OR_KEYWORD`, `POSITIONAL_ONLY` or `KEYWORD_ONLY`.
    pub kind: &'static str,
    pub spec: String,
}

/// The aval of a value assigned inside a traced function.
#[derive(Clone, Debug)]
pub struct ValueRecord {
    pub site: Site,
    pub name: Rc<str>, // shared: a replayed trace's values are copied into every analysis
    pub shown: crate::interp::seen::Shown,
    pub record: usize,
    pub kind: crate::interp::seen::SiteKind,
}

impl ValueRecord {
    /// An assignment target (inlay hints) rather than a use of a name (hover only).
    pub fn assigned(&self) -> bool {
        self.kind == crate::interp::seen::SiteKind::Assigned
    }
}

#[derive(Default)]
pub struct JaxState {
    /// The open document's remembered jit traces (the editor's analyses only).
    pub memo: Option<memo::TraceMemo>,
    /// The jit trace being recorded for `memo`.
    pub memo_recording: Option<memo::Recording>,
    /// The route of the traces started now (`Route::Called` unless an entry point says).
    pub route: Route,
    /// Which run of an entry point is going on: each test case is one (its own process's worth of
    /// calls). A jit cache entry made in another run still counts for JAX's cache; a retrace is
    /// reported only within a run (two tests calling a function with two shapes is no retrace to fix).
    pub entry_run: u32,
    /// The (jitted function, call site) pairs traced with unknown arguments.
    pub traced_with_unknowns: std::collections::HashSet<(usize, Option<Site>)>,
    pub traces: Vec<TraceFrame>,
    /// `jnp.linalg`'s named-tuple classes by name, made on first use (`numpy/linalg_api/results.rs`).
    pub linalg_results: HashMap<&'static str, Rc<crate::interp::value::Class>>,
    next_trace_id: u32,
    pub records: Vec<TraceRecord>,
    pub values: Vec<ValueRecord>,
    pub jitted: Vec<api::JitInfo>,
    /// The user-level statements made inside traces (for the reproducer).
    pub log: stmt::StatementLog,
    /// Input tracers of every trace: (record, identity, aval, argument index).
    pub inputs: Vec<(usize, usize, Aval, usize)>,
    /// Where each input tracer sits in its argument's pytree (`['w1']`, `[0]`, `.bias`), by
    /// identity: the reproducer names parameters after it.
    pub input_paths: HashMap<usize, String>,
    /// The same place with a user class flattened one level into a tuple (`.bias` of a
    /// NamedTuple is `[1]`): how a reproducer, which passes such a value as a tuple, reads it.
    pub input_index_paths: HashMap<usize, String>,
    /// Input tracers kept alive so their identities stay unique.
    pub(crate) input_keep: Vec<Rc<Array>>,
    /// The children the user's flatten function gave (or its unflatten function was given) for an
    /// instance of a class registered with `register_pytree_node`, by its identity (kept alive):
    /// the reproducer passes such an instance as the tuple of its children, running no user code.
    pub(crate) custom_children: HashMap<usize, (Rc<crate::interp::value::Instance>, Vec<Value>)>,
    /// The JAX API function being evaluated (stamped on the equations it binds).
    pub current_api: Option<surface::JaxFn>,
    /// Traced bodies of scan/cond/while/fori, cached on function identity and input types.
    pub body_cache: Vec<api::BodyCacheEntry>,
    pub config: DTypeConfig,
    /// An operation on NumPy arrays only is running: NumPy computes it at once, also in a `jit`.
    pub numpy_eager: bool,
    /// (file, call expression span, callee span) of the calls being evaluated, innermost last.
    pub call_spans: Vec<(crate::interp::FileId, crate::syntax::ast::Span, crate::syntax::ast::Span)>,
    /// Containers and iterators created inside staging traces: identity -> staging depth.
    born: HashMap<usize, (usize, Value)>,
    pub effects: effects::EffectState,
    /// JAX's tracer class of each ended trace and its record, by id (a leaked tracer is named so).
    ended: HashMap<u32, (&'static str, usize)>,
    /// Compare the avals every `bind` is given with its primitive's rule (`prims/`), also outside
    /// traces (`AnalysisConfig::check_ir`; the tests turn it on).
    pub check_rules: bool,
    /// The mismatches `check_rules` found.
    pub rule_problems: Vec<String>,
    /// The arguments the next `grad`-like trace differentiates (`grad`'s `argnums`), which its
    /// start takes; `None` differentiates every argument (`jvp`, `vjp`).
    pub differentiated: Option<Vec<usize>>,
    /// Eager binds recorded for a TensorFlow tape (`eager_log.rs`).
    pub eager_log: Option<eager_log::EagerLog>,
    /// Calls of jitted functions and `tf.function`s so far (`interp/loop_summary.rs`).
    pub staged_calls: u64,
}

impl JaxState {
    pub fn trace_depth(&self) -> usize {
        self.traces.len()
    }

    /// Number of active traces whose bodies are cached or run once per call (jit, scan, ...).
    pub fn staging_depth(&self) -> usize {
        self.traces.iter().filter(|t| matches!(t.kind, TraceKind::Jit | TraceKind::ControlFlow(_))).count()
    }

    /// `jit(step)` for the innermost caching trace, if any.
    pub fn staging_description(&self) -> Option<String> {
        self.traces.iter().rev().find(|t| matches!(t.kind, TraceKind::Jit | TraceKind::ControlFlow(_))).map(|t| {
            format!(
                "{}({})",
                self.records[t.record].traced_for.filter(|f| *f == crate::tf::function::TRACED_FOR).unwrap_or(t.kind.label()),
                t.fn_name
            )
        })
    }

    pub fn note_born(&mut self, v: &Value) {
        let depth = self.staging_depth();
        if depth > 0 {
            if let Some(id) = v.identity() {
                self.born.insert(id, (depth, v.clone()));
            }
        }
    }

    /// The trace a mutation of `obj` escapes, if it was created outside the innermost caching trace.
    pub fn outer_mutation(&self, obj: &Value) -> Option<String> {
        let depth = self.staging_depth();
        if depth == 0 {
            return None;
        }
        let born = obj.identity().and_then(|id| self.born.get(&id)).map(|(d, _)| *d).unwrap_or(0);
        if born < depth {
            self.staging_description()
        } else {
            None
        }
    }

    pub fn born_depth(&self, v: &Value) -> usize {
        v.identity().and_then(|id| self.born.get(&id)).map(|(d, _)| *d).unwrap_or(0)
    }

    /// Remembers that a tracer was stored somewhere that outlives its trace (for TL103).
    pub fn check_tracer_store(&mut self, container: &Value, value: &Value, site: Option<Site>) {
        if let Value::Array(a) = value {
            if let Some(t) = a.tracer() {
                if self.born_depth(container) < self.staging_depth() || self.traces.iter().any(|f| f.id == t.trace) {
                    self.effects.stored_tracers.insert(t.trace);
                    if let Some(site) = site {
                        self.effects.tracer_stores.push((site, t.trace, Rc::as_ptr(a) as usize));
                    }
                }
            }
        }
    }

    pub fn record_value(&mut self, site: Site, name: &str, shown: crate::interp::seen::Shown, kind: crate::interp::seen::SiteKind) {
        if let Some(top) = self.traces.last() {
            self.values.push(ValueRecord { site, name: Rc::from(name), shown, record: top.record, kind });
        }
    }

    /// Uses up a trace id without tracing (a remembered trace replayed in its place).
    pub fn skip_trace_id(&mut self) {
        self.next_trace_id += 1;
    }

    /// JAX's class of the tracers of a trace that has ended, and its record.
    pub fn ended(&self, trace: u32) -> Option<(&'static str, &TraceRecord)> {
        let (tracer, record) = self.ended.get(&trace)?;
        Some((tracer, self.records.get(*record)?))
    }

    /// JAX's class of the tracers of a trace, active or ended, as Python's messages name
    /// its type (`not DynamicJaxprTracer`).
    pub fn tracer_class_of(&self, trace: u32) -> &'static str {
        match self.traces.iter().find(|t| t.id == trace) {
            Some(frame) => frame.tracer_class(),
            None => self.ended.get(&trace).map_or("DynamicJaxprTracer", |(class, _)| class),
        }
    }

    pub fn is_active(&self, trace: u32) -> bool {
        self.traces.iter().any(|t| t.id == trace)
    }

    fn position(&self, trace: u32) -> Option<usize> {
        self.traces.iter().position(|t| t.id == trace)
    }

    pub fn innermost_staging(&self) -> Option<usize> {
        self.traces.iter().rposition(|t| t.kind.is_staging())
    }

    /// Starts a trace and returns its position in the stack.
    pub fn push_trace(
        &mut self,
        kind: TraceKind,
        fn_name: String,
        def_site: Option<Site>,
        call_site: Option<Site>,
        cause: String,
        jitted: Option<usize>,
    ) -> usize {
        let id = self.next_trace_id;
        self.next_trace_id += 1;
        let parent = self.traces.last().map(|t| t.record);
        self.records.push(TraceRecord {
            kind: kind.clone(),
            fn_name: fn_name.clone(),
            def_site,
            call_site,
            args: Vec::new(),
            arg_paths: Vec::new(),
            out_paths: Vec::new(),
            outputs: None,
            cause,
            jaxpr: None,
            jitted,
            parent,
            arg_names: Vec::new(),
            consts: Vec::new(),
            out_tree: None,
            output_arrays: Vec::new(),
            traced_for: match &kind {
                TraceKind::Jit => Some("jit"),
                _ => None,
            },
            route: self.route,
            shown_as: None,
            input_parameters: None,
            unknown_end: false,
        });
        let record = self.records.len() - 1;
        self.traces.push(TraceFrame {
            id,
            kind,
            fn_name,
            def_site,
            arg_names: Vec::new(),
            jaxpr: Jaxpr::default(),
            next_var: 0,
            consts: Vec::new(),
            invar_args: Vec::new(),
            record,
            forward: false,
            ad_mode: taint::Mode::default(),
            leaked: None,
        });
        self.traces.len() - 1
    }

    /// A fresh input tracer of the top trace. `active`: JAX sees a tracer there
    /// (`Tracer::active`; always for a staging trace, whose inputs have no `primal`).
    pub fn new_input(&mut self, aval: Aval, primal: Option<Rc<Array>>, arg_index: usize, origin: Option<Site>, active: bool) -> Rc<Array> {
        let active = active || primal.is_none();
        let top = self.traces.len() - 1;
        let frame = &mut self.traces[top];
        let var = frame.next_var;
        frame.next_var += 1;
        frame.jaxpr.invars.push((var, aval.clone()));
        frame.invar_args.push((var, arg_index));
        self.records[frame.record].args.push(aval.clone());
        let record = frame.record;
        let a = Rc::new(Array {
            aval: aval.clone(),
            kind: ArrayKind::Tracer(Tracer { trace: frame.id, var, primal, active }),
            origin,
            numpy: Default::default(),
            tf: Default::default(),
        });
        self.inputs.push((record, Rc::as_ptr(&a) as usize, aval, arg_index));
        self.input_keep.push(a.clone());
        a
    }

    /// Ends the top trace with the given outputs; returns its jaxpr.
    pub fn pop_trace(&mut self, outputs: &[Rc<Array>]) -> Rc<Jaxpr> {
        let pos = self.traces.len() - 1;
        let mut atoms = Vec::new();
        for o in outputs {
            atoms.push(self.atom_in(pos, o));
        }
        let Some(mut frame) = self.traces.pop() else {
            return Rc::new(Jaxpr::default());
        };
        self.ended.insert(frame.id, (frame.tracer_class(), frame.record));
        frame.jaxpr.outvars = atoms;
        let jaxpr = Rc::new(frame.jaxpr);
        let rec = &mut self.records[frame.record];
        rec.outputs = Some(outputs.iter().map(|o| o.aval.clone()).collect());
        rec.jaxpr = Some(jaxpr.clone());
        rec.output_arrays = outputs.to_vec();
        jaxpr
    }

    /// `pop_trace`, also returning the values the trace closed over (its constvars' values,
    /// including outputs that are not its own tracers, which become constvars here).
    pub fn pop_trace_with_consts(&mut self, outputs: &[Rc<Array>]) -> (Rc<Jaxpr>, Vec<Rc<Array>>) {
        let pos = self.traces.len() - 1;
        for o in outputs {
            self.atom_in(pos, o);
        }
        let consts = self.captured_consts();
        (self.pop_trace(outputs), consts)
    }

    /// Abandons the top trace (its function raised).
    pub fn abort_trace(&mut self) {
        if let Some(frame) = self.traces.pop() {
            self.ended.insert(frame.id, (frame.tracer_class(), frame.record));
        }
    }

    /// The atom standing for `a` inside the trace at stack position `pos`.
    fn atom_in(&mut self, pos: usize, a: &Rc<Array>) -> Atom {
        if let Some(t) = a.tracer() {
            if self.traces[pos].id == t.trace {
                return Atom::Var(t.var);
            }
        } else if a.aval.shape.is_empty() {
            if let Some(d) = eval::force(a, 1) {
                if let Some(x) = d.iter().next() {
                    return Atom::Lit(*x, a.aval.clone());
                }
            }
        }
        let key = Rc::as_ptr(a) as usize;
        let frame = &mut self.traces[pos];
        if let Some((_, var, _)) = frame.consts.iter().find(|(k, _, _)| *k == key) {
            return Atom::Var(*var);
        }
        let var = frame.next_var;
        frame.next_var += 1;
        frame.jaxpr.constvars.push((var, a.aval.clone()));
        frame.consts.push((key, var, a.clone()));
        Atom::Var(var)
    }

    /// The value a constvar of the trace at stack position `pos` stands for.
    pub fn const_value(&self, pos: usize, var: VarId) -> Option<&Rc<Array>> {
        self.traces.get(pos)?.consts.iter().find(|(_, v, _)| *v == var).map(|(_, _, a)| a)
    }

    /// Concrete arrays closed over by the top trace so far.
    pub fn captured_consts(&self) -> Vec<Rc<Array>> {
        self.traces.last().map(|t| t.consts.iter().map(|(_, _, a)| a.clone()).collect()).unwrap_or_default()
    }
}

/// JAX's `bind`: applies `prim` to `inputs`, its output avals given by the primitive's rule
/// (`prims/`); where the rule rejects the avals it raises JAX's exception. Every front end
/// binds through here (or [`apply`], [`apply1`]): no caller passes output avals. A value the
/// model does not compute is `Prim::opaque(name, aval)`, whose aval is its parameter.
pub fn apply_with_bodies(interp: &mut Interp, prim: Prim, inputs: &[Rc<Array>], bodies: Vec<Rc<Jaxpr>>) -> PyResult<Vec<Rc<Array>>> {
    let outs = rule_avals(interp, &prim, inputs, &bodies)?;
    bind_with_bodies(interp, prim, inputs, outs, bodies)
}

pub fn apply(interp: &mut Interp, prim: Prim, inputs: &[Rc<Array>]) -> PyResult<Vec<Rc<Array>>> {
    apply_with_bodies(interp, prim, inputs, Vec::new())
}

pub fn apply1(interp: &mut Interp, prim: Prim, inputs: &[Rc<Array>]) -> PyResult<Rc<Array>> {
    let outs = apply_with_bodies(interp, prim, inputs, Vec::new())?;
    outs.into_iter().next().ok_or_else(|| interp.stop_unknown("a primitive without outputs".to_string()))
}

/// Binds `Opaque(name)` (a value tracelens does not compute) where JAX binds `model`: its
/// output aval is `model`'s rule's, so that an uncomputed case still carries JAX's aval.
pub fn apply_opaque1(interp: &mut Interp, name: &'static str, model: &Prim, inputs: &[Rc<Array>]) -> PyResult<Rc<Array>> {
    let aval = rule_avals(interp, model, inputs, &[])?.into_iter().next();
    let aval = aval.ok_or_else(|| interp.stop_unknown(format!("{} without outputs", model.name())))?;
    apply1(interp, Prim::opaque(name, aval), inputs)
}

/// The output avals `prim`'s rule gives for `inputs`, or JAX's exception.
pub fn rule_avals(interp: &mut Interp, prim: &Prim, inputs: &[Rc<Array>], bodies: &[Rc<Jaxpr>]) -> PyResult<Vec<Aval>> {
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
fn bind1(interp: &mut Interp, prim: Prim, inputs: &[Rc<Array>], out_aval: Aval) -> PyResult<Rc<Array>> {
    let mut outs = bind_with_bodies(interp, prim, inputs, vec![out_aval], Vec::new())?;
    Ok(outs.remove(0))
}

fn bind_with_bodies(
    interp: &mut Interp,
    prim: Prim,
    inputs: &[Rc<Array>],
    out_avals: Vec<Aval>,
    bodies: Vec<Rc<Jaxpr>>,
) -> PyResult<Vec<Rc<Array>>> {
    if inputs.iter().any(|i| i.aval.dtype.is_key()) && !prims::properties::takes_keys(&prim) {
        // JAX refuses most primitives on typed PRNG keys, with messages that depend on the
        // primitive; not modelled, so the analysis stops here without a diagnostic.
        return Err(interp.stop_unknown(format!("{} applied to PRNG keys", prim.name())));
    }
    if let (Prim::Linalg(op), Some(first)) = (&prim, inputs.first()) {
        // LAPACK has no 16-bit routines: JAX's lowering of these primitives raises.
        let class = match first.aval.dtype {
            dtypes::DType::F16 => Some("numpy.float16"),
            dtypes::DType::BF16 => Some("ml_dtypes.bfloat16"),
            _ => None,
        };
        if let (Some(class), true) = (class, prims::properties::calls_lapack(*op)) {
            let name = first.aval.dtype.name();
            let message = format!("(KeyError(<class '{class}'>), 'Unsupported dtype {name}.')");
            return Err(interp.raise("NotImplementedError", Code::PythonException, message));
        }
    }
    if interp.jax.check_rules {
        check_rule(interp, &prim, inputs, &out_avals, &bodies);
    }
    let site = interp.site();
    // A tracer whose trace has ended escaped it (UnexpectedTracerError). Inside a `jit`, JAX
    // takes it in as a constant and raises at the jitted call (the outermost one, which
    // compiles); a `vmap` tracer it rejects at once.
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
    let state = &mut interp.jax;
    let top_input = inputs.iter().filter_map(|i| i.tracer()).filter_map(|t| state.position(t.trace)).max();
    let staging = if state.numpy_eager { None } else { state.innermost_staging() };
    let target = match (top_input, staging) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    // A custom_jvp/custom_vjp marker's outputs are its last inputs (the function's own
    // outputs): outside any trace there is nothing to mark.
    let aliased = prim.custom_call().is_some();
    let first_alias = inputs.len().saturating_sub(out_avals.len());
    if target.is_none() && aliased {
        return Ok(inputs[first_alias..].to_vec());
    }
    let Some(pos) = target else {
        let values_mode = interp.values.is_some();
        let name = if values_mode { prim.label() } else { std::borrow::Cow::Borrowed("") };
        let recorded = interp.jax.eager_log.is_some().then(|| (prim.clone(), !bodies.is_empty()));
        // A jitted call (`pjit`) stays pending, run equation by equation: `jax_debug_nans` names the op in it.
        let outs: Vec<Rc<Array>> = if bodies.is_empty() || matches!(prim, Prim::Pjit { .. }) {
            let mut prim = Some(prim).filter(|p| !matches!(p, Prim::Opaque(_)));
            // Pushed, not collected from `out_avals` (which reallocates at every bind).
            let mut outs = Vec::with_capacity(out_avals.len());
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
            staged_equation(interp, prim, inputs, out_avals, bodies)?
        };
        if let Some((prim, has_bodies)) = recorded {
            eager_log::record(interp, prim, has_bodies, inputs, &outs);
        }
        if values_mode {
            numerics::computed_eagerly(interp, &outs, inputs, &name, site)?;
        }
        return Ok(outs);
    };
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
    let active: Vec<bool> = if staging_frame {
        vec![true; out_avals.len()]
    } else {
        let flags: Vec<bool> = inputs.iter().map(|i| i.is_jax_tracer()).collect();
        let mode = taint::Mode::at(&interp.jax.traces, pos);
        taint::outputs_active(&prim, &flags, &out_avals, &bodies, mode)
    };
    let state = &mut interp.jax;
    let frame = &mut state.traces[pos];
    let mut outs = Vec::with_capacity(out_avals.len());
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
            kind: ArrayKind::Tracer(Tracer { trace: frame.id, var, primal, active: active[i] }),
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
        Ok(outs) if outs == out_avals => return,
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
    out_avals: Vec<Aval>,
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
    Ok(array_model::StagedCall::outputs(Rc::new(jaxpr), Vec::new(), inputs.to_vec(), out_avals))
}

/// Raises `class` with `code` at the current user line.
pub fn raise(interp: &Interp, class: &str, code: Code, message: impl Into<String>) -> crate::interp::Flow {
    interp.raise(class, code, message)
}
