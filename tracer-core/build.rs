//! Embeds the bundled library shims (`tracer-core/shims/**/*.py`) in the engine: walks the
//! folder and writes `$OUT_DIR/bundled_shims.rs`, a sorted table of (relative path,
//! `include_str!` of the file). Adding a shim file needs no Rust edit. Also writes
//! `$OUT_DIR/python_attributes.rs`: the attributes of CPython's modules and builtin types from
//! `src/interp/stdlib/python311.tsv`, `$OUT_DIR/python_builtins.rs`: the names of
//! `builtins` and CPython's exception classes each after its base, from the same table, and
//! `$OUT_DIR/signatures.rs`: the required parameters
//! of JAX's functions from `src/jax/signatures.tsv`, as sorted static tables, so that no
//! process builds them at run time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("shims");
    // Cargo rescans a directory given here for any change below it (added files included).
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut table = String::from("/// Bundled shims: (path relative to `shims/`, with `/` separators; the file's text).\n");
    table.push_str("pub static BUNDLED_SHIMS: &[(&str, &str)] = &[\n");
    for (relative, absolute) in &files {
        let _ = writeln!(table, "    ({relative:?}, include_str!({:?})),", absolute.display().to_string());
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("bundled_shims.rs");
    if let Err(e) = std::fs::write(&out, table) {
        println!("cargo::warning=cannot write {}: {e}", out.display());
    }
    python_attributes(&manifest);
    python_builtins(&manifest);
    signatures(&manifest);
}

/// `BUILTINS`: (name, `BuiltinKind`), sorted by name, from the first rows of the CPython
/// surface table, those of kind `builtin` (a test checks that they come first); and
/// `EXCEPTIONS`: (class, base) for the rows `exception:BASE`, `object` taken as placed, each
/// class once its base is placed, in passes over the rows in their order (a class whose base
/// never is is left out). Built here, not in every process: reading the table's rows and
/// ordering the classes cost each `run` and `check` about 0.26M instructions.
fn python_builtins(manifest: &Path) {
    let tsv = manifest.join("src/interp/stdlib/python311.tsv");
    let text = std::fs::read_to_string(&tsv).unwrap_or_default();
    let mut builtins: Vec<(&str, String)> = Vec::new();
    let mut pending: Vec<(&str, &str)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let mut columns = line.split('\t');
        let (Some("builtin"), Some(_owner), Some(name)) = (columns.next(), columns.next(), columns.next()) else { break };
        let info = columns.next().unwrap_or("");
        let kind = match info.split_once(':') {
            Some(("exception", base)) => {
                pending.push((name, base));
                format!("BuiltinKind::Exception {{ base: {base:?} }}")
            }
            Some(("alias", of)) => format!("BuiltinKind::Alias {{ of: {of:?} }}"),
            _ => match info {
                "class" => "BuiltinKind::Class".to_string(),
                "function" => "BuiltinKind::Function".to_string(),
                _ => "BuiltinKind::Constant".to_string(),
            },
        };
        builtins.push((name, kind));
    }
    builtins.sort_by(|a, b| a.0.cmp(b.0));
    let mut exceptions: Vec<(&str, &str)> = Vec::new();
    let mut placed: std::collections::HashSet<&str> = std::collections::HashSet::from(["object"]);
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|(name, base)| {
            if placed.contains(base) {
                exceptions.push((name, base));
                placed.insert(name);
                false
            } else {
                true
            }
        });
        if pending.len() == before {
            break;
        }
    }
    let mut out = String::from("/// CPython's builtins: (name, what it is), sorted by name.\n");
    out.push_str("static BUILTINS: &[(&str, BuiltinKind)] = &[\n");
    for (name, kind) in &builtins {
        let _ = writeln!(out, "    ({name:?}, {kind}),");
    }
    out.push_str("];\n/// CPython's exception and warning classes, each after its base: (name, base).\n");
    out.push_str("static EXCEPTIONS: &[(&str, &str)] = &[\n");
    for (name, base) in &exceptions {
        let _ = writeln!(out, "    ({name:?}, {base:?}),");
    }
    out.push_str("];\n");
    let path = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("python_builtins.rs");
    if let Err(e) = std::fs::write(&path, out) {
        println!("cargo::warning=cannot write {}: {e}", path.display());
    }
}

