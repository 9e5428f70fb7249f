#include "fuzz/sandbox.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sim/core/error.hpp"

namespace commsim::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = COMMSIM_SOURCE_DIR;

void remove_sandbox();

const fs::path& sandbox() {
  static const fs::path root = [] {
    fs::path dir = fs::temp_directory_path() / ("commsim-fuzz-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "scenarios");
    fs::create_directories(dir / "baselines");
    fs::create_directories(dir / "suites");
    for (const auto& entry : fs::directory_iterator(kSource / "scenarios"))
      fs::create_symlink(entry.path(), dir / "scenarios" / entry.path().filename());
    fs::create_directory_symlink(kSource / "topologies", dir / "topologies");
    for (const char* sub : {"models", "scenarios", "topologies"})
      fs::create_directory_symlink(kSource / "validate" / "suites" / sub, dir / "suites" / sub);
    std::atexit(remove_sandbox);
    return dir;
  }();
  return root;
}

void remove_sandbox() {
  std::error_code ignored;
  fs::remove_all(sandbox(), ignored);
}

}  // namespace

std::string write_input(const std::string& relative_path, const std::uint8_t* data, std::size_t size) {
  const fs::path file = sandbox() / relative_path;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", file.c_str());
    std::abort();
  }
  return file.string();
}

void expect_clean_refusal(const std::function<void()>& load) {
  try {
    load();
  } catch (const InputError& e) {
    const std::string message = e.what();
    if (message.find('\n') != std::string::npos) {
      std::fprintf(stderr, "fuzz: an input error spans several lines:\n%s\n", message.c_str());
      std::abort();
    }
  }
}

}  // namespace commsim::fuzz
