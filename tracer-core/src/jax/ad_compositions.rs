//! The compositions JAX differentiates in place of a primitive. The JVP rules of
//! `reduce_prod` (`_reduce_prod_jvp_rule`, jax/_src/lax/lax.py) and of `cumprod`, `cummax` and
//! `cummin` (`_cumulative_jvp_rule`, jax/_src/lax/control_flow/loops.py) are `jax.jvp` of a
//! composition of other primitives: a tree of products for `reduce_prod`, `associative_scan`
//! for the cumulative ones. So under a transformation JAX's primal value, its tangent and (the
//! transposed linear map) its cotangent are those of the composition, not of a formula such
//! as `prod(x) / x`: a zero in a product, a tie in a running maximum (`max` shares its tangent
//! evenly between equal operands) and a NaN give JAX's values only this way. `ad::forward`
//! replays an active equation of these primitives as the jaxpr built here, whose equations
//! all have rules of their own.

use super::aval::Aval;
use super::ir::{Atom, BinaryPrim, Builder, Eqn, Jaxpr, Prim, ReduceOp};

/// The composition JAX differentiates for `eqn` (`reduce_prod`, `cumprod`, `cummax`,
/// `cummin`), as a jaxpr whose binders are the equation's inputs (avals `in_avals`); `None`
/// for other primitives.
pub fn composition(eqn: &Eqn, in_avals: &[Aval]) -> Option<Jaxpr> {
    let [x_aval] = in_avals else { return None };
    let [(_, out_aval)] = eqn.outputs.as_slice() else { return None };
    let mut b = Builder::new(1);
    let x = Val { atom: Atom::Var(0), aval: x_aval.clone() };
    let out = if let Prim::Reduce { op: ReduceOp::Prod, axes } = &eqn.prim {
        product_tree(&mut b, x, axes, out_aval)?
    } else if let Prim::Cumulative { op, axis, reverse } = &eqn.prim {
        let combine = match op {
            ReduceOp::Prod => BinaryPrim::Mul,
            ReduceOp::Max => BinaryPrim::Max,
            ReduceOp::Min => BinaryPrim::Min,
            ReduceOp::Sum | ReduceOp::And | ReduceOp::Or => return None,
        };
        if *axis >= x.aval.ndim() {
            return None;
        }
        let scan = Scan { combine, axis: *axis };
        let x = if *reverse { scan.rev(&mut b, x) } else { x };
        let y = scan.run(&mut b, x);
        if *reverse {
            scan.rev(&mut b, y)
        } else {
            y
        }
    } else {
        return None;
    };
    if out.aval != *out_aval {
        return None;
    }
    Some(b.finish(vec![(0, x_aval.clone())], vec![out.atom]))
}

/// An atom of the jaxpr being built, with its aval.
#[derive(Clone)]
struct Val {
    atom: Atom,
    aval: Aval,
}

fn emit(b: &mut Builder, prim: Prim, inputs: &[&Val], aval: Aval) -> Val {
    let atom = b.emit(prim, inputs.iter().map(|v| v.atom.clone()).collect(), aval.clone());
    Val { atom, aval }
}

/// `x[start:limit:stride]` along `axis`.
fn slice_in_dim(b: &mut Builder, x: &Val, axis: usize, start: usize, limit: usize, stride: usize) -> Val {
    let shape = &x.aval.shape;
    let mut starts = vec![0; shape.len()];
    let mut limits = shape.to_vec();
    let mut strides = vec![1; shape.len()];
    starts[axis] = start;
    limits[axis] = limit;
    strides[axis] = stride;
    let mut out = shape.to_vec();
    out[axis] = limit.saturating_sub(start).div_ceil(stride);
    emit(b, Prim::Slice { start: starts, limit: limits, strides }, &[x], x.aval.with_shape(&out))
}

fn reshape(b: &mut Builder, x: &Val, shape: &[usize]) -> Val {
    emit(b, Prim::Reshape { new_sizes: shape.to_vec() }, &[x], x.aval.with_shape(shape))
}

/// `_reduce_jvp` for `reduce_prod`: the reduced axes moved to the front and flattened into
/// one of length `n`, then halved until one row is left: the first `⌈n/2⌉` rows times the
/// rest, padded with a 1 when `n` is odd. An empty product is the constant 1 (no tangent).
fn product_tree(b: &mut Builder, x: Val, axes: &[usize], out_aval: &Aval) -> Option<Val> {
    let shape = x.aval.shape.to_vec();
    if axes.iter().any(|&a| a >= shape.len()) {
        return None;
    }
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
    let n: usize = axes.iter().map(|&a| shape[a]).product();
    if n == 0 {
        return Some(emit(b, Prim::full(1.0, out_aval), &[], out_aval.clone()));
    }
    let permutation: Vec<usize> = axes.iter().chain(&kept).copied().collect();
    let mut x = x;
    if permutation.iter().enumerate().any(|(i, &p)| i != p) {
        let moved: Vec<usize> = permutation.iter().map(|&p| shape[p]).collect();
        x = emit(b, Prim::Transpose { permutation: permutation.clone() }, &[&x], x.aval.with_shape(&moved));
    }
    let mut rows: Vec<usize> = std::iter::once(n).chain(kept.iter().map(|&d| shape[d])).collect();
    if x.aval.shape.as_slice() != rows.as_slice() {
        x = reshape(b, &x, &rows);
    }
    while rows[0] > 1 {
        let len = rows[0];
        let half = len.div_ceil(2);
        let first = slice_in_dim(b, &x, 0, 0, half, 1);
        let mut second = slice_in_dim(b, &x, 0, half, len, 1);
        if len - half != half {
            let mut config = vec![(0, 0, 0); rows.len()];
            config[0] = (0, 1, 0);
            let one = Val { atom: Atom::Lit(1.0, Aval::scalar(x.aval.dtype)), aval: Aval::scalar(x.aval.dtype) };
            second = emit(b, Prim::Pad { config }, &[&second, &one], first.aval.clone());
        }
        x = emit(b, Prim::Binary(BinaryPrim::Mul), &[&first, &second], first.aval.clone());
        rows[0] = half;
    }
    Some(emit(b, Prim::Squeeze { dimensions: vec![0] }, &[&x], out_aval.clone()))
}

