//! `jax.vmap`: `in_axes`/`out_axes` and the batch size checked as JAX checks them, the
//! function traced on one example, and one `vmap` equation (inside a trace) or the examples
//! computed one by one (values mode).

use super::pytrees::{flatten, leaf_avals, unflatten};
use super::trace::{
    array_avals, array_leaves, bind_control, invar_avals, map_abstract, map_arrays, param_names, record_body, replace_array_leaves,
    trace_with_record, BODY_OUTPUT,
};
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::ad::AdError;
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::eval_control::Body;
use crate::jax::ir::{Atom, Eqn, Jaxpr, Prim, VarId};
use crate::jax::numpy::{self as jnp, operand, Operand};
use crate::jax::TraceKind;
use std::rc::Rc;

pub(super) fn vmap_call(
    interp: &mut Interp,
    fun: &Value,
    in_axes: &Value,
    out_axes: &Value,
    axis_size: Option<usize>,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> PyResult<Value> {
    let names = param_names(fun);
    // in_axes: an int/None for all arguments, or a tuple/list with one entry per argument.
    let per_arg: Vec<Value> = match in_axes {
        Value::Tuple(t) => {
            if t.len() != args.len() {
                return Err(interp.raise(
                    "ValueError",
                    Code::VmapAxes,
                    format!("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed to the function, but got len(in_axes)={}, len(args)={}", t.len(), args.len()),
                ));
            }
            (**t).clone()
        }
        Value::List(l) => {
            let l = l.borrow().clone();
            if l.len() != args.len() {
                return Err(interp.raise(
                    "ValueError",
                    Code::VmapAxes,
                    format!("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed to the function, but got len(in_axes)={}, len(args)={}", l.len(), args.len()),
                ));
            }
            l
        }
        other => vec![other.clone(); args.len()],
    };
    let mut sizes: Vec<(usize, String)> = Vec::new();
    let mut new_args = Vec::new();
    for (i, (a, ax)) in args.iter().zip(&per_arg).enumerate() {
        let argname = names.get(i).cloned().unwrap_or_else(|| format!("args[{i}]"));
        new_args.push(unbatch(interp, a, ax, &argname, &mut sizes)?);
    }
    let n = match (sizes.first(), axis_size) {
        (_, Some(n)) => n,
        (Some((n, _)), None) => *n,
        // An unknown argument may hold the mapped axis; keyword arguments are mapped over
        // their leading axis, which tracelens does not batch yet.
        (None, None) if args.iter().any(Value::holds_unknown) || !kwargs.is_empty() => {
            return Ok(Value::opaque("vmap of an unknown value"))
        }
        (None, None) => {
            return Err(interp.raise("ValueError", Code::VmapAxes, "vmap must have at least one non-None value in in_axes"));
        }
    };
    if sizes.iter().any(|(m, _)| *m != n) {
        return Err(interp.raise("ValueError", Code::VmapAxes, inconsistent_sizes(&sizes, axis_size)));
    }
    let deps = array_leaves(interp, &args)?;
    let (out, record, _) = trace_with_record(interp, fun, new_args, kwargs, TraceKind::Vmap, "vmap", None, String::new())?;
    let out_ax = crate::interp::ops::as_int(out_axes);
    // out_axes must name an axis of each batched output (rank + 1 dimensions).
    let (_, out_avals) = leaf_avals(interp, &out)?;
    if let Some(x) = out_ax {
        for a in out_avals.iter().flatten() {
            let nd = a.ndim() as i64 + 1;
            if x >= nd || x < -nd {
                return Err(interp.raise("ValueError", Code::VmapAxes, format!("axis {x} is out of bounds for array of dimension {nd}")));
            }
        }
    }
    let batched = |a: &Aval| {
        let mut s: Vec<usize> = a.shape.to_vec();
        let nd = s.len() as i64 + 1;
        let ax = match out_ax {
            Some(x) if x < 0 => (x + nd).max(0) as usize,
            Some(x) => (x as usize).min(s.len()),
            None => 0,
        };
        s.insert(ax, n);
        a.with_shape(&s).weak(a.weak)
    };
    let template = map_arrays(interp, &out, &|a| Array::unknown(batched(&a.aval), BODY_OUTPUT))?;
    let batch = VmapBatch { args: &args, per_arg: &per_arg, size: n, out_axis: out_ax };
    let by_rules = match by_rules(interp, record, &batch, &template)? {
        Some(batched) => Some(batched),
        None => staged_vmap(interp, record, &batch, &template)?,
    };
    let result = match by_rules {
        Some(batched) => batched,
        None => {
            let result = map_abstract(interp, &out, &deps, &batched, "vmap")?;
            vmap_values(interp, record, &batch, result)?
        }
    };
    pass_through(interp, record, &batch, result)
}

/// JAX hands back the caller's very array where the body returns its argument unchanged and
/// that argument is mapped over the output's axis: batching moves no axis, so
/// `jax.vmap(lambda x: x)(y) is y`. Equations that leave their input as it is (a custom rule's
/// marker, `stop_gradient`, a conversion or reshape to the same type) are looked through.
fn pass_through(interp: &mut Interp, record: usize, batch: &VmapBatch, result: Value) -> PyResult<Value> {
    let Some(body) = record_body(interp, record) else { return Ok(result) };
    let Some((inputs, out_axis)) = batch.leaves(interp)? else { return Ok(result) };
    let jaxpr = &body.jaxpr;
    if jaxpr.invars.len() != inputs.len() {
        return Ok(result);
    }
    let source = |atom: &Atom| -> Option<Rc<Array>> {
        let Atom::Var(mut var) = atom else { return None };
        for eqn in jaxpr.eqns.iter().rev() {
            let Some(k) = eqn.outputs.iter().position(|(v, _)| *v == var) else { continue };
            match unchanged_input(jaxpr, eqn, k) {
                Some(Atom::Var(v)) => var = *v,
                _ => return None,
            }
        }
        let j = jaxpr.invars.iter().position(|(v, _)| *v == var)?;
        let (leaf, axis) = &inputs[j];
        (*axis == Some(out_axis)).then(|| leaf.clone())
    };
    let sources: Vec<Option<Rc<Array>>> = jaxpr.outvars.iter().map(source).collect();
    if sources.iter().all(Option::is_none) || array_leaves(interp, std::slice::from_ref(&result))?.len() != sources.len() {
        return Ok(result);
    }
    let mut leaves = Vec::new();
    let tree = flatten(interp, &result, "", &mut leaves)?;
    let mut sources = sources.into_iter();
    let mapped: Vec<Value> = leaves
        .into_iter()
        .map(|(_, l)| match (&l, l.as_array().and_then(|_| sources.next())) {
            (_, Some(Some(same))) => Value::Array(same),
            _ => l,
        })
        .collect();
    unflatten(interp, &tree, &mut mapped.into_iter())
}

/// The input an equation's `k`-th output is, unchanged, if it is one.
fn unchanged_input<'a>(jaxpr: &Jaxpr, eqn: &'a Eqn, k: usize) -> Option<&'a Atom> {
    let first = eqn.inputs.first()?;
    let same_type = || {
        let Atom::Var(v) = first else { return false };
        let (_, out) = &eqn.outputs[k];
        aval_of(jaxpr, *v).is_some_and(|a| a == out)
    };
    // A custom rule's marker: its outputs are its last inputs.
    if matches!(eqn.prim, Prim::CustomJvpCall { .. } | Prim::CustomVjpCall { .. }) {
        return eqn.inputs.get(eqn.inputs.len().checked_sub(eqn.outputs.len())? + k);
    }
    let keeps_its_input = matches!(eqn.prim, Prim::StopGradient | Prim::ConvertElementType { .. } | Prim::Reshape { .. });
    (keeps_its_input && same_type()).then_some(first)
}

