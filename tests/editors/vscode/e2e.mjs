// The VS Code extension in the real workbench: code-server (Code 1.100.3) driven by Debian's
// Chromium through playwright-core. Started by run.sh, which installs everything, packages and
// installs tracelens.vsix, copies the fixture workspace and starts code-server.
//
// Environment: CODE_SERVER_URL, WORKSPACE (the copied fixture folder), ARTIFACTS (screenshots
// and logs go there), TOOLS (the folder whose node_modules has playwright-core), MACHINE_SETTINGS
// (code-server's Machine/settings.json, where tracelens.path goes), CHROMIUM.
// Ends with `N passed, N failed`; exit code 1 when anything failed.

import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`e2e.mjs: ${name} is not set (run tests/editors/vscode/run.sh)`);
    process.exit(2);
  }
  return v;
};
const url = env('CODE_SERVER_URL');
const workspace = env('WORKSPACE');
const artifacts = env('ARTIFACTS');
const tools = env('TOOLS');
const machineSettings = env('MACHINE_SETTINGS');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

const { chromium } = createRequire(path.join(tools, 'package.json'))('playwright-core');

const isMac = false; // code-server runs on Linux here: Ctrl, not Cmd.
const mod = isMac ? 'Meta' : 'Control';
const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
const results = [];
fs.mkdirSync(artifacts, { recursive: true });

const browserProfile = fs.mkdtempSync(path.join(path.dirname(workspace), 'chromium-'));
const context = await chromium.launchPersistentContext(browserProfile, {
  executablePath: chromiumPath,
  headless: true,
  viewport: { width: 1400, height: 860 },
  deviceScaleFactor: 1,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
const page = context.pages()[0] ?? (await context.newPage());
const pageErrors = [];
page.on('pageerror', (e) => pageErrors.push(String(e)));

async function shot(name, options = {}) {
  const file = path.join(artifacts, name);
  await page.screenshot({ path: file, ...options });
  return file;
}

/** One checked step: a failure is recorded with a screenshot, and the later steps still run. */
async function step(name, f) {
  const start = Date.now();
  try {
    await f();
    // Every key these steps press is meant for a command, an input or a read-only document: a
    // document with unsaved changes means one went astray (CI once typed Enter into model.py).
    const dirty = await page.locator('.tabs-container .tab.dirty').allInnerTexts();
    expect(dirty.length === 0, `a document was edited by a stray key: ${dirty.join(', ')}`);
    results.push({ name, ok: true });
    console.log(`ok   ${name} (${((Date.now() - start) / 1000).toFixed(1)}s, at ${elapsed()})`);
  } catch (e) {
    results.push({ name, ok: false });
    const file = `failed-${results.length}.png`;
    await shot(file).catch(() => {});
    console.log(`FAIL ${name} (at ${elapsed()}): ${String(e?.message ?? e).split('\n').slice(0, 14).join('\n     ')}`);
    console.log(`     focus: ${await focusDescription().catch((err) => String(err))}`);
    console.log(`     screenshot: ${path.join(artifacts, file)}`);
  }
}

function expect(cond, what) {
  if (!cond) {
    throw new Error(what);
  }
}

const statusItem = page.locator('[id$="tracelens.status"]');
const editor = page.locator('.editor-group-container.active .monaco-editor').first();

/** Status bar states for the log, with a run of scan progress states as one. */
function condense(states) {
  const out = [];
  for (const l of states) {
    const m = /^tracelens: tracing the workspace, (\d+)\/(\d+) files traced/.exec(l);
    const last = out[out.length - 1];
    if (m && last?.progress) {
      last.to = m[1];
      last.n += 1;
    } else if (m) {
      out.push({ progress: true, from: m[1], to: m[1], total: m[2], n: 1 });
    } else {
      out.push({ text: l });
    }
  }
  return out.map((o) => (o.progress ? `[${o.n} progress states ${o.from}/${o.total} … ${o.to}/${o.total}]` : o.text)).join(' → ');
}

/** Where the keyboard focus is, for failure messages. */
async function focusDescription() {
  return page.evaluate(() => {
    const describe = (e) => (e ? `${e.tagName.toLowerCase()}${e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : ''}` : 'none');
    const chain = [];
    for (let e = document.activeElement; e && chain.length < 4; e = e.parentElement) chain.push(describe(e));
    const quick = document.querySelector('.quick-input-widget');
    return `${chain.join(' < ')}; quick input ${quick ? (quick.style.display === 'none' ? 'hidden' : 'shown') : 'absent'}`;
  });
}

async function statusLabel() {
  return (await statusItem.getAttribute('aria-label')) ?? '';
}

/** Runs a command from the command palette by its title. */
async function runCommand(title, rowText = title) {
  // Click the command's own row: Enter runs whichever row is active, and while the list is
  // still filtering (or a recently used command sits on top) that need not be this one.
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: rowText }).first();
  for (let attempt = 1; ; attempt++) {
    try {
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill(`>${title}`, { timeout: 10_000 });
      await row.waitFor({ state: 'visible', timeout: 10_000 });
      break;
    } catch (e) {
      // The palette closes when an editor that was opening takes the focus: open it again
      // (nothing has run yet).
      if (attempt >= 3) throw e;
      console.log(`     command palette for "${title}": attempt ${attempt} failed (${String(e.message).split('\n')[0]}), retrying; focus: ${await focusDescription().catch((err) => String(err))}`);
      if (await page.locator('.quick-input-widget').isVisible()) {
        await page.keyboard.press('Escape');
      }
    }
  }
  await row.click();
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 });
}

