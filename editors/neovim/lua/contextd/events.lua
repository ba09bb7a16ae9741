-- Handlers for the daemon's contextd/* notifications: they update the cache and report
-- what the user did not ask for (automatic compactions).
local client = require("contextd.client")
local format = require("contextd.format")
local notify = require("contextd.notify")
local state = require("contextd.state")

local M = {}
local levels = vim.log.levels

-- The request behind a job of each reason; the requester reports its own outcome.
local REQUEST_BY_REASON = {
  manual = "contextd/compact",
  handoff = "contextd/handoff",
  branch = "contextd/navigate",
}

local function on_token_usage(_, usage)
  if state.is_current(usage) then
    state.usage = usage
    state.model = usage.model or state.model
    state.context_window = usage.contextWindow or state.context_window
    state.changed()
  end
  state.emit_usage(usage)
end

local function on_session_changed(_, change)
  if not state.is_current(change) then
    return
  end
  if change.cause == "deleted" then
    return require("contextd.session").replace_deleted(change.sessionId)
  end
  state.leaf_id = change.leafId
  state.changed()
end

-- While a compaction runs the statusline counts the time it takes: redrawn every second.
local function redraw_while_compacting()
  local timer = vim.loop.new_timer()
  timer:start(1000, 1000, vim.schedule_wrap(function()
    if not state.compacting then
      timer:stop()
      timer:close()
      return
    end
    vim.cmd("redrawstatus")
  end))
end

local function on_compaction_started(_, started)
  if state.is_current(started) then
    state.compacting = vim.tbl_extend("force", started, { started_ms = vim.loop.now() })
    state.changed()
    redraw_while_compacting()
  end
end

local function finished_message(finished)
  local reason = finished.reason or "?"
  if finished.outcome == "compacted" then
    local summary = format.present(finished.shortSummary) and (": " .. finished.shortSummary) or ""
    -- A mirror's own agent compacted its context (a Claude Code compact boundary, …).
    local agent = reason == "agent" and format.agent_name(state.source)
    local what = agent and (agent .. " compacted its context") or string.format("compacted (%s)", reason)
    return string.format(
      "%s %s → %s tokens%s",
      what,
      format.tokens(finished.tokensBefore),
      format.tokens(finished.tokensAfter),
      summary
    ),
      levels.INFO
  elseif finished.outcome == "promoted" then
    -- Nothing was summarized: the session moved to a model with a larger window.
    return string.format(
      "the context was full (%s): moved from %s (%s) to %s (%s) instead of compacting; send the request again",
      reason,
      finished.previousModel or "?",
      format.tokens(finished.previousContextWindow),
      finished.model or "?",
      format.tokens(finished.contextWindow)
    ),
      levels.INFO
  elseif finished.outcome == "skipped" then
    return table.concat(format.skip_lines(finished), "\n"), levels.WARN
  elseif finished.outcome == "failed" then
    local retry = finished.willRetry and ", will retry" or ""
    return string.format("compaction (%s) failed%s: %s", reason, retry, finished.error or "?"),
      finished.willRetry and levels.WARN or levels.ERROR
  end
  return string.format("compaction (%s) %s", reason, finished.outcome or "ended"), levels.INFO
end

local function on_compaction_finished(_, finished)
  if not state.is_current(finished) then
    return
  end
  state.compacting = nil
  state.skipped = finished.outcome == "skipped" and finished or nil
  state.changed()
  local stopped = finished.outcome == "aborted" or finished.outcome == "cancelled"
  if stopped and REQUEST_BY_REASON[finished.reason] then
    client.settle_cancelled(REQUEST_BY_REASON[finished.reason])
  end
  -- A handoff (asked for or at the threshold with strategy "handoff") continues in the new session.
  if finished.outcome == "compacted" and format.present(finished.handoffSessionId) then
    return require("contextd.session").follow_handoff(finished.handoffSessionId)
  end
  -- Requests the user made answer for themselves, an abort too; the rest is news.
  local asked_for = finished.reason == "manual"
    or finished.reason == "branch"
    or (finished.reason == "handoff" and state.handoff_requested)
    or (stopped and state.abort_requested)
  state.abort_requested = nil
  if not asked_for then
    notify.show(finished_message(finished))
  end
end

local function on_idle_timer(_, timer)
  if state.is_current(timer) then
    state.idle = timer
    state.changed()
  end
end

-- Any session of the workspace changed (contextd/workspace/watch): the statusline may
-- follow it. A client opening a session changes nothing in it, so that is not followed; a
-- mirror opens with what the agent wrote, so it is. A deleted session is no longer shown.
local function on_workspace_activity(_, activity)
  if type(activity) ~= "table" then
    return
  end
  if activity.cause == "open" and not format.present(activity.source) then
    return
  end
  if activity.cause == "deleted" then
    if state.latest and state.latest.sessionId == activity.sessionId then
      state.latest = nil
      state.changed()
    end
    return
  end
  state.latest = activity.sessionId ~= state.session_id and activity or nil
  state.changed()
  -- A mirror's agent compacting the session the statusline shows is news even when it is not
  -- the current session (the current one's compactions come as compactionFinished).
  local shown = state.shown()
  if activity.cause == "compaction" and format.present(activity.source) and not shown.current
    and shown.session_id == activity.sessionId then
    notify.info(string.format(
      "%s compacted its context (%s): now %s tokens",
      format.agent_name(activity.source) or "the agent",
      format.one_line(format.present(activity.name) and activity.name or activity.sessionId, 40),
      format.tokens(activity.usage and activity.usage.tokens)
    ))
  end
end

-- The daemon says what the user must know (settings it could not apply) this way.
local SHOW_LEVEL = { levels.ERROR, levels.WARN, levels.INFO, levels.INFO }

local function on_show_message(_, shown)
  local text = tostring(shown and shown.message or ""):gsub("^contextd: ", "")
  notify.show(text, SHOW_LEVEL[shown and shown.type] or levels.INFO)
end

M.handlers = {
  ["contextd/tokenUsage"] = on_token_usage,
  ["contextd/sessionChanged"] = on_session_changed,
  ["contextd/compactionStarted"] = on_compaction_started,
  ["contextd/compactionFinished"] = on_compaction_finished,
  ["contextd/idleTimer"] = on_idle_timer,
  ["contextd/workspace/activity"] = on_workspace_activity,
  ["window/showMessage"] = on_show_message,
}

return M
