// The model zoo (scenarios/models/*.json), read with nlohmann::json directly (the C++ model loader is separate):
// each file's declared totals match its layers, and the three best-known models match their published counts.
#include <nlohmann/json.hpp>
#include <set>

#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

using nlohmann::json;

struct Totals {
  std::uint64_t parameters = 0;
  std::uint64_t tensors = 0;
};

Totals count(const json& model) {
  Totals t;
  for (const json& layer : model.at("layers"))
    for (const json& p : layer.value("params", json::array())) {
      t.parameters += p.at("elements").get<std::uint64_t>();
      ++t.tensors;
    }
  return t;
}

json load(const std::string& path) { return json::parse(read_file(path)); }

TEST(ModelZoo, EveryFileIsValidAndItsTotalsMatchItsLayers) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator("scenarios/models"))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 3u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    json m;
    ASSERT_NO_THROW(m = load(f));
    ASSERT_TRUE(m.is_object());
    EXPECT_TRUE(m.at("name").is_string());
    ASSERT_TRUE(m.at("layers").is_array());
    EXPECT_FALSE(m.at("layers").empty());
    const Totals t = count(m);
    EXPECT_EQ(m.at("total_parameters").get<std::uint64_t>(), t.parameters);
    EXPECT_EQ(m.at("parameter_tensors").get<std::uint64_t>(), t.tensors);
    std::set<std::string> names;
    for (const json& layer : m.at("layers")) {
      EXPECT_TRUE(layer.at("name").is_string());
      for (const json& p : layer.value("params", json::array())) {
        EXPECT_GT(p.at("elements").get<std::int64_t>(), 0);
        EXPECT_TRUE(names.insert(p.at("name").get<std::string>()).second) << "tensor named twice: " << p.at("name");
      }
    }
  }
}

TEST(ModelZoo, PublishedParameterCounts) {
  // torchvision.models.resnet50: 25 557 032 parameters in 161 tensors (He et al. 2016; torchvision).
  const Totals resnet = count(load("scenarios/models/resnet50.json"));
  EXPECT_EQ(resnet.parameters, 25'557'032u);
  EXPECT_EQ(resnet.tensors, 161u);
  // torchvision.models.vgg16 (configuration D): 138 357 544 parameters in 32 tensors (13 conv + 3 fc, weight + bias).
  const Totals vgg = count(load("scenarios/models/vgg16.json"));
  EXPECT_EQ(vgg.parameters, 138'357'544u);
  EXPECT_EQ(vgg.tensors, 32u);
  // HuggingFace gpt2-xl with lm_head tied to wte: 1 557 611 200 parameters.
  const Totals gpt2 = count(load("scenarios/models/gpt2-xl.json"));
  EXPECT_EQ(gpt2.parameters, 1'557'611'200u);
}

}  // namespace
}  // namespace commsim::test
