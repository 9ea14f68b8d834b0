//! `cargo xtask hover`: hover coverage. Every place of every fixture where real JAX had an
//! array (or a pytree of arrays) under a name, an attribute or an item
//! (`tests/conformance/hover_oracle.py`) is hovered in `tracelens lsp`, as an editor hovers
//! it; the hover must show an aval on at least `--min` percent of them, and each aval JAX had
//! there is looked for in the hover's text. Misses are listed by kind, with the hover's text.

use crate::conformance::{discover, relative_name, snapshot_oracle, target_dir, workspace_root};
use crate::forkserver::ForkServer;
use crate::lsp_client::{file_uri, LspClient};
use crate::pool;
use crate::python_env;
use crate::runners::{Oracle, JAX_PRELOAD};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct Options {
    pub filter: Option<String>,
    pub jobs: usize,
    /// The coverage (percent of sites whose hover shows an aval) below which the task fails.
    pub min_percent: f64,
    /// Print every miss, not only the first few of each kind.
    pub list: bool,
    pub json_out: Option<PathBuf>,
}

#[derive(Deserialize, Clone)]
struct OracleSite {
    kind: String,
    line: u32,
    column: u32,
    text: String,
    avals: Vec<String>,
    traced: bool,
    pytree: bool,
}

#[derive(Deserialize)]
struct OracleOutput {
    sites: Vec<OracleSite>,
    #[serde(default)]
    truncated: bool,
}

/// One site hovered.
struct Hovered {
    fixture: String,
    site: OracleSite,
    /// The hover's text, empty when there was no hover.
    text: String,
}

impl Hovered {
    fn shows_aval(&self) -> bool {
        !avals_in(&self.text).is_empty()
    }

    /// Every aval JAX had here appears in the hover (a pytree's leaves too).
    fn agrees(&self) -> bool {
        let shown = avals_in(&self.text);
        self.site.avals.iter().flat_map(|a| avals_in(a)).all(|a| shown.contains(&a))
    }

    /// The pytree leaves the hover shows (`path: aval`, a line each or inside an inline
    /// `{…}`) under a path JAX's `keystr` does not give them here: a path JAX has no leaf
    /// under, or an aval JAX keeps under a path the hover does not show it under (two leaves
    /// swapped). Only where JAX
    /// had a pytree; a leaf tracelens cannot know is a miss, and one whose aval differs at
    /// JAX's path is in the aval listing, not here.
    fn leaves_under_other_paths(&self) -> Vec<String> {
        let jax: Vec<(&str, &str)> = self.site.avals.iter().filter(|a| a.starts_with('{')).flat_map(|t| tree_leaves(t)).collect();
        if jax.is_empty() {
            return Vec::new();
        }
        let shown = hover_leaves(&self.text);
        let mut wrong = Vec::new();
        for &(path, aval) in &shown {
            let known = jax.iter().any(|&(p, a)| p == path && a == aval);
            // JAX keeps this aval under a path the hover does not show it under.
            let moved = jax.iter().any(|&(p, a)| a == aval && p != path && !shown.contains(&(p, a)));
            let misplaced = !jax.iter().any(|&(p, _)| p == path) || moved;
            let line = format!("{path}: {aval}");
            if !known && misplaced && !wrong.contains(&line) {
                wrong.push(line);
            }
        }
        wrong
    }

    fn miss_reason(&self) -> &'static str {
        if self.text.is_empty() {
            "no hover"
        } else {
            "a hover without an aval"
        }
    }
}

