//! The server's stdio as editors and scripts give it: pipes (written without blocking, see
//! `server/src/lsp/stdio.rs`), a client that stops reading until the pipe is full, and plain
//! files instead of pipes. In each, every request gets its one answer, every malformed frame
//! its JSON-RPC error, and no frame is cut or mixed into another.

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "support/frames.rs"]
mod frames;

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    frame(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
}

fn notification(method: &str, params: Value) -> Vec<u8> {
    frame(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string())
}

/// A session's messages: the initialization, `unknown` requests to a method the server does
/// not have (ids from 2), a malformed frame after every `bad_every`-th of them, then shutdown
/// (id 1,000,000). The client sends `exit` once the shutdown is answered, as the protocol asks.
fn session(root: &std::path::Path, unknown: u64, bad_every: u64) -> Vec<u8> {
    let uri = format!("file://{}", root.display());
    let mut out = request(1, "initialize", json!({"processId": null, "rootUri": uri, "capabilities": {}}));
    out.extend(notification("initialized", json!({})));
    for id in 2..2 + unknown {
        out.extend(request(id, "tracelens/noSuchMethod", json!({"padding": "x".repeat(64)})));
        if id % bad_every == 0 {
            out.extend(frame("{ not json"));
        }
    }
    out.extend(request(1_000_000, "shutdown", Value::Null));
    out
}

/// Checks the answers to `session(_, unknown, bad_every)`: one per request, by id, each what
/// the server says to it, and one parse error per malformed frame.
fn check_answers(messages: &[Value], unknown: u64, bad_every: u64) {
    let mut by_id: HashMap<u64, Vec<&Value>> = HashMap::new();
    let mut parse_errors = 0;
    for m in messages {
        match m["id"].as_u64() {
            Some(id) => by_id.entry(id).or_default().push(m),
            None if m["error"]["code"] == -32700 => parse_errors += 1,
            None => {}
        }
    }
    assert!(by_id.get(&1).is_some_and(|a| a.len() == 1 && a[0]["result"]["capabilities"].is_object()), "initialize answered once");
    for id in 2..2 + unknown {
        let answers = by_id.get(&id).map(Vec::as_slice).unwrap_or_default();
        assert_eq!(answers.len(), 1, "request {id}: {answers:?}");
        assert_eq!(answers[0]["error"]["code"], -32601, "request {id}: {}", answers[0]);
    }
    assert!(by_id.get(&1_000_000).is_some_and(|a| a.len() == 1 && a[0]["result"].is_null()), "shutdown answered once");
    assert_eq!(by_id.len() as u64, unknown + 2, "no answer to anything else");
    assert_eq!(parse_errors, (2..2 + unknown).filter(|id| id % bad_every == 0).count(), "one parse error per malformed frame");
}

fn workspace(name: &str) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("tracelens-stdio-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&root).expect("workspace");
    root
}

#[test]
fn a_client_that_stops_reading_until_the_pipe_is_full_loses_no_message() {
    let root = workspace("pipe");
    // About 3,000 answers of ~100 bytes: several times what a pipe holds (64 KiB on Linux).
    let (unknown, bad_every) = (3_000, 7);
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracelens"))
        .arg("lsp")
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tracelens lsp");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = session(&root, unknown, bad_every);
    // Written from a thread of its own: the server stops reading once its answers wait.
    let writer = std::thread::spawn(move || stdin.write_all(&input).and_then(|_| stdin.flush()).map(|_| stdin));
    // Nothing is read for a second: the server's stdout fills and its writes wait.
    std::thread::sleep(Duration::from_secs(1));
    let inbox = frames::spawn_reader(child.stdout.take().expect("stdout"));
    let mut messages = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Ok(m) = inbox.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let shut_down = m.v["id"] == 1_000_000;
        messages.push(m.v);
        if shut_down {
            break;
        }
    }
    let mut stdin = writer.join().expect("writer").expect("the server read all its input");
    stdin.write_all(&notification("exit", Value::Null)).expect("exit");
    drop(stdin);
    while let Ok(m) = inbox.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        messages.push(m.v);
    }
    frames::await_exit(&mut child);
    let status = child.wait().expect("exit status");
    assert_eq!(status.code(), Some(0), "exit after shutdown is 0");
    check_answers(&messages, unknown, bad_every);
    let _ = std::fs::remove_dir_all(&root);
}

