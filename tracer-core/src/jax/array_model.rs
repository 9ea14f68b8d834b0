//! What the JAX model adds to the array layer (`array.rs`): the constructors that round values
//! to their dtype (`eval::round_to`), hold int64 values past 2**53 exactly, check the budgets
//! of the analysis (`memory::fits_array`) or leave a primitive pending, and the staged call
//! whose outputs a jitted function on concrete inputs returns.

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;

use ndarray::ArrayD;

use super::array::{Array, ArrayKind, Lazy, NdData, NdInts, PendingOp, StagedOutputs, TOO_LARGE};
use super::aval::Aval;
use super::dtypes::DType;
use super::ir::{Jaxpr, Prim};

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
    pub fn ready_ints(aval: Aval, data: NdInts) -> Rc<Array> {
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
            kind: ArrayKind::Concrete(RefCell::new(Lazy::Pending(PendingOp::new(prim), inputs))),
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
}

impl StagedOutputs for StagedCall {
    /// The lazily computed array behind output `i` (`None` when the jaxpr cannot be
    /// instantiated).
    fn output(&self, i: usize) -> Option<Rc<Array>> {
        let outs = self.outputs.get_or_init(|| super::eval_jaxpr::instantiate(&self.jaxpr, &self.consts, &self.inputs));
        outs.as_ref()?.get(i).cloned()
    }
}
