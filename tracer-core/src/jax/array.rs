//! Array values: an aval plus either concrete data computed on demand, or a tracer bound to
//! an IR variable of an active trace (design.md §1–2).

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;

use ndarray::{ArcArray, ArrayD, IxDyn};

use super::aval::Aval;
use super::dtypes::DType;
use super::ir::{Jaxpr, Prim, VarId};
use crate::interp::Site;

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
    ReadyInts(Rc<super::eval_ints::NdInts>),
    /// `prim` applied to `inputs`, computed when first needed.
    Pending(Prim, Vec<Rc<Array>>),
    /// Not computed: too large, no kernel yet, or it depends on something unknown.
    Unknown(&'static str),
    /// Output `usize` of a jitted function called on concrete inputs. Its equations become
    /// pending arrays only when some output's value is first needed, so a program whose
    /// values nobody reads pays nothing for them.
    Call(Rc<StagedCall>, usize),
}

/// A staged call on concrete inputs, instantiated at most once (`eval_jaxpr::instantiate`).
pub struct StagedCall {
    pub jaxpr: Rc<Jaxpr>,
    pub consts: Vec<Rc<Array>>,
    pub inputs: Vec<Rc<Array>>,
    outputs: OnceCell<Option<Vec<Rc<Array>>>>,
}

impl StagedCall {
    /// Concrete arrays of `avals` standing for the outputs of `jaxpr` on `consts` and
    /// `inputs`, whose equations are instantiated when one of their values is first needed.
    pub fn outputs(jaxpr: Rc<Jaxpr>, consts: Vec<Rc<Array>>, inputs: Vec<Rc<Array>>, avals: Vec<Aval>) -> Vec<Rc<Array>> {
        let call = Rc::new(StagedCall { jaxpr, consts, inputs, outputs: OnceCell::new() });
        avals
            .into_iter()
            .enumerate()
            .map(|(i, aval)| {
                Rc::new(Array {
                    aval,
                    kind: ArrayKind::Concrete(RefCell::new(Lazy::Call(call.clone(), i))),
                    origin: None,
                    numpy: Cell::new(false),
                    tf: Cell::new(false),
                })
            })
            .collect()
    }

    /// The lazily computed array behind output `i` (`None` when the jaxpr cannot be
    /// instantiated).
    pub fn output(&self, i: usize) -> Option<Rc<Array>> {
        let outs = self.outputs.get_or_init(|| super::eval_jaxpr::instantiate(&self.jaxpr, &self.consts, &self.inputs));
        outs.as_ref()?.get(i).cloned()
    }
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Array({})", self.aval.short())
    }
}

