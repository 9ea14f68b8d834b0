//! The rules of tests/fixtures/README.md: a fixture against real JAX, then tracelens against JAX.

use crate::model::{Annotation, AnnotationKind, Diagnostic, JitFunction, OracleReport, TracedFunction, TracelensReport, TracelensTrace};
use std::path::{Component, Path};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixtureFolder {
    Errors,
    Warnings,
    Clean,
    Other,
}

impl FixtureFolder {
    /// The folder named by the first component of a path relative to tests/fixtures/.
    pub fn of(relative_path: &Path) -> FixtureFolder {
        match relative_path.components().next() {
            Some(Component::Normal(first)) if first == "errors" => FixtureFolder::Errors,
            Some(Component::Normal(first)) if first == "warnings" => FixtureFolder::Warnings,
            Some(Component::Normal(first)) if first == "clean" => FixtureFolder::Clean,
            _ => FixtureFolder::Other,
        }
    }
}

/// Where the fixture's own annotations disagree with real JAX ("FIXTURE WRONG").
pub fn check_fixture(oracle: &OracleReport, folder: FixtureFolder) -> Vec<String> {
    let mut problems = Vec::new();
    for annotation in &oracle.annotations {
        if let Some(problem) = &annotation.problem {
            problems.push(format!("line {}: unreadable `# {}:` comment: {problem}", annotation.comment_line, kind_name(annotation.kind)));
        }
    }
    let errors = annotations_of(oracle, AnnotationKind::Error);
    let warnings = annotations_of(oracle, AnnotationKind::Warning);
    match folder {
        FixtureFolder::Errors if errors.len() != 1 => {
            problems.push(format!("a fixture in errors/ needs exactly one `# error:` line, found {}", errors.len()))
        }
        FixtureFolder::Warnings if warnings.is_empty() || !errors.is_empty() => {
            problems.push("a fixture in warnings/ needs `# warning:` lines and no `# error:` line".to_string())
        }
        FixtureFolder::Clean if !warnings.is_empty() || !errors.is_empty() => {
            problems.push("a fixture in clean/ carries no `# error:` or `# warning:` lines".to_string())
        }
        _ => {}
    }

    check_exception(oracle, &errors, &mut problems);
    for warning in &warnings {
        let Some(line) = warning.line else { continue };
        let hits = oracle.line_hits.get(&line).copied().unwrap_or(0);
        if hits == 0 {
            problems.push(format!("line {line}: `# warning:` line never ran under JAX"));
        } else if warning.code.as_deref() == Some("TL201") {
            if let Some(claimed) = warning.substring.as_deref().and_then(run_count) {
                if claimed != hits {
                    problems.push(format!("line {line}: the annotation says the line ran {claimed} times, under JAX it ran {hits} times"));
                }
            }
        }
    }
    for annotation in annotations_of(oracle, AnnotationKind::Revealed) {
        check_revealed(oracle, annotation, &mut problems);
    }
    for annotation in annotations_of(oracle, AnnotationKind::Traces) {
        let (Some(line), Some(expected)) = (annotation.line, annotation.count) else {
            continue;
        };
        let functions: Vec<&JitFunction> =
            oracle.jit_traces.iter().filter(|function| span_contains(function.def_lines_span, line)).collect();
        let traced: u32 = functions.iter().map(|function| function.traces).sum();
        if functions.is_empty() && expected != 0 {
            problems.push(format!("line {line}: `# traces: {expected}`, but JAX never traced a jitted function defined here"));
        } else if traced != expected {
            problems.push(format!("line {line}: `# traces: {expected}`, but JAX traced `{}` {traced} times", functions[0].name));
        }
    }
    problems
}

