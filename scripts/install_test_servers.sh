#!/usr/bin/env bash
# Object-store servers for the test suite (issue 15), installed into the ignored .tools/ folder.
# Idempotent and cached: does nothing when the pinned Azurite is already there.
#  - S3: moto in server mode and the GCS emulator come from PyPI through the `test` extra.
#  - Azure: Azurite (Microsoft's storage emulator) from the npm registry, run by Node.
set -euo pipefail
cd "$(dirname "$0")/.."
AZURITE_VERSION="${AZURITE_VERSION:-3.37.0}"
DEST=.tools/azurite
STAMP="$DEST/.installed-$AZURITE_VERSION"
if [ -f "$STAMP" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install_test_servers: npm not found; Azure tests are skipped outside CI and fail in CI" >&2
  [ -n "${CI:-}" ] && exit 1
  exit 0
fi
mkdir -p "$DEST"
npm install --prefix "$DEST" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION"
touch "$STAMP"
