//===- Distributed.cpp - `ampc run` across MPI ranks ------------*- C++ -*-===//
#include "ampc/Executor/Distributed.h"

#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/interrupt.h"
#include "ampc/runtime.h"

#include "mlir/IR/Builders.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ampc;
using namespace ampc::exec;

namespace {
std::string statusText(const char *what, ampc_status st) {
  std::string e = ampc_last_error();
  return std::string(what) + " failed: " + ampc_status_string(st) +
         (e.empty() ? "" : " (" + e + ")");
}

uint64_t fnv1a(const char *data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint8_t>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}
} // namespace

int ampc::exec::launcherWorldSize() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char *v = getenv(var))
      return std::max(std::atoi(v), 1);
  return 0;
}

bool ampc::exec::launchedUnderMpi() { return launcherWorldSize() > 1; }

int ampc::exec::launcherRank() {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char *v = getenv(var))
      return std::max(std::atoi(v), 0);
  return 0;
}

namespace {
volatile pid_t gLauncherChild = -1;

/// A hangup ends the job too: mpirun runs in its own process group, which a
/// closing terminal does not reach.
extern "C" void onLauncherHangup(int sig) {
  if (gLauncherChild > 0)
    kill(gLauncherChild, sig);
  std::signal(sig, SIG_DFL);
  raise(sig);
}

/// The processes whose parent is `parent` (mpirun's ranks on this machine).
std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> out;
  DIR *proc = opendir("/proc");
  if (!proc)
    return out;
  while (struct dirent *e = readdir(proc)) {
    char *end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end)
      continue;
    std::string path = std::string("/proc/") + e->d_name + "/stat";
    FILE *f = std::fopen(path.c_str(), "r");
    if (!f)
      continue;
    char buf[512];
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = 0;
    // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
    const char *close = std::strrchr(buf, ')');
    char state;
    long ppid;
    if (close && std::sscanf(close + 1, " %c %ld", &state, &ppid) == 2 &&
        ppid == parent)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

/// Delivers `sig` to the ranks mpirun started (the rule of ampc/interrupt.h runs
/// in each), or to mpirun itself while it has none yet.
void forwardToJob(pid_t mpirun, int sig) {
  std::vector<pid_t> ranks = childrenOf(mpirun);
  if (ranks.empty()) {
    kill(mpirun, sig);
    return;
  }
  for (pid_t rank : ranks)
    kill(rank, sig);
}
} // namespace

int ampc::exec::runLauncher(const std::vector<std::string> &cmd,
                            std::string &error) {
  std::vector<char *> args;
  for (const std::string &c : cmd)
    args.push_back(const_cast<char *>(c.c_str()));
  args.push_back(nullptr);
  // The signals wait until the child's pid is known.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  sigprocmask(SIG_BLOCK, &block, &old);
  bool terminalInput = isatty(STDIN_FILENO);
  pid_t child = fork();
  if (child < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    error = "cannot start " + cmd.front() + ": " + std::strerror(errno);
    return 3;
  }
  if (child == 0) {
    // mpirun in a process group of its own: a signal sent to this
    // process's group (coreutils `timeout`, a terminal's Ctrl-C) reaches
    // this process alone, which hands each interruption to the ranks once.
    // Open MPI's mpirun would send them SIGTERM and SIGKILL a second later
    // (odls_base_sigkill_timeout), too soon for a step and a checkpoint.
    setpgid(0, 0);
    // A background group must not read the terminal (SIGTTIN would stop
    // it); the ranks read no input.
    if (terminalInput) {
      int devNull = open("/dev/null", O_RDONLY);
      if (devNull >= 0) {
        dup2(devNull, STDIN_FILENO);
        close(devNull);
      }
    }
    sigprocmask(SIG_SETMASK, &old, nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "ampc: error: cannot run %s: %s\n", args[0],
                 std::strerror(errno));
    std::_Exit(3);
  }
  setpgid(child, child); // as the child does: whichever runs first
  gLauncherChild = child;
  int status = 0;
  {
    Interruption signals(Interruption::Later::Record);
    struct sigaction sa, oldHup;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = onLauncherHangup;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGHUP, &sa, &oldHup);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    // Polled rather than waited for: what a signal asks for (a kill of each
    // rank) is not for a signal handler to do.
    bool forwarded = false;
    while (true) {
      pid_t done = waitpid(child, &status, WNOHANG);
      if (done == child || (done < 0 && errno != EINTR))
        break;
      // The first signal once (a repeat within 2 s is the same
      // interruption); a later one too: the ranks then exit at once.
      int sig = 0;
      if (!forwarded && Interruption::signal()) {
        sig = Interruption::signal();
        forwarded = true;
      }
      if (int later = Interruption::takeLaterSignal())
        sig = later;
      if (sig)
        forwardToJob(child, sig);
      usleep(20000);
    }
    sigaction(SIGHUP, &oldHup, nullptr);
    gLauncherChild = -1;
    if (forwarded) {
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
      // The ranks stopped as the signal asks (every requested output
      // written, or a note naming what was not); mpirun's own code for
      // that varies.
      if (code != 0 || WIFSIGNALED(status))
        return 128 + Interruption::signal();
      return 0;
    }
  }
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

