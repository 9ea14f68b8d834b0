//! `tracelens run` against `python`: each program under tests/fixtures/run/ runs under both,
//! and their exit statuses and standard outputs must agree — the text exactly (whitespace
//! runs collapsed, since NumPy pads columns to the widest number), the numbers one by one
//! within a tolerance: integers, `nan` and `inf` exactly; floats within float32's
//! (rtol 1e-5, atol 1e-6), or float64's (rtol 1e-12) in programs that enable x64.

use crate::conformance::Verdict;
use crate::forkserver::ForkServer;
use crate::pool;
use crate::process::{run_with_limit, tail};
use crate::python_env::cache_key;
use crate::sha256::sha256_hex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

pub struct RunSuite {
    /// (name relative to the fixtures folder, verdict, first disagreement).
    pub rows: Vec<(String, Verdict, Option<String>)>,
}

impl RunSuite {
    pub fn failed(&self) -> bool {
        self.rows.iter().any(|(_, v, _)| v.is_failure())
    }

    pub fn render(&self) -> String {
        let mut out = String::from("\n`tracelens run` against `python` (tests/fixtures/run/):\n");
        let width = self.rows.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
        for (name, verdict, problem) in &self.rows {
            let first = problem.as_deref().and_then(|p| p.lines().next()).unwrap_or("");
            let _ = writeln!(out, "  {name:<width$}  {:<10}  {first}", verdict.label());
        }
        for (name, verdict, problem) in &self.rows {
            if let (true, Some(p)) = (*verdict != Verdict::Pass, problem) {
                let _ = writeln!(out, "\n{name} ({}):\n{p}", verdict.label());
            }
        }
        let agree = self.rows.iter().filter(|(_, v, _)| matches!(v, Verdict::Pass | Verdict::NowPasses)).count();
        let gaps = self.rows.iter().filter(|(_, v, _)| *v == Verdict::KnownGap).count();
        let _ = writeln!(out, "\nrun: {agree} of {} programs print what python prints ({gaps} known gaps)", self.rows.len());
        out
    }
}

/// What one program printed and its exit status.
struct Outcome {
    stdout: String,
    status: Option<i32>,
}

/// The interpreter a suite's programs run under, and the modules its fork servers import once.
pub struct Python<'a> {
    pub interpreter: &'a Path,
    pub preload: &'a [&'a str],
}

pub fn check(
    programs: &[PathBuf],
    fixtures_dir: &Path,
    binary: &Path,
    python: Python,
    cache_dir: &Path,
    gaps: &BTreeMap<String, String>,
    jobs: usize,
) -> RunSuite {
    let command = || crate::runners::with_compile_cache(crate::runners::jax_python(python.interpreter), cache_dir);
    let rows = pool::map_with(
        programs,
        jobs,
        || ForkServer::new(&command, python.preload),
        |server, _, program| {
            let name = program.strip_prefix(fixtures_dir).unwrap_or(program).to_string_lossy().replace('\\', "/");
            let problem = match (run_python(program, server, cache_dir), run_tracelens(program, binary)) {
                (Err(why), _) => Some(format!("python: {why}")),
                (_, Err(why)) => Some(format!("tracelens: {why}")),
                (Ok(expected), Ok(got)) => {
                    let x64 = fs::read_to_string(program).is_ok_and(|s| s.contains("jax_enable_x64"));
                    disagreement(&expected, &got, x64)
                }
            };
            let verdict = match (problem.is_none(), gaps.contains_key(&name)) {
                (true, false) => Verdict::Pass,
                (true, true) => Verdict::NowPasses,
                (false, false) => Verdict::Fail,
                (false, true) => Verdict::KnownGap,
            };
            let problem = match verdict {
                Verdict::NowPasses => Some("now passes: remove it from known-gaps.txt".to_string()),
                Verdict::KnownGap => problem.map(|p| format!("{p}\n(known gap: {})", gaps.get(&name).map(String::as_str).unwrap_or(""))),
                _ => problem,
            };
            (name, verdict, problem)
        },
        drop,
    );
    RunSuite { rows }
}

fn run_python(program: &Path, server: &mut ForkServer, cache_dir: &Path) -> Result<Outcome, String> {
    let source = fs::read(program).map_err(|e| format!("cannot read {}: {e}", program.display()))?;
    let mut key = b"run\0".to_vec();
    key.extend_from_slice(&source);
    key.extend_from_slice(cache_key(&source).as_bytes());
    let cache = cache_dir.join(format!("run-{}.json", sha256_hex(&key)));
    if let Some(v) = fs::read(&cache).ok().and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok()) {
        if let (Some(stdout), Some(status)) = (v["stdout"].as_str(), v["status"].as_i64()) {
            return Ok(Outcome { stdout: stdout.to_string(), status: Some(status as i32) });
        }
    }
    let folder = program.parent().unwrap_or(Path::new("."));
    let finished = server.run(&[program.into()], folder, LIMIT).map_err(|e| format!("cannot run it: {e}"))?;
    let Some(status) = finished.status else { return Err(finished.describe_failure()) };
    if fs::create_dir_all(cache_dir).is_ok() {
        let entry = serde_json::json!({ "stdout": finished.stdout, "status": status });
        let _ = fs::write(&cache, entry.to_string());
    }
    Ok(Outcome { stdout: finished.stdout, status: Some(status) })
}

