//! Returns an unknown chose, kept until the function ends (design.md §6, `fork.rs`).
//!
//! When a fork's one path leaves by `return` and the other goes on, the analysis goes on
//! along the second, but the function may as well have returned on the first. So the
//! returned path is not dropped: its value, and the state it left in the slots that differ
//! from the path that went on, wait beside the frame ([`EarlyReturns`]). When the function
//! ends, its result is the join of every way out (`def f(x): if u: return x` then
//! `return x.reshape(2, 3)` returns an array of unknown shape, not the reshaped one as if
//! certain), and each waiting slot holds the join of what the returned paths and the path
//! that went on left there.
//!
//! A plain Python exception on the path that went on (`raise ValueError("unsupported")`
//! after `if cfg.ok: return x`) is taken, as everywhere in abstract control flow, to be a
//! path the program does not take: the function returns what the returned paths did.
//!
//! Slots written after a return was kept are recorded first (their value before the write
//! is what the returned paths left there): [`Interp::note_write`] calls
//! [`Interp::note_write_after_return`]. A function's own local names are not kept: they end
//! with its frame.

use super::fork::{join_values, Slot};
use super::kept_state::KeptState;
use super::value::Value;
use super::{Flow, Interp, PyResult};
use crate::diagnostics::Code;

/// The paths of one running function that left by a `return` an unknown chose.
pub struct EarlyReturns {
    /// The depth of the function's frame (`frames.len()` while it runs).
    depth: usize,
    /// The join of the values they returned.
    value: Value,
    /// What they left in the slots that may differ from the path going on.
    state: KeptState,
}

impl<'l> Interp<'l> {
    /// A fork's path left by `return value` while the other went on. `returned` is what that
    /// path left in each slot either path wrote.
    pub(super) fn keep_early_return(&mut self, value: Value, returned: Vec<(Slot, Option<Value>)>) {
        let depth = self.frames.len();
        // Kept for a frame that has ended without passing its end here: not its returns.
        while self.early_returns.last().is_some_and(|k| k.depth > depth) {
            self.early_returns.pop();
        }
        let returned: Vec<(Slot, Option<Value>)> = returned.into_iter().filter(|(s, _)| !matches!(s, Slot::Local(..))).collect();
        match self.early_returns.last_mut() {
            Some(kept) if kept.depth == depth => {
                kept.value = join_values(&kept.value, &value);
                kept.state.merge_path(returned);
            }
            _ => {
                let mut state = KeptState::default();
                state.merge_path(returned);
                self.early_returns.push(EarlyReturns { depth, value, state });
            }
        }
    }

    /// Whether the running function (the frame at `frames.len()`) has a kept return.
    pub fn keeps_early_return(&self) -> bool {
        self.early_returns.last().is_some_and(|k| k.depth == self.frames.len())
    }

    /// Forgets the running function's kept return: the fork that kept it was not a choice
    /// after all (AutoGraph's `if` on a tensor traces both branches, and one that raises
    /// raises, whatever the other did).
    pub fn forget_early_return(&mut self) {
        if self.keeps_early_return() {
            self.early_returns.pop();
        }
    }

    /// `slot` is about to be written by the path that went on: every function with a kept
    /// return records what its returned paths left there (the value now), once.
    pub(super) fn note_write_after_return(&mut self, slot: &Slot) {
        if matches!(slot, Slot::Local(..)) {
            return;
        }
        for kept in &mut self.early_returns {
            kept.state.note_write(slot);
        }
    }

    /// The function whose frame is at `depth` ends with `result`: its kept returns, if any,
    /// join it (the value and the state), or replace it when the path that went on raised a
    /// plain Python exception.
    pub(super) fn end_with_early_returns(&mut self, depth: usize, result: PyResult<Value>) -> PyResult<Value> {
        if !self.early_returns.last().is_some_and(|k| k.depth == depth) {
            return result;
        }
        let Some(kept) = self.early_returns.pop() else { return result };
        match result {
            Ok(value) => {
                self.join_kept_state(kept.state);
                Ok(join_values(&kept.value, &value))
            }
            Err(Flow::Raise(exc)) if exc.code == Code::PythonException => {
                self.dropped_exits += 1;
                self.restore_kept_state(kept.state);
                Ok(kept.value)
            }
            Err(flow) if self.is_unknown_stop(&flow) => {
                self.join_kept_state(kept.state);
                Err(flow)
            }
            other => other,
        }
    }
}
