//! `cargo xtask tf-conformance`: every TensorFlow fixture (`tests/fixtures/tf/`) under real
//! TensorFlow and under tracelens, compared exactly as the JAX fixtures are
//! (`compare.rs`). Each fixture runs under `tests/conformance/tf_oracle.py` in a child of a fork
//! server that imported TensorFlow once (`forkserver.rs`), so the suite pays TensorFlow's
//! import once per job.

use crate::compare::{check_fixture, compare_with_tracelens, FixtureFolder};
use crate::conformance::{
    build_tracelens, discover, load_known_gaps, relative_name, target_dir, workspace_root, FixtureResult, Suite, Verdict,
};
use crate::forkserver::ForkServer;
use crate::model::OracleReport;
use crate::pool;
use crate::process::run_with_limit;
use crate::runners::Tracelens;
use crate::sha256::sha256_hex;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const TF_PACKAGE: &str = "tensorflow-cpu==2.21.0";
pub const TF_VERSION: &str = "2.21.0";
pub const INTERPRETER_ENV: &str = "TRACELENS_TF_PYTHON";

pub struct Options {
    pub filter: Option<String>,
    pub jobs: usize,
    pub oracle_only: bool,
    pub read_cache: bool,
}

/// How long the oracle may run one fixture under TensorFlow.
const ORACLE_LIMIT: Duration = Duration::from_secs(60);

