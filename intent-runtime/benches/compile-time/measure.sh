#!/usr/bin/env bash
# Compile time of `#[intents]`: generates a throwaway crate whose trait has N intent
# methods (default 50) and one with a single method, then reports for each
#   - `cargo build` (dev profile) of that crate alone, dependencies already built: the
#     median of three rebuilds after touching its source;
#   - the line count of its expansion (`-Zunpretty=expanded`, through RUSTC_BOOTSTRAP),
# and per method, the difference between the two divided by N - 1.
#
# Usage: intent-runtime/benches/compile-time/measure.sh [METHODS]
# The crates are generated under target/compile-time/ and built in the workspace's
# target dir (same Cargo.lock), so dependencies are compiled once and shared; the
# expansion has a target dir of its own there. The first run builds the dependencies
# (minutes); later runs take about a minute.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
methods=${1:-50}
work="$root/target/compile-time"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
# A rebuild after `touch` would otherwise reuse the incremental cache of an unchanged
# source and measure almost nothing.
export CARGO_INCREMENTAL=0

median_of_three() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

build_seconds() {
    local dir=$1 start end
    touch "$dir/src/lib.rs"
    start=$(date +%s.%N)
    (cd "$dir" && cargo build -q)
    end=$(date +%s.%N)
    python3 -c "print(round($end - $start, 3))"
}

measure() {
    local n=$1 caller=${2:-} dir="$work/n$1${2:-}"
    python3 "$here/generate.py" "$dir" "$n" "$root/intent-runtime" "$root/Cargo.lock" $caller
    # Untimed first build: dependencies and the crate itself.
    (cd "$dir" && cargo build -q)
    local a b c
    a=$(build_seconds "$dir"); b=$(build_seconds "$dir"); c=$(build_seconds "$dir")
    local seconds
    seconds=$(median_of_three "$a" "$b" "$c")
    # Its own target dir: proc-macro2's build script reruns when RUSTC_BOOTSTRAP changes,
    # which would rebuild every macro crate in the shared one.
    (cd "$dir" && RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$work/expand-target" \
        cargo rustc -q --lib --profile=check -- -Zunpretty=expanded) > "$dir/expanded.rs"
    local lines
    lines=$(wc -l < "$dir/expanded.rs")
    printf '%s %s %s\n' "$n" "$seconds" "$lines"
}

report() {
    local what=$1 flag=${2:-}
    local n1 s1 l1 nn sn ln
    read -r n1 s1 l1 < <(measure 1 "$flag")
    read -r nn sn ln < <(measure "$methods" "$flag")
    echo "# $what"
    printf '%4s methods: cargo build %6.2f s (median of 3), expansion %6d lines\n' "$n1" "$s1" "$l1"
    printf '%4s methods: cargo build %6.2f s (median of 3), expansion %6d lines\n' "$nn" "$sn" "$ln"
    python3 -c "print('per method: %.3f s of build, %.1f lines of expansion (difference / %d)' % (($sn - $s1) / ($nn - $n1), ($ln - $l1) / ($nn - $n1), $nn - $n1))"
}

echo "## compile time of a generated #[intents] trait (dev profile, dependencies prebuilt)"
report "the trait alone (its futures are compiled by the crates that await them)"
report "the trait and a function awaiting every method once" --with-caller
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
