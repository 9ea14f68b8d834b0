//! The language server end to end: the built binary over stdio, driven by a minimal LSP
//! client, as an editor drives it.
//!
//! Size: end-to-end editor sessions sharing one minimal LSP client; each test is one session.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "support/frames.rs"]
mod frames;

struct Client {
    child: Child,
    stdin: ChildStdin,
    inbox: Receiver<frames::Msg>,
    /// Messages read while waiting for something else.
    seen: Vec<Value>,
    next_id: i64,
}

impl Client {
    fn start(root: &Path, init_options: Value, utf8: bool) -> Client {
        Client::start_with(root, init_options, utf8, false)
    }

    /// `pull`: the client pulls diagnostics and accepts `workspace/diagnostic/refresh`.
    fn start_with(root: &Path, init_options: Value, utf8: bool, pull: bool) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tracelens"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tracelens lsp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let rx = frames::spawn_reader(stdout);
        let mut c = Client { child, stdin, inbox: rx, seen: Vec::new(), next_id: 1 };
        let uri = uri(root);
        let encodings = if utf8 { json!(["utf-8", "utf-16"]) } else { json!(["utf-16"]) };
        let init = c.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "ws"}],
                "capabilities": if pull {
                    json!({
                        "general": {"positionEncodings": encodings},
                        "window": {"workDoneProgress": true},
                        "textDocument": {"diagnostic": {"dynamicRegistration": false}},
                        "workspace": {"diagnostics": {"refreshSupport": true}},
                    })
                } else {
                    json!({"general": {"positionEncodings": encodings}, "window": {"workDoneProgress": true}})
                },
                "initializationOptions": init_options,
            }),
        );
        assert!(init["result"]["capabilities"]["hoverProvider"].as_bool().unwrap_or(false), "{init}");
        // Pull diagnostics are offered only to a client that pulls and takes refreshes; any
        // other would get them twice, pushed and pulled.
        assert_eq!(init["result"]["capabilities"]["diagnosticProvider"].is_object(), pull, "{init}");
        c.notify("initialized", json!({}));
        c
    }

    fn send(&mut self, v: &Value) {
        let body = v.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{}", body.len(), body).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn send_raw(&mut self, body: &str) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n{}", body.len(), body).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response, answering the server's own requests.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(|m| m.get("id") == Some(&json!(id)) && m.get("method").is_none())
    }

    fn wait(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.seen.iter().position(&want) {
            return self.seen.remove(pos);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self.inbox.recv_timeout(left).expect("a message from the server in time").v;
            // Answer server-to-client requests (configuration, progress tokens).
            if let (Some(id), Some(method)) = (m.get("id"), m.get("method").and_then(Value::as_str)) {
                let result = if method == "workspace/configuration" { json!([{}]) } else { Value::Null };
                let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                self.send(&reply);
                if want(&m) {
                    return m;
                }
                self.seen.push(m);
                continue;
            }
            if want(&m) {
                return m;
            }
            self.seen.push(m);
        }
    }

    /// The next diagnostics published for `uri` (optionally for a given version).
    fn diagnostics(&mut self, uri: &str, version: Option<i64>) -> Vec<Value> {
        let m = self.wait(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && version.is_none_or(|v| m["params"]["version"] == v)
        });
        m["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    /// A request on a document whose current version's analysis has an answer. Right after
    /// the diagnostics (published before the rest of the analysis is stored) the server waits
    /// at most five seconds for that analysis, then answers `null` (results of an older version
    /// point at the wrong text); on a loaded machine the analysis can take longer, and a user
    /// would ask again: so does this, for 20 seconds.
    fn settled(&mut self, method: &str, params: Value) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let answer = self.request(method, params.clone());
            if !answer["result"].is_null() || Instant::now() > deadline {
                return answer;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn hover(&mut self, u: &str, line: u32, character: u32) -> Value {
        self.settled("textDocument/hover", json!({"textDocument": {"uri": u}, "position": {"line": line, "character": character}}))
    }

    fn stop(mut self) {
        let _ = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        frames::await_exit(&mut self.child);
    }
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

fn workspace(tag: &str, files: &[(&str, &str)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-lsp-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("workspace");
    for (name, text) in files {
        std::fs::write(d.join(name), text).expect("write");
    }
    std::fs::canonicalize(&d).expect("canonical")
}

const STEP: &str = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef step(w, x):\n    h = jnp.tanh(x @ w)\n    print('h', h)\n    loss = (h ** 2).mean()\n    return loss\n\n\nfor n in (3, 3, 5):\n    step(jnp.ones((4, 8)), jnp.ones((n, 4)))\n";

fn open(c: &mut Client, path: &Path, text: &str) -> String {
    let u = uri(path);
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": u, "languageId": "python", "version": 1, "text": text}}));
    u
}

#[test]
fn diagnostics_hover_inlay_hints_lenses_and_definition() {
    let root = workspace("features", &[("step.py", STEP)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false}), false);
    let u = open(&mut c, &root.join("step.py"), STEP);
    let diags = c.diagnostics(&u, Some(1));
    let codes: Vec<(&str, u64)> =
        diags.iter().map(|d| (d["code"].as_str().unwrap_or(""), d["range"]["start"]["line"].as_u64().unwrap_or(0))).collect();
    assert!(codes.contains(&("TL201", 7)), "{diags:?}");
    assert!(codes.contains(&("TL210", 13)), "{diags:?}");
    let retrace = diags.iter().find(|d| d["code"] == "TL210").expect("TL210");
    assert!(retrace["message"].as_str().unwrap_or("").contains("argument x changed shape: f32[3,4] -> f32[5,4]"), "{retrace}");

    // Hover on `h` in `print('h', h)`: its aval in both traces.
    let hover = c.hover(&u, 7, 15);
    let text = hover["result"]["contents"]["value"].as_str().unwrap_or("").to_string();
    assert!(text.contains("h: f32[3,8] | f32[5,8]"), "{text}");
    assert!(
        text.contains(
            "traced 2×:\n- f32[3,8] in jit(step), traced from step.py:14 (called)\n- f32[5,8] in jit(step), traced from step.py:14 (called)"
        ),
        "{text}"
    );
    // Hover on the function name: its traces and the retrace reason.
    let hover = c.hover(&u, 5, 5);
    let text = hover["result"]["contents"]["value"].as_str().unwrap_or("").to_string();
    assert!(text.contains("jit(step)** traced 2×") && text.contains("retraced because argument x changed shape"), "{text}");
    insta::assert_snapshot!("step_function_hover", text);

    let hints = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": u}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 20, "character": 0}}}),
    );
    let labels: Vec<(u64, String)> = hints["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| (h["position"]["line"].as_u64().unwrap_or(0), h["label"].as_str().unwrap_or("").to_string()))
        .collect();
    let expected = [(5, ": f32[4,8]"), (5, ": f32[3,4] | f32[5,4]"), (6, ": f32[3,8] | f32[5,8]")];
    assert_eq!(labels, expected.map(|(l, s)| (l, s.to_string())), "parameters and `h`; scalar `loss` has no hint by default");

    // The whole diagnostics payload, as an editor receives it.
    let mut shown: Vec<Value> = diags.clone();
    for d in &mut shown {
        if let Some(rel) = d.get_mut("relatedInformation").and_then(Value::as_array_mut) {
            for r in rel {
                r["location"]["uri"] = json!("file:///ws/step.py");
            }
        }
    }
    insta::assert_json_snapshot!("step_diagnostics", shown);
    let lenses = c.request("textDocument/codeLens", json!({"textDocument": {"uri": u}}));
    assert_eq!(lenses["result"][0]["command"]["title"], "jit: traced 2× · 1 retrace");

    let def = c.request("textDocument/definition", json!({"textDocument": {"uri": u}, "position": {"line": 13, "character": 6}}));
    assert_eq!(def["result"]["range"]["start"]["line"], 4, "{def}");

    // "Show trace": both traces of `step`, with their jaxpr-like bodies.
    let trace = c.request("workspace/executeCommand", json!({"command": "tracelens.trace", "arguments": [u, 5]}));
    let text = trace["result"].as_str().unwrap_or("").to_string();
    assert!(text.contains("# trace 2") && text.contains("lambda") && text.contains("f32[5,8]"), "{trace}");

    // A line inserted above everything moves every diagnostic down one line (the edit
    // re-parses incrementally; the unchanged statements are reused, moved).
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "# a note\n"}]}),
    );
    let moved = c.diagnostics(&u, Some(2));
    let codes: Vec<(&str, u64)> =
        moved.iter().map(|d| (d["code"].as_str().unwrap_or(""), d["range"]["start"]["line"].as_u64().unwrap_or(0))).collect();
    assert!(codes.contains(&("TL201", 8)) && codes.contains(&("TL210", 14)), "{moved:?}");
    c.stop();
}