/**
 * Waits until the keyboard focus is in the editor of the file `name` (or of a document whose
 * URI starts with `name`, such as `tracelens-trace:`).
 *
 * Opening an editor (a tab click, a code lens, go to definition) focuses it a moment later. A key
 * pressed in between goes to whatever had focus, and a quick input opened in between is closed
 * when that focus arrives (CI saw both: an Enter typed into model.py, and a Go to Line input that
 * vanished before it could be filled).
 */
async function waitForEditorFocus(name, timeout = 10_000) {
  try {
    await page.waitForFunction(
      (n) => {
        const ed = document.activeElement?.closest('.editor-group-container.active .monaco-editor');
        const uri = decodeURIComponent(ed?.getAttribute('data-uri') ?? '');
        return uri !== '' && (uri.endsWith(`/${n}`) || uri.startsWith(n));
      },
      name,
      { timeout },
    );
  } catch (e) {
    throw new Error(`the editor of ${name} did not get the keyboard focus in ${timeout / 1000} s; focus: ${await focusDescription()}`);
  }
}

/** Brings the tab of `name` to the front and waits until its editor has the focus. */
async function activateTab(name) {
  await page.locator('.tabs-container .tab', { hasText: name }).first().click();
  await waitForEditorFocus(name);
}

/** The cursor of the active editor, from the status bar ("Ln 15, Col 5"). */
async function cursorPosition() {
  const text = await page.locator('[id="status.editor.selection"]').first().innerText();
  const m = /Ln (\d+), Col (\d+)/.exec(text);
  expect(m, `no line in the status bar item: ${text}`);
  return { line: Number(m[1]), column: Number(m[2]) };
}

/** Puts the cursor of the editor of `name` (which must be in front) at line:column (1-based). */
async function goTo(name, line, column) {
  for (let attempt = 1; ; attempt++) {
    try {
      await waitForEditorFocus(name);
      await page.keyboard.press(`${mod}+G`);
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill(`:${line}:${column}`, { timeout: 10_000 });
      // Enter only into the Go to Line input: were it closed, Enter would edit the document.
      const focused = await input.evaluate((e) => e === document.activeElement && e.offsetParent !== null);
      expect(focused, 'the Go to Line input lost the focus before Enter');
      await page.keyboard.press('Enter');
      await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 });
      await page.waitForFunction(
        ([l, c]) => (document.querySelector('[id="status.editor.selection"]')?.textContent ?? '').includes(`Ln ${l}, Col ${c}`),
        [line, column],
        { timeout: 5_000 },
      ).catch(async () => {
        const at = await cursorPosition();
        throw new Error(`the cursor is at ${at.line}:${at.column}`);
      });
      return;
    } catch (e) {
      if (attempt >= 3) throw e;
      console.log(`     go to ${name}:${line}:${column}: attempt ${attempt} failed (${String(e.message).split('\n').slice(0, 14).join('\n       ')}), retrying; focus: ${await focusDescription().catch((err) => String(err))}`);
      if (await page.locator('.quick-input-widget').isVisible()) {
        await page.keyboard.press('Escape');
      }
    }
  }
}

