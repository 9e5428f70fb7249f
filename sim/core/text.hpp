// Words as NCCL and nccl-tests print them: one name in several spellings across releases ("RING", "Ring"), counts.
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

// Digits only, at least one: a count or a code as NCCL and nccl-tests print them.
inline bool is_unsigned(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace commsim
