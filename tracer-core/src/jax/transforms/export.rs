//! `jax.export`'s shape polymorphism as a seed of symbolic dimensions: `symbolic_shape("b, 3")`
//! gives each name the size `crate::symbolic` binds it to in this analysis, so
//! `jax.ShapeDtypeStruct(symbolic_shape("b, 3"), f32)` handed to `jax.jit(f).lower`,
//! `jax.eval_shape` or `jax.export.export(jax.jit(f))` traces `f` as the annotation route does,
//! and only findings that hold for every `b` are kept.

use std::rc::Rc;

use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::Interp;

use super::dispatch::JaxObject;

/// One item of a `symbolic_shape` specification.
#[derive(Debug, PartialEq)]
enum Item<'a> {
    Size(i64),
    Name(&'a str),
}

/// `"b, 3"` or `"(b, 3)"` as its items; `None` for what is not a size or a plain name (`2*b`,
/// `b + 1`, `...`): JAX's dimension expressions are not modelled, so that shape is unknown.
fn parse_spec(spec: &str) -> Option<Vec<Item<'_>>> {
    let mut spec = spec.trim();
    if let Some(inner) = spec.strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
        spec = inner.trim();
    }
    if spec.is_empty() {
        return Some(Vec::new());
    }
    let mut items: Vec<&str> = spec.split(',').map(str::trim).collect();
    if items.last() == Some(&"") {
        items.pop(); // "b," is (b,)
    }
    items
        .into_iter()
        .map(|item| {
            if let Ok(n) = item.parse::<i64>() {
                return (n >= 0).then_some(Item::Size(n));
            }
            let mut chars = item.chars();
            let starts = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
            (starts && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(Item::Name(item))
        })
        .collect()
}

/// `jax.export.symbolic_shape(spec)`: a tuple of sizes, each name at its size in this analysis.
/// With `constraints=` (`"b >= 16"`) the sizes this analysis picks may break them: unknown.
pub fn symbolic_shape(interp: &mut Interp, args: &[Value], kwargs: &Kwargs) -> Value {
    let unknown = || Value::opaque("a symbolic shape tracelens does not model");
    let Some(Value::Str(spec)) = args.first() else { return unknown() };
    if args.len() > 1 || kwargs.iter().any(|(k, _)| k.as_ref() != "scope") {
        return unknown();
    }
    let Some(items) = parse_spec(spec) else { return unknown() };
    let Some(file) = interp.site().map(|s| s.file) else { return unknown() };
    let text = interp.files[file as usize].text.clone();
    let dims = items
        .into_iter()
        .map(|item| match item {
            Item::Size(n) => Value::Int(n),
            Item::Name(name) => Value::Int(interp.entry_state.dims.size(name, &text) as i64),
        })
        .collect();
    Value::tuple(dims)
}

/// `jax.export.export(jitted)`: calling the result traces `jitted` as `jitted.lower` does (the
/// `Exported` it returns is unknown). A function that is not the result of `jit` is JAX's
/// `ValueError`, whose message prints the function's address: unknown here, never a finding.
pub fn export(args: &[Value]) -> Value {
    match args.first() {
        Some(jitted @ Value::Builtin(b)) if matches!(&**b, Builtin::Object(JaxObject::Jitted(_))) => {
            Value::Builtin(Rc::new(Builtin::Method { recv: jitted.clone(), name: Rc::from("lower") }))
        }
        _ => Value::opaque("jax.export.export of a function tracelens does not know as jitted"),
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn specs_parse_as_jax_reads_them() {
        assert_eq!(parse_spec("b, 3"), Some(vec![Item::Name("b"), Item::Size(3)]));
        assert_eq!(parse_spec(" (batch , n) "), Some(vec![Item::Name("batch"), Item::Name("n")]));
        assert_eq!(parse_spec("b,"), Some(vec![Item::Name("b")]));
        assert_eq!(parse_spec(""), Some(Vec::new()));
        assert_eq!(parse_spec("b, 2*b"), None, "dimension expressions are not modelled");
    }

    crate::unit_tests::list![specs_parse_as_jax_reads_them];
}
