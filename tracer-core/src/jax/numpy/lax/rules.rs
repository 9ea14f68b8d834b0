//! The rules `lax.rs`'s wrappers apply: lax's dtype checks and shape rules for the unary and
//! binary primitives (with JAX's messages), `select_n`, `slice`, `concatenate`, `pad`, the
//! reductions and `sort`, each as jax/_src/lax/lax.py and slicing.py state them.

use super::*;

/// A permutation of `0..nd` given as static ints (`None` when it is not one).
pub(super) fn permutation(interp: &mut Interp, p: &Args, i: usize, name: &str, nd: usize) -> PyResult<Option<Vec<usize>>> {
    let Some(perm) = ints_arg(interp, p, i, name)? else { return Ok(None) };
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    Ok((sorted == (0..nd as i64).collect::<Vec<_>>()).then(|| perm.iter().map(|&d| d as usize).collect()))
}

pub(super) fn unary(interp: &mut Interp, f: JaxFn, prim: UnaryPrim, accepts: Accepts, x: &Rc<Array>, p: &Args) -> PyResult<Value> {
    if !accepts.admits(x.aval.dtype) {
        let message =
            format!("{} does not accept dtype {}. Accepted dtypes are subtypes of {}.", prim.name(), x.aval.dtype.name(), accepts.names());
        return Err(interp.raise("TypeError", Code::DtypeMismatch, message));
    }
    let aval = if prim == UnaryPrim::IsFinite { x.aval.with_dtype(DType::Bool).weak(false) } else { x.aval.clone() };
    if prim == UnaryPrim::Round {
        // `rounding_method`: 0 (AWAY_FROM_ZERO, the default) or 1 (TO_NEAREST_EVEN), as an
        // int or a `lax.RoundingMethod`; the round primitive here rounds half to even.
        let method = match p.get(1, "rounding_method") {
            None => Some(0),
            Some(v) => crate::interp::ops::as_int(v).or_else(|| rounding_method_member(v)),
        };
        match method {
            Some(1) => {}
            Some(0) => return round_away_from_zero(interp, x).map(Value::Array),
            _ => return not_computed(interp, f, std::slice::from_ref(x), aval),
        }
    }
    apply1(interp, Prim::Unary(prim), std::slice::from_ref(x)).map(Value::Array)
}

/// `lax.RoundingMethod.AWAY_FROM_ZERO` (0) or `TO_NEAREST_EVEN` (1) when `v` is printed as one.
pub(super) fn rounding_method_member(v: &Value) -> Option<i64> {
    let text = format!("{v:?}");
    if text.contains("TO_NEAREST_EVEN") {
        Some(1)
    } else if text.contains("AWAY_FROM_ZERO") {
        Some(0)
    } else {
        None
    }
}

/// Rounding half away from zero from the half-to-even `round`: `r = round(x)` moved one
/// further from zero (`r + sign(x)`) where `x` is a half and `r` rounded it toward zero.
/// Every step is exact, and the derivative is zero everywhere, as JAX's.
pub(super) fn round_away_from_zero(interp: &mut Interp, x: &Rc<Array>) -> PyResult<Rc<Array>> {
    let r = apply1(interp, Prim::Unary(UnaryPrim::Round), std::slice::from_ref(x))?;
    let half = Array::scalar(0.5, x.aval.dtype, x.aval.weak);
    let gap = lax_binary_prim(interp, BinaryPrim::Sub, &r, x)?;
    let gap = apply1(interp, Prim::Unary(UnaryPrim::Abs), &[gap])?;
    let is_half = lax_compare(interp, CmpPrim::Eq, &gap, &half)?;
    let abs_r = apply1(interp, Prim::Unary(UnaryPrim::Abs), std::slice::from_ref(&r))?;
    let abs_x = apply1(interp, Prim::Unary(UnaryPrim::Abs), std::slice::from_ref(x))?;
    let toward_zero = lax_compare(interp, CmpPrim::Lt, &abs_r, &abs_x)?;
    let fix = lax_binary_prim(interp, BinaryPrim::And, &is_half, &toward_zero)?;
    let sign = apply1(interp, Prim::Unary(UnaryPrim::Sign), std::slice::from_ref(x))?;
    let moved = lax_binary_prim(interp, BinaryPrim::Add, &r, &sign)?;
    apply1(interp, Prim::Select, &[fix, r, moved.clone()])
}

