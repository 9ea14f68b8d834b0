//! Abstract control flow (design.md §6): when Python control flow needs a value the
//! interpreter cannot know, the analysis goes on as an abstract interpreter does instead of
//! stopping. Both branches of an `if` on an unknown run, each from the state before it, and
//! what they bind is joined; a loop over an unknown runs its body once with an unknown
//! element, joined with not running it at all.
//!
//! A path is run under a write log: every store to a name, an instance or module attribute
//! or a dict entry records the slot's value before the path began. After the first path
//! the log restores that state, so the second path starts where the first did; after the
//! second, each written slot gets the join of what the two paths left there.
//!
//! A path that ends early (a `return`, `break`, `continue` or an exception) is left out of
//! the join: the program goes on along the other one. A `return` is not forgotten: what it
//! returned and left waits for the function's end (`early_return.rs`); nor is a `break` or
//! `continue`: what it left waits for the loop pass's end (`loop_exits.rs`). An exception raised on a path that
//! an unknown chose is a finding only when it is one of JAX's (a tracer converted to a
//! Python bool, a shape error between known avals): those hold whenever the path runs. A
//! plain Python exception there (`raise ValueError("bad config")` under `if cfg.x:`) is
//! never reported: the path is taken to be one the program does not take. A model that runs
//! two paths which both happen (AutoGraph traces both branches of an `if` on a tensor) uses
//! `fork_both_taken`: the same join, but nothing on them is conditional for it.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use super::value::{Dict, HashKey, Instance, ModuleObj, Scope, Value};
use super::{Ctx, Flow, Interp, PyResult, StopReason};
use crate::diagnostics::Code;
use crate::interp::model::array::Array;
use crate::syntax::ast::Name;
use crate::syntax::ast::{BoolOp, Expr, ExprKind, Stmt, StmtKind};

/// A place a path can write to, and read back.
#[derive(Clone)]
pub enum Slot {
    /// A name in a function's scope (its cell may not exist yet).
    Local(Rc<Scope>, Name),
    /// A closure cell (`nonlocal`).
    Cell(Rc<RefCell<Value>>),
    /// A module global, or a module attribute.
    Global(Rc<ModuleObj>, Name),
    Attr(Rc<Instance>, Name),
    Item(Rc<RefCell<Dict>>, HashKey, Value),
}

/// What makes two slots the same place: the object's address (the slot holds the object, so
/// the address is not reused while it is logged) and the name or dict key in it.
pub(super) type SlotKey = (usize, Option<HashKey>, Option<Name>);

impl Slot {
    pub(super) fn key(&self) -> SlotKey {
        match self {
            Slot::Local(s, n) => (Rc::as_ptr(s) as usize, None, Some(n.clone())),
            Slot::Cell(c) => (Rc::as_ptr(c) as usize, None, None),
            Slot::Global(m, n) => (Rc::as_ptr(m) as usize, None, Some(n.clone())),
            Slot::Attr(i, n) => (Rc::as_ptr(i) as usize, None, Some(n.clone())),
            Slot::Item(d, k, _) => (Rc::as_ptr(d) as usize, Some(k.clone()), None),
        }
    }

    pub fn read(&self) -> Option<Value> {
        match self {
            Slot::Local(s, n) => s.vars.borrow().get(n).map(|c| c.borrow().clone()),
            Slot::Cell(c) => Some(c.borrow().clone()),
            Slot::Global(m, n) => m.dict.borrow().get(n).cloned(),
            Slot::Attr(i, n) => i.attrs.borrow().get(n).cloned(),
            Slot::Item(d, k, _) => d.borrow().get(k).cloned(),
        }
    }

