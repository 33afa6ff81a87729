#!/usr/bin/env bash
# Builds the release artifacts into dist/<version>/:
#   brainsurgeon_<version>_<os>_<arch>.tar.gz  for linux and darwin, amd64 and arm64, each holding the
#                                              brainsurgeon and purge_control binaries (CGO_ENABLED=0, the
#                                              version stamped with -ldflags "-X main.version=<version>"),
#                                              README.md and LICENSE when present;
#   brainsurgeon-openclaw-<v>.tgz             `npm pack` of openclaw-plugin/, when npm is installed;
#   SHA256SUMS                                 sha256 of every file above.
#
# Usage: scripts/release.sh [version]
# The version defaults to `git describe --tags --always --dirty`, else "dev". Run from anywhere in the repository.
#
# Plugin version rule: a release version is MAJOR.MINOR.PATCH with an optional leading "v" and an optional
# pre-release suffix of letters, digits and dots ("v1.4.0", "1.4.0-rc.1"). For a release version the "version" of
# openclaw-plugin/package.json must equal it without the "v", or the script fails before building anything (the
# binaries carry the plugin, and `brainsurgeon openclaw status` compares versions). Every other version is a
# development build and is not checked: "dev", a commit hash, `git describe` output past a tag
# ("v1.4.0-3-gabc1234") and anything ending in "-dirty".
#
# Tarballs are written with owner and group 0 and no user names, with GNU tar (--owner/--group/--numeric-owner)
# or bsdtar (--uid/--gid/--numeric-owner), whichever `tar` is.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
if [[ ! $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
	echo "release.sh: version \"$version\": expected letters, digits and . _ + - only" >&2
	exit 2
fi

plain=${version#v}
if [[ $plain =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ && ! $plain =~ -dirty$ ]]; then
	plugin_version=$(sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' openclaw-plugin/package.json | head -n 1)
	if [[ $plugin_version != "$plain" ]]; then
		echo "release.sh: release $version: expected openclaw-plugin/package.json version \"$plain\", found \"$plugin_version\" (set it, or build a development version)" >&2
		exit 1
	fi
else
	echo "release.sh: $version is a development version: the plugin's version ($(sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' openclaw-plugin/package.json | head -n 1)) is not checked" >&2
fi

if tar --version 2>/dev/null | grep -q 'GNU tar'; then
	tar_owner=(--owner=0 --group=0 --numeric-owner)
else
	tar_owner=(--uid 0 --gid 0 --numeric-owner)
fi

out=dist/$version
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
for p in "${platforms[@]}"; do
	os=${p%/*}
	arch=${p#*/}
	name=brainsurgeon_${version}_${os}_${arch}
	dir=$work/$name
	mkdir -p "$dir"
	for cmd in brainsurgeon purge_control; do
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
			-ldflags "-s -w -X main.version=$version" -o "$dir/$cmd" "./cmd/$cmd"
	done
	for f in README.md LICENSE; do
		if [[ -f $f ]]; then cp "$f" "$dir/"; fi
	done
	tar "${tar_owner[@]}" -C "$work" -czf "$out/$name.tar.gz" "$name"
	echo "built $out/$name.tar.gz"
done

if command -v npm >/dev/null 2>&1; then
	tgz=$(cd openclaw-plugin && npm pack --silent --pack-destination "$root/$out" | tail -n 1)
	echo "built $out/$tgz"
else
	echo "npm not found: no plugin tarball (the binaries carry the plugin: brainsurgeon openclaw install)" >&2
fi

(
	cd "$out"
	shopt -s nullglob
	files=(*.tar.gz *.tgz)
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum -- "${files[@]}" >SHA256SUMS
	else
		shasum -a 256 -- "${files[@]}" >SHA256SUMS
	fi
)
echo "built $out/SHA256SUMS"
cat "$out/SHA256SUMS"
