//! Control flow inside traces: `lax.cond`/`switch`/`while_loop`/`fori_loop`/`scan` and a
//! nested `vmap` bind one higher-order equation (printed as JAX prints it), and values mode
//! computes them. Every expected value was printed by JAX 0.10.2 for the same program.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tracer_core::interp::{Budgets, SourceLoader};
use tracer_core::{analyze_file, run_file, AnalysisConfig, RunOutcome};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _: &Path) -> Option<Rc<str>> {
        None
    }
}

fn run(source: &str) -> tracer_core::RunResult {
    run_file(&PathBuf::from("prog.py"), source, &NoFiles, &AnalysisConfig::default())
}

/// The stdout of a values-mode run that completed without notes.
fn printed(source: &str) -> String {
    let r = run(source);
    assert_eq!(r.outcome, RunOutcome::Completed, "{:?}", r.notes);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    r.stdout
}

/// The jaxpr text of the only trace of `name`.
fn jaxpr_of(source: &str, name: &str) -> String {
    let config = AnalysisConfig { check_ir: true, ..Default::default() };
    let a = analyze_file(&PathBuf::from("prog.py"), source, &NoFiles, &config);
    assert!(a.ir_problems.is_empty(), "{:?}", a.ir_problems);
    let f = a.functions.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no traced function {name}"));
    f.traces[0].jaxpr.clone()
}

#[test]
fn cond_and_switch_inside_jit_compute_the_taken_branch() {
    let out = printed(
        r#"import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return jax.lax.cond(x > 0, lambda x: jnp.sqrt(x), lambda x: -x * 2.0, x)

for v in [4.0, -1.5, 0.25]:
    print(f(jnp.float32(v)))
g = jax.jit(lambda i, x: jax.lax.switch(i, [jnp.sin, jnp.cos, lambda x: x * 3.0], x))
print(g(7, 2.0), g(-1, 2.0), g(1, 2.0))
print(jax.jit(lambda p, x: jax.lax.cond(p, lambda x: x + 1, lambda x: x - 1, x))(3, 1.0))
"#,
    );
    assert_eq!(out, "2.0\n3.0\n0.5\n6.0 0.9092974 -0.41614684\n2.0\n");
}

/// The stdout of a values-mode run of a conformance fixture (`tests/fixtures/...`).
fn printed_fixture(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root").join("tests/fixtures");
    printed(&std::fs::read_to_string(root.join(path)).expect("read fixture"))
}

#[test]
fn loops_inside_jit_compute_their_carry() {
    assert_eq!(printed_fixture("run/fori_loop_power.py"), "[0.52573115 0.8506508 ]\n3.618034\n");
    assert_eq!(printed_fixture("run/while_loop_newton.py"), "1.4142135 4\n7 0.78125\n");
    assert_eq!(printed("import jax\nprint(jax.jit(lambda lo, x: jax.lax.fori_loop(lo, 6, lambda i, v: v + i, x))(2, 1.0))\n"), "15.0\n");
}

#[test]
fn scan_inside_jit_honours_reverse_and_nests() {
    let out = printed(
        r#"import jax
import jax.numpy as jnp

def step(c, x):
    return c * 2.0 + x, c - x

xs = jnp.arange(4.0)
print(jax.lax.scan(step, 1.0, xs, reverse=True))
print(jax.jit(lambda c, xs: jax.lax.scan(step, c, xs, reverse=True))(1.0, xs))
print(jax.jit(lambda c, xs: jax.lax.scan(step, c, xs))(1.0, xs))

@jax.jit
def nested(x):
    def outer(c, row):
        inner = jax.lax.fori_loop(0, 3, lambda i, a: a + row * i, 0.0)
        return c + inner, jax.lax.cond(inner > 3.0, lambda v: v * 10.0, lambda v: -v, inner)
    return jax.lax.scan(outer, 0.0, x)

print(nested(jnp.array([1.0, 2.0, 0.5])))
"#,
    );
    assert_eq!(
        out,
        "(Array(50., dtype=float32), Array([25., 11.,  3., -2.], dtype=float32))\n\
         (Array(50., dtype=float32), Array([25., 11.,  3., -2.], dtype=float32))\n\
         (Array(27., dtype=float32), Array([1., 1., 3., 9.], dtype=float32))\n\
         (Array(10.5, dtype=float32), Array([-3. , 60. , -1.5], dtype=float32))\n"
    );
}

#[test]
fn vmap_inside_vmap_and_jit_is_computed() {
    let out = printed(
        r#"import jax
import jax.numpy as jnp

def dist(a, b):
    return jnp.sqrt(jnp.sum((a - b) ** 2))

pts = jnp.array([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]])
print(jax.vmap(jax.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))(pts, pts))
print(jax.jit(jax.vmap(lambda a, b: a * b + 1.0))(jnp.arange(3.0), jnp.ones(3)))
print(jax.vmap(lambda r: jax.lax.fori_loop(0, 3, lambda i, a: a * r, 1.0))(jnp.array([1.0, 2.0, 3.0])))
"#,
    );
    assert_eq!(
        out,
        "[[0.        5.        1.4142135]\n [5.        0.        3.6055512]\n [1.4142135 3.6055512 0.       ]]\n[1. 2. 3.]\n[ 1.  8. 27.]\n"
    );
}

