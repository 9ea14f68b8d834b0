//! Project configuration from `pyproject.toml`, `[tool.tracelens]`:
//!
//! ```toml
//! [tool.tracelens]
//! select = ["TL1", "TL201"]        # codes (or prefixes) to report; default: all
//! ignore = ["TL206"]               # codes (or prefixes) never reported
//! large-constant-bytes = 1048576   # TL212 threshold
//! memory-budget-mb = 512           # what one analysis (or run) may hold; peak RSS stays
//!                                  # under about twice it
//! reproducer-fake-array-threshold = 128  # reproducers: larger arrays become np.ones
//! values = true                    # editor: evaluate open files on the CPU for TL301
//! shims = ["tools/shims"]          # folders of Python shims of in-house libraries
//!
//! [tool.tracelens.severity]
//! TL201 = "error"                  # "error" | "warning" | "info" | "ignore"
//! ```

use std::path::{Path, PathBuf};

use tracer_core::diagnostics::{Code, Severity};

#[derive(Clone, Debug, Default)]
pub struct Config {
    pub select: Option<Vec<String>>,
    pub ignore: Vec<String>,
    pub severity: Vec<(String, Option<Severity>)>,
    pub large_constant_bytes: Option<u64>,
    /// `Budgets::max_bytes`, in MiB.
    pub memory_budget_mb: Option<u64>,
    pub fake_array_threshold: Option<u64>,
    /// The editor's values pass (TL301), unless the client says otherwise.
    pub values: Option<bool>,
    /// Folders of the user's library shims (docs/ARCHITECTURE.md, "Library shims"), relative
    /// to the pyproject.toml's folder; searched before the bundled shims.
    pub shims: Vec<PathBuf>,
    /// The file it came from, for messages.
    pub source: Option<PathBuf>,
}

impl Config {
    /// An analysis of a file at `path` under this project: imports resolved from `roots` and
    /// the file's folder, with the project's thresholds. `check` and the language server both
    /// start from it, so a new project setting reaches both.
    pub fn analysis(&self, path: &Path, mut roots: Vec<PathBuf>) -> tracer_core::AnalysisConfig {
        if let Some(parent) = path.parent() {
            roots.push(parent.to_path_buf());
        }
        let mut config = tracer_core::AnalysisConfig { search_roots: roots, ..Default::default() };
        let base = self.source.as_ref().and_then(|p| p.parent());
        config.shim_roots = self.shims.iter().map(|d| base.map(|b| b.join(d)).unwrap_or_else(|| d.clone())).collect();
        if let Some(bytes) = self.large_constant_bytes {
            config.budgets.large_constant_bytes = bytes;
        }
        if let Some(n) = self.fake_array_threshold {
            config.reproducers.fake_array_threshold = n;
        }
        if let Some(mb) = self.memory_budget_mb {
            config.budgets.max_bytes = mb.saturating_mul(1 << 20);
        }
        config
    }

    /// The nearest `pyproject.toml` with a `[tool.tracelens]` table, from `start` upwards.
    pub fn discover(start: &Path) -> Result<Config, String> {
        let start = std::fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
        let mut dir = if start.is_dir() { Some(start.as_path()) } else { start.parent() };
        while let Some(d) = dir {
            let candidate = d.join("pyproject.toml");
            if candidate.is_file() {
                let text = std::fs::read_to_string(&candidate).map_err(|e| format!("{}: {e}", candidate.display()))?;
                if let Some(config) = Config::parse(&text).map_err(|e| format!("{}: {e}", candidate.display()))? {
                    return Ok(Config { source: Some(candidate), ..config });
                }
            }
            dir = d.parent();
        }
        Ok(Config::default())
    }

