#!/usr/bin/env bash
# Makes the docker tests' notebook image from this machine's own Jupyter
# (Debian's jupyter-notebook), since nothing can be pulled here: a root file
# system of python3, its standard library, Debian's Python packages, the
# jupyter commands and every shared library they load (the ldd closure),
# with a user jovyan (1000:1000) as the Jupyter images have. Written as a
# tar on standard output, for `docker import` (or a registry push).
#   make-jupyter-image.sh > jupyter.tar
set -euo pipefail

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

files=$(mktemp)
{
  ls /usr/bin/python3 /usr/bin/python3.11 /usr/bin/jupyter /usr/bin/jupyter-* /bin/sh /bin/dash
  for dir in /usr/lib/python3.11 /usr/lib/python3/dist-packages /usr/share/jupyter /etc/jupyter; do
    [ ! -d "$dir" ] || find "$dir" \( -name __pycache__ -prune \) -o \( -type f -o -type l \) -print
  done
  # Every shared library python3 and its extension modules load.
  find /usr/lib/python3.11 /usr/lib/python3/dist-packages -name '*.so*' -type f -print0 |
    xargs -0 ldd /usr/bin/python3.11 /bin/dash |
    awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(0x/ { print $1 }' | sort -u |
    while read -r lib; do echo "$lib"; readlink -f "$lib"; done
  ls /lib64/ld-linux-x86-64.so.2 /etc/ld.so.cache /etc/localtime /etc/mime.types 2>/dev/null || true
} | sort -u > "$files"
# Debian 12 has a merged /usr: /bin and /lib64 are links into it.
mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/etc" "$root/tmp" \
  "$root/home/jovyan" "$root/run/einsora" "$root/proc" "$root/sys" "$root/dev"
ln -s usr/bin "$root/bin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
tar -C / --no-recursion -cf - -T <(sed 's|^/||; s|^bin/|usr/bin/|; s|^lib64/|usr/lib64/|; s|^lib/|usr/lib/|' "$files") |
  tar -C "$root" -xf -
rm -f "$files"
chmod 1777 "$root/tmp"
cat > "$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
jovyan:x:1000:1000:Jupyter:/home/jovyan:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PASSWD
cat > "$root/etc/group" <<'GROUP'
root:x:0:
users:x:100:
jovyan:x:1000:
nogroup:x:65534:
GROUP
chown 1000:1000 "$root/home/jovyan"
tar -C "$root" --numeric-owner -cf - .
