//! The layer and optimizer table: every row of `data/layers.tsv` (recorded from flax 0.12.8,
//! equinox 0.13.8 and optax 0.2.8 by `tests/conformance/gen_layers_golden.py`) is run through
//! `analyze_file` with the bundled shims, and must print what the real library printed: each
//! parameter, variable collection, optimizer-state leaf and output by its path, with its dtype
//! and shape. A row whose program the library rejects must raise the same class at the same
//! line of the program with the same first line of message. Rows the shims get wrong are listed in
//! `data/layers_known_wrong.txt` with why; an unlisted wrong row fails, and so does a listed
//! row that passes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

const DESCRIBE: &str = include_str!("../../tests/conformance/layers_describe.py");

fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn rows() -> Vec<(String, String, String)> {
    include_str!("data/layers.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 3, "bad row: {line}");
            (cols[0].to_string(), unescape(cols[1]), unescape(cols[2]))
        })
        .collect()
}

fn known_wrong() -> BTreeMap<String, String> {
    include_str!("data/layers_known_wrong.txt")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('#') {
            Some((id, why)) => (id.trim().to_string(), why.trim().to_string()),
            None => (l.trim().to_string(), String::new()),
        })
        .collect()
}

/// What tracelens prints for the row's program, with its uncaught error written the way
/// the generator writes the library's (`raises Class at line N: first line`, N counted in
/// the program, after the describe prelude).
fn tracelens_prints(program: &str) -> String {
    let source = format!("{DESCRIBE}\n{program}");
    let prelude_lines = DESCRIBE.lines().count() as u32 + 1;
    let analysis = analyze_file(&PathBuf::from("/project/main.py"), &source, &NoFiles, &AnalysisConfig::default());
    let mut printed = analysis.stdout.clone();
    for (diagnostic, location, _) in &analysis.diagnostics {
        if diagnostic.severity == tracer_core::diagnostics::Severity::Error {
            let (class, message) = diagnostic.message.split_once(": ").unwrap_or((diagnostic.message.as_str(), ""));
            let line = location.line.saturating_sub(prelude_lines);
            printed.push_str(&format!("raises {class} at line {line}: {}\n", message.lines().next().unwrap_or("")));
        }
    }
    printed
}

#[test]
fn shims_make_what_the_libraries_make() {
    // The interpreter is recursive: the binary runs it on a 256 MiB stack, and so does this.
    let compare = std::thread::Builder::new().stack_size(256 << 20).spawn(compare_every_row).expect("a thread");
    if let Err(panic) = compare.join() {
        std::panic::resume_unwind(panic);
    }
}

fn compare_every_row() {
    let known = known_wrong();
    let mut wrong = Vec::new();
    let mut fixed = Vec::new();
    let all = rows();
    assert!(all.len() >= 40, "the table has {} rows", all.len());
    for (id, program, expected) in &all {
        let got = tracelens_prints(program);
        match (got == *expected, known.contains_key(id)) {
            (true, true) => fixed.push(id.clone()),
            (false, false) => wrong.push(format!("{id}:\n--- the library printed\n{expected}--- tracelens printed\n{got}")),
            _ => {}
        }
    }
    for id in known.keys() {
        assert!(all.iter().any(|(row, _, _)| row == id), "layers_known_wrong.txt names {id}, which layers.tsv lacks");
    }
    assert!(wrong.is_empty(), "{} rows differ from the libraries:\n\n{}", wrong.len(), wrong.join("\n"));
    assert!(fixed.is_empty(), "now right, remove from layers_known_wrong.txt: {fixed:?}");
}
