//! Array text as NumPy's `array2string` writes it (JAX prints arrays through it): `str` is
//! `[1. 2. 3.]`, `repr` is `Array([1., 2.], dtype=float32)`, with NumPy's default print
//! options — precision 8, small numbers suppressed into scientific notation only when the
//! magnitudes call for it, 75 columns, and arrays over 1000 elements summarised with `...`
//! (3 items at each edge of every axis).

use ndarray::{ArrayViewD, Axis, Slice};

use super::array::NdData;
use super::array::NdInts;
use super::dtypes::DType;

/// NumPy's `threshold`: arrays with more elements are summarised.
const THRESHOLD: usize = 1000;
/// NumPy's `edgeitems`: items shown at each end of a summarised axis.
const EDGE_ITEMS: usize = 3;
/// NumPy's `linewidth`.
const LINE_WIDTH: usize = 75;

/// `str(x)` of a concrete array.
pub fn array_str(d: &NdData, dtype: DType) -> String {
    format_data(d, dtype, " ", "")
}

/// `repr(x)` of a concrete JAX array: `Array([1., 2.], dtype=float32)`, with
/// `weak_type=True` for weakly typed values, as JAX writes it.
pub fn array_repr(d: &NdData, dtype: DType, weak: bool) -> String {
    repr_of(format_data(d, dtype, ", ", "Array("), d.shape(), dtype, weak)
}

/// `str(x)` of integer data held exactly (an int64 array holding a value past 2**53).
pub fn ints_str(d: &NdInts) -> String {
    format_ints(d, " ", "")
}

/// `repr(x)` of integer data held exactly.
pub fn ints_repr(d: &NdInts, dtype: DType, weak: bool) -> String {
    repr_of(format_ints(d, ", ", "Array("), d.shape(), dtype, weak)
}

/// `Array(<text>, dtype=...)` around the text of an array's elements.
fn repr_of(mut s: String, shape: &[usize], dtype: DType, weak: bool) -> String {
    let weak = if weak { ", weak_type=True" } else { "" };
    // JAX names the shape of every empty array, `(0,)` too (`Array([], shape=(0,), ...)`,
    // where NumPy writes `array([], dtype=...)`).
    if shape.contains(&0) {
        let dims: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
        if dims.len() == 1 {
            s.push_str(&format!(", shape=({},)", dims[0]));
        } else {
            s.push_str(&format!(", shape=({})", dims.join(", ")));
        }
    }
    let dtype_str = format!("dtype={}{weak}", dtype.name());
    // JAX's rule (`ArrayImpl.__repr__`): when `dtype=...` would take the last line past
    // NumPy's line width, the separator is the prefix's width in spaces (not a line break).
    let last_line_len = match s.rfind('\n') {
        Some(newline) => s[newline..].chars().count() + 1,
        None => s.chars().count() + 2,
    };
    let sep = if last_line_len + dtype_str.len() + 2 > LINE_WIDTH { "      " } else { " " };
    format!("Array({s},{sep}{dtype_str})")
}

/// NumPy's `str` of one element of `dtype` (`0.1353`, `inf`, `3`, `True`).
pub fn scalar_text(x: f64, dtype: DType) -> String {
    scalar_str(x, dtype)
}

/// The text of `d` for an array whose text starts after `prefix` (`"Array("` for repr):
/// the elements formatted as a group and padded to one width, rows wrapped at 75 columns.
/// `str` of a 0-d array is NumPy's scalar `str`.
fn format_data(d: &NdData, dtype: DType, sep: &str, prefix: &str) -> String {
    if d.ndim() == 0 && prefix.is_empty() {
        return d.iter().next().map(|&x| scalar_str(x, dtype)).unwrap_or_default();
    }
    if d.is_empty() {
        return "[]".into();
    }
    let summarise = d.len() > THRESHOLD;
    // NumPy fits the element format to the items it shows.
    let shown = if summarise { leading_trailing(d.view()) } else { d.clone() };
    let values: Vec<f64> = shown.iter().copied().collect();
    let fmt = element_format(&values, dtype, d.ndim() == 0);
    if d.ndim() == 0 {
        return fmt(values[0]);
    }
    let (width, hanging) = if prefix.is_empty() { (LINE_WIDTH, " ".to_string()) } else { (LINE_WIDTH - 1, " ".repeat(prefix.len() + 1)) };
    format_rows(d.view(), &*fmt, sep, &hanging, width, summarise)
}

