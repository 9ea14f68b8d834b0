//! A long loop whose passes only call what is already traced is summarised (design.md §6).
//!
//! A training loop (`for step in range(10_000): state = train_step(state, batch)`) calls
//! its jitted step once per pass; after the first pass or two every call hits the cache, and
//! each further pass shows nothing new — but walking 10,000 of them through a library's
//! wrappers (`nnx.jit` splits and merges the model's graph in Python on every call) spends
//! the analysis' budget there, and nothing after the loop is analysed.
//!
//! So, in abstract mode and outside any trace, a loop that has spent a share of the step
//! budget (a short loop is walked to its end: an evaluation loop's last, shorter batch
//! retraces) and whose last two passes each called a jitted function or a `tf.function`,
//! traced nothing new and reported nothing stops walking:
//! what the last pass wrote is widened to what it shares with what the pass before left (the
//! same avals, the same structure; a Python counter becomes an unknown number), and one more
//! pass with the loop's element unknown stands for the passes after it, as for a loop over
//! an unknown iterable: a branch only a later pass takes (`if step % 1000 == 999:`) is still
//! analysed. What only a later pass would do with known values (a new shape at step 500) is
//! not seen: the analysis says less there, never something wrong. Lists and dicts the loop
//! grows have an unknown length after it.
//!
//! `tracelens run` and `check --values` compute one execution and walk every pass.

use std::cell::RefCell;
use std::rc::Rc;

use super::fork::{join_values, Slot};
use super::value::{Dict, Instance, Value};
use super::{Ctx, Flow, Interp, PyResult, StopReason};
use crate::syntax::ast::{Expr, Stmt};

/// The slots a logged pass wrote, each with its value before the pass.
pub(super) type Written = Vec<(Slot, Option<Value>)>;

/// Passes in a row that called only what was traced before the loop is summarised.
const QUIET_PASSES: u32 = 2;

/// The share of the step budget a loop walks before it may be summarised: a loop that is
/// cheap to walk is walked to its end (the last, shorter batch of an evaluation loop
/// retraces, and that is worth seeing).
const WALKED_SHARE_OF_STEPS: u64 = 32;

/// How deep widening follows a value's structure (a train state's params dict is 3–5 deep).
const WIDEN_DEPTH: usize = 12;

/// What the program did so far that a loop pass could add to.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Activity {
    staged_calls: u64,
    traces: usize,
    diagnostics: usize,
    warnings: usize,
}

/// A loop being watched for passes that repeat what the one before did.
pub(super) struct LoopWatch {
    quiet: u32,
    start: Activity,
    /// The interpreter's step count when the loop began.
    first_step: u64,
}

impl<'l> Interp<'l> {
    fn activity(&self) -> Activity {
        Activity {
            staged_calls: crate::interp::model::state::staged_calls(self),
            traces: crate::interp::model::state::traces_recorded(self),
            diagnostics: self.diagnostics.len(),
            warnings: self.warned.values().sum(),
        }
    }

    /// A watch for a loop that may be summarised: in abstract mode (not values mode), outside
    /// any trace, where a pass's effects are the program's, not equations of a trace.
    pub(super) fn watch_loop(&self) -> Option<LoopWatch> {
        let eligible = self.abstract_unknowns
            && self.values.is_none()
            && crate::interp::model::state::trace_depth(self) == 0
            && !crate::interp::model::state::in_tf_function(self);
        eligible.then(|| LoopWatch { quiet: 0, start: self.activity(), first_step: self.steps })
    }

    /// Whether the loop has walked its share of the step budget.
    fn costly(&self, watch: &LoopWatch) -> bool {
        self.steps.saturating_sub(watch.first_step) >= self.budgets.max_steps / WALKED_SHARE_OF_STEPS
    }

    /// One pass of a loop body (`loop_pass`), its writes logged with their values before
    /// when it may be the last one walked.
    pub(super) fn watched_pass(
        &mut self,
        ctx: &Ctx,
        body: &[Stmt],
        watch: Option<&mut LoopWatch>,
    ) -> (usize, PyResult<()>, Option<Written>) {
        let Some(watch) = watch else {
            let (mark, ran) = self.loop_pass(ctx, body);
            return (mark, ran, None);
        };
        watch.start = self.activity();
        if watch.quiet + 1 < QUIET_PASSES || !self.costly(watch) {
            let (mark, ran) = self.loop_pass(ctx, body);
            return (mark, ran, None);
        }
        let ((mark, ran), written) = self.run_logged_with_before(|i| i.loop_pass(ctx, body));
        (mark, ran, Some(written))
    }

