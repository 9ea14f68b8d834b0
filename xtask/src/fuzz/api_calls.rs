//! The fuzzer's API sweep: calls of a modelled JAX function (any entry of
//! `tracer_core::jax::surface`) with arguments drawn from hostile pools — arrays of odd
//! shapes and dtypes, extreme numbers, shapes and axes, dtypes, nested lists, callables —
//! each in its own `try`, so the program goes on to the next call whatever the last one
//! raised. Mutating the fixtures rarely reaches a model's argument handling with an empty
//! tuple for an axis or no argument at all; this reaches every model within minutes.

use tracer_core::jax::surface::JaxFn;

use super::mutate::Rng;

const ARRAYS: &[&str] = &[
    "jnp.ones(3)",
    "jnp.ones((2, 3))",
    "jnp.zeros((0,))",
    "jnp.ones((2, 0, 3))",
    "jnp.float32(2.5)",
    "jnp.arange(6).reshape(2, 3)",
    "jnp.ones((3, 3))",
    "jnp.array([1, 2, 3], dtype=jnp.int32)",
    "jnp.array([True, False])",
    "jnp.ones((1, 1, 1, 1))",
    "jnp.array([jnp.nan, jnp.inf, -jnp.inf])",
    "jnp.ones((2, 3), dtype=jnp.int8)",
    "jnp.eye(4)",
    "jnp.ones((2, 2, 2, 2, 2))",
    "jnp.array(-2**31, dtype=jnp.int32)",
    "jnp.array([0, 255], dtype=jnp.uint8)",
    "jnp.ones((4, 3), jnp.complex64)",
    "jnp.ones((2,), jnp.bfloat16)",
    "jax.random.PRNGKey(0)",
    "jax.random.key(1)",
    "jnp.ones((3, 3, 3))",
];

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "3",
    "-3",
    "7",
    "2**31",
    "2**63",
    "-2**63",
    "10**9",
    "10**12",
    "10**18",
    "2**64",
    "1e308",
    "-1e308",
    "float('nan')",
    "float('inf')",
    "0.5",
    "-0.0",
    "True",
    "False",
    "None",
    "'abc'",
    "''",
    "1j",
    "65536",
    "-65537",
    "4294967296",
];

const SHAPES: &[&str] = &[
    "()",
    "(0,)",
    "(-1,)",
    "(3,)",
    "(2, 3)",
    "(3, 2)",
    "(6,)",
    "(2**31,)",
    "(10**12, 10**12)",
    "(1,) * 40",
    "(0, 0, 0)",
    "(3, -2)",
    "(10**18, 2)",
    "(2**32, 2**32)",
    "(1, 2, 3, 4, 5, 6, 7)",
    "[2, 3]",
    "(2, -1)",
    "(-1, -1)",
    "(2.5,)",
    "(None,)",
    "((2,),)",
];

const AXES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "-3",
    "5",
    "-100",
    "2**63",
    "(0, 0)",
    "(0, 1)",
    "(1, 0)",
    "(0, -1)",
    "(2**40,)",
    "()",
    "None",
    "(0, 1, 2, 3)",
    "[0]",
    "1.5",
];

const DTYPES: &[&str] = &[
    "jnp.int8",
    "jnp.uint32",
    "jnp.float16",
    "jnp.bfloat16",
    "jnp.complex64",
    "jnp.bool_",
    "jnp.int64",
    "jnp.float64",
    "'float32'",
    "int",
    "float",
    "bool",
    "'foo'",
    "jnp.uint4",
];

