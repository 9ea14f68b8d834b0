//! Reproducers linked both ways to the user's source. Every line of a reproducer that stands
//! for a user line ends with `# path/to/file.py:LINE`, the path relative to the workspace
//! folder (or, from the CLI, to where it ran). This reads those links: forwards (document
//! links, go to definition) and backwards (which reproducer line stands for a source line).

use std::path::{Path, PathBuf};

/// One `path/to/file.py:LINE` at the end of a commented line.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// 0-based line of the link in its file.
    pub line: u32,
    /// Byte offsets of `path:LINE` in the text.
    pub start: u32,
    pub end: u32,
    /// The path as written.
    pub path: String,
    /// The 1-based line it names.
    pub target_line: u32,
    /// The line has code before its comment (a header line has none).
    pub code: bool,
}

/// The links in `text`: the last word of a line that has a `#` before it, shaped `X.py:N`.
pub fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    let mut line_start = 0usize;
    for (line, raw) in text.split_inclusive('\n').enumerate() {
        let content = raw.trim_end();
        if let Some(link) = link_in(content, line_start, line as u32) {
            out.push(link);
        }
        line_start += raw.len();
    }
    out
}

fn link_in(content: &str, line_start: usize, line: u32) -> Option<Link> {
    // After the last whitespace character, which may be wider than a byte (U+2028, NEL).
    let word_start = content.char_indices().rev().find(|(_, c)| c.is_whitespace()).map_or(0, |(i, c)| i + c.len_utf8());
    let word = &content[word_start..];
    // Only inside a comment: `x = a  # f.py:3`, not `x = "f.py:3"`.
    if !content[..word_start].contains('#') {
        return None;
    }
    let (path, number) = word.rsplit_once(':')?;
    if !path.ends_with(".py") || path.len() <= ".py".len() || number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let target_line: u32 = number.parse().ok().filter(|n| *n > 0)?;
    Some(Link {
        line,
        start: (line_start + word_start) as u32,
        end: (line_start + content.len()) as u32,
        path: path.to_string(),
        target_line,
        code: !content.trim_start().starts_with('#'),
    })
}

/// Whether `text` is a reproducer tracelens wrote (its header says so).
pub fn is_reproducer(text: &str) -> bool {
    text.lines().take(3).any(|l| l.starts_with("# tracelens reproducer"))
}

/// The file a link names: an absolute path as it is; a relative one against the workspace
/// folders, then against the folders above the reproducer. `None` when no such file exists.
pub fn resolve(link_path: &str, reproducer: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let written = Path::new(link_path);
    if written.is_absolute() {
        return written.is_file().then(|| written.to_path_buf());
    }
    let above = reproducer.parent().into_iter().flat_map(Path::ancestors);
    roots.iter().map(PathBuf::as_path).chain(above).map(|base| base.join(written)).find(|p| p.is_file())
}

/// A reproducer line that stands for a source line.
#[derive(Clone, Debug, PartialEq)]
pub struct ReproducerLine {
    pub reproducer: PathBuf,
    /// 0-based line in the reproducer.
    pub line: u32,
    /// 1-based line in the source.
    pub source_line: u32,
}

/// Every line of the reproducers in `folder` (its `*.py` files) that links to `source`, newest
/// reproducer first; `overlay` holds the texts of open documents, read instead of the disk.
pub fn lines_linking_to(
    folder: &Path,
    source: &Path,
    roots: &[PathBuf],
    overlay: &std::collections::HashMap<PathBuf, String>,
) -> Vec<ReproducerLine> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "py") && p.is_file())
        .map(|p| (std::fs::metadata(&p).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH), p))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out = Vec::new();
    for (_, file) in files {
        let Some(text) = overlay.get(&file).cloned().or_else(|| crate::files::read_source(&file)) else { continue };
        if !is_reproducer(&text) {
            continue;
        }
        // Code lines only: the header names the error's line too.
        for link in links(&text).into_iter().filter(|l| l.code) {
            if resolve(&link.path, &file, roots).is_some_and(|p| same_file(&p, source)) {
                out.push(ReproducerLine { reproducer: file.clone(), line: link.line, source_line: link.target_line });
            }
        }
    }
    out
}

/// The reproducer line for source line `line` (1-based): one that names exactly it, else the
/// nearest one above it within `within` (a function's lines), from the newest reproducer.
pub fn best_for_line(lines: &[ReproducerLine], line: u32, within: (u32, u32)) -> Option<&ReproducerLine> {
    lines.iter().find(|l| l.source_line == line).or_else(|| {
        let newest = &lines.first()?.reproducer;
        lines
            .iter()
            .filter(|l| &l.reproducer == newest && l.source_line <= line && l.source_line >= within.0 && l.source_line <= within.1)
            .max_by_key(|l| (l.source_line, std::cmp::Reverse(l.line)))
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_the_last_word_of_a_comment() {
        let text = "# tracelens reproducer for TL104 at pkg/model.py:15\n\
                    # regenerate: tracelens repro pkg/model.py --line 15\n\
                    def project(w, x):  # pkg/model.py:12\n\
                    \x20   s = \"model.py:3\"\n\
                    \x20   v1 @ w  # pkg/model.py:15\r\n\
                    x = 1  # see a.py:0\n";
        let found = links(text);
        let summary: Vec<(u32, &str, u32, &str, bool)> =
            found.iter().map(|l| (l.line, l.path.as_str(), l.target_line, &text[l.start as usize..l.end as usize], l.code)).collect();
        assert_eq!(
            summary,
            vec![
                (0, "pkg/model.py", 15, "pkg/model.py:15", false),
                (2, "pkg/model.py", 12, "pkg/model.py:12", true),
                (4, "pkg/model.py", 15, "pkg/model.py:15", true),
            ]
        );
        assert!(is_reproducer(text));
        assert!(!is_reproducer("import jax  # a.py:1\n"));
    }

    #[test]
    fn whitespace_wider_than_a_byte_ends_a_word() {
        // U+2028, NEL and U+3000 are whitespace of 3, 2 and 3 bytes (and no line break here).
        let text = "x = 1  #\u{2028}a.py:3\ny = 2  #\u{85}b.py:4\u{3000}\u{c}\nz  #\u{3000}c.py:5\n";
        let found: Vec<(u32, &str, u32)> =
            links(text).iter().map(|l| (l.line, &text[l.start as usize..l.end as usize], l.target_line)).collect();
        assert_eq!(found, vec![(0, "a.py:3", 3), (1, "b.py:4", 4), (2, "c.py:5", 5)]);
    }

    #[test]
    fn relative_links_resolve_against_roots_then_the_folders_above() {
        let dir = std::env::temp_dir().join(format!("tracelens-links-{}", std::process::id()));
        let repro = dir.join("repro");
        std::fs::create_dir_all(dir.join("pkg")).unwrap_or_default();
        std::fs::create_dir_all(&repro).unwrap_or_default();
        std::fs::write(dir.join("pkg/model.py"), "x = 1\n").unwrap_or_default();
        let reproducer = repro.join("model_line1.py");
        assert_eq!(resolve("pkg/model.py", &reproducer, &[]), Some(dir.join("pkg/model.py")));
        assert_eq!(resolve("pkg/model.py", Path::new("/elsewhere/r.py"), std::slice::from_ref(&dir)), Some(dir.join("pkg/model.py")));
        assert_eq!(resolve("pkg/missing.py", &reproducer, std::slice::from_ref(&dir)), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
