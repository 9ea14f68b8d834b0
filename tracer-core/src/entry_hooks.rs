//! What the entry points of real projects need from libraries the interpreter does not
//! otherwise model (design.md §9): `absl.app.run(main)` calls `main([argv0])`; absl flags
//! read as their defaults once the flags are parsed; `pytest.fixture`, `pytest.mark.*`,
//! `pytest.param`, absl's `parameterized.*` and `unittest.skip*` decorate a test without
//! hiding it, and remember what the test runner (`test_runner`) needs.
//!
//! Each library stays an unknown module; only these calls and attributes are answered.

use std::rc::Rc;

use crate::interp::call::Kwargs;
use crate::interp::entry_state::Pending;
pub use crate::interp::entry_state::{Case, EntryState, FixtureInfo, Mark};
use crate::interp::value::{Opaque, Value};
use crate::interp::{Interp, PyResult};

/// The key of a decorated test, fixture or parametrised function: its `def` (a method is
/// stored again when its class is made, as another function object), else its identity.
pub fn decorated_key(v: &Value) -> Option<usize> {
    match v {
        Value::Function(f) => Some(Rc::as_ptr(&f.def) as *const u8 as usize),
        other => other.identity(),
    }
}

/// A call of an unknown value that one of these libraries defines; `None` for any other.
pub fn call_opaque(interp: &mut Interp, callee: &Rc<Opaque>, args: &[Value], kwargs: &Kwargs) -> Option<PyResult<Value>> {
    let callee_id = Rc::as_ptr(callee) as *const u8 as usize;
    if let Some(pending) = interp.entry_state.pending.get(&callee_id).cloned() {
        let [target] = args else { return None };
        let id = decorated_key(target)?;
        let state = &mut interp.entry_state;
        match pending {
            Pending::Cases(cases) => state.cases.entry(id).or_default().push(cases),
            Pending::Fixture(info) => {
                state.fixtures.insert(id, info);
            }
            Pending::Mark(mark) => {
                state.marks.insert(id, mark);
            }
        }
        return Some(Ok(target.clone()));
    }
    if let Some(v) = crate::entry_argparse::call(interp, callee, args, kwargs) {
        return Some(Ok(v));
    }
    let what = callee.what.as_str();
    let name = what.rsplit('.').next().unwrap_or(what);
    if what.starts_with("tensorflow.") && name == "experimental_enable_numpy_behavior" {
        interp.tf.numpy_behavior = true;
        return Some(Ok(Value::None));
    }
    if what == "absl.app.run" {
        return Some(absl_run(interp, args, kwargs));
    }
    if (what.starts_with("absl.flags.DEFINE") || what.starts_with("ml_collections.config_flags.DEFINE")) && name.starts_with("DEFINE") {
        return Some(Ok(define_flag(interp, name, args, kwargs)));
    }
    // A decorator applied straight to its function: `@pytest.fixture`, `@pytest.mark.slow`.
    let decorating = matches!(args, [Value::Function(_) | Value::Class(_)]) && kwargs.is_empty();
    if what == "pytest.fixture" {
        if decorating {
            if let Some(id) = decorated_key(&args[0]) {
                interp.entry_state.fixtures.insert(id, FixtureInfo::default());
            }
            return Some(Ok(args[0].clone()));
        }
        let info = fixture_info(interp, kwargs);
        return Some(Ok(pending(interp, what, Pending::Fixture(info))));
    }
    if what == "pytest.param" {
        let v = Value::tuple(args.to_vec());
        if let Some(id) = v.identity() {
            interp.entry_state.pytest_params.insert(id);
            let marks = kwargs.iter().find(|(k, _)| k.as_ref() == "marks").map(|(_, m)| m);
            if marks.is_some_and(|m| marks_not_run(interp, m)) {
                interp.entry_state.pytest_params_not_run.insert(id);
            }
            // The tuple is keyed by its address: kept alive so no other value takes it.
            interp.entry_state.alive.push(v.clone());
        }
        return Some(Ok(v));
    }
    if what == "pytest.mark.parametrize" {
        let cases = pytest_cases(interp, args, kwargs);
        return Some(Ok(pending(interp, what, Pending::Cases(cases))));
    }
    if let Some(kind) = what.strip_prefix("absl.testing.parameterized.") {
        let cases = match kind {
            "parameters" => absl_cases(args, false),
            "named_parameters" => absl_cases(args, true),
            "product" => absl_product(kwargs),
            _ => return None,
        };
        return Some(Ok(pending(interp, what, Pending::Cases(cases))));
    }
    let not_run = matches!(
        what,
        "pytest.mark.skip" | "pytest.mark.xfail" | "unittest.skip" | "unittest.expectedFailure" | "absl.testing.absltest.skip"
    );
    let test_decorator =
        what.starts_with("pytest.mark.") || what.starts_with("unittest.skip") || what.starts_with("absl.testing.absltest.skip");
    if not_run || test_decorator {
        if decorating {
            if not_run {
                if let Some(id) = decorated_key(&args[0]) {
                    interp.entry_state.marks.insert(id, Mark::NotRun);
                }
            }
            return Some(Ok(args[0].clone()));
        }
        let mark = if not_run { Pending::Mark(Mark::NotRun) } else { Pending::Cases(Some(vec![Case::default()])) };
        return Some(Ok(pending(interp, what, mark)));
    }
    handed_to_unknown(interp, args.iter().chain(kwargs.iter().map(|(_, v)| v)));
    None
}

