//! tree-sitter-python CST to `ast`: the only code that knows tree-sitter's node kinds.
//!
//! Invariants:
//! - Never fails, never panics, returns promptly on any input (binary, huge, deeply nested).
//! - Every tree-sitter ERROR or MISSING node becomes a `SyntaxError`, and so do the errors
//!   Python reports that tree-sitter accepts (bad indentation, an empty block, `print x`,
//!   `return` outside a function, bad numeric literals, ...).
//! - `Module.body` keeps only the top-level statements that end before the first error.
//!   Lowering stops at the first top-level statement that holds an error, so a
//!   placeholder made for a malformed node never reaches the body.
//! - Recursion depth is bounded by `MAX_NESTING` and the AST's depth by `MAX_AST_DEPTH`;
//!   deeper input is a "too deeply nested" SyntaxError, never a stack overflow.
//! - Spans are byte offsets into the source and match CPython's: a parenthesized
//!   expression spans what is inside the parentheses, a compound statement ends with its
//!   last token of code (tree-sitter's would take in a trailing comment).
//!
//! tree-sitter-python gets some Python wrong; the lowering puts it right: `&` binds tighter
//! than `^` (binary operations are re-associated by Python's precedence), `*` covers a
//! whole postfix chain (`*a.b()`), `type(x).y = 1` is an assignment, `(a) = 1` has no
//! tuple, `print >> f, x` is Python 3, and a raw string's `\"` stays in its body.
//! Checked against CPython's `ast`, spans included, on the standard library.
//!
//! Python that `ast` cannot represent, or that is not modelled:
//! - `type X = ...` statements are skipped without an error: they are valid Python that
//!   tracelens does not model, and the statements around them still run. `match`
//!   statements lower to branches on unknown conditions (`lower/match_statement.rs`).
//! - `async for`, `async with`, async comprehensions and `except*` lower as their
//!   synchronous or plain forms; PEP 695 type parameters (`def f[T]`) are dropped;
//!   t-strings (PEP 750) lower as f-strings.
//! - `"\N{NAME}"` escapes stay as written (no Unicode name table), and identifiers are not
//!   NFKC-normalised (`ｘ` and `x` are different names).
//!
//! Size: the statement lowering with the invariants above, which must hold for every statement
//! kind; expressions, literals and `match` are in `lower/`.

mod expressions;
mod literals;
mod match_statement;
#[cfg(feature = "unit-tests")]
pub(crate) mod tests;

/// Keyed by a statement's whole text: foldhash reads it several times faster than SipHash.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
use std::num::NonZeroU16;
use std::rc::Rc;
use std::sync::OnceLock;

use tree_sitter::Node;

use super::ast::{self, Expr, ExprKind, Span, Stmt, StmtKind, SyntaxError};

/// How deep statements and expressions may nest before it is reported instead of
/// lowered; bounds this module's recursion. CPython stops at 200 nested parentheses.
const MAX_NESTING: u32 = 200;

/// How deep the AST may get. Larger than `MAX_NESTING` because binary-operator chains
/// (long polynomials) are lowered without recursion; bounds the recursion of every
/// consumer walking the AST, `Drop` included.
const MAX_AST_DEPTH: u32 = 1000;

/// CPython's tokenizer limit on indentation levels ("too many levels of indentation").
const MAX_INDENT: u32 = 100;

/// At most this many errors are reported; a binary file would otherwise produce thousands.
const MAX_ERRORS: usize = 100;

pub(crate) fn parse_module(source: &str) -> ast::Module {
    parse_module_with(source, None)
}

/// What an incremental parse keeps from one parse to the next: the tree-sitter parser, the
/// text and tree it parsed last, and the clean top-level statements it lowered, by their
/// text. The lowering of a top-level statement depends only on its text, so a statement
/// whose text is unchanged is reused, its spans moved by how far it moved.
pub(crate) struct ParseState {
    parser: tree_sitter::Parser,
    previous: Option<(String, tree_sitter::Tree)>,
    statements: HashMap<Box<str>, LoweredStatement>,
    /// The edit from the previous text to the last one parsed.
    pub(super) last_edit: Option<super::TextEdit>,
    /// The last text parsed, when it parsed without an error: what an edit inside one
    /// top-level statement needs to re-parse that statement alone.
    clean: Option<CleanModule>,
    /// The last parse re-parsed only the statement the edit was in.
    pub(super) one_statement: bool,
}

/// A module that parsed without an error, as `ParseState` keeps it.
struct CleanModule {
    /// Each top-level statement's byte range; every one starts its line.
    tops: Vec<(u32, u32)>,
    /// The statements, once the analysis they were lent to gives them back (`give_back`):
    /// the parse hands its module out rather than a copy, which cost a walk of every
    /// statement per keystroke. Until then only a whole-text parse can follow.
    body: Option<Vec<Stmt>>,
    /// Where the lent module's statements live, and how many there are: only that module
    /// is taken back.
    lent: (usize, usize),
}

impl CleanModule {
    fn lending(tops: Vec<(u32, u32)>, body: &[Stmt]) -> CleanModule {
        CleanModule { tops, body: None, lent: (body.as_ptr() as usize, body.len()) }
    }
}

/// Takes back the module the last parse returned (see `CleanModule::body`); any other module
/// is dropped.
pub(crate) fn give_back(state: &mut ParseState, module: ast::Module) {
    if let Some(clean) = state.clean.as_mut() {
        if clean.body.is_none() && module.errors.is_empty() && (module.body.as_ptr() as usize, module.body.len()) == clean.lent {
            clean.body = Some(module.body);
        }
    }
}

/// One clean top-level statement as lowered at `start`.
struct LoweredStatement {
    /// tree-sitter's kind of the node: the same text can parse as another kind in another
    /// context (`print(x)` is a `print_statement` when `y = 1` follows on its line).
    kind: u16,
    start: u32,
    stmt: Option<Stmt>,
    /// The indentation the lowering saw last inside it, as a byte range of the source.
    last_line_indent: (u32, u32),
}

impl ParseState {
    pub(crate) fn new() -> Option<ParseState> {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&tree_sitter_python::LANGUAGE.into()).ok()?;
        Some(ParseState { parser, previous: None, statements: HashMap::default(), last_edit: None, clean: None, one_statement: false })
    }
}

/// tree-sitter's form of the edit from `old` to `new`.
fn input_edit(old: &str, new: &str, edit: super::TextEdit) -> tree_sitter::InputEdit {
    let (old, new) = (old.as_bytes(), new.as_bytes());
    let (start, old_end, new_end) = (edit.start as usize, edit.old_end as usize, edit.new_end as usize);
    // Both texts are the same before `start`: its row is counted once.
    let start_position = point_after(old, (0, 0), start);
    tree_sitter::InputEdit {
        start_byte: start,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position,
        old_end_position: point_after(old, (start, start_position.row), old_end),
        new_end_position: point_after(new, (start, start_position.row), new_end),
    }
}

/// tree-sitter's row and column of byte `at` of `text`, counting rows from `from`, a byte
/// before it whose row is known.
fn point_after(text: &[u8], (from, row): (usize, usize), at: usize) -> tree_sitter::Point {
    tree_sitter::Point {
        row: row + memchr::memchr_iter(b'\n', &text[from..at]).count(),
        column: at - memchr::memrchr(b'\n', &text[..at]).map_or(0, |newline| newline + 1),
    }
}

