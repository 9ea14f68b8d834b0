//! Expressions, parameters, call arguments, annotations and string literals (f-strings
//! included) from tree-sitter nodes.
//!
//! Size: one method per expression kind of tree-sitter-python, with the precedence and f-string
//! fixes that must see the whole expression.

use std::rc::Rc;

use tree_sitter::Node;

use super::literals::{self, Number};
use super::{children, field, field_children, named_children, span_of, token, Field, KindName, Lowerer};
use crate::syntax::ast::{
    self, BinOp, BoolOp, CmpOp, Comprehension, Expr, ExprKind, FStringPart, Keyword, Param, Parameters, Span, UnaryOp,
};

/// `+`, `-`, ... (also the operator of `+=` with its `=` removed).
pub(super) fn binary_op(symbol: &str) -> Option<BinOp> {
    Some(match symbol {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "@" => BinOp::MatMul,
        "/" => BinOp::Div,
        "//" => BinOp::FloorDiv,
        "%" => BinOp::Mod,
        "**" => BinOp::Pow,
        "<<" => BinOp::LShift,
        ">>" => BinOp::RShift,
        "&" => BinOp::BitAnd,
        "|" => BinOp::BitOr,
        "^" => BinOp::BitXor,
        _ => return None,
    })
}

fn compare_op(symbol: &str) -> Option<CmpOp> {
    Some(match symbol {
        "==" => CmpOp::Eq,
        "!=" => CmpOp::NotEq,
        "<" => CmpOp::Lt,
        "<=" => CmpOp::LtE,
        ">" => CmpOp::Gt,
        ">=" => CmpOp::GtE,
        "is" => CmpOp::Is,
        "is not" => CmpOp::IsNot,
        "in" => CmpOp::In,
        "not in" => CmpOp::NotIn,
        _ => return None,
    })
}

/// tree-sitter binds `*` tighter than calls, attributes and subscripts in some contexts
/// (`[*a.b()]` arrives as a call on `(*a).b`); Python binds it loosest. The star is taken
/// off the innermost operand here and put back around the whole postfix chain by `restar`.
fn unstar(expr: Expr) -> (Expr, bool) {
    match expr.kind {
        ExprKind::Starred(inner) => (*inner, true),
        kind => (Expr { kind, span: expr.span }, false),
    }
}

/// Builds the node for `kind`, starting where its (unstarred) base starts, and wraps it
/// in `Starred` when the base carried the star.
fn restar(star: bool, base_span: Span, kind: ExprKind, node: Node) -> Expr {
    if !star {
        return Expr { kind, span: span_of(node) };
    }
    let inner = Expr { kind, span: Span::new(base_span.start as usize, node.end_byte()) };
    Expr { kind: ExprKind::Starred(Box::new(inner)), span: span_of(node) }
}

/// Where a parameter goes in `Parameters`, before `*`/`/` positions are applied.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ParamKind {
    Plain,
    /// `*args`
    Vararg,
    /// `**kwargs`
    Kwarg,
}

/// Python's binding strength of a binary operator.
fn precedence(op: BinOp) -> u8 {
    match op {
        BinOp::BitOr => 1,
        BinOp::BitXor => 2,
        BinOp::BitAnd => 3,
        BinOp::LShift | BinOp::RShift => 4,
        BinOp::Add | BinOp::Sub => 5,
        BinOp::Mul | BinOp::MatMul | BinOp::Div | BinOp::FloorDiv | BinOp::Mod => 6,
        BinOp::Pow => 7,
    }
}

/// Combines `operands[0] ops[0] operands[1] ops[1] ...` by precedence (shunting-yard);
/// `**` groups to the right, the rest to the left. `None` if the counts do not match.
fn by_precedence<T>(operands: Vec<T>, ops: &[BinOp], mut combine: impl FnMut(T, BinOp, T) -> T) -> Option<T> {
    if operands.len() != ops.len() + 1 {
        return None;
    }
    let mut operands = operands.into_iter();
    let mut values: Vec<T> = vec![operands.next()?];
    let mut pending: Vec<BinOp> = Vec::new();
    let mut reduce = |values: &mut Vec<T>, op: BinOp| -> Option<()> {
        let right = values.pop()?;
        let left = values.pop()?;
        values.push(combine(left, op, right));
        Some(())
    };
    for (&op, operand) in ops.iter().zip(operands) {
        while let Some(&top) = pending.last() {
            let binds_first = precedence(top) > precedence(op) || (precedence(top) == precedence(op) && op != BinOp::Pow);
            if !binds_first {
                break;
            }
            pending.pop();
            reduce(&mut values, top)?;
        }
        pending.push(op);
        values.push(operand);
    }
    while let Some(op) = pending.pop() {
        reduce(&mut values, op)?;
    }
    let result = values.pop()?;
    values.is_empty().then_some(result)
}