/// The type of a variable of a jaxpr.
fn aval_of(jaxpr: &Jaxpr, var: VarId) -> Option<&Aval> {
    let defined = jaxpr.invars.iter().chain(&jaxpr.constvars).chain(jaxpr.eqns.iter().flat_map(|e| &e.outputs));
    defined.into_iter().find(|(v, _)| *v == var).map(|(_, a)| a)
}

/// A `vmap` call: the arguments, their `in_axes` entries, the batch size and `out_axes`.
struct VmapBatch<'a> {
    args: &'a [Value],
    per_arg: &'a [Value],
    size: usize,
    out_axis: Option<i64>,
}

impl VmapBatch<'_> {
    /// Each input leaf with its mapped axis, and the output axis; `None` when an axis is not
    /// a plain integer or `None`.
    fn leaves(&self, interp: &mut Interp) -> PyResult<Option<(Vec<(Rc<Array>, Option<usize>)>, usize)>> {
        let Some(out_axis) = self.out_axis.and_then(|x| usize::try_from(x).ok()) else { return Ok(None) };
        Ok(self.inputs(interp)?.map(|inputs| (inputs, out_axis)))
    }

    /// Each input leaf with its mapped axis; `None` when an axis is not a plain integer or
    /// `None`.
    fn inputs(&self, interp: &mut Interp) -> PyResult<Option<Vec<(Rc<Array>, Option<usize>)>>> {
        let mut inputs = Vec::new();
        for (a, ax) in self.args.iter().zip(self.per_arg) {
            let axis = match ax {
                Value::None => None,
                Value::Int(i) => match a.as_array() {
                    Some(arr) if *i < 0 => Some((*i + arr.aval.ndim() as i64).max(0) as usize),
                    _ => Some(*i as usize),
                },
                _ => return Ok(None),
            };
            // The body was traced with the array leaves as its inputs (`Inputs::arrays_only`):
            // a Python number among the arguments is a constant in it.
            let mut leaves = Vec::new();
            flatten(interp, a, "", &mut leaves)?;
            inputs.extend(leaves.into_iter().filter_map(|(_, l)| match l {
                Value::Array(x) => Some((x, axis)),
                _ => None,
            }));
        }
        Ok(Some(inputs))
    }
}

