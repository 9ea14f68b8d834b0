//! Reproducers of the TensorFlow error fixtures checked against real TensorFlow: for every
//! fixture of `tests/fixtures/tf/errors/`, `tracelens repro` writes a standalone program, and
//! real TensorFlow runs the fixture and the program (`tests/conformance/tf_raised.py`, which
//! imports TensorFlow once; a fixture's own answer is the one the oracle recorded when it ran
//! it, `Setup::recorded`, so no fixture runs twice). The program must raise the fixture's exception class with the
//! fixture's own message (its first line, `repro::comparable_message`); a fixture with no
//! reproducer is listed, not failed, as on the JAX side (`repro.rs`).

use crate::forkserver::ForkServer;
use crate::pool;
use crate::repro::{cases, code_lines, comparable_message, emit, median};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a fixture or a reproducer may run under TensorFlow.
const PROGRAM_LIMIT: Duration = Duration::from_secs(60);

/// The reproducers staged out of a trace over all the error fixtures, at least: a change that
/// stages fewer (sending more of them to the source cut) fails the check. Raise it when
/// staging reaches more.
pub const STAGED_FLOOR: usize = 35;

pub struct TfReproSummary {
    pub fixtures: usize,
    /// Reproducers written, and of them the ones staged out of a trace (the others are cut
    /// from the source).
    pub emitted: usize,
    pub staged: usize,
    /// Reproducers raising the fixture's class with the fixture's message under TensorFlow.
    pub same: usize,
    /// (fixture, what happened) for each reproducer that raised something else.
    pub wrong: Vec<(String, String)>,
    /// (fixture, why `tracelens repro` wrote nothing)
    pub missing: Vec<(String, String)>,
    /// Median of 1 - (reproducer lines / fixture lines) over the written reproducers.
    pub median_reduction: f64,
    /// Whether every error fixture was asked (no filter): only then is the floor checked.
    pub complete: bool,
}

/// What a program raised under TensorFlow: its class and message, `None` when it raised
/// nothing.
pub type Raised = Option<(String, String)>;

/// One written reproducer, before TensorFlow runs it.
struct Written {
    name: String,
    class: String,
    fixture: PathBuf,
    reproducer: PathBuf,
    staged: bool,
    reduction: f64,
}

/// The programs and folders the check uses.
pub struct Setup<'a> {
    pub binary: &'a Path,
    pub python: &'a Path,
    /// `tests/conformance/tf_raised.py`.
    pub script: &'a Path,
    pub errors_dir: &'a Path,
    pub out_dir: &'a Path,
    pub jobs: usize,
    /// Only the fixtures whose name (`tf/errors/NAME.py`) contains it.
    pub filter: Option<&'a str>,
    /// What each fixture raised when the oracle ran it (`tf_oracle.py` records the class and
    /// the message as `tf_raised.py` does); a fixture not here runs under TensorFlow again.
    pub recorded: &'a HashMap<PathBuf, Raised>,
}

pub fn check(setup: &Setup) -> TfReproSummary {
    let Setup { binary, python, script, errors_dir, out_dir, jobs, filter, recorded } = *setup;
    let mut all = cases(errors_dir, out_dir);
    all.retain(|c| filter.is_none_or(|f| format!("tf/errors/{}", c.name).contains(f)));
    let emitted: Vec<Result<Written, (String, String)>> = pool::map(&all, jobs, |_, case| {
        let out = case.output_in(out_dir);
        emit(binary, case, &out).map_err(|why| (case.name.clone(), why))?;
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        Ok(Written {
            name: case.name.clone(),
            class: case.class.clone(),
            fixture: case.entry.clone(),
            reproducer: out,
            staged: !text.contains("\n# cut from the source"),
            reduction: 1.0 - code_lines(&text) as f64 / case.fixture_lines.max(1) as f64,
        })
    });
    let (mut written, mut missing): (Vec<Written>, Vec<(String, String)>) = (Vec::new(), Vec::new());
    for row in emitted {
        match row {
            Ok(w) => written.push(w),
            Err(m) => missing.push(m),
        }
    }
    written.sort_by(|a, b| a.name.cmp(&b.name));
    missing.sort();
    let programs: Vec<&Path> = written
        .iter()
        .flat_map(|w| [Some(w.fixture.as_path()).filter(|f| !recorded.contains_key(*f)), Some(w.reproducer.as_path())])
        .flatten()
        .collect();
    let mut raised = run_under_tensorflow(python, script, &programs, jobs).map(|mut ran| {
        for w in &written {
            if let Some(answer) = recorded.get(&w.fixture) {
                ran.insert(w.fixture.clone(), answer.clone());
            }
        }
        ran
    });
    // A recorded answer that disagrees with the reproducer's is checked by running the
    // fixture as the reproducer ran (the oracle's own frames can change a message, such as
    // where Python's recursion limit is reached).
    let again: Vec<&Path> = written
        .iter()
        .filter(|w| recorded.contains_key(&w.fixture) && verdict(w, &raised).is_some())
        .map(|w| w.fixture.as_path())
        .collect();
    if let (Ok(answers), false) = (&mut raised, again.is_empty()) {
        match run_under_tensorflow(python, script, &again, jobs) {
            Ok(ran) => answers.extend(ran),
            Err(e) => raised = Err(e),
        }
    }
    let mut wrong = Vec::new();
    for w in &written {
        if let Some(why) = verdict(w, &raised) {
            wrong.push((w.name.clone(), why));
        }
    }
    TfReproSummary {
        fixtures: all.len(),
        emitted: written.len(),
        staged: written.iter().filter(|w| w.staged).count(),
        same: written.len() - wrong.len(),
        wrong,
        missing,
        median_reduction: median(written.iter().map(|w| w.reduction).collect()),
        complete: filter.is_none(),
    }
}

