//! The process' allocator: mimalloc, how long it keeps freed memory, and whether it uses
//! transparent huge pages, chosen per command.

use std::ffi::{c_char, c_int, c_long, c_ulong, CStr};

/// An analysis is mostly small allocations, freed together when it ends (docs/ARCHITECTURE.md).
/// Counted per thread for the memory budget (`tracer_core::interp::memory`).
#[global_allocator]
static ALLOCATOR: tracer_core::interp::memory::CountingAllocator<mimalloc::MiMalloc> =
    tracer_core::interp::memory::CountingAllocator(mimalloc::MiMalloc);

/// How long the language server and `run` let mimalloc keep freed memory before returning
/// it to the OS. mimalloc's default (1 s) returns an analysis' pages between two keystrokes
/// a second apart, and the next analysis faults every one of them back in: about 370 page
/// faults and 3 ms of kernel time per edit of the 2,000-line benchmark module. Ten seconds
/// covers the pauses of someone typing; after that, an idle server's memory goes back as
/// before. `run` evaluates a training loop whose steps free and reallocate the same large
/// arrays (a weight gradient is 1.6 MB): with the default, some of them are returned between
/// steps and each comes back as a freshly zeroed huge page, about 4 page faults and 2% of
/// each step of the evaluator benchmark's MLP (docs/evaluator.md).
///
/// While an analysis holds more than a quarter of its memory budget, freed memory goes back
/// at once instead: a program that fills the budget with short-lived arrays (hostile input
/// `many_arrays_held`) otherwise showed the budget's worth of freed pages on top of the
/// budget, over 1 GiB resident for a 512 MiB budget.
const PURGE_DELAY: c_int = 15;
pub const KEPT_PURGE_DELAY_MS: c_long = 10_000;

extern "C" {
    fn mi_option_get(option: c_int) -> c_long;
    fn mi_option_set(option: c_int, value: c_long);
}

/// mimalloc's own purge delay, which `check`, `trace` and `repro` keep when not under pressure.
pub const DEFAULT_PURGE_DELAY_MS: c_long = 1000;

/// The purge delay outside memory pressure, set once by `manage_freed_memory`.
static PURGE_DELAY_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(DEFAULT_PURGE_DELAY_MS as i64);

/// Keeps freed memory for `delay_ms` (see `KEPT_PURGE_DELAY_MS`) and returns it at once while
/// an analysis is under memory pressure, for every command: `trace` and `repro` of
/// `many_arrays_held` peaked at 1.1 GiB with mimalloc's one-second delay alone.
pub fn manage_freed_memory(delay_ms: c_long) {
    // mimalloc.h, `mi_option_e`: `mi_option_purge_delay` is the 16th option (milliseconds).
    // SAFETY: both are plain setters and getters of mimalloc's option table, which the global
    // allocator links in; the option is checked to hold its documented default first, so a
    // mimalloc with another option order is left alone.
    unsafe {
        if mi_option_get(PURGE_DELAY) == DEFAULT_PURGE_DELAY_MS {
            PURGE_DELAY_MS.store(delay_ms as i64, std::sync::atomic::Ordering::Relaxed);
            mi_option_set(PURGE_DELAY, delay_ms);
            tracer_core::interp::memory::set_memory_pressure_hook(purge_at_once_under_pressure);
        }
    }
}

/// Turns purging off for the rest of the process, when it is about to exit: mimalloc's exit
/// handler collects with force, and returned the freed part of every 64 KiB page to the OS
/// one `madvise` at a time (about 100 calls for an `equinox` fixture), memory the kernel
/// takes back at exit anyway.
pub fn keep_freed_memory_until_exit() {
    // SAFETY: as in `manage_freed_memory`; -1 is mimalloc's documented "never purge".
    unsafe {
        if PURGE_DELAY_MS.load(std::sync::atomic::Ordering::Relaxed) == mi_option_get(PURGE_DELAY) as i64 {
            mi_option_set(PURGE_DELAY, -1);
        }
    }
}

/// The memory pressure hook installed by `manage_freed_memory` (only once it checked the option),
/// called at each memory check of an analysis; also where huge pages come back.
fn purge_at_once_under_pressure(pressure: bool) {
    use std::sync::atomic::{AtomicBool, Ordering};
    allow_huge_pages_again();
    static UNDER_PRESSURE: AtomicBool = AtomicBool::new(false);
    if UNDER_PRESSURE.swap(pressure, Ordering::Relaxed) != pressure {
        let kept = PURGE_DELAY_MS.load(Ordering::Relaxed) as c_long;
        // SAFETY: as in `manage_freed_memory`, whose check of the option table installed this.
        unsafe { mi_option_set(PURGE_DELAY, if pressure { 0 } else { kept }) };
    }
}

/// `prctl(2)`: whether the kernel may give this process transparent huge pages.
const PR_SET_THP_DISABLE: c_int = 41;

