"""Golden data for tracelens' jax.random values, recorded from real JAX.

Run with the JAX venv's python:

    /work/jaxvenv/bin/python tests/conformance/gen_random_golden.py

It re-runs itself in two subprocesses, one with JAX_ENABLE_X64=0 and one with
JAX_ENABLE_X64=1, and writes tracer-core/tests/data/random.tsv, which
tracer-core/tests/random_golden.rs checks: it runs each row's expression through
`tracer_core::analyze_file` and compares what the program prints.

TSV columns (tab separated, one header line, `#` lines are comments):

    x64  expr  aval  values  str

* x64: 0 or 1 (`jax.config.update("jax_enable_x64", True)` first when 1).
* expr: a Python expression over `jax` and `jnp` (`jax.numpy`), e.g.
  `jax.random.normal(jax.random.key(0), (3,))`. Typed keys are shown through
  `jax.random.key_data`.
* aval: `print(x.dtype, x.shape)`, e.g. `float32 (3,)`.
* values: the elements as Python numbers, `repr([float(v) for v in x.ravel()])` (int(v) for
  integer dtypes, bool(v) for bool): exact, so floats compare bit for bit.
* str: `str(x)` as a JSON string (what `print(x)` writes).

The values are those of JAX 0.10.2 on an x86-64 CPU with FMA (XLA fuses multiply-adds
there, which changes the last bit of some floats against a CPU without FMA).

With `--exhaustive DIR` it instead writes large samples as raw little-endian arrays to DIR
(4M draws of each float sampler, and the normal and Gumbel transforms of all 2**23 float32
uniform mantissas), for the ignored test `exhaustive_samples_match_jax` in
tracer-core/tests/random_golden.rs:

    /work/jaxvenv/bin/python tests/conformance/gen_random_golden.py --exhaustive /tmp/rnd
    TRACELENS_RANDOM_EXHAUSTIVE=/tmp/rnd cargo test --release -p tracer-core \
        --test random_golden -- --ignored
"""

import json
import os
import subprocess
import sys

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tracer-core", "tests", "data", "random.tsv")

K = "jax.random.key({})"
P = "jax.random.PRNGKey({})"