pub fn run(options: Options) -> Result<bool, String> {
    let root = workspace_root();
    let target_dir = target_dir(&root);
    let fixtures_dir = root.join("tests").join("fixtures");
    let mut fixtures = discover(&fixtures_dir)?;
    if let Some(filter) = &options.filter {
        fixtures.retain(|p| relative_name(&fixtures_dir, p).contains(filter.as_str()));
    }
    let python_env::OracleEnv { python, missing } = python_env::resolve(&target_dir)?;
    fixtures.retain(|p| {
        let text = fs::read_to_string(p).unwrap_or_default();
        !missing.iter().any(|name| python_env::imports(&text, name))
    });
    let cache_dir = target_dir.join("conformance-cache");
    // The `run/` programs with XLA's defaults, as the run suite compiled them (conformance's
    // last phase; its compiled programs are in the cache), the rest with the oracles' flags
    // (the conformance suite ran most of those beside its own oracle: they are cached).
    let oracle = fixture_oracle(&root, python, cache_dir)?;
    let run_oracle = Oracle { xla_flags: "", ..oracle.clone() };
    let run_dir = fixtures_dir.join("run");
    let oracle_of = |path: &Path| if path.starts_with(&run_dir) { &run_oracle } else { &oracle };
    let binary = crate::conformance::build_tracelens(&root, &target_dir)?;
    let started = std::time::Instant::now();
    let (programs, others): (Vec<PathBuf>, Vec<PathBuf>) = fixtures.iter().cloned().partition(|p| p.starts_with(&run_dir));
    warm_cache(&oracle, &others, options.jobs.max(1), &missing);
    warm_cache(&run_oracle, &programs, options.jobs.max(1), &missing);
    let oracle_took = started.elapsed();

    // Each worker keeps its language server for the next fixture; a server that failed once is
    // not trusted with the next one.
    let results: Vec<Result<(Vec<Hovered>, bool), String>> = pool::map_with(
        &fixtures,
        options.jobs,
        || None::<LspClient>,
        |client, _, path| {
            let outcome = hover_fixture(oracle_of(path), &binary, client, path, &relative_name(&fixtures_dir, path));
            if outcome.is_err() {
                *client = None;
            }
            outcome
        },
        |client| {
            if let Some(c) = client {
                c.stop();
            }
        },
    );
    let hovering_took = started.elapsed() - oracle_took;
    let mut hovered = Vec::new();
    let mut failures = Vec::new();
    let mut truncated = Vec::new();
    for (path, outcome) in fixtures.iter().zip(results) {
        let name = relative_name(&fixtures_dir, path);
        match outcome {
            Ok((sites, cut)) => {
                if cut {
                    truncated.push(name);
                }
                hovered.extend(sites);
            }
            Err(why) => failures.push(format!("{name}: {why}")),
        }
    }
    let report = render(&hovered, &failures, &truncated, fixtures.len(), options.list);
    print!("{report}");
    if let Some(out) = &options.json_out {
        let rows: Vec<serde_json::Value> = hovered
            .iter()
            .map(|h| {
                json!({"fixture": h.fixture, "line": h.site.line, "column": h.site.column, "kind": h.site.kind, "text": h.site.text,
                       "jax": h.site.avals, "traced": h.site.traced, "hover": h.text, "shows_aval": h.shows_aval(), "agrees": h.agrees()})
            })
            .collect();
        fs::write(out, serde_json::to_string_pretty(&rows).unwrap_or_default())
            .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    let shown = hovered.iter().filter(|h| h.shows_aval()).count();
    let percent = if hovered.is_empty() { 100.0 } else { 100.0 * shown as f64 / hovered.len() as f64 };
    let misnamed = hovered.iter().filter(|h| !h.leaves_under_other_paths().is_empty()).count();
    let covered = percent >= options.min_percent;
    println!(
        "hover coverage: {shown} of {} sites show an aval ({percent:.1} %, at least {:.1} % required): {}",
        hovered.len(),
        options.min_percent,
        if covered { "ok" } else { "FAILED" }
    );
    // A leaf under another path than JAX's is a wrong hover, not a gap: none is allowed.
    println!(
        "pytree leaf paths: {misnamed} sites show a leaf under another path than JAX's keystr: {}",
        if misnamed == 0 { "ok" } else { "FAILED" }
    );
    println!(
        "hover phases, wall time: JAX's hover oracle {:.0} s (fixtures not cached), hovering in tracelens lsp {:.0} s",
        oracle_took.as_secs_f64(),
        hovering_took.as_secs_f64()
    );
    let ok = failures.is_empty() && covered && misnamed == 0;
    let (passed, failed) = if ok { (1, 0) } else { (0, 1) };
    println!("{passed} passed, {failed} failed");
    Ok(ok)
}

/// The hover oracle of the fixtures outside `run/`: the conformance oracle runs it beside
/// itself (`Oracle::companion`), with the same XLA flags, and this suite reads its cache.
pub fn fixture_oracle(root: &Path, python: PathBuf, cache_dir: PathBuf) -> Result<Oracle, String> {
    let (script, script_bytes) = snapshot_oracle(&root.join("tests").join("conformance").join("hover_oracle.py"), &cache_dir)?;
    Ok(Oracle { python, script, script_bytes, cache_dir, read_cache: true, xla_flags: crate::runners::ORACLE_XLA_FLAGS, companion: None })
}

/// Runs the oracle on every fixture it has no cached result for, in `jobs` fork servers
/// (`forkserver.py`: each imports JAX and the libraries the fixtures use once, then forks a
/// child per fixture), and caches what it prints. A fixture it fails on is left to
/// `Oracle::run_raw`, which says why.
fn warm_cache(oracle: &Oracle, fixtures: &[PathBuf], jobs: usize, missing_modules: &[&str]) {
    let todo: Vec<&PathBuf> = fixtures.iter().filter(|f| oracle.cache_file(f).is_ok_and(|c| oracle.cached(&c).is_none())).collect();
    if todo.is_empty() {
        return;
    }
    eprintln!("hover: running {} fixtures under JAX ({jobs} processes)", todo.len());
    // The libraries are imported before the forks only where installed (a fixture that
    // imports a missing one was left out above).
    let preload: Vec<&str> = JAX_PRELOAD
        .iter()
        .chain(&["optax", "equinox", "flax.nnx", "flax.linen"])
        .copied()
        .filter(|m| !missing_modules.contains(&m.split('.').next().unwrap_or(m)))
        .collect();
    let python = || oracle.interpreter();
    pool::map_with(
        &todo,
        jobs,
        || ForkServer::new(&python, &preload),
        |server, _, fixture| {
            let _ = oracle.run_raw(fixture, Some(server));
        },
        drop,
    );
}

/// Hovers every site the oracle found in one fixture; the flag says the oracle stopped early.
fn hover_fixture(
    oracle: &Oracle,
    binary: &Path,
    client: &mut Option<LspClient>,
    path: &Path,
    name: &str,
) -> Result<(Vec<Hovered>, bool), String> {
    let (raw, _, _) = oracle.run_raw(path, None)?;
    let output: OracleOutput = serde_json::from_value(raw).map_err(|e| format!("hover oracle JSON has an unexpected shape: {e}"))?;
    if output.sites.is_empty() {
        return Ok((Vec::new(), output.truncated));
    }
    if client.is_none() {
        *client = Some(LspClient::start(binary, json!({"workspaceScan": false}))?);
    }
    let Some(c) = client.as_mut() else { return Err("no server".into()) };
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let uri = file_uri(path);
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}))?;
    c.wait_for("textDocument/publishDiagnostics", |p| p["uri"] == uri.as_str(), Duration::from_secs(120))?;
    let mut out = Vec::new();
    for site in output.sites {
        let position = json!({"line": site.line - 1, "character": site.column});
        let result =
            c.request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": position}), Duration::from_secs(60))?;
        let text = match &result["contents"] {
            serde_json::Value::Object(m) => m.get("value").and_then(|v| v.as_str()).unwrap_or("").to_string(),
            serde_json::Value::String(s) => s.clone(),
            _ => String::new(),
        };
        out.push(Hovered { fixture: name.to_string(), site, text });
    }
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}))?;
    Ok((out, output.truncated))
}

