// "tracelens: Show trace": the text of the server command `tracelens.trace` in a read-only
// virtual document (scheme `tracelens-trace`, language `tracelens-jaxpr`).

import * as path from 'path';
import * as vscode from 'vscode';

export const TRACE_SCHEME = 'tracelens-trace';
export const TRACE_LANGUAGE = 'tracelens-jaxpr';

export class TraceDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '# This trace is gone: run "tracelens: Show trace" again.\n';
  }

  /** Stores `text` under a URI named after the function (read from the server's `raw` text)
   *  and its file, so that showing it again updates the same document; returns the URI. */
  set(source: vscode.Uri, line: number, raw: string, text: string): vscode.Uri {
    const title = `${functionTitle(raw) ?? `trace at line ${line + 1}`} · ${path.basename(source.fsPath)}`;
    const uri = vscode.Uri.from({ scheme: TRACE_SCHEME, path: `/${title}`, query: source.toString() });
    const key = uri.toString();
    const fresh = !this.texts.has(key);
    this.texts.set(key, text);
    if (!fresh) {
      this.changed.fire(uri);
    }
    return uri;
  }

  forget(uri: vscode.Uri): void {
    this.texts.delete(uri.toString());
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** `jit(step)` from the first line of the server's text (`**jit(step)** traced 2×`). */
function functionTitle(text: string): string | undefined {
  const m = /^\*\*([^*]+)\*\*/.exec(text);
  return m?.[1].replace(/\//g, '∕');
}

/**
 * The server's text starts with a Markdown summary (as in its hover), then `# trace N` and the
 * jaxpr of each trace. In a plain document the summary reads better as comments.
 */
export function formatTrace(text: string): string {
  const lines = text.split('\n');
  const firstTrace = lines.findIndex((l) => /^# trace \d+/.test(l));
  const summaryEnd = firstTrace < 0 ? lines.length : firstTrace;
  const out: string[] = [];
  for (const l of lines.slice(0, summaryEnd)) {
    if (l.trim() === '') {
      continue;
    }
    out.push(`# ${l.replace(/\*\*/g, '')}`);
  }
  if (firstTrace >= 0) {
    out.push('');
  }
  for (const l of lines.slice(summaryEnd)) {
    out.push(l);
  }
  return out.join('\n').replace(/\n*$/, '\n');
}