fn run_tracelens(program: &Path, binary: &Path) -> Result<Outcome, String> {
    // The program runs in its own folder: the binary's path must not be relative.
    let binary = fs::canonicalize(binary).unwrap_or_else(|_| binary.to_path_buf());
    let mut command = Command::new(&binary);
    command.arg("run").arg("--color").arg("never").arg(program).current_dir(program.parent().unwrap_or(Path::new(".")));
    let finished = run_with_limit(command, LIMIT).map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if finished.status.is_none() || finished.status == Some(2) {
        return Err(finished.describe_failure());
    }
    Ok(Outcome { stdout: finished.stdout, status: finished.status })
}

/// The first way `got` differs from `expected`, if any.
fn disagreement(expected: &Outcome, got: &Outcome, x64: bool) -> Option<String> {
    if expected.status != got.status {
        return Some(format!(
            "exit status {:?} under python, {:?} under tracelens; tracelens printed:\n{}",
            expected.status,
            got.status,
            tail(&got.stdout, 8)
        ));
    }
    let (a, b) = (tokens(&expected.stdout), tokens(&got.stdout));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if !token_agrees(x, y, x64) {
            return Some(format!("output token {i}: python printed {x:?}, tracelens {y:?}"));
        }
    }
    if a.len() != b.len() {
        return Some(format!("python printed {} tokens, tracelens {}", a.len(), b.len()));
    }
    None
}

#[derive(Debug, PartialEq)]
enum Token {
    Text(String),
    Number(String),
}

/// Splits output into numbers and the text between them (whitespace runs collapsed).
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut i = 0;
    let flush = |pending: &mut String, out: &mut Vec<Token>| {
        let collapsed = pending.split_whitespace().collect::<Vec<_>>().join(" ");
        if !collapsed.is_empty() {
            out.push(Token::Text(collapsed));
        }
        pending.clear();
    };
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if let Some(len) = number_at(&chars[i..]).filter(|_| starts_word) {
            flush(&mut pending, &mut out);
            out.push(Token::Number(chars[i..i + len].iter().collect()));
            i += len;
        } else {
            pending.push(chars[i]);
            i += 1;
        }
    }
    flush(&mut pending, &mut out);
    out
}

/// The length of the number starting `s` (`-1.5e-07`, `3.`, `nan`, `-inf`), if one does.
fn number_at(s: &[char]) -> Option<usize> {
    let mut i = usize::from(s.first() == Some(&'-'));
    let word: String = s[i..].iter().take(3).collect();
    if word == "nan" || word == "inf" {
        let end = i + 3;
        return (s.get(end).is_none_or(|c| !c.is_alphanumeric())).then_some(end);
    }
    let digits_start = i;
    while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    if s.get(i) == Some(&'.') {
        i += 1;
        while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
    }
    if i == digits_start || (i == digits_start + 1 && s[digits_start] == '.') {
        return None;
    }
    if matches!(s.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some('+' | '-')) {
            j += 1;
        }
        if s.get(j).is_some_and(|c| c.is_ascii_digit()) {
            while s.get(j).is_some_and(|c| c.is_ascii_digit()) {
                j += 1;
            }
            i = j;
        }
    }
    if s.get(i).is_some_and(|c| c.is_alphabetic() || *c == '_') {
        return None;
    }
    Some(i)
}

fn token_agrees(expected: &Token, got: &Token, x64: bool) -> bool {
    match (expected, got) {
        (Token::Text(a), Token::Text(b)) => a == b,
        (Token::Number(a), Token::Number(b)) => {
            let is_int = |t: &str| !t.contains(['.', 'e', 'E', 'n', 'i']);
            if is_int(a) && is_int(b) {
                return a.trim_start_matches('-') == b.trim_start_matches('-') && a.starts_with('-') == b.starts_with('-');
            }
            let (Ok(x), Ok(y)) = (a.parse::<f64>(), b.parse::<f64>()) else { return a == b };
            if !x.is_finite() || !y.is_finite() {
                return x.is_nan() && y.is_nan() || x == y;
            }
            let (rtol, atol) = if x64 { (1e-12, 1e-14) } else { (1e-5, 1e-6) };
            (x - y).abs() <= atol + rtol * x.abs()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_agree_within_float32_tolerance_and_text_exactly() {
        let out = |s: &str| Outcome { stdout: s.to_string(), status: Some(0) };
        assert_eq!(disagreement(&out("step   0 loss 7.413512\n"), &out("step   0 loss 7.413513\n"), false), None);
        assert!(disagreement(&out("loss 7.41\n"), &out("loss 7.52\n"), false).is_some());
        assert!(disagreement(&out("[1 2 3]\n"), &out("[1 2 4]\n"), false).is_some());
        assert!(disagreement(&out("nan\n"), &out("inf\n"), false).is_some());
        assert!(disagreement(&out("[0. 1.]\n"), &out("<not computed: f32[2]>\n"), false).is_some());
        assert!(disagreement(&out("x\n"), &out("x\n"), false).is_none());
        assert!(disagreement(&out("x\n"), &Outcome { stdout: "x\n".into(), status: Some(1) }, false).is_some());
        assert_eq!(
            tokens("f32[3] Array([1.5, -2e-07], dtype=float32) nan"),
            vec![
                Token::Text("f32[".into()),
                Token::Number("3".into()),
                Token::Text("] Array([".into()),
                Token::Number("1.5".into()),
                Token::Text(",".into()),
                Token::Number("-2e-07".into()),
                Token::Text("], dtype=float32)".into()),
                Token::Number("nan".into()),
            ]
        );
    }
}
