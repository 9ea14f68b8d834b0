//! The table of modelled `tf.*` names in docs/tensorflow.md is the surface table
//! (`tracer-core/src/tf/surface.rs`) rendered: a name added to, or taken out of, the surface
//! without the page following fails here, so the page cannot go stale. The failure prints
//! the block the page should hold.

use std::path::PathBuf;

use tracer_core::tf::TfFn;

const BEGIN: &str = "<!-- tf-surface:begin (generated from tracer-core/src/tf/surface.rs by tests/tf_surface_doc.rs) -->";
const END: &str = "<!-- tf-surface:end -->";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `tf.nn.relu` for a name in `tensorflow.nn`.
fn qualified(module: &str, name: &str) -> String {
    format!("tf{}.{name}", module.strip_prefix("tensorflow").unwrap_or(module))
}

/// The block: one table per group of the surface (its `// group` comments), a row per entry
/// with the other modules exporting it, and the entries still commented out as not modelled.
fn render() -> String {
    let source = std::fs::read_to_string(root().join("tracer-core/src/tf/surface.rs")).expect("surface.rs");
    let body = source.split("tf_surface! {").nth(1).expect("the surface's invocation");
    let mut out = String::new();
    let mut rows: Vec<String> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut heading = String::new();
    let flush = |out: &mut String, heading: &str, rows: &mut Vec<String>, pending: &mut Vec<String>| {
        if rows.is_empty() && pending.is_empty() {
            return;
        }
        out.push_str(&format!("\n**{heading}**\n\n| modelled | also exported as |\n| --- | --- |\n"));
        for r in rows.drain(..) {
            out.push_str(&r);
        }
        if !pending.is_empty() {
            out.push_str(&format!("\nCommented out in the table: {}.\n", pending.join(", ")));
            pending.clear();
        }
    };
    for line in body.lines().map(str::trim) {
        if line == "}" {
            break;
        }
        if let Some(comment) = line.strip_prefix("// ") {
            // A commented-out entry: `// gather_nd = "gather_nd" in ["tensorflow"],`.
            if let Some((_, rest)) = comment.split_once(" = \"") {
                let name = rest.split('"').next().unwrap_or_default();
                let module = rest.split("in [\"").nth(1).and_then(|m| m.split('"').next()).unwrap_or("tensorflow");
                pending.push(format!("`{}`", qualified(module, name)));
            } else if !comment.starts_with("Generator") {
                flush(&mut out, &heading, &mut rows, &mut pending);
                heading = comment.to_string();
            }
            continue;
        }
        let Some((variant, _)) = line.split_once(" = \"") else { continue };
        let f = *TfFn::ALL.iter().find(|f| format!("{f:?}") == variant).expect("an entry of TfFn::ALL");
        let others: Vec<String> = f.modules()[1..].iter().map(|m| format!("`{}`", qualified(m, f.name()))).collect();
        rows.push(format!("| `{}` | {} |\n", f.qualified(), others.join(", ")));
    }
    flush(&mut out, &heading, &mut rows, &mut pending);
    format!(
        "{BEGIN}\n{} modelled names ({} with their other modules).\n{out}{END}",
        TfFn::ALL.len(),
        TfFn::ALL.iter().map(|f| f.modules().len()).sum::<usize>()
    )
}

#[test]
fn the_tensorflow_page_lists_the_surface_table() {
    let page = std::fs::read_to_string(root().join("docs/tensorflow.md")).expect("docs/tensorflow.md");
    let expected = render();
    let (Some(start), Some(end)) = (page.find(BEGIN), page.find(END)) else {
        panic!("docs/tensorflow.md has no surface block; it should hold:\n\n{expected}\n");
    };
    let got = &page[start..end + END.len()];
    assert!(got == expected, "docs/tensorflow.md's surface table is stale; it should be:\n\n{expected}\n");
}

#[test]
fn every_surface_entry_is_in_the_page() {
    let expected = render();
    for f in TfFn::ALL {
        assert!(expected.contains(&format!("| `{}` |", f.qualified())), "{} is missing from the rendered table", f.qualified());
    }
}
