//! A reproducer staged out of a `tf.function` trace, as TensorFlow writes it: the same
//! `Program` as a JAX one, whose function is decorated `@tf.function` with an
//! `input_signature` of the traced specs and called on `tf.ones` tensors of them. Only a
//! program of TensorFlow ops, operators, indexing and tensor methods is one: anything the
//! JAX side writes that TensorFlow has no spelling for (a `jnp` call, a function passed to
//! an API, a named dimension) keeps the error to the source cut.

use super::{Expr, Input, Op, Program, Wrap};
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;

/// Makes `p`, staged out of a `tf.function` trace, a TensorFlow program: the dtypes its
/// arguments name become TensorFlow's (`jnp.int32` → `tf.int32`). An error says what it
/// cannot write.
pub fn to_tensorflow(p: &mut Program) -> Result<(), String> {
    // A function passed to an op is written from the statements TensorFlow traced of it,
    // made TensorFlow's by its own slice; a trace of another library's is not one.
    if p.helpers.iter().any(|h| h.wrap != Wrap::TfFunction) {
        return Err("a function passed to an op is not a TensorFlow trace".into());
    }
    // A loop variable whose graph tensor tracelens cannot name (`Const_1:0`) is named by its
    // place in `loop_vars`: the program's own graph would name it after its own ops.
    if p.message.contains("loop_vars[") {
        return Err("the message names a loop variable by a graph tensor tracelens does not know".into());
    }
    // TensorFlow's graph messages go on with the names of the node and of its inputs, which
    // depend on every op made before it in the graph: a program of the slice names others.
    if p.message.contains("{{node") {
        return Err("the message names graph nodes".into());
    }
    if !p.symbolic.is_empty() {
        return Err("named dimensions are JAX's".into());
    }
    for line in &p.body {
        match &line.op {
            Op::Api(name) if name.starts_with("tf.") => {}
            Op::BinOp(_) | Op::Compare(_) | Op::Unary(_) | Op::GetItem | Op::SetItem | Op::Method(_) | Op::Attr(_) | Op::Converted(_) => {}
            // `if t:`, raising only where AutoGraph does not convert it (`decorator`).
            Op::Concretize(what) if what == "bool" => {}
            other => return Err(format!("line {}: {other:?} has no TensorFlow spelling here", line.user_line)),
        }
    }
    for input in p.params.iter().chain(&p.consts) {
        dtype(input.aval.dtype).ok_or_else(|| format!("{} is not a TensorFlow dtype", input.aval.short()))?;
    }
    let mut bad = None;
    for line in p.body.iter_mut() {
        for e in line.args.iter_mut().chain(line.kwargs.iter_mut().map(|(_, e)| e)) {
            retype(e, &mut bad);
        }
    }
    for e in p.returns.iter_mut().flatten() {
        retype(e, &mut bad);
    }
    match bad {
        Some(lit) => Err(format!("{lit} is not TensorFlow's")),
        None => Ok(()),
    }
}

/// `jnp.float32` as `tf.float32`; notes in `bad` a literal of another library.
fn retype(e: &mut Expr, bad: &mut Option<String>) {
    match e {
        Expr::Lit(l) => {
            if let Some(name) = l.strip_prefix("jnp.") {
                match DType::from_name(name).and_then(dtype) {
                    Some(t) => *l = t,
                    None => *bad = Some(l.clone()),
                }
            } else if ["jax.", "lax.", "functools.", "np."].iter().any(|m| l.contains(m)) {
                *bad = Some(l.clone());
            }
        }
        Expr::Name(_) => {}
        Expr::Tuple(items) | Expr::List(items) => items.iter_mut().for_each(|x| retype(x, bad)),
        Expr::Dict(items) => items.iter_mut().for_each(|(_, x)| retype(x, bad)),
        Expr::Slice(s) => s.iter_mut().for_each(|x| retype(x, bad)),
    }
}

/// The dtype as TensorFlow names it; `None` for one it does not have (a PRNG key).
pub fn dtype(d: DType) -> Option<String> {
    (!d.is_key()).then(|| format!("tf.{}", d.name()))
}

/// A tensor of the input's aval: its values when known (`tf.constant(np.array(...))`),
/// else `tf.ones(shape, dtype)`.
pub fn tensor(input: &Input) -> String {
    match &input.literal {
        Some(l) => format!("tf.constant({l})"),
        None => ones(&input.aval),
    }
}

pub fn ones(aval: &Aval) -> String {
    format!("tf.ones({}, {})", aval.shape_tuple(), dtype(aval.dtype).unwrap_or_default())
}

/// `@tf.function(input_signature=[...])` for the parameters the function takes, so it is
/// traced once, for exactly these specs; with `autograph=False` when the body uses a tensor
/// as a Python `bool` (`if t:`), which raises only where AutoGraph does not convert it (the
/// user's `autograph=False` or `do_not_convert`, whose message is the same).
pub fn decorator(p: &Program, params: &[&Input]) -> String {
    let unconverted = p.body.iter().any(|l| matches!(&l.op, Op::Concretize(what) if what == "bool"));
    let autograph = if unconverted { ", autograph=False" } else { "" };
    if params.is_empty() {
        return if unconverted { "@tf.function(autograph=False)".into() } else { "@tf.function".into() };
    }
    let specs: Vec<String> = params
        .iter()
        .map(|x| format!("tf.TensorSpec(shape={}, dtype={})", x.aval.shape_tuple(), dtype(x.aval.dtype).unwrap_or_default()))
        .collect();
    format!("@tf.function(input_signature=[{}]{autograph})", specs.join(", "))
}
