//! Values of derivatives (`jax/ad.rs`) against central finite differences in f64: each case
//! is a small program run through `analyze_file` that prints the gradient tracelens computes
//! and, next to it, `(f(x + h e_i) - f(x - h e_i)) / 2h` computed from the forward kernels.
//! Both must agree, and must be known (a missing rule prints `<unknown>` and fails).

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

fn stdout(body: &str) -> String {
    let source = format!("import jax\nimport jax.numpy as jnp\nfrom jax import lax\njax.config.update(\"jax_enable_x64\", True)\n{body}");
    // Every primitive bound, derivatives included, is checked against its rule (`jax/prims/`).
    let config = AnalysisConfig { check_ir: true, ..AnalysisConfig::default() };
    let a = analyze_file(&PathBuf::from("ad.py"), &source, &NoFiles, &config);
    assert!(a.ir_problems.is_empty(), "{body}\n{}", a.ir_problems.join("\n"));
    a.stdout
}

/// Prints `grad g_i` and `fd g_i` lines for `f(x, y) = sum(expr)` with respect to both
/// arguments, at the given points.
fn program(expr: &str, x: &[f64], y: &[f64]) -> String {
    let list = |v: &[f64]| v.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ");
    format!(
        r#"
def f(x, y):
    return jnp.sum({expr})

xs = [{x}]
ys = [{y}]
x = jnp.array(xs, dtype=jnp.float64)
y = jnp.array(ys, dtype=jnp.float64)
gx, gy = jax.grad(f, argnums=(0, 1))(x, y)
h = 1e-6
for i in range(len(xs)):
    up = list(xs)
    down = list(xs)
    up[i] += h
    down[i] -= h
    fd = (f(jnp.array(up), y) - f(jnp.array(down), y)) / (2 * h)
    print("x", i, float(gx[i]), float(fd))
for i in range(len(ys)):
    up = list(ys)
    down = list(ys)
    up[i] += h
    down[i] -= h
    fd = (f(x, jnp.array(up)) - f(x, jnp.array(down))) / (2 * h)
    print("y", i, float(gy[i]), float(fd))
"#,
        x = list(x),
        y = list(y)
    )
}

/// Checks every printed pair; returns the number of pairs.
fn check_pairs(what: &str, out: &str) -> usize {
    let mut n = 0;
    for line in out.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(parts.len(), 4, "{what}: unexpected output line {line:?} in\n{out}");
        let (ad, fd): (f64, f64) = match (parts[2].parse(), parts[3].parse()) {
            (Ok(a), Ok(b)) => (a, b),
            _ => panic!("{what}: a value is not known: {line:?}"),
        };
        let tol = 1e-5 * (1.0 + fd.abs());
        assert!((ad - fd).abs() <= tol, "{what}: d/d{}[{}] is {ad} by AD but {fd} by finite differences", parts[0], parts[1]);
        n += 1;
    }
    n
}

/// Each `(name, expr)`: both gradients of `sum(expr)` agree with finite differences.
fn check_cases(cases: &[(&str, &str)]) {
    for (name, expr) in cases {
        let out = stdout(&program(expr, &X, &Y));
        assert_eq!(check_pairs(name, &out), 8, "{name}: {out}");
    }
}

const X: [f64; 4] = [0.31, -0.72, 1.13, 0.58];
const Y: [f64; 4] = [1.41, 0.27, -0.93, 0.66];