#[test]
fn control_flow_prints_as_higher_order_equations() {
    let cond = jaxpr_of(
        r#"import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return jax.lax.cond(x > 0, jnp.sqrt, lambda x: -x, x)

f(1.0)
"#,
        "f",
    );
    assert!(cond.contains("= cond[\n      branches=(\n        { lambda ; a:~f32[]. let\n            b:~f32[] = neg a"), "{cond}");
    assert!(cond.contains("      )\n    ] d a\n"), "{cond}");
    let scan = jaxpr_of(
        r#"import jax
import jax.numpy as jnp

@jax.jit
def f(xs):
    return jax.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs, reverse=True)

f(jnp.ones(3))
"#,
        "f",
    );
    for part in ["= scan[\n      jaxpr={ lambda ; a:f32[] b:f32[]. let", "length=3", "num_carry=1", "num_consts=0", "reverse=True"] {
        assert!(scan.contains(part), "{part} missing in {scan}");
    }
    let fori = jaxpr_of(
        r#"import jax
import jax.numpy as jnp

@jax.jit
def f(n, x):
    return jax.lax.fori_loop(0, n, lambda i, v: v * 2.0, x)

f(3, 1.0)
"#,
        "f",
    );
    for part in ["= while[", "body_jaxpr={", "body_nconsts=0", "cond_jaxpr={", "= lt a b", "cond_nconsts=0"] {
        assert!(fori.contains(part), "{part} missing in {fori}");
    }
    assert!(!fori.contains("checkpoint"), "{fori}");
    // `lax.map` is a scan with no carry, and nothing else (JAX's jaxpr of the same program).
    let map = jaxpr_of(
        r#"import jax
import jax.numpy as jnp

@jax.jit
def f(a):
    return jax.lax.map(jnp.sin, a)

f(jnp.ones((4, 3)))
"#,
        "f",
    );
    assert!(map.starts_with("{ lambda ; a:f32[4,3]. let\n    b:f32[4,3] = scan[\n      jaxpr={ lambda ; a:f32[3]. let"), "{map}");
    for part in ["length=4", "num_carry=0", "reverse=False", "] a\n  in (b,) }"] {
        assert!(map.contains(part), "{part} missing in {map}");
    }
}

/// `vmap` of `scan`, `fori_loop` and `while_loop` binds one loop with batched carries, as
/// `jax.make_jaxpr(jax.vmap(f))` shows in JAX 0.10.2: an unmapped initial value the body makes
/// batched broadcast first, scanned arrays moved so the batch is their second axis, an
/// unmapped counter left unmapped; a `while` whose predicate differs per example is one
/// `while` whose cond returns the batched predicate (`bool[3]`), every carry batched, an
/// unmapped initial value broadcast, a cond const mapped on another axis sliced inside the
/// cond. Values: run/vmap_batched_loops.py.
#[test]
fn vmap_of_loops_binds_one_batched_loop() {
    let scan = jaxpr_of(
        "import jax\nfrom jax import lax\n\n@jax.jit\ndef f(xs):\n    return jax.vmap(lambda v: lax.scan(lambda c, x: (c * 0.5 + x, c * 2.0), 0.0, v))(xs)\n\nf(jax.numpy.ones((3, 4)))\n",
        "f",
    );
    for part in [
        "c:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] b",
        "d:f32[4,3] = transpose[permutation=(1, 0)] a",
        "jaxpr={ lambda ; a:f32[3] b:f32[3]. let",
        "] c d\n",
        "transpose[permutation=(1, 0)] f\n",
    ] {
        assert!(scan.contains(part), "{part} missing in {scan}");
    }
    assert_eq!(scan.matches("scan[").count(), 1, "{scan}");
    let fori = jaxpr_of(
        "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n@jax.jit\ndef f(xs):\n    return jax.vmap(lambda v: lax.fori_loop(0, 3, lambda i, a: a * 1.5 + v, jnp.zeros(4)))(xs)\n\nf(jnp.ones((3, 4)))\n",
        "f",
    );
    assert!(fori.contains("jaxpr={ lambda h:f32[3,4]; a:i32[] b:f32[3,4]. let"), "{fori}");
    assert_eq!(fori.matches("scan[").count(), 1, "{fori}");
    let loop_ = jaxpr_of(
        "import jax\nfrom jax import lax\n\n@jax.jit\ndef f(xs):\n    return jax.vmap(lambda v: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] + v), (0, v)))(xs)\n\nf(jax.numpy.ones((3, 4)))\n",
        "f",
    );
    for part in [
        "body_jaxpr={ lambda d:f32[3,4]; a:~i32[] b:f32[3,4]. let",
        "cond_jaxpr={ lambda ; a:~i32[] b:f32[3,4]. let",
        "] a 0:~i32[] a\n",
        "~i32[3] = broadcast_in_dim",
    ] {
        assert!(loop_.contains(part), "{part} missing in {loop_}");
    }
    assert!(!scan.contains("vmap[") && !fori.contains("vmap[") && !loop_.contains("vmap["));
    // A predicate that differs per example: one `while` whose cond returns `bool[3]`.
    let per_example = jaxpr_of(
        "import jax\nfrom jax import lax\n\n@jax.jit\ndef f(xs):\n    return jax.vmap(lambda v: lax.while_loop(lambda c: c < 100.0, lambda c: c * 2.0 + v[0], v[1]))(xs)\n\nf(jax.numpy.ones((3, 4)))\n",
        "f",
    );
    let parts = [
        "body_jaxpr={ lambda d:f32[3,4]; a:f32[3]. let",
        "cond_jaxpr={ lambda ; a:f32[3]. let",
        "c:bool[3] = lt a b\n",
        "cond_nconsts=0\n    ] a c\n",
    ];
    batched_while_has(&per_example, &parts);
    // Every carry batched (the counter broadcast), the cond's const mapped on axis 1.
    let consts = jaxpr_of(
        "import jax\nfrom jax import lax\n\n@jax.jit\ndef g(xs):\n    return jax.vmap(lambda v: lax.while_loop(lambda c: c[0] < v[0], lambda c: (c[0] + 1, c[1] * 2.0), (0, v)), in_axes=1)(xs)\n\ng(jax.numpy.ones((3, 4)))\n",
        "g",
    );
    let parts = [
        "b:~i32[4] = broadcast_in_dim[broadcast_dimensions=() shape=(4,)] 0:~i32[]",
        "c:f32[4,3] = transpose[permutation=(1, 0)] a",
        "cond_jaxpr={ lambda c:f32[3,4]; a:~i32[4] b:f32[4,3]. let",
        "d:f32[1,4] = slice[limit_indices=(1, 4) start_indices=(0, 0)] c",
        "h:bool[4] = lt g f",
        "cond_nconsts=1\n    ] a b c\n",
    ];
    batched_while_has(&consts, &parts);
}

