//! `tracelens trace`: the traced functions it lists, in JSON, text and Graphviz, with the
//! argument and output leaves by path and the function a library runs as its body.

#[path = "support/command.rs"]
mod command;

use command::{temp_dir, tracelens, write};

#[test]
fn trace_json_lists_traces_with_causes() {
    let dir = temp_dir("trace");
    let f = write(
        &dir,
        "retrace.py",
        "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    y = x * 2\n    return y.sum()\n\nf(jnp.ones((8, 4)))\nf(jnp.ones((8, 4)))\nf(jnp.ones((16, 4)))\n",
    );
    let out = tracelens().current_dir(&dir).args(["trace", "--format", "json"]).arg(&f).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let func = &json["functions"][0];
    assert_eq!(func["name"], "f");
    assert_eq!(func["line"], 4);
    assert_eq!(func["transform"], "jit");
    let traces = func["traces"].as_array().expect("traces");
    assert_eq!(traces.len(), 2, "two traces for three calls: {json:#}");
    assert_eq!(traces[0]["args"], serde_json::json!(["f32[8,4]"]));
    assert_eq!(traces[0]["outputs"], serde_json::json!(["f32[]"]));
    assert_eq!(traces[0]["cause"], "first call");
    assert_eq!(traces[1]["call_line"], 11);
    assert_eq!(traces[1]["cause"], "argument x changed shape: f32[8,4] -> f32[16,4]");
    assert_eq!(traces[1]["values"][0]["aval"], "f32[16,4]");
    assert!(traces[0]["jaxpr"].as_str().unwrap_or("").starts_with("{ lambda ; a:f32[8,4]. let"), "{}", traces[0]["jaxpr"]);
}

#[test]
fn trace_shows_a_haiku_apply_under_the_users_function() {
    let dir = temp_dir("trace-haiku");
    let f = write(
        &dir,
        "model.py",
        "import haiku as hk\nimport jax\nimport jax.numpy as jnp\n\n\ndef forward(x):\n    h = jnp.tanh(x)\n    return hk.Linear(1)(h)\n\n\nmodel = hk.without_apply_rng(hk.transform(forward))\nout = jax.jit(model.apply)(None, jnp.ones((4, 3)))\n",
    );
    let out = tracelens().current_dir(&dir).args(["trace", "--format", "json"]).arg(&f).output().expect("run");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let func = &json["functions"][0];
    assert_eq!(
        (&func["name"], &func["path"], &func["line"], &func["through"]),
        (&"forward".into(), &"model.py".into(), &6.into(), &"apply_fn".into()),
        "{json:#}"
    );
    let value = &func["traces"][0]["values"][0];
    assert_eq!(
        (&value["path"], &value["line"], &value["name"], &value["aval"]),
        (&"model.py".into(), &7.into(), &"h".into(), &"f32[4,3]".into())
    );
    let text = tracelens().current_dir(&dir).args(["trace"]).arg(&f).output().expect("run");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.starts_with("jit(forward) at model.py:6 (as the library's apply_fn)  traced 1×"), "{text}");
}

const NNX_STEP: &str = "\
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(784, 512, rngs=rngs)


@nnx.jit
def train_step(model, optimizer, x):
    loss, grads = nnx.value_and_grad(lambda m: m.linear(x).mean())(model)
    optimizer.update(model, grads)
    return loss


@jax.jit
def predict(params, x):
    return x @ params['w1']


model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
train_step(model, optimizer, jnp.ones((8, 784)))
predict({'w1': jnp.ones((784, 10))}, jnp.ones((8, 784)))
";

/// `trace` names each argument leaf by its path: a pytree's leaves as JAX's `keystr` after
/// the parameter, and an nnx.jit function's model state by the path of each Variable in its
/// module (the user's parameter names, not the shim wrapper's).
#[test]
fn trace_names_argument_leaves_by_path() {
    let dir = temp_dir("trace-paths");
    let f = write(&dir, "step.py", NNX_STEP);
    let out = tracelens().current_dir(&dir).args(["trace"]).arg(&f).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(model['linear/bias']: f32[512], model['linear/kernel']: f32[784,512], optimizer['step']: u32[], x: f32[8,784])"),
        "{text}"
    );
    assert!(text.contains("(params['w1']: f32[784,10], x: f32[8,784])"), "{text}");
    // Outputs too: the updated state where it came from, the function's own as JAX's
    // `result` paths.
    assert!(
        text.contains("-> (model['linear/bias']: f32[512], model['linear/kernel']: f32[784,512], optimizer['step']: u32[], result: f32[])"),
        "{text}"
    );
    assert!(text.contains("-> (result: f32[8,10])"), "{text}");
}

