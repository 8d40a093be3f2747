# peer/lib.sh - what the peer build scripts share (sourced, not run): the
# repository root, the build directory, and quiet steps that show their log
# only when they fail.  The sourcing script sets `prog` (its name in messages).

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${STRATA_BUILD_DIR:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac

die() { echo "$prog: error: $*" >&2; exit 1; }
say() { echo "$prog: $*" >&2; }

# run LOG CMD...: quiet unless it fails, then the log's tail.
run() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 && return 0
	tail -n 40 "$log" >&2
	die "'$*' failed (whole log: $log)"
}
