//! `argparse` as a script's entry point needs it (design.md §9): a `main()` run from
//! `if __name__ == "__main__":` that calls `parser.parse_args()` sees every option at its
//! default, as `python main.py` with no arguments would, the way absl flags are read at
//! their defaults (`entry_hooks`). Anything the defaults do not decide — a positional or
//! `required` argument, a string default that `type=` converts, sub-commands, an explicit
//! argument list — is unknown. argparse itself stays an unknown module; only the parser
//! objects it makes are followed, by identity.

use std::collections::HashMap;
use std::rc::Rc;

use crate::interp::call::Kwargs;
pub use crate::interp::entry_state::ArgparseState;
use crate::interp::entry_state::Parser;
use crate::interp::value::{Opaque, Value};
use crate::interp::Interp;

const METHODS: &[&str] = &[
    "add_argument",
    "add_argument_group",
    "add_mutually_exclusive_group",
    "add_subparsers",
    "set_defaults",
    "parse_args",
    "parse_known_args",
];

fn id_of(o: &Rc<Opaque>) -> usize {
    Rc::as_ptr(o) as *const u8 as usize
}

impl ArgparseState {
    fn keep(&mut self, what: String) -> (Value, usize) {
        let v = Value::opaque(what);
        let id = v.identity().unwrap_or_default();
        self.alive.push(v.clone());
        (v, id)
    }
}

/// A call this module answers: `argparse.ArgumentParser(...)` or a method of a parser.
pub fn call(interp: &mut Interp, callee: &Rc<Opaque>, args: &[Value], kwargs: &Kwargs) -> Option<Value> {
    let state = &mut interp.entry_state.argparse;
    if callee.what == "argparse.ArgumentParser" {
        let (parser, id) = state.keep("argparse.ArgumentParser(...)".into());
        state.owners.insert(id, state.parsers.len());
        state.parsers.push(Parser::default());
        return Some(parser);
    }
    let (index, method) = state.methods.get(&id_of(callee)).cloned()?;
    let parser = &mut state.parsers[index];
    match method.as_str() {
        "add_argument" => {
            if let Some((dest, default)) = argument_default(args, kwargs) {
                parser.defaults.push((dest, default));
            }
            None
        }
        "set_defaults" => {
            for (k, v) in kwargs {
                parser.defaults.push((k.to_string(), Some(v.clone())));
            }
            None
        }
        "add_subparsers" => {
            parser.undecided = true;
            None
        }
        "add_argument_group" | "add_mutually_exclusive_group" => {
            let (group, id) = state.keep(format!("{}(...)", callee.what));
            state.owners.insert(id, index);
            Some(group)
        }
        "parse_args" | "parse_known_args" => {
            // An explicit argument list (`parse_args(["--lr", "1"])`) is not modelled.
            let explicit = args.first().or_else(|| kwargs.iter().find(|(k, _)| k.as_ref() == "args").map(|(_, v)| v));
            if parser.undecided || explicit.is_some_and(|a| !matches!(a, Value::None)) {
                return None;
            }
            let mut values = HashMap::new();
            for (dest, default) in &parser.defaults {
                match default {
                    Some(v) => values.insert(dest.clone(), v.clone()),
                    None => values.remove(dest),
                };
            }
            let (namespace, id) = state.keep("argparse.Namespace".into());
            state.namespaces.insert(id, values);
            Some(match method.as_str() {
                "parse_known_args" => Value::tuple(vec![namespace, Value::list(Vec::new())]),
                _ => namespace,
            })
        }
        _ => None,
    }
}

/// An attribute this module answers: a parser's method, or a parsed option's default.
pub fn getattr(interp: &mut Interp, obj: &Rc<Opaque>, name: &str) -> Option<Value> {
    let state = &mut interp.entry_state.argparse;
    if let Some(values) = state.namespaces.get(&id_of(obj)) {
        let v = values.get(name).cloned();
        interp.entry_state.flag_reads += u64::from(v.is_some());
        return v;
    }
    let index = *state.owners.get(&id_of(obj))?;
    if !METHODS.contains(&name) {
        return None;
    }
    let (method, id) = state.keep(format!("{}.{name}", obj.what));
    state.methods.insert(id, (index, name.to_string()));
    Some(method)
}

/// `add_argument("--learning-rate", type=float, default=0.1)`: the destination
/// (`learning_rate`) and its value when no argument is given; `None` when that is not
/// decided by the call (a positional or required argument, a string default `type=`
/// converts, an action that is not modelled).
fn argument_default(args: &[Value], kwargs: &Kwargs) -> Option<(String, Option<Value>)> {
    let kw = |name: &str| kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v);
    let names: Vec<&str> = args.iter().filter_map(|a| if let Value::Str(s) = a { Some(s.as_ref()) } else { None }).collect();
    let dest = match kw("dest") {
        Some(Value::Str(d)) => d.to_string(),
        Some(_) => return None,
        None => {
            let long = names.iter().find(|n| n.starts_with("--"));
            let first = long.or(names.first())?;
            first.trim_start_matches('-').replace('-', "_")
        }
    };
    let positional = names.first().is_some_and(|n| !n.starts_with('-'));
    let required = matches!(kw("required"), Some(Value::Bool(true)));
    if positional || required {
        return Some((dest, None));
    }
    let default = match kw("default") {
        // A string default goes through `type=`, unless that is `str`.
        Some(Value::Str(s)) => match kw("type") {
            None => Some(Value::Str(s.clone())),
            Some(t) if is_builtin(t, "str") => Some(Value::Str(s.clone())),
            Some(_) => None,
        },
        Some(v) => Some(v.clone()),
        None => match kw("action") {
            None => Some(Value::None),
            Some(Value::Str(a)) => match a.as_ref() {
                "store_true" => Some(Value::Bool(false)),
                "store_false" => Some(Value::Bool(true)),
                "store" | "store_const" | "append" | "append_const" | "extend" | "count" => Some(Value::None),
                _ => None,
            },
            Some(_) => None,
        },
    };
    // No default (`None`) or an empty string: the option is one the command line is
    // expected to give, so its value is unknown rather than the default a bare run sees.
    let default = default.filter(|v| !crate::entry_hooks::given_by_command_line(v));
    Some((dest, default))
}

/// Whether `t` is CPython's builtin `name` (the class `str`, not a user class of that name).
fn is_builtin(t: &Value, name: &str) -> bool {
    matches!(t, Value::Class(c) if &*c.name == name && c.builtin.is_some())
}
