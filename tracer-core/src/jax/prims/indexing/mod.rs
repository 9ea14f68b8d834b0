//! `gather` and `scatter` as tracelens models them: NumPy indexing with one integer array
//! input per array item of the index. Their abstract evaluation, kernel table and derivative
//! rules here; the selection's shape and the two kernels in [`kernels`].

pub mod batching;
pub mod kernels;

use std::rc::Rc;

use smallvec::smallvec;

use super::{arg, families, type_error, Jvping, RuleResult, Tangents, Transposing};
use crate::diagnostics::Code;
use crate::interp::Interp;
use crate::jax::ad::{
    self, binary, bind, broadcast_to, compare, konst, mask_as, no_rule, no_rule_for, sum_to_shape, zeros, AdError, AdResult,
};
use crate::jax::array::{Array, NdData};
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::{BinaryPrim, CmpPrim, Eqn, FillValue, IndexItem, IndexMode, Prim, ScatterOp};
use kernels::selection_shape;

/// `gather(operand, *index_arrays)`: the selection's shape, the operand's dtype.
pub fn gather(prim: &Prim, ins: &[&Aval], index: &[IndexItem]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let index_shapes: Vec<&[usize]> = ins[1..].iter().map(|a| &a.shape[..]).collect();
    let shape = selection_shape(&x.shape, index, &index_shapes).map_err(type_error)?;
    Ok(smallvec![x.with_shape(&shape)])
}

/// `scatter(operand, updates, *index_arrays)`: the operand's aval.
pub fn scatter(prim: &Prim, ins: &[&Aval], _index: Option<&[IndexItem]>) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    arg(prim, ins, 1)?;
    Ok(smallvec![x.clone()])
}

/// The kernel in f64 of `gather` and `scatter` (`jax/indexing.rs`); `None` for a case without
/// one (a `scatter` whose index is not modelled).
pub(crate) fn kernel(prim: &Prim, ins: &[Rc<NdData>], out_shape: &[usize], out_dtype: DType) -> Option<NdData> {
    Some(match prim {
        Prim::Gather { mode, fill_value, index } => kernels::gather(&ins[0], &ins[1..], index, *mode, *fill_value, out_dtype, out_shape)?,
        Prim::Scatter { op, mode, index: Some(index), .. } if ins.len() >= 2 => {
            kernels::scatter(*op, &ins[0], &ins[1], &ins[2..], index, *mode, out_dtype)?
        }
        Prim::Scatter { .. } | families::all_but!(indexing) => return None,
    })
}

// ---------------------------------------------------------------------------------------
// The derivative rules, as JAX's `_gather_jvp_rule`, `_gather_transpose_rule` and the
// scatter rules write them.

