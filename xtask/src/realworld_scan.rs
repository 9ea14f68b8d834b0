//! What `cargo xtask realworld` reads from source text itself: notebooks turned into Python,
//! and the sites that apply a staging transformation (`jit`, `pmap`, `pjit`, `nnx.jit`,
//! `eqx.filter_jit`, `eqx.filter_pmap`), each tied to the function it transforms.
//!
//! The scan is lexical, not a parse: strings and comments are blanked out, the rest is split
//! into identifiers and punctuation, and a site is a transform name written as a decorator
//! (`@jax.jit`, `@partial(jax.jit, ...)`, `@nnx.jit(...)`) or called (`jax.jit(f)`,
//! `partial(jax.jit, ...)(f)`). Only staging transforms count: they are where JAX traces with
//! abstract values and where its trace-time errors happen; `vmap`/`grad` alone run eagerly.

use serde_json::Value;

/// The transform names counted, as written (a dotted chain); `true` for a library wrapper.
const STAGING: &[(&str, bool)] = &[
    ("jax.jit", false),
    ("jit", false),
    ("jax.pmap", false),
    ("pmap", false),
    ("pjit", false),
    ("pjit.pjit", false),
    ("jax.experimental.pjit.pjit", false),
    ("nnx.jit", true),
    ("flax.nnx.jit", true),
    ("eqx.filter_jit", true),
    ("equinox.filter_jit", true),
    ("filter_jit", true),
    ("eqx.filter_pmap", true),
    ("equinox.filter_pmap", true),
    ("filter_pmap", true),
];

/// Calls that wrap the function they are given, so `jit(grad(loss))` transforms `loss`.
const WRAPPERS: &[&str] = &[
    "partial",
    "grad",
    "value_and_grad",
    "vmap",
    "checkpoint",
    "remat",
    "jacfwd",
    "jacrev",
    "hessian",
    "filter_grad",
    "filter_value_and_grad",
    "filter_vmap",
    "shard_map",
    "custom_jvp",
    "custom_vjp",
];

/// haiku's transforms: their `init` and `apply` run the function they are given (through
/// `without_apply_rng`), so `jax.jit(model.apply)` transforms that function.
const HAIKU_TRANSFORMS: &[&str] = &["transform", "transform_with_state", "without_apply_rng"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A function defined with `def NAME` (or a method), at `line` when it is in this file.
    Def { name: String, line: Option<usize> },
    /// A `lambda` written at `line`.
    Lambda { line: usize },
    /// The result of calling a function defined in this file (`jit(make_train(config))`):
    /// whatever function is defined inside lines `start..=end`.
    Factory { name: String, start: usize, end: usize },
    /// Something the text does not tell (`jit(model.apply)` of a library class, `jit(fns[0])`).
    Unknown(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// 1-based line of the transform name.
    pub line: usize,
    /// The transform as written (`jax.jit`, `eqx.filter_jit`).
    pub transform: String,
    pub library: bool,
    pub decorator: bool,
    pub target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Punct(char),
}

struct Token {
    tok: Tok,
    line: usize,
    /// Indentation of the line the token is on (spaces, tabs count as 8).
    indent: usize,
}

/// The source with every string literal's and comment's characters replaced by spaces
/// (newlines kept), so that line numbers are unchanged.
pub fn mask(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
            continue;
        }
        if c == '"' || c == '\'' {
            let triple = i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c;
            let quote_len = if triple { 3 } else { 1 };
            for _ in 0..quote_len {
                out.push(c);
            }
            i += quote_len;
            while i < chars.len() {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    out.push(' ');
                    out.push(if chars[i + 1] == '\n' { '\n' } else { ' ' });
                    i += 2;
                    continue;
                }
                if chars[i] == c && (!triple || (i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c)) {
                    for _ in 0..quote_len {
                        out.push(c);
                    }
                    i += quote_len;
                    break;
                }
                if chars[i] == '\n' && !triple {
                    break;
                }
                out.push(if chars[i] == '\n' { '\n' } else { ' ' });
                i += 1;
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

fn tokens(masked: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for (index, text) in masked.lines().enumerate() {
        let line = index + 1;
        let indent = text.chars().take_while(|c| c.is_whitespace()).map(|c| if c == '\t' { 8 } else { 1 }).sum();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_alphabetic() || c == '_' {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push(Token { tok: Tok::Ident(chars[start..i].iter().collect()), line, indent });
                continue;
            }
            if c.is_ascii_digit() {
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '.' || chars[i] == '_') {
                    i += 1;
                }
                out.push(Token { tok: Tok::Punct('0'), line, indent });
                continue;
            }
            if !c.is_whitespace() && c != '\'' && c != '"' {
                out.push(Token { tok: Tok::Punct(c), line, indent });
            } else if c == '\'' || c == '"' {
                out.push(Token { tok: Tok::Punct('s'), line, indent });
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += 1;
                }
            }
            i += 1;
        }
    }
    out
}

