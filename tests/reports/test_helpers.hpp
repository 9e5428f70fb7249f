// Helpers for the reports tests: a strict XML well-formedness check (the HTML pages are written as XHTML, so an
// XML reader must accept them), running the built commsim, and scratch directories.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace commsim::test {

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // character data directly inside (entities left encoded), for <title> and <td>
};

struct XmlCheck {
  std::string error;              // empty when well-formed
  std::vector<Element> elements;  // in document order
  std::vector<const Element*> named(const std::string& name) const {
    std::vector<const Element*> out;
    for (const Element& e : elements)
      if (e.name == name) out.push_back(&e);
    return out;
  }
};

// Tag balance, one root, quoted attributes without '<', no duplicate attributes, '&' only as a known entity or a
// character reference, nothing but whitespace outside the root. Comments, <?...?> and <!DOCTYPE> are skipped.
inline XmlCheck check_xml(const std::string& doc) {
  XmlCheck r;
  std::vector<std::pair<std::string, std::size_t>> open;  // name, index into elements
  int roots = 0;
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.';
  };
  auto fail = [&](std::size_t at, const std::string& what) {
    r.error = what + " at offset " + std::to_string(at);
    return r;
  };
  auto entity_ok = [&](std::size_t at) {
    static const std::set<std::string> named = {"amp", "lt", "gt", "quot", "apos"};
    const std::size_t semi = doc.find(';', at);
    if (semi == std::string::npos || semi - at > 10) return false;
    const std::string body = doc.substr(at + 1, semi - at - 1);
    if (body.size() > 1 && body[0] == '#') return true;
    return named.count(body) > 0;
  };
  std::size_t i = 0;
  while (i < doc.size()) {
    if (doc[i] != '<') {
      if (doc[i] == '&' && !entity_ok(i)) return fail(i, "bare '&'");
      if (open.empty() && !std::isspace(static_cast<unsigned char>(doc[i])))
        return fail(i, "text outside the root element");
      if (!open.empty()) r.elements[open.back().second].text += doc[i];
      ++i;
      continue;
    }
    if (doc.compare(i, 4, "<!--") == 0) {
      const std::size_t end = doc.find("-->", i);
      if (end == std::string::npos) return fail(i, "unterminated comment");
      i = end + 3;
      continue;
    }
    if (doc.compare(i, 2, "<?") == 0 || doc.compare(i, 2, "<!") == 0) {
      const std::size_t end = doc.find('>', i);
      if (end == std::string::npos) return fail(i, "unterminated declaration");
      i = end + 1;
      continue;
    }
    const bool closing = doc[i + 1] == '/';
    std::size_t j = i + (closing ? 2 : 1);
    std::string name;
    while (j < doc.size() && name_char(doc[j])) name += doc[j++];
    if (name.empty()) return fail(i, "'<' that starts no tag");
    if (closing) {
      while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
      if (j >= doc.size() || doc[j] != '>') return fail(j, "malformed closing tag </" + name);
      if (open.empty() || open.back().first != name)
        return fail(i, "</" + name + "> closes <" + (open.empty() ? std::string("nothing") : open.back().first) + ">");
      open.pop_back();
      i = j + 1;
      continue;
    }
    Element e{name, {}, {}};
    bool self_closing = false;
    while (true) {
      while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
      if (j >= doc.size()) return fail(i, "unterminated tag <" + name);
      if (doc[j] == '>') {
        ++j;
        break;
      }
      if (doc.compare(j, 2, "/>") == 0) {
        self_closing = true;
        j += 2;
        break;
      }
      std::string attr;
      while (j < doc.size() && name_char(doc[j])) attr += doc[j++];
      if (attr.empty() || j >= doc.size() || doc[j] != '=') return fail(j, "attribute without =\"value\" in <" + name);
      const char quote = doc[++j];
      if (quote != '"' && quote != '\'') return fail(j, "unquoted attribute " + attr);
      const std::size_t end = doc.find(quote, j + 1);
      if (end == std::string::npos) return fail(j, "unterminated attribute " + attr);
      const std::string value = doc.substr(j + 1, end - j - 1);
      if (value.find('<') != std::string::npos) return fail(j, "'<' inside attribute " + attr);
      for (std::size_t k = value.find('&'); k != std::string::npos; k = value.find('&', k + 1))
        if (!entity_ok(j + 1 + k)) return fail(j + 1 + k, "bare '&' in attribute " + attr);
      if (!e.attrs.emplace(attr, value).second) return fail(j, "duplicate attribute " + attr);
      j = end + 1;
    }
    if (open.empty() && ++roots > 1) return fail(i, "second root element <" + name + ">");
    r.elements.push_back(e);
    if (!self_closing) open.emplace_back(name, r.elements.size() - 1);
    i = j;
  }
  if (!open.empty()) return fail(doc.size(), "<" + open.back().first + "> never closed");
  if (roots != 1) return fail(0, "no root element");
  return r;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh empty directory under the system temp folder, removed by the destructor.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() / ("commsim-reports-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

struct CliRun {
  int code = -1;
  std::string out, err;
  // stderr without its final newline, and the number of lines it has
  std::size_t err_lines() const {
    std::size_t n = 0;
    for (char c : err) n += c == '\n';
    return n + (!err.empty() && err.back() != '\n');
  }
};

#ifdef COMMSIM_CLI_PATH
// Runs `commsim ARGS` from the current directory (the source root under ctest), capturing stdout and stderr.
inline CliRun commsim(const std::string& args) {
  static int counter = 0;
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const std::string out = (dir / ("commsim-cli-" + tag + ".out")).string(),
                    err = (dir / ("commsim-cli-" + tag + ".err")).string();
  const int status = std::system((std::string(COMMSIM_CLI_PATH) + " " + args + " >" + out + " 2>" + err).c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}
#endif

}  // namespace commsim::test
