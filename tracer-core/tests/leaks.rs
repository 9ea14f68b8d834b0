//! TL103: a leaked tracer is reported where it escaped (the store that outlives the
//! transformation: the cause), with where JAX raises (its later use) and where it was made as
//! related notes (shared/spec/diagnostics.md: the primary range is the cause).

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::diagnostics::Code;
use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

/// The TL103 findings: (line, [(related line, its message)]).
fn leaks(source: &str) -> Vec<(u32, Vec<(usize, String)>)> {
    let a = analyze_file(&PathBuf::from("train.py"), source, &NoFiles, &AnalysisConfig::default());
    let line_of = |offset: u32| source[..(offset as usize).min(source.len())].matches('\n').count() + 1;
    a.diagnostics
        .iter()
        .filter(|(d, _, _)| d.code == Code::LeakedTracer)
        .map(|(d, l, _)| (l.line, d.related.iter().map(|r| (line_of(r.span.start), r.message.clone())).collect()))
        .collect()
}

const USED: &str = "the leaked tracer is used here, where JAX raises UnexpectedTracerError";
const CREATED: &str = "the leaked value was created here, inside a transformation";

#[test]
fn an_attribute_store_is_where_the_tracer_escaped() {
    let found = leaks(
        "import jax\nimport jax.numpy as jnp\n\nclass Stats:\n    def __init__(self):\n        self.mean = jnp.zeros(3)\n\n    def update(self, x):\n        m = x.mean(axis=0)\n        self.mean = m\n        return x - m\n\nstats = Stats()\njax.jit(stats.update)(jnp.ones((4, 3)))\nprint(stats.mean + 1)\n",
    );
    assert_eq!(found, vec![(10, vec![(15, USED.to_string()), (9, CREATED.to_string())])]);
}

#[test]
fn a_global_rebound_inside_jit_is_where_the_tracer_escaped() {
    let found = leaks(
        "import jax\nimport jax.numpy as jnp\n\nlast = None\n\n@jax.jit\ndef step(x):\n    global last\n    y = jnp.tanh(x)\n    last = y\n    return y * 2\n\nstep(jnp.ones(3))\nprint(jnp.sum(last))\n",
    );
    assert_eq!(found, vec![(10, vec![(14, USED.to_string()), (9, CREATED.to_string())])]);
}

/// The `append` is the cause; the first use after the trace, where JAX raises, is related.
#[test]
fn a_tracer_appended_to_a_list_is_reported_at_the_append_once() {
    let found = leaks(
        "import jax\nimport jax.numpy as jnp\n\nseen = []\n\n@jax.jit\ndef step(x):\n    y = jnp.sin(x)\n    seen.append(y)\n    return y\n\nstep(jnp.ones(3))\ntotal = seen[0] + 1.0\nagain = seen[0] * 2.0\n",
    );
    assert_eq!(found, vec![(9, vec![(13, USED.to_string()), (8, CREATED.to_string())])]);
}
