//! `jax.random` values are bit-exact with JAX 0.10.2: every row of `data/random.tsv`
//! (recorded from real JAX by `tests/conformance/gen_random_golden.py`) is run as a small
//! program through `analyze_file`, and what it prints — the aval, `str(x)`, and the
//! elements as exact Python numbers — must be what JAX printed.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::jax::dtypes::DType;
use tracer_core::jax::prims::random::kernels::{self as random, Float};
use tracer_core::{analyze_file, AnalysisConfig, FileAnalysis};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

fn run(x64: bool, body: &str) -> FileAnalysis {
    let config = if x64 { "jax.config.update(\"jax_enable_x64\", True)\n" } else { "" };
    let source = format!("import jax\nimport jax.numpy as jnp\n{config}{body}");
    analyze_file(&PathBuf::from("draw.py"), &source, &NoFiles, &AnalysisConfig::default())
}

struct Row {
    x64: bool,
    expr: String,
    aval: String,
    values: String,
    text: String,
}

fn rows() -> Vec<Row> {
    let data = include_str!("data/random.tsv");
    data.lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 5, "bad row: {line}");
            Row {
                x64: cols[0] == "1",
                expr: cols[1].to_string(),
                aval: cols[2].to_string(),
                values: cols[3].to_string(),
                text: unescape_json(cols[4]),
            }
        })
        .collect()
}