fn ident(tokens: &[Token], i: usize) -> Option<&str> {
    match tokens.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    }
}

fn punct(tokens: &[Token], i: usize, c: char) -> bool {
    matches!(tokens.get(i).map(|t| &t.tok), Some(Tok::Punct(p)) if *p == c)
}

/// The dotted name starting at `i` and the index just past it.
fn chain(tokens: &[Token], i: usize) -> Option<(String, usize)> {
    let mut name = ident(tokens, i)?.to_string();
    let mut j = i + 1;
    while punct(tokens, j, '.') {
        let Some(next) = ident(tokens, j + 1) else { break };
        name.push('.');
        name.push_str(next);
        j += 2;
    }
    Some((name, j))
}

fn last_part(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The index of the bracket closing the one opened at `open`.
fn closing(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// Functions defined in the file: name, line of `def`, last line of its body (the line
/// before the next line that starts at the `def`'s indentation or less).
fn defs(tokens: &[Token]) -> Vec<(String, usize, usize)> {
    let line_starts: Vec<usize> = (0..tokens.len()).filter(|&j| j == 0 || tokens[j - 1].line != tokens[j].line).collect();
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        if ident(tokens, i) != Some("def") {
            continue;
        }
        let Some(name) = ident(tokens, i + 1) else { continue };
        let (line, indent) = (tokens[i].line, tokens[i].indent);
        let colon_line = tokens[i..].iter().find(|t| t.tok == Tok::Punct(':')).map_or(line, |t| t.line);
        let end = line_starts
            .iter()
            .find(|&&j| tokens[j].line > colon_line && tokens[j].indent <= indent)
            .map_or_else(|| tokens.last().map_or(line, |t| t.line), |&j| tokens[j - 1].line);
        out.push((name.to_string(), line, end.max(line)));
    }
    out
}

/// Every staging-transform site in `source`.
pub fn sites(source: &str) -> Vec<Site> {
    let tokens = tokens(&mask(source));
    let defs = defs(&tokens);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if i > 0 && punct(&tokens, i - 1, '.') {
            i += 1;
            continue;
        }
        let Some((name, after)) = chain(&tokens, i) else {
            i += 1;
            continue;
        };
        let Some(&(_, library)) = STAGING.iter().find(|(n, _)| *n == name) else {
            i = after;
            continue;
        };
        if i > 0 && matches!(ident(&tokens, i - 1), Some("def" | "class" | "import" | "as")) {
            i = after;
            continue;
        }
        // `partial(jax.jit, ...)`: the transform expression is the whole `partial(...)` call.
        let (start, end) = match enclosing_partial(&tokens, i) {
            Some((p_start, p_close)) => (p_start, p_close + 1),
            None => (i, after),
        };
        let line = tokens[i].line;
        let transform = name.clone();
        if start > 0 && punct(&tokens, start - 1, '@') {
            let end = if punct(&tokens, end, '(') { closing(&tokens, end).map_or(end, |c| c + 1) } else { end };
            let target = decorated(&tokens, end);
            out.push(Site { line, transform, library, decorator: true, target });
        } else if punct(&tokens, end, '(') {
            let target = argument(&tokens, end + 1, &defs, line);
            out.push(Site { line, transform, library, decorator: false, target });
        }
        i = after;
    }
    out
}

