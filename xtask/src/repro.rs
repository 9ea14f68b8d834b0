//! Reproducers checked against real JAX: for every error fixture, `tracelens repro` writes a
//! standalone program, real JAX runs it, and it must raise the fixture's exception class; its
//! message is compared with the one the fixture itself raises under JAX (counted and listed).

use crate::forkserver::ForkServer;
use crate::runners::JAX_PRELOAD;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::pool;
use crate::process::run_with_limit;

pub struct ReproSummary {
    pub fixtures: usize,
    pub emitted: usize,
    pub same_class: usize,
    /// Of those, the ones whose message's first line is the fixture's own under JAX, and
    /// the ones compared (the fixture raised under JAX).
    pub same_message: usize,
    pub compared_messages: usize,
    /// (fixture, the fixture's message, the reproducer's)
    pub other_message: Vec<(String, String, String)>,
    /// (fixture, expected class, what happened)
    pub wrong: Vec<(String, String, String)>,
    /// (fixture, why `tracelens repro` wrote nothing)
    pub missing: Vec<(String, String)>,
    /// Median of 1 - (reproducer lines / fixture lines) over the emitted reproducers.
    pub median_reduction: f64,
    /// The same over the reproducers staged out of a trace, and over those cut from the
    /// source, with their counts.
    pub staged: (usize, f64),
    pub source_cut: (usize, f64),
}

/// The median of `values` (sorted here), 0 for none.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The `# error: CODE Class "..."` annotation of a fixture: (line, code, class).
fn expected_error(text: &str) -> Option<(usize, String, String)> {
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.split("# error: ").nth(1) {
            let mut words = rest.split_whitespace();
            let code = words.next()?.to_string();
            let class = words.next()?.to_string();
            // An annotation alone on its line applies to the next line that is not a comment.
            if line.trim_start().starts_with("# error:") {
                let next = text.lines().enumerate().skip(i + 1).find(|(_, l)| !l.trim_start().starts_with('#'))?.0;
                return Some((next + 1, code, class));
            }
            return Some((i + 1, code, class));
        }
    }
    None
}

/// Runs a reproducer as `python FILE` would, and prints the class of the exception it raised
/// and the first line of its message, each on a line of its own (a traceback's last line can
/// be a chained message's).
const RAISED_CLASS: &str = r##"
import runpy, sys
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
except BaseException as e:
    print("tracelens-raised-message: " + (str(e).splitlines() or [""])[0])
    print("tracelens-raised: " + type(e).__name__)
"##;

/// `python` with JAX on the CPU, as the reproducers run. What is compared of a reproducer
/// (the class and message it raises, its outputs' avals) is decided before XLA compiles, so
/// XLA compiles without optimising, as for the oracles (`ORACLE_XLA_FLAGS`).
fn jax_command(python: &Path) -> Command {
    let mut command = Command::new(python);
    command.env("JAX_PLATFORMS", "cpu").env("XLA_FLAGS", crate::runners::ORACLE_XLA_FLAGS);
    command
}

/// The class `RAISED_CLASS` printed, if the program raised.
fn raised_class(stdout: &str) -> Option<String> {
    stdout.lines().rev().find_map(|l| l.strip_prefix("tracelens-raised: ").map(|c| c.trim().to_string()))
}

/// The first line of the message `RAISED_CLASS` printed, if the program raised, made
/// comparable (`comparable_message`).
pub(crate) fn raised_message(stdout: &str) -> Option<String> {
    let line = stdout.lines().rev().find_map(|l| l.strip_prefix("tracelens-raised-message: "))?;
    Some(comparable_message(line))
}

/// `line` with what must differ between a fixture and its reproducer written alike: a file
/// and line (`/x/train.py:15`, as `FILE:LINE`) and an object's address (`0x7f...`, as `0x?`).
pub(crate) fn comparable_message(line: &str) -> String {
    let words: Vec<String> = line
        .trim_end()
        .split(' ')
        .map(|w| {
            if w.contains(".py:") {
                "FILE:LINE".to_string()
            } else if let Some(hex) = w.strip_prefix("0x") {
                format!("0x?{}", hex.trim_start_matches(|c: char| c.is_ascii_hexdigit()))
            } else {
                w.to_string()
            }
        })
        .collect();
    words.join(" ")
}

