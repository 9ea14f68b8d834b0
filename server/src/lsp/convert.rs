//! The one place where engine data (byte offsets, lines, findings) and LSP types meet, and
//! the one place LSP positions are converted: a column counts UTF-16 code units (the LSP
//! default) or bytes (UTF-8, when the client offers it), never including the line's break
//! (`\n`, `\r\n` or a lone `\r`). The open documents' ropes (`documents.rs`) and the
//! analysed texts (`LineText`) both count through `chars_before` and `column_of`.

use std::path::{Path, PathBuf};

use tower_lsp_server::ls_types::{self as lsp, Position, Range, Uri};
use tracer_core::analysis::Location;
use tracer_core::diagnostics::Severity;
use tracer_core::syntax::LineIndex;

/// The position encoding agreed with the client at `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PositionEncoding {
    Utf8,
    #[default]
    Utf16,
}

impl PositionEncoding {
    /// How many units of this encoding `ch` takes (a surrogate pair is two UTF-16 units).
    pub fn width(self, ch: char) -> u32 {
        match self {
            PositionEncoding::Utf8 => ch.len_utf8() as u32,
            PositionEncoding::Utf16 => ch.len_utf16() as u32,
        }
    }

    pub fn to_lsp(self) -> lsp::PositionEncodingKind {
        match self {
            PositionEncoding::Utf8 => lsp::PositionEncodingKind::UTF8,
            PositionEncoding::Utf16 => lsp::PositionEncodingKind::UTF16,
        }
    }
}

/// UTF-8 when the client offers it (cheapest for us), else UTF-16 (the LSP default).
pub fn negotiate(params: &lsp::InitializeParams) -> PositionEncoding {
    let offered = params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(kinds) if kinds.contains(&lsp::PositionEncodingKind::UTF8) => PositionEncoding::Utf8,
        _ => PositionEncoding::Utf16,
    }
}

pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
}

pub fn uri_of(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

/// A text with its line index, for converting offsets.
pub struct LineText<'a> {
    pub text: &'a str,
    pub index: LineIndex,
}

