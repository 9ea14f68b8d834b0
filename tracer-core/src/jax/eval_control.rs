//! Values mode: the values of `lax.scan`/`fori_loop`/`while_loop`/`cond` and `vmap` called
//! on concrete inputs outside any trace, computed by running their traced bodies (jaxprs)
//! on the CPU kernels — one iteration, branch or example at a time, as JAX's semantics say.
//! Inside `jit` their results stay unknown (the jaxpr has no control-flow primitives yet).

use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};

use super::array::{Array, NdData};
use super::aval::Aval;
use super::ir::Jaxpr;
use super::numerics;
use crate::interp::{Interp, PyResult};

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
    let outs = super::eval_jaxpr::instantiate_with(&body.jaxpr, &body.consts, &ins, &mut |eqn, out, eqn_ins| {
        numerics::evaluated(interp, eqn, out, eqn_ins, label);
    });
    numerics::raise_pending(interp)?;
    numerics::tick(interp)?;
    let Some(outs) = outs else { return Ok(None) };
    Ok(datas(interp, &outs))
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

/// `lax.scan`: the final carry, then each `y` stacked on a new leading axis.
pub fn scan(
    interp: &mut Interp,
    body: &Body,
    carry: &[Rc<Array>],
    xs: &[Rc<Array>],
    length: usize,
    out_avals: &[Aval],
) -> PyResult<Option<Vec<Rc<Array>>>> {
    let (Some(mut c), Some(xs)) = (datas(interp, carry), datas(interp, xs)) else { return Ok(None) };
    let num_carry = c.len();
    let mut ys: Vec<Vec<Rc<NdData>>> = vec![Vec::new(); out_avals.len().saturating_sub(num_carry)];
    for i in 0..length {
        let mut ins = owned(&c);
        ins.extend(xs.iter().map(|x| x.index_axis(Axis(0), i).to_owned()));
        let Some(outs) = run_body(interp, body, &ins, "scan")? else { return Ok(None) };
        if outs.len() != out_avals.len() || outs.len() < num_carry {
            return Ok(None);
        }
        c = outs[..num_carry].to_vec();
        for (y, o) in ys.iter_mut().zip(&outs[num_carry..]) {
            y.push(o.clone());
        }
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
    for i in lower..upper {
        let mut ins = vec![ArrayD::from_elem(IxDyn(&[]), i as f64)];
        ins.extend(owned(&c));
        let Some(outs) = run_body(interp, body, &ins, "fori_loop")? else { return Ok(None) };
        if outs.len() != c.len() {
            return Ok(None);
        }
        c = outs;
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
) -> PyResult<Option<Vec<Rc<Array>>>> {
    let Some(mut c) = datas(interp, carry) else { return Ok(None) };
    loop {
        let Some(p) = run_body(interp, cond, &owned(&c), "while_loop")? else { return Ok(None) };
        match p.first().and_then(|p| p.iter().next().copied()) {
            Some(x) if x != 0.0 => {}
            Some(_) => break,
            None => return Ok(None),
        }
        let Some(outs) = run_body(interp, body, &owned(&c), "while_loop")? else { return Ok(None) };
        if outs.len() != c.len() {
            return Ok(None);
        }
        c = outs;
    }
    Ok(Some(c.iter().zip(out_avals).map(|(d, a)| Array::ready(a.clone(), (**d).clone())).collect()))
}

/// One branch of `lax.cond`/`switch` run on the operands.
pub fn branch(interp: &mut Interp, body: &Body, operands: &[Rc<Array>], out_avals: &[Aval]) -> PyResult<Option<Vec<Rc<Array>>>> {
    let Some(ops) = datas(interp, operands) else { return Ok(None) };
    let Some(outs) = run_body(interp, body, &owned(&ops), "cond")? else { return Ok(None) };
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
        let Some(outs) = run_body(interp, body, &ins, "vmap")? else { return Ok(None) };
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
