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
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
if [[ ! $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
	echo "release.sh: version \"$version\": expected letters, digits and . _ + - only" >&2
	exit 2
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
	tar -C "$work" -czf "$out/$name.tar.gz" --owner=0 --group=0 --numeric-owner "$name"
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
