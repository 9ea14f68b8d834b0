//! The children of an instance of a class registered with `register_pytree_node` (or
//! `register_pytree_node_class`) without keys, in its flatten function's order, found without
//! running that function: hover names them as JAX's `keystr` does, `[<flat index 0>]`,
//! `[<flat index 1>]`, ..., so it needs their order, and a hover never runs user code.
//!
//! A flatten function whose body is one `return (children, aux)` with `children` a tuple or
//! list display of its parameter's instance attributes (`(self.w, self.b)`, or displays of
//! them, `(p.b, {'w': p.a})`), or one attribute holding a tuple or list (`self.layers`), is
//! read from its source: those are exactly the values Python would compute. Anything else
//! falls back to the children the analysis noted when it last flattened or unflattened that
//! instance (`pytree_nodes::class_children`); with neither, the order is not known.

use std::rc::Rc;

use super::value::{Dict, HashKey, Instance, Value};
use super::Interp;
use crate::syntax::ast::{ExprKind, FunctionDef, StmtKind};

/// The children of `inst`, whose class's registration has the flatten function `flatten` and
/// no keys, in flatten order; `None` when neither the source nor the analysis says.
pub(crate) fn custom_children(interp: &Interp, inst: &Rc<Instance>, flatten: &Value) -> Option<Vec<Value>> {
    read_source(inst, flatten).or_else(|| super::pytree_nodes::class_children(interp, &Value::Instance(inst.clone())))
}

fn read_source(inst: &Rc<Instance>, flatten: &Value) -> Option<Vec<Value>> {
    let def: &FunctionDef = match flatten {
        Value::Function(f) => &f.def,
        _ => return None,
    };
    let param = def.params.posonly.iter().chain(&def.params.args).next()?.name.clone();
    // A docstring may come before the one `return`.
    let mut body = def.body.iter().filter(|s| !matches!(&s.kind, StmtKind::Expr(e) if matches!(e.kind, ExprKind::Str(_))));
    let (Some(stmt), None) = (body.next(), body.next()) else { return None };
    let StmtKind::Return(Some(ret)) = &stmt.kind else { return None };
    let ExprKind::Tuple(parts) = &ret.kind else { return None };
    let [children, _aux] = parts.as_slice() else { return None };
    let reader = Reader { inst, param: &param };
    match &children.kind {
        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().map(|e| reader.value(e)).collect(),
        ExprKind::Attribute { .. } => match reader.value(children)? {
            Value::Tuple(items) => Some(items.to_vec()),
            Value::List(items) => Some(items.borrow().clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Evaluates the few expression forms a flatten function's children are written in.
struct Reader<'a> {
    inst: &'a Rc<Instance>,
    param: &'a str,
}

impl Reader<'_> {
    fn value(&self, e: &crate::syntax::ast::Expr) -> Option<Value> {
        Some(match &e.kind {
            ExprKind::Attribute { value, attr, .. } if matches!(&value.kind, ExprKind::Name(n) if **n == *self.param) => {
                self.inst.attrs.borrow().get(attr)?.clone()
            }
            ExprKind::Tuple(items) => Value::tuple(items.iter().map(|x| self.value(x)).collect::<Option<Vec<_>>>()?),
            ExprKind::List(items) => Value::list(items.iter().map(|x| self.value(x)).collect::<Option<Vec<_>>>()?),
            ExprKind::Dict(entries) => {
                let mut d = Dict::default();
                for (key, v) in entries {
                    let Some(ExprKind::Str(k)) = key.as_ref().map(|k| &k.kind) else { return None };
                    d.insert(HashKey::Str(k.clone()), Value::Str(k.clone()), self.value(v)?);
                }
                Value::Dict(Rc::new(std::cell::RefCell::new(d)))
            }
            ExprKind::NoneLit => Value::None,
            _ => return None,
        })
    }
}
