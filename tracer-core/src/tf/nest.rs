//! `tf.nest` as `tf.while_loop` uses it on its loop variables: tuples, lists and dicts of
//! leaves (tensors, TensorArrays). Two structures are the same when their sequences have the
//! same lengths (a tuple and a list of one length match, as `check_types=False` lets them)
//! and their dicts the same keys; a leaf's path (`[1]['h']`) names it in messages.

use crate::interp::value::{Dict, Value};
use crate::interp::{Interp, PyResult};

/// A function of one leaf and its path; `None` when the leaf is not followed.
pub type LeafFn<'a> = dyn FnMut(&mut Interp, &Value, &str) -> PyResult<Option<Value>> + 'a;

/// `v` with every leaf replaced by `f`'s value (the containers rebuilt, dicts in their
/// order); `None` when `f` gives `None` for a leaf.
pub fn map(interp: &mut Interp, v: &Value, path: &str, f: &mut LeafFn) -> PyResult<Option<Value>> {
    Ok(Some(match v {
        Value::Tuple(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let Some(m) = map(interp, item, &format!("{path}[{i}]"), f)? else { return Ok(None) };
                out.push(m);
            }
            Value::tuple(out)
        }
        Value::List(items) => {
            let items = items.borrow().clone();
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let Some(m) = map(interp, item, &format!("{path}[{i}]"), f)? else { return Ok(None) };
                out.push(m);
            }
            Value::list(out)
        }
        Value::Dict(d) => {
            let entries: Vec<_> = d.borrow().entries.iter().map(|(h, (k, v))| (h.clone(), k.clone(), v.clone())).collect();
            let mut out = Dict::default();
            for (h, k, item) in entries {
                let key = key_text(&k);
                let Some(m) = map(interp, &item, &format!("{path}[{key}]"), f)? else { return Ok(None) };
                out.insert(h, k, m);
            }
            interp.new_dict(out)
        }
        leaf => return f(interp, leaf, path),
    }))
}

fn is_sequence(v: &Value) -> bool {
    matches!(v, Value::Tuple(_) | Value::List(_))
}

fn sequence(v: &Value) -> Vec<Value> {
    match v {
        Value::Tuple(items) => items.to_vec(),
        Value::List(items) => items.borrow().clone(),
        _ => Vec::new(),
    }
}

/// Whether `a` and `b` have the same nested structure.
pub fn same_structure(a: &Value, b: &Value) -> bool {
    same(a, b, false)
}

/// Whether `a` and `b` have the same nested structure with the same kind of sequence at each
/// level (a list is not a tuple): `nest.assert_same_structure(..., check_types=True)`.
pub fn same_structure_and_types(a: &Value, b: &Value) -> bool {
    same(a, b, true)
}

fn same(a: &Value, b: &Value, check_types: bool) -> bool {
    match (a, b) {
        (x, y) if is_sequence(x) && is_sequence(y) => {
            let (kind_x, kind_y) = (std::mem::discriminant(x), std::mem::discriminant(y));
            let (x, y) = (sequence(x), sequence(y));
            (!check_types || kind_x == kind_y) && x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| same(p, q, check_types))
        }
        (Value::Dict(x), Value::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len() && x.entries.iter().all(|(h, (_, v))| y.get(h).is_some_and(|w| same(v, w, check_types)))
        }
        (x, y) => !is_sequence(x) && !is_sequence(y) && !matches!(x, Value::Dict(_)) && !matches!(y, Value::Dict(_)),
    }
}

/// The leaves of `a` and `b` (of the same structure) in pairs, with their paths; `b`'s dict
/// entries are found by `a`'s keys.
pub fn zip_leaves(a: &Value, b: &Value, path: &str, out: &mut Vec<(Value, Value, String)>) {
    match (a, b) {
        (x, y) if is_sequence(x) && is_sequence(y) => {
            for (i, (p, q)) in sequence(x).iter().zip(&sequence(y)).enumerate() {
                zip_leaves(p, q, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Dict(x), Value::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            for (h, (k, v)) in x.entries.iter() {
                if let Some(w) = y.get(h) {
                    zip_leaves(v, w, &format!("{path}[{}]", key_text(k)), out);
                }
            }
        }
        (x, y) => out.push((x.clone(), y.clone(), path.to_string())),
    }
}

/// A dict key as a path shows it.
fn key_text(k: &Value) -> String {
    match k {
        Value::Str(s) => format!("'{s}'"),
        Value::Int(i) => i.to_string(),
        _ => "?".into(),
    }
}
