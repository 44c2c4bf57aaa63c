//===- Executor.h - run a lowered step in-process ----------------*- C++ -*-===//
//
// Runs an rt.program (the same lowered calls the C++ emitter prints) on the
// runtime library, calling each entry point through libffi.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_EXECUTOR_H
#define AMPC_EXECUTOR_EXECUTOR_H

#include "ampc/Dialect/RT/ProgramInfo.h"

#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ampc::exec {

/// Where a run stands: updates (steps) done, and the data position.
struct Position {
  int64_t steps = 0;
  /// The epoch being consumed (from 1) and the batches of it already taken.
  int64_t epoch = 1, batch = 0;
};

/// A named tensor of a checkpoint or a `--params-out` folder that the
/// running program does not hold (a param or buffer only another graph of
/// the file declares).
struct StateEntry {
  std::string name;
  int32_t dtype;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

class Executor {
public:
  ~Executor();
  /// Creates the context (`cuda` or `cpu`), allocates the arena and the
  /// slots and runs the initialisation calls. On failure returns null and
  /// sets `error`.
  static std::unique_ptr<Executor> create(const rt::Program &program,
                                          bool cuda, uint64_t seed,
                                          std::string &error);

  /// Writes host data into a slot (an input or a parameter; bytes must
  /// match).
  bool writeSlot(size_t slot, const void *data, size_t bytes,
                 std::string &error);
  /// Reads a slot's bytes to the host.
  bool readSlot(size_t slot, std::vector<char> &bytes, std::string &error);
  /// Fills the input slots not given: floats N(0,1), integers uniform in
  /// [0, range) (range from their consumer, else 2), from `seed`.
  bool synthesizeInputs(const std::vector<bool> &given, uint64_t seed,
                        std::string &error);
  /// Runs one step.
  bool step(std::string &error);
  /// Reads output `i` (after a step) as f64 values.
  bool readOutput(size_t i, std::vector<double> &values, std::string &error);
  /// Reads output `i` (after a step) as its bytes.
  bool readOutputBytes(size_t i, std::vector<char> &bytes, std::string &error);
  /// The scale the next step will use (dynamic scaler only), and whether the
  /// last step was skipped.
  bool readScale(double &scale, std::string &error);
  bool readSkipped(bool &skipped, std::string &error);

  /// A step's scalars read without blocking the device (docs/cuda.md "Step
  /// scalars, read one step late"): queueStepScalars, called right after a
  /// step is queued, queues ONE asynchronous copy into page-locked memory of
  /// output 0 when it is a single element (the loss), the skipped flag, the
  /// loss scale the next step will use and the index check word; takeStepScalars waits for the
  /// oldest queued copy and decodes it. Up to two reads may be in flight.
  struct StepScalars {
    double loss = NAN;   ///< NaN when output 0 is not one element
    bool skipped = false; ///< false when the step checks no gradients
    double nextScale = 0; ///< 0 without a dynamic scaler
    int32_t checkSite = -1; ///< the index check word: -1, or a failed site
  };
  bool queueStepScalars(std::string &error);
  bool takeStepScalars(StepScalars &out, std::string &error);
  /// The context's host synchronisations so far (ampc_host_syncs).
  uint64_t hostSyncs();

  /// Checkpoints of parameters, optimizer state and scaler state, with the
  /// run's position, written atomically; loading validates everything before
  /// touching the state.
  /// `extra` entries (other graphs' params and buffers) are written after
  /// the program's own.
  bool save(const std::string &path, const Position &position,
            std::string &error, const std::vector<StateEntry> &extra = {});
  /// Loads by name: every param and optimizer state of the program must be
  /// in the checkpoint with its dtype and shape, and the checkpoint may hold
  /// nothing else but loss-scaler state. Scaler state missing from the
  /// checkpoint keeps its initial value, scaler state the program lacks is
  /// ignored; `note` says which (empty when everything matched).
  /// Entries named in `alsoKnown` (other graphs' params and buffers) are
  /// skipped, not refused.
  bool load(const std::string &path, Position &position, std::string &note,
            std::string &error, const std::set<std::string> &alsoKnown = {});
  /// Opt level O2: recomputes every low model copy (state `NAME.model`) as
  /// its master param `NAME` rounded (after params were written directly).
  bool refreshModelCopies(std::string &error);
  /// Copies every param/state slot of `from` that this program has under the
  /// same name, dtype and size (shared state of two graphs of one file).
  bool copySharedFrom(Executor &from, std::string &error);

  /// Data parallel (docs/distributed.md): the number of gradient
  /// all-reduce calls (`ampc_grad_allreduce_*`) in the step, and the seconds
  /// the steps have spent inside them so far (waiting included).
  size_t collectiveCalls() const;
  double collectiveSeconds() const;

  /// The runtime context (an `ampc_context`), for the check words.
  void *context();
  /// Runs the step's calls [0, end) again, calling `after(i)` once call i is queued (docs/jobs.md, "The overflow
  /// report").
  bool replay(size_t end, const std::function<bool(size_t call)> &after,
              std::string &error);
  /// The pointer argument `arg` of the step's call `call` passes.
  void *callPointer(size_t call, size_t arg);

private:
  explicit Executor(const rt::Program &program);
  struct Impl;
  const rt::Program &program;
  std::unique_ptr<Impl> impl;
  struct StepReads;
  /// Destroyed before impl (it frees page-locked memory of impl's context).
  std::unique_ptr<StepReads> reads;
};

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_EXECUTOR_H
