//! Imports resolve as CPython 3 resolves them (issue 18, point 5): absolute imports search
//! `sys.path` only, src layouts and namespace packages work, `from m import *` honours
//! `__all__`, third-party modules are not shadowed by folders off the path, and a circular
//! import never gives a false ImportError.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig, FileAnalysis};

/// A project held in memory: relative paths to file contents.
struct Project(HashMap<PathBuf, Rc<str>>);

impl SourceLoader for Project {
    fn read(&self, path: &Path) -> Option<Rc<str>> {
        self.0.get(path).cloned()
    }
}

/// Analyses `entry` of a project laid out in `files`, with the project root as search root.
fn analyse(files: &[(&str, &str)], entry: &str) -> FileAnalysis {
    let project = Project(files.iter().map(|(p, t)| (PathBuf::from("/proj").join(p), Rc::from(*t))).collect());
    let path = PathBuf::from("/proj").join(entry);
    let text = project.0.get(&path).cloned().unwrap_or_else(|| Rc::from(""));
    let config = AnalysisConfig { search_roots: vec![PathBuf::from("/proj")], ..Default::default() };
    analyze_file(&path, &text, &project, &config)
}

fn messages(a: &FileAnalysis) -> Vec<String> {
    a.diagnostics.iter().map(|(d, l, _)| format!("{}:{} {}", d.code.as_str(), l.line, d.message)).collect()
}

