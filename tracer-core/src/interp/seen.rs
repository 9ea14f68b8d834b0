//! What the analysis saw at each place of the user's code, for hover and inlay hints: the aval
//! of every array (and the leaf avals of every pytree of arrays) held by a name read or
//! assigned, a parameter, an attribute path or a constant item. Inside a trace it goes to the
//! innermost trace's record (`JaxState::record_value`); outside any trace, to `Seen`, with a
//! preview of small arrays whose values the analysis computed.

use super::value::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::value::{PytreeRegistration, Value};
use super::{FileId, Interp, Site};
use crate::interp::model::array::{ArrayKind, Lazy};
use crate::interp::model::aval::Aval;
use crate::syntax::ast::Span;

/// At most this many leaves of a pytree are shown; a larger tree is not recorded.
const MAX_LEAVES: usize = 256;
/// Pytrees nested deeper than this are not walked.
const MAX_DEPTH: usize = 8;
/// A container with more nodes than this is not walked (`[[0] * 1000] * 1000000` has no
/// array leaf, and visiting its billion items took minutes).
const MAX_NODES: usize = 4096;
/// Arrays of at most this many elements get a value preview.
const PREVIEW_ELEMENTS: usize = 16;
/// Distinct values kept per place outside traces (a loop that changes a shape).
const PER_SITE: usize = 4;

/// What kind of place a value was seen at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteKind {
    /// A name read.
    Use,
    /// A name assigned (an inlay hint goes after it).
    Assigned,
    /// A parameter in a `def` or `lambda` line, at the call.
    Parameter,
    /// `self.w`, `state.params.w`: read or assigned.
    Attribute,
    /// `params["w1"]`, `batch[0]`: an item of a container, by a constant key.
    Item,
}

impl SiteKind {
    pub fn label(self) -> &'static str {
        match self {
            SiteKind::Use => "use",
            SiteKind::Assigned => "assignment",
            SiteKind::Parameter => "parameter",
            SiteKind::Attribute => "attribute",
            SiteKind::Item => "item",
        }
    }
}

