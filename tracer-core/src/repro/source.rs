//! Reproducers cut from the user's own source, for errors that are not raised by a call
//! recorded inside a trace: leaked tracers used after their trace ended (TL103), `vmap` axes
//! (TL110), static arguments (TL111), invalid pytrees (TL112), plain Python exceptions at
//! trace time (TL190), and statements `jax::stmt` cannot say (a function passed to `scan`
//! that closes over a tracer of the enclosing trace). The program is the user's module with
//! comments and imports of anything but `jax`, `numpy`, `functools` and `tensorflow` taken out, every line
//! linked to the user's line, then delta-debugged statement by statement — top level first,
//! then the bodies of the functions, classes and blocks that are kept — with the engine as
//! the oracle (the same code and exception class at the same line).
//!
//! Size: one algorithm (cut, render, delta-debug) whose passes share `SourceProgram`'s line map;
//! its tests sit at the end.

use std::time::Duration;

use super::minimise::ddmin;
use super::minimise::{Budget, MinimiseConfig};
use super::{Oracle, OracleLimits, RaisedError};
use crate::syntax::ast::{Stmt, StmtKind};
use crate::syntax::{Field, LineIndex, NodeKind, SyntaxNode, SyntaxTree};

/// Modules a reproducer may import (with their submodules).
pub(super) const ALLOWED_ROOTS: &[&str] = &["jax", "numpy", "functools", "tensorflow"];

/// One physical line of the user's file, comment taken out.
#[derive(Clone, Debug, PartialEq)]
struct SrcLine {
    code: String,
    /// The line starts or ends inside a string (a triple-quoted string's text): kept as it is.
    in_string: bool,
    /// A link comment may follow the line (it ends outside a string, without a backslash).
    linkable: bool,
    /// Rows the cut writes after this line (a dataclass's methods), each after a newline.
    after: String,
}

/// A statement (or statements sharing a line) of a block, with the blocks of its body the
/// minimiser may reduce (an `if`'s, its `elif`'s and `else`'s, a `try`'s and its handlers').
#[derive(Clone, Debug, PartialEq)]
struct Node {
    /// 0-based, inclusive.
    first: usize,
    last: usize,
    /// The statements of every block of its body, in order (each knows its `clause`).
    body: Vec<usize>,
    /// Which block of the statement around it this one is in (0 for the first).
    clause: usize,
    /// An `elif` (the `if` in an `else` block alone): removed, it takes its clause along, so
    /// the clause needs no `pass`.
    elif: bool,
    /// An import of a module a reproducer may not import.
    disallowed: bool,
    /// A `return`: a kept function keeps its outputs (one emptied to `None` fails in JAX in
    /// ways of its own, which the oracle need not model).
    pinned: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SourceProgram {
    pub code: String,
    pub class: String,
    pub message: String,
    pub file_label: String,
    /// The user's line of the error (1-based), in `file_label`.
    pub error_line: u32,
    /// The line of the program (0-based) that is the error's.
    error_row: usize,
    /// The files the program's lines come from, and each line's file (by index) and line
    /// there (1-based): one file, or the analysed file with the user's modules it imports
    /// written into it (`repro::inline`).
    labels: Vec<String>,
    origins: Vec<(usize, u32)>,
    lines: Vec<SrcLine>,
    nodes: Vec<Node>,
    top: Vec<usize>,
    removed: Vec<bool>,
    /// The unreduced program differs from the user's by more than comments (an import was
    /// taken out): tracing it may not raise the error, so it must be checked.
    pub needs_check: bool,
    /// Integer literals that are array sizes (`(8, 4)`, `jnp.ones(5)`, `x.reshape(2, 3)`).
    sizes: Vec<SizeLit>,
    /// Sizes the minimiser shrank: every literal of the first value is written as the second.
    resized: Vec<(u64, u64)>,
    /// No size is shrunk below this: one more than the largest integer written in an index
    /// (`x[:, 1]` needs an axis of 2; the engine does not raise NumPy's `IndexError`).
    min_size: u64,
    /// Nested functions (and functions under an `if`, a loop, a `with` or a `try`) that can
    /// be written higher up: in the outermost function (or the module) whose names they do
    /// not read, before the statement of its body that holds them.
    liftable: Vec<Lift>,
    /// Write them there (the minimiser keeps it when the engine agrees).
    lift: bool,
    /// The node whose body holds each node (`None` for the module's statements).
    parents: Vec<Option<usize>>,
}

/// An integer literal standing for an array size: its line (0-based), bytes within the line,
/// and value.
#[derive(Clone, Debug, PartialEq)]
struct SizeLit {
    line: usize,
    start: usize,
    end: usize,
    value: u64,
}

/// A function that can be written higher up than it is defined.
#[derive(Clone, Debug, PartialEq)]
struct Lift {
    /// Its node, and the node it is written before (a statement of the block it goes to:
    /// the module's, or the body of a function around it).
    node: usize,
    before: usize,
    /// The indentation its lines lose (bytes).
    indent: usize,
}

pub struct Rendered {
    pub text: String,
    /// (0-based emitted line, 1-based user line).
    pub links: Vec<(usize, u32)>,
    /// The 0-based emitted line of the error, if it is still there.
    pub failing_line: Option<usize>,
    /// The program's lines (0-based) written, one per link.
    written: Vec<usize>,
}

impl SourceProgram {
    /// The user's module as a reproducer of the error at `error_line`; `None` when it does
    /// not parse.
    pub fn new(text: &str, error_line: u32, code: &str, message: &str, file_label: &str) -> Option<SourceProgram> {
        let origins = (1..=text.split('\n').count() as u32).map(|l| (0, l)).collect();
        let combined = super::inline::Combined { text: text.to_string(), origins, labels: vec![file_label.to_string()], rewritten: false };
        SourceProgram::cut(&combined, (0, error_line), code, message)
    }