/// `format_data` for integers held exactly: NumPy's integer format, each element right-aligned
/// to the widest one shown. The layout is `format_rows`', on an array of the elements' flat
/// indices (exact in f64) whose formatter prints the element each index names.
fn format_ints(d: &NdInts, sep: &str, prefix: &str) -> String {
    let values: Vec<i128> = d.iter().copied().collect();
    if d.ndim() == 0 {
        return values.first().map(i128::to_string).unwrap_or_default();
    }
    if d.is_empty() {
        return "[]".into();
    }
    let index = NdData::from_shape_vec(d.raw_dim(), (0..values.len()).map(|i| i as f64).collect()).expect("one index per element");
    let summarise = d.len() > THRESHOLD;
    let shown = if summarise { leading_trailing(index.view()) } else { index.clone() };
    let width = shown.iter().map(|&i| values[i as usize].to_string().len()).max().unwrap_or(0);
    let fmt = move |i: f64| format!("{:>width$}", values[i as usize]);
    let (width, hanging) = if prefix.is_empty() { (LINE_WIDTH, " ".to_string()) } else { (LINE_WIDTH - 1, " ".repeat(prefix.len() + 1)) };
    format_rows(index.view(), &fmt, sep, &hanging, width, summarise)
}

/// The first and last `EDGE_ITEMS` along every axis longer than twice that (NumPy's
/// `_leading_trailing`).
fn leading_trailing(d: ArrayViewD<f64>) -> NdData {
    let mut out = d.to_owned();
    for axis in 0..out.ndim() {
        let n = out.len_of(Axis(axis));
        if n > 2 * EDGE_ITEMS {
            let head = out.slice_axis(Axis(axis), Slice::from(..EDGE_ITEMS));
            let tail = out.slice_axis(Axis(axis), Slice::from(n - EDGE_ITEMS..));
            out = ndarray::concatenate(Axis(axis), &[head, tail]).unwrap_or_else(|_| out.clone());
        }
    }
    out
}

/// NumPy's `_extendLine_pretty` for one-line words: wrap before `word` when it would pass
/// `width`, unless the line holds nothing but its indent.
fn extend_line(s: &mut String, line: &mut String, word: &str, width: usize, hanging: &str) {
    if line.len() + word.len() > width && line.len() > hanging.len() {
        s.push_str(line.trim_end());
        s.push('\n');
        *line = hanging.to_string();
    }
    line.push_str(word);
}

/// NumPy's `_formatArray`: `hanging` is the indent of continuation lines, `width` the
/// columns left for this level; with `summarise`, long axes show their edges around `...`.
fn format_rows(d: ArrayViewD<f64>, fmt: &dyn Fn(f64) -> String, sep: &str, hanging: &str, width: usize, summarise: bool) -> String {
    if d.ndim() == 0 {
        return d.iter().next().map(|&x| fmt(x)).unwrap_or_default();
    }
    let next_hanging = format!("{hanging} ");
    let next_width = width.saturating_sub(1);
    let n = d.len_of(Axis(0));
    let show_summary = summarise && n > 2 * EDGE_ITEMS;
    let (leading, trailing) = if show_summary { (EDGE_ITEMS, EDGE_ITEMS) } else { (0, n) };
    let row = |i: usize| format_rows(d.index_axis(Axis(0), i), fmt, sep, &next_hanging, next_width, summarise);
    let mut s = String::new();
    if d.ndim() == 1 {
        let elem_width = width.saturating_sub(sep.trim_end().len().max(1));
        let mut line = hanging.to_string();
        for i in 0..leading {
            extend_line(&mut s, &mut line, &row(i), elem_width, hanging);
            line.push_str(sep);
        }
        if show_summary {
            extend_line(&mut s, &mut line, "...", elem_width, hanging);
            line.push_str(sep);
        }
        for i in (n - trailing)..n {
            extend_line(&mut s, &mut line, &row(i), elem_width, hanging);
            if i + 1 < n {
                line.push_str(sep);
            }
        }
        s.push_str(&line);
    } else {
        let line_sep = format!("{}{}", sep.trim_end(), "\n".repeat(d.ndim() - 1));
        for i in 0..leading {
            s.push_str(hanging);
            s.push_str(&row(i));
            s.push_str(&line_sep);
        }
        if show_summary {
            s.push_str(hanging);
            s.push_str("...");
            s.push_str(&line_sep);
        }
        for i in (n - trailing)..n {
            s.push_str(hanging);
            s.push_str(&row(i));
            if i + 1 < n {
                s.push_str(&line_sep);
            }
        }
    }
    format!("[{}]", &s[hanging.len().min(s.len())..])
}