/// Where tracelens disagrees with real JAX or with the fixture's annotations.
pub fn compare_with_tracelens(oracle: &OracleReport, tracelens: &TracelensReport) -> Vec<String> {
    let mut mismatches: Vec<String> = tracelens.failures.clone();
    let findings: Vec<&Diagnostic> = tracelens.diagnostics.iter().filter(|diagnostic| diagnostic.is_finding()).collect();
    let annotated: Vec<&Annotation> =
        oracle.annotations.iter().filter(|a| matches!(a.kind, AnnotationKind::Error | AnnotationKind::Warning)).collect();

    for error in annotations_of(oracle, AnnotationKind::Error) {
        let (Some(line), Some(code)) = (error.line, error.code.as_deref()) else {
            continue;
        };
        let class_name = error.exception.as_deref().unwrap_or_default();
        let substring = error.substring.as_deref().unwrap_or_default();
        let at_line: Vec<&&Diagnostic> = findings.iter().filter(|d| d.jax_line() == line && d.code == code).collect();
        if at_line.is_empty() {
            mismatches.push(format!("line {line}: expected {code} ({class_name}), tracelens reported {}", describe_findings(&findings)));
            continue;
        }
        let prefix = format!("{class_name}:");
        let good = at_line.iter().any(|d| d.severity == "error" && d.message.starts_with(&prefix) && d.message.contains(substring));
        if !good {
            let d = at_line[0];
            mismatches.push(format!(
                "line {line}: {code} should be an error whose message starts with `{prefix}` and contains \"{substring}\", got {}: {}",
                d.severity,
                first_line(&d.message)
            ));
        }
    }

    for diagnostic in &findings {
        let expected =
            annotated.iter().any(|a| a.line == Some(diagnostic.jax_line()) && a.code.as_deref() == Some(diagnostic.code.as_str()));
        if !expected {
            mismatches.push(format!(
                "line {}: unexpected {} {} (false positive): {}",
                diagnostic.jax_line(),
                diagnostic.severity,
                diagnostic.code,
                first_line(&diagnostic.message)
            ));
        }
    }

    for warning in annotations_of(oracle, AnnotationKind::Warning) {
        let (Some(line), Some(code)) = (warning.line, warning.code.as_deref()) else {
            continue;
        };
        let substring = warning.substring.as_deref().unwrap_or_default();
        let at_line: Vec<&&Diagnostic> = findings.iter().filter(|d| d.line == line && d.code == code).collect();
        let Some(found) = at_line.iter().find(|d| d.message.contains(substring)) else {
            match at_line.first() {
                None => mismatches.push(format!("line {line}: missing warning {code}")),
                Some(d) => mismatches.push(format!("line {line}: {code} message lacks \"{substring}\": {}", first_line(&d.message))),
            }
            continue;
        };
        if code == "TL201" && !found.message.contains(UNCOUNTED_PRINT) {
            let hits = oracle.line_hits.get(&line).copied().unwrap_or(0);
            match run_count(&found.message) {
                Some(count) if count == hits => {}
                Some(count) => {
                    mismatches.push(format!("line {line}: TL201 says the line ran {count} times, under JAX it ran {hits} times"))
                }
                None => mismatches
                    .push(format!("line {line}: TL201 message does not say how many times the line ran: {}", first_line(&found.message))),
            }
        }
    }

    compare_traces(oracle, &tracelens.trace.functions, &mut mismatches);
    compare_revealed(oracle, &tracelens.trace.functions, &mut mismatches);
    mismatches
}

/// The route of a trace made with arguments tracelens does not know.
const UNKNOWN_ARGUMENTS: &str = "unknown arguments";
/// The routes of traces of functions the program never calls (`tracelens trace` labels).
const ANNOTATIONS: &str = "annotations";
const NOT_CALLED: &str = "not called (unknown arguments)";
/// What a TL201 message says in place of a count when the print ran in such a trace.
const UNCOUNTED_PRINT: &str = "how many times is not known";

/// The run count in a TL201 message: "ran 3 times", "ran once", "ran twice".
pub fn run_count(message: &str) -> Option<u64> {
    message.match_indices("ran ").find_map(|(at, _)| {
        let rest = &message[at + 4..];
        let word: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        match word.as_str() {
            "once" => Some(1),
            "twice" => Some(2),
            digits => digits.parse().ok(),
        }
    })
}

