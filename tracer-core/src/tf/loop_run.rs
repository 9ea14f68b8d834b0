//! A followed tensor loop (`loop_checks.rs`) run on a call's values, for the checks of its
//! body: the test on the carried values, then the body's checks and the loops in it (each run
//! whole, where it stands; those in a branch of the body at the iterations whose values pick
//! it), then the next carried values, until the test is false. A loop in
//! another's body runs on the graph of one iteration of that loop; what its state holds after
//! it (`LoopRun::exits`) is its last carried values, so the loop around it goes on with them.

use std::rc::Rc;

use super::graph_run::{CallCheck, GraphFailure, Operand};
use super::loop_checks::{LoopRun, Rows, Test};
use crate::interp::{Flow, Interp};
use crate::jax::array::Array;
use crate::jax::ir::{Atom, Jaxpr};

/// How many iterations of a call's tensor loops (nested ones counted at each iteration of
/// the loop around them) are followed.
const LOOP_ITERATIONS: usize = 10_000;

/// The loop with no loop around it that loop `id` is in (or is).
pub fn outermost(loops: &[LoopRun], id: usize) -> Option<&LoopRun> {
    let mut at = loops.iter().find(|l| l.id == id)?;
    for _ in 0..loops.len() {
        match at.parent {
            Some(p) => at = loops.iter().find(|l| l.id == p)?,
            None => return Some(at),
        }
    }
    None
}

/// Loop `lp` (one with no loop around it) of a call of `jaxpr` on `consts` and `inputs`: the
/// first failing check of its body, or of a loop in it, by iteration then in the order they
/// were traced (`Some(None)`: every check holds, or the loop does not run, the call's values
/// not picking its branches). `None` when the call's values do not decide it: an unknown
/// predicate, entry value, test or carried value, a check on an unknown value, more
/// iterations than `LOOP_ITERATIONS` in all. Each iteration counts against the analysis's
/// step and time budgets, as the evaluator's `while_loop` does: a loop that would run past
/// them ends the analysis there (TL900), not the editor's wait.
pub fn run(
    interp: &mut Interp,
    lp: &LoopRun,
    (loops, checks): (&[LoopRun], &[&CallCheck]),
    jaxpr: &Jaxpr,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
) -> Result<Option<Option<GraphFailure>>, Flow> {
    let mut budget = LOOP_ITERATIONS;
    let body = Body { loops, checks };
    Ok(match run_loop(interp, lp, &body, jaxpr, consts, inputs, &mut budget)? {
        Some(Ran::Failed(failure)) => Some(Some(failure)),
        Some(Ran::Ended(_)) => Some(None),
        None => None,
    })
}

/// The followed loops of a graph and the checks of their bodies, in the order traced.
struct Body<'a> {
    loops: &'a [LoopRun],
    checks: &'a [&'a CallCheck],
}

/// What a loop's body holds, in the order it was traced: a check, or a loop run whole at
/// each iteration (`true`: with checks in it; `false`: for what its state holds after it,
/// which stays unknown when a call's values do not decide it).
enum Item<'a> {
    Check(&'a CallCheck),
    Loop(&'a LoopRun, bool),
}

/// How a loop ran: a check failed, or it ended with these carried values.
enum Ran {
    Failed(GraphFailure),
    Ended(Vec<Rc<Array>>),
}

impl<'a> Body<'a> {
    /// Whether check `c` is in loop `id`'s body, or in a loop in it.
    fn within(&self, c: &CallCheck, id: usize) -> bool {
        let mut at = c.in_loop;
        for _ in 0..=self.loops.len() {
            match at {
                Some(a) if a == id => return true,
                Some(a) => at = self.loops.iter().find(|l| l.id == a).and_then(|l| l.parent),
                None => return false,
            }
        }
        false
    }

    /// Loop `id`'s checks and the loops in its body, each loop where its first check is
    /// (the checks were traced in order).
    fn items(&self, id: usize) -> Vec<Item<'a>> {
        let mut items: Vec<Item<'a>> = Vec::new();
        for c in self.checks.iter().copied() {
            if c.in_loop == Some(id) {
                items.push(Item::Check(c));
            } else if let Some(child) = self.loops.iter().find(|l| l.parent == Some(id) && self.within(c, l.id)) {
                if !items.iter().any(|i| matches!(i, Item::Loop(l, _) if l.id == child.id)) {
                    items.push(Item::Loop(child, true));
                }
            }
        }
        // The loops with no check in them, each after the loops begun before it (the checks
        // traced before it do not read what it gives).
        for child in self.loops.iter().filter(|l| l.parent == Some(id)) {
            if items.iter().any(|i| matches!(i, Item::Loop(l, _) if l.id == child.id)) {
                continue;
            }
            let at = items.iter().rposition(|i| matches!(i, Item::Loop(l, _) if l.id < child.id)).map_or(0, |k| k + 1);
            items.insert(at, Item::Loop(child, false));
        }
        items
    }
}

