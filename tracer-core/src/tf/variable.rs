//! `tf.Variable`: mutable state with an identity. Eagerly it holds a value; inside a
//! `tf.function` its reads and writes are graph ops (`ReadVariableOp`, `AssignVariableOp`):
//! a read there is a symbolic tensor, and an `assign` a new value of the variable in the
//! graph, which each call of the graph applies (`graph_variables.rs`). `assign` checks the shape as
//! TensorFlow does; creating one inside a `tf.function` is `on_variable_created`'s
//! rule (TL220).

use std::cell::RefCell;
use std::rc::Rc;

use super::errors;
use super::ops::Args;
use super::tensor::{self, to_tensor};
use super::TfValue;
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::ir::Prim;

#[derive(Debug)]
pub struct Variable {
    pub value: RefCell<Rc<Array>>,
    pub name: String,
    pub trainable: bool,
}

/// `tf.Variable(initial_value, trainable=True, name=None, dtype=None)`.
pub fn make(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let Some(init) = p.get(0, "initial_value") else {
        return Err(interp.value_error("initial_value must be specified."));
    };
    let init = match init {
        Value::Function(_) | Value::BoundMethod(_) => interp.call(init, Vec::new(), Vec::new())?,
        other => other.clone(),
    };
    let dtype = match p.get(usize::MAX, "dtype") {
        Some(Value::DType(d) | Value::TfDType(d)) => Some(*d),
        Some(_) => return Ok(Value::opaque("a tf.Variable of a dtype tracelens does not model")),
        None => None,
    };
    let Some(mut value) = to_tensor(interp, &init, dtype)? else {
        on_variable_created(interp)?;
        return Ok(Value::opaque("a tf.Variable of a value that is not known"));
    };
    if let Some(d) = dtype {
        if d != value.aval.dtype {
            value = tensor::mark_array(crate::jax::numpy::convert(interp, &value, d, false)?);
        }
    }
    on_variable_created(interp)?;
    let trainable = match p.get(1, "trainable") {
        Some(v) => interp.truthy(v)?,
        None => true,
    };
    let name = match p.get(usize::MAX, "name") {
        Some(Value::Str(s)) => s.to_string(),
        _ => "Variable".to_string(),
    };
    // The variable's value outlives any trace: a value computed in one is not known after.
    if value.is_tracer() {
        value = Array::unknown(value.aval.clone(), "a variable initialised inside a tf.function");
        value.tf.set(true);
    }
    Ok(TfValue::Variable(Rc::new(Variable { value: RefCell::new(value), name, trainable })).value())
}

/// The variable's value as a tensor: its value eagerly, a `ReadVariableOp` in a graph.
pub fn read(interp: &mut Interp, v: &Rc<Variable>) -> Rc<Array> {
    let value = v.value.borrow().clone();
    if interp.jax.staging_depth() == 0 {
        return super::tape_eager::read(interp, v, value);
    }
    if let Some(t) = super::graph_variables::read(interp, v) {
        return t;
    }
    match crate::jax::apply1(interp, Prim::opaque("ReadVariableOp", value.aval.clone()), &[]) {
        Ok(t) => tensor::mark_array(t),
        Err(_) => value,
    }
}

pub fn getattr(interp: &mut Interp, v: &Rc<Variable>, name: &str) -> PyResult<Option<Value>> {
    let method = |n: &str| Some(TfValue::Method(Box::new(TfValue::Variable(v.clone())), Rc::from(n)).value());
    let aval = v.value.borrow().aval.clone();
    Ok(match name {
        "shape" => Some(tensor::shape_value(&aval.shape)),
        "dtype" => Some(Value::TfDType(aval.dtype)),
        "trainable" => Some(Value::Bool(v.trainable)),
        "name" => Some(Value::str(&format!("{}:0", v.name))),
        "assign" | "assign_add" | "assign_sub" | "read_value" | "numpy" | "value" => method(name),
        "ndim" => Some(Value::Int(aval.ndim() as i64)),
        _ => {
            // Everything else a tensor has (`v.T`, `v.get_shape()`) reads the value.
            let t = read(interp, v);
            return tensor::getattr(interp, &t, name);
        }
    })
}