#[test]
fn elementwise_rules_match_finite_differences() {
    let cases = [
        ("add", "x + y"),
        ("sub", "x - 2.0 * y"),
        ("mul", "x * y"),
        ("div", "x / (y + 3.0)"),
        ("neg", "-x * y"),
        ("exp", "jnp.exp(x) * y"),
        ("log", "jnp.log(x * x + 1.0) * y"),
        ("log1p", "jnp.log1p(x * x) + y"),
        ("expm1", "jnp.expm1(x) * y"),
        ("tanh", "jnp.tanh(x * y)"),
        ("logistic", "jax.nn.sigmoid(x - y)"),
        ("sin", "jnp.sin(x) * jnp.cos(y)"),
        ("tan", "jnp.tan(x) + y"),
        ("sinh/cosh", "jnp.sinh(x) * jnp.cosh(y)"),
        ("arcsin/arccos", "jnp.arcsin(x / 2.0) + jnp.arccos(y / 2.0)"),
        ("arctan", "jnp.arctan(x) * y"),
        ("arctan2", "jnp.arctan2(x, y)"),
        ("sqrt", "jnp.sqrt(x * x + y * y)"),
        ("rsqrt", "lax.rsqrt(x * x + 1.0) * y"),
        ("cbrt", "jnp.cbrt(x * x + 1.0) * y"),
        ("pow", "jnp.power(x * x + 1.0, y)"),
        ("integer_pow", "x ** 3 * y ** 2"),
        ("square", "jnp.square(x) * y"),
        ("maximum", "jnp.maximum(x, y) * x"),
        ("minimum", "jnp.minimum(x, y) * y"),
        ("relu", "jax.nn.relu(x) * y"),
        ("abs", "jnp.abs(x) * y"),
        ("where", "jnp.where(x > 0.5, x * y, y * y)"),
        ("sign", "jnp.sign(x) * x * y"),
        ("clip", "jnp.clip(x, -0.5, 0.5) * y"),
        ("remainder", "jnp.remainder(x + 3.0, y + 2.0)"),
    ];
    check_cases(&cases);
}

#[test]
fn structural_rules_match_finite_differences() {
    let cases = [
        ("dot", "jnp.dot(x.reshape(2, 2), y.reshape(2, 2)) ** 2"),
        ("matmul vector", "(x.reshape(2, 2) @ y[:2]) * y[2:]"),
        ("outer broadcast", "jnp.tanh(x[:, None] * y[None, :])"),
        ("reduce_max", "jnp.max(x * y) + jnp.min(x - y)"),
        ("reduce_max axis", "jnp.max((x * y).reshape(2, 2), axis=1) * y[:2]"),
        ("mean", "jnp.mean(x * y) * jnp.mean(x)"),
        ("transpose", "x.reshape(2, 2).T * y.reshape(2, 2)"),
        ("squeeze/expand_dims", "jnp.squeeze(jnp.expand_dims(x, 0), 0) * y"),
        ("concatenate", "jnp.concatenate([x * y, x[:2] ** 2]) * 0.5"),
        ("slice", "x[1:3] * y[0:2] + x[::2] * y[1::2]"),
        ("index", "x[0] * y[3] + x[2] * x[2]"),
        ("cumsum", "jnp.cumsum(x) * y"),
        ("log_softmax by hand", "x - jnp.max(x) - jnp.log(jnp.sum(jnp.exp(x - jnp.max(x)))) * y"),
        ("jit inside grad", "jax.jit(lambda a, b: jnp.sin(a) * b)(x, y)"),
        ("checkpoint", "jax.checkpoint(lambda a, b: jnp.exp(a) * b)(x, y)"),
        ("sum of squares", "jnp.sum(x ** 2) * jnp.linalg.norm(y)"),
        ("dynamic_slice", "lax.dynamic_slice(x * y, (1,), (2,)) * y[:2]"),
        ("dynamic_slice clamped", "lax.dynamic_slice_in_dim(x, 3, 2) * jnp.exp(y[2:])"),
        ("dynamic_update_slice", "lax.dynamic_update_slice(x, y[1:3] ** 2, (3,)) * y"),
    ];
    check_cases(&cases);
}

/// Prints `a b` pairs that must agree: a derivative by a transformation and by finite
/// differences.
fn pairs(body: &str) -> String {
    stdout(body)
}

/// Python printing `jacfwd`/`jacrev` of `f: R^3 -> R^3` at `x` beside central finite
/// differences, one line per element; defines `e(i)`, `x` and `h` for what follows.
fn jacobians_of_f(x: &str) -> String {
    format!(
        r#"
def e(i):
    return jnp.array([1.0 if j == i else 0.0 for j in range(3)])

x = jnp.array({x})
h = 1e-6
jf = jax.jacfwd(f)(x)
jr = jax.jacrev(f)(x)
for j in range(3):
    fd = (f(x + h * e(j)) - f(x - h * e(j))) / (2 * h)
    for i in range(3):
        print("jacfwd", i, float(jf[i, j]), float(fd[i]))
        print("jacrev", i, float(jr[i, j]), float(fd[i]))
"#
    )
}

