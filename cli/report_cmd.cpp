// `commsim report`: one self-contained HTML page (inline SVG, no network fetches) from simulated and measured
// results, side by side.
#include <cstdio>

#include "cli/commands.hpp"
#include "reports/format.hpp"
#include "reports/result_report.hpp"

namespace commsim::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> files;
  std::string out = "report.html", title = "commsim report";
};

}  // namespace

void register_report(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd =
      app.add_subcommand("report", "Write one self-contained HTML page from result JSON files (and their traces)");
  cmd->add_option(
         "results", o->files,
         "result JSON files (simulate/run --json); a Chrome trace (simulate --trace) after a result is its timeline")
      ->required();
  cmd->add_option("-o,--output", o->out, "HTML file to write (default: report.html)")->check(writable_file());
  cmd->add_option("--title", o->title, "page title");
  cmd->callback([o, &exit_code] {
    const std::vector<reports::ReportInput> inputs = reports::load_report_inputs(o->files);
    write_file(o->out, reports::results_html(inputs, o->title), "-o");
    std::size_t timelines = 0;
    for (const auto& in : inputs) timelines += in.result.trace.empty() ? 0 : 1;
    std::printf("wrote %s: %zu result(s), %zu timeline(s)\n", o->out.c_str(), inputs.size(), timelines);
    exit_code = 0;
  });
}

}  // namespace commsim::cli