/// Hover text at a (0-based) line and column.
fn hover_at(c: &mut Client, u: &str, line: u32, character: u32) -> String {
    let hover = c.hover(u, line, character);
    hover["result"]["contents"]["value"].as_str().unwrap_or("").to_string()
}

const EVERY_CURSOR: &str = "\
import jax
import jax.numpy as jnp


def helper(v):
    return v * 2.0


class Model:
    def __init__(self):
        self.w = jnp.ones((4, 3))


@jax.jit
def train_step(params, x):
    y = helper(x @ params[\"w1\"])
    ys = [r + 1.0 for r in y]
    f = lambda a: a.sum()
    return f(ys[0])


m = Model()
bias = jnp.array([1.0, 2.0, 3.0])
train_step({\"w1\": jnp.ones((4, 3))}, jnp.ones((8, 4)))
";

#[test]
fn a_shape_under_every_cursor() {
    let root = workspace("every-cursor", &[("train.py", EVERY_CURSOR)]);
    let mut c = Client::start(&root, json!({"workspaceScan": false}), false);
    let u = open(&mut c, &root.join("train.py"), EVERY_CURSOR);
    c.diagnostics(&u, Some(1));
    let cases: [(u32, u32, &[&str]); 9] = [
        // A parameter in the def line, with the trace and its route.
        (14, 15, &["(parameter) params: pytree of 1 array", "['w1']: f32[4,3]", "in jit(train_step), traced from train.py:24 (called)"]),
        (14, 23, &["(parameter) x: f32[8,4]"]),
        // A helper called from the traced function: per calling trace.
        (4, 11, &["(parameter) v: f32[8,3]", "in jit(train_step)"]),
        // A constant item of a container, hovered on its key.
        (15, 27, &["(item) params[\"w1\"]: f32[4,3]"]),
        // A comprehension variable and a lambda parameter.
        (16, 22, &["r: f32[3]"]),
        (17, 15, &["(parameter) a: f32[3]"]),
        // An attribute path, assigned outside any trace.
        (10, 13, &["(attribute) self.w: f32[4,3]", "concrete, not traced"]),
        // A small concrete array at module level, with its value as NumPy prints it.
        (22, 1, &["bias: f32[3]", "concrete, not traced: `[1. 2. 3.]`"]),
        // The local the helper's result went to.
        (15, 4, &["y: f32[8,3]"]),
    ];
    for (line, character, needles) in cases {
        let text = hover_at(&mut c, &u, line, character);
        for needle in needles {
            assert!(text.contains(needle), "line {} col {}: no {needle:?} in\n{text}", line + 1, character + 1);
        }
    }

    // The graph command: DOT always, SVG when Graphviz is there.
    let graph = c.request("workspace/executeCommand", json!({"command": "tracelens.graph", "arguments": [u, 0]}));
    let dot = graph["result"]["dot"].as_str().unwrap_or("");
    assert!(dot.contains("jit(train_step) · trace 1 of 1") && dot.contains("dot_general") && dot.contains("URL=\"line:16\""), "{graph}");
    match graph["result"]["svg"].as_str() {
        Some(svg) => assert!(svg.contains("<svg") && svg.contains("dot_general"), "{svg}"),
        None => assert!(graph["result"]["error"].as_str().unwrap_or("").contains("Graphviz"), "{graph}"),
    }
    c.stop();
}

const LAYERS: &str = "\
import jax
import jax.numpy as jnp
import equinox as eqx
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(784, 512, rngs=rngs)
        self.drop = nnx.Dropout(0.1)

    def __call__(self, x):
        return self.drop(self.linear(x))


model = MLP(nnx.Rngs(0))
lin = eqx.nn.Linear(3, 4, key=jax.random.PRNGKey(0))


@nnx.jit
def step(model, x):
    return model(x)


y = step(model, jnp.ones((8, 784)))
";

/// A library's layers are shown in its own terms: the constructor's sizes, and the parameter
/// leaves under the key paths JAX's `tree_flatten_with_path` gives them in flax 0.12.8 and
/// equinox 0.13.8 (`.kernel.value` for an nnx Param, `.weight` for an equinox field, in each
/// library's order).
#[test]
fn a_layer_hover_speaks_the_library_language() {
    let root = workspace("layers", &[("model.py", LAYERS)]);
    let mut c = Client::start(&root, json!({"workspaceScan": false}), false);
    let u = open(&mut c, &root.join("model.py"), LAYERS);
    c.diagnostics(&u, Some(1));
    let cases: [(u32, u32, &[&str]); 4] = [
        // Inside the nnx.jit trace, the attribute holds tracers of the parameters' avals.
        (
            12,
            33,
            &[
                "(attribute) self.linear: Linear(in_features=784, out_features=512)",
                "  .bias.value: f32[512]\n  .kernel.value: f32[784,512]",
                "in jit(step)",
            ],
        ),
        // A layer without parameters still says what it is.
        (12, 22, &["(attribute) self.drop: Dropout(rate=0.1)\n```"]),
        // A user's module has no summary: its leaves by path.
        (15, 1, &["model: pytree of 2 arrays", ".linear.kernel.value: f32[784,512]", "concrete, not traced"]),
        (16, 1, &["lin: Linear(in_features=3, out_features=4)\n  .weight: f32[4,3]\n  .bias: f32[4]"]),
    ];
    for (line, character, needles) in cases {
        let text = hover_at(&mut c, &u, line, character);
        for needle in needles {
            assert!(text.contains(needle), "line {} col {}: no {needle:?} in\n{text}", line + 1, character + 1);
        }
    }
    c.stop();
}

#[test]
fn requests_sent_on_an_edits_diagnostics_see_that_edit() {
    // Diagnostics are published before the traced values behind hover, inlay hints, code
    // lenses and code actions are gathered; a client asks for those as soon as it sees the
    // diagnostics, and must get the new version's answers, not nothing.
    let root = workspace("early", &[("step.py", STEP)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false}), false);
    let u = open(&mut c, &root.join("step.py"), STEP);
    c.diagnostics(&u, Some(1));
    for version in 2..=21 {
        // A comment line above everything: `h` moves down a line with each edit.
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": version}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "# note\n"}]}),
        );
        c.diagnostics(&u, Some(version));
        let line = 7 + version - 1;
        let hover = c.hover(&u, line as u32, 15);
        let text = hover["result"]["contents"]["value"].as_str().unwrap_or("");
        assert!(text.contains("h: f32[3,8] | f32[5,8]"), "version {version}: {hover}");
        let lenses = c.request("textDocument/codeLens", json!({"textDocument": {"uri": u}}));
        assert_eq!(lenses["result"][0]["command"]["title"], "jit: traced 2× · 1 retrace", "version {version}");
        assert_eq!(lenses["result"][0]["range"]["start"]["line"], line - 3, "version {version}: {lenses}");
    }
    c.stop();
}

#[test]
fn quick_fixes_rewrite_immutable_updates_and_prints() {
    let src = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    print(\"x is\", x)\n    x[0] += 1\n    return x\n\n\nf(jnp.zeros(3))\n";
    let root = workspace("fixes", &[("fix.py", src)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false}), false);
    let u = open(&mut c, &root.join("fix.py"), src);
    let diags = c.diagnostics(&u, Some(1));
    assert!(diags.iter().any(|d| d["code"] == "TL107"), "{diags:?}");
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u}, "range": {"start": {"line": 7, "character": 4}, "end": {"line": 7, "character": 4}}, "context": {"diagnostics": []}}),
    );
    let titles: Vec<String> =
        actions["result"].as_array().into_iter().flatten().map(|a| a["title"].as_str().unwrap_or("").to_string()).collect();
    assert!(titles.iter().any(|t| t == "Use `x = x.at[0].add(1)`"), "{titles:?}");
    assert!(titles.iter().any(|t| t == "Ignore TL107 on this line"), "{titles:?}");
    let fix = actions["result"].as_array().into_iter().flatten().find(|a| a["title"] == "Use `x = x.at[0].add(1)`").expect("fix");
    let edit = &fix["edit"]["changes"][&u][0];
    assert_eq!(edit["newText"], "x = x.at[0].add(1)");
    assert_eq!((edit["range"]["start"]["line"].as_u64(), edit["range"]["start"]["character"].as_u64()), (Some(7), Some(4)));
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u}, "range": {"start": {"line": 6, "character": 6}, "end": {"line": 6, "character": 6}}, "context": {"diagnostics": []}}),
    );
    let print_fix = actions["result"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["title"] == "Print runtime values with jax.debug.print")
        .expect("print fix");
    assert_eq!(print_fix["edit"]["changes"][&u][0]["newText"], "jax.debug.print(\"x is {}\", x)");
    c.stop();
}

