// The clients file: YAML (yaml-cpp) -> ClientEntry list, with the line of every error.
#include "gt/Core/Clients.h"

#include <yaml-cpp/yaml.h>

#include <set>

namespace gt {

std::vector<ClientEntry> parseClients(const std::string &text, const std::string &path) {
  auto fail = [&](const YAML::Node &at, const std::string &message) {
    throw ConfigError(path + ":" + std::to_string(at.Mark().line + 1) + ": " + message);
  };
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException &e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  std::vector<ClientEntry> clients;
  if (!root || root.IsNull()) return clients;
  if (!root.IsMap()) throw ConfigError(path + ": expected one entry per client (name: {token: ..., weight: ...})");
  std::set<std::string> tokens;
  for (const auto &kv : root) {
    ClientEntry entry;
    entry.name = kv.first.Scalar();
    const YAML::Node &body = kv.second;
    if (!body.IsMap()) fail(kv.first, "client '" + entry.name + "': expected {token: ..., weight: ...}");
    for (const auto &field : body) {
      std::string key = field.first.Scalar();
      if (key == "token") {
        entry.token = field.second.Scalar();
        if (entry.token.size() < 16) fail(field.second, "client '" + entry.name + "': a token needs at least 16 characters");
        if (!tokens.insert(entry.token).second) fail(field.second, "client '" + entry.name + "': this token is another client's");
      } else if (key == "weight") {
        try {
          entry.weight = field.second.as<double>();
        } catch (const YAML::Exception &) {
          entry.weight = 0;
        }
        if (!(entry.weight > 0)) fail(field.second, "client '" + entry.name + "': weight must be a positive number");
      } else {
        fail(field.first, "client '" + entry.name + "': unknown key '" + key + "' (expected token or weight)");
      }
    }
    if (entry.token.empty()) fail(kv.first, "client '" + entry.name + "' has no token");
    clients.push_back(std::move(entry));
  }
  return clients;
}

} // namespace gt
