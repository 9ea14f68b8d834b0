//! The products of `jax.numpy` and `lax`: `matmul` and `@`, `dot`, `inner`, `tensordot`,
//! `einsum` and `lax.dot_general`, each binding `dot_general` with the dimension numbers,
//! squeezes, reductions and transposes JAX's own implementation binds
//! (jax/_src/numpy/tensor_contractions.py and einsum.py), so that batched products get the
//! jaxpr, the values (the `dot_general` kernel, one GEMM per batch element) and the
//! derivatives (its JVP and transpose rules) JAX gives them (docs/evaluator.md).

use super::*;

/// `dot_general`'s dimension numbers: `((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`.
pub(super) struct DotNumbers {
    pub lhs_contract: Vec<usize>,
    pub rhs_contract: Vec<usize>,
    pub lhs_batch: Vec<usize>,
    pub rhs_batch: Vec<usize>,
}

/// Binds `dot_general(lhs, rhs)` with the result dtype `dtype` (JAX's
/// `preferred_element_type`). Its shape is the batch dimensions, then the free dimensions of
/// `lhs`, then those of `rhs`. JAX hands operands of another dtype to the primitive as they
/// are; here they are converted to `dtype` first, which gives the same values (XLA converts
/// them too), so that the kernels and the derivative rules see one dtype. The numbers must
/// be valid for the operands (the callers check them).
fn bind_dot(interp: &mut Interp, lhs: &Rc<Array>, rhs: &Rc<Array>, d: DotNumbers, dtype: DType) -> PyResult<Rc<Array>> {
    let same_dtype =
        |interp: &mut Interp, x: &Rc<Array>| if x.aval.dtype == dtype { Ok(x.clone()) } else { convert(interp, x, dtype, false) };
    let a = same_dtype(interp, lhs)?;
    let b = same_dtype(interp, rhs)?;
    let prim =
        Prim::DotGeneral { lhs_contract: d.lhs_contract, rhs_contract: d.rhs_contract, lhs_batch: d.lhs_batch, rhs_batch: d.rhs_batch };
    apply1(interp, prim, &[a, b])
}

/// `dot_general`'s TypeError for dimensions of different sizes (`what`: "contracting
/// dimensions", or the batch dimensions).
fn shape_mismatch(interp: &mut Interp, what: &str, l: &[usize], r: &[usize]) -> Flow {
    let message = format!("dot_general requires {what} to have the same shape, got {} and {}.", shape_tuple(l), shape_tuple(r));
    interp.raise("TypeError", Code::ShapeMismatch, message)
}

/// `lax.squeeze(x, dims)`; nothing is bound when `dims` is empty.
pub(super) fn squeeze(interp: &mut Interp, x: &Rc<Array>, dims: &[usize]) -> PyResult<Rc<Array>> {
    if dims.is_empty() {
        return Ok(x.clone());
    }
    apply1(interp, Prim::Squeeze { dimensions: dims.to_vec() }, std::slice::from_ref(x))
}

/// `lax.transpose(x, perm)`; nothing is bound for the identity, as in JAX's jaxprs.
pub(super) fn permute(interp: &mut Interp, x: &Rc<Array>, perm: Vec<usize>) -> PyResult<Rc<Array>> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x.clone());
    }
    transpose(interp, x, Some(perm))
}

/// `lax._convert_element_type(x, dtype, weak)`, the last step of every jnp product.
fn to_result_type(interp: &mut Interp, x: Rc<Array>, dt: WeakDType) -> PyResult<Rc<Array>> {
    convert(interp, &x, dt.dtype, dt.weak)
}

/// The position of each element of `keys` in `keys` sorted (NumPy's `argsort` of distinct keys).
fn argsort(keys: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    order
}