/// `(path, aval)` of each leaf of the oracle's `{[0].mu['w']: f32[8,4], [0].count: i32[]}`.
fn tree_leaves(tree: &str) -> Vec<(&str, &str)> {
    let inner = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or("");
    let mut out = Vec::new();
    let mut rest = inner;
    while !rest.is_empty() {
        // An aval ends a leaf (`…: f32[8,4]`), so a leaf ends at the first `], ` after `: `.
        let Some(colon) = rest.find(": ") else { break };
        let end = rest[colon..].find("], ").map(|i| colon + i + 1).unwrap_or(rest.len());
        out.push((&rest[..colon], &rest[colon + 2..end]));
        rest = rest[end..].strip_prefix(", ").unwrap_or("");
    }
    out
}

/// The pytree leaves a hover shows, `(path, aval)`: its code block's lines `path: aval` whose
/// path is a key path (`[0]`, `.w`, `['b']`), and each leaf of a tree written inline among
/// avals (`x: f32[2] | {[1]: ~f32[]}`).
fn hover_leaves(text: &str) -> Vec<(&str, &str)> {
    let block = text.split("```").nth(1).unwrap_or("");
    let mut out = Vec::new();
    for line in block.lines().map(str::trim) {
        match line.rsplit_once(": ") {
            Some((path, aval)) if (path.starts_with('[') || path.starts_with('.')) && avals_in(aval).len() == 1 => {
                out.push((path, aval));
            }
            _ => {
                let mut rest = line;
                while let Some(open) = rest.find('{') {
                    let Some(close) = rest[open..].find('}').map(|i| open + i) else { break };
                    out.extend(tree_leaves(&rest[open..=close]).into_iter().filter(|(p, _)| p.starts_with('[') || p.starts_with('.')));
                    rest = &rest[close + 1..];
                }
            }
        }
    }
    out
}

