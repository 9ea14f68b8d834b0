//! CPython 3.11's surface as data: the names of `builtins`, the public attributes of the
//! standard-library modules tracelens models, and the attributes of the builtin types.
//!
//! The interpreter asks it one question: does CPython have this name? A name CPython has but
//! tracelens does not model is an unknown value, never an error of tracelens' making; a name
//! CPython does not have is Python's own NameError or AttributeError. The table is generated
//! by `tests/conformance/gen_python_surface.py` and checked by `tests/python_surface.rs`.

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

// `BUILTINS` and `EXCEPTIONS`, generated from the table's first rows by build.rs.
include!(concat!(env!("OUT_DIR"), "/python_builtins.rs"));

// `MODULE_ATTRS` and `TYPE_ATTRS`, generated from the table by build.rs.
include!(concat!(env!("OUT_DIR"), "/python_attributes.rs"));

/// The sorted attribute names `owner` has in one of the generated tables.
fn attributes_of(table: &'static [(&'static str, &'static [&'static str])], owner: &str) -> Option<&'static [&'static str]> {
    table.binary_search_by(|(o, _)| (*o).cmp(owner)).ok().map(|i| table[i].1)
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

/// Every row of the table, in its order. Read with `memchr`, which skips the long probe
/// column many bytes at a time.
pub fn rows() -> impl Iterator<Item = Row> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', TABLE.as_bytes()).chain(std::iter::once(TABLE.len())).filter_map(move |end| {
        // `None` past the end, after a last line break.
        let line = TABLE.get(start..end);
        start = end + 1;
        let mut rest = line.filter(|l| !l.starts_with('#') && !l.is_empty())?;
        Some(Row {
            kind: next_column(&mut rest)?,
            owner: next_column(&mut rest)?,
            name: next_column(&mut rest)?,
            info: next_column(&mut rest).unwrap_or(""),
            // The last column: the rest of the line.
            probe: rest,
        })
    })
}

/// The column `rest` starts with; `rest` moves past it and its tab. `None` once it is empty.
fn next_column(rest: &mut &'static str) -> Option<&'static str> {
    if rest.is_empty() {
        return None;
    }
    let (column, after) = match memchr::memchr(b'\t', rest.as_bytes()) {
        Some(tab) => (&rest[..tab], &rest[tab + 1..]),
        None => (*rest, ""),
    };
    *rest = after;
    Some(column)
}

/// What `name` is among CPython's builtins, if it is one.
pub fn builtin(name: &str) -> Option<(&'static str, BuiltinKind)> {
    BUILTINS.binary_search_by(|(n, _)| (*n).cmp(name)).ok().map(|i| BUILTINS[i])
}

/// CPython's exception and warning classes, each after its base: `(name, base)`.
pub fn exception_classes() -> &'static [(&'static str, &'static str)] {
    EXCEPTIONS
}

/// Whether CPython's module `module` has the attribute `name`; `None` for a module the
/// table does not list (anything may be there).
pub fn module_has(module: &str, name: &str) -> Option<bool> {
    attributes_of(MODULE_ATTRS, module).map(|names| names.binary_search(&name).is_ok())
}

/// Whether a builtin type (`int`, `property`) or its instances have the attribute `name`.
pub fn type_has(type_name: &str, name: &str) -> bool {
    attributes_of(TYPE_ATTRS, type_name).is_some_and(|names| names.binary_search(&name).is_ok())
}

/// Whether CPython's `value.name` exists for a value of a builtin type, a builtin type
/// object (`int.from_bytes`), a class (`C.__doc__`) or an instance (`obj.__module__`).
pub fn value_has_attribute(value: &super::value::Value, name: &str) -> bool {
    use super::builtins::Builtin;
    use super::value::Value;
    match value {
        Value::Builtin(b) => match &**b {
            Builtin::Fn(n) if attributes_of(TYPE_ATTRS, n).is_some() => type_has(n, name) || type_has("type", name),
            _ => false,
        },
        Value::Class(_) => type_has("type", name),
        Value::Instance(_) => type_has("object", name),
        Value::Function(_) => function_has_attribute(name) || type_has("object", name),
        other => type_has(&other.type_name(), name),
    }
}

/// The attributes every CPython 3.11 function object has beyond `object`'s (`dir(lambda: 0)`).
/// Those the interpreter does not model (`__globals__`, `__code__`, `__defaults__`, ...) are
/// unknown values, never an AttributeError.
const FUNCTION_ATTRS: &[&str] = &[
    "__annotations__",
    "__builtins__",
    "__call__",
    "__closure__",
    "__code__",
    "__defaults__",
    "__dict__",
    "__get__",
    "__globals__",
    "__kwdefaults__",
    "__module__",
    "__name__",
    "__qualname__",
];

