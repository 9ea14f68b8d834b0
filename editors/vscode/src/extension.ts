// The tracelens extension: starts `tracelens lsp` through vscode-languageclient, shows its state in
// the status bar, and adds the commands that the protocol alone does not give an editor.

import * as cp from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  WorkDoneProgressBegin,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';

import { GraphAnswer, showGraph } from './graphView';
import { findServer, FoundServer, isFound } from './server';
import { formatTrace, TRACE_LANGUAGE, TRACE_SCHEME, TraceDocuments } from './traceView';

/** Server commands (`workspace/executeCommand`). */
const TRACE_COMMAND = 'tracelens.trace';
/** The file's traced computation as a graph: `{svg, dot, error}` (`graphView.ts`). */
const GRAPH_COMMAND = 'tracelens.graph';
/** `tracelens repro` as a server command, if a server offers it (else the binary's `repro`). */
const REPRO_COMMAND = 'tracelens.repro';
/** The token of the server's workspace scan progress. */
const SCAN_TOKEN = 'tracelens/scan';

type Status =
  | { kind: 'starting' }
  | { kind: 'ready'; detail?: string }
  | { kind: 'scanning'; message?: string; percentage?: number }
  | { kind: 'stopped' }
  | { kind: 'noServer'; detail: string };

let client: LanguageClient | undefined;
let server: FoundServer | undefined;
let output: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
let status: Status = { kind: 'stopped' };
/** The server's last `tracelens/status`: what it traced and found. */
interface Counts {
  files: number;
  functions: number;
  traces: number;
  errors: number;
  warnings: number;
  infos: number;
  notAnalysed: number;
}
let counts: Counts | undefined;
let traces: TraceDocuments;
let extensionPath = '';
/** A settings change has asked for a restart that has not happened yet. */
let restartPending = false;
/** Serialises start/stop so that a restart never overlaps another. */
let lifecycle: Promise<void> = Promise.resolve();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extensionPath = context.extensionPath;
  output = vscode.window.createOutputChannel('tracelens');
  statusItem = vscode.window.createStatusBarItem('tracelens.status', vscode.StatusBarAlignment.Right, 100);
  statusItem.name = 'tracelens';
  statusItem.command = 'tracelens.showOutput';
  traces = new TraceDocuments();
  context.subscriptions.push(
    output,
    statusItem,
    traces,
    vscode.workspace.registerTextDocumentContentProvider(TRACE_SCHEME, traces),
    vscode.workspace.onDidCloseTextDocument((d) => {
      if (d.uri.scheme === TRACE_SCHEME) {
        traces.forget(d.uri);
      }
    }),
    vscode.commands.registerCommand('tracelens.showOutput', () => output.show(true)),
    vscode.commands.registerCommand('tracelens.restartServer', () => restart()),
    vscode.commands.registerCommand('tracelens.showTrace', (uri?: unknown, line?: unknown) => showTrace(uri, line)),
    vscode.commands.registerCommand('tracelens.generateReproducer', () => generateReproducer()),
    vscode.commands.registerCommand('tracelens.showGraph', (uri?: unknown, line?: unknown) => showTraceGraph(uri, line)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      // The server merges `ignore` and `severity` into what it had, so an entry removed from
      // them would stay in force: those changes, and a new binary path, restart it.
      if (
        e.affectsConfiguration('tracelens.path') ||
        e.affectsConfiguration('tracelens.ignore') ||
        e.affectsConfiguration('tracelens.severity')
      ) {
        // Set now, before the client's own listener would send the change to a server that
        // is about to stop.
        restartPending = true;
        void restart();
      }
    }),
    { dispose: () => void stop() },
  );
  setStatus({ kind: 'starting' });
  statusItem.show();
  await serialised(start);
}

export function deactivate(): Thenable<void> | undefined {
  return stop();
}

function serialised(f: () => Promise<void>): Promise<void> {
  lifecycle = lifecycle.then(f, f);
  return lifecycle;
}

function log(line: string): void {
  output.appendLine(`[${new Date().toISOString().slice(11, 23)}] ${line}`);
}

// ---- the language client ----------------------------------------------------------------------

