// Case-insensitive names: NCCL and nccl-tests print one name in several spellings across releases ("RING", "Ring").
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace commsim {

inline std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace commsim
