//! What the analysis saw at each place of the user's code, for hover and inlay hints: the aval
//! of every array (and the leaf avals of every pytree of arrays) held by a name read or
//! assigned, a parameter, an attribute path or a constant item. Inside a trace it goes to the
//! innermost trace's record (`JaxState::record_value`); outside any trace, to `Seen`, with a
//! preview of small arrays whose values the analysis computed.

use super::value::HashMap;
use std::rc::Rc;

use super::shown::{display_aval, show_alike, MAX_DEPTH, MAX_LEAVES, MAX_NODES};
pub use super::shown::{AvalText, Shown};
use super::value::Value;
use super::{FileId, Interp, Site};
use crate::interp::model::array::{ArrayKind, Lazy};
use crate::syntax::ast::Span;

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
    /// (`Seen::shown_all`); a trainer's parameters are seen at every line that reads them.
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

/// The identity of a tuple, list, dict or object. `alike` decides whether two values show the
/// same; an identity only finds the candidate cheaply (the copies `freeze` makes are never
/// changed, so one copy's identity shows one thing for the analysis' life).
fn container_id(v: &Value) -> Option<usize> {
    match v {
        Value::Tuple(x) => Some(Rc::as_ptr(x) as *const u8 as usize),
        Value::List(x) => Some(Rc::as_ptr(x) as *const u8 as usize),
        Value::Dict(x) => Some(Rc::as_ptr(x) as *const u8 as usize),
        Value::Instance(x) => Some(Rc::as_ptr(x) as *const u8 as usize),
        _ => None,
    }
}

/// Whether a frozen pytree and a value have the same containers, keys in the same order and
/// arrays of the same avals where `walk` sees them: then they show the same.
fn alike(frozen: &Value, value: &Value) -> bool {
    // A pytree's leaves are most often the very arrays its copy holds: decided here, without
    // a call per leaf.
    let leaf_alike = |x: &Value, y: &Value| match (x, y) {
        (Value::Array(a), Value::Array(b)) => show_alike(a, b),
        _ => alike(x, y),
    };
    let all = |xs: &[Value], ys: &[Value]| xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| leaf_alike(x, y));
    match (frozen, value) {
        (Value::Array(a), Value::Array(b)) => show_alike(a, b),
        (Value::Tuple(xs), Value::Tuple(ys)) => all(xs, ys),
        (Value::List(xs), Value::List(ys)) => all(&xs.borrow(), &ys.borrow()),
        (Value::Dict(x), Value::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.entries.len() == y.entries.len()
                && x.entries.iter().zip(&y.entries).all(|((hx, (_, vx)), (hy, (_, vy)))| same_key(hx, hy) && leaf_alike(vx, vy))
        }
        (Value::None, v) => !matches!(v, Value::Array(_) | Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_)),
        _ => false,
    }
}

/// Whether two dict keys are equal. A frozen copy shares its keys with the dict it copied,
/// so a string key is most often the very same string.
fn same_key(x: &super::value::HashKey, y: &super::value::HashKey) -> bool {
    match (x, y) {
        (super::value::HashKey::Str(a), super::value::HashKey::Str(b)) => Rc::ptr_eq(a, b) || a == b,
        _ => x == y,
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
    /// The last pytree shown inside a trace (`Interp::traced_tree`).
    last_traced: Option<LastTraced>,
}

/// A pytree shown inside a trace: the container's identity, a copy of it as it was (`freeze`),
/// and what it showed. The container showing the same again is the same one, alike its copy.
struct LastTraced {
    id: usize,
    frozen: Value,
    shown: Shown,
}

/// Records made room for at an analysis' first: a module's values are seen by the hundred.
const FIRST_ROOM: usize = 256;

impl Seen {
    /// The values seen, in the order they were first seen at their places.
    pub fn records(&self) -> &[ConcreteRecord] {
        &self.concrete
    }

    /// What each record shows (`None` only if a frozen pytree shows nothing, which `freeze`
    /// rules out). A copy several records share (`last_frozen`) is written out once.
    pub fn shown_all(&self, interp: &Interp) -> Vec<Option<Shown>> {
        let mut written: HashMap<usize, Option<Shown>> = HashMap::default();
        let mut shown = |frozen: &Value| match container_id(frozen) {
            Some(id) => written.entry(id).or_insert_with(|| Shown::of(frozen, interp)).clone(),
            None => Shown::of(frozen, interp),
        };
        self.concrete
            .iter()
            .map(|record| match &record.noted {
                Noted::Shown(s) => Some(s.clone()),
                Noted::Frozen(frozen) => shown(frozen),
            })
            .collect()
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
            let shown = match value {
                Value::Array(_) | Value::Builtin(_) if in_graph => Shown::of_graph(value, self),
                Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Instance(_) => self.traced_tree(value),
                _ => Shown::of(value, self),
            };
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

    /// What a pytree inside a trace shows: the last one's leaves again when it is the same
    /// container and still shows them (a body reads `params` at every line that uses a
    /// parameter), else written out.
    fn traced_tree(&mut self, value: &Value) -> Option<Shown> {
        if let Some(last) = &self.seen.last_traced {
            if container_id(value) == Some(last.id) && alike(&last.frozen, value) {
                return Some(last.shown.clone());
            }
        }
        let shown = Shown::of(value, self)?;
        // Objects are not copied (`freeze`): shown afresh at each read.
        if let (Some(id), Ok(frozen)) = (container_id(value), freeze(value)) {
            self.seen.last_traced = Some(LastTraced { id, frozen, shown: shown.clone() });
        }
        Some(shown)
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
        // Written on one line with single spaces, as it almost always is: the text itself.
        let one_line = is_one_line(text);
        let name: crate::syntax::ast::Name =
            if one_line { text.into() } else { text.split_whitespace().collect::<Vec<_>>().join(" ").into() };
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
        // A plain parameter's span starts with its name; `*args`, `x: int = 0` are searched.
        let at = if text.starts_with(param.name.as_ref()) { 0 } else { text.find(param.name.as_ref()).unwrap_or(0) };
        let start = param.span.start + at as u32;
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

/// Text written on one line with single spaces and no space at either end: shown as it is.
/// One pass over the bytes (this runs at every expression a value is recorded for); any
/// non-ASCII byte sends the text the long way, where Unicode whitespace is collapsed too.
fn is_one_line(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.first() == Some(&b' ') || bytes.last() == Some(&b' ') {
        return false;
    }
    let mut after_space = false;
    for &b in bytes {
        match b {
            b' ' if after_space => return false,
            b' ' => after_space = true,
            b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0x80.. => return false,
            _ => after_space = false,
        }
    }
    true
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::is_one_line;

    fn one_line_text_is_single_spaced_without_ends() {
        assert!(is_one_line("params['w1']"));
        assert!(is_one_line("x @ w + b"));
        assert!(is_one_line(""));
        for long_way in ["x  @ w", " x", "x ", "f(x,\n  y)", "a\tb", "a\u{a0}b"] {
            assert!(!is_one_line(long_way), "{long_way:?}");
        }
    }

    crate::unit_tests::list![one_line_text_is_single_spaced_without_ends];
}
