//! `lax.conv_general_dilated`, `lax.conv` and `lax.conv_with_general_padding`: what JAX's
//! Python wrapper does before binding `conv_general_dilated` (jax/_src/lax/convolution.py):
//! the dimension numbers from `None`, three spec strings or `ConvDimensionNumbers`, the
//! padding from 'SAME'/'SAME_LOWER'/'VALID' or `(low, high)` pairs, each with JAX's error.
//! The primitive's own rules are its block, `prims/conv.rs`.

use super::*;
use crate::jax::prims::conv::{Conv, ConvDimensionNumbers};
use crate::jax::prims::{self, Block};

pub(super) fn call(interp: &mut Interp, f: JaxFn, p: &Args) -> PyResult<Value> {
    let Some(lhs) = array_arg(interp, f, p, 0, "lhs")? else { return Ok(unknown(f)) };
    let Some(rhs) = array_arg(interp, f, p, 1, "rhs")? else { return Ok(unknown(f)) };
    let Some(window_strides) = ints_arg(interp, p, 2, "window_strides")? else { return Ok(unknown(f)) };
    let Some(padding) = p.get(3, "padding").cloned() else {
        return Err(interp.type_error(format!("{}() missing 1 required positional argument: 'padding'", f.name())));
    };
    // The positions of the optional parameters differ between the three wrappers.
    let (lhs_dilation, rhs_dilation, numbers, feature_groups, batch_groups, preferred) = match f {
        JaxFn::LaxConv => (None, None, None, None, None, p.get(5, "preferred_element_type")),
        JaxFn::LaxConvWithGeneralPadding => {
            (p.get(4, "lhs_dilation"), p.get(5, "rhs_dilation"), None, None, None, p.get(7, "preferred_element_type"))
        }
        _ => (
            p.get(4, "lhs_dilation"),
            p.get(5, "rhs_dilation"),
            p.get(6, "dimension_numbers"),
            p.get(7, "feature_group_count"),
            p.get(8, "batch_group_count"),
            p.get(10, "preferred_element_type"),
        ),
    };
    let preferred = match preferred {
        Some(v) => match dtype_arg(interp, Some(v))? {
            Some(d) => Some(d),
            None if matches!(v, Value::None) => None,
            None => return Ok(unknown(f)),
        },
        None => None,
    };
    let count = |v: Option<&Value>| match v {
        None | Some(Value::None) => Some(1),
        Some(v) => crate::interp::ops::as_int(v),
    };
    let (Some(feature_group_count), Some(batch_group_count)) = (count(feature_groups), count(batch_groups)) else {
        return Ok(unknown(f));
    };
    let Some(dimension_numbers) = dimension_numbers(interp, &lhs.aval, &rhs.aval, numbers)? else { return Ok(unknown(f)) };
    // Operands of rank under 2 (JAX fails in NumPy broadcasting) and specs that are not
    // permutations of the operands' axes (JAX's own errors) are not modelled: unknown.
    let rank = lhs.aval.ndim();
    let permutation = |spec: &[usize]| spec.len() == rank && (0..rank).all(|d| spec.contains(&d));
    if rank < 2
        || rhs.aval.ndim() != rank
        || ![&dimension_numbers.lhs_spec, &dimension_numbers.rhs_spec, &dimension_numbers.out_spec].iter().all(|s| permutation(s))
    {
        return Ok(unknown(f));
    }
    let spatial = lhs.aval.ndim().saturating_sub(2);
    let dilation = |interp: &mut Interp, v: Option<&Value>| -> PyResult<Option<Vec<i64>>> {
        match v {
            None | Some(Value::None) => Ok(Some(vec![1; spatial])),
            Some(v @ (Value::Tuple(_) | Value::List(_))) => Ok(interp.iterate(v)?.iter().map(crate::interp::ops::as_int).collect()),
            Some(_) => Ok(None),
        }
    };
    let (Some(lhs_dilation), Some(rhs_dilation)) = (dilation(interp, lhs_dilation)?, dilation(interp, rhs_dilation)?) else {
        return Ok(unknown(f));
    };
    // Negative values are JAX's errors from other places (numpy, XLA's verifier), strides of
    // 0 an XLA error when compiled: none is modelled, so the result is unknown.
    let positive = |v: &[i64]| v.iter().all(|&x| x >= 0);
    if !positive(&window_strides) || window_strides.contains(&0) || !positive(&lhs_dilation) || !positive(&rhs_dilation) {
        return Ok(unknown(f));
    }
    if lhs_dilation.len() != spatial || rhs_dilation.len() != spatial || feature_group_count < 0 || batch_group_count < 0 {
        return Ok(unknown(f));
    }
    let usizes = |v: &[i64]| v.iter().map(|&x| x as usize).collect::<Vec<_>>();
    let (window_strides, lhs_dilation, rhs_dilation) = (usizes(&window_strides), usizes(&lhs_dilation), usizes(&rhs_dilation));
    let padding = match &padding {
        Value::Str(text) => {
            if lhs_dilation.iter().any(|&d| d != 1) {
                let message = "String padding is not implemented for transposed convolution using this op. Please either exactly specify the required padding or use conv_transpose.";
                return Err(interp.raise("ValueError", Code::PythonException, message));
            }
            let in_shape: Vec<usize> = dimension_numbers.lhs_spec[2..].iter().map(|&d| lhs.aval.shape[d]).collect();
            let window: Vec<usize> =
                dimension_numbers.rhs_spec[2..].iter().zip(&rhs_dilation).map(|(&d, &r)| dilated(rhs.aval.shape[d], r)).collect();
            match padtype_to_pads(text, &in_shape, &window, &window_strides) {
                Ok(Some(pads)) => pads,
                Ok(None) => return Ok(unknown(f)),
                Err(message) => return Err(interp.raise("RuntimeError", Code::PythonException, message)),
            }
        }
        Value::Tuple(_) | Value::List(_) => {
            let mut pads = Vec::new();
            for pair in interp.iterate(&padding)? {
                let items = match &pair {
                    Value::Tuple(_) | Value::List(_) => interp.iterate(&pair)?,
                    _ => return Ok(unknown(f)),
                };
                match items.iter().map(crate::interp::ops::as_int).collect::<Option<Vec<i64>>>().as_deref() {
                    Some(&[lo, hi]) => pads.push((lo, hi)),
                    _ => return Ok(unknown(f)),
                }
            }
            pads
        }
        _ => return Ok(unknown(f)),
    };
    let conv = Conv {
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dimension_numbers,
        feature_group_count: feature_group_count as usize,
        batch_group_count: batch_group_count as usize,
        preferred_element_type: preferred.map(|d| dtypes::canonicalize(d, cfg(interp))),
    };
    let prim = Prim::block(conv.clone());
    // The rule's errors are the user's: shape errors (TL104), or operands of two dtypes (TL105).
    if let Err(prims::RuleError::Invalid { class, message }) = conv.abstract_eval(&prim, &[&lhs.aval, &rhs.aval]) {
        let code = if message.contains("dtypes") { Code::DtypeMismatch } else { Code::ShapeMismatch };
        return Err(interp.raise(class, code, message));
    }
    apply1(interp, prim, &[lhs, rhs]).map(Value::Array)
}

