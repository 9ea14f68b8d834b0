//! User functions a TensorFlow control-flow op calls inside the trace that calls the op
//! (`tf.cond`'s branches, `tf.while_loop`'s `cond` and `body`): TensorFlow traces them into
//! the same graph, so their statements are recorded in the op's own trace record, right
//! after the op's statement. Each call is noted with the range of statements it recorded,
//! the arrays it was passed and what it returned, so that the reproducer writes the function
//! as one of its own (`def body(i, acc): ...`), staged out of that range, and passes it to
//! the op as the user did. A `lambda` is named after the op's parameter (`true_fn`, `body`),
//! so two lambdas passed to one op are two functions.

use super::{collect_arrays, collect_traced, leaf_paths, out_arrays, sanitize, slice, to_arg, Arg, Call, Names, Scope, Statement, What};
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult, Site};
use crate::repro::{Expr, Program};

/// One call of a user function by the op of statement `statement`.
#[derive(Clone, Debug)]
pub struct PassedCall {
    pub statement: usize,
    /// The name the statement's argument now has for it (`body`, `true_fn` for a lambda).
    pub name: String,
    /// The statements its body recorded: `start..end` of the op's record.
    pub start: usize,
    pub end: usize,
    /// Where the function is defined.
    pub def_site: Site,
    /// Its arguments, by parameter name.
    pub args: Vec<(String, Arg)>,
    /// What it returned; `None` when it raised.
    pub output: Option<Arg>,
}

/// The statement of the op running now, when it is a recorded TensorFlow op of the innermost
/// trace that has not finished (the op's own calls are not statements).
pub fn running_op(interp: &Interp) -> Option<usize> {
    let log = &interp.jax.log;
    let record = interp.jax.traces.last()?.record;
    let last = log.statements.len().checked_sub(1)?;
    let s = &log.statements[last];
    (log.depth == 1 && s.record == record && matches!(s.call, Call::TfApi(_)) && s.outs.is_empty() && !s.raised).then_some(last)
}

/// Where a function passed to an op stands in the op's statement: its argument, by position
/// or else by keyword, and in a list, tuple or dict there, its item (in a `(key, fn)` pair,
/// the function).
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub pos: usize,
    pub kw: &'static str,
    pub item: Option<usize>,
}

/// Calls the user function `f`, passed to the op of statement `op` as its parameter `role`,
/// with `args`, and notes the call.
pub fn call_passed(interp: &mut Interp, op: Option<usize>, role: &str, f: &Value, args: Vec<Value>) -> PyResult<Value> {
    call_noted(interp, op, None, role, f, args)
}

/// `call_passed` for a function that stands at `slot` of the op's statement (an item of a
/// list of them: `tf.switch_case`'s branches).
pub fn call_passed_at(interp: &mut Interp, op: Option<usize>, slot: Slot, role: &str, f: &Value, args: Vec<Value>) -> PyResult<Value> {
    call_noted(interp, op, Some(slot), role, f, args)
}

fn call_noted(interp: &mut Interp, op: Option<usize>, slot: Option<Slot>, role: &str, f: &Value, args: Vec<Value>) -> PyResult<Value> {
    let Some(op) = op else { return interp.call(f, args, Vec::new()) };
    let Value::Function(fun) = f else { return interp.call(f, args, Vec::new()) };
    let own = fun.def.name.to_string();
    let name = if own == "<lambda>" { role.to_string() } else { sanitize(&own) };
    // The argument standing for it: the one at its slot, else the first one that still has
    // the function's own name.
    let statement = &mut interp.jax.log.statements[op];
    let standing = match slot {
        Some(slot) => slot_arg(statement, slot),
        None => statement
            .args
            .iter_mut()
            .chain(statement.kwargs.iter_mut().map(|(_, a)| a))
            .find(|a| matches!(a, Arg::Function(n) if *n == own)),
    };
    let renamed = match standing {
        Some(Arg::Function(n)) if *n == own => {
            *n = name.clone();
            true
        }
        _ => false,
    };
    let params = crate::jax::transforms::trace::param_names(f);
    let mut keep = std::mem::take(&mut interp.jax.log.keep);
    let converted: Vec<(String, Arg)> = args.iter().enumerate().map(|(i, v)| (param(&params, i), to_arg(interp, v, &mut keep))).collect();
    interp.jax.log.keep = keep;
    let start = interp.jax.log.statements.len();
    let result = interp.call(f, args, Vec::new());
    let end = interp.jax.log.statements.len();
    let output = match &result {
        Ok(v) => {
            let mut keep = std::mem::take(&mut interp.jax.log.keep);
            let out = to_arg(interp, v, &mut keep);
            interp.jax.log.keep = keep;
            Some(out)
        }
        Err(_) => None,
    };
    if renamed {
        let def_site = Site { file: fun.file, span: fun.def.span };
        interp.jax.log.calls.push(PassedCall { statement: op, name, start, end, def_site, args: converted, output });
    }
    result
}

