//! Python's object protocol over `Value`: truth, arithmetic, comparison, hashing, repr and
//! str, attributes, items and iteration. Arrays defer to `crate::interp::model::numpy`.
//!
//! Size: one concept, Python's object protocol: each operator family (arithmetic, comparison,
//! hashing, repr, items, attributes) is a few methods of `Interp` sharing the same coercions. A
//! split by protocol is possible and not yet done.

use std::cell::RefCell;
use std::rc::Rc;

use crate::diagnostics::Code;
use crate::interp::model::numpy as jnp;
use crate::interp::model::stmt;
use crate::interp::model::JaxObjectView;
use crate::interp::model::TfObjectView;
use crate::syntax::ast::{BinOp, CmpOp, Expr, UnaryOp};

use super::builtins::Builtin;
use super::fork::Slot;
use super::value::{repr_float, BuiltinClass, Dict, HashKey, Instance, PyIter, Value};
use super::{Ctx, Interp, PyResult};
use crate::syntax::ast::Name;

impl<'l> Interp<'l> {
    /// Python truth of a value used by `if`/`while`/`and`/`or`/`assert` (`what` names which).
    pub fn truthy_at(&mut self, v: &Value, what: &str, expr: &Expr) -> PyResult<bool> {
        match v {
            Value::Array(a) if a.tf.get() => crate::interp::model::tf::tensor::truth(self, a, what, Some(expr)),
            Value::Array(a) => jnp::array_bool(self, a, what, Some(expr)),
            // A shim's own control flow is written for the values it is given: on a tracer of
            // unknown aval it may be a test JAX never makes (`if x.dtype == ...`).
            Value::Opaque(o) if o.tracer && crate::interp::model::tf::in_graph(self) => {
                crate::interp::model::tf::partial::truth(self, what)
            }
            Value::Opaque(o) if o.tracer && !self.in_library() => Err(jnp::unknown_tracer_bool(self, what, Some(expr))),
            Value::Builtin(_) if crate::interp::model::tf::partial::of(v).is_some() => crate::interp::model::tf::partial::truth(self, what),
            _ => self.truthy(v),
        }
    }

    pub fn truthy(&mut self, v: &Value) -> PyResult<bool> {
        Ok(match v {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Complex(a, b) => *a != 0.0 || *b != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::List(l) => !l.borrow().is_empty(),
            Value::Dict(d) | Value::Set(d) => !d.borrow().is_empty(),
            Value::Range(a, b, s) => range_len(*a, *b, *s) > 0,
            Value::Array(a) if a.tf.get() => return crate::interp::model::tf::tensor::truth(self, a, "bool", None),
            Value::Array(a) => return jnp::array_bool(self, a, "bool", None),
            Value::Builtin(_) if crate::interp::model::tf::partial::of(v).is_some() => {
                return crate::interp::model::tf::partial::truth(self, "bool")
            }
            Value::Instance(inst) => {
                if let Some(t) = &inst.tuple {
                    return Ok(!t.is_empty());
                }
                if let Some(m) = inst.class.lookup("__bool__") {
                    let r = self.call_method_value(v, m, Vec::new())?;
                    return self.truthy(&r);
                }
                if let Some(m) = inst.class.lookup("__len__") {
                    let r = self.call_method_value(v, m, Vec::new())?;
                    return self.truthy(&r);
                }
                true
            }
            Value::Opaque(o) if o.tracer && !self.in_library() => return Err(jnp::unknown_tracer_bool(self, "bool", None)),
            Value::Opaque(o) => return Err(self.stop_unknown(format!("the truth of an unknown value ({})", o.what))),
            Value::UnknownNumber(_) => return Err(self.stop_unknown("the truth of a Python number whose value is not known")),
            Value::Iterator(_) => true,
            _ => true,
        })
    }

    fn call_method_value(&mut self, recv: &Value, m: Value, args: Vec<Value>) -> PyResult<Value> {
        let bound = self.bind_method(recv, m);
        self.call(&bound, args, Vec::new())
    }

    /// Calls `recv.name(*args)` if the instance's class defines it.
    pub fn call_dunder(&mut self, recv: &Value, name: &str, args: Vec<Value>) -> PyResult<Option<Value>> {
        if let Value::Instance(inst) = recv {
            if let Some(m) = inst.class.lookup(name) {
                return Ok(Some(self.call_method_value(recv, m, args)?));
            }
        }
        Ok(None)
    }

    pub fn binary_op(&mut self, op: BinOp, l: Value, r: Value) -> PyResult<Value> {
        // An unknown operand makes an unknown result; it keeps the operand's origin. With a
        // tracer on either side it is a tracer: arithmetic on a tracer gives one or raises.
        if l.is_opaque() || r.is_opaque() {
            return Ok(unknown_result(l, r));
        }
        if let Some(v) = unknown_number_op(op, &l, &r) {
            return Ok(v);
        }
        if crate::interp::model::tf::is_tf(&l) || crate::interp::model::tf::is_tf(&r) {
            return stmt::recorded(self, stmt::Call::BinOp(op.symbol()), &[&l, &r], &Vec::new(), |this| {
                crate::interp::model::tf::tensor::binary_operator(this, op, &l, &r)
            });
        }
        if let (BinOp::Mod, Value::Str(fmt)) = (op, &l) {
            // `str.__mod__` comes first and formats any right operand, an array included.
            return self.percent_format(fmt, &r);
        }
        if matches!(l, Value::Array(_)) || matches!(r, Value::Array(_)) {
            if let Value::Instance(_) = &r {
                if let Some(v) = self.call_dunder(&r, reflected_dunder(op), vec![l.clone()])? {
                    return Ok(v);
                }
            }
            return stmt::recorded(self, stmt::Call::BinOp(op.symbol()), &[&l, &r], &Vec::new(), |this| jnp::binary_op(this, op, &l, &r));
        }
        if let Some(v) = numeric_binop(op, &l, &r) {
            return v.map_err(|(class, msg)| self.raise(class, Code::PythonException, msg));
        }
        match (op, &l, &r) {
            (BinOp::Add, Value::Str(a), Value::Str(b)) => {
                if !self.afford(a.len() as u128 + b.len() as u128, "the concatenated string")? {
                    return Ok(Value::opaque("the concatenated string"));
                }
                return Ok(Value::str(&format!("{a}{b}")));
            }
            (BinOp::Add, Value::List(a), Value::List(b)) => {
                let bytes = (a.borrow().len() + b.borrow().len()) as u128 * super::memory::VALUE_BYTES;
                if !self.afford(bytes, "the concatenated list")? {
                    return Ok(Value::opaque("the concatenated list"));
                }
                let mut items = a.borrow().clone();
                items.extend(b.borrow().iter().cloned());
                return Ok(self.new_list(items));
            }
            (BinOp::Add, Value::Tuple(a), Value::Tuple(b)) => {
                if !self.afford((a.len() + b.len()) as u128 * super::memory::VALUE_BYTES, "the concatenated tuple")? {
                    return Ok(Value::opaque("the concatenated tuple"));
                }
                let mut items = (**a).clone();
                items.extend(b.iter().cloned());
                return Ok(Value::tuple(items));
            }
            (BinOp::Mul, Value::List(_) | Value::Tuple(_) | Value::Str(_), Value::Int(_) | Value::Bool(_))
            | (BinOp::Mul, Value::Int(_) | Value::Bool(_), Value::List(_) | Value::Tuple(_) | Value::Str(_)) => {
                let (seq, n) = if matches!(l, Value::Int(_) | Value::Bool(_)) { (&r, &l) } else { (&l, &r) };
                let n = as_int(n).unwrap_or(0).max(0) as usize;
                return self.repeat_seq(seq, n);
            }
            (BinOp::BitOr, Value::Dict(a), Value::Dict(b)) => {
                let mut d = a.borrow().clone();
                for (k, v) in b.borrow().items() {
                    let h = self.hash_key(&k)?;
                    d.insert(h, k, v);
                }
                return Ok(self.new_dict(d));
            }
            (BinOp::BitOr | BinOp::BitAnd | BinOp::Sub | BinOp::BitXor, Value::Set(a), Value::Set(b)) => {
                let (a, b) = (a.borrow().clone(), b.borrow().clone());
                let mut out = Dict::default();
                let keep = |in_a: bool, in_b: bool| match op {
                    BinOp::BitOr => in_a || in_b,
                    BinOp::BitAnd => in_a && in_b,
                    BinOp::Sub => in_a && !in_b,
                    _ => in_a != in_b,
                };
                for (h, (k, v)) in a.entries.iter().chain(b.entries.iter()) {
                    if keep(a.entries.contains_key(h), b.entries.contains_key(h)) {
                        out.insert(h.clone(), k.clone(), v.clone());
                    }
                }
                return Ok(Value::Set(Rc::new(RefCell::new(out))));
            }
            _ => {}
        }
        if let Some(v) = self.call_dunder(&l, dunder(op), vec![r.clone()])? {
            if !is_not_implemented(&v) {
                return Ok(v);
            }
        }
        if let Some(v) = self.call_dunder(&r, reflected_dunder(op), vec![l.clone()])? {
            return Ok(v);
        }
        if op == BinOp::BitOr && super::stdlib::is_union_operand(&l, &r) {
            return Ok(Value::opaque("a union of types (PEP 604)"));
        }
        let msg = format!("unsupported operand type(s) for {}: '{}' and '{}'", op.symbol(), l.type_name(), r.type_name());
        if l.is_none() || r.is_none() {
            if let Some(flow) = crate::interp::model::tf::partial::none_dimension_error(self, &msg) {
                return Err(flow);
            }
        }
        Err(self.type_error(msg))
    }

    pub(super) fn inplace_op(&mut self, op: BinOp, l: Value, r: Value) -> PyResult<Value> {
        if let (BinOp::Add, Value::List(list)) = (op, &l) {
            let items = self.iterate(&r)?;
            self.afford_or_stop((list.borrow().len() + items.len()) as u128 * super::memory::VALUE_BYTES, "the extended list")?;
            self.note_mutation(&l, "list +=")?;
            list.borrow_mut().extend(items);
            return Ok(l);
        }
        let iname = format!("__i{}", &dunder(op)[2..]);
        if let Some(v) = self.call_dunder(&l, &iname, vec![r.clone()])? {
            return Ok(v);
        }
        self.binary_op(op, l, r)
    }

    fn repeat_seq(&mut self, seq: &Value, n: usize) -> PyResult<Value> {
        let (len, item_bytes, what) = match seq {
            Value::Str(s) => (s.len(), 1, "a repeated string"),
            Value::List(l) => (l.borrow().len(), super::memory::VALUE_BYTES, "a repeated list"),
            Value::Tuple(t) => (t.len(), super::memory::VALUE_BYTES, "a repeated tuple"),
            _ => (0, 0, ""),
        };
        if !self.afford(len as u128 * n as u128 * item_bytes, what)? {
            return Ok(Value::opaque(what));
        }
        Ok(match seq {
            Value::Str(s) => Value::str(&s.repeat(n)),
            Value::List(l) => {
                let items: Vec<Value> = l.borrow().iter().cloned().cycle().take(l.borrow().len() * n).collect();
                self.new_list(items)
            }
            Value::Tuple(t) => Value::tuple(t.iter().cloned().cycle().take(t.len() * n).collect()),
            _ => Value::opaque("repeat"),
        })
    }