    pub fn write(&self, value: Option<Value>) {
        match (self, value) {
            (Slot::Local(s, n), Some(v)) => {
                let cell = s.vars.borrow().get(n).cloned();
                match cell {
                    Some(cell) => *cell.borrow_mut() = v,
                    None => {
                        s.vars.borrow_mut().insert(n.clone(), Rc::new(RefCell::new(v)));
                    }
                }
            }
            (Slot::Local(s, n), None) => {
                s.vars.borrow_mut().shift_remove(n);
            }
            (Slot::Cell(c), Some(v)) => *c.borrow_mut() = v,
            (Slot::Cell(_), None) => {}
            (Slot::Global(m, n), Some(v)) => {
                m.dict.borrow_mut().insert(n.clone(), v);
            }
            (Slot::Global(m, n), None) => {
                m.dict.borrow_mut().shift_remove(n);
            }
            (Slot::Attr(i, n), Some(v)) => {
                i.attrs.borrow_mut().insert(n.clone(), v);
            }
            (Slot::Attr(i, n), None) => {
                i.attrs.borrow_mut().shift_remove(n);
            }
            (Slot::Item(d, k, key), Some(v)) => d.borrow_mut().insert(k.clone(), key.clone(), v),
            (Slot::Item(d, k, _), None) => {
                d.borrow_mut().entries.shift_remove(k);
            }
        }
    }
}

/// The slots one path wrote, each with its value before the path began.
#[derive(Default)]
pub struct WriteLog {
    writes: Vec<(Slot, Option<Value>)>,
    /// The keys of `writes`: a path through library code writes thousands of slots, and a
    /// scan per write made long paths quadratic.
    seen: HashSet<SlotKey>,
    /// Logged to see what a path that certainly runs wrote (`run_logged`), not a path an
    /// unknown chose.
    certain: bool,
}

impl WriteLog {
    fn certain() -> WriteLog {
        WriteLog { certain: true, ..WriteLog::default() }
    }

    fn note(&mut self, slot: &Slot) {
        if self.seen.insert(slot.key()) {
            self.writes.push((slot.clone(), slot.read()));
        }
    }

    fn note_before(&mut self, slot: &Slot, before: &Option<Value>) {
        if self.seen.insert(slot.key()) {
            self.writes.push((slot.clone(), before.clone()));
        }
    }

    /// Puts every written slot back as it was before the path.
    fn undo(&self) {
        for (slot, before) in self.writes.iter().rev() {
            slot.write(before.clone());
        }
    }
}

/// What runs the two paths of a fork.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Paths {
    /// An unknown chooses one: the other is not taken.
    Chosen,
    /// Both are taken, one after the other.
    BothTaken,
}

/// How a path ended.
enum PathEnd {
    /// It ran to its end: its state joins the other path's.
    Completed,
    /// It left by `return`, `break`, `continue` or an exception: the other path goes on.
    Left(Flow),
}

impl<'l> Interp<'l> {
    /// Whether a write must be noted: a path an unknown chose is running, or one that left
    /// early is waiting for where it goes on.
    pub fn logging_writes(&self) -> bool {
        !self.fork_logs.is_empty() || !self.early_returns.is_empty() || self.kept_loop_exits > 0
    }

    /// Notes that `slot` is about to be written, for the paths being run.
    pub fn note_write(&mut self, slot: Slot) {
        if let Some(log) = self.fork_logs.last_mut() {
            log.note(&slot);
        }
        if !self.early_returns.is_empty() {
            self.note_write_after_return(&slot);
        }
        if self.kept_loop_exits > 0 {
            self.note_write_after_loop_exit(&slot);
        }
    }

    /// Whether `flow` is the stop for an unknown that abstract interpretation goes past, or
    /// a plain Python exception raised on a path taken past one.
    pub fn is_unknown_stop(&self, flow: &Flow) -> bool {
        self.abstract_unknowns
            && match flow {
                Flow::Stop(StopReason::Unknown(_), _) => true,
                Flow::Raise(exc) => exc.conditional && exc.code == Code::PythonException,
                _ => false,
            }
    }

    /// Whether the code running now runs only on a path taken past an unknown.
    pub fn in_conditional_path(&self) -> bool {
        self.abstract_unknowns
            && (self.fork_logs.iter().any(|l| !l.certain) || self.conditional_from.is_some_and(|d| d <= self.frames.len()))
    }

