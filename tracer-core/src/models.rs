//! The models the interpreter runs with, as the interface `interp/model.rs` declares them
//! (`Models`): this crate owns both, so the interpreter names no model module for these entry
//! points and the models implement them here by calling their own functions.

use std::rc::Rc;

use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::model::array::{Array, NdData};
use crate::interp::model::dtypes::DType;
use crate::interp::model::numpy::{Numpy, Operand};
use crate::interp::model::surface::JaxFn;
use crate::interp::model::tf::autograph::Staged;
use crate::interp::model::tf::partial::PartialTensor;
use crate::interp::model::{
    stmt, Autograph, Effects, EntryHooks, JaxObjects, ModelTypes, Models, PartialTensors, Statements, Tensors, TfObjects, TheModels,
    TraceMemos, Values,
};
use crate::interp::value::{Function, Opaque, Value};
use crate::interp::{Ctx, FileId, Flow, Interp, PyResult};
use crate::jax::api::JaxObject;
use crate::jax::aval::Shape;
use crate::jax::dtypes::{DTypeConfig, WeakDType};
use crate::syntax::ast::{BinOp, CmpOp, Expr, Stmt, UnaryOp};
use crate::tf::TfValue;

/// The JAX model with the TensorFlow front end and the entry-point hooks.
pub(crate) struct JaxAndTf;

/// What `Interp::new` is given by `analysis.rs` and `run.rs`.
pub(crate) static MODELS: JaxAndTf = JaxAndTf;

impl Models for JaxAndTf {}

impl JaxObjects for JaxAndTf {
    fn jax_call_fn(&self, interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::jax::api::call_jax_fn(interp, f, args, kwargs)
    }

    fn jax_call_object(&self, interp: &mut Interp, o: &JaxObject, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::jax::api::call_jax_object(interp, o, args, kwargs)
    }

    fn jax_call_object_method(&self, interp: &mut Interp, o: &JaxObject, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::jax::api::call_object_method(interp, o, name, args, kwargs)
    }

    fn jax_isinstance(&self, v: &Value, f: JaxFn) -> Option<bool> {
        crate::jax::api::isinstance_jax(v, f)
    }

    fn jax_struct_eq(&self, l: &Value, r: &Value) -> Option<bool> {
        crate::jax::numpy::shape_dtype_struct_eq(l, r)
    }

    fn jax_fn_getattr(&self, interp: &mut Interp, f: JaxFn, name: &str) -> PyResult<Option<Value>> {
        crate::jax::api::jax_fn_getattr(interp, f, name)
    }

    fn jax_object_getattr(&self, interp: &mut Interp, b: &Rc<Builtin>, o: &JaxObject, name: &str) -> PyResult<Option<Value>> {
        crate::jax::api::object_getattr(interp, b, o, name)
    }

    fn jax_at_getitem(&self, array: &Rc<Array>, index: Value) -> Value {
        crate::jax::api::at_getitem(array, index)
    }
}

impl TfObjects for JaxAndTf {
    fn tf_call(&self, interp: &mut Interp, t: &TfValue, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::tf::call(interp, t, args, kwargs)
    }

    fn tf_call_method(&self, interp: &mut Interp, t: &TfValue, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::tf::call_method(interp, t, name, args, kwargs)
    }

    fn tf_getattr(&self, interp: &mut Interp, t: &TfValue, name: &str) -> PyResult<Option<Value>> {
        crate::tf::getattr(interp, t, name)
    }

    fn tf_getitem(&self, interp: &mut Interp, t: &TfValue, idx: &Value) -> PyResult<Value> {
        crate::tf::getitem(interp, t, idx)
    }

    fn tf_text(&self, interp: &mut Interp, t: &TfValue, repr: bool) -> PyResult<String> {
        crate::tf::text(interp, t, repr)
    }

    fn tf_isinstance(&self, v: &Value, class: &TfValue) -> Option<bool> {
        crate::tf::isinstance(v, class)
    }

    fn tf_module_attr(&self, interp: &mut Interp, module: &str, name: &str) -> Option<Value> {
        crate::tf::module_attr(interp, module, name)
    }

    fn tf_in_graph(&self, interp: &Interp) -> bool {
        crate::tf::in_graph(interp)
    }

