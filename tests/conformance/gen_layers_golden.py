"""The layer and optimizer table: what each shimmed layer and optimizer makes under the real
libraries (flax 0.12.8, equinox 0.13.8, optax 0.2.8), recorded for tracelens' shims.

Run with the JAX venv's python:

    /work/jax-venv/bin/python tests/conformance/gen_layers_golden.py          # rewrite the table
    /work/jax-venv/bin/python tests/conformance/gen_layers_golden.py --check  # exit 1 if it drifted

Each case below is a short program: it builds a layer (or an optimizer's state), applies it,
and prints, through `describe` (layers_describe.py), every array leaf of the parameters, the
other variable collections, the optimizer state and the output by path, as `dtype[shape]`.
The program and what the real library printed are written to
tracer-core/tests/data/layers.tsv; tracer-core/tests/layers_golden.rs runs each program
through tracelens and expects the same lines. A case whose program raises records the
exception's class, the line of the program it was raised at and the first line of its message
(the misuse cases), and tracelens must report the same at the same line.

TSV columns (tab separated, one header line, `#` lines are comments; a `\\n` in a field is a
line break):

    id  program  printed
"""

import contextlib
import io
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tracer-core", "tests", "data", "layers.tsv")

NNX = "from flax import nnx\nimport jax\nimport jax.numpy as jnp\n"
LINEN = "import flax.linen as nn\nimport jax\nimport jax.numpy as jnp\n"
EQX = "import equinox as eqx\nimport jax\nimport jax.numpy as jnp\n"
OPTAX = "import optax\nimport jax\nimport jax.numpy as jnp\n"


def nnx_case(build, x, call="layer(x)", collections=("Param",)):
    states = "".join(f'describe("{c}", nnx.state(layer, nnx.{c}))\n' for c in collections)
    return NNX + f"layer = {build}\nx = {x}\nout = {call}\n" + states + 'describe("out", out)\n'


def linen_case(module, x, apply=None, init_kwargs=""):
    apply = apply or "module.apply(variables, x)"
    return (
        LINEN
        + f"module = {module}\nx = {x}\nvariables = module.init(jax.random.PRNGKey(0), x{init_kwargs})\n"
        + f'out = {apply}\ndescribe("variables", variables)\ndescribe("out", out)\n'
    )


BLOCK = (
    "class Block(nn.Module):\n"
    + "    @nn.compact\n"
    + "    def __call__(self, x, _):\n"
    + "        return x + nn.relu(nn.Dense(x.shape[-1])(x)), None\n"
)
CELL = (
    "class Cell(nn.Module):\n"
    + "    @nn.compact\n"
    + "    def __call__(self, c, x):\n"
    + "        h = nn.tanh(nn.Dense(5)(jnp.concatenate([c, x], -1)))\n"
    + "        return h, h\n"
)


def linen_model(defs, body, x, apply=None, init_rngs="jax.random.PRNGKey(0)", cell_extra_arg=False):
    """A linen program around a transformation: `defs` at the top level, then a compact
    `Model` whose `__call__(self, x)` runs `body`; init, apply and what they made."""
    if cell_extra_arg:
        defs = defs.replace("def __call__(self, c, x):", "def __call__(self, c, x, z):")
    apply = apply or "module.apply(variables, x)"
    indented = "".join("        " + line + "\n" for line in body.split("\n"))
    return (
        LINEN
        + defs
        + "class Model(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        + indented
        + f"module = Model()\nx = {x}\nvariables = module.init({init_rngs}, x)\n"
        + f'out = {apply}\ndescribe("variables", variables)\ndescribe("out", out)\n'
    )


def eqx_case(build, x, call="layer(x)"):
    return EQX + f"layer = {build}\nx = {x}\nout = {call}\n" + 'describe("layer", layer)\ndescribe("out", out)\n'


def optax_case(opt, steps=1):
    return (
        OPTAX
        + "params = {'w': jnp.ones((4, 3)), 'b': jnp.zeros((3,)), 'emb': {'table': jnp.ones((10, 2), jnp.bfloat16)}}\n"
        + f"opt = {opt}\nstate = opt.init(params)\n"
        + "grads = jax.tree_util.tree_map(lambda p: jnp.full(p.shape, 0.5, p.dtype), params)\n"
        + f"for _ in range({steps}):\n    updates, state = opt.update(grads, state, params)\n"
        + 'describe("state", state)\ndescribe("updates", updates)\n'
    )


RNGS = "rngs=nnx.Rngs(0)"
KEY = "key=jax.random.PRNGKey(0)"
ONES = "jnp.ones"

