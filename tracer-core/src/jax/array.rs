//! Array values: an aval plus either concrete data computed on demand, or a tracer bound to
//! an IR variable of an active trace (design.md §1–2).
//!
//! The array layer, below both the interpreter and the models: it names neither the IR nor the
//! evaluator, so holding an array ties the interpreter to no model. What a pending array will
//! compute is a [`PendingOp`] and a staged call's outputs are [`StagedOutputs`], both of which
//! the JAX model fills in; the constructors that round to a dtype, check the budgets or leave a
//! primitive pending are the model's (`array_model.rs`).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use ndarray::{ArcArray, ArrayD, IxDyn};

use super::aval::Aval;
use crate::syntax::ast::Site;

/// Concrete element data. Every numeric dtype is held as f64 and rounded to its dtype after
/// each operation (exact for integers below 2^53, beyond which int64 data is held in i128,
/// `Lazy::ReadyInts`; float32 rounding is applied per op).
pub type NdData = ArrayD<f64>;

/// Why the value of an array over the element budget is not computed.
pub const TOO_LARGE: &str = "too large to compute (over the element budget)";

/// float32 and bool data as the evaluator's float32 path keeps it: in f32 (exact for both),
/// shared, in any memory layout (a transpose is a view). `eval::force` widens it to `NdData`
/// for everything outside the kernels (docs/evaluator.md).
pub type NdDataF32 = ArcArray<f32, IxDyn>;

/// Exact integer element data (`Lazy::ReadyInts`, `eval_ints`).
pub type NdInts = ArrayD<i128>;

/// An IR variable (`ir.rs` re-exports it): what a tracer is bound to.
pub type VarId = u32;

/// The operation a pending array applies to its inputs, held without the array layer knowing
/// it: the model that made the array (the JAX model: an `ir::Prim`) reads it back with `get`.
pub struct PendingOp(Box<dyn Any>);

impl PendingOp {
    pub fn new<T: Any>(op: T) -> PendingOp {
        PendingOp(Box::new(op))
    }
    /// The operation, when it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

/// The outputs of a staged call on concrete inputs, made when one is first needed (the JAX
/// model's `StagedCall`).
pub trait StagedOutputs {
    /// The lazily computed array behind output `i` (`None` when it cannot be made).
    fn output(&self, i: usize) -> Option<Rc<Array>>;
}

pub struct Array {
    pub aval: Aval,
    pub kind: ArrayKind,
    /// Where the value was made, for leaked-tracer and key-reuse messages.
    pub origin: Option<Site>,
    /// A NumPy array (`np.zeros(...)`): mutable in place, 64-bit by default.
    pub numpy: Cell<bool>,
    /// A TensorFlow tensor (`tf.constant(...)`, the result of a `tf` op): Python's operators,
    /// truth, attributes and printing follow TensorFlow (`crate::tf::tensor`).
    pub tf: Cell<bool>,
}

pub enum ArrayKind {
    Concrete(RefCell<Lazy>),
    Tracer(Tracer),
}

pub struct Tracer {
    pub trace: u32,
    pub var: VarId,
    /// The value behind the tracer when it is known (under `grad`/`jvp` outside `jit`).
    pub primal: Option<Rc<Array>>,
    /// JAX sees a tracer here (`jax/taint.rs`): every tracer of a staging trace; of a
    /// `grad`/`jvp` trace, one that depends on a differentiated argument (JAX's
    /// `JVPTracer`/`LinearizeTracer`). The others are concrete arrays in JAX, which NumPy and
    /// `float()` convert.
    pub active: bool,
}

pub enum Lazy {
    Ready(Rc<NdData>),
    /// The value of a float32 or bool array, held in f32, and whether the kernel that made it
    /// saw that every element is finite (`false` when it did not look: values mode then scans).
    ReadyF32(NdDataF32, bool),
    /// The value of an int64 or uint64 array holding an integer from 2**53 on, which f64
    /// cannot hold: exact, in i128 (`eval_ints`).
    ReadyInts(Rc<NdInts>),
    /// An operation (the JAX model's primitive) applied to `inputs`, computed when first needed.
    Pending(PendingOp, Vec<Rc<Array>>),
    /// Not computed: too large, no kernel yet, or it depends on something unknown.
    Unknown(&'static str),
    /// Output `usize` of a jitted function called on concrete inputs. Its equations become
    /// pending arrays only when some output's value is first needed, so a program whose
    /// values nobody reads pays nothing for them.
    Call(Rc<dyn StagedOutputs>, usize),
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Array({})", self.aval.short())
    }
}

impl Array {
    pub fn unknown(aval: Aval, why: &'static str) -> Rc<Array> {
        Rc::new(Array {
            aval,
            kind: ArrayKind::Concrete(RefCell::new(Lazy::Unknown(why))),
            origin: None,
            numpy: Cell::new(false),
            tf: Cell::new(false),
        })
    }

    /// Item assignment on a NumPy array: the values are no longer known.
    pub fn forget_values(&self, why: &'static str) {
        if let ArrayKind::Concrete(cell) = &self.kind {
            *cell.borrow_mut() = Lazy::Unknown(why);
        }
    }

    pub fn is_tracer(&self) -> bool {
        matches!(self.kind, ArrayKind::Tracer(_))
    }
    pub fn tracer(&self) -> Option<&Tracer> {
        match &self.kind {
            ArrayKind::Tracer(t) => Some(t),
            ArrayKind::Concrete(_) => None,
        }
    }
    /// Whether JAX certainly sees a tracer here, whose `__array__`, `float()` and `tolist()`
    /// raise even when its value is known: a tracer whose value is not known (a staging
    /// trace's), or a `grad`/`jvp` tracer that depends on a differentiated argument. A value
    /// computed from `grad`'s other arguments only is a concrete array in JAX.
    pub fn is_jax_tracer(self: &Rc<Array>) -> bool {
        match &self.kind {
            ArrayKind::Tracer(t) => t.active || self.known().is_none(),
            ArrayKind::Concrete(_) => false,
        }
    }
    /// Whether NumPy's `__array__` conversion of this array certainly raises JAX's
    /// `TracerArrayConversionError` (`is_jax_tracer`), or is a symbolic TensorFlow tensor's
    /// error (a tensor refuses only while symbolic).
    pub fn refuses_numpy_conversion(self: &Rc<Array>) -> bool {
        if self.tf.get() {
            return self.is_tracer() && self.known().is_none();
        }
        self.is_jax_tracer()
    }
    /// The concrete value standing behind this array, if there is one: itself, or a tracer's primal.
    pub fn known(self: &Rc<Array>) -> Option<Rc<Array>> {
        match &self.kind {
            ArrayKind::Concrete(_) => Some(self.clone()),
            ArrayKind::Tracer(t) => t.primal.as_ref().and_then(|p| p.known()),
        }
    }
}
