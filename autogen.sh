#!/bin/sh
# Regenerate the build system: ./autogen.sh && ./configure && make
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
cp -f "$(automake --print-libdir)/tap-driver.sh" build-aux/
autoreconf --force --install "$@"
