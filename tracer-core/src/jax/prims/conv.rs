//! `conv_general_dilated` as one block: its parameters, its abstract-evaluation rule with
//! JAX's errors, its CPU kernel, its JVP and transpose rules and its properties, side by side
//! (jax/_src/lax/convolution.py). `jax.lax.conv_general_dilated`, `conv` and
//! `conv_with_general_padding` bind it (`numpy/lax/conv.rs`), with the checks JAX makes
//! before binding (dimension numbers, string padding).
//!
//! The parameters are JAX's after `conv_general_dilated` has normalised them: the dimension
//! numbers as permutations (`lhs_spec = (batch, feature, spatial...)`, `rhs_spec = (out
//! feature, in feature, spatial...)`, `out_spec` like `lhs_spec`), padding as `(low, high)`
//! pairs. In the "canonical" order below (`N C spatial...` for the operands and the output,
//! `O I spatial...` for the kernel) the rules read as XLA's documentation writes them.

use std::rc::Rc;

use ndarray::{ArrayD, IxDyn};
use smallvec::smallvec;

use super::{arg, type_error, Block, Props, RuleError, RuleResult, Tangents};
use crate::interp::Interp;
use crate::jax::ad::{self, AdError, AdResult};
use crate::jax::array::{Array, NdData};
use crate::jax::aval::{shape_tuple, Aval};
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;

/// JAX's `ConvDimensionNumbers`: where the batch, feature and spatial axes of each operand
/// and of the output are.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvDimensionNumbers {
    pub lhs_spec: Vec<usize>,
    pub rhs_spec: Vec<usize>,
    pub out_spec: Vec<usize>,
}

/// The parameters of `conv_general_dilated` (JAX's, without `precision` and `out_sharding`,
/// which change no aval and no value on CPU).
#[derive(Clone, Debug, PartialEq)]
pub struct Conv {
    pub window_strides: Vec<usize>,
    pub padding: Vec<(i64, i64)>,
    pub lhs_dilation: Vec<usize>,
    pub rhs_dilation: Vec<usize>,
    pub dimension_numbers: ConvDimensionNumbers,
    pub feature_group_count: usize,
    pub batch_group_count: usize,
    pub preferred_element_type: Option<DType>,
}