    /// From here on, this frame runs on a path taken past an unknown.
    fn mark_conditional(&mut self) {
        let depth = self.frames.len();
        if self.conditional_from.is_none_or(|d| d > depth) {
            self.conditional_from = Some(depth);
        }
    }

    /// The last fork ended with one path left by `return` and the other going on, and both
    /// were taken (AutoGraph traces both branches of an `if` on a tensor): the return was no
    /// way out an unknown chose. It no longer counts as an exit the fork dropped (a loop
    /// around the call would take this pass for the passes after it); with `forget`, the
    /// return kept for the function's end goes too (the other path raised: the raise happens).
    pub fn both_paths_taken(&mut self, forget: bool) {
        self.dropped_exits = self.dropped_exits.saturating_sub(1);
        self.dropped_returns = self.dropped_returns.saturating_sub(1);
        if forget {
            self.forget_early_return();
        }
    }

    /// Runs `first` and `second` as the two paths an unknown chooses between, each from the
    /// state before this call, and leaves the join of what they bound.
    pub fn fork(&mut self, first: impl FnOnce(&mut Self) -> PyResult<()>, second: impl FnOnce(&mut Self) -> PyResult<()>) -> PyResult<()> {
        self.fork_paths(first, second, Paths::Chosen)
    }

    /// `fork` of two paths that both run, one after the other, each from the state before
    /// this call (AutoGraph traces both branches of an `if` on a tensor): what runs on them
    /// is no more conditional than the fork itself, so an exception raised there (a user's
    /// `raise`) is one the program raises. What they bind is joined as by `fork`.
    pub fn fork_both_taken(
        &mut self,
        first: impl FnOnce(&mut Self) -> PyResult<()>,
        second: impl FnOnce(&mut Self) -> PyResult<()>,
    ) -> PyResult<()> {
        self.fork_paths(first, second, Paths::BothTaken)
    }

    fn fork_paths(
        &mut self,
        first: impl FnOnce(&mut Self) -> PyResult<()>,
        second: impl FnOnce(&mut Self) -> PyResult<()>,
        paths: Paths,
    ) -> PyResult<()> {
        let new_log = || match paths {
            Paths::Chosen => WriteLog::default(),
            Paths::BothTaken => WriteLog::certain(),
        };
        self.fork_logs.push(new_log());
        let end1 = self.run_path(first);
        let log1 = self.fork_logs.pop().unwrap_or_default();
        let after1: Vec<Option<Value>> = log1.writes.iter().map(|(slot, _)| slot.read()).collect();
        log1.undo();
        let end1 = end1?;

        self.fork_logs.push(new_log());
        let end2 = self.run_path(second);
        let log2 = self.fork_logs.pop().unwrap_or_default();
        let end2 = match end2 {
            Ok(end) => end,
            Err(flow) => {
                log2.undo();
                return Err(flow);
            }
        };

        // Every slot either path wrote, with its value before the fork.
        let mut slots: Vec<(Slot, Option<Value>, Option<Value>)> = Vec::new();
        for ((slot, before), after) in log1.writes.into_iter().zip(after1) {
            slots.push((slot, before, after));
        }
        for (slot, before) in log2.writes {
            if !log1.seen.contains(&slot.key()) {
                let after1 = before.clone();
                slots.push((slot, before, after1));
            }
        }
        // A path that left by `return`, `break` or `continue` while the other went on: what
        // it left in each slot waits for where it goes on (`early_return.rs`,
        // `loop_exits.rs`).
        let kept = |end: &PathEnd| matches!(end, PathEnd::Left(Flow::Return(_) | Flow::Break | Flow::Continue));
        let left_first = match (&end1, &end2) {
            (end, PathEnd::Completed) if kept(end) => Some(true),
            (PathEnd::Completed, end) if kept(end) => Some(false),
            _ => None,
        };
        let mut left_state: Vec<(Slot, Option<Value>)> = Vec::new();
        for (slot, before, after1) in slots {
            let after2 = slot.read();
            match left_first {
                Some(true) => left_state.push((slot.clone(), after1.clone())),
                Some(false) => left_state.push((slot.clone(), after2.clone())),
                None => {}
            }
            let joined = match (&end1, &end2) {
                (PathEnd::Completed, PathEnd::Completed) => join_optional(after1, after2),
                (PathEnd::Completed, PathEnd::Left(_)) => after1,
                (PathEnd::Left(_), PathEnd::Completed) => after2,
                (PathEnd::Left(_), PathEnd::Left(_)) => before.clone(),
            };
            slot.write(joined);
            if let Some(outer) = self.fork_logs.last_mut() {
                outer.note_before(&slot, &before);
            }
        }

        match (end1, end2) {
            (PathEnd::Completed, PathEnd::Completed) => Ok(()),
            (PathEnd::Completed, PathEnd::Left(flow)) | (PathEnd::Left(flow), PathEnd::Completed) => {
                if !matches!(flow, Flow::Continue) {
                    self.dropped_exits += 1;
                }
                if matches!(flow, Flow::Return(_)) {
                    self.dropped_returns += 1;
                }
                match &flow {
                    Flow::Return(value) => self.keep_early_return(value.clone(), left_state),
                    Flow::Break | Flow::Continue => self.keep_loop_exit(left_state),
                    _ => {}
                }
                if paths == Paths::Chosen {
                    self.mark_conditional();
                }
                self.report_path_error(&flow);
                Ok(())
            }
            (PathEnd::Left(a), PathEnd::Left(b)) => Err(self.join_flows(a, b)),
        }
    }

