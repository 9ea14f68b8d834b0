//! The extent of a traced function's body in its source, for the `body lines reached` column:
//! of the code lines of the functions a trace entered, how many the trace reached. Unlike
//! `lines reached` over every line of a project (tests, data loading, plotting no transform
//! ever stages), this says how far into the functions it did trace the analysis went.

use crate::realworld_scan::mask;

/// The code lines (1-based) of the function `name` whose `def` is at `line` or a few lines
/// below it (`trace` gives a decorated function's first decorator line): its header, its
/// body and what is nested in it. A lambda is its own line. `None` when no such `def` is there.
pub fn function_lines(source: &str, name: &str, line: u64) -> Option<Vec<u64>> {
    let masked = mask(source);
    let lines: Vec<&str> = masked.lines().collect();
    let start = usize::try_from(line).ok()?.checked_sub(1)?;
    if name == "<lambda>" {
        return lines.get(start).filter(|l| !l.trim().is_empty()).map(|_| vec![line]);
    }
    let def = (start..lines.len().min(start + 30)).find(|&i| is_def_of(lines[i], name))?;
    let indent = indent_of(lines[def]);
    // The header ends where its brackets close (`def f(\n    x,\n):` puts `):` at the def's
    // own indentation).
    let mut depth = 0i64;
    let mut header_end = def;
    for (i, text) in lines.iter().enumerate().skip(def) {
        for c in text.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
        header_end = i;
        if depth <= 0 {
            break;
        }
    }
    let mut out: Vec<u64> = (def..=header_end).filter(|&i| !lines[i].trim().is_empty()).map(|i| i as u64 + 1).collect();
    for (i, text) in lines.iter().enumerate().skip(header_end + 1) {
        if text.trim().is_empty() {
            continue;
        }
        if indent_of(text) <= indent {
            break;
        }
        out.push(i as u64 + 1);
    }
    Some(out)
}

fn indent_of(text: &str) -> usize {
    text.len() - text.trim_start().len()
}

fn is_def_of(text: &str, name: &str) -> bool {
    let t = text.trim_start();
    let rest = t.strip_prefix("async ").map_or(t, str::trim_start);
    rest.strip_prefix("def ").is_some_and(|r| {
        let r = r.trim_start();
        r.strip_prefix(name).is_some_and(|after| after.trim_start().starts_with('(') || after.trim_start().starts_with('['))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_is_its_header_and_its_indented_body() {
        let source = "import jax\n\n@jax.jit\ndef step(\n    x,\n):\n    y = x + 1\n\n    # note\n    return y\n\nz = 1\n";
        assert_eq!(function_lines(source, "step", 3), Some(vec![4, 5, 6, 7, 10]));
        assert_eq!(function_lines(source, "other", 3), None);
    }

    #[test]
    fn nested_bodies_and_docstrings_count_once_and_lambdas_are_their_line() {
        let source = "class A:\n    def f(self, x):\n        \"\"\"Doc.\n\n        more\n        \"\"\"\n        def g(y):\n            return y\n        return g(x)\n    def h(self):\n        pass\nf = lambda x: x\n";
        assert_eq!(function_lines(source, "f", 2), Some(vec![2, 3, 6, 7, 8, 9]));
        assert_eq!(function_lines(source, "<lambda>", 12), Some(vec![12]));
    }
}
