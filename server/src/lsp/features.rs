//! Editor features as plain functions over an analysis and its text: byte offsets and strings
//! in, byte offsets and strings out. The handlers in `handlers.rs` only convert positions.

use std::path::Path;
use std::sync::Arc;

use tracer_core::analysis::{FileAnalysis, Location, TracedFunction};

/// The analysis of one document at one version.
pub struct Analysed {
    pub version: i32,
    pub text: String,
    pub analysis: FileAnalysis,
    /// The server's generation when the analysis began (`State::edited`): what it says of
    /// another file holds only if that file has not changed since.
    pub started: u64,
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b
}

fn contains(start: u32, end: u32, offset: u32) -> bool {
    start <= offset && offset <= end
}

/// Code lenses on traced functions: `traced 3× · 1 retrace`.
pub fn code_lenses(a: &Analysed, path: &Path) -> Vec<((u32, u32), String)> {
    a.analysis
        .functions
        .iter()
        .filter(|f| same_file(&f.location.path, path))
        .map(|f| {
            let retraces = f.traces.len().saturating_sub(1);
            let title = match retraces {
                0 => format!("{}: traced {}×", f.transform, f.traces.len()),
                1 => format!("{}: traced {}× · 1 retrace", f.transform, f.traces.len()),
                n => format!("{}: traced {}× · {n} retraces", f.transform, f.traces.len()),
            };
            ((f.location.span.start, f.location.span.end), title)
        })
        .collect()
}

/// The last line (1-based) of the body of the `def` on line `def_line`: the lines after it
/// that are blank or indented deeper than it. (A function's location spans its decorators and
/// name only.)
fn body_end(text: &str, def_line: u32) -> u32 {
    let indent = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let mut lines = text.lines().skip(def_line.saturating_sub(1) as usize);
    let Some(def) = lines.next() else { return def_line };
    let def_indent = indent(def);
    let mut end = def_line;
    for (i, l) in lines.enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        // `):` closing a signature written over several lines is still the header.
        if indent(l) <= def_indent && !l.trim_start().starts_with([')', ']']) {
            break;
        }
        end = def_line + 1 + i as u32;
    }
    end
}

/// The traced functions of `path` with their 1-based first (first decorator) and last lines.
fn traced_functions<'a>(a: &'a Analysed, path: &'a Path) -> impl Iterator<Item = (&'a TracedFunction, (u32, u32))> + 'a {
    a.analysis
        .functions
        .iter()
        .filter(move |f| same_file(&f.location.path, path))
        .map(|f| (f, (f.location.line, body_end(&a.text, f.location.end_line))))
}

/// The lines (1-based, first and last) of the innermost traced function around `line`.
pub fn function_lines(a: &Analysed, path: &Path, line: u32) -> Option<(u32, u32)> {
    traced_functions(a, path).map(|(_, lines)| lines).filter(|(s, e)| *s <= line && line <= *e).min_by_key(|(s, e)| e - s)
}

/// Where a traced function's reproducer lenses sit and what they name.
#[derive(Clone, Debug, PartialEq)]
pub struct ReproducerLens {
    pub span: (u32, u32),
    /// The function's first and last lines (1-based).
    pub lines: (u32, u32),
    /// The line "Generate reproducer" reproduces: the first error inside the function that has
    /// a reproducer, else the function's own line (1-based).
    pub repro_line: u32,
}

/// An error raised in a module `path` imports, under a call `path` makes: the editor shows it
/// in `path` at the innermost line of `path` that leads to it, where `tracelens.repro` writes
/// its reproducer (the module's own analysis does not raise it).
#[derive(Clone, Debug, PartialEq)]
pub struct RaisedElsewhere {
    /// Index into the analysis' diagnostics.
    pub diagnostic: usize,
    /// The line of `path` (1-based) and its text's byte span (without indentation).
    pub line: u32,
    pub span: (u32, u32),
}