    pub(super) fn unary_op(&mut self, op: UnaryOp, v: Value, operand: &Expr) -> PyResult<Value> {
        match (op, &v) {
            (UnaryOp::Not, _) => Ok(Value::Bool(!self.truthy_at(&v, "not", operand)?)),
            (_, Value::Opaque(_)) => Ok(v.clone()),
            (_, Value::Builtin(_)) if crate::interp::model::tf::partial::of(&v).is_some() => {
                Ok(Value::opaque_tracer("an op on a symbolic tensor"))
            }
            (_, Value::Array(a)) if a.tf.get() => crate::interp::model::tf::tensor::unary_operator(self, op, a),
            (UnaryOp::Neg, Value::Builtin(b)) if matches!(&**b, Builtin::Tf(t) if t.is_indexed_slices()) => {
                Ok(Value::opaque("the negation of an IndexedSlices (an IndexedSlices)"))
            }
            (_, Value::Array(a)) => {
                let sym = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Pos => "+",
                    UnaryOp::Invert => "~",
                    UnaryOp::Not => "not ",
                };
                stmt::recorded(self, stmt::Call::Unary(sym), &[&v], &Vec::new(), |this| {
                    jnp::in_numpy_mode(this, &[&v], |this| jnp::unary_op(this, op, a))
                })
            }
            (UnaryOp::Neg | UnaryOp::Pos, Value::UnknownNumber(_)) => Ok(v.clone()),
            (UnaryOp::Neg, Value::Int(i)) => Ok(i.checked_neg().map(Value::Int).unwrap_or_else(|| Value::opaque("big int"))),
            (UnaryOp::Neg, Value::Bool(b)) => Ok(Value::Int(-(*b as i64))),
            (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
            (UnaryOp::Neg, Value::Complex(a, b)) => Ok(Value::Complex(-a, -b)),
            (UnaryOp::Pos, Value::Int(_) | Value::Float(_) | Value::Complex(..)) => Ok(v.clone()),
            (UnaryOp::Pos, Value::Bool(b)) => Ok(Value::Int(*b as i64)),
            (UnaryOp::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
            (UnaryOp::Invert, Value::Bool(b)) => Ok(Value::Int(!(*b as i64))),
            _ => {
                let name = match op {
                    UnaryOp::Neg => "__neg__",
                    UnaryOp::Pos => "__pos__",
                    UnaryOp::Invert => "__invert__",
                    UnaryOp::Not => "__bool__",
                };
                if let Some(r) = self.call_dunder(&v, name, Vec::new())? {
                    return Ok(r);
                }
                let sym = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Pos => "+",
                    _ => "~",
                };
                Err(self.type_error(format!("bad operand type for unary {sym}: '{}'", v.type_name())))
            }
        }
    }

    pub fn compare(&mut self, op: CmpOp, l: &Value, r: &Value) -> PyResult<Value> {
        match op {
            // `tree_equal(a, b) is True` in the user's code: an unknown value may be the
            // `True` or `False` singleton (a tracer never is). The shims keep identity exact:
            // `isinstance(v, C) is not False` is how they ask whether `v` is unknown.
            CmpOp::Is | CmpOp::IsNot if (maybe_bool_singleton(l, r) || maybe_bool_singleton(r, l)) && !self.in_library() => {
                return Ok(Value::opaque("an identity test of an unknown value with a bool"));
            }
            // An unknown result may be the very array it was computed from
            // (`jnp.asarray(x, dtype=d)` with `d` not known returns `x` when `d` is its dtype).
            CmpOp::Is | CmpOp::IsNot if (maybe_same_array(l, r) || maybe_same_array(r, l)) && !self.in_library() => {
                return Ok(Value::opaque("an identity test of an unknown value with an array"));
            }
            // Whether an unknown that may be `None` is `None` is unknown (`Opaque::maybe_none`:
            // `os.environ.get(k)`, a gradient TensorFlow may give as `None`).
            CmpOp::Is | CmpOp::IsNot if maybe_none(l, r) || maybe_none(r, l) => {
                return Ok(Value::opaque("an identity test with None of an unknown that may be None"));
            }
            // Whether an unknown is a given class or function (`type(x) is tuple` of an unknown
            // `x`), or is another unknown, is unknown.
            CmpOp::Is | CmpOp::IsNot if unknown_identity(l, r) || unknown_identity(r, l) => {
                return Ok(Value::opaque("an identity test of an unknown value"));
            }
            CmpOp::Is => return Ok(Value::Bool(self.is_same(l, r))),
            CmpOp::IsNot => return Ok(Value::Bool(!self.is_same(l, r))),
            CmpOp::In | CmpOp::NotIn => {
                // Whether an unknown is in something, or something in an unknown, is unknown.
                if l.is_opaque() || r.is_opaque() {
                    return Ok(Value::opaque("a membership test with a value that is not known"));
                }
                let found = self.contains(r, l)?;
                return Ok(Value::Bool(if op == CmpOp::In { found } else { !found }));
            }
            _ => {}
        }
        if l.is_opaque() || r.is_opaque() {
            return Ok(unknown_result(l.clone(), r.clone()));
        }
        if crate::interp::model::tf::is_tf(l) || crate::interp::model::tf::is_tf(r) {
            return stmt::recorded(self, stmt::Call::Compare(op.symbol()), &[l, r], &Vec::new(), |this| {
                crate::interp::model::tf::tensor::compare_operator(this, op, l, r)
            });
        }
        if matches!(op, CmpOp::Eq | CmpOp::NotEq) {
            if let Some(eq) = crate::interp::model::api::shape_dtype_struct_eq(self, l, r) {
                return Ok(Value::Bool(eq == (op == CmpOp::Eq)));
            }
        }
        if matches!(l, Value::Array(_)) || matches!(r, Value::Array(_)) {
            return stmt::recorded(self, stmt::Call::Compare(op.symbol()), &[l, r], &Vec::new(), |this| jnp::compare_op(this, op, l, r));
        }
        if matches!(l, Value::UnknownNumber(_)) || matches!(r, Value::UnknownNumber(_)) {
            return Ok(Value::opaque("a comparison with a Python number whose value is not known"));
        }
        match op {
            CmpOp::Eq => return Ok(Value::Bool(self.py_eq(l, r)?)),
            CmpOp::NotEq => return Ok(Value::Bool(!self.py_eq(l, r)?)),
            _ => {}
        }
        // Sets order by inclusion: `a <= b` is "a is a subset of b".
        if let (Value::Set(a), Value::Set(b)) = (l, r) {
            let (a, b) = (a.borrow(), b.borrow());
            let within = |x: &Dict, y: &Dict| x.entries.keys().all(|h| y.entries.contains_key(h));
            let (na, nb) = (a.entries.len(), b.entries.len());
            // (`==`, `!=`, `is` and `in` were answered above.)
            return Ok(Value::Bool(match op {
                CmpOp::LtE => within(&a, &b),
                CmpOp::Lt => na < nb && within(&a, &b),
                CmpOp::GtE => within(&b, &a),
                _ => na > nb && within(&b, &a),
            }));
        }
        let ord = self.py_cmp(l, r)?;
        let Some(ord) = ord else {
            if let Some(v) = self.call_dunder(l, cmp_dunder(op), vec![r.clone()])? {
                return Ok(v);
            }
            if super::builtins::unknown_order(l) || super::builtins::unknown_order(r) {
                return Ok(Value::opaque("a comparison of values that are not known"));
            }
            return Err(self.type_error(format!(
                "'{}' not supported between instances of '{}' and '{}'",
                op.symbol(),
                l.type_name(),
                r.type_name()
            )));
        };
        use std::cmp::Ordering::*;
        Ok(Value::Bool(match op {
            CmpOp::Lt => ord == Less,
            CmpOp::LtE => ord != Greater,
            CmpOp::Gt => ord == Greater,
            CmpOp::GtE => ord != Less,
            _ => false,
        }))
    }

    /// Whether `object` holds the attributes `attrs` (the same objects, as `is` tells).
    fn attrs_unchanged(&self, object: &Value, attrs: &[(crate::syntax::ast::Name, Value)]) -> bool {
        let Value::Instance(inst) = object else { return true };
        let now = inst.attrs.borrow();
        let same = |n: &Value, v: &Value| match (n, v) {
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            _ => self.is_same(n, v),
        };
        now.len() == attrs.len() && attrs.iter().all(|(k, v)| now.get(k).is_some_and(|n| same(n, v)))
    }

    fn is_same(&self, l: &Value, r: &Value) -> bool {
        match (l, r) {
            (Value::None, Value::None) | (Value::Ellipsis, Value::Ellipsis) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::DType(a) | Value::TfDType(a), Value::DType(b) | Value::TfDType(b)) => a == b,
            // A builtin function or type and a modelled JAX function are one object each
            // (`type([]) is list`, `type(s) is jax.ShapeDtypeStruct`), however many `Rc`s
            // stand for them.
            (Value::Builtin(a), Value::Builtin(b)) => match (&**a, &**b) {
                (Builtin::Fn(x), Builtin::Fn(y)) => x == y,
                (Builtin::Jax(f), Builtin::Jax(g)) => f == g,
                _ => Rc::ptr_eq(a, b),
            },
            _ => match (l.identity(), r.identity()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
        }
    }

    /// Python `==` on non-array values.
    pub fn py_eq(&mut self, l: &Value, r: &Value) -> PyResult<bool> {
        self.nested("in comparison", |this| this.py_eq_inner(l, r))
    }

    /// Runs `f` one container deeper; past the recursion limit Python's `RecursionError`
    /// (`maximum recursion depth exceeded {what}`), never a Rust stack overflow.
    fn nested<T>(&mut self, what: &str, f: impl FnOnce(&mut Self) -> PyResult<T>) -> PyResult<T> {
        if self.nesting >= self.budgets.max_recursion {
            return Err(self.raise("RecursionError", Code::PythonException, format!("maximum recursion depth exceeded {what}")));
        }
        self.nesting += 1;
        let result = f(self);
        self.nesting -= 1;
        result
    }

