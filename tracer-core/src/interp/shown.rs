//! What a value shows on hover and in inlay hints (`Shown`): the aval of an array, or the
//! key paths (as JAX's `keystr` writes them) and avals of a pytree's array leaves, found by
//! walking the pytree as JAX flattens it without running any code; and the text hover and
//! inlay hints make of it (`AvalText`). Where values are recorded is `seen.rs`.

use std::sync::Arc;

use super::pytree_nodes::Key;
use super::value::{PytreeRegistration, Value};
use super::Interp;
use crate::interp::model::aval::Aval;

/// At most this many leaves of a pytree are shown; a larger tree is not recorded.
pub(super) const MAX_LEAVES: usize = 256;
/// Pytrees nested deeper than this are not walked.
pub(super) const MAX_DEPTH: usize = 8;
/// A container with more nodes than this is not walked (`[[0] * 1000] * 1000000` has no
/// array leaf, and visiting its billion items took minutes).
pub(super) const MAX_NODES: usize = 4096;

/// The aval of an array, or the key paths and avals of a pytree's array leaves.
#[derive(Clone, Debug, PartialEq)]
pub enum Shown {
    Array(Aval),
    Tree(Arc<Leaves>),
    /// An object whose library shim describes it (`__tracelens_summary__`): the summary in
    /// the library's terms (`Linear(in_features=784, out_features=512)`) and its array leaves
    /// (a layer without parameters has none).
    Object(Arc<str>, Arc<Leaves>),
    /// A symbolic tensor of a `tf.function`'s graph: its dimensions (`None` where TensorFlow
    /// does not know one, as for an `input_signature`'s `None`) and dtype. Its `text` is the
    /// short form (`f32[?,3]`); hover and inlay hints show it as TensorFlow prints it.
    Tensor(Arc<[Option<usize>]>, crate::interp::model::dtypes::DType),
}

impl Shown {
    /// What a value shows, if it is an array or a pytree with array leaves (never calls
    /// user code: a user's `register_pytree_node` class shows the children its flatten
    /// function's source names, `flatten_read`).
    pub fn of(value: &Value, interp: &Interp) -> Option<Shown> {
        match value {
            Value::Array(a) => Some(Shown::Array(display_aval(a))),
            Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_) => {
                let mut leaves = Leaves::default();
                let mut keep = |path: &str, a: &crate::interp::model::array::Array| {
                    leaves.push(path, display_aval(a));
                    leaves.len() <= MAX_LEAVES
                };
                walk(interp, value, &mut String::new(), &mut keep, &mut 0, 0).then_some(())?;
                if let Some(summary) = summary(value) {
                    return Some(Shown::Object(summary.into(), Arc::new(leaves)));
                }
                (!leaves.is_empty()).then(|| Shown::Tree(Arc::new(leaves)))
            }
            _ => None,
        }
    }

    /// Whether `value` shows this, as `of` would show it (outside a `tf.function`), found
    /// without writing out its leaves: a loop reads the same parameters at the same place on
    /// every pass.
    pub(super) fn describes(&self, value: &Value, interp: &Interp) -> bool {
        match (self, value) {
            (Shown::Array(aval), Value::Array(a)) => shows_aval(a, aval),
            (Shown::Tree(leaves) | Shown::Object(_, leaves), Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_)) => {
                let mut next = 0;
                let mut same = |path: &str, a: &crate::interp::model::array::Array| {
                    let matched = leaves.get(next).is_some_and(|(p, aval)| p == path && shows_aval(a, aval));
                    next += 1;
                    matched
                };
                walk(interp, value, &mut String::new(), &mut same, &mut 0, 0)
                    && next == leaves.len()
                    && match self {
                        Shown::Object(text, _) => summary(value).is_some_and(|s| *s == **text),
                        _ => summary(value).is_none(),
                    }
            }
            _ => false,
        }
    }

    /// Whether it shows a pytree's leaves (a hover lists them a line each) rather than one aval.
    pub fn is_tree(&self) -> bool {
        !matches!(self, Shown::Array(_) | Shown::Tensor(..))
    }

    /// What a value inside a `tf.function` trace shows: a symbolic tensor (one of the graph,
    /// or one whose shape TensorFlow knows only in part) as a `Tensor`, anything else as
    /// `of` shows it.
    pub fn of_graph(value: &Value, interp: &Interp) -> Option<Shown> {
        match value {
            Value::Array(a) if a.tf.get() && !a.numpy.get() => {
                Some(Shown::Tensor(a.aval.shape.iter().map(|&d| Some(d)).collect(), a.aval.dtype))
            }
            Value::Builtin(_) => {
                let p = crate::interp::model::tf::partial::of(value)?;
                Some(Shown::Tensor(p.dims.clone().into(), p.dtype))
            }
            _ => Shown::of(value, interp),
        }
    }

    /// The aval of an array, or of a tensor whose every dimension is known.
    pub fn aval(&self) -> Option<Aval> {
        match self {
            Shown::Array(a) => Some(a.clone()),
            Shown::Tensor(dims, dtype) if dims.iter().all(Option::is_some) => {
                let shape: Vec<usize> = dims.iter().map(|d| d.unwrap_or(0)).collect();
                Some(Aval::new(&shape, *dtype))
            }
            _ => None,
        }
    }

    /// A scalar (`f32[]`): no pytree, no dimension.
    pub fn is_scalar(&self) -> bool {
        match self {
            Shown::Array(a) => a.shape.is_empty(),
            Shown::Tensor(dims, _) => dims.is_empty(),
            Shown::Tree(_) | Shown::Object(..) => false,
        }
    }

    /// What hover and inlay hints show: `text`, except that a symbolic tensor is written as
    /// TensorFlow prints it in a graph, without its op name
    /// (`Tensor(shape=(None, 3), dtype=float32)`).
    pub fn hover_text(&self) -> String {
        match self {
            Shown::Tensor(dims, dtype) => {
                format!("Tensor(shape={}, dtype={})", crate::interp::model::tf::shape_text::shape_str(dims), dtype.name())
            }
            _ => self.text(),
        }
    }

    /// The library's summary of an object (`Linear(in_features=784, out_features=512)`).
    pub fn summary(&self) -> Option<&str> {
        match self {
            Shown::Object(summary, _) => Some(summary),
            _ => None,
        }
    }

    /// `f32[8,4]`, or a pytree's leaves: `{['b']: f32[4], ['w']: f32[8,4]}`.
    pub fn text(&self) -> String {
        match self {
            Shown::Array(a) => a.short(),
            Shown::Tensor(dims, dtype) => {
                let dims: Vec<String> = dims.iter().map(|d| d.map_or("?".to_string(), |d| d.to_string())).collect();
                format!("{}[{}]", dtype.short_name(), dims.join(","))
            }
            Shown::Tree(leaves) | Shown::Object(_, leaves) => {
                let parts: Vec<String> = leaves.iter().map(|(p, a)| format!("{p}: {}", a.short())).collect();
                format!("{{{}}}", parts.join(", "))
            }
        }
    }
}