/// Where `importer`'s analysis entered the module in which `loc` lies: the call in
/// `importer` that traced the function around `loc` (the innermost one with such a call),
/// else the line of `importer` an error there was raised under (`Reproducer::via`).
pub fn entry_into(o: &Analysed, importer: &Path, loc: &tracer_core::analysis::Location, code: &str) -> Option<Location> {
    let around = o
        .analysis
        .functions
        .iter()
        .filter(|f| same_file(&f.location.path, &loc.path) && f.location.line <= loc.line)
        .filter_map(|f| Some((f.location.line, f.traces.iter().find_map(|t| t.call.as_ref().filter(|c| same_file(&c.path, importer)))?)))
        .max_by_key(|(line, _)| *line);
    if let Some((_, call)) = around {
        return Some(call.clone());
    }
    let r = o.analysis.reproducers.iter().find(|r| same_file(&r.path, &loc.path) && r.is_at(loc.line) && r.code == code);
    let line = match r.and_then(|r| r.via.last()) {
        Some(&line) => line,
        None => import_line(&o.text, &loc.path)?,
    };
    let (start, end) = line_span(&o.text, line)?;
    Some(Location {
        path: Arc::from(importer),
        line,
        column: 1,
        end_line: line,
        end_column: 1,
        span: tracer_core::syntax::ast::Span::new(start as usize, end as usize),
    })
}

/// The first line of `text` (1-based) that imports the module `module` is (`import lib`,
/// `from lib import f`, `from pkg.lib import f`, `from . import lib`).
fn import_line(text: &str, module: &Path) -> Option<u32> {
    let stem = module.file_stem()?.to_str()?;
    let stem = if stem == "__init__" { module.parent()?.file_name()?.to_str()? } else { stem };
    let names = |s: &str| s.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == stem);
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            (l.starts_with("import ") || l.starts_with("from ")) && names(l)
        })
        .map(|i| i as u32 + 1)
}

/// Every error of another file that has a reproducer reached from a line of `path`, once.
pub fn raised_elsewhere(a: &Analysed, path: &Path) -> Vec<RaisedElsewhere> {
    let mut out: Vec<RaisedElsewhere> = Vec::new();
    for (i, (d, loc, _)) in a.analysis.diagnostics.iter().enumerate() {
        if same_file(&d.path, path) {
            continue;
        }
        let found = a.analysis.reproducers.iter().find(|r| same_file(&r.path, &d.path) && r.is_at(loc.line) && r.code == d.code.as_str());
        let Some(&line) = found.and_then(|r| r.via.last()) else { continue };
        let Some(span) = line_span(&a.text, line) else { continue };
        if !out.iter().any(|o| o.line == line && a.analysis.diagnostics[o.diagnostic].0.code == d.code) {
            out.push(RaisedElsewhere { diagnostic: i, line, span });
        }
    }
    out
}

/// The bytes of line `line` (1-based) of `text` from its first non-blank character to its
/// end; `None` past the end or for a blank line.
fn line_span(text: &str, line: u32) -> Option<(u32, u32)> {
    let start = if line <= 1 { 0 } else { text.match_indices('\n').nth(line as usize - 2)?.0 + 1 };
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let content = text[start..end].trim_end();
    let indent = content.len() - content.trim_start().len();
    (indent < content.len()).then(|| ((start + indent) as u32, (start + content.len()) as u32))
}

/// One "Generate reproducer" lens per traced function of `path` (each trace once).
pub fn reproducer_lenses(a: &Analysed, path: &Path) -> Vec<ReproducerLens> {
    let mut out: Vec<ReproducerLens> = Vec::new();
    for (f, lines) in traced_functions(a, path) {
        let span = (f.location.span.start, f.location.span.end);
        if out.iter().any(|l| l.span == span) {
            continue;
        }
        // An error of the file, or one raised in a module under a call the function makes.
        let error = a
            .analysis
            .reproducers
            .iter()
            .flat_map(|r| if same_file(&r.path, path) { vec![r.line] } else { r.via.clone() })
            .filter(|l| lines.0 <= *l && *l <= lines.1)
            .min();
        out.push(ReproducerLens { span, lines, repro_line: error.unwrap_or(f.location.line) });
    }
    out
}

/// Go to definition from a call that traced a function to that function.
pub fn definition<'a>(a: &'a Analysed, path: &Path, offset: u32) -> Option<&'a TracedFunction> {
    a.analysis.functions.iter().find(|f| {
        f.traces.iter().any(|t| t.call.as_ref().is_some_and(|c| same_file(&c.path, path) && contains(c.span.start, c.span.end, offset)))
    })
}

/// A text edit: replace bytes `start..end` with `text`.
#[derive(Clone, Debug, PartialEq)]
pub struct TextEdit {
    pub start: u32,
    pub end: u32,
    pub text: String,
}

