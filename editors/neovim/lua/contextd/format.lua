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

--- The statusline text for a cached session state; "" when there is nothing to show.
function M.statusline(usage, compacting)
  if not usage then
    return compacting and "ctx compacting…" or ""
  end
  local text = string.format(
    "ctx %s/%s %s",
    M.tokens(usage.tokens),
    M.tokens(usage.contextWindow),
    M.percent(usage.percent)
  )
  if compacting then
    text = text .. " compacting…"
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

--- Flattens a `contextd/tree` result into display order (depth first, oldest child first).
--- Depth grows only where the history branches, so a linear session stays flush left.
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

  local on_path = {}
  local cursor = present(tree.leafId) and by_id[tree.leafId] or nil
  while cursor do
    on_path[cursor.id] = true
    cursor = present(cursor.parentId) and by_id[cursor.parentId] or nil
  end

  local items = {}
  -- An explicit stack: long sessions are deep chains that recursion would not survive.
  local stack = {}
  for i = #roots, 1, -1 do
    table.insert(stack, { node = roots[i], depth = #roots > 1 and 1 or 0 })
  end
  while #stack > 0 do
    local top = table.remove(stack)
    local node = top.node
    table.insert(items, {
      id = node.id,
      node = node,
      depth = top.depth,
      is_leaf = node.id == tree.leafId,
      on_path = on_path[node.id] == true,
    })
    local kids = children[node.id] or {}
    local child_depth = top.depth + (#kids > 1 and 1 or 0)
    for i = #kids, 1, -1 do
      table.insert(stack, { node = kids[i], depth = child_depth })
    end
  end
  return items
end

function M.tree_item(item)
  local node = item.node
  local marker = item.is_leaf and "● " or (item.on_path and "│ " or "  ")
  local kind = present(node.role) and node.role or node.type
  local text = string.format(
    "%s%s%s: %s",
    marker,
    string.rep("  ", item.depth),
    kind,
    M.one_line(node.preview, 72)
  )
  if present(node.label) then
    text = text .. "  [" .. node.label .. "]"
  end
  if present(node.tokens) then
    text = text .. "  · " .. M.tokens(node.tokens)
  end
  return text
end

function M.session_item(session, current_id)
  local marker = session.sessionId == current_id and "● " or "  "
  local name = present(session.name) and session.name or "(unnamed)"
  local updated = present(session.updatedAt) and tostring(session.updatedAt):sub(1, 16):gsub("T", " ")
    or "?"
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
      "contextd %s · session %s%s",
      server_version or "?",
      state.sessionId or "?",
      present(state.name) and (' "' .. state.name .. '"') or ""
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
    string.format(
      "entries %s · leaf %s · compacting: %s",
      present(state.entries) and state.entries or "?",
      present(state.leafId) and state.leafId or "(empty)",
      state.compacting and "yes" or "no"
    ),
  }
  if present(state.workspace) then
    table.insert(lines, "workspace " .. state.workspace)
  end
  return lines
end

function M.preview_lines(plan)
  local function count(list)
    return present(list) and #list or 0
  end
  return {
    "contextd compaction preview:",
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
