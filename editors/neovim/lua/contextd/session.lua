-- The daemon's lifetime and which session is current: start, open or resume, switch, stop.
local client = require("contextd.client")
local config = require("contextd.config")
local events = require("contextd.events")
local state = require("contextd.state")

local M = {}
local levels = vim.log.levels

local waiting = {} -- callbacks(err) that run once the first session is open
local stopping = {} -- client ids stopped on purpose, whose exit is no news

local function settle(err)
  local callbacks = waiting
  waiting = {}
  for _, callback in ipairs(callbacks) do
    callback(err)
  end
end

--- Runs `callback(err)` once a session is current (at once if it already is).
function M.when_ready(callback)
  if state.session_id then
    callback(nil)
  elseif state.status == "starting" then
    table.insert(waiting, callback)
  else
    callback(client.not_running)
  end
end

--- Bounded wait for a current session; returns an error or nil.
function M.wait_ready()
  local err, done = nil, false
  M.when_ready(function(e)
    err, done = e, true
  end)
  if not vim.wait(config.options.timeout_ms, function()
    return done
  end, 10) then
    return { message = "contextd did not open a session in time" }
  end
  return err
end

local function adopt(result)
  state.adopt_session(result)
  settle(nil)
end

local function create()
  local options = config.options
  local params = { workspace = config.workspace(), name = options.session_name, model = options.model }
  client.request("contextd/session/open", params, function(err, result)
    if err then
      client.notify_error("open a session", err)
      state.status = "exited"
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
      client.notify_error("resume session " .. session_id, err)
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
      local newest = not err and result and result.sessions and result.sessions[1]
      if newest then
        resume(newest.sessionId)
      else
        create()
      end
    end)
  end
end

local function on_exit(code, signal, client_id)
  vim.schedule(function()
    if stopping[client_id] then
      stopping[client_id] = nil
      return
    end
    if client_id ~= state.client_id then
      return
    end
    state.reset("exited")
    settle(client.not_running)
    local how = (signal or 0) ~= 0 and ("signal " .. signal) or ("code " .. tostring(code))
    vim.notify(
      string.format("contextd: the daemon exited (%s); see :checkhealth contextd", how),
      (code == 0 and (signal or 0) == 0) and levels.WARN or levels.ERROR
    )
  end)
end

-- Neovim raises inside its own callback when initialize fails (a bad setting), and no hook
-- tells the plugin; so a client still starting after `start_timeout_ms` has failed.
local function watch_initialization(client_id)
  vim.defer_fn(function()
    if state.client_id ~= client_id or state.status ~= "starting" then
      return
    end
    stopping[client_id] = true
    client.stop(client_id)
    state.reset("exited")
    settle(client.not_running)
    vim.notify(
      string.format(
        "contextd: the daemon did not start within %d ms (a bad setting is named in the error above; see :checkhealth contextd)",
        config.options.start_timeout_ms
      ),
      levels.ERROR
    )
  end, config.options.start_timeout_ms)
end

function M.start()
  state.reset("starting")
  local id, err = client.start("contextd", {
    handlers = events.handlers,
    on_init = function(_, initialize_result)
      local info = initialize_result and initialize_result.serverInfo
      state.server_version = info and info.version or nil
      -- Neovim 0.7 finds the client by id only after on_init returns.
      vim.schedule(open_initial)
    end,
    on_exit = on_exit,
  })
  if not id then
    state.reset("exited")
    settle(client.not_running)
    vim.notify("contextd: could not start the daemon: " .. err, levels.ERROR)
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
  end
  state.reset("stopped")
  settle(client.not_running)
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

local followed = {} -- handoff sessions already followed: the request and the event both report one

--- Continues in the session a handoff created.
function M.follow_handoff(new_session_id)
  if followed[new_session_id] then
    return
  end
  followed[new_session_id] = true
  M.switch_to(new_session_id, function(err)
    if err then
      return client.notify_error("open the handoff session", err)
    end
    vim.notify("contextd: handed off to the new session " .. new_session_id, levels.INFO)
  end)
end

return M