/// `# tracelens: ignore[CODE]` at the end of the line holding `offset` (merged into an
/// existing ignore comment).
pub fn ignore_edit(text: &str, offset: u32, code: &str) -> TextEdit {
    let start = text[..(offset as usize).min(text.len())].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let end = text[start..].find('\n').map(|i| start + i).unwrap_or(text.len());
    // A CRLF file's `\r` stays where it is.
    let line = text[start..end].strip_suffix('\r').unwrap_or(&text[start..end]);
    if let Some(pos) = line.find("# tracelens: ignore[") {
        let close = line[pos..].find(']').map(|i| pos + i).unwrap_or(line.len());
        let at = (start + close) as u32;
        return TextEdit { start: at, end: at, text: format!(", {code}") };
    }
    let trimmed = line.trim_end().len();
    let at = (start + trimmed) as u32;
    TextEdit { start: at, end: (start + line.len()) as u32, text: format!("  # tracelens: ignore[{code}]") }
}

/// TL107: `x[i] = v` -> `x = x.at[i].set(v)` (and `+=` -> `.add`, `*=` -> `.multiply`, ...).
pub fn immutable_update_fix(text: &str, target_start: u32, target_end: u32) -> Option<TextEdit> {
    let (s, e) = (target_start as usize, target_end as usize);
    let target = text.get(s..e)?;
    let open = target.find('[')?;
    let name = target[..open].trim();
    let index = target.get(open + 1..target.len().checked_sub(1)?)?;
    if !target.ends_with(']') || name.is_empty() {
        return None;
    }
    let line_end = text[e..].find('\n').map(|i| e + i).unwrap_or(text.len());
    let rest = text[e..line_end].trim_start();
    let (method, value) = [("+=", "add"), ("-=", "subtract"), ("*=", "multiply"), ("/=", "divide"), ("**=", "power"), ("=", "set")]
        .iter()
        .find_map(|(op, m)| rest.strip_prefix(op).map(|v| (*m, v.trim())))?;
    let (value, comment) = match value.find("  #") {
        Some(i) => (value[..i].trim(), &value[i..]),
        None => (value, ""),
    };
    let call = if method == "subtract" { format!("add(-({value}))") } else { format!("{method}({value})") };
    Some(TextEdit { start: target_start, end: line_end as u32, text: format!("{name} = {name}.at[{index}].{call}{comment}") })
}

/// TL201: `print(a, "b", c)` -> `jax.debug.print("{} b {}", a, c)`, when the arguments are
/// plain expressions and string literals (f-strings are left alone).
pub fn print_fix(text: &str, call_start: u32, call_end: u32) -> Option<TextEdit> {
    let call = text.get(call_start as usize..call_end as usize)?;
    let inner = call.strip_prefix("print(")?.strip_suffix(')')?;
    let mut args = Vec::new();
    let (mut depth, mut quote, mut current) = (0i32, None::<char>, String::new());
    for ch in inner.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(ch),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                args.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    if !current.trim().is_empty() {
        args.push(current.trim().to_string());
    }
    let mut fmt = Vec::new();
    let mut values = Vec::new();
    for arg in &args {
        let is_plain_string = (arg.starts_with('"') && arg.ends_with('"')) || (arg.starts_with('\'') && arg.ends_with('\''));
        if arg.contains('=') && !arg.contains("==") || arg.starts_with('*') {
            return None;
        }
        if is_plain_string && arg.len() >= 2 {
            fmt.push(arg[1..arg.len() - 1].replace('{', "{{").replace('}', "}}"));
        } else if arg.starts_with(['f', 'F', 'r', 'b']) && arg[1..].starts_with(['"', '\'']) {
            return None;
        } else {
            fmt.push("{}".to_string());
            values.push(arg.clone());
        }
    }
    let mut out = format!("jax.debug.print(\"{}\"", fmt.join(" ").replace('"', "\\\""));
    for v in values {
        out.push_str(", ");
        out.push_str(&v);
    }
    out.push(')');
    Some(TextEdit { start: call_start, end: call_end, text: out })
}

