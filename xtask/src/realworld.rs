//! `cargo xtask realworld DIR...`: the release `tracelens` over checkouts of public JAX
//! projects, measured: crashes, budget stops, staging-transform sites traced, lines reached
//! under a transformation, findings, time per file (tests/realworld/README.md).

use crate::pool;
use crate::process::{run_with_limit, tail, Finished};
use crate::realworld_bodies::function_lines;
use crate::realworld_scan::{code_lines, notebook_to_python, sites, Site, Target};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub struct Options {
    pub dirs: Vec<PathBuf>,
    pub json_out: Option<PathBuf>,
    pub timeout: Duration,
    pub jobs: usize,
}

/// One file of a project: what the report calls it, and what tracelens is run on.
struct Source {
    /// Relative to the project root, with `/` (a notebook keeps its `.ipynb` name).
    display: String,
    /// The file handed to tracelens: the file itself, or a notebook's converted copy.
    run_path: PathBuf,
    text: String,
    /// For a notebook: (code cell, line in cell) of each line of `text`.
    cells: Option<Vec<(usize, usize)>>,
}

struct Project {
    name: String,
    root: PathBuf,
    sources: Vec<Source>,
}

struct Finding {
    file: String,
    line: u64,
    column: u64,
    code: String,
    severity: String,
    message: String,
}

struct TracedFunction {
    path: String,
    name: String,
    line: u64,
    traces: usize,
    routes: Vec<String>,
    /// Lines where the trace bound an array: (file, line), the file as `trace` prints it.
    lines: BTreeSet<(String, u64)>,
}

#[derive(Default)]
struct FileRun {
    crash: Option<String>,
    /// Where and why the analysis stopped silently (`TRACELENS_DEBUG=1`): (place, reason).
    stops: Vec<(String, String)>,
    timeout: Option<String>,
    check_seconds: f64,
    check_cpu_seconds: Option<f64>,
    findings: Vec<Finding>,
    functions: Vec<TracedFunction>,
}

#[derive(Default)]
struct Row {
    files: usize,
    crashes: usize,
    timeouts: usize,
    budget_stops: usize,
    /// Files whose analysis stopped silently somewhere, and the stops by reason.
    stopped: usize,
    stop_reasons: BTreeMap<String, usize>,
    /// Of those, the ones where an entry point's analysis ended (`not analysed past this
    /// point`); the others went past the unknown (a branch joined, a statement skipped).
    end_reasons: BTreeMap<String, usize>,
    sites: usize,
    traced: usize,
    library_sites: usize,
    library_traced: usize,
    unresolved: usize,
    routes: BTreeMap<String, usize>,
    code_lines: usize,
    lines_reached: usize,
    /// Code lines of the project functions a trace entered, and of those the lines reached.
    body_lines: usize,
    body_reached: usize,
    findings: BTreeMap<String, usize>,
    seconds: f64,
    /// CPU seconds of `check`, over the files where the system told them.
    cpu_seconds: f64,
    cpu_files: usize,
}

