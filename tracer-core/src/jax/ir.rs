//! The trace IR: jaxpr-like bodies of equations over typed variables, printed in JAX's
//! text form (`{ lambda ; a:f32[8,4]. let b:f32[8] = ... in (b,) }`). Grammar: docs/ir.md.
//!
//! Size: `Prim` (~190 lines of variants and their parameters), its printing, and
//! `check_ir`/`resolve_control` over control-flow bodies; each primitive's rule is in `jax/prims/`.

use crate::jax::prims::families;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::rc::Rc;

use super::array::Array;
use super::aval::Aval;
use super::dtypes::DType;
use crate::interp::Site;

pub use super::array::VarId;

#[derive(Clone, Debug)]
pub enum Atom {
    Var(VarId),
    /// A scalar literal, printed `2.0:f32[]`.
    Lit(f64, Aval),
}

#[derive(Clone, Debug)]
pub struct Eqn {
    pub prim: Prim,
    pub inputs: Vec<Atom>,
    pub outputs: Vec<(VarId, Aval)>,
    /// The user's line that bound it.
    pub site: Option<Site>,
    /// Bodies of higher-order primitives (pjit, scan, cond branches, while cond/body).
    pub bodies: Vec<Rc<Jaxpr>>,
    /// The JAX API the user called that bound it (`jax.numpy.dot` for a `dot_general`): the
    /// reproducer emits calls at the level the user wrote.
    pub api: Option<super::surface::JaxFn>,
}

#[derive(Clone, Debug, Default)]
pub struct Jaxpr {
    pub constvars: Vec<(VarId, Aval)>,
    pub invars: Vec<(VarId, Aval)>,
    pub eqns: Vec<Eqn>,
    pub outvars: Vec<Atom>,
    pub var_avals: Vec<Aval>,
}

/// A closed-over value of a jaxpr: a concrete array (a constant) or a tracer of an outer trace.
#[derive(Clone, Debug)]
pub struct Const {
    pub var: VarId,
    pub value: Rc<Array>,
}

/// The parameters of `Prim::Opaque`: the name the jaxpr prints and the output's aval.
#[derive(Clone, Debug, PartialEq)]
pub struct OpaqueOp {
    pub name: &'static str,
    pub out: Aval,
}

/// The primitives, with their parameters. Each has a CPU kernel in `eval.rs` where one exists.
#[derive(Clone, Debug, PartialEq)]
pub enum Prim {
    Unary(UnaryPrim),
    Binary(BinaryPrim),
    Compare(CmpPrim),
    Select,
    Clamp,
    IntegerPow(i32),
    ConvertElementType {
        new_dtype: DType,
        weak_type: bool,
    },
    BroadcastInDim {
        shape: Vec<usize>,
        broadcast_dimensions: Vec<usize>,
    },
    Reshape {
        new_sizes: Vec<usize>,
    },
    Transpose {
        permutation: Vec<usize>,
    },
    Squeeze {
        dimensions: Vec<usize>,
    },
    Rev {
        dimensions: Vec<usize>,
    },
    Slice {
        start: Vec<usize>,
        limit: Vec<usize>,
        strides: Vec<usize>,
    },
    DynamicSlice {
        sizes: Vec<usize>,
    },
    DynamicUpdateSlice,
    Concatenate {
        dimension: usize,
    },
    Pad {
        config: Vec<(i64, i64, i64)>,
    },
    Iota {
        dtype: DType,
        shape: Vec<usize>,
        dimension: usize,
    },
    /// An array of `shape` filled with `value` (JAX binds `broadcast_in_dim` of a constant).
    Full {
        value: f64,
        shape: Vec<usize>,
        dtype: DType,
        weak_type: bool,
    },
    Reduce {
        op: ReduceOp,
        axes: Vec<usize>,
    },
    ArgReduce {
        op: ArgOp,
        axis: usize,
        index_dtype: DType,
    },
    Cumulative {
        op: ReduceOp,
        axis: usize,
        reverse: bool,
    },
    Sort {
        dimension: usize,
        num_keys: usize,
    },
    DotGeneral {
        lhs_contract: Vec<usize>,
        rhs_contract: Vec<usize>,
        lhs_batch: Vec<usize>,
        rhs_batch: Vec<usize>,
    },
    /// NumPy indexing with integer arrays (`x[idx]`, `x[1:, idx]`, `jnp.take`): the inputs
    /// are the operand and then one integer array per `IndexItem::Array` of `index`.
    /// An out-of-bounds index reads the nearest element under `Clip` and `PromiseInBounds`
    /// (what XLA does for both) and `fill_value` under `FillOrDrop` (`None`: JAX's default
    /// for the dtype, NaN for floats, the minimum of a signed and the maximum of an unsigned
    /// integer dtype, `True`).
    Gather {
        mode: IndexMode,
        fill_value: Option<FillValue>,
        index: Vec<IndexItem>,
    },
    /// `x.at[index].set/add/mul/min/max(updates)`: the inputs are the operand, the updates
    /// and one integer array per `IndexItem::Array`. `index` is `None` where the indexing
    /// expression is not modelled (a boolean mask): the value is then not computed.
    Scatter {
        op: ScatterOp,
        mode: IndexMode,
        index: Option<Vec<IndexItem>>,
        /// JAX's `unique_indices`: passed as `.at[idx].mul(u, unique_indices=True)`, or set
        /// by JAX itself when no index array has an axis (`x.at[2]`, `x.at[1:3]`). Only
        /// `scatter-mul`'s derivative with respect to its updates depends on it.
        unique_indices: bool,
    },
    /// `lax.top_k`'s values along the last axis: the `k` largest in XLA's total order
    /// (`nan` first, `0.` before `-0.`), equal ones in index order.
    TopK {
        k: usize,
    },
    /// `lax.top_k`'s indices (its second output, an equation of its own here).
    TopKIndices {
        k: usize,
    },
    RandomBits {
        shape: Vec<usize>,
    },
    /// `random_seed`: a typed key per seed (`jax.random.key`), or with `raw` its `uint32`
    /// data on a last axis of two words (`PRNGKey`, JAX's `random_unwrap` of the key fused in).
    RandomSeed {
        raw: bool,
    },
    RandomSplit {
        shape: Vec<usize>,
    },
    RandomFoldIn,
    RandomUnwrap,
    RandomWrap,
    RandomClone,
    /// A stand-in for a random draw: `random_<dist>` (its values are not computed yet).
    Random {
        dist: &'static str,
        shape: Vec<usize>,
        dtype: DType,
    },
    Pjit {
        name: String,
    },
    /// `lax.scan` (and `fori_loop` with static bounds): inputs are the body's consts, the carry,
    /// then the scanned arrays; `bodies` is `[jaxpr]`, whose constvars are the consts.
    Scan {
        length: usize,
        reverse: bool,
        num_carry: usize,
    },
    /// `lax.cond`/`switch`: inputs are the branch index, each branch's consts in branch order,
    /// then the operands; `bodies` are the branches (index 0 is `false_fun` for `cond`).
    Cond {
        branches: usize,
    },
    /// `lax.while_loop` (and `fori_loop` with traced bounds): inputs are the cond consts, the
    /// body consts, then the carry; `bodies` are `[cond_jaxpr, body_jaxpr]`.
    While,
    /// A `vmap` inside another trace (tracelens' own equation: JAX batches the body instead).
    /// Inputs are the body's consts, then the arguments' array leaves; `in_axes` has one entry
    /// per argument leaf, every output is stacked along `out_axes`.
    Vmap {
        axis_size: usize,
        in_axes: Vec<Option<usize>>,
        out_axes: usize,
    },
    /// A call of a `jax.custom_jvp`/`custom_vjp` function inside a trace, as a marker after the
    /// equations of the function's own body: inputs are the array leaves of its arguments, then
    /// those of its outputs; outputs are the latter, unchanged. Its derivative is the user's
    /// rule (`custom_rules/`), never that of the body.
    CustomJvpCall {
        call: Rc<super::custom_rules::CustomCall>,
    },
    CustomVjpCall {
        call: Rc<super::custom_rules::CustomCall>,
    },
    Remat,
    DebugCallback,
    StopGradient,
    /// A jnp-level operation without a primitive-level model yet (name kept for the IR): its
    /// output aval is a parameter, which the model that binds it computed with JAX's rules
    /// (as `Full` carries its shape), so that its rule, too, gives the aval.
    Opaque(OpaqueOp),
    /// A dense linear-algebra operation on the last two axes, batched over the leading ones
    /// (`jnp.linalg.solve`, `inv`, `cholesky`, `det`, `slogdet`, `eigh`, `svd`, `qr`,
    /// `jax.scipy.linalg.solve_triangular`); kernels in `linalg.rs`.
    Linalg(LinalgOp),
    /// A primitive written as one block (`prims::Block`: `conv_general_dilated`), its
    /// parameters, rules and properties together.
    Block(super::prims::BlockPrim),
}

