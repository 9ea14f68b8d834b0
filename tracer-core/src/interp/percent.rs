//! `fmt % args`, printf-style formatting as CPython 3.11 does it: mapping keys `%(name)s`,
//! the flags `-+ #0`, widths and precisions (`*` takes them from the arguments), the
//! conversions `diouxXeEfFgGcrsa%`, and Python's errors for too few or too many arguments
//! and for an argument of the wrong type. Every piece of text is budgeted before it is made.

use super::ops::format_number;
use super::value::Value;
use super::{Interp, PyResult};
use crate::diagnostics::Code;
use crate::interp::model::array::Array;
use std::rc::Rc;

/// One conversion's flags, width and precision.
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: u128,
    precision: Option<u128>,
}

impl Spec {
    /// The same conversion as a `format()` spec.
    fn format_spec(&self, conv: char) -> String {
        let mut s = String::new();
        if self.left {
            s.push('<');
        }
        s.push_str(sign_of(false, self));
        if self.alt {
            s.push('#');
        }
        if self.zero && !self.left {
            s.push('0');
        }
        if self.width > 0 {
            s.push_str(&self.width.to_string());
        }
        if let Some(p) = self.precision.filter(|_| !matches!(conv, 'd' | 'i' | 'u' | 'o' | 'x' | 'X')) {
            s.push_str(&format!(".{p}"));
        }
        s.push(if matches!(conv, 'i' | 'u') { 'd' } else { conv });
        s
    }
}

/// The arguments still to convert: a tuple's items in turn, or one value used once.
struct Args {
    items: Vec<Value>,
    next: usize,
}

impl Args {
    fn new(args: Value) -> Args {
        match args {
            Value::Tuple(t) => Args { items: (*t).clone(), next: 0 },
            other => Args::new_single(other),
        }
    }
    fn new_single(v: Value) -> Args {
        Args { items: vec![v], next: 0 }
    }
    fn next(&mut self) -> Option<Value> {
        let v = self.items.get(self.next).cloned();
        self.next += usize::from(v.is_some());
        v
    }
    fn left_over(&self) -> bool {
        self.next < self.items.len()
    }
}

/// Reads a run of decimal digits, saturating (a width past memory is stopped by the budget).
fn digits(chars: &[char], i: &mut usize) -> u128 {
    let mut n: u128 = 0;
    while let Some(d) = chars.get(*i).and_then(|c| c.to_digit(10)) {
        n = n.saturating_mul(10).saturating_add(u128::from(d));
        *i += 1;
    }
    n
}

