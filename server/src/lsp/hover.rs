//! Hover and inlay-hint text: what the analysis saw under the cursor — per trace, with the
//! transformation, the call that traced it and the route that reached it; outside traces, the
//! concrete value with a preview of small arrays — or a traced function's traces. Every hover
//! is assembled here (`hover`), so text about a value's library (a flax module's layers) slots
//! in beside its aval.

use std::path::Path;

use tracer_core::analysis::{SiteKind, Trace, TracedFunction, TracedValue, ValueRef};

use super::features::Analysed;

/// A value seen at a place: inside a trace of a function, or outside any trace.
pub struct SeenValue<'a> {
    pub value: TracedValue,
    pub trace: Option<(&'a TracedFunction, &'a Trace)>,
}

/// The values seen at the innermost place around `offset` (a name inside an attribute path
/// wins over the path), over every trace and outside traces, in order. Only those are
/// located and written out.
pub fn values_at<'a>(a: &'a Analysed, path: &Path, offset: u32) -> Vec<SeenValue<'a>> {
    let traced = a
        .analysis
        .functions
        .iter()
        .flat_map(|f| f.traces.iter().flat_map(move |t| t.values.around(offset).map(move |v| (v, Some((f, t))))));
    let concrete = a.analysis.values.iter().map(|v| (ValueRef::from(v), None));
    let mut best: Option<(u32, u32)> = None;
    let mut out = Vec::new();
    for (v, trace) in traced.chain(concrete) {
        let s = v.span();
        if !(s.start <= offset && offset <= s.end) || v.path() != path || on_the_base(&v, offset) {
            continue;
        }
        match best {
            Some((bs, be)) if (s.end - s.start) > (be - bs) => continue,
            Some((bs, be)) if (s.start, s.end) != (bs, be) => out.clear(),
            _ => {}
        }
        best = Some((s.start, s.end));
        out.push((v, trace));
    }
    out.into_iter().map(|(v, trace)| SeenValue { value: v.to_value(), trace }).collect()
}

/// Whether `offset` is on the base of an attribute path or item (`self` of `self.w`,
/// `params` of `params["w1"]`): that is the base's hover, not the path's.
fn on_the_base(v: &ValueRef, offset: u32) -> bool {
    let name = v.name();
    let last = match v.kind() {
        SiteKind::Attribute => name.rfind('.'),
        SiteKind::Item => name.rfind('['),
        _ => None,
    };
    // The recorded name is the source text with its whitespace collapsed: only trust it when
    // it is as long as the span.
    let span = v.span();
    match last {
        Some(i) if name.len() as u32 == span.end - span.start => offset < span.start + i as u32,
        _ => false,
    }
}

/// `model.py:37`.
pub fn call_text(t: &Trace) -> String {
    match &t.call {
        Some(c) => format!("{}:{}", c.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(), c.line),
        None => "?".into(),
    }
}

/// Hover: the avals of the value under the cursor, or a traced function's traces.
pub fn hover(a: &Analysed, path: &Path, offset: u32) -> Option<(String, (u32, u32))> {
    let values = values_at(a, path, offset);
    if let Some(first) = values.first() {
        let span = (first.value.location.span.start, first.value.location.span.end);
        return Some((value_hover(&values), span));
    }
    let f = a
        .analysis
        .functions
        .iter()
        .find(|f| *f.location.path == *path && f.location.span.start <= offset && offset <= f.location.span.end)?;
    Some((function_summary(f), (f.location.span.start, f.location.span.end)))
}

/// `x: f32[8,4] | f32[5,4]`, a pytree's leaves one a line, then where each aval came from.
fn value_hover(values: &[SeenValue]) -> String {
    let first = &values[0].value;
    let mut avals: Vec<String> = Vec::new();
    for v in values {
        let aval = v.value.aval.hover_text();
        if !avals.iter().any(|a| *a == aval) {
            avals.push(aval.into_owned());
        }
    }
    let kind = match first.kind {
        SiteKind::Parameter => "(parameter) ",
        SiteKind::Attribute => "(attribute) ",
        SiteKind::Item => "(item) ",
        SiteKind::Use | SiteKind::Assigned => "",
    };
    let mut text = String::from("```python\n");
    if first.summary.is_some() {
        // An object a library shim describes: `self.linear: Linear(in_features=784,
        // out_features=512)`, then its parameters a line each; one block per distinct object.
        let mut shown: Vec<(&str, String)> = Vec::new();
        for v in values {
            let summary = v.value.summary.as_deref().unwrap_or("?");
            let aval = v.value.aval.text().into_owned();
            if shown.iter().any(|(s, a)| *s == summary && *a == aval) {
                continue;
            }
            if !shown.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!("{kind}{}: {summary}\n", first.name));
            for leaf in tree_leaves(&aval) {
                text.push_str(&format!("  {leaf}\n"));
            }
            shown.push((summary, aval));
        }
    } else if first.pytree {
        // One block per distinct tree: `params: 2 arrays` and a leaf a line.
        for (i, aval) in avals.iter().enumerate() {
            let leaves = tree_leaves(aval);
            let arrays = if leaves.len() == 1 { "1 array".to_string() } else { format!("{} arrays", leaves.len()) };
            if i > 0 {
                text.push('\n');
            }
            text.push_str(&format!("{kind}{}: pytree of {arrays}\n", first.name));
            for leaf in leaves {
                text.push_str(&format!("  {leaf}\n"));
            }
        }
    } else {
        text.push_str(&format!("{kind}{}: {}\n", first.name, avals.join(" | ")));
    }
    text.push_str("```");
    // Where each aval came from: a trace (transformation, call, route), or no trace at all.
    let mut origins: Vec<String> = Vec::new();
    for v in values {
        let origin = match v.trace {
            Some((f, t)) => format!("in {}({}), traced from {} ({})", f.transform, f.name, call_text(t), t.route),
            None => match &v.value.preview {
                Some(p) => format!("concrete, not traced: `{p}`"),
                None => "concrete, not traced".to_string(),
            },
        };
        let line = if avals.len() > 1 && !first.pytree { format!("{} {origin}", v.value.aval.hover_text()) } else { origin };
        if !origins.contains(&line) {
            origins.push(line);
        }
    }
    match origins.as_slice() {
        [one] => text.push_str(&format!("\n\n{one}")),
        many => {
            let traces = values.iter().filter(|v| v.trace.is_some()).count().min(many.len());
            if traces == many.len() {
                text.push_str(&format!("\n\ntraced {}×:", many.len()));
            } else {
                text.push_str("\n\nseen:");
            }
            for o in many {
                text.push_str(&format!("\n- {o}"));
            }
        }
    }
    text
}