/// Values handed to code tracelens does not model (an unknown call's arguments, an
/// attribute stored on an unknown object), which that code may change
/// (`tf/handed_out.rs`).
pub fn handed_to_unknown<'v>(interp: &Interp, values: impl IntoIterator<Item = &'v Value>) {
    values.into_iter().for_each(|v| crate::tf::handed_out::forget_variables(interp, v));
}

/// An attribute of an unknown value these libraries define: a parsed flag's default, a
/// fixture's `request.param`, an argparse option's default.
pub fn getattr_opaque(interp: &mut Interp, obj: &Rc<Opaque>, name: &str) -> Option<Value> {
    if let Some(v) = crate::entry_argparse::getattr(interp, obj, name) {
        return Some(v);
    }
    if let Some(v) = flag_value(interp, obj, name) {
        interp.entry_state.flag_reads += 1;
        return Some(v);
    }
    let state = &interp.entry_state;
    if name == "param" {
        if let Some(v) = state.requests.get(&(Rc::as_ptr(obj) as *const u8 as usize)) {
            return Some(v.clone());
        }
    }
    None
}

/// A parsed absl flag's value (`FLAGS.name`, `holder.value`).
fn flag_value(interp: &Interp, obj: &Rc<Opaque>, name: &str) -> Option<Value> {
    let state = &interp.entry_state;
    if !state.flags_parsed {
        return None;
    }
    if obj.what == "absl.flags.FLAGS" {
        return state.flags.get(name).cloned();
    }
    if name == "value" {
        let flag = state.holders.get(&(Rc::as_ptr(obj) as *const u8 as usize))?;
        return state.flags.get(flag).cloned();
    }
    None
}

/// Whether a user's exception raised now is one whose outcome a command-line value decides
/// (design.md §6): an `assert` whose test read a flag (`reads_before` is the count before
/// the test), or a `raise` in a branch that an `if` on a flag chose, in the same frame. The
/// defaults are assumed values: they let the analysis reach code, but a user's check of
/// them fails only when the command line leaves them so, which tracelens cannot know.
pub fn decided_by_command_line(interp: &Interp, reads_before: Option<u64>) -> bool {
    let state = &interp.entry_state;
    interp.abstract_unknowns
        && (reads_before.is_some_and(|n| state.flag_reads != n) || state.flag_guards.last() == Some(&interp.frames.len()))
}

/// Whether `marks=` of a `pytest.param` (one mark or a list of them) holds one that keeps
/// pytest from running the case as a passing test: `pytest.mark.skip` or `xfail`, called or
/// not. `skipif` depends on its condition, so it does not count.
fn marks_not_run(interp: &Interp, marks: &Value) -> bool {
    match marks {
        Value::List(l) => l.borrow().iter().any(|m| marks_not_run(interp, m)),
        Value::Tuple(t) => t.iter().any(|m| marks_not_run(interp, m)),
        Value::Opaque(o) => {
            let called = interp.entry_state.pending.get(&(Rc::as_ptr(o) as *const u8 as usize));
            matches!(called, Some(Pending::Mark(Mark::NotRun))) || matches!(o.what.as_str(), "pytest.mark.skip" | "pytest.mark.xfail")
        }
        _ => false,
    }
}

/// Whether `v` is a `pytest.param(...)`, and whether its marks keep the case from running.
fn pytest_param(interp: &Interp, v: &Value) -> (bool, bool) {
    let Some(id) = v.identity() else { return (false, false) };
    let state = &interp.entry_state;
    (state.pytest_params.contains(&id), state.pytest_params_not_run.contains(&id))
}

/// An unknown value standing for a decorator that is waiting for its function.
fn pending(interp: &mut Interp, what: &str, p: Pending) -> Value {
    let v = Value::opaque(format!("{what}(...)"));
    if let Some(id) = v.identity() {
        interp.entry_state.pending.insert(id, p);
    }
    // Kept alive: a later unknown at the same address must not look pending.
    interp.entry_state.alive.push(v.clone());
    v
}