#[test]
fn jacobians_hessian_jvp_and_vjp_match_finite_differences() {
    let f = "def f(v):\n    return jnp.stack([jnp.sin(v[0]) * v[1], v[0] ** 2 + jnp.exp(v[1]), v[0] * v[1] * v[2]])";
    let out = pairs(&format!(
        "{f}\n{}{}",
        jacobians_of_f("[0.4, -0.3, 1.2]"),
        r#"
def energy(v):
    return jnp.sum(v ** 3) + v[0] * v[1] * v[2] + jnp.sum(jnp.sin(v))

H = jax.hessian(energy)(x)
g = jax.grad(energy)
for j in range(3):
    fd = (g(x + h * e(j)) - g(x - h * e(j))) / (2 * h)
    for i in range(3):
        print("hessian", i, float(H[i, j]), float(fd[i]))

t = jnp.array([0.5, -1.0, 2.0])
y, ty = jax.jvp(f, (x,), (t,))
fd = (f(x + h * t) - f(x - h * t)) / (2 * h)
for i in range(3):
    print("jvp", i, float(ty[i]), float(fd[i]))

y, pull = jax.vjp(f, x)
(ct,) = pull(t)
for j in range(3):
    fd = jnp.sum(t * (f(x + h * e(j)) - f(x - h * e(j))) / (2 * h))
    print("vjp", j, float(ct[j]), float(fd))
"#
    ));
    assert_eq!(check_pairs("jacobians", &out), 9 * 2 + 9 + 3 + 3, "{out}");
}

#[test]
fn grad_respects_pytrees_has_aux_and_value() {
    let out = pairs(
        r#"
def loss(params, x):
    h = jnp.tanh(x @ params["w"] + params["b"])
    pred = h @ params["layers"][0]
    return jnp.mean(pred ** 2), pred

params = {"w": jnp.array([[0.3, -0.2], [0.1, 0.5]]), "b": jnp.array([0.05, -0.1]), "layers": [jnp.array([1.5, -0.5])]}
x = jnp.array([[1.0, 2.0], [-1.0, 0.5], [0.3, 0.3]])
(value, pred), grads = jax.value_and_grad(loss, has_aux=True)(params, x)
print("value", 0, float(value), float(loss(params, x)[0]))
print("aux", 0, float(pred[1]), float(loss(params, x)[1][1]))
h = 1e-6
w = params["w"]
for i in range(2):
    for j in range(2):
        bump = jnp.array([[h if (a, b) == (i, j) else 0.0 for b in range(2)] for a in range(2)])
        up = dict(params, w=w + bump)
        down = dict(params, w=w - bump)
        fd = (loss(up, x)[0] - loss(down, x)[0]) / (2 * h)
        print("w", i, float(grads["w"][i, j]), float(fd))
bump = jnp.array([h, 0.0])
fd = (loss(dict(params, layers=[params["layers"][0] + bump]), x)[0] - loss(dict(params, layers=[params["layers"][0] - bump]), x)[0]) / (2 * h)
print("layers", 0, float(grads["layers"][0][0]), float(fd))
"#,
    );
    assert_eq!(check_pairs("pytrees", &out), 7, "{out}");
}

#[test]
fn derivatives_through_unmodelled_code_stay_unknown() {
    // A custom_vjp defines its own derivative (here: clipping): the rule's value, never the
    // derivative of the primal code. A custom function whose code reads a differentiated
    // value it is not given (JAX raises UnexpectedTracerError) has no derivative to guess.
    let out = stdout(
        r#"
@jax.custom_vjp
def clip_gradient(x):
    return x

def fwd(x):
    return x, None

def bwd(_, g):
    return (jnp.clip(g, -0.1, 0.1),)

clip_gradient.defvjp(fwd, bwd)
print(jax.grad(lambda x: jnp.sum(clip_gradient(x) * 3.0))(jnp.array([1.0, 2.0])))

def closes_over(w, x):
    @jax.custom_jvp
    def f(y):
        return y * w
    f.defjvp(lambda p, t: (f(p[0]), t[0] * 100.0))
    return f(x)

print(jax.grad(closes_over)(2.0, 3.0))
print(jax.grad(lambda x: jnp.sum(lax.stop_gradient(x) * x * 3.0))(jnp.array([1.0, 2.0])))
print(repr(jax.grad(lambda x: jnp.sum(x.astype(jnp.float32) * 2.0))(jnp.array([1.0, 2.0]))))
"#,
    );
    assert_eq!(out, "[0.1 0.1]\n<unknown>\n[3. 6.]\nArray([2., 2.], dtype=float64)\n");
}