impl Block for Conv {
    fn name(&self) -> &'static str {
        "conv_general_dilated"
    }

    fn params(&self) -> String {
        let dn = &self.dimension_numbers;
        let pads = pairs_tuple(&self.padding);
        format!(
            "batch_group_count={} dimension_numbers=ConvDimensionNumbers(lhs_spec={}, rhs_spec={}, out_spec={}) feature_group_count={} lhs_dilation={} padding={pads} preferred_element_type={} rhs_dilation={} window_strides={}",
            self.batch_group_count,
            shape_tuple(&dn.lhs_spec),
            shape_tuple(&dn.rhs_spec),
            shape_tuple(&dn.out_spec),
            self.feature_group_count,
            shape_tuple(&self.lhs_dilation),
            self.preferred_element_type.map_or("None", DType::name),
            shape_tuple(&self.rhs_dilation),
            shape_tuple(&self.window_strides),
        )
    }

    /// JAX's `_conv_general_dilated_shape_rule` (its `ValueError`s, in its order), then the
    /// dtype rule: both operands of one dtype.
    fn abstract_eval(&self, prim: &Prim, ins: &[&Aval]) -> RuleResult {
        let (l, r) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
        let shape = self.out_shape(l, r)?;
        if l.dtype != r.dtype {
            return Err(type_error(format!(
                "lax.conv_general_dilated requires arguments to have the same dtypes, got {}, {}.",
                l.dtype.name(),
                r.dtype.name()
            )));
        }
        Ok(smallvec![match self.preferred_element_type {
            Some(dtype) => Aval::new(&shape, dtype),
            None => Aval::new(&shape, l.dtype).weak(l.weak && r.weak),
        }])
    }

    fn kernel(&self, ins: &[Rc<NdData>], _in_dtypes: &[DType], out_shape: &[usize], _out_dtype: DType) -> Option<NdData> {
        let [lhs, rhs] = ins else { return None };
        self.convolve(lhs, rhs, out_shape)
    }

    /// Bilinear: `conv(t_lhs, rhs) + conv(lhs, t_rhs)`.
    fn jvp(&self, interp: &mut Interp, prim: &Prim, ins: &[Rc<Array>], tangents: &[Option<Rc<Array>>]) -> Tangents {
        super::products::bilinear_jvp(interp, prim, ins, tangents)
    }

    /// JAX's `_conv_general_dilated_transpose_lhs` and `_rhs`: each cotangent is itself a
    /// convolution, of the output's cotangent with the other operand.
    fn transpose(&self, interp: &mut Interp, ins: &[Rc<Array>], cts: &[Option<Rc<Array>>], active: &[bool]) -> Tangents {
        let (Some(g), [lhs, rhs]) = (cts.first().cloned().flatten(), ins) else {
            return Err(AdError::NoRule("conv_general_dilated with other than one cotangent".into()));
        };
        if self.preferred_element_type.is_some() {
            return Err(AdError::NoRule("conv_general_dilated with a preferred_element_type".into()));
        }
        let mut out = vec![None, None];
        if active.first().copied().unwrap_or(false) {
            out[0] = Some(self.transpose_lhs(interp, &g, &lhs.aval, rhs)?);
        }
        if active.get(1).copied().unwrap_or(false) {
            out[1] = Some(self.transpose_rhs(interp, &g, lhs, &rhs.aval)?);
        }
        Ok(out)
    }

    /// JAX's `_conv_general_dilated_batch_rule` where it folds the examples into one axis
    /// (`conv_batching.rs`).
    fn batching(&self, mapped: &[bool]) -> super::Batching {
        if self.has_batch_rule(mapped) {
            super::Batching::Rule
        } else {
            super::Batching::PerExample
        }
    }

    fn batch(&self, interp: &mut Interp, _prim: &Prim, ins: &[Rc<Array>], dims: &[super::batching::BDim]) -> super::batching::BatchResult {
        self.batch_rule(interp, ins, dims)
    }

    /// Linear in each operand alone (a product of two tangents is not linear).
    fn linear_in(&self, active: &[bool]) -> bool {
        active.iter().filter(|&&a| a).count() == 1
    }

    fn props(&self) -> Props {
        Props { ad_rule: Some(true), ..Props::NONE }
    }
}

impl Conv {
    fn spatial(&self) -> usize {
        self.window_strides.len()
    }

