//! A `tf.Variable` handed to code tracelens does not model may be assigned there: restored
//! from a checkpoint (`tf.train.Checkpoint(model=m).restore(path)`), trained by an optimizer
//! it does not know, loaded. From then on its value is not known; its shape and dtype are
//! kept, as every assignment keeps them.

use crate::interp::builtins::Builtin;
use crate::interp::value::Value;
use crate::interp::Interp;
use crate::jax::array::Array;

use super::TfValue;

/// How deep into lists, tuples, dicts and objects' attributes the variables are looked for,
/// and how many values one call visits in all: a handed-out model's layers' variables are
/// reached, a dataset held in nested lists is not walked (an unknown call is a hot path).
const DEPTH: u32 = 4;
const VISITS: usize = 1024;

/// Forgets the values of the variables reachable from `v`. Inside a trace nothing changes:
/// the variable's reads there are the graph's, and the call runs when the graph does.
pub fn forget_variables(interp: &Interp, v: &Value) {
    if interp.jax.staging_depth() == 0 {
        walk(v, DEPTH, &mut { VISITS });
    }
}

fn walk(v: &Value, depth: u32, left: &mut usize) {
    if depth == 0 || *left == 0 {
        return;
    }
    *left -= 1;
    match v {
        Value::Builtin(b) => {
            if let Builtin::Tf(TfValue::Variable(var)) = &**b {
                let aval = var.value.borrow().aval.clone();
                let forgotten = Array::unknown(aval, "a tf.Variable handed to code tracelens does not model");
                forgotten.tf.set(true);
                *var.value.borrow_mut() = forgotten;
            }
        }
        Value::List(l) => walk_all(l.borrow().iter(), depth - 1, left),
        Value::Tuple(t) => walk_all(t.iter(), depth - 1, left),
        Value::Dict(d) => walk_all(d.borrow().entries.values().map(|(_, x)| x), depth - 1, left),
        Value::Instance(inst) => walk_all(inst.attrs.borrow().values(), depth - 1, left),
        _ => {}
    }
}

fn walk_all<'v>(items: impl Iterator<Item = &'v Value>, depth: u32, left: &mut usize) {
    for x in items {
        if *left == 0 {
            return;
        }
        walk(x, depth, left);
    }
}
