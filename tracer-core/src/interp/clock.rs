//! The clock the time budget counts on: the CPU time of the thread that analyses (user and
//! system), not the wall clock. An analysis runs on one thread from start to end, so its CPU
//! time is what it has spent; the wall clock also counts what other processes took from it,
//! and on a loaded machine (a build beside the editor, a CI runner's parallel jobs) an
//! analysis that fits its budget would stop early, at a point that moves from run to run,
//! and say less than it knows. The budget still bounds every analysis: an endless loop
//! spends CPU time.
//!
//! Where a thread's CPU time cannot be read, the wall clock stands in.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A reading of the analysing thread's CPU clock. Only comparable with readings taken on the
/// same thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CpuInstant(Duration);

impl CpuInstant {
    pub fn now() -> CpuInstant {
        CpuInstant(cpu_time::ThreadTime::try_now().map(|t| t.as_duration()).unwrap_or_else(|_| wall()))
    }

    /// The CPU time the thread spent since this reading.
    pub fn elapsed(self) -> Duration {
        CpuInstant::now().0.saturating_sub(self.0)
    }

    pub fn checked_add(self, d: Duration) -> Option<CpuInstant> {
        self.0.checked_add(d).map(CpuInstant)
    }
}

/// The wall clock since the first reading, where no CPU clock is available.
fn wall() -> Duration {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    /// Busy work advances the clock; sleeping does not (where the CPU clock is read).
    fn counts_the_threads_work_not_its_sleep() {
        let start = CpuInstant::now();
        std::thread::sleep(Duration::from_millis(200));
        let slept = start.elapsed();
        let busy = CpuInstant::now();
        let mut x = 0u64;
        while busy.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        assert!(busy.elapsed() >= Duration::from_millis(20));
        if cpu_time::ThreadTime::try_now().is_ok() {
            assert!(slept < Duration::from_millis(100), "a sleep of 200 ms counted {slept:?} of CPU time");
        }
    }

    crate::unit_tests::list![counts_the_threads_work_not_its_sleep];
}