#[test]
fn custom_jvp_rules_that_cannot_be_transposed_still_push_tangents_forward() {
    // A rule whose tangent output is not linear in the tangents: JAX's jvp applies it (as
    // here), its grad fails to transpose it (NotImplementedError), so reverse mode stays
    // unknown. A custom function without a rule raises JAX's AttributeError when called.
    let out = stdout(
        r#"
@jax.custom_jvp
def sq(x):
    return x ** 2

@sq.defjvp
def sq_jvp(p, t):
    return sq(p[0]), jnp.sin(t[0]) * p[0]

x = jnp.array([1.0, 2.0])
print(jax.jvp(sq, (x,), (x,))[1])
print(jax.grad(lambda x: jnp.sum(sq(x)))(x))
print(jax.jit(sq)(x), sq(x))

@jax.custom_jvp
def norule(x):
    return x

try:
    norule(x)
except AttributeError as e:
    print("AttributeError:", e)
"#,
    );
    assert_eq!(
        out,
        "[0.84147098 1.81859485]\n<unknown>\n[1. 4.] [1. 4.]\nAttributeError: No JVP defined for custom_jvp function norule using defjvp.\n"
    );
}

#[test]
fn values_the_model_cannot_follow_are_never_taken_for_constants() {
    // Under real JAX the first prints [2. 0. 6.]; tracelens does not model boolean masks, so it
    // must not differentiate as if they were constants. The scan is differentiated through
    // its unrolled body, as JAX 0.10.2 does: [1.25 1.5 ].
    let out = stdout(
        r#"
def masked(x):
    return jnp.sum(x[x > 0.0] ** 2)

def compound(x):
    c, _ = lax.scan(lambda c, xi: (c + xi * c, None), 1.0, x)
    return c

print(jax.grad(masked)(jnp.array([1.0, -2.0, 3.0])))
print(jax.grad(compound)(jnp.array([0.5, 0.25])))
print(jax.grad(lambda x: jnp.sum(x ** 2))(jnp.array([1.0, -2.0, 3.0])))
"#,
    );
    assert_eq!(out, "<unknown>\n[1.25 1.5 ]\n[ 2. -4.  6.]\n");
}

#[test]
fn reverse_mode_through_while_loop_is_jaxs_error_only_when_it_matters() {
    let source = r#"import jax
import jax.numpy as jnp
from jax import lax

def doubling(x):
    return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)

def unused(x):
    y = lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)
    return x * 3.0

print(jax.grad(unused)(1.0))
print(jax.grad(doubling)(1.0))
"#;
    let a = analyze_file(&PathBuf::from("loop.py"), source, &NoFiles, &AnalysisConfig::default());
    assert_eq!(a.stdout, "3.0\n");
    let errors: Vec<_> = a.diagnostics.iter().map(|(d, loc, _)| (d.code.as_str(), loc.line, d.message.clone())).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "TL190");
    assert_eq!(errors[0].1, 13);
    assert!(errors[0].2.starts_with("ValueError: Reverse-mode differentiation does not work for lax.while_loop"), "{errors:?}");
}