/// The symmetric matrix `eigh` decomposes: `jnp.linalg.eigh`'s default symmetrises its
/// operand, `(a + aᵀ) / 2`, and the derivative sees the symmetrised tangent; with
/// `symmetrize_input=False` LAPACK reads one triangle (`lower=True` by default, `UPLO='U'`
/// for the upper one) and JAX's `eigh_jvp_rule` takes the tangent as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EighInput {
    Symmetrized,
    Lower,
    Upper,
}

/// The operations of [`Prim::Linalg`]. JAX composes them from `lu`, `triangular_solve`
/// and `cholesky`; here each is one equation named after the `jnp.linalg` function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinalgOp {
    /// JAX's `custom_linear_solve` in `jnp.linalg.solve`: inputs `a[..., m, m]`, its `lu`
    /// factors and permutation (of `stop_gradient(a)`), `b[..., m, n]` and the `lu_solve` of
    /// `b` with those factors, all with the same batch axes; its value is that last input,
    /// its derivatives JAX's rules (`transpose`: the solve with `aᵀ`, `trans=1`).
    LinearSolve {
        transpose: bool,
    },
    Cholesky,
    /// JAX's `custom_jvp` `_det` (`n` of 1 or from 4): inputs `a` and the value
    /// `sign · exp(logabsdet)` computed on `stop_gradient(a)`, which it passes on; its
    /// derivative is JAX's `_det_jvp`.
    Det,
    /// `det(a)` of a 2×2 or 3×3 `a` as XLA computes JAX's formula (`_det_2x2`, `_det_3x3`)
    /// inside `jit`: each `x · y + z` of the formula contracted into one fused multiply-add.
    /// Inputs `a` and the formula's value bound as primitives, whose derivative it passes on.
    DetFused {
        double: bool,
    },
    /// `slogdet(a).sign` of JAX's `custom_jvp` `_slogdet_lu`: inputs `a` and the value.
    SlogdetSign,
    /// `slogdet(a).logabsdet`, likewise.
    SlogdetLogAbs,
    /// The cofactor matrix (the transposed adjugate, `det(a) · inv(a)ᵀ` when `a` is
    /// invertible): the derivative of `det`, bound only by its JVP and transpose rules.
    Cofactor,
    /// The derivative of the cofactor matrix at `a` along the second input `t` (`a`'s
    /// Hessian of `det` applied to `t`, a self-adjoint linear map of `t`): bound only by
    /// the rules of `cofactor`, so `hessian(det)` follows. Not computed for a singular `a`.
    CofactorJvp,
    /// `lax.linalg.triangular_solve(a, b, left_side=True)`: `op(a) x = b` for `a[..., m, m]`
    /// (only its `lower` triangle is read, its diagonal taken as ones when
    /// `unit_diagonal`), `op(a)` being `aᵀ` when `transpose_a`, and `b[..., m, n]`.
    TriangularSolve {
        lower: bool,
        transpose_a: bool,
        unit_diagonal: bool,
    },
    /// `eigh(a).eigenvalues` of the matrix `input` makes of `a`, ascending.
    EighValues {
        input: EighInput,
    },
    /// `eigh(a).eigenvectors`, as columns in the order of the eigenvalues.
    EighVectors {
        input: EighInput,
    },
    /// `svd(a).S` for `a[..., m, n]`: the `min(m, n)` singular values, descending.
    SvdValues,
    /// `svd(a).U`: `[..., m, m]` when `full`, else `[..., m, min(m, n)]`.
    SvdU {
        full: bool,
    },
    /// `svd(a).Vh`: `[..., n, n]` when `full`, else `[..., min(m, n), n]`.
    SvdVh {
        full: bool,
    },
    /// `qr(a).Q`: `[..., m, m]` when `full` (`mode="complete"`), else `[..., m, min(m, n)]`.
    QrQ {
        full: bool,
    },
    /// `qr(a).R`: `[..., m, n]` when `full`, else `[..., min(m, n), n]`.
    QrR {
        full: bool,
    },
    /// `lax.linalg.geqrf(a)[0]`, `a[..., m, n]`: LAPACK's packed QR, `R` on and above the
    /// diagonal and the Householder vectors (their leading 1 implied) below it
    /// (`jnp.linalg.qr(a, mode="raw")` returns it transposed).
    Geqrf,
    /// `lax.linalg.geqrf(a)[1]`: the reflectors' scale factors, `[..., min(m, n)]`.
    GeqrfTaus,
    /// `jnp.linalg.pinv(a)`: singular values not above `rtol` times the largest dropped.
    /// With one operand `rtol` is JAX's default, `10 · max(m, n) · eps`, `eps` being
    /// float64's when `double`, else float32's; a second operand (of `a`'s batch shape)
    /// gives it per matrix.
    Pinv {
        double: bool,
    },
    /// `lax.linalg.lu(a)[0]` for `a[..., m, n]`: the packed factors of LAPACK's `getrf`
    /// (partial pivoting), `L` strictly below the diagonal (its unit diagonal implied) and
    /// `U` on and above it, `[..., m, n]`.
    Lu,
    /// `lax.linalg.lu(a)[1]`: the row swapped with each row, `int32[..., min(m, n)]`.
    LuPivots,
    /// `lax.linalg.lu(a)[2]`: the permutation `p` with `a[..., p, :] = L U`, `int32[..., m]`.
    LuPermutation,
    /// `lax.linalg.lu_pivots_to_permutation(pivots, size)`: the permutation of `0..size`
    /// that the swaps `pivots[..., k]` make, applied in order.
    PivotsToPermutation {
        size: usize,
    },
    /// `jax.scipy.linalg.expm(a)` of `a[..., m, m]` by JAX's Padé approximation with scaling
    /// and squaring: the degree and the scaling chosen from `a`'s 1-norm with float64's
    /// thresholds when `double`, else float32's; NaN when more than `max_squarings`
    /// squarings would be needed; `upper_triangular` solves with `Q`'s upper triangle only.
    Expm {
        double: bool,
        upper_triangular: bool,
        max_squarings: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexMode {
    Clip,
    FillOrDrop,
    PromiseInBounds,
}

/// One entry of a NumPy indexing expression with `...` expanded (`x[2, 1:5:2, idx, None]`).
/// The selection `x[items]` has NumPy's shape: the sliced and new axes in order, and the
/// broadcast shape of the index arrays in place of the first one when the integer entries
/// (arrays and, beside them, static integers) are adjacent, in front otherwise.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexItem {
    /// A static integer, as written (negative counts from the end; may be out of bounds).
    Int(i64),
    /// `start + k * step` for `k` in `0..len`: always in bounds.
    Slice { start: i64, len: usize, step: i64 },
    /// The next integer index array among the equation's inputs.
    Array,
    /// The next index array, whose negative entries do not count from the end: they are out
    /// of bounds (`jnp.take(x, idx, mode='clip')` clamps them to 0, as JAX does).
    RawArray,
    /// `None`: a new axis of size 1.
    NewAxis,
}