/// When the chain at `i` is the first argument of a `partial(` call: where that call's
/// name starts and where it closes.
fn enclosing_partial(tokens: &[Token], i: usize) -> Option<(usize, usize)> {
    if i < 2 || !punct(tokens, i - 1, '(') {
        return None;
    }
    let open = i - 1;
    let mut start = open.checked_sub(1)?;
    if ident(tokens, start) != Some("partial") {
        return None;
    }
    while start >= 2 && punct(tokens, start - 1, '.') && ident(tokens, start - 2).is_some() {
        start -= 2;
    }
    Some((start, closing(tokens, open)?))
}

/// The function a decorator ending before `from` decorates: the next `def` (or `class`).
fn decorated(tokens: &[Token], from: usize) -> Target {
    for j in from..tokens.len() {
        if let Some(kind @ ("def" | "class")) = ident(tokens, j) {
            if let Some(name) = ident(tokens, j + 1) {
                let _ = kind;
                return Target::Def { name: name.to_string(), line: Some(tokens[j].line) };
            }
        }
    }
    Target::Unknown("decorator without a def".to_string())
}

/// The function given as the first argument starting at token `at`, in a call on line
/// `site`; a name defined several times in the file is the last `def` above the call (the
/// one bound there when the call runs at module level), or else the first.
fn argument(tokens: &[Token], at: usize, defs: &[(String, usize, usize)], site: usize) -> Target {
    if ident(tokens, at) == Some("lambda") {
        return Target::Lambda { line: tokens[at].line };
    }
    let Some((name, after)) = chain(tokens, at) else {
        return Target::Unknown(tokens.get(at).map_or(String::new(), |t| format!("{:?}", t.tok)));
    };
    let last = last_part(&name).to_string();
    // `jax.jit(model.apply)` with `model = hk.transform(f)`, or `jax.jit(apply)` with
    // `init, apply = hk.without_apply_rng(hk.transform(f))`: the function is `f`.
    let transformed = match name.split_once('.') {
        Some((object, "apply" | "init")) if !object.contains('.') => Some(object),
        None => Some(name.as_str()),
        Some(_) => None,
    };
    if let Some(target) =
        transformed.and_then(|object| assignments(tokens, object, at).into_iter().find_map(|value| haiku_body(tokens, value, defs, site)))
    {
        return target;
    }
    if punct(tokens, after, '(') {
        if WRAPPERS.contains(&last.as_str()) {
            return argument(tokens, after + 1, defs, site);
        }
        if let Some((_, start, end)) = defs.iter().find(|(n, _, _)| *n == last) {
            return Target::Factory { name: last, start: *start, end: *end };
        }
        return Target::Unknown(format!("{name}(...)"));
    }
    if punct(tokens, after, '[') {
        return Target::Unknown(format!("{name}[...]"));
    }
    let named = || defs.iter().filter(|(n, _, _)| *n == last);
    let line = named().rfind(|(_, line, _)| *line < site).or_else(|| named().next()).map(|(_, line, _)| *line);
    if line.is_none() && name == last {
        // `predict = lambda x: ...` or `step = partial(train_step, model)` above the call:
        // the function is the one assigned.
        if let Some(value) = assigned(tokens, &last, at) {
            if let target @ (Target::Lambda { .. } | Target::Def { line: Some(_), .. } | Target::Factory { .. }) =
                argument(tokens, value, defs, site)
            {
                return target;
            }
        }
    }
    Target::Def { name: last, line }
}