/// `run` of loop `lp` of the graph `jaxpr` (for a loop in another's body, the graph of one
/// iteration of that loop, on its values), spending `budget`.
fn run_loop(
    interp: &mut Interp,
    lp: &LoopRun,
    all: &Body,
    jaxpr: &Jaxpr,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
    budget: &mut usize,
) -> Result<Option<Ran>, Flow> {
    match picked(&lp.guard, jaxpr, consts, inputs) {
        Some(true) => {}
        // Not run: what its state holds after it is only read in the branch not taken (the
        // merge of the two picks the other), so any value of its shape and dtype will do.
        Some(false) => {
            let zeros = lp.exits.iter().map(|(_, aval)| Array::ready(aval.clone(), ndarray::ArrayD::zeros(aval.shape.as_slice())));
            return Ok(Some(Ran::Ended(zeros.collect())));
        }
        None => return Ok(None),
    }
    let items = all.items(lp.id);
    let body: Vec<&CallCheck> = items.iter().filter_map(|i| if let Item::Check(c) = i { Some(*c) } else { None }).collect();
    // The loops in the body: what their state holds after them is given, as their last
    // carried values, once they ran.
    let inner: Vec<&LoopRun> = items.iter().filter_map(|i| if let Item::Loop(l, _) = i { Some(*l) } else { None }).collect();
    let Some((graph, mut carry)) = loop_graph(lp, &body, &inner, jaxpr, consts, inputs) else { return Ok(None) };
    // A `for`'s elements, each the value of its target in one iteration.
    let elements = match &lp.test {
        Test::Graph(_) => None,
        Test::Rows { rows, .. } => match elements(rows, jaxpr, consts, inputs) {
            Some(e) => Some(e),
            None => return Ok(None),
        },
    };
    // `maximum_iterations`: the count the call's values give it (none below zero).
    let max = match &lp.max {
        Some(m) => match count(m, jaxpr, consts, inputs) {
            Some(n) => Some(n),
            None => return Ok(None),
        },
        None => None,
    };
    for k in 0..=LOOP_ITERATIONS {
        interp.tick()?;
        if max.is_some_and(|m| k >= m) {
            return Ok(Some(Ran::Ended(carry)));
        }
        let element = match &elements {
            Some(e) if k == e.len() => return Ok(Some(Ran::Ended(carry))),
            Some(e) => Some(&e[k]),
            None => None,
        };
        let Some(left) = budget.checked_sub(1) else { return Ok(None) };
        *budget = left;
        let mut given = inputs.to_vec();
        given.extend(carry.iter().cloned());
        given.extend(element.cloned());
        let exits_at = given.len();
        given.extend(
            inner.iter().flat_map(|l| l.exits.iter().map(|(_, aval)| Array::unknown(aval.clone(), "a loop's state before it ran"))),
        );
        let (mut checked, mut next) = match iteration(lp, &body, &graph, consts, &given) {
            Some(Iteration::Ended) => return Ok(Some(Ran::Ended(carry))),
            Some(Iteration::Ran { checked, next }) => (checked, next),
            None => return Ok(None),
        };
        // The checks in order, each loop of the body run whole where it stands, the
        // iteration computed again with what its state holds after it.
        let (mut at_check, mut at_exit) = (0, exits_at);
        for item in &items {
            match item {
                Item::Check(_) => {
                    match checked.get(at_check).cloned() {
                        Some(Some(None)) => {}
                        Some(Some(Some(failure))) => return Ok(Some(Ran::Failed(failure))),
                        Some(None) | None => return Ok(None),
                    }
                    at_check += 1;
                }
                Item::Loop(l, with_checks) => {
                    match run_loop(interp, l, all, &graph, consts, &given, budget)? {
                        Some(Ran::Failed(failure)) => return Ok(Some(Ran::Failed(failure))),
                        // A loop whose state after it is not followed leaves it unknown.
                        Some(Ran::Ended(last)) => {
                            if last.len() == l.exits.len() {
                                given.splice(at_exit..at_exit + last.len(), last);
                            }
                        }
                        None if !with_checks => {}
                        None => return Ok(None),
                    }
                    at_exit += l.exits.len();
                    match iteration(lp, &body, &graph, consts, &given) {
                        Some(Iteration::Ran { checked: c, next: n }) => (checked, next) = (c, n),
                        _ => return Ok(None),
                    }
                }
            }
        }
        let Some(next) = next else { return Ok(None) };
        carry = next;
    }
    Ok(None)
}

