"""Golden data for tracelens' dtype model, recorded from real JAX.

Run with the JAX venv's python:

    /work/jaxvenv/bin/python tests/conformance/gen_dtype_golden.py

It re-runs itself in two subprocesses, one with JAX_ENABLE_X64=0 and one with
JAX_ENABLE_X64=1, and writes tracer-core/tests/data/promotion.tsv, which
tracer-core/tests/dtype_promotion.rs checks against `tracer_core::jax::dtypes`.

TSV columns (tab separated, one header line, `#` lines are comments):

    x64  op  operands  avals  result

* x64: 0 or 1.
* op: what was run, see `OPS` below.
Dtypes are written with JAX's short names (`dtypes.short_dtype_name`: f32, bf16, u8, c64,
bool) and a weak one with a leading `~` (`~f32`), as JAX prints weak avals.

* operands: comma-separated operand specs:
    S:<dtype>   strong array, `jnp.zeros((), dtype)` (so canonicalized when x64 is off)
    W:<dtype>   weak array of `canonicalize(dtype)`, made with
                `lax_internal._convert_element_type(..., weak_type=True)`
    R:<dtype>   strong array of exactly <dtype>, even a 64-bit one with x64 off
                (`_convert_element_type(..., weak_type=False)`); only when x64 is off
    RW:<dtype>  the same, weak
    P:bool|int|float|complex   the Python scalar True, 1, 1.0 or 1j
    D:<dtype>   a dtype specifier (`np.dtype(...)`), for `promote_types` and
                `result_type_of_dtypes`
    T:bool|int|float|complex   the Python type itself, same ops
* avals: comma-separated, what JAX made of each operand (`jax.typeof(x)`: `f32`, `~f32`);
  for D:/T: operands the spec itself.
* result: the result dtype (`f32`, `~f32`), or `error:<ExceptionClass>:<message>`.
"""

import itertools
import os
import random
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tracer-core", "tests", "data", "promotion.tsv")

DTYPE_NAMES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bfloat16", "float16", "float32", "float64", "complex64", "complex128",
]
SIXTY_FOUR_BIT = ["int64", "uint64", "float64", "complex128"]
DTYPE_BY_SHORT = {}  # filled below: "f32" -> "float32"
PY_KINDS = ["bool", "int", "float", "complex"]

OPS = {
    # dtypes.result_type(*xs, return_weak_type_flag=True): what jnp.result_type computes,
    # with the weak flag it drops.
    "result_type",
    # dtypes.lattice_result_type(*xs): the dtype and weak flag that jnp's binary ufuncs
    # (promote_dtypes) convert their operands to.
    "lattice_result_type",
    # jax.typeof(jnp.add(x, y)), eager.
    "add",
    # jax.typeof(jnp.true_divide(x, y)), eager.
    "true_divide",
    # jnp.promote_types(a, b) on dtype specifiers / Python types.
    "promote_types",
    # dtypes.result_type(*specs, return_weak_type_flag=True) on dtype specifiers / Python types.
    "result_type_of_dtypes",
    # jax.typeof(jnp.<reduction>(x)) for one operand, eager.
    "sum", "prod", "max", "min", "mean", "var", "std",
}


def short(dtype_name):
    """JAX's short dtype name (`dtypes.short_dtype_name`): float32 -> f32, bfloat16 -> bf16."""
    return (dtype_name.replace("float", "f").replace("uint", "u").replace("int", "i")
            .replace("complex", "c"))


def fmt_aval(aval):
    return ("~" if aval.weak_type else "") + short(str(aval.dtype))


def fmt_result(dtype, weak):
    return ("~" if weak else "") + short(str(dtype))


SHORT_NAMES = [short(n) for n in DTYPE_NAMES]
DTYPE_BY_SHORT.update({short(n): n for n in DTYPE_NAMES})


def fmt_error(exc):
    msg = str(exc).replace("\t", " ").replace("\n", " ")
    return f"error:{type(exc).__name__}:{msg}"