/// The function a haiku transform expression at token `at` runs:
/// `hk.without_apply_rng(hk.transform(sample))` runs `sample`.
fn haiku_body(tokens: &[Token], at: usize, defs: &[(String, usize, usize)], site: usize) -> Option<Target> {
    let (name, after) = chain(tokens, at)?;
    let haiku = matches!(name.split_once('.'), Some(("hk" | "haiku", rest)) if HAIKU_TRANSFORMS.contains(&rest));
    if !haiku || !punct(tokens, after, '(') {
        return None;
    }
    if let Some(target) = haiku_body(tokens, after + 1, defs, site) {
        return Some(target);
    }
    match argument(tokens, after + 1, defs, site) {
        target @ (Target::Lambda { .. } | Target::Def { line: Some(_), .. } | Target::Factory { .. }) => Some(target),
        _ => None,
    }
}

/// The token just past `= ` of every statement before token `before` that binds `name`,
/// alone or unpacked (`name = ...`, `init, name = ...`), the nearest first.
fn assignments(tokens: &[Token], name: &str, before: usize) -> Vec<usize> {
    let starts_line = |j: usize| j == 0 || tokens[j - 1].line != tokens[j].line;
    (0..before.saturating_sub(2))
        .rev()
        .filter(|&i| ident(tokens, i) == Some(name))
        .filter_map(|i| {
            let mut first = i;
            while first >= 2 && punct(tokens, first - 1, ',') && ident(tokens, first - 2).is_some() {
                first -= 2;
            }
            let mut end = i + 1;
            while punct(tokens, end, ',') && ident(tokens, end + 1).is_some() {
                end += 2;
            }
            (starts_line(first) && punct(tokens, end, '=') && !punct(tokens, end + 1, '=')).then_some(end + 1)
        })
        .collect()
}

/// The token just past `= ` in the last plain assignment `name = ...` before token `before`.
fn assigned(tokens: &[Token], name: &str, before: usize) -> Option<usize> {
    (0..before.saturating_sub(2)).rev().find_map(|i| {
        let plain = ident(tokens, i) == Some(name)
            && punct(tokens, i + 1, '=')
            && !punct(tokens, i + 2, '=')
            && (i == 0 || !matches!(tokens[i - 1].tok, Tok::Punct('.' | '=' | '!' | '<' | '>' | ',' | '(')));
        plain.then_some(i + 2)
    })
}

/// Lines with code on them once strings' insides and comments are blanked (a docstring's
/// first line counts, as it is a statement).
pub fn code_lines(source: &str) -> usize {
    mask(source).lines().filter(|l| !l.trim().is_empty()).count()
}

