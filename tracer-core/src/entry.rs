//! Entry points beyond the script and its tests (design.md §9): functions that nothing calls
//! are traced as `jax.jit` would trace them, from a `# tracelens: trace f(f32[8,4], i32[])`
//! comment above the `def` (`f32[b,4]` names a dimension), or from jaxtyping annotations
//! (`x: Float[Array, "b n"]`, beside which a parameter annotated as an array of no stated
//! shape, `key: jax.Array`, is a tracer of unknown aval). A named dimension is symbolic: it is
//! bound consistently across the arguments, and `crate::symbolic` says which of its findings
//! hold for every size.

use std::rc::Rc;

use crate::interp::value::{ModuleObj, Value};
use crate::interp::{FileId, Frame, Interp};
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::surface::JaxFn;
use crate::symbolic::SymbolicDims;
use crate::syntax::ast::{Expr, ExprKind, FunctionDef, Span, StmtKind};

/// One dimension as the user wrote it: a size, or a name (`b`) whose size is symbolic.
#[derive(Clone, Debug, PartialEq)]
enum DimSpec {
    Size(usize),
    Name(String),
}

/// An aval with named dimensions: `f32[b,4]`.
#[derive(Clone, Debug, PartialEq)]
struct AvalSpec {
    dims: Vec<DimSpec>,
    dtype: DType,
    weak: bool,
}

impl AvalSpec {
    /// The aval with each name at its size in this analysis (`crate::symbolic`).
    fn resolve(&self, dims: &mut SymbolicDims, text: &str) -> Aval {
        let shape: Vec<usize> = self
            .dims
            .iter()
            .map(|d| match d {
                DimSpec::Size(n) => *n,
                DimSpec::Name(name) => dims.size(name, text),
            })
            .collect();
        Aval::new(&shape, self.dtype).weak(self.weak)
    }
}

/// A dimension of a `# tracelens: trace` comment or a jaxtyping string: `8`, or a name.
/// Variadic (`*batch`, `...`), broadcastable (`#n`) and computed (`n+1`) ones are not modelled.
fn parse_dim(text: &str) -> Option<DimSpec> {
    let text = text.trim();
    if let Ok(n) = text.parse::<usize>() {
        return Some(DimSpec::Size(n));
    }
    let mut chars = text.chars();
    let first = chars.next()?;
    ((first.is_alphabetic() || first == '_') && chars.all(|c| c.is_alphanumeric() || c == '_')).then(|| DimSpec::Name(text.to_string()))
}

/// Parses `f32[8,4]`, `~f32[]`, `i32[3]`, `bool[2,2]`.
pub fn parse_aval(text: &str) -> Option<Aval> {
    let spec = parse_aval_spec(text)?;
    let shape: Option<Vec<usize>> = spec
        .dims
        .iter()
        .map(|d| match d {
            DimSpec::Size(n) => Some(*n),
            DimSpec::Name(_) => None,
        })
        .collect();
    Some(Aval::new(&shape?, spec.dtype).weak(spec.weak))
}

/// Parses `f32[b,4]` as well as `f32[8,4]`.
fn parse_aval_spec(text: &str) -> Option<AvalSpec> {
    let text = text.trim();
    let (weak, text) = match text.strip_prefix('~') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (dtype, dims) = text.split_once('[')?;
    let dims = dims.strip_suffix(']')?;
    let dtype = DType::from_name(dtype.trim())?;
    let dims = if dims.trim().is_empty() { Some(Vec::new()) } else { dims.split(',').map(parse_dim).collect() };
    Some(AvalSpec { dims: dims?, dtype, weak })
}

/// `f(f32[8,4], i32[])` -> ("f", avals).
fn parse_trace_comment(text: &str) -> Option<(String, Vec<AvalSpec>)> {
    let (name, rest) = text.trim().split_once('(')?;
    let inner = rest.trim_end().strip_suffix(')')?;
    let mut avals = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in inner.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                avals.push(parse_aval_spec(&current)?);
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        avals.push(parse_aval_spec(&current)?);
    }
    Some((name.trim().to_string(), avals))
}

/// Traces the functions of `module` that only comments or annotations reach.
pub fn trace_uncalled(interp: &mut Interp, file: FileId, module: &Rc<ModuleObj>) {
    let ast = interp.files[file as usize].module.clone();
    let text = &interp.files[file as usize].text;
    // `# tracelens: trace f(...)` comments, wherever they stand.
    // Each argument's aval, or `None` for an array whose shape no annotation states.
    let mut requests: Vec<(String, Vec<Option<AvalSpec>>, Span)> = Vec::new();
    const MARKER: &str = "# tracelens: trace ";
    let mut after_line = 0;
    // Searched with `memmem` (vectorised): the whole module, on every edit.
    for pos in memchr::memmem::find_iter(text.as_bytes(), MARKER) {
        if pos < after_line {
            continue; // the first marker of a line counts
        }
        after_line = text[pos..].find('\n').map_or(text.len(), |n| pos + n + 1);
        if let Some((name, avals)) = parse_trace_comment(&text[pos + MARKER.len()..after_line]) {
            let avals = avals.into_iter().map(Some).collect();
            requests.push((name, avals, Span::new(pos, pos + text[pos..after_line].trim_end().len())));
        }
    }
    for stmt in &ast.body {
        let StmtKind::FunctionDef(def) = &stmt.kind else { continue };
        if requests.iter().any(|(n, _, _)| n.as_str() == def.name.as_ref()) || interp.called.contains(&(Rc::as_ptr(def) as usize)) {
            continue;
        }
        if let Some(avals) = jaxtyping_avals(def) {
            requests.push((def.name.to_string(), avals, def.name_span));
        }
    }
    if requests.is_empty() {
        return;
    }
    let text = text.clone();
    for (name, avals, span) in requests {
        let Some(fun) = module.dict.borrow().get(name.as_str()).cloned() else { continue };
        interp.restart_clock();
        interp.frames.push(Frame { file, name: Rc::from("<tracelens: trace>"), span, class: None, self_value: None });
        let args: Vec<Value> = avals
            .iter()
            .map(|a| match a {
                Some(a) => {
                    Value::Array(Array::unknown(a.resolve(&mut interp.entry_state.dims, &text), "an argument described by its aval"))
                }
                None => Value::opaque_tracer("an argument annotated as an array of no stated shape"),
            })
            .collect();
        let route = std::mem::replace(&mut interp.jax.route, crate::jax::Route::Annotations);
        let result = trace_as_jit(interp, fun, args);
        interp.jax.route = route;
        interp.frames.pop();
        if let Err(flow) = result {
            interp.report_uncaught(flow, &format!("the trace of {name}"));
        }
    }
}

