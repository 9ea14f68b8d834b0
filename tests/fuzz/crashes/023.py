# issue 20, minimised input 23 (trace took over 5 s: staging out each of 65,536 traces for tracelens trace was not bounded by the time budget)
import jax
import jax.numpy as jnp
import numpy as np
ARM_MEANS = np.array([0.1, 0.5, 0.9, 0.3], np.float32)
def reinforce_step(logits, baseline, key):
    actions = jax.random.categorical(key, logits, shape=(32,))  # revealed: i32[32]
    rewards = jnp.asarray(ARM_MEANS)[actions]
    def surrogate(lg):
        logp = jax.nn.log_softmax(lg)[actions]  # revealed: f32[32]
        return jnp.mean(logp * (rewards - baseline))
    grad = jax.grad(surrogate)(logits)
    new_baseline = 0.9 * baseline 
    return logits + 0.5 * grad, new_baseline, rewards.mean()
logits = jnp.zeros(65536)
baseline = jnp.zeros(())
key = jax.random.key(3)
for episode in range(65536):
    key, sub = jax.random.split(key)
    logits, baseline, avg_reward = reinforce_step(logits, baseline, sub)
