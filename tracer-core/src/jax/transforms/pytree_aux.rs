//! The key a custom pytree node's aux data is compared by, as JAX compares it with `==`:
//! aux data that does not hash (lists, dicts, a PyTreeDef) is compared by structure.

use std::rc::Rc;

use super::dispatch::JaxObject;
use super::pytrees::TreeDef;
use crate::interp::builtins::Builtin;
use crate::interp::value::{HashKey, Value};
use crate::interp::Interp;

/// The key a custom node's aux data is compared by. JAX compares aux data with `==` (a
/// treedef's hash leaves it out), so aux data that does not hash (distrax keeps lists of
/// metadata and a PyTreeDef in it) is compared by structure: tuples, lists and dicts item by
/// item, a PyTreeDef by its structure, anything else by its hash, or identity without one.
pub(super) fn aux_key(interp: &mut Interp, v: &Value) -> HashKey {
    let tagged = |tag: &str, items: Vec<HashKey>| HashKey::Tuple(std::iter::once(HashKey::Str(Rc::from(tag))).chain(items).collect());
    match v {
        Value::Tuple(items) => HashKey::Tuple(items.iter().map(|x| aux_key(interp, x)).collect()),
        Value::List(items) => {
            let items = items.borrow().clone();
            tagged("<list>", items.iter().map(|x| aux_key(interp, x)).collect())
        }
        Value::Dict(d) => {
            let entries: Vec<(HashKey, Value)> = d.borrow().entries.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect();
            tagged("<dict>", entries.into_iter().map(|(k, v)| HashKey::Tuple(vec![k, aux_key(interp, &v)])).collect())
        }
        Value::Builtin(b) if let Builtin::Object(JaxObject::TreeDef(t)) = &**b => tagged("<treedef>", vec![treedef_key(t)]),
        _ => interp.hash_key(v).unwrap_or(HashKey::Identity(v.identity().unwrap_or(0))),
    }
}

/// A treedef's structure as a key: equal keys for equal treedefs.
fn treedef_key(t: &TreeDef) -> HashKey {
    let tagged = |tag: &str, items: Vec<HashKey>| HashKey::Tuple(std::iter::once(HashKey::Str(Rc::from(tag))).chain(items).collect());
    match t {
        TreeDef::Leaf => HashKey::Str(Rc::from("*")),
        TreeDef::None => HashKey::None,
        TreeDef::Tuple(c) => tagged("tuple", c.iter().map(treedef_key).collect()),
        TreeDef::List(c) => tagged("list", c.iter().map(treedef_key).collect()),
        TreeDef::Dict(c) => tagged("dict", c.iter().map(|(k, c)| HashKey::Tuple(vec![k.clone(), treedef_key(c)])).collect()),
        TreeDef::Node { class, meta, children, .. } => tagged(
            "node",
            vec![
                HashKey::Identity(Rc::as_ptr(&class.0) as usize),
                HashKey::Tuple(meta.iter().map(|m| HashKey::Tuple(vec![HashKey::Str(m.name.clone()), m.key.clone()])).collect()),
                HashKey::Tuple(children.iter().map(treedef_key).collect()),
            ],
        ),
    }
}
