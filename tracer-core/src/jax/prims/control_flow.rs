//! Abstract evaluation of the equations with bodies (`pjit`, `checkpoint`, `scan`, `cond`,
//! `while`, `vmap`) and of the `custom_jvp_call`/`custom_vjp_call` markers: the outputs are
//! what the bodies return (stacked for `scan` and `vmap`), or the marker's last operands.

use std::rc::Rc;

use super::{arg, type_error, Avals, RuleError, RuleResult};
use crate::jax::aval::Aval;
use crate::jax::custom_rules::CustomCall;
use crate::jax::ir::{atom_aval, Jaxpr, Prim};

fn outs(body: &Jaxpr) -> Vec<Aval> {
    body.outvars.iter().map(|o| atom_aval(o, body)).collect()
}

fn body<'a>(prim: &Prim, bodies: &'a [Rc<Jaxpr>]) -> Result<&'a Jaxpr, RuleError> {
    bodies.first().map(|b| &**b).ok_or_else(|| type_error(format!("{} has no body", prim.name())))
}

/// `pjit` and `checkpoint`: their body's outputs. A call replayed from the jit cache without
/// its jaxpr declares the outputs the cache remembers.
pub fn call(bodies: &[Rc<Jaxpr>]) -> RuleResult {
    match bodies.first() {
        Some(b) => Ok(outs(b).into()),
        None => Err(RuleError::Declared("a call without its body has the outputs the jit cache remembers")),
    }
}

/// `scan(*consts, *carry, *xs)`: the carry, then each per-step output stacked `length` times.
pub fn scan(prim: &Prim, ins: &[&Aval], bodies: &[Rc<Jaxpr>], length: usize, num_carry: usize) -> RuleResult {
    let b = body(prim, bodies)?;
    let out = outs(b);
    if out.len() < num_carry || ins.len() < b.constvars.len() + num_carry {
        return Err(type_error("scan body returns fewer values than its carry"));
    }
    let mut avals: Avals = out[..num_carry].iter().cloned().collect();
    avals.extend(out[num_carry..].iter().map(|a| a.stacked(length)));
    Ok(avals)
}

/// `cond(index, *branch_consts, *operands)`: the first branch's outputs.
pub fn cond(prim: &Prim, bodies: &[Rc<Jaxpr>]) -> RuleResult {
    Ok(outs(body(prim, bodies)?).into())
}

/// `while(*cond_consts, *body_consts, *carry)`: the carry.
pub fn while_loop(prim: &Prim, ins: &[&Aval], bodies: &[Rc<Jaxpr>]) -> RuleResult {
    let consts: usize = bodies.iter().map(|b| b.constvars.len()).sum();
    if bodies.len() != 2 || ins.len() < consts {
        return Err(type_error(format!("{} takes a cond and a body and their consts", prim.name())));
    }
    Ok(ins[consts..].iter().map(|a| (*a).clone()).collect())
}

/// `vmap(*consts, *args)`: the body's outputs, each with an axis of `axis_size` at `out_axes`.
pub fn vmap(prim: &Prim, bodies: &[Rc<Jaxpr>], axis_size: usize, out_axes: usize) -> RuleResult {
    Ok(outs(body(prim, bodies)?)
        .into_iter()
        .map(|a| {
            let mut s = a.shape.to_vec();
            s.insert(out_axes.min(s.len()), axis_size);
            a.with_shape(&s)
        })
        .collect())
}

/// A custom-rule marker: its operands after the arguments' leaves (the function's outputs).
pub fn custom_call(prim: &Prim, ins: &[&Aval], call: &CustomCall) -> RuleResult {
    let n = call.arg_leaves();
    if n > ins.len() {
        arg(prim, ins, n)?;
    }
    Ok(ins[n.min(ins.len())..].iter().map(|a| (*a).clone()).collect())
}
