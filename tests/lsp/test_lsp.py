"""What a user of `tracelens lsp` sees in an editor, checked over stdio against the built
binary (see conftest.py for the client and the helpers)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import (
    TIMEOUT,
    apply_edits,
    ask,
    diagnostics_for,
    doc,
    open_file,
    pos,
    units,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

# A jitted step called with two shapes: traced twice, a retrace, and a print at trace time.
STEP = """\
import jax
import jax.numpy as jnp


@jax.jit
def step(w, x):
    h = jnp.tanh(x @ w)
    print('h', h)
    loss = (h ** 2).mean()
    return loss


for n in (3, 3, 5):
    step(jnp.ones((4, 8)), jnp.ones((n, 4)))
"""

# A shape error inside a jitted function: tracing fails there.
SHAPES = """\
import jax
import jax.numpy as jnp


@jax.jit
def predict(w, x):
    h = x @ w
    return h


predict(jnp.ones((4, 8)), jnp.ones((3, 5)))
"""

# An in-place update of a traced array (TL107).
UPDATE = """\
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    x[0] += 1
    return x * 2


f(jnp.zeros(3))
"""


def codes_and_lines(diags: list[types.Diagnostic]) -> list[tuple[str, int]]:
    return sorted((str(d.code), d.range.start.line) for d in diags)


async def test_diagnostics_have_code_range_severity_and_message(client: LanguageClient):
    step = open_file(client, "step.py", STEP)
    shapes = open_file(client, "shapes.py", SHAPES)

    diags = await diagnostics_for(client, step, 1)
    assert codes_and_lines(diags) == [("TL201", 7), ("TL210", 13)]
    printed = next(d for d in diags if d.code == "TL201")
    assert printed.severity == types.DiagnosticSeverity.Warning
    assert printed.source == "tracelens"
    # The whole `print('h', h)` call.
    assert (printed.range.start, printed.range.end) == (pos(7, 4), pos(7, 17))
    retrace = next(d for d in diags if d.code == "TL210")
    assert retrace.severity == types.DiagnosticSeverity.Warning
    assert "argument x changed shape: f32[3,4] -> f32[5,4]" in retrace.message

    diags = await diagnostics_for(client, shapes, 1)
    assert codes_and_lines(diags) == [("TL104", 6)]
    [mismatch] = diags
    assert mismatch.severity == types.DiagnosticSeverity.Error
    # `x @ w`, with the message real JAX gives.
    assert (mismatch.range.start, mismatch.range.end) == (pos(6, 8), pos(6, 13))
    assert mismatch.message.startswith(
        "TypeError: dot_general requires contracting dimensions to have the same shape, got (5,) and (4,)."
    ), mismatch.message


async def test_hover_shows_the_aval_of_a_value_in_each_trace(client: LanguageClient):
    uri = open_file(client, "step.py", STEP)
    await diagnostics_for(client, uri, 1)

    # `h` in `print('h', h)`.
    hover = await ask(client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=pos(7, 15))))
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    text = hover.contents.value
    assert "h: f32[3,8] | f32[5,8]" in text, text
    # One line per trace: its aval, the transformation, the call and the route that traced it.
    assert "traced 2×:\n- f32[3,8] in jit(step), traced from step.py:14 (called)\n- f32[5,8] in jit(step), traced from step.py:14 (called)" in text, text
    assert hover.range == types.Range(start=pos(7, 15), end=pos(7, 16))

    # The jitted function's name: its traces and why it was traced again.
    hover = await ask(client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=pos(5, 5))))
    text = hover.contents.value
    assert "jit(step)** traced 2×" in text, text
    assert "retraced because argument x changed shape" in text, text

    # Nothing to say on a blank line.
    hover = await ask(client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=pos(2, 0))))
    assert hover is None


async def test_inlay_hints_and_code_lenses(client: LanguageClient):
    uri = open_file(client, "step.py", STEP)
    await diagnostics_for(client, uri, 1)

    hints = await ask(
        client.text_document_inlay_hint_async(
            types.InlayHintParams(text_document=doc(uri), range=types.Range(start=pos(0, 0), end=pos(20, 0)))
        )
    )
    # The parameters in the def line (per trace) and the assignment; scalars have none.
    assert [(h.position, h.label) for h in hints] == [
        (pos(5, 10), ": f32[4,8]"),
        (pos(5, 13), ": f32[3,4] | f32[5,4]"),
        (pos(6, 5), ": f32[3,8] | f32[5,8]"),
    ]
    assert hints[0].kind == types.InlayHintKind.Type

    lenses = await ask(client.text_document_code_lens_async(types.CodeLensParams(text_document=doc(uri))))
    assert [(lens.range.start.line, lens.command.title) for lens in lenses] == [
        (4, "jit: traced 2× · 1 retrace"),
        (4, "Generate reproducer"),
    ]
    # "Generate reproducer" runs the server's tracelens.repro on the function's line.
    assert lenses[1].command.command == "tracelens.repro"
    assert list(lenses[1].command.arguments[:2]) == [uri, 4]


async def test_tl107_quick_fix_rewrites_the_update_and_the_error_goes_away(client: LanguageClient):
    uri = open_file(client, "update.py", UPDATE)
    diags = await diagnostics_for(client, uri, 1)
    assert codes_and_lines(diags) == [("TL107", 6)]
    [error] = diags

    actions = await ask(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=doc(uri),
                range=types.Range(start=pos(6, 4), end=pos(6, 4)),
                context=types.CodeActionContext(diagnostics=[error]),
            )
        )
    )
    titles = [a.title for a in actions]
    assert titles == ["Use `x = x.at[0].add(1)`", "Ignore TL107 on this line", "Write a pure-JAX reproducer of TL107"], titles
    fix = actions[0]
    assert fix.kind == types.CodeActionKind.QuickFix
    assert fix.is_preferred
    assert [str(d.code) for d in fix.diagnostics] == ["TL107"]
    edits = fix.edit.changes[uri]
    assert [(e.range.start, e.range.end, e.new_text) for e in edits] == [(pos(6, 4), pos(6, 13), "x = x.at[0].add(1)")]

    # Apply it as the editor would, and send the change.
    fixed = apply_edits(UPDATE, edits)
    assert fixed.splitlines()[6] == "    x = x.at[0].add(1)"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=e.range, text=e.new_text) for e in edits],
        )
    )
    assert await diagnostics_for(client, uri, 2) == []
    hover = await ask(client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=pos(6, 4))))
    assert "x: f32[3]" in hover.contents.value, hover.contents.value


async def test_go_to_definition_from_a_call_to_the_jitted_function(client: LanguageClient):
    uri = open_file(client, "step.py", STEP)
    await diagnostics_for(client, uri, 1)
    # On `step` in `step(jnp.ones((4, 8)), ...)`.
    result = await ask(
        client.text_document_definition_async(types.DefinitionParams(text_document=doc(uri), position=pos(13, 6)))
    )
    locations = result if isinstance(result, list) else [result]
    assert len(locations) == 1, result
    [target] = locations
    assert target.uri == uri
    # The decorated definition: from `@jax.jit` through `def step(w, x):`.
    assert target.range.start == pos(4, 0), target.range
    assert target.range.end.line >= 5, target.range


# Non-ASCII text before a diagnostic on its line: π is 2 UTF-8 bytes and 1 UTF-16 unit,
# 😀 is 4 UTF-8 bytes and 2 UTF-16 units.
UNICODE = """\
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    t = "π😀"; x[0] += 1
    return x


