//! Every jaxpr traced from the conformance fixtures and the examples is well formed.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

struct Disk;

impl SourceLoader for Disk {
    fn read(&self, path: &Path) -> Option<Rc<str>> {
        std::fs::read_to_string(path).ok().map(Rc::from)
    }
}

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            python_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "py") {
            out.push(p);
        }
    }
}

#[test]
fn check_ir_passes_on_every_trace() {
    // The analyses run on a stack as large as the one `tracelens` gives them (a test
    // thread's 2 MiB is less than the fixtures' deepest Python recursion needs).
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(check_ir_over_the_fixtures)
        .expect("spawn the analysis thread")
        .join()
        .expect("check_ir over the fixtures");
}

fn check_ir_over_the_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root").to_path_buf();
    let mut files = Vec::new();
    python_files(&root.join("tests/fixtures"), &mut files);
    python_files(&root.join("examples"), &mut files);
    assert!(files.len() > 100, "found {} files", files.len());
    let mut traced = 0;
    let mut problems = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read fixture");
        let config = AnalysisConfig { check_ir: true, search_roots: vec![f.parent().expect("dir").to_path_buf()], ..Default::default() };
        let a = analyze_file(f, &text, &Disk, &config);
        traced += a.functions.iter().map(|t| t.traces.len()).sum::<usize>();
        problems.extend(a.ir_problems.iter().map(|p| format!("{}: {p}", f.display())));
    }
    assert!(traced > 150, "only {traced} traces");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The crate's tests are built with the `check-ir` feature (a dev-dependency of the crate on
/// itself): every analysis any test makes re-runs each rule at every `bind` and over every
/// traced equation, and fails on a disagreement. The product and the benches leave it off.
#[test]
fn every_analysis_in_the_tests_checks_its_rules() {
    assert!(AnalysisConfig::default().check_ir, "tracer-core's tests were built without the check-ir feature");
    let source = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    return jnp.tanh(x @ x.T).sum()\n\nf(jnp.ones((4, 3)))\n";
    let analysis = analyze_file(Path::new("check.py"), source, &Disk, &AnalysisConfig::default());
    assert!(analysis.ir_problems.is_empty(), "{:?}", analysis.ir_problems);
    assert_eq!(analysis.functions.len(), 1, "the jitted function was traced");
}

/// `vmap` of a convolution with groups of its own binds one convolution with the examples
/// inside each group, as `jax.make_jaxpr(jax.vmap(f))` shows in JAX 0.10.2: a mapped input
/// with batch groups `f32[6,2,4]` from `f32[12,1,6]`; a mapped kernel with batch groups
/// `f32[2,6,4]`; both mapped, `batch_group_count=6`; a mapped kernel with feature groups
/// `f32[2,7,5,30]`, its output regrouped. Values: run/vmap_batched_conv.py.
#[test]
fn vmap_of_grouped_convolutions_binds_one_convolution() {
    let source = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n\
                  bg = lambda a, k: lax.conv_general_dilated(a, k, (1,), 'VALID', batch_group_count=2)\n\
                  fg = lambda a, k: lax.conv_general_dilated(a, k, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'), feature_group_count=3)\n\n\
                  @jax.jit\ndef f(sig, ker, x, depth):\n    \
                  return (jax.vmap(bg, in_axes=(0, None))(sig, ker[0]), jax.vmap(bg, in_axes=(None, 0))(sig[0], ker),\n            \
                  jax.vmap(bg)(sig, ker), jax.vmap(fg, in_axes=(None, 0))(x, depth))\n\n\
                  f(jnp.ones((3, 4, 1, 6)), jnp.ones((3, 2, 1, 3)), jnp.ones((2, 7, 5, 3)), jnp.ones((5, 3, 3, 1, 6)))\n";
    let a = analyze_file(Path::new("conv.py"), source, &Disk, &AnalysisConfig { check_ir: true, ..Default::default() });
    assert!(a.ir_problems.is_empty(), "{:?}", a.ir_problems);
    let jaxpr = &a.functions.iter().find(|f| f.name == "f").expect("f is traced").traces[0].jaxpr;
    assert!(!jaxpr.contains("vmap["), "{jaxpr}");
    assert_eq!(jaxpr.matches("= conv_general_dilated[").count(), 4, "{jaxpr}");
    for part in [
        "f32[6,2,4] = conv_general_dilated[batch_group_count=2 ",
        "f32[2,6,4] = conv_general_dilated[batch_group_count=2 ",
        "f32[2,6,4] = conv_general_dilated[batch_group_count=6 ",
        "f32[2,7,5,30] = conv_general_dilated[batch_group_count=1 ",
        "f32[2,7,5,5,6] = reshape[new_sizes=(2, 7, 5, 5, 6)]",
    ] {
        assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
    }
}
