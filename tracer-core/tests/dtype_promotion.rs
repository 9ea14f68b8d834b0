//! Checks `tracer_core::jax::dtypes` against golden data recorded from real JAX 0.10.2 by
//! `tests/conformance/gen_dtype_golden.py` (`tests/data/promotion.tsv`; its docstring
//! describes the columns). Needs no Python: the golden file is committed.

use std::collections::BTreeMap;

use tracer_core::jax::dtypes::{
    binary_op_result_type, canonicalize, dtype_specifier_operand, lattice_result_type, max_result_type, mean_result_type, prod_result_type,
    promote_jax_types, python_scalar_dtype, result_type, sum_result_type, true_divide_result_type, var_result_type, DType, DTypeConfig,
    JaxType, PyScalarKind, WeakDType,
};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/promotion.tsv");

/// One operand spec of the golden file (`S:f32`, `W:bf16`, `R:f64`, `RW:i64`, `P:int`,
/// `D:u8`, `T:float`).
#[derive(Clone, Copy, Debug)]
enum Operand {
    Strong(DType),
    Weak(DType),
    Raw(WeakDType),
    PyScalar(PyScalarKind),
    DTypeSpecifier(DType),
    PyType(PyScalarKind),
}

struct Row<'a> {
    line: usize,
    cfg: DTypeConfig,
    op: &'a str,
    operands: Vec<Operand>,
    avals: Vec<&'a str>,
    result: &'a str,
}

fn py_kind(s: &str) -> Option<PyScalarKind> {
    match s {
        "bool" => Some(PyScalarKind::Bool),
        "int" => Some(PyScalarKind::Int),
        "float" => Some(PyScalarKind::Float),
        "complex" => Some(PyScalarKind::Complex),
        _ => None,
    }
}

fn parse_operand(spec: &str) -> Option<Operand> {
    let (kind, name) = spec.split_once(':')?;
    Some(match kind {
        "S" => Operand::Strong(DType::from_name(name)?),
        "W" => Operand::Weak(DType::from_name(name)?),
        "R" => Operand::Raw(WeakDType::strong(DType::from_name(name)?)),
        "RW" => Operand::Raw(WeakDType::weakly_typed(DType::from_name(name)?)),
        "P" => Operand::PyScalar(py_kind(name)?),
        "D" => Operand::DTypeSpecifier(DType::from_name(name)?),
        "T" => Operand::PyType(py_kind(name)?),
        _ => return None,
    })
}

