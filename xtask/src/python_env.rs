//! The Python interpreter with real JAX that the oracle runs under.

use crate::process::run_with_limit;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub const JAX_VERSION: &str = "0.10.2";
pub const INTERPRETER_ENV: &str = "TRACELENS_JAX_PYTHON";
/// The libraries fixtures import besides jax, each pinned to a version that works with
/// `JAX_VERSION` (tracelens models them with the shims of `tracer-core/shims/`).
///
/// absl-py and pytest are the runners of the project fixtures (`tests/fixtures/_projects/`).
pub const LIBRARIES: &[(&str, &str)] =
    &[("optax", "0.2.8"), ("flax", "0.12.8"), ("equinox", "0.13.8"), ("absl-py", "2.5.1"), ("pytest", "9.0.1"), ("dm-haiku", "0.0.17")];

/// Whether a fixture's text imports the library pip installs as `name` (`dm-haiku` is
/// imported as `haiku`, `absl-py` as `absl`).
pub fn imports(text: &str, name: &str) -> bool {
    let module = match name {
        "dm-haiku" => "haiku",
        "absl-py" => "absl",
        other => other,
    };
    text.contains(&format!("import {module}")) || text.contains(&format!("from {module}"))
}

/// The oracle's interpreter, and the pinned libraries it lacks (only possible for an
/// interpreter given by `TRACELENS_JAX_PYTHON`: fixtures importing them are skipped).
pub struct OracleEnv {
    pub python: PathBuf,
    pub missing: Vec<&'static str>,
}

/// Everything the suite installs, as pip arguments: `jax==0.10.2 optax==0.2.8 flax==0.12.8 equinox==0.13.8`.
pub fn versions_key() -> String {
    let mut key = format!("jax=={JAX_VERSION}");
    for (name, version) in LIBRARIES {
        key.push_str(&format!(" {name}=={version}"));
    }
    key
}

/// What a fixture's oracle result depends on besides its text and the oracle script: jax's
/// version and those of the pinned libraries it imports (so adding a library keeps the cached
/// results of the fixtures that do not import it).
pub fn cache_key(source: &[u8]) -> String {
    let text = String::from_utf8_lossy(source);
    let mut key = JAX_VERSION.to_string();
    for (name, version) in LIBRARIES {
        if imports(&text, name) {
            key.push_str(&format!(" {name}=={version}"));
        }
    }
    key
}

/// `$TRACELENS_JAX_PYTHON` if set, else `target/jax-venv`, created (or completed) on first use.
pub fn resolve(target_dir: &Path) -> Result<OracleEnv, String> {
    if let Some(python) = std::env::var_os(INTERPRETER_ENV) {
        let python = PathBuf::from(python);
        let versions = installed_versions(&python);
        return match versions.as_ref().map(|v| v.jax.as_str()) {
            Some(JAX_VERSION) => {
                let missing = versions.map(|v| v.missing).unwrap_or_default();
                for name in &missing {
                    eprintln!(
                        "conformance: {INTERPRETER_ENV}={} has no {name}=={}; fixtures that import {name} are skipped",
                        python.display(),
                        pinned(name)
                    );
                }
                Ok(OracleEnv { python, missing })
            }
            Some(version) => Err(format!("{INTERPRETER_ENV}={} has jax {version}, the suite needs jax {JAX_VERSION}", python.display())),
            None => Err(format!("{INTERPRETER_ENV}={} cannot import jax", python.display())),
        };
    }
    let venv = target_dir.join("jax-venv");
    let python = venv.join("bin").join("python");
    let complete = |python: &Path| installed_versions(python).is_some_and(|v| v.jax == JAX_VERSION && v.missing.is_empty());
    if python.exists() && complete(&python) {
        return Ok(OracleEnv { python, missing: Vec::new() });
    }
    create_venv(&venv, &python)?;
    match installed_versions(&python) {
        Some(v) if v.jax == JAX_VERSION && v.missing.is_empty() => Ok(OracleEnv { python, missing: Vec::new() }),
        Some(v) => Err(format!("installed {} into {}, but it has jax {} and lacks {:?}", versions_key(), venv.display(), v.jax, v.missing)),
        None => Err(format!("installed {} into {}, but it cannot import jax", versions_key(), venv.display())),
    }
}

fn pinned(name: &str) -> &'static str {
    LIBRARIES.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).unwrap_or("")
}

fn create_venv(venv: &Path, python: &Path) -> Result<(), String> {
    let base_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    eprintln!("conformance: creating {} with {base_python} and installing {}", venv.display(), versions_key());
    if !python.exists() {
        let status =
            Command::new(&base_python).args(["-m", "venv"]).arg(venv).status().map_err(|e| format!("cannot run {base_python}: {e}"))?;
        if !status.success() {
            return Err(format!("`{base_python} -m venv {}` failed", venv.display()));
        }
    }
    let status = Command::new(python)
        .args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
        .args(versions_key().split(' '))
        .status()
        .map_err(|e| format!("cannot run pip in {}: {e}", venv.display()))?;
    if !status.success() {
        return Err(format!("`pip install {}` failed", versions_key()));
    }
    Ok(())
}

struct Installed {
    jax: String,
    /// Libraries of `LIBRARIES` absent or at another version.
    missing: Vec<&'static str>,
}

/// jax's version (by importing it: it must work), and which pinned libraries are not installed
/// at their version (read from package metadata, without importing them).
fn installed_versions(python: &Path) -> Option<Installed> {
    let mut script = String::from("import importlib.metadata as m, jax\nprint(jax.__version__)\n");
    for (name, _) in LIBRARIES {
        script.push_str(&format!("try:\n    print(m.version({name:?}))\nexcept Exception:\n    print('-')\n"));
    }
    let mut command = Command::new(python);
    command.args(["-c", &script]);
    command.env("JAX_PLATFORMS", "cpu");
    let finished = run_with_limit(command, Duration::from_secs(120)).ok()?;
    if finished.status != Some(0) {
        return None;
    }
    let mut lines = finished.stdout.lines().map(str::trim);
    let jax = lines.next()?.to_string();
    let missing =
        LIBRARIES.iter().zip(lines.chain(std::iter::repeat("-"))).filter(|((_, pin), got)| pin != got).map(|((n, _), _)| *n).collect();
    Some(Installed { jax, missing })
}
