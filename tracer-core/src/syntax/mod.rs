//! Python source to tracelens' AST: tree-sitter parses, `lower` converts, `LineIndex` maps
//! byte offsets to lines and columns.

pub mod ast;
mod line_index;
mod lower;

pub use line_index::{ColumnUnit, LineCol, LineIndex};

/// Parses Python source. Never fails: syntax errors are returned inside the module.
pub fn parse(source: &str) -> ast::Module {
    lower::parse_module(source)
}