/// Parses `source`; with a `state`, re-parses incrementally from the last parse and reuses
/// the lowering of unchanged top-level statements. The result is the same either way.
pub(crate) fn parse_module_with(source: &str, mut state: Option<&mut ParseState>) -> ast::Module {
    if u32::try_from(source.len()).is_err() {
        return error_module(Span::new(0, 0), "file too large to parse (more than 4 GiB)");
    }
    // A NUL byte makes CPython reject the whole file; tree-sitter's error recovery on
    // binary data is also slow. Parse only the lines before it.
    let (parsed, null_byte_error) = match source.find('\0') {
        Some(position) => {
            let line_start = source[..position].rfind('\n').map_or(0, |newline| newline + 1);
            let error =
                SyntaxError { span: Span::new(position, position + 1), message: "source code cannot contain null bytes".to_string() };
            (&source[..line_start], Some(error))
        }
        None => (source, None),
    };
    // The edit from the last text, found once for both ways of re-parsing.
    let mut edit = None;
    if let Some(state) = state.as_deref_mut() {
        edit = state.previous.as_ref().map(|(old, _)| super::text_edit(old, parsed));
        state.one_statement = false;
        if let (Some(edit), None) = (edit, &null_byte_error) {
            if let Some(module) = reparse_one_statement(state, parsed, edit) {
                state.one_statement = true;
                return module;
            }
        }
    }
    // The clean module is kept for the next version's parse only when there is one.
    let incremental = state.is_some();
    let mut own_state;
    let state = match state {
        Some(state) => state,
        None => {
            own_state = ParseState::new();
            match own_state.as_mut() {
                Some(state) => state,
                None => return error_module(Span::new(0, 0), "internal error: tree-sitter-python does not match the tree-sitter runtime"),
            }
        }
    };
    state.last_edit = None;
    let old_tree = state.previous.take().map(|(old, mut tree)| {
        let edit = edit.unwrap_or_else(|| super::text_edit(&old, parsed));
        tree.edit(&input_edit(&old, parsed, edit));
        state.last_edit = Some(edit);
        tree
    });
    let mut tree = state.parser.parse(parsed, old_tree.as_ref());
    // tree-sitter recovers from a syntax error differently when it reuses old subtrees than
    // when it parses afresh; the errors reported must be a fresh parse's, so a text with an
    // error is parsed again from scratch (the lowering of clean statements is still reused).
    if old_tree.is_some() && tree.as_ref().is_some_and(|t| t.root_node().has_error()) {
        tree = state.parser.parse(parsed, None);
    }
    let Some(tree) = tree else {
        state.statements.clear();
        return error_module(Span::new(0, 0), "internal error: tree-sitter returned no tree");
    };
    drop(old_tree);
    let root = tree.root_node();
    let mut lowerer = Lowerer::new(parsed);
    lowerer.keep_for_reuse = incremental;
    lowerer.reuse = std::mem::take(&mut state.statements);
    let tree_errors = collect_tree_errors(root, parsed);
    let first_tree_error = tree_errors.iter().map(|error| error.span.start).min().unwrap_or(u32::MAX);
    let first_tree_error = match &null_byte_error {
        Some(error) => first_tree_error.min(error.span.start),
        None => first_tree_error,
    };
    let body = lowerer.lower_module(root, first_tree_error);
    state.statements = std::mem::take(&mut lowerer.lowered);
    let mut errors = tree_errors;
    errors.append(&mut lowerer.errors);
    errors.extend(null_byte_error);
    errors.sort_by_key(|error| (error.span.start, error.span.end));
    errors.truncate(MAX_ERRORS);
    state.clean = None;
    if incremental && errors.is_empty() && !root.has_error() {
        let tops: Vec<(u32, u32)> = named_children(root).iter().map(|node| (node.start_byte() as u32, node.end_byte() as u32)).collect();
        if tops.iter().all(|&(start, _)| starts_line(parsed, start)) {
            state.clean = Some(CleanModule::lending(tops, &body));
        }
    }
    if incremental {
        state.previous = Some((parsed.to_string(), tree));
    }
    ast::Module { body, errors }
}

fn starts_line(source: &str, at: u32) -> bool {
    at == 0 || source.as_bytes().get(at as usize - 1) == Some(&b'\n')
}

/// The usual keystroke edits one top-level statement of a clean module; the statements
/// around it cannot change, so only that statement's text is re-parsed (tree-sitter's
/// included ranges: its nodes keep their offsets in the whole text) and lowered. `None`
/// when this cannot be shown to give what parsing the whole text gives: the edit touches
/// the start of a statement or the line break before the next one, or the statement's new
/// text does not parse cleanly into statements that each start their line. Top level,
/// at the start of a line, the tokenizer carries nothing from one statement to the next
/// (no open bracket, no indentation), so a clean parse of the range is the whole parse's.
fn reparse_one_statement(state: &mut ParseState, source: &str, edit: super::TextEdit) -> Option<ast::Module> {
    let clean = state.clean.as_ref().filter(|clean| clean.body.is_some())?;
    let (old, _) = state.previous.as_ref()?;
    let (start, old_end) = (edit.start, edit.old_end);
    let delta = i64::from(edit.new_end) - i64::from(old_end);
    // An edit that adds or removes a line break (or a backslash that joins lines) changes the
    // statement's lines, and tree-sitter's indentation scanner, starting inside an included
    // range, can take an indented line for a continuation of the one before (`out,` then
    // ` idx, n = f(x)` parsed as one assignment where Python says "unexpected indent").
    let touched =
        |text: &str, end: u32| text.as_bytes().get(start as usize..end as usize).is_none_or(|b| b.contains(&b'\n') || b.contains(&b'\\'));
    if touched(old, old_end) || touched(source, edit.new_end) {
        return None;
    }
    // tree-sitter-python carries a line that ends in a comma and a comment (`k1,  # note`)
    // on into the next line when it parses the whole text, but not when the range ends
    // there: an edit on a line with a comma before a comment is parsed with the whole text.
    let bytes = source.as_bytes();
    let (before, after) = (bytes.get(..start as usize)?, bytes.get(edit.new_end as usize..)?);
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
    let line_end = after.iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| edit.new_end as usize + n);
    let comma_before_comment = |line: &[u8]| {
        line.iter().enumerate().any(|(i, &b)| b == b'#' && line[..i].iter().rev().find(|c| !c.is_ascii_whitespace()) == Some(&b','))
    };
    if bytes.get(line_start..line_end).is_none_or(comma_before_comment) {
        return None;
    }
    // The range of the statement holding the edit: from its start to the next one's.
    let k = clean.tops.partition_point(|&(top, _)| top < start).checked_sub(1)?;
    let range_start = clean.tops[k].0;
    let range_end = clean.tops.get(k + 1).map_or(old.len() as u32, |&(next, _)| next);
    if old_end >= range_end || (k + 1 < clean.tops.len() && old.as_bytes().get(range_end as usize - 1) != Some(&b'\n')) {
        return None;
    }
    let new_range_end = u32::try_from(i64::from(range_end) + delta).ok()?;
    let start_point = point_after(source.as_bytes(), (0, 0), range_start as usize);
    let range = tree_sitter::Range {
        start_byte: range_start as usize,
        end_byte: new_range_end as usize,
        start_point,
        end_point: point_after(source.as_bytes(), (range_start as usize, start_point.row), new_range_end as usize),
    };
    state.parser.set_included_ranges(&[range]).ok()?;
    let tree = state.parser.parse(source, None);
    // Back to whole texts for the next parse.
    state.parser.set_included_ranges(&[]).ok()?;
    let tree = tree?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let nodes = named_children(root);
    if !nodes.iter().all(|node| starts_line(source, node.start_byte() as u32) && node.end_byte() <= new_range_end as usize) {
        return None;
    }
    let mut lowerer = Lowerer::new(source);
    let mut lowered = Vec::with_capacity(nodes.len());
    for &node in &nodes {
        if !lowerer.lower_top_level(node, u32::MAX, &mut lowered) {
            return None;
        }
    }
    if !lowerer.errors.is_empty() {
        return None;
    }

    // The whole parse, with the statements around the edit as they were (those after it
    // moved by the edit's length).
    let mut clean = state.clean.take()?;
    let (old, mut old_tree) = state.previous.take()?;
    // Forget the replaced statement's lowering, unless another statement has its text.
    let (top_start, top_end) = clean.tops[k];
    let text = old.get(top_start as usize..top_end as usize).unwrap_or("");
    if state.statements.get(text).is_some_and(|previous| previous.start == top_start) {
        state.statements.remove(text);
    }
    state.statements.extend(lowerer.lowered);
    let mut body = clean.body.take()?;
    let after = body.partition_point(|stmt| stmt.span.start < range_end);
    let before = body.partition_point(|stmt| stmt.span.start < range_start);
    let mut moved = body.split_off(after);
    if delta != 0 {
        for stmt in &mut moved {
            super::shift::shift_stmt(stmt, delta);
        }
    }
    body.truncate(before);
    body.extend(lowered);
    body.append(&mut moved);
    let shift = |offset: u32| (i64::from(offset) + delta) as u32;
    let mut tops = Vec::with_capacity(clean.tops.len() + nodes.len());
    tops.extend_from_slice(&clean.tops[..k]);
    tops.extend(nodes.iter().map(|node| (node.start_byte() as u32, node.end_byte() as u32)));
    tops.extend(clean.tops[k + 1..].iter().map(|&(s, e)| (shift(s), shift(e))));
    // The whole text's tree is not re-parsed; it takes the edit, so that the next parse of
    // the whole text still reuses what did not change.
    old_tree.edit(&input_edit(&old, source, edit));
    state.previous = Some((source.to_string(), old_tree));
    state.last_edit = Some(edit);
    state.clean = Some(CleanModule::lending(tops, &body));
    Some(ast::Module { body, errors: Vec::new() })
}

