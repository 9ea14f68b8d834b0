//! CPython 3.11's surface as data: the names of `builtins`, the public attributes of the
//! standard-library modules tracelens models, and the attributes of the builtin types.
//!
//! The interpreter asks it one question: does CPython have this name? A name CPython has but
//! tracelens does not model is an unknown value, never an error of tracelens' making; a name
//! CPython does not have is Python's own NameError or AttributeError. The table is generated
//! by `tests/conformance/gen_python_surface.py` and checked by `tests/python_surface.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// The generated table (see the generator's docstring for its columns).
pub const TABLE: &str = include_str!("python311.tsv");

/// What a builtin name is in CPython.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltinKind {
    /// An exception or warning class, with its first base.
    Exception {
        base: &'static str,
    },
    /// A second name of another builtin (`IOError` is `OSError`).
    Alias {
        of: &'static str,
    },
    Class,
    Function,
    Constant,
}

struct Surface {
    builtins: HashMap<&'static str, BuiltinKind>,
    /// Exception classes in an order where each base comes before its subclasses.
    exceptions: Vec<(&'static str, &'static str)>,
    module_attrs: HashMap<&'static str, HashSet<&'static str>>,
    type_attrs: HashMap<&'static str, HashSet<&'static str>>,
}

fn surface() -> &'static Surface {
    static SURFACE: OnceLock<Surface> = OnceLock::new();
    SURFACE.get_or_init(|| {
        let mut s = Surface { builtins: HashMap::new(), exceptions: Vec::new(), module_attrs: HashMap::new(), type_attrs: HashMap::new() };
        let mut pending: Vec<(&'static str, &'static str)> = Vec::new();
        for row in rows() {
            match row.kind {
                "builtin" => {
                    let kind = match row.info.split_once(':') {
                        Some(("exception", base)) => {
                            pending.push((row.name, base));
                            BuiltinKind::Exception { base }
                        }
                        Some(("alias", of)) => BuiltinKind::Alias { of },
                        _ => match row.info {
                            "class" => BuiltinKind::Class,
                            "function" => BuiltinKind::Function,
                            _ => BuiltinKind::Constant,
                        },
                    };
                    s.builtins.insert(row.name, kind);
                }
                "attr" => {
                    s.module_attrs.entry(row.owner).or_default().insert(row.name);
                }
                "typeattr" => {
                    s.type_attrs.entry(row.owner).or_default().insert(row.name);
                }
                _ => {}
            }
        }
        // Topological order: `object` first, then each class once its base is placed.
        let mut placed: HashSet<&str> = HashSet::from(["object"]);
        while !pending.is_empty() {
            let before = pending.len();
            pending.retain(|(name, base)| {
                if placed.contains(base) {
                    s.exceptions.push((name, base));
                    placed.insert(name);
                    false
                } else {
                    true
                }
            });
            if pending.len() == before {
                break;
            }
        }
        s
    })
}

/// One row of the table.
pub struct Row {
    pub kind: &'static str,
    pub owner: &'static str,
    pub name: &'static str,
    pub info: &'static str,
    /// Statements that run under CPython 3.11 (after `import owner`); `\n` is written `\\n`.
    pub probe: &'static str,
}

/// Every row of the table, in its order.
pub fn rows() -> impl Iterator<Item = Row> {
    TABLE.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).filter_map(|line| {
        let mut cols = line.split('\t');
        Some(Row {
            kind: cols.next()?,
            owner: cols.next()?,
            name: cols.next()?,
            info: cols.next().unwrap_or(""),
            probe: cols.next().unwrap_or(""),
        })
    })
}

/// What `name` is among CPython's builtins, if it is one.
pub fn builtin(name: &str) -> Option<(&'static str, BuiltinKind)> {
    surface().builtins.get_key_value(name).map(|(k, v)| (*k, *v))
}

/// CPython's exception and warning classes, each after its base: `(name, base)`.
pub fn exception_classes() -> &'static [(&'static str, &'static str)] {
    &surface().exceptions
}

