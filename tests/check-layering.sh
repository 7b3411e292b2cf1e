#!/usr/bin/env bash
# Dependency direction (DESIGN.md): each library may include only headers of
# the directories listed for it. Include paths already make most wrong
# includes fail to compile; this names the rule that was broken, and also
# catches "../" paths that would get around the include paths.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

declare -A allowed=(
  [daemon/domain]="daemon/domain"
  [daemon/models]="daemon/models daemon/domain"
  [daemon/catalog]="daemon/catalog daemon/domain"
  [daemon/store]="daemon/store daemon/domain"
  [daemon/auth]="daemon/auth daemon/store daemon/domain"
  [daemon/service]="daemon/service daemon/store daemon/catalog daemon/models daemon/domain"
  # api never includes controller, backend, agent or access headers; the
  # wire protocol it carries for networked agents is another matter: POST
  # /agent/v1/sync decodes a report and hands it to a transport, the hub's
  # (docs/adr/0056).
  [daemon/http]="daemon/http"
  [daemon/api]="daemon/api daemon/http daemon/service daemon/auth daemon/domain agent/protocol"
  [daemon/backend]="daemon/backend daemon/backend/fake daemon/domain"
  # The access proxy: tickets through the service, the way in through the
  # backend's interface, secrets and hashes from auth.
  [daemon/access]="daemon/access daemon/http daemon/service daemon/backend daemon/auth daemon/store daemon/catalog daemon/domain"
  [daemon/backend/fake]="daemon/backend/fake daemon/backend daemon/domain"
  [daemon/backend/hub]="daemon/backend/hub daemon/backend agent/protocol daemon/store daemon/catalog daemon/domain"
  # The CLI (and the desktop app) know only /v1 JSON: no daemon header.
  [drivers/hostlock]="drivers/hostlock"
  [app/client]="app/client"
  [app/cli]="app/cli app/client"
  [app/desktop]="app/desktop app/client"
  [daemon/controller]="daemon/controller daemon/service daemon/backend daemon/store daemon/catalog daemon/domain"
  [daemon/metering]="daemon/metering daemon/store daemon/catalog daemon/domain"
  [agent/protocol]="agent/protocol daemon/domain"
  # agent never includes store or backend headers: it knows only what it is told.
  [agent]="agent agent/protocol daemon/domain"
  [drivers/sim]="drivers/sim agent agent/protocol daemon/domain"
  [drivers/process]="drivers/process"
  [drivers/inventory]="drivers/inventory agent/protocol daemon/domain"
  [drivers/native]="drivers/native drivers/process drivers/inventory agent agent/protocol daemon/domain"
  [drivers/docker]="drivers/docker drivers/native drivers/process drivers/inventory agent agent/protocol daemon/domain"
)

# Where each project header lives, by file name.
declare -A home
while IFS= read -r header; do
  home[$(basename "$header")]=$(dirname "$header")
done < <(find daemon agent drivers app -name '*.h' 2>/dev/null | sort)

status=0
for dir in "${!allowed[@]}"; do
  for file in "$dir"/*.[ch]; do
    [ -e "$file" ] || continue
    while IFS= read -r line; do
      name=$(sed -E 's/^#include "([^"]+)".*/\1/' <<<"$line")
      if [[ $name == */* ]]; then
        echo "$file: includes \"$name\" by path; include headers by name only" >&2
        status=1
        continue
      fi
      where=${home[$name]:-}
      [ -n "$where" ] || continue # generated (GResource) headers
      ok=0
      for dep in ${allowed[$dir]}; do
        [ "$where" = "$dep" ] && ok=1
      done
      if [ $ok = 0 ]; then
        echo "$file: includes $where/$name, but $dir may depend only on: ${allowed[$dir]}" >&2
        status=1
      fi
    done < <(grep -E '^#include "' "$file" || true)
  done
done
[ $status = 0 ] && echo "layering: every include follows the dependency direction"
exit $status
