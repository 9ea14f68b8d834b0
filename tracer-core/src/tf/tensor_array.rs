//! `tf.TensorArray(dtype, size, dynamic_size, clear_after_read, ..., infer_shape,
//! element_shape)`: a list of tensors of one dtype and one element shape.
//!
//! Eagerly it holds its elements: `write`/`read` at a known index check the size
//! (`OutOfRangeError: Tried to write to index 3 but array is not resizeable and size is: 2 `,
//! `Tried to read from index 4 ...`), a write the element shape (`ValueError: Incompatible
//! shape for value ((4,)), expected ((3,))`) and the dtype (`InvalidArgumentError`); `stack`,
//! `gather`, `concat` are `tf.stack`/`tf.gather`/`tf.concat` of them, an element never
//! written being zeros of the element shape.
//!
//! In a graph (TensorFlow's list-backed TensorArray) only shapes are known: every write
//! merges its value's shape into the element shape, which the arrays a write returns share
//! (`ValueError: Inconsistent shapes: saw (4,) but expected (3,) ` at the write), `read`
//! gives a symbolic tensor of the element shape, `stack` one of `(size, *element)` where
//! the size is known only when it is static and `dynamic_size` is off. A staged loop
//! carries the array as a new one of the same element shape (`loop_placeholder`). What
//! TensorFlow only finds when the graph runs (an index past the size, a dtype that differs,
//! elements of different shapes written in different iterations) is not reported.
//!
//! Not modelled (unknown, never a finding): `split`, `grad`, negative indices,
//! `clear_after_read` (TensorFlow 2's list-backed arrays do not enforce it either).

use std::cell::RefCell;
use std::rc::Rc;

use super::ops::Args;
use super::tensor::{shape_str, to_tensor, unknown_tensor};
use super::{partial, TfFn, TfValue};
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};
use crate::jax::array::Array;
use crate::jax::dtypes::DType;

/// Dimensions, `None` where unknown; `None` as a whole for an unknown rank.
type Dims = Option<Vec<Option<usize>>>;

#[derive(Debug)]
pub struct TensorArray {
    pub dtype: DType,
    pub dynamic_size: bool,
    pub infer_shape: bool,
    /// The element shape, shared by the arrays a graph write returns (TensorFlow shares it).
    pub element_shape: Rc<RefCell<Dims>>,
    /// Eagerly: one slot per element (`None`: never written). In a graph: unused.
    pub elements: RefCell<Vec<Option<Rc<Array>>>>,
    /// In a graph: the size `stack` knows statically (static and not `dynamic_size`).
    pub static_size: Option<usize>,
    pub eager: bool,
}

fn value(ta: TensorArray) -> Value {
    TfValue::TensorArray(Rc::new(ta)).value()
}

/// A concrete int: a Python int, or a known scalar tensor.
pub(super) fn known_int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Array(a) if a.aval.shape.is_empty() && a.aval.dtype.is_integer() => {
            let known = a.known()?;
            let data = crate::jax::eval::force(&known, 1)?;
            data.iter().next().map(|x| *x as i64)
        }
        _ => None,
    }
}