/// The aval of an array, or the key paths and avals of a pytree's array leaves.
#[derive(Clone, Debug, PartialEq)]
pub enum Shown {
    Array(Aval),
    Tree(Arc<[(String, Aval)]>),
    /// An object whose library shim describes it (`__tracelens_summary__`): the summary in
    /// the library's terms (`Linear(in_features=784, out_features=512)`) and its array leaves
    /// (a layer without parameters has none).
    Object(Arc<str>, Arc<[(String, Aval)]>),
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
                let mut leaves = Vec::new();
                let mut keep = |path: &str, a: &crate::interp::model::array::Array| {
                    leaves.push((path.to_string(), display_aval(a)));
                    leaves.len() <= MAX_LEAVES
                };
                walk(interp, value, &mut String::new(), &mut keep, &mut 0, 0).then_some(())?;
                if let Some(summary) = summary(value) {
                    return Some(Shown::Object(summary.into(), leaves.into()));
                }
                (!leaves.is_empty()).then(|| Shown::Tree(leaves.into()))
            }
            _ => None,
        }
    }

    /// Whether `value` shows this, as `of` would show it (outside a `tf.function`), found
    /// without writing out its leaves: a loop reads the same parameters at the same place on
    /// every pass.
    fn describes(&self, value: &Value, interp: &Interp) -> bool {
        match (self, value) {
            (Shown::Array(aval), Value::Array(a)) => display_aval(a) == *aval,
            (Shown::Tree(leaves) | Shown::Object(_, leaves), Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_)) => {
                let mut next = 0;
                let mut same = |path: &str, a: &crate::interp::model::array::Array| {
                    let matched = leaves.get(next).is_some_and(|(p, aval)| p == path && display_aval(a) == *aval);
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
            AvalText::Seen(Shown::Array(a)) => a.shape.is_empty(),
            AvalText::Seen(Shown::Tensor(dims, _)) => dims.is_empty(),
            AvalText::Seen(Shown::Tree(_) | Shown::Object(..)) => false,
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
fn display_aval(a: &crate::interp::model::array::Array) -> Aval {
    let mut aval = a.aval.clone();
    if a.numpy.get() {
        aval.weak = false;
    }
    aval
}

/// One step of a leaf's key path, as JAX's `keystr` writes it.
#[derive(Clone, Copy)]
enum Key<'a> {
    /// `['w']`
    Str(&'a str),
    /// `[0]`
    Index(i64),
    /// `.bias`
    Attr(&'a str),
    /// `[<flat index 0>]`
    FlatIndex(usize),
}

impl Key<'_> {
    fn push_onto(self, path: &mut String) {
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
        }
    }
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

/// A value seen outside any trace.
#[derive(Clone, Debug)]
pub struct ConcreteRecord {
    pub site: Site,
    pub name: Rc<str>,
    pub kind: SiteKind,
    /// A small array's value as NumPy prints it (`[1. 2. 3.]`), when the analysis computed it.
    pub preview: Option<String>,
    noted: Noted,
}

/// What a record shows, or a copy of the value to write it out from later.
#[derive(Clone, Debug)]
enum Noted {
    Shown(Shown),
    /// A pytree of arrays (tuples, lists and dicts) copied by `freeze`: walking it and
    /// writing out its key paths waits until the edit's diagnostics are published
    /// (`Seen::shown`); a trainer's parameters are seen at every line that reads them.
    Frozen(Value),
}

impl Noted {
    /// Whether `value` shows what this record shows, as `Shown::of` would show it.
    fn describes(&self, value: &Value, interp: &Interp) -> bool {
        match self {
            Noted::Shown(shown) => shown.describes(value, interp),
            // Alike up to the avals of their arrays, or shown alike.
            Noted::Frozen(frozen) => alike(frozen, value) || Shown::of(value, interp) == Shown::of(frozen, interp),
        }
    }
}

/// Why `freeze` made no copy.
enum NoCopy {
    /// `Shown::of` shows nothing either: past the walk's limits, or no array leaf.
    Nothing,
    /// An object, shown as the interpreter knows its class now (`Shown::of`).
    Object,
}

/// A copy of a pytree of arrays that later changes to its lists and dicts cannot reach: its
/// containers copied, its arrays (which never change) shared, anything `walk` passes over
/// `None`. It visits what `walk` visits, so it meets the walk's limits where the walk would.
fn freeze(value: &Value) -> Result<Value, NoCopy> {
    fn copy(value: &Value, nodes: &mut usize, arrays: &mut usize, depth: usize) -> Result<Value, NoCopy> {
        *nodes += 1;
        if depth > MAX_DEPTH || *nodes > MAX_NODES {
            return Err(NoCopy::Nothing);
        }
        let items = |items: &[Value], nodes: &mut usize, arrays: &mut usize| -> Result<Vec<Value>, NoCopy> {
            items.iter().map(|x| copy(x, nodes, arrays, depth + 1)).collect()
        };
        Ok(match value {
            Value::Array(_) => {
                *arrays += 1;
                if *arrays > MAX_LEAVES {
                    return Err(NoCopy::Nothing);
                }
                value.clone()
            }
            Value::Tuple(xs) => Value::tuple(items(xs, nodes, arrays)?),
            Value::List(xs) => Value::list(items(&xs.borrow(), nodes, arrays)?),
            Value::Dict(d) => {
                // Cloned whole (its hash table copied, not rebuilt), then its values frozen;
                // `walk` passes over the values of keys other than strings and ints.
                let mut dict = d.borrow().clone();
                for (key, (_, v)) in dict.entries.iter_mut() {
                    *v = match key {
                        super::value::HashKey::Str(_) | super::value::HashKey::Int(_) => copy(v, nodes, arrays, depth + 1)?,
                        _ => Value::None,
                    };
                }
                Value::Dict(Rc::new(std::cell::RefCell::new(dict)))
            }
            Value::Instance(_) => return Err(NoCopy::Object),
            _ => Value::None,
        })
    }
    let mut arrays = 0;
    let frozen = copy(value, &mut 0, &mut arrays, 0)?;
    if arrays == 0 {
        return Err(NoCopy::Nothing);
    }
    Ok(frozen)
}

/// Whether a frozen pytree and a value have the same containers, keys in the same order and
/// arrays of the same avals where `walk` sees them: then they show the same.
fn alike(frozen: &Value, value: &Value) -> bool {
    let all = |xs: &[Value], ys: &[Value]| xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| alike(x, y));
    match (frozen, value) {
        (Value::Array(a), Value::Array(b)) => Rc::ptr_eq(a, b) || display_aval(a) == display_aval(b),
        (Value::Tuple(xs), Value::Tuple(ys)) => all(xs, ys),
        (Value::List(xs), Value::List(ys)) => all(&xs.borrow(), &ys.borrow()),
        (Value::Dict(x), Value::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.entries.len() == y.entries.len()
                && x.entries.iter().zip(&y.entries).all(|((hx, (_, vx)), (hy, (_, vy)))| hx == hy && alike(vx, vy))
        }
        (Value::None, v) => !matches!(v, Value::Array(_) | Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_)),
        _ => false,
    }
}

/// The values seen outside traces, a few distinct ones per place.
#[derive(Default)]
pub struct Seen {
    /// Record nothing: nothing will read it (`AnalysisConfig::skip_hover_values`).
    pub off: bool,
    concrete: Vec<ConcreteRecord>,
    /// The records of each place (at most `PER_SITE`), kept inline: most places see one value.
    by_site: HashMap<(FileId, u32, u32), smallvec::SmallVec<[u32; PER_SITE]>>,
    /// The last pytree copied: a name assigned and then read (`params = init()`, then
    /// `step(params)`) shares one copy while its value stays alike (copies are never changed).
    last_frozen: Option<Value>,
}

/// Records made room for at an analysis' first: a module's values are seen by the hundred.
const FIRST_ROOM: usize = 256;

impl Seen {
    /// The values seen, in the order they were first seen at their places.
    pub fn records(&self) -> &[ConcreteRecord] {
        &self.concrete
    }

    /// What a record shows (`None` only if a frozen pytree shows nothing, which `freeze`
    /// rules out).
    pub fn shown(record: &ConcreteRecord, interp: &Interp) -> Option<Shown> {
        match &record.noted {
            Noted::Shown(shown) => Some(shown.clone()),
            Noted::Frozen(frozen) => Shown::of(frozen, interp),
        }
    }
}

impl Interp<'_> {
    /// Records what `value` shows at `span` of `file` (user files only).
    pub(crate) fn note_value(&mut self, file: FileId, span: Span, name: &crate::syntax::ast::Name, value: &Value, kind: SiteKind) {
        // Most names read hold a function, a module or a number: nothing to show.
        let may_show =
            matches!(value, Value::Array(_) | Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_) | Value::Builtin(_));
        if !may_show || self.seen.off || self.is_library(file) {
            return;
        }
        let in_trace = crate::interp::model::state::trace_depth(self) > 0;
        // Inside a tf.function trace, a tensor is one of its graph.
        let in_graph = in_trace && crate::interp::model::state::in_tf_function(self);
        // A builtin shows something only as a graph's partly known tensor (`Shown::of_graph`):
        // a jitted function read at every call shows nothing.
        if matches!(value, Value::Builtin(_)) && !in_graph {
            return;
        }
        let site = Site { file, span };
        if in_trace {
            let shown = if in_graph { Shown::of_graph(value, self) } else { Shown::of(value, self) };
            if let Some(shown) = shown {
                crate::interp::model::state::record_value(self, site, name, shown, kind);
            }
            return;
        }
        // Outside traces, what this value shows is not written out at a place that holds its
        // share of values, nor at one that already shows it (a name read in a loop, each pass).
        let key = (file, span.start, span.end);
        if let Some(indices) = self.seen.by_site.get(&key) {
            if indices.len() >= PER_SITE || indices.iter().any(|&i| self.seen.concrete[i as usize].noted.describes(value, self)) {
                return;
            }
        }
        let noted = if let Value::Array(a) = value {
            Noted::Shown(Shown::Array(display_aval(a)))
        } else {
            let copied = match self.seen.last_frozen.as_ref().filter(|last| alike(last, value)) {
                Some(last) => Ok(last.clone()),
                None => freeze(value),
            };
            match copied {
                Ok(frozen) => {
                    self.seen.last_frozen = Some(frozen.clone());
                    Noted::Frozen(frozen)
                }
                Err(NoCopy::Nothing) => return,
                Err(NoCopy::Object) => match Shown::of(value, self) {
                    Some(shown) => Noted::Shown(shown),
                    None => return,
                },
            }
        };
        let preview = match value {
            Value::Array(a) => preview(self, a),
            _ => None,
        };
        if self.seen.concrete.is_empty() {
            self.seen.concrete.reserve(FIRST_ROOM);
            self.seen.by_site.reserve(FIRST_ROOM);
        }
        // New at this place, and the place has room (checked above).
        self.seen.by_site.entry(key).or_default().push(self.seen.concrete.len() as u32);
        self.seen.concrete.push(ConcreteRecord { site, name: name.clone(), kind, preview, noted });
    }

    /// Records an expression's value under its source text (`self.w`, `params["w1"]`).
    pub(crate) fn note_expression(&mut self, file: FileId, span: Span, value: &Value, kind: SiteKind) {
        if self.seen.off
            || !matches!(value, Value::Array(_) | Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_))
            || self.is_library(file)
        {
            return;
        }
        let text = self.files.get(file as usize).and_then(|f| f.text.get(span.start as usize..span.end as usize)).unwrap_or("");
        let name: crate::syntax::ast::Name = text.split_whitespace().collect::<Vec<_>>().join(" ").into();
        self.note_value(file, span, &name, value, kind);
    }

    /// Records the parameters of a call of `f` as bound in `scope`, at their names in the
    /// `def` (or `lambda`) line.
    pub(crate) fn note_parameters(&mut self, f: &super::value::Function, scope: &super::value::Scope) {
        if self.seen.off || self.is_library(f.file) {
            return;
        }
        let p = &f.def.params;
        let params = p.posonly.iter().chain(&p.args).chain(&p.vararg).chain(&p.kwonly).chain(&p.kwarg);
        for param in params {
            let Some(value) = scope.vars.borrow().get(param.name.as_ref()).map(|cell| cell.borrow().clone()) else { continue };
            let span = self.parameter_name_span(f.file, param);
            self.note_value(f.file, span, &param.name, &value, SiteKind::Parameter);
        }
    }

    /// The span of a parameter's name (its span covers `*`, annotation and default too).
    fn parameter_name_span(&self, file: FileId, param: &crate::syntax::ast::Param) -> Span {
        let text = self.files.get(file as usize).and_then(|f| f.text.get(param.span.start as usize..param.span.end as usize)).unwrap_or("");
        let start = param.span.start + text.find(param.name.as_ref()).unwrap_or(0) as u32;
        Span::new(start as usize, (start as usize + param.name.len()).min(param.span.end as usize))
    }
}

