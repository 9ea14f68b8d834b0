//! Jit traces remembered across the edits of one open document.
//!
//! An editor re-analyses the whole file on every keystroke, and most of that analysis is
//! tracing jitted functions whose code the keystroke did not touch. A [`TraceMemo`] belongs
//! to one document (the language server keeps it beside the document's incremental parser)
//! and remembers what each eligible jit trace made; the next analysis replays it instead of
//! tracing again when nothing the trace depended on can have changed:
//!
//! - the jitted function is a plain top-level `def` of the analysed file, called outside any
//!   trace, in the editor's shapes-only mode (never in values mode);
//! - the cache key is equal: static arguments (numbers, strings, tuples of them), the pytree
//!   structure (builtin containers only) and the avals;
//! - no function that ran in the trace, and no function it read, was touched by an edit:
//!   the memo follows the edits ([`TraceMemo::edit`]), moving the spans after an edit and
//!   forgetting every trace whose code overlaps one;
//! - every global or builtin name the trace read resolves to an equal value now: a modelled
//!   module by name, a top-level function by its definition, a number, a string, `None`;
//! - the trace made nothing but its record: no diagnostic, no side effect, no nested trace,
//!   no captured constant, no stop.
//!
//! Invariant: a replayed trace leaves the analysis as tracing would have, except that
//! - it adds no reproducer statements (only a trace that raised has an error to reproduce,
//!   and one that raised is never remembered);
//! - its jaxpr's equations keep the sites of the version it was traced in: they are read
//!   only in values mode (TL301, `jax.debug.print`), where nothing is replayed, so they are
//!   not moved on every edit.
//!
//! `tests/trace_memo.rs` checks the rest on every fixture.

use std::rc::Rc;

use super::api::{CacheKey, Jitted, TreeDef};
use super::aval::Aval;
use super::dtypes::DType;
use super::effects::GlobalRead;
use super::ir::Jaxpr;
use super::{TraceKind, TraceRecord, ValueRecord};
use crate::interp::builtins::Builtin;
use crate::interp::value::{Function, HashKey, ModuleObj, Value};
use crate::interp::{FileId, Interp, Site};
use crate::syntax::ast::{Span, StmtKind};
use crate::syntax::TextEdit;

/// How many analyses an unused trace is kept for (a cancelled analysis uses few).
const KEEP_UNUSED: u64 = 8;

/// The remembered traces of one document.
#[derive(Default)]
pub struct TraceMemo {
    /// In order of `def_start`, so a call finds its function's traces by a binary search.
    entries: Vec<Entry>,
    /// Counts analyses; an entry notes the last one that used it.
    generation: u64,
    /// The file being analysed (its traces are the ones remembered).
    file: FileId,
    /// Traces replayed so far, over all analyses.
    replayed: usize,
}

struct Entry {
    /// Start of the jitted function's definition: which function this is a trace of.
    def_start: u32,
    key: CacheKey,
    /// Definitions of every function the trace ran or read; an edit inside one forgets it.
    regions: Vec<Span>,
    /// Names the trace looked up, and what they resolved to.
    reads: Vec<(Rc<str>, Print)>,
    made: Made,
    last_used: u64,
}

/// What the trace made, as the analysis keeps it.
struct Made {
    args: Vec<Aval>,
    outputs: Vec<Aval>,
    out_tree: Rc<TreeDef>,
    jaxpr: Rc<Jaxpr>,
    /// The records of traces made inside it (`grad`, `vmap` of a function it calls), their
    /// `parent` counted from the jit's own record.
    nested: Vec<TraceRecord>,
    /// Hover values, each with its record counted from the jit's own; shared with the
    /// analyses that replay the trace (`JaxState::replayed_values`).
    values: std::sync::Arc<Vec<ValueRecord>>,
    /// Global numbers read inside (TL204 if they are reassigned later): (name, span).
    global_reads: Vec<(String, Span)>,
}

