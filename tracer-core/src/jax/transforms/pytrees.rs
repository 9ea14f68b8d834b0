//! Pytrees (JAX's `PyTreeDef`): flattening a value into leaves and a structure, rebuilding
//! it, the order of dict keys, registered classes (`register_pytree_node`, dataclasses,
//! NamedTuples), `jax.tree.map` with its prefix check, and the leaf types the other
//! transformations compare.

use super::dispatch::{kw, obj, JaxObject};
use crate::diagnostics::Code;
use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
pub use crate::interp::pytree_nodes::class_children;
use crate::interp::pytree_nodes::Key;
pub(crate) use crate::interp::pytree_nodes::{dict_key_order, key_text, registration};
use crate::interp::value::{Class, Dict, HashKey, Instance, PytreeRegistration, Value};
use crate::interp::{Interp, PyResult};
use crate::jax::aval::Aval;
use crate::jax::numpy::{operand, Operand};
use crate::jax::surface::JaxFn;
use std::cell::RefCell;
use std::rc::Rc;

/// A pytree's structure: JAX's PyTreeDef.
#[derive(Debug, Clone, PartialEq)]
pub enum TreeDef {
    Leaf,
    None,
    Tuple(Vec<TreeDef>),
    List(Vec<TreeDef>),
    Dict(Vec<(HashKey, TreeDef)>),
    /// A NamedTuple, dataclass or registered class, by class identity.
    Node {
        class: ClassRef,
        /// Static fields (name, hash, value) or a custom node's aux data (named `""`).
        meta: Vec<Meta>,
        children: Vec<TreeDef>,
        names: Vec<String>,
    },
}

/// A pytree node's static data: compared by hash, kept whole to rebuild the node.
#[derive(Debug, Clone)]
pub struct Meta {
    pub name: Rc<str>,
    pub key: HashKey,
    pub value: Value,
}

impl PartialEq for Meta {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.key == other.key
    }
}

#[derive(Debug, Clone)]
pub struct ClassRef(pub Rc<Class>);

impl PartialEq for ClassRef {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

/// The Python value of a dict key, back from its hash key.
fn key_value(h: &HashKey) -> Value {
    match h {
        HashKey::Str(s) => Value::Str(s.clone()),
        HashKey::Int(i) => Value::Int(*i),
        HashKey::None => Value::None,
        _ => Value::opaque("a dict key"),
    }
}

impl TreeDef {
    /// `treedef1 == treedef2`: by structure, node classes and static data. Not known when
    /// they differ only where a custom node's aux data is compared by identity here (JAX
    /// compares it with `==`).
    pub fn equals(&self, other: &TreeDef) -> Option<bool> {
        if self == other {
            Some(true)
        } else if self.has_identity_meta() || other.has_identity_meta() {
            None
        } else {
            Some(false)
        }
    }
    fn has_identity_meta(&self) -> bool {
        match self {
            TreeDef::Leaf | TreeDef::None => false,
            TreeDef::Tuple(c) | TreeDef::List(c) => c.iter().any(TreeDef::has_identity_meta),
            TreeDef::Dict(c) => c.iter().any(|(_, t)| t.has_identity_meta()),
            TreeDef::Node { meta, children, .. } => {
                meta.iter().any(|m| matches!(m.key, HashKey::Identity(_))) || children.iter().any(TreeDef::has_identity_meta)
            }
        }
    }
    pub fn num_leaves(&self) -> usize {
        match self {
            TreeDef::Leaf => 1,
            TreeDef::None => 0,
            TreeDef::Tuple(c) | TreeDef::List(c) => c.iter().map(|t| t.num_leaves()).sum(),
            TreeDef::Dict(c) => c.iter().map(|(_, t)| t.num_leaves()).sum(),
            TreeDef::Node { children, .. } => children.iter().map(|t| t.num_leaves()).sum(),
        }
    }
    /// `str(treedef)` as JAX prints it (`PyTreeDef({'a': *, 'b': (*, None)})`), when the
    /// tree has only builtin containers and simple keys; `None` for a custom node (JAX prints
    /// its class path and auxiliary data) or another key.
    pub fn python_text(&self) -> Option<String> {
        fn simple(t: &TreeDef) -> bool {
            match t {
                TreeDef::Leaf | TreeDef::None => true,
                TreeDef::Tuple(c) | TreeDef::List(c) => c.iter().all(simple),
                TreeDef::Dict(c) => c.iter().all(|(k, t)| {
                    let key = match k {
                        HashKey::Int(_) => true,
                        HashKey::Str(s) => s.chars().all(|ch| ch.is_alphanumeric() || ch == '_'),
                        _ => false,
                    };
                    key && simple(t)
                }),
                TreeDef::Node { .. } => false,
            }
        }
        simple(self).then(|| format!("PyTreeDef({})", self.describe()))
    }

