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
  /// The CUDA device of the contexts of executors created after this call
  /// (default 0): a data-parallel rank's device (docs/distributed.md).
  static void setCudaDevice(int device);

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
  /// Gradient accumulation (rt::Program::accumulate > 1): one micro-batch
  /// (the step's calls before program.updateCall: forward, backward, the
  /// accumulation) and the update (the calls from updateCall on: the
  /// scaler's check, clipping, the optimizer, the scale update). step()
  /// is both.
  bool microStep(std::string &error);
  bool update(std::string &error);
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
  /// run's position, written and read by the runtime (ampc_checkpoint_save
  /// / _load: atomically; loading validates everything before touching the
  /// state). Errors are the runtime's text ("cannot write checkpoint ...").
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
  /// How many step runs (steps, or updates with accumulation) executed the
  /// gradient all-reduce.
  int64_t collectiveRounds() const;

  /// The runtime context (an `ampc_context`), for the check words.
  void *context();
  /// Runs the step's calls [0, end) again, calling `after(i)` once call i is queued (docs/jobs.md, "The overflow
  /// report").
  bool replay(size_t end, const std::function<bool(size_t call)> &after,
              std::string &error);
  /// The pointer argument `arg` of the step's call `call` passes.
  void *callPointer(size_t call, size_t arg);

  /// The overflow report's snapshot (docs/jobs.md, "The overflow report"):
  /// after it is enabled, every step queues, right after the gradients'
  /// overflow check, one ampc_copy_if_flag of the slots the step reads up to
  /// that check (inputs, params, O2's model copies, buffers, counters, the
  /// loss scale) into a snapshot area, predicated on the step's found_inf,
  /// so a step that was not skipped copies nothing and the host never
  /// waits. Slots a skipped step leaves as they were (those only the
  /// optimizer update writes) have one copy; the others (inputs, buffers,
  /// counters, the scaler's state) have two, by the step's parity, so two
  /// skipped steps in a row each keep their own. Needs a program with an
  /// overflow check; false with `error` set when allocation fails.
  bool enableSnapshot(std::string &error);
  bool hasSnapshot() const;
  /// The device bytes the snapshot areas take.
  int64_t snapshotBytes() const;
  /// Steps run so far (the step queued last is stepsTaken() - 1).
  uint64_t stepsTaken() const;
  /// Runs the calls [0, end) of step `serial` (one of the last two steps,
  /// which was skipped) again from its snapshot, calling `after(i)` as
  /// replay() does. The calls read and write the snapshot areas in place of
  /// the slots, so no live state changes; the latest step's outputs, which
  /// share the arena with the replay, are put back afterwards.
  bool replaySnapshot(uint64_t serial, size_t end,
                      const std::function<bool(size_t call)> &after,
                      std::string &error);
  /// With `keep` on, replaySnapshot also reads what its calls left in the
  /// outputs before putting the latest step's back: output 0 of a replay
  /// that reached the loss is the skipped step's loss, bit for bit, when the
  /// replay is the step (AMPC_CHECK_REPLAY=1 in `ampc run`).
  void keepReplayOutputs(bool keep);
  /// Output `i` of the last replay as f64 values (empty when not kept).
  std::vector<double> replayedOutput(size_t i) const;

  /// `ampc run --profile` (docs/cli.md, "Profiles"): once enabled, every
  /// call of the step is timed, on CUDA with the context synchronized after
  /// each (which serializes the device's queue), and the implementations
  /// its GEMMs and convolutions ran on are taken after it
  /// (ampc_context_take_engines). Replays are not counted.
  struct CallProfile {
    double seconds = 0; ///< summed over its runs
    int64_t runs = 0;
    std::string engines; ///< comma-separated, each name once
  };
  bool enableProfile(std::string &error);
  /// Starts the sums again (the first step's are left out this way).
  void resetProfile();
  /// By call, in the step's order; empty unless enabled.
  const std::vector<CallProfile> &profile() const;

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