/// Whether the call's values pick every branch of `guard` (predicates of `jaxpr`); `None`
/// when one is not known.
fn picked(guard: &[(Operand, bool)], jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>]) -> Option<bool> {
    if guard.is_empty() {
        return Some(true);
    }
    let preds: Vec<&Operand> = guard.iter().map(|(p, _)| p).collect();
    let values = operand_values(&preds, jaxpr, consts, inputs)?;
    let mut all = true;
    for (pred, (_, taken)) in values.iter().zip(guard) {
        let held = crate::jax::eval::force(pred, 1)?.iter().next().map(|x| *x != 0.0)?;
        all &= held == *taken;
    }
    Some(all)
}

/// The values `operands` have at a call, each known: the graph's variables computed from the
/// call's inputs in one evaluation, known operands as they are; `None` when one is not known.
fn operand_values(operands: &[&Operand], jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>]) -> Option<Vec<Rc<Array>>> {
    let outvars: Vec<Atom> = operands.iter().filter_map(|o| if let Operand::Var(v) = o { Some(Atom::Var(*v)) } else { None }).collect();
    let computed = if outvars.is_empty() {
        Vec::new()
    } else {
        let mut sub = jaxpr.clone();
        sub.outvars = outvars;
        crate::jax::eval_jaxpr::instantiate(&sub, consts, inputs)?
    };
    let mut computed = computed.iter();
    operands
        .iter()
        .map(|o| match o {
            Operand::Var(_) => computed.next().and_then(known_value),
            Operand::Known(a) => known_value(a),
        })
        .collect()
}

/// A loop variable's value as `run_loop` reads it: known, and computed within the budget.
fn known_value(a: &Rc<Array>) -> Option<Rc<Array>> {
    let k = a.known()?;
    crate::jax::eval::force(&k, 1 << 16)?;
    Some(k)
}

/// The graph one iteration of `lp` computes (inputs: the call's, then the body's
/// placeholders of the loop variables and a `for`'s element, then what the state of each loop
/// of `inner` holds after it; out: the test, the carried values, each check's inputs) and the
/// values the loop variables enter with.
fn loop_graph(
    lp: &LoopRun,
    body: &[&CallCheck],
    inner: &[&LoopRun],
    jaxpr: &Jaxpr,
    consts: &[Rc<Array>],
    inputs: &[Rc<Array>],
) -> Option<(Jaxpr, Vec<Rc<Array>>)> {
    let operand_atom = |o: &Operand| if let Operand::Var(v) = o { Some(Atom::Var(*v)) } else { None };
    let mut entry = jaxpr.clone();
    entry.outvars = lp.init.iter().filter_map(operand_atom).collect();
    let entered = crate::jax::eval_jaxpr::instantiate(&entry, consts, inputs)?;
    let mut entered = entered.iter();
    let mut carry: Vec<Rc<Array>> = Vec::with_capacity(lp.init.len());
    for o in &lp.init {
        let value = match o {
            Operand::Var(_) => entered.next()?.clone(),
            Operand::Known(a) => a.clone(),
        };
        carry.push(known_value(&value)?);
    }
    let mut graph = jaxpr.clone();
    let mut placeholders = Vec::with_capacity(lp.carry_in.len() + 1);
    let element = match &lp.test {
        Test::Rows { element, .. } => Some(*element),
        Test::Graph(_) => None,
    };
    let exits = inner.iter().flat_map(|l| l.exits.iter().map(|(v, _)| *v));
    for v in lp.carry_in.iter().copied().chain(element).chain(exits) {
        let at = graph.eqns.iter().position(|e| e.outputs.iter().any(|(o, _)| *o == v))?;
        let eqn = graph.eqns.remove(at);
        placeholders.push(eqn.outputs.into_iter().next()?);
    }
    graph.invars.extend(placeholders);
    let test = match &lp.test {
        Test::Graph(t) => Some(t),
        Test::Rows { .. } => None,
    };
    graph.outvars = test
        .into_iter()
        .chain(&lp.carry_out)
        .filter_map(operand_atom)
        .chain(body.iter().flat_map(|c| std::iter::once(c.input).chain(c.check.other_var()).chain(guard_vars(c))).map(Atom::Var))
        .collect();
    Some((graph, carry))
}

/// The graph's variables among the predicates of the branches of the body check `c` is in.
fn guard_vars(c: &CallCheck) -> impl Iterator<Item = crate::jax::ir::VarId> + '_ {
    c.loop_guard.iter().filter_map(|(p, _)| if let Operand::Var(v) = p { Some(*v) } else { None })
}

/// A loop's `maximum_iterations` at a call (a scalar; zero when not positive); `None` when
/// not known.
fn count(max: &Operand, jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>]) -> Option<usize> {
    let value = operand_values(&[max], jaxpr, consts, inputs)?.pop()?;
    let n = crate::jax::eval::force(&value, 1)?.iter().next().copied()?;
    Some(n.max(0.0) as usize)
}