#[test]
fn indexing_scatter_and_sort_rules_match_finite_differences() {
    let cases = [
        ("gather", "x[jnp.array([3, 0, 0, 2])] * y"),
        ("gather 2-d", "x.reshape(2, 2)[jnp.array([1, 0, 1]), jnp.array([0, 1, 1])] * y[:3]"),
        ("gather int and array", "x.reshape(2, 2)[1, jnp.array([1, 0, 0])] * y[1:]"),
        ("gather clip", "x.at[jnp.array([5, -1, -9, 1])].get(mode='clip') * y"),
        ("take", "jnp.take(x, jnp.array([2, 2, 1]), axis=0) * y[1:]"),
        ("negative step", "x[::-1] * y + jnp.sum(x[2::-2]) * y"),
        ("scatter-add", "jnp.zeros(3).at[jnp.array([0, 2, 0, 1])].add(x * y) * jnp.array([1.0, 2.0, 3.0])"),
        ("scatter-add onto x", "x.at[jnp.array([1, 3, 1, -2])].add(y * y) * x"),
        ("scatter-add drops", "x.at[jnp.array([1, 7, -8])].add(2.0) * y"),
        ("scatter-add slice", "x.at[1:3].add(y[2:] ** 2) * y"),
        ("scatter set slice", "x.at[1:3].set(y[:2] * 3.0) * y"),
        ("scatter set int", "x.at[2].set(y[0] * y[1]) * y"),
        ("scatter set array", "x.at[jnp.array([0, 2])].set(5.0) * y"),
        ("sort", "jnp.sort(x * y) * jnp.array([1.0, 2.0, 3.0, 4.0])"),
    ];
    check_cases(&cases);
}

#[test]
fn forward_and_reverse_indexing_rules_agree_with_finite_differences() {
    // (Keys 0.4, 0.6, 0.75: no ties for `sort`, where the derivative jumps.)
    let f = r#"
def f(v):
    s = jnp.sort(v * jnp.array([1.0, -2.0, 0.5]))
    picked = v[jnp.array([2, 0, 2])]
    added = jnp.zeros(3).at[jnp.array([1, 1, 0])].add(v * v)
    return s + picked + added + v.at[0].set(v[1] * 2.0)
"#;
    let out = pairs(&format!("{f}{}", jacobians_of_f("[0.4, -0.3, 1.5]")));
    assert_eq!(check_pairs("indexing jacobians", &out), 18, "{out}");
}

#[test]
fn linear_algebra_rules_match_finite_differences() {
    let cases = [
        ("solve", "jnp.linalg.solve(x.reshape(2, 2) + 3.0 * jnp.eye(2), y[:2]) * y[2:]"),
        ("solve matrix", "jnp.linalg.solve(jnp.outer(x, y) + 2.0 * jnp.eye(4), jnp.stack([x, y], axis=1)) ** 2"),
        ("inv", "jnp.linalg.inv(x.reshape(2, 2) + 3.0 * jnp.eye(2)) * y.reshape(2, 2)"),
        ("det", "jnp.linalg.det(jnp.outer(x, y) + 2.0 * jnp.eye(4) + x.reshape(4, 1) * 0.5)"),
        ("slogdet", "jnp.linalg.slogdet(jnp.outer(x, y) - 2.0 * jnp.eye(4))[1]"),
        ("cholesky", "jnp.linalg.cholesky(jnp.outer(x, x) + jnp.outer(y, y) + jnp.eye(4)) * jnp.arange(16.0).reshape(4, 4)"),
        ("scipy cholesky", "jax.scipy.linalg.cholesky(jnp.outer(x, x) + jnp.outer(y, y) + jnp.eye(4)) * jnp.arange(16.0).reshape(4, 4)"),
    ];
    check_cases(&cases);
}

/// 24 points for the batched products below (`(2, 3, 4)`, `(2, 4, 3)`, `(1, 2, 3, 4)`).
fn points(seed: f64) -> Vec<f64> {
    (0..24).map(|i| ((i as f64 + seed) * 0.7).sin() * 0.9).collect()
}

