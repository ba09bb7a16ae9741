-- Pure text formatting: no state, no RPC, no editor calls beyond string helpers.
local M = {}

local function present(value)
  return value ~= nil and value ~= vim.NIL
end
M.present = present

--- 950 -> "950", 84000 -> "84k", 1047576 -> "1.0M".
function M.tokens(n)
  if not present(n) then
    return "?"
  end
  if n < 1000 then
    return tostring(n)
  end
  local thousands = math.floor(n / 1000 + 0.5)
  if thousands < 1000 then
    return thousands .. "k"
  end
  return string.format("%.1fM", n / 1000000)
end

--- 84000 -> "84,000"
function M.thousands(n)
  if not present(n) then
    return "?"
  end
  local digits = tostring(math.floor(n))
  local grouped = digits:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (grouped:gsub("^,", ""))
end

function M.percent(p)
  if not present(p) then
    return "?%"
  end
  return string.format("%d%%", math.floor(p + 0.5))
end

-- Below this share of the threshold the statusline is "normal"; from it on, "warning".
local WARNING_SHARE = 0.8

--- How close the context is to compaction: "normal", "warning" (80% of the threshold),
--- "critical" (at or over it); "disconnected" when the daemon exited, "" when nothing runs.
function M.level(status, usage)
  if status == "exited" then
    return "disconnected"
  end
  if status ~= "running" or not usage then
    return ""
  end
  local threshold = usage.thresholdTokens
  if not present(threshold) or not present(usage.tokens) or threshold <= 0 then
    return "normal"
  end
  if usage.tokens >= threshold then
    return "critical"
  elseif usage.tokens >= threshold * WARNING_SHARE then
    return "warning"
  end
  return "normal"
end

local CUE = { warning = " !", critical = " !!" }

--- "2026-11-23T10:14:17.123Z" -> seconds since the epoch; nil when it is not such a time.
function M.parse_utc(text)
  if not present(text) then
    return nil
  end
  local y, mo, d, h, mi, s = tostring(text):match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)")
  if not y then
    return nil
  end
  local as_if_local = os.time({ year = y, month = mo, day = d, hour = h, min = mi, sec = s, isdst = false })
  -- os.time reads the table as local time: shift by the local offset at that moment.
  local offset = os.time(os.date("*t", as_if_local)) - os.time(os.date("!*t", as_if_local))
  return as_if_local + offset
end

--- An ISO 8601 UTC time in the user's local time, `pattern` an os.date pattern.
function M.local_time(text, pattern)
  local seconds = M.parse_utc(text)
  if not seconds then
    return present(text) and tostring(text) or "?"
  end
  return os.date(pattern or "%Y-%m-%d %H:%M", seconds)
end

local AGENT_NAMES = { ["claude-code"] = "Claude Code", codex = "Codex", pi = "pi" }

--- The name of the agent a mirrored session follows ("Claude Code"), from its `source`;
--- nil for a session of contextd's own clients.
function M.agent_name(source)
  if type(source) ~= "table" or not present(source.agent) then
    return nil
  end
  return AGENT_NAMES[source.agent] or tostring(source.agent)
end

--- How long a compaction has run, once it is long enough to wonder: " 12s", " 1m05s".
function M.elapsed(seconds)
  if not seconds or seconds < 5 then
    return ""
  end
  seconds = math.floor(seconds)
  if seconds < 60 then
    return string.format(" %ds", seconds)
  end
  return string.format(" %dm%02ds", math.floor(seconds / 60), seconds % 60)
end

--- The statusline text for the cached state (see :help contextd-statusline).
--- `view` is {status, usage, compacting, idle, agent}; `agent` names the agent of a
--- mirrored session, shown instead of "ctx".
function M.statusline(view)
  if view.status == "starting" then
    return "ctx starting…"
  elseif view.status == "exited" then
    return "ctx disconnected"
  end
  local usage = view.usage
  if view.status ~= "running" or not usage then
    return view.compacting and "ctx compacting…" or ""
  end
  local text = string.format(
    "%s %s/%s %s",
    view.agent or "ctx",
    M.tokens(usage.tokens),
    M.tokens(usage.contextWindow),
    M.percent(usage.percent)
  )
  if view.compacting then
    local doing = view.compacting.reason == "branch" and "summarizing branch…" or "compacting…"
    return text .. " " .. doing .. M.elapsed(view.compacting.elapsed_s)
  end
  text = text .. (CUE[M.level(view.status, usage)] or "")
  if view.idle and view.idle.state == "armed" and present(view.idle.dueAt) then
    text = text .. " idle " .. M.local_time(view.idle.dueAt, "%H:%M")
  end
  return text
