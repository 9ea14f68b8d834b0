//! A call of a traced `tf.function` graph: its outputs, computed from the graph on the call's
//! tensors when they are known, and the variables it reads and writes (`graph_variables.rs`):
//! their values now are extra inputs of the call, and their new values, extra outputs, are
//! stored back into them after it.

use std::rc::Rc;

use super::function::TfFunction;
use super::tensor;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::api::instantiate_outputs;
use crate::jax::apply_with_bodies;
use crate::jax::array::Array;
use crate::jax::ir::Prim;

/// A call served by entry `entry` of `f`, on the call's tensor leaves `tensors`.
pub fn run_entry(interp: &mut Interp, f: &Rc<TfFunction>, entry: usize, tensors: &[Rc<Array>]) -> PyResult<Value> {
    let Some(outputs) = f.entries.borrow()[entry].outputs.clone() else {
        return Ok(tensor::unknown_tensor(interp, "the result of a tf.function whose outputs tracelens does not know"));
    };
    let mut ins = outputs.consts.clone();
    ins.extend(tensors.iter().cloned());
    let mut jaxpr = outputs.jaxpr.clone();
    if let Some(variables) = &outputs.variables {
        ins.extend(variables.inputs(interp));
        jaxpr = variables.jaxpr.clone().unwrap_or(jaxpr);
    }
    let (consts, inputs) = ins.split_at(outputs.consts.len());
    super::graph_run::on_call(interp, &f.entries.borrow()[entry].failure, &jaxpr, consts, inputs)?;
    let bound = apply_with_bodies(interp, Prim::Pjit { name: f.name.clone() }, &ins, vec![jaxpr.clone()])?;
    let (consts, inputs) = ins.split_at(outputs.consts.len());
    let mut outs = instantiate_outputs(interp, &jaxpr, consts, inputs, bound, || format!("tf.function({})", f.name))?;
    if let Some(variables) = &outputs.variables {
        outs = variables.apply(interp, outs);
    }
    fill_template(interp, &outputs.template, &mut outs.into_iter())
}

/// The call's result: the traced function's return value with its tensors; a Python number
/// there is a constant of the graph, which the call returns as a tensor (`return 1` gives
/// `tf.Tensor(1, shape=(), dtype=int32)`).
fn fill_template(interp: &mut Interp, template: &Value, outs: &mut impl Iterator<Item = Rc<Array>>) -> PyResult<Value> {
    Ok(match template {
        Value::Ellipsis => outs.next().map(|a| Value::Array(tensor::mark_array(a))).unwrap_or(Value::None),
        Value::Tuple(items) => {
            let mut filled = Vec::with_capacity(items.len());
            for i in items.iter() {
                filled.push(fill_template(interp, i, outs)?);
            }
            Value::tuple(filled)
        }
        Value::List(items) => {
            let items = items.borrow().clone();
            let mut filled = Vec::with_capacity(items.len());
            for i in &items {
                filled.push(fill_template(interp, i, outs)?);
            }
            Value::list(filled)
        }
        Value::Int(i) if i32::try_from(*i).is_ok() => python_number(interp, template)?,
        Value::Float(_) | Value::Bool(_) => python_number(interp, template)?,
        other => other.clone(),
    })
}

fn python_number(interp: &mut Interp, v: &Value) -> PyResult<Value> {
    Ok(match tensor::to_tensor(interp, v, None)? {
        Some(t) => Value::Array(tensor::mark_array(t)),
        None => v.clone(),
    })
}
