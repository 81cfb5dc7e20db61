// The sharding config: YAML (yaml-cpp) -> ShardingConfig, with the line of every error.
#include "gt/Core/Config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

namespace gt {
namespace {

int lineOf(const YAML::Node &n) { return n.Mark().line + 1; }

struct Parser {
  const std::string &source;

  [[noreturn]] void fail(const YAML::Node &at, const std::string &message) const {
    throw ConfigError(source + ":" + std::to_string(lineOf(at)) + ": " + message);
  }

  int64_t integer(const YAML::Node &n, const std::string &what) const {
    try {
      return n.as<int64_t>();
    } catch (const YAML::Exception &) {
      fail(n, what + " must be an integer, got '" + (n.IsScalar() ? n.Scalar() : std::string("a list or map")) + "'");
    }
  }

  bool boolean(const YAML::Node &n, const std::string &what) const {
    try {
      return n.as<bool>();
    } catch (const YAML::Exception &) {
      fail(n, what + " must be true or false");
    }
  }

  std::vector<int64_t> workerList(const YAML::Node &n, const std::string &signal) const {
    if (!n.IsSequence()) fail(n, "signal '" + signal + "': workers must be a list of worker indices, like [0, 1]");
    std::vector<int64_t> out;
    for (const YAML::Node &w : n) {
      int64_t v = integer(w, "signal '" + signal + "': a worker index");
      if (v < 0) fail(w, "signal '" + signal + "': worker index " + std::to_string(v) + " is negative");
      for (int64_t seen : out)
        if (seen == v) fail(w, "signal '" + signal + "': worker " + std::to_string(v) + " is listed twice");
      out.push_back(v);
    }
    if (out.empty()) fail(n, "signal '" + signal + "': the worker list is empty");
    return out;
  }

  SignalConfig signal(const std::string &name, const YAML::Node &key, const YAML::Node &body) const {
    SignalConfig s;
    s.name = name;
    s.line = lineOf(key);
    if (!body.IsMap()) fail(key, "signal '" + name + "' must be a map of shard/replicated/backward/compile");
    for (const auto &kv : body) {
      std::string k = kv.first.as<std::string>();
      const YAML::Node &v = kv.second;
      if (k == "shard") {
        s.shard = true;
        if (!v.IsMap()) fail(kv.first, "signal '" + name + "': shard must be a map like {axis: 0, workers: [0, 1]}");
        bool hasAxis = false;
        for (const auto &skv : v) {
          std::string sk = skv.first.as<std::string>();
          if (sk == "axis") {
            s.axis = integer(skv.second, "signal '" + name + "': shard axis");
            s.axisLine = lineOf(skv.second);
            hasAxis = true;
          } else if (sk == "workers") {
            s.workers = workerList(skv.second, name);
            s.workersLine = lineOf(skv.second);
          } else {
            fail(skv.first, "unknown key '" + sk + "' in the shard of signal '" + name + "' (expected axis, workers)");
          }
        }
        if (!hasAxis) fail(kv.first, "signal '" + name + "': shard needs an axis");
      } else if (k == "replicated") {
        if (v.IsMap()) {
          for (const auto &rkv : v) {
            std::string rk = rkv.first.as<std::string>();
            if (rk != "workers") fail(rkv.first, "unknown key '" + rk + "' in replicated of signal '" + name + "' (expected workers)");
            s.workers = workerList(rkv.second, name);
            s.workersLine = lineOf(rkv.second);
          }
          s.replicated = true;
        } else {
          s.replicated = boolean(v, "signal '" + name + "': replicated");
        }
      } else if (k == "backward") {
        if (!v.IsScalar()) fail(kv.first, "signal '" + name + "': backward must name another signal");
        s.backward = v.Scalar();
      } else if (k == "compile") {
        s.compile = boolean(v, "signal '" + name + "': compile");
      } else {
        fail(kv.first, "unknown key '" + k + "' in signal '" + name + "' (expected shard, replicated, backward, compile)");
      }
    }
    if (s.shard && s.replicated) fail(key, "signal '" + name + "' is both sharded and replicated");
    return s;
  }
};

} // namespace

ShardingConfig ShardingConfig::parse(const std::string &text, const std::string &source) {
  ShardingConfig config;
  config.source = source;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException &e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (root.IsNull()) return config;
  Parser p{config.source};
  if (!root.IsMap()) p.fail(root, "a sharding config is a map of signal names to settings");
  std::map<std::string, YAML::Node> backwardKeys;
  for (const auto &kv : root) {
    try {
      std::string name = kv.first.as<std::string>();
      if (config.signals.count(name)) p.fail(kv.first, "signal '" + name + "' is defined twice");
      config.signals.emplace(name, p.signal(name, kv.first, kv.second));
      if (kv.second.IsMap() && kv.second["backward"]) backwardKeys[name] = kv.second["backward"];
    } catch (const YAML::Exception &e) { // e.g. a key that is a list: not one of ours
      throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
  }
  for (auto &[name, node] : backwardKeys) {
    const std::string &target = config.signals.at(name).backward;
    if (!config.signals.count(target))
      p.fail(node, "signal '" + name + "': backward names '" + target + "', which is not defined in this file");
  }
  return config;
}

ShardingConfig ShardingConfig::load(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot read the sharding config");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

const SignalConfig *ShardingConfig::find(std::string_view name) const {
  auto it = signals.find(name);
  return it == signals.end() ? nullptr : &it->second;
}

void ShardingConfig::checkWorkers(int64_t numWorkers) const {
  for (const auto &[name, s] : signals)
    for (int64_t w : s.workers)
      if (w >= numWorkers)
        throw ConfigError(where(s.workersLine) + ": signal '" + name + "' names worker " + std::to_string(w) +
                          ", but there are only " + std::to_string(numWorkers) + " workers (0.." +
                          std::to_string(numWorkers - 1) + ")");
}

} // namespace gt
