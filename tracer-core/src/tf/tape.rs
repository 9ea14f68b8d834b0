//! `tf.GradientTape`: the tape as a context manager, `watch`, and `gradient`, whose results
//! have the shape and dtype TensorFlow gives them (a source's own) and no known value. What
//! the tape recorded is not modelled, so a source the target may not depend on is an
//! unknown, never a wrong `None`: only what TensorFlow returns `None` for whatever the
//! target is (an integer variable) is `None`. A non-persistent tape used twice raises
//! TensorFlow's `RuntimeError`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::ops::Args;
use super::tensor::{mark_array, unknown_tensor};
use super::TfValue;
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::ir::Prim;

pub struct Tape {
    persistent: bool,
    /// `watch_accessed_variables`: trainable variables read under the tape are watched.
    watches_variables: bool,
    /// A non-persistent tape computes one set of gradients.
    used: Cell<bool>,
    /// The tensors given to `watch`.
    watched: RefCell<Vec<Rc<Array>>>,
}

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GradientTape(persistent={})", self.persistent)
    }
}

/// `tf.GradientTape(persistent=False, watch_accessed_variables=True)`.
pub fn make(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let flag = |interp: &mut Interp, i: usize, name: &str, default: bool| -> PyResult<bool> {
        match p.get(i, name) {
            Some(v) => interp.truthy(v),
            None => Ok(default),
        }
    };
    let persistent = flag(interp, 0, "persistent", false)?;
    let watches_variables = flag(interp, 1, "watch_accessed_variables", true)?;
    let tape = Tape { persistent, watches_variables, used: Cell::new(false), watched: RefCell::new(Vec::new()) };
    Ok(TfValue::Tape(Rc::new(tape)).value())
}

/// `tape.name(...)`.
pub fn call_method(interp: &mut Interp, tape: &Tape, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let p = Args { args: &args, kwargs: &kwargs };
    match name {
        "watch" => {
            if let Some(tensor) = p.get(0, "tensor") {
                watch(tape, tensor);
            }
            Ok(Value::None)
        }
        "gradient" => {
            use_once(interp, tape)?;
            let (Some(target), Some(sources)) = (p.get(0, "target"), p.get(1, "sources")) else {
                return Ok(Value::opaque("tape.gradient of arguments that are not known"));
            };
            let target = match target {
                Value::Array(a) if a.tf.get() && a.aval.dtype.is_inexact() => Some(a.clone()),
                _ => None,
            };
            if p.get(2, "output_gradients").is_some() {
                return Ok(Value::opaque("tape.gradient with output_gradients"));
            }
            gradients(interp, tape, target.as_ref(), sources)
        }
        "jacobian" | "batch_jacobian" => {
            use_once(interp, tape)?;
            Ok(Value::opaque(format!("tape.{name}()")))
        }
        _ => Ok(Value::opaque(format!("tape.{name}()"))),
    }
}

/// `tape.name`.
pub fn getattr(tape: &Rc<Tape>, name: &str) -> Option<Value> {
    Some(match name {
        "watch" | "gradient" | "jacobian" | "batch_jacobian" => {
            TfValue::Method(Box::new(TfValue::Tape(tape.clone())), Rc::from(name)).value()
        }
        _ => Value::opaque(format!("tape.{name}")),
    })
}

fn watch(tape: &Tape, v: &Value) {
    match v {
        Value::Array(a) => tape.watched.borrow_mut().push(a.clone()),
        Value::List(items) => items.borrow().iter().for_each(|x| watch(tape, x)),
        Value::Tuple(items) => items.iter().for_each(|x| watch(tape, x)),
        _ => {}
    }
}

/// A non-persistent tape's second `gradient`/`jacobian` is TensorFlow's `RuntimeError`.
fn use_once(interp: &mut Interp, tape: &Tape) -> PyResult<()> {
    if tape.used.replace(true) && !tape.persistent {
        let message = "A non-persistent GradientTape can only be used to compute one set of gradients (or jacobians)";
        return Err(interp.raise("RuntimeError", Code::PythonException, message.to_string()));
    }
    Ok(())
}

/// The gradients of `target` with respect to `sources`, in their structure (a list, tuple or
/// dict of them, or one).
fn gradients(interp: &mut Interp, tape: &Tape, target: Option<&Rc<Array>>, sources: &Value) -> PyResult<Value> {
    Ok(match sources {
        Value::List(items) => {
            let items = items.borrow().clone();
            let mut out = Vec::with_capacity(items.len());
            for x in &items {
                out.push(gradients(interp, tape, target, x)?);
            }
            Value::list(out)
        }
        Value::Tuple(items) => {
            let mut out = Vec::with_capacity(items.len());
            for x in items.iter() {
                out.push(gradients(interp, tape, target, x)?);
            }
            Value::tuple(out)
        }
        Value::Dict(d) => {
            let entries: Vec<_> = d.borrow().entries.iter().map(|(h, (k, v))| (h.clone(), k.clone(), v.clone())).collect();
            let mut out = crate::interp::value::Dict::default();
            for (hash, key, v) in entries {
                let grad = gradients(interp, tape, target, &v)?;
                out.insert(hash, key, grad);
            }
            interp.new_dict(out)
        }
        _ => one_gradient(interp, tape, target, sources)?,
    })
}

/// The gradient with respect to one source: a tensor of the source's shape and dtype whose
/// value is not known, `None` where TensorFlow certainly gives `None`, else unknown.
fn one_gradient(interp: &mut Interp, tape: &Tape, target: Option<&Rc<Array>>, source: &Value) -> PyResult<Value> {
    let source = match source {
        Value::Builtin(b) => match &**b {
            crate::interp::builtins::Builtin::Tf(TfValue::Variable(var)) => {
                let value = var.value.borrow().clone();
                if !value.aval.dtype.is_inexact() {
                    // TensorFlow warns that the source must be floating and gives None.
                    return Ok(Value::None);
                }
                if !(var.trainable && tape.watches_variables) {
                    return Ok(unknown_tensor(interp, "the gradient of a variable the tape may not watch"));
                }
                value
            }
            _ => return Ok(unknown_tensor(interp, "the gradient of a source that is not modelled")),
        },
        Value::Array(a) if a.tf.get() && a.aval.dtype.is_inexact() && tape.watched.borrow().iter().any(|w| Rc::ptr_eq(w, a)) => a.clone(),
        _ => return Ok(unknown_tensor(interp, "the gradient of a tensor the tape may not have recorded")),
    };
    let Some(target) = target else {
        return Ok(unknown_tensor(interp, "the gradient of a target that is not a floating tensor"));
    };
    let aval = source.aval.clone().weak(false);
    let grad = crate::jax::apply1(interp, Prim::opaque("gradient", aval), &[target.clone(), source])?;
    Ok(Value::Array(mark_array(grad)))
}
