-- lualine component: sections = { lualine_x = { "contextd" } }
local component = require("lualine.component"):extend()

function component:init(options)
  component.super.init(self, options)
end

function component:update_status()
  return require("contextd").statusline()
end

return component
