//! The engine's stack for a one-file command: mapped, switched to on the calling thread, and
//! unmapped after, so that `check FILE` starts no thread.

/// The engine interprets recursively; analyses run on a stack to match its budgets.
pub(crate) const ANALYSIS_STACK: usize = 256 << 20;

/// Runs `work` on the calling thread, switched onto a fresh stack of `ANALYSIS_STACK` bytes
/// (mapped lazily, a guard page below it). Starting a thread for it and waiting cost a thread
/// start and two wake-ups, each of which waits for a core on a busy machine. A panic in
/// `work` is caught on the new stack and resumed on the caller's.
///
/// `psm` switches the stack; the mapping is made here rather than by `stacker::grow`, which
/// first reads the calling thread's stack bounds from `/proc/self/maps` (as many instructions
/// as the Rust runtime's own read of it, for a limit this use never consults).
pub(crate) fn on_analysis_stack<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    match Mapping::new(ANALYSIS_STACK) {
        Some(stack) => {
            // SAFETY: `stack.bottom()` is page aligned and `ANALYSIS_STACK` bytes of read-write
            // memory start there, which outlive the call; the callback cannot unwind
            // (`catch_unwind`) and returns normally.
            let caught =
                unsafe { psm::on_stack(stack.bottom(), ANALYSIS_STACK, || std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))) };
            drop(stack);
            caught.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        }
        None => on_analysis_thread(work),
    }
}

/// Where a stack cannot be mapped: a thread with the engine's stack, joined.
fn on_analysis_thread<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| match std::thread::Builder::new().stack_size(ANALYSIS_STACK).spawn_scoped(scope, work).map(|t| t.join()) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => std::process::abort(),
    })
}

/// An anonymous private mapping: one `PROT_NONE` guard page, then the stack.
struct Mapping {
    base: *mut libc::c_void,
    len: usize,
    page: usize,
}

impl Mapping {
    #[cfg(unix)]
    fn new(stack: usize) -> Option<Mapping> {
        // SAFETY: `sysconf` reads a constant of the system.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok().filter(|p| p.is_power_of_two())?;
        let len = stack.checked_add(page)?;
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses aliases nothing.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let mapping = Mapping { base, len, page };
        // SAFETY: the first page of the mapping just made; nothing refers to it.
        (unsafe { libc::mprotect(base, page, libc::PROT_NONE) } == 0).then_some(mapping)
    }

    #[cfg(not(unix))]
    fn new(_stack: usize) -> Option<Mapping> {
        None
    }

    /// The lowest address of the stack, above the guard page.
    fn bottom(&self) -> *mut u8 {
        // SAFETY: `page` < `len`, inside the mapping.
        unsafe { self.base.cast::<u8>().add(self.page) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping is this value's own, and no stack frame lives on it any more.
        #[cfg(unix)]
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}