/// The JVP rule of `gather` and `scatter`: the output's tangent from the operands'.
pub(crate) fn jvp_rule(interp: &mut Interp, j: Jvping) -> Tangents {
    let Jvping { eqn, ins, out, ts } = j;
    let instantiate = |interp: &mut Interp, i: usize| ad::instantiate(interp, ins, ts, i);
    let t = match &eqn.prim {
        // Linear in the operand; the index arrays have no tangent. JAX's `_gather_jvp_rule`
        // gathers the tangent with a fill of 0.
        Prim::Gather { mode, index, .. } => {
            let Some(t) = &ts[0] else { return Ok(vec![None]) };
            let operands: Vec<Rc<Array>> = std::iter::once(t.clone()).chain(ins[1..].iter().cloned()).collect();
            bind(interp, zero_fill_gather(*mode, index), &operands)?
        }
        // `scatter-add`, `scatter` (set) and `dynamic_update_slice` are linear in (operand,
        // updates) together.
        Prim::Scatter { op: ScatterOp::Add | ScatterOp::Set, index: Some(_), .. } if ins.len() >= 2 => {
            if ts[0].is_none() && ts[1].is_none() {
                return Ok(vec![None]);
            }
            let mut operands = vec![instantiate(interp, 0)?, instantiate(interp, 1)?];
            operands.extend(ins[2..].iter().cloned());
            bind(interp, eqn.prim.clone(), &operands)?
        }
        Prim::Scatter { op: ScatterOp::Mul, mode, index: Some(index), unique_indices } if ins.len() >= 2 => {
            let mut total: Option<Rc<Array>> = None;
            // Linear in the operand: its tangent is scaled at the same places.
            if let Some(tx) = &ts[0] {
                let operands: Vec<Rc<Array>> = [tx.clone(), ins[1].clone()].into_iter().chain(ins[2..].iter().cloned()).collect();
                total = Some(bind(interp, eqn.prim.clone(), &operands)?);
            }
            // JAX's `_scatter_mul_jvp_rhs`: `x * scatter_add(zeros, idx, tu)`, for unique indices.
            if let Some(tu) = &ts[1] {
                unique_scatter_indices(interp, *unique_indices)?;
                let operands: Vec<Rc<Array>> =
                    [zeros(interp, &ins[0].aval)?, tu.clone()].into_iter().chain(ins[2..].iter().cloned()).collect();
                let prim = Prim::Scatter { op: ScatterOp::Add, mode: *mode, index: Some(index.clone()), unique_indices: false };
                let spread = bind(interp, prim, &operands)?;
                let term = binary(interp, BinaryPrim::Mul, &ins[0], &spread)?;
                total = Some(match total {
                    Some(acc) => binary(interp, BinaryPrim::Add, &acc, &term)?,
                    None => term,
                });
            }
            return Ok(vec![total]);
        }
        Prim::Scatter { op: ScatterOp::Min | ScatterOp::Max, mode, index: Some(index), .. } if ins.len() >= 2 => {
            if ts[0].is_none() && ts[1].is_none() {
                return Ok(vec![None]);
            }
            let sc = ExtremalScatter::new(interp, eqn, *mode, index, ins, out)?;
            let (tx, tu) = (instantiate(interp, 0)?, instantiate(interp, 1)?);
            let picked = sc.gather(interp, &tx)?;
            let from_x = binary(interp, BinaryPrim::Mul, &picked, &sc.operand_coef)?;
            let tu = broadcast_to(interp, &tu, &sc.selected)?;
            let from_u = binary(interp, BinaryPrim::Mul, &tu, &sc.update_coef)?;
            let moved = binary(interp, BinaryPrim::Add, &from_x, &from_u)?;
            sc.scatter_add(interp, &tx, &moved)?
        }
        Prim::Scatter { .. } | families::all_but!(indexing) => return Err(no_rule(eqn)),
    };
    Ok(vec![Some(t)])
}

/// The transpose rule of `gather` and `scatter`: the cotangents of the `active` operands.
pub(crate) fn transpose_rule(interp: &mut Interp, t: Transposing, cts: &mut [Option<Rc<Array>>]) -> AdResult<()> {
    let Transposing { eqn, ins, out, g, active } = t;
    match &eqn.prim {
        // The transpose of reading places is adding into them (JAX's `_gather_transpose_rule`).
        Prim::Gather { mode, index, .. } => {
            if active[0] {
                // Into strongly typed zeros, as JAX's `_gather_transpose_rule`.
                let mut operands = vec![zeros(interp, &ins[0].aval.clone().weak(false))?, g.clone()];
                operands.extend(ins[1..].iter().cloned());
                let prim = Prim::Scatter { op: ScatterOp::Add, mode: *mode, index: Some(index.clone()), unique_indices: false };
                cts[0] = Some(bind(interp, prim, &operands)?);
            }
        }
        Prim::Scatter { op: op @ (ScatterOp::Add | ScatterOp::Set), mode, index: Some(index), .. } if ins.len() >= 2 => {
            if active[0] {
                cts[0] = Some(if *op == ScatterOp::Add {
                    g.clone()
                } else {
                    // What `set` overwrote does not reach the output.
                    let mut operands = vec![g.clone(), zeros(interp, &ins[1].aval)?];
                    operands.extend(ins[2..].iter().cloned());
                    bind(interp, eqn.prim.clone(), &operands)?
                });
            }
            if active[1] {
                // With an index array, `set` may write one place twice, and only the last
                // update reaches the output: not modelled.
                if *op == ScatterOp::Set && index.iter().any(|i| matches!(i, IndexItem::Array)) {
                    return Err(no_rule(eqn));
                }
                let operands: Vec<Rc<Array>> = std::iter::once(g.clone()).chain(ins[2..].iter().cloned()).collect();
                let prim = zero_fill_gather(*mode, index);
                let picked = bind(interp, prim, &operands)?;
                cts[1] = Some(sum_to_shape(interp, &picked, &ins[1].aval.shape)?);
            }
        }
        // JAX's `_scatter_mul_transpose_rule`: the operand's cotangent is scaled by the same
        // updates; the updates' is `(g · x)[idx]`, for unique indices only.
        Prim::Scatter { op: ScatterOp::Mul, mode, index: Some(index), unique_indices } if ins.len() >= 2 => {
            if active[1] {
                unique_scatter_indices(interp, *unique_indices)?;
                let gx = binary(interp, BinaryPrim::Mul, g, &ins[0])?;
                let operands: Vec<Rc<Array>> = std::iter::once(gx.clone()).chain(ins[2..].iter().cloned()).collect();
                let prim = zero_fill_gather(*mode, index);
                let picked = bind(interp, prim, &operands)?;
                cts[1] = Some(sum_to_shape(interp, &picked, &ins[1].aval.shape)?);
            }
            if active[0] {
                let operands: Vec<Rc<Array>> = [g.clone(), ins[1].clone()].into_iter().chain(ins[2..].iter().cloned()).collect();
                cts[0] = Some(bind(interp, eqn.prim.clone(), &operands)?);
            }
        }
        // The transpose of `_scatter_extremal_jvp`'s linear map.
        Prim::Scatter { op: ScatterOp::Min | ScatterOp::Max, mode, index: Some(index), .. } if ins.len() >= 2 => {
            let sc = ExtremalScatter::new(interp, eqn, *mode, index, ins, out)?;
            let picked = sc.gather(interp, g)?;
            if active[0] {
                let back = binary(interp, BinaryPrim::Mul, &picked, &sc.operand_coef)?;
                let zero = zeros(interp, &g.aval)?;
                let spread = sc.scatter_add(interp, &zero, &back)?;
                cts[0] = Some(binary(interp, BinaryPrim::Add, g, &spread)?);
            }
            if active[1] {
                let to_u = binary(interp, BinaryPrim::Mul, &picked, &sc.update_coef)?;
                cts[1] = Some(sum_to_shape(interp, &to_u, &ins[1].aval.shape)?);
            }
        }
        Prim::Scatter { .. } | families::all_but!(indexing) => return Err(no_rule(eqn)),
    }
    Ok(())
}

