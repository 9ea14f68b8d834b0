//! Running the oracle (with its result cache) and the tracelens binary on one fixture.

use crate::forkserver::ForkServer;
use crate::model::{Diagnostic, OracleReport, TraceReport, TracelensReport};
use crate::process::{run_with_limit, tail};
use crate::python_env::cache_key;
use crate::sha256::sha256_hex;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ORACLE_LIMIT: Duration = Duration::from_secs(180);
const TRACELENS_LIMIT: Duration = Duration::from_secs(60);

#[derive(Clone)]
pub struct Oracle {
    pub python: PathBuf,
    pub script: PathBuf,
    pub script_bytes: Vec<u8>,
    pub cache_dir: PathBuf,
    pub read_cache: bool,
    /// XLA's flags for the oracle's processes: [`ORACLE_XLA_FLAGS`], or none (XLA's
    /// defaults) where the same programs also run for their values (the hover oracle on
    /// `run/`, whose programs the run suite compiled with the defaults).
    pub xla_flags: &'static str,
}

pub struct OracleRun {
    pub report: OracleReport,
    pub raw: serde_json::Value,
    /// Wall time of the oracle process, as measured when it really ran.
    pub seconds: f64,
    pub cached: bool,
}

#[derive(Serialize, Deserialize)]
struct CacheEntry {
    seconds: f64,
    report: serde_json::Value,
}

/// The modules a JAX fork server imports once: what every oracle and program imports.
/// Libraries some fixtures import (flax, optax, equinox) are left to those fixtures, so that
/// nothing they do at import is done for the others.
pub const JAX_PRELOAD: &[&str] = &["jax", "jax.numpy", "numpy"];

impl Oracle {
    /// A fork server for [`Oracle::run`]: `command` is `|| oracle.interpreter()`.
    pub fn fork_server<'a>(&self, command: &'a (dyn Fn() -> Command + Sync)) -> ForkServer<'a> {
        ForkServer::new(command, JAX_PRELOAD)
    }

    /// The oracle on `fixture`, forked from `server` when there is one.
    pub fn run(&self, fixture: &Path, server: Option<&mut ForkServer>) -> Result<OracleRun, String> {
        let (raw, seconds, cached) = self.run_raw(fixture, server)?;
        let report: OracleReport = serde_json::from_value(raw.clone()).map_err(|e| format!("oracle JSON has an unexpected shape: {e}"))?;
        Ok(OracleRun { report, raw, seconds, cached })
    }

    /// The oracle's JSON for `fixture` (from the cache when it has it), its wall time as
    /// measured when it really ran, and whether it came from the cache.
    pub fn run_raw(&self, fixture: &Path, server: Option<&mut ForkServer>) -> Result<(serde_json::Value, f64, bool), String> {
        let cache_file = self.cache_file(fixture)?;
        if let Some((raw, seconds)) = self.cached(&cache_file) {
            return Ok((raw, seconds, true));
        }
        let finished = match server {
            Some(server) => {
                let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                server.run(&[self.script.clone().into(), fixture.into()], &here, ORACLE_LIMIT)
            }
            None => {
                let mut command = self.command();
                command.arg(fixture);
                run_with_limit(command, ORACLE_LIMIT)
            }
        }
        .map_err(|e| format!("cannot run {}: {e}", self.python.display()))?;
        let raw: serde_json::Value = serde_json::from_str(&finished.stdout)
            .map_err(|e| format!("oracle {}, and its output is not JSON ({e})", finished.describe_failure()))?;
        if let Some(error) = raw.get("oracle_error").and_then(|e| e.as_str()) {
            return Err(format!("oracle crashed:\n{}", tail(error, 12)));
        }
        if finished.status != Some(0) {
            return Err(format!("oracle {}", finished.describe_failure()));
        }
        self.store(&cache_file, &raw, finished.seconds);
        Ok((raw, finished.seconds, false))
    }

    /// Where the result for `fixture` is cached: a hash of the fixture, the script and the
    /// versions of what the fixture imports.
    pub fn cache_file(&self, fixture: &Path) -> Result<PathBuf, String> {
        let source = fs::read(fixture).map_err(|e| format!("cannot read fixture: {e}"))?;
        let versions = cache_key(&source);
        let mut key_input = source;
        key_input.push(0);
        key_input.extend_from_slice(&self.script_bytes);
        key_input.push(0);
        key_input.extend_from_slice(versions.as_bytes());
        key_input.push(0);
        key_input.extend_from_slice(self.xla_flags.as_bytes());
        Ok(self.cache_dir.join(format!("{}.json", sha256_hex(&key_input))))
    }

    /// The cached result and its wall time, unless the cache is not to be read.
    pub fn cached(&self, cache_file: &Path) -> Option<(serde_json::Value, f64)> {
        if !self.read_cache {
            return None;
        }
        let entry = fs::read(cache_file).ok().and_then(|bytes| serde_json::from_slice::<CacheEntry>(&bytes).ok())?;
        Some((entry.report, entry.seconds))
    }

    pub fn store(&self, cache_file: &Path, raw: &serde_json::Value, seconds: f64) {
        let entry = CacheEntry { seconds, report: raw.clone() };
        if fs::create_dir_all(&self.cache_dir).is_ok() {
            let temporary = cache_file.with_extension(format!("tmp{}", std::process::id()));
            if let Ok(text) = serde_json::to_vec(&entry) {
                if fs::write(&temporary, text).is_ok() {
                    let _ = fs::rename(&temporary, cache_file);
                }
            }
        }
    }

    /// The script under the oracle's interpreter, with JAX on CPU and no inherited JAX settings.
    pub fn command(&self) -> Command {
        let mut command = self.interpreter();
        command.arg(&self.script);
        command
    }

    /// The oracle's interpreter with the environment the oracle runs in (for its fork server).
    pub fn interpreter(&self) -> Command {
        let mut command = with_compile_cache(jax_python(&self.python), &self.cache_dir);
        if !self.xla_flags.is_empty() {
            command.env("XLA_FLAGS", self.xla_flags);
        }
        command
    }
}

