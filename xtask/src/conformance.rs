//! `cargo xtask conformance`: every fixture under real JAX and under tracelens, compared.

use crate::compare::{check_fixture, compare_with_tracelens, FixtureFolder};
use crate::forkserver::ForkServer;
use crate::model::OracleReport;
use crate::pool;
use crate::python_env;
use crate::report;
use crate::runners::{Oracle, Tracelens};
use crate::sha256::sha256_hex;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

pub struct Options {
    pub filter: Option<String>,
    pub jobs: usize,
    pub oracle_only: bool,
    pub json_out: Option<PathBuf>,
    pub fixtures_dir: Option<PathBuf>,
    pub read_cache: bool,
    /// Only the reproducer checks (no fixture is compared).
    pub reproducers_only: bool,
    /// Whether a full run also checks the golden tables (`--no-golden`: tests/run_all.sh
    /// checks them on its own, while the tests build).
    pub golden: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    FixtureWrong,
    OracleFailed,
    KnownGap,
    NowPasses,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::FixtureWrong => "FIXTURE WRONG",
            Verdict::OracleFailed => "ORACLE FAILED",
            Verdict::KnownGap => "known gap",
            Verdict::NowPasses => "NOW PASSES",
        }
    }

    pub fn is_failure(self) -> bool {
        matches!(self, Verdict::Fail | Verdict::FixtureWrong | Verdict::OracleFailed | Verdict::NowPasses)
    }
}

pub struct FixtureResult {
    /// Relative to the fixtures directory, with `/` separators.
    pub name: String,
    pub folder: FixtureFolder,
    pub verdict: Verdict,
    /// Fixture against JAX, then tracelens against JAX (or why the oracle failed).
    pub problems: Vec<String>,
    pub gap_reason: Option<String>,
    pub oracle: Option<OracleReport>,
    pub oracle_raw: serde_json::Value,
    pub oracle_seconds: f64,
    pub oracle_cached: bool,
    pub tracelens: Option<crate::model::TracelensReport>,
    pub check_raw: serde_json::Value,
    pub trace_raw: serde_json::Value,
    pub tracelens_seconds: f64,
}

pub struct Suite {
    pub results: Vec<FixtureResult>,
    pub oracle_only: bool,
    pub jobs: usize,
    pub elapsed_seconds: f64,
    pub stale_gaps: Vec<String>,
    /// The framework the oracle ran (`JAX`, `TensorFlow`), as the summary names it.
    pub oracle_name: &'static str,
}