    pub(super) fn describe(&self) -> String {
        match self {
            TreeDef::Leaf => "*".into(),
            TreeDef::None => "None".into(),
            TreeDef::Tuple(c) => format!("({})", c.iter().map(|t| t.describe()).collect::<Vec<_>>().join(", ")),
            TreeDef::List(c) => format!("[{}]", c.iter().map(|t| t.describe()).collect::<Vec<_>>().join(", ")),
            TreeDef::Dict(c) => {
                format!("{{{}}}", c.iter().map(|(k, t)| format!("{}: {}", key_text(k), t.describe())).collect::<Vec<_>>().join(", "))
            }
            TreeDef::Node { class, children, .. } => {
                format!("{}({})", class.0.name, children.iter().map(|t| t.describe()).collect::<Vec<_>>().join(", "))
            }
        }
    }
}

/// Each output leaf's path as JAX's debug info names a traced function's results
/// (`result`, `result[0]['loss']`, `result[1].mu`). With `user_params` (a shim's wrapper that
/// returns `(states, out, node_leaves)`, nnx.jit's), the states are named after the user's
/// arguments they update (`model['linear/kernel']`) and `out` is the user's `result`.
pub fn result_paths(tree: &TreeDef, user_params: Option<&[String]>) -> Vec<String> {
    let mut out = Vec::with_capacity(tree.num_leaves());
    match (user_params, tree) {
        (Some(params), TreeDef::Tuple(parts)) if parts.len() == 3 => {
            let states = match &parts[0] {
                TreeDef::List(c) | TreeDef::Tuple(c) => c.as_slice(),
                _ => &[],
            };
            for (i, s) in states.iter().enumerate() {
                let name = params.get(i).cloned().unwrap_or_else(|| format!("args[{i}]"));
                leaf_paths(s, &mut name.clone(), &mut out);
            }
            leaf_paths(&parts[1], &mut "result".to_string(), &mut out);
            leaf_paths(&parts[2], &mut "result".to_string(), &mut out);
        }
        _ => leaf_paths(tree, &mut "result".to_string(), &mut out),
    }
    if out.len() == tree.num_leaves() {
        out
    } else {
        Vec::new()
    }
}

/// `tree`'s leaf paths after `path`, keyed as `flatten` keys them.
fn leaf_paths(tree: &TreeDef, path: &mut String, out: &mut Vec<String>) {
    let base = path.len();
    // Each step is appended by the caller, and taken off here.
    let mut child = |path: &mut String, t: &TreeDef| {
        leaf_paths(t, path, out);
        path.truncate(base);
    };
    match tree {
        TreeDef::Leaf => out.push(path.clone()),
        TreeDef::None => {}
        TreeDef::Tuple(c) | TreeDef::List(c) => c.iter().enumerate().for_each(|(i, t)| {
            Key::index(i).push_onto(path);
            child(path, t)
        }),
        TreeDef::Dict(c) => c.iter().for_each(|(k, t)| {
            Key::of_dict_key(k).push_onto(path);
            child(path, t)
        }),
        TreeDef::Node { children, names, .. } => children.iter().enumerate().for_each(|(i, t)| {
            match names.get(i) {
                Some(n) => path.push_str(&key_suffix(n)),
                None => Key::index(i).push_onto(path),
            }
            child(path, t)
        }),
    }
}

/// Flattens a pytree into leaves (with their key paths) and its structure.
pub fn flatten(interp: &mut Interp, v: &Value, path: &str, leaves: &mut Vec<(String, Value)>) -> PyResult<TreeDef> {
    let mut buf = String::with_capacity(path.len() + 16);
    buf.push_str(path);
    flatten_into(interp, v, &mut buf, leaves, None)
}

/// `flatten` with JAX's `is_leaf`: a subtree for which it returns true is one leaf.
pub fn flatten_with_is_leaf(
    interp: &mut Interp,
    v: &Value,
    is_leaf: Option<&Value>,
    leaves: &mut Vec<(String, Value)>,
) -> PyResult<TreeDef> {
    let is_leaf = is_leaf.filter(|f| !f.is_none());
    flatten_into(interp, v, &mut String::new(), leaves, is_leaf)
}

/// `flatten` with one growing path buffer: each level appends its key and truncates it back.
fn flatten_into(
    interp: &mut Interp,
    v: &Value,
    path: &mut String,
    leaves: &mut Vec<(String, Value)>,
    is_leaf: Option<&Value>,
) -> PyResult<TreeDef> {
    if let Some(f) = is_leaf {
        let answer = interp.call(f, vec![v.clone()], Vec::new())?;
        if interp.truthy(&answer)? {
            leaves.push((path.clone(), v.clone()));
            return Ok(TreeDef::Leaf);
        }
    }
    let base = path.len();
    // Each step is appended by the caller (`Key::push_onto`), and taken off here.
    let mut child = |interp: &mut Interp, path: &mut String, x: &Value| {
        let t = flatten_into(interp, x, path, leaves, is_leaf);
        path.truncate(base);
        t
    };
    Ok(match v {
        Value::None => TreeDef::None,
        Value::Tuple(items) => {
            let mut c = Vec::with_capacity(items.len());
            for (i, x) in items.iter().enumerate() {
                Key::index(i).push_onto(path);
                c.push(child(interp, path, x)?);
            }
            TreeDef::Tuple(c)
        }
        Value::List(items) => {
            let items = items.borrow().clone();
            let mut c = Vec::with_capacity(items.len());
            for (i, x) in items.iter().enumerate() {
                Key::index(i).push_onto(path);
                c.push(child(interp, path, x)?);
            }
            TreeDef::List(c)
        }
        Value::Dict(d) => {
            // JAX sorts dict keys by value.
            let mut items = d.borrow().entries.iter().map(|(h, (_, v))| (h.clone(), v.clone())).collect::<Vec<_>>();
            items.sort_by(|a, b| dict_key_order(&a.0, &b.0));
            let mut c = Vec::with_capacity(items.len());
            for (h, x) in items {
                Key::of_dict_key(&h).push_onto(path);
                let sub = child(interp, path, &x)?;
                c.push((h, sub));
            }
            TreeDef::Dict(c)
        }
        Value::Instance(inst) => {
            if let Some(items) = &inst.tuple {
                let names: Vec<String> = inst.class.fields.borrow().iter().map(|f| f.to_string()).collect();
                let mut c = Vec::with_capacity(items.len());
                for (i, x) in items.iter().enumerate() {
                    match names.get(i) {
                        Some(n) => Key::Attr(n).push_onto(path),
                        None => Key::Attr(itoa::Buffer::new().format(i)).push_onto(path),
                    }
                    c.push(child(interp, path, x)?);
                }
                return Ok(TreeDef::Node { class: ClassRef(inst.class.clone()), meta: Vec::new(), children: c, names });
            }
            let reg = registration(&inst.class);
            match reg {
                Some(PytreeRegistration::Fields { data, meta }) => {
                    let mut c = Vec::with_capacity(data.len());
                    for f in &data {
                        let x = inst.attrs.borrow().get(f).cloned().unwrap_or(Value::None);
                        Key::Attr(f).push_onto(path);
                        c.push(child(interp, path, &x)?);
                    }
                    let mut m = Vec::new();
                    for f in &meta {
                        let x = inst.attrs.borrow().get(f).cloned().unwrap_or(Value::None);
                        let key = interp.hash_key(&x).unwrap_or(HashKey::None);
                        m.push(Meta { name: f.clone(), key, value: x });
                    }
                    TreeDef::Node {
                        class: ClassRef(inst.class.clone()),
                        meta: m,
                        children: c,
                        names: data.iter().map(|f| f.to_string()).collect(),
                    }
                }
                Some(PytreeRegistration::Custom { flatten: fl, keys, .. }) => {
                    let out = interp.call(&fl, vec![v.clone()], Vec::new())?;
                    let parts = interp.iterate(&out)?;
                    let children_v = parts.first().cloned().unwrap_or(Value::None);
                    let aux = parts.get(1).cloned().unwrap_or(Value::None);
                    let children = interp.iterate(&children_v)?;
                    note_custom_children(interp, inst, &children);
                    let names = match keys {
                        Some(keys) => custom_keys(interp, &keys, &aux, children.len())?,
                        None => Vec::new(),
                    };
                    let mut c = Vec::new();
                    for (i, x) in children.iter().enumerate() {
                        match names.get(i) {
                            Some(n) => path.push_str(&key_suffix(n)),
                            None => Key::index(i).push_onto(path),
                        }
                        c.push(child(interp, path, x)?);
                    }
                    let key = super::pytree_aux::aux_key(interp, &aux);
                    let meta = vec![Meta { name: Rc::from(""), key, value: aux }];
                    TreeDef::Node { class: ClassRef(inst.class.clone()), meta, children: c, names }
                }
                None => {
                    leaves.push((path.clone(), v.clone()));
                    TreeDef::Leaf
                }
            }
        }
        _ => {
            leaves.push((path.clone(), v.clone()));
            TreeDef::Leaf
        }
    })
}

/// A custom node's child keys from its registration's `_tracelens_keys(aux)`, when it gives
/// one string per child; else none (the children are then `[0]`, `[1]`, as JAX's
/// flattened-index keys are).
fn custom_keys(interp: &mut Interp, keys: &Value, aux: &Value, n: usize) -> PyResult<Vec<String>> {
    let given = interp.call(keys, vec![aux.clone()], Vec::new())?;
    let names: Vec<String> =
        interp.iterate(&given)?.into_iter().filter_map(|k| if let Value::Str(s) = k { Some(s.to_string()) } else { None }).collect();
    Ok(if names.len() == n { names } else { Vec::new() })
}

/// How a node's child key is written after its parent's path: a field name is an attribute
/// (`.mu`); a custom node's key comes written whole (`['b']`, `.value`).
pub(crate) fn key_suffix(name: &str) -> std::borrow::Cow<'_, str> {
    if name.starts_with('.') || name.starts_with('[') {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(format!(".{name}"))
    }
}