/// `command` (a JAX process) with XLA's compiled programs kept on disk under `cache_dir`, for
/// every process of the suite that compiles the same programs with the same flags: the
/// conformance oracle compiles a fixture's programs and the hover oracle, which runs the same
/// fixture, finds them compiled (about 5× less CPU for a training step); the run suite
/// compiles the `run/` programs and the hover oracle finds those (half its CPU on them). JAX
/// keys each entry on the program, its version and its flags, and still traces every
/// function: trace counts, errors and values are JAX's own.
pub fn with_compile_cache(mut command: Command, cache_dir: &Path) -> Command {
    command
        .env("JAX_COMPILATION_CACHE_DIR", cache_dir.join("jax-compiled"))
        .env("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
        .env("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1");
    command
}

/// XLA's flags for the oracles, which observe what JAX decides before XLA compiles anything:
/// errors, trace counts, avals, the lines run. Most of a fixture's time was XLA optimising
/// each program it compiles with LLVM, for values nobody compares here; without that
/// optimisation XLA compiles the same programs, and the values they compute are for the
/// run suite and the golden tables to compare, which run with XLA's defaults.
pub const ORACLE_XLA_FLAGS: &str = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true";

/// `python` as the suite runs JAX programs: on the CPU, with no JAX setting of the caller's
/// environment, a fixed hash seed and no bytecode written into the fixtures' folders.
pub fn jax_python(python: &Path) -> Command {
    let mut command = Command::new(python);
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("JAX_") || name_text == "XLA_FLAGS" {
            command.env_remove(&name);
        }
    }
    command.env("JAX_PLATFORMS", "cpu").env("PYTHONHASHSEED", "0").env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

/// `python` as the suite runs TensorFlow programs: a fixed hash seed, TensorFlow's C++ logging
/// quiet.
pub fn tf_python(python: &Path) -> Command {
    let mut command = Command::new(python);
    command.env("PYTHONHASHSEED", "0").env("TF_CPP_MIN_LOG_LEVEL", "3");
    command
}

pub struct Tracelens {
    pub binary: PathBuf,
    pub working_dir: PathBuf,
}

pub struct TracelensRun {
    pub report: TracelensReport,
    pub check_raw: serde_json::Value,
    pub trace_raw: serde_json::Value,
    pub seconds: f64,
}

impl Tracelens {
    pub fn run(&self, fixture: &Path) -> TracelensRun {
        let file = fixture.strip_prefix(&self.working_dir).unwrap_or(fixture).to_path_buf();
        let mut report = TracelensReport::default();
        let mut seconds = 0.0;
        let (check_raw, check_seconds) = self.invoke("check", &file, &mut report.failures);
        seconds += check_seconds;
        match serde_json::from_value::<Vec<Diagnostic>>(check_raw.clone()) {
            Ok(diagnostics) => report.diagnostics = diagnostics,
            Err(e) if !check_raw.is_null() => report.failures.push(format!("tracelens check JSON has an unexpected shape: {e}")),
            Err(_) => {}
        }
        let (trace_raw, trace_seconds) = self.invoke("trace", &file, &mut report.failures);
        seconds += trace_seconds;
        match serde_json::from_value::<TraceReport>(trace_raw.clone()) {
            Ok(trace) => report.trace = trace,
            Err(e) if !trace_raw.is_null() => report.failures.push(format!("tracelens trace JSON has an unexpected shape: {e}")),
            Err(_) => {}
        }
        TracelensRun { report, check_raw, trace_raw, seconds }
    }

    fn invoke(&self, subcommand: &str, file: &Path, failures: &mut Vec<String>) -> (serde_json::Value, f64) {
        let mut command = Command::new(&self.binary);
        command.arg(subcommand).args(["--format", "json"]).arg(file).current_dir(&self.working_dir);
        let finished = match run_with_limit(command, TRACELENS_LIMIT) {
            Ok(finished) => finished,
            Err(e) => {
                failures.push(format!("cannot run tracelens {subcommand}: {e}"));
                return (serde_json::Value::Null, 0.0);
            }
        };
        if !matches!(finished.status, Some(0 | 1)) {
            failures.push(format!("tracelens {subcommand} {}", finished.describe_failure()));
            return (serde_json::Value::Null, finished.seconds);
        }
        match serde_json::from_str(&finished.stdout) {
            Ok(value) => (value, finished.seconds),
            Err(e) => {
                failures.push(format!("tracelens {subcommand} printed no JSON ({e}): {}", tail(&finished.stdout, 3)));
                (serde_json::Value::Null, finished.seconds)
            }
        }
    }
}