/// `vmap` of `grad` inside `jit` batches the backward pass by rules, as JAX's
/// `jax.make_jaxpr(jax.vmap(jax.grad(f)))` does (`f32[4,3,2]` from a `dot_general` batched
/// over the examples): the stand-in for the loss that `grad` does not return, which nothing
/// reads, does not keep the per-example `vmap` equation. Values: run/vmap_batched_grads.py.
#[test]
fn vmap_of_grad_inside_jit_binds_the_batched_backward_pass() {
    let jaxpr = jaxpr_of(
        "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef h(w, xs):\n    return jax.vmap(jax.grad(lambda w, x: jnp.sum(jax.nn.relu(x @ w))), in_axes=(None, 0))(w, xs)\n\nh(jnp.ones((3, 2)), jnp.ones((4, 5, 3)))\n",
        "h",
    );
    assert!(!jaxpr.contains("vmap[") && !jaxpr.contains("transformed"), "{jaxpr}");
    assert!(jaxpr.contains("f32[4,5,2] = dot_general"), "{jaxpr}");
    assert!(jaxpr.contains(":f32[4,3,2] = "), "{jaxpr}");
}

/// `jaxpr` binds no `vmap` and holds each of `parts`.
fn batched_while_has(jaxpr: &str, parts: &[&str]) {
    assert!(!jaxpr.contains("vmap["), "{jaxpr}");
    for part in parts {
        assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
    }
}

