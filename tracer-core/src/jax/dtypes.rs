//! Dtypes, weak types and JAX's type promotion, as `jax/_src/dtypes.py` (JAX 0.10.2) has them.
//!
//! The model, in JAX's terms:
//!
//! * An array's aval carries a dtype and a *weak type* flag ([`WeakDType`]). Python scalars
//!   (`1`, `1.0`, `1j`) become weakly typed values of the default int/float/complex dtype;
//!   `True` is a strong `bool`.
//! * Promotion is a least upper bound on a lattice (`_type_promotion_lattice`) whose nodes
//!   are the dtypes plus three nodes for the Python types `int`, `float` and `complex`
//!   ([`JaxType`]). A weak operand enters the lattice as the Python type of its kind, so a
//!   weak value never widens a strong one: `f16 + 1.0 -> f16`, `u8 + 1 -> u8`.
//! * With `jax_enable_x64` off, results are canonicalized: 64-bit dtypes become 32-bit.
//!
//! Only the `standard` `jax_numpy_dtype_promotion` mode is modelled; in it every pair of the
//! dtypes here has an upper bound, so promotion cannot fail except on an empty operand list.
//! Every function is checked against real JAX by `tests/dtype_promotion.rs`, whose golden
//! data `tests/conformance/gen_dtype_golden.py` records.
//!
//! Size: the lattice, promotion, weak types, canonicalisation and the dtype names in one place, as
//! `jax/_src/dtypes.py` has them.

use std::fmt;

/// A numeric dtype JAX arrays can have (`jax.dtypes`' `_jax_types` without the narrow
/// `int2`/`int4`/`float8` family).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    BF16,
    F16,
    F32,
    F64,
    C64,
    C128,
    /// The dtype of a typed PRNG key array (`jax.random.key(0).dtype`), `key<fry>` for the
    /// default Threefry implementation: an extended dtype, not a numeric one. Each element is
    /// one key; its two `uint32` words are data the aval does not show (`random.rs`).
    Key,
}

/// The category of a dtype, as `np.dtype(d).kind` has it (`'b'`, `'i'`, `'u'`, `'f'`, `'c'`),
/// except that `bfloat16`, whose numpy kind is `'V'`, is `Floating` as JAX treats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DTypeKind {
    Bool,
    SignedInteger,
    UnsignedInteger,
    Floating,
    Complex,
    /// An extended dtype (`jax.dtypes.extended`): only [`DType::Key`].
    Key,
}

/// The JAX configuration the dtype rules depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DTypeConfig {
    /// `jax_enable_x64` (`JAX_ENABLE_X64`); off by default.
    pub enable_x64: bool,
}

/// A dtype together with JAX's weak-type flag (`ShapedArray.weak_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WeakDType {
    pub dtype: DType,
    pub weak: bool,
}

/// The Python scalar types JAX gives a dtype of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PyScalarKind {
    Bool,
    Int,
    Float,
    Complex,
}

/// A node of JAX's promotion lattice (`JAXType` in `dtypes.py`): a dtype, or one of the
/// Python types `int`, `float`, `complex` that stand for weakly typed values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JaxType {
    DType(DType),
    PyInt,
    PyFloat,
    PyComplex,
}

/// Why a promotion has no result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DTypeError {
    /// `jnp.result_type()` with no operands.
    NoOperands,
}

impl DTypeError {
    /// The exception JAX raises, as `(class name, message)`.
    pub fn python_exception(self) -> (&'static str, &'static str) {
        match self {
            DTypeError::NoOperands => ("ValueError", "at least one array or dtype is required"),
        }
    }
}

impl fmt::Display for DTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (class, message) = self.python_exception();
        write!(f, "{class}: {message}")
    }
}

impl std::error::Error for DTypeError {}

/// The name JAX prints for [`DType::Key`], in avals and as `str(key.dtype)`.
const KEY_NAME: &str = "key<fry>";

/// The numeric dtypes (every [`DType`] but [`DType::Key`]).
const ALL_DTYPES: [DType; 15] = [
    DType::Bool,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
    DType::BF16,
    DType::F16,
    DType::F32,
    DType::F64,
    DType::C64,
    DType::C128,
];