fn trace_as_jit(interp: &mut Interp, fun: Value, args: Vec<Value>) -> crate::interp::PyResult<Value> {
    // An already-jitted function is called as it is; a plain one is wrapped in jax.jit.
    let jitted = match &fun {
        Value::Builtin(b) if matches!(&**b, crate::interp::builtins::Builtin::Object(crate::jax::api::JaxObject::Jitted(_))) => fun,
        _ => interp.call(&Value::Builtin(Rc::new(crate::interp::builtins::Builtin::Jax(JaxFn::Jit))), vec![fun], Vec::new())?,
    };
    interp.call(&jitted, args, Vec::new())
}

/// Avals from the annotations of the required positional parameters, or `None` unless each
/// is an array and at least one states its shape in jaxtyping: `Float[Array, "b n"]` gives its
/// aval, an array of no stated shape (`jax.Array`, `jnp.ndarray`, `Float[Array, "*batch"]`)
/// `None`, an unknown tracer (a function of `jax.Array`s alone is left to the other routes).
fn jaxtyping_avals(def: &FunctionDef) -> Option<Vec<Option<AvalSpec>>> {
    let params: Vec<_> = def.params.posonly.iter().chain(&def.params.args).collect();
    if params.is_empty() || def.params.vararg.is_some() {
        return None;
    }
    let mut avals = Vec::new();
    for p in params {
        if p.default.is_some() {
            break;
        }
        let annotation = p.annotation.as_ref()?;
        let stated = jaxtyping_annotation(annotation).and_then(|(dtype, dims)| {
            let dims: Option<Vec<DimSpec>> = dims.split_whitespace().map(parse_dim).collect();
            Some(AvalSpec { dims: dims?, dtype, weak: false })
        });
        if stated.is_none() && !crate::entry_staged::is_array_annotation(annotation) {
            return None;
        }
        avals.push(stated);
    }
    avals.iter().any(Option::is_some).then_some(avals)
}

/// `Float[Array, "b n"]` (also `jaxtyping.Float32[jax.Array, "n"]`) -> (dtype, "b n").
fn jaxtyping_annotation(e: &Expr) -> Option<(DType, String)> {
    let ExprKind::Subscript { value, index } = &e.kind else { return None };
    let kind = match &value.kind {
        ExprKind::Name(n) => n.to_string(),
        ExprKind::Attribute { attr, .. } => attr.to_string(),
        _ => return None,
    };
    let dtype = match kind.as_str() {
        "Float" | "Float32" | "Real" | "Inexact" => DType::F32,
        "Float16" => DType::F16,
        "BFloat16" => DType::BF16,
        "Int" | "Int32" | "Integer" => DType::I32,
        "Int8" => DType::I8,
        "UInt8" => DType::U8,
        "UInt" | "UInt32" => DType::U32,
        "Bool" => DType::Bool,
        _ => return None,
    };
    let ExprKind::Tuple(items) = &index.kind else { return None };
    let [array, dims] = items.as_slice() else { return None };
    let array_name = match &array.kind {
        ExprKind::Name(n) => n.to_string(),
        ExprKind::Attribute { attr, .. } => attr.to_string(),
        _ => return None,
    };
    if array_name != "Array" && array_name != "ArrayLike" {
        return None;
    }
    let ExprKind::Str(dims) = &dims.kind else { return None };
    Some((dtype, dims.to_string()))
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn avals_and_comments_parse() {
        assert_eq!(parse_aval("f32[8,4]"), Some(Aval::new(&[8, 4], DType::F32)));
        assert_eq!(parse_aval("~f32[]"), Some(Aval::scalar(DType::F32).weak(true)));
        assert_eq!(parse_aval("bool[3]"), Some(Aval::new(&[3], DType::Bool)));
        assert_eq!(parse_aval("f32[8"), None);
        assert_eq!(parse_aval("f32[b,4]"), None, "a named dimension has no size of its own");
        let (name, avals) = parse_trace_comment("step(f32[b,4], i32[])").expect("parses");
        assert_eq!(name, "step");
        assert_eq!(avals[0].dims, vec![DimSpec::Name("b".into()), DimSpec::Size(4)]);
        assert_eq!(avals[1], AvalSpec { dims: Vec::new(), dtype: DType::I32, weak: false });
        assert!(parse_trace_comment("step(f32[*b,4])").is_none());
    }

    crate::unit_tests::list![avals_and_comments_parse];
}