def record_one_config():
    warnings.simplefilter("ignore")
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax._src import dtypes
    from jax._src.lax import lax as lax_internal

    x64 = bool(jax.config.jax_enable_x64)
    rows = []

    def make_operand(spec):
        kind, name = spec.split(":")
        name = DTYPE_BY_SHORT.get(name, name)
        if kind == "S":
            return jnp.zeros((), np.dtype(name))
        if kind == "W":
            strong = jnp.zeros((), np.dtype(name))
            return lax_internal._convert_element_type(strong, strong.dtype, weak_type=True)
        if kind in ("R", "RW"):
            return lax_internal._convert_element_type(
                jnp.zeros(()), np.dtype(name), weak_type=(kind == "RW"))
        if kind == "P":
            return {"bool": True, "int": 1, "float": 1.0, "complex": 1j}[name]
        if kind == "D":
            return np.dtype(name)
        if kind == "T":
            return {"bool": bool, "int": int, "float": float, "complex": complex}[name]
        raise ValueError(spec)

    def aval_of(spec, value):
        if spec.startswith(("D:", "T:")):
            return spec.split(":")[1]  # already short
        return fmt_aval(jax.typeof(value))

    def record(op, specs, run):
        values = [make_operand(s) for s in specs]
        avals = ",".join(aval_of(s, v) for s, v in zip(specs, values))
        try:
            result = run(*values)
        except Exception as exc:  # noqa: BLE001 -- an exception is a golden result too
            result = fmt_error(exc)
        rows.append(f"{int(x64)}\t{op}\t{','.join(specs)}\t{avals}\t{result}")

    def rt(*xs):
        return fmt_result(*dtypes.result_type(*xs, return_weak_type_flag=True))

    def lrt(*xs):
        return fmt_result(*dtypes.lattice_result_type(*xs))

    def typeof_of(f):
        return lambda *xs: fmt_aval(jax.typeof(f(*xs)))

    array_specs = (
        [f"S:{n}" for n in SHORT_NAMES]
        + [f"W:{n}" for n in SHORT_NAMES]
        + [f"P:{k}" for k in PY_KINDS]
    )
    if not x64:
        array_specs += [f"R:{short(n)}" for n in SIXTY_FOUR_BIT]
        array_specs += [f"RW:{short(n)}" for n in SIXTY_FOUR_BIT]
    dtype_specs = [f"D:{n}" for n in SHORT_NAMES] + [f"T:{k}" for k in PY_KINDS]

    # One operand.
    for a in array_specs:
        record("result_type", [a], rt)
        record("lattice_result_type", [a], lrt)
    for a in dtype_specs:
        record("result_type_of_dtypes", [a], rt)

    # Every ordered pair.
    for a, b in itertools.product(array_specs, repeat=2):
        record("result_type", [a, b], rt)
        record("lattice_result_type", [a, b], lrt)
        record("add", [a, b], typeof_of(jnp.add))
        record("true_divide", [a, b], typeof_of(jnp.true_divide))
    for a, b in itertools.product(dtype_specs, repeat=2):
        record("promote_types", [a, b], lambda x, y: short(str(jnp.promote_types(x, y))))
        record("result_type_of_dtypes", [a, b], rt)

    # Promotion looks at the set of operands, so unordered triples cover n-ary promotion
    # (over the strong dtypes, the Python scalars and some non-default weak dtypes); a
    # seeded sample of 4- and 5-tuples drawn from every operand checks longer lists.
    triple_specs = (
        [f"S:{n}" for n in SHORT_NAMES] + [f"P:{k}" for k in PY_KINDS[1:]]
        + [f"W:{n}" for n in ("u8", "i16", "bf16", "f16", "c64")]
    )
    for triple in itertools.combinations_with_replacement(triple_specs, 3):
        record("result_type", list(triple), rt)
        record("lattice_result_type", list(triple), lrt)
    rng = random.Random(20260102 + int(x64))
    for _ in range(400):
        specs = rng.choices(array_specs, k=rng.choice([4, 5]))
        record("result_type", specs, rt)
        record("lattice_result_type", specs, lrt)

    # Reductions of one operand.
    reductions = {
        "sum": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min,
        "mean": jnp.mean, "var": jnp.var, "std": jnp.std,
    }
    reduction_specs = (
        [f"S:{n}" for n in SHORT_NAMES] + [f"W:{n}" for n in SHORT_NAMES]
        + [f"P:{k}" for k in PY_KINDS]
    )
    for op, f in reductions.items():
        for a in reduction_specs:
            record(op, [a], typeof_of(f))

    assert all(row.split("\t")[1] in OPS for row in rows)
    sys.stdout.write("".join(row + "\n" for row in rows))


def main():
    if os.environ.get("TRACELENS_DTYPE_GOLDEN_CHILD"):
        record_one_config()
        return
    chunks = []
    for x64 in ("0", "1"):
        env = dict(os.environ, JAX_ENABLE_X64=x64, JAX_PLATFORMS="cpu",
                   TRACELENS_DTYPE_GOLDEN_CHILD="1")
        proc = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env,
                              check=True, capture_output=True, text=True)
        chunks.append(proc.stdout)
    import jax
    header = (
        f"# Recorded from real JAX {jax.__version__} by tests/conformance/gen_dtype_golden.py;"
        " do not edit by hand.\n"
        "x64\top\toperands\tavals\tresult\n"
    )
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(header + "".join(chunks))
    n = sum(chunk.count("\n") for chunk in chunks)
    print(f"wrote {n} rows to {os.path.relpath(OUT, REPO)}")


if __name__ == "__main__":
    main()
