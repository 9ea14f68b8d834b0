//! The differential op table: every row of `data/ops.tsv` (recorded from real JAX 0.10.2 by
//! `tests/conformance/gen_ops_golden.py`) is run as a small program through `analyze_file`,
//! and the elements it prints must be JAX's: the same dtype and shape, integers and bools
//! exactly, floats within a per-dtype tolerance (docs/evaluator.md). Rows whose value
//! tracelens does not compute are listed in `data/ops_not_computed.txt`, and rows it gets
//! wrong for a reason outside the kernels in `data/ops_known_wrong.txt`, each with why; an
//! unlisted row that is not computed or wrong fails, and so does a listed one that passes.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

struct Row {
    x64: bool,
    group: String,
    expr: String,
    aval: String,
    values: String,
}

fn rows() -> Vec<Row> {
    include_str!("data/ops.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 5, "bad row: {line}");
            Row { x64: cols[0] == "1", group: cols[1].into(), expr: cols[2].into(), aval: cols[3].into(), values: cols[4].into() }
        })
        .collect()
}

/// The `x64 <TAB> expr` lines of a list, whose `#` comments say why.
fn listed(text: &str) -> Vec<(bool, String)> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t').map(|(x64, expr)| (x64 == "1", expr.to_string())))
        .collect()
}

/// Python's repr of a list of floats, ints or bools, as f64s.
fn parse_values(text: &str) -> Option<Vec<f64>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(", ")
        .map(|v| match v {
            "nan" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            "True" => Some(1.0),
            "False" => Some(0.0),
            v => v.parse::<i128>().map(|i| i as f64).ok().or_else(|| v.parse::<f64>().ok()),
        })
        .collect()
}

/// Integers as exact text (i64 values past 2^53 do not fit an f64).
fn int_texts(text: &str) -> Vec<String> {
    text.trim().trim_start_matches('[').trim_end_matches(']').split(", ").map(str::to_string).collect()
}

/// Relative tolerance of a float dtype: XLA's float32 transcendental functions are within a
/// few ulp of the correctly rounded result, and tracelens accumulates in float64.
fn tolerance(dtype: &str) -> Option<f64> {
    match dtype {
        "float32" => Some(4.0 * f64::from(f32::EPSILON)),
        "float64" => Some(16.0 * f64::EPSILON),
        // One ulp: XLA computes these in float32 and rounds each result once, as tracelens
        // does, so a value differs only where float32's own error tips a rounding.
        "bfloat16" => Some(2f64.powi(-7)),
        "float16" => Some(2f64.powi(-10)),
        _ => None,
    }
}

/// The absolute tolerance of a bfloat16/float16 row: one ulp of the row's largest magnitude
/// for its accumulations (reductions, products, softmax), none for elementwise rows.
fn half_atol(expr: &str, scaled: f64) -> f64 {
    let accumulates = ["jnp.sum", "jnp.prod", "jnp.mean", "jnp.var", "jnp.cumsum", "jnp.dot", "@", "softmax"];
    if accumulates.iter().any(|f| expr.starts_with(f) || expr.contains(&format!(" {f} "))) {
        scaled
    } else {
        0.0
    }
}

fn close(got: f64, want: f64, rtol: f64, atol: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    if want == 0.0 && got == 0.0 {
        return want.is_sign_negative() == got.is_sign_negative();
    }
    (got - want).abs() <= rtol * want.abs() + atol
}

fn stops(analysis: &tracer_core::FileAnalysis) -> String {
    analysis.stops.iter().map(|(_, why)| why.as_str()).collect::<Vec<_>>().join("; ")
}

enum Outcome {
    Pass,
    NotComputed(String),
    Mismatch(String),
}

