//! `lax.cond`, `lax.switch`, `lax.scan`, `lax.while_loop` and `lax.fori_loop`: JAX's checks
//! of their arguments and carries, one equation over the traced bodies inside a trace, and
//! the taken branch or the loop run directly in values mode outside one.

use super::dispatch::kw;
use super::pytrees::{flatten, leaf_avals, tree_desc, tree_kind, unflatten};
use super::trace::{
    array_avals, array_leaves, bind_control, cached_body, conform_operands, fun_def_site, fun_name, input_leaves, invar_avals,
    map_abstract, map_arrays, param_names, replace_array_leaves, trace_call, traced_body,
};
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::dtypes::{self, DType};
use crate::jax::eval_control::{Body, Loop};
use crate::jax::ir::Prim;
use crate::jax::numpy::{self as jnp, operand, Operand};
use crate::jax::{apply1, TraceKind};
use std::rc::Rc;

pub(super) fn slice_leading(interp: &mut Interp, xs: &Value) -> PyResult<Value> {
    map_arrays(interp, xs, &|a| {
        let s: Vec<usize> = a.aval.shape.iter().skip(1).copied().collect();
        Array::unknown(a.aval.with_shape(&s).weak(a.aval.weak), "one step of a scan")
    })
}

/// JAX's carry check for scan/while/fori: equal structure and types, weak inputs promoted.
/// Where a carry is checked: the message's subject and how its leaves are named.
struct CarryNames<'a> {
    what: &'a str,
    /// The carry's name in the body signature (`c`), or JAX's internal path (`loop_carry[1]`).
    base: String,
    /// fori_loop names even a single leaf a "component".
    always_component: bool,
}

/// JAX's carry check for scan/while/fori: equal structure and types, weak inputs promoted.
fn check_carry(interp: &mut Interp, names: &CarryNames, init: &Value, out: &Value) -> PyResult<Option<Value>> {
    let what = names.what;
    if init.holds_unknown() || out.holds_unknown() {
        // An unknown part may stand for any subtree: the structures may well agree.
        return Err(interp.stop_unknown(format!("the {what} carry holds unknown values")));
    }
    let (ti, ai) = leaf_avals(interp, init)?;
    let (to, ao) = leaf_avals(interp, out)?;
    if ti != to {
        let msg = format!(
            "{what} function carry input and carry output must have the same pytree structure, but they differ:\n\nThe input carry {} is a {} but the corresponding component of the carry output is a {}, so their Python types differ.\n\nRevise the function so that the carry output has the same pytree structure as the carry input.",
            names.base,
            tree_kind(&ti),
            tree_kind(&to)
        );
        return Err(interp.raise("TypeError", Code::ControlFlowSignature, msg));
    }
    let mut promoted = false;
    let mut new_leaves = Vec::new();
    let mut leaves = Vec::new();
    flatten(interp, init, "", &mut leaves)?;
    for (i, (a, b)) in ai.iter().zip(&ao).enumerate() {
        let (Some(a), Some(b)) = (a, b) else {
            new_leaves.push(leaves[i].1.clone());
            continue;
        };
        let path = &leaves[i].0;
        let label = if path.is_empty() && !names.always_component { names.base.clone() } else { format!("component {}{path}", names.base) };
        if a.shape != b.shape {
            let msg = format!(
                "{what} function carry input and carry output must have equal types, but they differ:\n\nThe input carry {label} has type {} but the corresponding output carry component has type {}, so the shapes do not match.\n\nRevise the function so that all output types match the corresponding input types.",
                a.long(),
                b.long()
            );
            return Err(interp.raise("TypeError", Code::ControlFlowSignature, msg));
        }
        if a.dtype != b.dtype {
            if a.weak {
                // A weak init is promoted to the body's dtype, strongly typed (as JAX does).
                promoted = true;
                new_leaves.push(Value::Array(Array::unknown(b.clone().weak(false), "promoted carry")));
                continue;
            }
            let msg = format!(
                "{what} function carry input and carry output must have equal types, but they differ:\n\nThe input carry {label} has type {} but the corresponding output carry component has type {}, so the dtypes do not match.\n\nRevise the function so that all output types match the corresponding input types.",
                a.long(),
                b.long()
            );
            return Err(interp.raise("TypeError", Code::ControlFlowSignature, msg));
        }
        if a.weak != b.weak && a.weak {
            promoted = true;
            new_leaves.push(Value::Array(Array::unknown(b.clone().weak(false), "promoted carry")));
            continue;
        }
        new_leaves.push(leaves[i].1.clone());
    }
    if promoted {
        return Ok(Some(unflatten(interp, &ti, &mut new_leaves.into_iter())?));
    }
    Ok(None)
}

