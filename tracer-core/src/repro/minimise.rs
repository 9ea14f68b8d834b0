//! Delta debugging of a reproducer (Zeller's ddmin) with tracelens' own engine as the
//! oracle: a candidate is kept when tracing it still raises the same diagnostic code,
//! exception class and message (its first line, with the user's shapes) at its failing line. Reduces, in order: statements (a dropped statement
//! whose result is still used becomes a parameter of the same aval), call arguments
//! (keyword arguments, trailing positional arguments, elements of tuples, lists and dicts),
//! then array shapes (each distinct axis size, everywhere at once, to 1 or to a smaller size
//! that no other axis has, so equal axes stay equal and different ones different).

use std::time::{Duration, Instant};

use super::oracle::Kept;
use super::{Expr, Input, Op, Oracle, OracleLimits, Program};
use crate::jax::aval::Aval;

/// Limits on the search: every step is one run of the engine on a candidate program.
#[derive(Clone, Debug)]
pub struct MinimiseConfig {
    pub max_runs: usize,
    /// Wall-clock time for the whole search, after the run that checks the unreduced
    /// program; when it is spent the smallest program found so far is the result.
    pub max_time: Duration,
}

impl Default for MinimiseConfig {
    fn default() -> Self {
        MinimiseConfig { max_runs: 200, max_time: Duration::from_secs(5) }
    }
}

pub struct Minimised {
    pub program: Program,
    /// Engine runs spent (the first checks the unreduced program).
    pub runs: usize,
    /// False when the engine does not re-raise the error on the unreduced program (which is
    /// then returned as it was, and should not be offered).
    pub verified: bool,
    /// The search stopped on its budget (runs or time), not because nothing more goes.
    pub cut_short: bool,
}

/// What a search may still spend, shared by both minimisers (this one and
/// `source::minimise`): engine runs, and time. Each run gets its own limits cut to the time
/// left, so no single candidate outlasts the search.
pub struct Budget {
    pub runs: usize,
    max_runs: usize,
    max_time: Duration,
    /// Set by the first run (the unreduced program's check, which has its full limits).
    deadline: Option<Instant>,
    pub cut_short: bool,
}

impl Budget {
    pub fn new(config: &MinimiseConfig) -> Budget {
        Budget { runs: 0, max_runs: config.max_runs.max(1), max_time: config.max_time, deadline: None, cut_short: false }
    }

    pub fn exhausted(&mut self) -> bool {
        let out_of_time = self.deadline.is_some_and(|d| Instant::now() >= d);
        if self.runs >= self.max_runs || out_of_time {
            self.cut_short = true;
        }
        self.cut_short
    }

    /// Takes one run: its limits (`limits` cut to the time left), or `None` when spent.
    pub fn take(&mut self, limits: &OracleLimits) -> Option<OracleLimits> {
        if self.exhausted() {
            return None;
        }
        self.runs += 1;
        let mut limits = limits.clone();
        match self.deadline {
            // The check of the unreduced program has its full limits, unless the whole search
            // was given less time than that.
            None => {
                limits.max_time = limits.max_time.min(self.max_time.max(Duration::from_millis(100)));
                self.deadline = Some(Instant::now() + self.max_time);
            }
            Some(d) => limits.max_time = limits.max_time.min(d.saturating_duration_since(Instant::now())),
        }
        Some(limits)
    }

    /// The words a reproducer's header adds when the search was cut short.
    pub fn note(runs: usize, cut_short: bool) -> String {
        if cut_short {
            format!("{runs} tracelens runs as the oracle; stopped at its budget, smaller may exist")
        } else {
            format!("{runs} tracelens runs as the oracle")
        }
    }
}

/// The oracle with the runs it was asked for counted, and the error it must keep raising.
struct Counted<'o> {
    budget: Budget,
    oracle: &'o dyn Oracle,
    kept: Kept,
}

impl Counted<'_> {
    fn exhausted(&mut self) -> bool {
        self.budget.exhausted()
    }

    /// Does tracing `p` raise `p.code` with `p.class` at its failing line, with the message
    /// the unreduced program raises (a smaller axis must not turn "got (8,) and (4,)" into
    /// "got (2,) and (1,)")?
    fn reproduces(&mut self, p: &Program) -> bool {
        match self.budget.take(&LIMITS) {
            Some(limits) => self.kept.holds(raised(p, self.oracle, &limits).iter()),
            None => false,
        }
    }
}