pub fn run(options: Options) -> Result<bool, String> {
    let started = Instant::now();
    let root = workspace_root();
    let target = target_dir(&root);
    let fixtures_root = root.join("tests").join("fixtures");
    let conformance_dir = root.join("tests").join("conformance");
    let mut fixtures = discover(&fixtures_root.join("tf"))?;
    if let Some(filter) = &options.filter {
        fixtures.retain(|p| relative_name(&fixtures_root, p).contains(filter.as_str()));
    }
    // Programs under tf/run/ are compared by their output (`tracelens run` against `python`).
    let (run_programs, fixtures): (Vec<PathBuf>, Vec<PathBuf>) =
        fixtures.into_iter().partition(|p| relative_name(&fixtures_root, p).starts_with("tf/run/"));
    let gaps = load_known_gaps(&conformance_dir.join("known-gaps.txt"))?;
    let python = resolve_python(&target)?;
    let surface_ok = options.filter.is_some() || check_surface(&python, &root)?;

    // The oracle: each fixture not cached runs in a child of a fork server that imported
    // TensorFlow once (one server per job).
    let script = conformance_dir.join("tf_oracle.py");
    let mut script_bytes = fs::read(&script).map_err(|e| format!("cannot read {}: {e}", script.display()))?;
    script_bytes.extend(fs::read(conformance_dir.join("oracle.py")).unwrap_or_default());
    let cache_dir = target.join("conformance-cache").join("tf");
    fs::create_dir_all(&cache_dir).map_err(|e| format!("cannot create {}: {e}", cache_dir.display()))?;
    // A fixture stating `# stack depths:` runs once per depth (`tf_stack_depths.rs`).
    let runs_of = |fixture: &PathBuf| -> Vec<(PathBuf, Option<u32>)> {
        let depths = crate::tf_stack_depths::depths_of(&fs::read_to_string(fixture).unwrap_or_default());
        if depths.is_empty() {
            return vec![(fixture.clone(), None)];
        }
        depths.into_iter().map(|d| (fixture.clone(), Some(d))).collect()
    };
    let cache_file = |fixture: &Path, depth: Option<u32>| -> PathBuf {
        let mut key = fs::read(fixture).unwrap_or_default();
        key.push(0);
        key.extend_from_slice(&script_bytes);
        key.extend_from_slice(TF_PACKAGE.as_bytes());
        if let Some(depth) = depth {
            key.extend_from_slice(format!("\0extra frames {depth}").as_bytes());
        }
        cache_dir.join(format!("{}.json", sha256_hex(&key)))
    };
    let missing: Vec<(PathBuf, Option<u32>)> =
        fixtures.iter().flat_map(runs_of).filter(|(f, d)| !options.read_cache || !cache_file(f, *d).is_file()).collect();
    let oracle_started = Instant::now();
    let mut oracle_failures: HashMap<PathBuf, String> = HashMap::new();
    if !missing.is_empty() {
        eprintln!("tf-conformance: running {} fixtures under TensorFlow {TF_VERSION} ({} processes)", missing.len(), options.jobs);
        let command = || crate::runners::tf_python(&python);
        let here = std::env::current_dir().unwrap_or_else(|_| root.clone());
        let ran = pool::map_with(
            &missing,
            options.jobs,
            || ForkServer::new(&command, &["tensorflow"]),
            |server, _, (fixture, depth)| {
                let mut argv = vec![script.clone().into_os_string(), fixture.clone().into_os_string()];
                if let Some(depth) = depth {
                    argv.extend(["--extra-frames".into(), depth.to_string().into()]);
                }
                let finished = server.run(&argv, &here, ORACLE_LIMIT).map_err(|e| e.to_string())?;
                let raw: serde_json::Value = serde_json::from_str(&finished.stdout)
                    .map_err(|e| format!("the TensorFlow oracle {}, and its output is not JSON ({e})", finished.describe_failure()))?;
                // A crash of the oracle is kept (the comparison reports it); a run that did
                // not finish is not (the next run tries again).
                fs::write(cache_file(fixture, *depth), serde_json::to_vec_pretty(&raw).unwrap_or_default())
                    .map_err(|e| format!("cannot cache the oracle's result: {e}"))
            },
            drop,
        );
        for ((fixture, _), outcome) in missing.iter().zip(ran) {
            if let Err(why) = outcome {
                oracle_failures.insert(fixture.to_path_buf(), why);
            }
        }
    }
    let oracle_seconds = oracle_started.elapsed().as_secs_f64();
    let tracelens =
        if options.oracle_only { None } else { Some(Tracelens { binary: build_tracelens(&root, &target)?, working_dir: root.clone() }) };

    let results: Vec<FixtureResult> = pool::map(&fixtures, options.jobs, |index, path| {
        let name = relative_name(&fixtures_root, path);
        let gap = gaps.get(&name).cloned();
        let result = match oracle_failures.get(path) {
            Some(why) => failed(new_result(name, gap), why.clone()),
            None => {
                let cached: Vec<(Option<u32>, PathBuf)> = runs_of(path).into_iter().map(|(f, d)| (d, cache_file(&f, d))).collect();
                compare_one(path, name, gap, &cached, tracelens.as_ref())
            }
        };
        eprintln!("[{:>3}/{}] {:<13} {}", index + 1, fixtures.len(), result.verdict.label(), result.name);
        result
    });
    let suite = Suite {
        results,
        oracle_only: options.oracle_only,
        jobs: options.jobs,
        elapsed_seconds: started.elapsed().as_secs_f64(),
        stale_gaps: Vec::new(),
        oracle_name: "TensorFlow",
    };
    print!("{}", crate::report::render(&suite));
    // The concrete signatures `tracelens trace` prints, against TensorFlow's (`tf_signatures.rs`).
    let signatures_ok = options.oracle_only || {
        let signatures = crate::tf_signatures::SignatureCheck::run(&suite.results);
        print!("{}", signatures.render());
        signatures.mismatches.is_empty()
    };
    // Every error fixture's reproducer must raise what the fixture raises under TensorFlow,
    // as the oracle recorded it (`exception`: class and message).
    let recorded: HashMap<PathBuf, crate::tf_repro::Raised> = fixtures
        .iter()
        .filter(|f| !oracle_failures.contains_key(*f))
        .filter_map(|f| {
            let raw: serde_json::Value = read_oracle(&runs_of(f).into_iter().map(|(f, d)| (d, cache_file(&f, d))).collect::<Vec<_>>())?;
            let exception = raw.get("exception")?;
            let raised = exception["class"].as_str().map(|c| (c.to_string(), exception["message"].as_str().unwrap_or("").to_string()));
            Some((f.clone(), raised))
        })
        .collect();
    let repro_ok = match &tracelens {
        Some(t) => {
            let summary = crate::tf_repro::check(&crate::tf_repro::Setup {
                binary: &t.binary,
                python: &python,
                script: &conformance_dir.join("tf_raised.py"),
                errors_dir: &fixtures_root.join("tf").join("errors"),
                out_dir: &target.join("tf-conformance-repros"),
                jobs: options.jobs,
                filter: options.filter.as_deref(),
                recorded: &recorded,
            });
            print!("{}", summary.render());
            summary.passed()
        }
        None => true,
    };
    let mut run_ok = true;
    if let (Some(t), false) = (&tracelens, run_programs.is_empty()) {
        let run = crate::run_suite::check(
            &run_programs,
            &fixtures_root,
            &t.binary,
            crate::run_suite::Python { interpreter: &python, preload: &["tensorflow"] },
            &target.join("conformance-cache").join("tf-run"),
            &gaps,
            options.jobs,
        );
        print!("{}", run.render());
        run_ok = !run.failed();
    }
    println!(
        "TensorFlow oracle: {oracle_seconds:.1} s for {} fixtures not cached; whole step {:.1} s",
        missing.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(surface_ok && run_ok && signatures_ok && repro_ok && suite.results.iter().all(|r| !r.verdict.is_failure()))
}

/// A fixture's result before anything is compared: a pass.
fn new_result(name: String, gap: Option<String>) -> FixtureResult {
    // `tf/errors/x.py` is compared by the rules of `errors/`.
    let folder = FixtureFolder::of(Path::new(name.strip_prefix("tf/").unwrap_or(&name)));
    FixtureResult {
        name,
        folder,
        verdict: Verdict::Pass,
        problems: Vec::new(),
        gap_reason: gap,
        oracle: None,
        oracle_raw: serde_json::Value::Null,
        oracle_seconds: 0.0,
        oracle_cached: true,
        tracelens: None,
        check_raw: serde_json::Value::Null,
        trace_raw: serde_json::Value::Null,
        tracelens_seconds: 0.0,
    }
}

/// What the oracle recorded for a fixture: its one cached report, or the reports of each
/// stack depth it runs under merged into one (`tf_stack_depths.rs`).
fn read_oracle(cached: &[(Option<u32>, PathBuf)]) -> Option<serde_json::Value> {
    let read = |file: &Path| -> Option<serde_json::Value> { serde_json::from_slice(&fs::read(file).ok()?).ok() };
    match cached {
        [(None, file)] => read(file),
        _ => {
            let runs: Option<Vec<(u32, serde_json::Value)>> = cached.iter().map(|(d, f)| Some((d.unwrap_or(0), read(f)?))).collect();
            Some(crate::tf_stack_depths::merge(runs?))
        }
    }
}

fn compare_one(
    path: &Path,
    name: String,
    gap: Option<String>,
    cached: &[(Option<u32>, PathBuf)],
    tracelens: Option<&Tracelens>,
) -> FixtureResult {
    let mut result = new_result(name, gap);
    let folder = result.folder;
    let raw: Option<serde_json::Value> = read_oracle(cached);
    let report =
        match raw.as_ref().map(|r| (r.get("oracle_error").and_then(|e| e.as_str()), serde_json::from_value::<OracleReport>(r.clone()))) {
            Some((None, Ok(report))) => report,
            Some((Some(error), _)) => return failed(result, format!("oracle crashed:\n{}", crate::process::tail(error, 12))),
            Some((None, Err(e))) => return failed(result, format!("oracle JSON has an unexpected shape: {e}")),
            None => return failed(result, "the oracle wrote no result".to_string()),
        };
    result.oracle_seconds = raw.as_ref().and_then(|r| r.get("run_seconds")).and_then(|s| s.as_f64()).unwrap_or(0.0);
    result.oracle_raw = raw.unwrap_or_default();
    let mut fixture_problems = check_fixture(&report, folder);
    if let (false, Some(lines)) = (fixture_problems.is_empty(), result.oracle_raw["stack_lines"].as_array()) {
        let seen: Vec<String> = lines.iter().map(|l| format!("line {} under {} extra frames", l["line"], l["depth"])).collect();
        fixture_problems.push(format!("TensorFlow raised at {}", seen.join(", ")));
    }
    if let Some(t) = tracelens {
        let run = t.run(path);
        result.tracelens_seconds = run.seconds;
        let mismatches = compare_with_tracelens(&report, &run.report);
        result.check_raw = run.check_raw;
        result.trace_raw = run.trace_raw;
        result.tracelens = Some(run.report);
        result.verdict = match (fixture_problems.is_empty(), mismatches.is_empty(), result.gap_reason.is_some()) {
            (false, _, _) => Verdict::FixtureWrong,
            (true, true, false) => Verdict::Pass,
            (true, true, true) => Verdict::NowPasses,
            (true, false, false) => Verdict::Fail,
            (true, false, true) => Verdict::KnownGap,
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
    result.oracle = Some(report);
    result
}

fn failed(mut result: FixtureResult, why: String) -> FixtureResult {
    result.verdict = Verdict::OracleFailed;
    result.problems.push(why);
    result
}

/// `$TRACELENS_TF_PYTHON` if set, else `target/tf-venv`, created with `tensorflow-cpu`
/// pinned on first use.
fn resolve_python(target: &Path) -> Result<PathBuf, String> {
    if let Some(python) = std::env::var_os(INTERPRETER_ENV) {
        let python = PathBuf::from(python);
        return match tf_version(&python) {
            Some(v) if v == TF_VERSION => Ok(python),
            Some(v) => Err(format!("{INTERPRETER_ENV}={} has tensorflow {v}, the suite needs {TF_VERSION}", python.display())),
            None => Err(format!("{INTERPRETER_ENV}={} cannot import tensorflow", python.display())),
        };
    }
    let venv = target.join("tf-venv");
    let python = venv.join("bin").join("python");
    if python.exists() && tf_version(&python).as_deref() == Some(TF_VERSION) {
        return Ok(python);
    }
    let base = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    eprintln!("tf-conformance: creating {} with {base} and installing {TF_PACKAGE}", venv.display());
    if !python.exists() {
        let status = Command::new(&base).args(["-m", "venv"]).arg(&venv).status().map_err(|e| format!("cannot run {base}: {e}"))?;
        if !status.success() {
            return Err(format!("`{base} -m venv {}` failed", venv.display()));
        }
    }
    let status = Command::new(&python)
        .args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet", TF_PACKAGE])
        .status()
        .map_err(|e| format!("cannot run pip in {}: {e}", venv.display()))?;
    if !status.success() {
        return Err(format!("`pip install {TF_PACKAGE}` failed"));
    }
    match tf_version(&python) {
        Some(v) if v == TF_VERSION => Ok(python),
        _ => Err(format!("installed {TF_PACKAGE} into {}, but it cannot import tensorflow {TF_VERSION}", venv.display())),
    }
}

fn tf_version(python: &Path) -> Option<String> {
    let mut command = Command::new(python);
    command.args(["-c", "import importlib.metadata as m; print(m.version('tensorflow-cpu'))"]);
    let finished = run_with_limit(command, Duration::from_secs(60)).ok()?;
    (finished.status == Some(0)).then(|| finished.stdout.trim().to_string())
}

/// `tests/conformance/tf_surface_check.py`: every row of `tracer-core/src/tf/surface.rs`
/// names a function real TensorFlow has, in each module the row says.
fn check_surface(python: &Path, root: &Path) -> Result<bool, String> {
    let mut command = crate::runners::tf_python(python);
    command.arg(root.join("tests/conformance/tf_surface_check.py")).arg(root.join("tracer-core/src/tf/surface.rs"));
    let finished = run_with_limit(command, Duration::from_secs(300)).map_err(|e| format!("cannot run the surface check: {e}"))?;
    print!("{}", finished.stdout);
    Ok(finished.status == Some(0))
}
