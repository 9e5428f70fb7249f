// Writing a model file (docs/model-format.md): what `commsim model from-hf` and `from-trace` produce, read back by
// load_model. One layer per line, so that large models stay diff-able.
#pragma once

#include <string>

#include "sim/model/model.hpp"

namespace commsim {

// The model as the text of a model file, with total_parameters and parameter_tensors declared (load_model checks
// them). A layer's backward FLOPs are written only where they differ from the loader's default (2x forward);
// measured times (forward_s, backward_s per sample) only where they are set (>= 0).
std::string model_file_text(const Model& model);

// Refuses (InputError) a model that load_model would refuse once written: the importers check what they built with
// the loader's own reading, so that every model they write reads back. The error names `input` (the file imported)
// and the model file's field.
void check_loads_back(const Model& model, const std::string& input);

// Writes model_file_text to `path`; a path that cannot be written is bad input of the option `flag`.
void write_model_file(const Model& model, const std::string& path, const std::string& flag);

}  // namespace commsim