def exprs(x64):
    rows = []
    seeds = [0, 1, 42, 7, -1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 5, -(2**31), 2**40 + 3, -(2**40)]
    if x64:
        seeds += [2**52 + 1, -(2**53)]
    # Keys: seeds, split, fold_in, indexing typed keys.
    for s in seeds:
        rows.append(f"jax.random.key_data({K.format(s)})")
        rows.append(P.format(s))
    for s in [0, 1, 42, 2**32 + 5, -3]:
        for n in [1, 2, 3, 5]:
            rows.append(f"jax.random.key_data(jax.random.split({K.format(s)}, {n}))")
        rows.append(f"jax.random.split({P.format(s)})")
        rows.append(f"jax.random.key_data(jax.random.split({K.format(s)}, (2, 3)))")
        for d in [0, 1, 7, 2**31, 2**32 - 1]:
            rows.append(f"jax.random.key_data(jax.random.fold_in({K.format(s)}, {d}))")
        rows.append(f"jax.random.fold_in({P.format(s)}, 3)")
        rows.append(f"jax.random.key_data(jax.random.fold_in({K.format(s)}, jnp.int32(-5)))")
        rows.append(f"jax.random.key_data(jax.random.split({K.format(s)}, 4)[2])")
        rows.append(f"jax.random.key_data(jax.random.split(jax.random.split({K.format(s)})[1], 3)[1:])")
        rows.append(f"jax.random.key_data(jax.random.fold_in(jax.random.split({K.format(s)})[0], 11))")
    # Floats.
    for s in [0, 1, 42, 123]:
        for key in [K.format(s), P.format(s)]:
            rows.append(f"jax.random.normal({key}, (3,))")
        rows.append(f"jax.random.normal({K.format(s)})")
        rows.append(f"jax.random.normal({K.format(s)}, (2, 3))")
        rows.append(f"jax.random.normal({K.format(s)}, (17,))")
        rows.append(f"jax.random.normal({K.format(s)}, (3, 2, 4))")
        rows.append(f"jax.random.uniform({K.format(s)}, (5,))")
        rows.append(f"jax.random.uniform({K.format(s)}, (4,), minval=-3.0, maxval=7.5)")
        rows.append(f"jax.random.uniform({K.format(s)}, (2, 3), minval=jnp.array([0.0, 1.0, 2.0]), maxval=10.0)")
        rows.append(f"jax.random.uniform({K.format(s)}, (6,), minval=0.0, maxval=1e-5)")
        rows.append(f"jax.random.uniform({K.format(s)}, (4,), maxval=3e7)")
        rows.append(f"jax.random.bernoulli({K.format(s)}, 0.3, (8,))")
        rows.append(f"jax.random.bernoulli({K.format(s)}, jnp.array([0.1, 0.5, 0.9]))")
        rows.append(f"jax.random.bernoulli({K.format(s)})")
        if not x64:  # float64 needs XLA's float64 erf (the C library's), not reproduced
            rows.append(f"jax.random.truncated_normal({K.format(s)}, -1.0, 2.0, (5,))")
            rows.append(f"jax.random.truncated_normal({K.format(s)}, jnp.array([-2.0, 0.0, 1.0]), 3.0)")
            rows.append(f"jax.random.truncated_normal({K.format(s)}, -0.5, 0.5, (2, 2))")
        rows.append(f"jax.random.categorical({K.format(s)}, jnp.array([0.1, 0.5, 0.2]))")
        rows.append(f"jax.random.categorical({K.format(s)}, jnp.array([[0.0, 2.0, 1.0], [3.0, 0.0, -1.0]]))")
        rows.append(f"jax.random.categorical({K.format(s)}, jnp.array([[0.0, 2.0, 1.0], [3.0, 0.0, -1.0]]), axis=0)")
        rows.append(f"jax.random.categorical({K.format(s)}, jnp.log(jnp.array([0.2, 0.3, 0.5])), shape=(10,))")
        rows.append(f"jax.random.categorical({K.format(s)}, jnp.zeros((2, 4)), shape=(3, 2))")
    # Integers.
    for s in [0, 5, 99]:
        key = K.format(s)
        rows.append(f"jax.random.randint({key}, (5,), 0, 10)")
        rows.append(f"jax.random.randint({key}, (6,), -100, 100)")
        rows.append(f"jax.random.randint({key}, (4,), 5, 5)")
        rows.append(f"jax.random.randint({key}, (4,), 10, 3)")
        rows.append(f"jax.random.randint({key}, (4,), 0, 2**31 - 1)")
        rows.append(f"jax.random.randint({key}, (4,), -(2**31), 2**31 - 1)")
        rows.append(f"jax.random.randint({key}, (3, 2), jnp.array([0, 10]), jnp.array([5, 1000]))")
        rows.append(f"jax.random.randint({key}, (5,), 0, 256, dtype=jnp.uint8)")
        rows.append(f"jax.random.randint({key}, (5,), -128, 128, dtype=jnp.int8)")
        rows.append(f"jax.random.randint({key}, (5,), 0, 1000, dtype=jnp.int16)")
        rows.append(f"jax.random.randint({key}, (5,), 3, 70000, dtype=jnp.uint32)")
        rows.append(f"jax.random.randint({P.format(s)}, (3,), 0, 3)")
        rows.append(f"jax.random.permutation({key}, 10)")
        rows.append(f"jax.random.permutation({key}, 1)")
        rows.append(f"jax.random.permutation({key}, 37)")
        rows.append(f"jax.random.permutation({key}, jnp.arange(6.0) * 1.5)")
        rows.append(f"jax.random.permutation({key}, jnp.arange(12).reshape(3, 4))")
        rows.append(f"jax.random.permutation({key}, jnp.arange(12).reshape(3, 4), axis=1)")
        rows.append(f"jax.random.permutation({key}, jnp.arange(12).reshape(3, 4), axis=1, independent=True)")
        rows.append(f"jax.random.choice({key}, 10, (3,))")
        rows.append(f"jax.random.choice({key}, 10, (4,), replace=False)")
        rows.append(f"jax.random.choice({key}, 5, (2, 2), replace=False)")
        rows.append(f"jax.random.choice({key}, jnp.array([1.5, 2.5, 3.5, 4.5]), (3,))")
        rows.append(f"jax.random.choice({key}, jnp.array([1.5, 2.5, 3.5, 4.5]), (2,), replace=False)")
        rows.append(f"jax.random.choice({key}, jnp.arange(12).reshape(3, 4), (2,), axis=1)")
        rows.append(f"jax.random.choice({key}, jnp.arange(12).reshape(3, 4), (2,), replace=False, axis=1)")
    return rows


