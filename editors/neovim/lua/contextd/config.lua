-- Options of require("contextd").setup() and the daemon command line they produce.
local M = {}

M.defaults = {
  -- The program that runs contextd: a path ("~/.local/bin/contextd") or a list with its
  -- arguments ({ "uvx", "contextd" }). When nil, `python -m contextd`.
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
  -- Start the daemon in setup(); when false it starts on the first command or API call.
  autostart = true,
  -- Attach to the per-user shared daemon (`contextd serve --shared`, started on demand), so
  -- that editors in one project share its sessions; false runs a daemon of this editor's own.
  shared = true,
  -- What the statusline shows: "latest", the workspace's session that changed last, whoever
  -- drives it (this editor, another client, a mirror of Claude Code, Codex or pi);
  -- "current", always the session this editor works on.
  statusline_session = "latest",
  -- The longest the synchronous API (and command-line completion) blocks the editor.
  timeout_ms = 3000,
  -- How long the daemon may take to start and open the session before it counts as failed.
  start_timeout_ms = 30000,
  -- Receives a user message's text after navigating to it (for editing and resending).
  -- nil puts it in the unnamed register.
  on_editor_text = nil,
}

local LOG_LEVELS = { DEBUG = true, INFO = true, WARNING = true, ERROR = true }

local function positive(value)
  return type(value) == "number" and value > 0
end

local function is_command(value)
  if type(value) == "string" then
    return value ~= ""
  end
  if type(value) ~= "table" or #value == 0 or vim.tbl_count(value) ~= #value then
    return false
  end
  for _, part in ipairs(value) do
    if type(part) ~= "string" then
      return false
    end
  end
  return true
end

-- option -> a vim.validate type name or { check(value), what is expected }.
local VALIDATORS = {
  cmd = { is_command, "a program path or a list of strings" },
  python = "string",
  data_dir = "string",
  log_level = { function(v) return LOG_LEVELS[v] == true end, "DEBUG, INFO, WARNING or ERROR" },
  settings = "table",
  workspace = "string",
  session_id = "string",
  resume = "boolean",
  session_name = "string",
  model = "string",
  autostart = "boolean",
  shared = "boolean",
  statusline_session = {
    function(v)
      return v == "latest" or v == "current"
    end,
    '"latest" or "current"',
  },
  timeout_ms = { positive, "a positive number of milliseconds" },
  start_timeout_ms = { positive, "a positive number of milliseconds" },
  on_editor_text = "callable",
}

-- vim.validate's table form is deprecated from 0.11 on; 0.7 has only that form.
local function validate(name, value, validator)
  if vim.fn.has("nvim-0.11") == 1 then
    if type(validator) == "table" then
      return vim.validate(name, value, validator[1], validator[2])
    end
    return vim.validate(name, value, validator, true)
  end
  if type(validator) == "table" then
    return vim.validate({ [name] = { value, validator[1], validator[2] } })
  end
  return vim.validate({ [name] = { value, validator, true } })
end

--- Every problem with `opts`, one line each; empty when they are fine.
function M.problems(opts)
  if type(opts) ~= "table" then
    return { "setup() wants a table of options, got " .. type(opts) }
  end
  local problems = {}
  for name, value in pairs(opts) do
    local validator = VALIDATORS[name]
    if not validator then
      table.insert(problems, string.format("unknown option %s (see :help contextd-setup)", tostring(name)))
    elseif value ~= nil then
      local ok, err = pcall(validate, name, value, validator)
      if not ok then
        -- vim.validate's message without the "file:line: " it was raised at.
        table.insert(problems, (tostring(err):gsub("^[^\n]-:%d+: ", "")))
      end
    end
  end
  table.sort(problems)
  return problems
end

M.options = vim.deepcopy(M.defaults)

--- Applies `opts` over the defaults; nil keeps the options in effect (so `setup()` restarts
--- with them). Returns nil, or the problems and leaves the options as they were.
function M.set(opts)
  if opts == nil then
    return nil
  end
  local problems = M.problems(opts)
  if #problems > 0 then
    return problems
  end
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  return nil
end

function M.workspace()
  local path = vim.fn.fnamemodify(M.options.workspace or vim.fn.getcwd(), ":p")
  return (path:gsub("(.)/$", "%1"))
end

--- The program part of the command, as a list: `cmd`, or `python -m contextd`.
function M.program()
  local cmd = M.options.cmd
  if type(cmd) == "string" then
    return { vim.fn.expand(cmd) }
  elseif cmd then
    return vim.deepcopy(cmd)
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
  if M.options.shared then
    table.insert(cmd, "--shared")
  end
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
