//! The trace IR: jaxpr-like bodies of equations over typed variables, printed in JAX's
//! text form (`{ lambda ; a:f32[8,4]. let b:f32[8] = ... in (b,) }`). Grammar: docs/ir.md.

use std::fmt::Write as _;
use std::rc::Rc;

use super::array::Array;
use super::aval::Aval;
use super::dtypes::DType;
use crate::interp::Site;

pub type VarId = u32;

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
    Full {
        value: f64,
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
    Gather {
        mode: IndexMode,
        index: Vec<IndexItem>,
    },
    /// `x.at[index].set/add/mul/min/max(updates)`: the inputs are the operand, the updates
    /// and one integer array per `IndexItem::Array`. `index` is `None` where the indexing
    /// expression is not modelled (a boolean mask): the value is then not computed.
    Scatter {
        op: ScatterOp,
        mode: IndexMode,
        index: Option<Vec<IndexItem>>,
    },
    TopK {
        k: usize,
    },
    RandomBits {
        shape: Vec<usize>,
    },
    RandomSeed,
    RandomSplit {
        shape: Vec<usize>,
    },
    RandomFoldIn,
    RandomUnwrap,
    RandomWrap,
    /// A stand-in for a random draw: `random_<dist>` (its values are not computed yet).
    Random {
        dist: &'static str,
    },
    Pjit {
        name: String,
    },
    Scan {
        length: usize,
        reverse: bool,
        num_carry: usize,
    },
    Cond {
        branches: usize,
    },
    While,
    CustomJvpCall,
    CustomVjpCall,
    Remat,
    DebugCallback,
    StopGradient,
    /// A jnp-level operation without a primitive-level model yet (name kept for the IR).
    Opaque(&'static str),
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
    /// `None`: a new axis of size 1.
    NewAxis,
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
    Not = "not", Erf = "erf", ErfInv = "erf_inv", Lgamma = "lgamma", Digamma = "digamma", Real = "real", Imag = "imag",
    Conj = "conj", Square = "square", Copy = "copy",
});

prim_names!(BinaryPrim {
    Add = "add", Sub = "sub", Mul = "mul", Div = "div", Rem = "rem", Pow = "pow", Max = "max", Min = "min",
    Atan2 = "atan2", And = "and", Or = "or", Xor = "xor", ShiftLeft = "shift_left", ShiftRightArithmetic = "shift_right_arithmetic",
    ShiftRightLogical = "shift_right_logical", NextAfter = "nextafter",
});

impl Prim {
    pub fn name(&self) -> String {
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
            ),
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
            Prim::RandomBits { .. } => "random_bits".into(),
            Prim::RandomSeed => "random_seed".into(),
            Prim::RandomSplit { .. } => "random_split".into(),
            Prim::RandomFoldIn => "random_fold_in".into(),
            Prim::RandomUnwrap => "random_unwrap".into(),
            Prim::RandomWrap => "random_wrap".into(),
            Prim::Random { dist } => format!("random_{dist}"),
            Prim::Pjit { .. } => "pjit".into(),
            Prim::Scan { .. } => "scan".into(),
            Prim::Cond { .. } => "cond".into(),
            Prim::While => "while".into(),
            Prim::CustomJvpCall => "custom_jvp_call".into(),
            Prim::CustomVjpCall => "custom_vjp_call".into(),
            Prim::Remat => "checkpoint".into(),
            Prim::DebugCallback => "debug_callback".into(),
            Prim::StopGradient => "stop_gradient".into(),
            Prim::Opaque(n) => (*n).into(),
        }
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
            Prim::Pjit { name } => format!("name={name}"),
            Prim::Scan { length, reverse, num_carry } => {
                format!("length={length} num_carry={num_carry} reverse={}", if *reverse { "True" } else { "False" })
            }
            Prim::TopK { k } => format!("k={k}"),
            _ => String::new(),
        }
    }
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
        if let (Prim::Pjit { .. }, Some(body)) = (&eqn.prim, eqn.bodies.first()) {
            let outs: Vec<Aval> = body.outvars.iter().map(|a| atom_aval(a, body)).collect();
            let declared: Vec<Aval> = eqn.outputs.iter().map(|(_, a)| a.clone()).collect();
            if outs != declared {
                problems.push(format!("equation {i} (pjit) declares outputs {declared:?} but its body returns {outs:?}"));
            }
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

fn atom_aval(atom: &Atom, jaxpr: &Jaxpr) -> Aval {
    match atom {
        Atom::Lit(_, a) => a.clone(),
        Atom::Var(v) => jaxpr
            .constvars
            .iter()
            .chain(&jaxpr.invars)
            .chain(jaxpr.eqns.iter().flat_map(|e| e.outputs.iter()))
            .find(|(w, _)| w == v)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| Aval::scalar(DType::F32)),
    }
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
            if !params.is_empty() || !eqn.bodies.is_empty() {
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

fn atom_text(a: &Atom) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
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
}