#[test]
fn an_absolute_import_is_not_an_implicit_relative_import() {
    // `pkg/optax.py` doing `import optax` gets the installed optax (unknown), not itself;
    // its `adam` exists there even though the local file has none.
    let files = [
        ("pkg/__init__.py", ""),
        ("pkg/optax.py", "import optax\nopt = optax.adam(1e-3)\n"),
        ("main.py", "from pkg import optax as local\nprint(hasattr(local, 'opt'))\n"),
    ];
    let a = analyse(&files, "pkg/optax.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    let a = analyse(&files, "main.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    assert_eq!(a.stdout, "True\n");
}

#[test]
fn a_sibling_module_is_found_only_through_the_path_or_a_relative_import() {
    let files = [
        ("pkg/__init__.py", ""),
        ("pkg/helpers.py", "def double(x):\n    return 2 * x\n"),
        ("pkg/model.py", "from . import helpers\nfrom pkg.helpers import double\nVALUE = helpers.double(2) + double(1)\n"),
        ("main.py", "from pkg.model import VALUE\nprint(VALUE)\n"),
    ];
    let a = analyse(&files, "main.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    assert_eq!(a.stdout, "6\n");
}

#[test]
fn a_src_layout_is_on_the_path() {
    let files = [
        ("src/mylib/__init__.py", "from mylib.core import scale\n"),
        ("src/mylib/core.py", "def scale(x):\n    return 3 * x\n"),
        ("train.py", "import mylib\nprint(mylib.scale(2))\n"),
    ];
    let a = analyse(&files, "train.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    assert_eq!(a.stdout, "6\n");
}

#[test]
fn a_folder_without_init_is_a_namespace_package() {
    let files = [
        ("tools/metrics.py", "def accuracy():\n    return 1.0\n"),
        ("main.py", "import tools.metrics\nfrom tools import metrics\nfrom tools.metrics import accuracy\nprint(tools.metrics.accuracy(), metrics.accuracy(), accuracy())\n"),
    ];
    let a = analyse(&files, "main.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    assert_eq!(a.stdout, "1.0 1.0 1.0\n");
}

#[test]
fn star_imports_honour_all_and_skip_private_names() {
    let files = [
        ("with_all.py", "__all__ = ['public']\ndef public():\n    return 1\ndef also_public():\n    return 2\n"),
        ("without_all.py", "def visible():\n    return 3\ndef _hidden():\n    return 4\n"),
        (
            "main.py",
            "from with_all import *\nfrom without_all import *\nfrom math import *\nprint(public(), visible(), sqrt(4.0))\nalso_public()\n",
        ),
    ];
    let a = analyse(&files, "main.py");
    assert_eq!(messages(&a), vec!["TL190:5 NameError: name 'also_public' is not defined"]);
    assert_eq!(a.stdout, "1 3 2.0\n");
    let files = [("main.py", "from without_all import *\n_hidden()\n"), ("without_all.py", "def _hidden():\n    return 4\n")];
    assert_eq!(messages(&analyse(&files, "main.py")), vec!["TL190:2 NameError: name '_hidden' is not defined"]);
}

#[test]
fn a_star_import_from_an_unmodelled_library_makes_its_names_unknown() {
    let files = [("main.py", "from somelib.layers import *\nnet = Dense(3)\nfrom jax.numpy import *\nx = zeros(3)\n")];
    let a = analyse(&files, "main.py");
    assert_eq!(messages(&a), Vec::<String>::new());
}

#[test]
fn a_third_party_module_is_not_shadowed_by_a_folder_off_the_path() {
    // `lib/flax/` is inside the package `lib`, not on the path: `import flax` in
    // `lib/train.py` is the library.
    let files = [
        ("lib/__init__.py", ""),
        ("lib/flax/__init__.py", "raise RuntimeError('this folder is not the library')\n"),
        ("lib/train.py", "import flax\nlayer = flax.linen.Dense(3)\n"),
        ("main.py", "import lib.train\nimport numpy as np\nprint(np.pi > 3)\n"),
    ];
    let a = analyse(&files, "main.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    assert_eq!(a.stdout, "True\n");
}

#[test]
fn a_circular_import_gives_the_partly_initialised_module() {
    // CPython: `import a` inside b (while a is initialising) works; `from a import early`
    // works because `early` is bound before `import b` runs.
    let files = [
        ("a.py", "early = 1\nimport b\nlate = b.value + 1\n"),
        ("b.py", "import a\nfrom a import early\nvalue = early + 1\ndef use():\n    return a.late\n"),
        ("main.py", "import a\nimport b\nprint(a.late, b.use())\n"),
    ];
    let a = analyse(&files, "main.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    assert_eq!(a.stdout, "3 3\n");
}

#[test]
fn a_name_not_yet_bound_in_a_circular_import_is_a_real_import_error() {
    let files = [("a.py", "import b\nlate = 1\n"), ("b.py", "from a import late\n"), ("main.py", "import a\n")];
    let found = messages(&analyse(&files, "main.py"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("ImportError: cannot import name 'late' from 'a'"), "{found:?}");
}

#[test]
fn a_module_of_a_package_run_as_a_script_is_imported_again_under_its_name() {
    // `python pkg/boxes.py` with the project root on the path: `pkg/__init__.py` imports
    // `pkg.boxes`, which CPython runs again as a new module (not the half-run `__main__`);
    // the same for `python pkg/__init__.py`. The printed lines are CPython 3's.
    let files = [
        (
            "pkg/__init__.py",
            "\"\"\"Trackers.\"\"\"\nfrom pkg.boxes import BoxTracker\nfrom pkg.tracker import Track\nprint(__name__, BoxTracker.__name__, Track.__name__)\n",
        ),
        ("pkg/tracker.py", "class Track:\n    pass\n"),
        ("pkg/boxes.py", "from pkg.tracker import Track\n\nclass BoxTracker:\n    kind = Track\n\nprint(__name__, BoxTracker.kind.__name__)\n"),
    ];
    let a = analyse(&files, "pkg/boxes.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    assert_eq!(a.stdout, "pkg.boxes Track\npkg BoxTracker Track\n__main__ Track\n");
    let a = analyse(&files, "pkg/__init__.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    assert_eq!(a.stdout, "pkg.boxes Track\npkg BoxTracker Track\n__main__ BoxTracker Track\n");
}

#[test]
fn a_package_initialiser_checked_alone_imports_its_siblings_as_the_package_does() {
    // gymnax's shape: the package re-exports with relative imports, and a registry the top
    // package imports reaches the same submodules by absolute name. Checked on its own,
    // `envs/classic/__init__.py` runs as `python -m` would run a package module: its
    // `.walker` is `envs.classic.walker`, one module, never a half-run copy named `walker`.
    let files = [
        ("envs/__init__.py", "from envs import base, registry\nmake = registry.make\n"),
        ("envs/base.py", "class Env:\n    size = 1\n"),
        (
            "envs/registry.py",
            "from envs.classic import walker\nBUILTINS = {'Walker-v0': walker.Walker}\ndef make(name):\n    return BUILTINS[name]()\n",
        ),
        (
            "envs/classic/__init__.py",
            "from .walker import Walker\nimport envs.classic.walker as absolute\nprint(Walker is absolute.Walker, Walker.size)\n",
        ),
        ("envs/classic/walker.py", "from envs.base import Env\nclass Walker(Env):\n    size = 2\n"),
    ];
    let a = analyse(&files, "envs/classic/__init__.py");
    assert_eq!(messages(&a), Vec::<String>::new());
    // Twice: once as the package `envs.classic` (the registry imports it), once as the
    // checked file, as `python -m` runs a module its package also imports.
    assert_eq!(a.stdout, "True 2\nTrue 2\n");
}