/// The first line where `tracelens check` reports an error with `code` in `path`.
fn reported_line(binary: &Path, path: &Path, code: &str) -> Option<usize> {
    let mut cmd = Command::new(binary);
    cmd.arg("check").arg(path).arg("--format").arg("json");
    let done = run_with_limit(cmd, Duration::from_secs(60)).ok()?;
    let json: serde_json::Value = serde_json::from_str(&done.stdout).ok()?;
    json.as_array()?.iter().filter(|d| d["code"] == code && d["severity"] == "error").find_map(|d| d["line"].as_u64()).map(|l| l as usize)
}

/// The `.py` files of `dir`, sorted; makes `out_dir` for what the checks write.
fn python_files_in(dir: &Path, out_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "py")).collect())
        .unwrap_or_default();
    files.sort();
    let _ = std::fs::create_dir_all(out_dir);
    files
}

/// One error fixture to write a reproducer for: a file, or a project of several files
/// (`errors/_projects/NAME/`: `main.py` importing the modules next to it, the `# error:`
/// annotation in the module that raises, and `# repro: under this call` on the lines of
/// `main.py` whose calls lead to it).
pub(crate) struct Case {
    pub(crate) name: String,
    /// The file `tracelens repro` is given, and the folder it runs in (a project's, so the
    /// links name its modules relative to it).
    pub(crate) entry: PathBuf,
    pub(crate) cwd: Option<PathBuf>,
    /// The error as annotated: its line (in `error_file`), code and class.
    pub(crate) line: usize,
    pub(crate) code: String,
    pub(crate) class: String,
    /// For a project: the module the error is raised in, relative to the project, and the
    /// lines of `main.py` to ask for.
    pub(crate) error_file: Option<String>,
    pub(crate) via: Vec<usize>,
    /// Non-blank, non-comment lines of every file of the fixture.
    pub(crate) fixture_lines: usize,
}

impl Case {
    /// Where its reproducer is written in `out_dir`.
    pub(crate) fn output_in(&self, out_dir: &Path) -> PathBuf {
        out_dir.join(self.name.replace('/', "__") + if self.cwd.is_some() { ".py" } else { "" })
    }
}

pub(crate) fn code_lines(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')).count()
}

const VIA_MARK: &str = "# repro: under this call";

pub(crate) fn cases(errors_dir: &Path, out_dir: &Path) -> Vec<Case> {
    let mut out = Vec::new();
    for path in python_files_in(errors_dir, out_dir) {
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let Some((line, code, class)) = expected_error(&text) else { continue };
        out.push(Case {
            name,
            entry: path,
            cwd: None,
            line,
            code,
            class,
            error_file: None,
            via: Vec::new(),
            fixture_lines: code_lines(&text),
        });
    }
    let mut projects: Vec<PathBuf> = std::fs::read_dir(errors_dir.join("_projects"))
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.join("main.py").is_file()).collect())
        .unwrap_or_default();
    projects.sort();
    for dir in projects {
        let mut files = Vec::new();
        let mut pending = vec![dir.clone()];
        while let Some(d) = pending.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    pending.push(p);
                } else if p.extension().is_some_and(|x| x == "py") {
                    files.push(p);
                }
            }
        }
        files.sort();
        let texts: Vec<(PathBuf, String)> = files.iter().filter_map(|f| Some((f.clone(), std::fs::read_to_string(f).ok()?))).collect();
        let Some((error_path, (line, code, class))) = texts.iter().find_map(|(f, t)| Some((f, expected_error(t)?))) else { continue };
        let main = texts.iter().find(|(f, _)| f.file_name().is_some_and(|n| n == "main.py")).map(|(_, t)| t.as_str()).unwrap_or("");
        let via: Vec<usize> = main.lines().enumerate().filter(|(_, l)| l.contains(VIA_MARK)).map(|(i, _)| i + 1).collect();
        let name = format!("_projects/{}", dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default());
        let relative = error_path.strip_prefix(&dir).unwrap_or(error_path).to_string_lossy().replace('\\', "/");
        out.push(Case {
            name,
            entry: PathBuf::from("main.py"),
            cwd: Some(dir.clone()),
            line,
            code,
            class,
            error_file: Some(relative),
            via,
            fixture_lines: texts.iter().map(|(_, t)| code_lines(t)).sum(),
        });
    }
    out
}

