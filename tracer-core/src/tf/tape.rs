//! `tf.GradientTape`: the tape as a context manager, `watch`, and `gradient`. Inside a
//! `tf.function` the tape records the equations of the graph bound while it is open, and
//! `gradient` computes the gradients from them with the JAX model's autodiff
//! (`tape_gradient.rs`): values TensorFlow's would have, `None` for a source the target does
//! not depend on. Outside any trace (an eager tape) the ops run while the tape records are
//! logged and differentiated the same way (`tape_eager.rs`). Where autodiff has no rule, or
//! tracelens cannot vouch for what the tape recorded, a gradient in a graph has the shape and
//! dtype TensorFlow gives it (a source's own) and no known value; an eager one is unknown and
//! may be `None` (a source the eager log does not reach may be unconnected). Never a wrong
//! `None`: only what TensorFlow returns `None` for whatever the target is (an integer
//! variable) is `None`. A non-persistent tape used twice raises TensorFlow's `RuntimeError`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::ops::Args;
use super::slices::{Recipe, Slices};
use super::tensor::{mark_array, unknown_tensor};
use super::variable::Variable;
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
    /// The tensors given to `watch`, with the number of equations the graph had then.
    watched: RefCell<Vec<(Rc<Array>, usize)>>,
    /// The variables given to `watch`.
    watched_variables: RefCell<Vec<Rc<Variable>>>,
    /// Inside a graph: its trace and the equations bound while the tape was open (`None`
    /// for an end: still open).
    pub(super) span: Cell<Option<(u32, usize, Option<usize>)>>,
    /// Outside any trace: what the tape recorded (`tape_eager.rs`).
    pub(super) eager: RefCell<super::tape_eager::EagerTape>,
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
    let tape = Tape {
        persistent,
        watches_variables,
        used: Cell::new(false),
        watched: RefCell::new(Vec::new()),
        watched_variables: RefCell::new(Vec::new()),
        span: Cell::new(None),
        eager: super::tape_eager::new_state(),
    };
    Ok(TfValue::Tape(Rc::new(tape)).value())
}

