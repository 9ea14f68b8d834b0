//! Values mode: the values of `lax.scan`/`fori_loop`/`while_loop`/`cond` and `vmap`,
//! computed by running their traced bodies (jaxprs) on the CPU kernels — one iteration,
//! branch or example at a time, as JAX's semantics say. Called on concrete inputs outside
//! any trace (`api.rs`), and for the `scan`/`while`/`cond`/`vmap` equations of a traced
//! function when it runs on concrete inputs (`control_eqn`, through `eval_jaxpr.rs`).

use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};

use super::array::{Array, NdData};
use super::aval::Aval;
use super::eval_jaxpr::EqnHooks;
use super::ir::{Eqn, Jaxpr, Prim};
use super::numerics;
use crate::interp::{Interp, PyResult, Site};

/// A traced body and the concrete arrays it closed over.
pub struct Body {
    pub jaxpr: Rc<Jaxpr>,
    pub consts: Vec<Rc<Array>>,
}

/// The data of each concrete array, or `None` when one is a tracer or not computed.
pub fn datas(interp: &Interp, arrays: &[Rc<Array>]) -> Option<Vec<Rc<NdData>>> {
    if interp.values.is_none() || arrays.iter().any(|a| a.is_tracer()) {
        return None;
    }
    arrays.iter().map(|a| super::eval::force(a, interp.budgets.max_elements)).collect()
}

/// Runs `body` once on `inputs` (data, given the body's input avals); its outputs' data.
pub fn run_body(interp: &mut Interp, body: &Body, inputs: &[NdData], label: &str) -> PyResult<Option<Vec<Rc<NdData>>>> {
    if inputs.len() != body.jaxpr.invars.len() {
        return Ok(None);
    }
    let ins: Vec<Rc<Array>> = body
        .jaxpr
        .invars
        .iter()
        .zip(inputs)
        .map(|((_, aval), d)| {
            let mut d = d.clone();
            d.mapv_inplace(|x| super::eval::round_to(x, aval.dtype));
            Array::ready(aval.clone(), d)
        })
        .collect();
    let outs = super::eval_jaxpr::instantiate_with(&body.jaxpr, &body.consts, &ins, &mut ValuesHooks { interp, label })?;
    numerics::raise_pending(interp)?;
    numerics::tick(interp)?;
    let Some(outs) = outs else { return Ok(None) };
    Ok(datas(interp, &outs))
}

/// Values mode's `instantiate_with` hooks: each equation is computed in program order, at its
/// own line, and control-flow equations are run here. `label` names the traced function the
/// equations run in (`jit(step)`) for TL301.
pub struct ValuesHooks<'a, 'i> {
    pub interp: &'a mut Interp<'i>,
    pub label: &'a str,
}

impl EqnHooks for ValuesHooks<'_, '_> {
    fn evaluated(&mut self, eqn: &Eqn, out: Option<&Rc<Array>>, inputs: &[Rc<Array>]) {
        numerics::evaluated(self.interp, eqn, out, inputs, self.label);
    }
    fn control(&mut self, eqn: &Eqn, inputs: &[Rc<Array>]) -> PyResult<Option<Vec<Rc<Array>>>> {
        control_eqn(self.interp, eqn, inputs, self.label)
    }
}

/// The outputs of a `cond`/`while`/`scan`/`vmap` equation on concrete inputs (see `Prim` for
/// how its inputs are laid out), or `None` when they cannot be computed.
pub fn control_eqn(interp: &mut Interp, eqn: &Eqn, inputs: &[Rc<Array>], label: &str) -> PyResult<Option<Vec<Rc<Array>>>> {
    let out_avals: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
    let counts = super::ir::body_const_counts(eqn);
    let index_inputs = usize::from(matches!(eqn.prim, Prim::Cond { .. }));
    let total: usize = counts.iter().sum::<usize>() + index_inputs;
    if inputs.len() < total {
        return Ok(None);
    }
    // Each body with its own consts, in order, after the branch index of a cond.
    let mut bodies = Vec::with_capacity(eqn.bodies.len());
    let mut at = index_inputs;
    for (jaxpr, n) in eqn.bodies.iter().zip(&counts) {
        bodies.push(Body { jaxpr: jaxpr.clone(), consts: inputs[at..at + n].to_vec() });
        at += n;
    }
    let operands = &inputs[total..];
    let site = eqn.site;
    match (&eqn.prim, bodies.as_slice()) {
        (Prim::Cond { .. }, _) => {
            let Some(index) = datas(interp, &inputs[..1]).and_then(|d| d[0].iter().next().copied()) else { return Ok(None) };
            let k = (index.max(0.0) as usize).min(bodies.len().saturating_sub(1));
            match bodies.get(k) {
                Some(body) => branch(interp, body, operands, &out_avals, label),
                None => Ok(None),
            }
        }
        (Prim::While, [cond, body]) => while_loop(interp, cond, body, operands, &out_avals, Loop { site, label }),
        (Prim::Scan { length, reverse, num_carry }, [body]) => {
            let (carry, xs) = operands.split_at((*num_carry).min(operands.len()));
            scan(interp, body, carry, xs, *length, *reverse, &out_avals, Loop { site, label })
        }
        (Prim::Vmap { axis_size, in_axes, out_axes }, [body]) => {
            let ins: Vec<(Rc<Array>, Option<usize>)> = operands.iter().cloned().zip(in_axes.iter().copied()).collect();
            vmap(interp, body, &ins, *axis_size, *out_axes, &out_avals, label)
        }
        _ => Ok(None),
    }
}

