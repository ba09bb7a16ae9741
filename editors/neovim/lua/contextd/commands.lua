-- The :Contextd* user commands. Each one asks the daemon and reports with vim.notify.
local client = require("contextd.client")
local config = require("contextd.config")
local format = require("contextd.format")
local session = require("contextd.session")
local state = require("contextd.state")

local M = {}
local levels = vim.log.levels

local function info(text)
  vim.notify("contextd: " .. text, levels.INFO)
end

--- Sends `method` once a session is current; `build_params()` runs then, so it can read
--- the current session id. Errors are shown; `on_result(result)` gets the rest.
local function call(method, build_params, on_result)
  local what = method:gsub("^contextd/", "")
  session.when_ready(function(ready_err)
    if ready_err then
      return client.notify_error(what, ready_err)
    end
    client.request(method, build_params(), function(err, result)
      if err then
        return client.notify_error(what, err)
      end
      on_result(result)
    end)
  end)
end

local function with_session(params)
  return function()
    local built = {} -- a shallow copy: params may hold vim.NIL, which 0.7 cannot deepcopy
    for key, value in pairs(params or {}) do
      built[key] = value
    end
    built.sessionId = state.session_id
    return built
  end
end

local function non_empty(text)
  if text and vim.trim(text) ~= "" then
    return vim.trim(text)
  end
  return nil
end

function M.status()
  call("contextd/session/state", with_session(), function(result)
    state.leaf_id = result.leafId
    state.usage = result.usage or state.usage
    state.changed()
    local lines = format.status_lines(result, state.server_version)
    if state.idle then
      table.insert(lines, "idle timer: " .. (state.idle.state or "?") .. (state.idle.dueAt and (" until " .. state.idle.dueAt) or ""))
    end
    vim.notify(table.concat(lines, "\n"), levels.INFO)
  end)
end

function M.compact(instructions)
  call("contextd/compact", with_session({ instructions = non_empty(instructions) }), function(result)
    info(string.format(
      "compacted %s → %s tokens",
      format.tokens(result.tokensBefore),
      format.tokens(result.tokensAfter)
    ))
  end)
end

function M.compact_preview()
  call("contextd/compact", with_session({ dryRun = true }), function(plan)
    vim.notify(table.concat(format.preview_lines(plan), "\n"), levels.INFO)
  end)
end

function M.handoff(goal)
  state.handoff_requested = true
  session.when_ready(function(ready_err)
    if ready_err then
      state.handoff_requested = nil
      return client.notify_error("handoff", ready_err)
    end
    local params = { sessionId = state.session_id, goal = non_empty(goal) }
    client.request("contextd/handoff", params, function(err, result)
      state.handoff_requested = nil
      if err then
        return client.notify_error("handoff", err)
      end
      session.follow_handoff(result.sessionId)
    end)
  end)
end

-- Lets the user pick an entry of the session's tree; `on_pick(item)` gets a format.tree_items item.
local function pick_entry(prompt, on_pick)
  call("contextd/tree", with_session(), function(tree)
    local items = format.tree_items(tree)
    if #items == 0 then
      return info("the session has no entries yet")
    end
    vim.ui.select(items, {
      prompt = prompt,
      kind = "contextd.tree",
      format_item = format.tree_item,
    }, function(item)
      if item then
        on_pick(item)
      end
    end)
  end)
end

local function ask_summarize(on_answer)
  local choices = {
    { summarize = true, text = "Summarize the branch I am leaving" },
    { summarize = false, text = "Leave it without a summary" },
  }
  vim.ui.select(choices, {
    prompt = "contextd: summarize the branch you leave?",
    kind = "contextd.summarize",
    format_item = function(choice)
      return choice.text
    end,
  }, function(choice)
    if choice then
      on_answer(choice.summarize)
    end
  end)
end

local function deliver_editor_text(text)
  if config.options.on_editor_text then
    return config.options.on_editor_text(text)
  end
  vim.fn.setreg('"', text)
  info('the message text is in the unnamed register (") for editing and resending')
end

local function navigate(item, summarize)
  call("contextd/navigate", with_session({ targetId = item.id, summarize = summarize }), function(result)
    state.leaf_id = result.leafId
    state.changed()
    local summary = format.present(result.branchSummaryId) and " (the branch left is summarized)" or ""
    info("moved to " .. format.one_line(item.node.preview, 40) .. summary)
    if format.present(result.editorText) then
      deliver_editor_text(result.editorText)
    end
  end)
end

function M.tree()
  pick_entry("contextd: go to entry", function(item)
    if item.is_leaf then
      return info("already at that entry")
    end
    ask_summarize(function(summarize)
      navigate(item, summarize)
    end)
  end)
