//! Library shims (docs/ARCHITECTURE.md, "Library shims"): a shim is imported when the project
//! has no such module, a user's shim folder wins over the bundled shims, and shim code is
//! library code — errors, tracebacks and hover values stay on the user's lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, run_file, AnalysisConfig, FileAnalysis, RunOutcome};

/// A loader over an in-memory folder tree.
struct Files(HashMap<PathBuf, &'static str>);

impl SourceLoader for Files {
    fn read(&self, path: &Path) -> Option<Rc<str>> {
        self.0.get(path).map(|t| Rc::from(*t))
    }
}

fn analyze(source: &str, files: &[(&str, &'static str)], shim_roots: &[&str]) -> FileAnalysis {
    let loader = Files(files.iter().map(|(p, t)| (PathBuf::from(p), *t)).collect());
    let config = AnalysisConfig {
        search_roots: vec![PathBuf::from("/project")],
        shim_roots: shim_roots.iter().map(PathBuf::from).collect(),
        ..Default::default()
    };
    analyze_file(&PathBuf::from("/project/main.py"), source, &loader, &config)
}

fn findings(analysis: &FileAnalysis) -> Vec<String> {
    analysis
        .diagnostics
        .iter()
        .map(|(d, loc, _)| format!("{}:{} {} {}", loc.path.display(), loc.line, d.code.as_str(), d.message))
        .collect()
}

const SGD_STEP: &str = "\
import jax
import jax.numpy as jnp
import optax

params = {'w': jnp.ones((3, 2)), 'b': jnp.zeros((2,))}
opt = optax.sgd(0.1)
state = opt.init(params)
grads = {'w': jnp.ones((3, 2)), 'b': jnp.ones((2,))}
updates, state = opt.update(grads, state)
params = optax.apply_updates(params, updates)
print(params['b'])
";

#[test]
fn the_bundled_optax_shim_is_imported_and_computes_values() {
    let analysis = analyze(SGD_STEP, &[], &[]);
    assert_eq!(findings(&analysis), Vec::<String>::new());
    assert_eq!(analysis.stdout, "[-0.1 -0.1]\n");
    // Bundled shims are not files anyone can edit: they are not among the files read.
    assert_eq!(analysis.files, vec![PathBuf::from("/project/main.py")]);
}

#[test]
fn an_error_raised_inside_a_shim_is_reported_at_the_users_call() {
    let source = "\
import jax.numpy as jnp
import optax

params = {'w': jnp.ones((3, 2)), 'b': jnp.zeros((2,))}
opt = optax.adam(1e-3)
state = opt.init(params)
grads = {'w': jnp.ones((3, 2))}
updates, state = opt.update(grads, state, params)
";
    let analysis = analyze(source, &[], &[]);
    let found = findings(&analysis);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("/project/main.py:8 TL112 ValueError: pytree structure error"), "{found:?}");

    // `tracelens run` prints the user's frames only, ending at the call into optax.
    let loader = Files(HashMap::new());
    let run = run_file(&PathBuf::from("/project/main.py"), source, &loader, &AnalysisConfig::default());
    let RunOutcome::Raised { traceback, exception } = run.outcome else { panic!("expected a raise, got {:?}", run.outcome) };
    assert!(exception.starts_with("ValueError: pytree structure error"), "{exception}");
    let lines: Vec<(String, u32)> = traceback.iter().map(|f| (f.path.display().to_string(), f.line)).collect();
    assert_eq!(lines, vec![("/project/main.py".to_string(), 8)]);
}

#[test]
fn shim_lines_record_no_hover_values() {
    let source = "\
import jax
import jax.numpy as jnp
import optax

opt = optax.adam(1e-3)


@jax.jit
def step(params, state):
    grads = jax.tree.map(jnp.ones_like, params)
    scaled = grads['w'] * 2.0
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state


params = {'w': jnp.ones((3, 2))}
params, state = step(params, opt.init(params))
";
    let analysis = analyze(source, &[], &[]);
    assert_eq!(findings(&analysis), Vec::<String>::new());
    let values: Vec<String> = analysis
        .functions
        .iter()
        .flat_map(|f| &f.traces)
        .flat_map(|t| &t.values)
        .filter(|v| v.assigned)
        .map(|v| format!("{}:{} {}", v.location.path.display(), v.location.line, v.name))
        .collect();
    // The user's assignments (pytrees too: the gradients, the updates, optax's state), none
    // of the shim's own.
    let expected = ["/project/main.py:10 grads", "/project/main.py:11 scaled", "/project/main.py:12 updates", "/project/main.py:12 state"];
    assert_eq!(values, expected);
    assert!(values.iter().all(|v| v.starts_with("/project/main.py:")), "{values:?}");
}

#[test]
fn a_users_shim_folder_wins_over_the_bundled_shims_and_models_in_house_libraries() {
    let shim = "\
import jax.numpy as jnp


def sgd(learning_rate):
    raise ValueError('the in-house optax shim was used')
";
    let in_house = "\
import jax.numpy as jnp


def dense(x, width):
    w = jnp.ones((4, width))
    return x @ w
";
    let source = "\
import jax.numpy as jnp
import mylayers
import optax

y = mylayers.dense(jnp.ones((4, 3)), 5)
";
    let files = [("/shims/optax/__init__.py", shim), ("/shims/mylayers.py", in_house)];
    let found = findings(&analyze(source, &files, &["/shims"]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("/project/main.py:5 TL104"), "{found:?}");
    // Without the folder, the in-house library is unknown: nothing is reported.
    assert_eq!(findings(&analyze(source, &files, &[])), Vec::<String>::new());
    // The user's shim of optax replaced the bundled one.
    let source = "import optax\nopt = optax.sgd(0.1)\n";
    let found = findings(&analyze(source, &files, &["/shims"]));
    assert_eq!(found, vec!["/project/main.py:2 TL190 ValueError: the in-house optax shim was used"]);
}

#[test]
fn names_a_shim_does_not_model_are_unknown_not_missing() {
    let source = "\
import optax
from optax import adafactor

opt = optax.novograd(1e-3)
other = adafactor(1e-3)
print('done')
";
    let analysis = analyze(source, &[], &[]);
    assert_eq!(findings(&analysis), Vec::<String>::new());
    assert_eq!(analysis.stdout, "done\n");
}

#[test]
fn a_users_own_init_subclass_hook_runs_and_reports_nothing() {
    // A base's hook runs as the class is made, as in CPython (equinox's Module makes its
    // subclasses pytrees there); `super().__init_subclass__()` reaches `object`'s, a no-op.
    let source = "\
class Registry:
    registry = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Registry.registry.append(cls.__name__)


class A(Registry):
    pass


print(Registry.registry)
print('done')
";
    let analysis = analyze(source, &[], &[]);
    assert_eq!(findings(&analysis), Vec::<String>::new());
    assert_eq!(analysis.stdout, "['A']\ndone\n");
}

#[test]
fn a_shims_wrapper_that_names_the_users_function_in_dunder_wrapped_is_traced_as_that_function() {
    let shim = "\
import jax


def jit(fun):
    def wrapper(*args):
        return fun(*args)

    wrapper.__wrapped__ = fun
    return jax.jit(wrapper)
";
    let source = "\
import jax.numpy as jnp
import mylib


@mylib.jit
def step(x):
    print('tracing')
    return x * 2


for _ in range(3):
    y = step(jnp.ones(4))
";
    let analysis = analyze(source, &[("/shims/mylib.py", shim)], &["/shims"]);
    let traced: Vec<String> = analysis
        .functions
        .iter()
        .map(|f| format!("{}:{} {} {}", f.location.path.display(), f.location.line, f.name, f.traces.len()))
        .collect();
    assert_eq!(traced, vec!["/project/main.py:5 step 1"]);
    let found = findings(&analysis);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("/project/main.py:7 TL201") && found[0].contains("ran 1 time over 3 calls"), "{found:?}");
}

#[test]
fn a_bases_dunder_init_subclass_registers_subclasses_and_tree_map_honours_is_leaf() {
    let shim = "\
import jax


class Box:
    def __init_subclass__(cls, **kwargs):
        jax.tree_util.register_pytree_node(cls, lambda b: ((b.value,), None), lambda aux, c: cls(c[0]))

    def __init__(self, value):
        self.value = value
";
    let source = "\
import jax
import jax.numpy as jnp
from boxes import Box


class Weight(Box):
    pass


tree = {'a': Weight(jnp.ones(2)), 'b': Weight(jnp.ones(3))}
print(len(jax.tree.leaves(tree)))
names = jax.tree.map(lambda b: type(b).__name__, tree, is_leaf=lambda x: isinstance(x, Box))
print(names['a'])
";
    let analysis = analyze(source, &[("/shims/boxes.py", shim)], &["/shims"]);
    assert_eq!(findings(&analysis), Vec::<String>::new());
    assert_eq!(analysis.stdout, "2\nWeight\n");
}