/// Runs the measurement; notebooks converted to Python are written under `scratch` (and kept,
/// so that a finding's line can be read there).
pub fn run(options: Options, binary: &Path, tracelens_commit: &str, scratch: &Path) -> Result<bool, String> {
    let mut projects = Vec::new();
    for dir in &options.dirs {
        projects.push(load_project(dir, scratch)?);
    }
    let jobs: Vec<(usize, usize)> =
        projects.iter().enumerate().flat_map(|(p, project)| (0..project.sources.len()).map(move |s| (p, s))).collect();
    eprintln!("realworld: {} files in {} projects, {} at a time", jobs.len(), projects.len(), options.jobs.max(1));
    let runs = pool::map(&jobs, options.jobs, |_, &(p, s)| run_file(binary, &projects[p], &projects[p].sources[s], options.timeout));
    let mut results: HashMap<(usize, usize), FileRun> = jobs.iter().copied().zip(runs).collect();

    let mut out = String::new();
    let mut rows = Vec::new();
    let mut all_findings = Vec::new();
    let mut all_sites = Vec::new();
    let mut all_stops = Vec::new();
    let mut all_functions = Vec::new();
    let mut problems = Vec::new();
    for (p, project) in projects.iter().enumerate() {
        let runs: Vec<FileRun> = (0..project.sources.len()).map(|s| results.remove(&(p, s)).unwrap_or_default()).collect();
        let (row, findings, site_rows, function_rows) = measure(project, &runs);
        all_functions.extend(function_rows);
        for (source, run) in project.sources.iter().zip(&runs) {
            all_stops
                .extend(run.stops.iter().map(|(at, why)| json!({"repo": project.name, "file": source.display, "at": at, "reason": why})));
        }
        for (source, run) in project.sources.iter().zip(&runs) {
            for problem in run.crash.iter().chain(&run.timeout) {
                problems.push(format!("{}/{}: {problem}", project.name, source.display));
            }
        }
        all_findings.extend(findings);
        all_sites.extend(site_rows);
        rows.push((project.name.clone(), row));
    }
    let total = rows.iter().fold(Row::default(), |mut sum, (_, row)| {
        add(&mut sum, row);
        sum
    });
    let _ = writeln!(out, "tracelens {tracelens_commit}, per-process limit {} s\n", options.timeout.as_secs());
    out.push_str(&table(&rows, &total));
    let mut reasons: Vec<(&String, &usize)> = total.stop_reasons.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let reasons: Vec<String> = reasons.iter().map(|(reason, n)| format!("{n} {reason}")).collect();
    let _ = writeln!(out, "\nsilent stops (TRACELENS_DEBUG=1) by reason: {}", reasons.join("; "));
    let mut ends: Vec<(&String, &usize)> = total.end_reasons.iter().collect();
    ends.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let ends: Vec<String> = ends.iter().map(|(reason, n)| format!("{n} {reason}")).collect();
    let _ = writeln!(out, "of which an entry point's analysis ended there (not analysed past this point): {}", ends.join("; "));
    if !problems.is_empty() {
        let _ = writeln!(out, "\ncrashes and timeouts");
        for problem in &problems {
            let _ = writeln!(out, "  {problem}");
        }
    }
    print!("{out}");
    if let Some(path) = &options.json_out {
        let dump = json!({
            "tracelens": tracelens_commit,
            "projects": rows.iter().map(|(name, row)| row_json(name, row)).collect::<Vec<_>>(),
            "total": row_json("total", &total),
            "findings": all_findings,
            "sites": all_sites,
            "stops": all_stops,
            "functions": all_functions,
            "problems": problems,
        });
        let text = serde_json::to_string_pretty(&dump).map_err(|e| e.to_string())? + "\n";
        fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(total.crashes == 0 && total.timeouts == 0)
}

fn load_project(dir: &Path, scratch: &Path) -> Result<Project, String> {
    let root = fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !root.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let name = root.file_name().map_or_else(|| "project".to_string(), |n| n.to_string_lossy().to_string());
    let mut files = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(folder) = pending.pop() {
        let entries = fs::read_dir(&folder).map_err(|e| format!("cannot read {}: {e}", folder.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let file_name = entry.file_name().to_string_lossy().to_string();
            if file_name.starts_with('.') || file_name == "__pycache__" || file_name == "node_modules" {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if file_name.ends_with(".py") || file_name.ends_with(".ipynb") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut sources = Vec::new();
    for path in files {
        let display = path.strip_prefix(&root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        let Ok(raw) = fs::read_to_string(&path) else {
            eprintln!("realworld: skipped {name}/{display}: not UTF-8 text");
            continue;
        };
        if display.ends_with(".ipynb") {
            let (text, cells) = match notebook_to_python(&raw) {
                Ok(converted) => converted,
                Err(why) => {
                    eprintln!("realworld: skipped {name}/{display}: {why}");
                    continue;
                }
            };
            let run_path = scratch.join(&name).join(format!("{display}.py"));
            if let Some(parent) = run_path.parent() {
                fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            fs::write(&run_path, &text).map_err(|e| format!("cannot write {}: {e}", run_path.display()))?;
            sources.push(Source { display, run_path, text, cells: Some(cells) });
        } else {
            sources.push(Source { display, run_path: path, text: raw, cells: None });
        }
    }
    Ok(Project { name, root, sources })
}

/// `check` and `trace` of one file, from the project root (so that the root is on the
/// import path, as when a user runs `tracelens check .` there).
fn run_file(binary: &Path, project: &Project, source: &Source, limit: Duration) -> FileRun {
    let mut run = FileRun::default();
    let mut invoke = |command: &str| -> Option<Finished> {
        let mut process = Command::new(binary);
        process.arg(command).arg(&source.run_path).args(["--format", "json"]).current_dir(&project.root);
        if command == "check" {
            process.env("TRACELENS_DEBUG", "1");
        }
        match run_with_limit(process, limit) {
            Ok(finished) => {
                if finished.timed_out {
                    run.timeout = Some(format!("`tracelens {command}` {}", finished.describe_failure()));
                    None
                } else if finished.status.is_none() || finished.status == Some(2) || finished.stderr.contains("panicked") {
                    run.crash = Some(format!("`tracelens {command}` {}", finished.describe_failure()));
                    None
                } else {
                    Some(finished)
                }
            }
            Err(e) => {
                run.crash = Some(format!("`tracelens {command}` did not start: {e}"));
                None
            }
        }
    };
    let check = invoke("check");
    let trace = invoke("trace");
    if let Some(check) = check {
        run.check_seconds = check.seconds;
        run.check_cpu_seconds = check.cpu_seconds;
        run.stops = silent_stops(&check.stderr);
        match serde_json::from_str::<Value>(&check.stdout) {
            Ok(Value::Array(items)) => run.findings = items.iter().map(finding).collect(),
            _ => run.crash = Some(format!("`tracelens check` printed no JSON array: {}", tail(&check.stdout, 3))),
        }
    }
    if let Some(trace) = trace {
        match serde_json::from_str::<Value>(&trace.stdout) {
            Ok(value) => run.functions = traced_functions(&value),
            Err(_) => run.crash = Some(format!("`tracelens trace` printed no JSON: {}", tail(&trace.stdout, 3))),
        }
    }
    run
}

/// The lines `tracelens: PATH:LINE: WHY` that `TRACELENS_DEBUG=1` prints where an entry
/// point's analysis ended without a finding.
fn silent_stops(stderr: &str) -> Vec<(String, String)> {
    stderr
        .lines()
        .filter_map(|line| line.strip_prefix("tracelens: "))
        .map(|rest| match rest.split_once(": ") {
            Some((at, why)) => (at.to_string(), why.to_string()),
            None => (String::new(), rest.to_string()),
        })
        .collect()
}

/// A stop's reason without its particulars: `the truth of an unknown value (os.path.exists(...))`
/// is `the truth of an unknown value`.
fn stop_reason(why: &str) -> String {
    let reason = why.split_once("past this point: ").map_or(why, |(_, r)| r);
    reason.split(" (").next().unwrap_or(reason).trim().to_string()
}

fn text_field(item: &Value, key: &str) -> String {
    item.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn number_field(item: &Value, key: &str) -> u64 {
    item.get(key).and_then(Value::as_u64).unwrap_or_default()
}

fn finding(item: &Value) -> Finding {
    Finding {
        file: text_field(item, "path"),
        line: number_field(item, "line"),
        column: number_field(item, "column"),
        code: text_field(item, "code"),
        severity: text_field(item, "severity"),
        message: text_field(item, "message"),
    }
}

fn traced_functions(trace: &Value) -> Vec<TracedFunction> {
    let functions = trace.get("functions").and_then(Value::as_array).cloned().unwrap_or_default();
    functions
        .iter()
        .map(|f| {
            let traces = f.get("traces").and_then(Value::as_array).cloned().unwrap_or_default();
            let routes = traces.iter().map(|t| t.get("route").and_then(Value::as_str).unwrap_or("unknown").to_string()).collect();
            // A value names its own file (a helper of another module, or the user's function a
            // library function runs); older binaries gave only the line, in the function's file.
            let path = text_field(f, "path");
            let lines = traces
                .iter()
                .flat_map(|t| t.get("values").and_then(Value::as_array).cloned().unwrap_or_default())
                .map(|v| {
                    let file = v.get("path").and_then(Value::as_str).map_or_else(|| path.clone(), str::to_string);
                    (file, number_field(&v, "line"))
                })
                .collect();
            TracedFunction {
                path: text_field(f, "path"),
                name: text_field(f, "name"),
                line: number_field(f, "line"),
                traces: traces.len(),
                routes,
                lines,
            }
        })
        .collect()
}

/// The project's row, its findings (deduplicated across the files that reach them) and
/// every site with whether it was traced.
fn measure(project: &Project, runs: &[FileRun]) -> (Row, Vec<Value>, Vec<Value>, Vec<Value>) {
    // tracelens prints paths relative to the project root, or absolute for converted notebooks.
    let mut display_of: HashMap<String, usize> = HashMap::new();
    for (index, source) in project.sources.iter().enumerate() {
        display_of.insert(source.display.clone(), index);
        display_of.insert(source.run_path.to_string_lossy().to_string(), index);
    }
    let mut row = Row { files: project.sources.len(), ..Row::default() };
    let mut seen = BTreeSet::new();
    let mut findings = Vec::new();
    let mut functions = Functions::new();
    let mut reached = BTreeSet::new();
    let mut bodies: BTreeMap<(usize, String, u64), Vec<u64>> = BTreeMap::new();
    for run in runs {
        row.crashes += usize::from(run.crash.is_some());
        row.timeouts += usize::from(run.timeout.is_some());
        row.seconds += run.check_seconds;
        if let Some(cpu) = run.check_cpu_seconds {
            row.cpu_seconds += cpu;
            row.cpu_files += 1;
        }
        row.budget_stops += usize::from(run.findings.iter().any(|f| f.code == "TL900"));
        row.stopped += usize::from(!run.stops.is_empty());
        for (_, why) in &run.stops {
            *row.stop_reasons.entry(stop_reason(why)).or_default() += 1;
            if why.contains("not analysed past this point") {
                *row.end_reasons.entry(stop_reason(why)).or_default() += 1;
            }
        }
        for f in &run.findings {
            let Some(&index) = display_of.get(&f.file) else { continue };
            if !seen.insert((index, f.line, f.column, f.code.clone(), f.message.clone())) {
                continue;
            }
            let source = &project.sources[index];
            if f.code != "TL900" {
                *row.findings.entry(f.code.clone()).or_default() += 1;
            }
            let mut item = json!({
                "repo": project.name, "file": source.display, "line": f.line, "column": f.column,
                "code": f.code, "severity": f.severity, "message": f.message,
            });
            if let Some(&(cell, line)) = source.cells.as_ref().and_then(|cells| cells.get(f.line.saturating_sub(1) as usize)) {
                item["cell"] = json!(cell);
                item["cell_line"] = json!(line);
            }
            findings.push(item);
        }
        for function in &run.functions {
            for (file, line) in &function.lines {
                if let Some(&index) = display_of.get(file) {
                    reached.insert((index, *line));
                }
            }
            let Some(&index) = display_of.get(&function.path) else { continue };
            if function.traces > 0 && !bodies.contains_key(&(index, function.name.clone(), function.line)) {
                let lines = function_lines(&project.sources[index].text, &function.name, function.line).unwrap_or_default();
                bodies.insert((index, function.name.clone(), function.line), lines);
            }
            let entry = functions.entry((index, function.name.clone(), function.line)).or_default();
            entry.0 += function.traces;
            entry.1.extend(function.routes.iter().cloned());
        }
    }
    row.lines_reached = reached.len();
    let body: BTreeSet<(usize, u64)> = bodies.iter().flat_map(|((index, _, _), lines)| lines.iter().map(move |l| (*index, *l))).collect();
    row.body_lines = body.len();
    row.body_reached = body.iter().filter(|key| reached.contains(*key)).count();
    let function_rows: Vec<Value> = bodies
        .iter()
        .map(|((index, name, line), lines)| {
            let hit = lines.iter().filter(|l| reached.contains(&(*index, **l))).count();
            json!({"repo": project.name, "file": project.sources[*index].display, "name": name, "line": line,
                   "body_lines": lines.len(), "body_reached": hit})
        })
        .collect();
    row.code_lines = project.sources.iter().map(|s| code_lines(&s.text)).sum();

    let mut site_rows = Vec::new();
    for (index, source) in project.sources.iter().enumerate() {
        // Functions this file's own analysis traced, by (project file, name): what a name the
        // file does not define (`jax.jit(train.train_step)`) can only be bound to.
        let own: Vec<(usize, &TracedFunction)> =
            runs[index].functions.iter().filter(|f| f.traces > 0).filter_map(|f| display_of.get(&f.path).map(|&file| (file, f))).collect();
        for site in sites(&source.text) {
            let matched = match_site(&site, index, &functions, &own);
            row.sites += 1;
            row.library_sites += usize::from(site.library);
            row.unresolved += usize::from(matches!(site.target, Target::Unknown(_)));
            let route = matched.map(|routes| routes.first().cloned().unwrap_or_else(|| "unknown".to_string()));
            if let Some(route) = &route {
                row.traced += 1;
                row.library_traced += usize::from(site.library);
                *row.routes.entry(route.clone()).or_default() += 1;
            }
            site_rows.push(json!({
                "repo": project.name, "file": source.display, "line": site.line, "transform": site.transform,
                "library": site.library, "decorator": site.decorator, "target": format!("{:?}", site.target),
                "traced": route.is_some(), "route": route,
            }));
        }
    }
    (row, findings, site_rows, function_rows)
}

/// Traced functions by (file, name, line), over every file's analysis: their trace count and routes.
type Functions = BTreeMap<(usize, String, u64), (usize, Vec<String>)>;

/// The routes of the traces of the function a site transforms, when it was traced at all. A
/// function the file defines counts when any analysis traced it; a name it does not define,
/// only when this file's own analysis traced a project function of that name (another
/// file's same-named function, or a library's `model.init`, is not what the site transforms).
fn match_site<'a>(site: &Site, file: usize, functions: &'a Functions, own: &[(usize, &'a TracedFunction)]) -> Option<&'a Vec<String>> {
    let mut traced = functions.iter().filter(|(_, (traces, _))| *traces > 0);
    let found = match &site.target {
        // A def is reported at its first decorator's line, if it has any: a few lines up.
        Target::Def { name, line: Some(def_line) } => traced
            .filter(|((f, n, l), _)| *f == file && n == name && *l <= *def_line as u64 && *def_line as u64 - *l < 30)
            .max_by_key(|((_, _, l), _)| *l),
        Target::Def { name, line: None } => {
            let (index, function) = own.iter().find(|(_, f)| f.name == *name)?;
            traced.find(|((f, n, l), _)| f == index && n == name && *l == function.line)
        }
        Target::Lambda { line } => traced.find(|((f, n, l), _)| *f == file && n == "<lambda>" && *l == *line as u64),
        Target::Factory { start, end, .. } => traced.find(|((f, _, l), _)| *f == file && (*start as u64..=*end as u64).contains(l)),
        Target::Unknown(_) => None,
    };
    found.map(|(_, (_, routes))| routes)
}

fn add(sum: &mut Row, row: &Row) {
    sum.files += row.files;
    sum.crashes += row.crashes;
    sum.timeouts += row.timeouts;
    sum.budget_stops += row.budget_stops;
    sum.stopped += row.stopped;
    for (reason, n) in &row.stop_reasons {
        *sum.stop_reasons.entry(reason.clone()).or_default() += n;
    }
    for (reason, n) in &row.end_reasons {
        *sum.end_reasons.entry(reason.clone()).or_default() += n;
    }
    sum.body_lines += row.body_lines;
    sum.body_reached += row.body_reached;
    sum.sites += row.sites;
    sum.traced += row.traced;
    sum.library_sites += row.library_sites;
    sum.library_traced += row.library_traced;
    sum.unresolved += row.unresolved;
    sum.code_lines += row.code_lines;
    sum.lines_reached += row.lines_reached;
    sum.seconds += row.seconds;
    sum.cpu_seconds += row.cpu_seconds;
    sum.cpu_files += row.cpu_files;
    for (route, n) in &row.routes {
        *sum.routes.entry(route.clone()).or_default() += n;
    }
    for (code, n) in &row.findings {
        *sum.findings.entry(code.clone()).or_default() += n;
    }
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

fn counts(map: &BTreeMap<String, usize>) -> String {
    if map.is_empty() {
        return "-".to_string();
    }
    map.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
}

/// A Markdown table, one row per project and a total.
fn table(rows: &[(String, Row)], total: &Row) -> String {
    let mut out = String::from(
        "| project | files | crashes | timeouts | budget stops | silent stops | sites traced | library sites traced | unresolved sites | routes | lines reached | body lines reached | findings | by code | ms/file | CPU ms/file |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: |\n",
    );
    let all = rows.iter().map(|(name, row)| (name.as_str(), row)).chain(std::iter::once(("**total**", total)));
    for (name, row) in all {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {}/{} ({}) | {}/{} | {} | {} | {}/{} ({}) | {}/{} ({}) | {} | {} | {:.0} | {} |",
            row.files,
            row.crashes,
            row.timeouts,
            row.budget_stops,
            row.stopped,
            row.traced,
            row.sites,
            percent(row.traced, row.sites),
            row.library_traced,
            row.library_sites,
            row.unresolved,
            counts(&row.routes),
            row.lines_reached,
            row.code_lines,
            percent(row.lines_reached, row.code_lines),
            row.body_reached,
            row.body_lines,
            percent(row.body_reached, row.body_lines),
            row.findings.values().sum::<usize>(),
            counts(&row.findings),
            if row.files == 0 { 0.0 } else { 1000.0 * row.seconds / row.files as f64 },
            if row.cpu_files == 0 { "-".to_string() } else { format!("{:.0}", 1000.0 * row.cpu_seconds / row.cpu_files as f64) },
        );
    }
    out
}

fn row_json(name: &str, row: &Row) -> Value {
    json!({
        "project": name, "files": row.files, "crashes": row.crashes, "timeouts": row.timeouts,
        "budget_stops": row.budget_stops, "silent_stops": row.stopped, "stop_reasons": row.stop_reasons, "end_reasons": row.end_reasons, "sites": row.sites, "traced": row.traced,
        "library_sites": row.library_sites, "library_traced": row.library_traced, "unresolved_sites": row.unresolved,
        "routes": row.routes, "code_lines": row.code_lines, "lines_reached": row.lines_reached,
        "body_lines": row.body_lines, "body_reached": row.body_reached,
        "findings": row.findings, "seconds_per_file": if row.files == 0 { 0.0 } else { row.seconds / row.files as f64 },
        "cpu_seconds_per_file": if row.cpu_files == 0 { None } else { Some(row.cpu_seconds / row.cpu_files as f64) },
    })
}

#[cfg(test)]
mod tests {
    use super::{silent_stops, stop_reason};

    #[test]
    fn silent_stops_are_read_from_the_debug_lines() {
        let stderr = "printed by the program\n\
                      tracelens: examples/datasets.py:33: the module not analysed past this point: the truth of an unknown value (os.path.exists(...))\n\
                      tracelens: : test test_gpt2 not analysed past this point: iteration over an unknown value\n";
        let stops = silent_stops(stderr);
        assert_eq!(stops.len(), 2);
        assert_eq!(stops[0].0, "examples/datasets.py:33");
        assert_eq!(stop_reason(&stops[0].1), "the truth of an unknown value");
        assert_eq!((stops[1].0.as_str(), stop_reason(&stops[1].1).as_str()), ("", "iteration over an unknown value"));
    }
}
