//! `cargo xtask fuzz --minutes N --seed S`: mutates the fixtures and examples (and sweeps the
//! modelled API with hostile arguments, `api_calls.rs`), runs each
//! mutant through `check`, `trace`, `repro` and `run` in a child process (this binary, as
//! `fuzz-child`), and turns every panic, abort, hang (> 5 s) and run over the memory limit
//! into a minimised regression fixture under `tests/fuzz/crashes/`
//! (`tracer-core/tests/fuzz_regressions.rs` runs them all). Deterministic for a seed: batch
//! `k` holds the same mutants on every machine; a faster machine (or more `--jobs`) only runs
//! more batches in `--minutes`, and `--batches N` runs the same ones on every machine.

mod api_calls;
pub mod child;
mod mutate;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mutate::Rng;

pub struct Options {
    pub minutes: f64,
    /// Run this many batches, however long they take, instead of fuzzing for `minutes`.
    pub batches: Option<u64>,
    pub seed: u64,
    /// Mutants per child process.
    pub batch: usize,
    /// Child processes at a time, each on its own batch.
    pub jobs: usize,
    /// The first batch to run: a slower machine replays what a faster one reached.
    pub first_batch: u64,
    /// Write minimised crashes to tests/fuzz/crashes/ (else only report them).
    pub write: bool,
}

/// One command's result on one input, as the child reports it.
#[derive(Clone, Debug)]
struct Outcome {
    input: String,
    command: String,
    /// `ok`, `skipped`, `panic:<file:line>`, `timeout`, `memory:<MB>`, `abort`.
    outcome: String,
}

impl Outcome {
    fn is_crash(&self) -> bool {
        !matches!(self.outcome.as_str(), "ok" | "skipped")
    }
    /// What two crashes share when they are the same bug.
    fn signature(&self) -> String {
        let kind = self.outcome.split(':').next().unwrap_or("");
        match kind {
            "panic" => format!("{} {}", self.command, self.outcome),
            _ => format!("{} {kind}", self.command),
        }
    }
}

pub fn run(root: &Path, options: &Options) -> Result<bool, String> {
    let corpus = corpus(root)?;
    if corpus.is_empty() {
        return Err("no Python files under tests/fixtures/ or examples/".into());
    }
    let work = root.join("target/fuzz");
    let deadline = Instant::now() + Duration::from_secs_f64(options.minutes * 60.0);
    let batches = run_batches(&corpus, &work, options, deadline)?;
    let mut per_command: BTreeMap<String, usize> = BTreeMap::new();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut found: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut inputs_run = 0usize;
    for (batch, outcomes) in &batches {
        for o in outcomes {
            if o.outcome != "skipped" {
                *per_command.entry(o.command.clone()).or_default() += 1;
            }
            if o.is_crash() {
                *kinds.entry(o.outcome.split(':').next().unwrap_or("").to_string()).or_default() += 1;
                let index: usize = o.input.trim_end_matches(".py").parse().unwrap_or(0);
                found.entry(o.signature()).or_insert_with(|| (o.outcome.clone(), batch.get(index).cloned().unwrap_or_default()));
            }
        }
        inputs_run += outcomes.iter().map(|o| o.input.clone()).collect::<std::collections::BTreeSet<_>>().len();
    }
    println!("fuzz: seed {}, {} batches in {} processes at a time, {inputs_run} inputs", options.seed, batches.len(), options.jobs);
    for (command, n) in &per_command {
        println!("  {command}: {n} runs");
    }
    for (kind, n) in &kinds {
        println!("  {kind}: {n}");
    }
    let mut real = 0;
    for (signature, (outcome, text)) in &found {
        // A crash counts only when it happens again alone: a hang on a loaded machine is not one.
        let check = |candidate: &str| same_crash(&work, candidate, signature);
        if !check(text) {
            // Kept for a look by hand: a timeout that passes alone may still be a budget that
            // is checked too rarely, which only a loaded core makes visible.
            let kept = work.join(format!("unreproduced-{}.py", signature.replace(|c: char| !c.is_ascii_alphanumeric(), "_")));
            let _ = std::fs::write(&kept, text);
            println!("  not reproduced alone, ignored: {signature} ({outcome}); the input is in {}", kept.display());
            continue;
        }
        real += 1;
        let minimised = minimise(text, &check);
        println!("  CRASH {signature}: minimised to {} bytes", minimised.len());
        if options.write {
            let written = write_crash(root, signature, options.seed, &minimised)?;
            println!("    written to {}", written.display());
        } else if minimised.len() <= 2000 {
            println!("{}", minimised.lines().map(|l| format!("    | {l}")).collect::<Vec<_>>().join("\n"));
        } else {
            let path = work.join(format!("crash-{real}.py"));
            let _ = std::fs::write(&path, &minimised);
            println!("    too long to show: {}", path.display());
        }
    }
    println!("fuzz: {real} distinct crashes");
    Ok(real == 0)
}