    fn py_eq_inner(&mut self, l: &Value, r: &Value) -> PyResult<bool> {
        if let Some(eq) = crate::interp::model::tf::shape_eq(l, r) {
            return Ok(eq);
        }
        if let Some(eq) = treedefs_equal(l, r) {
            return eq.ok_or_else(|| self.stop_unknown("comparing tree structures whose custom data is not known"));
        }
        Ok(match (l, r) {
            (Value::None, Value::None) | (Value::Ellipsis, Value::Ellipsis) => true,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Tuple(a), Value::Tuple(b)) => self.seq_eq(a, b)?,
            (Value::List(a), Value::List(b)) => {
                let (a, b) = (a.borrow().clone(), b.borrow().clone());
                self.seq_eq(&a, &b)?
            }
            (Value::Dict(a), Value::Dict(b)) | (Value::Set(a), Value::Set(b)) => {
                let (a, b) = (a.borrow().clone(), b.borrow().clone());
                if a.len() != b.len() {
                    return Ok(false);
                }
                for (h, (_, v)) in &a.entries {
                    match b.entries.get(h) {
                        Some((_, w)) => {
                            if !self.py_eq(v, w)? {
                                return Ok(false);
                            }
                        }
                        None => return Ok(false),
                    }
                }
                true
            }
            // `tf.float32 == np.float32` and `t.dtype == 'float32'` are true in TensorFlow.
            (Value::DType(a) | Value::TfDType(a), Value::DType(b) | Value::TfDType(b)) => a == b,
            (Value::TfDType(a), Value::Str(s)) | (Value::Str(s), Value::TfDType(a)) => a.name() == &**s,
            // `x.dtype != bool`, `x.dtype == float`, `x.dtype == "float32"`: NumPy makes a dtype of
            // the Python type or the name (a name that is none is unequal).
            (Value::DType(a), t @ (Value::Builtin(_) | Value::Str(_))) | (t @ (Value::Builtin(_) | Value::Str(_)), Value::DType(a))
                if matches!(t, Value::Str(_))
                    || matches!(t, Value::Builtin(b) if matches!(&**b, Builtin::Fn("int" | "float" | "bool" | "complex"))) =>
            {
                super::dtype_hierarchy::dtype_of(t) == Some(*a)
            }
            (Value::Range(a, b, c), Value::Range(d, e, f)) => (a, b, c) == (d, e, f),
            (Value::Opaque(_), _) | (_, Value::Opaque(_)) => return Err(self.stop_unknown("comparison with an unknown value")),
            (Value::Array(_), _) | (_, Value::Array(_)) => {
                if let Some(eq) = crate::interp::model::api::shape_dtype_struct_eq(self, l, r) {
                    return Ok(eq);
                }
                let v = jnp::compare_op(self, CmpOp::Eq, l, r)?;
                return self.truthy(&v);
            }
            (Value::Instance(a), Value::Instance(b)) if a.tuple.is_some() && b.tuple.is_some() => {
                let (x, y) = (a.tuple.clone().unwrap_or_default(), b.tuple.clone().unwrap_or_default());
                Rc::ptr_eq(&a.class, &b.class) && self.seq_eq(&x, &y)?
            }
            (Value::Instance(inst), _) => {
                if let Some(v) = self.call_dunder(l, "__eq__", vec![r.clone()])? {
                    if !is_not_implemented(&v) {
                        return self.truthy(&v);
                    }
                }
                if inst.class.is_dataclass.get() {
                    if let Value::Instance(other) = r {
                        if Rc::ptr_eq(&inst.class, &other.class) {
                            let a = dataclass_field_values(inst);
                            let b = dataclass_field_values(other);
                            return self.seq_eq(&a, &b);
                        }
                    }
                }
                self.is_same(l, r)
            }
            _ => {
                if let (Some(a), Some(b)) = (as_f64(l), as_f64(r)) {
                    if let (Some(x), Some(y)) = (as_int(l), as_int(r)) {
                        return Ok(x == y);
                    }
                    return Ok(a == b);
                }
                self.is_same(l, r)
            }
        })
    }

    fn seq_eq(&mut self, a: &[Value], b: &[Value]) -> PyResult<bool> {
        if a.len() != b.len() {
            return Ok(false);
        }
        for (x, y) in a.iter().zip(b) {
            if !self.py_eq(x, y)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Python ordering on non-array values; `None` when the types do not order.
    pub fn py_cmp(&mut self, l: &Value, r: &Value) -> PyResult<Option<std::cmp::Ordering>> {
        if let (Some(a), Some(b)) = (as_int(l), as_int(r)) {
            return Ok(Some(a.cmp(&b)));
        }
        if let (Some(a), Some(b)) = (as_f64(l), as_f64(r)) {
            return Ok(a.partial_cmp(&b).or(Some(std::cmp::Ordering::Equal)));
        }
        // A named tuple (`sys.version_info`) orders as its items.
        let named = |v: &Value| match v {
            Value::Instance(i) => i.tuple.as_ref().map(|t| Value::tuple(t.clone())),
            _ => None,
        };
        if let (Some(t), _) | (_, Some(t)) = (named(l), named(r)) {
            let (a, b) = if named(l).is_some() { (t, r.clone()) } else { (l.clone(), t) };
            return self.py_cmp(&a, &b);
        }
        match (l, r) {
            (Value::Str(a), Value::Str(b)) => Ok(Some(a.cmp(b))),
            (Value::Tuple(_), Value::Tuple(_)) | (Value::List(_), Value::List(_)) => {
                let (a, b) = (self.iterate(l)?, self.iterate(r)?);
                for (x, y) in a.iter().zip(&b) {
                    if !self.py_eq(x, y)? {
                        return self.nested("in comparison", |this| this.py_cmp(x, y));
                    }
                }
                Ok(Some(a.len().cmp(&b.len())))
            }
            (Value::Opaque(_), _) | (_, Value::Opaque(_)) => Err(self.stop_unknown("ordering of an unknown value")),
            (Value::Array(_), _) | (_, Value::Array(_)) => {
                let lt = jnp::compare_op(self, CmpOp::Lt, l, r)?;
                if self.truthy(&lt)? {
                    return Ok(Some(std::cmp::Ordering::Less));
                }
                let gt = jnp::compare_op(self, CmpOp::Gt, l, r)?;
                Ok(Some(if self.truthy(&gt)? { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Equal }))
            }
            _ => Ok(None),
        }
    }

    pub fn contains(&mut self, container: &Value, item: &Value) -> PyResult<bool> {
        match container {
            Value::Str(s) => match item {
                Value::Str(i) => Ok(s.contains(i.as_ref())),
                _ => Err(self.type_error("'in <string>' requires string as left operand")),
            },
            Value::Dict(d) | Value::Set(d) => {
                let h = self.hash_key(item)?;
                let found = d.borrow().entries.contains_key(&h);
                if !found && self.is_unsized(container) {
                    return Err(self.stop_unknown("membership in a dict whose keys are not all known"));
                }
                Ok(found)
            }
            Value::Opaque(_) => Err(self.stop_unknown("membership in an unknown container")),
            _ => {
                if let Value::Instance(inst) = container {
                    if let Some(m) = inst.class.lookup("__contains__") {
                        let r = self.call_method_value(container, m, vec![item.clone()])?;
                        return self.truthy(&r);
                    }
                }
                for x in self.iterate(container)? {
                    if self.py_eq(&x, item)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    pub fn hash_key(&mut self, v: &Value) -> PyResult<HashKey> {
        match v {
            Value::Tuple(_) | Value::Instance(_) => self.nested("while calling a Python object", |this| this.hash_key_inner(v)),
            _ => self.hash_key_inner(v),
        }
    }

    fn hash_key_inner(&mut self, v: &Value) -> PyResult<HashKey> {
        Ok(match v {
            Value::None => HashKey::None,
            Value::Bool(b) => HashKey::Int(*b as i64),
            Value::Int(i) => HashKey::Int(*i),
            Value::Float(f) => {
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    HashKey::Int(*f as i64)
                } else {
                    HashKey::Float(f.to_bits())
                }
            }
            Value::Str(s) => HashKey::Str(s.clone()),
            Value::Tuple(items) => {
                let mut keys = Vec::with_capacity(items.len());
                for i in items.iter() {
                    keys.push(self.hash_key(i)?);
                }
                HashKey::Tuple(keys)
            }
            Value::Ellipsis => HashKey::Ellipsis,
            Value::DType(d) | Value::TfDType(d) => HashKey::DType(*d),
            Value::Instance(inst) if inst.tuple.is_some() => {
                let items = inst.tuple.clone().unwrap_or_default();
                let mut keys = vec![HashKey::Identity(Rc::as_ptr(&inst.class) as *const u8 as usize)];
                for i in &items {
                    keys.push(self.hash_key(i)?);
                }
                HashKey::Tuple(keys)
            }
            Value::Instance(inst) if inst.class.is_dataclass.get() && inst.class.frozen.get() => {
                let items: Vec<Value> = inst.attrs.borrow().values().cloned().collect();
                let mut keys = vec![HashKey::Identity(Rc::as_ptr(&inst.class) as *const u8 as usize)];
                for i in &items {
                    keys.push(self.hash_key(i)?);
                }
                HashKey::Tuple(keys)
            }
            Value::Instance(inst) if inst.class.is_dataclass.get() && inst.class.lookup("__hash__").is_none() => {
                return Err(self.type_error(format!("unhashable type: '{}'", inst.class.name)))
            }
            Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::Slice(_) => {
                return Err(self.type_error(format!("unhashable type: '{}'", v.type_name())))
            }
            // A NumPy scalar (an item of a NumPy array, `np.asarray(x)[0]`) hashes as its number.
            // A 0-d `np.ndarray` does not hash, but the model does not tell the two apart.
            Value::Array(a) if a.numpy.get() && !a.is_tracer() && a.aval.shape.is_empty() => {
                let item = self.getattr(v, "item")?;
                let number = self.call(&item, Vec::new(), Vec::new())?;
                if matches!(number, Value::Array(_)) {
                    return Err(self.stop_unknown("the hash of a NumPy scalar whose value is not known"));
                }
                return self.hash_key(&number);
            }
            // A `jax.ShapeDtypeStruct` hashes as what its `__eq__` compares (a static argument).
            Value::Array(a)
                if crate::interp::model::api::isinstance_jax(self, v, crate::interp::model::surface::JaxFn::ShapeDtypeStruct)
                    == Some(true) =>
            {
                let mut keys = vec![
                    HashKey::Str(Rc::from("jax.ShapeDtypeStruct")),
                    HashKey::DType(a.aval.dtype),
                    HashKey::Int(i64::from(a.aval.weak)),
                ];
                keys.extend(a.aval.shape.iter().map(|&d| HashKey::Int(d as i64)));
                HashKey::Tuple(keys)
            }
            Value::Array(a) => {
                if a.is_tracer() {
                    return Err(self.type_error("unhashable type: 'DynamicJaxprTracer'"));
                }
                return Err(self.type_error("unhashable type: 'jaxlib._jax.ArrayImpl'"));
            }
            Value::Opaque(_) | Value::UnknownNumber(_) => return Err(self.stop_unknown("the hash of an unknown value")),
            other => HashKey::Identity(other.identity().unwrap_or(0)),
        })
    }

    pub fn repr(&mut self, v: &Value) -> PyResult<String> {
        // Self-containing containers (`a.append(a)`) print as `[...]`, as in Python.
        if self.repr_depth > 64 {
            return Ok("[...]".into());
        }
        self.repr_depth += 1;
        let r = self.repr_inner(v);
        self.repr_depth -= 1;
        r
    }

    fn repr_inner(&mut self, v: &Value) -> PyResult<String> {
        Ok(match v {
            Value::Str(s) => py_str_repr(s),
            Value::Tuple(items) => {
                let parts = self.repr_items(items)?;
                if items.len() == 1 {
                    format!("({},)", parts[0])
                } else {
                    format!("({})", parts.join(", "))
                }
            }
            Value::List(items) => {
                let items = items.borrow().clone();
                format!("[{}]", self.repr_items(&items)?.join(", "))
            }
            Value::Dict(d) => {
                let items = d.borrow().items();
                let mut parts = Vec::new();
                let mut total: u128 = 0;
                for (k, v) in items {
                    self.tick()?;
                    let part = format!("{}: {}", self.repr(&k)?, self.repr(&v)?);
                    total += part.len() as u128 + 2;
                    self.afford_or_stop(total, "the text of a container")?;
                    parts.push(part);
                }
                format!("{{{}}}", parts.join(", "))
            }
            Value::Set(d) => {
                let keys = d.borrow().keys();
                if keys.is_empty() {
                    "set()".into()
                } else {
                    format!("{{{}}}", self.repr_items(&keys)?.join(", "))
                }
            }
            Value::Array(a) if a.tf.get() => crate::interp::model::tf::tensor::repr(self, a)?,
            Value::Array(a) => jnp::array_repr(self, a)?,
            Value::Instance(inst) => {
                if let Some(r) = self.call_dunder(v, "__repr__", Vec::new())? {
                    return self.to_str(&r);
                }
                if let Some(items) = &inst.tuple {
                    let fields = inst.class.fields.borrow().clone();
                    let mut parts = Vec::new();
                    for (f, x) in fields.iter().zip(items) {
                        parts.push(format!("{f}={}", self.repr(x)?));
                    }
                    return Ok(format!("{}({})", inst.class.name, parts.join(", ")));
                }
                if inst.class.is_dataclass.get() {
                    // The fields in their order, whatever order `__init__` and
                    // `__post_init__` set them in; other attributes are not shown.
                    let fields = inst.class.fields.borrow().clone();
                    let attrs: Vec<(Rc<str>, Value)> = {
                        let set = inst.attrs.borrow();
                        fields.iter().filter_map(|f| set.get(f).map(|v| (f.clone(), v.clone()))).collect()
                    };
                    let mut parts = Vec::new();
                    for (k, x) in attrs {
                        parts.push(format!("{k}={}", self.repr(&x)?));
                    }
                    return Ok(format!("{}({})", inst.class.name, parts.join(", ")));
                }
                if inst.class.derives_builtin(BuiltinClass::Exception) {
                    let msg = super::builtins::exception_message(inst);
                    return Ok(format!("{}({})", inst.class.name, py_str_repr(&msg)));
                }
                format!("<{} object>", inst.class.name)
            }
            Value::None
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Float(_)
            | Value::Complex(..)
            | Value::Range(..)
            | Value::Ellipsis
            | Value::Function(_)
            | Value::Class(_)
            | Value::Module(_)
            | Value::DType(_)
            | Value::Opaque(_)
            | Value::Slice(_) => self.to_str(v)?,
            Value::TfDType(d) => format!("tf.{}", d.name()),
            Value::Builtin(b) => match &**b {
                Builtin::Tf(t) => crate::interp::model::tf::text(self, t, true)?,
                _ => self.to_str(v)?,
            },
            other => format!("<{} object>", other.type_name()),
        })
    }

    /// The reprs of a container's items, each a step, and their total within the memory
    /// budget (`repr([[0] * 1000] * 10**6)` would take 3 GB).
    fn repr_items(&mut self, items: &[Value]) -> PyResult<Vec<String>> {
        let mut parts = Vec::with_capacity(items.len());
        let mut total: u128 = 0;
        for item in items {
            self.tick()?;
            let part = self.repr(item)?;
            total += part.len() as u128 + 2;
            self.afford_or_stop(total, "the text of a container")?;
            parts.push(part);
        }
        Ok(parts)
    }

    pub fn to_str(&mut self, v: &Value) -> PyResult<String> {
        Ok(match v {
            Value::None => "None".into(),
            Value::Bool(b) => if *b { "True" } else { "False" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => repr_float(*f),
            Value::Complex(a, b) => {
                if *a == 0.0 {
                    format!("{}j", trim_float(*b))
                } else {
                    format!("({}{}{}j)", trim_float(*a), if *b < 0.0 { "-" } else { "+" }, trim_float(b.abs()))
                }
            }
            Value::Str(s) => s.to_string(),
            Value::Range(a, b, s) => {
                if *s == 1 {
                    format!("range({a}, {b})")
                } else {
                    format!("range({a}, {b}, {s})")
                }
            }
            Value::Ellipsis => "Ellipsis".into(),
            Value::Function(f) => format!("<function {}>", f.qualname),
            Value::Class(c) => format!("<class '{}'>", c.qualname),
            Value::Module(m) => format!("<module '{}'>", m.name),
            Value::DType(d) => d.name().to_string(),
            Value::TfDType(d) => format!("<dtype: '{}'>", d.name()),
            Value::Array(a) if a.tf.get() => crate::interp::model::tf::tensor::str(self, a)?,
            Value::Array(a) => jnp::array_str(self, a)?,
            Value::Instance(inst) => {
                if let Some(r) = self.call_dunder(v, "__str__", Vec::new())? {
                    return self.to_str(&r);
                }
                if inst.class.derives_builtin(BuiltinClass::Exception) && inst.class.lookup("__repr__").is_none() {
                    // Python's `BaseException.__str__`: the one argument's `str`, the tuple's
                    // repr for several (an unknown argument makes the text unknown).
                    // (KeyError's one argument prints as its repr.)
                    let key_error = inst.class.is_subclass_of(&self.classes.get("KeyError"));
                    let args = inst.attrs.borrow().get("args").cloned();
                    return match args {
                        Some(Value::Tuple(items)) if items.len() == 1 && key_error => self.repr(&items[0]),
                        Some(Value::Tuple(items)) if items.len() == 1 => self.to_str(&items[0]),
                        Some(several) if matches!(&several, Value::Tuple(items) if items.len() > 1) => self.repr(&several),
                        _ => Ok(super::builtins::exception_message(inst)),
                    };
                }
                return self.repr(v);
            }
            Value::Builtin(b) => match &**b {
                Builtin::Tf(t) => crate::interp::model::tf::text(self, t, false)?,
                Builtin::Object(o) => match o.python_text() {
                    Some(Some(text)) => text,
                    Some(None) => return Err(self.stop_unknown("the text of a custom node's tree structure")),
                    None => format!("<built-in function {}>", b.name()),
                },
                Builtin::Fn(n) if crate::interp::model::tf::classes::class_text(n).is_some() => {
                    crate::interp::model::tf::classes::class_text(n).unwrap_or_default()
                }
                // `int`, `NoneType`, ...: Python's classes print as classes.
                Builtin::Fn(n) if b.type_name() == "type" => format!("<class '{n}'>"),
                _ => format!("<built-in function {}>", b.name()),
            },
            Value::Opaque(_) | Value::UnknownNumber(_) => return Err(self.stop_unknown("the text of an unknown value")),
            Value::Slice(s) => {
                let parts = [self.repr(&s[0])?, self.repr(&s[1])?, self.repr(&s[2])?];
                format!("slice({}, {}, {})", parts[0], parts[1], parts[2])
            }
            _ => return self.repr(v),
        })
    }

    /// `format(value, spec)`, as f-strings and `str.format` use it.
    pub fn format_value(&mut self, v: &Value, spec: &str) -> PyResult<String> {
        if spec.is_empty() {
            return self.to_str(v);
        }
        self.afford_or_stop(format_spec_bytes(spec), "formatted text")?;
        match v {
            Value::Array(a) => jnp::array_format(self, a, spec),
            Value::Opaque(_) => Err(self.stop_unknown("formatting an unknown value")),
            Value::Int(_) | Value::Bool(_) | Value::Float(_) => match format_number(v, spec) {
                Some(s) => Ok(s),
                None => Err(self.value_error(format!("Invalid format specifier '{spec}' for object of type '{}'", v.type_name()))),
            },
            _ => {
                let s = self.to_str(v)?;
                Ok(pad_spec(&s, spec).unwrap_or(s))
            }
        }
    }

    pub fn new_list(&mut self, items: Vec<Value>) -> Value {
        let v = Value::list(items);
        crate::interp::model::state::note_born(self, &v);
        v
    }

    pub fn new_dict(&mut self, d: Dict) -> Value {
        let v = Value::Dict(Rc::new(RefCell::new(d)));
        crate::interp::model::state::note_born(self, &v);
        v
    }

    pub fn make_set(&mut self, items: Vec<Value>) -> PyResult<Value> {
        let mut d = Dict::default();
        for i in items {
            let h = self.hash_key(&i)?;
            d.insert(h, i, Value::None);
        }
        let v = Value::Set(Rc::new(RefCell::new(d)));
        crate::interp::model::state::note_born(self, &v);
        Ok(v)
    }

    pub fn mapping_items(&mut self, m: &Value) -> PyResult<Vec<(Value, Value)>> {
        match m {
            // Keys set with an unknown key (in a loop over an unknown) are not among its
            // items: copying the known ones would make a dict that certainly lacks them.
            Value::Dict(_) if self.is_unsized(m) => Err(self.stop_unknown("the items of a dict whose keys are not all known")),
            Value::Dict(d) => Ok(d.borrow().items()),
            Value::Opaque(_) => Err(self.stop_unknown("the items of an unknown mapping")),
            _ => Err(self.type_error(format!("'{}' object is not a mapping", m.type_name()))),
        }
    }

    pub fn get_iter(&mut self, v: &Value) -> PyResult<Value> {
        let it = match v {
            Value::Iterator(_) => return Ok(v.clone()),
            Value::List(l) => PyIter::List { list: l.clone(), pos: 0 },
            Value::Tuple(t) => PyIter::Seq { items: t.clone(), pos: 0, kind: "tuple_iterator" },
            Value::Str(s) => {
                // One value and one string of its own per character.
                self.afford_or_stop(s.chars().count() as u128 * (super::memory::VALUE_BYTES + 32), "the characters of a string")?;
                PyIter::Seq {
                    items: Rc::new(s.chars().map(|c| Value::str(c.encode_utf8(&mut [0; 4]))).collect()),
                    pos: 0,
                    kind: "str_iterator",
                }
            }
            Value::Dict(_) if self.is_unsized(v) => return Err(self.stop_unknown("iteration over a dict whose keys are not all known")),
            Value::Dict(d) => PyIter::Seq { items: Rc::new(d.borrow().keys()), pos: 0, kind: "dict_keyiterator" },
            Value::Set(d) => PyIter::Seq { items: Rc::new(d.borrow().keys()), pos: 0, kind: "set_iterator" },
            Value::Range(a, b, s) => PyIter::Range { next: *a, stop: *b, step: *s },
            Value::Class(c) if super::stdlib::is_enum(c) => {
                PyIter::Seq { items: Rc::new(super::stdlib::enum_members(c)), pos: 0, kind: "iterator" }
            }
            Value::Array(a) if a.tf.get() => {
                PyIter::Seq { items: Rc::new(crate::interp::model::tf::tensor::iterate(self, a)?), pos: 0, kind: "iterator" }
            }
            Value::Builtin(b) if let Some(dims) = crate::interp::model::tf::shape_dims(b) => {
                PyIter::Seq { items: Rc::new(crate::interp::model::tf::tensor::shape_items(self, dims)), pos: 0, kind: "iterator" }
            }
            Value::Builtin(b) if let Some(p) = crate::interp::model::tf::partial::of_builtin(b) => {
                PyIter::Seq { items: Rc::new(crate::interp::model::tf::partial::iterate(self, p)?), pos: 0, kind: "iterator" }
            }
            Value::Array(a) => PyIter::Seq { items: Rc::new(jnp::iterate_array(self, a)?), pos: 0, kind: "iterator" },
            Value::Instance(inst) => {
                if let Some(items) = &inst.tuple {
                    PyIter::Seq { items: Rc::new(items.clone()), pos: 0, kind: "tuple_iterator" }
                } else if let Some(r) = self.call_dunder(v, "__iter__", Vec::new())? {
                    return match r {
                        Value::Instance(_) => self.drain_user_iterator(&r),
                        _ => self.get_iter(&r),
                    };
                } else if inst.class.lookup("__getitem__").is_some() && inst.class.lookup("__len__").is_some() {
                    let n = self.call_dunder(v, "__len__", Vec::new())?.and_then(|n| as_int(&n)).unwrap_or(0);
                    let mut items = Vec::new();
                    for i in 0..n {
                        items.push(self.getitem(v, Value::Int(i))?);
                    }
                    PyIter::Seq { items: Rc::new(items), pos: 0, kind: "iterator" }
                } else {
                    return Err(self.type_error(format!("'{}' object is not iterable", inst.class.name)));
                }
            }
            Value::Opaque(o) => return Err(self.stop_unknown(format!("iteration over an unknown value ({})", o.what))),
            other => return Err(self.type_error(format!("'{}' object is not iterable", other.type_name()))),
        };
        let v = Value::Iterator(Rc::new(RefCell::new(it)));
        crate::interp::model::state::note_born(self, &v);
        Ok(v)
    }

    pub fn next_item(&mut self, it: &Value) -> PyResult<Option<Value>> {
        let Value::Iterator(state) = it else {
            return Ok(None);
        };
        let mut s = state.borrow_mut();
        Ok(match &mut *s {
            PyIter::Seq { items, pos, .. } => {
                let v = items.get(*pos).cloned();
                *pos += 1;
                v
            }
            PyIter::Generator { items, pos, end, .. } => {
                let v = items.get(*pos).cloned();
                *pos += 1;
                if v.is_none() {
                    let end = end.clone();
                    drop(s);
                    let mut end = &*end;
                    if let super::value::GeneratorEnd::WhileUnchanged(object, attrs, inner) = end {
                        if !self.attrs_unchanged(object, attrs) {
                            return Err(self.stop_unknown("the end of a generator whose object changed after it was made"));
                        }
                        end = inner;
                    }
                    match end {
                        super::value::GeneratorEnd::Returned | super::value::GeneratorEnd::WhileUnchanged(..) => {}
                        super::value::GeneratorEnd::Raised(exc) => return Err(super::Flow::Raise(exc.clone())),
                        super::value::GeneratorEnd::Truncated(why) => return Err(self.stop_unknown(why.clone())),
                    }
                }
                v
            }
            PyIter::List { list, pos } => {
                let v = list.borrow().get(*pos).cloned();
                *pos += 1;
                v
            }
            PyIter::Range { next, stop, step } => {
                if (*step > 0 && *next < *stop) || (*step < 0 && *next > *stop) {
                    let v = *next;
                    // Past `i64::MAX` the range is over: its stop is an `i64`.
                    *next = next.checked_add(*step).unwrap_or(*stop);
                    Some(Value::Int(v))
                } else {
                    None
                }
            }
            PyIter::Count { next, step } => {
                let v = next.clone();
                let (n, st) = (next.clone(), step.clone());
                drop(s);
                let new = self.binary_op(BinOp::Add, n, st)?;
                if let PyIter::Count { next, .. } = &mut *state.borrow_mut() {
                    *next = new;
                }
                Some(v)
            }
            PyIter::Lazy(_) => {
                drop(s);
                return self.next_lazy(state);
            }
            PyIter::Opaque => {
                drop(s);
                return Err(self.stop_unknown("advancing an iterator the interpreter cannot follow"));
            }
        })
    }

    /// All items of an iterable (bounded by the step budget).
    pub fn iterate(&mut self, v: &Value) -> PyResult<Vec<Value>> {
        let copied = match v {
            Value::Tuple(t) => t.len(),
            Value::List(l) => l.borrow().len(),
            _ => 0,
        };
        if copied > 0 {
            self.afford_or_stop(copied as u128 * super::memory::VALUE_BYTES, "a copy of the items")?;
        }
        match v {
            Value::Tuple(t) => return Ok((**t).clone()),
            Value::List(l) => return Ok(l.borrow().clone()),
            _ => {}
        }
        let it = self.get_iter(v)?;
        let mut out = Vec::new();
        while let Some(x) = self.next_item(&it)? {
            self.tick()?;
            out.push(x);
        }
        Ok(out)
    }

    pub fn getitem(&mut self, obj: &Value, idx: Value) -> PyResult<Value> {
        match obj {
            Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Range(..) => self.seq_getitem(obj, idx),
            Value::Instance(inst) if inst.tuple.is_some() => {
                let t = Value::tuple(inst.tuple.clone().unwrap_or_default());
                self.seq_getitem(&t, idx)
            }
            Value::Dict(d) => {
                if let Value::Array(a) = &idx {
                    if a.is_tracer() {
                        return Err(self.type_error("unhashable type: 'DynamicJaxprTracer'"));
                    }
                }
                let h = self.hash_key(&idx)?;
                let v = d.borrow().get(&h).cloned();
                match v {
                    Some(v) => Ok(v),
                    // A dict filled in a loop over an unknown may hold keys the one run did not add.
                    None if self.is_unsized(obj) => Err(self.stop_unknown("a key of a dict whose keys are not all known")),
                    None => Err(self.key_error(&idx)?),
                }
            }
            Value::Array(a) if a.tf.get() => crate::interp::model::tf::tensor::getitem(self, a, &idx),
            Value::Array(a) => stmt::recorded(self, stmt::Call::GetItem, &[obj, &idx], &Vec::new(), |this| jnp::getitem(this, a, &idx)),
            Value::Opaque(_) => Ok(Value::opaque("item of an unknown value")),
            Value::Builtin(b) => match &**b {
                Builtin::Object(o) if let Some(array) = o.at_array() => Ok(crate::interp::model::api::at_getitem(self, array, idx)),
                Builtin::Tf(t) => crate::interp::model::tf::getitem(self, t, &idx),
                _ => Ok(obj.clone()),
            },
            Value::Class(_) => Ok(obj.clone()),
            Value::Instance(_) => match self.call_dunder(obj, "__getitem__", vec![idx])? {
                Some(v) => Ok(v),
                None => Err(self.type_error(format!("'{}' object is not subscriptable", obj.type_name()))),
            },
            _ => Err(self.type_error(format!("'{}' object is not subscriptable", obj.type_name()))),
        }
    }

    fn seq_getitem(&mut self, obj: &Value, idx: Value) -> PyResult<Value> {
        // The length and one item at a time: indexing a list of a million items in a loop
        // must not copy it on every access.
        let n = match obj {
            Value::List(l) => l.borrow().len() as i64,
            Value::Tuple(t) => t.len() as i64,
            Value::Str(s) => s.chars().count() as i64,
            Value::Range(a, b, s) => range_len(*a, *b, *s),
            _ => 0,
        };
        let item = |i: i64| -> Value {
            match obj {
                Value::List(l) => l.borrow().get(i as usize).cloned().unwrap_or(Value::None),
                Value::Tuple(t) => t.get(i as usize).cloned().unwrap_or(Value::None),
                Value::Str(s) => s.chars().nth(i as usize).map(|c| Value::str(c.encode_utf8(&mut [0; 4]))).unwrap_or(Value::None),
                Value::Range(a, _, s) => Value::Int(range_item(*a, *s, i)),
                _ => Value::None,
            }
        };
        match &idx {
            Value::Slice(sl) => {
                let (start, stop, step) = self.slice_indices(sl, n)?;
                let count = range_len(start, stop, step);
                if let Value::Range(a, _, s) = obj {
                    // A slice of a range is a range: `range(10**12)[::2]` is never listed.
                    let first = range_item(*a, *s, start);
                    let step = s.saturating_mul(step);
                    return Ok(Value::Range(first, first.saturating_add(count.saturating_mul(step)), step));
                }
                let positions = slice_positions(start, step, count);
                Ok(match obj {
                    Value::List(l) => {
                        let items = l.borrow();
                        let out = positions.filter_map(|i| items.get(i).cloned()).collect();
                        drop(items);
                        self.new_list(out)
                    }
                    Value::Str(s) if step == 1 => {
                        let text: String = s.chars().skip(start as usize).take(count as usize).collect();
                        Value::str(&text)
                    }
                    Value::Str(s) => {
                        let chars: Vec<char> = s.chars().collect();
                        Value::str(&positions.filter_map(|i| chars.get(i)).collect::<String>())
                    }
                    Value::Tuple(t) => Value::tuple(positions.filter_map(|i| t.get(i).cloned()).collect()),
                    _ => Value::tuple(Vec::new()),
                })
            }
            Value::Array(a) if a.is_tracer() => Err(jnp::index_error_from_tracer(self, a)),
            _ => {
                let Some(i) = self.index_of(&idx)? else {
                    return Err(self.type_error(format!(
                        "{} indices must be integers or slices, not {}",
                        obj.type_name(),
                        idx.type_name()
                    )));
                };
                let j = if i < 0 { i.saturating_add(n) } else { i };
                if (j < 0 || j >= n) && self.is_unsized(obj) {
                    return Err(self.stop_unknown("an index into a list whose length is not known"));
                }
                if j < 0 || j >= n {
                    let what = match obj {
                        Value::Str(_) => "string",
                        Value::Tuple(_) => "tuple",
                        Value::Range(..) => "range object",
                        _ => "list",
                    };
                    return Err(self.raise("IndexError", Code::PythonException, format!("{what} index out of range")));
                }
                Ok(item(j))
            }
        }
    }

    /// `operator.index(v)`: ints, bools, and concrete integer scalar arrays.
    pub fn index_of(&mut self, v: &Value) -> PyResult<Option<i64>> {
        Ok(match v {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            Value::Array(a) => Some(jnp::array_index(self, a)?),
            Value::Opaque(_) | Value::UnknownNumber(_) => return Err(self.stop_unknown("an unknown index")),
            Value::Instance(_) => match self.call_dunder(v, "__index__", Vec::new())? {
                Some(Value::Int(i)) => Some(i),
                _ => None,
            },
            _ => None,
        })
    }

    pub fn slice_indices(&mut self, sl: &[Value; 3], n: i64) -> PyResult<(i64, i64, i64)> {
        let step = match &sl[2] {
            Value::None => 1,
            v => self.index_of(v)?.unwrap_or(1),
        };
        if step == 0 {
            return Err(self.value_error("slice step cannot be zero"));
        }
        let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
        let norm = |this: &mut Self, v: &Value, default: i64| -> PyResult<i64> {
            Ok(match v {
                Value::None => default,
                v => {
                    let i = this.index_of(v)?.unwrap_or(default);
                    if i < 0 {
                        i + n
                    } else {
                        i
                    }
                }
            })
        };
        if step > 0 {
            let start = clamp(norm(self, &sl[0], 0)?, 0, n);
            let stop = clamp(norm(self, &sl[1], n)?, 0, n);
            Ok((start, stop, step))
        } else {
            let start = clamp(norm(self, &sl[0], n - 1)?, -1, n - 1);
            let stop = clamp(norm(self, &sl[1], -1 - n)?, -1, n - 1);
            let stop = if matches!(sl[1], Value::None) { -1 } else { stop };
            Ok((start, stop, step))
        }
    }

    pub fn setitem(&mut self, obj: &Value, idx: Value, value: Value) -> PyResult<()> {
        match obj {
            Value::List(l) => {
                self.note_mutation(obj, "item assignment")?;
                let n = l.borrow().len() as i64;
                if let Value::Slice(sl) = &idx {
                    let (start, stop, step) = self.slice_indices(sl, n)?;
                    let items = self.iterate(&value)?;
                    if step == 1 {
                        let mut list = l.borrow_mut();
                        let len = list.len();
                        let (start, stop) = (start.clamp(0, n) as usize, stop.clamp(start.max(0), n) as usize);
                        list.splice(start.min(len)..stop.min(len), items);
                        return Ok(());
                    }
                    let count = range_len(start, stop, step);
                    if items.len() as i64 != count {
                        return Err(self
                            .value_error(format!("attempt to assign sequence of size {} to extended slice of size {count}", items.len())));
                    }
                    let mut list = l.borrow_mut();
                    for (i, item) in slice_positions(start, step, count).zip(items) {
                        if let Some(slot) = list.get_mut(i) {
                            *slot = item;
                        }
                    }
                    return Ok(());
                }
                let Some(i) = self.index_of(&idx)? else {
                    return Err(self.type_error("list indices must be integers or slices"));
                };
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return Err(self.raise("IndexError", Code::PythonException, "list assignment index out of range"));
                }
                l.borrow_mut()[j as usize] = value;
                Ok(())
            }
            Value::Dict(d) => {
                self.note_mutation(obj, "item assignment")?;
                let site = self.site();
                crate::interp::model::state::check_tracer_store(self, obj, &value, site);
                let h = self.hash_key(&idx)?;
                if self.logging_writes() {
                    self.note_write(Slot::Item(d.clone(), h.clone(), idx.clone()));
                }
                d.borrow_mut().insert(h, idx, value);
                Ok(())
            }
            Value::Array(a) if a.numpy.get() => {
                // NumPy arrays are mutable; a tracer stored into one is converted by __array__.
                if let Value::Array(v) = &value {
                    if v.refuses_numpy_conversion() {
                        return Err(jnp::numpy_store_error(self, a, &idx, v));
                    }
                }
                if self.values.is_none() || !jnp::numpy_setitem(self, a, &idx, &value)? {
                    a.forget_values("a NumPy array changed by item assignment");
                }
                Ok(())
            }
            Value::Array(a) if a.tf.get() => {
                let v = value.clone();
                stmt::recorded(self, stmt::Call::SetItem, &[obj, &idx, &v], &Vec::new(), |this| {
                    Err(crate::interp::model::tf::tensor::item_assignment(this, a))
                })
                .map(|_| ())
            }
            Value::Array(a) => {
                let v = value.clone();
                stmt::recorded(self, stmt::Call::SetItem, &[obj, &idx, &v], &Vec::new(), |this| Err(jnp::immutable_update_error(this, a)))
                    .map(|_| ())
            }
            Value::Opaque(_) => Ok(()),
            Value::Instance(_) => match self.call_dunder(obj, "__setitem__", vec![idx, value])? {
                Some(_) => Ok(()),
                None => Err(self.type_error(format!("'{}' object does not support item assignment", obj.type_name()))),
            },
            _ => Err(self.type_error(format!("'{}' object does not support item assignment", obj.type_name()))),
        }
    }

    pub(super) fn delitem(&mut self, obj: &Value, idx: Value) -> PyResult<()> {
        match obj {
            Value::List(l) => {
                let n = l.borrow().len() as i64;
                if let Value::Slice(sl) = &idx {
                    // `del x[a:b:c]`: the positions the slice visits, from the last one down.
                    let (start, stop, step) = self.slice_indices(sl, n)?;
                    let mut doomed = vec![false; n as usize];
                    for i in slice_positions(start, step, range_len(start, stop, step)) {
                        if let Some(d) = doomed.get_mut(i) {
                            *d = true;
                        }
                    }
                    let mut position = 0;
                    l.borrow_mut().retain(|_| {
                        position += 1;
                        !doomed.get(position - 1).copied().unwrap_or(false)
                    });
                    return Ok(());
                }
                if let Some(i) = self.index_of(&idx)? {
                    let j = if i < 0 { i.saturating_add(n) } else { i };
                    if j >= 0 && j < n {
                        l.borrow_mut().remove(j as usize);
                        return Ok(());
                    }
                }
                Err(self.raise("IndexError", Code::PythonException, "list assignment index out of range"))
            }
            Value::Dict(d) => {
                let h = self.hash_key(&idx)?;
                if self.logging_writes() {
                    self.note_write(Slot::Item(d.clone(), h.clone(), idx.clone()));
                }
                if d.borrow_mut().entries.shift_remove(&h).is_none() {
                    return Err(self.key_error(&idx)?);
                }
                Ok(())
            }
            Value::Array(a) => Err(jnp::immutable_update_error(self, a)),
            _ => Ok(()),
        }
    }

    pub fn getattr(&mut self, obj: &Value, name: &str) -> PyResult<Value> {
        match self.getattr_opt(obj, name)? {
            Some(v) => Ok(v),
            // A real attribute of a builtin type that is not modelled is unknown, not missing.
            // (`unittest.skip` keeps its module's name: entry points recognise it by it.)
            None if python_has_attribute(obj, name) => Ok(Value::opaque(match obj {
                Value::Module(m) => format!("{}.{name}", m.name),
                _ => format!("{}.{name}", obj.type_name()),
            })),
            // A class with a base tracelens does not model inherits what it does not know.
            None if matches!(obj, Value::Class(c) if c.lookup("__tracelens_opaque_base__").is_some()) => {
                Ok(Value::opaque(format!("{}.{name}", obj.type_name())))
            }
            None => {
                let tn = match obj {
                    Value::Class(c) => format!("type object '{}'", c.name),
                    Value::Module(m) => format!("module '{}'", m.name),
                    _ => format!("'{}' object", obj.type_name()),
                };
                Err(self.raise("AttributeError", Code::PythonException, format!("{tn} has no attribute '{name}'")))
            }
        }
    }

    pub fn getattr_opt(&mut self, obj: &Value, name: &str) -> PyResult<Option<Value>> {
        Ok(match obj {
            // A tracer's methods and array attributes give tracers (`h.mean()`, `h.T`).
            Value::Opaque(o) if o.tracer && !ARRAY_NON_ARRAY_ATTRIBUTES.contains(&name) => {
                Some(Value::opaque_tracer(format!("{}.{name}", o.what)))
            }
            Value::Opaque(o) => Some(
                crate::interp::model::entry_hooks::getattr_opaque(self, o, name)
                    .unwrap_or_else(|| Value::opaque(format!("{}.{name}", o.what))),
            ),
            Value::Instance(inst) => {
                if let Some(v) = inst.attrs.borrow().get(name) {
                    return Ok(Some(v.clone()));
                }
                if let Some(items) = &inst.tuple {
                    if let Some(i) = inst.class.fields.borrow().iter().position(|f| f.as_ref() == name) {
                        return Ok(items.get(i).cloned());
                    }
                }
                match inst.class.lookup(name) {
                    Some(Value::Property(p)) => Some(self.call(&p.fget, vec![obj.clone()], Vec::new())?),
                    Some(v) => Some(self.bind_method(obj, v)),
                    None => {
                        if name == "__class__" {
                            return Ok(Some(Value::Class(inst.class.clone())));
                        }
                        if name == "__dict__" {
                            let mut d = Dict::default();
                            for (k, v) in inst.attrs.borrow().iter() {
                                d.insert(HashKey::Str(k.clone()), Value::Str(k.clone()), v.clone());
                            }
                            return Ok(Some(self.new_dict(d)));
                        }
                        // A named tuple's field names, on its instances as on its class.
                        if name == "_fields" && inst.tuple.is_some() && inst.class.is_namedtuple.get() {
                            let fields = inst.class.fields.borrow().iter().map(|f| Value::Str(f.clone())).collect();
                            return Ok(Some(Value::tuple(fields)));
                        }
                        if inst.class.derives_builtin(BuiltinClass::Tuple) || inst.tuple.is_some() {
                            return Ok(super::builtins::builtin_method(obj, name));
                        }
                        if let Some(g) = inst.class.lookup("__getattr__") {
                            let bound = self.bind_method(obj, g);
                            return Ok(Some(self.call(&bound, vec![Value::str(name)], Vec::new())?));
                        }
                        // A base class we do not model (a TestCase's) may define anything.
                        if inst.class.lookup("__tracelens_opaque_base__").is_some() {
                            return Ok(Some(Value::opaque(format!("{}.{name}", inst.class.name))));
                        }
                        None
                    }
                }
            }
            Value::Class(c) if super::stdlib::enum_member(c, name).is_some() => super::stdlib::enum_member(c, name),
            Value::Class(c) => match c.lookup(name) {
                Some(Value::ClassMethod(f)) => Some(Value::BoundMethod(Rc::new((obj.clone(), (*f).clone())))),
                Some(Value::StaticMethod(f)) => Some((*f).clone()),
                Some(v) => Some(v),
                None => match name {
                    "__name__" => Some(Value::Str(c.name.clone())),
                    "__qualname__" => Some(Value::str(&c.qualname)),
                    "_fields" => Some(Value::tuple(c.fields.borrow().iter().map(|f| Value::Str(f.clone())).collect())),
                    // Its `Field` objects (`init`, `type`, ...) are not modelled: unknown, not missing.
                    "__dataclass_fields__" if c.is_dataclass.get() => Some(Value::opaque("a dataclass's fields")),
                    "_make" if c.is_namedtuple.get() => {
                        Some(Value::Builtin(Rc::new(Builtin::Method { recv: obj.clone(), name: Rc::from(name) })))
                    }
                    // What frozen dataclasses use to set their own fields in `__post_init__`.
                    "__setattr__" if c.builtin == Some(BuiltinClass::Object) => {
                        Some(Value::Builtin(Rc::new(Builtin::Fn("object.__setattr__"))))
                    }
                    // `object.__new__(cls)`, which a class's own `__new__` ends with.
                    "__new__" if c.builtin == Some(BuiltinClass::Object) => Some(Value::Builtin(Rc::new(Builtin::Fn("object.__new__")))),
                    _ => None,
                },
            },
            Value::Module(m) => super::modules::module_getattr(self, m, name)?,
            Value::Array(a) if a.tf.get() => crate::interp::model::tf::tensor::getattr(self, a, name)?,
            Value::Array(a) => jnp::array_getattr(self, a, name)?,
            Value::Function(f) => match name {
                "__name__" => Some(Value::Str(f.def.name.clone())),
                "__qualname__" => Some(Value::str(&f.qualname)),
                "__module__" => Some(Value::str(&f.globals.name)),
                "__doc__" => Some(f.attrs.borrow().get(name).cloned().unwrap_or_else(|| docstring(&f.def.body))),
                // The positional parameters' defaults, as evaluated at the `def`; `None` without any.
                "__defaults__" if !f.attrs.borrow().contains_key(name) => {
                    Some(if f.defaults.is_empty() { Value::None } else { Value::tuple(f.defaults.clone()) })
                }
                _ => f.attrs.borrow().get(name).cloned().or_else(|| {
                    // `__wrapped__` is set by a wrapper the analysis may not see: a runtime
                    // type checker's import hook (jaxtyping, beartype) that the test runner's
                    // configuration installs.
                    (super::stdlib::function_has_attribute(name) || name == "__wrapped__")
                        .then(|| Value::opaque(format!("{}.{name}", f.def.name)))
                }),
            },
            Value::Builtin(b) => super::builtins::builtin_getattr(self, b, name)?,
            Value::TfDType(d) => Some(crate::interp::model::tf::dtype_attr(self, *d, name)),
            Value::DType(d) => match name {
                "name" => Some(Value::str(d.name())),
                "itemsize" => Some(Value::Int(d.itemsize() as i64)),
                "dtype" => Some(obj.clone()),
                "type" => Some(obj.clone()),
                // A key dtype (`KeyTy`) has no numpy kind.
                "kind" if d.is_key() => None,
                "kind" => Some(Value::str(if d.is_bool() {
                    "b"
                } else if d.is_unsigned() {
                    "u"
                } else if d.is_integer() {
                    "i"
                } else if d.is_complex() {
                    "c"
                } else {
                    "f"
                })),
                _ => None,
            },
            Value::Complex(a, b) => match name {
                "real" => Some(Value::Float(*a)),
                "imag" => Some(Value::Float(*b)),
                _ => super::builtins::builtin_method(obj, name),
            },
            Value::Float(f) if name == "real" => Some(Value::Float(*f)),
            Value::Float(_) if name == "imag" => Some(Value::Float(0.0)),
            Value::BoundMethod(bm) => match name {
                "__self__" => Some(bm.0.clone()),
                "__func__" => Some(bm.1.clone()),
                // `obj.method.get_concrete_function(...)` on a `tf.function` method: TensorFlow
                // binds the instance, as calling `obj.method(...)` does.
                _ => match self.getattr_opt(&bm.1, name)? {
                    Some(m) if crate::interp::model::tf::is_function_method(&m) => Some(Value::BoundMethod(Rc::new((bm.0.clone(), m)))),
                    other => other,
                },
            },
            Value::Slice(s) => match name {
                "start" => Some(s[0].clone()),
                "stop" => Some(s[1].clone()),
                "step" => Some(s[2].clone()),
                _ => None,
            },
            _ => super::builtins::builtin_method(obj, name),
        })
    }

    pub fn setattr(&mut self, obj: &Value, name: &str, value: Value) -> PyResult<()> {
        match obj {
            Value::Instance(inst) => {
                if let Some(Value::Property(p)) = inst.class.lookup(name) {
                    return match &p.fset {
                        Some(setter) => {
                            let setter = setter.clone();
                            self.call(&setter, vec![obj.clone(), value], Vec::new())?;
                            Ok(())
                        }
                        None => Err(self.raise(
                            "AttributeError",
                            Code::PythonException,
                            format!("property '{name}' of '{}' object has no setter", inst.class.name),
                        )),
                    };
                }
                if inst.class.frozen.get() || inst.tuple.is_some() {
                    let msg =
                        if inst.tuple.is_some() { "can't set attribute".to_string() } else { format!("cannot assign to field '{name}'") };
                    let class = if inst.tuple.is_some() { "AttributeError" } else { "FrozenInstanceError" };
                    return Err(self.raise(class, Code::PythonException, msg));
                }
                // `obj.__dict__ = d` (an `unflatten` that skips `__init__`): the attributes are d's.
                if name == "__dict__" {
                    if let Value::Dict(d) = &value {
                        let entries: Vec<(HashKey, Value)> = d.borrow().entries.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect();
                        if entries.iter().all(|(k, _)| matches!(k, HashKey::Str(_))) {
                            let old: Vec<Name> = inst.attrs.borrow().keys().cloned().collect();
                            for n in &old {
                                self.setattr_slot_dropped(inst, n);
                            }
                            for (k, v) in entries {
                                if let HashKey::Str(k) = k {
                                    self.setattr(obj, &k, v)?;
                                }
                            }
                            return Ok(());
                        }
                    }
                }
                self.note_mutation(obj, "attribute assignment")?;
                let site = self.site();
                crate::interp::model::state::check_tracer_store(self, obj, &value, site);
                if self.logging_writes() {
                    self.note_write(Slot::Attr(inst.clone(), Rc::from(name)));
                }
                inst.attrs.borrow_mut().insert(Rc::from(name), value);
                Ok(())
            }
            Value::Class(c) => {
                c.dict.borrow_mut().insert(Rc::from(name), value);
                Ok(())
            }
            Value::Function(f) => {
                f.attrs.borrow_mut().insert(Rc::from(name), value);
                Ok(())
            }
            Value::Module(m) => {
                if self.logging_writes() {
                    self.note_write(Slot::Global(m.clone(), Rc::from(name)));
                }
                m.dict.borrow_mut().insert(Rc::from(name), value);
                Ok(())
            }
            Value::Opaque(_) => {
                crate::interp::model::entry_hooks::handed_to_unknown(self, [&value]);
                Ok(())
            }
            Value::Builtin(b) if let super::builtins::Builtin::Partial { attrs, .. } = &**b => {
                attrs.borrow_mut().insert(Rc::from(name), value);
                Ok(())
            }
            Value::Array(_) => Err(self.raise(
                "AttributeError",
                Code::PythonException,
                format!("'jaxlib._jax.ArrayImpl' object attribute '{name}' is read-only"),
            )),
            _ => {
                Err(self.raise("AttributeError", Code::PythonException, format!("'{}' object has no attribute '{name}'", obj.type_name())))
            }
        }
    }

    /// Removes one attribute of an instance, logged for an abstract path as a store is.
    fn setattr_slot_dropped(&mut self, inst: &Rc<Instance>, name: &Name) {
        if self.logging_writes() {
            self.note_write(Slot::Attr(inst.clone(), name.clone()));
        }
        inst.attrs.borrow_mut().shift_remove(name);
    }

    pub(super) fn enter_context(&mut self, manager: &Value) -> PyResult<Value> {
        match manager {
            Value::Instance(_) => Ok(self.call_dunder(manager, "__enter__", Vec::new())?.unwrap_or(Value::None)),
            Value::Builtin(b) => super::builtins::enter_builtin_context(self, b),
            _ => Ok(Value::opaque("the value of a context manager")),
        }
    }

    /// Leaves a `with` block, handing its manager the exception the body `raised`, as Python
    /// does. Whether the manager swallowed it: `Some(true)` when its `__exit__` returned a true
    /// value, `None` when that is not known (an unknown manager, whose `__exit__` may handle
    /// anything; a result of unknown truth).
    pub(super) fn exit_context(&mut self, manager: &Value, raised: Option<&super::PyException>) -> PyResult<Option<bool>> {
        match (manager, raised) {
            (Value::Instance(_), None) => {
                self.call_dunder(manager, "__exit__", vec![Value::None, Value::None, Value::None])?;
            }
            (Value::Instance(_), Some(exc)) => {
                let args = vec![Value::Class(exc.class.clone()), exc.value.clone(), Value::None];
                let swallowed = self.call_dunder(manager, "__exit__", args)?.unwrap_or(Value::None);
                return match self.truthy(&swallowed) {
                    Ok(b) => Ok(Some(b)),
                    Err(super::Flow::Stop(..)) => Ok(None),
                    Err(flow) => Err(flow),
                };
            }
            (Value::Builtin(b), _) => super::builtins::exit_builtin_context(self, b),
            (Value::Opaque(_), Some(_)) => return Ok(None),
            _ => {}
        }
        Ok(Some(false))
    }

    /// TL202: a traced function mutates a container or object that lives outside it.
    pub fn note_mutation(&mut self, obj: &Value, what: &str) -> PyResult<()> {
        if self.unknown_loops > 0 || self.loop_depth > 0 {
            let address = match obj {
                Value::List(l) => Some(Rc::as_ptr(l) as *const () as usize),
                Value::Dict(d) => Some(Rc::as_ptr(d) as *const () as usize),
                _ => None,
            };
            if let Some(address) = address {
                if self.unknown_loops > 0 {
                    self.unsized_containers.entry(address).or_insert_with(|| obj.clone());
                } else {
                    self.loop_mutations.push(obj.clone());
                }
            }
        }
        if self.in_library() {
            return Ok(());
        }
        // Storing the tf.Variable a tf.function's first trace just created (`self.w =
        // tf.Variable(...)` behind `if self.w is None:`) is TensorFlow's way to make state.
        if crate::interp::model::state::take_variable_just_created(self) || self.once_guarded > 0 {
            return Ok(());
        }
        if let Some(info) = crate::interp::model::state::outer_mutation(self, obj) {
            let site = self.site();
            // `info` names the caching transformation: `jit(f)`, `tf.function(f)`, `cond(..)`.
            let cacher = if info.starts_with("tf.function") { "tf.function" } else { "JAX" };
            let msg = format!(
                "outer mutation: {what} on a value created outside {info} happens once per trace, not once per call; \
                 {cacher} caches the trace and later calls skip it"
            );
            self.warn(Code::OuterMutation, site, msg, Vec::new());
        }
        Ok(())
    }

    pub(super) fn note_outer_rebind(&mut self, name: &str, kind: &str, value: &Value) {
        if self.in_library() {
            return;
        }
        let site = self.site();
        crate::interp::model::state::check_tracer_store(self, &Value::None, value, site);
        if self.once_guarded > 0 {
            return;
        }
        if let Some(info) = crate::interp::model::state::staging_description(self) {
            let site = self.site();
            let msg = format!("outer mutation: `{kind} {name}` is rebound inside {info}; this happens once per trace, not once per call");
            self.warn(Code::OuterMutation, site, msg, Vec::new());
        }
    }

    pub(super) fn note_global_read(&mut self, ctx: &Ctx, name: &str, value: &Value, expr: &Expr) {
        if self.is_library(ctx.file) {
            return;
        }
        if let Value::Array(a) = value {
            crate::interp::model::numpy::note_captured_constant(self, a);
        }
        // A global number or array read inside a caching trace is baked into it (TL204 if the
        // global is reassigned later).
        let data = matches!(value, Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Array(_) | Value::UnknownNumber(_));
        // A function that declares `global x` and reads it updates it (`count += 1`): its
        // rebinding inside the trace is TL202; the read bakes nothing else in.
        let declared = ctx.scope.as_ref().is_some_and(|s| s.globals.borrow().iter().any(|g| g.as_ref() == name));
        if data && !declared && !matches!(value, Value::Array(a) if a.is_tracer()) {
            if let Some(inside) = crate::interp::model::state::staging_description(self) {
                let module = Rc::as_ptr(&ctx.globals) as usize;
                let site = super::Site { file: ctx.file, span: expr.span };
                let read = crate::interp::model::effects::GlobalRead { module, name: name.to_string(), site, inside };
                crate::interp::model::state::note_global_read(self, read);
            }
        }
    }

    /// A module-level rebinding of a global that a finished trace read (TL204).
    pub(super) fn note_global_rebind(&mut self, ctx: &Ctx, name: &str) {
        if crate::interp::model::state::staging_depth(self) > 0 {
            return;
        }
        let module = Rc::as_ptr(&ctx.globals) as usize;
        let reads: Vec<crate::interp::model::effects::GlobalRead> = crate::interp::model::state::global_reads_of(self, module, name);
        if reads.is_empty() {
            return;
        }
        let line = self.site().map(|s| self.line_of(s)).unwrap_or(0);
        for r in reads {
            let msg = format!(
                "frozen value: the global `{name}` is read inside {} and baked into the trace as a constant; it is reassigned at line {line}, but cached calls keep using the value it had when traced",
                r.inside
            );
            let related = self.site().map(|s| vec![(s, format!("`{name}` is reassigned here"))]).unwrap_or_default();
            self.warn(Code::FrozenValue, Some(r.site), msg, related);
        }
    }
}

/// Whether Python's own builtin type of `obj` has the attribute `name` (Python 3.11's
/// `dir(str)` and the like, without dunders).
pub(super) fn python_has_attribute(obj: &Value, name: &str) -> bool {
    let names: &[&str] = match obj {
        Value::Str(_) => &[
            "capitalize",
            "casefold",
            "center",
            "count",
            "encode",
            "endswith",
            "expandtabs",
            "find",
            "format",
            "format_map",
            "index",
            "isalnum",
            "isalpha",
            "isascii",
            "isdecimal",
            "isdigit",
            "isidentifier",
            "islower",
            "isnumeric",
            "isprintable",
            "isspace",
            "istitle",
            "isupper",
            "join",
            "ljust",
            "lower",
            "lstrip",
            "maketrans",
            "partition",
            "removeprefix",
            "removesuffix",
            "replace",
            "rfind",
            "rindex",
            "rjust",
            "rpartition",
            "rsplit",
            "rstrip",
            "split",
            "splitlines",
            "startswith",
            "strip",
            "swapcase",
            "title",
            "translate",
            "upper",
            "zfill",
        ],
        Value::List(_) => &["append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove", "reverse", "sort"],
        Value::Tuple(_) => &["count", "index"],
        Value::Dict(_) => &["clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault", "update", "values"],
        Value::Set(_) => &[
            "add",
            "clear",
            "copy",
            "difference",
            "difference_update",
            "discard",
            "intersection",
            "intersection_update",
            "isdisjoint",
            "issubset",
            "issuperset",
            "pop",
            "remove",
            "symmetric_difference",
            "symmetric_difference_update",
            "union",
            "update",
        ],
        Value::Int(_) | Value::Bool(_) => &[
            "as_integer_ratio",
            "bit_count",
            "bit_length",
            "conjugate",
            "denominator",
            "from_bytes",
            "imag",
            "numerator",
            "real",
            "to_bytes",
        ],
        Value::Float(_) => &["as_integer_ratio", "conjugate", "fromhex", "hex", "imag", "is_integer", "real"],
        _ => &[],
    };
    names.contains(&name) || super::stdlib::value_has_attribute(obj, name)
}

/// Whether `unknown is flag` cannot be told: `unknown` is a value the interpreter does not
/// know (and not certainly a tracer), `flag` is `True` or `False`.
fn maybe_bool_singleton(unknown: &Value, flag: &Value) -> bool {
    matches!(unknown, Value::Opaque(o) if !o.tracer) && matches!(flag, Value::Bool(_))
}

fn maybe_same_array(unknown: &Value, array: &Value) -> bool {
    matches!(unknown, Value::Opaque(o) if !o.tracer) && matches!(array, Value::Array(_))
}

/// Two PyTreeDefs (`jtu.tree_structure(a) == jtu.tree_flatten(b)[1]`) compare by structure,
/// not identity; `Some(None)` when that is not known.
fn treedefs_equal(l: &Value, r: &Value) -> Option<Option<bool>> {
    match (l, r) {
        (Value::Builtin(a), Value::Builtin(b)) => match (&**a, &**b) {
            (Builtin::Object(x), Builtin::Object(y)) => x.treedefs_equal(y),
            _ => None,
        },
        _ => None,
    }
}

/// Arithmetic with a Python number of unknown value stays a Python number of unknown value.
fn unknown_number_op(op: BinOp, l: &Value, r: &Value) -> Option<Value> {
    let is_num = |v: &Value| matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::UnknownNumber(_));
    if !(matches!(l, Value::UnknownNumber(_)) || matches!(r, Value::UnknownNumber(_))) || !is_num(l) || !is_num(r) {
        return None;
    }
    let float = |v: &Value| matches!(v, Value::Float(_) | Value::UnknownNumber(true));
    Some(Value::UnknownNumber(float(l) || float(r) || op == BinOp::Div))
}

pub fn is_not_implemented(v: &Value) -> bool {
    matches!(v, Value::Builtin(b) if matches!(**b, Builtin::Fn("NotImplemented")))
}

/// `len(range(a, b, s))`, computed without overflow (at most `i64::MAX`: a longer range
/// cannot be indexed by an `i64` anyway).
pub fn range_len(a: i64, b: i64, s: i64) -> i64 {
    i64::try_from(range_len_exact(a, b, s)).unwrap_or(i64::MAX)
}

/// `len(range(a, b, s))` exactly: `range(-2**63, 2**63 - 1)` has more than `i64::MAX` items.
pub fn range_len_exact(a: i64, b: i64, s: i64) -> i128 {
    let (a, b, s) = (i128::from(a), i128::from(b), i128::from(s));
    if s > 0 && a < b {
        (b - a + s - 1) / s
    } else if s < 0 && a > b {
        (a - b - s - 1) / (-s)
    } else {
        0
    }
}

/// `range(a, _, s)[i]` for an index already inside the range: it fits an `i64`.
pub fn range_item(a: i64, s: i64, i: i64) -> i64 {
    i64::try_from(i128::from(a) + i128::from(i) * i128::from(s)).unwrap_or(if s > 0 { i64::MAX } else { i64::MIN })
}

/// The positions a slice `start:_:step` of `count` items visits, as `slice_indices` gave them
/// (every one inside the sequence).
pub fn slice_positions(start: i64, step: i64, count: i64) -> impl Iterator<Item = usize> {
    (0..count.max(0)).map(move |k| range_item(start, step, k).max(0) as usize)
}

pub fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Bool(b) => Some(*b as i64 as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn trim_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e16 {
        format!("{}", f as i64)
    } else {
        repr_float(f)
    }
}

pub fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn dunder(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "__add__",
        BinOp::Sub => "__sub__",
        BinOp::Mul => "__mul__",
        BinOp::MatMul => "__matmul__",
        BinOp::Div => "__truediv__",
        BinOp::FloorDiv => "__floordiv__",
        BinOp::Mod => "__mod__",
        BinOp::Pow => "__pow__",
        BinOp::LShift => "__lshift__",
        BinOp::RShift => "__rshift__",
        BinOp::BitAnd => "__and__",
        BinOp::BitOr => "__or__",
        BinOp::BitXor => "__xor__",
    }
}

fn reflected_dunder(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "__radd__",
        BinOp::Sub => "__rsub__",
        BinOp::Mul => "__rmul__",
        BinOp::MatMul => "__rmatmul__",
        BinOp::Div => "__rtruediv__",
        BinOp::FloorDiv => "__rfloordiv__",
        BinOp::Mod => "__rmod__",
        BinOp::Pow => "__rpow__",
        BinOp::LShift => "__rlshift__",
        BinOp::RShift => "__rrshift__",
        BinOp::BitAnd => "__rand__",
        BinOp::BitOr => "__ror__",
        BinOp::BitXor => "__rxor__",
    }
}

fn cmp_dunder(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "__lt__",
        CmpOp::LtE => "__le__",
        CmpOp::Gt => "__gt__",
        CmpOp::GtE => "__ge__",
        CmpOp::Eq => "__eq__",
        _ => "__ne__",
    }
}

