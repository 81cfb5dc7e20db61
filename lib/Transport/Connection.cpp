// Cap'n Proto RPC over TCP or TLS: clients' and workers' connections, the dispatcher's
// bounded listener (see Connection.h).
#include "gt/Transport/Connection.h"

#include <capnp/rpc-twoparty.h>
#include <kj/compat/tls.h>
#include <kj/debug.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace gt::transport {
namespace {

std::string readFile(const std::string &path, const char *what) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("cannot read the TLS ") + what + " file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

capnp::Capability::Client bootstrapOf(capnp::RpcSystem<capnp::rpc::twoparty::VatId> &rpc) {
  capnp::MallocMessageBuilder message(8);
  auto vat = message.getRoot<capnp::rpc::twoparty::VatId>();
  vat.setSide(capnp::rpc::twoparty::Side::SERVER);
  return rpc.bootstrap(vat);
}

} // namespace

TlsOptions tlsFromEnv() { return {env("GT_TLS_CERT"), env("GT_TLS_KEY"), env("GT_TLS_CA")}; }

capnp::ReaderOptions trustedReaderOptions() {
  capnp::ReaderOptions reader;
  reader.traversalLimitInWords = uint64_t(1) << 33; // 64 GiB: whole fetched tensors
  reader.nestingLimit = 64;
  return reader;
}

bool sameSecret(const std::string &a, const std::string &b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i]) ^ uint8_t(i < b.size() ? b[i] : 0);
  return diff == 0;
}

std::string randomToken() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  if (!urandom.read(reinterpret_cast<char *>(bytes), sizeof bytes)) throw std::runtime_error("cannot read /dev/urandom");
  std::string hex;
  char two[3];
  for (unsigned char b : bytes) {
    std::snprintf(two, sizeof two, "%02x", b);
    hex += two;
  }
  return hex;
}

std::string defaultWorkerTokenFile(int port) {
  std::string home = env("HOME");
  return (home.empty() ? std::string("/tmp") : home) + "/.gt/worker-token-" + std::to_string(port);
}

std::string addressString(const std::string &host, int port) {
  return host.rfind("unix:", 0) == 0 ? host : host + ":" + std::to_string(port);
}

// ------------------------------------------------------------------------ client side

/// The event loop and I/O of one thread, shared by every connection made on it (a thread can
/// have only one event loop).
struct ThreadIo {
  kj::AsyncIoContext io = kj::setupAsyncIo();
};

std::shared_ptr<ThreadIo> threadIo() {
  static thread_local std::weak_ptr<ThreadIo> current;
  std::shared_ptr<ThreadIo> io = current.lock();
  if (!io) current = io = std::make_shared<ThreadIo>();
  return io;
}

struct Connection::Impl {
  std::shared_ptr<ThreadIo> thread = threadIo(); // first member: destroyed last
  kj::AsyncIoContext &io = thread->io;
  std::unique_ptr<kj::TlsCertificate> trusted;
  kj::Own<kj::TlsContext> tls;
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyVatNetwork> network;
  kj::Own<capnp::RpcSystem<capnp::rpc::twoparty::VatId>> rpc;
  kj::ForkedPromise<void> disconnected = kj::Promise<void>(kj::NEVER_DONE).fork();
};

Connection::Connection(const std::string &host, int port, const TlsOptions &tls, double timeoutSeconds,
                       capnp::ReaderOptions reader)
    : impl_(std::make_unique<Impl>()) {
  Impl &c = *impl_;
  auto deadline = kj::systemPreciseMonotonicClock().now() + int64_t(timeoutSeconds * 1000) * kj::MILLISECONDS;
  auto &timer = c.io.provider->getTimer();
  auto &ws = c.io.waitScope;
  try {
    if (!tls.caFile.empty()) {
      c.trusted = std::make_unique<kj::TlsCertificate>(kj::StringPtr(readFile(tls.caFile, "CA").c_str()));
      kj::TlsContext::Options options;
      options.useSystemTrustStore = false;
      options.trustedCertificates = kj::arrayPtr(c.trusted.get(), 1);
      options.minVersion = kj::TlsVersion::TLS_1_2;
      c.tls = kj::heap<kj::TlsContext>(kj::mv(options));
    }
    auto address = timer.timeoutAt(deadline, c.io.provider->getNetwork().parseAddress(host, port)).wait(ws);
    c.stream = timer.timeoutAt(deadline, address->connect()).wait(ws);
    if (c.tls) c.stream = timer.timeoutAt(deadline, c.tls->wrapClient(kj::mv(c.stream), host)).wait(ws);
  } catch (const kj::Exception &e) {
    throw std::runtime_error(e.getDescription().cStr());
  }
  c.network = kj::heap<capnp::TwoPartyVatNetwork>(*c.stream, capnp::rpc::twoparty::Side::CLIENT, reader);
  c.rpc = kj::heap<capnp::RpcSystem<capnp::rpc::twoparty::VatId>>(capnp::makeRpcClient(*c.network));
  c.disconnected = c.network->onDisconnect().fork();
}

