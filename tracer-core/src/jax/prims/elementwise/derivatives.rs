//! The derivative rules of the elementwise primitives: each gives its partial derivatives
//! (`partials`), from which both its JVP (`t_out = Σ t_i · ∂_i`) and its transpose
//! (`ct_i = sum_to_shape(g · ∂_i)`) follow; `select_n`, `convert_element_type` and
//! `stop_gradient` are linear and apply themselves (or nothing) to tangents.

use std::rc::Rc;

use crate::diagnostics::Code;
use crate::interp::Interp;
use crate::jax::ad::{
    self, binary, bind, broadcast_to, compare, differentiable, konst, mask_as, no_rule, no_rule_in_jax, scalar, sum_to_shape, unary,
    with_aval, zeros, AdError, AdResult,
};
use crate::jax::array::Array;
use crate::jax::ir::{BinaryPrim, CmpPrim, Eqn, Prim, UnaryPrim};
use crate::jax::prims::{families, Jvping, Tangents, Transposing};
use crate::jax::surface::JaxFn;

/// `∂out/∂input` of an elementwise primitive, as a factor that multiplies a tangent.
enum Partial {
    Zero,
    One,
    MinusOne,
    Times(Rc<Array>),
    /// The tangent where the boolean mask is true, 0 elsewhere: `select_n(mask, 0, t)`, as a
    /// `custom_jvp` rule writes it (`jax.nn.relu`). Unlike a product with a 0/1 mask, a
    /// negative or NaN tangent gives `0.`, not `-0.` or `nan`, where the mask is false.
    Where(Rc<Array>),
    /// `tanh`'s rule as JAX writes it, `(t + t · ans) · (1 - ans)`, whose rounding differs
    /// from `t · (1 - ans²)` where `ans` is near ±1 (`gelu`'s derivative); transposed,
    /// `u + u · ans` with `u = t · (1 - ans)`.
    Tanh(Rc<Array>),
    /// `abs`'s rule as JAX writes it, `select(x >= 0, t, -t)`: `t` itself at ±0 (where
    /// `sign(x) · t` would give 0) and `-t` at NaN. The mask is `x >= 0`.
    Signed(Rc<Array>),
}

fn apply(interp: &mut Interp, t: &Rc<Array>, d: &Partial, transposed: bool) -> AdResult<Option<Rc<Array>>> {
    Ok(match d {
        Partial::Tanh(ans) => {
            let one_minus = binary(interp, BinaryPrim::Sub, &scalar(1.0, &ans.aval), ans)?;
            Some(if transposed {
                let u = binary(interp, BinaryPrim::Mul, t, &one_minus)?;
                let v = binary(interp, BinaryPrim::Mul, &u, ans)?;
                binary(interp, BinaryPrim::Add, &u, &v)?
            } else {
                let v = binary(interp, BinaryPrim::Mul, t, ans)?;
                let s = binary(interp, BinaryPrim::Add, t, &v)?;
                binary(interp, BinaryPrim::Mul, &s, &one_minus)?
            })
        }
        Partial::Signed(nonnegative) => {
            let t = broadcast_to(interp, t, &nonnegative.aval.shape)?;
            let negated = unary(interp, UnaryPrim::Neg, &t)?;
            Some(bind(interp, Prim::Select, &[nonnegative.clone(), negated, t.clone()])?)
        }
        Partial::Zero => None,
        Partial::One => Some(t.clone()),
        Partial::MinusOne => Some(unary(interp, UnaryPrim::Neg, t)?),
        Partial::Times(f) => Some(binary(interp, BinaryPrim::Mul, t, f)?),
        Partial::Where(mask) => {
            let t = broadcast_to(interp, t, &mask.aval.shape)?;
            let z = zeros(interp, &t.aval)?;
            Some(bind(interp, Prim::Select, &[mask.clone(), z, t.clone()])?)
        }
    })
}

