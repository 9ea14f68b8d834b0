//! The project fixtures (`tests/fixtures/_projects/NAME/`): programs of several modules run
//! through their real entry points (an absl main, a TestCase, pytest with conftest fixtures),
//! checked against real JAX run under the same runner (`tests/conformance/project_oracle.py`).
//!
//! For each project:
//! - every `# error: CODE Class "message"` line is where JAX raises (class and message), and
//!   JAX raises nowhere else in the project's files;
//! - `tracelens check` reports exactly the annotated errors (file, line, code);
//! - each jitted function of the project is traced as often as JAX traces it, counting the
//!   traces tracelens makes from the entry files (`main.py`, or the test files) along routes
//!   that called the function (not the unknown-arguments route, which JAX has no counterpart of).

use crate::process::run_with_limit;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub struct ProjectsSummary {
    pub checked: usize,
    /// (project, what differs).
    pub wrong: Vec<(String, String)>,
}

impl ProjectsSummary {
    pub fn render(&self) -> String {
        let mut out = format!("project fixtures: {} checked against JAX under their runners, {} wrong\n", self.checked, self.wrong.len());
        for (name, why) in &self.wrong {
            out.push_str(&format!("  WRONG {name}: {why}\n"));
        }
        out
    }
}

/// An annotated error: file (relative to the project), line, code, class, message fragment.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Expected {
    path: String,
    line: u64,
    code: String,
    class: String,
    message: String,
}

pub fn check(binary: &Path, python: &Path, projects_dir: &Path, oracle_script: &Path) -> ProjectsSummary {
    let mut summary = ProjectsSummary { checked: 0, wrong: Vec::new() };
    let mut folders: Vec<PathBuf> = std::fs::read_dir(projects_dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_dir() && !is_hidden(p)).collect())
        .unwrap_or_default();
    folders.sort();
    for folder in folders {
        let name = folder.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        summary.checked += 1;
        for why in check_project(binary, python, &folder, oracle_script) {
            summary.wrong.push((name.clone(), why));
        }
    }
    summary
}

fn python_files(folder: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "py"))
        .filter_map(|e| Some((e.file_name().to_string_lossy().to_string(), std::fs::read_to_string(e.path()).ok()?)))
        .collect();
    files.sort();
    files
}

fn annotations(files: &[(String, String)]) -> Vec<Expected> {
    let mut out = Vec::new();
    for (path, text) in files {
        for (i, line) in text.lines().enumerate() {
            let Some((_, rest)) = line.split_once("# error: ") else { continue };
            let mut words = rest.splitn(3, ' ');
            let code = words.next().unwrap_or("").to_string();
            let class = words.next().unwrap_or("").to_string();
            let message = words.next().unwrap_or("").trim().trim_matches('"').to_string();
            out.push(Expected { path: path.clone(), line: i as u64 + 1, code, class, message });
        }
    }
    out.sort();
    out
}

fn run_json(mut command: Command, what: &str) -> Result<Value, String> {
    command.env("JAX_PLATFORMS", "cpu").env("PYTHONDONTWRITEBYTECODE", "1");
    let finished = run_with_limit(command, Duration::from_secs(300)).map_err(|e| format!("{what} did not run: {e}"))?;
    serde_json::from_str(&finished.stdout).map_err(|e| format!("{what} printed no JSON ({e}): {}", finished.describe_failure()))
}

fn check_project(binary: &Path, python: &Path, folder: &Path, oracle_script: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let files = python_files(folder);
    let expected = annotations(&files);

    // 1. What JAX raises, under the project's runner, is what the annotations say.
    let mut oracle = Command::new(python);
    oracle.arg(oracle_script).arg(folder);
    let jax = match run_json(oracle, "the project oracle") {
        Ok(v) => v,
        Err(why) => return vec![why],
    };
    if let Some(error) = jax.get("oracle_error").and_then(Value::as_str) {
        return vec![format!("the oracle failed: {error}")];
    }
    let raised: Vec<(String, u64, String, String)> = jax["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or("?").to_string(),
                e["line"].as_u64().unwrap_or(0),
                e["class"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for (path, line, class, message) in &raised {
        let annotated = expected.iter().any(|e| &e.path == path && e.line == *line && &e.class == class && message.contains(&e.message));
        if !annotated {
            problems.push(format!("JAX raises {class} at {path}:{line} ({message}), which no `# error:` line says"));
        }
    }
    for e in &expected {
        if !raised.iter().any(|(p, l, c, m)| p == &e.path && *l == e.line && c == &e.class && m.contains(&e.message)) {
            problems
                .push(format!("{}:{} says JAX raises {} \"{}\", it does not (it raised {raised:?})", e.path, e.line, e.class, e.message));
        }
    }

    // 2. `tracelens check` reports exactly the annotated errors.
    let mut check = Command::new(binary);
    check.current_dir(folder).args(["check", "--format", "json", "."]);
    match run_json(check, "tracelens check") {
        Ok(found) => {
            let mut reported: Vec<(String, u64, String)> = found
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["severity"] == "error")
                .map(|d| {
                    // A leaked tracer is reported at its escape; JAX raises at its use.
                    let used = d["related"].as_array().into_iter().flatten().find(|r| r["message"] == crate::model::LEAK_USE_NOTE);
                    let line = match used {
                        Some(r) if d["code"] == "TL103" => &r["line"],
                        _ => &d["line"],
                    };
                    (d["path"].as_str().unwrap_or("").to_string(), line.as_u64().unwrap_or(0), d["code"].as_str().unwrap_or("").to_string())
                })
                .collect();
            reported.sort();
            reported.dedup();
            let mut wanted: Vec<(String, u64, String)> = expected.iter().map(|e| (e.path.clone(), e.line, e.code.clone())).collect();
            wanted.dedup();
            if reported != wanted {
                problems.push(format!("tracelens check reports {reported:?}, JAX raises {wanted:?}"));
            }
        }
        Err(why) => problems.push(why),
    }

    // 3. Trace counts of the project's jitted functions.
    let jax_traces: BTreeMap<(String, u64), u64> = jax["traces"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| ((t["path"].as_str().unwrap_or("").to_string(), t["line"].as_u64().unwrap_or(0)), t["traces"].as_u64().unwrap_or(0)))
        .collect();
    let runner = jax["runner"].as_str().unwrap_or("main");
    let entries: Vec<&str> = files
        .iter()
        .map(|(p, _)| p.as_str())
        .filter(|p| match runner {
            "main" => *p == "main.py",
            _ => p.starts_with("test_") || p.ends_with("_test.py"),
        })
        .collect();
    let mut ours: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for entry in entries {
        let mut trace = Command::new(binary);
        trace.current_dir(folder).args(["trace", entry, "--format", "json"]);
        match run_json(trace, "tracelens trace") {
            Ok(v) => {
                for f in v["functions"].as_array().into_iter().flatten() {
                    let key = (f["path"].as_str().unwrap_or("").to_string(), f["line"].as_u64().unwrap_or(0));
                    let called =
                        f["traces"].as_array().into_iter().flatten().filter(|t| t["route"] != "not called (unknown arguments)").count();
                    if called > 0 {
                        *ours.entry(key).or_default() += called as u64;
                    }
                }
            }
            Err(why) => problems.push(why),
        }
    }
    if ours != jax_traces {
        problems.push(format!("trace counts differ: tracelens {ours:?}, JAX {jax_traces:?}"));
    }
    problems
}

/// A folder a tool left beside the projects (`.pytest_cache` from a pytest run), not a project.
fn is_hidden(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
}
