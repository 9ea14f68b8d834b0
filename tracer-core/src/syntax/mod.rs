//! Python source to tracelens' AST: tree-sitter parses, `lower` converts, `LineIndex` maps
//! byte offsets to lines and columns, `SyntaxTree` shows the text as written with typed
//! node kinds (only this module knows tree-sitter). `IncrementalParser` re-parses an edited text from the
//! last parse, as an editor needs on every keystroke.

pub mod ast;
mod cst;
mod line_index;
mod lower;
mod shift;

pub use cst::{Field, NodeKind, SyntaxNode, SyntaxTree};
pub use line_index::{LineCol, LineIndex};

#[cfg(feature = "unit-tests")]
pub(crate) use self::{cst::tests as cst_tests, line_index::tests as line_index_tests, lower::tests as lower_tests};

/// The single edit that turns one text into another: the bytes `start..old_end` of the old
/// text became `start..new_end` of the new one; their common prefix and suffix are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub start: u32,
    pub old_end: u32,
    pub new_end: u32,
}

/// The edit from `old` to `new`, found as their longest common prefix and suffix.
pub fn text_edit(old: &str, new: &str) -> TextEdit {
    let (old, new) = (old.as_bytes(), new.as_bytes());
    let prefix = common_prefix(old, new);
    let room = old.len().min(new.len()) - prefix;
    let suffix = common_suffix(&old[old.len() - room..], &new[new.len() - room..]);
    TextEdit { start: prefix as u32, old_end: (old.len() - suffix) as u32, new_end: (new.len() - suffix) as u32 }
}

/// Texts are compared a block at a time (a `memcmp`) until the block that differs: an
/// editor compares two versions of a whole file on every keystroke.
const COMPARED_BLOCK: usize = 128;

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + COMPARED_BLOCK <= n && a[i..i + COMPARED_BLOCK] == b[i..i + COMPARED_BLOCK] {
        i += COMPARED_BLOCK;
    }
    i + a[i..n].iter().zip(&b[i..n]).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = 0;
    while i + COMPARED_BLOCK <= n && a[n - i - COMPARED_BLOCK..n - i] == b[n - i - COMPARED_BLOCK..n - i] {
        i += COMPARED_BLOCK;
    }
    i + a[..n - i].iter().rev().zip(b[..n - i].iter().rev()).take_while(|(x, y)| x == y).count()
}

/// Parses Python source. Never fails: syntax errors are returned inside the module.
pub fn parse(source: &str) -> ast::Module {
    lower::parse_module(source)
}

/// Punctuation marks and line breaks of `text`: about its tokens, counted without parsing.
/// A file with more than `Budgets::max_source_marks` is not parsed at all (its tree and AST
/// would take seconds and most of the memory budget).
pub fn punctuation_marks(text: &str) -> u64 {
    text.bytes().filter(|b| b.is_ascii_punctuation() || *b == b'\n').count() as u64
}

/// `punctuation_marks(text)` when it is over `limit`, else `None`. A text of at most `limit`
/// bytes cannot be over it and is not counted: an editor asks on every keystroke.
pub fn punctuation_marks_over(text: &str, limit: u64) -> Option<u64> {
    if text.len() as u64 <= limit {
        return None;
    }
    Some(punctuation_marks(text)).filter(|&marks| marks > limit)
}

/// Parses successive versions of one file. Each parse gives the module `parse` would give;
/// it costs less when the text changed little since the last one: tree-sitter re-parses
/// only around the change, and top-level statements whose text is unchanged are not
/// lowered again (only moved).
pub struct IncrementalParser {
    state: Option<lower::ParseState>,
}

impl Default for IncrementalParser {
    fn default() -> Self {
        IncrementalParser { state: lower::ParseState::new() }
    }
}

impl IncrementalParser {
    pub fn parse(&mut self, source: &str) -> ast::Module {
        match self.state.as_mut() {
            Some(state) => lower::parse_module_with(source, Some(state)),
            None => lower::parse_module(source),
        }
    }

    /// Takes back the module the last `parse` returned, once nothing else holds it: the
    /// next keystroke's parse re-parses only the statement it edits from it. Without it the
    /// next parse reads the whole text again (tree-sitter still reuses its tree).
    pub fn give_back(&mut self, module: ast::Module) {
        if let Some(state) = self.state.as_mut() {
            lower::give_back(state, module);
        }
    }

    /// The edit from the text parsed before the last parse to the last one; `None` when
    /// the last parse had no earlier text to start from.
    pub fn last_edit(&self) -> Option<TextEdit> {
        self.state.as_ref().and_then(|s| s.last_edit)
    }

    /// Whether the last parse re-parsed only the top-level statement its edit was in (the
    /// usual keystroke), rather than the whole text.
    pub fn reparsed_one_statement(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.one_statement)
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn marks_are_counted_only_when_they_can_be_over_the_limit() {
        let text = "x = (1, 2)\n";
        // `=`, `(`, `,`, `)` and the line break.
        assert_eq!(punctuation_marks(text), 5);
        assert_eq!(punctuation_marks_over(text, 4), Some(5));
        assert_eq!(punctuation_marks_over(text, 5), None);
        // Shorter than the limit: cannot be over it.
        assert_eq!(punctuation_marks_over(text, 100), None);
        // Longer than the limit but with fewer marks.
        assert_eq!(punctuation_marks_over("abcdefgh\n", 2), None);
    }

    crate::unit_tests::list![marks_are_counted_only_when_they_can_be_over_the_limit];
}