    /// The program `combined` (the analysed file and the user's modules it imports) as a
    /// reproducer of the error at `error` (a file's index in `combined.labels`, its 1-based
    /// line); `None` when it does not parse or has no such line.
    pub fn cut(combined: &super::inline::Combined, error: (usize, u32), code: &str, message: &str) -> Option<SourceProgram> {
        let text = combined.text.as_str();
        let error_row = combined.origins.iter().position(|o| *o == error)?;
        let module = crate::syntax::parse(text);
        if !module.errors.is_empty() {
            return None;
        }
        let index = LineIndex::new(text);
        let mut lines = scan_lines(text);
        let mut nodes = Vec::new();
        let top = block_nodes(&module.body, &index, &lines, &mut nodes);
        for s in &module.body {
            if let StmtKind::ClassDef(c) = &s.kind {
                let first = index.line_of(s.span.start) as usize;
                if let Some(&n) = top.iter().find(|&&n| nodes[n].first == first) {
                    if plain_dataclass(text, c, &index, &mut lines, nodes[n].last) {
                        nodes[n].body.clear();
                    }
                }
            }
        }
        let removed: Vec<bool> = nodes.iter().map(|n| n.disallowed).collect();
        // Also when the module has tests (`test*` functions, TestCase classes): tracelens
        // runs them, Python does not (nor does the oracle), so an error raised in one is not
        // raised by the cut.
        let has_tests = module.body.iter().any(|s| match &s.kind {
            StmtKind::FunctionDef(f) => f.name.starts_with("test"),
            StmtKind::ClassDef(c) => {
                c.bases.iter().any(|b| text.get(b.span.start as usize..b.span.end as usize).is_some_and(|t| t.contains("TestCase")))
            }
            _ => false,
        });
        let needs_check = removed.iter().any(|r| *r) || text.contains("# tracelens:") || has_tests || combined.rewritten;
        let tree = SyntaxTree::parse(text);
        let sizes = tree.as_ref().map(|t| size_literals(t, text)).unwrap_or_default();
        let min_size = tree.as_ref().map_or(u64::MAX, |t| max_index_literal(t, text) + 1);
        let mut parents = vec![None; nodes.len()];
        for (n, node) in nodes.iter().enumerate() {
            for &c in &node.body {
                parents[c] = Some(n);
            }
        }
        let liftable = tree.as_ref().map(|t| liftable_functions(t, text, &nodes, &top, &parents, &lines)).unwrap_or_default();
        Some(SourceProgram {
            code: code.to_string(),
            class: message.split(':').next().unwrap_or("").to_string(),
            message: message.to_string(),
            file_label: combined.labels.get(error.0)?.clone(),
            error_line: error.1,
            error_row,
            labels: combined.labels.clone(),
            origins: combined.origins.clone(),
            lines,
            nodes,
            top,
            removed,
            needs_check,
            sizes,
            resized: Vec::new(),
            min_size,
            liftable,
            lift: false,
            parents,
        })
    }

    /// The program as text, with `header` comment lines first.
    pub fn render(&self, header: &[String]) -> Rendered {
        let mut out = Rendered { text: String::new(), links: Vec::new(), failing_line: None, written: Vec::new() };
        for h in header {
            out.text.push_str(&format!("# {h}\n"));
        }
        let mut row = header.len();
        self.render_block(&self.top, 0, self.lines.len(), &mut out, &mut row);
        out
    }

    /// Lines `from..to` holding the statements `block` (and lines between them, such as an
    /// `else:`), leaving out removed statements; a block left empty gets a `pass`.
    fn render_block(&self, block: &[usize], from: usize, to: usize, out: &mut Rendered, row: &mut usize) {
        self.render_block_at(block, from, to, 0, out, row)
    }

    /// Is node `n` written higher up instead of where it is?
    fn lifted(&self, n: usize) -> bool {
        self.lift && self.liftable.iter().any(|l| l.node == n)
    }

    /// Is the lifted function `l` still in the program: neither it nor a statement holding
    /// it (below the one it is written before) removed?
    fn lift_kept(&self, l: &Lift) -> bool {
        let mut n = Some(l.node);
        for _ in 0..=self.nodes.len() {
            match n {
                Some(x) if x == l.before => return true,
                Some(x) if self.removed[x] => return false,
                Some(x) => n = self.parents[x],
                None => return false,
            }
        }
        false
    }

    /// `render_block` with `dedent` bytes taken off every line (a lifted function's).
    fn render_block_at(&self, block: &[usize], from: usize, to: usize, dedent: usize, out: &mut Rendered, row: &mut usize) {
        let mut line = from;
        let gone = |n: usize| self.removed[n] || self.lifted(n);
        // A block left empty gets a `pass` (each block of an `if`, `try`, ... on its own),
        // unless it was an `elif`, which goes with it.
        let all_removed = |clause: usize| {
            let nodes: Vec<usize> = block.iter().copied().filter(|&n| self.nodes[n].clause == clause).collect();
            !nodes.is_empty() && nodes.iter().all(|&n| gone(n)) && !nodes.iter().any(|&n| self.nodes[n].elif)
        };
        let mut passed: Vec<usize> = Vec::new();
        let blank = |out: &mut Rendered, row: &mut usize| {
            if *row > 0 && !out.text.ends_with("\n\n") {
                out.text.push('\n');
                *row += 1;
            }
        };
        while line < to {
            match block.iter().find(|&&n| self.nodes[n].first <= line && line <= self.nodes[n].last) {
                Some(&n) => {
                    let node = &self.nodes[n];
                    let clause = node.clause;
                    if !passed.contains(&clause) && !self.top.contains(&n) && all_removed(clause) {
                        let indent: String = self.lines[node.first].code.chars().take_while(|c| c.is_whitespace()).collect();
                        out.text.push_str(&format!("{}pass\n", indent.get(dedent..).unwrap_or("")));
                        *row += 1;
                        passed.push(clause);
                    }
                    if !gone(n) {
                        // Functions lifted out of it come first, in the block it is in (set
                        // apart by blank lines at the top level).
                        let at_top = self.top.contains(&n);
                        if self.lift {
                            for l in self.liftable.iter().filter(|l| l.before == n && self.lift_kept(l)) {
                                let inner = &self.nodes[l.node];
                                if at_top {
                                    blank(out, row);
                                }
                                self.render_block_at(&inner.body, inner.first, inner.last + 1, dedent + l.indent, out, row);
                                if at_top {
                                    blank(out, row);
                                }
                            }
                        }
                        // A top-level definition stands apart, for the reader.
                        let head = (node.first..=node.last).map(|l| self.lines[l].code.as_str()).find(|c| !c.is_empty()).unwrap_or("");
                        let apart = self.top.contains(&n) && ["def ", "async def ", "class ", "@"].iter().any(|k| head.starts_with(k));
                        if apart {
                            blank(out, row);
                        }
                        self.render_block_at(&node.body, node.first, node.last + 1, dedent, out, row);
                        if apart {
                            blank(out, row);
                        }
                    }
                    line = node.last + 1;
                }
                None => {
                    self.emit_line(line, dedent, out, row);
                    line += 1;
                }
            }
        }
    }

    fn emit_line(&self, line: usize, dedent: usize, out: &mut Rendered, row: &mut usize) {
        let l = &self.lines[line];
        if !l.in_string && l.code.trim().is_empty() {
            return;
        }
        let (file, user_line) = self.origins.get(line).copied().unwrap_or((0, line as u32 + 1));
        let label = self.labels.get(file).map_or("", String::as_str);
        let mut code = l.code.clone();
        // Shrunk sizes, right to left so earlier bytes stay where they are.
        for size in self.sizes.iter().rev().filter(|z| z.line == line) {
            if let Some((_, to)) = self.resized.iter().find(|(from, _)| *from == size.value) {
                if code.is_char_boundary(size.start) && code.is_char_boundary(size.end) && size.end <= code.len() {
                    code.replace_range(size.start..size.end, &to.to_string());
                }
            }
        }
        out.text.push_str(code.get(dedent..).unwrap_or(&code));
        if l.linkable {
            out.text.push_str(&format!("  # {label}:{user_line}"));
            out.links.push((*row, user_line));
            out.written.push(line);
        }
        out.text.push_str(&l.after);
        out.text.push('\n');
        let extra = l.after.matches('\n').count();
        if line == self.error_row && out.failing_line.is_none() {
            out.failing_line = Some(*row);
        }
        *row += 1 + extra;
    }

    pub fn code_lines(&self) -> usize {
        super::code_lines(&self.render(&[]).text)
    }

