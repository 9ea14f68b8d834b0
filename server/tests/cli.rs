//! The command-line contract (shared/spec/cli.md): exit codes, JSON shapes, paths.

#[path = "support/command.rs"]
mod command;

use command::{temp_dir, tracelens, write};

const BUGGY: &str = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef step(w, x):\n    h = x @ w\n    print('h', h)\n    return h.sum()\n\nstep(jnp.ones((4, 8)), jnp.ones((3, 5)))\n";
const CLEAN: &str = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef step(w, x):\n    return (x @ w).sum()\n\nfor n in (3, 3):\n    step(jnp.ones((4, 8)), jnp.ones((n, 4)))\n";

#[test]
fn check_json_follows_the_contract() {
    let dir = temp_dir("json");
    write(&dir, "buggy.py", BUGGY);
    let out = tracelens().current_dir(&dir).args(["check", "--format", "json", "."]).output().expect("run");
    assert_eq!(out.status.code(), Some(1), "errors exit 1; stderr: {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON array");
    let diags = json.as_array().expect("array");
    assert_eq!(diags.len(), 1, "{json:#}");
    let d = &diags[0];
    assert_eq!(d["path"], "buggy.py");
    assert_eq!(d["code"], "TL104");
    assert_eq!(d["name"], "shape-mismatch");
    assert_eq!(d["severity"], "error");
    assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(6), Some(9)));
    assert_eq!((d["end_line"].as_u64(), d["end_column"].as_u64()), (Some(6), Some(14)));
    assert_eq!(d["message"], "TypeError: dot_general requires contracting dimensions to have the same shape, got (5,) and (4,).");
    assert!(d["related"].is_array());
}

