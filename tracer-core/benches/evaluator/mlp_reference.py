# Appended to mlp_model.py and run by real Python: the same step by hand in NumPy and under
# jax.jit, each timed best-of-N by the process's CPU time (and wall time, for reference).
# Prints `name loss grad_norm cpu_seconds wall_seconds` lines; with a second argument
# `numpy-only`, only NumPy's (XLA does not use OpenBLAS, so its figure would not change).
import sys
import time

import numpy as np

REPEATS = int(sys.argv[1])
NUMPY_ONLY = sys.argv[2:] == ["numpy-only"]


def numpy_step(p, x, y):
    z1 = x @ p["w1"] + p["b1"]
    h1 = np.maximum(z1, 0)
    z2 = h1 @ p["w2"] + p["b2"]
    h2 = np.maximum(z2, 0)
    logits = h2 @ p["w3"] + p["b3"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    se = e.sum(axis=1, keepdims=True)
    n = np.float32(x.shape[0])
    value = -(y * (shifted - np.log(se))).sum() / n
    dlogits = (e / se * y.sum(axis=1, keepdims=True) - y) / n
    g = {"w3": h2.T @ dlogits, "b3": dlogits.sum(axis=0)}
    dz2 = (dlogits @ p["w3"].T) * (z2 > 0)
    g["w2"], g["b2"] = h1.T @ dz2, dz2.sum(axis=0)
    dz1 = (dz2 @ p["w2"].T) * (z1 > 0)
    g["w1"], g["b1"] = x.T @ dz1, dz1.sum(axis=0)
    return value, g


def best(f):
    cpu = wall = float("inf")
    for _ in range(REPEATS):
        c, w = time.process_time(), time.perf_counter()
        f()
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
    return cpu, wall


np_params = {k: np.asarray(v) for k, v in params.items()}
np_x, np_y = np.asarray(x), np.asarray(y)
value, grads = numpy_step(np_params, np_x, np_y)
assert value.dtype == np.float32 and all(g.dtype == np.float32 for g in grads.values())
norm = np.sqrt(sum((g * g).sum() for g in grads.values()))
cpu, wall = best(lambda: numpy_step(np_params, np_x, np_y))
print("numpy", repr(float(value)), repr(float(norm)), cpu, wall)

if NUMPY_ONLY:
    sys.exit(0)
value, grads = step(params, x, y)
for _ in range(5):
    jax.block_until_ready(step(params, x, y))
cpu, wall = best(lambda: jax.block_until_ready(step(params, x, y)))
print("jax", repr(float(value)), repr(float(grad_norm(grads))), cpu, wall)