/// Gathers the pieces of a (possibly implicitly concatenated) string literal.
#[derive(Default)]
struct StringParts {
    /// Literal text not yet moved into `parts`.
    text: String,
    bytes: Vec<u8>,
    parts: Vec<FStringPart>,
    saw_bytes: bool,
    saw_text: bool,
    saw_formatted: bool,
}

impl StringParts {
    fn flush_text(&mut self) {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            match self.parts.last_mut() {
                Some(FStringPart::Literal(previous)) => {
                    let mut joined = previous.to_string();
                    joined.push_str(&text);
                    *previous = Rc::from(joined);
                }
                _ => self.parts.push(FStringPart::Literal(Rc::from(text))),
            }
        }
    }
}

impl Lowerer<'_> {
    pub(super) fn lower_expr(&mut self, node: Node) -> Expr {
        match self.nested(node, |this| this.lower_expr_unguarded(node)) {
            Some(expr) => expr,
            None => Expr { kind: ExprKind::NoneLit, span: span_of(node) },
        }
    }

    fn boxed(&mut self, node: Node) -> Box<Expr> {
        Box::new(self.lower_expr(node))
    }

    fn boxed_field(&mut self, node: Node, name: Field) -> Box<Expr> {
        Box::new(self.lower_field(node, name))
    }

    /// The node's only named child, lowered.
    fn lower_only_child(&mut self, node: Node) -> Expr {
        match named_children(node).first() {
            Some(&child) => self.lower_expr(child),
            None => self.invalid(node, "invalid syntax"),
        }
    }

    fn lower_all(&mut self, nodes: &[Node]) -> Vec<Expr> {
        nodes.iter().map(|&node| self.lower_expr(node)).collect()
    }

    /// Dispatches on the node kind. Kept to calls only: in unoptimised builds every local of
    /// every arm would get its own stack slot, and this frame repeats once per nesting level.
    fn lower_expr_unguarded(&mut self, node: Node) -> Expr {
        match node.kind_name() {
            "identifier" | "true" | "false" | "none" | "ellipsis" | "integer" | "float" => self.lower_atom(node),
            "string" | "concatenated_string" => self.lower_string(node),
            // CPython gives a parenthesized expression the span of its contents.
            "parenthesized_expression" => self.lower_only_child(node),
            "tuple" | "expression_list" | "pattern_list" | "tuple_pattern" | "list" | "list_pattern" | "set" => self.lower_sequence(node),
            "dictionary" => self.lower_dictionary(node),
            "list_splat" | "list_splat_pattern" | "parenthesized_list_splat" => self.lower_starred(node),
            "attribute" => self.lower_attribute(node),
            "subscript" => self.lower_subscript(node),
            "slice" => self.lower_slice(node),
            "call" => self.lower_call(node),
            "binary_operator" => self.lower_binary_chain(node),
            "unary_operator" | "not_operator" => self.lower_unary(node),
            "boolean_operator" => self.lower_boolean_chain(node),
            "comparison_operator" => self.lower_comparison(node),
            "conditional_expression" => self.lower_conditional(node),
            "named_expression" => self.lower_named(node),
            "lambda" => self.lower_lambda(node),
            "list_comprehension" | "set_comprehension" | "generator_expression" | "dictionary_comprehension" => {
                self.lower_comprehension(node)
            }
            "yield" => self.lower_yield(node),
            "await" => self.lower_await(node),
            // `type` nodes appear where tree-sitter expects an annotation.
            "type" => self.lower_type(node),
            "keyword_argument" => self.invalid(node, "expected argument value expression"),
            _ => self.invalid(node, "invalid syntax"),
        }
    }

    fn lower_atom(&mut self, node: Node) -> Expr {
        let kind = match node.kind_name() {
            "identifier" => ExprKind::Name(self.name(node)),
            "true" => ExprKind::Bool(true),
            "false" => ExprKind::Bool(false),
            "ellipsis" => ExprKind::Ellipsis,
            "integer" | "float" => {
                let text = self.text(node);
                let parsed = if node.kind_name() == "integer" { literals::parse_integer(text) } else { literals::parse_float(text) };
                match parsed {
                    Ok(Number::Int(value)) => ExprKind::Int(value),
                    Ok(Number::BigInt(digits)) => ExprKind::BigInt(Rc::from(digits)),
                    Ok(Number::Float(value)) => ExprKind::Float(value),
                    Ok(Number::Imag(value)) => ExprKind::Imag(value),
                    Err(message) => return self.invalid(node, message),
                }
            }
            _ => ExprKind::NoneLit,
        };
        Expr { kind, span: span_of(node) }
    }

    fn lower_sequence(&mut self, node: Node) -> Expr {
        let items = named_children(node);
        // tree-sitter calls the parenthesized target `(a) = 1` a tuple pattern.
        if let [single] = items[..] {
            if node.kind_name() == "tuple_pattern" && token(node, ",").is_none() {
                return self.lower_expr(single);
            }
        }
        let elements = self.lower_all(&items);
        let kind = match node.kind_name() {
            "list" | "list_pattern" => ExprKind::List(elements),
            "set" => ExprKind::Set(elements),
            _ => ExprKind::Tuple(elements),
        };
        Expr { kind, span: span_of(node) }
    }

    fn lower_dictionary(&mut self, node: Node) -> Expr {
        let mut entries = Vec::new();
        for entry in named_children(node) {
            match entry.kind_name() {
                "pair" => {
                    let key = self.lower_field(entry, Field::Key);
                    let value = self.lower_field(entry, Field::Value);
                    entries.push((Some(key), value));
                }
                "dictionary_splat" => entries.push((None, self.lower_only_child(entry))),
                _ => entries.push((None, self.invalid(entry, "invalid syntax"))),
            }
        }
        Expr { kind: ExprKind::Dict(entries), span: span_of(node) }
    }

    fn lower_starred(&mut self, node: Node) -> Expr {
        let value = Box::new(self.lower_only_child(node));
        Expr { kind: ExprKind::Starred(value), span: span_of(node) }
    }

    fn lower_attribute(&mut self, node: Node) -> Expr {
        let (value, star) = unstar(self.lower_field(node, Field::Object));
        let (attr, attr_span) = match field(node, Field::Attribute) {
            Some(attribute) => (self.name(attribute), span_of(attribute)),
            None => (Rc::from(""), Span::new(node.end_byte(), node.end_byte())),
        };
        restar(star, value.span, ExprKind::Attribute { value: Box::new(value), attr, attr_span }, node)
    }

    fn lower_subscript(&mut self, node: Node) -> Expr {
        let (value, star) = unstar(self.lower_field(node, Field::Value));
        let value_span = value.span;
        let value = Box::new(value);
        let indices = field_children(node, Field::Subscript);
        let trailing_comma = indices.last().and_then(|last| last.next_sibling()).filter(|next| next.kind_name() == ",");
        let index = match indices.as_slice() {
            // `x[*a]` indexes with a one-element tuple, as `x[*a,]` would.
            [single] if trailing_comma.is_none() => {
                let index = self.lower_expr(*single);
                match index.kind {
                    ExprKind::Starred(_) => Expr { span: index.span, kind: ExprKind::Tuple(vec![index]) },
                    _ => index,
                }
            }
            [] => self.invalid(node, "invalid syntax"),
            // CPython's tuple runs from the first element through a trailing comma.
            [first, .., last] | [first @ last] => {
                let span = Span::new(first.start_byte(), trailing_comma.unwrap_or(*last).end_byte());
                Expr { kind: ExprKind::Tuple(self.lower_all(&indices)), span }
            }
        };
        restar(star, value_span, ExprKind::Subscript { value, index: Box::new(index) }, node)
    }

    fn lower_call(&mut self, node: Node) -> Expr {
        let (func, star) = unstar(self.lower_field(node, Field::Function));
        let func_span = func.span;
        let func = Box::new(func);
        let (args, keywords) = match field(node, Field::Arguments) {
            Some(arguments) if arguments.kind_name() == "argument_list" => self.lower_arguments(arguments),
            Some(generator) => (vec![self.lower_expr(generator)], Vec::new()),
            None => (Vec::new(), Vec::new()),
        };
        restar(star, func_span, ExprKind::Call { func, args, keywords }, node)
    }

    fn lower_unary(&mut self, node: Node) -> Expr {
        let op = if node.kind_name() == "not_operator" {
            UnaryOp::Not
        } else {
            match field(node, Field::Operator).map(|op| op.kind_name()) {
                Some("-") => UnaryOp::Neg,
                Some("+") => UnaryOp::Pos,
                Some("~") => UnaryOp::Invert,
                _ => return self.invalid(node, "invalid syntax"),
            }
        };
        let operand = self.boxed_field(node, Field::Argument);
        Expr { kind: ExprKind::UnaryOp { op, operand }, span: span_of(node) }
    }

    fn lower_conditional(&mut self, node: Node) -> Expr {
        let [body, test, orelse] = named_children(node)[..] else {
            return self.invalid(node, "expected 'else' after 'if' expression");
        };
        let kind = ExprKind::IfExp { body: self.boxed(body), test: self.boxed(test), orelse: self.boxed(orelse) };
        Expr { kind, span: span_of(node) }
    }

    fn lower_named(&mut self, node: Node) -> Expr {
        let target = self.boxed_field(node, Field::Name);
        let value = self.boxed_field(node, Field::Value);
        Expr { kind: ExprKind::NamedExpr { target, value }, span: span_of(node) }
    }

    fn lower_comprehension(&mut self, node: Node) -> Expr {
        let kind = if node.kind_name() == "dictionary_comprehension" {
            let Some(pair) = field(node, Field::Body).filter(|body| body.kind_name() == "pair") else {
                return self.invalid(node, "invalid syntax");
            };
            let key = self.boxed_field(pair, Field::Key);
            let value = self.boxed_field(pair, Field::Value);
            let generators = self.lower_comprehension_clauses(node);
            ExprKind::DictComp { key, value, generators }
        } else {
            let elt = self.boxed_field(node, Field::Body);
            let generators = self.lower_comprehension_clauses(node);
            match node.kind_name() {
                "list_comprehension" => ExprKind::ListComp { elt, generators },
                "set_comprehension" => ExprKind::SetComp { elt, generators },
                _ => ExprKind::GeneratorExp { elt, generators },
            }
        };
        Expr { kind, span: span_of(node) }
    }

    fn lower_yield(&mut self, node: Node) -> Expr {
        self.saw_yield(node);
        let value = named_children(node).first().map(|&value| self.boxed(value));
        let kind = match (token(node, "from"), value) {
            (Some(_), Some(value)) => ExprKind::YieldFrom(value),
            (Some(_), None) => return self.invalid(node, "invalid syntax"),
            (None, value) => ExprKind::Yield(value),
        };
        Expr { kind, span: span_of(node) }
    }

    fn lower_await(&mut self, node: Node) -> Expr {
        let value = Box::new(self.lower_only_child(node));
        Expr { kind: ExprKind::Await(value), span: span_of(node) }
    }

    /// A tree of unparenthesized binary operations, rebuilt with Python's precedence:
    /// tree-sitter-python ranks `^` above `&` (Python: `&` above `^`), so its nesting
    /// cannot be kept. Operands and operators are read off in source order without
    /// recursion, so a long sum costs no stack per operator; its depth in the AST counts
    /// against `MAX_AST_DEPTH`.
    fn lower_binary_chain(&mut self, node: Node) -> Expr {
        enum Item<'tree> {
            Visit(Option<Node<'tree>>),
            /// The operator of this `binary_operator`, between its operands.
            Operator(Node<'tree>),
        }
        let mut operands: Vec<Node> = Vec::new();
        let mut ops: Vec<BinOp> = Vec::new();
        let mut pending = vec![Item::Visit(Some(node))];
        while let Some(item) = pending.pop() {
            match item {
                Item::Visit(Some(current)) if current.kind_name() == "binary_operator" => {
                    pending.push(Item::Visit(field(current, Field::Right)));
                    pending.push(Item::Operator(current));
                    pending.push(Item::Visit(field(current, Field::Left)));
                }
                Item::Visit(Some(current)) => operands.push(current),
                Item::Operator(current) => match field(current, Field::Operator).and_then(|op| binary_op(op.kind_name())) {
                    Some(op) => ops.push(op),
                    None => return self.invalid(current, "invalid syntax"),
                },
                Item::Visit(None) => return self.invalid(node, "invalid syntax"),
            }
        }
        let chain_depth = by_precedence(vec![1u32; operands.len()], &ops, |left, _, right| 1 + left.max(right)).unwrap_or(0);
        let Some(values) = self.deeper_by(node, chain_depth, |this| {
            let mut values: Vec<(Expr, Span)> = Vec::with_capacity(operands.len());
            for &operand in &operands {
                // Each operand keeps its source span, parentheses included: CPython spans
                // a binary operation from its left operand's first token to its right's last.
                values.push((this.lower_expr(operand), span_of(operand)));
            }
            values
        }) else {
            return Expr { kind: ExprKind::NoneLit, span: span_of(node) };
        };
        let mut values = values;
        // `[*a + b]`: tree-sitter stars the first operand; Python the whole operation.
        let mut star = false;
        if let Some(first) = values.first_mut() {
            let placeholder = Expr { kind: ExprKind::NoneLit, span: first.1 };
            let (unstarred, was_starred) = unstar(std::mem::replace(&mut first.0, placeholder));
            star = was_starred;
            if star {
                first.1 = Span::new(unstarred.span.start as usize, first.1.end as usize);
            }
            first.0 = unstarred;
        }
        let combined = by_precedence(values, &ops, |(left, left_span), op, (right, right_span)| {
            let span = left_span.to(right_span);
            (Expr { kind: ExprKind::BinOp { left: Box::new(left), op, right: Box::new(right) }, span }, span)
        });
        match combined {
            Some((result, _)) if star => Expr { kind: ExprKind::Starred(Box::new(result)), span: span_of(node) },
            Some((result, _)) => result,
            None => self.invalid(node, "invalid syntax"),
        }
    }

    /// `a and b and c` nests to the left in tree-sitter; CPython flattens it to one `BoolOp`.
    fn lower_boolean_chain(&mut self, node: Node) -> Expr {
        let op_of = |node: Node| match field(node, Field::Operator).map(|op| op.kind_name()) {
            Some("and") => Some(BoolOp::And),
            Some("or") => Some(BoolOp::Or),
            _ => None,
        };
        let Some(op) = op_of(node) else {
            return self.invalid(node, "invalid syntax");
        };
        let mut spine = vec![node];
        let mut leftmost = field(node, Field::Left);
        while let Some(left) = leftmost.filter(|left| left.kind_name() == "boolean_operator" && op_of(*left) == Some(op)) {
            spine.push(left);
            leftmost = field(left, Field::Left);
        }
        let mut values = Vec::with_capacity(spine.len() + 1);
        values.push(match leftmost {
            Some(left) => self.lower_expr(left),
            None => self.invalid(node, "invalid syntax"),
        });
        for &operator_node in spine.iter().rev() {
            values.push(self.lower_field(operator_node, Field::Right));
        }
        Expr { kind: ExprKind::BoolOp { op, values }, span: span_of(node) }
    }

    fn lower_comparison(&mut self, node: Node) -> Expr {
        let mut operands = Vec::new();
        let mut ops = Vec::new();
        for child in children(node) {
            if child.is_named() {
                operands.push(self.lower_expr(child));
                continue;
            }
            // `not in` and `is not` are single tokens with a normalised kind.
            let op = match child.kind_name() {
                "<>" => {
                    self.error(span_of(child), "invalid syntax");
                    Some(CmpOp::NotEq)
                }
                kind => compare_op(kind),
            };
            match op {
                Some(op) => ops.push(op),
                None => {
                    self.invalid(child, "invalid syntax");
                }
            }
        }
        if operands.len() != ops.len() + 1 || ops.is_empty() {
            return self.invalid(node, "invalid syntax");
        }
        let mut operands = operands.into_iter();
        let left = match operands.next() {
            Some(left) => Box::new(left),
            None => return self.invalid(node, "invalid syntax"),
        };
        Expr { kind: ExprKind::Compare { left, ops, comparators: operands.collect() }, span: span_of(node) }
    }

    /// `x[a:b:c]`: a piece is filled by the expression after the same number of colons.
    fn lower_slice(&mut self, node: Node) -> Expr {
        let mut pieces: [Option<Box<Expr>>; 3] = [None, None, None];
        let mut colons = 0;
        for child in children(node) {
            if !child.is_named() {
                if child.kind_name() == ":" {
                    colons += 1;
                }
                continue;
            }
            let expr = self.boxed(child);
            match pieces.get_mut(colons) {
                Some(slot @ None) => *slot = Some(expr),
                _ => {
                    self.invalid(child, "invalid syntax");
                }
            }
        }
        let [lower, upper, step] = pieces;
        Expr { kind: ExprKind::Slice { lower, upper, step }, span: span_of(node) }
    }

    /// Call arguments and class bases: positional ones (with `*x`) and keywords (with `**m`).
    pub(super) fn lower_arguments(&mut self, node: Node) -> (Vec<Expr>, Vec<Keyword>) {
        let mut args = Vec::new();
        let mut keywords = Vec::new();
        let mut saw_keyword = false;
        let mut saw_double_star = false;
        for argument in named_children(node) {
            match argument.kind_name() {
                "keyword_argument" => {
                    saw_keyword = true;
                    let arg = field(argument, Field::Name).map(|name| self.name(name));
                    let value = self.lower_field(argument, Field::Value);
                    keywords.push(Keyword { arg, value, span: span_of(argument) });
                }
                "dictionary_splat" => {
                    saw_double_star = true;
                    let value = self.lower_only_child(argument);
                    keywords.push(Keyword { arg: None, value, span: span_of(argument) });
                }
                kind => {
                    let starred = kind == "list_splat";
                    if saw_double_star {
                        let message = if starred {
                            "iterable argument unpacking follows keyword argument unpacking"
                        } else {
                            "positional argument follows keyword argument unpacking"
                        };
                        self.error(span_of(argument), message);
                    } else if saw_keyword && !starred {
                        self.error(span_of(argument), "positional argument follows keyword argument");
                    }
                    args.push(self.lower_expr(argument));
                }
            }
        }
        (args, keywords)
    }

    /// `for` and `if` clauses of a comprehension, in order.
    fn lower_comprehension_clauses(&mut self, node: Node) -> Vec<Comprehension> {
        let mut generators: Vec<Comprehension> = Vec::new();
        for clause in named_children(node) {
            match clause.kind_name() {
                "for_in_clause" => {
                    let target = self.lower_field(clause, Field::Left);
                    let iters = field_children(clause, Field::Right).into_iter().filter(|right| right.is_named()).collect::<Vec<_>>();
                    let iter = match iters.as_slice() {
                        [single] => self.lower_expr(*single),
                        [] => self.invalid(clause, "invalid syntax"),
                        // `[x for x in 1, 2]` is Python 2; `f(x for x in y, 1)` arrives so too.
                        [first, .., last] => {
                            let span = Span::new(first.start_byte(), last.end_byte());
                            let is_call_argument = node.kind_name() == "generator_expression"
                                && node.parent().is_some_and(|parent| parent.kind_name() == "call");
                            if is_call_argument {
                                self.error(span_of(node), "Generator expression must be parenthesized");
                            } else {
                                self.error(span, "invalid syntax");
                            }
                            Expr { kind: ExprKind::Tuple(self.lower_all(&iters)), span }
                        }
                    };
                    generators.push(Comprehension { target, iter, ifs: Vec::new() });
                }
                "if_clause" => {
                    let condition = self.lower_only_child(clause);
                    match generators.last_mut() {
                        Some(generator) => generator.ifs.push(condition),
                        None => {
                            self.invalid(clause, "invalid syntax");
                        }
                    }
                }
                _ => {}
            }
        }
        generators
    }

    fn lower_lambda(&mut self, node: Node) -> Expr {
        let params = match field(node, Field::Parameters) {
            Some(parameters) => self.lower_parameters(parameters),
            None => Parameters::default(),
        };
        let (body, is_generator) = self.in_function(|this| {
            let value = this.lower_field(node, Field::Body);
            let span = value.span;
            vec![ast::Stmt { kind: ast::StmtKind::Return(Some(value)), span }]
        });
        let keyword_span = children(node).first().map_or(span_of(node), |keyword| span_of(*keyword));
        let function = Rc::new(ast::FunctionDef {
            name: Rc::from("<lambda>"),
            params,
            body,
            decorators: Vec::new(),
            returns: None,
            is_async: false,
            is_generator,
            span: span_of(node),
            name_span: keyword_span,
        });
        Expr { kind: ExprKind::Lambda(function), span: span_of(node) }
    }

    /// `(a, /, b=1, *args, c, d=2, **kwargs)`, for `def` and `lambda` alike.
    pub(super) fn lower_parameters(&mut self, node: Node) -> Parameters {
        let mut params = Parameters::default();
        let mut after_star = false;
        let mut bare_star: Option<Node> = None;
        let mut saw_default = false;
        for parameter in named_children(node) {
            let (kind, name_node) = match parameter.kind_name() {
                "positional_separator" => {
                    if after_star || !params.posonly.is_empty() {
                        self.error(span_of(parameter), "/ must be ahead of *");
                    }
                    params.posonly.append(&mut params.args);
                    continue;
                }
                "keyword_separator" => {
                    if after_star {
                        self.error(span_of(parameter), "* argument may appear only once");
                    }
                    after_star = true;
                    bare_star = Some(parameter);
                    continue;
                }
                "identifier" => (ParamKind::Plain, Some(parameter)),
                "default_parameter" | "typed_default_parameter" => {
                    (ParamKind::Plain, field(parameter, Field::Name).filter(|name| name.kind_name() == "identifier"))
                }
                "typed_parameter" => match named_children(parameter).first() {
                    Some(&inner) if inner.kind_name() == "identifier" => (ParamKind::Plain, Some(inner)),
                    Some(&inner) if inner.kind_name() == "list_splat_pattern" => {
                        (ParamKind::Vararg, named_children(inner).first().copied())
                    }
                    Some(&inner) if inner.kind_name() == "dictionary_splat_pattern" => {
                        (ParamKind::Kwarg, named_children(inner).first().copied())
                    }
                    _ => (ParamKind::Plain, None),
                },
                "list_splat_pattern" => (ParamKind::Vararg, named_children(parameter).first().copied()),
                "dictionary_splat_pattern" => (ParamKind::Kwarg, named_children(parameter).first().copied()),
                _ => (ParamKind::Plain, None),
            };
            let Some(name_node) = name_node.filter(|name| name.kind_name() == "identifier") else {
                self.invalid(parameter, "invalid syntax");
                continue;
            };
            let annotation_node = field(parameter, Field::Type);
            let annotation = annotation_node.map(|annotation| self.lower_type(annotation));
            let default = field(parameter, Field::Value).map(|value| self.lower_expr(value));
            // CPython's parameter span: the name and its annotation (with any parentheses
            // around it), not the default.
            let end = annotation_node.map_or(name_node.end_byte(), |annotation| annotation.end_byte());
            let span = Span::new(name_node.start_byte(), end.max(name_node.end_byte()));
            let has_default = default.is_some();
            let param = Param { name: self.name(name_node), annotation, default, span };
            if params.kwarg.is_some() {
                self.error(span_of(parameter), "arguments cannot follow var-keyword argument");
            }
            match kind {
                ParamKind::Vararg => {
                    if after_star {
                        self.error(span_of(parameter), "* argument may appear only once");
                    }
                    after_star = true;
                    bare_star = None;
                    params.vararg = Some(param);
                }
                ParamKind::Kwarg => {
                    if let Some(star) = bare_star.take().filter(|_| params.kwonly.is_empty()) {
                        self.error(span_of(star), "named arguments must follow bare *");
                    }
                    params.kwarg = Some(param);
                }
                _ if after_star => {
                    bare_star = None;
                    params.kwonly.push(param);
                }
                _ => {
                    if saw_default && !has_default {
                        self.error(span_of(parameter), "parameter without a default follows parameter with a default");
                    }
                    saw_default |= has_default;
                    params.args.push(param);
                }
            }
        }
        if let Some(star) = bare_star {
            self.error(span_of(star), "named arguments must follow bare *");
        }
        params
    }

    /// An annotation. tree-sitter parses some as `type` trees (`list[int] | None`) rather
    /// than expressions; they lower to the expression Python evaluates.
    pub(super) fn lower_type(&mut self, node: Node) -> Expr {
        match self.nested(node, |this| this.lower_type_unguarded(node)) {
            Some(expr) => expr,
            None => Expr { kind: ExprKind::NoneLit, span: span_of(node) },
        }
    }

    fn lower_type_unguarded(&mut self, node: Node) -> Expr {
        let span = span_of(node);
        let parts = named_children(node);
        let kind = match node.kind_name() {
            "type" => {
                return match parts.as_slice() {
                    [single] => self.lower_type(*single),
                    _ => self.invalid(node, "invalid syntax"),
                }
            }
            "generic_type" => match parts.as_slice() {
                [value, parameters] if parameters.kind_name() == "type_parameter" => {
                    let value = Box::new(self.lower_type(*value));
                    let arguments = named_children(*parameters);
                    let last = arguments.last().copied().unwrap_or(*parameters);
                    let trailing_comma = last.next_sibling().filter(|next| next.kind_name() == ",");
                    let index = match arguments.as_slice() {
                        [single] if trailing_comma.is_none() => {
                            let index = self.lower_type(*single);
                            match index.kind {
                                ExprKind::Starred(_) => Expr { span: index.span, kind: ExprKind::Tuple(vec![index]) },
                                _ => index,
                            }
                        }
                        _ => {
                            let elements = arguments.iter().map(|&argument| self.lower_type(argument)).collect();
                            let start = arguments.first().map_or(parameters.start_byte(), |first| first.start_byte());
                            let span = Span::new(start, trailing_comma.unwrap_or(last).end_byte());
                            Expr { kind: ExprKind::Tuple(elements), span }
                        }
                    };
                    ExprKind::Subscript { value, index: Box::new(index) }
                }
                _ => return self.invalid(node, "invalid syntax"),
            },
            "union_type" => return self.lower_union(node),
            "member_type" => match parts.as_slice() {
                [value, attribute] => ExprKind::Attribute {
                    value: Box::new(self.lower_type(*value)),
                    attr: self.name(*attribute),
                    attr_span: span_of(*attribute),
                },
                _ => return self.invalid(node, "invalid syntax"),
            },
            "splat_type" => match parts.as_slice() {
                [value] => ExprKind::Starred(Box::new(self.lower_type(*value))),
                _ => return self.invalid(node, "invalid syntax"),
            },
            "constrained_type" => return self.invalid(node, "invalid syntax"),
            _ => return self.lower_expr(node),
        };
        Expr { kind, span }
    }

    /// `A | B | C`: tree-sitter nests `union_type` either way; Python's `|` is left-assoc.
    fn lower_union(&mut self, node: Node) -> Expr {
        let mut operands = Vec::new();
        let mut pending = vec![node];
        while let Some(current) = pending.pop() {
            let is_union = |node: Node| {
                node.kind_name() == "union_type"
                    || (node.kind_name() == "binary_operator" && field(node, Field::Operator).is_some_and(|op| op.kind_name() == "|"))
            };
            let inner = match current.kind_name() {
                "type" => named_children(current).first().copied().filter(|inner| is_union(*inner)),
                _ => Some(current).filter(|current| is_union(*current)),
            };
            match inner {
                Some(union) => pending.extend(named_children(union).into_iter().rev()),
                None => operands.push(current),
            }
        }
        let chain_depth = u32::try_from(operands.len()).unwrap_or(u32::MAX);
        let lowered = self.deeper_by(node, chain_depth, |this| {
            let mut operands = operands.iter();
            let mut result = match operands.next() {
                Some(&first) => this.lower_type(first),
                None => this.invalid(node, "invalid syntax"),
            };
            for &operand in operands {
                let right = this.lower_type(operand);
                let span = Span::new(result.span.start as usize, right.span.end as usize);
                result = Expr { kind: ExprKind::BinOp { left: Box::new(result), op: BinOp::BitOr, right: Box::new(right) }, span };
            }
            result
        });
        lowered.unwrap_or(Expr { kind: ExprKind::NoneLit, span: span_of(node) })
    }

    /// A `string` or `concatenated_string`: `Str`, `Bytes` or, if any part is an f-string,
    /// `FString` with adjacent literal parts merged.
    fn lower_string(&mut self, node: Node) -> Expr {
        let kind = self.lower_string_kind(node);
        Expr { kind, span: span_of(node) }
    }

    fn lower_string_kind(&mut self, node: Node) -> ExprKind {
        let pieces = if node.kind_name() == "concatenated_string" { named_children(node) } else { vec![node] };
        let mut parts = StringParts::default();
        for piece in pieces {
            self.lower_string_piece(piece, &mut parts);
        }
        if parts.saw_bytes && (parts.saw_text || parts.saw_formatted) {
            return self.invalid(node, "cannot mix bytes and nonbytes literals").kind;
        }
        if parts.saw_bytes {
            return ExprKind::Bytes(Rc::from(parts.bytes));
        }
        if parts.saw_formatted {
            parts.flush_text();
            return ExprKind::FString(parts.parts);
        }
        ExprKind::Str(Rc::from(parts.text))
    }

    fn lower_string_piece(&mut self, piece: Node, parts: &mut StringParts) {
        let tokens = children(piece);
        let (Some(start), Some(end)) = (tokens.first(), tokens.last()) else {
            self.invalid(piece, "invalid syntax");
            return;
        };
        if start.kind_name() != "string_start" || end.kind_name() != "string_end" || tokens.len() < 2 {
            self.invalid(piece, "invalid syntax");
            return;
        }
        let start_text = self.text(*start);
        let prefix = literals::string_prefix(start_text);
        // tree-sitter-python's scanner can fold a raw string's leading `\"` into the
        // `string_end` token (`r"\""`): only its last quote characters close the string.
        let quote_len = start_text.trim_start_matches(|c: char| c.is_ascii_alphabetic()).len();
        let body_start = start.end_byte();
        let body_end = end.end_byte().saturating_sub(quote_len).max(body_start);
        if prefix.bytes {
            parts.saw_bytes = true;
            let body = self.source.get(body_start..body_end).unwrap_or("");
            if let Err(message) = literals::decode_bytes(body, prefix.raw, &mut parts.bytes) {
                self.error(span_of(piece), message);
            }
            return;
        }
        if !prefix.formatted {
            parts.saw_text = true;
            let body = self.source.get(body_start..body_end).unwrap_or("");
            if let Err(message) = literals::decode_str(body, prefix.raw, false, &mut parts.text) {
                self.error(span_of(piece), message);
            }
            return;
        }
        parts.saw_formatted = true;
        let mut literal_start = body_start;
        for child in &tokens[1..tokens.len() - 1] {
            if child.kind_name() != "interpolation" {
                continue;
            }
            self.decode_fstring_literal(literal_start, child.start_byte(), prefix.raw, piece, &mut parts.text);
            parts.flush_text();
            let formatted = self.lower_interpolation(*child, prefix.raw);
            parts.parts.push(formatted);
            literal_start = child.end_byte();
        }
        self.decode_fstring_literal(literal_start, body_end, prefix.raw, piece, &mut parts.text);
    }

    fn decode_fstring_literal(&mut self, start: usize, end: usize, raw: bool, piece: Node, out: &mut String) {
        let text = self.source.get(start..end).unwrap_or("");
        if let Err(message) = literals::decode_str(text, raw, true, out) {
            self.error(span_of(piece), message);
        }
    }

    /// `{value!r:spec}` in an f-string, or a `{...}` inside a format spec.
    ///
    /// `{x=}` keeps its source text in `debug_text`; with neither a conversion nor a format
    /// spec, Python formats the value with `repr`, so `conversion` is then `Some('r')`.
    fn lower_interpolation(&mut self, node: Node, raw: bool) -> FStringPart {
        let value = match field(node, Field::Expression) {
            Some(expression) => self.lower_expr(expression),
            None => self.invalid(node, "f-string: valid expression required before '}'"),
        };
        let conversion_node = field(node, Field::TypeConversion);
        let spec_node = field(node, Field::FormatSpecifier);
        let conversion = conversion_node.and_then(|conversion| {
            let letter = self.text(conversion).trim_start_matches('!').chars().next();
            match letter {
                Some(letter @ ('s' | 'r' | 'a')) => Some(letter),
                _ => {
                    let shown = letter.map_or_else(String::new, String::from);
                    self.error(span_of(conversion), format!("f-string: invalid conversion character '{shown}': expected 's', 'r', or 'a'"));
                    None
                }
            }
        });
        let format_spec = spec_node.map(|spec| self.lower_format_spec(spec, raw)).unwrap_or_default();
        let debug_text = token(node, "=").and_then(|_| {
            let open = token(node, "{")?;
            let end = conversion_node.or(spec_node).or_else(|| token(node, "}")).map_or(node.end_byte(), |end| end.start_byte());
            self.source.get(open.end_byte()..end).map(Rc::from)
        });
        let conversion = match conversion {
            None if debug_text.is_some() && spec_node.is_none() => Some('r'),
            conversion => conversion,
        };
        FStringPart::Formatted { value, conversion, format_spec, debug_text }
    }

    /// The text after `:` in a replacement field; may itself hold replacement fields.
    fn lower_format_spec(&mut self, spec: Node, raw: bool) -> Vec<FStringPart> {
        let mut parts = StringParts::default();
        let tokens = children(spec);
        let mut literal_start = token(spec, ":").map_or(spec.start_byte(), |colon| colon.end_byte());
        for child in tokens {
            if child.kind_name() != "format_expression" {
                continue;
            }
            self.decode_fstring_literal(literal_start, child.start_byte(), raw, spec, &mut parts.text);
            parts.flush_text();
            let nested = self.nested(child, |this| this.lower_interpolation(child, raw));
            parts.parts.extend(nested);
            literal_start = child.end_byte();
        }
        self.decode_fstring_literal(literal_start, spec.end_byte(), raw, spec, &mut parts.text);
        parts.flush_text();
        parts.parts
    }
}