/// Does tracing `p` raise its error with `p.message` as the first line of the message?
pub fn reproduces_message(p: &Program, oracle: &dyn Oracle) -> bool {
    raised(p, oracle, &LIMITS).iter().any(|e| e.message.lines().next() == Some(p.message.as_str()))
}

/// One engine run on the program's text: the verdict the minimiser and the tests share.
pub fn reproduces(p: &Program, oracle: &dyn Oracle) -> bool {
    reproduces_with(p, oracle, &LIMITS)
}

const LIMITS: OracleLimits = OracleLimits { max_time: Duration::from_millis(300), max_steps: Some(200_000), module_only: false };

fn reproduces_with(p: &Program, oracle: &dyn Oracle, limits: &OracleLimits) -> bool {
    !raised(p, oracle, limits).is_empty()
}

/// The errors tracing `p` raises at its failing line with its code and class.
fn raised(p: &Program, oracle: &dyn Oracle, limits: &OracleLimits) -> Vec<super::RaisedError> {
    let rendered = p.render(&super::Reduction::None, "");
    let failing = rendered.failing_line as u32 + 1;
    oracle.errors(&rendered.text, limits).into_iter().filter(|e| e.is(failing, &p.code, &p.class)).collect()
}

pub fn minimise(program: &Program, config: &MinimiseConfig, oracle: &dyn Oracle) -> Minimised {
    let mut oracle = Counted { budget: Budget::new(config), oracle, kept: Kept::default() };
    if (program.body.is_empty() && !program.error_at_call) || !oracle.reproduces(program) {
        return Minimised { program: program.clone(), runs: oracle.budget.runs, verified: false, cut_short: false };
    }
    let mut best = program.clone();
    best = reduce_statements(&best, &mut oracle);
    best = reduce_arguments(&best, &mut oracle);
    best = reduce_statements(&best, &mut oracle);
    best = reduce_helpers(&best, &mut oracle);
    best = reduce_shapes(&best, &mut oracle);
    Minimised { program: best, runs: oracle.budget.runs, verified: true, cut_short: oracle.budget.cut_short }
}

/// The program keeping only the statements in `keep` (indices into all but the last) and
/// the failing one; dropped statements whose results are still read become parameters.
/// `None` when a dropped result is read but has no single-array aval to stand for it.
fn keep_statements(p: &Program, keep: &[usize]) -> Option<Program> {
    // The failing statement stays, unless the call itself fails.
    let last = if p.error_at_call { usize::MAX } else { p.body.len() - 1 };
    drop_statements(p, keep, last, false)
}

/// The program keeping the statements in `keep` and the one at `last`; dropped statements
/// whose results are still read become parameters, or, for a helper (`as_constants`: JAX
/// calls it with the arguments it takes, so it can take no more), constants of the same
/// aval named after the helper (`body_fun_lo`).
fn drop_statements(p: &Program, keep: &[usize], last: usize, as_constants: bool) -> Option<Program> {
    let mut out = p.clone();
    out.body = p.body.iter().enumerate().filter(|(i, _)| *i == last || keep.contains(i)).map(|(_, l)| l.clone()).collect();
    let mut read = Vec::new();
    let returned = out.returns.iter().flatten();
    for e in out.body.iter().flat_map(|l| l.args.iter().chain(l.kwargs.iter().map(|(_, e)| e))).chain(returned) {
        e.names(&mut |n| read.push(n.to_string()));
    }
    // What the closures written inside read.
    read.extend(out.helpers.iter().flat_map(|h| h.free.iter().cloned()));
    let mut renames = Vec::new();
    for (i, l) in p.body.iter().enumerate() {
        if i == last || keep.contains(&i) {
            continue;
        }
        let Some(target) = &l.target else { continue };
        // The arrays of a pytree result that are read (`v1[0]`) become parameters `v1_0`.
        let mut stand_in = |name: String, aval: Aval, from: &String| -> Option<()> {
            if as_constants {
                // A closure written inside reads the name itself: it stays.
                if out.helpers.iter().any(|h| h.free.contains(from)) {
                    return None;
                }
                let name = format!("{}_{name}", p.fn_name);
                out.consts.push(Input { name: name.clone(), aval, literal: None });
                renames.push((from.clone(), name));
            } else {
                out.params.push(Input { name: name.clone(), aval, literal: None });
                if name != *from {
                    renames.push((from.clone(), name));
                }
            }
            Some(())
        };
        for (leaf, aval) in l.out_leaves.iter().filter(|(leaf, _)| read.contains(leaf)) {
            let name: String = leaf.chars().filter(|c| !"'\"]".contains(*c)).map(|c| if c == '[' { '_' } else { c }).collect();
            if !name.chars().all(|c| c.is_alphanumeric() || c == '_') || read.contains(&name) {
                return None;
            }
            stand_in(name, aval.clone(), leaf)?;
        }
        if !read.contains(target) {
            continue;
        }
        let aval = l.out.clone()?;
        stand_in(target.clone(), aval, target)?;
    }
    out.rename(&renames);
    Some(out)
}