end

local function fork_at(entry_id)
  call("contextd/fork", with_session({ entryId = entry_id }), function(result)
    session.switch_to(result.sessionId, function(err)
      if err then
        return client.notify_error("open the forked session", err)
      end
      info("forked into the new session " .. result.sessionId)
    end)
  end)
end

function M.fork(entry_id)
  if non_empty(entry_id) then
    return fork_at(vim.trim(entry_id))
  end
  pick_entry("contextd: fork from entry", function(item)
    fork_at(item.id)
  end)
end

local function set_label(entry_id, label)
  call("contextd/label", with_session({ entryId = entry_id, label = label or vim.NIL }), function()
    info(label and ("labelled " .. entry_id .. " [" .. label .. "]") or ("cleared the label of " .. entry_id))
  end)
end

--- `:ContextdLabel text` labels the current leaf; without text, pick an entry and type a label
--- (an empty one clears it).
function M.label(text)
  local label = non_empty(text)
  if label then
    return session.when_ready(function(err)
      if err then
        return client.notify_error("label", err)
      end
      if not format.present(state.leaf_id) then
        return info("the session has no entries to label")
      end
      set_label(state.leaf_id, label)
    end)
  end
  pick_entry("contextd: label entry", function(item)
    local current = format.present(item.node.label) and item.node.label or ""
    vim.ui.input({ prompt = "Label (empty clears): ", default = current }, function(input)
      if input ~= nil then
        set_label(item.id, non_empty(input))
      end
    end)
  end)
end

function M.sessions()
  call("contextd/session/list", function()
    return { workspace = config.workspace() }
  end, function(result)
    local sessions = result.sessions or {}
    if #sessions == 0 then
      return info("no sessions in this workspace")
    end
    vim.ui.select(sessions, {
      prompt = "contextd: switch to session",
      kind = "contextd.sessions",
      format_item = function(item)
        return format.session_item(item, state.session_id)
      end,
    }, function(chosen)
      if not chosen then
        return
      end
      if chosen.sessionId == state.session_id then
        return info("already in that session")
      end
      session.switch_to(chosen.sessionId, function(err)
        if err then
          return client.notify_error("switch session", err)
        end
        info("switched to session " .. chosen.sessionId)
      end)
    end)
  end)
end

function M.idle(argument)
  local arg = vim.trim(argument or "")
  local params
  if arg == "off" then
    params = { enabled = false }
  elseif arg:match("^%d+$") and tonumber(arg) > 0 then
    params = { enabled = true, timeoutSeconds = tonumber(arg) }
  else
    return vim.notify("contextd: :ContextdIdle wants a number of seconds or off", levels.ERROR)
  end
  call("contextd/idle/configure", with_session(params), function()
    if params.enabled then
      info(string.format("idle compaction after %d s without activity", params.timeoutSeconds))
    else
      info("idle compaction off")
    end
  end)
end

function M.abort()
  call("contextd/compact/abort", with_session(), function(result)
    if type(result) == "table" and result.aborted == false then
      return info("no compaction is running")
    end
    info("compaction aborted")
  end)
end

local DEFINITIONS = {
  { "ContextdStatus", M.status, { nargs = 0, desc = "contextd: show the session's state" } },
  { "ContextdCompact", M.compact, { nargs = "*", desc = "contextd: compact now [instructions]" } },
  { "ContextdCompactPreview", M.compact_preview, { nargs = 0, desc = "contextd: what a compaction would do" } },
  { "ContextdHandoff", M.handoff, { nargs = "*", desc = "contextd: hand off to a new session [goal]" } },
  { "ContextdTree", M.tree, { nargs = 0, desc = "contextd: go to an entry of the session tree" } },
  { "ContextdFork", M.fork, { nargs = "?", desc = "contextd: fork a new session [entry id]" } },
  { "ContextdLabel", M.label, { nargs = "*", desc = "contextd: label the leaf [text], or pick an entry" } },
  { "ContextdSessions", M.sessions, { nargs = 0, desc = "contextd: switch to another session" } },
  {
    "ContextdIdle",
    M.idle,
    {
      nargs = 1,
      desc = "contextd: idle compaction after {seconds}, or off",
      complete = function()
        return { "off", "60", "300", "600" }
      end,
    },
  },
  { "ContextdAbort", M.abort, { nargs = 0, desc = "contextd: abort the running compaction" } },
}

function M.create()
  for _, definition in ipairs(DEFINITIONS) do
    local name, run, opts = definition[1], definition[2], definition[3]
    vim.api.nvim_create_user_command(name, function(command)
      run(command.args)
    end, opts)
  end
end

return M
