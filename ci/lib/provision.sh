# Shared steps of the engine provisioning scripts (ci/provision-*.sh), sourced, never run: the
# cache and its lock, Debian's tools, the machine's own Debian mirror, and a private apt state
# that downloads packages of another suite without touching the system's. Each function says
# what it sets; errors name the script (PROV).

# prov_begin NAME PREFIX-RELATIVE READY-FILE: sets PROV, CACHE and PREFIX; prints PREFIX and exits
# when READY-FILE (relative to PREFIX) is there with .complete; otherwise takes the script's lock
# (parallel runs: one provisions, the others wait and then find it complete).
prov_begin() {
  PROV=$1
  CACHE=${EMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/echomq-kit}
  PREFIX=$CACHE/$2
  PROV_READY=$3
  if prov_done; then echo "$PREFIX"; exit 0; fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.$PROV.script.lock"
  flock 9
  if prov_done; then echo "$PREFIX"; exit 0; fi
  command -v apt-get >/dev/null || prov_die "apt-get is required (Debian/Ubuntu)"
  command -v dpkg-deb >/dev/null || prov_die "dpkg-deb is required"
}

prov_done() { [ -x "$PREFIX/$PROV_READY" ] && [ -f "$PREFIX/.complete" ]; }

prov_die() { echo "$PROV: $*" >&2; exit 1; }

# prov_mirror: sets uri and keyring to the machine's own Debian (bookworm) mirror and keyring.
prov_mirror() {
  uri=""; keyring=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    if grep -q '^Suites:.*bookworm\b' "$f" && grep -qE '^URIs:.*/debian/?$' "$f"; then
      uri=$(awk '/^URIs:/{print $2; exit}' "$f"); keyring=$(awk '/^Signed-By:/{print $2; exit}' "$f"); break
    fi
  done
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1=="deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || prov_die "no Debian bookworm source in /etc/apt"
  [ -n "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg
}

# prov_apt SUITE…: a private apt state for the mirror's SUITEs, its package lists fetched. Sets
# work (removed on exit) with work/debs for downloads, and opts, the apt-get options that use it.
prov_apt() {
  prov_mirror
  work=$(mktemp -d "$CACHE/apt-$PROV.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
  : > "$work/sources.list"
  for suite in "$@"; do echo "deb [signed-by=$keyring] $uri $suite main" >> "$work/sources.list"; done
  opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "Debug::NoLocking=1")
  # As root, apt would drop to the _apt user, who cannot write the private dirs.
  [ "$(id -u)" != 0 ] || opts+=(-o "APT::Sandbox::User=root")
  echo "$PROV: fetching $* package lists" >&2
  apt-get -qq "${opts[@]}" update >&2
}

# prov_download DIR PACKAGE…: downloads the packages' .deb files into DIR.
prov_download() {
  local dir=$1; shift
  mkdir -p "$dir"
  ( cd "$dir" && apt-get -qq "${opts[@]}" download "$@" >&2 )
}

# prov_finish TMP: marks TMP complete and moves it to PREFIX, which it prints.
prov_finish() {
  touch "$1/.complete"
  rm -rf "$PREFIX"; mv "$1" "$PREFIX"
  echo "$PREFIX"
}