type OpError = (&'static str, String);

/// Arithmetic on Python numbers (bool, int, float, complex), with Python's rules:
/// floor division and modulo round toward negative infinity, `/` always gives a float.
pub fn numeric_binop(op: BinOp, l: &Value, r: &Value) -> Option<Result<Value, OpError>> {
    if let (Some(a), Some(b)) = (as_int(l), as_int(r)) {
        return Some(int_binop(op, a, b));
    }
    let complex = |v: &Value| match v {
        Value::Complex(a, b) => Some((*a, *b)),
        _ => as_f64(v).map(|x| (x, 0.0)),
    };
    if matches!(l, Value::Complex(..)) || matches!(r, Value::Complex(..)) {
        let ((a, b), (c, d)) = (complex(l)?, complex(r)?);
        return Some(Ok(match op {
            BinOp::Add => Value::Complex(a + c, b + d),
            BinOp::Sub => Value::Complex(a - c, b - d),
            BinOp::Mul => Value::Complex(a * c - b * d, a * d + b * c),
            BinOp::Div => {
                let den = c * c + d * d;
                if den == 0.0 {
                    return Some(Err(("ZeroDivisionError", "complex division by zero".into())));
                }
                Value::Complex((a * c + b * d) / den, (b * c - a * d) / den)
            }
            _ => return None,
        }));
    }
    let (a, b) = (as_f64(l)?, as_f64(r)?);
    Some(Ok(Value::Float(match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => {
            if b == 0.0 {
                return Some(Err(("ZeroDivisionError", "float division by zero".into())));
            }
            a / b
        }
        BinOp::FloorDiv => {
            if b == 0.0 {
                return Some(Err(("ZeroDivisionError", "float floor division by zero".into())));
            }
            (a / b).floor()
        }
        BinOp::Mod => {
            if b == 0.0 {
                return Some(Err(("ZeroDivisionError", "float modulo".into())));
            }
            let m = a % b;
            if m != 0.0 && (m < 0.0) != (b < 0.0) {
                m + b
            } else {
                m
            }
        }
        BinOp::Pow if a == 0.0 && b < 0.0 => return Some(Err(("ZeroDivisionError", "0.0 cannot be raised to a negative power".into()))),
        // A negative number to a fractional power is complex in Python.
        BinOp::Pow if a < 0.0 && b.is_finite() && b.fract() != 0.0 => return Some(Ok(Value::opaque("a complex power"))),
        BinOp::Pow => a.powf(b),
        _ => return Some(Err(("TypeError", format!("unsupported operand type(s) for {}: 'float' and 'float'", op.symbol())))),
    })))
}