fn dims_value(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<Option<usize>>>> {
    Ok(match v {
        Value::Builtin(b) => match &**b {
            crate::interp::builtins::Builtin::Tf(TfValue::Shape(d)) => Some((**d).clone()),
            _ => None,
        },
        Value::List(_) | Value::Tuple(_) => {
            let mut out = Vec::new();
            for item in interp.iterate(v)? {
                match item {
                    Value::Int(n) if n >= 0 => out.push(Some(n as usize)),
                    Value::None => out.push(None),
                    _ => return Ok(None),
                }
            }
            Some(out)
        }
        _ => None,
    })
}

/// `tf.TensorArray(...)`; opaque when its dtype or size is not read.
pub fn make(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let Some(Value::DType(dtype) | Value::TfDType(dtype)) = p.get(0, "dtype") else {
        return Ok(Value::opaque("a tf.TensorArray of a dtype tracelens does not read"));
    };
    let flag = |interp: &mut Interp, i: usize, name: &str, default: bool| -> PyResult<bool> {
        match p.get(i, name) {
            Some(v) => interp.truthy(v),
            None => Ok(default),
        }
    };
    let dynamic_size = flag(interp, 2, "dynamic_size", false)?;
    let infer_shape = flag(interp, 7, "infer_shape", true)?;
    let element_shape = match p.get(8, "element_shape") {
        Some(v) => match dims_value(interp, v)? {
            Some(d) => Some(d),
            None => return Ok(Value::opaque("a tf.TensorArray of an element shape tracelens does not read")),
        },
        None => None,
    };
    let size = p.get(1, "size").map(known_int);
    let eager = !super::in_graph(interp);
    let size = match size {
        Some(Some(n)) if n >= 0 => Some(n as usize),
        Some(_) if eager => return Ok(Value::opaque("a tf.TensorArray of a size tracelens does not know")),
        Some(_) => None,
        None if dynamic_size => Some(0),
        None => return Ok(Value::opaque("a tf.TensorArray without a size")),
    };
    // An eager array holds a slot per element from the start: its size is the program's.
    let slots = if eager { size.unwrap_or(0) } else { 0 };
    if !interp.afford(slots as u128 * crate::interp::memory::VALUE_BYTES, "a tf.TensorArray's elements")? {
        return Ok(Value::opaque("a tf.TensorArray over the memory budget"));
    }
    let elements = vec![None; slots];
    Ok(value(TensorArray {
        dtype: *dtype,
        dynamic_size,
        infer_shape,
        element_shape: Rc::new(RefCell::new(element_shape)),
        elements: RefCell::new(elements),
        static_size: if dynamic_size { None } else { size },
        eager,
    }))
}

/// The array a staged loop's body (and the code after the loop) sees for `ta`: one of the
/// graph with `ta`'s element shape (shared) and static size.
pub fn loop_placeholder(ta: &Rc<TensorArray>) -> Value {
    value(TensorArray {
        dtype: ta.dtype,
        dynamic_size: ta.dynamic_size,
        infer_shape: ta.infer_shape,
        element_shape: ta.element_shape.clone(),
        elements: RefCell::new(Vec::new()),
        static_size: if ta.dynamic_size { None } else { ta.static_size.or_else(|| ta.eager.then(|| ta.elements.borrow().len())) },
        eager: false,
    })
}

pub fn getattr(ta: &Rc<TensorArray>, name: &str) -> Option<Value> {
    let method = || TfValue::Method(Box::new(TfValue::TensorArray(ta.clone())), Rc::from(name)).value();
    Some(match name {
        "write" | "read" | "stack" | "unstack" | "size" | "gather" | "scatter" | "concat" | "close" | "mark_used" | "identity" => method(),
        "dtype" => Value::TfDType(ta.dtype),
        "dynamic_size" => Value::Bool(ta.dynamic_size),
        "element_shape" => match &*ta.element_shape.borrow() {
            Some(d) => TfValue::Shape(Rc::new(d.clone())).value(),
            None => Value::opaque("the unknown element shape of a TensorArray"),
        },
        _ => Value::opaque(format!("TensorArray.{name}")),
    })
}

pub fn call_method(interp: &mut Interp, ta: &Rc<TensorArray>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let p = Args { args: &args, kwargs: &kwargs };
    match name {
        "write" => write(interp, ta, &p),
        "read" => read(interp, ta, &p),
        "stack" => stack(interp, ta),
        "unstack" => unstack(interp, ta, &p),
        "scatter" => scatter(interp, ta, &p),
        "gather" => gather(interp, ta, &p),
        "concat" => concat(interp, ta),
        "size" => size(interp, ta),
        "identity" | "mark_used" => Ok(TfValue::TensorArray(ta.clone()).value()),
        "close" => Ok(Value::None),
        _ => Ok(unknown_tensor(interp, "a TensorArray method tracelens does not model")),
    }
}

/// What a write or an unstack returns: the same array eagerly; in a graph a new one of the
/// same element shape (TensorFlow returns a new array over the new list).
fn written(ta: &Rc<TensorArray>) -> Value {
    TfValue::TensorArray(ta.clone()).value()
}

/// Merges one element's dimensions into the element shape, or raises as TensorFlow does.
fn merge_element(interp: &mut Interp, ta: &TensorArray, dims: &[Option<usize>]) -> PyResult<()> {
    if !ta.infer_shape {
        return Ok(());
    }
    let current = ta.element_shape.borrow().clone();
    let Some(expected) = current else {
        *ta.element_shape.borrow_mut() = Some(dims.to_vec());
        return Ok(());
    };
    let compatible = expected.len() == dims.len() && expected.iter().zip(dims).all(|(a, b)| a.is_none() || b.is_none() || a == b);
    if !compatible {
        let (saw, want) = (shape_str(dims), shape_str(&expected));
        let (class, msg) = if ta.eager {
            ("ValueError", format!("Incompatible shape for value ({saw}), expected ({want})"))
        } else {
            ("ValueError", format!("Inconsistent shapes: saw {saw} but expected {want} "))
        };
        return Err(interp.raise(class, Code::ShapeMismatch, msg));
    }
    let merged = expected.iter().zip(dims).map(|(a, b)| a.or(*b)).collect();
    *ta.element_shape.borrow_mut() = Some(merged);
    Ok(())
}

fn write(interp: &mut Interp, ta: &Rc<TensorArray>, p: &Args) -> PyResult<Value> {
    let (Some(index), Some(v)) = (p.get(0, "index"), p.get(1, "value")) else {
        return Ok(Value::opaque("a TensorArray.write tracelens does not read"));
    };
    let (dims, dtype) = match to_tensor(interp, v, Some(ta.dtype))? {
        Some(t) => (t.aval.shape.iter().map(|&d| Some(d)).collect::<Vec<_>>(), t.aval.dtype),
        None => match partial::dims_of(v) {
            Some(d) => d,
            None => return Ok(Value::opaque("a TensorArray written a value tracelens does not follow")),
        },
    };
    if dtype != ta.dtype {
        if ta.eager {
            let msg = format!("TensorArray dtype is {} but Op is trying to write dtype {} ", ta.dtype.name(), dtype.name());
            return Err(interp.raise("InvalidArgumentError", Code::DtypeMismatch, msg));
        }
        // TensorFlow fails when the graph runs; what the array holds is not followed.
        return Ok(Value::opaque("a TensorArray written a tensor of another dtype"));
    }
    if ta.eager {
        let Some(i) = known_int(index).filter(|i| *i >= 0) else {
            return Ok(Value::opaque("a TensorArray written at an index tracelens does not know"));
        };
        let i = i as usize;
        let len = ta.elements.borrow().len();
        if i >= len && !ta.dynamic_size {
            let msg = format!("Tried to write to index {i} but array is not resizeable and size is: {len} ");
            return Err(interp.raise("OutOfRangeError", Code::PythonException, msg));
        }
        merge_element(interp, ta, &dims)?;
        let t = to_tensor(interp, v, Some(ta.dtype))?;
        let mut elements = ta.elements.borrow_mut();
        if i >= elements.len() {
            elements.resize(i + 1, None);
        }
        elements[i] = t;
        return Ok(written(ta));
    }
    merge_element(interp, ta, &dims)?;
    Ok(written(ta))
}

/// An element never written, eagerly: zeros of the element shape when it is fully known.
fn zeros_element(interp: &mut Interp, ta: &TensorArray) -> PyResult<Option<Rc<Array>>> {
    let Some(dims) = ta.element_shape.borrow().clone() else { return Ok(None) };
    let Some(shape) = dims.iter().copied().collect::<Option<Vec<usize>>>() else { return Ok(None) };
    let shape = Value::list(shape.into_iter().map(|d| Value::Int(d as i64)).collect());
    let z = super::ops::call(interp, TfFn::Zeros, vec![shape, Value::DType(ta.dtype)], Vec::new())?;
    Ok(match z {
        Value::Array(a) => Some(a),
        _ => None,
    })
}

/// Eagerly: every element, unwritten ones as zeros; `None` when one is not known.
fn eager_elements(interp: &mut Interp, ta: &TensorArray) -> PyResult<Option<Vec<Rc<Array>>>> {
    let slots = ta.elements.borrow().clone();
    let mut out = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            Some(a) => out.push(a),
            None => match zeros_element(interp, ta)? {
                Some(z) => out.push(z),
                None => return Ok(None),
            },
        }
    }
    Ok(Some(out))
}