fn check_exception(oracle: &OracleReport, errors: &[&Annotation], problems: &mut Vec<String>) {
    let raised = oracle.exception.as_ref();
    match (errors.first(), raised) {
        (None, None) => {}
        (None, Some(exception)) => problems.push(format!(
            "JAX raised {} at line {}: {}",
            exception.class_name,
            line_text(exception.line),
            first_line(&exception.message)
        )),
        (Some(error), None) => problems.push(format!(
            "line {}: `# error:` expects {}, but the program ran to the end under JAX",
            line_text(error.line),
            error.exception.as_deref().unwrap_or("an exception")
        )),
        (Some(error), Some(exception)) => {
            let expected_class = error.exception.as_deref().unwrap_or_default();
            if exception.class_name != expected_class {
                problems.push(format!(
                    "line {}: `# error:` expects {expected_class}, JAX raised {}: {}",
                    line_text(error.line),
                    exception.class_name,
                    first_line(&exception.message)
                ));
            }
            if exception.line != error.line {
                problems.push(format!("`# error:` is on line {}, JAX raised at line {}", line_text(error.line), line_text(exception.line)));
            }
            let substring = error.substring.as_deref().unwrap_or_default();
            if !exception.message.contains(substring) {
                problems.push(format!(
                    "line {}: JAX's message does not contain \"{substring}\": {}",
                    line_text(error.line),
                    first_line(&exception.message)
                ));
            }
        }
    }
}

fn check_revealed(oracle: &OracleReport, annotation: &Annotation, problems: &mut Vec<String>) {
    let (Some(line), Some(expected)) = (annotation.line, annotation.avals.as_ref()) else {
        return;
    };
    let Some(record) = oracle.revealed.iter().find(|r| r.line == line) else {
        problems.push(format!("line {line}: the oracle has no record of this line"));
        return;
    };
    if let Some(why) = &record.unsupported {
        problems.push(why.clone());
        return;
    }
    let target = record.target.as_deref().unwrap_or("?");
    if record.avals.is_empty() {
        if record.untraced.is_empty() {
            problems.push(format!("line {line}: `# revealed:` line never ran under JAX"));
        } else {
            problems.push(format!("line {line}: `{target}` never held a traced value under JAX (only {})", record.untraced.join(" | ")));
        }
    } else if &record.avals != expected {
        problems.push(format!(
            "line {line}: `{target}` is {} under JAX, the annotation says {}",
            record.avals.join(" | "),
            expected.join(" | ")
        ));
    }
}

