//! Imports: project-local modules found through the loader, modelled library modules (JAX,
//! NumPy and the standard library a numeric program uses), and opaque modules for the rest.
//!
//! Size: `call_stdlib` (~385 lines) is one arm per modelled standard-library function; a table per
//! module, as `interp/stdlib/` has for names, would split it.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::interp::value::IndexMap;

use crate::diagnostics::Code;
use crate::interp::model::dtypes::DType;
use crate::interp::model::surface::JaxFn;

use super::builtins::Builtin;
use super::call::Kwargs;
use super::value::{Class, Dict, HashKey, ModuleObj, PyIter, Value};
use super::{Ctx, Interp, PyResult};

/// A module whose attributes come from the model rather than from source.
#[derive(Clone, Debug, PartialEq)]
pub enum NativeModule {
    Jax(&'static str),
    Numpy(&'static str),
    Std(&'static str),
    /// A module of TensorFlow's API (`crate::tf`).
    Tf(&'static str),
    /// A module we do not model (flax, optax, os, ...): every attribute is opaque.
    Opaque(String),
}

const JAX_MODULES: &[&str] = &[
    "jax",
    "jax.numpy",
    "jax.lax",
    "jax.random",
    "jax.nn",
    "jax.tree_util",
    "jax.tree",
    "jax.debug",
    "jax.scipy",
    "jax.scipy.special",
    "jax.scipy.stats",
    "jax.scipy.stats.norm",
    "jax.ops",
    "jax.numpy.linalg",
    "jax.scipy.linalg",
    "jax.lax.linalg",
    "jax.config",
    "jax.typing",
    "jax.dtypes",
    "jax.export",
    "jax.core",
    // Only so that the names JAX 0.10.2 no longer has raise; the rest of it is unknown.
    "jax.experimental",
];

/// Names JAX 0.10.2 no longer has, which older code still uses: reading one is Python's
/// AttributeError (`from ... import` of one, ImportError), as under the real JAX.
const REMOVED_FROM_JAX: &[(&str, &str)] = &[("jax.experimental", "enable_x64"), ("jax.experimental", "disable_x64")];
const NUMPY_MODULES: &[&str] = &["numpy", "numpy.random", "numpy.linalg", "numpy.testing"];
const STD_MODULES: &[&str] = &[
    "math",
    "functools",
    "itertools",
    "random",
    "time",
    "dataclasses",
    "typing",
    "collections",
    "collections.abc",
    "operator",
    "abc",
    "typing_extensions",
    "__future__",
    "enum",
    "warnings",
    "logging",
    "sys",
    "os",
    "os.path",
    "types",
];

fn native_module(name: &str) -> Option<NativeModule> {
    if let Some(n) = JAX_MODULES.iter().find(|n| **n == name) {
        return Some(NativeModule::Jax(n));
    }
    if let Some(n) = crate::interp::model::tf::TF_MODULES.iter().find(|n| **n == name) {
        return Some(NativeModule::Tf(n));
    }
    if let Some(n) = NUMPY_MODULES.iter().find(|n| **n == name) {
        return Some(NativeModule::Numpy(n));
    }
    if let Some(n) = STD_MODULES.iter().find(|n| **n == name) {
        return Some(NativeModule::Std(n));
    }
    None
}

fn module_value(interp: &mut Interp, name: &str, native: NativeModule) -> Value {
    if let Some(m) = interp.modules.get(name) {
        return Value::Module(m.clone());
    }
    let m = Rc::new(ModuleObj { name: name.to_string(), file: None, dict: RefCell::new(IndexMap::default()), native: Some(native) });
    interp.modules.insert(name.to_string(), m.clone());
    Value::Module(m)
}

impl<'l> Interp<'l> {
    /// `import a.b.c` (level 0) or `from ..a import b` (level 2): the module `a.b.c`.
    ///
    /// As CPython 3: absolute imports search `sys_path` only (never the importing file's
    /// folder), a dotted name imports its parents first and becomes an attribute of its
    /// parent, folders without `__init__.py` are namespace packages, and a module being
    /// initialised (a circular import) is returned as it stands.
    pub(super) fn import_module(&mut self, ctx: &Ctx, dotted: &str, level: u32) -> PyResult<Value> {
        if level > 0 {
            return self.import_relative(ctx, dotted, level);
        }
        if let Some(m) = self.modules.get(dotted) {
            return Ok(Value::Module(m.clone()));
        }
        if let Some(n) = native_module(dotted) {
            return Ok(module_value(self, dotted, n));
        }
        if let Some((parent, _)) = dotted.rsplit_once('.') {
            // `import a.b` runs `a/__init__.py` first.
            self.import_module(ctx, parent, 0)?;
        }
        if let Some(found) = self.import_from_path(dotted) {
            return found;
        }
        Ok(module_value(self, dotted, NativeModule::Opaque(dotted.to_string())))
    }

    /// A bundled shim module by its import path (`_tracelens_tf`), for the native models
    /// that keep part of a library in Python; `None` when it cannot be loaded.
    pub fn import_shim(&mut self, dotted: &str) -> Option<Value> {
        if let Some(m) = self.modules.get(dotted) {
            return Some(Value::Module(m.clone()));
        }
        self.import_from_path(dotted)?.ok()
    }

    /// The module `dotted` from a file under one of the `sys_path` folders, if there is one.
    fn import_from_path(&mut self, dotted: &str) -> Option<PyResult<Value>> {
        let rel: PathBuf = dotted.split('.').filter(|s| !s.is_empty()).collect();
        // Not in the project: a shim of the library, the user's before the bundled ones.
        let roots: Vec<PathBuf> = self.sys_path().into_iter().chain(self.shim_search_roots()).collect();
        for root in roots {
            for candidate in [root.join(&rel).with_extension("py"), root.join(&rel).join("__init__.py")] {
                if let Some(found) = self.load_module_file(&candidate, dotted, Some(&root), false) {
                    if let (Ok(Value::Module(child)), Some((parent, leaf))) = (&found, dotted.rsplit_once('.')) {
                        // CPython binds a submodule as an attribute of its package.
                        if let Some(p) = self.modules.get(parent) {
                            p.dict.borrow_mut().insert(Rc::from(leaf), Value::Module(child.clone()));
                        }
                    }
                    return Some(found);
                }
            }
        }
        None
    }

    /// Python's `sys.path` for this analysis: the entry script's folder (or, when that folder
    /// is itself a package, the folder its top package is in), then the configured search
    /// roots likewise, each followed by its `src/` folder (the src layout).
    fn sys_path(&self) -> Vec<PathBuf> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(entry) = self.files.first().and_then(|f| f.path.parent()) {
            candidates.push(entry.to_path_buf());
        }
        candidates.extend(self.search_roots.iter().cloned());
        let mut roots: Vec<PathBuf> = Vec::new();
        for dir in candidates {
            let root = self.package_root(dir);
            for r in [root.join("src"), root] {
                if !roots.contains(&r) {
                    roots.push(r);
                }
            }
        }
        // `src/` goes after its folder.
        roots.sort_by_key(|r| r.ends_with("src"));
        roots
    }

    /// The folder above the outermost package that holds `dir` (`dir` itself when it is not
    /// a package).
    fn package_root(&self, mut dir: PathBuf) -> PathBuf {
        for _ in 0..64 {
            if self.loader.read(&dir.join("__init__.py")).is_none() {
                break;
            }
            match dir.parent() {
                Some(parent) => dir = parent.to_path_buf(),
                None => break,
            }
        }
        dir
    }

    /// The dotted name CPython gives the module file `path` inside a package
    /// (`pkg/_solver/optax.py` is `pkg._solver.optax`), so that a relative import never
    /// takes a top-level name (`optax`) that an absolute import of a library means. `None`
    /// when the file's folder is not a package.
    fn package_module_name(&self, path: &Path) -> Option<String> {
        let dir = path.parent()?;
        let root = self.package_root(dir.to_path_buf());
        if root == dir {
            return None;
        }
        let rel = path.strip_prefix(&root).ok()?.with_extension("");
        let mut parts: Vec<&str> = rel.iter().map(|c| c.to_str()).collect::<Option<_>>()?;
        if parts.last() == Some(&"__init__") {
            parts.pop();
        }
        parts.iter().all(|p| !p.is_empty() && !p.contains('.')).then(|| parts.join("."))
    }

    /// Runs the file at `path` as the module `name`, once; `None` if there is no such file.
    /// A module already loaded (or being initialised, in a circular import) is returned as is.
    /// `root` is the `sys.path` folder it was found under; a file found under a shim folder,
    /// or relative to a shim (`relative_to_library`), is library code.
    fn load_module_file(&mut self, path: &Path, name: &str, root: Option<&Path>, relative_to_library: bool) -> Option<PyResult<Value>> {
        let key = path.to_string_lossy().to_string();
        if let Some(m) = self.modules.get(&key) {
            return Some(Ok(Value::Module(m.clone())));
        }
        if let Some(id) = self.files.iter().position(|f| f.path == path) {
            // The file run as `__main__`, imported under its own name (a package's
            // `__init__.py` importing its package): CPython runs it again as a new module.
            let loaded = self
                .modules
                .values()
                .find(|m| m.file == Some(id as super::FileId) && (m.name != "__main__" || name == "__main__"))
                .cloned();
            if let Some(m) = loaded {
                return Some(Ok(Value::Module(m)));
            }
        }
        let text = self.read_source(path)?;
        if crate::syntax::punctuation_marks_over(&text, self.budgets.max_source_marks).is_some() {
            // Too large to parse within the budget: an unknown module, as a library that is
            // not modelled (its attributes are unknown values, never missing ones).
            return Some(Ok(module_value(self, name, NativeModule::Opaque(name.to_string()))));
        }
        let file = self.add_file(path.to_path_buf(), text);
        self.mark_library_if_shim(file, root.unwrap_or(Path::new("")), relative_to_library);
        let (module, flow) = self.run_module(file, name);
        self.modules.insert(key, module.clone());
        Some(match flow {
            // The imported module raised: in Python the import fails with it.
            Some(flow) => Err(flow),
            None => Ok(Value::Module(module)),
        })
    }

    /// `from . import a`, `from ..b import c`: relative to the importing file's package.
    fn import_relative(&mut self, ctx: &Ctx, dotted: &str, level: u32) -> PyResult<Value> {
        if let Some(absolute) = self.main_relative_as_absolute(ctx, dotted, level) {
            return self.import_module(ctx, &absolute, 0);
        }
        let mut dir = self.path(ctx.file).parent().map(Path::to_path_buf);
        for _ in 1..level {
            dir = dir.and_then(|d| d.parent().map(Path::to_path_buf));
        }
        let Some(base) = dir else {
            return Ok(module_value(self, dotted, NativeModule::Opaque(dotted.to_string())));
        };
        let rel: PathBuf = dotted.split('.').filter(|s| !s.is_empty()).collect();
        for candidate in [base.join(&rel).with_extension("py"), base.join(&rel).join("__init__.py")] {
            if dotted.is_empty() && !candidate.ends_with("__init__.py") {
                continue;
            }
            let name = if dotted.is_empty() {
                candidate.to_string_lossy().to_string()
            } else {
                self.package_module_name(&candidate).unwrap_or_else(|| dotted.to_string())
            };
            let relative_to_library = self.is_library(ctx.file);
            if let Some(found) = self.load_module_file(&candidate, &name, None, relative_to_library) {
                // CPython binds a submodule as an attribute of its package (`pkg._solver`
                // after `from ._solver import X` in `pkg/__init__.py`).
                if let (Ok(Value::Module(child)), Some((parent, leaf))) = (&found, name.rsplit_once('.')) {
                    if let Some(p) = self.modules.get(parent) {
                        p.dict.borrow_mut().entry(Rc::from(leaf)).or_insert_with(|| Value::Module(child.clone()));
                    }
                }
                return found;
            }
        }
        // A namespace package (no `__init__.py`): a module whose attributes are its files.
        let key = base.join(&rel).to_string_lossy().to_string();
        if let Some(m) = self.modules.get(&key) {
            return Ok(Value::Module(m.clone()));
        }
        let m = Rc::new(ModuleObj { name: key.clone(), file: None, dict: RefCell::new(IndexMap::default()), native: None });
        m.dict.borrow_mut().insert(Rc::from("__path__"), Value::str(&key));
        self.modules.insert(key, m.clone());
        Ok(Value::Module(m))
    }

    /// A relative import in the checked file itself (`__main__`) when its folder is a
    /// package: the file is a module of that package, which only runs as such (`python -m
    /// pkg.mod`, or imported; `python pkg/mod.py` refuses relative imports), so the import
    /// is resolved against the package as `-m` would, by its absolute name. Resolving it
    /// by folder instead would load the sibling under a second name, a copy the package's
    /// own imports later meet half-run. `None` outside a package, or past its top.
    fn main_relative_as_absolute(&self, ctx: &Ctx, dotted: &str, level: u32) -> Option<String> {
        if ctx.globals.name != "__main__" {
            return None;
        }
        let dir = self.path(ctx.file).parent()?.to_path_buf();
        let root = self.package_root(dir.clone());
        let mut parts: Vec<String> =
            dir.strip_prefix(&root).ok()?.components().map(|c| c.as_os_str().to_string_lossy().to_string()).collect();
        for _ in 1..level {
            parts.pop();
        }
        if parts.is_empty() {
            return None;
        }
        if !dotted.is_empty() {
            parts.push(dotted.to_string());
        }
        Some(parts.join("."))
    }

    pub(super) fn resolve_submodule(&mut self, m: &Value, _dotted: &str) -> Value {
        m.clone()
    }

    pub(super) fn import_from(&mut self, ctx: &Ctx, m: &Value, modname: &str, level: u32, name: &str) -> PyResult<Value> {
        // A name of a module found on the path is looked up before the module's attributes
        // when the module is a namespace package or not modelled (it has no attribute list).
        let not_modelled = matches!(m, Value::Module(mo) if mo.native.as_ref().is_some_and(|n| matches!(n, NativeModule::Opaque(_))));
        if not_modelled && level == 0 {
            let sub = if modname.is_empty() { name.to_string() } else { format!("{modname}.{name}") };
            if let Some(found) = self.import_from_path(&sub) {
                return found;
            }
        }
        // A shim's missing names are opaque (`module_getattr`), but a submodule comes first.
        let shim_submodule =
            matches!(m, Value::Module(mo) if mo.file.is_some_and(|f| self.is_library(f)) && !mo.dict.borrow().contains_key(name));
        if !shim_submodule {
            if let Some(v) = self.getattr_opt(m, name)? {
                return Ok(v);
            }
        }
        let sub = if modname.is_empty() { name.to_string() } else { format!("{modname}.{name}") };
        let v = self.import_module(ctx, &sub, level)?;
        if let Value::Module(mo) = &v {
            if matches!(mo.native, Some(NativeModule::Opaque(_))) {
                if shim_submodule {
                    return Ok(Value::opaque(format!("{sub}")));
                }
                if let Value::Module(parent) = m {
                    // A package's folder may hold a compiled submodule tracelens cannot read.
                    let package = parent.file.is_some_and(|f| self.path(f).ends_with("__init__.py"));
                    if package {
                        return Ok(Value::opaque(format!("{sub}")));
                    }
                    if parent.native.is_none() && !parent.dict.borrow().contains_key("__path__") {
                        // CPython: the name is not (yet, in a circular import) bound in the module.
                        return Err(self.raise(
                            "ImportError",
                            Code::PythonException,
                            format!("cannot import name '{name}' from '{}'", parent.name),
                        ));
                    }
                }
            }
        }
        Ok(v)
    }

    /// `from m import *`: the names in `m.__all__`, or else every public name (no leading
    /// underscore). A module whose names are not known (not modelled) is remembered, and a
    /// name the program does not define is then looked up in it (`star_imported_name`).
    pub(super) fn import_star(&mut self, ctx: &Ctx, m: &Value) -> PyResult<()> {
        let Value::Module(mo) = m else { return Ok(()) };
        let all = mo.dict.borrow().get("__all__").cloned();
        let names: Vec<Rc<str>> = match (&all, &mo.native) {
            (Some(all @ (Value::List(_) | Value::Tuple(_))), _) => {
                let mut names = Vec::new();
                for n in self.iterate(all)? {
                    if let Value::Str(n) = n {
                        names.push(n);
                    }
                }
                names
            }
            (_, Some(NativeModule::Std(module))) if super::stdlib::public_names(module).is_some() => {
                super::stdlib::public_names(module).unwrap_or_default().into_iter().map(Rc::from).collect()
            }
            (_, Some(_)) => {
                let mut star = ctx
                    .globals
                    .dict
                    .borrow()
                    .get(STAR_MODULES)
                    .cloned()
                    .map(|v| if let Value::Tuple(t) = v { (*t).clone() } else { Vec::new() })
                    .unwrap_or_default();
                star.push(m.clone());
                ctx.globals.dict.borrow_mut().insert(Rc::from(STAR_MODULES), Value::tuple(star));
                Vec::new()
            }
            _ => mo.dict.borrow().keys().filter(|k| !k.starts_with('_')).cloned().collect(),
        };
        for name in names {
            let v = self.getattr(m, &name)?;
            self.store_name(ctx, &name, v, None)?;
        }
        Ok(())
    }

    /// A global the program does not define, found in a module it star-imported whose names
    /// tracelens does not list (`from jax.numpy import *`, `from somelib import *`).
    pub(super) fn star_imported_name(&mut self, ctx: &Ctx, name: &str) -> PyResult<Option<Value>> {
        let Some(Value::Tuple(modules)) = ctx.globals.dict.borrow().get(STAR_MODULES).cloned() else { return Ok(None) };
        for m in modules.iter() {
            if let Some(v) = self.getattr_opt(m, name)? {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }
}

/// The global holding the modules `from m import *` took names from that are not listed.
const STAR_MODULES: &str = "__tracelens_star_modules__";

fn b(name: &'static str) -> Value {
    Value::Builtin(Rc::new(Builtin::Fn(name)))
}

fn jaxfn(f: JaxFn) -> Value {
    Value::Builtin(Rc::new(Builtin::Jax(f)))
}

/// `jnp.float32`, `np.bool_`: a dtype by its numpy name, or NumPy's scalar type `bool_`.
fn dtype_attr(name: &str) -> Option<DType> {
    if name == "bool_" {
        return Some(DType::Bool);
    }
    DType::from_numpy_name(name)
}

pub fn module_getattr(interp: &mut Interp, m: &Rc<ModuleObj>, name: &str) -> PyResult<Option<Value>> {
    if let Some(v) = m.dict.borrow().get(name) {
        return Ok(Some(v.clone()));
    }
    let Some(native) = m.native.clone() else {
        // A shim models part of a library's surface: the rest of it is unknown, not missing.
        if m.file.is_some_and(|f| interp.is_library(f)) {
            return Ok(Some(Value::opaque(format!("{}.{name}", m.name))));
        }
        return Ok(None);
    };
    if let Some(v) = interp.native_functions.get(&Rc::as_ptr(m)).and_then(|functions| functions.get(name)) {
        return Ok(Some(v.clone()));
    }
    let sub = format!("{}.{name}", m.name);
    Ok(Some(match native {
        NativeModule::Opaque(_) => Value::opaque(format!("{}.{name}", m.name)),
        NativeModule::Jax(module) => {
            if let Some(n) = native_module(&sub) {
                let v = module_value(interp, &sub, n);
                interp.native_functions.entry(Rc::as_ptr(m)).or_default().insert(name.into(), v.clone());
                return Ok(Some(v));
            }
            if REMOVED_FROM_JAX.contains(&(module, name)) {
                return Ok(None);
            }
            let lookup_module = if module == "jax.config" { "jax.config" } else { module };
            if let Some(f) = JaxFn::lookup(lookup_module, name) {
                let v = jaxfn(f);
                interp.native_functions.entry(Rc::as_ptr(m)).or_default().insert(name.into(), v.clone());
                return Ok(Some(v));
            }
            if module == "jax" && name == "config" {
                return Ok(Some(module_value(interp, "jax.config", NativeModule::Jax("jax.config"))));
            }
            if let Some(d) = dtype_attr(name) {
                if module == "jax.numpy" {
                    return Ok(Some(Value::DType(d)));
                }
            }
            if let Some(v) = super::dtype_hierarchy::attr(module, name).or_else(|| super::dtype_info::attr(module, name)) {
                return Ok(Some(v));
            }
            match (module, name) {
                ("jax.numpy", "pi") => Value::Float(std::f64::consts::PI),
                ("jax.numpy", "e") => Value::Float(std::f64::consts::E),
                ("jax.numpy", "inf") => Value::Float(f64::INFINITY),
                ("jax.numpy", "nan") => Value::Float(f64::NAN),
                ("jax.numpy", "newaxis") => Value::None,
                ("jax.numpy", "ndarray") => jaxfn(JaxFn::ArrayType),
                ("jax.numpy", "float_") => {
                    Value::DType(crate::interp::model::dtypes::default_float(crate::interp::model::state::dtype_config(interp)))
                }
                ("jax.numpy", "int_") => {
                    Value::DType(crate::interp::model::dtypes::default_int(crate::interp::model::state::dtype_config(interp)))
                }
                ("jax.numpy", "sqrt" | "dot") => return Ok(None),
                ("jax.config", "jax_enable_x64") => Value::Bool(crate::interp::model::state::dtype_config(interp).enable_x64),
                ("jax.scipy.special", "logsumexp") => jaxfn(JaxFn::ScipyLogsumexp),
                ("jax.nn", "initializers") => Value::opaque("jax.nn.initializers"),
                _ => Value::opaque(format!("{}.{name}", m.name)),
            }
        }
        NativeModule::Tf(module) => {
            if let Some(n) = native_module(&sub) {
                return Ok(Some(module_value(interp, &sub, n)));
            }
            match crate::interp::model::tf::module_attr(interp, module, name) {
                Some(v) => {
                    interp.native_functions.entry(Rc::as_ptr(m)).or_default().insert(name.into(), v.clone());
                    v
                }
                None => Value::opaque(format!("{}.{name}", m.name)),
            }
        }
        NativeModule::Numpy(module) => {
            if let Some(n) = native_module(&sub) {
                let v = module_value(interp, &sub, n);
                interp.native_functions.entry(Rc::as_ptr(m)).or_default().insert(name.into(), v.clone());
                return Ok(Some(v));
            }
            if let Some(d) = dtype_attr(name) {
                return Ok(Some(Value::DType(d)));
            }
            if let Some(v) = super::dtype_hierarchy::attr(module, name).or_else(|| super::dtype_info::attr(module, name)) {
                return Ok(Some(v));
            }
            match (module, name) {
                ("numpy", "pi") => Value::Float(std::f64::consts::PI),
                ("numpy", "e") => Value::Float(std::f64::consts::E),
                ("numpy", "inf") => Value::Float(f64::INFINITY),
                ("numpy", "nan") => Value::Float(f64::NAN),
                ("numpy", "newaxis") => Value::None,
                // NumPy functions that jax.numpy mirrors are modelled with NumPy's semantics.
                ("numpy", n) if JaxFn::lookup("jax.numpy", n).is_some() || super::numpy_on_jax::CONVERTS_UNMODELLED.contains(&n) => {
                    b(intern(format!("numpy.{n}")))
                }
                ("numpy.linalg", n) if JaxFn::lookup("jax.numpy.linalg", n).is_some() => b(intern(format!("numpy.linalg.{n}"))),
                ("numpy.random", n) => match NUMPY_RANDOM_FNS.iter().find(|x| x.ends_with(&format!(".{n}"))) {
                    Some(q) => b(q),
                    None => Value::opaque(format!("numpy.random.{n}")),
                },
                _ => Value::opaque(format!("{}.{name}", m.name)),
            }
        }
        NativeModule::Std(module) => {
            if let Some(loaded) = interp.modules.get(&sub) {
                return Ok(Some(Value::Module(loaded.clone())));
            }
            if let Some(n) = native_module(&sub) {
                return Ok(Some(module_value(interp, &sub, n)));
            }
            // A name CPython's module does not have is Python's AttributeError.
            if !name.starts_with("__") && super::stdlib::module_has(module, name) == Some(false) {
                return Ok(None);
            }
            std_attr(interp, module, name)
        }
    }))
}

fn std_attr(interp: &mut Interp, module: &'static str, name: &str) -> Value {
    let known: &[&'static str] = match module {
        "math" => &[
            "sqrt",
            "exp",
            "log",
            "log2",
            "log10",
            "sin",
            "cos",
            "tan",
            "tanh",
            "atan",
            "atan2",
            "floor",
            "ceil",
            "fabs",
            "pow",
            "isnan",
            "isinf",
            "isfinite",
            "prod",
            "hypot",
            "gcd",
            "isclose",
            "factorial",
            "comb",
            "erf",
            "trunc",
            "fsum",
            "copysign",
            "log1p",
            "expm1",
            "degrees",
            "radians",
            "asin",
            "acos",
            "sinh",
            "cosh",
            "lcm",
        ],
        "functools" => &["partial", "reduce", "wraps", "lru_cache", "cache", "cached_property", "total_ordering"],
        "itertools" => &[
            "count",
            "chain",
            "product",
            "repeat",
            "islice",
            "accumulate",
            "combinations",
            "permutations",
            "cycle",
            "zip_longest",
            "starmap",
            "pairwise",
        ],
        "random" => &["random", "uniform", "randint", "choice", "gauss", "normalvariate", "seed", "shuffle", "sample", "randrange"],
        "time" => &["time", "perf_counter", "monotonic", "sleep", "process_time", "time_ns"],
        "dataclasses" => &["dataclass", "field", "replace", "asdict", "astuple", "fields", "is_dataclass"],
        "typing" | "typing_extensions" => {
            &["NamedTuple", "cast", "overload", "final", "runtime_checkable", "TypeVar", "Generic", "ClassVar"]
        }
        "collections" => &["namedtuple", "OrderedDict", "defaultdict", "deque", "Counter"],
        "collections.abc" => COLLECTIONS_ABC,
        "operator" => &["add", "mul", "sub", "truediv", "getitem", "itemgetter", "attrgetter", "neg", "matmul"],
        "abc" => &["ABC", "abstractmethod", "ABCMeta"],
        "warnings" => &["warn", "filterwarnings", "simplefilter", "catch_warnings"],
        "logging" => &["info", "warning", "warn", "debug", "error", "exception", "critical", "fatal", "log", "getLogger", "basicConfig"],
        _ => &[],
    };
    match (module, name) {
        ("math", "pi") => return Value::Float(std::f64::consts::PI),
        ("math", "e") => return Value::Float(std::f64::consts::E),
        ("math", "inf") => return Value::Float(f64::INFINITY),
        ("math", "nan") => return Value::Float(f64::NAN),
        ("math", "tau") => return Value::Float(std::f64::consts::TAU),
        ("typing" | "typing_extensions", "NamedTuple") => return Value::Class(interp.classes.get("NamedTuple")),
        ("abc", "ABC") => return Value::Class(interp.classes.get("object")),
        ("typing" | "typing_extensions", "TYPE_CHECKING") => return Value::Bool(false),
        ("enum", "Enum" | "IntEnum" | "StrEnum" | "Flag" | "IntFlag" | "ReprEnum") => return Value::Class(interp.classes.get("Enum")),
        // tracelens models CPython 3.11 on Linux.
        ("sys", "version_info") => return version_info(interp),
        ("sys", "platform") => return Value::str("linux"),
        ("sys", "maxsize") => return Value::Int(i64::MAX),
        ("sys", "byteorder") => return Value::str("little"),
        ("sys", "exit") => return b("exit"),
        ("sys", "stdout" | "__stdout__") => return super::streams::Stream::Stdout.value(),
        ("sys", "stderr" | "__stderr__") => return super::streams::Stream::Stderr.value(),
        ("os", "name") => return Value::str("posix"),
        ("os" | "os.path", "sep") => return Value::str("/"),
        ("os", "linesep") => return Value::str("\n"),
        ("logging", level) => {
            if let Some(n) = logging_level(level) {
                return Value::Int(n);
            }
        }
        _ => {}
    }
    match known.iter().find(|n| **n == name) {
        Some(n) => b(intern(format!("{module}.{n}"))),
        None => Value::opaque(format!("{module}.{name}")),
    }
}

/// The abstract base classes of `collections.abc` that `isinstance` answers for the builtin
/// types (`Interp::isinstance`); the rest of the module is unknown.
const COLLECTIONS_ABC: &[&str] =
    &["Mapping", "MutableMapping", "Sequence", "MutableSequence", "Iterable", "Collection", "Sized", "Container", "Set", "Callable"];

/// Interns qualified names so repeated lookups do not leak: one `&'static str` per name.
fn intern(s: String) -> &'static str {
    thread_local! {
        static NAMES: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if let Some(n) = names.iter().find(|n| **n == s) {
            return *n;
        }
        // Bounded: one leaked string per distinct modelled name, and the names are a fixed list.
        let leaked: &'static str = Box::leak(s.into_boxed_str());
        names.push(leaked);
        leaked
    })
}

/// Calls a modelled standard-library or NumPy function by qualified name.
pub fn call_stdlib(interp: &mut Interp, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
    let kw = |k: &str| kwargs.iter().find(|(n, _)| n.as_ref() == k).map(|(_, v)| v.clone());
    if let Some(np) = name.strip_prefix("numpy.") {
        return call_numpy(interp, np, args, kwargs);
    }
    let (module, func) = name.split_once('.').unwrap_or(("", name));
    match module {
        "math" => {
            if let Some(Value::Array(a)) = args.iter().find(|a| matches!(a, Value::Array(_))) {
                let a = a.clone();
                crate::interp::model::numpy::array_to_float(interp, &a)?;
            }
            let x = super::ops::as_f64(&arg(0));
            let y = super::ops::as_f64(&arg(1));
            let Some(x) = x.or(if matches!(func, "prod" | "fsum" | "gcd" | "lcm") { Some(0.0) } else { None }) else {
                return Ok(Value::opaque(format!("math.{func}")));
            };
            Ok(match func {
                "sqrt" => {
                    if x < 0.0 {
                        return Err(interp.value_error("math domain error"));
                    }
                    Value::Float(x.sqrt())
                }
                "exp" => Value::Float(x.exp()),
                "log" => {
                    if x <= 0.0 {
                        return Err(interp.value_error("math domain error"));
                    }
                    match y {
                        Some(base) => Value::Float(x.ln() / base.ln()),
                        None => Value::Float(x.ln()),
                    }
                }
                "log2" => Value::Float(x.log2()),
                "log10" => Value::Float(x.log10()),
                "log1p" => Value::Float(x.ln_1p()),
                "expm1" => Value::Float(x.exp_m1()),
                "sin" => Value::Float(x.sin()),
                "cos" => Value::Float(x.cos()),
                "tan" => Value::Float(x.tan()),
                "asin" => Value::Float(x.asin()),
                "acos" => Value::Float(x.acos()),
                "atan" => Value::Float(x.atan()),
                "sinh" => Value::Float(x.sinh()),
                "cosh" => Value::Float(x.cosh()),
                "tanh" => Value::Float(x.tanh()),
                "atan2" => Value::Float(x.atan2(y.unwrap_or(1.0))),
                "hypot" => Value::Float(x.hypot(y.unwrap_or(0.0))),
                "floor" => Value::Int(x.floor() as i64),
                "ceil" => Value::Int(x.ceil() as i64),
                "trunc" => Value::Int(x.trunc() as i64),
                "fabs" => Value::Float(x.abs()),
                "pow" => Value::Float(x.powf(y.unwrap_or(1.0))),
                "copysign" => Value::Float(x.copysign(y.unwrap_or(1.0))),
                "degrees" => Value::Float(x.to_degrees()),
                "radians" => Value::Float(x.to_radians()),
                "isnan" => Value::Bool(x.is_nan()),
                "isinf" => Value::Bool(x.is_infinite()),
                "isfinite" => Value::Bool(x.is_finite()),
                "isclose" => Value::Bool((x - y.unwrap_or(0.0)).abs() <= 1e-9 * x.abs().max(y.unwrap_or(0.0).abs())),
                "erf" => return Ok(Value::opaque("math.erf")),
                "factorial" => Value::Int((1..=(x as i64).max(0)).try_fold(1i64, |a, b| a.checked_mul(b)).unwrap_or(0)),
                "gcd" => {
                    let (mut a, mut c) = (super::ops::as_int(&arg(0)).unwrap_or(0).abs(), super::ops::as_int(&arg(1)).unwrap_or(0).abs());
                    while c != 0 {
                        (a, c) = (c, a % c);
                    }
                    Value::Int(a)
                }
                "prod" | "fsum" => {
                    let items = interp.iterate(&arg(0))?;
                    let mut acc = if func == "prod" { Value::Int(1) } else { Value::Float(0.0) };
                    let op = if func == "prod" { crate::syntax::ast::BinOp::Mul } else { crate::syntax::ast::BinOp::Add };
                    for x in items {
                        acc = interp.binary_op(op, acc, x)?;
                    }
                    acc
                }
                _ => Value::opaque(format!("math.{func}")),
            })
        }
        "functools" => match func {
            "partial" => {
                let f = arg(0);
                Ok(Value::Builtin(Rc::new(Builtin::partial(f, args[1.min(args.len())..].to_vec(), kwargs))))
            }
            "reduce" => {
                let f = arg(0);
                let items = interp.iterate(&arg(1))?;
                let mut it = items.into_iter();
                let mut acc = match args.get(2) {
                    Some(init) => init.clone(),
                    None => match it.next() {
                        Some(x) => x,
                        None => return Err(interp.type_error("reduce() of empty iterable with no initial value")),
                    },
                };
                for x in it {
                    acc = interp.call(&f, vec![acc, x], Vec::new())?;
                }
                Ok(acc)
            }
            "wraps" => Ok(b("functools.identity_decorator")),
            "lru_cache" | "cache" => {
                if matches!(arg(0), Value::Function(_)) {
                    Ok(arg(0))
                } else {
                    Ok(b("functools.identity_decorator"))
                }
            }
            "identity_decorator" => Ok(arg(0)),
            "cached_property" => Ok(Value::Property(Rc::new(super::value::Property { fget: arg(0), fset: None }))),
            "total_ordering" => Ok(arg(0)),
            _ => Ok(Value::opaque(name.to_string())),
        },
        "itertools" => {
            let seq = |items: Vec<Value>| {
                Value::Iterator(Rc::new(RefCell::new(PyIter::Seq { items: Rc::new(items), pos: 0, kind: "itertools" })))
            };
            match func {
                "count" => Ok(Value::Iterator(Rc::new(RefCell::new(PyIter::Count {
                    next: args.first().cloned().unwrap_or(Value::Int(0)),
                    step: args.get(1).cloned().unwrap_or(Value::Int(1)),
                })))),
                "chain" => Ok(interp.make_lazy(super::lazy_iter::Lazy::Chain { iterables: args.to_vec(), at: 0, current: None })),
                "repeat" => match args.get(1).and_then(super::ops::as_int) {
                    Some(n) => Ok(seq(vec![arg(0); n.clamp(0, 1_000_000) as usize])),
                    None => Ok(Value::Iterator(Rc::new(RefCell::new(PyIter::Count { next: arg(0), step: Value::Int(0) }))))
                        .map(|_| Value::opaque("itertools.repeat")),
                },
                "islice" => {
                    let it = interp.get_iter(&arg(0))?;
                    let (start, stop) = match (args.get(1), args.get(2)) {
                        (Some(s), None) => (0, super::ops::as_int(s).unwrap_or(0)),
                        (Some(a), Some(s)) => (super::ops::as_int(a).unwrap_or(0), super::ops::as_int(s).unwrap_or(0)),
                        _ => (0, 0),
                    };
                    let mut out = Vec::new();
                    let mut i = 0;
                    while i < stop {
                        interp.tick()?;
                        match interp.next_item(&it)? {
                            Some(x) => {
                                if i >= start {
                                    out.push(x);
                                }
                            }
                            None => break,
                        }
                        i += 1;
                    }
                    Ok(seq(out))
                }
                "product" => {
                    let mut pools = Vec::new();
                    for a in &args {
                        pools.push(interp.iterate(a)?);
                    }
                    let mut out: Vec<Vec<Value>> = vec![Vec::new()];
                    for pool in pools {
                        let mut next = Vec::new();
                        for prefix in &out {
                            for x in &pool {
                                let mut p = prefix.clone();
                                p.push(x.clone());
                                next.push(p);
                                if next.len() > 1_000_000 {
                                    return Err(interp.stop_unknown("a very large itertools.product"));
                                }
                            }
                        }
                        out = next;
                    }
                    Ok(seq(out.into_iter().map(Value::tuple).collect()))
                }
                "accumulate" => {
                    let items = interp.iterate(&arg(0))?;
                    let mut out = Vec::new();
                    let mut acc: Option<Value> = None;
                    for x in items {
                        let next = match acc.take() {
                            None => x,
                            Some(a) => match args.get(1) {
                                Some(f) => interp.call(f, vec![a, x], Vec::new())?,
                                None => interp.binary_op(crate::syntax::ast::BinOp::Add, a, x)?,
                            },
                        };
                        out.push(next.clone());
                        acc = Some(next);
                    }
                    Ok(seq(out))
                }
                "combinations" | "permutations" | "pairwise" | "zip_longest" | "starmap" | "cycle" => {
                    Ok(Value::opaque(format!("itertools.{func}")))
                }
                _ => Ok(Value::opaque(name.to_string())),
            }
        }
        "random" => {
            if func != "seed" {
                crate::interp::model::effects::on_impure_call(interp, &format!("random.{func}()"));
                interp.py_random_draws += 1;
            }
            let drawn = match func {
                "shuffle" | "choice" => super::pyrandom::shuffle_or_choice(interp, func, &arg(0)),
                _ => super::pyrandom::call(interp, func, &args, &kwargs),
            };
            if let Some(result) = drawn {
                return result;
            }
            // Unseeded, or a call tracelens cannot follow: from here on the state is unknown.
            interp.py_random = None;
            Ok(match func {
                "seed" => Value::None,
                "shuffle" => {
                    shuffled_unknown(&arg(0));
                    Value::None
                }
                "random" | "uniform" | "gauss" | "normalvariate" => {
                    unknown_python_number(interp, crate::interp::model::dtypes::PyScalarKind::Float)
                }
                "randint" | "randrange" => unknown_python_number(interp, crate::interp::model::dtypes::PyScalarKind::Int),
                _ => Value::opaque(format!("random.{func}()")),
            })
        }
        "time" => {
            if func == "sleep" {
                return Ok(Value::None);
            }
            crate::interp::model::effects::on_impure_call(interp, &format!("time.{func}()"));
            Ok(unknown_python_number(interp, crate::interp::model::dtypes::PyScalarKind::Float))
        }
        "dataclasses" => match func {
            "dataclass" => {
                let frozen = match kw("frozen") {
                    Some(v) => interp.truthy(&v)?,
                    None => false,
                };
                match arg(0) {
                    Value::Class(c) => {
                        make_dataclass(&c, frozen);
                        Ok(Value::Class(c))
                    }
                    _ => {
                        let deco = if frozen { "dataclasses.dataclass_frozen" } else { "dataclasses.dataclass_plain" };
                        Ok(b(deco))
                    }
                }
            }
            "dataclass_frozen" | "dataclass_plain" => {
                if let Value::Class(c) = arg(0) {
                    make_dataclass(&c, func == "dataclass_frozen");
                    return Ok(Value::Class(c));
                }
                Ok(arg(0))
            }
            "field" => {
                let class = interp.classes.get("Field");
                // Only what was given: `field(default=None)` has a default, `field()` has none.
                let mut attrs = IndexMap::default();
                for key in ["default", "default_factory", "metadata", "init"] {
                    if let Some(v) = kw(key) {
                        attrs.insert(Rc::from(key), v);
                    }
                }
                Ok(Value::Instance(Rc::new(super::value::Instance { class, attrs: RefCell::new(attrs), tuple: None })))
            }
            "fields" => {
                let class = match arg(0) {
                    Value::Class(c) if c.is_dataclass.get() => c,
                    Value::Instance(i) if i.class.is_dataclass.get() => i.class.clone(),
                    _ => return Ok(Value::opaque("dataclasses.fields")),
                };
                // One `Field` per field, in order, with its `name`; `default` only when it has one.
                let field_class = interp.classes.get("Field");
                let mut out = Vec::new();
                for name in class.fields.borrow().iter() {
                    let mut attrs = IndexMap::default();
                    attrs.insert(Rc::from("name"), Value::Str(name.clone()));
                    match class.lookup(name) {
                        Some(Value::Instance(fi)) if fi.class.name.as_ref() == "Field" => {
                            attrs.extend(fi.attrs.borrow().iter().map(|(k, v)| (k.clone(), v.clone())))
                        }
                        Some(v) => {
                            attrs.insert(Rc::from("default"), v);
                        }
                        None => {}
                    }
                    if !attrs.contains_key("metadata") {
                        attrs.insert(Rc::from("metadata"), interp.new_dict(Dict::default()));
                    }
                    out.push(Value::Instance(Rc::new(super::value::Instance {
                        class: field_class.clone(),
                        attrs: RefCell::new(attrs),
                        tuple: None,
                    })));
                }
                Ok(Value::tuple(out))
            }
            "replace" => {
                let Value::Instance(inst) = arg(0) else {
                    return Ok(Value::opaque("dataclasses.replace"));
                };
                let new =
                    super::value::Instance { class: inst.class.clone(), attrs: RefCell::new(inst.attrs.borrow().clone()), tuple: None };
                for (k, v) in kwargs {
                    new.attrs.borrow_mut().insert(k, v);
                }
                // A new object, as CPython's `replace` builds one: made inside a trace, it is that trace's.
                let new = Value::Instance(Rc::new(new));
                crate::interp::model::state::note_born(interp, &new);
                Ok(new)
            }
            "asdict" => {
                let Value::Instance(inst) = arg(0) else {
                    return Ok(Value::opaque("dataclasses.asdict"));
                };
                let mut d = Dict::default();
                for (k, v) in inst.attrs.borrow().iter() {
                    d.insert(HashKey::Str(k.clone()), Value::Str(k.clone()), v.clone());
                }
                Ok(interp.new_dict(d))
            }
            "is_dataclass" => Ok(Value::Bool(
                matches!(arg(0), Value::Instance(ref i) if i.class.is_dataclass.get())
                    || matches!(arg(0), Value::Class(ref c) if c.is_dataclass.get()),
            )),
            _ => Ok(Value::opaque(name.to_string())),
        },
        "typing" | "typing_extensions" => Ok(match func {
            "cast" => arg(1),
            "overload" | "final" | "runtime_checkable" => arg(0),
            _ => Value::opaque(name.to_string()),
        }),
        "collections" => match func {
            "namedtuple" => {
                let Value::Str(cname) = arg(0) else {
                    return Ok(Value::opaque("namedtuple"));
                };
                let fields: Vec<Rc<str>> = match arg(1) {
                    Value::Str(s) => s.replace(',', " ").split_whitespace().map(Rc::from).collect(),
                    other => {
                        interp.iterate(&other)?.into_iter().filter_map(|v| if let Value::Str(s) = v { Some(s) } else { None }).collect()
                    }
                };
                Ok(Value::Class(namedtuple_class(interp, cname, fields)))
            }
            "OrderedDict" => {
                let f = Value::Builtin(Rc::new(Builtin::Fn("dict")));
                interp.call(&f, args, kwargs)
            }
            _ => Ok(Value::opaque(name.to_string())),
        },
        "operator" => {
            use crate::syntax::ast::BinOp;
            let op = match func {
                "add" => BinOp::Add,
                "mul" => BinOp::Mul,
                "sub" => BinOp::Sub,
                "truediv" => BinOp::Div,
                "matmul" => BinOp::MatMul,
                "getitem" => return interp.getitem(&arg(0), arg(1)),
                _ => return Ok(Value::opaque(name.to_string())),
            };
            interp.binary_op(op, arg(0), arg(1))
        }
        "abc" => Ok(arg(0)),
        "logging" if func == "getLogger" => Ok(b("logging.Logger")),
        "logging" => logger_call(interp, func, &args),
        "warnings" => Ok(Value::None),
        "object" => Ok(Value::None),
        "tracelens" => Ok(Value::opaque(name.to_string())),
        _ => Ok(Value::opaque(format!("result of {name}()"))),
    }
}

/// `logging.info(...)` or `logger.info(...)`: output at trace time, which runs once per
/// trace as `print` does (TL201 inside a trace); any other method of a logger does nothing
/// the interpreter needs to follow.
pub fn logger_call(interp: &mut Interp, method: &str, args: &[Value]) -> PyResult<Value> {
    if matches!(method, "debug" | "info" | "warning" | "warn" | "error" | "exception" | "critical" | "fatal" | "log") {
        crate::interp::model::effects::on_print(interp, args)?;
        return Ok(Value::None);
    }
    Ok(match method {
        "getChild" => b("logging.Logger"),
        "isEnabledFor" | "getEffectiveLevel" | "hasHandlers" => Value::opaque(format!("Logger.{method}()")),
        _ => Value::None,
    })
}

fn logging_level(name: &str) -> Option<i64> {
    Some(match name {
        "NOTSET" => 0,
        "DEBUG" => 10,
        "INFO" => 20,
        "WARNING" | "WARN" => 30,
        "ERROR" => 40,
        "CRITICAL" | "FATAL" => 50,
        _ => return None,
    })
}

/// `sys.version_info` of CPython 3.11: a named tuple, so `>= (3, 8)` and `.major` both work.
fn version_info(interp: &Interp) -> Value {
    let fields = ["major", "minor", "micro", "releaselevel", "serial"].into_iter().map(Rc::from).collect();
    let class = namedtuple_class(interp, Rc::from("version_info"), fields);
    let items = vec![Value::Int(3), Value::Int(11), Value::Int(7), Value::str("final"), Value::Int(0)];
    Value::Instance(Rc::new(super::value::Instance { class, attrs: RefCell::new(IndexMap::default()), tuple: Some(items) }))
}

/// A class made by `collections.namedtuple(name, fields)`.
/// A class made as `collections.namedtuple(name, fields)` makes one.
pub fn namedtuple_class(interp: &Interp, name: Rc<str>, fields: Vec<Rc<str>>) -> Rc<Class> {
    let class = Rc::new(Class {
        qualname: name.to_string(),
        name,
        bases: vec![interp.classes.get("NamedTuple")],
        dict: RefCell::new(IndexMap::default()),
        builtin: None,
        is_dataclass: Default::default(),
        frozen: Default::default(),
        fields: RefCell::new(fields),
        is_namedtuple: Default::default(),
        pytree: RefCell::new(None),
        def_span: None,
    });
    class.is_namedtuple.set(true);
    class
}

/// A Python number whose value is not known (a random draw, a clock reading): modelled as a
/// Python number of unknown value, which JAX sees as a weakly typed scalar, so traces keep going.
/// `random.shuffle` of a list whose new order is unknown: its elements become unknown too,
/// unless they are all the same value.
fn shuffled_unknown(list: &Value) {
    let Value::List(items) = list else { return };
    let mut items = items.borrow_mut();
    let numbers = items.iter().all(|v| matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::UnknownNumber(_)));
    let same = items.windows(2).all(|w| match (&w[0], &w[1]) {
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::Str(a), Value::Str(b)) => a == b,
        _ => false,
    });
    if same {
        return;
    }
    for v in items.iter_mut() {
        *v = if numbers {
            Value::UnknownNumber(matches!(v, Value::Float(_) | Value::UnknownNumber(true)))
        } else {
            Value::opaque("an element of a list shuffled in an unknown order")
        };
    }
}

fn unknown_python_number(_interp: &Interp, kind: crate::interp::model::dtypes::PyScalarKind) -> Value {
    Value::UnknownNumber(matches!(kind, crate::interp::model::dtypes::PyScalarKind::Float))
}

/// Whether the class annotates `name` as `typing.ClassVar` (`ClassVar[T]` is the marker
/// itself: a subscripted modelled type stands for its generic alias), or as a string
/// naming it (`"ClassVar[int]"` under `from __future__ import annotations`).
fn is_classvar_annotation(class: &Class, name: &str) -> bool {
    let Some(Value::Dict(d)) = class.dict.borrow().get("__annotations__").cloned() else { return false };
    let annotation = d.borrow().items().into_iter().find(|(k, _)| matches!(k, Value::Str(s) if s.as_ref() == name)).map(|(_, v)| v);
    match annotation {
        Some(Value::Builtin(b)) => matches!(&*b, super::builtins::Builtin::Fn(n) if n.starts_with("typing") && n.ends_with(".ClassVar")),
        Some(Value::Str(s)) => {
            let s = s.trim();
            ["ClassVar", "typing.ClassVar", "t.ClassVar"].iter().any(|p| s == *p || s.starts_with(&format!("{p}[")))
        }
        _ => false,
    }
}

fn make_dataclass(c: &Rc<Class>, frozen: bool) {
    c.is_dataclass.set(true);
    c.frozen.set(frozen);
    let mut fields = Vec::new();
    for cls in c.mro().iter().rev() {
        for f in super::call::annotation_names(cls) {
            // `x: ClassVar[int]` is a class attribute, never a field (`dataclasses._is_classvar`).
            if !fields.contains(&f) && !is_classvar_annotation(cls, &f) {
                fields.push(f);
            }
        }
    }
    *c.fields.borrow_mut() = fields;
}

const NUMPY_RANDOM_FNS: &[&str] = &[
    "numpy.random.default_rng",
    "numpy.random.seed",
    "numpy.random.normal",
    "numpy.random.standard_normal",
    "numpy.random.randn",
    "numpy.random.rand",
    "numpy.random.random",
    "numpy.random.uniform",
    "numpy.random.randint",
    "numpy.random.integers",
    "numpy.random.permutation",
    "numpy.random.choice",
    "numpy.random.shuffle",
    "numpy.random.binomial",
    "numpy.random.poisson",
    "numpy.random.exponential",
    "numpy.random.standard_t",
    "numpy.random.gamma",
    "numpy.random.beta",
    "numpy.random.laplace",
    "numpy.random.lognormal",
    "numpy.random.logistic",
    "numpy.random.multivariate_normal",
    "numpy.random.dirichlet",
];

/// `np.random.*` and `np.random.default_rng(seed).*`: arrays of the right shape and NumPy's
/// 64-bit dtypes, whose values are not known (the generator is not modelled). Inside a trace
/// the draw happens once and is frozen (TL204).
pub fn numpy_random(interp: &mut Interp, func: &str, args: &[Value], kwargs: &Kwargs) -> PyResult<Value> {
    let kw = |k: &str| kwargs.iter().find(|(n, _)| n.as_ref() == k).map(|(_, v)| v.clone());
    match func {
        "seed" | "shuffle" => return Ok(Value::None),
        "default_rng" => return Ok(Value::Builtin(Rc::new(Builtin::Fn("numpy.random.Generator")))),
        _ => {}
    }
    crate::interp::model::effects::on_impure_call(interp, &format!("np.random.{func}()"));
    let shape_from = |interp: &mut Interp, v: Option<Value>| -> PyResult<Option<Vec<usize>>> {
        Ok(match v {
            None | Some(Value::None) => Some(Vec::new()),
            Some(Value::Int(n)) => Some(vec![n.max(0) as usize]),
            Some(other @ (Value::Tuple(_) | Value::List(_))) => {
                let items = interp.iterate(&other)?;
                items.iter().map(|x| super::ops::as_int(x).map(|n| n.max(0) as usize)).collect()
            }
            _ => None,
        })
    };
    // The shape of the draws: `size` (by keyword or at its position), else the broadcast of
    // the parameters before it; then a multivariate draw's own dimension.
    let draws = |interp: &mut Interp, at: usize, event: Option<usize>| -> PyResult<Option<Vec<usize>>> {
        let event = match event {
            None => Vec::new(),
            Some(i) => match args.get(i) {
                Some(Value::List(_) | Value::Tuple(_)) | Some(Value::Array(_)) => {
                    let p = args[i].clone();
                    match call_numpy(interp, "asarray", vec![p], Vec::new()) {
                        Ok(Value::Array(a)) if a.aval.ndim() == 1 => vec![a.aval.shape[0]],
                        _ => return Ok(None),
                    }
                }
                _ => return Ok(None),
            },
        };
        let batch = match kw("size").or_else(|| args.get(at).cloned()) {
            Some(size) if !matches!(size, Value::None) => shape_from(interp, Some(size))?,
            _ if event.is_empty() => {
                let params =
                    args.iter().take(at).chain(kwargs.iter().filter(|(k, _)| !["size", "dtype"].contains(&k.as_ref())).map(|(_, v)| v));
                let mut shapes = Vec::new();
                for p in params {
                    match p {
                        Value::Int(_) | Value::Float(_) | Value::Bool(_) => {}
                        Value::Array(a) => shapes.push(a.aval.shape.to_vec()),
                        _ => return Ok(None),
                    }
                }
                let refs: Vec<&[usize]> = shapes.iter().map(|s| s.as_slice()).collect();
                crate::interp::model::numpy::broadcast_shapes(interp, &refs).ok().map(|s| s.to_vec())
            }
            _ => Some(Vec::new()),
        };
        Ok(batch.map(|b| b.into_iter().chain(event).collect()))
    };
    let (shape, dtype) = match func {
        "randn" | "rand" => {
            let dims: Option<Vec<usize>> = args.iter().map(|x| super::ops::as_int(x).map(|n| n.max(0) as usize)).collect();
            (dims, DType::F64)
        }
        "standard_normal" | "random" => (shape_from(interp, kw("size").or_else(|| args.first().cloned()))?, DType::F64),
        "randint" | "integers" => (shape_from(interp, kw("size").or_else(|| args.get(2).cloned()))?, DType::I64),
        "binomial" => (draws(interp, 2, None)?, DType::I64),
        "poisson" => (draws(interp, 1, None)?, DType::I64),
        "permutation" => match args.first() {
            Some(Value::Int(n)) => (Some(vec![(*n).max(0) as usize]), DType::I64),
            Some(Value::Array(a)) => (Some(a.aval.shape.to_vec()), a.aval.dtype),
            _ => (None, DType::I64),
        },
        // Draws from `a`: `range(a)` for an int, else the elements of `a` with its dtype.
        "choice" => {
            let population = args.first().cloned().or_else(|| kw("a"));
            let dtype = match &population {
                Some(Value::Int(_)) => Some(DType::I64),
                Some(Value::Array(a)) => Some(a.aval.dtype),
                Some(v @ (Value::List(_) | Value::Tuple(_))) => match call_numpy(interp, "asarray", vec![v.clone()], Vec::new()) {
                    Ok(Value::Array(a)) => Some(a.aval.dtype),
                    _ => None,
                },
                _ => None,
            };
            match dtype {
                Some(d) => (shape_from(interp, kw("size").or_else(|| args.get(1).cloned()))?, d),
                None => (None, DType::I64),
            }
        }
        // `size` after the distribution's parameters (`multivariate_normal(mean, cov, size)`),
        // and the parameter whose length is each draw's last dimension.
        "exponential" | "standard_t" => (draws(interp, 1, None)?, DType::F64),
        "dirichlet" => (draws(interp, 1, Some(0))?, DType::F64),
        "multivariate_normal" => (draws(interp, 2, Some(0))?, DType::F64),
        _ => (draws(interp, 2, None)?, DType::F64),
    };
    // A Generator's `standard_normal(size, dtype=np.float32)`, `random`, `integers`, ...
    let dtype = match kw("dtype") {
        Some(d) => crate::interp::model::numpy::dtype_arg(interp, Some(&d))?.unwrap_or(dtype),
        None => dtype,
    };
    Ok(match shape {
        Some(s) => crate::interp::model::numpy::mark_numpy(
            interp,
            Value::Array(crate::interp::model::array::Array::unknown(
                crate::interp::model::aval::Aval::new(&s, dtype),
                "random values are not modelled",
            )),
        ),
        None => Value::opaque(format!("np.random.{func}()")),
    })
}

/// NumPy on concrete data: the same model as jax.numpy, with NumPy's 64-bit defaults. A
/// tracer handed to a converting NumPy function is TL102.
fn call_numpy(interp: &mut Interp, func: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    if let Some(rest) = func.strip_prefix("random.") {
        return numpy_random(interp, rest, &args, &kwargs);
    }
    if let Some(v) = super::dtype_info::call(interp, func, &args, &kwargs)? {
        return Ok(v);
    }
    let tracer = args.iter().chain(kwargs.iter().map(|(_, v)| v)).find_map(|a| match a {
        Value::Array(x) if x.refuses_numpy_conversion() => Some(x.clone()),
        _ => None,
    });
    let tracer = match tracer {
        Some(t) => Some(t),
        None => match args.first() {
            Some(v @ (Value::List(_) | Value::Tuple(_))) => {
                let items = interp.iterate(v)?;
                items.iter().find_map(|a| match a {
                    Value::Array(x) if x.refuses_numpy_conversion() => Some(x.clone()),
                    _ => None,
                })
            }
            _ => None,
        },
    };
    if let Some(t) = tracer {
        return super::numpy_on_jax::call_with_tracer(interp, func, args, kwargs, &t);
    }
    let f = match func.strip_prefix("linalg.") {
        // NumPy's `lstsq` returns empty residuals for a rank-deficient matrix, JAX's do not.
        Some(name) => JaxFn::lookup("jax.numpy.linalg", name).filter(|f| *f != JaxFn::LinalgLstsq),
        None => JaxFn::lookup("jax.numpy", func),
    };
    let Some(f) = f else {
        return Ok(Value::opaque(format!("np.{func}")));
    };
    // No operand is a tracer: NumPy computes at once, inside a `jit` too.
    let result = crate::interp::model::state::numpy_eager(interp, |interp| crate::interp::model::numpy::call(interp, f, args, kwargs));
    Ok(crate::interp::model::numpy::mark_numpy(interp, result?))
}
