// calibrate --interference: the fit of the topology library's concurrent_slowdown (validate/interference_fit.hpp)
// on the H100 measurement of reports/gpu/h100/interference.json (scripts/gpu_interference.py).
#include "validate/interference_fit.hpp"

#include <gtest/gtest.h>

#include "sim/core/error.hpp"

namespace commsim::validate {
namespace {

TEST(InterferenceFit, FitsTheH100MeasurementAndPredictsTheRest) {
  // The ResNet-50 step's slowdowns at 1, 4, 16 blocks are 1.035987, 1.076170, 1.185235; divided by the SM shares
  // 132/131, 132/128, 132/116 they are 1.028139, 1.043559, 1.041570, so c = mean - 1 = 0.037756. The model then gives
  // 1.0154 x 1.037756 at 2 blocks against 1.046588 measured: +0.68 %; +0.14 % at 8; +2.15 % at 32.
  const InterferenceFit fit = fit_interference(read_json_file("reports/gpu/h100/interference.json"),
                                               "interference.json", "resnet50_bf16_b256_step");
  EXPECT_EQ(fit.sms, 132);
  EXPECT_NEAR(fit.concurrent_slowdown, 0.037756, 1e-6);
  ASSERT_EQ(fit.points.size(), 6u);
  EXPECT_EQ(fit.points[3].blocks, 2);
  EXPECT_FALSE(fit.points[3].fitted);
  EXPECT_NEAR(fit.points[3].model / fit.points[3].measured - 1, 0.0068, 1e-4);
  EXPECT_NEAR(fit.points[5].model / fit.points[5].measured - 1, 0.0215, 1e-4);
  EXPECT_TRUE(fit.trusted) << fit.why_not;
  // The memory-bound add runs faster than the SM share says (c = -0.042): not a slowdown, refused.
  const InterferenceFit add =
      fit_interference(read_json_file("reports/gpu/h100/interference.json"), "interference.json", "add_fp32_256Mi");
  EXPECT_FALSE(add.trusted);
  EXPECT_NE(add.why_not.find("outside [0, 1)"), std::string::npos) << add.why_not;
}

TEST(InterferenceFit, AFileWithoutWhatTheFitNeedsNamesTheField) {
  auto error_of = [](const Json& doc, const std::string& workload) {
    try {
      fit_interference(doc, "f.json", workload);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const Json rows = Json::array({{{"blocks", 1}, {"w_slowdown", 1.01}}, {{"blocks", 4}, {"w_slowdown", 1.04}}});
  EXPECT_NE(error_of({{"rows", rows}}, "w").find("f.json: gpu"), std::string::npos);
  EXPECT_NE(error_of({{"gpu", "g"}, {"rows", rows}}, "w").find("f.json: sms"), std::string::npos);
  EXPECT_NE(error_of({{"gpu", "g"}, {"sms", 132}, {"rows", rows}}, "other").find("rows[0].other_slowdown"),
            std::string::npos);
  EXPECT_NE(error_of({{"gpu", "g"}, {"sms", 132}, {"rows", rows}}, "w").find("no row of 16 blocks"), std::string::npos);
  EXPECT_NE(error_of({{"gpu", "g"}, {"sms", 132}, {"rows", {{{"blocks", 200}, {"w_slowdown", 1.0}}}}}, "w")
                .find("rows[0].blocks"),
            std::string::npos);
  // The same blocks twice: the second row would silently replace the first.
  const Json twice = Json::array({{{"blocks", 1}, {"w_slowdown", 1.01}}, {{"blocks", 1}, {"w_slowdown", 1.02}}});
  EXPECT_NE(error_of({{"gpu", "g"}, {"sms", 132}, {"rows", twice}}, "w").find("rows[1].blocks"), std::string::npos);
}

}  // namespace
}  // namespace commsim::validate
