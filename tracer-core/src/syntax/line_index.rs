//! Byte offset <-> (line, column) conversion. Lines and columns are 0-based here;
//! columns count Unicode code points (the CLI contract), with UTF-16 and UTF-8 helpers for LSP.

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
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        // Lines end as in Python and LSP: at `\n`, `\r\n` or a lone `\r` (never at U+2028,
        // NEL or form feed).
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' || b == b'\r' && bytes.get(i + 1) != Some(&b'\n') {
                line_starts.push(i as u32 + 1);
            }
        }
        LineIndex { line_starts }
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The 0-based line holding `offset`.
    pub fn line_of(&self, offset: u32) -> u32 {
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line as u32,
            Err(next) => next as u32 - 1,
        }
    }

    pub fn line_start(&self, line: u32) -> u32 {
        self.line_starts.get(line as usize).copied().unwrap_or(*self.line_starts.last().unwrap_or(&0))
    }

    /// Line and code-point column of a byte offset. Offsets inside a multi-byte character
    /// round down to it; offsets past the end clamp to the end.
    pub fn line_col(&self, text: &str, offset: u32) -> LineCol {
        let offset = (offset as usize).min(text.len()) as u32;
        let line = self.line_of(offset);
        let start = self.line_start(line) as usize;
        let mut end = offset as usize;
        while end > start && !text.is_char_boundary(end) {
            end -= 1;
        }
        let col = text[start..end].chars().count() as u32;
        LineCol { line, col }
    }

    /// Byte offset of a 0-based line and a column counted in `unit`s; clamps to the line end.
    pub fn offset(&self, text: &str, line: u32, col: u32, unit: ColumnUnit) -> u32 {
        if line as usize >= self.line_starts.len() {
            return text.len() as u32;
        }
        let start = self.line_start(line) as usize;
        let line_end = self.line_starts.get(line as usize + 1).map(|&s| s as usize - 1).unwrap_or(text.len());
        let line_text = &text[start..line_end.max(start)];
        let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
        let mut counted = 0u32;
        for (byte, ch) in line_text.char_indices() {
            if counted >= col {
                return (start + byte) as u32;
            }
            counted += match unit {
                ColumnUnit::CodePoint => 1,
                ColumnUnit::Utf16 => ch.len_utf16() as u32,
                ColumnUnit::Utf8 => ch.len_utf8() as u32,
            };
        }
        (start + line_text.len()) as u32
    }

    /// The column of `offset` on its line, counted in `unit`s.
    pub fn column_in(&self, text: &str, offset: u32, unit: ColumnUnit) -> u32 {
        let lc = self.line_col(text, offset);
        let start = self.line_start(lc.line) as usize;
        let prefix: &str = &text[start..start + self.byte_col(text, offset)];
        match unit {
            ColumnUnit::CodePoint => lc.col,
            ColumnUnit::Utf16 => prefix.encode_utf16().count() as u32,
            ColumnUnit::Utf8 => prefix.len() as u32,
        }
    }

    fn byte_col(&self, text: &str, offset: u32) -> usize {
        let mut offset = (offset as usize).min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset - self.line_start(self.line_of(offset as u32)) as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnUnit {
    CodePoint,
    Utf16,
    Utf8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_code_points_and_utf16_units() {
        let text = "a = 1\nb = 'é𝄞' + x\n";
        let idx = LineIndex::new(text);
        let x = text.find('x').unwrap() as u32;
        assert_eq!(idx.line_col(text, x), LineCol { line: 1, col: 11 });
        assert_eq!(idx.column_in(text, x, ColumnUnit::Utf16), 12);
        assert_eq!(idx.column_in(text, x, ColumnUnit::Utf8), 15);
        assert_eq!(idx.offset(text, 1, 12, ColumnUnit::Utf16), x);
        assert_eq!(idx.offset(text, 1, 999, ColumnUnit::CodePoint), text.len() as u32 - 1);
        assert_eq!(idx.offset(text, 99, 0, ColumnUnit::CodePoint), text.len() as u32);
    }

    #[test]
    fn lines_break_at_lf_crlf_and_lone_cr_only() {
        let text = "a\rb\r\nc\u{2028}d\u{85}e\u{c}f\ng";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_count(), 4);
        let f = text.find('f').unwrap() as u32;
        assert_eq!(idx.line_col(text, f), LineCol { line: 2, col: 6 });
        assert_eq!(idx.line_col(text, text.find('b').unwrap() as u32), LineCol { line: 1, col: 0 });
        // The end of a `\r\n` line is before its `\r`.
        assert_eq!(idx.offset(text, 1, 99, ColumnUnit::Utf16), text.find("\r\n").unwrap() as u32);
    }
}
