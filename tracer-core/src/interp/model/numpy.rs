//! Arrays where Python meets them (`jax/numpy/`), as the interpreter reaches them: through
//! `Models` (`Numpy`): operators, truth, conversions, printing, attributes, items and
//! iteration, jnp's calls, dtypes called as functions, NumPy mode and the errors of each.

use std::rc::Rc;

use super::super::call::Kwargs;
use super::super::value::Value;
use super::super::{Flow, Interp, PyResult};
use super::array::Array;
use super::aval::Shape;
use super::dtypes::DType;
use super::dtypes::{DTypeConfig, WeakDType};
use super::surface::JaxFn;
use crate::syntax::ast::{BinOp, CmpOp, Expr, UnaryOp};

/// A value as a jnp operand: an array, or something unknown (the result is then unknown).
pub enum Operand {
    Array(Rc<Array>),
    Unknown,
}

/// What the interpreter asks of the JAX model's arrays; the wrappers below are its
/// callers' names for it.
pub(crate) trait Numpy {
    /// Runs `f` (once) as NumPy computes when every array of `operands` is a NumPy array.
    fn numpy_in_numpy_mode(
        &self,
        interp: &mut Interp,
        operands: &[&Value],
        f: &mut dyn FnMut(&mut Interp) -> PyResult<Value>,
    ) -> PyResult<Value>;
    fn numpy_abs(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<Value>;
    fn numpy_array_bool(&self, interp: &mut Interp, a: &Rc<Array>, what: &str, expr: Option<&Expr>) -> PyResult<bool>;
    fn numpy_array_format(&self, interp: &mut Interp, a: &Rc<Array>, spec: &str) -> PyResult<String>;
    fn numpy_array_getattr(&self, interp: &mut Interp, a: &Rc<Array>, name: &str) -> PyResult<Option<Value>>;
    fn numpy_array_index(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<i64>;
    fn numpy_array_repr(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<String>;
    fn numpy_array_str(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<String>;
    fn numpy_array_to_float(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<Value>;
    fn numpy_array_to_python(&self, interp: &mut Interp, a: &Rc<Array>, func: &str) -> PyResult<Value>;
    fn numpy_binary_op(&self, interp: &mut Interp, op: BinOp, l: &Value, r: &Value) -> PyResult<Value>;
    fn numpy_broadcast_shapes(&self, shapes: &[&[usize]]) -> Result<Shape, String>;
    fn numpy_call(&self, interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value>;
    fn numpy_call_array_method(&self, interp: &mut Interp, a: &Rc<Array>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value>;
    fn numpy_compare_op(&self, interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value>;
    fn numpy_dtype_arg(&self, interp: &mut Interp, v: Option<&Value>) -> PyResult<Option<DType>>;
    fn numpy_dtype_call(&self, interp: &mut Interp, d: DType, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value>;
    fn numpy_getitem(&self, interp: &mut Interp, a: &Rc<Array>, idx: &Value) -> PyResult<Value>;
    fn numpy_immutable_update_error(&self, interp: &mut Interp, a: &Rc<Array>) -> Flow;
    fn numpy_index_error_from_tracer(&self, interp: &mut Interp, a: &Rc<Array>) -> Flow;
    fn numpy_iterate_array(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<Vec<Value>>;
    fn numpy_mark_numpy(&self, v: Value) -> Value;
    fn numpy_note_captured_constant(&self, interp: &mut Interp, a: &Rc<Array>);
    fn numpy_numpy_conversion_error(&self, interp: &mut Interp, a: &Rc<Array>) -> Flow;
    fn numpy_numpy_setitem(&self, interp: &mut Interp, a: &Rc<Array>, idx: &Value, value: &Value) -> PyResult<bool>;
    fn numpy_numpy_store_error(&self, interp: &mut Interp, dest: &Rc<Array>, idx: &Value, v: &Rc<Array>) -> Flow;
    fn numpy_operand(&self, interp: &mut Interp, v: &Value) -> PyResult<Operand>;
    fn numpy_promote(&self, operands: &[WeakDType], c: DTypeConfig) -> WeakDType;
    fn numpy_python_bool(&self, interp: &mut Interp, v: &Value, what: &str) -> PyResult<bool>;
    fn numpy_round(&self, interp: &mut Interp, a: &Rc<Array>, digits: Option<Value>) -> PyResult<Value>;
    fn numpy_unary_op(&self, interp: &mut Interp, op: UnaryOp, a: &Rc<Array>) -> PyResult<Value>;
    fn numpy_unknown_tracer_bool(&self, interp: &mut Interp, what: &str, expr: Option<&Expr>) -> Flow;
    fn numpy_unknown_tracer_to_python(&self, interp: &mut Interp, func: &str) -> Flow;
}

pub(crate) fn in_numpy_mode(interp: &mut Interp, operands: &[&Value], f: impl FnOnce(&mut Interp) -> PyResult<Value>) -> PyResult<Value> {
    let models = interp.models;
    let mut f = Some(f);
    // The model runs `f` exactly once; a second call would find it gone and run nothing.
    models.numpy_in_numpy_mode(interp, operands, &mut |this| f.take().map_or(Ok(Value::None), |f| f(this)))
}

pub(crate) fn abs(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_abs(interp, a)
}

pub(crate) fn array_bool(interp: &mut Interp, a: &Rc<Array>, what: &str, expr: Option<&Expr>) -> PyResult<bool> {
    let models = interp.models;
    models.numpy_array_bool(interp, a, what, expr)
}

pub(crate) fn array_format(interp: &mut Interp, a: &Rc<Array>, spec: &str) -> PyResult<String> {
    let models = interp.models;
    models.numpy_array_format(interp, a, spec)
}

pub(crate) fn array_getattr(interp: &mut Interp, a: &Rc<Array>, name: &str) -> PyResult<Option<Value>> {
    let models = interp.models;
    models.numpy_array_getattr(interp, a, name)
}

pub(crate) fn array_index(interp: &mut Interp, a: &Rc<Array>) -> PyResult<i64> {
    let models = interp.models;
    models.numpy_array_index(interp, a)
}

pub(crate) fn array_repr(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    let models = interp.models;
    models.numpy_array_repr(interp, a)
}

pub(crate) fn array_str(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
    let models = interp.models;
    models.numpy_array_str(interp, a)
}

pub(crate) fn array_to_float(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_array_to_float(interp, a)
}

pub(crate) fn array_to_python(interp: &mut Interp, a: &Rc<Array>, func: &str) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_array_to_python(interp, a, func)
}

pub(crate) fn binary_op(interp: &mut Interp, op: BinOp, l: &Value, r: &Value) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_binary_op(interp, op, l, r)
}

pub(crate) fn broadcast_shapes(interp: &Interp, shapes: &[&[usize]]) -> Result<Shape, String> {
    interp.models.numpy_broadcast_shapes(shapes)
}

pub(crate) fn call(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_call(interp, f, args, kwargs)
}

pub(crate) fn call_array_method(interp: &mut Interp, a: &Rc<Array>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_call_array_method(interp, a, name, args, kwargs)
}

pub(crate) fn compare_op(interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_compare_op(interp, op, l, r)
}

pub(crate) fn dtype_arg(interp: &mut Interp, v: Option<&Value>) -> PyResult<Option<DType>> {
    let models = interp.models;
    models.numpy_dtype_arg(interp, v)
}

pub(crate) fn dtype_call(interp: &mut Interp, d: DType, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_dtype_call(interp, d, args, kwargs)
}

pub(crate) fn getitem(interp: &mut Interp, a: &Rc<Array>, idx: &Value) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_getitem(interp, a, idx)
}

pub(crate) fn immutable_update_error(interp: &mut Interp, a: &Rc<Array>) -> Flow {
    let models = interp.models;
    models.numpy_immutable_update_error(interp, a)
}

pub(crate) fn index_error_from_tracer(interp: &mut Interp, a: &Rc<Array>) -> Flow {
    let models = interp.models;
    models.numpy_index_error_from_tracer(interp, a)
}

pub(crate) fn iterate_array(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Vec<Value>> {
    let models = interp.models;
    models.numpy_iterate_array(interp, a)
}

pub(crate) fn mark_numpy(interp: &Interp, v: Value) -> Value {
    interp.models.numpy_mark_numpy(v)
}

pub(crate) fn note_captured_constant(interp: &mut Interp, a: &Rc<Array>) {
    let models = interp.models;
    models.numpy_note_captured_constant(interp, a)
}

pub(crate) fn numpy_conversion_error(interp: &mut Interp, a: &Rc<Array>) -> Flow {
    let models = interp.models;
    models.numpy_numpy_conversion_error(interp, a)
}

pub(crate) fn numpy_setitem(interp: &mut Interp, a: &Rc<Array>, idx: &Value, value: &Value) -> PyResult<bool> {
    let models = interp.models;
    models.numpy_numpy_setitem(interp, a, idx, value)
}

pub(crate) fn numpy_store_error(interp: &mut Interp, dest: &Rc<Array>, idx: &Value, v: &Rc<Array>) -> Flow {
    let models = interp.models;
    models.numpy_numpy_store_error(interp, dest, idx, v)
}

pub(crate) fn operand(interp: &mut Interp, v: &Value) -> PyResult<Operand> {
    let models = interp.models;
    models.numpy_operand(interp, v)
}

pub(crate) fn promote(interp: &Interp, operands: &[WeakDType], c: DTypeConfig) -> WeakDType {
    interp.models.numpy_promote(operands, c)
}

pub(crate) fn python_bool(interp: &mut Interp, v: &Value, what: &str) -> PyResult<bool> {
    let models = interp.models;
    models.numpy_python_bool(interp, v, what)
}

pub(crate) fn round(interp: &mut Interp, a: &Rc<Array>, digits: Option<Value>) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_round(interp, a, digits)
}

pub(crate) fn unary_op(interp: &mut Interp, op: UnaryOp, a: &Rc<Array>) -> PyResult<Value> {
    let models = interp.models;
    models.numpy_unary_op(interp, op, a)
}

pub(crate) fn unknown_tracer_bool(interp: &mut Interp, what: &str, expr: Option<&Expr>) -> Flow {
    let models = interp.models;
    models.numpy_unknown_tracer_bool(interp, what, expr)
}

pub(crate) fn unknown_tracer_to_python(interp: &mut Interp, func: &str) -> Flow {
    let models = interp.models;
    models.numpy_unknown_tracer_to_python(interp, func)
}
