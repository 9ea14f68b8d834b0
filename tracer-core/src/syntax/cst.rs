//! A read-only view of the concrete syntax tree, for code that needs the text as written
//! (byte ranges, rows and columns, every identifier) rather than the lowered AST: the
//! reproducers cut from a user's source. Node kinds and field names are typed here, so
//! tree-sitter's vocabulary stays inside `syntax/` (docs/ARCHITECTURE.md, checked by
//! tests/architecture.rs).

use std::ops::Range;

/// A parsed text, held as tree-sitter gives it, read through `SyntaxNode`.
pub struct SyntaxTree {
    tree: tree_sitter::Tree,
}

/// One node of a `SyntaxTree`: a named node (`kind` says which) or a token.
#[derive(Clone, Copy, Debug)]
pub struct SyntaxNode<'t>(tree_sitter::Node<'t>);

/// The kinds of named node the tree's readers tell apart; every other node (tokens too) is
/// `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Module,
    Block,
    Integer,
    Identifier,
    Tuple,
    List,
    Subscript,
    Attribute,
    Call,
    ArgumentList,
    KeywordArgument,
    FunctionDefinition,
    DecoratedDefinition,
    Decorator,
    ClassDefinition,
    Lambda,
    IfStatement,
    ImportStatement,
    ImportFromStatement,
    /// The dots of a relative import (`..` of `from ..m import x`).
    ImportPrefix,
    RelativeImport,
    AliasedImport,
    WildcardImport,
    DottedName,
    Assignment,
    AugmentedAssignment,
    ForStatement,
    /// `for x in xs` inside a comprehension.
    ForInClause,
    AsPattern,
    NamedExpression,
    GlobalStatement,
    NonlocalStatement,
    Other,
}

/// The named children a reader asks for (`def NAME(PARAMETERS) -> RETURN_TYPE: BODY`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Name,
    Alias,
    Function,
    Object,
    Attribute,
    Left,
    Body,
    Parameters,
    ReturnType,
    Type,
    Value,
    ModuleName,
    Condition,
}

impl SyntaxTree {
    /// `None` only when the parser cannot be set up; syntax errors are nodes of the tree.
    pub fn parse(text: &str) -> Option<SyntaxTree> {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&tree_sitter_python::LANGUAGE.into()).ok()?;
        parser.parse(text, None).map(|tree| SyntaxTree { tree })
    }

    pub fn root(&self) -> SyntaxNode<'_> {
        SyntaxNode(self.tree.root_node())
    }

    /// Every node, tokens included, in source order (a node before its children).
    pub fn preorder(&self) -> Vec<SyntaxNode<'_>> {
        let mut out = Vec::new();
        let mut cursor = self.tree.walk();
        'walk: loop {
            out.push(SyntaxNode(cursor.node()));
            if cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    continue 'walk;
                }
                if !cursor.goto_parent() {
                    break 'walk;
                }
            }
        }
        out
    }
}

impl<'t> SyntaxNode<'t> {
    pub fn kind(&self) -> NodeKind {
        if !self.0.is_named() {
            return NodeKind::Other;
        }
        match self.0.kind() {
            "module" => NodeKind::Module,
            "block" => NodeKind::Block,
            "integer" => NodeKind::Integer,
            "identifier" => NodeKind::Identifier,
            "tuple" => NodeKind::Tuple,
            "list" => NodeKind::List,
            "subscript" => NodeKind::Subscript,
            "attribute" => NodeKind::Attribute,
            "call" => NodeKind::Call,
            "argument_list" => NodeKind::ArgumentList,
            "keyword_argument" => NodeKind::KeywordArgument,
            "function_definition" => NodeKind::FunctionDefinition,
            "decorated_definition" => NodeKind::DecoratedDefinition,
            "decorator" => NodeKind::Decorator,
            "class_definition" => NodeKind::ClassDefinition,
            "lambda" => NodeKind::Lambda,
            "if_statement" => NodeKind::IfStatement,
            "import_statement" => NodeKind::ImportStatement,
            "import_from_statement" => NodeKind::ImportFromStatement,
            "import_prefix" => NodeKind::ImportPrefix,
            "relative_import" => NodeKind::RelativeImport,
            "aliased_import" => NodeKind::AliasedImport,
            "wildcard_import" => NodeKind::WildcardImport,
            "dotted_name" => NodeKind::DottedName,
            "assignment" => NodeKind::Assignment,
            "augmented_assignment" => NodeKind::AugmentedAssignment,
            "for_statement" => NodeKind::ForStatement,
            "for_in_clause" => NodeKind::ForInClause,
            "as_pattern" => NodeKind::AsPattern,
            "named_expression" => NodeKind::NamedExpression,
            "global_statement" => NodeKind::GlobalStatement,
            "nonlocal_statement" => NodeKind::NonlocalStatement,
            _ => NodeKind::Other,
        }
    }