fn int_binop(op: BinOp, a: i64, b: i64) -> Result<Value, OpError> {
    let big = || Value::opaque("an integer too large to model");
    Ok(match op {
        BinOp::Add => a.checked_add(b).map(Value::Int).unwrap_or_else(big),
        BinOp::Sub => a.checked_sub(b).map(Value::Int).unwrap_or_else(big),
        BinOp::Mul => a.checked_mul(b).map(Value::Int).unwrap_or_else(big),
        BinOp::Div => {
            if b == 0 {
                return Err(("ZeroDivisionError", "division by zero".into()));
            }
            Value::Float(a as f64 / b as f64)
        }
        BinOp::FloorDiv => {
            if b == 0 {
                return Err(("ZeroDivisionError", "integer division or modulo by zero".into()));
            }
            // Python floors; only `-2**63 // -1` leaves i64 (2**63).
            match (a.checked_div(b), a.checked_rem(b)) {
                (Some(q), Some(m)) => Value::Int(if m != 0 && (m < 0) != (b < 0) { q - 1 } else { q }),
                _ => big(),
            }
        }
        BinOp::Mod => {
            if b == 0 {
                return Err(("ZeroDivisionError", "integer modulo by zero".into()));
            }
            // `-2**63 % -1` is 0 in Python; Rust's `%` overflows on it.
            let m = a.checked_rem(b).unwrap_or(0);
            Value::Int(if m != 0 && (m < 0) != (b < 0) { m + b } else { m })
        }
        BinOp::Pow => {
            if b < 0 && a == 0 {
                return Err(("ZeroDivisionError", "0.0 cannot be raised to a negative power".into()));
            }
            if b < 0 {
                Value::Float((a as f64).powf(b as f64))
            } else {
                u32::try_from(b).ok().and_then(|e| a.checked_pow(e)).map(Value::Int).unwrap_or_else(big)
            }
        }
        BinOp::LShift | BinOp::RShift if b < 0 => return Err(("ValueError", "negative shift count".into())),
        BinOp::LShift => {
            u32::try_from(b).ok().and_then(|s| if s < 63 { a.checked_mul(1i64 << s) } else { None }).map(Value::Int).unwrap_or_else(big)
        }
        BinOp::RShift => Value::Int(if b >= 64 {
            if a < 0 {
                -1
            } else {
                0
            }
        } else {
            a >> b
        }),
        BinOp::BitAnd => Value::Int(a & b),
        BinOp::BitOr => Value::Int(a | b),
        BinOp::BitXor => Value::Int(a ^ b),
        BinOp::MatMul => return Err(("TypeError", "unsupported operand type(s) for @: 'int' and 'int'".into())),
    })
}