fn compare_traces(oracle: &OracleReport, traced: &[TracedFunction], mismatches: &mut Vec<String>) {
    // A jitted function of a bundled shim (`jax.jit(model.apply)`) is flax's under JAX, whose
    // tracer records only the fixture's own functions: it is not compared, nor is a user's
    // function shown in its place (haiku's `apply_fn` running the user's `forward`).
    // A TensorFlow fixture's `tf.function`s are compared with TensorFlow's traces the same way.
    let jitted: Vec<&TracedFunction> = traced
        .iter()
        .filter(|f| (f.transform == "jit" || f.transform == "tf.function") && !f.path.starts_with("<tracelens>") && f.through.is_none())
        .collect();
    let mut matched = vec![false; jitted.len()];
    for function in &oracle.jit_traces {
        let mine: Vec<(usize, &&TracedFunction)> =
            jitted.iter().enumerate().filter(|(_, f)| f.name == function.name && span_contains(function.def_lines_span, f.line)).collect();
        for (index, _) in &mine {
            matched[*index] = true;
        }
        let label = format!("jit `{}` (line {})", function.name, function.def_lines_span[1]);
        // Traced with arguments tracelens does not know: how often JAX traces it, and
        // with which avals, is not known to tracelens, and it does not say.
        if mine.iter().flat_map(|(_, f)| f.traces.iter()).any(|t| t.route.as_deref() == Some(UNKNOWN_ARGUMENTS)) {
            continue;
        }
        let count: usize = mine.iter().map(|(_, f)| f.traces.len()).sum();
        if count != function.traces as usize {
            mismatches.push(format!(
                "{label}: JAX traced it {} times, tracelens {count}{}",
                function.traces,
                describe_jax_causes(function)
            ));
        }
        if mine.is_empty() {
            continue;
        }
        // A tf.function output whose shape TensorFlow knows only in part (a `None`
        // dimension) is one tracelens does not claim: its trace has no outputs.
        let partly_known = function.per_trace.iter().flat_map(|t| t.outputs.iter().flatten()).any(|aval| aval.contains('?'));
        let tf_unclaimed =
            partly_known && mine.iter().any(|(_, f)| f.transform == "tf.function" && f.traces.iter().any(|t| t.outputs.is_none()));
        if tf_unclaimed {
            compare_paths(&label, function, &mine, mismatches);
            continue;
        }
        let jax_outputs = distinct(function.per_trace.iter().filter_map(|t| t.outputs.clone()));
        let tracelens_outputs = distinct(mine.iter().flat_map(|(_, f)| f.traces.iter()).filter_map(|t| t.outputs.clone()));
        if jax_outputs != tracelens_outputs {
            mismatches.push(format!(
                "{label}: output avals differ: JAX {}, tracelens {}",
                describe_tuples(&jax_outputs),
                describe_tuples(&tracelens_outputs)
            ));
        }
        compare_paths(&label, function, &mine, mismatches);
    }
    // A function the program never calls, traced from its annotations or as an uncalled
    // staged function, is one JAX traces only where the oracle exports a `# tracelens: trace`
    // comment (matched above); otherwise JAX never traces it, by design.
    let uncalled = |f: &TracedFunction| f.traces.iter().all(|t| matches!(t.route.as_deref(), Some(ANNOTATIONS | NOT_CALLED)));
    for (function, was_matched) in jitted.iter().zip(matched) {
        if !was_matched && !function.traces.is_empty() && !uncalled(function) {
            mismatches.push(format!(
                "jit `{}` (line {}): tracelens traced it {} times, JAX never did",
                function.name,
                function.line,
                function.traces.len()
            ));
        }
    }
}

fn compare_revealed(oracle: &OracleReport, traced: &[TracedFunction], mismatches: &mut Vec<String>) {
    for record in &oracle.revealed {
        let Some(target) = record.target.as_deref() else {
            continue;
        };
        if record.avals.is_empty() {
            continue;
        }
        let seen = distinct(
            traced
                .iter()
                .flat_map(|f| f.traces.iter())
                .flat_map(|t| t.values.iter())
                .filter(|v| v.line == record.target_line.unwrap_or(record.line) && v.name == target)
                .map(|v| v.aval.clone()),
        );
        if seen.is_empty() {
            mismatches.push(format!("line {}: tracelens reports no aval for `{target}` (JAX: {})", record.line, record.avals.join(" | ")));
        } else if seen != record.avals {
            mismatches.push(format!(
                "line {}: `{target}` is {} under JAX, tracelens says {}",
                record.line,
                record.avals.join(" | "),
                seen.join(" | ")
            ));
        }
    }
}

fn annotations_of(oracle: &OracleReport, kind: AnnotationKind) -> Vec<&Annotation> {
    oracle.annotations.iter().filter(|a| a.kind == kind && a.problem.is_none()).collect()
}

fn span_contains(span: [u32; 2], line: u32) -> bool {
    span[0] <= line && line <= span[1]
}

