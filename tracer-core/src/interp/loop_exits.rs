//! `break` and `continue` an unknown chose, joined where the loop goes on (design.md §6,
//! `fork.rs`).
//!
//! When a fork's one path leaves a loop pass by `break` or `continue` and the other goes
//! on, the analysis goes on along the second, but the pass may as well have ended on the
//! first. The path that left is not dropped: what it left in the slots that differ from the
//! path going on (the function's local names too: they outlive the loop) waits beside the
//! pass ([`LoopExits`]), and when the pass ends each such slot holds the join of what both
//! left. `for name, stage in stages: if name == cfg.stop: break; x = stage(x)` leaves `x`
//! as the join of the input and the first stage's output, not the stage's as if certain.
//!
//! Where that join lands is where the path that left goes on: a `continue` into the next
//! pass; a `break` past the loop, which the pass then ends (an exit an unknown chose cuts
//! the loop short in `exec.rs`: the pass stands for the ones after it). A pass that ends by
//! `return`, by an exception or at an unknown drops what was kept, as before.
//!
//! Slots written after a path was kept are recorded first (their value before the write is
//! what the path that left holds there): [`Interp::note_write`] calls
//! [`Interp::note_write_after_loop_exit`].

use super::fork::Slot;
use super::kept_state::KeptState;
use super::value::Value;
use super::{Flow, Interp, PyResult};

/// One running loop pass, and what the paths that left it early left.
pub struct LoopExits {
    /// The depth of the frame the loop runs in: a `break` leaves only its own function's
    /// loop.
    depth: usize,
    /// A pass whose exits are not joined here (AutoGraph stages a loop on a tensor with its
    /// own rules): a `break` an unknown chose inside it is dropped, as before.
    barrier: bool,
    state: Option<KeptState>,
}

impl<'l> Interp<'l> {
    /// Runs one loop pass; when it ends with the pass's end (falling off it, `continue` or
    /// `break`), what the paths that left it early left joins the state.
    pub(super) fn run_loop_pass<T>(&mut self, pass: impl FnOnce(&mut Self) -> PyResult<T>) -> PyResult<T> {
        let depth = self.frames.len();
        self.loop_exits.push(LoopExits { depth, barrier: false, state: None });
        let ran = pass(self);
        let kept = self.loop_exits.pop().and_then(|l| l.state);
        if let Some(state) = kept {
            self.kept_loop_exits -= 1;
            if matches!(ran, Ok(_) | Err(Flow::Break) | Err(Flow::Continue)) {
                self.join_kept_state(state);
            }
        }
        ran
    }

    /// Runs `pass` with no loop exit kept for the loops around it (a loop whose `break`
    /// and `continue` follow other rules).
    pub fn run_loop_pass_unjoined<T>(&mut self, pass: impl FnOnce(&mut Self) -> T) -> T {
        let depth = self.frames.len();
        self.loop_exits.push(LoopExits { depth, barrier: true, state: None });
        let out = pass(self);
        self.loop_exits.pop();
        out
    }

    /// A fork's path left the pass by `break` or `continue` while the other went on. `left`
    /// is what that path left in each slot either path wrote.
    pub(super) fn keep_loop_exit(&mut self, left: Vec<(Slot, Option<Value>)>) {
        let depth = self.frames.len();
        let Some(pass) = self.loop_exits.last_mut() else { return };
        if pass.barrier || pass.depth != depth {
            return;
        }
        let first = pass.state.is_none();
        pass.state.get_or_insert_with(KeptState::default).merge_path(left);
        if first {
            self.kept_loop_exits += 1;
        }
    }

    /// `slot` is about to be written by the path that went on: every pass with a kept exit
    /// records what the path that left holds there (the value now), once.
    /// A local name counts only in the loop's own frame (a function the pass calls writes
    /// its own, which end with it).
    pub(super) fn note_write_after_loop_exit(&mut self, slot: &Slot) {
        let depth = self.frames.len();
        let local = matches!(slot, Slot::Local(..));
        for pass in &mut self.loop_exits {
            if let Some(state) = &mut pass.state {
                if !local || pass.depth == depth {
                    state.note_write(slot);
                }
            }
        }
    }
}
