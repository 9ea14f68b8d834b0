//! `print` in an analysis whose output nobody reads (`check`): its arguments are evaluated as
//! Python evaluates them, except that a concrete scalar array converted only to be printed
//! (`float(loss)`, `loss.item()`, `int(n)`, `round(float(x), 4)`, alone or in an f-string) and
//! an array in an f-string field without a format spec (`f"{np.round(x, 2)}"`, printed as
//! `print(x)` prints it, which `print` already leaves uncomputed) are not computed, since
//! their values would be shown nowhere. Anything else in the arguments (a comparison, a call
//! of the user's, a tracer's conversion, which is JAX's error, a format spec applied to an
//! array) is evaluated as it is everywhere.

use std::rc::Rc;

use super::builtins::{printable_without_effects, Builtin};
use super::value::Value;
use super::{Ctx, Interp, PyResult};
use crate::syntax::ast::{Expr, ExprKind};

impl Interp<'_> {
    /// Whether a call of `callee` is a `print` whose output nobody reads.
    pub(super) fn print_unread(&self, callee: &Value) -> bool {
        self.stdout_unread && self.values.is_none() && matches!(callee, Value::Builtin(b) if matches!(**b, Builtin::Fn("print")))
    }

    /// One argument of a `print` whose output nobody reads.
    pub(super) fn print_arg(&mut self, ctx: &Ctx, e: &Expr) -> PyResult<Value> {
        Ok(self.unshown(ctx, e)?.unwrap_or_else(|| Value::Str(Rc::from(""))))
    }

    /// `e`'s value, or `None` for a conversion of a concrete scalar array to a Python number,
    /// left uncomputed.
    fn unshown(&mut self, ctx: &Ctx, e: &Expr) -> PyResult<Option<Value>> {
        match &e.kind {
            ExprKind::Call { func, args, keywords }
                if keywords.is_empty() && !args.iter().any(|a| matches!(a.kind, ExprKind::Starred(_))) =>
            {
                let (callee, argv) = match (&func.kind, args.as_slice()) {
                    // `x.item()`
                    (ExprKind::Attribute { value, attr, .. }, []) if attr.as_ref() == "item" => {
                        let recv = self.eval(ctx, value)?;
                        if convertible(&recv) {
                            return Ok(None);
                        }
                        self.set_span(func.span);
                        (self.getattr(&recv, attr)?, Vec::new())
                    }
                    // `float(x)`, `int(x)`, `round(float(x), n)`
                    (ExprKind::Name(_), [first, rest @ ..]) if rest.len() <= 1 => {
                        let callee = self.eval(ctx, func)?;
                        let name = match &callee {
                            Value::Builtin(b) => match **b {
                                Builtin::Fn(n @ ("float" | "int" | "round")) => Some(n),
                                _ => None,
                            },
                            _ => None,
                        };
                        let first = match name {
                            Some("round") => self.unshown(ctx, first)?,
                            _ => Some(self.eval(ctx, first)?),
                        };
                        let mut argv = Vec::with_capacity(args.len());
                        for a in rest {
                            argv.push(self.eval(ctx, a)?);
                        }
                        match first {
                            None => return Ok(None),
                            Some(v) if matches!(name, Some("float" | "int")) && rest.is_empty() && convertible(&v) => return Ok(None),
                            Some(v) => argv.insert(0, v),
                        }
                        (callee, argv)
                    }
                    _ => return self.eval(ctx, e).map(Some),
                };
                self.finish_call(ctx, e, func, &callee, argv, Vec::new()).map(Some)
            }
            ExprKind::FString(parts) => {
                // A replacement field without a format spec is `str`, `repr` or `format(v, "")`
                // of its value, which `print` itself would leave unprinted when it cannot raise
                // (arrays of at most 64 dimensions, and containers of those): not computed either.
                let text = self.fstring_with(ctx, parts, &mut |interp, ctx, e, plain| {
                    Ok(interp.unshown(ctx, e)?.filter(|v| !(plain && printable_without_effects(v, 0, &mut 0))))
                })?;
                Ok(Some(Value::Str(Rc::from(text))))
            }
            _ => self.eval(ctx, e).map(Some),
        }
    }
}

/// A concrete array whose conversion to a Python number cannot raise: a scalar of a real or
/// boolean dtype, not a tracer (whose conversion is JAX's error).
fn convertible(v: &Value) -> bool {
    match v {
        Value::Array(a) => !a.is_tracer() && a.aval.shape.is_empty() && !a.aval.dtype.is_key() && !a.aval.dtype.is_complex(),
        _ => false,
    }
}
