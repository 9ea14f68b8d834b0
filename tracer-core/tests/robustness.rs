//! Hostile input: every case finishes quickly, never panics, and says what it did not analyse.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tracer_core::diagnostics::Code;
use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig, FileAnalysis};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

/// Runs the analysis on a thread with the stack the CLI gives it, and times it by the
/// thread's CPU time where Linux reports it (wall time elsewhere): the bounds below are about
/// the work an input causes, and on a loaded machine wall time also counts the time the
/// thread waited for a core (the infinite-loop case once took over 2 s of wall time that way
/// while parallel builds ran).
fn analyse(source: &str) -> (FileAnalysis, Duration) {
    let source = source.to_string();
    let handle = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let (wall, cpu) = (Instant::now(), thread_cpu_time());
            let a = analyze_file(&PathBuf::from("hostile.py"), &source, &NoFiles, &AnalysisConfig::default());
            let took = match (cpu, thread_cpu_time()) {
                (Some(start), Some(end)) => end.saturating_sub(start),
                _ => wall.elapsed(),
            };
            (a, took)
        })
        .expect("spawn analysis thread");
    handle.join().expect("the analysis must not panic")
}

/// The first field of `/proc/thread-self/schedstat`: nanoseconds this thread ran on a CPU.
fn thread_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(text.split_whitespace().next()?.parse().ok()?))
}

fn codes(a: &FileAnalysis) -> Vec<Code> {
    a.diagnostics.iter().map(|(d, _, _)| d.code).collect()
}

#[test]
fn infinite_loop_stops_on_a_budget_and_says_so() {
    let (a, took) = analyse("import jax\nx = 0\nwhile True:\n    x += 1\n");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    let (d, loc, _) = a.diagnostics.iter().find(|(d, _, _)| d.code == Code::NotAnalysed).expect("a TL900 info diagnostic");
    assert!(d.message.contains("budget"), "{}", d.message);
    assert!(loc.line >= 3, "reported at line {}", loc.line);
}

#[test]
fn recursion_bomb_is_a_python_recursion_error() {
    let (a, took) = analyse("def f(n):\n    return f(n + 1)\n\nf(0)\n");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    let (d, _, _) = a.diagnostics.iter().find(|(d, _, _)| d.code == Code::PythonException).expect("a TL190");
    assert!(d.message.starts_with("RecursionError: maximum recursion depth exceeded"), "{}", d.message);
}

#[test]
fn huge_arrays_are_shapes_only() {
    let src = "import jax.numpy as jnp\nx = jnp.ones((10**9, 10**9))\ny = (x * 2).sum(axis=0)\nz = y.reshape(10**9, 1)\n";
    let (a, took) = analyse(src);
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(codes(&a).is_empty(), "{:?}", a.diagnostics);
}

#[test]
fn ten_thousand_lines_finish_quickly() {
    let mut src = String::from("import jax\nimport jax.numpy as jnp\n\n");
    for i in 0..2500 {
        src.push_str(&format!("def f{i}(x):\n    y = jnp.tanh(x) * {i}\n    return y.sum()\n\n"));
    }
    assert!(src.lines().count() >= 10_000);
    let (a, took) = analyse(&src);
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(codes(&a).is_empty(), "{:?}", a.diagnostics);
}

#[test]
fn binary_garbage_is_a_syntax_error_not_a_crash() {
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (a, took) = analyse(&text);
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(
        a.diagnostics.iter().all(|(d, _, _)| d.code == Code::PythonException && d.message.starts_with("SyntaxError")),
        "{:?}",
        a.diagnostics
    );
}

#[test]
fn a_syntax_error_is_reported_and_the_code_before_it_is_analysed() {
    let src = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n\nf(jnp.ones(3))\n\ndef broken(:\n    pass\n";
    let (a, _) = analyse(src);
    let lines: Vec<(Code, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code, l.line)).collect();
    assert!(lines.contains(&(Code::Concretization, 6)), "{lines:?}");
    assert!(lines.iter().any(|(c, l)| *c == Code::PythonException && *l == 12), "{lines:?}");
}

