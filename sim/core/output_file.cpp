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

InputError cannot_write(const OutputText& o) { return InputError(o.flag, "", "cannot write " + o.path); }

// Not a regular file (nor a new one): written in place, since it cannot be renamed over.
bool written_in_place(const OutputText& o) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(o.path, ec);
  if (!std::filesystem::exists(status) || std::filesystem::is_regular_file(status)) return false;
  if (std::filesystem::is_directory(status)) throw InputError(o.flag, "", o.path + " is a directory, not a file");
  return true;
}

std::string staged_path(const OutputText& o) { return o.path + ".partial-" + std::to_string(getpid()); }

void write_outputs(const std::vector<OutputText>& outputs) {
  std::vector<const OutputText*> staged;
  const auto discard = [&staged] {
    std::error_code ec;
    for (const OutputText* o : staged) std::filesystem::remove(staged_path(*o), ec);
  };
  try {
    std::vector<const OutputText*> in_place;
    for (const OutputText& o : outputs) {
      if (written_in_place(o)) {
        in_place.push_back(&o);
        continue;
      }
      staged.push_back(&o);
      if (!write_whole(staged_path(o), o.text)) throw cannot_write(o);
    }
    for (const OutputText* o : in_place)
      if (!write_whole(o->path, o->text)) throw cannot_write(*o);
    for (std::size_t i = 0; i < staged.size(); ++i) {
      std::error_code ec;
      std::filesystem::rename(staged_path(*staged[i]), staged[i]->path, ec);
      if (ec) {
        staged.erase(staged.begin(), staged.begin() + static_cast<std::ptrdiff_t>(i));
        throw cannot_write(*staged.front());
      }
    }
  } catch (...) {
    discard();
    throw;
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

std::string not_an_input_file(const std::string& path, const std::string& kind) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows links: a link to a file is that file
  if (!fs::exists(status) || fs::is_regular_file(status)) return "";
  if (fs::is_directory(status)) return "is a directory, not a " + kind;
  const char* type = fs::is_character_file(status) ? "a character device"
                     : fs::is_block_file(status)   ? "a block device"
                     : fs::is_fifo(status)         ? "a FIFO or pipe"
                     : fs::is_socket(status)       ? "a socket"
                                                   : "not a file";
  return "is not a regular file (" + std::string(type) + "): inputs are read whole, from files only";
}

void write_files(const std::vector<OutputText>& outputs) {
  for (const OutputText& o : outputs)
    if (is_input(o.path))
      throw InputError(o.flag, "",
                       o.path + " is also an input of this command; writing it would replace what was read");
  write_outputs(outputs);
}

void write_file(const std::string& path, const std::string& text, const std::string& flag) {
  write_files({{path, text, flag}});
}

void rewrite_input_file(const std::string& path, const std::string& text, const std::string& flag) {
  write_outputs({{path, text, flag}});
}

}  // namespace commsim
