#include "explore/tuner.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "explore/sharding_search.hpp"
#include "reports/format.hpp"
#include "reports/snippets.hpp"

namespace commsim::explore {

using namespace commsim::reports;  // the writers: tables, CSV, SVG, HTML, progress

namespace {

std::string mb(double v) { return number(v) + " MB"; }

Knob fusion_knob(const Scenario& s) {
  Knob k{"fusion size", false, {}, 0};
  const Fusion& f = s.strategy.fusion;
  // DDP's smaller first bucket is kept when the scenario has one (first_bucket_mb < size_mb).
  const bool first = f.mode == FusionMode::Size && f.first_bucket_mb > 0 && f.first_bucket_mb < f.size_mb;
  bool matched = false;
  for (double size : {1, 2, 4, 8, 16, 25, 32, 64, 128, 256}) {
    Json fusion = {{"mode", "size"}, {"size_mb", size}};
    if (first && f.first_bucket_mb < size) fusion["first_bucket_mb"] = f.first_bucket_mb;
    if (f.mode == FusionMode::Size && f.size_mb == size) k.given = k.choices.size(), matched = true;
    k.choices.push_back({mb(size) + " buckets", {"strategy.fusion=" + fusion.dump()}});
  }
  if (!matched) {
    const std::string own = f.mode == FusionMode::None    ? "no fusion"
                            : f.mode == FusionMode::Index ? "index split fusion"
                            : f.mode == FusionMode::Auto  ? "auto fusion (64 MB)"
                                                          : mb(f.size_mb) + " buckets";
    k.choices.insert(k.choices.begin(), {own, {}});
    k.given = 0;
  }
  return k;
}

Knob streams_knob(const Scenario& s) {
  Knob k{"streams", false, {}, 0};
  for (int n = 1; n <= 4; ++n) {
    if (s.strategy.nccl_comm_num == n) k.given = k.choices.size();
    k.choices.push_back(
        {std::to_string(n) + (n == 1 ? " stream" : " streams"), {"strategy.nccl_comm_num=" + std::to_string(n)}});
  }
  if (s.strategy.nccl_comm_num > 4) {
    k.given = k.choices.size();
    k.choices.push_back({std::to_string(s.strategy.nccl_comm_num) + " streams", {}});
  }
  return k;
}

// The algorithms the topology's library has: NCCL's own (NVLS only with NVLink SHARP, CollNet only with SHARP in
// the network) or the generic schedules; Paddle's hierarchical allreduce is the framework's, on top of either.
std::vector<Algorithm> library_algorithms(const CommLibrary& library, int nodes) {
  if (library.kind != LibraryKind::Nccl)
    return {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Ring2D, Algorithm::Auto};
  std::vector<Algorithm> out = {Algorithm::Ring, Algorithm::Tree};
  if (library.nvls) out.push_back(nodes > 1 ? Algorithm::NvlsTree : Algorithm::Nvls);
  if (library.collnet && nodes > 1) out.insert(out.end(), {Algorithm::CollNetDirect, Algorithm::CollNetChain});
  out.push_back(Algorithm::Auto);
  return out;
}

Knob collective_knob(const Scenario& s, int ranks, int nodes, const CommLibrary& library) {
  Knob k{"collective", false, {}, 0};
  const Strategy& st = s.strategy;
  bool matched = false;
  for (Algorithm a : library_algorithms(library, nodes)) {
    if (!st.use_hierarchical_allreduce && st.algorithm == a) k.given = k.choices.size(), matched = true;
    k.choices.push_back(
        {std::string(to_string(a)) + " allreduce",
         {"strategy.use_hierarchical_allreduce=false", "strategy.algorithm=" + std::string(to_string(a))}});
  }
  // Hierarchical allreduce with one, two or four groups (leaders) per node; Paddle's inter_nranks is ranks / groups.
  for (int groups : {nodes, 2 * nodes, 4 * nodes}) {
    if (groups < 2 || groups >= ranks || ranks % groups != 0) continue;
    if (st.use_hierarchical_allreduce && hierarchy_leaders(st, nodes, ranks) == groups)
      k.given = k.choices.size(), matched = true;
    k.choices.push_back({"hierarchical allreduce, " + std::to_string(groups) + " leaders",
                         {"strategy.use_hierarchical_allreduce=true", "strategy.hierarchical_allreduce_group_size=null",
                          "strategy.hierarchical_allreduce_leaders=" + std::to_string(groups)}});
  }
  if (!matched) {
    k.choices.insert(k.choices.begin(), {std::string(to_string(st.algorithm)) + " (as given)", {}});
    k.given = 0;
  }
  return k;
}

Knob dtype_knob(const Scenario& s) {
  Knob k{"comm dtype", true, {}, 0};
  for (CommDtype d : {CommDtype::Fp32, CommDtype::Fp16, CommDtype::Bf16, CommDtype::Fp8}) {
    if (s.strategy.comm_dtype == d) k.given = k.choices.size();
    k.choices.push_back(
        {std::string(to_string(d)) + " communication", {"strategy.comm_dtype=" + std::string(to_string(d))}});
  }
  return k;
}

Knob compression_knob(const Scenario& s) {
  Knob k{"compression", true, {}, 0};
  const std::vector<std::string> off = {"strategy.dgc=null", "strategy.localsgd=null",
                                        "strategy.adaptive_localsgd=null"};
  auto with = [&](std::string set) {
    std::vector<std::string> sets = off;
    sets.push_back(std::move(set));
    return sets;
  };
  k.choices.push_back({"dense allreduce every step", off});
  for (double sparsity : {0.99, 0.999}) {
    const Json dgc = {{"rampup_begin_step", 0}, {"rampup_step", 1}, {"sparsity", {sparsity}}};
    k.choices.push_back({"DGC " + number(sparsity * 100) + " % sparsity", with("strategy.dgc=" + dgc.dump())});
  }
  // Local SGD from step 1 (the plan runs whole k-step periods after it: whole_period_steps).
  for (int kk : {2, 4, 8}) {
    const Json l = {{"k_steps", kk}, {"begin_step", 1}};
    k.choices.push_back({"Local SGD k=" + std::to_string(kk), with("strategy.localsgd=" + l.dump())});
  }
  if (s.strategy.dgc || s.strategy.localsgd) {  // the given compression is kept as its own choice
    k.choices.insert(k.choices.begin(), {s.strategy.dgc ? "DGC (as given)" : "Local SGD (as given)", {}});
  }
  k.given = 0;
  return k;
}

std::vector<std::string> sets_of(const std::vector<Knob>& knobs, const std::vector<std::size_t>& choice) {
  std::vector<std::string> sets;
  for (std::size_t k = 0; k < knobs.size(); ++k)
    for (const std::string& s : knobs[k].choices[choice[k]].sets) sets.push_back(s);
  return sets;
}

std::size_t changed(const std::vector<Knob>& knobs, const std::vector<std::size_t>& choice) {
  std::size_t n = 0;
  for (std::size_t k = 0; k < knobs.size(); ++k) n += choice[k] != knobs[k].given;
  return n;
}

}  // namespace

std::vector<Knob> search_space(const Scenario& given, int ranks, int nodes, bool allow_lossy,
                               const CommLibrary& library) {
  if (given.strategy.sharding.stage) {  // all-gathers and reduce-scatters, no allreduce; DGC and Local SGD excluded
    std::vector<Knob> knobs = sharding_knobs(given);
    knobs.insert(knobs.begin() + 2, streams_knob(given));
    if (allow_lossy) knobs.push_back(dtype_knob(given));
    return knobs;
  }
  std::vector<Knob> knobs = {fusion_knob(given), streams_knob(given), collective_knob(given, ranks, nodes, library)};
  if (allow_lossy) {
    knobs.push_back(dtype_knob(given));
    knobs.push_back(compression_knob(given));
  }
  return knobs;
}

std::size_t grid_size(const std::vector<Knob>& knobs) {
  std::size_t n = 1;
  for (const Knob& k : knobs) n *= k.choices.size();
  return n;
}

namespace {

using Choices = std::vector<std::size_t>;  // one choice index per knob

// The analytical evaluations of one search, by choice vector, and the order they rank in.
class Search {
 public:
  Search(const Json& base, const std::string& file, const std::vector<Knob>& knobs, int jobs)
      : base_(base), file_(file), knobs_(knobs), jobs_(jobs) {}