/// Runs `program` under `python` in `cwd` (standalone reproducers: the output folder, where
/// no module of the fixture is) and compares the class it raises with `class`; the first line
/// of its message when it is that class.
fn raises_under_jax(server: &mut ForkServer, program: &Path, cwd: &Path, class: &str) -> Result<String, String> {
    match server.run(&["-c".into(), RAISED_CLASS.into(), program.into()], cwd, Duration::from_secs(120)) {
        Ok(f) => match raised_class(&f.stdout) {
            Some(c) if c == class => Ok(raised_message(&f.stdout).unwrap_or_default()),
            Some(c) => Err(format!("raised {c}")),
            None => Err("raised nothing".to_string()),
        },
        Err(e) => Err(format!("did not run: {e}")),
    }
}

/// Writes `case`'s reproducer to `out` with `tracelens repro`; when none is written, the last
/// line `tracelens repro` printed on standard error.
pub(crate) fn emit(binary: &Path, case: &Case, out: &Path) -> Result<(), String> {
    let _ = std::fs::remove_file(out);
    let mut why = String::new();
    let mut repro = |line: usize| {
        let mut cmd = Command::new(binary);
        cmd.arg("repro").arg(&case.entry).arg("--line").arg(line.to_string()).arg("-o").arg(out);
        if let Some(dir) = &case.cwd {
            cmd.current_dir(dir);
        }
        match run_with_limit(cmd, Duration::from_secs(60)) {
            Ok(f) if f.status == Some(0) => out.is_file(),
            Ok(f) => {
                why = f.stderr.lines().last().unwrap_or("").to_string();
                false
            }
            Err(e) => {
                why = e.to_string();
                false
            }
        }
    };
    let emitted = match &case.error_file {
        // A project: every line of `main.py` under which the error is raised must give the
        // reproducer (the last one asked is the one run).
        Some(_) => !case.via.is_empty() && case.via.iter().all(|&l| repro(l)),
        // The annotation is where the framework raises; tracelens may report the error where
        // it is made (a leaked tracer's use inside the trace): then that line's.
        None => repro(case.line) || reported_line(binary, &case.entry, &case.code).is_some_and(|l| l != case.line && repro(l)),
    };
    if emitted {
        Ok(())
    } else {
        Err(why)
    }
}

pub fn check(binary: &Path, python: &Path, errors_dir: &Path, out_dir: &Path, jobs: usize) -> ReproSummary {
    let fixtures = cases(errors_dir, out_dir);
    // (fixture, class, outcome under JAX when written (the reproducer's message, and the
    // fixture's when it raised the class), reduction, why nothing was written, cut from the
    // source)
    type Row = (String, String, Option<Result<(String, Option<String>), String>>, f64, String, bool);
    let command = || jax_command(python);
    let server = || ForkServer::new(&command, JAX_PRELOAD);
    let results: Vec<Row> = pool::map_with(
        &fixtures,
        jobs,
        server,
        |server, _, case| {
            let (name, path, class) = (&case.name, &case.entry, &case.class);
            let out = case.output_in(out_dir);
            let (emitted, why) = match emit(binary, case, &out) {
                Ok(()) => (true, String::new()),
                Err(why) => (false, why),
            };
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            let outcome = if !emitted {
                None
            } else {
                let link = case.error_file.as_ref().map(|f| format!("# {f}:{}", case.line));
                let fixture = match &case.cwd {
                    Some(dir) => raises_under_jax(server, &dir.join("main.py"), dir, class).map_err(|why| (true, why)),
                    None => {
                        let dir = path.parent().unwrap_or(Path::new("."));
                        raises_under_jax(server, path, dir, class).map_err(|why| (false, why))
                    }
                };
                Some(match (link, fixture) {
                    (Some(link), _) if !text.lines().any(|l| l.ends_with(&link)) => Err(format!("no line links {link}")),
                    // A project must raise under JAX; a file that does not is the suite's
                    // own verdict (FIXTURE WRONG), and its message is not compared.
                    (_, Err((true, why))) => Err(format!("the fixture itself, under JAX: {why}")),
                    (_, fixture) => raises_under_jax(server, &out, out_dir, class).map(|m| (m, fixture.ok())),
                })
            };
            let reduction = 1.0 - code_lines(&text) as f64 / case.fixture_lines.max(1) as f64;
            (name.clone(), class.clone(), outcome, reduction, why, text.contains("\n# cut from the source"))
        },
        drop,
    );
    let reductions =
        |cut: Option<bool>| -> Vec<f64> { results.iter().filter(|r| r.2.is_some() && cut.is_none_or(|c| c == r.5)).map(|r| r.3).collect() };
    let (staged, source_cut) = (reductions(Some(false)), reductions(Some(true)));
    let mut wrong: Vec<(String, String, String)> = results
        .iter()
        .filter_map(|(n, c, o, _, _, _)| match o {
            Some(Err(why)) => Some((n.clone(), c.clone(), why.clone())),
            _ => None,
        })
        .collect();
    wrong.sort();
    let mut missing: Vec<(String, String)> = results.iter().filter(|r| r.2.is_none()).map(|r| (r.0.clone(), r.4.clone())).collect();
    missing.sort();
    ReproSummary {
        fixtures: results.len(),
        emitted: results.iter().filter(|r| r.2.is_some()).count(),
        same_class: results.iter().filter(|r| matches!(r.2, Some(Ok(_)))).count(),
        same_message: results.iter().filter(|r| matches!(&r.2, Some(Ok((m, Some(f)))) if m == f)).count(),
        compared_messages: results.iter().filter(|r| matches!(&r.2, Some(Ok((_, Some(_)))))).count(),
        other_message: {
            let mut other: Vec<(String, String, String)> = results
                .iter()
                .filter_map(|r| match &r.2 {
                    Some(Ok((m, Some(f)))) if m != f => Some((r.0.clone(), f.clone(), m.clone())),
                    _ => None,
                })
                .collect();
            other.sort();
            other
        },
        wrong,
        missing,
        median_reduction: median(reductions(None)),
        staged: (staged.len(), median(staged)),
        source_cut: (source_cut.len(), median(source_cut)),
    }
}

