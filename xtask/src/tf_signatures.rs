//! `xtask tf-conformance`'s check of the concrete signatures `tracelens trace` prints for a
//! `tf.function`: for every trace tracelens and TensorFlow both made of a fixture's function
//! (same name and definition, same number of traces, paired in order), each input parameter's
//! name, kind and type as `tracelens trace --format json` gives them (`input_parameters`)
//! must equal what TensorFlow's `concrete.function_type` prints (`tf_oracle.py`). A trace
//! tracelens gives no signature for is counted, not compared; a signature it gives is never
//! allowed to differ.

use crate::conformance::FixtureResult;
use serde_json::Value;
use std::fmt::Write;

#[derive(Default)]
pub struct SignatureCheck {
    /// Fixtures with at least one compared trace.
    pub fixtures: usize,
    pub compared: usize,
    /// Traces paired with TensorFlow's for which tracelens prints no signature.
    pub not_rendered: usize,
    /// Functions whose traces are not paired (tracelens and TensorFlow traced them a
    /// different number of times, or tracelens traced them with unknown arguments).
    pub unpaired: usize,
    pub mismatches: Vec<String>,
}

impl SignatureCheck {
    pub fn run(results: &[FixtureResult]) -> SignatureCheck {
        let mut check = SignatureCheck::default();
        for result in results {
            let before = check.compared + check.mismatches.len();
            check.fixture(&result.name, &result.oracle_raw, &result.trace_raw);
            if check.compared + check.mismatches.len() > before {
                check.fixtures += 1;
            }
        }
        check
    }

    fn fixture(&mut self, name: &str, oracle: &Value, trace: &Value) {
        let (Some(functions), Some(traced)) = (oracle["jit_traces"].as_array(), trace["functions"].as_array()) else { return };
        for function in functions {
            let (Some(fn_name), Some(span)) = (function["name"].as_str(), function["def_lines_span"].as_array()) else { continue };
            let span: Vec<u64> = span.iter().filter_map(Value::as_u64).collect();
            let [first, last] = span[..] else { continue };
            let theirs: Vec<&Value> = function["per_trace"].as_array().map(|t| t.iter().collect()).unwrap_or_default();
            let mine: Vec<&Value> = traced
                .iter()
                .filter(|f| f["transform"] == "tf.function" && f["name"] == fn_name)
                .filter(|f| f["line"].as_u64().is_some_and(|l| first <= l && l <= last))
                .flat_map(|f| f["traces"].as_array().into_iter().flatten())
                .collect();
            if mine.is_empty() || mine.len() != theirs.len() {
                self.unpaired += usize::from(!theirs.is_empty());
                continue;
            }
            for (i, (tf_trace, our_trace)) in theirs.iter().zip(&mine).enumerate() {
                let Some(expected) = tf_trace["input_parameters"].as_array() else { continue };
                let Some(got) = our_trace["input_parameters"].as_array() else {
                    self.not_rendered += 1;
                    continue;
                };
                let shown = |params: &[Value]| -> String {
                    params.iter().fold(String::new(), |mut out, p| {
                        let _ = write!(out, "\n      {} ({}): {}", text(&p["name"]), text(&p["kind"]), text(&p["type"]));
                        out
                    })
                };
                if expected == got {
                    self.compared += 1;
                } else {
                    self.mismatches.push(format!(
                        "{name}: tf.function `{fn_name}` (line {last}) trace {}:\n    TensorFlow:{}\n    tracelens:{}",
                        i + 1,
                        shown(expected),
                        shown(got)
                    ));
                }
            }
        }
    }

    pub fn render(&self) -> String {
        let mut out = format!(
            "concrete signatures: {} traces in {} fixtures equal TensorFlow's, {} differ; {} paired traces without a signature from tracelens; {} functions not paired\n",
            self.compared,
            self.fixtures,
            self.mismatches.len(),
            self.not_rendered,
            self.unpaired
        );
        for m in &self.mismatches {
            let _ = writeln!(out, "  DIFFERS {m}");
        }
        out
    }
}

fn text(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn oracle(types: &[&str]) -> Value {
        let params: Vec<Value> =
            types.iter().enumerate().map(|(i, t)| json!({"name": format!("a{i}"), "kind": "POSITIONAL_OR_KEYWORD", "type": t})).collect();
        json!({"jit_traces": [{"name": "f", "def_line": 3, "def_lines_span": [3, 4], "traces": 1,
            "per_trace": [{"call_line": 9, "args": [], "outputs": null, "input_parameters": params}]}]})
    }

    fn traced(types: Option<&[&str]>) -> Value {
        let mut trace = json!({"call_line": 9, "args": [], "outputs": null, "cause": "first call"});
        if let Some(types) = types {
            trace["input_parameters"] = types
                .iter()
                .enumerate()
                .map(|(i, t)| json!({"name": format!("a{i}"), "kind": "POSITIONAL_OR_KEYWORD", "type": t}))
                .collect::<Vec<_>>()
                .into();
        }
        json!({"functions": [{"name": "f", "path": "x.py", "line": 4, "transform": "tf.function", "traces": [trace]}]})
    }

    #[test]
    fn an_equal_signature_is_counted_and_a_different_one_is_reported() {
        let spec = "TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)";
        let mut check = SignatureCheck::default();
        check.fixture("tf/clean/a.py", &oracle(&[spec, "Literal[3]"]), &traced(Some(&[spec, "Literal[3]"])));
        assert_eq!((check.compared, check.mismatches.len()), (1, 0));
        check.fixture("tf/clean/b.py", &oracle(&[spec]), &traced(Some(&["TensorSpec(shape=(2, 3), dtype=tf.float32, name=None)"])));
        assert_eq!(check.mismatches.len(), 1);
        assert!(check.mismatches[0].contains("shape=(2, 3)"), "{}", check.mismatches[0]);
        check.fixture("tf/clean/c.py", &oracle(&[spec]), &traced(None));
        assert_eq!((check.compared, check.not_rendered), (1, 1));
    }
}
