//! The analysed file with the user's own modules it imports written into it, for source
//! cuts: a reproducer imports only `jax`, `numpy` and `functools`, so an error raised in (or
//! needing) one of the user's modules is cut from one program holding every module the
//! analysed file reaches through its imports, each before the files that import it, with
//! every line remembering the file and line it came from.
//!
//! An import of a user module goes: `from lib.model import forward` binds `forward` already
//! (the module's definitions are at the top level), `from lib.model import forward as fwd`
//! becomes `fwd = forward`, and a module imported as a namespace (`from lib import model`,
//! `import lib.stats as stats`, `import lib.stats`) has its attributes read by their names
//! (`model.forward(x)` → `forward(x)`). A module's `if __name__ == "__main__":` block does
//! not run on import, so it goes. Two files binding one name at their top level differently
//! make no program (one would shadow the other). `import math` goes when every use of it
//! has an exact NumPy equivalent (`math.pi` → `np.pi`, `math.sqrt(n)` → `float(np.sqrt(n))`).

use std::path::{Path, PathBuf};

use super::source::{bound_names, ALLOWED_ROOTS};
use crate::syntax::{Field, NodeKind, SyntaxNode, SyntaxTree};

/// One file of the program: its path (as the interpreter loaded it), the label its links
/// name it by, and its text.
pub struct ProjectFile<'a> {
    pub path: &'a Path,
    pub label: String,
    pub text: &'a str,
}

/// The files written into one program.
#[derive(Clone, Debug, PartialEq)]
pub struct Combined {
    pub text: String,
    /// For each line of `text`: the index of its file in `labels` and its 1-based line there.
    pub origins: Vec<(usize, u32)>,
    /// The label of every file given (by index).
    pub labels: Vec<String>,
    /// The program is not the analysed file less its comments.
    pub rewritten: bool,
}

/// Functions of `math` whose NumPy function gives the same value on Python numbers, and the
/// conversion back to a Python number.
const MATH_FUNCTIONS: &[(&str, &str, &str)] = &[
    ("sqrt", "np.sqrt", "float"),
    ("fabs", "np.abs", "float"),
    ("isfinite", "np.isfinite", "bool"),
    ("isnan", "np.isnan", "bool"),
    ("isinf", "np.isinf", "bool"),
];
const MATH_CONSTANTS: &[(&str, &str)] = &[("pi", "np.pi"), ("e", "np.e"), ("inf", "np.inf"), ("nan", "np.nan"), ("tau", "(2 * np.pi)")];

/// A text edit: bytes `start..end` written as `text`.
type Edit = (usize, usize, String);

