#!/usr/bin/env bash
# Run a benchmark from bench/: ./maxim bench llm|memory|perception|tools [--quick] [args...]
# Each benchmark prints ratios against a baseline measured in the same run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
names=$(cd "$ROOT/bench" && ls -d */ 2>/dev/null | tr -d '/' | tr '\n' ' ')
name="${1:-}"
[ -n "$name" ] || { echo "usage: ./maxim bench {${names% }} [--quick]" >&2; exit 2; }
shift
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export MUJOCO_GL="${MUJOCO_GL:-egl}"
script="$ROOT/bench/$name/run.py"
[ -f "$script" ] || { echo "no benchmark bench/$name/run.py (have: $names)" >&2; exit 2; }
cd "$ROOT"
exec python -P "$script" "$@"