/// The avals written in a text: `f32[8,4]`, `~f32[]`, `bool[3]`, `key<fry>[]`.
pub fn avals_in(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for (open, _) in text.match_indices('[') {
        let mut start = open;
        while start > 0 && (bytes[start - 1].is_ascii_lowercase() || bytes[start - 1].is_ascii_digit() || b"<>".contains(&bytes[start - 1]))
        {
            start -= 1;
        }
        if start == open || !bytes[start].is_ascii_lowercase() {
            continue;
        }
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let Some(close) = text[open..].find(']').map(|i| open + i) else { continue };
        if !text[open + 1..close].bytes().all(|b| b.is_ascii_digit() || b == b',') {
            continue;
        }
        let weak = start > 0 && bytes[start - 1] == b'~';
        let dtype = &text[start..open];
        if !is_dtype(dtype) {
            continue;
        }
        out.push(format!("{}{}", if weak { "~" } else { "" }, &text[start..=close]));
    }
    out
}

fn is_dtype(name: &str) -> bool {
    name == "bool"
        || name.starts_with("key<")
        || ["f", "i", "u", "c", "bf"]
            .iter()
            .any(|p| name.strip_prefix(p).is_some_and(|bits| !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit())))
}

fn render(hovered: &[Hovered], failures: &[String], truncated: &[String], fixtures: usize, list: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "hover coverage over {fixtures} fixtures: sites where JAX had an array, hovered in `tracelens lsp`\n");
    let _ = writeln!(out, "| kind | sites | aval shown | % | aval agrees with JAX |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    let mut kinds: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for h in hovered {
        let mut key = h.site.kind.clone();
        key.push_str(if h.site.traced { " (traced)" } else { " (concrete)" });
        for k in [key, "all".to_string()] {
            let e = kinds.entry(k).or_default();
            e.0 += 1;
            e.1 += usize::from(h.shows_aval());
            e.2 += usize::from(h.shows_aval() && h.agrees());
        }
    }
    for (kind, (n, shown, agrees)) in &kinds {
        let _ = writeln!(out, "| {kind} | {n} | {shown} | {:.1} | {agrees} |", 100.0 * *shown as f64 / (*n).max(1) as f64);
    }
    let misses: Vec<&Hovered> = hovered.iter().filter(|h| !h.shows_aval()).collect();
    let mut by_reason: BTreeMap<(String, &str), Vec<&Hovered>> = BTreeMap::new();
    for h in &misses {
        by_reason.entry((h.site.kind.clone(), h.miss_reason())).or_default().push(h);
    }
    let _ = writeln!(out, "\nmisses ({}):", misses.len());
    for ((kind, reason), rows) in &by_reason {
        let _ = writeln!(out, "  {kind}, {reason}: {}", rows.len());
        for h in rows.iter().take(if list { usize::MAX } else { 6 }) {
            let jax = format!("{}{}", shorten(&h.site.avals.join(" ")), if h.site.pytree { " (pytree)" } else { "" });
            site_row(&mut out, h, &jax, 100);
        }
    }
    let disagreeing: Vec<&Hovered> = hovered.iter().filter(|h| h.shows_aval() && !h.agrees()).collect();
    let _ = writeln!(out, "\navals that differ from JAX's ({}):", disagreeing.len());
    for h in disagreeing.iter().take(if list { usize::MAX } else { 12 }) {
        site_row(&mut out, h, &shorten(&h.site.avals.join(" ")), 120);
    }
    let misnamed: Vec<(&Hovered, Vec<String>)> =
        hovered.iter().map(|h| (h, h.leaves_under_other_paths())).filter(|(_, wrong)| !wrong.is_empty()).collect();
    let _ = writeln!(out, "\npytree leaves shown under another path than JAX's keystr ({} sites):", misnamed.len());
    for (h, wrong) in misnamed.iter().take(if list { usize::MAX } else { 12 }) {
        site_row(&mut out, h, &shorten(&wrong.join(", ")), 120);
    }
    for name in truncated {
        let _ = writeln!(out, "note: {name}: the oracle stopped tracing opcodes at its event budget; later sites are not counted");
    }
    for f in failures {
        let _ = writeln!(out, "FAILED {f}");
    }
    out
}

