#include "explore/grid.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "reports/format.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/json_document_cache.hpp"

namespace commsim::explore {

using namespace commsim::reports;  // the writers: tables, CSV, SVG, HTML, progress

namespace {

// Splits at commas outside [], {} and "...", so that JSON values keep their commas.
std::vector<std::string> split_values(const std::string& list, const std::string& spec) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  bool quoted = false;
  for (char c : list) {
    if (quoted) {
      quoted = c != '"';
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth < 0) break;
    } else if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  if (depth != 0 || quoted) throw InputError("--vary", "", "\"" + spec + "\" has unbalanced brackets or quotes");
  out.push_back(current);
  return out;
}

}  // namespace

Json load_base(const std::string& scenario_file, const std::vector<std::string>& sets, int steps) {
  std::vector<std::string> all = sets;
  if (steps > 0) all.push_back("steps=" + std::to_string(steps));
  return apply_overrides(read_json_file(scenario_file), all, scenario_file);
}

Fidelity fidelity_option(const std::string& text) {
  Fidelity f;
  if (!parse_fidelity(text, f))
    throw InputError("--fidelity", "", "unknown fidelity \"" + text + "\" (analytical, flow)");
  return f;
}

Axis parse_axis(const std::string& spec, const std::string& scenario_file) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--vary", "", "\"" + spec + "\" is not KEY=V1,V2,... (e.g. nodes=1,2,4)");
  Axis axis;
  axis.key = spec.substr(0, eq);
  const std::string list = spec.substr(eq + 1);
  if (list.empty()) throw InputError("--vary", axis.key, "no values: the grid is empty");
  for (const std::string& v : split_values(list, spec)) {
    if (v.empty()) throw InputError("--vary", axis.key, "empty value in \"" + list + "\"");
    std::string value = v;
    if (axis.key == "topology" || axis.key == "model") {
      namespace fs = std::filesystem;
      const fs::path beside_scenario = fs::path(scenario_file).parent_path() / v;
      if (!path_exists(beside_scenario.string()) && path_exists(v)) value = fs::absolute(v).lexically_normal().string();
    }
    axis.values.push_back(value);
    axis.labels.push_back(v);
  }
  return axis;
}

bool keys_overlap(const std::string& a, const std::string& b) {
  const auto within = [](const std::string& outer, const std::string& inner) {
    return inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '.';
  };
  return a == b || within(a, b) || within(b, a);
}

std::vector<std::vector<std::string>> cartesian(const std::vector<Axis>& axes) {
  if (axes.empty()) throw InputError("--vary", "", "nothing to vary: the grid is empty");
  double rows = 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const Axis& a = axes[i];
    if (a.values.empty()) throw InputError("--vary", a.key, "no values: the grid is empty");
    for (std::size_t j = 0; j < i; ++j)
      if (keys_overlap(axes[j].key, a.key))
        throw InputError("--vary", a.key,
                         a.key == axes[j].key ? "varied twice; give all its values in one --vary"
                                              : "overlaps --vary " + axes[j].key +
                                                    ": one would override the other in every row; vary one of them");
    if (std::set<std::string>(a.values.begin(), a.values.end()).size() != a.values.size())
      throw InputError("--vary", a.key, "lists a value twice (the grid would repeat its rows)");
    rows *= static_cast<double>(a.values.size());
  }
  if (rows > kMaxGridRows)
    throw InputError("--vary", "",
                     "the grid has " + std::to_string(static_cast<long long>(std::min(rows, 1e18))) +
                         " rows, more than " + std::to_string(kMaxGridRows) +
                         " (every process holds the whole grid, sharded or not): vary less");
  std::vector<std::vector<std::string>> grid{{}};
  for (const Axis& a : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& partial : grid)
      for (const std::string& v : a.values) {
        next.push_back(partial);
        next.back().push_back(a.key + "=" + v);
      }
    grid = std::move(next);
  }
  return grid;
}

namespace {
void erase_nulls(Json& j) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end();) {
    if (it->is_null()) {
      it = j.erase(it);
    } else {
      erase_nulls(*it);
      ++it;
    }
  }
}
}  // namespace

Json apply_sets(const Json& base, const std::vector<std::string>& sets, const std::string& file) {
  Json doc = apply_overrides(base, sets, file);
  erase_nulls(doc);
  return doc;
}

Evaluation evaluate(const Json& base, const std::string& file, const std::vector<std::string>& sets,
                    Fidelity fidelity) {
  Evaluation e;
  e.sets = sets;
  try {
    SimulationRun run = simulate_document(apply_sets(base, sets, file), file, fidelity, TraceSelection::none());
    e.scenario = std::move(run.scenario);
    e.result = std::move(run.result);
    e.buckets = static_cast<int>(run.plan.buckets.size());
    e.streams = run.plan.streams;
  } catch (const InputError& err) {
    e.error = err.what();
  }
  return e;
}

void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn,
                  const std::function<void(std::size_t)>& progress, const std::function<bool()>& stop) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>(n, jobs > 0 ? static_cast<std::size_t>(jobs) : cores);
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex mutex;
  std::exception_ptr first_error;
  auto worker = [&] {
    for (std::size_t i; !(stop && stop()) && (i = next++) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!first_error) first_error = std::current_exception();
        next = n;  // stop handing out work
      }
      std::lock_guard lock(mutex);
      ++done;
      if (progress) progress(done);
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();  // the calling thread works too
  for (std::thread& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

std::vector<Evaluation> evaluate_all(const Json& base, const std::string& file,
                                     const std::vector<std::vector<std::string>>& variants, Fidelity fidelity, int jobs,
                                     const std::string& progress_label) {
  std::vector<Evaluation> out(variants.size());
  ProgressBar bar(progress_label, variants.size());
  JsonDocumentCache documents;  // each model and topology file parsed once for the whole grid
  parallel_for(
      variants.size(), jobs,
      [&](std::size_t i) {
        UseJsonDocumentCache use(documents);
        out[i] = evaluate(base, file, variants[i], fidelity);
      },
      [&](std::size_t done) { bar.update(done); });
  bar.finish();
  return out;
}

}  // namespace commsim::explore
