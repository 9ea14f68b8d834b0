//! Functions nothing calls are traced from `# tracelens: trace` comments and jaxtyping
//! annotations. Real entry points (absl's `app.run`, TestCase methods, pytest functions with
//! their fixtures) are in `entry_tests.rs`.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::diagnostics::Code;
use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig, FileAnalysis};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

fn analyse(source: &str) -> FileAnalysis {
    analyze_file(&PathBuf::from("lib.py"), source, &NoFiles, &AnalysisConfig::default())
}

fn traces_of<'a>(a: &'a FileAnalysis, name: &str) -> Vec<&'a tracer_core::analysis::Trace> {
    a.functions.iter().filter(|f| f.name == name).flat_map(|f| f.traces.iter()).collect()
}

#[test]
fn a_trace_comment_traces_the_function_with_those_avals() {
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\n\n# tracelens: trace attention(f32[8,16], f32[4,16])\ndef attention(q, k):\n    scores = q @ k.T\n    return jax.nn.softmax(scores, axis=-1)\n",
    );
    let traces = traces_of(&a, "attention");
    assert_eq!(traces.len(), 1);
    assert_eq!(traces[0].args, vec!["f32[8,16]", "f32[4,16]"]);
    assert_eq!(traces[0].outputs, Some(vec!["f32[8,4]".to_string()]));
    let scores = traces[0].values.iter().find(|v| v.assigned && &*v.name == "scores").expect("scores");
    assert_eq!(scores.aval, "f32[8,4]");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
}

#[test]
fn jaxtyping_dimensions_bind_consistently_and_mixing_them_is_an_error() {
    let a = analyse(
        "from jaxtyping import Array, Float\n\ndef good(x: Float[Array, \"b d\"], w: Float[Array, \"d h\"]):\n    return x @ w\n\ndef bad(x: Float[Array, \"b d\"], w: Float[Array, \"h d\"]):\n    return x @ w\n",
    );
    assert_eq!(traces_of(&a, "good")[0].outputs, Some(vec!["f32[b,h]".to_string()]));
    let errors: Vec<(Code, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code, l.line)).collect();
    assert_eq!(errors, vec![(Code::ShapeMismatch, 7)]);
}

/// Named dimensions are symbolic (`crate::symbolic`): what depends on their sizes is not
/// reported (jax.export calls it inconclusive), what holds for every size is, with the names.
#[test]
fn named_dimensions_report_only_what_holds_for_every_size() {
    let a = analyse(
        "import jax.numpy as jnp\nfrom jaxtyping import Array, Float\n\ndef groups(x: Float[Array, \"b n\"]):\n    return x.reshape(4, -1)\n\ndef column(x: Float[Array, \"b n\"]):\n    return x[:, 5]\n\ndef chunk(x: Float[Array, \"b n\"]):\n    if x.shape[0] > 100:\n        return x.reshape(100, -1)\n    return x\n\n# tracelens: trace square(f32[b,n])\ndef square(x):\n    flat = x.reshape(-1)\n    return x + x.T\n",
    );
    let messages: Vec<(u32, String)> = a.diagnostics.iter().map(|(d, l, _)| (l.line, d.message.clone())).collect();
    assert_eq!(messages, vec![(18, "TypeError: add got incompatible shapes for broadcasting: (b, n), (n, b).".to_string())]);
    let square = traces_of(&a, "square");
    assert_eq!(square[0].args, vec!["f32[b,n]"]);
    assert_eq!(square[0].route, "annotations");
    let flat = square[0].values.iter().find(|v| v.assigned && &*v.name == "flat").expect("flat");
    assert_eq!(flat.aval, "f32[b*n]");
    // The outcome of `chunk` depends on `b`: jax.export raises, and the trace has no outputs.
    assert_eq!(traces_of(&a, "chunk")[0].outputs, None);
    assert_eq!(traces_of(&a, "column")[0].outputs, Some(vec!["f32[b]".to_string()]));
}

/// The reproducer of an error found with named dimensions lowers the function with them
/// (`jax.ShapeDtypeStruct((b, d), ...)`, all names from one `symbolic_shape`), so JAX raises the
/// message the user saw, with the names, not the sizes the analysis gave them; and tracing
/// the reproducer raises that message again.
#[test]
fn a_reproducer_of_named_dimensions_raises_with_the_names() {
    let a =
        analyse("from jaxtyping import Array, Float\n\ndef bad(x: Float[Array, \"b d\"], w: Float[Array, \"h d\"]):\n    return x @ w\n");
    let message = "TypeError: dot_general requires contracting dimensions to have the same shape, got (d,) and (h,).";
    let found: Vec<&str> = a.diagnostics.iter().map(|(d, _, _)| d.message.as_str()).collect();
    assert_eq!(found, [message]);
    let reproducer = a.reproducers.first().expect("a reproducer");
    let call = r#"
b, d, h = jax.export.symbolic_shape("b, d, h")
jax.jit(bad).lower(jax.ShapeDtypeStruct((b, d), np.float32), jax.ShapeDtypeStruct((h, d), np.float32))"#;
    assert!(reproducer.text.contains(call), "{}", reproducer.text);
    let again = analyse(&reproducer.text);
    let raised: Vec<&str> = again.diagnostics.iter().map(|(d, _, _)| d.message.as_str()).collect();
    assert_eq!(raised, [message], "{}", reproducer.text);
}

