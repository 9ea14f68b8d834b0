//! Symbolic dimensions (design.md §9): named sizes from annotations (`Float[Array, "b n"]`,
//! `# tracelens: trace f(f32[b,4])`), traced as JAX's shape polymorphism (`jax.export` with
//! `symbolic_shape("b, n")`) would judge them, by sound instantiation.
//!
//! A file whose entry points bind named dimensions is analysed twice, each time with every
//! name bound to a size of its own (`SymbolicDims`): the first time to distinct primes from 11
//! up, the second to distinct multiples of 720, neither ever equal to an integer written in
//! the file. In both, distinct names are distinct sizes, none is 1 and none equals a constant
//! of the program: JAX's symbolic equality, under which `b` is never `n`, never `1` and never
//! `4` (so `(b, n) + (3,)` and a concatenation of `(b, n)` with `(b, 4)` are JAX's errors).
//! What JAX leaves *inconclusive* (whether `b * n` divides by 4, `b > 16`, clamping `x[:, :8]`)
//! comes out differently in the two: the primes divide by nothing small and the multiples of
//! 720 by everything up to 10 and 12, 16, 18, 20, ...; and they lie on either side of most
//! thresholds. A finding is reported only when both analyses make it at the same place with
//! the same code and the same words (`keep_common`); its numbers are then put back into the
//! names the user wrote by comparing the two messages (`Renamer`): `13` and `1440` is `n`,
//! `143` and `1036800` is `b*n`. Traces and hover values of the first analysis are renamed
//! the same way, so `trace` shows `f32[b,n]`.

use std::collections::HashSet;

use crate::diagnostics::{Diagnostic, Severity};

/// Sizes given to named dimensions in one analysis.
#[derive(Debug, Default)]
pub struct SymbolicDims {
    /// 0: distinct primes; 1: distinct multiples of 720.
    pub instance: u8,
    /// Integers written in the file: no named dimension takes one of these sizes.
    literals: Option<HashSet<u64>>,
    /// Each name bound so far, in order, with its size.
    names: Vec<(String, usize)>,
}

impl SymbolicDims {
    /// The size of dimension `name` in this analysis; `text` is the file's source.
    pub fn size(&mut self, name: &str, text: &str) -> usize {
        if let Some((_, size)) = self.names.iter().find(|(n, _)| n == name) {
            return *size;
        }
        let literals = self.literals.get_or_insert_with(|| integer_literals(text));
        let taken: HashSet<usize> = self.names.iter().map(|(_, s)| *s).collect();
        let mut candidate = match self.instance {
            0 => 11,
            _ => 720,
        };
        loop {
            let fits = !taken.contains(&candidate) && !literals.contains(&(candidate as u64));
            if fits && (self.instance != 0 || is_prime(candidate)) {
                break;
            }
            candidate += if self.instance == 0 { 1 } else { 720 };
        }
        self.names.push((name.to_string(), candidate));
        candidate
    }

    /// Whether any named dimension was bound: the analysis must then be made again.
    pub fn used(&self) -> bool {
        !self.names.is_empty()
    }

    pub fn names(&self) -> &[(String, usize)] {
        &self.names
    }
}

fn is_prime(n: usize) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| n % d != 0)
}

/// Every run of ASCII digits in `text`, as a number (`f32` gives 32: harmless).
fn integer_literals(text: &str) -> HashSet<u64> {
    text.split(|c: char| !c.is_ascii_digit()).filter_map(|run| run.parse().ok()).collect()
}

/// Puts names back into the numbers of a text made under the first instantiation, from the
/// same text made under the second.
#[derive(Debug)]
pub struct Renamer {
    /// (name, size in the first analysis, size in the second).
    dims: Vec<(String, u64, u64)>,
}

impl Renamer {
    pub fn new(first: &SymbolicDims, second: &SymbolicDims) -> Renamer {
        let dims = first
            .names
            .iter()
            .filter_map(|(name, a)| {
                let (_, b) = second.names.iter().find(|(n, _)| n == name)?;
                Some((name.clone(), *a as u64, *b as u64))
            })
            .collect();
        Renamer { dims }
    }

    /// `first` with each number that differs from its counterpart in `second` written as an
    /// expression of the names; `None` when the two texts differ in more than numbers, or a
    /// number is no product, multiple or offset of the names.
    pub fn rename(&self, first: &str, second: &str) -> Option<String> {
        if first == second {
            return Some(first.to_string());
        }
        let (a, b) = (split_numbers(first), split_numbers(second));
        if a.len() != b.len() {
            return None;
        }
        let mut out = String::with_capacity(first.len());
        for (x, y) in a.iter().zip(&b) {
            match (x, y) {
                (Piece::Text(s), Piece::Text(t)) if s == t => out.push_str(s),
                (Piece::Number(s, m), Piece::Number(_, n)) if m == n => out.push_str(s),
                (Piece::Number(_, m), Piece::Number(_, n)) => out.push_str(&self.explain(*m, *n)?),
                _ => return None,
            }
        }
        Some(out)
    }

    /// `first` alone, for a text the second analysis made differently (a trace whose Python
    /// control flow went another way for other sizes): each number that is a product of the
    /// first analysis' sizes is written with the names. Those sizes are primes the file does
    /// not write, so such a number is very likely made from them.
    pub fn rename_alone(&self, first: &str) -> String {
        let mut out = String::with_capacity(first.len());
        for piece in split_numbers(first) {
            match piece {
                Piece::Text(s) => out.push_str(s),
                Piece::Number(s, m) => match self.factors(m) {
                    Some((rest, factors)) => out.push_str(&product(rest, &factors)),
                    None => out.push_str(s),
                },
            }
        }
        out
    }