/// Rebuilds a pytree from its structure and leaves.
pub fn unflatten(interp: &mut Interp, tree: &TreeDef, leaves: &mut std::vec::IntoIter<Value>) -> PyResult<Value> {
    Ok(match tree {
        TreeDef::Leaf => leaves.next().unwrap_or(Value::None),
        TreeDef::None => Value::None,
        TreeDef::Tuple(c) => {
            let mut items = Vec::new();
            for t in c {
                items.push(unflatten(interp, t, leaves)?);
            }
            Value::tuple(items)
        }
        TreeDef::List(c) => {
            let mut items = Vec::new();
            for t in c {
                items.push(unflatten(interp, t, leaves)?);
            }
            interp.new_list(items)
        }
        TreeDef::Dict(c) => {
            let mut d = Dict::default();
            for (h, t) in c {
                let v = unflatten(interp, t, leaves)?;
                d.insert(h.clone(), key_value(h), v);
            }
            interp.new_dict(d)
        }
        TreeDef::Node { class, children, names, meta } => {
            let mut items = Vec::new();
            for t in children {
                items.push(unflatten(interp, t, leaves)?);
            }
            let class = class.0.clone();
            if class.is_namedtuple.get() {
                return Ok(Value::Instance(Rc::new(Instance { class, attrs: RefCell::new(Default::default()), tuple: Some(items) })));
            }
            match registration(&class) {
                Some(PytreeRegistration::Custom { unflatten: uf, .. }) => {
                    let aux = meta.first().map(|m| m.value.clone()).unwrap_or(Value::None);
                    let made = interp.call(&uf, vec![aux, Value::tuple(items.clone())], Vec::new())?;
                    if let Value::Instance(inst) = &made {
                        note_custom_children(interp, inst, &items);
                    }
                    made
                }
                _ => {
                    let inst = Instance { class: class.clone(), attrs: RefCell::new(Default::default()), tuple: None };
                    for (n, v) in names.iter().zip(items) {
                        inst.attrs.borrow_mut().insert(Rc::from(n.as_str()), v);
                    }
                    for m in meta {
                        inst.attrs.borrow_mut().insert(m.name.clone(), m.value.clone());
                    }
                    Value::Instance(Rc::new(inst))
                }
            }
        }
    })
}