    /// Runs `path`, which certainly runs, logging the slots it writes; returns its result
    /// and those slots. Enclosing paths see the writes as theirs.
    pub fn run_logged<T>(&mut self, path: impl FnOnce(&mut Self) -> T) -> (T, Vec<Slot>) {
        let (out, writes) = self.run_logged_with_before(path);
        (out, writes.into_iter().map(|(slot, _)| slot).collect())
    }

    /// Runs `path`, which certainly runs, logging each slot it writes with its value before
    /// (`loop_summary.rs` widens them). Enclosing paths see the writes as theirs.
    pub(super) fn run_logged_with_before<T>(&mut self, path: impl FnOnce(&mut Self) -> T) -> (T, Vec<(Slot, Option<Value>)>) {
        self.fork_logs.push(WriteLog::certain());
        let out = path(self);
        let log = self.fork_logs.pop().unwrap_or_default();
        if let Some(outer) = self.fork_logs.last_mut() {
            for (slot, before) in &log.writes {
                outer.note_before(slot, before);
            }
        }
        (out, log.writes)
    }

    /// Runs `path` and puts back every slot it wrote (a pass whose effects do not count).
    pub fn run_undone<T>(&mut self, path: impl FnOnce(&mut Self) -> T) -> T {
        self.fork_logs.push(WriteLog::certain());
        let out = path(self);
        let log = self.fork_logs.pop().unwrap_or_default();
        log.undo();
        out
    }

    /// Runs one path. A budget stop ends the analysis as everywhere; a JAX error on a path
    /// that also holds a way on is reported and the path left.
    fn run_path(&mut self, path: impl FnOnce(&mut Self) -> PyResult<()>) -> PyResult<PathEnd> {
        match path(self) {
            Ok(()) => Ok(PathEnd::Completed),
            Err(flow @ Flow::Stop(StopReason::Budget(_), _)) => Err(flow),
            Err(flow) => Ok(PathEnd::Left(flow)),
        }
    }