/// An upper bound on the bytes `format(x, spec)` writes for a number or a string of up to
/// 400 bytes: the widest width or precision the spec names, in fill characters of up to 4 bytes.
pub fn format_spec_bytes(spec: &str) -> u128 {
    let mut widest: u128 = 0;
    let mut run: u128 = 0;
    for c in spec.chars() {
        match c.to_digit(10) {
            Some(d) => run = run.saturating_mul(10).saturating_add(d as u128),
            None => run = 0,
        }
        widest = widest.max(run);
    }
    widest.saturating_mul(4).saturating_add(400)
}

/// The longest fraction Rust's formatter is asked for: an f64's exact decimal expansion has
/// at most 1074 digits after the point, so Python's longer ones end in zeros.
const EXACT_DIGITS: usize = 1100;

/// `format!("{:.p$}", x)` for any `p` (Rust's formatter takes at most 65535).
fn fixed_digits(x: f64, p: usize) -> String {
    let mut s = format!("{:.*}", p.min(EXACT_DIGITS), x);
    if p > EXACT_DIGITS && x.is_finite() {
        s.extend(std::iter::repeat_n('0', p - EXACT_DIGITS));
    }
    s
}

/// `format!("{:.p$e}", x)` for any `p`.
fn exp_digits(x: f64, p: usize) -> String {
    let s = format!("{:.*e}", p.min(EXACT_DIGITS), x);
    if p <= EXACT_DIGITS || !x.is_finite() {
        return s;
    }
    match s.split_once('e') {
        Some((m, e)) => format!("{m}{}e{e}", "0".repeat(p - EXACT_DIGITS)),
        None => s,
    }
}