/// The broadcast shape of two operands of a lax binary primitive: equal ranks (a scalar
/// goes with anything), each axis equal or 1; JAX's `_try_broadcast_shapes` messages.
pub(super) fn lax_shape(interp: &mut Interp, name: &str, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Shape> {
    let (sa, sb) = (&x.aval.shape, &y.aval.shape);
    if sa.is_empty() {
        return Ok(sb.clone());
    }
    if sb.is_empty() {
        return Ok(sa.clone());
    }
    if sa.len() != sb.len() {
        let (lo, hi) = (sa.len().min(sb.len()), sa.len().max(sb.len()));
        return Err(interp.raise(
            "TypeError",
            Code::ShapeMismatch,
            format!("{name}: arrays must have the same number of dimensions, got {{{lo}, {hi}}}"),
        ));
    }
    let mut out = Shape::with_capacity(sa.len());
    for (&a, &b) in sa.iter().zip(sb.iter()) {
        if a == b || b == 1 {
            out.push(a);
        } else if a == 1 {
            out.push(b);
        } else {
            let message = format!("{name} got incompatible shapes for broadcasting: {}, {}.", shape_tuple(sa), shape_tuple(sb));
            return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
        }
    }
    Ok(out)
}

/// Broadcasts an operand of a lax binary primitive to the result's shape (a scalar, or
/// axes of size 1).
pub(super) fn to_shape(interp: &mut Interp, a: &Rc<Array>, shape: &[usize]) -> PyResult<Rc<Array>> {
    if a.aval.shape.as_slice() == shape || a.aval.ndim() == 0 {
        return Ok(a.clone());
    }
    let squeezed: Vec<usize> = (0..shape.len()).filter(|&d| a.aval.shape[d] != 1 || shape[d] == 1).collect();
    let inner: Vec<usize> = squeezed.iter().map(|&d| a.aval.shape[d]).collect();
    let a = reshape_raw(interp, a, &inner)?;
    let prim = Prim::BroadcastInDim { shape: shape.to_vec(), broadcast_dimensions: squeezed };
    apply1(interp, prim, std::slice::from_ref(&a))
}

pub(super) fn accepts_or_raise(interp: &mut Interp, name: &str, accepts: Accepts, position: usize, a: &Rc<Array>) -> PyResult<()> {
    if accepts.admits(a.aval.dtype) {
        return Ok(());
    }
    let message = format!(
        "{name} does not accept dtype {} at position {position}. Accepted dtypes at position {position} are subtypes of {}.",
        a.aval.dtype.name(),
        accepts.names()
    );
    Err(interp.raise("TypeError", Code::DtypeMismatch, message))
}

/// `lax.add(x, y)` and the other binary functions: shape rule, then dtype rule, then bind.
pub(super) fn binary(interp: &mut Interp, kind: BinaryKind, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Rc<Array>> {
    let (name, first, second) = match &kind {
        BinaryKind::Arith(prim, a, b) => (prim.name(), *a, *b),
        BinaryKind::Compare(_, name, a) => (*name, *a, *a),
    };
    let shape = lax_shape(interp, name, x, y)?;
    accepts_or_raise(interp, name, first, 0, x)?;
    accepts_or_raise(interp, name, second, 1, y)?;
    let weak = x.aval.weak && y.aval.weak;
    match kind {
        BinaryKind::Arith(BinaryPrim::Pow, ..) => {
            // `_pow_dtype_rule`: an inexact base to an integer power, or equal dtypes; the
            // lowering converts an integer exponent to the base's dtype.
            if !(y.aval.dtype.is_integer() || x.aval.dtype == y.aval.dtype) {
                let message = format!(
                    "the first argument to pow must have an inexact dtype (float or complex), and the second argument must have an inexact or integer dtype, and two inexact dtypes must match, but got {} and {} respectively.",
                    x.aval.dtype.name(),
                    y.aval.dtype.name()
                );
                return Err(interp.raise("TypeError", Code::DtypeMismatch, message));
            }
            let y = convert(interp, y, x.aval.dtype, y.aval.weak)?;
            let (a, b) = (to_shape(interp, x, &shape)?, to_shape(interp, &y, &shape)?);
            apply1(interp, Prim::Binary(BinaryPrim::Pow), &[a, b])
        }
        BinaryKind::Arith(prim, ..) => {
            check_same_dtypes(interp, name, &[x, y])?;
            let (a, b) = (to_shape(interp, x, &shape)?, to_shape(interp, y, &shape)?);
            let aval = Aval { shape, dtype: x.aval.dtype, weak };
            if !shift_is_computed(prim, x, y) {
                return apply1(interp, Prim::opaque(prim.name(), aval), &[a, b]);
            }
            apply1(interp, Prim::Binary(prim), &[a, b])
        }
        BinaryKind::Compare(c, ..) => {
            check_same_dtypes(interp, name, &[x, y])?;
            let (a, b) = (to_shape(interp, x, &shape)?, to_shape(interp, y, &shape)?);
            apply1(interp, Prim::Compare(c), &[a, b])
        }
    }
}

pub(super) fn lax_binary_prim(interp: &mut Interp, prim: BinaryPrim, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Rc<Array>> {
    binary(interp, BinaryKind::Arith(prim, Accepts::Any, Accepts::Any), x, y)
}

pub(super) fn lax_compare(interp: &mut Interp, c: CmpPrim, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Rc<Array>> {
    binary(interp, BinaryKind::Compare(c, "compare", Accepts::Any), x, y)
}

/// Whether the shift kernels compute `x << y` (`>>`) as XLA does: for shift amounts known to
/// be in `0..bits` and, for a logical right shift, unsigned operands. Other shift amounts
/// (XLA gives 0 or the sign) and the logical shift of signed integers are not computed.
pub(super) fn shift_is_computed(prim: BinaryPrim, x: &Rc<Array>, y: &Rc<Array>) -> bool {
    use BinaryPrim as B;
    if !matches!(prim, B::ShiftLeft | B::ShiftRightArithmetic | B::ShiftRightLogical) {
        return true;
    }
    if prim == B::ShiftRightLogical && !x.aval.dtype.is_unsigned() {
        return false;
    }
    let bits = (8 * x.aval.dtype.itemsize()) as f64;
    match eval::force(y, 1 << 16) {
        Some(amounts) => !y.is_tracer() && amounts.iter().all(|&k| (0.0..bits).contains(&k)),
        None => false,
    }
}

/// `lax.select_n(which, *cases)`.
pub(super) fn select_n(interp: &mut Interp, f: JaxFn, p: &Args) -> PyResult<Value> {
    let mut arrays = Vec::with_capacity(p.args.len());
    for v in p.args {
        match operand(interp, v)? {
            Operand::Array(a) if !a.aval.dtype.is_key() => arrays.push(a),
            _ => return Ok(unknown(f)),
        }
    }
    let Some((which, cases)) = arrays.split_first() else { return Ok(unknown(f)) };
    if cases.is_empty() {
        return Err(interp.value_error("select_n() must have at least one case"));
    }
    let case_shape = cases[0].aval.shape.clone();
    if cases.iter().any(|c| c.aval.shape != case_shape) {
        let shapes = cases.iter().map(|c| c.aval.shape_tuple()).collect::<Vec<_>>().join(", ");
        return Err(interp.raise("TypeError", Code::ShapeMismatch, format!("select cases must have the same shapes, got [{shapes}].")));
    }
    if which.aval.ndim() != 0 && which.aval.shape != case_shape {
        let message = format!(
            "select `which` must be scalar or have the same shape as cases, got `which` shape {} but case shape {}.",
            which.aval.shape_tuple(),
            shape_tuple(&case_shape)
        );
        return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    }
    let case_refs: Vec<&Rc<Array>> = cases.iter().collect();
    check_same_dtypes(interp, "select", &case_refs)?;
    let wd = which.aval.dtype;
    if !(wd.is_bool() || wd.is_integer()) {
        return Err(interp.raise(
            "TypeError",
            Code::DtypeMismatch,
            format!("select `which` must be boolean or integer type, got {}.", wd.name()),
        ));
    }
    if wd.is_bool() && cases.len() > 2 {
        return Err(interp.raise("TypeError", Code::DtypeMismatch, "select with boolean `which` cannot have > 2 cases."));
    }
    let weak = cases.iter().all(|c| c.aval.weak);
    let aval = cases[0].aval.clone().weak(weak);
    if let [only] = cases {
        return Ok(Value::Array(only.clone()));
    }
    if !wd.is_bool() {
        // An integer `which` out of range is left to XLA.
        let inputs: Vec<Rc<Array>> = arrays.clone();
        return not_computed(interp, f, &inputs, aval);
    }
    let which = broadcast_to_shape(interp, which, &case_shape)?;
    apply1(interp, Prim::Select, &[which, cases[0].clone(), cases[1].clone()]).map(Value::Array)
}

/// `lax.slice`: in-bounds, increasing ranges with positive strides are computed; the rest
/// (which XLA clamps or JAX rejects with NumPy's reprs in its message) are unknown.
pub(super) fn slice(interp: &mut Interp, f: JaxFn, x: &Rc<Array>, start: &[i64], limit: &[i64], strides: &[i64]) -> PyResult<Value> {
    let nd = x.aval.ndim();
    if start.len() != nd || limit.len() != nd || strides.len() != nd {
        return Ok(unknown(f));
    }
    let mut shape = Vec::with_capacity(nd);
    for d in 0..nd {
        let (s, l, k) = (start[d], limit[d], strides[d]);
        if s < 0 || l < s || l > x.aval.shape[d] as i64 || k < 1 {
            return Ok(unknown(f));
        }
        shape.push(((l - s) / k + i64::from((l - s) % k != 0)) as usize);
    }
    let prim = Prim::Slice {
        start: start.iter().map(|&s| s as usize).collect(),
        limit: limit.iter().map(|&l| l as usize).collect(),
        strides: strides.iter().map(|&k| k as usize).collect(),
    };
    apply1(interp, prim, std::slice::from_ref(x)).map(Value::Array)
}

/// `lax.concatenate(operands, dimension)`: no promotion, JAX's shape messages.
pub(super) fn lax_concatenate(interp: &mut Interp, arrays: &[Rc<Array>], dimension: i64) -> PyResult<Value> {
    let Some(first) = arrays.first() else {
        return Err(interp.value_error("concatenate requires a non-empty sequences of arrays"));
    };
    if arrays.len() == 1 {
        return Ok(Value::Array(first.clone()));
    }
    let shapes = arrays.iter().map(|a| a.aval.shape_tuple()).collect::<Vec<_>>().join(", ");
    let nd = first.aval.ndim();
    if arrays.iter().any(|a| a.aval.ndim() != nd) {
        let message = format!("Cannot concatenate arrays with different numbers of dimensions: got {shapes}.");
        return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    }
    if dimension < 0 || dimension >= nd as i64 {
        let message = format!("concatenate dimension out of bounds: dimension {dimension} for shapes {shapes}.");
        return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    }
    let ax = dimension as usize;
    let others = |a: &Rc<Array>| a.aval.shape.iter().enumerate().filter(|&(d, _)| d != ax).map(|(_, &n)| n).collect::<Vec<_>>();
    if arrays.iter().any(|a| others(a) != others(first)) {
        let message = format!("Cannot concatenate arrays with shapes that differ in dimensions other than the one being concatenated: concatenating along dimension {ax} for shapes {shapes}.");
        return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    }
    let refs: Vec<&Rc<Array>> = arrays.iter().collect();
    check_same_dtypes(interp, "concatenate", &refs)?;
    let mut shape = first.aval.shape.to_vec();
    shape[ax] = arrays.iter().map(|a| a.aval.shape[ax]).sum();
    apply1(interp, Prim::Concatenate { dimension: ax }, arrays).map(Value::Array)
}

/// `lax.pad(operand, padding_value, padding_config)`: edge padding of either sign and
/// interior padding, with JAX's errors for an invalid configuration (the derivative of a
/// negative or interior padding is not modelled: unknown).
pub(super) fn pad(interp: &mut Interp, f: JaxFn, p: &Args) -> PyResult<Value> {
    let (Some(x), Some(value)) = (array_arg(interp, f, p, 0, "operand")?, array_arg(interp, f, p, 1, "padding_value")?) else {
        return Ok(unknown(f));
    };
    let Some(config_value @ (Value::Tuple(_) | Value::List(_))) = p.get(2, "padding_config") else { return Ok(unknown(f)) };
    let mut config = Vec::new();
    for entry in interp.iterate(config_value)? {
        let Some(triple) = (match &entry {
            Value::Tuple(_) | Value::List(_) => {
                interp.iterate(&entry)?.iter().map(crate::interp::ops::as_int).collect::<Option<Vec<i64>>>()
            }
            _ => None,
        }) else {
            return Ok(unknown(f));
        };
        let [lo, hi, interior] = triple[..] else { return Ok(unknown(f)) };
        // Widths past any real shape are not modelled (and would overflow the arithmetic).
        if [lo, hi, interior].iter().any(|w| w.unsigned_abs() > 1 << 40) {
            return Ok(unknown(f));
        }
        config.push((lo, hi, interior));
    }
    let config_text = {
        let parts: Vec<String> = config.iter().map(|(l, h, i)| format!("({l}, {h}, {i})")).collect();
        if parts.len() == 1 {
            format!("({},)", parts[0])
        } else {
            format!("({})", parts.join(", "))
        }
    };
    if value.aval.ndim() != 0 {
        return Err(interp.value_error(format!("padding_value must be a scalar; got np.shape(padding_value)={}", value.aval.shape_tuple())));
    }
    if config.len() != x.aval.ndim() {
        return Err(interp.value_error(format!(
            "length of padding_config must equal the number of axes of operand, got padding_config {config_text} for operand shape {}",
            x.aval.shape_tuple()
        )));
    }
    if config.iter().any(|c| c.2 < 0) {
        return Err(interp.value_error(format!("interior padding in padding_config must be nonnegative, got padding_config {config_text}")));
    }
    let shape: Vec<i64> = config
        .iter()
        .zip(x.aval.shape.iter())
        .map(|(&(lo, hi, interior), &n)| lo + hi + if n == 0 { 0 } else { (n as i64 - 1) * (interior + 1) + 1 })
        .collect();
    if shape.iter().any(|&d| d < 0) {
        return Err(interp.value_error(format!(
            "Dimension size after padding is not at least 0, got result shape {}, for padding_config {config_text} and operand shape {}",
            int_tuple_text(&shape),
            x.aval.shape_tuple()
        )));
    }
    if x.aval.dtype != value.aval.dtype {
        let message =
            format!("pad operand and padding_value must be same dtype: got {} and {}.", x.aval.dtype.name(), value.aval.dtype.name());
        return Err(interp.raise("TypeError", Code::DtypeMismatch, message));
    }
    apply1(interp, Prim::Pad { config }, &[x, value]).map(Value::Array)
}

/// `lax.reduce_sum(operand, axes)` and the other monoid reductions.
pub(super) fn lax_reduce(interp: &mut Interp, f: JaxFn, x: &Rc<Array>, axes: &[i64]) -> PyResult<Value> {
    use JaxFn as F;
    let (op, name) = match f {
        F::LaxReduceSum => (ReduceOp::Sum, "reduce_sum"),
        F::LaxReduceProd => (ReduceOp::Prod, "reduce_prod"),
        F::LaxReduceMax => (ReduceOp::Max, "reduce_max"),
        F::LaxReduceMin => (ReduceOp::Min, "reduce_min"),
        F::LaxReduceAnd => (ReduceOp::And, "reduce_and"),
        _ => (ReduceOp::Or, "reduce_or"),
    };
    let dtype = x.aval.dtype;
    if matches!(op, ReduceOp::And | ReduceOp::Or) && !(dtype.is_bool() || dtype.is_integer()) {
        let message = format!("logical reduction requires operand dtype bool or int, got {}.", dtype.name());
        return Err(interp.raise("TypeError", Code::DtypeMismatch, message));
    }
    let mut unique = axes.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let nd = x.aval.ndim() as i64;
    let logical = matches!(op, ReduceOp::And | ReduceOp::Or);
    if logical && (unique.len() != axes.len() || axes.iter().any(|&a| a < 0 || a >= nd)) {
        // The logical reductions' shape rule is `np.delete(shape, axes)`: its IndexError, or
        // no error and one from XLA's verifier later; neither is modelled.
        return Ok(unknown(f));
    }
    if unique.len() != axes.len() {
        return Err(interp.value_error(format!("duplicate value in 'axes' of reduction: {}", int_tuple_text(axes))));
    }
    if axes.iter().any(|&a| a < 0 || a >= nd) {
        let message = format!("reduction axes {} contains out-of-bounds indices for {}.", int_tuple_text(axes), x.aval.long());
        return Err(interp.value_error(message));
    }
    if matches!(op, ReduceOp::Sum | ReduceOp::Prod) && !(dtype.is_integer() || dtype.is_inexact()) {
        let message = format!("{name} does not accept dtype {}. Accepted dtypes are subtypes of number.", dtype.name());
        return Err(interp.raise("TypeError", Code::DtypeMismatch, message));
    }
    let axes: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
    let out: Vec<usize> = (0..x.aval.ndim()).filter(|d| !axes.contains(d)).map(|d| x.aval.shape[d]).collect();
    if matches!(op, ReduceOp::And | ReduceOp::Or) && dtype.is_integer() {
        // Bitwise reductions of integers: the Reduce kernel's `and`/`or` are logical.
        return not_computed(interp, f, std::slice::from_ref(x), x.aval.with_shape(&out));
    }
    apply1(interp, Prim::Reduce { op, axes }, std::slice::from_ref(x)).map(Value::Array)
}

/// `lax.sort` of one operand or of a sequence, and `lax.sort_key_val`: the operands in the
/// lexicographic order of the first `num_keys` of them. The sort primitive here orders its
/// second operand by the first stably, so the order of several keys is that of successive
/// stable sorts, by the last key first. An unstable sort of more than 16 elements orders the
/// ties of the keys as XLA's algorithm happens to: the other operands are then not computed.
pub(super) fn sort(
    interp: &mut Interp,
    f: JaxFn,
    operands: &[Rc<Array>],
    num_keys: usize,
    dimension: i64,
    stable: bool,
) -> PyResult<Vec<Value>> {
    let first = &operands[0];
    let ax = normalize_axis(interp, dimension, first.aval.ndim())?;
    if operands.iter().any(|o| o.aval.shape != first.aval.shape) {
        let shapes = operands.iter().map(|o| o.aval.shape_tuple()).collect::<Vec<_>>().join(" ");
        return Err(interp.raise("TypeError", Code::ShapeMismatch, format!("Arguments to sort must have equal shapes, got: {shapes}")));
    }
    let prim = Prim::Sort { dimension: ax, num_keys: 1 };
    let mut current: Vec<Rc<Array>> = operands.to_vec();
    for k in (0..num_keys).rev() {
        let key = current[k].clone();
        current = current
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let inputs = if i == k { vec![key.clone()] } else { vec![key.clone(), o.clone()] };
                apply1(interp, prim.clone(), &inputs)
            })
            .collect::<PyResult<_>>()?;
    }
    if !stable && first.aval.shape[ax] > 16 {
        for (o, original) in current.iter_mut().zip(operands).skip(num_keys) {
            let mut inputs = operands[..num_keys].to_vec();
            inputs.push(original.clone());
            *o = apply1(interp, Prim::opaque(f.name(), original.aval.clone()), &inputs)?;
        }
    }
    Ok(current.into_iter().map(Value::Array).collect())
}