/// The array leaves of a pytree: their key paths written one after another (one string for
/// all, not one per leaf: a trainer's parameters are shown at every line that reads them),
/// and the end of each one's path there with its aval.
#[derive(Debug, Default, PartialEq)]
pub struct Leaves {
    paths: String,
    leaves: Vec<(u32, Aval)>,
}

impl Leaves {
    fn push(&mut self, path: &str, aval: Aval) {
        self.paths.push_str(path);
        self.leaves.push((self.paths.len() as u32, aval));
    }

    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// The `i`th leaf: its key path and aval.
    pub fn get(&self, i: usize) -> Option<(&str, &Aval)> {
        let (end, aval) = self.leaves.get(i)?;
        let start = if i == 0 { 0 } else { self.leaves[i - 1].0 as usize };
        Some((&self.paths[start..*end as usize], aval))
    }

    /// Each leaf's key path and aval, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Aval)> {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// A value's aval as hover text, written out only when something reads it: an edit's analysis
/// records thousands of values and a hover reads a few (docs/performance.md).
#[derive(Clone, Debug)]
pub enum AvalText {
    Seen(Shown),
    /// Already text: renamed with an annotation's dimension names (`f32[b*n]`).
    Text(String),
}

impl AvalText {
    /// `f32[8,4]`, or a pytree's leaves: `{['b']: f32[4], ['w']: f32[8,4]}`.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            AvalText::Seen(shown) => std::borrow::Cow::Owned(shown.text()),
            AvalText::Text(t) => std::borrow::Cow::Borrowed(t),
        }
    }

    /// A scalar (`f32[]`): no pytree, no dimension.
    pub fn is_scalar(&self) -> bool {
        match self {
            AvalText::Seen(shown) => shown.is_scalar(),
            AvalText::Text(t) => t.ends_with("[]"),
        }
    }
}