/// Python's format mini-language for numbers: `[[fill]align][sign][,][0][width][.precision][type]`.
pub fn format_number(v: &Value, spec: &str) -> Option<String> {
    let mut chars: Vec<char> = spec.chars().collect();
    let ty = match chars.last() {
        Some(c) if c.is_ascii_alphabetic() || *c == '%' => chars.pop(),
        _ => None,
    };
    let rest: String = chars.iter().collect();
    let (align_part, precision) = match rest.split_once('.') {
        Some((a, p)) => (a.to_string(), p.parse::<usize>().ok()),
        None => (rest.clone(), None),
    };
    let comma = align_part.contains(',');
    let align_part = align_part.replace(',', "");
    let plus = align_part.contains('+');
    let align_part = align_part.replace('+', "");
    let body = match (ty, v) {
        (Some('d'), Value::Int(i)) => i.to_string(),
        (Some('d'), Value::Bool(b)) => (*b as i64).to_string(),
        (Some('f') | Some('F'), _) => fixed_digits(as_f64(v)?, precision.unwrap_or(6)),
        (Some('e'), _) => {
            let s = exp_digits(as_f64(v)?, precision.unwrap_or(6));
            let (m, e) = s.split_once('e')?;
            let (sign, d) = if let Some(d) = e.strip_prefix('-') { ('-', d) } else { ('+', e) };
            format!("{m}e{sign}{d:0>2}")
        }
        (Some('g'), _) => {
            let f = as_f64(v)?;
            // Trailing zeros are stripped: past the exact digits a longer precision adds nothing.
            let p = precision.unwrap_or(6).clamp(1, EXACT_DIGITS);
            let exp = if f == 0.0 || !f.is_finite() { 0 } else { f.abs().log10().floor() as i32 };
            if exp < -4 || exp >= p as i32 {
                let s = format!("{:.*e}", p - 1, f);
                let (m, e) = s.split_once('e')?;
                let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
                let (sign, d) = if let Some(d) = e.strip_prefix('-') { ('-', d) } else { ('+', e) };
                format!("{m}e{sign}{d:0>2}")
            } else {
                let s = format!("{:.*}", (p as i32 - 1 - exp).max(0) as usize, f);
                if s.contains('.') {
                    s.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    s
                }
            }
        }
        (Some('%'), _) => format!("{}%", fixed_digits(as_f64(v)? * 100.0, precision.unwrap_or(6))),
        (None, Value::Float(f)) => match precision {
            Some(p) => {
                let s = format_number(v, &format!(".{p}g"))?;
                if s.contains(['.', 'e', 'n']) {
                    s
                } else {
                    format!("{s}.0")
                }
            }
            None => repr_float(*f),
        },
        (None, Value::Int(i)) => i.to_string(),
        (None, Value::Bool(b)) => {
            if *b {
                "True".into()
            } else {
                "False".into()
            }
        }
        (Some('x'), Value::Int(i)) => format!("{i:x}"),
        (Some('b'), Value::Int(i)) => format!("{i:b}"),
        _ => return None,
    };
    let body = if comma { add_commas(&body) } else { body };
    let body = if plus && !body.starts_with('-') { format!("+{body}") } else { body };
    pad_spec(&body, &align_part).or(Some(body))
}

