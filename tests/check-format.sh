#!/usr/bin/env bash
# The tree is formatted with the project's .clang-format (clang-format 14,
# Debian 12). Fix with: clang-format -i $(git ls-files '*.c' '*.h')
set -euo pipefail
root=$1
clang_format=${2:-clang-format}
cd "$root"
mapfile -t files < <(find daemon agent drivers app tests bench -name '*.[ch]' 2>/dev/null | sort)
"$clang_format" --dry-run --Werror "${files[@]}"
echo "format: ${#files[@]} files are formatted"