fn abstract_copy(interp: &mut Interp, v: &Value) -> PyResult<Value> {
    // The carry is what JAX makes of the initial value: a NumPy float64 (`v_t[-1]` of a NumPy
    // array) is float32 without x64, as the body's arithmetic on it gives.
    let config = interp.jax.config;
    map_arrays(interp, v, &|a| Array::unknown(Aval { dtype: dtypes::canonicalize(a.aval.dtype, config), ..a.aval.clone() }, "loop carry"))
}

pub(super) fn scan(interp: &mut Interp, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    let f = args.first().cloned().unwrap_or(Value::None);
    let init = args.get(1).cloned().or_else(|| kw(kwargs, "init").cloned()).unwrap_or(Value::None);
    let xs = args.get(2).cloned().or_else(|| kw(kwargs, "xs").cloned()).unwrap_or(Value::None);
    let length = kw(kwargs, "length").and_then(crate::interp::ops::as_int).or_else(|| args.get(3).and_then(crate::interp::ops::as_int));
    let mut xl = Vec::new();
    flatten(interp, &xs, "", &mut xl)?;
    let mut lens = Vec::new();
    for (_, l) in &xl {
        if let Operand::Array(a) = operand(interp, l)? {
            match a.aval.shape.first() {
                Some(&n) => lens.push(n),
                None => {
                    return Err(interp.raise(
                        "ValueError",
                        Code::ControlFlowSignature,
                        "scan got value with no leading axis to scan over: ".to_string() + &a.aval.short(),
                    ))
                }
            }
        }
    }
    if let Some(first) = lens.first() {
        if lens.iter().any(|n| n != first) {
            let all = lens.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ");
            // The spec files mismatched `xs` leaves under pytrees that must match (TL112).
            return Err(interp.raise(
                "ValueError",
                Code::InvalidPytree,
                format!("scan got values with different leading axis sizes: {all}."),
            ));
        }
    }
    if let (Some(&n), Some(l)) = (lens.first(), length) {
        if l < 0 || n != l as usize {
            let all = lens.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ");
            return Err(interp.raise(
                "ValueError",
                Code::InvalidPytree,
                format!("scan got `length` argument of {l} which disagrees with leading axis sizes [{all}]."),
            ));
        }
    }
    let n = match (lens.first(), length) {
        (Some(&n), _) => n,
        (None, Some(l)) => l.max(0) as usize,
        // Unknown values to scan over, or a `length` tracelens does not know.
        (None, None) if xs.holds_unknown() || args.len() > 3 || kw(kwargs, "length").is_some() => {
            return Ok(Value::opaque("scan over unknown values"))
        }
        (None, None) => return Err(interp.value_error("scan got no values to scan over and `length` not provided.")),
    };
    let reverse =
        kw(kwargs, "reverse").is_some_and(|r| matches!(r, Value::Bool(true)) || crate::interp::ops::as_int(r).is_some_and(|i| i != 0));
    let names: Vec<String> = param_names(&f);
    let mut carry_in = abstract_copy(interp, &init)?;
    for _attempt in 0..2 {
        let x = slice_leading(interp, &xs)?;
        let out = trace_call(interp, &f, vec![carry_in.clone(), x], Vec::new(), TraceKind::ControlFlow("scan"), "scan")?;
        let parts = match &out {
            Value::Tuple(t) if t.len() == 2 => (**t).clone(),
            Value::Opaque(_) => return Ok(Value::opaque("scan with unknown outputs")),
            _ => return Err(interp.type_error("scan body output must be a pair, returning a tuple with exactly two elements")),
        };
        let carry_names =
            CarryNames { what: "scan body", base: names.first().cloned().unwrap_or_else(|| "carry".into()), always_component: false };
        match check_carry(interp, &carry_names, &carry_in, &parts[0])? {
            Some(promoted) => {
                carry_in = promoted;
                continue;
            }
            None => {
                let step = ScanStep { carry_in: &carry_in, init: &init, xs: &xs, length: n, reverse };
                if let Some(staged) = staged_scan(interp, &f, &step, &parts)? {
                    return Ok(staged);
                }
                let deps = array_leaves(interp, &[init.clone(), xs.clone()])?;
                let carry = map_abstract(interp, &parts[0], &deps, &|a| a.clone(), "scan")?;
                let ys = map_abstract(interp, &parts[1], &deps, &|a| a.stacked(n), "scan")?;
                let x = slice_leading(interp, &xs)?;
                if let Some(body) = cached_body(interp, &f, &[carry_in.clone(), x], "scan")? {
                    if let (Some(c), Some(x)) = (input_leaves(interp, &init)?, input_leaves(interp, &xs)?) {
                        let avals = array_avals(interp, &[&carry, &ys])?;
                        let at = Loop { site: interp.site(), label: "scan" };
                        if let Some(outs) = crate::jax::eval_control::scan(interp, &body, &c, &x, n, reverse, &avals, at)? {
                            let mut outs = outs.into_iter();
                            let carry = replace_array_leaves(interp, &carry, &mut outs)?;
                            let ys = replace_array_leaves(interp, &ys, &mut outs)?;
                            return Ok(Value::tuple(vec![carry, ys]));
                        }
                    }
                }
                return Ok(Value::tuple(vec![carry, ys]));
            }
        }
    }
    Ok(Value::opaque("scan"))
}