impl ReproSummary {
    pub fn render(&self) -> String {
        let mut out = String::from("\nreproducers (tracelens repro on every error fixture, run under real JAX):\n");
        for (name, class, why) in &self.wrong {
            out.push_str(&format!("  WRONG  {name}: expected {class}, {why}\n"));
        }
        for (name, why) in &self.missing {
            out.push_str(&format!("  NONE   {name}: {why}\n"));
        }
        for (name, fixture, reproducer) in &self.other_message {
            out.push_str(&format!("  MESSAGE {name}: the fixture raises {fixture:?}, the reproducer {reproducer:?}\n"));
        }
        let pct = |n: usize, d: usize| if d == 0 { 0.0 } else { 100.0 * n as f64 / d as f64 };
        out.push_str(&format!(
            "  emitted for {} of {} error fixtures ({:.0}%); {} of them raise the same exception class under JAX ({:.0}%); median size reduction {:.0}%\n",
            self.emitted,
            self.fixtures,
            pct(self.emitted, self.fixtures),
            self.same_class,
            pct(self.same_class, self.emitted),
            self.median_reduction * 100.0
        ));
        out.push_str(&format!(
            "  {} of the {} whose fixture raises under JAX raise its message too (its first line, the same but for files, lines and addresses)\n",
            self.same_message, self.compared_messages
        ));
        out.push_str(&format!(
            "  median size reduction of the {} staged out of a trace {:.0}%, of the {} cut from the source {:.0}%\n",
            self.staged.0,
            self.staged.1 * 100.0,
            self.source_cut.0,
            self.source_cut.1 * 100.0
        ));
        out
    }
}

/// `tracelens repro --function` on every jitted function of every clean fixture: each staged
/// out trace, run under real JAX, must return the avals tracelens says (`# outK: ...`).
pub struct FunctionSummary {
    pub functions: usize,
    /// Functions with at least one trace staged out.
    pub staged: usize,
    pub traces: usize,
    pub matching: usize,
    /// (fixture, function, what happened)
    pub wrong: Vec<(String, String, String)>,
    /// (fixture, function, why some or all of its traces were not staged out)
    pub missing: Vec<(String, String, String)>,
}

/// Runs a reproducer and prints the short avals of its `out1`, `out2`, ... bindings.
const AVALS_OF_OUTPUTS: &str = r##"
import runpy, sys, jax
g = runpy.run_path(sys.argv[1], run_name="__main__")
def short(x):
    a = jax.typeof(x)
    return ("~" if getattr(a, "weak_type", False) else "") + a.str_short(short_dtypes=True)
k = 1
while f"out{k}" in g:
    print(f"# out{k}: " + ", ".join(short(l) for l in jax.tree_util.tree_leaves(g[f"out{k}"])))
    k += 1
"##;

