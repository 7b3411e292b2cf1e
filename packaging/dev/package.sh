#!/usr/bin/env bash
# Builds Einsora's Debian packages (einsora, einsora-daemon, einsora-desktop;
# docs/adr/0064) from this working tree, uncommitted changes included, into
# build-deb/ (or $EINSORA_DEB_DIR), and prints their paths. Installs the
# build dependencies it lacks with apt. DEB_BUILD_OPTIONS is passed on
# (e.g. "nocheck parallel=2").
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${EINSORA_DEB_DIR:-$root/build-deb}
version=$(sed -n "s/^  version: '\([^']*\)',$/\1/p" meson.build | head -n 1)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$tmp/einsora-$version
mkdir "$src"
# The files git knows and the new ones it doesn't ignore, as they are now
# (a tracked file deleted in the tree is left out).
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do
    if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
  done |
  tar -c --null --no-recursion -T - | tar -x -C "$src"
# dpkg-buildpackage wants debian/ at the source root.
rm -rf "$src/debian"
cp -r packaging/debian "$src/debian"

# What debian/control's Build-Depends names and this machine lacks, with apt
# (through sudo when not root).
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
updated=0
if ! command -v dpkg-checkbuilddeps >/dev/null; then
  $sudo apt-get update -qq
  updated=1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends dpkg-dev
fi
# dpkg-checkbuilddeps exits 1 when something is missing: that is the answer.
unmet=$(cd "$src" && dpkg-checkbuilddeps 2>&1) || true
missing=$(sed -n 's/.*Unmet build dependencies: //p' <<<"$unmet" |
  sed 's/([^)]*)//g; s/\[[^]]*\]//g; s/ *| *[^ ]*//g')
if [ -n "$missing" ]; then
  echo "installing the build dependencies: $missing"
  [ "$updated" -eq 1 ] || $sudo apt-get update -qq
  # shellcheck disable=SC2086 # a list of package names
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi

mkdir -p "$out"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
  tail -n 25 "$out/build.log" | cut -c 1-300 >&2
  echo "package.sh: dpkg-buildpackage failed (the log's end is above; all of it in $out/build.log)" >&2
  exit 1
}
rm -f "$out"/einsora*_"$version"_*.deb "$out"/einsora_"$version"_*.changes \
  "$out"/einsora_"$version"_*.buildinfo
cp "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo "$out"/
ls "$out"/*_"$version"_*.deb
