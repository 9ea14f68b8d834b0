//! The layering invariants of docs/ARCHITECTURE.md that the source text alone can show:
//! only `syntax/` knows tree-sitter, `repro/` takes the analysis as a parameter rather
//! than calling it (no circle between `analysis.rs` and `repro/`), LSP columns are
//! counted in one module of the server, the transformations (`jax/transforms/`) stay one
//! concern a file, `jax/numpy/` keeps one family a file behind an exhaustive routing table,
//! the primitive registry decides every variant and `bind` takes its avals from the rules,
//! the interpreter sees the models through one file (checked on the file-level import graph
//! too, which `architecture/import_graph.rs` builds), and every source file of the
//! workspace opens with a `//!` doc and stays under ~800 lines or says why in a `//! Size:`
//! line; `architecture/contributing.rs` checks CONTRIBUTING.md's recipes against the tree.

use std::path::{Path, PathBuf};

/// The files below `dir` that `keep` accepts, sorted (not below `target/`, `.git/` or
/// `node_modules/`).
fn files_below(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.file_name().is_some_and(|n| n == "target" || n == ".git" || n == "node_modules") {
                    stack.push(p);
                }
            } else if keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    files_below(dir, |p| p.extension().is_some_and(|x| x == "rs"))
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Lines (1-based) that read a node's kind as a string: `n.kind() == "integer"`,
/// `matches!(n.kind(), "tuple" | "list")`, `n.kind().starts_with("import")`, or a
/// `match n.kind() {` whose first arm is a string.
fn kind_string_uses(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut rest = *line;
        while let Some(at) = rest.find(".kind()") {
            let after = rest[at + ".kind()".len()..].trim_start();
            let compared = ["==", "!="].iter().any(|op| after.strip_prefix(op).is_some_and(|a| a.trim_start().starts_with('"')));
            let string_method = after.starts_with(".starts_with(") || after.starts_with(".ends_with(") || after.starts_with(".contains(");
            let in_matches = after.strip_prefix(',').is_some_and(|a| a.trim_start().starts_with('"'));
            let match_arm = after.starts_with('{')
                && lines[i + 1..].iter().map(|l| l.trim()).find(|l| !l.is_empty()).is_some_and(|l| l.starts_with('"'));
            if compared || string_method || in_matches || match_arm {
                out.push(i + 1);
                break;
            }
            rest = &rest[at + 1..];
        }
    }
    out
}

#[test]
fn the_kind_string_check_finds_every_form() {
    let text = "if n.kind() == \"integer\" {}\nmatches!(p.kind(), \"tuple\" | \"list\")\nx.kind().starts_with(\"import\")\nmatch s.kind() {\n    \"call\" => 1,\n}\nd.kind() == DTypeKind::Bool\nmatch k.kind() {\n    NodeKind::Call => 1,\n}\n";
    assert_eq!(kind_string_uses(text), [1, 2, 3, 4]);
}

/// Only `syntax/` parses Python: the rest of the engine reads the lowered AST or the typed
/// `syntax::SyntaxTree`, so a change of parser or grammar stays in one module.
#[test]
fn only_syntax_knows_tree_sitter() {
    let src = crate_dir().join("src");
    let syntax = src.join("syntax");
    // The server reads files through tracer-core. Its LSP bench (server/benches/) may name
    // tree-sitter: it times the parser alone, to split the engine's parse from the rest.
    let server = crate_dir().join("../server/src");
    let mut files = rust_files(&src);
    files.extend(rust_files(&server));
    assert!(files.len() > 50, "the sources were not found: {}", src.display());
    let mut offenders = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with(&syntax)) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.contains("tree_sitter") {
                offenders.push(format!("{}:{}: names tree_sitter", f.display(), i + 1));
            }
        }
        for line in kind_string_uses(&text) {
            offenders.push(format!("{}:{line}: reads a node kind as a string", f.display()));
        }
    }
    assert!(offenders.is_empty(), "outside tracer-core/src/syntax/ (use syntax::SyntaxTree and NodeKind):\n{}", offenders.join("\n"));
}

