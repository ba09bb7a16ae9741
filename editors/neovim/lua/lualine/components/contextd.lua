-- lualine component: require("lualine").setup({ sections = { lualine_x = { "contextd" } } })
-- Its colour follows require("contextd").level() through the ContextdStatus* highlight
-- groups (see :help contextd-lualine); `color = ...` in the section overrides it.
local component = require("lualine.component"):extend()

local GROUP_BY_LEVEL = {
  warning = "ContextdStatusWarning",
  critical = "ContextdStatusCritical",
  disconnected = "ContextdStatusDisconnected",
}

-- The group's foreground on the section's own background.
local function colour_by_level()
  local group = GROUP_BY_LEVEL[require("contextd").level()]
  if not group then
    return nil
  end
  return { fg = require("lualine.utils.utils").extract_highlight_colors(group, "fg") }
end

function component:init(options)
  if options.color == nil then
    options.color = colour_by_level
  end
  component.super.init(self, options)
end

function component:update_status()
  -- lualine reads its components' text as statusline items: a bare % is an error (E539).
  return require("contextd").statusline({ escape = true })
end

return component
