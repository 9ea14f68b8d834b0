//! The file-level import graph of `tracer-core/src`: an edge from each file to every file a
//! `use` tree or an inline path of it names (`crate::`, `super::`, `self::`, a child module, or
//! a module it imported under a name; not the names a glob brings in), resolved to the longest
//! module prefix that is a file. Comments and literals are blanked first; `mod` declarations
//! are not edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

pub struct Graph {
    /// Paths relative to `src/`, sorted.
    pub files: Vec<String>,
    pub edges: Vec<BTreeSet<usize>>,
}

#[derive(PartialEq)]
enum Tok {
    Ident(String),
    Path,
    Punct(char),
}

/// Comments, string and char literals blanked to spaces (lifetimes kept).
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c[i] == 'r' && (next == Some('"') || next == Some('#')) && (i == 0 || !is_ident(c[i - 1])) {
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            while j < c.len() && !(c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#'))) {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push(' ');
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if c[i] == '\'' && (c.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = blank(text).chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if is_ident(c[i]) {
            let start = i;
            while i < c.len() && is_ident(c[i]) {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push(Tok::Path);
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                out.push(Tok::Punct(c[i]));
            }
            i += 1;
        }
    }
    out
}

/// Expands the use tree at `t[*i]` into (path, name it binds); a glob binds nothing.
fn use_tree(t: &[Tok], i: &mut usize, prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut segs = prefix;
    loop {
        match t.get(*i) {
            Some(Tok::Ident(s)) => {
                segs.push(s.clone());
                *i += 1;
                if t.get(*i) == Some(&Tok::Path) {
                    *i += 1;
                    continue;
                }
                break;
            }
            Some(Tok::Punct('{')) => {
                *i += 1;
                while *i < t.len() && t.get(*i) != Some(&Tok::Punct('}')) {
                    use_tree(t, i, segs.clone(), out);
                    if t.get(*i) == Some(&Tok::Punct(',')) {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            Some(Tok::Punct('*')) => {
                *i += 1;
                out.push((segs, None));
                return;
            }
            _ => return,
        }
    }
    let mut name = segs.last().cloned();
    if matches!(t.get(*i), Some(Tok::Ident(s)) if s == "as") {
        name = match t.get(*i + 1) {
            Some(Tok::Ident(s)) => Some(s.clone()),
            _ => None,
        };
        *i += 2;
    }
    if segs.last().is_some_and(|s| s == "self") {
        segs.pop();
        if name.as_deref() == Some("self") {
            name = segs.last().cloned();
        }
    }
    out.push((segs, name));
}

struct Resolver<'a> {
    modules: &'a BTreeMap<Vec<String>, usize>,
    aliases: BTreeMap<String, Vec<String>>,
}

impl Resolver<'_> {
    /// The absolute module path `segs` names from module `here`, when it is this crate's.
    fn absolute(&self, here: &[String], segs: &[String]) -> Option<Vec<String>> {
        let first = segs.first()?;
        let (mut base, mut rest) = match first.as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (here.to_vec(), &segs[1..]),
            "super" => (here.to_vec(), segs),
            _ => {
                if let Some(alias) = self.aliases.get(first) {
                    let mut full = alias.clone();
                    full.extend_from_slice(&segs[1..]);
                    return Some(full);
                }
                let mut child = here.to_vec();
                child.push(first.clone());
                if !self.modules.contains_key(&child) {
                    return None;
                }
                (here.to_vec(), segs)
            }
        };
        while rest.first().is_some_and(|s| s == "super") {
            base.pop()?;
            rest = &rest[1..];
        }
        base.extend_from_slice(rest);
        Some(base)
    }

    /// The file holding the longest prefix of `abs` that is a file module.
    fn file(&self, abs: &[String]) -> Option<usize> {
        (0..=abs.len()).rev().find_map(|n| self.modules.get(&abs[..n]).copied())
    }
}

fn module_of(rel: &str) -> Vec<String> {
    let mut segs: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if matches!(segs.last().map(String::as_str), Some("mod" | "lib")) {
        segs.pop();
    }
    segs
}

/// The attribute that gates the unit tests (src/unit_tests.rs): what it gates is not the
/// engine's, and not in its graph.
const UNIT_TESTS: &str = "#[cfg(feature = \"unit-tests\")]";

/// `text` without the items the unit-tests feature gates (each from its attribute to the `;`
/// or the `}` at its own indentation that ends it), and the names of the modules those items
/// declare (`mod tests;`): their files are the tests' own.
fn without_unit_tests(text: &str) -> (String, Vec<String>) {
    let mut kept = String::with_capacity(text.len());
    let mut declared = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != UNIT_TESTS {
            kept.push_str(line);
            kept.push('\n');
            continue;
        }
        let Some(mut first) = lines.by_ref().find(|l| !l.trim_start().starts_with("#[")) else { break };
        if let Some((_, name)) = first.trim().strip_suffix(';').and_then(|item| item.rsplit_once("mod ")) {
            declared.push(name.to_string());
        }
        if first.trim_end().ends_with('{') {
            let close = format!("{}}}", &first[..first.len() - first.trim_start().len()]);
            lines.by_ref().find(|l| l.trim_end() == close);
        } else {
            while !first.trim_end().ends_with(';') {
                let Some(next) = lines.next() else { break };
                first = next;
            }
        }
    }
    (kept, declared)
}