/// The messages in a byte stream of `Content-Length` frames, each JSON.
fn parse_frames(mut rest: &[u8]) -> Vec<Value> {
    let mut messages = Vec::new();
    while let Some(body) = frames::read_body(&mut rest) {
        messages.push(serde_json::from_slice(&body).expect("a JSON body"));
    }
    messages
}

#[test]
fn the_server_reads_and_writes_plain_files_too() {
    let root = workspace("files");
    let input_path = root.join("input");
    let output_path = root.join("output");
    // A file cannot wait for answers: the initialization, a malformed frame, and the end.
    let uri = format!("file://{}", root.display());
    let mut input = request(1, "initialize", json!({"processId": null, "rootUri": uri, "capabilities": {}}));
    input.extend(frame("{ not json"));
    std::fs::write(&input_path, input).expect("input");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracelens"))
        .arg("lsp")
        .current_dir(&root)
        .stdin(std::fs::File::open(&input_path).expect("open input"))
        .stdout(std::fs::File::create(&output_path).expect("create output"))
        .stderr(Stdio::null())
        .spawn()
        .expect("start tracelens lsp");
    frames::await_exit(&mut child);
    let status = child.wait().expect("exit status");
    assert_eq!(status.code(), Some(1), "the input ended without shutdown: 1, as the protocol asks");
    let messages = parse_frames(&std::fs::read(&output_path).expect("output"));
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages.iter().any(|m| m["id"] == 1 && m["result"]["capabilities"].is_object()), "{messages:?}");
    assert!(messages.iter().any(|m| m["id"].is_null() && m["error"]["code"] == -32700), "{messages:?}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Reads messages from a stream until one answers `id` (or the stream ends), into `messages`.
fn read_until(reader: &mut impl std::io::BufRead, id: u64, messages: &mut Vec<Value>) {
    while let Some(body) = frames::read_body(reader) {
        let message: Value = serde_json::from_slice(&body).expect("a JSON body");
        let done = message["id"] == id;
        messages.push(message);
        if done {
            return;
        }
    }
}

#[cfg(unix)]
#[test]
fn the_server_speaks_over_a_socket_too() {
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    let root = workspace("socket");
    let (unknown, bad_every) = (40, 5);
    let (client, server) = UnixStream::pair().expect("socket pair");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracelens"))
        .arg("lsp")
        .current_dir(&root)
        .stdin(std::os::fd::OwnedFd::from(server.try_clone().expect("dup")))
        .stdout(std::os::fd::OwnedFd::from(server))
        .stderr(Stdio::null())
        .spawn()
        .expect("start tracelens lsp");
    client.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let mut writer = client.try_clone().expect("dup");
    let mut reader = std::io::BufReader::new(client);
    let session = session(&root, unknown, bad_every);
    // The initialization first, answered before anything else is sent.
    let first = request(1, "initialize", json!({"processId": null, "rootUri": format!("file://{}", root.display()), "capabilities": {}}));
    let mut messages = Vec::new();
    writer.write_all(&first).expect("initialize");
    read_until(&mut reader, 1, &mut messages);
    writer.write_all(&session[first.len()..]).expect("the session");
    read_until(&mut reader, 1_000_000, &mut messages);
    writer.write_all(&notification("exit", Value::Null)).expect("exit");
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
    messages.extend(parse_frames(&rest));
    frames::await_exit(&mut child);
    assert_eq!(child.wait().expect("exit status").code(), Some(0), "exit after shutdown is 0");
    check_answers(&messages, unknown, bad_every);
    let _ = std::fs::remove_dir_all(&root);
}
