//! Open documents: ropes edited strictly in version order (tower-lsp may run `didChange`
//! handlers concurrently, so each edit carries its version and is applied in that order).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use ropey::Rope;

use super::convert::{chars_before, PositionEncoding};

/// One edit as the client sent it: a range in the client's position encoding, or the whole text.
#[derive(Clone, Debug)]
pub struct Edit {
    pub range: Option<((u32, u32), (u32, u32))>,
    pub text: String,
}

pub struct Document {
    pub rope: Rope,
    pub version: i32,
    /// Edits that arrived ahead of a missing version, keyed by the version they produce.
    pending: BTreeMap<i32, Vec<Edit>>,
}

impl Document {
    pub fn text(&self) -> String {
        self.rope.to_string()
    }
}

#[derive(Default)]
pub struct Documents {
    docs: HashMap<PathBuf, Document>,
}

impl Documents {
    pub fn open(&mut self, path: PathBuf, text: &str, version: i32) {
        self.docs.insert(path, Document { rope: Rope::from_str(text), version, pending: BTreeMap::new() });
    }

    pub fn close(&mut self, path: &PathBuf) {
        self.docs.remove(path);
    }

    pub fn get(&self, path: &PathBuf) -> Option<&Document> {
        self.docs.get(path)
    }

    pub fn paths(&self) -> Vec<PathBuf> {
        self.docs.keys().cloned().collect()
    }

    /// Texts of all open documents (what imports read instead of the disk).
    pub fn snapshot(&self) -> HashMap<PathBuf, String> {
        self.docs.iter().map(|(p, d)| (p.clone(), d.text())).collect()
    }

    /// Applies the edits that produce `version` once the versions before it are in; edits
    /// that arrive ahead of a gap wait. Returns whether the text changed.
    pub fn change(&mut self, path: &PathBuf, version: i32, edits: Vec<Edit>, encoding: PositionEncoding) -> bool {
        let Some(doc) = self.docs.get_mut(path) else { return false };
        if version <= doc.version {
            return false;
        }
        doc.pending.insert(version, edits);
        let mut changed = false;
        while let Some((&next, _)) = doc.pending.first_key_value() {
            if next != doc.version + 1 {
                break;
            }
            changed |= apply_pending(doc, next, encoding);
        }
        changed
    }

    /// Applies every waiting edit in version order (clients may skip version numbers).
    pub fn flush(&mut self, path: &PathBuf, encoding: PositionEncoding) -> bool {
        let Some(doc) = self.docs.get_mut(path) else { return false };
        let mut changed = false;
        while let Some((&next, _)) = doc.pending.first_key_value() {
            changed |= apply_pending(doc, next, encoding);
        }
        changed
    }
}

fn apply_pending(doc: &mut Document, version: i32, encoding: PositionEncoding) -> bool {
    let Some(edits) = doc.pending.remove(&version) else { return false };
    for e in &edits {
        apply(&mut doc.rope, e, encoding);
    }
    doc.version = version;
    true
}

fn apply(rope: &mut Rope, edit: &Edit, encoding: PositionEncoding) {
    match edit.range {
        None => *rope = Rope::from_str(&edit.text),
        Some((start, end)) => {
            let a = char_index(rope, start, encoding);
            let b = char_index(rope, end, encoding).max(a);
            rope.remove(a..b);
            rope.insert(a, &edit.text);
        }
    }
}

/// The char index of a (line, column) position, counted as `convert` counts; positions past
/// a line's end or the file's end clamp to them.
pub fn char_index(rope: &Rope, (line, col): (u32, u32), encoding: PositionEncoding) -> usize {
    let line = line as usize;
    if line >= rope.len_lines() {
        return rope.len_chars();
    }
    let start = rope.line_to_char(line);
    let slice = rope.line(line);
    let mut line_len = slice.len_chars();
    // The line's own newline is not a position inside it.
    while line_len > 0 && matches!(slice.char(line_len - 1), '\n' | '\r') {
        line_len -= 1;
    }
    start + chars_before(slice.chars().take(line_len), col, encoding)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(l0: u32, c0: u32, l1: u32, c1: u32, text: &str) -> Edit {
        Edit { range: Some(((l0, c0), (l1, c1))), text: text.into() }
    }

    #[test]
    fn edits_apply_in_version_order_even_when_they_arrive_out_of_order() {
        let mut docs = Documents::default();
        let p = PathBuf::from("/w/a.py");
        docs.open(p.clone(), "x = 1\n", 1);
        // version 3 arrives before version 2.
        assert!(!docs.change(&p, 3, vec![edit(0, 5, 0, 5, "0")], PositionEncoding::Utf16));
        assert!(docs.change(&p, 2, vec![edit(0, 4, 0, 5, "2")], PositionEncoding::Utf16));
        assert_eq!(docs.get(&p).map(|d| (d.text(), d.version)), Some(("x = 20\n".to_string(), 3)));
        // A client that skips a version number: the edit waits until a flush.
        assert!(!docs.change(&p, 5, vec![edit(0, 0, 0, 1, "y")], PositionEncoding::Utf16));
        assert!(docs.flush(&p, PositionEncoding::Utf16));
        assert_eq!(docs.get(&p).map(|d| (d.text(), d.version)), Some(("y = 20\n".to_string(), 5)));
    }

    #[test]
    fn utf16_columns_count_surrogate_pairs() {
        let mut docs = Documents::default();
        let p = PathBuf::from("/w/b.py");
        docs.open(p.clone(), "s = '𝄞é' + x\n", 1);
        // 𝄞 is two UTF-16 units; `x` is at UTF-16 column 12.
        docs.change(&p, 2, vec![edit(0, 12, 0, 13, "y")], PositionEncoding::Utf16);
        assert_eq!(docs.get(&p).map(|d| d.text()), Some("s = '𝄞é' + y\n".to_string()));
        docs.change(&p, 3, vec![edit(0, 15, 0, 16, "z")], PositionEncoding::Utf8);
        assert_eq!(docs.get(&p).map(|d| d.text()), Some("s = '𝄞é' + z\n".to_string()));
        // Past the end of a line and of the file: clamped, no panic.
        docs.change(&p, 4, vec![edit(0, 999, 7, 3, "!")], PositionEncoding::Utf16);
        assert_eq!(docs.get(&p).map(|d| d.text()), Some("s = '𝄞é' + z!".to_string()));
    }
}
