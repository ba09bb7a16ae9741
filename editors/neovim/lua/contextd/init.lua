-- contextd for Neovim: the daemon that owns your LLM session's context, in the built-in LSP client.
local client = require("contextd.client")
local commands = require("contextd.commands")
local config = require("contextd.config")
local format = require("contextd.format")
local notify = require("contextd.notify")
local session = require("contextd.session")
local state = require("contextd.state")

local M = {}

M.version = "0.1.0"

-- Colours of require("contextd").level(), for statuslines; a colorscheme may set its own.
local function define_highlights()
  local links = {
    ContextdStatusWarning = "DiagnosticWarn",
    ContextdStatusCritical = "DiagnosticError",
    ContextdStatusDisconnected = "Comment",
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

define_highlights()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("contextd-highlights", { clear = true }),
  callback = define_highlights,
})

--- Applies the options and (re)starts the daemon, which opens or resumes a session.
--- `setup()` without options restarts with the options in effect. See :help contextd-setup.
--- Returns false when an option is wrong (reported, and nothing changes).
function M.setup(opts)
  local problems = config.set(opts)
  if problems then
    notify.error("setup: " .. table.concat(problems, "; "))
    return false
  end
  state.configured = true
  state.started_once = false
  commands.create()
  session.stop()
  if config.options.autostart then
    session.start()
  end
  return true
end

--- Stops the daemon (Neovim also stops it on exit).
function M.stop()
  session.stop()
end

--- Stops the daemon if it runs and starts it again with the same options (after a crash).
function M.restart()
  session.restart()
end

-- What the statusline shows. Compaction and idle cues are known of the current session only.
local function view()
  local session = state.shown()
  local compacting = session.current and state.compacting or nil
  if compacting and compacting.started_ms then
    compacting = vim.tbl_extend("force", compacting, { elapsed_s = (vim.loop.now() - compacting.started_ms) / 1000 })
  end
  return {
    status = state.status,
    usage = session.usage,
    agent = format.agent_name(session.source),
    compacting = compacting,
    idle = session.current and state.idle or nil,
  }
end

--- The statusline text, e.g. "ctx 84k/200k 42%" (see :help contextd-statusline); "" when
--- nothing runs. It reads the cache only. `{ escape = true }` doubles `%` for statusline
--- expressions that interpret it (lualine, %!).
function M.statusline(opts)
  local text = format.statusline(view())
  if opts and opts.escape then
    return (text:gsub("%%", "%%%%"))
  end
  return text
end

--- "normal", "warning", "critical", "disconnected" or "" (nothing runs): for colours.
function M.level()
  return format.level(state.status, state.shown().usage)
end

--- A copy of the cached state: session_id, leaf_id, model, context_window, usage, source,
--- compacting, idle, status, server_version, and `shown`: the session the statusline shows
--- {session_id, name, source, usage, current}.
function M.state()
  return {
    source = state.source,
    shown = state.session_id and state.shown() or nil,
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
-- (`callback(err, result)`), without one it blocks at most `timeout_ms` in all and returns
-- result, err.
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
  local deadline = vim.loop.now() + config.options.timeout_ms
  local ready_err = session.wait_ready(deadline)
  if ready_err then
    return nil, ready_err
  end
  params.sessionId = state.session_id
  return client.request_sync(method, params, math.max(deadline - vim.loop.now(), 1))
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