/// `app.run(main)`: absl parses the flags, then `sys.exit(main([sys.argv[0]]))`.
fn absl_run(interp: &mut Interp, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    let main = match (args.first(), kwargs.iter().find(|(k, _)| k.as_ref() == "main")) {
        (Some(m), _) | (None, Some((_, m))) => m.clone(),
        _ => return Ok(Value::opaque("absl.app.run(...)")),
    };
    interp.entry_state.flags_parsed = true;
    let argv0 = interp.files.first().map(|f| f.path.to_string_lossy().to_string()).unwrap_or_default();
    interp.call(&main, vec![Value::list(vec![Value::str(&argv0)])], Vec::new())?;
    // `sys.exit` follows: nothing after `app.run` runs.
    Err(interp.stop_unknown("absl.app.run exits the program"))
}

fn argument<'a>(args: &'a [Value], kwargs: &'a Kwargs, index: usize, name: &str) -> Option<&'a Value> {
    args.get(index).or_else(|| kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v))
}

/// `flags.DEFINE_integer("n", 3, "help")`: the flag, at its default as absl parses it.
fn define_flag(interp: &mut Interp, kind: &str, args: &[Value], kwargs: &Kwargs) -> Value {
    let holder = Value::opaque(format!("absl.flags.{kind}(...)"));
    let Some(Value::Str(name)) = argument(args, kwargs, 0, "name").cloned() else { return holder };
    let default = argument(args, kwargs, 1, if kind == "DEFINE_config_dict" { "config" } else { "default" }).cloned();
    let value = match (kind, default) {
        // A config file is read at run time: its contents are unknown.
        ("DEFINE_config_file", _) | (_, None) => Value::opaque(format!("the flag {name}")),
        // No default: absl leaves it None, and a program that uses it needs the command
        // line to give it (a required flag), which tracelens cannot know.
        // So does an empty default (`""`, `[]`): `assert FLAGS.output_dir`, or a copy of it
        // checked later, fails only without the flag.
        (_, Some(v)) if given_by_command_line(&v) => Value::opaque(format!("the flag {name}, which the command line gives")),
        ("DEFINE_float", Some(Value::Int(i))) => Value::Float(i as f64),
        ("DEFINE_list", Some(Value::Str(s))) => {
            Value::list(s.split(',').filter(|p| !p.trim().is_empty()).map(|p| Value::str(p.trim())).collect())
        }
        ("DEFINE_integer" | "DEFINE_float" | "DEFINE_bool" | "DEFINE_boolean" | "DEFINE_enum", Some(Value::Str(_))) => {
            // absl parses a string default; not modelled.
            Value::opaque(format!("the flag {name}"))
        }
        (_, Some(v)) => v,
    };
    if let Some(id) = holder.identity() {
        interp.entry_state.holders.insert(id, name.to_string());
    }
    interp.entry_state.flags.insert(name.to_string(), value);
    holder
}

/// Whether a flag's or option's default marks one the program expects the command line to
/// give: `None`, or a string or list with nothing in it.
pub(crate) fn given_by_command_line(v: &Value) -> bool {
    match v {
        Value::None => true,
        Value::Str(s) => s.is_empty(),
        Value::List(l) => l.borrow().is_empty(),
        Value::Tuple(t) => t.is_empty(),
        _ => false,
    }
}

/// pytest's `request` fixture as a parametrised fixture sees it: only `request.param` is
/// known (the value of this run); every other attribute is unknown.
pub fn fixture_request(interp: &mut Interp, param: Value) -> Value {
    let request = Value::opaque("the fixture request");
    if let Some(id) = request.identity() {
        interp.entry_state.requests.insert(id, param);
    }
    interp.entry_state.alive.push(request.clone());
    request
}

fn fixture_info(interp: &Interp, kwargs: &Kwargs) -> FixtureInfo {
    let mut info = FixtureInfo::default();
    for (k, v) in kwargs {
        match (k.as_ref(), v) {
            ("name", Value::Str(s)) => info.name = Some(s.to_string()),
            ("scope", Value::Str(s)) => info.shared = s.as_ref() != "function",
            ("autouse", Value::Bool(b)) => info.autouse = *b,
            // `pytest.param(v, id=...)` stands for `v`; one marked skip or xfail is not run.
            ("params", v) => {
                info.params = items(v).and_then(|values| {
                    values
                        .into_iter()
                        .filter(|p| !pytest_param(interp, p).1)
                        .map(|p| match pytest_param(interp, &p).0 {
                            true => items(&p).and_then(|row| row.into_iter().next()),
                            false => Some(p),
                        })
                        .collect::<Option<Vec<_>>>()
                        .filter(|values| !values.is_empty())
                });
            }
            _ => {}
        }
    }
    info
}

/// The items of a list or tuple; `None` for anything else.
fn items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(l) => Some(l.borrow().clone()),
        Value::Tuple(t) => Some(t.to_vec()),
        _ => None,
    }
}