    /// The output shape, or JAX's error for these operands.
    fn out_shape(&self, l: &Aval, r: &Aval) -> Result<Vec<usize>, RuleError> {
        let value_error = |message: String| RuleError::Invalid { class: "ValueError", message };
        let dn = &self.dimension_numbers;
        if l.ndim() != r.ndim() {
            return Err(value_error(format!(
                "conv_general_dilated lhs and rhs must have the same number of dimensions, but got {} and {}.",
                l.shape_tuple(),
                r.shape_tuple()
            )));
        }
        let permutes = |spec: &[usize]| {
            let mut seen = vec![false; l.ndim()];
            spec.len() == l.ndim() && spec.iter().all(|&d| d < seen.len() && !std::mem::replace(&mut seen[d], true))
        };
        if l.ndim() < 2 || !permutes(&dn.lhs_spec) || !permutes(&dn.rhs_spec) || !permutes(&dn.out_spec) {
            return Err(type_error(format!("conv_general_dilated dimension numbers {dn:?} do not fit operands of rank {}", l.ndim())));
        }
        let (fgc, bgc) = (self.feature_group_count, self.batch_group_count);
        if fgc == 0 {
            return Err(value_error(format!("conv_general_dilated feature_group_count must be a positive integer, got {fgc}.")));
        }
        let lhs_features = l.shape[dn.lhs_spec[1]];
        let (rhs_in, rhs_out) = (r.shape[dn.rhs_spec[1]], r.shape[dn.rhs_spec[0]]);
        if lhs_features % fgc != 0 {
            return Err(value_error(format!("conv_general_dilated feature_group_count must divide lhs feature dimension size, but {fgc} does not divide {lhs_features}.")));
        }
        if lhs_features / fgc != rhs_in {
            return Err(value_error(format!("conv_general_dilated lhs feature dimension size divided by feature_group_count must equal the rhs input feature dimension size, but {lhs_features} // {fgc} != {rhs_in}.")));
        }
        if rhs_out % fgc != 0 {
            return Err(value_error(format!("conv_general_dilated rhs output feature dimension size must be a multiple of feature_group_count, but {rhs_out} is not a multiple of {fgc}.")));
        }
        if bgc == 0 {
            return Err(value_error(format!("conv_general_dilated batch_group_count must be a positive integer, got {bgc}.")));
        }
        let lhs_batch = l.shape[dn.lhs_spec[0]];
        if bgc > 1 && lhs_batch % bgc != 0 {
            return Err(value_error(format!(
                "conv_general_dilated batch_group_count must divide lhs batch dimension size, but {bgc} does not divide {lhs_batch}."
            )));
        }
        if rhs_out % bgc != 0 {
            return Err(value_error(format!("conv_general_dilated rhs output feature dimension size must be a multiple of batch_group_count, but {rhs_out} is not a multiple of {bgc}.")));
        }
        if bgc > 1 && fgc > 1 {
            return Err(value_error(format!("At most one of batch_group_count and feature_group_count may be > 1, got batch_group_count={bgc} and feature_group_count={fgc}")));
        }
        let spatial = l.ndim() - 2;
        if spatial != self.spatial() {
            return Err(value_error(format!(
                "conv_general_dilated window and window_strides must have the same number of dimensions, but got {spatial} and {}",
                self.spatial()
            )));
        }
        for dilation in [&self.lhs_dilation, &self.rhs_dilation] {
            if dilation.contains(&0) {
                return Err(type_error(format!("All dilations must be positive, got {}.", shape_tuple(dilation))));
            }
            if dilation.len() != spatial {
                return Err(type_error(format!(
                    "conv_general_dilated dilation {} for {spatial} spatial dimensions",
                    shape_tuple(dilation)
                )));
            }
        }
        if self.padding.len() != spatial {
            return Err(type_error(format!(
                "Wrong number of explicit pads for convolution: expected {spatial}, got {}.",
                self.padding.len()
            )));
        }
        let lhs_dilated: Vec<i64> = (0..spatial).map(|i| dilate(l.shape[dn.lhs_spec[i + 2]], self.lhs_dilation[i])).collect();
        let padded: Vec<i64> = lhs_dilated.iter().zip(&self.padding).map(|(&d, &(lo, hi))| d + lo + hi).collect();
        if padded.iter().any(|&p| p < 0) {
            let pads = pairs_tuple(&self.padding);
            let dims = python_tuple(lhs_dilated.iter().map(|d| format!("np.int64({d})")).collect());
            return Err(value_error(format!(
                "Negative padding is larger than the size of the corresponding dimension: got padding={pads} for lhs_shape[2:]={dims}"
            )));
        }
        let mut canonical = vec![lhs_batch / bgc, rhs_out];
        for i in 0..spatial {
            let window = dilate(r.shape[dn.rhs_spec[i + 2]], self.rhs_dilation[i]);
            let stride = self.window_strides[i].max(1) as i64;
            canonical.push(((padded[i] - window).div_euclid(stride) + 1).max(0) as usize);
        }
        let mut shape = vec![0; l.ndim()];
        for (i, &d) in dn.out_spec.iter().enumerate() {
            shape[d] = canonical[i];
        }
        Ok(shape)
    }

