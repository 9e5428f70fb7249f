// Errors. InputError is bad user input (the CLI turns it into exit code 2 and one line); CheckFailure is a broken
// internal invariant (a bug), raised by COMMSIM_CHECK, which is always on, unlike assert.
#pragma once

#include <stdexcept>
#include <string>

namespace commsim {

class InputError : public std::runtime_error {
 public:
  // Message reads "<where>: <field>: <what>", e.g. "topologies/x.json: links[4].bandwidth_Bps: must be > 0".
  InputError(const std::string& where, const std::string& field, const std::string& what)
      : std::runtime_error(one_line(where + ": " + (field.empty() ? "" : field + ": ") + what)) {}
  explicit InputError(const std::string& message) : std::runtime_error(one_line(message)) {}

  // The message is always one line: a control character that came from the input (a JSON key "a\nb", a file name)
  // is written escaped, as JSON would write it.
  static std::string one_line(const std::string& text) {
    std::string line;
    for (const char c : text) {
      if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
        line += c;
      } else if (c == '\n' || c == '\r' || c == '\t') {
        line += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      } else {
        static constexpr char kHex[] = "0123456789abcdef";
        const auto code = static_cast<unsigned char>(c);
        line += std::string("\\u00") + kHex[code >> 4] + kHex[code & 15];
      }
    }
    return line;
  }
};

class CheckFailure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace commsim

#define COMMSIM_CHECK(cond, msg)                                                                                       \
  do {                                                                                                                 \
    if (!(cond)) throw ::commsim::CheckFailure(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + (msg)); \
  } while (0)
