//! Fixture pairs: a `jax.jit` program and the same program under `nnx.jit` or `eqx.filter_jit`
//! (or with linen's `nn.scan` for `lax.scan`) must give the same findings, at the same
//! statement, with the same counts.
//!
//! `tests/fixtures/pairs.tsv` lists the pairs, one a line: the code, the `jax.jit` fixture and
//! its twin. Two checks read it. Statically (`cargo test -p xtask`): every error and warning
//! code of the catalog has a twin under each library, and the annotations of a twin are the
//! jax program's (same codes, classes, substrings) on the same statement, read the way
//! `normalised_statement` reads it. Under the real libraries (`cargo xtask conformance`, after
//! the fixtures ran): JAX raised the same class at the same statement in both, ran every
//! annotated warning line as often, and traced each jitted function as often.

use crate::conformance::{FixtureResult, Verdict};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// The libraries whose transformations must agree with `jax.jit`, by fixture-name prefix.
pub const LIBRARIES: &[(&str, &str)] = &[("nnx_", "flax.nnx"), ("eqx_", "equinox")];

/// Libraries with pairs for some findings only: linen's `nn.scan` over a module against
/// `lax.scan` over its parameters, for an error raised in the body (flax traces the body
/// twice, so a warning's line counts differ and is not paired).
pub const PARTIAL_LIBRARIES: &[(&str, &str)] = &[("linen_", "flax.linen")];

/// One line of `pairs.tsv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub code: String,
    /// Fixture paths relative to tests/fixtures/.
    pub jax: String,
    pub twin: String,
}

impl Pair {
    /// The library the twin is written with (`flax.nnx`, `equinox`), from its name.
    pub fn library(&self) -> Option<&'static str> {
        let file = self.twin.rsplit('/').next().unwrap_or(&self.twin);
        LIBRARIES.iter().chain(PARTIAL_LIBRARIES).find(|(prefix, _)| file.starts_with(prefix)).map(|(_, library)| *library)
    }
}

/// `CODE<TAB>jax fixture<TAB>twin` lines; `#` starts a comment.
pub fn parse_manifest(text: &str) -> Result<Vec<Pair>, String> {
    let mut pairs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [code, jax, twin] => pairs.push(Pair { code: code.to_string(), jax: jax.to_string(), twin: twin.to_string() }),
            _ => return Err(format!("pairs.tsv:{}: expected `CODE  jax-fixture  twin`, got `{line}`", number + 1)),
        }
    }
    Ok(pairs)
}

/// One `# error:` or `# warning:` expectation and the statement it is on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Expectation {
    /// `error: TL104 TypeError "..."`, the comment as written.
    pub comment: String,
    pub statement: String,
    pub line: u32,
}

/// The expectations of a fixture's text. A comment alone on its line speaks of the next line
/// of code, as tests/fixtures/README.md says.
pub fn expectations(source: &str) -> Vec<Expectation> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(at) = line.find("# error:").or_else(|| line.find("# warning:")) else {
            continue;
        };
        let comment = line[at + 2..].trim().to_string();
        let code = line[..at].trim();
        let (statement, number) = if code.is_empty() {
            match lines.iter().enumerate().skip(index + 1).find(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#')) {
                Some((next, l)) => (code_of(l), next),
                None => continue,
            }
        } else {
            (code.to_string(), index)
        };
        found.push(Expectation { comment, statement: normalised_statement(&statement), line: number as u32 + 1 });
    }
    found
}

fn code_of(line: &str) -> String {
    line.find("  #").map(|at| &line[..at]).unwrap_or(line).trim().to_string()
}

/// A statement as the pairs compare it: its right-hand side when it assigns (a twin keeps the
/// model in place of returning new parameters), each library's spelling of a transformation
/// as jax's, the model's name for the parameters' and without nnx's optimizer argument.
pub fn normalised_statement(statement: &str) -> String {
    let mut text = code_of(statement);
    if let Some(rhs) = assignment_value(&text) {
        text = rhs.to_string();
    }
    const SPELLINGS: &[(&str, &str)] = &[
        ("eqx.filter_value_and_grad", "jax.value_and_grad"),
        ("nnx.value_and_grad", "jax.value_and_grad"),
        ("eqx.filter_grad", "jax.grad"),
        ("nnx.grad", "jax.grad"),
        ("eqx.filter_jit", "jax.jit"),
        ("nnx.jit", "jax.jit"),
        ("eqx.filter_vmap", "jax.vmap"),
        ("nnx.vmap", "jax.vmap"),
        ("optimizer, ", ""),
    ];
    for (library, jax) in SPELLINGS {
        text = text.replace(library, jax);
    }
    replace_word(&text, "params", "model")
}