/// In a graph: a symbolic tensor of these dimensions, or unknown for an unknown rank.
fn symbolic(interp: &mut Interp, dims: Dims, dtype: DType) -> PyResult<Value> {
    match dims {
        Some(d) => partial::make(interp, d, dtype, None),
        None => Ok(unknown_tensor(interp, "a TensorArray element of unknown shape")),
    }
}

fn read(interp: &mut Interp, ta: &Rc<TensorArray>, p: &Args) -> PyResult<Value> {
    let Some(index) = p.get(0, "index") else { return Ok(unknown_tensor(interp, "a TensorArray.read without an index")) };
    if !ta.eager {
        let dims = ta.element_shape.borrow().clone();
        return symbolic(interp, dims, ta.dtype);
    }
    let Some(i) = known_int(index).filter(|i| *i >= 0) else {
        return Ok(unknown_tensor(interp, "a TensorArray read at an index tracelens does not know"));
    };
    let len = ta.elements.borrow().len();
    if i as usize >= len {
        let msg = format!("Tried to read from index {i} but array size is: {len} ");
        return Err(interp.raise("OutOfRangeError", Code::PythonException, msg));
    }
    let slot = ta.elements.borrow()[i as usize].clone();
    match slot.map(Some).map_or_else(|| zeros_element(interp, ta), Ok)? {
        Some(a) => Ok(Value::Array(a)),
        None => Ok(unknown_tensor(interp, "an unwritten TensorArray element of unknown shape")),
    }
}

