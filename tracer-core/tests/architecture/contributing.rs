//! CONTRIBUTING.md's recipes, checked against the tree where the text alone can be (a
//! module of `tests/architecture.rs`): every
//! file a recipe names exists, each recipe's worked example touches the files its count
//! says, and `prims/all.rs` (one of each primitive, which the `docs/ir.md` row check and the
//! AD coverage table walk) lists every primitive, so that a new one cannot slip past them.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Every file below `dir`, relative to it, with `/` separators.
fn tree(dir: &Path) -> Vec<String> {
    super::files_below(dir, |_| true)
        .into_iter()
        .filter_map(|p| p.strip_prefix(dir).ok().map(|r| r.to_string_lossy().replace('\\', "/")))
        .collect()
}

/// The paths a text names in backticks: a span that is one word ending in a file
/// extension (`numpy/ufunc.rs`, `tests/architecture.rs`), not a template (`TL2xx.md`,
/// `<lib>/__init__.py`, `optax_*.py`).
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, span) in text.split('`').enumerate() {
        let looks_like_path = span.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
            && [".rs", ".py", ".md", ".tsv", ".txt", ".toml"].iter().any(|x| span.ends_with(x))
            && !span.contains("xx")
            && !span.contains("NNN");
        if i % 2 == 1 && looks_like_path {
            out.push(span.trim_start_matches("./").to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn the_path_finder_reads_backticked_paths_only() {
    let text = "see `numpy/ufunc.rs` and `tests/fixtures/run/optax_*.py`, `docs/diagnostics/TL2xx.md`, `shims/<lib>/__init__.py`, `crashes/NNN.py`, `F::Exp`, `x.py` or x.rs";
    assert_eq!(named_paths(text), ["numpy/ufunc.rs", "x.py"]);
}

/// Each file CONTRIBUTING.md names is in the tree (a name may be the tail of a longer path:
/// `numpy/shape.rs` is `tracer-core/src/jax/numpy/shape.rs`): a recipe that sends a newcomer
/// to a file that was moved or split fails here.
#[test]
fn every_file_contributing_names_exists() {
    let root = repo_root();
    let text = std::fs::read_to_string(root.join("CONTRIBUTING.md")).expect("CONTRIBUTING.md");
    let files = tree(&root);
    assert!(files.len() > 200, "the tree was not found under {}", root.display());
    // Named, and not in this repository: JAX's own `jax/_src/lax/lax.py` (where a batching
    // rule is read), and the product's diagnostics catalog in the shared folder beside it.
    const OUTSIDE: [&str; 2] = ["lax.py", "shared/spec/diagnostics.md"];
    let named: Vec<String> = named_paths(&text).into_iter().filter(|n| !OUTSIDE.contains(&n.as_str())).collect();
    assert!(named.len() >= 30, "the recipes name files in backticks: {named:?}");
    let missing: Vec<&String> = named.iter().filter(|n| !files.iter().any(|f| f == *n || f.ends_with(&format!("/{n}")))).collect();
    assert!(missing.is_empty(), "CONTRIBUTING.md names files that are not in the tree: {missing:?}");
}

/// The source files (below `tracer-core/src`) whose text names `word` as a whole word.
fn files_naming(word: &str) -> Vec<String> {
    let src = repo_root().join("tracer-core/src");
    tree(&src)
        .into_iter()
        .filter(|f| f.ends_with(".rs") && names(&std::fs::read_to_string(src.join(f)).unwrap_or_default(), word))
        .collect()
}

/// The worked examples of the recipes touch what the table of counts says: `jnp.fliplr` its
/// `surface.rs` line and its family's file; `tf.math.log1p` its `tf/surface.rs` line and its
/// `tf/ops.rs` route, and the check-numerics table of `tf/numerics.rs` (the recipe's
/// conditional third file, for an op that can make a NaN or an Inf from finite inputs).
#[test]
fn the_worked_examples_touch_the_files_the_recipes_count() {
    assert_eq!(files_naming("Fliplr"), ["jax/numpy/shape.rs", "jax/surface.rs"]);
    let log1p: Vec<String> = files_naming("Log1p").into_iter().filter(|f| f.starts_with("tf/")).collect();
    // `ops_special.rs` uses jnp's `J::Log1p` for softplus: a caller, not the op's recipe.
    assert_eq!(log1p, ["tf/numerics.rs", "tf/ops.rs", "tf/ops_special.rs", "tf/surface.rs"]);
}

/// The variants of `pub enum NAME { .. }` (at four spaces of indentation) or of
/// `prim_names!(NAME { Variant = "text", .. })` in `text`.
fn variants(text: &str, name: &str) -> Vec<String> {
    let ident = |s: &str| -> String { s.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    if let Some(start) = text.find(&format!("prim_names!({name} {{")) {
        let body = &text[start..];
        let body = &body[body.find('{').unwrap_or(0) + 1..body.find("})").unwrap_or(body.len())];
        return body.split(',').filter_map(|v| v.split_once('=')).map(|(v, _)| ident(v)).filter(|v| !v.is_empty()).collect();
    }
    let Some(start) = text.find(&format!("pub enum {name} {{")) else { return Vec::new() };
    let body = &text[start..];
    let end = body.find("\n}").unwrap_or(body.len());
    body[..end]
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("    ") && !l.starts_with("     "))
        .map(ident)
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
        .collect()
}

/// Whether `text` names `word` as a whole word.
fn names(text: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word)
        .any(|(at, _)| !text[..at].chars().next_back().is_some_and(is_word) && !text[at + word.len()..].chars().next().is_some_and(is_word))
}

/// `prims/all.rs` names every variant of `Prim` and of the operation enums it lists one of
/// each of (each elementwise, reduction, scatter and linear-algebra operation; one
/// comparison stands for the six, which share their rules), and every block (`impl Block
/// for`): the checks that walk it (every primitive has its `docs/ir.md` row, the AD
/// coverage table of docs/autodiff.md) would otherwise pass over a primitive added without
/// its line there. `Prim::Opaque` is a value tracelens does not compute, not a primitive.
/// The recipes count that line.
#[test]
fn all_prims_lists_every_primitive() {
    let jax = repo_root().join("tracer-core/src/jax");
    let ir = std::fs::read_to_string(jax.join("ir.rs")).expect("ir.rs");
    let all = std::fs::read_to_string(jax.join("prims/all.rs")).expect("prims/all.rs");
    let mut missing = Vec::new();
    for enum_name in ["Prim", "UnaryPrim", "BinaryPrim", "LinalgOp", "ReduceOp", "ScatterOp", "ArgOp"] {
        let vs = variants(&ir, enum_name);
        assert!(vs.len() > 1, "enum {enum_name} not found in ir.rs");
        let listed = |v: &str| match (enum_name, v) {
            ("Prim", "Opaque") => true,
            ("Prim", "Block") => all.contains("Prim::block("),
            _ => names(&all, v),
        };
        missing.extend(vs.into_iter().filter(|v| !listed(v)).map(|v| format!("{enum_name}::{v}")));
    }
    for f in tree(&jax.join("prims")) {
        let text = std::fs::read_to_string(jax.join("prims").join(&f)).unwrap_or_default();
        for (at, _) in text.match_indices("impl Block for ") {
            let name: String =
                text[at + "impl Block for ".len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !all.contains(&format!("{name} {{")) {
                missing.push(format!("block {name} (prims/{f})"));
            }
        }
    }
    assert!(missing.is_empty(), "prims/all.rs does not list: {missing:?}");
}