#[test]
fn deeply_nested_expressions_do_not_overflow() {
    let depth = 5_000;
    let src = format!("x = {}1{}\n", "(".repeat(depth), ")".repeat(depth));
    let (_, took) = analyse(&src);
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn self_referencing_containers_print() {
    let (a, _) = analyse("a = []\na.append(a)\nprint(a)\nd = {}\nd['d'] = d\nprint(d)\n");
    assert!(codes(&a).is_empty(), "{:?}", a.diagnostics);
}

#[test]
fn unknown_libraries_never_produce_findings() {
    let src = "import flax.linen as nn\nimport an_optimiser_library_without_a_shim as optax\nimport jax\n\nclass M(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n        return nn.Dense(4)(x)\n\nopt = optax.adam(1e-3)\nstate = opt.init(None)\nif state.count > 3:\n    raise ValueError('never known')\nfor p in state:\n    print(p.shape[7])\n";
    let (a, _) = analyse(src);
    assert!(codes(&a).is_empty(), "{:?}", a.diagnostics);
}

#[test]
fn recursion_as_deep_as_cpython_allows_is_fine() {
    let (a, took) = analyse("def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n\nassert depth(900) == 900\n");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(codes(&a).is_empty(), "{:?}", a.diagnostics);
}

#[test]
fn long_lazy_chains_do_not_exhaust_the_stack() {
    let src = "import jax.numpy as jnp\nx = jnp.zeros(3)\nfor i in range(20000):\n    x = x + 1.0\nif x[0] > 5:\n    print('big')\n";
    let (a, took) = analyse(src);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(a.diagnostics.iter().all(|(d, _, _)| d.code == Code::NotAnalysed), "{:?}", a.diagnostics);
}

#[test]
fn generators_raise_only_where_the_consumer_gets_to() {
    let src = "import itertools\n\ndef numbers():\n    yield 1\n    yield 2\n    raise ValueError('too far')\n\nfor x in itertools.islice(numbers(), 2):\n    print(x)\n\ndef forever(lr):\n    while True:\n        yield lr\n        lr = lr * 0.5\n\nsched = forever(1.0)\nprint(next(sched), next(sched))\n";
    let (a, took) = analyse(src);
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(codes(&a).is_empty(), "{:?}", a.diagnostics);
    let (a, _) = analyse("def g():\n    yield 1\n    raise ValueError('boom')\n\nfor x in g():\n    pass\n");
    let lines: Vec<(Code, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code, l.line)).collect();
    assert_eq!(lines, vec![(Code::PythonException, 3)]);
}

/// Large inputs: each is analysed or stopped by the parse budget with a TL900, never slow and
/// silent. The times are printed for the record (`--nocapture`), not asserted: a busy machine
/// stretches them.
#[test]
fn a_million_element_list_literal_is_stopped_by_the_parse_budget() {
    let src = format!("import jax.numpy as jnp\nx = [{}]\nprint(jnp.asarray(x).shape)\n", "0, ".repeat(1_000_000));
    let (a, took) = analyse(&src);
    eprintln!("1,000,000-element list literal: {took:?}");
    let found: Vec<(Code, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code, l.line)).collect();
    assert_eq!(found, vec![(Code::NotAnalysed, 1)], "{:?}", a.diagnostics);
    assert!(a.diagnostics[0].0.message.contains("parse budget"), "{}", a.diagnostics[0].0.message);
}

#[test]
fn a_hundred_thousand_line_file_is_analysed_or_stopped_by_a_budget() {
    let mut src = String::from("import jax.numpy as jnp\n");
    for i in 0..100_000 {
        src.push_str(&format!("x{} = {i} + 1\n", i % 100));
    }
    src.push_str("y = jnp.ones(3) @ jnp.ones(4)\n");
    let (a, took) = analyse(&src);
    eprintln!("100,000-line file: {took:?}");
    assert_analysed_or_stopped(&a, 100_002);
}

#[test]
fn a_ten_megabyte_file_is_analysed_or_stopped_by_a_budget() {
    let line = format!("y = \"{}\"\n", "a".repeat(1000));
    let src = format!("import jax.numpy as jnp\n{}z = jnp.ones(3) @ jnp.ones(4)\n", line.repeat(10_000));
    assert!(src.len() > 10_000_000);
    let (a, took) = analyse(&src);
    eprintln!("10 MB file: {took:?}");
    assert_analysed_or_stopped(&a, 10_002);
}

/// Either the shape error on the file's last line (`last`) is found, or a budget stopped the
/// analysis and a TL900 says where: which one depends on how busy the machine is (the time
/// budget counts parsing), never on luck in what is reported.
fn assert_analysed_or_stopped(a: &FileAnalysis, last: u32) {
    let found: Vec<(Code, u32)> = a.diagnostics.iter().map(|(d, l, _)| (d.code, l.line)).collect();
    let stopped = !found.is_empty() && found.iter().all(|(code, _)| *code == Code::NotAnalysed);
    assert!(found == vec![(Code::ShapeMismatch, last)] || stopped, "{:?}", a.diagnostics);
}

/// Fuzz crash (seed 1, batch 30s): a reproducer of a file with a 100,000-element list took
/// its minimiser 10 s, 168 engine runs of a few hundred ms each. The search has a time
/// budget: when it is spent the smallest program found so far is written, and its header
/// says so. (A budget of zero stops it after the run that checks the unreduced program, so
/// the test does not depend on the machine's speed.)
#[test]
fn a_reproducer_search_stops_on_its_time_budget_and_says_so() {
    let src = format!(
        "import jax\nimport functools\n\n@functools.partial(jax.jit, static_argnums=1)\ndef step(w, config):\n    h = [{}]\n    return w\n\nconfig = {{\"lr\": 0.1}}\nfor i in range(3):\n    w = step(1.0, config)\n",
        "0, ".repeat(100_000)
    );
    let (a, _) = analyse(&src);
    let reproducer = a.reproducers.iter().find(|r| r.line == 11).expect("a reproducer of the unhashable static argument");
    let config = tracer_core::repro::minimise::MinimiseConfig { max_time: Duration::ZERO, ..Default::default() };
    let text = reproducer.minimised(&config).expect("the unreduced program reproduces");
    let header = text.lines().find(|l| l.starts_with("# minimised:")).expect("a minimised header");
    assert!(header.contains("stopped at its budget"), "{header}");
    assert!(header.contains("(1 tracelens runs"), "only the check of the unreduced program ran: {header}");
}
