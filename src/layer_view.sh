#!/bin/sh
# layer_view.sh VIEW SRC BUILD_H LAYER...
#
# Makes VIEW a directory holding nothing but a symlink SRC/LAYER for each LAYER, and one
# to the generated BUILD_H (linecap_build.h). src/meson.build runs it at configure time
# for every layer and gives that layer's library VIEW as its only include directory, so
# `#include "store/extract.hpp"` from a layer that may not use store/ is "No such file or
# directory" at compile time (doc/architecture.md, "Layers").
set -eu
view=$1 src=$2 build_h=$3
shift 3
rm -rf "$view"
mkdir -p "$view"
ln -s "$build_h" "$view/linecap_build.h"
for layer in "$@"; do
    ln -s "$src/$layer" "$view/$layer"
done
