//! Running a child process with captured output and a wall-clock limit.

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

pub struct Finished {
    /// `None` when the process was killed for running past its limit or by a signal.
    pub status: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub seconds: f64,
    /// CPU time (user + system, all threads) where the system tells it (Linux: read from
    /// `/proc` while the exited process waits to be reaped).
    pub cpu_seconds: Option<f64>,
}

impl Finished {
    pub fn describe_failure(&self) -> String {
        let how = if self.timed_out {
            format!("timed out after {:.0} s", self.seconds)
        } else {
            match self.status {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_string(),
            }
        };
        let stderr_tail = tail(&self.stderr, 12);
        if stderr_tail.is_empty() {
            how
        } else {
            format!("{how}; stderr ends:\n{stderr_tail}")
        }
    }
}

/// Kills the process group `pid` leads (`kill -KILL -- -pid`); the process itself is killed
/// by the caller either way.
fn kill_group(pid: u32) {
    if cfg!(unix) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

pub fn run_with_limit(mut command: Command, limit: Duration) -> std::io::Result<Finished> {
    let start = Instant::now();
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own process group, so that a limit reached kills what it started too (a generator
    // that runs its work in worker processes would otherwise leave them running).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn()?;
    let stdout_reader = child.stdout.take().map(spawn_reader);
    let stderr_reader = child.stderr.take().map(spawn_reader);

    let mut timed_out = false;
    let mut cpu_seconds = None;
    let status = loop {
        match exited_cpu_seconds(child.id()) {
            Some(Some(cpu)) => {
                cpu_seconds = Some(cpu);
                break child.wait()?;
            }
            Some(None) => {}
            None => {
                if let Some(status) = child.try_wait()? {
                    break status;
                }
            }
        }
        if start.elapsed() > limit {
            timed_out = true;
            kill_group(child.id());
            let _ = child.kill();
            break child.wait()?;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let seconds = start.elapsed().as_secs_f64();
    let collect = |reader: Option<thread::JoinHandle<Vec<u8>>>| {
        reader.and_then(|handle| handle.join().ok()).map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default()
    };
    Ok(Finished {
        status: if timed_out { None } else { status.code() },
        timed_out,
        stdout: collect(stdout_reader),
        stderr: collect(stderr_reader),
        seconds,
        cpu_seconds,
    })
}

/// From `/proc/PID/stat`: `Some(Some(cpu seconds))` once the process has exited and is not
/// yet reaped, `Some(None)` while it runs, `None` where there is no such file.
fn exited_cpu_seconds(pid: u32) -> Option<Option<f64>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.first() != Some(&"Z") {
        return Some(None);
    }
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    // utime and stime, in clock ticks of 1/100 s (USER_HZ on Linux).
    Some(Some((ticks(11)? + ticks(12)?) / 100.0))
}

fn spawn_reader<R: Read + Send + 'static>(mut source: R) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = source.read_to_end(&mut bytes);
        bytes
    })
}

pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_limit_reached_kills_what_the_process_started() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 >/dev/null 2>&1 & echo $!; wait"]);
        let done = run_with_limit(command, Duration::from_millis(300)).expect("sh runs");
        assert!(done.timed_out);
        let worker: u32 = done.stdout.trim().parse().expect("the worker's pid");
        // Killed: gone, or a zombie waiting for init to reap it.
        let alive = || std::fs::read_to_string(format!("/proc/{worker}/stat")).is_ok_and(|s| !s.contains(") Z "));
        let start = Instant::now();
        while alive() && start.elapsed() < Duration::from_secs(5) {
            thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(), "the worker {worker} outlived its limit");
    }
}
