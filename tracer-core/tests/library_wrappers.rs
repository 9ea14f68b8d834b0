//! The library wrappers that stage a function out (`nnx.jit`, `eqx.filter_jit`,
//! `eqx.filter_pmap`) trace the user's function whatever the interpreter knows of the
//! arguments: a model from a loader it does not model, a batch of an unknown dataset, a
//! `functools.partial` holding either. What is reported is what does not depend on them.

use std::path::PathBuf;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig, FileAnalysis};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _: &std::path::Path) -> Option<std::rc::Rc<str>> {
        None
    }
}

fn analyze(source: &str) -> FileAnalysis {
    let config = AnalysisConfig { search_roots: vec![PathBuf::from("/project")], ..Default::default() };
    analyze_file(&PathBuf::from("/project/main.py"), source, &NoFiles, &config)
}

/// `line code` of every finding, TL900 included (a budget stop is what these tests guard).
fn findings(analysis: &FileAnalysis) -> Vec<String> {
    analysis.diagnostics.iter().map(|(d, loc, _)| format!("{} {}", loc.line, d.code.as_str())).collect()
}

/// `name:def line traces` of every traced function.
fn traced(analysis: &FileAnalysis) -> Vec<String> {
    analysis.functions.iter().map(|f| format!("{}:{} {}", f.name, f.location.line, f.traces.len())).collect()
}

#[test]
fn nnx_jit_traces_the_step_when_the_model_comes_from_an_unmodelled_loader() {
    let source = "\
import jax.numpy as jnp
from flax import nnx
import checkpoints


@nnx.jit
def train_step(model, optimizer, batch):
    def loss_fn(model):
        return jnp.mean((model(batch['x']) - batch['y']) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    print('loss', loss)
    optimizer.update(model, grads)
    return loss


model, optimizer = checkpoints.restore('/tmp/ckpt')
for step in range(1000):
    batch = {'x': jnp.ones((8, 4)), 'y': jnp.zeros((8, 2))}
    loss = train_step(model, optimizer, batch)
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["train_step:6 1"]);
    assert_eq!(findings(&analysis), vec!["12 TL201"]);
}

#[test]
fn nnx_jit_with_an_unknown_batch_in_a_long_loop_stays_within_the_budget() {
    // The graph walks stop at unknowns: before, each `isinstance` on an unknown batch or
    // gradient forked the walk on every level, and the loop ran out of the time budget.
    let source = "\
import jax.numpy as jnp
import optax
from flax import nnx
import loaders


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.linear1 = nnx.Linear(4, 16, rngs=rngs)
        self.linear2 = nnx.Linear(16, 2, rngs=rngs)

    def __call__(self, x):
        return self.linear2(nnx.relu(self.linear1(x)))


@nnx.jit
def train_step(model, optimizer, batch):
    def loss_fn(model):
        return jnp.mean((model(batch['x']) - batch['y']) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
for step in range(10000):
    loss = train_step(model, optimizer, loaders.next_batch())
if loss > 1:
    print('high')
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["train_step:16 1"]);
    assert_eq!(findings(&analysis), Vec::<String>::new());
}