/// `analysis.rs` runs the pipeline and makes reproducers with `repro/`; `repro/` asks the
/// engine through the `repro::Oracle` the analysis hands in (`analysis::Engine`), and never
/// names the analysis itself: the two do not call each other in a circle.
#[test]
fn repro_takes_the_analysis_as_a_parameter() {
    let repro = crate_dir().join("src/repro");
    let files = rust_files(&repro);
    assert!(files.len() >= 4, "repro/ was not found: {}", repro.display());
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("crate::analysis") || code.contains("analyze_file") || code.contains("AnalysisConfig") {
                offenders.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "repro/ calls the analysis (take a `repro::Oracle` instead):\n{}", offenders.join("\n"));
}

/// LSP columns (UTF-16 code units, or UTF-8 bytes) are counted in `server/src/lsp/convert.rs`
/// alone: the engine counts code points (the CLI's columns) and knows nothing of LSP, and
/// the server's open documents count their edits through `convert::chars_before`.
#[test]
fn lsp_columns_are_counted_in_one_module() {
    let convert = crate_dir().join("../server/src/lsp/convert.rs");
    let mut files = rust_files(&crate_dir().join("src"));
    files.extend(rust_files(&crate_dir().join("../server/src")));
    assert!(files.contains(&convert), "{} was not found", convert.display());
    let mut offenders = Vec::new();
    for f in files.iter().filter(|f| **f != convert) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("len_utf16") || code.contains("encode_utf16") || code.contains("Utf16 =>") {
                offenders.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "LSP columns counted outside server/src/lsp/convert.rs:\n{}", offenders.join("\n"));
}

/// A source file longer than this must say why in a `//! Size:` line.
const MAX_LINES: usize = 800;

/// What is wrong with one source file, if anything: it does not open with a `//!` doc
/// saying what it is for, or it is longer than `MAX_LINES` without a `//! Size:` line in
/// that doc saying why.
fn file_problem(text: &str) -> Option<String> {
    let doc: Vec<&str> = text.lines().take_while(|l| l.starts_with("//!")).collect();
    if doc.is_empty() {
        return Some("does not open with a `//!` doc saying what it owns".into());
    }
    let lines = text.lines().count();
    let says_why = doc.iter().any(|l| l.trim_start_matches("//!").trim_start().starts_with("Size:"));
    (lines > MAX_LINES && !says_why).then(|| format!("has {lines} lines (over {MAX_LINES}) and no `//! Size:` line saying why"))
}

#[test]
fn the_file_check_finds_each_problem() {
    let long = |doc: &str| format!("{doc}\n{}", "fn f() {}\n".repeat(MAX_LINES));
    assert!(file_problem(&long("//! jit and its cache.")).is_some_and(|p| p.contains("no `//! Size:`")));
    assert_eq!(file_problem(&long("//! jit and its cache.\n//! Size: one match over every primitive.")), None);
    assert_eq!(file_problem("//! vmap.\nfn f() {}\n"), None);
    assert!(file_problem("use std::rc::Rc;\n").is_some_and(|p| p.contains("`//!` doc")));
}

/// `jax/transforms/` holds JAX's transformations one concern a file (jit and its cache,
/// vmap, autodiff, control flow, pytrees, random, `.at[]`, the dispatch): each file opens
/// with a `//!` doc saying what it owns, and none grows past ~800 lines without saying why.
#[test]
fn transforms_files_are_one_concern_each_and_small_or_say_why() {
    let dir = crate_dir().join("src/jax/transforms");
    let files = rust_files(&dir);
    assert!(files.len() >= 8, "jax/transforms/ was not found: {}", dir.display());
    let offenders: Vec<String> = files
        .iter()
        .filter_map(|f| file_problem(&std::fs::read_to_string(f).unwrap_or_default()).map(|p| format!("{}: {p}", f.display())))
        .collect();
    assert!(offenders.is_empty(), "jax/transforms/ files:\n{}", offenders.join("\n"));
}

/// `jax/api.rs` only re-exports the paths other files name (`jax::api::JaxObject`, ...):
/// the code lives in `jax/transforms/`, so new code goes there and api.rs cannot regrow.
#[test]
fn jax_api_only_reexports_transforms() {
    let api = crate_dir().join("src/jax/api.rs");
    let text = std::fs::read_to_string(&api).unwrap_or_default();
    assert!(text.contains("pub use super::transforms::"), "{} was not found or re-exports nothing", api.display());
    let code: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .filter(|l| !(l.starts_with("pub use super::transforms::") || l.starts_with("pub(super) use super::transforms::")))
        .collect();
    assert!(code.is_empty(), "jax/api.rs holds more than re-exports of jax/transforms/ (move it there):\n{}", code.join("\n"));
}

