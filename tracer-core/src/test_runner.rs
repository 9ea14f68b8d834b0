//! Tests as entry points (design.md §9), run as their runners run them: the methods
//! `test*` of `unittest.TestCase`/`absltest.TestCase` subclasses, each on a fresh instance
//! between `setUp` and `tearDown` (after `setUpClass`, and the module's `setUpModule`); in a pytest file (`test_*.py`,
//! `*_test.py`), its `test*` functions and the `test*` methods of its `Test*` classes, with
//! their fixtures built from the module and every `conftest.py` above it. Parametrised tests
//! run once per case. An argument nothing can build is an unknown value: a test is never
//! called with fewer arguments than it takes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::entry_hooks::{Case, FixtureInfo, Mark};
use crate::interp::value::{Class, IndexMap, Instance, ModuleObj, PyIter, Value};
use crate::interp::{FileId, Flow, Frame, Interp};
use crate::syntax::ast::{FunctionDef, Span, StmtKind};

/// Fixtures deeper than this (a fixture that requests itself) are unknown.
const MAX_FIXTURE_DEPTH: usize = 16;

/// pytest's `python_files` default: `test_*.py` and `*_test.py`.
pub fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
}

/// pytest imports every `conftest.py` from the root folder down to a test file's folder
/// before it imports the test file: what they do at import (`jax.config.update(
/// "jax_enable_x64", True)`) holds for the test module's top level too. Runs them, outermost
/// first, for a pytest file (none for any other file); their modules, for `run_tests`.
pub fn import_conftests(interp: &mut Interp, file: FileId) -> Vec<Rc<ModuleObj>> {
    let path = interp.path(file).to_path_buf();
    if !is_test_file(&path) {
        return Vec::new();
    }
    let root = interp.search_roots.first().cloned();
    let mut folders: Vec<PathBuf> = Vec::new();
    let mut dir = path.parent().map(Path::to_path_buf);
    while let Some(d) = dir {
        folders.push(d.clone());
        if root.as_ref().is_none_or(|r| d == *r || !d.starts_with(r)) {
            break;
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    let mut modules = Vec::new();
    for folder in folders.iter().rev() {
        let conftest = folder.join("conftest.py");
        if conftest == path {
            continue;
        }
        let Some(text) = interp.loader.read(&conftest) else { continue };
        interp.restart_clock();
        let id = interp.add_file(conftest, text);
        let (m, flow) = interp.run_module(id, "conftest");
        if let Some(flow) = flow {
            interp.report_uncaught(flow, "conftest.py");
        }
        modules.push(m);
    }
    interp.restart_clock();
    modules
}

/// Runs the tests of the analysed module, each on a fresh budget, with the fixtures of the
/// `conftest.py` modules `import_conftests` ran and of the module (the nearest wins).
pub fn run_tests(interp: &mut Interp, file: FileId, module: &Rc<ModuleObj>, conftests: &[Rc<ModuleObj>]) {
    let ast = interp.files[file as usize].module.clone();
    let path = interp.path(file).to_path_buf();
    let pytest_file = is_test_file(&path);
    let mut runner = Runner { file, fixtures: HashMap::new(), shared: HashMap::new(), chosen: HashMap::new(), indirect: HashMap::new() };
    if pytest_file {
        for m in conftests {
            runner.add_fixtures(interp, m);
        }
        runner.add_fixtures(interp, module);
    }
    // unittest (and pytest) call the module's `setUpModule` before its first test and
    // `tearDownModule` after its last: a module that turns x64 on there runs every test
    // with it. A `setUpModule` that raises skips the module's tests.
    let has_testcase = ast.body.iter().any(|stmt| match &stmt.kind {
        StmtKind::ClassDef(def) => {
            matches!(module.dict.borrow().get(def.name.as_ref()), Some(Value::Class(c)) if c.lookup("__tracelens_testcase__").is_some())
        }
        _ => false,
    });
    let module_hooks = has_testcase || pytest_file;
    if module_hooks && !runner.module_hook(interp, module, "setUpModule") {
        return;
    }
    for stmt in &ast.body {
        match &stmt.kind {
            StmtKind::ClassDef(def) => {
                let Some(Value::Class(class)) = module.dict.borrow().get(def.name.as_ref()).cloned() else { continue };
                if class.lookup("__tracelens_testcase__").is_some() {
                    runner.run_class(interp, &class, true);
                } else if pytest_file
                    && def.name.starts_with("Test")
                    && class.lookup("__init__").is_none_or(|i| matches!(i, Value::Builtin(_)))
                {
                    runner.run_class(interp, &class, false);
                }
            }
            StmtKind::FunctionDef(def) if pytest_file && def.name.starts_with("test") => {
                let Some(f) = module.dict.borrow().get(def.name.as_ref()).cloned() else { continue };
                if let Value::Function(function) = &f {
                    let def = function.def.clone();
                    runner.run_test(interp, &def.name.to_string(), &f, &def, None, &[]);
                }
            }
            _ => {}
        }
    }
    if module_hooks {
        runner.module_hook(interp, module, "tearDownModule");
    }
}

struct Runner {
    file: FileId,
    /// pytest fixtures by name: the nearest definition wins (the module, then the
    /// innermost `conftest.py`).
    fixtures: HashMap<String, (Value, FixtureInfo)>,
    /// Fixtures of a wider scope than the function, once built (a parametrised one once
    /// per value: `name[i]`).
    shared: HashMap<String, Value>,
    /// For the run under way: the value (by index) of each parametrised fixture it uses.
    chosen: HashMap<String, usize>,
    /// For the run under way: the `request.param` of each fixture its case parametrises
    /// indirectly.
    indirect: HashMap<String, Value>,
}

impl Runner {
    fn add_fixtures(&mut self, interp: &Interp, module: &Rc<ModuleObj>) {
        for (name, v) in module.dict.borrow().iter() {
            let Some(info) = crate::entry_hooks::decorated_key(v).and_then(|id| interp.entry_state.fixtures.get(&id)) else { continue };
            let name = info.name.clone().unwrap_or_else(|| name.to_string());
            self.fixtures.insert(name, (v.clone(), info.clone()));
        }
    }

    /// A TestCase (`unittest`) or a pytest `Test*` class: each `test*` method on a fresh
    /// instance, in the order its runner uses (unittest sorts the names).
    fn run_class(&mut self, interp: &mut Interp, class: &Rc<Class>, unittest: bool) {
        if interp.entry_state.marks.contains_key(&(Rc::as_ptr(class) as *const u8 as usize)) {
            return;
        }
        let mut methods: IndexMap<String, Value> = IndexMap::default();
        for c in class.mro() {
            for (name, v) in c.dict.borrow().iter() {
                if name.starts_with("test") && matches!(v, Value::Function(_)) && !methods.contains_key(name.as_ref()) {
                    methods.insert(name.to_string(), v.clone());
                }
            }
        }
        if unittest {
            methods.sort_keys();
            interp.entry_state.flags_parsed = true;
            if let Some(Value::ClassMethod(f)) = class.lookup("setUpClass") {
                if let Some(flow) = self.call_entry(interp, &f, vec![Value::Class(class.clone())], Vec::new()).err() {
                    interp.report_uncaught(flow, &format!("{}.setUpClass", class.name));
                    return;
                }
            }
        }
        let class_cases = interp.entry_state.cases.get(&(Rc::as_ptr(class) as *const u8 as usize)).cloned().unwrap_or_default();
        for (name, method) in methods {
            let Value::Function(f) = &method else { continue };
            let def = f.def.clone();
            let label = format!("{}.{name}", class.name);
            self.run_test(interp, &label, &method, &def, Some(class), &class_cases);
        }
    }

    /// One test (a function, or a method of `class`), once per case of its parametrisation.
    fn run_test(
        &mut self,
        interp: &mut Interp,
        label: &str,
        test: &Value,
        def: &FunctionDef,
        class: Option<&Rc<Class>>,
        extra: &[Option<Vec<Case>>],
    ) {
        let Some(id) = crate::entry_hooks::decorated_key(test) else { return };
        if interp.entry_state.marks.get(&id) == Some(&Mark::NotRun) {
            return;
        }
        let mut decorators = interp.entry_state.cases.get(&id).cloned().unwrap_or_default();
        decorators.extend(extra.iter().cloned());
        for case in product(decorators) {
            let skip = usize::from(class.is_some()) + case.args.len();
            let mut wanted: Vec<String> = self.fixtures.iter().filter(|(_, (_, i))| i.autouse).map(|(n, _)| n.clone()).collect();
            wanted.extend(missing_arguments(def, skip, &case).map(str::to_string));
            for choice in self.param_choices(wanted) {
                self.chosen = choice;
                self.run_case(interp, label, test, def, class, case.clone());
            }
            self.chosen.clear();
        }
    }

    /// The runs a test makes for the parametrised fixtures it requests (directly, or
    /// through the fixtures it requests): every combination of one value of each, as pytest
    /// makes them; one run with no choice when it requests none.
    fn param_choices(&self, mut wanted: Vec<String>) -> Vec<HashMap<String, usize>> {
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut choices = vec![HashMap::new()];
        while let Some(name) = wanted.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let Some((Value::Function(f), info)) = self.fixtures.get(&name) else { continue };
            wanted.extend(missing_arguments(&f.def, 0, &Case::default()).map(str::to_string));
            let Some(n) = info.params.as_ref().map(Vec::len) else { continue };
            choices = choices
                .into_iter()
                .flat_map(|c| {
                    let name = name.clone();
                    (0..n).map(move |i| {
                        let mut c = c.clone();
                        c.insert(name.clone(), i);
                        c
                    })
                })
                .collect();
        }
        choices
    }

    /// One call of a test with one case's arguments: `setUp`, the test, `tearDown`.
    fn run_case(&mut self, interp: &mut Interp, label: &str, test: &Value, def: &FunctionDef, class: Option<&Rc<Class>>, case: Case) {
        interp.restart_clock();
        interp.jax.entry_run += 1;
        self.indirect = case.indirect.iter().map(|(n, v)| (n.to_string(), v.clone())).collect();
        let mut built: HashMap<String, Value> = HashMap::new();
        let receiver = match class {
            Some(c) => {
                let inst = Value::Instance(Rc::new(Instance { class: c.clone(), attrs: Default::default(), tuple: None }));
                interp.jax.note_born(&inst);
                Some(inst)
            }
            None => None,
        };
        let autouse: Vec<String> = self.fixtures.iter().filter(|(_, (_, i))| i.autouse).map(|(n, _)| n.clone()).collect();
        for name in autouse {
            self.fixture(interp, &name, &mut built, 0);
        }
        if let Some(recv) = &receiver {
            let set_up = ["setUp", "setup_method"].into_iter().find_map(|n| user_method(recv, n).map(|m| (n, m)));
            if let Some((n, m)) = set_up {
                let args = if n == "setup_method" { vec![recv.clone(), test.clone()] } else { vec![recv.clone()] };
                if let Err(flow) = self.call_entry(interp, &m, args, Vec::new()) {
                    interp.report_uncaught(flow, &format!("{label} ({n})"));
                    return;
                }
            }
        }
        let (args, kwargs) = self.arguments(interp, def, receiver.as_ref(), case, &mut built);
        if let Err(flow) = self.call_entry(interp, test, args, kwargs) {
            interp.report_uncaught(flow, &format!("test {label}"));
        }
        if let Some(recv) = &receiver {
            for n in ["tearDown", "teardown_method"] {
                if let Some(m) = user_method(recv, n) {
                    let args = if n == "teardown_method" { vec![recv.clone(), test.clone()] } else { vec![recv.clone()] };
                    if let Err(flow) = self.call_entry(interp, &m, args, Vec::new()) {
                        interp.report_uncaught(flow, &format!("{label} ({n})"));
                    }
                }
            }
        }
    }

    /// The arguments of one call of a test: the receiver, the case's values, then a fixture
    /// (or an unknown value) for every other parameter without a default.
    fn arguments(
        &mut self,
        interp: &mut Interp,
        def: &FunctionDef,
        receiver: Option<&Value>,
        case: Case,
        built: &mut HashMap<String, Value>,
    ) -> (Vec<Value>, crate::interp::call::Kwargs) {
        let mut args: Vec<Value> = receiver.into_iter().cloned().collect();
        let skip = args.len() + case.args.len();
        args.extend(case.args);
        let mut kwargs = case.kwargs;
        let missing: Vec<Rc<str>> =
            missing_arguments(def, skip, &Case { kwargs: kwargs.clone(), ..Case::default() }).map(Rc::from).collect();
        for name in missing {
            let v = self.fixture(interp, &name, built, 0);
            kwargs.push((name, v));
        }
        (args, kwargs)
    }

    /// The fixture `name` for the current test, built once per test (or once per file for
    /// a wider scope); unknown when no fixture of that name is defined (pytest's builtins,
    /// `tmp_path`, `request`, ...) or building it raised.
    fn fixture(&mut self, interp: &mut Interp, name: &str, built: &mut HashMap<String, Value>, depth: usize) -> Value {
        // A wider-scoped fixture is built once per value of its parametrisation.
        let indirect = self.indirect.get(name).cloned();
        let shared_key = match self.chosen.get(name) {
            Some(i) => format!("{name}[{i}]"),
            None => name.to_string(),
        };
        let shared = if indirect.is_some() { None } else { self.shared.get(&shared_key) };
        if let Some(v) = built.get(name).or(shared) {
            return v.clone();
        }
        let unknown = Value::opaque(format!("the fixture {name}"));
        let Some((f, info)) = self.fixtures.get(name).cloned() else { return unknown };
        let Value::Function(function) = &f else { return unknown };
        if depth >= MAX_FIXTURE_DEPTH {
            return unknown;
        }
        let def = function.def.clone();
        let mut kwargs = Vec::new();
        for p in def.params.posonly.iter().chain(&def.params.args).chain(&def.params.kwonly) {
            if p.default.is_none() {
                let chosen = info.params.as_ref().zip(self.chosen.get(name)).and_then(|(values, i)| values.get(*i));
                let param = indirect.as_ref().or(chosen);
                let v = if p.name.as_ref() == name {
                    Value::opaque(format!("the fixture {name}"))
                } else if let (Some(param), "request") = (param, p.name.as_ref()) {
                    crate::entry_hooks::fixture_request(interp, param.clone())
                } else {
                    self.fixture(interp, &p.name, built, depth + 1)
                };
                kwargs.push((p.name.clone(), v));
            }
        }
        let value = match self.call_entry(interp, &f, Vec::new(), kwargs) {
            // A `yield` fixture: the value it yields (its teardown already ran: generators
            // run eagerly).
            Ok(Value::Iterator(it)) if matches!(&*it.borrow(), PyIter::Generator { .. }) => {
                match interp.next_item(&Value::Iterator(it.clone())) {
                    Ok(Some(v)) => v,
                    Ok(None) => unknown,
                    Err(flow) => {
                        interp.report_uncaught(flow, &format!("fixture {name}"));
                        unknown
                    }
                }
            }
            Ok(v) => v,
            Err(flow) => {
                interp.report_uncaught(flow, &format!("fixture {name}"));
                unknown
            }
        };
        if info.shared && indirect.is_none() {
            self.shared.insert(shared_key, value.clone());
        } else {
            built.insert(name.to_string(), value.clone());
        }
        value
    }

    /// Calls the module-level function `name` (`setUpModule`) if the module defines one, on a
    /// fresh budget; whether it returned (an exception in it is reported as uncaught).
    fn module_hook(&self, interp: &mut Interp, module: &Rc<ModuleObj>, name: &str) -> bool {
        let Some(hook @ Value::Function(_)) = module.dict.borrow().get(name).cloned() else { return true };
        interp.restart_clock();
        match self.call_entry(interp, &hook, Vec::new(), Vec::new()) {
            Ok(_) => true,
            Err(flow) => {
                interp.report_uncaught(flow, name);
                false
            }
        }
    }

    fn call_entry(&self, interp: &mut Interp, f: &Value, args: Vec<Value>, kwargs: crate::interp::call::Kwargs) -> Result<Value, Flow> {
        interp.frames.push(Frame { file: self.file, name: Rc::from("<test>"), span: Span::default(), class: None, self_value: None });
        let result = interp.call(f, args, kwargs);
        interp.frames.pop();
        result
    }
}

/// The parameters of a test or fixture that pytest fills with fixtures: those without a
/// default, past the first `skip` positional ones, that `case` does not bind.
fn missing_arguments<'a>(def: &'a FunctionDef, skip: usize, case: &'a Case) -> impl Iterator<Item = &'a str> + 'a {
    let positional = def.params.posonly.iter().chain(&def.params.args).skip(skip);
    positional
        .chain(&def.params.kwonly)
        .filter(move |p| p.default.is_none() && !case.kwargs.iter().any(|(k, _)| *k == p.name))
        .map(|p| p.name.as_ref())
}

/// A method the user's class defines (not one of the unknown base class).
fn user_method(receiver: &Value, name: &str) -> Option<Value> {
    let Value::Instance(inst) = receiver else { return None };
    match inst.class.lookup(name)? {
        f @ Value::Function(_) => Some(f),
        _ => None,
    }
}

/// Every combination of one case from each decorator; a decorator whose cases are unknown
/// adds none (its parameters are then filled with unknown values).
fn product(decorators: Vec<Option<Vec<Case>>>) -> Vec<Case> {
    let mut cases = vec![Case::default()];
    for cases_of_one in decorators.into_iter().flatten() {
        if cases_of_one.is_empty() {
            continue;
        }
        cases = cases
            .into_iter()
            .flat_map(|c| {
                cases_of_one.iter().map(move |d| {
                    let mut c = c.clone();
                    c.args.extend(d.args.iter().cloned());
                    c.kwargs.extend(d.kwargs.iter().cloned());
                    c.indirect.extend(d.indirect.iter().cloned());
                    c
                })
            })
            .collect();
    }
    cases
}
