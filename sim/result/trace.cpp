#include "sim/result/trace.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"

namespace commsim {
namespace {

int parse_index(const std::string& text, const std::string& option, const std::string& what) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0)
    throw InputError(option, "", "\"" + text + "\" is not " + what);
  return value;
}

constexpr const char* kCategory = "commsim";

std::string rank_name(int rank) { return rank < 0 ? "mean of the ranks" : "rank " + std::to_string(rank); }

}  // namespace

TraceSelection parse_trace_steps(const std::string& text) {
  TraceSelection s;
  if (text.empty()) return s;
  s.steps_given = true;
  const auto colon = text.find(':');
  const std::string what = "a step number or FIRST:LAST (e.g. 5 or 0:9)";
  s.first_step = parse_index(text.substr(0, colon), "--trace-steps", what);
  s.last_step = colon == std::string::npos ? s.first_step : parse_index(text.substr(colon + 1), "--trace-steps", what);
  if (s.last_step < s.first_step) throw InputError("--trace-steps", "", "range " + text + " goes down");
  if (s.last_step >= kMaxSteps) throw InputError("--trace-steps", "", "steps are at most " + std::to_string(kMaxSteps));
  return s;
}

std::vector<int> parse_trace_ranks(const std::string& text, int ranks) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const int r = parse_index(text.substr(start, comma - start), "--trace-ranks", "a rank number (e.g. 0,5)");
    if (std::find(out.begin(), out.end(), r) != out.end())
      throw InputError("--trace-ranks", "", "rank " + std::to_string(r) + " is listed twice");
    if (r >= ranks)
      throw InputError(
          "--trace-ranks", "",
          "rank " + std::to_string(r) + " is not below the " + std::to_string(ranks) + " ranks of the scenario");
    out.push_back(r);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void check_trace_ranks(const TraceSelection& selection, const Plan& plan) {
  // The default range may reach past a short run; a range the user named may not.
  const int last = selection.steps_given ? selection.last_step : selection.first_step;
  if (last >= plan.steps())
    throw InputError("--trace-steps", "",
                     "step " + std::to_string(last) + " is past the run's " + std::to_string(plan.steps()) +
                         " steps (0 to " + std::to_string(plan.steps() - 1) + ")");
  std::set<int> followed;
  for (int s = selection.first_step; s <= selection.last_step && s < static_cast<int>(plan.critical_rank.size()); ++s)
    followed.insert(plan.critical_rank[s]);
  for (int r : selection.ranks) {
    if (r >= plan.ranks)
      throw InputError(
          "--trace-ranks", "",
          "rank " + std::to_string(r) + " is not below the " + std::to_string(plan.ranks) + " ranks of the scenario");
    if (!plan.symmetric_ranks && !followed.count(r)) {
      std::string list;
      for (int f : followed) list += (list.empty() ? "" : ", ") + rank_name(f);
      throw InputError("--trace-ranks", "",
                       "rank " + std::to_string(r) +
                           ": with stragglers the simulator computes only the slowest rank's timeline of each step (" +
                           list + " in the traced steps); leave --trace-ranks out to trace those");
    }
  }
}

namespace {

// Chrome's format wants pid >= 0: the mean-of-ranks timeline (Local SGD local steps) gets its own process.
int pid_of(const Result& r, int rank) { return rank < 0 ? r.ranks : rank; }

// The process name of every rank shown and the names of its streams.
void add_names(const Result& r, int streams, nlohmann::json& events) {
  std::set<int> ranks;
  for (const TraceEvent& e : r.trace) ranks.insert(e.rank);
  for (int rank : ranks) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", pid_of(r, rank)},
                      {"args", {{"name", r.scenario + " (" + rank_name(rank) + ")"}}}});
    for (int s = 0; s <= streams; ++s)
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid_of(r, rank)},
                        {"tid", s},
                        {"args", {{"name", s == 0 ? std::string("compute") : "comm stream " + std::to_string(s)}}}});
  }
}

// Flow events (Trace Event Format, "Flow Events"): "s" and "f" with one id; Perfetto binds each to the slice of its
// thread that encloses its ts ("bp": "e" for the end), Chrome DevTools to the slice with the same cat, pid, tid and
// ts (front_end/models/trace/handlers/FlowsHandler.ts). So both sit at their slice's start.
void add_flow(const Result& r, const TraceEvent& src, const TraceEvent& e, std::uint64_t id, nlohmann::json& events) {
  events.push_back({{"name", "gradients"},
                    {"cat", kCategory},
                    {"ph", "s"},
                    {"id", id},
                    {"pid", pid_of(r, src.rank)},
                    {"tid", src.stream},
                    {"ts", src.start_s * 1e6}});
  events.push_back({{"name", "gradients"},
                    {"cat", kCategory},
                    {"ph", "f"},
                    {"bp", "e"},
                    {"id", id},
                    {"pid", pid_of(r, e.rank)},
                    {"tid", e.stream},
                    {"ts", e.start_s * 1e6}});
}

}  // namespace

nlohmann::json chrome_trace(const Result& r, int streams) {
  using nlohmann::json;
  json events = json::array();
  add_names(r, streams, events);
  // (rank, step, task) -> event, to anchor the flows.
  std::map<std::tuple<int, int, int>, const TraceEvent*> by_task;
  for (const TraceEvent& e : r.trace)
    if (e.task >= 0) by_task[{e.rank, e.step, e.task}] = &e;
  std::uint64_t flow_id = 0;
  for (const TraceEvent& e : r.trace) {
    json args = e.args;
    args["step"] = e.step;
    args["stream"] = e.stream;
    events.push_back({{"name", e.name},
                      {"cat", kCategory},
                      {"ph", "X"},
                      {"pid", pid_of(r, e.rank)},
                      {"tid", e.stream},
                      {"ts", e.start_s * 1e6},
                      {"dur", e.duration_s * 1e6},
                      {"args", args}});
    for (int from : e.flow_from) {
      const auto it = by_task.find({e.rank, e.step, from});
      if (it != by_task.end()) add_flow(r, *it->second, e, ++flow_id, events);
    }
  }
  // The run it belongs to (the Chrome format keeps "otherData" for such metadata): report checks it against the
  // result a trace is given after.
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"scenario", r.scenario}, {"scenario_hash", r.scenario_hash}, {"ranks", r.ranks}}}};
}

}  // namespace commsim