fn error_module(span: Span, message: &str) -> ast::Module {
    ast::Module { body: Vec::new(), errors: vec![SyntaxError { span, message: message.to_string() }] }
}

pub(super) fn span_of(node: Node) -> Span {
    Span::new(node.start_byte(), node.end_byte())
}

/// The tree-sitter-python fields the lowering reads. tree-sitter resolves a field *name*
/// by string comparison on every lookup; the ids are resolved once.
#[derive(Clone, Copy, Debug)]
pub(super) enum Field {
    Alias,
    Alternative,
    Argument,
    Arguments,
    Attribute,
    Body,
    Cause,
    Condition,
    Consequence,
    Definition,
    Expression,
    FormatSpecifier,
    Function,
    Key,
    Left,
    ModuleName,
    Name,
    Object,
    Operator,
    Parameters,
    ReturnType,
    Right,
    Subscript,
    Superclasses,
    Type,
    TypeConversion,
    Value,
}

/// `Field`'s names, in its order.
const FIELD_NAMES: [&str; 27] = [
    "alias",
    "alternative",
    "argument",
    "arguments",
    "attribute",
    "body",
    "cause",
    "condition",
    "consequence",
    "definition",
    "expression",
    "format_specifier",
    "function",
    "key",
    "left",
    "module_name",
    "name",
    "object",
    "operator",
    "parameters",
    "return_type",
    "right",
    "subscript",
    "superclasses",
    "type",
    "type_conversion",
    "value",
];

fn field_id(field: Field) -> Option<NonZeroU16> {
    static IDS: OnceLock<[Option<NonZeroU16>; FIELD_NAMES.len()]> = OnceLock::new();
    let ids = IDS.get_or_init(|| {
        let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
        FIELD_NAMES.map(|name| language.field_id_for_name(name))
    });
    ids.get(field as usize).copied().flatten()
}

/// A node's kind as the grammar names it (`"call"`, `"("`), from a table of the language's
/// kinds made once: tree-sitter's `Node::kind` measures and checks the name's C string at every
/// call, and the lowering asks it of nearly every node (3.3M instructions of a 151M parse of
/// the benchmarks' 2,000-line module went to checking it).
pub(super) trait KindName {
    fn kind_name(&self) -> &'static str;
}

impl KindName for Node<'_> {
    fn kind_name(&self) -> &'static str {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        let names = NAMES.get_or_init(|| {
            let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
            (0..language.node_kind_count()).map(|id| language.node_kind_for_id(id as u16).unwrap_or("")).collect()
        });
        // `ERROR` and any kind past the table: tree-sitter's own answer.
        match names.get(self.kind_id() as usize) {
            Some(name) if !name.is_empty() => name,
            _ => self.kind(),
        }
    }
}

/// The child in `field`, if any.
pub(super) fn field<'tree>(node: Node<'tree>, field: Field) -> Option<Node<'tree>> {
    field_id(field).and_then(|id| node.child_by_field_id(id.get()))
}

/// A statement's span without the comments tree-sitter leaves at the end of its last
/// block (`if x:\n    y  # note`): CPython's ends with the last token of code.
fn statement_span(node: Node) -> Span {
    let ends_with_block = |node: Node| {
        matches!(
            node.kind_name(),
            "if_statement"
                | "for_statement"
                | "while_statement"
                | "try_statement"
                | "with_statement"
                | "function_definition"
                | "class_definition"
                | "decorated_definition"
                | "except_clause"
                | "elif_clause"
                | "else_clause"
                | "finally_clause"
                | "block"
        )
    };
    // Follow the last child down through blocks and clauses only: the comments sit at the
    // end of a block.
    let mut current = node;
    let mut end = node.end_byte();
    while ends_with_block(current) {
        let mut cursor = current.walk();
        if !cursor.goto_last_child() {
            break;
        }
        while !is_syntax(&cursor.node()) {
            if !cursor.goto_previous_sibling() {
                return Span::new(node.start_byte(), end);
            }
        }
        current = cursor.node();
        end = current.end_byte();
    }
    Span::new(node.start_byte(), end)
}

/// The node's children that are part of the syntax: comments and line continuations, which
/// tree-sitter may put anywhere, are left out. ERROR nodes can be marked extra too; they
/// stay.
pub(super) fn children<'tree>(node: Node<'tree>) -> Vec<Node<'tree>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).filter(is_syntax).collect()
}

/// Named children, without comments.
pub(super) fn named_children<'tree>(node: Node<'tree>) -> Vec<Node<'tree>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).filter(is_syntax).collect()
}

pub(super) fn field_children<'tree>(node: Node<'tree>, field: Field) -> Vec<Node<'tree>> {
    let Some(id) = field_id(field) else { return Vec::new() };
    let mut cursor = node.walk();
    node.children_by_field_id(id, &mut cursor).filter(is_syntax).collect()
}

fn is_syntax(node: &Node) -> bool {
    !node.is_extra() || node.is_error() || node.is_missing()
}

/// The first anonymous child token with this text, e.g. `":"`.
pub(super) fn token<'tree>(node: Node<'tree>, kind: &str) -> Option<Node<'tree>> {
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).find(|child| !child.is_named() && child.kind_name() == kind);
    found
}