#[test]
fn an_edit_storm_ends_with_the_diagnostics_of_the_final_text() {
    let clean = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    return x.sum()\n\n\nf(jnp.ones(3))\n";
    let root = workspace("storm", &[("storm.py", clean)]);
    let mut c = Client::start(&root, json!({"debounceMs": 20, "workspaceScan": false}), true);
    let u = open(&mut c, &root.join("storm.py"), clean);
    assert!(c.diagnostics(&u, Some(1)).is_empty());
    // 1,000 single-character edits on line 6, alternating a breaking and a harmless text;
    // the last one leaves `if x.sum() > 0:` there, a TL101.
    let mut version = 1;
    for i in 0..1000 {
        version += 1;
        let text = if i % 2 == 0 { "    return x.sum() #" } else { "    return x.sum()" };
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": version}, "contentChanges": [{"range": {"start": {"line": 6, "character": 0}, "end": {"line": 6, "character": 999}}, "text": text}]}),
        );
    }
    version += 1;
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": version}, "contentChanges": [{"range": {"start": {"line": 6, "character": 0}, "end": {"line": 6, "character": 999}}, "text": "    if x.sum() > 0:\n        return x\n    return -x"}]}),
    );
    let diags = c.diagnostics(&u, Some(version as i64));
    let codes: Vec<&str> = diags.iter().filter_map(|d| d["code"].as_str()).collect();
    assert_eq!(codes, vec!["TL101"], "{diags:?}");
    assert_eq!(diags[0]["range"]["start"]["line"], 6);
    c.stop();
}

const NAN_LOSS: &str = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef loss(w, x):\n    return jnp.log(x @ w).sum()\n\n\nw = jnp.array([1.0, -2.0])\nx = jnp.ones((3, 2))\nprint(loss(w, x))\n";

#[test]
fn the_values_pass_adds_the_first_nan_after_the_shapes() {
    let root = workspace("values", &[("nan.py", NAN_LOSS)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false, "values": {"delayMs": 0}}), false);
    let u = open(&mut c, &root.join("nan.py"), NAN_LOSS);
    // Shapes first: nothing is wrong with them.
    assert!(c.diagnostics(&u, Some(1)).is_empty());
    // Then the values pass finds the NaN made by `log` inside the jitted function.
    let diags = c.diagnostics(&u, Some(1));
    let codes: Vec<(&str, u64)> =
        diags.iter().map(|d| (d["code"].as_str().unwrap_or(""), d["range"]["start"]["line"].as_u64().unwrap_or(0))).collect();
    assert_eq!(codes, vec![("TL301", 6)], "{diags:?}");
    assert!(diags[0]["message"].as_str().unwrap_or("").contains("invalid value (nan) encountered in log"), "{diags:?}");
    c.stop();

    // Turned off, the shapes are all there is.
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false, "values": {"enabled": false, "delayMs": 0}}), false);
    let u = open(&mut c, &root.join("nan.py"), NAN_LOSS);
    assert!(c.diagnostics(&u, Some(1)).is_empty());
    std::thread::sleep(Duration::from_millis(1500));
    let arrived: Vec<Value> = c.seen.drain(..).chain(std::iter::from_fn(|| c.inbox.try_recv().ok().map(|m| m.v))).collect();
    let more: Vec<&Value> = arrived.iter().filter(|m| m["method"] == "textDocument/publishDiagnostics").collect();
    assert!(more.is_empty(), "{more:?}");
    c.stop();
}