/// The index path of every leaf of `tree`, in flattening order, with a user class's children
/// indexed as a tuple's (`[0]`): where the leaf is in the value a reproducer passes.
pub(super) fn tuple_paths(tree: &TreeDef, prefix: &mut String, out: &mut Vec<String>) {
    let len = prefix.len();
    // Each step is appended first, and taken off here.
    let child = |prefix: &mut String, t: &TreeDef, out: &mut Vec<String>| {
        tuple_paths(t, prefix, out);
        prefix.truncate(len);
    };
    match tree {
        TreeDef::Leaf => out.push(prefix.clone()),
        TreeDef::None => {}
        TreeDef::Tuple(c) | TreeDef::List(c) | TreeDef::Node { children: c, .. } => {
            for (i, t) in c.iter().enumerate() {
                Key::index(i).push_onto(prefix);
                child(prefix, t, out);
            }
        }
        TreeDef::Dict(c) => {
            for (h, t) in c {
                Key::of_dict_key(h).push_onto(prefix);
                child(prefix, t, out);
            }
        }
    }
}

/// At most this many instances of `register_pytree_node` classes have their children noted.
const MAX_CUSTOM_CHILDREN: usize = 50_000;

/// Notes the children of an instance of a `register_pytree_node` class (`class_children`).
fn note_custom_children(interp: &mut Interp, inst: &Rc<Instance>, children: &[Value]) {
    let noted = &mut interp.jax.custom_children;
    let id = Rc::as_ptr(inst) as usize;
    if noted.len() < MAX_CUSTOM_CHILDREN || noted.contains_key(&id) {
        noted.insert(id, (inst.clone(), children.to_vec()));
    }
}