/// Batch `index`'s mutants: the same on every machine for a seed.
fn batch(corpus: &[(PathBuf, String)], seed: u64, index: u64, size: usize) -> Vec<String> {
    let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(index));
    (0..size)
        .map(|_| {
            // One in five is a sweep of the modelled API with hostile arguments.
            if rng.below(5) == 0 {
                return api_calls::program(&mut rng, 24);
            }
            let text = &corpus[rng.below(corpus.len())].1;
            let donor = &corpus[rng.below(corpus.len())].1;
            mutate::mutate(&mut rng, text, donor)
        })
        .collect()
}

/// Runs batches from `first_batch` on, `jobs` at a time, each worker taking the next index
/// until the deadline (or, with `batches`, until that many are taken); each finishes the
/// batch it took, so the batches run are `first_batch..first_batch + n` whatever the timing,
/// returned in that order with their mutants and outcomes.
fn run_batches(
    corpus: &[(PathBuf, String)],
    work: &Path,
    options: &Options,
    deadline: Instant,
) -> Result<Vec<(Vec<String>, Vec<Outcome>)>, String> {
    let next = AtomicU64::new(options.first_batch);
    let worker = || -> Result<Vec<(u64, Vec<String>, Vec<Outcome>)>, String> {
        let mut done = Vec::new();
        loop {
            if options.batches.is_none() && Instant::now() >= deadline {
                break;
            }
            let index = next.fetch_add(1, Ordering::Relaxed);
            if options.batches.is_some_and(|n| index >= options.first_batch + n) {
                break;
            }
            let mutants = batch(corpus, options.seed, index, options.batch);
            let dir = work.join(format!("batch-{index}"));
            let outcomes = run_batch(&dir, &mutants)?;
            let _ = std::fs::remove_dir_all(&dir);
            done.push((index, mutants, outcomes));
        }
        Ok(done)
    };
    let mut all = Vec::new();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..options.jobs.max(1)).map(|_| scope.spawn(worker)).collect();
        for w in workers {
            all.extend(w.join().map_err(|_| "a fuzz worker panicked".to_string())??);
        }
        Ok::<(), String>(())
    })?;
    all.sort_by_key(|(index, _, _)| *index);
    Ok(all.into_iter().map(|(_, mutants, outcomes)| (mutants, outcomes)).collect())
}

/// The fixtures and examples, with earlier crashes (they make good seeds).
fn corpus(root: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    let mut files = Vec::new();
    for dir in ["tests/fixtures", "examples", "tests/fuzz/crashes"] {
        collect_py(&root.join(dir), &mut files);
    }
    files.sort();
    Ok(files.into_iter().filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t))).collect())
}

fn collect_py(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_py(&path, out);
        } else if path.extension().is_some_and(|e| e == "py") {
            out.push(path);
        }
    }
}

/// Runs `inputs` in child processes until each has a result for every command; an input
/// that was running when its child died (a signal: an abort) gets `abort`, and the rest
/// run in a new child.
fn run_batch(dir: &Path, inputs: &[String]) -> Result<Vec<Outcome>, String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let names: Vec<String> = (0..inputs.len()).map(|i| format!("{i:04}.py")).collect();
    for (name, text) in names.iter().zip(inputs) {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    let mut outcomes = Vec::new();
    loop {
        let (lines, exited_cleanly) = run_child(dir, inputs.len())?;
        let mut started: Option<String> = None;
        let mut finished = 0usize;
        for line in lines.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts.as_slice() {
                ["START", name] => {
                    started = Some(name.to_string());
                    finished = 0;
                }
                ["RESULT", name, command, outcome, _ms] => {
                    outcomes.push(Outcome { input: name.to_string(), command: command.to_string(), outcome: outcome.to_string() });
                    finished += 1;
                }
                _ => {}
            }
        }
        let Some(last) = started else { break };
        if exited_cleanly && finished == child::COMMANDS.len() {
            break;
        }
        // The child died inside `last`: a timeout said so; anything else was an abort.
        if finished < child::COMMANDS.len() && !outcomes.iter().any(|o| o.input == last && o.outcome == "timeout") {
            let command = child::COMMANDS[finished.min(child::COMMANDS.len() - 1)];
            outcomes.push(Outcome { input: last.clone(), command: command.to_string(), outcome: "abort".into() });
        }
        // The ones after it run again, in a new child.
        let _ = std::fs::remove_file(dir.join(&last));
        for name in names.iter().filter(|n| **n <= last) {
            let _ = std::fs::remove_file(dir.join(name));
        }
        if !names.iter().any(|n| dir.join(n).exists()) {
            break;
        }
    }
    Ok(outcomes)
}

