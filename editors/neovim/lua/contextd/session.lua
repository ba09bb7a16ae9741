-- The daemon's lifetime and which session is current: start, open or resume, switch, stop.
local client = require("contextd.client")
local config = require("contextd.config")
local events = require("contextd.events")
local format = require("contextd.format")
local notify = require("contextd.notify")
local state = require("contextd.state")

local M = {}

local waiting = {} -- callbacks(err) that run once the first session is open
local stopping = {} -- client ids stopped on purpose, whose exit is no news

local function settle(err)
  local callbacks = waiting
  waiting = {}
  for _, callback in ipairs(callbacks) do
    callback(err)
  end
end

local function not_running()
  if state.status == "exited" then
    return { message = "the daemon is not running (:Contextd restart starts it again)" }
  end
  return client.not_running
end

--- Runs `callback(err)` once a session is current (at once if it already is). A daemon
--- that was never started (`autostart = false`) starts now.
function M.when_ready(callback)
  if state.session_id then
    return callback(nil)
  end
  if state.status == "stopped" and state.configured and not state.started_once then
    M.start()
  end
  if state.status == "starting" then
    table.insert(waiting, callback)
  else
    callback(not_running())
  end
end

--- Waits for a current session until `deadline` (a vim.loop.now() value); returns an
--- error or nil.
function M.wait_ready(deadline)
  local err, done = nil, false
  M.when_ready(function(e)
    err, done = e, true
  end)
  if not vim.wait(math.max(deadline - vim.loop.now(), 0), function()
    return done
  end, 10) then
    return { message = "the daemon has not opened a session yet (try again, or use the callback form)" }
  end
  return err
end

-- Shows `row` (a session/list row of another session) until the next activity, with the
-- figure the daemon has for it; a session it cannot report on is left out.
local function show_row(row)
  client.request("contextd/session/state", { sessionId = row.sessionId }, function(err, result)
    if err or state.latest or not result.usage then
      return
    end
    state.latest = { sessionId = row.sessionId, name = row.name, source = row.source, usage = result.usage }
    state.changed()
  end)
end

-- The newest row of a session/list result that can be opened (a damaged file cannot).
local function newest_openable(rows)
  for _, row in ipairs(rows or {}) do
    if not format.present(row.damaged) then
      return row
    end
  end
end

-- Asks for contextd/workspace/activity about every session of the workspace, whoever drives
-- it, and starts from the one that changed last. A daemon without it shows the current
-- session only.
local function watch_workspace()
  client.request("contextd/workspace/watch", { workspace = config.workspace() }, function(err, result)
    local newest = not err and result and newest_openable(result.sessions)
    if newest and newest.sessionId ~= state.session_id then
      show_row(newest)
    end
  end)
end

-- The request's keys among the `follow` settings (intervalSeconds is the daemon's own).
local FOLLOW_KEYS = { "enabled", "agents", "roots", "allWorkspaces" }

-- A shared daemon takes its settings from its own start, not from each editor: following
-- that `settings.follow` turns on reaches it through contextd/follow, for all its clients.
local function follow_agents()
  local follow = config.options.shared and config.options.settings.follow
  if type(follow) ~= "table" or follow.enabled ~= true then
    return
  end
  local params = {}
  for _, key in ipairs(FOLLOW_KEYS) do
    params[key] = follow[key]
  end
  client.request("contextd/follow", params, function(err)
    if err then
      client.notify_error("could not follow the agents' sessions", err)
    end
  end)
end

local function adopt(result)
  state.adopt_session(result)
  settle(nil)
  follow_agents()
  watch_workspace()
end

local function create()
  local options = config.options
  local params = { workspace = config.workspace(), name = options.session_name, model = options.model }
  client.request("contextd/session/open", params, function(err, result)
    if err then
      client.notify_error("could not open a session", err)
      state.status = "exited"
      state.changed()
      settle(err)
      return
    end
    adopt(result)
  end)
end

