//! `str()` of a PyTreeDef: JAX's text where tracelens writes it (builtin containers with
//! simple keys), and never a made-up one: a custom node's text (its class path and auxiliary
//! data) is not known. Every expected text was printed by JAX 0.10.2 for the same program.

#[path = "common/in_memory.rs"]
#[allow(dead_code)] // this file runs programs; it does not analyse them
mod in_memory;

use in_memory::run;
use tracer_core::RunOutcome;

#[test]
fn builtin_containers_print_as_jax_prints_them() {
    let r = run("import jax\nprint(jax.tree.structure({1: (1, None), 2: [2]}))\n");
    assert_eq!(r.outcome, RunOutcome::Completed, "{:?}", r.notes);
    assert_eq!(r.stdout, "PyTreeDef({1: (*, None), 2: [*]})\n");
}

#[test]
fn a_custom_node_under_any_key_is_not_printed_with_a_made_up_text() {
    // JAX prints `PyTreeDef({1: CustomNode(namedtuple[Point], [*, *])})`.
    for key in ["1", "'a'"] {
        let source = format!(
            "import jax\nfrom typing import NamedTuple\n\n\nclass Point(NamedTuple):\n    x: float\n    y: float\n\n\n\
             print(jax.tree.structure({{{key}: Point(1.0, 2.0)}}))\n"
        );
        let r = run(&source);
        // `print` of a value tracelens does not know prints `<unknown>` and says why.
        assert_eq!(r.stdout, "<unknown>\n", "key {key}");
        assert!(!r.notes.is_empty(), "key {key}");
    }
}
