-- The cached view of the daemon that statuslines and commands read without a round trip.
local config = require("contextd.config")

local M = {
  status = "stopped", -- stopped | starting | running | exited
  client_id = nil,
  server_version = nil,
  session_id = nil,
  leaf_id = nil,
  model = nil,
  context_window = nil,
  usage = nil, -- the latest contextd/tokenUsage body of the current session
  source = nil, -- {agent, path} when the current session mirrors another agent's session
  -- The contextd/workspace/activity body of the workspace session that changed last, when
  -- that is not the current one (another client's session, a mirror): nil shows the current.
  latest = nil,
  compacting = nil, -- the contextd/compactionStarted body while one runs
  idle = nil, -- the latest contextd/idleTimer body of the current session
  -- The current session's last automatic compaction that found nothing to compact (its
  -- contextd/compactionFinished body), until a compaction ends otherwise.
  skipped = nil,
  handoff_requested = nil, -- true while a handoff the user asked for waits for its answer
  configured = false, -- setup() was called
  started_once = false, -- the daemon was started since setup() (autostart = false starts it lazily)
}

local usage_listeners = {}

--- Tells statuslines (and anyone else) that the cached state changed.
function M.changed()
  vim.api.nvim_exec_autocmds("User", { pattern = "ContextdStatus", modeline = false })
end

function M.reset(status)
  M.status = status
  M.client_id = nil
  M.session_id = nil
  M.leaf_id = nil
  M.usage = nil
  M.source = nil
  M.latest = nil
  M.compacting = nil
  M.idle = nil
  M.skipped = nil
  M.changed()
end

--- Makes `session` (an open or state result) the current session.
function M.adopt_session(session)
  M.session_id = session.sessionId
  M.leaf_id = session.leafId
  M.model = session.model
  M.context_window = session.contextWindow
  M.usage = session.usage
  M.source = session.source
  -- The statusline shows the session just chosen until another one changes.
  M.latest = nil
  M.compacting = session.compacting and (M.compacting or { reason = "unknown" }) or nil
  M.idle = nil
  M.skipped = nil
  M.status = "running"
  M.changed()
end

--- The session the statusline shows: the workspace's session that changed last when the
--- `statusline_session` option is "latest" and that is another session, else the current
--- one. {session_id, name, source, usage, current}.
function M.shown()
  local latest = config.options.statusline_session == "latest" and M.latest
  if latest and latest.sessionId ~= M.session_id then
    return {
      session_id = latest.sessionId,
      name = latest.name,
      source = latest.source,
      usage = latest.usage,
      current = false,
    }
  end
  return { session_id = M.session_id, source = M.source, usage = M.usage, current = true }
end

function M.is_current(params)
  return params ~= nil and params.sessionId ~= nil and params.sessionId == M.session_id
end

function M.add_usage_listener(fn)
  table.insert(usage_listeners, fn)
  return function()
    for i, listener in ipairs(usage_listeners) do
      if listener == fn then
        table.remove(usage_listeners, i)
        return
      end
    end
  end
end

function M.emit_usage(usage)
  for _, listener in ipairs({ unpack(usage_listeners) }) do
    local ok, err = pcall(listener, usage)
    if not ok then
      require("contextd.notify").error("on_token_usage callback failed: " .. tostring(err))
    end
  end
end

return M
