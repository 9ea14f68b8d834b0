//! The models as the interpreter sees them: the one file of `interp/` that names `crate::jax`,
//! `crate::tf` or `crate::entry_hooks`, listing what the interpreter takes from each. The
//! interpreter holds arrays (`Array`, their `Aval` and `DType`), the models' state (`JaxState`,
//! `TfState`; values mode's and the entry-point hooks' are its own) and the models' objects
//! (`JaxObject`, `TfObject`), the last four as the types `ModelTypes` names, which the crate's
//! `models.rs` chooses, so holding them names no model module; it reads the state through
//! `model/state.rs` alone and an object through its view trait (`JaxObjectView`,
//! `TfObjectView`). Everything it asks of a model goes through the `Models` traits below
//! (implemented by `models.rs`, reached through `Interp::models`): the trace-time effects,
//! recorded statements, values and memo notes of the JAX model, where Python meets an array
//! (`numpy`, in `model/numpy.rs`), a tensor (`tf::tensor`, `tf::partial`), a JAX object
//! (`api`) or a TensorFlow one (`tf`), AutoGraph's staged statements (`tf::autograph`) and
//! unknown libraries' calls (`entry_hooks`); their wrappers keep the module names the callers
//! use. So this file names only leaves of the models (the array layer: `array`, `aval`,
//! `dtypes`, `surface`, `errors`' table, `print`, `tf::names`, `tf::partial_tensor`,
//! `tf::shape_text`), and no import circle joins `interp/` to the models
//! (tests/architecture.rs). A new need of the interpreter is a new line here, which a review sees.

use super::call::Kwargs;
use super::value::Value;
use super::{Interp, PyResult};
use std::rc::Rc;

use crate::syntax::ast::{BinOp, CmpOp, Expr, Stmt, UnaryOp};

/// What the interpreter asks of the models through an interface it owns rather than a module
/// it names: the crate's `models.rs` implements it over `jax/` and `tf/` and hands it to
/// `Interp::new` (`Interp::models`). `effects`, `eval`, `memo`, `stmt` and `tf::partial` below
/// are its callers' names for it.
pub(crate) trait Models:
    Effects + Statements + Values + TraceMemos + PartialTensors + EntryHooks + Autograph + Tensors + numpy::Numpy + JaxObjects + TfObjects
{
}

/// The types of the models' state and objects the interpreter holds, named without naming a
/// model module: the crate's `models.rs` chooses them for `TheModels`, as it chooses the
/// `Models` the interpreter calls. The interpreter keeps them and hands them back; what it
/// asks of an object is its view trait below (`JaxObjectView`, `TfObjectView`) or a method of
/// `Models`. The compiler resolves `<TheModels as ModelTypes>::JaxState` to the model's type
/// wherever it is used, so holding them costs nothing on the models' hot paths
/// (`interp.jax.traces` is a field read, as before) and needs no downcast.
pub trait ModelTypes {
    /// The JAX model's state (`Interp::jax`): its traces, records, jit cache and config.
    type JaxState: Default;
    /// The TensorFlow front end's state (`Interp::tf`): the `tf.function` traces being run.
    type TfState: Default;
    /// A callable or helper object of JAX's API (`Builtin::Object`): a jitted function,
    /// `x.at[i]`, a PyTreeDef.
    type JaxObject: JaxObjectView + std::fmt::Debug;
    /// An object of TensorFlow's API that is not a tensor (`Builtin::Tf`).
    type TfObject: TfObjectView + Clone + std::fmt::Debug;
}

/// The models this crate runs with: `models.rs` implements `ModelTypes` for it.
pub enum TheModels {}

/// The JAX model's state, as the interpreter holds it (`Interp::jax`).
pub(crate) type JaxState = <TheModels as ModelTypes>::JaxState;
/// The TensorFlow front end's state, as the interpreter holds it (`Interp::tf`).
pub(crate) type TfState = <TheModels as ModelTypes>::TfState;
/// A JAX object, as `Builtin::Object` holds it.
pub(crate) type JaxObject = <TheModels as ModelTypes>::JaxObject;
/// A TensorFlow object, as `Builtin::Tf` holds it.
pub(crate) type TfObject = <TheModels as ModelTypes>::TfObject;

