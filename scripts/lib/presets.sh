# shellcheck shell=bash
# Configure, build and test one CMake preset (CMakePresets.json), for scripts/test and scripts/run.
# Sourced, never run. With WARREN_BUILD_ROOT set, preset NAME builds in $WARREN_BUILD_ROOT/NAME
# instead of the preset's own binaryDir (for a second checkout-independent build, or a developer
# who keeps build trees outside the source tree). WARREN_JOBS sets the parallelism (default: nproc).

WARREN_JOBS=${WARREN_JOBS:-$(nproc)}

# Compiler cache (CMake uses ccache when it is installed): paths are taken relative to the
# checkout (the current directory: every script sources this from the repository's root), so
# another clone of the same sources hits the same cache entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}

# preset_build_dir NAME: the build tree of preset NAME (absolute).
preset_build_dir() {
  if [[ -n ${WARREN_BUILD_ROOT:-} ]]; then
    echo "$(realpath -m "$WARREN_BUILD_ROOT")/$1"
    return
  fi
  /usr/bin/python3 - "$1" <<'PY'
import json, os, sys
presets = json.load(open("CMakePresets.json"))["configurePresets"]
preset = next(p for p in presets if p["name"] == sys.argv[1])
print(preset["binaryDir"].replace("${sourceDir}", os.getcwd()))
PY
}

preset_configure() {
  if [[ -n ${WARREN_BUILD_ROOT:-} ]]; then
    cmake --preset "$1" -B "$(preset_build_dir "$1")"
  else
    cmake --preset "$1"
  fi
}

# preset_build NAME [TARGET...]: builds everything, or only TARGETs.
preset_build() {
  local name=$1
  shift
  local targets=()
  (($# > 0)) && targets=(--target "$@")
  if [[ -n ${WARREN_BUILD_ROOT:-} ]]; then
    cmake --build "$(preset_build_dir "$name")" -j "$WARREN_JOBS" "${targets[@]}"
  else
    cmake --build --preset "$name" -j "$WARREN_JOBS" "${targets[@]}"
  fi
}

# preset_has_target NAME TARGET: succeeds when the (configured, Ninja) build tree knows TARGET.
preset_has_target() {
  ninja -C "$(preset_build_dir "$1")" -t query "$2" >/dev/null 2>&1
}

# preset_ctest NAME CTEST_ARGS...: as the test preset NAME runs, also outside its binaryDir (an
# empty selection is an error; a later --no-tests=ignore in CTEST_ARGS overrides that).
preset_ctest() {
  local name=$1
  shift
  if [[ -n ${WARREN_BUILD_ROOT:-} ]]; then
    ctest --test-dir "$(preset_build_dir "$name")" --output-on-failure --no-tests=error "$@"
  else
    ctest --preset "$name" "$@"
  fi
}
