//! The Python-subset interpreter: runs a module's statements over `Value`s, with JAX's APIs
//! modelled in `crate::jax`. It never runs the user's Python; it interprets it.
//!
//! Architecture invariant: every path returns; budgets (steps, time, recursion) turn into
//! `Flow::Stop`, which unwinds to the entry point and becomes an info diagnostic.

pub mod builtins;
pub mod call;
pub mod clock;
mod dtype_hierarchy;
mod dtype_info;
mod early_return;
pub(crate) mod entry_state;
mod exception_code;
mod exec;
mod flatten_read;
pub mod fork;
mod global_decls;
pub mod int_math;
mod kept_state;
pub mod lazy_iter;
mod loop_exits;
mod loop_summary;
pub mod memory;
pub(crate) mod model;
pub mod modules;
mod numpy_on_jax;
mod once_guard;
#[cfg(feature = "unit-tests")]
pub(crate) use once_guard::tests as once_guard_tests;
pub mod ops;
mod percent;
mod print_args;
pub mod pyrandom;
pub(crate) mod pytree_nodes;
pub mod seen;
pub mod shims;
pub mod shown;
pub mod stdlib;
pub mod streams;
pub mod value;
pub(crate) mod values_state;

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use clock::CpuInstant;
use value::HashMap;

use crate::diagnostics::{Code, Diagnostic, Related, Severity};
use crate::interp::model::JaxState;
use crate::syntax::ast::{self, Span};
use crate::syntax::LineIndex;

pub use value::Value;
use value::{Class, ModuleObj};

pub use crate::syntax::ast::{FileId, Site};

/// Reads source files on the engine's behalf: the engine does no IO of its own.
pub trait SourceLoader {
    /// The text of `path`, or `None` when it does not exist or cannot be read.
    fn read(&self, path: &Path) -> Option<Rc<str>>;
}

