//! The models the interpreter runs with, as the interface `interp/model.rs` declares them
//! (`Models`): this crate owns both, so the interpreter names no model module for these entry
//! points and the models implement them here by calling their own functions.

use std::rc::Rc;

use crate::interp::call::Kwargs;
use crate::interp::model::array::{Array, NdData};
use crate::interp::model::tf::autograph::Staged;
use crate::interp::model::tf::partial::PartialTensor;
use crate::interp::model::{stmt, Autograph, Effects, EntryHooks, Models, PartialTensors, Statements, Tensors, TraceMemos, Values};
use crate::interp::value::{Function, Opaque, Value};
use crate::interp::{Ctx, FileId, Flow, Interp, PyResult};
use crate::syntax::ast::{BinOp, CmpOp, Expr, Stmt, UnaryOp};

/// The JAX model with the TensorFlow front end and the entry-point hooks.
pub(crate) struct JaxAndTf;

/// What `Interp::new` is given by `analysis.rs` and `run.rs`.
pub(crate) static MODELS: JaxAndTf = JaxAndTf;

impl Models for JaxAndTf {}

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