/// The gather JAX's rules bind on tangents and cotangents (`_gather_jvp_rule`, the
/// transposes of `scatter-add` and `scatter-mul`): the equation's mode with `fill_value=0`,
/// so what `FILL_OR_DROP` fills or drops gets a zero derivative.
pub(crate) fn zero_fill_gather(mode: IndexMode, index: &[IndexItem]) -> Prim {
    Prim::Gather { mode, fill_value: Some(FillValue::Int(0)), index: index.to_vec() }
}

/// JAX differentiates `scatter-mul` with respect to its updates only when the equation says
/// its indices are unique (`unique_indices=True`: passed by the caller, or set by JAX when no
/// index array has an axis), and raises `NotImplementedError` otherwise. With the flag it
/// applies the rule for unique indices whatever the indices are, duplicates included.
fn unique_scatter_indices(interp: &Interp, unique_indices: bool) -> AdResult<()> {
    if unique_indices {
        return Ok(());
    }
    Err(AdError::Raise(interp.raise(
        "NotImplementedError",
        Code::PythonException,
        "scatter_mul gradients are only implemented if `unique_indices=True`",
    )))
}

/// `scatter-min`/`scatter-max` (`x.at[idx].min(u)`): JAX's `_scatter_extremal_jvp`. At each
/// written place the operand and the updates that tie for the result share its tangent
/// evenly; the others get none. Both the JVP and the transpose are linear maps built from
/// these coefficients, which have the shape of the selection `x[idx]`.
struct ExtremalScatter {
    mode: IndexMode,
    index: Vec<IndexItem>,
    indices: Vec<Rc<Array>>,
    selected: Vec<usize>,
    operand_coef: Rc<Array>,
    update_coef: Rc<Array>,
}

