//! The TensorFlow front end on the shared engine: `tf` ops bind the primitives their
//! `jax.numpy` counterparts bind, TensorFlow's own dtype rule holds on top, `tf.function`
//! keys follow the tf.function guide, and what is not modelled stays silent. (Each claim about
//! TensorFlow's behaviour is checked against real TensorFlow by `tests/fixtures/tf/`.)

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig, FileAnalysis};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

fn analyze(source: &str) -> FileAnalysis {
    analyze_file(&PathBuf::from("model.py"), source, &NoFiles, &AnalysisConfig::default())
}

/// `(code, line)` of every error and warning.
fn findings(source: &str) -> Vec<(String, u32)> {
    analyze(source)
        .diagnostics
        .iter()
        .filter(|(d, _, _)| d.severity != tracer_core::diagnostics::Severity::Info)
        .map(|(d, l, _)| (d.code.as_str().to_string(), l.line))
        .collect()
}

fn messages(source: &str) -> Vec<String> {
    analyze(source).diagnostics.iter().map(|(d, _, _)| d.message.clone()).collect()
}

#[test]
fn tf_matmul_binds_what_jnp_matmul_binds() {
    let a = analyze(
        "import tensorflow as tf\n\n@tf.function\ndef f(x, w):\n    return tf.nn.relu(tf.matmul(x, w) + 1.0)\n\nf(tf.ones([2, 3]), tf.ones([3, 4]))\n",
    );
    let f = a.functions.iter().find(|f| f.name == "f").expect("f is traced");
    assert_eq!(f.transform, "tf.function");
    let trace = &f.traces[0];
    assert_eq!(trace.outputs.as_deref(), Some(&["f32[2,4]".to_string()][..]));
    for primitive in ["dot_general", "add", "max"] {
        assert!(trace.jaxpr.contains(primitive), "no {primitive} in\n{}", trace.jaxpr);
    }
}

#[test]
fn no_implicit_promotion_eagerly_or_in_a_graph() {
    let eager = messages("import tensorflow as tf\nx = tf.ones([2]) * tf.constant([1, 2])\n");
    assert_eq!(
        eager,
        vec!["InvalidArgumentError: cannot compute Mul as input #1(zero-based) was expected to be a float tensor but is a int32 tensor [Op:Mul] name: "]
    );
    let graph =
        messages("import tensorflow as tf\n\n@tf.function\ndef f(x, y):\n    return x + y\n\nf(tf.ones([2]), tf.constant([1, 2]))\n");
    assert_eq!(graph, vec!["TypeError: Input 'y' of 'AddV2' Op has type int32 that does not match type float32 of argument 'x'."]);
}

#[test]
fn python_numbers_take_the_tensor_dtype() {
    // `x * 2` with a float tensor and `n + 1` with an int one are fine; nothing is reported.
    assert_eq!(findings("import tensorflow as tf\nx = tf.ones([2]) * 2\nn = tf.constant(3) + 1\ny = x / 2.0\n"), vec![]);
}

#[test]
fn cache_keys_follow_the_guide() {
    let a = analyze(
        "import tensorflow as tf\n\n@tf.function\ndef f(x, n):\n    return x * n\n\n\
         f(tf.ones([2]), 1)\nf(tf.zeros([2]), 1)\nf(tf.ones([3]), 1)\nf(tf.ones([3]), 2)\nf(tf.ones([3], tf.int32), 2)\n",
    );
    let f = a.functions.iter().find(|f| f.name == "f").expect("f is traced");
    let causes: Vec<&str> = f.traces.iter().map(|t| t.cause.as_str()).collect();
    assert_eq!(
        causes,
        vec![
            "first call",
            "argument x changed shape: TensorSpec(shape=(2,), dtype=tf.float32) -> TensorSpec(shape=(3,), dtype=tf.float32)",
            "the Python argument n changed value: 1 -> 2",
            "argument x changed dtype: TensorSpec(shape=(3,), dtype=tf.float32) -> TensorSpec(shape=(3,), dtype=tf.int32)",
        ]
    );
}

#[test]
fn a_none_dimension_is_traced_without_claiming_shapes() {
    let a = analyze(
        "import tensorflow as tf\n\n@tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])\ndef f(x):\n    print('tracing')\n    return tf.reduce_sum(x, axis=1)\n\nf(tf.ones([2, 3]))\nf(tf.ones([5, 3]))\n",
    );
    let f = a.functions.iter().find(|f| f.name == "f").expect("f is traced");
    assert_eq!(f.traces.len(), 1);
    assert_eq!(f.traces[0].route, "unknown arguments");
    let codes: Vec<&str> = a.diagnostics.iter().map(|(d, _, _)| d.code.as_str()).collect();
    assert_eq!(codes, vec!["TL201"]);
}

#[test]
fn autograph_traces_both_branches_and_autograph_off_raises() {
    let on = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    if tf.reduce_sum(x) > 0:\n        y = x\n    else:\n        y = -x\n    return y\n\nf(tf.ones([2]))\n";
    assert_eq!(findings(on), vec![]);
    let off = on.replace("@tf.function", "@tf.function(autograph=False)");
    assert_eq!(findings(&off), vec![("TL101".to_string(), 5)]);
}

#[test]
fn unmodelled_tensorflow_is_silent() {
    let source = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    y = tf.signal.fft(x)\n    z = tf.image.resize(y, [4, 4])\n    if z.shape[0] > 2:\n        z = z + 1\n    return tf.keras.activations.swish(z)\n\nf(tf.ones([2, 3]))\n";
    assert_eq!(findings(source), vec![]);
}