    /// The framework whose error the program raises: TensorFlow when it imports it.
    fn framework(&self) -> &'static str {
        let text = self.render(&[]).text;
        if text.lines().any(|l| l.starts_with("import tensorflow") || l.starts_with("from tensorflow")) {
            "TensorFlow"
        } else {
            "JAX"
        }
    }

    /// The header a written reproducer starts with.
    pub fn header(&self, reduction: &super::Reduction, regenerate: &str) -> Vec<String> {
        let mut header = vec![
            format!("tracelens reproducer for {} at {}:{}", self.code, self.file_label, self.error_line),
            format!("original error: {}", self.message),
            format!("raises under {}: {}", self.framework(), self.class),
            "cut from the source: the statements of the file the error needs (it is not raised by a call tracelens can stage out of a trace)".to_string(),
        ];
        let after = self.code_lines();
        match reduction {
            super::Reduction::None => header.push(format!("unreduced: {after} lines")),
            super::Reduction::Minimised { lines_before, runs, cut_short } => {
                header.push(format!("minimised: {lines_before} → {after} lines ({})", Budget::note(*runs, *cut_short)))
            }
        }
        header.push(format!("regenerate: {regenerate}"));
        header
    }

    /// The blocks the minimiser reduces, outermost first: the module, then the body of every
    /// kept statement that has one.
    fn blocks(&self) -> Vec<Vec<usize>> {
        let mut out = vec![self.top.clone()];
        let mut i = 0;
        while i < out.len() {
            let inner: Vec<Vec<usize>> = out[i]
                .iter()
                .filter(|&&n| !self.removed[n] && !self.nodes[n].body.is_empty())
                .map(|&n| self.nodes[n].body.clone())
                .collect();
            out.extend(inner);
            i += 1;
        }
        out
    }

    fn keeping(&self, block: &[usize], keep: &[usize]) -> SourceProgram {
        let mut c = self.clone();
        for &n in block {
            if !keep.contains(&n) {
                c.removed[n] = true;
            }
        }
        c
    }
}

const LIMITS: OracleLimits = OracleLimits { max_time: Duration::from_secs(2), max_steps: None, module_only: true };

/// `reproduces` for programs cut from the same file, unreduced (the same text, different
/// errors): one engine run for all.
pub fn reproduces_all(programs: &[&SourceProgram], oracle: &dyn Oracle) -> Vec<bool> {
    let Some(first) = programs.first() else { return Vec::new() };
    let text = first.render(&[]).text;
    let errors = oracle.errors(&text, &LIMITS);
    programs.iter().map(|p| raises(p, &p.render(&[]), &errors)).collect()
}

fn raises(p: &SourceProgram, rendered: &Rendered, errors: &[RaisedError]) -> bool {
    let Some(failing) = rendered.failing_line else { return false };
    errors.iter().any(|e| e.is(failing as u32 + 1, &p.code, &p.class))
}

/// Does tracing `p` raise its code and class at its error line?
pub fn reproduces(p: &SourceProgram, oracle: &dyn Oracle) -> bool {
    reproduces_within(p, oracle, &LIMITS)
}

fn reproduces_within(p: &SourceProgram, oracle: &dyn Oracle, limits: &OracleLimits) -> bool {
    !raised(p, oracle, limits).is_empty()
}

/// The errors tracing `p` raises at its error line with its code and class.
fn raised(p: &SourceProgram, oracle: &dyn Oracle, limits: &OracleLimits) -> Vec<RaisedError> {
    let rendered = p.render(&[]);
    let Some(failing) = rendered.failing_line else { return Vec::new() };
    oracle.errors(&rendered.text, limits).into_iter().filter(|e| e.is(failing as u32 + 1, &p.code, &p.class)).collect()
}