pub fn run(options: Options) -> Result<bool, String> {
    let root = workspace_root();
    let target_dir = target_dir(&root);
    let fixtures_dir = options.fixtures_dir.clone().map(|dir| absolute(&dir)).unwrap_or_else(|| root.join("tests").join("fixtures"));
    let conformance_dir = root.join("tests").join("conformance");

    let mut fixtures = discover(&fixtures_dir)?;
    // TensorFlow's fixtures run under TensorFlow (`tf_conformance.rs`).
    fixtures.retain(|path| !relative_name(&fixtures_dir, path).starts_with("tf/"));
    if let Some(filter) = &options.filter {
        fixtures.retain(|path| relative_name(&fixtures_dir, path).contains(filter.as_str()));
    }
    // Programs under run/ are compared by their output (`tracelens run` against `python`).
    let (mut run_programs, mut fixtures): (Vec<PathBuf>, Vec<PathBuf>) =
        fixtures.into_iter().partition(|path| relative_name(&fixtures_dir, path).starts_with("run/"));
    let gaps = load_known_gaps(&conformance_dir.join("known-gaps.txt"))?;
    let stale_gaps: Vec<String> = if options.filter.is_none() && options.fixtures_dir.is_none() {
        gaps.keys().filter(|gap| !fixtures_dir.join(gap).is_file()).cloned().collect()
    } else {
        Vec::new()
    };

    let python_env::OracleEnv { python, missing } = python_env::resolve(&target_dir)?;
    // An interpreter without a pinned library cannot run the fixtures that import it.
    let runnable = |path: &PathBuf| {
        let text = fs::read_to_string(path).unwrap_or_default();
        !missing.iter().any(|name| python_env::imports(&text, name))
    };
    let before = fixtures.len() + run_programs.len();
    fixtures.retain(runnable);
    run_programs.retain(runnable);
    if fixtures.len() + run_programs.len() < before {
        println!("skipped {} fixtures that import {}", before - fixtures.len() - run_programs.len(), missing.join(", "));
    }
    let cache_dir = target_dir.join("conformance-cache");
    let (script, script_bytes) = snapshot_oracle(&conformance_dir.join("oracle.py"), &cache_dir)?;
    let oracle = Oracle {
        script_bytes,
        script,
        python,
        cache_dir,
        read_cache: options.read_cache,
        xla_flags: crate::runners::ORACLE_XLA_FLAGS,
        companion: None,
    };
    // The fixtures' runs also observe what the hover oracle observes, for `xtask hover`: each
    // fixture then runs once for both suites (alone, the hover oracle's processes ran 330 s on
    // these fixtures in a clean-clone CI run).
    let hover_oracle = crate::hover::fixture_oracle(&root, oracle.python.clone(), oracle.cache_dir.clone())?;
    let fixture_oracle = Oracle { companion: Some(Box::new(hover_oracle)), ..oracle.clone() };
    let tracelens = if options.oracle_only {
        None
    } else {
        Some(Tracelens { binary: build_tracelens(&root, &target_dir)?, working_dir: root.clone() })
    };

    if options.reproducers_only {
        fixtures.clear();
        run_programs.clear();
    }
    let started = Instant::now();
    let wants_golden = options.golden && options.filter.is_none() && options.fixtures_dir.is_none() && !options.reproducers_only;
    let golden = wants_golden.then(|| {
        let (python, dir) = (oracle.python.clone(), conformance_dir.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            let (ok, said) = crate::golden::check(&python, &dir);
            (ok, said, started.elapsed())
        })
    });
    // Wall time of each phase, printed last: where a CI run's time went.
    let mut phases: Vec<(&str, std::time::Duration)> = Vec::new();
    let jobs = options.jobs.max(1).min(fixtures.len().max(1));
    let done = AtomicUsize::new(0);
    let oracle_command = || oracle.interpreter();
    let results: Vec<FixtureResult> = pool::map_with(
        &fixtures,
        jobs,
        || oracle.fork_server(&oracle_command),
        |server, _, path| {
            let name = relative_name(&fixtures_dir, path);
            let gap = gaps.get(&name).cloned();
            let result = run_fixture(path, name, gap, &fixture_oracle, server, tracelens.as_ref());
            let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
            eprintln!("[{finished:>3}/{}] {:<13} {}", fixtures.len(), result.verdict.label(), result.name);
            result
        },
        drop,
    );
    phases.push(("fixtures", started.elapsed()));
    let suite = Suite {
        results,
        oracle_only: options.oracle_only,
        jobs,
        elapsed_seconds: started.elapsed().as_secs_f64(),
        stale_gaps,
        oracle_name: "JAX",
    };
    if let Some(out) = &options.json_out {
        let text = serde_json::to_string_pretty(&report::to_json(&suite)).map_err(|e| format!("cannot serialise results: {e}"))?;
        fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    // Reproducers of the error fixtures must raise the same exception class under JAX.
    let mut repro_ok = true;
    if !missing.is_empty() && options.filter.is_none() {
        println!("reproducer checks skipped: the interpreter lacks {}", missing.join(", "));
    }
    if let (Some(t), None, true) = (&tracelens, &options.filter, missing.is_empty()) {
        let phase = Instant::now();
        let summary = crate::repro::check(
            &t.binary,
            &oracle.python,
            &fixtures_dir.join("errors"),
            &target_dir.join("conformance-repros"),
            options.jobs.max(1),
        );
        print!("{}", summary.render());
        phases.push(("reproducers", phase.elapsed()));
        let phase = Instant::now();
        let staged = crate::repro::check_functions(
            &t.binary,
            &oracle.python,
            &fixtures_dir.join("clean"),
            &target_dir.join("conformance-staged"),
            options.jobs.max(1),
        );
        print!("{}", staged.render());
        phases.push(("staged functions", phase.elapsed()));
        repro_ok = summary.wrong.is_empty() && staged.wrong.is_empty();
    }
    // The project fixtures, run under their real runners (absl, unittest, pytest).
    let mut projects_ok = true;
    let wants_projects = options.filter.as_deref().is_none_or(|f| "_projects/".contains(f) || f.starts_with("_projects"));
    if let (Some(t), true, true, None) = (&tracelens, wants_projects, missing.is_empty(), &options.fixtures_dir) {
        let phase = Instant::now();
        let summary =
            crate::projects::check(&t.binary, &oracle.python, &fixtures_dir.join("_projects"), &conformance_dir.join("project_oracle.py"));
        print!("{}", summary.render());
        phases.push(("projects", phase.elapsed()));
        projects_ok = summary.wrong.is_empty();
    }
    print!("{}", report::render(&suite));
    // A jax.jit program and its nnx.jit / eqx.filter_jit twin did the same under JAX.
    let mut pairs_ok = true;
    if let Ok(manifest) = fs::read_to_string(fixtures_dir.join("pairs.tsv")) {
        let pairs = crate::pairs::parse_manifest(&manifest)?;
        let mut summary = crate::pairs::check(&fixtures_dir, &pairs, &suite.results);
        if options.filter.is_none() && options.fixtures_dir.is_none() {
            let readme = fs::read_to_string(root.join("docs").join("diagnostics").join("README.md")).unwrap_or_default();
            let catalog = crate::pairs::catalog_codes(&readme);
            summary.differing.extend(crate::pairs::static_problems(&fixtures_dir, &pairs, &catalog));
        }
        print!("{}", summary.render());
        pairs_ok = summary.differing.is_empty();
    }
    let mut run_ok = true;
    if let (Some(t), false) = (&tracelens, run_programs.is_empty()) {
        let phase = Instant::now();
        let python = crate::run_suite::Python { interpreter: &oracle.python, preload: crate::runners::JAX_PRELOAD };
        let run = crate::run_suite::check(&run_programs, &fixtures_dir, &t.binary, python, &oracle.cache_dir, &gaps, options.jobs.max(1));
        print!("{}", run.render());
        phases.push(("run", phase.elapsed()));
        run_ok = !run.failed();
    }
    // The op table's goldens must still be what JAX gives (only on a full run): started with
    // the fixtures and waited for last, since the longest generator is one process of many
    // minutes.
    let golden_ok = match golden {
        Some(running) => {
            let waited = Instant::now();
            let (ok, said, took) =
                running.join().unwrap_or_else(|_| (false, "golden: the check panicked\n".to_string(), std::time::Duration::ZERO));
            print!("{said}");
            phases.push(("golden tables (beside the fixtures)", took));
            phases.push(("waiting for the golden tables", waited.elapsed()));
            ok
        }
        None => true,
    };
    let took: Vec<String> = phases.iter().map(|(name, d)| format!("{name} {:.0} s", d.as_secs_f64())).collect();
    println!("conformance phases, wall time: {}; in all {:.0} s", took.join(", "), started.elapsed().as_secs_f64());
    Ok(repro_ok && projects_ok && golden_ok && run_ok && pairs_ok && suite.results.iter().all(|r| !r.verdict.is_failure()))
}