/// What a name resolved to, compared across analyses.
#[derive(Clone, Debug, PartialEq)]
enum Print {
    Module(String),
    Function { def: Span, defaults: Vec<Print> },
    Builtin(String),
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(Rc<str>),
    None,
    DType(DType),
    TfDType(DType),
    Tuple(Vec<Print>),
}

/// A trace being recorded for the memo.
pub struct Recording {
    file: FileId,
    regions: Vec<Span>,
    reads: Vec<(Rc<str>, Print)>,
    spoiled: bool,
    before: Snapshot,
}

/// Counts of everything a trace could add besides its own record.
#[derive(PartialEq)]
struct Snapshot {
    diagnostics: usize,
    warned: usize,
    stops: usize,
    stdout: usize,
    records: usize,
    values: usize,
    global_reads: usize,
    /// Per-analysis caches keyed by function identity, which a replay cannot refill.
    caches: usize,
    effects: [usize; 6],
    /// Draws from Python's `random`, whose state a replay would not advance.
    random_draws: u64,
}

fn snapshot(interp: &Interp) -> Snapshot {
    let e = &interp.jax.effects;
    Snapshot {
        diagnostics: interp.diagnostics.len(),
        warned: interp.warned.values().sum(),
        stops: interp.stops.len(),
        stdout: interp.stdout.len(),
        records: interp.jax.records.len(),
        values: interp.jax.values.len(),
        global_reads: e.global_reads.len(),
        caches: interp.jax.body_cache.len() + interp.jax.jitted.iter().map(|j| j.entries.len()).sum::<usize>(),
        random_draws: interp.py_random_draws,
        effects: [
            e.prints.iter().map(|p| p.runs).sum(),
            e.consumed_keys.len(),
            e.stored_tracers.len(),
            e.tracer_stores.len(),
            e.captured_constants.len(),
            e.leaked_traces.len(),
        ],
    }
}

impl TraceMemo {
    /// Follows the edit between the text of the last analysis and the next one (as the
    /// incremental parser found it): forgets the traces whose code it touches, and moves
    /// the spans after it. `None` (no edit known) forgets every trace.
    pub fn edit(&mut self, edit: Option<TextEdit>) {
        let Some(TextEdit { start, old_end, new_end }) = edit else {
            self.entries.clear();
            return;
        };
        let delta = i64::from(new_end) - i64::from(old_end);
        if start == old_end && delta == 0 {
            return;
        }
        // A change touching a definition, or right at its edge, may change its code.
        self.entries.retain(|e| !e.regions.iter().any(|r| r.start <= old_end && start <= r.end));
        let shift = |s: &mut Span| {
            if s.start >= old_end {
                s.start = (s.start as i64 + delta) as u32;
                s.end = (s.end as i64 + delta) as u32;
            }
        };
        for e in &mut self.entries {
            let mut def = Span { start: e.def_start, end: e.def_start };
            shift(&mut def);
            e.def_start = def.start;
            e.regions.iter_mut().for_each(shift);
            e.reads.iter_mut().for_each(|(_, p)| shift_print(p, &shift));
            // The last analysis may still hold its values (`analysis::TraceValues`): they are
            // copied only when some of them move.
            if delta != 0 && e.made.values.iter().any(|v| v.site.span.start >= old_end) {
                std::sync::Arc::make_mut(&mut e.made.values).iter_mut().for_each(|v| shift(&mut v.site.span));
            }
            for n in &mut e.made.nested {
                n.def_site.iter_mut().chain(n.call_site.iter_mut()).for_each(|s| shift(&mut s.span));
            }
            e.made.global_reads.iter_mut().for_each(|g| shift(&mut g.1));
        }
    }

    /// Starts an analysis of `file`.
    pub fn begin(&mut self, file: FileId) {
        self.file = file;
        self.generation += 1;
    }