/// One call of a scan body: the carry it was traced with, the user's arguments, and the loop.
struct ScanStep<'a> {
    carry_in: &'a Value,
    init: &'a Value,
    xs: &'a Value,
    length: usize,
    reverse: bool,
}

/// `lax.scan` inside a trace: one `scan` equation over the cached body. `body_out` is what the
/// body returned, `(carry, y)`.
fn staged_scan(interp: &mut Interp, f: &Value, step: &ScanStep, body_out: &[Value]) -> PyResult<Option<Value>> {
    if interp.jax.trace_depth() == 0 {
        return Ok(None);
    }
    let x = slice_leading(interp, step.xs)?;
    let Some(body) = traced_body(interp, f, &[step.carry_in.clone(), x], "scan")? else { return Ok(None) };
    let carry_avals = array_avals(interp, &[&body_out[0]])?;
    let num_carry = carry_avals.len();
    let want: Vec<Aval> =
        invar_avals(&body).iter().enumerate().map(|(i, a)| if i < num_carry { a.clone() } else { a.stacked(step.length) }).collect();
    let Some(operands) = conform_operands(interp, &[step.init, step.xs], &want)? else { return Ok(None) };
    let mut out_avals = carry_avals;
    out_avals.extend(array_avals(interp, &[&body_out[1]])?.iter().map(|a| a.stacked(step.length)));
    let prim = Prim::Scan { length: step.length, reverse: step.reverse, num_carry };
    let mut outs = bind_control(interp, prim, None, &[body], operands)?.into_iter();
    let carry = replace_array_leaves(interp, &body_out[0], &mut outs)?;
    let ys = replace_array_leaves(interp, &body_out[1], &mut outs)?;
    Ok(Some(Value::tuple(vec![carry, ys])))
}

/// `lax.cond`/`switch` inside a trace: one `cond` equation. `branches` are in the equation's
/// order (`false_fun` first for `cond`), `template` is the first branch's output.
fn staged_cond(
    interp: &mut Interp,
    index: &Value,
    switch: bool,
    branches: &[Value],
    operands: &[Value],
    template: &Value,
) -> PyResult<Option<Value>> {
    if interp.jax.trace_depth() == 0 {
        return Ok(None);
    }
    let ops: Vec<Value> = operands.iter().map(|o| abstract_copy(interp, o)).collect::<PyResult<_>>()?;
    let mut bodies = Vec::with_capacity(branches.len());
    for b in branches {
        match traced_body(interp, b, &ops, "cond")? {
            Some(body) => bodies.push(body),
            None => return Ok(None),
        }
    }
    let Some(first) = bodies.first() else { return Ok(None) };
    let want = invar_avals(first);
    let Some(operands) = conform_operands(interp, &operands.iter().collect::<Vec<_>>(), &want)? else { return Ok(None) };
    let Operand::Array(index) = operand(interp, index)? else { return Ok(None) };
    // JAX turns the predicate into an int32 branch index; switch clamps it into range.
    let i32_scalar = |x: f64| Array::scalar(x, DType::I32, false);
    let index = if switch {
        let index = jnp::convert(interp, &index, DType::I32, false)?;
        let last = i32_scalar(bodies.len().saturating_sub(1) as f64);
        apply1(interp, Prim::Clamp, &[i32_scalar(0.0), index, last])?
    } else {
        let pred = if index.aval.dtype.is_bool() {
            index
        } else {
            let zero = Array::scalar(0.0, index.aval.dtype, index.aval.weak);
            apply1(interp, Prim::Compare(crate::jax::ir::CmpPrim::Ne), &[index, zero])?
        };
        jnp::convert(interp, &pred, DType::I32, false)?
    };
    let prim = Prim::Cond { branches: bodies.len() };
    let outs = bind_control(interp, prim, Some(index), &bodies, operands)?;
    Ok(Some(replace_array_leaves(interp, template, &mut outs.into_iter())?))
}