impl Array {
    pub fn ready(aval: Aval, data: NdData) -> Rc<Array> {
        if !super::eval::exact_in_f64(&data, aval.dtype) {
            return Array::unknown(aval, super::eval::INT64_PAST_2_53);
        }
        Rc::new(Array {
            aval,
            kind: ArrayKind::Concrete(RefCell::new(Lazy::Ready(Rc::new(data)))),
            origin: None,
            numpy: Cell::new(false),
            tf: Cell::new(false),
        })
    }
    /// Integer data held exactly: as f64 when every value fits it, else in i128.
    pub fn ready_ints(aval: Aval, data: super::eval_ints::NdInts) -> Rc<Array> {
        if super::eval_ints::fits_f64(&data) {
            return Array::ready(aval, super::eval_ints::to_f64(&data));
        }
        Rc::new(Array {
            aval,
            kind: ArrayKind::Concrete(RefCell::new(Lazy::ReadyInts(Rc::new(data)))),
            origin: None,
            numpy: Cell::new(false),
            tf: Cell::new(false),
        })
    }
    pub fn pending(aval: Aval, prim: Prim, inputs: Vec<Rc<Array>>) -> Rc<Array> {
        Rc::new(Array {
            aval,
            kind: ArrayKind::Concrete(RefCell::new(Lazy::Pending(prim, inputs))),
            origin: None,
            numpy: Cell::new(false),
            tf: Cell::new(false),
        })
    }
    /// An array of `aval` whose data `make` computes now, unless it has more than
    /// `max_elements` elements: then it is never allocated and its value stays unknown.
    pub fn ready_if_small(aval: Aval, max_elements: u64, make: impl FnOnce() -> NdData) -> Rc<Array> {
        if aval.size() > max_elements as u128 {
            return Array::unknown(aval, TOO_LARGE);
        }
        Array::built(aval, make)
    }
    /// An array of `aval` whose data `make` computes now, when the budgets of the analysis
    /// running on this thread allow it (`memory::fits_array`); else its value stays unknown.
    /// Every array whose size the program decides is made this way, never with `ready`.
    pub fn built(aval: Aval, make: impl FnOnce() -> NdData) -> Rc<Array> {
        if !crate::interp::memory::fits_array(aval.extent()) {
            return Array::unknown(aval, TOO_LARGE);
        }
        Array::ready(aval, make())
    }
    pub fn unknown(aval: Aval, why: &'static str) -> Rc<Array> {
        Rc::new(Array {
            aval,
            kind: ArrayKind::Concrete(RefCell::new(Lazy::Unknown(why))),
            origin: None,
            numpy: Cell::new(false),
            tf: Cell::new(false),
        })
    }
    pub fn scalar(value: f64, dtype: DType, weak: bool) -> Rc<Array> {
        let data = ArrayD::from_elem(ndarray::IxDyn(&[]), super::eval::round_to(value, dtype));
        Array::ready(Aval::scalar(dtype).weak(weak), data)
    }
    /// A Python int as a scalar of `dtype` (weak): exactly, an int64 past 2**53 too.
    pub fn python_int(value: i64, dtype: DType) -> Rc<Array> {
        let aval = Aval::scalar(dtype).weak(true);
        if matches!(dtype, DType::I64 | DType::U64) && value.unsigned_abs() >= 1 << 53 {
            return Array::ready_ints(aval, ArrayD::from_elem(ndarray::IxDyn(&[]), i128::from(value)));
        }
        Array::ready(aval, ArrayD::from_elem(ndarray::IxDyn(&[]), super::eval::round_to(value as f64, dtype)))
    }
    /// A scalar whose value the caller knows `value` holds exactly (a Python int it checked,
    /// such as a PRNG seed of exactly -2**53), so it skips `ready`'s int64 range check.
    pub fn exact_scalar(value: f64, dtype: DType) -> Rc<Array> {
        let data = ArrayD::from_elem(ndarray::IxDyn(&[]), super::eval::round_to(value, dtype));
        Rc::new(Array {
            aval: Aval::scalar(dtype),
            kind: ArrayKind::Concrete(RefCell::new(Lazy::Ready(Rc::new(data)))),
            origin: None,
            numpy: Cell::new(false),
            tf: Cell::new(false),
        })
    }
    /// A new NumPy array standing for this one's value: its current value, shared when it is
    /// computed already, since item assignment on either must not reach the other.
    pub fn as_numpy(self: &Rc<Array>) -> Rc<Array> {
        self.copy_as(true)
    }
    /// A new JAX array with this one's value (`jnp.asarray` of a NumPy array), which NumPy's
    /// rules (item assignment, `__array__` on a tracer index) no longer govern.
    pub fn as_jax(self: &Rc<Array>) -> Rc<Array> {
        self.copy_as(false)
    }
    fn copy_as(self: &Rc<Array>, numpy: bool) -> Rc<Array> {
        let ready = match &self.kind {
            ArrayKind::Concrete(cell) => match &*cell.borrow() {
                Lazy::Ready(d) => Some(d.clone()),
                _ => None,
            },
            ArrayKind::Tracer(_) => None,
        };
        let a = match ready {
            Some(d) => Rc::new(Array {
                aval: self.aval.clone(),
                kind: ArrayKind::Concrete(RefCell::new(Lazy::Ready(d))),
                origin: None,
                numpy: Cell::new(false),
                tf: Cell::new(false),
            }),
            None => Array::pending(self.aval.clone(), Prim::Unary(super::ir::UnaryPrim::Copy), vec![self.clone()]),
        };
        a.numpy.set(numpy);
        a
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