fn add_commas(s: &str) -> String {
    let (sign, rest) = if let Some(r) = s.strip_prefix('-') { ("-", r) } else { ("", s) };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (rest, None),
    };
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

/// Applies `[[fill]align][0][width]` to already formatted text.
fn pad_spec(body: &str, spec: &str) -> Option<String> {
    if spec.is_empty() {
        return Some(body.to_string());
    }
    let chars: Vec<char> = spec.chars().collect();
    let (fill, align, rest) = if chars.len() >= 2 && matches!(chars[1], '<' | '>' | '^') {
        (chars[0], Some(chars[1]), &chars[2..])
    } else if matches!(chars[0], '<' | '>' | '^') {
        (' ', Some(chars[0]), &chars[1..])
    } else {
        (' ', None, &chars[..])
    };
    let rest: String = rest.iter().collect();
    let (fill, rest) = if align.is_none() && rest.starts_with('0') && rest.len() > 1 { ('0', rest[1..].to_string()) } else { (fill, rest) };
    let width: usize = if rest.is_empty() { 0 } else { rest.parse().ok()? };
    let len = body.chars().count();
    if len >= width {
        return Some(body.to_string());
    }
    let pad = width - len;
    let f = |n: usize| std::iter::repeat(fill).take(n).collect::<String>();
    Some(match align {
        Some('<') => format!("{body}{}", f(pad)),
        Some('^') => format!("{}{body}{}", f(pad / 2), f(pad - pad / 2)),
        Some('>') => format!("{}{body}", f(pad)),
        _ if fill == '0' && body.starts_with('-') => format!("-{}{}", f(pad), &body[1..]),
        _ => format!("{}{body}", f(pad)),
    })
}

/// The result of an operation with an unknown operand: an unknown, and certainly a tracer
/// when either operand is one.
fn unknown_result(l: Value, r: Value) -> Value {
    if l.is_certain_tracer() || r.is_certain_tracer() {
        let what = match (&l, &r) {
            (Value::Opaque(o), _) | (_, Value::Opaque(o)) => o.what.clone(),
            _ => String::new(),
        };
        return Value::opaque_tracer(what);
    }
    if l.is_opaque() {
        l
    } else {
        r
    }
}

/// Attributes of an array that are not arrays: of a tracer of unknown aval, they are
/// unknown but no tracers.
const ARRAY_NON_ARRAY_ATTRIBUTES: &[&str] = &[
    "shape",
    "ndim",
    "size",
    "dtype",
    "itemsize",
    "nbytes",
    "weak_type",
    "aval",
    "sharding",
    "device",
    "devices",
    "item",
    "tolist",
    "tobytes",
    "__class__",
];

/// A body's docstring, as `__doc__` gives it (uncleaned, as Python 3.11 keeps it), else `None`.
pub fn docstring(body: &[crate::syntax::ast::Stmt]) -> Value {
    use crate::syntax::ast::{Expr, ExprKind, StmtKind};
    match body.first().map(|s| &s.kind) {
        Some(StmtKind::Expr(Expr { kind: ExprKind::Str(s), .. })) => Value::Str(s.clone()),
        _ => Value::None,
    }
}

/// A dataclass instance's field values in field order (what `==` compares).
fn dataclass_field_values(inst: &super::value::Instance) -> Vec<Value> {
    let set = inst.attrs.borrow();
    inst.class.fields.borrow().iter().filter_map(|f| set.get(f).cloned()).collect()
}

/// `l` is an unknown whose identity with `r` is not known: another unknown, or a class or
/// builtin it may be (an unknown is never a list, dict or instance made here).
/// `l` is an unknown that may be `None`, `r` is `None`.
fn maybe_none(l: &Value, r: &Value) -> bool {
    matches!((l, r), (Value::Opaque(o), Value::None) if o.maybe_none)
}

fn unknown_identity(l: &Value, r: &Value) -> bool {
    match (l, r) {
        (Value::Opaque(a), Value::Opaque(b)) => !Rc::ptr_eq(a, b),
        (Value::Opaque(_), Value::Builtin(_) | Value::Class(_)) => true,
        _ => false,
    }
}