    /// Ends an analysis: forgets traces no recent analysis used.
    pub fn end(&mut self) {
        let now = self.generation;
        self.entries.retain(|e| e.last_used + KEEP_UNUSED > now);
    }

    /// The indices of the remembered traces of the function whose definition starts at
    /// `def_start` (the entries are kept in order of it).
    fn entries_of(&self, def_start: u32) -> impl Iterator<Item = usize> + '_ {
        let first = self.entries.partition_point(|e| e.def_start < def_start);
        (first..self.entries.len()).take_while(move |&i| self.entries[i].def_start == def_start)
    }

    /// Traces replayed instead of traced, over all analyses so far.
    pub fn replayed(&self) -> usize {
        self.replayed
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn shift_print(p: &mut Print, shift: &impl Fn(&mut Span)) {
    match p {
        Print::Function { def, defaults } => {
            shift(def);
            defaults.iter_mut().for_each(|d| shift_print(d, shift));
        }
        Print::Tuple(items) => items.iter_mut().for_each(|d| shift_print(d, shift)),
        _ => {}
    }
}

/// The jitted function when its traces can be remembered in this analysis.
fn eligible<'a>(interp: &Interp, j: &'a Jitted) -> Option<&'a Rc<Function>> {
    let memo = interp.jax.memo.as_ref()?;
    let Value::Function(f) = &j.fun else { return None };
    let plain = f.file == memo.file && is_top_level(f);
    (plain && interp.values.is_none() && interp.jax.traces.is_empty() && interp.jax.memo_recording.is_none()).then_some(f)
}

/// A function defined at module level: nothing enclosing it can change between calls.
fn is_top_level(f: &Function) -> bool {
    f.closure.parent.is_none() && f.closure.vars.borrow().is_empty() && f.attrs.borrow().is_empty()
}

/// Whether `name`, looked up from a function of `globals`, resolves to what `print` says it
/// did when the trace was recorded (`note_read`): `resolve(..) == Some(print)`, compared
/// without writing out what it resolves to now (a replay checks every read, on every edit).
fn resolves_to(interp: &Interp, globals: &ModuleObj, file: FileId, name: &str, print: &Print) -> bool {
    match globals.dict.borrow().get(name) {
        Some(v) => shows_as(v, file, print),
        None => matches!(print, Print::Builtin(b) if b == name) && interp.builtin_value(name).is_some(),
    }
}

/// `print_of(v, file) == Some(print)`, without building `print_of(v, file)`.
fn shows_as(v: &Value, file: FileId, print: &Print) -> bool {
    match (v, print) {
        (Value::Module(m), Print::Module(name)) => m.native.is_some() && m.name == *name,
        (Value::Function(f), Print::Function { def, defaults }) => {
            f.file == file
                && is_top_level(f)
                && f.kw_defaults.is_empty()
                && f.def.span == *def
                && f.defaults.len() == defaults.len()
                && f.defaults.iter().zip(defaults).all(|(d, p)| shows_as(d, file, p))
        }
        (Value::Builtin(b), Print::Builtin(name)) => matches!(&**b, Builtin::Fn(_) | Builtin::Jax(_)) && b.name() == *name,
        (Value::Int(i), Print::Int(j)) => i == j,
        (Value::Float(x), Print::Float(bits)) => x.to_bits() == *bits,
        (Value::Bool(a), Print::Bool(b)) => a == b,
        (Value::Str(a), Print::Str(b)) => a == b,
        (Value::None, Print::None) => true,
        (Value::DType(a), Print::DType(b)) => a == b,
        (Value::TfDType(a), Print::TfDType(b)) => a == b,
        (Value::Tuple(items), Print::Tuple(prints)) => {
            items.len() == prints.len() && items.iter().zip(prints).all(|(x, p)| shows_as(x, file, p))
        }
        _ => false,
    }
}