/// Every ERROR and MISSING node, in source order, with a message in Python's words where
/// the shape of the error allows. Walks iteratively: error trees can be arbitrarily deep.
fn collect_tree_errors(root: Node, source: &str) -> Vec<SyntaxError> {
    let mut errors = Vec::new();
    if !root.has_error() {
        return errors;
    }
    let mut cursor = root.walk();
    'walk: loop {
        let node = cursor.node();
        let descend = if node.is_error() {
            errors.push(describe_error_node(node, source));
            false
        } else if node.is_missing() {
            errors.push(describe_missing_node(node));
            false
        } else {
            node.has_error()
        };
        if errors.len() >= MAX_ERRORS {
            break;
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    if errors.is_empty() {
        errors.push(hidden_error(root, source));
    }
    errors
}

/// The error in a tree whose ERROR and MISSING nodes are all hidden (a missing line break,
/// `return (a, b) c`, is a hidden token): Python's "invalid syntax" at the first of two
/// neighbours that no line break or `;` separates, inside the innermost node holding the
/// error, or at that node.
fn hidden_error(root: Node, source: &str) -> SyntaxError {
    let mut node = root;
    while let Some(inner) = {
        let mut cursor = node.walk();
        let inner = node.children(&mut cursor).find(|child| child.has_error());
        inner
    } {
        node = inner;
    }
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).filter(|child| !child.is_extra()).collect();
    let unseparated = children.windows(2).find(|pair| {
        let between = source.get(pair[0].end_byte()..pair[1].start_byte()).unwrap_or("\n");
        pair[0].is_named() && pair[1].is_named() && !between.contains(['\n', ';'])
    });
    let at = unseparated.map_or(node, |pair| pair[1]);
    let start = at.start_byte();
    let end = at.end_byte().min(line_end(source, start)).max(start);
    SyntaxError { span: Span::new(start, end), message: "invalid syntax".to_string() }
}

fn describe_missing_node(node: Node) -> SyntaxError {
    let position = node.start_byte();
    let kind = node.kind_name();
    let message = if node.is_named() { "invalid syntax".to_string() } else { format!("expected '{kind}'") };
    SyntaxError { span: Span::new(position, position), message }
}

/// A whole statement tree-sitter recognised inside an ERROR node: its error recovery can
/// wrap long runs of good statements (sometimes the whole file) in one ERROR.
fn is_clean_statement(node: &Node) -> bool {
    let kind = node.kind_name();
    (kind.ends_with("_statement") || matches!(kind, "function_definition" | "class_definition" | "decorated_definition"))
        && !node.has_error()
}

/// Python's message for an ERROR node, guessed from the tokens tree-sitter skipped.
fn describe_error_node(node: Node, source: &str) -> SyntaxError {
    let mut node = node;
    // Narrow down to the first thing that is not a whole statement.
    let tokens = loop {
        let tokens: Vec<Node> = children(node).into_iter().skip_while(is_clean_statement).collect();
        match tokens.first() {
            Some(first) if first.is_error() => node = *first,
            Some(first) if first.is_missing() => return describe_missing_node(*first),
            Some(first) if first.has_error() => match first_error_descendant(*first) {
                Some(inner) if inner.is_missing() => return describe_missing_node(inner),
                Some(inner) => node = inner,
                None => break tokens,
            },
            _ => break tokens,
        }
    };
    let start = tokens.first().map_or(node.start_byte(), Node::start_byte);
    // Brackets opened inside the ERROR and never closed there.
    let mut open_brackets: Vec<Node> = Vec::new();
    for &child in &tokens {
        match child.kind_name() {
            "(" | "[" | "{" if !child.is_named() => open_brackets.push(child),
            ")" | "]" | "}" if !child.is_named() => {
                let unmatched = open_brackets.pop().is_none();
                if unmatched && child.start_byte() == start {
                    return SyntaxError { span: span_of(child), message: format!("unmatched '{}'", child.kind_name()) };
                }
            }
            _ => {}
        }
    }
    if let Some(bracket) = open_brackets.first() {
        return SyntaxError { span: span_of(*bracket), message: format!("'{}' was never closed", bracket.kind_name()) };
    }
    let starts_compound = tokens.first().is_some_and(|first| {
        !first.is_named()
            && matches!(
                first.kind_name(),
                "if" | "elif" | "else" | "while" | "for" | "def" | "class" | "with" | "try" | "except" | "finally" | "async"
            )
    });
    if starts_compound && !tokens.iter().any(|child| !child.is_named() && child.kind_name() == ":") {
        // Point just after the last token of the header line.
        let line_end = line_end(source, start);
        let header_end = tokens.iter().take_while(|child| child.start_byte() < line_end).map(|child| child.end_byte()).max();
        let position = header_end.unwrap_or(start);
        return SyntaxError { span: Span::new(position, position), message: "expected ':'".to_string() };
    }
    let end = line_end(source, start).min(node.end_byte()).max(start);
    SyntaxError { span: Span::new(start, end), message: "invalid syntax".to_string() }
}

/// The first ERROR or MISSING node under `node`, in source order.
fn first_error_descendant(node: Node) -> Option<Node> {
    let mut cursor = node.walk();
    'walk: loop {
        let current = cursor.node();
        if current != node && (current.is_error() || current.is_missing()) {
            return Some(current);
        }
        if current.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    None
}

/// Byte offset of the end of the line holding `position` (before its newline).
fn line_end(source: &str, position: usize) -> usize {
    source.get(position..).and_then(|rest| rest.find(['\n', '\r'])).map_or(source.len(), |offset| position + offset)
}

/// Byte offset of the start of the line holding `position`.
fn line_start(source: &str, position: usize) -> usize {
    source.get(..position).and_then(|before| before.rfind(['\n', '\r'])).map_or(0, |newline| newline + 1)
}

/// 1-based line number of `position`, for messages.
fn line_number(source: &str, position: usize) -> usize {
    source.get(..position).map_or(0, |before| before.bytes().filter(|&b| b == b'\n').count()) + 1
}

/// The kind of code a statement sits in, for `yield`, `return`, `break` and `continue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScopeKind {
    Module,
    Function,
    Class,
}

#[derive(Clone, Copy, Debug)]
struct Scope {
    kind: ScopeKind,
    /// Loops around the current statement within this scope.
    loop_depth: u32,
    /// A `yield` was seen directly in this function (not in a nested function or class).
    saw_yield: bool,
}

/// The walk's state. One per `parse_module`.
pub(super) struct Lowerer<'src> {
    source: &'src str,
    errors: Vec<SyntaxError>,
    /// Current nesting of `lower_stmt`, `lower_expr` and `lower_type` calls.
    depth: u32,
    /// Depth of the AST being built: `depth` plus the depth of operator chains.
    ast_depth: u32,
    too_deep_reported: bool,
    /// Blocks around the statement being lowered.
    block_depth: u32,
    /// The module's own scope, under `scopes`.
    module_scope: Scope,
    /// Functions and classes around the statement being lowered, innermost last.
    scopes: Vec<Scope>,
    /// Indentation of the last statement lowered that started its line; tells "unexpected
    /// indent" from "unindent does not match any outer indentation level".
    last_line_indent: &'src str,
    /// Clean top-level statements of the last parse, by text, to reuse.
    reuse: HashMap<Box<str>, LoweredStatement>,
    /// Clean top-level statements of this parse, by text, for the next one.
    lowered: HashMap<Box<str>, LoweredStatement>,
    /// Whether a next parse will read `lowered`: a one-shot parse (`check`, `run`) keeps no
    /// copy of each statement, which on a 100,000-line file was as much work as lowering it.
    keep_for_reuse: bool,
}

impl<'src> Lowerer<'src> {
    fn new(source: &'src str) -> Lowerer<'src> {
        Lowerer {
            source,
            errors: Vec::new(),
            depth: 0,
            ast_depth: 0,
            too_deep_reported: false,
            block_depth: 0,
            module_scope: Scope { kind: ScopeKind::Module, loop_depth: 0, saw_yield: false },
            scopes: Vec::new(),
            last_line_indent: "",
            reuse: HashMap::default(),
            lowered: HashMap::default(),
            keep_for_reuse: true,
        }
    }

    pub(super) fn text(&self, node: Node) -> &'src str {
        self.source.get(node.byte_range()).unwrap_or("")
    }

    pub(super) fn name(&self, node: Node) -> ast::Name {
        Rc::from(self.text(node))
    }