#[test]
fn the_reproducer_lens_of_a_function_without_an_error_stages_out_its_traces() {
    let text = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef scale(w, x):\n    return jnp.tanh(x @ w)\n\n\nscale(jnp.ones((4, 8)), jnp.ones((3, 4)))\nscale(jnp.ones((4, 8)), jnp.ones((5, 4)))\n";
    let root = workspace("lens", &[("clean.py", text)]);
    let path = root.join("clean.py");
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false, "values": {"enabled": false}}), false);
    let u = open(&mut c, &path, text);
    assert!(c.diagnostics(&u, Some(1)).iter().all(|d| d["severity"] != 1));
    let lenses = c.settled("textDocument/codeLens", json!({"textDocument": {"uri": u}}));
    let lens = lenses["result"]
        .as_array()
        .and_then(|l| l.iter().find(|x| x["command"]["title"] == "Generate reproducer").cloned())
        .unwrap_or_else(|| panic!("no reproducer lens in {lenses}"));
    let command = &lens["command"];
    let done = c.request("workspace/executeCommand", json!({"command": command["command"], "arguments": command["arguments"]}));
    let written = PathBuf::from(done["result"]["path"].as_str().unwrap_or_else(|| panic!("{done}")));
    assert_eq!(written, root.join("repro/clean_scale.py"));
    let repro = std::fs::read_to_string(&written).expect("the reproducer file");
    assert!(repro.contains("every traced call of scale in clean.py (2 traces)"), "{repro}");
    assert!(repro.contains("f32[4,8], f32[3,4]") && repro.contains("f32[4,8], f32[5,4]"), "{repro}");
    c.stop();
}

#[test]
fn bad_input_gets_answers_and_the_server_keeps_serving() {
    let root = workspace("robust", &[("r.py", STEP)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false}), false);
    let u = open(&mut c, &root.join("r.py"), STEP);
    c.diagnostics(&u, Some(1));
    c.send_raw("{ this is not json");
    c.send_raw("{\"jsonrpc\":\"2.0\",\"id\":999,\"method\":\"textDocument/hover\",\"params\":{\"bogus\":true}}");
    let unknown = c.request("tracelens/noSuchMethod", json!({}));
    assert!(unknown.get("error").is_some(), "{unknown}");
    // Positions past the end of a line and of the file.
    let far = c.request("textDocument/hover", json!({"textDocument": {"uri": u}, "position": {"line": 7, "character": 400}}));
    assert!(far.get("error").is_none(), "{far}");
    let farther = c.request("textDocument/hover", json!({"textDocument": {"uri": u}, "position": {"line": 4000, "character": 0}}));
    assert!(farther.get("error").is_none(), "{farther}");
    // A document that was never opened.
    let closed =
        c.request("textDocument/hover", json!({"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}));
    assert_eq!(closed["result"], Value::Null);
    // Still serving.
    let hover = c.hover(&u, 7, 15);
    assert!(hover["result"]["contents"]["value"].as_str().unwrap_or("").contains("f32[3,8]"), "{hover}");
    c.stop();
}

#[test]
fn editing_a_module_retraces_its_importers_and_the_workspace_is_scanned() {
    let lib = "import jax.numpy as jnp\n\n\ndef project(x, w):\n    return x @ w\n";
    let main = "import jax\nimport jax.numpy as jnp\nfrom lib import project\n\n\n@jax.jit\ndef run(x):\n    return project(x, jnp.ones((4, 2)))\n\n\nrun(jnp.ones((3, 4)))\n";
    let broken = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef g(x):\n    if x.sum() > 0:\n        return x\n    return x\n\n\ng(jnp.ones(2))\n";
    let root = workspace("cross", &[("lib.py", lib), ("main.py", main), ("closed.py", broken)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0}), false);
    // The scan publishes diagnostics for files nobody opened.
    let closed = c.diagnostics(&uri(&root.join("closed.py")), None);
    assert_eq!(closed.iter().filter_map(|d| d["code"].as_str()).collect::<Vec<_>>(), vec!["TL101"]);
    let main_uri = open(&mut c, &root.join("main.py"), main);
    assert!(c.diagnostics(&main_uri, Some(1)).is_empty());
    let lib_uri = open(&mut c, &root.join("lib.py"), lib);
    c.diagnostics(&lib_uri, Some(1));
    // Break lib.py in the editor (not on disk): main.py is traced again against it.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": lib_uri, "version": 2}, "contentChanges": [{"range": {"start": {"line": 4, "character": 11}, "end": {"line": 4, "character": 16}}, "text": "w @ x"}]}),
    );
    // The error is raised in lib.py, under the call main.py makes at line 8: shown there.
    // (Opening lib.py may trace main.py once more against the unedited lib.py first.)
    let diags = loop {
        let d = c.diagnostics(&main_uri, Some(1));
        if !d.is_empty() {
            break d;
        }
    };
    let codes: Vec<(&str, u64)> =
        diags.iter().map(|d| (d["code"].as_str().unwrap_or(""), d["range"]["start"]["line"].as_u64().unwrap_or(0))).collect();
    assert_eq!(codes, vec![("TL104", 7)], "{diags:?}");
    // lib.py alone calls nothing, but main.py's analysis reaches the error there: lib.py
    // shows it where it is, with main.py's call in the related information.
    let in_lib = loop {
        let d = c.diagnostics(&lib_uri, Some(2));
        if !d.is_empty() {
            break d;
        }
    };
    let [error] = in_lib.as_slice() else { panic!("one diagnostic expected: {in_lib:?}") };
    assert_eq!((error["code"].as_str(), error["range"]["start"]["line"].as_u64()), (Some("TL104"), Some(4)), "{error}");
    let related = &error["relatedInformation"][0];
    assert_eq!(related["location"]["uri"], main_uri, "{error}");
    assert_eq!(range_text(main, &related["location"]["range"]), "return project(x, jnp.ones((4, 2)))", "{error}");
    assert!(related["message"].as_str().unwrap_or("").starts_with("reached from main.py"), "{error}");
    c.stop();
}

