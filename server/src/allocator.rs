//! The process' allocator: mimalloc, how long it keeps freed memory, and whether it uses
//! transparent huge pages, chosen per command.

use std::ffi::{c_char, c_int, c_long, CStr};

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

/// The memory pressure hook installed by `manage_freed_memory` (only once it checked the option).
fn purge_at_once_under_pressure(pressure: bool) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static UNDER_PRESSURE: AtomicBool = AtomicBool::new(false);
    if UNDER_PRESSURE.swap(pressure, Ordering::Relaxed) != pressure {
        let kept = PURGE_DELAY_MS.load(Ordering::Relaxed) as c_long;
        // SAFETY: as in `manage_freed_memory`, whose check of the option table installed this.
        unsafe { mi_option_set(PURGE_DELAY, if pressure { 0 } else { kept }) };
    }
}

/// mimalloc.h, `mi_option_e`: `mi_option_allow_thp` is option 43 (1 by default).
const ALLOW_THP: c_int = 43;

/// Whether a process whose first argument is `command` keeps transparent huge pages: off for
/// the short-lived commands (`check`, `trace`, `repro`, `--version`), left to mimalloc's
/// default for `lsp` and `run`.
///
/// mimalloc asks the kernel for transparent huge pages on its 1 GiB arena, so the first touch
/// of each 2 MiB of it faults in a whole zeroed huge page. A `check` of one small file touches
/// three of them: zeroing 6 MiB was about a fifth of `tracelens --version`'s CPU time and a
/// sixth of a one-file check's (perf, docs/performance.md). With 4 KiB pages the same process
/// takes about 150 more page faults and less time. The language server and `run` keep huge
/// pages: they live long enough for fewer page faults and TLB misses to pay back.
///
/// The choice must be made before mimalloc initialises (its constructor reads the option and
/// calls `prctl(PR_SET_THP_DISABLE)` for the process when it is off), so it is made in an ELF
/// initialiser that runs before mimalloc's constructor, from `argv` as glibc passes it to
/// initialisers (the way Rust's standard library reads its arguments on Linux).
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
    // SAFETY: plain getter and setter of mimalloc's option table (statically initialised data);
    // the option is checked to hold its documented default first, so a mimalloc with another
    // option order is left alone.
    unsafe {
        if mi_option_get(ALLOW_THP) == 1 {
            mi_option_set(ALLOW_THP, 0);
        }
    }
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
    /// `lsp` or `run` (a test filter), mimalloc was told before it started, and then the kernel
    /// reports huge pages off for the process (`prctl(PR_SET_THP_DISABLE)`), which checks both
    /// the option's index and that the initialiser runs before mimalloc's.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_allocator_starts_without_huge_pages() {
        let first = std::env::args().nth(1);
        if keeps_huge_pages(first.as_deref().map(str::as_bytes)) {
            return;
        }
        // SAFETY: a plain getter of mimalloc's option table.
        assert_eq!(unsafe { mi_option_get(ALLOW_THP) }, 0);
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("THP_enabled:")) {
            assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
        }
    }
}
