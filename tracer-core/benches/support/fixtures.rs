//! What the benchmarks that compare tracelens with real JAX share: the conformance fixtures
//! that run as scripts, and the interpreter with the pinned JAX.

use std::path::{Path, PathBuf};

/// The repository's root (benchmarks run from their crate's folder).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The fixtures `cargo xtask conformance` runs as scripts, in path order.
pub fn fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for folder in ["clean", "errors", "warnings"] {
        if let Ok(entries) = std::fs::read_dir(repo_root().join("tests/fixtures").join(folder)) {
            out.extend(entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "py")));
        }
    }
    out.sort();
    out
}

/// `TRACELENS_JAX_PYTHON`, else the conformance suite's `target/jax-venv`, if there is one.
pub fn jax_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRACELENS_JAX_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = repo_root().join("target/jax-venv/bin/python");
    venv.exists().then_some(venv)
}
