#!/bin/sh
# The practice, offline: the built-in template practice on a copy of repo/
# in a scratch git repository, every role played by the scripted provider
# (script.toml). It prints the outcome and the two commits the run made
# (the work, then TODO/ in a chore(todo) commit).
#
#   sh examples/practice-demo/run.sh [PIXIR]     # PIXIR: default bin/pixir
#   LIVE=1 sh examples/practice-demo/run.sh      # also the live view
#   KEEP=1 sh examples/practice-demo/run.sh      # keep the scratch repository
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pixir=${1:-bin/pixir}
case $pixir in /*) ;; *) pixir=$(pwd)/$pixir ;; esac
scratch=$(mktemp -d)
if [ "${KEEP:-}" = 1 ]; then echo "scratch repository: $scratch/repo"; else trap 'rm -rf "$scratch"' EXIT; fi
mkdir "$scratch/repo" "$scratch/home"
cp -R "$here/repo/." "$scratch/repo/"
cd "$scratch/repo"
: "${GIT_AUTHOR_NAME:=pixir demo}" "${GIT_AUTHOR_EMAIL:=demo@example.com}"
: "${GIT_COMMITTER_NAME:=$GIT_AUTHOR_NAME}" "${GIT_COMMITTER_EMAIL:=$GIT_AUTHOR_EMAIL}"
export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
git init -q -b main
git add -A
git commit -q -m "the demo project"
git switch -q -c GAL-1   # the work's own branch: the practice refuses to run on its base (main)
echo "== pixir run --workflow practice --set issue=GAL-1 (offline, scripted roles)"
run() {
	PIXIR_HOME="$scratch/home" "$pixir" run --workflow practice --set issue=GAL-1 \
		--set test_command="sh tests/run.sh" --script "$here/script.toml"
}
if [ "${LIVE:-}" = 1 ]; then run; else run 2>/dev/null; fi
echo
echo "== git log --stat main..HEAD"
git -c core.pager=cat log --reverse --stat --format='%h %s' main..HEAD