/// Limits that keep one file's analysis bounded, whatever the input.
#[derive(Clone, Debug)]
pub struct Budgets {
    pub max_steps: u64,
    pub max_time: Duration,
    pub max_recursion: usize,
    /// Arrays with more elements than this are never materialised; their values stay unknown.
    pub max_elements: u64,
    /// A concrete array larger than this many bytes captured in a trace is TL212.
    pub large_constant_bytes: u64,
    /// The memory budget: no allocation the program sizes (a string, a list, an array's
    /// data, a trace's equations) may take more, nor may the analysis hold more in all when
    /// the embedding program counts it (`memory::set_memory_probe`).
    pub max_bytes: u64,
    /// What happens over the memory budget: an unknown value (analysis) or `MemoryError` (run).
    pub over_memory: memory::OverMemory,
    /// A file with more punctuation marks and line breaks than this (about its tokens) is
    /// not parsed by `analyze_file`: a TL900 says so.
    pub max_source_marks: u64,
    /// Set by the caller to abandon the analysis (a newer edit arrived).
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for Budgets {
    fn default() -> Budgets {
        Budgets {
            max_steps: 3_000_000,
            max_time: Duration::from_millis(700),
            // CPython's default recursion limit.
            max_recursion: 1000,
            max_elements: 4_000_000,
            large_constant_bytes: 1 << 20,
            // Peak RSS stays under 1 GiB: the budget, plus what the interpreter itself holds.
            max_bytes: 512 << 20,
            over_memory: memory::OverMemory::NotComputed,
            // About 0.7 s of parsing and lowering on a busy core; a million-element list literal
            // has a million, 100,000 short lines of code 300,000 to 700,000.
            max_source_marks: 500_000,
            cancel: None,
        }
    }
}

pub struct SourceFile {
    pub path: PathBuf,
    pub text: Rc<str>,
    /// Built on first use (`SourceFile::line_index`): an analysis with no finding reads no
    /// line until its hover data is gathered, after the diagnostics are published, and
    /// indexing a 2,000-line module is about 2 % of an edit's analysis.
    line_index: std::cell::OnceCell<LineIndex>,
    pub module: Rc<ast::Module>,
    /// Library code (a shim, `shims.rs`): never the user's site.
    pub library: bool,
}

impl SourceFile {
    /// The file's lines, indexed when first asked for.
    pub fn line_index(&self) -> &LineIndex {
        self.line_index.get_or_init(|| LineIndex::new(&self.text))
    }
}

/// A Python exception in flight.
#[derive(Clone, Debug)]
pub struct PyException {
    pub value: Value,
    pub class: Rc<Class>,
    pub message: String,
    /// The diagnostic this exception becomes when uncaught.
    pub code: Code,
    /// The user's line that raised it (innermost user frame).
    pub site: Option<Site>,
    pub related: Vec<(Site, String)>,
    /// The user frames the exception passed through, outermost first (function name and the
    /// line it was at), as Python's traceback lists them; the last is `site`.
    pub traceback: Vec<(Rc<str>, Site)>,
    /// Raised on a path the analysis took past an unknown (`fork.rs`): a plain Python
    /// exception here may be one the program never raises, so it is never a finding.
    pub conditional: bool,
}

#[derive(Clone, Debug)]
pub enum StopReason {
    Budget(String),
    /// Python control flow on a value the interpreter cannot know.
    Unknown(String),
    /// The interpreter stops following on purpose (the program exits, a generator yields
    /// past what it follows): unlike an unknown, nothing goes on past it.
    End(String),
}

pub enum Flow {
    Raise(Box<PyException>),
    Return(Value),
    Break,
    Continue,
    Stop(StopReason, Option<Site>),
}

pub type PyResult<T> = Result<T, Flow>;

/// One user frame: the function being run and the expression being evaluated in it.
#[derive(Clone)]
pub struct Frame {
    pub file: FileId,
    pub name: Rc<str>,
    pub span: Span,
    /// For methods: the class that defines the method and the receiver (for `super()`).
    pub class: Option<Rc<Class>>,
    pub self_value: Option<Value>,
}

/// Where a statement executes: its local scope (none at module level) and its globals.
#[derive(Clone)]
pub struct Ctx {
    pub scope: Option<Rc<value::Scope>>,
    pub globals: Rc<ModuleObj>,
    pub file: FileId,
}

pub struct Interp<'l> {
    pub files: Vec<SourceFile>,
    pub loader: &'l dyn SourceLoader,
    /// Folders searched for project-local imports, in order.
    pub search_roots: Vec<PathBuf>,
    /// The user's shim folders (`[tool.tracelens] shims`), searched before the bundled shims.
    pub shim_roots: Vec<PathBuf>,
    pub modules: value::HashMap<String, Rc<ModuleObj>>,
    /// Functions of modelled modules already looked up (`jnp.tanh`), by module and name: a
    /// program names the same few hundred on every line.
    pub native_functions: value::HashMap<*const ModuleObj, value::HashMap<Box<str>, Value>>,
    pub frames: Vec<Frame>,
    pub diagnostics: Vec<Diagnostic>,
    pub budgets: Budgets,
    steps: u64,
    /// Loops over an unknown being run (once, for an unknown number of iterations).
    pub unknown_loops: u32,
    /// Passes running that stand for the passes of a summarised loop (`loop_summary.rs`).
    pub summary_passes: u32,
    /// Inside the branch of an `if` that sets the attribute its test reads (`once_guard.rs`):
    /// it runs once whether traced or not, so its outer mutations are not TL202.
    pub once_guarded: u32,
    /// Lists and dicts changed inside such a loop (by address): their length is not known, so
    /// unpacking, indexing or measuring them needs an unknown, never raises. Each is kept
    /// alive here, so no later container takes its address (and its mark).
    pub unsized_containers: std::collections::HashMap<usize, Value>,
    /// Loop bodies being run, and the containers they changed (by address) since the
    /// outermost one's pass began: a pass an unknown cut short (it stands for the passes
    /// after it) leaves them unsized too.
    pub loop_depth: u32,
    /// The loop passes running, innermost last: (the loop body's address, a number no other
    /// pass has). What a pass creates is told from what an earlier pass of the loop did.
    pub loop_passes: Vec<(usize, u64)>,
    /// Loop passes started so far (the next pass's number).
    pub loop_pass_count: u64,
    /// The containers changed in the running loop passes, kept alive until the outermost
    /// pass ends (their addresses are what `end_loop_pass` marks).
    pub loop_mutations: Vec<Value>,
    started: CpuInstant,
    /// The memory budget, in force on this thread while the interpreter lives.
    ledger: memory::Ledger,
    pub(crate) jax: JaxState,
    /// The models' entry points the interpreter reaches through the interface it owns
    /// (`model::Models`), given by whoever builds the interpreter.
    pub(crate) models: &'static dyn model::Models,
    /// The TensorFlow front end's state (`tf/`): the `tf.function` traces being run.
    pub(crate) tf: crate::interp::model::TfState,
    pub classes: builtins::BuiltinClasses,
    /// Warnings already reported, by (code, site), with how often they fired.
    pub warned: HashMap<(Code, Site), usize>,
    /// Items yielded so far by the generators being run, innermost last.
    pub generators: Vec<Vec<Value>>,
    /// What the program printed, as `python FILE` would show it.
    pub stdout: String,
    /// What the program wrote to `sys.stderr` (`print(..., file=sys.stderr)`, `tf.print`).
    pub stderr: String,
    /// Where an entry point stopped because a value could not be known (silent, not a finding).
    pub stops: Vec<(Option<Site>, String)>,
    /// Every exception reported uncaught: its site and the user frames it passed through,
    /// outermost first (a reproducer of an error raised in an imported module is asked for
    /// from the analysed file's lines among them).
    pub uncaught: Vec<(Site, Vec<Site>)>,
    /// Function definitions that ran at least once (by AST node), to find library functions
    /// that only annotations or `# tracelens: trace` comments can reach.
    pub called: std::collections::HashSet<usize, foldhash::fast::FixedState>,
    repr_depth: usize,
    /// Containers being compared or hashed, outermost first: Python's recursion limit holds
    /// there too (`a = [a]` a million times, then `a == b`).
    nesting: usize,
    /// Values mode (`tracelens run`, `check --values`): arrays are computed as they are made,
    /// and NaN/Inf origins are watched (TL301). `None` in the editor: values stay lazy.
    pub values: Option<crate::interp::model::numerics::ValuesState>,
    /// Nothing reads `stdout` (`check`): `print` does not compute the arrays it is given.
    pub stdout_unread: bool,
    /// Python's `random` module state after `random.seed(n)`; `None` while it is unknown.
    pub py_random: Option<pyrandom::PyRandom>,
    /// Draws from `py_random` so far (a remembered trace that drew cannot be replayed).
    pub py_random_draws: u64,
    /// Go past unknowns as an abstract interpreter does (design.md §6, `fork.rs`): both
    /// branches of an unknown test, a loop over an unknown once, a statement that needs an
    /// unknown skipped with its targets unknown. Off for `tracelens run`, which computes one
    /// execution and stops where it cannot.
    pub abstract_unknowns: bool,
    /// The write logs of the fork paths being run, innermost last.
    pub fork_logs: Vec<fork::WriteLog>,
    /// How many times a fork went on along one path while the other left a loop or a
    /// function (`break`, `return`, an exception): a loop pass that raised it is the last.
    pub dropped_exits: u64,
    /// Of those, the `return`s: one leaves its own function only, so a call takes those
    /// its body dropped back out (a loop around the call goes on).
    pub dropped_returns: u64,
    /// The depth of the outermost user frame that went on past an unknown along one path
    /// (`fork.rs`): it and the frames it calls run conditionally.
    pub conditional_from: Option<usize>,
    /// How many times the analysis went past an unknown (`fork.rs`).
    pub went_past: u64,
    /// The functions running on a path past an unknown with nothing but unknowns for
    /// arguments (`exec.rs`, `run_body`): calling one again from inside itself is a call on
    /// unknowns again, which returns an unknown instead of recursing until the limit.
    pub unknown_recursion: Vec<(FileId, Span)>,
    /// The returns an unknown chose in the functions running, kept until each ends
    /// (`early_return.rs`), innermost last.
    pub early_returns: Vec<early_return::EarlyReturns>,
    /// The loop passes running, each with the `break`s and `continue`s an unknown chose in
    /// it, kept until it ends (`loop_exits.rs`), innermost last.
    pub loop_exits: Vec<loop_exits::LoopExits>,
    /// How many of them kept one.
    pub kept_loop_exits: usize,
    /// absl flags, test decorators and fixtures seen so far (`entry_hooks`).
    pub entry_state: entry_state::EntryState,
    /// Values seen outside any trace, for hover (`seen.rs`).
    pub seen: seen::Seen,
}

