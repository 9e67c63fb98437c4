#!/usr/bin/env bash
# Every test: lint (ament_flake8 settings), then pytest over every package and test/.
# Called by `./maxim test` (after set-up) and so by .ci/run. Extra arguments go to pytest.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export MUJOCO_GL="${MUJOCO_GL:-egl}"

echo '== lint (flake8: 99 columns, single quotes)'
if ! python -m flake8 maxim_common maxim_core maxim_memory maxim_perception maxim_bringup \
    maxim_eval test bench scripts; then
  echo 'lint failed' >&2
  exit 1
fi
echo 'lint ok'

echo '== pytest'
python -P -m pytest "$@"
rc=$?
if [ "$rc" = 5 ]; then
  echo 'pytest collected no tests' >&2
  exit 1
fi
exit "$rc"
