//! The traced computation as a picture: each trace's dataflow graph (`analysis::graph`) as
//! Graphviz DOT, and as SVG through Graphviz's `dot` program when it is installed
//! (docs/trace-graph.md says why Graphviz). A node per equation (primitive, parameters, source
//! line, a link `line:N` an editor follows), edges labelled with avals, control-flow bodies
//! as nested clusters; the inputs a retrace changed and the equations on the line of the
//! first NaN/Inf (values mode) are highlighted.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use tracer_core::analysis::graph::{Operand, TraceGraph};
use tracer_core::analysis::{FileAnalysis, TracedFunction};

const INPUT_COLOUR: &str = "#e8f0fe";
const NODE_COLOUR: &str = "#f4f6f8";
const CHANGED_COLOUR: &str = "#ffd8a8";
const NAN_COLOUR: &str = "#ffc9c9";

/// Which traces to draw and what to mark.
#[derive(Clone, Debug, Default)]
pub struct GraphOptions {
    /// Only the traced functions of this name.
    pub function: Option<String>,
    /// The line (1-based) of the file's first NaN/Inf (TL301), whose equations are marked.
    pub nan_line: Option<u32>,
}

/// A line (1-based) of `path` where a NaN/Inf first appeared, from the analysis' TL301.
pub fn first_nan_line(analysis: &FileAnalysis, path: &Path) -> Option<u32> {
    analysis.diagnostics.iter().find(|(d, _, _)| d.code.as_str() == "TL301" && d.path == path).map(|(_, loc, _)| loc.line)
}