impl Drop for Interp<'_> {
    fn drop(&mut self) {
        drop(self.take_leftovers());
    }
}

impl Interp<'_> {
    /// Everything the analysis built, taken out of the interpreter: dropping it frees the
    /// analysis' memory (most of its cost is freeing), and an editor can do that while idle
    /// rather than before its next analysis. The interpreter is left empty.
    pub fn take_leftovers(&mut self) -> Leftovers {
        Leftovers {
            modules: std::mem::take(&mut self.modules),
            _rest: (std::mem::take(&mut self.native_functions), crate::interp::model::state::take_jax(self)),
            files: std::mem::take(&mut self.files),
            _diagnostics: std::mem::take(&mut self.diagnostics),
        }
    }
}

/// What an analysis leaves behind once its result is out (`Interp::take_leftovers`).
pub struct Leftovers {
    modules: value::HashMap<String, Rc<ModuleObj>>,
    /// Held only to be freed with the rest.
    _rest: (value::HashMap<*const ModuleObj, value::HashMap<Box<str>, Value>>, JaxState),
    /// The analysed files; their syntax trees are handed on (`module_of`).
    files: Vec<SourceFile>,
    _diagnostics: Vec<Diagnostic>,
}

impl Leftovers {
    /// The syntax tree the analysis ran of the file at `path`, shared: once the leftovers are
    /// freed, the holder of this share is its only owner.
    pub fn module_of(&self, path: &std::path::Path) -> Option<Rc<ast::Module>> {
        self.files.iter().find(|f| f.path == path).map(|f| f.module.clone())
    }
}

