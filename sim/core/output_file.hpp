// Where commands write their files: whole or not at all, and never over a file the same command read.
#pragma once

#include <string>
#include <vector>

namespace commsim {

// A command (one process of the CLI) calls this first: from then on the files it reads are recorded
// (note_input_file, called by read_json_file and the log readers) and write_file refuses to replace one of them, as
// `simulate s.json --json s.json` would destroy the scenario it has just read. Off by default, so that a test process
// that writes and rereads its own files freely is not held to one command's rule.
void refuse_outputs_over_inputs();
void note_input_file(const std::string& path);

// Why `path` cannot be an input file of `kind` ("JSON file", "log"), or "" when it can be opened as one: a directory,
// and anything else that is not a regular file (a device such as /dev/zero, a FIFO, a socket), which would be read
// without end or block. A path that does not exist gives "": the opener's message names it.
std::string not_an_input_file(const std::string& path, const std::string& kind);

// Writes `text` to `path`. A regular file (or a new one) is written to a temporary file beside it and renamed over
// it, so that a reader, an interrupted run or a full disk leaves the old file or the new one, never half of one (the
// temporary file is removed on failure). Anything else (/dev/stdout, a pipe) is written in place. Failures, including
// those that only show when the data is flushed, and a path that is one of this process's inputs, are InputErrors
// naming `flag` and the path.
void write_file(const std::string& path, const std::string& text, const std::string& flag);

// Several outputs of one command, whole or none: each regular file is staged beside its target, the others (a
// device, a pipe) written, and only then are the staged files renamed into place, so that one output that cannot be
// written leaves none of the others behind.
struct OutputText {
  std::string path, text, flag;
};
void write_files(const std::vector<OutputText>& outputs);

// write_file for the one command that rewrites its own input on purpose (regress --update, the baseline).
void rewrite_input_file(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace commsim
