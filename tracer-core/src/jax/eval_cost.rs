//! What computing one primitive's value would cost, estimated from avals before the
//! evaluator allocates or loops: a value over the memory budget or too costly to compute in
//! a few hundred milliseconds stays unknown ("not computed"), as one over the element budget
//! does. A kernel cannot be stopped halfway, so this is decided before it starts.

use super::aval::Aval;
use super::ir::Prim;
use super::prims::conv::Conv;
use crate::jax::prims::families;

/// Multiply-adds one value may cost: about half a second of the evaluator's slowest kernels
/// (the decompositions) on one core, a tenth of that for a product.
pub const MAX_COST: u128 = 1_000_000_000;

/// Multiply-adds one random draw costs: about 100 ns a draw for `normal` and `categorical`'s
/// Gumbel noise on this evaluator (4,000,000 draws of either in 0.41-0.44 s of CPU), where
/// `MAX_COST` multiply-adds take half a second. Without it a `categorical` of 840 samples over
/// 65,536 classes (55 million draws) counted as 66,000 and ran for five seconds in one kernel.
const DRAW_COST: u128 = 200;

/// Multiply-adds of one word of `random_bits`: Threefry alone, about a sixth of a draw.
const BITS_COST: u128 = 32;

/// Why a value over `MAX_COST` is not computed.
pub const TOO_COSTLY: &str = "too costly to compute (over the evaluator's work budget)";

/// Why a value over the memory budget is not computed.
pub const OVER_MEMORY: &str = "too large to compute (over the memory budget)";

/// Estimated multiply-adds of `prim` on inputs of `inputs` avals giving `out`.
pub fn cost(prim: &Prim, inputs: &[&Aval], out: &Aval) -> u128 {
    let moved = inputs.iter().fold(out.size(), |total, a| total.saturating_add(a.size()));
    match prim {
        // One multiply-add per output element and contracted index.
        Prim::DotGeneral { lhs_contract, .. } => {
            let contracted = inputs
                .first()
                .map(|lhs| lhs_contract.iter().fold(1u128, |k, &d| k.saturating_mul(lhs.shape.get(d).copied().unwrap_or(1) as u128)))
                .unwrap_or(1);
            out.size().saturating_mul(contracted).saturating_add(moved)
        }
        // Decompositions, solves and inverses: a few n³ per matrix of the batch.
        Prim::Linalg(_) => inputs.iter().fold(moved, |total, a| total.saturating_add(cubic(a))),
        // A convolution: per output element, one multiply-add per kernel element of one
        // output feature (`rhs_spec[0]` is the kernel's output-feature axis).
        Prim::Block(block) => match (block.0.as_any().downcast_ref::<Conv>(), inputs.get(1)) {
            (Some(conv), Some(kernel)) => {
                let features = conv.dimension_numbers.rhs_spec.first().and_then(|&d| kernel.shape.get(d)).copied().unwrap_or(1).max(1);
                out.size().saturating_mul(kernel.size() / features as u128).saturating_add(moved)
            }
            _ => moved,
        },
        Prim::Sort { .. } | Prim::TopK { .. } | Prim::TopKIndices { .. } => moved.saturating_mul(u128::from(128 - moved.leading_zeros())),
        // A draw is Threefry's rounds and then the distribution's transform; `categorical`
        // draws Gumbel noise for every class of every sample (its logits' class axis, bounded
        // here by their largest dimension).
        Prim::Random { dist, .. } => {
            let per_sample = match *dist {
                "categorical" => inputs.iter().skip(1).flat_map(|a| a.shape.iter()).copied().max().unwrap_or(1).max(1) as u128,
                _ => 1,
            };
            out.size().saturating_mul(per_sample).saturating_mul(DRAW_COST).saturating_add(moved)
        }
        Prim::RandomBits { .. } => out.size().saturating_mul(BITS_COST).saturating_add(moved),
        families::elementwise!()
        | families::movement!()
        | Prim::RandomSeed { .. }
        | Prim::RandomSplit { .. }
        | Prim::RandomFoldIn
        | Prim::RandomUnwrap
        | Prim::RandomWrap
        | Prim::RandomClone
        | families::control_flow!()
        | families::calls!()
        | Prim::Iota { .. }
        | Prim::Full { .. }
        | Prim::Reduce { .. }
        | Prim::ArgReduce { .. }
        | Prim::Cumulative { .. }
        | Prim::Gather { .. }
        | Prim::Scatter { .. }
        | Prim::DebugCallback
        | Prim::Opaque(_) => moved,
    }
}

/// `4 n³` per matrix of a batch of `[..., m, n]` matrices (`n` the larger side).
fn cubic(a: &Aval) -> u128 {
    let nd = a.shape.len();
    if nd < 2 {
        return 0;
    }
    let (m, n) = (a.shape[nd - 2] as u128, a.shape[nd - 1] as u128);
    let side = m.max(n);
    let batch = a.shape[..nd - 2].iter().fold(1u128, |b, &d| b.saturating_mul(d as u128));
    batch.saturating_mul(side.saturating_mul(side).saturating_mul(side)).saturating_mul(4)
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;
    use crate::jax::dtypes::DType;

    fn dot() -> Prim {
        Prim::DotGeneral { lhs_contract: vec![1], rhs_contract: vec![0], lhs_batch: vec![], rhs_batch: vec![] }
    }

    fn a_product_costs_its_multiply_adds() {
        let a = Aval::new(&[1000, 1000], DType::F32);
        assert!(cost(&dot(), &[&a, &a], &a) <= MAX_COST + 3_000_000);
        let b = Aval::new(&[2000, 2000], DType::F32);
        assert!(cost(&dot(), &[&b, &b], &b) > MAX_COST);
    }

    crate::unit_tests::list![a_product_costs_its_multiply_adds];
}