pub fn call_method(interp: &mut Interp, v: &Rc<Variable>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let p = Args { args: &args, kwargs: &kwargs };
    match name {
        "read_value" | "value" => Ok(Value::Array(read(interp, v))),
        "numpy" => {
            let t = read(interp, v);
            tensor::call_method(interp, &t, "numpy", Vec::new(), Vec::new())
        }
        "assign" | "assign_add" | "assign_sub" => {
            let Some(x) = p.get(0, "value") else {
                return Err(interp.type_error(format!("{name}() missing 1 required positional argument: 'value'")));
            };
            assign(interp, v, name, x)?;
            Ok(TfValue::Variable(v.clone()).value())
        }
        _ => Ok(Value::opaque(format!("tf.Variable.{name}()"))),
    }
}

/// `v.assign(x)`, `v.assign_add(x)`, `v.assign_sub(x)`.
fn assign(interp: &mut Interp, v: &Rc<Variable>, how: &str, x: &Value) -> PyResult<()> {
    let current = v.value.borrow().clone();
    let Some(new) = to_tensor(interp, x, Some(current.aval.dtype))? else {
        store_unknown(interp, v);
        return Ok(());
    };
    if new.aval.shape != current.aval.shape {
        let shown = |s: &[usize]| crate::jax::aval::shape_tuple(s);
        let msg = if how == "assign" {
            format!(
                "Cannot assign value to variable ' {}:0': Shape mismatch.The variable shape {}, and the assigned value shape {} are incompatible.",
                v.name,
                shown(&current.aval.shape),
                shown(&new.aval.shape)
            )
        } else {
            // The update ops take no broadcasting, eagerly or in a graph.
            let op = if how == "assign_add" { "AssignAddVariableOp" } else { "AssignSubVariableOp" };
            return Err(errors::update_mismatch(interp, op, &current.aval.shape, &new.aval.shape));
        };
        return Err(interp.raise("ValueError", Code::ShapeMismatch, msg));
    }
    if new.aval.dtype != current.aval.dtype {
        store_unknown(interp, v);
        return Ok(());
    }
    let in_graph = interp.jax.staging_depth() > 0;
    let updated = match how {
        "assign" => Some(new),
        _ => {
            let op = if how == "assign_add" { tensor::ADD } else { tensor::SUB };
            // In a graph the update reads the variable's value there (`graph_variables.rs`).
            let current = if in_graph { read(interp, v) } else { current };
            match tensor::apply_binary(interp, &op, &Value::Array(current), &Value::Array(new))? {
                Value::Array(a) => Some(a),
                _ => None,
            }
        }
    };
    match updated {
        Some(a) => store(interp, v, a),
        None => store_unknown(interp, v),
    }
    Ok(())
}

/// `v` holds `value` from now on: eagerly its value; in a graph, an assign the graph's call
/// applies (`graph_variables.rs`), or an unknown value where tracelens does not follow it.
pub fn store(interp: &mut Interp, v: &Rc<Variable>, value: Rc<Array>) {
    if interp.jax.staging_depth() == 0 {
        super::tape_eager::assigned(interp, v);
        *v.value.borrow_mut() = tensor::mark_array(value);
    } else if !super::graph_variables::assign(interp, v, value) {
        forget(v);
    }
}

/// `v` is assigned a value tracelens does not know (in a graph: on every call).
fn store_unknown(interp: &mut Interp, v: &Rc<Variable>) {
    let aval = v.value.borrow().aval.clone();
    let unknown = Array::unknown(aval, "a variable assigned in a way tracelens does not follow");
    store(interp, v, unknown);
}

/// The variable keeps its aval, and its value is no longer known.
pub fn forget(v: &Variable) {
    let aval = v.value.borrow().aval.clone();
    let unknown = Array::unknown(aval, "a variable assigned in a way tracelens does not follow");
    unknown.tf.set(true);
    *v.value.borrow_mut() = unknown;
}

/// `tf.Variable(...)` inside a `tf.function` trace: allowed on the function's first trace
/// (which TensorFlow then repeats), TensorFlow's `ValueError` on any other (TL220).
pub fn on_variable_created(interp: &mut Interp) -> PyResult<()> {
    let Some(active) = interp.tf.active.last_mut() else { return Ok(()) };
    if active.forbid_variables {
        return Err(interp.raise(
            "ValueError",
            Code::TfVariableCreation,
            "tf.function only supports singleton tf.Variables created on the first call. Make sure the tf.Variable is only created once or created outside tf.function. See https://www.tensorflow.org/guide/function#creating_tfvariables for more information.",
        ));
    }
    active.created_variables = true;
    interp.tf.variable_just_created = true;
    Ok(())
}
