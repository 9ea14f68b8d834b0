"""Golden values for tracelens' CPU kernels (the differential op table), recorded from real JAX.

Run with the JAX venv's python:

    /work/jaxvenv/bin/python tests/conformance/gen_ops_golden.py          # rewrite the table
    /work/jaxvenv/bin/python tests/conformance/gen_ops_golden.py --check  # exit 1 if it drifted

`--check` compares floats within the tolerance of their family, written next to the table
(tracer-core/tests/data/ops_tolerances.tsv, read through ops_tolerance.py); `--check --save-jax F`
keeps JAX's values in F and `--check --jax F --table T` checks a table T against them without JAX.

It re-runs itself in two subprocesses, one with JAX_ENABLE_X64=0 and one with
JAX_ENABLE_X64=1 (sharing one XLA compilation cache, see `table`), and writes
tracer-core/tests/data/ops.tsv, which tracer-core/tests/ops_golden.rs checks: each row's
expression is run through `tracer_core::analyze_file` and the elements it prints are compared
with JAX's within a per-dtype tolerance (docs/evaluator.md). `cargo xtask conformance` runs `--check`.

TSV columns (tab separated, one header line, `#` lines are comments):

    x64  group  expr  aval  values

* x64: 0 or 1 (`jax.config.update("jax_enable_x64", True)` first when 1).
* group: the primitive family the row exercises (`unary`, `binary`, `reduce`, ...).
* expr: a Python expression over `jax`, `jnp` (`jax.numpy`) and `lax` (`jax.lax`), its
  inputs written as literals so that tracelens evaluates the same program.
* aval: `print(x.dtype, x.shape)`, e.g. `float32 (3,)`.
* values: `repr([float(v) for v in x.ravel()])` (int(v) for integer dtypes, bool(v) for
  bool): exact, so a float32 prints the float64 it widens to.

The values are those of JAX 0.10.2 on an x86-64 CPU (XLA flushes float32 denormals to zero
there). bfloat16 and float16 rows (group `half`) are recorded with x64 off only.
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops_tolerance as ot  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tracer-core", "tests", "data", "ops.tsv")

NAN, INF = "float('nan')", "float('inf')"


def arr(values, dtype):
    return f"jnp.array([{', '.join(values)}], dtype=jnp.{dtype})"


def float_inputs(dtype):
    """Ordinary values, then the edge values: NaN, ±Inf, ±0, exp/log overflow, tiny, huge."""
    ordinary = ["-2.5", "-1.0", "-0.5", "0.25", "0.5", "1.5", "2.5", "3.75"]
    edges = [NAN, INF, f"-{INF}", "-0.0", "0.0", "88.5", "89.0", "-104.0", "710.0", "1e-30", "3e38", "-7.0"]
    return arr(ordinary, dtype), arr(edges, dtype)


def unit_inputs(dtype):
    return arr(["-1.0", "-0.75", "-0.5", "-0.0", "0.0", "0.3", "0.9", "1.0", "1.5", NAN], dtype)


def int_inputs(dtype):
    if dtype.startswith("u"):
        hi = {"uint8": 255, "uint32": 2**32 - 1}[dtype]
        return arr([str(v) for v in [0, 1, 2, 3, 7, 100, hi - 1, hi]], dtype), arr([str(v) for v in [1, 2, 3, 5, 9, 7, 2, hi]], dtype)
    lo, hi = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}[dtype]
    a = [-7, 7, -7, 7, 0, -1, 5, lo, hi, -3]
    b = [2, -2, -2, 2, 3, 4, -5, -1, 1, 3]
    return arr([str(v) for v in a], dtype), arr([str(v) for v in b], dtype)


UNARY_FLOAT = [
    "jnp.negative", "jnp.sign", "jnp.floor", "jnp.ceil", "jnp.round", "jnp.isfinite", "jnp.exp", "jnp.exp2",
    "jnp.log", "jnp.log1p", "jnp.expm1", "jnp.tanh", "jax.nn.sigmoid", "jnp.sin", "jnp.cos", "jnp.tan",
    "jnp.arctan", "jnp.sinh", "jnp.cosh", "jnp.arcsinh", "jnp.sqrt", "lax.rsqrt", "jnp.cbrt", "jnp.abs",
    "jnp.square", "jnp.logical_not", "jax.scipy.special.erf", "jax.scipy.special.gammaln",
    "jax.scipy.special.digamma", "jnp.isinf", "jnp.isnan", "jnp.trunc",
]
UNARY_UNIT = ["jnp.arcsin", "jnp.arccos", "jnp.arctanh", "jnp.arccosh"]
UNARY_INT = ["jnp.negative", "jnp.abs", "jnp.sign", "jnp.square", "jnp.invert", "jnp.logical_not", "jnp.isinf", "jnp.trunc"]
BINARY_FLOAT = [
    "jnp.add", "jnp.subtract", "jnp.multiply", "jnp.divide", "jnp.floor_divide", "jnp.remainder", "jnp.fmod",
    "jnp.power", "jnp.maximum", "jnp.minimum", "jnp.arctan2", "lax.rem", "jnp.nextafter", "jnp.hypot",
]
BINARY_INT = [
    "jnp.add", "jnp.subtract", "jnp.multiply", "jnp.floor_divide", "jnp.remainder", "jnp.fmod", "lax.div",
    "lax.rem", "jnp.maximum", "jnp.minimum", "jnp.bitwise_and", "jnp.bitwise_or", "jnp.bitwise_xor",
]
COMPARE = ["jnp.equal", "jnp.not_equal", "jnp.less", "jnp.less_equal", "jnp.greater", "jnp.greater_equal"]


def ramp(n, shape, dt, scale="0.37"):
    """`arange(n).reshape(shape) % 7`, shifted to -3..3 for int32, scaled to about -1..1 otherwise."""
    base = f"jnp.arange({n}, dtype=jnp.{dt}).reshape{shape} % 7"
    return f"({base} - 3)" if dt == "int32" else f"({base} * {scale} - 1.1)"


def float_elementwise(dt):
    """The unary, binary and comparison rows of one float dtype."""
    out = []
    ordinary, edges = float_inputs(dt)
    for f in UNARY_FLOAT:
        out += [("unary", f"{f}({ordinary})"), ("unary", f"{f}({edges})")]
    for f in UNARY_UNIT:
        out.append(("unary", f"{f}({unit_inputs(dt)})"))
    for f in BINARY_FLOAT:
        out.append(("binary", f"{f}({ordinary}, {arr(['2.0', '-0.5', '-2.0', '0.0', '3.0', '-1.5', '0.75', '-4.0'], dt)})"))
        out.append(("binary", f"{f}({edges}, {arr(['1.0', NAN, '2.0', '0.0', '-0.0', '-0.5', '0.5', '3.0', '-1.0', '2.0', '-2.0', INF], dt)})"))
    for f in COMPARE:
        out.append(("compare", f"{f}({edges}, {arr([NAN, INF, '0.0', '0.0', '-0.0', '88.5', '-1.0', '-104.0', INF, '1e-30', '3e38', '2.0'], dt)})"))
    return out


def composed_derivative_rows(dt):
    """Derivatives JAX takes through a composition or a rule of its own: `reduce_prod` (a tree
    of products), `cumprod`/`cummax`/`cummin` (`associative_scan`, whose `max`/`min` share a
    tangent between tied operands and whose interleaving adds zeros, so `-0.` becomes `0.`
    in the primal value under `jvp`), and `erf_inv` (`sqrt(pi)/2 * exp(ans**2)`). Zeros,
    ties, NaN and infinities are where a formula such as `prod(x) / x` differs from JAX."""
    out = []
    a = lambda values: arr(values, dt)
    ordinary = a(["-2.5", "-1.0", "-0.5", "0.25", "0.5", "1.5", "2.5", "3.75"])
    zeros = [a(["2.0", "0.0", "3.0", "5.0"]), a(["2.0", "0.0", "3.0", "0.0", "5.0", "-1.5", "4.0"]),
             a(["-0.0", "1.0", "2.0"]), a(["2.0", NAN, "3.0", "0.0", "1.5"]), a([INF, "0.0", "2.0", "-1.0", "0.5"]),
             a(["1.5"]), a(["0.5", "-2.0"])]
    m = f"(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) * 0.5 - 2.0)"
    c = f"(jnp.cos(jnp.arange(24, dtype=jnp.{dt})).reshape(2, 3, 4) * 1.5)"
    w7 = f"jnp.arange(1, 8, dtype=jnp.{dt})"
    for x in [ordinary] + zeros:
        n = x.count(",")  # the values' commas and the one before `dtype=`
        w = f"jnp.arange(1, {n + 1}, dtype=jnp.{dt})"
        out.append(("reduce", f"jax.grad(jnp.prod)({x})"))
        out.append(("reduce", f"jax.jvp(jnp.prod, ({x},), ({w},))[1]"))
        out.append(("cumulative", f"jax.grad(lambda v: jnp.sum(jnp.cumprod(v) * {w}))({x})"))
        out.append(("cumulative", f"jax.jvp(jnp.cumprod, ({x},), ({w} - 3.0,))[0]"))
        out.append(("cumulative", f"jax.jvp(jnp.cumprod, ({x},), ({w} - 3.0,))[1]"))
    for axis in ["0", "1", "(0, 1)"]:
        out.append(("reduce", f"jax.grad(lambda v: jnp.sum(jnp.prod(v, axis={axis}) ** 2))({m})"))
    out.append(("reduce", f"jax.grad(lambda v: jnp.sum(jnp.prod(v, axis=(0, 2)) * jnp.arange(3, dtype=jnp.{dt})))({c})"))
    out.append(("reduce", f"jax.jvp(lambda v: jnp.prod(v, axis=1), ({c},), (jnp.sin({c}),))[1]"))
    out.append(("reduce", f"jax.hessian(jnp.prod)({a(['1.5', '-2.0', '0.5'])})"))
    out.append(("reduce", f"jax.hessian(jnp.prod)({a(['1.5', '0.0', '0.5', '2.0'])})"))
    out.append(("reduce", f"jax.value_and_grad(jnp.prod)({a(['-0.0', '2.0'])})[0]"))
    ties = [a(["1.0", "3.0", "3.0", "2.0", "3.0", "5.0", "1.0"]), a(["1.0", "3.0", NAN, "2.0", "5.0", "0.5", "7.0"]),
            a(["0.0", "-0.0", "0.0", "-1.0", "0.0", "2.0", "2.0"]), a([f"-{INF}", "1.0", INF, "1.0", INF, "-2.0", "0.5"])]
    for x in ties:
        for op in ["cummax", "cummin"]:
            for rev in ["False", "True"]:
                out.append(("cumulative", f"jax.grad(lambda v: jnp.sum(lax.{op}(v, reverse={rev}) * {w7}))({x})"))
            out.append(("cumulative", f"jax.jvp(lambda v: lax.{op}(v), ({x},), ({w7},))[1]"))
        out.append(("cumulative", f"jax.grad(lambda v: jnp.sum(lax.cumprod(v, reverse=True) * {w7}))({x})"))
    for op in ["cumprod", "cummax", "cummin"]:
        out.append(("cumulative", f"jax.grad(lambda v: jnp.sum(lax.{op}(v, axis=1) * jnp.sin({m})))({m})"))
        out.append(("cumulative", f"jax.grad(lambda v: jnp.sum(lax.{op}(v, axis=0, reverse=True) ** 2))({c})"))
        out.append(("cumulative", f"jax.jvp(lambda v: lax.{op}(v, axis=2), ({c},), (jnp.cos({c}),))[1]"))
        out.append(("cumulative", f"jax.hessian(lambda v: jnp.sum(lax.{op}(v) ** 2))({a(['0.5', '-1.5', '2.0', '2.0', '1.0'])})"))
    out.append(("cumulative", f"jax.jvp(lambda v: lax.cummax(v), ({a(['-0.0', '-1.0', '-0.0'])},), ({a(['1.0', '2.0', '3.0'])},))[0]"))
    unit = unit_inputs(dt)
    out.append(("unary", f"jax.scipy.special.erfinv({unit})"))
    out.append(("unary", f"lax.erf_inv({ordinary} * 0.25)"))
    out.append(("unary", f"jax.grad(lambda v: jnp.sum(jax.scipy.special.erfinv(v)))({unit})"))
    out.append(("unary", f"jax.jvp(jax.scipy.special.erfinv, ({unit},), ({unit} + 2.0,))[1]"))
    out.append(("unary", f"jax.grad(lambda v: jnp.sum(jax.grad(lambda u: jnp.sum(lax.erf_inv(u)))(v)))({ordinary} * 0.25)"))
    # `top_k`: XLA's total order (NaN first, `0.` before `-0.`, equal values in index order),
    # and JAX's rule, the tangent gathered at the indices.
    for x in ties + [a(["-0.0", "0.0", "-0.0", "1.0", f"-{NAN}", NAN, "-1.0"])]:
        for i in [0, 1]:
            out.append(("sort", f"lax.top_k({x}, 5)[{i}]"))
        out.append(("sort", f"jax.grad(lambda v: jnp.sum(lax.top_k(v, 4)[0] * jnp.arange(1, 5, dtype=jnp.{dt})))({x})"))
        out.append(("sort", f"jax.jvp(lambda v: lax.top_k(v, 3)[0], ({x},), ({w7},))[1]"))
    for i in [0, 1]:
        out.append(("sort", f"lax.top_k({c}, 2)[{i}]"))
    out.append(("sort", f"jax.grad(lambda v: jnp.sum(lax.top_k(v, 3)[0] ** 2))({c})"))
    out.append(("sort", f"jax.jvp(lambda v: lax.top_k(v, 2)[0], ({m},), (jnp.cos({m}),))[1]"))
    out.append(("sort", f"jax.hessian(lambda v: jnp.sum(lax.top_k(v, 2)[0] ** 3))({a(['0.5', '-1.5', '2.0', '2.0', '1.0'])})"))
    return out


def rows(x64):
    """(group, expr) pairs for one x64 setting."""
    out = []
    floats = ["float32"] + (["float64"] if x64 else [])
    ints = ["int32", "uint8", "uint32"] + (["int64"] if x64 else [])
    for dt in floats:
        ordinary, edges = float_inputs(dt)
        out += float_elementwise(dt)
        out.append(("select", f"jnp.where({edges} > 0, {edges}, -{edges})"))
        out.append(("clamp", f"jnp.clip({edges}, -1.0, 100.0)"))
        out.append(("clamp", f"lax.clamp(jnp.{dt}(-1.0), {ordinary}, jnp.{dt}(2.0))"))
        out.append(("integer_pow", f"{ordinary} ** 3"))
        out.append(("integer_pow", f"{ordinary} ** -2"))
        out.append(("integer_pow", f"lax.integer_pow({edges}, 2)"))
        out.append(("pow", f"{ordinary} ** 0.5"))
        out.append(("pow", f"jnp.power({edges}, 3.0)"))
        for target in ["int32", "uint8", "bool"] + (["int64"] if x64 else []):
            out.append(("convert", f"{ordinary}.astype(jnp.{target})"))
        out.append(("convert", f"{edges}.astype(jnp.bool_)"))
        # jnp.trace: the diagonal's sum, off-diagonal offsets, axes moved last, and its gradient.
        m = f"(jnp.arange(24, dtype=jnp.{dt}).reshape(2, 3, 4) * 0.5 - 3)"
        out.append(("trace", f"jnp.trace({m}[0])"))
        out.append(("trace", f"jnp.trace({m}[1], offset=1)"))
        out.append(("trace", f"jnp.trace({m}[1], offset=-2)"))
        out.append(("trace", f"jnp.trace({m}, axis1=1, axis2=2)"))
        out.append(("trace", f"jnp.trace({m}, offset=1, axis1=0, axis2=2)"))
        out.append(("trace", f"jnp.trace({m}, axis1=-1, axis2=0)"))
        out.append(("trace", f"jax.grad(lambda a: jnp.trace(a, offset=1) ** 2)({m}[0])"))
        # jnp.hypot's and jnp.trunc's derivatives (zero where hypot's operands are both zero).
        for argnum in (0, 1):
            out.append(("hypot", f"jax.grad(lambda x, y: jnp.sum(jnp.hypot(x, y)), argnums={argnum})({ordinary}, {arr(['2.0', '-0.5', '-2.0', '0.0', '3.0', '-1.5', '0.75', '-4.0'], dt)})"))
        out.append(("hypot", f"jax.grad(lambda x: jnp.sum(jnp.hypot(x, jnp.zeros_like(x))))({arr(['0.0', '-0.0', '1.0', '-2.0'], dt)})"))
        out.append(("trunc", f"jax.grad(lambda x: jnp.sum(jnp.trunc(x) * x))({ordinary})"))
    for dt in ints:
        a, b = int_inputs(dt)
        for f in UNARY_INT:
            out.append(("unary", f"{f}({a})"))
        for f in BINARY_INT:
            out.append(("binary", f"{f}({a}, {b})"))
        for f in COMPARE:
            out.append(("compare", f"{f}({a}, {b})"))
        out.append(("binary", f"jnp.left_shift({a}, {arr(['1', '2', '3', '0', '4', '1', '5', '1'] + (['2', '1'] if not dt.startswith('u') else []), dt)})"))
        out.append(("binary", f"jnp.right_shift({a}, {arr(['1', '2', '3', '0', '4', '1', '5', '1'] + (['2', '1'] if not dt.startswith('u') else []), dt)})"))
        out.append(("integer_pow", f"{a} ** 2"))
        out.append(("integer_pow", f"lax.integer_pow({a}, 3)"))
        out.append(("trace", f"jnp.trace(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4), offset=1)"))
        out.append(("hypot", f"jnp.hypot({a}, {b})"))
        out.append(("select", f"jnp.where({a} > {b}, {a}, {b})"))
        out.append(("clamp", f"jnp.clip({a}, 1, 100)"))
        out.append(("convert", f"{a}.astype(jnp.float32)"))
        out.append(("convert", f"{a}.astype(jnp.bool_)"))
        out.append(("convert", f"{a}.astype(jnp.int32)"))
        out.append(("convert", f"{a}.astype(jnp.uint8)"))
    bools = arr(["True", "False", "True", "False"], "bool_"), arr(["True", "True", "False", "False"], "bool_")
    for f in ["jnp.logical_and", "jnp.logical_or", "jnp.logical_xor", "jnp.bitwise_and", "jnp.equal", "jnp.not_equal"]:
        out.append(("binary", f"{f}({bools[0]}, {bools[1]})"))
    # The logical functions take any dtype: each operand is `x != 0` first.
    nonbool = arr(["1.5", "0.0", "-2.0", "0.0", NAN], "float32"), arr(["0.0", "3.0", NAN, "0.0", "1.0"], "float32")
    for f in ["jnp.logical_and", "jnp.logical_or", "jnp.logical_xor"]:
        out.append(("binary", f"{f}({nonbool[0]}, {nonbool[1]})"))
        out.append(("binary", f"{f}({arr(['0', '2', '-1', '0'], 'int32')}, 1)"))
    out.append(("unary", f"jnp.logical_not({bools[0]})"))
    out.append(("unary", f"~{bools[0]}"))
    out.append(("reduce", f"jnp.all({bools[0]})"))
    out.append(("reduce", f"jnp.any({bools[1]})"))
    out.append(("reduce", f"jnp.sum({bools[0]})"))

    # Overflow wraps for integers (JAX defines two's-complement wraparound).
    out.append(("overflow", f"{arr(['2147483647', '-2147483648', '65536'], 'int32')} + {arr(['1', '-1', '65536'], 'int32')}"))
    out.append(("overflow", f"{arr(['65536', '-2147483648', '123456789'], 'int32')} * {arr(['65536', '-1', '987654321'], 'int32')}"))
    out.append(("overflow", f"-{arr(['-2147483648', '5'], 'int32')}"))
    out.append(("overflow", f"{arr(['250', '0', '128'], 'uint8')} + {arr(['10', '0', '128'], 'uint8')}"))
    out.append(("overflow", f"{arr(['0', '3'], 'uint8')} - {arr(['1', '5'], 'uint8')}"))
    out.append(("overflow", f"{arr(['200', '16'], 'uint8')} * {arr(['3', '16'], 'uint8')}"))
    out.append(("overflow", f"{arr(['0', '4294967295'], 'uint32')} - {arr(['1', '4294967295'], 'uint32')}"))
    out.append(("overflow", f"{arr(['4294967295', '65537'], 'uint32')} * {arr(['4294967295', '65537'], 'uint32')}"))
    out.append(("overflow", f"jnp.sum({arr(['2147483647', '2147483647', '3'], 'int32')})"))
    if x64:
        out.append(("overflow", f"{arr(['9223372036854775807', '-9223372036854775808'], 'int64')} + {arr(['1', '-1'], 'int64')}"))
        out.append(("overflow", f"{arr(['4294967296', '3037000500'], 'int64')} * {arr(['4294967296', '3037000500'], 'int64')}"))
        out.append(("binary", f"{arr(['9007199254740993', '-9007199254740993'], 'int64')} + {arr(['2', '2'], 'int64')}"))
        # Exact below 2**53; from 2**53 on the float64-held data would lose low bits.
        out.append(("overflow", "jnp.arange(2**40, 2**40 + 5, dtype=jnp.int64) * 3 + 1"))
        out.append(("overflow", "jnp.sum(jnp.arange(2**40, 2**40 + 5, dtype=jnp.int64))"))
        out.append(("overflow", f"{arr(['4503599627370496'], 'int64')} * 4 + 1"))
        out.append(("overflow", f"{arr(['4294967295', '4294967295'], 'uint32')} + {arr(['1', '4294967295'], 'uint32')}"))

    # Reductions, with axes, NaN and empty inputs.
    for dt in floats + ["int32"]:
        m = f"jnp.arange(24, dtype=jnp.{dt}).reshape(2, 3, 4) - 7"
        for f in ["jnp.sum", "jnp.prod", "jnp.max", "jnp.min", "jnp.argmax", "jnp.argmin", "jnp.mean"]:
            for axis in ["None", "0", "1", "2", "(0, 2)", "-1"]:
                if f in ("jnp.argmax", "jnp.argmin") and axis.startswith("("):
                    continue
                out.append(("reduce", f"{f}({m}, axis={axis})"))
    for dt in floats:
        _, edges = float_inputs(dt)
        for f in ["jnp.sum", "jnp.max", "jnp.min", "jnp.argmax", "jnp.argmin", "jnp.prod"]:
            out.append(("reduce", f"{f}({edges})"))
            out.append(("reduce", f"{f}({edges}[4:])"))
        ties = arr(["1.0", "3.0", "3.0", "-2.0", "-2.0"], dt)
        out.append(("reduce", f"jnp.argmax({ties})"))
        out.append(("reduce", f"jnp.argmin({ties})"))
        out.append(("reduce", f"jnp.sum(jnp.zeros((0, 3), dtype=jnp.{dt}), axis=0)"))
        out.append(("reduce", f"jnp.max(jnp.full((2, 0), 1.0, dtype=jnp.{dt}), axis=1, initial=-5.0)"))
        out.append(("reduce", f"jnp.sum(jnp.linspace(0.0, 1.0, 1000, dtype=jnp.{dt}) * 0.1)"))

    # Cumulative ops.
    for dt in floats + ["int32"]:
        m = f"jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) - 5"
        for f in ["jnp.cumsum", "jnp.cumprod"]:
            for axis in ["0", "1", "None"]:
                out.append(("cumulative", f"{f}({m}, axis={axis})"))
        out.append(("cumulative", f"lax.cummax({m}, axis=1)"))
        out.append(("cumulative", f"lax.cummin({m}, axis=0, reverse=True)"))
        out.append(("cumulative", f"lax.cumsum({m}, axis=1, reverse=True)"))
    for dt in floats:
        _, edges = float_inputs(dt)
        out.append(("cumulative", f"jnp.cumsum({edges})"))
        out.append(("cumulative", f"lax.cummax({edges}, axis=0)"))
    out.append(("cumulative", f"jnp.cumsum({arr(['2147483647', '1', '5'], 'int32')})"))
    out.append(("cumulative", f"jnp.cumsum({arr(['True', 'True', 'False'], 'bool_')})"))

    # Sorting, NaN last and -0.0 == 0.0 (stable).
    for dt in floats:
        _, edges = float_inputs(dt)
        out.append(("sort", f"jnp.sort({edges})"))
        out.append(("sort", f"jnp.argsort({edges})"))
        out.append(("sort", f"jnp.sort(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) * jnp.array([1.0, -1.0, 0.5, -2.0], dtype=jnp.{dt}), axis=0)"))
        out.append(("sort", f"jnp.sort(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) * jnp.array([1.0, -1.0, 0.5, -2.0], dtype=jnp.{dt}), axis=1)"))
        out.append(("sort", f"jnp.argsort({arr(['2.0', '1.0', '2.0', '1.0', '0.0'], dt)})"))
        out.append(("sort", f"jnp.sort({arr(['2.0', '1.0', '2.0'], dt)}, descending=True)"))
    for dt in ints:
        a, _ = int_inputs(dt)
        out.append(("sort", f"jnp.sort({a})"))
        out.append(("sort", f"jnp.argsort({a})"))

    # Matrix products.
    for dt in floats + ints:
        if dt.startswith("u"):
            a = f"(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) % 5)"
            b = f"(jnp.arange(8, dtype=jnp.{dt}).reshape(4, 2) % 3)"
        else:
            a = f"(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) - 5)"
            b = f"(jnp.arange(8, dtype=jnp.{dt}).reshape(4, 2) - 3)"
        out.append(("dot", f"jnp.dot({a}, {b})"))
        out.append(("dot", f"{a} @ {b}"))
        out.append(("dot", f"jnp.dot({a}[0], {b}[:, 1])"))
    for dt in floats:
        x = f"(jnp.arange(24, dtype=jnp.{dt}).reshape(2, 3, 4) * 0.37 - 2.0)"
        y = f"(jnp.arange(40, dtype=jnp.{dt}).reshape(2, 4, 5) * -0.11 + 1.0)"
        out.append(("dot", f"jnp.matmul({x}, {y})"))
        out.append(("dot", f"jnp.einsum('bij,bjk->bik', {x}, {y})"))
        out.append(("dot", f"jnp.einsum('bij,cjk->bcik', {x}, {y})"))
        out.append(("dot", f"jnp.einsum('ij,ij->j', {x}[0], {x}[1])"))
        out.append(("dot", f"lax.dot_general({x}, {y}, (((2,), (1,)), ((0,), (0,))))"))
        out.append(("dot", f"jnp.tensordot({x}, {x}, axes=([1, 2], [1, 2]))"))
        out.append(("dot", f"jnp.outer({x}[0, 0], {y}[1, 1])"))
        n = f"jnp.sin(jnp.arange(4096, dtype=jnp.{dt}).reshape(64, 64))"
        out.append(("dot", f"{n} @ {n}.T"))
        out.append(("dot", f"jnp.dot({arr([NAN, '1.0', INF], dt)}, {arr(['1.0', '0.0', '0.0'], dt)})"))
    # Batched products as attention layers write them (group `batched`): einsum with batch
    # labels leading or not, matmul broadcasting a 2-D or size-1 batch operand against a 3-D
    # one, dot_general with batch dimensions not leading, and their derivatives.
    for dt in floats + ["int32"]:
        def t(n, shape, dt=dt):
            return ramp(n, shape, dt)
        q, k, v = t(48, (2, 2, 3, 4)), t(48, (2, 2, 3, 4)) + "[::-1]", t(48, (2, 2, 3, 4)) + " * 0.5"
        p = t(36, (2, 2, 3, 3))
        a2, b3 = t(12, (3, 4)), t(40, (2, 4, 5))
        a3, b2 = t(24, (2, 3, 4)), t(20, (4, 5))
        out.append(("batched", f"jnp.einsum('bhqd,bhkd->bhqk', {q}, {k})"))
        out.append(("batched", f"jnp.einsum('bhqk,bhkd->bhqd', {p}, {v})"))
        out.append(("batched", f"jnp.einsum('bqhd,bkhd->bhqk', {q}, {k})"))
        out.append(("batched", f"jnp.einsum('...qd,...kd->...qk', {q}, {k}[0])"))
        out.append(("batched", f"jnp.einsum('ijj->ij', {p}[0])"))
        out.append(("batched", f"{a2} @ {b3}"))
        out.append(("batched", f"jnp.matmul({a3}, {b2})"))
        out.append(("batched", f"{a3}[:1] @ {b3}"))
        out.append(("batched", f"{a3}.reshape(2, 1, 3, 4) @ {b3}.reshape(1, 2, 4, 5)"))
        out.append(("batched", f"lax.dot_general({a3}.transpose(2, 1, 0), {b3}, (((0,), (1,)), ((2,), (0,))))"))
        out.append(("batched", f"jnp.tensordot({a3}, {b3}, axes=([0, 2], [0, 1]))"))
        if dt == "int32":
            continue
        scores = f"jax.nn.softmax(jnp.einsum('bhqd,bhkd->bhqk', q, k) / 2.0, axis=-1)"
        attention = f"jnp.sum(jnp.einsum('bhqk,bhkd->bhqd', {scores}, v) ** 2)"
        out.append(("batched", f"jax.grad(lambda q: (lambda k, v: {attention})({k}, {v}))({q})"))
        out.append(("batched", f"jax.grad(lambda k: (lambda q, v: {attention})({q}, {v}))({k})"))
        out.append(("batched", f"jax.grad(lambda v: (lambda q, k: {attention})({q}, {k}))({v})"))
        out.append(("batched", f"jax.grad(lambda a: jnp.sum(jnp.tanh(a @ {b3})))({a2})"))
        out.append(("batched", f"jax.grad(lambda b: jnp.sum(jnp.tanh({a2} @ b)))({b3})"))
        out.append(("batched", f"jax.grad(lambda a: jnp.sum(jnp.sin(a @ {b3})))({a3}[:1])"))
        out.append(("batched", f"jax.grad(lambda a: jnp.sum(lax.dot_general(a, {b3}, (((0,), (1,)), ((2,), (0,)))) ** 2))({a3}.transpose(2, 1, 0))"))
        out.append(("batched", f"jax.grad(lambda b: jnp.sum(jnp.einsum('bqhd,bkhd->bhqk', {q}, b) ** 2))({k})"))
        out.append(("batched", f"jax.grad(lambda x: jnp.sum(jnp.einsum('ijj->ij', x) ** 3))({p}[0])"))
        out.append(("batched", f"jax.jvp(lambda a, b: jnp.einsum('bij,bjk->bik', a, b), ({a3}, {b3}), ({a3} * 0.5, {b3} - 1.0))[1]"))

    # The sign of a zero sum, which XLA's order of accumulation decides: one product when the
    # contraction has length 1 (`-0.` kept), a sum from `+0.` otherwise (`-0. + -0.` is `0.`),
    # except in the columns past the last full tile (8 float32, 4 float64 lanes) of a
    # vector-matrix product, summed from the first product.
    for dt in floats:
        z = arr(["0.0", "-0.0", "1.0", "0.0"], dt) + ".reshape(2, 2)"
        w = arr(["-1.0", "1.0", "0.0", "-2.0"], dt) + ".reshape(2, 2)"
        out.append(("dot", f"{z} @ {w}"))
        out.append(("dot", f"{z}.T @ {w}"))
        out.append(("dot", f"jnp.dot({z}, {w}.T)"))
        out.append(("dot", f"{z}.T @ {w}.T"))
        out.append(("dot", f"{z}[:, :1] @ {w}[:1]"))
        out.append(("dot", f"{z}[:, :1].T @ {w}[:, :1]"))
        out.append(("dot", f"-jnp.zeros((3, 5), dtype=jnp.{dt}).T @ jnp.ones((3, 4), dtype=jnp.{dt})"))
        out.append(("dot", f"-jnp.zeros((1, 3), dtype=jnp.{dt}) @ jnp.ones((3, 13), dtype=jnp.{dt})"))
        out.append(("dot", f"jnp.dot(-jnp.zeros(2, dtype=jnp.{dt}), jnp.ones((2, 6), dtype=jnp.{dt}))"))
        out.append(("dot", f"jnp.dot(-jnp.zeros(2, dtype=jnp.{dt}), jnp.ones(2, dtype=jnp.{dt}))"))
        out.append(("dot", f"jnp.dot(-jnp.zeros((4, 2), dtype=jnp.{dt}), jnp.ones(2, dtype=jnp.{dt}))"))
    out.append(("dot", f"jnp.dot({arr(['65536', '2'], 'int32')}, {arr(['65536', '3'], 'int32')})"))
    out.append(("dot", f"jnp.dot({arr(['True', 'False', 'True'], 'bool_')}, {arr(['True', 'True', 'True'], 'bool_')})"))

    # Dense linear algebra (LAPACK on CPU in JAX): solve with b a vector or a stack of
    # matrices broadcast against a's batch, inv, det, slogdet, cholesky, and singular inputs.
    for dt in floats:
        a = f"(jnp.sin(jnp.arange(16, dtype=jnp.{dt}).reshape(4, 4) * 1.3) + 3 * jnp.eye(4, dtype=jnp.{dt}))"
        batch = f"(jnp.cos(jnp.arange(18, dtype=jnp.{dt}).reshape(2, 3, 3) * 0.7) + 2 * jnp.eye(3, dtype=jnp.{dt}))"
        b = f"jnp.arange(4, dtype=jnp.{dt}) - 1.5"
        singular = arr(["1.0", "2.0", "2.0", "4.0"], dt) + ".reshape(2, 2)"
        spd = f"({a} @ {a}.T)"
        out.append(("linalg", f"jnp.linalg.solve({a}, {b})"))
        out.append(("linalg", f"jnp.linalg.solve({a}, jnp.arange(8, dtype=jnp.{dt}).reshape(4, 2))"))
        out.append(("linalg", f"jnp.linalg.solve({batch}, jnp.arange(3, dtype=jnp.{dt}))"))
        out.append(("linalg", f"jnp.linalg.solve({batch}, jnp.arange(6, dtype=jnp.{dt}).reshape(1, 3, 2))"))
        out.append(("linalg", f"jnp.linalg.solve(jnp.array([[0.0, 1.0], [1.0, 0.0]], dtype=jnp.{dt}), jnp.array([2.0, 3.0], dtype=jnp.{dt}))"))
        out.append(("linalg", f"jnp.linalg.solve(jnp.zeros((2, 2), dtype=jnp.{dt}), jnp.ones(2, dtype=jnp.{dt}))"))
        out.append(("linalg", f"jnp.linalg.inv({a})"))
        out.append(("linalg", f"jnp.linalg.inv({batch})"))
        out.append(("linalg", f"jnp.linalg.inv({singular})"))
        out.append(("linalg", f"jnp.linalg.det({a})"))
        out.append(("linalg", f"jnp.linalg.det({batch})"))
        out.append(("linalg", f"jnp.linalg.det({singular})"))
        out.append(("linalg", f"jnp.linalg.slogdet({batch} - 2.5 * jnp.eye(3, dtype=jnp.{dt}))[0]"))
        out.append(("linalg", f"jnp.linalg.slogdet({batch} - 2.5 * jnp.eye(3, dtype=jnp.{dt}))[1]"))
        out.append(("linalg", f"jnp.linalg.cholesky({spd})"))
        out.append(("linalg", f"jnp.linalg.cholesky({singular} - jnp.eye(2, dtype=jnp.{dt}))"))
        out.append(("linalg", f"jax.scipy.linalg.cholesky({spd})"))
        # Derivatives (JAX's rules: solve, inv, det through the cofactors, slogdet through
        # solve, cholesky's L·phi(L⁻¹ σ L⁻ᵀ)), forward and reverse.
        bm = f"jnp.arange(8, dtype=jnp.{dt}).reshape(4, 2) * 0.5 - 1.0"
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jnp.linalg.solve(a, {b}) ** 2))({a})"))
        out.append(("linalg", f"jax.grad(lambda b: jnp.sum(jnp.sin(jnp.linalg.solve({a}, b))))({bm})"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jnp.linalg.solve(a, jnp.arange(6, dtype=jnp.{dt}).reshape(1, 3, 2)) ** 2))({batch})"))
        out.append(("linalg", f"jax.jvp(lambda a, b: jnp.linalg.solve(a, b), ({a}, {bm}), (jnp.eye(4, dtype=jnp.{dt}), {bm}))[1]"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jnp.linalg.inv(a) ** 2))({a})"))
        out.append(("linalg", f"jax.jacfwd(jnp.linalg.inv)({batch}[0])"))
        out.append(("linalg", f"jax.grad(jnp.linalg.det)({a})"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jnp.linalg.det(a)))({batch})"))
        out.append(("linalg", f"jax.grad(jnp.linalg.det)({singular})"))
        out.append(("linalg", f"jax.grad(jnp.linalg.det)(jnp.outer(jnp.arange(4, dtype=jnp.{dt}), jnp.ones(4, dtype=jnp.{dt})) + jnp.eye(4, dtype=jnp.{dt}).at[0, 0].set(0))"))
        out.append(("linalg", f"jax.jvp(jnp.linalg.det, ({a},), ({batch}[0, 0, 0] * jnp.ones((4, 4), dtype=jnp.{dt}),))[1]"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jnp.linalg.slogdet(a)[1]))({batch} - 2.5 * jnp.eye(3, dtype=jnp.{dt}))"))
        out.append(("linalg", f"jax.hessian(lambda a: jnp.linalg.slogdet(a)[1])({batch}[1])"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jnp.linalg.cholesky(a) * jnp.arange(16, dtype=jnp.{dt}).reshape(4, 4)))({spd})"))
        out.append(("linalg", f"jax.jvp(jnp.linalg.cholesky, ({spd},), ({a},))[1]"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jax.scipy.linalg.cholesky(a) ** 2))({spd})"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jax.scipy.linalg.cholesky(a, lower=True) * {a}))({spd})"))
        # What JAX's own compositions decide: det of 2×2 and 3×3 matrices by their formulas
        # (a rounding JAX's LU would not give), of 1×1 and from 4×4 as sign · exp(logdet)
        # from `lu`, slogdet of 1×1 and 2×2 by the formula, solve and inv through `lu` and
        # `custom_linear_solve`; and second derivatives through them (hessian of det).
        tenths = f"jnp.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]], dtype=jnp.{dt})"
        five = f"(jnp.cos(jnp.arange(25, dtype=jnp.{dt}).reshape(5, 5) * 0.9) + 2 * jnp.eye(5, dtype=jnp.{dt}))"
        out.append(("linalg", f"jnp.linalg.det({tenths})"))
        out.append(("linalg", f"jnp.linalg.det({tenths} + jnp.eye(3, dtype=jnp.{dt}) / 3)"))
        out.append(("linalg", f"jnp.linalg.det({tenths}[:2, 1:] * 7)"))
        mixed = f"jnp.array([-0.705, -1.397, 0.604, -1.71, 0.144, -0.537, -1.768, 0.03, -1.85, -0.265, -1.721, -1.637, -0.302, 1.307, -1.505, -1.107, 0.51, 1.791, 0.308, -0.413, 1.905, -1.814, 1.434, -0.842, -1.423, -1.529, -0.766, 1.265, -1.277, 0.326, 0.556, -0.51, 0.191, -1.749, -1.762, -1.176], dtype=jnp.{dt}).reshape(4, 3, 3)"
        out.append(("linalg", f"jnp.linalg.det({mixed})"))
        out.append(("linalg", f"jnp.linalg.det({mixed}[:, 1:, :2])"))
        out.append(("linalg", f"jnp.linalg.det(jnp.array([[3.0]], dtype=jnp.{dt}))"))
        out.append(("linalg", f"jnp.linalg.det(jnp.array([[[-0.7]], [[0.0]]], dtype=jnp.{dt}))"))
        out.append(("linalg", f"jnp.linalg.det(2 * jnp.eye(4, dtype=jnp.{dt}))"))
        out.append(("linalg", f"jnp.linalg.det({five})"))
        out.append(("linalg", f"jnp.linalg.det(jnp.stack([{five}, -{five}, {five} * 0]))"))
        out.append(("linalg", f"jnp.linalg.slogdet({tenths}[1:, :2] * 3)[0]"))
        out.append(("linalg", f"jnp.linalg.slogdet({tenths}[1:, :2] * 3)[1]"))
        out.append(("linalg", f"jnp.linalg.slogdet(jnp.array([[-0.5]], dtype=jnp.{dt}))[1]"))
        out.append(("linalg", f"jnp.linalg.slogdet({five})[1]"))
        out.append(("linalg", f"jnp.linalg.slogdet({tenths})[0]"))
        out.append(("linalg", f"jnp.linalg.solve({five}, jnp.arange(5, dtype=jnp.{dt}) / 3)"))
        out.append(("linalg", f"jnp.linalg.inv({five})"))
        out.append(("linalg", f"jnp.linalg.inv({tenths} + jnp.eye(3, dtype=jnp.{dt}))"))
        out.append(("linalg", f"jax.grad(jnp.linalg.det)({tenths})"))
        out.append(("linalg", f"jax.grad(jnp.linalg.det)({five})"))
        out.append(("linalg", f"jax.grad(jnp.linalg.det)(jnp.array([[3.0]], dtype=jnp.{dt}))"))
        out.append(("linalg", f"jax.hessian(jnp.linalg.det)({tenths}[:2, :2])"))
        out.append(("linalg", f"jax.hessian(jnp.linalg.det)({batch}[0])"))
        out.append(("linalg", f"jax.hessian(jnp.linalg.det)({a})"))
        out.append(("linalg", f"jax.hessian(jnp.linalg.det)(jnp.array([[3.0]], dtype=jnp.{dt}))"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jax.grad(jnp.linalg.det)(a) ** 2))({a})"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.linalg.slogdet(a)[1])({tenths}[1:, :2] * 3)"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.linalg.slogdet(a)[1])({five})"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jnp.linalg.slogdet(a)[1]))(jnp.stack([{five}, -{five}]))"))
        out.append(("linalg", f"jax.jvp(lambda a: jnp.linalg.slogdet(a)[1], ({batch},), ({batch} * 0.5,))[1]"))
        out.append(("linalg", f"jax.hessian(lambda a: jnp.linalg.slogdet(a)[1])({tenths}[1:, :2] * 3)"))
        out.append(("linalg", f"jax.hessian(lambda a: jnp.sum(jnp.linalg.solve(a, {b}) ** 2))({a})"))
        out.append(("linalg", f"jax.jacrev(lambda a: jnp.linalg.inv(a)[0])({batch}[1])"))
        out.append(("linalg", f"jax.grad(lambda a, b: jnp.sum(jnp.linalg.solve(a, b) ** 3), argnums=(0, 1))({batch}, jnp.ones((2, 3), dtype=jnp.{dt}).T)[0]"))
        out.append(("linalg", f"jax.grad(lambda a, b: jnp.sum(jnp.linalg.solve(a, b) ** 3), argnums=(0, 1))({five}, jnp.arange(5, dtype=jnp.{dt}))[1]"))
    # Decompositions and triangular solves. Eigenvectors and singular vectors are defined up
    # to sign (and LAPACK's signs follow no rule), so their rows print what does not depend
    # on it: abs() of the vectors, reconstructions, projections, and derivatives of
    # sign-invariant functions. QR's factors are unique with LAPACK's sign rule and are
    # compared as they are. Group `decomposition`: JAX computes float32 factors in float32, and
    # vectors carry errors of order eps / (gap between eigenvalues), hence a wider tolerance.
    for dt in floats:
        spd = f"(lambda m: m @ m.T + jnp.eye(3, dtype=jnp.{dt}))(jnp.sin(jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3) * 1.7))"
        sym4 = f"(lambda m: m + m.T)(jnp.cos(jnp.arange(16, dtype=jnp.{dt}).reshape(4, 4) * 0.9))"
        bsym = f"(lambda m: m + jnp.swapaxes(m, -1, -2))(jnp.sin(jnp.arange(18, dtype=jnp.{dt}).reshape(2, 3, 3) * 1.1))"
        tall = f"(jnp.cos(jnp.arange(12, dtype=jnp.{dt}).reshape(4, 3) * 0.8) + jnp.eye(4, 3, dtype=jnp.{dt}))"
        btall = f"jnp.sin(jnp.arange(24, dtype=jnp.{dt}).reshape(2, 4, 3) ** 2 * 0.37)"
        low = f"(jnp.tril(jnp.sin(jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3) * 1.3)) + 2 * jnp.eye(3, dtype=jnp.{dt}))"
        rhs = f"jnp.arange(6, dtype=jnp.{dt}).reshape(3, 2) - 2.5"
        vec = f"jnp.array([1.0, -2.0, 0.5], dtype=jnp.{dt})"
        out.append(("decomposition", f"jnp.linalg.eigh({spd})[0]"))
        out.append(("decomposition", f"jnp.abs(jnp.linalg.eigh({spd})[1])"))
        out.append(("decomposition", f"jnp.linalg.eigvalsh({sym4})"))
        out.append(("decomposition", f"jnp.abs(jnp.linalg.eigh({sym4})[1])"))
        out.append(("decomposition", f"jnp.linalg.eigvalsh({bsym})"))
        out.append(("decomposition", f"(lambda w, v: (v * w[..., None, :]) @ jnp.swapaxes(v, -1, -2))(*jnp.linalg.eigh({bsym}[1]))"))
        out.append(("decomposition", f"jnp.linalg.eigh(jnp.array([[2.0, 1.0], [3.0, 2.0]], dtype=jnp.{dt}))[0]"))
        # `symmetrize_input=False`: LAPACK reads the lower triangle, or the upper with UPLO='U'.
        skew = f"jnp.array([[4.0, 1.0, -2.0], [0.5, 3.0, 0.25], [7.0, -1.0, 2.0]], dtype=jnp.{dt})"
        out.append(("decomposition", f"jnp.linalg.eigh({skew}, symmetrize_input=False)[0]"))
        out.append(("decomposition", f"jnp.abs(jnp.linalg.eigh({skew}, symmetrize_input=False)[1])"))
        out.append(("decomposition", f"jnp.linalg.eigh({skew}, UPLO='U', symmetrize_input=False)[0]"))
        out.append(("decomposition", f"jnp.linalg.eigvalsh({skew}, UPLO='U', symmetrize_input=False)"))
        out.append(("decomposition", f"jnp.linalg.svd({tall}, compute_uv=False)"))
        out.append(("decomposition", f"jnp.linalg.svd({tall}.T, compute_uv=False)"))
        out.append(("decomposition", f"jnp.linalg.svd({btall}, compute_uv=False)"))
        out.append(("decomposition", f"jnp.abs(jnp.linalg.svd({tall}, full_matrices=False)[0])"))
        out.append(("decomposition", f"jnp.abs(jnp.linalg.svd({tall}.T)[2][:3])"))
        out.append(("decomposition", f"(lambda u, s, vh: (u * s[..., None, :]) @ vh)(*jnp.linalg.svd({btall}[1], full_matrices=False))"))
        out.append(("decomposition", f"(lambda u: u @ u.T)(jnp.linalg.svd({tall})[0])"))
        out.append(("decomposition", f"jnp.linalg.svd(jnp.zeros((3, 2), dtype=jnp.{dt}), compute_uv=False)"))
        out.append(("decomposition", f"jnp.linalg.qr({tall})[0]"))
        out.append(("decomposition", f"jnp.linalg.qr({tall})[1]"))
        out.append(("decomposition", f"jnp.linalg.qr({tall}, mode='complete')[0]"))
        out.append(("decomposition", f"jnp.linalg.qr({tall}, mode='complete')[1]"))
        out.append(("decomposition", f"jnp.linalg.qr({tall}.T, mode='r')"))
        out.append(("decomposition", f"jnp.linalg.qr({btall})[0]"))
        out.append(("decomposition", f"jnp.linalg.qr(jnp.zeros((3, 2), dtype=jnp.{dt}), mode='complete')[0]"))
        out.append(("decomposition", f"jax.scipy.linalg.solve_triangular({low}, {rhs}, lower=True)"))
        out.append(("decomposition", f"jax.scipy.linalg.solve_triangular({low}, {vec}, lower=True, trans=1)"))
        out.append(("decomposition", f"jax.scipy.linalg.solve_triangular({low}.T, {vec}, unit_diagonal=True)"))
        out.append(("decomposition", f"jax.scipy.linalg.solve_triangular(jnp.stack([{low}, 2 * {low}]), jnp.stack([{vec}, {vec}]), lower=True)"))
        out.append(("decomposition", f"jax.scipy.linalg.solve_triangular(jnp.array([[0.0, 0.0], [1.0, 1.0]], dtype=jnp.{dt}), jnp.array([0.0, 1.0], dtype=jnp.{dt}), lower=True)"))
        out.append(("decomposition", f"jax.scipy.linalg.cho_solve(({low}, True), {rhs})"))
        out.append(("decomposition", f"jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor({spd}), {vec})"))
        out.append(("decomposition", f"jnp.linalg.pinv({tall})"))
        out.append(("decomposition", f"jnp.linalg.pinv({tall}.T)"))
        out.append(("decomposition", f"jnp.linalg.pinv({btall})"))
        out.append(("decomposition", f"jnp.linalg.pinv(jnp.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], dtype=jnp.{dt}))"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.pinv(a) ** 2))({tall})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.sin(jnp.linalg.pinv(a))))({tall}.T)"))
        out.append(("decomposition", f"jax.jvp(jnp.linalg.pinv, (jnp.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], dtype=jnp.{dt}),), (jnp.ones((3, 2), dtype=jnp.{dt}),))[1]"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.eigvalsh(a) * jnp.array([1.0, 2.0, 3.0], dtype=jnp.{dt})))({spd})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.eigh(a)[1][0] ** 2 * jnp.array([1.0, 2.0, 3.0], dtype=jnp.{dt})))({spd})"))
        out.append(("decomposition", f"jax.jvp(lambda a: jnp.linalg.eigh(a)[0], ({sym4},), (jnp.ones((4, 4), dtype=jnp.{dt}),))[1]"))
        out.append(("decomposition", f"jax.jvp(lambda a: jnp.abs(jnp.linalg.eigh(a)[1]), ({spd},), ({low},))[1]"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.svd(a, compute_uv=False) ** 3))({tall})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.svd(a, compute_uv=False)))({btall})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.svd(a, full_matrices=False)[0] ** 2 * jnp.arange(12, dtype=jnp.{dt}).reshape(4, 3)))({tall})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.svd(a, full_matrices=False)[2] ** 2 * jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4)))({tall}.T)"))
        out.append(("decomposition", f"jax.jvp(lambda a: jnp.abs(jnp.linalg.svd(a, full_matrices=False)[0]), ({tall},), (jnp.cos({tall}),))[1]"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.qr(a)[0] * jnp.arange(12, dtype=jnp.{dt}).reshape(4, 3)))({tall})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.qr(a)[1] ** 2 * jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3)))({tall})"))
        out.append(("decomposition", f"jax.jvp(lambda a: jnp.linalg.qr(a)[1], ({tall},), (jnp.ones((4, 3), dtype=jnp.{dt}),))[1]"))
        out.append(("decomposition", f"jax.grad(lambda l: jnp.sum(jax.scipy.linalg.solve_triangular(l, {rhs}, lower=True) ** 2))({low})"))
        out.append(("decomposition", f"jax.grad(lambda l: jnp.sum(jax.scipy.linalg.solve_triangular(l, {vec}, lower=True, trans=1) ** 2))({low})"))
        out.append(("decomposition", f"jax.grad(lambda l: jnp.sum(jax.scipy.linalg.solve_triangular(l.T, {vec}, unit_diagonal=True) ** 2))({low})"))
        out.append(("decomposition", f"jax.grad(lambda b: jnp.sum(jnp.sin(jax.scipy.linalg.cho_solve(({low}, True), b))))({rhs})"))
        out.append(("decomposition", f"jax.jvp(lambda l, b: jax.scipy.linalg.solve_triangular(l, b, lower=True), ({low}, {rhs}), ({low}.T, {rhs}))[1]"))
        # Batch axes of a and b that broadcast (jnp.vectorize's signatures in JAX).
        blow = f"jnp.stack([{low}, 2 * {low}])"
        out.append(("decomposition", f"jax.scipy.linalg.solve_triangular({low}, jnp.stack([{rhs}, -{rhs}]), lower=True)"))
        out.append(("decomposition", f"jax.scipy.linalg.solve_triangular({blow}, {rhs}, lower=True, trans=1)"))
        out.append(("decomposition", f"jax.scipy.linalg.solve_triangular({blow}[:, None], jnp.stack([{vec}, {vec} * 3, -{vec}]), lower=True)"))
        out.append(("decomposition", f"jax.scipy.linalg.cho_solve(({blow}, True), {vec})"))
        out.append(("decomposition", f"jax.scipy.linalg.cho_solve(({low}, True), jnp.stack([{rhs}, {rhs} + 1]))"))
        out.append(("decomposition", f"jax.grad(lambda l: jnp.sum(jax.scipy.linalg.solve_triangular(l, jnp.stack([{rhs}, -{rhs}]), lower=True) ** 2))({low})"))
        out.append(("decomposition", f"jax.grad(lambda b: jnp.sum(jnp.sin(jax.scipy.linalg.cho_solve(({blow}, True), b))))({rhs})"))
    # The functions JAX composes from the SVD, inv and products: lstsq, pinv's cutoffs and
    # hermitian=True, svd(hermitian=True), matrix_rank, matrix_power, cond, norm's orders,
    # and jax.scipy.linalg's inv and det; their derivatives through those primitives' rules.
    for dt in floats:
        tall = f"(jnp.cos(jnp.arange(12, dtype=jnp.{dt}).reshape(4, 3) * 0.8) + jnp.eye(4, 3, dtype=jnp.{dt}))"
        btall = f"jnp.sin(jnp.arange(24, dtype=jnp.{dt}).reshape(2, 4, 3) ** 2 * 0.37)"
        sq = f"(jnp.sin(jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3) * 1.3) + 2 * jnp.eye(3, dtype=jnp.{dt}))"
        bsq = f"(jnp.cos(jnp.arange(18, dtype=jnp.{dt}).reshape(2, 3, 3) * 0.7) + 2 * jnp.eye(3, dtype=jnp.{dt}))"
        b4 = f"jnp.array([1.0, -2.0, 0.5, 3.0], dtype=jnp.{dt})"
        b42 = f"jnp.arange(8, dtype=jnp.{dt}).reshape(4, 2) * 0.5 - 1.0"
        vec = f"jnp.array([1.0, -2.0, 0.0, 3.5, -0.25], dtype=jnp.{dt})"
        deficient = f"jnp.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], dtype=jnp.{dt})"
        for i in range(4):
            out.append(("decomposition", f"jnp.linalg.lstsq({tall}, {b4})[{i}]"))
        out.append(("decomposition", f"jnp.linalg.lstsq({tall}, {b42}, rcond=0.3)[0]"))
        out.append(("decomposition", f"jnp.linalg.lstsq({tall}, {b42}, rcond=0.3)[2]"))
        out.append(("decomposition", f"jnp.linalg.lstsq({tall}.T, {b4}[:3])[0]"))
        out.append(("decomposition", f"jnp.linalg.lstsq({deficient}, jnp.array([1.0, 2.0, 5.0], dtype=jnp.{dt}))[0]"))
        out.append(("decomposition", f"jnp.linalg.lstsq({deficient}, jnp.array([1.0, 2.0, 5.0], dtype=jnp.{dt}))[2]"))
        out.append(("decomposition", f"jnp.linalg.lstsq(jnp.zeros((0, 2), dtype=jnp.{dt}), jnp.zeros(0, dtype=jnp.{dt}))[0]"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.lstsq(a, {b4})[0] ** 2))({tall})"))
        out.append(("decomposition", f"jax.grad(lambda b: jnp.sum(jnp.linalg.lstsq({tall}, b)[1]))({b42})"))
        out.append(("decomposition", f"jnp.linalg.pinv({tall}, rtol=0.3)"))
        out.append(("decomposition", f"jnp.linalg.pinv({tall}, rcond=0.3)"))
        out.append(("decomposition", f"jnp.linalg.pinv({btall}, rtol=jnp.array([0.5, 1e-3], dtype=jnp.{dt}))"))
        out.append(("decomposition", f"jnp.linalg.pinv({sq}, hermitian=True)"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.pinv(a, hermitian=True) ** 2))({sq})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jnp.linalg.pinv(a, rtol=0.3) ** 2))({tall})"))
        out.append(("decomposition", f"jnp.linalg.svd({sq}, hermitian=True, compute_uv=False)"))
        out.append(("decomposition", f"(lambda u, s, vh: (u * s[..., None, :]) @ vh)(*jnp.linalg.svd({sq}, hermitian=True))"))
        out.append(("decomposition", f"jnp.linalg.svdvals({btall})"))
        out.append(("decomposition", f"jnp.linalg.matrix_rank({tall})"))
        out.append(("decomposition", f"jnp.linalg.matrix_rank({deficient})"))
        out.append(("decomposition", f"jnp.linalg.matrix_rank({btall}, rtol=1.2)"))
        out.append(("decomposition", f"jnp.linalg.matrix_rank({sq}, hermitian=True)"))
        out.append(("decomposition", f"jnp.linalg.matrix_rank({vec})"))
        out.append(("linalg", f"jnp.linalg.matrix_power({sq}, 5)"))
        out.append(("linalg", f"jnp.linalg.matrix_power({sq}, -3)"))
        out.append(("linalg", f"jnp.linalg.matrix_power({bsq}, 0)"))
        out.append(("linalg", f"jnp.linalg.matrix_power({bsq}, 4)"))
        out.append(("linalg", f"jax.grad(lambda a: jnp.sum(jnp.linalg.matrix_power(a, 6)))({sq} * 0.5)"))
        out.append(("decomposition", f"jnp.linalg.cond({sq})"))
        out.append(("decomposition", f"jnp.linalg.cond({tall})"))
        out.append(("decomposition", f"jnp.linalg.cond({bsq}, -2)"))
        for p in ["1", "-1", "jnp.inf", "-jnp.inf", "'fro'"]:
            out.append(("linalg", f"jnp.linalg.cond({bsq}, {p})"))
        out.append(("linalg", f"jnp.linalg.cond({deficient}[:2], 'fro')"))
        for o in ["2", "-2", "'nuc'"]:
            out.append(("decomposition", f"jnp.linalg.norm({tall}, {o})"))
            out.append(("decomposition", f"jnp.linalg.norm({btall}, {o}, axis=(2, 1), keepdims=True)"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.linalg.norm(a, 2))({tall})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.linalg.norm(a, 'nuc'))({tall})"))
        for o in ["1", "-1", "jnp.inf", "-jnp.inf", "'fro'"]:
            out.append(("reduce", f"jnp.linalg.norm({tall}, {o})"))
            out.append(("reduce", f"jnp.linalg.norm({btall}, {o}, axis=(0, 2))"))
        for o in ["0", "1", "3", "-1.5", "jnp.inf", "-jnp.inf"]:
            out.append(("reduce", f"jnp.linalg.norm({vec}, {o})"))
            out.append(("reduce", f"jnp.linalg.norm({btall}, {o}, axis=1, keepdims=True)"))
        out.append(("reduce", f"jax.grad(lambda v: jnp.linalg.norm(v, 3))({vec} + 0.5)"))
        out.append(("linalg", f"jax.scipy.linalg.inv({sq})"))
        out.append(("linalg", f"jax.scipy.linalg.det({bsq})"))
    out.append(("linalg", "jnp.linalg.solve(jnp.array([[2, 1], [1, 3]]), jnp.array([1, 2]))"))

    # bfloat16 and float16: XLA computes in float32 and rounds every result to the narrow
    # type; sums and means accumulate in float32; conversions round to nearest even.
    if not x64:
        for dt in ["bfloat16", "float16"]:
            ordinary, edges = float_inputs(dt)
            out += [("half", expr) for _, expr in float_elementwise(dt)]
            r = f"jnp.arange(1, 41, dtype=jnp.{dt})"
            out.append(("half", f"{r} / 7"))
            out.append(("half", f"{r} / jnp.full(40, 7, dtype=jnp.{dt})"))
            out.append(("half", f"1 / {r}"))
            out.append(("half", f"{r} * 0.1 + 1000"))
            out.append(("half", f"jnp.ones(3, dtype=jnp.{dt}) / 3"))
            out.append(("half", f"jnp.array([0.1, 1/3, 2/3, 1e-3, 65504.0, 65520.0, 1.00390625, 1.01171875, 3.140625], dtype=jnp.float32).astype(jnp.{dt})"))
            out.append(("half", f"jnp.array([1.00390625, 1.01171875, 2049.0, 2051.0, -7.5], dtype=jnp.float64).astype(jnp.{dt})"))
            out.append(("half", f"{ordinary}.astype(jnp.int32)"))
            out.append(("half", f"{ordinary}.astype(jnp.float32) * 3"))
            out.append(("half", f"{ordinary} + jnp.float32(0.1)"))
            out.append(("half", f"{ordinary} ** 3"))
            out.append(("half", f"jnp.where({edges} > 0, {edges}, -{edges})"))
            out.append(("half", f"jnp.clip({edges}, -1.0, 100.0)"))
            m = f"(jnp.arange(24, dtype=jnp.{dt}).reshape(2, 3, 4) * 0.37 - 2.0)"
            for f in ["jnp.sum", "jnp.prod", "jnp.max", "jnp.min", "jnp.argmax", "jnp.mean"]:
                for axis in ["None", "0", "2", "(0, 2)"]:
                    if f == "jnp.argmax" and axis.startswith("("):
                        continue
                    out.append(("half", f"{f}({m}, axis={axis})"))
            out.append(("half", f"jnp.sum(jnp.ones(1000, dtype=jnp.{dt}) * 0.1)"))
            out.append(("half", f"jnp.mean(jnp.arange(300, dtype=jnp.{dt}))"))
            out.append(("half", f"jnp.cumsum(jnp.ones(300, dtype=jnp.{dt}))[-6:]"))
            out.append(("half", f"jnp.var({m}, axis=0)"))
            out.append(("half", f"jax.nn.softmax({m}, axis=-1)"))
            out.append(("half", f"jax.nn.relu({m})"))
            out.append(("half", f"jnp.sort({edges})"))
            x = f"(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) * 0.3 - 1.0)"
            y = f"(jnp.arange(8, dtype=jnp.{dt}).reshape(4, 2) * -0.7 + 2.0)"
            out.append(("half", f"jnp.dot({x}, {y})"))
            out.append(("half", f"jnp.ones((2, 300), dtype=jnp.{dt}) * 0.1 @ jnp.ones((300, 2), dtype=jnp.{dt})"))
            out.append(("half", f"-jnp.zeros((1, 2), dtype=jnp.{dt}) @ jnp.ones((2, 10), dtype=jnp.{dt})"))
            out.append(("half", f"-jnp.zeros((2, 3), dtype=jnp.{dt}) @ jnp.ones((3, 2), dtype=jnp.{dt})"))
            b3 = f"(jnp.arange(40, dtype=jnp.{dt}).reshape(2, 4, 5) % 7 * 0.37 - 1.1)"
            out.append(("half", f"({x}).reshape(1, 3, 4) @ {b3}"))
            out.append(("half", f"jnp.einsum('bqd,bkd->bqk', {b3}, {b3} * 0.5)"))
            out.append(("half", f"({x})[jnp.array([2, 0, 5])]"))
            out.append(("half", f"({x}).at[jnp.array([1, 1])].add(0.3)"))

    # Gather (jnp indexing clamps out-of-bounds indices) and scatter (.at[] drops them).
    for dt in floats + ["int32"]:
        v = f"jnp.arange(10, dtype=jnp.{dt}) * 3 - 4"
        m = f"(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) - 5)"
        idx = "jnp.array([0, 3, 9, -1, -10, 10, 25, -25])"
        out.append(("gather", f"({v})[{idx}]"))
        out.append(("gather", f"{m}[jnp.array([2, 0, 5, -4])]"))
        out.append(("gather", f"{m}[:, jnp.array([3, -1, 7])]"))
        out.append(("gather", f"{m}[jnp.array([0, 2]), jnp.array([1, 9])]"))
        out.append(("gather", f"({v}).take(jnp.array([1, 12]), mode='clip')"))
        out.append(("gather", f"({v}).take(jnp.array([1, 12, -1]), mode='fill', fill_value=-99)"))
        out.append(("scatter", f"({v}).at[{idx}].set(100)"))
        out.append(("scatter", f"({v}).at[{idx}].add(1000)"))
        out.append(("scatter", f"({v}).at[jnp.array([1, 1, 2, 1])].add(10)"))
        out.append(("scatter", f"({v}).at[jnp.array([2, 2])].mul(3)"))
        out.append(("scatter", f"({v}).at[jnp.array([4, 4, 11])].min(-50)"))
        out.append(("scatter", f"({v}).at[jnp.array([4, 0])].max(50)"))
        out.append(("scatter", f"{m}.at[jnp.array([0, 5, -1])].set(7)"))
        out.append(("scatter", f"{m}.at[1, jnp.array([0, 3, 4])].add(7)"))
        out.append(("scatter", f"({v}).at[3].set(-1)"))
        out.append(("scatter", f"({v}).at[2:5].add(1)"))
        # `mode=` and `fill_value=`: `jnp.take` fills by default (NaN, the integer minimum),
        # clamps the indices as given under "clip" and wraps them under "wrap"; `.at[].get`
        # and `take_along_axis` read JAX's `GatherScatterMode`; `.at[]` updates clamp or drop.
        oob = "jnp.array([1, 12, -1, -11])"
        out.append(("gather", f"({v}).take({oob})"))
        out.append(("gather", f"({v}).take({oob}, mode='clip')"))
        out.append(("gather", f"({v}).take({oob}, mode='wrap')"))
        out.append(("gather", f"jnp.take({v}, {oob}, fill_value=7)"))
        out.append(("gather", f"{m}.take(jnp.array([0, 4, -5, 2]), axis=1, mode='fill', fill_value=-7)"))
        out.append(("gather", f"{m}.take(jnp.array([[0, 13], [-1, 5]]))"))
        for mode in ["'fill', fill_value=5", "'drop'", "'clip'", "'promise_in_bounds'"]:
            out.append(("gather", f"({v}).at[{oob}].get(mode={mode})"))
        out.append(("gather", f"{m}.at[jnp.array([1, 9]), 1:3].get(mode='fill', fill_value=-3)"))
        out.append(("gather", f"{m}.at[jnp.array([0, 2]), jnp.array([1, -9])].get(mode='fill', fill_value=-3)"))
        out.append(("gather", f"{m}.at[7].get(mode='fill', fill_value=-3)"))
        out.append(("gather", f"{m}.at[1, 6].get(mode='clip')"))
        ix2 = "jnp.array([[0, 5], [-1, 2], [-5, 3]])"
        out.append(("gather", f"jnp.take_along_axis({m}, {ix2}, axis=1)"))
        out.append(("gather", f"jnp.take_along_axis({m}, {ix2}, axis=1, mode='clip')"))
        out.append(("gather", f"jnp.take_along_axis({m}, {ix2}, axis=1, mode='fill', fill_value=-1)"))
        for mode in ["'clip'", "'drop'", "'promise_in_bounds'"]:
            out.append(("scatter", f"({v}).at[{oob}].set(100, mode={mode})"))
            out.append(("scatter", f"({v}).at[{oob}].add(1000, mode={mode})"))
            out.append(("scatter", f"({v}).at[{oob}].mul(2, mode={mode})"))
        out.append(("scatter", f"{m}.at[1, 7].add(100, mode='clip')"))
        out.append(("scatter", f"({v}).at[jnp.array([1, 2, 2, 14])].divide(2)"))
        out.append(("scatter", f"({v}).at[jnp.array([1, 2, 2, 14])].power(2)"))
    # The default fill of the unsigned and bool dtypes, and a fill converted to the dtype.
    for dt in ["uint8", "uint32", "bool"] + (["int64"] if x64 else []):
        v = f"(jnp.arange(10, dtype=jnp.{dt}) * 3)" if dt != "bool" else "(jnp.arange(10) % 3 == 0)"
        out.append(("gather", f"{v}.take(jnp.array([1, 12, -1, -11]))"))
        out.append(("gather", f"{v}.take(jnp.array([1, 12, -1, -11]), mode='fill', fill_value=-99)"))
        out.append(("gather", f"{v}.take(jnp.array([1, 12]), mode='fill', fill_value=2.7)"))
        out.append(("gather", f"{v}.at[jnp.array([1, 12])].get(mode='drop')"))
    # XLA's Lanczos lgamma/digamma away from the table's edge values, and lgamma's derivative.
    for dt in floats:
        g = f"jnp.array([0.1, 1.0, 1.5, 2.0, 4.5, 10.25, 33.0, -0.75, -4.2, -10.5], dtype=jnp.{dt})"
        out.append(("unary", f"lax.lgamma({g})"))
        out.append(("unary", f"lax.digamma({g})"))
        out.append(("unary", f"jax.grad(lambda x: jnp.sum(jax.scipy.special.gammaln(x)))({g})"))
    # polygamma (XLA's Hurwitz zeta: ten terms and an Euler-Maclaurin correction, far from
    # the function's value for negative x, as JAX's is), and digamma's derivative, which is
    # polygamma(1, x).
    for dt in floats:
        g = f"jnp.array([0.1, 1.0, 1.5, 2.0, 4.5, 10.25, 33.0, -0.75, -4.2, -10.5], dtype=jnp.{dt})"
        edges = arr(["0.0", "-0.0", "-1.0", "-2.0", "1e-30", "1e6", INF, f"-{INF}", NAN], dt)
        out.append(("unary", f"jax.scipy.special.polygamma(1, {g})"))
        out.append(("unary", f"jax.scipy.special.polygamma(1, {edges})"))
        out.append(("unary", f"jax.scipy.special.polygamma(2, {g})"))
        out.append(("unary", f"jax.scipy.special.polygamma(jnp.array([0, 1, 2, 3, -1]), jnp.{dt}(2.5))"))
        out.append(("unary", f"lax.polygamma(jnp.array([0.0, 1.0, 2.0, 3.0, 1.5, -1.0], dtype=jnp.{dt}), jnp.full(6, 2.5, dtype=jnp.{dt}))"))
        out.append(("unary", f"lax.polygamma(jnp.full(3, 1.0, dtype=jnp.{dt}), jnp.array([0.5, 3.0, 100.0], dtype=jnp.{dt}))"))
        out.append(("unary", f"jax.grad(lambda x: jnp.sum(lax.digamma(x)))({g})"))
        out.append(("unary", f"jax.grad(lambda x: jnp.sum(jax.scipy.special.polygamma(1, x)))({g})"))
        out.append(("unary", f"jax.hessian(lambda x: jnp.sum(jax.scipy.special.gammaln(x)))(jnp.array([0.5, 3.0, 7.25], dtype=jnp.{dt}))"))
    # The custom_jvp rules of jax.nn.relu and relu6: the incoming tangent where 0 < x (< 6),
    # 0. elsewhere (at the kinks too), whether the function is called or passed directly.
    for dt in floats:
        x = arr(["-1.0", "-0.0", "0.0", "2.0", "6.0", "7.0", NAN, "5.5"], dt)
        t = arr(["1.0", "-1.0", "-2.0", "3.0", "-1.5", "2.0", "1.0", NAN], dt)
        for f in ["jax.nn.relu", "jax.nn.relu6"]:
            out.append(("activation", f"{f}({x})"))
            out.append(("activation", f"jax.jvp({f}, ({x},), ({t},))[1]"))
            out.append(("activation", f"jax.grad(lambda x: jnp.sum({f}(x) * {t}))({x})"))
            out.append(("activation", f"jax.jacfwd({f})({x}[:4])"))
            out.append(("activation", f"jax.grad({f})(jnp.{dt}(0.0))"))
        out.append(("activation", f"jax.grad(jax.nn.relu6)(jnp.{dt}(6.0))"))
        out.append(("activation", f"jax.vjp(jax.nn.relu6, {x})[1]({t})[0]"))
    # The other jax.nn activations, written as JAX writes them (custom_jvp rules included:
    # softplus, log_sigmoid and mish through jnp.logaddexp, hard_sigmoid and hard_silu
    # through relu6), and their derivatives at and between the kinks.
    acts = [
        "jax.nn.softplus", "jax.nn.silu", "jax.nn.swish", "jax.nn.sigmoid", "jax.nn.gelu",
        "(lambda v: jax.nn.gelu(v, approximate=False))", "jax.nn.celu", "(lambda v: jax.nn.celu(v, alpha=2.0))",
        "jax.nn.elu", "(lambda v: jax.nn.elu(v, 0.5))", "jax.nn.selu", "jax.nn.leaky_relu",
        "(lambda v: jax.nn.leaky_relu(v, 0.2))", "jax.nn.log_sigmoid", "jax.nn.soft_sign", "jax.nn.hard_tanh",
        "jax.nn.hard_sigmoid", "jax.nn.hard_silu", "jax.nn.hard_swish", "jax.nn.mish", "jax.nn.sparse_plus",
        "jax.nn.sparse_sigmoid", "jax.nn.squareplus", "(lambda v: jax.nn.squareplus(v, b=1))",
        "jax.nn.standardize", "(lambda v: jax.nn.standardize(v, algorithm='stable'))", "jax.nn.log_softmax",
        "jax.nn.softmax", "jax.nn.identity",
        "(lambda v: jnp.concatenate([jax.nn.glu(v), jax.nn.glu(v.reshape(2, 5), axis=0)[0]]))",
    ]
    for dt in floats:
        x = arr(["-3.0", "-1.0", "-0.5", "0.0", "0.5", "1.0", "2.0", "3.0", "6.5", "-7.0"], dt)
        t = arr(["1.0", "-2.0", "0.5", "3.0", "-1.0", "2.0", "1.5", "-0.5", "1.0", "2.0"], dt)
        for f in acts:
            out.append(("activation", f"{f}({x})"))
            out.append(("activation", f"jax.grad(lambda x: jnp.sum({f}(x) * {t}))({x})"))
        out.append(("activation", f"jax.nn.logsumexp({x})"))
        out.append(("activation", f"jax.grad(jax.nn.logsumexp)({x})"))
        out.append(("activation", f"jax.nn.logmeanexp({x})"))
        lx = arr(["0.0", "1e-6", "1e-3", "0.5", "0.6931472", "0.7", "1.0", "5.0", "20.0", "100.0", INF, "-1.0", NAN], dt)
        out.append(("activation", f"jax.nn.log1mexp({lx})"))
        out.append(("activation", f"jax.grad(lambda v: jnp.sum(jax.nn.log1mexp(v)))({lx})"))
        out.append(("activation", f"jax.grad(jax.nn.logmeanexp)({x})"))
        out.append(("activation", f"jax.nn.logmeanexp({x}.reshape(2, 5), axis=1, keepdims=True)"))
        out.append(("activation", f"jax.grad(lambda v: jnp.sum(jax.nn.logmeanexp(v.reshape(2, 5), axis=0) * {t}[:5]))({x})"))
        e1 = arr([INF, f"-{INF}", INF, NAN, "1e30", "-1e30", "0.0", "-20.0"], dt)
        e2 = arr([INF, f"-{INF}", f"-{INF}", "1.0", "-1e30", "-1e30", "0.0", "20.0"], dt)
        out.append(("activation", f"jnp.logaddexp({e1}, {e2})"))
        for argnum in [0, 1]:
            out.append(("activation", f"jax.grad(lambda a, b: jnp.sum(jnp.logaddexp(a, b)), argnums={argnum})({e1}, {e2})"))
        out.append(("activation", f"jax.nn.softplus({e1})"))
        out.append(("activation", f"jax.scipy.special.erfc({x})"))
        out.append(("activation", f"jax.grad(lambda x: jnp.sum(jax.scipy.special.erfc(x)))({x})"))
        out.append(("unary", f"jnp.tanh(jnp.linspace(-9.0, 9.0, 37, dtype=jnp.{dt}))"))
        # XLA's own CPU approximations (exp, logistic and erfc in float32, tanh in float64),
        # over their whole range, subnormal flushing and the clamps included; the inputs are
        # exact (integers over a power of two), so the rows test the kernels alone.
        out.append(("unary", f"jnp.tanh(jnp.arange(-42, 43, dtype=jnp.{dt}) / 2)"))
        out.append(("unary", f"jnp.exp(jnp.arange(-90, 90, dtype=jnp.{dt}))"))
        out.append(("unary", f"jnp.exp(jnp.arange(-32, 33, dtype=jnp.{dt}) / 32)"))
        out.append(("unary", f"jax.nn.sigmoid(jnp.arange(-80, 81, dtype=jnp.{dt}) / 4)"))
        out.append(("unary", f"jax.scipy.special.erfc(jnp.arange(-80, 81, dtype=jnp.{dt}) / 8)"))
    # Activations and divisions of integers: the result dtype follows JAX's promotion (float32
    # for int32 even with x64 on, except where a weakly typed float joins in).
    i = arr(["-2", "0", "3"], "int32")
    for f in ["jax.nn.gelu", "jax.nn.softplus", "jax.nn.elu", "jax.nn.hard_tanh", "jax.nn.soft_sign",
              "jax.nn.squareplus", "jax.nn.sparse_plus", "jax.nn.hard_sigmoid", "jax.nn.mish", "jax.nn.celu",
              "jax.nn.log_softmax", "jnp.exp", "(lambda v: v / 2)", "(lambda v: jnp.var(v))"]:
        out.append(("activation", f"{f}({i})"))
    # Reductions with `initial=` and `where=`, the NaN-ignoring reductions, weighted averages,
    # and sorts with `descending=` and `stable=`.
    for dt in floats + ["int32"]:
        m = f"(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) * 3 % 7 - 2)"
        mask = "jnp.array([[True, False, True, False], [False, False, False, False], [True, True, True, True]])"
        out.append(("reduce", f"jnp.max({m}, axis=1, where={mask}, initial=-1)"))
        out.append(("reduce", f"jnp.min({m}, axis=0, where={mask}, initial=3)"))
        out.append(("reduce", f"jnp.max({m}, initial=4)"))
        out.append(("reduce", f"jnp.min({m}, axis=1, initial=0, keepdims=True)"))
        out.append(("reduce", f"jnp.sum({m}, axis=1, where={mask})"))
        out.append(("reduce", f"jnp.sum({m}, initial=10)"))
        out.append(("reduce", f"jnp.prod({m}, axis=0, where={mask})"))
        out.append(("reduce", f"jnp.mean({m}, axis=1, where={mask})"))
        out.append(("reduce", f"jnp.mean({m}, where={mask})"))
        out.append(("reduce", f"jnp.average({m}, axis=1, weights=jnp.array([1, 2, 0, 3]))"))
        out.append(("reduce", f"jnp.average({m}, weights={m} + 3)"))
        out.append(("reduce", f"jnp.average({m}, axis=0, returned=True)[1]"))
        out.append(("reduce", f"jnp.var({m}, axis=1, ddof=1)"))
        out.append(("reduce", f"jnp.var({m}, axis=0, ddof=3)"))
        out.append(("reduce", f"jnp.std({m}, axis=0)"))
        # var/std with `correction=`, `where=` and `mean=`, and masks that broadcast.
        row_mask, col_mask = "jnp.array([True, False, True, True])", "jnp.array([[True], [False], [True]])"
        out.append(("reduce", f"jnp.var({m}, axis=1, correction=1)"))
        out.append(("reduce", f"jnp.std({m}, axis=0, correction=1.5)"))
        out.append(("reduce", f"jnp.var({m}, axis=1, ddof=1, where={mask})"))
        out.append(("reduce", f"jnp.std({m}, axis=0, keepdims=True, where={col_mask})"))
        out.append(("reduce", f"jnp.var({m}, correction=2, where={row_mask})"))
        out.append(("reduce", f"jnp.var({m}, axis=1, mean=jnp.ones((3, 1)))"))
        out.append(("reduce", f"jnp.mean({m}, axis=1, where={row_mask})"))
        out.append(("reduce", f"jnp.sum({m}, axis=0, where={col_mask})"))
        out.append(("reduce", f"jnp.max({m}, axis=1, where={row_mask}, initial=-5)"))
        out.append(("reduce", f"jnp.min({m}, where={col_mask}, initial=9, keepdims=True)"))
        out.append(("reduce", f"jnp.prod({m}, axis=1, where={row_mask})"))
        out.append(("reduce", f"jnp.any({m} > 2, axis=0, where={col_mask})"))
        out.append(("reduce", f"jnp.all({m} > -2, axis=1, where={row_mask})"))
        out.append(("reduce", f"jnp.nansum({m}, axis=1, where={row_mask})"))
        out.append(("reduce", f"jnp.sum({m}[0], where=jnp.ones((3, 4), dtype=bool))"))
        out.append(("sort", f"lax.top_k({m}, 2, axis=0)[0]"))
        out.append(("sort", f"lax.top_k({m}, 2, axis=0)[1]"))
        out.append(("sort", f"lax.top_k({m}.reshape(3, 2, 2), 1, axis=-2)[1]"))
        out.append(("sort", f"jnp.sort({m}, axis=None)"))
        out.append(("sort", f"jnp.sort({m}, axis=0, descending=True)"))
        out.append(("sort", f"jnp.argsort({m}, axis=1, descending=True)"))
        out.append(("sort", f"jnp.argsort({m}, axis=None, descending=True)"))
        out.append(("sort", f"jnp.argsort({m}, axis=1, stable=False)"))
        out.append(("sort", f"jnp.argsort({m}, axis=1, descending=True, stable=False)"))
    for dt in floats:
        n = arr(["1.0", NAN, "-3.0", NAN, NAN, NAN, "2.0", f"-{INF}", "0.5"], dt) + ".reshape(3, 3)"
        for f in ["jnp.nansum", "jnp.nanmax", "jnp.nanmin", "jnp.nanmean"]:
            out.append(("reduce", f"{f}({n}, axis=1)"))
        out.append(("reduce", f"jnp.nanmax({n})"))
        out.append(("sort", f"jnp.argsort({n}.ravel(), descending=True)"))
        x = arr(["1.0", "4.0", "4.0", "-2.0"], dt)
        out.append(("reduce", f"jax.grad(lambda x: jnp.max(x, initial=4.0))({x})"))
        out.append(("reduce", f"jax.grad(lambda x: jnp.max(x, where=x < 3, initial=0.0))({x})"))
        out.append(("reduce", f"jax.grad(lambda x: jnp.sum(x * x, where=x > 0))({x})"))
        out.append(("reduce", f"jax.grad(lambda x: jnp.mean(x ** 3, where=x != 4.0))({x})"))
        g = f"(jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4) * 3 % 7 - 2)"
        out.append(("reduce", f"jax.grad(lambda v: jnp.sum(jnp.std(v, axis=1, correction=1, where=jnp.array([True, False, True, True]))))({g})"))
        out.append(("reduce", f"jax.grad(lambda v: jnp.var(v, ddof=1))({g})"))
        out.append(("reduce", f"jax.grad(lambda v: jnp.sum(jnp.mean(v ** 2, axis=0, where=jnp.array([[True], [False], [True]]))))({g})"))
        out.append(("reduce", f"jax.grad(lambda v: jnp.sum(jnp.max(v, axis=1, where=jnp.array([True, False, True, True]), initial=0.0)))({g})"))
        out.append(("sort", f"jax.grad(lambda v: jnp.sum(lax.top_k(v, 2, axis=0)[0] * jnp.arange(8, dtype=jnp.{dt}).reshape(2, 4)))({g})"))
        out.append(("sort", f"jax.jvp(lambda v: lax.top_k(v, 1, axis=0)[0], ({g},), (jnp.cos({g}),))[1]"))
        out.append(("sort", f"jax.grad(lambda x: jnp.sum(jnp.sort(x, descending=True) * jnp.arange(4.0)))({x})"))
    # LU (JAX's `lu` primitive: LAPACK's getrf with partial pivoting, the first row of
    # largest magnitude on ties) and what jax.scipy.linalg builds on it; the pivots and
    # permutations exactly, the factors and solves with the linear-algebra tolerance.
    for dt in floats:
        sq = f"(jnp.sin(jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3) * 1.3) + 2 * jnp.eye(3, dtype=jnp.{dt}))"
        ties = f"jnp.array([[1.0, 2.0, 3.0], [-2.0, 0.0, 1.0], [2.0, 1.0, -1.0]], dtype=jnp.{dt})"
        bsq = f"(jnp.cos(jnp.arange(18, dtype=jnp.{dt}).reshape(2, 3, 3) * 0.7) + jnp.eye(3, dtype=jnp.{dt}))"
        tall = f"(jnp.cos(jnp.arange(12, dtype=jnp.{dt}).reshape(4, 3) * 0.8) + jnp.eye(4, 3, dtype=jnp.{dt}))"
        vec = f"jnp.array([1.0, -2.0, 0.5], dtype=jnp.{dt})"
        rhs = f"jnp.arange(6, dtype=jnp.{dt}).reshape(3, 2) - 2.5"
        for i in range(3):
            out.append(("linalg", f"jax.scipy.linalg.lu({sq})[{i}]"))
            out.append(("linalg", f"jax.scipy.linalg.lu({ties})[{i}]"))
            out.append(("linalg", f"jax.scipy.linalg.lu({tall})[{i}]"))
            out.append(("linalg", f"jax.scipy.linalg.lu({tall}.T)[{i}]"))
            out.append(("linalg", f"jax.lax.linalg.lu({bsq})[{i}]"))
        out.append(("linalg", f"jax.scipy.linalg.lu({tall}, permute_l=True)[0]"))
        out.append(("linalg", f"jax.scipy.linalg.lu(jnp.zeros((2, 3), dtype=jnp.{dt}))[1]"))
        for i in range(2):
            out.append(("linalg", f"jax.scipy.linalg.lu_factor({bsq})[{i}]"))
            out.append(("linalg", f"jax.scipy.linalg.lu_factor(jnp.array([[0.0, 1.0], [0.0, 2.0]], dtype=jnp.{dt}))[{i}]"))
        out.append(("linalg", f"jax.lax.linalg.lu_pivots_to_permutation(jnp.array([2, 2, 3, 3], dtype=jnp.int32), 5)"))
        for trans in [0, 1, 2]:
            out.append(("linalg", f"jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor({sq}), {vec}, trans={trans})"))
        out.append(("linalg", f"jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor({ties}), {rhs})"))
        out.append(("linalg", f"jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor({bsq}), {rhs}, trans=1)"))
        out.append(("linalg", f"jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor({bsq}), {vec})"))
        out.append(("linalg", f"jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(jnp.zeros((2, 2), dtype=jnp.{dt})), jnp.ones(2, dtype=jnp.{dt}))"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jax.scipy.linalg.lu_factor(a)[0] * jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3)))({sq})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jax.scipy.linalg.lu(a)[1] ** 2 + jax.scipy.linalg.lu(a)[2]))({ties})"))
        out.append(("decomposition", f"jax.jvp(lambda a: jax.scipy.linalg.lu_factor(a)[0], ({bsq},), (jnp.sin({bsq}),))[1]"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(a), {vec}) ** 2))({sq})"))
        out.append(("decomposition", f"jax.grad(lambda a, b: jnp.sum(jnp.sin(jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(a), b, trans=1))), argnums=(0, 1))({ties}, {rhs})[1]"))
        out.append(("decomposition", f"jax.jacfwd(lambda a: jax.scipy.linalg.lu_factor(a)[0])({ties})"))
    # expm (JAX's Padé approximation with scaling and squaring; the degree and the number of
    # squarings depend on the 1-norm) and its derivatives (through that approximation in JAX,
    # by the Fréchet derivative here).
    for dt in floats:
        small = f"(jnp.sin(jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3) * 1.3) * 0.1)"
        mid = f"(jnp.cos(jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3) * 0.7) - jnp.eye(3, dtype=jnp.{dt}))"
        big = f"(jnp.sin(jnp.arange(16, dtype=jnp.{dt}).reshape(4, 4) * 1.1) * 6.0)"
        out.append(("decomposition", f"jax.scipy.linalg.expm({small})"))
        out.append(("decomposition", f"jax.scipy.linalg.expm({mid})"))
        out.append(("decomposition", f"jax.scipy.linalg.expm({big})"))
        out.append(("decomposition", f"jax.scipy.linalg.expm(jnp.stack([{mid}, -{mid}]))"))
        out.append(("decomposition", f"jax.scipy.linalg.expm(jnp.triu({mid}), upper_triangular=True)"))
        out.append(("decomposition", f"jax.scipy.linalg.expm(jnp.zeros((2, 2), dtype=jnp.{dt}))"))
        out.append(("decomposition", f"jax.scipy.linalg.expm({big} * 1e4, max_squarings=4)"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jax.scipy.linalg.expm(a) * jnp.arange(9, dtype=jnp.{dt}).reshape(3, 3)))({mid})"))
        out.append(("decomposition", f"jax.grad(lambda a: jnp.sum(jax.scipy.linalg.expm(a) ** 2))({small})"))
        out.append(("decomposition", f"jax.jvp(jax.scipy.linalg.expm, ({mid},), ({small},))[1]"))
    # Derivatives of scatter-mul/min/max: JAX's `_scatter_extremal_jvp` (ties share evenly
    # between the operand and the updates that reach the result) and `_scatter_mul_*` rules.
    for dt in floats:
        x = f"jnp.array([3.0, 1.0, 2.0, -4.0, 0.5], dtype=jnp.{dt})"
        u = f"jnp.array([3.0, 3.0, 0.5, -1.0], dtype=jnp.{dt})"
        w = f"jnp.arange(1, 6, dtype=jnp.{dt})"
        idx = "jnp.array([0, 0, 2, 3])"
        for op in ["min", "max"]:
            for argnum in [0, 1]:
                out.append(("scatter", f"jax.grad(lambda x, u: jnp.sum(x.at[{idx}].{op}(u) * {w}), argnums={argnum})({x}, {u})"))
            out.append(("scatter", f"jax.jvp(lambda x, u: x.at[{idx}].{op}(u) ** 2, ({x}, {u}), ({w}, {u} * 2))[1]"))
            out.append(("scatter", f"jax.grad(lambda x: jnp.sum(x.at[1:4].{op}(1.0) ** 2))({x})"))
        out.append(("scatter", f"jax.grad(lambda x: jnp.sum(x.at[{idx}].multiply({u}) ** 2))({x})"))
        for argnum in [0, 1]:
            out.append(("scatter", f"jax.grad(lambda x, u: jnp.sum(x.at[1:3].multiply(u) ** 2), argnums={argnum})({x}, {u}[:2])"))
        out.append(("scatter", f"jax.jvp(lambda x, u: x.at[2].multiply(u) * {w}, ({x}, {u}[0]), ({w}, {u}[1]))[1]"))
        # With index arrays JAX differentiates with respect to the updates only under
        # `unique_indices=True`, with the rule for unique indices whatever they are.
        for ix in [idx, "jnp.array([3, 1, 4, 0])", "jnp.array([0, 7, 2, 3])"]:
            out.append(("scatter", f"jax.grad(lambda u: jnp.sum(({x}).at[{ix}].multiply(u, unique_indices=True) ** 2))({u})"))
            out.append(("scatter", f"jax.jvp(lambda x, u: x.at[{ix}].multiply(u, unique_indices=True), ({x}, {u}), ({w}, {u} * 2))[1]"))
        out.append(("scatter", f"jax.grad(lambda u: jnp.sum(({x}).at[jnp.array(2)].multiply(u) ** 2))({u}[0])"))
    # Derivatives through `mode=`: JAX's gather transposes to a scatter-add in the same mode,
    # which drops out-of-bounds indices under PROMISE_IN_BOUNDS (`x[idx]`, whose forward pass
    # clamps them) and FILL_OR_DROP; tangents and cotangents are gathered with a fill of 0.
    for dt in floats:
        x = f"jnp.array([3.0, 1.0, 2.0, -4.0, 0.5], dtype=jnp.{dt})"
        w = f"jnp.arange(1, 5, dtype=jnp.{dt})"
        oob = "jnp.array([1, 7, -1, -6])"
        for get in [f"x[{oob}]", f"jnp.take(x, {oob})", f"jnp.take(x, {oob}, mode='clip')", f"jnp.take(x, {oob}, mode='wrap')",
                    f"jnp.take(x, {oob}, mode='fill', fill_value=2.0)", f"x.at[{oob}].get(mode='clip')", f"x.at[{oob}].get(mode='fill', fill_value=-1.0)"]:
            out.append(("gather", f"jax.grad(lambda x: jnp.sum({get} * {w}))({x})"))
            out.append(("gather", f"jax.jvp(lambda x: {get} * {w}, ({x},), ({x} + 1,))[1]"))
        for mode in ["None", "'clip'", "'drop'", "'promise_in_bounds'"]:
            out.append(("scatter", f"jax.grad(lambda u: jnp.sum(({x}).at[{oob}].add(u, mode={mode}) * jnp.arange(5, dtype=jnp.{dt})))({w})"))
            out.append(("scatter", f"jax.grad(lambda x: jnp.sum(x.at[{oob}].add({w}, mode={mode}) ** 2))({x})"))
        out.append(("scatter", f"jax.grad(lambda u: jnp.sum(({x}).at[{oob}].multiply(u, unique_indices=True, mode='clip') ** 2))({w})"))
    for dt in floats:
        out += composed_derivative_rows(dt)
    for dt in ints:
        out.append(("sort", f"lax.top_k(jnp.array([[1, 5, 3, 5], [7, 7, 2, 0]], dtype=jnp.{dt}), 3)[0]"))
        out.append(("sort", f"lax.top_k(jnp.array([[1, 5, 3, 5], [7, 7, 2, 0]], dtype=jnp.{dt}), 3)[1]"))
    out += quantile_rows(x64)
    out += composite_layout_rows(x64)
    out += conv_rows(x64)
    return out


def conv_rows(x64):
    """`conv_general_dilated` (group `conv`): layouts, strides, the three kinds of padding,
    dilations, feature and batch groups, 1-D to 3-D, the two convenience wrappers, and the
    derivatives with respect to each operand (the transpose rules are convolutions too)."""
    out = []
    floats = ["float32"] + (["float64"] if x64 else [])
    for dt in floats + ["int32"]:
        def t(n, shape, dt=dt, scale="0.37"):
            return ramp(n, shape, dt, scale)
        x, w = t(2 * 3 * 6 * 5, (2, 3, 6, 5)), t(4 * 3 * 3 * 2, (4, 3, 3, 2), scale="0.21")
        xh, wh = t(2 * 7 * 6 * 3, (2, 7, 6, 3)), t(3 * 2 * 3 * 4, (3, 2, 3, 4), scale="0.19")
        out.append(("conv", f"lax.conv({x}, {w}, (1, 1), 'VALID')"))
        out.append(("conv", f"lax.conv({x}, {w}, (2, 1), 'SAME')"))
        out.append(("conv", f"lax.conv_general_dilated({x}, {w}, (1, 2), 'SAME_LOWER')"))
        out.append(("conv", f"lax.conv_general_dilated({xh}, {wh}, (2, 2), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))"))
        out.append(("conv", f"lax.conv_general_dilated({xh}, {wh}, (1, 1), [(2, 0), (-1, 1)], dimension_numbers=('NHWC', 'HWIO', 'NCHW'))"))
        out.append(("conv", f"lax.conv_general_dilated({x}, {w}, (1, 1), [(1, 1), (2, 2)], lhs_dilation=(2, 1), rhs_dilation=(1, 2))"))
        out.append(("conv", f"lax.conv_with_general_padding({x}, {w}, (2, 2), [(0, 1), (1, 0)], (1, 2), (2, 1))"))
        out.append(("conv", f"lax.conv_general_dilated({t(2 * 4 * 5 * 5, (2, 4, 5, 5))}, {t(6 * 2 * 2 * 2, (6, 2, 2, 2))}, (1, 1), 'SAME', feature_group_count=2)"))
        out.append(("conv", f"lax.conv_general_dilated({t(4 * 3 * 5 * 4, (4, 3, 5, 4))}, {t(6 * 3 * 2 * 2, (6, 3, 2, 2))}, (1, 1), 'VALID', batch_group_count=2)"))
        out.append(("conv", f"lax.conv_general_dilated({t(2 * 3 * 9, (2, 9, 3))}, {t(3 * 3 * 4, (3, 3, 4))}, (2,), 'SAME', rhs_dilation=(2,), dimension_numbers=('NWC', 'WIO', 'NWC'))"))
        out.append(("conv", f"lax.conv_general_dilated({t(2 * 4 * 4 * 3, (1, 2, 4, 4, 3))}, {t(3 * 2 * 2 * 2 * 2, (3, 2, 2, 2, 2))}, (1, 2, 1), 'SAME')"))
        if dt == "int32":
            continue
        loss = "jnp.sum(jnp.tanh(lax.conv_general_dilated(a, b, {}) * 0.5) ** 2)"
        for args in [
            "(1, 1), 'VALID'",
            "(2, 1), 'SAME'",
            "(1, 1), [(1, 1), (2, 2)], lhs_dilation=(2, 1), rhs_dilation=(1, 2)",
            "(2, 2), [(0, 1), (-1, 0)], rhs_dilation=(2, 1)",
        ]:
            body = loss.format(args)
            out.append(("conv", f"jax.grad(lambda a: (lambda b: {body})({w}))({x})"))
            out.append(("conv", f"jax.grad(lambda b: (lambda a: {body})({x}))({w})"))
        body = loss.format("(1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'), feature_group_count=3")
        g = t(2 * 5 * 4 * 6, (2, 5, 4, 6))
        k = t(3 * 3 * 2 * 9, (3, 3, 2, 9), scale="0.23")
        out.append(("conv", f"jax.grad(lambda a: (lambda b: {body})({k}))({g})"))
        out.append(("conv", f"jax.grad(lambda b: (lambda a: {body})({g}))({k})"))
        body = loss.format("(1, 1), 'VALID', batch_group_count=2")
        g, k = t(4 * 3 * 5 * 4, (4, 3, 5, 4)), t(6 * 3 * 2 * 2, (6, 3, 2, 2))
        out.append(("conv", f"jax.grad(lambda a: (lambda b: {body})({k}))({g})"))
        out.append(("conv", f"jax.grad(lambda b: (lambda a: {body})({g}))({k})"))
        out.append(("conv", f"jax.jvp(lambda a, b: lax.conv(a, b, (1, 2), 'SAME'), ({x}, {w}), ({x} * 0.5, {w} - 1.0))[1]"))
    return out


def composite_layout_rows(x64):
    """Groups `einsum_path`, `pad`, `roll`, `map`: functions JAX builds from other primitives —
    einsum of three or more operands contracted pairwise along opt_einsum's path, jnp.pad's
    non-constant modes (slices, `rev`, concatenations), jnp.roll over several axes, and
    lax.map with `batch_size=` (a scan over a vmapped body plus a remainder)."""
    out = []
    floats = ["float32"] + (["float64"] if x64 else [])
    for dt in floats + ["int32"]:
        def t(n, shape, scale="0.37", dt=dt):
            return ramp(n, shape, dt, scale)
        a, b, c, d = t(6, (2, 3)), t(12, (3, 4)), t(20, (4, 5), "-0.21"), t(15, (5, 3))
        x, m, v = t(6, (2, 3), "0.5"), t(9, (3, 3), "-0.3"), t(4, (4,), "0.9")
        out.append(("einsum_path", f"jnp.einsum('ij,jk,kl->il', {a}, {b}, {c})"))
        out.append(("einsum_path", f"jnp.einsum('ij,jk,kl,lm->im', {a}, {b}, {c}, {d})"))
        out.append(("einsum_path", f"jnp.einsum('bi,ij,bj->b', {x}, {m}, {x} * 2)"))
        out.append(("einsum_path", f"jnp.einsum('i,i,i->', {v}, {v} + 1, {v})"))
        out.append(("einsum_path", f"jnp.einsum('ij,jk,kl', {c}.T, {b}.T, {a}.T)"))
        out.append(("einsum_path", f"jnp.einsum('ijk,jl,kl->il', {b}.reshape(3, 2, 2), {m}[:2, :2], {a}[:, :2])"))
        out.append(("einsum_path", f"jnp.einsum('ii,ij,j->i', {m}, {m}.T, {m}[0])"))
        out.append(("pad", f"jnp.pad({a}, ((1, 2), (2, 0)), mode='edge')"))
        out.append(("pad", f"jnp.pad({a}, ((1, 2), (2, 0)), mode='reflect')"))
        out.append(("pad", f"jnp.pad({a}, ((1, 2), (2, 0)), mode='symmetric')"))
        out.append(("pad", f"jnp.pad({a}, ((1, 2), (2, 0)), mode='wrap')"))
        out.append(("pad", f"jnp.pad({a}[0], 7, mode='reflect')"))
        out.append(("pad", f"jnp.pad({a}[0], (5, 8), mode='symmetric')"))
        out.append(("pad", f"jnp.pad({a}[0], (4, 7), mode='wrap')"))
        out.append(("pad", f"jnp.pad({a}[:1], 2, mode='reflect')"))
        out.append(("pad", f"jnp.pad({a}, ((2, 3),), mode='reflect', reflect_type='odd')"))
        out.append(("pad", f"jnp.pad({a}, 2, mode='maximum')"))
        out.append(("pad", f"jnp.pad({a}, ((1, 0), (0, 2)), mode='minimum')"))
        out.append(("pad", f"jnp.pad({a}, 1, mode='mean')"))
        out.append(("roll", f"jnp.roll({b}, (1, -2), (0, 1))"))
        out.append(("roll", f"jnp.roll({b}, 2, (0, 1))"))
        out.append(("roll", f"jnp.roll({b}, (1, 2), 0)"))
        out.append(("roll", f"jnp.roll({b}, (1, 5))"))
        out.append(("roll", f"jnp.roll({b}, (-1, 3), (-1, -1))"))
        xs = t(14, (7, 2))
        out.append(("map", f"lax.map(lambda r: r * 2 + r[::-1], {xs}, batch_size=3)"))
        out.append(("map", f"lax.map(lambda r: jnp.sum(r) * r, {xs}[:6], batch_size=2)"))
        out.append(("map", f"lax.map(lambda r: r[0] - r[1], {xs}, batch_size=10)"))
        out.append(("map", f"lax.map(lambda r: r * r, {xs}, batch_size=0)"))
        if dt == "int32":
            continue
        out.append(("einsum_path", f"jax.grad(lambda u: jnp.sum(jnp.einsum('ij,jk,kl->il', {a}, u, {c}) ** 2))({b})"))
        out.append(("einsum_path", f"jax.grad(lambda u: jnp.einsum('bi,ij,bj->', u, {m}, u))({x})"))
        out.append(("pad", f"jax.grad(lambda u: jnp.sum(jnp.pad(u, ((1, 2), (2, 0)), mode='reflect') ** 2))({a})"))
        out.append(("pad", f"jax.grad(lambda u: jnp.sum(jnp.sin(jnp.pad(u, (4, 7), mode='wrap'))))({a}[0])"))
        out.append(("pad", f"jax.grad(lambda u: jnp.sum(jnp.pad(u, 2, mode='edge') * jnp.arange(7.0)))({a}[0])"))
        out.append(("roll", f"jax.grad(lambda u: jnp.sum(jnp.roll(u, (1, -2), (0, 1)) * {b}))({b} ** 2)"))
        out.append(("map", f"jax.grad(lambda u: jnp.sum(lax.map(lambda r: jnp.tanh(r) * r[::-1], u, batch_size=3)))({xs})"))
    return out


def quantile_rows(x64):
    """Group `quantile`: jnp.quantile, percentile, median and their nan forms, as JAX's
    `_quantile` binds them (sort, floor/ceil, clamp, two gathers, the method's combination)."""
    out = []
    floats = ["float32"] + (["float64"] if x64 else ["bfloat16"])
    for dt in floats:
        x = f"jnp.array([[3.0, 1.0, 4.0, 1.0], [5.0, 9.0, 2.0, 6.0], [5.0, 3.0, 5.0, 8.0]], dtype=jnp.{dt})"
        y = f"jnp.array([[3.0, jnp.nan, 4.0, 1.0], [jnp.nan, jnp.nan, jnp.nan, jnp.nan], [-0.5, 3.0, 2.5, jnp.nan]], dtype=jnp.{dt})"
        z = f"(jnp.arange(24, dtype=jnp.{dt}).reshape(2, 3, 4) % 7 - 2.5)"
        qs = "jnp.array([0.0, 0.1, 0.35, 0.5, 0.9, 1.0])"
        out.append(("quantile", f"jnp.median({x})"))
        out.append(("quantile", f"jnp.median({x}, axis=0)"))
        out.append(("quantile", f"jnp.median({x}, axis=-1, keepdims=True)"))
        out.append(("quantile", f"jnp.median({z}, axis=(0, 2))"))
        out.append(("quantile", f"jnp.median({z}, axis=(2, 0), keepdims=True)"))
        out.append(("quantile", f"jnp.quantile({x}, 0.3)"))
        out.append(("quantile", f"jnp.quantile({x}, {qs}, axis=1)"))
        out.append(("quantile", f"jnp.quantile({z}, {qs}, axis=(0, 1), keepdims=True)"))
        out.append(("quantile", f"jnp.quantile({z}, {qs}, axis=None, keepdims=True)"))
        for method in ["lower", "higher", "midpoint", "nearest"]:
            out.append(("quantile", f"jnp.quantile({x}, {qs}, axis=1, method='{method}')"))
            out.append(("quantile", f"jnp.nanquantile({y}, {qs}, axis=1, method='{method}')"))
        out.append(("quantile", f"jnp.quantile({y}, 0.5, axis=1)"))
        out.append(("quantile", f"jnp.median({y}, axis=0)"))
        out.append(("quantile", f"jnp.nanmedian({y}, axis=1)"))
        out.append(("quantile", f"jnp.nanmedian({y})"))
        out.append(("quantile", f"jnp.nanquantile({y}, {qs}, axis=0, keepdims=True)"))
        out.append(("quantile", f"jnp.percentile({x}, 33)"))
        out.append(("quantile", f"jnp.percentile({x}, jnp.array([5, 25, 50, 75, 95]), axis=0)"))
        out.append(("quantile", f"jnp.nanpercentile({y}, 90.0, axis=1)"))
        out.append(("quantile", f"jnp.nanpercentile({y}, jnp.array([10.0, 50.0]), axis=(0, 1))"))
        out.append(("quantile", f"jax.grad(lambda v: jnp.median(v))({x}[1])"))
        out.append(("quantile", f"jax.grad(lambda v: jnp.quantile(v, 0.3) * 2)({x}[0])"))
        out.append(("quantile", f"jax.grad(lambda v: jnp.nanquantile(v, 0.6))({y}[0])"))
        out.append(("quantile", f"jax.jvp(lambda v: jnp.median(v, axis=1), ({x},), ({z}[0, :3],))[1]"))
        # Reverse mode through `sort` of a 2-D or 3-D operand on any axis (ties included).
        out.append(("quantile", f"jax.grad(lambda v: jnp.sum(jnp.median(v, axis=0) * jnp.arange(1, 5, dtype=jnp.{dt})))({x})"))
        out.append(("quantile", f"jax.grad(lambda v: jnp.sum(jnp.median(v, axis=1) ** 2))({x})"))
        out.append(("quantile", f"jax.grad(lambda v: jnp.sum(jnp.median(v, axis=(0, 2))))({z})"))
        out.append(("quantile", f"jax.grad(lambda v: jnp.sum(jnp.quantile(v, 0.3, axis=0) ** 2))({x})"))
        out.append(("sort", f"jax.grad(lambda v: jnp.sum(jnp.sort(v, axis=1) * jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4)))({x})"))
        out.append(("sort", f"jax.grad(lambda v: jnp.sum(jnp.sort(v, axis=0) * jnp.arange(12, dtype=jnp.{dt}).reshape(3, 4)))({x})"))
        out.append(("sort", f"jax.grad(lambda v: jnp.sum(jnp.sort(v, axis=1, descending=True) * jnp.cos({z})))({z})"))
        out.append(("sort", f"jax.vjp(lambda v: jnp.sort(v, axis=0), {z})[1](jnp.sin({z}))[0]"))
        if dt != ("float64" if x64 else "float32"):
            continue  # `inverted_cdf` multiplies `q` (of the default float) by the weights with lax.mul: a TypeError
        w = f"jnp.array([1.0, 2.0, 0.5, 3.0], dtype=jnp.{dt})"
        out.append(("quantile", f"jnp.quantile({x}, {qs}, axis=1, method='inverted_cdf')"))
        out.append(("quantile", f"jnp.quantile({x}, {qs}, axis=1, method='inverted_cdf', weights={w}, keepdims=True)"))
        out.append(("quantile", f"jnp.quantile({x}, 0.4, axis=0, method='inverted_cdf', weights={x} - 2)"))
        out.append(("quantile", f"jnp.nanquantile({y}, {qs}, axis=1, method='inverted_cdf', weights={w})"))
        out.append(("quantile", f"jnp.nanpercentile({y}, 60, axis=(0, 1), method='inverted_cdf')"))
    ints = ["int32"] + (["int64"] if x64 else [])
    for dt in ints:
        k = f"jnp.array([7, -2, 9, 4, 4, 11, 0], dtype=jnp.{dt})"
        out.append(("quantile", f"jnp.median({k})"))
        out.append(("quantile", f"jnp.quantile({k}, jnp.array([0.2, 0.75]))"))
        out.append(("quantile", f"jnp.percentile({k}, 40)"))
    out.append(("quantile", "jnp.quantile(jnp.array([1.0, 2.0, 4.0]), jnp.float32(0.25))"))
    return out


def record(x64, backwards=False):
    """The table's rows for one x64 setting, in `rows` order; evaluated last to first when
    `backwards` (each row is evaluated on its own, so the order changes no value)."""
    import jax
    import jax.numpy as jnp  # noqa: F401  (used by the expressions)
    from jax import lax  # noqa: F401
    import jax.scipy.special  # noqa: F401
    import jax.scipy.linalg  # noqa: F401

    assert jax.__version__ == "0.10.2", jax.__version__
    lines = []
    todo = rows(x64)
    for group, expr in reversed(todo) if backwards else todo:
        # One namespace for the expression and the lambdas in it (which do not see locals).
        x = eval(expr, {"jax": jax, "jnp": jnp, "lax": lax})
        dt = str(x.dtype)
        conv = float if dt.startswith(("float", "bfloat")) else bool if dt == "bool" else int
        values = repr([conv(v) for v in x.ravel().tolist()])
        lines.append(f"{x64}\t{group}\t{expr}\t{dt} {tuple(x.shape)}\t{values}")
    return lines[::-1] if backwards else lines


def table():
    # The two halves run at once, one process each (a few GB each, one core each), each
    # writing to files so that neither waits on a full pipe; JAX's warnings are shown only
    # when a half fails.
    #
    # Three quarters of a half's time is XLA compiling each eager op, and most float32 and
    # int32 ops of the x64 half are the same programs as the other half's. So the halves share
    # JAX's persistent compilation cache (a directory of this run only, every executable kept)
    # and walk their rows in opposite directions: an op the two share is compiled by the half
    # that meets it first and loaded by the other, the executable XLA would have built for it.
    # Measured on a 2-core machine shared with other work (27 Nov 2026): the two halves took
    # 339 + 638 s of user CPU without the cache, `--check` 856 s with it (an eighth less: most
    # x64 rows lower to other programs, with 64-bit indices and constants), and each of the
    # 121 rows whose values differ from the table on that CPU gave the same values evaluated
    # afresh without the cache.
    procs = []
    cache = tempfile.TemporaryDirectory(prefix="tracelens-ops-golden-xla-")
    for x64 in (0, 1):
        env = dict(
            os.environ,
            JAX_ENABLE_X64=str(x64),
            JAX_PLATFORMS="cpu",
            JAX_COMPILATION_CACHE_DIR=cache.name,
            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
            JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1",
        )
        out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
        args = [sys.executable, __file__, str(x64)] + (["backwards"] if x64 else [])
        procs.append((subprocess.Popen(args, env=env, stdout=out, stderr=err, text=True), out, err))
    rows_out = []
    for proc, out, err in procs:
        proc.wait()
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.stderr.write(err.read())
            raise subprocess.CalledProcessError(proc.returncode, proc.args)
        rows_out.extend(out.read().splitlines())
    cache.cleanup()
    header = "# Recorded from JAX 0.10.2 by tests/conformance/gen_ops_golden.py; do not edit.\nx64\tgroup\texpr\taval\tvalues\n"
    return header + "".join(r + "\n" for r in rows_out), len(rows_out)


# XLA and the BLAS under LAPACK pick their kernels by the instructions the CPU has: a float32
# product on a machine with AVX-512 adds its terms in another order than on one with AVX2 only,
# and a decomposition amplifies that difference by the problem's conditioning. So `--check`
# asks for the same rows, integers, booleans and NaN/Inf exactly, and finite floats within the
# `drift` tolerance of their family (tracer-core/tests/data/ops_tolerances.tsv, which says why
# for each): what JAX gives on the CPU that recorded the table, not on every CPU, is what
# tracelens is compared with, and CI must not fail for a reason that belongs to the machine.


def values_agree(fams, kappa, row, new_values):
    x64, group, expr, aval, old = row
    if old == new_values:
        return True
    dtype = aval.split(" ")[0]
    if dtype not in ot.EPS:
        return False
    rule = ot.parse_rule(ot.family_of(fams, group, expr)[3]["drift"], dtype)
    return ot.agree(rule, dtype, ot.parse_values(old), ot.parse_values(new_values), kappa.get((x64, expr), 0.0))


def table_rows(text):
    """The rows of a table's text, split into columns: no comments, no header."""
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")][1:]


def compare(old, new):
    """The rows of `new` that differ from `old` beyond the CPU's last bits, as messages, and
    how many differ within them."""
    old_rows, new_rows = table_rows(old), table_rows(new)
    drifted, moved = [], 0
    # kappa from JAX's values on this CPU, the oracle: an error in the table cannot widen its
    # own tolerance.
    fams, kappa = ot.families(), ot.conditioning(new_rows)
    if len(old_rows) != len(new_rows):
        drifted.append(f"the table has {len(old_rows)} rows, JAX's rows are {len(new_rows)}")
    tab = "\t"
    for o, n in zip(old_rows, new_rows):
        if o[:4] != n[:4]:
            drifted.append(f"golden has:    {tab.join(o[:4])}\nJAX now gives: {tab.join(n[:4])}")
        elif o[4] != n[4]:
            if values_agree(fams, kappa, o, n[4]):
                moved += 1
            else:
                drifted.append(f"golden has:    {tab.join(o)}\nJAX now gives: {tab.join(n)}")
    return drifted, moved


def option(name):
    """The value after `name` on the command line, or None."""
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("0", "1"):
        for line in record(int(sys.argv[1]), backwards="backwards" in sys.argv[2:]):
            print(line)
        return
    if "--check" in sys.argv[1:]:
        # --table T: check T instead of ops.tsv; --jax F: JAX's values from F (written by an
        # earlier --save-jax F) instead of running JAX, to try the tolerances on edited tables.
        table_path = option("--table") or OUT
        if option("--jax"):
            with open(option("--jax")) as f:
                text = f.read()
            n = len(table_rows(text))
        else:
            text, n = table()
        if option("--save-jax"):
            with open(option("--save-jax"), "w") as f:
                f.write(text)
        with open(table_path) as f:
            old = f.read()
        drifted, moved = compare(old, text)
        for line in drifted[:20]:
            print(line)
        if drifted:
            print(f"{os.path.normpath(table_path)} drifted from what JAX gives ({len(drifted)} rows); rerun without --check")
            sys.exit(1)
        note = f"; {moved} float rows differ in their last bits on this CPU (within their family's tolerance)" if moved else ""
        print(f"{os.path.normpath(table_path)}: {n} rows, as JAX gives them{note}")
        return
    text, n = table()
    with open(OUT, "w") as f:
        f.write(text)
    print(f"wrote {n} rows to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