/// TL101 where the value depends on arguments of a function decorated with a bare
/// `@jax.jit`: mark those arguments static. Returns the edits (the decorator, and
/// `import functools` when the file lacks it).
pub fn static_argnames_fix(text: &str, message: &str) -> Option<(Vec<TextEdit>, Vec<String>)> {
    // "... tracing the function f at step.py:12 for jit. ... of the argument n." /
    // "... of the arguments n and m."
    let after = message.split("tracing the function ").nth(1)?;
    let at = after.split(" at ").nth(1)?;
    let line: usize = at.split(" for jit").next()?.rsplit(':').next()?.trim().parse().ok()?;
    let names_part = message.split("the value of the argument ").nth(1).or_else(|| message.split("the values of the arguments ").nth(1))?;
    let names_part = names_part.split('.').next()?;
    let names: Vec<String> = names_part
        .replace(", and ", ", ")
        .replace(" and ", ", ")
        .split(", ")
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect();
    if names.is_empty() {
        return None;
    }
    let line_start = text.split_inclusive('\n').take(line.checked_sub(1)?).map(str::len).sum::<usize>();
    let line_text = text[line_start..].split('\n').next()?;
    let indent = line_text.len() - line_text.trim_start().len();
    if line_text.trim() != "@jax.jit" {
        return None;
    }
    let tuple = if names.len() == 1 {
        format!("(\"{}\",)", names[0])
    } else {
        format!("({})", names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", "))
    };
    let mut edits = vec![TextEdit {
        start: (line_start + indent) as u32,
        end: (line_start + line_text.len()) as u32,
        text: format!("@functools.partial(jax.jit, static_argnames={tuple})"),
    }];
    let has_functools = text.lines().any(|l| l.trim() == "import functools");
    if !has_functools {
        // After the last top-level import line (or at the top).
        let mut offset = 0usize;
        let mut insert_at = 0usize;
        for l in text.split_inclusive('\n') {
            if l.starts_with("import ") || l.starts_with("from ") {
                insert_at = offset + l.len();
            }
            offset += l.len();
        }
        edits.push(TextEdit { start: insert_at as u32, end: insert_at as u32, text: "import functools\n".into() });
    }
    Some((edits, names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_ends_at_the_first_line_indented_no_deeper_than_its_def() {
        let text = "@jax.jit\ndef f(\n    x,\n):\n    y = x\n\n    # note\n    return y\n\nz = 1\n";
        assert_eq!(body_end(text, 2), 8);
        assert_eq!(body_end("def g(x): return x\nh = 1\n", 1), 1);
        assert_eq!(body_end("class A:\n    def m(self):\n        pass\n    k = 1\n", 2), 3);
    }

    #[test]
    fn quick_fix_rewrites() {
        let text = "    cm[labels[i], preds[i]] += 1\n";
        let fix = immutable_update_fix(text, 4, 27).expect("fix");
        assert_eq!(fix.text, "cm = cm.at[labels[i], preds[i]].add(1)");
        let text = "x[0] = y * 2  # note\n";
        assert_eq!(immutable_update_fix(text, 0, 4).map(|f| f.text), Some("x = x.at[0].set(y * 2)  # note".to_string()));
        let text = "    print(\"loss:\", loss, step)\n";
        let fix = print_fix(text, 4, 30).expect("fix");
        assert_eq!(fix.text, "jax.debug.print(\"loss: {} {}\", loss, step)");
        assert_eq!(print_fix("print(f\"{x}\")", 0, 13), None);
        let ig = ignore_edit("a = 1\nprint(x)\n", 8, "TL201");
        assert_eq!((ig.start, ig.text.as_str()), (14, "  # tracelens: ignore[TL201]"));
        let src = "import jax\n\n\n@jax.jit\ndef f(x, n):\n    for i in range(n):\n        x = x * 2\n    return x\n";
        let msg = "TracerIntegerConversionError: The __index__() method was called on traced array with shape int32[]\nThe error occurred while tracing the function f at s.py:4 for jit. This concrete value was not available in Python because it depends on the value of the argument n.";
        let (edits, names) = static_argnames_fix(src, msg).expect("fix");
        assert_eq!(names, vec!["n".to_string()]);
        assert_eq!(edits[0].text, "@functools.partial(jax.jit, static_argnames=(\"n\",))");
        assert_eq!((edits[0].start, edits[0].end), (13, 21));
        assert_eq!((edits[1].start, edits[1].text.as_str()), (11, "import functools\n"));
        let ig = ignore_edit("print(x)  # tracelens: ignore[TL201]\n", 2, "TL104");
        assert_eq!((ig.start, ig.text.as_str()), (35, ", TL104"));
        // CRLF: the comment goes before the `\r`, which the edit keeps.
        let ig = ignore_edit("a = 1\r\nprint(x)  \r\n", 9, "TL201");
        assert_eq!((ig.start, ig.end), (15, 17));
    }
}
