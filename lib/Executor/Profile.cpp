//===- Profile.cpp - ampc run --profile ------------------------------------===//
//
// Sums the per-call times Executor::enableProfile collects by runtime
// function and by source op (rt::CallSource), and prints or writes them.
//
//===----------------------------------------------------------------------===//
#include "ampc/Executor/Profile.h"

#include "ampc/Dialect/RT/RTDialect.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

using namespace ampc;
using namespace ampc::exec;

namespace {

void sortSlowestFirst(std::vector<ProfileRow> &rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProfileRow &a, const ProfileRow &b) {
                     return a.seconds > b.seconds;
                   });
}

/// "linear m, backward (f.tg:3:7)"; a call of no source op by its function.
std::string label(const ProfileRow &r) {
  if (r.op.empty())
    return r.function;
  std::string s = r.op;
  if (!r.name.empty())
    s += " " + r.name;
  if (r.backward)
    s += ", backward";
  if (!r.loc.empty())
    s += " (" + r.loc + ")";
  return s;
}

void printRows(llvm::raw_ostream &os, const std::vector<ProfileRow> &rows,
               size_t limit, double total, bool sources) {
  char line[64];
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const ProfileRow &r = rows[i];
    std::snprintf(line, sizeof line, "  %9.3f %6.1f%% %10.4g  ",
                  r.seconds * 1e3, total > 0 ? 100 * r.seconds / total : 0.0,
                  r.calls);
    os << line << (sources ? label(r) : r.function);
    if (sources && !r.op.empty())
      os << ": " << r.function;
    if (!r.engines.empty())
      os << " [" << r.engines << "]";
    os << "\n";
  }
}

/// ["a", "b"] of "a, b".
llvm::json::Array nameArray(llvm::StringRef names) {
  llvm::json::Array out;
  while (!names.empty()) {
    auto [name, rest] = names.split(", ");
    out.push_back(name.str());
    names = rest;
  }
  return out;
}

} // namespace

void ampc::exec::addNames(std::string &into, llvm::StringRef names) {
  while (!names.empty()) {
    auto [name, rest] = names.split(", ");
    names = rest;
    bool known = false;
    for (llvm::StringRef have = into; !have.empty() && !known;) {
      auto [h, t] = have.split(", ");
      known = h == name;
      have = t;
    }
    if (!known)
      into += (into.empty() ? "" : ", ") + name.str();
  }
}

ProfileReport ampc::exec::summarizeProfile(
    const rt::Program &program,
    const std::vector<Executor::CallProfile> &calls, int64_t steps,
    bool firstLeftOut, double wallSeconds) {
  ProfileReport report;
  report.steps = steps;
  report.firstLeftOut = firstLeftOut;
  double per = steps > 0 ? 1.0 / static_cast<double>(steps) : 0.0;
  report.wallSeconds = wallSeconds * per;
  // The step's functions, by call.
  std::vector<std::string> callee;
  for (mlir::Operation &op : program.op.getStep().getBody().front())
    if (auto call = llvm::dyn_cast<rt::CallOp>(op))
      callee.push_back(call.getCallee().str());
  std::vector<const rt::CallSource *> source(calls.size(), nullptr);
  for (const rt::CallSource &s : program.sources)
    if (s.call < source.size())
      source[s.call] = &s;
  std::map<std::string, ProfileRow> byFunction;
  std::map<std::tuple<std::string, std::string, std::string, bool>,
           ProfileRow>
      bySource;
  for (size_t i = 0; i < calls.size() && i < callee.size(); ++i) {
    const Executor::CallProfile &c = calls[i];
    if (c.runs == 0)
      continue;
    double secs = c.seconds * per, n = static_cast<double>(c.runs) * per;
    report.callSeconds += secs;
    report.calls += n;
    auto add = [&](ProfileRow &r) {
      r.seconds += secs;
      r.calls += n;
      addNames(r.engines, c.engines);
      addNames(r.function, callee[i]);
    };
    add(byFunction[callee[i]]);
    const rt::CallSource *s = source[i];
    // Calls of no source op (the optimizer, the loss scaler) stand alone
    // by function.
    ProfileRow &r = s ? bySource[{s->loc, s->op, s->name, s->backward}]
                      : bySource[{"", "", callee[i], false}];
    report.byCall.emplace_back();
    for (ProfileRow *row : {&r, &report.byCall.back()})
      if (s && row->op.empty()) {
        row->op = s->op;
        row->name = s->name;
        row->loc = s->loc;
        row->backward = s->backward;
      }
    add(r);
    add(report.byCall.back());
  }
  for (auto &[key, row] : byFunction)
    report.byFunction.push_back(row);
  for (auto &[key, row] : bySource)
    report.bySource.push_back(row);
  sortSlowestFirst(report.byFunction);
  sortSlowestFirst(report.bySource);
  return report;
}

std::string ampc::exec::profileText(const ProfileReport &r,
                                    size_t sourceRows) {
  std::string out;
  llvm::raw_string_ostream os(out);
  char head[256];
  std::snprintf(head, sizeof head,
                "profile: %lld step%s%s, %.4g calls per step: %.3f ms per "
                "step in the calls, %.3f ms per step in all\n",
                static_cast<long long>(r.steps), r.steps == 1 ? "" : "s",
                r.firstLeftOut ? " after the first" : "", r.calls,
                r.callSeconds * 1e3, r.wallSeconds * 1e3);
  os << head;
  os << "by function:\n   ms/step  share calls/step  function [engines]\n";
  printRows(os, r.byFunction, r.byFunction.size(), r.callSeconds, false);
  os << "by source op";
  if (r.bySource.size() > sourceRows)
    os << " (the " << sourceRows << " slowest of " << r.bySource.size()
       << "; --profile-json has them all)";
  os << ":\n   ms/step  share calls/step  op: function [engines]\n";
  printRows(os, r.bySource, sourceRows, r.callSeconds, true);
  return out;
}

std::string ampc::exec::profileJson(const ProfileReport &r) {
  auto rows = [&](const std::vector<ProfileRow> &list, bool sources) {
    llvm::json::Array out;
    for (const ProfileRow &row : list) {
      llvm::json::Object o{
          {"functions", nameArray(row.function)},
          {"ms_per_step", row.seconds * 1e3},
          {"share", r.callSeconds > 0 ? row.seconds / r.callSeconds : 0.0},
          {"calls_per_step", row.calls},
          {"engines", nameArray(row.engines)}};
      if (sources) {
        auto orNull = [](const std::string &s) -> llvm::json::Value {
          return s.empty() ? llvm::json::Value(nullptr)
                           : llvm::json::Value(s);
        };
        o["op"] = orNull(row.op);
        o["name"] = orNull(row.name);
        o["loc"] = orNull(row.loc);
        o["backward"] = row.backward;
      }
      out.push_back(std::move(o));
    }
    return out;
  };
  llvm::json::Object top{{"steps", r.steps},
                         {"first_step_left_out", r.firstLeftOut},
                         {"calls_per_step", r.calls},
                         {"call_ms_per_step", r.callSeconds * 1e3},
                         {"wall_ms_per_step", r.wallSeconds * 1e3},
                         {"functions", rows(r.byFunction, false)},
                         {"ops", rows(r.bySource, true)},
                         {"calls", rows(r.byCall, true)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(top))) << "\n";
  return out;
}