    /// `Ok(None)` when the file has no `[tool.tracelens]` table.
    pub fn parse(text: &str) -> Result<Option<Config>, String> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
        let Some(table) = doc.get("tool").and_then(|t| t.get("tracelens")).and_then(|t| t.as_table()) else { return Ok(None) };
        let strings = |key: &str| -> Result<Option<Vec<String>>, String> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::Array(items)) => items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string).ok_or_else(|| format!("[tool.tracelens] {key} must be a list of codes")))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(_) => Err(format!("[tool.tracelens] {key} must be a list of codes")),
            }
        };
        let mut config = Config { select: strings("select")?, ignore: strings("ignore")?.unwrap_or_default(), ..Default::default() };
        if let Some(v) = table.get("large-constant-bytes") {
            let n = v.as_integer().filter(|n| *n > 0).ok_or("[tool.tracelens] large-constant-bytes must be a positive integer")?;
            config.large_constant_bytes = Some(n as u64);
        }
        if let Some(v) = table.get("memory-budget-mb") {
            let n = v.as_integer().filter(|n| *n > 0).ok_or("[tool.tracelens] memory-budget-mb must be a positive integer")?;
            config.memory_budget_mb = Some(n as u64);
        }
        if let Some(v) = table.get("reproducer-fake-array-threshold") {
            let n = v
                .as_integer()
                .filter(|n| *n >= 0)
                .ok_or("[tool.tracelens] reproducer-fake-array-threshold must be a non-negative integer")?;
            config.fake_array_threshold = Some(n as u64);
        }
        if let Some(v) = table.get("shims") {
            let items = v.as_array().ok_or("[tool.tracelens] shims must be a list of folders")?;
            for item in items {
                config.shims.push(PathBuf::from(item.as_str().ok_or("[tool.tracelens] shims must be a list of folders")?));
            }
        }
        if let Some(v) = table.get("values") {
            config.values = Some(v.as_bool().ok_or("[tool.tracelens] values must be true or false")?);
        }
        if let Some(sev) = table.get("severity") {
            let sev = sev.as_table().ok_or("[tool.tracelens.severity] must be a table")?;
            for (code, level) in sev {
                if Code::from_str(code).is_none() {
                    return Err(format!("[tool.tracelens.severity] unknown code {code}"));
                }
                let level = match level.as_str() {
                    Some("error") => Some(Severity::Error),
                    Some("warning") => Some(Severity::Warning),
                    Some("info") => Some(Severity::Info),
                    Some("ignore") => None,
                    _ => return Err(format!("[tool.tracelens.severity] {code} must be \"error\", \"warning\", \"info\" or \"ignore\"")),
                };
                config.severity.push((code.clone(), level));
            }
        }
        Ok(Some(config))
    }

    /// The severity to report `code` with, or `None` when it is not reported.
    pub fn severity_of(&self, code: Code, default: Severity) -> Option<Severity> {
        let matches = |pattern: &str| code.as_str().starts_with(pattern) || code.name() == pattern;
        if let Some(select) = &self.select {
            if !select.iter().any(|p| matches(p)) {
                return None;
            }
        }
        if self.ignore.iter().any(|p| matches(p)) {
            return None;
        }
        match self.severity.iter().find(|(c, _)| c == code.as_str() || c == code.name()) {
            Some((_, level)) => *level,
            None => Some(default),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_select_and_ignore() {
        let text = "[tool.tracelens]\nignore = [\"TL206\"]\nselect = [\"TL1\", \"TL2\"]\nlarge-constant-bytes = 4096\nreproducer-fake-array-threshold = 16\nvalues = false\n[tool.tracelens.severity]\nTL201 = \"error\"\nretrace = \"ignore\"\n";
        let c = Config::parse(text).expect("valid").expect("has a table");
        assert_eq!(c.severity_of(Code::PrintAtTrace, Severity::Warning), Some(Severity::Error));
        assert_eq!(c.severity_of(Code::Retrace, Severity::Warning), None);
        assert_eq!(c.severity_of(Code::ClampedIndex, Severity::Warning), None);
        assert_eq!(c.severity_of(Code::ShapeMismatch, Severity::Error), Some(Severity::Error));
        assert_eq!(c.severity_of(Code::NotAnalysed, Severity::Info), None, "TL9 is not selected");
        assert_eq!(c.large_constant_bytes, Some(4096));
        assert_eq!(c.fake_array_threshold, Some(16));
        assert_eq!(c.values, Some(false));
    }

    #[test]
    fn shim_folders_are_relative_to_the_pyproject() {
        let c = Config::parse("[tool.tracelens]\nshims = [\"tools/shims\", \"/opt/shims\"]\n").expect("valid").expect("has a table");
        let c = Config { source: Some(PathBuf::from("/work/project/pyproject.toml")), ..c };
        let analysis = c.analysis(Path::new("/work/project/train.py"), Vec::new());
        assert_eq!(analysis.shim_roots, vec![PathBuf::from("/work/project/tools/shims"), PathBuf::from("/opt/shims")]);
        let err = Config::parse("[tool.tracelens]\nshims = \"tools\"\n").expect_err("invalid");
        assert!(err.contains("shims"), "{err}");
    }

    #[test]
    fn bad_configuration_is_an_error_with_the_key() {
        let err = Config::parse("[tool.tracelens.severity]\nTL201 = \"loud\"\n").expect_err("invalid");
        assert!(err.contains("TL201"), "{err}");
        let err = Config::parse("[tool.tracelens]\nvalues = 1\n").expect_err("invalid");
        assert!(err.contains("values"), "{err}");
        assert!(Config::parse("[project]\nname = 'x'\n").expect("valid").is_none());
    }
}
