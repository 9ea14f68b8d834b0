//! Which branches of the graph an op being traced is in: a `tf.cond` branch, or a branch of
//! AutoGraph's `if` on a tensor (both traced inline). A check bound there (an assert,
//! `check_numerics`) runs at a call only when the predicate of every enclosing branch picks
//! it, which the call's values decide (`graph_run.rs`).

use std::rc::Rc;

use super::graph_run::Operand;
use crate::interp::Interp;
use crate::jax::array::Array;

/// One branch being traced.
pub struct Guard {
    /// How many `tf.function` traces were running when it began (`TfState::active`).
    depth: usize,
    pred: Rc<Array>,
    /// The branch taken when `pred` is true.
    taken: bool,
    /// Traced as a path of `Interp::fork` (AutoGraph's `if`), which opens a fork log.
    forked: bool,
}

/// The branch of `pred` taken when it is `taken` begins (`forked`: as a path of
/// `Interp::fork`).
pub fn enter(interp: &mut Interp, pred: &Rc<Array>, taken: bool, forked: bool) {
    let depth = interp.tf.active.len();
    interp.tf.guards.push(Guard { depth, pred: pred.clone(), taken, forked });
}

/// The branch `enter` began ends.
pub fn leave(interp: &mut Interp) {
    interp.tf.guards.pop();
}

/// Whether the innermost branch being traced is a branch of AutoGraph's `if` of the
/// innermost `tf.function` trace.
pub fn in_converted_if(interp: &Interp) -> bool {
    interp.tf.guards.last().is_some_and(|g| g.forked && g.depth == interp.tf.active.len())
}

/// What decides whether an op bound now in trace `trace` runs: the predicate of each
/// enclosing branch (a tensor of the trace, or a known one) and the branch it must pick;
/// empty outside any branch. `None` when the call's values do not decide it: a tensor loop's
/// body, a path past a value the interpreter does not know, a predicate of another graph.
pub fn current(interp: &Interp, trace: u32) -> Option<Vec<(Operand, bool)>> {
    if interp.tf.autograph.in_tensor_loop() || super::loop_checks::in_loop(interp) {
        return None;
    }
    let depth = interp.tf.active.len();
    let forks = interp.fork_logs.len().checked_sub(interp.tf.active.last()?.forks)?;
    let mine: Vec<&Guard> = interp.tf.guards.iter().filter(|g| g.depth == depth).collect();
    predicates(&mine, forks, trace)
}

/// The branches begun since there were `guards` of them and `forks` fork logs (a tensor loop's
/// body began there), for an op bound now in trace `trace`: as `current`, each predicate with
/// the branch it must pick, empty when it is in none. `None` when one is not a branch of the
/// innermost `tf.function` trace, or a path the interpreter forked on is not one of them.
pub fn since(interp: &Interp, guards: usize, forks: usize, trace: u32) -> Option<Vec<(Operand, bool)>> {
    let depth = interp.tf.active.len();
    let mine: Vec<&Guard> = interp.tf.guards.get(guards..)?.iter().collect();
    if mine.iter().any(|g| g.depth != depth) {
        return None;
    }
    predicates(&mine, interp.fork_logs.len().checked_sub(forks)?, trace)
}

/// The predicates of `mine` as operands of trace `trace`, when the `forks` paths opened with
/// them are exactly their forked ones.
fn predicates(mine: &[&Guard], forks: usize, trace: u32) -> Option<Vec<(Operand, bool)>> {
    if mine.iter().filter(|g| g.forked).count() != forks {
        return None;
    }
    mine.iter()
        .map(|g| {
            let operand = match g.pred.tracer() {
                Some(t) if t.trace == trace => Operand::Var(t.var),
                Some(_) => return None,
                None => Operand::Known(g.pred.clone()),
            };
            Some((operand, g.taken))
        })
        .collect()
}