/// `tape.name(...)`.
pub fn call_method(interp: &mut Interp, tape: &Rc<Tape>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let p = Args { args: &args, kwargs: &kwargs };
    match name {
        "__enter__" if interp.jax.traces.is_empty() => {
            super::tape_eager::start(interp, tape);
            Ok(Value::None)
        }
        "__exit__" if tape.eager.borrow().is_recording() => {
            super::tape_eager::stop(interp, tape);
            Ok(Value::None)
        }
        "__enter__" => {
            let start = super::graph_variables::own_frame(interp).map(|(pos, id)| (id, interp.jax.traces[pos].jaxpr.eqns.len(), None));
            tape.span.set(start);
            Ok(Value::None)
        }
        "__exit__" => {
            let end = match (tape.span.get(), super::graph_variables::own_frame(interp)) {
                (Some((id, start, None)), Some((pos, now))) if id == now => {
                    Some((id, start, Some(interp.jax.traces[pos].jaxpr.eqns.len())))
                }
                _ => None,
            };
            tape.span.set(end);
            Ok(Value::None)
        }
        "watch" => {
            if let Some(tensor) = p.get(0, "tensor") {
                let graph = super::graph_variables::own_frame(interp).map(|(pos, _)| interp.jax.traces[pos].jaxpr.eqns.len());
                let at = graph.unwrap_or_else(|| super::tape_eager::now(interp, tape));
                watch(tape, tensor, at);
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
            let unconnected = unconnected_mode(interp, p.get(3, "unconnected_gradients"))?;
            let computed = match &target {
                Some(t) if tape.span.get().is_some() => super::tape_gradient::compute(interp, tape, t).map(Computed::Graph),
                Some(t) if interp.jax.traces.is_empty() => super::tape_eager::compute(interp, tape, t).map(Computed::Eager),
                _ => None,
            };
            let g = Gradients { tape, target: target.as_ref(), computed: computed.as_ref(), unconnected };
            let out = g.of(interp, sources);
            if !tape.persistent {
                super::tape_eager::release(tape);
            }
            out
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
    if matches!(name, "stop_recording" | "reset") {
        // The eager log would hold ops TensorFlow does not record (or forgot): not followed.
        tape.eager.borrow_mut().unfollowed = true;
    }
    Some(match name {
        "watch" | "gradient" | "jacobian" | "batch_jacobian" => {
            TfValue::Method(Box::new(TfValue::Tape(tape.clone())), Rc::from(name)).value()
        }
        _ => Value::opaque(format!("tape.{name}")),
    })
}

fn watch(tape: &Tape, v: &Value, at: usize) {
    match v {
        Value::Array(a) => tape.watched.borrow_mut().push((a.clone(), at)),
        Value::List(items) => items.borrow().iter().for_each(|x| watch(tape, x, at)),
        Value::Tuple(items) => items.iter().for_each(|x| watch(tape, x, at)),
        Value::Builtin(b) => {
            if let crate::interp::builtins::Builtin::Tf(TfValue::Variable(var)) = &**b {
                tape.watched_variables.borrow_mut().push(var.clone());
            }
        }
        _ => {}
    }
}

impl Tape {
    /// The tensors given to `watch`, with the number of equations the graph had then.
    pub(super) fn watched(&self) -> Vec<(Rc<Array>, usize)> {
        self.watched.borrow().clone()
    }
}

/// One `gradient` call: the target, and what autodiff computed for it.
struct Gradients<'a> {
    tape: &'a Tape,
    target: Option<&'a Rc<Array>>,
    computed: Option<&'a Computed>,
    /// What TensorFlow gives for a source the target does not reach (`None`: not known).
    unconnected: Option<Unconnected>,
}

/// `unconnected_gradients`: `tf.UnconnectedGradients.NONE` (the default, or `'none'`) or
/// `.ZERO` (`'zero'`).
#[derive(Clone, Copy, PartialEq)]
enum Unconnected {
    None,
    Zero,
}

fn unconnected_mode(interp: &mut Interp, v: Option<&Value>) -> PyResult<Option<Unconnected>> {
    let text = match v {
        None => return Ok(Some(Unconnected::None)),
        Some(Value::Str(s)) => s.to_string(),
        // The shim's `tf.UnconnectedGradients.ZERO`: its `value` is the string.
        Some(v @ Value::Instance(i)) if i.class.name.as_ref() == "UnconnectedGradients" => match interp.getattr(v, "value")? {
            Value::Str(s) => s.to_string(),
            _ => return Ok(None),
        },
        Some(_) => return Ok(None),
    };
    Ok(match text.as_str() {
        "none" => Some(Unconnected::None),
        "zero" => Some(Unconnected::Zero),
        _ => None,
    })
}

/// What autodiff knows of the gradient with respect to one source.
pub enum Gradient {
    /// Not known: the call's result is an unknown tensor.
    Unknown,
    /// The target does not reach the source: TensorFlow's `None` (zeros under `ZERO`).
    Unconnected,
    Known(Rc<Array>),
}

/// Whether a gradient is a `tf.IndexedSlices` (every read of its source that the target
/// reaches is read only by `tf.gather`), with how to compute its `(values, indices)` when
/// tracelens can.
pub enum Slicing {
    Dense,
    Sliced(Option<Rc<Recipe>>),
}

/// What autodiff computed for one target: in a graph, or eagerly.
enum Computed {
    Graph(super::tape_gradient::Computed),
    Eager(super::tape_eager::Computed),
}

impl Computed {
    fn of_variable(&self, interp: &mut Interp, v: &Rc<Variable>) -> Gradient {
        match self {
            Computed::Graph(c) => c.of_variable(interp, v),
            Computed::Eager(c) => c.of_variable(interp, v),
        }
    }

    fn of_tensor(&self, interp: &mut Interp, a: &Rc<Array>) -> Gradient {
        match self {
            Computed::Graph(c) => c.of_tensor(interp, a),
            Computed::Eager(c) => c.of_tensor(interp, a),
        }
    }

    fn sliced_variable(&self, v: &Rc<Variable>) -> Slicing {
        match self {
            Computed::Graph(c) => c.sliced_variable(v),
            Computed::Eager(c) => c.sliced_variable(v),
        }
    }

    fn sliced_tensor(&self, a: &Rc<Array>) -> Slicing {
        match self {
            Computed::Graph(c) => c.sliced_tensor(a),
            Computed::Eager(c) => c.sliced_tensor(a),
        }
    }
}

/// A computed gradient, as the `tf.IndexedSlices` TensorFlow gives when it is `sliced` (with
/// how to compute its `(values, indices)` when tracelens can).
fn indexed_slices(g: Value, slicing: Slicing) -> Value {
    match (g, slicing) {
        (Value::Array(dense), Slicing::Sliced(recipe)) => TfValue::IndexedSlices(Slices::new(dense, recipe)).value(),
        (other, _) => other,
    }
}

fn slices_of(input: Option<&Value>) -> Option<&Rc<Slices>> {
    match input {
        Some(Value::Builtin(b)) => match &**b {
            crate::interp::builtins::Builtin::Tf(TfValue::IndexedSlices(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// The result `out` of an op that keeps a `tf.IndexedSlices` one (`tf.identity`, `tf.cast`),
/// given `input`: an `IndexedSlices` again when `input` is one, with its parts when the
/// dtype is unchanged (a cast's values are not computed).
pub fn kept_slices(input: Option<&Value>, out: Value) -> Value {
    match (slices_of(input), out) {
        (Some(s), Value::Array(dense)) => TfValue::IndexedSlices(s.with_dense(dense)).value(),
        (_, out) => out,
    }
}

/// An op on `input` (held as the dense `dense`) that keeps a `tf.IndexedSlices` one but
/// computes on its slices (`tf.clip_by_norm`, `tf.math.scalar_mul`): when `input` is one,
/// an `IndexedSlices` of `dense`'s shape and dtype whose values are not computed.
pub fn slices_not_computed(input: Option<&Value>, dense: &Rc<Array>) -> Option<Value> {
    slices_of(input)?;
    let values = super::tensor::mark_array(Array::unknown(dense.aval.clone(), "the values of an IndexedSlices computed on its slices"));
    Some(TfValue::IndexedSlices(Slices::dense_only(values)).value())
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
impl Gradients<'_> {
    fn of(&self, interp: &mut Interp, sources: &Value) -> PyResult<Value> {
        Ok(match sources {
            Value::List(items) => {
                let items = items.borrow().clone();
                let mut out = Vec::with_capacity(items.len());
                for x in &items {
                    out.push(self.of(interp, x)?);
                }
                Value::list(out)
            }
            Value::Tuple(items) => {
                let mut out = Vec::with_capacity(items.len());
                for x in items.iter() {
                    out.push(self.of(interp, x)?);
                }
                Value::tuple(out)
            }
            Value::Dict(d) => {
                let entries: Vec<_> = d.borrow().entries.iter().map(|(h, (k, v))| (h.clone(), k.clone(), v.clone())).collect();
                let mut out = crate::interp::value::Dict::default();
                for (hash, key, v) in entries {
                    let grad = self.of(interp, &v)?;
                    out.insert(hash, key, grad);
                }
                interp.new_dict(out)
            }
            _ => self.one(interp, sources)?,
        })
    }

    /// The gradient with respect to one source: the one autodiff computed; `None` where
    /// TensorFlow certainly gives `None`; else, in a graph, a tensor of the source's shape and
    /// dtype whose value is not known, and eagerly an unknown that may be `None`.
    fn one(&self, interp: &mut Interp, source: &Value) -> PyResult<Value> {
        let (tape, target) = (self.tape, self.target);
        let source = match source {
            Value::Builtin(b) => match &**b {
                crate::interp::builtins::Builtin::Tf(TfValue::Variable(var)) => {
                    let value = var.value.borrow().clone();
                    if !value.aval.dtype.is_inexact() {
                        // TensorFlow warns that the source must be floating and gives None
                        // (zeros under `ZERO`).
                        return Ok(self.finish(interp, None, &value.aval));
                    }
                    let watched =
                        var.trainable && tape.watches_variables || tape.watched_variables.borrow().iter().any(|w| Rc::ptr_eq(w, var));
                    if !watched {
                        return Ok(unknown_tensor(interp, "the gradient of a variable the tape may not watch"));
                    }
                    match self.computed.map_or(Gradient::Unknown, |c| c.of_variable(interp, var)) {
                        Gradient::Unknown => value,
                        Gradient::Unconnected => return Ok(self.finish(interp, None, &value.aval)),
                        Gradient::Known(g) => {
                            let slicing = self.computed.map_or(Slicing::Dense, |c| c.sliced_variable(var));
                            return Ok(indexed_slices(self.finish(interp, Some(g), &value.aval), slicing));
                        }
                    }
                }
                _ => return Ok(unknown_tensor(interp, "the gradient of a source that is not modelled")),
            },
            Value::Array(a) if a.tf.get() && a.aval.dtype.is_inexact() && tape.watched.borrow().iter().any(|(w, _)| Rc::ptr_eq(w, a)) => {
                match self.computed.map_or(Gradient::Unknown, |c| c.of_tensor(interp, a)) {
                    Gradient::Unknown => a.clone(),
                    Gradient::Unconnected => return Ok(self.finish(interp, None, &a.aval)),
                    Gradient::Known(g) => {
                        let slicing = self.computed.map_or(Slicing::Dense, |c| c.sliced_tensor(a));
                        return Ok(indexed_slices(self.finish(interp, Some(g), &a.aval), slicing));
                    }
                }
            }
            _ => return Ok(unknown_tensor(interp, "the gradient of a tensor the tape may not have recorded")),
        };
        let Some(target) = target else {
            return Ok(unknown_tensor(interp, "the gradient of a target that is not a floating tensor"));
        };
        // Eagerly, what the tape did not follow may not reach the source (a second derivative
        // of a linear function, taken with nested tapes): TensorFlow's `None` is possible, so
        // the gradient is an unknown that may be `None`. In a graph, a source the target does
        // not reach is found by the slice (certainly `None`), so an uncomputed gradient is one
        // the target reaches: a tensor of the source's shape.
        if !super::in_graph(interp) && self.unconnected != Some(Unconnected::Zero) {
            return Ok(Value::opaque_maybe_none(
                "a gradient tracelens did not compute (TensorFlow gives None for a source the target does not reach)",
            ));
        }
        let aval = source.aval.clone().weak(false);
        let grad = crate::jax::apply1(interp, Prim::opaque("gradient", aval), &[target.clone(), source])?;
        Ok(Value::Array(mark_array(grad)))
    }

    /// A computed gradient: for an unconnected one (`None`), TensorFlow's `None`, or zeros of
    /// the source's shape and dtype under `ZERO`.
    fn finish(&self, interp: &mut Interp, g: Option<Rc<Array>>, source: &crate::jax::aval::Aval) -> Value {
        match g {
            // A tracer of the graph (shared with other gradients): marked in place.
            Some(g) if g.is_tracer() => {
                g.tf.set(true);
                Value::Array(g)
            }
            Some(g) => Value::Array(mark_array(g)),
            None => match self.unconnected {
                Some(Unconnected::None) => Value::None,
                Some(Unconnected::Zero) => match crate::jax::apply1(interp, Prim::full(0.0, &source.clone().weak(false)), &[]) {
                    Ok(z) => Value::Array(mark_array(z)),
                    Err(_) => unknown_tensor(interp, "the zeros of an unconnected gradient"),
                },
                None => unknown_tensor(interp, "an unconnected gradient under unconnected_gradients"),
            },
        }
    }
}
