#!/usr/bin/env bash
# Configures (once) and builds ampc with Ninja into ${AMPC_BUILD_DIR:-build}.
# Extra arguments are Ninja targets (default: everything).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AMPC_BUILD_DIR:-build}

if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$(llvm-config-22 --cmakedir)/../mlir" \
    -DLLVM_DIR="$(llvm-config-22 --cmakedir)" \
    -DLLVM_EXTERNAL_LIT="$(command -v lit-22)"
fi
ninja -C "$build" "$@"