/** The `tracelens` settings the server reads (`initializationOptions`). */
function serverSettings(): Record<string, unknown> {
  const c = vscode.workspace.getConfiguration('tracelens');
  const s: Record<string, unknown> = {
    workspaceScan: c.get<boolean>('workspaceScan', true),
    inlayHints: {
      enabled: c.get<boolean>('inlayHints.enabled', true),
      scalars: c.get<boolean>('inlayHints.scalars', false),
      assignments: c.get<boolean>('inlayHints.assignments', true),
      parameters: c.get<boolean>('inlayHints.parameters', true),
      concrete: c.get<boolean>('inlayHints.concrete', true),
    },
    severity: c.get<Record<string, string>>('severity', {}),
    ignore: c.get<string[]>('ignore', []),
  };
  // No `debounceMs` unless the user set one: the server paces its own traces.
  const debounce = c.get<number | null>('debounceMs', null);
  if (typeof debounce === 'number') {
    s.debounceMs = debounce;
  }
  const large = c.get<number | null>('largeConstantBytes', null);
  if (typeof large === 'number') {
    s.largeConstantBytes = large;
  }
  return s;
}

async function start(): Promise<void> {
  const setting = vscode.workspace.getConfiguration('tracelens').get<string>('path', '');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const found = findServer(setting, extensionPath, folder);
  if (!isFound(found)) {
    server = undefined;
    reportNoServer(found.tried, found.badSetting);
    return;
  }
  server = found;
  log(`starting ${found.command} lsp (from ${found.source === 'setting' ? 'the tracelens.path setting' : found.source === 'bundled' ? 'the extension' : 'PATH'})`);
  setStatus({ kind: 'starting' });

  const serverOptions: ServerOptions = {
    command: found.command,
    // No `transport`: TransportKind.stdio would append `--stdio`, which `tracelens lsp` rejects;
    // without it the client still speaks over the process's stdin/stdout.
    args: ['lsp'],
    options: { cwd: folder },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file', language: 'python' }],
    initializationOptions: serverSettings(),
    synchronize: { configurationSection: 'tracelens' },
    outputChannel: output,
    traceOutputChannel: output,
    // The server answers pulls for open documents (and asks for a new pull when a trace ends)
    // and publishes the rest of the workspace. Pulling on every keystroke would only wait for
    // the trace that the refresh already announces.
    diagnosticPullOptions: { onChange: false, onSave: false, onTabs: false },
    middleware: {
      workspace: {
        didChangeConfiguration: async (sections, next) => {
          if (restartPending || client !== c || !c.isRunning()) {
            return; // the restarted server reads the settings when it starts
          }
          return next(sections);
        },
      },
      handleWorkDoneProgress: (token, params, next) => {
        if (token !== SCAN_TOKEN) {
          next(token, params);
          return;
        }
        onScanProgress(params);
        // The status bar shows the scan; VS Code's own window progress would show it twice.
        // `end` still goes through so that the client forgets the token.
        if (params.kind === 'end') {
          next(token, params);
        }
      },
      // The server's code lenses (`jit: traced 2× · 1 retrace`) carry no command: clicking
      // one shows that function's trace.
      provideCodeLenses: async (document, token, next) => {
        const lenses = await next(document, token);
        for (const lens of lenses ?? []) {
          if (lens.command !== undefined && lens.command.command === '') {
            lens.command = {
              title: lens.command.title,
              command: 'tracelens.showTrace',
              arguments: [document.uri, lens.range.start.line],
              tooltip: 'Show the traces and jaxpr of this function',
            };
          }
        }
        return lenses;
      },
    },
  };
  const c = new LanguageClient('tracelens', 'tracelens', serverOptions, clientOptions);
  client = c;
  c.onDidChangeState((e) => {
    if (client !== c) {
      return;
    }
    if (e.newState === State.Running) {
      // The workspace scan may already have reported (its progress can arrive before this
      // event); only a server still shown as starting becomes plainly ready.
      if (status.kind === 'starting') {
        setStatus({ kind: 'ready' });
      }
    } else if (e.newState === State.Starting) {
      setStatus({ kind: 'starting' });
    } else if (e.newState === State.Stopped) {
      setStatus({ kind: 'stopped' });
    }
  });
  counts = undefined;
  c.onNotification('tracelens/status', (s: Counts) => {
    if (client === c) {
      counts = s;
      setStatus(status);
    }
  });
  try {
    await c.start();
    const info = c.initializeResult?.serverInfo;
    log(`server ready: ${info?.name ?? 'tracelens'} ${info?.version ?? ''}`.trimEnd());
  } catch (e) {
    log(`the server did not start: ${String(e)}`);
    setStatus({ kind: 'stopped' });
    void vscode.window
      .showErrorMessage(`tracelens: the language server (${found.command}) did not start: ${String(e)}`, 'Show Output')
      .then((choice) => choice && output.show(true));
  }
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  if (c === undefined) {
    return;
  }
  try {
    await c.dispose(5000);
  } catch (e) {
    log(`stopping the server: ${String(e)}`);
  }
  setStatus({ kind: 'stopped' });
}

