#!/bin/sh
# Regenerates ../runtime/vendor/*.tgz from the sources here and refreshes
# ../runtime/package-lock.json, all offline. See README.md.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
vendor="$here/../runtime/vendor"
rm -f "$vendor"/*.tgz
mkdir -p "$vendor"
for pkg in hello-banner hello-format hello-greeting hello-cli; do
	(cd "$here/$pkg" && npm pack --silent --ignore-scripts --pack-destination "$vendor" >/dev/null)
done
cd "$here/../runtime"
rm -f package-lock.json
npm_config_cache=$(mktemp -d) npm install --package-lock-only --ignore-scripts --offline \
	--no-audit --no-fund --lockfile-version 3 >/dev/null
ls -1 "$vendor"
