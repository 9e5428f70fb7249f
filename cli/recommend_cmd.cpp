// `commsim recommend`: searches the communication settings for the fastest step, prints the top five with the
// reason for each, and the winner as ready-to-paste settings for Paddle, MindSpore, PyTorch DDP and NCCL.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/commands.hpp"
#include "explore/tuner.hpp"
#include "reports/format.hpp"
#include "reports/sharding_snippets.hpp"
#include "reports/snippets.hpp"
#include "sim/collective/nccl_model.hpp"
#include "validate/calibration.hpp"

namespace commsim::cli {
namespace {

struct RecommendOptions {
  std::string scenario, fidelity = "analytical";
  std::vector<std::string> sets;
  bool allow_lossy = false;
  int budget = 200, jobs = 0, steps = 0;
};

// How much a lossy setting must win by before it is printed: the prediction's band, from the topology's calibration
// (the widest band of its calibrated link classes: no step time moves by more than that when every class is off by
// its own band), else the NCCL model's fitted band for a 64 MiB allreduce, else commsim's rule of 5 %.
struct LossyMargin {
  double rel = 0.05;
  std::string source = "no calibrated band for this topology, so commsim's rule: 5 %";
};

LossyMargin lossy_margin(const SimulationRun& given) {
  LossyMargin m;
  const Json doc = read_json_file(given.scenario.topology_path);
  if (doc.is_object() && doc.contains("sources") && doc["sources"].is_object() &&
      doc["sources"].contains("calibration")) {
    const validate::CalibrationSummary cal = validate::read_calibration(given.scenario.topology_path);
    double widest = 0;
    for (const auto& [name, rel] : cal.band_rel) widest = std::max(widest, rel);
    m.rel = widest;
    m.source = "+-" + reports::fixed(100 * widest, 1) + " % from the calibration of " + given.scenario.topology_path +
               " (its widest link class)";
    return m;
  }
  if (given.topology->library().kind == LibraryKind::Nccl) {
    CollectiveSpec probe;
    probe.op = Collective::AllReduce;
    probe.algorithm = Algorithm::Auto;
    probe.bytes = Bytes{64} << 20;
    probe.ranks_per_node = given.topology->ranks_per_node();
    const double band = nccl::predict(probe, *given.topology).band_rel;
    if (band > 0) {
      m.rel = band;
      m.source = "+-" + reports::fixed(100 * band, 1) + " %, the fitted NCCL model's band for a 64 MiB allreduce";
    }
  }
  return m;
}

// What was searched and how, and the given settings' step.
void print_search(const SimulationRun& given, const std::vector<explore::Knob>& knobs,
                  const explore::Recommendation& rec, const std::string& fidelity) {
  std::printf("%s on %s\n", given.scenario.name.c_str(), given.topology->summary().c_str());
  std::string searched;
  for (const explore::Knob& k : knobs)
    searched += (searched.empty() ? "" : ", ") + k.name + " (" + std::to_string(k.choices.size()) + ")";
  std::printf("searched %s: %zu configurations in the full grid\n", searched.c_str(), rec.grid);
  std::printf("evaluated %zu of them with the analytical fidelity by %s", rec.evaluated, rec.method.c_str());
  if (rec.refined) std::printf(", then re-evaluated the best %zu with the %s fidelity", rec.refined, fidelity.c_str());
  const Result& g = rec.given.result;
  std::printf("\ngiven settings: %.3f ms per step, exposed communication %s of the step\n\n", g.step_time_s * 1e3,
              reports::percent(g.exposed_comm_s / g.step_time_s).c_str());
  if (g.comm_band_rel > 0)  // a calibrated topology: a pick must win by more than the band to be a sure win
    std::printf("error band (calibrated topology): +-%.1f %% on communication, +-%.3f ms on the given step\n\n",
                100 * g.comm_band_rel, g.step_band_s() * 1e3);
}

// The best distinct candidates, a row and a reason each.
void print_top(const explore::Recommendation& rec, const std::vector<explore::Knob>& knobs,
               const std::vector<const explore::Candidate*>& top) {
  using namespace reports;
  using namespace explore;
  const Result& g = rec.given.result;
  TextTable table({"#", "step ms", "speedup", "settings (changes from the given ones)"});
  for (std::size_t i = 0; i < top.size(); ++i) {
    const Candidate& c = *top[i];
    table.add({std::to_string(i + 1), fixed(c.eval.result.step_time_s * 1e3, 3),
               fixed(g.step_time_s / c.eval.result.step_time_s, 3) + "x",
               changes(c, knobs) + (c.lossy ? "  [changes convergence: check accuracy]" : "")});
  }
  std::fputs(table.str().c_str(), stdout);
  std::printf("(near-duplicates within 0.1 %% of a listed time that change no fewer settings are left out)\n\n");
  for (std::size_t i = 0; i < top.size(); ++i)
    std::printf("%zu. %s\n", i + 1, reason(rec.given, *top[i], knobs).c_str());
}

// The settings whose snippets are printed: the fastest, unless it is lossy and wins by less than the band.
const Strategy& print_pick(const SimulationRun& given, const explore::Recommendation& rec,
                           const std::vector<explore::Knob>& knobs, const std::vector<const explore::Candidate*>& top) {
  using namespace reports;
  using namespace explore;
  // A lossy pick is printed only when it wins by more than the prediction's band (reports/tuner.hpp).
  const LossyMargin margin = lossy_margin(given);
  const SnippetChoice pick = snippet_choice(rec, top, margin.rel);
  if (pick.lossy_passed_over)
    std::printf(
        "\nNot printed: the lossy \"%s\" wins by only %s over the fastest lossless settings (%.3f ms), "
        "within the prediction's band (%s).\n",
        changes(*pick.lossy_passed_over, knobs).c_str(), percent(pick.lossy_gain).c_str(), pick.lossless_s * 1e3,
        margin.source.c_str());
  if (pick.candidate && pick.candidate->lossy)
    std::printf(
        "\nThe lossy pick wins by %s over the fastest lossless settings (%.3f ms), more than the prediction's "
        "band (%s).\n",
        percent(1 - pick.candidate->eval.result.step_time_s / pick.lossless_s).c_str(), pick.lossless_s * 1e3,
        margin.source.c_str());
  const Strategy& s = pick.candidate ? pick.candidate->eval.scenario.strategy : rec.given.scenario.strategy;
  std::string whose = "the given settings (the fastest lossless ones found)";
  for (std::size_t i = 0; i < top.size(); ++i)
    if (top[i] == pick.candidate) whose = "#" + std::to_string(i + 1);
  if (pick.candidate && whose[0] != '#')
    whose = "the fastest lossless settings found (" + changes(*pick.candidate, knobs) + ")";
  std::printf("\nSettings of %s%s:\n", whose.c_str(),
              pick.candidate && pick.candidate->lossy
                  ? " (lossy: changes what training computes; check accuracy before adopting)"
              : pick.candidate && changes(*pick.candidate, knobs) == "the given settings"
                  ? " (the given settings are the fastest found)"
                  : "");
  return s;
}

// The settings as each framework and NCCL spell them.
void print_snippets(const SimulationRun& given, const Strategy& s) {
  using namespace reports;
  if (s.sharding.stage) {
    std::printf("\n# PyTorch FSDP\n%s", fsdp_snippet(s).c_str());
    std::uint64_t model_elements = 0;
    for (const auto& tensor : given.plan.model.tensors) model_elements += tensor.elements;
    std::printf("\n# DeepSpeed ZeRO\n%s", deepspeed_snippet(s, model_elements).c_str());
    std::printf("\n# Paddle (dygraph sharding)\n%s", paddle_sharding_snippet(s).c_str());
    std::printf("\n# MindSpore (optimizer parallel)\n%s", mindspore_sharding_snippet(s).c_str());
    return;
  }
  std::printf("\n# Paddle (fleet)\n%s", paddle_snippet(s, given.topology->nodes(), given.result.ranks).c_str());
  std::printf("\n# MindSpore\n%s", mindspore_snippet(s).c_str());
  std::printf("\n# PyTorch DDP\n%s", pytorch_snippet(s).c_str());
  std::printf("\n# Horovod\n%s", horovod_snippet(s).c_str());
  const LibraryKind library = given.topology->library().kind;
  if (library == LibraryKind::Mpi) {
    std::printf("\n# Open MPI\n%s", mpi_env_snippet(s).c_str());
    return;
  }
  std::printf("\n# NCCL environment\n%s", nccl_env_snippet(s).c_str());
  if (library != LibraryKind::Nccl) return;  // no library named: NCCL's variables, but no model of its tuner
  // Where the fitted model disagrees with NCCL's own choice by size, a rule for NCCL's example tuner plugin.
  const std::vector<nccl::TunerRule> rules = nccl::tuner_rules(Collective::AllReduce, *given.topology);
  std::printf(
      "\n# NCCL tuner plugin (plugins/tuner/example; NCCL_TUNER_PLUGIN=<its .so>, "
      "NCCL_TUNER_CONFIG_FILE=nccl_tuner.conf)\n");
  if (rules.empty())
    std::printf("# none: NCCL's own choice is within 5 %% of the fitted model's best at every allreduce size\n");
  for (const nccl::TunerRule& r : rules)
    std::printf("%s  # %.0f %% faster than NCCL's choice by the fitted model\n",
                nccl::tuner_line(r, *given.topology).c_str(), 100 * r.gain);
}

void run_recommend(const RecommendOptions& o) {
  using namespace explore;  // the search
  const Fidelity fidelity = fidelity_option(o.fidelity);
  const Json base = load_base(o.scenario, o.sets, o.steps);
  // The scenario as given must simulate (strict loader; exit 2 otherwise); it also tells the cluster's shape.
  const SimulationRun given = simulate_document(base, o.scenario, Fidelity::Analytical);
  const std::vector<Knob> knobs = search_space(given.scenario, given.result.ranks, given.topology->nodes(),
                                               o.allow_lossy, given.topology->library());
  const auto search_start = std::chrono::steady_clock::now();
  Recommendation rec = recommend(base, o.scenario, knobs, fidelity, static_cast<std::size_t>(o.budget), o.jobs);
  if (o.allow_lossy) {
    const std::vector<Knob> lossless =
        search_space(given.scenario, given.result.ranks, given.topology->nodes(), false, given.topology->library());
    add_lossless_search(
        rec, recommend(base, o.scenario, lossless, fidelity, static_cast<std::size_t>(o.budget), o.jobs), knobs);
  }
  const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - search_start).count();
  // The search's speed goes to stderr: stdout stays the same from run to run (scripts and tests compare it).
  const std::size_t simulations = rec.evaluated + rec.refined;
  std::fprintf(stderr, "evaluated %zu configurations in %.2f s: %.1f configurations per second\n", simulations,
               search_s, search_s > 0 ? static_cast<double>(simulations) / search_s : 0.0);
  print_search(given, knobs, rec, o.fidelity);
  const std::vector<const Candidate*> top = top_distinct(rec, knobs, 5);
  print_top(rec, knobs, top);
  if (top.empty()) {
    std::printf("no configuration found that is faster than the given settings\n");
    return;
  }
  print_snippets(given, print_pick(given, rec, knobs, top));
}

}  // namespace

void register_recommend(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RecommendOptions>();
  CLI::App* cmd = app.add_subcommand(
      "recommend", "Search communication settings for the fastest step and print them for the frameworks");
  cmd->add_option("scenario", o->scenario, "scenario JSON file")->required();
  cmd->add_flag(
      "--allow-lossy", o->allow_lossy,
      "also search DGC sparsity, Local SGD k and low-precision communication (they change convergence); one is "
      "printed only when it wins by more than the prediction's band");
  cmd->add_option("--budget", o->budget,
                  "most configurations each search evaluates (default 200; --allow-lossy runs two: with and without "
                  "the lossy settings)")
      ->check(number_in(1));
  cmd->add_option("--fidelity", o->fidelity,
                  "fidelity of the final ranking: analytical | flow (the search is analytical)");
  cmd->add_option("--set", o->sets, "override a scenario field: dotted.key=value (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--steps", o->steps, "number of steps (overrides the scenario)")->check(number_in(1, kMaxSteps));
  cmd->add_option("--jobs", o->jobs, "parallel simulations (default: all cores)")->check(number_in(1, kMaxJobs));
  cmd->callback([o, &exit_code] {
    run_recommend(*o);
    exit_code = 0;
  });
}

}  // namespace commsim::cli