#[test]
fn batched_products_match_finite_differences() {
    // Each case: both gradients of `sum(expr)` for x and y of 24 elements.
    let cases = [
        ("matmul 3-D", "jnp.sin(x.reshape(2, 3, 4) @ y.reshape(2, 4, 3))"),
        ("matmul 2-D with 3-D", "(x.reshape(6, 4)[:3] @ y.reshape(2, 4, 3)) ** 2"),
        ("matmul broadcast size 1", "jnp.tanh(x.reshape(2, 3, 4)[:1] @ y.reshape(2, 4, 3))"),
        ("matmul 3-D with vector", "(x.reshape(2, 3, 4) @ y[:4]) ** 2"),
        ("einsum batch", "jnp.einsum('bij,bjk->bik', x.reshape(2, 3, 4), y.reshape(2, 4, 3)) ** 2"),
        ("einsum outer batch", "jnp.cos(jnp.einsum('bij,cjk->bcik', x.reshape(2, 3, 4), y.reshape(2, 4, 3)))"),
        ("einsum scores", "jnp.einsum('bhqd,bhkd->bhqk', x.reshape(1, 2, 3, 4), y.reshape(1, 2, 3, 4)) ** 2"),
        (
            "einsum attention",
            "jnp.einsum('bhqk,bhkd->bhqd', jax.nn.softmax(jnp.einsum('bhqd,bhkd->bhqk', x.reshape(1, 2, 3, 4), y.reshape(1, 2, 3, 4)) / 2.0, axis=-1), x.reshape(1, 2, 3, 4) * y.reshape(1, 2, 3, 4)) ** 2",
        ),
        ("einsum heads in the middle", "jnp.einsum('bqhd,bkhd->bhqk', x.reshape(1, 3, 2, 4), y.reshape(1, 3, 2, 4)) ** 2"),
        ("einsum ellipsis", "jnp.sin(jnp.einsum('...qd,...kd->...qk', x.reshape(2, 3, 4), y.reshape(2, 3, 4)))"),
        ("einsum batch only", "jnp.einsum('ij,ij->j', x.reshape(6, 4), y.reshape(6, 4)) ** 2"),
        ("einsum diagonal", "jnp.einsum('iij->ij', x.reshape(2, 3, 4)[:, :2, :2] * y.reshape(2, 2, 6)[:, :, :2]) ** 3"),
        ("einsum sums a label", "jnp.einsum('ij,jk->k', x.reshape(6, 4), y.reshape(4, 6)) ** 2"),
        ("tensordot", "jnp.tensordot(x.reshape(2, 3, 4), y.reshape(2, 4, 3), axes=([2, 0], [1, 0])) ** 2"),
        ("dot_general batch not leading", "jnp.sin(lax.dot_general(x.reshape(4, 3, 2), y.reshape(2, 4, 3), (((0,), (1,)), ((2,), (0,)))))"),
    ];
    let (x, y) = (points(0.0), points(0.5));
    for (name, expr) in cases {
        let out = stdout(&program(expr, &x, &y));
        assert_eq!(check_pairs(name, &out), 48, "{name}: {out}");
    }
}

#[test]
fn convolution_rules_match_finite_differences() {
    // x and y of 24 elements: an image and a kernel in each layout, with strides, the three
    // kinds of padding, dilations and groups (the transposes are convolutions themselves).
    let cases = [
        ("conv valid", "jnp.sin(lax.conv(x.reshape(1, 2, 4, 3), y.reshape(2, 2, 3, 2), (1, 1), 'VALID'))"),
        ("conv same strided", "lax.conv(x.reshape(2, 1, 4, 3), y.reshape(3, 1, 2, 4)[:, :, :, :2], (2, 1), 'SAME') ** 2"),
        (
            "conv nhwc dilated",
            "jnp.tanh(lax.conv_general_dilated(x.reshape(1, 4, 3, 2), y.reshape(2, 2, 2, 3), (1, 2), [(1, 0), (2, -1)], lhs_dilation=(2, 1), rhs_dilation=(1, 2), dimension_numbers=('NHWC', 'HWIO', 'NHWC')))",
        ),
        (
            "conv feature groups",
            "lax.conv_general_dilated(x.reshape(1, 4, 6), y.reshape(4, 2, 3), (1,), 'SAME', feature_group_count=2) ** 2",
        ),
        (
            "conv batch groups",
            "jnp.cos(lax.conv_general_dilated(x.reshape(4, 1, 6), y.reshape(4, 1, 6)[:, :, :3], (1,), 'VALID', batch_group_count=2))",
        ),
    ];
    let (x, y) = (points(0.0), points(0.5));
    for (name, expr) in cases {
        let out = stdout(&program(expr, &x, &y));
        assert_eq!(check_pairs(name, &out), 48, "{name}: {out}");
    }
}