unsigned ampc::exec::markSyncBatchNorm(mlir::ModuleOp module) {
  unsigned marked = 0;
  mlir::UnitAttr unit = mlir::UnitAttr::get(module.getContext());
  module.walk([&](mlir::Operation *op) {
    bool training = false;
    if (auto bn = llvm::dyn_cast<tg::BatchNormOp>(op))
      training = bn.getTraining();
    else if (auto grad = llvm::dyn_cast<tg::BatchNormGradOp>(op))
      training = grad.getTraining();
    else
      training = llvm::isa<tg::BatchNormUpdateOp>(op);
    if (!training)
      return;
    op->setAttr("sync", unit);
    ++marked;
  });
  return marked;
}

struct World::Impl {
  ampc_comm comm = nullptr;
  ampc_context host = nullptr; ///< CPU context for host staging
};

World::~World() {
  if (impl) {
    ampc_comm_destroy(impl->comm);
    ampc_context_destroy(impl->host);
  }
}

std::unique_ptr<World> World::join(std::string &error) {
  std::unique_ptr<World> w(new World);
  w->impl = std::make_unique<Impl>();
  if (ampc_status st = ampc_comm_create_mpi(&w->impl->comm)) {
    error = statusText("joining the MPI job", st);
    return nullptr;
  }
  if (ampc_status st =
          ampc_context_create(AMPC_BACKEND_CPU, 0, &w->impl->host)) {
    error = statusText("ampc_context_create", st);
    return nullptr;
  }
  int32_t r = 0, s = 1;
  ampc_comm_rank(w->impl->comm, &r);
  ampc_comm_size(w->impl->comm, &s);
  w->rankId = r;
  w->worldSize = s;
  return w;
}

void World::abortJob(int code) {
  ampc_comm_abort(impl->comm, code);
  std::_Exit(code);
}