/// The batched inputs of the per-example body: each array leaf converted to the type the
/// body was traced with (weak-type promotion), with its batch dimension; `None` when one
/// does not fit.
fn batched_operands(interp: &mut Interp, body: &Body, batch: &VmapBatch) -> PyResult<Option<Vec<(Rc<Array>, Option<usize>)>>> {
    let Some(inputs) = batch.inputs(interp)? else { return Ok(None) };
    let want = invar_avals(body);
    if want.len() != inputs.len() {
        return Ok(None);
    }
    let mut operands = Vec::with_capacity(inputs.len());
    for ((leaf, axis), w) in inputs.iter().zip(&want) {
        let mut shape = w.shape.to_vec();
        if let Some(ax) = axis {
            if *ax > shape.len() {
                return Ok(None);
            }
            shape.insert(*ax, batch.size);
        }
        if leaf.aval.shape.as_slice() != shape.as_slice() {
            return Ok(None);
        }
        operands.push((jnp::convert(interp, leaf, w.dtype, w.weak)?, *axis));
    }
    Ok(Some(operands))
}

/// `vmap` by batching rules (`batch.rs`), inside a trace or in values mode, when every
/// equation of the per-example body that sees a mapped operand has one: the batched
/// equations JAX's `vmap` binds (`make_jaxpr(vmap(f))`), and values computed in one pass.
fn by_rules(interp: &mut Interp, record: usize, batch: &VmapBatch, template: &Value) -> PyResult<Option<Value>> {
    if interp.jax.trace_depth() == 0 && interp.values.is_none() {
        return Ok(None);
    }
    let Some(body) = record_body(interp, record) else { return Ok(None) };
    let Some(out_axis) = batch.out_axis else { return Ok(None) };
    // Decided before any operand is converted, so that the per-example path binds nothing twice.
    let Some(inputs) = batch.inputs(interp)? else { return Ok(None) };
    let mapped: Vec<bool> = inputs.iter().map(|(_, d)| d.is_some()).collect();
    if !super::batch::batchable(&body.jaxpr, &mapped) {
        return Ok(None);
    }
    let Some(operands) = batched_operands(interp, &body, batch)? else { return Ok(None) };
    let outs = match batched_outputs(interp, &body, &operands, out_axis, batch.size) {
        Ok(outs) => outs,
        Err(AdError::Raise(flow)) => return Err(flow),
        Err(AdError::NoRule(why)) => {
            if interp.jax.check_rules {
                interp.jax.rule_problems.push(format!("vmap: a batching rule failed: {why}"));
            }
            return Ok(None);
        }
    };
    // The rules' avals, checked against the per-example trace's with the mapped axis added.
    let want = array_avals(interp, &[template])?;
    let got: Vec<Aval> = outs.iter().map(|o| o.aval.clone()).collect();
    if got != want {
        if interp.jax.check_rules {
            let text = |v: &[Aval]| v.iter().map(Aval::short).collect::<Vec<_>>().join(", ");
            interp.jax.rule_problems.push(format!(
                "vmap: the batching rules give {} where the per-example trace gives {}",
                text(&got),
                text(&want)
            ));
        }
        return Ok(None);
    }
    Ok(Some(replace_array_leaves(interp, template, &mut outs.into_iter())?))
}