/// `jnp.matmul(a, b)` and `a @ b` as JAX binds them: batch dimensions of size 1 on one side
/// are squeezed away and become free dimensions of the other side, equal batch dimensions
/// are `dot_general`'s batch dimensions, and one transpose puts the result in NumPy's layout.
pub(super) fn matmul(interp: &mut Interp, l: &Rc<Array>, r: &Rc<Array>, name: &str) -> PyResult<Rc<Array>> {
    let (ls, rs) = (l.aval.shape.clone(), r.aval.shape.clone());
    for (i, s) in [&ls, &rs].iter().enumerate() {
        if s.is_empty() {
            return Err(interp.raise(
                "ValueError",
                Code::ShapeMismatch,
                format!("{name} input operand {i} must have ndim at least 1, but it has ndim 0"),
            ));
        }
    }
    let dt = promote(&[l.aval.weak_dtype(), r.aval.weak_dtype()], cfg(interp));
    let (a_is_mat, b_is_mat) = (ls.len() > 1, rs.len() > 1);
    let a_batch: &[usize] = if a_is_mat { &ls[..ls.len() - 2] } else { &[] };
    let b_batch: &[usize] = if b_is_mat { &rs[..rs.len() - 2] } else { &[] };
    let num_batch = a_batch.len().max(b_batch.len());
    let padded = |batch: &[usize], i: usize| (i + batch.len()).checked_sub(num_batch).map(|j| batch[j]);
    let (mut a_squeeze, mut b_squeeze, mut both_squeeze) = (Vec::new(), Vec::new(), Vec::new());
    let (mut a_dot_batch, mut b_dot_batch) = (Vec::new(), Vec::new());
    // Where each kind of dimension goes in the result, in the order dot_general emits them.
    let (mut idx_batch, mut idx_a_other, mut idx_b_other) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..num_batch {
        match (padded(a_batch, i), padded(b_batch, i)) {
            (None, _) => idx_b_other.push(i),
            (_, None) => idx_a_other.push(i),
            (Some(1), Some(1)) => {
                a_squeeze.push(idx_batch.len() + idx_a_other.len() + a_squeeze.len());
                b_squeeze.push(idx_batch.len() + idx_b_other.len() + b_squeeze.len());
                both_squeeze.push(i);
            }
            (Some(1), Some(_)) => {
                idx_b_other.push(i);
                a_squeeze.push(idx_batch.len() + idx_a_other.len() + a_squeeze.len());
            }
            (Some(_), Some(1)) => {
                idx_a_other.push(i);
                b_squeeze.push(idx_batch.len() + idx_b_other.len() + b_squeeze.len());
            }
            (Some(x), Some(y)) if x == y => {
                a_dot_batch.push(idx_batch.len() + idx_a_other.len());
                b_dot_batch.push(idx_batch.len() + idx_b_other.len());
                idx_batch.push(i);
            }
            _ => {
                let la = Aval { shape: ls.clone(), dtype: l.aval.dtype, weak: false };
                let ra = Aval { shape: rs.clone(), dtype: r.aval.dtype, weak: false };
                let message = format!("Incompatible types for matmul arguments: {} and {}", la.long(), ra.long());
                return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
            }
        }
    }
    let lk = ls[ls.len() - 1];
    let rk = if b_is_mat { rs[rs.len() - 2] } else { rs[0] };
    if lk != rk {
        return Err(shape_mismatch(interp, "contracting dimensions", &[lk], &[rk]));
    }
    if a_is_mat {
        idx_a_other.push(num_batch);
    }
    if b_is_mat {
        idx_b_other.push(num_batch + usize::from(a_is_mat));
    }
    let order: Vec<usize> = idx_batch.iter().chain(&idx_a_other).chain(&idx_b_other).copied().collect();
    let a = squeeze(interp, l, &a_squeeze)?;
    let b = squeeze(interp, r, &b_squeeze)?;
    let numbers = DotNumbers {
        lhs_contract: vec![a.aval.ndim() - 1],
        rhs_contract: vec![b.aval.ndim() - 1 - usize::from(b_is_mat)],
        lhs_batch: a_dot_batch,
        rhs_batch: b_dot_batch,
    };
    let out = bind_dot(interp, &a, &b, numbers, dt.dtype)?;
    let mut result = permute(interp, &out, argsort(&order))?;
    if !both_squeeze.is_empty() {
        // `lax.expand_dims`: a broadcast_in_dim that puts the size-1 axes back.
        let mut shape = result.aval.shape.to_vec();
        for &i in &both_squeeze {
            shape.insert(i, 1);
        }
        let dims: Vec<usize> = (0..shape.len()).filter(|i| !both_squeeze.contains(i)).collect();
        let prim = Prim::BroadcastInDim { shape: shape.clone(), broadcast_dimensions: dims };
        result = apply1(interp, prim, std::slice::from_ref(&result))?;
    }
    to_result_type(interp, result, dt)
}

/// `jnp.dot(a, b)` for operands of rank 1 or more: the last axis of `a` with the last (`b`
/// a vector) or second-to-last axis of `b`, no batch dimensions.
pub(super) fn dot(interp: &mut Interp, a: &Rc<Array>, b: &Rc<Array>) -> PyResult<Rc<Array>> {
    let (na, nb) = (a.aval.ndim(), b.aval.ndim());
    let rc = if nb == 1 { 0 } else { nb - 2 };
    contract(interp, a, b, vec![na - 1], vec![rc])
}

/// `jnp.tensordot(a, b, axes)` and `jnp.inner` (`axes=(-1, -1)`): `dot_general` over the
/// given axes of each operand, with JAX's error when their sizes differ.
pub(super) fn contract(interp: &mut Interp, a: &Rc<Array>, b: &Rc<Array>, la: Vec<usize>, lb: Vec<usize>) -> PyResult<Rc<Array>> {
    let ga: Vec<usize> = la.iter().filter_map(|&i| a.aval.shape.get(i).copied()).collect();
    let gb: Vec<usize> = lb.iter().filter_map(|&j| b.aval.shape.get(j).copied()).collect();
    if ga != gb || ga.len() != la.len() || gb.len() != lb.len() {
        return Err(shape_mismatch(interp, "contracting dimensions", &ga, &gb));
    }
    let dt = promote(&[a.aval.weak_dtype(), b.aval.weak_dtype()], cfg(interp));
    let numbers = DotNumbers { lhs_contract: la, rhs_contract: lb, lhs_batch: vec![], rhs_batch: vec![] };
    let out = bind_dot(interp, a, b, numbers, dt.dtype)?;
    to_result_type(interp, out, dt)
}