/// The partial derivatives of an elementwise primitive with respect to each input, or `None`
/// when the primitive is not elementwise. `x`, `y` are the inputs and `out` the output.
fn partials(interp: &mut Interp, eqn: &Eqn, ins: &[Rc<Array>], out: &Rc<Array>, need: &[bool]) -> AdResult<Option<Vec<Partial>>> {
    use Partial::*;
    let times = |a: Rc<Array>| Times(a);
    let x = match ins.first() {
        Some(x) => x.clone(),
        None => return Ok(None),
    };
    let one = scalar(1.0, &x.aval);
    let const_one = konst(1.0, &x.aval);
    Ok(Some(match &eqn.prim {
        Prim::Unary(u) => vec![match u {
            UnaryPrim::Neg => MinusOne,
            UnaryPrim::Copy | UnaryPrim::Real | UnaryPrim::Conj => One,
            UnaryPrim::Sign | UnaryPrim::Floor | UnaryPrim::Ceil | UnaryPrim::Round => Zero,
            UnaryPrim::Exp => times(out.clone()),
            UnaryPrim::Exp2 => times(binary(interp, BinaryPrim::Mul, out, &konst(std::f64::consts::LN_2, &x.aval))?),
            UnaryPrim::Log => times(binary(interp, BinaryPrim::Div, &one, &x)?),
            UnaryPrim::Log1p => {
                let xp1 = binary(interp, BinaryPrim::Add, &x, &one)?;
                times(binary(interp, BinaryPrim::Div, &one, &xp1)?)
            }
            UnaryPrim::Expm1 => times(binary(interp, BinaryPrim::Add, out, &one)?),
            // JAX: g * (1 + ans) * (1 - ans)
            UnaryPrim::Tanh => Tanh(out.clone()),
            UnaryPrim::Logistic => {
                let m = binary(interp, BinaryPrim::Sub, &one, out)?;
                times(binary(interp, BinaryPrim::Mul, out, &m)?)
            }
            UnaryPrim::Sin => times(unary(interp, UnaryPrim::Cos, &x)?),
            UnaryPrim::Cos => {
                let sin = unary(interp, UnaryPrim::Sin, &x)?;
                times(unary(interp, UnaryPrim::Neg, &sin)?)
            }
            UnaryPrim::Tan => {
                let sq = binary(interp, BinaryPrim::Mul, out, out)?;
                times(binary(interp, BinaryPrim::Add, &const_one, &sq)?)
            }
            UnaryPrim::Sinh => times(unary(interp, UnaryPrim::Cosh, &x)?),
            UnaryPrim::Cosh => times(unary(interp, UnaryPrim::Sinh, &x)?),
            UnaryPrim::Asin | UnaryPrim::Acos => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let diff = binary(interp, BinaryPrim::Sub, &const_one, &sq)?;
                let d = unary(interp, UnaryPrim::Rsqrt, &diff)?;
                if *u == UnaryPrim::Asin {
                    times(d)
                } else {
                    times(unary(interp, UnaryPrim::Neg, &d)?)
                }
            }
            UnaryPrim::Atan => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let den = binary(interp, BinaryPrim::Add, &const_one, &sq)?;
                times(binary(interp, BinaryPrim::Div, &one, &den)?)
            }
            UnaryPrim::Asinh => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let sum = binary(interp, BinaryPrim::Add, &sq, &one)?;
                times(unary(interp, UnaryPrim::Rsqrt, &sum)?)
            }
            UnaryPrim::Acosh => {
                let m = binary(interp, BinaryPrim::Sub, &x, &one)?;
                let p = binary(interp, BinaryPrim::Add, &x, &one)?;
                let prod = binary(interp, BinaryPrim::Mul, &m, &p)?;
                times(unary(interp, UnaryPrim::Rsqrt, &prod)?)
            }
            UnaryPrim::Atanh => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let den = binary(interp, BinaryPrim::Sub, &one, &sq)?;
                times(binary(interp, BinaryPrim::Div, &one, &den)?)
            }
            // JAX: g * (0.5 / ans)
            UnaryPrim::Sqrt => times(binary(interp, BinaryPrim::Div, &konst(0.5, &x.aval), out)?),
            // JAX: g * (-0.5 * (ans / x))
            UnaryPrim::Rsqrt => {
                let r = binary(interp, BinaryPrim::Div, out, &x)?;
                times(binary(interp, BinaryPrim::Mul, &r, &konst(-0.5, &x.aval))?)
            }
            // JAX: g * (1/3 * ans ** -2)
            UnaryPrim::Cbrt => {
                let p = bind(interp, Prim::IntegerPow(-2), std::slice::from_ref(out))?;
                times(binary(interp, BinaryPrim::Mul, &p, &konst(1.0 / 3.0, &x.aval))?)
            }
            UnaryPrim::Abs => Signed(compare(interp, CmpPrim::Ge, &x, &scalar(0.0, &x.aval))?),
            UnaryPrim::Square => times(binary(interp, BinaryPrim::Mul, &x, &konst(2.0, &x.aval))?),
            UnaryPrim::Erf => {
                let sq = binary(interp, BinaryPrim::Mul, &x, &x)?;
                let neg = unary(interp, UnaryPrim::Neg, &sq)?;
                let e = unary(interp, UnaryPrim::Exp, &neg)?;
                times(binary(interp, BinaryPrim::Mul, &e, &konst(std::f64::consts::FRAC_2_SQRT_PI, &x.aval))?)
            }
            // JAX: g * (-2 / sqrt(pi)) * exp(-x²).
            UnaryPrim::Erfc => {
                let sq = unary(interp, UnaryPrim::Square, &x)?;
                let neg = unary(interp, UnaryPrim::Neg, &sq)?;
                let e = unary(interp, UnaryPrim::Exp, &neg)?;
                times(binary(interp, BinaryPrim::Mul, &konst(-std::f64::consts::FRAC_2_SQRT_PI, &x.aval), &e)?)
            }
            UnaryPrim::IsFinite | UnaryPrim::Not => Zero,
            // JAX: g * digamma(x), and digamma's: g * polygamma(1, x).
            UnaryPrim::Lgamma => times(unary(interp, UnaryPrim::Digamma, &x)?),
            UnaryPrim::Digamma => times(binary(interp, BinaryPrim::Polygamma, &konst(1.0, &x.aval), &x)?),
            // JAX: sqrt(pi)/2 * (g * exp(square(ans))).
            UnaryPrim::ErfInv => {
                let sq = unary(interp, UnaryPrim::Square, out)?;
                let e = unary(interp, UnaryPrim::Exp, &sq)?;
                times(binary(interp, BinaryPrim::Mul, &konst(std::f64::consts::PI.sqrt() / 2.0, &x.aval), &e)?)
            }
            UnaryPrim::Imag => return Err(AdError::NoRule(u.name().into())),
        }],
        Prim::IntegerPow(n) => vec![match n {
            0 => Zero,
            1 => One,
            _ => {
                let p = bind(interp, Prim::IntegerPow(n - 1), std::slice::from_ref(&x))?;
                times(binary(interp, BinaryPrim::Mul, &p, &konst(*n as f64, &x.aval))?)
            }
        }],
        Prim::Binary(b) => {
            let y = ins.get(1).cloned().ok_or_else(|| AdError::NoRule(b.name().into()))?;
            match b {
                BinaryPrim::Add => vec![One, One],
                BinaryPrim::Sub => vec![One, MinusOne],
                BinaryPrim::Mul => vec![times(y), times(x)],
                BinaryPrim::Div => {
                    let inv = binary(interp, BinaryPrim::Div, &one, &y)?;
                    let q = binary(interp, BinaryPrim::Div, out, &y)?;
                    let dy = unary(interp, UnaryPrim::Neg, &q)?;
                    vec![times(inv), times(dy)]
                }
                // JAX: ∂x = y * x ** (y - 1); ∂y = log(x where x != 0 else 1) * ans.
                BinaryPrim::Pow if !need.get(1).copied().unwrap_or(true) => {
                    let ym1 = binary(interp, BinaryPrim::Sub, &y, &scalar(1.0, &y.aval))?;
                    let p = binary(interp, BinaryPrim::Pow, &x, &ym1)?;
                    vec![times(binary(interp, BinaryPrim::Mul, &y, &p)?), Zero]
                }
                BinaryPrim::Pow => {
                    let ym1 = binary(interp, BinaryPrim::Sub, &y, &scalar(1.0, &y.aval))?;
                    let p = binary(interp, BinaryPrim::Pow, &x, &ym1)?;
                    let dx = binary(interp, BinaryPrim::Mul, &y, &p)?;
                    let is_zero = compare(interp, CmpPrim::Eq, &x, &scalar(0.0, &x.aval))?;
                    let ones = broadcast_to(interp, &one, &x.aval.shape)?;
                    let safe = bind(interp, Prim::Select, &[is_zero, x.clone(), ones])?;
                    let log = unary(interp, UnaryPrim::Log, &safe)?;
                    let dy = binary(interp, BinaryPrim::Mul, &log, out)?;
                    vec![times(dx), times(dy)]
                }
                BinaryPrim::Max | BinaryPrim::Min => {
                    // jax.nn.relu is a custom_jvp whose rule is `select(x > 0, g, zeros)`:
                    // its derivative at 0 is 0, and a negative or NaN tangent gives 0. where
                    // x <= 0. jnp.maximum splits a tie evenly (JAX's `_balanced_eq`).
                    match eqn.api {
                        Some(JaxFn::NnRelu) if *b == BinaryPrim::Max => vec![Where(compare(interp, CmpPrim::Gt, &x, &y)?), Zero],
                        // relu6's rule, `select((x > 0) & (x < 6), g, 0)`, as its two
                        // equations' selections: `x > 0` for the `max`, `max(x, 0) < 6` for
                        // the `min` (the same values, NaN included).
                        Some(JaxFn::NnRelu6) if *b == BinaryPrim::Max => vec![Where(compare(interp, CmpPrim::Gt, &x, &y)?), Zero],
                        Some(JaxFn::NnRelu6) => vec![Where(compare(interp, CmpPrim::Lt, &x, &y)?), Zero],
                        Some(JaxFn::TreeMap | JaxFn::TreeMap2 | JaxFn::JaxTreeMap) => {
                            return Err(AdError::NoRule(format!("{} under tree_map (relu or maximum?)", b.name())))
                        }
                        _ => {
                            // ∂x = 1 where only x is the result, 0.5 where both are, 0 elsewhere.
                            let dt = out.aval.dtype;
                            let ex = compare(interp, CmpPrim::Eq, &x, out)?;
                            let fx = mask_as(interp, &ex, dt, out.aval.weak)?;
                            let ey = compare(interp, CmpPrim::Eq, &y, out)?;
                            let fy = mask_as(interp, &ey, dt, out.aval.weak)?;
                            let half = scalar(0.5, &out.aval);
                            let oneo = scalar(1.0, &out.aval);
                            let hx = binary(interp, BinaryPrim::Mul, &fx, &half)?;
                            let hx = binary(interp, BinaryPrim::Sub, &oneo, &hx)?;
                            let hy = binary(interp, BinaryPrim::Mul, &fy, &half)?;
                            let hy = binary(interp, BinaryPrim::Sub, &oneo, &hy)?;
                            let dx = binary(interp, BinaryPrim::Mul, &fx, &hy)?;
                            let dy = binary(interp, BinaryPrim::Mul, &fy, &hx)?;
                            vec![times(dx), times(dy)]
                        }
                    }
                }
                // `jnp.logaddexp`'s custom_jvp: ∂x = exp(x - out), ∂y = exp(y - out), with
                // +inf (only +inf: `_replace_inf` compares with `inf`) replaced by 0 first, so
                // (-inf, -inf) gives exp(-inf - -inf) = NaN as in JAX.
                BinaryPrim::Logaddexp => {
                    let finite_or_zero = |interp: &mut Interp, v: &Rc<Array>| -> AdResult<Rc<Array>> {
                        let inf = compare(interp, CmpPrim::Eq, v, &scalar(f64::INFINITY, &v.aval))?;
                        let zeros = broadcast_to(interp, &konst(0.0, &v.aval), &v.aval.shape)?;
                        bind(interp, Prim::Select, &[inf, v.clone(), zeros])
                    };
                    let o = finite_or_zero(interp, out)?;
                    let (fx, fy) = (finite_or_zero(interp, &x)?, finite_or_zero(interp, &y)?);
                    let dx = binary(interp, BinaryPrim::Sub, &fx, &o)?;
                    let dy = binary(interp, BinaryPrim::Sub, &fy, &o)?;
                    vec![times(unary(interp, UnaryPrim::Exp, &dx)?), times(unary(interp, UnaryPrim::Exp, &dy)?)]
                }
                // JAX: ∂x = polygamma(n + 1, x); the order has none (a ValueError in JAX).
                BinaryPrim::Polygamma => {
                    if need.first().copied().unwrap_or(true) {
                        return Err(AdError::Raise(interp.raise(
                            "ValueError",
                            Code::PythonException,
                            "polygamma gradient with respect to m is not supported",
                        )));
                    }
                    let n1 = binary(interp, BinaryPrim::Add, &x, &konst(1.0, &x.aval))?;
                    vec![Zero, times(binary(interp, BinaryPrim::Polygamma, &n1, &y)?)]
                }
                BinaryPrim::Atan2 => {
                    let xx = binary(interp, BinaryPrim::Mul, &x, &x)?;
                    let yy = binary(interp, BinaryPrim::Mul, &y, &y)?;
                    let den = binary(interp, BinaryPrim::Add, &xx, &yy)?;
                    let dx = binary(interp, BinaryPrim::Div, &y, &den)?;
                    let q = binary(interp, BinaryPrim::Div, &x, &den)?;
                    let dy = unary(interp, UnaryPrim::Neg, &q)?;
                    vec![times(dx), times(dy)]
                }
                // JAX: ∂y = -sign(x / y) * floor(|x / y|)
                BinaryPrim::Rem => {
                    let q = binary(interp, BinaryPrim::Div, &x, &y)?;
                    let sign = unary(interp, UnaryPrim::Sign, &q)?;
                    let abs = unary(interp, UnaryPrim::Abs, &q)?;
                    let floor = unary(interp, UnaryPrim::Floor, &abs)?;
                    let t = binary(interp, BinaryPrim::Mul, &sign, &floor)?;
                    vec![One, times(unary(interp, UnaryPrim::Neg, &t)?)]
                }
                BinaryPrim::NextAfter => {
                    no_rule_in_jax(interp, &eqn.prim)?;
                    return Err(AdError::NoRule(b.name().into()));
                }
                _ => return Err(AdError::NoRule(b.name().into())),
            }
        }
        // lax.clamp(min, x, max), with JAX's masks.
        Prim::Clamp => {
            let (lo, op, hi) = match ins {
                [lo, op, hi] => (lo, op, hi),
                _ => return Err(AdError::NoRule("clamp".into())),
            };
            let dt = out.aval.dtype;
            let m = |interp: &mut Interp, a: &Rc<Array>, c: CmpPrim, b: &Rc<Array>| -> AdResult<Rc<Array>> {
                let mask = compare(interp, c, a, b)?;
                mask_as(interp, &mask, dt, out.aval.weak)
            };
            let (a, b) = (m(interp, lo, CmpPrim::Gt, op)?, m(interp, lo, CmpPrim::Lt, hi)?);
            let dlo = binary(interp, BinaryPrim::Mul, &a, &b)?;
            let (a, b) = (m(interp, op, CmpPrim::Gt, lo)?, m(interp, op, CmpPrim::Lt, hi)?);
            let dop = binary(interp, BinaryPrim::Mul, &a, &b)?;
            let dhi = m(interp, hi, CmpPrim::Lt, op)?;
            vec![times(dlo), times(dop), times(dhi)]
        }
        Prim::Compare(_) | Prim::Select | Prim::ConvertElementType { .. } | Prim::StopGradient | families::all_but!(elementwise) => {
            return Ok(None)
        }
    }))
}

