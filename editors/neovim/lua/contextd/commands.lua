-- :Contextd {subcommand}: each one asks the daemon and reports with one message.
local client = require("contextd.client")
local config = require("contextd.config")
local format = require("contextd.format")
local notify = require("contextd.notify")
local session = require("contextd.session")
local state = require("contextd.state")

local M = {}

--- Sends `method` once a session is current; `build_params()` runs then, so it can read
--- the current session id. Errors go to `on_error(err)` first, which returns true when it
--- reported them itself; else they are shown as "`what`: why", except a cancelled request
--- (whoever cancelled it reports that). `on_result(result)` gets the rest.
local function call(what, method, build_params, on_result, on_error)
  session.when_ready(function(ready_err)
    local function failed(err)
      if on_error and on_error(err) then
        return
      end
      if err.code ~= client.codes.cancelled then
        client.notify_error(what, err)
      end
    end
    if ready_err then
      return failed(ready_err)
    end
    return client.request(method, build_params(), function(err, result)
      if err then
        return failed(err)
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
  call("status", "contextd/session/state", with_session(), function(result)
    state.leaf_id = result.leafId
    state.usage = result.usage or state.usage
    state.changed()
    local lines = format.status_lines(result, state.server_version)
    local usage = result.usage or {}
    local over = format.present(usage.tokens) and format.present(usage.thresholdTokens) and usage.tokens >= usage.thresholdTokens
    if state.skipped and over then
      vim.list_extend(lines, format.skip_lines(state.skipped))
    end
    if state.idle and state.idle.state == "armed" then
      table.insert(lines, "idle compaction at " .. format.local_time(state.idle.dueAt, "%H:%M:%S"))
    end
    local shown = state.shown()
    if not shown.current then
      table.insert(lines, "the statusline shows the latest change: " .. format.shown_session(shown))
    end
    notify.info(table.concat(lines, "\n"))
  end)
end

function M.compact(instructions)
  call("compact", "contextd/compact", with_session({ instructions = non_empty(instructions) }), function(result)
    notify.info(string.format(
      "compacted %s → %s tokens",
      format.tokens(result.tokensBefore),
      format.tokens(result.tokensAfter)
    ))
  end)
end

-- A document in a scratch buffer of its own (a split), as Markdown, ready to read or copy.
local function show_document(name, text)
  vim.cmd("botright new")
  local buffer = vim.api.nvim_get_current_buf()
  vim.bo[buffer].buftype = "nofile"
  vim.bo[buffer].bufhidden = "wipe"
  vim.bo[buffer].swapfile = false
  pcall(vim.api.nvim_buf_set_name, buffer, name)
  vim.api.nvim_buf_set_lines(buffer, 0, -1, false, vim.split(text or "", "\n", { plain = true }))
  vim.bo[buffer].modified = false
  vim.bo[buffer].filetype = "markdown"
  return buffer
end
M.show_document = show_document

function M.preview()
  call("compaction preview", "contextd/compact", with_session({ dryRun = true }), function(plan)
    notify.info(table.concat(format.preview_lines(plan), "\n"))
    if format.present(plan.summary) then
      show_document("contextd://preview/" .. state.session_id, plan.summary)
    end
  end)
end

function M.handoff(goal)
  state.handoff_requested = true
  local params = with_session({ goal = non_empty(goal) })
  call("handoff", "contextd/handoff", params, function(result)
    state.handoff_requested = nil
    session.follow_handoff(result.sessionId)
    show_document("contextd://handoff/" .. result.sessionId, result.document)
  end, function()
    state.handoff_requested = nil
  end)
end

-- Lets the user pick an entry of the session's tree; `on_pick(item)` gets a format.tree_items item.
local function pick_entry(prompt, on_pick)
  call("tree", "contextd/tree", with_session(), function(tree)
    local items = format.tree_items(tree)
    if #items == 0 then
      return notify.info("the session has no entries yet")
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

local function deliver_editor_text(text)
  if config.options.on_editor_text then
    config.options.on_editor_text(text)
    return ""
  end
  vim.fn.setreg('"', text)
  return '; its text is in the unnamed register (") for editing and resending'
end

--- Moves the leaf to `node` (a tree node), leaving a summary of the branch left when
--- `summarize`. One message when it is done.
function M.navigate(node, summarize)
  if summarize then
    -- The daemon reports the summary as a job too; this shows it before the first event.
    state.compacting = state.compacting or { reason = "branch" }
    state.changed()
  end
  local function done()
    if state.compacting and state.compacting.reason == "branch" then
      state.compacting = nil
      state.changed()
    end
  end
  local params = with_session({ targetId = node.id, summarize = summarize })
  call("could not move", "contextd/navigate", params, function(result)
    done()
    state.leaf_id = result.leafId
    state.changed()
    local text = "moved to " .. format.one_line(node.preview, 40)
    if format.present(result.branchSummaryId) then
      text = text .. " and summarized the branch left"
    end
    if format.present(result.editorText) then
      text = text .. deliver_editor_text(result.editorText)
    end
    notify.info(text)
  end, function(err)
    done()
    if err.code == client.codes.nothing_to_compact then
      -- A summary that does not fit: the user asked for it, so this is a warning.
      notify.warn("could not move: " .. client.describe_error(err):gsub("^nothing to compact: ", ""))
      return true
    end
  end)
end

function M.tree()
  call("tree", "contextd/tree", with_session(), function(tree)
    require("contextd.tree_view").open(tree)
  end)
end

function M.fork(entry_id)
  local function fork_at(id)
    call("fork", "contextd/fork", with_session({ entryId = id }), function(result)
      session.switch_to(result.sessionId, function(err)
        if err then
          return client.notify_error("could not open the forked session", err)
        end
        notify.info("forked into the new session " .. result.sessionId)
      end)
    end)
  end
  if non_empty(entry_id) then
    return fork_at(vim.trim(entry_id))
  end
  pick_entry("contextd: fork from entry", function(item)
    fork_at(item.id)
  end)
end

local function set_label(entry_id, label)
  call("label", "contextd/label", with_session({ entryId = entry_id, label = label or vim.NIL }), function()
    notify.info(label and ("labelled " .. entry_id .. " [" .. label .. "]") or ("cleared the label of " .. entry_id))
  end)
end

--- Asks for the label of `node` (a tree node); empty input clears it. Neovim 0.7's
--- vim.ui.input gives nil for empty input as for a cancelled one, so a nil answer on a
--- labelled entry asks whether to clear.
function M.ask_label(node)
  local current = format.present(node.label) and node.label or ""
  vim.ui.input({ prompt = "Label (empty clears): ", default = current }, function(input)
    if input ~= nil then
      return set_label(node.id, non_empty(input))
    end
    if current == "" then
      return
    end
    local choices = { "Clear the label [" .. current .. "]", "Keep it" }
    vim.ui.select(choices, { prompt = "contextd: clear the label?", kind = "contextd.confirm" }, function(_, index)
      if index == 1 then
        set_label(node.id, nil)
      end
    end)
  end)
end

--- `:Contextd label text` labels the current leaf; without text, pick an entry and type a
--- label (an empty one clears it).
function M.label(text)
  local label = non_empty(text)
  if label then
    return session.when_ready(function(err)
      if err then
        return client.notify_error("label", err)
      end
      if not format.present(state.leaf_id) then
        return notify.info("the session has no entries to label")
      end
      set_label(state.leaf_id, label)
    end)
  end
  pick_entry("contextd: label entry", function(item)
    M.ask_label(item.node)
  end)
end

local function switch_session(session_id)
  if session_id == state.session_id then
    return notify.info("already in that session")
  end
  session.switch_to(session_id, function(err)
    if err then
      return client.notify_error("could not switch session", err)
    end
    notify.info("switched to session " .. session_id)
  end)
end

function M.sessions(argument)
  if non_empty(argument) then
    local session_id = vim.trim(argument):match("^%S+") -- a completed name follows the id
    return session.when_ready(function(err)
      if err then
        return client.notify_error("sessions", err)
      end
      switch_session(session_id)
    end)
  end
  call("sessions", "contextd/session/list", function()
    return { workspace = config.workspace() }
  end, function(result)
    local sessions = result.sessions or {}
    if #sessions == 0 then
      return notify.info("no sessions in this workspace")
    end
    vim.ui.select(sessions, {
      prompt = "contextd: switch to session",
      kind = "contextd.sessions",
      format_item = function(item)
        return format.session_item(item, state.session_id)
      end,
    }, function(chosen)
      if chosen and format.present(chosen.damaged) then
        -- Nothing to open: say why, as the picker did.
        return notify.warn(string.format("session %s is damaged: %s", chosen.sessionId, chosen.damaged))
      end
      if chosen then
        switch_session(chosen.sessionId)
      end
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
    return notify.error("idle wants a number of seconds or off, e.g. :Contextd idle 300")
  end
  call("idle", "contextd/idle/configure", with_session(params), function()
    if params.enabled then
      notify.info(string.format("idle compaction after %d s without activity", params.timeoutSeconds))
    else
      notify.info("idle compaction off")
    end
  end)
end

--- Aborts the running compaction, handoff or branch summary. A branch summary this editor
--- asked for of a daemon that cannot abort it is cancelled instead ($/cancelRequest).
function M.abort()
  local running = state.compacting
  local what = ({ branch = "branch summary", handoff = "handoff" })[running and running.reason] or "compaction"
  state.abort_requested = true
  call("abort", "contextd/compact/abort", with_session(), function(result)
    if type(result) == "table" and result.aborted == false then
      local navigation = client.pending_ids("contextd/navigate")[1]
      if navigation and client.cancel(navigation) then
        return notify.info("branch summary cancelled; nothing moved")
      end
      state.abort_requested = nil
      return notify.info("no compaction is running")
    end
    notify.info(what .. " aborted; the session is as it was")
  end, function()
    state.abort_requested = nil
  end)
end

function M.start()
  if state.status == "running" or state.status == "starting" then
    return notify.info("the daemon is already " .. state.status)
  end
  session.start()
end

function M.stop()
  session.stop()
  notify.info("the daemon stopped")
end

function M.restart()
  session.restart()
end

-- Completion candidates that need the daemon: asked synchronously, so briefly.
local COMPLETION_TIMEOUT_MS = 500

local function complete_entry_ids()
  if not state.session_id then
    return {}
  end
  local tree = client.request_sync("contextd/tree", { sessionId = state.session_id }, COMPLETION_TIMEOUT_MS)
  return vim.tbl_map(function(node)
    return node.id
  end, tree and tree.nodes or {})
end

-- A completion candidate shows the session's name after its id; only the first word is
-- the argument (`M.sessions` reads the id alone).
local function session_candidate(listed)
  if not format.present(listed.name) then
    return listed.sessionId
  end
  return listed.sessionId .. " " .. listed.name:gsub("%s+", " ")
end

-- Sessions, found by their id or by their name: `:Contextd sessions pars<Tab>` offers
-- "<id> parser work" for the session named "parser work". A damaged session is not offered:
-- it cannot be switched to (the picker lists it with its reason).
local function complete_session_ids(lead)
  if not state.session_id then
    return {}
  end
  local listing = client.request_sync("contextd/session/list", { workspace = config.workspace() }, COMPLETION_TIMEOUT_MS)
  local found = {}
  for _, listed in ipairs(listing and listing.sessions or {}) do
    local name = format.present(listed.name) and listed.name:lower() or ""
    local matches = vim.startswith(listed.sessionId, lead) or (lead ~= "" and name:find(lead:lower(), 1, true))
    if matches and not format.present(listed.damaged) then
      table.insert(found, session_candidate(listed))
    end
  end
  return found
end

-- name -> { run(args), what it does, complete(lead)?, legacy command name? }
M.subcommands = {
  status = { M.status, "show the session", legacy = "ContextdStatus" },
  compact = { M.compact, "compact now [instructions]", legacy = "ContextdCompact" },
  preview = { M.preview, "what a compaction would do", legacy = "ContextdCompactPreview" },
  handoff = { M.handoff, "hand off to a new session [goal]", legacy = "ContextdHandoff" },
  tree = { M.tree, "the session tree, to move, fork, label", legacy = "ContextdTree" },
  fork = { M.fork, "fork a new session [entry id]", complete = complete_entry_ids, legacy = "ContextdFork" },
  label = { M.label, "label the leaf [text], or pick an entry", legacy = "ContextdLabel" },
  sessions = { M.sessions, "switch session [session id]", complete = complete_session_ids, legacy = "ContextdSessions" },
  idle = {
    M.idle,
    "idle compaction after {seconds}, or off",
    complete = function()
      return { "off", "60", "300", "600" }
    end,
    legacy = "ContextdIdle",
  },
  abort = { M.abort, "abort the running compaction or branch summary", legacy = "ContextdAbort" },
  start = { M.start, "start the daemon" },
  stop = { M.stop, "stop the daemon" },
  restart = { M.restart, "restart the daemon with the same options" },
}

local function subcommand_names()
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  return names
end

local function starting_with(candidates, lead)
  return vim.tbl_filter(function(candidate)
    return vim.startswith(candidate, lead)
  end, candidates)
end

--- Completion of `:Contextd `: subcommands, then what the subcommand takes.
function M.complete(lead, line, cursor)
  local before = line:sub(1, cursor)
  local words = vim.split(vim.trim(before), "%s+")
  local typing_first = #words == 1 or (#words == 2 and not before:match("%s$"))
  if typing_first then
    return starting_with(subcommand_names(), lead)
  end
  local subcommand = M.subcommands[words[2]]
  if subcommand and subcommand.complete == complete_session_ids then
    return complete_session_ids(lead)
  end
  if subcommand and subcommand.complete then
    return starting_with(subcommand.complete(), lead)
  end
  return {}
end

function M.run(args)
  local name, rest = vim.trim(args or ""):match("^(%S*)%s*(.-)$")
  if name == "" then
    name = "tree"
  end
  local subcommand = M.subcommands[name]
  if not subcommand then
    return notify.error(string.format("no subcommand %q; :Contextd <Tab> lists them", name))
  end
  subcommand[1](rest)
end

function M.create()
  vim.api.nvim_create_user_command("Contextd", function(command)
    M.run(command.args)
  end, { nargs = "*", bar = true, complete = M.complete, desc = "contextd: {subcommand}, see :help contextd-commands" })
  -- The older one-command-per-action names keep working.
  for name, subcommand in pairs(M.subcommands) do
    if subcommand.legacy then
      vim.api.nvim_create_user_command(subcommand.legacy, function(command)
        subcommand[1](command.args)
      end, { nargs = "*", bar = true, desc = "contextd: :Contextd " .. name })
    end
  end
end

return M