Connection::~Connection() = default;

capnp::Capability::Client Connection::bootstrap() { return bootstrapOf(*impl_->rpc); }
kj::WaitScope &Connection::waitScope() { return impl_->io.waitScope; }
kj::Timer &Connection::timer() { return impl_->io.provider->getTimer(); }
kj::AsyncIoContext &Connection::io() { return impl_->io; }
kj::Promise<void> Connection::onDisconnect() { return impl_->disconnected.addBranch(); }

// ------------------------------------------------------------------------ server side

struct Listener::Impl : kj::TaskSet::ErrorHandler {
  /// One accepted connection. Members are destroyed in reverse order: the RPC system first.
  struct Conn {
    kj::Own<kj::AsyncIoStream> stream;
    kj::Own<capnp::TwoPartyVatNetwork> network;
    kj::Own<capnp::RpcSystem<capnp::rpc::twoparty::VatId>> rpc;
    kj::Maybe<kj::Promise<void>> handshake; ///< TLS, while it runs
    kj::Maybe<kj::Promise<void>> watch;     ///< ends the connection when the peer goes
    bool closing = false;
  };

  kj::AsyncIoContext &io;
  ListenerOptions options;
  FrontDoor frontDoor;
  capnp::ReaderOptions reader;
  std::vector<kj::Own<kj::ConnectionReceiver>> receivers; ///< [0]: TCP; then the Unix socket, if any
  std::unique_ptr<kj::TlsKeypair> keypair;
  kj::Own<kj::TlsContext> tls;
  std::map<uint64_t, Conn> conns;
  std::set<uint64_t> pending; ///< ids of connections still in their handshake (oldest first)
  uint64_t nextId = 1;
  Counters counters;
  std::chrono::steady_clock::time_point lastLog{};
  kj::TaskSet tasks{*this};

  Impl(kj::AsyncIoContext &io, const ListenerOptions &o, FrontDoor f) : io(io), options(o), frontDoor(std::move(f)) {
    reader.traversalLimitInWords = options.maxMessageBytes / sizeof(capnp::word);
    reader.nestingLimit = 64;
    if (!options.tls.certFile.empty() || !options.tls.keyFile.empty()) {
      if (options.tls.certFile.empty() || options.tls.keyFile.empty())
        throw std::runtime_error("TLS needs both a certificate (GT_TLS_CERT) and its key (GT_TLS_KEY)");
      std::string cert = readFile(options.tls.certFile, "certificate"), key = readFile(options.tls.keyFile, "key");
      try {
        keypair.reset(new kj::TlsKeypair{kj::TlsPrivateKey(kj::StringPtr(key.c_str())),
                                         kj::TlsCertificate(kj::StringPtr(cert.c_str()))});
        kj::TlsContext::Options tlsOptions;
        tlsOptions.useSystemTrustStore = false;
        tlsOptions.defaultKeypair = *keypair;
        tlsOptions.minVersion = kj::TlsVersion::TLS_1_2;
        tls = kj::heap<kj::TlsContext>(kj::mv(tlsOptions));
      } catch (const kj::Exception &e) {
        throw std::runtime_error("TLS certificate or key: " + std::string(e.getDescription().cStr()));
      }
    }
    if (options.host.rfind("unix:", 0) == 0) removeStaleSocket(options.host.substr(5));
    receivers.push_back(listenOn(options.host, options.port));
    if (!options.unixPath.empty()) {
      removeStaleSocket(options.unixPath);
      receivers.push_back(listenOn("unix:" + options.unixPath, 0));
    }
    for (auto &receiver : receivers) acceptNext(*receiver);
  }

  kj::Own<kj::ConnectionReceiver> listenOn(const std::string &host, int port) {
    try {
      return io.provider->getNetwork().parseAddress(host, port).wait(io.waitScope)->listen();
    } catch (const kj::Exception &e) {
      bool isUnix = host.rfind("unix:", 0) == 0;
      throw std::runtime_error("cannot listen on " + host + (isUnix ? "" : ":" + std::to_string(port)) + ": " +
                               e.getDescription().cStr());
    }
  }

