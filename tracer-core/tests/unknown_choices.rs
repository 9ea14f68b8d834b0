//! A conditional expression or an `and`/`or` whose test is unknown (a config the interpreter
//! cannot read) is analysed both ways and joined, as an `if` statement is (design.md §6):
//! the analysis reaches into both arms, reports a JAX error an arm raises whenever it runs,
//! and after the join a value is certain only where both arms make it so.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

fn findings(source: &str) -> Vec<String> {
    let a = analyze_file(&PathBuf::from("model.py"), source, &NoFiles, &AnalysisConfig::default());
    a.diagnostics.iter().map(|(d, l, _)| format!("{}:{} {}", d.code.as_str(), l.line, d.message)).collect()
}

/// A jitted step over a (4, 4) batch; `BODY` chooses on `cfg`, which `configlib` (not a
/// module the interpreter has) hands back unknown.
const STEP: &str = r#"import configlib
import jax
import jax.numpy as jnp

cfg = configlib.load()


def block(x):
    return x.reshape(5, 5)


@jax.jit
def step(x):
BODY
    return jnp.sum(y)


step(jnp.ones((4, 4)))
"#;

fn step(body: &str) -> Vec<String> {
    findings(&STEP.replace("BODY", body))
}

#[test]
fn an_arm_an_unknown_chooses_is_analysed_and_its_jax_error_reported() {
    for body in [
        "    y = block(x) if cfg.deep else x",
        "    y = x if cfg.shallow else block(x)",
        "    y = cfg.deep and block(x)",
        "    y = cfg.shallow or block(x)",
        "    y = cfg.a and cfg.b and block(x)",
    ] {
        let found = step(body);
        assert_eq!(found.len(), 1, "{body}: {found:?}");
        assert!(found[0].starts_with("TL104:9 ") && found[0].contains("cannot reshape array of shape (4, 4)"), "{body}: {found:?}");
    }
}

#[test]
fn an_arm_that_is_never_chosen_when_the_test_is_known_is_not_analysed() {
    for body in ["    y = block(x) if False else x", "    y = x if True else block(x)", "    y = 0 and block(x)", "    y = 1 or block(x)"] {
        assert_eq!(step(body), Vec::<String>::new(), "{body}");
    }
}

#[test]
fn after_the_join_a_shape_is_known_only_where_both_arms_agree() {
    // The arms disagree: the product may be right, so nothing is reported.
    let disagree = "    w = jnp.ones((8, 3)) if cfg.wide else jnp.ones((4, 3))\n    y = x @ w";
    assert_eq!(step(disagree), Vec::<String>::new());
    let sizes = "    n = 4 if cfg.wide else 5\n    y = jnp.ones(n) + x";
    assert_eq!(step(sizes), Vec::<String>::new());
    // Both arms give a (5, 3) weight: the product with the (4, 4) batch is wrong either way.
    let agree = "    w = jnp.ones((5, 3)) if cfg.wide else jnp.zeros((5, 3))\n    y = x @ w";
    let found = step(agree);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("TL104:15 "), "{found:?}");
}

#[test]
fn a_python_exception_in_an_arm_is_taken_for_an_arm_the_program_does_not_take() {
    for body in ["    y = x if cfg.ok else {}['missing']", "    y = cfg.ok or int('not a number')\n    y = x"] {
        assert_eq!(step(body), Vec::<String>::new(), "{body}");
    }
}
