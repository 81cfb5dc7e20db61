// The clients file of a shared dispatcher (gt-dispatcher --clients FILE): who may open
// sessions, each with a token of their own, and each one's share of the workers.
//
//   alice:
//     token: 3f9a0c...     # at least 16 characters; `openssl rand -hex 32` makes a good one
//     weight: 2            # optional (default 1): alice's sessions get twice the turns of a
//                          # weight-1 session on a busy worker
//   bob:
//     token: 77c1e4...
//
// Parsed with yaml-cpp. Every error names the file and the line.
#pragma once

#include "gt/Core/Config.h"

#include <string>
#include <vector>

namespace gt {

struct ClientEntry {
  std::string name;
  std::string token;
  double weight = 1; ///< share relative to other sessions (the worker's deficit round robin)
};

/// The entries of a clients file. Throws ConfigError ("clients.yaml:4: ...") for a malformed
/// file, an entry without a token, a token under 16 characters or used twice, a weight that is
/// not a positive number, or an unknown key.
std::vector<ClientEntry> parseClients(const std::string &text, const std::string &path);

} // namespace gt
