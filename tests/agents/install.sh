#!/usr/bin/env bash
# The real agents the tests in tests/agents/ run, at pinned versions, installed once under
# ~/.cache/contextd/agents (CONTEXTD_AGENTS_DIR overrides): a later run finds them and skips.
# Claude Code's package carries a ~373 MB native binary, so the cache matters.
set -euo pipefail
root="${CONTEXTD_AGENTS_DIR:-$HOME/.cache/contextd/agents}"

install_agent() {  # folder, package@version, command
  local dir="$root/$1" package="$2" command="$3"
  if [[ -x "$dir/node_modules/.bin/$command" && "$(cat "$dir/.installed" 2>/dev/null)" == "$package" ]]; then
    echo "agents: $package already installed in $dir"
    return
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$package" >/dev/null)
  echo "$package" >"$dir/.installed"
  echo "agents: installed $package in $dir"
}

install_agent claude-code @anthropic-ai/claude-code@2.1.328 claude
install_agent pi @mariozechner/pi-coding-agent@0.73.1 pi
install_agent codex @openai/codex@0.169.0 codex