/// What the interpreter reads of a JAX object itself.
pub trait JaxObjectView {
    /// `x.at`: the array it indexes (`x.at[i]` is then `Models::jax_at_getitem`).
    fn at_array(&self) -> Option<&Rc<array::Array>>;
    /// Whether two PyTreeDefs have one structure (`Some(None)`: not known); `None` when
    /// either object is not a PyTreeDef.
    fn treedefs_equal(&self, other: &Self) -> Option<Option<bool>>;
    /// `str(obj)` where JAX's text is modelled (`Some(None)`: an object of a kind with a text
    /// that this one's is not known); `None` for the other objects.
    fn python_text(&self) -> Option<Option<String>>;
}

/// What the interpreter reads of a TensorFlow object itself.
pub trait TfObjectView {
    /// A `TensorShape`'s dimensions (`None` where a trace does not know one).
    fn shape_dims(&self) -> Option<&Rc<Vec<Option<usize>>>>;
    /// A symbolic tensor whose shape is known only in part.
    fn partial(&self) -> Option<&Rc<tf::partial::PartialTensor>>;
    /// A `tf.GradientTape`, which `with` enters and exits.
    fn is_tape(&self) -> bool;
    /// A variable or a partly known tensor: a tensor to Python's operators.
    fn is_tensor_like(&self) -> bool;
    /// A `tf.IndexedSlices` (`-g` is one too; other operators raise).
    fn is_indexed_slices(&self) -> bool;
    /// A method of a `tf.function` (`f.get_concrete_function`), which takes the instance
    /// first when the function is a method reached through its instance.
    fn is_function_method(&self) -> bool;
    /// The class `type(v)` names for a variable, a partly known tensor or an `IndexedSlices`
    /// (`tf_classes.rs`); `None` for other objects.
    fn class_name(&self) -> Option<&'static str>;
}

