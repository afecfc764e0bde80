#!/bin/sh
# Regenerates ../vendor/*.tgz from the sources here and each Pi package's
# project under ../packages/ (package.json and package-lock.json), all
# offline. Then run `piship lock` on the distribution.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
vendor="$here/../vendor"
rm -f "$vendor"/*.tgz
mkdir -p "$vendor"
for pkg in fp-words pi-fp-bundled pi-fp-files pi-fp-typed; do
	(cd "$here/$pkg" && npm pack --silent --ignore-scripts --pack-destination "$vendor" >/dev/null)
done
for pkg in pi-fp-bundled pi-fp-files pi-fp-typed; do
	dir="$here/../packages/$pkg"
	mkdir -p "$dir"
	cat >"$dir/package.json" <<JSON
{
  "name": "pi-footprint-package-$pkg",
  "private": true,
  "description": "The npm project piship installs the Pi package $pkg from (package \"$pkg\" in ../../distribution.hcl); fp-words comes from the committed tarball too.",
  "dependencies": {
    "$pkg": "file:../../vendor/$pkg-1.0.0.tgz"
  },
  "overrides": {
    "fp-words": "file:../../vendor/fp-words-1.0.0.tgz"
  }
}
JSON
	(cd "$dir" && rm -f package-lock.json &&
		npm_config_cache=$(mktemp -d) npm install --package-lock-only --ignore-scripts --offline --legacy-peer-deps \
			--no-audit --no-fund --lockfile-version 3 >/dev/null)
done
ls -1 "$vendor"