f(jnp.zeros(3))
"""


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ({"encodings": ["utf-8", "utf-16"]}, "utf-8"),  # offered: the server takes it
        ({"encodings": ["utf-32", "utf-16"]}, "utf-16"),  # not offered: the LSP default
    ],
    indirect=["client"],
    ids=["utf-8", "utf-16"],
)
async def test_position_encoding_is_negotiated_and_used_for_columns(client: LanguageClient, expected: str):
    assert client.init_result.capabilities.position_encoding == expected

    uri = open_file(client, "uni.py", UNICODE)
    [error] = await diagnostics_for(client, uri, 1)
    assert error.code == "TL107"
    line = UNICODE.splitlines()[6]
    before = line[: line.index("x[0]")]
    start = units(before, expected)
    assert (error.range.start, error.range.end) == (pos(6, start), pos(6, start + len("x[0]")))
    assert start == {"utf-8": 18, "utf-16": 15}[expected]

    # A position sent in the same encoding lands on `x` after the emoji.
    hover = await ask(client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=pos(6, start))))
    assert hover is not None and "x: f32[3]" in hover.contents.value, hover
    assert hover.range.start == pos(6, start)


async def test_shutdown_then_exit_ends_the_server_with_status_0(client: LanguageClient):
    uri = open_file(client, "step.py", STEP)
    await diagnostics_for(client, uri, 1)
    server = client._server
    assert server is not None and server.returncode is None

    assert await ask(client.shutdown_async(None)) is None
    client.exit(None)
    status = await asyncio.wait_for(server.wait(), TIMEOUT)
    assert status == 0


@pytest.mark.parametrize("client", [{"config_delay": 1.0}], indirect=True, ids=["slow-configuration-answer"])
async def test_closing_the_editor_right_after_startup_ends_the_server(client: LanguageClient):
    # The editor quits as soon as the server has asked for its configuration, which it
    # answers a second later: the server must not wait for that answer to exit.
    server = client._server
    await ask(client.config_requested.wait())
    assert await ask(client.shutdown_async(None)) is None
    # pygls would fail our still-running configuration handler when the server exits (it is
    # kept with the client's pending requests, and a task cannot be given an exception).
    for id_, fut in list(client.protocol._request_futures.items()):
        if isinstance(fut, asyncio.Task):
            del client.protocol._request_futures[id_]
    client.exit(None)
    try:
        status = await asyncio.wait_for(server.wait(), 5)
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
    assert status == 0


# -- scheduling, progress and status ----------------------------------------------------------

# A traced function without findings, and one with a shape error (one error), for the scan.
CLEAN = """\
import jax
import jax.numpy as jnp