/// Whether a Python function object has the attribute `name` before any is set on it.
pub fn function_has_attribute(name: &str) -> bool {
    FUNCTION_ATTRS.contains(&name)
}

/// `int | None`, `str | Foo`: PEP 604 unions, evaluated at run time in annotations and
/// `isinstance` checks. At least one side is a type and the other a type or `None`. Every
/// public name of `collections.abc` is a class (`Callable[[int], int] | None`; a subscripted
/// builtin type stands for its generic alias, which `|` takes as it takes the type).
pub fn is_union_operand(l: &super::value::Value, r: &super::value::Value) -> bool {
    use super::value::Value;
    let is_type = |v: &Value| match v {
        Value::Class(_) | Value::DType(_) | Value::TfDType(_) => true,
        Value::Builtin(b) => matches!(&**b, super::builtins::Builtin::Fn(n)
            if attributes_of(TYPE_ATTRS, n).is_some()
                || matches!(builtin(n), Some((_, BuiltinKind::Class)))
                || n.starts_with("collections.abc.")),
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

/// `len(EnumClass)`: the number of members when every member's value is a distinct int or
/// string literal; `None` otherwise (an alias, `auto()`, a computed value).
pub fn enum_len(class: &std::rc::Rc<super::value::Class>) -> Option<i64> {
    use super::value::Value;
    let mut seen: Vec<Value> = Vec::new();
    for c in class.mro().iter().rev() {
        for (name, value) in c.dict.borrow().iter() {
            if name.starts_with('_') || !is_member_value(value) {
                continue;
            }
            let distinct = match value {
                Value::Int(i) => !seen.iter().any(|s| matches!(s, Value::Int(j) if j == i)),
                Value::Str(a) => !seen.iter().any(|s| matches!(s, Value::Str(b) if b == a)),
                _ => return None,
            };
            if !distinct {
                return None;
            }
            seen.push(value.clone());
        }
    }
    Some(seen.len() as i64)
}

fn is_member_value(value: &super::value::Value) -> bool {
    use super::value::Value;
    !matches!(value, Value::Function(_) | Value::StaticMethod(_) | Value::ClassMethod(_) | Value::Property(_) | Value::Builtin(_))
}

/// The public names (no leading underscore) of a listed module, in order; `None` for a
/// module the table does not list.
pub fn public_names(module: &str) -> Option<Vec<&'static str>> {
    attributes_of(MODULE_ATTRS, module)?;
    Some(rows().filter(|r| r.kind == "attr" && r.owner == module && !r.name.starts_with('_')).map(|r| r.name).collect())
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn the_builtins_come_first_in_the_table() {
        // build.rs reads only the first rows, up to the first that is not a builtin.
        assert!(rows().skip_while(|row| row.kind == "builtin").all(|row| row.kind != "builtin"));
        assert_eq!(BUILTINS.len(), rows().filter(|row| row.kind == "builtin").count());
        assert!(matches!(builtin("ValueError"), Some((_, BuiltinKind::Exception { base: "Exception" }))));
    }

    fn every_exception_class_comes_after_its_base() {
        let exceptions: Vec<(&str, &str)> =
            rows().filter(|row| row.kind == "builtin").filter_map(|row| Some((row.name, row.info.strip_prefix("exception:")?))).collect();
        assert_eq!(EXCEPTIONS.len(), exceptions.len());
        for (i, (name, base)) in EXCEPTIONS.iter().enumerate() {
            assert!(exceptions.contains(&(*name, *base)), "{name}({base})");
            assert!(*base == "object" || EXCEPTIONS[..i].iter().any(|(n, _)| n == base), "{name} before {base}");
        }
    }

    fn the_generated_attribute_tables_hold_every_row() {
        for row in rows() {
            match row.kind {
                "attr" => assert_eq!(module_has(row.owner, row.name), Some(true), "{}.{}", row.owner, row.name),
                "typeattr" => assert!(type_has(row.owner, row.name), "{}.{}", row.owner, row.name),
                _ => {}
            }
        }
        assert_eq!(module_has("math", "no_such_name"), Some(false));
        assert_eq!(module_has("no_such_module", "sqrt"), None);
        assert!(!type_has("int", "no_such_name"));
    }

    fn rows_are_read_column_by_column() {
        let row = rows().find(|row| row.name == "ArithmeticError").expect("a row");
        assert_eq!((row.kind, row.owner, row.info), ("builtin", "builtins", "exception:Exception"));
        assert!(row.probe.starts_with("_x = ArithmeticError()"), "{}", row.probe);
        assert_eq!(rows().count(), TABLE.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).count());
    }

    crate::unit_tests::list![
        the_builtins_come_first_in_the_table,
        every_exception_class_comes_after_its_base,
        the_generated_attribute_tables_hold_every_row,
        rows_are_read_column_by_column
    ];
}
