-- contextd for Neovim: the daemon that owns your LLM session's context, in the built-in LSP client.
local client = require("contextd.client")
local commands = require("contextd.commands")
local config = require("contextd.config")
local format = require("contextd.format")
local session = require("contextd.session")
local state = require("contextd.state")

local M = {}

M.version = "0.1.0"

--- Starts `contextd serve` and opens or resumes a session. Calling it again restarts with
--- the new options. See :help contextd-setup.
function M.setup(opts)
  config.set(opts)
  session.stop()
  commands.create()
  session.start()
end

--- Stops the daemon (Neovim also stops it on exit).
function M.stop()
  session.stop()
end

--- The statusline text, e.g. "ctx 84k/200k 42%"; "" when no session is open. Reads the cache only.
function M.statusline()
  return format.statusline(state.usage, state.compacting ~= nil)
end

--- A copy of the cached state: session_id, leaf_id, model, context_window, usage, compacting,
--- idle, status, server_version.
function M.state()
  return {
    status = state.status,
    server_version = state.server_version,
    session_id = state.session_id,
    leaf_id = state.leaf_id,
    model = state.model,
    context_window = state.context_window,
    usage = state.usage,
    compacting = state.compacting,
    idle = state.idle,
  }
end

-- Runs `method` on the current session: with a callback asynchronously
-- (`callback(err, result)`), without one it waits (`timeout_ms`) and returns result, err.
local function session_request(method, params, callback)
  if callback then
    return session.when_ready(function(err)
      if err then
        return callback(err, nil)
      end
      params.sessionId = state.session_id
      client.request(method, params, callback)
    end)
  end
  local ready_err = session.wait_ready()
  if ready_err then
    return nil, ready_err
  end
  params.sessionId = state.session_id
  return client.request_sync(method, params)
end

--- Appends messages (protocol.md "Messages") to the current session.
--- The result is {entryIds, leafId, usage}.
function M.append_messages(messages, callback)
  return session_request("contextd/session/append", { messages = messages }, callback)
end

--- The current context in `format` ("neutral" by default, "anthropic" or "openai").
--- The result is {messages, system?, tokens}.
function M.get_context(context_format, callback)
  if type(context_format) == "function" then
    context_format, callback = nil, context_format
  end
  return session_request("contextd/session/context", { format = context_format or "neutral" }, callback)
end

--- Calls `fn(usage)` with every contextd/tokenUsage body (all sessions; check usage.sessionId).
--- Returns a function that unsubscribes.
function M.on_token_usage(fn)
  return state.add_usage_listener(fn)
end

return M
