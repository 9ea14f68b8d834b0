//! The reading half of a minimal LSP client: `Content-Length` frames from a server's stdout,
//! parsed on a thread of their own, and the end of a server process. Shared by the LSP tests
//! and the LSP bench.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A message from the server and when the reader thread had read all of it.
pub struct Msg {
    #[allow(dead_code)] // read by the bench, not by the tests
    pub at: Instant,
    pub v: Value,
}

/// Reads messages until the server closes its stdout (or sends a frame that cannot be read).
pub fn spawn_reader(stdout: ChildStdout) -> Receiver<Msg> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        while let Some(body) = read_body(&mut reader) {
            let at = Instant::now();
            if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                if tx.send(Msg { at, v }).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The body of the next `Content-Length` frame; `None` at the end of the stream or on a frame
/// that cannot be read.
pub fn read_body(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// Waits up to five seconds for a server told to `exit` to end, then kills it.
pub fn await_exit(child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}