pub fn build(src: &Path) -> Graph {
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    for path in super::rust_files(src) {
        let rel = path.strip_prefix(src).unwrap().to_string_lossy().replace('\\', "/");
        let (text, declared) = without_unit_tests(&std::fs::read_to_string(&path).unwrap_or_default());
        test_modules.extend(declared.into_iter().map(|name| [module_of(&rel), vec![name]].concat()));
        texts.insert(rel, text);
    }
    texts.retain(|rel, _| !test_modules.iter().any(|m| module_of(rel).starts_with(m)));
    let files: Vec<String> = texts.keys().cloned().collect();
    let modules: BTreeMap<Vec<String>, usize> = files.iter().enumerate().map(|(i, f)| (module_of(f), i)).collect();
    let mut edges = vec![BTreeSet::new(); files.len()];
    for (fi, rel) in files.iter().enumerate() {
        let t = tokens(&texts[rel]);
        let file_module = module_of(rel);
        let mut r = Resolver { modules: &modules, aliases: BTreeMap::new() };
        // Pass 0 binds the names `use` imports; pass 1 resolves every path.
        for pass in 0..2 {
            let mut here = file_module.clone();
            let mut inline: Vec<usize> = Vec::new();
            let mut depth = 0usize;
            let mut i = 0;
            while i < t.len() {
                match &t[i] {
                    Tok::Punct('{') => depth += 1,
                    Tok::Punct('}') => {
                        depth = depth.saturating_sub(1);
                        while inline.last().is_some_and(|d| *d > depth) {
                            inline.pop();
                            here.pop();
                        }
                    }
                    Tok::Ident(k) if k == "mod" => {
                        if let (Some(Tok::Ident(name)), Some(Tok::Punct('{'))) = (t.get(i + 1), t.get(i + 2)) {
                            here.push(name.clone());
                            depth += 1;
                            inline.push(depth);
                            i += 3;
                            continue;
                        }
                    }
                    Tok::Ident(k) if k == "use" && (i == 0 || t[i - 1] != Tok::Path) => {
                        i += 1;
                        let mut paths = Vec::new();
                        use_tree(&t, &mut i, Vec::new(), &mut paths);
                        for (segs, name) in paths {
                            let Some(abs) = r.absolute(&here, &segs) else { continue };
                            if pass == 0 {
                                if let Some(name) = name {
                                    r.aliases.insert(name, abs);
                                }
                            } else if let Some(to) = r.file(&abs) {
                                edges[fi].insert(to);
                            }
                        }
                        continue;
                    }
                    Tok::Ident(_) if pass == 1 && t.get(i + 1) == Some(&Tok::Path) && (i == 0 || t[i - 1] != Tok::Path) => {
                        let mut segs = Vec::new();
                        let mut j = i;
                        while let Some(Tok::Ident(s)) = t.get(j) {
                            segs.push(s.clone());
                            if t.get(j + 1) != Some(&Tok::Path) {
                                break;
                            }
                            j += 2;
                        }
                        if let Some(to) = r.absolute(&here, &segs).and_then(|abs| r.file(&abs)) {
                            edges[fi].insert(to);
                        }
                        i = j + 1;
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        edges[fi].remove(&fi);
    }
    Graph { files, edges }
}

/// The strongly connected components (Tarjan), each sorted, of more than one file.
pub fn circles(g: &Graph) -> Vec<Vec<usize>> {
    struct State<'a> {
        g: &'a Graph,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.g.edges[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let n = g.files.len();
    let mut s = State { g, index: vec![None; n], low: vec![0; n], on_stack: vec![false; n], stack: Vec::new(), next: 0, out: Vec::new() };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The import graph's resolution, on a small crate written out here.
#[test]
fn the_import_graph_resolves_each_form() {
    let dir = std::env::temp_dir().join(format!("tracelens-import-graph-{}", std::process::id()));
    let files = [
        ("lib.rs", "mod a;\nmod b;\n#[cfg(feature = \"unit-tests\")]\n#[doc(hidden)]\npub mod unit_tests;\n"),
        ("a/mod.rs", "pub mod x;\npub mod y;\nuse crate::b::{self, Item as I};\n"),
        ("a/x.rs", "// crate::c::Z\nfn f() { let s = \"crate::c\"; super::y::g(); }\n"),
        ("a/y.rs", "use crate::b as bee;\nfn g() { bee::inner::h(); }\n#[cfg(test)]\nmod tests { use super::*; }\n"),
        ("b/mod.rs", "pub mod inner;\n"),
        ("b/inner.rs", "fn h() { crate::a::x::f(); }\n"),
        ("c.rs", "use std::rc::Rc;\n#[cfg(feature = \"unit-tests\")]\npub(crate) use self::{\n    tests as t,\n};\n#[cfg(feature = \"unit-tests\")]\npub(crate) mod tests {\n    fn f() { crate::a::x::f(); }\n    crate::unit_tests::list![f];\n}\n"),
        ("unit_tests.rs", "const M: &[&[T]] = &[crate::c::tests::TESTS];\n"),
    ];
    for (rel, text) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let g = build(&dir);
    let edges_of = |f: &str| -> Vec<&str> {
        let i = g.files.iter().position(|x| x == f).unwrap();
        g.edges[i].iter().map(|&j| g.files[j].as_str()).collect()
    };
    assert_eq!(edges_of("a/mod.rs"), ["b/mod.rs"]);
    assert_eq!(edges_of("a/x.rs"), ["a/y.rs"], "comments and strings are not paths");
    assert_eq!(edges_of("a/y.rs"), ["b/inner.rs", "b/mod.rs"], "an alias resolves further; a test module's super is its file");
    assert_eq!(edges_of("b/inner.rs"), ["a/x.rs"]);
    assert!(edges_of("c.rs").is_empty(), "what the unit-tests feature gates makes no edge");
    assert!(!g.files.iter().any(|f| f == "unit_tests.rs"), "a module the unit-tests feature declares is the tests' own");
    let circles: Vec<Vec<&str>> = circles(&g).iter().map(|c| c.iter().map(|&i| g.files[i].as_str()).collect()).collect();
    assert_eq!(circles, [["a/x.rs", "a/y.rs", "b/inner.rs"]]);
    std::fs::remove_dir_all(&dir).ok();
}
