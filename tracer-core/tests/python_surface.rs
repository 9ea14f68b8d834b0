//! CPython 3.11's builtins and the attributes of every modelled standard-library module,
//! named, called with arguments CPython accepts, and subclassed: none of them may raise an
//! error of tracelens' making (issue 18, point 4). The rows and their probes come from
//! `tests/conformance/gen_python_surface.py`, which ran each probe under CPython.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::stdlib;
use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

fn findings(source: &str) -> Vec<String> {
    let a = analyze_file(&PathBuf::from("surface.py"), source, &NoFiles, &AnalysisConfig::default());
    a.diagnostics.iter().map(|(d, l, _)| format!("{}:{} {}", d.code.as_str(), l.line, d.message)).collect()
}

/// The program a row's probe runs in: `import owner`, then the probe's statements.
fn program(row: &stdlib::Row) -> String {
    let import = if row.owner == "builtins" { String::new() } else { format!("import {}\n", row.owner) };
    let reference = if row.owner == "builtins" { row.name.to_string() } else { format!("{}.{}", row.owner, row.name) };
    let body = if row.probe.is_empty() { format!("_x = {reference}") } else { row.probe.replace("; ", "\n").replace("\\n", "\n") };
    format!("{import}{body}\n")
}

#[test]
fn every_builtin_and_modelled_module_attribute_is_silent() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for row in stdlib::rows().filter(|r| r.kind != "typeattr") {
        let source = program(&row);
        let found = findings(&source);
        if !found.is_empty() {
            failures.push(format!("{}.{}:\n{source}  -> {found:?}", row.owner, row.name));
        }
        checked += 1;
    }
    assert!(checked > 1000, "the table has {checked} rows");
    assert!(failures.is_empty(), "{} of {checked} rows raised:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn attributes_of_builtin_types_that_python_has_are_unknown_not_missing() {
    let source = "n = int.from_bytes(b'\\x00\\x01', 'big')\nclass P:\n    \"\"\"doc\"\"\"\n    @property\n    def v(self):\n        return 1\n    @v.setter\n    def v(self, value):\n        pass\nd = P.__doc__\nm = P.__module__\nb = bytearray(3)\nu = int | None\n";
    assert_eq!(findings(source), Vec::<String>::new());
}

/// What CPython does not have is still Python's error.
#[test]
fn names_cpython_does_not_have_are_still_errors() {
    assert_eq!(findings("x = no_such_builtin\n"), vec!["TL190:1 NameError: name 'no_such_builtin' is not defined"]);
    assert_eq!(
        findings("import math\nx = math.no_such_function\n"),
        vec!["TL190:2 AttributeError: module 'math' has no attribute 'no_such_function'"]
    );
    assert_eq!(
        findings("import os\nx = os.no_such_function\n"),
        vec!["TL190:2 AttributeError: module 'os' has no attribute 'no_such_function'"]
    );
    assert_eq!(
        findings("class P:\n    pass\nP.no_such_attribute\n"),
        vec!["TL190:3 AttributeError: type object 'P' has no attribute 'no_such_attribute'"]
    );
}

#[test]
fn the_standard_library_that_steers_programs_has_cpython_311s_values() {
    let source = "import sys\nimport logging\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import no_such_module_at_run_time\nassert sys.version_info >= (3, 8) and sys.version_info.major == 3\nassert sys.platform == 'linux'\nassert logging.INFO == 20\nlogger = logging.getLogger(__name__)\nlogger.info('ready %d', 1)\nlogger.setLevel(logging.DEBUG)\nprint(sys.version_info[:2])\n";
    let a = analyze_file(&PathBuf::from("surface.py"), source, &NoFiles, &AnalysisConfig::default());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.stdout, "(3, 11)\n");
}

