//! The fuzzer's child process: runs each input of a folder through `check`, `trace`, `repro`
//! and `run`, in process, and prints one line per command: `RESULT <input> <command>
//! <outcome> <ms>`. A panic is caught (and its location kept); a command that runs past the
//! time limit ends the process (its thread cannot be stopped) after saying so; an abort
//! kills it, and the parent sees which input had started (`START <input>`) and not finished.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracer_core::interp::SourceLoader;
use tracer_core::repro::minimise::MinimiseConfig;
use tracer_core::{analyze_file, run_file, AnalysisConfig};

pub const COMMANDS: [&str; 4] = ["check", "trace", "repro", "run"];

/// Past this a command is a hang (`timeout`).
pub const TIME_LIMIT: Duration = Duration::from_secs(5);
/// Past this peak RSS a command is over the memory budget (`memory`).
pub const MEMORY_LIMIT_KB: u64 = 1 << 20;

/// Where the last panic happened and what it said, set by the panic hook.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

/// `xtask fuzz-child DIR`: every `*.py` in DIR, in name order.
pub fn main(dir: &Path) -> std::process::ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(format!("{at} {}", what.replace(['\n', ' '], "_")));
        }
    }));
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    inputs.sort();
    let stdout = std::io::stdout();
    for input in inputs {
        let name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = String::from_utf8_lossy(&std::fs::read(&input).unwrap_or_default()).into_owned();
        let _ = writeln!(stdout.lock(), "START {name}");
        let (tx, rx) = mpsc::channel::<(usize, String, u128)>();
        let worker_text = text.clone();
        let spawned = std::thread::Builder::new().stack_size(256 << 20).spawn(move || run_commands(&worker_text, &tx));
        if spawned.is_err() {
            let _ = writeln!(stdout.lock(), "RESULT {name} check spawn-failed 0");
            continue;
        }
        for (i, command) in COMMANDS.iter().enumerate() {
            reset_peak_rss();
            let (wall, cpu) = (Instant::now(), process_cpu());
            // A hang is 5 s of CPU, not of wall time: on a machine busy with builds a command
            // can wait longer than that for a core (at most a minute of waiting, though).
            let received = loop {
                match rx.recv_timeout(Duration::from_millis(500)) {
                    Err(mpsc::RecvTimeoutError::Timeout)
                        if process_cpu().saturating_sub(cpu) < TIME_LIMIT && wall.elapsed() < TIME_LIMIT * 12 =>
                    {
                        continue
                    }
                    other => break other,
                }
            };
            match received {
                Ok((_, outcome, ms)) => {
                    let outcome = match peak_rss_kb() {
                        Some(kb) if kb > MEMORY_LIMIT_KB && outcome == "ok" => format!("memory:{}MB", kb >> 10),
                        _ => outcome,
                    };
                    let _ = writeln!(stdout.lock(), "RESULT {name} {command} {outcome} {ms}");
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = writeln!(stdout.lock(), "RESULT {name} {command} timeout {}", TIME_LIMIT.as_millis());
                    let _ = stdout.lock().flush();
                    // The command's thread cannot be stopped: the parent runs the rest anew.
                    std::process::exit(3);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    for command in &COMMANDS[i..] {
                        let _ = writeln!(stdout.lock(), "RESULT {name} {command} skipped 0");
                    }
                    break;
                }
            }
        }
        let _ = stdout.lock().flush();
    }
    std::process::ExitCode::SUCCESS
}

/// Runs the four commands on `text`, sending `(command, outcome, ms)` after each.
fn run_commands(text: &str, tx: &mpsc::Sender<(usize, String, u128)>) {
    let path = PathBuf::from("/fuzz/input.py");
    let config = AnalysisConfig::default();
    let timed = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = None;
        }
        let outcome = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(()) => "ok".to_string(),
            Err(_) => {
                format!("panic:{}", LAST_PANIC.lock().ok().and_then(|l| l.clone()).unwrap_or_default().split(' ').next().unwrap_or(""))
            }
        };
        (outcome, start.elapsed().as_millis())
    };
    let mut analysis = None;
    let (outcome, ms) = timed(&mut || analysis = Some(analyze_file(&path, text, &NoFiles, &config)));
    let _ = tx.send((0, outcome, ms));
    let functions: Vec<String> = analysis.iter().flat_map(|a| a.functions.iter().map(|f| f.name.clone())).collect();
    let (outcome, ms) = timed(&mut || {
        let mut traced = config.clone();
        traced.reproducers.functions = functions.iter().cloned().collect();
        let _ = analyze_file(&path, text, &NoFiles, &traced);
    });
    let _ = tx.send((1, outcome, ms));
    let (outcome, ms) = timed(&mut || {
        for reproducer in analysis.iter().flat_map(|a| a.reproducers.iter()).take(2) {
            // Half a second each, its first check included, so two fit the hang limit with
            // room for a loaded machine: the budget is what is under test.
            let _ = reproducer.minimised(&MinimiseConfig { max_time: Duration::from_millis(500), ..MinimiseConfig::default() });
        }
    });
    let _ = tx.send((2, outcome, ms));
    let (outcome, ms) = timed(&mut || {
        let mut run_config = config.clone();
        run_config.budgets.max_steps = u64::MAX;
        run_config.budgets.max_time = Duration::from_secs(3);
        let _ = run_file(&path, text, &NoFiles, &run_config);
    });
    let _ = tx.send((3, outcome, ms));
}

/// CPU time of this process (user + system), from `/proc/self/stat`, in clock ticks of 10 ms.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<u64> = after_name.split_whitespace().map(|f| f.parse().unwrap_or(0)).collect();
    // Fields 14 and 15 of the whole line (utime, stime) are 12 and 13 after the name.
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Writing 5 to `/proc/self/clear_refs` resets the peak RSS (`VmHWM`) to the current RSS.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