impl ExtremalScatter {
    fn new(
        interp: &mut Interp,
        eqn: &Eqn,
        mode: IndexMode,
        index: &[IndexItem],
        ins: &[Rc<Array>],
        out: &Rc<Array>,
    ) -> AdResult<ExtremalScatter> {
        let (x, u) = (&ins[0], &ins[1]);
        let indices: Vec<Rc<Array>> = ins[2..].to_vec();
        let shapes: Vec<&[usize]> = indices.iter().map(|a| a.aval.shape.as_slice()).collect();
        let selected = selection_shape(&x.aval.shape, index, &shapes).map_err(|_| no_rule(eqn))?;
        let mut sc = ExtremalScatter {
            mode,
            index: index.to_vec(),
            indices,
            selected: selected.clone(),
            operand_coef: x.clone(),
            update_coef: x.clone(),
        };
        let dt = x.aval.dtype;
        let sel = Aval::new(&selected, dt);
        let ub = broadcast_to(interp, u, &selected)?;
        let initial = sc.gather(interp, x)?;
        let target = sc.gather(interp, out)?;
        let successful = compare(interp, CmpPrim::Eq, &ub, &target)?;
        let retained = compare(interp, CmpPrim::Eq, &initial, &target)?;
        let zero_x = zeros(interp, &x.aval.clone().weak(false))?;
        let zero_sel = zeros(interp, &sel)?;
        let one_sel = crate::jax::apply1(interp, Prim::full(1.0, &sel), &[])?;
        let wins = mask_as(interp, &successful, dt, false)?;
        let wins_at = sc.scatter_add(interp, &zero_x, &wins)?;
        let num_updates = sc.gather(interp, &wins_at)?;
        let refs_at = sc.scatter_add(interp, &zero_x, &one_sel)?;
        let num_refs = sc.gather(interp, &refs_at)?;
        // JAX divides by counts that are 0 where the result is selected away (or, for
        // dropped out-of-bounds updates, scattered nowhere); dividing by at least 1 gives the
        // same values without the intermediate infinities that TL301 would report.
        let one = konst(1.0, &sel);
        let safe_updates = binary(interp, BinaryPrim::Max, &num_updates, &one)?;
        let safe_refs = binary(interp, BinaryPrim::Max, &num_refs, &one)?;
        let plus_one = binary(interp, BinaryPrim::Add, &num_updates, &one)?;
        let share_with_operand = binary(interp, BinaryPrim::Div, &one, &plus_one)?;
        let share_among_updates = binary(interp, BinaryPrim::Div, &one, &safe_updates)?;
        let update_share = bind(interp, Prim::Select, &[retained.clone(), share_among_updates, share_with_operand.clone()])?;
        sc.update_coef = bind(interp, Prim::Select, &[successful, zero_sel.clone(), update_share])?;
        let operand_share = bind(interp, Prim::Select, &[retained, zero_sel, share_with_operand])?;
        let lost = binary(interp, BinaryPrim::Sub, &operand_share, &one)?;
        sc.operand_coef = binary(interp, BinaryPrim::Div, &lost, &safe_refs)?;
        Ok(sc)
    }

    fn gather(&self, interp: &mut Interp, a: &Rc<Array>) -> AdResult<Rc<Array>> {
        let operands: Vec<Rc<Array>> = std::iter::once(a.clone()).chain(self.indices.iter().cloned()).collect();
        // `lax.gather`'s defaults, as `_scatter_extremal_jvp` calls it: `FILL_OR_DROP` with
        // the dtype's fill (NaN for floats).
        let prim = Prim::Gather { mode: IndexMode::FillOrDrop, fill_value: None, index: self.index.clone() };
        bind(interp, prim, &operands)
    }

    fn scatter_add(&self, interp: &mut Interp, base: &Rc<Array>, updates: &Rc<Array>) -> AdResult<Rc<Array>> {
        let operands: Vec<Rc<Array>> = [base.clone(), updates.clone()].into_iter().chain(self.indices.iter().cloned()).collect();
        let prim = Prim::Scatter { op: ScatterOp::Add, mode: self.mode, index: Some(self.index.clone()), unique_indices: false };
        bind(interp, prim, &operands)
    }
}

/// The batching rules of `gather` and `scatter` ([`batching`]); a `scatter` whose index is
/// not modelled has none.
pub(crate) fn batch_rule(
    interp: &mut Interp,
    prim: &Prim,
    ins: &[Rc<Array>],
    dims: &[super::batching::BDim],
) -> super::batching::BatchResult {
    match prim {
        Prim::Gather { .. } => batching::gather(interp, prim, ins, dims),
        Prim::Scatter { .. } => batching::scatter(interp, prim, ins, dims),
        families::all_but!(indexing) => Err(no_rule_for(prim)),
    }
}

/// Whether [`batch_rule`] batches `prim`.
pub(crate) fn has_batch_rule(prim: &Prim) -> bool {
    match prim {
        Prim::Gather { .. } => true,
        Prim::Scatter { index, .. } => index.is_some(),
        families::all_but!(indexing) => false,
    }
}