async function restart(): Promise<void> {
  await serialised(async () => {
    restartPending = false;
    log('restarting the server');
    await stop();
    await start();
  });
}

function reportNoServer(tried: string[], badSetting?: string): void {
  log('no tracelens binary found; looked at:');
  for (const t of tried) {
    log(`  ${t}`);
  }
  const message = badSetting !== undefined
    ? `tracelens: the setting tracelens.path (${badSetting}) does not name an executable file. Point it at the tracelens binary, or clear it to use the one shipped with the extension or on PATH.`
    : 'tracelens: the language server was not found. Set tracelens.path to the tracelens binary, or put tracelens on PATH (cargo install --path server, in the tracelens repository), then run "tracelens: Restart server".';
  setStatus({ kind: 'noServer', detail: message });
  void vscode.window.showErrorMessage(message, 'Open Settings', 'Show Output').then((choice) => {
    if (choice === 'Open Settings') {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'tracelens.path');
    } else if (choice === 'Show Output') {
      output.show(true);
    }
  });
}

// ---- status bar -------------------------------------------------------------------------------

function onScanProgress(p: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd): void {
  if (p.kind === 'begin') {
    log(`workspace scan: ${p.title}${p.message ? `: ${p.message}` : ''}`);
  } else if (p.kind === 'end') {
    log(`workspace scan done${p.message ? `: ${p.message}` : ''}`);
    setStatus({ kind: 'ready', detail: p.message });
    return;
  }
  const previous = status.kind === 'scanning' ? status.message : undefined;
  setStatus({ kind: 'scanning', message: p.message ?? previous, percentage: p.percentage });
}

function setStatus(s: Status): void {
  status = s;
  const version = client?.initializeResult?.serverInfo?.version;
  const tip = new vscode.MarkdownString(undefined, true);
  const where = server ? `\n\n\`${server.command}\`${version ? ` (${version})` : ''}` : '';
  statusItem.backgroundColor = undefined;
  switch (s.kind) {
    case 'starting':
      statusItem.text = '$(loading~spin) tracelens';
      tip.appendMarkdown(`tracelens: starting the server${where}`);
      break;
    case 'ready':
      statusItem.text = `$(check) tracelens${counts ? `: ${countsText(counts)}` : ''}`;
      tip.appendMarkdown(`tracelens: ready${s.detail ? ` — ${s.detail}` : ''}${countsTip()}${where}`);
      break;
    case 'scanning':
      // `3/10 files traced, ...` from the server: `tracelens 3/10` in the status bar.
      statusItem.text = `$(sync~spin) tracelens${s.message ? ` ${s.message.replace(/ files? traced.*$/, '')}` : ''}`;
      tip.appendMarkdown(`tracelens: tracing the workspace${s.message ? ` — ${s.message}` : ''}${s.percentage !== undefined ? ` (${s.percentage}%)` : ''}${where}`);
      break;
    case 'stopped':
      statusItem.text = '$(debug-stop) tracelens: stopped';
      tip.appendMarkdown(`tracelens: the server is stopped; run "tracelens: Restart server"${where}`);
      statusItem.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      break;
    case 'noServer':
      statusItem.text = '$(error) tracelens: no server';
      tip.appendText(s.detail);
      statusItem.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      break;
  }
  tip.appendMarkdown('\n\nClick to show the output.');
  statusItem.tooltip = tip;
  statusItem.accessibilityInformation = { label: statusLabel(s), role: 'button' };
}

/** `12 traced, 3 findings`: traced functions and findings, for the status bar. */
function countsText(n: Counts): string {
  const findings = n.errors + n.warnings + n.infos;
  return `${n.functions} traced, ${findings} finding${findings === 1 ? '' : 's'}`;
}

