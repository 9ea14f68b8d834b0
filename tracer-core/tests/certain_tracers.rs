//! What is certainly a tracer when the arguments are unknown (design.md §6): inside a `jit`
//! every `jnp`/`lax` op stages out, constants included, and so does `grad`'s value; Python
//! control flow and conversions on those are JAX's errors whatever their avals. A container
//! whose structure is unknown (the gradient of an unknown pytree, `jnp.split`'s list) is not.

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

fn findings(source: &str) -> Vec<(Code, u32, String)> {
    let a: FileAnalysis = analyze_file(&PathBuf::from("train.py"), source, &NoFiles, &AnalysisConfig::default());
    a.diagnostics
        .iter()
        .filter(|(d, _, _)| d.code != Code::NotAnalysed)
        .map(|(d, l, _)| (d.code, l.line, d.message.lines().next().unwrap_or("").to_string()))
        .collect()
}

/// A batch from a loader tracelens does not model: `np.loadtxt` of a file.
const LOADER: &str = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\ntable = np.loadtxt(\"train.csv\", delimiter=\",\")\n";

#[test]
fn the_value_of_grad_inside_jit_is_a_tracer_even_of_unknown_arguments() {
    let source = format!(
        "{LOADER}\ndef loss_fn(w, x, y):\n    return jnp.mean((x @ w - y) ** 2)\n\n@jax.jit\ndef step(w, x, y):\n    loss, g = jax.value_and_grad(loss_fn)(w, x, y)\n    lr = 0.1 if loss > 1.0 else 0.01\n    return w - lr * g\n\nstep(jnp.ones(3), table[:, :3], table[:, 3])\n"
    );
    let found = findings(&source);
    assert_eq!(found.iter().map(|(c, l, _)| (*c, *l)).collect::<Vec<_>>(), vec![(Code::Concretization, 13)], "{found:?}");
    assert!(found[0].2.starts_with("TracerBoolConversionError: Attempted boolean conversion of traced array"), "{found:?}");
}

#[test]
fn float_of_a_jnp_result_on_unknown_arguments_is_a_concretization_error() {
    let source = format!(
        "{LOADER}\n@jax.jit\ndef step(p, x):\n    loss = jnp.mean(x @ p[\"w\"])\n    history = [float(loss)]\n    return loss\n\nstep({{\"w\": table[:, :2]}}, table)\n"
    );
    let found = findings(&source);
    assert_eq!(found.iter().map(|(c, l, _)| (*c, *l)).collect::<Vec<_>>(), vec![(Code::Concretization, 10)], "{found:?}");
    assert!(
        found[0].2.starts_with("ConcretizationTypeError: Abstract tracer value encountered where concrete value is expected"),
        "{found:?}"
    );
}

#[test]
fn containers_of_unknown_structure_are_not_tracers() {
    // The gradient of an unknown pytree is that pytree (a dict is truthy), `jnp.split` gives a
    // list, `jnp.shape` a tuple: none of them is a tracer, and none of these lines raises.
    let source = format!(
        "{LOADER}\ndef loss_fn(params, x):\n    return jnp.sum(x)\n\n@jax.jit\ndef step(params, x):\n    g = jax.grad(loss_fn)(params, x)\n    if g:\n        x = x + 1\n    parts = jnp.split(x, 2)\n    if parts:\n        x = x * 2\n    if jnp.shape(x):\n        x = x - 1\n    return x\n\nstep({{\"w\": table}}, table)\n"
    );
    assert_eq!(findings(&source), vec![]);
}

#[test]
fn outside_a_trace_an_op_on_unknowns_is_not_a_tracer() {
    // No jit: `jnp.mean` of an unknown is a concrete array whose value is not known.
    let source = format!("{LOADER}\nm = jnp.mean(table)\nif m > 0:\n    print(float(m))\n");
    assert_eq!(findings(&source), vec![]);
}