@jax.jit
def scale(x):
    return x * 2.0


scale(jnp.ones(3))
"""


async def wait_for(condition, what: str):
    """Waits until `condition()` holds, failing after TIMEOUT."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not condition():
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@pytest.mark.parametrize(
    "client",
    [{"init_options": {"workspaceScan": True}, "files": {"clean.py": CLEAN, "shapes.py": SHAPES}}],
    indirect=True,
    ids=["scanned-workspace"],
)
async def test_the_workspace_scan_reports_progress_and_the_status_counts(client: LanguageClient):
    token = "tracelens/scan"
    await wait_for(lambda: any(r.kind == "end" for r in client.progress_reports.get(token, [])), "the scan's progress to end")
    reports = client.progress_reports[token]
    assert reports[0].kind == "begin" and "tracelens" in reports[0].title
    assert [r.message for r in reports if r.kind == "report"] == [
        "1/2 files traced, 1 functions, 0 findings",
        "2/2 files traced, 2 functions, 1 findings",
    ]
    assert reports[-1].message == "2 files traced, 2 functions, 1 findings"
    # The status a status bar shows, as a notification and on request.
    await wait_for(lambda: any(not s.scanning for s in client.statuses), "a status after the scan")
    last = [s for s in client.statuses if not s.scanning][-1]
    assert (last.files, last.functions, last.errors, last.warnings) == (2, 2, 1, 0)
    asked = await ask(client.protocol.send_request_async("tracelens/status", None))
    assert (asked.files, asked.functions, asked.traces, asked.errors, asked.notAnalysed) == (2, 2, 2, 1, 0)


@pytest.mark.parametrize(
    "client",
    [{"init_options": {"workspaceScan": True}, "progress": False, "files": {"clean.py": CLEAN}}],
    indirect=True,
    ids=["no-progress-support"],
)
async def test_no_progress_is_sent_to_a_client_that_does_not_show_it(client: LanguageClient):
    # The scan still runs and ends (its status says so), without `$/progress`.
    await wait_for(lambda: any(not s.scanning and s.functions == 1 for s in client.statuses), "the scan's last status")
    assert client.progress_reports == {}
    # The status follows the open document's analysis too.
    uri = open_file(client, "shapes.py", SHAPES)
    await diagnostics_for(client, uri, 1)
    await wait_for(lambda: any(s.errors == 1 for s in client.statuses), "a status counting the error")


