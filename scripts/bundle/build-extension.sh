#!/usr/bin/env bash
# Builds gt._C for one Python (default python3) from the bundle alone: GT's client core as
# static libraries and Cap'n Proto as shared ones, with their headers (client/, lib/); pybind11
# from that Python's installation, else the headers in client/pybind11. Does nothing when the
# extension is there already. Needs a C++20 compiler ($CXX, default c++).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python=${1:-python3}
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
out="$here/python/gt/_C$suffix"
[ -f "$out" ] && exit 0
include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
pybind11=$("$python" -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null || echo "$here/client/pybind11")
echo "build-extension: gt._C for $("$python" --version 2>&1) with pybind11 from $pybind11 (about a minute)"
kj=()
for lib in capnp-rpc capnp kj-tls kj-async kj; do
  kj+=("$(ls "$here"/lib/lib$lib-[0-9]*.so | head -n 1)")
done
"${CXX:-c++}" -O2 -std=c++20 -shared -fPIC -fvisibility=hidden \
  -I "$here/client/include" -isystem "$pybind11" -isystem "$include" \
  "$here/client/src/module.cpp" "$here/client/src/raw.cpp" \
  "$here/client/lib/libGTClient.a" "$here/client/lib/libGTTransport.a" "$here/client/lib/libGTCore.a" \
  "${kj[@]}" -Wl,-rpath,'$ORIGIN/../../lib' -o "$out.tmp"
mv "$out.tmp" "$out"