/// One listed site: where it is, its text, what JAX had (`jax`) and the hover's first
/// `width` characters on one line.
fn site_row(out: &mut String, h: &Hovered, jax: &str, width: usize) {
    let hover: String = h.text.replace('\n', " ⏎ ").chars().take(width).collect();
    let _ = writeln!(out, "    {}:{}:{} `{}` JAX {jax} | {hover}", h.fixture, h.site.line, h.site.column + 1, h.site.text);
}

/// A long pytree's avals, cut for a one-line listing.
fn shorten(text: &str) -> String {
    if text.chars().count() <= 120 {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(120).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::avals_in;

    #[test]
    fn oracle_trees_split_into_leaves() {
        assert_eq!(
            super::tree_leaves("{[0].count: i32[], [0].mu['w']: f32[8,4], .b: ~f32[]}"),
            vec![("[0].count", "i32[]"), ("[0].mu['w']", "f32[8,4]"), (".b", "~f32[]")]
        );
    }

    fn hovered(jax: &str, hover: &str) -> super::Hovered {
        let site = super::OracleSite {
            kind: "use".into(),
            line: 1,
            column: 0,
            text: "m".into(),
            avals: vec![jax.into()],
            traced: false,
            pytree: true,
        };
        super::Hovered { fixture: "f.py".into(), site, text: format!("```python\nm: pytree of 2 arrays\n{hover}```") }
    }

    #[test]
    fn leaves_under_attribute_names_or_swapped_indices_are_under_other_paths() {
        let jax = "{[<flat index 0>]: f32[4,3], [<flat index 1>]: f32[3]}";
        assert!(hovered(jax, "  [<flat index 0>]: f32[4,3]\n  [<flat index 1>]: f32[3]\n").leaves_under_other_paths().is_empty());
        assert_eq!(hovered(jax, "  .b: f32[3]\n  .w: f32[4,3]\n").leaves_under_other_paths(), vec![".b: f32[3]", ".w: f32[4,3]"]);
        assert_eq!(hovered(jax, "  [<flat index 0>]: f32[3]\n  [<flat index 1>]: f32[4,3]\n").leaves_under_other_paths().len(), 2);
        // A leaf JAX has that the hover lacks is a miss; one whose aval differs at JAX's path
        // is an aval difference: neither is a wrong path.
        assert!(hovered(jax, "  [<flat index 0>]: f32[4,3]\n").leaves_under_other_paths().is_empty());
        assert!(hovered(jax, "  [<flat index 0>]: f32[4,3]\n  [<flat index 1>]: ~f32[3]\n").leaves_under_other_paths().is_empty());
    }

    #[test]
    fn hover_leaves_are_read_from_lines_and_inline_trees() {
        let text = "```python\nself: pytree of 2 arrays\n  [<flat index 0>]: f32[4,3]\n  .b.value: f32[3]\n```\n\nin jit(f)";
        assert_eq!(super::hover_leaves(text), vec![("[<flat index 0>]", "f32[4,3]"), (".b.value", "f32[3]")]);
        let inline = "```python\nfill: f32[2] | {[0]: ~f32[], [1]: ~f32[]}\n```";
        assert_eq!(super::hover_leaves(inline), vec![("[0]", "~f32[]"), ("[1]", "~f32[]")]);
    }

    #[test]
    fn avals_are_read_from_hover_text() {
        assert_eq!(avals_in("x: f32[8,4] | ~f32[]"), vec!["f32[8,4]", "~f32[]"]);
        assert_eq!(avals_in("{['w']: bf16[3], .k: key<fry>[]} bool[2]"), vec!["bf16[3]", "key<fry>[]", "bool[2]"]);
        assert!(avals_in("params['w1'] x[0] leaf[3] self.w[2]").is_empty());
    }
}