#[test]
fn a_nan_inside_a_loop_body_is_reported_at_its_line_with_the_iteration() {
    let r = run(r#"import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    def body(i, x):
        return jnp.log(x - 1.0)
    return jax.lax.fori_loop(0, 5, body, x)

print(f(jnp.float32(10.0)))
"#);
    assert_eq!(r.stdout, "nan\n");
    let tl301: Vec<_> = r.diagnostics.iter().filter(|(d, _, _)| d.code.as_str() == "TL301").collect();
    assert_eq!(tl301.len(), 1, "{:?}", r.diagnostics);
    let (d, loc, _) = tl301[0];
    assert_eq!(loc.line, 7);
    assert!(d.message.contains("encountered in log"), "{}", d.message);
    assert!(d.message.contains("in jit(f) called at prog.py:10, the 3rd iteration of the loop at prog.py:8"), "{}", d.message);
}

#[test]
fn an_endless_while_loop_inside_jit_ends_on_the_budget() {
    let source = r#"import jax

@jax.jit
def f(x):
    return jax.lax.while_loop(lambda x: x > 0, lambda x: x + 1.0, x)

print(f(1.0))
"#;
    let budgets = Budgets { max_time: Duration::from_millis(300), ..Default::default() };
    let config = AnalysisConfig { budgets, ..Default::default() };
    let start = Instant::now();
    let r = run_file(&PathBuf::from("prog.py"), source, &NoFiles, &config);
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    assert!(matches!(r.outcome, RunOutcome::Stopped { .. }), "{:?}", r.outcome);
    assert_eq!(r.stdout, "");
    // An ordinary analysis never runs the loop.
    let a = analyze_file(&PathBuf::from("prog.py"), source, &NoFiles, &AnalysisConfig::default());
    assert!(a.diagnostics.iter().all(|(d, _, _)| d.code.as_str() != "TL900"), "{:?}", a.diagnostics);
}

/// A program of few but heavy steps (each a whole-array kernel): the time budget is read often
/// enough that it stops such a program too, not only one of many cheap steps. With a zero
/// budget it must stop within its first hundred steps; the loop below takes about 400.
#[test]
fn a_short_program_of_heavy_steps_still_stops_on_the_time_budget() {
    let source = r#"import jax.numpy as jnp
x = jnp.zeros(8)
for i in range(100):
    x = x + 1.0
print(x[0])
"#;
    let budgets = Budgets { max_time: Duration::ZERO, max_steps: u64::MAX, ..Default::default() };
    let r = run_file(&PathBuf::from("prog.py"), source, &NoFiles, &AnalysisConfig { budgets, ..Default::default() });
    match &r.outcome {
        RunOutcome::Stopped { why, .. } => assert!(why.contains("time budget"), "{why}"),
        other => panic!("ran to the end: {other:?}, printed {:?}", r.stdout),
    }
    assert_eq!(r.stdout, "");
}

/// `jax.grad` of `f` (the definition of a function `f(x)` returning a scalar) at `x0`, against
/// central finite differences in float64 computed by values mode from the same `f`.
fn check_grad(f: &str, x0: &[f64]) {
    let x0 = x0.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ");
    let source = format!(
        r#"import jax
import jax.numpy as jnp
from jax import lax
jax.config.update("jax_enable_x64", True)
{f}
x0 = [{x0}]
g = jax.grad(f)(jnp.array(x0))
for i in range(len(x0)):
    up = list(x0)
    dn = list(x0)
    up[i] += 1e-6
    dn[i] -= 1e-6
    print(float(g[i]), float((f(jnp.array(up)) - f(jnp.array(dn))) / 2e-6))
"#
    );
    let out = printed(&source);
    assert!(!out.is_empty(), "{f}");
    for line in out.lines() {
        let pair: Vec<f64> = line.split_whitespace().map(|v| v.parse().unwrap_or(f64::NAN)).collect();
        let [ad, fd] = pair[..] else { panic!("{f}: unexpected line {line:?}") };
        assert!((ad - fd).abs() <= 1e-5 * (1.0 + fd.abs()), "{f}: {ad} by AD but {fd} by finite differences");
    }
}

#[test]
fn grad_goes_through_the_taken_branch_of_cond() {
    let f = "def f(x):\n    return lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v) * v, lambda v: v ** 3, x).sum()\n";
    check_grad(f, &[0.5, 1.5, -0.25]);
    check_grad(f, &[-0.5, 0.3, -0.25]);
    let switch = "def f(x):\n    return jnp.sum(lax.switch(2, [jnp.exp, jnp.tanh, lambda v: v * jnp.sum(v)], x))\n";
    check_grad(switch, &[0.5, -1.5]);
}

#[test]
fn grad_goes_through_scan_and_static_fori_loop() {
    check_grad(
        "def f(x):\n    c, ys = lax.scan(lambda c, xi: (c * xi + jnp.sin(xi), c * xi), 1.0, x)\n    return c + jnp.sum(ys ** 2)\n",
        &[0.5, 1.5, -0.25, 2.0],
    );
    check_grad(
        "def f(x):\n    w = jnp.sum(x)\n    c, ys = lax.scan(lambda c, xi: (c + w * xi, jnp.exp(c)), 0.0, x, reverse=True)\n    return c * jnp.sum(ys)\n",
        &[0.1, -0.2, 0.3],
    );
    check_grad("def f(x):\n    return lax.fori_loop(0, 4, lambda i, v: v * jnp.cos(v) + i, x).sum()\n", &[0.5, 1.0]);
    check_grad("@jax.jit\ndef f(x):\n    return lax.scan(lambda c, xi: (c * jnp.tanh(xi), c), 1.0, x)[0]\n", &[0.5, 1.0, -2.0]);
}

#[test]
fn reverse_mode_through_a_while_loop_with_a_tuple_carry_is_jaxs_error() {
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("repo root")
            .join("tests/fixtures/errors/tl190_grad_through_while_loop_newton.py"),
    )
    .expect("read fixture");
    let a = analyze_file(&PathBuf::from("prog.py"), &source, &NoFiles, &AnalysisConfig::default());
    let errors: Vec<_> = a.diagnostics.iter().map(|(d, loc, _)| (d.code.as_str(), loc.line, d.message.clone())).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!((errors[0].0, errors[0].1), ("TL190", 21));
    assert!(errors[0].2.starts_with("ValueError: Reverse-mode differentiation does not work for lax.while_loop"), "{errors:?}");
}