impl IndexItem {
    /// Whether the item takes the next index array among the equation's inputs.
    pub fn is_array(&self) -> bool {
        matches!(self, IndexItem::Array | IndexItem::RawArray)
    }
}

/// The `fill_value` of a `gather` as JAX prints it (the Python value given, or the default
/// `jnp` resolves for the dtype).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FillValue {
    Int(i128),
    Float(f64),
    Bool(bool),
}

impl FillValue {
    pub fn as_f64(self) -> f64 {
        match self {
            FillValue::Int(i) => i as f64,
            FillValue::Float(f) => f,
            FillValue::Bool(b) => f64::from(u8::from(b)),
        }
    }

    fn text(self) -> String {
        match self {
            FillValue::Int(i) => i.to_string(),
            FillValue::Float(f) => crate::interp::value::repr_float(f),
            FillValue::Bool(b) => if b { "True" } else { "False" }.into(),
        }
    }
}

impl IndexMode {
    /// `GatherScatterMode.CLIP`, as JAX prints the parameter.
    pub fn text(self) -> &'static str {
        match self {
            IndexMode::Clip => "GatherScatterMode.CLIP",
            IndexMode::FillOrDrop => "GatherScatterMode.FILL_OR_DROP",
            IndexMode::PromiseInBounds => "GatherScatterMode.PROMISE_IN_BOUNDS",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterOp {
    Set,
    Add,
    Mul,
    Min,
    Max,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgOp {
    Max,
    Min,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpPrim {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

macro_rules! prim_names {
    ($name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($variant),* }
        impl $name {
            pub fn name(self) -> &'static str { match self { $($name::$variant => $text),* } }
        }
    };
}

prim_names!(UnaryPrim {
    Neg = "neg", Sign = "sign", Floor = "floor", Ceil = "ceil", Round = "round", IsFinite = "is_finite",
    Exp = "exp", Exp2 = "exp2", Log = "log", Log1p = "log1p", Expm1 = "expm1", Tanh = "tanh", Logistic = "logistic",
    Sin = "sin", Cos = "cos", Tan = "tan", Asin = "asin", Acos = "acos", Atan = "atan", Sinh = "sinh", Cosh = "cosh",
    Asinh = "asinh", Acosh = "acosh", Atanh = "atanh", Sqrt = "sqrt", Rsqrt = "rsqrt", Cbrt = "cbrt", Abs = "abs",
    Not = "not", Erf = "erf", Erfc = "erfc", ErfInv = "erf_inv", Lgamma = "lgamma", Digamma = "digamma", Real = "real", Imag = "imag",
    Conj = "conj", Square = "square", Copy = "copy",
});

prim_names!(BinaryPrim {
    Add = "add", Sub = "sub", Mul = "mul", Div = "div", Rem = "rem", Pow = "pow", Max = "max", Min = "min",
    Atan2 = "atan2", And = "and", Or = "or", Xor = "xor", ShiftLeft = "shift_left", ShiftRightArithmetic = "shift_right_arithmetic",
    ShiftRightLogical = "shift_right_logical", NextAfter = "nextafter", Polygamma = "polygamma",
    Logaddexp = "logaddexp",
});

impl Prim {
    /// `block` bound as a primitive.
    pub fn block(block: impl super::prims::Block + 'static) -> Prim {
        Prim::Block(super::prims::BlockPrim(Rc::new(block)))
    }

    pub fn name(&self) -> String {
        self.label().into_owned()
    }

    /// JAX's name of the primitive, borrowed from a static table where it is one (all but
    /// `reduce_*` and `random_*`): values mode names every computed value's operation, and
    /// only a NaN found makes it a `String`.
    pub fn label(&self) -> Cow<'static, str> {
        match self {
            Prim::Unary(u) => u.name().into(),
            Prim::Binary(b) => b.name().into(),
            Prim::Compare(c) => match c {
                CmpPrim::Eq => "eq",
                CmpPrim::Ne => "ne",
                CmpPrim::Lt => "lt",
                CmpPrim::Le => "le",
                CmpPrim::Gt => "gt",
                CmpPrim::Ge => "ge",
            }
            .into(),
            Prim::Select => "select_n".into(),
            Prim::Clamp => "clamp".into(),
            Prim::IntegerPow(_) => "integer_pow".into(),
            Prim::ConvertElementType { .. } => "convert_element_type".into(),
            Prim::BroadcastInDim { .. } => "broadcast_in_dim".into(),
            Prim::Reshape { .. } => "reshape".into(),
            Prim::Transpose { .. } => "transpose".into(),
            Prim::Squeeze { .. } => "squeeze".into(),
            Prim::Rev { .. } => "rev".into(),
            Prim::Slice { .. } => "slice".into(),
            Prim::DynamicSlice { .. } => "dynamic_slice".into(),
            Prim::DynamicUpdateSlice => "dynamic_update_slice".into(),
            Prim::Concatenate { .. } => "concatenate".into(),
            Prim::Pad { .. } => "pad".into(),
            Prim::Iota { .. } => "iota".into(),
            Prim::Full { .. } => "broadcast_in_dim".into(),
            Prim::Reduce { op, .. } => format!(
                "reduce_{}",
                match op {
                    ReduceOp::Sum => "sum",
                    ReduceOp::Prod => "prod",
                    ReduceOp::Max => "max",
                    ReduceOp::Min => "min",
                    ReduceOp::And => "and",
                    ReduceOp::Or => "or",
                }
            )
            .into(),
            Prim::ArgReduce { op, .. } => if *op == ArgOp::Max { "argmax" } else { "argmin" }.into(),
            Prim::Cumulative { op, .. } => match op {
                ReduceOp::Sum => "cumsum",
                ReduceOp::Prod => "cumprod",
                ReduceOp::Max => "cummax",
                _ => "cummin",
            }
            .into(),
            Prim::Sort { .. } => "sort".into(),
            Prim::DotGeneral { .. } => "dot_general".into(),
            Prim::Gather { .. } => "gather".into(),
            Prim::Scatter { op, .. } => match op {
                ScatterOp::Set => "scatter",
                ScatterOp::Add => "scatter-add",
                ScatterOp::Mul => "scatter-mul",
                ScatterOp::Min => "scatter-min",
                ScatterOp::Max => "scatter-max",
            }
            .into(),
            Prim::TopK { .. } => "top_k".into(),
            Prim::TopKIndices { .. } => "top_k_indices".into(),
            Prim::RandomBits { .. } => "random_bits".into(),
            Prim::RandomSeed { .. } => "random_seed".into(),
            Prim::RandomSplit { .. } => "random_split".into(),
            Prim::RandomFoldIn => "random_fold_in".into(),
            Prim::RandomUnwrap => "random_unwrap".into(),
            Prim::RandomWrap => "random_wrap".into(),
            Prim::RandomClone => "random_clone".into(),
            Prim::Random { dist, .. } => format!("random_{dist}").into(),
            Prim::Pjit { .. } => "pjit".into(),
            Prim::Scan { .. } => "scan".into(),
            Prim::Cond { .. } => "cond".into(),
            Prim::While => "while".into(),
            Prim::Vmap { .. } => "vmap".into(),
            Prim::CustomJvpCall { .. } => "custom_jvp_call".into(),
            Prim::CustomVjpCall { .. } => "custom_vjp_call".into(),
            Prim::Remat => "checkpoint".into(),
            Prim::DebugCallback => "debug_callback".into(),
            Prim::StopGradient => "stop_gradient".into(),
            Prim::Opaque(op) => op.name.into(),
            Prim::Block(b) => b.0.name().into(),
            Prim::Linalg(op) => match op {
                LinalgOp::LinearSolve { .. } => "custom_linear_solve",
                LinalgOp::Cholesky => "cholesky",
                LinalgOp::Det => "det",
                LinalgOp::DetFused { .. } => "det_fused",
                LinalgOp::SlogdetSign => "slogdet_sign",
                LinalgOp::SlogdetLogAbs => "slogdet_logabsdet",
                LinalgOp::Cofactor => "cofactor",
                LinalgOp::CofactorJvp => "cofactor_jvp",
                LinalgOp::TriangularSolve { .. } => "triangular_solve",
                LinalgOp::EighValues { .. } => "eigh_eigenvalues",
                LinalgOp::EighVectors { .. } => "eigh_eigenvectors",
                LinalgOp::SvdValues => "svd_s",
                LinalgOp::SvdU { .. } => "svd_u",
                LinalgOp::SvdVh { .. } => "svd_vh",
                LinalgOp::QrQ { .. } => "qr_q",
                LinalgOp::QrR { .. } => "qr_r",
                LinalgOp::Geqrf => "geqrf",
                LinalgOp::GeqrfTaus => "geqrf_taus",
                LinalgOp::Pinv { .. } => "pinv",
                LinalgOp::Lu => "lu",
                LinalgOp::LuPivots => "lu_pivots",
                LinalgOp::LuPermutation => "lu_permutation",
                LinalgOp::PivotsToPermutation { .. } => "lu_pivots_to_permutation",
                LinalgOp::Expm { .. } => "expm",
            }
            .into(),
        }
    }

    /// `Opaque(name)` of output aval `out`.
    pub fn opaque(name: &'static str, out: Aval) -> Prim {
        Prim::Opaque(OpaqueOp { name, out })
    }

    /// `Full` of `aval`: `value` in every element.
    pub fn full(value: f64, aval: &Aval) -> Prim {
        Prim::Full { value, shape: aval.shape.to_vec(), dtype: aval.dtype, weak_type: aval.weak }
    }

    /// Parameters as JAX prints them inside `[...]`.
    pub fn params(&self) -> String {
        let list = |v: &[usize]| {
            format!("({})", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ") + if v.len() == 1 { "," } else { "" })
        };
        match self {
            Prim::IntegerPow(y) => format!("y={y}"),
            Prim::ConvertElementType { new_dtype, weak_type } => {
                format!("new_dtype={} weak_type={}", new_dtype.name(), if *weak_type { "True" } else { "False" })
            }
            Prim::BroadcastInDim { shape, broadcast_dimensions } => {
                format!("broadcast_dimensions={} shape={}", list(broadcast_dimensions), list(shape))
            }
            Prim::Reshape { new_sizes } => format!("new_sizes={}", list(new_sizes)),
            Prim::Transpose { permutation } => format!("permutation={}", list(permutation)),
            Prim::Squeeze { dimensions } | Prim::Rev { dimensions } => {
                format!("dimensions={}", list(dimensions))
            }
            Prim::Slice { start, limit, .. } => format!("limit_indices={} start_indices={}", list(limit), list(start)),
            Prim::DynamicSlice { sizes } => format!("slice_sizes={}", list(sizes)),
            Prim::Concatenate { dimension } => format!("dimension={dimension}"),
            Prim::Iota { dtype, shape, dimension } => format!("dimension={dimension} dtype={} shape={}", dtype.name(), list(shape)),
            Prim::Reduce { axes, .. } => format!("axes={}", list(axes)),
            Prim::ArgReduce { axis, index_dtype, .. } => format!("axes=({axis},) index_dtype={}", index_dtype.name()),
            Prim::Cumulative { axis, reverse, .. } => format!("axis={axis} reverse={}", if *reverse { "True" } else { "False" }),
            Prim::DotGeneral { lhs_contract, rhs_contract, lhs_batch, rhs_batch } => {
                format!("dimension_numbers=(({}, {}), ({}, {}))", list(lhs_contract), list(rhs_contract), list(lhs_batch), list(rhs_batch))
            }
            Prim::Gather { mode, fill_value, .. } => {
                format!("fill_value={} mode={}", fill_value.map_or("None".to_string(), FillValue::text), mode.text())
            }
            Prim::Scatter { mode, unique_indices, .. } => {
                format!("mode={} unique_indices={}", mode.text(), if *unique_indices { "True" } else { "False" })
            }
            Prim::Pjit { name } => format!("name={name}"),
            Prim::Block(b) => b.0.params(),
            Prim::CustomJvpCall { call } | Prim::CustomVjpCall { call } => format!("name={}", call.name),
            Prim::Scan { length, reverse, num_carry } => {
                format!("length={length} num_carry={num_carry} reverse={}", if *reverse { "True" } else { "False" })
            }
            Prim::TopK { k } | Prim::TopKIndices { k } => format!("k={k}"),
            Prim::RandomSeed { .. } | Prim::RandomWrap => "impl=fry".into(),
            Prim::RandomSplit { shape } => format!("shape={}", list(shape)),
            Prim::Linalg(LinalgOp::TriangularSolve { lower, transpose_a, unit_diagonal }) => {
                let py = |b: bool| if b { "True" } else { "False" };
                format!("lower={} transpose_a={} unit_diagonal={}", py(*lower), py(*transpose_a), py(*unit_diagonal))
            }
            Prim::Linalg(LinalgOp::SvdU { full } | LinalgOp::SvdVh { full } | LinalgOp::QrQ { full } | LinalgOp::QrR { full }) => {
                format!("full_matrices={}", if *full { "True" } else { "False" })
            }
            Prim::Linalg(LinalgOp::PivotsToPermutation { size }) => format!("permutation_size={size}"),
            Prim::Linalg(LinalgOp::LinearSolve { transpose }) => format!("transpose={}", if *transpose { "True" } else { "False" }),
            Prim::Linalg(LinalgOp::Expm { upper_triangular, max_squarings, .. }) => {
                format!("max_squarings={max_squarings} upper_triangular={}", if *upper_triangular { "True" } else { "False" })
            }
            Prim::Vmap { axis_size, in_axes, out_axes } => {
                let axes: Vec<String> = in_axes.iter().map(|a| a.map_or("None".to_string(), |a| a.to_string())).collect();
                let axes = format!("({}{})", axes.join(", "), if axes.len() == 1 { "," } else { "" });
                format!("axis_size={axis_size} in_axes={axes} out_axes={out_axes}")
            }
            Prim::Unary(_)
            | Prim::Binary(_)
            | Prim::Compare(_)
            | Prim::Select
            | Prim::Clamp
            | Prim::DynamicUpdateSlice
            | Prim::Pad { .. }
            | Prim::Full { .. }
            | Prim::Sort { .. }
            | Prim::RandomBits { .. }
            | Prim::RandomFoldIn
            | Prim::RandomUnwrap
            | Prim::RandomClone
            | Prim::Random { .. }
            | Prim::Cond { .. }
            | Prim::While
            | Prim::Remat
            | Prim::DebugCallback
            | Prim::StopGradient
            | Prim::Opaque(_)
            | Prim::Linalg(_) => String::new(),
        }
    }

    /// The call behind a `custom_jvp_call`/`custom_vjp_call` marker.
    pub fn custom_call(&self) -> Option<&Rc<super::custom_rules::CustomCall>> {
        if let Prim::CustomJvpCall { call } | Prim::CustomVjpCall { call } = self {
            Some(call)
        } else {
            None
        }
    }

    /// `cond`, `while`, `scan` and `vmap`: equations whose bodies the evaluator runs
    /// (`eval_control.rs`), printed in JAX's multi-line form.
    pub fn is_control_flow(&self) -> bool {
        super::prims::properties::is_control_flow(self)
    }
}

/// How many of a control-flow equation's inputs are the consts of each of its bodies, in order
/// (the rest are its operands).
pub fn body_const_counts(eqn: &Eqn) -> Vec<usize> {
    eqn.bodies.iter().map(|b| b.constvars.len()).collect()
}

/// The `name=value` parameters of a control-flow equation in JAX's alphabetical order, bodies
/// included, each printed for a line indented by `indent`.
fn control_params(eqn: &Eqn, indent: usize) -> Vec<String> {
    let pad = " ".repeat(indent);
    let bool_text = |b: bool| if b { "True" } else { "False" };
    let body = |i: usize| eqn.bodies.get(i).map(|b| b.pretty(indent)).unwrap_or_default();
    let nconsts = |i: usize| eqn.bodies.get(i).map_or(0, |b| b.constvars.len());
    match &eqn.prim {
        Prim::Cond { .. } => {
            let branches: Vec<String> = eqn.bodies.iter().map(|b| format!("{pad}  {}", b.pretty(indent + 2))).collect();
            vec![format!("branches=(\n{}\n{pad})", branches.join("\n"))]
        }
        Prim::While => vec![
            format!("body_jaxpr={}", body(1)),
            format!("body_nconsts={}", nconsts(1)),
            format!("cond_jaxpr={}", body(0)),
            format!("cond_nconsts={}", nconsts(0)),
        ],
        Prim::Scan { length, reverse, num_carry } => vec![
            format!("jaxpr={}", body(0)),
            format!("length={length}"),
            format!("num_carry={num_carry}"),
            format!("num_consts={}", nconsts(0)),
            format!("reverse={}", bool_text(*reverse)),
        ],
        Prim::Vmap { axis_size, in_axes, out_axes } => {
            let axes: Vec<String> = in_axes.iter().map(|a| a.map_or("None".to_string(), |a| a.to_string())).collect();
            vec![
                format!("axis_size={axis_size}"),
                format!("in_axes=({}{})", axes.join(", "), if axes.len() == 1 { "," } else { "" }),
                format!("jaxpr={}", body(0)),
                format!("out_axes={out_axes}"),
            ]
        }
        families::all_but!(control_flow) => Vec::new(),
    }
}

/// The problems of a control-flow equation's signature: its bodies take and return what its
/// inputs and outputs say (JAX's `_cond_typecheck`, `_while_loop_abstract_eval`, `_scan_typecheck`).
fn check_control(eqn: &Eqn, in_avals: &[Aval]) -> Vec<String> {
    let same = |a: &[Aval], b: &[Aval]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.shape == y.shape && x.dtype == y.dtype);
    let invars = |j: &Jaxpr| j.invars.iter().map(|(_, a)| a.clone()).collect::<Vec<_>>();
    let outs = |j: &Jaxpr| j.outvars.iter().map(|o| atom_aval(o, j)).collect::<Vec<_>>();
    let consts: usize = eqn.bodies.iter().map(|b| b.constvars.len()).sum();
    let declared: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
    let mut problems = Vec::new();
    let mut expect = |ok: bool, what: &str| {
        if !ok {
            problems.push(format!("{} {what}", eqn.prim.name()));
        }
    };
    let operands = in_avals.get(consts + usize::from(matches!(eqn.prim, Prim::Cond { .. }))..).unwrap_or_default();
    match &eqn.prim {
        Prim::Cond { branches } => {
            expect(eqn.bodies.len() == *branches && in_avals.len() > consts, "has a branch index and one body per branch");
            for b in &eqn.bodies {
                expect(same(&invars(b), operands), "branch takes other operands than the equation's");
                expect(same(&outs(b), &declared), "branch returns other outputs than the equation's");
            }
        }
        Prim::While => {
            let [cond, body] = eqn.bodies.as_slice() else {
                expect(false, "has a cond and a body");
                return problems;
            };
            expect(same(&invars(cond), operands) && same(&invars(body), operands), "bodies take other types than the carry's");
            expect(same(&outs(body), operands) && same(&declared, operands), "body returns other types than the carry's");
            // A batched predicate (`vmap` of a `while_loop`) leads every carry's shape.
            let pred_ok = match outs(cond).as_slice() {
                [p] => p.dtype == DType::Bool && operands.iter().all(|a| a.shape.starts_with(&p.shape)),
                _ => false,
            };
            expect(pred_ok, "cond_jaxpr does not return a bool[] or a bool leading every carry's shape");
        }
        Prim::Scan { length, num_carry, .. } => {
            let Some(body) = eqn.bodies.first() else {
                expect(false, "has a body");
                return problems;
            };
            let unstacked = |a: &Aval| a.with_shape(&a.shape[1.min(a.shape.len())..]);
            let mut want_in: Vec<Aval> = operands.iter().take(*num_carry).cloned().collect();
            want_in.extend(operands.iter().skip(*num_carry).map(unstacked));
            expect(same(&invars(body), &want_in), "body takes other types than the carry and one slice of xs");
            let mut want_out: Vec<Aval> = declared.iter().take(*num_carry).cloned().collect();
            want_out.extend(declared.iter().skip(*num_carry).map(unstacked));
            expect(same(&outs(body), &want_out), "body returns other types than the carry and one slice of ys");
            let stacked = operands.iter().skip(*num_carry).chain(declared.iter().skip(*num_carry));
            expect(stacked.clone().all(|a| a.shape.first() == Some(length)), "scans arrays whose leading axis is not its length");
        }
        Prim::Vmap { axis_size, in_axes, out_axes } => {
            let Some(body) = eqn.bodies.first() else {
                expect(false, "has a body");
                return problems;
            };
            expect(in_axes.len() == operands.len(), "has one in_axes entry per argument");
            let want_in: Vec<Aval> = operands
                .iter()
                .zip(in_axes)
                .map(|(a, ax)| match ax {
                    Some(ax) if *ax < a.shape.len() => {
                        let mut s = a.shape.to_vec();
                        s.remove(*ax);
                        a.with_shape(&s)
                    }
                    _ => a.clone(),
                })
                .collect();
            expect(same(&invars(body), &want_in), "body takes other types than one example of the arguments");
            let batched: Vec<Aval> = outs(body)
                .iter()
                .map(|a| {
                    let mut s = a.shape.to_vec();
                    s.insert((*out_axes).min(s.len()), *axis_size);
                    a.with_shape(&s)
                })
                .collect();
            expect(same(&batched, &declared), "declares outputs that are not the body's outputs stacked");
        }
        families::all_but!(control_flow) => {}
    }
    problems
}

/// Checks that a jaxpr is well formed: every variable is bound once before it is used, and
/// every body is well formed too. Returns the problems found (autodidax's `typecheck_jaxpr`).
pub fn check_ir(jaxpr: &Jaxpr) -> Vec<String> {
    let mut problems = Vec::new();
    let mut bound: std::collections::HashMap<VarId, Aval> = std::collections::HashMap::new();
    for (v, a) in jaxpr.constvars.iter().chain(&jaxpr.invars) {
        if bound.insert(*v, a.clone()).is_some() {
            problems.push(format!("{} is bound twice", var_name(*v)));
        }
    }
    for (i, eqn) in jaxpr.eqns.iter().enumerate() {
        for atom in &eqn.inputs {
            if let Atom::Var(v) = atom {
                if !bound.contains_key(v) {
                    problems.push(format!("equation {i} ({}) uses {} before it is bound", eqn.prim.name(), var_name(*v)));
                }
            }
        }
        for (v, a) in &eqn.outputs {
            if bound.insert(*v, a.clone()).is_some() {
                problems.push(format!("equation {i} ({}) binds {} a second time", eqn.prim.name(), var_name(*v)));
            }
        }
        for body in &eqn.bodies {
            problems.extend(check_ir(body).into_iter().map(|p| format!("in the body of equation {i}: {p}")));
        }
        let in_avals: Vec<Aval> = eqn
            .inputs
            .iter()
            .map(|a| match a {
                Atom::Lit(_, aval) => aval.clone(),
                Atom::Var(v) => bound.get(v).cloned().unwrap_or_else(|| Aval::scalar(DType::F32)),
            })
            .collect();
        if eqn.prim.is_control_flow() {
            problems.extend(check_control(eqn, &in_avals).into_iter().map(|p| format!("equation {i}: {p}")));
        }
        // The primitive's rule (`prims/`) gives the outputs the equation declares.
        let declared: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
        let all_bound = eqn.inputs.iter().all(|a| matches!(a, Atom::Lit(..)) || matches!(a, Atom::Var(v) if bound.contains_key(v)));
        let in_refs: Vec<&Aval> = in_avals.iter().collect();
        match super::prims::abstract_eval(&eqn.prim, &in_refs, &eqn.bodies) {
            _ if !all_bound => {}
            Ok(outs) if outs[..] == declared[..] => {}
            Ok(outs) => problems.push(format!(
                "equation {i} ({}) declares outputs {} but its rule gives {} for inputs {}",
                eqn.prim.name(),
                avals_text(&declared),
                avals_text(&outs),
                avals_text(&in_avals)
            )),
            Err(super::prims::RuleError::Declared(_)) => {}
            Err(super::prims::RuleError::Invalid { class, message }) => problems.push(format!(
                "equation {i} ({}) has inputs {} its rule rejects: {class}: {message}",
                eqn.prim.name(),
                avals_text(&in_avals)
            )),
        }
    }
    for atom in &jaxpr.outvars {
        if let Atom::Var(v) = atom {
            if !bound.contains_key(v) {
                problems.push(format!("output {} is never bound", var_name(*v)));
            }
        }
    }
    problems
}

fn avals_text(avals: &[Aval]) -> String {
    format!("({})", avals.iter().map(Aval::short).collect::<Vec<_>>().join(", "))
}

/// The aval of an atom of `jaxpr` (a literal's own, or its variable's binder's).
pub(crate) fn atom_aval(atom: &Atom, jaxpr: &Jaxpr) -> Aval {
    match atom {
        Atom::Lit(_, a) => a.clone(),
        // From the last equation back: an output is most often bound near the end (each
        // variable is bound once, so the order does not change the answer), and every call
        // of a jitted function asks for its body's outputs.
        Atom::Var(v) => jaxpr
            .eqns
            .iter()
            .rev()
            .flat_map(|e| e.outputs.iter())
            .chain(jaxpr.invars.iter())
            .chain(jaxpr.constvars.iter())
            .find(|(w, _)| w == v)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| Aval::scalar(DType::F32)),
    }
}

/// `fori_loop`'s body as JAX stages it: the user's `body(i, carry)` returning `(i + 1, carry')`,
/// or with `with_upper`, `body(i, upper, carry)` returning `(i + 1, upper, carry')` for a
/// `while` loop over traced bounds. `user`'s first input is `i`.
pub fn counting_body(user: &Jaxpr, with_upper: bool) -> Jaxpr {
    let mut body = user.clone();
    let Some((i, i_aval)) = user.invars.first().cloned() else { return body };
    let mut fresh = user
        .constvars
        .iter()
        .chain(&user.invars)
        .chain(user.eqns.iter().flat_map(|e| e.outputs.iter()))
        .map(|(v, _)| *v + 1)
        .max()
        .unwrap_or(0);
    let mut new_var = |aval: &Aval, vars: &mut Vec<Aval>| {
        let v = fresh;
        fresh += 1;
        vars.push(aval.clone());
        v
    };
    let next = new_var(&i_aval, &mut body.var_avals);
    body.eqns.insert(
        0,
        Eqn {
            prim: Prim::Binary(BinaryPrim::Add),
            inputs: vec![Atom::Var(i), Atom::Lit(1.0, i_aval.clone())],
            outputs: vec![(next, i_aval.clone())],
            site: None,
            bodies: Vec::new(),
            api: None,
        },
    );
    let mut outvars = vec![Atom::Var(next)];
    if with_upper {
        let upper = new_var(&i_aval, &mut body.var_avals);
        body.invars.insert(1, (upper, i_aval.clone()));
        outvars.push(Atom::Var(upper));
    }
    outvars.extend(user.outvars.iter().cloned());
    body.outvars = outvars;
    body
}

/// The `cond_jaxpr` of a `fori_loop` over traced bounds: `i < upper`, over `(i, upper, carry)`.
pub fn counting_cond(i_aval: &Aval, carry: &[Aval]) -> Jaxpr {
    let mut invars = vec![(0, i_aval.clone()), (1, i_aval.clone())];
    invars.extend(carry.iter().enumerate().map(|(k, a)| (k as VarId + 2, a.clone())));
    let out = invars.len() as VarId;
    Jaxpr {
        constvars: Vec::new(),
        invars,
        eqns: vec![Eqn {
            prim: Prim::Compare(CmpPrim::Lt),
            inputs: vec![Atom::Var(0), Atom::Var(1)],
            outputs: vec![(out, Aval::scalar(DType::Bool))],
            site: None,
            bodies: Vec::new(),
            api: None,
        }],
        outvars: vec![Atom::Var(out)],
        var_avals: Vec::new(),
    }
}

/// Builds a jaxpr equation by equation, with fresh variables.
pub(super) struct Builder {
    next: VarId,
    eqns: Vec<Eqn>,
}

impl Builder {
    /// A builder for a jaxpr whose binders are variables `0..n_binders`.
    pub(super) fn new(n_binders: usize) -> Builder {
        Builder { next: n_binders as VarId, eqns: Vec::new() }
    }

    /// The jaxpr built, with binders `invars` and outputs `outvars`.
    pub(super) fn finish(self, invars: Vec<(VarId, Aval)>, outvars: Vec<Atom>) -> Jaxpr {
        Jaxpr { constvars: Vec::new(), invars, eqns: self.eqns, outvars, var_avals: Vec::new() }
    }

    fn fresh(&mut self) -> VarId {
        self.next += 1;
        self.next - 1
    }

    pub(super) fn emit(&mut self, prim: Prim, inputs: Vec<Atom>, aval: Aval) -> Atom {
        let v = self.fresh();
        self.eqns.push(Eqn { prim, inputs, outputs: vec![(v, aval)], site: None, bodies: Vec::new(), api: None });
        Atom::Var(v)
    }

    /// Row `index` of `x` (aval `aval`) along `axis`, that axis removed: a `slice` and a
    /// `reshape`. `None` when `axis` is not an axis of `x`.
    fn take_row(&mut self, x: Atom, aval: &Aval, axis: usize, index: usize) -> Option<Atom> {
        let shape = &aval.shape;
        if axis >= shape.len() || index >= shape[axis] {
            return None;
        }
        let mut start = vec![0; shape.len()];
        let mut limit = shape.to_vec();
        start[axis] = index;
        limit[axis] = index + 1;
        let mut row = shape.to_vec();
        row[axis] = 1;
        let sliced = self.emit(Prim::Slice { start, limit, strides: vec![1; shape.len()] }, vec![x], aval.with_shape(&row));
        let mut rest = shape.to_vec();
        rest.remove(axis);
        Some(self.emit(Prim::Reshape { new_sizes: rest.clone() }, vec![sliced], aval.with_shape(&rest)))
    }

    /// Copies `body`'s equations with its binders bound to `binders`; its outputs.
    fn inline(&mut self, body: &Jaxpr, binders: &[Atom]) -> Vec<Atom> {
        let mut map: std::collections::HashMap<VarId, Atom> =
            body.constvars.iter().chain(&body.invars).map(|(v, _)| *v).zip(binders.iter().cloned()).collect();
        let atom = |map: &std::collections::HashMap<VarId, Atom>, a: &Atom| match a {
            Atom::Var(v) => map.get(v).cloned().unwrap_or(Atom::Var(*v)),
            lit => lit.clone(),
        };
        for eqn in &body.eqns {
            let mut copy = eqn.clone();
            copy.inputs = eqn.inputs.iter().map(|a| atom(&map, a)).collect();
            for (v, _) in copy.outputs.iter_mut() {
                let new = self.fresh();
                map.insert(*v, Atom::Var(new));
                *v = new;
            }
            self.eqns.push(copy);
        }
        body.outvars.iter().map(|a| atom(&map, a)).collect()
    }
}

/// What a `cond`, `scan` or `vmap` equation computes, as a jaxpr without that control flow,
/// whose binders are the equation's inputs (with avals `in_avals`): the branch `index` of a
/// `cond` inlined, a `scan` unrolled into `length` copies of its body, each on one `slice` of
/// the scanned arrays, its `ys` stacked back with `concatenate`, or a `vmap` unrolled into
/// one copy of its body per example, on that example's rows of the mapped arguments, its
/// outputs stacked along `out_axes` (JAX batches the body instead: same values). Automatic differentiation goes
/// through it with the rules of those primitives. `None` for other equations, an empty scan,
/// or more than `max_eqns` equations.
pub fn resolve_control(eqn: &Eqn, in_avals: &[Aval], index: Option<usize>, max_eqns: usize) -> Option<Jaxpr> {
    let counts = body_const_counts(eqn);
    let mut b = Builder { next: in_avals.len() as VarId, eqns: Vec::new() };
    let invars: Vec<(VarId, Aval)> = in_avals.iter().cloned().enumerate().map(|(i, a)| (i as VarId, a)).collect();
    let binder = |i: usize| Atom::Var(i as VarId);
    let outvars = match &eqn.prim {
        Prim::Cond { .. } => {
            let k = index?.min(eqn.bodies.len().checked_sub(1)?);
            let total: usize = 1 + counts.iter().sum::<usize>();
            let start = 1 + counts[..k].iter().sum::<usize>();
            let mut binders: Vec<Atom> = (start..start + counts[k]).map(binder).collect();
            binders.extend((total..in_avals.len()).map(binder));
            if eqn.bodies[k].eqns.len() > max_eqns {
                return None;
            }
            b.inline(&eqn.bodies[k], &binders)
        }
        Prim::Scan { length, reverse, num_carry } => {
            let body = eqn.bodies.first()?;
            let n_consts = counts[0];
            if *length == 0 || body.eqns.len().saturating_add(4 * in_avals.len()).saturating_mul(*length) > max_eqns {
                return None;
            }
            let consts: Vec<Atom> = (0..n_consts).map(binder).collect();
            let mut carry: Vec<Atom> = (n_consts..n_consts + num_carry).map(binder).collect();
            let xs: Vec<usize> = (n_consts + num_carry..in_avals.len()).collect();
            let n_ys = body.outvars.len().checked_sub(*num_carry)?;
            let mut ys: Vec<Vec<Atom>> = vec![Vec::new(); n_ys];
            for step in 0..*length {
                let t = if *reverse { length - 1 - step } else { step };
                let mut binders = consts.clone();
                binders.extend(carry.iter().cloned());
                for &x in &xs {
                    binders.push(b.take_row(binder(x), &in_avals[x], 0, t)?);
                }
                let outs = b.inline(body, &binders);
                carry = outs[..*num_carry].to_vec();
                for (y, o) in ys.iter_mut().zip(&outs[*num_carry..]) {
                    y.push(o.clone());
                }
            }
            let mut outvars = carry;
            for (rows, (_, aval)) in ys.iter_mut().zip(&eqn.outputs[*num_carry..]) {
                if *reverse {
                    rows.reverse();
                }
                let mut row_shape = aval.shape.to_vec();
                row_shape[0] = 1;
                let row_aval = aval.with_shape(&row_shape);
                let rows: Vec<Atom> = rows
                    .iter()
                    .map(|r| b.emit(Prim::Reshape { new_sizes: row_shape.clone() }, vec![r.clone()], row_aval.clone()))
                    .collect();
                outvars.push(b.emit(Prim::Concatenate { dimension: 0 }, rows, aval.clone()));
            }
            outvars
        }
        Prim::Vmap { axis_size, in_axes, out_axes } => {
            let body = eqn.bodies.first()?;
            let n_consts = counts[0];
            let operands: Vec<usize> = (n_consts..in_avals.len()).collect();
            if *axis_size == 0
                || operands.len() != in_axes.len()
                || body.eqns.len().saturating_add(2 * in_avals.len()).saturating_mul(*axis_size) > max_eqns
            {
                return None;
            }
            let consts: Vec<Atom> = (0..n_consts).map(binder).collect();
            let mut rows: Vec<Vec<Atom>> = vec![Vec::new(); body.outvars.len()];
            for example in 0..*axis_size {
                let mut binders = consts.clone();
                for (&x, axis) in operands.iter().zip(in_axes) {
                    binders.push(match axis {
                        Some(axis) => b.take_row(binder(x), &in_avals[x], *axis, example)?,
                        None => binder(x),
                    });
                }
                for (row, out) in rows.iter_mut().zip(b.inline(body, &binders)) {
                    row.push(out);
                }
            }
            let mut outvars = Vec::with_capacity(rows.len());
            for (rows, (_, aval)) in rows.iter().zip(&eqn.outputs) {
                let axis = (*out_axes).min(aval.ndim().checked_sub(1)?);
                let mut row_shape = aval.shape.to_vec();
                row_shape[axis] = 1;
                let row_aval = aval.with_shape(&row_shape);
                let rows: Vec<Atom> = rows
                    .iter()
                    .map(|r| b.emit(Prim::Reshape { new_sizes: row_shape.clone() }, vec![r.clone()], row_aval.clone()))
                    .collect();
                outvars.push(b.emit(Prim::Concatenate { dimension: axis }, rows, aval.clone()));
            }
            outvars
        }
        Prim::While | families::all_but!(control_flow) => return None,
    };
    Some(Jaxpr { constvars: Vec::new(), invars, eqns: b.eqns, outvars, var_avals: Vec::new() })
}

/// Variable names as JAX prints them: a..z, ba..bz, ...
pub fn var_name(v: VarId) -> String {
    let mut n = v as usize;
    let mut s = Vec::new();
    loop {
        s.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    s.reverse();
    s.into_iter().collect()
}

impl Jaxpr {
    /// JAX's text form, indented by `indent` spaces.
    pub fn pretty(&self, indent: usize) -> String {
        let mut out = String::new();
        let pad = " ".repeat(indent);
        let binders =
            |vs: &[(VarId, Aval)]| vs.iter().map(|(v, a)| format!("{}:{}", var_name(*v), a.short())).collect::<Vec<_>>().join(" ");
        let _ = write!(out, "{{ lambda {}; {}. let", binders(&self.constvars), binders(&self.invars));
        for eqn in &self.eqns {
            let outs = eqn.outputs.iter().map(|(v, a)| format!("{}:{}", var_name(*v), a.short())).collect::<Vec<_>>().join(" ");
            let ins = eqn.inputs.iter().map(atom_text).collect::<Vec<_>>().join(" ");
            let params = eqn.prim.params();
            let _ = write!(out, "\n{pad}    {outs} = {}", eqn.prim.name());
            if eqn.prim.is_control_flow() {
                out.push('[');
                for item in control_params(eqn, indent + 6) {
                    let _ = write!(out, "\n{pad}      {item}");
                }
                let _ = write!(out, "\n{pad}    ]");
            } else if !params.is_empty() || !eqn.bodies.is_empty() {
                out.push('[');
                out.push_str(&params);
                for (i, body) in eqn.bodies.iter().enumerate() {
                    if !params.is_empty() || i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "jaxpr={}", body.pretty(indent + 6));
                }
                out.push(']');
            }
            let _ = write!(out, " {ins}");
        }
        let outs = self.outvars.iter().map(atom_text).collect::<Vec<_>>().join(", ");
        let _ = write!(out, "\n{pad}  in ({}{}) }}", outs, if self.outvars.len() == 1 { "," } else { "" });
        out
    }
}

pub fn atom_text(a: &Atom) -> String {
    match a {
        Atom::Var(v) => var_name(*v),
        Atom::Lit(x, aval) => {
            let v = if aval.dtype.is_floating() {
                crate::interp::value::repr_float(*x)
            } else if aval.dtype.is_bool() {
                if *x != 0.0 {
                    "True".into()
                } else {
                    "False".into()
                }
            } else {
                format!("{}", *x as i64)
            };
            format!("{v}:{}", aval.short())
        }
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn check_ir_finds_unbound_and_rebound_variables() {
        let f32 = Aval::new(&[3], DType::F32);
        let eqn = |inputs: Vec<Atom>, out: VarId| Eqn {
            prim: Prim::Unary(UnaryPrim::Sin),
            inputs,
            outputs: vec![(out, f32.clone())],
            site: None,
            bodies: Vec::new(),
            api: None,
        };
        let good = Jaxpr {
            invars: vec![(0, f32.clone())],
            eqns: vec![eqn(vec![Atom::Var(0)], 1)],
            outvars: vec![Atom::Var(1)],
            ..Default::default()
        };
        assert!(check_ir(&good).is_empty());
        assert_eq!(good.pretty(0), "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }");
        let bad = Jaxpr {
            invars: vec![(0, f32.clone())],
            eqns: vec![eqn(vec![Atom::Var(5)], 1), eqn(vec![Atom::Var(0)], 1)],
            outvars: vec![Atom::Var(7)],
            ..Default::default()
        };
        let problems = check_ir(&bad);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("uses f before it is bound"));
        assert!(problems[1].contains("binds b a second time"));
        assert!(problems[2].contains("output h is never bound"));
    }

    fn check_ir_reruns_each_primitive_rule() {
        let x = Aval::new(&[3, 4], DType::F32);
        let jaxpr = |declared: Aval| Jaxpr {
            invars: vec![(0, x.clone())],
            eqns: vec![Eqn {
                prim: Prim::Reduce { op: ReduceOp::Sum, axes: vec![1] },
                inputs: vec![Atom::Var(0)],
                outputs: vec![(1, declared)],
                site: None,
                bodies: Vec::new(),
                api: None,
            }],
            outvars: vec![Atom::Var(1)],
            ..Default::default()
        };
        assert!(check_ir(&jaxpr(Aval::new(&[3], DType::F32))).is_empty());
        let problems = check_ir(&jaxpr(Aval::new(&[4], DType::F32)));
        assert_eq!(problems, ["equation 0 (reduce_sum) declares outputs (f32[4]) but its rule gives (f32[3]) for inputs (f32[3,4])"]);
    }

    crate::unit_tests::list![check_ir_finds_unbound_and_rebound_variables, check_ir_reruns_each_primitive_rule];
}
