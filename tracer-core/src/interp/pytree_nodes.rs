//! What a pytree node of the interpreter's own values is, as JAX's tree utilities see it,
//! read without the JAX model: the order JAX gives dict keys, a user class's registration
//! (`register_pytree_node`, a registered dataclass), and an instance's children. The hover's
//! `seen.rs`, `flatten_read.rs` and the JAX model's `transforms/pytrees.rs` (which re-exports
//! them) read these; the children of a `register_pytree_node` instance are those the JAX
//! model noted when it last flattened or unflattened it (`JaxState::custom_children`).

use std::rc::Rc;

use super::value::{Class, HashKey, PytreeRegistration, Value};
use super::Interp;

/// A dict key as JAX's key paths write it (`'a'`, `0`).
pub(crate) fn key_text(k: &HashKey) -> String {
    match k {
        HashKey::Str(s) => format!("'{s}'"),
        HashKey::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// One step of a leaf's key path, as JAX's `keystr` writes it. Appended without the
/// formatting machinery: flattening writes a step for every leaf of every pytree a jitted
/// call takes, and hover values one for every leaf they show.
#[derive(Clone, Copy)]
pub(crate) enum Key<'a> {
    /// `['w']`
    Str(&'a str),
    /// `[0]`
    Index(i64),
    /// `.bias`
    Attr(&'a str),
    /// `[<flat index 0>]`
    FlatIndex(usize),
    /// A dict key other than a string or an int, as `key_text` writes it.
    Other(&'a HashKey),
}

impl<'a> Key<'a> {
    /// A dict key's step: `['w']`, `[0]`, or `[` + `key_text` + `]`.
    pub(crate) fn of_dict_key(key: &'a HashKey) -> Key<'a> {
        match key {
            HashKey::Str(s) => Key::Str(s),
            HashKey::Int(i) => Key::Index(*i),
            other => Key::Other(other),
        }
    }

    /// A sequence item's step, `[i]`.
    pub(crate) fn index(i: usize) -> Key<'a> {
        Key::Index(i as i64)
    }

    pub(crate) fn push_onto(self, path: &mut String) {
        let mut number = itoa::Buffer::new();
        match self {
            Key::Str(s) => {
                path.push_str("['");
                path.push_str(s);
                path.push_str("']");
            }
            Key::Index(i) => {
                path.push('[');
                path.push_str(number.format(i));
                path.push(']');
            }
            Key::Attr(name) => {
                path.push('.');
                path.push_str(name);
            }
            Key::FlatIndex(i) => {
                path.push_str("[<flat index ");
                path.push_str(number.format(i));
                path.push_str(">]");
            }
            Key::Other(key) => {
                path.push('[');
                path.push_str(&key_text(key));
                path.push(']');
            }
        }
    }
}

/// The order JAX gives dict keys: `sorted(keys)`, so numbers by value and strings by text
/// (keys Python cannot compare, which JAX rejects, fall back to their text).
pub(crate) fn dict_key_order(a: &HashKey, b: &HashKey) -> std::cmp::Ordering {
    fn number(k: &HashKey) -> Option<f64> {
        match k {
            HashKey::Int(i) => Some(*i as f64),
            HashKey::Float(bits) => Some(f64::from_bits(*bits)),
            _ => None,
        }
    }
    match (a, b) {
        (HashKey::Str(x), HashKey::Str(y)) => x.cmp(y),
        (HashKey::Int(x), HashKey::Int(y)) => x.cmp(y),
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => key_text(a).cmp(&key_text(b)),
        },
    }
}

pub(crate) fn registration(class: &Rc<Class>) -> Option<PytreeRegistration> {
    for c in class.mro() {
        if let Some(r) = c.pytree.borrow().clone() {
            return Some(r);
        }
    }
    None
}

/// The children of a user pytree class's instance (a NamedTuple, a registered dataclass, a
/// class registered with `register_pytree_node` that was flattened or unflattened before),
/// in flattening order, without running user code; `None` for anything else.
pub fn class_children(interp: &Interp, v: &Value) -> Option<Vec<Value>> {
    let Value::Instance(inst) = v else { return None };
    if let Some(items) = &inst.tuple {
        return Some(items.clone());
    }
    match registration(&inst.class)? {
        PytreeRegistration::Fields { data, .. } => {
            Some(data.iter().map(|f| inst.attrs.borrow().get(f).cloned().unwrap_or(Value::None)).collect())
        }
        PytreeRegistration::Custom { .. } => {
            let children = crate::interp::model::state::custom_children(interp, inst)?;
            // Children noted before an attribute was assigned again are not the instance's
            // any more: each child with an identity must still be one of its attributes (or
            // an item of a tuple or list attribute).
            let attrs = inst.attrs.borrow();
            let held = |id: usize| {
                attrs.values().any(|a| {
                    a.identity() == Some(id)
                        || match a {
                            Value::Tuple(items) => items.iter().any(|x| x.identity() == Some(id)),
                            Value::List(items) => items.borrow().iter().any(|x| x.identity() == Some(id)),
                            _ => false,
                        }
                })
            };
            children.iter().all(|c| c.identity().is_none_or(held)).then(|| children.clone())
        }
    }
}