/// Whether CPython's module `module` has the attribute `name`; `None` for a module the
/// table does not list (anything may be there).
pub fn module_has(module: &str, name: &str) -> Option<bool> {
    surface().module_attrs.get(module).map(|names| names.contains(name))
}

/// Whether a builtin type (`int`, `property`) or its instances have the attribute `name`.
pub fn type_has(type_name: &str, name: &str) -> bool {
    surface().type_attrs.get(type_name).is_some_and(|names| names.contains(name))
}

/// Whether CPython's `value.name` exists for a value of a builtin type, a builtin type
/// object (`int.from_bytes`), a class (`C.__doc__`) or an instance (`obj.__module__`).
pub fn value_has_attribute(value: &super::value::Value, name: &str) -> bool {
    use super::builtins::Builtin;
    use super::value::Value;
    match value {
        Value::Builtin(b) => match &**b {
            Builtin::Fn(n) if surface().type_attrs.contains_key(n) => type_has(n, name) || type_has("type", name),
            _ => false,
        },
        Value::Class(_) => type_has("type", name),
        Value::Instance(_) => type_has("object", name),
        other => type_has(&other.type_name(), name),
    }
}

/// `int | None`, `str | Foo`: PEP 604 unions, evaluated at run time in annotations and
/// `isinstance` checks. At least one side is a type and the other a type or `None`.
pub fn is_union_operand(l: &super::value::Value, r: &super::value::Value) -> bool {
    use super::value::Value;
    let is_type = |v: &Value| match v {
        Value::Class(_) | Value::DType(_) => true,
        Value::Builtin(b) => {
            matches!(&**b, super::builtins::Builtin::Fn(n) if surface().type_attrs.contains_key(n) || matches!(builtin(n), Some((_, BuiltinKind::Class))))
        }
        _ => false,
    };
    let operand = |v: &Value| is_type(v) || matches!(v, Value::None | Value::Opaque(_));
    (is_type(l) || is_type(r)) && operand(l) && operand(r)
}

/// Whether `class` derives from `enum.Enum` (or `IntEnum`, `Flag`, ...).
pub fn is_enum(class: &std::rc::Rc<super::value::Class>) -> bool {
    class.lookup("__tracelens_enum__").is_some()
}

/// `Color.RED` of an enum: a member, which the interpreter does not model (unknown). `None`
/// for methods, private names and names the class does not define.
pub fn enum_member(class: &std::rc::Rc<super::value::Class>, name: &str) -> Option<super::value::Value> {
    if !is_enum(class) || name.starts_with('_') {
        return None;
    }
    let value = class.lookup(name)?;
    is_member_value(&value).then(|| super::value::Value::opaque(format!("{}.{name}", class.name)))
}

/// The members of an enum class, in definition order (each unknown).
pub fn enum_members(class: &std::rc::Rc<super::value::Class>) -> Vec<super::value::Value> {
    let mut names: Vec<std::rc::Rc<str>> = Vec::new();
    for c in class.mro().iter().rev() {
        for (name, value) in c.dict.borrow().iter() {
            if !name.starts_with('_') && is_member_value(value) && !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names.iter().map(|n| super::value::Value::opaque(format!("{}.{n}", class.name))).collect()
}

fn is_member_value(value: &super::value::Value) -> bool {
    use super::value::Value;
    !matches!(value, Value::Function(_) | Value::StaticMethod(_) | Value::ClassMethod(_) | Value::Property(_) | Value::Builtin(_))
}

/// The public names (no leading underscore) of a listed module, in order; `None` for a
/// module the table does not list.
pub fn public_names(module: &str) -> Option<Vec<&'static str>> {
    surface().module_attrs.get(module)?;
    Some(rows().filter(|r| r.kind == "attr" && r.owner == module && !r.name.starts_with('_')).map(|r| r.name).collect())
}
