#!/usr/bin/env bash
# system-deps.sh: install the Debian packages the cross-check tests need and Go and
# Node do not bring: chromium (the report screenshot test) and python3 with jinja2
# and regex (the chat-template and pre-tokenizer references). It uses apt when run
# as root or with password-less sudo. Otherwise, or when apt fails, it says in one
# line per package what will be skipped and exits 0: `make test` then skips those
# tests with their reason, while CI (AGENTRACE_REQUIRE_DEPS=1) fails them.
set -uo pipefail

missing=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_cmd chromium || have_cmd chromium-browser || have_cmd google-chrome || missing+=(chromium)
if ! have_cmd python3 || ! python3 -c 'import jinja2, regex' >/dev/null 2>&1; then
  missing+=(python3 python3-jinja2 python3-regex)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

apt=()
if [ "$(id -u)" = 0 ]; then
  apt=(env DEBIAN_FRONTEND=noninteractive)
elif have_cmd sudo && sudo -n true >/dev/null 2>&1; then
  apt=(sudo env DEBIAN_FRONTEND=noninteractive)
fi
if [ ${#apt[@]} -gt 0 ] && have_cmd apt-get; then
  echo "testdeps: apt-get install ${missing[*]}" >&2
  if "${apt[@]}" apt-get update -qq >/dev/null && "${apt[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    exit 0
  fi
  echo "testdeps: apt-get install failed" >&2
fi
for p in "${missing[@]}"; do
  case $p in
    chromium) why="the report screenshot test skips" ;;
    *) why="the chat-template and pre-tokenizer reference tests skip" ;;
  esac
  echo "testdeps: $p is not installed (needs apt as root or sudo): $why" >&2
done
exit 0
