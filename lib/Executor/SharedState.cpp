//===- SharedState.cpp - params and buffers of the other graphs -----------===//

#include "ampc/Executor/SharedState.h"

#include <map>

using namespace ampc;
using namespace ampc::exec;

namespace {
bool isShared(const rt::Slot &slot) {
  return slot.role == rt::Slot::Role::Param ||
         slot.role == rt::Slot::Role::Buffer;
}

bool has(const rt::Program &p, const std::string &name) {
  for (const rt::Slot &s : p.slots)
    if (isShared(s) && s.name == name)
      return true;
  return false;
}
} // namespace

std::set<std::string>
ampc::exec::otherGraphState(const std::vector<rt::Program> &programs,
                            const rt::Program &running) {
  std::set<std::string> names;
  for (const rt::Program &p : programs) {
    if (&p == &running)
      continue;
    for (const rt::Slot &s : p.slots)
      if (isShared(s) && !has(running, s.name))
        names.insert(s.name);
  }
  return names;
}

bool ampc::exec::otherGraphEntries(const std::vector<rt::Program> &programs,
                                   const rt::Program &running, Executor *eval,
                                   const rt::Program *evalProgram, bool cuda,
                                   uint64_t seed,
                                   std::vector<StateEntry> &out,
                                   std::string &error) {
  std::set<std::string> done;
  auto take = [&](Executor &ex, const rt::Program &p) {
    for (size_t i = 0; i < p.slots.size(); ++i) {
      const rt::Slot &s = p.slots[i];
      if (!isShared(s) || has(running, s.name) || done.count(s.name))
        continue;
      StateEntry e{s.name, s.dtype, s.shape, {}};
      if (!ex.readSlot(i, e.bytes, error))
        return false;
      done.insert(s.name);
      out.push_back(std::move(e));
    }
    return true;
  };
  if (eval && evalProgram && !take(*eval, *evalProgram))
    return false;
  for (const rt::Program &p : programs) {
    if (&p == &running || &p == evalProgram)
      continue;
    bool needed = false;
    for (const rt::Slot &s : p.slots)
      needed |= isShared(s) && !has(running, s.name) && !done.count(s.name);
    if (!needed)
      continue;
    std::unique_ptr<Executor> fresh = Executor::create(p, cuda, seed, error);
    if (!fresh || !take(*fresh, p))
      return false;
  }
  return true;
}