/// Where a loop runs, for TL301's "the 3rd iteration of the loop at f.py:12", and the traced
/// function its body runs in.
#[derive(Clone, Copy)]
pub struct Loop<'a> {
    pub site: Option<Site>,
    pub label: &'a str,
}

/// Runs `f` as the iterations of a loop at `site`: values mode's loop stack names the iteration
/// in which a NaN appears (`f` calls `numerics::loop_next` before each iteration).
fn in_loop<T>(interp: &mut Interp, site: Option<Site>, f: impl FnOnce(&mut Interp) -> PyResult<T>) -> PyResult<T> {
    let Some(site) = site else { return f(interp) };
    numerics::loop_enter(interp, site);
    let result = f(interp);
    numerics::loop_exit(interp);
    result
}

fn owned(d: &[Rc<NdData>]) -> Vec<NdData> {
    d.iter().map(|x| (**x).clone()).collect()
}

fn stack(rows: &[Rc<NdData>], axis: usize, item_shape: &[usize]) -> Option<NdData> {
    if rows.is_empty() {
        let mut shape = item_shape.to_vec();
        shape.insert(axis.min(shape.len()), 0);
        return Some(ArrayD::zeros(IxDyn(&shape)));
    }
    let views: Vec<_> = rows.iter().map(|r| r.view()).collect();
    ndarray::stack(Axis(axis), &views).ok()
}

/// `lax.scan`: the final carry, then each `y` stacked on a new leading axis. With `reverse`
/// the body sees `xs` from the last slice to the first, and `ys` are stacked back in order.
#[allow(clippy::too_many_arguments)]
pub fn scan(
    interp: &mut Interp,
    body: &Body,
    carry: &[Rc<Array>],
    xs: &[Rc<Array>],
    length: usize,
    reverse: bool,
    out_avals: &[Aval],
    at: Loop,
) -> PyResult<Option<Vec<Rc<Array>>>> {
    let (Some(mut c), Some(xs)) = (datas(interp, carry), datas(interp, xs)) else { return Ok(None) };
    if xs.iter().any(|x| x.ndim() == 0 || x.len_of(Axis(0)) < length) {
        return Ok(None);
    }
    let num_carry = c.len();
    let mut ys: Vec<Vec<Rc<NdData>>> = vec![Vec::new(); out_avals.len().saturating_sub(num_carry)];
    let done = in_loop(interp, at.site, |interp| {
        for step in 0..length {
            numerics::loop_next(interp);
            let i = if reverse { length - 1 - step } else { step };
            let mut ins = owned(&c);
            ins.extend(xs.iter().map(|x| x.index_axis(Axis(0), i).to_owned()));
            let Some(outs) = run_body(interp, body, &ins, at.label)? else { return Ok(false) };
            if outs.len() != out_avals.len() || outs.len() < num_carry {
                return Ok(false);
            }
            c = outs[..num_carry].to_vec();
            for (y, o) in ys.iter_mut().zip(&outs[num_carry..]) {
                y.push(o.clone());
            }
        }
        Ok(true)
    })?;
    if !done {
        return Ok(None);
    }
    if reverse {
        ys.iter_mut().for_each(|y| y.reverse());
    }
    let mut result: Vec<Rc<Array>> = c.iter().zip(out_avals).map(|(d, a)| Array::ready(a.clone(), (**d).clone())).collect();
    for (y, aval) in ys.iter().zip(&out_avals[num_carry..]) {
        let Some(d) = stack(y, 0, &aval.shape[1.min(aval.shape.len())..]) else { return Ok(None) };
        result.push(Array::ready(aval.clone(), d));
    }
    Ok(Some(result))
}

