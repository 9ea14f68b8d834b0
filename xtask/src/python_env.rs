//! The Python interpreter with real JAX that the oracle runs under.

use crate::process::run_with_limit;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub const JAX_VERSION: &str = "0.10.2";
pub const INTERPRETER_ENV: &str = "TRACELENS_JAX_PYTHON";

/// `$TRACELENS_JAX_PYTHON` if set, else `target/jax-venv`, created on first use.
pub fn resolve(target_dir: &Path) -> Result<PathBuf, String> {
    if let Some(python) = std::env::var_os(INTERPRETER_ENV) {
        let python = PathBuf::from(python);
        return match jax_version(&python) {
            Some(version) if version == JAX_VERSION => Ok(python),
            Some(version) => Err(format!("{INTERPRETER_ENV}={} has jax {version}, the suite needs jax {JAX_VERSION}", python.display())),
            None => Err(format!("{INTERPRETER_ENV}={} cannot import jax", python.display())),
        };
    }
    let venv = target_dir.join("jax-venv");
    let python = venv.join("bin").join("python");
    if python.exists() && jax_version(&python).as_deref() == Some(JAX_VERSION) {
        return Ok(python);
    }
    create_venv(&venv, &python)?;
    match jax_version(&python) {
        Some(version) if version == JAX_VERSION => Ok(python),
        other => Err(format!("installed jax=={JAX_VERSION} into {}, but it reports {other:?}", venv.display())),
    }
}

fn create_venv(venv: &Path, python: &Path) -> Result<(), String> {
    let base_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    eprintln!("conformance: creating {} with {base_python} and installing jax=={JAX_VERSION}", venv.display());
    if !python.exists() {
        let status =
            Command::new(&base_python).args(["-m", "venv"]).arg(venv).status().map_err(|e| format!("cannot run {base_python}: {e}"))?;
        if !status.success() {
            return Err(format!("`{base_python} -m venv {}` failed", venv.display()));
        }
    }
    let status = Command::new(python)
        .args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
        .arg(format!("jax=={JAX_VERSION}"))
        .status()
        .map_err(|e| format!("cannot run pip in {}: {e}", venv.display()))?;
    if !status.success() {
        return Err(format!("`pip install jax=={JAX_VERSION}` failed"));
    }
    Ok(())
}

fn jax_version(python: &Path) -> Option<String> {
    let mut command = Command::new(python);
    command.args(["-c", "import jax; print(jax.__version__)"]);
    command.env("JAX_PLATFORMS", "cpu");
    let finished = run_with_limit(command, Duration::from_secs(120)).ok()?;
    if finished.status != Some(0) {
        return None;
    }
    Some(finished.stdout.trim().to_string())
}
