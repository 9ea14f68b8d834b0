//! The route of last resort (`entry_staged.rs`): a function a staging transform is applied to,
//! that nothing the analysis ran called, is traced with every argument unknown. What does not
//! depend on the arguments is reported; what might is not.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::diagnostics::Code;
use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig, FileAnalysis};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

fn analyse(source: &str) -> FileAnalysis {
    analyze_file(&PathBuf::from("train.py"), source, &NoFiles, &AnalysisConfig::default())
}

fn routes_of(a: &FileAnalysis, name: &str) -> Vec<(String, &'static str)> {
    a.functions.iter().filter(|f| f.name == name).flat_map(|f| f.traces.iter().map(|t| (f.transform.clone(), t.route))).collect()
}

fn findings(a: &FileAnalysis) -> Vec<(Code, u32)> {
    a.diagnostics.iter().filter(|(d, _, _)| d.code != Code::NotAnalysed).map(|(d, l, _)| (d.code, l.line)).collect()
}

const UNCALLED: &str = "not called (unknown arguments)";

#[test]
fn a_step_jitted_inside_a_function_nothing_calls_is_traced_and_its_tracer_errors_reported() {
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\n\ndef train_step(state, batch, config):\n    loss = jnp.mean(jnp.ones(3))\n    if loss > 0:\n        return state\n    return batch\n\ndef train_and_evaluate(config, workdir):\n    step = jax.jit(train_step, static_argnums=(2,), donate_argnums=0)\n    for batch in config.data:\n        state = step(None, batch, config)\n",
    );
    assert_eq!(routes_of(&a, "train_step"), vec![("jit".to_string(), UNCALLED)]);
    // `loss` is a tracer whatever the arguments are: JAX raises at the `if` for any call.
    assert_eq!(findings(&a), vec![(Code::Concretization, 6)]);
}

#[test]
fn decorated_functions_methods_and_nested_closures_are_reached() {
    let a = analyse(
        "import functools\nimport jax\nimport jax.numpy as jnp\n\n@functools.partial(jax.jit, static_argnames=\"n\")\ndef f(x, n):\n    print(\"tracing f\")\n    return x\n\nclass Env:\n    @functools.partial(jax.jit, static_argnums=0)\n    def step(self, key, state):\n        return jnp.zeros(2)\n\ndef make_train(config):\n    def train(rng):\n        return jnp.ones(2) * 2\n    return train\n\ndef main(config):\n    train_jit = jax.jit(make_train(config))\n",
    );
    assert_eq!(routes_of(&a, "f"), vec![("jit".to_string(), UNCALLED)]);
    assert_eq!(routes_of(&a, "step"), vec![("jit".to_string(), UNCALLED)]);
    assert_eq!(routes_of(&a, "train"), vec![("jit".to_string(), UNCALLED)]);
    // The print runs at trace time, whatever the arguments.
    assert_eq!(findings(&a), vec![(Code::PrintAtTrace, 7)]);
}

#[test]
fn what_may_depend_on_the_arguments_is_never_a_finding() {
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n@jax.jit\ndef f(x, n, cfg):\n    if x.shape[0] > 2:\n        x = x[:2]\n    for i in range(int(n)):\n        x = x + i\n    if cfg.use_bias:\n        x = x + np.asarray(cfg.bias)\n    y = jnp.sin(x)\n    if n > 3:\n        y = y * 2\n    return y, bool(cfg.flag)\n",
    );
    assert_eq!(routes_of(&a, "f"), vec![("jit".to_string(), UNCALLED)]);
    assert_eq!(findings(&a), vec![]);
}

#[test]
fn a_function_the_program_calls_is_not_traced_again() {
    let a = analyse("import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    return x * 2\n\nf(jnp.ones(3))\n");
    assert_eq!(routes_of(&a, "f"), vec![("jit".to_string(), "called")]);
}

#[test]
fn pmap_traces_its_body_with_unknown_per_device_arguments() {
    let a = analyse(
        "from functools import partial\nimport jax\nimport jax.numpy as jnp\n\n@partial(jax.pmap, axis_name=\"batch\")\ndef train_step(state, tokens):\n    grads = jax.lax.pmean(tokens, axis_name=\"batch\")\n    n = jnp.sum(jnp.ones(4))\n    return int(n)\n\ntrain_step(jnp.ones((1, 3)), jnp.ones((1, 3)))\n",
    );
    assert_eq!(routes_of(&a, "train_step"), vec![("pmap".to_string(), "unknown arguments")]);
    assert_eq!(findings(&a), vec![(Code::Concretization, 9)]);
}

