//! A long loop whose passes only call what is already traced is summarised after two such
//! passes (`interp/loop_summary.rs`): the analysis reaches what follows a 10,000-step
//! training loop, keeps what every pass shares (avals, structure), and forgets what changes
//! (a counter, a list's length), so nothing after the loop is claimed from one pass's values.

#[path = "common/in_memory.rs"]
mod in_memory;

use in_memory::{analyze, findings, traced};

/// A flax nnx model, its jitted training step and a jitted evaluation; the program's
/// loop follows it.
const NNX_TRAINING: &str = "\
import jax.numpy as jnp
import optax
from flax import nnx


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


@nnx.jit
def evaluate(model, x):
    return model(x).mean()


model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
batch = {'x': jnp.ones((8, 4)), 'y': jnp.ones((8, 2))}
";

#[test]
fn what_follows_a_long_nnx_training_loop_is_analysed() {
    // Each `nnx.jit` call splits and merges the model's graph in the shim: 10,000 of them
    // spent the time budget, and the evaluation's shape error after the loop was never seen.
    let source = format!(
        "{NNX_TRAINING}\
for step in range(10000):
    loss = train_step(model, optimizer, batch)
print(evaluate(model, jnp.ones((8, 5))))
"
    );
    let analysis = analyze(&source);
    assert_eq!(traced(&analysis), vec!["train_step:15 1", "evaluate:25 1"]);
    assert_eq!(findings(&analysis), vec!["12 TL104"]);
}

#[test]
fn a_long_while_loop_is_summarised_as_a_for_loop_is() {
    // The pass that stands for the rest does not trace the step again on the unknowns it
    // has (the shim's own lists have an unknown length there): one trace, as under flax.
    let source = format!(
        "{NNX_TRAINING}\
step = 0
while step < 10000:
    loss = train_step(model, optimizer, batch)
    step += 1
print(evaluate(model, jnp.ones((8, 5))))
"
    );
    let analysis = analyze(&source);
    assert_eq!(traced(&analysis), vec!["train_step:15 1", "evaluate:25 1"]);
    assert_eq!(findings(&analysis), vec!["12 TL104"]);
}

#[test]
fn a_branch_only_a_later_step_takes_is_analysed_with_the_state_every_step_shares() {
    // The passes after the second stand for by one with `step` unknown: the evaluation every
    // 1,000 steps runs there, with `params` as every pass leaves it (the same avals), so its
    // shape error is found; the step is traced once, as under JAX.
    let source = "\
import jax
import jax.numpy as jnp
import optax


def loss_fn(params, x, y):
    return jnp.mean((x @ params['w'] + params['b'] - y) ** 2)


opt = optax.adam(1e-3)


@jax.jit
def step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


@jax.jit
def evaluate(params, x):
    return (params['w'] @ x).sum()


params = {'w': jnp.zeros((4, 2)), 'b': jnp.zeros(2)}
opt_state = opt.init(params)
x, y = jnp.ones((8, 4)), jnp.ones((8, 2))
for i in range(10000):
    params, opt_state, loss = step(params, opt_state, x, y)
    if (i + 1) % 1000 == 0:
        print(evaluate(params, x))
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["step:13 1", "evaluate:20 1"]);
    assert_eq!(findings(&analysis), vec!["22 TL104"]);
}

#[test]
fn what_a_summarised_loop_changes_is_not_known_after_it() {
    // After 10,000 passes `n` is 10,000 and `losses` has 10,000 entries; the analysis walked
    // two passes and says nothing that holds only after those two.
    let source = "\
import jax
import jax.numpy as jnp


@jax.jit
def step(w, x):
    return w - 0.1 * (x @ w), (x @ w).sum()


w = jnp.ones((4, 4))
x = jnp.ones((4, 4))
n = 0
losses = []
for i in range(10000):
    w, loss = step(w, x)
    losses.append(loss)
    n += 1
assert n == 10000, n
assert len(losses) == 10000
history = jnp.stack(losses)
assert history.shape == (10000,)
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["step:5 1"]);
    assert_eq!(findings(&analysis), Vec::<String>::new());
}

#[test]
fn a_retrace_in_the_second_pass_is_counted_before_the_loop_is_summarised() {
    // A weakly typed start (`0.0`) retraces once the step returns a strong float32: JAX
    // traces twice, and so does the analysis before the passes repeat.
    let source = "\
import jax
import jax.numpy as jnp


@jax.jit
def step(acc, x):
    return acc + x.sum()


acc = 0.0
x = jnp.ones(3)
for i in range(5000):
    acc = step(acc, x)
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["step:5 2"]);
}

#[test]
fn a_return_an_unknown_chose_in_a_callee_does_not_end_the_callers_loop() {
    // `f` returns early when an unknown flag says so: that return leaves `f`, not the loop
    // around the call, which goes on with its other shapes (JAX traces `g` three times).
    let source = "\
import jax
import jax.numpy as jnp
import cfg


@jax.jit
def g(x):
    return x * 2


def f(x, flag):
    if flag:
        return x
    return g(x)


for n in [2, 3, 4]:
    f(jnp.ones(n), cfg.flag)
";
    let analysis = analyze(source);
    assert_eq!(traced(&analysis), vec!["g:6 3"]);
}