fn stack(interp: &mut Interp, ta: &Rc<TensorArray>) -> PyResult<Value> {
    if !ta.eager {
        let dims = ta.element_shape.borrow().clone().map(|d| std::iter::once(ta.static_size).chain(d).collect());
        return symbolic(interp, dims, ta.dtype);
    }
    match eager_elements(interp, ta)? {
        Some(items) if !items.is_empty() => {
            let list = Value::list(items.into_iter().map(Value::Array).collect());
            super::ops::call(interp, TfFn::Stack, vec![list], Vec::new())
        }
        _ => Ok(unknown_tensor(interp, "a TensorArray stacked with elements tracelens does not know")),
    }
}

fn concat(interp: &mut Interp, ta: &Rc<TensorArray>) -> PyResult<Value> {
    if !ta.eager {
        let dims = ta
            .element_shape
            .borrow()
            .clone()
            .filter(|d| !d.is_empty())
            .map(|d| std::iter::once(None).chain(d[1..].iter().copied()).collect());
        return symbolic(interp, dims, ta.dtype);
    }
    match eager_elements(interp, ta)? {
        Some(items) if !items.is_empty() => {
            let list = Value::list(items.into_iter().map(Value::Array).collect());
            super::ops::call(interp, TfFn::Concat, vec![list, Value::Int(0)], Vec::new())
        }
        _ => Ok(unknown_tensor(interp, "a TensorArray concatenated with elements tracelens does not know")),
    }
}

fn gather(interp: &mut Interp, ta: &Rc<TensorArray>, p: &Args) -> PyResult<Value> {
    let Some(indices) = p.get(0, "indices") else { return Ok(unknown_tensor(interp, "a TensorArray.gather without indices")) };
    let Some(idx) = to_tensor(interp, indices, Some(DType::I32))? else {
        return Ok(unknown_tensor(interp, "a TensorArray gathered at indices tracelens does not follow"));
    };
    if idx.aval.ndim() != 1 {
        return Ok(unknown_tensor(interp, "a TensorArray gathered at indices that are not a vector"));
    }
    if !ta.eager {
        let dims = ta.element_shape.borrow().clone().map(|d| std::iter::once(Some(idx.aval.shape[0])).chain(d).collect());
        return symbolic(interp, dims, ta.dtype);
    }
    match eager_elements(interp, ta)? {
        Some(items) if !items.is_empty() => {
            let list = Value::list(items.into_iter().map(Value::Array).collect());
            let stacked = super::ops::call(interp, TfFn::Stack, vec![list], Vec::new())?;
            super::ops::call(interp, TfFn::Gather, vec![stacked, Value::Array(idx)], Vec::new())
        }
        _ => Ok(unknown_tensor(interp, "a TensorArray gathered with elements tracelens does not know")),
    }
}

