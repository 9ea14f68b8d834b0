-- tracelens for Neovim: starts `tracelens lsp` on Python buffers through the built-in client
-- (vim.lsp.start where it exists, 0.8+ and so 0.10/0.11; start_client + buf_attach_client on
-- Debian's 0.7) and adds the commands
-- :TracelensRepro, :TracelensTrace, :TracelensGraph, :TracelensStatus and :TracelensRestart, and
-- `require('tracelens').statusline()` for a statusline. `:checkhealth tracelens` says whether
-- the server can be found.

local M = {}

local defaults = {
  -- The server command.
  cmd = { 'tracelens', 'lsp' },
  -- Server settings (README: debounceMs, workspaceScan, inlayHints, severity, ignore,
  -- largeConstantBytes, reproducerFolder, values), sent as initializationOptions and as the
  -- `tracelens` section of workspace/configuration.
  settings = {},
  -- The workspace root is the nearest folder above the file that holds one of these.
  root_markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', '.git' },
  filetypes = { 'python' },
}

M.config = nil
-- Neovim 0.7: one client per root, reused for every buffer under it.
local clients_by_root = {}

local function root_of(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = vim.fn.fnamemodify(name, ':p:h')
  for _, marker in ipairs(M.config.root_markers) do
    local found = vim.fn.finddir(marker, dir .. ';')
    if found == '' then
      found = vim.fn.findfile(marker, dir .. ';')
    end
    if found ~= '' then
      return (vim.fn.fnamemodify(found, ':p:h'):gsub('/%.git$', ''))
    end
  end
  return dir
end

-- The last `tracelens/status` of each client: what the server traced and found.
local statuses = {}

local function client_config(root)
  return {
    name = 'tracelens',
    cmd = M.config.cmd,
    root_dir = root,
    init_options = M.config.settings,
    settings = { tracelens = M.config.settings },
    handlers = {
      ['tracelens/status'] = function(_, result, ctx)
        statuses[ctx.client_id] = result
        vim.cmd('redrawstatus')
      end,
    },
  }
end

-- `12 traced, 3 findings` (and `, scanning` while the workspace scan runs).
local function counts_text(s)
  local findings = (s.errors or 0) + (s.warnings or 0) + (s.infos or 0)
  local text = string.format('%d traced, %d finding%s', s.functions or 0, findings, findings == 1 and '' or 's')
  if s.scanning then
    text = text .. ', scanning'
  end
  return text
end

--- Starts (or reuses) the server for `bufnr` and attaches it.
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.api.nvim_buf_get_name(bufnr) == '' then
    return
  end
  local root = root_of(bufnr)
  if vim.lsp.start then
    vim.lsp.start(client_config(root), { bufnr = bufnr })
    return
  end
  local id = clients_by_root[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(client_config(root))
    if id == nil then
      vim.notify('tracelens: could not start ' .. table.concat(M.config.cmd, ' '), vim.log.levels.ERROR)
      return
    end
    clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

-- Attaches every loaded buffer of the configured filetypes.
local function attach_all()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.config.filetypes, vim.bo[buf].filetype) then
      M.attach(buf)
    end
  end
end

--- The tracelens client attached to `bufnr`, if any.
function M.client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = 'tracelens' })[1]
  end
  for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if c.name == 'tracelens' then
      return c
    end
  end
  return nil
end

-- client:request on 0.11+ (the dot form warns there); before 0.10 a client's methods are plain
-- functions, called with a dot.
local function request(client, method, params, handler, bufnr)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

-- The current buffer and its tracelens client; the client is nil (and the user told) when
-- none is attached.
local function attached()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if client == nil then
    vim.notify('tracelens: no tracelens server is attached to this buffer', vim.log.levels.WARN)
  end
  return bufnr, client
end

-- Runs the server command `command` on the cursor's line; `done(result)` gets its answer.
local function on_cursor_line(command, extra, done)
  local bufnr, client = attached()
  if client == nil then
    return
  end
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  local arguments = { vim.uri_from_bufnr(bufnr), line }
  if extra ~= nil then
    table.insert(arguments, extra)
  end
  request(client, 'workspace/executeCommand', { command = command, arguments = arguments }, function(err, result)
    if err then
      vim.notify('tracelens: ' .. command .. ' failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    done(result, line)
  end, bufnr)
end

--- :TracelensRepro — writes the reproducer of the error on the cursor's line and opens it.
function M.repro()
  on_cursor_line('tracelens.repro', { show = false }, function(result, line)
    if type(result) == 'table' and result.path then
      vim.cmd('edit ' .. vim.fn.fnameescape(result.path))
    elseif type(result) == 'table' and result.message then
      vim.notify('tracelens: ' .. result.message, vim.log.levels.INFO)
    else
      vim.notify('tracelens: nothing to reproduce at line ' .. (line + 1), vim.log.levels.INFO)
    end
  end)
end

--- :TracelensOpenReproducer — opens the reproducer at the line that stands for the cursor's line
--- (the way back from a reproducer is go to definition, or its `# file.py:LINE` comments).
function M.open_reproducer()
  on_cursor_line('tracelens.openReproducer', { show = false }, function(result)
    if type(result) == 'table' and result.path then
      vim.cmd('edit ' .. vim.fn.fnameescape(result.path))
      vim.api.nvim_win_set_cursor(0, { result.line + 1, 0 })
    elseif type(result) == 'table' and result.message then
      vim.notify('tracelens: ' .. result.message, vim.log.levels.INFO)
    end
  end)
end

--- :TracelensTrace — the traces and jaxpr of the function under the cursor, in a scratch split.
function M.trace()
  on_cursor_line('tracelens.trace', nil, function(result, line)
    if type(result) ~= 'string' then
      vim.notify('tracelens: no traced function at line ' .. (line + 1), vim.log.levels.INFO)
      return
    end
    vim.cmd('new')
    local buf = vim.api.nvim_get_current_buf()
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].swapfile = false
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(result, '\n', { plain = true }))
    vim.bo[buf].modifiable = false
    vim.bo[buf].filetype = 'python'
    pcall(vim.api.nvim_buf_set_name, buf, 'tracelens://trace/line' .. (line + 1))
  end)