# An unknown exception raised at module level ends the module's analysis: what follows is not
# checked (here, a shape error tracelens would otherwise report).
UNKNOWN_END = """\
import jax.numpy as jnp
import somelib_not_installed as lib

raise lib.Failure()
y = jnp.ones((3, 4)) @ jnp.ones((3, 4))
"""

# A loop that never ends: the time budget stops the analysis there (TL900).
BUDGET_END = """\
import jax.numpy as jnp

total = 0
while True:
    total += 1
y = jnp.ones(3)
"""


async def test_where_an_analysis_ended_early_is_a_faint_hint_at_the_line(client: LanguageClient):
    uri = open_file(client, "unknown_end.py", UNKNOWN_END)
    await wait_for(lambda: any(p.uri == uri and p.diagnostics for p in client.published), "the hint")
    hints = [d for p in client.published if p.uri == uri for d in p.diagnostics]
    assert [(str(d.code), d.range.start.line, d.severity) for d in hints] == [("TL900", 3, types.DiagnosticSeverity.Hint)]
    assert hints[0].message == "not analysed past this point in the module: raise of an unknown exception"

    uri = open_file(client, "budget_end.py", BUDGET_END)
    diags = await diagnostics_for(client, uri, 1)
    assert [(str(d.code), d.severity) for d in diags] == [("TL900", types.DiagnosticSeverity.Hint)]
    assert diags[0].range.start.line in (3, 4) and "budget" in diags[0].message


def change(client: LanguageClient, uri: str, version: int, line: int, start: int, end: int, text: str):
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=pos(line, start), end=pos(line, end)),
                    text=text,
                )
            ],
        )
    )


async def test_a_newer_edit_supersedes_an_older_analysis(client: LanguageClient):
    # `jnp.ones((3, 5))` on line 10: typing 5 -> 4 -> 5 ... ; odd versions have the error.
    uri = open_file(client, "shapes.py", SHAPES)
    assert codes_and_lines(await diagnostics_for(client, uri, 1)) == [("TL104", 6)]
    column = SHAPES.splitlines()[10].index("(3, 5)") + 4
    for version in range(2, 22):
        change(client, uri, version, 10, column, column + 1, "4" if version % 2 == 0 else "5")
    # The last version's diagnostics arrive, and nothing older is published after them.
    last = await diagnostics_for(client, uri, 21)
    assert codes_and_lines(last) == [("TL104", 6)]
    await asyncio.sleep(0.5)
    versions = [p.version for p in client.published if p.uri == uri]
    assert versions == sorted(versions), versions
    assert versions[-1] == 21
    # Every version published has the diagnostics of its own text.
    for p in client.published:
        if p.uri == uri:
            assert codes_and_lines(p.diagnostics) == ([("TL104", 6)] if p.version % 2 == 1 else []), p.version


CONFIG = "WIDTH = 32\n"

TRAIN = """\
import jax.numpy as jnp

import config

x = jnp.ones((8, 32))
w = jnp.ones((config.WIDTH, 4))
y = x @ w
"""


async def test_an_edit_in_a_module_reanalyses_the_open_files_that_import_it(client: LanguageClient):
    config = open_file(client, "config.py", CONFIG)
    train = open_file(client, "train.py", TRAIN)
    await diagnostics_for(client, config, 1)
    assert await diagnostics_for(client, train, 1) == []
    before = len(client.published)
    change(client, config, 2, 0, 8, 10, "33")

    def train_errors():
        return [codes_and_lines(p.diagnostics) for p in client.published[before:] if p.uri == train]

    await wait_for(lambda: [("TL104", 6)] in train_errors(), "train.py's shape error after config.py changed")
    # Back to 32: the error goes away, without touching train.py.
    before = len(client.published)
    change(client, config, 3, 0, 8, 10, "32")
    await wait_for(lambda: [] in train_errors(), "train.py's diagnostics cleared")
