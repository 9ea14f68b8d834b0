//! Values mode: the values of `lax.scan`/`fori_loop`/`while_loop`/`cond` and `vmap`,
//! computed by running their traced bodies (jaxprs) on the CPU kernels — one iteration,
//! branch or example at a time, as JAX's semantics say. Called on concrete inputs outside
//! any trace (`transforms/`), and for the `scan`/`while`/`cond`/`vmap` equations of a traced
//! function when it runs on concrete inputs (`control_eqn`, through `eval_jaxpr.rs`).

use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};

use super::array::{Array, NdData};
use super::aval::Aval;
use super::eval_ints::NdInts;
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
    arrays.iter().map(|a| super::eval::force_held(a, interp.budgets.max_elements)).collect()
}

/// The data of a concrete array as the loops move it: held as f64, or exactly, for an
/// integer array holding a value from 2**53 on (`Lazy::ReadyInts`).
enum Held {
    F64(Rc<NdData>),
    Ints(Rc<NdInts>),
}

fn held(interp: &Interp, a: &Rc<Array>) -> Option<Held> {
    if interp.values.is_none() || a.is_tracer() {
        return None;
    }
    let max = interp.budgets.max_elements;
    match super::eval::force_held(a, max) {
        Some(d) => Some(Held::F64(d)),
        None if a.aval.dtype.is_integer() => super::eval::force_ints(a, max).map(Held::Ints),
        None => None,
    }
}

fn helds(interp: &Interp, arrays: &[Rc<Array>]) -> Option<Vec<Held>> {
    arrays.iter().map(|a| held(interp, a)).collect()
}

/// Runs `body` once on `inputs` (concrete arrays, retyped to the body's input avals); its
/// outputs, all computed, or `None` when one cannot be.
pub fn run_body(interp: &mut Interp, body: &Body, inputs: &[Rc<Array>], label: &str) -> PyResult<Option<Vec<Rc<Array>>>> {
    if inputs.len() != body.jaxpr.invars.len() {
        return Ok(None);
    }
    let mut ins = Vec::with_capacity(inputs.len());
    for ((_, aval), a) in body.jaxpr.invars.iter().zip(inputs) {
        match retype(interp, a, aval) {
            Some(a) => ins.push(a),
            None => return Ok(None),
        }
    }
    let outs = super::eval_jaxpr::instantiate_with(&body.jaxpr, &body.consts, &ins, &mut ValuesHooks { interp, label })?;
    numerics::raise_pending(interp)?;
    numerics::tick(interp)?;
    let Some(outs) = outs else { return Ok(None) };
    Ok(helds(interp, &outs).map(|_| outs))
}

/// `a` with the aval `aval` (its data rounded to that dtype), keeping where a NaN/Inf in it
/// came from; `a` itself when it has that aval already.
fn retype(interp: &mut Interp, a: &Rc<Array>, aval: &Aval) -> Option<Rc<Array>> {
    if a.aval == *aval && !a.is_tracer() {
        return Some(a.clone());
    }
    if a.aval.dtype.is_key() != aval.dtype.is_key() {
        return None;
    }
    match held(interp, a)? {
        Held::F64(d) => {
            let mut d = (*d).clone();
            d.mapv_inplace(|x| super::eval::round_to(x, aval.dtype));
            Some(derived(interp, aval.clone(), d, std::slice::from_ref(a)))
        }
        Held::Ints(d) if aval.dtype.is_integer() => {
            let d = d.mapv(|v| super::eval_ints::wrap(v, aval.dtype));
            Some(derived_ints(interp, aval.clone(), d, std::slice::from_ref(a)))
        }
        Held::Ints(_) => None,
    }
}

/// A new concrete array made of the data of `from` (a slice, a stacked row, a carry).
fn derived(interp: &mut Interp, aval: Aval, data: NdData, from: &[Rc<Array>]) -> Rc<Array> {
    let out = Array::ready(aval, data);
    numerics::inherit(interp, &out, from);
    out
}

/// [`derived`] for exactly held integers.
fn derived_ints(interp: &mut Interp, aval: Aval, data: NdInts, from: &[Rc<Array>]) -> Rc<Array> {
    let out = Array::ready_ints(aval, data);
    numerics::inherit(interp, &out, from);
    out
}