fn print_of(v: &Value, file: FileId) -> Option<Print> {
    Some(match v {
        Value::Module(m) if m.native.is_some() => Print::Module(m.name.clone()),
        Value::Function(f) if f.file == file && is_top_level(f) && f.kw_defaults.is_empty() => {
            Print::Function { def: f.def.span, defaults: f.defaults.iter().map(|d| print_of(d, file)).collect::<Option<_>>()? }
        }
        Value::Builtin(b) => match &**b {
            Builtin::Fn(_) | Builtin::Jax(_) => Print::Builtin(b.name()),
            _ => return None,
        },
        Value::Int(i) => Print::Int(*i),
        Value::Float(x) => Print::Float(x.to_bits()),
        Value::Bool(b) => Print::Bool(*b),
        Value::Str(s) => Print::Str(s.clone()),
        Value::None => Print::None,
        Value::DType(d) => Print::DType(*d),
        Value::TfDType(d) => Print::TfDType(*d),
        Value::Tuple(items) => Print::Tuple(items.iter().map(|x| print_of(x, file)).collect::<Option<_>>()?),
        _ => return None,
    })
}

fn plain_key(k: &HashKey) -> bool {
    match k {
        HashKey::Identity(_) => false,
        HashKey::Tuple(items) => items.iter().all(plain_key),
        HashKey::Slice(parts) => parts.iter().all(plain_key),
        _ => true,
    }
}

fn plain_tree(t: &TreeDef) -> bool {
    match t {
        TreeDef::Leaf | TreeDef::None => true,
        TreeDef::Tuple(c) | TreeDef::List(c) => c.iter().all(plain_tree),
        TreeDef::Dict(c) => c.iter().all(|(k, t)| plain_key(k) && plain_tree(t)),
        TreeDef::Node { .. } => false,
    }
}

/// Notes a name the trace being recorded looked up by a function of `file`: `found` in the
/// module's globals, or (`None`) among the builtins.
pub fn note_read(interp: &mut Interp, file: FileId, name: &str, found: Option<&Value>) {
    let Some(rec) = interp.jax.memo_recording.as_mut().filter(|r| !r.spoiled) else { return };
    let print = match found {
        _ if file != rec.file => None,
        Some(v) => print_of(v, file),
        None => Some(Print::Builtin(name.to_string())),
    };
    match print {
        Some(p) => {
            if let Print::Function { def, .. } = &p {
                rec.regions.push(*def);
            }
            rec.reads.push((Rc::from(name), p));
        }
        None => rec.spoiled = true,
    }
}

/// The trace being recorded made something a replay cannot make again (a `custom_jvp` call,
/// whose marker holds the rules of this analysis): it is not remembered.
pub fn spoil(interp: &mut Interp) {
    if let Some(rec) = interp.jax.memo_recording.as_mut() {
        rec.spoiled = true;
    }
}

/// Notes a function the trace being recorded ran.
pub fn note_call(interp: &mut Interp, f: &Function) {
    if let Some(rec) = interp.jax.memo_recording.as_mut() {
        if f.file == rec.file {
            rec.regions.push(f.def.span);
        } else {
            rec.spoiled = true;
        }
    }
}

/// Starts recording the trace of `j` about to be made, when it can be remembered.
pub fn start(interp: &mut Interp, j: &Jitted) {
    let Some(f) = eligible(interp, j) else { return };
    let rec = Recording { file: f.file, regions: vec![f.def.span], reads: Vec::new(), spoiled: false, before: snapshot(interp) };
    interp.jax.memo_recording = Some(rec);
}

/// Where an edit can change the code of a definition whose syntax ends at `end`: through the
/// end of its last line (deleting `# ` in `return x  # * 2`), the blank and comment-only lines
/// after it (uncommenting `    # return x` there adds a statement to its body), and the start
/// of the next line of code (indenting that line moves it into the body).
fn code_reach(text: &str, end: usize) -> usize {
    let mut at = end.min(text.len());
    loop {
        let Some(newline) = text[at..].find('\n') else { return text.len() };
        let next = at + newline + 1;
        let line_end = text[next..].find('\n').map_or(text.len(), |n| next + n);
        let line = text[next..line_end].trim_start();
        if !line.is_empty() && !line.starts_with('#') {
            return next;
        }
        at = line_end;
    }
}

