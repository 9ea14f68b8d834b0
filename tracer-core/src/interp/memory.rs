//! The memory budget: an allocation whose size the program decides (`'a' * n`, `[0] * n`,
//! `format(x, '>{n}')`, an array's data, a runaway trace) is checked before it is made.
//!
//! Over budget, an analysis (`check`, the editor) leaves the value uncomputed, says so with
//! an info diagnostic (TL900) and goes on; `run` raises Python's `MemoryError`, as CPython
//! does when `malloc` fails. Besides each single allocation, the memory the analysis holds
//! as a whole is watched at every step when the embedding program counts it
//! (`set_memory_probe`): the binary's allocator does.

use std::sync::OnceLock;

use super::{Flow, Interp, PyResult, StopReason};
use crate::diagnostics::{Code, Severity};

/// What an allocation over the memory budget does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverMemory {
    /// The value is not computed (an unknown value), with an info diagnostic: an analysis.
    NotComputed,
    /// Python's `MemoryError` is raised: `tracelens run`.
    MemoryError,
}

/// Bytes of one Python object reference in a list or tuple, as the interpreter holds it.
pub const VALUE_BYTES: u128 = std::mem::size_of::<super::Value>() as u128;

static MEMORY_PROBE: OnceLock<fn() -> usize> = OnceLock::new();

/// Installs the function that says how many bytes the calling thread holds (its allocations
/// minus its frees); an analysis runs on one thread, so this is what it holds. The binary
/// counts them in its global allocator; without a probe only single allocations are checked.
pub fn set_memory_probe(probe: fn() -> usize) {
    let _ = MEMORY_PROBE.set(probe);
}

/// Bytes the calling thread holds, when the embedding program counts them.
pub fn thread_bytes() -> Option<usize> {
    MEMORY_PROBE.get().map(|probe| probe())
}

impl Interp<'_> {
    /// Whether the program may allocate `bytes` for `what` (`Ok(true)`). Over the budget:
    /// `Ok(false)` in an analysis, after an info diagnostic at the current user line (the
    /// caller makes the value unknown), or Python's `MemoryError` under `run`.
    pub fn afford(&mut self, bytes: u128, what: &str) -> PyResult<bool> {
        if bytes <= self.budgets.max_bytes as u128 {
            return Ok(true);
        }
        match self.budgets.over_memory {
            OverMemory::MemoryError => Err(self.raise("MemoryError", Code::PythonException, "")),
            OverMemory::NotComputed => {
                let message = format!(
                    "not computed: {what} would take {} of memory, over the memory budget ({})",
                    human_bytes(bytes),
                    human_bytes(self.budgets.max_bytes as u128)
                );
                if let Some(site) = self.site() {
                    let mut diag = self.diagnostic(Code::NotAnalysed, site, message, Vec::new());
                    diag.severity = Severity::Info;
                    if !self.diagnostics.contains(&diag) {
                        self.diagnostics.push(diag);
                    }
                }
                Ok(false)
            }
        }
    }

    /// `afford` for a call that cannot return an unknown value: over budget in an analysis
    /// the entry point stops there silently (an f-string makes it an unknown string).
    pub fn afford_or_stop(&mut self, bytes: u128, what: &str) -> PyResult<()> {
        if self.afford(bytes, what)? {
            Ok(())
        } else {
            Err(self.stop_unknown(format!("{what}, over the memory budget")))
        }
    }

    /// Called with the step count: the memory the analysis holds as a whole, against the
    /// budget. Over it, an analysis stops (TL900) and `run` raises `MemoryError`.
    pub(super) fn check_memory(&mut self) -> PyResult<()> {
        let Some(now) = thread_bytes() else { return Ok(()) };
        let held = now.saturating_sub(self.bytes_at_start) as u128;
        if held <= self.budgets.max_bytes as u128 {
            return Ok(());
        }
        match self.budgets.over_memory {
            OverMemory::MemoryError => Err(self.raise("MemoryError", Code::PythonException, "")),
            OverMemory::NotComputed => Err(Flow::Stop(
                StopReason::Budget(format!("the memory budget ({}) ran out", human_bytes(self.budgets.max_bytes as u128))),
                self.site(),
            )),
        }
    }
}

thread_local! {
    /// Bytes allocated minus bytes freed on this thread, by `CountingAllocator`.
    static HELD: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

/// A global allocator that counts, per thread, the bytes allocated and not yet freed, for
/// the memory budget: `#[global_allocator] static A: CountingAllocator<MiMalloc> = ...;`
/// then `set_memory_probe(counted_thread_bytes)`.
pub struct CountingAllocator<A>(pub A);

fn count(delta: isize) {
    // `try_with`: a thread being torn down has no counter, and needs none.
    let _ = HELD.try_with(|held| held.set(held.get().wrapping_add(delta)));
}

/// What `CountingAllocator` counted on the calling thread.
pub fn counted_thread_bytes() -> usize {
    HELD.try_with(|held| held.get().max(0) as usize).unwrap_or(0)
}

// SAFETY: every call is forwarded to the wrapped allocator unchanged; the counter is a
// thread-local `Cell` with a const initialiser and no destructor, which allocates nothing.
unsafe impl<A: std::alloc::GlobalAlloc> std::alloc::GlobalAlloc for CountingAllocator<A> {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { self.0.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// `512 MiB`, `1.5 GiB`, `900 bytes`.
pub fn human_bytes(bytes: u128) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value >= 1024.0 {
        return format!("{bytes} bytes");
    }
    if value.fract() == 0.0 {
        format!("{} {}", value as u64, UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
