//! Settings of the language server: the client's (`workspace/configuration`, section
//! `tracelens`) on top of `pyproject.toml`'s.

#[allow(unused_imports)]
use super::*;

/// Settings from the client (`workspace/configuration`, section `tracelens`), on top of
/// `pyproject.toml`.
#[derive(Clone, Debug)]
pub struct Settings {
    pub project: Config,
    /// `debounceMs`: a fixed delay between an edit and its analysis. `None` (the default):
    /// the adaptive delay of `pacing`, none at all for a file whose analyses are fast.
    pub debounce: Option<Duration>,
    pub inlay_hints: bool,
    /// Which inlay hints (`inlayHints.assignments`, `.parameters`, `.concrete`, `.scalars`).
    pub inlay_kinds: super::hover::InlayKinds,
    pub workspace_scan: bool,
    /// Where `tracelens.repro` writes reproducers, relative to the workspace folder.
    pub reproducer_folder: PathBuf,
    /// The values pass (TL301): after an open document's diagnostics are out and the
    /// document has been left alone for `values_delay`, it is evaluated on the CPU within
    /// `values_budget`, and a NaN/Inf found is added to its diagnostics.
    pub values: bool,
    pub values_delay: Duration,
    pub values_budget: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            project: Config::default(),
            debounce: None,
            inlay_hints: true,
            inlay_kinds: Default::default(),
            workspace_scan: true,
            reproducer_folder: PathBuf::from("repro"),
            values: true,
            values_delay: Duration::from_millis(300),
            values_budget: Duration::from_millis(2000),
        }
    }
}

impl Settings {
    /// Client settings replace the previous client settings, on top of the project's.
    pub(super) fn apply_client(&mut self, base: &Config, v: &Json) {
        self.project = base.clone();
        if let Some(ms) = v.get("debounceMs").and_then(Json::as_u64) {
            self.debounce = Some(Duration::from_millis(ms));
        }
        if let Some(b) = v.pointer("/inlayHints/enabled").and_then(Json::as_bool) {
            self.inlay_hints = b;
        }
        let kinds = &mut self.inlay_kinds;
        for (key, flag) in [
            ("/inlayHints/scalars", &mut kinds.scalars),
            ("/inlayHints/assignments", &mut kinds.assignments),
            ("/inlayHints/parameters", &mut kinds.parameters),
            ("/inlayHints/concrete", &mut kinds.concrete),
        ] {
            if let Some(b) = v.pointer(key).and_then(Json::as_bool) {
                *flag = b;
            }
        }
        if let Some(b) = v.get("workspaceScan").and_then(Json::as_bool) {
            self.workspace_scan = b;
        }
        if let Some(sev) = v.get("severity").and_then(Json::as_object) {
            for (code, level) in sev {
                let level = match level.as_str() {
                    Some("error") => Some(Severity::Error),
                    Some("warning") => Some(Severity::Warning),
                    Some("info") => Some(Severity::Info),
                    Some("ignore") => None,
                    _ => continue,
                };
                self.project.severity.retain(|(c, _)| c != code);
                self.project.severity.push((code.clone(), level));
            }
        }
        if let Some(list) = v.get("ignore").and_then(Json::as_array) {
            self.project.ignore.extend(list.iter().filter_map(|x| x.as_str().map(str::to_string)));
        }
        // Relative and without `..`: reproducers are never written outside the workspace.
        let inside = |d: &Path| d.components().all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
        if let Some(dir) =
            v.get("reproducerFolder").and_then(Json::as_str).map(Path::new).filter(|d| !d.as_os_str().is_empty() && inside(d))
        {
            self.reproducer_folder = dir.to_path_buf();
        }
        // Shim folders from the client come before the project's (absolute, or relative to the
        // pyproject.toml's folder like the project's own).
        if let Some(list) = v.get("shims").and_then(Json::as_array) {
            let mut shims: Vec<PathBuf> = list.iter().filter_map(|x| x.as_str().map(PathBuf::from)).collect();
            shims.append(&mut self.project.shims);
            self.project.shims = shims;
        }
        if let Some(n) = v.get("largeConstantBytes").and_then(Json::as_u64) {
            self.project.large_constant_bytes = Some(n);
        }
        self.values = v.pointer("/values/enabled").and_then(Json::as_bool).or(self.project.values).unwrap_or(true);
        if let Some(ms) = v.pointer("/values/delayMs").and_then(Json::as_u64) {
            self.values_delay = Duration::from_millis(ms);
        }
        if let Some(ms) = v.pointer("/values/budgetMs").and_then(Json::as_u64) {
            self.values_budget = Duration::from_millis(ms);
        }
    }
}