/// Stops recording (the trace raised, or ended): nothing is remembered.
pub fn abandon(interp: &mut Interp) {
    interp.jax.memo_recording = None;
}

/// Ends the recording of the trace of `j` that made `record`: remembers it if it made nothing
/// but its record and values.
pub fn finish(interp: &mut Interp, j: &Jitted, key: &CacheKey, record: usize) {
    let Some(rec) = interp.jax.memo_recording.take() else { return };
    let Value::Function(f) = &j.fun else { return };
    let mut after = snapshot(interp);
    let (records, values, global_reads) = (after.records, after.values, after.global_reads);
    // The trace adds its records, their values and its global reads, and nothing else
    // (the jit's own cache entry is added once it returns).
    after.records = rec.before.records;
    after.values = rec.before.values;
    after.global_reads = rec.before.global_reads;
    let quiet = after == rec.before && record == rec.before.records;
    let file = rec.file;
    let r = &interp.jax.records[record];
    let (Some(jaxpr), Some(outputs), Some(out_tree)) = (&r.jaxpr, &r.outputs, &r.out_tree) else { return };
    let plain = key.statics.iter().all(|(_, k, _)| plain_key(k)) && plain_tree(&key.tree) && plain_tree(out_tree);
    let made_here = |i: Option<usize>| i.is_some_and(|i| (record..records).contains(&i));
    let in_file = |s: &Option<Site>| s.is_none_or(|s| s.file == file);
    // Nested traces: non-caching ones (grad, vmap, ...) of functions of this file. What they
    // close over (the jit's tracers) is read only in values mode, so it is not kept.
    let nested_ok = interp.jax.records[record + 1..records]
        .iter()
        .all(|n| made_here(n.parent) && n.jitted.is_none() && in_file(&n.def_site) && in_file(&n.call_site));
    let own_values = interp.jax.values.range(rec.before.values, values).all(|v| v.site.file == file && made_here(Some(v.record)));
    let reads = &interp.jax.effects.global_reads[rec.before.global_reads..global_reads];
    if rec.spoiled || !quiet || !plain || !nested_ok || !own_values || !r.consts.is_empty() || reads.iter().any(|g| g.site.file != file) {
        return;
    }
    let nested = interp.jax.records[record + 1..records]
        .iter()
        .map(|n| TraceRecord { parent: n.parent.map(|p| p - record), consts: Vec::new(), output_arrays: Vec::new(), ..n.clone() })
        .collect();
    let made = Made {
        args: r.args.clone(),
        outputs: outputs.clone(),
        out_tree: out_tree.clone(),
        jaxpr: jaxpr.clone(),
        nested,
        values: std::sync::Arc::new(
            interp.jax.values.range(rec.before.values, values).map(|v| ValueRecord { record: v.record - record, ..v.clone() }).collect(),
        ),
        global_reads: reads.iter().map(|g| (g.name.clone(), g.site.span)).collect(),
    };
    let mut regions = rec.regions;
    if let Some(text) = interp.files.get(rec.file as usize).map(|f| f.text.clone()) {
        for r in &mut regions {
            r.end = code_reach(&text, r.end as usize) as u32;
        }
    }
    regions.sort_by_key(|s| (s.start, s.end));
    regions.dedup();
    let Some(memo) = interp.jax.memo.as_mut() else { return };
    let def_start = f.def.span.start;
    memo.entries.retain(|e| !(e.def_start == def_start && e.key == *key));
    // In order of `def_start` (`entries_of`); edits move every start after them alike.
    let at = memo.entries.partition_point(|e| e.def_start <= def_start);
    memo.entries.insert(at, Entry { def_start, key: key.clone(), regions, reads: rec.reads, made, last_used: memo.generation });
}

