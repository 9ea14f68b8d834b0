//! The workspace scan: every Python file of the workspace folders analysed once, with
//! `$/progress` when the client supports it.

use super::schedule::store_result;
#[allow(unused_imports)]
use super::*;

impl Backend {
    pub(super) async fn scan_workspace(&self) {
        let (roots, scan) = {
            let st = self.lock();
            (st.roots.clone(), st.settings.workspace_scan)
        };
        if !scan || roots.is_empty() {
            return;
        }
        let files = crate::files::python_files(&roots).unwrap_or_default();
        if files.is_empty() {
            return;
        }
        // `$/progress` only to a client that shows it, on a token it agreed to.
        let token = lsp::NumberOrString::String("tracelens/scan".into());
        let created = self.lock().work_done_progress
            && self
                .client
                .send_request::<lsp::request::WorkDoneProgressCreate>(lsp::WorkDoneProgressCreateParams { token: token.clone() })
                .await
                .is_ok();
        let total = files.len();
        let progress = if created {
            let begin = self.client.progress(token, "tracelens: tracing the workspace").with_percentage(0);
            Some(begin.with_message(format!("0/{total} files traced")).begin().await)
        } else {
            None
        };
        self.lock().scanning = true;
        self.send_status().await;
        for (done, path) in files.into_iter().enumerate() {
            if self.lock().shutting_down {
                return;
            }
            let open = self.lock().docs.get(&path).is_some();
            if !open {
                let Some(text) = crate::files::read_source(&path) else { continue };
                let (overlay, roots, settings, started) = {
                    let st = self.lock();
                    (st.docs.snapshot(), st.roots.clone(), st.settings.clone(), self.generation.load(Ordering::SeqCst))
                };
                let (p2, t2) = (path.clone(), text.clone());
                let cancel = Arc::new(AtomicBool::new(false));
                let analysis = tokio::task::spawn_blocking(move || analyse_blocking(p2, t2, overlay, roots, settings, cancel, |_| {}))
                    .await
                    .ok()
                    .flatten();
                if let Some(analysis) = analysis {
                    let notice = {
                        let mut st = self.lock();
                        store_result(&mut st, &path, Analysed { version: -1, text, analysis, started }).0
                    };
                    notice.send(&self.client).await;
                }
            }
            if let Some(p) = &progress {
                let pct = ((done + 1) * 100 / total) as u32;
                let counts = counts_line(&status_of(&self.lock()));
                p.report_with_message(format!("{}/{total} files traced, {counts}", done + 1), pct).await;
            }
            if (done + 1) % 20 == 0 {
                self.send_status().await;
            }
        }
        self.lock().scanning = false;
        let counts = counts_line(&status_of(&self.lock()));
        if let Some(p) = progress {
            p.finish_with_message(format!("{total} files traced, {counts}")).await;
        }
        self.send_status().await;
    }
}

/// "N functions, N findings" from a `status_of`.
fn counts_line(status: &Json) -> String {
    let n = |k: &str| status[k].as_u64().unwrap_or(0);
    let findings = n("errors") + n("warnings") + n("infos");
    format!("{} functions, {findings} findings", n("functions"))
}
