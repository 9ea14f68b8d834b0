//! `tf.debugging.assert_shapes(shapes)`, as TensorFlow 2.21's `check_ops.py` checks it: each
//! `(tensor, spec)` pair's rank first (a spec of one entry, or none, allows rank 0 or 1; one
//! led by `...` (the `Ellipsis`, not the string) or `'*'` asks for at least as many
//! dimensions), then each dimension in order, an int being a size given explicitly and a
//! string a name whose first dimension fixes its size for the rest (`None` and `'.'` any
//! size; a scalar's one dimension has size 1). A check that fails on static shapes raises
//! `ValueError`, eagerly and while a graph is built: tracelens raises it where the shapes are
//! known. One that depends on a size known only when the graph runs (a `None` dimension) is
//! an `Assert` op of the graph: not claimed. In a graph TensorFlow names a tensor by its
//! graph name (`a:0`), which tracelens knows for a `tf.function`'s arguments only: a failure
//! naming another graph tensor is not claimed.

use std::collections::HashMap;

use super::ops::Args;
use super::shape_text::shape_str;
use crate::diagnostics::Code;
use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};

/// One entry of a specified shape.
enum Symbol {
    /// `None` or `'.'`: any size.
    Any,
    /// An int: that size.
    Size(usize),
    /// A string: one size wherever the name stands.
    Named(String),
    /// `...` (Python's `Ellipsis`; the string `'...'` is a name) or `'*'`: any number of
    /// leading dimensions.
    Leading,
}

/// A `(tensor, spec)` pair whose tensor's shape is known (a `None` dimension where a graph
/// does not know it).
struct Constraint {
    dims: Vec<Option<usize>>,
    /// How the messages name the tensor: `shape=(4, 3) dtype=float32` eagerly, its graph
    /// name in a graph (`None`: not known).
    name: Option<String>,
    /// The rank checks' name: empty eagerly (`Tensor  must have rank 2`), as TensorFlow
    /// prints it; the graph name in a graph.
    rank_name: Option<String>,
    /// Led by `...`/`'*'`.
    leading: bool,
    /// The spec's entries after `...`; `[Size(1)]` for an empty spec.
    symbols: Vec<Symbol>,
}

pub fn call(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    // `data` and `summarize` change the messages of TensorFlow's asserts: not followed.
    if p.args.len() > 1 || p.kwargs.iter().any(|(k, _)| matches!(k.as_ref(), "data" | "summarize")) {
        return Ok(Value::None);
    }
    let prefix = match p.get(usize::MAX, "message") {
        None => String::new(),
        Some(Value::Str(s)) if s.is_empty() => String::new(),
        Some(Value::Str(s)) => format!("{s}.  "),
        Some(_) => return Ok(Value::None),
    };
    let Some(shapes @ (Value::List(_) | Value::Tuple(_))) = p.get(0, "shapes") else { return Ok(Value::None) };
    let mut constraints = Vec::new();
    for pair in interp.iterate(shapes)? {
        let (Value::Tuple(_) | Value::List(_)) = pair else { return Ok(Value::None) };
        let items = interp.iterate(&pair)?;
        let [x, spec] = items.as_slice() else { return Ok(Value::None) };
        if spec.is_none() {
            continue;
        }
        let Some(c) = constraint(interp, x, spec)? else { return Ok(Value::None) };
        constraints.push(c);
    }
    match failure(&constraints) {
        Some(Some(msg)) => Err(interp.raise("ValueError", Code::ShapeMismatch, format!("{prefix}{msg}"))),
        _ => Ok(Value::None),
    }
}

