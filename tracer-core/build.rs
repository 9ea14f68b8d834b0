//! Embeds the bundled library shims (`tracer-core/shims/**/*.py`) in the engine: walks the
//! folder and writes `$OUT_DIR/bundled_shims.rs`, a sorted table of (relative path,
//! `include_str!` of the file). Adding a shim file needs no Rust edit.

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