/// `lax.dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None)`,
/// with the checks and messages of JAX's shape and dtype rules.
pub(super) fn lax_dot_general(
    interp: &mut Interp,
    a: &Rc<Array>,
    b: &Rc<Array>,
    numbers: &Value,
    preferred: Option<DType>,
) -> PyResult<Value> {
    let Some([lc, rc, lb, rb]) = dimension_numbers(interp, numbers)? else {
        return Ok(Value::opaque("dot_general with dimension numbers not known"));
    };
    let show = |d: &[i64]| match d {
        [x] => format!("({x},)"),
        _ => format!("({})", d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let in_range = |d: &[i64], nd: usize| d.iter().all(|&x| x >= 0 && (x as usize) < nd);
    let type_error = |interp: &mut Interp, message: String| Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    let (na, nb) = (a.aval.ndim(), b.aval.ndim());
    if !in_range(&lc, na) || !in_range(&lb, na) {
        return type_error(interp, format!("dot_general requires lhs dimension numbers to be nonnegative and less than the number of axes of the lhs value, got lhs_batch of {} and lhs_contracting of {} for lhs of rank {na}", show(&lb), show(&lc)));
    }
    if !in_range(&rc, nb) || !in_range(&rb, nb) {
        return type_error(interp, format!("dot_general requires rhs dimension numbers to be nonnegative and less than the number of axes of the rhs value, got rhs_batch of {} and rhs_contracting of {} for rhs of rank {nb}", show(&rb), show(&rc)));
    }
    if lb.len() != rb.len() {
        return type_error(
            interp,
            format!(
                "dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got lhs_batch {} and rhs_batch {}.",
                show(&lb),
                show(&rb)
            ),
        );
    }
    let distinct = |d: &[i64]| d.iter().enumerate().all(|(i, x)| !d[..i].contains(x));
    for (side, what, d) in [("lhs", "batch", &lb), ("rhs", "batch", &rb), ("lhs", "contracting", &lc), ("rhs", "contracting", &rc)] {
        if !distinct(d) {
            let name = if what == "batch" { "batch" } else { "contracting" };
            return type_error(
                interp,
                format!("dot_general requires {side} {what} dimensions to be distinct, got {side}_{name} {}.", show(d)),
            );
        }
    }
    for (side, batch, contracting) in [("lhs", &lb, &lc), ("rhs", &rb, &rc)] {
        if batch.iter().any(|x| contracting.contains(x)) {
            return type_error(interp, format!("dot_general requires {side} batch dimensions to be disjoint from contracting dimensions, got {side}_batch {} and {side}_contracting {}.", show(batch), show(contracting)));
        }
    }
    let sizes = |x: &Rc<Array>, d: &[i64]| -> Vec<usize> { d.iter().map(|&i| x.aval.shape[i as usize]).collect() };
    for (what, l, r) in [("lhs batch dimensions and rhs batch dimensions", &lb, &rb), ("contracting dimensions", &lc, &rc)] {
        if sizes(a, l) != sizes(b, r) {
            return Err(shape_mismatch(interp, what, &sizes(a, l), &sizes(b, r)));
        }
    }
    let Some(dtype) = dot_result_dtype(a.aval.dtype, b.aval.dtype) else {
        let message = format!("lax.dot_general argument type error: {}, {}", a.aval.dtype.name(), b.aval.dtype.name());
        return Err(interp.type_error(message));
    };
    let dtype = preferred.unwrap_or(dtype);
    let us = |d: Vec<i64>| d.into_iter().map(|x| x as usize).collect::<Vec<_>>();
    let numbers = DotNumbers { lhs_contract: us(lc), rhs_contract: us(rc), lhs_batch: us(lb), rhs_batch: us(rb) };
    bind_dot(interp, a, b, numbers, dtype).map(Value::Array)
}

/// `((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))` read from Python sequences of
/// ints; `None` when some part is not a known integer.
fn dimension_numbers(interp: &mut Interp, v: &Value) -> PyResult<Option<[Vec<i64>; 4]>> {
    let pair = |interp: &mut Interp, v: &Value| -> PyResult<Option<[Value; 2]>> {
        let items = interp.iterate(v)?;
        Ok(match <[Value; 2]>::try_from(items) {
            Ok(p) => Some(p),
            Err(_) => None,
        })
    };
    let ints = |interp: &mut Interp, v: &Value| -> PyResult<Option<Vec<i64>>> {
        let items = interp.iterate(v)?;
        Ok(items.iter().map(crate::interp::ops::as_int).collect())
    };
    let Some([contract, batch]) = pair(interp, v)? else { return Ok(None) };
    let Some([lc, rc]) = pair(interp, &contract)? else { return Ok(None) };
    let Some([lb, rb]) = pair(interp, &batch)? else { return Ok(None) };
    let (Some(lc), Some(rc), Some(lb), Some(rb)) = (ints(interp, &lc)?, ints(interp, &rc)?, ints(interp, &lb)?, ints(interp, &rb)?) else {
        return Ok(None);
    };
    Ok(Some([lc, rc, lb, rb]))
}

/// `lax.dot_general`'s result dtype for operands of two dtypes (`_dot_general_dtype_rule`,
/// after XLA's `HigherPrecisionType`): the operand type that is complex, then has the larger
/// exponent range, mantissa, bit width and is signed; `None` for two different dtypes that
/// tie (JAX's "argument type error").
fn dot_result_dtype(l: DType, r: DType) -> Option<DType> {
    let properties = |d: DType| {
        let (max_exp, mantissa) = match d.real_dtype() {
            DType::F64 => (1024, 52),
            DType::F32 => (128, 23),
            DType::BF16 => (128, 7),
            DType::F16 => (16, 10),
            _ => (-1, -1),
        };
        (d.is_complex(), max_exp, mantissa, d.real_dtype().bits(), !d.is_unsigned())
    };
    match properties(l).cmp(&properties(r)) {
        std::cmp::Ordering::Greater => Some(l),
        std::cmp::Ordering::Less => Some(r),
        std::cmp::Ordering::Equal => (l == r).then_some(l),
    }
}

/// One operand of an einsum contraction: the array and one label per axis.
struct Labelled {
    array: Rc<Array>,
    names: Vec<char>,
}

/// `jnp.einsum(spec, *operands, preferred_element_type=None)` as jax/_src/numpy/einsum.py
/// contracts it: one operand in one step, more pairwise along opt_einsum's path
/// ([`contraction_path`]), each pair's later operand on the left (`'ij,jk->ik'` is contracted
/// as `'jk,ij->ik'`) and each step's result appended to the operands left.
pub(super) fn einsum(interp: &mut Interp, spec: &str, ops: &[Rc<Array>], preferred: Option<DType>) -> PyResult<Value> {
    let spec: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match spec.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (spec.clone(), None),
    };
    let raw_terms: Vec<&str> = lhs.split(',').collect();
    if ops.is_empty() {
        return Ok(Value::opaque("einsum"));
    }
    if raw_terms.len() != ops.len() {
        // opt_einsum's parser checks the output's letters first.
        if let Some(r) = &rhs {
            let r: Vec<char> = r.chars().filter(|&c| c != '.').collect();
            check_output_labels(interp, &r, &lhs.chars().collect::<Vec<_>>())?;
        }
        return Err(interp.value_error(format!(
            "Number of einsum subscripts, {}, must be equal to the number of operands, {}.",
            raw_terms.len(),
            ops.len()
        )));
    }
    let Some((terms, ellipsis)) = expand_ellipses(&raw_terms, ops, &spec) else {
        return Ok(Value::opaque("einsum with an ellipsis"));
    };
    let mut sizes: Vec<(char, usize)> = Vec::new();
    for (k, (t, a)) in terms.iter().zip(ops).enumerate() {
        if t.len() != a.aval.ndim() {
            return Err(interp.value_error(format!(
                "Einstein sum subscript '{}' does not contain the correct number of indices for operand {k}.",
                raw_terms[k]
            )));
        }
        for (&c, &d) in t.iter().zip(a.aval.shape.iter()) {
            match sizes.iter_mut().find(|(x, _)| *x == c) {
                Some((_, prev)) if *prev != d && *prev != 1 && d != 1 => {
                    let message = format!(
                        // JAX 0.10.2 prints the two sizes this way round.
                        "Size of label '{c}' for operand {k} ({prev}) does not match previous terms ({d})."
                    );
                    return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
                }
                Some((_, prev)) => *prev = (*prev).max(d),
                None => sizes.push((c, d)),
            }
        }
    }
    // The ellipsis' axes summed away: opt_einsum's letters for them would decide the order
    // of the contraction, which is not modelled.
    let mut modelled = true;
    let result: Vec<char> = match rhs {
        Some(r) => {
            let r = match r.split_once("...") {
                Some((before, after)) => format!("{before}{}{after}", ellipsis.iter().collect::<String>()),
                None => {
                    modelled &= ellipsis.is_empty();
                    r
                }
            };
            let r: Vec<char> = r.chars().collect();
            check_output_labels(interp, &r, &terms.concat())?;
            r
        }
        None => {
            let all: Vec<char> = terms.concat();
            let mut once: Vec<char> =
                all.iter().copied().filter(|c| !ellipsis.contains(c) && all.iter().filter(|x| *x == c).count() == 1).collect();
            once.sort_unstable();
            ellipsis.iter().copied().chain(once).collect()
        }
    };
    let dt = match preferred {
        Some(d) => WeakDType { dtype: dtypes::canonicalize(d, cfg(interp)), weak: false },
        None => promote(&ops.iter().map(|a| a.aval.weak_dtype()).collect::<Vec<_>>(), cfg(interp)),
    };
    let labelled = |k: usize| Labelled { array: ops[k].clone(), names: terms[k].clone() };
    let out = match ops.len() {
        _ if !modelled => None,
        1 => {
            let contracted: Vec<char> = sorted_unique(terms[0].iter().filter(|c| !result.contains(c)));
            one_operand(interp, labelled(0), &contracted, &result, dt.dtype)?
        }
        n => {
            let size = |c: char| sizes.iter().find(|(k, _)| *k == c).map_or(1, |e| e.1);
            match contraction_path(&terms, &result, &size) {
                Some(path) => contract_pairwise(interp, (0..n).map(labelled).collect(), &path, &result, dt.dtype)?,
                None => None,
            }
        }
    };
    match out {
        Some(out) => to_result_type(interp, out, dt).map(Value::Array),
        None => {
            // An opaque equation with JAX's output aval, so shapes are still followed.
            let shape: Vec<usize> = result.iter().map(|c| sizes.iter().find(|(k, _)| k == c).map_or(1, |e| e.1)).collect();
            apply1(interp, Prim::opaque("einsum", Aval::new(&shape, dt.dtype).weak(dt.weak)), ops).map(Value::Array)
        }
    }
}

/// The pairs of operands `optimize='auto'` contracts, as `contract_path` hands them to JAX:
/// positions in the list of operands left (the higher first), each step's result appended
/// at its end. For up to four operands this is opt_einsum 3.4's `optimal` search, JAX's
/// choice: a depth-first walk over the pairs in ascending order that keeps the first path
/// of least flops (a pair costs the product of its labels' sizes, doubled when it sums a
/// label away), its pair results cached by the two operands' label sets alone as
/// opt_einsum caches them. opt_einsum picks `branch_all`/`branch_2` for five to eight
/// operands, not modelled: the same search stands in for it (the order only changes the
/// rounding). `None` beyond eight operands, where the search grows too long.
fn contraction_path(terms: &[Vec<char>], result: &[char], size: &dyn Fn(char) -> usize) -> Option<Vec<(usize, usize)>> {
    if terms.len() > 8 {
        return None;
    }
    let labels: Vec<char> = sorted_unique(terms.iter().flatten());
    if labels.len() > 64 {
        return None;
    }
    let mask = |names: &[char]| names.iter().filter_map(|c| labels.iter().position(|l| l == c)).fold(0u64, |m, i| m | 1 << i);
    let mut search = PathSearch {
        label_sizes: labels.iter().map(|&c| size(c) as u128).collect(),
        output: mask(result),
        best_flops: u128::MAX,
        best: Vec::new(),
        cache: Vec::new(),
    };
    let mut inputs: Vec<u64> = terms.iter().map(|t| mask(t)).collect();
    let remaining: Vec<usize> = (0..terms.len()).collect();
    search.iterate(&mut Vec::new(), &mut inputs, &remaining, 0);
    // opt_einsum's `ssa_to_linear`: single-assignment ids to positions in the list left.
    let mut ids: Vec<usize> = (0..terms.len()).collect();
    let mut linear = Vec::with_capacity(search.best.len());
    for (step, &(i, j)) in search.best.iter().enumerate() {
        let (pi, pj) = (ids.iter().position(|&x| x == i)?, ids.iter().position(|&x| x == j)?);
        let (low, high) = (pi.min(pj), pi.max(pj));
        ids.remove(high);
        ids.remove(low);
        ids.push(terms.len() + step);
        linear.push((high, low));
    }
    Some(linear)
}

/// The state of opt_einsum's `optimal` search over label sets held as bit masks.
struct PathSearch {
    label_sizes: Vec<u128>,
    output: u64,
    best_flops: u128,
    /// The best path found so far, in single-assignment ids (a step's result gets the next id).
    best: Vec<(usize, usize)>,
    /// `result_cache`: a pair's labels and flops keyed by the two operands' labels.
    cache: Vec<((u64, u64), (u64, u128))>,
}

impl PathSearch {
    fn size(&self, labels: u64) -> u128 {
        (0..self.label_sizes.len()).filter(|i| labels >> i & 1 == 1).fold(1u128, |p, i| p.saturating_mul(self.label_sizes[i]))
    }

    fn iterate(&mut self, path: &mut Vec<(usize, usize)>, inputs: &mut Vec<u64>, remaining: &[usize], flops: u128) {
        if remaining.len() == 1 {
            self.best_flops = flops;
            self.best = path.clone();
            return;
        }
        for a in 0..remaining.len() {
            for b in a + 1..remaining.len() {
                let (i, j) = (remaining[a], remaining[b]);
                let key = (inputs[i], inputs[j]);
                let (k12, pair_flops) = match self.cache.iter().find(|(k, _)| *k == key) {
                    Some(&(_, found)) => found,
                    None => {
                        let keep = remaining.iter().filter(|&&r| r != i && r != j).fold(self.output, |m, &r| m | inputs[r]);
                        let (either, shared) = (key.0 | key.1, key.0 & key.1);
                        let inner = u128::from(shared & !keep != 0);
                        let found = (either & keep, self.size(either).saturating_mul(1 + inner));
                        self.cache.push((key, found));
                        found
                    }
                };
                let new_flops = flops.saturating_add(pair_flops);
                if new_flops >= self.best_flops {
                    continue;
                }
                let mut next: Vec<usize> = remaining.iter().copied().filter(|&r| r != i && r != j).collect();
                next.push(inputs.len());
                path.push((i, j));
                inputs.push(k12);
                self.iterate(path, inputs, &next, new_flops);
                inputs.pop();
                path.pop();
            }
        }
    }
}

/// `_einsum`'s loop over a path of pairs: each step pops its two operands (the higher
/// position first, which is the left one), contracts them to the labels the rest still
/// needs (the final result at the last step; otherwise in the order they first appear in
/// the two operands' labels, as `contract_path` orders them) and appends the result.
fn contract_pairwise(
    interp: &mut Interp,
    mut operands: Vec<Labelled>,
    path: &[(usize, usize)],
    result: &[char],
    dtype: DType,
) -> PyResult<Option<Rc<Array>>> {
    for (step, &(high, low)) in path.iter().enumerate() {
        if high >= operands.len() || low >= high {
            return Ok(None);
        }
        let lhs = operands.remove(high);
        let rhs = operands.remove(low);
        let step_result: Vec<char> = if step + 1 == path.len() {
            result.to_vec()
        } else {
            let needed = |c: &char| result.contains(c) || operands.iter().any(|o| o.names.contains(c));
            let mut names: Vec<char> = Vec::new();
            for &c in lhs.names.iter().chain(&rhs.names) {
                if needed(&c) && !names.contains(&c) {
                    names.push(c);
                }
            }
            names
        };
        let contracted = sorted_unique(lhs.names.iter().chain(&rhs.names).filter(|c| !step_result.contains(c)));
        let Some(array) = two_operands(interp, lhs, rhs, &contracted, &step_result, dtype)? else {
            return Ok(None);
        };
        operands.push(Labelled { array, names: step_result });
    }
    Ok(operands.pop().filter(|_| operands.is_empty()).map(|x| x.array))
}

/// opt_einsum's check of the output's labels, in its order: each appears once, and in an input.
fn check_output_labels(interp: &mut Interp, output: &[char], inputs: &[char]) -> PyResult<()> {
    for c in output {
        if output.iter().filter(|x| *x == c).count() != 1 {
            return Err(interp.value_error(format!("Output character '{c}' appeared more than once in the output.")));
        }
        if !inputs.contains(c) {
            return Err(interp.value_error(format!("Output character '{c}' did not appear in the input")));
        }
    }
    Ok(())
}

fn sorted_unique<'a>(chars: impl Iterator<Item = &'a char>) -> Vec<char> {
    let mut v: Vec<char> = chars.copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Each term with its `...` replaced by letters no term uses, right-aligned as NumPy
/// broadcasts (an operand with fewer ellipsis axes gets the last letters), and the letters
/// of the longest ellipsis. `None` for a malformed ellipsis or too few free letters.
fn expand_ellipses(terms: &[&str], ops: &[Rc<Array>], spec: &str) -> Option<(Vec<Vec<char>>, Vec<char>)> {
    let used: Vec<char> = spec.chars().collect();
    let mut widths = Vec::with_capacity(terms.len());
    for (t, a) in terms.iter().zip(ops) {
        widths.push(match t.split_once("...") {
            Some((before, after)) => {
                if after.contains('.') || before.contains('.') {
                    return None;
                }
                Some(a.aval.ndim().checked_sub(before.chars().count() + after.chars().count())?)
            }
            None if t.contains('.') => return None,
            None => None,
        });
    }
    let longest = widths.iter().flatten().copied().max().unwrap_or(0);
    let letters: Vec<char> = ('A'..='Z').chain('a'..='z').filter(|c| !used.contains(c)).take(longest).collect();
    if letters.len() < longest {
        return None;
    }
    let terms = terms
        .iter()
        .zip(&widths)
        .map(|(t, w)| match (t.split_once("..."), w) {
            (Some((before, after)), Some(w)) => before.chars().chain(letters[longest - w..].iter().copied()).chain(after.chars()).collect(),
            _ => t.chars().collect(),
        })
        .collect();
    Some((terms, letters))
}

/// `_einsum`'s one-operand step: labels summed away, repeated labels reduced to their
/// diagonal, then a transpose to the result's order.
fn one_operand(interp: &mut Interp, x: Labelled, contracted: &[char], result: &[char], dtype: DType) -> PyResult<Option<Rc<Array>>> {
    let counts = label_counts(&x.names);
    let uniques: Vec<char> = contracted.iter().copied().filter(|c| count(&counts, *c) == 1).collect();
    let x = sum_uniques(interp, x, &uniques, dtype)?;
    let x = sum_repeats(interp, x, &counts, result, dtype)?;
    to_result_order(interp, x, result)
}

/// `_einsum`'s two-operand step, `lhs` being the second operand of the einsum.
fn two_operands(
    interp: &mut Interp,
    lhs: Labelled,
    rhs: Labelled,
    contracted: &[char],
    result: &[char],
    dtype: DType,
) -> PyResult<Option<Rc<Array>>> {
    // Axes of size 1 whose label has a larger size on the other side are squeezed away.
    let lhs = filter_singleton_dims(interp, lhs, &rhs)?;
    let rhs = filter_singleton_dims(interp, rhs, &lhs)?;
    let (lhs_counts, rhs_counts) = (label_counts(&lhs.names), label_counts(&rhs.names));
    let lhs_uniques: Vec<char> = contracted.iter().copied().filter(|&c| count(&lhs_counts, c) == 1 && count(&rhs_counts, c) == 0).collect();
    let lhs = sum_uniques(interp, lhs, &lhs_uniques, dtype)?;
    let rhs_uniques: Vec<char> = contracted.iter().copied().filter(|&c| count(&rhs_counts, c) == 1 && count(&lhs_counts, c) == 0).collect();
    let rhs = sum_uniques(interp, rhs, &rhs_uniques, dtype)?;
    let keep: Vec<char> = result.iter().chain(&rhs.names).copied().collect();
    let lhs = sum_repeats(interp, lhs, &lhs_counts, &keep, dtype)?;
    let keep: Vec<char> = result.iter().chain(&lhs.names).copied().collect();
    let rhs = sum_repeats(interp, rhs, &rhs_counts, &keep, dtype)?;

    let in_both = |c: &char| lhs.names.contains(c) && rhs.names.contains(c);
    let contracted: Vec<char> = contracted.iter().copied().filter(|c| lhs.names.contains(c) || rhs.names.contains(c)).collect();
    if !contracted.iter().all(in_both) {
        return Ok(None);
    }
    let batch: Vec<char> = result.iter().copied().filter(in_both).collect();
    let position = |names: &[char], c: char| names.iter().position(|&n| n == c).unwrap_or(0);
    let lhs_batch: Vec<usize> = batch.iter().map(|&c| position(&lhs.names, c)).collect();
    let rhs_batch: Vec<usize> = batch.iter().map(|&c| position(&rhs.names, c)).collect();
    let lhs_contract: Vec<usize> = contracted.iter().map(|&c| position(&lhs.names, c)).collect();
    let rhs_contract: Vec<usize> = contracted.iter().map(|&c| position(&rhs.names, c)).collect();
    let deleted = |c: &char| batch.contains(c) || contracted.contains(c);
    let lhs_rest: Vec<char> = lhs.names.iter().copied().filter(|c| !deleted(c)).collect();
    let rhs_rest: Vec<char> = rhs.names.iter().copied().filter(|c| !deleted(c)).collect();
    // Both orders are tried, (rhs, lhs) first, for one that needs no transpose.
    let swapped: Vec<char> = batch.iter().chain(&rhs_rest).chain(&lhs_rest).copied().collect();
    let (names, out) = if swapped == result {
        let numbers = DotNumbers { lhs_contract: rhs_contract, rhs_contract: lhs_contract, lhs_batch: rhs_batch, rhs_batch: lhs_batch };
        (swapped, bind_dot(interp, &rhs.array, &lhs.array, numbers, dtype)?)
    } else {
        let names: Vec<char> = batch.iter().chain(&lhs_rest).chain(&rhs_rest).copied().collect();
        let numbers = DotNumbers { lhs_contract, rhs_contract, lhs_batch, rhs_batch };
        (names, bind_dot(interp, &lhs.array, &rhs.array, numbers, dtype)?)
    };
    to_result_order(interp, Labelled { array: out, names }, result)
}

/// Each label with its number of axes, in the order the labels first appear
/// (`collections.Counter`).
fn label_counts(names: &[char]) -> Vec<(char, usize)> {
    let mut counts: Vec<(char, usize)> = Vec::new();
    for &c in names {
        match counts.iter_mut().find(|(x, _)| *x == c) {
            Some(e) => e.1 += 1,
            None => counts.push((c, 1)),
        }
    }
    counts
}

fn count(counts: &[(char, usize)], c: char) -> usize {
    counts.iter().find(|(x, _)| *x == c).map_or(0, |e| e.1)
}

/// `filter_singleton_dims`: axes of size 1 whose label the other operand has with a size
/// other than 1 are squeezed away (they broadcast).
fn filter_singleton_dims(interp: &mut Interp, x: Labelled, other: &Labelled) -> PyResult<Labelled> {
    let shape = &x.array.aval.shape;
    let keep: Vec<bool> = x
        .names
        .iter()
        .enumerate()
        .map(|(i, c)| match other.names.iter().position(|n| n == c) {
            Some(j) => shape[i] != 1 || other.array.aval.shape[j] == 1,
            None => true,
        })
        .collect();
    let dropped: Vec<usize> = (0..keep.len()).filter(|&i| !keep[i]).collect();
    let array = squeeze(interp, &x.array, &dropped)?;
    let names = x.names.iter().zip(&keep).filter(|(_, k)| **k).map(|(c, _)| *c).collect();
    Ok(Labelled { array, names })
}

/// `_einsum`'s `sum`: `lax.reduce` with `add` (`or` for bool) over `axes`, after converting
/// to the result dtype.
fn sum_axes(interp: &mut Interp, x: &Rc<Array>, axes: &[usize], dtype: DType) -> PyResult<Rc<Array>> {
    let x = if x.aval.dtype == dtype { x.clone() } else { convert(interp, x, dtype, false)? };
    let op = if dtype.is_bool() { ReduceOp::Or } else { ReduceOp::Sum };
    apply1(interp, Prim::Reduce { op, axes: axes.to_vec() }, std::slice::from_ref(&x))
}

/// `sum_uniques`: labels only this operand has and the result lacks, summed in one reduction.
fn sum_uniques(interp: &mut Interp, x: Labelled, uniques: &[char], dtype: DType) -> PyResult<Labelled> {
    if uniques.is_empty() {
        return Ok(x);
    }
    let axes: Vec<usize> = uniques.iter().filter_map(|c| x.names.iter().position(|n| n == c)).collect();
    let array = sum_axes(interp, &x.array, &axes, dtype)?;
    let names = x.names.iter().copied().filter(|c| !uniques.contains(c)).collect();
    Ok(Labelled { array, names })
}

/// `sum_repeats`: a label repeated on one operand keeps only its diagonal (a select against
/// `lax._delta`'s identity mask), summed away unless `keep` has the label, where one axis stays.
fn sum_repeats(interp: &mut Interp, mut x: Labelled, counts: &[(char, usize)], keep: &[char], dtype: DType) -> PyResult<Labelled> {
    for &(name, n) in counts {
        if n < 2 {
            continue;
        }
        let axes: Vec<usize> = (0..x.names.len()).filter(|&i| x.names[i] == name).collect();
        let shape = x.array.aval.shape.to_vec();
        let eye = delta(interp, &shape, &axes)?;
        let zeros = full(interp, &shape, 0.0, x.array.aval.dtype)?;
        let selected = apply1(interp, Prim::Select, &[eye, zeros, x.array.clone()])?;
        let (summed, names): (Vec<usize>, Vec<char>) = if keep.contains(&name) {
            let last = axes[axes.len() - 1];
            let summed = axes[..axes.len() - 1].to_vec();
            (summed.clone(), x.names.iter().enumerate().filter(|(i, _)| !summed.contains(i) || *i == last).map(|(_, c)| *c).collect())
        } else {
            (axes.clone(), x.names.iter().copied().filter(|&c| c != name).collect())
        };
        let array = sum_axes(interp, &selected, &summed, dtype)?;
        x = Labelled { array, names };
    }
    Ok(x)
}

/// `lax._delta(bool, shape, axes)`: true where the indices along `axes` are all equal.
fn delta(interp: &mut Interp, shape: &[usize], axes: &[usize]) -> PyResult<Rc<Array>> {
    let base: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
    let mut iotas = Vec::with_capacity(base.len());
    for dimension in 0..base.len() {
        let prim = Prim::Iota { dtype: DType::U32, shape: base.clone(), dimension };
        iotas.push(apply1(interp, prim, &[])?);
    }
    let mut eye: Option<Rc<Array>> = None;
    for pair in iotas.windows(2) {
        let eq = apply1(interp, Prim::Compare(CmpPrim::Eq), pair)?;
        eye = Some(match eye {
            Some(acc) => apply1(interp, Prim::Binary(BinaryPrim::And), &[acc, eq])?,
            None => eq,
        });
    }
    let Some(eye) = eye else {
        return full(interp, shape, 1.0, DType::Bool);
    };
    if base.as_slice() == shape {
        return Ok(eye);
    }
    let prim = Prim::BroadcastInDim { shape: shape.to_vec(), broadcast_dimensions: axes.to_vec() };
    apply1(interp, prim, &[eye])
}

/// The transpose from an operand's labels to the result's; `None` if they are not a
/// permutation of the result's (not expected: JAX asserts it).
fn to_result_order(interp: &mut Interp, x: Labelled, result: &[char]) -> PyResult<Option<Rc<Array>>> {
    let perm: Option<Vec<usize>> = result.iter().map(|c| x.names.iter().position(|n| n == c)).collect();
    match perm {
        Some(perm) if perm.len() == x.array.aval.ndim() && x.names.len() == perm.len() => permute(interp, &x.array, perm).map(Some),
        _ => Ok(None),
    }
}
