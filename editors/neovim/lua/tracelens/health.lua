-- :checkhealth tracelens — is the plugin set up, and can the server be started?

local M = {}

-- vim.health on 0.10+, the `health` module before.
local health = vim.health or require('health')
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error

function M.check()
  start('tracelens')
  local tracelens = require('tracelens')
  if tracelens.config == nil then
    warn('setup() has not been called: add require("tracelens").setup({}) to your config')
    return
  end
  ok('setup() called')
  local exe = tracelens.config.cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    error(exe .. ' is not executable; set cmd = { "/path/to/tracelens", "lsp" } in setup(), or put tracelens on PATH')
    return
  end
  local version = vim.fn.system({ exe, '--version' })
  if vim.v.shell_error ~= 0 then
    error(exe .. ' --version failed: ' .. version)
    return
  end
  ok('server: ' .. vim.fn.exepath(exe) .. ' (' .. vim.trim(version) .. ')')
  local attached = tracelens.client(vim.api.nvim_get_current_buf())
  if attached then
    ok('attached to this buffer (client ' .. attached.id .. ')')
  end
end

return M
