//! A chaos client against the real language server over stdio (issue 20): malformed frames,
//! edit storms with stale and out-of-order versions, odd Unicode and line breaks, requests
//! interleaved on open, closed and unknown documents, a configuration change mid-storm. With
//! fixed seeds it asserts what a user relies on: the server never dies, every request gets
//! exactly one answer, a notification never gets one, every malformed frame gets its JSON-RPC
//! error, and each document's final diagnostics equal `tracelens check` on its final text.
//!
//! `TRACELENS_CHAOS_SEED=S cargo test -p tracelens --test lsp_chaos` runs seeds S, S+1 and
//! S+2 instead of 1, 2 and 3 (an even seed negotiates UTF-8 positions, an odd one UTF-16).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "support/frames.rs"]
mod frames;

/// splitmix64: the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const DOCS: &[(&str, &str)] = &[
    // Edited in order only: its final text is the client's model of the edits.
    ("exact.py", "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef step(w, x):\n    h = jnp.tanh(x @ w)\n    return (h ** 2).mean()\n\n\nstep(jnp.ones((4, 8)), jnp.ones((3, 4)))\nstep(jnp.ones((4, 8)), jnp.ones((3, 5)))\n"),
    // Stale and out-of-order versions, then one full-text change that fixes the final text.
    ("storm.py", "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n\n\nf(jnp.ones(3))\n"),
    ("unicode.py", "import jax\nimport jax.numpy as jnp\n\n# é𝄞 ünïcödé\n@jax.jit\ndef g(a, b):\n    return jnp.dot(a, b)\n\n\ng(jnp.ones((2, 3)), jnp.ones((4,)))\n"),
];

/// What edits insert: code, Unicode wider than one UTF-16 unit, and every kind of break
/// (LSP's three, and U+2028, NEL, form feed and vertical tab, which are not line breaks).
const SNIPPETS: &[&str] = &[
    "x",
    " ",
    "\n",
    "\r\n",
    "\r",
    "\u{2028}",
    "\u{2029}",
    "\u{85}",
    "\u{c}",
    "\u{b}",
    "é",
    "𝄞",
    "😀",
    "\t",
    "(",
    ")",
    "[",
    "]",
    ":",
    "jnp.ones((3, 4))",
    " @ ",
    "\n    return x\n",
    "# comment\n",
    "'''",
    "\"",
    "\\",
    "\u{0}",
    "jax.jit",
    "def h(y):\n    return y\n",
    "\u{feff}",
    "\u{200d}",
    "a\u{301}",
];

const MALFORMED: &[(&str, i64)] = &[
    ("{ this is not json", -32700),
    ("", -32700),
    ("\u{feff}{}", -32700),
    ("null", -32600),
    ("[]", -32600),
    ("123", -32600),
    ("\"str\"", -32600),
    ("{}", -32600),
    ("true", -32600),
    ("[{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}]", -32600),
    ("{\"jsonrpc\":\"1.0\",\"method\":\"x\"}", -32600),
    ("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"textDocument/hover\"}", -32600),
    ("{\"jsonrpc\":\"2.0\",\"method\":7}", -32600),
    ("{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":\"str\"}", -32600),
];

/// LSP's line breaks: `\n`, `\r\n`, `\r`.
fn line_starts(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut starts = vec![0];
    for i in 0..b.len() {
        if b[i] == b'\n' || b[i] == b'\r' && b.get(i + 1) != Some(&b'\n') {
            starts.push(i + 1);
        }
    }
    starts
}

fn unit_len(c: char, utf8: bool) -> u32 {
    if utf8 {
        c.len_utf8() as u32
    } else {
        c.len_utf16() as u32
    }
}

/// The byte offset of an LSP position, clamped as the server clamps (past a line's end to
/// the line's end, inside a character to after it, past the text to its end).
fn offset(text: &str, line: u32, col: u32, utf8: bool) -> usize {
    let starts = line_starts(text);
    let Some(&start) = starts.get(line as usize) else { return text.len() };
    let end = starts.get(line as usize + 1).copied().unwrap_or(text.len());
    let content = text[start..end].trim_end_matches(['\n', '\r']);
    let mut units = 0;
    for (i, c) in content.char_indices() {
        if units >= col {
            return start + i;
        }
        units += unit_len(c, utf8);
    }
    start + content.len()
}

