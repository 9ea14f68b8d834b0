//! Work spread over threads, one item at a time: each suite (conformance, reproducers, hover,
//! real projects) runs a slow subprocess per item, so a shared queue keeps every worker busy
//! until the last item, and results come back in the items' order whatever order they finish.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `work(index, item)` for every item, `jobs` at a time; the results in the items' order.
pub fn map<T: Sync, R: Send>(items: &[T], jobs: usize, work: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    map_with(items, jobs, || (), |(), index, item| work(index, item), |()| {})
}

/// [`map`] with state of each worker's own: made by `start` when the worker starts, handed to
/// each of its items, and given to `finish` when the queue is empty (a language server kept
/// for the next fixture, stopped at the end).
pub fn map_with<T: Sync, R: Send, S>(
    items: &[T],
    jobs: usize,
    start: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize, &T) -> R + Sync,
    finish: impl Fn(S) + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| {
                let mut state = start();
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(item) = items.get(index) else { break };
                    let result = work(&mut state, index, item);
                    // A worker that panicked poisons the lock; the others' results still count.
                    let mut slots = slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    slots[index] = Some(result);
                }
                finish(state);
            });
        }
    });
    slots.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner).into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_whatever_order_they_finish() {
        let items: Vec<u64> = (0..40).collect();
        let out = map(&items, 4, |index, &x| {
            // Early items take longest, so they finish last.
            std::thread::sleep(std::time::Duration::from_millis(40 - x));
            (index, x * 2)
        });
        assert_eq!(out, items.iter().map(|&x| (x as usize, x * 2)).collect::<Vec<_>>());
    }

    #[test]
    fn each_worker_starts_and_finishes_its_state_once() {
        let started = AtomicUsize::new(0);
        let finished = Mutex::new(Vec::new());
        let items = vec![(); 10];
        let out = map_with(
            &items,
            3,
            || {
                started.fetch_add(1, Ordering::SeqCst);
                0usize
            },
            |seen, _, ()| {
                *seen += 1;
                *seen
            },
            |seen| finished.lock().unwrap().push(seen),
        );
        assert_eq!(out.len(), 10);
        assert_eq!(started.load(Ordering::SeqCst), 3);
        let finished = finished.into_inner().unwrap();
        assert_eq!(finished.len(), 3);
        assert_eq!(finished.iter().sum::<usize>(), 10, "every item seen by exactly one worker");
    }

    #[test]
    fn no_items_no_work() {
        let out: Vec<()> = map(&Vec::<u8>::new(), 4, |_, _| unreachable!());
        assert!(out.is_empty());
    }
}
