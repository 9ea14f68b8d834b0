//! Python source to tracelens' AST: tree-sitter parses, `lower` converts, `LineIndex` maps
//! byte offsets to lines and columns. `IncrementalParser` re-parses an edited text from the
//! last parse, as an editor needs on every keystroke.

pub mod ast;
mod line_index;
mod lower;
mod shift;

pub use line_index::{ColumnUnit, LineCol, LineIndex};

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
}
