-- Options of require("contextd").setup() and the daemon command line they produce.
local M = {}

M.defaults = {
  -- The program that runs contextd, as a list, e.g. { "contextd" }. When nil, `python -m contextd`.
  cmd = nil,
  -- The Python interpreter used when `cmd` is nil.
  python = "python3",
  -- Where sessions live (`contextd --data-dir`); nil lets the daemon choose.
  data_dir = nil,
  -- The daemon's log level; its stderr goes to Neovim's LSP log.
  log_level = "WARNING",
  -- The settings object of protocol.md, sent as initializationOptions.
  settings = {},
  -- The workspace sessions belong to; nil means the current directory.
  workspace = nil,
  -- Resume this session id; when nil and `resume` is true, the newest session of the workspace.
  session_id = nil,
  resume = true,
  -- Name and model of a newly created session.
  session_name = nil,
  model = nil,
  -- How long the synchronous API waits for an answer.
  timeout_ms = 10000,
  -- How long the daemon may take to start and open the session before it counts as failed.
  start_timeout_ms = 30000,
  -- Receives a user message's text after :ContextdTree navigates to it (for editing and
  -- resending). nil puts it in the unnamed register.
  on_editor_text = nil,
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  return M.options
end

function M.workspace()
  local path = vim.fn.fnamemodify(M.options.workspace or vim.fn.getcwd(), ":p")
  return (path:gsub("(.)/$", "%1"))
end

--- The program part of the command: `cmd`, or `python -m contextd`.
function M.program()
  if M.options.cmd then
    return vim.deepcopy(M.options.cmd)
  end
  return { M.options.python, "-m", "contextd" }
end

--- The full `... serve` command line.
function M.serve_cmd()
  local cmd = M.program()
  if M.options.data_dir then
    vim.list_extend(cmd, { "--data-dir", vim.fn.fnamemodify(M.options.data_dir, ":p") })
  end
  if M.options.log_level then
    vim.list_extend(cmd, { "--log-level", M.options.log_level })
  end
  table.insert(cmd, "serve")
  return cmd
end

--- The settings as JSON wants them: an empty table must still be an object.
function M.settings()
  local settings = M.options.settings or {}
  if next(settings) == nil then
    return vim.empty_dict()
  end
  return settings
end

return M