#[test]
fn user_iterators_enums_and_three_argument_type_run() {
    let source = "import enum\nclass Countdown:\n    def __init__(self, n):\n        self.n = n\n    def __iter__(self):\n        return self\n    def __next__(self):\n        if self.n == 0:\n            raise StopIteration\n        self.n -= 1\n        return self.n\nprint(list(Countdown(3)), next(Countdown(5)))\nclass Color(enum.Enum):\n    RED = 1\n    GREEN = 2\nprint(len([c for c in Color]))\nT = type('T', (object,), {'a': 7})\nprint(T().a, T.__name__)\n";
    let a = analyze_file(&PathBuf::from("surface.py"), source, &NoFiles, &AnalysisConfig::default());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.stdout, "[2, 1, 0] 4\n2\n7 T\n");
}

#[test]
fn logging_inside_a_jitted_function_is_a_trace_time_effect() {
    let source = "import logging\nimport jax\nimport jax.numpy as jnp\nlog = logging.getLogger(__name__)\n@jax.jit\ndef f(x):\n    log.info('tracing f')\n    logging.warning('also at trace time')\n    return x + 1\nf(jnp.ones(3))\n";
    let codes: Vec<String> = findings(source).into_iter().map(|f| f.split(' ').next().unwrap_or("").to_string()).collect();
    assert_eq!(codes, vec!["TL201:7", "TL201:8"]);
}

/// A module's own dunders: `__doc__` is its docstring (None without one), as CPython sets it
/// before the first statement runs (`argparse.ArgumentParser(description=__doc__)`).
#[test]
fn a_module_has_its_docstring_as_dunder_doc() {
    let a =
        analyze_file(&PathBuf::from("surface.py"), "\"\"\"Trains.\"\"\"\nprint(__doc__, __name__)\n", &NoFiles, &AnalysisConfig::default());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.stdout, "Trains. __main__\n");
    let a = analyze_file(&PathBuf::from("surface.py"), "x = 1\nprint(__doc__)\n", &NoFiles, &AnalysisConfig::default());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.stdout, "None\n");
}

/// `str % array` is `str.__mod__` first, as in CPython: a concrete 0-d array logs through
/// int()/float() with no finding (JAX allows it); under `jit`, `%d` of a tracer is CPython's
/// TypeError and `%.4f` is JAX's ConcretizationTypeError, at the user's line.
#[test]
fn percent_formatting_a_concrete_array_is_silent_and_a_tracer_raises() {
    let source = "import jax\nimport jax.numpy as jnp\nprint('%d %.2f %x' % (jnp.array(3), jnp.array(3.5), jnp.array(255)))\n@jax.jit\ndef f(x):\n    print('step %d' % x)\n    return x\nf(jnp.array(3))\n";
    let a = analyze_file(&PathBuf::from("surface.py"), source, &NoFiles, &AnalysisConfig::default());
    assert_eq!(a.stdout.lines().next(), Some("3 3.50 ff"));
    let found = findings(source);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("TL190:6 ") && found[0].contains("%d format: a real number is required, not DynamicJaxprTracer"),
        "{found:?}"
    );
    let found = findings(&source.replace("'step %d'", "'loss %.4f'"));
    assert!(found.len() == 1 && found[0].contains(":6 ") && found[0].contains("ConcretizationTypeError"), "{found:?}");
}

/// `'%.4f' % accuracy` where the accuracy is a Python number tracelens does not know (a count
/// over a file's lines): CPython formats it; tracelens prints nothing for it, never a
/// TypeError.
#[test]
fn percent_formatting_an_unknown_number_is_silent() {
    let source = "import json\n\ndef accuracy(path):\n    preds = []\n    for line in open(path):\n        preds.append(json.loads(line))\n    hits = 0\n    for p in preds:\n        if p['label'] == p['pred']:\n            hits += 1\n    return hits * 1.0 / len(preds)\n\nacc = accuracy('preds.jsonl')\nprint('accuracy = %.4f' % acc)\nprint('hits = %d' % (acc * 10))\n";
    let found = findings(source);
    assert!(found.is_empty(), "{found:?}");
}
