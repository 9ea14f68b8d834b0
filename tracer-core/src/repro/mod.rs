//! Reproducers as data: the standalone pure-JAX program that re-raises an error, before it
//! is written out as Python text. `jax::stmt` builds a `Program` from the statements a trace
//! recorded; `minimise` shrinks it with the engine as the oracle (an `Oracle` the analysis
//! hands in: `repro/` does not call the pipeline); `render` writes it, with each line
//! linked to the user's line.

pub mod converted;
mod expr;
pub mod inline;
pub mod minimise;
mod oracle;
pub mod source;
mod symbolic;
pub mod tf;

pub use oracle::{Oracle, OracleLimits, RaisedError};

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use expr::render_line;

/// How reproducers are made.
#[derive(Clone, Debug)]
pub struct ReproConfig {
    /// Make none (the minimiser's own engine runs do not need them).
    pub skip: bool,
    /// Concrete arrays with at most this many elements, whose values are known, are written
    /// as literals; larger ones as `np.ones(shape, dtype)` (JAX's tool's flag of that name).
    pub fake_array_threshold: u64,
    /// Functions whose every trace is staged out (`tracelens repro --function`).
    pub functions: Vec<String>,
}

impl Default for ReproConfig {
    fn default() -> Self {
        ReproConfig { skip: false, fake_array_threshold: 128, functions: Vec::new() }
    }
}

/// An argument of an emitted call, with arrays already named.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A parameter, a constant or the target of an earlier line.
    Name(String),
    /// A Python literal, as Python writes it.
    Lit(String),
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Dict(Vec<(String, Expr)>),
    Slice(Box<[Expr; 3]>),
}

/// What one emitted line does, at the level the user wrote it.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `jnp.dot`, `jax.nn.relu`, `lax.dynamic_slice` (already shortened for the imports).
    Api(String),
    BinOp(String),
    Unary(String),
    Compare(String),
    GetItem,
    SetItem,
    /// `x.reshape(...)`: `args[0]` is the receiver.
    Method(String),
    /// A conversion Python forces on an array: `bool` (an `if`), `int`, `float`,
    /// `operator.index` (indexing a list), `np.asarray`.
    Concretize(String),
    /// `jax.vmap(f, in_axes=1)(x, y)`: `args[0]` is the function, the keyword arguments are
    /// the transformation's and the other arguments the call's.
    Transform(String),
    /// `x.T`: `args[0]` is the receiver.
    Attr(String),
    /// `x.at[i].set(v)`: `args` are the array, the index, then the update's arguments.
    AtUpdate(String),
    /// An `if`/`while` on a tensor AutoGraph converts: `args` are the test, then the values
    /// its blocks bind (`converted.rs`).
    Converted(converted::Converted),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The name the result is bound to, when the result is an array a later line uses.
    pub target: Option<String>,
    pub op: Op,
    pub args: Vec<Expr>,
    pub kwargs: Vec<(String, Expr)>,
    /// The aval of the result, when it is one array (what a parameter standing for this line
    /// must look like).
    pub out: Option<Aval>,
    /// For a result that is a pytree of arrays: each array as the program names it
    /// (`v1[1]['w']`) and its aval.
    pub out_leaves: Vec<(String, Aval)>,
    /// The user's line (1-based) this line stands for, and its file as the reproducer names
    /// it (a helper module's lines are inlined with links to that module).
    pub user_line: u32,
    pub file: String,
}

/// A parameter of the emitted function or a module-level constant.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    pub name: String,
    pub aval: Aval,
    /// The array's actual values as a Python expression (arrays with at most
    /// `fake_array_threshold` elements whose data is known); otherwise `np.ones`.
    pub literal: Option<String>,
}

/// How the emitted function is called so that its arguments are traced as they were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    Jit,
    Grad,
    JitGrad,
    /// `@tf.function` with the traced specs as its `input_signature`, called on tensors.
    TfFunction,
}

