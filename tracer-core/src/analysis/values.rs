//! The values an analysis saw inside traces, handed out as they were recorded. The traces of
//! an analysis share one store of them; each trace holds where its values are in it, and a
//! value is located (line and column) and written out as a [`TracedValue`] only when read. An
//! edit's analysis records thousands of values, and a hover reads a few
//! (docs/performance.md, "Stop 67").

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::{AvalText, Location, SiteKind};
use crate::interp::{FileId, Interp};
use crate::jax::value_log::ValueLog;
use crate::jax::ValueRecord;
use crate::syntax::ast::Span;
use crate::syntax::LineIndex;

/// A value the analysis saw at a place of the user's code (hover, inlay hints, `revealed`).
#[derive(Clone, Debug)]
pub struct TracedValue {
    pub location: Location,
    /// The name or expression as written (`x`, `self.w`, `params["w1"]`); shared with the
    /// trace it was recorded in (a remembered trace's values are handed out on every edit).
    pub name: Arc<str>,
    /// `f32[8,4]`; for a pytree, its array leaves with their paths: `{['b']: f32[4], ['w']: f32[8,4]}`
    /// (written out when read: `aval.text()`).
    pub aval: AvalText,
    /// An assignment target (shown as an inlay hint) rather than a use of the name.
    pub assigned: bool,
    pub kind: SiteKind,
    /// The aval is a pytree's leaves.
    pub pytree: bool,
    /// A small concrete array's value as NumPy prints it, when the analysis computed it.
    pub preview: Option<String>,
    /// What the value is in its library's terms, when a shim says
    /// (`Linear(in_features=784, out_features=512)`); its leaves are then in `aval`.
    pub summary: Option<String>,
}

/// A file values were seen in: its path, and its text and lines to locate them with.
struct StoreFile {
    path: Arc<Path>,
    /// `None` for a file no value was seen in (a library, a module without traces).
    text: Option<Arc<str>>,
    /// The file's lines, where a value was seen in it.
    lines: OnceLock<LineIndex>,
}

/// Every value the analysis' traces recorded: those of the traces it made, in the order they
/// were seen, then those of the traces it replayed (shared with the memo).
pub struct ValueStore {
    files: Vec<StoreFile>,
    own: ValueLog,
    /// The replayed traces' values.
    replayed: Vec<Replayed>,
}

struct Replayed {
    file: FileId,
    /// The store index of its first value.
    first: usize,
    /// The index of its record (each value's `record` counts from it).
    record: usize,
    values: Arc<Vec<ValueRecord>>,
}

impl ValueStore {
    /// Takes the values out of `interp` (their last use there).
    pub(crate) fn take(interp: &mut Interp) -> ValueStore {
        let own = std::mem::take(&mut interp.jax.values);
        let mut first = own.len();
        let replayed = std::mem::take(&mut interp.jax.replayed_values)
            .into_iter()
            .map(|r| {
                let at = first;
                first += r.values.len();
                Replayed { file: r.file, first: at, record: r.record, values: r.values }
            })
            .collect();
        let mut store = ValueStore { files: Vec::new(), own, replayed };
        let mut seen_in = vec![false; interp.files.len()];
        let files = store.own.iter().map(|v| v.site.file).chain(store.replayed.iter().map(|r| r.file));
        for file in files {
            if let Some(seen) = seen_in.get_mut(file as usize) {
                *seen = true;
            }
        }
        store.files = interp
            .files
            .iter()
            .zip(seen_in)
            .map(|(f, seen)| StoreFile {
                path: Arc::from(f.path.as_path()),
                text: seen.then(|| Arc::from(&*f.text)),
                // Indexed here (the file's functions are located from it anyway), not at the
                // first hover after each edit.
                lines: if seen { OnceLock::from(f.line_index().clone()) } else { OnceLock::new() },
            })
            .collect();
        store
    }

