//! Byte offset <-> (line, column) conversion. Lines and columns are 0-based here;
//! columns count Unicode code points (the CLI contract). LSP columns (UTF-16 or UTF-8 units)
//! are the server's: `server/src/lsp/convert.rs` counts them from `line_start`/`line_span`.

/// A 0-based line and a 0-based column in Unicode code points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

#[derive(Clone, Debug)]
pub struct LineIndex {
    /// Byte offset at which each line starts.
    line_starts: Vec<u32>,
    /// The text is ASCII: a column is its byte distance from the line's start. Every value
    /// an analysis shows is located, thousands per edit (docs/performance.md).
    ascii: bool,
    /// The line holding the first byte of each block of `BLOCK` bytes: a line is found from
    /// there in a step or two, not by a binary search of every line start.
    blocks: Vec<u32>,
}

/// `LineIndex::blocks`' block size, in bytes (a few lines of code).
const BLOCK_BITS: u32 = 6;

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        // Lines end as in Python and LSP: at `\n`, `\r\n` or a lone `\r` (never at U+2028,
        // NEL or form feed).
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        for i in memchr::memchr2_iter(b'\n', b'\r', bytes) {
            if bytes[i] == b'\n' || bytes.get(i + 1) != Some(&b'\n') {
                line_starts.push(i as u32 + 1);
            }
        }
        let mut blocks = Vec::with_capacity((text.len() >> BLOCK_BITS) + 1);
        let mut line = 0;
        for block in 0..=(text.len() >> BLOCK_BITS) as u32 {
            let first = block << BLOCK_BITS;
            while line_starts.get(line + 1).is_some_and(|&next| next <= first) {
                line += 1;
            }
            blocks.push(line as u32);
        }
        LineIndex { line_starts, ascii: text.is_ascii(), blocks }
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The 0-based line holding `offset` (the last line for an offset past the end).
    pub fn line_of(&self, offset: u32) -> u32 {
        let Some(&from) = self.blocks.get((offset >> BLOCK_BITS) as usize) else {
            return self.line_starts.len() as u32 - 1;
        };
        let mut line = from as usize;
        while self.line_starts.get(line + 1).is_some_and(|&next| next <= offset) {
            line += 1;
        }
        line as u32
    }

    pub fn line_start(&self, line: u32) -> u32 {
        self.line_starts.get(line as usize).copied().unwrap_or(*self.line_starts.last().unwrap_or(&0))
    }

    /// Line and code-point column of a byte offset. Offsets inside a multi-byte character
    /// round down to it; offsets past the end clamp to the end.
    pub fn line_col(&self, text: &str, offset: u32) -> LineCol {
        let offset = (offset as usize).min(text.len()) as u32;
        self.line_col_on(text, offset, self.line_of(offset))
    }

    /// `line_col` of an offset (clamped to the text) on a line already found.
    fn line_col_on(&self, text: &str, offset: u32, line: u32) -> LineCol {
        let start = self.line_start(line) as usize;
        if self.ascii {
            return LineCol { line, col: offset - start as u32 };
        }
        let mut end = offset as usize;
        while end > start && !text.is_char_boundary(end) {
            end -= 1;
        }
        let col = text[start..end].chars().count() as u32;
        LineCol { line, col }
    }

    /// `line_col` of a span's start and end: an ASCII span on one line is located with one
    /// search of the line starts.
    pub fn span_line_cols(&self, text: &str, start: u32, end: u32) -> (LineCol, LineCol) {
        let first = self.line_col(text, start);
        let end_clamped = (end as usize).min(text.len()) as u32;
        let next_line = self.line_starts.get(first.line as usize + 1).copied().unwrap_or(u32::MAX);
        if self.ascii && end_clamped >= start && end_clamped < next_line {
            return (first, LineCol { line: first.line, col: first.col + (end_clamped - start) });
        }
        (first, self.line_col(text, end))
    }

    /// The bytes of 0-based line `line`, its break (`\n`, `\r\n`, `\r`) left out; `None` past
    /// the last line.
    pub fn line_span(&self, text: &str, line: u32) -> Option<(u32, u32)> {
        let start = *self.line_starts.get(line as usize)?;
        let mut end = self.line_starts.get(line as usize + 1).map_or(text.len(), |&s| s as usize);
        let bytes = text.as_bytes();
        if end > start as usize && bytes.get(end - 1) == Some(&b'\n') {
            end -= 1;
        }
        if end > start as usize && bytes.get(end - 1) == Some(&b'\r') {
            end -= 1;
        }
        Some((start, end as u32))
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn blocks_find_the_line_a_search_finds() {
        // Lines longer and shorter than a block, every line break, empty lines, a text
        // ending without a break and with one.
        let long = "x".repeat(150);
        for text in [format!("a = 1\n\nbb = 2\r\nc\rd = é + 1\n{long}\n\n\nz"), format!("{long}\r\n{long}\n"), String::new()] {
            let idx = LineIndex::new(&text);
            for offset in 0..=text.len() as u32 + 70 {
                let searched = match idx.line_starts.binary_search(&offset) {
                    Ok(line) => line as u32,
                    Err(next) => next as u32 - 1,
                };
                assert_eq!(idx.line_of(offset), searched, "offset {offset} of {text:?}");
            }
        }
    }

    fn columns_count_code_points() {
        let text = "a = 1\nb = 'é𝄞' + x\n";
        let idx = LineIndex::new(text);
        let x = text.find('x').unwrap() as u32;
        assert_eq!(idx.line_col(text, x), LineCol { line: 1, col: 11 });
        assert_eq!(idx.line_span(text, 1), Some((6, text.len() as u32 - 1)));
        assert_eq!(idx.line_span(text, 3), None);
    }

    /// Line and column as counted before the ASCII fast path: code points from the line's start.
    fn counted(text: &str, offset: u32) -> LineCol {
        let offset = (offset as usize).min(text.len());
        let mut end = offset;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let (mut line, mut start) = (0, 0);
        let bytes = text.as_bytes();
        for i in 0..offset {
            if bytes[i] == b'\n' || bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n') {
                line += 1;
                start = i + 1;
            }
        }
        LineCol { line, col: text[start..end.max(start)].chars().count() as u32 }
    }

    fn every_offset_and_span_is_located_as_counted() {
        for text in ["a = 1\r\nbb = f(x)\rc\n\n  d", "x = 'é𝄞'\r\ny\rz = 1\n", "", "\n\r\r\n"] {
            let idx = LineIndex::new(text);
            let past = text.len() as u32 + 2;
            for start in 0..past {
                if text.is_char_boundary((start as usize).min(text.len())) {
                    assert_eq!(idx.line_col(text, start), counted(text, start), "{text:?} at {start}");
                }
                for end in 0..past {
                    let both = (idx.line_col(text, start), idx.line_col(text, end));
                    assert_eq!(idx.span_line_cols(text, start, end), both, "{text:?} {start}..{end}");
                }
            }
        }
    }

    fn lines_break_at_lf_crlf_and_lone_cr_only() {
        let text = "a\rb\r\nc\u{2028}d\u{85}e\u{c}f\ng";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_count(), 4);
        let f = text.find('f').unwrap() as u32;
        assert_eq!(idx.line_col(text, f), LineCol { line: 2, col: 6 });
        assert_eq!(idx.line_col(text, text.find('b').unwrap() as u32), LineCol { line: 1, col: 0 });
        // A line's span leaves out its break, `\r\n` or a lone `\r`.
        assert_eq!(idx.line_span(text, 1), Some((2, text.find("\r\n").unwrap() as u32)));
        assert_eq!(idx.line_span(text, 0), Some((0, 1)));
    }

    crate::unit_tests::list![
        blocks_find_the_line_a_search_finds,
        columns_count_code_points,
        every_offset_and_span_is_located_as_counted,
        lines_break_at_lf_crlf_and_lone_cr_only
    ];
}