/// A reproducer before it is written out: one traced function, the statements of the
/// backward slice of the failing one (the failing one last), and the call that traces it.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The diagnostic code and the exception class it must re-raise (`TL104`, `TypeError`).
    pub code: String,
    pub class: String,
    /// The first line of the diagnostic's message.
    pub message: String,
    /// The user's file as the reproducer names it, and the line of the error.
    pub file_label: String,
    pub error_line: u32,
    pub fn_name: String,
    /// The function's definition and the call that traced it, each with its file.
    pub def_line: u32,
    pub def_file: String,
    pub consts: Vec<Input>,
    pub params: Vec<Input>,
    pub body: Vec<Line>,
    pub wrap: Wrap,
    pub call_line: u32,
    pub call_file: String,
    /// What the function returns (a staged-out trace, `--function`); `None` when the program
    /// ends at the failing statement.
    pub returns: Option<Vec<Expr>>,
    /// The error is raised by the call itself (`jax.grad` of a function whose output is not
    /// a scalar): the call is the failing line and every statement may go.
    pub error_at_call: bool,
    /// Functions the body passes to JAX APIs (`lax.scan`'s body, `lax.cond`'s branches),
    /// each the trace the API made of the user's function, written before this one.
    pub helpers: Vec<Program>,
    /// Take every parameter, used or not (a helper is called by the API with all of them).
    pub keep_params: bool,
    /// A helper's parameters as the user's function takes them, each with the leaves read
    /// from it and their index paths (`params` -> `params_w = params['w']`); `None` when the
    /// parameters are `params` themselves.
    pub signature: Option<Vec<(String, Vec<(String, String)>)>>,
    /// The names a helper reads from the function that passes it (a closure, the seed's
    /// `g7`): it is written inside that function, right before the line that passes it.
    /// Empty for a helper written at the top level.
    pub free: Vec<String>,
    /// The named dimensions of an analysis seeded with them (`crate::symbolic`), each with
    /// the size it stood for: an input with one of these sizes is passed to `lower` as
    /// `jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 3"), ...)`, so JAX raises with
    /// the names, as it did for the user. Empty: every input is a concrete array.
    pub symbolic: Vec<(String, usize)>,
}

/// What the header says about how the program was reduced.
#[derive(Clone, Debug)]
pub enum Reduction {
    /// Not delta-debugged (`--unreduced`).
    None,
    /// Minimised: code lines of the unreduced program, engine runs spent, and whether the
    /// search stopped on its budget.
    Minimised { lines_before: usize, runs: usize, cut_short: bool },
}

/// Written text and which emitted line (0-based) stands for which user line (1-based).
#[derive(Clone, Debug)]
pub struct Rendered {
    pub text: String,
    pub links: Vec<(usize, u32)>,
    /// The 0-based emitted line of the failing statement.
    pub failing_line: usize,
}

impl Program {
    /// The names the body reads, in order of first use.
    pub fn used_names(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let returned = self.returns.iter().flatten();
        for e in self.body.iter().flat_map(|l| l.args.iter().chain(l.kwargs.iter().map(|(_, e)| e))).chain(returned) {
            {
                e.names(&mut |n| {
                    if seen.insert(n.to_string()) {
                        out.push(n.to_string());
                    }
                });
            }
        }
        for n in self.helpers.iter().flat_map(|h| h.free.iter()) {
            if seen.insert(n.clone()) {
                out.push(n.clone());
            }
        }
        out
    }

    /// The parameters the emitted function takes: the ones the body uses (and, under `grad`,
    /// always the first, which is the one differentiated).
    fn live_params(&self) -> Vec<&Input> {
        let used = self.used_names();
        self.params
            .iter()
            .enumerate()
            .filter(|(i, p)| self.keep_params || used.contains(&p.name) || (*i == 0 && matches!(self.wrap, Wrap::Grad | Wrap::JitGrad)))
            .map(|(_, p)| p)
            .collect()
    }

    /// Non-blank lines that are not comments: the size the header and the conformance
    /// suite count.
    pub fn code_lines(&self) -> usize {
        code_lines(&render_body(self, &[]).text)
    }

    /// Renames names (constants) everywhere they appear.
    pub fn rename(&mut self, renames: &[(String, String)]) {
        for c in self.consts.iter_mut() {
            if let Some((_, to)) = renames.iter().find(|(from, _)| *from == c.name) {
                c.name = to.clone();
            }
        }
        let exprs = self.body.iter_mut().flat_map(|l| l.args.iter_mut().chain(l.kwargs.iter_mut().map(|(_, e)| e)));
        for e in exprs.chain(self.returns.iter_mut().flatten()) {
            e.rename(renames);
        }
    }

