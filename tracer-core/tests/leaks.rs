//! TL103: a leaked tracer is reported where JAX raises (where it is used), and the finding
//! names where it escaped (the store that outlives the transformation) and where it was made.

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

const ESCAPED: &str = "the tracer escaped here: stored where it outlives its transformation";
const CREATED: &str = "the leaked value was created here, inside a transformation";

#[test]
fn an_attribute_store_is_where_the_tracer_escaped() {
    let found = leaks(
        "import jax\nimport jax.numpy as jnp\n\nclass Stats:\n    def __init__(self):\n        self.mean = jnp.zeros(3)\n\n    def update(self, x):\n        m = x.mean(axis=0)\n        self.mean = m\n        return x - m\n\nstats = Stats()\njax.jit(stats.update)(jnp.ones((4, 3)))\nprint(stats.mean + 1)\n",
    );
    assert_eq!(found, vec![(15, vec![(10, ESCAPED.to_string()), (9, CREATED.to_string())])]);
}

#[test]
fn a_global_rebound_inside_jit_is_where_the_tracer_escaped() {
    let found = leaks(
        "import jax\nimport jax.numpy as jnp\n\nlast = None\n\n@jax.jit\ndef step(x):\n    global last\n    y = jnp.tanh(x)\n    last = y\n    return y * 2\n\nstep(jnp.ones(3))\nprint(jnp.sum(last))\n",
    );
    assert_eq!(found, vec![(14, vec![(10, ESCAPED.to_string()), (9, CREATED.to_string())])]);
}