    /// The record and the span of each value, in the order of the store.
    pub(crate) fn records(&self) -> impl Iterator<Item = (usize, Span)> + '_ {
        let replayed = self.replayed.iter().flat_map(|r| r.values.iter().map(|v| (r.record + v.record, v.site.span)));
        self.own.iter().map(|v| (v.record, v.site.span)).chain(replayed)
    }

    /// The value at `index` of the store, with the file it was seen in.
    pub(crate) fn get(&self, index: usize) -> Option<(FileId, &ValueRecord)> {
        if index < self.own.len() {
            return self.own.get(index).map(|v| (v.site.file, v));
        }
        let at = self.replayed.partition_point(|r| r.first <= index).checked_sub(1)?;
        let r = &self.replayed[at];
        r.values.get(index - r.first).map(|v| (r.file, v))
    }

    /// The values from `start` to `end` of the store, in order.
    fn run(&self, start: usize, end: usize) -> impl Iterator<Item = ValueRef<'_>> + '_ {
        let own = self.own.range(start, end).map(move |value| ValueRef(Seen::Stored { store: self, file: value.site.file, value }));
        let from = self.replayed.partition_point(|r| r.first + r.values.len() <= start);
        let replayed = self.replayed[from..].iter().take_while(move |r| r.first < end).flat_map(move |r| {
            let (lo, hi) = (start.saturating_sub(r.first), (end - r.first).min(r.values.len()));
            r.values[lo..hi].iter().map(move |value| ValueRef(Seen::Stored { store: self, file: r.file, value }))
        });
        own.chain(replayed)
    }

    fn path(&self, file: FileId) -> &Path {
        self.files.get(file as usize).map_or(Path::new(""), |f| &f.path)
    }

    fn locate(&self, file: FileId, span: Span) -> Location {
        let Some(StoreFile { path, text: Some(text), lines }) = self.files.get(file as usize) else {
            let path = self.files.get(file as usize).map_or_else(|| Arc::from(Path::new("")), |f| f.path.clone());
            return Location::unknown(path, span);
        };
        Location::in_text(lines.get_or_init(|| LineIndex::new(text)), text, path.clone(), span)
    }
}

/// Where a trace's values are in the store.
#[derive(Clone)]
pub(crate) enum At {
    /// A trace's values are those seen while it was being traced: one run of the store.
    Run(u32, u32),
    Indices(Arc<[u32]>),
}

/// Where a trace's values are in the store, and the bytes their places span (in whichever
/// file): hover passes over a trace none of whose values comes near the cursor.
pub(crate) struct Place {
    at: At,
    bounds: Span,
}

/// Calls `visit` with each reported record a value of `record` belongs to: its own, and the
/// records around it (`parents`).
fn owners(record: usize, parents: &[Option<usize>], reported: &[bool], mut visit: impl FnMut(usize)) {
    let mut record = Some(record);
    for _ in 0..parents.len() {
        let Some(r) = record.filter(|&r| r < parents.len()) else { break };
        if reported[r] {
            visit(r);
        }
        record = parents[r];
    }
}

/// Finds where the values of each record (`parents` gives the record around each, and
/// `reported` those a value is handed out with) are in the store.
pub(crate) fn places(store: &ValueStore, parents: &[Option<usize>], reported: &[bool]) -> Vec<Place> {
    let records = parents.len();
    // The first, the end and the number of each record's values: a run when they agree.
    let mut runs = vec![(u32::MAX, 0u32, 0u32); records];
    let mut bounds = vec![Span { start: u32::MAX, end: 0 }; records];
    for (i, (record, span)) in store.records().enumerate() {
        let i = i as u32;
        owners(record, parents, reported, |r| {
            let run = &mut runs[r];
            run.0 = run.0.min(i);
            run.1 = i + 1;
            run.2 += 1;
            let b = &mut bounds[r];
            (b.start, b.end) = (b.start.min(span.start), b.end.max(span.end));
        });
    }
    let scattered = |&(first, end, n): &(u32, u32, u32)| n > 0 && end - first != n;
    let mut indices: Vec<Vec<u32>> = vec![Vec::new(); records];
    if runs.iter().any(scattered) {
        for (i, (record, _)) in store.records().enumerate() {
            owners(record, parents, reported, |r| {
                if scattered(&runs[r]) {
                    indices[r].push(i as u32);
                }
            });
        }
    }
    runs.iter()
        .zip(indices)
        .zip(bounds)
        .map(|((&(first, end, n), indices), bounds)| match n {
            0 => Place { at: At::Run(0, 0), bounds: Span { start: 0, end: 0 } },
            _ if end - first == n => Place { at: At::Run(first, end), bounds },
            _ => Place { at: At::Indices(indices.into()), bounds },
        })
        .collect()
}

/// The values of one trace: in the analysis' store until read, or written out (a trace made
/// with named dimensions, whose avals are renamed).
#[derive(Clone)]
pub struct TraceValues(Held);

#[derive(Clone)]
enum Held {
    Stored(Arc<ValueStore>, At, Span),
    Written(Vec<TracedValue>),
}

impl Default for TraceValues {
    fn default() -> TraceValues {
        TraceValues(Held::Written(Vec::new()))
    }
}