/// Parameter names that JAX functions take, given by name.
const KEYWORDS: &[&str] = &[
    "axis",
    "axes",
    "shape",
    "dtype",
    "k",
    "n",
    "num",
    "ord",
    "keepdims",
    "indices_or_sections",
    "repeats",
    "reps",
    "offset",
    "axis1",
    "axis2",
    "dimension",
    "dimensions",
    "new_sizes",
    "start_indices",
    "slice_sizes",
    "limit_indices",
    "strides",
    "padding",
    "pad_width",
    "mode",
    "side",
    "q",
    "bins",
    "length",
    "size",
    "fill_value",
    "total_repeat_length",
    "unroll",
    "return_index",
    "minval",
    "maxval",
    "replace",
    "p",
    "num_segments",
    "window_dimensions",
    "window_strides",
    "lhs_dilation",
    "feature_group_count",
    "full_matrices",
    "hermitian",
    "decimals",
    "edge_order",
    "kth",
    "norm",
    "in_axes",
    "argnums",
    "static_argnums",
];

/// A program of `calls` hostile calls, at the top level or inside a jitted function.
pub fn program(rng: &mut Rng, calls: usize) -> String {
    let mut out = String::from(
        "import jax\nimport jax.numpy as jnp\nimport jax.numpy.linalg\nimport jax.scipy.special\nimport jax.scipy.linalg\nimport jax.scipy.stats.norm\nfrom jax import lax\n\nx = jnp.linspace(-2, 2, 12).reshape(3, 4)\n",
    );
    let jitted = rng.below(5) < 2;
    let indent = if jitted { "    " } else { "" };
    if jitted {
        out.push_str("\n@jax.jit\ndef f(x):\n");
    }
    for _ in 0..calls {
        out.push_str(&format!("{indent}try:\n{indent}    y = {}\n{indent}    print(y)\n", call(rng)));
        out.push_str(&format!("{indent}except Exception as e:\n{indent}    print(type(e).__name__)\n"));
    }
    if jitted {
        out.push_str("    return x\n\n\nf(x)\njax.grad(lambda x: jnp.sum(f(x)))(x)\n");
    }
    out
}

/// One statement: a hostile call in a `try`, for the mutator to inject into a fixture.
pub fn statement(rng: &mut Rng) -> String {
    format!("try:\n    _a = {}\nexcept Exception:\n    pass", call(rng))
}

fn call(rng: &mut Rng) -> String {
    let f = JaxFn::ALL[rng.below(JaxFn::ALL.len())];
    let mut args: Vec<String> = (0..[0, 1, 1, 2, 2, 3, 4][rng.below(7)]).map(|_| value(rng, 0)).collect();
    // Mostly an array first, as most functions expect, so the call gets past the first check.
    if !args.is_empty() && rng.below(10) < 7 {
        args[0] = rng.pick(ARRAYS).to_string();
    }
    let mut names: Vec<&str> = Vec::new();
    for _ in 0..[0, 0, 1, 1, 2][rng.below(5)] {
        let name = *rng.pick(KEYWORDS);
        if !names.contains(&name) {
            names.push(name);
            args.push(format!("{name}={}", value(rng, 0)));
        }
    }
    format!("{}.{}({})", f.module(), f.name(), args.join(", "))
}

fn value(rng: &mut Rng, depth: usize) -> String {
    match rng.below(100) {
        0..35 => rng.pick(ARRAYS).to_string(),
        35..60 => rng.pick(NUMBERS).to_string(),
        60..75 => rng.pick(SHAPES).to_string(),
        75..85 => rng.pick(AXES).to_string(),
        85..92 => rng.pick(DTYPES).to_string(),
        92..97 if depth < 2 => format!("[{}]", (0..rng.below(4)).map(|_| value(rng, depth + 1)).collect::<Vec<_>>().join(", ")),
        _ => rng.pick(&["lambda *a, **k: a[0]", "jnp.sin", "x"]).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_program_calls_modelled_functions_and_is_the_same_for_a_seed() {
        let text = program(&mut Rng::new(3), 20);
        assert_eq!(text.matches("try:").count(), 20);
        assert!(JaxFn::ALL.iter().any(|f| text.contains(&format!("{}.{}(", f.module(), f.name()))), "{text}");
        assert_eq!(text, program(&mut Rng::new(3), 20));
    }
}