/// The leaves' paths tracelens shows in `trace` are JAX's debug-info names, argument and
/// result (`params['w']`, `result[1][0].mu`), for every trace where both sides know them.
fn compare_paths(label: &str, function: &JitFunction, mine: &[(usize, &&TracedFunction)], mismatches: &mut Vec<String>) {
    let tracelens: Vec<&TracelensTrace> = mine.iter().flat_map(|(_, f)| f.traces.iter()).collect();
    if function.per_trace.iter().any(|t| t.arg_paths.is_empty() || t.out_paths.is_none())
        || tracelens.iter().any(|t| t.arg_paths.is_empty() || t.outputs.is_some() && t.out_paths.is_empty())
    {
        return;
    }
    let jax = distinct(function.per_trace.iter().map(|t| (t.arg_paths.clone(), t.out_paths.clone().unwrap_or_default())));
    let ours = distinct(tracelens.iter().map(|t| (t.arg_paths.clone(), t.out_paths.clone())));
    if jax != ours {
        let show = |p: &[(Vec<String>, Vec<String>)]| {
            p.iter().map(|(a, o)| format!("({}) -> ({})", a.join(", "), o.join(", "))).collect::<Vec<_>>().join(" | ")
        };
        mismatches.push(format!("{label}: leaf paths differ: JAX {}, tracelens {}", show(&jax), show(&ours)));
    }
}

fn distinct<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn describe_tuples(tuples: &[Vec<String>]) -> String {
    if tuples.is_empty() {
        return "none".to_string();
    }
    tuples.iter().map(|t| format!("({})", t.join(", "))).collect::<Vec<_>>().join(" | ")
}

fn describe_jax_causes(function: &JitFunction) -> String {
    let lines: Vec<String> = function
        .per_trace
        .iter()
        .map(|t| {
            let cause = t.cause.as_deref().map(short_cause).unwrap_or_default();
            format!("line {} ({}){cause}", line_text(t.call_line), t.args.join(", "))
        })
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!("; JAX traced at {}", lines.join("; "))
    }
}

/// One line of JAX's cache-miss explanation: the first `* ...` detail, or its first line.
fn short_cause(cause: &str) -> String {
    if cause.starts_with("never seen function") {
        return ": new function object".to_string();
    }
    let detail = cause.lines().find(|line| line.starts_with("* ")).or_else(|| cause.lines().next()).unwrap_or_default();
    let detail = detail.trim_start_matches("* ");
    let clipped: String = detail.chars().take(100).collect();
    format!(": {clipped}")
}

fn describe_findings(findings: &[&Diagnostic]) -> String {
    if findings.is_empty() {
        return "nothing".to_string();
    }
    findings.iter().map(|d| format!("{}@{}", d.code, d.line)).collect::<Vec<_>>().join(" ")
}

fn kind_name(kind: AnnotationKind) -> &'static str {
    match kind {
        AnnotationKind::Error => "error",
        AnnotationKind::Warning => "warning",
        AnnotationKind::Revealed => "revealed",
        AnnotationKind::Traces => "traces",
    }
}

