//! Every jaxpr traced from the conformance fixtures and the examples is well formed.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

struct Disk;

impl SourceLoader for Disk {
    fn read(&self, path: &Path) -> Option<Rc<str>> {
        std::fs::read_to_string(path).ok().map(Rc::from)
    }
}

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            python_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "py") {
            out.push(p);
        }
    }
}

#[test]
fn check_ir_passes_on_every_trace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root").to_path_buf();
    let mut files = Vec::new();
    python_files(&root.join("tests/fixtures"), &mut files);
    python_files(&root.join("examples"), &mut files);
    assert!(files.len() > 100, "found {} files", files.len());
    let mut traced = 0;
    let mut problems = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read fixture");
        let config = AnalysisConfig { check_ir: true, search_roots: vec![f.parent().expect("dir").to_path_buf()], ..Default::default() };
        let a = analyze_file(f, &text, &Disk, &config);
        traced += a.functions.iter().map(|t| t.traces.len()).sum::<usize>();
        problems.extend(a.ir_problems.iter().map(|p| format!("{}: {p}", f.display())));
    }
    assert!(traced > 150, "only {traced} traces");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