/// The argument of `s` at `slot`.
fn slot_arg(s: &mut Statement, slot: Slot) -> Option<&mut Arg> {
    let top = if slot.pos < s.args.len() {
        s.args.get_mut(slot.pos)?
    } else {
        s.kwargs.iter_mut().find(|(k, _)| k == slot.kw).map(|(_, a)| a)?
    };
    let Some(i) = slot.item else { return Some(top) };
    let item = match top {
        Arg::List(items) | Arg::Tuple(items) => items.get_mut(i)?,
        Arg::Dict(items) => &mut items.get_mut(i)?.1,
        _ => return None,
    };
    // A `(key, fn)` pair's function (`tf.switch_case` takes no other tuple there).
    match item {
        Arg::Tuple(pair) => pair.get_mut(1),
        other => Some(other),
    }
}

/// A function the op of statement `statement` was passed but never called, because the op
/// raised before calling any of the functions it was passed (`tf.switch_case` checks its
/// index first): written as a function that does nothing, which TensorFlow does not call
/// either. An error when the op called one of them, or did not raise.
pub(super) fn never_called(interp: &Interp, record: usize, statement: usize, name: &str, outer: &mut Names<'_>) -> Result<Program, String> {
    let log = &interp.jax.log;
    let s = log.statements.get(statement).ok_or("no trace of it")?;
    if !s.raised || !matches!(s.call, Call::TfApi(_)) || log.calls.iter().any(|c| c.statement == statement) {
        return Err("no trace of it".into());
    }
    let wrap = match interp.jax.records.get(record) {
        Some(r) if r.traced_for == Some(crate::tf::function::TRACED_FOR) => crate::repro::Wrap::TfFunction,
        _ => return Err("no trace of it".into()),
    };
    let fn_name = outer.fresh(&sanitize(name));
    outer.used.push(fn_name.clone());
    Ok(Program {
        code: String::new(),
        class: String::new(),
        message: String::new(),
        file_label: String::new(),
        error_line: 0,
        fn_name,
        def_line: interp.line_of(s.site),
        def_file: interp.path(s.site.file).to_string_lossy().to_string(),
        consts: Vec::new(),
        params: Vec::new(),
        body: Vec::new(),
        wrap,
        call_line: 0,
        call_file: String::new(),
        returns: None,
        error_at_call: false,
        helpers: Vec::new(),
        keep_params: true,
        signature: Some(Vec::new()),
        free: Vec::new(),
        symbolic: Vec::new(),
    })
}

fn param(params: &[String], i: usize) -> String {
    params.get(i).map(|p| sanitize(p)).unwrap_or_else(|| format!("arg{i}"))
}

/// The index of `s` in the log.
pub(super) fn index_of(statements: &[Statement], s: &Statement) -> Option<usize> {
    statements.iter().position(|x| std::ptr::eq(x, s))
}

/// The call of the function the statement at `statement` passes as `name`.
pub(super) fn passed<'a>(interp: &'a Interp, statement: usize, name: &str) -> Option<&'a PassedCall> {
    interp.jax.log.calls.iter().find(|c| c.statement == statement && c.name == name)
}