#[test]
fn scatter_mul_min_max_rules_match_finite_differences() {
    // No ties at these points (the derivative jumps there; ties are checked against JAX's
    // values in the op table).
    let cases = [
        ("scatter-max", "x.at[jnp.array([0, 2, 0])].max(y[:3]) * y"),
        ("scatter-min", "x.at[jnp.array([1, 3, 1])].min(y[1:] * 2.0) * y"),
        ("scatter-mul slice", "x.at[1:3].multiply(y[:2]) * y"),
        ("scatter-mul int", "x.at[3].multiply(y[0] * y[1]) * x"),
    ];
    check_cases(&cases);
    // With an index array JAX differentiates scatter-mul with respect to the operand only
    // (the updates' derivative raises NotImplementedError without unique_indices=True).
    let out = stdout(
        r#"
x = jnp.array([1.0, 2.0, 3.0, 4.0])
u = jnp.array([5.0, -1.0, 7.0])
idx = jnp.array([0, 2, 0])
print(jax.grad(lambda x: jnp.sum(x.at[idx].multiply(u) ** 2))(x))
print(jax.grad(lambda u: jnp.sum(x.at[idx].multiply(u, unique_indices=True) ** 2))(u))
print(jax.jvp(lambda u: x.at[idx].multiply(u, unique_indices=True), (u,), (u * 2,))[1])
try:
    jax.grad(lambda u: jnp.sum(x.at[idx].multiply(u) ** 2))(u)
except NotImplementedError as e:
    print(e)
"#,
    );
    // JAX 0.10.2's values, and its error without unique_indices=True.
    assert_eq!(
        out,
        "[2450.    4.    6.    8.]\n[ 70. -18.  70.]\n[24.  0. -6.  0.]\nscatter_mul gradients are only implemented if `unique_indices=True`\n"
    );
}

#[test]
fn relu_and_relu6_passed_directly_use_their_custom_jvp_rules() {
    // jax.nn.relu and relu6 are custom_jvp functions whose derivative is 0 at the kinks;
    // passed to jvp/grad/jacfwd as the function itself, not called in a lambda (JAX 0.10.2's
    // values).
    let out = stdout(
        r#"
x = jnp.array([-1.0, -0.0, 0.0, 2.0, 6.0, 7.0, jnp.nan])
t = jnp.array([1.0, -1.0, -2.0, 3.0, -1.5, 2.0, 1.0])
print(jax.jvp(jax.nn.relu, (x,), (t,))[1])
print(jax.jvp(jax.nn.relu6, (x,), (t,))[1])
print(jax.grad(jax.nn.relu)(0.0), jax.grad(jax.nn.relu6)(0.0), jax.grad(jax.nn.relu6)(6.0))
print(jax.jacfwd(jax.nn.relu6)(x[:5]))
"#,
    );
    assert_eq!(out, "[ 0.   0.   0.   3.  -1.5  2.   0. ]\n[0. 0. 0. 3. 0. 0. 0.]\n0.0 0.0 0.0\n[[0. 0. 0. 0. 0.]\n [0. 0. 0. 0. 0.]\n [0. 0. 0. 0. 0.]\n [0. 0. 0. 1. 0.]\n [0. 0. 0. 0. 0.]]\n");
}

#[test]
fn lgamma_derivative_is_digamma_and_matches_finite_differences() {
    let cases = [("gammaln", "jax.scipy.special.gammaln(x * x + 0.5) * y + lax.lgamma(y + 2.0)")];
    check_cases(&cases);
}