def elements(x):
    import numpy as np

    a = np.asarray(x).ravel()
    if a.dtype == np.bool_:
        return [bool(v) for v in a]
    if np.issubdtype(a.dtype, np.integer):
        return [int(v) for v in a]
    return [float(v) for v in a]


def record(x64):
    import jax
    import jax.numpy as jnp  # noqa: F401  (used by the expressions)

    lines = []
    for expr in exprs(x64):
        x = eval(expr)
        aval = f"{x.dtype} {tuple(x.shape)}"
        lines.append("\t".join([str(x64), expr, aval, repr(elements(x)), json.dumps(str(x))]))
    return lines


def exhaustive(out):
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax import lax

    n = 1 << 22
    save = lambda name, x: np.asarray(x).tofile(os.path.join(out, name))
    for x64 in (False, True):
        jax.config.update("jax_enable_x64", x64)
        k = jax.random.key(42)
        w = 64 if x64 else 32
        save(f"normal_f{w}.bin", jax.random.normal(k, (n,)))
        save(f"gumbel_f{w}.bin", jax.random.gumbel(k, (n,)))
        save(f"uniform_f{w}.bin", jax.random.uniform(k, (n,), minval=-3.0, maxval=7.5))
        save(f"randint_i{w}.bin", jax.random.randint(k, (n,), -7, 10**12 if x64 else 1000))
        if not x64:
            save("truncated_normal_f32.bin", jax.random.truncated_normal(k, -1.5, 0.7, (n,)))
    jax.config.update("jax_enable_x64", False)
    bits = jnp.asarray(np.arange(1 << 23, dtype=np.uint32) << 9)
    # The float32 ops of `_uniform` and `_normal_real` / `_gumbel` on given bits.
    unit = lambda b: lax.bitcast_convert_type(lax.shift_right_logical(b, jnp.uint32(9)) | jnp.uint32(0x3F800000), jnp.float32) - jnp.float32(1)
    lo = np.nextafter(np.float32(-1), np.float32(0))
    normal = jax.jit(lambda b: lax.mul(np.float32(np.sqrt(2)), lax.erf_inv(lax.max(lo, unit(b) * (np.float32(1) - lo) + lo))))
    tiny = np.float32(np.finfo(np.float32).tiny)
    gumbel = jax.jit(lambda b: -jnp.log(-jnp.log(lax.max(tiny, unit(b) * (np.float32(1) - tiny) + tiny))))
    save("normal_f32_all_mantissas.bin", normal(bits))
    save("gumbel_f32_all_mantissas.bin", gumbel(bits))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--exhaustive":
        os.makedirs(sys.argv[2], exist_ok=True)
        exhaustive(sys.argv[2])
        return
    if len(sys.argv) > 1:
        for line in record(int(sys.argv[1])):
            print(line)
        return
    rows = []
    for x64 in (0, 1):
        env = dict(os.environ, JAX_ENABLE_X64=str(x64), JAX_PLATFORMS="cpu")
        out = subprocess.run([sys.executable, __file__, str(x64)], env=env, check=True, capture_output=True, text=True)
        rows.extend(out.stdout.splitlines())
    with open(OUT, "w") as f:
        f.write("# Recorded from JAX 0.10.2 by tests/conformance/gen_random_golden.py; do not edit.\n")
        f.write("x64\texpr\taval\tvalues\tstr\n")
        for row in rows:
            f.write(row + "\n")
    print(f"wrote {len(rows)} rows to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
