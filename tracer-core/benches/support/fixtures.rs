//! What the benchmarks share: the repository's fixtures, a source loader reading the disk,
//! and the Python interpreters with the pinned JAX and TensorFlow they compare against.
#![allow(dead_code, reason = "each benchmark includes this file and uses part of it")]

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;

/// Imported modules read from the disk, as `tracelens check` reads them.
pub struct Disk;

impl SourceLoader for Disk {
    fn read(&self, path: &Path) -> Option<Rc<str>> {
        std::fs::read_to_string(path).ok().map(Rc::from)
    }
}

/// The repository's root (benchmarks run from their crate's folder).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The `.py` files directly in each of `folders` (relative to the root), in path order.
pub fn python_files(folders: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for folder in folders {
        if let Ok(entries) = std::fs::read_dir(repo_root().join(folder)) {
            out.extend(entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "py")));
        }
    }
    out.sort();
    out
}

/// The fixtures `cargo xtask conformance` runs as scripts, in path order.
pub fn fixtures() -> Vec<PathBuf> {
    python_files(&["tests/fixtures/clean", "tests/fixtures/errors", "tests/fixtures/warnings"])
}

/// The interpreter `variable` names, else the one of the suite's venv `target/VENV`, if any.
fn venv_python(variable: &str, venv: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(variable) {
        return Some(PathBuf::from(p));
    }
    let python = repo_root().join("target").join(venv).join("bin/python");
    python.exists().then_some(python)
}

/// `TRACELENS_JAX_PYTHON`, else the conformance suite's `target/jax-venv`.
pub fn jax_python() -> Option<PathBuf> {
    venv_python("TRACELENS_JAX_PYTHON", "jax-venv")
}

/// `TRACELENS_TF_PYTHON`, else the TensorFlow suite's `target/tf-venv`.
pub fn tf_python() -> Option<PathBuf> {
    venv_python("TRACELENS_TF_PYTHON", "tf-venv")
}

/// Reads `files`, then analyses them all with `analyse` three times over: the texts read and
/// the total of the fastest round.
pub fn best_of_three_rounds(
    files: &[PathBuf],
    analyse: impl Fn(&Path, &str) -> std::time::Duration,
) -> (Vec<(PathBuf, String)>, std::time::Duration) {
    let texts: Vec<(PathBuf, String)> = files.iter().filter_map(|p| std::fs::read_to_string(p).ok().map(|t| (p.clone(), t))).collect();
    let mut best = std::time::Duration::MAX;
    for _ in 0..3 {
        let total: std::time::Duration = texts.iter().map(|(p, t)| analyse(p, t)).sum();
        best = best.min(total);
    }
    (texts, best)
}
