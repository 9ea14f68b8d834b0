//! A `tf.IndexedSlices` gradient: the dense tensor it converts to, and, when tracelens knows
//! them, its `values` and `indices`. TensorFlow's gradient of a `tf.gather` along axis 0
//! (`GatherV2`, `ResourceGather`) is `IndexedSlices(values=reshape(upstream, [n] + rest),
//! indices=reshape(indices, [n]), dense_shape=shape(params))`, `n` the number of indices. A
//! source gathered by several gathers gets the concatenation of theirs, in an order that
//! depends on TensorFlow's backward pass (not on the program's order): those parts are not
//! computed (unknown), only the dense tensor is.

use std::cell::RefCell;
use std::rc::Rc;

use super::TfValue;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::ad;
use crate::jax::array::Array;
use crate::jax::dtypes::DType;
use crate::jax::ir::{Atom, Jaxpr, Prim};

/// An `IndexedSlices`: its dense tensor, and how to compute its `(values, indices)` when
/// tracelens can (computed when asked for, so that a gradient whose parts are never read
/// binds nothing more into a graph than its dense tensor).
pub struct Slices {
    pub dense: Rc<Array>,
    recipe: Option<Rc<Recipe>>,
    parts: RefCell<Option<Parts>>,
}

impl std::fmt::Debug for Slices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slices").field("dense", &self.dense).finish_non_exhaustive()
    }
}

/// `(values, indices)` of an `IndexedSlices`, when known.
pub type Parts = Option<(Rc<Array>, Rc<Array>)>;

/// What the parts of a gradient are computed from (`parts`).
pub struct Recipe {
    jaxpr: Rc<Jaxpr>,
    consts: Vec<Rc<Array>>,
    inputs: Vec<Rc<Array>>,
    sources: Vec<usize>,
    graph: Option<u32>,
}

impl Recipe {
    /// The parts of the gradient with respect to the sources at positions `sources` of
    /// `jaxpr`'s inputs (see `parts`).
    pub fn new(jaxpr: Rc<Jaxpr>, consts: &[Rc<Array>], inputs: &[Rc<Array>], sources: Vec<usize>, graph: Option<u32>) -> Rc<Recipe> {
        Rc::new(Recipe { jaxpr, consts: consts.to_vec(), inputs: inputs.to_vec(), sources, graph })
    }
}

impl Slices {
    /// An `IndexedSlices` whose parts are not known.
    pub fn dense_only(dense: Rc<Array>) -> Rc<Slices> {
        Rc::new(Slices { dense, recipe: None, parts: RefCell::new(None) })
    }

    /// A gradient's `IndexedSlices`, its parts computed by `recipe` when asked for.
    pub fn new(dense: Rc<Array>, recipe: Option<Rc<Recipe>>) -> Rc<Slices> {
        Rc::new(Slices { dense, recipe, parts: RefCell::new(None) })
    }

    /// The same slices with another dense tensor of the same dtype (`tf.identity`).
    pub fn with_dense(&self, dense: Rc<Array>) -> Rc<Slices> {
        let same = dense.aval.dtype == self.dense.aval.dtype;
        Rc::new(Slices {
            dense,
            recipe: self.recipe.clone().filter(|_| same),
            parts: RefCell::new(self.parts.borrow().clone().filter(|_| same)),
        })
    }

    /// `(values, indices)`, when known: computed once, in the graph the gradient was taken
    /// in (while it is the one being traced) or eagerly outside any trace.
    fn parts(&self, interp: &mut Interp) -> Parts {
        if let Some(known) = self.parts.borrow().clone() {
            return known;
        }
        let r = self.recipe.clone()?;
        let here = interp.jax.traces.last().map(|t| t.id);
        if here != r.graph {
            return None;
        }
        // Eagerly, the ops computing them are the gradient's, not a tape's.
        let saved = interp.jax.eager_log.take();
        let parts = parts(interp, &r.jaxpr, &r.consts, &r.inputs, &r.sources, r.graph);
        interp.jax.eager_log = saved;
        *self.parts.borrow_mut() = Some(parts.clone());
        parts
    }
}

