-- lualine component: require("lualine").setup({ sections = { lualine_x = { "contextd" } } })
local component = require("lualine.component"):extend()

function component:update_status()
  return require("contextd").statusline()
end

return component
