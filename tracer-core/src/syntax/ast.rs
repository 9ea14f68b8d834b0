//! tracelens' own Python AST: plain data with byte spans, lowered from tree-sitter.
//!
//! Architecture invariant: parsing never fails. A file with syntax errors lowers to the
//! statements before the first error plus a list of `SyntaxError`s; the interpreter runs
//! what it has.

use std::rc::Rc;

/// A source file of the analysis, numbered by the interpreter (`Interp::files`).
pub type FileId = u32;

/// Where in the user's code something happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    pub file: FileId,
    pub span: Span,
}

/// A byte range into the source text, `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

pub type Name = Rc<str>;

#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub body: Vec<Stmt>,
    /// Syntax errors, in source order. When non-empty, `body` holds only the statements
    /// that end before the first error.
    pub errors: Vec<SyntaxError>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    Expr(Expr),
    /// `a = b = value`: every target gets the value, left to right.
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `x: T = value` (value optional).
    AnnAssign {
        target: Expr,
        annotation: Expr,
        value: Option<Expr>,
    },
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    FunctionDef(Rc<FunctionDef>),
    ClassDef(Rc<ClassDef>),
    Return(Option<Expr>),
    If {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    While {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    Break,
    Continue,
    Pass,
    Raise {
        exc: Option<Expr>,
        cause: Option<Expr>,
    },
    Try {
        body: Vec<Stmt>,
        handlers: Vec<ExceptHandler>,
        orelse: Vec<Stmt>,
        finalbody: Vec<Stmt>,
    },
    With {
        items: Vec<WithItem>,
        body: Vec<Stmt>,
    },
    Assert {
        test: Expr,
        msg: Option<Expr>,
    },
    /// `import a.b.c as d`
    Import(Vec<ImportAlias>),
    /// `from ..a.b import c as d`; `level` counts the leading dots; `names` empty means `*`.
    ImportFrom {
        module: Option<Name>,
        names: Vec<ImportAlias>,
        level: u32,
    },
    Global(Vec<Name>),
    Nonlocal(Vec<Name>),
    Delete(Vec<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ImportAlias {
    /// Dotted name, e.g. `jax.numpy`.
    pub name: Name,
    pub asname: Option<Name>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExceptHandler {
    pub typ: Option<Expr>,
    pub name: Option<Name>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WithItem {
    pub context: Expr,
    pub target: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    pub name: Name,
    pub params: Parameters,
    pub body: Vec<Stmt>,
    pub decorators: Vec<Expr>,
    pub returns: Option<Expr>,
    pub is_async: bool,
    /// True when the body contains `yield` (not counting nested functions).
    pub is_generator: bool,
    /// The whole `def` statement including decorators.
    pub span: Span,
    /// The function's name token.
    pub name_span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClassDef {
    pub name: Name,
    pub bases: Vec<Expr>,
    pub keywords: Vec<Keyword>,
    pub body: Vec<Stmt>,
    pub decorators: Vec<Expr>,
    pub span: Span,
    pub name_span: Span,
}

/// Python's parameter list: `def f(a, /, b=1, *args, c, d=2, **kwargs)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parameters {
    pub posonly: Vec<Param>,
    /// Positional-or-keyword parameters.
    pub args: Vec<Param>,
    pub vararg: Option<Param>,
    pub kwonly: Vec<Param>,
    pub kwarg: Option<Param>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Name,
    pub annotation: Option<Expr>,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Keyword {
    /// `None` for `**mapping`.
    pub arg: Option<Name>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// The pattern of the expression kinds that hold no other expression and no name: literals
/// and `...`. For the exhaustive matches of the tree's walkers (`ExprKind::Name(_) |
/// literal_expr!() => {}`), so that a new kind of literal is added in one place.
macro_rules! literal_expr {
    () => {
        $crate::syntax::ast::ExprKind::Int(_)
            | $crate::syntax::ast::ExprKind::BigInt(_)
            | $crate::syntax::ast::ExprKind::Float(_)
            | $crate::syntax::ast::ExprKind::Imag(_)
            | $crate::syntax::ast::ExprKind::Str(_)
            | $crate::syntax::ast::ExprKind::Bytes(_)
            | $crate::syntax::ast::ExprKind::Bool(_)
            | $crate::syntax::ast::ExprKind::NoneLit
            | $crate::syntax::ast::ExprKind::Ellipsis
    };
}
pub(crate) use literal_expr;

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Name(Name),
    Int(i64),
    /// An integer literal too large for i64, kept as text.
    BigInt(Rc<str>),
    Float(f64),
    /// Imaginary literal `2j`: the imaginary part.
    Imag(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    /// f-string: literal parts and formatted values, in order.
    FString(Vec<FStringPart>),
    Bool(bool),
    NoneLit,
    Ellipsis,
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Set(Vec<Expr>),
    /// `{k: v, **m}`: `None` key means `**m`.
    Dict(Vec<(Option<Expr>, Expr)>),
    Attribute {
        value: Box<Expr>,
        attr: Name,
        attr_span: Span,
    },
    Subscript {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `a:b:c` inside a subscript.
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    Call {
        func: Box<Expr>,
        args: Vec<Expr>,
        keywords: Vec<Keyword>,
    },
    /// `*x` in a call, list, tuple or assignment target.
    Starred(Box<Expr>),
    BinOp {
        left: Box<Expr>,
        op: BinOp,
        right: Box<Expr>,
    },
    UnaryOp {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    /// `a and b and c`
    BoolOp {
        op: BoolOp,
        values: Vec<Expr>,
    },
    /// `a < b <= c`
    Compare {
        left: Box<Expr>,
        ops: Vec<CmpOp>,
        comparators: Vec<Expr>,
    },
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    Lambda(Rc<FunctionDef>),
    ListComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    SetComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    DictComp {
        key: Box<Expr>,
        value: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    GeneratorExp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `x := value`
    NamedExpr {
        target: Box<Expr>,
        value: Box<Expr>,
    },
    Yield(Option<Box<Expr>>),
    YieldFrom(Box<Expr>),
    Await(Box<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum FStringPart {
    Literal(Rc<str>),
    /// `{value!conversion:format_spec}`; the spec may itself hold replacement fields.
    Formatted {
        value: Expr,
        conversion: Option<char>,
        format_spec: Vec<FStringPart>,
        debug_text: Option<Rc<str>>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub target: Expr,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    MatMul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    LShift,
    RShift,
    BitAnd,
    BitOr,
    BitXor,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::MatMul => "@",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Neg,
    Pos,
    Invert,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    Is,
    IsNot,
    In,
    NotIn,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
        }
    }
}
