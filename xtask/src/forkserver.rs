//! Python programs run as `python PROGRAM ARGS...` would, each forked from one Python process
//! that imported the heavy modules once (`tests/conformance/forkserver.py`).
//!
//! Importing JAX costs about 1.3 s of CPU and TensorFlow about 4.5 s; a suite that runs
//! hundreds of programs pays that once per worker instead of once per program. A program
//! sees what it would see started fresh: its own process (group), `sys.argv`, `sys.path[0]`,
//! working directory and `__main__`, and its output captured apart. What it does to the
//! imported modules' state stays in its child.

use crate::process::Finished;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The script the server runs (in the repository, next to the oracles).
fn script() -> PathBuf {
    crate::conformance::workspace_root().join("tests").join("conformance").join("forkserver.py")
}

/// A server started on first use (a worker that gets no program imports nothing) and again
/// after it died; every program it runs gets the environment of the command `python` makes.
pub struct ForkServer<'a> {
    python: &'a (dyn Fn() -> Command + Sync),
    script: PathBuf,
    preload: Vec<String>,
    running: Option<Running>,
}

struct Running {
    child: Child,
    requests: ChildStdin,
    replies: BufReader<ChildStdout>,
    /// Where the programs' standard output and error are written.
    scratch: PathBuf,
}