impl Drop for Leftovers {
    /// Functions keep their module's globals alive and the module's dict holds the functions:
    /// an `Rc` cycle per module. Emptying the dicts breaks them, so that every value of an
    /// analysis is freed with it (the language server analyses on every edit).
    fn drop(&mut self) {
        let modules = &self.modules;
        // A method names its class (`__tracelens_class__`, for `super()`) and the class holds
        // the method: empty the dicts of the classes the modules define, too.
        let mut classes: Vec<Rc<Class>> = Vec::new();
        for module in modules.values() {
            if let Ok(dict) = module.dict.try_borrow() {
                classes.extend(dict.values().filter_map(|v| if let Value::Class(c) = v { Some(c.clone()) } else { None }));
            }
        }
        let mut seen = std::collections::HashSet::new();
        while let Some(class) = classes.pop() {
            if !seen.insert(Rc::as_ptr(&class)) {
                continue;
            }
            let Ok(mut dict) = class.dict.try_borrow_mut() else { continue };
            let taken = std::mem::take(&mut *dict);
            drop(dict);
            for v in taken.values() {
                let function = match v {
                    Value::Class(c) => {
                        classes.push(c.clone());
                        None
                    }
                    Value::Function(f) => Some(f),
                    Value::StaticMethod(inner) | Value::ClassMethod(inner) => match &**inner {
                        Value::Function(f) => Some(f),
                        _ => None,
                    },
                    Value::Property(p) => match &p.fget {
                        Value::Function(f) => Some(f),
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(mut attrs) = function.and_then(|f| f.attrs.try_borrow_mut().ok()) {
                    attrs.clear();
                }
            }
            drop(taken);
        }
        for module in modules.values() {
            if let Ok(mut dict) = module.dict.try_borrow_mut() {
                // Taken out first: dropping a value must not find the dict borrowed.
                let taken = std::mem::take(&mut *dict);
                drop(dict);
                drop(taken);
            }
        }
    }
}

impl<'l> Interp<'l> {
    pub(crate) fn new(
        loader: &'l dyn SourceLoader,
        search_roots: Vec<PathBuf>,
        budgets: Budgets,
        models: &'static dyn model::Models,
    ) -> Interp<'l> {
        let ledger = memory::Ledger::open(budgets.max_bytes, budgets.max_elements, budgets.max_time);
        Interp {
            files: Vec::new(),
            loader,
            search_roots,
            shim_roots: Vec::new(),
            modules: Default::default(),
            native_functions: Default::default(),
            frames: Vec::new(),
            diagnostics: Vec::new(),
            budgets,
            steps: 0,
            unknown_loops: 0,
            summary_passes: 0,
            once_guarded: 0,
            unsized_containers: Default::default(),
            loop_depth: 0,
            loop_passes: Vec::new(),
            loop_pass_count: 0,
            loop_mutations: Vec::new(),
            started: CpuInstant::now(),
            ledger,
            jax: JaxState::default(),
            models,
            tf: Default::default(),
            classes: builtins::BuiltinClasses::new(),
            warned: HashMap::default(),
            generators: Vec::new(),
            stdout: String::new(),
            stderr: String::new(),
            stops: Vec::new(),
            uncaught: Vec::new(),
            called: Default::default(),
            repr_depth: 0,
            nesting: 0,
            values: None,
            stdout_unread: false,
            py_random: None,
            py_random_draws: 0,
            abstract_unknowns: true,
            fork_logs: Vec::new(),
            dropped_exits: 0,
            dropped_returns: 0,
            conditional_from: None,
            went_past: 0,
            unknown_recursion: Vec::new(),
            early_returns: Vec::new(),
            loop_exits: Vec::new(),
            kept_loop_exits: 0,
            entry_state: Default::default(),
            seen: Default::default(),
        }
    }

    pub fn add_file(&mut self, path: PathBuf, text: Rc<str>) -> FileId {
        self.add_parsed_file(path, text, None)
    }

    /// `add_file` with the module already parsed from `text` (by an incremental parser).
    pub fn add_parsed_file(&mut self, path: PathBuf, text: Rc<str>, module: Option<crate::syntax::ast::Module>) -> FileId {
        if let Some(id) = self.files.iter().position(|f| f.path == path) {
            return id as FileId;
        }
        let module = Rc::new(module.unwrap_or_else(|| crate::syntax::parse(&text)));
        self.files.push(SourceFile { path, text, line_index: std::cell::OnceCell::new(), module, library: false });
        (self.files.len() - 1) as FileId
    }

    pub fn path(&self, file: FileId) -> &Path {
        &self.files[file as usize].path
    }

    /// The innermost user site: where a modelled library call was made from. Frames of shims
    /// are skipped: what a shim does happens at the user's line that called it.
    pub fn site(&self) -> Option<Site> {
        self.user_frames().next_back().map(|f| Site { file: f.file, span: f.span })
    }

    pub fn set_span(&mut self, span: Span) {
        if let Some(f) = self.frames.last_mut() {
            f.span = span;
        }
    }

    /// Counts one step against the budgets.
    pub fn tick(&mut self) -> PyResult<()> {
        self.steps += 1;
        if self.steps > self.budgets.max_steps {
            return Err(self.stop_budget(format!("the step budget ({} steps) ran out", self.budgets.max_steps)));
        }
        // Every 64 steps: a step can be a whole array kernel (a `grad` of a softmax over 65536
        // elements takes milliseconds), so a coarser check could overrun the time budget by
        // seconds. Reading the clock costs nanoseconds.
        if self.steps % 64 != 0 {
            return Ok(());
        }
        if self.budgets.cancel.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
            return Err(self.stop_budget("cancelled".into()));
        }
        if self.started.elapsed() > self.budgets.max_time {
            return Err(self.stop_budget(format!("the time budget ({} ms) ran out", self.budgets.max_time.as_millis())));
        }
        if self.steps % 256 == 0 {
            self.check_memory()?;
        }
        Ok(())
    }