fn tree_map(interp: &mut Interp, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    let f = args.first().cloned().unwrap_or(Value::None);
    let Some(tree0) = args.get(1) else {
        return Err(interp.type_error("tree_map() missing 1 required positional argument: 'tree'"));
    };
    let is_leaf = kw(kwargs, "is_leaf").cloned();
    let mut l0 = Vec::new();
    let t0 = flatten_with_is_leaf(interp, tree0, is_leaf.as_ref(), &mut l0)?;
    let mut rest = Vec::new();
    for (i, other) in args[2..].iter().enumerate() {
        let mut l = Vec::new();
        let t = flatten_with_is_leaf(interp, other, is_leaf.as_ref(), &mut l)?;
        if t != t0 && l0.iter().chain(&l).any(|(_, leaf)| leaf.is_opaque()) {
            // An unknown leaf may stand for a whole subtree: the structures may agree.
            return Ok(Value::opaque("tree_map over a tree with unknown parts"));
        }
        if t != t0 {
            let mismatch = prefix_mismatch(&t0, &t, "tree_map tree");
            if mismatch.is_none() && !is_prefix(&t0, &t) {
                let msg = format!("pytree structure error: tree {} differs from tree 0", i + 1);
                return Err(interp.raise("ValueError", Code::InvalidPytree, msg));
            }
            if let Some(msg) = mismatch {
                return Err(interp.raise("ValueError", Code::InvalidPytree, msg));
            }
            // JAX flattens the other trees up to the first one's structure: each leaf of
            // the first meets the whole subtree at its place (`treedef.flatten_up_to`).
            let mut leaves = l.into_iter().map(|(_, v)| v).collect::<Vec<_>>().into_iter();
            let mut subtrees = Vec::new();
            subtrees_up_to(interp, &t0, &t, &mut leaves, &mut subtrees)?;
            rest.push(subtrees.into_iter().map(|v| (String::new(), v)).collect());
            continue;
        }
        rest.push(l);
    }
    let mut out = Vec::new();
    for (i, (_, leaf)) in l0.iter().enumerate() {
        let mut call_args = vec![leaf.clone()];
        for r in &rest {
            call_args.push(r[i].1.clone());
        }
        out.push(interp.call(&f, call_args, Vec::new())?);
    }
    unflatten(interp, &t0, &mut out.into_iter())
}

/// Whether `full` extends `prefix`: the same nodes down to each of `prefix`'s leaves.
fn is_prefix(prefix: &TreeDef, full: &TreeDef) -> bool {
    match (prefix, full) {
        (TreeDef::Leaf, _) => true,
        (TreeDef::None, TreeDef::None) => true,
        (TreeDef::Tuple(a), TreeDef::Tuple(b)) | (TreeDef::List(a), TreeDef::List(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| is_prefix(x, y))
        }
        (TreeDef::Dict(a), TreeDef::Dict(b)) => a.len() == b.len() && a.iter().zip(b).all(|((ka, x), (kb, y))| ka == kb && is_prefix(x, y)),
        (TreeDef::Node { class: ca, meta: ma, children: a, names: na }, TreeDef::Node { class: cb, meta: mb, children: b, names: nb }) => {
            ca == cb && ma == mb && na == nb && a.len() == b.len() && a.iter().zip(b).all(|(x, y)| is_prefix(x, y))
        }
        _ => false,
    }
}