/// Every trace of `analysis` in `path` (each traced function's traces, in order) as one DOT
/// digraph, a cluster per trace.
pub fn dot(analysis: &FileAnalysis, path: &Path, options: &GraphOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph tracelens {{");
    let _ = writeln!(out, "  graph [compound=true, rankdir=TB, fontname=\"Helvetica\", fontsize=12, nodesep=0.3, ranksep=0.35];");
    let _ =
        writeln!(out, "  node [shape=box, style=\"rounded,filled\", fillcolor=\"{NODE_COLOUR}\", fontname=\"Helvetica\", fontsize=11];");
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#5f6b7a\"];");
    let mut writer = Writer { out, next: 0, nan_line: options.nan_line, path };
    let functions =
        analysis.functions.iter().filter(|f| *f.location.path == *path && options.function.as_ref().is_none_or(|name| *name == f.name));
    let mut any = false;
    for f in functions {
        for index in 0..f.traces.len() {
            any |= writer.trace(f, index);
        }
    }
    if !any {
        let _ = writeln!(writer.out, "  empty [shape=plaintext, label=\"no traced computation in this file\"];");
    }
    writer.out.push_str("}\n");
    writer.out
}

/// `dot -Tsvg` of `dot_text`; an error saying what to install when Graphviz is missing.
pub fn svg(dot_text: &str) -> Result<String, String> {
    let mut child =
        Command::new("dot").arg("-Tsvg").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| {
            format!("cannot run Graphviz's `dot` ({e}): install Graphviz (Debian: apt-get install graphviz), or use --format dot")
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A write error shows as dot's own failure below.
        let _ = stdin.write_all(dot_text.as_bytes());
    }
    let output = child.wait_with_output().map_err(|e| format!("Graphviz's `dot` failed: {e}"))?;
    if !output.status.success() {
        return Err(format!("Graphviz's `dot` failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

struct Writer<'a> {
    out: String,
    next: usize,
    nan_line: Option<u32>,
    path: &'a Path,
}

impl Writer<'_> {
    fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    /// One trace as a cluster; false when it has no graph.
    fn trace(&mut self, f: &TracedFunction, index: usize) -> bool {
        let t = &f.traces[index];
        let Some(graph) = &t.graph else { return false };
        let cluster = self.id("cluster_trace_");
        let call = t.call.as_ref().map(|c| format!(" from line {}", c.line)).unwrap_or_default();
        let mut title = format!("{}({}) · trace {} of {}{call} · {}", f.transform, f.name, index + 1, f.traces.len(), t.route);
        if index > 0 && !t.cause.is_empty() {
            title.push_str(&format!("\nretraced: {}", t.cause));
        }
        let _ = writeln!(self.out, "  subgraph {cluster} {{");
        let _ = writeln!(self.out, "    label=\"{}\"; labeljust=l; style=\"rounded\"; color=\"#9aa5b1\";", escape(&title));
        if index > 0 && !t.cause.is_empty() {
            let _ = writeln!(self.out, "    fontcolor=\"#c92a2a\";");
        }
        // Inputs whose aval differs from the previous trace's: what the retrace is about.
        let previous = index.checked_sub(1).map(|i| &f.traces[i].args);
        let changed: Vec<bool> = t.args.iter().enumerate().map(|(i, a)| previous.is_some_and(|p| p.get(i) != Some(a))).collect();
        self.graph(graph, &changed, "    ");
        let _ = writeln!(self.out, "  }}");
        true
    }

    /// A graph's nodes and edges; `changed[i]` marks input `i`.
    fn graph(&mut self, graph: &TraceGraph, changed: &[bool], pad: &str) {
        let mut producers: HashMap<u32, (String, String)> = HashMap::new();
        for (var, aval) in &graph.constants {
            let id = self.id("const_");
            let _ = writeln!(self.out, "{pad}{id} [shape=note, fillcolor=\"{INPUT_COLOUR}\", label=\"constant\\n{}\"];", escape(aval));
            producers.insert(*var, (id, aval.clone()));
        }
        for (i, (var, aval, name)) in graph.inputs.iter().enumerate() {
            let id = self.id("in_");
            let label = match name {
                Some(n) => format!("{}\\n{}", escape(n), escape(aval)),
                None => escape(aval),
            };
            let colour = if changed.get(i).copied().unwrap_or(false) { CHANGED_COLOUR } else { INPUT_COLOUR };
            let _ = writeln!(self.out, "{pad}{id} [shape=ellipse, fillcolor=\"{colour}\", label=\"{label}\"];");
            producers.insert(*var, (id, aval.clone()));
        }
        for node in &graph.nodes {
            let id = self.id("eqn_");
            let line = node.location.as_ref().filter(|l| *l.path == *self.path).map(|l| l.line);
            let mut label = escape(&node.primitive);
            if !node.params.is_empty() {
                label.push_str(&format!("\\n{}", escape(&shorten(&node.params, 48))));
            }
            if let Some(l) = &node.location {
                label.push_str(&format!("\\nline {}", l.line));
            }
            let nan = line.is_some() && line == self.nan_line;
            let colour = if nan { NAN_COLOUR } else { NODE_COLOUR };
            let link = line.map(|l| format!(", URL=\"line:{l}\", target=\"_top\", tooltip=\"line {l}\"")).unwrap_or_default();
            let pen = if nan { ", penwidth=2, color=\"#c92a2a\"" } else { "" };
            let _ = writeln!(self.out, "{pad}{id} [label=\"{label}\", fillcolor=\"{colour}\"{pen}{link}];");
            for input in &node.inputs {
                match input {
                    Operand::Var(v) => {
                        if let Some((from, aval)) = producers.get(v) {
                            let _ = writeln!(self.out, "{pad}{from} -> {id} [label=\"{}\"];", escape(aval));
                        }
                    }
                    Operand::Literal(text) => {
                        let lit = self.id("lit_");
                        let _ = writeln!(self.out, "{pad}{lit} [shape=plaintext, style=\"\", label=\"{}\"];", escape(text));
                        let _ = writeln!(self.out, "{pad}{lit} -> {id} [style=dotted];");
                    }
                }
            }
            for (role, body) in &node.bodies {
                let cluster = self.id("cluster_body_");
                let where_ = line.map(|l| format!(" · line {l}")).unwrap_or_default();
                let _ = writeln!(self.out, "{pad}subgraph {cluster} {{");
                let _ = writeln!(
                    self.out,
                    "{pad}  label=\"{} {}{where_}\"; labeljust=l; style=\"rounded,dashed\"; color=\"#748ffc\"; fontcolor=\"#1f2933\";",
                    escape(&node.primitive),
                    escape(role)
                );
                let first = self.next + 1;
                self.graph(body, &[], &format!("{pad}  "));
                let _ = writeln!(self.out, "{pad}}}");
                // The equation stands for its bodies: a dashed edge into the cluster.
                if self.next >= first {
                    let _ = writeln!(self.out, "{pad}{id} -> {} [style=dashed, lhead={cluster}, arrowhead=odot];", first_node(first, body));
                }
            }
            for (var, aval) in &node.outputs {
                producers.insert(*var, (id.clone(), aval.clone()));
            }
        }
        let out = self.id("out_");
        let _ = writeln!(self.out, "{pad}{out} [shape=ellipse, fillcolor=\"{INPUT_COLOUR}\", label=\"outputs\"];");
        for o in &graph.outputs {
            if let Operand::Var(v) = o {
                if let Some((from, aval)) = producers.get(v) {
                    let _ = writeln!(self.out, "{pad}{from} -> {out} [label=\"{}\"];", escape(aval));
                }
            }
        }
    }
}

/// The id of the first node written for a body whose ids start at `first`: its first
/// constant, input or equation (ids count up in that order).
fn first_node(first: usize, body: &TraceGraph) -> String {
    let prefix = if !body.constants.is_empty() {
        "const_"
    } else if !body.inputs.is_empty() {
        "in_"
    } else if !body.nodes.is_empty() {
        "eqn_"
    } else {
        "out_"
    };
    format!("{prefix}{first}")
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// Text inside a DOT double-quoted string.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_strings_are_escaped() {
        assert_eq!(escape("a \"b\"\nc\\"), "a \\\"b\\\"\\nc\\\\");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }
}