    pub fn restart_clock(&mut self) {
        self.started = CpuInstant::now();
        self.ledger.restart_clock(self.budgets.max_time);
        self.steps = 0;
    }

    fn stop_budget(&self, why: String) -> Flow {
        Flow::Stop(StopReason::Budget(why), self.site())
    }

    /// Whether `v` is a list or dict changed inside a loop over an unknown (`unsized`).
    pub fn is_unsized(&self, v: &Value) -> bool {
        match v {
            Value::List(l) => self.unsized_containers.contains_key(&(Rc::as_ptr(l) as *const () as usize)),
            Value::Dict(d) => self.unsized_containers.contains_key(&(Rc::as_ptr(d) as *const () as usize)),
            _ => false,
        }
    }

    pub fn stop_unknown(&self, why: impl Into<String>) -> Flow {
        Flow::Stop(StopReason::Unknown(why.into()), self.site())
    }

    pub fn stop_end(&self, why: impl Into<String>) -> Flow {
        Flow::Stop(StopReason::End(why.into()), self.site())
    }

    /// Raises an exception of the named builtin class at the current user site.
    pub fn raise(&self, class: &str, code: Code, message: impl Into<String>) -> Flow {
        let class = self.classes.get(class);
        self.raise_class(class, code, message.into())
    }

    pub fn raise_class(&self, class: Rc<Class>, code: Code, message: String) -> Flow {
        let value = builtins::make_exception_instance(&class, &message);
        self.raise_value(class, value, code, message)
    }