/// The value of `target = value` (not `==`, `<=`, `+=`, nor `=` inside brackets or a call).
fn assignment_value(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut depth = 0i32;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'"' | b'\'' => return None,
            b'=' if depth == 0 => {
                let before = if i > 0 { bytes[i - 1] } else { b' ' };
                let after = bytes.get(i + 1).copied().unwrap_or(b' ');
                if after == b'=' || b"=!<>+-*/%&|^@:".contains(&before) {
                    return None;
                }
                return Some(text[i + 1..].trim());
            }
            _ => {}
        }
    }
    None
}

fn replace_word(text: &str, word: &str, by: &str) -> String {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before_ok = !rest[..at].chars().next_back().is_some_and(is_word);
        let after_ok = !rest[at + word.len()..].chars().next().is_some_and(is_word);
        out.push_str(&rest[..at]);
        out.push_str(if before_ok && after_ok { by } else { word });
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// What the fixtures of the pairs say, against each other and the catalog (no JAX needed).
pub fn static_problems(fixtures_dir: &Path, pairs: &[Pair], catalog: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for pair in pairs {
        if pair.library().is_none() {
            problems.push(format!(
                "{}: the twin's name says no library ({})",
                pair.twin,
                LIBRARIES.iter().map(|l| l.0).collect::<Vec<_>>().join(", ")
            ));
        }
        let read = |path: &str| fs::read_to_string(fixtures_dir.join(path)).map_err(|e| format!("{path}: {e}"));
        let (jax, twin) = match (read(&pair.jax), read(&pair.twin)) {
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => {
                problems.extend(a.err());
                problems.extend(b.err());
                continue;
            }
        };
        let mut expected: Vec<(String, String)> = expectations(&jax).into_iter().map(|e| (e.comment, e.statement)).collect();
        let mut got: Vec<(String, String)> = expectations(&twin).into_iter().map(|e| (e.comment, e.statement)).collect();
        expected.sort();
        got.sort();
        if !expected.iter().any(|(comment, _)| comment.split_whitespace().nth(1) == Some(pair.code.as_str())) {
            problems.push(format!("{}: no expectation of {}", pair.jax, pair.code));
        }
        if expected != got {
            problems.push(format!("{} and {} differ: {:?} against {:?}", pair.jax, pair.twin, expected, got));
        }
    }
    for code in catalog {
        for (prefix, library) in LIBRARIES {
            if !pairs.iter().any(|p| &p.code == code && p.library() == Some(library)) {
                problems.push(format!("{code} has no {library} twin ({prefix}*.py) in pairs.tsv"));
            }
        }
    }
    problems
}

/// The codes of docs/diagnostics/README.md that a traced program can raise or warn about:
/// errors and warnings, less the planned ones, the TensorFlow-only ones (no JAX twin) and
/// those of `tracelens run`'s values.
pub fn catalog_codes(readme: &str) -> Vec<String> {
    readme
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code = cells.get(1)?.strip_prefix('[')?.split(']').next()?;
            let severity = *cells.get(3)?;
            let summary = cells.get(4).copied().unwrap_or("");
            let traced = (severity == "error" || severity == "warning")
                && !summary.starts_with("(planned)")
                && !summary.starts_with("(TensorFlow)")
                && !summary.contains("tracelens run");
            traced.then(|| code.to_string())
        })
        .collect()
}

/// The pairs checked under the real libraries: what JAX did in each program of a pair.
pub struct Summary {
    pub agreeing: Vec<String>,
    pub differing: Vec<String>,
    /// Pairs one of whose programs did not run here (filtered out, or a library missing).
    pub unchecked: usize,
}

impl Summary {
    pub fn render(&self) -> String {
        let mut text = format!(
            "\npairs (a jax.jit program and its nnx.jit / eqx.filter_jit twin, under the real libraries):\n  {} agree, {} differ, {} not run here\n",
            self.agreeing.len(),
            self.differing.len(),
            self.unchecked
        );
        for problem in &self.differing {
            text.push_str(&format!("  DIFFER {problem}\n"));
        }
        text
    }
}

pub fn check(fixtures_dir: &Path, pairs: &[Pair], results: &[FixtureResult]) -> Summary {
    let by_name: BTreeMap<&str, &FixtureResult> = results.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut summary = Summary { agreeing: Vec::new(), differing: Vec::new(), unchecked: 0 };
    for pair in pairs {
        let (Some(jax), Some(twin)) = (by_name.get(pair.jax.as_str()), by_name.get(pair.twin.as_str())) else {
            summary.unchecked += 1;
            continue;
        };
        let problems = differences(fixtures_dir, pair, jax, twin);
        let label = format!("{} {} / {} ({})", pair.code, pair.jax, pair.twin, pair.library().unwrap_or("no library"));
        if problems.is_empty() {
            summary.agreeing.push(label);
        } else {
            summary.differing.push(format!("{label}: {}", problems.join("; ")));
        }
    }
    summary
}