    /// The call that traces the function: `jax.jit(f)(np.ones((8, 4), np.float32), ...)`;
    /// with named dimensions, `jax.jit(f).lower(jax.ShapeDtypeStruct((b, 3), np.float32))`.
    fn call_text(&self, fn_name: &str) -> String {
        let live = self.live_params();
        if self.wrap == Wrap::TfFunction {
            return format!("{fn_name}({})", live.iter().map(|x| tf::tensor(x)).collect::<Vec<_>>().join(", "));
        }
        let args: Vec<String> = live.iter().map(|x| self.symbolic_value_of(x).unwrap_or_else(|| value_of(x))).collect();
        let symbolic = !self.symbolic_names().is_empty();
        let call = match self.wrap {
            Wrap::Jit => format!("jax.jit({fn_name})"),
            // Shapes with names exist only where JAX stages out (`lower`): under jit.
            Wrap::Grad if !symbolic => format!("jax.grad({fn_name})"),
            Wrap::Grad | Wrap::JitGrad | Wrap::TfFunction => format!("jax.jit(jax.grad({fn_name}))"),
        };
        let lower = if symbolic { ".lower" } else { "" };
        format!("{call}{lower}({})", args.join(", "))
    }

    pub fn render(&self, reduction: &Reduction, regenerate: &str) -> Rendered {
        let lines_after = self.code_lines();
        let mut header = vec![
            format!("tracelens reproducer for {} at {}:{}", self.code, self.file_label, self.error_line),
            format!("original error: {}", self.message),
            format!("raises under {}: {}", if self.wrap == Wrap::TfFunction { "TensorFlow" } else { "JAX" }, self.class),
        ];
        match reduction {
            Reduction::None => header.push(format!("unreduced: {lines_after} lines")),
            Reduction::Minimised { lines_before, runs, cut_short } => {
                header.push(format!("minimised: {lines_before} → {lines_after} lines ({})", minimise::Budget::note(*runs, *cut_short)))
            }
        }
        header.push(format!("regenerate: {regenerate}"));
        render_body(self, &header)
    }
}

/// A line's own file, or the program's when it has none recorded.
fn or_label<'a>(file: &'a str, program: &'a str) -> &'a str {
    if file.is_empty() {
        program
    } else {
        file
    }
}

pub fn code_lines(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')).count()
}

fn render_body(p: &Program, header: &[String]) -> Rendered {
    let mut text = String::new();
    for h in header {
        let _ = writeln!(text, "# {h}");
    }
    let imports_at = text.len();
    let block = render_block(p, &p.fn_name, true, None, &mut Vec::new());
    let mut links = Vec::new();
    let offset = text.lines().count();
    text.push_str(&block.text);
    links.extend(block.links.iter().map(|(l, u)| (l + offset, *u)));
    finish(text, imports_at, links, block.failing_line + offset, p.wrap == Wrap::TfFunction)
}

/// Every trace of one function as one program (`tracelens repro --function`): for each
/// trace, its constants, its definition (a body identical to an earlier one is not written
/// again) and its call, bound to `out1`, `out2`, ...
pub fn render_collection(programs: &[(Program, Vec<String>)], header: &[String]) -> Rendered {
    let mut text = String::new();
    for h in header {
        let _ = writeln!(text, "# {h}");
    }
    let imports_at = text.len();
    let mut links = Vec::new();
    let mut defined: Vec<(String, String)> = Vec::new();
    let mut helpers_written = Vec::new();
    for (i, (p, outputs)) in programs.iter().enumerate() {
        // A trace made under `grad` is staged as the function it traced: the outputs written
        // under its call are its own, not its gradient's (which `jax.grad` would return). Its
        // definition, compared below, is then the one written.
        let staged;
        let p = if matches!(p.wrap, Wrap::Grad | Wrap::JitGrad) {
            staged = Program { wrap: Wrap::Jit, ..p.clone() };
            &staged
        } else {
            p
        };
        // The definition under a placeholder name, to compare bodies.
        let probe = render_def(p, "__tracelens_fn__", &Layout::of(p)).text;
        let existing = defined.iter().find(|(_, t)| *t == probe).map(|(n, _)| n.clone());
        let define = existing.is_none();
        let name = match existing {
            Some(n) => n,
            None => {
                let base = p.fn_name.clone();
                let taken = |n: &str| defined.iter().any(|(d, _)| d == n);
                let n = if taken(&base) { (2..).map(|k| format!("{base}_{k}")).find(|n| !taken(n)).unwrap_or(base) } else { base };
                defined.push((n.clone(), probe));
                n
            }
        };
        let block = render_block(p, &name, define, Some((i + 1, outputs)), &mut helpers_written);
        let offset = text.lines().count();
        text.push_str(&block.text);
        links.extend(block.links.iter().map(|(l, u)| (l + offset, *u)));
    }
    finish(text, imports_at, links, 0, programs.iter().any(|(p, _)| p.wrap == Wrap::TfFunction))
}