/// From optax's microbatching notebook: an `update_fn` nothing calls is traced with unknown
/// arguments, and `nnx.merge(graphdef, params)` of the unknown `params` hands back the model
/// the shim knows, with concrete weights. They stand for the traced arguments JAX would see:
/// no TL212 "large constant" there. (The notebook lowers it, `update_fn.lower(params, ...)`,
/// which traces it as a call does.)
#[test]
fn a_model_standing_in_for_unknown_arguments_is_not_a_large_constant() {
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\nfrom flax import nnx\n\nmodel = nnx.Linear(1024, 2048, rngs=nnx.Rngs(0))\ngraphdef, params = nnx.split(model, nnx.Variable)\n\ndef loss_fn(params, x):\n    m = nnx.merge(graphdef, params)\n    return m(x).sum()\n\n@jax.jit\ndef update_fn(params, x):\n    return jax.grad(loss_fn)(params, x)\n",
    );
    assert_eq!(routes_of(&a, "update_fn"), vec![("jit".to_string(), UNCALLED)]);
    assert_eq!(findings(&a), vec![]);
    // Lowered with the model's own parameters, it is traced as called, with their avals.
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\nfrom flax import nnx\n\nmodel = nnx.Linear(1024, 2048, rngs=nnx.Rngs(0))\ngraphdef, params = nnx.split(model, nnx.Variable)\n\ndef loss_fn(params, x):\n    m = nnx.merge(graphdef, params)\n    return m(x).sum()\n\n@jax.jit\ndef update_fn(params, x):\n    return jax.grad(loss_fn)(params, x)\n\nupdate_fn.lower(params, jnp.ones((2, 1024))).compile()\n",
    );
    assert_eq!(routes_of(&a, "update_fn"), vec![("jit".to_string(), "called")]);
    assert_eq!(findings(&a), vec![]);
}

/// Two classes of one file each with a decorated `step`: a trace of one is not the other's.
/// A `pmap` of a lambda written in a function nothing calls is reached too.
#[test]
fn same_named_methods_of_two_classes_and_pmapped_lambdas_are_each_reached() {
    let a = analyse(
        "import functools\nimport jax\nimport jax.numpy as jnp\n\nclass Flatten:\n    @functools.partial(jax.jit, static_argnums=0)\n    def step(self, key, state):\n        return jnp.zeros(2)\n\nclass Log:\n    @functools.partial(jax.jit, static_argnums=0)\n    def step(self, key, state):\n        print(\"logging\")\n        return jnp.zeros(2)\n\ndef host_sum(tree):\n    psum = jax.pmap(lambda x: jax.lax.psum(x, \"i\"), \"i\")\n    return psum(tree)\n",
    );
    let steps: Vec<u32> = a.functions.iter().filter(|f| f.name == "step").map(|f| f.location.line).collect();
    assert_eq!(steps, vec![6, 11]);
    assert_eq!(routes_of(&a, "<lambda>"), vec![("pmap".to_string(), UNCALLED)]);
    assert_eq!(findings(&a), vec![(Code::PrintAtTrace, 13)]);
}

/// A module that stops early (a notebook's cell that raises on purpose, a loop that runs out of
/// the time budget) still has its later `@jax.jit` functions reached: they are defined first.
#[test]
fn functions_defined_after_the_module_stopped_are_still_reached() {
    let a = analyse(
        "import jax\nimport jax.numpy as jnp\n\nraise ValueError(\"This is an error!\")\n\n@jax.jit\ndef step(x):\n    y = jnp.sum(x)\n    if y > 0:\n        return x\n    return -x\n",
    );
    assert_eq!(routes_of(&a, "step"), vec![("jit".to_string(), UNCALLED)]);
    assert_eq!(findings(&a), vec![(Code::PythonException, 4), (Code::Concretization, 9)]);
}

/// rlax's agents: `__init__` jits the agent's own methods (`self.actor_step =
/// jax.jit(self.actor_step)`) and hands the agent to a run loop tracelens does not know.
const AGENT: &str = r#"import jax
import jax.numpy as jnp
import optax
from somewhere import run_loop


class Agent:
    def __init__(self, network, learning_rate):
        self._network = network
        self._optimizer = optax.adam(learning_rate)
        self.actor_step = jax.jit(self.actor_step)
        self.learner_step = jax.jit(self.learner_step, static_argnames="evaluation")

    def actor_step(self, params, obs, key, evaluation):
        q = self._network.apply(params, obs)
        a = jax.lax.select(evaluation, jnp.argmax(q), jax.random.randint(key, (), 0, 3))
        if self._network.stochastic:
            a = a + 0
        return a

    def learner_step(self, params, batch, evaluation=False):
        loss = jnp.mean(jnp.ones(3))
        if loss > 0:
            return params
        return batch


def main(network):
    run_loop(Agent(network, 1e-3))
"#;

#[test]
fn methods_an_init_jits_as_self_attributes_are_reached_with_an_unknown_self() {
    let a = analyse(AGENT);
    assert_eq!(routes_of(&a, "actor_step"), vec![("jit".to_string(), UNCALLED)]);
    assert_eq!(routes_of(&a, "learner_step"), vec![("jit".to_string(), UNCALLED)]);
    // What `self` holds is not known (`self._network.stochastic` is no finding); `loss` is a
    // tracer whatever the arguments are.
    assert_eq!(findings(&a), vec![(Code::Concretization, 23)]);
}