/// NumPy's per-dtype element formatter, fitted to all of `values` (its `FloatingFormat`,
/// `IntegerFormat` and `BoolFormat` with the default print options).
fn element_format(values: &[f64], dtype: DType, zero_d: bool) -> Box<dyn Fn(f64) -> String> {
    if dtype.is_bool() {
        let t = if zero_d { "True" } else { " True" };
        return Box::new(move |x| if x != 0.0 { t.into() } else { "False".into() });
    }
    if dtype.is_integer() {
        let unsigned = dtype.is_unsigned();
        let text = move |x: f64| if unsigned { (x as u64).to_string() } else { (x as i64).to_string() };
        let width = values.iter().map(|&x| text(x).len()).max().unwrap_or(0);
        return Box::new(move |x| format!("{:>width$}", text(x)));
    }
    if dtype == DType::BF16 {
        return Box::new(bfloat16_text);
    }
    let finite: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let nonzero: Vec<f64> = finite.iter().map(|x| x.abs()).filter(|&x| x != 0.0).collect();
    let cutoff = match dtype {
        DType::F64 => 1e8,
        DType::F32 => 1e6,
        DType::F16 => 1e3,
        _ => 1e2,
    };
    let exp_format = match (nonzero.iter().copied().reduce(f64::max), nonzero.iter().copied().reduce(f64::min)) {
        (Some(max), Some(min)) => max >= cutoff || min < 1e-4 || max / min > 1000.0,
        _ => false,
    };
    let non_finite = values.iter().any(|x| !x.is_finite());
    let neg_inf = values.contains(&f64::NEG_INFINITY);
    let pad_non_finite = move |pad_left: usize, pad_right: usize| {
        if non_finite {
            let offset = pad_right + 1;
            pad_left.max(3usize.saturating_sub(offset)).max((3 + usize::from(neg_inf)).saturating_sub(offset))
        } else {
            pad_left
        }
    };
    let special = move |x: f64, total: usize| {
        let s = if x.is_nan() {
            "nan"
        } else if x > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        format!("{s:>total$}")
    };
    if exp_format {
        let parts: Vec<(String, String, i32)> = finite.iter().map(|&x| scientific(x, dtype, 8)).collect();
        let precision = parts.iter().map(|p| p.1.len()).max().unwrap_or(0);
        let exp_size = parts.iter().map(|p| p.2.unsigned_abs().to_string().len().max(2)).max().unwrap_or(2);
        let pad_left = parts.iter().map(|p| p.0.len()).max().unwrap_or(0);
        let pad_right = exp_size + 2 + precision;
        let pad_left = pad_non_finite(pad_left, pad_right);
        Box::new(move |x| {
            if !x.is_finite() {
                return special(x, pad_left + pad_right + 1);
            }
            let (int, frac, e) = exact_scientific(x, precision);
            let sign = if e < 0 { '-' } else { '+' };
            format!("{int:>pad_left$}.{frac}e{sign}{:0>exp_size$}", e.unsigned_abs())
        })
    } else {
        let parts: Vec<(String, String)> = finite.iter().map(|&x| positional(x, dtype, 8)).collect();
        let pad_right = parts.iter().map(|p| p.1.len()).max().unwrap_or(0);
        let pad_left = pad_non_finite(parts.iter().map(|p| p.0.len()).max().unwrap_or(0), pad_right);
        Box::new(move |x| {
            if !x.is_finite() {
                return special(x, pad_left + pad_right + 1);
            }
            let (int, frac) = positional(x, dtype, 8);
            format!("{int:>pad_left$}.{frac:<pad_right$}")
        })
    }
}