#[test]
fn grad_goes_through_vmap_one_body_per_example_and_vmap_of_grad_runs_per_example() {
    // A vmapped per-example loss, differentiated as a whole (`in_axes` with None and 0).
    check_grad(
        "X = jnp.array([[1.0, 2.0], [-1.0, 0.5], [0.5, -2.0]])\ndef f(w):\n    return jnp.mean(jax.vmap(lambda w, x: jnp.tanh(jnp.dot(w, x)) ** 2, in_axes=(None, 0))(w, X))\n",
        &[0.3, 0.4],
    );
    // Mapped over axis 1 and out_axes=1, inside jit.
    check_grad(
        "@jax.jit\ndef f(x):\n    m = x.reshape(2, 2)\n    return jnp.sum(jax.vmap(lambda c: jnp.sin(c) * c[0], in_axes=1, out_axes=1)(m) ** 2)\n",
        &[0.5, -1.0, 1.5, 0.25],
    );
    // jvp and vjp through vmap agree with grad.
    let out = printed(
        r#"import jax
import jax.numpy as jnp
X = jnp.array([[1.0, 2.0], [-1.0, 0.5], [0.5, -2.0]])
w = jnp.array([0.3, 0.4])
f = lambda w: jax.vmap(lambda x: jnp.dot(w, x) ** 2)(X)
print(jax.grad(lambda w: jnp.sum(f(w)))(w))
print(jax.jvp(f, (w,), (jnp.array([1.0, 0.0]),)))
y, pull = jax.vjp(f, w)
print(y, pull(jnp.ones(3)))
# vmap of grad: per-example gradients.
loss = lambda w, x: 0.5 * (jnp.dot(x, w) - 1.0) ** 2
print(jax.vmap(jax.grad(loss), in_axes=(None, 0))(w, X))
"#,
    );
    // As JAX 0.10.2 prints it.
    assert_eq!(out, "[1.7500001 6.9      ]\n(Array([1.21      , 0.01      , 0.42249995], dtype=float32), Array([ 2.2       ,  0.20000002, -0.65      ], dtype=float32))\n[1.21       0.01       0.42249995] (Array([1.7500001, 6.9      ], dtype=float32),)\n[[ 0.10000002  0.20000005]\n [ 1.1        -0.55      ]\n [-0.825       3.3       ]]\n");
}

#[test]
fn dynamic_slice_clamps_its_start_indices_as_jax_does() {
    let out = printed(
        r#"import jax
import jax.numpy as jnp
from jax import lax
x = jnp.arange(10.0)
print(lax.dynamic_slice(x, (3,), (4,)))
print(lax.dynamic_slice(x, (8,), (4,)))
print(lax.dynamic_slice(x, (-2,), (3,)))
print(lax.dynamic_slice_in_dim(x.reshape(2, 5), 3, 2, axis=1))
m = jnp.arange(12.0).reshape(3, 4)
print(lax.dynamic_slice(m, jnp.array([1, 2]), (2, 2)))
print(lax.dynamic_update_slice(m, jnp.ones((2, 2)), (2, 3)))
f = lambda x, i: jnp.sum(lax.dynamic_slice(x, (i,), (3,)) ** 2)
print(jax.grad(f)(x, 2), jax.grad(f)(x, 9))
print(jax.jit(jax.grad(f))(x, 4))
"#,
    );
    // Printed by JAX 0.10.2 for the same program.
    assert_eq!(
        out,
        "[3. 4. 5. 6.]\n[6. 7. 8. 9.]\n[7. 8. 9.]\n[[3. 4.]\n [8. 9.]]\n[[ 6.  7.]\n [10. 11.]]\n[[0. 1. 2. 3.]\n [4. 5. 1. 1.]\n [8. 9. 1. 1.]]\n[0. 0. 4. 6. 8. 0. 0. 0. 0. 0.] [ 0.  0.  0.  0.  0.  0.  0. 14. 16. 18.]\n[ 0.  0.  0.  0.  8. 10. 12.  0.  0.  0.]\n"
    );
}

