//! Library shims: small Python models of a library's public surface (optax, and later flax and
//! equinox), interpreted like user code on top of the modelled `jax`, as typeshed's stubs
//! serve type checkers. See docs/ARCHITECTURE.md, "Library shims".
//!
//! Where they come from, in the order an import tries them once the project has no such
//! module: the folders of `AnalysisConfig::shim_roots` (a user's own, `[tool.tracelens] shims`),
//! then the shims bundled in the binary (`tracer-core/shims/`, embedded by `build.rs`). A shim
//! file is *library code*: its frames never count as the user's site (`Interp::site`), its
//! assignments record no hover values, and trace-time effects inside it are not reported.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::{FileId, Frame, Interp};

include!(concat!(env!("OUT_DIR"), "/bundled_shims.rs"));

/// The folder the bundled shims appear under: not a real path, so no file on disk can
/// shadow or be mistaken for one.
pub const BUNDLED_ROOT: &str = "<tracelens>/shims";

/// The text of a bundled shim at `path` (`<tracelens>/shims/optax/__init__.py`).
pub fn bundled(path: &Path) -> Option<&'static str> {
    let relative = path.strip_prefix(BUNDLED_ROOT).ok()?;
    let relative: Vec<&str> = relative.components().filter_map(|c| c.as_os_str().to_str()).collect();
    let relative = relative.join("/");
    BUNDLED_SHIMS.iter().find(|(p, _)| *p == relative).map(|(_, text)| *text)
}

impl Interp<'_> {
    /// The folders searched for shims, user folders first: a user's shim of a library wins
    /// over the bundled one.
    pub fn shim_search_roots(&self) -> Vec<PathBuf> {
        let mut roots = self.shim_roots.clone();
        roots.push(PathBuf::from(BUNDLED_ROOT));
        roots
    }

    /// Reads a module's source: bundled shims from the binary, anything else through the loader.
    pub fn read_source(&self, path: &Path) -> Option<Rc<str>> {
        match bundled(path) {
            Some(text) => Some(Rc::from(text)),
            None if path.starts_with(BUNDLED_ROOT) => None,
            None => self.loader.read(path),
        }
    }

    /// Whether `file` is library code (a shim): its lines are never the user's.
    pub fn is_library(&self, file: FileId) -> bool {
        self.files.get(file as usize).is_some_and(|f| f.library)
    }

    /// Whether the code running now is a shim's (the innermost frame is library code).
    pub fn in_library(&self) -> bool {
        self.frames.last().is_some_and(|f| self.is_library(f.file))
    }

    /// The frames of user code, outermost first: every frame but the shims'.
    pub fn user_frames(&self) -> impl DoubleEndedIterator<Item = &Frame> + '_ {
        self.frames.iter().filter(|f| !self.is_library(f.file))
    }

    /// Marks `file` as library code when it was found in a shim folder, or imported relatively
    /// from a shim (`relative_to_library`).
    pub(super) fn mark_library_if_shim(&mut self, file: FileId, root: &Path, relative_to_library: bool) {
        if relative_to_library || self.shim_roots.iter().any(|r| r == root) || root == Path::new(BUNDLED_ROOT) {
            if let Some(f) = self.files.get_mut(file as usize) {
                f.library = true;
            }
        }
    }
}