/// `outs` retyped to `out_avals`; `None` when the counts differ.
fn retype_all(interp: &mut Interp, outs: &[Rc<Array>], out_avals: &[Aval]) -> Option<Vec<Rc<Array>>> {
    if outs.len() != out_avals.len() {
        return None;
    }
    outs.iter().zip(out_avals).map(|(o, a)| retype(interp, o, a)).collect()
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

/// Slice `i` of `a` along `axis`, as a concrete array.
fn slice(interp: &mut Interp, a: &Rc<Array>, d: &Held, axis: usize, i: usize) -> Option<Rc<Array>> {
    let ndim = match d {
        Held::F64(d) => d.ndim(),
        Held::Ints(d) => d.ndim(),
    };
    if axis >= ndim || i >= a.aval.shape.get(axis).copied().unwrap_or(0) {
        return None;
    }
    let mut shape = a.aval.shape.to_vec();
    shape.remove(axis);
    let aval = a.aval.with_shape(&shape).weak(a.aval.weak);
    Some(match d {
        Held::F64(d) => derived(interp, aval, d.index_axis(Axis(axis), i).to_owned(), std::slice::from_ref(a)),
        Held::Ints(d) => derived_ints(interp, aval, d.index_axis(Axis(axis), i).to_owned(), std::slice::from_ref(a)),
    })
}

/// `rows` stacked along `axis` into an array of aval `aval`.
fn stack(interp: &mut Interp, rows: &[Rc<Array>], axis: usize, aval: &Aval) -> Option<Rc<Array>> {
    let held = helds(interp, rows)?;
    if held.iter().any(|h| matches!(h, Held::Ints(_))) {
        // A row past 2**53: the whole stack is held exactly.
        let data: Vec<NdInts> = held
            .iter()
            .map(|h| match h {
                Held::F64(d) => super::eval_ints::from_f64(d),
                Held::Ints(d) => (**d).clone(),
            })
            .collect();
        let views: Vec<_> = data.iter().map(|r| r.view()).collect();
        let stacked = ndarray::stack(Axis(axis), &views).ok()?;
        if stacked.shape() != aval.shape.as_slice() {
            return None;
        }
        return Some(derived_ints(interp, aval.clone(), stacked, rows));
    }
    let data: Vec<Rc<NdData>> = held
        .into_iter()
        .filter_map(|h| match h {
            Held::F64(d) => Some(d),
            Held::Ints(_) => None,
        })
        .collect();
    let stacked = if data.is_empty() {
        ArrayD::zeros(IxDyn(&super::eval::held_shape(aval)))
    } else {
        let views: Vec<_> = data.iter().map(|r| r.view()).collect();
        ndarray::stack(Axis(axis), &views).ok()?
    };
    if stacked.shape() != super::eval::held_shape(aval).as_slice() {
        return None;
    }
    Some(derived(interp, aval.clone(), stacked, rows))
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
    let Some(xs_data) = helds(interp, xs) else { return Ok(None) };
    let num_carry = carry.len();
    if out_avals.len() < num_carry {
        return Ok(None);
    }
    let mut c = carry.to_vec();
    let mut ys: Vec<Vec<Rc<Array>>> = vec![Vec::new(); out_avals.len() - num_carry];
    let done = in_loop(interp, at.site, |interp| {
        for step in 0..length {
            numerics::loop_next(interp);
            let i = if reverse { length - 1 - step } else { step };
            let mut ins = c.clone();
            for (x, d) in xs.iter().zip(&xs_data) {
                match slice(interp, x, d, 0, i) {
                    Some(s) => ins.push(s),
                    None => return Ok(false),
                }
            }
            let Some(outs) = run_body(interp, body, &ins, at.label)? else { return Ok(false) };
            if outs.len() != out_avals.len() {
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
    let Some(mut result) = retype_all(interp, &c, &out_avals[..num_carry]) else { return Ok(None) };
    for (y, aval) in ys.iter_mut().zip(&out_avals[num_carry..]) {
        if reverse {
            y.reverse();
        }
        match stack(interp, y, 0, aval) {
            Some(s) => result.push(s),
            None => return Ok(None),
        }
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
    let Some((_, i_aval)) = body.jaxpr.invars.first().cloned() else { return Ok(None) };
    let mut c = carry.to_vec();
    let site = interp.site();
    let done = in_loop(interp, site, |interp| {
        for i in lower..upper {
            numerics::loop_next(interp);
            let mut ins = vec![Array::scalar(i as f64, i_aval.dtype, i_aval.weak)];
            ins.extend(c.iter().cloned());
            let Some(outs) = run_body(interp, body, &ins, "fori_loop")? else { return Ok(false) };
            if outs.len() != c.len() {
                return Ok(false);
            }
            c = outs;
        }
        Ok(true)
    })?;
    Ok(if done { retype_all(interp, &c, out_avals) } else { None })
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
    let mut c = carry.to_vec();
    // An endless loop ends on the step or time budget (`run_body` ticks), as TL900.
    let done = in_loop(interp, at.site, |interp| loop {
        numerics::loop_next(interp);
        let Some(p) = run_body(interp, cond, &c, at.label)? else { return Ok(false) };
        let Some(pred) = p.first().and_then(|p| datas(interp, std::slice::from_ref(p))).and_then(|mut d| d.pop()) else {
            return Ok(false);
        };
        if !pred.iter().any(|&x| x != 0.0) {
            return Ok(true);
        }
        let Some(outs) = run_body(interp, body, &c, at.label)? else { return Ok(false) };
        if outs.len() != c.len() {
            return Ok(false);
        }
        if pred.ndim() == 0 {
            c = outs;
            continue;
        }
        // A batched predicate (`vmap` of a `while_loop`): an example that is done keeps its carry.
        let mut next = Vec::with_capacity(c.len());
        for (old, new) in c.iter().zip(&outs) {
            match keep_done(interp, &pred, old, new) {
                Some(x) => next.push(x),
                None => return Ok(false),
            }
        }
        c = next;
    })?;
    Ok(if done { retype_all(interp, &c, out_avals) } else { None })
}

/// `new` where the batched predicate `pred` holds and `old` where it does not, `pred`'s
/// shape leading the carry's (JAX's `_pred_bcast_select_hlo` in its `while` lowering).
fn keep_done(interp: &mut Interp, pred: &NdData, old: &Rc<Array>, new: &Rc<Array>) -> Option<Rc<Array>> {
    let shape = super::eval::held_shape(&new.aval);
    if old.aval.shape != new.aval.shape || !shape.starts_with(pred.shape()) {
        return None;
    }
    let rows: Vec<bool> = pred.iter().map(|&x| x != 0.0).collect();
    let width = shape[pred.ndim()..].iter().product::<usize>();
    let pick = |i: usize| rows[i / width.max(1)];
    let parents = [old.clone(), new.clone()];
    Some(match (held(interp, old)?, held(interp, new)?) {
        (Held::F64(a), Held::F64(b)) => {
            let data = a.iter().zip(b.iter()).enumerate().map(|(i, (&a, &b))| if pick(i) { b } else { a }).collect();
            derived(interp, new.aval.clone(), ArrayD::from_shape_vec(IxDyn(&shape), data).ok()?, &parents)
        }
        (a, b) => {
            let ints = |h: Held| match h {
                Held::F64(d) => super::eval_ints::from_f64(&d),
                Held::Ints(d) => (*d).clone(),
            };
            let (a, b) = (ints(a), ints(b));
            let data = a.iter().zip(b.iter()).enumerate().map(|(i, (&a, &b))| if pick(i) { b } else { a }).collect();
            derived_ints(interp, new.aval.clone(), ndarray::Array::from_shape_vec(IxDyn(&shape), data).ok()?, &parents)
        }
    })
}

/// One branch of `lax.cond`/`switch` run on the operands.
pub fn branch(
    interp: &mut Interp,
    body: &Body,
    operands: &[Rc<Array>],
    out_avals: &[Aval],
    label: &str,
) -> PyResult<Option<Vec<Rc<Array>>>> {
    let Some(outs) = run_body(interp, body, operands, label)? else { return Ok(None) };
    Ok(retype_all(interp, &outs, out_avals))
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
    let Some(ds) = helds(interp, &arrays) else { return Ok(None) };
    let mut per_output: Vec<Vec<Rc<Array>>> = vec![Vec::new(); out_avals.len()];
    for i in 0..size {
        let mut ins = Vec::with_capacity(ds.len());
        for (d, (a, axis)) in ds.iter().zip(inputs) {
            match axis {
                Some(ax) => match slice(interp, a, d, *ax, i) {
                    Some(s) => ins.push(s),
                    None => return Ok(None),
                },
                None => ins.push(a.clone()),
            }
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
        match stack(interp, rows, out_axis, aval) {
            Some(s) => result.push(s),
            None => return Ok(None),
        }
    }
    Ok(Some(result))
}
