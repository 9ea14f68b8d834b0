//! `tracelens run` and `check --values` from the command line: what the program prints (the
//! expected texts are what `python` with JAX 0.10.2 prints for the same programs), exit
//! statuses, tracebacks, values over the budget, and TL301.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-run-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn run_in(dir: &Path, name: &str, text: &str, args: &[&str]) -> Output {
    std::fs::write(dir.join(name), text).expect("write program");
    Command::new(env!("CARGO_BIN_EXE_tracelens")).current_dir(dir).args(args).arg(name).output().expect("run tracelens")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const TRAINING: &str = "import jax
import jax.numpy as jnp

@jax.jit
def step(w, x):
    return w - 0.1 * (x @ w - 1.0) @ x

w = jnp.zeros(2)
x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
for i in range(3):
    w = step(w, x)
print(w)
print(repr(w), {\"n\": 3, \"t\": (1.5, None)})
print(jnp.arange(2000).reshape(40, 50))
print(jnp.arange(1001))
";

#[test]
fn run_prints_what_python_prints() {
    let dir = temp_dir("print");
    let out = run_in(&dir, "train.py", TRAINING, &["run"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "[1.1840001 1.7760001]
Array([1.1840001, 1.7760001], dtype=float32) {'n': 3, 't': (1.5, None)}
[[   0    1    2 ...   47   48   49]
 [  50   51   52 ...   97   98   99]
 [ 100  101  102 ...  147  148  149]
 ...
 [1850 1851 1852 ... 1897 1898 1899]
 [1900 1901 1902 ... 1947 1948 1949]
 [1950 1951 1952 ... 1997 1998 1999]]
[   0    1    2 ...  998  999 1000]
"
    );
    assert_eq!(text(&out.stderr), "", "nothing to say about a run that computed everything");
}

#[test]
fn run_scan_and_vmap_values() {
    let dir = temp_dir("scan");
    let program = "import jax
import jax.numpy as jnp

final, ys = jax.lax.scan(lambda c, x: (c + x, c * x), 1.0, jnp.arange(4.0))
print(final, ys)
print(jax.vmap(lambda a, b: jnp.dot(a, b))(jnp.ones((3, 2)), jnp.arange(6.0).reshape(3, 2)))
print(jax.lax.fori_loop(0, 5, lambda i, c: c * 2 + i, 1))
";
    let out = run_in(&dir, "loops.py", program, &["run"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "7.0 [ 0.  1.  4. 12.]\n[1. 5. 9.]\n58\n");
}

#[test]
fn uncaught_exception_prints_a_python_traceback_and_exits_1() {
    let dir = temp_dir("traceback");
    let program = "import jax.numpy as jnp

def normalise(v):
    total = float(jnp.sum(v))
    if total == 0.0:
        raise ValueError(f\"cannot normalise a zero vector of shape {v.shape}\")
    return v / total

print(normalise(jnp.array([1.0, 3.0])))
print(normalise(jnp.zeros(3)))
";
    let out = run_in(&dir, "norm.py", program, &["run"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "[0.25 0.75]\n");
    let path = std::path::absolute(dir.join("norm.py")).expect("absolute");
    assert_eq!(
        text(&out.stderr),
        format!(
            "Traceback (most recent call last):
  File \"{p}\", line 10, in <module>
    print(normalise(jnp.zeros(3)))
  File \"{p}\", line 6, in normalise
    raise ValueError(f\"cannot normalise a zero vector of shape {{v.shape}}\")
ValueError: cannot normalise a zero vector of shape (3,)
",
            p = path.display()
        )
    );
}

#[test]
fn an_array_over_the_element_budget_is_reported_not_allocated() {
    let dir = temp_dir("budget");
    let program = "import jax.numpy as jnp\nbig = jnp.ones((10**6, 10**6))\nprint(big.shape)\nprint(big + 1)\nprint('done')\n";
    let started = Instant::now();
    let out = run_in(&dir, "big.py", program, &["run"]);
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "(1000000, 1000000)\n<not computed: f32[1000000,1000000]>\ndone\n");
    assert!(
        text(&out.stderr).contains("big.py:4: the value of f32[1000000,1000000] is not computed (1000000000000 elements, over the budget of 4000000 elements per array)"),
        "{}",
        text(&out.stderr)
    );
    let smaller = Command::new(env!("CARGO_BIN_EXE_tracelens"))
        .current_dir(&dir)
        .args(["run", "--max-elements", "10", "big.py"])
        .output()
        .expect("run");
    assert!(text(&smaller.stderr).contains("over the budget of 10 elements per array"), "{}", text(&smaller.stderr));
}

#[test]
fn a_random_draw_too_costly_for_the_work_budget_is_not_computed() {
    // 840 samples over 65,536 classes: 55 million Gumbel draws, seconds in one kernel that
    // cannot be stopped halfway (fuzz seed 34). Its shape is known; its values are not computed.
    let dir = temp_dir("draws");
    let program = "import jax\nimport jax.numpy as jnp\nactions = jax.random.categorical(jax.random.key(3), jnp.zeros(65536), shape=(840,))\nprint(actions.shape)\nprint(actions[0])\nsmall = jax.random.categorical(jax.random.key(3), jnp.zeros(4), shape=(2,))\nprint(small.shape, small.dtype)\n";
    let out = run_in(&dir, "draws.py", program, &["run"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "(840,)\n<not computed: i32[]>\n(2,) int32\n");
}

#[test]
fn control_flow_on_a_value_tracelens_cannot_compute_stops_with_status_3() {
    let dir = temp_dir("stop");
    let program = "import mystery\nprint('before')\nif mystery.flag():\n    print('yes')\n";
    let out = run_in(&dir, "stop.py", program, &["run"]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "before\n");
    assert!(text(&out.stderr).starts_with("tracelens: stopped at stop.py:3: "), "{}", text(&out.stderr));
}

/// Gradient descent that diverges: the loss overflows at i = 20, then the weights turn NaN.
const DIVERGING: &str = include_str!("../../tests/fixtures/run/diverging_training.py");

#[test]
fn the_first_nan_or_inf_is_reported_at_its_operation() {
    let dir = temp_dir("nan");
    let out = run_in(&dir, "diverge.py", DIVERGING, &["run", "--color", "never"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.ends_with("20 inf\n30 nan\n40 nan\n50 nan\n60 nan\n70 nan\nfinal [nan nan] nan\n"), "{stdout}");
    let err = text(&out.stderr);
    assert!(err.contains("warning[TL301]: FloatingPointError: invalid value (inf) encountered in mul"), "{err}");
    assert!(err.contains("--> diverge.py:13:21"), "{err}");
    // JAX's values there are -6.4176484e+29 and -1.7996659e+29 (XLA fuses `w - lr * grad`
    // into one rounding; tracelens rounds the product, then the difference).
    assert!(err.contains("input 0: f32[3] min -6.417645e+29 max -1.799665e+29, 0 NaN, 0 Inf"), "{err}");
    assert!(err.contains("in jit(step) called at diverge.py:20, the 21st iteration of the loop at diverge.py:19"), "{err}");
    assert!(err.contains("diverge.py:22:9: the value is printed here"), "{err}");

    let json = run_in(&dir, "diverge.py", DIVERGING, &["check", "--values", "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "a warning only");
    let diags: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let d = &diags.as_array().expect("array")[0];
    assert_eq!((d["code"].as_str(), d["name"].as_str(), d["severity"].as_str()), (Some("TL301"), Some("nan-inf"), Some("warning")));
    assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(13), Some(21)));
    let related: Vec<&str> = d["related"].as_array().expect("related").iter().filter_map(|r| r["message"].as_str()).collect();
    assert_eq!(related, ["the value is printed here"]);

    let plain = run_in(&dir, "diverge.py", DIVERGING, &["check", "--format", "json"]);
    assert_eq!(text(&plain.stdout).trim(), "[]", "values are only computed with --values");
}

#[test]
fn a_nan_thrown_away_by_where_is_not_reported() {
    let dir = temp_dir("where");
    let program = "import jax.numpy as jnp\nx = jnp.array([-1.0, 0.0, 4.0])\nprint(jnp.where(x > 0, jnp.log(x), 0.0))\n";
    let out = run_in(&dir, "safe.py", program, &["run"]);
    assert_eq!(text(&out.stdout), "[0.        0.        1.3862944]\n");
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn jax_debug_nans_raises_at_the_operation_as_jax_does() {
    let dir = temp_dir("debug-nans");
    let program = "import jax
import jax.numpy as jnp

jax.config.update(\"jax_debug_nans\", True)


@jax.jit
def log_softmax(logits):
    exp = jnp.exp(logits)
    return jnp.log(exp / jnp.sum(exp))


print(log_softmax(jnp.array([100.0, 1.0, -2.0])))
";
    let out = run_in(&dir, "example.py", program, &["run", "--color", "never"]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("line 13, in <module>\n    print(log_softmax(jnp.array([100.0, 1.0, -2.0])))\n"), "{err}");
    assert!(err.contains("line 10, in log_softmax\n    return jnp.log(exp / jnp.sum(exp))\n"), "{err}");
    assert!(err.ends_with("FloatingPointError: invalid value (nan) encountered in div\n"), "{err}");
}

#[test]
fn what_the_program_writes_to_stderr_stays_on_stderr() {
    // As `python FILE` splits them: print(file=sys.stderr) and sys.stderr.write go to
    // stderr, ahead of tracelens' own notes; a print to an open file goes to neither.
    let dir = temp_dir("stderr");
    let program = "import sys\nprint('out')\nprint('err', 1, file=sys.stderr)\nn = sys.stderr.write('w\\n')\nsys.stdout.write(f'wrote {n}\\n')\nwith open('log.txt', 'w') as f:\n    print('to the file', file=f)\nprint('end', flush=True)\n";
    let out = run_in(&dir, "streams.py", program, &["run"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "out\nwrote 2\nend\n");
    assert!(text(&out.stderr).starts_with("err 1\nw\n"), "stderr: {}", text(&out.stderr));
    assert!(!dir.join("log.txt").exists(), "tracelens never runs the program's file writes");
}
