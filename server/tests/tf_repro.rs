//! `tracelens repro` on TensorFlow programs: an error raised while a `tf.function` traces is
//! staged out of the trace as a standalone TensorFlow program (docs/reproducers.md); one whose
//! program TensorFlow's graph message would name differently is cut from the source.
//! `cargo xtask tf-conformance` runs every such program under real TensorFlow.

#[path = "support/command.rs"]
mod command;

use command::{temp_dir, tracelens, write};

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tf/errors").join(name)
}

/// `tracelens repro ARGS` in `dir`, which must succeed: its standard output.
fn repro(dir: &std::path::Path, args: &[&str]) -> String {
    let out = tracelens().current_dir(dir).arg("repro").args(args).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_error_inside_a_tf_function_is_staged_out_as_a_tensorflow_program() {
    let dir = temp_dir("tf-repro-staged");
    let source = std::fs::read_to_string(fixture("tl105_matmul_int_weights_in_function.py")).expect("fixture");
    write(&dir, "project.py", &source);
    let text = repro(&dir, &["project.py", "--line", "10"]);
    // The int32 table is a constant of its values, the traced `x` a parameter with its spec,
    // shrunk to 1 by 1 (TensorFlow's message names no size); the op keeps TensorFlow's name.
    let expected = "\
# tracelens reproducer for TL105 at project.py:10
# original error: TypeError: Input 'b' of 'MatMul' Op has type int32 that does not match type float32 of argument 'a'.
# raises under TensorFlow: TypeError
# minimised: 7 → 7 lines (4 tracelens runs as the oracle)
# regenerate: tracelens repro project.py --line 10
import tensorflow as tf
import numpy as np

c0 = tf.constant(np.array([1, 0, 0, 1, 1, 1], np.int32).reshape((3, 2)))

@tf.function(input_signature=[tf.TensorSpec(shape=(1, 1), dtype=tf.float32)])
def project(x):  # project.py:7
    tf.matmul(x, c0)  # project.py:10


project(tf.ones((1, 1), tf.float32))  # project.py:13
";
    assert_eq!(text, expected);
}

#[test]
fn operators_and_tf_nn_ops_are_written_as_tensorflow_writes_them() {
    let dir = temp_dir("tf-repro-operators");
    let source = "import tensorflow as tf\n\n\n@tf.function\ndef step(x, labels):\n    h = tf.matmul(x, tf.ones([3, 4]))\n    s = tf.nn.relu(h)\n    return s + labels\n\n\nprint(step(tf.ones([2, 3]), tf.ones([2, 4], tf.int32)))\n";
    write(&dir, "step.py", source);
    let text = repro(&dir, &["step.py", "--line", "8", "--unreduced"]);
    assert!(text.contains("# raises under TensorFlow: TypeError\n"), "{text}");
    assert!(
        text.contains(
            "@tf.function(input_signature=[tf.TensorSpec(shape=(2, 3), dtype=tf.float32), tf.TensorSpec(shape=(2, 4), dtype=tf.int32)])\n\
             def step(x, labels):  # step.py:4\n    \
             v1 = tf.ones([3, 4])  # step.py:6\n    \
             h = tf.matmul(x, v1)  # step.py:6\n    \
             s = tf.nn.relu(h)  # step.py:7\n    \
             s + labels  # step.py:8\n"
        ),
        "{text}"
    );
    assert!(text.contains("\nstep(tf.ones((2, 3), tf.float32), tf.ones((2, 4), tf.int32))  # step.py:11\n"), "{text}");
    let imports: Vec<&str> = text.lines().filter(|l| l.starts_with("import ") || l.starts_with("from ")).collect();
    assert_eq!(imports, vec!["import tensorflow as tf"], "{text}");
}

#[test]
fn a_graph_message_naming_nodes_keeps_the_source_cut() {
    // `for '{{node add}} = AddV2[T=DT_FLOAT](MatMul, add/y)'`: the names of the node and its
    // inputs depend on every op before it in the graph, which a slice of the trace changes.
    let dir = temp_dir("tf-repro-node");
    let source = std::fs::read_to_string(fixture("tl104_bias_broadcast_in_graph.py")).expect("fixture");
    write(&dir, "layer.py", &source);
    let text = repro(&dir, &["layer.py", "--line", "12"]);
    assert!(text.contains("\n# cut from the source"), "{text}");
    assert!(text.contains("    return tf.nn.relu(y + bias)  # layer.py:12\n"), "{text}");
}

#[test]
fn repro_function_stages_out_every_trace_of_a_tf_function() {
    let dir = temp_dir("tf-repro-function");
    let source = "import tensorflow as tf\n\n\n@tf.function\ndef model(x, w):\n    h = tf.matmul(x, w)\n    y = tf.nn.relu(h) * 2.0\n    return tf.reduce_sum(y, axis=1)\n\n\nprint(model(tf.ones([2, 3]), tf.ones([3, 4])))\nprint(model(tf.ones([5, 3]), tf.ones([3, 4])))\n";
    write(&dir, "ok.py", source);
    let text = repro(&dir, &["ok.py", "--function", "model"]);
    assert!(text.contains("# trace 2: model(f32[5,3], f32[3,4]) -> f32[5]  (line 12, bound to out2)\n"), "{text}");
    assert!(
        text.contains(
            "\n@tf.function(input_signature=[tf.TensorSpec(shape=(2, 3), dtype=tf.float32), tf.TensorSpec(shape=(3, 4), dtype=tf.float32)])\n\
             def model(x, w):  # ok.py:4\n    \
             h = tf.matmul(x, w)  # ok.py:6\n    \
             v1 = tf.nn.relu(h)  # ok.py:7\n    \
             y = v1 * 2.0  # ok.py:7\n    \
             v2 = tf.reduce_sum(y, axis=1)  # ok.py:8\n    \
             return v2\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\nout2 = model_2(tf.ones((5, 3), tf.float32), tf.ones((3, 4), tf.float32))  # ok.py:12\n# out2: f32[5]\n"),
        "{text}"
    );
}

#[test]
fn a_tf_while_loop_error_is_staged_with_its_cond_and_body_as_functions() {
    // `cond` and `body` are written from the statements TensorFlow traced of them, taking the
    // loop variables as the loop passes them; the lambda is named after its parameter.
    let dir = temp_dir("tf-repro-while-loop");
    let source = std::fs::read_to_string(fixture("tl109_tf_while_loop_argument_changes_dtype.py")).expect("fixture");
    write(&dir, "quantise.py", &source);
    let text = repro(&dir, &["quantise.py", "--line", "11", "--unreduced"]);
    let expected = "\
# tracelens reproducer for TL109 at quantise.py:11
# original error: TypeError: Loop var levels:0 enters the loop with type <dtype: 'float32'> but has type <dtype: 'int32'> after 1 iteration. levels:0 type should remain constant.
# raises under TensorFlow: TypeError
# unreduced: 15 lines
# regenerate: tracelens repro quantise.py --line 11 --unreduced
import tensorflow as tf


def cond(i, q):  # quantise.py:11
    v2 = i < 2  # quantise.py:11
    return v2


def body(i, q):  # quantise.py:7
    v2 = i + 1  # quantise.py:8
    v3 = q * 2.0  # quantise.py:8
    v4 = tf.round(v3)  # quantise.py:8
    v5 = tf.cast(v4, tf.int32)  # quantise.py:8
    return v2, v5


@tf.function(input_signature=[tf.TensorSpec(shape=(3,), dtype=tf.float32)])
def quantise(levels):  # quantise.py:5
    v1 = tf.constant(0)  # quantise.py:11
    tf.while_loop(cond, body, (v1, levels))  # quantise.py:11


quantise(tf.ones((3,), tf.float32))  # quantise.py:15
";
    assert_eq!(text, expected);
}

#[test]
fn tf_cond_branches_are_two_functions_a_closure_written_inside() {
    // Two lambdas are `true_fn` and `false_fn`; the one that reads the traced function's
    // `values` is written inside it, right before the `tf.cond`.
    let dir = temp_dir("tf-repro-cond");
    let source = std::fs::read_to_string(fixture("tl109_cond_branches_int_and_float.py")).expect("fixture");
    write(&dir, "mean.py", &source);
    let text = repro(&dir, &["mean.py", "--line", "9", "--unreduced"]);
    assert!(text.starts_with("# tracelens reproducer for TL109 at mean.py:9\n"), "{text}");
    assert!(!text.contains("cut from the source"), "{text}");
    assert!(text.contains("\n\ndef false_fn():  # mean.py:9\n    v2 = tf.constant(0)  # mean.py:9\n    return v2\n"), "{text}");
    assert!(
        text.contains(
            "    v1 = n > 0  # mean.py:9\n\n    \
             def true_fn():  # mean.py:9\n        \
             v2 = tf.reduce_mean(values)  # mean.py:9\n        \
             return v2\n\n    \
             tf.cond(v1, true_fn, false_fn)  # mean.py:9\n"
        ),
        "{text}"
    );
}

#[test]
fn a_loop_variable_named_by_its_place_in_loop_vars_keeps_the_source_cut() {
    // TensorFlow names the carried `tf.constant(0.0)` `Const_1:0`, after the ops made before
    // it; tracelens says `loop_vars[1]`, and a staged program would make other ops first.
    let dir = temp_dir("tf-repro-loop-vars");
    let source = std::fs::read_to_string(fixture("tl109_tf_while_loop_carry_dtype_changes.py")).expect("fixture");
    write(&dir, "steps.py", &source);
    let text = repro(&dir, &["steps.py", "--line", "11"]);
    assert!(text.contains("\n# cut from the source"), "{text}");
}

#[test]
fn an_autograph_while_error_is_staged_as_the_loop_autograph_converts() {
    // The loop is written back as a Python `while` on a tensor, which TensorFlow converts
    // again and so raises AutoGraph's message at it: `step` is bound before it and in its
    // body, and read after it (AutoGraph checks only names live after the loop). The body's
    // ops are computed before the loop, from `t1`, the loop variable as the body sees it.
    let dir = temp_dir("tf-repro-autograph-while");
    let source = std::fs::read_to_string(fixture("tl109_autograph_while_counter_becomes_float.py")).expect("fixture");
    write(&dir, "warmup.py", &source);
    let text = repro(&dir, &["warmup.py", "--line", "9", "--unreduced"]);
    let expected = "\
# tracelens reproducer for TL109 at warmup.py:9
# original error: TypeError: 'step' has dtype int32 before the loop, but dtype float32 after one iteration
# raises under TensorFlow: TypeError
# unreduced: 12 lines
# regenerate: tracelens repro warmup.py --line 9 --unreduced
import tensorflow as tf


@tf.function(input_signature=[tf.TensorSpec(shape=(), dtype=tf.int32), tf.TensorSpec(shape=(), dtype=tf.int32)])
def warmup_steps(limit, t1):  # warmup.py:5
    v1 = tf.constant(0)  # warmup.py:7
    v2 = v1 < limit  # warmup.py:9
    v3 = tf.cast(t1, tf.float32)  # warmup.py:10
    v4 = v3 + 1.0  # warmup.py:10
    step = v1
    while v2:  # warmup.py:9
        step = v4
    step


warmup_steps(tf.ones((), tf.int32), tf.ones((), tf.int32))  # warmup.py:14
";
    assert_eq!(text, expected);
}

#[test]
fn an_autograph_if_error_is_staged_with_what_each_branch_binds() {
    // Only the main branch binds `scale`: the staged `if` has no else, and the line after it
    // reads `scale`; the minimiser leaves the test and the value as parameters.
    let dir = temp_dir("tf-repro-autograph-if");
    let source = std::fs::read_to_string(fixture("tl109_autograph_if_sets_scale_in_one_branch.py")).expect("fixture");
    write(&dir, "normalize.py", &source);
    let text = repro(&dir, &["normalize.py", "--line", "9"]);
    assert!(!text.contains("cut from the source"), "{text}");
    assert!(
        text.contains(
            "def normalize(v1, v2):  # normalize.py:5\n    \
             if v1:  # normalize.py:9\n        \
             scale = v2\n    \
             scale\n"
        ),
        "{text}"
    );
    // A float test is not a bool: AutoGraph's own check, at the `if`.
    let source = std::fs::read_to_string(fixture("tl105_autograph_if_on_float_loss.py")).expect("fixture");
    write(&dir, "scale.py", &source);
    let text = repro(&dir, &["scale.py", "--line", "8"]);
    assert!(text.contains("    v1 = tf.reduce_sum(loss)  # scale.py:8\n    if v1:  # scale.py:8\n        pass\n"), "{text}");
}

#[test]
fn a_tensor_used_as_a_bool_without_autograph_is_staged_with_autograph_off() {
    // `if t:` raises only where AutoGraph does not convert it: the staged function is traced
    // with `autograph=False`, as the user's was.
    let dir = temp_dir("tf-repro-autograph-off");
    let source = std::fs::read_to_string(fixture("tl101_python_if_on_tensor_autograph_off.py")).expect("fixture");
    write(&dir, "clip.py", &source);
    let text = repro(&dir, &["clip.py", "--line", "9", "--unreduced"]);
    assert!(text.contains("# raises under TensorFlow: OperatorNotAllowedInGraphError\n"), "{text}");
    assert!(
        text.contains(
            "@tf.function(input_signature=[tf.TensorSpec(shape=(2,), dtype=tf.float32), tf.TensorSpec(shape=(), dtype=tf.float32)], autograph=False)\n\
             def clip_update(update, max_norm):  # clip.py:5\n    \
             norm = tf.norm(update)  # clip.py:7\n    \
             v1 = norm > max_norm  # clip.py:9\n    \
             if v1:  # clip.py:9\n        \
             pass\n"
        ),
        "{text}"
    );
}