/// One program's constants, definition (when `define`) and call, as text starting at line 0.
/// A helper whose text is in `helpers_written` is not written again.
fn render_block(
    p: &Program,
    fn_name: &str,
    define: bool,
    bind: Option<(usize, &Vec<String>)>,
    helpers_written: &mut Vec<String>,
) -> Rendered {
    let mut text = String::new();
    let mut links = Vec::new();
    let used = p.used_names();
    let consts: Vec<&Input> = p.consts.iter().filter(|c| used.contains(&c.name)).collect();
    for c in &consts {
        let _ = writeln!(text, "{} = {}", c.name, value_in(p, c));
    }
    let label = &p.file_label;
    let mut failing_line = 0;
    if define {
        // Every helper that reads nothing of a function around it, however deep it was
        // passed, is written at the top level (the seed's "as high as its free variables
        // allow"); a helper the minimiser left unused is not written.
        let layout = Layout::of(p);
        for h in &layout.hoisted {
            let offset = text.lines().count();
            let block = render_helper(h, helpers_written, &layout);
            text.push_str(&block.text);
            links.extend(block.links.iter().map(|(l, u)| (l + offset, *u)));
        }
        let offset = text.lines().count();
        let def = render_def(p, fn_name, &layout);
        text.push_str(&def.text);
        links.extend(def.links.iter().map(|(l, u)| (l + offset, *u)));
        failing_line = def.failing_line + offset;
    }
    let call = p.call_text(fn_name);
    let label = or_label(&p.call_file, label);
    if let Some(declaration) = p.symbolic_declaration() {
        let _ = write!(text, "\n{declaration}");
    }
    match bind {
        Some((k, outputs)) => {
            let _ = writeln!(text, "\nout{k} = {call}  # {label}:{}", p.call_line);
            links.push((text.lines().count() - 1, p.call_line));
            let _ = writeln!(text, "# out{k}: {}", outputs.join(", "));
        }
        None => {
            let _ = writeln!(text, "\n{call}  # {label}:{}", p.call_line);
            links.push((text.lines().count() - 1, p.call_line));
        }
    }
    if p.error_at_call {
        failing_line = text.lines().count() - 1;
    }
    Rendered { text, links, failing_line }
}

/// The helpers written at the top level: every helper reachable from `p` through the
/// helpers that use it, that reads nothing of a function around it (`free` is empty), the
/// ones it uses first. One whose name another of them has with a different text stays where
/// it is used (names are unique along one chain of functions, not across chains).
fn hoisted(p: &Program) -> Vec<&Program> {
    fn walk<'a>(p: &'a Program, out: &mut Vec<&'a Program>) {
        let used = p.used_names();
        for h in p.helpers.iter().filter(|h| used.contains(&h.fn_name)) {
            walk(h, out);
            if h.free.is_empty() {
                out.push(h);
            }
        }
    }
    let mut all = Vec::new();
    walk(p, &mut all);
    // `p`'s own helpers first: they have nowhere else to be written.
    let direct = |h: &Program| p.helpers.iter().any(|x| std::ptr::eq(x, h));
    let order = all.clone();
    let mut out: Vec<&Program> = all.iter().copied().filter(|h| direct(h)).collect();
    for h in all.into_iter().filter(|h| !direct(h)) {
        // The same function again is taken (its text is written once); another function
        // of the same name is not.
        if out.iter().all(|o| o.fn_name != h.fn_name || *o == h) {
            out.push(h);
        }
    }
    // In the order they were found: what a helper uses before it.
    out.sort_by_key(|h| order.iter().position(|o| std::ptr::eq(*o, *h)));
    out
}