/// The program of `files[0]` (the analysed file) and the files it reaches through its
/// imports; `None` when it cannot be one program (a name bound in two files, an import of
/// a user module mixed with others in one statement, an edit across lines).
pub fn combine(files: &[ProjectFile], search_roots: &[PathBuf]) -> Option<Combined> {
    let mut done = vec![false; files.len()];
    let mut order = Vec::new();
    let mut edited: Vec<Option<String>> = vec![None; files.len()];
    visit(0, files, search_roots, &mut done, &mut edited, &mut order)?;
    // Names bound at the top level of two files: the same import, or nothing.
    let mut seen: Vec<(String, String, usize)> = Vec::new();
    for &i in &order {
        let text = edited[i].as_deref()?;
        let tree = SyntaxTree::parse(text)?;
        let root = tree.root();
        let imports = import_bindings(root, text);
        // `bound_names` counts every identifier of an import (`numpy` of `import jax.numpy as jnp`).
        let in_imports: Vec<String> = tree
            .preorder()
            .into_iter()
            .filter(|n| {
                let mut up = n.parent();
                while let Some(p) = up {
                    if matches!(p.kind(), NodeKind::ImportStatement | NodeKind::ImportFromStatement | NodeKind::ImportPrefix) {
                        return n.kind() == NodeKind::Identifier;
                    }
                    up = p.parent();
                }
                false
            })
            .filter_map(|n| text.get(n.byte_range()).map(str::to_string))
            .collect();
        for name in bound_names(root, text, false) {
            let kind = match imports.iter().find(|(n, _)| *n == name) {
                Some((_, s)) => s.clone(),
                None if in_imports.contains(&name) => continue,
                None => "definition".to_string(),
            };
            match seen.iter().find(|(n, _, _)| *n == name) {
                Some((_, k, f)) if *f != i && (k != &kind || kind == "definition") => return None,
                Some(_) => {}
                None => seen.push((name, kind, i)),
            }
        }
    }
    // Of several files, the imports of JAX, NumPy and functools go first, each once (the
    // analysed file's first): a module's definitions may need them when they run.
    let mut imports: Vec<(String, (usize, u32))> = Vec::new();
    let mut parts: Vec<(usize, Vec<String>)> = Vec::new();
    let firsts = std::iter::once(0).chain(order.iter().copied().filter(|&i| i != 0));
    for i in firsts {
        let t = edited[i].as_deref()?;
        let mut lines: Vec<String> =
            if t.is_empty() { Vec::new() } else { t.strip_suffix('\n').unwrap_or(t).split('\n').map(str::to_string).collect() };
        if order.len() > 1 {
            for (row, stmt) in plain_imports(t) {
                if !imports.iter().any(|(s, _)| *s == stmt) {
                    imports.push((stmt, (i, row as u32 + 1)));
                }
                lines[row].clear();
            }
        }
        parts.push((i, lines));
    }
    let mut text = String::new();
    let mut origins = Vec::new();
    for (stmt, origin) in &imports {
        text.push_str(stmt);
        text.push('\n');
        origins.push(*origin);
    }
    for &i in &order {
        let Some((_, lines)) = parts.iter().find(|(f, _)| *f == i) else { continue };
        if !text.is_empty() && !lines.is_empty() {
            text.push('\n');
            origins.push((i, 0));
        }
        for (k, line) in lines.iter().enumerate() {
            text.push_str(line);
            text.push('\n');
            origins.push((i, k as u32 + 1));
        }
    }
    let rewritten = order.len() > 1 || edited[0].as_deref() != Some(files[0].text);
    Some(Combined { text, origins, labels: files.iter().map(|f| f.label.clone()).collect(), rewritten })
}

/// The module-level imports of JAX, NumPy and functools alone on their line (0-based), each
/// as its text.
fn plain_imports(text: &str) -> Vec<(usize, String)> {
    let Some(tree) = SyntaxTree::parse(text) else { return Vec::new() };
    let root = tree.root();
    let mut out = Vec::new();
    for s in root.named_children() {
        if !matches!(s.kind(), NodeKind::ImportStatement | NodeKind::ImportFromStatement) || s.start_row() != s.end_row() {
            continue;
        }
        let stmt = text.get(s.byte_range()).unwrap_or("");
        let words: Vec<&str> = stmt.split_whitespace().collect();
        let module = words.get(1).copied().unwrap_or("");
        let line = text.lines().nth(s.start_row()).unwrap_or("");
        let alone = line.split('#').next().unwrap_or("").trim() == stmt.trim();
        if alone && ALLOWED_ROOTS.contains(&module.split('.').next().unwrap_or("")) {
            out.push((s.start_row(), words.join(" ")));
        }
    }
    out
}

/// Writes file `i` after the files it imports (depth first), its edits made.
fn visit(
    i: usize,
    files: &[ProjectFile],
    roots: &[PathBuf],
    done: &mut [bool],
    edited: &mut [Option<String>],
    order: &mut Vec<usize>,
) -> Option<()> {
    if done[i] {
        return Some(());
    }
    done[i] = true;
    let (text, deps) = edit_file(i, files, roots)?;
    edited[i] = Some(text);
    for d in deps {
        visit(d, files, roots, done, edited, order)?;
    }
    order.push(i);
    Some(())
}