/// A remembered trace of `j` for `key`, replayed: its record and values are added as tracing
/// would add them. Returns the record's index, its jaxpr, output tree and output avals.
pub fn replay(
    interp: &mut Interp,
    j: &Jitted,
    key: &CacheKey,
    call_site: Option<Site>,
    cause: &str,
) -> Option<(usize, Rc<Jaxpr>, Rc<TreeDef>, Vec<Aval>)> {
    let f = eligible(interp, j)?.clone();
    let memo = interp.jax.memo.as_ref()?;
    let def_start = f.def.span.start;
    let index = memo.entries_of(def_start).find(|&i| memo.entries[i].key == *key)?;
    let valid = memo.entries[index].reads.iter().all(|(name, p)| resolves_to(interp, &f.globals, f.file, name, p));
    let memo = interp.jax.memo.as_mut()?;
    if !valid {
        memo.entries.remove(index);
        return None;
    }
    memo.replayed += 1;
    let entry = &mut memo.entries[index];
    entry.last_used = memo.generation;
    let made = &entry.made;
    let (jaxpr, out_tree, outputs) = (made.jaxpr.clone(), made.out_tree.clone(), made.outputs.clone());
    let args = made.args.clone();
    let n_nested = made.nested.len();
    let file = f.file;

    let state = &mut interp.jax;
    for _ in 0..=n_nested {
        state.skip_trace_id();
    }
    let record = state.records.len();
    state.records.push(TraceRecord {
        kind: TraceKind::Jit,
        fn_name: j.name.clone(),
        def_site: Some(Site { file, span: Span { start: f.def.span.start, end: f.def.name_span.end } }),
        call_site,
        args,
        arg_paths: Vec::new(),
        out_paths: Vec::new(),
        outputs: Some(outputs.clone()),
        cause: cause.to_string(),
        jaxpr: Some(jaxpr.clone()),
        jitted: Some(j.info),
        parent: None,
        arg_names: j.params.clone(),
        consts: Vec::new(),
        out_tree: Some(out_tree.clone()),
        output_arrays: Vec::new(),
        traced_for: Some("jit"),
        route: state.route,
        shown_as: None,
        input_parameters: None,
        unknown_end: false,
    });
    // Copied from the memo straight into the analysis (the memo and the records are
    // separate fields of the state), with no list in between; the values are shared.
    let super::JaxState { memo, records, replayed_values, effects, .. } = state;
    let made = &memo.as_ref()?.entries[index].made;
    records.extend(made.nested.iter().map(|n| TraceRecord { parent: n.parent.map(|p| p + record), ..n.clone() }));
    if !made.values.is_empty() {
        replayed_values.push(super::ReplayedValues { file, record, values: made.values.clone() });
    }
    if !made.global_reads.is_empty() {
        let module = Rc::as_ptr(&f.globals) as usize;
        let inside = format!("{}({})", TraceKind::Jit.label(), j.name);
        effects.global_reads.extend(made.global_reads.iter().map(|(name, span)| GlobalRead {
            module,
            name: name.clone(),
            site: Site { file, span: *span },
            inside: inside.clone(),
        }));
    }
    // The functions the trace ran count as called (entry points skip them): each region's
    // module-level `def`, found by its start among the module's statements (in text order, a
    // statement's span is its `def`'s), not by a walk of the module on every replay.
    let regions = &interp.jax.memo.as_ref()?.entries[index].regions;
    if let Some(source) = interp.files.get(file as usize) {
        let body = &source.module.body;
        for region in regions {
            let Ok(at) = body.binary_search_by_key(&region.start, |s| s.span.start) else { continue };
            if let StmtKind::FunctionDef(def) = &body[at].kind {
                if def.span.start == region.start {
                    interp.called.insert(Rc::as_ptr(def) as usize);
                }
            }
        }
    }
    Some((record, jaxpr, out_tree, outputs))
}