fn constraint(interp: &mut Interp, x: &Value, spec: &Value) -> PyResult<Option<Constraint>> {
    let Some((dims, dtype)) = super::partial::dims_of(x) else { return Ok(None) };
    let (name, rank_name) = if super::in_graph(interp) {
        let graph_name = match x {
            Value::Array(a) => interp.tf.graph_input_names.get(&(std::rc::Rc::as_ptr(a) as usize)).cloned(),
            _ => None,
        };
        (graph_name.clone(), graph_name)
    } else {
        (Some(format!("shape={} dtype={}", shape_str(&dims), dtype.name())), Some(String::new()))
    };
    let (Value::Tuple(_) | Value::List(_)) = spec else { return Ok(None) };
    let mut symbols = Vec::new();
    for entry in interp.iterate(spec)? {
        symbols.push(match entry {
            Value::None => Symbol::Any,
            Value::Ellipsis => Symbol::Leading,
            Value::Int(n) if n >= 0 => Symbol::Size(n as usize),
            Value::Str(s) => match &*s {
                "." => Symbol::Any,
                "*" => Symbol::Leading,
                // A string that reads as an int is a size to TensorFlow (`int('3')`).
                name if name.trim().parse::<i64>().is_ok() => return Ok(None),
                name => Symbol::Named(name.to_string()),
            },
            _ => return Ok(None),
        });
    }
    let leading = matches!(symbols.first(), Some(Symbol::Leading));
    if leading {
        symbols.remove(0);
    }
    // `...` anywhere else is TensorFlow's own ValueError: not claimed.
    if symbols.iter().any(|s| matches!(s, Symbol::Leading)) {
        return Ok(None);
    }
    if symbols.is_empty() {
        symbols.push(Symbol::Size(1));
    }
    Ok(Some(Constraint { dims, name, rank_name, leading, symbols }))
}

/// The first check that fails, in TensorFlow's order (every pair's rank, then the sizes):
/// `Some(Some(message))`; `Some(None)` when it fails with a name tracelens does not know;
/// `None` when every check tracelens can make holds.
fn failure(constraints: &[Constraint]) -> Option<Option<String>> {
    for c in constraints {
        let rank = c.dims.len();
        let wanted = c.symbols.len();
        let (holds, text) = match (c.leading, wanted <= 1) {
            (true, true) => continue,
            (true, false) => (rank >= wanted, format!("rank at least {wanted}")),
            (false, true) => (rank <= 1, "rank in (0, 1)".to_string()),
            (false, false) => (rank == wanted, format!("rank {wanted}")),
        };
        if !holds {
            let Some(name) = &c.rank_name else { return Some(None) };
            return Some(Some(format!("Tensor {name} must have {text}.  Received rank {rank}, shape {}", shape_str(&c.dims))));
        }
    }
    // A name's size, the tensor that fixed it and at which dimension.
    let mut named: HashMap<&str, (Option<usize>, &Constraint, i64)> = HashMap::new();
    for c in constraints {
        // A scalar's sizes are `(1,)`.
        let actual: Vec<Option<usize>> = if c.dims.is_empty() { vec![Some(1)] } else { c.dims.clone() };
        for (i, symbol) in c.symbols.iter().enumerate() {
            let dim = if c.leading { i as i64 - c.symbols.len() as i64 } else { i as i64 };
            let at = if dim < 0 { actual.len() as i64 + dim } else { dim };
            let size = *actual.get(usize::try_from(at).ok()?)?;
            let (specified, by) = match symbol {
                Symbol::Any | Symbol::Leading => continue,
                Symbol::Size(n) => (Some(*n), "Specified explicitly".to_string()),
                Symbol::Named(name) => match named.get(name.as_str()) {
                    None => {
                        named.insert(name.as_str(), (size, c, dim));
                        continue;
                    }
                    Some((fixed, by, by_dim)) => {
                        let Some(by_name) = &by.name else { return Some(None) };
                        (*fixed, format!("Specified by tensor {by_name} dimension {by_dim}"))
                    }
                },
            };
            // A size known only when the graph runs is checked by an `Assert` op then.
            let (Some(size), Some(specified)) = (size, specified) else { continue };
            if size != specified {
                let Some(name) = &c.name else { return Some(None) };
                let shape = shape_str(&c.dims);
                return Some(Some(format!(
                    "{by}.  Tensor {name} dimension {dim} must have size {specified}.  Received size {size}, shape {shape}"
                )));
            }
        }
    }
    None
}