    /// The flow out of a fork whose paths both left: the same `return`, `break` or
    /// `continue` goes on; a JAX error is reported; anything else ends what contains the
    /// fork as an unknown does.
    fn join_flows(&mut self, a: Flow, b: Flow) -> Flow {
        match (a, b) {
            (Flow::Return(x), Flow::Return(y)) => Flow::Return(join_values(&x, &y)),
            // A plain Python exception on one path is a path the program does not take (as
            // when the other path goes on): it returns, breaks or continues.
            (flow @ (Flow::Return(_) | Flow::Break | Flow::Continue), Flow::Raise(exc))
            | (Flow::Raise(exc), flow @ (Flow::Return(_) | Flow::Break | Flow::Continue))
                if exc.code == Code::PythonException =>
            {
                self.dropped_exits += 1;
                flow
            }
            (Flow::Break, Flow::Break) => Flow::Break,
            (Flow::Continue, Flow::Continue) => Flow::Continue,
            (Flow::Raise(exc), _) | (_, Flow::Raise(exc)) if exc.code != Code::PythonException => Flow::Raise(exc),
            _ => self.stop_unknown("every path an unknown chooses between leaves here"),
        }
    }

    /// A path left with a JAX error while the other goes on: the error holds whenever the
    /// path runs, so it is reported here; a plain Python exception is not.
    fn report_path_error(&mut self, flow: &Flow) {
        if let Flow::Raise(exc) = flow {
            // In a trace with unknown arguments only shape-independent errors are findings.
            let unknown_arguments = crate::interp::model::state::arguments_unknown(self)
                && !matches!(exc.code, Code::Concretization | Code::TracerToNumpy | Code::LeakedTracer);
            if exc.code != Code::PythonException && !unknown_arguments {
                self.report_uncaught(Flow::Raise(exc.clone()), "a path an unknown chose");
            }
        }
    }
}

/// What a slot holds after two paths: the value both left, or what is known of either.
pub(super) fn join_optional(a: Option<Value>, b: Option<Value>) -> Option<Value> {
    match (a, b) {
        (Some(a), Some(b)) => Some(join_values(&a, &b)),
        // Bound on one path only: using it after the other would be a NameError, so a
        // program that runs has the one value there is.
        (Some(v), None) | (None, Some(v)) => Some(v),
        (None, None) => None,
    }
}

/// The join of two values two paths left in the same place: the value itself where they
/// agree, what they share where they do not (an aval, a Python number's type, a container's
/// shape), and an unknown otherwise.
pub fn join_values(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::None, Value::None) => Value::None,
        (Value::Bool(x), Value::Bool(y)) if x == y => a.clone(),
        (Value::Int(x), Value::Int(y)) if x == y => a.clone(),
        (Value::Float(x), Value::Float(y)) if x.to_bits() == y.to_bits() => a.clone(),
        (Value::Str(x), Value::Str(y)) if x == y => a.clone(),
        (Value::Bool(_) | Value::Int(_), Value::Bool(_) | Value::Int(_)) => Value::UnknownNumber(false),
        (
            Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::UnknownNumber(_),
            Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::UnknownNumber(_),
        ) => Value::UnknownNumber(
            matches!(a, Value::Float(_) | Value::UnknownNumber(true)) || matches!(b, Value::Float(_) | Value::UnknownNumber(true)),
        ),
        (Value::Array(x), Value::Array(y)) => {
            if Rc::ptr_eq(x, y) {
                return a.clone();
            }
            if x.aval != y.aval {
                if x.is_tracer() && y.is_tracer() {
                    return Value::opaque_tracer("a tracer whose shape or dtype depends on an unknown");
                }
                return Value::opaque("an array whose shape or dtype depends on an unknown");
            }
            match (x.is_tracer(), y.is_tracer()) {
                // Both are the trace's: either stands for the value, aval and all.
                (true, true) => b.clone(),
                (false, false) => Value::Array(Array::unknown(x.aval.clone(), "a value chosen by an unknown")),
                _ => Value::opaque("a value that is a tracer on one path only"),
            }
        }
        (Value::Tuple(x), Value::Tuple(y)) => {
            if Rc::ptr_eq(x, y) {
                return a.clone();
            }
            if x.len() != y.len() {
                return Value::opaque("a tuple whose length depends on an unknown");
            }
            Value::tuple(x.iter().zip(y.iter()).map(|(p, q)| join_values(p, q)).collect())
        }
        _ if a.is_certain_tracer() && b.is_certain_tracer() => Value::opaque_tracer("a tracer chosen by an unknown"),
        _ => match (a.identity(), b.identity()) {
            (Some(p), Some(q)) if p == q => a.clone(),
            _ => Value::opaque("a value chosen by an unknown"),
        },
    }
}