/** The counts in full, for the status bar's tooltip. */
function countsTip(): string {
  if (counts === undefined) {
    return '';
  }
  const n = counts;
  const early = n.notAnalysed ? `; ${n.notAnalysed} place${n.notAnalysed === 1 ? '' : 's'} where an analysis ended early (TL900 hints)` : '';
  return `\n\n${n.functions} traced functions (${n.traces} traces) in ${n.files} files: ${n.errors} errors, ${n.warnings} warnings, ${n.infos} infos${early}`;
}

/** The state in words, for screen readers (and the editor tests). */
function statusLabel(s: Status): string {
  switch (s.kind) {
    case 'starting':
      return 'tracelens: starting';
    case 'ready':
      return `tracelens: ready${s.detail ? `, ${s.detail}` : ''}`;
    case 'scanning':
      return `tracelens: tracing the workspace${s.message ? `, ${s.message}` : ''}`;
    case 'stopped':
      return 'tracelens: stopped';
    case 'noServer':
      return 'tracelens: no server found';
  }
}

// ---- commands ---------------------------------------------------------------------------------

function runningClient(): LanguageClient | undefined {
  if (client !== undefined && client.isRunning()) {
    return client;
  }
  void vscode.window
    .showWarningMessage('tracelens: the language server is not running.', 'Restart Server', 'Show Output')
    .then((choice) => {
      if (choice === 'Restart Server') {
        void restart();
      } else if (choice === 'Show Output') {
        output.show(true);
      }
    });
  return undefined;
}

/** The Python document and 0-based line a command is about: its arguments, else the cursor. */
function target(uriArg: unknown, lineArg: unknown): { uri: vscode.Uri; line: number } | undefined {
  if (uriArg instanceof vscode.Uri && typeof lineArg === 'number') {
    return { uri: uriArg, line: lineArg };
  }
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.languageId !== 'python' || editor.document.uri.scheme !== 'file') {
    void vscode.window.showInformationMessage('tracelens: open a Python file and put the cursor in a traced function.');
    return undefined;
  }
  return { uri: editor.document.uri, line: editor.selection.active.line };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs a server command on [uri, line]. The server answers `null` while the file's newest
 * version is still being traced, so a `null` is retried for a short while.
 */
async function executeOnLine(c: LanguageClient, command: string, uri: vscode.Uri, line: number): Promise<unknown> {
  const args = [c.code2ProtocolConverter.asUri(uri), line];
  const deadline = Date.now() + 3000;
  for (;;) {
    const result: unknown = await c.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
    if ((result !== null && result !== undefined) || Date.now() > deadline) {
      return result;
    }
    await sleep(250);
  }
}

async function showTrace(uriArg?: unknown, lineArg?: unknown): Promise<void> {
  const t = target(uriArg, lineArg);
  const c = t && runningClient();
  if (t === undefined || c === undefined) {
    return;
  }
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'tracelens: tracing' },
    () => executeOnLine(c, TRACE_COMMAND, t.uri, t.line),
  );
  if (typeof result !== 'string') {
    void vscode.window.showInformationMessage(
      `tracelens: no traced function at or above line ${t.line + 1} of ${path.basename(t.uri.fsPath)}. ` +
        'A function is traced when the file calls it under jax.jit, vmap, grad, scan or another transformation.',
    );
    return;
  }
  const uri = traces.set(t.uri, t.line, result, formatTrace(result));
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== TRACE_LANGUAGE) {
    doc = await vscode.languages.setTextDocumentLanguage(doc, TRACE_LANGUAGE);
  }
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: false });
}

async function showTraceGraph(uriArg?: unknown, lineArg?: unknown): Promise<void> {
  const t = target(uriArg, lineArg);
  const c = t && runningClient();
  if (t === undefined || c === undefined) {
    return;
  }
  const column = vscode.window.activeTextEditor?.viewColumn;
  const result = (await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'tracelens: drawing the trace graph' },
    () => executeOnLine(c, GRAPH_COMMAND, t.uri, t.line),
  )) as GraphAnswer | null;
  if (result === null || typeof result !== 'object' || (result.svg == null && result.dot == null)) {
    const why = result && typeof result === 'object' && result.message ? result.message : 'the file traced nothing';
    void vscode.window.showInformationMessage(`tracelens: no trace graph for ${path.basename(t.uri.fsPath)}: ${why}.`);
    return;
  }
  showGraph(t.uri, result, column);
}