impl std::fmt::Debug for TraceValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl TraceValues {
    pub(crate) fn stored(store: &Arc<ValueStore>, place: Place) -> TraceValues {
        TraceValues(Held::Stored(store.clone(), place.at, place.bounds))
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Held::Stored(_, At::Run(start, end), _) => (end - start) as usize,
            Held::Stored(_, At::Indices(indices), _) => indices.len(),
            Held::Written(values) => values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values, each seen through a view that reads what it needs and no more: its place,
    /// its kind, its name; `to_value` writes it out whole.
    pub fn views(&self) -> impl Iterator<Item = ValueRef<'_>> + '_ {
        let none: (&[u32], &[TracedValue]) = (&[], &[]);
        let (store, run, (listed, written)) = match &self.0 {
            Held::Stored(store, At::Run(start, end), _) => (Some(&**store), (*start as usize, *end as usize), none),
            Held::Stored(store, At::Indices(indices), _) => (Some(&**store), (0, 0), (&indices[..], none.1)),
            Held::Written(values) => (None, (0, 0), (none.0, &values[..])),
        };
        let ran = store.into_iter().flat_map(move |store| store.run(run.0, run.1));
        let listed = listed.iter().filter_map(move |&i| {
            let store = store?;
            store.get(i as usize).map(|(file, value)| ValueRef(Seen::Stored { store, file, value }))
        });
        ran.chain(listed).chain(written.iter().map(ValueRef::from))
    }

    /// The values whose place holds `offset` (hover), in order.
    pub fn around(&self, offset: u32) -> impl Iterator<Item = ValueRef<'_>> + '_ {
        let holds = move |s: Span| s.start <= offset && offset <= s.end;
        self.near(holds).filter(move |v| holds(v.span()))
    }

    /// The values whose place ends in `range` (inlay hints), in order.
    pub fn ending_in(&self, (from, to): (u32, u32)) -> impl Iterator<Item = ValueRef<'_>> + '_ {
        self.near(move |s| s.end >= from && s.start <= to).filter(move |v| (from..=to).contains(&v.span().end))
    }

    /// The values, or none when the bytes they span miss what `wanted` looks for.
    fn near(&self, wanted: impl Fn(Span) -> bool) -> impl Iterator<Item = ValueRef<'_>> + '_ {
        let near = match &self.0 {
            Held::Stored(_, _, bounds) => wanted(*bounds),
            Held::Written(_) => true,
        };
        near.then(|| self.views()).into_iter().flatten()
    }

    /// The values, each located and written out.
    pub fn iter(&self) -> impl Iterator<Item = TracedValue> + '_ {
        self.views().map(|v| v.to_value())
    }

    /// The values written out, to change them in place (`rename_symbolic_traces`).
    pub(crate) fn written_mut(&mut self) -> &mut Vec<TracedValue> {
        if let Held::Stored(..) = self.0 {
            self.0 = Held::Written(self.iter().collect());
        }
        match &mut self.0 {
            Held::Written(values) => values,
            Held::Stored(..) => unreachable!("written out just above"),
        }
    }
}

impl<'a> IntoIterator for &'a TraceValues {
    type Item = TracedValue;
    type IntoIter = Box<dyn Iterator<Item = TracedValue> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// One value, as recorded or as written out: what hover and inlay hints look at before they
/// pick the few they show.
#[derive(Clone, Copy)]
pub struct ValueRef<'a>(Seen<'a>);

#[derive(Clone, Copy)]
enum Seen<'a> {
    Stored { store: &'a ValueStore, file: FileId, value: &'a ValueRecord },
    Written(&'a TracedValue),
}

impl<'a> From<&'a TracedValue> for ValueRef<'a> {
    fn from(value: &'a TracedValue) -> ValueRef<'a> {
        ValueRef(Seen::Written(value))
    }
}

impl<'a> ValueRef<'a> {
    pub fn span(&self) -> Span {
        match self.0 {
            Seen::Stored { value, .. } => value.site.span,
            Seen::Written(v) => v.location.span,
        }
    }