/// Runs `fuzz-child` on `dir`; its stdout, and whether it exited with status 0.
fn run_child(dir: &Path, count: usize) -> Result<(String, bool), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .arg("fuzz-child")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the fuzz child: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    // The child stops itself on a hang; this is the backstop for one it cannot see.
    let limit = child::TIME_LIMIT * (child::COMMANDS.len() as u32 + 2) * count.max(1) as u32;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let text = reader.join().unwrap_or_default();
    Ok((text, status.is_some_and(|s| s.success())))
}

/// Whether `text`, run alone, crashes with `signature`.
fn same_crash(work: &Path, text: &str, signature: &str) -> bool {
    let dir = work.join("minimise");
    match run_batch(&dir, &[text.to_string()]) {
        Ok(outcomes) => outcomes.iter().any(|o| o.is_crash() && o.signature() == signature),
        Err(_) => false,
    }
}

/// Delta debugging: drop chunks of lines, then of tokens, while the crash stays the same;
/// at most 120 trials or 90 seconds.
fn minimise(text: &str, crashes: &dyn Fn(&str) -> bool) -> String {
    let start = Instant::now();
    let mut trials = 0;
    let mut budget_left = || {
        trials += 1;
        trials <= 120 && start.elapsed() < Duration::from_secs(90)
    };
    let current = drop_pieces(text.to_string(), line_ranges, 2, crashes, &mut budget_left);
    drop_pieces(current, mutate::tokens, 4, crashes, &mut budget_left)
}

/// The byte ranges of `text`'s lines, each with its line break.
fn line_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut start = 0;
    text.split_inclusive('\n')
        .map(|line| {
            start += line.len();
            (start - line.len(), start)
        })
        .collect()
}

/// One pass of delta debugging over the pieces `pieces` finds (lines or tokens): drop runs
/// of `chunk` pieces while the crash stays, starting at a `1/first_split` of them and
/// halving the runs until single pieces no longer go.
fn drop_pieces(
    mut current: String,
    pieces: fn(&str) -> Vec<(usize, usize)>,
    first_split: usize,
    crashes: &dyn Fn(&str) -> bool,
    budget_left: &mut dyn FnMut() -> bool,
) -> String {
    let mut chunk = pieces(&current).len().div_ceil(first_split).max(1);
    loop {
        let ranges = pieces(&current);
        let mut reduced = false;
        let mut i = 0;
        while i < ranges.len() && budget_left() {
            let (a, b) = (ranges[i].0, ranges[(i + chunk).min(ranges.len()) - 1].1);
            let candidate = format!("{}{}", &current[..a], &current[b..]);
            if candidate.len() < current.len() && crashes(&candidate) {
                current = candidate;
                reduced = true;
                break;
            }
            i += chunk;
        }
        if !reduced {
            if chunk == 1 || !budget_left() {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
    }
    current
}

/// `tests/fuzz/crashes/NNN.py`, the next free number; nothing new when the same text is there.
fn write_crash(root: &Path, signature: &str, seed: u64, text: &str) -> Result<PathBuf, String> {
    let dir = root.join("tests/fuzz/crashes");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut highest = 0;
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if let Ok(existing) = std::fs::read_to_string(&path) {
            if existing.split_once('\n').map(|(_, body)| body) == Some(text) {
                return Ok(path);
            }
        }
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        highest = highest.max(stem.parse::<u32>().unwrap_or(0));
    }
    let signature = signature.replace(root.to_string_lossy().as_ref(), "");
    let path = dir.join(format!("{:03}.py", highest + 1));
    std::fs::write(&path, format!("# fuzz (seed {seed}): {signature}\n{text}")).map_err(|e| e.to_string())?;
    Ok(path)
}