/// The elements a `for` iterates at a call: `tf.range`'s numbers, or a tensor's rows; `None`
/// when they are not known, or more than `LOOP_ITERATIONS`.
fn elements(rows: &Rows, jaxpr: &Jaxpr, consts: &[Rc<Array>], inputs: &[Rc<Array>]) -> Option<Vec<Rc<Array>>> {
    let operands: Vec<&Operand> = match rows {
        Rows::Range { start, limit, delta, .. } => vec![start, limit, delta],
        Rows::Tensor(t) => vec![t],
    };
    let values = operand_values(&operands, jaxpr, consts, inputs)?;
    match (rows, values.as_slice()) {
        (Rows::Range { dtype, .. }, [start, limit, delta]) => {
            let scalar = |a: &Rc<Array>| crate::jax::eval::force(a, 1).filter(|d| d.len() == 1).and_then(|d| d.iter().next().copied());
            let (start, limit, delta) = (scalar(start)?, scalar(limit)?, scalar(delta)?);
            // TensorFlow's size: ceil((limit - start) / delta), none when it is not positive
            // (a zero delta is an error TensorFlow raises: not followed).
            let count = ((limit - start) / delta).ceil();
            if delta == 0.0 || !count.is_finite() || count > LOOP_ITERATIONS as f64 {
                return None;
            }
            let count = count.max(0.0) as usize;
            Some((0..count).map(|k| Array::scalar(start + k as f64 * delta, *dtype, false)).collect())
        }
        (Rows::Tensor(_), [t]) => {
            if t.aval.shape.first().is_none_or(|n| *n > LOOP_ITERATIONS) {
                return None;
            }
            let data = crate::jax::eval::force(t, 1 << 16)?;
            let row = crate::jax::aval::Aval::new(&t.aval.shape[1..], t.aval.dtype);
            let rows = data.axis_iter(ndarray::Axis(0)).map(|r| Array::ready(row.clone(), r.to_owned())).collect();
            Some(rows)
        }
        _ => None,
    }
}

/// What one iteration of a followed loop comes to.
enum Iteration {
    /// The test was false: the loop ends.
    Ended,
    /// The body ran: each of its checks, in order, as far as the given values tell
    /// (`Some(None)`: it held; `None`: its value is not known), and the loop variables' next
    /// values (`None`: one is not known).
    Ran { checked: Vec<Option<Option<GraphFailure>>>, next: Option<Vec<Rc<Array>>> },
}

/// One iteration of `lp` (`loop_graph`'s `graph`) on `given`; `None` when its test is not
/// known.
fn iteration(lp: &LoopRun, body: &[&CallCheck], graph: &Jaxpr, consts: &[Rc<Array>], given: &[Rc<Array>]) -> Option<Iteration> {
    let values = crate::jax::eval_jaxpr::instantiate(graph, consts, given)?;
    let mut values = values.iter();
    let mut next = |o: &Operand| -> Option<Rc<Array>> {
        match o {
            Operand::Var(_) => values.next().cloned(),
            Operand::Known(a) => Some(a.clone()),
        }
    };
    // A `for` has an element for this iteration (`run_loop` counted them).
    let go = match &lp.test {
        Test::Graph(t) => {
            let test = known_value(&next(t)?)?;
            crate::jax::eval::force(&test, 1)?.iter().next().map(|x| *x != 0.0)?
        }
        Test::Rows { .. } => true,
    };
    let carried: Vec<Option<Rc<Array>>> = lp.carry_out.iter().map(&mut next).collect();
    if !go {
        return Some(Iteration::Ended);
    }
    let mut checked = Vec::with_capacity(body.len());
    for c in body {
        let value = values.next().and_then(known_value);
        let other = match c.check.other_var() {
            Some(_) => values.next().and_then(known_value).map(Some),
            None => Some(None),
        };
        // Whether the iteration's values pick every branch of the body the check is in.
        let mut runs = Some(true);
        for (pred, taken) in &c.loop_guard {
            let pred = match pred {
                Operand::Var(_) => values.next().and_then(known_value),
                Operand::Known(a) => known_value(a),
            };
            let held = pred.and_then(|p| crate::jax::eval::force(&p, 1)?.iter().next().map(|x| *x != 0.0));
            runs = runs.zip(held).map(|(r, h)| r && h == *taken);
        }
        let outcome = match (runs, value, other) {
            (Some(false), _, _) => Some(None),
            (Some(true), Some(value), Some(other)) => {
                Some(c.check.fails(&value, other.as_ref()).map(|message| GraphFailure { site: c.site, node: c.node.clone(), message }))
            }
            _ => None,
        };
        checked.push(outcome);
    }
    let next = carried.into_iter().map(|c| c.and_then(|c| known_value(&c))).collect::<Option<_>>();
    Some(Iteration::Ran { checked, next })
}
