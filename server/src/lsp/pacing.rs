//! When an edit is analysed: at once, unless analyses of that file are slow and one is still
//! under way. Each file keeps the durations of its last few completed analyses (from the
//! moment the analysis may start to the moment it is stored, so time spent queued behind
//! other files counts) and the intervals between its last few edits. An edit that
//! supersedes a running or waiting analysis of a file whose analyses typically take longer
//! than `FAST` waits a little longer than the typical interval between keystrokes (so that the
//! next keystroke, if it comes, finds nothing started to throw away), but never longer than an
//! analysis typically takes, nor than `MAX_DELAY`. A fast file is never delayed: a newer edit
//! cancels the older analysis, which stops at its next interpreter step. Files that are not
//! open (workspace files importing the edited one) are analysed again in the background,
//! after a pause of `BACKGROUND`, so that the open files' analyses go first and typing does
//! not re-analyse the whole workspace on every keystroke.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Analyses at most this long (typical of the file) start at once on every edit.
pub const FAST: Duration = Duration::from_millis(25);
/// The longest an edit waits before its analysis starts (the former fixed debounce).
pub const MAX_DELAY: Duration = Duration::from_millis(150);
/// How long an edit waits before files that are not open are analysed again.
pub const BACKGROUND: Duration = MAX_DELAY;
/// How many completed analyses (and edit intervals) per file the typical ones are taken over.
const KEPT: usize = 5;
/// Edits further apart than this are not typing: their interval is not kept.
const TYPING: Duration = Duration::from_secs(1);

/// One file's recent analyses and edits.
#[derive(Default, Debug)]
pub struct Pacing {
    recent: VecDeque<Duration>,
    gaps: VecDeque<Duration>,
    last_edit: Option<Instant>,
    /// The generation of the analysis of this file under way (waiting, queued or running).
    pub in_flight: Option<u64>,
}

fn push(xs: &mut VecDeque<Duration>, x: Duration) {
    if xs.len() == KEPT {
        xs.pop_front();
    }
    xs.push_back(x);
}

fn median(xs: &VecDeque<Duration>) -> Option<Duration> {
    let mut xs: Vec<Duration> = xs.iter().copied().collect();
    xs.sort();
    xs.get(xs.len() / 2).copied()
}

impl Pacing {
    /// Records a completed (not cancelled) analysis of the file.
    pub fn record(&mut self, took: Duration) {
        push(&mut self.recent, took);
    }

    /// Records an edit of the file at `now` (before asking for its `delay`).
    pub fn edited(&mut self, now: Instant) {
        if let Some(gap) = self.last_edit.map(|t| now.saturating_duration_since(t)).filter(|g| *g < TYPING) {
            push(&mut self.gaps, gap);
        }
        self.last_edit = Some(now);
    }

    /// The median of the recent durations; `None` before the first analysis completes.
    pub fn typical(&self) -> Option<Duration> {
        median(&self.recent)
    }

    /// How long a new edit waits before its analysis starts. `fixed` is the `debounceMs`
    /// setting, which overrides the adaptive delay when given; `open`: the file is open in
    /// the editor (otherwise it waits at least `BACKGROUND`).
    pub fn delay(&self, fixed: Option<Duration>, open: bool) -> Duration {
        if let Some(d) = fixed {
            return d;
        }
        let paced = match self.typical() {
            Some(t) if t > FAST && self.in_flight.is_some() => {
                // A keystroke interval and a half, when the user is typing.
                let pause = median(&self.gaps).map_or(t, |g| g + g / 2);
                t.min(pause).min(MAX_DELAY)
            }
            _ => Duration::ZERO,
        };
        if open {
            paced
        } else {
            paced.max(BACKGROUND)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn pacing(durations: &[u64], in_flight: bool) -> Pacing {
        let mut p = Pacing::default();
        for &d in durations {
            p.record(ms(d));
        }
        p.in_flight = in_flight.then_some(1);
        p
    }

    #[test]
    fn a_fast_file_is_analysed_at_once_even_while_typing() {
        assert_eq!(pacing(&[], false).delay(None, true), Duration::ZERO);
        assert_eq!(pacing(&[], true).delay(None, true), Duration::ZERO);
        assert_eq!(pacing(&[6, 8, 5, 7, 9], true).delay(None, true), Duration::ZERO);
        assert_eq!(pacing(&[25, 25, 25], true).delay(None, true), Duration::ZERO);
    }

    #[test]
    fn a_slow_file_waits_only_when_an_analysis_is_under_way() {
        // The first edit after a pause starts at once.
        assert_eq!(pacing(&[80, 90, 100], false).delay(None, true), Duration::ZERO);
        // An edit superseding a running analysis waits as long as an analysis typically takes.
        assert_eq!(pacing(&[80, 90, 100], true).delay(None, true), ms(90));
        // Never longer than the cap.
        assert_eq!(pacing(&[900, 1200, 700], true).delay(None, true), MAX_DELAY);
    }

    #[test]
    fn the_typical_duration_is_the_median_of_the_last_five() {
        // One slow analysis among fast ones (a cold import) does not slow the file down.
        assert_eq!(pacing(&[400, 5, 6, 5, 7], true).delay(None, true), Duration::ZERO);
        // Old durations are forgotten: a file that became slow is paced after five analyses.
        let p = pacing(&[5, 5, 5, 5, 5, 60, 60, 60, 60, 60], true);
        assert_eq!(p.typical(), Some(ms(60)));
        assert_eq!(p.delay(None, true), ms(60));
    }

    #[test]
    fn a_slow_file_waits_a_keystroke_interval_and_a_half_when_that_is_shorter() {
        let mut p = pacing(&[120, 130, 140], true);
        let t0 = Instant::now();
        for k in 0..4 {
            p.edited(t0 + ms(40 * k));
        }
        assert_eq!(p.delay(None, true), ms(60));
        // Slow typing: never longer than an analysis.
        let mut p = pacing(&[50, 50, 50], true);
        for k in 0..4 {
            p.edited(t0 + ms(400 * k));
        }
        assert_eq!(p.delay(None, true), ms(50));
        // Edits a pause apart are not typing.
        let mut p = pacing(&[120, 120, 120], true);
        p.edited(t0);
        p.edited(t0 + ms(5000));
        assert_eq!(p.delay(None, true), ms(120));
    }

    #[test]
    fn files_not_open_wait_for_a_pause() {
        assert_eq!(pacing(&[], false).delay(None, false), BACKGROUND);
        assert_eq!(pacing(&[5, 5, 5], true).delay(None, false), BACKGROUND);
        assert_eq!(pacing(&[], false).delay(Some(Duration::ZERO), false), Duration::ZERO);
    }

    #[test]
    fn the_setting_overrides_the_adaptive_delay() {
        assert_eq!(pacing(&[5], true).delay(Some(ms(150)), true), ms(150));
        assert_eq!(pacing(&[500], true).delay(Some(Duration::ZERO), true), Duration::ZERO);
    }
}
