#!/usr/bin/env bash
# Configures (once) and builds ampc with Ninja into ${AMPC_BUILD_DIR:-build}.
# Extra arguments are Ninja targets (default: everything).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AMPC_BUILD_DIR:-build}

launcher=()
# Developers' rebuilds across worktrees share a compiler cache when ccache is
# installed; CI (a clean machine) builds without one.
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$(llvm-config-22 --cmakedir)/../mlir" \
    -DLLVM_DIR="$(llvm-config-22 --cmakedir)" \
    -DLLVM_EXTERNAL_LIT="$(command -v lit-22)"
fi
ninja -C "$build" "$@"
