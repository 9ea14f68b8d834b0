//! The reproducer's record of what the user's code did inside traces (the seed design's
//! Statements): each call the user wrote — a `jax.numpy` function, an operator on arrays, an
//! index, a method, a nested jitted call, a conversion Python forced — with its arguments as
//! arrays or Python literals. `emit` turns the statements of one trace back into a standalone
//! pure-JAX program, each line linked to the user's line.
//!
//! Size: the record and `emit`, its one reader, which must agree on every `Call` variant; its tests
//! sit at the end.

mod calls;

use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use super::array::Array;
use super::aval::Aval;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult, Site};
use crate::repro::{np_dtype, Expr, Input, Line, Op, Program, Wrap};

pub use calls::{call_passed, call_passed_at, running_op, PassedCall, Slot};

/// An argument as the reproducer can write it.
#[derive(Clone, Debug)]
pub enum Arg {
    /// An array, by identity (the emitter names it), and whether it was a tracer.
    Array(usize, Aval, bool),
    /// A Python literal, as Python writes it.
    Lit(String),
    Tuple(Vec<Arg>),
    List(Vec<Arg>),
    Dict(Vec<(String, Arg)>),
    Slice(Box<[Arg; 3]>),
    /// A user function passed to a JAX API (`lax.scan(step, ...)`), by name: the emitter
    /// writes the trace the API made of it as a function of its own.
    Function(String),
    /// Something a standalone program cannot say (a user object, a function, an unknown).
    Unknown,
}