/// File `i` with its imports of user modules taken out (and namespace reads rewritten),
/// `math` replaced where exact, and, for a module, its `__main__` block gone; with the files
/// it imports.
fn edit_file(i: usize, files: &[ProjectFile], roots: &[PathBuf]) -> Option<(String, Vec<usize>)> {
    let text = files[i].text;
    let tree = SyntaxTree::parse(text)?;
    let root = tree.root();
    let src = |n: SyntaxNode| text.get(n.byte_range()).unwrap_or("").to_string();
    let dir = files[i].path.parent().unwrap_or(Path::new(""));
    let mut edits: Vec<Edit> = Vec::new();
    let mut deps = Vec::new();
    // Namespaces: the dotted name a module is read through, and its file.
    let mut namespaces: Vec<String> = Vec::new();
    for s in root.named_children() {
        match s.kind() {
            NodeKind::ImportStatement => {
                let mut found = Vec::new();
                for x in s.fields(Field::Name) {
                    let (dotted, alias) = match x.kind() {
                        NodeKind::AliasedImport => (x.field(Field::Name).map(src)?, x.field(Field::Alias).map(src)),
                        _ => (src(x), None),
                    };
                    found.push(resolve(&dotted, 0, dir, roots, files).map(|f| (f, alias.unwrap_or(dotted))));
                }
                if found.iter().all(Option::is_some) {
                    for (f, name) in found.into_iter().flatten() {
                        deps.push(f);
                        namespaces.push(name);
                    }
                    edits.push(blank(s, text));
                } else if found.iter().any(Option::is_some) {
                    return None;
                }
            }
            NodeKind::ImportFromStatement => {
                let module = s.field(Field::ModuleName)?;
                let (level, dotted) = match module.kind() {
                    NodeKind::RelativeImport => {
                        let prefix = src(module.child(0)?);
                        let level = prefix.chars().filter(|c| *c == '.').count();
                        let name = module.named_children().find(|n| n.kind() == NodeKind::DottedName).map(src).unwrap_or_default();
                        (level, name)
                    }
                    _ => (0, src(module)),
                };
                if level == 0 && ALLOWED_ROOTS.contains(&dotted.split('.').next().unwrap_or("")) {
                    continue;
                }
                let of_module = resolve(&dotted, level, dir, roots, files);
                let names: Vec<SyntaxNode> = s.fields(Field::Name).collect();
                let wildcard = {
                    let has = s.named_children().any(|n| n.kind() == NodeKind::WildcardImport);
                    has
                };
                let mut assigns = Vec::new();
                let mut stmt_deps: Vec<usize> = of_module.into_iter().collect();
                let mut stmt_namespaces = Vec::new();
                let mut ok = of_module.is_some() || !names.is_empty();
                for x in &names {
                    let (name, alias) = match x.kind() {
                        NodeKind::AliasedImport => (x.field(Field::Name).map(src)?, x.field(Field::Alias).map(src)),
                        _ => (src(*x), None),
                    };
                    let sub = if dotted.is_empty() { name.clone() } else { format!("{dotted}.{name}") };
                    match (resolve(&sub, level, dir, roots, files), of_module) {
                        (Some(f), _) => {
                            stmt_deps.push(f);
                            stmt_namespaces.push(alias.unwrap_or(name));
                        }
                        (None, Some(_)) => {
                            if let Some(a) = alias.filter(|a| *a != name) {
                                assigns.push(format!("{a} = {name}"));
                            }
                        }
                        (None, None) => ok = false,
                    }
                }
                if wildcard && of_module.is_none() {
                    ok = false;
                }
                if !ok {
                    continue;
                }
                deps.extend(stmt_deps);
                namespaces.extend(stmt_namespaces);
                let mut e = blank(s, text);
                e.2.insert_str(0, &assigns.join("; "));
                edits.push(e);
            }
            NodeKind::IfStatement if i != 0 => {
                let main_guard = s.field(Field::Condition).map(src).is_some_and(|c| {
                    let c: String = c.chars().filter(|c| !c.is_whitespace()).collect();
                    ["__name__==\"__main__\"", "__name__=='__main__'", "\"__main__\"==__name__", "'__main__'==__name__"]
                        .contains(&c.as_str())
                });
                if main_guard {
                    edits.push(blank(s, text));
                }
            }
            _ => {}
        }
    }
    // Reads through a namespace: `model.forward` → `forward` (the outermost match only).
    if !namespaces.is_empty() {
        let mut skip_below: Option<(usize, usize)> = None;
        for n in tree.preorder() {
            if skip_below.is_some_and(|(a, b)| a <= n.start_byte() && n.end_byte() <= b) {
                continue;
            }
            if n.kind() != NodeKind::Attribute {
                continue;
            }
            let (Some(object), Some(attr)) = (n.field(Field::Object), n.field(Field::Attribute)) else { continue };
            let dotted: String = src(object).chars().filter(|c| !c.is_whitespace()).collect();
            if namespaces.contains(&dotted) {
                edits.push((n.start_byte(), n.end_byte(), src(attr)));
                skip_below = Some((n.start_byte(), n.end_byte()));
            }
        }
    }
    edits.extend(math_edits(&tree, text));
    let mut out = text.to_string();
    edits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    for (start, end, with) in edits {
        let old = out.get(start..end)?;
        // Lines stay where they are: only an import's own lines may hold newlines (kept).
        if old.contains('\n') && with.matches('\n').count() != old.matches('\n').count() {
            return None;
        }
        out.replace_range(start..end, &with);
    }
    deps.dedup();
    Some((out, deps))
}

