#include "sim/core/output_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "sim/core/error.hpp"

namespace commsim {

namespace {

std::mutex g_inputs_mutex;
bool g_recording = false;
std::set<std::string> g_inputs;  // canonical paths

std::string canonical_or_given(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

bool is_input(const std::string& path) {
  const std::lock_guard<std::mutex> lock(g_inputs_mutex);
  return g_inputs.count(canonical_or_given(path)) > 0;
}

// Writes and closes; closing flushes, which is where a full disk or /dev/full shows.
bool write_whole(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return false;
  out << text;
  out.close();
  return !out.fail();
}

void write_output(const std::string& path, const std::string& text, const std::string& flag) {
  const auto cannot = [&] { return InputError(flag, "", "cannot write " + path); };
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    if (std::filesystem::is_directory(status)) throw InputError(flag, "", path + " is a directory, not a file");
    if (!write_whole(path, text)) throw cannot();
    return;
  }
  const std::string temporary = path + ".partial-" + std::to_string(getpid());
  if (!write_whole(temporary, text)) {
    std::filesystem::remove(temporary, ec);
    throw cannot();
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw cannot();
  }
}

}  // namespace

void refuse_outputs_over_inputs() {
  const std::lock_guard<std::mutex> lock(g_inputs_mutex);
  g_recording = true;
}

void note_input_file(const std::string& path) {
  const std::lock_guard<std::mutex> lock(g_inputs_mutex);
  if (g_recording) g_inputs.insert(canonical_or_given(path));
}

void write_file(const std::string& path, const std::string& text, const std::string& flag) {
  if (is_input(path))
    throw InputError(flag, "", path + " is also an input of this command; writing it would replace what was read");
  write_output(path, text, flag);
}

void rewrite_input_file(const std::string& path, const std::string& text, const std::string& flag) {
  write_output(path, text, flag);
}

}  // namespace commsim