/// Where the helpers of one program are written.
struct Layout<'a> {
    /// At the top level (`hoisted`).
    hoisted: Vec<&'a Program>,
    /// Every closure (a helper that reads names of a function around it), the function it is
    /// written in, and the closure of that function it is written right before (itself when
    /// it is written in the function that passes it). A closure is written in the innermost
    /// function around it that binds a name it reads (the seed's `g7`): as high as its free
    /// variables allow.
    lifted: Vec<(&'a Program, &'a Program, &'a Program)>,
}

impl<'a> Layout<'a> {
    fn of(p: &'a Program) -> Self {
        fn place<'a>(p: &'a Program, chain: &mut Vec<&'a Program>, out: &mut Vec<(&'a Program, &'a Program, &'a Program)>) {
            let used = p.used_names();
            for h in p.helpers.iter().filter(|h| used.contains(&h.fn_name)) {
                if h.free.is_empty() {
                    // Reads nothing around it: its closures read at most its own names.
                    place(h, &mut vec![h], out);
                    continue;
                }
                chain.push(h);
                // `chain` ends with `p`, then `h`: the innermost function before `h` that
                // binds one of its names.
                let level = (0..chain.len() - 1).rev().find(|&i| h.free.iter().any(|n| binds(chain[i], n))).unwrap_or(chain.len() - 2);
                out.push((h, chain[level], chain[level + 1]));
                place(h, chain, out);
                chain.pop();
            }
        }
        let mut lifted = Vec::new();
        place(p, &mut vec![p], &mut lifted);
        Layout { hoisted: hoisted(p), lifted }
    }

    /// The function a closure is written in.
    fn host(&self, h: &Program) -> Option<&'a Program> {
        self.lifted.iter().find(|(d, _, _)| std::ptr::eq(*d, h)).map(|(_, host, _)| *host)
    }
}

/// Does `p` bind the name `n` (`v1` for `v1[0]['w']`): a parameter, a leaf its signature
/// reads, a line's target.
fn binds(p: &Program, n: &str) -> bool {
    let base = n.split('[').next().unwrap_or(n);
    p.params.iter().any(|x| x.name == base)
        || p.signature.iter().flatten().any(|(arg, leaves)| arg == base || leaves.iter().any(|(leaf, _)| leaf == base))
        || p.body.iter().any(|l| l.target.as_deref() == Some(base))
}

/// A helper's own helpers that are not hoisted, constants and definition; nothing when the
/// same text was written before (identical bodies are written once).
fn render_helper(h: &Program, helpers_written: &mut Vec<String>, layout: &Layout<'_>) -> Rendered {
    let mut text = String::new();
    let mut links = Vec::new();
    let used = h.used_names();
    let in_place = |x: &&Program| x.free.is_empty() && used.contains(&x.fn_name) && !layout.hoisted.iter().any(|o| std::ptr::eq(*o, *x));
    for inner in h.helpers.iter().filter(in_place) {
        let offset = text.lines().count();
        let block = render_helper(inner, helpers_written, layout);
        text.push_str(&block.text);
        links.extend(block.links.iter().map(|(l, u)| (l + offset, *u)));
    }
    let mut own = String::new();
    for c in h.consts.iter().filter(|c| used.contains(&c.name)) {
        let _ = writeln!(own, "{} = {}", c.name, value_in(h, c));
    }
    let def = render_def(h, &h.fn_name, layout);
    own.push_str(&def.text);
    if helpers_written.contains(&own) {
        return Rendered { text, links, failing_line: 0 };
    }
    helpers_written.push(own.clone());
    let offset = text.lines().count() + own.lines().count() - def.text.lines().count();
    text.push_str(&own);
    links.extend(def.links.iter().map(|(l, u)| (l + offset, *u)));
    Rendered { text, links, failing_line: 0 }
}

