//! The conformance table, its summary block and the `--json` dump.

use crate::compare::FixtureFolder;
use crate::conformance::{FixtureResult, Suite, Verdict};
use crate::model::OracleReport;
use serde_json::json;
use std::fmt::Write;

const MISMATCH_WIDTH: usize = 90;

pub fn render(suite: &Suite) -> String {
    let mut out = String::new();
    let header = if suite.oracle_only {
        ["fixture", "JAX", "", "verdict", "first problem"]
    } else {
        ["fixture", "JAX", "tracelens", "verdict", "first mismatch"]
    };
    let rows: Vec<[String; 5]> = suite
        .results
        .iter()
        .map(|result| {
            [
                result.name.clone(),
                jax_outcome(result),
                if suite.oracle_only { String::new() } else { tracelens_outcome(result) },
                result.verdict.label().to_string(),
                clip(result.problems.first().map(|p| p.lines().next().unwrap_or_default()).unwrap_or_default(), MISMATCH_WIDTH),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if suite.oracle_only && i == 2 {
                continue;
            }
            if i == 4 {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<width$}  ", width = widths[i]);
            }
        }
        text.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(header));
    let _ = writeln!(out, "{}", line(widths.map(|w| "-".repeat(w)).each_ref().map(String::as_str)));
    for row in &rows {
        let _ = writeln!(out, "{}", line(row.each_ref().map(String::as_str)));
    }

    let detailed: Vec<&FixtureResult> = suite.results.iter().filter(|r| r.verdict != Verdict::Pass && !r.problems.is_empty()).collect();
    if !detailed.is_empty() {
        let _ = writeln!(out, "\ndetails");
        for result in detailed {
            let _ = write!(out, "  {} [{}]", result.name, result.verdict.label());
            if let Some(reason) = result.gap_reason.as_deref().filter(|r| !r.is_empty()) {
                let _ = write!(out, " (known gap: {reason})");
            }
            let _ = writeln!(out);
            for problem in &result.problems {
                for (i, text) in problem.lines().enumerate() {
                    let bullet = if i == 0 { "-" } else { " " };
                    let _ = writeln!(out, "    {bullet} {text}");
                }
            }
        }
    }
    for gap in &suite.stale_gaps {
        let _ = writeln!(out, "\nwarning: known-gaps.txt lists {gap}, which is not a fixture");
    }
    out.push_str(&summary(suite));
    out
}

fn summary(suite: &Suite) -> String {
    let mut out = String::new();
    let results = &suite.results;
    let count = |verdict: Verdict| results.iter().filter(|r| r.verdict == verdict).count();
    let in_folder = |folder: FixtureFolder| results.iter().filter(|r| r.folder == folder).count();
    let _ = writeln!(out, "\nsummary");
    let _ = writeln!(
        out,
        "  fixtures    {} (errors/ {}, warnings/ {}, clean/ {}, other {})",
        results.len(),
        in_folder(FixtureFolder::Errors),
        in_folder(FixtureFolder::Warnings),
        in_folder(FixtureFolder::Clean),
        in_folder(FixtureFolder::Other)
    );
    let _ = writeln!(
        out,
        "  verdicts    {} pass, {} FAIL, {} FIXTURE WRONG, {} ORACLE FAILED, {} known gap, {} NOW PASSES",
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::FixtureWrong),
        count(Verdict::OracleFailed),
        count(Verdict::KnownGap),
        count(Verdict::NowPasses)
    );
    let oracle_wall: f64 = results.iter().map(|r| r.oracle_seconds).sum();
    let cached = results.iter().filter(|r| r.oracle_cached).count();
    let fixture_code: f64 = results.iter().filter_map(|r| r.oracle.as_ref()).map(|o| o.run_seconds).sum();
    let _ = writeln!(
        out,
        "  {:<11} {oracle_wall:.2} s wall in {} oracle processes ({cached} from cache, with their recorded time); fixture code alone {fixture_code:.2} s",
        suite.oracle_name,
        results.len()
    );
    if !suite.oracle_only {
        let tracelens_wall: f64 = results.iter().map(|r| r.tracelens_seconds).sum();
        let _ = writeln!(out, "  tracelens   {tracelens_wall:.2} s wall in {} processes (check + trace)", results.len() * 2);
        if tracelens_wall > 0.0 {
            let _ = writeln!(
                out,
                "  ratio       {} / tracelens = {:.1}x wall, {:.1}x against fixture code alone",
                suite.oracle_name,
                oracle_wall / tracelens_wall,
                fixture_code / tracelens_wall
            );
        }
    }
    let _ = writeln!(out, "  elapsed     {:.2} s with {} jobs", suite.elapsed_seconds, suite.jobs);
    let failed = results.iter().filter(|r| r.verdict.is_failure()).count();
    let skipped = count(Verdict::KnownGap);
    let _ = writeln!(out, "{} passed, {failed} failed, {skipped} skipped", count(Verdict::Pass));
    out
}

