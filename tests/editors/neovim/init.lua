-- Headless Neovim session against `tracelens lsp`, as a user would use it: open a file, read
-- the diagnostics, hover a value, apply the TL107 quick fix, quit. Results go to a JSON file
-- that test_neovim.py checks.
--
-- Runs on Debian's Neovim 0.7 (no vim.lsp.start there: start_client and buf_attach_client)
-- and on 0.10+ (vim.lsp.start, as a user's config would); every vim.deprecate call is
-- recorded, so that the test sees anything the newer Neovim warns about.
--
-- Environment: TRACELENS_BIN (the server binary), TRACELENS_FIXTURE (the file to open),
-- TRACELENS_OUT (the JSON file to write). Positions to hover are found in the buffer text.

local session = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/session.lua')
local result = session.start()
vim.cmd('filetype on')

local function step(name)
  table.insert(result.steps, name)
end

local wait_for = session.wait_for

local function diagnostics_now()
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do
    table.insert(list, {
      code = d.code,
      lnum = d.lnum,
      col = d.col,
      end_col = d.end_col,
      severity = d.severity,
      message = d.message,
      source = d.source,
    })
  end
  table.sort(list, function(a, b) return a.lnum < b.lnum end)
  return list
end

-- The first line (0-based) and byte column where `needle` occurs in the buffer.
local function find(needle)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
    local col = line:find(needle, 1, true)
    if col then
      return i - 1, col - 1
    end
  end
  error('not in the buffer: ' .. needle)
end

-- The LSP diagnostics of a line, as the server sent them: 0.10+ keeps each in user_data.lsp
-- (0.7 keeps only some fields there, and has get_line_diagnostics, deprecated later).
local function line_diagnostics(line)
  if vim.fn.has('nvim-0.10') == 1 then
    return vim.tbl_map(function(d) return d.user_data.lsp end, vim.diagnostic.get(0, { lnum = line }))
  end
  return vim.lsp.diagnostic.get_line_diagnostics(0, line)
end

local function only_result(responses, what)
  if not responses then
    error('no answer to ' .. what)
  end
  for _, r in pairs(responses) do
    if r.err then
      error(what .. ' failed: ' .. vim.inspect(r.err))
    end
    return r.result
  end
end

local function main()
  local fixture = os.getenv('TRACELENS_FIXTURE') or error('TRACELENS_FIXTURE not set')
  vim.cmd('edit ' .. vim.fn.fnameescape(fixture))
  local bufnr = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo.filetype

  local config = {
    name = 'tracelens',
    cmd = { os.getenv('TRACELENS_BIN') or error('TRACELENS_BIN not set'), 'lsp' },
    root_dir = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':p:h'),
    init_options = { debounceMs = 0, workspaceScan = false },
    flags = { debounce_text_changes = 0 },
    on_exit = function(code, signal)
      result.server_exit = { code = code, signal = signal }
    end,
  }
  local client_id
  if vim.fn.has('nvim-0.10') == 1 then
    client_id = vim.lsp.start(config, { bufnr = bufnr })
  else
    client_id = vim.lsp.start_client(config)
    if client_id then
      vim.lsp.buf_attach_client(bufnr, client_id)
    end
  end
  if not client_id then
    error('the tracelens client did not start')
  end
  local client = vim.lsp.get_client_by_id(client_id)
  wait_for(10000, 'initialize', function() return client.initialized end)
  result.offset_encoding = client.offset_encoding
  step('started')

  -- Diagnostics, as `:lua vim.diagnostic.get(0)` shows them.
  wait_for(20000, 'diagnostics', function() return #vim.diagnostic.get(0) > 0 end)
  result.diagnostics = diagnostics_now()
  step('diagnostics')

  -- Hover on `h` in `print("h", h)`.
  local line, col = find('print("h", h)')
  col = col + #'print("h", '
  local hover = only_result(vim.lsp.buf_request_sync(0, 'textDocument/hover', {
    textDocument = { uri = vim.uri_from_bufnr(0) },
    position = { line = line, character = col },
  }, 10000), 'hover')
  result.hover = hover and hover.contents and hover.contents.value or vim.NIL
  if hover then
    -- What a user sees in the floating window.
    result.hover_lines = vim.lsp.util.convert_input_to_markdown_lines(hover.contents)
  end
  step('hover')

  -- The TL107 quick fix at `x[0] += 1`.
  line, col = find('x[0] += 1')
  local actions = only_result(vim.lsp.buf_request_sync(0, 'textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(0) },
    range = { start = { line = line, character = col }, ['end'] = { line = line, character = col } },
    context = { diagnostics = line_diagnostics(line) },
  }, 10000), 'codeAction') or {}
  result.action_titles = {}
  local fix
  for _, a in ipairs(actions) do
    table.insert(result.action_titles, a.title)
    if not fix and a.title:find('^Use `') then
      fix = a
    end
  end
  if not fix then
    error('no TL107 quick fix among ' .. vim.inspect(result.action_titles))
  end
  local changedtick = vim.api.nvim_buf_get_changedtick(0)
  vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding)
  result.fixed_line = vim.api.nvim_buf_get_lines(0, line, line + 1, false)[1]
  step('fix applied')

  -- The server traces the edited buffer again: the TL107 error goes away.
  wait_for(20000, 'diagnostics after the fix', function()
    if vim.api.nvim_buf_get_changedtick(0) == changedtick then
      return false
    end
    for _, d in ipairs(vim.diagnostic.get(0)) do
      if d.code == 'TL107' then
        return false
      end
    end
    return true
  end)
  result.diagnostics_after_fix = diagnostics_now()
  step('diagnostics after fix')

  -- Quit cleanly: shutdown + exit, and the server's exit status.
  vim.lsp.stop_client(client_id)
  wait_for(5000, 'the server to exit', function() return result.server_exit ~= nil end)
  step('stopped')
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  -- Without it, no autocommand fires inside this one (no FileType on :edit).
  nested = true,
  callback = function()
    session.run(result, main)
  end,
})