/// The `(values, indices)` of the gradient with respect to the sources at positions
/// `sources` of `jaxpr`'s inputs (a tape's slice whose output is the target; the reads of one
/// variable, or one watched tensor), when they are read by exactly one `tf.gather` along
/// axis 0 (`gathered_only`). The cotangent at the gather's output is pulled back from ones
/// at the target; `graph` is the trace of a `tf.function`'s graph whose variables `jaxpr`
/// names (the gather's output stands for itself there), `None` eagerly (it is recomputed).
fn parts(interp: &mut Interp, jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>], sources: &[usize], graph: Option<u32>) -> Parts {
    let source_vars: Vec<_> = sources.iter().filter_map(|&i| jaxpr.invars.get(i).map(|(v, _)| *v)).collect();
    let reads = |a: &Atom| matches!(a, Atom::Var(v) if source_vars.contains(v));
    let mut gathers = jaxpr.eqns.iter().enumerate().filter(|(_, e)| e.inputs.iter().any(reads));
    let (at, gather) = gathers.next()?;
    if gathers.next().is_some() || gather.inputs.len() != 2 {
        return None;
    }
    let (out, out_aval) = gather.outputs.first()?.clone();
    // The value of an atom the slice reads: one of its inputs or constants.
    let value_of = |a: &Atom| -> Option<Rc<Array>> {
        let Atom::Var(v) = a else { return None };
        if let Some(k) = jaxpr.invars.iter().position(|(x, _)| x == v) {
            return inputs.get(k).cloned();
        }
        let k = jaxpr.constvars.iter().position(|(x, _)| x == v)?;
        consts.get(k).cloned()
    };
    let params = value_of(&gather.inputs[0])?;
    let index = value_of(&gather.inputs[1])?;
    let primal = match graph {
        Some(trace) => super::tape_gradient::tracer(trace, out, &out_aval),
        None => crate::jax::apply1(interp, gather.prim.clone(), &[params.clone(), index.clone()]).ok()?,
    };
    // The slice without the gather, its output an input of its own: the only active one.
    let mut cut = jaxpr.clone();
    cut.eqns.remove(at);
    cut.invars.push((out, out_aval.clone()));
    let mut all: Vec<Rc<Array>> = inputs.to_vec();
    all.push(primal);
    let active: Vec<bool> = (0..all.len()).map(|i| i + 1 == all.len()).collect();
    let lin = ad::linearize(interp, &Rc::new(cut), consts, &all, &active).ok()?;
    let target = lin.outputs.first()?.aval.clone();
    let ones = crate::jax::apply1(interp, Prim::full(1.0, &target), &[]).ok()?;
    let ct = ad::pullback(interp, &lin, &[Some(ones)]).ok()?.pop()?;
    let ct = match ct {
        Some(ct) => ad::with_aval(interp, ct, &out_aval.clone().weak(false)).ok()?,
        None => ad::zeros(interp, &out_aval.clone().weak(false)).ok()?,
    };
    let n = index.aval.shape.iter().product::<usize>();
    let mut rows = vec![n];
    rows.extend(params.aval.shape.iter().skip(1));
    let values = crate::jax::apply1(interp, Prim::Reshape { new_sizes: rows }, &[ct]).ok()?;
    let indices = crate::jax::apply1(interp, Prim::Reshape { new_sizes: vec![n] }, &[index]).ok()?;
    Some((super::tensor::mark_array(values), super::tensor::mark_array(indices)))
}

/// The dense shape, an `int32` tensor of its dimensions (in a graph, a symbolic tensor whose
/// value is known, as `tf.shape`'s).
fn dense_shape(interp: &mut Interp, s: &Slices) -> PyResult<Value> {
    let shape = s.dense.aval.shape.to_vec();
    let dims = shape.iter().map(|&d| Value::Int(d as i64)).collect();
    let Some(t) = super::tensor::to_tensor(interp, &Value::list(dims), Some(DType::I32))? else {
        return Ok(super::tensor::unknown_tensor(interp, "the dense shape of an IndexedSlices"));
    };
    if !super::in_graph(interp) {
        return Ok(Value::Array(t));
    }
    let staged = super::ops::delegate(interp, crate::jax::surface::JaxFn::Asarray, vec![Value::Array(t)], Vec::new())?;
    if let Value::Array(a) = &staged {
        interp.tf.shape_values.insert(Rc::as_ptr(a) as usize, (a.clone(), shape));
    }
    Ok(staged)
}

/// `g.name` on an `IndexedSlices`; `None` is Python's AttributeError.
pub fn getattr(interp: &mut Interp, s: &Slices, name: &str) -> PyResult<Option<Value>> {
    Ok(match name {
        "shape" => Some(TfValue::Shape(Rc::new(s.dense.aval.shape.iter().map(|&d| Some(d)).collect())).value()),
        "dtype" => Some(Value::TfDType(s.dense.aval.dtype)),
        // TensorFlow 2.21's IndexedSlices has no `numpy` (AttributeError).
        "numpy" => None,
        "dense_shape" => Some(dense_shape(interp, s)?),
        "values" | "indices" => Some(match s.parts(interp) {
            Some((values, _)) if name == "values" => Value::Array(values),
            Some((_, indices)) => Value::Array(indices),
            None => super::tensor::unknown_tensor(interp, "a part of an IndexedSlices that is not computed"),
        }),
        _ => Some(Value::opaque(format!("tf.IndexedSlices.{name}"))),
    })
}

/// `str(g)`: `IndexedSlices(indices=..., values=..., dense_shape=...)`, each part's text,
/// eagerly and when the parts are known. `repr(g)` names the object's address (unknown), and
/// in a graph the parts' names are not followed.
pub fn text(interp: &mut Interp, s: &Slices, repr: bool) -> PyResult<String> {
    let parts = if repr || super::in_graph(interp) { None } else { s.parts(interp) };
    let Some((values, indices)) = parts else {
        return Err(interp.stop_unknown("the text of an IndexedSlices"));
    };
    let (indices, values) = (super::tensor::str(interp, &indices)?, super::tensor::str(interp, &values)?);
    let shape = match dense_shape(interp, s)? {
        Value::Array(a) => super::tensor::str(interp, &a)?,
        _ => return Err(interp.stop_unknown("the text of an IndexedSlices")),
    };
    Ok(format!("IndexedSlices(indices={indices}, values={values}, dense_shape={shape})"))
}