fn check(row: &Row) -> Outcome {
    let dtype = row.aval.split(' ').next().unwrap_or("");
    let conv = if dtype.starts_with("float") || dtype == "bfloat16" {
        "float"
    } else if dtype == "bool" {
        "bool"
    } else {
        "int"
    };
    let config = if row.x64 { "jax.config.update(\"jax_enable_x64\", True)\n" } else { "" };
    let source = format!(
        "import jax\nimport jax.numpy as jnp\nimport jax.scipy.special\nimport jax.scipy.linalg\nfrom jax import lax\n{config}x = {}\nprint(x.dtype, x.shape)\nprint([{conv}(v) for v in x.ravel()])\n",
        row.expr
    );
    let analysis = analyze_file(&PathBuf::from("op.py"), &source, &NoFiles, &AnalysisConfig::default());
    let lines: Vec<&str> = analysis.stdout.lines().collect();
    let (Some(aval), Some(values)) = (lines.first(), lines.get(1)) else {
        return if analysis.stdout.contains("<unknown>") || !analysis.stops.is_empty() || lines.len() == 1 {
            Outcome::NotComputed(stops(&analysis))
        } else {
            Outcome::Mismatch(format!(
                "printed {:?}, diagnostics {:?}",
                analysis.stdout,
                analysis.diagnostics.iter().map(|d| &d.0.message).collect::<Vec<_>>()
            ))
        };
    };
    if *aval != row.aval {
        return Outcome::Mismatch(format!("aval {aval}, JAX {}", row.aval));
    }
    if values.contains("<unknown>") {
        return Outcome::NotComputed(stops(&analysis));
    }
    let Some(rtol) = tolerance(dtype) else {
        return if int_texts(values) == int_texts(&row.values) {
            Outcome::Pass
        } else {
            Outcome::Mismatch(format!("got {values}\n    JAX {}", row.values))
        };
    };
    let (Some(got), Some(want)) = (parse_values(values), parse_values(&row.values)) else {
        return Outcome::Mismatch(format!("unparsable: {values}"));
    };
    // Reductions and products add rounding errors of their terms: the absolute tolerance
    // scales with the largest finite magnitude JAX printed in the row.
    let scale = want.iter().filter(|w| w.is_finite()).fold(0.0f64, |m, w| m.max(w.abs()));
    let atol = match row.group.as_str() {
        "reduce" | "dot" | "batched" | "cumulative" | "linalg" => rtol * scale,
        // eigh, svd and qr: JAX computes float32 factors in float32, and a vector's error
        // grows as eps over the gap between eigenvalues; tracelens computes in f64 and rounds
        // once. 32 times the accumulation rule (128 ulp of the row's largest magnitude).
        "decomposition" => 32.0 * rtol * scale,
        // XLA's lgamma adds terms of magnitude up to a few units (log(2π)/2, the Lanczos
        // term, log a(z)) and its float32 `log`/`log1p` are XLA's own approximations, whose
        // last bits differ from libm's: near the zeros of lgamma (1 and 2) and where the
        // reflection cancels, the error is absolute, a few ulp of 1 (docs/evaluator.md).
        _ if ["jax.scipy.special.gammaln(", "lax.lgamma("].iter().any(|f| row.expr.starts_with(f)) => 2.0 * rtol,
        "half" => half_atol(&row.expr, rtol * scale),
        _ => 0.0,
    };
    if got.len() == want.len() && got.iter().zip(&want).all(|(&g, &w)| close(g, w, rtol, atol)) {
        Outcome::Pass
    } else {
        Outcome::Mismatch(format!("got {values}\n    JAX {}", row.values))
    }
}

#[test]
fn every_op_row_matches_jax() {
    let rows = rows();
    assert!(rows.len() > 1000, "{} rows", rows.len());
    let not_computed_list = listed(include_str!("data/ops_not_computed.txt"));
    let known_wrong_list = listed(include_str!("data/ops_known_wrong.txt"));
    let is_in = |list: &[(bool, String)], row: &Row| list.iter().any(|(x64, expr)| *x64 == row.x64 && *expr == row.expr);
    let (mut mismatches, mut unlisted, mut stale) = (Vec::new(), Vec::new(), Vec::new());
    let (mut passed, mut not_computed, mut known_wrong) = (0, 0, 0);
    for row in &rows {
        let line = format!("{}\t{}", row.x64 as u8, row.expr);
        let outcome = check(row);
        match (&outcome, is_in(&not_computed_list, row), is_in(&known_wrong_list, row)) {
            (Outcome::Pass, false, false) => passed += 1,
            (Outcome::Pass, _, _) => stale.push(line),
            (Outcome::NotComputed(_), true, _) => not_computed += 1,
            (Outcome::NotComputed(why), false, _) => unlisted.push(format!("{line}\n# {why}")),
            (Outcome::Mismatch(_), _, true) => known_wrong += 1,
            (Outcome::Mismatch(why), _, false) => mismatches.push(format!("x64={} [{}] {}\n    {why}", row.x64 as u8, row.group, row.expr)),
        }
    }
    eprintln!(
        "{} rows: {passed} match JAX, {not_computed} not computed (listed), {known_wrong} known wrong (listed), {} wrong, {} not computed and unlisted",
        rows.len(),
        mismatches.len(),
        unlisted.len()
    );
    let mut report = String::new();
    if !mismatches.is_empty() {
        report += &format!("{} rows differ from JAX:\n{}\n", mismatches.len(), mismatches.join("\n"));
    }
    if !unlisted.is_empty() {
        report += &format!("{} rows not computed, missing from data/ops_not_computed.txt:\n{}\n", unlisted.len(), unlisted.join("\n"));
    }
    if !stale.is_empty() {
        report += &format!(
            "{} rows are now computed and right; remove them from data/ops_not_computed.txt or data/ops_known_wrong.txt:\n{}\n",
            stale.len(),
            stale.join("\n")
        );
    }
    assert!(report.is_empty(), "{report}");
}