extern "C" {
    fn prctl(option: c_int, ...) -> c_int;
}

/// Set when a short-lived command started with huge pages off; cleared when they come back.
static HUGE_PAGES_DEFERRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What an analysis holds (`counted_thread_bytes`) before huge pages come back. Below it a
/// fresh 2 MiB region of the arena is mostly left unused: a one-file check of 41 lines
/// (`clean/static_shape_python_control_flow.py`) faulted in two huge pages once they came back
/// at its first memory check, zeroing 4 MiB to use a few hundred KiB of it. No conformance
/// fixture holds this much (the largest, `nnx` ones, fault in about 1,800 4 KiB pages, 7 MiB);
/// an analysis that grows past it is one that fills the regions it gets.
const HUGE_PAGES_AFTER_BYTES: usize = 16 << 20;

/// Called with the memory pressure hook, at each memory check of an analysis (every 256
/// interpreter steps): turns huge pages back on, once, when the analysis holds
/// `HUGE_PAGES_AFTER_BYTES`. The start-up, the parse and the first steps have then faulted in
/// the first regions of mimalloc's arena with 4 KiB pages; fresh 2 MiB regions after them get
/// huge pages, which an analysis that keeps growing fills.
fn allow_huge_pages_again() {
    use std::sync::atomic::Ordering;
    if HUGE_PAGES_DEFERRED.load(Ordering::Relaxed)
        && tracer_core::interp::memory::counted_thread_bytes() >= HUGE_PAGES_AFTER_BYTES
        && HUGE_PAGES_DEFERRED.swap(false, Ordering::Relaxed)
    {
        // SAFETY: `prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0)` only clears a flag of the process.
        #[cfg(target_os = "linux")]
        unsafe {
            prctl(PR_SET_THP_DISABLE, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong)
        };
    }
}

/// Whether a process whose first argument is `command` keeps transparent huge pages from its
/// start: `lsp` and `run` do; the short-lived commands (`check`, `trace`, `repro`,
/// `--version`) start without them and get them back once an analysis holds
/// `HUGE_PAGES_AFTER_BYTES` (`allow_huge_pages_again`).
///
/// mimalloc asks the kernel for transparent huge pages on its 1 GiB arena, so the first touch
/// of each 2 MiB of it faults in a whole zeroed huge page. A `check` of one small file touched
/// three of them and used little of each: zeroing them was about a fifth of a one-file check's
/// CPU time and a sixth of `tracelens --version`'s (perf, docs/performance.md).
///
/// The kernel reads the process' flag (`prctl(PR_SET_THP_DISABLE)`) at each page fault, and
/// mimalloc touches its arena before `main` (the runtime's first allocation), so the flag is
/// set in an ELF initialiser sorted before mimalloc's constructor, from `argv` as glibc passes
/// it to initialisers (the way Rust's standard library reads its arguments on Linux).
fn keeps_huge_pages(command: Option<&[u8]>) -> bool {
    matches!(command, Some(b"lsp" | b"run"))
}

/// Sorted before mimalloc's constructor (plain `.init_array`, or priority 101 under clang).
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array.00099"]
static CHOOSE_HUGE_PAGES: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = choose_huge_pages;

#[cfg(target_os = "linux")]
extern "C" fn choose_huge_pages(argc: c_int, argv: *const *const c_char, _env: *const *const c_char) {
    // SAFETY: glibc calls initialisers with the process' `argc` and `argv`, whose first `argc`
    // entries are NUL-terminated strings; both are checked before use.
    let command = unsafe {
        if argc < 2 || argv.is_null() || (*argv.add(1)).is_null() {
            None
        } else {
            Some(CStr::from_ptr(*argv.add(1)).to_bytes())
        }
    };
    if keeps_huge_pages(command) {
        return;
    }
    // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` only sets a flag of the process, which
    // the kernel reads at each page fault; mimalloc still advises huge pages for its arena.
    let off = unsafe { prctl(PR_SET_THP_DISABLE, 1 as c_ulong, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong) };
    HUGE_PAGES_DEFERRED.store(off == 0, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_long_lived_commands_keep_huge_pages() {
        assert!(keeps_huge_pages(Some(b"lsp")));
        assert!(keeps_huge_pages(Some(b"run")));
        for command in [&b"check"[..], b"trace", b"repro", b"--version", b"lspx"] {
            assert!(!keeps_huge_pages(Some(command)));
        }
        assert!(!keeps_huge_pages(None));
    }

    /// This test binary's own initialiser ran with its arguments: unless the first of them is
    /// `lsp` or `run` (a test filter), the kernel reports huge pages off for the process, and
    /// no analysis ran here to turn them back on.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_allocator_starts_without_huge_pages() {
        let first = std::env::args().nth(1);
        if keeps_huge_pages(first.as_deref().map(str::as_bytes)) {
            return;
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("THP_enabled:")) {
            assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
        }
    }
}
