"""A real editor end to end: headless Neovim (0.7, Debian's) opens fixture.py with
`tracelens lsp` attached, reads diagnostics, hovers a value, applies the TL107 quick fix
(init.lua does the editor side and writes what it saw to JSON; this checks it).

Needs `nvim` on PATH (tests/run_editor_tests.sh installs it); skipped without it, except
under CI=true, where a missing nvim fails.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
TRACELENS_BIN = os.environ.get("TRACELENS_BIN", str(REPO / "target" / "release" / "tracelens"))
if not os.path.isabs(TRACELENS_BIN):
    TRACELENS_BIN = str(REPO / TRACELENS_BIN)


def run_session(work: pathlib.Path, script: str, **extra_env: str) -> dict:
    """Runs `script` (beside this file) in headless Neovim on a copy of fixture.py in `work`;
    returns the JSON it wrote, after checking that it got to the end."""
    nvim = shutil.which("nvim")
    if nvim is None:
        if os.environ.get("CI") == "true":
            pytest.fail("nvim is not installed (tests/run_editor_tests.sh installs it with apt-get)")
        pytest.skip("nvim is not installed")
    assert os.access(TRACELENS_BIN, os.X_OK), f"no tracelens binary at {TRACELENS_BIN}"

    fixture = work / "fixture.py"
    shutil.copy(HERE / "fixture.py", fixture)
    out = work / "result.json"
    env = dict(
        os.environ,
        TRACELENS_BIN=TRACELENS_BIN,
        TRACELENS_FIXTURE=str(fixture),
        TRACELENS_OUT=str(out),
        # A private Neovim state/log directory, not the user's.
        XDG_STATE_HOME=str(work / "state"),
        XDG_CACHE_HOME=str(work / "cache"),
        XDG_DATA_HOME=str(work / "data"),
        XDG_CONFIG_HOME=str(work / "config"),
        **extra_env,
    )
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-u", str(HERE / script)],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), f"Neovim wrote no result (exit {proc.returncode})\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(out.read_text())
    assert result.get("ok"), f"the Neovim session ({script}) failed after steps {result.get('steps')}: {result.get('error')}"
    return result


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_session(tmp_path_factory.mktemp("nvim"), "init.lua")


def test_diagnostics_appear_on_the_right_lines(session: dict):
    assert session["filetype"] == "python"
    assert session["offset_encoding"] == "utf-16"  # Neovim 0.7 offers no other encoding
    diags = session["diagnostics"]
    # vim.diagnostic: 0-based lines, byte columns; severity 1 = ERROR, 2 = WARN.
    assert [(d["code"], d["lnum"], d["col"], d["end_col"], d["severity"]) for d in diags] == [
        ("TL201", 7, 4, 17, 2),
        ("TL107", 13, 4, 8, 1),
    ], diags
    assert all(d["source"] == "tracelens" for d in diags)
    assert diags[1]["message"].startswith("TypeError: JAX arrays are immutable")


def test_hover_shows_the_aval(session: dict):
    assert "h: f32[3,8]" in session["hover"], session["hover"]
    assert "h: f32[3,8]" in session["hover_lines"], session["hover_lines"]
    assert any("in jit(step)" in line for line in session["hover_lines"]), session["hover_lines"]


def test_tl107_quick_fix_edits_the_buffer_and_clears_the_error(session: dict):
    assert session["action_titles"] == ["Use `x = x.at[0].add(1)`", "Ignore TL107 on this line", "Write a pure-JAX reproducer of TL107"]
    assert session["fixed_line"] == "    x = x.at[0].add(1)"
    assert [(d["code"], d["lnum"]) for d in session["diagnostics_after_fix"]] == [("TL201", 7)]


def test_the_server_exits_cleanly_when_neovim_stops_it(session: dict):
    assert session["server_exit"] == {"code": 0, "signal": 0}


@pytest.fixture(scope="module")
def plugin_session(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The plugin (editors/neovim) set up with require("tracelens").setup({...})."""
    work = tmp_path_factory.mktemp("nvim-plugin")
    (work / ".git").mkdir()  # the workspace root the plugin finds
    result = run_session(work, "plugin.lua", TRACELENS_PLUGIN=str(REPO / "editors" / "neovim"))
    result["work"] = str(work)
    return result


def test_plugin_repro_writes_and_opens_the_reproducer(plugin_session: dict):
    assert plugin_session["error_code"] == "TL107"
    assert plugin_session["repro_path"] == os.path.join(plugin_session["work"], "repro", "fixture_line14.py")
    assert "import jax" in plugin_session["repro_text"]
    assert "fixture.py:14" in plugin_session["repro_text"]


def test_plugin_trace_shows_the_jaxpr(plugin_session: dict):
    assert "{ lambda" in plugin_session["trace_text"], plugin_session["trace_text"]


def test_plugin_checkhealth_finds_the_server(plugin_session: dict):
    text = plugin_session["health_text"]
    assert "setup() called" in text and "tracelens 0.1.0" in text, text


def test_plugin_restart_brings_a_new_server_that_traces_edits(plugin_session: dict):
    assert plugin_session["restarted"] is True