fn parse_row(line: usize, text: &str) -> Result<Row<'_>, String> {
    let fields: Vec<&str> = text.split('\t').collect();
    let [x64, op, operands, avals, result] = fields[..] else {
        return Err(format!("line {line}: expected 5 tab-separated fields: {text:?}"));
    };
    let cfg = match x64 {
        "0" => DTypeConfig { enable_x64: false },
        "1" => DTypeConfig { enable_x64: true },
        _ => return Err(format!("line {line}: bad x64 field {x64:?}")),
    };
    let operands = operands
        .split(',')
        .map(|spec| parse_operand(spec).ok_or_else(|| format!("line {line}: bad operand {spec:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    let avals: Vec<&str> = avals.split(',').collect();
    if avals.len() != operands.len() {
        return Err(format!("line {line}: {} operands but {} avals", operands.len(), avals.len()));
    }
    Ok(Row { line, cfg, op, operands, avals, result })
}

/// The aval our model says JAX makes of an array operand, or `None` for a dtype specifier.
fn expected_aval(operand: Operand, cfg: DTypeConfig) -> Option<WeakDType> {
    match operand {
        Operand::Strong(d) => Some(WeakDType::strong(canonicalize(d, cfg))),
        Operand::Weak(d) => Some(WeakDType::weakly_typed(canonicalize(d, cfg))),
        Operand::Raw(aval) => Some(aval),
        Operand::PyScalar(kind) => Some(python_scalar_dtype(kind, cfg)),
        Operand::DTypeSpecifier(_) | Operand::PyType(_) => None,
    }
}

/// What `jnp.result_type` takes a dtype-specifier operand as.
fn specifier_operand(operand: Operand, cfg: DTypeConfig) -> Option<WeakDType> {
    match operand {
        Operand::DTypeSpecifier(d) => Some(dtype_specifier_operand(d, cfg)),
        Operand::PyType(kind) => Some(python_scalar_dtype(kind, cfg)),
        _ => None,
    }
}

/// What `jnp.promote_types` takes a dtype-specifier operand as.
fn lattice_node(operand: Operand) -> Option<JaxType> {
    match operand {
        Operand::DTypeSpecifier(d) => Some(JaxType::DType(d)),
        Operand::PyType(kind) => Some(JaxType::from(kind)),
        _ => None,
    }
}

/// Our model's answer for `row`, written as the golden file writes results.
fn model_result(row: &Row<'_>, avals: &[WeakDType]) -> Result<String, String> {
    let cfg = row.cfg;
    let one = || match avals {
        [x] => Ok(*x),
        _ => Err(format!("{} takes one operand", row.op)),
    };
    let two = || match avals {
        [a, b] => Ok((*a, *b)),
        _ => Err(format!("{} takes two operands", row.op)),
    };
    let result = match row.op {
        "result_type" => result_type(avals, cfg).map_err(|e| e.to_string())?,
        "lattice_result_type" => lattice_result_type(avals, cfg).map_err(|e| e.to_string())?,
        "add" => {
            let (a, b) = two()?;
            binary_op_result_type(a, b, cfg)
        }
        "true_divide" => {
            let (a, b) = two()?;
            true_divide_result_type(a, b, cfg)
        }
        "result_type_of_dtypes" => {
            let specs = row
                .operands
                .iter()
                .map(|&operand| specifier_operand(operand, cfg))
                .collect::<Option<Vec<_>>>()
                .ok_or("result_type_of_dtypes takes dtype specifiers")?;
            result_type(&specs, cfg).map_err(|e| e.to_string())?
        }
        "promote_types" => {
            let [a, b] = row.operands[..] else {
                return Err("promote_types takes two operands".into());
            };
            let (Some(a), Some(b)) = (lattice_node(a), lattice_node(b)) else {
                return Err("promote_types takes dtype specifiers".into());
            };
            WeakDType::strong(promote_jax_types(a, b, cfg))
        }
        "sum" => sum_result_type(one()?, cfg),
        "prod" => prod_result_type(one()?, cfg),
        "max" | "min" => max_result_type(one()?),
        "mean" => mean_result_type(one()?),
        "var" | "std" => var_result_type(one()?),
        other => return Err(format!("unknown op {other:?}")),
    };
    Ok(result.short_name())
}

#[test]
fn dtype_model_matches_real_jax() {
    let text = std::fs::read_to_string(GOLDEN).unwrap_or_else(|e| panic!("reading {GOLDEN}: {e}"));
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.starts_with('#'));
    let header = lines.next().map(|(_, l)| l);
    assert_eq!(header, Some("x64\top\toperands\tavals\tresult"));

    let mut checked: BTreeMap<(String, bool), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (index, text) in lines {
        let row = match parse_row(index + 1, text) {
            Ok(row) => row,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };

        // The avals of the array operands, as our model predicts them from the spec, checked
        // against the avals JAX made. Dtype-specifier operands have none.
        let mut avals = Vec::new();
        for (&operand, &aval) in row.operands.iter().zip(&row.avals) {
            let Some(expected) = expected_aval(operand, row.cfg) else {
                continue;
            };
            if WeakDType::from_name(aval) != Some(expected) {
                failures.push(format!(
                    "line {}: operand {operand:?} under {:?}: JAX made {aval}, model says {}",
                    row.line,
                    row.cfg,
                    expected.short_name()
                ));
            }
            avals.push(expected);
        }

        match model_result(&row, &avals) {
            Ok(ours) if ours == row.result => {}
            Ok(ours) => failures.push(format!(
                "line {}: x64={} {} {}: JAX {}, model {ours}",
                row.line,
                row.cfg.enable_x64,
                row.op,
                row.avals.join(","),
                row.result
            )),
            Err(e) => failures.push(format!("line {}: {e}", row.line)),
        }
        *checked.entry((row.op.to_string(), row.cfg.enable_x64)).or_default() += 1;
    }

    let total: usize = checked.values().sum();
    eprintln!("checked {total} golden rows: {checked:?}");
    assert!(
        failures.is_empty(),
        "{} of {total} golden rows disagree with real JAX:\n{}",
        failures.len(),
        failures.iter().take(60).cloned().collect::<Vec<_>>().join("\n")
    );
    for op in ["result_type", "lattice_result_type", "add", "true_divide", "promote_types", "result_type_of_dtypes", "sum", "mean", "var"] {
        for x64 in [false, true] {
            assert!(checked.get(&(op.to_string(), x64)).is_some_and(|&n| n > 0), "no golden rows for {op} with x64={x64}");
        }
    }
}
