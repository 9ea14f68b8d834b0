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
/// and how many items of one container: a handed-out model's layers' variables are reached,
/// a dataset held in a list is not walked.
const DEPTH: u32 = 4;
const ITEMS: usize = 256;

/// Forgets the values of the variables reachable from `v`. Inside a trace nothing changes:
/// the variable's reads there are the graph's, and the call runs when the graph does.
pub fn forget_variables(interp: &Interp, v: &Value) {
    if interp.jax.staging_depth() == 0 {
        walk(v, DEPTH);
    }
}

fn walk(v: &Value, depth: u32) {
    if depth == 0 {
        return;
    }
    match v {
        Value::Builtin(b) => {
            if let Builtin::Tf(TfValue::Variable(var)) = &**b {
                let aval = var.value.borrow().aval.clone();
                let forgotten = Array::unknown(aval, "a tf.Variable handed to code tracelens does not model");
                forgotten.tf.set(true);
                *var.value.borrow_mut() = forgotten;
            }
        }
        Value::List(l) => l.borrow().iter().take(ITEMS).for_each(|x| walk(x, depth - 1)),
        Value::Tuple(t) => t.iter().take(ITEMS).for_each(|x| walk(x, depth - 1)),
        Value::Dict(d) => d.borrow().entries.values().take(ITEMS).for_each(|(_, x)| walk(x, depth - 1)),
        Value::Instance(inst) => {
            let attrs: Vec<Value> = inst.attrs.borrow().values().take(ITEMS).cloned().collect();
            attrs.iter().for_each(|x| walk(x, depth - 1));
        }
        _ => {}
    }
}
