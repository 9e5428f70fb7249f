#include "tests/sim/test_util.hpp"
#include <cstdio>
using namespace commsim;
using namespace commsim::test;
TEST(Explore, All) {
  for (const char* f0 : {"star4.json", "star8.json", "two-level-2x4.json", "astra-switch8.json", "astra-fc8.json"}) {
    std::string f = f0; auto t = load_topology(fixture(f));
    for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical, Algorithm::Ring2D})
      for (double g : {0.0, 2e10})
        for (int chunks : {0, 1, 4}) {
          auto s = make_spec(*t, Collective::AllReduce, a, 4000000, g, chunks);
          if (a == Algorithm::Hierarchical && t->nodes() < 2) s.hierarchy_groups = 2;
          if (a == Algorithm::Ring2D && t->nodes() < 2) continue;
          double cf = closed_form_seconds(s, *t), an = simulate(s, *t, Fidelity::Analytical), fl = simulate(s, *t, Fidelity::Flow);
          std::printf("%-20s %-12s g=%g k=%d  cf=%.9g an=%.9g fl=%.9g %s\n", f.c_str(), std::string(to_string(a)).c_str(), g, chunks, cf*1e6, an*1e6, fl*1e6,
            (cf==an && an==fl) ? "" : "MISMATCH");
        }
  }
}