/// `pytest.mark.parametrize("a,b", [(1, 2), pytest.param(3, 4)])`: each case binds the names.
fn pytest_cases(interp: &Interp, args: &[Value], kwargs: &Kwargs) -> Option<Vec<Case>> {
    let names: Vec<Rc<str>> = match argument(args, kwargs, 0, "argnames")? {
        Value::Str(s) => s.split(',').map(|n| Rc::from(n.trim())).filter(|n: &Rc<str>| !n.is_empty()).collect(),
        other => items(other)?.iter().map(|n| if let Value::Str(s) = n { Some(s.clone()) } else { None }).collect::<Option<_>>()?,
    };
    let values = items(argument(args, kwargs, 1, "argvalues")?)?;
    let mut cases = Vec::new();
    for v in values {
        let (is_param, not_run) = pytest_param(interp, &v);
        if not_run {
            continue;
        }
        let row = match (names.len(), is_param) {
            (1, false) => vec![v],
            _ => items(&v)?,
        };
        if row.len() != names.len() {
            return None;
        }
        let (indirect, kwargs) = names.iter().cloned().zip(row).partition(|(n, _)| is_indirect(kwargs, n));
        cases.push(Case { args: Vec::new(), kwargs, indirect });
    }
    Some(cases)
}

/// Whether `parametrize(..., indirect=True)` or `indirect=[..., name, ...]` hands `name`'s
/// values to its fixture.
fn is_indirect(kwargs: &Kwargs, name: &str) -> bool {
    match kwargs.iter().find(|(k, _)| k.as_ref() == "indirect").map(|(_, v)| v) {
        Some(Value::Bool(b)) => *b,
        Some(v @ (Value::List(_) | Value::Tuple(_))) => {
            items(v).is_some_and(|names| names.iter().any(|n| matches!(n, Value::Str(s) if s.as_ref() == name)))
        }
        _ => false,
    }
}

/// absl's `parameters(*cases)` / `named_parameters(*cases)`: a mapping is keyword arguments,
/// an iterable that is not a string (a tuple, a named tuple, a list) positional arguments,
/// anything else the one argument; a single argument that is neither a tuple (a named tuple
/// is one) nor a mapping is the iterable of cases. A case that may be iterable or not (an
/// object tracelens does not know, an instance of a class) leaves the cases unknown.
fn absl_cases(args: &[Value], named: bool) -> Option<Vec<Case>> {
    let cases: Vec<Value> = match args {
        [single] if !matches!(single, Value::Dict(_)) && tuple_items(single).is_none() => items(single)?,
        _ => args.to_vec(),
    };
    cases
        .into_iter()
        .map(|c| match c {
            Value::Dict(d) => {
                let mut kwargs = Vec::new();
                for (k, v) in d.borrow().items() {
                    let Value::Str(k) = k else { return None };
                    if !(named && k.as_ref() == "testcase_name") {
                        kwargs.push((k, v));
                    }
                }
                Some(Case { kwargs, ..Case::default() })
            }
            other => match tuple_items(&other).or_else(|| items(&other)) {
                Some(t) => Some(Case { args: t.into_iter().skip(usize::from(named)).collect(), ..Case::default() }),
                None if named => None,
                None if matches!(
                    other,
                    Value::None
                        | Value::Bool(_)
                        | Value::Int(_)
                        | Value::Float(_)
                        | Value::Complex(..)
                        | Value::Str(_)
                        | Value::Function(_)
                        | Value::Class(_)
                        | Value::DType(_)
                ) =>
                {
                    Some(Case { args: vec![other], ..Case::default() })
                }
                None => None,
            },
        })
        .collect()
}

/// The items of a tuple, a named tuple's or a tuple subclass's among them.
fn tuple_items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::Tuple(t) => Some(t.to_vec()),
        Value::Instance(i) => i.tuple.clone(),
        _ => None,
    }
}

/// absl's `product(a=[1, 2], b=[3])`: every combination, as keyword arguments.
fn absl_product(kwargs: &Kwargs) -> Option<Vec<Case>> {
    let mut cases = vec![Case::default()];
    for (name, values) in kwargs {
        let values = items(values)?;
        cases = cases
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.kwargs.push((name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    Some(cases)
}

/// A context manager that expects its body to raise (`self.assertRaises(E)`,
/// `self.assertRaisesRegex(E, ...)`, `pytest.raises(E)`, `np.testing.assert_raises`): the
/// exception is the test passing, not a finding.
pub fn expects_exception(manager: &Value) -> bool {
    let Value::Opaque(o) = manager else { return false };
    let callee = o.what.strip_suffix("(...)").unwrap_or(&o.what);
    let name = callee.rsplit('.').next().unwrap_or(callee);
    name.starts_with("assertRaises") || name == "raises" || name == "assert_raises" || name == "assert_raises_regex"
}