end

--- :TracelensGraph — the traced computation of the buffer as a dataflow graph: an SVG file
--- (Graphviz's DOT when the server has no Graphviz), opened with the system's viewer
--- (`vim.ui.open` on 0.10+, else `xdg-open`) unless `{ open = false }`. Returns nothing; the
--- file's path is in the message and in `vim.g.tracelens_graph`.
function M.graph(opts)
  opts = opts or {}
  on_cursor_line('tracelens.graph', vim.empty_dict(), function(result)
    if type(result) ~= 'table' or (result.svg == nil and result.dot == nil) then
      vim.notify('tracelens: no trace graph: ' .. ((type(result) == 'table' and result.message) or 'the file traced nothing'),
        vim.log.levels.INFO)
      return
    end
    local ext, body = 'svg', result.svg
    if body == nil or body == vim.NIL then
      ext, body = 'dot', result.dot
    end
    local file = vim.fn.tempname() .. '.' .. ext
    vim.fn.writefile(vim.split(body, '\n', { plain = true }), file)
    vim.g.tracelens_graph = file
    local note = (result.error and result.error ~= vim.NIL) and (' (' .. result.error .. ')') or ''
    vim.notify('tracelens: trace graph written to ' .. file .. note, vim.log.levels.INFO)
    if opts.open ~= false and ext == 'svg' then
      if vim.ui and vim.ui.open then
        pcall(vim.ui.open, file)
      elseif vim.fn.executable('xdg-open') == 1 then
        vim.fn.jobstart({ 'xdg-open', file }, { detach = true })
      end
    end
  end)
end

--- For a statusline: `tracelens: 12 traced, 3 findings` for the current buffer's server, or ''
--- (e.g. `set statusline+=%{v:lua.require'tracelens'.statusline()}`).
function M.statusline()
  local client = M.client()
  local s = client and statuses[client.id]
  if s == nil then
    return ''
  end
  return 'tracelens: ' .. counts_text(s)
end

--- :TracelensStatus — what the server traced and found, in full, asked of the server.
function M.status()
  local bufnr, client = attached()
  if client == nil then
    return
  end
  request(client, 'tracelens/status', vim.NIL, function(err, s)
    if err or type(s) ~= 'table' then
      vim.notify('tracelens: no status: ' .. (err and err.message or 'no answer'), vim.log.levels.WARN)
      return
    end
    statuses[client.id] = s
    local early = ''
    if (s.notAnalysed or 0) > 0 then
      early = string.format('; %d place(s) where an analysis ended early (TL900 hints)', s.notAnalysed)
    end
    vim.notify(string.format(
      'tracelens: %s; %d functions (%d traces) in %d files: %d errors, %d warnings, %d infos%s',
      counts_text(s), s.functions, s.traces, s.files, s.errors, s.warnings, s.infos, early
    ), vim.log.levels.INFO)
  end, bufnr)
end

--- :TracelensRestart — stops every tracelens client and starts them again on Python buffers.
function M.restart()
  local ids = {}
  for root, id in pairs(clients_by_root) do
    table.insert(ids, id)
    clients_by_root[root] = nil
  end
  local all = vim.lsp.get_clients and vim.lsp.get_clients({ name = 'tracelens' }) or vim.lsp.get_active_clients()
  for _, c in pairs(all) do
    if c.name == 'tracelens' then
      table.insert(ids, c.id)
    end
  end
  for _, id in ipairs(ids) do
    vim.lsp.stop_client(id)
  end
  vim.wait(5000, function()
    for _, id in ipairs(ids) do
      if vim.lsp.get_client_by_id(id) ~= nil then
        return false
      end
    end
    return true
  end, 50)
  attach_all()
end

--- Sets tracelens up: `require('tracelens').setup({ cmd = ..., settings = { ... } })`.
function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  local group = vim.api.nvim_create_augroup('tracelens', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  vim.api.nvim_create_user_command('TracelensRepro', M.repro, { desc = 'tracelens: write a reproducer of the error on this line' })
  vim.api.nvim_create_user_command('TracelensOpenReproducer', M.open_reproducer, {
    desc = 'tracelens: open the reproducer line that stands for this line',
  })
  vim.api.nvim_create_user_command('TracelensTrace', M.trace, { desc = 'tracelens: show the traces of the function under the cursor' })
  vim.api.nvim_create_user_command('TracelensGraph', function()
    M.graph()
  end, { desc = 'tracelens: the traced computation of this file as a graph (SVG)' })
  vim.api.nvim_create_user_command('TracelensStatus', M.status, { desc = 'tracelens: what the server traced and found' })
  vim.api.nvim_create_user_command('TracelensRestart', M.restart, { desc = 'tracelens: restart the language server' })
  -- Buffers already open when setup runs.
  attach_all()
end

return M