/// The LSP position of a 1-based line and 1-based code-point column (`check --format json`).
fn lsp_position(text: &str, line: u64, column: u64, utf8: bool) -> (u64, u64) {
    let starts = line_starts(text);
    let start = starts.get(line.saturating_sub(1) as usize).copied().unwrap_or(text.len());
    let units: u32 = text[start..].chars().take(column.saturating_sub(1) as usize).map(|c| unit_len(c, utf8)).sum();
    (line.saturating_sub(1), u64::from(units))
}

fn apply(text: &mut String, range: ((u32, u32), (u32, u32)), new: &str, utf8: bool) {
    let a = offset(text, range.0 .0, range.0 .1, utf8);
    let b = offset(text, range.1 .0, range.1 .1, utf8).max(a);
    text.replace_range(a..b, new);
}

struct Client {
    child: Child,
    stdin: ChildStdin,
    inbox: Receiver<frames::Msg>,
    next_id: i64,
    /// Requests sent and not answered yet.
    pending: HashSet<i64>,
    /// Errors with `id: null` expected, by code, for the malformed frames sent.
    expected_null: HashMap<i64, usize>,
    got_null: HashMap<i64, usize>,
    /// The latest publishDiagnostics per uri: (version, diagnostics).
    published: HashMap<String, (i64, Vec<Value>)>,
    /// Answers by id, for the requests whose answer is checked.
    answers: HashMap<i64, Value>,
    settings: Value,
    violations: Vec<String>,
}

