//! Fixtures whose error line depends on the Python stack (`# stack depths: 0 25`).
//!
//! A recursion between `tf.function`s (`even` calling `odd` calling `even`, or a helper
//! calling its `tf.function` back) is traced again at each level until Python's recursion
//! limit, and the line TensorFlow names last is the frame the limit was reached in: one of
//! the cycle's lines, which one depending on how deep the stack was when the first call
//! began. Such a fixture says so with a comment `# stack depths: A B ...`; the oracle runs it
//! once under each number of extra Python frames (a range `0-29` names each number in it), and the `# error:` line must be a line
//! TensorFlow raised at under one of them, the class the same under all of them, and the
//! annotation's substring in every message. The rest of the report (traces, output) is the
//! first depth's.

use serde_json::Value;

const MARKER: &str = "# stack depths:";

/// The depths a fixture asks to be run under (numbers, or ranges `0-29`); empty for an
/// ordinary fixture.
pub fn depths_of(source: &str) -> Vec<u32> {
    source
        .lines()
        .find_map(|l| l.trim().strip_prefix(MARKER))
        .map(|rest| rest.split_whitespace().flat_map(depth_range).collect())
        .unwrap_or_default()
}

/// `25` or a range `0-29`; nothing for another word.
fn depth_range(word: &str) -> std::ops::RangeInclusive<u32> {
    let (from, to) = word.split_once('-').unwrap_or((word, word));
    match (from.parse(), to.parse()) {
        (Ok(from), Ok(to)) => from..=to,
        _ => 1..=0,
    }
}

/// One oracle report from the reports of each depth (`(depth, raw JSON)`, in the marker's
/// order). The exception's line becomes the `# error:` line when TensorFlow raised there
/// under some depth with the same class under all of them; otherwise what disagrees is
/// what the merged report says, so the ordinary comparison names it.
pub fn merge(runs: Vec<(u32, Value)>) -> Value {
    let mut runs = runs.into_iter();
    let Some((_, mut first)) = runs.next() else { return Value::Null };
    if first.get("oracle_error").is_some() {
        return first;
    }
    let annotated = first["annotations"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["kind"] == "error"))
        .map(|a| (a["line"].as_u64(), a["substring"].as_str().unwrap_or("").to_string()));
    let mut lines = vec![(0, first["exception"]["line"].as_u64())];
    for (depth, other) in runs {
        if other.get("oracle_error").is_some() {
            return other;
        }
        let (ours, theirs) = (&first["exception"], &other["exception"]);
        let disagrees = ours["class"] != theirs["class"]
            || annotated.as_ref().is_some_and(|(_, s)| !theirs["message"].as_str().unwrap_or("").contains(s.as_str()));
        if disagrees {
            first["exception"] = theirs.clone();
            first["stack_depth_disagrees"] = Value::from(depth);
            return first;
        }
        lines.push((depth, theirs["line"].as_u64()));
    }
    first["stack_lines"] = lines.iter().map(|(d, l)| serde_json::json!({"depth": d, "line": l})).collect();
    if let Some((Some(line), _)) = annotated {
        if lines.iter().any(|(_, l)| *l == Some(line)) && first["exception"].is_object() {
            first["exception"]["line"] = Value::from(line);
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(line: u64, class: &str, message: &str) -> Value {
        json!({
            "annotations": [{"kind": "error", "line": 14, "code": "TL190", "exception": "StagingError",
                             "substring": "maximum recursion depth exceeded"}],
            "exception": {"class": class, "message": message, "line": line},
        })
    }

    #[test]
    fn the_marker_names_the_depths() {
        assert_eq!(depths_of("import tensorflow as tf\n# stack depths: 0 25\n"), vec![0, 25]);
        assert!(depths_of("import tensorflow as tf\n").is_empty());
        assert_eq!(depths_of("# stack depths: 0-3 40\n"), vec![0, 1, 2, 3, 40]);
    }

    #[test]
    fn the_annotated_line_is_kept_when_some_depth_raised_there() {
        let merged = merge(vec![
            (0, report(7, "StagingError", "maximum recursion depth exceeded in comparison")),
            (25, report(14, "StagingError", "maximum recursion depth exceeded while calling a Python object")),
        ]);
        assert_eq!(merged["exception"]["line"], 14);
        assert_eq!(merged["stack_lines"][1]["line"], 14);
    }

    #[test]
    fn a_line_no_depth_raised_at_stays_the_first_depths() {
        let merged = merge(vec![
            (0, report(7, "StagingError", "maximum recursion depth exceeded")),
            (25, report(7, "StagingError", "maximum recursion depth exceeded")),
        ]);
        assert_eq!(merged["exception"]["line"], 7);
    }

    #[test]
    fn another_class_under_one_depth_is_what_the_report_says() {
        let merged = merge(vec![
            (0, report(7, "StagingError", "maximum recursion depth exceeded")),
            (25, report(14, "RecursionError", "maximum recursion depth exceeded")),
        ]);
        assert_eq!(merged["exception"]["class"], "RecursionError");
        assert_eq!(merged["stack_depth_disagrees"], 25);
    }
}