    /// Records an error. Lowering stops after the top-level statement holding the first
    /// one, so these stay few.
    pub(super) fn error(&mut self, span: Span, message: impl Into<String>) {
        self.errors.push(SyntaxError { span, message: message.into() });
    }

    /// Stands in for a node that cannot be lowered, making sure an error covers it so the
    /// enclosing top-level statement is dropped.
    pub(super) fn invalid(&mut self, node: Node, message: &str) -> Expr {
        if !node.has_error() {
            self.error(span_of(node), message);
        }
        Expr { kind: ExprKind::NoneLit, span: span_of(node) }
    }

    /// Runs `lower` one nesting level deeper, or reports "too deeply nested" (once) and
    /// returns `None` past `MAX_NESTING`.
    pub(super) fn nested<T>(&mut self, node: Node, lower: impl FnOnce(&mut Self) -> T) -> Option<T> {
        if self.depth >= MAX_NESTING {
            self.too_deep(node);
            return None;
        }
        self.depth += 1;
        let lowered = self.deeper_by(node, 1, lower);
        self.depth -= 1;
        lowered
    }

    /// Runs `lower` with the AST `levels` deeper, or reports "too deeply nested" (once)
    /// and returns `None` past `MAX_AST_DEPTH`.
    pub(super) fn deeper_by<T>(&mut self, node: Node, levels: u32, lower: impl FnOnce(&mut Self) -> T) -> Option<T> {
        if self.ast_depth.saturating_add(levels) > MAX_AST_DEPTH {
            self.too_deep(node);
            return None;
        }
        self.ast_depth += levels;
        let lowered = lower(self);
        self.ast_depth -= levels;
        Some(lowered)
    }

    fn too_deep(&mut self, node: Node) {
        if !self.too_deep_reported {
            self.too_deep_reported = true;
            let start = node.start_byte();
            let end = line_end(self.source, start).min(node.end_byte()).max(start);
            self.error(Span::new(start, end), "too deeply nested");
        }
    }

    fn scope(&mut self) -> &mut Scope {
        match self.scopes.last_mut() {
            Some(scope) => scope,
            None => &mut self.module_scope,
        }
    }

    /// A `yield` in the current scope: marks the enclosing function a generator.
    pub(super) fn saw_yield(&mut self, node: Node) {
        let scope = self.scope();
        if scope.kind == ScopeKind::Function {
            scope.saw_yield = true;
        } else {
            self.error(span_of(node), "'yield' outside function");
        }
    }

    /// Runs `lower` in a new function scope; returns its result and whether it yielded.
    pub(super) fn in_function<T>(&mut self, lower: impl FnOnce(&mut Self) -> T) -> (T, bool) {
        self.scopes.push(Scope { kind: ScopeKind::Function, loop_depth: 0, saw_yield: false });
        let lowered = lower(self);
        let saw_yield = self.scopes.pop().is_some_and(|scope| scope.saw_yield);
        (lowered, saw_yield)
    }

    fn in_class<T>(&mut self, lower: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(Scope { kind: ScopeKind::Class, loop_depth: 0, saw_yield: false });
        let lowered = lower(self);
        self.scopes.pop();
        lowered
    }

    fn in_loop<T>(&mut self, lower: impl FnOnce(&mut Self) -> T) -> T {
        self.scope().loop_depth += 1;
        let lowered = lower(self);
        let scope = self.scope();
        scope.loop_depth = scope.loop_depth.saturating_sub(1);
        lowered
    }

    /// Lowers top-level statements up to the first one that holds or follows an error.
    fn lower_module(&mut self, root: Node, first_tree_error: u32) -> Vec<Stmt> {
        let mut body = Vec::new();
        // The root itself is an ERROR when tree-sitter could not make a module of the file.
        let top_level = if root.is_error() { vec![root] } else { named_children(root) };
        for node in top_level {
            if node.is_error() {
                // Whole statements at the start of an ERROR come before the error.
                for statement in children(node).into_iter().take_while(is_clean_statement) {
                    if !self.lower_top_level(statement, first_tree_error, &mut body) {
                        break;
                    }
                }
                break;
            }
            if !self.lower_top_level(node, first_tree_error, &mut body) {
                break;
            }
        }
        body
    }

    /// Lowers one top-level statement into `body`; false when lowering must stop because
    /// this statement holds or follows an error.
    fn lower_top_level(&mut self, node: Node, first_tree_error: u32, body: &mut Vec<Stmt>) -> bool {
        let errors_before = self.errors.len();
        if node.has_error() || node.start_byte() as u64 >= u64::from(first_tree_error) {
            return false;
        }
        let ends_before_error = node.end_byte() as u64 <= u64::from(first_tree_error);
        let text = self.text(node);
        let start = node.start_byte() as u32;
        // Only a statement that starts its line is kept: its lowering depends on its text alone.
        let starts_line = self.line_indent(node) == Some("");
        let kind = node.kind_id();
        if let Some((key, mut previous)) = self.reuse.remove_entry(text).filter(|(_, p)| ends_before_error && starts_line && p.kind == kind)
        {
            // Lowered clean before from the same text: the same statement, moved.
            let delta = i64::from(start) - i64::from(previous.start);
            let (indent_start, indent_end) = previous.last_line_indent;
            let moved = |offset: u32| (i64::from(offset) + delta) as u32;
            if indent_end > indent_start {
                self.last_line_indent = self.source.get(moved(indent_start) as usize..moved(indent_end) as usize).unwrap_or("");
                previous.last_line_indent = (moved(indent_start), moved(indent_end));
            } else {
                self.last_line_indent = "";
            }
            if let Some(stmt) = previous.stmt.as_mut().filter(|_| delta != 0) {
                super::shift::shift_stmt(stmt, delta);
            }
            previous.start = start;
            body.extend(previous.stmt.clone());
            self.lowered.insert(key, previous);
            return true;
        }
        self.check_indentation(node, "");
        let lowered = self.lower_stmt(node);
        if self.errors.len() > errors_before || !ends_before_error {
            return false;
        }
        if starts_line && self.keep_for_reuse {
            let indent = self.last_line_indent;
            let indent_start = (indent.as_ptr() as usize).wrapping_sub(self.source.as_ptr() as usize);
            let last_line_indent = match indent_start.checked_add(indent.len()) {
                Some(end) if !indent.is_empty() && end <= self.source.len() => (indent_start as u32, end as u32),
                _ => (0, 0),
            };
            self.lowered.insert(text.into(), LoweredStatement { kind, start, stmt: lowered.clone(), last_line_indent });
        }
        body.extend(lowered);
        true
    }

    /// Lowers the statements of a `block`. `header` is the compound statement owning it
    /// and `owner` names it in Python's "expected an indented block after ..." message.
    fn lower_block(&mut self, block: Option<Node>, header: Node, owner: &str) -> Vec<Stmt> {
        let statements = block.map(named_children).unwrap_or_default();
        let Some(first) = statements.first() else {
            self.empty_block(block, header, owner);
            return Vec::new();
        };
        if self.block_depth >= MAX_INDENT {
            let start = first.start_byte();
            let end = line_end(self.source, start).min(first.end_byte()).max(start);
            self.error(Span::new(start, end), "too many levels of indentation");
            return Vec::new();
        }
        self.block_depth += 1;
        let mut expected_indent = None;
        let mut body = Vec::with_capacity(statements.len());
        for node in statements {
            if expected_indent.is_none() {
                expected_indent = self.line_indent(node);
            }
            if let Some(expected) = expected_indent {
                self.check_indentation(node, expected);
            }
            body.extend(self.lower_stmt(node));
        }
        self.block_depth -= 1;
        body
    }