/// The JVP rule of an elementwise primitive: the output's tangent from the operands'.
pub(crate) fn jvp_rule(interp: &mut Interp, j: Jvping) -> Tangents {
    let Jvping { eqn, ins, out, ts } = j;
    let out_aval = &out.aval;
    let need: Vec<bool> = ts.iter().map(Option::is_some).collect();
    if let Some(ds) = partials(interp, eqn, ins, out, &need)? {
        let mut total: Option<Rc<Array>> = None;
        for (t, d) in ts.iter().zip(&ds) {
            let Some(t) = t else { continue };
            let Some(term) = apply(interp, t, d, false)? else { continue };
            let term = broadcast_to(interp, &term, &out_aval.shape)?;
            total = Some(match total {
                Some(acc) => binary(interp, BinaryPrim::Add, &acc, &term)?,
                None => term,
            });
        }
        return Ok(vec![total]);
    }
    let instantiate = |interp: &mut Interp, i: usize| ad::instantiate(interp, ins, ts, i);
    let t = match &eqn.prim {
        Prim::StopGradient => return Ok(vec![None]),
        Prim::ConvertElementType { .. } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            with_aval(interp, t.clone(), out_aval)?
        }
        // select_n(pred, on_false, on_true): the predicate has no tangent.
        Prim::Select => {
            let f = instantiate(interp, 1)?;
            let t = instantiate(interp, 2)?;
            bind(interp, Prim::Select, &[ins[0].clone(), f, t])?
        }
        Prim::Unary(_) | Prim::Binary(_) | Prim::Compare(_) | Prim::Clamp | Prim::IntegerPow(_) | families::all_but!(elementwise) => {
            return Err(no_rule(eqn))
        }
    };
    Ok(vec![Some(t)])
}