    pub fn path(&self) -> &'a Path {
        match self.0 {
            Seen::Stored { store, file, .. } => store.path(file),
            Seen::Written(v) => &v.location.path,
        }
    }

    pub fn kind(&self) -> SiteKind {
        match self.0 {
            Seen::Stored { value, .. } => value.kind,
            Seen::Written(v) => v.kind,
        }
    }

    pub fn name(&self) -> &'a str {
        match self.0 {
            Seen::Stored { value, .. } => &value.name,
            Seen::Written(v) => &v.name,
        }
    }

    /// The aval is a pytree's leaves.
    pub fn pytree(&self) -> bool {
        match self.0 {
            Seen::Stored { value, .. } => value.shown.is_tree(),
            Seen::Written(v) => v.pytree,
        }
    }

    /// What the value is as hover and inlay hints write it (`AvalText::hover_text`).
    pub fn hover_text(&self) -> Cow<'a, str> {
        match self.0 {
            Seen::Stored { value, .. } => Cow::Owned(value.shown.hover_text()),
            Seen::Written(v) => v.aval.hover_text(),
        }
    }

    /// A scalar (`f32[]`): no pytree, no dimension (`AvalText::is_scalar`).
    pub fn is_scalar(&self) -> bool {
        match self.0 {
            Seen::Stored { value, .. } => value.shown.is_scalar(),
            Seen::Written(v) => v.aval.is_scalar(),
        }
    }

    /// The value located and written out.
    pub fn to_value(&self) -> TracedValue {
        match self.0 {
            Seen::Stored { store, file, value } => TracedValue {
                location: store.locate(file, value.site.span),
                name: value.name.clone(),
                aval: AvalText::Seen(value.shown.clone()),
                assigned: value.assigned(),
                kind: value.kind,
                pytree: value.shown.is_tree(),
                preview: None,
                summary: value.shown.summary().map(str::to_string),
            },
            Seen::Written(v) => v.clone(),
        }
    }
}

/// An analysis crosses threads (the editor's worker hands it to the server).
const _: () = {
    const fn sends<T: Send + Sync>() {}
    sends::<ValueStore>();
    sends::<TraceValues>();
};

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;
    use crate::interp::seen::Shown;
    use crate::interp::Site;
    use crate::jax::aval::Aval;
    use crate::jax::dtypes::DType;

    /// A value of `record`, at `start` of file 0, named after its place.
    fn value(record: usize, start: u32) -> ValueRecord {
        let site = Site { file: 0, span: Span { start, end: start + 1 } };
        ValueRecord { site, name: start.to_string().into(), shown: Shown::Array(Aval::new(&[2], DType::F32)), record, kind: SiteKind::Use }
    }

    /// Each trace gets the values of its own record and of the records inside it, in the order
    /// they were seen: a run of the store, or (should the values of two traces ever interleave)
    /// a list of them; a replayed trace's values follow the traced ones.
    fn each_trace_gets_its_values_and_those_inside_it_in_order() {
        // Record 1 is inside record 0; record 2 is a trace of its own; 3, also of its own,
        // whose values interleave with 2's; 4 is replayed, and 5 is inside it.
        let parents = [None, Some(0), None, None, None, Some(4)];
        let mut own = ValueLog::default();
        for (record, start) in [(0, 0), (1, 1), (0, 2), (2, 3), (3, 4), (2, 5)] {
            own.push(value(record, start));
        }
        let memo = Arc::new(vec![value(0, 10), value(1, 11)]);
        let file = StoreFile { path: Arc::from(Path::new("f.py")), text: Some(Arc::from("abcdefghijklm\n")), lines: OnceLock::new() };
        let store =
            Arc::new(ValueStore { files: vec![file], own, replayed: vec![Replayed { file: 0, first: 6, record: 4, values: memo }] });
        let places = places(&store, &parents, &[true; 6]);
        assert!(matches!(places[0].at, At::Run(0, 3)) && matches!(places[2].at, At::Indices(_)), "runs where they can be");
        let traces: Vec<TraceValues> = places.into_iter().map(|place| TraceValues::stored(&store, place)).collect();
        let names = |t: &TraceValues| t.iter().map(|v| v.name.to_string()).collect::<Vec<_>>().join(" ");
        assert_eq!(traces.iter().map(names).collect::<Vec<_>>(), ["0 1 2", "1", "3 5", "4", "10 11", "11"]);
        // Located when read: the third value is at line 1, column 3 of the file.
        let third = traces[0].iter().nth(2).map(|v| (v.location.line, v.location.column));
        assert_eq!(third, Some((1, 3)));
        assert_eq!(traces[4].views().map(|v| v.span().start).collect::<Vec<_>>(), [10, 11]);
        // What hover and inlay hints ask for: the values at a byte, and those ending in a range.
        let starts = |vs: Vec<ValueRef>| vs.iter().map(|v| v.span().start).collect::<Vec<_>>();
        assert_eq!(starts(traces[0].around(2).collect()), [1, 2]);
        assert_eq!(starts(traces[2].around(2).collect()), Vec::<u32>::new());
        assert_eq!(starts(traces[2].ending_in((4, 6)).collect()), [3, 5]);
        assert_eq!(starts(traces[4].ending_in((0, 9)).collect()), Vec::<u32>::new());
    }

    crate::unit_tests::list![each_trace_gets_its_values_and_those_inside_it_in_order];
}
