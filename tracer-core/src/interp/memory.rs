//! The memory budget: an allocation whose size the program decides (`'a' * n`, `[0] * n`,
//! `format(x, '>{n}')`, an array's data, a runaway trace) is checked before it is made.
//!
//! Over budget, an analysis (`check`, the editor) leaves the value uncomputed, says so with
//! an info diagnostic (TL900) and goes on; `run` raises Python's `MemoryError`, as CPython
//! does when `malloc` fails. When the embedding program counts what each thread holds
//! (`set_memory_probe`: the binary's allocator does), an allocation is checked together with
//! what the analysis already holds, and the whole is also checked every few hundred steps.
//!
//! The budget of the analysis running on a thread is kept in a thread-local `Ledger`, so
//! that code without the interpreter at hand (the evaluator's kernels, `fits`) checks the
//! same budget before it allocates an array's data. The ledger also carries the analysis'
//! deadline (`in_time`): a large kernel cannot be stopped halfway, so the evaluator asks
//! before each one.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Duration;

use super::clock::CpuInstant;

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

static PRESSURE_HOOK: OnceLock<fn(bool)> = OnceLock::new();

/// Installs the function told whether an analysis holds a large part of its memory budget
/// (more than a quarter). The binary uses it to return freed memory to the OS at once while
/// it does: its allocator otherwise keeps freed pages for a while, and an analysis that fills
/// its budget with short-lived arrays would show twice its budget in resident memory.
pub fn set_memory_pressure_hook(hook: fn(bool)) {
    let _ = PRESSURE_HOOK.set(hook);
}

/// Tells the pressure hook, if any, whether `held` bytes are a large part of `max_bytes`.
fn note_held(held: u128, max_bytes: u64) {
    if let Some(hook) = PRESSURE_HOOK.get() {
        hook(held.saturating_mul(4) > u128::from(max_bytes));
    }
}

/// The memory budget of the analysis running on this thread, from its start to its end.
#[derive(Clone, Copy, Debug)]
struct Budget {
    /// What the thread held when the analysis started (`thread_bytes`).
    start: usize,
    max_bytes: u64,
    /// `Budgets::max_elements`: no array with more elements has its data computed.
    max_elements: u64,
    /// When the analysis' time budget runs out (`None`: a budget past what a clock can hold).
    deadline: Option<CpuInstant>,
}

thread_local! {
    static CURRENT: Cell<Option<Budget>> = const { Cell::new(None) };
}

/// The memory budget of one analysis, in force on its thread while the ledger lives; the one
/// it replaced comes back when it is dropped.
#[derive(Debug)]
pub struct Ledger {
    start: usize,
    previous: Option<Budget>,
}

impl Ledger {
    pub fn open(max_bytes: u64, max_elements: u64, max_time: Duration) -> Ledger {
        let deadline = CpuInstant::now().checked_add(max_time);
        let start = thread_bytes().unwrap_or(0);
        let previous = CURRENT.try_with(|c| c.replace(Some(Budget { start, max_bytes, max_elements, deadline }))).ok().flatten();
        Ledger { start, previous }
    }

    /// The analysis' clock restarted (`Interp::restart_clock`): its time budget counts from now.
    pub fn restart_clock(&self, max_time: Duration) {
        let deadline = CpuInstant::now().checked_add(max_time);
        let _ = CURRENT.try_with(|c| c.set(c.get().map(|b| Budget { deadline, ..b })));
    }

    /// What the thread holds more than when the ledger was opened (0 when nothing counts).
    pub fn held(&self) -> usize {
        thread_bytes().unwrap_or(0).saturating_sub(self.start)
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(self.previous));
    }
}

/// Whether `bytes` more fit the memory budget of the analysis running on this thread, with
/// what it already holds. Always true outside an analysis.
pub fn fits(bytes: u128) -> bool {
    match CURRENT.try_with(Cell::get).ok().flatten() {
        Some(budget) => {
            let held = thread_bytes().unwrap_or(0).saturating_sub(budget.start) as u128;
            note_held(held.saturating_add(bytes), budget.max_bytes);
            held.saturating_add(bytes) <= u128::from(budget.max_bytes)
        }
        None => true,
    }
}

/// Arrays at least this large are computed only while the analysis has time left: their
/// kernels take long enough that a chain of them bound in one interpreter step
/// (`jax.random.categorical` over 65,536 logits for 840 samples: seconds) would overrun the
/// time budget, which the interpreter checks only between steps. Smaller kernels take
/// microseconds, and reading the clock for each would cost more than they do.
const TIMED_ELEMENTS: u128 = 4096;

/// Whether the analysis running on this thread may still compute an array of `elements`
/// elements before its time budget runs out. Always true outside an analysis.
pub fn in_time(elements: u128) -> bool {
    elements < TIMED_ELEMENTS || CURRENT.try_with(Cell::get).ok().flatten().is_none_or(|b| b.deadline.is_none_or(|d| CpuInstant::now() < d))
}

/// Bytes of data an array of `elements` elements takes in the evaluator (f64 each).
pub fn array_bytes(elements: u128) -> u128 {
    elements.saturating_mul(8)
}

/// Whether the data of an array of `elements` elements may be computed now: within the
/// element budget of the analysis running on this thread, and with its bytes within the
/// memory budget. Always true outside an analysis.
pub fn fits_array(elements: u128) -> bool {
    match CURRENT.try_with(Cell::get).ok().flatten() {
        Some(budget) => elements <= u128::from(budget.max_elements) && fits(array_bytes(elements)),
        None => true,
    }
}

impl Interp<'_> {
    /// Whether the program may allocate `bytes` for `what` (`Ok(true)`), with what the
    /// analysis already holds. Over the budget: `Ok(false)` in an analysis, after an info
    /// diagnostic at the current user line (the caller makes the value unknown), or Python's
    /// `MemoryError` under `run`.
    pub fn afford(&mut self, bytes: u128, what: &str) -> PyResult<bool> {
        let max = u128::from(self.budgets.max_bytes);
        let held = self.ledger.held() as u128;
        note_held(held.saturating_add(bytes), self.budgets.max_bytes);
        if held.saturating_add(bytes) <= max {
            return Ok(true);
        }
        match self.budgets.over_memory {
            OverMemory::MemoryError => Err(self.raise("MemoryError", Code::PythonException, "")),
            OverMemory::NotComputed => {
                let message = if bytes > max / 2 {
                    format!(
                        "not computed: {what} would take {} of memory, over the memory budget ({})",
                        human_bytes(bytes),
                        human_bytes(max)
                    )
                } else {
                    format!(
                        "not computed: {what} would take {} of memory, and the analysis already holds {} of its memory budget ({})",
                        human_bytes(bytes),
                        human_bytes(held),
                        human_bytes(max)
                    )
                };
                if let Some(site) = self.site() {
                    let mut diag = self.diagnostic(Code::NotAnalysed, site, message, Vec::new());
                    diag.severity = Severity::Info;
                    if !self.diagnostics.iter().any(|d| d.code == diag.code && d.span == diag.span && d.path == diag.path) {
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
        if thread_bytes().is_none() {
            return Ok(());
        }
        let held = self.ledger.held() as u128;
        note_held(held, self.budgets.max_bytes);
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

/// Inlined into the allocator's methods, which every allocation and free of the process
/// goes through: called across the crate boundary, it cost a call of its own (about 1M
/// instructions of a 50M `run`).
#[inline]
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
