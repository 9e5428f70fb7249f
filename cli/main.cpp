// commsim: predicts and measures the communication of distributed deep-learning training.
// Exit codes: 0 success; 1 the check asked for failed; 2 bad input or usage (one line naming file, field, problem);
// 3 an internal fault (a broken invariant, a bug: please report it), never bad input; 128 + signal a sweep stopped by
// SIGINT/SIGTERM (its partial outputs written).
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

int main(int argc, char** argv) {
  CLI::App app{"commsim: how long will a training step take on that cluster, and which settings make it faster"};
  app.set_version_flag("--version", std::string("commsim ") + COMMSIM_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  commsim::refuse_outputs_over_inputs();
  commsim::cli::register_collective(app, exit_code);
  commsim::cli::register_simulate(app, exit_code);
  commsim::cli::register_compare(app, exit_code);
  commsim::cli::register_hardware(app, exit_code);
  commsim::cli::register_sweep(app, exit_code);
  commsim::cli::register_recommend(app, exit_code);
  commsim::cli::register_regress(app, exit_code);
  commsim::cli::register_report(app, exit_code);
  commsim::cli::register_calibrate(app, exit_code);
  commsim::cli::register_validate(app, exit_code);
  commsim::cli::register_model(app, exit_code);
  // CLI11 reports a mistyped command as "A subcommand is required": name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      found |= sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::cerr << "commsim: unknown command \"" << argv[1] << "\" (" << known << ")\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "commsim: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const commsim::InputError& e) {
    std::cerr << "commsim: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "commsim: out of memory: the requested size is too large for this machine\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "commsim: internal error: " << e.what() << "\n";
    return 3;
  }
  // What went to standard output is only known written once flushed: a full disk or a closed pipe is an error too.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "commsim: cannot write standard output\n";
    return 2;
  }
  return exit_code;
}