/// `lax.while_loop` inside a trace: one `while` equation over the cached cond and body.
fn staged_while(
    interp: &mut Interp,
    cond_fun: &Value,
    body_fun: &Value,
    carry: &Value,
    init: &Value,
    template: &Value,
) -> PyResult<Option<Value>> {
    if interp.jax.trace_depth() == 0 {
        return Ok(None);
    }
    let args = std::slice::from_ref(carry);
    let (Some(cond), Some(body)) = (traced_body(interp, cond_fun, args, "while_loop")?, traced_body(interp, body_fun, args, "while_loop")?)
    else {
        return Ok(None);
    };
    let Some(operands) = conform_operands(interp, &[init], &invar_avals(&body))? else { return Ok(None) };
    let outs = bind_control(interp, Prim::While, None, &[cond, body], operands)?;
    Ok(Some(replace_array_leaves(interp, template, &mut outs.into_iter())?))
}

/// `lax.fori_loop` inside a trace, as JAX stages it: with static bounds a `scan` over
/// `(i, carry)` of length `upper - lower`, otherwise a `while` over `(i, upper, carry)`.
fn staged_fori(interp: &mut Interp, args: &[Value], index: &Value, carry: &Value, template: &Value) -> PyResult<Option<Value>> {
    if interp.jax.trace_depth() == 0 {
        return Ok(None);
    }
    let Some(user) = traced_body(interp, &args[2], &[index.clone(), carry.clone()], "fori_loop")? else { return Ok(None) };
    let Some((_, i_aval)) = user.jaxpr.invars.first().cloned() else { return Ok(None) };
    let carry_want: Vec<Aval> = invar_avals(&user).into_iter().skip(1).collect();
    let Some(carry_ops) = conform_operands(interp, &[&args[3]], &carry_want)? else { return Ok(None) };
    let Some(lower) = conform_operands(interp, &args[0..1].iter().collect::<Vec<_>>(), std::slice::from_ref(&i_aval))? else {
        return Ok(None);
    };
    let carry_avals = array_avals(interp, &[template])?;
    let mut out_avals = vec![i_aval.clone()];
    let (prim, bodies, mut operands, skip) = match (&args[0], &args[1]) {
        (Value::Int(lo), Value::Int(hi)) => {
            let body = Body { jaxpr: Rc::new(crate::jax::ir::counting_body(&user.jaxpr, false)), consts: user.consts.clone() };
            let length = usize::try_from(hi.saturating_sub(*lo)).unwrap_or(0);
            (Prim::Scan { length, reverse: false, num_carry: 1 + carry_ops.len() }, vec![body], lower, 1)
        }
        _ => {
            let Some(upper) = conform_operands(interp, &args[1..2].iter().collect::<Vec<_>>(), std::slice::from_ref(&i_aval))? else {
                return Ok(None);
            };
            out_avals.push(i_aval.clone());
            let body = Body { jaxpr: Rc::new(crate::jax::ir::counting_body(&user.jaxpr, true)), consts: user.consts.clone() };
            let cond = Body { jaxpr: Rc::new(crate::jax::ir::counting_cond(&i_aval, &carry_want)), consts: Vec::new() };
            let mut ops = lower;
            ops.extend(upper);
            (Prim::While, vec![cond, body], ops, 2)
        }
    };
    operands.extend(carry_ops);
    out_avals.extend(carry_avals);
    let outs = bind_control(interp, prim, None, &bodies, operands)?;
    Ok(Some(replace_array_leaves(interp, template, &mut outs.into_iter().skip(skip).collect::<Vec<_>>().into_iter())?))
}

