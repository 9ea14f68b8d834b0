//! The reproducer's record of what the user's code did inside traces (the seed design's
//! Statements): each call the user wrote — a `jax.numpy` function, an operator on arrays, an
//! index, a method, a nested jitted call, a conversion Python forced — with its arguments as
//! arrays or Python literals. `emit` turns the statements of one trace back into a standalone
//! pure-JAX program, each line linked to the user's line.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

use super::array::Array;
use super::aval::Aval;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult, Site};

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
    /// Something a standalone program cannot say (a user object, a function, an unknown).
    Unknown,
}

#[derive(Clone, Debug)]
pub enum Call {
    /// `jnp.dot`, `jax.nn.relu`, `lax.dynamic_slice`: the qualified name.
    Api(String),
    BinOp(&'static str),
    Unary(&'static str),
    Compare(&'static str),
    GetItem,
    SetItem,
    Method(String),
    /// A conversion Python forced on an array: `bool`, `int`, `float`, `operator.index`,
    /// `np.asarray`.
    Concretize(&'static str),
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
}

/// Statements recorded so far, and the arrays they name (kept alive so identities stay unique).
#[derive(Default)]
pub struct StatementLog {
    pub statements: Vec<Statement>,
    keep: Vec<Rc<Array>>,
    /// Nesting of recorded calls: only the outermost call of user code is a statement.
    pub depth: u32,
}

const MAX_STATEMENTS: usize = 100_000;

fn to_arg(interp: &mut Interp, v: &Value, keep: &mut Vec<Rc<Array>>) -> Arg {
    match v {
        Value::Array(a) => {
            keep.push(a.clone());
            Arg::Array(Rc::as_ptr(a) as usize, a.aval.clone(), a.is_tracer())
        }
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Ellipsis => match interp.repr(v) {
            Ok(s) => Arg::Lit(s),
            Err(_) => Arg::Unknown,
        },
        Value::DType(d) => Arg::Lit(format!("jnp.{}", d.name())),
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
        Value::Slice(s) => Arg::Slice(Box::new([to_arg(interp, &s[0], keep), to_arg(interp, &s[1], keep), to_arg(interp, &s[2], keep)])),
        _ => Arg::Unknown,
    }
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
    let top = interp.jax.traces.last().map(|t| t.record);
    let Some(record) =
        top.filter(|_| interp.jax.log.depth == 0 && interp.jax.current_api.is_none() && interp.jax.log.statements.len() < MAX_STATEMENTS)
    else {
        interp.jax.log.depth += 1;
        let r = f(interp);
        interp.jax.log.depth -= 1;
        return r;
    };
    let Some(site) = interp.site() else { return f(interp) };
    let mut keep = std::mem::take(&mut interp.jax.log.keep);
    let arg_list: Vec<Arg> = args.iter().map(|v| to_arg(interp, v, &mut keep)).collect();
    let kw_list: Vec<(String, Arg)> = kwargs.iter().map(|(k, v)| (k.to_string(), to_arg(interp, v, &mut keep))).collect();
    interp.jax.log.keep = keep;
    let index = interp.jax.log.statements.len();
    interp.jax.log.statements.push(Statement { record, site, call, args: arg_list, kwargs: kw_list, outs: Vec::new(), raised: false });
    interp.jax.log.depth += 1;
    let result = f(interp);
    interp.jax.log.depth -= 1;
    match &result {
        Ok(v) => {
            let mut keep = std::mem::take(&mut interp.jax.log.keep);
            let out = to_arg(interp, v, &mut keep);
            interp.jax.log.keep = keep;
            interp.jax.log.statements[index].outs = vec![out];
        }
        Err(crate::interp::Flow::Raise(_)) => interp.jax.log.statements[index].raised = true,
        Err(_) => {}
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
    interp.jax.log.statements.push(Statement {
        record,
        site,
        call: Call::Concretize(what),
        args: vec![arg],
        kwargs: Vec::new(),
        outs: Vec::new(),
        raised: true,
    });
}

/// A reproducer for an error raised at `site` inside a traced function.
pub struct Emitted {
    pub text: String,
    /// For each emitted line (0-based), the user's line (1-based) it stands for.
    pub links: Vec<(usize, u32)>,
}

/// Emits the program that re-raises the error of the statement raised at `error_site`: the
/// statements of that trace the failing one depends on (a backward slice), in order. Arrays
/// the slice needs but cannot compute become parameters (tracers stay tracers, so errors
/// that need a traced value still happen) or constants (`np.ones`, for concrete arrays).
pub fn emit(interp: &Interp, error_site: Site, header: &[String]) -> Option<Emitted> {
    let log = &interp.jax.log;
    let failing = log.statements.iter().rposition(|s| s.raised && s.site == error_site)?;
    let record = log.statements[failing].record;
    let rec = &interp.jax.records[record];
    let fn_name = sanitize(&rec.fn_name);

    // Backward slice over the statements of this trace.
    let candidates: Vec<&Statement> = log.statements[..failing].iter().filter(|s| s.record == record && !s.raised).collect();
    let mut needed: Vec<usize> = Vec::new();
    collect_arrays(&log.statements[failing].args, &mut needed);
    for (_, a) in &log.statements[failing].kwargs {
        collect_arrays(std::slice::from_ref(a), &mut needed);
    }
    let mut chosen: Vec<&Statement> = Vec::new();
    for s in candidates.iter().rev() {
        let produces = s.outs.iter().any(|o| matches!(o, Arg::Array(p, _, _) if needed.contains(p)));
        if !produces || !renderable(s) {
            continue;
        }
        collect_arrays(&s.args, &mut needed);
        for (_, a) in &s.kwargs {
            collect_arrays(std::slice::from_ref(a), &mut needed);
        }
        chosen.push(s);
    }
    chosen.reverse();
    if !renderable(&log.statements[failing]) {
        return None;
    }

    let mut names: HashMap<usize, String> = HashMap::new();
    let mut used: Vec<String> = Vec::new();
    let mut consts: Vec<(String, Aval, Option<String>)> = Vec::new();
    // Parameters: the trace's inputs the slice uses, named after the user's parameters.
    let mut params: Vec<(String, Aval)> = Vec::new();
    for (i, (ptr, aval, name)) in input_arrays(interp, record).into_iter().enumerate() {
        let base = name.filter(|n| !used.contains(n)).unwrap_or_else(|| format!("arg{i}"));
        used.push(base.clone());
        names.insert(ptr, base.clone());
        params.push((base, aval));
    }
    // Traced arrays the slice needs but does not compute: more parameters.
    let computed: Vec<usize> =
        chosen.iter().flat_map(|s| s.outs.iter()).filter_map(|o| if let Arg::Array(p, _, _) = o { Some(*p) } else { None }).collect();
    let mut all_args: Vec<&Arg> = chosen.iter().flat_map(|s| s.args.iter().chain(s.kwargs.iter().map(|(_, a)| a))).collect();
    all_args.extend(log.statements[failing].args.iter());
    let mut traced_extra = Vec::new();
    for a in all_args {
        collect_traced(a, &mut traced_extra);
    }
    for (ptr, aval) in traced_extra {
        if names.contains_key(&ptr) || computed.contains(&ptr) {
            continue;
        }
        let name = format!("t{}", params.len());
        used.push(name.clone());
        names.insert(ptr, name.clone());
        params.push((name, aval));
    }

    let path = interp.path(error_site.file).to_path_buf();
    let file_label = path.to_string_lossy().to_string();
    let mut body: Vec<(String, u32)> = Vec::new();
    let mut counter = 0usize;
    for s in chosen.iter().copied().chain(std::iter::once(&log.statements[failing])) {
        let line_no = interp.line_of(s.site);
        let expr = render_call(s, &mut names, &mut consts, &mut used)?;
        let line = match s.outs.first() {
            Some(Arg::Array(ptr, _, _)) if !s.raised => {
                let name = user_name(interp, s.site).filter(|n| !used.contains(n)).unwrap_or_else(|| {
                    counter += 1;
                    format!("v{counter}")
                });
                used.push(name.clone());
                names.insert(*ptr, name.clone());
                format!("{name} = {expr}")
            }
            _ => expr,
        };
        body.push((line, line_no));
    }
    let mut text = String::new();
    let mut links = Vec::new();
    for h in header {
        let _ = writeln!(text, "# {h}");
    }
    text.push_str("import jax\nimport jax.numpy as jnp\nimport numpy as np\nfrom jax import lax\n\n");
    for (name, aval, literal) in &consts {
        let value = literal.clone().unwrap_or_else(|| np_ones(aval));
        let _ = writeln!(text, "{name} = {value}");
    }
    if !consts.is_empty() {
        text.push('\n');
    }
    let def_line = rec.def_site.map(|s| interp.line_of(s)).unwrap_or(0);
    let param_names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
    let _ = writeln!(text, "\ndef {fn_name}({}):  # {file_label}:{def_line}", param_names.join(", "));
    links.push((text.lines().count() - 1, def_line));
    for (line, line_no) in &body {
        let _ = writeln!(text, "    {line}  # {file_label}:{line_no}");
        links.push((text.lines().count() - 1, *line_no));
    }
    let args: Vec<String> = params.iter().map(|(_, aval)| np_ones(aval)).collect();
    let call_line = rec.call_site.map(|s| interp.line_of(s)).unwrap_or(0);
    let _ = writeln!(text, "\n\n{}({})  # {file_label}:{call_line}", transform_call(interp, record, &fn_name), args.join(", "));
    links.push((text.lines().count() - 1, call_line));
    Some(Emitted { text, links })
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
            Arg::Lit(_) | Arg::Unknown => {}
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
    !s.args.iter().any(has_unknown) && !s.kwargs.iter().any(|(_, a)| has_unknown(a))
}

/// How to call the emitted function so its arguments are traced as they were: `jax.grad`
/// for a grad trace (wrapped in `jax.jit` when it ran under one, where the primal values are
/// abstract too), `jax.jit` for everything else (scan/cond/while bodies and vmapped
/// functions see abstract values under jit just as they did).
fn transform_call(interp: &Interp, record: usize, name: &str) -> String {
    let rec = &interp.jax.records[record];
    let under_jit = std::iter::successors(rec.parent, |p| interp.jax.records[*p].parent)
        .any(|p| matches!(interp.jax.records[p].kind, super::TraceKind::Jit));
    match rec.kind {
        super::TraceKind::Grad if under_jit => format!("jax.jit(jax.grad({name}))"),
        super::TraceKind::Grad => format!("jax.grad({name})"),
        _ => format!("jax.jit({name})"),
    }
}

/// The input tracers of a trace record: identity, aval and the user's parameter name.
fn input_arrays(interp: &Interp, record: usize) -> Vec<(usize, Aval, Option<String>)> {
    let inputs: Vec<&(usize, usize, Aval, usize)> = interp.jax.inputs.iter().filter(|(r, _, _, _)| *r == record).collect();
    let names = &interp.jax.records[record].arg_names;
    inputs
        .iter()
        .map(|(_, ptr, aval, index)| {
            // A parameter that is a whole array keeps its name; leaves of a pytree get numbered.
            let leaves = inputs.iter().filter(|(_, _, _, i)| i == index).count();
            let k = inputs.iter().filter(|(_, p, _, i)| i == index && p < ptr).count();
            let name = names.get(*index).map(|n| if leaves == 1 { n.clone() } else { format!("{n}_{k}") });
            (*ptr, aval.clone(), name)
        })
        .collect()
}

fn user_name(interp: &Interp, site: Site) -> Option<String> {
    interp
        .jax
        .values
        .iter()
        .find(|v| v.assigned && v.site.file == site.file && interp.line_of(v.site) == interp.line_of(site))
        .map(|v| v.name.clone())
}

fn np_ones(aval: &Aval) -> String {
    let shape = aval.shape_tuple();
    format!("np.ones({shape}, np.{})", aval.dtype.name())
}

fn sanitize(name: &str) -> String {
    let s: String = name.chars().map(|c| if c.is_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) || s == "lambda" || s.contains("lambda") {
        format!("f_{s}").replace("<", "").replace(">", "")
    } else {
        s
    }
}

fn render_arg(
    a: &Arg,
    names: &mut HashMap<usize, String>,
    consts: &mut Vec<(String, Aval, Option<String>)>,
    used: &mut Vec<String>,
) -> Option<String> {
    Some(match a {
        Arg::Array(ptr, aval, _) => match names.get(ptr) {
            Some(n) => n.clone(),
            None => {
                // An array made outside the recorded statements: a constant of the program.
                let name = format!("c{}", consts.len());
                consts.push((name.clone(), aval.clone(), None));
                used.push(name.clone());
                names.insert(*ptr, name.clone());
                name
            }
        },
        Arg::Lit(s) => s.clone(),
        Arg::Tuple(items) => {
            let parts: Option<Vec<String>> = items.iter().map(|x| render_arg(x, names, consts, used)).collect();
            let parts = parts?;
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
        Arg::List(items) => {
            let parts: Option<Vec<String>> = items.iter().map(|x| render_arg(x, names, consts, used)).collect();
            format!("[{}]", parts?.join(", "))
        }
        Arg::Dict(items) => {
            let mut parts = Vec::new();
            for (k, v) in items {
                parts.push(format!("{k}: {}", render_arg(v, names, consts, used)?));
            }
            format!("{{{}}}", parts.join(", "))
        }
        Arg::Slice(s) => {
            let part = |x: &Arg,
                        names: &mut HashMap<usize, String>,
                        consts: &mut Vec<(String, Aval, Option<String>)>,
                        used: &mut Vec<String>| match x {
                Arg::Lit(l) if l == "None" => Some(String::new()),
                other => render_arg(other, names, consts, used),
            };
            let (a, b, c) = (part(&s[0], names, consts, used)?, part(&s[1], names, consts, used)?, part(&s[2], names, consts, used)?);
            if c.is_empty() {
                format!("{a}:{b}")
            } else {
                format!("{a}:{b}:{c}")
            }
        }
        Arg::Unknown => return None,
    })
}

/// Index syntax: `x[1:3, None, ...]`.
fn render_index(
    a: &Arg,
    names: &mut HashMap<usize, String>,
    consts: &mut Vec<(String, Aval, Option<String>)>,
    used: &mut Vec<String>,
) -> Option<String> {
    match a {
        Arg::Tuple(items) if !items.is_empty() => {
            let parts: Option<Vec<String>> = items.iter().map(|x| render_index(x, names, consts, used)).collect();
            Some(parts?.join(", "))
        }
        Arg::Lit(l) if l == "Ellipsis" => Some("...".into()),
        other => render_arg(other, names, consts, used),
    }
}

fn render_call(
    s: &Statement,
    names: &mut HashMap<usize, String>,
    consts: &mut Vec<(String, Aval, Option<String>)>,
    used: &mut Vec<String>,
) -> Option<String> {
    let mut args = Vec::new();
    for a in &s.args {
        args.push(render_arg(a, names, consts, used)?);
    }
    let mut kwargs = Vec::new();
    for (k, v) in &s.kwargs {
        kwargs.push(format!("{k}={}", render_arg(v, names, consts, used)?));
    }
    let all = || args.iter().cloned().chain(kwargs.iter().cloned()).collect::<Vec<_>>().join(", ");
    Some(match &s.call {
        Call::Api(name) => format!("{}({})", short_api(name), all()),
        Call::BinOp(op) => format!("{} {op} {}", args.first()?, args.get(1)?),
        Call::Compare(op) => format!("{} {op} {}", args.first()?, args.get(1)?),
        Call::Unary(op) => format!("{op}{}", args.first()?),
        Call::GetItem => format!("{}[{}]", args.first()?, render_index(s.args.get(1)?, names, consts, used)?),
        Call::SetItem => format!("{}[{}] = {}", args.first()?, render_index(s.args.get(1)?, names, consts, used)?, args.get(2)?),
        Call::Method(m) => {
            format!("{}.{m}({})", args.first()?, args[1..].iter().cloned().chain(kwargs.iter().cloned()).collect::<Vec<_>>().join(", "))
        }
        Call::Concretize(what) => match *what {
            "bool" => format!("if {}:\n        pass", args.first()?),
            "np.asarray" => format!("np.asarray({})", args.first()?),
            "operator.index" => format!("[0][{}]", args.first()?),
            other => format!("{other}({})", args.first()?),
        },
    })
}

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