    /// The convolution itself, accumulated in f64 (the caller rounds to the dtype): for every
    /// output element, the sum over its group's input features and the window's positions
    /// that land on an element of the dilated, padded `lhs` (elsewhere the dilated `lhs` is 0).
    fn convolve(&self, lhs: &NdData, rhs: &NdData, out_shape: &[usize]) -> Option<NdData> {
        let dn = &self.dimension_numbers;
        let spatial = self.spatial();
        let (lhs, rhs) = (lhs.as_standard_layout(), rhs.as_standard_layout());
        let (ls, rs) = (lhs.as_slice()?, rhs.as_slice()?);
        let strides_of = |shape: &[usize]| {
            let mut strides = vec![1usize; shape.len()];
            for i in (0..shape.len().saturating_sub(1)).rev() {
                strides[i] = strides[i + 1] * shape[i + 1];
            }
            strides
        };
        let (lst, rst, ost) = (strides_of(lhs.shape()), strides_of(rhs.shape()), strides_of(out_shape));
        let lhs_dim = |i: usize| lhs.shape()[dn.lhs_spec[i]];
        let rhs_dim = |i: usize| rhs.shape()[dn.rhs_spec[i]];
        let out_dim = |i: usize| out_shape[dn.out_spec[i]];
        let (fgc, bgc) = (self.feature_group_count, self.batch_group_count);
        let (out_batch, out_features, in_features) = (out_dim(0), out_dim(1), rhs_dim(1));
        let per_feature_group = out_features / fgc.max(1);
        let per_batch_group = out_features / bgc.max(1);
        // For each spatial axis, each (output position, window position): the offset of the
        // `lhs` element it reads, if it reads one.
        let taps: Vec<Vec<Vec<Option<usize>>>> = (0..spatial)
            .map(|d| {
                let (n_in, n_out, n_window) = (lhs_dim(d + 2) as i64, out_dim(d + 2), rhs_dim(d + 2));
                let (stride, ld, rd) = (self.window_strides[d] as i64, self.lhs_dilation[d] as i64, self.rhs_dilation[d] as i64);
                let low = self.padding[d].0;
                (0..n_out)
                    .map(|y| {
                        (0..n_window)
                            .map(|k| {
                                let p = y as i64 * stride + k as i64 * rd - low;
                                (p >= 0 && p % ld == 0 && p / ld < n_in).then(|| (p / ld) as usize * lst[dn.lhs_spec[d + 2]])
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let out_positions: usize = (0..spatial).map(|d| out_dim(d + 2)).product();
        let window_positions: usize = (0..spatial).map(|d| rhs_dim(d + 2)).product();
        let mut out = ArrayD::<f64>::zeros(IxDyn(out_shape));
        let os = out.as_slice_mut()?;
        let mut y = vec![0usize; spatial];
        let mut k = vec![0usize; spatial];
        for n in 0..out_batch {
            for o in 0..out_features {
                let (feature_group, batch_group) = (o / per_feature_group.max(1), o / per_batch_group.max(1));
                let lhs_n = if bgc > 1 { batch_group * out_batch + n } else { n };
                for flat_y in 0..out_positions {
                    unflatten(flat_y, &mut y, |d| out_dim(d + 2));
                    let mut acc = 0.0;
                    for c in 0..in_features {
                        let lhs_c = if fgc > 1 { feature_group * in_features + c } else { c };
                        let lhs_base = lhs_n * lst[dn.lhs_spec[0]] + lhs_c * lst[dn.lhs_spec[1]];
                        let rhs_base = o * rst[dn.rhs_spec[0]] + c * rst[dn.rhs_spec[1]];
                        'window: for flat_k in 0..window_positions {
                            unflatten(flat_k, &mut k, |d| rhs_dim(d + 2));
                            let (mut li, mut ri) = (lhs_base, rhs_base);
                            for d in 0..spatial {
                                let Some(offset) = taps[d][y[d]][k[d]] else { continue 'window };
                                li += offset;
                                ri += k[d] * rst[dn.rhs_spec[d + 2]];
                            }
                            acc += ls[li] * rs[ri];
                        }
                    }
                    let mut oi = n * ost[dn.out_spec[0]] + o * ost[dn.out_spec[1]];
                    for d in 0..spatial {
                        oi += y[d] * ost[dn.out_spec[d + 2]];
                    }
                    os[oi] = acc;
                }
            }
        }
        Some(out)
    }

    /// `_conv_general_dilated_transpose_lhs`: the cotangent `g` convolved with the kernel
    /// reversed along its spatial axes, strides and `lhs` dilation swapping places.
    fn transpose_lhs(&self, interp: &mut Interp, g: &Rc<Array>, lhs: &Aval, rhs: &Rc<Array>) -> AdResult<Rc<Array>> {
        let dn = &self.dimension_numbers;
        let (lhs_spec, rhs_spec, out_spec) = (&dn.lhs_spec, &dn.rhs_spec, &dn.out_spec);
        let rhs_shape = rhs.aval.shape.to_vec();
        let mut kernel = rhs.clone();
        let mut feature_group_count = self.feature_group_count;
        let groups = self.feature_group_count.max(self.batch_group_count);
        if groups > 1 {
            // The group axis moves from the kernel's output features into its input features.
            kernel = reshape_axis_out_of(interp, rhs_spec[0], groups, &kernel)?;
            kernel = reshape_axis_into(interp, rhs_spec[0], rhs_spec[1], &kernel)?;
            feature_group_count = groups;
        }
        let t_rhs_spec: Vec<usize> = [rhs_spec[1], rhs_spec[0]].into_iter().chain(rhs_spec[2..].iter().copied()).collect();
        let spatial = self.spatial();
        let padding: Vec<(i64, i64)> = (0..spatial)
            .map(|i| {
                let lhs_d = dilate(lhs.shape[lhs_spec[i + 2]], self.lhs_dilation[i]);
                let rhs_d = dilate(rhs_shape[rhs_spec[i + 2]], self.rhs_dilation[i]);
                let out_d = dilate(g.aval.shape[out_spec[i + 2]], self.window_strides[i]);
                let before = rhs_d - self.padding[i].0 - 1;
                (before, lhs_d + rhs_d - 1 - out_d - before)
            })
            .collect();
        let reversed = ad::bind(interp, Prim::Rev { dimensions: rhs_spec[2..].to_vec() }, &[kernel])?;
        let conv = Conv {
            window_strides: self.lhs_dilation.clone(),
            padding,
            lhs_dilation: self.window_strides.clone(),
            rhs_dilation: self.rhs_dilation.clone(),
            dimension_numbers: ConvDimensionNumbers { lhs_spec: out_spec.clone(), rhs_spec: t_rhs_spec, out_spec: lhs_spec.clone() },
            feature_group_count,
            batch_group_count: 1,
            preferred_element_type: None,
        };
        let mut out = ad::bind(interp, Prim::block(conv), &[g.clone(), reversed])?;
        if self.batch_group_count > 1 {
            out = reshape_axis_out_of(interp, lhs_spec[1], self.batch_group_count, &out)?;
            out = reshape_axis_into(interp, lhs_spec[1], lhs_spec[0], &out)?;
        }
        Ok(out)
    }

    /// `_conv_general_dilated_transpose_rhs`: `lhs` convolved with the cotangent `g`, strides
    /// and `rhs` dilation swapping places, feature groups becoming batch groups.
    fn transpose_rhs(&self, interp: &mut Interp, g: &Rc<Array>, lhs: &Rc<Array>, rhs: &Aval) -> AdResult<Rc<Array>> {
        if g.aval.size() == 0 {
            return ad::zeros(interp, rhs);
        }
        let dn = &self.dimension_numbers;
        let swap = |spec: &[usize]| -> Vec<usize> { [spec[1], spec[0]].into_iter().chain(spec[2..].iter().copied()).collect() };
        let (mut feature_group_count, mut batch_group_count) = (self.feature_group_count, self.batch_group_count);
        if batch_group_count > 1 {
            (feature_group_count, batch_group_count) = (batch_group_count, 1);
        } else if feature_group_count > 1 {
            (feature_group_count, batch_group_count) = (1, feature_group_count);
        }
        let padding: Vec<(i64, i64)> = (0..self.spatial())
            .map(|i| {
                let lhs_d = dilate(lhs.aval.shape[dn.lhs_spec[i + 2]], self.lhs_dilation[i]);
                let rhs_d = dilate(rhs.shape[dn.rhs_spec[i + 2]], self.rhs_dilation[i]);
                let out_d = dilate(g.aval.shape[dn.out_spec[i + 2]], self.window_strides[i]);
                let low = self.padding[i].0;
                (low, (out_d - lhs_d) + (rhs_d - low - 1))
            })
            .collect();
        let conv = Conv {
            window_strides: self.rhs_dilation.clone(),
            padding,
            lhs_dilation: self.lhs_dilation.clone(),
            rhs_dilation: self.window_strides.clone(),
            dimension_numbers: ConvDimensionNumbers {
                lhs_spec: swap(&dn.lhs_spec),
                rhs_spec: swap(&dn.out_spec),
                out_spec: swap(&dn.rhs_spec),
            },
            feature_group_count,
            batch_group_count,
            preferred_element_type: None,
        };
        ad::bind(interp, Prim::block(conv), &[lhs.clone(), g.clone()])
    }
}

/// Python's text of a tuple of these items (`(x,)` for one).
fn python_tuple(items: Vec<String>) -> String {
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

/// Python's text of a tuple of `(low, high)` pairs.
fn pairs_tuple(pairs: &[(i64, i64)]) -> String {
    python_tuple(pairs.iter().map(|(lo, hi)| format!("({lo}, {hi})")).collect())
}

/// `core.dilate_dim`: `max(0, 1 + dilation · (d - 1))`.
fn dilate(d: usize, dilation: usize) -> i64 {
    if dilation == 1 {
        d as i64
    } else {
        (1 + dilation as i64 * (d as i64 - 1)).max(0)
    }
}

/// `flat` as a multi-index over the axes whose sizes `size(d)` gives, last axis fastest.
fn unflatten(mut flat: usize, index: &mut [usize], size: impl Fn(usize) -> usize) {
    for d in (0..index.len()).rev() {
        let n = size(d).max(1);
        index[d] = flat % n;
        flat /= n;
    }
}

/// JAX's `_reshape_axis_out_of(src, size1, x)`: axis `src` split into `(size1, rest)`.
fn reshape_axis_out_of(interp: &mut Interp, src: usize, size1: usize, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let mut shape = x.aval.shape.to_vec();
    let n = shape[src];
    shape.splice(src..=src, [size1, n / size1.max(1)]);
    ad::bind(interp, Prim::Reshape { new_sizes: shape }, std::slice::from_ref(x))
}

/// JAX's `_reshape_axis_into(src, dst, x)`: axis `src` merged into axis `dst` (numbered
/// without `src`), as its major part.
fn reshape_axis_into(interp: &mut Interp, src: usize, dst: usize, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let shape = x.aval.shape.to_vec();
    let mut perm: Vec<usize> = (0..shape.len()).filter(|&i| i != src).collect();
    perm.insert(dst, src);
    let moved = ad::bind(interp, Prim::Transpose { permutation: perm }, std::slice::from_ref(x))?;
    let mut new_shape: Vec<usize> = shape.iter().enumerate().filter(|&(i, _)| i != src).map(|(_, &d)| d).collect();
    new_shape[dst] *= shape[src];
    ad::bind(interp, Prim::Reshape { new_sizes: new_shape }, &[moved])
}