/// JAX's API functions (`jax.jit`, `jnp.sum`) and objects (a jitted function, `x.at[i]`)
/// where Python calls them, reads their attributes or indexes them; `api` below is its
/// callers' name for it.
pub(crate) trait JaxObjects {
    fn jax_call_fn(&self, interp: &mut Interp, f: surface::JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value>;
    fn jax_call_object(&self, interp: &mut Interp, o: &JaxObject, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value>;
    fn jax_call_object_method(&self, interp: &mut Interp, o: &JaxObject, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value>;
    /// `isinstance(v, f)` for the classes of JAX's surface (`jax.Array`); `None` when not known.
    fn jax_isinstance(&self, v: &Value, f: surface::JaxFn) -> Option<bool>;
    /// `l == r` when either is a `jax.ShapeDtypeStruct`; `None` when neither is.
    fn jax_struct_eq(&self, l: &Value, r: &Value) -> Option<bool>;
    fn jax_fn_getattr(&self, interp: &mut Interp, f: surface::JaxFn, name: &str) -> PyResult<Option<Value>>;
    /// An attribute of the JAX object `o` (`b` is the builtin holding it); `None` is Python's
    /// AttributeError.
    fn jax_object_getattr(
        &self,
        interp: &mut Interp,
        b: &Rc<super::builtins::Builtin>,
        o: &JaxObject,
        name: &str,
    ) -> PyResult<Option<Value>>;
    /// `x.at[index]`.
    fn jax_at_getitem(&self, array: &Rc<array::Array>, index: Value) -> Value;
}

/// TensorFlow's API functions and objects that are not tensors (`tf.function`, a variable,
/// a `TensorShape`, a tape) where Python calls them, reads their attributes, indexes or prints
/// them; `tf` below is its callers' name for it.
pub(crate) trait TfObjects {
    fn tf_call(&self, interp: &mut Interp, t: &TfObject, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value>;
    fn tf_call_method(&self, interp: &mut Interp, t: &TfObject, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value>;
    /// `t.name`; `None` is Python's AttributeError.
    fn tf_getattr(&self, interp: &mut Interp, t: &TfObject, name: &str) -> PyResult<Option<Value>>;
    /// `t[idx]`: a shape's dimensions, a variable's value.
    fn tf_getitem(&self, interp: &mut Interp, t: &TfObject, idx: &Value) -> PyResult<Value>;
    /// `str(t)`, or `repr(t)` when `repr`.
    fn tf_text(&self, interp: &mut Interp, t: &TfObject, repr: bool) -> PyResult<String>;
    /// `isinstance(v, class)` for the classes of TensorFlow's surface; `None` when not known.
    fn tf_isinstance(&self, v: &Value, class: &TfObject) -> Option<bool>;
    /// `tf.<name>` (of the modelled module `module`); `None` for what TensorFlow does not have.
    fn tf_module_attr(&self, interp: &mut Interp, module: &str, name: &str) -> Option<Value>;
    /// Whether an active trace is a `tf.function`'s: TensorFlow builds a graph there.
    fn tf_in_graph(&self, interp: &Interp) -> bool;
    /// An attribute of a `tf.DType` (`tf.float32.name`, `t.dtype.is_floating`), as
    /// TensorFlow 2.21 has them.
    fn tf_dtype_attr(&self, d: dtypes::DType, name: &str) -> Value;
}

/// The trace-time effects the JAX model reports (TL201, TL203, TL204).
pub(crate) trait Effects {
    /// `print(...)` ran.
    fn on_print(&self, interp: &mut Interp, args: &[Value]) -> PyResult<()>;
    /// `next(it)` ran.
    fn on_next(&self, interp: &mut Interp, it: &Value) -> PyResult<()>;
    /// Python-level randomness or time was read (`random.random()`).
    fn on_impure_call(&self, interp: &mut Interp, what: &str);
}

/// The values of concrete arrays, as the JAX model's evaluator computes them.
pub(crate) trait Values {
    /// `array`'s elements, when they are computed or computable within `max_elements`.
    fn force(&self, array: &std::rc::Rc<array::Array>, max_elements: u64) -> Option<std::rc::Rc<array::NdData>>;
}

/// What the jit trace being recorded for the editor's memo of traces depends on.
pub(crate) trait TraceMemos {
    /// A function of `file` looked a name up: `found` among the module's globals, or
    /// (`None`) among the builtins.
    fn note_read(&self, interp: &mut Interp, file: super::FileId, name: &str, found: Option<&Value>);
    /// The trace ran `f`.
    fn note_call(&self, interp: &mut Interp, f: &super::value::Function);
}

/// Symbolic tensors whose shape TensorFlow knows only in part, where Python meets them.
pub(crate) trait PartialTensors {
    /// Python truth of one (`if t:`).
    fn partial_truth(&self, interp: &mut Interp, what: &str) -> PyResult<bool>;
    /// `for x in t:` over one.
    fn partial_iterate(&self, interp: &mut Interp, p: &tf::partial::PartialTensor) -> PyResult<Vec<Value>>;
    /// The `TypeError` of a `None` operand read from a tensor's shape in a `tf.function`
    /// trace (TL108); `None` elsewhere.
    fn none_dimension_error(&self, interp: &Interp, message: &str) -> Option<super::Flow>;
}

/// What the entry points of real projects need from libraries the interpreter does not
/// otherwise model (absl, pytest, argparse): the few calls and attributes answered.
pub(crate) trait EntryHooks {
    /// A call of an unknown library's function the hooks answer, else `None`.
    fn call_opaque(
        &self,
        interp: &mut Interp,
        callee: &std::rc::Rc<super::value::Opaque>,
        args: &[Value],
        kwargs: &Kwargs,
    ) -> Option<PyResult<Value>>;
    /// An attribute of an unknown library's object the hooks answer, else `None`.
    fn getattr_opaque(&self, interp: &mut Interp, obj: &std::rc::Rc<super::value::Opaque>, name: &str) -> Option<Value>;
    /// Whether a user's exception raised now is one whose outcome a command-line value
    /// decides (`reads_before`: the count of command-line reads before an `assert`'s test).
    fn decided_by_command_line(&self, interp: &Interp, reads_before: Option<u64>) -> bool;
    /// Whether the context manager `manager` expects its body to raise (`pytest.raises(E)`).
    fn expects_exception(&self, manager: &Value) -> bool;
    /// `value` is handed to code tracelens does not model (an unknown call's argument, an
    /// attribute stored on an unknown object), which may change what it holds.
    fn handed_to_unknown(&self, interp: &Interp, value: &Value);
}

/// AutoGraph, where converted code's `if`, `while` or `for` met a symbolic tensor.
pub(crate) trait Autograph {
    /// What made AutoGraph stage the statement that stopped with `flow`, if it converts it.
    fn autograph_take(&self, interp: &mut Interp, flow: &super::Flow) -> Option<tf::autograph::Staged>;
    /// Stages an `if` (`Ok(false)`: not one AutoGraph converts).
    fn autograph_if(&self, interp: &mut Interp, ctx: &super::Ctx, stmt: &Stmt, staged: tf::autograph::Staged) -> PyResult<bool>;
    /// Stages a `while` (`Ok(false)`: not one AutoGraph converts).
    fn autograph_while(&self, interp: &mut Interp, ctx: &super::Ctx, stmt: &Stmt, staged: tf::autograph::Staged) -> PyResult<bool>;
    /// Stages a `for` (`Ok(false)`: not one AutoGraph converts).
    fn autograph_for(&self, interp: &mut Interp, ctx: &super::Ctx, stmt: &Stmt, staged: tf::autograph::Staged) -> PyResult<bool>;
    /// A function with `return`s pending in one branch of a converted `if` ended with `ran`.
    fn autograph_function_ends(&self, interp: &mut Interp, ran: PyResult<()>) -> PyResult<()>;
}

/// TensorFlow's tensors where Python meets them: operators, truth, conversions, text,
/// attributes, items and iteration (`tf/tensor.rs`).
pub(crate) trait Tensors {
    fn tensor_binary_operator(&self, interp: &mut Interp, op: BinOp, l: &Value, r: &Value) -> PyResult<Value>;
    fn tensor_compare_operator(&self, interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value>;
    fn tensor_unary_operator(&self, interp: &mut Interp, op: UnaryOp, a: &Rc<array::Array>) -> PyResult<Value>;
    fn tensor_truth(&self, interp: &mut Interp, a: &Rc<array::Array>, what: &str, expr: Option<&Expr>) -> PyResult<bool>;
    /// `int(t)`, `float(t)`, `bool(t)`, ... of a tensor; `None` for a value that is not one.
    fn tensor_python_conversion(&self, interp: &mut Interp, name: &str, v: &Value) -> PyResult<Option<Value>>;
    fn tensor_iterate(&self, interp: &mut Interp, a: &Rc<array::Array>) -> PyResult<Vec<Value>>;
    fn tensor_getattr(&self, interp: &mut Interp, a: &Rc<array::Array>, name: &str) -> PyResult<Option<Value>>;
    fn tensor_call_method(
        &self,
        interp: &mut Interp,
        a: &Rc<array::Array>,
        name: &str,
        args: Vec<Value>,
        kwargs: Kwargs,
    ) -> PyResult<Value>;
    fn tensor_getitem(&self, interp: &mut Interp, a: &Rc<array::Array>, idx: &Value) -> PyResult<Value>;
    /// The error of `t[i] = x`.
    fn tensor_item_assignment(&self, interp: &Interp, a: &array::Array) -> super::Flow;
    fn tensor_str(&self, interp: &mut Interp, a: &Rc<array::Array>) -> PyResult<String>;
    fn tensor_repr(&self, interp: &mut Interp, a: &Rc<array::Array>) -> PyResult<String>;
    /// A `TensorShape`'s dimensions as Python sees them when it iterates it.
    fn tensor_shape_items(&self, dims: &[Option<usize>]) -> Vec<Value>;
}

/// The statements of user code a trace records for its reproducer.
pub(crate) trait Statements {
    /// The trace record a statement made now would belong to, if one is recording.
    fn recording(&self, interp: &Interp) -> Option<usize>;
    /// Runs `f` (once) as one statement of user code, recorded when a trace is recording.
    fn recorded(
        &self,
        interp: &mut Interp,
        call: stmt::Call,
        args: &[&Value],
        kwargs: &Kwargs,
        f: &mut dyn FnMut(&mut Interp) -> PyResult<Value>,
    ) -> PyResult<Value>;
}

/// JAX's API functions and objects where the interpreter calls them, reads their attributes
/// or indexes them (`jax/transforms/dispatch.rs`, `at.rs`), as it reaches them: through `Models`.
pub(crate) mod api {
    use std::rc::Rc;

    use super::super::builtins::Builtin;
    use super::super::call::Kwargs;
    use super::super::value::Value;
    use super::super::{Interp, PyResult};
    use super::array::Array;
    use super::surface::JaxFn;
    use super::JaxObject;

    pub(crate) fn call_jax_fn(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        let models = interp.models;
        models.jax_call_fn(interp, f, args, kwargs)
    }

    pub(crate) fn call_jax_object(interp: &mut Interp, o: &JaxObject, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        let models = interp.models;
        models.jax_call_object(interp, o, args, kwargs)
    }

    pub(crate) fn call_object_method(interp: &mut Interp, o: &JaxObject, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        let models = interp.models;
        models.jax_call_object_method(interp, o, name, args, kwargs)
    }

    pub(crate) fn isinstance_jax(interp: &Interp, v: &Value, f: JaxFn) -> Option<bool> {
        interp.models.jax_isinstance(v, f)
    }

    pub(crate) fn shape_dtype_struct_eq(interp: &Interp, l: &Value, r: &Value) -> Option<bool> {
        interp.models.jax_struct_eq(l, r)
    }

    pub(crate) fn jax_fn_getattr(interp: &mut Interp, f: JaxFn, name: &str) -> PyResult<Option<Value>> {
        let models = interp.models;
        models.jax_fn_getattr(interp, f, name)
    }

    pub(crate) fn object_getattr(interp: &mut Interp, b: &Rc<Builtin>, o: &JaxObject, name: &str) -> PyResult<Option<Value>> {
        let models = interp.models;
        models.jax_object_getattr(interp, b, o, name)
    }

    pub(crate) fn at_getitem(interp: &Interp, array: &Rc<Array>, index: Value) -> Value {
        interp.models.jax_at_getitem(array, index)
    }
}

pub(crate) mod array {
    pub(crate) use crate::jax::array::{Array, ArrayKind, Lazy, NdData};
}

pub(crate) mod aval {
    pub(crate) use crate::jax::aval::{Aval, Shape};
}

pub(crate) mod dtypes {
    pub(crate) use crate::jax::dtypes::{default_float, default_int, DType, DTypeConfig, PyScalarKind, WeakDType};
}

pub(crate) mod effects {
    use super::super::value::Value;
    use super::super::{Interp, PyResult, Site};

    /// A global read inside a caching trace: module identity, name, where, inside what.
    #[derive(Clone)]
    pub struct GlobalRead {
        pub module: usize,
        pub name: String,
        pub site: Site,
        pub inside: String,
    }

    pub(crate) fn on_print(interp: &mut Interp, args: &[Value]) -> PyResult<()> {
        let models = interp.models;
        models.on_print(interp, args)
    }

    pub(crate) fn on_next(interp: &mut Interp, it: &Value) -> PyResult<()> {
        let models = interp.models;
        models.on_next(interp, it)
    }

    pub(crate) fn on_impure_call(interp: &mut Interp, what: &str) {
        let models = interp.models;
        models.on_impure_call(interp, what)
    }
}

pub(crate) mod errors {
    pub(crate) use crate::jax::error_codes::code_for_jax_error;
}

pub(crate) mod eval {
    use std::rc::Rc;

    use super::super::Interp;
    use super::array::{Array, NdData};

    /// `array`'s elements, when they are computed or computable within `max_elements`.
    pub(crate) fn force(interp: &Interp, array: &Rc<Array>, max_elements: u64) -> Option<Rc<NdData>> {
        interp.models.force(array, max_elements)
    }
}

pub(crate) mod memo {
    use super::super::value::{Function, Value};
    use super::super::{FileId, Interp};

    pub(crate) fn note_read(interp: &mut Interp, file: FileId, name: &str, found: Option<&Value>) {
        let models = interp.models;
        models.note_read(interp, file, name, found)
    }

    pub(crate) fn note_call(interp: &mut Interp, f: &Function) {
        let models = interp.models;
        models.note_call(interp, f)
    }
}

/// Values mode's state is the interpreter's own (`values_state.rs`); the JAX model computes into it.
pub(crate) mod numerics {
    pub(crate) use super::super::values_state::{loop_enter, loop_exit, loop_next, ValuesState};
}

pub(crate) mod numpy;
pub(crate) mod state;
pub(crate) mod tf_classes;

pub(crate) mod print {
    pub(crate) use crate::jax::print::array_str;
}

pub(crate) mod stmt {
    use super::super::call::Kwargs;
    use super::super::value::Value;
    use super::super::{Interp, PyResult};
    use super::dtypes::DType;

    /// The statements of user code the interpreter runs that a trace records.
    #[derive(Clone, Debug)]
    pub enum Call {
        BinOp(&'static str),
        Unary(&'static str),
        Compare(&'static str),
        GetItem,
        SetItem,
        Method(String),
        /// `jnp.float32(x)`: a dtype called as a function.
        DType(DType),
    }

    pub(crate) fn recording(interp: &Interp) -> Option<usize> {
        interp.models.recording(interp)
    }

    pub(crate) fn recorded(
        interp: &mut Interp,
        call: Call,
        args: &[&Value],
        kwargs: &Kwargs,
        f: impl FnOnce(&mut Interp) -> PyResult<Value>,
    ) -> PyResult<Value> {
        let models = interp.models;
        let mut f = Some(f);
        // The model runs `f` exactly once; a second call would find it gone and run nothing.
        models.recorded(interp, call, args, kwargs, &mut |this| f.take().map_or(Ok(Value::None), |f| f(this)))
    }
}

pub(crate) mod surface {
    pub(crate) use crate::jax::surface::JaxFn;
}

/// TensorFlow's API functions and objects that are not tensors (`tf/mod.rs`), as the
/// interpreter reaches them: through `Models` (`TfObjects`), or what it reads of the objects
/// themselves (`TfObjectView`); the names it needs before any exists are the leaf `tf/names.rs`.
pub(crate) mod tf {
    use super::super::builtins::Builtin;
    use super::super::call::Kwargs;
    use super::super::value::Value;
    use super::super::{Interp, PyResult};
    pub(crate) use super::tf_classes as classes;
    use super::{TfObject, TfObjectView};
    pub(crate) use crate::tf::names::{AUTOGRAPH_EXCEPTION_CLASSES, EXCEPTION_CLASSES, TF_MODULES};

    pub(crate) fn call(interp: &mut Interp, t: &TfObject, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        let models = interp.models;
        models.tf_call(interp, t, args, kwargs)
    }

    pub(crate) fn call_method(interp: &mut Interp, t: &TfObject, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
        let models = interp.models;
        models.tf_call_method(interp, t, name, args, kwargs)
    }

    pub(crate) fn getattr(interp: &mut Interp, t: &TfObject, name: &str) -> PyResult<Option<Value>> {
        let models = interp.models;
        models.tf_getattr(interp, t, name)
    }

    pub(crate) fn getitem(interp: &mut Interp, t: &TfObject, idx: &Value) -> PyResult<Value> {
        let models = interp.models;
        models.tf_getitem(interp, t, idx)
    }

    pub(crate) fn text(interp: &mut Interp, t: &TfObject, repr: bool) -> PyResult<String> {
        let models = interp.models;
        models.tf_text(interp, t, repr)
    }

    pub(crate) fn isinstance(interp: &Interp, v: &Value, class: &TfObject) -> Option<bool> {
        interp.models.tf_isinstance(v, class)
    }

    pub(crate) fn module_attr(interp: &mut Interp, module: &str, name: &str) -> Option<Value> {
        let models = interp.models;
        models.tf_module_attr(interp, module, name)
    }

    pub(crate) fn in_graph(interp: &Interp) -> bool {
        interp.models.tf_in_graph(interp)
    }

    /// An attribute of a `tf.DType` (`tf.float32.name`, `t.dtype.is_floating`).
    pub(crate) fn dtype_attr(interp: &Interp, d: super::dtypes::DType, name: &str) -> Value {
        interp.models.tf_dtype_attr(d, name)
    }

    /// Whether a value is a TensorFlow tensor or variable (or a partly known tensor).
    pub fn is_tf(v: &Value) -> bool {
        match v {
            Value::Array(a) => a.tf.get(),
            Value::Builtin(b) => matches!(&**b, Builtin::Tf(t) if t.is_tensor_like()),
            _ => false,
        }
    }

    /// A method of a `tf.function` (`f.get_concrete_function`), which takes the instance first
    /// when the function is a method reached through its instance.
    pub(crate) fn is_function_method(v: &Value) -> bool {
        matches!(v, Value::Builtin(b) if matches!(&**b, Builtin::Tf(t) if t.is_function_method()))
    }

    /// `shape == (2, 3)`, `shape == [2, 3]`, `shape == other_shape`: TensorShape's equality.
    pub(crate) fn shape_eq(l: &Value, r: &Value) -> Option<bool> {
        let dims_of = |v: &Value| -> Option<Vec<Option<i64>>> {
            let item = |i: &Value| match i {
                Value::Int(n) => Some(Some(*n)),
                Value::None => Some(None),
                _ => None,
            };
            match v {
                Value::Builtin(b) => shape_dims(b).map(|d| d.iter().map(|x| x.map(|x| x as i64)).collect()),
                Value::Tuple(items) => items.iter().map(item).collect(),
                Value::List(items) => items.borrow().iter().map(item).collect(),
                _ => None,
            }
        };
        let is_shape = |v: &Value| matches!(v, Value::Builtin(b) if shape_dims(b).is_some());
        if !is_shape(l) && !is_shape(r) {
            return None;
        }
        let (a, b) = (dims_of(l)?, dims_of(r)?);
        // An unknown dimension is equal to nothing (TensorShape.__eq__ compares dims).
        Some(a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.is_some() && x == y))
    }

    /// The dimensions of the `TensorShape` `b` is, if it is one.
    pub(crate) fn shape_dims(b: &Builtin) -> Option<&std::rc::Rc<Vec<Option<usize>>>> {
        match b {
            Builtin::Tf(t) => t.shape_dims(),
            _ => None,
        }
    }

    /// AutoGraph (`tf/autograph/`), as the interpreter reaches it: through `Models`.
    pub(crate) mod autograph {
        use std::rc::Rc;

        use super::super::super::{Ctx, Flow, Interp, PyResult};
        use super::super::array::Array;
        use super::super::aval::Aval;
        use crate::syntax::ast::Stmt;

        /// What makes AutoGraph stage a statement.
        pub enum Staged {
            /// The symbolic tensor an `if`/`while` test gave.
            Test(Rc<Array>),
            /// A `for` over a symbolic tensor: the aval of its rows.
            Iterate(Aval),
        }

        pub(crate) fn take(interp: &mut Interp, flow: &Flow) -> Option<Staged> {
            let models = interp.models;
            models.autograph_take(interp, flow)
        }

        pub(crate) fn if_stmt(interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: Staged) -> PyResult<bool> {
            let models = interp.models;
            models.autograph_if(interp, ctx, stmt, staged)
        }

        pub(crate) fn while_stmt(interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: Staged) -> PyResult<bool> {
            let models = interp.models;
            models.autograph_while(interp, ctx, stmt, staged)
        }

        pub(crate) fn for_stmt(interp: &mut Interp, ctx: &Ctx, stmt: &Stmt, staged: Staged) -> PyResult<bool> {
            let models = interp.models;
            models.autograph_for(interp, ctx, stmt, staged)
        }

        pub(crate) fn function_ends(interp: &mut Interp, ran: PyResult<()>) -> PyResult<()> {
            let models = interp.models;
            models.autograph_function_ends(interp, ran)
        }
    }
    /// A partly known tensor (`tf/partial.rs`), as the interpreter reaches it: through `Models`.
    pub(crate) mod partial {
        use std::rc::Rc;

        use super::super::super::builtins::Builtin;
        use super::super::super::value::Value;
        use super::super::super::{Flow, Interp, PyResult};
        use super::super::TfObjectView;
        pub(crate) use crate::tf::partial_tensor::PartialTensor;

        /// The partly known tensor `v` is, if it is one.
        pub fn of(v: &Value) -> Option<Rc<PartialTensor>> {
            match v {
                Value::Builtin(b) => of_builtin(b).cloned(),
                _ => None,
            }
        }

        /// The partly known tensor `b` is, if it is one.
        pub fn of_builtin(b: &Builtin) -> Option<&Rc<PartialTensor>> {
            match b {
                Builtin::Tf(t) => t.partial(),
                _ => None,
            }
        }

        pub(crate) fn truth(interp: &mut Interp, what: &str) -> PyResult<bool> {
            let models = interp.models;
            models.partial_truth(interp, what)
        }

        pub(crate) fn iterate(interp: &mut Interp, p: &PartialTensor) -> PyResult<Vec<Value>> {
            let models = interp.models;
            models.partial_iterate(interp, p)
        }

        pub(crate) fn none_dimension_error(interp: &Interp, message: &str) -> Option<Flow> {
            interp.models.none_dimension_error(interp, message)
        }
    }
    pub(crate) use crate::tf::shape_text;
    /// A tensor (`tf/tensor.rs`), as the interpreter reaches it: through `Models`.
    pub(crate) mod tensor {
        use std::rc::Rc;

        use super::super::super::call::Kwargs;
        use super::super::super::value::Value;
        use super::super::super::{Flow, Interp, PyResult};
        use super::super::array::Array;
        use crate::syntax::ast::{BinOp, CmpOp, Expr, UnaryOp};

        pub(crate) fn binary_operator(interp: &mut Interp, op: BinOp, l: &Value, r: &Value) -> PyResult<Value> {
            let models = interp.models;
            models.tensor_binary_operator(interp, op, l, r)
        }

        pub(crate) fn compare_operator(interp: &mut Interp, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value> {
            let models = interp.models;
            models.tensor_compare_operator(interp, op, l, r)
        }

        pub(crate) fn unary_operator(interp: &mut Interp, op: UnaryOp, a: &Rc<Array>) -> PyResult<Value> {
            let models = interp.models;
            models.tensor_unary_operator(interp, op, a)
        }

        pub(crate) fn truth(interp: &mut Interp, a: &Rc<Array>, what: &str, expr: Option<&Expr>) -> PyResult<bool> {
            let models = interp.models;
            models.tensor_truth(interp, a, what, expr)
        }

        pub(crate) fn python_conversion(interp: &mut Interp, name: &str, v: &Value) -> PyResult<Option<Value>> {
            let models = interp.models;
            models.tensor_python_conversion(interp, name, v)
        }

        pub(crate) fn iterate(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Vec<Value>> {
            let models = interp.models;
            models.tensor_iterate(interp, a)
        }

        pub(crate) fn getattr(interp: &mut Interp, a: &Rc<Array>, name: &str) -> PyResult<Option<Value>> {
            let models = interp.models;
            models.tensor_getattr(interp, a, name)
        }

        pub(crate) fn call_method(interp: &mut Interp, a: &Rc<Array>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
            let models = interp.models;
            models.tensor_call_method(interp, a, name, args, kwargs)
        }

        pub(crate) fn getitem(interp: &mut Interp, a: &Rc<Array>, idx: &Value) -> PyResult<Value> {
            let models = interp.models;
            models.tensor_getitem(interp, a, idx)
        }

        pub(crate) fn item_assignment(interp: &Interp, a: &Array) -> Flow {
            interp.models.tensor_item_assignment(interp, a)
        }

        pub(crate) fn str(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
            let models = interp.models;
            models.tensor_str(interp, a)
        }

        pub(crate) fn repr(interp: &mut Interp, a: &Rc<Array>) -> PyResult<String> {
            let models = interp.models;
            models.tensor_repr(interp, a)
        }

        pub(crate) fn shape_items(interp: &Interp, dims: &[Option<usize>]) -> Vec<Value> {
            interp.models.tensor_shape_items(dims)
        }
    }
}

pub(crate) mod entry_hooks {
    use std::rc::Rc;

    use super::super::call::Kwargs;
    use super::super::value::{Opaque, Value};
    use super::super::{Interp, PyResult};

    pub(crate) fn call_opaque(interp: &mut Interp, callee: &Rc<Opaque>, args: &[Value], kwargs: &Kwargs) -> Option<PyResult<Value>> {
        let models = interp.models;
        models.call_opaque(interp, callee, args, kwargs)
    }

    pub(crate) fn getattr_opaque(interp: &mut Interp, obj: &Rc<Opaque>, name: &str) -> Option<Value> {
        let models = interp.models;
        models.getattr_opaque(interp, obj, name)
    }

    pub(crate) fn decided_by_command_line(interp: &Interp, reads_before: Option<u64>) -> bool {
        interp.models.decided_by_command_line(interp, reads_before)
    }

    pub(crate) fn expects_exception(interp: &Interp, manager: &Value) -> bool {
        interp.models.expects_exception(manager)
    }

    /// Values handed to code tracelens does not model, which may change them there.
    pub(crate) fn handed_to_unknown<'v>(interp: &Interp, values: impl IntoIterator<Item = &'v Value>) {
        values.into_iter().for_each(|v| interp.models.handed_to_unknown(interp, v));
    }
}
