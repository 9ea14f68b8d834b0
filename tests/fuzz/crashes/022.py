# issue 20, minimised input 22 (run overran its 3 s time budget by 3 s: the clock was read every 2048 steps, and these 30 heavy iterations take fewer)
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
    new_baseline = 0.9 * baseline + 0.1 * rewards.mean()
    return logits + 0.5 * grad, new_baseline, rewards.mean()
logits = jnp.zeros(65536)
baseline = jnp.zeros(())
key = jax.random.key(3)
for episode in range(30):
    key, sub = jax.random.split(key)
    logits, baseline, avg_reward = reinforce_step(logits, baseline, sub)
