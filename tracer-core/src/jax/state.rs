//! The JAX model's state in an interpreter: the stack of active traces ([`TraceFrame`]), the
//! finished ones ([`TraceRecord`], with how the analysis reached them and the values they
//! hold), and the rest of [`JaxState`] (the jit cache, the config, the key-reuse and effect
//! bookkeeping) that `jax/` keeps between calls.

use std::rc::Rc;

use super::array::{Array, ArrayKind, Tracer};
use super::aval::Aval;
use super::dtypes::DTypeConfig;
use super::ir::{Atom, Jaxpr, VarId};
use super::{api, eager_log, effects, eval, memo, stmt, surface, taint};
use crate::interp::value::{HashMap, Value};
use crate::interp::Site;

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
    pub(super) next_var: VarId,
    /// Tracers of outer traces and concrete arrays closed over, by identity.
    pub(super) consts: Vec<(usize, VarId, Rc<Array>)>,
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
    pub(super) fn tracer_class(&self) -> &'static str {
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

/// Room made for `JaxState::records` at the first trace.
const RECORDS_FIRST_ROOM: usize = 64;

/// Room made for a trace's equations when it starts: a jitted layer binds a few dozen, and
/// a vector of 192-byte equations doubling from fewer copies each of them again.
const EQNS_FIRST_ROOM: usize = 32;

/// The aval of a value assigned inside a traced function.
#[derive(Clone, Debug)]
pub struct ValueRecord {
    pub site: Site,
    /// Shared: a replayed trace's values are copied into every analysis, and handed on as
    /// they are (`TracedValue::name`).
    pub name: std::sync::Arc<str>,
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

/// The hover values a replayed trace adds: its file, the index of its own record (each value's
/// `record` counts from it) and the values as the memo keeps them.
pub struct ReplayedValues {
    pub file: crate::interp::FileId,
    pub record: usize,
    pub values: std::sync::Arc<Vec<ValueRecord>>,
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
    pub(super) next_trace_id: u32,
    pub records: Vec<TraceRecord>,
    /// The hover values seen inside traces, each with its trace's record (`record_value`).
    pub values: super::value_log::ValueLog,
    /// The hover values of replayed traces (`memo::replay`), shared with the memo rather than
    /// copied into `values`: they are read only once the diagnostics are out
    /// (`analysis::collect_functions`).
    pub replayed_values: Vec<ReplayedValues>,
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
    pub(super) born: HashMap<usize, (usize, Value)>,
    pub effects: effects::EffectState,
    /// JAX's tracer class of each ended trace and its record, by id (a leaked tracer is named so).
    pub(super) ended: HashMap<u32, (&'static str, usize)>,
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

    pub fn record_value(
        &mut self,
        site: Site,
        name: &crate::syntax::ast::Name,
        shown: crate::interp::seen::Shown,
        kind: crate::interp::seen::SiteKind,
    ) {
        if let Some(top) = self.traces.last() {
            self.values.push(ValueRecord { site, name: std::sync::Arc::from(&**name), shown, record: top.record, kind });
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

    pub(super) fn position(&self, trace: u32) -> Option<usize> {
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
        if self.records.capacity() == 0 {
            // A module traces its functions by the dozen: no doubling from one.
            self.records.reserve(RECORDS_FIRST_ROOM);
        }
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
            // Room for a jitted layer's equations without growing (`EQNS_FIRST_ROOM`).
            jaxpr: Jaxpr { eqns: Vec::with_capacity(EQNS_FIRST_ROOM), ..Jaxpr::default() },
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
    pub(super) fn atom_in(&mut self, pos: usize, a: &Rc<Array>) -> Atom {
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