bool World::checkFingerprint(
    const std::vector<std::pair<std::string, std::string>> &fields,
    std::string &error) {
  std::string mine;
  for (const auto &[name, value] : fields)
    mine += name + "=" + value + "\n";
  // Rank 0's text, in a fixed-size buffer so every rank broadcasts the same
  // number of bytes whatever its own fields are.
  std::vector<char> buf(8192, 0);
  if (rankId == 0)
    std::memcpy(buf.data(), mine.data(), std::min(mine.size(), buf.size() - 1));
  if (ampc_status st = ampc_comm_broadcast(impl->comm, impl->host, buf.data(),
                                           int64_t(buf.size()), 0)) {
    error = statusText("fingerprint broadcast", st);
    return false;
  }
  std::string root(buf.data());
  std::string differs;
  size_t pos = 0;
  for (const auto &[name, value] : fields) {
    std::string want = name + "=";
    size_t at = root.find("\n" + want);
    at = root.compare(0, want.size(), want) == 0 ? 0
         : at == std::string::npos             ? at
                                               : at + 1;
    std::string theirs;
    if (at != std::string::npos) {
      size_t end = root.find('\n', at);
      theirs = root.substr(at + want.size(), end - at - want.size());
    }
    if (at == std::string::npos || theirs != value) {
      differs = name + " (rank 0: '" + theirs + "', rank " +
                std::to_string(rankId) + ": '" + value + "')";
      break;
    }
    ++pos;
  }
  int32_t bad = differs.empty() ? 0 : 1;
  if (ampc_status st = ampc_comm_allreduce(impl->comm, impl->host, &bad,
                                           AMPC_I32, 1, AMPC_REDUCE_MAX)) {
    error = statusText("fingerprint check", st);
    return false;
  }
  if (!bad)
    return true;
  error = differs.empty()
              ? "the ranks were launched on different programs or options "
                "(another rank reports what differs)"
              : "the ranks were launched on different programs or options: " +
                    differs;
  return false;
}

bool World::broadcastState(Executor &ex, const rt::Program &program,
                           std::string &error) {
  for (size_t i = 0; i < program.slots.size(); ++i) {
    const rt::Slot &slot = program.slots[i];
    if (slot.role != rt::Slot::Role::Param &&
        slot.role != rt::Slot::Role::State &&
        slot.role != rt::Slot::Role::Buffer)
      continue;
    std::vector<char> bytes;
    if (!ex.readSlot(i, bytes, error))
      return false;
    if (ampc_status st = ampc_comm_broadcast(impl->comm, impl->host,
                                             bytes.data(),
                                             int64_t(bytes.size()), 0)) {
      error = statusText(("broadcast of '" + slot.name + "'").c_str(), st);
      return false;
    }
    if (!ex.writeSlot(i, bytes.data(), bytes.size(), error))
      return false;
  }
  return true;
}

bool World::cudaDevice(int &device, std::string &error) {
  int32_t d = 0;
  if (ampc_status st = ampc_comm_cuda_device(impl->comm, &d)) {
    error = statusText("choosing this rank's CUDA device", st);
    return false;
  }
  device = d;
  return true;
}

bool World::attach(Executor &ex, std::string &error) {
  // The compiled step reduces its own gradients (ampc-data-parallel's ops,
  // on the context's communicator); a step compiled without them would let
  // the replicas drift apart.
  if (ex.collectiveCalls() == 0) {
    error = "the training step has no gradient all-reduce (it was compiled "
            "without the data-parallel pass, e.g. from an already lowered "
            "file); compile it under mpirun or with --data-parallel";
    return false;
  }
  if (ampc_status st = ampc_context_set_comm(
          static_cast<ampc_context>(ex.context()), impl->comm)) {
    error = statusText("ampc_context_set_comm", st);
    return false;
  }
  attached = &ex;
  return true;
}

double World::allReduceSeconds() const {
  return attached ? attached->collectiveSeconds() : 0.0;
}

int64_t World::allReduceCount() const {
  return attached ? attached->collectiveRounds() : 0;
}

World::BucketStats World::bucketStats() const {
  BucketStats s;
  if (attached)
    ampc_grad_allreduce_stats(static_cast<ampc_context>(attached->context()),
                              &s.waits, &s.doneBeforeWait, &s.waitSeconds,
                              &s.tests, nullptr);
  return s;
}

bool World::shareCommunicator(Executor &ex, std::string &error) {
  if (ampc_status st = ampc_context_set_comm(
          static_cast<ampc_context>(ex.context()), impl->comm)) {
    error = statusText("ampc_context_set_comm", st);
    return false;
  }
  return true;
}