impl DType {
    /// `finfo(dtype).eps` of a floating dtype (float32's for any other).
    pub fn epsilon(self) -> f64 {
        match self {
            DType::F64 => f64::EPSILON,
            DType::F16 => 2f64.powi(-10),
            DType::BF16 => 2f64.powi(-7),
            _ => f64::from(f32::EPSILON),
        }
    }

    /// `finfo(dtype).max`: the largest finite number of a floating dtype (float64's for any
    /// other).
    pub fn largest_finite(self) -> f64 {
        match self {
            DType::F16 => half::f16::MAX.to_f64(),
            DType::BF16 => half::bf16::MAX.to_f64(),
            DType::F32 | DType::C64 => f64::from(f32::MAX),
            _ => f64::MAX,
        }
    }

    /// `finfo(dtype).tiny`: the smallest positive normal number of a floating dtype.
    pub fn smallest_normal(self) -> f64 {
        match self {
            DType::F64 => f64::MIN_POSITIVE,
            DType::F16 => 2f64.powi(-14),
            _ => f64::from(f32::MIN_POSITIVE), // float32 and bfloat16
        }
    }

    /// Every numeric dtype, in declaration order ([`DType::Key`] is not one).
    pub fn all() -> &'static [DType] {
        &ALL_DTYPES
    }

    /// The numpy name, as `str(dtype)` prints it: `float32`, `bfloat16`, `bool`.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::BF16 => "bfloat16",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
            DType::Key => KEY_NAME,
        }
    }

    /// JAX's short name (`dtypes.short_dtype_name`, used by `aval.str_short()` and jaxprs):
    /// the numpy name with `float`/`uint`/`int`/`complex` shortened to `f`/`u`/`i`/`c`, so
    /// `f32`, `bf16`, `u8`, `c64`, and `bool` unchanged.
    pub fn short_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "c64",
            DType::C128 => "c128",
            DType::Key => KEY_NAME,
        }
    }

    /// The dtype with this numpy name ([`DType::name`]) or short name ([`DType::short_name`]).
    /// Python types and aliases (`int`, `float`, `bool_`, `double`) are not dtype names here:
    /// see [`python_scalar_dtype`].
    pub fn from_name(s: &str) -> Option<DType> {
        if s == KEY_NAME {
            return Some(DType::Key);
        }
        ALL_DTYPES.iter().copied().find(|d| d.name() == s || d.short_name() == s)
    }

    /// The numeric dtype with this numpy name only ([`DType::name`]: `float32`, `bool`), as
    /// `jnp.float32` and `tf.float32` name them.
    pub fn from_numpy_name(s: &str) -> Option<DType> {
        ALL_DTYPES.iter().copied().find(|d| d.name() == s)
    }

    /// A typed PRNG key dtype (`jnp.issubdtype(d, jax.dtypes.prng_key)`).
    pub fn is_key(self) -> bool {
        self == DType::Key
    }

    /// Bytes per element (`np.dtype(d).itemsize`).
    pub fn itemsize(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::BF16 | DType::F16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            // A Threefry key is two uint32 words (`key.dtype.itemsize == 8`).
            DType::I64 | DType::U64 | DType::F64 | DType::C64 | DType::Key => 8,
            DType::C128 => 16,
        }
    }

    pub fn kind(self) -> DTypeKind {
        match self {
            DType::Bool => DTypeKind::Bool,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => DTypeKind::SignedInteger,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => DTypeKind::UnsignedInteger,
            DType::BF16 | DType::F16 | DType::F32 | DType::F64 => DTypeKind::Floating,
            DType::C64 | DType::C128 => DTypeKind::Complex,
            DType::Key => DTypeKind::Key,
        }
    }

    pub fn is_bool(self) -> bool {
        self.kind() == DTypeKind::Bool
    }

    /// `jnp.issubdtype(d, jnp.integer)`: signed or unsigned, not `bool`.
    pub fn is_integer(self) -> bool {
        self.is_signed_integer() || self.is_unsigned()
    }

    pub fn is_signed_integer(self) -> bool {
        self.kind() == DTypeKind::SignedInteger
    }

    pub fn is_unsigned(self) -> bool {
        self.kind() == DTypeKind::UnsignedInteger
    }

    /// `jnp.issubdtype(d, jnp.floating)`: real floats, `bfloat16` included.
    pub fn is_floating(self) -> bool {
        self.kind() == DTypeKind::Floating
    }

    pub fn is_complex(self) -> bool {
        self.kind() == DTypeKind::Complex
    }

    /// `jnp.issubdtype(d, jnp.inexact)`: floating or complex.
    pub fn is_inexact(self) -> bool {
        self.is_floating() || self.is_complex()
    }

    /// One of the four dtypes that `jax_enable_x64=False` narrows.
    pub fn is_64_bit(self) -> bool {
        matches!(self, DType::I64 | DType::U64 | DType::F64 | DType::C128)
    }

    /// `dtypes.to_inexact_dtype`: bool and integers up to 32 bits become `float32`, 64-bit
    /// integers `float64`, whatever `jax_enable_x64` says; inexact dtypes are unchanged.
    pub fn to_inexact(self) -> DType {
        match self {
            DType::Bool | DType::I8 | DType::I16 | DType::I32 | DType::U8 | DType::U16 | DType::U32 => DType::F32,
            DType::I64 | DType::U64 => DType::F64,
            DType::BF16 | DType::F16 | DType::F32 | DType::F64 | DType::C64 | DType::C128 | DType::Key => self,
        }
    }

    /// `dtypes.to_numeric_dtype`: `bool` becomes `int32` (even with x64 on), others stay.
    pub fn to_numeric(self) -> DType {
        if self == DType::Bool {
            DType::I32
        } else {
            self
        }
    }

    /// `dtypes.to_complex_dtype`: `complex128` from `float64`/`complex128` (after
    /// [`DType::to_inexact`]), `complex64` from everything else, `bfloat16` included.
    pub fn to_complex(self) -> DType {
        match self.to_inexact() {
            DType::F64 | DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }

    /// `np.array(0, d).real.dtype`: a complex dtype's component dtype, others unchanged.
    pub fn real_dtype(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// `dtypes.iinfo(d).bits` for integers, `itemsize * 8` otherwise.
    pub fn bits(self) -> usize {
        self.itemsize() * 8
    }
}

impl fmt::Display for DType {
    /// The numpy name, as `str(dtype)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl WeakDType {
    pub fn strong(dtype: DType) -> WeakDType {
        WeakDType { dtype, weak: false }
    }

    pub fn weakly_typed(dtype: DType) -> WeakDType {
        WeakDType { dtype, weak: true }
    }

    /// `~f32` for a weak `float32`, `i8` for a strong `int8`: short names, weak marked by
    /// `~` as `str(aval)` marks it.
    pub fn short_name(self) -> String {
        format!("{}{}", if self.weak { "~" } else { "" }, self.dtype.short_name())
    }

    /// Reads what [`WeakDType::short_name`] and `Display` write: a dtype name or short name,
    /// with a leading `~` when weak.
    pub fn from_name(s: &str) -> Option<WeakDType> {
        match s.strip_prefix('~') {
            Some(rest) => DType::from_name(rest).map(WeakDType::weakly_typed),
            None => DType::from_name(s).map(WeakDType::strong),
        }
    }

    /// The lattice node JAX promotes this operand as (`dtypes._jax_type`): a weak operand
    /// stands for the Python type of its kind (`bfloat16` and `float16` included), except
    /// that a weak `bool` is just `bool`.
    pub fn jax_type(self) -> JaxType {
        if !self.weak {
            return JaxType::DType(self.dtype);
        }
        match self.dtype.kind() {
            DTypeKind::Bool => JaxType::DType(DType::Bool),
            DTypeKind::SignedInteger | DTypeKind::UnsignedInteger => JaxType::PyInt,
            DTypeKind::Floating => JaxType::PyFloat,
            DTypeKind::Complex => JaxType::PyComplex,
            DTypeKind::Key => JaxType::DType(self.dtype),
        }
    }
}

impl From<DType> for WeakDType {
    fn from(dtype: DType) -> WeakDType {
        WeakDType::strong(dtype)
    }
}

impl fmt::Display for WeakDType {
    /// `~float32` / `float32`, as `str(aval)` prints the dtype part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.weak {
            f.write_str("~")?;
        }
        f.write_str(self.dtype.name())
    }
}