    /// `m` as `rest` times a product of the first analysis' sizes (at least one), if it is one.
    /// Those sizes are distinct primes, so a size factors over them one way.
    fn factors(&self, m: u64) -> Option<(u64, Vec<&(String, u64, u64)>)> {
        let mut rest = m;
        let mut factors: Vec<&(String, u64, u64)> = Vec::new();
        for dim in &self.dims {
            while dim.1 > 1 && rest % dim.1 == 0 && factors.len() < 4 {
                rest /= dim.1;
                factors.push(dim);
            }
        }
        (!factors.is_empty()).then_some((rest, factors))
    }

    /// `m` (first analysis) and `n` (second) as one expression of the names: `b`, `b*n`,
    /// `2*b`, `b + 1`, `b - 2`.
    fn explain(&self, m: u64, n: u64) -> Option<String> {
        if let Some((rest, factors)) = self.factors(m) {
            let second = factors.iter().try_fold(rest, |acc, d| acc.checked_mul(d.2));
            if second == Some(n) {
                return Some(product(rest, &factors));
            }
        }
        for (name, a, b) in &self.dims {
            let (da, db) = (m as i128 - *a as i128, n as i128 - *b as i128);
            if da == db && da != 0 {
                return Some(if da > 0 { format!("{name} + {da}") } else { format!("{name} - {}", -da) });
            }
        }
        None
    }
}

/// `b*n`, `2*b`: JAX's way of writing a product of dimensions.
fn product(rest: u64, factors: &[&(String, u64, u64)]) -> String {
    let names: Vec<&str> = factors.iter().map(|d| d.0.as_str()).collect();
    let names = names.join("*");
    if rest == 1 {
        names
    } else {
        format!("{rest}*{names}")
    }
}

enum Piece<'a> {
    Text(&'a str),
    Number(&'a str, u64),
}

/// `text` as runs of digits (numbers) and runs of anything else.
fn split_numbers(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    while start < bytes.len() {
        let digit = bytes[start].is_ascii_digit();
        let end = bytes[start..].iter().position(|b| b.is_ascii_digit() != digit).map_or(bytes.len(), |n| start + n);
        let run = &text[start..end];
        match run.parse::<u64>() {
            Ok(value) if digit => pieces.push(Piece::Number(run, value)),
            _ => pieces.push(Piece::Text(run)),
        }
        start = end;
    }
    pieces
}

/// The findings of the first analysis that the second made too (same file, place, code and
/// words but for numbers), with names for their numbers; the first analysis' own words of
/// those kept, for the reproducers, which raise with its sizes. Informational diagnostics
/// (where a budget ended the analysis) are kept as they are.
pub fn keep_common(first: Vec<Diagnostic>, second: &[Diagnostic], renamer: &Renamer) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let mut renamed = Vec::new();
    let mut originals = Vec::new();
    for d in first {
        if d.severity == Severity::Info {
            renamed.push(d.clone());
            originals.push(d);
            continue;
        }
        let message = second
            .iter()
            .filter(|e| e.code == d.code && e.path == d.path && e.span == d.span)
            .find_map(|e| renamer.rename(&d.message, &e.message));
        if let Some(message) = message {
            renamed.push(Diagnostic { message, ..d.clone() });
            originals.push(d);
        }
    }
    (renamed, originals)
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn dims(names: &[&str]) -> (SymbolicDims, SymbolicDims) {
        let text = "x.reshape(4, -1)[:, :13]";
        let mut first = SymbolicDims::default();
        let mut second = SymbolicDims { instance: 1, ..SymbolicDims::default() };
        for n in names {
            first.size(n, text);
            second.size(n, text);
        }
        (first, second)
    }

    fn sizes_are_distinct_and_never_a_literal_of_the_file() {
        let (first, second) = dims(&["b", "n", "b"]);
        // 13 is written in the file, so `n` skips it.
        assert_eq!(first.names(), &[("b".to_string(), 11), ("n".to_string(), 17)]);
        assert_eq!(second.names(), &[("b".to_string(), 720), ("n".to_string(), 1440)]);
    }

    fn numbers_are_named_from_the_two_analyses() {
        let (first, second) = dims(&["b", "n"]);
        let r = Renamer::new(&first, &second);
        let renamed = r.rename(
            "shapes=[(11, 17), (3,)] f32[11,17] size 187 2*b 22 12 16",
            "shapes=[(720, 1440), (3,)] f32[720,1440] size 1036800 2*b 1440 721 1439",
        );
        assert_eq!(renamed.as_deref(), Some("shapes=[(b, n), (3,)] f32[b,n] size b*n 2*b 2*b b + 1 n - 1"));
        assert_eq!(r.rename("got (11,)", "got (720, 1)"), None);
        assert_eq!(r.rename("x 5", "x 6"), None);
        assert_eq!(r.rename_alone("f32[11,17] f32[5] 187"), "f32[b,n] f32[5] b*n");
    }

    crate::unit_tests::list![sizes_are_distinct_and_never_a_literal_of_the_file, numbers_are_named_from_the_two_analyses];
}