/// A notebook's code cells as one Python file, and for each line of it the 1-based
/// (cell, line in cell) it came from (cell numbers count code cells only). IPython magics
/// and shell escapes (`%`, `!` at the start of a line) become `pass` with the original as a
/// comment, so an indented `!pip install` keeps its block valid; a cell whose first line is a
/// cell magic that is not Python (`%%bash`, `%%writefile`, ...) becomes comments entirely.
/// A first line imports `get_ipython`, which IPython defines in every notebook's namespace.
/// A notebook that `%run`s another is refused: the names it defines come from elsewhere.
pub fn notebook_to_python(json: &str) -> Result<(String, Vec<(usize, usize)>), String> {
    let notebook: Value = serde_json::from_str(json).map_err(|e| format!("not a notebook: {e}"))?;
    let cells = notebook.get("cells").and_then(Value::as_array).ok_or("not a notebook: no cells")?;
    let mut text = String::from("from IPython import get_ipython  # what IPython defines in a notebook\n");
    let mut origin = vec![(0, 0)];
    let mut number = 0;
    for cell in cells {
        if cell.get("cell_type").and_then(Value::as_str) != Some("code") {
            continue;
        }
        number += 1;
        let source = match cell.get("source") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
            _ => String::new(),
        };
        if source.lines().any(|line| line.trim_start().starts_with("%run ")) {
            return Err("`%run` runs another notebook into this one's namespace, which a conversion cannot follow".to_string());
        }
        let first = source.lines().next().unwrap_or("").trim_start();
        let python_cell_magic = ["%%time", "%%timeit", "%%capture"].iter().any(|m| first.split_whitespace().next() == Some(*m));
        let comment_all = first.starts_with("%%") && !python_cell_magic;
        text.push_str(&format!("# %% code cell {number}\n"));
        origin.push((number, 0));
        // A magic or shell escape ending in `\` goes on over the next line, as IPython joins them.
        let mut continued = false;
        let mut python = Logical::default();
        // IPython drops the whitespace a cell's first line starts with from every line that
        // starts with it, so a cell pasted with its indentation runs.
        let first_line = source.lines().next().unwrap_or("");
        let leading = &first_line[..first_line.len() - first_line.trim_start().len()];
        for (index, line) in source.lines().enumerate() {
            let line = line.strip_prefix(leading).unwrap_or(line);
            let trimmed = line.trim_start();
            let indent = &line[..line.len() - trimmed.len()];
            // Only at the start of a logical line: `% x` inside brackets or after a `\` is Python.
            let inside = python.continues();
            let magic =
                !inside && (trimmed.starts_with('%') || (trimmed.starts_with('!') && !trimmed.starts_with("!=")) || is_help(trimmed));
            if !comment_all && !continued && !magic {
                python.feed(line);
            }
            if comment_all || continued {
                text.push_str(&format!("# {line}\n"));
                continued = continued && line.trim_end().ends_with('\\');
            } else if magic {
                text.push_str(&format!("{indent}pass  # {trimmed}\n"));
                continued = line.trim_end().ends_with('\\');
            } else {
                text.push_str(line);
                text.push('\n');
            }
            origin.push((number, index + 1));
        }
        text.push('\n');
        origin.push((number, 0));
    }
    Ok((text, origin))
}