  std::map<Choices, Evaluation>& seen() { return seen_; }

  void evaluate_batch(const std::vector<Choices>& batch, const std::string& label) {
    std::vector<std::vector<std::string>> variants;
    for (const auto& c : batch) variants.push_back(sets_of(knobs_, c));
    std::vector<Evaluation> evals = evaluate_all(base_, file_, variants, Fidelity::Analytical, jobs_, label);
    for (std::size_t i = 0; i < batch.size(); ++i) seen_[batch[i]] = std::move(evals[i]);
  }
  // Order: faster first; among equal step times, fewer changes from the given settings, then choice order.
  bool better(const Choices& a, const Choices& b) {
    const double ta = seen_[a].result.step_time_s, tb = seen_[b].result.step_time_s;
    if (ta != tb) return ta < tb;
    if (changed(knobs_, a) != changed(knobs_, b)) return changed(knobs_, a) < changed(knobs_, b);
    return a < b;
  }
  std::vector<Choices> ranking() {
    std::vector<Choices> ok;
    for (const auto& [c, e] : seen_)
      if (e.ok()) ok.push_back(c);
    std::sort(ok.begin(), ok.end(), [&](const Choices& a, const Choices& b) { return better(a, b); });
    return ok;
  }

  void full_grid(std::size_t grid) {
    std::vector<Choices> all;
    for (std::size_t i = 0; i < grid; ++i) {
      Choices c(knobs_.size());
      std::size_t rest = i;
      for (std::size_t k = knobs_.size(); k-- > 0;)
        c[k] = rest % knobs_[k].choices.size(), rest /= knobs_[k].choices.size();
      all.push_back(c);
    }
    evaluate_batch(all, "configurations");
  }

