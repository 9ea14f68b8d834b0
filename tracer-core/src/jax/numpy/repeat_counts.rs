//! `jnp.repeat` with a count per element (`repeats=n_edge`) or with `total_repeat_length`:
//! output element `i` along the axis reads input element `min(#{j : cumsum(repeats)[j] <= i},
//! n - 1)`, so a `total_repeat_length` past the counts' sum repeats the last element and a
//! shorter one cuts the end, as JAX does. Built from `cumsum`, `searchsorted` and `take`, it
//! holds for counts a trace does not know (JAX's static `total_repeat_length` gives the shape).

use super::*;

/// The repeated array, or an unknown when JAX would raise (counts of the wrong length, counts
/// whose sum a trace cannot know without `total_repeat_length`) or the result is too large.
pub(super) fn repeat_by_counts(
    interp: &mut Interp,
    a: &Rc<Array>,
    repeats: &Value,
    axis: Option<usize>,
    total: Option<usize>,
) -> PyResult<Value> {
    let (a, ax) = match axis {
        Some(ax) => (a.clone(), ax),
        None => (reshape_raw(interp, a, &[a.aval.size() as usize])?, 0),
    };
    let n = a.aval.shape[ax];
    let Operand::Array(counts) = operand(interp, repeats)? else {
        return Ok(Value::opaque("repeat by counts that are not known"));
    };
    if counts.aval.ndim() > 1 || (counts.aval.size() != 1 && counts.aval.size() as usize != n) || n == 0 {
        return Ok(Value::opaque("repeat by counts that do not fit the axis"));
    }
    let total = match total {
        Some(t) => t,
        // Without `total_repeat_length` the output length is the counts' sum, which only
        // concrete counts tell (JAX raises on traced ones; the model stays silent).
        None => match eval::force(&counts, interp.budgets.max_elements) {
            Some(d) => {
                let each: f64 = d.iter().map(|c| c.max(0.0)).sum();
                (if counts.aval.size() == 1 { each * n as f64 } else { each }) as usize
            }
            None => return Ok(Value::opaque("repeat by counts that are not known")),
        },
    };
    let mut shape = a.aval.shape.to_vec();
    shape[ax] = total;
    // The `searchsorted` compares every output position with every count.
    let work = (total as u128).saturating_mul(n as u128).max(shape.iter().fold(1u128, |acc, &d| acc.saturating_mul(d as u128)));
    if work > interp.budgets.max_elements as u128 {
        return Ok(if a.is_tracer() || counts.is_tracer() {
            Value::opaque("a repeated array too large to index")
        } else {
            Value::Array(Array::unknown(a.aval.with_shape(&shape), array::TOO_LARGE))
        });
    }
    let np = |interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs| call(interp, f, args, kwargs);
    let counts = np(interp, JaxFn::BroadcastTo, vec![Value::Array(counts), Value::tuple(vec![Value::Int(n as i64)])], Vec::new())?;
    let ends = np(interp, JaxFn::Cumsum, vec![counts], Vec::new())?;
    let positions = np(interp, JaxFn::Arange, vec![Value::Int(total as i64)], Vec::new())?;
    let side = vec![(Rc::from("side"), Value::str("right"))];
    let source = np(interp, JaxFn::Searchsorted, vec![ends, positions], side)?;
    let source = np(interp, JaxFn::Minimum, vec![source, Value::Int(n as i64 - 1)], Vec::new())?;
    let axis = vec![(Rc::from("axis"), Value::Int(ax as i64))];
    np(interp, JaxFn::Take, vec![Value::Array(a), source], axis)
}