fn branch_outputs(interp: &mut Interp, kind: &str, branches: &[Value], operands: &[Value]) -> PyResult<Value> {
    let mut outs = Vec::new();
    for b in branches {
        let ops: Vec<Value> = operands.iter().map(|o| abstract_copy(interp, o)).collect::<PyResult<_>>()?;
        outs.push(trace_call(interp, b, ops, Vec::new(), TraceKind::ControlFlow("cond"), "cond")?);
    }
    let Some(first) = outs.first().cloned() else {
        return Ok(Value::None);
    };
    if outs.iter().any(Value::holds_unknown) {
        // An unknown part may stand for any subtree, so the branches may well agree: nothing
        // is compared, and a branch whose output is all known gives the structure.
        return match outs.iter().find(|o| !o.holds_unknown()) {
            Some(known) => Ok(known.clone()),
            None => Err(interp.stop_unknown(format!("every {kind} branch output holds unknown values"))),
        };
    }
    let (t0, a0) = leaf_avals(interp, &first)?;
    let label = |i: usize| -> String {
        if kind == "cond" {
            if i == 0 {
                "true_fun".into()
            } else {
                "false_fun".into()
            }
        } else {
            format!("branch {i}")
        }
    };
    let where_ = |interp: &Interp, b: &Value| fun_def_site(b).map(|s| interp.describe_site(s)).unwrap_or_default();
    // JAX compares in branch order; for cond the branches are (false_fun, true_fun) internally
    // but the message names true_fun first.
    for (i, o) in outs.iter().enumerate().skip(1) {
        let (ti, ai) = leaf_avals(interp, o)?;
        let (l0, li) = (label(0), label(i));
        let head = if kind == "cond" {
            format!(
                "true_fun is {} at {}\nfalse_fun is {} at {}",
                fun_name(&branches[0]),
                where_(interp, &branches[0]),
                fun_name(&branches[i]),
                where_(interp, &branches[i])
            )
        } else {
            format!(
                "branch 0 is {} at {}\nbranch{i} is {} at {}",
                fun_name(&branches[0]),
                where_(interp, &branches[0]),
                fun_name(&branches[i]),
                where_(interp, &branches[i])
            )
        };
        if ti != t0 {
            let msg = format!(
                "{kind} branch outputs must have the same pytree structure, but they differ:\n\n{head}\n\n{l0} output is a {} but {li} output is a {}, so their Python types differ.\n\nRevise {l0} and/or {li} so that they have the same pytree structure.",
                tree_desc(&t0),
                tree_desc(&ti)
            );
            return Err(interp.raise("TypeError", Code::ControlFlowSignature, msg));
        }
        for (a, b) in a0.iter().zip(&ai) {
            if let (Some(a), Some(b)) = (a, b) {
                let what = if a.shape != b.shape {
                    "shapes"
                } else if a.dtype != b.dtype {
                    "dtypes"
                } else {
                    continue;
                };
                let li2 = if kind == "switch" { format!("branch{i}") } else { li.clone() };
                let msg = format!(
                    "{kind} branches must have equal output types but they differ.\n\n{head}\n\nThe output of {l0} has type {} but the corresponding output of {li2} has type {}, so the {what} do not match.\n\nRevise {l0} and/or {li2} so that all output types match.",
                    a.long(),
                    b.long()
                );
                return Err(interp.raise("TypeError", Code::ControlFlowSignature, msg));
            }
        }
    }
    Ok(first)
}

/// The result of `cond`/`switch` once the branches are checked: one `cond` equation inside a
/// trace, the taken branch computed in values mode outside.
fn cond_result(
    interp: &mut Interp,
    index: &Value,
    switch: bool,
    branches: &[Value],
    operands: &[Value],
    template: Value,
) -> PyResult<Value> {
    // lax.cond(pred, true_fun, false_fun): index 0 is false_fun.
    let ordered: Vec<Value> = if switch { branches.to_vec() } else { branches.iter().rev().cloned().collect() };
    if let Some(staged) = staged_cond(interp, index, switch, &ordered, operands, &template)? {
        return Ok(staged);
    }
    let deps = array_leaves(interp, operands)?;
    map_abstract(interp, &template, &deps, &|a| a.clone(), "cond")
}

