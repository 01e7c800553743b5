#!/usr/bin/env bash
# Builds the dashboard (web/ui) into web/ui/dist with the committed lockfile.
# Skips the build when dist/ is newer than every source file.
set -euo pipefail
cd "$(dirname "$0")/../web/ui"
if [[ -f dist/index.html ]] && [[ -z $(find src index.html package.json package-lock.json vite.config.* -newer dist/index.html 2>/dev/null | head -1) ]]; then
  echo "build-ui: dashboard up to date"
  exit 0
fi
if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run build