/// Delta debugging over statements, block by block, until nothing more goes or the
/// budget is spent: (program, runs, verified, cut short).
pub fn minimise(p: &SourceProgram, config: &MinimiseConfig, oracle: &dyn Oracle) -> (SourceProgram, usize, bool, bool) {
    let mut budget = Budget::new(config);
    // Every step keeps the error the unreduced cut raises, message and all (its sizes).
    let kept = std::cell::RefCell::new(super::oracle::Kept::default());
    let run = |budget: &mut Budget, c: &SourceProgram| {
        budget.take(&LIMITS).is_some_and(|limits| kept.borrow_mut().holds(raised(c, oracle, &limits).iter()))
    };
    if !run(&mut budget, p) {
        return (p.clone(), budget.runs, false, false);
    }
    let mut best = p.clone();
    for _ in 0..3 {
        let mut changed = false;
        let mut b = 0;
        // Blocks are recomputed as statements go: a removed function's body is not reduced.
        while let Some(block) = best.blocks().get(b).cloned() {
            b += 1;
            let items: Vec<usize> = block.iter().copied().filter(|&n| !best.removed[n] && !best.nodes[n].pinned).collect();
            if items.is_empty() || budget.exhausted() {
                continue;
            }
            let base = best.clone();
            let mut test = |keep: &[usize]| run(&mut budget, &base.keeping(&items, keep));
            let kept = ddmin(items.clone(), &mut test);
            if kept.len() < items.len() {
                best = best.keeping(&items, &kept);
                changed = true;
            }
        }
        if !changed || budget.exhausted() {
            break;
        }
    }
    // Functions as high as what they read allows.
    if best.liftable.iter().any(|l| best.lift_kept(l)) && !budget.exhausted() {
        let mut c = best.clone();
        c.lift = true;
        if run(&mut budget, &c) {
            best = c;
        }
    }
    // Array sizes: each distinct one everywhere at once, to 1 or to a smaller size no other
    // has (as the staged-out minimiser does); none when the framework's message holds sizes
    // the engine's does not.
    let keeps_sizes = kept.borrow().leaves_out_node_inputs();
    while !keeps_sizes {
        let mut changed = false;
        for d in best.written_sizes().into_iter().rev() {
            if d <= 1 {
                continue;
            }
            let others: Vec<u64> = best.written_sizes().into_iter().filter(|&x| x != d).collect();
            for to in (best.min_size.max(1)..d).filter(|&v| v == 1 || !others.contains(&v)).take(2) {
                if budget.exhausted() {
                    return (best, budget.runs, true, true);
                }
                let mut c = best.clone();
                c.resize(d, to);
                if run(&mut budget, &c) {
                    best = c;
                    changed = true;
                    break;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let cut_short = budget.cut_short;
    (best, budget.runs, true, cut_short)
}

impl SourceProgram {
    /// The distinct sizes the program writes (after any shrinking), ascending.
    fn written_sizes(&self) -> Vec<u64> {
        let written = self.written_lines();
        let mut out: Vec<u64> = self.sizes.iter().filter(|z| written.contains(&z.line)).map(|z| self.size_now(z.value)).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    fn size_now(&self, value: u64) -> u64 {
        self.resized.iter().find(|(from, _)| *from == value).map_or(value, |(_, to)| *to)
    }

    /// Writes every literal now written `from` as `to`.
    fn resize(&mut self, from: u64, to: u64) {
        let originals: Vec<u64> = self.sizes.iter().map(|z| z.value).filter(|&v| self.size_now(v) == from).collect();
        for v in originals {
            match self.resized.iter_mut().find(|(f, _)| *f == v) {
                Some(r) => r.1 = to,
                None => self.resized.push((v, to)),
            }
        }
    }

    /// The user's lines (0-based) the program writes.
    fn written_lines(&self) -> Vec<usize> {
        self.render(&[]).written
    }
}

/// Integer literals (2 or more) that are array sizes: the elements of a tuple or list of
/// integers only (`(8, 4)`, not an index nor the value of a keyword other than `shape`,
/// `size`, `newshape`), the arguments of `.reshape(...)`, the first of `ones`, `zeros`,
/// `empty`, `arange`, `eye`, `identity`, the third of `linspace`, and `shape=`, `size=`,
/// `num=` keywords.
fn size_literals(tree: &SyntaxTree, text: &str) -> Vec<SizeLit> {
    const SIZE_KEYWORDS: &[&str] = &["shape", "size", "newshape", "num"];
    let src = |n: SyntaxNode| text.get(n.byte_range()).unwrap_or("");
    let keyword_ok = |kw: SyntaxNode| kw.field(Field::Name).is_some_and(|n| SIZE_KEYWORDS.contains(&src(n)));
    let mut out = Vec::new();
    for node in tree.preorder() {
        if node.kind() != NodeKind::Integer {
            continue;
        }
        let Ok(value) = src(node).parse::<u64>() else { continue };
        if !(2..=1 << 24).contains(&value) {
            continue;
        }
        let Some(parent) = node.parent() else { continue };
        let is_size = match parent.kind() {
            NodeKind::Tuple | NodeKind::List => {
                let all_ints = parent.named_children().all(|c| c.kind() == NodeKind::Integer);
                all_ints
                    && parent.parent().is_none_or(|g| match g.kind() {
                        NodeKind::Subscript => false,
                        NodeKind::KeywordArgument => keyword_ok(g),
                        _ => true,
                    })
            }
            NodeKind::KeywordArgument => keyword_ok(parent),
            NodeKind::ArgumentList => {
                let position = parent.named_children().position(|c| c.id() == node.id());
                let function = parent.parent().and_then(|call| call.field(Field::Function)).map(src).unwrap_or("");
                let last = function.rsplit('.').next().unwrap_or("");
                match last {
                    "reshape" => true,
                    "ones" | "zeros" | "empty" | "arange" | "eye" | "identity" => position == Some(0),
                    "linspace" => position == Some(2),
                    _ => false,
                }
            }
            _ => false,
        };
        if is_size {
            let line = node.start_row();
            let start = node.start_column();
            out.push(SizeLit { line, start, end: start + node.byte_range().len(), value });
        }
    }
    out
}

/// The largest integer literal inside a subscript's index (0 for none).
fn max_index_literal(tree: &SyntaxTree, text: &str) -> u64 {
    tree.preorder()
        .into_iter()
        .filter(|n| n.kind() == NodeKind::Integer)
        .filter(|n| {
            let mut up = n.parent();
            while let Some(p) = up {
                if p.kind() == NodeKind::Subscript {
                    return true;
                }
                up = p.parent();
            }
            false
        })
        .filter_map(|n| text.get(n.byte_range()).and_then(|t| t.parse::<u64>().ok()))
        .max()
        .unwrap_or(0)
}

/// A function definition that may be written higher up, as `liftable_functions` finds it.
struct Candidate<'t> {
    /// The definition (with its decorators).
    def: SyntaxNode<'t>,
    name: String,
    /// How many functions are around it (0 at the module's level).
    depth: usize,
    /// Directly in the body of the function (or module) around it, not under an `if`, a
    /// loop, a `with` or a `try`.
    direct: bool,
    /// The functions around it, innermost first (`scopes[i]` is at depth `depth - i`).
    scopes: Vec<SyntaxNode<'t>>,
    /// The lowest depth its name allows: no function between there and its own binds it.
    floor: usize,
    /// What it reads of the scopes around it: the depth of the scope binding each name, and
    /// the function definition that binding is, when it is one (`(depth, Some(name))`).
    reads: Vec<(usize, Option<String>)>,
}

/// Functions that can be written higher up than they are defined, as high as their free
/// variables allow (the seed's `f1`/`g7`): in the outermost function around them (or the
/// module) none of whose names they read (a sibling function they call counts where it is
/// written), before the statement of its body that holds them; and a function under an
/// `if`, a loop, a `with` or a `try` before that statement of its own function's body. Only
/// functions whose name is bound once in their scope and nowhere between there and where
/// they go, that say neither `global` nor `nonlocal`, whose decorators, defaults and
/// annotations read only imported modules and builtins (they run when the `def` does), and
/// whose lines all keep their indentation (no text of a multi-line string). Methods stay.
fn liftable_functions(
    tree: &SyntaxTree,
    text: &str,
    nodes: &[Node],
    top: &[usize],
    parents: &[Option<usize>],
    lines: &[SrcLine],
) -> Vec<Lift> {
    let src = |n: SyntaxNode| text.get(n.byte_range()).unwrap_or("").to_string();
    let root = tree.root();
    let module_bound = bound_names(root, text, false);
    let module_imports = imported_names(root, text);
    // What each function binds, by node id, worked out once.
    let mut scope_bound: std::collections::HashMap<usize, Vec<String>> = std::collections::HashMap::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    for node in tree.preorder() {
        if node.kind() != NodeKind::FunctionDefinition {
            continue;
        }
        let def = match node.parent() {
            Some(p) if p.kind() == NodeKind::DecoratedDefinition => p,
            _ => node,
        };
        let Some(name) = node.field(Field::Name).map(src) else { continue };
        // The scopes around it: functions (a class's body is no scope of the functions in it).
        let mut scopes = Vec::new();
        let mut innermost = None;
        let mut up = def.parent();
        while let Some(x) = up {
            if matches!(x.kind(), NodeKind::FunctionDefinition | NodeKind::ClassDefinition | NodeKind::Lambda) {
                innermost.get_or_insert(x.kind());
                if x.kind() == NodeKind::FunctionDefinition {
                    scopes.push(x);
                }
            }
            up = x.parent();
        }
        // A method stays in its class.
        if innermost.is_some_and(|k| k != NodeKind::FunctionDefinition) {
            continue;
        }
        let depth = scopes.len();
        let direct = def.parent().is_some_and(|b| match scopes.first() {
            Some(f) => b.kind() == NodeKind::Block && b.parent().is_some_and(|p| p.id() == f.id()),
            None => b.kind() == NodeKind::Module,
        });
        if direct && depth == 0 {
            continue;
        }
        for f in &scopes {
            scope_bound.entry(f.id()).or_insert_with(|| bound_names(*f, text, true));
        }
        let bound_in = |d: usize| -> &Vec<String> {
            match d {
                0 => &module_bound,
                _ => scope_bound.get(&scopes[depth - d].id()).unwrap_or(&module_bound),
            }
        };
        // Bound once where it is (by this `def`); the lowest depth it may go to.
        if bound_in(depth).iter().filter(|n| **n == name).count() != 1 {
            continue;
        }
        let floor = (0..depth).rev().find(|&d| bound_in(d).contains(&name)).map_or(0, |d| d + 1);
        // What runs with the `def`: decorators, defaults, annotations.
        let mut def_time = Vec::new();
        for d in def.named_children().filter(|c| c.kind() == NodeKind::Decorator) {
            def_time.extend(read_names(d, text));
        }
        if let Some(r) = node.field(Field::ReturnType) {
            def_time.extend(read_names(r, text));
        }
        if let Some(ps) = node.field(Field::Parameters) {
            for p in ps.named_children() {
                for field in [Field::Type, Field::Value] {
                    if let Some(x) = p.field(field) {
                        def_time.extend(read_names(x, text));
                    }
                }
            }
        }
        let enclosing_bound = |r: &String| (1..=depth).any(|d| bound_in(d).contains(r));
        if def_time.iter().any(|r| !module_imports.contains(r) && (module_bound.contains(r) || enclosing_bound(r))) {
            continue;
        }
        // What it reads of the scopes around it: not its own parameters and locals.
        let own = bound_names(node, text, true);
        let read: Vec<String> = read_names(def, text).into_iter().filter(|r| !own.contains(r) && *r != name).collect();
        if read.iter().any(|r| r == "global" || r == "nonlocal") {
            continue;
        }
        let mut reads = Vec::new();
        for r in read {
            let Some(d) = (1..=depth).rev().find(|&d| bound_in(d).contains(&r)) else { continue };
            // A function of that scope, defined there once: it may move too.
            let once = bound_in(d).iter().filter(|n| **n == r).count() == 1;
            let entry = (d, once.then_some(r));
            if !reads.contains(&entry) {
                reads.push(entry);
            }
        }
        candidates.push(Candidate { def, name, depth, direct, scopes, floor, reads });
    }
    // Each read as the depth of the scope binding it and, when that binding is a function
    // that may move too, that function.
    let reads: Vec<Vec<(usize, Option<usize>)>> = candidates
        .iter()
        .map(|c| {
            c.reads
                .iter()
                .map(|(at, function)| {
                    let scope = c.scopes.get(c.depth - at).map(|s| s.id());
                    let sibling = function.as_ref().and_then(|f| {
                        candidates.iter().position(|o| o.name == *f && o.depth == *at && o.scopes.first().map(|s| s.id()) == scope)
                    });
                    (*at, sibling)
                })
                .collect()
        })
        .collect();
    // The depth each goes to, by fixed point: a function that reads a sibling goes no higher
    // than the sibling does. `fixed` holds those that cannot be placed (they stay).
    let mut fixed = vec![false; candidates.len()];
    for _ in 0..=candidates.len() {
        let mut depth: Vec<usize> = candidates.iter().map(|c| c.depth).collect();
        for _ in 0..=candidates.len() {
            let mut changed = false;
            for (i, c) in candidates.iter().enumerate() {
                if fixed[i] {
                    continue;
                }
                let mut d = c.floor;
                for (at, sibling) in &reads[i] {
                    d = d.max(match sibling {
                        Some(j) => depth[*j],
                        None => *at,
                    });
                }
                if d < depth[i] {
                    depth[i] = d;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        // Where each one moving goes; one that cannot be placed stays, and all are placed again.
        let mut placed: Vec<(usize, Lift)> = Vec::new();
        let mut stay = Vec::new();
        for (i, c) in candidates.iter().enumerate() {
            if fixed[i] || (depth[i] == c.depth && c.direct) {
                continue;
            }
            match place(c, depth[i], nodes, top, parents, lines) {
                Some(l) => placed.push((i, l)),
                None => stay.push(i),
            }
        }
        // Two functions of one name that move would be one; and a function goes before a
        // statement that stays where it is.
        for (i, l) in &placed {
            let twin = placed.iter().any(|(j, _)| j != i && candidates[*j].name == candidates[*i].name);
            if twin || placed.iter().any(|(_, m)| m.node == l.before) {
                stay.push(*i);
            }
        }
        if stay.is_empty() {
            return placed.into_iter().map(|(_, l)| l).collect();
        }
        for i in stay {
            fixed[i] = true;
        }
    }
    Vec::new()
}

/// Where candidate `c` goes when it moves to `depth`: before the statement of that scope's
/// body that holds it. `None` when the statements involved are not nodes of their own
/// (statements sharing a line, an `else:` block) or its lines would not keep their
/// indentation.
fn place(c: &Candidate, depth: usize, nodes: &[Node], top: &[usize], parents: &[Option<usize>], lines: &[SrcLine]) -> Option<Lift> {
    let (first, last) = (c.def.start_row(), c.def.end_row());
    let node = nodes.iter().position(|x| x.first == first && x.last == last)?;
    let block: &[usize] = if depth == 0 {
        top
    } else {
        let scope = c.scopes[c.depth - depth];
        let scope = match scope.parent() {
            Some(p) if p.kind() == NodeKind::DecoratedDefinition => p,
            _ => scope,
        };
        let (sf, sl) = (scope.start_row(), scope.end_row());
        &nodes[nodes.iter().position(|x| x.first == sf && x.last == sl)?].body
    };
    let before = *block.iter().find(|&&b| nodes[b].first <= first && last <= nodes[b].last)?;
    if before == node {
        return None;
    }
    // It is reached from there through nodes of their own.
    let mut n = node;
    for _ in 0..=nodes.len() {
        match parents[n] {
            Some(p) if p == before => break,
            Some(p) => n = p,
            None => return None,
        }
    }
    let column = c.def.start_column();
    let target = lines.get(nodes[before].first).map(|l| l.code.len() - l.code.trim_start().len())?;
    let fits = (first..=last).all(|l| {
        lines
            .get(l)
            .is_some_and(|x| !x.in_string && (x.code.trim().is_empty() || x.code.bytes().take(column).all(|b| b == b' ' || b == b'\t')))
    });
    (fits && column >= target).then_some(Lift { node, before, indent: column - target })
}

/// The names the module's import statements bind.
fn imported_names(root: SyntaxNode, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for s in root.named_children() {
        if matches!(s.kind(), NodeKind::ImportStatement | NodeKind::ImportFromStatement) {
            out.extend(bound_names_of_import(s, text));
        }
    }
    out
}

/// The names one import statement binds: `import a.b` binds `a`, `import a as b` and
/// `from m import a as b` bind `b`.
pub(super) fn bound_names_of_import(s: SyntaxNode, text: &str) -> Vec<String> {
    let src = |n: SyntaxNode| text.get(n.byte_range()).unwrap_or("").to_string();
    let mut out = Vec::new();
    for x in s.fields(Field::Name) {
        let bound = match x.kind() {
            NodeKind::AliasedImport => x.field(Field::Alias).map(src),
            _ => Some(src(x).split('.').next().unwrap_or("").to_string()),
        };
        out.extend(bound.filter(|b| !b.is_empty()));
    }
    out
}

/// The names a function binds (with `params`: its parameters too) or the module binds:
/// assignment and loop targets, `with ... as`, imports, definitions, parameters; not
/// looking into nested functions or classes.
pub(super) fn bound_names(scope: SyntaxNode, text: &str, params: bool) -> Vec<String> {
    let src = |n: SyntaxNode| text.get(n.byte_range()).unwrap_or("").to_string();
    let mut out = Vec::new();
    let identifiers = |n: SyntaxNode, out: &mut Vec<String>| {
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            if x.kind() == NodeKind::Identifier {
                out.push(src(x));
            }
            // `a.b = ...` and `a[i] = ...` bind nothing new.
            if matches!(x.kind(), NodeKind::Attribute | NodeKind::Subscript) {
                continue;
            }
            stack.extend(x.named_children());
        }
    };
    if params {
        if let Some(p) = scope.field(Field::Parameters) {
            identifiers(p, &mut out);
        }
    }
    let body = if scope.kind() == NodeKind::Module { Some(scope) } else { scope.field(Field::Body) };
    let mut stack: Vec<SyntaxNode> = body.into_iter().collect();
    while let Some(x) = stack.pop() {
        match x.kind() {
            NodeKind::FunctionDefinition | NodeKind::ClassDefinition => {
                if let Some(n) = x.field(Field::Name) {
                    out.push(src(n));
                }
                continue;
            }
            NodeKind::Assignment | NodeKind::AugmentedAssignment | NodeKind::ForStatement | NodeKind::ForInClause => {
                if let Some(l) = x.field(Field::Left) {
                    identifiers(l, &mut out);
                }
            }
            NodeKind::AsPattern | NodeKind::NamedExpression => {
                if let Some(l) = x.field(Field::Alias).or_else(|| x.field(Field::Name)) {
                    identifiers(l, &mut out);
                }
            }
            NodeKind::ImportStatement | NodeKind::ImportFromStatement => identifiers(x, &mut out),
            NodeKind::Lambda => continue,
            _ => {}
        }
        stack.extend(x.named_children());
    }
    out
}

/// Every identifier a definition reads or writes (not attribute names nor keyword-argument
/// names), and `global`/`nonlocal` when it has such a statement.
fn read_names(def: SyntaxNode, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![def];
    while let Some(x) = stack.pop() {
        match x.kind() {
            NodeKind::Identifier => {
                let is_attr = x
                    .parent()
                    .is_some_and(|p| p.kind() == NodeKind::Attribute && p.field(Field::Attribute).is_some_and(|a| a.id() == x.id()));
                let is_kw = x
                    .parent()
                    .is_some_and(|p| p.kind() == NodeKind::KeywordArgument && p.field(Field::Name).is_some_and(|a| a.id() == x.id()));
                if !is_attr && !is_kw {
                    out.push(text.get(x.byte_range()).unwrap_or("").to_string());
                }
            }
            NodeKind::GlobalStatement => out.push("global".into()),
            NodeKind::NonlocalStatement => out.push("nonlocal".into()),
            _ => {}
        }
        stack.extend(x.named_children());
    }
    out
}

/// A class made with `@dataclasses.dataclass` whose body is only fields without defaults is
/// written without `dataclasses`: an `__init__` taking the fields, and, when it is also
/// `@jax.tree_util.register_dataclass`, registered with `register_pytree_node_class` with
/// the fields as children. Rewrites `lines` in place; false (and nothing changed) for any
/// other class.
fn plain_dataclass(text: &str, c: &crate::syntax::ast::ClassDef, index: &LineIndex, lines: &mut [SrcLine], last: usize) -> bool {
    let source = |span: crate::syntax::ast::Span| text.get(span.start as usize..span.end as usize).unwrap_or("").trim().to_string();
    let decorators: Vec<String> = c.decorators.iter().map(|d| source(d.span)).collect();
    let is_dataclass = |d: &str| d == "dataclasses.dataclass" || d == "dataclass";
    let registered = decorators.iter().any(|d| d == "jax.tree_util.register_dataclass");
    if !decorators.iter().any(|d| is_dataclass(d)) || !decorators.iter().all(|d| is_dataclass(d) || d == "jax.tree_util.register_dataclass")
    {
        return false;
    }
    let mut fields = Vec::new();
    for s in &c.body {
        match &s.kind {
            StmtKind::AnnAssign { target, value: None, .. } => match &target.kind {
                crate::syntax::ast::ExprKind::Name(n) => fields.push(n.to_string()),
                _ => return false,
            },
            StmtKind::Expr(e) if matches!(e.kind, crate::syntax::ast::ExprKind::Str(_)) => {}
            _ => return false,
        }
    }
    let Some(first_field) = c.body.first() else { return false };
    let indent: String = lines[index.line_of(first_field.span.start) as usize].code.chars().take_while(|c| c.is_whitespace()).collect();
    let decorator_lines: Vec<usize> = c.decorators.iter().map(|d| index.line_of(d.span.start) as usize).collect();
    for (k, &l) in decorator_lines.iter().enumerate() {
        let at: String = lines[l].code.chars().take_while(|c| c.is_whitespace()).collect();
        lines[l].code = if registered && k == 0 { format!("{at}@jax.tree_util.register_pytree_node_class") } else { String::new() };
    }
    let fields_list = fields.join(", ");
    let mut methods = format!("\n{indent}def __init__(self, {fields_list}):");
    for f in &fields {
        methods.push_str(&format!("\n{indent}    self.{f} = {f}"));
    }
    if fields.is_empty() {
        methods.push_str(&format!("\n{indent}    pass"));
    }
    if registered {
        let children: Vec<String> = fields.iter().map(|f| format!("self.{f}")).collect();
        let tuple = if children.len() == 1 { format!("({},)", children[0]) } else { format!("({})", children.join(", ")) };
        methods.push_str(&format!("\n{indent}def tree_flatten(self):\n{indent}    return {tuple}, None"));
        methods.push_str(&format!(
            "\n{indent}@classmethod\n{indent}def tree_unflatten(cls, aux, children):\n{indent}    return cls(*children)"
        ));
    }
    lines[last].after = methods;
    true
}

/// The nodes of one block: statements that share a line are one node.
fn block_nodes(stmts: &[Stmt], index: &LineIndex, lines: &[SrcLine], nodes: &mut Vec<Node>) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for s in stmts {
        let first = index.line_of(s.span.start) as usize;
        let last = index.line_of(s.span.end.saturating_sub(1).max(s.span.start)) as usize;
        let (first, last) = (first.min(lines.len().saturating_sub(1)), last.min(lines.len().saturating_sub(1)));
        if let Some(&prev) = out.last() {
            if nodes[prev].last >= first {
                let n: &mut Node = &mut nodes[prev];
                n.last = n.last.max(last);
                n.body.clear();
                n.disallowed |= disallowed_import(s);
                n.pinned |= matches!(s.kind, StmtKind::Return(_));
                continue;
            }
        }
        let indent = |l: usize| lines.get(l).map_or(0, |x| x.code.len() - x.code.trim_start().len());
        // The blocks of its body on lines of their own, not a one-line block (`if x: y`,
        // `else: y`), which stays part of the statement's lines.
        let blocks: Vec<(usize, &[Stmt], bool)> = bodies_of(s)
            .into_iter()
            .enumerate()
            .filter_map(|(k, b)| {
                let c = b.first()?;
                let cl = index.line_of(c.span.start) as usize;
                let elif = k > 0
                    && b.len() == 1
                    && matches!(c.kind, StmtKind::If { .. })
                    && lines.get(cl).is_some_and(|l| l.code.trim_start().starts_with("elif "));
                (cl > first && (indent(cl) > indent(first) || elif)).then_some((k, b, elif))
            })
            .collect();
        let id = nodes.len();
        let pinned = matches!(s.kind, StmtKind::Return(_));
        nodes.push(Node { first, last, body: Vec::new(), clause: 0, elif: false, disallowed: disallowed_import(s), pinned });
        let mut body = Vec::new();
        for (k, b, elif) in blocks {
            for n in block_nodes(b, index, lines, nodes) {
                nodes[n].clause = k;
                nodes[n].elif = elif;
                body.push(n);
            }
        }
        nodes[id].body = body;
        out.push(id);
    }
    out
}

/// The blocks of a compound statement the minimiser reduces: an `if`'s or a loop's body and
/// `else` block (an `elif` is an `if` alone in it), a `try`'s body, handlers, `else` and
/// `finally` blocks, a `with`'s, a function's or a class's body.
fn bodies_of(s: &Stmt) -> Vec<&[Stmt]> {
    match &s.kind {
        StmtKind::FunctionDef(f) => vec![&f.body],
        StmtKind::ClassDef(c) => vec![&c.body],
        StmtKind::With { body, .. } => vec![body],
        StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => vec![body, orelse],
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            let mut out: Vec<&[Stmt]> = vec![body];
            out.extend(handlers.iter().map(|h| h.body.as_slice()));
            out.push(orelse);
            out.push(finalbody);
            out
        }
        _ => Vec::new(),
    }
}

fn disallowed_import(s: &Stmt) -> bool {
    let root_ok = |name: &str| ALLOWED_ROOTS.contains(&name.split('.').next().unwrap_or(""));
    match &s.kind {
        StmtKind::Import(names) => names.iter().any(|a| !root_ok(&a.name)),
        StmtKind::ImportFrom { module, level, .. } => *level > 0 || module.as_ref().is_none_or(|m| !root_ok(m)),
        _ => false,
    }
}

/// Physical lines with comments taken out, knowing where strings are.
fn scan_lines(text: &str) -> Vec<SrcLine> {
    let mut out = Vec::new();
    // The open string: its quote and whether it is triple-quoted.
    let mut open: Option<(char, bool)> = None;
    for raw in text.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let starts_in_string = open.is_some();
        let chars: Vec<char> = raw.chars().collect();
        let mut code_end = chars.len();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match open {
                Some((q, triple)) => {
                    if c == '\\' {
                        i += 2;
                        continue;
                    }
                    if c == q {
                        if !triple {
                            open = None;
                        } else if chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q) {
                            open = None;
                            i += 3;
                            continue;
                        }
                    }
                }
                None => {
                    if c == '#' {
                        code_end = i;
                        break;
                    }
                    if c == '"' || c == '\'' {
                        let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
                        open = Some((c, triple));
                        i += if triple { 3 } else { 1 };
                        continue;
                    }
                }
            }
            i += 1;
        }
        // A one-quoted string ends with its line unless a backslash continues it.
        let backslash = chars[..code_end].last() == Some(&'\\');
        if let Some((_, false)) = open {
            if !backslash {
                open = None;
            }
        }
        let mut code: String = chars[..code_end].iter().collect();
        let ends_in_string = open.is_some();
        if !ends_in_string {
            code.truncate(code.trim_end().len());
        }
        let linkable = !ends_in_string && !code.ends_with('\\') && !code.trim().is_empty();
        out.push(SrcLine { code, in_string: starts_in_string || ends_in_string, linkable, after: String::new() });
    }
    // The text after the last newline is a line only when it has something.
    if text.ends_with('\n') {
        out.pop();
    }
    out
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn a_nested_function_that_reads_nothing_around_it_is_written_at_the_top_level() {
        let text = "import jax\n\n\n@jax.jit\ndef f(x):\n    k = 2\n\n    def helper(y):\n        return y * 2.0\n\n    def scaled(y):\n        return y * k\n\n    return helper(x) + scaled(x)\n\n\nf(jax.numpy.ones((8, 4)))\n";
        let mut p = SourceProgram::new(text, 17, "TL190", "NameError: x", "m.py").expect("parses");
        // `scaled` reads `k` of `f`: it stays.
        assert_eq!(p.liftable.len(), 1, "{:?}", p.liftable);
        p.lift = true;
        p.resized = vec![(8, 1)];
        let r = p.render(&[]);
        let expected = "import jax  # m.py:1\n\ndef helper(y):  # m.py:8\n    return y * 2.0  # m.py:9\n\n@jax.jit  # m.py:4\ndef f(x):  # m.py:5\n    k = 2  # m.py:6\n    def scaled(y):  # m.py:11\n        return y * k  # m.py:12\n    return helper(x) + scaled(x)  # m.py:14\n\nf(jax.numpy.ones((1, 4)))  # m.py:17\n";
        assert_eq!(r.text, expected);
        assert_eq!(r.failing_line, Some(12));
    }

    fn a_nested_function_goes_as_high_as_what_it_reads_allows() {
        let text = "import jax\n\n\ndef build(scale):\n    bias = scale * 2.0\n\n    def run(xs):\n        def shift(y):\n            return y + 1.0\n\n        def body(c, x):\n            def add_bias(h):\n                return h + bias\n\n            return add_bias(c + shift(x))\n\n        for i in range(2):\n            def twice(v):\n                return v * i\n\n            xs = twice(xs)\n        return body(xs, xs)\n\n    return run\n\n\nbuild(1.0)(2.0)\n";
        let mut p = SourceProgram::new(text, 27, "TL190", "NameError: x", "m.py").expect("parses");
        // `shift` reads nothing: the module. `add_bias` reads `bias` of `build`, and `body`
        // reads `add_bias` (which goes to `build`) and `shift`: both in `build`, before `run`.
        // `twice`, under a loop, reads `i` of `run`: in `run`, before the loop.
        assert_eq!(p.liftable.len(), 4, "{:?}", p.liftable);
        p.lift = true;
        let r = p.render(&[]);
        let expected = "import jax  # m.py:1\n\ndef shift(y):  # m.py:8\n    return y + 1.0  # m.py:9\n\ndef build(scale):  # m.py:4\n    bias = scale * 2.0  # m.py:5\n    def body(c, x):  # m.py:11\n        return add_bias(c + shift(x))  # m.py:15\n    def add_bias(h):  # m.py:12\n        return h + bias  # m.py:13\n    def run(xs):  # m.py:7\n        def twice(v):  # m.py:18\n            return v * i  # m.py:19\n        for i in range(2):  # m.py:17\n            xs = twice(xs)  # m.py:21\n        return body(xs, xs)  # m.py:22\n    return run  # m.py:24\n\nbuild(1.0)(2.0)  # m.py:27\n";
        assert_eq!(r.text, expected);
        // A statement removed around a lifted function takes it along.
        let run = p.nodes.iter().position(|n| n.first == 6).expect("run");
        let for_loop = p.nodes[run].body.iter().copied().find(|&n| p.nodes[n].first == 16).expect("for");
        p.removed[for_loop] = true;
        assert!(!p.render(&[]).text.contains("twice"));
    }

    fn what_runs_with_the_def_methods_and_names_bound_twice_keep_a_function_where_it_is() {
        let text = "import jax\n\n\ndef f(x, k):\n    def scaled(y, k=k):\n        return y * k\n\n    class Layer:\n        def apply(self, y):\n            return y\n\n    if k > 0:\n        def pick(y):\n            return y\n    else:\n        def pick(y):\n            return -y\n    return scaled(x) + Layer().apply(x) + pick(x)\n\n\nf(1.0, 2)\n";
        let p = SourceProgram::new(text, 21, "TL190", "NameError: x", "m.py").expect("parses");
        assert!(p.liftable.is_empty(), "{:?}", p.liftable);
    }

    fn functions_in_elif_else_except_and_finally_blocks_are_lifted_and_emptied_blocks_get_a_pass() {
        let text = "def f(x, mode):\n    seen = []\n    if mode == 0:\n        y = x\n    elif mode == 1:\n        def a(v):\n            seen.append(v)\n        a(x)\n    else:\n        def b(v):\n            return v\n        b(x)\n    try:\n        z = x\n    except KeyError:\n        def c(v):\n            return v + 1\n        c(x)\n    finally:\n        def d(v):\n            return seen\n        d(x)\n    return seen\n\n\nf(1.0, 1)\n";
        let mut p = SourceProgram::new(text, 26, "TL190", "NameError: x", "m.py").expect("parses");
        // `a` and `d` read `seen` of `f`: before the `if` and the `try`; `b` and `c` read
        // nothing: the module.
        assert_eq!(p.liftable.len(), 4, "{:?}", p.liftable);
        p.lift = true;
        // The first block of the `if` and the `try` emptied: each gets its `pass`.
        let f = p.top[0];
        for n in p.nodes[f].body.clone() {
            for m in p.nodes[n].body.clone() {
                if [3, 13].contains(&p.nodes[m].first) {
                    p.removed[m] = true;
                }
            }
        }
        let r = p.render(&[]);
        let code: Vec<&str> = r.text.lines().map(|l| l.split("  #").next().unwrap_or("")).collect();
        let expected = [
            "def b(v):",
            "    return v",
            "",
            "def c(v):",
            "    return v + 1",
            "",
            "def f(x, mode):",
            "    seen = []",
            "    def a(v):",
            "        seen.append(v)",
            "    if mode == 0:",
            "        pass",
            "    elif mode == 1:",
            "        a(x)",
            "    else:",
            "        b(x)",
            "    def d(v):",
            "        return seen",
            "    try:",
            "        pass",
            "    except KeyError:",
            "        c(x)",
            "    finally:",
            "        d(x)",
            "    return seen",
            "",
            "f(1.0, 1)",
        ];
        assert_eq!(code, expected, "{}", r.text);
        // An `elif` removed takes its block along, with no `pass` for it.
        let top_if = p.nodes[f].body[1];
        let elif = p.nodes[top_if].body.iter().copied().find(|&n| p.nodes[n].elif).expect("elif");
        p.removed[elif] = true;
        let text = p.render(&[]).text;
        assert!(text.contains("    if mode == 0:  # m.py:3\n        pass\n    def d"), "{text}");
        assert!(!text.contains("elif") && !text.contains("else:") && !text.contains("def a"), "{text}");
    }

    fn comments_go_and_strings_stay() {
        let lines = scan_lines("x = '#' + \"a#b\"  # note\ns = \"\"\"doc # kept\n  # kept too\n\"\"\"  # gone\ny = 1 + \\\n    2\n");
        let codes: Vec<&str> = lines.iter().map(|l| l.code.as_str()).collect();
        assert_eq!(codes, ["x = '#' + \"a#b\"", "s = \"\"\"doc # kept", "  # kept too", "\"\"\"", "y = 1 + \\", "    2"]);
        let linkable: Vec<bool> = lines.iter().map(|l| l.linkable).collect();
        assert_eq!(linkable, [true, false, false, true, false, true]);
    }

    fn an_emptied_body_gets_a_pass_and_other_imports_go() {
        let text = "import math\nimport jax\n\n\ndef f(x):\n    y = x  # a\n    return y\n\n\nf(1)\n";
        let mut p = SourceProgram::new(text, 10, "TL190", "NameError: x", "m.py").expect("parses");
        assert!(p.needs_check);
        let f = p.top[2];
        for n in p.nodes[f].body.clone() {
            p.removed[n] = true;
        }
        let r = p.render(&[]);
        assert_eq!(r.text, "import jax  # m.py:2\n\ndef f(x):  # m.py:5\n    pass\n\nf(1)  # m.py:10\n");
        assert_eq!(r.failing_line, Some(5));
        assert_eq!(r.links, [(0, 2), (2, 5), (5, 10)]);
    }

    fn a_dataclass_is_written_without_dataclasses() {
        let text = "import dataclasses\nimport jax\n\n\n@jax.tree_util.register_dataclass\n@dataclasses.dataclass\nclass P:\n    w: jax.Array\n    b: jax.Array\n\n\nP(1, 2).c\n";
        let p = SourceProgram::new(text, 12, "TL190", "AttributeError: c", "m.py").expect("parses");
        let r = p.render(&[]);
        let expected = "import jax  # m.py:2\n\n@jax.tree_util.register_pytree_node_class  # m.py:5\nclass P:  # m.py:7\n    w: jax.Array  # m.py:8\n    b: jax.Array  # m.py:9\n    def __init__(self, w, b):\n        self.w = w\n        self.b = b\n    def tree_flatten(self):\n        return (self.w, self.b), None\n    @classmethod\n    def tree_unflatten(cls, aux, children):\n        return cls(*children)\n\nP(1, 2).c  # m.py:12\n";
        assert_eq!(r.text, expected);
        assert_eq!(r.failing_line, Some(15));
        // Not registered: only the `__init__`; a class with anything but fields is left as it is.
        let plain = SourceProgram::new(
            "import dataclasses\n@dataclasses.dataclass\nclass Q:\n    x: int\nQ(1)\n",
            5,
            "TL112",
            "TypeError: x",
            "m.py",
        )
        .expect("parses");
        assert_eq!(
            plain.render(&[]).text,
            "class Q:  # m.py:3\n    x: int  # m.py:4\n    def __init__(self, x):\n        self.x = x\n\nQ(1)  # m.py:5\n"
        );
        let other = SourceProgram::new(
            "import dataclasses\n@dataclasses.dataclass\nclass R:\n    x: int = 0\n",
            4,
            "TL112",
            "TypeError: x",
            "m.py",
        )
        .expect("parses");
        assert!(other.render(&[]).text.contains("@dataclasses.dataclass  # m.py:2"));
    }

    crate::unit_tests::list![
        a_nested_function_that_reads_nothing_around_it_is_written_at_the_top_level,
        a_nested_function_goes_as_high_as_what_it_reads_allows,
        what_runs_with_the_def_methods_and_names_bound_twice_keep_a_function_where_it_is,
        functions_in_elif_else_except_and_finally_blocks_are_lifted_and_emptied_blocks_get_a_pass,
        comments_go_and_strings_stay,
        an_emptied_body_gets_a_pass_and_other_imports_go,
        a_dataclass_is_written_without_dataclasses
    ];
}
