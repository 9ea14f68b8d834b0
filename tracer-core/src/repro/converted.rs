//! A statement AutoGraph converts, written back as the user's `if`/`while` on a tensor inside
//! the staged `tf.function`, so TensorFlow converts it again and raises AutoGraph's own
//! message at its line (a `tf.cond` written instead raises `tf.cond`'s, not AutoGraph's).
//!
//! The values each branch binds are computed before the statement (TensorFlow traces both
//! branches of a converted `if` into the graph whatever the test, so where an op is made does
//! not change what AutoGraph checks); each branch then binds the names, or returns, as the
//! user's did, and the line after the statement reads the names, which makes them live after
//! it (AutoGraph checks only the names live after the statement).

use super::Expr;

/// What a converted statement binds. The line's `args` are the test, then one tuple per
/// part: the values bound before the statement, the ones the main branch (a loop's body)
/// binds, the else branch's, and what comes after.
#[derive(Clone, Debug, PartialEq)]
pub struct Converted {
    /// `if` or `while`.
    pub keyword: String,
    /// The names bound right before the statement (a loop's state as it enters the loop).
    pub before: Vec<String>,
    /// What each value of the main branch is bound to: a name, or `return`.
    pub main: Vec<String>,
    /// The same for the else branch; empty: no `else`.
    pub orelse: Vec<String>,
    /// After the statement: `return` (of the one value), or the names read there.
    pub after: Vec<String>,
}

pub const RETURN: &str = "return";

impl Converted {
    /// The statement's test alone, for a test AutoGraph rejects (`if t:` on a float tensor).
    pub fn test_only(keyword: &str) -> Converted {
        Converted { keyword: keyword.into(), before: Vec::new(), main: Vec::new(), orelse: Vec::new(), after: Vec::new() }
    }

    /// The names it binds.
    pub fn bound_names(&self) -> impl Iterator<Item = String> + '_ {
        self.before.iter().chain(&self.main).chain(&self.orelse).chain(&self.after).filter(|n| *n != RETURN).cloned()
    }

    /// The statement as Python, its first line the one TensorFlow raises at.
    pub fn render(&self, args: &[Expr]) -> String {
        let values = |i: usize| match args.get(i) {
            Some(Expr::Tuple(items)) => items.clone(),
            _ => Vec::new(),
        };
        let test = args.first().map(Expr::render).unwrap_or_default();
        let mut out = String::new();
        for (name, value) in self.before.iter().zip(values(1)) {
            out.push_str(&format!("{name} = {}\n", value.render()));
        }
        out.push_str(&format!("{} {test}:", self.keyword));
        branch(&mut out, &self.main, &values(2), "    ");
        if !self.orelse.is_empty() {
            out.push_str("\nelse:");
            branch(&mut out, &self.orelse, &values(3), "    ");
        }
        if self.after.first().is_some_and(|a| a == RETURN) {
            branch(&mut out, &self.after, &values(4), "");
        } else if !self.after.is_empty() {
            out.push('\n');
            out.push_str(&self.after.join(", "));
        }
        out
    }
}

/// One block's bindings (`pass` when it binds nothing).
fn branch(out: &mut String, targets: &[String], values: &[Expr], indent: &str) {
    if targets.is_empty() {
        out.push_str(&format!("\n{indent}pass"));
    }
    for (target, value) in targets.iter().zip(values) {
        if target == RETURN {
            out.push_str(&format!("\n{indent}return {}", value.render()));
        } else {
            out.push_str(&format!("\n{indent}{target} = {}", value.render()));
        }
    }
}