/// A parameter annotated as an array of a `@jax.jit` function nothing calls is a tracer in
/// its body: a Python `if` on it is JAX's error whatever the caller passes.
#[test]
fn an_array_annotated_parameter_of_an_uncalled_jit_is_a_tracer() {
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\nfrom functools import partial\n\n@jax.jit\ndef relu(x: jax.Array):\n    if x > 0:\n        return x\n    return 0 * x\n\n@partial(jax.jit, static_argnums=(1,))\ndef scale(x: jax.Array, flag: jax.Array):\n    if flag:\n        return x * 2\n    return x\n\n@jax.jit\ndef maybe(x):\n    if x:\n        return x\n    return x\n",
    );
    let errors: Vec<(Code, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code, l.line)).collect();
    assert_eq!(errors, vec![(Code::Concretization, 7)], "a static or unannotated parameter is not known to be a tracer");
}

/// `jitted.lower(...)` traces through the jit cache, as a call would, with the avals of
/// `jax.ShapeDtypeStruct`s; a later call with those avals is not a second trace.
#[test]
fn lowering_with_shape_dtype_structs_traces_once() {
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\n\ndef f(x, w):\n    return x @ w\n\njf = jax.jit(f)\njf.lower(jax.ShapeDtypeStruct((8, 4), jnp.float32), jax.ShapeDtypeStruct((3, 2), jnp.float32))\n",
    );
    let errors: Vec<(Code, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code, l.line)).collect();
    assert_eq!(errors, vec![(Code::ShapeMismatch, 5)]);
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\n\ndef f(x):\n    return x * 2\n\njf = jax.jit(f)\nout = jf.eval_shape(jax.ShapeDtypeStruct((8, 4), jnp.float32))\njf.lower(jax.ShapeDtypeStruct((8, 4), jnp.float32))\njf(jnp.ones((8, 4)))\n",
    );
    assert_eq!(traces_of(&a, "f").len(), 1, "{:?}", a.functions);
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
}

/// A parameter annotated as an array of no stated shape (`key: jax.Array`) beside jaxtyping
/// ones is a tracer of unknown aval: the function is traced from its annotations, what does
/// not depend on the unknown (a Python `if` on a traced sum) is reported, and a function of
/// `jax.Array`s alone is not traced from annotations at all.
#[test]
fn jax_array_parameters_beside_jaxtyping_ones_are_unknown_tracers() {
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\nfrom jaxtyping import Array, Float\n\ndef noisy(x: Float[Array, \"b n\"], key: jax.Array):\n    noise = jax.random.normal(key, x.shape)\n    if jnp.sum(x) > 0:\n        return x + noise\n    return x\n\ndef plain(x: jax.Array, y: jax.Array):\n    return x + y\n",
    );
    let traces = traces_of(&a, "noisy");
    assert_eq!(traces.len(), 1, "{:?}", a.functions);
    assert_eq!(traces[0].route, "annotations");
    assert_eq!(traces[0].args[0], "f32[b,n]");
    let errors: Vec<(Code, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code, l.line)).collect();
    assert_eq!(errors, vec![(Code::Concretization, 7)]);
    assert!(traces_of(&a, "plain").is_empty(), "{:?}", a.functions);
}

#[test]
fn functions_the_script_calls_are_not_traced_again_from_annotations() {
    let a = analyse(
        "import jax.numpy as jnp\nfrom jaxtyping import Array, Float\n\ndef f(x: Float[Array, \"n\"]):\n    return x * 2\n\nf(jnp.ones(4))\n",
    );
    assert!(traces_of(&a, "f").is_empty(), "called eagerly, so no jit trace: {:?}", a.functions);
}

/// A method Python's builtin types have but the interpreter does not model is unknown (no
/// finding follows from it); a method they do not have is Python's AttributeError.
#[test]
fn unmodelled_methods_of_builtin_types_are_unknown_not_missing() {
    let a = analyse("text = 'a\\nb'\nfirst = text.splitlines()[0]\nn = (3).bit_count()\nparts = text.partition('\\n')\n");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let a = analyse("text = 'a'\ntext.shout()\n");
    let messages: Vec<&str> = a.diagnostics.iter().map(|(d, _, _)| d.message.as_str()).collect();
    assert_eq!(messages, vec!["AttributeError: 'str' object has no attribute 'shout'"]);
}