pub fn check_functions(binary: &Path, python: &Path, clean_dir: &Path, out_dir: &Path, jobs: usize) -> FunctionSummary {
    let fixtures = python_files_in(clean_dir, out_dir);
    // (fixture, function, traces staged, traces matching, problem, why traces were left out)
    type Outcome = (String, String, usize, usize, Option<String>, Option<String>);
    let command = || jax_command(python);
    let server = || ForkServer::new(&command, JAX_PRELOAD);
    let per_fixture: Vec<Vec<Outcome>> = pool::map_with(
        &fixtures,
        jobs,
        server,
        |server, _, path| {
            let mut outcomes = Vec::new();
            let name = path.file_stem().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            let mut trace = Command::new(binary);
            trace.arg("trace").arg(path).arg("--format").arg("json");
            let Ok(done) = run_with_limit(trace, Duration::from_secs(60)) else { return outcomes };
            let Ok(json) = serde_json::from_str::<serde_json::Value>(&done.stdout) else { return outcomes };
            let mut functions: Vec<String> = json["functions"]
                .as_array()
                .map(|fs| {
                    fs.iter()
                        .filter(|f| f["transform"] == "jit")
                        .filter_map(|f| f["name"].as_str().map(str::to_string))
                        .filter(|n| n.chars().all(|c| c.is_alphanumeric() || c == '_'))
                        .collect()
                })
                .unwrap_or_default();
            functions.sort();
            functions.dedup();
            for function in functions {
                let out = out_dir.join(format!("{name}__{function}.py"));
                let _ = std::fs::remove_file(&out);
                let mut cmd = Command::new(binary);
                cmd.arg("repro").arg(path).arg("--function").arg(&function).arg("-o").arg(&out);
                let done = run_with_limit(cmd, Duration::from_secs(60));
                let written = matches!(&done, Ok(f) if f.status == Some(0));
                // `repro --function` says on its last line of standard error why traces
                // were left out (after "wrote FILE" when it wrote some).
                let left_out = match &done {
                    Ok(f) => f.stderr.lines().find(|l| !l.starts_with("wrote ")).map(str::to_string),
                    Err(e) => Some(e.to_string()),
                };
                let text = std::fs::read_to_string(&out).unwrap_or_default();
                let expected: Vec<&str> = text.lines().filter(|l| l.starts_with("# out")).collect();
                let outcome = if !written || expected.is_empty() {
                    (0, 0, None)
                } else {
                    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                    match server.run(&["-c".into(), AVALS_OF_OUTPUTS.into(), out.clone().into()], &here, Duration::from_secs(120)) {
                        Ok(f) => {
                            let got: Vec<&str> = f.stdout.lines().filter(|l| l.starts_with("# out")).collect();
                            let matching = expected.iter().filter(|e| got.contains(e)).count();
                            let problem = (matching < expected.len()).then(|| {
                                let last = f.stderr.lines().last().unwrap_or("").to_string();
                                format!("expected {expected:?}, JAX gave {got:?} {last}")
                            });
                            (expected.len(), matching, problem)
                        }
                        Err(e) => (expected.len(), 0, Some(format!("did not run: {e}"))),
                    }
                };
                outcomes.push((name.clone(), function, outcome.0, outcome.1, outcome.2, left_out));
            }
            outcomes
        },
        drop,
    );
    let results: Vec<Outcome> = per_fixture.into_iter().flatten().collect();
    let mut wrong: Vec<(String, String, String)> =
        results.iter().filter_map(|(n, f, _, _, p, _)| p.as_ref().map(|p| (n.clone(), f.clone(), p.clone()))).collect();
    wrong.sort();
    let mut missing: Vec<(String, String, String)> =
        results.iter().filter_map(|(n, f, _, _, _, why)| why.as_ref().map(|w| (n.clone(), f.clone(), w.clone()))).collect();
    missing.sort();
    FunctionSummary {
        functions: results.len(),
        staged: results.iter().filter(|r| r.2 > 0).count(),
        traces: results.iter().map(|r| r.2).sum(),
        matching: results.iter().map(|r| r.3).sum(),
        wrong,
        missing,
    }
}

impl FunctionSummary {
    pub fn render(&self) -> String {
        let mut out = String::from(
            "\nstaged-out functions (tracelens repro --function on every jitted function of the clean fixtures, run under real JAX):\n",
        );
        for (name, function, why) in &self.wrong {
            out.push_str(&format!("  WRONG  {name}: {function}: {why}\n"));
        }
        for (name, function, why) in &self.missing {
            out.push_str(&format!("  NONE   {name}: {function}: {why}\n"));
        }
        out.push_str(&format!(
            "  staged out {} of {} functions; {} of {} traces return the avals tracelens gives under JAX\n",
            self.staged, self.functions, self.matching, self.traces
        ));
        out
    }
}