/// An optax state is named by its NamedTuple fields, in an nnx.Optimizer's state as flax names
/// it (`opt_state/0/mu/...`) and through `jax.jit` as JAX's debug info does (`st[0].mu['w']`,
/// `result[1][0].count`); an nnx module through `jax.jit` by attribute (`.linear.kernel.value`).
#[test]
fn trace_names_optimizer_state_leaves_by_field() {
    let dir = temp_dir("trace-optax-paths");
    let program = NNX_STEP.replace("optax.sgd(0.1)", "optax.adam(1e-3)")
        + "

@jax.jit
def adam_step(params, st, g):
    u, st = optax.adam(1e-3).update(g, st, params)
    return optax.apply_updates(params, u), st


" + "p = {'w': jnp.ones((4, 3))}
adam_step(p, optax.adam(1e-3).init(p), p)


" + "@jax.jit
def apply(model, x):
    return model.linear(x)


apply(model, jnp.ones((2, 784)))
";
    let f = write(&dir, "step.py", &program);
    let out = tracelens().current_dir(&dir).args(["trace"]).arg(&f).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("optimizer['opt_state/0/count']: i32[], optimizer['opt_state/0/mu/linear/bias']: f32[512]"), "{text}");
    assert!(
        text.contains("(params['w']: f32[4,3], st[0].count: i32[], st[0].mu['w']: f32[4,3], st[0].nu['w']: f32[4,3], g['w']: f32[4,3])"),
        "{text}"
    );
    assert!(text.contains("-> (result[0]['w']: f32[4,3], result[1][0].count: i32[], result[1][0].mu['w']: f32[4,3]"), "{text}");
    assert!(text.contains("(model.linear.bias.value: f32[512], model.linear.kernel.value: f32[784,512], x: f32[2,784])"), "{text}");
}

const SCAN_THEN_LOG: &str = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n\n@jax.jit\ndef f(x):\n    def body(c, xi):\n        return c + xi, c * 2.0\n\n    c, ys = lax.scan(body, 0.0, x)\n    return jnp.log(c - 3.0) + ys.sum()\n\n\nprint(f(jnp.ones(3)))\nf(jnp.ones(4))\n";

#[test]
fn trace_dot_draws_equations_avals_bodies_and_retraces() {
    let dir = temp_dir("trace-dot");
    let f = write(&dir, "scan_log.py", SCAN_THEN_LOG);
    let out = tracelens().current_dir(&dir).args(["trace", "--format", "dot"]).arg(&f).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(dot.starts_with("digraph tracelens {"), "{dot}");
    // Both traces, the second retraced (its changed input marked), the scan body nested.
    assert!(dot.contains("jit(f) · trace 1 of 2 from line 15 · called"), "{dot}");
    assert!(dot.contains("trace 2 of 2 from line 16 · called\\nretraced: argument x changed shape: f32[3] -> f32[4]"), "{dot}");
    assert!(dot.contains("fillcolor=\"#ffd8a8\", label=\"x\\nf32[4]\""), "the changed input is marked: {dot}");
    assert!(dot.contains("subgraph cluster_body_") && dot.contains("label=\"scan body · line 11\""), "{dot}");
    assert!(dot.contains("label=\"log\\nline 12\"") && dot.contains("URL=\"line:12\""), "{dot}");
    assert!(dot.contains("[label=\"f32[3]\"]") && dot.contains("[label=\"f32[4]\"]"), "edges carry avals: {dot}");
    assert!(!dot.contains("#ffc9c9"), "no NaN marked without --values: {dot}");

    // With values: log(3 - 3) is -inf at line 12 in the first call, and its node is marked.
    let out =
        tracelens().current_dir(&dir).args(["trace", "--format", "dot", "--values", "--function", "f"]).arg(&f).output().expect("run");
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(dot.contains("label=\"log\\nline 12\", fillcolor=\"#ffc9c9\", penwidth=2"), "{dot}");

    // SVG through Graphviz; without it, a message and exit status 2.
    let out = tracelens().current_dir(&dir).args(["trace", "--format", "svg"]).arg(&f).output().expect("run");
    let graphviz = std::process::Command::new("dot").arg("-V").output().is_ok();
    if graphviz {
        let svg = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0));
        assert!(svg.contains("<svg") && svg.contains("scan body") && svg.contains("xlink:href=\"line:12\""), "{svg}");
    } else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must install Graphviz (tests/run_all.sh)");
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("install Graphviz"));
    }
}

