//! `tracelens/status`: what the server has traced so far, for a status bar. Sent as a
//! notification after each stored analysis and during the workspace scan, and answered as a
//! request of the same name (`:TracelensStatus` in Neovim asks for it).

#[allow(unused_imports)]
use super::*;

/// Counts over the latest analysis of every file (open documents and the scanned workspace).
/// Functions and findings are counted in the file that defines or reports them, so a module
/// imported by several files counts once.
pub(super) fn status_of(st: &State) -> Json {
    let (mut functions, mut traces, mut errors, mut warnings, mut infos, mut not_analysed) = (0, 0, 0, 0, 0, 0);
    for (path, a) in &st.results {
        for f in a.analysis.functions.iter().filter(|f| *f.location.path == **path) {
            functions += 1;
            traces += f.traces.len();
        }
        for (d, _, _) in a.analysis.diagnostics.iter().filter(|(d, _, _)| d.path == *path) {
            match lsp_severity(&st.settings.project, d.code, d.severity) {
                _ if d.code == Code::NotAnalysed => not_analysed += 1,
                Some(lsp::DiagnosticSeverity::ERROR) => errors += 1,
                Some(lsp::DiagnosticSeverity::WARNING) => warnings += 1,
                Some(_) => infos += 1,
                None => {}
            }
        }
        not_analysed += ended_early(path, a).count();
    }
    let analysing = st.pacing.values().filter(|p| p.in_flight.is_some()).count();
    serde_json::json!({
        "files": st.results.len(),
        "functions": functions,
        "traces": traces,
        "errors": errors,
        "warnings": warnings,
        "infos": infos,
        "notAnalysed": not_analysed,
        "analysing": analysing,
        "scanning": st.scanning,
    })
}

/// The notification `tracelens/status`.
enum StatusNotification {}

impl lsp::notification::Notification for StatusNotification {
    type Params = Json;
    const METHOD: &'static str = "tracelens/status";
}

impl Backend {
    pub(super) async fn send_status(&self) {
        let status = status_of(&self.lock());
        self.client.send_notification::<StatusNotification>(status).await;
    }

    /// The request `tracelens/status` (no parameters): the same counts.
    pub(super) async fn status(&self) -> RpcResult<Json> {
        Ok(status_of(&self.lock()))
    }
}
