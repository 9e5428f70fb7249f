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

// Published totals are rounded; each is checked to one unit of its last digit against a count derived here.
TEST(ModelZoo, ResNet101InceptionV3AndLlama3) {
  // ResNet-101 = ResNet-50 + 17 more bottleneck blocks in stage 4 (Table 1: 6 -> 23 blocks of 1x1 1024->256,
  // 3x3 256->256, 1x1 256->1024, each conv followed by a BatchNorm with weight and bias):
  // 17 x (1024*256 + 9*256*256 + 256*1024 + 2*(256 + 256 + 1024)) = 17 x 1 117 184 = 18 992 128 more than
  // ResNet-50's 25 557 032, i.e. 44 549 160; published 44.5 M (torchvision resnet101).
  const Totals r101 = count(load("scenarios/models/resnet101.json"));
  EXPECT_EQ(r101.parameters, 25'557'032u + 17u * (1024 * 256 + 9 * 256 * 256 + 256 * 1024 + 2 * (256 + 256 + 1024)));
  EXPECT_NEAR(static_cast<double>(r101.parameters), 44.5e6, 0.1e6);
  EXPECT_EQ(r101.tensors, 161u + 17 * 9);
  // Inception-v3 (torchvision): 27 161 264 with the auxiliary classifier; without it 23.8 M. The auxiliary head is
  // conv0 1x1 768->128 + BN, conv1 5x5 128->768 + BN, fc 768->1000:
  // 768*128 + 2*128 + 25*128*768 + 2*768 + 768*1000 + 1000 = 3 326 696.
  const json inception = load("scenarios/models/inception-v3.json");
  const Totals v3 = count(inception);
  EXPECT_NEAR(static_cast<double>(v3.parameters), 27.2e6, 0.1e6);
  std::uint64_t aux = 0;
  for (const json& layer : inception.at("layers"))
    if (layer.at("name").get<std::string>().rfind("AuxLogits.", 0) == 0)
      for (const json& p : layer.at("params")) aux += p.at("elements").get<std::uint64_t>();
  EXPECT_EQ(aux, 768u * 128 + 2 * 128 + 25 * 128 * 768 + 2 * 768 + 768 * 1000 + 1000);
  EXPECT_NEAR(static_cast<double>(v3.parameters - aux), 23.8e6, 0.1e6);
  // Llama 3 (Meta-Llama-3-8B / -70B config.json, untied lm_head, 8 KV heads of 128): embeddings and lm_head
  // 2*V*d, per layer 2d (norms) + 2*d*d (Q, O) + 2*d*1024 (K, V) + 3*d*ff (gated MLP), final norm d.
  auto llama = [](std::uint64_t d, std::uint64_t layers, std::uint64_t ff) {
    return 2 * 128256 * d + d + layers * (2 * d + 2 * d * d + 2 * d * 1024 + 3 * d * ff);
  };
  const Totals l8 = count(load("scenarios/models/llama-3-8b.json"));
  EXPECT_EQ(l8.parameters, llama(4096, 32, 14336));
  EXPECT_NEAR(static_cast<double>(l8.parameters), 8.03e9, 0.01e9);
  const Totals l70 = count(load("scenarios/models/llama-3-70b.json"));
  EXPECT_EQ(l70.parameters, llama(8192, 80, 28672));
  EXPECT_NEAR(static_cast<double>(l70.parameters), 70.6e9, 0.1e9);
}

}  // namespace
}  // namespace commsim::test
