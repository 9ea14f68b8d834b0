//! `match` statements, lowered to what the interpreter needs of them without modelling
//! patterns: the subject is evaluated, then each case is a branch taken on an unknown
//! condition, with the names its pattern binds unknown. A trailing irrefutable case
//! (`case _:`, `case x:`) is the `else`, and a case of literals on a name subject
//! (`case "sgd" | "adam":`) is a comparison, so a known subject takes its own branch.
//!
//! ```text
//! match command:              command
//!     case Point(x=0, y=y0):  if <unknown>: y0 = <unknown>; ...
//!     case [first, *rest]:    elif <unknown>: first = <unknown>; rest = <unknown>; ...
//!     case other:             else: other = command; ...
//! ```

use tree_sitter::Node;

use super::{field, named_children, span_of, statement_span, Field, KindName, Lowerer};
use crate::syntax::ast::{BoolOp, CmpOp, Expr, ExprKind, Name, Stmt, StmtKind};

impl<'src> Lowerer<'src> {
    /// The statements run in an `if True:` block, since one statement stands for the match.
    pub(super) fn lower_match(&mut self, node: Node) -> StmtKind {
        let span = statement_span(node);
        let children = named_children(node);
        let mut out = Vec::new();
        let mut subject = None;
        for child in children.iter().filter(|c| c.kind_name() != "block" && c.kind_name() != "comment") {
            let e = self.lower_expr(*child);
            subject = Some(e.clone());
            out.push(Stmt { kind: StmtKind::Expr(e), span });
        }
        let single_subject =
            subject.filter(|s| matches!(s.kind, ExprKind::Name(_)) && children.iter().filter(|c| c.kind_name() != "block").count() == 1);
        let cases: Vec<Node> = children
            .iter()
            .filter(|c| c.kind_name() == "block")
            .flat_map(|b| named_children(*b))
            .filter(|c| c.kind_name() == "case_clause")
            .collect();
        let mut chain: Vec<Stmt> = Vec::new();
        for case in cases.iter().rev() {
            let patterns: Vec<Node> = named_children(*case).into_iter().filter(|c| c.kind_name() == "case_pattern").collect();
            let mut names = Vec::new();
            for p in &patterns {
                self.pattern_captures(*p, &mut names);
            }
            let guarded = named_children(*case).iter().any(|c| c.kind_name() == "if_clause");
            let irrefutable = !guarded && patterns.len() == 1 && self.is_irrefutable(patterns[0]);
            let case_span = span_of(*case);
            let unknown = Expr { kind: ExprKind::Await(Box::new(Expr { kind: ExprKind::Ellipsis, span: case_span })), span: case_span };
            // `case 1:`, `case "sgd" | "adam":` on a name: a comparison, so a known subject
            // takes its own branch.
            let literal_test = match (&single_subject, guarded) {
                (Some(subject), false) => self.literal_test(subject, &patterns),
                _ => None,
            };
            let test = literal_test.unwrap_or_else(|| unknown.clone());
            let mut body: Vec<Stmt> = names
                .into_iter()
                .map(|name| {
                    let value = match (&single_subject, irrefutable) {
                        (Some(s), true) => s.clone(),
                        _ => unknown.clone(),
                    };
                    let target = Expr { kind: ExprKind::Name(name), span: case_span };
                    Stmt { kind: StmtKind::Assign { targets: vec![target], value }, span: case_span }
                })
                .collect();
            body.extend(self.lower_block(field(*case, Field::Consequence), *case, "'case' statement"));
            chain = if irrefutable && chain.is_empty() {
                body
            } else {
                vec![Stmt { kind: StmtKind::If { test, body, orelse: chain }, span: case_span }]
            };
        }
        out.extend(chain);
        StmtKind::If { test: Expr { kind: ExprKind::Bool(true), span }, body: out, orelse: Vec::new() }
    }

    /// `subject == a or subject == b` for a case whose patterns are all literals (strings,
    /// numbers, `True`, `False`, `None`); `None` for any other pattern.
    fn literal_test(&mut self, subject: &Expr, patterns: &[Node]) -> Option<Expr> {
        let mut literals = Vec::new();
        for p in patterns {
            let mut stack = named_children(*p);
            while let Some(node) = stack.pop() {
                match node.kind_name() {
                    "union_pattern" | "case_pattern" => stack.extend(named_children(node)),
                    "string" | "concatenated_string" | "integer" | "float" | "true" | "false" | "none" => literals.push(node),
                    _ => return None,
                }
            }
        }
        if literals.is_empty() {
            return None;
        }
        literals.sort_by_key(|n| n.start_byte());
        let comparisons: Vec<Expr> = literals
            .into_iter()
            .map(|lit| {
                let value = self.lower_expr(lit);
                let span = value.span;
                let kind = ExprKind::Compare { left: Box::new(subject.clone()), ops: vec![CmpOp::Eq], comparators: vec![value] };
                Expr { kind, span }
            })
            .collect();
        let span = comparisons[0].span;
        Some(match <[Expr; 1]>::try_from(comparisons) {
            Ok([only]) => only,
            Err(values) => Expr { kind: ExprKind::BoolOp { op: BoolOp::Or, values }, span },
        })
    }

    /// `_` or a bare capture name: matches anything.
    fn is_irrefutable(&self, pattern: Node) -> bool {
        match named_children(pattern).as_slice() {
            [] => self.text(pattern).trim() == "_",
            [only] => only.kind_name() == "dotted_name" && named_children(*only).len() == 1,
            _ => false,
        }
    }

    /// The names a pattern binds: capture patterns, `*rest`, `**rest` and `as` targets, but
    /// not class names, keyword names or dotted value patterns (`Color.RED`).
    fn pattern_captures(&self, node: Node, out: &mut Vec<Name>) {
        let capture = |name: Node, out: &mut Vec<Name>| {
            let text = self.name(name);
            if &*text != "_" && !out.contains(&text) {
                out.push(text);
            }
        };
        match node.kind_name() {
            "dotted_name" => {
                if let [only] = named_children(node).as_slice() {
                    capture(*only, out);
                }
            }
            "identifier" | "as_pattern_target" => capture(node, out),
            "class_pattern" => {
                for child in named_children(node).into_iter().skip(1) {
                    self.pattern_captures(child, out);
                }
            }
            "keyword_pattern" => {
                for child in named_children(node).into_iter().skip(1) {
                    self.pattern_captures(child, out);
                }
            }
            "string" | "concatenated_string" | "integer" | "float" | "complex_pattern" | "true" | "false" | "none" => {}
            _ => {
                for child in named_children(node) {
                    self.pattern_captures(child, out);
                }
            }
        }
    }
}
