#!/usr/bin/env bash
# CI of the VS Code extension: the locked dependencies, the tests (unit and against the
# real daemon, run with python3 or $CONTEXTD_PYTHON), then a .vsix that must load on its own.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm test
npm run package
node scripts/check-vsix.mjs "contextd-$(node -p 'require("./package.json").version').vsix"
