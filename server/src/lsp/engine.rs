//! Running the engine for the server: the loader that reads open documents before the disk,
//! the analysis config, and analyses on threads with the engine's stack.

#[allow(unused_imports)]
use super::*;

/// Imports read open documents first, then the disk.
pub(super) struct OverlayLoader {
    pub(super) overlay: HashMap<PathBuf, String>,
    pub(super) disk: crate::files::FsLoader,
}

impl SourceLoader for OverlayLoader {
    fn read(&self, path: &Path) -> Option<std::rc::Rc<str>> {
        match self.overlay.get(path) {
            Some(t) => Some(std::rc::Rc::from(t.as_str())),
            None => self.disk.read(path),
        }
    }
}

use crate::check::ANALYSIS_STACK;

/// How the server analyses `path`: imports resolved from the workspace roots and the file's
/// folder, the project's budgets, and `cancel` to stop it early.
pub(super) fn analysis_config(
    path: &Path,
    roots: Vec<PathBuf>,
    settings: &Settings,
    cancel: Arc<AtomicBool>,
) -> tracer_core::AnalysisConfig {
    let mut config = settings.project.analysis(path, roots);
    config.budgets.cancel = Some(cancel);
    // Traced bodies are printed only when `tracelens.trace` asks for them.
    config.skip_jaxpr_text = true;
    config
}

/// Runs engine work (tracing, and the reproducer's minimiser, which traces again) on a thread
/// of its own with the engine's stack, and waits for it; a panic becomes `None`. Call it from
/// a blocking thread, never from the runtime's workers.
pub(super) fn on_engine_stack<T: Send + 'static>(name: &str, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let handle = std::thread::Builder::new()
        .name(name.into())
        .stack_size(ANALYSIS_STACK)
        .spawn(move || std::panic::catch_unwind(AssertUnwindSafe(work)).ok())
        .ok()?;
    handle.join().ok().flatten()
}

/// Analyses one file on a thread with the engine's stack; a panic becomes `None`.
/// `adjust` changes the analysis config on top of the settings (printed bodies, values mode,
/// functions to stage out).
pub(super) fn analyse_blocking(
    path: PathBuf,
    text: String,
    overlay: HashMap<PathBuf, String>,
    roots: Vec<PathBuf>,
    settings: Settings,
    cancel: Arc<AtomicBool>,
    adjust: impl FnOnce(&mut tracer_core::AnalysisConfig) + Send + 'static,
) -> Option<FileAnalysis> {
    on_engine_stack("tracelens-analysis", move || {
        let loader = OverlayLoader { overlay, disk: crate::files::FsLoader::default() };
        let mut config = analysis_config(&path, roots, &settings, cancel);
        adjust(&mut config);
        tracer_core::analyze_file(&path, &text, &loader, &config)
    })
}