    fn tf_dtype_attr(&self, d: DType, name: &str) -> Value {
        crate::tf::dtype_attr(d, name)
    }
}

impl Effects for JaxAndTf {
    fn on_print(&self, interp: &mut Interp, args: &[Value]) -> PyResult<()> {
        crate::jax::effects::on_print(interp, args)
    }

    fn on_next(&self, interp: &mut Interp, it: &Value) -> PyResult<()> {
        crate::jax::effects::on_next(interp, it)
    }

    fn on_impure_call(&self, interp: &mut Interp, what: &str) {
        crate::jax::effects::on_impure_call(interp, what)
    }
}

impl Statements for JaxAndTf {
    fn recording(&self, interp: &Interp) -> Option<usize> {
        crate::jax::stmt::recording(interp)
    }

    fn recorded(
        &self,
        interp: &mut Interp,
        call: stmt::Call,
        args: &[&Value],
        kwargs: &Kwargs,
        f: &mut dyn FnMut(&mut Interp) -> PyResult<Value>,
    ) -> PyResult<Value> {
        crate::jax::stmt::recorded(interp, call.into(), args, kwargs, f)
    }
}

impl Values for JaxAndTf {
    fn force(&self, array: &Rc<Array>, max_elements: u64) -> Option<Rc<NdData>> {
        crate::jax::eval::force(array, max_elements)
    }
}

impl TraceMemos for JaxAndTf {
    fn note_read(&self, interp: &mut Interp, file: FileId, name: &str, found: Option<&Value>) {
        crate::jax::memo::note_read(interp, file, name, found)
    }

    fn note_call(&self, interp: &mut Interp, f: &Function) {
        crate::jax::memo::note_call(interp, f)
    }
}

impl PartialTensors for JaxAndTf {
    fn partial_truth(&self, interp: &mut Interp, what: &str) -> PyResult<bool> {
        crate::tf::partial::truth(interp, what)
    }

    fn partial_iterate(&self, interp: &mut Interp, p: &PartialTensor) -> PyResult<Vec<Value>> {
        crate::tf::partial::iterate(interp, p)
    }

    fn none_dimension_error(&self, interp: &Interp, message: &str) -> Option<Flow> {
        crate::tf::partial::none_dimension_error(interp, message)
    }
}

impl EntryHooks for JaxAndTf {
    fn call_opaque(&self, interp: &mut Interp, callee: &Rc<Opaque>, args: &[Value], kwargs: &Kwargs) -> Option<PyResult<Value>> {
        crate::entry_hooks::call_opaque(interp, callee, args, kwargs)
    }

    fn getattr_opaque(&self, interp: &mut Interp, obj: &Rc<Opaque>, name: &str) -> Option<Value> {
        crate::entry_hooks::getattr_opaque(interp, obj, name)
    }

    fn decided_by_command_line(&self, interp: &Interp, reads_before: Option<u64>) -> bool {
        crate::entry_hooks::decided_by_command_line(interp, reads_before)
    }

    fn expects_exception(&self, manager: &Value) -> bool {
        crate::entry_hooks::expects_exception(manager)
    }

    fn handed_to_unknown(&self, interp: &Interp, value: &Value) {
        crate::entry_hooks::handed_to_unknown(interp, [value])
    }
}

impl Autograph for JaxAndTf {
    fn autograph_take(&self, interp: &mut Interp, flow: &Flow) -> Option<Staged> {
        crate::tf::autograph::take(interp, flow)
    }

    fn autograph_if(&self, interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: Staged) -> PyResult<bool> {
        crate::tf::autograph::if_stmt(interp, ctx, stmt, staged)
    }

    fn autograph_while(&self, interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: Staged) -> PyResult<bool> {
        crate::tf::autograph::while_stmt(interp, ctx, stmt, staged)
    }

    fn autograph_for(&self, interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: Staged) -> PyResult<bool> {
        crate::tf::autograph::for_stmt(interp, ctx, stmt, staged)
    }

    fn autograph_function_ends(&self, interp: &mut Interp, ran: PyResult<()>) -> PyResult<()> {
        crate::tf::autograph::function_ends(interp, ran)
    }
}

