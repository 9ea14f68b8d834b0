//! The differential op table: every row of `data/ops.tsv` (recorded from real JAX 0.10.2 by
//! `tests/conformance/gen_ops_golden.py`) is run as a small program through `analyze_file`,
//! and the elements it prints must be JAX's: the same dtype and shape, integers and bools
//! exactly, floats within the tolerance of their op family (`data/ops_tolerances.tsv`, which says why). Rows whose value
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

/// One ulp of 1.0 in a float dtype; None for integers and bools, compared exactly.
fn eps(dtype: &str) -> Option<f64> {
    match dtype {
        "float32" => Some(f64::from(f32::EPSILON)),
        "float64" => Some(f64::EPSILON),
        "bfloat16" => Some(2f64.powi(-7)),
        "float16" => Some(2f64.powi(-10)),
        _ => None,
    }
}

/// A family of `data/ops_tolerances.tsv` (its header says what each term means and why).
struct Family {
    name: String,
    groups: Option<Vec<String>>,
    exprs: Option<Vec<String>>,
    kernel: String,
}

fn families() -> Vec<Family> {
    let lines: Vec<&str> =
        include_str!("data/ops_tolerances.tsv").lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).collect();
    let header: Vec<&str> = lines[0].split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("ops_tolerances.tsv: no column {name}"));
    let list = |text: &str| (text != "*").then(|| text.split(',').map(str::to_string).collect());
    lines[1..]
        .iter()
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            Family {
                name: cols[col("family")].into(),
                groups: list(cols[col("groups")]),
                exprs: list(cols[col("exprs")]),
                kernel: cols[col("kernel")].into(),
            }
        })
        .collect()
}

fn family_of<'a>(families: &'a [Family], row: &Row) -> &'a Family {
    let matches = |p: &String| p.strip_prefix('^').map_or_else(|| row.expr.contains(p.as_str()), |prefix| row.expr.starts_with(prefix));
    families
        .iter()
        .find(|f| f.groups.as_ref().is_none_or(|g| g.contains(&row.group)) && f.exprs.as_ref().is_none_or(|e| e.iter().any(matches)))
        .unwrap_or_else(|| panic!("no tolerance family for [{}] {}", row.group, row.expr))
}

/// The terms of a rule (`rel=1/4/16 max=8`) for a dtype, in ulps: (rel, max, one, cond).
fn rule(text: &str, dtype: &str) -> [f64; 4] {
    let mut terms = [0.0; 4];
    for term in text.split_whitespace().filter(|t| *t != "exact") {
        let (key, value) = term.split_once('=').unwrap_or_else(|| panic!("bad term {term}"));
        let values: Vec<f64> = value.split('/').map(|v| v.parse().unwrap_or_else(|_| panic!("bad term {term}"))).collect();
        let v = match (values.as_slice(), dtype) {
            ([v], _) => *v,
            ([half, _, _], "float16" | "bfloat16") => *half,
            ([_, f32, _], "float32") => *f32,
            ([_, _, f64], _) => *f64,
            _ => panic!("bad term {term}"),
        };
        let i = ["rel", "max", "one", "cond"].iter().position(|k| *k == key).unwrap_or_else(|| panic!("unknown term {term}"));
        terms[i] = v;
    }
    terms
}

/// kappa of each float row with a twin in the other float width (`data/ops_tolerances.tsv`):
/// how many ulp of its largest magnitude the float32 row is from the float64 one.
fn conditioning(rows: &[Row]) -> std::collections::HashMap<(bool, String), f64> {
    let by_key: std::collections::HashMap<(bool, &str), &Row> = rows.iter().map(|r| ((r.x64, r.expr.as_str()), r)).collect();
    let mut kappa = std::collections::HashMap::new();
    for row in rows {
        let dtype = row.aval.split(' ').next().unwrap_or("");
        let twin_expr = match dtype {
            "float32" => row.expr.replace("float32", "float64"),
            "float64" => row.expr.replace("float64", "float32"),
            _ => continue,
        };
        let Some(twin) = by_key.get(&(true, twin_expr.as_str())) else { continue };
        if twin.aval.split(' ').next() == Some(dtype) {
            continue;
        }
        let (f32_row, f64_row) = if dtype == "float32" { (row, *twin) } else { (*twin, row) };
        let (Some(a), Some(b)) = (parse_values(&f32_row.values), parse_values(&f64_row.values)) else { continue };
        let scale = a.iter().filter(|v| v.is_finite()).fold(0.0f64, |m, v| m.max(v.abs()));
        if a.len() != b.len() || scale == 0.0 {
            continue;
        }
        let diff = a.iter().zip(&b).filter(|(x, y)| x.is_finite() && y.is_finite()).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        kappa.insert((row.x64, row.expr.clone()), (diff / (f64::from(f32::EPSILON) * scale)).min(64.0));
    }
    kappa
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

fn check(row: &Row, families: &[Family], kappa: &std::collections::HashMap<(bool, String), f64>) -> Outcome {
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
    // Every primitive bound is checked against its rule (`jax/prims/`).
    let config = AnalysisConfig { check_ir: true, ..AnalysisConfig::default() };
    let analysis = analyze_file(&PathBuf::from("op.py"), &source, &NoFiles, &config);
    if let Some(problem) = analysis.ir_problems.first() {
        return Outcome::Mismatch(format!("primitive rule: {problem}"));
    }
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
    let Some(eps) = eps(dtype) else {
        return if int_texts(values) == int_texts(&row.values) {
            Outcome::Pass
        } else {
            Outcome::Mismatch(format!("got {values}\n    JAX {}", row.values))
        };
    };
    let (Some(got), Some(want)) = (parse_values(values), parse_values(&row.values)) else {
        return Outcome::Mismatch(format!("unparsable: {values}"));
    };
    // The row's family says how close (data/ops_tolerances.tsv, column `kernel`): ulps of each
    // element, of the row's largest magnitude, of 1.0, and of the largest magnitude times the
    // problem's conditioning.
    let scale = want.iter().filter(|w| w.is_finite()).fold(0.0f64, |m, w| m.max(w.abs()));
    let family = family_of(families, row);
    let [rel, max, one, cond] = rule(&family.kernel, dtype);
    let rtol = rel * eps;
    let atol = eps * (max * scale + one + cond * kappa.get(&(row.x64, row.expr.clone())).copied().unwrap_or(0.0) * scale);
    if got.len() == want.len() && got.iter().zip(&want).all(|(&g, &w)| close(g, w, rtol, atol)) {
        Outcome::Pass
    } else {
        Outcome::Mismatch(format!("got {values}\n    JAX {}\n    (family {}, kernel {})", row.values, family.name, family.kernel))
    }
}

#[test]
fn every_op_row_matches_jax() {
    let rows = rows();
    assert!(rows.len() > 1000, "{} rows", rows.len());
    let (families, kappa) = (families(), conditioning(&rows));
    let not_computed_list = listed(include_str!("data/ops_not_computed.txt"));
    let known_wrong_list = listed(include_str!("data/ops_known_wrong.txt"));
    let is_in = |list: &[(bool, String)], row: &Row| list.iter().any(|(x64, expr)| *x64 == row.x64 && *expr == row.expr);
    let (mut mismatches, mut unlisted, mut stale) = (Vec::new(), Vec::new(), Vec::new());
    let (mut passed, mut not_computed, mut known_wrong) = (0, 0, 0);
    for row in &rows {
        let line = format!("{}\t{}", row.x64 as u8, row.expr);
        let outcome = check(row, &families, &kappa);
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
