//! `tf.TensorArray` and nested `tf.while_loop` state as a user sees them: the output avals
//! of a traced `tf.function`, and TensorFlow's errors at the user's line. (Each behaviour is
//! checked against real TensorFlow by `tests/fixtures/tf/`.)

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

/// `(code, line, message)` of every error and warning.
fn findings(source: &str) -> Vec<(String, u32, String)> {
    analyze(source)
        .diagnostics
        .iter()
        .filter(|(d, _, _)| d.severity != tracer_core::diagnostics::Severity::Info)
        .map(|(d, l, _)| (d.code.as_str().to_string(), l.line, d.message.clone()))
        .collect()
}

fn outputs(source: &str, name: &str) -> Option<Vec<String>> {
    let a = analyze(source);
    let f = a.functions.iter().find(|f| f.name == name).expect("the function is traced");
    f.traces[0].outputs.clone()
}

#[test]
fn a_fixed_size_tensor_array_filled_by_tf_while_loop_stacks_to_its_static_shape() {
    let src = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    out = tf.TensorArray(tf.float32, size=3)\n\n    def body(i, out):\n        return i + 1, out.write(i, x * 2.0)\n\n    _, out = tf.while_loop(lambda i, out: i < 3, body, (0, out))\n    return out.stack(), out.read(0)\n\nf(tf.ones([2]))\n";
    assert_eq!(outputs(src, "f"), Some(vec!["f32[3,2]".to_string(), "f32[2]".to_string()]));
    assert!(findings(src).is_empty());
}

#[test]
fn a_write_of_another_shape_in_a_graph_is_inconsistent_shapes_at_the_write() {
    let src = "import tensorflow as tf\n\n@tf.function\ndef f():\n    ta = tf.TensorArray(tf.float32, size=2)\n    ta = ta.write(0, tf.zeros(3))\n    ta = ta.write(1, tf.zeros(4))\n    return ta.stack()\n\nf()\n";
    assert_eq!(findings(src), vec![("TL104".to_string(), 7, "ValueError: Inconsistent shapes: saw (4,) but expected (3,) ".to_string())]);
}

#[test]
fn eagerly_a_fixed_size_array_raises_out_of_range_and_keeps_its_values() {
    let src = "import tensorflow as tf\nta = tf.TensorArray(tf.float32, size=2)\nta = ta.write(0, 1.5)\nta = ta.write(2, 2.0)\n";
    assert_eq!(
        findings(src),
        vec![(
            "TL190".to_string(),
            4,
            "OutOfRangeError: Tried to write to index 2 but array is not resizeable and size is: 2 ".to_string()
        )]
    );
}

#[test]
fn nested_while_loop_state_keeps_its_structure_and_avals() {
    let src = "import tensorflow as tf\n\n@tf.function\ndef f(n):\n    def body(i, s):\n        return i + 1, [s[0] * 2.0, (s[1][0] + 1, s[1][1])]\n\n    i, (a, (b, c)) = tf.while_loop(lambda i, s: i < n, body, (0, (tf.ones([2]), (tf.zeros([3], tf.int32), tf.ones([])))))\n    return a, b, c\n\nf(tf.constant(3))\n";
    assert!(findings(src).is_empty(), "{:?}", findings(src));
    assert_eq!(outputs(src, "f"), Some(vec!["f32[2]".to_string(), "i32[3]".to_string(), "f32[]".to_string()]));
}

#[test]
fn nested_while_loop_state_that_changes_is_tensorflows_error_at_the_call() {
    let dtype = "import tensorflow as tf\n\n@tf.function\ndef f(n):\n    def body(i, s):\n        return i + 1, (s[0], tf.cast(s[1], tf.int32))\n\n    return tf.while_loop(lambda i, s: i < n, body, (0, (tf.ones([2]), tf.zeros([3]))))\n\nf(tf.constant(3))\n";
    let found = findings(dtype);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].0.as_str(), found[0].1), ("TL109", 8));
    assert!(found[0]
        .2
        .starts_with("TypeError: Loop var loop_vars[1][1] enters the loop with type <dtype: 'float32'> but has type <dtype: 'int32'>"));
    let structure = "import tensorflow as tf\n\n@tf.function\ndef f(n):\n    def body(i, s):\n        return i + 1, {'h': s['h']}\n\n    return tf.while_loop(lambda i, s: i < n, body, (0, {'h': tf.ones([2]), 'c': tf.zeros([3])}))\n\nf(tf.constant(3))\n";
    let found = findings(structure);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].0.as_str(), found[0].1), ("TL109", 8));
    assert!(found[0].2.starts_with("ValueError: The two structures don't have the same nested structure."));
}

#[test]
fn a_shape_invariant_lets_a_loop_variable_grow() {
    let src = "import tensorflow as tf\n\n@tf.function\ndef f(x, n):\n    def body(i, b):\n        return i + 1, tf.concat([b, b], 0)\n\n    _, b = tf.while_loop(lambda i, b: i < n, body, (0, x), shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))\n    return b\n\nf(tf.ones([2]), tf.constant(3))\n";
    assert!(findings(src).is_empty(), "{:?}", findings(src));
}

#[test]
fn a_loop_variable_that_is_the_functions_argument_is_named_as_tensorflow_names_it() {
    // TensorFlow 2.21 names the argument's placeholder after the parameter (`x:0`); a tensor
    // made inside the function keeps its path, whose graph name tracelens does not know.
    let shape = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    return tf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, tf.concat([h, h], 0)), (tf.constant(0), x))\n\nf(tf.ones([2]))\n";
    let found = findings(shape);
    assert_eq!(found.len(), 1);
    assert!(found[0]
        .2
        .starts_with("ValueError: Input tensor `x:0` enters the loop with shape (2,), but has shape (4,) after one iteration."));
    let dtype = "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    return tf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, tf.cast(h, tf.int32)), (tf.constant(0), x * 2.0))\n\nf(tf.ones([2]))\n";
    let found = findings(dtype);
    assert_eq!(found.len(), 1);
    assert!(found[0].2.starts_with("TypeError: Loop var loop_vars[1] enters the loop"), "{:?}", found);
}
