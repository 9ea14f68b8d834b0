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
    /// An oracle that observes the same run of each fixture beside this one
    /// (`oracle.py --hover`), whose results go to its own cache entries: the conformance
    /// oracle runs the hover oracle this way, and `xtask hover` finds them cached.
    pub companion: Option<Box<Oracle>>,
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
        let mut args: Vec<std::ffi::OsString> = vec![fixture.into()];
        let companion = self.companion_wanted(fixture);
        if let Some((companion, _, out)) = &companion {
            args.extend(["--hover".into(), companion.script.clone().into(), out.clone().into()]);
        }
        let finished = match server {
            Some(server) => {
                let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                let mut argv = vec![self.script.clone().into()];
                argv.extend(args);
                server.run(&argv, &here, ORACLE_LIMIT)
            }
            None => {
                let mut command = self.command();
                command.args(args);
                run_with_limit(command, ORACLE_LIMIT)
            }
        }
        .map_err(|e| format!("cannot run {}: {e}", self.python.display()))?;
        if let Some((companion, cache_file, out)) = companion {
            // What the companion wrote, stored as its own run would have stored it; when it
            // wrote nothing, its suite runs it alone and says why.
            let written = fs::read(&out).ok().and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
            let _ = fs::remove_file(&out);
            if let Some(raw) = written.filter(|raw| raw.get("oracle_error").is_none() && finished.status == Some(0)) {
                companion.store(&cache_file, &raw, finished.seconds);
            }
        }
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

    /// The companion, its cache file for `fixture` and where its output is to be written,
    /// when it has no result for `fixture` yet.
    fn companion_wanted(&self, fixture: &Path) -> Option<(&Oracle, PathBuf, PathBuf)> {
        // The run is this oracle's, with its flags: a companion keyed on others waits.
        let companion = self.companion.as_deref().filter(|c| c.xla_flags == self.xla_flags)?;
        let cache_file = companion.cache_file(fixture).ok()?;
        if companion.cached(&cache_file).is_some() {
            return None;
        }
        fs::create_dir_all(&companion.cache_dir).ok()?;
        let out = cache_file.with_extension(format!("companion{}", std::process::id()));
        Some((companion, cache_file, out))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An oracle script that prints its arguments, and with `--hover SCRIPT OUT` writes to OUT
    /// what `companion.json`, beside it, holds.
    const ORACLE: &str = "import json, os, sys\n\
        args = sys.argv[1:]\n\
        if len(args) == 4:\n    open(args[3], 'w').write(open(os.path.join(os.path.dirname(__file__), 'companion.json')).read())\n\
        print(json.dumps({'fixture': args[0], 'args': args[1:]}))\n";

    fn oracle(dir: &Path, name: &str, text: &str, xla_flags: &'static str) -> Oracle {
        let script = dir.join(name);
        fs::write(&script, text).expect("write the script");
        let script_bytes = text.as_bytes().to_vec();
        Oracle {
            python: "python3".into(),
            script,
            script_bytes,
            cache_dir: dir.join("cache"),
            read_cache: true,
            xla_flags,
            companion: None,
        }
    }

    #[test]
    fn a_companion_observes_the_same_run_and_finds_its_result_in_its_own_cache() {
        let dir = std::env::temp_dir().join(format!("tracelens-runners-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("a scratch folder");
        let companion = oracle(&dir, "companion.py", "# the companion's own script\n", ORACLE_XLA_FLAGS);
        let main = Oracle { companion: Some(Box::new(companion.clone())), ..oracle(&dir, "main.py", ORACLE, ORACLE_XLA_FLAGS) };
        let fixture = |name: &str| {
            let path = dir.join(name);
            fs::write(&path, format!("# {name}\n")).expect("write the fixture");
            path
        };
        let args_of = |raw: &serde_json::Value| raw["args"].as_array().cloned().unwrap_or_default();

        // Run beside the oracle: given an output file, which ends in the companion's cache.
        let companion_says = |text: &str| fs::write(dir.join("companion.json"), text).expect("write what the companion says");
        companion_says(r#"{"sites": [1]}"#);
        let first = fixture("first.py");
        let (raw, _, cached) = main.run_raw(&first, None).expect("the oracle runs");
        assert!(!cached);
        let args = args_of(&raw);
        assert_eq!(args.len(), 3, "{raw}");
        assert_eq!((args[0].as_str(), args[1].as_str()), (Some("--hover"), companion.script.to_str()));
        assert!(!Path::new(args[2].as_str().unwrap_or_default()).exists(), "the output file is removed");
        let stored = companion.cached(&companion.cache_file(&first).expect("a key")).map(|(report, _)| report);
        assert_eq!(stored, Some(serde_json::json!({"sites": [1]})));

        // Its result cached, it is not asked again.
        let (raw, _, _) = Oracle { read_cache: false, ..main.clone() }.run_raw(&first, None).expect("the oracle runs");
        assert_eq!(args_of(&raw), Vec::<serde_json::Value>::new());

        // What says it failed is not stored (its suite runs it alone, and says why).
        companion_says(r#"{"oracle_error": "Traceback ..."}"#);
        let second = fixture("second.py");
        main.run_raw(&second, None).expect("the oracle runs");
        assert!(companion.cached(&companion.cache_file(&second).expect("a key")).is_none());

        // A companion with other XLA flags would see other programs: it is not run beside.
        let other_flags = Oracle { companion: Some(Box::new(Oracle { xla_flags: "", ..companion.clone() })), ..main.clone() };
        let (raw, _, _) = other_flags.run_raw(&fixture("third.py"), None).expect("the oracle runs");
        assert_eq!(args_of(&raw), Vec::<serde_json::Value>::new());
        let _ = fs::remove_dir_all(&dir);
    }
}