/// `associative_scan(combine, x, axis=axis)`: Blelloch's parallel prefix scan as JAX writes
/// it (`_scan`), each level combining adjacent pairs, scanning those recursively, and
/// interleaving the result with the remaining elements combined into it.
struct Scan {
    combine: BinaryPrim,
    axis: usize,
}

impl Scan {
    fn rev(&self, b: &mut Builder, x: Val) -> Val {
        let aval = x.aval.clone();
        emit(b, Prim::Rev { dimensions: vec![self.axis] }, &[&x], aval)
    }

    fn combine(&self, b: &mut Builder, x: &Val, y: &Val) -> Val {
        emit(b, Prim::Binary(self.combine), &[x, y], x.aval.clone())
    }

    fn len(&self, x: &Val) -> usize {
        x.aval.shape[self.axis]
    }

    fn run(&self, b: &mut Builder, elems: Val) -> Val {
        let n = self.len(&elems);
        if n < 2 {
            return elems;
        }
        let left = slice_in_dim(b, &elems, self.axis, 0, n - 1, 2);
        let right = slice_in_dim(b, &elems, self.axis, 1, n, 2);
        let reduced = self.combine(b, &left, &right);
        let odd = self.run(b, reduced);
        let head = slice_in_dim(b, &elems, self.axis, 0, 1, 1);
        // Empty when n == 2: JAX combines and concatenates empty arrays there, which changes
        // nothing.
        let even = if n > 2 {
            let rest = slice_in_dim(b, &elems, self.axis, 2, n, 2);
            let prefix = if n % 2 == 0 {
                let m = self.len(&odd);
                slice_in_dim(b, &odd, self.axis, 0, m - 1, 1)
            } else {
                odd.clone()
            };
            let tail = self.combine(b, &prefix, &rest);
            let mut shape = elems.aval.shape.to_vec();
            shape[self.axis] = 1 + self.len(&tail);
            emit(b, Prim::Concatenate { dimension: self.axis }, &[&head, &tail], elems.aval.with_shape(&shape))
        } else {
            head
        };
        self.interleave(b, &even, &odd, n)
    }

    /// `_interleave(a, b)`: `a` at the even places and `b` at the odd ones of `n`, as JAX
    /// writes it: each spread over zeros (JAX pads with interior padding) and the two added,
    /// so a `-0.` becomes `0.` as in JAX's primal value and tangent.
    fn interleave(&self, b: &mut Builder, even: &Val, odd: &Val, n: usize) -> Val {
        let spread_even = self.spread(b, even, true, n);
        let spread_odd = self.spread(b, odd, false, n);
        emit(b, Prim::Binary(BinaryPrim::Add), &[&spread_even, &spread_odd], spread_even.aval.clone())
    }

    /// `x`'s elements every other place along the axis, from place 0 (`first`) or 1, zeros
    /// between them, `n` places in all.
    fn spread(&self, b: &mut Builder, x: &Val, first: bool, n: usize) -> Val {
        let axis = self.axis;
        let k = self.len(x);
        let mut column = x.aval.shape.to_vec();
        column.insert(axis + 1, 1);
        let x1 = reshape(b, x, &column);
        let zeros_aval = x.aval.with_shape(&column);
        let zeros = emit(b, Prim::full(0.0, &zeros_aval), &[], zeros_aval);
        let mut pairs = column.clone();
        pairs[axis + 1] = 2;
        let parts = if first { [&x1, &zeros] } else { [&zeros, &x1] };
        let paired = emit(b, Prim::Concatenate { dimension: axis + 1 }, &parts, x.aval.with_shape(&pairs));
        let mut flat = x.aval.shape.to_vec();
        flat[axis] = 2 * k;
        let spread = reshape(b, &paired, &flat);
        let mut full = flat.clone();
        full[axis] = n;
        if 2 * k > n {
            slice_in_dim(b, &spread, axis, 0, n, 1)
        } else if 2 * k < n {
            let mut pad_shape = flat.clone();
            pad_shape[axis] = n - 2 * k;
            let pad_aval = x.aval.with_shape(&pad_shape);
            let pad = emit(b, Prim::full(0.0, &pad_aval), &[], pad_aval);
            emit(b, Prim::Concatenate { dimension: axis }, &[&spread, &pad], x.aval.with_shape(&full))
        } else {
            spread
        }
    }
}
