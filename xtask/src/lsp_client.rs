//! A minimal LSP client over stdio for the tasks that drive `tracelens lsp` as an editor
//! does (`xtask hover`): Content-Length framing, requests matched by id, notifications kept.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub struct LspClient {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    /// Notifications received while waiting for something else, oldest first.
    pub notifications: Vec<Value>,
}

impl LspClient {
    /// Starts `binary lsp` and initialises it with no workspace folder (nothing to scan)
    /// and UTF-16 positions, as VS Code does.
    pub fn start(binary: &Path, initialization_options: Value) -> Result<LspClient, String> {
        let mut child = Command::new(binary)
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {} lsp: {e}", binary.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let mut client = LspClient { child, stdin, messages, next_id: 1, notifications: Vec::new() };
        let capabilities =
            json!({"general": {"positionEncodings": ["utf-16"]}, "textDocument": {"hover": {"contentFormat": ["markdown"]}}});
        client.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": capabilities, "initializationOptions": initialization_options}),
            Duration::from_secs(30),
        )?;
        client.notify("initialized", json!({}))?;
        Ok(client)
    }

    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Sends a request and waits for its response's `result` (an error response is `Err`).
    pub fn request(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + timeout;
        loop {
            let message = self.receive(deadline).map_err(|why| format!("{method}: {why}"))?;
            if message.get("id").and_then(Value::as_u64) == Some(id) && message.get("method").is_none() {
                return match message.get("error") {
                    Some(error) => Err(format!("{method}: {error}")),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            self.keep(message)?;
        }
    }

    /// Waits for a notification `method` whose params satisfy `wanted` (looking first at the
    /// ones already received), and removes it.
    pub fn wait_for(&mut self, method: &str, wanted: impl Fn(&Value) -> bool, timeout: Duration) -> Result<Value, String> {
        if let Some(i) = self.notifications.iter().position(|n| n["method"] == method && wanted(&n["params"])) {
            return Ok(self.notifications.remove(i)["params"].take());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let message = self.receive(deadline).map_err(|why| format!("waiting for {method}: {why}"))?;
            if message["method"] == method && wanted(&message["params"]) {
                return Ok(message["params"].clone());
            }
            self.keep(message)?;
        }
    }

    /// Shuts the server down and waits for it to exit.
    pub fn stop(mut self) {
        let _ = self.request("shutdown", Value::Null, Duration::from_secs(10));
        let _ = self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn receive(&mut self, deadline: Instant) -> Result<Value, String> {
        match self.messages.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(message) => Ok(message),
            Err(RecvTimeoutError::Timeout) => Err("timed out".into()),
            Err(RecvTimeoutError::Disconnected) => Err("the server exited".into()),
        }
    }

    /// A notification is kept; a request from the server is answered with null (this client
    /// declares no capability that needs more).
    fn keep(&mut self, message: Value) -> Result<(), String> {
        match (message.get("id"), message.get("method")) {
            (Some(id), Some(_)) => self.send(&json!({"jsonrpc": "2.0", "id": id, "result": null})),
            (None, Some(_)) => {
                self.notifications.push(message);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("cannot write: {e}"))
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length:") {
            length = n.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// `file:///abs/path` for an absolute path (percent-encoding what a URI cannot hold).
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => uri.push(byte as char),
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}
