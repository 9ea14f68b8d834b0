//! `enumerate`, `zip`, `map`, `filter` and `itertools.chain`, lazy as in Python.
//!
//! Each one advances its inner iterators only when it is advanced itself. The difference is
//! what a training loop sees: `for step, batch in enumerate(dataset()):` over a `while True:`
//! generator breaks after its last step, long before the generator's end, which the
//! interpreter does not know; `zip(range(steps), loader)` stops with `range`. Draining the
//! inner iterator first would reach that unknown end and lose every item.

use std::cell::RefCell;
use std::rc::Rc;

use super::value::{PyIter, Value};
use super::{Interp, PyResult};

/// A lazy adapter's state; the inner values are iterators (made when the adapter is, as
/// Python calls `iter()` on each argument there).
#[derive(Clone, Debug)]
pub enum Lazy {
    Enumerate {
        inner: Value,
        next: i64,
    },
    Zip {
        inners: Vec<Value>,
        strict: bool,
    },
    Map {
        f: Value,
        inners: Vec<Value>,
    },
    /// `f` is `None` for `filter(None, it)`: an item's own truth decides.
    Filter {
        f: Value,
        inner: Value,
    },
    Chain {
        iterables: Vec<Value>,
        at: usize,
        current: Option<Value>,
    },
}

impl Lazy {
    pub fn type_name(&self) -> &'static str {
        match self {
            Lazy::Enumerate { .. } => "enumerate",
            Lazy::Zip { .. } => "zip",
            Lazy::Map { .. } => "map",
            Lazy::Filter { .. } => "filter",
            Lazy::Chain { .. } => "chain",
        }
    }
}

impl Interp<'_> {
    /// The iterator of an adapter whose arguments the caller made iterators already (a
    /// `TypeError` for one that is not iterable is raised there, as Python raises it).
    pub(super) fn make_lazy(&mut self, lazy: Lazy) -> Value {
        let v = Value::Iterator(Rc::new(RefCell::new(PyIter::Lazy(lazy))));
        crate::interp::model::state::note_born(self, &v);
        v
    }

    pub(super) fn iterators_of(&mut self, iterables: &[Value]) -> PyResult<Vec<Value>> {
        iterables.iter().map(|v| self.get_iter(v)).collect()
    }

    /// The next item of the adapter held by `state` (no borrow of it is held while inner
    /// iterators advance or a function runs: they may reach the adapter again).
    pub(super) fn next_lazy(&mut self, state: &Rc<RefCell<PyIter>>) -> PyResult<Option<Value>> {
        // A copy of the state (its values are shared handles): the borrow ends here.
        let lazy = match &*state.borrow() {
            PyIter::Lazy(lazy) => lazy.clone(),
            _ => return Ok(None),
        };
        match lazy {
            Lazy::Enumerate { inner, next: count } => {
                let Some(item) = self.next_item(&inner)? else { return Ok(None) };
                if let PyIter::Lazy(Lazy::Enumerate { next, .. }) = &mut *state.borrow_mut() {
                    *next = count.saturating_add(1);
                }
                Ok(Some(Value::tuple(vec![Value::Int(count), item])))
            }
            Lazy::Zip { inners, strict } => self.next_zipped(&inners, strict),
            Lazy::Map { f, inners } => {
                let mut args = Vec::with_capacity(inners.len());
                for inner in &inners {
                    match self.next_item(inner)? {
                        Some(item) => args.push(item),
                        None => return Ok(None),
                    }
                }
                self.call(&f, args, Vec::new()).map(Some)
            }
            Lazy::Filter { f, inner } => {
                while let Some(item) = self.next_item(&inner)? {
                    self.tick()?;
                    let keep = if f.is_none() { item.clone() } else { self.call(&f, vec![item.clone()], Vec::new())? };
                    if self.truthy(&keep)? {
                        return Ok(Some(item));
                    }
                }
                Ok(None)
            }
            Lazy::Chain { .. } => self.next_chained(state),
        }
    }

    fn next_zipped(&mut self, inners: &[Value], strict: bool) -> PyResult<Option<Value>> {
        let mut items = Vec::with_capacity(inners.len());
        for (i, inner) in inners.iter().enumerate() {
            match self.next_item(inner)? {
                Some(item) => items.push(item),
                None if !strict => return Ok(None),
                None if i > 0 => return Err(self.value_error(format!("zip() argument {} is shorter than {}", i + 1, arguments_before(i)))),
                None => {
                    for (j, other) in inners.iter().enumerate().skip(1) {
                        if self.next_item(other)?.is_some() {
                            return Err(self.value_error(format!("zip() argument {} is longer than {}", j + 1, arguments_before(j))));
                        }
                    }
                    return Ok(None);
                }
            }
        }
        Ok(Some(Value::tuple(items)))
    }

    fn next_chained(&mut self, state: &Rc<RefCell<PyIter>>) -> PyResult<Option<Value>> {
        loop {
            self.tick()?;
            let (current, next_iterable) = match &*state.borrow() {
                PyIter::Lazy(Lazy::Chain { iterables, at, current }) => (current.clone(), iterables.get(*at).cloned()),
                _ => return Ok(None),
            };
            let current = match current {
                Some(it) => it,
                None => {
                    let Some(iterable) = next_iterable else { return Ok(None) };
                    let it = self.get_iter(&iterable)?;
                    if let PyIter::Lazy(Lazy::Chain { at, current, .. }) = &mut *state.borrow_mut() {
                        *at += 1;
                        *current = Some(it.clone());
                    }
                    it
                }
            };
            if let Some(item) = self.next_item(&current)? {
                return Ok(Some(item));
            }
            if let PyIter::Lazy(Lazy::Chain { current, .. }) = &mut *state.borrow_mut() {
                *current = None;
            }
        }
    }
}

/// `argument 1` / `arguments 1-3`: the arguments before the (0-based) `i`th, as `zip(strict=True)`
/// names them.
fn arguments_before(i: usize) -> String {
    if i == 1 {
        "argument 1".into()
    } else {
        format!("arguments 1-{i}")
    }
}
