#!/usr/bin/env bash
# Builds the dashboard (web/ui) into web/ui/dist with the committed lockfile.
# Skips the build when dist/ is newer than every source file.
set -euo pipefail
cd "$(dirname "$0")/../web/ui"
# vite 8 (and playwright-core, swagger-parser) need Node.js ^20.19 or >= 22.12;
# Debian bookworm packages 18.
node_ok() {
  node -e 'const [a, b] = process.versions.node.split(".").map(Number);
           process.exit((a == 20 && b >= 19) || (a == 22 && b >= 12) || a >= 23 ? 0 : 1)'
}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1 || ! node_ok; then
  echo "build-ui: the dashboard needs Node.js 20.19 or later (22.12 or later on 22) with npm;" \
       "this machine has $(node --version 2>/dev/null || echo none) (Debian bookworm packages 18):" \
       "install Node.js 20 or 22, for example from NodeSource" >&2
  exit 3
fi
if [[ -f dist/index.html ]] && [[ -z $(find src index.html package.json package-lock.json vite.config.* -newer dist/index.html 2>/dev/null | head -1) ]]; then
  echo "build-ui: dashboard up to date"
  exit 0
fi
if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run build
