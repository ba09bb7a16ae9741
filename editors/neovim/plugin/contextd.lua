-- :help contextd works without a manual :helptags: the tags file is made (or remade when the
-- help changed) the first time Neovim loads the plugin. A read-only install keeps its own.
local doc = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/doc"
local help, tags = doc .. "/contextd.txt", doc .. "/tags"
if vim.fn.filereadable(help) == 1 and vim.fn.getftime(tags) < vim.fn.getftime(help) and vim.fn.filewritable(doc) == 2 then
  pcall(vim.cmd, "silent helptags " .. vim.fn.fnameescape(doc))
end