/// Why `w`'s reproducer does not raise what its fixture raises under TensorFlow, if it does not.
fn verdict(w: &Written, raised: &Result<HashMap<PathBuf, Raised>, String>) -> Option<String> {
    let raised = match raised {
        Ok(r) => r,
        Err(e) => return Some(format!("TensorFlow did not run: {e}")),
    };
    let fixture = match raised.get(&w.fixture) {
        Some(Some((class, message))) if *class == w.class => comparable_message(first_line(message)),
        Some(Some((class, _))) => return Some(format!("the fixture itself raises {class}, not {}", w.class)),
        Some(None) => return Some("the fixture itself raises nothing".to_string()),
        None => return Some("the fixture did not run".to_string()),
    };
    match raised.get(&w.reproducer) {
        Some(Some((class, message))) if *class == w.class => {
            let message = comparable_message(first_line(message));
            (message != fixture).then(|| format!("the fixture raises {fixture:?}, the reproducer {message:?}"))
        }
        Some(Some((class, message))) => Some(format!("expected {}, raised {class}: {}", w.class, first_line(message))),
        Some(None) => Some(format!("expected {}, raised nothing", w.class)),
        None => Some("the reproducer did not run".to_string()),
    }
}

/// The message's first line; for Python's recursion limit only its part every stack shares:
/// what follows `maximum recursion depth exceeded` (` in comparison`, ` while calling a
/// Python object`, nothing) is the operation the limit was reached in, which changes with the
/// depth of the stack a program starts at (a reproducer's is not its fixture's).
fn first_line(message: &str) -> &str {
    const RECURSION: &str = "maximum recursion depth exceeded";
    let line = message.lines().next().unwrap_or("");
    if line.starts_with(RECURSION) {
        return RECURSION;
    }
    line
}

/// Runs `programs` under TensorFlow with `script`: `jobs` fork servers (`forkserver.py`),
/// each importing TensorFlow once and forking a child per program.
fn run_under_tensorflow(python: &Path, script: &Path, programs: &[&Path], jobs: usize) -> Result<HashMap<PathBuf, Raised>, String> {
    let command = || crate::runners::tf_python(python);
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    // Each worker's fork server imports TensorFlow once; each program is a child of it.
    let answers = pool::map_with(
        programs,
        jobs,
        || ForkServer::new(&command, &["tensorflow"]),
        |server, _, program| {
            // `Err`: the server failed; `Ok(None)`: the program gave no answer (it ran past its
            // limit or died), and its verdict says it did not run.
            let finished = server.run(&[script.into(), program.into()], &here, PROGRAM_LIMIT).map_err(|e| e.to_string())?;
            let Ok(row) = serde_json::from_str::<serde_json::Value>(finished.stdout.trim()) else { return Ok(None) };
            let raised = row["class"].as_str().map(|c| (c.to_string(), row["message"].as_str().unwrap_or("").to_string()));
            Ok::<Option<Raised>, String>(Some(raised))
        },
        drop,
    );
    let mut out = HashMap::new();
    for (program, answer) in programs.iter().zip(answers) {
        if let Some(raised) = answer? {
            out.insert(program.to_path_buf(), raised);
        }
    }
    Ok(out)
}

impl TfReproSummary {
    /// Every reproducer raises what its fixture raises, and (over all the fixtures) at least
    /// `STAGED_FLOOR` are staged out of a trace.
    pub fn passed(&self) -> bool {
        self.wrong.is_empty() && self.floor_held()
    }

    fn floor_held(&self) -> bool {
        !self.complete || self.staged >= STAGED_FLOOR
    }

    pub fn render(&self) -> String {
        let mut out = String::from("\nreproducers (tracelens repro on every TensorFlow error fixture, run under real TensorFlow):\n");
        for (name, why) in &self.wrong {
            out.push_str(&format!("  WRONG  {name}: {why}\n"));
        }
        for (name, why) in &self.missing {
            out.push_str(&format!("  NONE   {name}: {why}\n"));
        }
        out.push_str(&format!(
            "  emitted for {} of {} error fixtures ({} staged out of a trace, {} cut from the source); {} of them raise the fixture's exception class and message under TensorFlow (its first line, the same but for files, lines and addresses); median size reduction {:.0}%\n",
            self.emitted,
            self.fixtures,
            self.staged,
            self.emitted - self.staged,
            self.same,
            self.median_reduction * 100.0
        ));
        if !self.floor_held() {
            out.push_str(&format!(
                "  FLOOR  {} staged out of a trace, fewer than the floor of {STAGED_FLOOR} (tf_repro::STAGED_FLOOR)\n",
                self.staged
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::first_line;

    #[test]
    fn recursion_limit_messages_compare_by_the_part_every_stack_shares() {
        assert_eq!(
            first_line("maximum recursion depth exceeded in comparison"),
            first_line("maximum recursion depth exceeded while calling a Python object")
        );
        assert_eq!(first_line("Incompatible shapes: [3] vs. [4]\nmore"), "Incompatible shapes: [3] vs. [4]");
    }
}
