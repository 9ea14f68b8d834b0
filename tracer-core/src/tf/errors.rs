//! TensorFlow 2.21's exception classes and messages, as it raises them eagerly (`tf.errors.*`,
//! from the op kernels) and while a `tf.function` builds its graph (`ValueError`/`TypeError`
//! from shape inference and op construction). Graph messages name the node TensorFlow adds
//! (`'{{node add}}'`); the node's attributes and input names, which depend on how the graph
//! was built, are left out.

use crate::diagnostics::Code;
use crate::interp::{Flow, Interp};
use crate::jax::dtypes::DType;

/// The advice TensorFlow appends to `OperatorNotAllowedInGraphError`.
const AUTOGRAPH_ADVICE: &str = "You can attempt the following resolutions to the problem: If you are running in Graph mode, use Eager execution mode or decorate this function with @tf.function. If you are using AutoGraph, you can try decorating this function with @tf.function. If that does not work, then you may be using an unsupported feature or your source code may not be visible to AutoGraph. See https://github.com/tensorflow/tensorflow/blob/master/tensorflow/python/autograph/g3doc/reference/limitations.md#access-to-source-code for more information.";

/// `if t:` / `bool(t)` on a symbolic tensor where AutoGraph does not convert the code.
pub fn bool_in_graph(interp: &Interp) -> Flow {
    interp.raise(
        "OperatorNotAllowedInGraphError",
        Code::Concretization,
        format!("Using a symbolic `tf.Tensor` as a Python `bool` is not allowed. {AUTOGRAPH_ADVICE}"),
    )
}

/// `for x in t:` over a symbolic tensor where AutoGraph does not convert the code.
pub fn iterate_in_graph(interp: &Interp) -> Flow {
    interp.raise(
        "OperatorNotAllowedInGraphError",
        Code::Concretization,
        format!("Iterating over a symbolic `tf.Tensor` is not allowed. {AUTOGRAPH_ADVICE}"),
    )
}

/// TensorFlow's C++ name of a dtype (`DataTypeString`), as eager kernel errors print it.
pub fn kernel_dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::F16 => "half",
        DType::C64 => "complex64",
        DType::C128 => "complex128",
        other => other.name(),
    }
}

/// The eager prefix of errors raised inside an op's kernel.
fn wrapped(op: &str) -> String {
    format!("{{{{function_node __wrapped__{op}_device_/job:localhost/replica:0/task:0/device:CPU:0}}}}")
}

/// Two inputs of one op with different dtypes.
pub fn dtype_mismatch(interp: &Interp, op: &str, names: (&str, &str), a: DType, b: DType) -> Flow {
    if super::in_graph(interp) {
        let msg = format!(
            "Input '{}' of '{op}' Op has type {} that does not match type {} of argument '{}'.",
            names.1,
            b.name(),
            a.name(),
            names.0
        );
        interp.raise("TypeError", Code::DtypeMismatch, msg)
    } else {
        let msg = format!(
            "cannot compute {op} as input #1(zero-based) was expected to be a {} tensor but is a {} tensor [Op:{op}] name: ",
            kernel_dtype_name(a),
            kernel_dtype_name(b)
        );
        interp.raise("InvalidArgumentError", Code::DtypeMismatch, msg)
    }
}

/// `[2,3]`: a shape as TensorFlow's messages print it.
pub fn dims(shape: &[usize]) -> String {
    format!("[{}]", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","))
}

/// Two shapes an elementwise op cannot broadcast.
pub fn broadcast_mismatch(interp: &Interp, op: &str, node: &str, a: &[usize], b: &[usize]) -> Flow {
    if super::in_graph(interp) {
        // Shape inference compares the dimensions from the last one on.
        let (da, db) =
            a.iter().rev().zip(b.iter().rev()).find(|(x, y)| x != y && **x != 1 && **y != 1).map(|(x, y)| (*x, *y)).unwrap_or((0, 0));
        let msg = format!(
            "Dimensions must be equal, but are {da} and {db} for '{{{{node {node}}}}}' with input shapes: {}, {}.",
            dims(a),
            dims(b)
        );
        interp.raise("ValueError", Code::ShapeMismatch, msg)
    } else {
        let msg = format!("{} Incompatible shapes: {} vs. {} [Op:{op}] name: ", wrapped(op), dims(a), dims(b));
        interp.raise("InvalidArgumentError", Code::ShapeMismatch, msg)
    }
}

/// `tf.matmul` of matrices whose inner dimensions differ.
pub fn matmul_mismatch(interp: &Interp, a: &[usize], b: &[usize], inner: (usize, usize)) -> Flow {
    if super::in_graph(interp) {
        let msg = format!(
            "Dimensions must be equal, but are {} and {} for '{{{{node MatMul}}}}' with input shapes: {}, {}.",
            inner.0,
            inner.1,
            dims(a),
            dims(b)
        );
        interp.raise("ValueError", Code::ShapeMismatch, msg)
    } else {
        let msg = format!(
            "{{{{function_node __wrapped____MklMatMul_device_/job:localhost/replica:0/task:0/device:CPU:0}}}} Matrix size-incompatible: In[0]: {}, In[1]: {} [Op:MatMul] name: ",
            dims(a),
            dims(b)
        );
        interp.raise("InvalidArgumentError", Code::ShapeMismatch, msg)
    }
}

