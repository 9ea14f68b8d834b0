//! `tracelens run` on TensorFlow training loops: `tf.Variable`s read and assigned inside a
//! `tf.function` are inputs and outputs of each call of the graph, and `tape.gradient` in a
//! graph is computed by the JAX model's autodiff. Every expected value was printed by
//! TensorFlow 2.21 for the same program; what tracelens cannot vouch for stays unknown.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{run_file, AnalysisConfig, RunOutcome};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _: &Path) -> Option<Rc<str>> {
        None
    }
}

fn run(source: &str) -> tracer_core::RunResult {
    run_file(&PathBuf::from("prog.py"), source, &NoFiles, &AnalysisConfig::default())
}

#[test]
fn a_graph_reads_each_variable_at_call_time_and_writes_it_back() {
    let r = run(r#"import tensorflow as tf
v = tf.Variable(1.0)
c = tf.Variable(0.0)

@tf.function
def f(x):
    v.assign_add(x)
    y = v * 2.0
    c.assign(y)
    return y

print(float(f(tf.constant(1.0))))
print(float(f(tf.constant(1.0))))
print(float(v.numpy()), float(c.numpy()))
v.assign(10.0)
print(float(f(tf.constant(0.5))))
"#);
    assert_eq!(r.outcome, RunOutcome::Completed, "{:?}", r.notes);
    assert_eq!(r.stdout, "4.0\n6.0\n3.0 6.0\n21.0\n");
}

#[test]
fn a_tape_in_a_graph_gives_gradients_and_none_for_an_unconnected_source() {
    let r = run(r#"import tensorflow as tf
v = tf.Variable(2.0)
u = tf.Variable(5.0)

@tf.function
def h(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.math.cumsum(x) * v)
    return tape.gradient(y, [x, v, u])

gx, gv, gu = h(tf.constant([1.0, 2.0]))
print(gx.numpy().tolist(), float(gv), gu)
"#);
    assert_eq!(r.outcome, RunOutcome::Completed, "{:?}", r.notes);
    assert_eq!(r.stdout, "[4.0, 2.0] 4.0 None\n");
}

#[test]
fn an_eager_tape_gives_none_for_an_unreached_variable_and_zeros_when_asked() {
    // TensorFlow 2.21 prints `True None`, `[0.0] int32 0`, `True None`: `b` is never read under
    // the tape, `r` is read but the loss does not take the read; `ZERO` gives zeros of the
    // source's shape and dtype; a variable read only through `tf.stop_gradient` gets None
    // too.
    let r = run(r#"import tensorflow as tf
w = tf.Variable([1.0, 2.0])
b = tf.Variable([0.5])
r = tf.Variable(3.0)
n = tf.Variable(4)
x = tf.constant([3.0, 4.0])
with tf.GradientTape() as tape:
    unused = r * 2.0
    loss = tf.reduce_sum(w * x)
gw, gb, gr = tape.gradient(loss, [w, b, r])
print(gb is None, gr)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * x)
gb, gn = tape.gradient(loss, [b, n], unconnected_gradients=tf.UnconnectedGradients.ZERO)
print(gb.numpy().tolist(), gn.dtype.name, int(gn))
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.stop_gradient(w) * x) + r
gw, gr = tape.gradient(loss, [w, r])
print(float(gr) == 1.0, gw)
"#);
    assert_eq!(r.outcome, RunOutcome::Completed, "{:?}", r.notes);
    assert_eq!(r.stdout, "True None\n[0.0] int32 0\nTrue None\n");
}

#[test]
fn what_the_tape_cannot_vouch_for_stays_unknown() {
    // TensorFlow prints `None` (x is not watched), `12.0` (the read after the assign) and
    // `4.0` (`n`: the read under the tape is a new ReadVariableOp of the assigned value,
    // which tracelens holds as the assigned tensor itself); tracelens follows none of them,
    // so it prints neither a value nor a wrong `None`.
    let r = run(r#"import tensorflow as tf
w = tf.Variable(3.0)

@tf.function
def k(x):
    with tf.GradientTape() as tape:
        y = x * 2.0
    return tape.gradient(y, x)

@tf.function
def m():
    with tf.GradientTape() as tape:
        w.assign(w * 2.0)
        y = w * w
    return tape.gradient(y, w)

@tf.function
def n(x):
    w.assign(x)
    with tf.GradientTape() as tape:
        y = w * w
    return tape.gradient(y, w)

print(k(tf.constant(1.0)))
print(float(m()))
print(float(w.numpy()))
print(float(n(tf.constant(2.0))), float(w.numpy()))
"#);
    assert_eq!(r.stdout, "<unknown>\n<unknown>\n6.0\n<unknown> 2.0\n");
}

#[test]
fn a_nan_reached_only_at_a_later_step_is_reported_at_that_step() {
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/tf/run/tf_diverging_learning_rate_nan.py"))
            .expect("the fixture");
    let r = run(&source);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[..4], ["0 21.0625", "1 39175.69140625", "2 897888347488256.0", "3 inf"]);
    assert_eq!(lines[6], "6 nan");
    let tl301: Vec<_> = r.diagnostics.iter().filter(|(d, _, _)| d.code.as_str() == "TL301").collect();
    assert_eq!(tl301.len(), 1, "{:?}", r.diagnostics);
    let (d, loc, _) = tl301[0];
    assert_eq!(loc.line, 13);
    assert!(d.message.contains("encountered in pow"), "{}", d.message);
    assert!(d.message.contains("the 4th iteration of the loop at prog.py:19"), "{}", d.message);
}