impl<'a> ForkServer<'a> {
    /// `python()` is the interpreter with the environment the programs need (as a `Command`
    /// that would run one program, without its arguments); `preload`, the modules imported
    /// once, before any program.
    pub fn new(python: &'a (dyn Fn() -> Command + Sync), preload: &[&str]) -> ForkServer<'a> {
        ForkServer { python, script: script(), preload: preload.iter().map(|m| m.to_string()).collect(), running: None }
    }

    /// `python ARGV...` in `cwd`, killed with what it started after `limit`. `argv[0]` is a
    /// program's path or `-c` (then `argv[1]` is the code), as on Python's command line.
    pub fn run(&mut self, argv: &[OsString], cwd: &Path, limit: Duration) -> std::io::Result<Finished> {
        let started = Instant::now();
        let reply = self.request(argv, cwd, limit);
        if reply.is_err() {
            // The server itself failed (not the program): the next program gets a new one.
            if let Some(mut running) = self.running.take() {
                let _ = running.child.kill();
                let _ = running.child.wait();
            }
        }
        let (reply, scratch) = reply?;
        let read = |name: &str| std::fs::read(scratch.join(name)).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let timed_out = reply["timed_out"].as_bool().unwrap_or(false);
        Ok(Finished {
            status: reply["status"].as_i64().map(|s| s as i32),
            timed_out,
            stdout: read("stdout"),
            stderr: read("stderr"),
            seconds: reply["seconds"].as_f64().unwrap_or_else(|| started.elapsed().as_secs_f64()),
            cpu_seconds: reply["cpu_seconds"].as_f64(),
        })
    }

    fn request(&mut self, argv: &[OsString], cwd: &Path, limit: Duration) -> std::io::Result<(serde_json::Value, PathBuf)> {
        if self.running.is_none() {
            self.running = Some(self.start()?);
        }
        let running = self.running.as_mut().expect("started above");
        let text = |p: &Path| p.to_string_lossy().into_owned();
        let request = serde_json::json!({
            "argv": argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
            "cwd": text(cwd),
            "stdout": text(&running.scratch.join("stdout")),
            "stderr": text(&running.scratch.join("stderr")),
            "limit": limit.as_secs_f64(),
        });
        writeln!(running.requests, "{request}")?;
        running.requests.flush()?;
        let mut line = String::new();
        if running.replies.read_line(&mut line)? == 0 {
            let said = std::fs::read_to_string(running.scratch.join("server-stderr")).unwrap_or_default();
            return Err(std::io::Error::other(format!(
                "the Python fork server ended; its stderr ends:\n{}",
                crate::process::tail(&said, 12)
            )));
        }
        let reply: serde_json::Value = serde_json::from_str(&line).map_err(std::io::Error::other)?;
        if let Some(error) = reply["error"].as_str() {
            return Err(std::io::Error::other(format!("the Python fork server could not run it: {error}")));
        }
        Ok((reply, running.scratch.clone()))
    }

    fn start(&self) -> std::io::Result<Running> {
        static SERVERS: AtomicUsize = AtomicUsize::new(0);
        let scratch =
            std::env::temp_dir().join(format!("tracelens-forkserver-{}-{}", std::process::id(), SERVERS.fetch_add(1, Ordering::SeqCst)));
        std::fs::create_dir_all(&scratch)?;
        let mut command = (self.python)();
        let log = std::fs::File::create(scratch.join("server-stderr"))?;
        command.arg(&self.script).args(&self.preload).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(log);
        let mut child = command.spawn()?;
        let requests = child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?;
        let replies = BufReader::new(child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?);
        Ok(Running { child, requests, replies, scratch })
    }
}

impl Drop for ForkServer<'_> {
    fn drop(&mut self) {
        if let Some(mut running) = self.running.take() {
            // End of input ends the server once its last program has ended.
            drop(running.requests);
            let _ = running.child.wait();
            let _ = std::fs::remove_dir_all(&running.scratch);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn python() -> Command {
        Command::new("python3")
    }

    fn server(preload: &[&str]) -> ForkServer<'static> {
        ForkServer::new(&python, preload)
    }

    fn program(dir: &Path, name: &str, text: &str) -> OsString {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write the program");
        path.into_os_string()
    }

    #[test]
    fn a_program_sees_what_python_gives_a_fresh_one() {
        let dir = tempdir("fresh");
        std::fs::write(dir.join("helper.py"), "VALUE = 41\n").unwrap();
        let main = program(
            &dir,
            "main.py",
            "import os, sys, helper\nprint(__name__, sys.argv[1:], os.path.basename(sys.path[0]), helper.VALUE + 1)\n\
             print('to stderr', file=sys.stderr)\nimport json\nprint('json' in sys.modules)\n",
        );
        let mut server = server(&["json"]);
        let done = server.run(&[main, "a".into(), "b".into()], Path::new("/"), Duration::from_secs(30)).expect("it runs");
        assert_eq!(done.status, Some(0), "{}", done.stderr);
        let folder = dir.file_name().unwrap().to_string_lossy();
        assert_eq!(done.stdout, format!("__main__ ['a', 'b'] {folder} 42\nTrue\n"));
        assert_eq!(done.stderr, "to stderr\n");
    }

    #[test]
    fn exit_statuses_and_tracebacks_are_pythons() {
        let dir = tempdir("exits");
        let mut server = server(&[]);
        let mut run = |name: &str, text: &str| {
            let path = program(&dir, name, text);
            server.run(&[path], &dir, Duration::from_secs(30)).expect("it runs")
        };
        assert_eq!(run("ok.py", "pass\n").status, Some(0));
        assert_eq!(run("exit3.py", "import sys\nsys.exit(3)\n").status, Some(3));
        let message = run("message.py", "import sys\nsys.exit('bye')\n");
        assert_eq!((message.status, message.stderr.as_str()), (Some(1), "bye\n"));
        let raised = run("raises.py", "def f():\n    raise ValueError('no')\nf()\n");
        assert_eq!(raised.status, Some(1));
        let lines: Vec<&str> = raised.stderr.lines().collect();
        assert_eq!(lines[0], "Traceback (most recent call last):");
        assert!(lines[1].contains("raises.py\", line 3, in <module>"), "{}", raised.stderr);
        assert!(!raised.stderr.contains("forkserver.py"), "{}", raised.stderr);
        assert_eq!(lines.last(), Some(&"ValueError: no"));
        // A module's state set by one program is not the next one's.
        assert_eq!(run("set.py", "import json\njson.marker = 1\n").status, Some(0));
        assert_eq!(run("get.py", "import json, sys\nsys.exit(2 if hasattr(json, 'marker') else 0)\n").status, Some(0));
    }

    #[test]
    fn code_on_the_command_line_runs_as_python_dash_c() {
        let dir = tempdir("dash-c");
        std::fs::write(dir.join("sibling.py"), "NAME = 'sibling'\n").unwrap();
        let mut server = server(&[]);
        let code = "import sys, sibling\nprint(sys.argv, repr(sys.path[0]), sibling.NAME)";
        let done = server.run(&["-c".into(), code.into(), "x".into()], &dir, Duration::from_secs(30)).expect("it runs");
        assert_eq!(done.stdout, "['-c', 'x'] '' sibling\n", "{}", done.stderr);
    }

    #[test]
    fn a_program_past_its_limit_is_killed_and_the_server_goes_on() {
        let dir = tempdir("limit");
        let mut server = server(&[]);
        let sleeper = program(&dir, "sleep.py", "import subprocess, time\nsubprocess.Popen(['sleep', '30'])\ntime.sleep(30)\n");
        let started = Instant::now();
        let done = server.run(&[sleeper], &dir, Duration::from_millis(500)).expect("it runs");
        assert!(done.timed_out && done.status.is_none());
        assert!(started.elapsed() < Duration::from_secs(10));
        let next = program(&dir, "next.py", "print('next')\n");
        assert_eq!(server.run(&[next], &dir, Duration::from_secs(30)).expect("it runs").stdout, "next\n");
    }

    fn tempdir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tracelens-forkserver-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        dir
    }
}