/// NumPy's `str` of a float scalar: the shortest repr of its dtype, positional (with `.0`
/// for integral values) from 1e-4 up to 1e16 (float64) or 1e6 (float32), else scientific.
fn scalar_str(x: f64, dtype: DType) -> String {
    if dtype.is_bool() {
        return if x != 0.0 { "True" } else { "False" }.into();
    }
    if dtype.is_integer() {
        return if dtype.is_unsigned() { (x as u64).to_string() } else { (x as i64).to_string() };
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "nan"
        } else if x > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .into();
    }
    if dtype == DType::BF16 {
        return bfloat16_text(x);
    }
    // NumPy's scalar repr switches to scientific notation from 1e16 (float64), 1e6
    // (float32) and 1e3 (float16): `np.float16(1000)` is `1e+03`.
    let cutoff = match dtype {
        DType::F64 => 1e16,
        DType::F16 => 1e3,
        _ => 1e6,
    };
    if x == 0.0 || (x.abs() >= 1e-4 && x.abs() < cutoff) {
        let (int, frac) = positional(x, dtype, usize::MAX);
        return format!("{int}.{}", if frac.is_empty() { "0" } else { &frac });
    }
    let (int, frac, e) = scientific(x, dtype, usize::MAX);
    let point = if frac.is_empty() { String::new() } else { format!(".{frac}") };
    format!("{int}{point}e{}{:02}", if e < 0 { '-' } else { '+' }, e.unsigned_abs())
}

