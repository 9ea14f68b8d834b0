//! Real entry points: `absl.app.run(main)` with flags at their defaults, unittest/absltest
//! TestCase methods between `setUp` and `tearDown`, pytest functions with fixtures from
//! `conftest.py`, parametrised cases; `test_*` helpers of a non-test module are not tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::diagnostics::{Code, Severity};
use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig, FileAnalysis};

struct Files(HashMap<PathBuf, &'static str>);

impl SourceLoader for Files {
    fn read(&self, path: &Path) -> Option<Rc<str>> {
        self.0.get(path).map(|t| Rc::from(*t))
    }
}

/// Analyses `path` (one of `files`) with `/ws` as the workspace root.
fn analyse_in(files: &[(&str, &'static str)], path: &str) -> FileAnalysis {
    let files = Files(files.iter().map(|(p, t)| (PathBuf::from(p), *t)).collect());
    let text = files.0[Path::new(path)];
    let config = AnalysisConfig { search_roots: vec![PathBuf::from("/ws")], ..Default::default() };
    analyze_file(Path::new(path), text, &files, &config)
}

fn analyse(path: &str, source: &'static str) -> FileAnalysis {
    analyse_in(&[(path, source)], path)
}

/// The errors (not the warnings) with their lines.
fn errors(a: &FileAnalysis) -> Vec<(Code, u32)> {
    a.diagnostics.iter().filter(|(d, _, _)| d.severity == Severity::Error).map(|(d, l, _)| (d.code, l.line)).collect()
}

/// The argument avals of each trace of `name`, in order.
fn trace_args(a: &FileAnalysis, name: &str) -> Vec<Vec<String>> {
    a.functions.iter().filter(|f| f.name == name).flat_map(|f| f.traces.iter()).map(|t| t.args.clone()).collect()
}

const ABSL_MAIN: &str = r#"import jax
import jax.numpy as jnp
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch_size", 8, "Batch size.")
flags.DEFINE_float("learning_rate", 1, "Learning rate.")
flags.DEFINE_list("layers", "16,4", "Layer sizes.")


@jax.jit
def step(x, lr):
    return x * lr


def main(argv):
    print(argv)
    x = jnp.ones((FLAGS.batch_size, len(FLAGS.layers)))
    step(x, FLAGS.learning_rate)


if __name__ == "__main__":
    app.run(main)
"#;

#[test]
fn absl_app_run_calls_main_with_argv_and_flags_at_their_defaults() {
    let a = analyse("/ws/train.py", ABSL_MAIN);
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.stdout, "['/ws/train.py']\n");
    assert_eq!(trace_args(&a, "step"), vec![vec!["f32[8,2]".to_string(), "~f32[]".to_string()]]);
}

#[test]
fn a_flag_read_before_app_run_parses_the_flags_is_unknown_not_an_error() {
    let a = analyse(
        "/ws/train.py",
        "from absl import flags\nFLAGS = flags.FLAGS\nflags.DEFINE_integer('n', 3, '')\nsteps = FLAGS.n + 1\nprint(steps)\n",
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert!(!a.stdout.contains('4'), "absl raises UnparsedFlagAccessError there; the value is unknown: {}", a.stdout);
}

#[test]
fn a_config_file_flag_is_an_unknown_config() {
    let a = analyse(
        "/ws/main.py",
        "from absl import app\nfrom ml_collections import config_flags\n_CONFIG = config_flags.DEFINE_config_file('config')\n\ndef main(argv):\n    config = _CONFIG.value\n    if config.batch_size > 8:\n        print('big')\n    print('done')\n\napp.run(main)\n",
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
}

const TESTCASE: &str = r#"import jax
import jax.numpy as jnp
from absl.testing import absltest
from absl.testing import parameterized


@jax.jit
def gram(x):
    return x @ x


class GramTest(parameterized.TestCase):

    def setUp(self):
        super().setUp()
        self.x = jnp.ones((3, 4))

    def test_shape(self):
        self.assertEqual(gram(self.x).shape, (3, 3))

    @parameterized.parameters((2,), (5,))
    def test_square(self, n):
        y = gram(jnp.ones((n, n)))
        self.assertAllClose(y, n * jnp.ones((n, n)))

    @parameterized.named_parameters(("small", 1), dict(testcase_name="large", n=6))
    def test_named(self, n):
        gram(jnp.ones((n, n)))

    def test_raises(self):
        with self.assertRaises(TypeError):
            gram(self.x)


if __name__ == "__main__":
    absltest.main()
"#;

#[test]
fn testcase_methods_run_on_a_fresh_instance_after_set_up_once_per_case() {
    let a = analyse("/ws/gram_test.py", TESTCASE);
    assert_eq!(errors(&a), vec![(Code::ShapeMismatch, 9)], "{:?}", a.diagnostics);
    let mut shapes: Vec<String> = trace_args(&a, "gram").into_iter().flatten().collect();
    shapes.sort();
    shapes.dedup();
    assert_eq!(shapes, vec!["f32[1,1]", "f32[2,2]", "f32[3,4]", "f32[5,5]", "f32[6,6]"]);
}

#[test]
fn an_error_the_test_expects_with_assert_raises_is_not_a_finding() {
    let a = analyse(
        "/ws/gram_test.py",
        "import jax\nimport jax.numpy as jnp\nimport unittest\n\n@jax.jit\ndef gram(x):\n    return x @ x\n\nclass T(unittest.TestCase):\n    def test_raises(self):\n        with self.assertRaisesRegex(TypeError, 'dot_general'):\n            gram(jnp.ones((3, 4)))\n        self.assertTrue(True)\n\nunittest.main()\n",
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(trace_args(&a, "gram").len(), 1);
}

/// rlax's transform pairs: absl unpacks a case that is a named tuple (or a list) into the
/// test's positional arguments, as it does a plain tuple.
const NAMED_TUPLE_CASES: &str = r#"import collections

import jax
import jax.numpy as jnp
from absl.testing import absltest
from absl.testing import parameterized

TxPair = collections.namedtuple("TxPair", ["apply", "apply_inv"])
IDENTITY_PAIR = TxPair(lambda x: x, lambda x: x)
SIGNED_LOGP1_PAIR = TxPair(
    lambda x: jnp.sign(x) * jnp.log1p(jnp.abs(x)),
    lambda x: jnp.sign(x) * jnp.expm1(jnp.abs(x)),
)


@jax.jit
def scale(x):
    return x * 2.0


class PairTest(parameterized.TestCase):

    @parameterized.parameters(IDENTITY_PAIR, SIGNED_LOGP1_PAIR)
    def test_identity(self, tx, inv_tx):
        x = jnp.ones((2, 3))
        self.assertEqual(tx(inv_tx(scale(x))).shape, (2, 3))

    @parameterized.parameters([4, 5], [6, 7])
    def test_lists(self, n, m):
        scale(jnp.ones((n, m)))

    @parameterized.parameters(IDENTITY_PAIR)
    def test_one_pair(self, tx, inv_tx):
        scale(inv_tx(tx(jnp.ones(8))))


if __name__ == "__main__":
    absltest.main()
"#;

#[test]
fn absl_parameters_unpack_named_tuples_and_lists_into_arguments() {
    let a = analyse("/ws/pair_test.py", NAMED_TUPLE_CASES);
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let mut shapes: Vec<String> = trace_args(&a, "scale").into_iter().flatten().collect();
    shapes.sort();
    shapes.dedup();
    assert_eq!(shapes, vec!["f32[2,3]", "f32[4,5]", "f32[6,7]", "f32[8]"]);
}

const CONFTEST: &str = r#"import jax.numpy as jnp
import pytest


@pytest.fixture
def batch():
    return jnp.ones((4, 3))


@pytest.fixture(scope="module")
def params(batch):
    yield {"w": jnp.ones((batch.shape[1], 2))}
"#;

const PYTEST_FILE: &str = r#"import jax
import jax.numpy as jnp
import pytest


@jax.jit
def apply(params, x):
    return x @ params["w"]


def test_apply(params, batch):
    out = apply(params, batch)
    assert out.shape == (4, 2)


@pytest.mark.parametrize("n", [1, pytest.param(5, id="five")])
def test_widths(n, tmp_path):
    apply({"w": jnp.ones((3, n))}, jnp.ones((4, 3)))


@pytest.mark.parametrize("rows,cols", [(2, 3), (2, 4)])
def test_mismatch(rows, cols):
    apply({"w": jnp.ones((3, 1))}, jnp.ones((rows, cols)))
"#;

#[test]
fn pytest_functions_get_fixtures_from_conftest_and_run_each_case() {
    let a = analyse_in(&[("/ws/conftest.py", CONFTEST), ("/ws/tests/test_model.py", PYTEST_FILE)], "/ws/tests/test_model.py");
    // (2, 4) against w of 3 rows: the second case of test_mismatch.
    assert_eq!(errors(&a), vec![(Code::ShapeMismatch, 8)], "{:?}", a.diagnostics);
    let traces = trace_args(&a, "apply");
    assert_eq!(
        traces,
        vec![
            vec!["f32[3,2]".to_string(), "f32[4,3]".to_string()],
            vec!["f32[3,1]".to_string(), "f32[4,3]".to_string()],
            vec!["f32[3,5]".to_string(), "f32[4,3]".to_string()],
            vec!["f32[3,1]".to_string(), "f32[2,3]".to_string()],
            vec!["f32[3,1]".to_string(), "f32[2,4]".to_string()],
        ]
    );
}

/// `@pytest.fixture(params=...)`: each test using the fixture runs once per value, read as
/// `request.param`; a module-scoped one is built once per value, not once per test.
#[test]
fn a_parametrised_fixture_runs_each_test_once_per_value() {
    let a = analyse(
        "/ws/test_params.py",
        r#"import jax
import jax.numpy as jnp
import pytest


@jax.jit
def halves(v):
    return v.reshape(2, -1)


@pytest.fixture(params=[4, pytest.param(3, id="odd")])
def width(request):
    return request.param


@pytest.fixture(scope="module", params=[2, 6])
def rows(request):
    return jnp.ones((request.param, 8))


def test_halves(width):
    halves(jnp.ones(width))


def test_rows(rows, width):
    halves(rows)
"#,
    );
    assert_eq!(errors(&a), vec![(Code::ShapeMismatch, 8)], "{:?}", a.diagnostics);
    let traces = trace_args(&a, "halves");
    assert_eq!(traces, vec![vec!["f32[4]"], vec!["f32[3]"], vec!["f32[2,8]"], vec!["f32[6,8]"]]);
}

#[test]
fn a_test_whose_fixture_is_unknown_runs_with_an_unknown_argument() {
    let a = analyse(
        "/ws/test_io.py",
        "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    return x + 1\n\ndef test_f(some_plugin_fixture):\n    f(jnp.ones(3))\n    some_plugin_fixture.check()\n",
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(trace_args(&a, "f"), vec![vec!["f32[3]".to_string()]]);
}

#[test]
fn test_helpers_of_a_module_that_is_not_a_test_module_are_not_tests() {
    const SOURCE: &str = "def test_ratio():\n    return 1 / 0\n";
    assert!(analyse("/ws/helpers.py", SOURCE).diagnostics.is_empty());
    assert_eq!(errors(&analyse("/ws/test_helpers.py", SOURCE)), vec![(Code::PythonException, 2)]);
    assert_eq!(errors(&analyse("/ws/helpers_test.py", SOURCE)), vec![(Code::PythonException, 2)]);
}

#[test]
fn a_skipped_test_does_not_run() {
    let a = analyse(
        "/ws/test_skip.py",
        "import pytest\nimport unittest\n\n@pytest.mark.skip(reason='broken')\ndef test_a():\n    return 1 / 0\n\nclass T(unittest.TestCase):\n    @unittest.skip('later')\n    def test_b(self):\n        return 1 / 0\n\n    @unittest.expectedFailure\n    def test_c(self):\n        return 1 / 0\n",
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
}

#[test]
fn a_main_called_under_dunder_main_runs() {
    let a = analyse(
        "/ws/run.py",
        "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    return x.sum()\n\ndef main():\n    f(jnp.ones((2, 3)))\n\nif __name__ == '__main__':\n    main()\n",
    );
    assert_eq!(trace_args(&a, "f"), vec![vec!["f32[2,3]".to_string()]]);
}

/// `argparse` in a `main()` run from `__main__`: every option at its default, as `python
/// run.py` with no arguments; a positional or required one, or a string default that
/// `type=` converts, is unknown (no finding from it).
#[test]
fn argparse_options_hold_their_defaults_when_main_parses_no_arguments() {
    let a = analyse(
        "/ws/run.py",
        r#"import argparse
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    return x.sum()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--width", type=int, default="3")
    group = parser.add_argument_group("model")
    group.add_argument("--depth", dest="layers", type=int, default=2)
    parser.add_argument("--fast", action="store_true")
    args = parser.parse_args()
    if not args.fast:
        f(jnp.ones((args.batch_size, args.layers)))
    f(jnp.ones(args.width))
    jnp.ones(len(args.data))


if __name__ == "__main__":
    main()
"#,
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(trace_args(&a, "f")[0], vec!["f32[8,2]".to_string()]);
}

/// Two tests calling one jitted function with different shapes: JAX's cache holds both traces
/// (two traces), but no retrace is reported; the same two calls inside one test are TL210.
#[test]
fn shapes_that_differ_between_tests_are_no_retrace_but_within_one_test_they_are() {
    let a = analyse(
        "/ws/gae_test.py",
        r#"import unittest
import jax
import jax.numpy as jnp


@jax.jit
def advantages(rewards, values):
    return rewards + 0.99 * values[1:] - values[:-1]


class GaeTest(unittest.TestCase):
    def test_random_shapes(self):
        self.assertEqual(advantages(jnp.ones((100, 10)), jnp.ones((101, 10))).shape, (100, 10))

    def test_hand_computed(self):
        advantages(jnp.ones((3, 2)), jnp.ones((4, 2)))

    def test_two_sizes(self):
        advantages(jnp.ones((5, 2)), jnp.ones((6, 2)))
        advantages(jnp.ones((7, 2)), jnp.ones((8, 2)))
"#,
    );
    assert_eq!(trace_args(&a, "advantages").len(), 4, "{:?}", a.functions);
    let retraces: Vec<u32> = a.diagnostics.iter().filter(|(d, _, _)| d.code == Code::Retrace).map(|(_, l, _)| l.line).collect();
    assert_eq!(retraces, vec![20], "{:?}", a.diagnostics);
    assert!(a.diagnostics[0].0.message.contains("f32[5,2] -> f32[7,2]"), "{}", a.diagnostics[0].0.message);
}

/// `pytest.param(..., marks=pytest.mark.xfail)` / `skip`: pytest does not run the case as a
/// passing test, so an error in it is not a finding; the other cases run (checked under
/// pytest 9.0.1: one passes, one fails at line 8, the xfail and skip cases do not count).
const MARKED_CASES: &str = r#"import jax
import jax.numpy as jnp
import pytest


@jax.jit
def halves(v):
    return v.reshape(2, -1)


@pytest.mark.parametrize("n", [4, pytest.param(3, marks=pytest.mark.xfail), pytest.param(5, marks=[pytest.mark.skip(reason="odd")]), 7])
def test_halves(n):
    halves(jnp.ones(n))


@pytest.fixture(params=[6, pytest.param(9, marks=pytest.mark.xfail(strict=True))])
def width(request):
    return request.param


def test_width(width):
    halves(jnp.ones(width))
"#;

#[test]
fn pytest_param_cases_marked_skip_or_xfail_do_not_run() {
    let a = analyse("/ws/test_marked.py", MARKED_CASES);
    assert_eq!(errors(&a), vec![(Code::ShapeMismatch, 8)], "{:?}", a.diagnostics);
    let traces = trace_args(&a, "halves");
    assert_eq!(traces, vec![vec!["f32[4]"], vec!["f32[7]"], vec!["f32[6]"]]);
}

/// A flag's default is an assumed value: it lets the analysis reach `main`, but the user's
/// own check of a required flag (`assert FLAGS.x`, `if not FLAGS.x: raise`) fails only when
/// the command line leaves it so, which tracelens cannot know: not a finding. A JAX error
/// that holds on that path still is, and so is a user's raise that no flag decides.
#[test]
fn a_users_check_of_a_required_flag_is_not_a_finding() {
    let a = analyse(
        "/ws/launcher.py",
        r#"from absl import app, flags
import jax
import jax.numpy as jnp

FLAGS = flags.FLAGS
flags.DEFINE_string("input_config_file", "", "Path to the input config.")
flags.DEFINE_string("mode", "train", "train or eval")
flags.DEFINE_string("train_file_pattern", None, "Glob of the training files.")
flags.DEFINE_string("output_path", "", "Where to write.")


@jax.jit
def step(x):
    return x.sum() > 0


def load_config():
    assert FLAGS.input_config_file, "input_config_file cannot be empty."
    return FLAGS.input_config_file


def main(_):
    if FLAGS.mode in ("train", "train_and_eval"):
        if FLAGS.train_file_pattern is None:
            raise RuntimeError("Must specify --train_file_pattern for train.")
    if not FLAGS.output_path:
        raise ValueError("output_path cannot be empty.")
    load_config()
    if step(jnp.ones(3)):
        print("positive")


if __name__ == "__main__":
    app.run(main)
"#,
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(trace_args(&a, "step").len(), 1, "main goes on past the flag checks");
    let jax_error = analyse(
        "/ws/launcher.py",
        "from absl import app, flags\nimport jax\nimport jax.numpy as jnp\nFLAGS = flags.FLAGS\nflags.DEFINE_string('mode', 'train', '')\n\n@jax.jit\ndef step(x):\n    if x.sum() > 0:\n        return x\n    return -x\n\ndef main(_):\n    if FLAGS.mode == 'train':\n        step(jnp.ones(3))\n\napp.run(main)\n",
    );
    assert_eq!(errors(&jax_error), vec![(Code::Concretization, 9)]);
    let not_a_flag = analyse(
        "/ws/launcher.py",
        "from absl import app, flags\nFLAGS = flags.FLAGS\nflags.DEFINE_string('mode', 'train', '')\n\ndef main(_):\n    modes = {'train': 1}\n    if 'eval' not in modes:\n        raise ValueError('no eval mode')\n\napp.run(main)\n",
    );
    assert_eq!(errors(&not_a_flag), vec![(Code::PythonException, 8)]);
}

#[test]
fn a_users_check_of_an_argparse_option_is_not_a_finding() {
    let a = analyse(
        "/ws/run.py",
        "import argparse\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--data-dir', default='')\n    args = parser.parse_args()\n    if not args.data_dir:\n        raise ValueError('--data-dir is required')\n    assert args.data_dir.endswith('/'), 'a folder'\n\nif __name__ == '__main__':\n    main()\n",
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
}

/// A flag defined with no default (`None`) is one the command line gives: unknown, so using
/// it as a list is not absl's `None` failing.
#[test]
fn a_flag_without_a_default_is_unknown() {
    let a = analyse(
        "/ws/launcher.py",
        "from absl import app, flags\nFLAGS = flags.FLAGS\nflags.DEFINE_list('hidden_layer_dims', None, 'Hidden layer sizes.')\n\ndef main(_):\n    dims = [int(x) for x in FLAGS.hidden_layer_dims]\n    print(len(dims))\n\napp.run(main)\n",
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
}

/// A flag or option whose default is empty (`""`, `None`) is one the command line gives: a
/// check of a copy of it made earlier (`path = FLAGS.x` ... `assert path`) is not a finding
/// either, while a flag with a real default still decides the program.
#[test]
fn a_check_of_a_copied_empty_flag_is_not_a_finding() {
    let absl = analyse(
        "/ws/launcher.py",
        "from absl import app, flags\nFLAGS = flags.FLAGS\nflags.DEFINE_string('output_dir', '', 'Where to write.')\nflags.DEFINE_list('layers', [], 'Sizes.')\n\ndef main(_):\n    path = FLAGS.output_dir\n    sizes = FLAGS.layers\n    print('writing')\n    assert path, 'output_dir cannot be empty'\n    if not sizes:\n        raise ValueError('no layers')\n\napp.run(main)\n",
    );
    assert!(absl.diagnostics.is_empty(), "{:?}", absl.diagnostics);
    let argparse = analyse(
        "/ws/run.py",
        "import argparse\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--data-dir', default='')\n    parser.add_argument('--resume')\n    args = parser.parse_args()\n    data, resume = args.data_dir, args.resume\n    print('start')\n    if not data:\n        raise ValueError('--data-dir is required')\n    assert resume is None or resume.endswith('.ckpt')\n\nif __name__ == '__main__':\n    main()\n",
    );
    assert!(argparse.diagnostics.is_empty(), "{:?}", argparse.diagnostics);
    let real_default = analyse(
        "/ws/launcher.py",
        "from absl import app, flags\nFLAGS = flags.FLAGS\nflags.DEFINE_integer('steps', 3, '')\n\ndef main(_):\n    n = FLAGS.steps\n    print('go')\n    table = [1, 2]\n    table[n]\n\napp.run(main)\n",
    );
    assert_eq!(errors(&real_default), vec![(Code::PythonException, 9)]);
}

/// A reader made in `setUp` whose generator returns once it has gone through a number of
/// batches the environment gives: whether the test's second `next()` finds it ended is not
/// known (an unknown chose the generator's `return`). A generator method whose object is
/// unchanged since it was made, run past its end, still raises StopIteration.
#[test]
fn a_generator_an_unknown_may_have_ended_ends_unknown() {
    let a = analyse("/ws/reader_test.py", READER_TEST);
    assert!(errors(&a).is_empty(), "{:?}", a.diagnostics);
    let known = analyse(
        "/ws/reader.py",
        "class Reader:\n    def __init__(self, batches):\n        self.batches = batches\n\n    def epoch(self):\n        for b in self.batches:\n            yield b\n\nreader = Reader([1, 2])\nit = reader.epoch()\nnext(it)\nnext(it)\nnext(it)\n",
    );
    assert_eq!(errors(&known), vec![(Code::PythonException, 13)], "{:?}", known.diagnostics);
}

const READER_TEST: &str = r#"import os

import jax.numpy as jnp
from absl.testing import absltest


class Reader:
    def __init__(self, batches):
        self._batches = batches
        self._generator = self._make_generator()

    def __next__(self):
        return next(self._generator)

    def _make_generator(self):
        idx = 0
        while True:
            if idx == len(self._batches):
                return
            yield self._batches[idx]
            idx += 1


class ReaderTest(absltest.TestCase):

    def setUp(self):
        super().setUp()
        n = int(os.environ.get("NUM_BATCHES", "3"))
        self.reader = Reader([jnp.ones(2)] * n)

    def test_two_batches(self):
        next(self.reader)
        self.assertEqual(next(self.reader).shape, (2,))


if __name__ == "__main__":
    absltest.main()
"#;
