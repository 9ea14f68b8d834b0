//! The state the entry-point hooks (`entry_hooks.rs`, `entry_argparse.rs`) keep across the
//! program: the interpreter holds it (`Interp::entry_state`), the hooks read and write it. It
//! holds the interpreter's own values, so it is defined here, and the interpreter names no
//! model module to hold it.

use std::collections::{HashMap, HashSet};

use super::call::Kwargs;
use super::value::Value;

/// One set of arguments for a test: positional, then keyword.
#[derive(Clone, Debug, Default)]
pub struct Case {
    pub args: Vec<Value>,
    pub kwargs: Kwargs,
    /// `parametrize(..., indirect=...)`: values for the fixtures of these names, which
    /// they read as `request.param`; the test gets what the fixture returns.
    pub indirect: Kwargs,
}

/// A `@pytest.fixture` function, as its decorator described it.
#[derive(Clone, Debug, Default)]
pub struct FixtureInfo {
    /// `name=` of the decorator, else the function's own name.
    pub name: Option<String>,
    /// Built once for the file (`scope="module"`, `"session"`, ...), not once per test.
    pub shared: bool,
    pub autouse: bool,
    /// `params=[...]`: every test that requests the fixture runs once per value, which the
    /// fixture reads as `request.param`. `None` when not parametrised or the values are
    /// unknown (`request.param` is then unknown).
    pub params: Option<Vec<Value>>,
}

/// What a test runner will not run (`pytest.mark.skip`, `xfail`, `unittest.skip`,
/// `expectedFailure`): an error there is expected or never seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    NotRun,
}

/// A decorator made by a call (`pytest.mark.parametrize(...)`), waiting for its function.
#[derive(Clone, Debug)]
pub(crate) enum Pending {
    Cases(Option<Vec<Case>>),
    Fixture(FixtureInfo),
    Mark(Mark),
}

/// The state these libraries keep across the program.
#[derive(Debug, Default)]
pub struct EntryState {
    /// absl flags by name, at their defaults.
    pub flags: HashMap<String, Value>,
    /// Set by `app.run` and by the test runner: before, reading a flag raises in absl
    /// (`UnparsedFlagAccessError`), so it stays unknown here.
    pub flags_parsed: bool,
    /// Reads of a command-line value so far (an absl flag, an argparse option at its
    /// default): a test that made one depends on what the command line says.
    pub flag_reads: u64,
    /// The frame depths of the `if` branches running because a test read a command-line
    /// value (innermost last): a user's `raise` there is not a finding (`assumed`).
    pub flag_guards: Vec<usize>,
    /// The `FlagHolder`s `DEFINE_*` returned (by identity), with their flag's name.
    pub(crate) holders: HashMap<usize, String>,
    pub(crate) pending: HashMap<usize, Pending>,
    /// `pytest.param(...)` results (by identity): one case's values, not one value.
    pub(crate) pytest_params: HashSet<usize>,
    /// The `pytest.param(..., marks=...)` among them whose marks skip the case or expect
    /// it to fail (`skip`, `xfail`): the case is not run.
    pub(crate) pytest_params_not_run: HashSet<usize>,
    /// Parametrisations of a test function or class (by identity), one list per decorator;
    /// `None` for a decorator whose cases are unknown.
    pub cases: HashMap<usize, Vec<Option<Vec<Case>>>>,
    pub fixtures: HashMap<usize, FixtureInfo>,
    pub marks: HashMap<usize, Mark>,
    /// The `request` objects handed to parametrised fixtures (by identity), with their
    /// `request.param`.
    pub(crate) requests: HashMap<usize, Value>,
    /// The values keyed above by address, kept alive so no other value takes the address.
    pub(crate) alive: Vec<Value>,
    /// The sizes of the named dimensions annotations bind (`crate::symbolic`).
    pub dims: crate::symbolic::SymbolicDims,
    /// argparse parsers and what `parse_args()` gives (`crate::entry_argparse`).
    pub argparse: ArgparseState,
}

/// What one `ArgumentParser` (with its groups) knows: each destination at its default,
/// `None` for one the defaults do not decide.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    pub(crate) defaults: Vec<(String, Option<Value>)>,
    /// A sub-command parser was added: what `parse_args` gives depends on the command line.
    pub(crate) undecided: bool,
}

/// The parsers, their bound methods and the namespaces they returned, by identity.
#[derive(Debug, Default)]
pub struct ArgparseState {
    pub(crate) parsers: Vec<Parser>,
    /// A parser or one of its argument groups (by identity): the parser's index.
    pub(crate) owners: HashMap<usize, usize>,
    /// A bound method of a parser (by identity): its parser and its name.
    pub(crate) methods: HashMap<usize, (usize, String)>,
    /// `parse_args()` results (by identity): each destination's default.
    pub(crate) namespaces: HashMap<usize, HashMap<String, Value>>,
    /// The values keyed above by address, kept alive so no other value takes the address.
    pub(crate) alive: Vec<Value>,
}
