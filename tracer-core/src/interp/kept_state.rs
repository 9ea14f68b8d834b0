//! The state a path left when it left early (by a `return`, `break` or `continue` an unknown
//! chose), kept until the place it leaves to: the function's end (`early_return.rs`) or the
//! end of the loop pass (`loop_exits.rs`). There it joins what the path that went on left.

use std::collections::HashMap;

use super::fork::{join_optional, Slot, SlotKey};
use super::value::Value;
use super::Interp;

/// Each slot whose value on the paths that left may differ from the path going on, with the
/// join of what those paths left there (`None`: unbound).
#[derive(Default)]
pub struct KeptState {
    slots: Vec<(Slot, Option<Value>)>,
    index: HashMap<SlotKey, usize>,
}

impl KeptState {
    /// One more path left, leaving `left` in the slots either path of its fork wrote.
    pub(super) fn merge_path(&mut self, left: Vec<(Slot, Option<Value>)>) {
        let mut seen: Vec<bool> = vec![false; self.slots.len()];
        for (slot, value) in left {
            let key = slot.key();
            match self.index.get(&key) {
                Some(&i) => {
                    if let Some(s) = seen.get_mut(i) {
                        *s = true;
                    }
                    self.slots[i].1 = join_optional(self.slots[i].1.take(), value);
                }
                None => self.add(key, slot, value),
            }
        }
        // A slot kept before and not written by either path: this path left in it what the
        // path going on holds now.
        for (i, _) in seen.iter().enumerate().filter(|(_, s)| !**s) {
            let now = self.slots[i].0.read();
            self.slots[i].1 = join_optional(self.slots[i].1.take(), now);
        }
    }

    /// `slot` is about to be written by the path that went on: the paths that left hold
    /// what it holds now (recorded once).
    pub(super) fn note_write(&mut self, slot: &Slot) {
        let key = slot.key();
        if !self.index.contains_key(&key) {
            self.add(key, slot.clone(), slot.read());
        }
    }

    fn add(&mut self, key: SlotKey, slot: Slot, value: Option<Value>) {
        self.index.insert(key, self.slots.len());
        self.slots.push((slot, value));
    }
}

impl<'l> Interp<'l> {
    /// The paths that left join the path that went on here: each kept slot holds the join
    /// of what they left and what it holds now.
    pub(super) fn join_kept_state(&mut self, state: KeptState) {
        self.write_kept_state(state, true);
    }

    /// Only the paths that left go on here (the one that went on raised): each kept slot
    /// holds what they left.
    pub(super) fn restore_kept_state(&mut self, state: KeptState) {
        self.write_kept_state(state, false);
    }

    fn write_kept_state(&mut self, state: KeptState, join: bool) {
        for (slot, left) in state.slots {
            let value = if join { join_optional(left, slot.read()) } else { left };
            self.note_write(slot.clone());
            slot.write(value);
        }
    }
}