impl AvalText {
    /// What hover and inlay hints show (`Shown::hover_text`).
    pub fn hover_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            AvalText::Seen(shown) => std::borrow::Cow::Owned(shown.hover_text()),
            AvalText::Text(t) => std::borrow::Cow::Borrowed(t),
        }
    }
}

impl std::fmt::Display for AvalText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

impl PartialEq<&str> for AvalText {
    fn eq(&self, other: &&str) -> bool {
        self.text() == *other
    }
}

/// An array's aval as the user sees it: NumPy arrays have no weak type.
pub(super) fn display_aval(a: &crate::interp::model::array::Array) -> Aval {
    Aval { weak: shown_weak(a), ..a.aval.clone() }
}

/// The weak type an array shows (`display_aval`'s).
fn shown_weak(a: &crate::interp::model::array::Array) -> bool {
    a.aval.weak && !a.numpy.get()
}

/// Whether an array shows `aval` (`display_aval(a) == *aval`, without the copy): hover
/// values compare what a place showed before with each value read there again.
pub(super) fn shows_aval(a: &crate::interp::model::array::Array, aval: &Aval) -> bool {
    a.aval.shape == aval.shape && a.aval.dtype == aval.dtype && shown_weak(a) == aval.weak
}

/// Whether two arrays show the same aval: the same array, or `display_aval` of each equal.
pub(super) fn show_alike(a: &crate::interp::model::array::Array, b: &crate::interp::model::array::Array) -> bool {
    std::ptr::eq(a, b) || (a.aval.shape == b.aval.shape && a.aval.dtype == b.aval.dtype && shown_weak(a) == shown_weak(b))
}

/// What `walk` does with each array leaf, given its key path; false stops the walk.
type Leaf<'a> = dyn FnMut(&str, &crate::interp::model::array::Array) -> bool + 'a;

/// Hands the array leaves of `value` under `path` to `leaf`, in order; false when the tree is
/// too large (`nodes` counts what was visited), too deep to show, or `leaf` stopped it.
fn walk(interp: &Interp, value: &Value, path: &mut String, leaf: &mut Leaf, nodes: &mut usize, depth: usize) -> bool {
    *nodes += 1;
    if depth > MAX_DEPTH || *nodes > MAX_NODES {
        return false;
    }
    match value {
        Value::Array(a) => leaf(path, a),
        Value::Tuple(items) => items.iter().enumerate().all(|(i, x)| descend(interp, path, nodes, depth, Key::Index(i as i64), x, leaf)),
        Value::List(items) => {
            items.borrow().iter().enumerate().all(|(i, x)| descend(interp, path, nodes, depth, Key::Index(i as i64), x, leaf))
        }
        Value::Dict(d) => {
            let d = d.borrow();
            let mut items: smallvec::SmallVec<[(&super::value::HashKey, &Value); 8]> = d.entries.iter().map(|(h, (_, v))| (h, v)).collect();
            items.sort_by(|a, b| crate::interp::pytree_nodes::dict_key_order(a.0, b.0));
            items.iter().all(|&(h, x)| match h {
                super::value::HashKey::Str(s) => descend(interp, path, nodes, depth, Key::Str(s), x, leaf),
                super::value::HashKey::Int(i) => descend(interp, path, nodes, depth, Key::Index(*i), x, leaf),
                _ => true,
            })
        }
        Value::Instance(inst) => {
            if let Some(items) = &inst.tuple {
                let names = inst.class.fields.borrow().clone();
                return items.iter().enumerate().all(|(i, x)| match names.get(i) {
                    Some(n) => descend(interp, path, nodes, depth, Key::Attr(n), x, leaf),
                    None => descend(interp, path, nodes, depth, Key::Index(i as i64), x, leaf),
                });
            }
            match crate::interp::pytree_nodes::registration(&inst.class) {
                Some(PytreeRegistration::Fields { data, .. }) => data.iter().all(|f| {
                    let x = inst.attrs.borrow().get(f).cloned().unwrap_or(Value::None);
                    descend(interp, path, nodes, depth, Key::Attr(f), &x, leaf)
                }),
                // Its flatten function is code to run: the data attributes stand for its
                // children instead, in name order (flax's nnx objects and Variables, the usual
                // `return (self.w, self.b), None`), or those a shim names in
                // `__tracelens_children__` under the keys the library's own flatten gives them
                // (a flax Variable's `raw_value` is JAX's `.value`).
                Some(PytreeRegistration::Custom { flatten, keys: None, .. }) if registered_by_user(interp, &inst.class) => {
                    // JAX keys a key-less node's children by their flat index; in an order
                    // hover cannot know it shows none of them rather than guessed paths.
                    let Some(children) = super::flatten_read::custom_children(interp, inst, &flatten) else { return true };
                    children.iter().enumerate().all(|(i, x)| descend(interp, path, nodes, depth, Key::FlatIndex(i), x, leaf))
                }
                Some(PytreeRegistration::Custom { .. }) => {
                    // A mapping a shim keeps in one attribute (flax's State in `_mapping`,
                    // named by `__tracelens_items__`): its items are the children, keyed as a
                    // dict's are (`['linear']['kernel']`), as the library's flatten keys them.
                    if let Some(Value::Str(attr)) = inst.class.lookup("__tracelens_items__") {
                        let x = inst.attrs.borrow().get(attr.as_ref()).cloned().unwrap_or(Value::None);
                        return walk(interp, &x, path, leaf, nodes, depth + 1);
                    }
                    if let Some(Value::Dict(named)) = inst.class.lookup("__tracelens_children__") {
                        let named: Vec<(Value, Value)> = named.borrow().entries.values().cloned().collect();
                        return named.iter().all(|(attr, key)| match (attr, key) {
                            (Value::Str(attr), Value::Str(key)) => {
                                let x = inst.attrs.borrow().get(attr.as_ref()).cloned().unwrap_or(Value::None);
                                descend(interp, path, nodes, depth, Key::Attr(key), &x, leaf)
                            }
                            _ => true,
                        });
                    }
                    let mut attrs: Vec<(crate::syntax::ast::Name, Value)> =
                        inst.attrs.borrow().iter().filter(|(k, _)| !k.starts_with("__")).map(|(k, v)| (k.clone(), v.clone())).collect();
                    attrs.sort_by(|a, b| a.0.cmp(&b.0));
                    attrs.iter().all(|(k, x)| descend(interp, path, nodes, depth, Key::Attr(k), x, leaf))
                }
                None => true,
            }
        }
        _ => true,
    }
}

