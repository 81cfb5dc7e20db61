// gt._C.RawConnection: a connection that sends what it is told, without the client's checks:
// what a careless or hostile program could send to a dispatcher. For tests (test_hostile.py)
// and benchmarks; GT's own client never uses it.
#include "gt/Core/OpTable.h"
#include "gt/Transport/Connection.h"
#include "gt/Transport/Wire.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

namespace py = pybind11;
using namespace gt;

namespace {

/// A worker that refuses every call: registered by RawConnection.register_worker, it is dropped
/// by the dispatcher at the first program it is sent.
class RefusingWorker final : public wire::Worker::Server {};

std::string describe(const kj::Exception &e) { return e.getDescription().cStr(); }

/// Waits at most `timeout` seconds for `promise` on `connection`'s event loop; raises
/// RuntimeError with the peer's message.
template <typename T> auto waitFor(transport::Connection &connection, double timeout, T &&promise) {
  auto deadline = kj::systemPreciseMonotonicClock().now() + int64_t(timeout * 1000) * kj::MILLISECONDS;
  try {
    return connection.timer().timeoutAt(deadline, kj::mv(promise)).wait(connection.waitScope());
  } catch (const kj::Exception &e) {
    throw std::runtime_error(describe(e));
  }
}

class RawConnection {
public:
  RawConnection(const std::string &host, int port, const std::string &caFile, double timeout)
      : timeout_(timeout), connection_(host, port, transport::TlsOptions{"", "", caFile}, timeout),
        door_(connection_.main<wire::Dispatcher>()) {}

  /// Waits at most the timeout; raises RuntimeError with the dispatcher's message.
  template <typename T> auto wait(T &&promise) { return waitFor(connection_, timeout_, kj::mv(promise)); }

  void openSession(const std::string &token) {
    auto req = door_.openSessionRequest();
    req.setToken(token);
    auto r = wait(req.send());
    session_ = r.getSession();
  }

  uint32_t registerWorker(const std::string &token) {
    auto req = door_.registerWorkerRequest();
    req.setToken(token);
    req.setDevice("raw");
    req.setWorker(kj::heap<RefusingWorker>());
    auto r = wait(req.send());
    rendezvous_ = r.getRendezvous();
    return r.getIndex();
  }

  /// Calls method `method` of the front door with empty parameters; "" or the error text.
  std::string callFrontDoor(uint16_t method) {
    auto req = door_.typelessRequest(capnp::typeId<wire::Dispatcher>(), method, capnp::MessageSize{4, 0});
    req.initAsAnyStruct(0, 0);
    try {
      wait(req.send());
      return "";
    } catch (const std::runtime_error &e) {
      return e.what();
    }
  }

  /// instructions: dicts with "op" (a mnemonic) and any of "result", "operands", "shape",
  /// "axes", "starts", "steps", "dtype" (a code), "data" (bytes), "value", "workers",
  /// "location", "type" (a (dtype code, shape) pair: the carried result type). Sent as one
  /// batch, as given.
  void submit(const py::list &instructions) {
    auto req = session().submitRequest();
    auto list = req.initBatch().initInstructions(unsigned(instructions.size()));
    for (unsigned i = 0; i < instructions.size(); ++i) {
      py::dict d = instructions[i].cast<py::dict>();
      Instruction inst;
      std::string op = d["op"].cast<std::string>();
      const OpInfo *info = lookupOp(op);
      if (!info) throw std::invalid_argument("unknown op '" + op + "'");
      inst.op = info->code;
      if (d.contains("result")) inst.result = d["result"].cast<uint64_t>();
      if (d.contains("operands")) inst.operands = d["operands"].cast<std::vector<uint64_t>>();
      if (d.contains("shape")) inst.attrs.shape = d["shape"].cast<std::vector<int64_t>>();
      if (d.contains("axes")) inst.attrs.axes = d["axes"].cast<std::vector<int64_t>>();
      if (d.contains("starts")) inst.attrs.starts = d["starts"].cast<std::vector<int64_t>>();
      if (d.contains("steps")) inst.attrs.steps = d["steps"].cast<std::vector<int64_t>>();
      if (d.contains("workers")) inst.attrs.workers = d["workers"].cast<std::vector<int64_t>>();
      if (d.contains("value")) inst.attrs.value = d["value"].cast<double>();
      if (d.contains("dtype")) inst.attrs.dtype = DType(d["dtype"].cast<int>());
      if (d.contains("data")) inst.data = d["data"].cast<std::string>();
      if (d.contains("location")) inst.location = d["location"].cast<std::string>();
      if (d.contains("type")) {
        auto [dtype, shape] = d["type"].cast<std::pair<int, std::vector<int64_t>>>();
        inst.type = TensorType{DType(dtype), shape};
      }
      wire::toWire(inst, list[i]);
    }
    wait(req.send());
  }