/// `jax/numpy/` holds the `jax.numpy` / `lax` / `nn` surface one family a file (each small
/// or saying why: `every_source_file_is_documented_and_small_or_says_why`), none is pulled
/// in from elsewhere with `#[path]`, and every entry of `jax/surface.rs` names the family
/// that serves it (the routing `dispatch.rs` reads), with no `_ =>` arm that would let a
/// new function through without a family.
#[test]
fn the_numpy_folder_keeps_small_documented_files_and_an_exhaustive_dispatch() {
    let numpy = crate_dir().join("src/jax/numpy");
    let files = rust_files(&numpy);
    assert!(files.len() >= 10, "jax/numpy/ was not found: {}", numpy.display());
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        if text.contains("#[path") {
            offenders.push(format!("{}: pulls a module in with #[path]", f.display()));
        }
    }
    let dispatch = std::fs::read_to_string(numpy.join("dispatch.rs")).unwrap_or_default();
    assert!(dispatch.contains("pub(super) fn family(f: JaxFn) -> Family"), "dispatch.rs lost its routing table");
    // Each entry of the surface names its family: the macro does not take one without.
    let surface = std::fs::read_to_string(crate_dir().join("src/jax/surface.rs")).unwrap_or_default();
    assert!(surface.contains("$name:literal => $family:ident,"), "surface.rs's entries no longer name their family");
    for (i, line) in dispatch.lines().enumerate() {
        if line.trim_start().starts_with("_ =>") {
            offenders.push(format!("dispatch.rs:{}: a catch-all arm hides new functions from the routing table", i + 1));
        }
    }
    assert!(offenders.is_empty(), "jax/numpy/ breaks its layout:\n{}", offenders.join("\n"));
}

/// Why a file of `jax/prims/` breaks the registry's invariant: a wildcard arm (`_ =>`) in a
/// match over `Prim`, which would let a new variant compile without its rule or property
/// decided, no `//!` line, or more than 800 lines without a `//! Size:` reason (the LAPACK
/// ports of `linalg/kernels.rs`). (The kernels that live beside the rules match over dtypes
/// and operators with wildcards, as any kernel does.)
fn prims_file_problem(text: &str) -> Option<String> {
    if !text.starts_with("//!") {
        return Some("does not open with a `//!` line".into());
    }
    if let Some(n) = prim_wildcard_arms(text).first() {
        return Some(format!("has a wildcard arm at line {n}"));
    }
    file_problem(text)
}

#[test]
fn the_prims_file_check_finds_each_problem() {
    assert_eq!(prims_file_problem("//! x\nfn f() {}\n"), None);
    assert!(prims_file_problem("fn f() {}\n").is_some());
    assert!(prims_file_problem("//! x\nmatch p {\n    Prim::Select => 1,\n    _ => 0,\n}\n").is_some());
    assert_eq!(prims_file_problem("//! x\nmatch d {\n    DType::F64 => 1,\n    _ => 0,\n}\n"), None);
    assert!(prims_file_problem(&format!("//! x\n{}", "\n".repeat(801))).is_some());
    assert_eq!(prims_file_problem(&format!("//! x\n//! Size: one port of LAPACK.\n{}", "\n".repeat(801))), None);
}