/// Going on past an expression that needs an unknown.
impl<'l> Interp<'l> {
    /// The value of one of two expressions an unknown chooses between (`a if u else b`, the
    /// rest of `u and b`): both are evaluated as the two paths of a fork, and the result is
    /// their join; a path that raised is left out, as for an `if` statement.
    pub(super) fn fork_values(
        &mut self,
        first: impl FnOnce(&mut Self) -> PyResult<Value>,
        second: impl FnOnce(&mut Self) -> PyResult<Value>,
    ) -> PyResult<Value> {
        let (mut a, mut b) = (None, None);
        self.fork(
            |i| {
                a = Some(first(i)?);
                Ok(())
            },
            |i| {
                b = Some(second(i)?);
                Ok(())
            },
        )?;
        Ok(match (a, b) {
            (Some(a), Some(b)) => join_values(&a, &b),
            (Some(v), None) | (None, Some(v)) => v,
            (None, None) => Value::opaque(UNKNOWN),
        })
    }

    /// `a and b and ...` / `a or b or ...`: where an operand's truth is unknown, the result is
    /// the join of that operand (the operation stops there) and of the rest's value.
    pub(super) fn bool_op(&mut self, ctx: &Ctx, op: BoolOp, values: &[Expr]) -> PyResult<Value> {
        let Some((last, init)) = values.split_last() else { return Ok(Value::None) };
        for (i, e) in init.iter().enumerate() {
            let v = self.eval(ctx, e)?;
            self.set_span(e.span);
            let what = if op == BoolOp::And { "and" } else { "or" };
            match self.truthy_at(&v, what, e) {
                Ok(t) if (op == BoolOp::And) != t => return Ok(v),
                Ok(_) => {}
                Err(flow) if self.is_unknown_stop(&flow) => {
                    self.note_went_past(&flow, "both outcomes of the `and`/`or` analysed");
                    let rest = &values[i + 1..];
                    return self.fork_values(|_| Ok(v), |i| i.bool_op(ctx, op, rest));
                }
                Err(flow) => return Err(flow),
            }
        }
        self.eval(ctx, last)
    }
}

/// Going on past a statement or a loop that needs an unknown.
impl<'l> Interp<'l> {
    /// A loop over what the interpreter cannot follow (an unknown iterable, an unknown
    /// `while` test): one pass of its body, with `target` bound to an unknown element, stands
    /// for all of them. `break` and `continue` end the pass. A plain Python exception in it
    /// may come from the unknown element: the loop is then skipped as a statement is.
    /// Runs one pass of a loop body, logging the containers it changes (`loop_mutations`).
    pub(super) fn loop_pass(&mut self, ctx: &Ctx, body: &[Stmt]) -> (usize, PyResult<()>) {
        let mark = self.loop_mutations.len();
        self.loop_depth += 1;
        self.loop_pass_count += 1;
        self.loop_passes.push((body.as_ptr() as usize, self.loop_pass_count));
        let ran = self.run_loop_pass(|i| i.exec_block(ctx, body));
        self.loop_passes.pop();
        self.loop_depth -= 1;
        (mark, ran)
    }

    /// After a loop pass: when an unknown cut the loop short there (the pass stands for the
    /// ones after it), what it changed has an unknown length; the log of the outermost loop's
    /// pass is dropped either way.
    pub(super) fn end_loop_pass(&mut self, mark: usize, cut_short: bool) {
        if cut_short {
            let changed: Vec<Value> = self.loop_mutations[mark.min(self.loop_mutations.len())..].to_vec();
            for v in changed {
                self.mark_unsized(&v);
            }
        }
        if self.loop_depth == 0 {
            self.loop_mutations.truncate(mark);
        }
    }

