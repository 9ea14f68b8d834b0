//! File discovery for `check` and the filesystem loader the engine reads imports through.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;

use tracer_core::interp::SourceLoader;

/// Reads files from disk, lossily decoding bytes that are not UTF-8.
#[derive(Default)]
pub struct FsLoader {
    cache: Mutex<HashMap<PathBuf, Option<String>>>,
}

pub fn read_source(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

impl SourceLoader for FsLoader {
    fn read(&self, path: &Path) -> Option<Rc<str>> {
        let mut cache = self.cache.lock().ok()?;
        let entry = cache.entry(path.to_path_buf()).or_insert_with(|| if path.is_file() { read_source(path) } else { None });
        entry.as_deref().map(Rc::from)
    }
}

const SKIPPED_DIRS: &[&str] = &["target", "node_modules", "__pycache__", "venv", ".venv", "site-packages", "build", "dist"];

/// Why `path` is not analysed, when it is a Jupyter notebook: its text is JSON, and read as
/// Python it would give findings about the JSON (`null` is not defined).
pub fn notebook_refusal(path: &Path) -> Option<String> {
    let notebook = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("ipynb"));
    notebook.then(|| {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        format!(
            "{}: a Jupyter notebook; tracelens analyses Python source files (export it with `jupyter nbconvert --to script {name}` and analyse the script)",
            path.display()
        )
    })
}

/// Every `.py` file under `paths`, sorted; hidden and environment folders are skipped. A
/// notebook named on its own is refused (a folder's notebooks are skipped).
pub fn python_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_file() {
            if let Some(why) = notebook_refusal(p) {
                return Err(why);
            }
            out.push(p.clone());
        } else if p.is_dir() {
            walk(p, &mut out);
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            if name.starts_with('.') || SKIPPED_DIRS.contains(&name.as_str()) {
                continue;
            }
            walk(&path, out);
        } else if name.ends_with(".py") {
            out.push(path);
        }
    }
}
