// Case-insensitive names: NCCL and nccl-tests print one name in several spellings across releases ("RING", "Ring").
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace commsim {

inline std::string with_case(std::string_view text, bool upper) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    c = static_cast<char>(upper ? std::toupper(u) : std::tolower(u));
  }
  return out;
}
inline std::string lowercase(std::string_view text) { return with_case(text, false); }
inline std::string uppercase(std::string_view text) { return with_case(text, true); }

}  // namespace commsim