/// `[1. 2. 3.]`: a small concrete array's value as NumPy prints it, when it is computed or
/// cheap to compute (a few operations on small arrays whose values are known).
fn preview(interp: &Interp, array: &Rc<crate::interp::model::array::Array>) -> Option<String> {
    // NumPy prints at most 64 dimensions (`repr.rs` raises JAX's error past that).
    if array.aval.dtype.is_key()
        || array.aval.ndim() > 64
        || array.aval.shape.iter().product::<usize>() > PREVIEW_ELEMENTS
        || !cheap(array, PREVIEW_DEPTH)
    {
        return None;
    }
    let data = crate::interp::model::eval::force(interp, array, PREVIEW_INPUT_ELEMENTS as u64)?;
    Some(crate::interp::model::print::array_str(&data, array.aval.dtype))
}

/// Pending operations a preview may compute, along any path to known data.
const PREVIEW_DEPTH: usize = 3;
/// The largest input a preview's computation may read.
const PREVIEW_INPUT_ELEMENTS: usize = 4096;

/// Whether an array's value is known or a few small operations away from known data.
fn cheap(array: &crate::interp::model::array::Array, depth: usize) -> bool {
    let ArrayKind::Concrete(cell) = &array.kind else { return false };
    if array.aval.shape.iter().product::<usize>() > PREVIEW_INPUT_ELEMENTS {
        return false;
    }
    match &*cell.borrow() {
        Lazy::Ready(_) | Lazy::ReadyF32(..) | Lazy::ReadyInts(_) => true,
        Lazy::Pending(_, inputs) => depth > 0 && inputs.iter().all(|i| cheap(i, depth - 1)),
        Lazy::Unknown(_) | Lazy::Call(..) => false,
    }
}