/// The arrays the functions the statement at `statement` passed read (or return) without
/// making them or taking them as arguments: what they closed over.
pub(super) fn free_reads(interp: &Interp, statement: usize) -> Vec<usize> {
    let log = &interp.jax.log;
    let mut out = Vec::new();
    for c in log.calls.iter().filter(|c| c.statement == statement) {
        let Some(range) = log.statements.get(c.start..c.end) else { continue };
        let made: Vec<usize> = range.iter().flat_map(|s| out_arrays(&s.outs)).collect();
        let taken: Vec<usize> = out_arrays(&c.args.iter().map(|(_, a)| a.clone()).collect::<Vec<_>>());
        let mut read = Vec::new();
        for s in range {
            collect_arrays(&s.args, &mut read);
            for (_, a) in &s.kwargs {
                collect_arrays(std::slice::from_ref(a), &mut read);
            }
        }
        read.extend(c.output.iter().flat_map(|o| out_arrays(std::slice::from_ref(o))));
        out.extend(read.into_iter().filter(|p| !made.contains(p) && !taken.contains(p)));
    }
    out
}

/// The function a TensorFlow op called, staged out of the statements it recorded: it takes
/// the arguments the op passed (a tuple or dict argument whole, its leaves read from it) and
/// returns what it returned; what it read of the function around it, it reads by that
/// function's names (it is written inside it).
pub(super) fn stage_passed(
    interp: &Interp,
    record: usize,
    call: &PassedCall,
    what: &What,
    outer: &mut Names<'_>,
) -> Result<Program, String> {
    let output = call.output.as_ref().ok_or("it raised")?;
    let roots = out_arrays(std::slice::from_ref(output));
    let mut inputs = Vec::new();
    let mut shapes = Vec::new();
    for (param, arg) in &call.args {
        let mut leaves = Vec::new();
        leaf_paths(arg, &mut String::new(), &mut leaves);
        let mut avals = Vec::new();
        collect_traced(arg, &mut avals);
        if leaves.len() != avals.len() || leaves.is_empty() {
            return Err(format!("its argument {param} is not a structure of tensors"));
        }
        for ((ptr, path), (_, aval)) in leaves.iter().zip(avals) {
            let parts: Vec<&str> = path.split(|c| "[]'\"".contains(c)).filter(|p| !p.is_empty()).collect();
            let name = if parts.is_empty() { param.clone() } else { sanitize(&format!("{param}_{}", parts.join("_"))) };
            inputs.push((*ptr, aval, Some(name)));
        }
        shapes.push((param.clone(), leaves.into_iter().map(|(_, path)| path).collect::<Vec<_>>()));
    }
    let scope = Scope { range: call.start..call.end, inputs: Some(inputs) };
    let (mut helper, mut names) = slice(interp, record, scope, &roots, None, false, what, Some(outer))?;
    let returned = names.expr(output).ok_or("what it returns cannot be written")?;
    helper.returns = Some(match returned {
        Expr::Tuple(items) if items.len() >= 2 => items,
        one => vec![one],
    });
    helper.consts = names.consts;
    let inherited: Vec<&String> = outer.names.values().collect();
    helper.free = helper.used_names().into_iter().filter(|n| inherited.contains(&n)).collect();
    // Each argument taken whole, its leaves read from it under the names the slice gave them
    // (the parameters, in the order of the arguments' leaves).
    if helper.params.len() != inputs_count(&shapes) {
        return Err("its parameters are not all the arrays it was passed".into());
    }
    let mut params = helper.params.iter().map(|p| p.name.clone());
    let mut signature = Vec::new();
    for (param, paths) in shapes {
        let leaves: Vec<(String, String)> = paths.into_iter().map(|path| (params.next().unwrap_or_default(), path)).collect();
        let arg = match leaves.as_slice() {
            [(leaf, path)] if path.is_empty() => leaf.clone(),
            _ => param,
        };
        signature.push((arg, leaves));
    }
    helper.signature = Some(signature);
    helper.keep_params = true;
    let fn_name = outer.fresh(&call.name);
    outer.used.push(fn_name.clone());
    let renames: Vec<(String, String)> = helper.consts.iter().map(|c| (c.name.clone(), format!("{fn_name}_{}", c.name))).collect();
    helper.rename(&renames);
    helper.fn_name = fn_name;
    helper.def_line = interp.line_of(call.def_site);
    helper.def_file = interp.path(call.def_site.file).to_string_lossy().to_string();
    Ok(helper)
}

fn inputs_count(shapes: &[(String, Vec<String>)]) -> usize {
    shapes.iter().map(|(_, paths)| paths.len()).sum()
}