/// The shortest digits that read back as `x` in `dtype` (float64, float16, or float32 for
/// the rest), and the decimal exponent of the first digit: `-0.43359444` is `("43359444", -1)`.
fn shortest_digits(x: f64, dtype: DType) -> (String, i32) {
    let s = match dtype {
        DType::F64 | DType::C128 => format!("{:e}", x.abs()),
        DType::F16 => float16_shortest(x.abs()),
        _ => format!("{:e}", (x as f32).abs()),
    };
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// The shortest decimal (as `{:e}` writes it) that reads back as the float16 `x`, the
/// closest one when several have as few digits: what NumPy's Dragon4 prints for float16
/// (`0.1428` for 1/7, where float32's shortest is `0.14282227`).
fn float16_shortest(x: f64) -> String {
    let target = half::f16::from_f64(x);
    for digits in 0..5 {
        let s = format!("{x:.digits$e}");
        if s.parse::<f64>().is_ok_and(|y| half::f16::from_f64(y) == target) {
            return s;
        }
    }
    format!("{x:e}")
}

/// How ml_dtypes writes a bfloat16 (its `repr` and `str`, which NumPy's array printing
/// uses for it, element by element without padding): C++'s `ostream << float`, that is
/// printf's `%g` with 6 significant digits (`0.333984`, `200`, `1.00136e-05`, `-0`).
fn bfloat16_text(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        let frac = (5 - exp) as usize;
        trim(&format!("{x:.frac$}"))
    } else {
        format!("{}e{}{:02}", trim(mantissa), if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
    }
}

/// `x` in positional notation as (signed integer part, fractional digits without trailing
/// zeros): its shortest digits, or, past `max_frac` fractional digits, its exact value
/// rounded to `max_frac` of them.
fn positional(x: f64, dtype: DType, max_frac: usize) -> (String, String) {
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let (digits, e) = shortest_digits(x, dtype);
    let frac_len = (digits.len() as i64 - 1 - i64::from(e)).max(0) as usize;
    let (int, frac) = if frac_len > max_frac {
        let s = format!("{:.max_frac$}", x.abs());
        let (i, f) = s.split_once('.').unwrap_or((&s, ""));
        (i.to_string(), f.to_string())
    } else if e >= 0 {
        let e = e as usize;
        if digits.len() > e + 1 {
            (digits[..e + 1].to_string(), digits[e + 1..].to_string())
        } else {
            (format!("{digits}{}", "0".repeat(e + 1 - digits.len())), String::new())
        }
    } else {
        ("0".to_string(), format!("{}{digits}", "0".repeat((-e - 1) as usize)))
    };
    (format!("{sign}{int}"), frac.trim_end_matches('0').to_string())
}

/// `x` in scientific notation as (signed leading digit, fractional digits without trailing
/// zeros, exponent): its shortest digits, or its exact value rounded to `max_frac` digits.
fn scientific(x: f64, dtype: DType, max_frac: usize) -> (String, String, i32) {
    let (digits, e) = shortest_digits(x, dtype);
    if digits.len() - 1 > max_frac {
        let (int, frac, e) = exact_scientific(x, max_frac);
        return (int, frac.trim_end_matches('0').to_string(), e);
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    (format!("{sign}{}", &digits[..1]), digits[1..].trim_end_matches('0').to_string(), e)
}

/// The exact value of `x` rounded to `frac` digits after the point in scientific notation.
fn exact_scientific(x: f64, frac: usize) -> (String, String, i32) {
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let s = format!("{:.frac$e}", x.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let (int, f) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    (format!("{sign}{int}"), f.to_string(), exp.parse().unwrap_or(0))
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn arange(n: usize, shape: &[usize]) -> NdData {
        ArrayD::from_shape_fn(IxDyn(&[n]), |i| i[0] as f64).into_shape_with_order(IxDyn(shape)).expect("shape")
    }

    // Expected texts are what JAX 0.10.2 (NumPy's array2string) prints for the same arrays.
    fn summarises_past_1000_elements_like_numpy() {
        assert_eq!(array_str(&arange(1001, &[1001]), DType::I32), "[   0    1    2 ...  998  999 1000]");
        assert_eq!(array_repr(&arange(1001, &[1001]), DType::I32, false), "Array([   0,    1,    2, ...,  998,  999, 1000], dtype=int32)");
        assert_eq!(
            array_str(&arange(2000, &[40, 50]), DType::I32),
            "[[   0    1    2 ...   47   48   49]\n [  50   51   52 ...   97   98   99]\n [ 100  101  102 ...  147  148  149]\n ...\n [1850 1851 1852 ... 1897 1898 1899]\n [1900 1901 1902 ... 1947 1948 1949]\n [1950 1951 1952 ... 1997 1998 1999]]"
        );
        assert_eq!(array_str(&arange(1000, &[1000]), DType::I32).matches("...").count(), 0, "1000 elements are printed in full");
    }

    fn narrow(values: &[f64], dtype: DType) -> NdData {
        ArrayD::from_shape_vec(IxDyn(&[values.len()]), values.iter().map(|&x| crate::jax::rounding::round_to(x, dtype)).collect())
            .expect("shape")
    }

    // What JAX 0.10.2 prints (ml_dtypes writes bfloat16 elements with `%g`, NumPy float16 with
    // its shortest float16 digits).
    fn bfloat16_and_float16_print_as_jax_prints_them() {
        let third = narrow(&[1.0 / 3.0; 3], DType::BF16);
        assert_eq!(array_str(&third, DType::BF16), "[0.333984 0.333984 0.333984]");
        assert_eq!(array_repr(&third, DType::BF16, false), "Array([0.333984, 0.333984, 0.333984], dtype=bfloat16)");
        let edges = narrow(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, 1.0, 200.0, 1e-5, 12345678.0], DType::BF16);
        assert_eq!(array_str(&edges, DType::BF16), "[nan inf -inf -0 0 1 200 1.00136e-05 1.23208e+07]");
        assert_eq!(scalar_text(crate::jax::rounding::round_to(2.203125, DType::BF16), DType::BF16), "2.20312");
        let sevenths = narrow(&(0..10).map(|i| f64::from(i) / 7.0).collect::<Vec<_>>(), DType::F16);
        assert_eq!(array_str(&sevenths, DType::F16), "[0.     0.1428 0.2856 0.4285 0.5713 0.7144 0.857  1.     1.143  1.286 ]");
        assert_eq!(scalar_text(1000.0, DType::F16), "1e+03");
        assert_eq!(scalar_text(crate::jax::rounding::round_to(1.0 / 3.0, DType::F16), DType::F16), "0.3333");
        assert_eq!(array_str(&narrow(&[1e-3, 1.0, 1000.0, 1e4], DType::F16), DType::F16), "[1.e-03 1.e+00 1.e+03 1.e+04]");
    }

    fn empty_and_weak_reprs() {
        assert_eq!(array_repr(&ArrayD::zeros(IxDyn(&[2, 0])), DType::F32, false), "Array([], shape=(2, 0), dtype=float32)");
        assert_eq!(array_repr(&ArrayD::zeros(IxDyn(&[0])), DType::F32, false), "Array([], shape=(0,), dtype=float32)");
        assert_eq!(array_repr(&ArrayD::from_elem(IxDyn(&[]), 3.0), DType::I32, true), "Array(3, dtype=int32, weak_type=True)");
    }

    crate::unit_tests::list![summarises_past_1000_elements_like_numpy, bfloat16_and_float16_print_as_jax_prints_them, empty_and_weak_reprs];
}
