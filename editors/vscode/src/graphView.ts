// "tracelens: Show trace graph": the server command `tracelens.graph` draws the file's traced
// computation (an SVG made by Graphviz on the server's side); it is shown in a webview, and a
// click on an equation's node reveals its source line.

import * as path from 'path';
import * as vscode from 'vscode';

/** What `tracelens.graph` answers: the SVG (absent without Graphviz), the DOT it was drawn
 *  from, and why there is no SVG; or `message` when the file traced nothing. */
export interface GraphAnswer {
  svg?: string | null;
  dot?: string;
  error?: string | null;
  message?: string;
}

/** One panel per source file, reused when the graph is shown again. */
const panels = new Map<string, vscode.WebviewPanel>();

export function showGraph(source: vscode.Uri, answer: GraphAnswer, sourceColumn: vscode.ViewColumn | undefined): void {
  const key = source.toString();
  let panel = panels.get(key);
  const title = `Trace graph · ${path.basename(source.fsPath)}`;
  if (panel === undefined) {
    panel = vscode.window.createWebviewPanel('tracelens.graph', title, vscode.ViewColumn.Beside, {
      enableScripts: true,
      retainContextWhenHidden: true,
    });
    panels.set(key, panel);
    panel.onDidDispose(() => panels.delete(key));
    panel.webview.onDidReceiveMessage(async (m: { line?: unknown }) => {
      const line = typeof m.line === 'number' ? m.line : Number(m.line);
      if (!Number.isFinite(line) || line < 1) {
        return;
      }
      const position = new vscode.Position(line - 1, 0);
      const editor = await vscode.window.showTextDocument(source, {
        viewColumn: sourceColumn ?? vscode.ViewColumn.One,
        selection: new vscode.Range(position, position),
        preserveFocus: false,
      });
      editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    });
  } else {
    panel.reveal(vscode.ViewColumn.Beside, false);
  }
  panel.title = title;
  panel.webview.html = page(answer, nonce());
}

function nonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < 32; i++) {
    out += chars.charAt(Math.floor(Math.random() * chars.length));
  }
  return out;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The SVG without its XML prologue and doctype (inline SVG in HTML takes neither). */
function inlineSvg(svg: string): string {
  const start = svg.indexOf('<svg');
  return start < 0 ? '' : svg.slice(start);
}

function page(answer: GraphAnswer, n: string): string {
  const body = answer.svg
    ? `<div id="graph">${inlineSvg(answer.svg)}</div>`
    : `<p class="note">${escapeHtml(answer.error ?? 'No picture: the server could not draw the graph.')}</p>` +
      `<p>The graph in Graphviz's DOT language:</p><pre>${escapeHtml(answer.dot ?? '')}</pre>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${n}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style>
  body { background: #ffffff; color: #1f2933; font-family: var(--vscode-font-family); margin: 0; padding: 8px; }
  #graph svg { max-width: 100%; height: auto; }
  #graph a { cursor: pointer; }
  #graph a:hover polygon, #graph a:hover path { stroke: #1c7ed6; stroke-width: 2; }
  .note { color: #c92a2a; }
  pre { font-size: 11px; white-space: pre-wrap; }
</style>
</head>
<body>
${body}
<script nonce="${n}">
  const vscode = acquireVsCodeApi();
  document.addEventListener('click', (event) => {
    const link = event.target instanceof Element ? event.target.closest('a') : null;
    if (!link) { return; }
    const href = link.getAttribute('xlink:href') || link.getAttribute('href') || '';
    if (href.startsWith('line:')) {
      event.preventDefault();
      vscode.postMessage({ line: Number(href.slice(5)) });
    }
  });
</script>
</body>
</html>`;
}
