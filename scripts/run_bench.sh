#!/usr/bin/env bash
# Run a benchmark from bench/: ./maxim bench llm|memory|perception|tools [args...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:-}"
[ -n "$name" ] || { echo "usage: ./maxim bench {$(ls "$ROOT/bench" | tr '\n' ' ')}" >&2; exit 2; }
shift
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
script=$(ls "$ROOT/bench/$name"/bench_*.py 2>/dev/null | head -n 1)
[ -n "$script" ] || { echo "no benchmark in bench/$name" >&2; exit 2; }
exec python "$script" "$@"