impl JaxType {
    /// `np.dtype(node)`, as `jnp.promote_types` returns it: the Python types are numpy's
    /// 64-bit defaults (`np.dtype(int) == int64`), not canonicalized.
    pub fn numpy_dtype(self) -> DType {
        match self {
            JaxType::DType(d) => d,
            JaxType::PyInt => DType::I64,
            JaxType::PyFloat => DType::F64,
            JaxType::PyComplex => DType::C128,
        }
    }

    /// `dtypes.dtype(node)`: the dtype, canonicalized under `cfg`.
    pub fn canonical_dtype(self, cfg: DTypeConfig) -> DType {
        canonicalize(self.numpy_dtype(), cfg)
    }

    pub fn is_python_type(self) -> bool {
        !matches!(self, JaxType::DType(_))
    }
}

impl From<PyScalarKind> for JaxType {
    /// The node a Python type takes in `jnp.promote_types(int, ...)`: `bool` is the dtype.
    fn from(kind: PyScalarKind) -> JaxType {
        match kind {
            PyScalarKind::Bool => JaxType::DType(DType::Bool),
            PyScalarKind::Int => JaxType::PyInt,
            PyScalarKind::Float => JaxType::PyFloat,
            PyScalarKind::Complex => JaxType::PyComplex,
        }
    }
}