fn reduce_statements(p: &Program, oracle: &mut Counted) -> Program {
    let removable = if p.error_at_call { p.body.len() } else { p.body.len().saturating_sub(1) };
    if removable == 0 {
        return p.clone();
    }
    let items: Vec<usize> = (0..removable).collect();
    let mut test = |keep: &[usize]| keep_statements(p, keep).is_some_and(|c| oracle.reproduces(&c));
    let kept = ddmin(items, &mut test);
    keep_statements(p, &kept).unwrap_or_else(|| p.clone())
}

/// The helper at `path` (indices into `helpers`, outermost first).
fn helper_at<'a>(p: &'a mut Program, path: &[usize]) -> Option<&'a mut Program> {
    match path.split_first() {
        None => Some(p),
        Some((&i, rest)) => helper_at(p.helpers.get_mut(i)?, rest),
    }
}

/// The paths of every helper the program writes, outermost first.
fn helper_paths(p: &Program, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    let used = p.used_names();
    for (i, h) in p.helpers.iter().enumerate() {
        if !used.contains(&h.fn_name) {
            continue;
        }
        prefix.push(i);
        out.push(prefix.clone());
        helper_paths(h, prefix, out);
        prefix.pop();
    }
}

/// Inside the functions passed to `lax.cond`, `lax.scan`, a transformation: statements (a
/// dropped statement whose result is still read or returned becomes a constant of its
/// aval), then call arguments. Under differentiation only the statements that do not depend
/// on the function's inputs go: JAX drops what a constant cuts from a derivative (a loop
/// whose carry no longer depends on its input is not differentiated at all), which the
/// oracle does not model; a statement that is already a constant of the inputs cuts nothing.
fn reduce_helpers(p: &Program, oracle: &mut Counted) -> Program {
    let under_derivative = differentiates(p);
    let mut best = p.clone();
    let mut paths = Vec::new();
    helper_paths(p, &mut Vec::new(), &mut paths);
    for path in paths {
        if oracle.exhausted() {
            break;
        }
        let Some(helper) = helper_at(&mut best.clone(), &path).map(|h| h.clone()) else { continue };
        let all: Vec<usize> = (0..helper.body.len()).collect();
        let items: Vec<usize> = if under_derivative { constant_statements(&helper) } else { all.clone() };
        if !items.is_empty() {
            let candidate = |keep: &[usize]| {
                let keep: Vec<usize> = all.iter().copied().filter(|i| !items.contains(i) || keep.contains(i)).collect();
                let reduced = drop_statements(&helper, &keep, usize::MAX, true)?;
                let mut c = best.clone();
                *helper_at(&mut c, &path)? = reduced;
                Some(c)
            };
            let mut test = |keep: &[usize]| candidate(keep).is_some_and(|c| oracle.reproduces(&c));
            let kept = ddmin(items.clone(), &mut test);
            if kept.len() < items.len() {
                if let Some(c) = candidate(&kept) {
                    best = c;
                }
            }
        }
        best = reduce_arguments_at(&best, &path, oracle);
    }
    best
}

/// The statements of a helper that depend neither on its parameters nor on what it reads
/// of the functions around it, nor pass a function on.
fn constant_statements(h: &Program) -> Vec<usize> {
    let base = |n: &str| n.split('[').next().unwrap_or(n).to_string();
    let mut inputs: Vec<String> = h.params.iter().map(|x| x.name.clone()).chain(h.free.iter().map(|n| base(n))).collect();
    for (arg, leaves) in h.signature.iter().flatten() {
        inputs.push(arg.clone());
        inputs.extend(leaves.iter().map(|(leaf, _)| leaf.clone()));
    }
    let helpers: Vec<&str> = h.helpers.iter().map(|x| x.fn_name.as_str()).collect();
    let mut out = Vec::new();
    for (i, l) in h.body.iter().enumerate() {
        let mut depends = matches!(l.op, Op::Transform(_));
        for e in l.args.iter().chain(l.kwargs.iter().map(|(_, e)| e)) {
            e.names(&mut |n| depends |= inputs.contains(&base(n)) || helpers.contains(&n));
        }
        match (&l.target, depends) {
            (Some(t), true) => inputs.push(t.clone()),
            (_, false) => out.push(i),
            _ => {}
        }
    }
    out
}