/// The subtrees of a tree of structure `full` (its leaves in `leaves`) at the leaves of
/// `prefix`, which `prefix_mismatch` found to be a prefix of it.
fn subtrees_up_to(
    interp: &mut Interp,
    prefix: &TreeDef,
    full: &TreeDef,
    leaves: &mut std::vec::IntoIter<Value>,
    out: &mut Vec<Value>,
) -> PyResult<()> {
    match (prefix, full) {
        (TreeDef::Leaf, sub) => out.push(unflatten(interp, sub, leaves)?),
        (TreeDef::Dict(a), TreeDef::Dict(b)) => {
            for ((_, x), (_, y)) in a.iter().zip(b) {
                subtrees_up_to(interp, x, y, leaves, out)?;
            }
        }
        (TreeDef::Tuple(a), TreeDef::Tuple(b))
        | (TreeDef::List(a), TreeDef::List(b))
        | (TreeDef::Node { children: a, .. }, TreeDef::Node { children: b, .. }) => {
            for (x, y) in a.iter().zip(b) {
                subtrees_up_to(interp, x, y, leaves, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// JAX's "pytree structure error" for the first place where `full` does not extend `prefix`.
fn prefix_mismatch(prefix: &TreeDef, full: &TreeDef, path: &str) -> Option<String> {
    let type_name = |t: &TreeDef| -> &'static str {
        match t {
            TreeDef::Tuple(_) => "tuple",
            TreeDef::List(_) => "list",
            TreeDef::Dict(_) => "dict",
            TreeDef::None => "NoneType",
            _ => "object",
        }
    };
    match (prefix, full) {
        (TreeDef::Leaf, _) => None,
        (TreeDef::Dict(a), TreeDef::Dict(b)) => {
            let ka: Vec<String> = a.iter().map(|(k, _)| key_plain(k)).collect();
            let kb: Vec<String> = b.iter().map(|(k, _)| key_plain(k)).collect();
            if ka != kb {
                let mut diff: Vec<String> = ka.iter().filter(|k| !kb.contains(k)).chain(kb.iter().filter(|k| !ka.contains(k))).cloned().collect();
                diff.sort();
                let head = if ka.len() != kb.len() { "different numbers of pytree children" } else { "different pytree keys" };
                return Some(format!(
                    "pytree structure error: {head} at key path\n    {path}\nAt that key path, the prefix pytree tree_map tree has a subtree of type\n    <class 'dict'>\nwith {} child keys\n    {}\nbut at the same key path the full pytree has a subtree of the same type but with {} child keys\n    {}\nso the symmetric difference on key sets is\n    {}",
                    ka.len(),
                    ka.join(" "),
                    kb.len(),
                    kb.join(" "),
                    diff.join(" ")
                ));
            }
            a.iter().zip(b).find_map(|((k, x), (_, y))| prefix_mismatch(x, y, &format!("{path}[{}]", key_text(k))))
        }
        (TreeDef::Tuple(a), TreeDef::Tuple(b)) | (TreeDef::List(a), TreeDef::List(b)) => {
            if a.len() != b.len() {
                let tn = type_name(prefix);
                return Some(format!(
                    "pytree structure error: different lengths of {tn} at key path\n    {path}\nAt that key path, the prefix pytree tree_map tree has a subtree of type {tn} of length {}, but the full pytree has a subtree of the same type but of length {}.",
                    a.len(),
                    b.len()
                ));
            }
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| prefix_mismatch(x, y, &format!("{path}[{i}]")))
        }
        (p, f) if std::mem::discriminant(p) != std::mem::discriminant(f) => Some(format!(
            "pytree structure error: different types at key path\n    {path}\nAt that key path, the prefix pytree tree_map tree has a subtree of type\n    <class '{}'>\nbut at the same key path the full pytree has a subtree of different type\n    <class '{}'>.",
            type_name(p),
            type_name(f)
        )),
        (TreeDef::Node { children: a, .. }, TreeDef::Node { children: b, .. }) => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| prefix_mismatch(x, y, &format!("{path}[{i}]")))
        }
        _ => None,
    }
}

fn key_plain(k: &HashKey) -> String {
    match k {
        HashKey::Str(s) => s.to_string(),
        other => key_text(other),
    }
}

pub(super) fn leaf_avals(interp: &mut Interp, v: &Value) -> PyResult<(TreeDef, Vec<Option<Aval>>)> {
    let mut leaves = Vec::new();
    let t = flatten(interp, v, "", &mut leaves)?;
    let mut out = Vec::new();
    for (_, l) in leaves {
        out.push(match operand(interp, &l) {
            Ok(Operand::Array(a)) => Some(a.aval.clone()),
            _ => None,
        });
    }
    Ok((t, out))
}

pub(super) fn tree_kind(t: &TreeDef) -> &'static str {
    match t {
        TreeDef::Leaf => "<class 'jax._src.core.ShapedArray'>",
        TreeDef::Tuple(_) => "<class 'tuple'>",
        TreeDef::List(_) => "<class 'list'>",
        TreeDef::Dict(_) => "<class 'dict'>",
        TreeDef::None => "<class 'NoneType'>",
        TreeDef::Node { .. } => "<class 'object'>",
    }
}