  /// A socket file at `path` that nobody listens on (a dispatcher that was killed) is removed;
  /// one that answers belongs to a live process: that is an error, not something to take over.
  static void removeStaleSocket(const std::string &path) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return; // absent, or not ours to remove
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) return; // listen() reports the bad path
    std::memcpy(address.sun_path, path.c_str(), path.size());
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    bool live = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0;
    if (fd >= 0) ::close(fd);
    if (live) throw std::runtime_error("cannot listen on unix:" + path + ": another process is listening there");
    ::unlink(path.c_str());
  }

  void taskFailed(kj::Exception &&e) override { log(std::string("connection task failed: ") + e.getDescription().cStr()); }

  /// At most one line per second: a flood must not fill the log.
  void log(const std::string &line) {
    auto now = std::chrono::steady_clock::now();
    if (now - lastLog < std::chrono::seconds(1)) return;
    lastLog = now;
    std::cerr << "gt-dispatcher: " << line << std::endl;
  }

  void acceptNext(kj::ConnectionReceiver &receiver) {
    tasks.add(receiver.accept().then(
        [this, &receiver](kj::Own<kj::AsyncIoStream> &&stream) -> kj::Promise<void> {
          admit(kj::mv(stream));
          acceptNext(receiver);
          return kj::READY_NOW;
        },
        [this, &receiver](kj::Exception &&e) -> kj::Promise<void> {
          counters.acceptErrors++; // e.g. out of file descriptors: try again shortly
          log(std::string("accept failed (will retry): ") + e.getDescription().cStr());
          return io.provider->getTimer().afterDelay(50 * kj::MILLISECONDS).then([this, &receiver] { acceptNext(receiver); });
        }));
  }

  void admit(kj::Own<kj::AsyncIoStream> stream) {
    counters.accepted++;
    if (conns.size() >= options.maxConnections) {
      counters.refused++; // dropping the stream closes it
      log("refused a connection: " + std::to_string(conns.size()) + " open (the limit)");
      return;
    }
    if (pending.size() >= options.maxPending) {
      counters.evicted++;
      log("closed the oldest of " + std::to_string(pending.size()) + " connections still in their handshake");
      close(*pending.begin());
    }
    uint64_t id = nextId++;
    pending.insert(id);
    Conn &conn = conns[id];
    tasks.add(io.provider->getTimer().afterDelay(int64_t(options.handshakeSeconds * 1000) * kj::MILLISECONDS).then([this, id] {
      if (!pending.count(id)) return;
      counters.timedOut++;
      close(id);
    }));
    if (tls) {
      conn.handshake = tls->wrapServer(kj::mv(stream))
                           .then([this, id](kj::Own<kj::AsyncIoStream> &&secured) { start(id, kj::mv(secured)); },
                                 [this, id](kj::Exception &&) { close(id); })
                           .eagerlyEvaluate(nullptr);
    } else {
      start(id, kj::mv(stream));
    }
  }

  void start(uint64_t id, kj::Own<kj::AsyncIoStream> stream) {
    auto it = conns.find(id);
    if (it == conns.end() || it->second.closing) return;
    Conn &conn = it->second;
    conn.stream = kj::mv(stream);
    conn.network = kj::heap<capnp::TwoPartyVatNetwork>(*conn.stream, capnp::rpc::twoparty::Side::SERVER, reader);
    conn.rpc = kj::heap<capnp::RpcSystem<capnp::rpc::twoparty::VatId>>(capnp::makeRpcServer(*conn.network, frontDoor(id)));
    conn.watch = conn.network->onDisconnect().then([this, id] { close(id); }).eagerlyEvaluate(nullptr);
  }

  void close(uint64_t id) {
    pending.erase(id);
    auto it = conns.find(id);
    if (it == conns.end() || it->second.closing) return;
    it->second.closing = true;
    tasks.add(kj::evalLater([this, id] { conns.erase(id); }));
  }
};

Listener::Listener(kj::AsyncIoContext &io, const ListenerOptions &options, FrontDoor frontDoor)
    : impl_(std::make_unique<Impl>(io, options, std::move(frontDoor))) {}
Listener::~Listener() = default;
unsigned Listener::port() const { return impl_->receivers[0]->getPort(); }
void Listener::authenticated(uint64_t id) { impl_->pending.erase(id); }
void Listener::close(uint64_t id) { impl_->close(id); }

Listener::Counters Listener::counters() const {
  Counters c = impl_->counters;
  c.open = impl_->conns.size();
  c.pending = impl_->pending.size();
  return c;
}

} // namespace gt::transport