async function visibleEditorText() {
  return (await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
}

// ---------------------------------------------------------------------------------------------

await step('the workbench loads, the server starts and the status bar shows the workspace scan', async () => {
  // Record every state of the status bar item from the first moment on.
  await page.addInitScript(() => {
    const seen = [];
    window.__tracelensStates = seen;
    const push = (label) => {
      if (label && seen[seen.length - 1] !== label) {
        seen.push(label);
      }
    };
    // Every change of the item's label, with the label it replaced: a server that is ready a
    // few milliseconds after it starts changed it twice between two looks of a poll.
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.type === 'attributes' && r.target.id?.endsWith('tracelens.status')) {
          push(r.oldValue);
          push(r.target.getAttribute('aria-label'));
        }
      }
      push(document.querySelector('[id$="tracelens.status"]')?.getAttribute('aria-label'));
    }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-label'], attributeOldValue: true });
  });
  await page.goto(`${url}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  await statusItem.waitFor({ state: 'visible', timeout: 30_000 });
  // The item says "ready" once the server has started and again, with the count, when the
  // workspace scan ends; wait for the second (waiting for the first raced the scan's start).
  await page.waitForFunction(
    () => /^tracelens: ready, \d+ files traced/.test(document.querySelector('[id$="tracelens.status"]')?.getAttribute('aria-label') ?? ''),
    null,
    { timeout: 30_000 },
  );
  const label = await statusLabel();
  // The workspace scan reported through $/progress: begin, reports, and an end with its count.
  expect(/ready, 401 files traced/.test(label), `the status bar did not show the end of the workspace scan: "${label}"`);
  const states = await page.evaluate(() => window.__tracelensStates);
  const progress = states.filter((l) => /^tracelens: tracing the workspace, \d+\/401 files traced/.test(l));
  console.log(`     status bar: ${condense(states)}`);
  expect(states[0] === 'tracelens: starting', `first state: ${states[0]}`);
  expect(progress.length > 0, `no scan progress in the status bar: ${states.join(' → ')}`);
  const scanning = await statusItem.evaluate((e) => e.textContent);
  expect(scanning.includes('tracelens'), `status text: ${scanning}`);
});

await step('model.py opens with a tracelens error squiggle, code lenses and inlay hints', async () => {
  await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'model.py' }).first().click();
  await page.locator('.squiggly-error').first().waitFor({ timeout: 30_000 });
  const lens = page.locator('.codelens-decoration', { hasText: 'jit: traced 2×' }).first();
  await lens.waitFor({ timeout: 10_000 });
  expect((await lens.innerText()).includes('1 retrace'), `code lens: ${await lens.innerText()}`);
  await shot('01-editor.png');
});

await step('the Problems panel lists the tracelens diagnostics', async () => {
  await page.keyboard.press(`${mod}+Shift+M`);
  const panel = page.locator('.markers-panel');
  await panel.waitFor({ state: 'visible', timeout: 10_000 });
  await page.locator('.markers-panel .monaco-list-row', { hasText: 'TL104' }).first().waitFor({ timeout: 10_000 });
  const text = await panel.innerText();
  for (const needle of ['dot_general requires contracting dimensions', 'TL104', 'TL201', 'TL210', 'tracelens']) {
    expect(text.includes(needle), `Problems panel has no "${needle}":\n${text}`);
  }
  // Each diagnostic once (pulled for the open file, published for the rest, never both).
  const counts = await page.locator('#status\\.problems').getAttribute('aria-label');
  expect(counts === 'Errors: 1, Warnings: 2', `problem counts: ${counts}`);
  await shot('02-problems.png');
  await page.keyboard.press(`${mod}+J`); // close the panel
  await panel.waitFor({ state: 'hidden', timeout: 10_000 });
});

/** Moves the mouse onto line:column of the active editor and returns the hover that shows. */
async function hoverAt(line, column) {
  await editor.click({ position: { x: 400, y: 300 } });
  await goTo('model.py', line, column);
  const cursor = await page.locator('.editor-group-container.active .cursors-layer .cursor').first().boundingBox();
  expect(cursor, 'no cursor in the editor');
  // Onto the character after the cursor, in steps so that the editor sees the mouse move.
  await page.mouse.move(cursor.x + 40, cursor.y + 40);
  await page.mouse.move(cursor.x + 4, cursor.y + cursor.height / 2, { steps: 4 });
  const hover = page.locator('.monaco-hover:visible', { hasText: 'f32[' }).first();
  await hover.waitFor({ state: 'visible', timeout: 15_000 });
  return hover;
}

await step('hovering h shows its traced shapes', async () => {
  const hover = await hoverAt(7, 5); // `h` in `h = jnp.tanh(x @ w)` of layer
  const text = await hover.innerText();
  for (const needle of ['f32[3,8]', 'f32[5,8]', 'traced 2×']) {
    expect(text.includes(needle), `hover has no "${needle}":\n${text}`);
  }
  console.log(`     hover: ${text.replace(/\s+/g, ' ').trim()}`);
  await shot('03-hover.png');
  await page.mouse.move(5, 400);
  await page.keyboard.press('Escape');
  await hover.waitFor({ state: 'hidden', timeout: 5_000 });
});

await step('hovering the h of the failing matmul shows the error and the shape', async () => {
  const hover = await hoverAt(15, 12);
  const text = await hover.innerText();
  for (const needle of ['TL104', 'f32[3,8]']) {
    expect(text.includes(needle), `hover has no "${needle}":\n${text}`);
  }
  // A crop of the editor for the extension's README (editors/vscode/images/hover.png).
  const box = await page.locator('.editor-group-container.active').first().boundingBox();
  expect(box, 'no editor group');
  await shot('readme-hover.png', { clip: { x: box.x, y: box.y + 30, width: Math.min(box.width, 940), height: 480 } });
  await page.mouse.move(5, 400);
  await page.keyboard.press('Escape');
});

await step('"tracelens: Show trace" opens the jaxpr of the function under the cursor', async () => {
  await editor.click({ position: { x: 400, y: 300 } });
  await goTo('model.py', 8, 5);
  await runCommand('tracelens: Show trace');
  const tab = page.locator('.tabs-container .tab', { hasText: 'jit(layer)' }).first();
  await tab.waitFor({ state: 'visible', timeout: 15_000 });
  await page.waitForFunction(
    () => [...document.querySelectorAll('.editor-group-container.active .view-lines')].some((v) => v.textContent.replace(/\u00a0/g, ' ').includes('dot_general')),
    null,
    { timeout: 10_000 },
  );
  const text = await visibleEditorText();
  for (const needle of ['# jit(layer) traced 2×', '# trace 1', '# trace 2', 'lambda', 'f32[5,8]']) {
    expect(text.includes(needle), `trace document has no "${needle}":\n${text}`);
  }
  await shot('04-trace.png');
  // Read-only: typing changes nothing.
  await waitForEditorFocus('tracelens-trace:');
  await page.keyboard.type('x');
  expect((await visibleEditorText()) === text, 'the trace document accepted an edit');
  await page.keyboard.press(`${mod}+W`);
});

await step('clicking a code lens shows that function\'s trace', async () => {
  await page.locator('.tabs-container .tab', { hasText: 'model.py' }).first().click();
  await page.locator('.codelens-decoration a', { hasText: 'jit: traced 1×' }).first().click();
  await page.locator('.tabs-container .tab', { hasText: 'jit(project)' }).first().waitFor({ state: 'visible', timeout: 15_000 });
  await page.waitForFunction(
    () => [...document.querySelectorAll('.editor-group-container.active .view-lines')].some((v) => v.textContent.replace(/\u00a0/g, ' ').includes('jit(project) traced 1×')),
    null,
    { timeout: 10_000 },
  );
  await page.keyboard.press(`${mod}+W`);
});

await step('"tracelens: Show trace graph" draws the traced computation; a click on a node reveals its line', async () => {
  await activateTab('model.py');
  await goTo('model.py', 7, 5);
  await runCommand('tracelens: Show trace graph');
  await page.locator('.tabs-container .tab', { hasText: 'Trace graph' }).first().waitFor({ state: 'visible', timeout: 20_000 });
  // The webview's page sits in an iframe inside the workbench's webview iframe.
  const frame = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  const svg = frame.locator('#graph svg').first();
  await svg.waitFor({ state: 'visible', timeout: 20_000 });
  const text = (await svg.textContent()) ?? '';
  for (const needle of ['jit(layer)', 'trace 2 of 2', 'retraced', 'dot_general', 'tanh', 'reduce_sum', 'f32[3,8]', 'f32[5,8]']) {
    expect(text.includes(needle), `trace graph has no "${needle}":\n${text.slice(0, 600)}`);
  }
  const nodes = await frame.locator('#graph svg g.node').count();
  expect(nodes >= 10, `trace graph has only ${nodes} nodes`);
  await page.mouse.move(5, 400);
  await shot('05-trace-graph.png');
  // An equation of `return h.sum()` in layer (line 9): its node links to `line:9`.
  await frame.locator('#graph svg g.node', { hasText: 'line 9' }).first().click();
  await page.waitForFunction(
    () => (document.querySelector('[id="status.editor.selection"]')?.textContent ?? '').includes('Ln 9,'),
    null,
    { timeout: 10_000 },
  ).catch(async () => {
    const at = await cursorPosition();
    throw new Error(`a click on a line-9 node left the cursor at ${at.line}:${at.column}`);
  });
  await waitForEditorFocus('model.py');
  await page.locator('.tabs-container .tab', { hasText: 'Trace graph' }).first().click();
  await page.keyboard.press(`${mod}+W`);
  await activateTab('model.py');
});

await step('"tracelens: Generate reproducer" on the error line writes repro/model_line15.py and opens it', async () => {
  await activateTab('model.py');
  await page.mouse.move(5, 400); // no tab tooltip in the screenshot
  await goTo('model.py', 15, 12);
  const file = path.join(workspace, 'repro', 'model_line15.py');
  expect(!fs.existsSync(file), `${file} exists before the command`);
  await runCommand('tracelens: Generate reproducer');
  await page.locator('.tabs-container .tab', { hasText: 'model_line15.py' }).first().waitFor({ state: 'visible', timeout: 20_000 });
  await page.waitForFunction(
    () => [...document.querySelectorAll('.editor-group-container.active .view-lines')].some((v) => v.textContent.replace(/\u00a0/g, ' ').includes('tracelens reproducer for TL104')),
    null,
    { timeout: 10_000 },
  );
  const text = fs.readFileSync(file, 'utf8');
  for (const needle of ['# tracelens reproducer for TL104 at model.py:15', 'dot_general requires contracting dimensions', 'import jax']) {
    expect(text.includes(needle), `${file} has no "${needle}":\n${text}`);
  }
  await shot('05-reproducer.png');
  await page.keyboard.press(`${mod}+W`);
});

await step('the reproducer is linked both ways: "Open reproducer" lens, document links, go to definition back', async () => {
  const file = path.join(workspace, 'repro', 'model_line15.py');
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  // On the source: the lens on `project` opens the reproducer at the line standing for it.
  await page.locator('.tabs-container .tab', { hasText: 'model.py' }).first().click();
  const lens = page.locator('.codelens-decoration a', { hasText: 'Open reproducer model_line15.py' }).first();
  await lens.waitFor({ state: 'visible', timeout: 15_000 });
  await lens.click();
  await page.locator('.tabs-container .tab.active', { hasText: 'model_line15.py' }).first().waitFor({ state: 'visible', timeout: 15_000 });
  await page.waitForFunction(() => /Ln \d+/.test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ''), null, { timeout: 5_000 });
  const at = (await cursorPosition()).line;
  expect(/^def project\(.*# model\.py:12$/.test(lines[at - 1] ?? ''), `the lens opened line ${at}: ${lines[at - 1]}`);
  // In the reproducer: its `# model.py:N` comments are links.
  await page.waitForFunction(() => document.querySelectorAll('.editor-group-container.active .detected-link').length > 0, null, { timeout: 10_000 });
  const links = await page.locator('.editor-group-container.active .detected-link').allInnerTexts();
  expect(links.some((l) => l.includes('model.py:15')), `links: ${JSON.stringify(links)}`);
  await shot('05c-reproducer-links.png');
  // Go to definition on the reproducer's line for the error: model.py, line 15.
  const errorLine = lines.findIndex((l) => !l.startsWith('#') && l.endsWith('# model.py:15')) + 1;
  expect(errorLine > 0, `no line for model.py:15 in\n${lines.join('\n')}`);
  await goTo('model_line15.py', errorLine, 5);
  await page.keyboard.press('F12');
  await page.locator('.tabs-container .tab.active', { hasText: /^model\.py/ }).first().waitFor({ state: 'visible', timeout: 15_000 });
  await page.waitForFunction(() => /Ln 15,/.test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ''), null, { timeout: 10_000 });
  const tabs = await page.locator('.tabs-container .tab', { hasText: 'model_line15.py' }).count();
  if (tabs > 0) {
    await activateTab('model_line15.py');
    await page.keyboard.press(`${mod}+W`);
  }
});

