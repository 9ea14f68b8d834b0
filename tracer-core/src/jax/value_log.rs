//! The hover values recorded inside traces, in the order they were seen: an append-only list
//! in chunks of fixed size, so that it never moves what it holds. A module's traces record
//! thousands of values; one vector doubling from its first room would copy each of them about
//! once more (docs/performance.md, "Stop 65").

use super::state::ValueRecord;

/// Values per chunk: a small program's traces fill one.
const CHUNK: usize = 1024;

#[derive(Default)]
pub struct ValueLog {
    chunks: Vec<Vec<ValueRecord>>,
    len: usize,
}

impl ValueLog {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, value: ValueRecord) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(value),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(value);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// The values from `start` (counted from the first) up to `end`, clamped to the log: each
    /// chunk's part sliced, not stepped through (hover reads a trace's values at every request).
    pub fn range(&self, start: usize, end: usize) -> impl Iterator<Item = &ValueRecord> + '_ {
        let end = end.min(self.len);
        let start = start.min(end);
        let first = start / CHUNK;
        let chunks = self.chunks.get(first..).unwrap_or_default().iter().enumerate();
        chunks
            .map_while(move |(k, chunk)| {
                let base = (first + k) * CHUNK;
                (base < end).then(|| &chunk[start.saturating_sub(base)..(end - base).min(chunk.len())])
            })
            .flatten()
    }

    pub fn get(&self, index: usize) -> Option<&ValueRecord> {
        self.chunks.get(index / CHUNK)?.get(index % CHUNK)
    }

    pub fn iter(&self) -> impl Iterator<Item = &ValueRecord> + '_ {
        self.chunks.iter().flatten()
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;
    use crate::interp::seen::{Shown, SiteKind};
    use crate::interp::Site;
    use crate::syntax::ast::Span;

    fn value(i: usize) -> ValueRecord {
        let aval = crate::jax::aval::Aval::new(&[], crate::jax::dtypes::DType::F32);
        let site = Site { file: 0, span: Span { start: i as u32, end: i as u32 + 1 } };
        ValueRecord { site, name: "x".into(), shown: Shown::Array(aval), record: i, kind: SiteKind::Use }
    }

    fn ranges_cross_chunks_as_a_vector_slices() {
        let mut log = ValueLog::default();
        let mut vector = Vec::new();
        for i in 0..2 * CHUNK + 7 {
            log.push(value(i));
            vector.push(i);
        }
        assert_eq!(log.len(), vector.len());
        assert_eq!(log.iter().map(|v| v.record).collect::<Vec<_>>(), vector);
        for i in 0..vector.len() + 3 {
            assert_eq!(log.get(i).map(|v| v.record), vector.get(i).copied(), "value {i}");
        }
        let n = vector.len();
        for (start, end) in [(0, 0), (0, 5), (3, CHUNK), (CHUNK - 1, CHUNK + 1), (CHUNK, 2 * CHUNK), (5, n), (n, n), (n - 2, n + 9)] {
            let got: Vec<usize> = log.range(start, end).map(|v| v.record).collect();
            assert_eq!(got, vector[start.min(n)..end.min(n)], "range {start}..{end}");
        }
    }

    crate::unit_tests::list![ranges_cross_chunks_as_a_vector_slices];
}
