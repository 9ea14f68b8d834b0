//! `sys.stdout` and `sys.stderr`: the two streams a program writes to, kept apart so that
//! `tracelens run` shows each where `python FILE` would (`print(..., file=sys.stderr)`,
//! `sys.stderr.write`, `tf.print`'s default stream). A stream is the builtin value
//! `sys.stdout` / `sys.stderr`; any other `file=` (an open file, an unknown object) is
//! written to neither.

use super::builtins::Builtin;
use super::value::Value;
use super::{Interp, PyResult};
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn value(self) -> Value {
        Value::Builtin(Rc::new(Builtin::Fn(self.name())))
    }

    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "sys.stdout",
            Stream::Stderr => "sys.stderr",
        }
    }

    /// The stream `v` is, if it is one of the two.
    pub fn of(v: &Value) -> Option<Stream> {
        match v {
            Value::Builtin(b) => Stream::of_builtin(b),
            _ => None,
        }
    }

    pub fn of_builtin(b: &Builtin) -> Option<Stream> {
        match b {
            Builtin::Fn("sys.stdout") => Some(Stream::Stdout),
            Builtin::Fn("sys.stderr") => Some(Stream::Stderr),
            _ => None,
        }
    }
}

/// Where `print(..., file=f)` writes: `None` for a file that is neither stream.
pub fn print_target(file: Option<&Value>) -> Option<Stream> {
    match file {
        None | Some(Value::None) => Some(Stream::Stdout),
        Some(v) => Stream::of(v),
    }
}

/// The methods of a stream the interpreter answers (`sys.stderr.write`); others are unknown.
const METHODS: &[&str] = &["write", "flush", "isatty", "fileno", "writelines"];

impl<'l> Interp<'l> {
    pub fn write_stream(&mut self, stream: Stream, text: &str) {
        match stream {
            Stream::Stdout => self.stdout.push_str(text),
            Stream::Stderr => self.stderr.push_str(text),
        }
    }

    /// `sys.stderr.write`, bound; `None` for a name the stream has but is not modelled.
    pub(super) fn stream_getattr(&self, stream: Stream, name: &str) -> Option<Value> {
        METHODS.contains(&name).then(|| Value::Builtin(Rc::new(Builtin::Method { recv: stream.value(), name: Rc::from(name) })))
    }

    pub(super) fn call_stream_method(&mut self, stream: Stream, name: &str, args: &[Value]) -> PyResult<Value> {
        Ok(match (name, args) {
            ("write", [Value::Str(s)]) => {
                self.write_stream(stream, s);
                Value::Int(s.chars().count() as i64)
            }
            ("write", [other]) if !other.is_opaque() => {
                return Err(self.type_error(format!("write() argument must be str, not {}", other.type_name())))
            }
            ("writelines", [lines]) if !lines.is_opaque() => {
                for line in self.iterate(lines)? {
                    match line {
                        Value::Str(s) => self.write_stream(stream, &s),
                        _ => return Ok(Value::opaque("the result of writelines of values not all strings")),
                    }
                }
                Value::None
            }
            ("flush", []) => Value::None,
            // Not a terminal under `tracelens run`'s pipe, as CPython answers when redirected.
            ("isatty", []) => Value::Bool(false),
            ("fileno", []) => Value::Int(if stream == Stream::Stdout { 1 } else { 2 }),
            _ => Value::opaque(format!("{}.{name}()", stream.name())),
        })
    }
}