/// A finding in a module nobody opened, reached only from another file's entry point, is
/// published for that module by the workspace scan, once, with the importer related.
#[test]
fn a_finding_reached_from_an_importer_is_shown_in_its_own_file() {
    let lib = "import jax.numpy as jnp


def project(x, w):
    print('x', x)
    return x @ w
";
    let main = "import jax
import jax.numpy as jnp
from lib import project


@jax.jit
def run(x):
    return project(x, jnp.ones((4, 2)))


run(jnp.ones((3, 4)))
";
    let root = workspace("reached", &[("lib.py", lib), ("main.py", main)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0}), false);
    let lib_uri = uri(&root.join("lib.py"));
    let in_lib = loop {
        let d = c.diagnostics(&lib_uri, None);
        if !d.is_empty() {
            break d;
        }
    };
    let [print] = in_lib.as_slice() else { panic!("one diagnostic expected: {in_lib:?}") };
    assert_eq!((print["code"].as_str(), print["range"]["start"]["line"].as_u64()), (Some("TL201"), Some(4)), "{print}");
    assert_eq!(print["relatedInformation"][0]["location"]["uri"], uri(&root.join("main.py")), "{print}");
    // main.py's own diagnostics do not repeat it.
    let in_main = c.diagnostics(&uri(&root.join("main.py")), None);
    assert!(in_main.iter().all(|d| d["code"] != "TL201"), "{in_main:?}");
    c.stop();
}

#[test]
fn an_error_raised_in_an_imported_module_is_shown_at_the_call_with_its_reproducer() {
    let lib = "import jax.numpy as jnp\n\n\ndef project(x, w):\n    return x @ w\n";
    let main = "import jax\nimport jax.numpy as jnp\nfrom lib import project\n\n\n@jax.jit\ndef run(x):\n    return project(x, jnp.ones((3, 2)))\n\n\nrun(jnp.ones((3, 4)))\n";
    let root = workspace("raised-elsewhere", &[("lib.py", lib), ("main.py", main)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false}), false);
    let u = open(&mut c, &root.join("main.py"), main);
    // Shown on the line of main.py whose call leads to it, pointing at where it is raised.
    let diags = c.diagnostics(&u, Some(1));
    let [error] = diags.as_slice() else { panic!("one diagnostic expected: {diags:?}") };
    assert_eq!(error["code"], "TL104", "{error}");
    assert_eq!(range_text(main, &error["range"]), "return project(x, jnp.ones((3, 2)))", "{error}");
    let message = error["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("TypeError: dot_general") && message.contains("(raised in lib.py:5 under the call on this line)"),
        "{message}"
    );
    let related = &error["relatedInformation"][0];
    assert_eq!(related["location"]["uri"], uri(&root.join("lib.py")), "{error}");
    assert_eq!(related["location"]["range"]["start"]["line"], 4, "{error}");
    // The code action writes the reproducer from that line ...
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u}, "range": error["range"], "context": {"diagnostics": [error]}}),
    );
    let titles: Vec<&str> = actions["result"].as_array().into_iter().flatten().filter_map(|a| a["title"].as_str()).collect();
    assert_eq!(titles, vec!["Write a pure-JAX reproducer of TL104"], "{actions}");
    let command = &actions["result"][0]["command"];
    let done = c.request("workspace/executeCommand", json!({"command": command["command"], "arguments": command["arguments"]}));
    let written = PathBuf::from(done["result"]["path"].as_str().unwrap_or_else(|| panic!("{done}")));
    assert_eq!(written, root.join("repro/main_line8.py"));
    let repro = std::fs::read_to_string(&written).expect("the reproducer file");
    assert!(repro.contains("tracelens reproducer for TL104 at lib.py:5"), "{repro}");
    assert!(repro.lines().any(|l| l.contains(" @ ") && l.ends_with("# lib.py:5")), "{repro}");
    // ... and so does "Generate reproducer" on the traced function that makes the call.
    let lenses = c.request("textDocument/codeLens", json!({"textDocument": {"uri": u}}));
    let generate = lenses["result"]
        .as_array()
        .and_then(|l| l.iter().find(|x| x["command"]["title"] == "Generate reproducer").cloned())
        .unwrap_or_else(|| panic!("no reproducer lens in {lenses}"));
    assert_eq!(generate["command"]["arguments"][1], 7, "{generate}");
    c.stop();
}

#[test]
fn a_client_that_pulls_gets_each_diagnostic_once() {
    let root = workspace("pull", &[("step.py", STEP)]);
    let path = root.join("step.py");
    let mut c = Client::start_with(&root, json!({"debounceMs": 0}), false, true);
    // The workspace scan pushes the closed file's diagnostics.
    let u = uri(&path);
    let scanned = c.diagnostics(&u, None);
    assert!(scanned.iter().any(|d| d["code"] == "TL201"), "{scanned:?}");
    // Opened, the document is pulled: the pushed diagnostics are withdrawn ...
    open(&mut c, &path, STEP);
    let withdrawn = c.diagnostics(&u, None);
    assert!(withdrawn.is_empty(), "{withdrawn:?}");
    // ... and the server asks for a pull once the open version is traced.
    c.wait(|m| m["method"] == "workspace/diagnostic/refresh");
    let report = c.request("textDocument/diagnostic", json!({"textDocument": {"uri": u}}));
    let items = report["result"]["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(report["result"]["kind"], "full", "{report}");
    assert!(items.iter().any(|d| d["code"] == "TL201"), "{report}");
    // Never pushed for the open version as well.
    let pushed_again = c.seen.iter().any(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == 1);
    assert!(!pushed_again, "open document pushed as well as pulled");
    c.stop();
}

#[test]
fn a_reproducer_is_offered_on_an_error_and_written_by_the_server() {
    let text = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef project(w, x):\n    h = jnp.tanh(x @ w)\n    return h @ w\n\n\nproject(jnp.ones((4, 8)), jnp.ones((3, 4)))\n";
    let root = workspace("repro", &[("model.py", text)]);
    let path = root.join("model.py");
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false, "reproducerFolder": "out/repro"}), false);
    let u = open(&mut c, &path, text);
    let diags = c.diagnostics(&u, Some(1));
    let error = diags.iter().find(|d| d["severity"] == 1).cloned().unwrap_or_else(|| panic!("no error in {diags:?}"));
    let line = error["range"]["start"]["line"].as_u64().expect("line");
    assert_eq!(line, 7, "{error}");
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u}, "range": error["range"], "context": {"diagnostics": [error]}}),
    );
    let action = actions["result"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["title"].as_str().is_some_and(|t| t.starts_with("Write a pure-JAX reproducer"))).cloned())
        .unwrap_or_else(|| panic!("no reproducer action in {actions}"));
    let command = &action["command"];
    let done = c.request("workspace/executeCommand", json!({"command": command["command"], "arguments": command["arguments"]}));
    let written = PathBuf::from(done["result"]["path"].as_str().unwrap_or_else(|| panic!("{done}")));
    assert_eq!(written, root.join("out/repro/model_line8.py"));
    let repro = std::fs::read_to_string(&written).expect("the reproducer file");
    assert!(repro.contains("import jax") && repro.contains("model.py"), "{repro}");
    assert!(!repro.contains(&*root.to_string_lossy()), "absolute path in the reproducer:\n{repro}");
    // A line without an error: nothing to reproduce, nothing written.
    let none = c.request("workspace/executeCommand", json!({"command": "tracelens.repro", "arguments": [u, 0]}));
    assert_eq!(none["result"]["message"], "model.py:1: no error to reproduce at this line", "{none}");
    assert!(!root.join("out/repro/model_line1.py").exists());
    c.stop();
}