/// `tf.reshape` to a shape of another size.
pub fn reshape_mismatch(interp: &Interp, from: &[usize], to: &[usize]) -> Flow {
    let (n, m) = (from.iter().product::<usize>(), to.iter().product::<usize>());
    if super::in_graph(interp) {
        let msg = format!(
            "Cannot reshape a tensor with {n} elements to shape {} ({m} elements) for '{{{{node Reshape}}}}' with input shapes: {}, [{}].",
            dims(to),
            dims(from),
            to.len()
        );
        interp.raise("ValueError", Code::ShapeMismatch, msg)
    } else {
        let msg =
            format!("{} Input to reshape is a tensor with {n} values, but the requested shape has {m} [Op:Reshape]", wrapped("Reshape"));
        interp.raise("InvalidArgumentError", Code::ShapeMismatch, msg)
    }
}

/// `tf.concat` of tensors whose other dimensions differ: `a` and `b` are the two shapes,
/// `axis` the concatenated one and `dim` the first other dimension that differs.
pub fn concat_mismatch(interp: &Interp, a: &[usize], b: &[usize], axis: usize, dim: usize) -> Flow {
    if super::in_graph(interp) {
        // Shape inference compares the shapes with the concatenated axis removed.
        let rest = |s: &[usize]| s.iter().enumerate().filter(|(i, _)| *i != axis).map(|(_, d)| *d).collect::<Vec<_>>();
        let (ra, rb) = (rest(a), rest(b));
        let k = if dim > axis { dim - 1 } else { dim };
        let msg = format!(
            "Dimension {k} in both shapes must be equal, but are {} and {}. Shapes are {} and {}. for '{{{{node concat}}}}'",
            a[dim],
            b[dim],
            dims(&ra),
            dims(&rb)
        );
        interp.raise("ValueError", Code::ShapeMismatch, msg)
    } else {
        let msg = format!(
            "{} ConcatOp : Dimension {dim} in both shapes must be equal: shape[0] = {} vs. shape[1] = {} [Op:ConcatV2] name: concat",
            wrapped("ConcatV2_N_2"),
            dims(a),
            dims(b)
        );
        interp.raise("InvalidArgumentError", Code::ShapeMismatch, msg)
    }
}

/// A reduction over an axis the tensor does not have.
pub fn reduction_axis(interp: &Interp, axis: i64, ndim: usize, node: &str) -> Flow {
    if super::in_graph(interp) {
        let msg = format!("Invalid reduction dimension {axis} for input with {ndim} dimensions. for '{{{{node {node}}}}}'");
        interp.raise("ValueError", Code::ShapeMismatch, msg)
    } else {
        let msg = format!("{} Invalid reduction dimension ({axis} for input with {ndim} dimension(s) [Op:{node}] name: ", wrapped(node));
        interp.raise("InvalidArgumentError", Code::ShapeMismatch, msg)
    }
}

/// `v.assign_add(x)` / `v.assign_sub(x)` with `x` of another shape (`op` is
/// `AssignAddVariableOp` or `AssignSubVariableOp`): the shapes must be equal, no broadcasting.
pub fn update_mismatch(interp: &Interp, op: &str, var: &[usize], value: &[usize]) -> Flow {
    if super::in_graph(interp) {
        let msg = if var.len() != value.len() {
            format!("Shapes must be equal rank, but are {} and {} for '{{{{node {op}}}}}'", var.len(), value.len())
        } else {
            let (i, (a, b)) = var.iter().zip(value).enumerate().find(|(_, (a, b))| a != b).unwrap_or((0, (&0, &0)));
            format!(
                "Dimension {i} in both shapes must be equal, but are {a} and {b}. Shapes are {} and {}. for '{{{{node {op}}}}}'",
                dims(var),
                dims(value)
            )
        };
        interp.raise("ValueError", Code::ShapeMismatch, msg)
    } else {
        let msg = format!(
            "{} Cannot update variable with shape {} using a Tensor with shape {}, shapes must be equal. [Op:{op}] name: ",
            wrapped(op),
            dims(var),
            dims(value)
        );
        interp.raise("InvalidArgumentError", Code::ShapeMismatch, msg)
    }
}

/// A stateless random op's `seed` must have shape `[2]`: eagerly the kernel's
/// `InvalidArgumentError`; in a graph shape inference checks the rank.
pub fn stateless_seed(interp: &Interp, node: &str, seed: &[usize]) -> Result<(), Flow> {
    if super::in_graph(interp) {
        if seed.len() != 1 {
            let msg = format!(
                "Shape must be rank 1 but is rank {} for '{{{{node {node}/StatelessRandomGetKeyCounter}}}} = StatelessRandomGetKeyCounter[Tseed=DT_INT32]({node}/StatelessRandomGetKeyCounter/seed)' with input shapes: {}.",
                seed.len(),
                dims(seed)
            );
            return Err(interp.raise("ValueError", Code::ShapeMismatch, msg));
        }
        return Ok(());
    }
    if seed != [2] {
        let msg = format!(
            "{} seed must have shape [2], not {} [Op:StatelessRandomGetKeyCounter] name: ",
            wrapped("StatelessRandomGetKeyCounter"),
            dims(seed)
        );
        return Err(interp.raise("InvalidArgumentError", Code::ShapeMismatch, msg));
    }
    Ok(())
}

/// `t[i]` with `i` out of the bounds of dimension `dim` (`index` as `StridedSlice` prints
/// it: a negative index plus the dimension's size).
pub fn slice_index(interp: &Interp, index: i64, dim: usize) -> Flow {
    if super::in_graph(interp) {
        let msg = format!("slice index {index} of dimension {dim} out of bounds. for '{{{{node strided_slice}}}}'");
        interp.raise("ValueError", Code::PythonException, msg)
    } else {
        let msg = format!(
            "{} slice index {index} of dimension {dim} out of bounds. [Op:StridedSlice] name: strided_slice/",
            wrapped("StridedSlice")
        );
        interp.raise("InvalidArgumentError", Code::PythonException, msg)
    }
}