impl Tensors for JaxAndTf {
    fn tensor_binary_operator(&self, interp: &mut Interp, op: BinOp, l: &Value, r: &Value) -> PyResult<Value> {
        crate::tf::tensor::binary_operator(interp, op, l, r)
    }

    fn tensor_compare_operator(&self, interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value> {
        crate::tf::tensor::compare_operator(interp, op, l, r)
    }

    fn tensor_unary_operator(&self, interp: &mut Interp, op: UnaryOp, a: &Rc<Array>) -> PyResult<Value> {
        crate::tf::tensor::unary_operator(interp, op, a)
    }

    fn tensor_truth(&self, interp: &mut Interp, a: &Rc<Array>, what: &str, expr: Option<&Expr>) -> PyResult<bool> {
        crate::tf::tensor::truth(interp, a, what, expr)
    }

    fn tensor_python_conversion(&self, interp: &mut Interp, name: &str, v: &Value) -> PyResult<Option<Value>> {
        crate::tf::tensor::python_conversion(interp, name, v)
    }

    fn tensor_iterate(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<Vec<Value>> {
        crate::tf::tensor::iterate(interp, a)
    }

    fn tensor_getattr(&self, interp: &mut Interp, a: &Rc<Array>, name: &str) -> PyResult<Option<Value>> {
        crate::tf::tensor::getattr(interp, a, name)
    }

    fn tensor_call_method(&self, interp: &mut Interp, a: &Rc<Array>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::tf::tensor::call_method(interp, a, name, args, kwargs)
    }

    fn tensor_getitem(&self, interp: &mut Interp, a: &Rc<Array>, idx: &Value) -> PyResult<Value> {
        crate::tf::tensor::getitem(interp, a, idx)
    }

    fn tensor_item_assignment(&self, interp: &Interp, a: &Array) -> Flow {
        crate::tf::tensor::item_assignment(interp, a)
    }

    fn tensor_str(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
        crate::tf::tensor::str(interp, a)
    }

    fn tensor_repr(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
        crate::tf::tensor::repr(interp, a)
    }

    fn tensor_shape_items(&self, dims: &[Option<usize>]) -> Vec<Value> {
        crate::tf::tensor::shape_items(dims)
    }
}

impl Numpy for JaxAndTf {
    fn numpy_in_numpy_mode(
        &self,
        interp: &mut Interp,
        operands: &[&Value],
        f: &mut dyn FnMut(&mut Interp) -> PyResult<Value>,
    ) -> PyResult<Value> {
        crate::jax::numpy::in_numpy_mode(interp, operands, f)
    }

    fn numpy_abs(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<Value> {
        crate::jax::numpy::abs(interp, a)
    }

    fn numpy_array_bool(&self, interp: &mut Interp, a: &Rc<Array>, what: &str, expr: Option<&Expr>) -> PyResult<bool> {
        crate::jax::numpy::array_bool(interp, a, what, expr)
    }

    fn numpy_array_format(&self, interp: &mut Interp, a: &Rc<Array>, spec: &str) -> PyResult<String> {
        crate::jax::numpy::array_format(interp, a, spec)
    }

    fn numpy_array_getattr(&self, interp: &mut Interp, a: &Rc<Array>, name: &str) -> PyResult<Option<Value>> {
        crate::jax::numpy::array_getattr(interp, a, name)
    }

    fn numpy_array_index(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<i64> {
        crate::jax::numpy::array_index(interp, a)
    }

    fn numpy_array_repr(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
        crate::jax::numpy::array_repr(interp, a)
    }

    fn numpy_array_str(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
        crate::jax::numpy::array_str(interp, a)
    }

    fn numpy_array_to_float(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<Value> {
        crate::jax::numpy::array_to_float(interp, a)
    }

    fn numpy_array_to_python(&self, interp: &mut Interp, a: &Rc<Array>, func: &str) -> PyResult<Value> {
        crate::jax::numpy::array_to_python(interp, a, func)
    }

    fn numpy_binary_op(&self, interp: &mut Interp, op: BinOp, l: &Value, r: &Value) -> PyResult<Value> {
        crate::jax::numpy::binary_op(interp, op, l, r)
    }

    fn numpy_broadcast_shapes(&self, shapes: &[&[usize]]) -> Result<Shape, String> {
        crate::jax::numpy::broadcast_shapes(shapes)
    }

    fn numpy_call(&self, interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::jax::numpy::call(interp, f, args, kwargs)
    }

    fn numpy_call_array_method(&self, interp: &mut Interp, a: &Rc<Array>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::jax::numpy::call_array_method(interp, a, name, args, kwargs)
    }

    fn numpy_compare_op(&self, interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value> {
        crate::jax::numpy::compare_op(interp, op, l, r)
    }

    fn numpy_dtype_arg(&self, interp: &mut Interp, v: Option<&Value>) -> PyResult<Option<DType>> {
        crate::jax::numpy::dtype_arg(interp, v)
    }

    fn numpy_dtype_call(&self, interp: &mut Interp, d: DType, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        crate::jax::numpy::dtype_call(interp, d, args, kwargs)
    }

    fn numpy_getitem(&self, interp: &mut Interp, a: &Rc<Array>, idx: &Value) -> PyResult<Value> {
        crate::jax::numpy::getitem(interp, a, idx)
    }

    fn numpy_immutable_update_error(&self, interp: &mut Interp, a: &Rc<Array>) -> Flow {
        crate::jax::numpy::immutable_update_error(interp, a)
    }

    fn numpy_index_error_from_tracer(&self, interp: &mut Interp, a: &Rc<Array>) -> Flow {
        crate::jax::numpy::index_error_from_tracer(interp, a)
    }

    fn numpy_iterate_array(&self, interp: &mut Interp, a: &Rc<Array>) -> PyResult<Vec<Value>> {
        crate::jax::numpy::iterate_array(interp, a)
    }

    fn numpy_mark_numpy(&self, v: Value) -> Value {
        crate::jax::numpy::mark_numpy(v)
    }

    fn numpy_note_captured_constant(&self, interp: &mut Interp, a: &Rc<Array>) {
        crate::jax::numpy::note_captured_constant(interp, a)
    }

    fn numpy_numpy_conversion_error(&self, interp: &mut Interp, a: &Rc<Array>) -> Flow {
        crate::jax::numpy::numpy_conversion_error(interp, a)
    }

    fn numpy_numpy_setitem(&self, interp: &mut Interp, a: &Rc<Array>, idx: &Value, value: &Value) -> PyResult<bool> {
        crate::jax::numpy::numpy_setitem(interp, a, idx, value)
    }

    fn numpy_numpy_store_error(&self, interp: &mut Interp, dest: &Rc<Array>, idx: &Value, v: &Rc<Array>) -> Flow {
        crate::jax::numpy::numpy_store_error(interp, dest, idx, v)
    }

    fn numpy_operand(&self, interp: &mut Interp, v: &Value) -> PyResult<Operand> {
        crate::jax::numpy::operand(interp, v)
    }

    fn numpy_promote(&self, operands: &[WeakDType], c: DTypeConfig) -> WeakDType {
        crate::jax::numpy::promote(operands, c)
    }

    fn numpy_python_bool(&self, interp: &mut Interp, v: &Value, what: &str) -> PyResult<bool> {
        crate::jax::numpy::python_bool(interp, v, what)
    }

    fn numpy_round(&self, interp: &mut Interp, a: &Rc<Array>, digits: Option<Value>) -> PyResult<Value> {
        crate::jax::numpy::round(interp, a, digits)
    }

    fn numpy_unary_op(&self, interp: &mut Interp, op: UnaryOp, a: &Rc<Array>) -> PyResult<Value> {
        crate::jax::numpy::unary_op(interp, op, a)
    }

    fn numpy_unknown_tracer_bool(&self, interp: &mut Interp, what: &str, expr: Option<&Expr>) -> Flow {
        crate::jax::numpy::unknown_tracer_bool(interp, what, expr)
    }

    fn numpy_unknown_tracer_to_python(&self, interp: &mut Interp, func: &str) -> Flow {
        crate::jax::numpy::unknown_tracer_to_python(interp, func)
    }
}

impl ModelTypes for TheModels {
    type JaxState = crate::jax::JaxState;
    type TfState = crate::tf::TfState;
    type JaxObject = crate::jax::api::JaxObject;
    type TfObject = crate::tf::TfValue;
}
