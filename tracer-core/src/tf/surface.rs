//! The TensorFlow API surface tracelens models, in one place: every modelled function of
//! `tf`, `tf.math`, `tf.nn`, `tf.linalg`, `tf.random`, `tf.debugging`, `tf.autograph` and
//! `tf.config`, with the modules TensorFlow 2.21 exports it from (checked against real
//! TensorFlow by `tests/conformance/tf_surface_check.py`). Entries not modelled yet are
//! commented out; an attribute missing here is opaque, so an unmodelled API never produces
//! a finding. How each one is served is `ops::route`'s exhaustive match.

macro_rules! tf_surface {
    ($($variant:ident = $name:literal in [$($module:literal),+],)*) => {
        /// A function (or callable class) of TensorFlow's public API.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum TfFn { $($variant),* }

        impl TfFn {
            pub const ALL: &'static [TfFn] = &[$(TfFn::$variant),*];
            /// The name it has in every module that exports it.
            pub fn name(self) -> &'static str { match self { $(TfFn::$variant => $name),* } }
            /// The modules that export it, the first being where TensorFlow documents it.
            pub fn modules(self) -> &'static [&'static str] { match self { $(TfFn::$variant => &[$($module),+]),* } }
            /// The name a program importing `tensorflow as tf` calls it by (`tf.nn.relu`), in
            /// the module TensorFlow documents it in.
            pub fn qualified(self) -> String {
                let module = self.modules()[0];
                format!("tf{}.{}", module.strip_prefix("tensorflow").unwrap_or(module), self.name())
            }
            pub fn lookup(module: &str, name: &str) -> Option<TfFn> {
                match name {
                    $($name if [$($module),+].contains(&module) => Some(TfFn::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

tf_surface! {
    // tf.function and state
    Function = "function" in ["tensorflow"],
    Variable = "Variable" in ["tensorflow"],
    TensorSpec = "TensorSpec" in ["tensorflow"],
    TensorShape = "TensorShape" in ["tensorflow"],
    Print = "print" in ["tensorflow"],
    Cond = "cond" in ["tensorflow"],
    SwitchCase = "switch_case" in ["tensorflow"],
    WhileLoop = "while_loop" in ["tensorflow"],
    TensorArray = "TensorArray" in ["tensorflow"],
    GradientTape = "GradientTape" in ["tensorflow"],
    IsTensor = "is_tensor" in ["tensorflow"],
    // Module = "Module" in ["tensorflow"],
    DoNotConvert = "do_not_convert" in ["tensorflow.autograph.experimental"],
    RunFunctionsEagerly = "run_functions_eagerly" in ["tensorflow.config"],

    // creation
    Constant = "constant" in ["tensorflow"],
    ConvertToTensor = "convert_to_tensor" in ["tensorflow"],
    Zeros = "zeros" in ["tensorflow"],
    Ones = "ones" in ["tensorflow"],
    ZerosLike = "zeros_like" in ["tensorflow"],
    OnesLike = "ones_like" in ["tensorflow"],
    Fill = "fill" in ["tensorflow"],
    Eye = "eye" in ["tensorflow", "tensorflow.linalg"],
    Range = "range" in ["tensorflow"],
    Linspace = "linspace" in ["tensorflow"],
    Identity = "identity" in ["tensorflow"],
    OneHot = "one_hot" in ["tensorflow"],
    StopGradient = "stop_gradient" in ["tensorflow"],

    // elementwise: two tensors of one dtype
    Add = "add" in ["tensorflow", "tensorflow.math"],
    Subtract = "subtract" in ["tensorflow", "tensorflow.math"],
    Multiply = "multiply" in ["tensorflow", "tensorflow.math"],
    ScalarMul = "scalar_mul" in ["tensorflow", "tensorflow.math"],
    Divide = "divide" in ["tensorflow", "tensorflow.math"],
    Truediv = "truediv" in ["tensorflow", "tensorflow.math"],
    Floordiv = "floordiv" in ["tensorflow.math"],
    Floormod = "floormod" in ["tensorflow.math"],
    Mod = "mod" in ["tensorflow.math"],
    Pow = "pow" in ["tensorflow", "tensorflow.math"],
    Maximum = "maximum" in ["tensorflow", "tensorflow.math"],
    Minimum = "minimum" in ["tensorflow", "tensorflow.math"],
    SquaredDifference = "squared_difference" in ["tensorflow.math"],
    Equal = "equal" in ["tensorflow", "tensorflow.math"],
    NotEqual = "not_equal" in ["tensorflow", "tensorflow.math"],
    Less = "less" in ["tensorflow", "tensorflow.math"],
    LessEqual = "less_equal" in ["tensorflow", "tensorflow.math"],
    Greater = "greater" in ["tensorflow", "tensorflow.math"],
    GreaterEqual = "greater_equal" in ["tensorflow", "tensorflow.math"],
    LogicalAnd = "logical_and" in ["tensorflow", "tensorflow.math"],
    LogicalOr = "logical_or" in ["tensorflow", "tensorflow.math"],
    // divide_no_nan = "divide_no_nan" in ["tensorflow.math"],

    // elementwise: one tensor
    Negative = "negative" in ["tensorflow", "tensorflow.math"],
    Abs = "abs" in ["tensorflow", "tensorflow.math"],
    Exp = "exp" in ["tensorflow", "tensorflow.math"],
    Log = "log" in ["tensorflow.math"],
    Sqrt = "sqrt" in ["tensorflow", "tensorflow.math"],
    Rsqrt = "rsqrt" in ["tensorflow.math"],
    Square = "square" in ["tensorflow", "tensorflow.math"],
    Tanh = "tanh" in ["tensorflow", "tensorflow.math", "tensorflow.nn"],
    Sigmoid = "sigmoid" in ["tensorflow", "tensorflow.math", "tensorflow.nn"],
    Sin = "sin" in ["tensorflow", "tensorflow.math"],
    Cos = "cos" in ["tensorflow", "tensorflow.math"],
    Tan = "tan" in ["tensorflow", "tensorflow.math"],
    Sign = "sign" in ["tensorflow", "tensorflow.math"],
    Floor = "floor" in ["tensorflow", "tensorflow.math"],
    Ceil = "ceil" in ["tensorflow.math"],
    Round = "round" in ["tensorflow", "tensorflow.math"],
    Log1p = "log1p" in ["tensorflow.math"],
    Expm1 = "expm1" in ["tensorflow.math"],
    Reciprocal = "reciprocal" in ["tensorflow.math"],
    LogicalNot = "logical_not" in ["tensorflow", "tensorflow.math"],
    IsNan = "is_nan" in ["tensorflow.math"],
    IsFinite = "is_finite" in ["tensorflow.math"],
    IsInf = "is_inf" in ["tensorflow.math"],
    Erf = "erf" in ["tensorflow.math"],
    Softplus = "softplus" in ["tensorflow.math", "tensorflow.nn"],
    Relu = "relu" in ["tensorflow.nn"],
    Relu6 = "relu6" in ["tensorflow.nn"],
    Elu = "elu" in ["tensorflow.nn"],
    Selu = "selu" in ["tensorflow.nn"],
    Gelu = "gelu" in ["tensorflow.nn"],
    LeakyRelu = "leaky_relu" in ["tensorflow.nn"],

    // reductions
    ReduceSum = "reduce_sum" in ["tensorflow", "tensorflow.math"],
    ReduceMean = "reduce_mean" in ["tensorflow", "tensorflow.math"],
    ReduceMax = "reduce_max" in ["tensorflow", "tensorflow.math"],
    ReduceMin = "reduce_min" in ["tensorflow", "tensorflow.math"],
    ReduceProd = "reduce_prod" in ["tensorflow", "tensorflow.math"],
    ReduceAll = "reduce_all" in ["tensorflow", "tensorflow.math"],
    ReduceAny = "reduce_any" in ["tensorflow", "tensorflow.math"],
    ReduceLogsumexp = "reduce_logsumexp" in ["tensorflow", "tensorflow.math"],
    ReduceStd = "reduce_std" in ["tensorflow.math"],
    ReduceVariance = "reduce_variance" in ["tensorflow.math"],
    Argmax = "argmax" in ["tensorflow", "tensorflow.math"],
    Argmin = "argmin" in ["tensorflow", "tensorflow.math"],
    Cumsum = "cumsum" in ["tensorflow", "tensorflow.math"],
    Cumprod = "cumprod" in ["tensorflow.math"],
    UnsortedSegmentSum = "unsorted_segment_sum" in ["tensorflow.math"],
    AddN = "add_n" in ["tensorflow", "tensorflow.math"],
    Softmax = "softmax" in ["tensorflow.nn", "tensorflow.math"],
    LogSoftmax = "log_softmax" in ["tensorflow.nn", "tensorflow.math"],
    L2Normalize = "l2_normalize" in ["tensorflow.math", "tensorflow.nn", "tensorflow.linalg"],
    SparseSoftmaxCrossEntropyWithLogits = "sparse_softmax_cross_entropy_with_logits" in ["tensorflow.nn"],
    SigmoidCrossEntropyWithLogits = "sigmoid_cross_entropy_with_logits" in ["tensorflow.nn"],
    SoftmaxCrossEntropyWithLogits = "softmax_cross_entropy_with_logits" in ["tensorflow.nn"],

    // shape
    Reshape = "reshape" in ["tensorflow"],
    Transpose = "transpose" in ["tensorflow"],
    ExpandDims = "expand_dims" in ["tensorflow"],
    Squeeze = "squeeze" in ["tensorflow"],
    Concat = "concat" in ["tensorflow"],
    Stack = "stack" in ["tensorflow"],
    Unstack = "unstack" in ["tensorflow"],
    Split = "split" in ["tensorflow"],
    Tile = "tile" in ["tensorflow"],
    BroadcastTo = "broadcast_to" in ["tensorflow"],
    Shape = "shape" in ["tensorflow"],
    Rank = "rank" in ["tensorflow"],
    Size = "size" in ["tensorflow"],
    Reverse = "reverse" in ["tensorflow"],
    Cast = "cast" in ["tensorflow"],
    ClipByValue = "clip_by_value" in ["tensorflow"],
    ClipByNorm = "clip_by_norm" in ["tensorflow"],
    Where = "where" in ["tensorflow"],
    // pad = "pad" in ["tensorflow"],

    // indexing
    Gather = "gather" in ["tensorflow"],
    EmbeddingLookup = "embedding_lookup" in ["tensorflow.nn"],
    GatherNd = "gather_nd" in ["tensorflow"],
    ScatterNd = "scatter_nd" in ["tensorflow"],
    TensorScatterNdUpdate = "tensor_scatter_nd_update" in ["tensorflow"],
    TensorScatterNdAdd = "tensor_scatter_nd_add" in ["tensorflow"],
    TensorScatterNdSub = "tensor_scatter_nd_sub" in ["tensorflow"],
    TensorScatterNdMin = "tensor_scatter_nd_min" in ["tensorflow"],
    TensorScatterNdMax = "tensor_scatter_nd_max" in ["tensorflow"],
    // boolean_mask = "boolean_mask" in ["tensorflow"],
    Sort = "sort" in ["tensorflow"],
    Argsort = "argsort" in ["tensorflow"],

    // products and linear algebra
    Matmul = "matmul" in ["tensorflow", "tensorflow.linalg"],
    Einsum = "einsum" in ["tensorflow", "tensorflow.linalg"],
    Tensordot = "tensordot" in ["tensorflow", "tensorflow.linalg"],
    Matvec = "matvec" in ["tensorflow.linalg"],
    Inv = "inv" in ["tensorflow.linalg"],
    Det = "det" in ["tensorflow.linalg"],
    Trace = "trace" in ["tensorflow.linalg"],
    Cholesky = "cholesky" in ["tensorflow.linalg"],
    Solve = "solve" in ["tensorflow.linalg"],
    Norm = "norm" in ["tensorflow", "tensorflow.linalg"],

    // tf.random: shapes and dtypes; the values (Philox streams) are not modelled
    RandomNormal = "normal" in ["tensorflow.random"],
    RandomUniform = "uniform" in ["tensorflow.random"],
    TruncatedNormal = "truncated_normal" in ["tensorflow.random"],
    StatelessNormal = "stateless_normal" in ["tensorflow.random"],
    StatelessUniform = "stateless_uniform" in ["tensorflow.random"],
    StatelessTruncatedNormal = "stateless_truncated_normal" in ["tensorflow.random"],
    // Generator: a Python class of the `_tracelens_tf` shim (`mod.rs`).

    // tf.debugging
    CheckNumerics = "check_numerics" in ["tensorflow.debugging"],
    AssertAllFinite = "assert_all_finite" in ["tensorflow.debugging"],
    EnableCheckNumerics = "enable_check_numerics" in ["tensorflow.debugging"],
    DisableCheckNumerics = "disable_check_numerics" in ["tensorflow.debugging"],
    AssertEqual = "assert_equal" in ["tensorflow.debugging", "tensorflow"],
    AssertNoneEqual = "assert_none_equal" in ["tensorflow.debugging"],
    AssertLess = "assert_less" in ["tensorflow.debugging", "tensorflow"],
    AssertLessEqual = "assert_less_equal" in ["tensorflow.debugging"],
    AssertGreater = "assert_greater" in ["tensorflow.debugging", "tensorflow"],
    AssertGreaterEqual = "assert_greater_equal" in ["tensorflow.debugging"],
    AssertPositive = "assert_positive" in ["tensorflow.debugging"],
    AssertNegative = "assert_negative" in ["tensorflow.debugging"],
    AssertNonNegative = "assert_non_negative" in ["tensorflow.debugging"],
    AssertNonPositive = "assert_non_positive" in ["tensorflow.debugging"],
    AssertRank = "assert_rank" in ["tensorflow.debugging", "tensorflow"],
    AssertRankAtLeast = "assert_rank_at_least" in ["tensorflow.debugging"],
    AssertRankIn = "assert_rank_in" in ["tensorflow.debugging"],
    AssertType = "assert_type" in ["tensorflow.debugging"],
    AssertInteger = "assert_integer" in ["tensorflow.debugging"],
    AssertScalar = "assert_scalar" in ["tensorflow.debugging"],
    AssertNear = "assert_near" in ["tensorflow.debugging"],
    AssertShapes = "assert_shapes" in ["tensorflow.debugging"],
}