#[test]
fn grad_goes_through_dynamic_slice_in_a_scan() {
    // A sliding window read at a traced offset, written back with dynamic_update_slice.
    check_grad(
        "def f(x):\n    def step(acc, t):\n        win = lax.dynamic_slice(x, (t,), (3,))\n        return lax.dynamic_update_slice(acc, jnp.sin(win[:1]) * win[2], (t,)), jnp.sum(win ** 2)\n    acc, ys = lax.scan(step, jnp.zeros(4), jnp.arange(4))\n    return jnp.sum(acc * x[:4]) + jnp.sum(ys)\n",
        &[0.5, -1.0, 1.5, 0.25, 2.0, -0.75],
    );
    // Clamped windows: a start past the end reads (and differentiates) the last window.
    check_grad("def f(x):\n    return jnp.sum(lax.dynamic_slice_in_dim(x, 7, 2) * jnp.array([1.0, 3.0]))\n", &[0.5, -1.0, 1.5]);
    check_grad("def f(x):\n    return jnp.sum(jnp.tanh(lax.dynamic_update_slice(x, x[:2] * x[2], (5,))))\n", &[0.5, -1.0, 1.5, 0.3]);
}

#[test]
fn gradients_have_the_weak_type_jax_gives_them() {
    // `w` is weakly typed (made from a Python float): its gradient through a dot with a
    // strongly typed operand, `x[0]` or `sqrt` is strongly typed, through `tanh` or a mean it
    // stays weak; a strongly typed parameter's gradient is strongly typed. As JAX 0.10.2 says.
    let out = printed(
        r#"import jax
import jax.numpy as jnp
w = jnp.full((3, 2), 0.1)
x = jnp.ones((4, 3))
cases = [
    lambda w: jnp.sum(x @ w),
    lambda w: jnp.sum(w.T @ w),
    lambda w: jnp.sum(jnp.tanh(w)),
    lambda w: jnp.mean(w),
    lambda w: jnp.max(w),
    lambda w: jnp.sum(w[0]),
    lambda w: jnp.sum(jnp.sqrt(w)),
    lambda w: jnp.sum(w ** 2),
    lambda w: jnp.sum(jnp.maximum(w, 0.0)),
    lambda w: jnp.sum(jnp.pad(w, 1)),
]
weak = lambda a: repr(a).endswith("weak_type=True)")
print([weak(jax.grad(f)(w)) for f in cases])
print([weak(jax.jit(jax.grad(f))(w)) for f in cases])
print([weak(jax.grad(f)(w.astype(jnp.float32))) for f in cases])
print(weak(jax.grad(lambda s: s ** 2)(2.0)), weak(jax.grad(lambda s: jnp.sqrt(s))(jnp.float32(2.0))))
"#,
    );
    let weak = "[False, True, True, True, True, False, False, False, True, False]";
    assert_eq!(out, format!("{weak}\n{weak}\n[False, False, False, False, False, False, False, False, False, False]\nTrue False\n"));
}

#[test]
fn grad_under_jit_of_a_cond_on_a_traced_index_is_a_cond_of_transposed_branches() {
    let source = r#"import jax
import jax.numpy as jnp
from jax import lax

def loss(x):
    return lax.cond(x.sum() > 0, lambda v: jnp.sin(v) * v, lambda v: v ** 3, x).sum()

@jax.jit
def step(x):
    return jax.grad(loss)(x)

x = jnp.array([0.5, 1.5, -0.25])
print(step(x), step(-x))
print(jax.jit(jax.hessian(loss))(x))
print(jax.jit(jax.jacrev(lambda x: lax.switch(jnp.argmax(x), [jnp.sin, jnp.cos, jnp.tanh], x)))(x))
print(jax.jit(jax.vmap(jax.grad(loss)))(jnp.stack([x, -x])))
"#;
    // The primal cond, then the cond of the transposed branches, both on the traced index:
    // neither branch is inlined (the IR checker also checks the branches' signatures).
    let jaxpr = jaxpr_of(source, "step");
    assert_eq!(jaxpr.matches("cond[").count(), 2, "{jaxpr}");
    assert!(!jaxpr.contains("sin") || jaxpr.matches("branches=(").count() == 2, "{jaxpr}");
    // JAX 0.10.2 prints:
    assert_eq!(
        printed(source),
        "[ 0.9182168   1.1036007  -0.48963207] [0.75   6.75   0.1875]\n\
         [[ 1.5154524  0.         0.       ]\n [ 0.        -1.354768   0.       ]\n [ 0.         0.         1.8759739]]\n\
         [[-0.47942555 -0.          0.        ]\n [-0.         -0.997495    0.        ]\n [-0.         -0.          0.24740396]]\n\
         [[ 0.9182168   1.1036007  -0.48963207]\n [ 0.75        6.75        0.1875    ]]\n"
    );
}