#[test]
fn the_primitive_registry_decides_every_variant() {
    let dir = crate_dir().join("src/jax/prims");
    let files = rust_files(&dir);
    assert!(files.len() >= 9, "{files:?}");
    let problems: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            prims_file_problem(&text).map(|p| format!("{}: {p}", f.display()))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every diagnostic code has its page (`docs/diagnostics/TLnnn.md`: what it does, JAX's real
/// message, the fix) and its row in the pages' index.
#[test]
fn every_diagnostic_code_has_its_docs_page() {
    let docs = crate_dir().join("../docs/diagnostics");
    let index = std::fs::read_to_string(docs.join("README.md")).unwrap_or_default();
    let mut missing = Vec::new();
    for code in tracer_core::diagnostics::Code::ALL {
        let page = docs.join(format!("{}.md", code.as_str()));
        if !page.is_file() {
            missing.push(format!("{}: no page {}", code.as_str(), page.display()));
        }
        if !index.contains(&format!("{}.md", code.as_str())) {
            missing.push(format!("{}: no row in docs/diagnostics/README.md", code.as_str()));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The lines (1-based) of the wildcard arms (`_ =>`, `_ if ... =>`) of the matches over a
/// `Prim` in `text`: matches whose arms at the wildcard's indentation name `Prim::` or a
/// primitive family (`families::random!()`). A match over a tuple holding a `Prim` is not
/// counted.
fn prim_wildcard_arms(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let arm = line.trim_start();
        if !(arm.starts_with("_ =>") || arm.starts_with("_ if ")) {
            continue;
        }
        let at = indent(line);
        let header = (0..i).rev().take(800).find(|&j| {
            let h = lines[j].trim_end();
            indent(h) + 4 == at
                && h.ends_with('{')
                && (h.trim_start().starts_with("match ") || h.contains(" match ") || h.contains("(match "))
        });
        let Some(header) = header else { continue };
        if lines[header].contains("match (") {
            continue;
        }
        let over_prim = lines[header + 1..i].iter().filter(|l| indent(l) == at).any(|l| {
            let arm = l.trim_start().trim_start_matches("| ").trim_start_matches('&');
            arm.starts_with("Prim::") || arm.starts_with("families::")
        });
        if over_prim {
            out.push(i + 1);
        }
    }
    out
}

#[test]
fn the_prim_wildcard_check_finds_each_form() {
    let text = "match p {\n    Prim::Select => 1,\n    _ => 0,\n}\nmatch &e.prim {\n    | Prim::While => 1,\n    _ if n == 1 => 2,\n    Prim::Cond { .. } => 3,\n}\nmatch op {\n    ReduceOp::Sum => 1,\n    _ => 0,\n}\nmatch (&e.prim, b) {\n    (Prim::While, [c]) => 1,\n    _ => 0,\n}\n";
    assert_eq!(prim_wildcard_arms(text), [3, 7]);
}

/// Every match over `Prim` decides each variant: no `_ =>` arm anywhere in tracer-core, so a
/// new primitive fails to compile until each kernel, rule and property outside `prims/` is
/// decided for it too (a whole family at once with `prims::families::random!()` and its
/// kin). A special case for one or two primitives is an `if let`, not a match.
#[test]
fn every_match_over_prim_is_exhaustive() {
    let src = crate_dir().join("src");
    let files = rust_files(&src);
    assert!(files.len() > 50, "the sources were not found: {}", src.display());
    let offenders: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            prim_wildcard_arms(&text).into_iter().map(move |n| format!("{}:{n}", f.display()))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "wildcard arms in matches over Prim (list the variants, or a family of prims::families):\n{}",
        offenders.join("\n")
    );
}

/// Every Rust file of the workspace (the crates' sources, tests and benches) opens with a
/// `//!` doc saying what it is for, and stays under ~800 lines unless that doc gives a
/// `//! Size:` reason: a newcomer finds one concept a file, and a file that grows past the
/// mark says why it is still one.
#[test]
fn every_source_file_is_documented_and_small_or_says_why() {
    let root = crate_dir().parent().map(Path::to_path_buf).unwrap_or_default();
    let mut files = Vec::new();
    for krate in ["tracer-core", "server", "xtask"] {
        for sub in ["src", "tests", "benches"] {
            files.extend(rust_files(&root.join(krate).join(sub)));
        }
    }
    assert!(files.len() >= 100, "the workspace's sources were not found under {}", root.display());
    let offenders: Vec<String> = files
        .iter()
        .filter_map(|f| file_problem(&std::fs::read_to_string(f).unwrap_or_default()).map(|p| format!("{}: {p}", f.display())))
        .collect();
    assert!(offenders.is_empty(), "source files:\n{}", offenders.join("\n"));
}

/// The places (`file:line`) in `text` that call `bind1` or `bind_with_bodies`, the binders
/// that take output avals from their caller.
fn aval_passing_binds(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let called = ["bind1(", "bind_with_bodies("].iter().any(|b| {
            code.match_indices(b).any(|(at, _)| {
                let before = code[..at].trim_end();
                !before.ends_with("fn") && !code[..at].ends_with('_') && !code[..at].ends_with("::ad::")
            })
        });
        if called {
            out.push(i + 1);
        }
    }
    out
}

#[test]
fn the_aval_passing_check_finds_each_call() {
    let text = "fn bind1(interp: &mut Interp) {}\nlet a = bind1(interp, p, &[x], aval)?;\nlet b = crate::jax::bind_with_bodies(i, p, &x, o, b)?;\nlet c = ad::bind(interp, p, &x)?;\n// bind1(\n";
    assert_eq!(aval_passing_binds(text), [2, 3]);
}

/// `bind` takes its output avals from the primitive's rule, never from the caller (JAX's
/// `bind`, design.md §3): every front end binds through `jax::apply`, `apply1` or
/// `apply_with_bodies`, and the binders that take avals (`bind1`, `bind_with_bodies`) are
/// called only by `apply` itself (`jax/bind.rs`) and by the builders of the derivative rules
/// (`jax/ad.rs`), which take theirs from the rule too. A value the model does not compute
/// is a `Prim::opaque(name, aval)`, whose aval is a parameter its rule reads.
#[test]
fn bind_takes_its_avals_from_the_rule() {
    let src = crate_dir().join("src");
    let allowed = [src.join("jax/bind.rs"), src.join("jax/ad.rs")];
    let files = rust_files(&src);
    assert!(files.len() > 50, "the sources were not found: {}", src.display());
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !allowed.contains(f))
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            aval_passing_binds(&text).into_iter().map(move |n| format!("{}:{n}", f.display()))
        })
        .collect();
    assert!(offenders.is_empty(), "binds with avals given by the caller (use jax::apply1 and the rule):\n{}", offenders.join("\n"));
}