    pub(super) fn loop_over_unknown(&mut self, ctx: &Ctx, target: Option<&Expr>, body: &[Stmt]) -> PyResult<()> {
        if let Some(target) = target {
            self.assign_unknown(ctx, target, "an element of an iteration the interpreter cannot follow");
        }
        self.unknown_loops += 1;
        let ran = self.run_loop_pass(|i| i.exec_block(ctx, body));
        self.unknown_loops -= 1;
        match ran {
            Ok(()) | Err(Flow::Continue) | Err(Flow::Break) => Ok(()),
            Err(Flow::Raise(exc)) if exc.code == Code::PythonException => {
                Err(self.stop_unknown(format!("{} in a loop over an unknown", exc.class.name)))
            }
            Err(other) => Err(other),
        }
    }

    /// Goes on after a statement that needed an unknown: every name it would have bound,
    /// in its nested blocks too, is unknown from here on. A `return` returns an unknown; a
    /// `raise` still leaves.
    pub(super) fn skip_statement(&mut self, ctx: &Ctx, stmt: &Stmt, flow: Flow) -> PyResult<()> {
        self.note_went_past(&flow, "the statement skipped, what it binds unknown");
        match &stmt.kind {
            StmtKind::Return(_) => Err(Flow::Return(Value::opaque(UNKNOWN))),
            StmtKind::Raise { .. } => Err(flow),
            // A skipped `if`, loop, `try` or `with` may have returned: the function's result
            // is unknown (falling through would return `None`, which it may never do).
            _ if may_return(stmt) => Err(Flow::Return(Value::opaque(UNKNOWN))),
            _ => {
                self.forget_bindings(ctx, stmt);
                Ok(())
            }
        }
    }

    fn forget_bindings(&mut self, ctx: &Ctx, stmt: &Stmt) {
        let block = |i: &mut Self, body: &[Stmt]| body.iter().for_each(|s| i.forget_bindings(ctx, s));
        match &stmt.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| self.assign_unknown(ctx, t, UNKNOWN)),
            StmtKind::AnnAssign { target, value: Some(_), .. } | StmtKind::AugAssign { target, .. } => {
                self.assign_unknown(ctx, target, UNKNOWN)
            }
            StmtKind::For { target, body, orelse, .. } => {
                self.assign_unknown(ctx, target, UNKNOWN);
                block(self, body);
                block(self, orelse);
            }
            StmtKind::While { body, orelse, .. } | StmtKind::If { body, orelse, .. } => {
                block(self, body);
                block(self, orelse);
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                block(self, body);
                for h in handlers {
                    block(self, &h.body);
                }
                block(self, orelse);
                block(self, finalbody);
            }
            StmtKind::With { items, body } => {
                for item in items {
                    if let Some(t) = &item.target {
                        self.assign_unknown(ctx, t, UNKNOWN);
                    }
                }
                block(self, body);
            }
            StmtKind::FunctionDef(def) => self.bind_unknown(ctx, &def.name),
            StmtKind::ClassDef(def) => self.bind_unknown(ctx, &def.name),
            StmtKind::Import(aliases) => {
                for a in aliases {
                    self.bind_unknown(ctx, a.asname.as_deref().unwrap_or_else(|| a.name.split('.').next().unwrap_or(&a.name)));
                }
            }
            StmtKind::ImportFrom { names, .. } => {
                for a in names.iter().filter(|a| a.name.as_ref() != "*") {
                    self.bind_unknown(ctx, a.asname.as_deref().unwrap_or(&a.name));
                }
            }
            _ => {}
        }
    }

    fn bind_unknown(&mut self, ctx: &Ctx, name: &str) {
        let _ = self.store_name(ctx, name, Value::opaque(UNKNOWN), None);
    }

    /// Binds `target` to an unknown, as far as that can be done without running anything
    /// the program did not: names, the parts of a tuple target, and attributes of a name.
    pub(super) fn assign_unknown(&mut self, ctx: &Ctx, target: &Expr, what: &str) {
        match &target.kind {
            ExprKind::Name(name) => {
                let _ = self.store_name(ctx, name, Value::opaque(what), Some(target.span));
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for item in items {
                    self.assign_unknown(ctx, item, what);
                }
            }
            ExprKind::Starred(inner) => self.assign_unknown(ctx, inner, what),
            ExprKind::Attribute { value, attr, .. } if matches!(value.kind, ExprKind::Name(_)) => {
                if let Ok(obj) = self.eval(ctx, value) {
                    let _ = self.setattr(&obj, attr, Value::opaque(what));
                }
            }
            // `d[key] = v` skipped (an unknown key): the dict or list may now hold an entry
            // the interpreter does not know, so its keys and length are unknown.
            ExprKind::Subscript { value, .. } if matches!(&value.kind, ExprKind::Name(_) | ExprKind::Attribute { .. }) => {
                if let Ok(obj @ (Value::Dict(_) | Value::List(_))) = self.eval(ctx, value) {
                    self.mark_unsized(&obj);
                }
            }
            _ => {}
        }
    }

    /// Records, for `TRACELENS_DEBUG`, where the analysis went past an unknown and how.
    pub fn note_went_past(&mut self, flow: &Flow, how: &str) {
        self.mark_conditional();
        self.went_past += 1;
        // The first places are enough to debug with; a loop can go past millions.
        if self.stops.len() >= MAX_STOPS_KEPT {
            return;
        }
        match flow {
            Flow::Stop(StopReason::Unknown(why), site) => self.stops.push((*site, format!("{why}: {how}"))),
            Flow::Raise(exc) => self.stops.push((exc.site, format!("{}: {}: {how}", exc.class.name, exc.message))),
            _ => {}
        }
    }
}