/// IPython's help syntax, `obj?`, `obj.attr??` or `?obj`: a dotted name with a `?` before or
/// after it, alone on its line.
fn is_help(line: &str) -> bool {
    let line = line.split('#').next().unwrap_or("").trim();
    let name = line.trim_start_matches('?').trim_end_matches('?');
    name.len() < line.len()
        && !name.is_empty()
        && name.split('.').all(|part| {
            part.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') && part.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

/// Where a cell's Python stands at the end of a line: inside brackets or a triple-quoted
/// string, or continued by a trailing backslash.
#[derive(Default)]
struct Logical {
    depth: usize,
    triple: Option<char>,
    backslash: bool,
}

impl Logical {
    /// Whether the next line continues this logical line.
    fn continues(&self) -> bool {
        self.depth > 0 || self.triple.is_some() || self.backslash
    }

    fn feed(&mut self, line: &str) {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let tripled = |q: char| chars.get(i..i + 3).is_some_and(|t| t.iter().all(|&x| x == q));
            if let Some(q) = self.triple {
                if tripled(q) {
                    self.triple = None;
                    i += 3;
                    continue;
                }
                i += 1 + usize::from(c == '\\');
                continue;
            }
            match c {
                '#' => break,
                '\'' | '"' if tripled(c) => {
                    self.triple = Some(c);
                    i += 3;
                    continue;
                }
                '\'' | '"' => {
                    i += 1;
                    while i < chars.len() && chars[i] != c {
                        i += 1 + usize::from(chars[i] == '\\');
                    }
                }
                '(' | '[' | '{' => self.depth += 1,
                ')' | ']' | '}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
        self.backslash = self.triple.is_none() && line.trim_end().ends_with('\\') && !line.trim_start().starts_with('#');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(source: &str) -> Vec<(usize, String, bool, Target)> {
        sites(source).into_iter().map(|s| (s.line, s.transform, s.decorator, s.target)).collect()
    }

    fn def(name: &str, line: usize) -> Target {
        Target::Def { name: name.to_string(), line: Some(line) }
    }

    #[test]
    fn a_name_assigned_a_lambda_or_a_partial_is_that_function() {
        let source = "def step(model, x):\n    return x\n\npredict = lambda x: x + 1\nfast = jit(predict)\ntrain = partial(step, model)\nfaster = jax.jit(train)\n";
        assert_eq!(
            summary(source),
            vec![(5, "jit".to_string(), false, Target::Lambda { line: 4 }), (7, "jax.jit".to_string(), false, def("step", 1))]
        );
    }

    #[test]
    fn a_haiku_transform_of_a_function_is_that_function() {
        let source = "\
def sample(rng, context):
    return context

def unroll_net(seqs):
    return seqs

model = hk.transform(unroll_net)
out = jax.jit(model.apply)(params, None, x)
_, sample_fn = hk.without_apply_rng(hk.transform(sample))
sample_fn = jax.jit(sample_fn, static_argnums=[3])
net = hk.without_apply_rng(
    hk.transform(lambda ts: Net()(ts)))
params = jax.jit(net.init)(key, ts)
other = jax.jit(state.apply)
";
        assert_eq!(
            summary(source),
            vec![
                (8, "jax.jit".to_string(), false, def("unroll_net", 4)),
                (10, "jax.jit".to_string(), false, def("sample", 1)),
                (13, "jax.jit".to_string(), false, Target::Lambda { line: 12 }),
                (14, "jax.jit".to_string(), false, Target::Def { name: "apply".to_string(), line: None }),
            ]
        );
    }

    #[test]
    fn decorators_of_every_form_name_the_def_below() {
        let source = "\
import jax
from jax import jit
from functools import partial
import equinox as eqx

@jax.jit
def a(x):
    return x

@partial(jax.jit,
         static_argnums=(1,))
@other
def b(x, n):
    return x

class M:
    @functools.partial(jit, donate_argnums=0)
    def c(self, x):
        return x

@nnx.jit(static_argnames='k')
def d(m, k):
    return m

@eqx.filter_jit
def e(m):
    return m
";
        assert_eq!(
            summary(source),
            vec![
                (6, "jax.jit".to_string(), true, def("a", 7)),
                (10, "jax.jit".to_string(), true, def("b", 13)),
                (17, "jit".to_string(), true, def("c", 18)),
                (21, "nnx.jit".to_string(), true, def("d", 22)),
                (25, "eqx.filter_jit".to_string(), true, def("e", 26)),
            ]
        );
    }

    #[test]
    fn calls_name_their_argument_through_wrappers() {
        let source = "\
def loss(p, x):
    return p

def make_train(config):
    def train(rng):
        return rng
    return train

step = jax.jit(jax.value_and_grad(loss))
run = jax.jit(make_train(config))
lam = jax.pmap(lambda x: x, axis_name='i')
meth = jax.jit(self.update, static_argnums=0)
part = partial(jax.jit, static_argnums=1)(loss)
lib = jax.jit(model.apply)

def loss(p, x):
    return x
again = jax.jit(loss)
";
        assert_eq!(
            summary(source),
            vec![
                (9, "jax.jit".to_string(), false, def("loss", 1)),
                (10, "jax.jit".to_string(), false, Target::Factory { name: "make_train".to_string(), start: 4, end: 7 }),
                (11, "jax.pmap".to_string(), false, Target::Lambda { line: 11 }),
                (12, "jax.jit".to_string(), false, Target::Def { name: "update".to_string(), line: None }),
                (13, "jax.jit".to_string(), false, def("loss", 1)),
                (14, "jax.jit".to_string(), false, Target::Def { name: "apply".to_string(), line: None }),
                (18, "jax.jit".to_string(), false, def("loss", 16)),
            ]
        );
    }

    #[test]
    fn imports_strings_comments_and_other_names_are_not_sites() {
        let source = "\
from jax import jit, pmap
from jax.experimental.pjit import pjit
import jax.jit as j
# jax.jit(f) in a comment
doc = \"\"\"
@jax.jit
def f(x): ...
\"\"\"
s = 'jax.jit(g)'
jitted = self.jit(f)
fn = jax.vmap(f)
def jit(f):
    return f
";
        assert_eq!(summary(source), vec![]);
    }

    #[test]
    fn masking_keeps_lines_and_code() {
        let source = "x = 'a#b'  # c\ny = \"\"\"\n#\n\"\"\"\nz = r'\\'' + 1\n";
        let masked = mask(source);
        assert_eq!(masked.lines().count(), source.lines().count());
        assert_eq!(masked.lines().next(), Some("x = '   '     "));
        assert!(masked.contains("z = r'  ' + 1"), "{masked:?}");
        assert_eq!(code_lines(source), 4);
    }

    #[test]
    fn notebooks_become_python_with_magics_disabled() {
        let notebook = r##"{"cells": [
            {"cell_type": "markdown", "source": ["# Title\n"]},
            {"cell_type": "code", "source": ["%matplotlib inline\n", "import jax\n", "if COLAB:\n", "    !pip install equinox\n"]},
            {"cell_type": "code", "source": "%%bash\nls -l"},
            {"cell_type": "code", "source": ["%%time\n", "x = jax.numpy.ones(3)\n", "x != 1"]}
        ], "metadata": {}, "nbformat": 4}"##;
        let (text, origin) = notebook_to_python(notebook).unwrap_or_default();
        assert_eq!(
            text,
            "from IPython import get_ipython  # what IPython defines in a notebook\n\
             # %% code cell 1\npass  # %matplotlib inline\nimport jax\nif COLAB:\n    pass  # !pip install equinox\n\n\
             # %% code cell 2\n# %%bash\n# ls -l\n\n\
             # %% code cell 3\npass  # %%time\nx = jax.numpy.ones(3)\nx != 1\n\n"
        );
        assert_eq!(text.lines().count(), origin.len());
        assert_eq!(origin[5], (1, 4));
        assert_eq!(origin[13], (3, 2));
        assert!(notebook_to_python("[1, 2]").is_err());
        assert!(notebook_to_python(r#"{"cells": [{"cell_type": "code", "source": "def f():\n    %run other.ipynb\n"}]}"#).is_err());
    }

    #[test]
    fn a_shell_escape_continued_with_a_backslash_is_one_command() {
        let notebook = r##"{"cells": [{"cell_type": "code", "source": ["!wget --quiet \\\n", "    https://example.org/data.csv \\\n", "    -O /tmp/data.csv\n", "x = 1\n"]}]}"##;
        let (text, origin) = notebook_to_python(notebook).unwrap_or_default();
        assert_eq!(
            text,
            "from IPython import get_ipython  # what IPython defines in a notebook\n\
             # %% code cell 1\npass  # !wget --quiet \\\n#     https://example.org/data.csv \\\n#     -O /tmp/data.csv\nx = 1\n\n"
        );
        assert_eq!(text.lines().count(), origin.len());
        let continued = r##"{"cells": [{"cell_type": "code", "source": ["print('%d%% of it' \\\n", "      % (3 * 100))\n", "y = (1\n", "     % 2)\n", "%time y\n"]}]}"##;
        let (text, _) = notebook_to_python(continued).unwrap_or_default();
        assert!(text.contains("\n      % (3 * 100))\n") && text.contains("\n     % 2)\npass  # %time y\n"), "{text}");
    }

    #[test]
    fn a_cell_pasted_with_its_indentation_and_help_lines_run_as_ipython_runs_them() {
        let notebook = r##"{"cells": [
            {"cell_type": "code", "source": [" for x in range(3):\n", "   print(x)\n", " y = x\n"]},
            {"cell_type": "code", "source": ["tf.keras.Input?\n", "??np.sum\n", "z = a ? b\n", "w = {'k': 1}\n"]}
        ]}"##;
        let (text, _) = notebook_to_python(notebook).unwrap_or_default();
        assert!(text.contains("\nfor x in range(3):\n  print(x)\ny = x\n"), "{text}");
        assert!(text.contains("\npass  # tf.keras.Input?\npass  # ??np.sum\nz = a ? b\n"), "{text}");
    }
}