/// The interpreter sees the models through one file it owns, `interp/model.rs`, which lists
/// what it takes from `jax/` (arrays and their avals, the model's state, the operators,
/// conversions and dispatch where Python meets an array, the effects it reports), `tf/` and
/// `entry_hooks.rs`: no other file of `interp/` names them, so what the interpreter depends
/// on is one list a review sees grow.
#[test]
fn the_interpreter_sees_the_model_through_one_file() {
    let interp = crate_dir().join("src/interp");
    let model = interp.join("model.rs");
    let files = rust_files(&interp);
    assert!(files.contains(&model), "{} was not found", model.display());
    let mut offenders = Vec::new();
    for f in files.iter().filter(|f| **f != model) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if ["crate::jax", "super::jax", "super::super::jax", "crate::tf", "crate::entry_hooks"].iter().any(|m| code.contains(m)) {
                offenders.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "interp/ names jax/, tf/ or entry_hooks outside interp/model.rs (add the item there):\n{}",
        offenders.join("\n")
    );
    // The models' state is held as the types `ModelTypes` names, which the compiler resolves
    // to the models' own: a field of it reads anywhere. Only `model.rs` and `model/state.rs`
    // read it (`Interp::jax`, `Interp::tf`; an array's `tf` flag is the array's).
    let state_module = interp.join("model");
    let mut readers = Vec::new();
    for f in files.iter().filter(|f| **f != model && !f.starts_with(&state_module)) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if reads_model_state(code) {
                readers.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        readers.is_empty(),
        "interp/ reads the models' state outside interp/model.rs and interp/model/ (add a function to model/state.rs):\n{}",
        readers.join("\n")
    );
}

/// Whether a line of code reads a field of `.jax` or `.tf` other than an array's `tf` flag
/// (`a.tf.get()`, `a.tf.set(..)`).
fn reads_model_state(code: &str) -> bool {
    let follows = |at: usize| code[at..].chars().next();
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    code.match_indices(".jax").any(|(at, m)| !ident(follows(at + m.len())))
        || code.match_indices(".tf").any(|(at, m)| {
            let rest = &code[at + m.len()..];
            !ident(rest.chars().next()) && !rest.starts_with(".get()") && !rest.starts_with(".set(")
        })
}

#[test]
fn the_model_state_check_finds_each_form() {
    assert!(reads_model_state("self.jax.staging_depth()"));
    assert!(reads_model_state("let c = interp.jax.config;"));
    assert!(reads_model_state("std::mem::take(&mut self.jax),"));
    assert!(reads_model_state("if !self.tf.active.is_empty() {"));
    assert!(!reads_model_state("Value::Array(a) if a.tf.get() => {"));
    assert!(!reads_model_state("use crate::interp::model::JaxState;"));
    assert!(!reads_model_state("let t = self.jaxpr_text();"));
}

#[path = "architecture/import_graph.rs"]
mod import_graph;

#[path = "architecture/contributing.rs"]
mod contributing;