bool World::testDivergence(Executor &ex, const rt::Program &program,
                           int64_t step, std::string &error) {
  const char *spec = getenv("AMPC_TEST_DIVERGE");
  if (!spec)
    return true;
  long long rank = -1, at = -1;
  if (std::sscanf(spec, "%lld:%lld", &rank, &at) != 2 || rank != rankId ||
      at != step)
    return true;
  for (size_t i = 0; i < program.slots.size(); ++i) {
    if (program.slots[i].role != rt::Slot::Role::Param)
      continue;
    std::vector<char> bytes;
    if (!ex.readSlot(i, bytes, error))
      return false;
    // A bit the next updates cannot round away: the top mantissa bit of
    // element 0 of an f32 (byte 2, little endian), some bit of a 16-bit one.
    if (!bytes.empty())
      bytes[std::min<size_t>(2, bytes.size() - 1)] ^= 0x40;
    return ex.writeSlot(i, bytes.data(), bytes.size(), error);
  }
  return true;
}

bool World::meanOf(double &value, int &signal, std::string &error) {
  // One f32 sum of {loss, signal word}: the loss's sum divided by W is
  // AMPC_REDUCE_MEAN's own arithmetic (same bits); the word counts the
  // ranks with a pending SIGINT (units) and SIGTERM (multiples of 1024),
  // exact in f32 for fewer than 1024 ranks. (Summed as f64 would need a
  // dtype the MPI module lacks; f32 holds the logged loss's precision.)
  float buf[2] = {static_cast<float>(value),
                  signal == SIGTERM ? 1024.0f : signal ? 1.0f : 0.0f};
  if (ampc_status st = ampc_comm_allreduce(impl->comm, impl->host, buf,
                                           AMPC_F32, 2, AMPC_REDUCE_SUM)) {
    error = statusText("loss all-reduce", st);
    return false;
  }
  value = buf[0] / static_cast<float>(worldSize);
  // The job's signal, the same on every rank (this rank's own included).
  signal = buf[1] >= 1024.0f ? SIGTERM : buf[1] > 0.0f ? SIGINT : 0;
  return true;
}

bool World::checkReplicas(Executor &ex, const rt::Program &program,
                          std::string &error) {
  std::vector<size_t> params;
  std::vector<int32_t> sums; // two 32-bit halves per parameter
  for (size_t i = 0; i < program.slots.size(); ++i) {
    if (program.slots[i].role != rt::Slot::Role::Param)
      continue;
    std::vector<char> bytes;
    if (!ex.readSlot(i, bytes, error))
      return false;
    uint64_t h = fnv1a(bytes.data(), bytes.size());
    params.push_back(i);
    sums.push_back(int32_t(uint32_t(h)));
    sums.push_back(int32_t(uint32_t(h >> 32)));
  }
  std::vector<int32_t> root = sums;
  if (ampc_status st = ampc_comm_broadcast(impl->comm, impl->host, root.data(),
                                           int64_t(root.size() * 4), 0)) {
    error = statusText("replica checksum", st);
    return false;
  }
  int32_t first = int32_t(params.size());
  for (size_t k = 0; k < params.size(); ++k)
    if (root[2 * k] != sums[2 * k] || root[2 * k + 1] != sums[2 * k + 1]) {
      first = int32_t(k);
      break;
    }
  // The smallest index any rank saw differ: -max(-k).
  int32_t neg = -first;
  if (ampc_status st = ampc_comm_allreduce(impl->comm, impl->host, &neg,
                                           AMPC_I32, 1, AMPC_REDUCE_MAX)) {
    error = statusText("replica checksum", st);
    return false;
  }
  first = -neg;
  if (first == int32_t(params.size()))
    return true;
  error = "replicas differ: parameter '" + program.slots[params[first]].name +
          "' is not the same on every rank";
  return false;
}
