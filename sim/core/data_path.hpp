// Where commsim finds its data files (topologies/, scenarios/, validate/suites/, baselines/, schemas/), so that an
// installed commsim runs the README's examples from any directory.
//
// A relative path given to commsim (on the command line or inside a file) is looked up, first match wins:
//   1. as given, from the current directory (a repository checkout, or the user's own files);
//   2. under $COMMSIM_DATA_DIR, when that variable is set and not empty;
//   3. under <directory of the executable>/../share/commsim (an install, at whatever prefix it was copied to);
//   4. under the data directory compiled in from the install prefix (CMAKE_INSTALL_FULL_DATADIR/commsim).
// An absolute path, or a path found nowhere, is used as given (so that the error names what the user wrote).
#pragma once

#include <string>
#include <vector>

namespace commsim {

// The directories of steps 2-4 above that exist, in that order.
std::vector<std::string> data_dirs();

// The file `path` names under the rule above.
std::string resolve_data_path(const std::string& path);

// A path named inside `file` (a scenario's topology, a suite's or a compare file's scenario): an absolute one as given;
// a relative one from the file's folder, then under the rule above (so that an installed file finds its neighbours).
std::string resolve_beside(const std::string& file, const std::string& relative);

// Whether `path` names something that exists / a regular file, answered without throwing: a name the system cannot
// look up at all (longer than a file name may be, a loop of links) is simply not there, and the caller's error
// names it (std::filesystem's one-argument forms throw there).
bool path_exists(const std::string& path);
bool is_regular_file(const std::string& path);

}  // namespace commsim
