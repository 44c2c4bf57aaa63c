# -*- Python -*-
# lit configuration of the ampc suite: FileCheck tests of the dialect, the
# frontend, the passes and the `ampc` driver.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "AMPC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".tg", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ampc_obj_root, "test")
# Inputs of other tests, not tests themselves.
config.excludes = ["Inputs", "bad", "fuzz-corpus", "CMakeLists.txt", "README.md",
                   "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%ampc_src_root", config.ampc_src_root))
config.substitutions.append(("%ampc_obj_root", config.ampc_obj_root))
config.substitutions.append(("%python", config.python_executable or "python3"))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
# The CPU backend runs one thread per CPU by default; lit runs several tests
# at once, so each runs on one thread unless the caller says otherwise (the
# results do not depend on it; test/Run/threads sets its own counts).
config.environment["AMPC_NUM_THREADS"] = os.environ.get("AMPC_NUM_THREADS", "1")
# The CPU's GEMM engine and its units (docs/runtime.md): scripts/test.sh runs
# part of the suite again with AMPC_CPU_ISA=avx2, the fallback path.
for var in ("AMPC_CPU_ISA", "AMPC_CPU_GEMM", "ONEDNN_MAX_CPU_ISA"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.ampc_tools_dir, config.llvm_tools_dir]
tools = ["ampc", "ampc-opt"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The fuzz targets (tools/ampc-fuzz): each one present is a feature of its
# own name; ampc-fuzz-onnx is built only on request (scripts/sanitize.sh).
for fuzzer in ["ampc-fuzz", "ampc-fuzz-onnx", "ampc-fuzz-npy",
               "ampc-fuzz-checkpoint"]:
    if os.path.exists(os.path.join(config.ampc_tools_dir, fuzzer)):
        config.available_features.add(fuzzer)
        if fuzzer == "ampc-fuzz":
            config.available_features.add("fuzzer")
        tools.append(fuzzer)
        llvm_config.add_tool_substitutions([fuzzer], tool_dirs)

if shutil.which("dot"):
    config.available_features.add("graphviz")

# A small file system that fills up (test/Jobs/full-disk.test): a tmpfs
# mounted in a mount namespace of the test's own, where the machine allows
# one (root, or unprivileged user namespaces).
def _can_mount_tmpfs():
    if not shutil.which("unshare"):
        return False
    try:
        return subprocess.run(
            ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False

# End-to-end tests of emitted C++ (test/Run/): the runtime built in-tree.
config.substitutions.append(("%ampc_runtime_include",
                             os.path.join(config.ampc_src_root, "runtime", "include")))
config.substitutions.append(("%ampc_runtime_lib",
                             os.path.join(config.ampc_obj_root, "runtime")))
if shutil.which("g++"):
    config.available_features.add("gxx")
if shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"):
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"))
# scripts/sanitize.sh runs the suite with ASAN_OPTIONS set (and its g++
# wrapper instruments the programs tests build).
if "ASAN_OPTIONS" in os.environ:
    config.available_features.add("asan")
if os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda-device")

# Differential tests against PyTorch (test/Reference/): an interpreter that
# imports torch and numpy (Debian's python3-torch, installed by
# scripts/setup.sh, lives in /usr/bin/python3's dist-packages).
import subprocess

if _can_mount_tmpfs():
    config.available_features.add("tmpfs-mount")


def _has_torch(python):
    try:
        return subprocess.run([python, "-c", "import torch, numpy"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_torch_python = next((p for p in (os.environ.get("AMPC_TORCH_PYTHON"), "/usr/bin/python3",
                                  config.python_executable)
                      if p and os.path.exists(p) and _has_torch(p)), None)
if _torch_python:
    config.available_features.add("torch")
    config.substitutions.append(("%torch_python", _torch_python))
elif os.environ.get("AMPC_REQUIRE_TORCH"):
    lit_config.fatal("AMPC_REQUIRE_TORCH is set but no python3 imports torch and numpy "
                     "(install python3-torch: bash scripts/setup.sh)")
else:
    lit_config.warning("no python3 imports torch: the differential tests against PyTorch "
                       "(test/Reference) are unsupported here (bash scripts/setup.sh "
                       "installs python3-torch)")
config.substitutions.append(("%ampc_torch", os.path.join(config.ampc_src_root, "tools",
                                                         "ampc-torch")))
config.substitutions.append(("%ampc_bin", os.path.join(config.ampc_tools_dir, "ampc")))
