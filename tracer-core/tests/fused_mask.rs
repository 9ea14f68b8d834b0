//! Values mode computes `x * convert(a <cmp> b)` (the mask of a relu's derivative, or a mask
//! written out) in one pass, without storing the comparison or the conversion
//! (docs/evaluator.md, "The float32 path"). Every expected value was printed by JAX 0.10.2 for
//! the same program.

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

#[test]
fn masked_products_inside_jit_give_jax_values() {
    let source = r#"import jax
import jax.numpy as jnp

x = jnp.array([[-2.0, 0.5, 3.0, -1e-30], [1e-30, -0.25, 0.0, 7.0]], jnp.float32)
g = jnp.array([[1.0, -1.5, 2.0, 4.0], [-3.0, 0.75, 5.0, -0.5]], jnp.float32)
relu_grad = jax.jit(jax.grad(lambda x, g: jnp.sum(jax.nn.relu(x) * g)))
print(relu_grad(x, g))
mlp_grad = jax.jit(jax.grad(lambda w, x: jnp.sum(jax.nn.relu(x @ w) ** 2)))
print(mlp_grad(jnp.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-1.0, 3.0, 0.5], [2.0, -0.5, 1.0]], jnp.float32), x))
mask = jax.jit(lambda a, b, v: v * (a >= b).astype(jnp.float32))
gp = jnp.abs(g)
print(mask(x, jnp.array([0.0, 1.0, -1.0, 0.0], jnp.float32), gp))
print(mask(x, jnp.float32(0.5), gp))
print(jax.jit(lambda a, v: (a < 1.0).astype(jnp.float32) * v)(x, gp))
"#;
    let r = run_file(&PathBuf::from("prog.py"), source, &NoFiles, &AnalysisConfig::default());
    assert_eq!(r.outcome, RunOutcome::Completed, "{:?}", r.notes);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(r.stdout, "[[ 0.  -1.5  2.   0. ]\n [-3.   0.   0.  -0.5]]\n[[ 2.7250001e-29 -4.4500000e+01  1.4375000e-29]\n [-6.8125000e+00  1.1125000e+01 -3.5937500e+00]\n [ 0.0000000e+00  6.6750000e+01  0.0000000e+00]\n [ 1.9075000e+02 -2.2250001e-29  1.0062500e+02]]\n[[0.  0.  2.  0. ]\n [3.  0.  5.  0.5]]\n[[0.  1.5 2.  0. ]\n [0.  0.  0.  0.5]]\n[[1.   1.5  0.   4.  ]\n [3.   0.75 5.   0.  ]]\n");
}

/// A relu's derivative is JAX's `custom_jvp` rule, `select_n(x > 0, zeros, g)`, computed in
/// one pass (`eval::masked_select`): where `x <= 0` a negative or NaN `g` gives `0.`, where a
/// product with a 0/1 mask would give `-0.` or `nan`. Expected values printed by JAX 0.10.2.
#[test]
fn relu_derivatives_select_as_jax() {
    let source = r#"import jax
import jax.numpy as jnp

x = jnp.array([[-2.0, 0.5, 3.0, -1e-30], [1e-30, -0.0, 0.0, 7.0]], jnp.float32)
g = jnp.array([[-1.0, -1.5, jnp.nan, jnp.nan], [-3.0, jnp.nan, -5.0, -0.5]], jnp.float32)
relu_grad = jax.jit(jax.grad(lambda x, g: jnp.sum(jax.nn.relu(x) * g)))
print(relu_grad(x, g))
print(relu_grad(x[0], g[1]))
mask = jax.jit(lambda a, b, v: jnp.where(a > b, v, 0.0))
print(mask(x, jnp.float32(0.25), g))
"#;
    let r = run_file(&PathBuf::from("prog.py"), source, &NoFiles, &AnalysisConfig::default());
    assert_eq!(r.outcome, RunOutcome::Completed, "{:?}", r.notes);
    assert_eq!(
        r.stdout,
        "[[ 0.  -1.5  nan  0. ]\n [-3.   0.   0.  -0.5]]\n[ 0. nan -5.  0.]\n[[ 0.  -1.5  nan  0. ]\n [ 0.   0.   0.  -0.5]]\n"
    );
}