/// The JSON string literals the generator writes (`json.dumps(str(x))`): only `\n`, `\"`
/// and `\\` occur.
fn unescape_json(s: &str) -> String {
    let inner = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(s);
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn every_golden_row_prints_what_jax_printed() {
    let rows = rows();
    assert!(rows.len() > 300, "{} rows", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        let conv = if row.aval.starts_with("float") {
            "float"
        } else if row.aval.starts_with("bool") {
            "bool"
        } else {
            "int"
        };
        let body = format!("x = {}\nprint(x.dtype, x.shape)\nprint(x)\nprint([{conv}(v) for v in x.ravel()])\n", row.expr);
        let a = run(row.x64, &body);
        let want = format!("{}\n{}\n{}\n", row.aval, row.text, row.values);
        if a.stdout != want {
            failures.push(format!("x64={} {}\n  want: {want:?}\n  got:  {:?}\n  stops: {:?}", row.x64, row.expr, a.stdout, a.stops));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows differ:\n{}", failures.len(), rows.len(), failures.join("\n"));
}

#[test]
fn the_issue_example_prints_as_jax_does() {
    let a = run(false, "print(jax.random.normal(jax.random.key(0), (3,)))\n");
    assert_eq!(a.stdout, "[ 1.6226422   2.0252647  -0.43359444]\n");
}

#[test]
fn draws_tracelens_cannot_reproduce_stay_unknown() {
    // Each would need an XLA routine not reproduced (the float64 erf, cumsum in XLA's
    // reduce-window order, float16 bits) or a seed an f64 does not hold exactly: the value
    // is never approximated.
    for (x64, expr) in [
        (true, "jax.random.truncated_normal(jax.random.key(0), -1.0, 1.0, (3,))"),
        (false, "jax.random.choice(jax.random.key(0), 5, (3,), p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2]))"),
        (false, "jax.random.normal(jax.random.key(0), (3,), dtype=jnp.float16)"),
        (true, "jax.random.key_data(jax.random.key(2**60))"),
    ] {
        let a = run(x64, &format!("x = {expr}\nprint(x)\n"));
        assert_eq!(a.stdout, "<unknown>\n", "{expr}");
    }
}

#[test]
fn keys_flow_through_jit_and_unpacking() {
    let a = run(
        false,
        "@jax.jit\ndef step(key):\n    key, sub = jax.random.split(key)\n    return key\n\nk = step(jax.random.key(0))\nk1, k2 = jax.random.split(k)\nprint(jax.random.key_data(k1))\nprint(jax.random.normal(k2, (2,)))\n",
    );
    // What JAX 0.10.2 prints for this program.
    let want = "[4165894930  804218099]\n[-1.2574776 -0.4016044]\n";
    assert_eq!(a.stdout, want, "stops: {:?}", a.stops);
}

/// Large samples and every float32 uniform mantissa, against what JAX wrote with
/// `gen_random_golden.py --exhaustive DIR` (see its docstring); `TRACELENS_RANDOM_EXHAUSTIVE`
/// names DIR.
#[test]
#[ignore]
fn exhaustive_samples_match_jax() {
    let Some(dir) = std::env::var_os("TRACELENS_RANDOM_EXHAUSTIVE") else {
        panic!("set TRACELENS_RANDOM_EXHAUSTIVE to the folder gen_random_golden.py --exhaustive wrote");
    };
    let read = |name: &str, width: usize| -> Vec<u64> {
        let bytes = std::fs::read(Path::new(&dir).join(name)).expect(name);
        bytes.chunks(width).map(|c| c.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))).collect()
    };
    let f32s = |name: &str| -> Vec<f64> { read(name, 4).into_iter().map(|b| f64::from(f32::from_bits(b as u32))).collect() };
    let f64s = |name: &str| -> Vec<f64> { read(name, 8).into_iter().map(f64::from_bits).collect() };
    let mut failures = Vec::new();
    let mut check = |what: &str, got: Vec<f64>, want: Vec<f64>| {
        assert_eq!(got.len(), want.len(), "{what}");
        let bad = got.iter().zip(&want).filter(|(g, w)| g.to_bits() != w.to_bits() && !(g.is_nan() && w.is_nan())).count();
        if bad > 0 {
            failures.push(format!("{what}: {bad} of {} differ", want.len()));
        }
    };
    let n = 1 << 22;
    for (x64, width) in [(false, 32), (true, 64)] {
        let key = random::seed(42, x64);
        let dt = if x64 { Float::F64 } else { Float::F32 };
        let load = |name: String| if x64 { f64s(&name) } else { f32s(&name) };
        check(&format!("normal f{width}"), random::normal(key, dt, n), load(format!("normal_f{width}.bin")));
        check(&format!("gumbel f{width}"), random::gumbel(key, dt, n), load(format!("gumbel_f{width}.bin")));
        check(&format!("uniform f{width}"), random::uniform(key, dt, &vec![-3.0; n], &vec![7.5; n]), load(format!("uniform_f{width}.bin")));
        let (dtype, hi) = if x64 { (DType::I64, 1_000_000_000_000) } else { (DType::I32, 1000) };
        let ints = random::randint(key, dtype, &vec![-7; n], dtype, &vec![hi; n], dtype).unwrap_or_default();
        let want: Vec<f64> = if x64 {
            read("randint_i64.bin", 8).into_iter().map(|b| b as i64 as f64).collect()
        } else {
            read("randint_i32.bin", 4).into_iter().map(|b| f64::from(b as u32 as i32)).collect()
        };
        check(&format!("randint i{width}"), ints.into_iter().map(|v| v as f64).collect(), want);
    }
    let key = random::seed(42, false);
    check("truncated_normal f32", random::truncated_normal_f32(key, &vec![-1.5; n], &vec![0.7; n]), f32s("truncated_normal_f32.bin"));
    // Every float32 uniform in [0, 1): its 2**23 mantissas through normal's and gumbel's transforms.
    let units: Vec<f32> = (0..1u32 << 23).map(|m| f32::from_bits(m | 0x3F80_0000) - 1.0).collect();
    let lo = -1.0 + f32::EPSILON / 2.0;
    let normal: Vec<f64> =
        units.iter().map(|&u| f64::from(random::erf_inv_f32(u.mul_add(1.0 - lo, lo).max(lo)) * std::f32::consts::SQRT_2)).collect();
    check("normal f32, every mantissa", normal, f32s("normal_f32_all_mantissas.bin"));
    let gumbel: Vec<f64> = units.iter().map(|&u| f64::from(-random::log_f32(-random::log_f32(u.max(f32::MIN_POSITIVE))))).collect();
    check("gumbel f32, every mantissa", gumbel, f32s("gumbel_f32_all_mantissas.bin"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn typed_keys_have_their_own_dtype_and_print_as_jax_does() {
    let a = run(
        false,
        "k = jax.random.key(0)\nprint(k.dtype, k.shape)\nprint(k)\nprint(repr(jax.random.split(k)))\n\
         print(jax.random.split(k, (2, 3)).shape, jax.random.split(k, (2, 3)).dtype)\n\
         print(jax.random.key_data(jax.random.split(k, 4)).shape)\n\
         p = jax.random.PRNGKey(0)\nprint(p, p.dtype, jax.random.key_data(p).shape)\n\
         print(jax.random.wrap_key_data(jnp.zeros((3, 2), jnp.uint32)).shape)\n",
    );
    // What JAX 0.10.2 prints for this program.
    let want = "key<fry> ()\n\
                Array((), dtype=key<fry>) overlaying:\n[0 0]\n\
                Array((2,), dtype=key<fry>) overlaying:\n[[1797259609 2579123966]\n [ 928981903 3453687069]]\n\
                (2, 3) key<fry>\n(4, 2)\n[0 0] uint32 (2,)\n(3,)\n";
    assert_eq!(a.stdout, want, "stops: {:?}", a.stops);
}

#[test]
fn traces_show_key_avals() {
    let a = run(
        false,
        "@jax.jit\ndef f(key, n):\n    keys = jax.random.split(key, 3)\n    return keys, jax.random.fold_in(key, n), jax.random.key_data(key)\n\n\
         f(jax.random.key(0), 1)\nf(jax.random.PRNGKey(0), 1)\n",
    );
    let traces: Vec<_> = a.functions.iter().flat_map(|f| &f.traces).collect();
    assert_eq!(traces.len(), 2, "{:?}", a.functions);
    assert_eq!(traces[0].args, ["key<fry>[]", "~i32[]"]);
    assert_eq!(traces[0].outputs.as_deref(), Some(&["key<fry>[3]".to_string(), "key<fry>[]".to_string(), "u32[2]".to_string()][..]));
    assert!(traces[0].jaxpr.contains("c:key<fry>[3] = random_split[shape=(3,)] a"), "{}", traces[0].jaxpr);
    // A legacy key stays its raw data.
    assert_eq!(traces[1].args[0], "u32[2]");
    assert_eq!(traces[1].outputs.as_deref().map(|o| o[0].as_str()), Some("u32[3,2]"));
}

#[test]
fn operations_jax_refuses_on_keys_report_its_error_or_nothing() {
    // Real JAX 0.10.2: `k + 1` raises `TypeError: add does not accept dtypes key<fry>, int32.`
    let a = run(false, "k = jax.random.key(0)\ny = k + 1\n");
    let messages: Vec<&str> = a.diagnostics.iter().map(|(d, _, _)| d.message.as_str()).collect();
    assert_eq!(messages, ["TypeError: add does not accept dtypes key<fry>, int32."]);
    // JAX refuses these too, with messages tracelens does not model: no diagnostic at all.
    for body in
        ["y = jnp.sum(jax.random.split(jax.random.key(0)))", "y = jnp.exp(jax.random.key(0))", "y = jax.random.key(0) + jax.random.key(1)"]
    {
        let a = run(false, &format!("{body}\n"));
        assert!(a.diagnostics.is_empty(), "{body}: {:?}", a.diagnostics);
    }
    // A batch of keys given to a sampler is JAX's ValueError.
    let a = run(false, "y = jax.random.normal(jax.random.split(jax.random.key(0), 4), (2,))\n");
    let messages: Vec<&str> = a.diagnostics.iter().map(|(d, _, _)| d.message.as_str()).collect();
    assert_eq!(
        messages,
        ["ValueError: normal accepts a single key, but was given a key array of shape (4,) != (). Use jax.vmap for batching."]
    );
}

/// The jaxpr of `f` in `source`, analysed with `check_ir`: no rule problem is recorded and
/// no `vmap` equation is left (every `vmap` batched by rules).
fn batched_jaxpr(source: &str) -> String {
    let config = AnalysisConfig { check_ir: true, ..Default::default() };
    let a = analyze_file(&PathBuf::from("draws.py"), source, &NoFiles, &config);
    assert!(a.ir_problems.is_empty(), "{:?}", a.ir_problems);
    let jaxpr = a.functions.iter().find(|f| f.name == "f").expect("f is traced").traces[0].jaxpr.clone();
    assert!(!jaxpr.contains("vmap["), "{jaxpr}");
    jaxpr
}

/// `vmap` over a batch of keys binds the PRNG primitives once on the batch, as JAX's rules,
/// vectorized over key arrays, do: `jax.make_jaxpr(jax.vmap(lambda k: jax.random.normal(k,
/// (3,))))` of `key<fry>[4]` draws `f32[4,3]` in JAX 0.10.2 (there from `random_bits`, here from
/// the `random_normal` that stands for it), `random_split` gives `key<fry>[4,2]`,
/// `random_fold_in` broadcasts keys against messages. No `vmap` equation is left, and
/// `check_ir` accepts every batched equation. Values: run/vmap_batched_random.py.
#[test]
fn vmap_over_keys_binds_the_prng_primitives_on_the_batch() {
    let source = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(keys, raw, steps):\n    \
                  a = jax.vmap(lambda k: jax.random.normal(k, (3,)))(keys)\n    \
                  b = jax.vmap(lambda k: jax.random.split(k))(keys)\n    \
                  c = jax.vmap(lambda k, i: jax.random.fold_in(k, i))(keys, steps)\n    \
                  d = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(1), i))(steps)\n    \
                  e = jax.vmap(lambda k: jax.random.uniform(k, (2,)), in_axes=1)(raw.T)\n    \
                  return a, b, c, d, e\n\n\
                  f(jax.random.split(jax.random.key(0), 4), jax.random.split(jax.random.PRNGKey(0), 4), jnp.arange(4))\n";
    let jaxpr = batched_jaxpr(source);
    let parts = [
        "d:f32[4,3] = random_normal a\n",
        "e:key<fry>[4,2] = random_split[shape=(2,)] a\n",
        "f:u32[4] = convert_element_type[new_dtype=uint32 weak_type=False] c\n",
        "g:key<fry>[4] = random_fold_in a f\n",
        "h:key<fry>[] = random_seed[impl=fry] 1:i32[]\n",
        "j:key<fry>[4] = random_fold_in h i\n",
        ":f32[4,2] = random_uniform ",
    ];
    for part in parts {
        assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
    }
}

/// `vmap` of a draw with a mapped elementwise parameter (`minval`, `p`) binds one draw over a
/// batch of keys, as JAX batches its sampler: an unmapped key broadcast so that every
/// example draws from the same key (JAX's `random_bits` of an unbatched key), each mapped
/// parameter broadcast to `(n, *shape)`. No `vmap` equation is left, and `check_ir` accepts
/// every batched equation. Values: run/vmap_batched_random_params.py.
#[test]
fn vmap_of_a_draw_with_a_mapped_parameter_binds_one_draw() {
    let source = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(key, keys, lo, p):\n    \
                  a = jax.vmap(lambda m: jax.random.uniform(key, (3,), minval=m))(lo)\n    \
                  b = jax.vmap(lambda k, q: jax.random.bernoulli(k, q, (2,)))(keys, p)\n    \
                  return a, b\n\n\
                  f(jax.random.key(0), jax.random.split(jax.random.key(1), 4), jnp.arange(4.0), jnp.full((4,), 0.5))\n";
    let jaxpr = batched_jaxpr(source);
    for part in [":key<fry>[4] = broadcast_in_dim", ":f32[4,3] = random_uniform ", ":bool[4,2] = random_bernoulli b "] {
        assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
    }
}

/// `vmap` of `categorical` with mapped logits binds JAX's own batched sampler: Gumbel noise
/// (one `random_gumbel` draw from the unmapped key, or over the mapped keys), plus the
/// logits, `argmax` over the class axis; `permutation` with a mapped `x` and `choice` with a
/// mapped `a` bind one draw over a batch of keys, each key with its example's array. No
/// `vmap` equation is left, and `check_ir` accepts every batched equation. Values:
/// run/vmap_batched_random_draws.py.
#[test]
fn vmap_of_categorical_permutation_and_choice_with_mapped_arrays_binds_batched_draws() {
    let source = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(key, keys, logits, x):\n    \
                  a = jax.vmap(lambda l: jax.random.categorical(key, l))(logits)\n    \
                  b = jax.vmap(lambda k, l: jax.random.categorical(k, l, shape=(2,)))(keys, logits)\n    \
                  c = jax.vmap(lambda r: jax.random.permutation(key, r))(x)\n    \
                  d = jax.vmap(lambda k, r: jax.random.choice(k, r, (2,)))(keys, x)\n    \
                  return a, b, c, d\n\n\
                  f(jax.random.key(0), jax.random.split(jax.random.key(1), 4), jnp.zeros((4, 3)), jnp.ones((4, 3)))\n";
    let jaxpr = batched_jaxpr(source);
    for part in [
        ":f32[3] = random_gumbel a\n",
        ":f32[4,3] = add f c\n",
        ":i32[4] = argmax[axes=(1,) index_dtype=int32] g\n",
        ":f32[4,2,3] = random_gumbel b\n",
        ":i32[4,2] = argmax[axes=(2,) index_dtype=int32] k\n",
        ":f32[4,3] = random_permutation m d 0:i32[] False:bool[]\n",
        ":f32[4,2] = random_choice b d o p\n",
    ] {
        assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
    }
}

/// `vmap` of a draw without replacement with a mapped array binds JAX's batched sampler and
/// records no rule problem: `categorical(..., replace=False)` is one Gumbel noise of an
/// example's logits (from the unmapped key, or over the mapped keys) plus the logits, `top_k`
/// of the class axis moved last, and the indices laid out as the sample (int32, as
/// `top_k`'s); `choice(..., replace=False)` with a mapped `a` is one draw over the batch of
/// keys. No `vmap` equation is left. Values: run/vmap_random_without_replacement.py.
#[test]
fn vmap_of_draws_without_replacement_binds_batched_draws() {
    let source = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(key, keys, logits, x):\n    \
                  a = jax.vmap(lambda l: jax.random.categorical(key, l, shape=(2,), replace=False))(logits)\n    \
                  b = jax.vmap(lambda k, l: jax.random.categorical(k, l, shape=(3,), replace=False))(keys, logits)\n    \
                  c = jax.vmap(lambda k, r: jax.random.choice(k, r, (2,), replace=False))(keys, x)\n    \
                  d = jax.vmap(lambda l: jax.random.categorical(key, l, axis=0, shape=(2, 5), replace=False), in_axes=1)(x)\n    \
                  return a, b, c, d\n\n\
                  f(jax.random.key(0), jax.random.split(jax.random.key(1), 4), jnp.zeros((4, 3)), jnp.ones((4, 3, 5)))\n";
    let jaxpr = batched_jaxpr(source);
    for part in [
        ":f32[3] = random_gumbel a\n",
        ":f32[4,3] = random_gumbel b\n",
        ":i32[4,2] = top_k_indices[k=2]",
        ":i32[4,3] = top_k_indices[k=3]",
        ":f32[4,2,5] = random_choice",
        ":f32[3,5,4] = transpose[permutation=(0, 2, 1)]",
        ":i32[3,5,2] = top_k_indices[k=2]",
        ":i32[3,2,5] = transpose[permutation=(0, 2, 1)]",
    ] {
        assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
    }
}
