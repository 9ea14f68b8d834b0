//! Python source to tracelens' AST: tree-sitter parses, `lower` converts, `LineIndex` maps
//! byte offsets to lines and columns. `IncrementalParser` re-parses an edited text from the
//! last parse, as an editor needs on every keystroke.

pub mod ast;
mod line_index;
mod lower;
mod shift;

pub use line_index::{ColumnUnit, LineCol, LineIndex};

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
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let room = old.len().min(new.len()) - prefix;
    let suffix = old.iter().rev().zip(new.iter().rev()).take(room).take_while(|(a, b)| a == b).count();
    TextEdit { start: prefix as u32, old_end: (old.len() - suffix) as u32, new_end: (new.len() - suffix) as u32 }
}

/// Parses Python source. Never fails: syntax errors are returned inside the module.
pub fn parse(source: &str) -> ast::Module {
    lower::parse_module(source)
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

    /// The edit from the text parsed before the last parse to the last one; `None` when
    /// the last parse had no earlier text to start from.
    pub fn last_edit(&self) -> Option<TextEdit> {
        self.state.as_ref().and_then(|s| s.last_edit)
    }
}