#[test]
fn check_exit_codes() {
    let dir = temp_dir("exit");
    write(&dir, "clean.py", CLEAN);
    let ok = tracelens().current_dir(&dir).args(["check", "clean.py"]).output().expect("run");
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stdout));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("Checked 1 file: 0 errors, 0 warnings."));
    let missing = tracelens().current_dir(&dir).args(["check", "nope.py"]).output().expect("run");
    assert_eq!(missing.status.code(), Some(2));
    let usage = tracelens().args(["check", "--format", "yaml"]).output().expect("run");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn a_notebook_is_refused_with_how_to_check_it_not_read_as_python() {
    // Read as Python, a notebook's JSON gave `NameError: name 'null' is not defined`.
    let dir = temp_dir("notebook");
    let notebook = r#"{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],
  "source": ["import jax\n", "x = jax.numpy.ones(3)\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#;
    write(&dir, "explore.ipynb", notebook);
    write(&dir, "clean.py", CLEAN);
    for command in [&["check", "explore.ipynb"][..], &["trace", "explore.ipynb"], &["run", "explore.ipynb"]] {
        let out = tracelens().current_dir(&dir).args(command).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(
            stderr.contains("explore.ipynb: a Jupyter notebook") && stderr.contains("jupyter nbconvert --to script"),
            "{command:?}: {stderr}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("NameError"), "{command:?}");
    }
    // A folder's notebooks are not Python files: its scripts are checked, the notebook skipped.
    let folder = tracelens().current_dir(&dir).args(["check", "."]).output().expect("run");
    assert_eq!(folder.status.code(), Some(0), "{}", String::from_utf8_lossy(&folder.stdout));
    assert!(String::from_utf8_lossy(&folder.stdout).contains("Checked 1 file"));
}

#[test]
fn text_output_has_a_code_frame_and_no_colour_when_piped() {
    let dir = temp_dir("text");
    write(&dir, "buggy.py", BUGGY);
    let out = tracelens().current_dir(&dir).args(["check", "buggy.py"]).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error[TL104]: TypeError: dot_general"), "{text}");
    assert!(text.contains("--> buggy.py:6:9"), "{text}");
    assert!(text.contains("    h = x @ w"), "{text}");
    assert!(!text.contains('\u{1b}'), "no ANSI colour when not a terminal");
}

#[test]
fn pyproject_severities_and_ignore_comments_apply() {
    let dir = temp_dir("config");
    write(&dir, "buggy.py", BUGGY);
    write(&dir, "pyproject.toml", "[project]\nname = \"demo\"\n\n[tool.tracelens.severity]\nTL104 = \"warning\"\n");
    let out = tracelens().current_dir(&dir).args(["check", "--format", "json", "buggy.py"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "a warning is not an error");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json[0]["severity"], "warning");

    write(&dir, "pyproject.toml", "[tool.tracelens]\nignore = [\"TL104\"]\n");
    let out = tracelens().current_dir(&dir).args(["check", "--format", "json", "buggy.py"]).output().expect("run");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");

    write(&dir, "pyproject.toml", "[tool.tracelens.severity]\nTL104 = \"loud\"\n");
    let out = tracelens().current_dir(&dir).args(["check", "buggy.py"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2), "bad configuration is bad usage");
    assert!(String::from_utf8_lossy(&out.stderr).contains("TL104"));

    std::fs::remove_file(dir.join("pyproject.toml")).expect("remove");
    write(&dir, "ignored.py", &BUGGY.replace("h = x @ w", "h = x @ w  # tracelens: ignore[TL104]"));
    let out = tracelens().current_dir(&dir).args(["check", "--format", "json", "ignored.py"]).output().expect("run");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
}

#[test]
fn repro_writes_a_standalone_program_linked_to_the_source() {
    let dir = temp_dir("repro");
    write(&dir, "buggy.py", BUGGY);
    let out = tracelens().current_dir(&dir).args(["repro", "buggy.py", "--line", "6"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.starts_with("# tracelens reproducer for TL104 at buggy.py:6\n"), "{text}");
    assert!(text.contains("# original error: TypeError: dot_general requires contracting dimensions"), "{text}");
    assert!(text.contains("# raises under JAX: TypeError\n"), "{text}");
    assert!(text.contains("# regenerate: tracelens repro buggy.py --line 6\n"), "{text}");
    // The definition links to where it starts: its decorator line, as JAX counts it.
    assert!(text.contains("\ndef step(w, x):  # buggy.py:4\n    x @ w  # buggy.py:6\n"), "{text}");
    // Minimised by default: the shapes shrink as long as tracing still fails the same way,
    // message and all: the sizes it names, 5 and 4, stay; the others (8 and 3) go to 1.
    assert!(text.contains("# minimised: 5 → 5 lines ("), "{text}");
    let call = text.lines().find(|l| l.starts_with("jax.jit(step)(")).expect("the call");
    assert_eq!(call, "jax.jit(step)(np.ones((4, 1), np.float32), np.ones((1, 5), np.float32))  # buggy.py:10", "{text}");
    // `--unreduced` writes the program as emitted, with the user's shapes.
    let out = tracelens().current_dir(&dir).args(["repro", "buggy.py", "--line", "6", "--unreduced"]).output().expect("run");
    let unreduced = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(unreduced.contains("# unreduced: 5 lines\n# regenerate: tracelens repro buggy.py --line 6 --unreduced\n"), "{unreduced}");
    assert!(unreduced.contains("jax.jit(step)(np.ones((4, 8), np.float32), np.ones((3, 5), np.float32))  # buggy.py:10"), "{unreduced}");
    // Only jax, numpy and their parts are imported.
    let imports: Vec<&str> = text.lines().filter(|l| l.starts_with("import ") || l.starts_with("from ")).collect();
    assert_eq!(imports, vec!["import jax", "import numpy as np"]);
    let none = tracelens().current_dir(&dir).args(["repro", "buggy.py", "--line", "2"]).output().expect("run");
    assert_eq!(none.status.code(), Some(1));
    let written = tracelens().current_dir(&dir).args(["repro", "buggy.py", "--line", "6", "-o", "repro/step.py"]).output().expect("run");
    assert_eq!(written.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(dir.join("repro/step.py")).expect("written"), text);
}

#[test]
fn a_reproducer_raises_the_users_message_with_the_users_names() {
    let dir = temp_dir("repro-message");
    let source = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef predict(weights, features):\n    hidden = jnp.tanh(features * 2.0)\n    scores = jnp.dot(hidden, weights)\n    return scores.sum()\n\n\npredict(jnp.ones(4), jnp.ones(8))\n";
    write(&dir, "shapes.py", source);
    let out = tracelens().current_dir(&dir).args(["repro", "shapes.py", "--line", "8"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains(
            "# original error: TypeError: dot_general requires contracting dimensions to have the same shape, got (8,) and (4,).\n"
        ),
        "{text}"
    );
    // The statements before the dot go, the sizes it names stay (not (2,) and (1,)), and so
    // do the names of the function and of what it reads.
    assert!(
        text.contains("\ndef predict(weights, hidden):  # shapes.py:5\n    jnp.dot(hidden, weights)  # shapes.py:8\n\n\njax.jit(predict)(np.ones((4,), np.float32), np.ones((8,), np.float32))  # shapes.py:12\n"),
        "{text}"
    );
}

#[test]
fn a_tensorflow_reproducer_keeps_the_sizes_tensorflows_graph_message_names() {
    // TensorFlow 2.21 goes on after `for '{{node concat}}'` with the node's input shapes
    // (`with input shapes: [4,6], [4,8], []`), which tracelens' message leaves out: shrinking
    // the 4 would change what the reproducer raises under TensorFlow.
    let dir = temp_dir("repro-tf-sizes");
    let source = "import tensorflow as tf\n\n\n@tf.function\ndef merge(numeric, embedded):\n    return tf.concat([numeric, embedded], axis=0)\n\n\nprint(merge(tf.ones([4, 6]), tf.zeros([4, 8])))\n";
    write(&dir, "merge.py", source);
    let out = tracelens().current_dir(&dir).args(["repro", "merge.py", "--line", "6"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("# raises under TensorFlow: ValueError\n"), "{text}");
    assert!(text.contains("print(merge(tf.ones([4, 6]), tf.zeros([4, 8])))  # merge.py:9\n"), "{text}");
}

const LAYERED: &str = "import jax\nimport jax.numpy as jnp\n\n\ndef layer(w, b, x):\n    h = jnp.tanh(x @ w)\n    return h + b\n\n\n@jax.jit\ndef model(params, x):\n    h = layer(params[\"w1\"], params[\"b1\"], x)\n    h = jnp.concatenate([h, h], axis=-1)\n    return layer(params[\"w2\"], params[\"b2\"], h)\n\n\nparams = {\"w1\": jnp.ones((4, 8)), \"b1\": jnp.ones((8,)), \"w2\": jnp.ones((16, 3)), \"b2\": jnp.ones((4,))}\nmodel(params, jnp.ones((2, 4)))\n";

/// The code of a reproducer without comments: what must stay the same when it is regenerated.
fn code_only(text: &str) -> Vec<String> {
    text.lines().filter(|l| !l.trim_start().starts_with('#')).map(|l| l.split("  # ").next().unwrap_or(l).to_string()).collect()
}

#[test]
fn a_reproducer_of_a_reproducer_is_the_same_program() {
    let dir = temp_dir("repro-of-repro");
    write(&dir, "model.py", LAYERED);
    for flags in [&[][..], &["--unreduced"][..]] {
        let out =
            tracelens().current_dir(&dir).args(["repro", "model.py", "--line", "7", "-o", "first.py"]).args(flags).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let first = std::fs::read_to_string(dir.join("first.py")).expect("first");
        assert!(first.contains(" + params_b2  # model.py:7\n\n\njax.jit(model)("), "{first}");
        // The failing line of the reproducer is the last line of its function.
        let line = first.lines().collect::<Vec<_>>().iter().rposition(|l| l.ends_with("# model.py:7")).expect("linked line") + 1;
        let out = tracelens()
            .current_dir(&dir)
            .args(["repro", "first.py", "--line", &line.to_string(), "-o", "second.py"])
            .args(flags)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let second = std::fs::read_to_string(dir.join("second.py")).expect("second");
        assert_eq!(code_only(&first), code_only(&second), "{first}\n----\n{second}");
    }
}

const LEAKY: &str = "import math\nimport jax\nimport jax.numpy as jnp\n\nSEEN = []\n\n\ndef unused():\n    return math.pi\n\n\n@jax.jit\ndef f(x):\n    y = jnp.sin(x)  # a comment\n    SEEN.append(y)\n    return y * 2.0\n\n\nout = f(jnp.ones(3))\nprint(out)\ntotal = SEEN[0] + 1.0\n";

#[test]
fn a_leaked_tracer_gets_a_reproducer_cut_from_the_source() {
    let dir = temp_dir("repro-source");
    write(&dir, "leaky.py", LEAKY);
    let out = tracelens().current_dir(&dir).args(["repro", "leaky.py", "--line", "21", "-o", "first.py"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let first = std::fs::read_to_string(dir.join("first.py")).expect("first");
    assert!(first.starts_with("# tracelens reproducer for TL103 at leaky.py:21\n"), "{first}");
    assert!(first.contains("# raises under JAX: UnexpectedTracerError\n"), "{first}");
    // The statements the leak needs, each linked to its line; the comment, the import of
    // `math` and what needs neither are gone.
    let code = code_only(&first);
    assert!(first.contains("    SEEN.append(y)  # leaky.py:15\n"), "{first}");
    assert!(first.contains("\ntotal = SEEN[0] + 1.0  # leaky.py:21\n"), "{first}");
    assert!(!first.contains("math") && !first.contains("print(") && !first.contains("a comment"), "{first}");
    assert!(code.iter().filter(|l| l.starts_with("import ")).all(|l| l == "import jax" || l == "import jax.numpy as jnp"), "{first}");
    // Regenerating from the reproducer gives the same program.
    let line = first.lines().position(|l| l.ends_with("# leaky.py:21")).expect("linked line") + 1;
    let out =
        tracelens().current_dir(&dir).args(["repro", "first.py", "--line", &line.to_string(), "-o", "second.py"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let second = std::fs::read_to_string(dir.join("second.py")).expect("second");
    assert_eq!(code, code_only(&second), "{first}\n----\n{second}");
}

const STAGED: &str = "import jax\nimport jax.numpy as jnp\n\n\ndef layer(w, b, x):\n    h = jnp.tanh(x @ w)\n    return h + b\n\n\n@jax.jit\ndef model(params, x):\n    h = layer(params[\"w1\"], params[\"b1\"], x)\n    return h.sum(), h\n\n\nparams = {\"w1\": jnp.ones((4, 8)), \"b1\": jnp.ones((8,))}\nmodel(params, jnp.ones((2, 4)))\nmodel(params, jnp.ones((3, 4)))\nmodel(params, jnp.ones((3, 4)))\nmodel(params, jnp.ones((5, 4)))\n";

#[test]
fn repro_function_stages_out_every_trace_with_one_body() {
    let dir = temp_dir("repro-function");
    write(&dir, "ok.py", STAGED);
    let out = tracelens().current_dir(&dir).args(["repro", "ok.py", "--function", "model"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // Three traces (the second call with (3, 4) hits the cache), one body written once.
    assert!(text.contains("# trace 3: model(f32[8], f32[4,8], f32[5,4]) -> f32[], f32[5,8]  (line 20, bound to out3)\n"), "{text}");
    assert_eq!(text.matches("\ndef ").count(), 1, "{text}");
    assert!(text.contains("\ndef model(params_b1, params_w1, x):  # ok.py:10\n    v1 = x @ params_w1  # ok.py:6\n"), "{text}");
    assert!(text.contains("    return v3, v2\n"), "{text}");
    assert!(text.contains("\nout2 = jax.jit(model)(np.ones((8,), np.float32), np.ones((4, 8), np.float32), np.ones((3, 4), np.float32))  # ok.py:18\n# out2: f32[], f32[3,8]\n"), "{text}");
    let none = tracelens().current_dir(&dir).args(["repro", "ok.py", "--function", "layer_typo"]).output().expect("run");
    assert_eq!(none.status.code(), Some(1));
    let both = tracelens().current_dir(&dir).args(["repro", "ok.py", "--function", "model", "--line", "3"]).output().expect("run");
    assert_eq!(both.status.code(), Some(2), "--line and --function exclude each other");
}

const NESTED: &str = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n\ndef loss(params, x):\n    return jnp.mean((x @ params[\"w\"] + params[\"b\"]) ** 2)\n\n\ndef shift(y):\n    return jnp.sin(y)\n\n\n@jax.jit\ndef train(params, x, xs):\n    value, grads = jax.value_and_grad(loss)(params, x)\n    h = x.sum() * 2.0\n\n    def body(c, y):\n        return c + h * shift(y), c\n\n    carry, ys = lax.scan(body, jnp.zeros(()), xs)\n    return value, grads[\"w\"], carry, ys\n\n\nparams = {\"w\": jnp.ones((4, 3)), \"b\": jnp.ones((3,))}\ntrain(params, jnp.ones((2, 4)), jnp.ones((5,)))\ntrain(params, jnp.ones((6, 4)), jnp.ones((5,)))\n";

#[test]
fn repro_function_uncurries_transformations_and_writes_closures_inside() {
    let dir = temp_dir("repro-nested");
    write(&dir, "nested.py", NESTED);
    let out = tracelens().current_dir(&dir).args(["repro", "nested.py", "--function", "train"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // `loss` reads nothing of `train`: written at the top level, taking the dict whole.
    assert!(
        text.contains("\ndef loss(params, x):  # nested.py:6\n    params_b = params['b']\n    params_w = params['w']\n    v1 = x @ params_w  # nested.py:7\n"),
        "{text}"
    );
    // The transformation is called as the user called it, uncurried.
    assert!(text.contains("    v1 = jax.value_and_grad(loss)({'b': params_b, 'w': params_w}, x)  # nested.py:16\n"), "{text}");
    // `body` reads `h` of `train`: written inside it, right before the scan, returning the
    // user's `(carry, y)`.
    assert!(
        text.contains("    v3 = jnp.zeros(())  # nested.py:22\n\n    def body(c, y):  # nested.py:19\n        v4 = jnp.sin(y)  # nested.py:11\n        v5 = h * v4  # nested.py:20\n        v6 = c + v5  # nested.py:20\n        return v6, c\n\n    v4 = lax.scan(body, v3, xs)  # nested.py:22\n"),
        "{text}"
    );
    assert!(text.contains("    return v1[0], v1[1]['w'], v4[0], v4[1]\n"), "{text}");
    // Two traces (a new shape retraces), each body written once.
    assert_eq!(text.matches("\ndef loss(").count(), 1, "{text}");
    assert_eq!(text.matches("\ndef train").count(), 1, "{text}");
    assert!(text.contains("\nout2 = jax.jit(train)("), "{text}");
}

const CUSTOM_NODE: &str = "import jax\nimport jax.numpy as jnp\n\n\nclass Linear:\n    def __init__(self, w, b, act):\n        self.w = w\n        self.b = b\n        self.act = act\n\n    def __call__(self, x):\n        z = x @ self.w + self.b\n        return jnp.tanh(z) if self.act == \"tanh\" else z\n\n\njax.tree_util.register_pytree_node(Linear, lambda m: ((m.w, m.b), m.act), lambda act, c: Linear(c[0], c[1], act))\n\n\n@jax.jit\ndef step(model, x):\n    def loss(m):\n        return jnp.sum(m(x))\n\n    value, grads = jax.value_and_grad(loss)(model)\n    return Linear(model.w - 0.1 * grads.w, model.b, model.act), value\n\n\n@jax.jit\ndef rescaled(model, x):\n    model.w = model.w * 2.0\n    return jax.grad(lambda m: jnp.sum(m(x)))(model)\n\n\nm = Linear(jnp.ones((4, 3)), jnp.ones((3,)), \"tanh\")\nstep(m, jnp.ones((2, 4)))\nrescaled(m, jnp.ones((2, 4)))\n";

#[test]
fn repro_function_passes_a_register_pytree_node_class_as_the_tuple_of_its_children() {
    let dir = temp_dir("repro-custom-node");
    write(&dir, "node.py", CUSTOM_NODE);
    let out = tracelens().current_dir(&dir).args(["repro", "node.py", "--function", "step"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // The method call is written as the calls it made, the aux data (`act`) as the branch
    // it chose; the instance is passed as its children, and read from them.
    assert!(
        text.contains("\n    def loss(m):  # node.py:21\n        m_0 = m[0]\n        m_1 = m[1]\n        v1 = x @ m_0  # node.py:12\n"),
        "{text}"
    );
    assert!(text.contains("jnp.tanh(z)  # node.py:13\n"), "{text}");
    assert!(text.contains("    v1 = jax.value_and_grad(loss)((model_0, model_1))  # node.py:24\n"), "{text}");
    assert!(text.contains("    v2 = 0.1 * v1[1][0]  # node.py:25\n"), "{text}");
    // The class it returns is the tuple of its children too.
    assert!(text.contains("    return (v3, model_1), v1[0]\n"), "{text}");
    // An attribute assigned inside the trace: the instance passed is the one with the new
    // array, not the one the trace's input flattened to.
    let out = tracelens().current_dir(&dir).args(["repro", "node.py", "--function", "rescaled"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("    v1 = model_0 * 2.0  # node.py:30\n"), "{text}");
    assert!(text.contains("    v2 = jax.grad(lambda_fn)((v1, model_1))  # node.py:31\n"), "{text}");
}

#[test]
fn small_known_arrays_are_literals_up_to_the_threshold() {
    let dir = temp_dir("repro-literals");
    let program = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\nscale = np.array([1.0, 2.0, 3.0], np.float32)\n\n\n@jax.jit\ndef f(x):\n    return x @ scale\n\n\nf(jnp.ones((2, 4)))\n";
    write(&dir, "lit.py", program);
    let run = |extra: &[&str]| {
        let out = tracelens().current_dir(&dir).args(["repro", "lit.py", "--line", "10", "--unreduced"]).args(extra).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(run(&[]).contains("\nc0 = np.array([1.0, 2.0, 3.0], np.float32)\n"), "{}", run(&[]));
    assert!(run(&["--fake-array-threshold", "2"]).contains("\nc0 = np.ones((3,), np.float32)\n"));
    write(&dir, "pyproject.toml", "[tool.tracelens]\nreproducer-fake-array-threshold = 2\n");
    assert!(run(&[]).contains("\nc0 = np.ones((3,), np.float32)\n"), "the project's threshold applies");
}

#[test]
fn an_error_raised_by_a_grad_call_stages_out_the_differentiated_function() {
    let dir = temp_dir("repro-grad");
    write(&dir, "g.py", "import jax\nimport jax.numpy as jnp\n\n\ndef loss(w, x):\n    return (x @ w) ** 2\n\n\ng = jax.grad(loss)(jnp.ones((3,)), jnp.ones((4, 3)))\n");
    let out = tracelens().current_dir(&dir).args(["repro", "g.py", "--line", "9", "--unreduced"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("\ndef loss(w, x):  # g.py:5\n    v1 = x @ w  # g.py:6\n    v2 = v1 ** 2  # g.py:6\n    return v2\n"), "{text}");
    assert!(text.contains("\njax.grad(loss)(np.ones((3,), np.float32), np.ones((4, 3), np.float32))  # g.py:9\n"), "{text}");
}

const LIB_LAYERS: &str = "import jax.numpy as jnp\n\n\ndef dense(x, w):\n    return jnp.dot(x, w)\n\n\ndef model(params, x):\n    h = dense(x, params[\"w1\"])\n    h = jnp.tanh(h)\n    return dense(h, params[\"w2\"])\n";
const LIB_MAIN: &str = "import jax\nimport jax.numpy as jnp\nfrom lib.model import model\n\n\n@jax.jit\ndef loss(params, x):\n    y = model(params, x)\n    return jnp.mean(y ** 2)\n\n\nparams = {\"w1\": jnp.ones((4, 8)), \"w2\": jnp.ones((6, 2))}\nprint(loss(params, jnp.ones((3, 4))))\n";

#[test]
fn an_error_in_an_imported_module_is_reproduced_from_the_line_that_calls_it() {
    let dir = temp_dir("repro-module");
    std::fs::create_dir_all(dir.join("lib")).expect("lib");
    write(&dir, "lib/__init__.py", "");
    write(&dir, "lib/model.py", LIB_LAYERS);
    write(&dir, "main.py", LIB_MAIN);
    // The call inside the jitted function, and the module's call of it, both lead to the error.
    for line in ["8", "13"] {
        let out = tracelens().current_dir(&dir).args(["repro", "main.py", "--line", line, "--unreduced"]).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(text.starts_with("# tracelens reproducer for TL104 at lib/model.py:5\n"), "{text}");
        assert!(text.contains(&format!("# regenerate: tracelens repro main.py --line 8 --unreduced\n")), "{text}");
        // The module's functions are inlined, each line linked to the module's line.
        assert!(
            text.contains("\ndef loss(params_w1, params_w2, x):  # main.py:6\n    v1 = jnp.dot(x, params_w1)  # lib/model.py:5\n    h = jnp.tanh(v1)  # lib/model.py:10\n    jnp.dot(h, params_w2)  # lib/model.py:5\n"),
            "{text}"
        );
        assert!(text.contains("np.ones((3, 4), np.float32))  # main.py:13\n"), "{text}");
        assert!(!text.contains("lib.model") && !text.contains("from lib"), "{text}");
    }
    // A line with no call leading to an error has none.
    let none = tracelens().current_dir(&dir).args(["repro", "main.py", "--line", "9"]).output().expect("run");
    assert_eq!(none.status.code(), Some(1));
}

const LIB_KEYS: &str = "import math\n\nimport jax.numpy as jnp\n\n\ndef init(n):\n    return {\"w\": jnp.ones((n, 2)) / math.sqrt(n)}\n\n\ndef forward(params, x):\n    return x @ params[\"w_2\"]\n\n\nif __name__ == \"__main__\":\n    print(init(3))\n";
const KEYS_MAIN: &str = "import jax\nimport jax.numpy as jnp\n\nfrom lib import model\n\n\n@jax.jit\ndef loss(params, x):\n    return jnp.sum(model.forward(params, x))\n\n\nparams = model.init(3)\nprint(loss(params, jnp.ones((4, 3))))\n";

#[test]
fn a_python_exception_in_an_imported_module_gets_a_cut_with_the_module_written_in() {
    let dir = temp_dir("repro-module-cut");
    std::fs::create_dir_all(dir.join("lib")).expect("lib");
    write(&dir, "lib/__init__.py", "");
    write(&dir, "lib/model.py", LIB_KEYS);
    write(&dir, "main.py", KEYS_MAIN);
    // The call inside the jitted function, and the module's call of it, both lead to the error.
    for line in ["9", "13"] {
        let out = tracelens().current_dir(&dir).args(["repro", "main.py", "--line", line]).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(text.starts_with("# tracelens reproducer for TL190 at lib/model.py:11\n"), "{text}");
        assert!(text.contains("# regenerate: tracelens repro main.py --line 9\n"), "{text}");
        // The module's definitions, read by their names, each line linked to the module.
        assert!(
            text.contains("\ndef forward(params, x):  # lib/model.py:10\n    return x @ params[\"w_2\"]  # lib/model.py:11\n"),
            "{text}"
        );
        assert!(text.contains("    return jnp.sum(forward(params, x))  # main.py:9\n"), "{text}");
        // `math.sqrt` is NumPy's; no import of the user's modules, nor their `__main__` block.
        assert!(text.contains(" / float(np.sqrt(n))}  # lib/model.py:7\n"), "{text}");
        assert!(text.contains("\nimport numpy as np  # lib/model.py:1\n"), "{text}");
        assert!(!text.contains("math") && !text.contains("lib import") && !text.contains("__main__"), "{text}");
        let code = code_only(&text);
        assert!(
            code.iter()
                .filter(|l| l.starts_with("import ") || l.starts_with("from "))
                .all(|l| l.starts_with("import jax") || l == "import numpy as np"),
            "{text}"
        );
    }
}

const TWO_DOWN: &str = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n\n@jax.jit\ndef encode(params, xs):\n    def body(c, x):\n        def squash(y):\n            return jnp.tanh(y) + 1.0\n\n        z = jax.vmap(squash)(x)\n        return c + z @ params[\"w\"], c\n\n    return lax.scan(body, jnp.zeros((3,)), xs)\n\n\nencode({\"w\": jnp.ones((4, 3))}, jnp.ones((5, 4)))\n";

#[test]
fn a_function_nested_two_levels_down_that_reads_nothing_around_it_is_written_at_the_top() {
    let dir = temp_dir("repro-hoist");
    write(&dir, "two_down.py", TWO_DOWN);
    let out = tracelens().current_dir(&dir).args(["repro", "two_down.py", "--function", "encode"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // `squash` reads only its argument: top level, before the function that uses it.
    let squash = text.find("\ndef squash(y):  # two_down.py:9\n").expect("squash at the top level");
    let encode = text.find("\ndef encode(params_w, xs):  # two_down.py:6\n").expect("encode");
    assert!(squash < encode, "{text}");
    // `body` reads `params_w` of `encode`: inside it, and it calls the top-level `squash`.
    assert!(text.contains("\n    def body(c, x):  # two_down.py:8\n        z = jax.vmap(squash)(x)  # two_down.py:12\n"), "{text}");
    assert_eq!(text.matches("def squash").count(), 1, "{text}");
}

const GRANDPARENT: &str = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n\n@jax.jit\ndef encode(params, xs):\n    w = params[\"w\"] * 2.0\n\n    def body(c, x):\n        def squash(y):\n            return jnp.tanh(y @ w)\n\n        def mix(y):\n            return y @ w + c.sum()\n\n        z = jax.vmap(squash)(x) + jax.vmap(mix)(x)\n        return c + z.sum(0), c\n\n    return lax.scan(body, jnp.zeros((3,)), xs)\n\n\nencode({\"w\": jnp.ones((4, 3))}, jnp.ones((5, 2, 4)))\n";

#[test]
fn a_closure_is_written_in_the_outermost_function_whose_names_it_reads() {
    let dir = temp_dir("repro-lift");
    write(&dir, "lift.py", GRANDPARENT);
    let out = tracelens().current_dir(&dir).args(["repro", "lift.py", "--function", "encode"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // `squash` reads only `w` of `encode`: written in `encode`, right before `body`, which
    // passes it; `mix` also reads `c` of `body`, so it stays inside `body`.
    assert!(
        text.contains("    w = params_w * 2.0  # lift.py:8\n    v1 = jnp.zeros((3,))  # lift.py:20\n\n    def squash(y):  # lift.py:11\n        v2 = y @ w  # lift.py:12\n        v3 = jnp.tanh(v2)  # lift.py:12\n        return v3\n\n    def body(c, x):  # lift.py:10\n        v2 = jax.vmap(squash)(x)  # lift.py:17\n\n        def mix(y):  # lift.py:14\n"),
        "{text}"
    );
    assert_eq!(text.matches("def squash").count(), 1, "{text}");
    // A reproducer of the reproducer is the same program.
    write(&dir, "again.py", &text);
    let again = tracelens().current_dir(&dir).args(["repro", "again.py", "--function", "encode"]).output().expect("run");
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    let body =
        |t: &str| t.lines().filter(|l| !l.starts_with('#')).map(|l| l.split("  # ").next().unwrap_or("").to_string()).collect::<Vec<_>>();
    assert_eq!(body(&String::from_utf8_lossy(&again.stdout)), body(&text));
}

const BRANCHES: &str = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n\ndef train_branch(h):\n    keep = (jnp.arange(h.shape[-1]) % 2 == 0).astype(h.dtype)\n    return (h * keep * 2.0)[:, :-1]\n\n\ndef eval_branch(h):\n    return h\n\n\n@jax.jit\ndef head(w, x, is_training):\n    h = jax.nn.relu(x @ w)\n    h = lax.cond(is_training, train_branch, eval_branch, h)\n    return h.mean(-1)\n\n\nhead(jnp.ones((3, 6)), jnp.ones((4, 3)), True)\n";

#[test]
fn the_minimiser_shrinks_the_functions_passed_to_lax_cond() {
    let dir = temp_dir("repro-branches");
    write(&dir, "branches.py", BRANCHES);
    let out = tracelens().current_dir(&dir).args(["repro", "branches.py", "--line", "18", "--unreduced"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let unreduced = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(unreduced.contains("    keep = v3.astype(jnp.float32)  # branches.py:7\n"), "{unreduced}");
    let out = tracelens().current_dir(&dir).args(["repro", "branches.py", "--line", "18"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // The branch's statements are gone: what it returns is a constant of the same aval, and
    // the branch that returns its argument is kept as it is.
    let branch = text.split("def train_branch(h):  # branches.py:6\n").nth(1).expect("the branch").lines().next().unwrap_or("");
    assert!(branch.starts_with("    return train_branch_"), "{text}");
    assert!(!text.contains("astype") && !text.contains("arange"), "{text}");
    assert!(text.contains("def eval_branch(h):  # branches.py:11\n    return h\n"), "{text}");
    assert!(text.contains("    lax.cond(is_training, train_branch, eval_branch, h)  # branches.py:18\n"), "{text}");
}

/// A TL201 warning (print at trace time) and a TL104 error.
const TWO_CODES: &str = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    print('x', x)\n    return x.sum()\n\n\n@jax.jit\ndef step(w, x):\n    return (x @ w).sum()\n\n\nf(jnp.ones(3))\nstep(jnp.ones((4, 8)), jnp.ones((3, 5)))\n";

fn codes_of(out: &std::process::Output) -> Vec<String> {
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON array");
    json.as_array().expect("array").iter().map(|d| d["code"].as_str().unwrap_or("").to_string()).collect()
}

#[test]
fn select_and_ignore_on_the_command_line_take_codes_prefixes_and_names() {
    let dir = temp_dir("select");
    write(&dir, "two.py", TWO_CODES);
    let run =
        |extra: &[&str]| tracelens().current_dir(&dir).args(["check", "--format", "json", "two.py"]).args(extra).output().expect("run");
    let all = run(&[]);
    assert_eq!(codes_of(&all), ["TL201", "TL104"], "{}", String::from_utf8_lossy(&all.stdout));
    let errors_only = run(&["--select", "TL1"]);
    assert_eq!((codes_of(&errors_only), errors_only.status.code()), (vec!["TL104".to_string()], Some(1)));
    let warnings_only = run(&["--ignore", "TL104"]);
    assert_eq!((codes_of(&warnings_only), warnings_only.status.code()), (vec!["TL201".to_string()], Some(0)));
    let by_name = run(&["--select=shape-mismatch,TL2", "--ignore", "TL201"]);
    assert_eq!(codes_of(&by_name), ["TL104"]);
    // The command line's select replaces pyproject.toml's; its ignore adds to it.
    write(&dir, "pyproject.toml", "[tool.tracelens]\nselect = [\"TL104\"]\nignore = [\"TL1\"]\n");
    assert!(codes_of(&run(&[])).is_empty());
    assert_eq!(codes_of(&run(&["--select", "TL2"])), ["TL201"]);
    std::fs::remove_file(dir.join("pyproject.toml")).expect("remove");
    let unknown = run(&["--select", "TL999"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("\"TL999\""), "{}", String::from_utf8_lossy(&unknown.stderr));
}

#[test]
fn github_output_format_writes_workflow_annotations() {
    let dir = temp_dir("github");
    write(&dir, "two.py", TWO_CODES);
    for flag in ["--output-format", "--format"] {
        let out = tracelens().current_dir(&dir).args(["check", flag, "github", "two.py"]).output().expect("run");
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "::warning file=two.py,line=7,col=5,endLine=7,endColumn=18,title=TL201 print-at-trace::print at trace time: this print inside jit(f) ran 1 time over 1 call: it runs only while the function is traced, prints tracers rather than values, and is silent on cached calls; use jax.debug.print to print runtime values\n\
             ::error file=two.py,line=13,col=13,endLine=13,endColumn=18,title=TL104 shape-mismatch::TypeError: dot_general requires contracting dimensions to have the same shape, got (5,) and (4,).\n"
        );
    }
    // The other formats answer to --output-format too.
    let json = tracelens().current_dir(&dir).args(["check", "--output-format", "json", "two.py"]).output().expect("run");
    assert_eq!(codes_of(&json), ["TL201", "TL104"]);
    // A message's line breaks are %0A; a property's `,` and `:` are %2C and %3A (GitHub's
    // workflow-command escaping): one annotation stays one line.
    let odd = "a,b: c.py";
    write(&dir, odd, "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n\n\nf(jnp.ones(3))\n");
    let out = tracelens().current_dir(&dir).args(["check", "--output-format", "github", odd]).output().expect("run");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "::error file=a%2Cb%3A c.py,line=7,col=8,endLine=7,endColumn=19,title=TL101 concretization::TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].%0A\
         The error occurred while tracing the function f at a,b: c.py:5 for jit. This concrete value was not available in Python because it depends on the value of the argument x.%0A\
         Python `if` on traced value `x.sum() > 0` (bool[]) inside jit(f): its value is not known while tracing. Use jnp.where or lax.cond, or mark the argument static.\n"
    );
}

/// Arrays computed only to be printed: forty 600×600 matrix products (about 17 GFLOP).
const PRINTS_A_LONG_COMPUTATION: &str = "import jax.numpy as jnp\n\nx = jnp.ones((600, 600)) / 600.0\nfor _ in range(40):\n    x = jnp.tanh(x @ x)\nprint('x', x, [x, {'x': x}])\nprint(f'sum {float(x.sum()):.3f}', round(x.mean().item(), 2), int(x[0, 0]))\njnp.ones(3) @ jnp.ones(4)\n";

#[test]
fn check_does_not_compute_what_it_would_only_print() {
    let dir = temp_dir("unprinted");
    write(&dir, "prints.py", PRINTS_A_LONG_COMPUTATION);
    let started = std::time::Instant::now();
    let out = tracelens().current_dir(&dir).args(["check", "--format", "json", "prints.py"]).output().expect("run");
    let took = started.elapsed();
    // The error after the prints is found, and the products were never computed.
    assert_eq!((codes_of(&out), out.status.code()), (vec!["TL104".to_string()], Some(1)), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(took < std::time::Duration::from_secs(2), "check took {took:?}");
    // A conversion that is JAX's error is still one: float() of a tracer inside jit.
    write(
        &dir,
        "traced.py",
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    print(float(x.sum()))\n    return x\n\n\nf(jnp.ones(3))\n",
    );
    let out = tracelens().current_dir(&dir).args(["check", "--format", "json", "traced.py"]).output().expect("run");
    assert_eq!(codes_of(&out), ["TL101"], "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn stdin_filename_checks_standard_input_as_that_file_with_its_imports() {
    use std::io::Write as _;
    let dir = temp_dir("stdin");
    std::fs::create_dir_all(dir.join("pkg")).expect("pkg");
    write(&dir.join("pkg"), "shapes.py", "import jax.numpy as jnp\n\n\ndef batch():\n    return jnp.ones((3, 5))\n");
    // pkg/main.py does not exist on disk: the text comes from standard input.
    let source = "import jax\nimport jax.numpy as jnp\nfrom shapes import batch\n\n\n@jax.jit\ndef step(w, x):\n    return (x @ w).sum()\n\n\nstep(jnp.ones((4, 8)), batch())\n";
    let run = |args: &[&str]| {
        let mut child = tracelens()
            .current_dir(&dir)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run");
        // A usage error exits before reading standard input: the write may then find the
        // pipe closed, which is not what the test is about.
        let _ = child.stdin.take().expect("stdin").write_all(source.as_bytes());
        child.wait_with_output().expect("output")
    };
    let out = run(&["check", "--format", "json", "--stdin-filename", "pkg/main.py"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json[0]["path"], "pkg/main.py", "{json:#}");
    assert_eq!((json[0]["code"].as_str(), json[0]["line"].as_u64()), (Some("TL104"), Some(8)));
    assert!(json[0]["message"].as_str().unwrap_or("").contains("got (5,) and (4,)"), "{json:#}");
    // Text output shows the line from standard input.
    let text = run(&["check", "--stdin-filename", "pkg/main.py", "-"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("pkg/main.py:8:13") && text.contains("return (x @ w).sum()"), "{text}");
    let both = run(&["check", "--stdin-filename", "pkg/main.py", "pkg"]);
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn exit_zero_reports_errors_and_exits_0() {
    let dir = temp_dir("exitzero");
    write(&dir, "buggy.py", BUGGY);
    let out = tracelens().current_dir(&dir).args(["check", "--exit-zero", "buggy.py"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("TL104"));
    assert_eq!(tracelens().current_dir(&dir).args(["check", "--exit-zero", "nope.py"]).output().expect("run").status.code(), Some(2));
}

#[test]
fn the_pre_commit_hook_runs_check_on_the_files_it_is_given() {
    let hooks = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../.pre-commit-hooks.yaml")).expect(".pre-commit-hooks.yaml");
    let field = |key: &str| {
        hooks.lines().find_map(|l| l.trim().trim_start_matches("- ").strip_prefix(&format!("{key}: "))).map(|v| v.trim().to_string())
    };
    assert_eq!(field("id").as_deref(), Some("tracelens-check"));
    assert!(hooks.contains("- id: tracelens\n"), "the first id stays: {hooks}");
    let entry = field("entry").expect("entry");
    let mut words = entry.split_whitespace();
    assert_eq!(words.next(), Some("tracelens"));
    let args: Vec<&str> = words.collect();
    // pre-commit appends the staged Python files to the entry.
    let dir = temp_dir("precommit");
    write(&dir, "buggy.py", BUGGY);
    write(&dir, "clean.py", CLEAN);
    let bad = tracelens().current_dir(&dir).args(&args).args(["clean.py", "buggy.py"]).output().expect("run");
    assert_eq!(bad.status.code(), Some(1), "{}", String::from_utf8_lossy(&bad.stdout));
    assert!(String::from_utf8_lossy(&bad.stdout).contains("buggy.py:6:9"));
    let good = tracelens().current_dir(&dir).args(&args).args(["clean.py"]).output().expect("run");
    assert_eq!(good.status.code(), Some(0));
}

#[test]
fn a_finding_in_a_module_several_files_import_is_reported_once() {
    let dir = temp_dir("dedup");
    write(
        &dir,
        "lib.py",
        "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef step(x):\n    print('tracing', x)\n    return x @ jnp.ones((5, 2))\n",
    );
    write(&dir, "main_a.py", "import jax.numpy as jnp\nfrom lib import step\n\nstep(jnp.ones((3, 4)))\n");
    write(&dir, "main_b.py", "import jax.numpy as jnp\nfrom lib import step\n\nstep(jnp.ones((2, 5)))\nstep(jnp.ones((6, 4)))\n");
    let out = tracelens().current_dir(&dir).args(["check", "--format", "json", "."]).output().expect("run");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON array");
    let found: Vec<(String, String, u64)> = json
        .as_array()
        .expect("array")
        .iter()
        .map(|d| {
            (d["path"].as_str().unwrap_or("").to_string(), d["code"].as_str().unwrap_or("").to_string(), d["line"].as_u64().unwrap_or(0))
        })
        .collect();
    // Both mains reach the print (TL201) and the shape error (TL104) in lib.py: once each.
    let expected: Vec<(String, String, u64)> =
        vec![("lib.py".into(), "TL201".into(), 6), ("lib.py".into(), "TL104".into(), 7), ("main_b.py".into(), "TL210".into(), 5)];
    assert_eq!(found, expected, "{json:#}");
}

/// A module's jitted step, traced by its own analysis only with unknown arguments and by its
/// importer with a batch: `check` reports it once, in the words of the known-argument trace.
#[test]
fn a_finding_reached_by_an_importer_with_known_arguments_is_reported_from_that_analysis() {
    let dir = temp_dir("known-arguments-first");
    write(
        &dir,
        "model.py",
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef step(x):\n    y = jnp.sin(x)\n    print(\"y\", y)\n    return y\n",
    );
    write(&dir, "main.py", "import jax.numpy as jnp\n\nfrom model import step\n\nstep(jnp.ones(3))\n");
    let out = tracelens().current_dir(&dir).args(["check", "model.py", "main.py", "--format", "json"]).output().expect("run");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let findings = json.as_array().cloned().unwrap_or_default();
    let [print] = findings.as_slice() else { panic!("one finding expected: {json}") };
    assert_eq!(print["code"], "TL201", "{print}");
    assert!(print["message"].as_str().unwrap_or("").contains("ran 1 time over 1 call"), "{print}");
}

/// `check` prints nothing a program prints, so an array in an f-string field without a format
/// spec is not computed (three 4000×4000 products, whose digits would be shown nowhere), and
/// the analysis goes on to the next line; what printing raises under JAX still counts: NumPy,
/// through which JAX prints, takes at most 64 dimensions (checked against JAX 0.10.2: line 7
/// raises this `ValueError`).
#[test]
fn an_array_printed_in_an_fstring_is_not_computed_and_printing_errors_still_count() {
    let dir = temp_dir("fstring_print");
    write(
        &dir,
        "train.py",
        "import jax.numpy as jnp\n\nw = jnp.ones((4000, 4000))\nfor step in range(3):\n    w = w @ w / 4000.0\n    print(f\"step {step}: {w}\")\nprint(f\"{jnp.zeros((1,) * 65)}\")\n",
    );
    let out = tracelens().current_dir(&dir).args(["check", "--format", "json", "train.py"]).output().expect("run");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON array");
    let found: Vec<(u64, &str)> =
        json.as_array().expect("array").iter().map(|d| (d["line"].as_u64().unwrap_or(0), d["message"].as_str().unwrap_or(""))).collect();
    assert_eq!(found, [(7, "ValueError: number of dimensions must be within [0, 64]")], "{json:#}");
}