fn size(interp: &mut Interp, ta: &Rc<TensorArray>) -> PyResult<Value> {
    if ta.eager {
        let n = ta.elements.borrow().len() as f64;
        return Ok(Value::Array(super::tensor::mark_array(Array::scalar(n, DType::I32, false))));
    }
    partial::make(interp, Vec::new(), DType::I32, None)
}

/// `unstack(value)`: the rows of `value` become the elements.
fn unstack(interp: &mut Interp, ta: &Rc<TensorArray>, p: &Args) -> PyResult<Value> {
    let Some(v) = p.get(0, "value") else { return Ok(Value::opaque("a TensorArray.unstack without a value")) };
    rows_in(interp, ta, v, None)
}

/// `scatter(indices, value)`: row `k` of `value` becomes element `indices[k]`.
fn scatter(interp: &mut Interp, ta: &Rc<TensorArray>, p: &Args) -> PyResult<Value> {
    let (Some(indices), Some(v)) = (p.get(0, "indices"), p.get(1, "value")) else {
        return Ok(Value::opaque("a TensorArray.scatter tracelens does not read"));
    };
    let mut at = Vec::new();
    if ta.eager {
        for i in interp.iterate(indices)? {
            match known_int(&i).filter(|i| *i >= 0) {
                Some(i) => at.push(i as usize),
                None => return Ok(Value::opaque("a TensorArray scattered at indices tracelens does not know")),
            }
        }
    }
    rows_in(interp, ta, v, Some(at))
}

fn rows_in(interp: &mut Interp, ta: &Rc<TensorArray>, v: &Value, at: Option<Vec<usize>>) -> PyResult<Value> {
    let (dims, dtype) = match to_tensor(interp, v, Some(ta.dtype))? {
        Some(t) => (t.aval.shape.iter().map(|&d| Some(d)).collect::<Vec<_>>(), t.aval.dtype),
        None => match partial::dims_of(v) {
            Some(d) => d,
            None => return Ok(Value::opaque("a TensorArray filled from a value tracelens does not follow")),
        },
    };
    if dims.is_empty() || dtype != ta.dtype {
        return Ok(Value::opaque("a TensorArray filled from a value tracelens does not model"));
    }
    if !ta.eager {
        merge_element(interp, ta, &dims[1..])?;
        return Ok(written(ta));
    }
    let Some(t) = to_tensor(interp, v, Some(ta.dtype))? else {
        return Ok(Value::opaque("a TensorArray filled from a value tracelens does not follow"));
    };
    let rows = t.aval.shape[0];
    let len = ta.elements.borrow().len();
    let unstacking = at.is_none();
    let targets: Vec<usize> = match at {
        Some(at) if at.len() == rows => at,
        Some(_) => return Ok(Value::opaque("a TensorArray scattered with indices and rows that differ in number")),
        None => {
            if !ta.dynamic_size && rows > len {
                let msg = format!("Cannot unstack {rows} tensors into a TensorArray of static size {len} ");
                return Err(interp.raise("ValueError", Code::ShapeMismatch, msg));
            }
            (0..rows).collect()
        }
    };
    if let Some(&past) = targets.iter().find(|&&i| i >= len && !ta.dynamic_size) {
        let msg = format!("Tried to write to index {past} but array is not resizeable and size is: {len} ");
        return Err(interp.raise("OutOfRangeError", Code::PythonException, msg));
    }
    merge_element(interp, ta, &dims[1..])?;
    if unstacking {
        ta.elements.borrow_mut().clear();
    }
    for (k, i) in targets.into_iter().enumerate() {
        let row = super::tensor::getitem(interp, &t, &Value::Int(k as i64))?;
        let Value::Array(row) = row else { return Ok(Value::opaque("a TensorArray row tracelens does not follow")) };
        let mut elements = ta.elements.borrow_mut();
        if i >= elements.len() {
            elements.resize(i + 1, None);
        }
        elements[i] = Some(row);
    }
    Ok(written(ta))
}