    fn raise_value(&self, class: Rc<Class>, value: Value, code: Code, message: String) -> Flow {
        Flow::Raise(Box::new(PyException {
            value,
            class,
            message,
            code,
            site: self.site(),
            related: Vec::new(),
            traceback: self.traceback(),
            conditional: self.in_conditional_path(),
        }))
    }

    /// The user frames now running, outermost first, for an exception's traceback.
    pub fn traceback(&self) -> Vec<(Rc<str>, Site)> {
        self.user_frames().map(|f| (f.name.clone(), Site { file: f.file, span: f.span })).collect()
    }

    /// `KeyError(key)`: its argument the key itself, its text the key's repr (as Python's).
    pub fn key_error(&mut self, key: &Value) -> PyResult<Flow> {
        let message = self.repr(key)?;
        let class = self.classes.get("KeyError");
        let value = builtins::make_exception_instance(&class, &message);
        if let Value::Instance(inst) = &value {
            inst.attrs.borrow_mut().insert(Rc::from("args"), Value::tuple(vec![key.clone()]));
        }
        Ok(self.raise_value(class, value, Code::PythonException, message))
    }

    pub fn type_error(&self, message: impl Into<String>) -> Flow {
        self.raise("TypeError", Code::PythonException, message)
    }
    pub fn value_error(&self, message: impl Into<String>) -> Flow {
        self.raise("ValueError", Code::PythonException, message)
    }

    /// Reports a warning once per (code, site); later hits only count.
    pub fn warn(&mut self, code: Code, site: Option<Site>, message: String, related: Vec<(Site, String)>) {
        let Some(site) = site else { return };
        let count = self.warned.entry((code, site)).or_insert(0);
        *count += 1;
        if *count > 1 {
            return;
        }
        let diag = self.diagnostic(code, site, message, related);
        self.diagnostics.push(diag);
    }

    pub fn diagnostic(&self, code: Code, site: Site, message: String, related: Vec<(Site, String)>) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.default_severity(),
            path: self.path(site.file).to_path_buf(),
            span: site.span,
            message,
            related: related
                .into_iter()
                .map(|(s, m)| Related { path: self.path(s.file).to_path_buf(), span: s.span, message: m })
                .collect(),
        }
    }

    /// `file:line` for messages, 1-based, as Python prints it.
    pub fn describe_site(&self, site: Site) -> String {
        let f = &self.files[site.file as usize];
        let line = f.line_index().line_of(site.span.start) + 1;
        let name = f.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        format!("{name}:{line}")
    }

    pub fn line_of(&self, site: Site) -> u32 {
        self.files[site.file as usize].line_index().line_of(site.span.start) + 1
    }

    /// Turns a flow that escaped an entry point into a diagnostic.
    pub fn report_uncaught(&mut self, flow: Flow, entry: &str) {
        match flow {
            Flow::Raise(exc) if self.abstract_unknowns && exc.conditional && exc.code == Code::PythonException => {
                self.stops.push((exc.site, format!("{entry}: {} on a path taken past an unknown, not reported", exc.class.name)));
            }
            Flow::Raise(exc) => {
                let Some(site) = exc.site else { return };
                let message =
                    if exc.message.is_empty() { exc.class.name.to_string() } else { format!("{}: {}", exc.class.name, exc.message) };
                let related = exc.related.clone();
                let mut diag = self.diagnostic(exc.code, site, message, related);
                diag.severity = Severity::Error;
                self.uncaught.push((site, exc.traceback.iter().map(|(_, s)| *s).collect()));
                if !self.diagnostics.contains(&diag) {
                    self.diagnostics.push(diag);
                }
            }
            Flow::Stop(reason, site) => {
                let (why, severity) = match reason {
                    StopReason::Budget(why) => (why, Severity::Info),
                    StopReason::Unknown(why) | StopReason::End(why) => {
                        self.stops.push((site, format!("{entry} not analysed past this point: {why}")));
                        return;
                    }
                };
                if let Some(site) = site {
                    let message = format!("not analysed past this point in {entry}: {why}");
                    let mut diag = self.diagnostic(Code::NotAnalysed, site, message, Vec::new());
                    diag.severity = severity;
                    self.diagnostics.push(diag);
                }
            }
            Flow::Return(_) | Flow::Break | Flow::Continue => {}
        }
    }
}