await step('"tracelens: Generate reproducer" on a line without an error says so and writes nothing', async () => {
  // The server's `tracelens.repro` answers why (in the words of `tracelens repro`).
  await activateTab('model.py');
  await page.mouse.move(5, 400);
  await goTo('model.py', 3, 1);
  await runCommand('tracelens: Generate reproducer');
  const toast = page.locator('.notifications-toasts .notification-toast.notification-fade-in-done', { hasText: 'model.py:3: ' });
  await toast.first().waitFor({ state: 'visible', timeout: 10_000 });
  const text = await toast.first().innerText();
  expect(/no error to reproduce/.test(text), `toast: ${text}`);
  expect(!fs.existsSync(path.join(workspace, 'repro', 'model_line3.py')), 'a file was written for line 3');
  await shot('05b-no-reproducer.png');
});

await step('"tracelens: Show output" shows the server log', async () => {
  await runCommand('tracelens: Show output');
  await page.waitForFunction(
    () => [...document.querySelectorAll('.view-lines')].some((v) => v.textContent.replace(/\u00a0/g, ' ').includes('server ready: tracelens')),
    null,
    { timeout: 10_000 },
  );
  await shot('06-output.png');
});

await step('"tracelens: Restart server" brings the server back', async () => {
  // The status bar's states are recorded since the page loaded (see the first step).
  const before = await page.evaluate(() => window.__tracelensStates.length);
  await runCommand('tracelens: Restart server');
  try {
    // The new server shows "starting", then scans the workspace (it does so only when it
    // starts). "starting" can last less than a frame and never reach the DOM the recorder
    // watches (it did once in CI: ready → 43 scan states → ready), so either is the proof.
    await page.waitForFunction(
      (from) => {
        const after = window.__tracelensStates.slice(from);
        const restarted = after.some((l) => l === 'tracelens: starting' || /^tracelens: tracing the workspace, \d+\/\d+ files traced/.test(l));
        return restarted && /^tracelens: ready, \d+ files traced/.test(after[after.length - 1] ?? '');
      },
      before,
      // A restart takes under a second here, its workspace scan (402 files) about 0.3 s.
      { timeout: 20_000 },
    );
  } catch (e) {
    // Say what the status bar went through, so that a failure here can be told apart.
    const seen = await page.evaluate((from) => window.__tracelensStates.slice(from), before);
    throw new Error(`${String(e?.message ?? e).split('\n')[0]}; status bar since the command: ${condense(seen) || '(no change)'}`);
  }
  const states = await page.evaluate((from) => window.__tracelensStates.slice(from), before);
  console.log(`     status bar during the restart: ${condense(states)}`);
  await page.waitForFunction(
    () => [...document.querySelectorAll('.view-lines')].some((v) => v.textContent.replace(/\u00a0/g, ' ').includes('restarting the server')),
    null,
    { timeout: 10_000 },
  );
  await page.locator('.squiggly-error').first().waitFor({ timeout: 20_000 });
  await shot('07-restarted.png');
});