/// Walks a child of a node at `depth`, its key appended to `path` meanwhile. (Keys are
/// written with `push_str`, not `format!`: a trainer's parameters are walked at every line
/// that reads them.)
fn descend(interp: &Interp, path: &mut String, nodes: &mut usize, depth: usize, key: Key<'_>, x: &Value, leaf: &mut Leaf) -> bool {
    let base = path.len();
    key.push_onto(path);
    let ok = walk(interp, x, path, leaf, nodes, depth + 1);
    path.truncate(base);
    ok
}

/// Whether the class that registered `class`'s pytree node (itself or a base) is the user's,
/// not a shim's: a shim names its children itself.
fn registered_by_user(interp: &Interp, class: &std::rc::Rc<super::value::Class>) -> bool {
    class.mro().iter().find(|c| c.pytree.borrow().is_some()).and_then(|c| c.def_span).is_some_and(|(file, _)| !interp.is_library(file))
}

/// An object's summary in its library's terms, when its class (or a base: a user's subclass
/// of `nnx.Linear` is still one) has a shim's `__tracelens_summary__`, a template such as
/// `"in_features={in_features}, out_features={out_features}"`: the class name, then the
/// template with each `{attr}` replaced by the Python repr of that attribute (`…` for one
/// that is not a plain number, string, bool, None, dtype or tuple of them). Data only: no
/// code of the library or the user runs.
fn summary(value: &Value) -> Option<String> {
    let Value::Instance(inst) = value else { return None };
    let Some(Value::Str(template)) = inst.class.lookup("__tracelens_summary__") else { return None };
    let mut out = format!("{}(", inst.class.name);
    let mut rest: &str = &template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else { break };
        let attr = &rest[open + 1..open + close];
        let shown = inst.attrs.borrow().get(attr).and_then(|v| plain_repr(v, 0));
        out.push_str(shown.as_deref().unwrap_or("…"));
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out.push(')');
    Some(out)
}

/// The Python repr of a plain attribute value, or `None` for anything else.
fn plain_repr(v: &Value, depth: usize) -> Option<String> {
    Some(match v {
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => super::value::repr_float(*f),
        Value::Str(s) => super::ops::py_str_repr(s),
        Value::DType(d) => d.name().to_string(),
        Value::TfDType(d) => format!("tf.{}", d.name()),
        Value::Tuple(items) if depth < 2 && items.len() <= 8 => {
            let parts: Option<Vec<String>> = items.iter().map(|x| plain_repr(x, depth + 1)).collect();
            let parts = parts?;
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
        _ => return None,
    })
}