#[derive(Clone, Debug)]
pub enum Call {
    /// `jnp.dot`, `jax.nn.relu`, `lax.dynamic_slice`: the qualified name.
    Api(&'static str),
    BinOp(&'static str),
    Unary(&'static str),
    Compare(&'static str),
    GetItem,
    SetItem,
    Method(String),
    /// A conversion Python forced on an array: `bool`, `int`, `float`, `operator.index`,
    /// `np.asarray`.
    Concretize(&'static str),
    /// A function transformation applied and called at once, uncurried as JAX's tool does
    /// (`jax.value_and_grad(loss_fn, has_aux=True)(params, x)`): the API, its options, and
    /// the trace record it made of the user's function.
    Transform {
        api: &'static str,
        options: Vec<(String, Arg)>,
        child: Option<usize>,
    },
    /// `x.T`, `x.mT`.
    Attr(&'static str),
    /// `x.at[i].set(v)`: the arguments are the array, the index and the update's.
    AtUpdate(&'static str),
    /// `jnp.float32(x)`: a dtype called as a function.
    DType(super::dtypes::DType),
    /// `tf.matmul`, `tf.nn.relu`: a TensorFlow op, written with TensorFlow's own name.
    TfApi(crate::tf::TfFn),
    /// An `if`/`while` on a tensor AutoGraph converted, recorded when it raises: the test,
    /// then a tuple of values per part (`repro::converted`).
    Converted(crate::repro::converted::Converted),
}

impl From<crate::interp::model::stmt::Call> for Call {
    fn from(call: crate::interp::model::stmt::Call) -> Call {
        use crate::interp::model::stmt::Call as C;
        match call {
            C::BinOp(op) => Call::BinOp(op),
            C::Unary(op) => Call::Unary(op),
            C::Compare(op) => Call::Compare(op),
            C::GetItem => Call::GetItem,
            C::SetItem => Call::SetItem,
            C::Method(name) => Call::Method(name),
            C::DType(d) => Call::DType(d),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Statement {
    pub record: usize,
    pub site: Site,
    pub call: Call,
    pub args: Vec<Arg>,
    pub kwargs: Vec<(String, Arg)>,
    pub outs: Vec<Arg>,
    pub raised: bool,
    /// For a statement that raised: where each user frame was, outermost first (the last is
    /// `site`), so an error raised in another file is found from the line of the analysed
    /// file that led to it.
    pub frames: Vec<Site>,
}

/// Statements recorded so far, and the arrays they name (kept alive so identities stay unique).
#[derive(Default)]
pub struct StatementLog {
    pub statements: Vec<Statement>,
    keep: Vec<Rc<Array>>,
    /// Nesting of recorded calls: only the outermost call of user code is a statement.
    pub depth: u32,
    /// The user functions TensorFlow control-flow ops called inside their trace.
    pub calls: Vec<PassedCall>,
}

const MAX_STATEMENTS: usize = 100_000;

/// Room made for the statement log at its first statement.
const STATEMENTS_FIRST_ROOM: usize = 256;

fn to_arg(interp: &mut Interp, v: &Value, keep: &mut Vec<Rc<Array>>) -> Arg {
    match v {
        Value::Array(a) => {
            keep.push(a.clone());
            Arg::Array(Rc::as_ptr(a) as usize, a.aval.clone(), a.is_tracer())
        }
        // `inf` and `nan` are not Python literals.
        Value::Float(f) if f.is_nan() => Arg::Lit("float('nan')".into()),
        Value::Float(f) if f.is_infinite() => Arg::Lit(if *f > 0.0 { "float('inf')" } else { "-float('inf')" }.into()),
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Ellipsis => match interp.repr(v) {
            Ok(s) => Arg::Lit(s),
            Err(_) => Arg::Unknown,
        },
        Value::DType(d) | Value::TfDType(d) => Arg::Lit(format!("jnp.{}", d.name())),
        // `dtype=bool`, `astype(int)`: Python's own types.
        Value::Builtin(b) if matches!(&**b, crate::interp::builtins::Builtin::Fn("bool" | "int" | "float" | "complex")) => {
            Arg::Lit(b.name())
        }
        Value::Tuple(items) => Arg::Tuple(items.iter().map(|x| to_arg(interp, x, keep)).collect()),
        Value::List(items) => {
            let items = items.borrow().clone();
            Arg::List(items.iter().map(|x| to_arg(interp, x, keep)).collect())
        }
        Value::Dict(d) => {
            let items = d.borrow().items();
            let mut out = Vec::new();
            for (k, x) in items {
                match interp.repr(&k) {
                    Ok(ks) => out.push((ks, to_arg(interp, &x, keep))),
                    Err(_) => return Arg::Unknown,
                }
            }
            Arg::Dict(out)
        }
        Value::Function(f) => Arg::Function(f.def.name.to_string()),
        // A NamedTuple, registered dataclass or `register_pytree_node` class, flattened one
        // level into a tuple (the seed's normalisation of user pytrees).
        Value::Instance(_) => match super::api::class_children(interp, v) {
            Some(items) => Arg::Tuple(items.iter().map(|x| to_arg(interp, x, keep)).collect()),
            None => Arg::Unknown,
        },
        // `jax.nn.relu` passed as a function: the reproducer names it as the user did.
        Value::Builtin(b) => match &**b {
            crate::interp::builtins::Builtin::Jax(f) => Arg::Lit(short_api(f.qualified_name())),
            // `functools.partial(jnp.multiply, lr)` of a JAX function and Python literals.
            crate::interp::builtins::Builtin::Partial { func, args, kwargs, .. } => {
                let mut parts = Vec::new();
                for x in std::iter::once(func).chain(args) {
                    match to_arg(interp, x, keep) {
                        Arg::Lit(l) => parts.push(l),
                        _ => return Arg::Unknown,
                    }
                }
                for (k, x) in kwargs {
                    match to_arg(interp, x, keep) {
                        Arg::Lit(l) => parts.push(format!("{k}={l}")),
                        _ => return Arg::Unknown,
                    }
                }
                Arg::Lit(format!("functools.partial({})", parts.join(", ")))
            }
            _ => Arg::Unknown,
        },
        Value::Slice(s) => Arg::Slice(Box::new([to_arg(interp, &s[0], keep), to_arg(interp, &s[1], keep), to_arg(interp, &s[2], keep)])),
        _ => Arg::Unknown,
    }
}

/// The record a statement made now would belong to: `None` outside any trace, inside a
/// modelled library call (its own calls are not user statements), or past the log's cap.
pub fn recording(interp: &Interp) -> Option<usize> {
    let top = interp.jax.traces.last().map(|t| t.record);
    top.filter(|_| interp.jax.log.depth == 0 && interp.jax.current_api.is_none() && interp.jax.log.statements.len() < MAX_STATEMENTS)
}

/// Runs `f` as a call nested in a statement that is not recorded: calls it makes are not
/// user statements either.
pub fn unrecorded(interp: &mut Interp, f: impl FnOnce(&mut Interp) -> PyResult<Value>) -> PyResult<Value> {
    interp.jax.log.depth += 1;
    let r = f(interp);
    interp.jax.log.depth -= 1;
    r
}

/// Runs `f` as one statement of user code when a trace is recording: records the call and its
/// arguments first (so a call that raises is recorded too), then its outputs.
pub fn recorded(
    interp: &mut Interp,
    call: Call,
    args: &[&Value],
    kwargs: &Kwargs,
    f: impl FnOnce(&mut Interp) -> PyResult<Value>,
) -> PyResult<Value> {
    let Some(record) = recording(interp) else { return unrecorded(interp, f) };
    let Some(site) = interp.site() else { return f(interp) };
    let mut keep = std::mem::take(&mut interp.jax.log.keep);
    let arg_list: Vec<Arg> = args.iter().map(|v| to_arg(interp, v, &mut keep)).collect();
    let kw_list: Vec<(String, Arg)> = kwargs.iter().map(|(k, v)| (k.to_string(), to_arg(interp, v, &mut keep))).collect();
    interp.jax.log.keep = keep;
    let index = interp.jax.log.statements.len();
    if interp.jax.log.statements.capacity() == 0 {
        // A module's traces record calls by the hundred: no doubling from one.
        interp.jax.log.statements.reserve(STATEMENTS_FIRST_ROOM);
    }
    interp.jax.log.statements.push(Statement {
        record,
        site,
        call,
        args: arg_list,
        kwargs: kw_list,
        outs: Vec::new(),
        raised: false,
        frames: Vec::new(),
    });
    interp.jax.log.depth += 1;
    let result = f(interp);
    interp.jax.log.depth -= 1;
    // An instance of a `register_pytree_node` class made inside the trace has its children
    // known once the call has flattened it (`jax.grad(loss)(Model(w, b))`).
    let statement = &interp.jax.log.statements[index];
    if statement.args.iter().chain(statement.kwargs.iter().map(|(_, a)| a)).any(has_unknown) {
        let mut keep = std::mem::take(&mut interp.jax.log.keep);
        let arg_list: Vec<Arg> = args.iter().map(|v| to_arg(interp, v, &mut keep)).collect();
        let kw_list: Vec<(String, Arg)> = kwargs.iter().map(|(k, v)| (k.to_string(), to_arg(interp, v, &mut keep))).collect();
        interp.jax.log.keep = keep;
        let statement = &mut interp.jax.log.statements[index];
        statement.args = arg_list;
        statement.kwargs = kw_list;
    }
    match &result {
        Ok(v) => {
            let mut keep = std::mem::take(&mut interp.jax.log.keep);
            let out = to_arg(interp, v, &mut keep);
            interp.jax.log.keep = keep;
            interp.jax.log.statements[index].outs = vec![out];
        }
        Err(crate::interp::Flow::Raise(_)) => {
            let frames = user_frames(interp);
            let s = &mut interp.jax.log.statements[index];
            s.raised = true;
            s.frames = frames;
        }
        Err(_) => {}
    }
    result
}

/// `recorded` for a transformation's call (`Call::Transform`): also notes its options and
/// the trace record it makes of the user's function (the one defined at `def_site`).
pub fn recorded_transform(
    interp: &mut Interp,
    api: &'static str,
    def_site: Option<Site>,
    options: Vec<(&'static str, Value)>,
    args: Vec<Value>,
    kwargs: Kwargs,
    f: impl FnOnce(&mut Interp, Vec<Value>, Kwargs) -> PyResult<Value>,
) -> PyResult<Value> {
    let record = recording(interp);
    let index = interp.jax.log.statements.len();
    let first_record = interp.jax.records.len();
    let statement_args = args.clone();
    let statement_kwargs = kwargs.clone();
    let refs: Vec<&Value> = statement_args.iter().collect();
    let call = Call::Transform { api, options: Vec::new(), child: None };
    let result = recorded(interp, call, &refs, &statement_kwargs, move |interp| f(interp, args, kwargs));
    let ours = interp.jax.log.statements.get(index).is_some_and(|s| Some(s.record) == record && matches!(s.call, Call::Transform { .. }));
    if ours {
        let child = (first_record..interp.jax.records.len()).find(|&r| def_site.is_some() && interp.jax.records[r].def_site == def_site);
        let mut keep = std::mem::take(&mut interp.jax.log.keep);
        let converted: Vec<(String, Arg)> = options.iter().map(|(k, v)| (k.to_string(), to_arg(interp, v, &mut keep))).collect();
        interp.jax.log.keep = keep;
        if let Call::Transform { options, child: c, .. } = &mut interp.jax.log.statements[index].call {
            *options = converted;
            *c = child;
        }
    }
    result
}

/// Records a conversion Python forces on a tracer, which is about to raise
/// (`if x > 0:`, `int(n)`, `np.asarray(x)`).
pub fn record_concretize(interp: &mut Interp, what: &'static str, a: &Rc<Array>) {
    let Some(record) = interp.jax.traces.last().map(|t| t.record) else { return };
    if interp.jax.log.depth != 0 || interp.jax.current_api.is_some() {
        return;
    }
    let Some(site) = interp.site() else { return };
    interp.jax.log.keep.push(a.clone());
    let arg = Arg::Array(Rc::as_ptr(a) as usize, a.aval.clone(), a.is_tracer());
    let frames = user_frames(interp);
    interp.jax.log.statements.push(Statement {
        record,
        site,
        call: Call::Concretize(what),
        args: vec![arg],
        kwargs: Vec::new(),
        outs: Vec::new(),
        raised: true,
        frames,
    });
}

/// Records a statement AutoGraph converted that raised at `site` (its `if`/`while` line):
/// its test, then for each part of `c` the tuple of its values.
pub fn record_converted(interp: &mut Interp, site: Site, c: crate::repro::converted::Converted, test: &Value, parts: [Vec<Value>; 4]) {
    let Some(record) = recording(interp) else { return };
    let mut keep = std::mem::take(&mut interp.jax.log.keep);
    let mut args = vec![to_arg(interp, test, &mut keep)];
    for part in &parts {
        args.push(Arg::Tuple(part.iter().map(|v| to_arg(interp, v, &mut keep)).collect()));
    }
    interp.jax.log.keep = keep;
    let frames = user_frames(interp);
    interp.jax.log.statements.push(Statement {
        record,
        site,
        call: Call::Converted(c),
        args,
        kwargs: Vec::new(),
        outs: Vec::new(),
        raised: true,
        frames,
    });
}

/// Where every frame running now is, outermost first.
fn user_frames(interp: &Interp) -> Vec<Site> {
    interp.user_frames().map(|f| Site { file: f.file, span: f.span }).collect()
}

/// The lines, outermost first, of every frame that was running when the statement raised at
/// `error_site` (the failing line itself last): what leads to an error raised in another file.
pub fn error_frames(interp: &Interp, error_site: Site) -> Vec<Site> {
    let log = &interp.jax.log;
    log.statements.iter().rev().find(|s| s.raised && s.site == error_site).map(|s| s.frames.clone()).unwrap_or_default()
}

/// Builds the program that re-raises the error of the statement raised at `error_site`: the
/// statements of that trace the failing one depends on (a backward slice), in order. Arrays
/// the slice needs but cannot compute become parameters (tracers stay tracers, so errors
/// that need a traced value still happen) or constants (`np.ones`, for concrete arrays).
pub fn emit(interp: &Interp, error_site: Site, what: &What) -> Option<Program> {
    let log = &interp.jax.log;
    let failing = log.statements.iter().rposition(|s| s.raised && s.site == error_site)?;
    let record = log.statements[failing].record;
    let last = &log.statements[failing];
    // An error raised by a transformation's call itself is staged out of the trace it made
    // of the user's function (`analysis::error_of_call`), which the minimiser shrinks.
    if matches!(last.call, Call::Transform { .. }) {
        return None;
    }
    let mut roots = Vec::new();
    collect_arrays(&last.args, &mut roots);
    for (_, a) in &last.kwargs {
        collect_arrays(std::slice::from_ref(a), &mut roots);
    }
    // What the functions a TensorFlow op called read of this function.
    roots.extend(calls::free_reads(interp, failing));
    let (mut program, _) = slice(interp, record, Scope::of_trace(0..failing), &roots, Some(last), true, what, None).ok()?;
    program.file_label = interp.path(error_site.file).to_string_lossy().to_string();
    program.error_line = interp.line_of(error_site);
    Some(program)
}

/// The program a trace stages out, returning what the traced function returned: every
/// statement its outputs depend on. With `what` for an error raised by the call itself
/// (`jax.grad` of a non-scalar function), the call is the failing line. `None` when an
/// output comes from something a standalone program cannot say, with what it is.
pub fn emit_trace(interp: &Interp, record: usize, what: &What, error_at_call: bool) -> Result<Program, String> {
    emit_trace_in(interp, record, what, error_at_call, None)
}

/// `emit_trace` of a function defined inside the one `outer` names: it may read the arrays
/// `outer` names (its free variables), and is then written inside it (`Program::free`).
fn emit_trace_in(interp: &Interp, record: usize, what: &What, error_at_call: bool, outer: Option<&Names<'_>>) -> Result<Program, String> {
    let log = &interp.jax.log;
    let rec = &interp.jax.records[record];
    let jaxpr = rec.jaxpr.as_ref().ok_or("the trace raised")?;
    let end = log.statements.iter().rposition(|s| s.record == record).map_or(0, |i| i + 1);
    // The arrays behind the jaxpr's output variables, found by the tracers' variables.
    let trace_id = interp.jax.inputs.iter().find(|(r, _, _, _)| *r == record).and_then(|(_, ptr, _, _)| {
        interp.jax.input_keep.iter().find(|a| Rc::as_ptr(a) as usize == *ptr).and_then(|a| a.tracer().map(|t| t.trace))
    });
    let arrays = || log.keep.iter().chain(interp.jax.input_keep.iter());
    let mut outputs = Vec::new();
    let mut roots = Vec::new();
    for (i, atom) in jaxpr.outvars.iter().enumerate() {
        match atom {
            super::ir::Atom::Var(v) => {
                // A result the trace closed over (a concrete array, such as what
                // `jnp.nonzero(..., size=n)` makes) is the array the function returned.
                let closed = jaxpr.constvars.iter().any(|(c, _)| c == v);
                let returned = rec.output_arrays.get(i).filter(|a| closed && !a.is_tracer());
                let a = returned
                    .or_else(|| arrays().find(|a| a.tracer().is_some_and(|t| t.var == *v && Some(t.trace) == trace_id)))
                    .ok_or("a result is not an array a recorded statement made")?;
                let ptr = Rc::as_ptr(a) as usize;
                roots.push(ptr);
                outputs.push(Arg::Array(ptr, a.aval.clone(), a.is_tracer()));
            }
            super::ir::Atom::Lit(v, aval) => outputs.push(Arg::Lit(python_number(*v, aval.dtype).ok_or("a result is a complex literal")?)),
        }
    }
    let (mut program, mut names) = slice(interp, record, Scope::of_trace(0..end), &roots, None, false, what, outer)?;
    let returns: Option<Vec<Expr>> = outputs.iter().map(|o| names.expr(o)).collect();
    let returns = returns.ok_or("a result cannot be written")?;
    // The results in the structure the user's function returned them in.
    // (Flat when it cannot be written: the function's results are the same leaves.)
    let structured = rec.out_tree.as_deref().and_then(|tree| tree_expr(interp, tree, &mut returns.clone().into_iter()));
    let returns = match structured {
        Some(Expr::Tuple(items)) if items.len() >= 2 => items,
        Some(one) => vec![one],
        None => returns,
    };
    program.returns = Some(returns);
    program.consts = names.consts;
    program.error_at_call = error_at_call;
    program.file_label = rec.def_site.map(|s| interp.path(s.file).to_string_lossy().to_string()).unwrap_or_default();
    program.error_line = program.call_line;
    Ok(program)
}

/// Where a slice takes its statements from, and what its function's parameters are.
struct Scope {
    /// The statements of the record it may take.
    range: Range<usize>,
    /// The arrays the function takes, each with a name: the trace's inputs when `None`, else
    /// those a TensorFlow op passed to the user's function (`calls.rs`).
    inputs: Option<Vec<(usize, Aval, Option<String>)>>,
}

impl Scope {
    fn of_trace(range: Range<usize>) -> Scope {
        Scope { range, inputs: None }
    }
}

/// The statements of `record` in the scope's range that `roots` depend on, then `last`, as a
/// program. Traced arrays nothing in the slice computes become parameters when
/// `extra_params` allows it; otherwise the slice fails.
fn slice<'a>(
    interp: &'a Interp,
    record: usize,
    scope: Scope,
    roots: &[usize],
    last: Option<&Statement>,
    extra_params: bool,
    what: &What,
    outer: Option<&Names<'_>>,
) -> Result<(Program, Names<'a>), String> {
    let log = &interp.jax.log;
    let rec = &interp.jax.records[record];
    let fn_name = record_name(interp, record);
    if last.is_some_and(|l| !renderable(l)) {
        return Err("the failing statement has an argument a standalone program cannot say".into());
    }
    let range = scope.range.start.min(log.statements.len())..scope.range.end.min(log.statements.len());
    let candidates: Vec<&Statement> = log.statements[range].iter().filter(|s| s.record == record && !s.raised).collect();
    let mut needed: Vec<usize> = roots.to_vec();
    let mut chosen: Vec<&Statement> = Vec::new();
    for s in candidates.iter().rev() {
        let made = out_arrays(&s.outs);
        let produces = made.iter().any(|p| needed.contains(p));
        if !produces || !renderable(s) {
            continue;
        }
        // Made here: a call around this one that returns the same arrays (`tree_map` of a
        // lambda whose statements are recorded) is not needed for them.
        needed.retain(|p| !made.contains(p));
        // The functions it passes to an API may read arrays of this trace (closures).
        let mut functions = Vec::new();
        for a in s.args.iter().chain(s.kwargs.iter().map(|(_, a)| a)) {
            collect_functions(a, &mut functions);
        }
        let mut children: Vec<usize> = functions.iter().filter_map(|f| child_of(interp, record, s, f)).collect();
        if let Call::Transform { child: Some(c), .. } = &s.call {
            children.push(*c);
        }
        for c in children {
            needed.extend(free_reads(interp, c));
        }
        // (Looked up only in a trace where a TensorFlow op called a user function.)
        if let Some(index) = (!log.calls.is_empty()).then(|| calls::index_of(&log.statements, s)).flatten() {
            needed.extend(calls::free_reads(interp, index));
        }
        collect_arrays(&s.args, &mut needed);
        for (_, a) in &s.kwargs {
            collect_arrays(std::slice::from_ref(a), &mut needed);
        }
        chosen.push(s);
    }
    chosen.reverse();

    let mut names = Names {
        // A function written inside another sees the other's names.
        names: outer.map(|o| o.names.clone()).unwrap_or_default(),
        used: ["jax", "jnp", "np", "lax", fn_name.as_str()]
            .iter()
            .map(|s| s.to_string())
            .chain(outer.iter().flat_map(|o| o.used.iter().cloned()))
            .collect(),
        consts: Vec::new(),
        threshold: what.fake_array_threshold,
        keep: &log.keep,
        functions: HashMap::new(),
    };
    // The names a converted `if` binds are the user's (AutoGraph's message names them): no
    // other array takes them.
    for s in chosen.iter().copied().chain(last) {
        if let Call::Converted(c) = &s.call {
            names.used.extend(c.bound_names());
        }
    }
    // Parameters: the trace's inputs, named after the user's parameters.
    let mut params: Vec<Input> = Vec::new();
    for (i, (ptr, aval, name)) in scope.inputs.unwrap_or_else(|| input_arrays(interp, record)).into_iter().enumerate() {
        let base = name.map(|n| sanitize(&n)).filter(|n| !names.used.contains(n)).unwrap_or_else(|| names.fresh(&format!("arg{i}")));
        names.used.push(base.clone());
        names.names.insert(ptr, base.clone());
        params.push(Input { name: base, aval, literal: None });
    }
    // Traced arrays the slice needs but does not compute: more parameters.
    let computed: Vec<usize> = chosen.iter().flat_map(|s| out_arrays(&s.outs)).collect();
    let mut all_args: Vec<&Arg> = chosen.iter().flat_map(|s| s.args.iter().chain(s.kwargs.iter().map(|(_, a)| a))).collect();
    if let Some(l) = last {
        all_args.extend(l.args.iter().chain(l.kwargs.iter().map(|(_, a)| a)));
    }
    let mut traced_extra = Vec::new();
    for a in all_args {
        collect_traced(a, &mut traced_extra);
    }
    for &r in roots {
        if let Some(a) = log.keep.iter().find(|a| Rc::as_ptr(a) as usize == r) {
            if a.is_tracer() && !traced_extra.iter().any(|(p, _)| *p == r) {
                traced_extra.push((r, a.aval.clone()));
            }
        }
    }
    for (ptr, aval) in traced_extra {
        if names.names.contains_key(&ptr) || computed.contains(&ptr) {
            continue;
        }
        if !extra_params {
            // Say which statement made it, when one did but cannot be written.
            let maker = candidates.iter().find(|s| out_arrays(&s.outs).contains(&ptr));
            return Err(match maker {
                Some(s) => format!("line {}: {:?} has an argument a standalone program cannot say", interp.line_of(s.site), s.call),
                None => format!("it reads a traced {} that no statement of its own computes", aval.short()),
            });
        }
        let name = names.fresh(&format!("t{}", params.len()));
        names.used.push(name.clone());
        names.names.insert(ptr, name.clone());
        params.push(Input { name, aval, literal: None });
    }

    let mut body: Vec<Line> = Vec::new();
    let mut helpers: Vec<Program> = Vec::new();
    let statements: Vec<&Statement> = chosen.iter().copied().chain(last).collect();
    for (j, s) in statements.iter().enumerate() {
        names.functions.clear();
        let mut functions = Vec::new();
        for a in s.args.iter().chain(s.kwargs.iter().map(|(_, a)| a)) {
            collect_functions(a, &mut functions);
        }
        for f in functions {
            let helper = helper_for(interp, record, s, &f, what, &mut names)
                .map_err(|why| format!("the function {f} passed at line {}: {why}", interp.line_of(s.site)))?;
            names.functions.insert(f, helper.fn_name.clone());
            helpers.push(helper);
        }
        let mut transformed = None;
        if let Call::Transform { api, child, .. } = &s.call {
            let why = |w: String| format!("the function {api} transforms at line {}: {w}", interp.line_of(s.site));
            let child = child.ok_or_else(|| why("no trace of it".into()))?;
            let helper = stage_helper(interp, child, what, &mut names).map_err(why)?;
            transformed = Some(Expr::Name(helper.fn_name.clone()));
            helpers.push(helper);
        }
        // `h = jnp.tanh(x @ w)`: the user's name is for the line's last call, not for `x @ w`.
        let last_on_line = statements.get(j + 1).is_none_or(|next| interp.line_of(next.site) != interp.line_of(s.site));
        let args: Option<Vec<Expr>> = transformed.into_iter().map(Some).chain(s.args.iter().map(|a| names.expr(a))).collect();
        // A transformation's options are written as the keyword arguments of the API call.
        let kwargs_of = match &s.call {
            Call::Transform { options, .. } => options,
            _ => &s.kwargs,
        };
        let kwargs: Option<Vec<(String, Expr)>> = kwargs_of.iter().map(|(k, a)| Some((k.clone(), names.expr(a)?))).collect();
        let mut out_leaves = Vec::new();
        let (target, out) = match s.outs.first() {
            Some(Arg::Array(ptr, aval, _)) if !s.raised => {
                let name = user_name(interp, s.site, aval)
                    .filter(|_| last_on_line)
                    .map(|n| sanitize(&n))
                    .filter(|n| !names.used.contains(n))
                    .unwrap_or_else(|| names.fresh("v"));
                names.used.push(name.clone());
                names.names.insert(*ptr, name.clone());
                (Some(name), Some(aval.clone()))
            }
            // `a, b = jnp.split(h, 2)`: the tuple gets a name, its arrays are `v1[0]`, `v1[1]`
            // (and `v1[1]['w']` in a pytree of them).
            Some(o @ (Arg::Tuple(_) | Arg::List(_) | Arg::Dict(_))) if !s.raised && !out_arrays(s.outs.as_slice()).is_empty() => {
                let name = names.fresh("v");
                names.used.push(name.clone());
                let mut leaves = Vec::new();
                leaf_paths(o, &mut String::new(), &mut leaves);
                let mut avals = Vec::new();
                collect_traced(o, &mut avals);
                for (ptr, path) in leaves {
                    let leaf = format!("{name}{path}");
                    if let Some((_, aval)) = avals.iter().find(|(p, _)| *p == ptr) {
                        out_leaves.push((leaf.clone(), aval.clone()));
                    }
                    names.names.insert(ptr, leaf);
                }
                (Some(name), None)
            }
            _ => (None, None),
        };
        let unsaid = || format!("line {}: an argument cannot be written", interp.line_of(s.site));
        body.push(Line {
            target,
            op: op_of(&s.call),
            args: args.ok_or_else(unsaid)?,
            kwargs: kwargs.ok_or_else(unsaid)?,
            out,
            out_leaves,
            user_line: interp.line_of(s.site),
            file: interp.path(s.site.file).to_string_lossy().to_string(),
        });
    }
    let label_of = |site: Option<Site>| site.map(|s| interp.path(s.file).to_string_lossy().to_string()).unwrap_or_default();
    let under_jit = std::iter::successors(rec.parent, |p| interp.jax.records[*p].parent)
        .any(|p| matches!(interp.jax.records[p].kind, super::TraceKind::Jit));
    // `jax.grad` for a grad trace (wrapped in `jax.jit` when it ran under one, where the
    // primal values are abstract too), `jax.jit` for everything else (scan/cond/while bodies
    // and vmapped functions see abstract values under jit just as they did).
    let wrap = match rec.kind {
        _ if rec.traced_for == Some(crate::tf::function::TRACED_FOR) => Wrap::TfFunction,
        super::TraceKind::Grad if under_jit => Wrap::JitGrad,
        super::TraceKind::Grad => Wrap::Grad,
        _ => Wrap::Jit,
    };
    let mut program = Program {
        code: what.code.clone(),
        class: what.message.split(':').next().unwrap_or("").to_string(),
        message: what.message.clone(),
        file_label: String::new(),
        error_line: 0,
        fn_name,
        def_line: rec.def_site.map(|s| interp.line_of(s)).unwrap_or(0),
        def_file: label_of(rec.def_site),
        consts: names.consts.clone(),
        params,
        body,
        wrap,
        call_line: rec.call_site.map(|s| interp.line_of(s)).unwrap_or(0),
        call_file: label_of(rec.call_site),
        returns: None,
        error_at_call: false,
        helpers,
        keep_params: false,
        signature: None,
        free: Vec::new(),
        symbolic: Vec::new(),
    };
    if wrap == Wrap::TfFunction {
        crate::repro::tf::to_tensorflow(&mut program)?;
    }
    Ok((program, names))
}

/// The pytree `tree` with its leaves taken from `leaves`, as a Python expression (a user
/// class as the tuple of its children); `None` for a key Python cannot write.
fn tree_expr(interp: &Interp, tree: &super::api::TreeDef, leaves: &mut dyn Iterator<Item = Expr>) -> Option<Expr> {
    use super::api::TreeDef;
    Some(match tree {
        TreeDef::Leaf => leaves.next()?,
        TreeDef::None => Expr::Lit("None".into()),
        TreeDef::Tuple(items) => Expr::Tuple(items.iter().map(|t| tree_expr(interp, t, leaves)).collect::<Option<_>>()?),
        TreeDef::List(items) => Expr::List(items.iter().map(|t| tree_expr(interp, t, leaves)).collect::<Option<_>>()?),
        TreeDef::Dict(items) => {
            Expr::Dict(items.iter().map(|(k, t)| Some((key_literal(k)?, tree_expr(interp, t, leaves)?))).collect::<Option<_>>()?)
        }
        // A user class, flattened one level into a tuple as its arguments are.
        TreeDef::Node { children, .. } => Expr::Tuple(children.iter().map(|t| tree_expr(interp, t, leaves)).collect::<Option<_>>()?),
    })
}

fn key_literal(k: &crate::interp::value::HashKey) -> Option<String> {
    use crate::interp::value::HashKey;
    Some(match k {
        HashKey::Int(i) => i.to_string(),
        HashKey::Str(s) => format!("{s:?}"),
        HashKey::None => "None".into(),
        _ => return None,
    })
}

/// The arrays a statement made: its result, or the arrays of the pytree (tuples, lists and
/// dicts) it returned.
fn out_arrays(outs: &[Arg]) -> Vec<usize> {
    let mut leaves = Vec::new();
    for o in outs {
        leaf_paths(o, &mut String::new(), &mut leaves);
    }
    leaves.into_iter().map(|(p, _)| p).collect()
}

/// The arrays of a pytree of tuples, lists and dicts, each with its index path (`[1]['w']`).
fn leaf_paths(a: &Arg, prefix: &mut String, out: &mut Vec<(usize, String)>) {
    let len = prefix.len();
    match a {
        Arg::Array(p, _, _) => out.push((*p, prefix.clone())),
        Arg::Tuple(items) | Arg::List(items) => {
            for (k, x) in items.iter().enumerate() {
                prefix.push_str(&format!("[{k}]"));
                leaf_paths(x, prefix, out);
                prefix.truncate(len);
            }
        }
        Arg::Dict(items) => {
            for (k, x) in items {
                prefix.push_str(&format!("[{k}]"));
                leaf_paths(x, prefix, out);
                prefix.truncate(len);
            }
        }
        _ => {}
    }
}

fn collect_functions(a: &Arg, out: &mut Vec<String>) {
    match a {
        Arg::Function(f) => {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        Arg::Tuple(items) | Arg::List(items) => items.iter().for_each(|x| collect_functions(x, out)),
        Arg::Dict(items) => items.iter().for_each(|(_, x)| collect_functions(x, out)),
        _ => {}
    }
}

/// The function standing for the user function `name` that statement `s` passed to an API:
/// the trace the API made of it (a child of `record` started on the statement's line),
/// staged out, with its constants renamed after it. `None` when there is no such trace or
/// it reads values it does not take as arguments (a closure over outer tracers).
fn helper_for(interp: &Interp, record: usize, s: &Statement, name: &str, what: &What, names: &mut Names<'_>) -> Result<Program, String> {
    if let Some(child) = child_of(interp, record, s, name) {
        return stage_helper(interp, child, what, names);
    }
    // A function a TensorFlow op called in this trace.
    let statement = calls::index_of(&interp.jax.log.statements, s).ok_or("no trace of it")?;
    match calls::passed(interp, statement, name) {
        Some(call) => calls::stage_passed(interp, record, call, what, names),
        None => calls::never_called(interp, record, statement, name, names),
    }
}

/// The trace an API made of the user function `name` that statement `s` of `record` passed
/// to it: a child of `record` started on the statement's line.
fn child_of(interp: &Interp, record: usize, s: &Statement, name: &str) -> Option<usize> {
    let line = interp.line_of(s.site);
    interp.jax.records.iter().rposition(|r| {
        r.parent == Some(record) && r.fn_name == name && r.call_site.is_some_and(|c| c.file == s.site.file && interp.line_of(c) == line)
    })
}

/// The traced arrays that the statements of `child` and the traces inside it read but
/// neither make nor take as inputs: what the user's function closed over.
fn free_reads(interp: &Interp, child: usize) -> Vec<usize> {
    let records = &interp.jax.records;
    let inside = |mut r: usize| {
        for _ in 0..=records.len() {
            if r == child {
                return true;
            }
            match records.get(r).and_then(|x| x.parent) {
                Some(p) => r = p,
                None => return false,
            }
        }
        false
    };
    let statements: Vec<&Statement> = interp.jax.log.statements.iter().filter(|s| inside(s.record)).collect();
    let made: Vec<usize> = statements.iter().flat_map(|s| out_arrays(&s.outs)).collect();
    let inputs: Vec<usize> = interp.jax.inputs.iter().filter(|(r, _, _, _)| inside(*r)).map(|(_, p, _, _)| *p).collect();
    let mut read = Vec::new();
    for s in &statements {
        for a in s.args.iter().chain(s.kwargs.iter().map(|(_, a)| a)) {
            collect_traced(a, &mut read);
        }
    }
    read.into_iter().map(|(p, _)| p).filter(|p| !made.contains(p) && !inputs.contains(p)).collect()
}

/// The trace `child` staged out as a function the API calls with the user function's
/// arguments: a pytree argument is taken whole and its leaves are read from it
/// (`params_w = params['w']`).
fn stage_helper(interp: &Interp, child: usize, what: &What, names: &mut Names<'_>) -> Result<Program, String> {
    let inputs: Vec<&(usize, usize, Aval, usize)> = interp.jax.inputs.iter().filter(|(r, _, _, _)| *r == child).collect();
    let arg_names = &interp.jax.records[child].arg_names;
    // At the top level when it reads nothing of the function that passes it; else written
    // inside that function, reading its names.
    let mut helper = match emit_trace(interp, child, what, false) {
        Ok(h) => h,
        Err(_) => {
            let mut h = emit_trace_in(interp, child, what, false, Some(names))?;
            let inherited: Vec<&String> = names.names.values().collect();
            h.free = h.used_names().into_iter().filter(|n| inherited.contains(&n)).collect();
            h
        }
    };
    if inputs.len() != helper.params.len() || inputs.iter().any(|(_, _, _, index)| *index >= arg_names.len()) {
        return Err("its arguments are not all parameters it names".into());
    }
    let mut signature: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for (index, arg) in arg_names.iter().enumerate() {
        let arg = sanitize(arg);
        let mut leaves = Vec::new();
        for ((_, ptr, _, i), param) in inputs.iter().zip(&helper.params) {
            if *i != index {
                continue;
            }
            let path = interp.jax.input_index_paths.get(ptr).or_else(|| interp.jax.input_paths.get(ptr)).cloned().unwrap_or_default();
            if !(path.is_empty() || path.starts_with('[')) {
                return Err(format!("its argument {arg} is not a pytree of dicts, tuples and lists"));
            }
            leaves.push((param.name.clone(), path));
        }
        if leaves.iter().filter(|(_, p)| p.is_empty()).count() > usize::from(leaves.len() == 1) {
            return Err(format!("the leaves of its argument {arg} have no path"));
        }
        // An array argument renamed because a closure's enclosing function has the name
        // (`lambda w: ...` inside `step(w, ...)`) is taken under its new name.
        let arg = match leaves.as_slice() {
            [(leaf, path)] if path.is_empty() => leaf.clone(),
            _ => arg,
        };
        signature.push((arg, leaves));
    }
    helper.signature = Some(signature);
    helper.keep_params = true;
    // The closures inside may be written in a function further out (as high as what they
    // read allows): their names are taken there too.
    fn inner_names(h: &Program, out: &mut Vec<String>) {
        for x in &h.helpers {
            if !out.contains(&x.fn_name) {
                out.push(x.fn_name.clone());
            }
            inner_names(x, out);
        }
    }
    inner_names(&helper, &mut names.used);
    let fn_name = names.fresh(&record_name(interp, child));
    names.used.push(fn_name.clone());
    let renames: Vec<(String, String)> = helper.consts.iter().map(|c| (c.name.clone(), format!("{fn_name}_{}", c.name))).collect();
    helper.rename(&renames);
    helper.fn_name = fn_name;
    Ok(helper)
}

/// What the reproducer is for: the diagnostic's code and the first line of its message.
pub struct What {
    pub code: String,
    pub message: String,
    pub fake_array_threshold: u64,
}

fn op_of(call: &Call) -> Op {
    match call {
        Call::Api(name) => Op::Api(short_api(name)),
        Call::TfApi(f) => Op::Api(f.qualified()),
        Call::BinOp(op) => Op::BinOp(op.to_string()),
        Call::Unary(op) => Op::Unary(op.to_string()),
        Call::Compare(op) => Op::Compare(op.to_string()),
        Call::GetItem => Op::GetItem,
        Call::SetItem => Op::SetItem,
        Call::Method(m) => Op::Method(m.clone()),
        Call::Concretize(what) => Op::Concretize(what.to_string()),
        Call::Transform { api, .. } => Op::Transform(api.to_string()),
        Call::Attr(name) => Op::Attr(name.to_string()),
        Call::AtUpdate(op) => Op::AtUpdate(op.to_string()),
        Call::DType(d) => Op::Api(format!("jnp.{}", d.name())),
        Call::Converted(c) => Op::Converted(c.clone()),
    }
}

/// Names given so far: arrays by identity, and every name taken.
struct Names<'a> {
    names: HashMap<usize, String>,
    used: Vec<String>,
    consts: Vec<Input>,
    threshold: u64,
    keep: &'a [Rc<Array>],
    /// The helpers standing for the user functions the current statement passes to an API.
    functions: HashMap<String, String>,
}

impl Names<'_> {
    /// `base` if it is free, else `base1`, `base2`, ...
    fn fresh(&self, base: &str) -> String {
        if base != "v" && !self.used.iter().any(|u| u == base) {
            return base.to_string();
        }
        (1..).map(|i| format!("{base}{i}")).find(|n| !self.used.contains(n)).unwrap_or_else(|| base.to_string())
    }

    fn expr(&mut self, a: &Arg) -> Option<Expr> {
        Some(match a {
            Arg::Array(ptr, aval, _) => match self.names.get(ptr) {
                Some(n) => Expr::Name(n.clone()),
                None => {
                    // An array made outside the recorded statements: a constant of the program.
                    let name = self.fresh(&format!("c{}", self.consts.len()));
                    let literal = self.keep.iter().find(|k| Rc::as_ptr(k) as usize == *ptr).and_then(|k| literal_of(k, self.threshold));
                    self.consts.push(Input { name: name.clone(), aval: aval.clone(), literal });
                    self.used.push(name.clone());
                    self.names.insert(*ptr, name.clone());
                    Expr::Name(name)
                }
            },
            Arg::Lit(s) => Expr::Lit(s.clone()),
            Arg::Tuple(items) => Expr::Tuple(items.iter().map(|x| self.expr(x)).collect::<Option<_>>()?),
            Arg::List(items) => Expr::List(items.iter().map(|x| self.expr(x)).collect::<Option<_>>()?),
            Arg::Dict(items) => Expr::Dict(items.iter().map(|(k, x)| Some((k.clone(), self.expr(x)?))).collect::<Option<_>>()?),
            Arg::Slice(s) => Expr::Slice(Box::new([self.expr(&s[0])?, self.expr(&s[1])?, self.expr(&s[2])?])),
            Arg::Function(f) => Expr::Name(self.functions.get(f)?.clone()),
            Arg::Unknown => return None,
        })
    }
}

/// A concrete array with at most `threshold` elements and known data, as a NumPy literal.
fn literal_of(a: &Rc<Array>, threshold: u64) -> Option<String> {
    if a.is_tracer() || a.aval.size() > threshold as u128 {
        return None;
    }
    // Computed now if it is not yet (the analysis is over; nothing else reads it).
    let data = super::eval::force(a, threshold)?;
    let values: Vec<String> = data.iter().map(|v| python_number(*v, a.aval.dtype)).collect::<Option<_>>()?;
    let flat = format!("[{}]", values.join(", "));
    let shaped = if a.aval.shape.len() == 1 {
        format!("np.array({flat}, {})", np_dtype(a.aval.dtype))
    } else {
        format!("np.array({flat}, {}).reshape({})", np_dtype(a.aval.dtype), a.aval.shape_tuple())
    };
    Some(shaped)
}

fn python_number(v: f64, dtype: super::dtypes::DType) -> Option<String> {
    use super::dtypes::DType;
    Some(match dtype {
        DType::Bool => {
            if v != 0.0 {
                "True".into()
            } else {
                "False".into()
            }
        }
        DType::C64 | DType::C128 => return None,
        d if d.is_floating() => {
            if v.is_nan() {
                "np.nan".into()
            } else if v.is_infinite() {
                if v > 0.0 {
                    "np.inf".into()
                } else {
                    "-np.inf".into()
                }
            } else {
                format!("{v:?}")
            }
        }
        _ => format!("{}", v as i64),
    })
}

fn collect_arrays(args: &[Arg], out: &mut Vec<usize>) {
    for a in args {
        match a {
            Arg::Array(p, _, _) => out.push(*p),
            Arg::Tuple(items) | Arg::List(items) => collect_arrays(items, out),
            Arg::Dict(items) => {
                for (_, x) in items {
                    collect_arrays(std::slice::from_ref(x), out);
                }
            }
            Arg::Slice(s) => collect_arrays(&s[..], out),
            Arg::Lit(_) | Arg::Function(_) | Arg::Unknown => {}
        }
    }
}

fn collect_traced(a: &Arg, out: &mut Vec<(usize, Aval)>) {
    match a {
        Arg::Array(p, aval, true) => {
            if !out.iter().any(|(q, _)| q == p) {
                out.push((*p, aval.clone()));
            }
        }
        Arg::Tuple(items) | Arg::List(items) => items.iter().for_each(|x| collect_traced(x, out)),
        Arg::Dict(items) => items.iter().for_each(|(_, x)| collect_traced(x, out)),
        Arg::Slice(s) => s.iter().for_each(|x| collect_traced(x, out)),
        _ => {}
    }
}

fn has_unknown(a: &Arg) -> bool {
    match a {
        Arg::Unknown => true,
        Arg::Tuple(items) | Arg::List(items) => items.iter().any(has_unknown),
        Arg::Dict(items) => items.iter().any(|(_, x)| has_unknown(x)),
        Arg::Slice(s) => s.iter().any(has_unknown),
        _ => false,
    }
}

/// A statement a standalone program can say: every argument is an array or a literal.
fn renderable(s: &Statement) -> bool {
    let options_known = match &s.call {
        // Keyword arguments to a transformed function are not traced inputs.
        Call::Transform { options, .. } => s.kwargs.is_empty() && !options.iter().any(|(_, a)| has_unknown(a)),
        _ => true,
    };
    options_known && !s.args.iter().any(has_unknown) && !s.kwargs.iter().any(|(_, a)| has_unknown(a))
}

/// The input tracers of a trace record: identity, aval and a name made from the user's
/// parameter name and the leaf's place in its pytree (`params_w1` for `params["w1"]`).
fn input_arrays(interp: &Interp, record: usize) -> Vec<(usize, Aval, Option<String>)> {
    let inputs: Vec<&(usize, usize, Aval, usize)> = interp.jax.inputs.iter().filter(|(r, _, _, _)| *r == record).collect();
    let names = &interp.jax.records[record].arg_names;
    // A `tf.function` input is named as TensorFlow names its placeholder (`x`, `pair_1`).
    let tf = interp.jax.records[record].traced_for == Some(crate::tf::function::TRACED_FOR);
    inputs
        .iter()
        .enumerate()
        .map(|(pos, (_, ptr, aval, index))| {
            if tf {
                return (*ptr, aval.clone(), interp.jax.input_paths.get(ptr).map(|n| sanitize(n)));
            }
            let leaves = inputs.iter().filter(|(_, _, _, i)| i == index).count();
            let name = names.get(*index).map(|n| {
                let path = interp.jax.input_paths.get(ptr).map(String::as_str).unwrap_or("");
                let parts: Vec<&str> = path.split(|c| "[]'\".".contains(c)).filter(|p| !p.is_empty()).collect();
                if leaves == 1 && parts.is_empty() {
                    n.clone()
                } else if parts.is_empty() {
                    // No path known: number the leaves in flattening order.
                    let k = inputs[..pos].iter().filter(|(_, _, _, i)| i == index).count();
                    format!("{n}_{k}")
                } else {
                    sanitize(&format!("{n}_{}", parts.join("_")))
                }
            });
            (*ptr, aval.clone(), name)
        })
        .collect()
}

/// The name of the function standing for a trace: the user's function's, or for the trace
/// of a transformation's result (`jax.vmap(jax.grad(loss))`) the transformation's and the
/// function's (`grad_loss`, which calls `jax.grad(loss)`).
fn record_name(interp: &Interp, record: usize) -> String {
    let base = sanitize(&interp.jax.records[record].fn_name);
    let mut own = interp.jax.log.statements.iter().filter(|s| s.record == record);
    match (own.next().map(|s| &s.call), own.next()) {
        (Some(Call::Transform { api, .. }), None) => format!("{}_{base}", api.rsplit('.').next().unwrap_or("f")),
        _ => base,
    }
}

/// The name the user gave, on the statement's line, to a value of the statement's aval.
fn user_name(interp: &Interp, site: Site, aval: &Aval) -> Option<String> {
    interp
        .jax
        .values
        .iter()
        .find(|v| {
            v.assigned()
                && v.shown.aval().is_some_and(|a| a == *aval)
                && v.site.file == site.file
                && interp.line_of(v.site) == interp.line_of(site)
        })
        .map(|v| v.name.to_string())
}

/// A Python identifier made from a function or variable name: other characters become `_`,
/// a leading digit gets an `f_` prefix, and a keyword (`<lambda>` becomes `lambda`) a `_fn`
/// suffix.
pub fn sanitize(name: &str) -> String {
    let mapped: String = name.chars().map(|c| if c.is_alphanumeric() || c == '_' { c } else { '_' }).collect();
    let s = mapped.trim_matches('_');
    let s = if s.is_empty() { "f" } else { s };
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        return format!("f_{s}");
    }
    if PYTHON_KEYWORDS.contains(&s) {
        return format!("{s}_fn");
    }
    // Keep a user's leading underscore (`_loss`) when the name was otherwise fine.
    if mapped.starts_with('_') && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return mapped;
    }
    s.to_string()
}

const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield",
];

/// `jax.numpy.dot` -> `jnp.dot`, `jax.lax.scan` -> `lax.scan`.
fn short_api(name: &str) -> String {
    if let Some(rest) = name.strip_prefix("jax.numpy.") {
        return format!("jnp.{rest}");
    }
    if let Some(rest) = name.strip_prefix("jax.lax.") {
        return format!("lax.{rest}");
    }
    name.to_string()
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::sanitize;

    fn names_from_functions_are_python_identifiers() {
        assert_eq!(sanitize("<lambda>"), "lambda_fn");
        assert_eq!(sanitize("loss"), "loss");
        assert_eq!(sanitize("_loss"), "_loss");
        assert_eq!(sanitize("__call__"), "__call__");
        assert_eq!(sanitize("3d_conv"), "f_3d_conv");
        assert_eq!(sanitize("my-step.v2"), "my_step_v2");
        assert_eq!(sanitize("<genexpr>"), "genexpr");
        assert_eq!(sanitize("class"), "class_fn");
        assert_eq!(sanitize(""), "f");
    }

    crate::unit_tests::list![names_from_functions_are_python_identifiers];
}
