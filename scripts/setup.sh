#!/usr/bin/env bash
# Installs every system dependency of ampc on Debian 12 (run as root, or with
# sudo available). Idempotent: does nothing when everything is installed.
set -euo pipefail

packages=(
  # Toolchain and build.
  g++ cmake ninja-build python3
  # The frontend fuzz target (libFuzzer needs clang).
  clang libclang-rt-14-dev
  # MLIR / LLVM 22 (libMLIR.so, mlir-tblgen, FileCheck, lit-22).
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # Runtime library: CPU GEMMs (oneDNN: bf16/f32 on AMX, AVX512-BF16,
  # AVX-512 or AVX2; OpenBLAS where oneDNN is absent); tests and benchmarks.
  libdnnl-dev libopenblas-dev libgtest-dev libbenchmark-dev libffi-dev
  # Data-parallel runs (mpirun) and the runtime's MPI collectives module.
  openmpi-bin libopenmpi-dev
  # Rendering --emit=dot.
  graphviz
  # The PyTorch reference and the differential tests (tools/ampc-torch).
  python3-torch python3-numpy
  # The real-data training test and example (scikit-learn's digits dataset).
  python3-sklearn
  # The ONNX importer (libonnx 1.12: protobuf classes and checker) and its
  # tests, which export torchvision models and check them with onnx.
  libonnx-dev libprotobuf-dev python3-onnx python3-torchvision
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