fn run_fixture(
    path: &Path,
    name: String,
    gap_reason: Option<String>,
    oracle: &Oracle,
    server: &mut ForkServer,
    tracelens: Option<&Tracelens>,
) -> FixtureResult {
    let folder = FixtureFolder::of(Path::new(&name));
    let mut result = FixtureResult {
        name,
        folder,
        verdict: Verdict::Pass,
        problems: Vec::new(),
        gap_reason,
        oracle: None,
        oracle_raw: serde_json::Value::Null,
        oracle_seconds: 0.0,
        oracle_cached: false,
        tracelens: None,
        check_raw: serde_json::Value::Null,
        trace_raw: serde_json::Value::Null,
        tracelens_seconds: 0.0,
    };
    let oracle_run = match oracle.run(path, Some(server)) {
        Ok(run) => run,
        Err(why) => {
            result.verdict = Verdict::OracleFailed;
            result.problems.push(why);
            return result;
        }
    };
    result.oracle_seconds = oracle_run.seconds;
    result.oracle_cached = oracle_run.cached;
    result.oracle_raw = oracle_run.raw;
    let fixture_problems = check_fixture(&oracle_run.report, folder);

    if let Some(tracelens) = tracelens {
        let run = tracelens.run(path);
        result.tracelens_seconds = run.seconds;
        result.check_raw = run.check_raw;
        result.trace_raw = run.trace_raw;
        let mismatches = compare_with_tracelens(&oracle_run.report, &run.report);
        result.tracelens = Some(run.report);
        result.verdict = if !fixture_problems.is_empty() {
            Verdict::FixtureWrong
        } else {
            match (mismatches.is_empty(), result.gap_reason.is_some()) {
                (true, false) => Verdict::Pass,
                (true, true) => Verdict::NowPasses,
                (false, false) => Verdict::Fail,
                (false, true) => Verdict::KnownGap,
            }
        };
        result.problems = fixture_problems;
        result.problems.extend(mismatches);
        if result.verdict == Verdict::NowPasses {
            result.problems.push("now passes: remove it from known-gaps.txt".to_string());
        }
    } else {
        result.verdict = if fixture_problems.is_empty() { Verdict::Pass } else { Verdict::FixtureWrong };
        result.problems = fixture_problems;
    }
    result.oracle = Some(oracle_run.report);
    result
}