  // Coordinate descent from the given settings keeping the best kBeam; returns the rounds run.
  int coordinate_descent(const Choices& given, std::size_t budget) {
    evaluate_batch({given}, "given");
    std::vector<Choices> beam = {given};
    int rounds = 0;
    while (seen_.size() < budget) {
      std::vector<Choices> next = single_knob_changes(beam);
      if (next.empty()) break;
      if (next.size() > budget - seen_.size()) next.resize(budget - seen_.size());
      evaluate_batch(next, "round " + std::to_string(++rounds));
      std::vector<Choices> ranked = ranking();
      ranked.resize(std::min(kBeam, ranked.size()));
      if (ranked == beam) break;  // no single-knob change enters the best kBeam: converged
      beam = ranked;
    }
    return rounds;
  }

 private:
  std::vector<Choices> single_knob_changes(const std::vector<Choices>& beam) const {
    std::vector<Choices> next;
    for (const auto& b : beam)
      for (std::size_t k = 0; k < knobs_.size(); ++k)
        for (std::size_t c = 0; c < knobs_[k].choices.size(); ++c) {
          Choices n = b;
          n[k] = c;
          if (!seen_.count(n) && std::find(next.begin(), next.end(), n) == next.end()) next.push_back(n);
        }
    return next;
  }

