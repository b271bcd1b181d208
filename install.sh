#!/bin/sh
# Installs runner-manager and runner-manager-tui from a release:
#
#   curl -fsSL https://raw.githubusercontent.com/runner-manager/runner-manager/main/install.sh | sh
#
# It finds this machine's OS and CPU, downloads the release's archive and
# SHA256SUMS, checks the archive's SHA-256 and installs nothing unless it
# matches. As root the programs go to /usr/local/bin, otherwise to
# ~/.local/bin (no sudo). Options, or the variables beside them:
#
#   --version V    RUNNER_MANAGER_VERSION    a release (1.2.3 or v1.2.3); default: the newest
#   --dir DIR      RUNNER_MANAGER_INSTALL_DIR where the programs go
#   --base-url U   RUNNER_MANAGER_BASE_URL   where releases are published
#                  (default https://github.com/runner-manager/runner-manager/releases)
#
# Needs: uname, curl or wget, sha256sum or shasum, tar, gzip.
set -eu

version=${RUNNER_MANAGER_VERSION:-}
dir=${RUNNER_MANAGER_INSTALL_DIR:-}
base=${RUNNER_MANAGER_BASE_URL:-https://github.com/runner-manager/runner-manager/releases}

fail() { echo "install.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --version) [ $# -ge 2 ] || fail "--version needs a value"; version=$2; shift 2 ;;
    --dir) [ $# -ge 2 ] || fail "--dir needs a value"; dir=$2; shift 2 ;;
    --base-url) [ $# -ge 2 ] || fail "--base-url needs a value"; base=$2; shift 2 ;;
    -h|--help)
      echo "usage: install.sh [--version V] [--dir DIR] [--base-url URL]"
      echo "  (or RUNNER_MANAGER_VERSION, RUNNER_MANAGER_INSTALL_DIR, RUNNER_MANAGER_BASE_URL)"
      exit 0 ;;
    *) fail "unknown option $1 (try --help)" ;;
  esac
done
base=${base%/}

case $(uname -s) in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) fail "no release is built for $(uname -s): on Windows use install.ps1; elsewhere build from source (README)" ;;
esac
case $(uname -m) in
  x86_64|amd64) arch=amd64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) fail "no release is built for $(uname -m) CPUs: build from source (README)" ;;
esac

if [ -n "$version" ]; then
  case $version in
    v*) tag=$version ;;
    *) tag=v$version ;;
  esac
  echo "$tag" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$' || fail "$version is not a release version (1.2.3 or v1.2.3)"
  url=$base/download/$tag
else
  url=$base/latest/download
fi

if [ -z "$dir" ]; then
  if [ "$(id -u)" = 0 ]; then dir=/usr/local/bin; else dir=$HOME/.local/bin; fi
fi

if command -v curl >/dev/null 2>&1; then
  fetch() { curl -fsSL --proto '=https,http' -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget -q -O "$2" "$1"; }
else
  fail "needs curl or wget"
fi
if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
  fail "needs sha256sum or shasum to check the download"
fi

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t runner-manager)
trap 'rm -rf "$tmp"' EXIT INT TERM

fetch "$url/SHA256SUMS" "$tmp/SHA256SUMS" || fail "could not download $url/SHA256SUMS"
# The archive's name carries the release's version: runner-manager_1.2.3_linux_amd64.tar.gz.
archive=$(sed -n "s/^[0-9a-fA-F]\{64\}  *\*\{0,1\}\(runner-manager_[0-9][0-9A-Za-z.-]*_${os}_${arch}\.tar\.gz\)\$/\1/p" "$tmp/SHA256SUMS")
[ -n "$archive" ] || fail "the release at $url lists no archive for $os/$arch in SHA256SUMS"
case $archive in
  *"
"*) fail "SHA256SUMS lists more than one archive for $os/$arch" ;;
esac
want=$(grep -E "^[0-9a-fA-F]{64} +\*?$archive\$" "$tmp/SHA256SUMS" | cut -d' ' -f1 | tr 'A-F' 'a-f')
if [ -n "$version" ]; then
  case $archive in
    "runner-manager_${tag#v}_${os}_${arch}.tar.gz") ;;
    *) fail "the SHA256SUMS of $tag names $archive" ;;
  esac
fi

fetch "$url/$archive" "$tmp/$archive" || fail "could not download $url/$archive"
got=$(sha256 "$tmp/$archive")
[ "$got" = "$want" ] || fail "$archive has SHA-256 $got but SHA256SUMS says $want: refusing it, nothing installed"

mkdir "$tmp/x"
(cd "$tmp/x" && gzip -dc "../$archive" | tar -xf -) || fail "could not unpack $archive"
for prog in runner-manager runner-manager-tui; do
  [ -f "$tmp/x/$prog" ] || fail "$archive holds no $prog: nothing installed"
done

mkdir -p "$dir" || fail "cannot create $dir (as root it installs to /usr/local/bin; or set --dir)"
for prog in runner-manager runner-manager-tui; do
  # Beside the target, then renamed over it: a running one is never half replaced.
  cp "$tmp/x/$prog" "$dir/.$prog.new"
  chmod 755 "$dir/.$prog.new"
  mv -f "$dir/.$prog.new" "$dir/$prog"
done

installed=${archive#runner-manager_}
echo "installed runner-manager ${installed%%_*} to $dir (runner-manager, runner-manager-tui)"
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "Put it on your PATH (add this line to your shell's profile):"
     echo "  export PATH=\"$dir:\$PATH\"" ;;
esac
