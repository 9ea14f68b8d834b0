//! TensorFlow's names of the ops of a graph being traced, where a message names them
//! (`Detected at node assert_less_1/Assert/AssertGuard/Assert`, `Log_1/CheckNumericsV2`,
//! `cond_1/CheckNumerics`). As TensorFlow 2.21's `Graph.unique_name` gives them: the first
//! op or name scope of a name in a graph keeps it, the next ones are `name_1`, `name_2`, ...,
//! names compared without case (`add` and `Add_1`). A `tf.cond` branch (and AutoGraph's `if`
//! on a tensor) is a graph of its own under the scope `cond` (`cond_1`, ...) of the graph
//! it is in: its names start again, prefixed (`cond/assert_less`).
//!
//! Only the names tracelens writes are counted: the scopes of the value asserts, of
//! `check_numerics` and `assert_all_finite`, the one-tensor ops the enabled numeric check
//! names, and `cond`. A name another op could take too (`add`, `mul`) is not given.

use std::collections::HashMap;

use crate::interp::Interp;

/// The names used so far in one graph (or branch graph) of a trace.
#[derive(Default)]
pub struct Scope {
    /// What every name of this graph starts with (`cond_1/` in a branch).
    prefix: String,
    /// How many times each name (lowercased) was asked for.
    used: HashMap<String, u32>,
}

impl Scope {
    fn unique(&mut self, base: &str) -> String {
        let n = self.used.entry(base.to_lowercase()).or_insert(0);
        let name = if *n == 0 { base.to_string() } else { format!("{base}_{n}") };
        *n += 1;
        format!("{}{name}", self.prefix)
    }
}

/// The name the graph being traced gives to the next op or name scope called `base`;
/// `None` outside a `tf.function` trace.
pub fn unique(interp: &mut Interp, base: &str) -> Option<String> {
    let trace = interp.tf.active.last_mut()?;
    if trace.names.is_empty() {
        trace.names.push(Scope::default());
    }
    trace.names.last_mut().map(|s| s.unique(base))
}

/// `node` (`assert_less/Assert/Assert`, `VerifyFinite/CheckNumerics`) with its first
/// component made unique in the graph being traced (`assert_less_1/Assert/Assert`).
/// `assert_equal` takes its scope twice (the function's, then its comparison's): TensorFlow
/// names the first one's nodes `assert_equal_1/...`, the second's `assert_equal_3/...`.
pub fn scoped(interp: &mut Interp, node: &str) -> Option<String> {
    let (top, rest) = node.split_once('/').map_or((node, None), |(t, r)| (t, Some(r)));
    let top = if top == "assert_equal" {
        unique(interp, top)?;
        unique(interp, top)?
    } else {
        unique(interp, top)?
    };
    Some(match rest {
        Some(rest) => format!("{top}/{rest}"),
        None => top,
    })
}

/// Opens the scope `cond` (`cond_1`, ...) in the graph being traced: its name, given to
/// each branch's `enter_branch`. `None` outside a trace.
pub fn cond_scope(interp: &mut Interp) -> Option<String> {
    unique(interp, "cond")
}

/// Opens the scope `while` (`while_1`, ...) of a tensor loop in the graph being traced: its
/// body (and its test) are graphs of their own under it (`while/assert_less/...`).
pub fn while_scope(interp: &mut Interp) -> Option<String> {
    unique(interp, "while")
}

/// The branch of the `cond` scope `scope` starts: a graph of its own.
pub fn enter_branch(interp: &mut Interp, scope: Option<&str>) {
    if let (Some(trace), Some(scope)) = (interp.tf.active.last_mut(), scope) {
        if trace.names.is_empty() {
            trace.names.push(Scope::default());
        }
        trace.names.push(Scope { prefix: format!("{scope}/"), used: HashMap::new() });
    }
}

/// The branch `enter_branch` started ends.
pub fn leave_branch(interp: &mut Interp, scope: Option<&str>) {
    if let (Some(trace), Some(_)) = (interp.tf.active.last_mut(), scope) {
        if trace.names.len() > 1 {
            trace.names.pop();
        }
    }
}