    /// A watched pass ended going on: whether it was the last quiet one in a row needed, and
    /// logged (the loop is then summarised).
    pub(super) fn pass_repeats(&self, watch: Option<&mut LoopWatch>, written: &Option<Written>) -> bool {
        let Some(watch) = watch else { return false };
        let (now, start) = (self.activity(), watch.start);
        let quiet = now.staged_calls > start.staged_calls
            && now.traces == start.traces
            && now.diagnostics == start.diagnostics
            && now.warnings == start.warnings;
        watch.quiet = if quiet { watch.quiet + 1 } else { 0 };
        watch.quiet >= QUIET_PASSES && self.costly(watch) && written.is_some()
    }

    /// The passes after the last one walked stand for as one: each slot the last pass wrote
    /// holds what it shares with the value the pass before left there, the stop is noted as
    /// a place the analysis went past what it did not walk, and one more pass with the
    /// element unknown (`loop_over_unknown`) runs, in which a function the loop traced is not
    /// traced again on the unknowns it has (`summary_passes`): its calls stand for cache hits.
    pub(super) fn summarise_loop(&mut self, ctx: &Ctx, target: Option<&Expr>, body: &[Stmt], written: Option<Written>) -> PyResult<()> {
        for (slot, before) in written.unwrap_or_default() {
            let after = slot.read();
            let widened = match (before, after) {
                (Some(b), Some(a)) => Some(widen(&b, &a, WIDEN_DEPTH)),
                (_, after) => after,
            };
            slot.write(widened);
        }
        let site = self.site();
        self.note_went_past(
            &Flow::Stop(StopReason::Unknown("a loop whose passes call only what is traced".into()), site),
            "the passes after the last two stood for by one with the element unknown",
        );
        self.summary_passes += 1;
        let ran = self.loop_over_unknown(ctx, target, body);
        self.summary_passes -= 1;
        ran
    }
}

/// What a slot holds for every pass of a summarised loop: the value itself where the last
/// pass left what the pass before left; otherwise, the structure both share (a tuple, a list,
/// a dict with the same keys, an instance of the same class with the same attributes) with
/// each part widened, and at the leaves what `join_values` keeps (an aval, a number's type).
fn widen(before: &Value, after: &Value, depth: usize) -> Value {
    if before.identity().is_some() && before.identity() == after.identity() {
        return after.clone();
    }
    if depth == 0 {
        return join_values(before, after);
    }
    let each = |a: &[Value], b: &[Value]| -> Vec<Value> { a.iter().zip(b).map(|(x, y)| widen(x, y, depth - 1)).collect() };
    match (before, after) {
        (Value::Tuple(a), Value::Tuple(b)) if a.len() == b.len() => Value::tuple(each(a, b)),
        (Value::List(a), Value::List(b)) if a.borrow().len() == b.borrow().len() => Value::list(each(&a.borrow(), &b.borrow())),
        (Value::Dict(a), Value::Dict(b)) => {
            let (a, b) = (a.borrow(), b.borrow());
            if a.entries.len() != b.entries.len() || a.entries.keys().zip(b.entries.keys()).any(|(x, y)| x != y) {
                return join_values(before, after);
            }
            let mut entries = b.entries.clone();
            for ((_, (_, old)), (_, (_, new))) in a.entries.iter().zip(entries.iter_mut()) {
                *new = widen(old, new, depth - 1);
            }
            Value::Dict(Rc::new(RefCell::new(Dict { entries })))
        }
        (Value::Instance(a), Value::Instance(b)) if Rc::ptr_eq(&a.class, &b.class) => {
            let (old, new) = (a.attrs.borrow(), b.attrs.borrow());
            let same_attrs = old.len() == new.len() && old.keys().zip(new.keys()).all(|(x, y)| x == y);
            let same_items = a.tuple.as_ref().map(Vec::len) == b.tuple.as_ref().map(Vec::len);
            if !same_attrs || !same_items {
                return join_values(before, after);
            }
            let attrs = old.iter().zip(new.iter()).map(|((_, x), (n, y))| (n.clone(), widen(x, y, depth - 1))).collect();
            let tuple = a.tuple.as_ref().zip(b.tuple.as_ref()).map(|(x, y)| each(x, y));
            Value::Instance(Rc::new(Instance { class: b.class.clone(), attrs: RefCell::new(attrs), tuple }))
        }
        _ => join_values(before, after),
    }
}
