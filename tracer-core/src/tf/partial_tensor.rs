//! A symbolic tensor whose shape TensorFlow knows only in part (`partial.rs`): its rank, its
//! known dimensions and its dtype. A leaf, below the interpreter and the TensorFlow front end,
//! so that the interpreter can hold one without reaching the front end.

use crate::jax::dtypes::DType;

#[derive(Debug, Clone, PartialEq)]
pub struct PartialTensor {
    /// The dimensions, `None` where TensorFlow does not know one.
    pub dims: Vec<Option<usize>>,
    pub dtype: DType,
    /// The argument it stands for (`x` prints as `Tensor("x:0", ...)`).
    pub name: Option<String>,
}