/**
 * Types `value` into a text setting of the open Settings editor and waits until the settings
 * file says `written()`. The editor writes a text setting a second after the last keystroke;
 * should it re-render the row in between (it does when its target or search changes), the
 * input no longer shows the value and it is typed again.
 */
async function setInSettingsEditor(input, value, written) {
  const start = Date.now();
  for (let attempt = 1; ; attempt++) {
    if ((await input.inputValue()) === value) {
      await input.fill(`${value} `); // so that filling in the value is a change the editor sees
    }
    await input.fill(value);
    // Written, and shown once the editor has re-rendered the row from the new settings.
    const typed = Date.now();
    let shown = value;
    while (Date.now() - typed < 5_000) {
      shown = await input.inputValue();
      if (written() && shown === value) {
        return Date.now() - start;
      }
      await page.waitForTimeout(100);
    }
    if (attempt >= 3) {
      throw new Error(`the Settings editor did not write tracelens.path = "${value}": the input shows "${shown}", the file has ${fs.existsSync(machineSettings) ? fs.readFileSync(machineSettings, 'utf8').replace(/\s+/g, ' ') : 'not been written'}`);
    }
    console.log(`     the Settings editor shows "${shown}" ${written() ? 'but wrote the value' : 'and did not write the value'} after 5 s; typing it again`);
  }
}

