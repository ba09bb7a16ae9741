-- The one LSP client that talks to `contextd serve`, across Neovim 0.7 to 0.11+.
local config = require("contextd.config")
local state = require("contextd.state")

local M = {}
local levels = vim.log.levels

-- Neovim 0.11 turned the client into a class (`client:request`) and let `vim.lsp.start`
-- run a client without attaching a buffer; before it, `vim.lsp.start_client` does that.
local HAS_CLIENT_CLASS = vim.fn.has("nvim-0.11") == 1

M.codes = {
  method_not_found = -32601,
  invalid_params = -32602,
  session_not_found = -32001,
  session_locked = -32003,
  compaction_running = -32004,
  nothing_to_compact = -32005,
  summarizer_failed = -32006,
  entry_not_found = -32007,
  cancelled = -32800,
}

-- Expected outcomes are not failures: they are reported, quieter.
local LEVEL_BY_CODE = {
  [M.codes.method_not_found] = levels.WARN,
  [M.codes.compaction_running] = levels.WARN,
  [M.codes.nothing_to_compact] = levels.INFO,
  [M.codes.cancelled] = levels.INFO,
}

M.not_running = { message = "contextd is not running (call require('contextd').setup())" }

function M.describe_error(err)
  if err.code == M.codes.method_not_found then
    return "this contextd does not support it yet (" .. (err.message or "method not found") .. ")"
  end
  local text = err.message or tostring(err)
  local data = err.data
  if type(data) == "table" and type(data.errors) == "table" then
    local fields = {}
    for _, field_error in ipairs(data.errors) do
      table.insert(fields, string.format("%s: %s", field_error.field or "?", field_error.message or "?"))
    end
    if #fields > 0 then
      text = text .. " (" .. table.concat(fields, "; ") .. ")"
    end
  end
  return text
end

function M.error_level(err)
  return LEVEL_BY_CODE[err.code] or levels.ERROR
end

--- Shows a daemon error; `what` names the action that failed.
function M.notify_error(what, err)
  vim.notify(string.format("contextd: %s: %s", what, M.describe_error(err)), M.error_level(err))
end

local function start_lsp(lsp_config)
  if HAS_CLIENT_CLASS then
    return vim.lsp.start(lsp_config, { attach = false })
  end
  return vim.lsp.start_client(lsp_config)
end

--- Starts a contextd client; returns its id or nil and an error message.
--- `hooks` are {handlers, on_init(client, initialize_result), on_exit(code, signal, client_id)}.
function M.start(name, hooks)
  local workspace = config.workspace()
  local lsp_config = {
    name = name,
    cmd = config.serve_cmd(),
    root_dir = workspace,
    workspace_folders = {
      { uri = vim.uri_from_fname(workspace), name = vim.fn.fnamemodify(workspace, ":t") },
    },
    init_options = config.settings(),
    settings = { contextd = config.settings() },
    handlers = hooks.handlers or {},
    on_init = hooks.on_init,
    on_exit = hooks.on_exit,
  }
  if vim.fn.isdirectory(workspace) == 1 then
    lsp_config.cmd_cwd = workspace
  end
  local ok, id = pcall(start_lsp, lsp_config)
  if not ok then
    return nil, tostring(id)
  end
  if not id then
    return nil, "could not start " .. table.concat(lsp_config.cmd, " ")
  end
  return id
end

function M.stop(client_id)
  local client = client_id and vim.lsp.get_client_by_id(client_id)
  if not client then
    return
  end
  if HAS_CLIENT_CLASS then
    client:stop()
  else
    client.stop()
  end
end

--- Sends a request to the running daemon; `callback(err, result)` runs on the main loop.
function M.request(method, params, callback)
  local client = state.client_id and vim.lsp.get_client_by_id(state.client_id)
  if not client then
    callback(M.not_running, nil)
    return
  end
  local function handler(err, result)
    callback(err, result)
  end
  local sent
  if HAS_CLIENT_CLASS then
    sent = client:request(method, params, handler)
  else
    sent = client.request(method, params, handler)
  end
  if not sent then
    callback(M.not_running, nil)
  end
end

--- Waits (bounded by the `timeout_ms` option) for a request; returns result, err.
function M.request_sync(method, params)
  local done, response_err, response = false, nil, nil
  M.request(method, params, function(err, result)
    done, response_err, response = true, err, result
  end)
  if not vim.wait(config.options.timeout_ms, function()
    return done
  end, 10) then
    return nil, { message = method .. " timed out after " .. config.options.timeout_ms .. " ms" }
  end
  return response, response_err
end

return M
