//! A dict filled under an unknown (a loop over an unknown, a key the interpreter cannot
//! hash) holds entries the interpreter does not know: copying, merging, iterating or
//! querying it gives unknowns, never a dict that certainly lacks them (design.md §6). Each
//! case has a twin on a dict whose keys are all known, where the same code is an error.

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

fn findings(source: &str) -> Vec<String> {
    let a = analyze_file(&PathBuf::from("features.py"), source, &NoFiles, &AnalysisConfig::default());
    a.diagnostics.iter().map(|(d, l, _)| format!("{}:{} {}", d.code.as_str(), l.line, d.message)).collect()
}

/// `features_by_name(groups)` as input pipelines write it: a dict keyed by names read from
/// a config. `SOURCE` is the groups: unknown (a library's config) or a known empty list.
const PIPELINE: &str = r#"import configlib

def features_by_name(groups):
    by_name = {}
    for group in groups:
        for feature in group.features:
            by_name[feature.name] = feature
    return by_name

first = features_by_name(SOURCE)
second = features_by_name(SOURCE)
USE
"#;

fn pipeline(source: &str, use_: &str) -> Vec<String> {
    findings(&PIPELINE.replace("SOURCE", source).replace("USE", use_))
}

const USES: [&str; 7] = [
    "merged = {**first, **second}\nprint(merged['movie_id'])",
    "merged = dict(first)\nprint(merged['movie_id'])",
    "merged = {k: v for k, v in first.items()}\nprint(merged['movie_id'])",
    "merged = first.copy()\nprint(merged['movie_id'])",
    "merged = {}\nmerged.update(first)\nprint(merged['movie_id'])",
    "print(first.pop('movie_id'))",
    "names = [name for name in first]\nprint(names[0])",
];

#[test]
fn a_dict_filled_in_a_loop_over_an_unknown_is_never_certainly_missing_a_key() {
    for use_ in USES {
        assert_eq!(pipeline("configlib.load().groups", use_), Vec::<String>::new(), "{use_}");
    }
}

#[test]
fn the_same_code_on_a_dict_of_known_keys_raises() {
    for use_ in USES {
        let found = pipeline("[]", use_);
        assert_eq!(found.len(), 1, "{use_}: {found:?}");
        assert!(found[0].contains("Error"), "{use_}: {found:?}");
    }
}

#[test]
fn a_key_that_cannot_be_hashed_leaves_the_dict_unknown_outside_loops_too() {
    let source = "import configlib\nspec = {}\nspec[configlib.label_name()] = 1\nprint(spec['label'])\n";
    assert_eq!(findings(source), Vec::<String>::new());
    let known = "spec = {}\nspec['label_id'] = 1\nprint(spec['label'])\n";
    assert_eq!(findings(known).len(), 1, "{:?}", findings(known));
}
