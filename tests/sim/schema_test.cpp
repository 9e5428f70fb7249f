// The JSON Schemas (schemas/*.schema.json) and the loaders agree: every key a schema requires is one the loader
// refuses to do without, and a schema that closes an object (additionalProperties: false) matches a loader that
// rejects unknown fields. scripts/check_schemas.py (ctest schemas.shipped_files) checks every shipped file against
// the schemas; this test keeps the schemas honest about the loaders.
#include <gtest/gtest.h>

#include <fstream>

#include "sim/core/error.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/topology/topology.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

struct Case {
  const char* schema;
  const char* sample;  // a shipped file of that kind
  // Object paths (JSON pointers) whose schema closes the object and names its required keys, with the pointer of
  // the same object inside the schema.
  std::vector<std::pair<std::string, std::string>> objects;
};

const Case kCases[] = {
    {"schemas/topology.schema.json",
     "topologies/dgx-a100.json",
     {{"", "/$defs/cluster"},
      {"/link_classes/rdma", "/$defs/link_class"},
      {"/node", "/$defs/cluster/properties/node"},
      {"/node/devices/0", "/$defs/device"},
      {"/node/links/0", "/$defs/link"},
      {"/fabric", "/$defs/fabric"},
      {"/library", "/$defs/library"}}},
    {"schemas/topology.schema.json",
     "topologies/astra-ring-switch.json",
     {{"", "/$defs/astra"}, {"/astra_sim", "/$defs/astra/properties/astra_sim"}}},
    {"schemas/scenario.schema.json",
     "scenarios/resnet50-cloud-p3.json",
     {{"", ""}, {"/device", "/properties/device"}, {"/strategy", "/$defs/strategy"}}},
    {"schemas/model.schema.json",
     "scenarios/models/resnet50.json",
     {{"", ""},
      {"/layers/0", "/properties/layers/items"},
      {"/layers/0/params/0", "/properties/layers/items/properties/params/items"}}},
};

// Loads `doc` (written to a temp file) with the loader of `schema`'s kind; "" when it loads, else the error.
std::string load_error(const std::string& schema, Json doc, const std::string& sample) {
  TempDir dir;
  const std::string path = (dir.path() / "doc.json").string();
  if (schema.find("scenario") != std::string::npos) {  // its paths are relative to the sample's folder
    const auto folder = std::filesystem::absolute(sample).parent_path();
    for (const char* key : {"topology", "model"})
      if (doc.contains(key)) doc[key] = (folder / doc[key].get<std::string>()).lexically_normal().string();
  }
  std::ofstream(path) << doc.dump();
  try {
    if (schema.find("topology") != std::string::npos)
      load_topology(path);
    else if (schema.find("scenario") != std::string::npos)
      load_scenario(path, {});
    else
      load_model(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Schemas, RequiredKeysAndClosedObjectsMatchTheLoaders) {
  for (const Case& c : kCases) {
    const Json schema = read_json_file(c.schema);
    const Json sample = read_json_file(c.sample);
    ASSERT_EQ(schema.value("$schema", ""), "https://json-schema.org/draft/2020-12/schema") << c.schema;
    ASSERT_EQ(load_error(c.schema, sample, c.sample), "") << c.sample << " must load as shipped";
    for (const auto& [object_ptr, schema_ptr] : c.objects) {
      const Json& object_schema = schema.at(Json::json_pointer(schema_ptr));
      const Json::json_pointer at(object_ptr);
      ASSERT_TRUE(sample.contains(at)) << c.sample << object_ptr;
      // Each required key, removed, makes the loader fail naming it.
      for (const Json& key : object_schema.value("required", Json::array())) {
        if (!sample.at(at).contains(key.get<std::string>())) continue;  // optional in this sample's variant
        // Without "astra_sim" a topology is read as the other kind (a cluster), whose own required keys are then
        // missing: the schema's if/then/else does the same. Not a key the loader can name as missing.
        if (key == "astra_sim") continue;
        Json doc = sample;
        doc.at(at).erase(key.get<std::string>());
        const std::string error = load_error(c.schema, doc, c.sample);
        EXPECT_NE(error.find(key.get<std::string>()), std::string::npos)
            << c.sample << object_ptr << ": without required \"" << key << "\" the loader said: " << error;
      }
      // A closed object: an unknown key is refused by the loader too.
      if (object_schema.value("additionalProperties", Json(true)) == Json(false)) {
        Json doc = sample;
        doc.at(at)["not_a_commsim_field"] = 1;
        const std::string error = load_error(c.schema, doc, c.sample);
        EXPECT_NE(error.find("not_a_commsim_field"), std::string::npos) << c.sample << object_ptr << ": " << error;
      }
      // Every key the sample has is one the schema knows.
      for (const auto& [key, value] : sample.at(at).items())
        EXPECT_TRUE(object_schema.contains("properties") && object_schema["properties"].contains(key))
            << c.schema << schema_ptr << " does not describe \"" << key << "\" of " << c.sample << object_ptr;
    }
  }
}

}  // namespace
}  // namespace commsim::test