fn line_text(line: Option<u32>) -> String {
    line.map_or_else(|| "?".to_string(), |l| l.to_string())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{TraceReport, TracelensReport};
    use serde_json::json;

    fn oracle(value: serde_json::Value) -> OracleReport {
        serde_json::from_value(value).expect("valid oracle JSON")
    }

    fn tracelens(check: serde_json::Value, trace: serde_json::Value) -> TracelensReport {
        TracelensReport {
            diagnostics: serde_json::from_value(check).expect("valid check JSON"),
            trace: serde_json::from_value::<TraceReport>(trace).expect("valid trace JSON"),
            failures: Vec::new(),
        }
    }

    fn error_fixture_oracle() -> OracleReport {
        oracle(json!({
            "annotations": [
                {"kind": "error", "line": 12, "comment_line": 12, "code": "TL104",
                 "exception": "TypeError", "substring": "dot_general requires contracting dimensions"},
            ],
            "exception": {"class": "TypeError", "line": 12,
                "message": "dot_general requires contracting dimensions to have the same shape, got (4,) and (5,)."},
            "jit_traces": [
                {"name": "step", "def_line": 5, "def_lines_span": [5, 6], "traces": 1,
                 "per_trace": [{"call_line": 20, "args": ["f32[8,4]"], "outputs": null}], "calls": []}
            ],
            "revealed": [], "line_hits": {}
        }))
    }

    #[test]
    fn error_fixture_passes_when_tracelens_agrees() {
        let oracle = error_fixture_oracle();
        assert!(check_fixture(&oracle, FixtureFolder::Errors).is_empty());
        let report = tracelens(
            json!([{"path": "t.py", "code": "TL104", "severity": "error", "line": 12,
                    "message": "TypeError: dot_general requires contracting dimensions to have the same shape, got (4,) and (5,)"}]),
            json!({"functions": [{"name": "step", "line": 6, "transform": "jit",
                    "traces": [{"call_line": 20, "args": ["f32[8,4]"]}]}]}),
        );
        assert_eq!(compare_with_tracelens(&oracle, &report), Vec::<String>::new());
    }

    #[test]
    fn wrong_class_prefix_and_extra_warning_are_reported() {
        let oracle = error_fixture_oracle();
        let report = tracelens(
            json!([
                {"code": "TL104", "severity": "error", "line": 12, "message": "ValueError: dot_general requires contracting dimensions"},
                {"code": "TL210", "severity": "warning", "line": 20, "message": "retrace"},
                {"code": "TL999", "severity": "info", "line": 3, "message": "a hint"}
            ]),
            json!({"functions": [{"name": "step", "line": 5, "transform": "jit", "traces": [{}]}]}),
        );
        let mismatches = compare_with_tracelens(&oracle, &report);
        assert_eq!(mismatches.len(), 2, "{mismatches:#?}");
        assert!(mismatches[0].contains("starts with `TypeError:`"));
        assert!(mismatches[1].contains("unexpected warning TL210"));
    }

    #[test]
    fn missing_error_names_what_was_reported() {
        let oracle = error_fixture_oracle();
        let report = tracelens(
            json!([{"code": "TL101", "severity": "error", "line": 11, "message": "ConcretizationTypeError: x"}]),
            json!({"functions": []}),
        );
        let mismatches = compare_with_tracelens(&oracle, &report);
        assert!(mismatches[0].contains("expected TL104 (TypeError), tracelens reported TL101@11"));
        assert!(mismatches[1].contains("false positive"));
        assert!(mismatches[2].contains("JAX traced it 1 times, tracelens 0"));
    }

    #[test]
    fn fixture_disagreeing_with_jax_is_wrong() {
        let mut oracle = error_fixture_oracle();
        oracle.exception = Some(crate::model::JaxException {
            class_name: "ValueError".into(),
            message: "Incompatible shapes for broadcasting".into(),
            line: Some(14),
        });
        let problems = check_fixture(&oracle, FixtureFolder::Errors);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(problems[0].contains("JAX raised ValueError"));
        assert!(problems[1].contains("JAX raised at line 14"));
        assert!(problems[2].contains("does not contain"));

        oracle.exception = None;
        let problems = check_fixture(&oracle, FixtureFolder::Errors);
        assert!(problems[0].contains("ran to the end"));
    }

    #[test]
    fn folder_rules() {
        let oracle = error_fixture_oracle();
        assert!(check_fixture(&oracle, FixtureFolder::Clean)[0].contains("clean/"));
        assert!(check_fixture(&oracle, FixtureFolder::Warnings)[0].contains("warnings/"));
        let clean = oracle_with_warning(2);
        assert!(check_fixture(&clean, FixtureFolder::Errors)[0].contains("exactly one"));
        assert_eq!(FixtureFolder::of(Path::new("errors/a.py")), FixtureFolder::Errors);
        assert_eq!(FixtureFolder::of(Path::new("misc/a.py")), FixtureFolder::Other);
    }

    fn oracle_with_warning(hits: u64) -> OracleReport {
        oracle(json!({
            "annotations": [
                {"kind": "warning", "line": 8, "comment_line": 8, "code": "TL201", "substring": "ran 2 times"},
                {"kind": "traces", "line": 5, "comment_line": 5, "count": 2},
                {"kind": "revealed", "line": 7, "comment_line": 6, "avals": ["f32[8,4]", "f32[16,4]"]}
            ],
            "exception": null,
            "jit_traces": [
                {"name": "f", "def_line": 5, "def_lines_span": [5, 6], "traces": 2,
                 "per_trace": [
                    {"call_line": 20, "args": ["f32[8,4]"], "outputs": ["f32[8]"]},
                    {"call_line": 21, "args": ["f32[16,4]"], "outputs": ["f32[16]"],
                     "cause": "for f defined at t.py:5\nall previously seen cache keys differ. For the closest previous key:\ndifferent input types:\n* at x, now f32[16,4] and before f32[8,4]"}],
                 "calls": [{"call_line": 20, "outputs": ["f32[8]"]}]}
            ],
            "revealed": [{"line": 7, "target": "h", "runs": 3, "avals": ["f32[8,4]", "f32[16,4]"], "untraced": []}],
            "line_hits": {"8": hits}
        }))
    }

    fn warning_trace_json(second_output: &str, second_value: &str) -> serde_json::Value {
        json!({"functions": [
            {"name": "f", "line": 6, "transform": "jit", "traces": [
                {"call_line": 20, "args": ["f32[8,4]"], "outputs": ["f32[8]"],
                 "values": [{"line": 7, "column": 5, "name": "h", "aval": "f32[8,4]"}]},
                {"call_line": 21, "args": ["f32[16,4]"], "outputs": [second_output],
                 "values": [{"line": 7, "column": 5, "name": "h", "aval": second_value}]}
            ]},
            {"name": "body", "line": 30, "transform": "scan", "traces": [{}]}
        ]})
    }

    #[test]
    fn warning_fixture_against_tracelens() {
        let oracle = oracle_with_warning(2);
        assert!(check_fixture(&oracle, FixtureFolder::Warnings).is_empty());
        let warning = json!([{"code": "TL201", "severity": "warning", "line": 8,
            "message": "print runs only while tracing: ran 2 times over 3 calls"}]);
        let good = tracelens(warning.clone(), warning_trace_json("f32[16]", "f32[16,4]"));
        assert_eq!(compare_with_tracelens(&oracle, &good), Vec::<String>::new());

        let bad = tracelens(warning, warning_trace_json("f32[15]", "f32[16,5]"));
        let mismatches = compare_with_tracelens(&oracle, &bad);
        assert_eq!(mismatches.len(), 2, "{mismatches:#?}");
        assert!(mismatches[0].contains("output avals differ: JAX (f32[8]) | (f32[16]), tracelens (f32[8]) | (f32[15])"));
        assert!(mismatches[1].contains("`h` is f32[8,4] | f32[16,4] under JAX, tracelens says f32[8,4] | f32[16,5]"));
    }

    #[test]
    fn tl201_count_must_match_line_hits() {
        let oracle = oracle_with_warning(3);
        let problems = check_fixture(&oracle, FixtureFolder::Warnings);
        assert!(problems[0].contains("ran 2 times, under JAX it ran 3 times"));
        let report = tracelens(
            json!([{"code": "TL201", "severity": "warning", "line": 8, "message": "ran twice over 3 calls"}]),
            warning_trace_json("f32[16]", "f32[16,4]"),
        );
        let mismatches = compare_with_tracelens(&oracle, &report);
        assert!(mismatches[0].contains("lacks \"ran 2 times\""));
    }

    #[test]
    fn trace_counts_and_unknown_functions() {
        let oracle = oracle_with_warning(2);
        let report = tracelens(
            json!([{"code": "TL201", "severity": "warning", "line": 8, "message": "ran 2 times"}]),
            json!({"functions": [
                {"name": "f", "line": 5, "transform": "jit", "traces": [{"outputs": ["f32[8]"], "values": [{"line": 7, "name": "h", "aval": "f32[8,4]"}]}]},
                {"name": "g", "line": 40, "transform": "jit", "traces": [{}]},
                {"name": "annotated", "line": 50, "transform": "jit", "traces": [{"route": "annotations"}]},
                {"name": "uncalled", "line": 60, "transform": "jit", "traces": [{"route": "not called (unknown arguments)"}]}
            ]}),
        );
        let mismatches = compare_with_tracelens(&oracle, &report);
        // Functions the program never calls, traced from annotations or as uncalled staged
        // functions, are not traces JAX missed.
        assert_eq!(mismatches.len(), 4, "{mismatches:#?}");
        assert!(mismatches[0].contains(
            "JAX traced it 2 times, tracelens 1; JAX traced at line 20 (f32[8,4]); line 21 (f32[16,4]): at x, now f32[16,4] and before f32[8,4]"
        ));
        assert!(mismatches[1].contains("output avals differ"));
        assert!(mismatches[2].contains("`g` (line 40): tracelens traced it 1 times, JAX never did"));
        assert!(mismatches[3].contains("`h` is f32[8,4] | f32[16,4] under JAX, tracelens says f32[8,4]"));
    }

    #[test]
    fn traces_annotation_and_revealed_against_jax() {
        let mut oracle = oracle_with_warning(2);
        oracle.annotations[1].count = Some(3);
        oracle.annotations[2].avals = Some(vec!["f32[8,4]".into()]);
        let problems = check_fixture(&oracle, FixtureFolder::Warnings);
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].contains("`h` is f32[8,4] | f32[16,4] under JAX, the annotation says f32[8,4]"));
        assert!(problems[1].contains("`# traces: 3`, but JAX traced `f` 2 times"));

        oracle.revealed[0].avals.clear();
        oracle.revealed[0].untraced = vec!["f32[8,4]".into()];
        let problems = check_fixture(&oracle, FixtureFolder::Warnings);
        assert!(problems[0].contains("never held a traced value under JAX (only f32[8,4])"));
    }

    #[test]
    fn unreadable_annotations_and_unreached_lines() {
        let oracle = oracle(json!({
            "annotations": [
                {"kind": "warning", "line": 8, "comment_line": 7, "text": "TL201 ran", "problem": "expected `# warning: CODE \"substring\"`"},
                {"kind": "warning", "line": 9, "comment_line": 9, "code": "TL202", "substring": "append"}
            ],
            "exception": null, "jit_traces": [], "revealed": [], "line_hits": {"9": 0}
        }));
        let problems = check_fixture(&oracle, FixtureFolder::Warnings);
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].starts_with("line 7: unreadable `# warning:` comment"));
        assert!(problems[1].contains("line 9: `# warning:` line never ran under JAX"));
    }

    #[test]
    fn revealed_matches_values_on_the_target_line() {
        let oracle = oracle(json!({
            "annotations": [{"kind": "revealed", "line": 9, "comment_line": 9, "avals": ["f32[6]"]}],
            "exception": null, "jit_traces": [], "line_hits": {},
            "revealed": [{"line": 9, "target": "z", "target_line": 7, "avals": ["f32[6]"]}]
        }));
        assert!(check_fixture(&oracle, FixtureFolder::Clean).is_empty());
        let values = |line: u32| {
            json!({"functions": [{"name": "f", "line": 5, "transform": "vmap", "traces": [
                {"values": [{"line": line, "column": 5, "name": "z", "aval": "f32[6]"}]}]}]})
        };
        let report = tracelens(json!([]), values(7));
        assert_eq!(compare_with_tracelens(&oracle, &report), Vec::<String>::new());
        let report = tracelens(json!([]), values(9));
        assert!(compare_with_tracelens(&oracle, &report)[0].contains("no aval for `z`"));
    }

    #[test]
    fn run_counts() {
        assert_eq!(run_count("print ran 3 times over 4 calls"), Some(3));
        assert_eq!(run_count("ran once over 2 calls"), Some(1));
        assert_eq!(run_count("it ran twice"), Some(2));
        assert_eq!(run_count("franchise ran 1 time"), Some(1));
        assert_eq!(run_count("no count here"), None);
    }
}
