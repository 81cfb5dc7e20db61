// Cap'n Proto RPC over TCP, optionally TLS (kj's, over OpenSSL): the connection a client or
// worker opens to a dispatcher, and the dispatcher's listener with its bounds (connections,
// connections still in their handshake, handshake time, message size).
#pragma once

#include <capnp/capability.h>
#include <capnp/message.h>
#include <kj/async-io.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace gt::transport {

/// TLS settings: paths of PEM files. A dispatcher given a certificate and key speaks only TLS;
/// a client or worker given `caFile` speaks TLS and trusts only the certificates in it (the
/// dispatcher's own, or the authority that signed it), checking them against the host name it
/// connects to.
struct TlsOptions {
  std::string certFile; ///< dispatcher: its certificate chain (GT_TLS_CERT)
  std::string keyFile;  ///< dispatcher: its private key (GT_TLS_KEY)
  std::string caFile;   ///< client, worker: the certificates to trust (GT_TLS_CA)
};

/// GT_TLS_CERT, GT_TLS_KEY and GT_TLS_CA from the environment (unset: empty).
TlsOptions tlsFromEnv();

/// Reader limits for messages from a trusted peer (a dispatcher's replies carry whole fetched
/// tensors): up to 64 GiB.
capnp::ReaderOptions trustedReaderOptions();

/// Whether two secrets are equal, in time that does not depend on where they differ.
bool sameSecret(const std::string &a, const std::string &b);
/// 32 random bytes from the kernel, as 64 hex digits (tokens made per run).
std::string randomToken();
/// Where a dispatcher on `port` writes the worker token it generated (mode 0600), and where
/// gt-worker looks for it when GT_WORKER_TOKEN is unset: ~/.gt/worker-token-<port>.
std::string defaultWorkerTokenFile(int port);
/// "host:port" for messages, or "unix:PATH" alone (a Unix socket has no port).
std::string addressString(const std::string &host, int port);

/// A connection to a dispatcher (a client's or a worker's), with the event loop of the thread
/// that made it: every call on it belongs to that thread.
class Connection {
public:
  /// Connects to `host:port` (TLS if tls.caFile is set) within `timeoutSeconds`. Throws
  /// std::runtime_error saying why it could not (refused, timed out, the certificate did not
  /// verify, ...).
  Connection(const std::string &host, int port, const TlsOptions &tls, double timeoutSeconds,
             capnp::ReaderOptions reader = trustedReaderOptions());
  ~Connection();
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  /// The dispatcher's front door (gt::wire::Dispatcher).
  capnp::Capability::Client bootstrap();
  template <typename T> typename T::Client main() { return bootstrap().castAs<T>(); }
  kj::WaitScope &waitScope();
  kj::Timer &timer();
  /// The event loop and I/O of the thread that made it (a Listener on the same thread uses it).
  kj::AsyncIoContext &io();
  /// Resolves when the connection is gone.
  kj::Promise<void> onDisconnect();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct ListenerOptions {
  std::string host = "127.0.0.1";     ///< "unix:PATH": a Unix-domain socket only (as unixPath)
  int port = 0;                       ///< 0: a free port
  size_t maxConnections = 1024;       ///< more are accepted and closed at once
  size_t maxPending = 64;             ///< connections not yet through the handshake; a new one
                                      ///< beyond this closes the oldest of them
  double handshakeSeconds = 5;        ///< a connection not through the handshake by then is closed
  uint64_t maxMessageBytes = 256u << 20; ///< a larger message closes its connection
  TlsOptions tls;                     ///< certFile + keyFile: TLS only
  /// Also accept on this Unix-domain socket ("": none). Local clients and workers that connect
  /// with host "unix:PATH" skip the TCP/IP stack: a small round trip through the dispatcher
  /// costs about 20 % less (benchmarks/RESULTS.md). The same handshake, tokens, limits and TLS
  /// apply. The socket file is created with the process's umask (put it in a private folder);
  /// a stale one left at PATH by a killed process is replaced, a live one is an error.
  std::string unixPath;
};

/// The dispatcher's listening socket. Each accepted connection gets its own bootstrap
/// capability from `frontDoor(id)`, which must call authenticated(id) once the peer proved
/// who it is; until then the connection counts as pending and is closed at the deadline.
/// Accept errors (out of file descriptors, ...) are logged and retried; they never stop it.
class Listener {
public:
  using FrontDoor = std::function<capnp::Capability::Client(uint64_t id)>;
  struct Counters {
    uint64_t accepted = 0, refused = 0, evicted = 0, timedOut = 0, acceptErrors = 0;
    size_t open = 0, pending = 0;
  };

  /// Binds and starts accepting on `io`'s event loop. Throws std::runtime_error if the address
  /// cannot be bound or the TLS files cannot be read.
  Listener(kj::AsyncIoContext &io, const ListenerOptions &options, FrontDoor frontDoor);
  ~Listener();
  unsigned port() const; ///< the TCP port
  /// Connection `id` passed the handshake: it is no longer pending and has no deadline.
  void authenticated(uint64_t id);
  /// Closes connection `id` soon (not inside this call, which may come from that connection).
  void close(uint64_t id);
  Counters counters() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace gt::transport