#[test]
fn jvp_and_jacfwd_go_through_while_loops_with_traced_bounds() {
    let source = r#"import jax
import jax.numpy as jnp
from jax import lax

def damped_sqrt(a):
    def keep_going(s):
        y, i = s
        return (jnp.max(jnp.abs(y * y - a)) > 1e-3) & (i < 40)

    def step(s):
        y, i = s
        return y - (y * y - a) * 0.2, i + 1

    return lax.while_loop(keep_going, step, (jnp.ones_like(a), 0))[0]

def power(x, n):
    return lax.fori_loop(0, n, lambda i, c: c * x + i, jnp.ones_like(x))

a = jnp.array([2.0, 0.5])
print(jax.jacfwd(damped_sqrt)(a), jax.jit(jax.jacfwd(damped_sqrt))(a))
xv = jnp.array([1.5, 2.0, -0.5])
print(jax.jit(jax.jacfwd(power))(xv, 4))
print(jax.jvp(lambda x: power(x, 4), (xv,), (jnp.ones(3),))[1])
"#;
    // JAX 0.10.2 prints:
    assert_eq!(
        printed(source),
        "[[0.35355422 0.        ]\n [0.         0.70212215]] [[0.35355422 0.        ]\n [0.         0.70212215]]\n\
         [[18.5  0.   0. ]\n [ 0.  38.   0. ]\n [ 0.   0.   0.5]]\n[18.5 38.   0.5]\n"
    );
    // Reverse mode through the same loops stays JAX's ValueError.
    let reverse =
        "import jax\nfrom jax import lax\nprint(jax.jit(jax.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, x)))(1.5, 3))\n";
    let a = analyze_file(&PathBuf::from("prog.py"), reverse, &NoFiles, &AnalysisConfig::default());
    let messages: Vec<String> = a.diagnostics.iter().map(|(d, _, _)| format!("{} {}", d.code.as_str(), d.message)).collect();
    assert!(messages.iter().any(|m| m.starts_with("TL190 ValueError: Reverse-mode differentiation")), "{messages:?}");
}

/// `vmap` through a `custom_jvp` and a `custom_vjp` function batches by rules, as JAX's
/// `jax.make_jaxpr(jax.vmap(f))` does (one `custom_jvp_call`/`custom_vjp_call` over the batch,
/// its call body batched): the function's own code and one marker over the batch, no `vmap`
/// equation, for `vmap` of the function, `vmap` of its `grad`, and `grad` of a vmapped loss,
/// whose derivative is the rules applied to every example (the `custom_vjp` rule's `3.0`,
/// and its cotangent of the unmapped `w` summed over the examples). `check_ir` accepts every
/// equation. Values: run/vmap_batched_custom_rules.py.
#[test]
fn vmap_through_custom_rules_binds_one_batched_marker() {
    let rules = "import jax\nimport jax.numpy as jnp\n\n@jax.custom_jvp\ndef f(x):\n    return jnp.sin(x) * x.shape[0]\n\n\
                 @f.defjvp\ndef f_jvp(p, t):\n    return f(p[0]), jnp.cos(p[0]) * t[0] * x_len(p[0])\n\n\
                 def x_len(x):\n    return x.shape[0] * 2.0\n\n\
                 @jax.custom_vjp\ndef g(x, w):\n    return jnp.tanh(x @ w)\n\n\
                 def g_fwd(x, w):\n    y = jnp.tanh(x @ w)\n    return y, (x, w, y)\n\n\
                 def g_bwd(res, ct):\n    x, w, y = res\n    d = ct * (1.0 - y**2) * 3.0\n    return w @ d, jnp.outer(x, d)\n\n\
                 g.defvjp(g_fwd, g_bwd)\n\n";
    let programs = [
        ("@jax.jit\ndef h(xs, w):\n    return jax.vmap(f)(xs), jax.vmap(g, in_axes=(0, None))(xs, w)\n", vec![
            "custom_jvp_call[name=f] a ",
            ":f32[3,2] = custom_vjp_call[name=g] a b ",
        ]),
        ("@jax.jit\ndef h(xs, w):\n    return jax.vmap(jax.grad(lambda x: jnp.sum(f(x))))(xs), jax.vmap(jax.grad(lambda x: jnp.sum(g(x, w))))(xs)\n", vec![
            "custom_jvp_call[name=f] a ",
            ":f32[3,4,2] = mul ",
        ]),
        ("@jax.jit\ndef h(xs, w):\n    return jax.grad(lambda x, w: jnp.sum(jax.vmap(f)(x)) + jnp.sum(jax.vmap(g, in_axes=(0, None))(x, w)), argnums=(0, 1))(xs, w)\n", vec![
            "custom_jvp_call[name=f] a ",
            ":f32[4,2] = reduce_sum[axes=(0,)] ",
            ":f32[3,4] = cos a\n",
        ]),
    ];
    for (body, parts) in programs {
        let jaxpr = jaxpr_of(&format!("{rules}{body}\nh(jnp.ones((3, 4)), jnp.ones((4, 2)))\n"), "h");
        assert!(!jaxpr.contains("vmap["), "{jaxpr}");
        for part in parts {
            assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
        }
    }
}