await step('a tracelens.path that names nothing says what to do; clearing it brings the server back', async () => {
  // Through the Settings editor, as a person would. A machine setting: in code-server it lives
  // in the Remote (the server machine's) settings, so open those directly (switching the
  // editor's target re-renders the rows a moment later, and once cleared what had been typed).
  await runCommand('Preferences: Open Remote Settings', /Open Remote Settings \((?!JSON)/);
  await page.locator('.settings-editor').waitFor({ state: 'visible', timeout: 10_000 });
  // The search box takes the focus a moment after the editor shows.
  await page.waitForFunction(() => document.activeElement?.closest('.settings-editor .search-container') != null, null, { timeout: 10_000 });
  await page.keyboard.type('tracelens.path');
  await page.locator('.settings-editor .settings-count-widget', { hasText: '1 Setting Found' }).waitFor({ state: 'visible', timeout: 10_000 });
  const input = page.locator('.settings-editor .setting-item-contents', { hasText: 'Path to the' }).locator('input').first();
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  const hasBadPath = () => fs.existsSync(machineSettings) && fs.readFileSync(machineSettings, 'utf8').includes('/nonexistent/tracelens');
  await setInSettingsEditor(input, '/nonexistent/tracelens', hasBadPath);
  const toast = page.locator('.notifications-toasts .notification-toast.notification-fade-in-done', {
    hasText: 'does not name an executable file',
  });
  await toast.first().waitFor({ state: 'visible', timeout: 10_000 });
  expect(/^tracelens: no server/.test(await statusLabel()), `status bar: ${await statusLabel()}`);
  await page.waitForTimeout(500);
  const failures = await page.locator('.notifications-toasts .notification-toast', { hasText: 'failed' }).allInnerTexts();
  expect(failures.length === 0, `error toasts: ${failures.join(' | ')}`);
  await shot('08-no-server.png');
  const ms = await setInSettingsEditor(input, '', () => !hasBadPath());
  console.log(`     the cleared setting was written after ${ms} ms`);
  await page.waitForFunction(
    () => /^tracelens: ready/.test(document.querySelector('[id$="tracelens.status"]')?.getAttribute('aria-label') ?? ''),
    null,
    { timeout: 20_000 },
  );
});

await context.close();
fs.rmSync(browserProfile, { recursive: true, force: true });
if (pageErrors.length > 0) {
  fs.writeFileSync(path.join(artifacts, 'page-errors.txt'), pageErrors.join('\n'));
}
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed;
console.log(`VS Code e2e finished in ${elapsed()}; screenshots in ${artifacts}`);
console.log(`vscode-e2e: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