  const Json& base_;
  const std::string& file_;
  const std::vector<Knob>& knobs_;
  int jobs_;
  std::map<Choices, Evaluation> seen_;
};

}  // namespace

Recommendation recommend(const Json& base, const std::string& file, const std::vector<Knob>& knobs, Fidelity fidelity,
                         std::size_t budget, int jobs) {
  Recommendation rec;
  rec.grid = grid_size(knobs);
  Search search(base, file, knobs, jobs);
  std::map<Choices, Evaluation>& seen = search.seen();
  Choices given(knobs.size());
  for (std::size_t k = 0; k < knobs.size(); ++k) given[k] = knobs[k].given;
  if (rec.grid <= budget) {
    search.full_grid(rec.grid);
    rec.method = "the full grid";
  } else {
    const int rounds = search.coordinate_descent(given, budget);
    rec.method = "coordinate descent from the given settings keeping the best " + std::to_string(kBeam) + " (" +
                 std::to_string(rounds) + (rounds == 1 ? " round)" : " rounds)");
  }
  rec.evaluated = seen.size();

  std::vector<Choices> order = search.ranking();
  if (fidelity != Fidelity::Analytical) {
    order.resize(std::min(kRefine, order.size()));
    std::vector<std::vector<std::string>> variants;
    for (const auto& c : order) variants.push_back(sets_of(knobs, c));
    variants.push_back(sets_of(knobs, given));
    std::vector<Evaluation> evals = evaluate_all(base, file, variants, fidelity, jobs, "re-evaluating");
    rec.given = evals.back();
    rec.refined = order.size();
    for (std::size_t i = 0; i < order.size(); ++i) seen[order[i]] = evals[i];
    std::stable_sort(order.begin(), order.end(),
                     [&](const Choices& a, const Choices& b) { return search.better(a, b); });
  } else {
    rec.given = seen.count(given) ? seen[given] : evaluate(base, file, sets_of(knobs, given), fidelity);
  }
  for (const auto& c : order) {
    if (!seen[c].ok()) continue;
    bool lossy = false;
    for (std::size_t k = 0; k < knobs.size(); ++k) lossy |= knobs[k].lossy && c[k] != knobs[k].given;
    rec.ranked.push_back({c, seen[c], lossy});
  }
  return rec;
}

void add_lossless_search(Recommendation& rec, const Recommendation& lossless, const std::vector<Knob>& knobs) {
  std::set<Choices> known;
  for (const Candidate& c : rec.ranked) known.insert(c.choice);
  for (Candidate c : lossless.ranked) {
    for (std::size_t k = c.choice.size(); k < knobs.size(); ++k) c.choice.push_back(knobs[k].given);
    c.lossy = false;
    if (known.insert(c.choice).second) rec.ranked.push_back(std::move(c));
  }
  std::stable_sort(rec.ranked.begin(), rec.ranked.end(), [](const Candidate& a, const Candidate& b) {
    return a.eval.result.step_time_s < b.eval.result.step_time_s;
  });
  rec.evaluated += lossless.evaluated;
  rec.refined += lossless.refined;
}

SnippetChoice snippet_choice(const Recommendation& rec, const std::vector<const Candidate*>& top, double band_rel) {
  SnippetChoice out;
  const Candidate* lossless = nullptr;  // the fastest candidate that changes no lossy knob
  for (const Candidate& c : rec.ranked)
    if (!c.lossy && (!lossless || c.eval.result.step_time_s < lossless->eval.result.step_time_s)) lossless = &c;
  double reference_s = rec.given.result.step_time_s;
  if (lossless && lossless->eval.result.step_time_s < reference_s)
    reference_s = lossless->eval.result.step_time_s;
  else
    lossless = nullptr;  // the given settings are the fastest lossless ones
  out.lossless_s = reference_s;
  for (const Candidate* c : top) {
    if (!c->lossy) {
      out.candidate = c;
      return out;
    }
    const double gain = 1 - c->eval.result.step_time_s / reference_s;
    if (gain > band_rel) {
      out.candidate = c;
      return out;
    }
    if (!out.lossy_passed_over) out.lossy_passed_over = c, out.lossy_gain = gain;
  }
  out.candidate = lossless;
  return out;
}

std::string changes(const Candidate& c, const std::vector<Knob>& knobs) {
  std::string out;
  for (std::size_t k = 0; k < knobs.size(); ++k)
    if (c.choice[k] != knobs[k].given) out += (out.empty() ? "" : ", ") + knobs[k].choices[c.choice[k]].label;
  return out.empty() ? "the given settings" : out;
}

std::vector<const Candidate*> top_distinct(const Recommendation& rec, const std::vector<Knob>& knobs, std::size_t n,
                                           double rel) {
  std::vector<const Candidate*> out;
  for (const Candidate& c : rec.ranked) {
    if (out.size() == n) break;
    if (c.eval.result.step_time_s > rec.given.result.step_time_s) continue;  // a flow re-evaluation can reorder
    bool duplicate = false;
    for (const Candidate* kept : out)
      duplicate |=
          std::abs(c.eval.result.step_time_s - kept->eval.result.step_time_s) <= rel * kept->eval.result.step_time_s &&
          changed(knobs, c.choice) >= changed(knobs, kept->choice);
    if (!duplicate) out.push_back(&c);
  }
  return out;
}

std::string reason(const Evaluation& given, const Candidate& c, const std::vector<Knob>& knobs) {
  const Result &g = given.result, &r = c.eval.result;
  const double fg = g.exposed_comm_s / g.step_time_s, fr = r.exposed_comm_s / r.step_time_s;
  const std::string bytes = fixed(r.bytes_sent_per_rank / 1e6, 1) + " MB instead of " +
                            fixed(g.bytes_sent_per_rank / 1e6, 1) + " MB per rank";
  std::vector<std::string> because;
  for (std::size_t k = 0; k < knobs.size(); ++k) {
    if (c.choice[k] == knobs[k].given) continue;
    const std::string& label = knobs[k].choices[c.choice[k]].label;
    const std::string& name = knobs[k].name;
    if (name == "fusion size") {
      if (c.eval.scenario.strategy.dgc) continue;  // DGC runs one collective per tensor: the bucket size is not a cause
      because.push_back(
          label + " (" + std::to_string(c.eval.buckets) + " instead of " + std::to_string(given.buckets) + ")" +
          (c.eval.buckets > given.buckets ? " start during backward" : " pay the per-collective latency fewer times"));
    } else if (name == "streams") {
      because.push_back(
          label + (c.eval.streams > given.streams ? " run collectives concurrently" : " stop splitting the bandwidth"));
    } else if (name == "collective") {
      const std::string algo = label.substr(0, label.find(' '));
      because.push_back(algo == "hierarchical" ? label.substr(label.find(", ") + 2) +
                                                     " carry the inter-node traffic (hierarchical allreduce)"
                        : algo == "auto" ? "the cheapest algorithm per bucket (auto) replaces " +
                                               knobs[k].choices[knobs[k].given].label
                        : algo == "2d-ring" ? "2d-ring allreduce keeps most of the traffic inside the nodes"
                                            : label + " replaces " + knobs[k].choices[knobs[k].given].label);
    } else if (name == "allgather" || name == "reducescatter") {
      const bool larger = std::stod(label) > std::stod(knobs[k].choices[knobs[k].given].label);
      because.push_back(label + (larger ? " pay the per-collective latency fewer times"
                                        : " let the " + name + "s start earlier and overlap more of the compute"));
    } else if (name == "prefetch") {
      because.push_back(label + " (instead of " + knobs[k].choices[knobs[k].given].label +
                        ") changes how far ahead of the compute the parameters are gathered");
    } else if (label.rfind("Local SGD", 0) == 0) {
      because.push_back(label + " averages the model once every " + label.substr(label.find('=') + 1) +
                        " steps instead of allreducing gradients every step");
    } else {  // comm dtype, DGC, dense
      because.push_back(label + " sends " + bytes);
    }
  }
  if (because.empty())
    return "The given settings: exposed communication is " + percent(fg) + " of the " + fixed(g.step_time_s * 1e3, 3) +
           " ms step.";
  const std::string comm = "communication " + fixed(g.comm_s * 1e3, 2) + " ms -> " + fixed(r.comm_s * 1e3, 2) + " ms";
  std::string lead;
  if (std::abs(fr - fg) >= 0.0005) {
    lead = "Exposed communication " + std::string(fr < fg ? "falls" : "rises") + " from " + percent(fg) + " to " +
           percent(fr) + " of the step (" + comm + ")";
  } else if (std::abs(r.comm_s - g.comm_s) > 0.01 * g.comm_s) {
    // The same exposed share: hidden behind compute only where little of it shows.
    lead = fg < 0.01 ? "Communication stays hidden behind compute (" + comm + ")"
                     : "Exposed communication stays at " + percent(fr) + " of the step (" + comm + ")";
  } else {
    lead = "The step time barely changes";
  }
  std::string joined;
  for (std::size_t i = 0; i < because.size(); ++i)
    joined += (i == 0 ? "" : i + 1 == because.size() ? " and " : ", ") + because[i];
  // Compute slowed by the collectives that overlap it (interference) changes with them; say so where it moves the
  // step more than a thousandth, or a faster step can read as if exposed communication rising made it.
  std::string compute;
  if (std::abs(r.compute_s - g.compute_s) > 0.001 * g.step_time_s)
    compute = "; compute takes " + fixed(g.compute_s * 1e3, 2) + " ms -> " + fixed(r.compute_s * 1e3, 2) +
              " ms, as the collectives that overlap it and take SMs from it " +
              (r.compute_s < g.compute_s ? "shrink" : "grow");
  return lead + " because " + joined + compute + ".";
}

}  // namespace commsim::explore
