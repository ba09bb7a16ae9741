-- The session tree in a floating window: one line per entry, the leaf under the cursor,
-- and keys that act on the entry under it.
local format = require("contextd.format")
local state = require("contextd.state")

local M = {}

local HEADER = "<CR> go here  s go + summarize the branch left  f fork  l label  q close"
-- Only the agent moves a mirror's leaf or labels it: forking is what a reader can do.
local MIRROR_HEADER = "read-only mirror of a %s session · f fork a session of your own  q close"

local function close(window)
  if vim.api.nvim_win_is_valid(window) then
    vim.api.nvim_win_close(window, true)
  end
end

-- key -> { what it does, action(node) }; the window closes before the action runs.
local function actions()
  local commands = require("contextd.commands")
  return {
    ["<CR>"] = function(item)
      if item.is_leaf then
        return require("contextd.notify").info("already at that entry")
      end
      commands.navigate(item.node, false)
    end,
    s = function(item)
      if item.is_leaf then
        return require("contextd.notify").info("already at that entry")
      end
      commands.navigate(item.node, true)
    end,
    f = function(item)
      commands.fork(item.id)
    end,
    l = function(item)
      commands.ask_label(item.node)
    end,
  }
end

--- Opens the tree of a `contextd/tree` result; returns the window.
function M.open(tree)
  local items = format.tree_items(tree)
  if #items == 0 then
    return require("contextd.notify").info("the session has no entries yet")
  end
  local agent = format.agent_name(state.source)
  local lines = { agent and MIRROR_HEADER:format(agent) or HEADER }
  local leaf_line = 2
  for i, item in ipairs(items) do
    lines[i + 1] = format.tree_item(item)
    if item.is_leaf then
      leaf_line = i + 1
    end
  end

  local buffer = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buffer, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(buffer, "modifiable", false)
  vim.api.nvim_buf_set_option(buffer, "bufhidden", "wipe")
  vim.api.nvim_buf_set_option(buffer, "filetype", "contextd-tree")

  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 1, math.max(vim.o.columns - 4, 20))
  local height = math.min(#lines, math.max(vim.o.lines - 4, 3))
  local window = vim.api.nvim_open_win(buffer, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = "rounded",
  })
  vim.api.nvim_win_set_option(window, "cursorline", true)
  vim.api.nvim_win_set_cursor(window, { leaf_line, 0 })

  local namespace = vim.api.nvim_create_namespace("contextd-tree")
  vim.api.nvim_buf_add_highlight(buffer, namespace, "Comment", 0, 0, -1)
  for i, item in ipairs(items) do
    if item.folded then
      vim.api.nvim_buf_add_highlight(buffer, namespace, "Comment", i, 0, -1)
    elseif item.is_leaf then
      vim.api.nvim_buf_add_highlight(buffer, namespace, "Title", i, 0, -1)
    end
  end

  for key, action in pairs(actions()) do
    vim.keymap.set("n", key, function()
      local item = items[vim.api.nvim_win_get_cursor(window)[1] - 1]
      close(window)
      if item then
        action(item)
      end
    end, { buffer = buffer, nowait = true, desc = "contextd tree" })
  end
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, function()
      close(window)
    end, { buffer = buffer, nowait = true, desc = "contextd: close the tree" })
  end
  return window
end

return M
