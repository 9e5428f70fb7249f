#include "sim/core/data_path.hpp"

#include <cstdlib>
#include <filesystem>

#ifndef COMMSIM_INSTALL_DATADIR
#define COMMSIM_INSTALL_DATADIR ""
#endif

namespace commsim {
namespace fs = std::filesystem;

std::vector<std::string> data_dirs() {
  std::vector<std::string> dirs;
  std::error_code ec;
  auto add = [&](const fs::path& dir) {
    if (dir.empty() || !fs::is_directory(dir, ec)) return;
    const std::string text = dir.lexically_normal().string();
    for (const std::string& d : dirs)
      if (d == text) return;
    dirs.push_back(text);
  };
  if (const char* env = std::getenv("COMMSIM_DATA_DIR"); env && *env) add(env);
  // Linux: the running executable's own path, so that a relocated install still finds its data.
  if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec)
    add(exe.parent_path().parent_path() / "share" / "commsim");
  add(COMMSIM_INSTALL_DATADIR);
  return dirs;
}

std::string resolve_data_path(const std::string& path) {
  const fs::path given(path);
  std::error_code ec;
  if (path.empty() || given.is_absolute() || fs::exists(given, ec)) return path;
  for (const std::string& dir : data_dirs()) {
    const fs::path candidate = fs::path(dir) / given;
    if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
  }
  return path;
}

std::string resolve_beside(const std::string& file, const std::string& relative) {
  const fs::path p(relative);
  if (p.is_absolute()) return relative;
  return resolve_data_path((fs::path(file).parent_path() / p).lexically_normal().string());
}

bool path_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

bool is_regular_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace commsim