CASES = [
    # flax.nnx
    ("nnx_linear", nnx_case(f"nnx.Linear(784, 512, {RNGS})", "jnp.ones((8, 784))")),
    ("nnx_linear_no_bias_bf16", nnx_case(f"nnx.Linear(16, 4, use_bias=False, dtype=jnp.bfloat16, {RNGS})", "jnp.ones((2, 16))")),
    ("nnx_linear_wrong_width", nnx_case(f"nnx.Linear(784, 512, {RNGS})", "jnp.ones((8, 100))")),
    ("nnx_linear_general", nnx_case(f"nnx.LinearGeneral(16, (4, 8), {RNGS})", "jnp.ones((2, 5, 16))")),
    ("nnx_embed", nnx_case(f"nnx.Embed(1000, 64, {RNGS})", "jnp.arange(12).reshape(3, 4)")),
    ("nnx_embed_attend", nnx_case(f"nnx.Embed(100, 8, {RNGS})", "jnp.ones((3, 8))", call="layer.attend(x)")),
    ("nnx_embed_float_input", nnx_case(f"nnx.Embed(10, 4, {RNGS})", "jnp.ones((3,))")),
    ("nnx_batchnorm_wrong_width", nnx_case(f"nnx.BatchNorm(32, {RNGS})", "jnp.ones((8, 16))")),
    ("nnx_layernorm", nnx_case(f"nnx.LayerNorm(64, {RNGS})", "jnp.ones((4, 64))")),
    ("nnx_layernorm_wrong_width", nnx_case(f"nnx.LayerNorm(64, {RNGS})", "jnp.ones((4, 32))")),
    (
        "nnx_batchnorm_train",
        nnx_case(f"nnx.BatchNorm(32, {RNGS})", "jnp.ones((8, 32))", collections=("Param", "BatchStat")),
    ),
    (
        "nnx_batchnorm_eval",
        nnx_case(
            f"nnx.BatchNorm(32, use_running_average=True, {RNGS})",
            "jnp.ones((8, 32))",
            collections=("Param", "BatchStat"),
        ),
    ),
    (
        # The optimizer's state by path: optax's NamedTuple fields by name (`opt_state/0/mu/...`).
        "nnx_optimizer_adam_state",
        NNX
        + "import optax\n"
        + f"layer = nnx.Linear(4, 3, {RNGS})\n"
        + "opt = nnx.Optimizer(layer, optax.adam(1e-3), wrt=nnx.Param)\n"
        + 'describe("opt", nnx.state(opt))\n',
    ),
    ("nnx_dropout", nnx_case(f"nnx.Dropout(0.5, {RNGS})", "jnp.ones((4, 8))", call="layer(x, deterministic=True)")),
    (
        "nnx_attention",
        nnx_case(f"nnx.MultiHeadAttention(num_heads=4, in_features=32, decode=False, {RNGS})", "jnp.ones((2, 6, 32))"),
    ),
    (
        "nnx_attention_qkv_features",
        nnx_case(
            f"nnx.MultiHeadAttention(num_heads=2, in_features=16, qkv_features=8, out_features=12, decode=False, {RNGS})",
            "jnp.ones((3, 5, 16))",
        ),
    ),
    (
        "nnx_attention_decode_cache",
        NNX
        + f"layer = nnx.MultiHeadAttention(num_heads=2, in_features=8, qkv_features=6, out_features=5, decode=True, {RNGS})\n"
        + "layer.init_cache((3, 10, 8))\nout = layer(jnp.ones((3, 1, 8)))\nout = layer(jnp.ones((3, 1, 8)))\n"
        + 'describe("cache", nnx.state(layer, nnx.Cache))\ndescribe("out", out)\nprint(int(layer.cache_index[...]))\n',
    ),
    (
        "nnx_attention_decode_two_batch_axes_bf16",
        NNX
        + f"layer = nnx.MultiHeadAttention(num_heads=2, in_features=8, dtype=jnp.bfloat16, {RNGS})\n"
        + "layer.init_cache((2, 5, 3, 8), dtype=jnp.bfloat16)\nout = layer(jnp.ones((2, 5, 1, 8)), decode=True)\n"
        + 'describe("cache", nnx.state(layer, nnx.Cache))\ndescribe("out", out)\n',
    ),
    (
        "nnx_attention_decode_under_nnx_jit",
        NNX
        + f"layer = nnx.MultiHeadAttention(num_heads=4, in_features=16, decode=True, {RNGS})\n"
        + "layer.init_cache((2, 6, 16))\n"
        + "@nnx.jit\ndef step(layer, token):\n    return layer(token)\n"
        + "for _ in range(3):\n    out = step(layer, jnp.ones((2, 1, 16)))\n"
        + 'describe("cache", nnx.state(layer, nnx.Cache))\ndescribe("out", out)\nprint(int(layer.cache_index[...]))\n',
    ),
    (
        "nnx_attention_decode_without_cache",
        NNX + f"layer = nnx.MultiHeadAttention(num_heads=2, in_features=8, decode=True, {RNGS})\nout = layer(jnp.ones((3, 1, 8)))\n",
    ),
    (
        "nnx_attention_decode_two_tokens_at_once",
        NNX
        + f"layer = nnx.MultiHeadAttention(num_heads=2, in_features=8, decode=True, {RNGS})\n"
        + "layer.init_cache((3, 10, 8))\nout = layer(jnp.ones((3, 2, 8)))\n",
    ),
    (
        "nnx_attention_decode_batch_of_another_size",
        NNX
        + f"layer = nnx.MultiHeadAttention(num_heads=2, in_features=8, decode=True, {RNGS})\n"
        + "layer.init_cache((3, 10, 8))\nout = layer(jnp.ones((4, 1, 8)))\n",
    ),
    (
        "nnx_attention_decode_bf16_cache_f32_keys",
        NNX
        + f"layer = nnx.MultiHeadAttention(num_heads=2, in_features=8, {RNGS})\n"
        + "layer.init_cache((3, 7, 8), dtype=jnp.bfloat16)\nout = layer(jnp.ones((3, 1, 8)), decode=True)\n",
    ),
    (
        "nnx_attention_decode_not_given",
        NNX + f"layer = nnx.MultiHeadAttention(num_heads=2, in_features=8, {RNGS})\nout = layer(jnp.ones((3, 4, 8)))\n",
    ),
    (
        "nnx_attention_causal",
        nnx_case(f"nnx.MultiHeadAttention(num_heads=2, in_features=8, {RNGS})", "jnp.ones((3, 4, 8))", call="layer(x, decode=False, is_causal=True)"),
    ),
    (
        "nnx_attention_dropout_train",
        nnx_case(
            f"nnx.MultiHeadAttention(num_heads=2, in_features=8, dropout_rate=0.1, decode=False, {RNGS})",
            "jnp.ones((3, 4, 8))",
            call="layer(x, deterministic=False)",
        ),
    ),
    (
        "nnx_attention_dropout_without_deterministic",
        nnx_case(f"nnx.MultiHeadAttention(num_heads=2, in_features=8, dropout_rate=0.1, decode=False, {RNGS})", "jnp.ones((3, 4, 8))"),
    ),
    (
        "nnx_attention_dropout_without_rngs",
        nnx_case(
            f"nnx.MultiHeadAttention(num_heads=2, in_features=8, dropout_rate=0.1, decode=False, keep_rngs=False, {RNGS})",
            "jnp.ones((3, 4, 8))",
            call="layer(x, deterministic=False)",
        ),
    ),
    ("nnx_conv", nnx_case(f"nnx.Conv(3, 16, (3, 3), {RNGS})", "jnp.ones((2, 8, 8, 3))")),
    (
        "nnx_conv_grouped_strided_dilated",
        nnx_case(
            f"nnx.Conv(4, 8, (3, 3), strides=2, kernel_dilation=2, feature_group_count=2, padding='VALID', {RNGS})",
            "jnp.ones((2, 11, 11, 4))",
        ),
    ),
    ("nnx_conv_input_dilation", nnx_case(f"nnx.Conv(3, 4, (2, 2), input_dilation=2, padding=1, {RNGS})", "jnp.ones((1, 5, 5, 3))")),
    ("nnx_conv_unbatched_int_kernel", nnx_case(f"nnx.Conv(2, 5, 3, {RNGS})", "jnp.ones((10, 2))")),
    ("nnx_conv_wrong_channels", nnx_case(f"nnx.Conv(3, 16, (3, 3), {RNGS})", "jnp.ones((2, 8, 8, 1))")),
    ("nnx_max_pool", NNX + "x = jnp.ones((2, 9, 9, 3))\nout = nnx.max_pool(x, (2, 2), strides=(2, 2))\ndescribe('out', out)\n"),
    (
        "nnx_avg_pool_same",
        NNX + "x = jnp.ones((2, 7, 7, 3))\nout = nnx.avg_pool(x, (3, 3), strides=(2, 2), padding='SAME')\ndescribe('out', out)\n",
    ),
    # flax.linen
    ("linen_dense", linen_case("nn.Dense(512)", "jnp.ones((8, 784))")),
    ("linen_dense_no_bias_bf16", linen_case("nn.Dense(4, use_bias=False, dtype=jnp.bfloat16)", "jnp.ones((2, 16))")),
    ("linen_dense_general", linen_case("nn.DenseGeneral((4, 8))", "jnp.ones((2, 5, 16))")),
    ("linen_embed", linen_case("nn.Embed(1000, 64)", "jnp.arange(12).reshape(3, 4)")),
    ("linen_embed_float_input", linen_case("nn.Embed(10, 4)", "jnp.ones((3,))")),
    (
        "linen_dense_params_of_another_width",
        linen_case("nn.Dense(4)", "jnp.ones((2, 16))", apply="module.apply(variables, jnp.ones((2, 8)))"),
    ),
    ("linen_layernorm", linen_case("nn.LayerNorm()", "jnp.ones((4, 64))")),
    (
        "linen_batchnorm_train",
        linen_case(
            "nn.BatchNorm(use_running_average=False)",
            "jnp.ones((8, 32))",
            apply="module.apply(variables, x, mutable=['batch_stats'])",
        ),
    ),
    ("linen_batchnorm_eval", linen_case("nn.BatchNorm(use_running_average=True)", "jnp.ones((8, 32))")),
    ("linen_dropout", linen_case("nn.Dropout(0.5, deterministic=True)", "jnp.ones((4, 8))")),
    ("linen_conv", linen_case("nn.Conv(16, (3, 3))", "jnp.ones((2, 8, 8, 3))")),
    ("linen_conv_strided_valid", linen_case("nn.Conv(8, (3, 3), strides=2, padding='VALID')", "jnp.ones((2, 9, 9, 3))")),
    ("linen_conv_int_kernel", linen_case("nn.Conv(4, 3)", "jnp.ones((2, 10, 3))")),
    ("linen_conv_grouped", linen_case("nn.Conv(8, (3, 3), feature_group_count=2)", "jnp.ones((2, 8, 8, 4))")),
    ("linen_conv_causal", linen_case("nn.Conv(4, (3,), padding='CAUSAL', kernel_dilation=2)", "jnp.ones((2, 10, 3))")),
    ("linen_conv_circular", linen_case("nn.Conv(4, (3, 3), padding='CIRCULAR')", "jnp.ones((1, 6, 6, 2))")),
    ("linen_conv_two_batch_axes", linen_case("nn.Conv(4, (3, 3), input_dilation=2, padding=1)", "jnp.ones((2, 3, 6, 6, 2))")),
    ("linen_conv_input_dilated_same", linen_case("nn.Conv(4, (3, 3), input_dilation=2)", "jnp.ones((2, 6, 6, 2))")),
    (
        "linen_conv_params_of_other_channels",
        linen_case("nn.Conv(4, (3, 3))", "jnp.ones((2, 6, 6, 3))", apply="module.apply(variables, jnp.ones((2, 6, 6, 1)))"),
    ),
    (
        "linen_pools",
        LINEN
        + "x = jnp.ones((7, 7, 3))\ndescribe('max', nn.max_pool(x, (2, 2), strides=(2, 2)))\n"
        + "describe('min', nn.pooling.min_pool(jnp.ones((2, 4, 10, 3)), (3,), padding='SAME'))\n"
        + "describe('avg', nn.avg_pool(x, (3, 3), padding='SAME', count_include_pad=False))\n",
    ),
    ("linen_attention", linen_case("nn.MultiHeadDotProductAttention(num_heads=4, qkv_features=32)", "jnp.ones((2, 6, 32))")),
    ("linen_self_attention", linen_case("nn.SelfAttention(num_heads=2)", "jnp.ones((3, 5, 16))")),
    (
        "linen_attention_decode_cache",
        LINEN
        + "module = nn.SelfAttention(num_heads=2, qkv_features=8, decode=True)\n"
        + "variables = module.init(jax.random.PRNGKey(0), jnp.ones((3, 10, 16)))\n"
        + "out, updates = module.apply(variables, jnp.ones((3, 1, 16)), mutable=['cache'])\n"
        + "out, updates = module.apply({'params': variables['params'], **updates}, jnp.ones((3, 1, 16)), mutable=['cache'])\n"
        + 'describe("variables", variables)\ndescribe("updates", updates)\ndescribe("out", out)\n'
        + "print(int(updates['cache']['cache_index']))\n",
    ),
    (
        "linen_attention_decode_two_tokens_at_once",
        LINEN
        + "module = nn.MultiHeadDotProductAttention(num_heads=2, decode=True)\n"
        + "variables = module.init(jax.random.PRNGKey(0), jnp.ones((3, 10, 16)))\n"
        + "out, updates = module.apply(variables, jnp.ones((3, 2, 16)), mutable=['cache'])\n",
    ),
    (
        "linen_attention_decode_cache_immutable",
        LINEN
        + "module = nn.MultiHeadDotProductAttention(num_heads=2, decode=True)\n"
        + "variables = module.init(jax.random.PRNGKey(0), jnp.ones((3, 10, 16)))\n"
        + "out = module.apply(variables, jnp.ones((3, 1, 16)))\n",
    ),
    # linen's lifted transformations: the stacked (or shared) parameters, outputs and errors.
    (
        "linen_scan_over_layers_stacked",
        linen_model(
            BLOCK + "Stack = nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True}, length=4)\n",
            "x, _ = Stack(name='layers')(x, None)\nreturn x",
            "jnp.ones((2, 3))",
        ),
    ),
    (
        "linen_scan_rnn_cell_shared_params_over_time",
        linen_model(
            CELL + "Rnn = nn.scan(Cell, variable_broadcast='params', split_rngs={'params': False}, in_axes=1, out_axes=1)\n",
            "return Rnn()(jnp.zeros((x.shape[0], 5)), x)",
            "jnp.ones((2, 7, 3))",
        ),
    ),
    (
        "linen_scan_decorated_method_with_broadcast_context",
        LINEN
        + "import functools\n"
        + "class Model(nn.Module):\n"
        + "    @functools.partial(nn.scan, variable_broadcast='params', split_rngs={'params': False}, in_axes=(0, nn.broadcast))\n"
        + "    @nn.compact\n"
        + "    def __call__(self, c, x, ctx):\n"
        + "        h = nn.Dense(5)(jnp.concatenate([c, x, ctx], -1))\n"
        + "        return h, h\n"
        + "module = Model()\nargs = (jnp.zeros((2, 5)), jnp.ones((7, 2, 3)), jnp.ones((2, 4)))\n"
        + "variables = module.init(jax.random.PRNGKey(0), *args)\nout = module.apply(variables, *args)\n"
        + 'describe("variables", variables)\ndescribe("out", out)\n',
    ),
    (
        "linen_scan_function_over_a_cell",
        linen_model(
            "",
            "cell = nn.Dense(4)\n"
            + "def body(cell, c, x):\n"
            + "    y = cell(x) + c\n"
            + "    return y, y\n"
            + "scan = nn.scan(body, variable_broadcast='params', split_rngs={'params': False}, in_axes=1, out_axes=1)\n"
            + "return scan(cell, jnp.zeros((x.shape[0], 4)), x)",
            "jnp.ones((2, 6, 3))",
        ),
    ),
    (
        "linen_scan_parameters_stacked_on_axis_1_reversed",
        linen_model(
            BLOCK
            + "Stack = nn.scan(Block, variable_axes={'params': 1}, split_rngs={'params': True}, length=3, reverse=True, unroll=3)\n",
            "return Stack()(x, None)",
            "jnp.ones((2, 3))",
        ),
    ),
    (
        "linen_scan_batchnorm_statistics_per_layer",
        linen_model(
            "class Block(nn.Module):\n"
            + "    @nn.compact\n"
            + "    def __call__(self, x, _):\n"
            + "        h = nn.BatchNorm(use_running_average=False)(nn.Dense(3)(x))\n"
            + "        return h, jnp.mean(h)\n"
            + "Stack = nn.scan(Block, variable_axes={'params': 0, 'batch_stats': 0}, split_rngs={'params': True}, length=3)\n",
            "return Stack()(x, None)",
            "jnp.ones((2, 3))",
            apply="module.apply(variables, x, mutable=['batch_stats'])",
        ),
    ),
    (
        "linen_scan_dropout_key_per_layer",
        linen_model(
            "class Block(nn.Module):\n"
            + "    @nn.compact\n"
            + "    def __call__(self, x, _):\n"
            + "        h = nn.Dropout(0.5, deterministic=False)(nn.Dense(3)(x))\n"
            + "        return x + h, None\n"
            + "Stack = nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True, 'dropout': True}, length=2)\n",
            "return Stack()(x, None)[0]",
            "jnp.ones((2, 3))",
            init_rngs="{'params': jax.random.PRNGKey(0), 'dropout': jax.random.PRNGKey(1)}",
            apply="module.apply(variables, x, rngs={'dropout': jax.random.PRNGKey(2)})",
        ),
    ),
    (
        "linen_scan_nested_params_of_another_width",
        linen_model(
            BLOCK
            + "class Stack(nn.Module):\n"
            + "    @nn.compact\n"
            + "    def __call__(self, x):\n"
            + "        return nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True}, length=4)()(x, None)[0]\n",
            "return Stack()(x)",
            "jnp.ones((2, 3))",
            apply="module.apply(variables, jnp.ones((2, 4)))",
        ),
    ),
    (
        "linen_scan_without_length",
        linen_model(
            BLOCK + "Stack = nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True})\n",
            "return Stack()(x, None)[0]",
            "jnp.ones((2, 3))",
        ),
    ),
    (
        "linen_scan_params_in_no_group",
        linen_model(BLOCK + "Stack = nn.scan(Block, split_rngs={'params': True}, length=4)\n", "return Stack()(x, None)[0]", "jnp.ones((2, 3))"),
    ),
    (
        "linen_scan_shared_params_from_a_split_key",
        linen_model(
            BLOCK + "Stack = nn.scan(Block, variable_broadcast='params', split_rngs={'params': True}, length=4)\n",
            "return Stack()(x, None)[0]",
            "jnp.ones((2, 3))",
        ),
    ),
    (
        "linen_scan_inputs_of_different_lengths",
        linen_model(
            CELL + "Rnn = nn.scan(Cell, variable_broadcast='params', split_rngs={'params': False}, in_axes=(0, 0))\n",
            "c = jnp.zeros((2, 5))\nreturn Rnn()(c, x, jnp.ones((9, 2, 1)))",
            "jnp.ones((7, 2, 3))",
            cell_extra_arg=True,
        ),
    ),
    (
        "linen_scan_stacked_params_of_another_length",
        linen_model(
            BLOCK + "Stack = nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True}, length=4)\n",
            "return Stack()(x, None)[0]",
            "jnp.ones((2, 3))",
            apply="module.apply(jax.tree_util.tree_map(lambda p: p[:3], variables), x)",
        ),
    ),
    (
        "linen_vmap_dense_per_example_params",
        linen_model(
            "",
            "return nn.vmap(nn.Dense, variable_axes={'params': 0}, split_rngs={'params': True})(4)(x)",
            "jnp.ones((5, 2, 3))",
        ),
    ),
    (
        "linen_vmap_dense_shared_params",
        linen_model(
            "",
            "return nn.vmap(nn.Dense, variable_axes={'params': None}, split_rngs={'params': False})(4)(x)",
            "jnp.ones((5, 2, 3))",
        ),
    ),
    (
        "linen_vmap_on_axis_1",
        linen_model(
            "",
            "return nn.vmap(nn.Dense, variable_axes={'params': 1}, split_rngs={'params': True}, in_axes=1, out_axes=1)(4)(x)",
            "jnp.ones((2, 5, 3))",
        ),
    ),
    (
        "linen_vmap_ensemble_decorated_with_axis_size",
        LINEN
        + "import functools\n"
        + "class Ensemble(nn.Module):\n"
        + "    @functools.partial(nn.vmap, variable_axes={'params': 0}, split_rngs={'params': True}, in_axes=None, axis_size=3)\n"
        + "    @nn.compact\n"
        + "    def __call__(self, x):\n"
        + "        return nn.Dense(2)(nn.relu(nn.Dense(8)(x)))\n"
        + "module = Ensemble()\nx = jnp.ones((4, 3))\nvariables = module.init(jax.random.PRNGKey(0), x)\n"
        + 'out = module.apply(variables, x)\ndescribe("variables", variables)\ndescribe("out", out)\n',
    ),
    (
        "linen_vmap_batchnorm_with_axis_name",
        linen_model(
            "",
            "return nn.vmap(nn.BatchNorm, variable_axes={'params': 0, 'batch_stats': 0}, split_rngs={'params': True}, "
            + "axis_name='batch')(use_running_average=False)(x)",
            "jnp.ones((3, 4, 5))",
            apply="module.apply(variables, x, mutable=['batch_stats'])",
        ),
    ),
    (
        "linen_vmap_two_inputs_on_different_axes",
        linen_model(
            "class Two(nn.Module):\n"
            + "    @nn.compact\n"
            + "    def __call__(self, x, y):\n"
            + "        return nn.Dense(4)(x) + nn.Dense(4)(y)\n",
            "return nn.vmap(Two, variable_axes={'params': 0}, split_rngs={'params': True}, in_axes=(0, 1))()(x, jnp.ones((3, 5)))",
            "jnp.ones((5, 3))",
        ),
    ),
    (
        "linen_vmap_shared_params_from_a_split_key",
        linen_model(
            "",
            "return nn.vmap(nn.Dense, variable_axes={'params': None}, split_rngs={'params': True})(4)(x)",
            "jnp.ones((5, 2, 3))",
        ),
    ),
    (
        "linen_vmap_batch_of_another_size",
        linen_model(
            "",
            "return nn.vmap(nn.Dense, variable_axes={'params': 0}, split_rngs={'params': True})(4)(x)",
            "jnp.ones((5, 2, 3))",
            apply="module.apply(variables, jnp.ones((6, 2, 3)))",
        ),
    ),
    (
        "linen_vmap_without_axis_size",
        linen_model(
            "",
            "return nn.vmap(nn.Dense, variable_axes={'params': 0}, split_rngs={'params': True}, in_axes=None)(4)(x)",
            "jnp.ones((2, 3))",
        ),
    ),
    (
        "linen_vmap_params_of_another_width",
        linen_model(
            "",
            "return nn.vmap(nn.Dense, variable_axes={'params': 0}, split_rngs={'params': True})(4)(x)",
            "jnp.ones((5, 2, 3))",
            apply="module.apply(variables, jnp.ones((5, 2, 4)))",
        ),
    ),
    (
        "linen_lstm_cells",
        linen_model(
            "",
            "lstm = nn.LSTMCell(6)\n"
            + "c1, y1 = lstm(lstm.initialize_carry(jax.random.key(0), x.shape), x)\n"
            + "fast = nn.OptimizedLSTMCell(6, dtype=jnp.bfloat16)\n"
            + "c2, y2 = fast(fast.initialize_carry(jax.random.key(0), x.shape), x)\n"
            + "return c1, y1, c2, y2",
            "jnp.ones((3, 4))",
        ),
    ),
    (
        "linen_gru_and_simple_cells",
        linen_model(
            "",
            "gru = nn.GRUCell(5)\n"
            + "h1, y1 = gru(gru.initialize_carry(jax.random.key(0), x.shape), x)\n"
            + "simple = nn.SimpleCell(5, residual=True)\n"
            + "h2, y2 = simple(simple.initialize_carry(jax.random.key(0), x.shape), x)\n"
            + "return h1, y2",
            "jnp.ones((2, 3, 4))",
        ),
    ),
    (
        "linen_rnn_time_major_reversed",
        linen_model(
            "",
            "carry, ys = nn.RNN(nn.GRUCell(5), time_major=True, return_carry=True)(x, reverse=True, keep_order=True)\n"
            + "rnn = nn.RNN(nn.LSTMCell(3), time_major=True)\n"
            + "return carry, ys, rnn(x[:, :, :2], initial_carry=(jnp.zeros((2, 3)), jnp.ones((2, 3))))",
            "jnp.ones((7, 2, 4))",
        ),
    ),
    (
        "linen_rnn_initial_carry_of_another_batch",
        linen_model(
            "",
            "return nn.RNN(nn.LSTMCell(3))(x, initial_carry=(jnp.zeros((2, 3)), jnp.ones((2, 3))))",
            "jnp.ones((7, 2, 4))",
        ),
    ),
    (
        "linen_gru_initialize_carry_with_the_old_signature",
        LINEN + "carry = nn.GRUCell.initialize_carry(jax.random.PRNGKey(0), (8,), 16)\n",
    ),
    (
        "linen_lstm_carry_of_another_width",
        linen_model(
            "",
            "lstm = nn.LSTMCell(6)\nreturn lstm((jnp.zeros((3, 6)), jnp.zeros((3, 5))), x)",
            "jnp.ones((3, 4))",
        ),
    ),
    ("linen_dense_orthogonal_kernel", linen_case("nn.Dense(3, kernel_init=nn.initializers.orthogonal(2.0))", "jnp.ones((2, 5))")),
    ("nnx_linear_orthogonal_kernel", nnx_case(f"nnx.Linear(3, 7, kernel_init=nnx.initializers.orthogonal(), {RNGS})", "jnp.ones((2, 3))")),
    (
        "linen_remat_and_checkpoint_names",
        linen_model(
            "class Block(nn.Module):\n"
            + "    features: int\n"
            + "    @nn.compact\n"
            + "    def __call__(self, x, train):\n"
            + "        x = nn.Dense(self.features)(x)\n"
            + "        if train:\n"
            + "            x = nn.relu(x)\n"
            + "        return x\n"
            + "class Decorated(nn.Module):\n"
            + "    @nn.remat\n"
            + "    @nn.compact\n"
            + "    def __call__(self, x):\n"
            + "        return nn.Dense(2)(x)\n",
            "x = nn.remat(Block, static_argnums=(2,))(4)(x, True)\n"
            + "x = nn.checkpoint(Block, static_argnums=(2,))(5, name='named')(x, False)\n"
            + "x = nn.remat(nn.Dense)(3)(x)\n"
            + "return Decorated()(x)",
            "jnp.ones((2, 3))",
        ),
    ),
    (
        "linen_remat_params_of_another_width",
        linen_model("", "return nn.remat(nn.Dense)(3)(x)", "jnp.ones((2, 3))", apply="module.apply(variables, jnp.ones((2, 7)))"),
    ),
    ("linen_jit_dense_name", linen_model("", "return nn.jit(nn.Dense)(3)(x)", "jnp.ones((2, 3))")),
    # equinox
    ("eqx_linear", eqx_case(f"eqx.nn.Linear(784, 512, {KEY})", "jnp.ones((784,))")),
    ("eqx_linear_scalar", eqx_case(f"eqx.nn.Linear('scalar', 3, {KEY})", "jnp.ones(())")),
    ("eqx_linear_wrong_width", eqx_case(f"eqx.nn.Linear(784, 512, {KEY})", "jnp.ones((100,))")),
    ("eqx_mlp", eqx_case(f"eqx.nn.MLP(4, 2, width_size=16, depth=2, {KEY})", "jnp.ones((4,))")),
    ("eqx_conv2d", eqx_case(f"eqx.nn.Conv2d(3, 16, 3, padding=1, {KEY})", "jnp.ones((3, 8, 8))")),
    ("eqx_conv2d_strided_grouped", eqx_case(f"eqx.nn.Conv2d(4, 8, (3, 2), stride=2, groups=2, {KEY})", "jnp.ones((4, 9, 9))")),
    ("eqx_conv2d_same_no_bias", eqx_case(f"eqx.nn.Conv2d(3, 4, 5, padding='SAME', use_bias=False, {KEY})", "jnp.ones((3, 7, 6))")),
    ("eqx_conv1d_dilated", eqx_case(f"eqx.nn.Conv1d(2, 5, 3, dilation=2, {KEY})", "jnp.ones((2, 12))")),
    ("eqx_conv2d_wrong_channels", eqx_case(f"eqx.nn.Conv2d(3, 16, 3, {KEY})", "jnp.ones((1, 8, 8))")),
    ("eqx_conv2d_batched_input", eqx_case(f"eqx.nn.Conv2d(3, 16, 3, {KEY})", "jnp.ones((2, 3, 8, 8))")),
    ("eqx_embedding", eqx_case(f"eqx.nn.Embedding(100, 8, {KEY})", "jnp.array(3)")),
    ("eqx_layernorm", eqx_case("eqx.nn.LayerNorm(32)", "jnp.ones((32,))")),
    ("eqx_dropout", eqx_case("eqx.nn.Dropout(0.5)", "jnp.ones((4,))", call="layer(x, inference=True)")),
    # optax
    ("optax_sgd", optax_case("optax.sgd(0.1)")),
    ("optax_sgd_momentum", optax_case("optax.sgd(0.1, momentum=0.9, nesterov=True)")),
    ("optax_adam", optax_case("optax.adam(1e-3)", steps=2)),
    ("optax_adamw", optax_case("optax.adamw(1e-3, weight_decay=1e-2)")),
    ("optax_lamb", optax_case("optax.lamb(1e-3)")),
    ("optax_rmsprop", optax_case("optax.rmsprop(1e-3)")),
    ("optax_chain_clip_adam", optax_case("optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))")),
    ("optax_adam_schedule", optax_case("optax.adam(optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 100))")),
    (
        "optax_adam_grads_missing_a_leaf",
        OPTAX
        + "params = {'w': jnp.ones((4, 3)), 'b': jnp.zeros((3,))}\nopt = optax.adam(1e-3)\nstate = opt.init(params)\n"
        + "updates, state = opt.update({'w': jnp.ones((4, 3))}, state, params)\n",
    ),
    ("optax_multisteps", optax_case("optax.MultiSteps(optax.adam(1e-3), every_k_schedule=2)", steps=3)),
    ("optax_sgd_bf16_accumulator", optax_case("optax.sgd(0.1, momentum=0.9, accumulator_dtype=jnp.bfloat16)")),
    ("optax_clip_scale_trace", optax_case("optax.chain(optax.clip(0.25), optax.trace(decay=0.9), optax.scale(-0.1))")),
    ("optax_add_decayed_weights_scale_by_rms", optax_case("optax.chain(optax.add_decayed_weights(1e-4), optax.scale_by_rms(), optax.scale(-1e-3))")),
    ("optax_scale_by_stddev_trust_ratio", optax_case("optax.chain(optax.scale_by_stddev(), optax.scale_by_trust_ratio(), optax.scale_by_schedule(optax.linear_schedule(1.0, 0.1, 10)))")),
    ("optax_adam_mu_dtype_nesterov", optax_case("optax.adam(1e-3, mu_dtype=jnp.bfloat16, nesterov=True)")),
    (
        "optax_losses_and_norms",
        OPTAX
        + "logits = jnp.ones((4, 5))\nlabels = jnp.arange(4)\n"
        + "describe('xent', optax.softmax_cross_entropy(logits, jax.nn.one_hot(labels, 5)))\n"
        + "describe('xent_int', optax.softmax_cross_entropy_with_integer_labels(logits, labels))\n"
        + "describe('sigmoid', optax.sigmoid_binary_cross_entropy(logits, jnp.zeros((4, 5))))\n"
        + "describe('l2', optax.l2_loss(logits, jnp.zeros((4, 5))))\n"
        + "describe('squared', optax.squared_error(jnp.ones((3,), jnp.bfloat16)))\n"
        + "params = {'w': jnp.ones((4, 3)), 'b': jnp.zeros((3,), jnp.bfloat16)}\n"
        + "describe('norm', optax.global_norm(params))\n"
        + "describe('applied', optax.apply_updates(params, jax.tree_util.tree_map(lambda p: jnp.ones(p.shape, jnp.float32), params)))\n",
    ),
    (
        "optax_softmax_cross_entropy_labels_of_another_width",
        OPTAX + "loss = optax.softmax_cross_entropy(jnp.ones((4, 5)), jnp.ones((4, 3)))\n",
    ),
    (
        "optax_integer_labels_as_float",
        OPTAX + "loss = optax.softmax_cross_entropy_with_integer_labels(jnp.ones((4, 5)), jnp.ones((4,)))\n",
    ),
    (
        "linen_sequential",
        linen_case("nn.Sequential([nn.Dense(8), nn.relu, nn.Dense(3)])", "jnp.ones((2, 5))"),
    ),
    (
        "nnx_sequential",
        nnx_case(f"nnx.Sequential(nnx.Linear(5, 8, {RNGS}), nnx.relu, nnx.Linear(8, 3, {RNGS}))", "jnp.ones((2, 5))"),
    ),
    ("eqx_conv3d", eqx_case(f"eqx.nn.Conv3d(2, 4, 3, padding=1, {KEY})", "jnp.ones((2, 5, 6, 7))")),
    ("eqx_mlp_wrong_width", eqx_case(f"eqx.nn.MLP(4, 2, width_size=16, depth=2, {KEY})", "jnp.ones((3,))")),
    ("eqx_embedding_float_index", eqx_case(f"eqx.nn.Embedding(100, 8, {KEY})", "jnp.array(3.0)")),
    (
        "optax_schedule_values",
        OPTAX
        + "schedules = {\n"
        + "    'warmup_cosine': optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 100, end_value=1e-5),\n"
        + "    'exponential': optax.exponential_decay(1e-2, 20, 0.5, transition_begin=5, staircase=True),\n"
        + "    'piecewise': optax.piecewise_constant_schedule(0.1, {30: 0.1, 60: 0.5}),\n"
        + "    'linear': optax.linear_schedule(1.0, 0.0, 50, transition_begin=10),\n"
        + "    'cosine': optax.cosine_decay_schedule(1.0, 80, alpha=0.1),\n"
        + "    'polynomial': optax.polynomial_schedule(1.0, 0.1, 2, 40),\n"
        + "    'join': optax.join_schedules([optax.constant_schedule(0.5), optax.linear_schedule(0.5, 0.0, 20)], [15]),\n"
        + "}\n"
        + "for name in schedules:\n"
        + "    print(name, [round(float(schedules[name](step)), 6) for step in [0, 5, 10, 29, 30, 45, 60, 100, 150]])\n",
    ),
]