#[test]
fn a_reproducer_is_offered_only_where_one_can_be_written() {
    // The NameError's program needs `SCALE`, which needs `math.log` (NumPy's `log` need not
    // give the same value, so `math` stays), and a reproducer may not import `math`: no
    // reproducer, so no action. In the other file the same error has one.
    let no_repro = "import math\n\nimport jax\nimport jax.numpy as jnp\n\nSCALE = math.log(2.0)\n\n\n@jax.jit\ndef loss(w, x):\n    return (x @ w).sum() * SCALE + bias\n\n\nloss(jnp.ones((3, 2)), jnp.ones((4, 3)))\n";
    let with_repro = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef loss(w, x):\n    return (x @ weight).sum()\n\n\nloss(jnp.ones((3, 2)), jnp.ones((4, 3)))\n";
    let root = workspace("repro-offered", &[("scaled.py", no_repro), ("typo.py", with_repro)]);
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false}), false);
    let titles_at_error = |c: &mut Client, name: &str, text: &str, code: &str| {
        let u = open(c, &root.join(name), text);
        let diags = c.diagnostics(&u, Some(1));
        let error = diags.iter().find(|d| d["severity"] == 1).cloned().unwrap_or_else(|| panic!("no error in {diags:?}"));
        assert_eq!(error["code"], code, "{error}");
        let actions = c.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": u}, "range": error["range"], "context": {"diagnostics": [error]}}),
        );
        let titles: Vec<String> =
            actions["result"].as_array().into_iter().flatten().filter_map(|a| a["title"].as_str().map(str::to_string)).collect();
        (u, error["range"]["start"]["line"].as_u64().unwrap_or(0), titles)
    };
    let (u, line, titles) = titles_at_error(&mut c, "scaled.py", no_repro, "TL190");
    assert!(titles.iter().any(|t| t.starts_with("Ignore TL190")), "{titles:?}");
    assert!(!titles.iter().any(|t| t.contains("reproducer")), "{titles:?}");
    // Asked anyway, the command says why and writes nothing.
    let none = c.request("workspace/executeCommand", json!({"command": "tracelens.repro", "arguments": [u, line]}));
    assert!(none["result"]["message"].as_str().is_some_and(|m| m.contains("cannot be reproduced standalone")), "{none}");
    let (_, _, titles) = titles_at_error(&mut c, "typo.py", with_repro, "TL190");
    assert!(titles.iter().any(|t| t == "Write a pure-JAX reproducer of TL190"), "{titles:?}");
    c.stop();
}

/// The text of `range` (LSP, UTF-16 = bytes here: ASCII) in `text`.
fn range_text<'a>(text: &'a str, range: &Value) -> &'a str {
    let line = text.lines().nth(range["start"]["line"].as_u64().unwrap_or(0) as usize).unwrap_or("");
    let (s, e) = (range["start"]["character"].as_u64().unwrap_or(0) as usize, range["end"]["character"].as_u64().unwrap_or(0) as usize);
    line.get(s..e).unwrap_or("")
}

#[test]
fn reproducers_are_linked_both_ways_to_the_source() {
    let text = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef project(w, x):\n    h = jnp.tanh(x @ w)\n    return h @ w\n\n\nproject(jnp.ones((4, 8)), jnp.ones((3, 4)))\n";
    let root = workspace("links", &[]);
    std::fs::create_dir_all(root.join("pkg")).expect("pkg");
    let source = root.join("pkg/model.py");
    std::fs::write(&source, text).expect("write");
    let mut c = Client::start(&root, json!({"debounceMs": 0, "workspaceScan": false}), false);
    let before = c.request("workspace/executeCommand", json!({"command": "tracelens.openReproducer", "arguments": [uri(&source), 7]}));
    assert!(before["result"]["message"].as_str().is_some_and(|m| m.contains("no reproducer")), "{before}");
    let u = open(&mut c, &source, text);
    c.diagnostics(&u, Some(1));

    // On the source: "Generate reproducer" on the traced function writes the reproducer of the
    // error inside it; until then there is no lens to open one.
    let lenses = c.settled("textDocument/codeLens", json!({"textDocument": {"uri": u}}));
    let titles: Vec<&str> = lenses["result"].as_array().into_iter().flatten().filter_map(|l| l["command"]["title"].as_str()).collect();
    assert_eq!(titles, vec!["jit: traced 1×", "Generate reproducer"], "{lenses}");
    let generate = &lenses["result"][1]["command"];
    assert_eq!(generate["command"], "tracelens.repro");
    let done = c.request("workspace/executeCommand", json!({"command": generate["command"], "arguments": generate["arguments"]}));
    let written = PathBuf::from(done["result"]["path"].as_str().unwrap_or_else(|| panic!("{done}")));
    assert_eq!(written, root.join("repro/model_line8.py"));
    let repro = std::fs::read_to_string(&written).expect("the reproducer");
    let repro_lines: Vec<&str> = repro.lines().collect();

    // Back from the source to the reproducer: a lens on the function, and the command on a line.
    let lenses = c.request("textDocument/codeLens", json!({"textDocument": {"uri": u}}));
    let open_lens = lenses["result"]
        .as_array()
        .and_then(|l| l.iter().find(|x| x["command"]["command"] == "tracelens.openReproducer").cloned())
        .unwrap_or_else(|| panic!("no lens to open the reproducer in {lenses}"));
    let title = open_lens["command"]["title"].as_str().unwrap_or("");
    assert!(title.starts_with("Open reproducer model_line8.py:"), "{title}");
    let opened = c.request(
        "workspace/executeCommand",
        json!({"command": "tracelens.openReproducer", "arguments": open_lens["command"]["arguments"]}),
    );
    assert_eq!(opened["result"]["path"].as_str(), Some(&*written.to_string_lossy()), "{opened}");
    let at = opened["result"]["line"].as_u64().unwrap_or(u64::MAX) as usize;
    assert!(repro_lines.get(at).is_some_and(|l| l.starts_with("def project(") && l.ends_with("# pkg/model.py:5")), "line {at} of\n{repro}");
    assert!(title.ends_with(&format!(":{}", at + 1)), "{title}");
    let opened = c.request("workspace/executeCommand", json!({"command": "tracelens.openReproducer", "arguments": [u, 7]}));
    let at = opened["result"]["line"].as_u64().unwrap_or(u64::MAX) as usize;
    assert!(repro_lines.get(at).is_some_and(|l| l.contains(" @ w") && l.ends_with("# pkg/model.py:8")), "line {at} of\n{repro}");
    let none = c.request("workspace/executeCommand", json!({"command": "tracelens.openReproducer", "arguments": [u, 0]}));
    assert!(none["result"]["message"].as_str().is_some_and(|m| m.contains("stands for line 1")), "{none}");

    // In the reproducer: every `# pkg/model.py:N` is a link to that line.
    let ru = open(&mut c, &written, &repro);
    let links = c.request("textDocument/documentLink", json!({"textDocument": {"uri": ru}}));
    let found: Vec<(u64, &str, &str)> = links["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| (l["range"]["start"]["line"].as_u64().unwrap_or(0), range_text(&repro, &l["range"]), l["target"].as_str().unwrap_or("")))
        .collect();
    // The header's `at pkg/model.py:8` included.
    let commented =
        repro_lines.iter().filter(|l| l.starts_with('#') && l.contains(" pkg/model.py:") || l.contains("  # pkg/model.py:")).count();
    assert!(commented >= 3 && found.len() == commented, "{found:?}\n{repro}");
    let error_line = repro_lines.iter().position(|l| l.ends_with("# pkg/model.py:8") && !l.starts_with('#')).expect("a line for line 8");
    let link = found.iter().find(|(l, _, _)| *l == error_line as u64).unwrap_or_else(|| panic!("{found:?}"));
    assert_eq!((link.1, link.2), ("pkg/model.py:8", &*format!("{}#L8", uri(&source))));

    // Go to definition on a reproducer line: the user's line, at its first character.
    let def = c.request("textDocument/definition", json!({"textDocument": {"uri": ru}, "position": {"line": error_line, "character": 2}}));
    assert_eq!(def["result"]["uri"], json!(u), "{def}");
    assert_eq!(
        (def["result"]["range"]["start"]["line"].as_u64(), def["result"]["range"]["start"]["character"].as_u64()),
        (Some(7), Some(4))
    );
    c.stop();
}

#[test]
fn exit_without_shutdown_ends_with_status_1() {
    let root = workspace("exit", &[]);
    let mut c = Client::start(&root, json!({"workspaceScan": false}), false);
    c.notify("exit", Value::Null);
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Ok(Some(status)) = c.child.try_wait() {
            break status;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1));
}

