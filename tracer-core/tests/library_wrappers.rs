//! The library wrappers that stage a function out (`nnx.jit`, `eqx.filter_jit`,
//! `eqx.filter_pmap`) trace the user's function whatever the interpreter knows of the
//! arguments: a model from a loader it does not model, a batch of an unknown dataset, a
//! `functools.partial` holding either. What is reported is what does not depend on them.

#[path = "common/in_memory.rs"]
mod in_memory;

use in_memory::{analyze, findings, traced};

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

#[test]
fn eqx_filter_pmap_of_a_partial_is_traced_as_the_users_function() {
    let source = "\
import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax


def make_step(model, x, y, opt_state, tx):
    loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
    grads = jax.lax.pmean(grads, axis_name='devices')
    print('loss', loss)
    updates, opt_state = tx.update(grads, opt_state)
    return loss, eqx.apply_updates(model, updates), opt_state


model = eqx.nn.Linear(3, 1, key=jr.PRNGKey(0))
tx = optax.sgd(0.1)
opt_state = tx.init(eqx.filter(model, eqx.is_array))
p_make_step = eqx.filter_pmap(functools.partial(make_step, tx=tx), axis_name='devices')
stack = lambda tree: jax.tree_util.tree_map(lambda a: a[None], tree)
loss, model, opt_state = p_make_step(stack(model), jnp.ones((1, 4, 3)), jnp.zeros((1, 4, 1)), stack(opt_state))
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["make_step:10 1"]);
    assert_eq!(findings(&analysis), vec!["13 TL201"]);
}

#[test]
fn a_partial_binding_an_unknown_model_is_still_called_under_vmap() {
    // functools.partial only holds its arguments: one of them unknown does not make the
    // partial unknown, so the filtered jit inside the vmap is traced (equinox's diffusion
    // example samples with `jax.vmap(partial(sample_fn, model, ...))(keys)`).
    let source = "\
import functools

import equinox as eqx
import jax
import jax.random as jr
import checkpoints


@eqx.filter_jit
def sample(model, shape, key):
    print('tracing')
    return model(jr.normal(key, shape))


model = checkpoints.load()
keys = jr.split(jr.PRNGKey(0), 4)
samples = jax.vmap(functools.partial(sample, model, (3,)))(keys)
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["sample:9 1"]);
    assert_eq!(findings(&analysis), vec!["11 TL201"]);
}

#[test]
fn jax_jit_of_a_haiku_apply_is_reported_under_the_users_function() {
    // JAX traces haiku's `apply_fn`, which runs `sample` as its whole body: `trace` and
    // hover show `sample` (its values at its own lines), naming `apply_fn` as JAX does.
    let source = "\
import haiku as hk
import jax
import jax.numpy as jnp


def sample(context, length):
    tokens = jnp.zeros(length, dtype=jnp.int32)
    return tokens.at[0].set(context[0])


_, sample_fn = hk.without_apply_rng(hk.transform(sample))
sample_fn = jax.jit(sample_fn, static_argnums=2)
params = None
out = sample_fn(params, jnp.arange(4), 8)
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["sample:6 1"]);
    let f = &analysis.functions[0];
    assert_eq!(f.through.as_deref(), Some("apply_fn"));
    let values: Vec<String> = f.traces[0].values.iter().filter(|v| v.assigned).map(|v| format!("{} {}", v.location.line, v.name)).collect();
    assert_eq!(values, vec!["7 tokens"]);
    assert_eq!(findings(&analysis), Vec::<String>::new());
}

#[test]
fn jax_jit_of_a_linen_init_or_apply_is_reported_under_the_modules_call() {
    // linen's `init` and `apply` run the module's `__call__`; a library layer's own
    // `__call__` (`nn.Dense(2).init`) is no user function, so that jit stays under `init`.
    let source = "\
import jax
import jax.numpy as jnp
import flax.linen as nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = jnp.tanh(nn.Dense(8)(x))
        return nn.Dense(1)(h)


model = MLP()
x = jnp.ones((4, 3))
params = jax.jit(model.init)(jax.random.key(0), x)
out = jax.jit(model.apply)(params, x)
dense_params = jax.jit(nn.Dense(2).init)(jax.random.key(1), x)
";
    let analysis = analyze(source);
    let shown: Vec<String> = analysis
        .functions
        .iter()
        .map(|f| format!("{}:{} {} through {}", f.name, f.location.line, f.traces.len(), f.through.as_deref().unwrap_or("-")))
        .collect();
    // The library's own `init` is at its line in the shim.
    let shim = include_str!("../shims/flax/linen/module.py");
    let init = 1 + shim.lines().position(|l| l.trim_start().starts_with("def init(")).expect("linen's init in the shim");
    assert_eq!(
        shown,
        vec!["__call__:7 1 through init".to_string(), "__call__:7 1 through apply".to_string(), format!("init:{init} 1 through -")]
    );
    assert_eq!(findings(&analysis), Vec::<String>::new());
}