end

--- One line, at most `width` characters (UTF-8 aware).
function M.one_line(text, width)
  if not present(text) then
    return ""
  end
  local flat = vim.trim((tostring(text):gsub("%s+", " ")))
  if vim.fn.strchars(flat) > width then
    return vim.fn.strcharpart(flat, 0, width - 1) .. "…"
  end
  return flat
end

-- The entries on the path to the leaf that the newest compaction on it folded into its
-- summary: the model sees the summary instead of them.
local function folded_ids(path)
  local folded = {}
  for i = #path, 1, -1 do
    local first_kept = path[i].firstKeptEntryId
    if path[i].type == "compaction" and present(first_kept) then
      local before = true
      for j = 1, i do
        if path[j].id == first_kept then
          before = false
        end
        if before then
          folded[path[j].id] = true
        end
      end
      break
    end
  end
  return folded
end

--- Flattens a `contextd/tree` result into display order (depth first, oldest child first),
--- each item with the `├─ `/`└─ ` connectors that draw it: a chain stays in its column and
--- only a branching point indents its children.
function M.tree_items(tree)
  local nodes = tree.nodes or {}
  local by_id, children, roots = {}, {}, {}
  for _, node in ipairs(nodes) do
    by_id[node.id] = node
  end
  for _, node in ipairs(nodes) do
    local parent = node.parentId
    if present(parent) and by_id[parent] then
      children[parent] = children[parent] or {}
      table.insert(children[parent], node)
    else
      table.insert(roots, node)
    end
  end

  local path, on_path = {}, {}
  local cursor = present(tree.leafId) and by_id[tree.leafId] or nil
  while cursor do
    table.insert(path, 1, cursor)
    on_path[cursor.id] = true
    cursor = present(cursor.parentId) and by_id[cursor.parentId] or nil
  end
  local folded = folded_ids(path)

  local items = {}
  -- An explicit stack: long sessions are deep chains that recursion would not survive.
  local stack = {}
  local function push_children(kids, prefix)
    for i = #kids, 1, -1 do
      if #kids == 1 then
        table.insert(stack, { node = kids[i], line = prefix, below = prefix })
      else
        local last = i == #kids
        table.insert(stack, {
          node = kids[i],
          line = prefix .. (last and "└─ " or "├─ "),
          below = prefix .. (last and "   " or "│  "),
        })
      end
    end
  end
  push_children(roots, "")
  while #stack > 0 do
    local top = table.remove(stack)
    local node = top.node
    table.insert(items, {
      id = node.id,
      node = node,
      prefix = top.line,
      is_leaf = node.id == tree.leafId,
      on_path = on_path[node.id] == true,
      folded = folded[node.id] == true,
    })
    push_children(children[node.id] or {}, top.below)
  end
  return items
end

-- The daemon clips a summary's one line to 140 characters; a preview is clipped shorter.
local SHORT_SUMMARY_WIDTH = 140
local PREVIEW_WIDTH = 60

-- What a tree line says a node is, and about it: a compaction or branch summary shows its
-- whole one-line summary (the preview would repeat the type and cut it at 60 characters),
-- a compaction also what it saved.
local function node_text(node)
  if present(node.shortSummary) then
    local kind = node.type == "branch_summary" and "branch summary" or node.type
    if present(node.tokensBefore) and present(node.tokensAfter) then
      kind = string.format("%s %s → %s", kind, M.tokens(node.tokensBefore), M.tokens(node.tokensAfter))
    end
    return kind, M.one_line(node.shortSummary, SHORT_SUMMARY_WIDTH)
  end
  return present(node.role) and node.role or node.type, M.one_line(node.preview, PREVIEW_WIDTH)
end

