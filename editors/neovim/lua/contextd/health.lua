-- :checkhealth contextd. Neovim 0.7 reports through require("health").report_*,
-- 0.10+ through vim.health.start/ok/...; 0.8-0.9 have both.
local client = require("contextd.client")
local config = require("contextd.config")
local state = require("contextd.state")

local M = {}

local health = vim.health or require("health")
local report = {
  start = health.start or health.report_start,
  ok = health.ok or health.report_ok,
  info = health.info or health.report_info,
  warn = health.warn or health.report_warn,
  error = health.error or health.report_error,
}

-- Every setting the daemon knows, by dotted name (the suite checks it against the daemon's
-- list); under `models` and `follow.roots` the keys are the user's own names.
local KNOWN_SETTINGS = {
  "defaultModel",
  "compaction.enabled", "compaction.strategy", "compaction.reserveTokens",
  "compaction.keepRecentTokens", "compaction.thresholdPercent", "compaction.thresholdTokens",
  "compaction.hookTimeoutSeconds", "compaction.readTools", "compaction.modifyTools",
  "compaction.promotion",
  "pruning.enabled", "pruning.protectTokens", "pruning.minimumSavings", "pruning.protectedTools",
  "idle.enabled", "idle.timeoutSeconds", "idle.thresholdTokens", "idle.thresholdPercent",
  "branchSummary.reserveTokens",
  "summarizer.provider", "summarizer.model", "summarizer.baseUrl", "summarizer.apiKeyEnv",
  "summarizer.remoteEndpoint", "summarizer.maxRetries", "summarizer.timeoutSeconds",
  "summarizer.fallback",
  "storage.dataDir", "storage.maxLoadedSessions", "storage.maxLoadedEntries",
  "follow.enabled", "follow.agents", "follow.allWorkspaces", "follow.intervalSeconds",
  "models", "follow.roots",
}
M.known_settings = KNOWN_SETTINGS

local function is_group(dotted)
  for _, key in ipairs(KNOWN_SETTINGS) do
    if key:sub(1, #dotted + 1) == dotted .. "." then
      return true
    end
  end
  return false
end

-- The dotted names in `settings` that no setting has, e.g. "compaction.keepRecent".
function M.unknown_settings(settings)
  local known = {}
  for _, key in ipairs(KNOWN_SETTINGS) do
    known[key] = true
  end
  local unknown = {}
  local function walk(tbl, prefix)
    for key, value in pairs(tbl) do
      local dotted = prefix .. tostring(key)
      if known[dotted] then -- a setting (its value is the daemon's to check)
      elseif type(value) == "table" and is_group(dotted) then
        walk(value, dotted .. ".")
      else
        table.insert(unknown, dotted)
      end
    end
  end
  walk(settings, "")
  table.sort(unknown)
  return unknown
end

local function run(argv)
  local output = vim.fn.system(argv)
  return vim.v.shell_error == 0, vim.trim(output)
end

local function check_neovim()
  local v = vim.version()
  local text = string.format("Neovim %d.%d.%d", v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.7") == 1 then
    report.ok(text)
  else
    report.error(text .. ": contextd needs Neovim 0.7 or newer")
  end
end

-- Returns whether the daemon's program can run at all.
local function check_program()
  local program = config.program()
  if vim.fn.executable(program[1]) ~= 1 then
    local advice = config.options.cmd and "set `cmd` in setup() to a working command"
      or "set `python` in setup() to an interpreter with contextd installed"
    report.error(program[1] .. " is not executable", { advice })
    return false
  end
  if not config.options.cmd then
    local _, python_version = run({ program[1], "--version" })
    report.ok("Python found: " .. vim.fn.exepath(program[1]) .. " (" .. python_version .. ")")
  end
  local ok, version = run(vim.list_extend(config.program(), { "--version" }))
  if not ok then
    report.error("`" .. table.concat(program, " ") .. " --version` failed: " .. version, {
      "install contextd into a virtual environment (Debian and Ubuntu refuse pip install into the system Python): "
        .. "python3 -m venv ~/.local/share/contextd-venv && ~/.local/share/contextd-venv/bin/pip install <your clone of contextd>, "
        .. "then setup({ python = vim.fn.expand('~/.local/share/contextd-venv/bin/python') })",
      "or with pipx: pipx install <your clone of contextd>, then setup({ cmd = 'contextd' })",
    })
    return false
  end
  report.ok("daemon program: " .. table.concat(program, " ") .. " (" .. version .. ")")
  return true
end

-- Where the daemon's stderr went: :LspLog where the command exists (nvim-lspconfig),
-- else the log file.
local function where_the_log_is()
  if vim.fn.exists(":LspLog") == 2 then
    return ":LspLog"
  end
  return vim.lsp.get_log_path()
end

-- Starts a throwaway daemon and waits for its answer to initialize.
local function probe_daemon()
  local answered, server_info, refusal = false, nil, nil
  local id, err = client.start("contextd-health", {
    on_init = function(_, result)
      answered, server_info = true, result and result.serverInfo
    end,
    on_refused = function(refused)
      answered, refusal = true, refused
    end,
  })
  if not id then
    return nil, err
  end
  local waited = math.max(config.options.start_timeout_ms, config.options.timeout_ms)
  vim.wait(waited, function()
    return answered
  end, 20)
  client.stop(id)
  if refusal then
    return nil, "it refused the settings: " .. client.describe_error(refusal)
  end
  if not answered then
    return nil, string.format("no answer to initialize within %d ms (see %s)", waited, where_the_log_is())
  end
  return server_info or {}
end

local function check_daemon()
  if state.status == "running" then
    report.ok(string.format(
      "daemon running: contextd %s, session %s",
      state.server_version or "?",
      state.session_id or "?"
    ))
  else
    local info, err = probe_daemon()
    if not info then
      report.error("the daemon did not start: " .. err)
      return
    end
    report.ok("daemon starts: contextd " .. (info.version or "?"))
    state.server_version = state.server_version or info.version
  end
  local plugin_version = require("contextd").version
  if state.server_version and state.server_version ~= plugin_version then
    report.info(string.format("plugin %s, daemon %s", plugin_version, state.server_version))
  else
    report.info("plugin " .. plugin_version)
  end
end

local function check_settings()
  local settings = config.options.settings or {}
  local unknown = M.unknown_settings(settings)
  if #unknown > 0 then
    report.warn("unknown settings: " .. table.concat(unknown, ", "), { "see :help contextd-settings" })
  else
    report.ok("settings: every key is known")
  end
  local summarizer = settings.summarizer or {}
  report.info("summarizer: " .. (summarizer.provider or "offline"))
  local key_env = summarizer.apiKeyEnv
  if type(key_env) == "string" then
    if vim.env[key_env] then
      report.ok("the API key variable " .. key_env .. " is set")
    else
      report.warn("the API key variable " .. key_env .. " is not set in Neovim's environment")
    end
  end
  report.info("workspace: " .. config.workspace())
  report.info("data dir: " .. (config.options.data_dir or "the daemon's default ($XDG_DATA_HOME/contextd)"))
end

function M.check()
  report.start("contextd")
  check_neovim()
  if check_program() then
    check_daemon()
  end
  check_settings()
end

return M
