//! The one place where engine data (byte offsets, lines, findings) and LSP types meet.

use std::path::{Path, PathBuf};

use tower_lsp_server::ls_types::{self as lsp, Position, Range, Uri};
use tracer_core::analysis::Location;
use tracer_core::diagnostics::Severity;
use tracer_core::syntax::{ColumnUnit, LineIndex};

/// The position encoding agreed with the client at `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PositionEncoding {
    Utf8,
    #[default]
    Utf16,
}

impl PositionEncoding {
    pub fn unit(self) -> ColumnUnit {
        match self {
            PositionEncoding::Utf8 => ColumnUnit::Utf8,
            PositionEncoding::Utf16 => ColumnUnit::Utf16,
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

    pub fn position(&self, offset: u32, enc: PositionEncoding) -> Position {
        let lc = self.index.line_col(self.text, offset);
        Position { line: lc.line, character: self.index.column_in(self.text, offset, enc.unit()) }
    }

    pub fn range(&self, start: u32, end: u32, enc: PositionEncoding) -> Range {
        Range { start: self.position(start, enc), end: self.position(end, enc) }
    }

    pub fn location_range(&self, loc: &Location, enc: PositionEncoding) -> Range {
        self.range(loc.span.start, loc.span.end, enc)
    }

    /// The byte offset of an LSP position (clamped into the text).
    pub fn offset(&self, pos: Position, enc: PositionEncoding) -> u32 {
        self.index.offset(self.text, pos.line, pos.character, enc.unit())
    }
}

pub fn severity(s: Severity) -> lsp::DiagnosticSeverity {
    match s {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
    }
}
