#!/usr/bin/env bash
# Makes the docker tests' endpoint image from the llama-server that
# packaging/dev/llama-server.sh built (nothing can be pulled here): that
# program at /usr/bin/llama-server and every shared library it loads (the
# ldd closure), with a user 1000:100, as a tar on standard output for
# `docker import`.
#   make-llama-image.sh /path/to/llama-server > llama.tar
set -euo pipefail
server=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/etc" "$root/tmp" \
  "$root/run/einsora" "$root/proc" "$root/sys" "$root/dev"
ln -s usr/bin "$root/bin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
cp "$server" "$root/usr/bin/llama-server"
# Libraries beside the program (a shared build) and those the system gives.
ldd "$server" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(0x/ { print $1 }' |
  while read -r lib; do
    for file in "$lib" "$(readlink -f "$lib")"; do
      target=$root/usr/${file#/usr/}
      case $file in /usr/*) ;; *) target=$root/usr$file ;; esac
      mkdir -p "$(dirname "$target")"
      cp -P "$file" "$target"
    done
  done
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nllama:x:1000:100:llama:/tmp:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nusers:x:100:\n' > "$root/etc/group"
tar -C "$root" --numeric-owner -cf - .
