#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the source node-llama-cpp ships
# (llama/gitRelease.bundle; the version is pinned in llama/package-lock.json),
# offline, once per version, into a cache outside the tree. Prints the
# cache directory: bin/llama-server, and share/ with llama.cpp's
# vocabulary files and Python GGUF writer (gguf-py) for making test models.
# Debian 12 has no llama.cpp package; elsewhere use your own llama-server
# (EINSORA_LLAMA_SERVER or PATH) and skip this.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n '/"node_modules\/node-llama-cpp"/,/}/s/.*"version": "\([^"]*\)".*/\1/p' \
  "$here/llama/package-lock.json" | head -n1)
[ -n "$version" ] || { echo "llama-server: no node-llama-cpp version in the lock file" >&2; exit 1; }
cache=${EINSORA_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/einsora/llama-server}/node-llama-cpp-$version
if [ -x "$cache/bin/llama-server" ] && [ -d "$cache/share/gguf-py" ]; then
  echo "$cache"
  exit 0
fi

echo "llama-server: building from node-llama-cpp $version's llama.cpp source, once;" \
  "this takes several minutes on 2 cores (cached in $cache)" >&2
work=$(mktemp -d "${TMPDIR:-/tmp}/einsora-llama.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Only node-llama-cpp's own tarball is wanted (not its dependencies, nor
# the prebuilt binaries its install script would download), checked
# against the lock file's integrity digest.
integrity=$(sed -n '/"node_modules\/node-llama-cpp"/,/}/s/.*"integrity": "\([^"]*\)".*/\1/p' \
  "$here/llama/package-lock.json" | head -n1)
(cd "$work" && npm pack --silent "node-llama-cpp@$version" >/dev/null)
tarball=$work/node-llama-cpp-$version.tgz
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$integrity" ]; then
  echo "llama-server: node-llama-cpp-$version.tgz does not match the lock file's digest" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work" package/llama/gitRelease.bundle
git clone -q "$work/package/llama/gitRelease.bundle" "$work/llama.cpp"
# LLAMA_USE_PREBUILT_UI=OFF: otherwise the build downloads its web UI.
cmake -S "$work/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$work/build" --target llama-server -j"$(nproc)" >&2

# Into place only when whole, so an interrupted build is redone.
staging=$cache.partial
rm -rf "$staging"
mkdir -p "$staging/bin" "$staging/share"
install -m 0755 "$work/build/bin/llama-server" "$staging/bin/llama-server"
cp -r "$work/llama.cpp/gguf-py" "$staging/share/gguf-py"
cp "$work/llama.cpp/models/ggml-vocab-llama-spm.gguf" "$staging/share/"
rm -rf "$cache"
mv "$staging" "$cache"
echo "llama-server: built $cache/bin/llama-server" >&2
echo "$cache"