  py::tuple fetch(uint64_t id) {
    auto req = session().fetchRequest();
    req.setId(id);
    auto r = wait(req.send());
    auto f = r.getResult();
    if (f.getError().size() > 0) throw std::runtime_error(f.getError().cStr());
    std::vector<int64_t> shape;
    for (int64_t d : f.getShape()) shape.push_back(d);
    auto data = f.getData();
    return py::make_tuple(py::bytes(reinterpret_cast<const char *>(data.begin()), data.size()), shape,
                          int(f.getDtype()));
  }

  void sync() { wait(session().syncRequest().send()); }

  /// Session.directReads: (worker, address, token).
  py::tuple directReads() {
    auto r = wait(session().directReadsRequest().send());
    return py::make_tuple(r.getWorker(), std::string(r.getAddress().cStr()), std::string(r.getToken().cStr()));
  }

  void storeSet(const std::string &key, const py::bytes &value) {
    auto req = rendezvous().setRequest();
    req.setKey(key);
    std::string v = value;
    req.setValue(kj::arrayPtr(reinterpret_cast<const kj::byte *>(v.data()), v.size()));
    wait(req.send());
  }

  py::bytes storeGet(const std::string &key) {
    auto req = rendezvous().getRequest();
    req.setKey(key);
    auto r = wait(req.send());
    auto data = r.getValue();
    return py::bytes(reinterpret_cast<const char *>(data.begin()), data.size());
  }

  /// Starts a get that waits for `key`; it is abandoned when this connection closes.
  void storeGetLater(const std::string &key) {
    auto req = rendezvous().getRequest();
    req.setKey(key);
    pending_.push_back(req.send().ignoreResult().catch_([](kj::Exception &&) {}).eagerlyEvaluate(nullptr));
    connection_.waitScope().poll();
  }

private:
  wire::Session::Client &session() {
    if (!session_) throw std::runtime_error("open_session first");
    return *session_;
  }
  wire::Rendezvous::Client &rendezvous() {
    if (!rendezvous_) throw std::runtime_error("register_worker first");
    return *rendezvous_;
  }

  double timeout_;
  transport::Connection connection_;
  wire::Dispatcher::Client door_;
  std::optional<wire::Session::Client> session_;
  std::optional<wire::Rendezvous::Client> rendezvous_;
  std::vector<kj::Promise<void>> pending_;
};

/// A connection to a worker's reader socket (gt-worker --listen) that sends what it is told.
class RawReader {
public:
  RawReader(const std::string &host, int port, double timeout)
      : timeout_(timeout), connection_(host, port, transport::TlsOptions{}, timeout),
        door_(connection_.main<wire::WorkerDoor>()) {}

  template <typename T> auto wait(T &&promise) { return waitFor(connection_, timeout_, kj::mv(promise)); }

  void open(const std::string &token) {
    auto req = door_.openRequest();
    req.setToken(token);
    reader_ = wait(req.send()).getReader();
  }

  /// (here, bytes, error) of session id `id` read as `dtype` code and `shape` after batch `sequence`.
  py::tuple fetch(uint64_t id, uint64_t sequence, int dtype, const std::vector<int64_t> &shape) {
    auto req = reader().fetchRequest();
    fill(req, id, sequence, dtype, shape);
    auto r = wait(req.send());
    auto data = r.getResult().getData();
    return py::make_tuple(r.getHere(), py::bytes(reinterpret_cast<const char *>(data.begin()), data.size()),
                          std::string(r.getResult().getError().cStr()));
  }