impl Interp<'_> {
    pub(super) fn percent_format(&mut self, fmt: &str, args: &Value) -> PyResult<Value> {
        if let Value::Opaque(_) = args {
            return Err(self.stop_unknown("%-formatting with unknown arguments"));
        }
        // CPython: a mapping (anything with `__getitem__` but a tuple or a string) serves
        // `%(key)s`; a tuple gives the positional arguments, anything else is the one.
        let mapping = match args {
            Value::Dict(_) | Value::List(_) => Some(args.clone()),
            Value::Instance(inst) if inst.tuple.is_none() && inst.class.lookup("__getitem__").is_some() => Some(args.clone()),
            _ => None,
        };
        let mut next = Args::new(args.clone());
        let chars: Vec<char> = fmt.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '%' {
                out.push(chars[i]);
                i += 1;
                continue;
            }
            i += 1;
            if chars.get(i) == Some(&'%') {
                out.push('%');
                i += 1;
                continue;
            }
            if chars.get(i) == Some(&'(') {
                let Some(map) = &mapping else { return Err(self.type_error("format requires a mapping")) };
                let (mut depth, start) = (1, i + 1);
                i += 1;
                while i < chars.len() && depth > 0 {
                    depth += match chars[i] {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    i += 1;
                }
                if depth > 0 {
                    return Err(self.value_error("incomplete format key"));
                }
                let key: String = chars[start..i - 1].iter().collect();
                // The keyed value becomes the arguments, a single one (CPython's state).
                next = Args::new_single(self.getitem(map, Value::str(&key))?);
            }
            let mut spec = Spec::default();
            while let Some(c) = chars.get(i) {
                match c {
                    '-' => spec.left = true,
                    '+' => spec.plus = true,
                    ' ' => spec.space = true,
                    '#' => spec.alt = true,
                    '0' => spec.zero = true,
                    _ => break,
                }
                i += 1;
            }
            if chars.get(i) == Some(&'*') {
                i += 1;
                let w = self.star_argument(&mut next)?;
                spec.left |= w < 0;
                spec.width = u128::from(w.unsigned_abs());
            } else {
                spec.width = digits(&chars, &mut i);
            }
            if chars.get(i) == Some(&'.') {
                i += 1;
                spec.precision = Some(if chars.get(i) == Some(&'*') {
                    i += 1;
                    u128::try_from(self.star_argument(&mut next)?).unwrap_or(0)
                } else {
                    digits(&chars, &mut i)
                });
            }
            while matches!(chars.get(i), Some('h' | 'l' | 'L')) {
                i += 1;
            }
            let Some(&conv) = chars.get(i) else { return Err(self.value_error("incomplete format")) };
            i += 1;
            let Some(arg) = next.next() else { return Err(self.type_error("not enough arguments for format string")) };
            if !"diouxXeEfFgGcrsa".contains(conv) {
                return Err(self.value_error(format!("unsupported format character '{conv}' ({:#x}) at index {}", u32::from(conv), i - 1)));
            }
            let piece = self.percent_one(conv, &spec, &arg)?;
            self.afford_or_stop(out.len() as u128 + piece.len() as u128, "the formatted string")?;
            out.push_str(&piece);
        }
        if mapping.is_none() && next.left_over() {
            return Err(self.type_error("not all arguments converted during string formatting"));
        }
        Ok(Value::str(&out))
    }

    /// The Python number CPython takes from an array for a numeric conversion: `int(x)` for
    /// `%d` (a `TypeError` from it, a tracer's included, becomes "a real number is required"),
    /// `x.__index__()` for `%x` and `%c`, `float(x)` for `%f` (whose errors propagate, so
    /// under `jit` it is JAX's `ConcretizationTypeError`).
    fn percent_number(&mut self, conv: char, a: &Rc<Array>) -> PyResult<Value> {
        let abstract_tracer = a.is_tracer() && a.known().is_none();
        let type_name = match a.tracer() {
            Some(t) => crate::interp::model::state::tracer_class_of(self, t.trace),
            _ if a.numpy.get() => "numpy.ndarray",
            _ => "jaxlib._jax.ArrayImpl",
        };
        match conv {
            'd' | 'i' | 'u' => {
                if abstract_tracer || (a.aval.ndim() != 0 && !a.numpy.get()) {
                    return Err(self.type_error(format!("%{conv} format: a real number is required, not {type_name}")));
                }
                crate::interp::model::numpy::array_to_python(self, a, "int")
            }
            'o' | 'x' | 'X' | 'c' => {
                if abstract_tracer || a.aval.ndim() != 0 || !a.aval.dtype.is_integer() {
                    return Err(self.type_error(match conv {
                        'c' => "%c requires int or char".to_string(),
                        _ => format!("%{conv} format: an integer is required, not {type_name}"),
                    }));
                }
                crate::interp::model::numpy::array_index(self, a).map(Value::Int)
            }
            _ => crate::interp::model::numpy::array_to_float(self, a),
        }
    }

    /// A `*` width or precision, taken from the arguments.
    fn star_argument(&mut self, next: &mut Args) -> PyResult<i64> {
        match next.next() {
            None => Err(self.type_error("not enough arguments for format string")),
            Some(Value::Int(n)) => Ok(n),
            Some(Value::Bool(b)) => Ok(i64::from(b)),
            Some(Value::Opaque(_)) => Err(self.stop_unknown("a %-format width or precision that is unknown")),
            Some(_) => Err(self.type_error("* wants int")),
        }
    }

    /// One conversion of one argument, padded to its width.
    fn percent_one(&mut self, conv: char, spec: &Spec, arg: &Value) -> PyResult<String> {
        self.afford_or_stop(spec.width.saturating_add(spec.precision.unwrap_or(0)), "formatted text")?;
        if let (Value::Array(a), 'd' | 'i' | 'u' | 'o' | 'x' | 'X' | 'c' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G') = (arg, conv) {
            if !a.tf.get() {
                let number = self.percent_number(conv, a)?;
                return self.percent_one(conv, spec, &number);
            }
            return self.format_value(arg, &spec.format_spec(conv));
        }
        let (sign, prefix, body) = match conv {
            's' | 'r' | 'a' => {
                let mut s = match conv {
                    's' => self.to_str(arg)?,
                    'r' => self.repr(arg)?,
                    _ => ascii_escape(&self.repr(arg)?),
                };
                if let Some(p) = spec.precision {
                    s = s.chars().take(usize::try_from(p).unwrap_or(usize::MAX)).collect();
                }
                return Ok(pad(String::new(), s, spec, false));
            }
            'c' => {
                let c = match arg {
                    Value::Int(n) => match u32::try_from(*n).ok().filter(|n| *n < 0x11_0000) {
                        Some(n) => char::from_u32(n).map(String::from).unwrap_or_default(),
                        None => return Err(self.raise("OverflowError", Code::PythonException, "%c arg not in range(0x110000)")),
                    },
                    Value::Str(s) if s.chars().count() == 1 => s.to_string(),
                    Value::Opaque(_) => return Err(self.stop_unknown("%c of an unknown value")),
                    _ => return Err(self.type_error("%c requires int or char")),
                };
                return Ok(pad(String::new(), c, spec, false));
            }
            'd' | 'i' | 'u' | 'o' | 'x' | 'X' => {
                let n = match arg {
                    Value::Int(n) => *n,
                    Value::Bool(b) => i64::from(*b),
                    Value::Float(f) if matches!(conv, 'd' | 'i' | 'u') => match super::int_math::float_to_int(*f) {
                        Ok(Value::Int(n)) => n,
                        Ok(_) => return Err(self.stop_unknown("an integer too large to model")),
                        Err((class, message)) => return Err(self.raise(class, Code::PythonException, message)),
                    },
                    // A number whose value is not known: what it prints is not known.
                    Value::Opaque(_) | Value::Instance(_) | Value::UnknownNumber(_) => {
                        return Err(self.stop_unknown(format!("%{conv} of a value tracelens does not format")))
                    }
                    other if matches!(conv, 'd' | 'i' | 'u') => {
                        return Err(self.type_error(format!("%{conv} format: a real number is required, not {}", other.type_name())))
                    }
                    other => return Err(self.type_error(format!("%{conv} format: an integer is required, not {}", other.type_name()))),
                };
                let magnitude = n.unsigned_abs();
                let mut digits = match conv {
                    'o' => format!("{magnitude:o}"),
                    'x' => format!("{magnitude:x}"),
                    'X' => format!("{magnitude:X}"),
                    _ => magnitude.to_string(),
                };
                if let Some(p) = spec.precision.and_then(|p| usize::try_from(p).ok()) {
                    if digits.len() < p {
                        digits = format!("{}{digits}", "0".repeat(p - digits.len()));
                    }
                }
                let prefix = match conv {
                    'o' if spec.alt => "0o",
                    'x' if spec.alt => "0x",
                    'X' if spec.alt => "0X",
                    _ => "",
                };
                (sign_of(n < 0, spec), prefix, digits)
            }
            _ => {
                let f = match arg {
                    Value::Float(f) => *f,
                    Value::Int(n) => *n as f64,
                    Value::Bool(b) => f64::from(u8::from(*b)),
                    // A number whose value is not known: what it prints is not known.
                    Value::Opaque(_) | Value::Instance(_) | Value::UnknownNumber(_) => {
                        return Err(self.stop_unknown(format!("%{conv} of a value tracelens does not format")))
                    }
                    other => return Err(self.type_error(format!("must be real number, not {}", other.type_name()))),
                };
                let body = if f.is_nan() {
                    "nan".to_string()
                } else if f.is_infinite() {
                    "inf".to_string()
                } else {
                    let lower = conv.to_ascii_lowercase();
                    let precision = spec.precision.unwrap_or(6);
                    // `#` keeps a `g`'s trailing zeros, which the formatter does not model.
                    let formatted = if spec.alt { None } else { format_number(&Value::Float(f.abs()), &format!(".{precision}{lower}")) };
                    match formatted {
                        Some(s) => s,
                        None => return Err(self.stop_unknown(format!("%-formatting with '{conv}' and these flags"))),
                    }
                };
                let body = if conv.is_ascii_uppercase() { body.to_ascii_uppercase() } else { body };
                (sign_of(f.is_sign_negative() && !f.is_nan(), spec), "", body)
            }
        };
        Ok(pad(format!("{sign}{prefix}"), body, spec, !spec.left && spec.zero))
    }
}