impl<'l> Interp<'l> {
    /// From here on the list or dict `v` may hold entries the interpreter does not know.
    pub fn mark_unsized(&mut self, v: &Value) {
        let address = match v {
            Value::List(l) => Rc::as_ptr(l) as *const () as usize,
            Value::Dict(d) => Rc::as_ptr(d) as *const () as usize,
            _ => return,
        };
        self.unsized_containers.entry(address).or_insert_with(|| v.clone());
    }

    /// A method of a dict whose keys are not all known (`is_unsized`), where the known entries
    /// alone would answer wrongly: its views and missing keys are unknown, its copy is
    /// unsized too. `None`: the method answers as for any dict.
    pub(super) fn unsized_dict_method(&mut self, d: &Rc<RefCell<Dict>>, name: &str, args: &[Value]) -> PyResult<Option<Value>> {
        Ok(match name {
            "keys" | "values" | "items" | "popitem" => Some(Value::opaque(format!("dict.{name}() of a dict whose keys are not all known"))),
            "get" | "pop" | "setdefault" => {
                let Some(key) = args.first() else { return Ok(None) };
                let h = self.hash_key(key)?;
                let missing = !d.borrow().entries.contains_key(&h);
                missing.then(|| Value::opaque(format!("dict.{name}() of a key a dict may hold")))
            }
            "copy" => {
                let copy = d.borrow().clone();
                let copy = self.new_dict(copy);
                self.mark_unsized(&copy);
                Some(copy)
            }
            _ => None,
        })
    }
}

const UNKNOWN: &str = "a value computed from an unknown";
const MAX_STOPS_KEPT: usize = 1000;

/// Whether a statement holds a `return` of the function it is in (not of a nested `def`).
fn may_return(stmt: &Stmt) -> bool {
    let any = |body: &[Stmt]| body.iter().any(may_return);
    match &stmt.kind {
        StmtKind::Return(_) => true,
        StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
            any(body) || any(orelse)
        }
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            any(body) || handlers.iter().any(|h| any(&h.body)) || any(orelse) || any(finalbody)
        }
        StmtKind::With { body, .. } => any(body),
        _ => false,
    }
}