/// `lax.fori_loop(lower, upper, body, init)`: the final carry.
pub fn fori_loop(
    interp: &mut Interp,
    body: &Body,
    lower: i64,
    upper: i64,
    carry: &[Rc<Array>],
    out_avals: &[Aval],
) -> PyResult<Option<Vec<Rc<Array>>>> {
    let Some(mut c) = datas(interp, carry) else { return Ok(None) };
    let done = in_loop(interp, interp.site(), |interp| {
        for i in lower..upper {
            numerics::loop_next(interp);
            let mut ins = vec![ArrayD::from_elem(IxDyn(&[]), i as f64)];
            ins.extend(owned(&c));
            let Some(outs) = run_body(interp, body, &ins, "fori_loop")? else { return Ok(false) };
            if outs.len() != c.len() {
                return Ok(false);
            }
            c = outs;
        }
        Ok(true)
    })?;
    if !done {
        return Ok(None);
    }
    Ok(Some(c.iter().zip(out_avals).map(|(d, a)| Array::ready(a.clone(), (**d).clone())).collect()))
}

/// `lax.while_loop(cond_fun, body_fun, init)`: the final carry.
pub fn while_loop(
    interp: &mut Interp,
    cond: &Body,
    body: &Body,
    carry: &[Rc<Array>],
    out_avals: &[Aval],
    at: Loop,
) -> PyResult<Option<Vec<Rc<Array>>>> {
    let Some(mut c) = datas(interp, carry) else { return Ok(None) };
    // An endless loop ends on the step or time budget (`run_body` ticks), as TL900.
    let done = in_loop(interp, at.site, |interp| loop {
        numerics::loop_next(interp);
        let Some(p) = run_body(interp, cond, &owned(&c), at.label)? else { return Ok(false) };
        match p.first().and_then(|p| p.iter().next().copied()) {
            Some(x) if x != 0.0 => {}
            Some(_) => return Ok(true),
            None => return Ok(false),
        }
        let Some(outs) = run_body(interp, body, &owned(&c), at.label)? else { return Ok(false) };
        if outs.len() != c.len() {
            return Ok(false);
        }
        c = outs;
    })?;
    if !done {
        return Ok(None);
    }
    Ok(Some(c.iter().zip(out_avals).map(|(d, a)| Array::ready(a.clone(), (**d).clone())).collect()))
}

/// One branch of `lax.cond`/`switch` run on the operands.
pub fn branch(
    interp: &mut Interp,
    body: &Body,
    operands: &[Rc<Array>],
    out_avals: &[Aval],
    label: &str,
) -> PyResult<Option<Vec<Rc<Array>>>> {
    let Some(ops) = datas(interp, operands) else { return Ok(None) };
    let Some(outs) = run_body(interp, body, &owned(&ops), label)? else { return Ok(None) };
    if outs.len() != out_avals.len() {
        return Ok(None);
    }
    Ok(Some(outs.iter().zip(out_avals).map(|(d, a)| Array::ready(a.clone(), (**d).clone())).collect()))
}

/// `vmap` with one integer or `None` axis per input leaf and one output axis: the body run
/// on each example, the results stacked along `out_axis`.
pub fn vmap(
    interp: &mut Interp,
    body: &Body,
    inputs: &[(Rc<Array>, Option<usize>)],
    size: usize,
    out_axis: usize,
    out_avals: &[Aval],
    label: &str,
) -> PyResult<Option<Vec<Rc<Array>>>> {
    let arrays: Vec<Rc<Array>> = inputs.iter().map(|(a, _)| a.clone()).collect();
    let Some(ds) = datas(interp, &arrays) else { return Ok(None) };
    let mut per_output: Vec<Vec<Rc<NdData>>> = vec![Vec::new(); out_avals.len()];
    for i in 0..size {
        let mut ins = Vec::with_capacity(ds.len());
        for (d, (_, axis)) in ds.iter().zip(inputs) {
            ins.push(match axis {
                Some(ax) if *ax < d.ndim() && i < d.len_of(Axis(*ax)) => d.index_axis(Axis(*ax), i).to_owned(),
                Some(_) => return Ok(None),
                None => (**d).clone(),
            });
        }
        let Some(outs) = run_body(interp, body, &ins, label)? else { return Ok(None) };
        if outs.len() != out_avals.len() {
            return Ok(None);
        }
        for (acc, o) in per_output.iter_mut().zip(outs) {
            acc.push(o);
        }
    }
    let mut result = Vec::with_capacity(out_avals.len());
    for (rows, aval) in per_output.iter().zip(out_avals) {
        let mut item_shape = aval.shape.to_vec();
        if out_axis < item_shape.len() {
            item_shape.remove(out_axis);
        }
        let Some(d) = stack(rows, out_axis, &item_shape) else { return Ok(None) };
        if d.shape() != aval.shape.as_slice() {
            return Ok(None);
        }
        result.push(Array::ready(aval.clone(), d));
    }
    Ok(Some(result))
}
