-- What the headless Neovim sessions of test_neovim.py share: the result table, with every
-- vim.deprecate call recorded (soft ones included: Neovim 0.11 shows only some), waiting, and
-- writing the result as JSON to TRACELENS_OUT before quitting.
local M = {}

--- A fresh result; from now on vim.deprecate calls are listed in result.deprecated.
function M.start()
  local result = { steps = {}, deprecated = {} }
  local deprecate = vim.deprecate
  vim.deprecate = function(name, ...)
    table.insert(result.deprecated, name)
    return deprecate(name, ...)
  end
  return result
end

function M.wait_for(ms, what, cond)
  if not vim.wait(ms, cond, 20) then
    error('timed out waiting for ' .. what)
  end
end

--- Runs `main`, notes whether it got to the end (or its error), writes the result and quits.
function M.run(result, main)
  local out_path = os.getenv('TRACELENS_OUT') or error('TRACELENS_OUT not set')
  local ok, err = xpcall(main, debug.traceback)
  result.ok = ok
  if not ok then
    result.error = tostring(err)
  end
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd('qall!')
end

return M
