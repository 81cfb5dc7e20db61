// gt-dispatcher: the front door (handshakes, sessions), the workers' registration and
// heartbeats, the rendezvous store, and `serve`. A session's own work is in Session.cpp,
// Plan.cpp, Fetch.cpp and Stats.cpp (see Session.h).
#include "gt/Dispatcher/Dispatcher.h"

#include "Session.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

namespace gt::dispatcher {
namespace {

class LivenessImpl final : public wire::Liveness::Server {
public:
  kj::Promise<void> ping(PingContext) override { return kj::READY_NOW; }
};

/// The rendezvous store as registered workers see it (see RendezvousStore).
class RendezvousImpl final : public wire::Rendezvous::Server {
public:
  explicit RendezvousImpl(State &state) : state_(state) {}

  kj::Promise<void> set(SetContext context) override {
    RendezvousStore &store = state_.store;
    auto params = context.getParams();
    std::string key = params.getKey().cStr();
    auto data = params.getValue();
    KJ_REQUIRE(key.size() + data.size() <= state_.options.storeMaxValueBytes, "rendezvous value too large");
    store.expire();
    auto it = store.entries.find(key);
    if (it == store.entries.end())
      KJ_REQUIRE(store.entries.size() < state_.options.storeMaxKeys, "the rendezvous store is full");
    else
      store.bytes -= it->first.size() + it->second.value.size();
    std::string value(reinterpret_cast<const char *>(data.begin()), data.size());
    store.bytes += key.size() + value.size();
    store.entries[key] = {value, std::chrono::steady_clock::now()};
    auto [begin, end] = store.waiters.equal_range(key);
    for (auto w = begin; w != end; ++w) w->second->fulfill(std::string(value));
    store.waiters.erase(begin, end);
    return kj::READY_NOW;
  }

  kj::Promise<void> get(GetContext context) override {
    RendezvousStore &store = state_.store;
    std::string key = context.getParams().getKey().cStr();
    auto put = [context](std::string value) mutable {
      context.getResults().setValue(kj::arrayPtr(reinterpret_cast<const kj::byte *>(value.data()), value.size()));
    };
    if (auto it = store.entries.find(key); it != store.entries.end()) {
      put(it->second.value);
      return kj::READY_NOW;
    }
    store.expire();
    KJ_REQUIRE(store.waiters.size() < state_.options.storeMaxWaiters, "too many rendezvous gets are waiting");
    auto paf = kj::newPromiseAndFulfiller<std::string>();
    store.waiters.emplace(key, kj::mv(paf.fulfiller));
    return state_.timer->timeoutAfter(60 * kj::SECONDS, kj::mv(paf.promise)).then(kj::mv(put));
  }

private:
  State &state_;
};

/// The front door of one connection: the handshake, and nothing else. A client presents
/// GT_TOKEN, a worker GT_WORKER_TOKEN; a wrong one closes the connection.
class FrontDoorImpl final : public wire::Dispatcher::Server {
public:
  FrontDoorImpl(State &state, uint64_t connection) : state_(state), connection_(connection) {}

  kj::Promise<void> openSession(OpenSessionContext context) override {
    // GT_TOKEN (weight 1), or a token of the clients file (its name and weight); a dispatcher
    // with neither admits anyone.
    std::string name;
    double weight = 1;
    if (!admitClient(context.getParams().getToken().cStr(), name, weight))
      return KJ_EXCEPTION(FAILED, "wrong or missing GT_TOKEN: this dispatcher admits only clients that present its token");
    std::string label = context.getParams().getLabel().cStr();
    if (label.size() > state_.options.batch.maxText) label.resize(state_.options.batch.maxText);
    context.getResults().setSession(kj::heap<SessionImpl>(state_, name, weight, std::move(label)));
    context.getResults().setAlive(kj::heap<LivenessImpl>());
    state_.fillLimits(context.getResults().initLimits());
    return kj::READY_NOW;
  }

  kj::Promise<void> registerWorker(RegisterWorkerContext context) override {
    auto params = context.getParams();
    if (!admit(state_.options.workerToken, params.getToken()))
      return KJ_EXCEPTION(FAILED, "wrong or missing GT_WORKER_TOKEN: only workers holding the dispatcher's worker token may register");
    WorkerRef ref{params.getWorker(), params.getDevice().cStr()};
    ref.connection = connection_;
    ref.memoryBytes = params.getMemoryBytes();
    ref.sessionMemoryBytes = params.getSessionMemoryBytes();
    ref.readerAddress = params.getReaderAddress().cStr();
    if (ref.readerAddress.size() > state_.options.batch.maxText) ref.readerAddress.clear();
    state_.workers.push_back(std::move(ref));
    uint32_t index = uint32_t(state_.workers.size() - 1);
    std::cerr << "gt-dispatcher: worker " << index << " registered (" << params.getDevice().cStr()
              << (state_.workers.back().readerAddress.empty() ? "" : ", sessions read from it at " + state_.workers.back().readerAddress)
              << ")" << std::endl;
    context.getResults().setIndex(index);
    context.getResults().setRendezvous(kj::heap<RendezvousImpl>(state_));
    return kj::READY_NOW;
  }

