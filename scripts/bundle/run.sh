#!/usr/bin/env bash
# The device bundle's entry point (docs/gpu.md):
#   ./run.sh gt-unit-tests --gtest_filter='CUDA*'   a program from bin/
#   ./run.sh python script.py ...                  Python with the bundle's gt package; gt._C is
#                                                  built for this machine's python3 on first use
#                                                  (build-extension.sh), pytest comes from pydeps/;
#                                                  GT_DEVICE=cuda where the machine has a GPU
#                                                  (unless GT_DEVICE is set)
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmd=$1
shift
if [ "$cmd" = python ]; then
  python=${PYTHON:-python3}
  "$here/build-extension.sh" "$python" >&2 || exit 1
  export PYTHONPATH="$here/python:$here/pydeps${PYTHONPATH:+:$PYTHONPATH}"
  export GT_BIN_DIR="$here/bin"
  # The bundle is for the GPU machine: its workers use the GPU unless GT_DEVICE says otherwise.
  if [ -z "${GT_DEVICE+set}" ] && [ -e /dev/nvidia0 ]; then export GT_DEVICE=cuda; fi
  [ -f "$here/examples/jargon.txt.gz" ] && export GT_CHAR_CORPUS=${GT_CHAR_CORPUS:-$here/examples/jargon.txt.gz}
  exec "$python" "$@"
fi
exec "$here/bin/$cmd" "$@"