    /// tree-sitter accepts `if x:` followed by a line that is not indented; Python does not.
    fn empty_block(&mut self, block: Option<Node>, header: Node, owner: &str) {
        if block.is_some_and(|block| block.has_error()) || header.has_error() {
            return;
        }
        let after = block.map_or(header.end_byte(), |block| block.start_byte());
        let rest = self.source.get(after..).unwrap_or("");
        let next = after + (rest.len() - rest.trim_start().len());
        let end = line_end(self.source, next);
        let line = line_number(self.source, header.start_byte());
        self.error(Span::new(next, end), format!("expected an indented block after {owner} on line {line}"));
    }

    /// The whitespace before `node` on its line, or `None` when something else precedes it
    /// there (`a; b`, `if x: a`).
    fn line_indent(&self, node: Node) -> Option<&'src str> {
        let start = node.start_byte();
        let indent = self.source.get(line_start(self.source, start)..start)?;
        if !indent.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\x0c')) {
            return None;
        }
        // A form feed resets the column, as in CPython's tokenizer.
        Some(indent.rfind('\x0c').map_or(indent, |feed| &indent[feed + 1..]))
    }

    /// Reports a statement that starts its line at another indentation than its block's.
    fn check_indentation(&mut self, node: Node, expected: &'src str) {
        let Some(indent) = self.line_indent(node) else {
            return;
        };
        let previous = std::mem::replace(&mut self.last_line_indent, indent);
        if indent == expected {
            return;
        }
        let message = if indent.starts_with(expected) {
            // Deeper than the block: a dedent from a deeper line that stopped between two
            // levels, or an indent where none may start.
            if previous.len() > indent.len() && previous.starts_with(indent) {
                "unindent does not match any outer indentation level"
            } else {
                "unexpected indent"
            }
        } else if expected.starts_with(indent) {
            "unindent does not match any outer indentation level"
        } else {
            "inconsistent use of tabs and spaces in indentation"
        };
        let start = node.start_byte();
        let end = line_end(self.source, start).min(node.end_byte()).max(start);
        self.error(Span::new(start, end), message);
    }

    fn lower_stmt(&mut self, node: Node) -> Option<Stmt> {
        self.nested(node, |this| this.lower_stmt_unguarded(node)).flatten()
    }

    /// Dispatches on the node kind. Kept to calls only: in unoptimised builds every local of
    /// every arm would get its own stack slot, and this frame repeats once per nesting level.
    fn lower_stmt_unguarded(&mut self, node: Node) -> Option<Stmt> {
        let kind = match node.kind_name() {
            "expression_statement" => self.lower_expression_statement(node),
            "return_statement" => self.lower_return(node),
            "pass_statement" => StmtKind::Pass,
            "break_statement" | "continue_statement" => self.lower_loop_jump(node),
            "if_statement" => self.lower_if(node, node),
            "while_statement" | "for_statement" => self.lower_loop(node),
            "try_statement" => self.lower_try(node),
            "with_statement" => self.lower_with(node),
            "function_definition" => StmtKind::FunctionDef(self.lower_function(node, Vec::new(), statement_span(node))),
            "class_definition" => StmtKind::ClassDef(self.lower_class(node, Vec::new(), statement_span(node))),
            "decorated_definition" => self.lower_decorated(node)?,
            "raise_statement" => self.lower_raise(node),
            "assert_statement" => self.lower_assert(node),
            "import_statement" => StmtKind::Import(self.lower_import_names(node)),
            "import_from_statement" => self.lower_import_from(node),
            "future_import_statement" => {
                StmtKind::ImportFrom { module: Some(Rc::from("__future__")), names: self.lower_import_names(node), level: 0 }
            }
            "global_statement" | "nonlocal_statement" => self.lower_global(node),
            "delete_statement" => self.lower_delete(node),
            "match_statement" => self.lower_match(node),
            "type_alias_statement" => return self.lower_type_alias(node),
            "print_statement" | "exec_statement" => self.python2_statement(node)?,
            // An ERROR node among statements was reported by `collect_tree_errors`.
            "ERROR" => return None,
            _ => {
                self.invalid(node, "invalid syntax");
                return None;
            }
        };
        Some(Stmt { kind, span: statement_span(node) })
    }

    /// `type X = int` is skipped like `match`. tree-sitter-python also takes statements
    /// that start with a call of the builtin `type` for aliases (`type(m).x = 1` arrives as
    /// an alias of `(m).x`); those are parsed again with `type` spelled as another name of
    /// the same length, so every byte offset stays valid, and lowered from that tree.
    fn lower_type_alias(&mut self, node: Node) -> Option<Stmt> {
        let is_alias = field(node, Field::Left)
            .and_then(|left| named_children(left).first().copied())
            .is_some_and(|name| matches!(name.kind_name(), "identifier" | "generic_type"));
        if is_alias {
            self.note_skipped_yields(node);
            return None;
        }
        let (start, end) = (node.start_byte(), node.end_byte());
        if self.source.get(start..start + 4) != Some("type") {
            self.invalid(node, "invalid syntax");
            return None;
        }
        // Only the statement's range is read, so this costs its length, not the file's.
        let range =
            tree_sitter::Range { start_byte: start, end_byte: end, start_point: node.start_position(), end_point: node.end_position() };
        let source = self.source.as_bytes();
        let mut read = |offset: usize, _: tree_sitter::Point| -> &[u8] {
            match offset.checked_sub(start) {
                Some(into @ 0..=3) => b"tYpe".get(into..).unwrap_or_default(),
                _ => source.get(offset..).unwrap_or_default(),
            }
        };
        let mut parser = tree_sitter::Parser::new();
        let ready = parser.set_language(&tree_sitter_python::LANGUAGE.into()).is_ok() && parser.set_included_ranges(&[range]).is_ok();
        let tree = if ready { parser.parse_with_options(&mut read, None, None) } else { None };
        let statement =
            tree.as_ref().and_then(|tree| named_children(tree.root_node()).into_iter().find(|child| child.start_byte() == start));
        match statement {
            Some(statement) if !statement.has_error() && statement.end_byte() == end && statement.kind_name() != "type_alias_statement" => {
                self.lower_stmt(statement)
            }
            _ => {
                self.invalid(node, "invalid syntax");
                None
            }
        }
    }

    /// A skipped statement still makes its function a generator if it yields
    /// (`case x: yield x`). Iterative: the skipped subtree is not depth-limited.
    fn note_skipped_yields(&mut self, node: Node) {
        let mut cursor = node.walk();
        'walk: loop {
            let current = cursor.node();
            let kind = current.kind_name();
            if kind == "yield" {
                self.saw_yield(current);
                return;
            }
            let own_scope = matches!(kind, "function_definition" | "class_definition" | "lambda");
            if !own_scope && cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() || cursor.node() == node {
                    break 'walk;
                }
            }
        }
    }

    fn lower_return(&mut self, node: Node) -> StmtKind {
        if self.scope().kind != ScopeKind::Function {
            self.error(span_of(node), "'return' outside function");
        }
        let value = named_children(node).first().map(|&value| self.lower_expr(value));
        StmtKind::Return(value)
    }

    fn lower_loop_jump(&mut self, node: Node) -> StmtKind {
        let is_break = node.kind_name() == "break_statement";
        if self.scope().loop_depth == 0 {
            self.error(span_of(node), if is_break { "'break' outside loop" } else { "'continue' not properly in loop" });
        }
        if is_break {
            StmtKind::Break
        } else {
            StmtKind::Continue
        }
    }

    fn lower_loop(&mut self, node: Node) -> StmtKind {
        if node.kind_name() == "while_statement" {
            let test = self.lower_field(node, Field::Condition);
            let body = self.in_loop(|this| this.lower_block(field(node, Field::Body), node, "'while' statement"));
            let orelse = self.lower_else(field(node, Field::Alternative));
            return StmtKind::While { test, body, orelse };
        }
        let target = self.lower_field(node, Field::Left);
        let iter = self.lower_field(node, Field::Right);
        let body = self.in_loop(|this| this.lower_block(field(node, Field::Body), node, "'for' statement"));
        let orelse = self.lower_else(field(node, Field::Alternative));
        StmtKind::For { target, iter, body, orelse }
    }

    fn lower_decorated(&mut self, node: Node) -> Option<StmtKind> {
        let span = statement_span(node);
        let decorators = named_children(node)
            .into_iter()
            .filter(|child| child.kind_name() == "decorator")
            .map(|decorator| match named_children(decorator).first() {
                Some(&expression) => self.lower_expr(expression),
                None => self.invalid(decorator, "invalid syntax"),
            })
            .collect();
        match field(node, Field::Definition) {
            Some(definition) if definition.kind_name() == "class_definition" => {
                Some(StmtKind::ClassDef(self.lower_class(definition, decorators, span)))
            }
            Some(definition) if definition.kind_name() == "function_definition" => {
                Some(StmtKind::FunctionDef(self.lower_function(definition, decorators, span)))
            }
            _ => {
                self.invalid(node, "invalid syntax");
                None
            }
        }
    }

    fn lower_raise(&mut self, node: Node) -> StmtKind {
        let cause_node = field(node, Field::Cause);
        let exc_node = named_children(node).into_iter().find(|child| Some(*child) != cause_node);
        let exc = exc_node.map(|exc| self.lower_expr(exc));
        let cause = cause_node.map(|cause| self.lower_expr(cause));
        StmtKind::Raise { exc, cause }
    }

    fn lower_assert(&mut self, node: Node) -> StmtKind {
        let parts = named_children(node);
        let test = match parts.first() {
            Some(&test) => self.lower_expr(test),
            None => self.invalid(node, "invalid syntax"),
        };
        let msg = parts.get(1).map(|&msg| self.lower_expr(msg));
        StmtKind::Assert { test, msg }
    }

    fn lower_global(&mut self, node: Node) -> StmtKind {
        let names =
            named_children(node).into_iter().filter(|child| child.kind_name() == "identifier").map(|name| self.name(name)).collect();
        if node.kind_name() == "global_statement" {
            StmtKind::Global(names)
        } else {
            StmtKind::Nonlocal(names)
        }
    }

    /// `del a, b` deletes two targets; `del (a, b)` one tuple, as in CPython.
    fn lower_delete(&mut self, node: Node) -> StmtKind {
        let targets = named_children(node)
            .into_iter()
            .flat_map(|child| if child.kind_name() == "expression_list" { named_children(child) } else { vec![child] })
            .map(|target| self.lower_expr(target))
            .collect();
        StmtKind::Delete(targets)
    }

    /// tree-sitter-python also parses Python 2's `print x` and `exec code`: Python 3 rejects
    /// them, except `print >> f, x`, which is valid Python 3 (a tuple holding a shift).
    fn python2_statement(&mut self, node: Node) -> Option<StmtKind> {
        let parts = children(node);
        if let [keyword, chevron, rest @ ..] = parts.as_slice() {
            if keyword.kind_name() == "print" && chevron.kind_name() == "chevron" {
                let print = Expr { kind: ExprKind::Name(Rc::from("print")), span: span_of(*keyword) };
                let target = match named_children(*chevron).first() {
                    Some(&target) => self.lower_expr(target),
                    None => self.invalid(*chevron, "invalid syntax"),
                };
                let span = Span::new(keyword.start_byte(), chevron.end_byte());
                let shift = Expr { kind: ExprKind::BinOp { left: Box::new(print), op: ast::BinOp::RShift, right: Box::new(target) }, span };
                if rest.is_empty() {
                    return Some(StmtKind::Expr(shift));
                }
                let mut elements = vec![shift];
                elements.extend(rest.iter().filter(|part| part.is_named()).map(|&part| self.lower_expr(part)));
                return Some(StmtKind::Expr(Expr { kind: ExprKind::Tuple(elements), span: span_of(node) }));
            }
        }
        let keyword = if node.kind_name() == "print_statement" { "print" } else { "exec" };
        self.error(span_of(node), format!("Missing parentheses in call to '{keyword}'. Did you mean {keyword}(...)?"));
        None
    }

    pub(super) fn lower_field(&mut self, node: Node, name: Field) -> Expr {
        match field(node, name) {
            Some(child) => self.lower_expr(child),
            None => self.invalid(node, "invalid syntax"),
        }
    }

    /// `if` and `elif` (whose `orelse` is a nested `If` spanning to the end of the chain).
    fn lower_if(&mut self, statement: Node, clause: Node) -> StmtKind {
        let owner = if clause.kind_name() == "elif_clause" { "'elif' statement" } else { "'if' statement" };
        let test = self.lower_field(clause, Field::Condition);
        let body = self.lower_block(field(clause, Field::Consequence), clause, owner);
        let alternatives = if clause.kind_name() == "if_statement" { field_children(statement, Field::Alternative) } else { Vec::new() };
        let orelse = self.lower_alternatives(statement, &alternatives);
        StmtKind::If { test, body, orelse }
    }

    fn lower_alternatives(&mut self, statement: Node, alternatives: &[Node]) -> Vec<Stmt> {
        let Some((&first, rest)) = alternatives.split_first() else {
            return Vec::new();
        };
        if first.kind_name() == "else_clause" {
            return self.lower_else(Some(first));
        }
        let span = Span::new(first.start_byte(), statement_span(statement).end as usize);
        let lowered = self.nested(first, |this| {
            let test = this.lower_field(first, Field::Condition);
            let body = this.lower_block(field(first, Field::Consequence), first, "'elif' statement");
            let orelse = this.lower_alternatives(statement, rest);
            StmtKind::If { test, body, orelse }
        });
        lowered.map(|kind| vec![Stmt { kind, span }]).unwrap_or_default()
    }

    fn lower_else(&mut self, clause: Option<Node>) -> Vec<Stmt> {
        match clause {
            Some(clause) => self.lower_block(field(clause, Field::Body), clause, "'else' statement"),
            None => Vec::new(),
        }
    }

    fn lower_try(&mut self, node: Node) -> StmtKind {
        let body = self.lower_block(field(node, Field::Body), node, "'try' statement");
        let mut handlers = Vec::new();
        let mut orelse = Vec::new();
        let mut finalbody = Vec::new();
        for clause in named_children(node) {
            match clause.kind_name() {
                "except_clause" => handlers.push(self.lower_except(clause)),
                "else_clause" => orelse = self.lower_else(Some(clause)),
                "finally_clause" => {
                    let block = named_children(clause).into_iter().find(|child| child.kind_name() == "block");
                    finalbody = self.lower_block(block, clause, "'finally' statement");
                }
                _ => {}
            }
        }
        StmtKind::Try { body, handlers, orelse, finalbody }
    }

    /// `except E as e:`; tree-sitter gives either `value: as_pattern` or `value` + `alias`.
    fn lower_except(&mut self, clause: Node) -> ast::ExceptHandler {
        let values = field_children(clause, Field::Value);
        let mut name = field(clause, Field::Alias).map(|alias| self.name(alias));
        if values.len() > 1 {
            self.error(span_of(clause), "multiple exception types must be parenthesized");
        }
        let typ = values.first().map(|&value| {
            if value.kind_name() == "as_pattern" {
                let parts = named_children(value);
                if let Some(alias) = field(value, Field::Alias) {
                    match named_children(alias).first() {
                        Some(&identifier) if identifier.kind_name() == "identifier" => name = Some(self.name(identifier)),
                        _ => {
                            self.invalid(alias, "invalid syntax");
                        }
                    }
                }
                match parts.first() {
                    Some(&typ) => self.lower_expr(typ),
                    None => self.invalid(value, "invalid syntax"),
                }
            } else {
                self.lower_expr(value)
            }
        });
        let block = named_children(clause).into_iter().find(|child| child.kind_name() == "block");
        let body = self.lower_block(block, clause, "'except' statement");
        ast::ExceptHandler { typ, name, body, span: statement_span(clause) }
    }

    fn lower_with(&mut self, node: Node) -> StmtKind {
        let mut items = Vec::new();
        for clause in named_children(node).into_iter().filter(|child| child.kind_name() == "with_clause") {
            for item in named_children(clause).into_iter().filter(|child| child.kind_name() == "with_item") {
                let Some(value) = field(item, Field::Value) else {
                    self.invalid(item, "invalid syntax");
                    continue;
                };
                // `with (a as b):` and `with (a, b as c):` arrive as one parenthesized item.
                let parts = named_children(value);
                let has_as = parts.iter().any(|part| part.kind_name() == "as_pattern");
                match value.kind_name() {
                    "parenthesized_expression" | "tuple" if has_as => {
                        for part in parts {
                            items.push(self.lower_with_item(part));
                        }
                    }
                    _ => items.push(self.lower_with_item(value)),
                }
            }
        }
        let body = self.lower_block(field(node, Field::Body), node, "'with' statement");
        StmtKind::With { items, body }
    }

    fn lower_with_item(&mut self, value: Node) -> ast::WithItem {
        if value.kind_name() != "as_pattern" {
            return ast::WithItem { context: self.lower_expr(value), target: None };
        }
        let context = match named_children(value).first() {
            Some(&context) => self.lower_expr(context),
            None => self.invalid(value, "invalid syntax"),
        };
        let target = field(value, Field::Alias).map(|alias| match named_children(alias).first() {
            Some(&target) => self.lower_expr(target),
            None => self.invalid(alias, "invalid syntax"),
        });
        ast::WithItem { context, target }
    }

    /// `import a.b as c, d` and the names of `from m import ...`.
    fn lower_import_names(&mut self, node: Node) -> Vec<ast::ImportAlias> {
        field_children(node, Field::Name)
            .into_iter()
            .map(|name| match name.kind_name() {
                "aliased_import" => ast::ImportAlias {
                    name: field(name, Field::Name).map_or_else(|| Rc::from(""), |dotted| self.dotted_name(dotted)),
                    asname: field(name, Field::Alias).map(|alias| self.name(alias)),
                    span: span_of(name),
                },
                _ => ast::ImportAlias { name: self.dotted_name(name), asname: None, span: span_of(name) },
            })
            .collect()
    }

    /// `a . b` is valid Python; the name is `a.b`.
    fn dotted_name(&self, node: Node) -> ast::Name {
        let parts: Vec<&str> =
            named_children(node).into_iter().filter(|child| child.kind_name() == "identifier").map(|part| self.text(part)).collect();
        if parts.is_empty() {
            return self.name(node);
        }
        Rc::from(parts.join("."))
    }

    fn lower_import_from(&mut self, node: Node) -> StmtKind {
        let mut module = None;
        let mut level = 0;
        if let Some(module_name) = field(node, Field::ModuleName) {
            if module_name.kind_name() == "relative_import" {
                for part in named_children(module_name) {
                    match part.kind_name() {
                        "import_prefix" => level = self.text(part).bytes().filter(|&b| b == b'.').count() as u32,
                        "dotted_name" => module = Some(self.dotted_name(part)),
                        _ => {}
                    }
                }
            } else {
                module = Some(self.dotted_name(module_name));
            }
        }
        // `from m import *` has no `name` children: `names` stays empty.
        let names = self.lower_import_names(node);
        StmtKind::ImportFrom { module, names, level }
    }

    fn lower_function(&mut self, node: Node, decorators: Vec<Expr>, span: Span) -> Rc<ast::FunctionDef> {
        let is_async = children(node).first().is_some_and(|first| first.kind_name() == "async");
        let name_node = field(node, Field::Name);
        let name = name_node.map_or_else(|| Rc::from(""), |name| self.name(name));
        let name_span = name_node.map_or(span, span_of);
        // Defaults and annotations are evaluated in the enclosing scope.
        let params = match field(node, Field::Parameters) {
            Some(parameters) => self.lower_parameters(parameters),
            None => ast::Parameters::default(),
        };
        let returns = field(node, Field::ReturnType).map(|returns| self.lower_type(returns));
        let (body, is_generator) = self.in_function(|this| this.lower_block(field(node, Field::Body), node, "function definition"));
        Rc::new(ast::FunctionDef { name, params, body, decorators, returns, is_async, is_generator, span, name_span })
    }

    fn lower_class(&mut self, node: Node, decorators: Vec<Expr>, span: Span) -> Rc<ast::ClassDef> {
        let name_node = field(node, Field::Name);
        let name = name_node.map_or_else(|| Rc::from(""), |name| self.name(name));
        let name_span = name_node.map_or(span, span_of);
        let (bases, keywords) = match field(node, Field::Superclasses) {
            Some(arguments) => self.lower_arguments(arguments),
            None => (Vec::new(), Vec::new()),
        };
        let body = self.in_class(|this| this.lower_block(field(node, Field::Body), node, "class definition"));
        Rc::new(ast::ClassDef { name, bases, keywords, body, decorators, span, name_span })
    }

    fn lower_expression_statement(&mut self, node: Node) -> StmtKind {
        let parts = named_children(node);
        match parts.as_slice() {
            [single] if single.kind_name() == "assignment" => self.lower_assignment(*single),
            [single] if single.kind_name() == "augmented_assignment" => {
                let target = self.lower_field(*single, Field::Left);
                let op = field(*single, Field::Operator).and_then(|op| expressions::binary_op(op.kind_name().trim_end_matches('=')));
                let value = self.lower_assigned_value(*single);
                match op {
                    Some(op) => StmtKind::AugAssign { target, op, value },
                    None => StmtKind::Expr(self.invalid(*single, "invalid syntax")),
                }
            }
            [single] if token(node, ",").is_none() => StmtKind::Expr(self.lower_expr(*single)),
            // `a, b` and `a,` as statements are tuples.
            _ => {
                let elements = parts.iter().map(|&part| self.lower_expr(part)).collect();
                StmtKind::Expr(Expr { kind: ExprKind::Tuple(elements), span: span_of(node) })
            }
        }
    }

    /// `a = b = value` arrives as nested `assignment`s; `x: T = value` has a `type` field.
    fn lower_assignment(&mut self, node: Node) -> StmtKind {
        if let Some(annotation) = field(node, Field::Type) {
            let target = self.lower_field(node, Field::Left);
            let annotation = self.lower_type(annotation);
            let value = field(node, Field::Right).map(|_| self.lower_assigned_value(node));
            return StmtKind::AnnAssign { target, annotation, value };
        }
        let mut targets = Vec::new();
        let mut current = node;
        loop {
            targets.push(self.lower_field(current, Field::Left));
            match field(current, Field::Right) {
                Some(right) if right.kind_name() == "assignment" => {
                    if field(right, Field::Type).is_some() {
                        let value = self.invalid(right, "invalid syntax");
                        return StmtKind::Assign { targets, value };
                    }
                    current = right;
                }
                _ => break,
            }
        }
        let value = self.lower_assigned_value(current);
        StmtKind::Assign { targets, value }
    }

    /// The `right` of an assignment: an expression, a bare tuple, or `yield`.
    fn lower_assigned_value(&mut self, node: Node) -> Expr {
        match field(node, Field::Right) {
            Some(right) if matches!(right.kind_name(), "assignment" | "augmented_assignment") => self.invalid(right, "invalid syntax"),
            Some(right) => self.lower_expr(right),
            None => self.invalid(node, "invalid syntax"),
        }
    }
}
