//! `jnp.array` of a large nested list of Python numbers (`jnp.array([0.5] * 10**6)`, a data
//! table pasted into the source): its shape, dtype and data in one walk, without an array
//! and a concatenation per element. Anything else inside (arrays, unknowns, ragged rows,
//! an int past the default int's range) goes the general way, `operands::stack_python`.

use std::collections::HashMap;

use super::*;

/// Literals with fewer elements take the general path: this one is for speed only.
const FEWEST_ELEMENTS: u128 = 256;

/// What the numbers of a nested list hold, joined over its elements.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Kinds {
    bool: bool,
    int: bool,
    float: bool,
}

impl Kinds {
    fn join(self, other: Kinds) -> Kinds {
        Kinds { bool: self.bool || other.bool, int: self.int || other.int, float: self.float || other.float }
    }
}

/// The array a nested list of Python numbers makes, or `None` for the general path.
pub(super) fn numbers_array(interp: &mut Interp, v: &Value) -> PyResult<Option<Rc<Array>>> {
    let mut shape = Vec::new();
    let mut level = v.clone();
    loop {
        let first = match &level {
            Value::List(l) => {
                let l = l.borrow();
                shape.push(l.len());
                l.first().cloned()
            }
            Value::Tuple(t) => {
                shape.push(t.len());
                t.first().cloned()
            }
            _ => break,
        };
        match first {
            Some(item) => level = item,
            None => return Ok(None),
        }
    }
    let size = shape.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128));
    if size < FEWEST_ELEMENTS || shape.len() > 32 {
        return Ok(None);
    }
    let c = cfg(interp);
    let int_limit = if dtypes::default_int(c) == DType::I64 { 1i64 << 53 } else { 1i64 << 31 };
    let mut walk = Walk { shape: &shape, seen: HashMap::new(), int_limit, visited: 0 };
    let Some(kinds) = walk.kinds(interp, v, 0)? else { return Ok(None) };
    let dtype = if kinds.float {
        dtypes::default_float(c)
    } else if kinds.int {
        dtypes::default_int(c)
    } else {
        DType::Bool
    };
    let aval = Aval::new(&shape, dtype);
    if !crate::interp::memory::fits_array(size) {
        return Ok(Some(Array::unknown(aval, array::TOO_LARGE)));
    }
    let mut data = Vec::with_capacity(size as usize);
    fill(v, dtype, &mut data);
    match ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), data) {
        Ok(data) => Ok(Some(Array::ready(aval, data))),
        Err(_) => Ok(None),
    }
}

struct Walk<'s> {
    shape: &'s [usize],
    /// Containers already walked (the rows of `[[0.0] * n] * m` are one list), by address.
    seen: HashMap<usize, Kinds>,
    int_limit: i64,
    visited: u64,
}

impl Walk<'_> {
    /// The kinds of numbers in `v` at `depth`, or `None` when it does not fit the shape or
    /// holds anything but Python numbers. A step for every 64 numbers.
    fn kinds(&mut self, interp: &mut Interp, v: &Value, depth: usize) -> PyResult<Option<Kinds>> {
        let (items, address): (Vec<Value>, usize) = match v {
            Value::List(l) => (l.borrow().clone(), Rc::as_ptr(l) as *const () as usize),
            Value::Tuple(t) => ((**t).clone(), Rc::as_ptr(t) as *const () as usize),
            _ => return Ok(number_kind(v, self.int_limit).filter(|_| depth == self.shape.len())),
        };
        if self.shape.get(depth) != Some(&items.len()) {
            return Ok(None);
        }
        if let Some(kinds) = self.seen.get(&address) {
            return Ok(Some(*kinds));
        }
        let mut kinds = Kinds::default();
        for item in &items {
            self.visited += 1;
            if self.visited % 64 == 0 {
                interp.tick()?;
            }
            match self.kinds(interp, item, depth + 1)? {
                Some(k) => kinds = kinds.join(k),
                None => return Ok(None),
            }
        }
        self.seen.insert(address, kinds);
        Ok(Some(kinds))
    }
}

fn number_kind(v: &Value, int_limit: i64) -> Option<Kinds> {
    match v {
        Value::Bool(_) => Some(Kinds { bool: true, ..Kinds::default() }),
        Value::Int(i) if (-int_limit..int_limit).contains(i) => Some(Kinds { int: true, ..Kinds::default() }),
        Value::Float(_) => Some(Kinds { float: true, ..Kinds::default() }),
        _ => None,
    }
}

/// The numbers of `v` in row-major order, rounded to `dtype` (`numbers_array` checked them).
fn fill(v: &Value, dtype: DType, out: &mut Vec<f64>) {
    match v {
        Value::List(l) => l.borrow().iter().for_each(|item| fill(item, dtype, out)),
        Value::Tuple(t) => t.iter().for_each(|item| fill(item, dtype, out)),
        Value::Bool(b) => out.push(f64::from(u8::from(*b))),
        Value::Int(i) => out.push(eval::round_to(*i as f64, dtype)),
        Value::Float(x) => out.push(eval::round_to(*x, dtype)),
        _ => out.push(0.0),
    }
}
