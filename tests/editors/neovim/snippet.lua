-- Headless Neovim with the config snippet of docs/editors.md (TRACELENS_SNIPPET, a Lua file)
-- as the user's whole config: open a file, wait for tracelens diagnostics. `tracelens` must be
-- on PATH, as the snippet names it. Results go to a JSON file that test_neovim.py checks.
--
-- Environment: TRACELENS_SNIPPET, TRACELENS_FIXTURE, TRACELENS_OUT.

local session = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/session.lua')
local result = session.start()

local function main()
  vim.cmd('filetype on')
  dofile(os.getenv('TRACELENS_SNIPPET') or error('TRACELENS_SNIPPET not set'))
  vim.cmd('edit ' .. vim.fn.fnameescape(os.getenv('TRACELENS_FIXTURE') or error('TRACELENS_FIXTURE not set')))
  table.insert(result.steps, 'opened')
  session.wait_for(20000, 'diagnostics', function() return #vim.diagnostic.get(0) > 0 end)
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
end

session.run(result, main)