    /// Unique among the nodes of one tree.
    pub fn id(&self) -> usize {
        self.0.id()
    }

    pub fn parent(&self) -> Option<SyntaxNode<'t>> {
        self.0.parent().map(SyntaxNode)
    }

    /// The `i`th child, tokens counted.
    pub fn child(&self, i: usize) -> Option<SyntaxNode<'t>> {
        self.0.child(i).map(SyntaxNode)
    }

    pub fn named_children(&self) -> std::vec::IntoIter<SyntaxNode<'t>> {
        let mut cursor = self.0.walk();
        self.0.named_children(&mut cursor).map(SyntaxNode).collect::<Vec<_>>().into_iter()
    }

    pub fn field(&self, field: Field) -> Option<SyntaxNode<'t>> {
        self.0.child_by_field_name(field.name()).map(SyntaxNode)
    }

    /// Every child in `field` (`import a, b` has two `Name`s).
    pub fn fields(&self, field: Field) -> std::vec::IntoIter<SyntaxNode<'t>> {
        let mut cursor = self.0.walk();
        self.0.children_by_field_name(field.name(), &mut cursor).map(SyntaxNode).collect::<Vec<_>>().into_iter()
    }

    pub fn byte_range(&self) -> Range<usize> {
        self.0.byte_range()
    }

    pub fn start_byte(&self) -> usize {
        self.0.start_byte()
    }

    pub fn end_byte(&self) -> usize {
        self.0.end_byte()
    }

    /// 0-based line of the first byte.
    pub fn start_row(&self) -> usize {
        self.0.start_position().row
    }

    /// 0-based line of the end (of the last byte's line, or the next when it ends a line).
    pub fn end_row(&self) -> usize {
        self.0.end_position().row
    }

    /// Byte offset of the first byte within its line.
    pub fn start_column(&self) -> usize {
        self.0.start_position().column
    }

    /// The node's text in `text` (the text the tree was parsed from); empty when out of range.
    pub fn text<'s>(&self, text: &'s str) -> &'s str {
        text.get(self.0.byte_range()).unwrap_or("")
    }
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Alias => "alias",
            Field::Function => "function",
            Field::Object => "object",
            Field::Attribute => "attribute",
            Field::Left => "left",
            Field::Body => "body",
            Field::Parameters => "parameters",
            Field::ReturnType => "return_type",
            Field::Type => "type",
            Field::Value => "value",
            Field::ModuleName => "module_name",
            Field::Condition => "condition",
        }
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn kinds_fields_and_positions_read_as_written() {
        let text = "from ..m import a as b\ndef f(x: int = 3):\n    return g(x)[1]\n";
        let tree = SyntaxTree::parse(text).expect("parser");
        let root = tree.root();
        assert_eq!(root.kind(), NodeKind::Module);
        let statements: Vec<SyntaxNode> = root.named_children().collect();
        assert_eq!(statements.iter().map(|s| s.kind()).collect::<Vec<_>>(), [NodeKind::ImportFromStatement, NodeKind::FunctionDefinition]);
        let module = statements[0].field(Field::ModuleName).expect("module");
        assert_eq!(module.kind(), NodeKind::RelativeImport);
        assert_eq!(module.child(0).map(|p| (p.kind(), p.text(text))), Some((NodeKind::ImportPrefix, "..")));
        let names: Vec<SyntaxNode> = statements[0].fields(Field::Name).collect();
        assert_eq!(names.len(), 1);
        assert_eq!(names[0].field(Field::Alias).map(|a| a.text(text)), Some("b"));
        let f = statements[1];
        assert_eq!(f.field(Field::Name).map(|n| n.text(text)), Some("f"));
        assert_eq!((f.start_row(), f.end_row()), (1, 2));
        let integers: Vec<&str> = tree.preorder().into_iter().filter(|n| n.kind() == NodeKind::Integer).map(|n| n.text(text)).collect();
        assert_eq!(integers, ["3", "1"]);
        // Tokens are no named kind: the `import` keyword is not an import statement.
        assert!(tree.preorder().iter().any(|n| n.text(text) == "import" && n.kind() == NodeKind::Other));
        let call = tree.preorder().into_iter().find(|n| n.kind() == NodeKind::Call).expect("call");
        assert_eq!((call.start_row(), call.start_column()), (2, 11));
    }

    crate::unit_tests::list![kinds_fields_and_positions_read_as_written];
}