  kj::Promise<void> monitor(MonitorContext context) override {
    std::string name;
    double weight;
    if (!admitClient(context.getParams().getToken().cStr(), name, weight))
      return KJ_EXCEPTION(FAILED, "wrong or missing GT_TOKEN: gt top needs a client token of this dispatcher");
    return fillMonitor(state_, context.getResults());
  }

private:
  /// Whether `given` is GT_TOKEN or a token of the clients file (then `name` and `weight` are
  /// its); a dispatcher with neither admits anyone. Marks the connection authenticated, or has
  /// it closed.
  bool admitClient(const std::string &given, std::string &name, double &weight) {
    const Options &o = state_.options;
    bool known = (o.token.empty() && o.clients.empty()) || (!o.token.empty() && transport::sameSecret(o.token, given));
    for (const ClientEntry &c : o.clients)
      if (transport::sameSecret(c.token, given)) {
        known = true;
        name = c.name;
        weight = c.weight;
      }
    if (!known) {
      refuse();
      return false;
    }
    state_.listener->authenticated(connection_);
    return true;
  }

  /// Whether `given` matches `secret` (an empty secret admits anyone); marks the connection
  /// authenticated, or has it closed.
  bool admit(const std::string &secret, capnp::Text::Reader given) {
    if (secret.empty() || transport::sameSecret(secret, given.cStr())) {
      state_.listener->authenticated(connection_);
      return true;
    }
    refuse();
    return false;
  }

  /// A wrong credential: the connection is closed once the error has gone out.
  void refuse() {
    state_.handshakeFailures++;
    // Closed once the error has gone out (a later turn of the event loop).
    uint64_t id = connection_;
    transport::Listener *listener = state_.listener;
    state_.timer->afterDelay(100 * kj::MILLISECONDS).then([listener, id] { listener->close(id); }).detach([](kj::Exception &&) {});
  }

  State &state_;
  uint64_t connection_;
};

/// Pings every live worker each heartbeat; one that has answered none for
/// workerTimeoutSeconds is lost (a stopped or wedged process keeps its connection open).
kj::Promise<void> watchWorkers(State &state) {
  double every = std::min(state.options.heartbeatSeconds, state.options.workerTimeoutSeconds / 4);
  return state.timer->afterDelay(int64_t(every * 1000) * kj::MILLISECONDS).then([&state] {
    auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < state.workers.size(); ++i) {
      WorkerRef &w = state.workers[i];
      if (!w.alive) continue;
      double silent = std::chrono::duration<double>(now - w.lastPong).count();
      if (silent > state.options.workerTimeoutSeconds) {
        state.markDead(int64_t(i), "it answered no ping for " + std::to_string(int(silent)) + " s");
        continue;
      }
      State *s = &state;
      w.client.pingRequest().send().then([s, i](auto &&) { s->workers[i].lastPong = std::chrono::steady_clock::now(); },
                                         [s, i](kj::Exception &&e) { s->markDead(int64_t(i), e.getDescription().cStr()); })
          .detach([](kj::Exception &&) {});
    }
    return watchWorkers(state);
  });
}

/// Publishes the dispatcher's metrics to `server` every second (Prometheus scrapes far less often).
kj::Promise<void> publishMetrics(State &state, metrics::Server &server) {
  server.publish(metricSamples(state));
  return state.timer->afterDelay(1 * kj::SECONDS).then([&state, &server] { return publishMetrics(state, server); });
}

/// Lets the process hold as many sockets as the hard limit allows (the connection bound, not
/// the file descriptor limit, should be what refuses clients).
void raiseFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

/// Writes `token` to `path` readable by this user only (its folder made 0700 if missing).
void writeSecret(const std::string &path, const std::string &token) {
  auto dir = path.substr(0, path.rfind('/'));
  if (!dir.empty()) mkdir(dir.c_str(), 0700);
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write the worker token to " + path + ": " + std::strerror(errno));
  chmod(tmp.c_str(), 0600);
  std::fputs(token.c_str(), f);
  std::fclose(f);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write the worker token to " + path + ": " + std::strerror(errno));
}

} // namespace

void serve(const Options &given) {
  Options options = given;
  options.listener.host = options.host;
  options.listener.port = options.port;
  raiseFileLimit();
  auto io = kj::setupAsyncIo();
  State state(options);
  state.timer = &io.provider->getTimer();
  transport::Listener listener(io, options.listener, [&state](uint64_t id) -> capnp::Capability::Client {
    return kj::heap<FrontDoorImpl>(state, id);
  });
  state.listener = &listener;
  unsigned port = listener.port();
  if (state.options.workerToken.empty()) {
    std::string path = options.workerTokenFile.empty() ? transport::defaultWorkerTokenFile(int(port)) : options.workerTokenFile;
    state.options.workerToken = transport::randomToken();
    writeSecret(path, state.options.workerToken);
    std::cerr << "gt-dispatcher: workers join with the token in " << path << " (or set GT_WORKER_TOKEN)" << std::endl;
  }
  std::unique_ptr<metrics::Server> metricsServer;
  kj::Promise<void> publishing = kj::NEVER_DONE;
  if (options.metricsPort >= 0) {
    metricsServer = std::make_unique<metrics::Server>(options.metricsHost, options.metricsPort);
    std::cerr << "gt-dispatcher: metrics on http://" << options.metricsHost << ":" << metricsServer->port() << "/metrics"
              << std::endl;
    publishing = publishMetrics(state, *metricsServer);
  }
  if (!options.listener.unixPath.empty()) std::cerr << "gt-dispatcher: also on unix:" << options.listener.unixPath << std::endl;
  std::printf("gt-dispatcher listening on %s:%u\n", options.host.c_str(), port);
  std::fflush(stdout);
  watchWorkers(state).exclusiveJoin(kj::mv(publishing)).wait(io.waitScope);
}

} // namespace gt::dispatcher