/// `{['b']: f32[4], ['w']: f32[8,4]}` -> `['b']: f32[4]`, `['w']: f32[8,4]`.
fn tree_leaves(aval: &str) -> Vec<&str> {
    let inner = aval.strip_prefix('{').and_then(|s| s.strip_suffix('}')).unwrap_or(aval);
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        out.push(inner[start..].trim());
    }
    out
}

pub fn function_summary(f: &TracedFunction) -> String {
    let mut text = format!("**{}({})** traced {}×", f.transform, f.name, f.traces.len());
    for (i, t) in f.traces.iter().enumerate() {
        let ended = if t.unknown_end { "not known" } else { "raised" };
        let outs = t.outputs.as_ref().map(|o| o.join(", ")).unwrap_or_else(|| ended.into());
        text.push_str(&format!("\n\n{}. from {}: ({}) → ({})", i + 1, call_text(t), t.args.join(", "), outs));
        if i > 0 {
            text.push_str(&format!(" — retraced because {}", t.cause));
        }
        if t.route != "called" {
            text.push_str(&format!(" — traced from {}", t.route));
        }
        // A tf.function's concrete function, its input parameters as TensorFlow prints them.
        if let Some(params) = &t.input_parameters {
            text.push_str("\n```python\n");
            for p in params {
                text.push_str(&format!("{} ({}): {}\n", p.name, p.kind, p.spec));
            }
            text.push_str("```");
        }
    }
    text
}

/// Which inlay hints to show (`inlayHints.*` settings).
#[derive(Clone, Copy, Debug)]
pub struct InlayKinds {
    /// After assignment targets: `h = x @ w` -> `h: f32[8,128] = ...`.
    pub assignments: bool,
    /// After parameters in `def` and `lambda` lines.
    pub parameters: bool,
    /// Scalars (`f32[]`) too.
    pub scalars: bool,
    /// Values outside traces (module level, un-traced code) too.
    pub concrete: bool,
}

impl Default for InlayKinds {
    fn default() -> InlayKinds {
        InlayKinds { assignments: true, parameters: true, scalars: false, concrete: true }
    }
}

/// Inlay hints after assignment targets and parameters: `: f32[8,128]` (several traces
/// joined by `|`). Pytrees have none (their leaves are in the hover).
pub fn inlay_hints(a: &Analysed, path: &Path, range: (u32, u32), kinds: InlayKinds) -> Vec<(u32, String)> {
    let traced = a.analysis.functions.iter().flat_map(|f| f.traces.iter().flat_map(move |t| t.values.ending_in(range)));
    let concrete = a.analysis.values.iter().filter(|_| kinds.concrete).map(ValueRef::from);
    let mut hints: Vec<(u32, Vec<String>)> = Vec::new();
    for v in traced.chain(concrete) {
        let wanted = match v.kind() {
            SiteKind::Assigned => kinds.assignments,
            SiteKind::Parameter => kinds.parameters,
            _ => false,
        };
        let end = v.span().end;
        if !wanted || end < range.0 || end > range.1 || v.pytree() || v.path() != path {
            continue;
        }
        if !kinds.scalars && v.is_scalar() {
            continue;
        }
        // An annotation the user wrote (`x: jax.Array`) is not written over.
        if a.text.get(end as usize..).is_some_and(|rest| rest.trim_start_matches([' ', '\t']).starts_with(':')) {
            continue;
        }
        let aval = v.hover_text();
        match hints.iter_mut().find(|(o, _)| *o == end) {
            Some((_, avals)) => {
                if !avals.iter().any(|a| *a == aval) {
                    avals.push(aval.into_owned());
                }
            }
            None => hints.push((end, vec![aval.into_owned()])),
        }
    }
    hints.sort();
    hints.into_iter().map(|(o, avals)| (o, format!(": {}", avals.join(" | ")))).collect()
}

#[cfg(test)]
mod tests {
    use super::tree_leaves;

    #[test]
    fn a_pytree_aval_splits_into_its_leaves() {
        assert_eq!(tree_leaves("{['b']: f32[4], ['w']: f32[8,4]}"), vec!["['b']: f32[4]", "['w']: f32[8,4]"]);
        assert_eq!(tree_leaves("{.mu[0]: f32[2,3]}"), vec![".mu[0]: f32[2,3]"]);
    }
}