/// Does the program take a derivative anywhere (its call, or a transformation inside)?
fn differentiates(p: &Program) -> bool {
    const DIFFERENTIATING: &[&str] = &["grad", "jac", "hessian", "vjp", "jvp", "linearize"];
    matches!(p.wrap, super::Wrap::Grad | super::Wrap::JitGrad)
        || p.body.iter().any(|l| matches!(&l.op, Op::Transform(api) if DIFFERENTIATING.iter().any(|d| api.contains(d))))
        || p.helpers.iter().any(differentiates)
}

/// ddmin: a 1-minimal subset of `items` for which `test` holds (it holds for `items`).
/// Tries the empty set first: most failing statements need nothing before them once their
/// inputs are parameters.
pub(super) fn ddmin(mut items: Vec<usize>, test: &mut dyn FnMut(&[usize]) -> bool) -> Vec<usize> {
    if items.is_empty() || test(&[]) {
        return Vec::new();
    }
    let mut n = 2usize;
    while items.len() >= 2 {
        let chunk = items.len().div_ceil(n);
        let chunks: Vec<Vec<usize>> = items.chunks(chunk).map(|c| c.to_vec()).collect();
        let mut reduced = false;
        for c in &chunks {
            if c.len() < items.len() && test(c) {
                items = c.clone();
                n = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && chunks.len() > 2 {
            for c in &chunks {
                let complement: Vec<usize> = items.iter().copied().filter(|i| !c.contains(i)).collect();
                if test(&complement) {
                    items = complement;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= items.len() {
                break;
            }
            n = (2 * n).min(items.len());
        }
    }
    if items.len() == 1 && test(&[]) {
        return Vec::new();
    }
    items
}

/// Paths to the elements of containers inside an expression, deepest last.
fn container_paths(e: &Expr, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    let children: Vec<&Expr> = match e {
        Expr::Tuple(items) | Expr::List(items) => items.iter().collect(),
        Expr::Dict(items) => items.iter().map(|(_, x)| x).collect(),
        _ => return,
    };
    for (i, child) in children.into_iter().enumerate() {
        prefix.push(i);
        out.push(prefix.clone());
        container_paths(child, prefix, out);
        prefix.pop();
    }
}

/// Removes the element at `path` (non-empty) from the containers of `e`.
fn remove_at(e: &mut Expr, path: &[usize]) -> bool {
    let Some((&first, rest)) = path.split_first() else { return false };
    match e {
        Expr::Tuple(items) | Expr::List(items) => remove_in(items, first, rest, |x| x),
        Expr::Dict(items) => remove_in(items, first, rest, |(_, x)| x),
        _ => false,
    }
}

fn remove_in<T>(items: &mut Vec<T>, first: usize, rest: &[usize], child: impl Fn(&mut T) -> &mut Expr) -> bool {
    if !rest.is_empty() {
        return items.get_mut(first).is_some_and(|x| remove_at(child(x), rest));
    }
    if first >= items.len() {
        return false;
    }
    items.remove(first);
    true
}

/// One candidate edit of a call's arguments.
enum ArgEdit {
    Kwarg(usize),
    Positional(usize),
    Element { arg: usize, path: Vec<usize> },
}

fn edits_of(p: &Program, line: usize) -> Vec<ArgEdit> {
    let l = &p.body[line];
    // A transformed function takes its arguments whole, as the pytrees its helper reads; a
    // converted statement's values are one for each name it binds.
    if matches!(l.op, Op::Transform(_) | Op::Attr(_) | Op::AtUpdate(_) | Op::Converted(_)) {
        return Vec::new();
    }
    let mut edits: Vec<ArgEdit> = (0..l.kwargs.len()).rev().map(ArgEdit::Kwarg).collect();
    let first_droppable = match l.op {
        Op::Api(_) => 1,
        Op::Method(_) => 1,
        _ => usize::MAX,
    };
    if l.args.len() > first_droppable {
        edits.extend((first_droppable..l.args.len()).rev().map(ArgEdit::Positional));
    }
    for (i, a) in l.args.iter().enumerate() {
        let mut paths = Vec::new();
        container_paths(a, &mut Vec::new(), &mut paths);
        // Deepest and last first, so earlier paths stay valid after a removal.
        paths.sort_by(|a, b| b.cmp(a));
        edits.extend(paths.into_iter().map(|path| ArgEdit::Element { arg: i, path }));
    }
    edits
}

fn reduce_arguments(p: &Program, oracle: &mut Counted) -> Program {
    reduce_arguments_at(p, &[], oracle)
}

/// The call arguments of the function at `path` (the program's own for an empty path).
fn reduce_arguments_at(p: &Program, path: &[usize], oracle: &mut Counted) -> Program {
    let mut best = p.clone();
    let lines = helper_at(&mut best.clone(), path).map_or(0, |h| h.body.len());
    for line in 0..lines {
        let Some(edits) = helper_at(&mut best.clone(), path).map(|h| edits_of(h, line)) else { return best };
        for edit in edits {
            if oracle.exhausted() {
                return best;
            }
            let mut c = best.clone();
            let Some(l) = helper_at(&mut c, path).and_then(|h| h.body.get_mut(line)) else { return best };
            let changed = match edit {
                ArgEdit::Kwarg(k) if k < l.kwargs.len() => {
                    l.kwargs.remove(k);
                    true
                }
                ArgEdit::Positional(a) if a < l.args.len() => {
                    l.args.truncate(a);
                    true
                }
                ArgEdit::Element { arg, path } => l.args.get_mut(arg).is_some_and(|x| remove_at(x, &path)),
                _ => false,
            };
            if changed && oracle.reproduces(&c) {
                best = c;
            }
        }
    }
    best
}

/// Every axis size of the inputs the program reads.
fn sizes(p: &Program) -> Vec<usize> {
    let used = p.used_names();
    let mut out: Vec<usize> = p
        .params
        .iter()
        .chain(p.consts.iter())
        .filter(|i| used.contains(&i.name) && i.literal.is_none())
        .flat_map(|i| i.aval.shape.iter().copied())
        .collect();
    // The constants standing for statements dropped from helpers.
    let mut paths = Vec::new();
    helper_paths(p, &mut Vec::new(), &mut paths);
    let mut c = p.clone();
    for path in &paths {
        if let Some(h) = helper_at(&mut c, path) {
            let used = h.used_names();
            out.extend(
                h.consts.iter().filter(|i| used.contains(&i.name) && i.literal.is_none()).flat_map(|i| i.aval.shape.iter().copied()),
            );
        }
    }
    // A named dimension's size stands for its name: it is not a size to shrink.
    out.retain(|d| !p.symbolic.iter().any(|(_, size)| size == d));
    out.sort_unstable();
    out.dedup();
    out
}

fn with_size(p: &Program, from: usize, to: usize) -> Program {
    fn resize(i: &mut Input, from: usize, to: usize) {
        if i.literal.is_none() {
            for d in i.aval.shape.iter_mut() {
                if *d == from {
                    *d = to;
                }
            }
        }
    }
    let mut c = p.clone();
    c.params.iter_mut().chain(c.consts.iter_mut()).for_each(|i| resize(i, from, to));
    let mut paths = Vec::new();
    helper_paths(p, &mut Vec::new(), &mut paths);
    for path in &paths {
        if let Some(h) = helper_at(&mut c, path) {
            h.consts.iter_mut().for_each(|i| resize(i, from, to));
        }
    }
    c
}

fn reduce_shapes(p: &Program, oracle: &mut Counted) -> Program {
    let mut best = p.clone();
    loop {
        let mut changed = false;
        let all = sizes(&best);
        for &d in all.iter().rev() {
            if d <= 1 {
                continue;
            }
            let others: Vec<usize> = sizes(&best).into_iter().filter(|&s| s != d).collect();
            // 1 may be shared (an axis of 1 equals every other only by broadcasting, which
            // the oracle judges); other sizes must be new.
            for to in (1..d).filter(|&v| v == 1 || !others.contains(&v)).take(2) {
                if oracle.exhausted() {
                    return best;
                }
                let c = with_size(&best, d, to);
                if oracle.reproduces(&c) {
                    best = c;
                    changed = true;
                    break;
                }
            }
        }
        if !changed {
            return best;
        }
    }
}
