//! `tracelens run FILE`: the program run on tracelens' interpreter and CPU kernels, printing
//! what it prints as `python FILE` would. What tracelens itself has to say (values it did not
//! compute, the first NaN/Inf, a run it could not finish) goes to stderr, after the program's
//! own output.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use tracer_core::{run_file, RunOutcome, RunResult};

use crate::check::{config_for, findings_of, on_analysis_stack};
use crate::config::Config;
use crate::files::{read_source, FsLoader};
use crate::render;

/// Budgets of one run, from the command line.
pub struct RunOptions {
    /// Arrays with more elements are not computed (printed as `<not computed: ...>`).
    pub max_elements: u64,
    /// The run stops (exit status 3) after this long.
    pub max_seconds: f64,
}

/// Exit status when tracelens could not finish the run (a value it cannot compute decided
/// the program's control flow, or a budget ran out).
const STOPPED: u8 = 3;

pub fn run_program(file: PathBuf, args: Vec<String>, options: RunOptions, color: bool) -> ExitCode {
    if !file.is_file() {
        eprintln!("error: {}: no such file", file.display());
        return ExitCode::from(2);
    }
    if let Some(why) = crate::files::notebook_refusal(&file) {
        eprintln!("error: {why}");
        return ExitCode::from(2);
    }
    // Python names the main script by its absolute path in tracebacks.
    let path = std::path::absolute(&file).unwrap_or(file.clone());
    let Some(text) = read_source(&path) else {
        eprintln!("error: {}: cannot read the file", file.display());
        return ExitCode::from(2);
    };
    let project = Config::discover(&path).unwrap_or_default();
    let mut config = config_for(&path, &project);
    config.budgets.max_elements = options.max_elements;
    config.budgets.max_time = Duration::from_secs_f64(options.max_seconds.max(0.0));
    config.budgets.max_steps = u64::MAX;
    let loader = FsLoader::default();
    let result = on_analysis_stack(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_file(&path, &text, &loader, &config))));
    let Ok(result) = result else {
        eprintln!("error: {}: internal error in the tracelens engine (please report it)", file.display());
        return ExitCode::from(2);
    };
    let _ = std::io::stdout().write_all(result.stdout.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(result.stderr.as_bytes());
    report(&result, &path, &args, &project, color)
}

fn report(result: &RunResult, path: &Path, args: &[String], project: &Config, color: bool) -> ExitCode {
    let mut err = String::new();
    if !args.is_empty() {
        err.push_str(&format!("tracelens: note: the program's arguments ({}) are not modelled: sys.argv is unknown\n", args.join(" ")));
    }
    for note in &result.notes {
        err.push_str(&format!("tracelens: note: {note}\n"));
    }
    let findings = findings_of(&result.diagnostics, project);
    if !findings.is_empty() {
        err.push_str(&render::findings_frames(&findings, color));
    }
    let code = match &result.outcome {
        RunOutcome::Completed => ExitCode::SUCCESS,
        RunOutcome::Raised { traceback, exception } => {
            err.push_str("Traceback (most recent call last):\n");
            for frame in traceback {
                err.push_str(&format!("  File \"{}\", line {}, in {}\n", frame.path.display(), frame.line, frame.function));
                if !frame.source.is_empty() {
                    err.push_str(&format!("    {}\n", frame.source));
                }
            }
            err.push_str(exception);
            err.push('\n');
            ExitCode::from(1)
        }
        RunOutcome::Stopped { at, why } => {
            let at = at.clone().unwrap_or_else(|| path.display().to_string());
            err.push_str(&format!("tracelens: stopped at {at}: {why}; the rest of the program did not run\n"));
            ExitCode::from(STOPPED)
        }
    };
    let _ = std::io::stderr().write_all(err.as_bytes());
    code
}
