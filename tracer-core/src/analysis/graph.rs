//! A trace's jaxpr as a dataflow graph, in plain data (`tracelens trace --format dot|svg`,
//! the editors' "Show trace graph"): a node per equation with its primitive, parameters and
//! source line, the avals on the variables that connect them, and the bodies of control flow
//! (`scan`, `cond` branches, `while` cond and body, `pjit`) as nested graphs. Rendering is
//! the caller's business.

use crate::jax::ir::{atom_text, Atom, Eqn, Jaxpr, Prim, VarId};

use super::Location;

/// A jaxpr as a graph. Variables are numbered as in the jaxpr's text (`var_name`); the
/// variables of a body are its own.
#[derive(Clone, Debug, Default)]
pub struct TraceGraph {
    /// Closed-over constants, then the inputs: (variable, aval, the parameter's name when known).
    pub constants: Vec<(VarId, String)>,
    pub inputs: Vec<(VarId, String, Option<String>)>,
    pub nodes: Vec<GraphNode>,
    pub outputs: Vec<Operand>,
}

#[derive(Clone, Debug)]
pub struct GraphNode {
    /// JAX's primitive name (`dot_general`, `scan`).
    pub primitive: String,
    /// The parameters as the jaxpr prints them (`dimension_numbers=...`), empty for control flow.
    pub params: String,
    /// The user's line that bound it.
    pub location: Option<Location>,
    pub inputs: Vec<Operand>,
    pub outputs: Vec<(VarId, String)>,
    /// Control flow's bodies, each with its role (`body`, `branch 0`, `cond`).
    pub bodies: Vec<(String, TraceGraph)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Var(VarId),
    /// A literal, as the jaxpr prints it (`2.0:f32[]`).
    Literal(String),
}

impl TraceGraph {
    /// The graph of `jaxpr`, with `locate` turning an equation's site into a location and
    /// `arg_names` naming the inputs (the traced function's parameters, when they match).
    pub fn of(jaxpr: &Jaxpr, arg_names: &[String], locate: &mut dyn FnMut(&Eqn) -> Option<Location>) -> TraceGraph {
        let names = (arg_names.len() == jaxpr.invars.len()).then_some(arg_names);
        TraceGraph {
            constants: jaxpr.constvars.iter().map(|(v, a)| (*v, a.short())).collect(),
            inputs: jaxpr.invars.iter().enumerate().map(|(i, (v, a))| (*v, a.short(), names.map(|n| n[i].clone()))).collect(),
            nodes: jaxpr.eqns.iter().map(|e| node(e, locate)).collect(),
            outputs: jaxpr.outvars.iter().map(operand).collect(),
        }
    }

    /// Equations in this graph and every body.
    pub fn len(&self) -> usize {
        self.nodes.iter().map(|n| 1 + n.bodies.iter().map(|(_, b)| b.len()).sum::<usize>()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

fn node(eqn: &Eqn, locate: &mut dyn FnMut(&Eqn) -> Option<Location>) -> GraphNode {
    let labels = body_labels(eqn);
    GraphNode {
        primitive: eqn.prim.name().to_string(),
        params: if eqn.prim.is_control_flow() { String::new() } else { eqn.prim.params() },
        location: locate(eqn),
        inputs: eqn.inputs.iter().map(operand).collect(),
        outputs: eqn.outputs.iter().map(|(v, a)| (*v, a.short())).collect(),
        bodies: eqn.bodies.iter().zip(labels).map(|(b, label)| (label, TraceGraph::of(b, &[], locate))).collect(),
    }
}

fn operand(atom: &Atom) -> Operand {
    match atom {
        Atom::Var(v) => Operand::Var(*v),
        lit => Operand::Literal(atom_text(lit)),
    }
}

/// What each body of a control-flow equation is, in `eqn.bodies` order.
fn body_labels(eqn: &Eqn) -> Vec<String> {
    let n = eqn.bodies.len();
    if let Prim::Cond { .. } = eqn.prim {
        (0..n).map(|i| format!("branch {i}")).collect()
    } else if let Prim::While = eqn.prim {
        ["cond", "body"].iter().map(|s| s.to_string()).chain((2..n).map(|i| format!("body {i}"))).collect()
    } else if n == 1 {
        vec!["body".to_string()]
    } else {
        (0..n).map(|i| format!("body {i}")).collect()
    }
}
