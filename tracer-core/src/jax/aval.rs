//! Abstract values: the shape, dtype and weak type of an array, printed as JAX prints them.

use std::fmt;

use smallvec::SmallVec;

use super::dtypes::{DType, WeakDType};

pub type Shape = SmallVec<[usize; 4]>;

/// JAX's `ShapedArray`: what every array value is known by, concrete or traced.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Aval {
    pub shape: Shape,
    pub dtype: DType,
    /// JAX's weak type: the value came from a Python scalar and defers to the other
    /// operand's dtype in promotion.
    pub weak: bool,
}

/// Cloned with `Shape::from_slice`, one copy of the dimensions: the derived `Clone` pushes
/// them one by one through `SmallVec`'s `Extend`, and an aval is cloned at every `bind`.
impl Clone for Aval {
    #[inline]
    fn clone(&self) -> Aval {
        Aval { shape: Shape::from_slice(&self.shape), dtype: self.dtype, weak: self.weak }
    }
}

impl Aval {
    pub fn new(shape: &[usize], dtype: DType) -> Aval {
        Aval { shape: Shape::from_slice(shape), dtype, weak: false }
    }
    pub fn scalar(dtype: DType) -> Aval {
        Aval::new(&[], dtype)
    }
    pub fn weak(mut self, weak: bool) -> Aval {
        self.weak = weak && !dtype_never_weak(self.dtype);
        self
    }
    pub fn with_shape(&self, shape: &[usize]) -> Aval {
        Aval { shape: Shape::from_slice(shape), dtype: self.dtype, weak: self.weak }
    }
    /// This aval with a new leading axis of `n`: what `scan` and `lax.map` stack per iteration.
    pub fn stacked(&self, n: usize) -> Aval {
        let mut shape = Shape::from_slice(&[n]);
        shape.extend(self.shape.iter().copied());
        Aval { shape, dtype: self.dtype, weak: self.weak }
    }
    pub fn with_dtype(&self, dtype: DType) -> Aval {
        Aval { shape: Shape::from_slice(&self.shape), dtype, weak: false }
    }
    pub fn weak_dtype(&self) -> WeakDType {
        WeakDType { dtype: self.dtype, weak: self.weak }
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements; saturates instead of overflowing for absurd shapes.
    pub fn size(&self) -> u128 {
        // In u64 while the product fits it (any shape whose data could be held), which is a
        // few instructions a dimension: the evaluator asks at every value it computes.
        let mut size: u64 = 1;
        for &d in &self.shape {
            match size.checked_mul(d as u64) {
                Some(product) => size = product,
                None => return self.shape.iter().fold(1u128, |acc, &d| acc.saturating_mul(d as u128)),
            }
        }
        u128::from(size)
    }
    /// The product of the non-empty axes: what data of this shape must be able to address
    /// (ndarray refuses a shape whose extent overflows, even with no elements). It is the
    /// size, except for an empty array: `(2**62, 0, 2)` holds nothing but spans 2**63.
    pub fn extent(&self) -> u128 {
        let mut extent: u64 = 1;
        for &d in self.shape.iter().filter(|&&d| d != 0) {
            match extent.checked_mul(d as u64) {
                Some(product) => extent = product,
                None => return self.shape.iter().filter(|&&d| d != 0).fold(1u128, |acc, &d| acc.saturating_mul(d as u128)),
            }
        }
        u128::from(extent)
    }
    /// `f32[8,4]`, `~f32[]`: JAX's `str_short(short_dtypes=True)` with the weak marker.
    pub fn short(&self) -> String {
        let mut out = String::with_capacity(8 + 4 * self.shape.len());
        if self.weak {
            out.push('~');
        }
        out.push_str(self.dtype.short_name());
        out.push('[');
        push_dims(&mut out, &self.shape, ",");
        out.push(']');
        out
    }
    /// `float32[8,4]`: JAX's `str(aval)` without the weak marker, as used in error messages.
    pub fn long(&self) -> String {
        format!("{}[{}]", self.dtype.name(), join_dims(&self.shape, ","))
    }
    /// `~float32[]`: JAX's `str(aval)`, as in tracer error messages.
    pub fn long_weak(&self) -> String {
        format!("{}{}", if self.weak { "~" } else { "" }, self.long())
    }
    /// `(8, 4)`, `(3,)`, `()`: a shape as Python prints a tuple.
    pub fn shape_tuple(&self) -> String {
        shape_tuple(&self.shape)
    }
}

fn dtype_never_weak(dtype: DType) -> bool {
    dtype == DType::Bool || dtype == DType::Key
}

impl fmt::Display for Aval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.short())
    }
}

pub fn join_dims(dims: &[usize], sep: &str) -> String {
    let mut out = String::new();
    push_dims(&mut out, dims, sep);
    out
}

/// Appends `dims` separated by `sep` (`8,4`) without allocating a string per dimension.
fn push_dims(out: &mut String, dims: &[usize], sep: &str) {
    for (i, d) in dims.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(itoa::Buffer::new().format(*d));
    }
}

/// A shape as Python prints a tuple: `(3,)`, `(2, 3)`, `()`.
pub fn shape_tuple(dims: &[usize]) -> String {
    match dims {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        _ => format!("({})", join_dims(dims, ", ")),
    }
}