async function generateReproducer(): Promise<void> {
  const t = target(undefined, undefined);
  const c = t && runningClient();
  if (t === undefined || c === undefined || server === undefined) {
    return;
  }
  const offered = c.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
  if (offered.includes(REPRO_COMMAND)) {
    return reproduceWithServer(c, t.uri, t.line);
  }
  // No server command: `tracelens repro FILE --line N -o OUT` of the same binary, on the file as
  // saved.
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === t.uri.toString());
  if (doc?.isDirty) {
    const choice = await vscode.window.showWarningMessage(
      `tracelens: a reproducer is made from the file on disk: save ${path.basename(t.uri.fsPath)} first?`,
      'Save and Generate',
    );
    if (choice !== 'Save and Generate' || !(await doc.save())) {
      return;
    }
  }
  const root = rootOf(t.uri);
  const out = reproducerPath(t.uri, t.line);
  await fs.promises.mkdir(path.dirname(out), { recursive: true });
  // Run from the workspace folder with a relative path: the reproducer's header names the file.
  const args = ['repro', path.relative(root, t.uri.fsPath), '--line', String(t.line + 1), '-o', out];
  log(`${server.command} ${args.join(' ')}`);
  const r = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'tracelens: writing a reproducer' },
    () => run(server!.command, args, root),
  );
  const message = r.stderr.trim();
  if (message !== '') {
    log(message);
  }
  if (r.code === 0 && fs.existsSync(out)) {
    await vscode.window.showTextDocument(vscode.Uri.file(out), { preview: false });
  } else if (r.code === 1) {
    // Nothing to reproduce at that line; the binary says why (`FILE:N: no error to reproduce
    // at this line`).
    const why = message.split('\n').pop()?.replace(/^.*?:\d+: /, '') ?? 'nothing to reproduce here';
    void vscode.window.showInformationMessage(`tracelens: line ${t.line + 1}: ${why}.`);
  } else if (/unrecognized subcommand/.test(message)) {
    log(`Generate reproducer: ${server.command} has no repro command`);
    void vscode.window.showInformationMessage('Reproducers are not available in this tracelens version yet.');
  } else {
    void vscode.window
      .showErrorMessage(`tracelens repro failed (exit ${r.code ?? 'signal'}): ${message.split('\n')[0] ?? ''}`, 'Show Output')
      .then((choice) => choice && output.show(true));
  }
}

/** The server command `tracelens.repro`, when a server offers it: [uri, 0-based line] → the
 *  reproducer's source, `{uri}`/`{path}` of a file it wrote, or `{message}` saying why none. */
async function reproduceWithServer(c: LanguageClient, uri: vscode.Uri, line: number): Promise<void> {
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'tracelens: writing a reproducer' },
    () => executeOnLine(c, REPRO_COMMAND, uri, line),
  );
  let file: vscode.Uri | undefined;
  if (typeof result === 'string') {
    file = vscode.Uri.file(reproducerPath(uri, line));
    await fs.promises.mkdir(path.dirname(file.fsPath), { recursive: true });
    await fs.promises.writeFile(file.fsPath, result);
  } else if (result !== null && typeof result === 'object') {
    const r = result as { uri?: unknown; path?: unknown; message?: unknown };
    if (typeof r.uri === 'string') {
      file = c.protocol2CodeConverter.asUri(r.uri);
    } else if (typeof r.path === 'string') {
      file = vscode.Uri.file(r.path);
    } else if (typeof r.message === 'string') {
      // Why there is none (`model.py:3: no error to reproduce at this line`).
      log(r.message);
      void vscode.window.showInformationMessage(`tracelens: ${r.message}`);
      return;
    }
  }
  if (file === undefined) {
    void vscode.window.showInformationMessage(`tracelens: nothing to reproduce at line ${line + 1}. Put the cursor on a line with a tracelens error.`);
    return;
  }
  await vscode.window.showTextDocument(file, { preview: false });
}

function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = cp.spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (e) => resolve({ code: null, stderr: String(e) }));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** `repro/<file>_line<N>.py` in the workspace folder of `source` (or beside it). */
function reproducerPath(source: vscode.Uri, line: number): string {
  return path.join(rootOf(source), 'repro', `${path.basename(source.fsPath, '.py')}_line${line + 1}.py`);
}

function rootOf(source: vscode.Uri): string {
  return vscode.workspace.getWorkspaceFolder(source)?.uri.fsPath ?? path.dirname(source.fsPath);
}