pub(super) fn tree_desc(t: &TreeDef) -> &'static str {
    match t {
        TreeDef::Leaf => "pytree leaf",
        TreeDef::Tuple(_) => "<class 'tuple'>",
        TreeDef::List(_) => "<class 'list'>",
        TreeDef::Dict(_) => "<class 'dict'>",
        _ => "<class 'object'>",
    }
}

/// Whether a flattened tree has a leaf that is an unknown value: it may stand for any
/// subtree, so the leaves and the structure JAX would see are unknown. One taken for a tracer
/// too: an op of a tracer with an unknown object (`x**ω` with equinox's `ω`) may be that
/// object's `__rpow__`'s result, a pytree wrapper.
fn leaves_unknown(leaves: &[(String, Value)]) -> bool {
    leaves.iter().any(|(_, v)| matches!(v, Value::Opaque(_)))
}

/// `jax.tree.*` / `jax.tree_util.*` and the pytree registrations, as the dispatch hands them on.
pub(super) fn call_tree_fn(interp: &mut Interp, f: JaxFn, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    use JaxFn as F;
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
    match f {
        F::TreeMap | F::TreeMap2 | F::JaxTreeMap => tree_map(interp, args, kwargs),
        // functools.reduce(function, tree_leaves(tree)[, initializer])
        F::TreeReduce | F::TreeReduce2 => {
            let mut leaves = Vec::new();
            flatten(interp, &arg(1), "", &mut leaves)?;
            let mut values = leaves.into_iter().map(|(_, v)| v);
            let Some(mut acc) = args.get(2).cloned().or_else(|| values.next()) else {
                return Err(interp.type_error("reduce() of empty iterable with no initial value"));
            };
            for v in values {
                acc = interp.call(&arg(0), vec![acc, v], Vec::new())?;
            }
            Ok(acc)
        }
        // `all(tree_leaves(tree))`; an unknown part may hold any leaves.
        F::TreeAll | F::TreeAll2 => {
            let mut leaves = Vec::new();
            flatten_with_is_leaf(interp, &arg(0), kw(kwargs, "is_leaf"), &mut leaves)?;
            if leaves_unknown(&leaves) {
                return Ok(Value::opaque("tree_all of a tree with unknown parts"));
            }
            for (_, leaf) in leaves {
                if !interp.truthy(&leaf)? {
                    return Ok(Value::Bool(false));
                }
            }
            Ok(Value::Bool(true))
        }
        F::TreeLeaves | F::TreeLeaves2 | F::JaxTreeLeaves => {
            let mut leaves = Vec::new();
            flatten_with_is_leaf(interp, &arg(0), kw(kwargs, "is_leaf").or(args.get(1)), &mut leaves)?;
            if leaves_unknown(&leaves) {
                return Ok(Value::opaque("the leaves of a tree with unknown parts"));
            }
            Ok(interp.new_list(leaves.into_iter().map(|(_, v)| v).collect()))
        }
        F::TreeFlatten | F::TreeFlatten2 => {
            let mut leaves = Vec::new();
            let tree = flatten_with_is_leaf(interp, &arg(0), kw(kwargs, "is_leaf").or(args.get(1)), &mut leaves)?;
            // An unknown part may stand for any subtree: neither the leaves nor the structure
            // (its equality, `num_leaves`, `unflatten`) are known.
            if leaves_unknown(&leaves) {
                return Ok(Value::tuple(vec![
                    Value::opaque("the leaves of a tree with unknown parts"),
                    Value::opaque("the structure of a tree with unknown parts"),
                ]));
            }
            let l = interp.new_list(leaves.into_iter().map(|(_, v)| v).collect());
            Ok(Value::tuple(vec![l, obj(JaxObject::TreeDef(Rc::new(tree)))]))
        }
        // An unknown part may stand for any subtree: the structure is not known.
        F::TreeStructure | F::TreeStructure2 if arg(0).holds_unknown() => Ok(Value::opaque("the structure of a tree with unknown parts")),
        F::TreeStructure | F::TreeStructure2 => {
            let mut leaves = Vec::new();
            let tree = flatten_with_is_leaf(interp, &arg(0), kw(kwargs, "is_leaf").or(args.get(1)), &mut leaves)?;
            if leaves_unknown(&leaves) {
                return Ok(Value::opaque("the structure of a tree with unknown parts"));
            }
            Ok(obj(JaxObject::TreeDef(Rc::new(tree))))
        }
        F::TreeUnflatten | F::TreeUnflatten2 => {
            let Value::Builtin(b) = arg(0) else {
                return Ok(Value::opaque("tree_unflatten"));
            };
            let Builtin::Object(JaxObject::TreeDef(t)) = &*b else {
                return Ok(Value::opaque("tree_unflatten"));
            };
            let leaves = interp.iterate(&arg(1))?;
            if leaves.len() != t.num_leaves() {
                return Err(interp.raise(
                    "ValueError",
                    Code::InvalidPytree,
                    format!(
                        "Too {} leaves for PyTreeDef; expected {}, got {}.",
                        if leaves.len() > t.num_leaves() { "many" } else { "few" },
                        t.num_leaves(),
                        leaves.len()
                    ),
                ));
            }
            unflatten(interp, t, &mut leaves.into_iter())
        }
        F::RegisterPytreeNode => {
            if let Value::Class(c) = arg(0) {
                let keys = kw(kwargs, "_tracelens_keys").cloned();
                *c.pytree.borrow_mut() = Some(PytreeRegistration::Custom { flatten: arg(1), unflatten: arg(2), keys });
            }
            Ok(Value::None)
        }
        F::RegisterPytreeNodeClass => {
            if let Value::Class(c) = &arg(0) {
                let fl = c.lookup("tree_flatten").unwrap_or(Value::None);
                let uf = c.lookup("tree_unflatten").map(|u| match u {
                    Value::ClassMethod(f) => Value::BoundMethod(Rc::new((arg(0), (*f).clone()))),
                    other => other,
                });
                *c.pytree.borrow_mut() = Some(PytreeRegistration::Custom { flatten: fl, unflatten: uf.unwrap_or(Value::None), keys: None });
            }
            Ok(arg(0))
        }
        F::RegisterDataclass => {
            if let Value::Class(c) = &arg(0) {
                let names = |interp: &mut Interp, v: Option<&Value>| -> PyResult<Option<Vec<Rc<str>>>> {
                    Ok(match v {
                        Some(v) => Some(
                            interp.iterate(v)?.into_iter().filter_map(|x| if let Value::Str(s) = x { Some(s) } else { None }).collect(),
                        ),
                        None => None,
                    })
                };
                let data = names(interp, kw(kwargs, "data_fields").or(args.get(1)))?;
                let meta = names(interp, kw(kwargs, "meta_fields").or(args.get(2)))?.unwrap_or_default();
                // Without explicit field lists, fields marked `field(metadata=dict(static=True))` are meta.
                let mut meta = meta;
                if data.is_none() {
                    for f in c.fields.borrow().iter() {
                        if let Some(Value::Instance(field)) = c.lookup(f) {
                            if let Some(Value::Dict(md)) = field.attrs.borrow().get("metadata") {
                                let is_static = md
                                    .borrow()
                                    .get(&HashKey::Str(Rc::from("static")))
                                    .map(|v| matches!(v, Value::Bool(true)))
                                    .unwrap_or(false);
                                if is_static && !meta.contains(f) {
                                    meta.push(f.clone());
                                }
                            }
                        }
                    }
                }
                let data = data.unwrap_or_else(|| c.fields.borrow().iter().filter(|f| !meta.contains(f)).cloned().collect());
                *c.pytree.borrow_mut() = Some(PytreeRegistration::Fields { data, meta });
            }
            Ok(arg(0))
        }
        _ => crate::jax::numpy::call(interp, f, args.to_vec(), kwargs.clone()),
    }
}