/// The transpose rule of an elementwise primitive: the cotangents of the `active` operands.
pub(crate) fn transpose_rule(interp: &mut Interp, t: Transposing, cts: &mut [Option<Rc<Array>>]) -> AdResult<()> {
    let Transposing { eqn, ins, out, g, active } = t;
    if let Some(ds) = partials(interp, eqn, ins, out, active)? {
        for (i, d) in ds.iter().enumerate() {
            if !active.get(i).copied().unwrap_or(false) {
                continue;
            }
            if let Some(c) = apply(interp, g, d, true)? {
                cts[i] = Some(sum_to_shape(interp, &c, &ins[i].aval.shape)?);
            }
        }
        return Ok(());
    }
    let in_shape = |i: usize| ins[i].aval.shape.to_vec();
    match &eqn.prim {
        Prim::StopGradient => {}
        Prim::ConvertElementType { .. } => {
            if differentiable(ins[0].aval.dtype) {
                cts[0] = Some(with_aval(interp, g.clone(), &ins[0].aval)?);
            }
        }
        Prim::Select => {
            let z = zeros(interp, &g.aval)?;
            let pred = ins[0].clone();
            if active[1] {
                let c = bind(interp, Prim::Select, &[pred.clone(), g.clone(), z.clone()])?;
                cts[1] = Some(sum_to_shape(interp, &c, &in_shape(1))?);
            }
            if active[2] {
                let c = bind(interp, Prim::Select, &[pred, z, g.clone()])?;
                cts[2] = Some(sum_to_shape(interp, &c, &in_shape(2))?);
            }
        }
        Prim::Unary(_) | Prim::Binary(_) | Prim::Compare(_) | Prim::Clamp | Prim::IntegerPow(_) | families::all_but!(elementwise) => {
            return Err(no_rule(eqn))
        }
    }
    Ok(())
}