def run(program):
    """What `program` prints under the real libraries, or its exception with the line of the
    program it was raised at (the innermost frame in the program, as the user sees it)."""
    prelude = open(os.path.join(HERE, "layers_describe.py")).read()
    out = io.StringIO()
    scope = {"__name__": "__main__"}
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(prelude + "\n" + program, "<case>", "exec"), scope)
    except Exception as e:  # noqa: BLE001 - the misuse cases record the library's exception
        lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == "<case>"]
        line = lines[-1] - len(prelude.splitlines()) - 1 if lines else 0
        out.write(f"raises {type(e).__name__} at line {line}: {str(e).splitlines()[0] if str(e) else ''}\n")
    return out.getvalue()


def escape(text):
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def table():
    import flax
    import equinox
    import jax
    import optax

    lines = [
        f"# Recorded from jax {jax.__version__}, flax {flax.__version__}, equinox {equinox.__version__}, "
        f"optax {optax.__version__} by tests/conformance/gen_layers_golden.py; do not edit.",
        "id\tprogram\tprinted",
    ]
    for case_id, program in CASES:
        lines.append(f"{case_id}\t{escape(program)}\t{escape(run(program))}")
    return "\n".join(lines) + "\n"


def main():
    try:
        import equinox, flax, optax  # noqa: F401, E401
    except ImportError as e:
        print(f"skipped: this interpreter lacks a library of the table ({e.name})\n")
        return 0 if "--check" in sys.argv else 1
    text = table()
    if "--check" in sys.argv:
        with open(OUT) as f:
            if f.read() != text:
                print("layers.tsv drifted from the libraries: rerun gen_layers_golden.py")
                return 1
        print(f"{len(CASES)} layer and optimizer rows as the libraries make them\n")
        return 0
    with open(OUT, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