/// A `vmap` over a function whose own `vmap` keeps the per-example path (`jnp.round` of an
/// integer array to a number of decimals, a value tracelens does not compute, has no rule)
/// batches that inner `vmap` equation through its body: one `vmap` over the inner axis whose
/// body scales every outer example (the rounding sees no outer-mapped operand, `mul` has a
/// rule), the old body's const an input it does not map, the inner axis one further in
/// `out_axes`; likewise with the inner `vmap` inside a `jit`. Where both map the rounded
/// value, the outer keeps its per-example path: two nested `vmap`s. `check_ir` accepts every
/// equation. Values: run/vmap_batched_nested_vmap.py.
#[test]
fn vmap_of_a_vmap_equation_batches_its_body() {
    let scale = "import jax\nimport jax.numpy as jnp\n\n\
               def scale_each(x, vs):\n    return jax.vmap(lambda v: x * jnp.round(v, 1))(vs) * 2.0\n\n";
    let programs = [
        ("@jax.jit\ndef h(xs, vs):\n    return jax.vmap(scale_each, in_axes=(0, None))(xs, vs)\n", "jnp.ones(3, dtype=jnp.int32)", 1),
        (
            "@jax.jit\ndef h(xs, vs):\n    return jax.vmap(jax.jit(scale_each), in_axes=(0, None))(xs, vs)\n",
            "jnp.ones(3, dtype=jnp.int32)",
            1,
        ),
        ("@jax.jit\ndef h(xs, vs):\n    return jax.vmap(scale_each)(xs, vs)\n", "jnp.ones((2, 3), dtype=jnp.int32)", 2),
    ];
    for (body, vs, vmaps) in programs {
        let jaxpr = jaxpr_of(&format!("{scale}{body}\nh(jnp.ones((2, 4)), {vs})\n"), "h");
        assert_eq!(jaxpr.matches("vmap[").count(), vmaps, "{jaxpr}");
        if vmaps == 1 {
            for part in ["axis_size=3\n", "in_axes=(None, 0)\n", ":f32[2,4] = mul ", "out_axes=1\n", ":f32[2,3,4] = mul "] {
                assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
            }
        }
    }
}

/// `vmap` of `jnp.pad` by a mapped padding value is JAX's `_pad_batch_rule`: the operand
/// padded with zeros, a mask of where its elements landed, each example's value broadcast
/// and a `select_n`; no `vmap` equation is left, and `check_ir` accepts every equation.
/// Values: run/vmap_pad_by_mapped_value.py.
#[test]
fn vmap_of_pad_by_a_mapped_value_selects_each_examples_value() {
    let source = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef h(xs, vs):\n    \
                  a = jax.vmap(lambda x, v: jnp.pad(x, (1, 2), constant_values=v))(xs, vs)\n    \
                  b = jax.vmap(lambda v: jnp.pad(xs[0], 1, constant_values=v))(vs)\n    \
                  return a, b\n\nh(jnp.ones((3, 4)), jnp.arange(3.0))\n";
    let jaxpr = jaxpr_of(source, "h");
    assert!(!jaxpr.contains("vmap["), "{jaxpr}");
    for part in [":f32[3,7] = pad", ":bool[3,7] = pad", ":f32[3,7] = broadcast_in_dim", ":f32[3,7] = select_n ", ":f32[3,6] = select_n "] {
        assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
    }
}

/// A `custom_vjp` function under a `vmap` of a `vmap` is batched by rules at both levels (the
/// marker batched twice): `grad` through it applies `bwd` to every example of every example,
/// as JAX batches the rules twice, so the backward pass is batched equations (the rule's
/// `w @ d` one `dot_general` over both batch axes, the cotangent of the unmapped `w` summed
/// over both) and no `vmap` equation is left. `check_ir` accepts every equation. Values:
/// run/vmap_batched_custom_rules.py.
#[test]
fn grad_through_a_custom_vjp_batched_twice_applies_the_rules_to_every_example() {
    let source = "import jax\nimport jax.numpy as jnp\n\n@jax.custom_vjp\ndef g(x, w):\n    return jnp.tanh(x @ w)\n\n\
                  def g_fwd(x, w):\n    y = jnp.tanh(x @ w)\n    return y, (x, w, y)\n\n\
                  def g_bwd(res, ct):\n    x, w, y = res\n    d = ct * (1.0 - y**2) * 3.0\n    return w @ d, jnp.outer(x, d)\n\n\
                  g.defvjp(g_fwd, g_bwd)\nnested = jax.vmap(jax.vmap(g, in_axes=(0, None)), in_axes=(0, None))\n\n\
                  @jax.jit\ndef h(x, w):\n    return jax.grad(lambda x, w: jnp.sum(nested(x, w) ** 2), argnums=(0, 1))(x, w)\n\n\
                  h(jnp.ones((2, 3, 2)), jnp.ones((2, 3)))\n";
    let jaxpr = jaxpr_of(source, "h");
    assert!(!jaxpr.contains("vmap["), "{jaxpr}");
    for part in [":f32[2,2,3] = dot_general[dimension_numbers=(((1,), (2,)), ((), ()))] b ", ":f32[2,3] = reduce_sum[axes=(0,)] "] {
        assert!(jaxpr.contains(part), "{part} missing in {jaxpr}");
    }
}