/// `core.dilate_dim` on a size.
fn dilated(d: usize, dilation: usize) -> usize {
    if dilation == 1 {
        d
    } else {
        (1 + dilation * d).saturating_sub(dilation)
    }
}

/// `lax.padtype_to_pads`: `Ok(None)` where numpy would fail on shapes of different lengths.
fn padtype_to_pads(text: &str, in_shape: &[usize], window: &[usize], strides: &[usize]) -> Result<Option<Vec<(i64, i64)>>, String> {
    let kind = text.to_uppercase();
    if !matches!(kind.as_str(), "SAME" | "SAME_LOWER" | "VALID") {
        return Err(format!("Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got {text}."));
    }
    if kind == "VALID" {
        return Ok(Some(vec![(0, 0); in_shape.len()]));
    }
    // numpy broadcasts a single stride over every axis.
    let stride = |i: usize| if strides.len() == 1 { Some(strides[0]) } else { strides.get(i).copied() };
    if strides.len() != 1 && strides.len() != in_shape.len() {
        return Ok(None);
    }
    let mut pads = Vec::new();
    for (i, (&n, &w)) in in_shape.iter().zip(window).enumerate() {
        let Some(s) = stride(i) else { return Ok(None) };
        let out = n.div_ceil(s) as i64;
        let pad = ((out - 1) * s as i64 + w as i64 - n as i64).max(0);
        pads.push(if kind == "SAME" { (pad / 2, pad - pad / 2) } else { (pad - pad / 2, pad / 2) });
    }
    Ok(Some(pads))
}