fn sign_of(negative: bool, spec: &Spec) -> &'static str {
    match (negative, spec.plus, spec.space) {
        (true, _, _) => "-",
        (false, true, _) => "+",
        (false, false, true) => " ",
        _ => "",
    }
}

/// `head` (sign and prefix) and `body` padded to the width: spaces on the right for `-`,
/// zeros between head and body for `0` on a number, else spaces on the left.
fn pad(head: String, body: String, spec: &Spec, zeros: bool) -> String {
    let len = (head.chars().count() + body.chars().count()) as u128;
    let fill = usize::try_from(spec.width.saturating_sub(len)).unwrap_or(0);
    if spec.left {
        format!("{head}{body}{}", " ".repeat(fill))
    } else if zeros {
        format!("{head}{}{body}", "0".repeat(fill))
    } else {
        format!("{}{head}{body}", " ".repeat(fill))
    }
}

/// `ascii(x)` from `repr(x)`: every character past ASCII as its Python escape.
fn ascii_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match u32::from(c) {
            n if n < 0x80 => out.push(c),
            n if n < 0x100 => out.push_str(&format!("\\x{n:02x}")),
            n if n < 0x1_0000 => out.push_str(&format!("\\u{n:04x}")),
            n => out.push_str(&format!("\\U{n:08x}")),
        }
    }
    out
}
