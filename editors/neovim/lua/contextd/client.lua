-- The one LSP client that talks to `contextd serve`, across Neovim 0.7 to 0.11+.
local config = require("contextd.config")
local format = require("contextd.format")
local notify = require("contextd.notify")
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
  read_only_mirror = -32008,
  cancelled = -32800,
}

-- Expected outcomes are not failures: they are reported, quieter.
local LEVEL_BY_CODE = {
  [M.codes.method_not_found] = levels.WARN,
  [M.codes.compaction_running] = levels.WARN,
  [M.codes.nothing_to_compact] = levels.INFO,
  [M.codes.read_only_mirror] = levels.WARN,
  [M.codes.cancelled] = levels.INFO,
}

M.not_running = { message = "contextd is not running (:Contextd start)" }
M.cancelled = { code = M.codes.cancelled, message = "cancelled" }

-- The daemon's messages start with the JSON-RPC error class ("invalid params: ..."),
-- which says nothing to a user; the field errors say it all.
local function plain_message(err)
  local text = tostring(err.message or err)
  return (text:gsub("^invalid params: ", ""))
end

-- A mirror follows another agent's transcript: only that agent writes to it.
local function mirror_message(err)
  local session_id = type(err.data) == "table" and err.data.sessionId or nil
  local source = (session_id == nil or session_id == state.session_id) and state.source or nil
  local agent = format.agent_name(source)
  local whose = agent and ("a " .. agent .. " session") or "another agent's session"
  return "this session is a read-only mirror of "
    .. whose
    .. "; :Contextd handoff starts a session of your own from it"
end

function M.describe_error(err)
  if err.code == M.codes.method_not_found then
    return "this contextd version does not support it yet"
  elseif err.code == M.codes.read_only_mirror then
    return mirror_message(err)
  end
  local data = err.data
  if type(data) == "table" and type(data.errors) == "table" and #data.errors > 0 then
    local fields = {}
    for _, field_error in ipairs(data.errors) do
      table.insert(fields, string.format("%s: %s", field_error.field or "?", field_error.message or "?"))
    end
    return table.concat(fields, "; ")
  end
  return plain_message(err)
end

function M.error_level(err)
  return LEVEL_BY_CODE[err.code] or levels.ERROR
end

--- Shows a daemon error; `what` names the action that failed, in words.
function M.notify_error(what, err)
  notify.show(string.format("%s: %s", what, M.describe_error(err)), M.error_level(err))
end

-- Neovim asserts inside its own callback when the server refuses `initialize` (a bad
-- setting): a Lua traceback, and a client that stays "starting". For the one start this
-- wraps, the refusal goes to `on_refused(err)` instead. vim.lsp looks `rpc.start` up on
-- each start (0.7: lsp_rpc.start, 0.11: lsp.rpc.start), so wrapping the module's field works.
local function with_initialize_refusal(on_refused, start)
  local rpc_module = require("vim.lsp.rpc")
  local original_start = rpc_module.start
  rpc_module.start = function(...)
    local rpc = original_start(...)
    if type(rpc) == "table" and type(rpc.request) == "function" then
      local request = rpc.request
      rpc.request = function(method, params, callback, ...)
        if method == "initialize" and callback then
          local neovims_callback = callback
          callback = function(err, result)
            if err then
              return on_refused(err)
            end
            return neovims_callback(err, result)
          end
        end
        return request(method, params, callback, ...)
      end
    end
    return rpc
  end
  local ok, id = pcall(start)
  rpc_module.start = original_start
  if not ok then
    error(id, 0)
  end
  return id
end

local function start_lsp(lsp_config)
  if HAS_CLIENT_CLASS then
    return vim.lsp.start(lsp_config, { attach = false })
  end
  return vim.lsp.start_client(lsp_config)
end