  /// Sends a fetch and does not wait for it (it is abandoned when this connection closes).
  void fetchLater(uint64_t id, uint64_t sequence, int dtype, const std::vector<int64_t> &shape) {
    auto req = reader().fetchRequest();
    fill(req, id, sequence, dtype, shape);
    pending_.push_back(req.send().ignoreResult().catch_([this](kj::Exception &&e) { errors_.push_back(describe(e)); })
                           .eagerlyEvaluate(nullptr));
    connection_.waitScope().poll();
  }

  /// The errors of fetchLater's calls so far (after polling for `seconds`).
  std::vector<std::string> laterErrors(double seconds) {
    auto deadline = kj::systemPreciseMonotonicClock().now() + int64_t(seconds * 1000) * kj::MILLISECONDS;
    connection_.timer().atTime(deadline).wait(connection_.waitScope());
    return errors_;
  }

  void sync(uint64_t sequence) {
    auto req = reader().syncRequest();
    req.setSequence(sequence);
    wait(req.send());
  }

private:
  template <typename R> void fill(R &req, uint64_t id, uint64_t sequence, int dtype, const std::vector<int64_t> &shape) {
    req.setId(id);
    req.setSequence(sequence);
    auto t = req.initType();
    t.setDtype(uint8_t(dtype));
    auto s = t.initShape(unsigned(shape.size()));
    for (unsigned i = 0; i < shape.size(); ++i) s.set(i, shape[i]);
  }
  wire::SessionReader::Client &reader() {
    if (!reader_) throw std::runtime_error("open first");
    return *reader_;
  }

  double timeout_;
  transport::Connection connection_;
  wire::WorkerDoor::Client door_;
  std::optional<wire::SessionReader::Client> reader_;
  std::vector<kj::Promise<void>> pending_;
  std::vector<std::string> errors_;
};

} // namespace

void bindRaw(py::module_ &m) {
  py::class_<RawConnection>(m, "RawConnection",
                            "A connection that sends what it is told, without the client's checks (tests: what a "
                            "careless or hostile program could send). Errors raise RuntimeError with the "
                            "dispatcher's message.")
      .def(py::init<const std::string &, int, const std::string &, double>(), py::arg("host"), py::arg("port"),
           py::arg("tls_ca") = "", py::arg("timeout") = 10.0)
      .def("open_session", &RawConnection::openSession, py::arg("token") = "")
      .def("register_worker", &RawConnection::registerWorker, py::arg("token") = "",
           "Registers a worker that refuses every call; returns its index.")
      .def("call_front_door", &RawConnection::callFrontDoor, py::arg("method"),
           "Calls the front door's method number `method`; '' or the error text.")
      .def("submit", &RawConnection::submit)
      .def("fetch", &RawConnection::fetch)
      .def("sync", &RawConnection::sync)
      .def("direct_reads", &RawConnection::directReads, "Session.directReads: (worker, address, token).")
      .def("store_set", &RawConnection::storeSet)
      .def("store_get", &RawConnection::storeGet)
      .def("store_get_later", &RawConnection::storeGetLater);
  py::class_<RawReader>(m, "RawReader",
                        "A connection to a worker's reader socket (gt-worker --listen) that sends what it is told "
                        "(tests). Errors raise RuntimeError with the worker's message.")
      .def(py::init<const std::string &, int, double>(), py::arg("host"), py::arg("port") = 0, py::arg("timeout") = 10.0)
      .def("open", &RawReader::open, py::arg("token"))
      .def("fetch", &RawReader::fetch, py::arg("id"), py::arg("sequence"), py::arg("dtype"), py::arg("shape"),
           "(here, bytes, error) of the session's tensor `id` after its batch `sequence`.")
      .def("fetch_later", &RawReader::fetchLater, py::arg("id"), py::arg("sequence"), py::arg("dtype"), py::arg("shape"))
      .def("later_errors", &RawReader::laterErrors, py::arg("seconds"))
      .def("sync", &RawReader::sync, py::arg("sequence"));
}