/// The array layer the interpreter holds values of, and the names it reads before any model
/// object exists, below it and the models: in no circle.
const ARRAY_LAYER: &[&str] = &[
    "jax/array.rs",
    "jax/aval.rs",
    "jax/dtypes.rs",
    "jax/surface.rs",
    "jax/error_codes.rs",
    "jax/rounding.rs",
    "tf/names.rs",
    "tf/partial_tensor.rs",
    "tf/shape_text.rs",
    "syntax/ast.rs",
];

/// No import circle between `interp/` and the models (`jax/`, `tf/`, `entry_hooks.rs`), nor
/// any other module outside `interp/`, on the file-level import graph: the interpreter names
/// what it holds of the models through `ModelTypes` and reaches their entry points through
/// `Models`, both declared in `interp/model.rs`, whose other imports are the array layer
/// (`ARRAY_LAYER`) and leaves such as `jax/print.rs` (docs/ARCHITECTURE.md). A new import of
/// a module that reaches the interpreter fails here, with the edges from `interp/` into the
/// circle it closes. Prints the circles by folder and `model.rs`'s edges (`--nocapture`).
#[test]
fn the_interpreter_shares_no_circle_with_the_models() {
    let g = import_graph::build(&crate_dir().join("src"));
    let files = &g.files;
    let in_interp = |i: usize| files[i].starts_with("interp/");
    let circles = import_graph::circles(&g);
    for c in &circles {
        let mut by_folder: std::collections::BTreeMap<&str, usize> = Default::default();
        for &i in c {
            let f = g.files[i].as_str();
            *by_folder.entry(f.split_once('/').map_or(f, |(d, _)| d)).or_default() += 1;
        }
        println!("circle of {} files: {by_folder:?}", c.len());
    }
    let model = g.files.iter().position(|f| f == "interp/model.rs").expect("interp/model.rs");
    let out_of_interp: Vec<&str> = g.edges[model].iter().filter(|j| !in_interp(**j)).map(|&j| files[j].as_str()).collect();
    println!("edges of interp/model.rs out of interp/: {} {out_of_interp:?}", out_of_interp.len());
    for c in &circles {
        if c.iter().any(|&i| in_interp(i)) && c.iter().any(|&i| !in_interp(i)) {
            let edges: Vec<String> = c
                .iter()
                .filter(|&&i| in_interp(i))
                .flat_map(|&i| {
                    g.edges[i].iter().filter(|j| !in_interp(**j) && c.contains(j)).map(move |&j| format!("{} -> {}", files[i], files[j]))
                })
                .collect();
            panic!(
                "interp/ is in a circle of {} files with modules outside it: hold the model's type through \
                 model::ModelTypes and call it through model::Models instead of naming its module. \
                 The edges from interp/ into the circle:\n{}",
                c.len(),
                edges.join("\n")
            );
        }
    }
    for layer in ARRAY_LAYER {
        let i = files.iter().position(|f| f == layer).unwrap_or_else(|| panic!("{layer} is gone"));
        assert!(
            !circles.iter().any(|c| c.contains(&i)),
            "{layer} joined a circle: the array layer must stay below the interpreter and the models"
        );
    }
}

/// Lines (1-based) of `text` that mark a test for libtest's harness: `#[test]` or
/// `#[cfg(test)]` alone on their line.
fn harness_test_marks(text: &str) -> Vec<usize> {
    text.lines().enumerate().filter(|(_, l)| matches!(l.trim(), "#[test]" | "#[cfg(test)]")).map(|(i, _)| i + 1).collect()
}

#[test]
fn the_harness_mark_check_finds_each_form() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn b() {}\n}\n// #[test] in a comment\n";
    assert_eq!(harness_test_marks(text), vec![2, 4]);
    assert!(harness_test_marks("#[cfg(feature = \"unit-tests\")]\npub(crate) mod tests {}\n").is_empty());
}

/// The library has no test harness of its own (`test = false` in its Cargo.toml): a
/// `#[test]` in `tracer-core/src` is compiled by nothing and never runs. Its unit tests are
/// plain functions named in their module's `list!` (src/unit_tests.rs), which `tests/unit.rs` runs.
#[test]
fn the_engine_unit_tests_are_listed_not_marked() {
    let offenders: Vec<String> = rust_files(&crate_dir().join("src"))
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            harness_test_marks(&text).into_iter().map(move |line| format!("{}:{line}", f.display()))
        })
        .collect();
    assert!(offenders.is_empty(), "tests no harness runs (list them in unit_tests.rs instead):\n{}", offenders.join("\n"));
}