/// A `tf.function`'s concrete functions, each with its input parameters as TensorFlow 2.21's
/// `pretty_printed_concrete_signatures()` prints them for this fixture (run under real
/// TensorFlow; `xtask tf-conformance` compares every TF fixture's the same way).
#[test]
fn trace_lists_a_tf_functions_concrete_signatures_as_tensorflow_prints_them() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/tf/warnings/tl210_concrete_signatures_of_tensors_values_and_structures.py");
    let out = tracelens().args(["trace", "--format", "json"]).arg(&fixture).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let function = |name: &str| json["functions"].as_array().and_then(|f| f.iter().find(|f| f["name"] == name)).cloned();
    let signature = |name: &str, trace: usize| -> Vec<String> {
        let f = function(name).unwrap_or_else(|| panic!("no function {name} in {json:#}"));
        assert_eq!(f["transform"], "tf.function");
        f["traces"][trace]["input_parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} trace {trace} has no input_parameters: {f:#}"))
            .iter()
            .map(|p| {
                format!(
                    "{} ({}): {}",
                    p["name"].as_str().unwrap_or("?"),
                    p["kind"].as_str().unwrap_or("?"),
                    p["type"].as_str().unwrap_or("?")
                )
            })
            .collect()
    };
    assert_eq!(
        signature("weighted_loss", 1),
        [
            "weights (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(3, 2), dtype=tf.float32, name=None)",
            "batch (POSITIONAL_OR_KEYWORD): Dict[['features', TensorSpec(shape=(8, 3), dtype=tf.float32, name=None)], ['ids', List[Literal[1], Literal[2]]]]",
            "scale (POSITIONAL_OR_KEYWORD): Literal[0.5]",
            "clip (POSITIONAL_OR_KEYWORD): Literal[None]",
        ]
    );
    assert_eq!(
        signature("decayed", 0),
        [
            "lr (POSITIONAL_OR_KEYWORD): VariableSpec(shape=(), dtype=tf.float32, trainable=True, alias_id=0)",
            "steps (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=tf.int32, name=None)",
            "warmup (POSITIONAL_OR_KEYWORD): Tuple[Literal[1], Literal[10]]",
        ]
    );
    assert_eq!(signature("decayed", 1)[1], "steps (POSITIONAL_OR_KEYWORD): Literal[4]");
    assert_eq!(
        signature("row_norms", 0),
        [
            "rows (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None, 3), dtype=tf.float32, name='rows')",
            "k (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=tf.int32, name=None)",
        ]
    );
    // The retrace cause stays as it was, beside the signature.
    let second = &function("weighted_loss").expect("weighted_loss")["traces"][1];
    assert!(second["cause"].as_str().unwrap_or("").contains("changed shape"), "{second:#}");

    // The text form lists the same rows under each trace, before the graph body.
    let out = tracelens().arg("trace").arg(&fixture).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    let block = "    Input Parameters:\n      rows (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None, 3), dtype=tf.float32, name='rows')\n      k (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=tf.int32, name=None)\n";
    assert!(text.contains(block), "{text}");
    assert!(text.contains("tf.function(weighted_loss) at"), "{text}");

    // `*layers`: a row per extra argument, and `x` beside it positional-only (TensorFlow 2.21
    // printed these rows for this fixture).
    let varargs = fixture.with_file_name("../clean/varargs_concrete_signature.py");
    let out = tracelens().arg("trace").arg(&varargs).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    let block = "    Input Parameters:\n      x (POSITIONAL_ONLY): TensorSpec(shape=(4, 3), dtype=tf.float32, name=None)\n      layers_0 (POSITIONAL_ONLY): TensorSpec(shape=(3, 2), dtype=tf.float32, name=None)\n      layers_1 (POSITIONAL_ONLY): TensorSpec(shape=(3, 5), dtype=tf.float32, name=None)\n      layers_2 (POSITIONAL_ONLY): Literal[0.5]\n      training (KEYWORD_ONLY): Literal[False]\n";
    assert!(text.contains(block), "{text}");
}

#[test]
fn trace_tells_a_trace_that_raised_from_one_whose_outputs_are_not_known() {
    let dir = temp_dir("trace-ended");
    let f = write(
        &dir,
        "ended.py",
        "import jax\nimport jax.numpy as jnp\nimport tensorflow as tf\n\n\n@jax.jit\ndef broken(x):\n    return x @ jnp.ones((3, 2))\n\n\n@tf.function\ndef grow(x):\n    _, buf = tf.while_loop(\n        lambda i, b: i < 3,\n        lambda i, b: (i + 1, tf.concat([b, b], axis=0)),\n        (tf.constant(0), x),\n        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, 2])),\n    )\n    return buf\n\n\ngrow(tf.ones([1, 2]))\nbroken(jnp.ones((4, 5)))\n",
    );
    let out = tracelens().current_dir(&dir).args(["trace"]).arg(&f).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    // The tf.function's buffer has a dimension the invariant leaves open: TensorFlow knows
    // its shape as (None, 2), tracelens does not follow it, and says so; it did not raise.
    assert!(text.contains("trace 1 from line 22: (f32[1,2]) -> not known  [first call]"), "{text}");
    assert!(text.contains("trace 1 from line 23: (f32[4,5]) -> raised  [first call]"), "{text}");
}