fn batched_outputs(
    interp: &mut Interp,
    body: &Body,
    operands: &[(Rc<Array>, Option<usize>)],
    out_axis: i64,
    size: usize,
) -> crate::jax::ad::AdResult<Vec<Rc<Array>>> {
    let consts: Vec<(Rc<Array>, Option<usize>)> = body.consts.iter().map(|c| (c.clone(), None)).collect();
    let outs = super::batch::batch_jaxpr(interp, &body.jaxpr, &consts, operands, size)?;
    let mut moved = Vec::with_capacity(outs.len());
    for (x, d) in outs {
        // `out_axes` counts the batched output's axes (`vmap_call` has checked its range).
        let nd = (x.aval.ndim() + usize::from(d.is_none())) as i64;
        let dst = if out_axis < 0 { out_axis + nd } else { out_axis };
        let dst = usize::try_from(dst).map_err(|_| AdError::NoRule("out_axes out of range".into()))?;
        moved.push(crate::jax::prims::batching::matchaxis(interp, &x, d, dst, size)?);
    }
    Ok(moved)
}

/// A `vmap` inside another trace (`jit`, or an outer `vmap`): one `vmap` equation over the
/// traced per-example body, which values mode runs example by example.
fn staged_vmap(interp: &mut Interp, record: usize, batch: &VmapBatch, template: &Value) -> PyResult<Option<Value>> {
    if interp.jax.trace_depth() == 0 {
        return Ok(None);
    }
    let Some(body) = record_body(interp, record) else { return Ok(None) };
    let Some(out_axes) = batch.out_axis.and_then(|x| usize::try_from(x).ok()) else { return Ok(None) };
    let Some(inputs) = batched_operands(interp, &body, batch)? else { return Ok(None) };
    let in_axes = inputs.iter().map(|(_, ax)| *ax).collect();
    let operands = inputs.into_iter().map(|(x, _)| x).collect();
    let prim = Prim::Vmap { axis_size: batch.size, in_axes, out_axes };
    let outs = bind_control(interp, prim, None, &[body], operands)?;
    Ok(Some(replace_array_leaves(interp, template, &mut outs.into_iter())?))
}

/// Values mode: a `vmap` outside any trace with an integer or `None` axis per argument and a
/// non-negative integer `out_axes`, computed example by example.
fn vmap_values(interp: &mut Interp, record: usize, batch: &VmapBatch, result: Value) -> PyResult<Value> {
    if interp.values.is_none() || interp.jax.trace_depth() > 0 {
        return Ok(result);
    }
    let Some(body) = record_body(interp, record) else { return Ok(result) };
    let Some((inputs, out_axis)) = batch.leaves(interp)? else { return Ok(result) };
    let avals = array_avals(interp, &[&result])?;
    match crate::jax::eval_control::vmap(interp, &body, &inputs, batch.size, out_axis, &avals, "vmap")? {
        Some(outs) => replace_array_leaves(interp, &result, &mut outs.into_iter()),
        None => Ok(result),
    }
}

