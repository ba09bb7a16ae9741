-- Every message the plugin shows: one vim.notify per event, titled "contextd" for
-- notification plugins (nvim-notify, fidget), prefixed for the plain message area.
local levels = vim.log.levels

local M = {}

function M.show(text, level)
  vim.notify("contextd: " .. text, level or levels.INFO, { title = "contextd" })
end

function M.info(text)
  M.show(text, levels.INFO)
end

function M.warn(text)
  M.show(text, levels.WARN)
end

function M.error(text)
  M.show(text, levels.ERROR)
end

return M