/// `jnp.int_` under `cfg`: `int32`, or `int64` with x64 (`dtypes.default_int_dtype`).
pub fn default_int(cfg: DTypeConfig) -> DType {
    if cfg.enable_x64 {
        DType::I64
    } else {
        DType::I32
    }
}

/// `jnp.uint` under `cfg`: `uint32`, or `uint64` with x64 (`dtypes.default_uint_dtype`).
pub fn default_uint(cfg: DTypeConfig) -> DType {
    if cfg.enable_x64 {
        DType::U64
    } else {
        DType::U32
    }
}

/// `jnp.float_` under `cfg`: `float32`, or `float64` with x64.
pub fn default_float(cfg: DTypeConfig) -> DType {
    if cfg.enable_x64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// `jnp.complex_` under `cfg`: `complex64`, or `complex128` with x64.
pub fn default_complex(cfg: DTypeConfig) -> DType {
    if cfg.enable_x64 {
        DType::C128
    } else {
        DType::C64
    }
}

/// `dtypes.default_types[kind]()`: the default dtype of a kind under `cfg`.
pub fn default_dtype_of_kind(kind: DTypeKind, cfg: DTypeConfig) -> DType {
    match kind {
        DTypeKind::Bool => DType::Bool,
        DTypeKind::SignedInteger => default_int(cfg),
        DTypeKind::UnsignedInteger => default_uint(cfg),
        DTypeKind::Floating => default_float(cfg),
        DTypeKind::Complex => default_complex(cfg),
        DTypeKind::Key => DType::Key,
    }
}

/// The aval JAX gives a Python scalar (`jax.typeof(1)`): `True` is a strong `bool`; `1`,
/// `1.0` and `1j` are weak and of the default int/float/complex dtype, so `~i32`, `~f32`,
/// `~c64` without x64 and `~i64`, `~f64`, `~c128` with it.
pub fn python_scalar_dtype(kind: PyScalarKind, cfg: DTypeConfig) -> WeakDType {
    match kind {
        PyScalarKind::Bool => WeakDType::strong(DType::Bool),
        PyScalarKind::Int => WeakDType::weakly_typed(default_int(cfg)),
        PyScalarKind::Float => WeakDType::weakly_typed(default_float(cfg)),
        PyScalarKind::Complex => WeakDType::weakly_typed(default_complex(cfg)),
    }
}

/// `dtypes.canonicalize_dtype`: with x64 off, `int64 -> int32`, `uint64 -> uint32`,
/// `float64 -> float32`, `complex128 -> complex64`; with x64 on, the dtype unchanged.
/// This is what `jnp.zeros(3, jnp.float64)` and `jnp.asarray(np_array)` do (with a warning).
pub fn canonicalize(d: DType, cfg: DTypeConfig) -> DType {
    if cfg.enable_x64 {
        return d;
    }
    match d {
        DType::I64 => DType::I32,
        DType::U64 => DType::U32,
        DType::F64 => DType::F32,
        DType::C128 => DType::C64,
        other => other,
    }
}

/// An operand given to `jnp.result_type` as a dtype specifier (`np.float64`, `'int8'`): it
/// is canonicalized and strong (`dtypes.dtype(spec)`), unlike an array, whose dtype is
/// taken as it is.
pub fn dtype_specifier_operand(d: DType, cfg: DTypeConfig) -> WeakDType {
    WeakDType::strong(canonicalize(d, cfg))
}

/// The least upper bound of `nodes` on the standard promotion lattice
/// (`dtypes._least_upper_bound`); `None` only for an empty list.
pub fn least_upper_bound(nodes: &[JaxType], cfg: DTypeConfig) -> Option<JaxType> {
    let upper_bounds = if cfg.enable_x64 { &lattice::UPPER_BOUNDS_X64 } else { &lattice::UPPER_BOUNDS_X32 };
    let given = nodes.iter().fold(0u32, |set, &node| set | lattice::bit(node));
    if given == 0 {
        return None;
    }
    // Common upper bounds: the nodes at or above every operand.
    let common = nodes.iter().fold(lattice::ALL_NODES, |set, &node| set & upper_bounds[lattice::index(node)]);
    // If an operand is itself a common upper bound it is the least one; otherwise the least
    // is the common bound whose own upper bounds hold all the others.
    let least = if common & given != 0 {
        common & given
    } else {
        lattice::nodes_in(common)
            .filter(|&node| common & !upper_bounds[lattice::index(node)] == 0)
            .fold(0u32, |set, node| set | lattice::bit(node))
    };
    lattice::nodes_in(least).next()
}

/// `jnp.promote_types(a, b)` for two dtypes. Neither the operands nor the result are
/// canonicalized: with x64 off, `promote_types(float64, float32)` is still `float64`. The
/// lattice does depend on x64: `promote_types(uint32, int32)` is `int32` without it and
/// `int64` with it, and `promote_types(uint64, int64)` is `float64` in both.
pub fn promote_types(a: DType, b: DType, cfg: DTypeConfig) -> DType {
    promote_jax_types(JaxType::DType(a), JaxType::DType(b), cfg)
}

/// `jnp.promote_types(a, b)` where either may be a Python type: `promote_types(int, int8)`
/// is `int8`, and a Python-type result is numpy's `np.dtype(int) == int64` (likewise
/// `float64`, `complex128`), even with x64 off.
pub fn promote_jax_types(a: JaxType, b: JaxType, cfg: DTypeConfig) -> DType {
    least_upper_bound(&[a, b], cfg).unwrap_or(a).numpy_dtype()
}

/// The dtype and weak flag `jnp`'s promoting functions convert their operands to
/// (`dtypes.lattice_result_type`, called by `promote_dtypes`): what `jnp.add(x, y)`,
/// `x * y`, `jnp.where(c, x, y)` compute in. Operands are avals, taken as they are:
///
/// ```python
/// if len(operands) == 1:                        x's dtype and weak flag, unchanged
/// elif all one dtype and not all weak:          that dtype, strong, unchanged
/// elif all weak:                                lub of the dtypes taken as strong, weak
/// else:                                         lub of the _jax_type nodes, weak if it is
///                                               the int/float/complex node
/// ```
///
/// the last two canonicalized under `cfg`, and a `bool` result never weak. So
/// `~bf16 + ~bf16 -> ~bf16`, `~f16 + ~i32 -> ~f16`, `f16 + 1.0 -> f16`, `i8 + 1 -> i8`,
/// `u32 + i32 -> i32` (x64 off) or `i64` (on). Two strong operands can give a weak result:
/// with x64 on, `u64 + i64 -> ~f64`, since their bound is the Python `float` node.
pub fn lattice_result_type(operands: &[WeakDType], cfg: DTypeConfig) -> Result<WeakDType, DTypeError> {
    let (first, rest) = operands.split_first().ok_or(DTypeError::NoOperands)?;
    let all_weak = operands.iter().all(|operand| operand.weak);
    let (dtype, weak) = if rest.is_empty() {
        (first.dtype, first.weak)
    } else if rest.iter().all(|operand| operand.dtype == first.dtype) && !all_weak {
        (first.dtype, false)
    } else if all_weak {
        let nodes: Vec<JaxType> = operands.iter().map(|operand| JaxType::DType(operand.dtype)).collect();
        let bound = least_upper_bound(&nodes, cfg).ok_or(DTypeError::NoOperands)?;
        (bound.canonical_dtype(cfg), true)
    } else {
        let nodes: Vec<JaxType> = operands.iter().map(|operand| operand.jax_type()).collect();
        let bound = least_upper_bound(&nodes, cfg).ok_or(DTypeError::NoOperands)?;
        (bound.canonical_dtype(cfg), bound.is_python_type())
    };
    Ok(WeakDType { dtype, weak: weak && dtype != DType::Bool })
}

/// `jnp.result_type(*operands)` with the weak flag `dtypes.result_type(...,
/// return_weak_type_flag=True)` also returns: [`lattice_result_type`], then a weak result
/// takes the default dtype of its kind. So `result_type(~bf16) = ~f32` although
/// `~bf16 + ~bf16` stays `~bf16`, and `result_type(~u8) = ~u32` (`~u64` with x64).
/// Operands given as dtype specifiers go through [`dtype_specifier_operand`] first.
pub fn result_type(operands: &[WeakDType], cfg: DTypeConfig) -> Result<WeakDType, DTypeError> {
    let lattice = lattice_result_type(operands, cfg)?;
    if lattice.weak {
        Ok(WeakDType::weakly_typed(default_dtype_of_kind(lattice.dtype.kind(), cfg)))
    } else {
        Ok(lattice)
    }
}

/// The result of a binary `jnp` function that promotes its operands (`promote_args`) and
/// keeps the promoted dtype: the [`lattice_result_type`] of the two operands. Checked
/// against real JAX for `jnp.add` (`+`), and by hand for `subtract`, `multiply`, `maximum`
/// and `where`'s two branches. Whether the function accepts the dtype at all is its own
/// rule: `jnp.subtract` rejects `bool`.
pub fn binary_op_result_type(a: WeakDType, b: WeakDType, cfg: DTypeConfig) -> WeakDType {
    let (dtype, weak) = lattice_pair(a, b, cfg);
    WeakDType { dtype, weak }
}

/// `jnp.true_divide(x, y)` / `x / y` (`promote_args_inexact`): the operands' lattice result
/// made inexact by [`DType::to_inexact`], keeping its weak flag. `i32 / i32 -> f32` and
/// `i64 / i64 -> f64` whatever x64 says (with x64 on, `int32 / int32` is `float32`, not
/// `float64` as in numpy); `1 / 2 -> ~f32` (`~f64` with x64); `bool / bool -> f32`.
pub fn true_divide_result_type(a: WeakDType, b: WeakDType, cfg: DTypeConfig) -> WeakDType {
    let (dtype, weak) = lattice_pair(a, b, cfg);
    WeakDType { dtype: dtype.to_inexact(), weak }
}

/// `jnp.sum(x)` and `jnp.prod(x)` (`promote_integers=True`, no `dtype=`): `bool` becomes the
/// default int, a narrower int the default int, a narrower unsigned int the default uint
/// (`_promote_integer_dtype`); others keep their dtype. So `sum(bool) = sum(i8) = i32` and
/// `sum(u8) = u32` (`i64`, `u64` with x64). The result is never weak: `sum(~f32) = f32`.
pub fn sum_result_type(x: WeakDType, cfg: DTypeConfig) -> WeakDType {
    let dtype = match x.dtype.kind() {
        DTypeKind::Bool => default_int(cfg),
        DTypeKind::SignedInteger if x.dtype.bits() < default_int(cfg).bits() => default_int(cfg),
        DTypeKind::UnsignedInteger if x.dtype.bits() < default_uint(cfg).bits() => default_uint(cfg),
        _ => x.dtype,
    };
    WeakDType::strong(dtype)
}

/// `jnp.prod(x)`: the same rule as [`sum_result_type`].
pub fn prod_result_type(x: WeakDType, cfg: DTypeConfig) -> WeakDType {
    sum_result_type(x, cfg)
}

/// `jnp.max(x)` and `jnp.min(x)`: the input dtype, never weak.
pub fn max_result_type(x: WeakDType) -> WeakDType {
    WeakDType::strong(x.dtype)
}

/// `jnp.mean(x)` (no `dtype=`): [`DType::to_inexact`] of the input dtype, never weak. So
/// `mean(bool) = mean(i8) = mean(i32) = f32` and `mean(i64) = f64` whatever x64 says;
/// `mean(bf16) = bf16` (computed in `float32`, cast back).
pub fn mean_result_type(x: WeakDType) -> WeakDType {
    WeakDType::strong(x.dtype.to_inexact())
}

/// `jnp.var(x)` and `jnp.std(x)` (`_var_promote_types`, no `dtype=`): bool and integers go
/// through [`DType::to_inexact`], complex gives its real dtype (`var(c64) = f32`); never weak.
pub fn var_result_type(x: WeakDType) -> WeakDType {
    let dtype = if x.dtype.is_inexact() { x.dtype.real_dtype() } else { x.dtype.to_inexact() };
    WeakDType::strong(dtype)
}

/// [`lattice_result_type`] of exactly two operands, which cannot fail.
fn lattice_pair(a: WeakDType, b: WeakDType, cfg: DTypeConfig) -> (DType, bool) {
    match lattice_result_type(&[a, b], cfg) {
        Ok(result) => (result.dtype, result.weak),
        // Unreachable: two operands always have a least upper bound on the standard lattice.
        Err(DTypeError::NoOperands) => (a.dtype, false),
    }
}

/// JAX's standard promotion lattice (`_type_promotion_lattice(strict=False, x64)`), as sets
/// of upper bounds: bit `i` of a set is the node with [`index`] `i`.
mod lattice {
    use super::{DType, JaxType, ALL_DTYPES};

    const PY_INT: usize = 15;
    const PY_FLOAT: usize = 16;
    const PY_COMPLEX: usize = 17;
    /// [`DType::Key`]: a node with no edges, so keys promote only with keys.
    const KEY: usize = 18;
    const NODE_COUNT: usize = 19;
    pub(super) const ALL_NODES: u32 = (1 << NODE_COUNT) - 1;

    pub(super) const fn index(node: JaxType) -> usize {
        match node {
            JaxType::DType(DType::Key) => KEY,
            JaxType::DType(d) => d as usize,
            JaxType::PyInt => PY_INT,
            JaxType::PyFloat => PY_FLOAT,
            JaxType::PyComplex => PY_COMPLEX,
        }
    }

    pub(super) const fn bit(node: JaxType) -> u32 {
        1 << index(node)
    }

    fn node(index: usize) -> Option<JaxType> {
        match index {
            PY_INT => Some(JaxType::PyInt),
            PY_FLOAT => Some(JaxType::PyFloat),
            PY_COMPLEX => Some(JaxType::PyComplex),
            KEY => Some(JaxType::DType(DType::Key)),
            _ => ALL_DTYPES.get(index).copied().map(JaxType::DType),
        }
    }

    pub(super) fn nodes_in(set: u32) -> impl Iterator<Item = JaxType> {
        (0..NODE_COUNT).filter(move |i| set & (1 << i) != 0).filter_map(node)
    }

    const fn set(nodes: &[JaxType]) -> u32 {
        let mut out = 0;
        let mut i = 0;
        while i < nodes.len() {
            out |= bit(nodes[i]);
            i += 1;
        }
        out
    }

    const fn d(dtype: DType) -> JaxType {
        JaxType::DType(dtype)
    }

    /// Each node's immediate successors. In Python (`i_, f_, c_` are `int, float, complex`):
    ///
    /// ```python
    /// b1: [i_],  i_: [u8, i8],  u8: [i16, u16],  u16: [i32, u32],  u32: [i64, u64],
    /// u64: [f_],  i8: [i16],  i16: [i32],  i32: [i64],  i64: [f_],
    /// f_: [bf16, f16, c_],  bf16: [f32],  f16: [f32],  f32: [f64, c64],  f64: [c128],
    /// c_: [c64],  c64: [c128],  c128: []
    /// if not x64: u32 = [i32, u64]   # no 64-bit type from 32-bit inputs: u32 x i32 -> i32
    /// ```
    const fn successors(x64: bool) -> [u32; NODE_COUNT] {
        let mut out = [0u32; NODE_COUNT];
        out[DType::Bool as usize] = set(&[JaxType::PyInt]);
        out[PY_INT] = set(&[d(DType::U8), d(DType::I8)]);
        out[DType::U8 as usize] = set(&[d(DType::I16), d(DType::U16)]);
        out[DType::U16 as usize] = set(&[d(DType::I32), d(DType::U32)]);
        out[DType::U32 as usize] = if x64 { set(&[d(DType::I64), d(DType::U64)]) } else { set(&[d(DType::I32), d(DType::U64)]) };
        out[DType::U64 as usize] = set(&[JaxType::PyFloat]);
        out[DType::I8 as usize] = set(&[d(DType::I16)]);
        out[DType::I16 as usize] = set(&[d(DType::I32)]);
        out[DType::I32 as usize] = set(&[d(DType::I64)]);
        out[DType::I64 as usize] = set(&[JaxType::PyFloat]);
        out[PY_FLOAT] = set(&[d(DType::BF16), d(DType::F16), JaxType::PyComplex]);
        out[DType::BF16 as usize] = set(&[d(DType::F32)]);
        out[DType::F16 as usize] = set(&[d(DType::F32)]);
        out[DType::F32 as usize] = set(&[d(DType::F64), d(DType::C64)]);
        out[DType::F64 as usize] = set(&[d(DType::C128)]);
        out[PY_COMPLEX] = set(&[d(DType::C64)]);
        out[DType::C64 as usize] = set(&[d(DType::C128)]);
        out
    }

    /// Reflexive-transitive closure of [`successors`]: every node at or above each node.
    const fn upper_bounds(x64: bool) -> [u32; NODE_COUNT] {
        let successors = successors(x64);
        let mut out = [0u32; NODE_COUNT];
        let mut n = 0;
        while n < NODE_COUNT {
            let mut reached = 1u32 << n;
            loop {
                let mut next = reached;
                let mut m = 0;
                while m < NODE_COUNT {
                    if reached & (1 << m) != 0 {
                        next |= successors[m];
                    }
                    m += 1;
                }
                if next == reached {
                    break;
                }
                reached = next;
            }
            out[n] = reached;
            n += 1;
        }
        out
    }

    pub(super) const UPPER_BOUNDS_X64: [u32; NODE_COUNT] = upper_bounds(true);
    pub(super) const UPPER_BOUNDS_X32: [u32; NODE_COUNT] = upper_bounds(false);
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    const X32: DTypeConfig = DTypeConfig { enable_x64: false };
    const X64: DTypeConfig = DTypeConfig { enable_x64: true };

    fn names_round_trip() {
        for &d in DType::all() {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(DType::from_name(d.short_name()), Some(d));
        }
        assert_eq!(DType::from_name("float"), None);
        assert_eq!(WeakDType::from_name("~f32"), Some(WeakDType::weakly_typed(DType::F32)));
        assert_eq!(WeakDType::weakly_typed(DType::BF16).to_string(), "~bfloat16");
    }

    fn weak_operands_do_not_widen() {
        let f16 = WeakDType::strong(DType::F16);
        let float = python_scalar_dtype(PyScalarKind::Float, X32);
        assert_eq!(binary_op_result_type(f16, float, X32), f16);
        let i8 = WeakDType::strong(DType::I8);
        let int = python_scalar_dtype(PyScalarKind::Int, X64);
        assert_eq!(binary_op_result_type(int, i8, X64), i8);
    }

    fn lattice_depends_on_x64_for_u32_i32() {
        assert_eq!(promote_types(DType::U32, DType::I32, X32), DType::I32);
        assert_eq!(promote_types(DType::U32, DType::I32, X64), DType::I64);
        assert_eq!(promote_types(DType::U64, DType::I64, X32), DType::F64);
    }

    fn empty_operands_are_an_error() {
        assert_eq!(result_type(&[], X32), Err(DTypeError::NoOperands));
    }

    crate::unit_tests::list![names_round_trip, weak_operands_do_not_widen, lattice_depends_on_x64_for_u32_i32, empty_operands_are_an_error];
}