impl Client {
    fn write(&mut self, body: &str) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n{}", body.len(), body).expect("write to the server");
        let _ = self.stdin.flush();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string());
    }

    fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.insert(id);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        id
    }

    /// Reads what has arrived (waiting up to `wait` for the first message).
    fn drain(&mut self, wait: Duration) {
        let mut wait = wait;
        while let Ok(msg) = self.inbox.recv_timeout(wait) {
            wait = Duration::ZERO;
            self.take(msg.v);
        }
    }

    fn take(&mut self, m: Value) {
        match (m.get("id"), m.get("method").and_then(Value::as_str)) {
            // The server's own requests: configuration and progress.
            (Some(id), Some(method)) => {
                let result = if method == "workspace/configuration" { json!([self.settings]) } else { Value::Null };
                let reply = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                self.write(&reply);
            }
            (None, Some("textDocument/publishDiagnostics")) => {
                let uri = m["params"]["uri"].as_str().unwrap_or("").to_string();
                let version = m["params"]["version"].as_i64().unwrap_or(-1);
                self.published.insert(uri, (version, m["params"]["diagnostics"].as_array().cloned().unwrap_or_default()));
            }
            (None, Some(_)) => {}
            (Some(Value::Null), None) => {
                let code = m["error"]["code"].as_i64().unwrap_or(0);
                *self.got_null.entry(code).or_default() += 1;
            }
            (Some(id), None) => {
                let id = id.as_i64().unwrap_or(-1);
                if !self.pending.remove(&id) {
                    self.violations.push(format!("an answer to no pending request: {m}"));
                }
                self.answers.insert(id, m);
            }
            (None, None) => self.violations.push(format!("a message that is neither request, notification nor response: {m}")),
        }
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// Runs one seed; returns (edits sent, requests sent, malformed frames sent).
fn chaos(seed: u64) -> (usize, usize, usize) {
    let started = Instant::now();
    let mut rng = Rng(seed);
    let utf8 = seed % 2 == 0;
    let root = std::env::temp_dir().join(format!("tracelens-chaos-{seed}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("workspace");
    let root = std::fs::canonicalize(&root).expect("canonical");
    for (name, text) in DOCS {
        std::fs::write(root.join(name), text).expect("write");
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracelens"))
        .arg("lsp")
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tracelens lsp");
    let stdin = child.stdin.take().expect("stdin");
    let inbox = frames::spawn_reader(child.stdout.take().expect("stdout"));
    // The values pass adds NaN findings that `check` does not look for: off, to compare.
    let settings = json!({"debounceMs": 0, "workspaceScan": false, "values": {"enabled": false}});
    let mut c = Client {
        child,
        stdin,
        inbox,
        next_id: 1,
        pending: HashSet::new(),
        expected_null: HashMap::new(),
        got_null: HashMap::new(),
        published: HashMap::new(),
        answers: HashMap::new(),
        settings: settings.clone(),
        violations: Vec::new(),
    };
    let encodings = if utf8 { json!(["utf-8"]) } else { json!(["utf-16"]) };
    let init = c.request(
        "initialize",
        json!({"processId": null, "rootUri": uri(&root), "workspaceFolders": [{"uri": uri(&root), "name": "ws"}],
               "capabilities": {"general": {"positionEncodings": encodings}, "workspace": {"configuration": true}},
               "initializationOptions": settings}),
    );
    while c.pending.contains(&init) {
        c.drain(Duration::from_secs(20));
        assert!(c.alive(), "seed {seed}: the server died during initialize");
    }
    c.notify("initialized", json!({}));

    let paths: Vec<PathBuf> = DOCS.iter().map(|(n, _)| root.join(n)).collect();
    let uris: Vec<String> = paths.iter().map(|p| uri(p)).collect();
    let mut texts: Vec<String> = DOCS.iter().map(|(_, t)| t.to_string()).collect();
    let mut versions = vec![1i64; DOCS.len()];
    let mut open = vec![true; DOCS.len()];
    for i in 0..DOCS.len() {
        c.notify("textDocument/didOpen", json!({"textDocument": {"uri": uris[i], "languageId": "python", "version": 1, "text": texts[i]}}));
    }
    let unknown = ["file:///nowhere/x.py", "untitled:Untitled-1", "file:///"];
    let methods = [
        "textDocument/hover",
        "textDocument/inlayHint",
        "textDocument/codeLens",
        "textDocument/definition",
        "textDocument/codeAction",
        "textDocument/documentLink",
    ];
    let (mut edits, mut requests, mut malformed) = (0, 0, 0);
    let mut empty_expected: Vec<(i64, String)> = Vec::new();
    let mut invalid_params: Vec<i64> = Vec::new();
    let mut held: Option<(usize, i64, Value)> = None;
    for step in 0..1450 {
        let roll = rng.below(100);
        if step == 700 {
            // Mid-storm: a configuration change, which re-analyses every open document.
            c.settings = json!({"debounceMs": 5, "workspaceScan": false, "values": {"enabled": false}, "inlayHints": {"enabled": false}});
            let s = c.settings.clone();
            c.notify("workspace/didChangeConfiguration", json!({"settings": {"tracelens": s}}));
        }
        if roll < 70 {
            // An edit of a random document.
            let d = rng.below(DOCS.len());
            if !open[d] {
                versions[d] += 1;
                c.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uris[d], "languageId": "python", "version": versions[d], "text": texts[d]}}),
                );
                open[d] = true;
                continue;
            }
            let lines = line_starts(&texts[d]).len() as u32;
            let l0 = rng.below(lines as usize + 2) as u32;
            let c0 = rng.below(30) as u32;
            let (l1, c1) =
                if rng.below(3) == 0 { (l0 + rng.below(3) as u32, rng.below(30) as u32) } else { (l0, c0 + rng.below(4) as u32) };
            let mut new = String::new();
            for _ in 0..rng.below(3) {
                new.push_str(*rng.pick(SNIPPETS));
            }
            let range = ((l0, c0), (l1, c1));
            versions[d] += 1;
            let change = json!({"range": {"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}}, "text": new});
            let params = json!({"textDocument": {"uri": uris[d], "version": versions[d]}, "contentChanges": [change]});
            edits += 1;
            if d == 0 {
                apply(&mut texts[d], range, &new, utf8);
                c.notify("textDocument/didChange", params);
            } else if rng.below(8) == 0 {
                // A stale version (superseded, long ago or just now) that the server must
                // ignore, then the real one.
                let stale = 1 + rng.below(versions[d].max(2) as usize - 1) as i64;
                c.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uris[d], "version": stale}, "contentChanges": [{"text": "stale"}]}),
                );
                c.notify("textDocument/didChange", params);
            } else if held.is_none() && rng.below(6) == 0 {
                // Held back: sent after the next edit of any document (out of order).
                held = Some((d, versions[d], params));
                continue;
            } else {
                c.notify("textDocument/didChange", params);
            }
            if let Some((_, _, p)) = held.take() {
                c.notify("textDocument/didChange", p);
            }
        } else if roll < 88 {
            // A request at a random place of an open, closed or unknown document.
            let method = *rng.pick(&methods);
            let target = if rng.below(6) == 0 { rng.pick(&unknown).to_string() } else { uris[rng.below(DOCS.len())].clone() };
            let (line, character) = (rng.below(40) as u32, rng.below(60) as u32);
            let doc = json!({"uri": target});
            let range = json!({"start": {"line": line, "character": character}, "end": {"line": line + 2, "character": 0}});
            let params = match method {
                "textDocument/hover" | "textDocument/definition" => {
                    json!({"textDocument": doc, "position": {"line": line, "character": character}})
                }
                "textDocument/inlayHint" => json!({"textDocument": doc, "range": range}),
                "textDocument/codeAction" => json!({"textDocument": doc, "range": range, "context": {"diagnostics": []}}),
                _ => json!({"textDocument": doc}),
            };
            let id = c.request(method, params);
            requests += 1;
            if unknown.contains(&target.as_str()) {
                empty_expected.push((id, target));
            }
        } else if roll < 90 {
            // Well-formed JSON-RPC with params of the wrong shape: -32602 for a request;
            // a notification about a document that is not open changes nothing.
            let id = c.request("textDocument/hover", json!({"textDocument": 5, "position": "here"}));
            requests += 1;
            invalid_params.push(id);
            c.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": *rng.pick(&unknown), "version": 7}, "contentChanges": [{"text": "x = 1\n"}]}),
            );
            c.notify("textDocument/didClose", json!({"textDocument": {"uri": *rng.pick(&unknown)}}));
        } else if roll < 93 {
            let (body, code) = *rng.pick(MALFORMED);
            c.write(body);
            *c.expected_null.entry(code).or_default() += 1;
            malformed += 1;
        } else if roll < 96 {
            // Unknown methods: a request gets -32601, a notification nothing.
            let id = c.request("tracelens/noSuchMethod", json!({}));
            requests += 1;
            empty_expected.push((id, "-32601".into()));
            c.notify("tracelens/noSuchNotification", json!({"x": 1}));
            c.notify("$/cancelRequest", json!({"id": 999_999}));
        } else if roll < 98 {
            // Close a storm document (it comes back at its next edit, from the client's text).
            let d = 1 + rng.below(DOCS.len() - 1);
            if open[d] && held.as_ref().is_none_or(|(h, _, _)| *h != d) {
                c.notify("textDocument/didClose", json!({"textDocument": {"uri": uris[d]}}));
                open[d] = false;
            }
        } else {
            c.drain(Duration::from_millis(5));
        }
        if step % 50 == 0 {
            c.drain(Duration::ZERO);
            assert!(c.alive(), "seed {seed}: the server died at step {step}");
        }
    }
    if let Some((_, _, p)) = held.take() {
        c.notify("textDocument/didChange", p);
    }
    // The storm documents end on a full-text change, whose text is known whatever order the
    // server saw the out-of-order edits in.
    for d in 0..DOCS.len() {
        if !open[d] {
            versions[d] += 1;
            c.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uris[d], "languageId": "python", "version": versions[d], "text": texts[d]}}),
            );
        } else if d > 0 {
            versions[d] += 1;
            c.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uris[d], "version": versions[d]}, "contentChanges": [{"text": texts[d]}]}),
            );
        }
    }
    // Every request answered, and each document's diagnostics of its final version out.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        c.drain(Duration::from_millis(200));
        let published = (0..DOCS.len()).all(|d| c.published.get(&uris[d]).is_some_and(|(v, _)| *v == versions[d]));
        if c.pending.is_empty() && published {
            break;
        }
        assert!(c.alive(), "seed {seed}: the server died after the storm");
        assert!(
            Instant::now() < deadline,
            "seed {seed}: {} requests unanswered; published {:?}",
            c.pending.len(),
            c.published.iter().map(|(u, (v, _))| (u.clone(), *v)).collect::<Vec<_>>()
        );
    }
    // Quiet: no later publish for the same version replaces the one read.
    c.drain(Duration::from_millis(500));
    for (id, target) in &empty_expected {
        let answer = &c.answers[id];
        if target == "-32601" {
            assert_eq!(answer["error"]["code"], -32601, "seed {seed}: {answer}");
        } else {
            let result = &answer["result"];
            assert!(answer.get("error").is_none() && (result.is_null() || result == &json!([])), "seed {seed}: {target}: {answer}");
        }
    }
    for id in &invalid_params {
        assert_eq!(c.answers[id]["error"]["code"], -32602, "seed {seed}: {}", c.answers[id]);
    }
    let errors: Vec<&Value> = c
        .answers
        .iter()
        .filter(|(id, a)| a.get("error").is_some() && a["error"]["code"] != -32601 && !invalid_params.contains(id))
        .map(|(_, a)| a)
        .collect();
    assert!(errors.is_empty(), "seed {seed}: requests answered with errors: {errors:?}");
    assert_eq!(c.got_null, c.expected_null, "seed {seed}: the id-null errors (by code) for the malformed frames");
    assert!(c.violations.is_empty(), "seed {seed}: {:?}", c.violations);

    // The final diagnostics equal `tracelens check` on the final texts.
    for d in 0..DOCS.len() {
        std::fs::write(&paths[d], &texts[d]).expect("write final text");
    }
    for d in 0..DOCS.len() {
        let out = Command::new(env!("CARGO_BIN_EXE_tracelens"))
            .args(["check", "--format", "json", DOCS[d].0])
            .current_dir(&root)
            .output()
            .expect("run check");
        let checked: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("seed {seed}: check output: {e}"));
        let mut want: Vec<(String, (u64, u64), (u64, u64), String)> = checked
            .iter()
            .map(|x| {
                let n = |k: &str| x[k].as_u64().unwrap_or(0);
                let start = lsp_position(&texts[d], n("line"), n("column"), utf8);
                let end = lsp_position(&texts[d], n("end_line"), n("end_column"), utf8);
                (x["code"].as_str().unwrap_or("").to_string(), start, end, x["message"].as_str().unwrap_or("").to_string())
            })
            .collect();
        let mut got: Vec<(String, (u64, u64), (u64, u64), String)> = c.published[&uris[d]]
            .1
            .iter()
            .map(|x| {
                let p = |k: &str| (x["range"][k]["line"].as_u64().unwrap_or(0), x["range"][k]["character"].as_u64().unwrap_or(0));
                (x["code"].as_str().unwrap_or("").to_string(), p("start"), p("end"), x["message"].as_str().unwrap_or("").to_string())
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(
            got, want,
            "seed {seed}: {} (utf8 {utf8}): the server's final diagnostics differ from check's; final text {:?}",
            DOCS[d].0, texts[d]
        );
        let codes: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
        eprintln!("seed {seed}: {}: {} diagnostics, the same as check's: {codes:?}", DOCS[d].0, got.len());
    }

    let id = c.request("shutdown", Value::Null);
    while c.pending.contains(&id) {
        c.drain(Duration::from_secs(10));
        assert!(c.alive(), "seed {seed}: the server died at shutdown");
    }
    c.notify("exit", Value::Null);
    frames::await_exit(&mut c.child);
    assert_eq!(c.child.wait().ok().and_then(|s| s.code()), Some(0), "seed {seed}: exit status after shutdown and exit");
    let _ = std::fs::remove_dir_all(&root);
    assert!(started.elapsed() < Duration::from_secs(180), "seed {seed}: took {:?}", started.elapsed());
    (edits, requests, malformed)
}

/// The `k`-th seed of this run: `TRACELENS_CHAOS_SEED + k`, or `1 + k`.
fn seed(k: u64) -> u64 {
    let first = std::env::var("TRACELENS_CHAOS_SEED").ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(1);
    first.wrapping_add(k)
}

fn chaos_and_report(k: u64) {
    let seed = seed(k);
    let (e, r, m) = chaos(seed);
    eprintln!("seed {seed}: {e} edits, {r} requests, {m} malformed frames; the server lived, every request answered");
}

#[test]
fn the_server_survives_a_chaos_client_first_seed() {
    chaos_and_report(0);
}

#[test]
fn the_server_survives_a_chaos_client_second_seed() {
    chaos_and_report(1);
}

#[test]
fn the_server_survives_a_chaos_client_third_seed() {
    chaos_and_report(2);
}