--- One line for a tree item: a mark (● the leaf, ○ folded into a summary), the connectors,
--- what it is, a preview (a summary's one line), its label and tokens.
function M.tree_item(item)
  local node = item.node
  local mark = item.is_leaf and "● " or (item.folded and "○ " or "  ")
  local kind, about = node_text(node)
  local text = string.format("%s%s%s: %s", mark, item.prefix, kind, about)
  if present(node.label) then
    text = text .. "  [" .. node.label .. "]"
  end
  if present(node.tokens) then
    text = text .. "  · " .. M.tokens(node.tokens)
  end
  return text
end

--- Which session the statusline shows, when it is not the current one:
--- `Claude Code session "fix tests" (01a1…)`.
function M.shown_session(shown)
  local who = M.agent_name(shown.source)
  local name = present(shown.name) and (' "' .. shown.name .. '"') or ""
  return string.format("%s session%s (%s)", who or "another", name, shown.session_id or "?")
end

--- A session/list row for the picker: ● marks the current session; a mirror starts with
--- its agent's name and says it is read-only; a damaged file says why it cannot be opened.
function M.session_item(session, current_id)
  local marker = session.sessionId == current_id and "● " or "  "
  if present(session.damaged) then
    return string.format("%s✗ damaged: %s · %s", marker, session.damaged, session.sessionId)
  end
  local name = present(session.name) and session.name or "(unnamed)"
  local agent = M.agent_name(session.source)
  if agent then
    -- An unnamed mirror is told apart by its transcript's file name.
    if not present(session.name) and present(session.source.path) then
      name = vim.fn.fnamemodify(session.source.path, ":t")
    end
    name = string.format("%s · %s (read-only mirror)", agent, name)
  end
  local updated = M.local_time(session.updatedAt)
  return string.format(
    "%s%s · %s entries · %s tokens · %s · %s",
    marker,
    name,
    present(session.entries) and session.entries or "?",
    M.tokens(session.tokens),
    updated,
    session.sessionId
  )
end

--- Lines for :ContextdStatus from a `contextd/session/state` result.
function M.status_lines(state, server_version)
  local usage = state.usage or {}
  local lines = {
    string.format(
      "session %s%s · daemon %s",
      state.sessionId or "?",
      present(state.name) and (' "' .. state.name .. '"') or "",
      server_version or "?"
    ),
    string.format(
      "model %s · %s / %s tokens (%s) · threshold %s · source %s",
      state.model or usage.model or "?",
      M.thousands(usage.tokens),
      M.thousands(usage.contextWindow or state.contextWindow),
      M.percent(usage.percent),
      M.thousands(usage.thresholdTokens),
      usage.source or "?"
    ),
  }
  local parts = usage.breakdown
  if type(parts) == "table" then
    -- Where the tokens are; "unseen" is what the agent sends that contextd never sees.
    table.insert(lines, string.format(
      "instructions %s · summary %s · messages %s · unseen %s",
      M.thousands(parts.instructions),
      M.thousands(parts.summary),
      M.thousands(parts.messages),
      M.thousands(parts.unseen)
    ))
  end
  vim.list_extend(lines, {
    string.format(
      "entries %s · leaf %s · compacting: %s",
      present(state.entries) and state.entries or "?",
      present(state.leafId) and state.leafId or "(empty)",
      state.compacting and "yes" or "no"
    ),
  })
  if present(state.workspace) then
    table.insert(lines, "workspace " .. state.workspace)
  end
  local agent = M.agent_name(state.source)
  if agent then
    table.insert(lines, string.format("read-only mirror of a %s session: %s", agent, state.source.path or "?"))
    vim.list_extend(lines, M.agent_point_lines(agent, usage.agentCompaction))
  end
  return lines
end

--- Why a full session was not compacted, and what to do, from a compactionFinished body
--- with outcome "skipped" (the recent part a compaction keeps holds all of the history).
function M.skip_lines(finished)
  return {
    string.format("not compacted: the %s compaction found %s", finished.reason or "?", finished.error or "nothing to compact"),
    "what to do: :Contextd handoff continues in a fresh session; a smaller compaction.keepRecentTokens leaves a compaction older history to fold",
  }
end

--- Who compacts a mirror and where: its agent, at the point the daemon worked out from the
--- agent's rule and settings (a tokenUsage's `agentCompaction`), and how it knows.
function M.agent_point_lines(agent, point)
  local never = "; contextd never compacts a mirror"
  if type(point) ~= "table" then
    return { agent .. " compacts this session itself, when it decides to" .. never }
  end
  local who = string.format("%s does not compact this session on its own (its auto-compaction is off)", agent)
  if point.enabled and present(point.tokens) then
    who = string.format("%s compacts this session itself at ~%s tokens (%s)", agent, M.tokens(point.tokens), M.percent(point.percent))
  end
  return { who .. never, "how contextd knows: " .. tostring(point.basis or "?") }
end

function M.preview_lines(plan)
  local function count(list)
    return present(list) and #list or 0
  end
  return {
    "compaction preview:",
    string.format(
      "summarize %d entries, keep %d, prune %d tool results",
      count(plan.summarizeEntryIds),
      count(plan.keptEntryIds),
      count(plan.pruneEntryIds)
    ),
    string.format(
      "tokens %s → %s (first kept entry %s)",
      M.thousands(plan.tokensBefore),
      M.thousands(plan.tokensAfter),
      present(plan.firstKeptEntryId) and plan.firstKeptEntryId or "none"
    ),
  }
end

return M