-- A session that cannot be resumed (gone, locked by another editor) is reported and
-- replaced by a new one, so the editor keeps working.
local function resume(session_id)
  client.request("contextd/session/open", { sessionId = session_id }, function(err, result)
    if err then
      client.notify_error("could not resume session " .. session_id .. ", opened a new one", err)
      create()
      return
    end
    adopt(result)
  end)
end

local function open_initial()
  local options = config.options
  if options.session_id then
    resume(options.session_id)
  elseif not options.resume then
    create()
  else
    client.request("contextd/session/list", { workspace = config.workspace() }, function(err, result)
      local newest = nil
      -- Mirrors are read-only and damaged files cannot be opened: this editor resumes a
      -- session of contextd's own clients that opens.
      for _, row in ipairs(not err and result and result.sessions or {}) do
        if not format.present(row.source) and not format.present(row.damaged) then
          newest = row
          break
        end
      end
      if newest then
        resume(newest.sessionId)
      else
        create()
      end
    end)
  end
end

-- Neovim reports an unexpected exit of any LSP client itself ("Client … quit with exit
-- code …"); the plugin's message says the same and how to recover, so Neovim's is dropped:
-- one message per event. Only that one message, only shortly, only if no one replaced
-- vim.notify meanwhile.
local function drop_neovims_exit_notice(client_id)
  local shown = vim.notify
  local function filter(msg, ...)
    -- 0.7 names the client by id, 0.11 by name.
    local name = type(msg) == "string" and msg:match("^Client (%S+) quit with exit code")
    if name == tostring(client_id) or name == "contextd" then
      return
    end
    return shown(msg, ...)
  end
  vim.notify = filter
  vim.defer_fn(function()
    if vim.notify == filter then
      vim.notify = shown
    end
  end, 1000)
end

-- After a daemon that ran goes away (killed, crashed, its machine's shared daemon stopped),
-- the plugin starts it again after these pauses, as VS Code's extension does.
local RECONNECT_DELAYS_MS = { 1000, 2000, 4000, 8000, 16000 }
local reconnects = 0 -- attempts since the daemon last ran

-- The last lines the daemon wrote on stderr, from the LSP log where Neovim keeps them.
local function last_stderr_lines(count)
  local ok, lines = pcall(vim.fn.readfile, vim.lsp.get_log_path(), "", -400)
  local found = {}
  for _, line in ipairs(ok and lines or {}) do
    local text = line:match('"stderr"%s+"(.*)"%s*$')
    if text then
      for part in text:gsub("\\n", "\n"):gmatch("[^\n]+") do
        table.insert(found, vim.trim(part))
      end
    end
  end
  return { unpack(found, math.max(#found - count + 1, 1)) }
end

local function reconnect_later(how)
  reconnects = reconnects + 1
  local delay = RECONNECT_DELAYS_MS[reconnects]
  if not delay then
    notify.error(string.format(
      "the daemon exited (%s) and did not come back after %d tries; :Contextd restart starts it again",
      how, #RECONNECT_DELAYS_MS
    ))
    return
  end
  notify.warn(string.format("the daemon exited (%s); reconnecting in %d s", how, delay / 1000))
  vim.defer_fn(function()
    if state.status == "exited" then
      M.start()
    end
  end, delay)
end

local function on_exit(code, signal, client_id)
  -- Also when the plugin stopped it: a daemon that refused its settings exits with code 1
  -- after the plugin has already said why.
  drop_neovims_exit_notice(client_id)
  if stopping[client_id] then
    return
  end
  vim.schedule(function()
    client.forget_client(client_id)
    if stopping[client_id] then
      stopping[client_id] = nil
      return
    end
    if client_id ~= state.client_id then
      return
    end
    local had_run = state.status == "running"
    state.reset("exited")
    settle(not_running())
    local how = (signal or 0) ~= 0 and ("signal " .. signal) or ("code " .. tostring(code))
    if had_run then
      reconnects = 0
    end
    if had_run or reconnects > 0 then
      return reconnect_later(how)
    end
    local said = last_stderr_lines(3)
    notify.error(string.format(
      "the daemon exited (%s) before it started%s; :checkhealth contextd says what is missing",
      how, #said > 0 and (": " .. table.concat(said, " | ")) or ""
    ))
  end)
end

-- A daemon that refuses `initialize` names the bad setting: say so once and stop.
local function on_refused(client_id, err)
  if client_id ~= state.client_id then
    return
  end
  stopping[client_id] = true
  state.reset("exited")
  settle(not_running())
  client.notify_error("the daemon refused the settings", err)
end

-- A daemon that neither starts nor refuses (a hung program) counts as failed after
-- `start_timeout_ms`.
local function watch_initialization(client_id)
  vim.defer_fn(function()
    if state.client_id ~= client_id or state.status ~= "starting" then
      return
    end
    stopping[client_id] = true
    client.stop(client_id, true)
    state.reset("exited")
    settle(not_running())
    notify.error(string.format(
      "the daemon did not answer within %d ms (its log: %s)",
      config.options.start_timeout_ms,
      vim.lsp.get_log_path()
    ))
  end, config.options.start_timeout_ms)
end

function M.start()
  if state.status == "starting" or state.status == "running" then
    return
  end
  state.started_once = true
  state.reset("starting")
  local id, err
  id, err = client.start("contextd", {
    handlers = events.handlers,
    on_init = function(_, initialize_result)
      local info = initialize_result and initialize_result.serverInfo
      state.server_version = info and info.version or nil
      -- Neovim 0.7 finds the client by id only after on_init returns.
      vim.schedule(open_initial)
    end,
    on_exit = on_exit,
    on_refused = function(err)
      on_refused(id, err)
    end,
  })
  if not id then
    state.reset("exited")
    settle(not_running())
    notify.error("could not start the daemon: " .. err)
    return
  end
  state.client_id = id
  watch_initialization(id)
end

function M.stop()
  local id = state.client_id
  if id then
    stopping[id] = true
    client.stop(id)
    client.forget_client(id)
  end
  state.reset("stopped")
  settle(client.not_running)
end

--- Stops the daemon (if it runs) and starts it again with the options in effect.
function M.restart()
  M.stop()
  M.start()
end

--- Makes `session_id` current: it may already be live in the daemon (a handoff or a fork
--- opens it there) or only on disk. The session left is closed, releasing its lock.
function M.switch_to(session_id, callback)
  local previous = state.session_id
  local function finish(result)
    state.adopt_session(result)
    if previous and previous ~= session_id then
      client.request("contextd/session/close", { sessionId = previous }, function() end)
    end
    callback(nil)
  end
  client.request("contextd/session/state", { sessionId = session_id }, function(err, result)
    if not err then
      return finish(result)
    end
    if err.code ~= client.codes.session_not_found then
      return callback(err)
    end
    client.request("contextd/session/open", { sessionId = session_id }, function(open_err, opened)
      if open_err then
        return callback(open_err)
      end
      finish(opened)
    end)
  end)
end

--- The current session was deleted (by another client, `contextd sessions rm`): say so and
--- continue in a new session; requests made meanwhile wait for it.
function M.replace_deleted(session_id)
  state.session_id = nil
  state.usage = nil
  state.source = nil
  state.status = "starting"
  state.changed()
  notify.warn(string.format("session %s was deleted; continuing in a new session", session_id))
  create()
end

local followed = {} -- handoff sessions already followed: the request and the event both report one

--- Continues in the session a handoff created.
function M.follow_handoff(new_session_id)
  if followed[new_session_id] then
    return
  end
  followed[new_session_id] = true
  M.switch_to(new_session_id, function(err)
    if err then
      return client.notify_error("could not open the handoff session", err)
    end
    notify.info("handed off to the new session " .. new_session_id)
  end)
end

return M
