//! `enumerate`, `zip`, `map`, `filter` and `itertools.chain` over an endless generator are
//! lazy (`interp/lazy_iter.rs`): a training loop that stops on its own step count gets the
//! batches the generator yields, with their shapes, and what follows the loop is analysed.

#[path = "common/in_memory.rs"]
mod in_memory;

use in_memory::{analyze, findings, traced};

/// An endless batch generator, as quick-start scripts write it, and a jitted linear step
/// for 4 features.
const ENDLESS_BATCHES: &str = "\
import jax
import jax.numpy as jnp
import numpy as np

DATA = np.linspace(0.0, 1.0, 64 * 5, dtype=np.float32).reshape(64, 5)


def batches(batch_size):
    rng = np.random.default_rng(0)
    while True:
        idx = rng.choice(len(DATA), size=batch_size)
        yield DATA[idx], DATA[idx, :1]


@jax.jit
def train_step(w, x, y):
    loss = lambda w: jnp.mean((x @ w - y) ** 2)
    return w - 0.1 * jax.grad(loss)(w)


w = jnp.zeros((4, 1))
";

#[test]
fn a_shape_error_from_an_endless_generator_batch_is_found_through_enumerate() {
    // The batches have 5 features and the weights 4. Draining the generator to build
    // `enumerate`'s items reached its unknown end, and the step only ever saw unknowns.
    let source = format!(
        "{ENDLESS_BATCHES}\
for step, (x, y) in enumerate(batches(8)):
    w = train_step(w, x, y)
    if step == 99:
        break
"
    );
    let analysis = analyze(&source);
    assert_eq!(traced(&analysis), vec!["train_step:15 1"]);
    assert_eq!(findings(&analysis), vec!["17 TL104"]);
}

#[test]
fn what_follows_a_zip_of_range_and_an_endless_generator_is_analysed() {
    // `zip` stops with `range`; the loop is correct (the batches sliced to 4 features) and
    // the evaluation after it passes a batch of 3: the error there is the one finding.
    let source = format!(
        "{ENDLESS_BATCHES}\
for step, (x, y) in zip(range(50), map(lambda b: (b[0][:, :4], b[1]), batches(8))):
    w = train_step(w, x, y)
evaluate = jax.jit(lambda w, x: x @ w)
print(evaluate(w, jnp.ones((2, 3))))
"
    );
    let analysis = analyze(&source);
    assert_eq!(traced(&analysis), vec!["train_step:15 1", "<lambda>:24 1"]);
    assert_eq!(findings(&analysis), vec!["24 TL104"]);
}
