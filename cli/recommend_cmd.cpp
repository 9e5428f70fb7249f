// `commsim recommend`: searches the communication settings for the fastest step, prints the top five with the
// reason for each, and the winner as ready-to-paste settings for Paddle, MindSpore, PyTorch DDP and NCCL.
#include <cstdio>

#include "cli/commands.hpp"
#include "reports/format.hpp"
#include "reports/snippets.hpp"
#include "reports/tuner.hpp"
#include "sim/collective/nccl_model.hpp"

namespace commsim::cli {
namespace {

struct RecommendOptions {
  std::string scenario, fidelity = "analytical";
  std::vector<std::string> sets;
  bool allow_lossy = false;
  int budget = 200, jobs = 0, steps = 0;
};

void run_recommend(const RecommendOptions& o) {
  using namespace reports;
  const Fidelity fidelity = fidelity_option(o.fidelity);
  const Json base = load_base(o.scenario, o.sets, o.steps);
  // The scenario as given must simulate (strict loader; exit 2 otherwise); it also tells the cluster's shape.
  const SimulationRun given = simulate_document(base, o.scenario, Fidelity::Analytical);
  const std::vector<Knob> knobs = search_space(given.scenario, given.result.ranks, given.topology->nodes(),
                                               o.allow_lossy, given.topology->library());
  const Recommendation rec = recommend(base, o.scenario, knobs, fidelity, static_cast<std::size_t>(o.budget), o.jobs);

  std::printf("%s on %s\n", given.scenario.name.c_str(), given.topology->summary().c_str());
  std::string searched;
  for (const Knob& k : knobs)
    searched += (searched.empty() ? "" : ", ") + k.name + " (" + std::to_string(k.choices.size()) + ")";
  std::printf("searched %s: %zu configurations in the full grid\n", searched.c_str(), rec.grid);
  std::printf("evaluated %zu of them with the analytical fidelity by %s", rec.evaluated, rec.method.c_str());
  if (rec.refined)
    std::printf(", then re-evaluated the best %zu with the %s fidelity", rec.refined, o.fidelity.c_str());
  const Result& g = rec.given.result;
  std::printf("\ngiven settings: %.3f ms per step, exposed communication %s of the step\n\n", g.step_time_s * 1e3,
              percent(g.exposed_comm_s / g.step_time_s).c_str());
  if (g.comm_band_rel > 0)  // a calibrated topology: a pick must win by more than the band to be a sure win
    std::printf("error band (calibrated topology): +-%.1f %% on communication, +-%.3f ms on the given step\n\n",
                100 * g.comm_band_rel, g.step_band_s() * 1e3);

  TextTable table({"#", "step ms", "speedup", "settings (changes from the given ones)"});
  const std::vector<const Candidate*> top = top_distinct(rec, knobs, 5);
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
  if (top.empty()) {
    std::printf("no configuration found that is faster than the given settings\n");
    return;
  }

  const Candidate& best = *top.front();
  const Strategy& s = best.eval.scenario.strategy;
  std::printf("\nSettings of #1%s:\n",
              best.lossy ? " (lossy: changes what training computes; check accuracy before adopting)"
              : changes(best, knobs) == "the given settings" ? " (the given settings are the fastest found)"
                                                             : "");
  std::printf("\n# Paddle (fleet)\n%s", paddle_snippet(s, given.topology->nodes()).c_str());
  std::printf("\n# MindSpore\n%s", mindspore_snippet(s).c_str());
  std::printf("\n# PyTorch DDP\n%s", pytorch_snippet(s).c_str());
  std::printf("\n# NCCL environment\n%s", nccl_env_snippet(s).c_str());
  if (given.topology->library().kind == LibraryKind::Nccl) {
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
}

}  // namespace

void register_recommend(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RecommendOptions>();
  CLI::App* cmd = app.add_subcommand(
      "recommend", "Search communication settings for the fastest step and print them for the frameworks");
  cmd->add_option("scenario", o->scenario, "scenario JSON file")->required();
  cmd->add_flag("--allow-lossy", o->allow_lossy,
                "also search DGC sparsity, Local SGD k and low-precision communication (they change convergence)");
  cmd->add_option("--budget", o->budget, "most configurations to evaluate in the search (default 200)")
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
