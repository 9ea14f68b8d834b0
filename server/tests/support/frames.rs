//! The reading half of a minimal LSP client: `Content-Length` frames from a server's stdout,
//! parsed on a thread of their own. Shared by the LSP tests and the LSP bench.

use std::io::{BufRead, BufReader, Read};
use std::process::ChildStdout;
use std::sync::mpsc::{channel, Receiver};
use std::time::Instant;

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
        loop {
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
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
            if reader.read_exact(&mut body).is_err() {
                return;
            }
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