/// The definition of the program's function under `fn_name`, starting with a blank line.
fn render_def(p: &Program, fn_name: &str, layout: &Layout<'_>) -> Rendered {
    let mut text = String::new();
    let mut links = Vec::new();
    let mut failing_line = 0;
    let label = &p.file_label;
    let params = p.live_params();
    let names: Vec<&str> = params.iter().map(|x| x.name.as_str()).collect();
    let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    if let Some(signature) = &p.signature {
        // Trailing parameters with no array in them may have been left to their defaults
        // (which the body has inlined): they default to `None`.
        let given = signature.iter().rposition(|(_, leaves)| !leaves.is_empty()).map_or(0, |i| i + 1);
        names = signature.iter().enumerate().map(|(i, (n, _))| if i < given { n.clone() } else { format!("{n}=None") }).collect();
    }
    // The traced function is decorated; a function it passes to an op (with its signature)
    // is traced by that op, as the user's was.
    let decorated = p.wrap == Wrap::TfFunction && p.signature.is_none();
    let decorator = if decorated { format!("\n{}", tf::decorator(p, &params)) } else { String::new() };
    let _ = writeln!(text, "{decorator}\ndef {fn_name}({}):  # {}:{}", names.join(", "), or_label(&p.def_file, label), p.def_line);
    links.push((text.lines().count() - 1, p.def_line));
    let used = p.used_names();
    for (arg, leaves) in p.signature.iter().flatten() {
        for (leaf, path) in leaves.iter().filter(|(leaf, path)| used.contains(leaf) && (leaf != arg || !path.is_empty())) {
            let _ = writeln!(text, "    {leaf} = {arg}{path}");
        }
    }
    let mut nested_written: Vec<&str> = Vec::new();
    for line in &p.body {
        // A closure is written inside, right before the line that passes it, after the
        // closures further in that read only names of this function (lifted here).
        for h in p.helpers.iter().filter(|h| !h.free.is_empty() && layout.host(h).is_some_and(|host| std::ptr::eq(host, p))) {
            // Passed by name, or in a list, tuple or dict (`tf.switch_case`'s branches).
            let passes = |a: &Expr| {
                let mut found = false;
                a.names(&mut |n| found |= n == h.fn_name);
                found
            };
            if nested_written.contains(&h.fn_name.as_str()) || !line.args.iter().any(passes) {
                continue;
            }
            nested_written.push(&h.fn_name);
            let lifted =
                layout.lifted.iter().filter(|(d, host, before)| std::ptr::eq(*host, p) && std::ptr::eq(*before, h) && !std::ptr::eq(*d, h));
            for d in lifted.map(|(d, _, _)| *d).chain([h]) {
                let block = render_helper(d, &mut Vec::new(), layout);
                // One blank line between two functions written one after the other.
                let skip_first = block.text.starts_with('\n') && text.ends_with("\n\n");
                let offset = text.lines().count() - usize::from(skip_first);
                for row in block.text.lines().skip(usize::from(skip_first)) {
                    if row.is_empty() {
                        text.push('\n');
                    } else {
                        let _ = writeln!(text, "    {row}");
                    }
                }
                links.extend(block.links.iter().map(|(l, u)| (l + offset, *u)));
            }
        }
        let code = render_line(line);
        let mut rows = code.lines();
        // What a converted statement binds before it comes first; its own line is linked.
        let head = if let Op::Converted(c) = &line.op { c.before.len() } else { 0 };
        rows.by_ref().take(head).for_each(|row| text.push_str(&format!("    {row}\n")));
        let first = rows.next().unwrap_or("");
        let _ = writeln!(text, "    {first}  # {}:{}", or_label(&line.file, label), line.user_line);
        failing_line = text.lines().count() - 1;
        links.push((failing_line, line.user_line));
        for row in rows {
            let _ = writeln!(text, "    {row}");
        }
    }
    if p.body.is_empty() && p.returns.is_none() {
        text.push_str("    pass\n");
    }
    if let Some(returns) = &p.returns {
        let _ = writeln!(text, "    return {}", returns_text(returns));
    }
    text.push('\n');
    Rendered { text, links, failing_line }
}