pub fn to_json(suite: &Suite) -> serde_json::Value {
    let fixtures: Vec<serde_json::Value> = suite
        .results
        .iter()
        .map(|result| {
            json!({
                "fixture": result.name,
                "verdict": result.verdict.label(),
                "problems": result.problems,
                "known_gap": result.gap_reason,
                "jax_outcome": jax_outcome(result),
                "tracelens_outcome": if suite.oracle_only { serde_json::Value::Null } else { tracelens_outcome(result).into() },
                "oracle": result.oracle_raw,
                "oracle_seconds": result.oracle_seconds,
                "oracle_cached": result.oracle_cached,
                "tracelens_check": result.check_raw,
                "tracelens_trace": result.trace_raw,
                "tracelens_seconds": result.tracelens_seconds,
            })
        })
        .collect();
    let failed = suite.results.iter().filter(|r| r.verdict.is_failure()).count();
    json!({
        "oracle_only": suite.oracle_only,
        "jobs": suite.jobs,
        "elapsed_seconds": suite.elapsed_seconds,
        "passed": suite.results.iter().filter(|r| r.verdict == Verdict::Pass).count(),
        "failed": failed,
        "skipped": suite.results.iter().filter(|r| r.verdict == Verdict::KnownGap).count(),
        "oracle_seconds": suite.results.iter().map(|r| r.oracle_seconds).sum::<f64>(),
        "fixture_code_seconds": suite.results.iter().filter_map(|r| r.oracle.as_ref()).map(|o| o.run_seconds).sum::<f64>(),
        "tracelens_seconds": suite.results.iter().map(|r| r.tracelens_seconds).sum::<f64>(),
        "stale_known_gaps": suite.stale_gaps,
        "fixtures": fixtures,
    })
}

fn jax_outcome(result: &FixtureResult) -> String {
    let Some(oracle) = &result.oracle else {
        return "?".to_string();
    };
    let ending = match &oracle.exception {
        Some(exception) => format!("{}@{}", exception.class_name, exception.line.map_or_else(|| "?".to_string(), |l| l.to_string())),
        None => "ok".to_string(),
    };
    format!("{ending}, {}", plural(total_traces(oracle), "trace"))
}

fn tracelens_outcome(result: &FixtureResult) -> String {
    let Some(tracelens) = &result.tracelens else {
        return "-".to_string();
    };
    if !tracelens.failures.is_empty() {
        return "tool failed".to_string();
    }
    let findings: Vec<String> = tracelens.diagnostics.iter().filter(|d| d.is_finding()).map(|d| format!("{}@{}", d.code, d.line)).collect();
    let traces: usize = tracelens.trace.functions.iter().filter(|f| f.transform == "jit").map(|f| f.traces.len()).sum();
    let shown = match findings.len() {
        0 => "clean".to_string(),
        1..=2 => findings.join(" "),
        n => format!("{} +{}", findings[..2].join(" "), n - 2),
    };
    format!("{shown}, {}", plural(traces as u32, "trace"))
}

fn total_traces(oracle: &OracleReport) -> u32 {
    oracle.jit_traces.iter().map(|f| f.traces).sum()
}

fn plural(n: u32, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut clipped: String = text.chars().take(width - 1).collect();
        clipped.push('…');
        clipped
    }
}