/// A copy of oracle.py named after its hash, so that an edit during a run neither mixes two
/// versions nor caches one version's results under the other's name.
pub(crate) fn snapshot_oracle(script: &Path, cache_dir: &Path) -> Result<(PathBuf, Vec<u8>), String> {
    let bytes = fs::read(script).map_err(|e| format!("cannot read {}: {e}", script.display()))?;
    let copy = cache_dir.join(format!("oracle-{}.py", &sha256_hex(&bytes)[..16]));
    if !copy.is_file() {
        fs::create_dir_all(cache_dir).map_err(|e| format!("cannot create {}: {e}", cache_dir.display()))?;
        let temporary = copy.with_extension(format!("tmp{}", std::process::id()));
        fs::write(&temporary, &bytes)
            .and_then(|()| fs::rename(&temporary, &copy))
            .map_err(|e| format!("cannot write {}: {e}", copy.display()))?;
    }
    Ok((copy, bytes))
}

pub(crate) fn build_tracelens(root: &Path, target_dir: &Path) -> Result<PathBuf, String> {
    if let Some(binary) = std::env::var_os("TRACELENS_BIN") {
        return Ok(PathBuf::from(binary));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("conformance: cargo build --release -p tracelens");
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "tracelens"])
        .current_dir(root)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("`cargo build --release -p tracelens` failed".to_string());
    }
    Ok(target_dir.join("release").join("tracelens"))
}

pub(crate) fn discover(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = fs::read_dir(&current).map_err(|e| format!("cannot read {}: {e}", current.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let file_name = entry.file_name();
            if file_name.to_string_lossy().starts_with(['.', '_']) {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "py") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `path/to/fixture.py  # reason` lines; paths relative to tests/fixtures/ (a leading
/// `tests/fixtures/` is accepted too).
pub fn parse_known_gaps(text: &str) -> BTreeMap<String, String> {
    let mut gaps = BTreeMap::new();
    for line in text.lines() {
        let (path, reason) = match line.split_once('#') {
            Some((path, reason)) => (path.trim(), reason.trim()),
            None => (line.trim(), ""),
        };
        if path.is_empty() {
            continue;
        }
        let path = path.strip_prefix("tests/fixtures/").unwrap_or(path);
        gaps.insert(path.to_string(), reason.to_string());
    }
    gaps
}

pub(crate) fn load_known_gaps(file: &Path) -> Result<BTreeMap<String, String>, String> {
    match fs::read_to_string(file) {
        Ok(text) => Ok(parse_known_gaps(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(format!("cannot read {}: {e}", file.display())),
    }
}

pub(crate) fn relative_name(base: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(base).unwrap_or(path);
    relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().map(Path::to_path_buf).unwrap_or(manifest_dir)
}

pub(crate) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|cwd| cwd.join(path)).unwrap_or_else(|_| path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::parse_known_gaps;

    #[test]
    fn known_gaps_file() {
        let gaps = parse_known_gaps(
            "# Fixtures tracelens does not handle yet.\n\n\
             errors/tl104_heads.py  # einsum not modelled\n\
             tests/fixtures/clean/mlp.py # optax\n\
             warnings/x.py\n",
        );
        assert_eq!(gaps.len(), 3);
        assert_eq!(gaps["errors/tl104_heads.py"], "einsum not modelled");
        assert_eq!(gaps["clean/mlp.py"], "optax");
        assert_eq!(gaps["warnings/x.py"], "");
    }
}
