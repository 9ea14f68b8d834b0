-- Headless Neovim with the config snippet of docs/editors.md (TRACELENS_SNIPPET, a Lua file)
-- as the user's whole config: open a file, wait for tracelens diagnostics. `tracelens` must be
-- on PATH, as the snippet names it. Results go to a JSON file that test_neovim.py checks.
--
-- Environment: TRACELENS_SNIPPET, TRACELENS_FIXTURE, TRACELENS_OUT.

local out_path = os.getenv('TRACELENS_OUT') or error('TRACELENS_OUT not set')
local result = { steps = {}, deprecated = {} }

local deprecate = vim.deprecate
vim.deprecate = function(name, ...)
  table.insert(result.deprecated, name)
  return deprecate(name, ...)
end

local function main()
  vim.cmd('filetype on')
  dofile(os.getenv('TRACELENS_SNIPPET') or error('TRACELENS_SNIPPET not set'))
  vim.cmd('edit ' .. vim.fn.fnameescape(os.getenv('TRACELENS_FIXTURE') or error('TRACELENS_FIXTURE not set')))
  table.insert(result.steps, 'opened')
  if not vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 20) then
    error('timed out waiting for diagnostics')
  end
  -- Whatever else arrives shortly after (a second copy, if the client both pulled and was pushed).
  vim.wait(500)
  result.clients = {}
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = 0 })) do
    table.insert(result.clients, c.name)
  end
  result.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do
    table.insert(result.diagnostics, { code = d.code, lnum = d.lnum })
  end
  table.sort(result.diagnostics, function(a, b) return a.lnum < b.lnum end)
  table.insert(result.steps, 'diagnostics')
  result.ok = true
end

local ok, err = pcall(main)
if not ok then
  result.error = tostring(err)
end
local f = assert(io.open(out_path, 'w'))
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd('qall!')