// JAX 0.10.2: `qr(mode="raw")` returns `geqrf`'s factors transposed, `(3, 4)` and `(3,)` here,
// and has no derivative (NotImplementedError); LAPACK has no float16 routines, so `inv` of a
// float16 matrix raises at lowering.
#[test]
fn qr_raw_has_no_derivative_and_16_bit_lapack_raises() {
    let source = r#"import jax
import jax.numpy as jnp

a = jnp.cos(jnp.arange(12.0).reshape(4, 3) * 0.8) + jnp.eye(4, 3)
h, tau = jnp.linalg.qr(a, mode="raw")
print(h.shape, tau.shape)
print(jax.grad(lambda a: jnp.sum(jnp.linalg.qr(a, mode="raw")[1]))(a))
"#;
    let a = analyze_file(&PathBuf::from("raw.py"), source, &NoFiles, &AnalysisConfig::default());
    assert_eq!(a.stdout, "(3, 4) (3,)\n");
    let messages: Vec<String> = a.diagnostics.iter().map(|(d, _, _)| d.message.clone()).collect();
    assert!(messages.iter().any(|m| m.contains("NotImplementedError: Differentiation rule for 'geqrf' not implemented")), "{messages:?}");
    let source = r#"import jax.numpy as jnp

print(jnp.linalg.inv(jnp.eye(3, dtype=jnp.float16)))
"#;
    let a = analyze_file(&PathBuf::from("half.py"), source, &NoFiles, &AnalysisConfig::default());
    assert_eq!(a.stdout, "");
    let messages: Vec<String> = a.diagnostics.iter().map(|(d, _, _)| d.message.clone()).collect();
    let expected = "NotImplementedError: (KeyError(<class 'numpy.float16'>), 'Unsupported dtype float16.')";
    assert!(messages.iter().any(|m| m.contains(expected)), "{messages:?}");
}

// `reduce_prod`, `cumprod`, `cummax` and `cummin` are differentiated through the compositions
// JAX's rules differentiate (`ad_compositions.rs`); away from zeros and ties these are the
// derivatives of the functions themselves. (X, Y have no ties and no zeros.)
#[test]
fn product_and_cumulative_rules_match_finite_differences() {
    let cases = [
        ("prod", "jnp.prod(x * y) + jnp.prod(x[:3]) * y"),
        ("prod axis", "jnp.prod((x + y).reshape(2, 2), axis=0) * jnp.prod((x * y).reshape(2, 2), axis=1)"),
        ("cumprod", "jnp.cumprod(x + y) * jnp.array([1.0, -2.0, 0.5, 3.0])"),
        ("cumprod reverse", "lax.cumprod(x * y, reverse=True) * x"),
        ("cumprod 2-d", "lax.cumprod((x - y).reshape(2, 2), axis=1) * y.reshape(2, 2)"),
        ("cummax", "lax.cummax(x * y) * jnp.array([1.0, 2.0, 3.0, 4.0])"),
        ("cummin reverse", "lax.cummin(x - y, reverse=True) * x"),
        ("erf_inv", "jax.scipy.special.erfinv(x * 0.5) * y + lax.erf_inv(y * 0.25)"),
        ("top_k", "jnp.sum(lax.top_k(x * y, 3)[0] * jnp.array([1.0, -2.0, 3.0])) + lax.top_k((x - y).reshape(2, 2), 1)[0][:, 0]"),
    ];
    check_cases(&cases);
}

// JAX 0.10.2 has no derivative for `nextafter` and raises when it linearizes, so also where
// the result does not reach the output; a `stop_gradient` input has no tangent and is fine.
#[test]
fn nextafter_has_no_derivative_as_in_jax() {
    let source = r#"import jax
import jax.numpy as jnp
from jax import lax

x = jnp.array([1.0, 2.0, 3.0])
print(jax.grad(lambda v: jnp.sum(jnp.nextafter(lax.stop_gradient(v), 5.0)) + jnp.sum(v))(x))

def unused(v):
    w = jnp.nextafter(v, 5.0)
    return jnp.sum(v)

print(jax.grad(unused)(x))
"#;
    let a = analyze_file(&PathBuf::from("nextafter.py"), source, &NoFiles, &AnalysisConfig::default());
    assert_eq!(a.stdout, "[1. 1. 1.]\n");
    let messages: Vec<String> = a.diagnostics.iter().map(|(d, _, _)| d.message.clone()).collect();
    assert!(
        messages.iter().any(|m| m.contains("NotImplementedError: Differentiation rule for 'nextafter' not implemented")),
        "{messages:?}"
    );
}
