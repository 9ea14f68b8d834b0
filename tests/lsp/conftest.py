"""Black-box tests of `tracelens lsp`: the built binary over stdio, driven by pytest-lsp's
client as an editor drives it.

The binary is `$TRACELENS_BIN` (default `target/release/tracelens` in the repository).
Every test gets a fresh server whose workspace is the test's own tmp directory.
"""

from __future__ import annotations

import asyncio
import os
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

REPO = pathlib.Path(__file__).resolve().parents[2]
TRACELENS_BIN = os.environ.get("TRACELENS_BIN", str(REPO / "target" / "release" / "tracelens"))
if not os.path.isabs(TRACELENS_BIN):
    TRACELENS_BIN = str(REPO / TRACELENS_BIN)

# How long a test waits for one answer or one publication before failing (a hung server
# must fail the test, not CI's time limit).
TIMEOUT = 20.0

# The server's own scheduling (no `debounceMs`): what a user gets.
INIT_OPTIONS = {"workspaceScan": False}


def _record_diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams):
    # The default handler keeps only the latest diagnostics per uri and drops the version;
    # tests need "the diagnostics published for version N".
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append(params)


async def _configuration(client: LanguageClient, params: types.ConfigurationParams):
    # Like pytest-lsp's own handler, but a test can make the answer come late, as from a
    # busy editor.
    client.config_requested.set()
    if client.config_delay:
        await asyncio.sleep(client.config_delay)
    return [client.get_configuration(section=item.section, scope_uri=item.scope_uri) for item in params.items]


def _record_status(client: LanguageClient, params):
    client.statuses.append(params)


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _record_diagnostics
    features[types.WORKSPACE_CONFIGURATION] = _configuration
    register_lsp_features(client, features)
    client.feature("tracelens/status")(lambda params: _record_status(client, params))
    client.published = []
    client.statuses = []
    client.config_delay = 0.0
    client.config_requested = asyncio.Event()
    return client


def capabilities(encodings: list[str] | None, progress: bool = True) -> types.ClientCapabilities:
    """What an editor like VS Code declares, with the given position encodings offered, and
    without `window.workDoneProgress` unless `progress`."""
    caps = pytest_lsp.client_capabilities("visual-studio-code")
    if not progress and caps.window is not None:
        caps.window.work_done_progress = False
    if encodings is not None:
        caps.general = caps.general or types.GeneralClientCapabilities()
        caps.general.position_encodings = [types.PositionEncodingKind(e) for e in encodings]
    caps.text_document.inlay_hint = types.InlayHintClientCapabilities()
    return caps


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[TRACELENS_BIN, "lsp"], client_factory=make_client),
)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest, tmp_path: pathlib.Path):
    """A server initialised on a tmp workspace. Parametrise it indirectly with a dict:
    `encodings`, the position encodings the client offers (default: none, so UTF-16);
    `config_delay`, seconds the client takes to answer `workspace/configuration`;
    `progress`, whether it shows `$/progress`; `init_options`, settings on top of INIT_OPTIONS; `files`, {name: text} written into the
    workspace before the server starts."""
    options = getattr(request, "param", None) or {}
    root = tmp_path.resolve()
    for name, text in options.get("files", {}).items():
        (root / name).write_text(text, encoding="utf-8")
    lsp_client.root = root
    lsp_client.config_delay = options.get("config_delay", 0.0)
    params = types.InitializeParams(
        capabilities=capabilities(options.get("encodings"), progress=options.get("progress", True)),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
        initialization_options={**INIT_OPTIONS, **options.get("init_options", {})},
    )
    server = lsp_client._server
    try:
        lsp_client.init_result = await asyncio.wait_for(lsp_client.initialize_session(params), TIMEOUT)
        yield
        # A test may have stopped the server itself.
        if server.returncode is None:
            await asyncio.wait_for(lsp_client.shutdown_session(), TIMEOUT)
    finally:
        # Never leave a server behind (pytest-lsp's own teardown waits for it to exit).
        if server.returncode is None:
            server.kill()
            await server.wait()


# -- helpers ------------------------------------------------------------------------------


async def ask(awaitable):
    """The answer to a request, or a failure after TIMEOUT."""
    return await asyncio.wait_for(awaitable, TIMEOUT)


def open_file(client: LanguageClient, name: str, text: str, version: int = 1) -> str:
    """Writes `name` into the workspace and opens it in the editor; returns its uri."""
    path = client.root / name
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )
    return uri


async def diagnostics_for(client: LanguageClient, uri: str, version: int) -> list[types.Diagnostic]:
    """The diagnostics the server published for `uri` at `version` (waits for them)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while True:
        for p in client.published:
            if p.uri == uri and p.version == version:
                return list(p.diagnostics)
        if loop.time() > deadline:
            seen = [(p.uri, p.version) for p in client.published]
            pytest.fail(f"no diagnostics published for {uri} version {version}; got {seen}")
        await asyncio.sleep(0.02)


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def units(s: str, encoding: str) -> int:
    """The length of `s` in the code units of an LSP position encoding."""
    if encoding == "utf-8":
        return len(s.encode("utf-8"))
    if encoding == "utf-16":
        return len(s.encode("utf-16-le")) // 2
    return len(s)


def offset_of(text: str, position: types.Position, encoding: str = "utf-16") -> int:
    """The index into `text` (a str) of an LSP position."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    count = 0
    for i, ch in enumerate(line):
        if count >= position.character:
            return start + i
        count += units(ch, encoding)
    return start + len(line)


def apply_edits(text: str, edits: list[types.TextEdit], encoding: str = "utf-16") -> str:
    """`text` with LSP text edits applied, as an editor applies them."""
    spans = sorted(
        ((offset_of(text, e.range.start, encoding), offset_of(text, e.range.end, encoding), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text