/// `SIGNATURES`: (qualified name, required parameters, wording), sorted by name, from the rows
/// of `src/jax/signatures.tsv` (name, comma-separated parameters, `python|custom_jvp CALLED`).
/// A row of another shape is left out, as the engine would ignore it.
fn signatures(manifest: &Path) {
    let tsv = manifest.join("src/jax/signatures.tsv");
    println!("cargo::rerun-if-changed={}", tsv.display());
    let text = std::fs::read_to_string(&tsv).unwrap_or_default();
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut columns = line.split('\t');
        let (Some(name), Some(params), Some(wording)) = (columns.next(), columns.next(), columns.next()) else { continue };
        let wording = match wording.split_once(' ') {
            Some(("python", called)) => format!("Wording::Python({called:?})"),
            Some(("custom_jvp", called)) => format!("Wording::CustomJvp({called:?})"),
            _ => continue,
        };
        let params: Vec<String> = params.split(',').filter(|p| !p.is_empty()).map(|p| format!("{p:?}")).collect();
        rows.push((name, format!("    ({name:?}, &[{}], {wording}),", params.join(", "))));
    }
    rows.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut out = String::from("/// JAX's signatures: (qualified name, required parameters, wording), sorted by name.\n");
    out.push_str("static SIGNATURES: &[(&str, &[&str], Wording)] = &[\n");
    for (_, row) in &rows {
        out.push_str(row);
        out.push('\n');
    }
    out.push_str("];\n");
    let path = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("signatures.rs");
    if let Err(e) = std::fs::write(&path, out) {
        println!("cargo::warning=cannot write {}: {e}", path.display());
    }
}

/// `MODULE_ATTRS` and `TYPE_ATTRS`: (owner, its attribute names), both sorted, from the rows
/// of kind `attr` and `typeattr` of the CPython surface table.
fn python_attributes(manifest: &Path) {
    use std::collections::{BTreeMap, BTreeSet};
    let tsv = manifest.join("src/interp/stdlib/python311.tsv");
    println!("cargo::rerun-if-changed={}", tsv.display());
    let text = std::fs::read_to_string(&tsv).unwrap_or_default();
    let mut tables: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut columns = line.split('\t');
        if let (Some(kind @ ("attr" | "typeattr")), Some(owner), Some(name)) = (columns.next(), columns.next(), columns.next()) {
            tables.entry(kind).or_default().entry(owner).or_default().insert(name);
        }
    }
    let mut out = String::new();
    for (kind, static_name, what) in [("attr", "MODULE_ATTRS", "modules"), ("typeattr", "TYPE_ATTRS", "builtin types")] {
        let _ = writeln!(out, "/// The attributes of CPython's {what}: (owner, sorted names), sorted by owner.");
        let _ = writeln!(out, "pub static {static_name}: &[(&str, &[&str])] = &[");
        for (owner, names) in tables.get(kind).into_iter().flatten() {
            let names: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            let _ = writeln!(out, "    ({owner:?}, &[{}]),", names.join(", "));
        }
        out.push_str("];\n");
    }
    let path = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("python_attributes.rs");
    if let Err(e) = std::fs::write(&path, out) {
        println!("cargo::warning=cannot write {}: {e}", path.display());
    }
}

/// Every `.py` file under `dir`, as (path relative to `root` with `/`, absolute path).
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "py") {
            if let Ok(relative) = path.strip_prefix(root) {
                let relative: Vec<String> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                out.push((relative.join("/"), path.clone()));
            }
        }
    }
}