/// `conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)`: `None` (JAX's
/// default, each operand in `N C spatial...` order), three spec strings (`('NHWC', 'HWIO',
/// 'NHWC')`), or three sequences of axes (a `ConvDimensionNumbers`); `Ok(None)` for what is
/// not known.
fn dimension_numbers(interp: &mut Interp, lhs: &Aval, rhs: &Aval, v: Option<&Value>) -> PyResult<Option<ConvDimensionNumbers>> {
    let shape_error = |interp: &mut Interp, message: String| Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    let nd = lhs.ndim();
    let specs = match v {
        None | Some(Value::None) => None,
        Some(v @ (Value::Tuple(_) | Value::List(_))) => Some(interp.iterate(v)?),
        Some(_) => return Ok(None),
    };
    // A `ConvDimensionNumbers` is used as it is, whatever the operands' ranks.
    if let Some(items) = &specs {
        if items.len() == 3 && items.iter().all(|i| matches!(i, Value::Tuple(_) | Value::List(_))) {
            let mut perms = Vec::new();
            for item in items {
                let Some(perm) =
                    interp.iterate(item)?.iter().map(|x| crate::interp::ops::as_int(x).map(|d| d as usize)).collect::<Option<Vec<_>>>()
                else {
                    return Ok(None);
                };
                perms.push(perm);
            }
            let [lhs_spec, rhs_spec, out_spec] = <[Vec<usize>; 3]>::try_from(perms).unwrap_or_else(|_| unreachable!());
            return Ok(Some(ConvDimensionNumbers { lhs_spec, rhs_spec, out_spec }));
        }
    }
    if nd != rhs.ndim() {
        return shape_error(interp, format!("convolution requires lhs and rhs ndim to be equal, got {nd} and {}.", rhs.ndim()));
    }
    let Some(items) = specs else {
        let iota: Vec<usize> = (0..nd).collect();
        return Ok(Some(ConvDimensionNumbers { lhs_spec: iota.clone(), rhs_spec: iota.clone(), out_spec: iota }));
    };
    if items.len() != 3 {
        let message = format!("convolution dimension_numbers list/tuple must be length 3, got {}.", items.len());
        return Err(interp.raise("TypeError", Code::PythonException, message));
    }
    let mut specs: Vec<Vec<char>> = Vec::new();
    for item in &items {
        let Value::Str(s) = item else { return Ok(None) };
        specs.push(s.chars().collect());
    }
    for (i, spec) in specs.iter().enumerate() {
        if spec.len() != nd {
            let message = format!(
                "convolution dimension_numbers[{i}] must have len equal to the ndim of lhs and rhs, got {} for lhs and rhs shapes {} and {}.",
                spec.len(),
                lhs.shape_tuple(),
                rhs.shape_tuple()
            );
            return shape_error(interp, message);
        }
    }
    let text = |spec: &[char]| spec.iter().collect::<String>();
    let pairs = [('N', 'C'), ('O', 'I'), ('N', 'C')];
    for (i, (spec, &(a, b))) in specs.iter().zip(&pairs).enumerate() {
        let count = |c: char| spec.iter().filter(|&&x| x == c).count();
        if count(a) != 1 || count(b) != 1 {
            let message =
                format!("convolution dimension_numbers[{i}] must contain the characters '{a}' and '{b}' exactly once, got {}.", text(spec));
            return Err(interp.raise("TypeError", Code::PythonException, message));
        }
        if spec.iter().enumerate().any(|(j, c)| spec[..j].contains(c)) {
            let message = format!("convolution dimension_numbers[{i}] cannot have duplicate characters, got {}.", text(spec));
            return Err(interp.raise("TypeError", Code::PythonException, message));
        }
    }
    let spatial_set = |spec: &[char], (a, b): (char, char)| {
        let mut s: Vec<char> = spec.iter().copied().filter(|&c| c != a && c != b).collect();
        s.sort_unstable();
        s
    };
    let sets: Vec<Vec<char>> = specs.iter().zip(pairs).map(|(s, p)| spatial_set(s, p)).collect();
    if sets[0] != sets[1] || sets[1] != sets[2] {
        let message = format!(
            "convolution dimension_numbers elements must each have the same set of spatial characters, got ('{}', '{}', '{}').",
            text(&specs[0]),
            text(&specs[1]),
            text(&specs[2])
        );
        return Err(interp.raise("TypeError", Code::PythonException, message));
    }
    // The spatial axes of each operand in the order the kernel's spec names them.
    let rhs_spec = &specs[1];
    let perm = |spec: &[char], (a, b): (char, char)| -> Vec<usize> {
        let mut spatial: Vec<usize> = (0..spec.len()).filter(|&i| spec[i] != a && spec[i] != b).collect();
        spatial.sort_by_key(|&i| rhs_spec.iter().position(|&c| c == spec[i]));
        let find = |c: char| spec.iter().position(|&x| x == c).unwrap_or_default();
        [find(a), find(b)].into_iter().chain(spatial).collect()
    };
    Ok(Some(ConvDimensionNumbers {
        lhs_spec: perm(&specs[0], pairs[0]),
        rhs_spec: perm(&specs[1], pairs[1]),
        out_spec: perm(&specs[2], pairs[2]),
    }))
}