fn check_pred(interp: &mut Interp, pred: &Value, what: &str) -> PyResult<()> {
    if let Value::Array(p) = pred {
        if p.aval.ndim() != 0 {
            let shown = match crate::jax::eval::force(p, 64) {
                Some(d) => format!(
                    "[{}]",
                    d.iter()
                        .map(|&x| if p.aval.dtype.is_bool() {
                            if x != 0.0 {
                                " True".to_string()
                            } else {
                                "False".to_string()
                            }
                        } else {
                            format!("{x}")
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                None => format!("JitTracer({})", p.aval.long_weak()),
            };
            return Err(interp.raise(
                "TypeError",
                Code::ControlFlowSignature,
                format!("{what} must be a scalar, got {shown} of shape {}.", p.aval.shape_tuple()),
            ));
        }
    }
    Ok(())
}

pub(super) fn cond(interp: &mut Interp, args: &[Value]) -> PyResult<Value> {
    if args.len() < 3 {
        return Ok(Value::opaque("lax.cond"));
    }
    check_pred(interp, &args[0], "Pred")?;
    let template = branch_outputs(interp, "cond", &[args[1].clone(), args[2].clone()], &args[3..])?;
    let result = cond_result(interp, &args[0], false, &args[1..3], &args[3..], template)?;
    // lax.cond(pred, true_fun, false_fun, *operands): true picks the first function.
    let taken = |p: f64| if p != 0.0 { 1 } else { 2 };
    taken_branch(interp, &args[0], &|p| taken(p), args, &args[3..], result)
}

/// Values mode: the outputs of the branch a concrete predicate or index picks, computed.
fn taken_branch(
    interp: &mut Interp,
    pred: &Value,
    pick: &dyn Fn(f64) -> usize,
    branches: &[Value],
    operands: &[Value],
    result: Value,
) -> PyResult<Value> {
    if interp.values.is_none() || interp.jax.trace_depth() > 0 {
        return Ok(result);
    }
    let p = match pred {
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Int(i) => *i as f64,
        Value::Array(a) => match crate::jax::eval::force(a, 1).and_then(|d| d.iter().next().copied()) {
            Some(x) => x,
            None => return Ok(result),
        },
        _ => return Ok(result),
    };
    let Some(branch) = branches.get(pick(p)).cloned() else { return Ok(result) };
    let ops: Vec<Value> = operands.iter().map(|o| abstract_copy(interp, o)).collect::<PyResult<_>>()?;
    let Some(body) = cached_body(interp, &branch, &ops, "cond")? else { return Ok(result) };
    let mut leaves = Vec::new();
    for o in operands {
        match input_leaves(interp, o)? {
            Some(l) => leaves.extend(l),
            None => return Ok(result),
        }
    }
    let avals = array_avals(interp, &[&result])?;
    match crate::jax::eval_control::branch(interp, &body, &leaves, &avals, "cond")? {
        Some(outs) => replace_array_leaves(interp, &result, &mut outs.into_iter()),
        None => Ok(result),
    }
}

pub(super) fn switch(interp: &mut Interp, args: &[Value]) -> PyResult<Value> {
    if args.len() < 2 {
        return Ok(Value::opaque("lax.switch"));
    }
    check_pred(interp, &args[0], "Branch index")?;
    let branches = interp.iterate(&args[1])?;
    let template = branch_outputs(interp, "switch", &branches, &args[2..])?;
    let result = cond_result(interp, &args[0], true, &branches, &args[2..], template)?;
    let last = branches.len().saturating_sub(1) as f64;
    taken_branch(interp, &args[0], &|i| i.clamp(0.0, last) as usize, &branches, &args[2..], result)
}

pub(super) fn while_loop(interp: &mut Interp, args: &[Value]) -> PyResult<Value> {
    if args.len() < 3 {
        return Ok(Value::opaque("lax.while_loop"));
    }
    let (cond_fun, body_fun) = (args[0].clone(), args[1].clone());
    let mut carry = abstract_copy(interp, &args[2])?;
    let names = param_names(&body_fun);
    for _ in 0..2 {
        let c = trace_call(interp, &cond_fun, vec![carry.clone()], Vec::new(), TraceKind::ControlFlow("while"), "while_loop")?;
        if let Value::Array(p) = &c {
            if p.aval.ndim() != 0 || !p.aval.dtype.is_bool() {
                return Err(interp.raise(
                    "TypeError",
                    Code::ControlFlowSignature,
                    format!("cond_fun must return a boolean scalar, but got output type(s) [ShapedArray({})].", p.aval.long()),
                ));
            }
        }
        let out = trace_call(interp, &body_fun, vec![carry.clone()], Vec::new(), TraceKind::ControlFlow("while"), "while_loop")?;
        let carry_names =
            CarryNames { what: "while_loop body", base: names.first().cloned().unwrap_or_else(|| "carry".into()), always_component: false };
        match check_carry(interp, &carry_names, &carry, &out)? {
            Some(p) => carry = p,
            None => {
                if let Some(staged) = staged_while(interp, &cond_fun, &body_fun, &carry, &args[2], &out)? {
                    return Ok(staged);
                }
                let deps = array_leaves(interp, &args[2..3])?;
                let result = map_abstract(interp, &out, &deps, &|a| a.clone(), "while")?;
                let bodies = (
                    cached_body(interp, &cond_fun, std::slice::from_ref(&carry), "while_loop")?,
                    cached_body(interp, &body_fun, std::slice::from_ref(&carry), "while_loop")?,
                );
                if let ((Some(c), Some(b)), Some(init)) = (bodies, input_leaves(interp, &args[2])?) {
                    let avals = array_avals(interp, &[&result])?;
                    let at = Loop { site: interp.site(), label: "while_loop" };
                    if let Some(outs) = crate::jax::eval_control::while_loop(interp, &c, &b, &init, &avals, at)? {
                        return replace_array_leaves(interp, &result, &mut outs.into_iter());
                    }
                }
                return Ok(result);
            }
        }
    }
    Ok(carry)
}

pub(super) fn fori_loop(interp: &mut Interp, args: &[Value], _kwargs: &Kwargs) -> PyResult<Value> {
    if args.len() < 4 {
        return Ok(Value::opaque("lax.fori_loop"));
    }
    let body = args[2].clone();
    let mut carry = abstract_copy(interp, &args[3])?;
    let idx_dtype = dtypes::default_int(interp.jax.config);
    let static_bounds = !matches!(args[0], Value::Array(_)) && !matches!(args[1], Value::Array(_));
    for _ in 0..2 {
        let i = Value::Array(Array::unknown(Aval::scalar(idx_dtype).weak(!static_bounds), "loop index"));
        let out = trace_call(interp, &body, vec![i, carry.clone()], Vec::new(), TraceKind::ControlFlow("scan"), "fori_loop")?;
        // fori_loop runs as a scan (static bounds) or a while_loop over (i, carry): JAX names
        // the user's carry `loop_carry[1]`.
        let what = if static_bounds { "scan body" } else { "while_loop body" };
        let carry_names = CarryNames { what, base: "loop_carry[1]".into(), always_component: true };
        match check_carry(interp, &carry_names, &carry, &out)? {
            Some(p) => carry = p,
            None => {
                let i = Value::Array(Array::unknown(Aval::scalar(idx_dtype).weak(!static_bounds), "loop index"));
                if let Some(staged) = staged_fori(interp, args, &i, &carry, &out)? {
                    return Ok(staged);
                }
                let deps = array_leaves(interp, args)?;
                let result = map_abstract(interp, &out, &deps, &|a| a.clone(), "fori_loop")?;
                if let Some(body) = cached_body(interp, &body, &[i, carry.clone()], "fori_loop")? {
                    let bound = |interp: &mut Interp, v: &Value| -> Option<i64> {
                        match v {
                            Value::Int(i) => Some(*i),
                            Value::Array(a) => crate::jax::eval::force(a, 1).and_then(|d| d.iter().next().map(|x| *x as i64)),
                            _ => None,
                        }
                        .filter(|_| interp.values.is_some())
                    };
                    let (lower, upper) = (bound(interp, &args[0]), bound(interp, &args[1]));
                    if let (Some(lower), Some(upper), Some(c)) = (lower, upper, input_leaves(interp, &args[3])?) {
                        let avals = array_avals(interp, &[&result])?;
                        if let Some(outs) = crate::jax::eval_control::fori_loop(interp, &body, lower, upper, &c, &avals)? {
                            return replace_array_leaves(interp, &result, &mut outs.into_iter());
                        }
                    }
                }
                return Ok(result);
            }
        }
    }
    Ok(carry)
}