/// A statement taken out, its newlines kept (so lines stay where they are).
fn blank(s: SyntaxNode, text: &str) -> Edit {
    let newlines = text.get(s.byte_range()).unwrap_or("").matches('\n').count();
    (s.start_byte(), s.end_byte(), "\n".repeat(newlines))
}

/// The names the module's import statements bind, each with the statement's text (two
/// files may both import `jax.numpy as jnp`).
fn import_bindings(root: SyntaxNode, text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in root.named_children() {
        if matches!(s.kind(), NodeKind::ImportStatement | NodeKind::ImportFromStatement) {
            let stmt: String = text.get(s.byte_range()).unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ");
            for name in super::source::bound_names_of_import(s, text) {
                out.push((name, stmt.clone()));
            }
        }
    }
    out
}

/// The file (by index in `files`) a module name imported from `dir` is, as the interpreter
/// finds it: `a/b.py` or `a/b/__init__.py` under `dir` (or `level - 1` folders up) and the
/// search roots.
fn resolve(dotted: &str, level: usize, dir: &Path, roots: &[PathBuf], files: &[ProjectFile]) -> Option<usize> {
    let mut bases: Vec<PathBuf> = Vec::new();
    if level > 0 {
        let mut d = Some(dir.to_path_buf());
        for _ in 1..level {
            d = d.and_then(|x| x.parent().map(Path::to_path_buf));
        }
        bases.extend(d);
    } else {
        bases.push(dir.to_path_buf());
        bases.extend(roots.iter().cloned());
    }
    let rel: PathBuf = dotted.split('.').filter(|s| !s.is_empty()).collect();
    for base in bases {
        let mut candidates = vec![base.join(&rel).join("__init__.py")];
        if !dotted.is_empty() {
            candidates.insert(0, base.join(&rel).with_extension("py"));
        }
        for c in candidates {
            if let Some(i) = files.iter().position(|f| f.path == c) {
                return Some(i);
            }
        }
    }
    None
}