--- Starts a contextd client; returns its id or nil and an error message.
--- `hooks` are {handlers, on_init(client, initialize_result), on_exit(code, signal, client_id),
--- on_refused(err)}; on_refused gets the daemon's refusal of initialize (a bad setting).
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
  if vim.fn.executable(lsp_config.cmd[1]) ~= 1 then
    return nil, lsp_config.cmd[1] .. " is not an executable program (check `cmd` or `python` in setup())"
  end
  local id
  local function on_refused(err)
    vim.schedule(function()
      M.stop(id, true)
      if hooks.on_refused then
        hooks.on_refused(err)
      end
    end)
  end
  local ok, result = pcall(with_initialize_refusal, on_refused, function()
    return start_lsp(lsp_config)
  end)
  if not ok then
    return nil, tostring(result)
  end
  if not result then
    return nil, "could not start " .. table.concat(lsp_config.cmd, " ")
  end
  id = result
  return id
end

function M.stop(client_id, force)
  local client = client_id and vim.lsp.get_client_by_id(client_id)
  if not client then
    return
  end
  if HAS_CLIENT_CLASS then
    client:stop(force)
  else
    client.stop(force)
  end
end

-- Requests in flight: Neovim drops the reply to a cancelled request (-32800) without
-- calling back, so the plugin answers those callbacks itself.
local pending = {} -- request id -> { method, callback, client_id }

local function settle_pending(id, err, result)
  local request = pending[id]
  if not request then
    return
  end
  pending[id] = nil
  request.callback(err, result)
end

--- Sends a request to the running daemon; `callback(err, result)` runs on the main loop,
--- exactly once, whether the request is answered, cancelled or the daemon exits.
--- Returns the request id (nil when it could not be sent).
function M.request(method, params, callback)
  local client = state.client_id and vim.lsp.get_client_by_id(state.client_id)
  if not client then
    callback(M.not_running, nil)
    return nil
  end
  local id
  local function handler(err, result)
    settle_pending(id, err, result)
  end
  local sent
  if HAS_CLIENT_CLASS then
    sent, id = client:request(method, params, handler)
  else
    sent, id = client.request(method, params, handler)
  end
  if not sent then
    callback(M.not_running, nil)
    return nil
  end
  pending[id] = { method = method, callback = callback, client_id = state.client_id }
  return id
end

--- Cancels request `id` ($/cancelRequest) and calls its callback with a cancelled error.
function M.cancel(id)
  local request = id and pending[id]
  if not request then
    return false
  end
  local client = vim.lsp.get_client_by_id(request.client_id)
  if client then
    if HAS_CLIENT_CLASS then
      client:cancel_request(id)
    else
      client.cancel_request(id)
    end
  end
  settle_pending(id, M.cancelled, nil)
  return true
end

--- The pending requests of `method` (ids), oldest first.
function M.pending_ids(method)
  local ids = {}
  for id, request in pairs(pending) do
    if request.method == method then
      table.insert(ids, id)
    end
  end
  table.sort(ids)
  return ids
end

--- Settles every pending request of `method` as cancelled: the daemon reported that the
--- job behind it was aborted or cancelled, and Neovim will not deliver that reply.
function M.settle_cancelled(method)
  for _, id in ipairs(M.pending_ids(method)) do
    settle_pending(id, M.cancelled, nil)
  end
end

--- The daemon of `client_id` is gone: nothing pending on it will be answered.
function M.forget_client(client_id)
  for id, request in pairs(pending) do
    if request.client_id == client_id then
      settle_pending(id, M.not_running, nil)
    end
  end
end

--- Waits for a request, at most `timeout_ms` (the `timeout_ms` option by default);
--- returns result, err. The editor is blocked meanwhile, so the wait is short.
function M.request_sync(method, params, timeout_ms)
  timeout_ms = timeout_ms or config.options.timeout_ms
  local done, response_err, response = false, nil, nil
  M.request(method, params, function(err, result)
    done, response_err, response = true, err, result
  end)
  if not vim.wait(timeout_ms, function()
    return done
  end, 10) then
    return nil, { message = string.format("no answer from the daemon within %d ms", timeout_ms) }
  end
  return response, response_err
end

return M