/// How the two programs of a pair differ under JAX (and whether tracelens passed both).
fn differences(fixtures_dir: &Path, pair: &Pair, jax: &FixtureResult, twin: &FixtureResult) -> Vec<String> {
    let mut problems = Vec::new();
    let (Some(a), Some(b)) = (&jax.oracle, &twin.oracle) else {
        return vec!["the oracle did not run both".to_string()];
    };
    let source = |name: &str| fs::read_to_string(fixtures_dir.join(name)).unwrap_or_default();
    let (source_a, source_b) = (source(&pair.jax), source(&pair.twin));
    let statement = |text: &str, line: Option<u32>| {
        line.and_then(|l| text.lines().nth(l.saturating_sub(1) as usize)).map(normalised_statement).unwrap_or_default()
    };
    match (&a.exception, &b.exception) {
        (None, None) => {}
        (Some(x), Some(y)) => {
            if x.class_name != y.class_name {
                problems.push(format!("JAX raised {} and {}", x.class_name, y.class_name));
            }
            let (sa, sb) = (statement(&source_a, x.line), statement(&source_b, y.line));
            if sa != sb {
                problems.push(format!("JAX raised at `{sa}` and at `{sb}`"));
            }
        }
        (x, y) => problems.push(format!("JAX raised {:?} and {:?}", x.as_ref().map(|e| &e.class_name), y.as_ref().map(|e| &e.class_name))),
    }
    let hits = |text: &str, hits: &BTreeMap<u32, u64>| -> Vec<(String, u64)> {
        let mut found: Vec<(String, u64)> =
            expectations(text).into_iter().map(|e| (e.statement, hits.get(&e.line).copied().unwrap_or(0))).collect();
        found.sort();
        found
    };
    let (ha, hb) = (hits(&source_a, &a.line_hits), hits(&source_b, &b.line_hits));
    if ha != hb {
        problems.push(format!("annotated lines ran {ha:?} and {hb:?} times"));
    }
    let traces = |report: &crate::model::OracleReport| -> BTreeMap<String, u32> {
        let mut counts = BTreeMap::new();
        for f in &report.jit_traces {
            *counts.entry(f.name.clone()).or_insert(0) += f.traces;
        }
        counts
    };
    let (ta, tb) = (traces(a), traces(b));
    if ta != tb {
        problems.push(format!("JAX traced {ta:?} and {tb:?}"));
    }
    for result in [jax, twin] {
        if result.verdict != Verdict::Pass {
            problems.push(format!("tracelens: {} is {}", result.name, result.verdict.label()));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::workspace_root;

    #[test]
    fn statements_read_alike_across_libraries() {
        assert_eq!(
            normalised_statement("    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)  # error: TL106"),
            normalised_statement("loss, grads = jax.value_and_grad(loss_fn)(params, x, y)")
        );
        assert_eq!(
            normalised_statement("loss = train_step(model, optimizer, xb, yb)"),
            normalised_statement("params, loss = train_step(params, xb, yb)")
        );
        assert_eq!(normalised_statement("logits[:, 0] = -1e9"), "-1e9");
        assert_eq!(normalised_statement("if loss == 1:"), "if loss == 1:");
        assert_eq!(normalised_statement("num_updates += 1"), "num_updates += 1");
        assert_eq!(normalised_statement("f(a=1)"), "f(a=1)");
        assert_ne!(normalised_statement("print(params_count)"), normalised_statement("print(model_count)"));
    }

    #[test]
    fn a_comment_alone_speaks_of_the_next_line() {
        let found = expectations("def f():\n    # warning: TL201 \"ran 1 time\"\n\n    print(x)\n");
        assert_eq!(found, vec![Expectation { comment: "warning: TL201 \"ran 1 time\"".into(), statement: "print(x)".into(), line: 4 }]);
    }

    /// Every error and warning a `jax.jit` program can give has a twin under nnx.jit and
    /// under eqx.filter_jit, annotated alike (conformance checks them under the libraries).
    #[test]
    fn every_code_has_twins_that_read_alike() {
        let root = workspace_root();
        let fixtures = root.join("tests").join("fixtures");
        let manifest = fs::read_to_string(fixtures.join("pairs.tsv")).expect("tests/fixtures/pairs.tsv");
        let pairs = parse_manifest(&manifest).expect("pairs.tsv parses");
        let readme = fs::read_to_string(root.join("docs").join("diagnostics").join("README.md")).expect("docs/diagnostics/README.md");
        let catalog = catalog_codes(&readme);
        assert!(
            catalog.contains(&"TL101".to_string()) && catalog.contains(&"TL212".to_string()) && !catalog.contains(&"TL301".to_string())
        );
        let problems = static_problems(&fixtures, &pairs, &catalog);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