impl<'a> LineText<'a> {
    pub fn new(text: &'a str) -> LineText<'a> {
        LineText { text, index: LineIndex::new(text) }
    }

    /// The LSP position of a byte offset: offsets inside a character round down to it, past
    /// the end clamp to the end.
    pub fn position(&self, offset: u32, enc: PositionEncoding) -> Position {
        let mut offset = (offset as usize).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.index.line_of(offset as u32);
        let start = self.index.line_start(line) as usize;
        Position { line, character: column_of(self.text.get(start..offset).unwrap_or(""), enc) }
    }

    pub fn range(&self, start: u32, end: u32, enc: PositionEncoding) -> Range {
        Range { start: self.position(start, enc), end: self.position(end, enc) }
    }

    pub fn location_range(&self, loc: &Location, enc: PositionEncoding) -> Range {
        self.range(loc.span.start, loc.span.end, enc)
    }

    /// The byte offset of an LSP position: a column past its line's end clamps to the end
    /// (before its break), a line past the text's end to the text's end.
    pub fn offset(&self, pos: Position, enc: PositionEncoding) -> u32 {
        let Some((start, end)) = self.index.line_span(self.text, pos.line) else { return self.text.len() as u32 };
        let line = self.text.get(start as usize..end as usize).unwrap_or("");
        let before = chars_before(line.chars(), pos.character, enc);
        start + line.chars().take(before).map(char::len_utf8).sum::<usize>() as u32
    }

    /// The byte offset where 0-based line `line` starts (the last line's start past the end).
    pub fn line_start(&self, line: u32) -> u32 {
        self.index.line_start(line)
    }
}

/// How many characters of a line (its break left out) come before column `col` counted in
/// `enc` units; a column inside a character (half a surrogate pair) goes after it, one past
/// the line's end clamps to it.
pub fn chars_before(line: impl Iterator<Item = char>, col: u32, enc: PositionEncoding) -> usize {
    let mut units = 0u32;
    let mut chars = 0;
    for ch in line {
        if units >= col {
            return chars;
        }
        units += enc.width(ch);
        chars += 1;
    }
    chars
}

/// The column, in `enc` units, after the text `before` it on its line.
pub fn column_of(before: &str, enc: PositionEncoding) -> u32 {
    before.chars().map(|c| enc.width(c)).sum()
}

pub fn severity(s: Severity) -> lsp::DiagnosticSeverity {
    match s {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn utf16_columns_count_surrogate_pairs_and_utf8_columns_count_bytes() {
        // é is one UTF-16 unit and two bytes; 🙂 two UTF-16 units (a surrogate pair) and four bytes.
        let text = "a = 1\nb = 'é🙂' + x\n";
        let lines = LineText::new(text);
        let x = text.find('x').unwrap_or(0) as u32;
        assert_eq!(lines.position(x, PositionEncoding::Utf16), pos(1, 12));
        assert_eq!(lines.position(x, PositionEncoding::Utf8), pos(1, 15));
        assert_eq!(lines.offset(pos(1, 12), PositionEncoding::Utf16), x);
        assert_eq!(lines.offset(pos(1, 15), PositionEncoding::Utf8), x);
        // Half a surrogate pair goes after the character; inside a character's bytes, before.
        let smile = text.find('🙂').unwrap_or(0) as u32;
        assert_eq!(lines.offset(pos(1, 7), PositionEncoding::Utf16), smile + 4);
        assert_eq!(lines.position(smile + 2, PositionEncoding::Utf16), pos(1, 6));
        // Round trip at every character boundary, in both encodings.
        for (offset, _) in text.char_indices() {
            for enc in [PositionEncoding::Utf16, PositionEncoding::Utf8] {
                let p = lines.position(offset as u32, enc);
                if text[offset..].starts_with('\n') {
                    continue;
                }
                assert_eq!(lines.offset(p, enc), offset as u32, "{enc:?} at {offset}");
            }
        }
    }

    #[test]
    fn line_breaks_are_no_column_and_positions_past_the_end_clamp() {
        let text = "é\r\n🙂x\ry\n";
        let lines = LineText::new(text);
        let crlf = text.find("\r\n").unwrap_or(0) as u32;
        // The end of a `\r\n` line is before its `\r`, whatever the column asked.
        assert_eq!(lines.offset(pos(0, 1), PositionEncoding::Utf16), crlf);
        assert_eq!(lines.offset(pos(0, 99), PositionEncoding::Utf16), crlf);
        assert_eq!(lines.position(crlf, PositionEncoding::Utf16), pos(0, 1));
        // A lone `\r` ends a line as LSP says.
        let x = text.find('x').unwrap_or(0) as u32;
        assert_eq!(lines.position(x, PositionEncoding::Utf16), pos(1, 2));
        assert_eq!(lines.offset(pos(1, 99), PositionEncoding::Utf16), x + 1);
        assert_eq!(lines.position(x + 2, PositionEncoding::Utf16), pos(2, 0));
        assert_eq!(lines.offset(pos(9, 0), PositionEncoding::Utf16), text.len() as u32);
        assert_eq!(lines.position(999, PositionEncoding::Utf16), pos(3, 0));
    }

    #[test]
    fn chars_before_is_the_same_count_for_a_rope_and_a_str() {
        let line = "s = '𝄞é' + x";
        let rope = ropey::Rope::from_str(line);
        for col in 0..16 {
            for enc in [PositionEncoding::Utf16, PositionEncoding::Utf8] {
                assert_eq!(chars_before(rope.line(0).chars(), col, enc), chars_before(line.chars(), col, enc));
            }
        }
        assert_eq!(chars_before(line.chars(), 12, PositionEncoding::Utf16), 11);
        assert_eq!(chars_before(line.chars(), 99, PositionEncoding::Utf8), line.chars().count());
    }
}
