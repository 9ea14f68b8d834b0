# fuzz (seed 34): run timeout
import jax
import jax.numpy as jnp
def reinforce_step(logits, baseline, key):
    actions = jax.random.categorical(key, logits, shape=(1, 4, 5, 6, 7))  
logits = jnp.zeros(65536)
baseline = jnp.zeros(())
key = jax.random.key(3)
for episode in range(30):
    key, sub = jax.random.split(key)
    logits, baseline, avg_reward = reinforce_step(logits, baseline, sub)