/// Puts the imports the program needs at `imports_at`: `jax` always (`tensorflow` instead for
/// a TensorFlow program), the others when used.
fn finish(mut text: String, imports_at: usize, mut links: Vec<(usize, u32)>, failing_line: usize, tensorflow: bool) -> Rendered {
    let program = &text[imports_at..];
    let mut imports = String::from(if tensorflow { "import tensorflow as tf\n" } else { "import jax\n" });
    for (prefix, line) in [
        ("functools.", "import functools\n"),
        ("jnp.", "import jax.numpy as jnp\n"),
        ("np.", "import numpy as np\n"),
        ("lax.", "from jax import lax\n"),
    ] {
        if program.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')).any(|w| w.starts_with(prefix)) {
            imports.push_str(line);
        }
    }
    imports.push('\n');
    let added = imports.lines().count();
    text.insert_str(imports_at, &imports);
    for (line, _) in links.iter_mut() {
        *line += added;
    }
    Rendered { text, links, failing_line: failing_line + added }
}

fn returns_text(returns: &[Expr]) -> String {
    match returns {
        [] => "()".to_string(),
        [one] => one.render(),
        many => many.iter().map(Expr::render).collect::<Vec<_>>().join(", "),
    }
}

/// A constant's value as the program's library writes it.
fn value_in(p: &Program, input: &Input) -> String {
    if p.wrap == Wrap::TfFunction {
        tf::tensor(input)
    } else {
        value_of(input)
    }
}

/// A parameter's or constant's value: its literal, a Python scalar for a weakly typed
/// scalar (JAX traces it as the same weak aval), or `np.ones`.
fn value_of(input: &Input) -> String {
    if let Some(l) = &input.literal {
        return l.clone();
    }
    let a = &input.aval;
    // A typed PRNG key array: keys made by JAX (raw `uint32` data is a legacy key, which a
    // function taking typed keys does not accept the same way).
    if a.dtype.is_key() {
        return match a.shape.as_slice() {
            [] => "jax.random.key(0)".into(),
            [n] => format!("jax.random.split(jax.random.key(0), {n})"),
            _ => format!("jax.random.split(jax.random.key(0), {})", a.shape_tuple()),
        };
    }
    if a.weak && a.shape.is_empty() {
        match a.dtype {
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => return "1.0".into(),
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => return "1".into(),
            DType::C64 | DType::C128 => return "1j".into(),
            _ => {}
        }
    }
    np_ones(a)
}

/// A result's aval as JAX prints it (`f32[3]`, `key<fry>[]`).
pub fn result_aval(aval: &Aval) -> String {
    aval.short()
}

pub fn np_ones(aval: &Aval) -> String {
    format!("np.ones({}, {})", aval.shape_tuple(), np_dtype(aval.dtype))
}

/// The dtype as the reproducer's imports spell it (NumPy has no bfloat16).
pub fn np_dtype(dtype: DType) -> String {
    match dtype {
        DType::BF16 => "jnp.bfloat16".into(),
        DType::Bool => "np.bool_".into(),
        d => format!("np.{}", d.name()),
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod key_tests {
    use super::*;

    fn input(aval: Aval) -> Input {
        Input { name: "x".into(), aval, literal: None }
    }

    fn keys_are_passed_as_keys_and_uint32_as_uint32() {
        assert_eq!(value_of(&input(Aval::scalar(DType::Key))), "jax.random.key(0)");
        assert_eq!(value_of(&input(Aval::new(&[4], DType::Key))), "jax.random.split(jax.random.key(0), 4)");
        assert_eq!(value_of(&input(Aval::new(&[2, 3], DType::Key))), "jax.random.split(jax.random.key(0), (2, 3))");
        assert_eq!(value_of(&input(Aval::scalar(DType::U32))), "np.ones((), np.uint32)");
        assert_eq!(value_of(&input(Aval::new(&[2], DType::U32))), "np.ones((2,), np.uint32)");
        assert_eq!(result_aval(&Aval::scalar(DType::Key)), "key<fry>[]");
        assert_eq!(result_aval(&Aval::scalar(DType::U32)), "u32[]");
    }

    crate::unit_tests::list![keys_are_passed_as_keys_and_uint32_as_uint32];
}
