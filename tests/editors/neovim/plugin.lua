-- Headless Neovim with the plugin in editors/neovim, set up as its README says: open a file,
-- see diagnostics, the statusline and :TracelensStatus, :TracelensRepro on the error line, :TracelensTrace,
-- :TracelensGraph, :checkhealth tracelens.
-- Results go to a JSON file that test_neovim.py checks.
--
-- Environment: TRACELENS_BIN, TRACELENS_FIXTURE, TRACELENS_OUT, TRACELENS_PLUGIN (editors/neovim).

local session = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/session.lua')
local result = session.start()
local wait_for = session.wait_for

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

local function main()
  vim.opt.runtimepath:prepend(os.getenv('TRACELENS_PLUGIN') or error('TRACELENS_PLUGIN not set'))
  vim.cmd('filetype on')
  require('tracelens').setup({
    cmd = { os.getenv('TRACELENS_BIN') or error('TRACELENS_BIN not set'), 'lsp' },
    settings = { workspaceScan = false },
  })
  local fixture = os.getenv('TRACELENS_FIXTURE') or error('TRACELENS_FIXTURE not set')
  vim.cmd('edit ' .. vim.fn.fnameescape(fixture))
  local source = vim.api.nvim_get_current_buf()
  table.insert(result.steps, 'opened')

  local error_line
  wait_for(20000, 'an error diagnostic', function()
    for _, d in ipairs(vim.diagnostic.get(source)) do
      if d.severity == vim.diagnostic.severity.ERROR then
        error_line = d.lnum
        result.error_code = d.code
        return true
      end
    end
    return false
  end)
  table.insert(result.steps, 'diagnostics')

  -- The statusline function and :TracelensStatus: what the server traced and found.
  wait_for(10000, 'a statusline', function()
    return require('tracelens').statusline() ~= ''
  end)
  result.statusline = require('tracelens').statusline()
  local notify = vim.notify
  vim.notify = function(message)
    result.status_message = message
  end
  vim.cmd('TracelensStatus')
  wait_for(10000, ':TracelensStatus to answer', function()
    return result.status_message ~= nil
  end)
  vim.notify = notify
  table.insert(result.steps, 'status')

  vim.api.nvim_win_set_cursor(0, { error_line + 1, 4 })
  vim.cmd('TracelensRepro')
  wait_for(10000, 'the reproducer to open', function()
    return vim.api.nvim_get_current_buf() ~= source
  end)
  result.repro_path = vim.api.nvim_buf_get_name(0)
  result.repro_text = buffer_text(0)
  table.insert(result.steps, 'repro')

  -- Go to definition on the reproducer line that stands for the error line: the source.
  local repro = vim.api.nvim_get_current_buf()
  wait_for(10000, 'the client on the reproducer', function()
    return require('tracelens').client(repro) ~= nil
  end)
  local link_line
  for i, l in ipairs(vim.api.nvim_buf_get_lines(repro, 0, -1, false)) do
    if l:sub(1, 1) ~= '#' and l:match('# fixture%.py:' .. (error_line + 1) .. '$') then
      link_line = i - 1
      break
    end
  end
  if link_line == nil then
    error('no reproducer line ends with # fixture.py:' .. (error_line + 1))
  end
  local answers = vim.lsp.buf_request_sync(repro, 'textDocument/definition', {
    textDocument = { uri = vim.uri_from_bufnr(repro) },
    position = { line = link_line, character = 0 },
  }, 10000) or {}
  for _, a in pairs(answers) do
    if a.result then
      local loc = a.result[1] or a.result
      result.definition = { path = vim.uri_to_fname(loc.uri), line = loc.range.start.line }
    end
  end
  table.insert(result.steps, 'definition')

  -- And back: :TracelensOpenReproducer on the error line opens the reproducer at its line.
  vim.cmd('buffer ' .. source)
  vim.api.nvim_win_set_cursor(0, { error_line + 1, 4 })
  vim.cmd('TracelensOpenReproducer')
  wait_for(10000, 'the reproducer to open at the line', function()
    return vim.api.nvim_get_current_buf() == repro
  end)
  result.opened_line = vim.api.nvim_get_current_line()
  table.insert(result.steps, 'open reproducer')

  vim.cmd('buffer ' .. source)
  vim.api.nvim_win_set_cursor(0, { 6, 0 }) -- `def step(w, x):`
  vim.cmd('TracelensTrace')
  wait_for(10000, 'the trace to open', function()
    return vim.api.nvim_get_current_buf() ~= source
  end)
  result.trace_text = buffer_text(0)
  vim.cmd('close')
  table.insert(result.steps, 'trace')

  -- :TracelensGraph writes the traced computation as SVG (not opened in a headless test).
  vim.cmd('buffer ' .. source)
  local notify_graph = vim.notify
  vim.notify = function(message)
    result.graph_message = message
  end
  require('tracelens').graph({ open = false })
  wait_for(20000, ':TracelensGraph to write its file', function()
    return vim.g.tracelens_graph ~= nil
  end)
  vim.notify = notify_graph
  result.graph_path = vim.g.tracelens_graph
  result.graph_text = table.concat(vim.fn.readfile(vim.g.tracelens_graph), '\n')
  table.insert(result.steps, 'graph')

  vim.cmd('checkhealth tracelens')
  result.health_text = buffer_text(0)
  table.insert(result.steps, 'health')

  vim.cmd('buffer ' .. source)
  local before = require('tracelens').client(source).id
  vim.cmd('TracelensRestart')
  wait_for(10000, 'a new client after the restart', function()
    local c = require('tracelens').client(source)
    return c ~= nil and c.id ~= before and c.initialized
  end)
  vim.diagnostic.reset(nil, source)
  vim.api.nvim_buf_set_lines(source, 0, 0, false, { '# edited after the restart' })
  wait_for(20000, 'diagnostics from the restarted server', function()
    for _, d in ipairs(vim.diagnostic.get(source)) do
      if d.code == 'TL107' and d.lnum == error_line + 1 then
        return true
      end
    end
    return false
  end)
  result.restarted = true
  table.insert(result.steps, 'restart')
end

session.run(result, main)