const OPT_STATES: &str = "\
import jax
import jax.numpy as jnp
import optax
import flax.linen as nn
from flax import nnx
from flax.training import train_state

params = {'linear': {'kernel': jnp.zeros((784, 512)), 'bias': jnp.zeros((512,))}}
opt_state = optax.adam(1e-3).init(params)
chained = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3)).init(params)


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(784, 512, rngs=rngs)


net = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(net, optax.adam(1e-3), wrt=nnx.Param)
nnx_state = optimizer.opt_state
graphdef, model_state = nnx.split(net)


class Lin(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(512, name='linear')(x)


m = Lin()
variables = m.init(jax.random.PRNGKey(0), jnp.zeros((1, 784)))
state = train_state.TrainState.create(apply_fn=m.apply, params=variables['params'], tx=optax.adam(1e-3))
ts_state = state.opt_state
";

/// An optimizer state's leaves are named by optax's fields, under the key paths
/// `jax.tree_util.tree_flatten_with_path` gives them with optax 0.2.8 and flax 0.12.8: a bare
/// optax state, a chain's, an `nnx.Optimizer`'s (its leaves are Variables: `.value`) and a
/// `TrainState`'s; and an nnx State's by item (`['linear']['kernel'].value`).
#[test]
fn an_optimizer_state_hover_names_its_leaves_by_optax_field() {
    let root = workspace("optstates", &[("opt.py", OPT_STATES)]);
    let mut c = Client::start(&root, json!({"workspaceScan": false}), false);
    let u = open(&mut c, &root.join("opt.py"), OPT_STATES);
    c.diagnostics(&u, Some(1));
    let cases: [(u32, u32, &[&str]); 5] = [
        (
            8,
            1,
            &[
                "opt_state: pytree of 5 arrays",
                "[0].count: i32[]",
                "[0].mu['linear']['bias']: f32[512]",
                "[0].nu['linear']['kernel']: f32[784,512]",
            ],
        ),
        (9, 1, &["chained: pytree of 5 arrays", "[1][0].count: i32[]", "[1][0].mu['linear']['kernel']: f32[784,512]"]),
        (19, 1, &["nnx_state: pytree of 5 arrays", "[0].count.value: i32[]", "[0].mu['linear']['kernel'].value: f32[784,512]"]),
        (32, 1, &["ts_state: pytree of 5 arrays", "[0].count: i32[]", "[0].nu['linear']['kernel']: f32[784,512]"]),
        // An nnx State is keyed as flax's flatten keys it: by item, not by its attributes.
        (20, 10, &["model_state: pytree of 2 arrays", "\n  ['linear']['kernel'].value: f32[784,512]"]),
    ];
    for (line, character, needles) in cases {
        let text = hover_at(&mut c, &u, line, character);
        for needle in needles {
            assert!(text.contains(needle), "line {} col {}: no {needle:?} in\n{text}", line + 1, character + 1);
        }
    }
    c.stop();
}

const KEYLESS_PYTREES: &str = r#"import jax
import jax.numpy as jnp
from jax.tree_util import register_pytree_node


class Pair:
    def __init__(self, a, b):
        self.a = a
        self.b = b


register_pytree_node(Pair, lambda p: ((p.b, {"w": p.a}), None), lambda aux, c: Pair(c[1]["w"], c[0]))


class Stack:
    def __init__(self, layers):
        self.layers = layers

    def tree_flatten(self):
        return self.layers, None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(list(children))


jax.tree_util.register_pytree_node_class(Stack)


class Odd:
    def __init__(self, x):
        self.x = x


def odd_flatten(o):
    children = (o.x,)
    return children, None


register_pytree_node(Odd, odd_flatten, lambda aux, c: Odd(c[0]))

pair = Pair(jnp.ones(3), jnp.zeros((2, 4)))
stack = Stack([jnp.ones((4, 8)), jnp.ones(8)])
odd = Odd(jnp.ones(5))
leaves = jax.tree_util.tree_leaves(odd)
print(odd, pair, stack)
"#;

const MUTATED_LATER: &str = "\
import jax.numpy as jnp

params = {'w': jnp.ones((4, 3))}
layers = [{'k': jnp.ones(2)}]
params['b'] = jnp.zeros(3)
params['w'] = jnp.ones((2, 2))
layers[0]['k'] = jnp.ones(5)
for step in range(3):
    batch = {'x': jnp.ones((8, 4)) * step}
print(params, layers, batch)
";

/// Hover outside traces shows what a name held at that line, though its dicts and lists
/// change afterwards: the analysis keeps a copy of each pytree it saw (its arrays shared) and
/// writes out the leaves only after the edit's diagnostics are published.
#[test]
fn a_hover_shows_a_dict_as_it_was_at_that_line() {
    let root = workspace("mutated-later", &[("m.py", MUTATED_LATER)]);
    let mut c = Client::start(&root, json!({"workspaceScan": false}), false);
    let u = open(&mut c, &root.join("m.py"), MUTATED_LATER);
    c.diagnostics(&u, Some(1));
    let line = |start: &str| MUTATED_LATER.lines().position(|l| l.starts_with(start)).expect("line") as u32;
    let at_first = hover_at(&mut c, &u, line("params = "), 1);
    assert!(at_first.contains("params: pytree of 1 array") && at_first.contains("['w']: f32[4,3]"), "{at_first}");
    assert!(!at_first.contains("['b']") && !at_first.contains("f32[2,2]"), "a later change shown at the first line:\n{at_first}");
    let nested = hover_at(&mut c, &u, line("layers = "), 1);
    assert!(nested.contains("[0]['k']: f32[2]") && !nested.contains("f32[5]"), "{nested}");
    let printed = line("print(");
    let at_print = hover_at(&mut c, &u, printed, 7);
    assert!(
        at_print.contains("pytree of 2 arrays") && at_print.contains("['b']: f32[3]") && at_print.contains("['w']: f32[2,2]"),
        "{at_print}"
    );
    let nested_at_print = hover_at(&mut c, &u, printed, 15);
    assert!(nested_at_print.contains("[0]['k']: f32[5]"), "{nested_at_print}");
    // A new dict on every pass, alike each time: one value at that place.
    let batch = hover_at(&mut c, &u, line("    batch = "), 5);
    assert!(batch.contains("['x']: f32[8,4]") && batch.matches("f32[8,4]").count() == 1, "{batch}");
    c.stop();
}

/// A class registered with `register_pytree_node` without keys: JAX's `keystr` names its
/// children by flat index in its flatten function's order (`[<flat index 1>]['w']`, checked
/// with jax 0.10.2), which hover reads from the flatten function's source or, for one it
/// cannot read, from the instance's last flatten; before any, it shows no leaves rather than
/// guessed paths.
#[test]
fn a_keyless_custom_pytree_hover_names_its_leaves_by_flat_index() {
    let root = workspace("keyless", &[("trees.py", KEYLESS_PYTREES)]);
    let mut c = Client::start(&root, json!({"workspaceScan": false}), false);
    let u = open(&mut c, &root.join("trees.py"), KEYLESS_PYTREES);
    c.diagnostics(&u, Some(1));
    let line = |start: &str| KEYLESS_PYTREES.lines().position(|l| l.starts_with(start)).expect("line") as u32;
    let cases: [(u32, u32, &[&str]); 3] = [
        (line("pair = "), 1, &["pair: pytree of 2 arrays", "[<flat index 0>]: f32[2,4]", "[<flat index 1>]['w']: f32[3]"]),
        (line("stack = "), 1, &["stack: pytree of 2 arrays", "[<flat index 0>]: f32[4,8]", "[<flat index 1>]: f32[8]"]),
        // Flattened by `tree_leaves` on the line before: its children are known.
        (line("print(odd"), 7, &["odd: pytree of 1 array", "[<flat index 0>]: f32[5]"]),
    ];
    for (line, character, needles) in cases {
        let text = hover_at(&mut c, &u, line, character);
        for needle in needles {
            assert!(text.contains(needle), "line {} col {}: no {needle:?} in\n{text}", line + 1, character + 1);
        }
        assert!(!text.contains(".a:") && !text.contains(".layers"), "a leaf named by attribute:\n{text}");
    }
    // Not yet flattened, and a flatten function of two statements: no leaf is shown (the
    // analysis is stored: the hovers above had it).
    let hover = c.request("textDocument/hover", json!({"textDocument": {"uri": u}, "position": {"line": line("odd = "), "character": 1}}));
    let text = hover["result"]["contents"]["value"].as_str().unwrap_or("");
    assert!(!text.contains("f32[5]"), "{text}");
    c.stop();
}

/// Inside a `tf.function` a value is a symbolic tensor of its graph, and hover and inlay
/// hints show it as TensorFlow prints it there (`Tensor("rows:0", shape=(None, 3),
/// dtype=float32)` under real TensorFlow 2.21, without the op name), a `None` dimension
/// included; the function's hover lists each concrete function's input parameters. The
/// fixture's `# revealed:` lines check the same shapes against real TensorFlow.
#[test]
fn a_tf_function_hover_shows_its_symbolic_tensors_as_tensorflow_prints_them() {
    let text = include_str!("../../tests/fixtures/tf/warnings/tl210_concrete_signatures_of_tensors_values_and_structures.py");
    let root = workspace("tf-hover", &[("signatures.py", text)]);
    let mut c = Client::start(&root, json!({"workspaceScan": false}), false);
    let u = open(&mut c, &root.join("signatures.py"), text);
    c.diagnostics(&u, Some(1));
    let cases: [(u32, u32, &[&str]); 5] = [
        // A local of two traces (batch sizes 4 and 8).
        (
            11,
            5,
            &[
                "logits: Tensor(shape=(4, 2), dtype=float32) | Tensor(shape=(8, 2), dtype=float32)",
                "in tf.function(weighted_loss), traced from signatures.py:28 (called)",
            ],
        ),
        // A parameter of an input_signature with a None batch dimension.
        (22, 15, &["(parameter) rows: Tensor(shape=(None, 3), dtype=float32)", "in tf.function(row_norms)"]),
        // A variable read in the graph, times a Python float.
        (17, 5, &["rate: Tensor(shape=(), dtype=float32)"]),
        // An item of a dict argument.
        (10, 5, &["features: Tensor(shape=(4, 3), dtype=float32) | Tensor(shape=(8, 3), dtype=float32)"]),
        // The function's name: its concrete functions.
        (
            16,
            6,
            &[
                "tf.function(decayed)** traced 2×",
                "lr (POSITIONAL_OR_KEYWORD): VariableSpec(shape=(), dtype=tf.float32, trainable=True, alias_id=0)",
                "steps (POSITIONAL_OR_KEYWORD): Literal[4]",
            ],
        ),
    ];
    for (line, character, needles) in cases {
        let text = hover_at(&mut c, &u, line, character);
        for needle in needles {
            assert!(text.contains(needle), "line {} col {}: no {needle:?} in\n{text}", line + 1, character + 1);
        }
    }
    let hints = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": u}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}}),
    );
    let labels: Vec<(u64, String)> = hints["result"]
        .as_array()
        .map(|h| h.iter().map(|h| (h["position"]["line"].as_u64().unwrap_or(0), h["label"].as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default();
    for (line, label) in [
        (11, ": Tensor(shape=(4, 2), dtype=float32) | Tensor(shape=(8, 2), dtype=float32)"),
        (22, ": Tensor(shape=(None, 3), dtype=float32)"),
        (9, ": Tensor(shape=(3, 2), dtype=float32)"),
    ] {
        assert!(labels.iter().any(|(l, text)| *l == line && text == label), "no {label:?} on line {}: {labels:?}", line + 1);
    }
    c.stop();
}