/// `import math` written with NumPy when every use of `math` has an exact equivalent and
/// `np` is NumPy or free: nothing otherwise.
fn math_edits(tree: &SyntaxTree, text: &str) -> Vec<Edit> {
    let src = |n: SyntaxNode| text.get(n.byte_range()).unwrap_or("");
    let root = tree.root();
    let statements: Vec<SyntaxNode> = root.named_children().collect();
    let Some(import) = statements
        .iter()
        .find(|s| s.kind() == NodeKind::ImportStatement && src(**s).split_whitespace().collect::<Vec<_>>() == ["import", "math"])
    else {
        return Vec::new();
    };
    let numpy_as_np = statements.iter().any(|s| {
        s.kind() == NodeKind::ImportStatement && src(*s).split_whitespace().collect::<Vec<_>>() == ["import", "numpy", "as", "np"]
    });
    let nodes = tree.preorder();
    let np_used = nodes.iter().any(|n| n.kind() == NodeKind::Identifier && src(*n) == "np");
    if np_used && !numpy_as_np {
        return Vec::new();
    }
    let mut edits: Vec<Edit> = Vec::new();
    for n in nodes.iter().filter(|n| n.kind() == NodeKind::Identifier && src(**n) == "math") {
        if n.parent().is_some_and(|p| p.id() == import.id() || p.parent().is_some_and(|g| g.id() == import.id())) {
            continue;
        }
        let Some(attr) = n.parent().filter(|p| p.kind() == NodeKind::Attribute && p.field(Field::Object).is_some_and(|o| o.id() == n.id()))
        else {
            return Vec::new();
        };
        let name = attr.field(Field::Attribute).map(src).unwrap_or("");
        if let Some((_, with)) = MATH_CONSTANTS.iter().find(|(c, _)| *c == name) {
            edits.push((attr.start_byte(), attr.end_byte(), with.to_string()));
            continue;
        }
        let call = attr.parent().filter(|c| c.kind() == NodeKind::Call && c.field(Field::Function).is_some_and(|f| f.id() == attr.id()));
        match (call, MATH_FUNCTIONS.iter().find(|(f, _, _)| *f == name)) {
            (Some(call), Some((_, with, back))) => {
                edits.push((call.start_byte(), call.start_byte(), format!("{back}(")));
                edits.push((attr.start_byte(), attr.end_byte(), with.to_string()));
                edits.push((call.end_byte(), call.end_byte(), ")".to_string()));
            }
            _ => return Vec::new(),
        }
    }
    let import_with = if numpy_as_np { String::new() } else { "import numpy as np".to_string() };
    edits.push((import.start_byte(), import.end_byte(), import_with));
    edits
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn modules_go_before_the_files_importing_them_with_their_lines() {
        let main = "import jax\nfrom lib import model\nfrom lib.util import scale as sc\n\nmodel.forward(sc(1.0))\n";
        let model = "import math\nimport jax.numpy as jnp\nfrom .util import scale\n\n\ndef forward(x):\n    return jnp.sin(x) * math.pi + math.sqrt(scale(2.0))\n\n\nif __name__ == \"__main__\":\n    forward(1.0)\n";
        let util = "def scale(x):\n    return x * 2.0\n";
        let init = "";
        let paths = [
            PathBuf::from("/p/main.py"),
            PathBuf::from("/p/lib/model.py"),
            PathBuf::from("/p/lib/util.py"),
            PathBuf::from("/p/lib/__init__.py"),
        ];
        let texts = [main, model, util, init];
        let labels = ["main.py", "lib/model.py", "lib/util.py", "lib/__init__.py"];
        let files: Vec<ProjectFile> =
            (0..4).map(|i| ProjectFile { path: &paths[i], label: labels[i].to_string(), text: texts[i] }).collect();
        let c = combine(&files, &[]).expect("one program");
        let expected = "import jax\nimport numpy as np\nimport jax.numpy as jnp\n\ndef scale(x):\n    return x * 2.0\n\n\n\n\n\n\ndef forward(x):\n    return jnp.sin(x) * np.pi + float(np.sqrt(scale(2.0)))\n\n\n\n\n\n\n\nsc = scale\n\nforward(sc(1.0))\n";
        assert_eq!(c.text, expected);
        assert!(c.rewritten);
        // Every line knows its file and line.
        let forward = c.text.lines().position(|l| l.starts_with("def forward")).expect("forward");
        assert_eq!(c.origins[forward], (1, 6));
        let call = c.text.lines().position(|l| l.starts_with("forward(")).expect("call");
        assert_eq!(c.origins[call], (0, 5));
        assert_eq!(c.labels[0], "main.py");
    }

    fn a_name_bound_in_two_files_makes_no_program() {
        let main = "from lib import f\n\ndef g(x):\n    return x\n\nf(1)\n";
        let lib = "def g(x):\n    return -x\n\ndef f(x):\n    return g(x)\n";
        let paths = [PathBuf::from("/p/main.py"), PathBuf::from("/p/lib.py")];
        let files = [
            ProjectFile { path: &paths[0], label: "main.py".into(), text: main },
            ProjectFile { path: &paths[1], label: "lib.py".into(), text: lib },
        ];
        assert!(combine(&files, &[]).is_none());
    }

    fn math_stays_when_a_use_has_no_exact_equivalent() {
        let text = "import math\n\nx = math.log(2.0) + math.pi\n";
        let path = PathBuf::from("/p/m.py");
        let c = combine(&[ProjectFile { path: &path, label: "m.py".into(), text }], &[]).expect("one program");
        assert_eq!(c.text, text);
        assert!(!c.rewritten);
    }

    crate::unit_tests::list![
        modules_go_before_the_files_importing_them_with_their_lines,
        a_name_bound_in_two_files_makes_no_program,
        math_stays_when_a_use_has_no_exact_equivalent
    ];
}