/// Removes the mapped axis from the array leaves of one argument.
fn unbatch(interp: &mut Interp, a: &Value, ax: &Value, argname: &str, sizes: &mut Vec<(usize, String)>) -> PyResult<Value> {
    if ax.is_none() {
        return Ok(a.clone());
    }
    // A list or tuple of axes for a list or tuple: entry by entry, so that a `None` entry
    // (which flattens to nothing) still leaves its item unmapped, as JAX's prefix matching does.
    if let (Value::Tuple(_) | Value::List(_), Value::Tuple(_) | Value::List(_)) = (a, ax) {
        let (items, entries) = (interp.iterate(a)?, interp.iterate(ax)?);
        if items.len() == entries.len() {
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, entry)) in items.iter().zip(&entries).enumerate() {
                out.push(unbatch(interp, item, entry, &format!("{argname}[{i}]"), sizes)?);
            }
            return Ok(match a {
                Value::List(_) => interp.new_list(out),
                _ => Value::tuple(out),
            });
        }
    }
    if let (Value::Dict(_) | Value::Tuple(_) | Value::List(_), Value::Dict(_) | Value::Tuple(_) | Value::List(_)) = (a, ax) {
        let mut leaves = Vec::new();
        let tree = flatten(interp, a, argname, &mut leaves)?;
        let mut axes = Vec::new();
        flatten(interp, ax, "", &mut axes)?;
        if axes.len() != leaves.len() {
            return Ok(Value::opaque("vmap with in_axes pytree prefixes"));
        }
        let mut out = Vec::new();
        for ((path, leaf), (_, axv)) in leaves.iter().zip(&axes) {
            out.push(unbatch(interp, leaf, axv, path, sizes)?);
        }
        return unflatten(interp, &tree, &mut out.into_iter());
    }
    let Some(axis) = crate::interp::ops::as_int(ax) else {
        return Ok(a.clone());
    };
    let mut leaves = Vec::new();
    let tree = flatten(interp, a, argname, &mut leaves)?;
    let mut out = Vec::new();
    for (path, leaf) in leaves {
        let arr = match operand(interp, &leaf)? {
            Operand::Array(x) => x,
            Operand::Unknown => return Ok(Value::opaque("vmap of an unknown value")),
        };
        let nd = arr.aval.ndim() as i64;
        let real = if axis < 0 { axis + nd } else { axis };
        if real < 0 || real >= nd {
            let msg = format!(
                "vmap was requested to map its argument along axis {axis}, which implies that its rank should be at least {}, but is only {} (its shape is {})",
                if axis < 0 { -axis } else { axis + 1 },
                nd,
                arr.aval.shape_tuple()
            );
            return Err(interp.raise("ValueError", Code::VmapAxes, msg));
        }
        let r = real as usize;
        let n = arr.aval.shape[r];
        let path = if path.is_empty() { argname.to_string() } else { path };
        sizes.push((n, format!("axis {r} of argument {path} of type {}", arr.aval.long())));
        let mut s = arr.aval.shape.to_vec();
        s.remove(r);
        out.push(Value::Array(Array::unknown(arr.aval.with_shape(&s).weak(arr.aval.weak), "one example of a vmapped batch")));
    }
    unflatten(interp, &tree, &mut out.into_iter())
}

/// JAX's message for mapped axes of different sizes (`_mapped_axis_size`): the `axis_size`
/// argument first when there is one, then each size by how many axes have it (most first,
/// ties in argument order), with the first axis of that size as the example.
fn inconsistent_sizes(sizes: &[(usize, String)], axis_size: Option<usize>) -> String {
    let mut counts: Vec<(usize, usize, &str)> = Vec::new();
    for (m, d) in sizes {
        match counts.iter_mut().find(|c| c.0 == *m) {
            Some(c) => c.1 += 1,
            None => counts.push((*m, 1, d)),
        }
    }
    // Stable, as Python's `Counter.most_common`: equal counts keep their first appearance.
    counts.sort_by(|a, b| b.1.cmp(&a.1));
    let mut lines: Vec<String> = axis_size.map(|n| format!("  * the `axis_size` argument was {n}")).into_iter().collect();
    for (i, (size, count, example)) in counts.iter().enumerate() {
        lines.push(match (count, i) {
            (1, _) => format!("  * one axis had size {size}: {example}"),
            (_, 0) => format!("  * most axes ({count} of them) had size {size}, e.g. {example}"),
            _ => format!("  * some axes ({count} of them) had size {size}, e.g. {example}"),
        });
    }
    format!("vmap got inconsistent sizes for array axes to be mapped:\n{}", lines.join(";\n"))
}
