// gt._C: the pybind11 module over the C++ client core and the op table.
#include "gt/Client/Autograd.h"
#include "gt/Client/Client.h"
#include "gt/Core/OpTable.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <frameobject.h>
#include <structmember.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace py = pybind11;
using namespace gt;

namespace {

std::string packageDir; ///< frames under this directory are GT's own, not the user's

/// The location the last emit carried (gt.profiler reads it instead of walking the frames again).
std::string lastLocation;
/// gt's exception types (made in PYBIND11_MODULE), for code that raises without pybind11.
struct {
  PyObject *shape = nullptr, *axis = nullptr, *dtype = nullptr, *outOfMemory = nullptr;
} translatedErrors;
/// During a backward pass: the location of the forward op whose gradient ops are being issued
/// (they carry it instead of the line that called backward()); see Client.set_grad_location.
thread_local std::optional<std::string> gradLocation;

/// "file:line" of a frame of `code`, by (code object, instruction offset): a line number is
/// found by walking the code's line table (_PyCode_CheckLineNumber took 3 % of a profiled
/// op-issuing loop), and an op is issued from the same few lines over and over. The cache holds
/// a reference to each code object it names, so no address is reused while cached; it is
/// emptied when it reaches kMaxEntries. Only with the GIL held.
std::string frameLocation(PyFrameObject *frame, PyCodeObject *code, const char *file) {
#if PY_VERSION_HEX >= 0x030B0000
  struct Key {
    PyCodeObject *code;
    int lasti;
    bool operator==(const Key &o) const { return code == o.code && lasti == o.lasti; }
  };
  struct Hash {
    size_t operator()(const Key &k) const { return std::hash<void *>()(k.code) * 31 + size_t(k.lasti); }
  };
  static std::unordered_map<Key, std::string, Hash> cache;
  constexpr size_t kMaxEntries = 4096;
  Key key{code, PyFrame_GetLasti(frame)};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxEntries) {
    for (auto &[k, where] : cache) Py_DECREF(k.code);
    cache.clear();
  }
  Py_INCREF(code);
  return cache.emplace(key, std::string(file) + ":" + std::to_string(PyFrame_GetLineNumber(frame))).first->second;
#else
  return std::string(file) + ":" + std::to_string(PyFrame_GetLineNumber(frame));
#endif
}

/// "file.py:line" of the innermost Python frame outside the gt package.
std::string userLocation() {
  PyFrameObject *frame = PyEval_GetFrame(); // borrowed
  Py_XINCREF(frame);
  while (frame) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    const char *file = PyUnicode_AsUTF8(code->co_filename);
    bool internal = file && !packageDir.empty() && std::strncmp(file, packageDir.c_str(), packageDir.size()) == 0;
    std::string where;
    if (file && !internal) where = frameLocation(frame, code, file);
    Py_DECREF(code);
    if (!where.empty()) {
      Py_DECREF(frame);
      return where;
    }
    PyFrameObject *back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return "";
}

/// OpAttrs from Python keyword values, through the op's declared attributes (the spec's names
/// and types: i64 -> int, i64[] and shape -> sequence of ints, f64 -> float, bool, dtype -> a
/// dtype code, reduce -> "sum" | "max" | "min").
OpAttrs attrsFromPython(OpCode code, const py::dict &values) {
  OpAttrs a;
  const OpInfo &info = opInfo(code);
  for (auto [key, value] : values) {
    std::string name = py::str(key);
    const AttrSpec *spec = findAttr(code, name);
    if (!spec || spec->place == AttrPlace::MlirOnly) {
      std::string known;
      for (const AttrSpec &s : info.attrs)
        if (s.place != AttrPlace::MlirOnly) known += std::string(known.empty() ? "" : ", ") + s.name;
      throw py::value_error(std::string(info.mnemonic) + " has no attribute '" + name + "' (it takes: " +
                            (known.empty() ? "none" : known) + ")");
    }
    switch (spec->type) {
    case AttrType::I64Array: case AttrType::Shape: setInts(a, *spec, value.cast<std::vector<int64_t>>()); break;
    case AttrType::F64: a.value = value.cast<double>(); break;
    case AttrType::Bool: setInt(a, *spec, value.cast<bool>()); break;
    case AttrType::Reduce: {
      std::string r = value.cast<std::string>();
      if (r != "sum" && r != "max" && r != "min") throw py::value_error("reduce must be 'sum', 'max' or 'min', got '" + r + "'");
      setInt(a, *spec, r == "sum" ? 0 : r == "max" ? 1 : 2);
      break;
    }
    case AttrType::I64: case AttrType::DType: setInt(a, *spec, value.cast<int64_t>()); break;
    }
  }
  return a;
}

/// Records op code `op` on `operands` with `attrs` from Python, at the user's line.
std::pair<uint64_t, TensorType> recordOp(client::Client &c, int op, const std::vector<uint64_t> &operands,
                                         const py::dict &attrs) {
  if (op < 0 || op >= int(OpCode::NumOps)) throw std::invalid_argument("unknown op code " + std::to_string(op));
  OpAttrs a = attrs.empty() ? OpAttrs{} : attrsFromPython(OpCode(op), attrs);
  lastLocation = gradLocation ? *gradLocation : userLocation();
  return c.emit(OpCode(op), operands, std::move(a), {}, lastLocation);
}

/// Records an upload of C-contiguous `data` as a tensor of `shape` and dtype code `dtype`.
std::pair<uint64_t, TensorType> recordUpload(client::Client &c, py::buffer data, Shape shape, int dtype) {
  py::buffer_info info = data.request();
  OpAttrs a;
  a.shape = std::move(shape);
  a.dtype = DType(dtype);
  std::string bytes(static_cast<const char *>(info.ptr), size_t(info.size * info.itemsize));
  lastLocation = gradLocation ? *gradLocation : userLocation();
  return c.emit(OpCode::Upload, {}, std::move(a), std::move(bytes), lastLocation);
}

PyTypeObject *sizeType = nullptr; ///< gt.Size (a tuple subclass without a __dict__): tensors' shapes

/// A new gt.Size (a plain tuple before gt registers the type) holding `shape`.
py::object newShape(const Shape &shape) {
  Py_ssize_t n = Py_ssize_t(shape.size());
  PyObject *t = sizeType ? sizeType->tp_alloc(sizeType, n) : PyTuple_New(n);
  if (!t) throw py::error_already_set();
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(shape[size_t(i)]));
  return py::reinterpret_steal<py::object>(t);
}

/// gt.Size's base (gt._C._SizeBase, a tuple subclass): a slice of a size is a gt.Size, as
/// PyTorch's, while an index stays tuple's own lookup (a Python __getitem__ would cost every
/// x.shape[i] ~130 ns).
PyObject *sizeSubscript(PyObject *self, PyObject *key) {
  PyObject *item = PyTuple_Type.tp_as_mapping->mp_subscript(self, key);
  if (!item || !PySlice_Check(key) || !sizeType) return item;
  Py_ssize_t n = PyTuple_GET_SIZE(item);
  PyObject *size = sizeType->tp_alloc(sizeType, n);
  if (size)
    for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(size, i, Py_NewRef(PyTuple_GET_ITEM(item, i)));
  Py_DECREF(item);
  return size;
}

py::object sizeBaseType() {
  static PyType_Slot slots[] = {{Py_mp_subscript, reinterpret_cast<void *>(&sizeSubscript)}, {0, nullptr}};
  static PyType_Spec spec = {"gt._C._SizeBase", 0, 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  PyObject *bases = PyTuple_Pack(1, reinterpret_cast<PyObject *>(&PyTuple_Type));
  PyObject *type = PyType_FromSpecWithBases(&spec, bases);
  Py_DECREF(bases);
  if (!type) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(type);
}

py::tuple typeTuple(uint64_t id, const TensorType &t) {
  return py::make_tuple(id, py::tuple(py::cast(t.shape)), int(t.dtype));
}

// ---------------------------------------------------------------- gt._C.Handle
// Owns one tensor id of a session: when the last gt.Tensor using it goes, its deallocation
// queues the tensor's free (Client::release). A plain CPython type rather than a Python class
// with __del__ (or a pybind11 class): made and dropped once per op, it costs about half a
// microsecond less per op that way.

struct HandleObject {
  PyObject_HEAD
  unsigned long long id;
  PyObject *client;     ///< the _C.Client that made it (a strong reference: the session outlives it)
  client::Client *core; ///< that client's C++ side
};

PyMemberDef handleMembers[] = {
    {"id", T_ULONGLONG, offsetof(HandleObject, id), READONLY, "The session's id of the tensor."},
    {"client", T_OBJECT, offsetof(HandleObject, client), READONLY, "The _C.Client whose session holds it."},
    {nullptr, 0, 0, 0, nullptr},
};

void handleDealloc(PyObject *self) {
  auto *h = reinterpret_cast<HandleObject *>(self);
  if (h->core) h->core->release(h->id); // any thread; takes the client's release lock only
  Py_XDECREF(h->client);
  PyTypeObject *type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type); // a heap type: each instance holds a reference to it
}

PyType_Slot handleSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(handleDealloc)},
    {Py_tp_members, handleMembers},
    {Py_tp_doc, const_cast<char *>("One tensor of a session; its tensor is freed when the last gt.Tensor using it goes.")},
    {0, nullptr},
};
PyType_Spec handleSpec = {"gt._C.Handle", sizeof(HandleObject), 0, Py_TPFLAGS_DEFAULT, handleSlots};
PyTypeObject *handleType = nullptr;

py::object newHandle(uint64_t id, PyObject *clientObject, client::Client &core) {
  auto *h = reinterpret_cast<HandleObject *>(handleType->tp_alloc(handleType, 0));
  if (!h) throw py::error_already_set();
  h->id = id;
  Py_INCREF(clientObject);
  h->client = clientObject;
  h->core = &core;
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject *>(h));
}

/// gt.dtype objects by dtype code (gt.dtypes registers them), so that an op's result comes back
/// with its dtype object and not a code to look up. Never destroyed: a static vector's
/// destructor runs at exit, after the interpreter has finalized, and dropping the last
/// reference to a dtype object then aborts the process ("PyThreadState_Get: ... the GIL is
/// released"; seen when a tensor outlived the session in an exception's traceback).
std::vector<py::object> &dtypeObjects = *new std::vector<py::object>;

py::object dtypeObject(DType d) {
  size_t code = size_t(d);
  if (code < dtypeObjects.size() && dtypeObjects[code]) return dtypeObjects[code];
  return py::int_(int(d));
}

/// (Handle, shape, dtype object) of a result just recorded.
py::tuple handleTuple(py::object self, client::Client &c, uint64_t id, const TensorType &t) {
  return py::make_tuple(newHandle(id, self.ptr(), c), newShape(t.shape), dtypeObject(t.dtype));
}


// ---------------------------------------------------------------- gt.Tensor's and Node's slots

thread_local bool gradEnabled = true; ///< gt.autograd's grad mode (per thread, as PyTorch's)

/// The offset of `name`, a __slots__ member of `type`.
Py_ssize_t slotOffset(PyObject *type, const char *name) {
  py::object d = py::reinterpret_steal<py::object>(PyObject_GetAttrString(type, name));
  if (!d || Py_TYPE(d.ptr()) != &PyMemberDescr_Type)
    throw std::logic_error(std::string("set_record_types: ") + name + " is not a __slots__ member");
  return reinterpret_cast<PyMemberDescrObject *>(d.ptr())->d_member->offset;
}

PyObject *&slot(PyObject *o, Py_ssize_t offset) { return *reinterpret_cast<PyObject **>(reinterpret_cast<char *>(o) + offset); }

/// Sets a slot to a new reference (stolen).
void setSlot(PyObject *o, Py_ssize_t offset, PyObject *value) {
  PyObject *old = slot(o, offset);
  slot(o, offset) = value;
  Py_XDECREF(old);
}

struct RecordTypes {
  PyTypeObject *tensor = nullptr, *nodeType = nullptr;
  PyObject *runtime = nullptr; ///< gt._runtime: its _signal_now is a node's signal
  PyObject *signalNow = nullptr; ///< "_signal_now", interned
  // gt.Tensor's slots that __init__ sets, and autograd.Node's.
  Py_ssize_t h = 0, shape = 0, dtype = 0, requiresGrad = 0, grad = 0, node = 0, host = 0; // node: Tensor._node
  Py_ssize_t hooks = 0, retainsGrad = 0; // set by register_hook / retain_grad only
  Py_ssize_t priors = 0; // Tensor._priors: set by an in-place op on a tensor with history only
  Py_ssize_t made = 0;   // Tensor._made: its node's place in the op order where its id does not give it
  Py_ssize_t backward = 0, inputs = 0, attrs = 0, signal = 0;
} recordTypes;

/// The session id of a gt.Tensor (its handle's).
uint64_t tensorId(PyObject *t) {
  PyObject *h = recordTypes.tensor && PyObject_TypeCheck(t, recordTypes.tensor) ? slot(t, recordTypes.h) : nullptr;
  if (!h || Py_TYPE(h) != handleType) throw py::type_error("expected a gt.Tensor");
  return reinterpret_cast<HandleObject *>(h)->id;
}

bool requiresGrad(PyObject *t) { return slot(t, recordTypes.requiresGrad) == Py_True; }

// ---------------------------------------------------------------- the backward formulas
// Client.derivative runs an op's formulas from the derivative table (gt/Client/Autograd.h) for
// the Python autograd's backward pass. Two emitters: DirectEmitter records the formula's ops
// straight into the session (a plain backward pass: no Python per gradient op), PythonEmitter
// issues them through gt._tensor._op (create_graph, where they must record their own backward,
// and while gt.profiler or autocast is on, which watch _op).

/// The Python objects the formulas' values become (gt registers them: set_autograd_types).
struct AutogradTypes {
  py::object tensor;    ///< gt.Tensor
  py::object op;        ///< gt._tensor._op(name, *operands, **attrs)
  py::object scalarAs;  ///< gt._tensor._scalar_as(value, dtype): the cached 0-d tensor
  py::object sliceGrad; ///< gt._derivatives.SliceGrad(shape, dtype, [(g, starts, steps)])
};
AutogradTypes &autogradTypes = *new AutogradTypes; // never destroyed (see dtypeObjects)

std::shared_ptr<void> keep(py::object o) { return std::make_shared<py::object>(std::move(o)); }
const py::object &kept(const client::GradValue &v) { return *static_cast<py::object *>(v.owner.get()); }

/// A gt.Tensor's value (its type as the client holds it).
client::GradValue tensorValue(client::Client &c, const py::handle &t) {
  uint64_t id = tensorId(t.ptr());
  return client::GradValue::tensor(id, c.typeOf(id), keep(py::reinterpret_borrow<py::object>(t)));
}

py::object numberObject(const client::GradValue &v) {
  if (v.isFloat) return py::float_(v.number);
  return py::int_(int64_t(v.number));
}

/// A formula's attribute value as Python takes it for attribute `spec`.
py::object attrObject(const AttrSpec &spec, const client::GradValue &v) {
  if (v.kind == client::GradValue::Kind::Ints) return py::cast(v.ints);
  switch (spec.type) {
  case AttrType::F64: return py::float_(v.number);
  case AttrType::Bool: return py::bool_(v.number != 0);
  default: return py::int_(int64_t(v.number));
  }
}

/// The dtype a Python number takes in an op whose first tensor operand has dtype `like`
/// (gt._tensor._scalar_dtype, PyTorch's rules).
DType scalarDType(const client::GradValue &number, const client::GradValue *like) {
  if (number.isFloat) return like && isFloating(like->type.dtype) ? like->type.dtype : DType::Float32;
  return like && like->type.dtype != DType::Bool ? like->type.dtype : DType::Int64;
}

struct DirectEmitter : client::GradEmitter {
  py::object self;
  client::Client &c;
  const std::string &location;
  DirectEmitter(py::object self, client::Client &c, const std::string &location)
      : self(std::move(self)), c(c), location(location) {}

  client::GradValue op(OpCode code, const std::vector<client::GradValue> &operands, const client::GradAttrs &attrs) override {
    const client::GradValue *like = nullptr;
    for (const auto &o : operands)
      if (o.isTensor()) {
        like = &o;
        break;
      }
    if (!like && !operands.empty())
      throw std::logic_error(std::string(opInfo(code).mnemonic) + " of numbers alone in a backward formula");
    std::vector<uint64_t> ids;
    std::vector<client::GradValue> scalars; // alive until the op is recorded
    for (const auto &o : operands) {
      if (o.isTensor()) {
        ids.push_back(o.id);
        continue;
      }
      py::object t = autogradTypes.scalarAs(numberObject(o), dtypeObject(scalarDType(o, like)));
      scalars.push_back(tensorValue(c, t));
      ids.push_back(scalars.back().id);
    }
    OpAttrs a;
    for (const auto &[name, v] : attrs) {
      const AttrSpec *spec = findAttr(code, name);
      if (!spec) throw std::logic_error(std::string(opInfo(code).mnemonic) + " has no attribute " + std::string(name));
      switch (spec->type) {
      case AttrType::I64Array: case AttrType::Shape: setInts(a, *spec, v.ints); break;
      case AttrType::F64: a.value = v.number; break;
      default: setInt(a, *spec, int64_t(v.number)); break;
      }
    }
    auto [id, type] = c.emit(code, ids, std::move(a), {}, location);
    return client::GradValue::tensor(id, std::move(type), keep(newHandle(id, self.ptr(), c)));
  }

  py::object toPython(const client::GradValue &v) {
    if (py::isinstance(kept(v), autogradTypes.tensor)) return kept(v); // an operand passed through
    return autogradTypes.tensor(kept(v), newShape(v.type.shape), dtypeObject(v.type.dtype));
  }
};

struct PythonEmitter : client::GradEmitter {
  client::Client &c;
  explicit PythonEmitter(client::Client &c) : c(c) {}

  client::GradValue op(OpCode code, const std::vector<client::GradValue> &operands, const client::GradAttrs &attrs) override {
    py::tuple args(operands.size() + 1);
    args[0] = py::str(opInfo(code).mnemonic);
    for (size_t i = 0; i < operands.size(); ++i) args[i + 1] = operands[i].isTensor() ? kept(operands[i]) : numberObject(operands[i]);
    py::dict kwargs;
    for (const auto &[name, v] : attrs) {
      const AttrSpec *spec = findAttr(code, name);
      if (!spec) throw std::logic_error(std::string(opInfo(code).mnemonic) + " has no attribute " + std::string(name));
      kwargs[py::str(std::string(name))] = attrObject(*spec, v);
    }
    return tensorValue(c, autogradTypes.op(*args, **kwargs));
  }

  client::GradValue detach(const client::GradValue &v) override { return tensorValue(c, kept(v).attr("detach")()); }

  static py::object toPython(const client::GradValue &v) { return kept(v); }
};

/// A forward attribute, read through its spec from the attributes the op was recorded with
/// (attrsFromPython; an attribute left out holds OpAttrs' default, which is the spec's).
client::GradValue forwardAttr(const OpAttrs &attrs, const AttrSpec &spec) {
  switch (spec.type) {
  case AttrType::I64Array: case AttrType::Shape: return client::GradValue::list(getInts(attrs, spec));
  case AttrType::F64: return client::GradValue::num(attrs.value, true);
  default: return client::GradValue::num(double(getInt(attrs, spec)), false);
  }
}

/// The gradients of op `code`'s inputs (a tuple: a gt.Tensor, None, or a SliceGrad each).
py::tuple derivative(py::object self, int code, py::object g, py::object result, py::sequence inputs, py::object attrs,
                     bool direct) {
  client::Client &c = self.cast<client::Client &>();
  if (code < 0 || code >= int(OpCode::NumOps)) throw std::invalid_argument("unknown op code " + std::to_string(code));
  std::vector<client::GradValue> in;
  std::vector<bool> needs;
  for (py::handle t : inputs) {
    in.push_back(tensorValue(c, t));
    needs.push_back(requiresGrad(t.ptr()));
  }
  client::GradValue gv = tensorValue(c, g), rv = tensorValue(c, result);
  std::optional<OpAttrs> recorded; // converted on a formula's first attribute
  auto lookup = [&](const AttrSpec &spec) {
    if (!recorded)
      recorded = attrs.is_none() ? OpAttrs{} : attrsFromPython(OpCode(code), py::reinterpret_borrow<py::dict>(attrs));
    return forwardAttr(*recorded, spec);
  };
  std::vector<client::GradValue> grads;
  std::optional<DirectEmitter> directEmitter;
  // The gradient ops carry the forward op's line.
  std::string where = c.locationOf(rv.id);
  if (direct) {
    directEmitter.emplace(self, c, where);
    grads = client::runDerivatives(*directEmitter, OpCode(code), gv, rv, in, lookup, needs);
  } else {
    struct Restore {
      std::optional<std::string> previous = gradLocation;
      ~Restore() { gradLocation = std::move(previous); }
    } restore;
    gradLocation = where;
    PythonEmitter emitter(c);
    grads = client::runDerivatives(emitter, OpCode(code), gv, rv, in, lookup, needs);
  }
  auto toPython = [&](const client::GradValue &v) -> py::object {
    return direct ? directEmitter->toPython(v) : PythonEmitter::toPython(v);
  };
  py::tuple out(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    const client::GradValue &v = grads[i];
    switch (v.kind) {
    case client::GradValue::Kind::Tensor: out[i] = toPython(v); break;
    case client::GradValue::Kind::SliceGrad:
    {
      py::list pieces;
      pieces.append(py::make_tuple(toPython(v.tensors.at(0)), py::tuple(py::cast(v.ints)), py::tuple(py::cast(v.steps))));
      out[i] = autogradTypes.sliceGrad(py::tuple(py::cast(v.type.shape)), dtypeObject(v.type.dtype), pieces);
      break;
    }
    case client::GradValue::Kind::None: out[i] = py::none(); break;
    default: throw std::logic_error(std::string("the backward formula of ") + opInfo(OpCode(code)).mnemonic + " gave no tensor");
    }
  }
  return out;
}

// ---------------------------------------------------------------- recording an op: _C.record
// gt._tensor._op's common case in one call from Python: the op recorded, its gt.Tensor made, and
// the tape's autograd.Node attached when the result needs a gradient. gt.Tensor and
// autograd.Node are Python classes with __slots__; their instances are filled here through the
// slots' offsets, as their __init__ would fill them, without running Python.


/// _C.record(client, code, operands, attrs, backward): records op `code` (operands: a tuple of
/// gt.Tensor, attrs: a dict by spec names) and returns its gt.Tensor; when `backward` is not
/// None, grad mode is on, the result is floating point and an operand requires grad, the result
/// requires grad and holds autograd.Node(backward, operands, attrs, _runtime._signal_now).
PyObject *record(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  try {
    if (nargs != 5) throw std::invalid_argument("record(client, code, operands, attrs, backward)");
    RecordTypes &r = recordTypes;
    if (!r.tensor) throw std::logic_error("gt._C.set_record_types was not called");
    client::Client &c = py::reinterpret_borrow<py::object>(args[0]).cast<client::Client &>();
    long code = PyLong_AsLong(args[1]);
    if (code == -1 && PyErr_Occurred()) return nullptr;
    PyObject *operands = args[2], *attrs = args[3], *backward = args[4];
    if (!PyTuple_Check(operands) || !PyDict_Check(attrs)) throw std::invalid_argument("record: operands must be a tuple, attrs a dict");
    Py_ssize_t n = PyTuple_GET_SIZE(operands);
    thread_local std::vector<uint64_t> ids;
    ids.resize(size_t(n));
    bool anyRequiresGrad = false;
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject *o = PyTuple_GET_ITEM(operands, i);
      if (!PyObject_TypeCheck(o, r.tensor)) throw py::type_error("record: an operand is not a gt.Tensor");
      PyObject *h = slot(o, r.h);
      if (!h || Py_TYPE(h) != handleType) throw py::type_error("record: a gt.Tensor without a handle");
      ids[size_t(i)] = reinterpret_cast<HandleObject *>(h)->id;
      anyRequiresGrad |= slot(o, r.requiresGrad) == Py_True;
    }
    auto [id, type] = recordOp(c, int(code), ids, py::reinterpret_borrow<py::dict>(attrs));
    py::object handle = newHandle(id, args[0], c);
    PyObject *shape = newShape(type.shape).release().ptr();
    PyObject *t = r.tensor->tp_alloc(r.tensor, 0);
    if (!t) {
      Py_DECREF(shape);
      return nullptr;
    }
    setSlot(t, r.h, handle.release().ptr());
    setSlot(t, r.shape, shape);
    setSlot(t, r.dtype, py::object(dtypeObject(type.dtype)).release().ptr());
    setSlot(t, r.grad, Py_NewRef(Py_None));
    setSlot(t, r.node, Py_NewRef(Py_None));
    setSlot(t, r.host, Py_NewRef(Py_None));
    bool needsNode = anyRequiresGrad && backward != Py_None && gradEnabled && isFloating(type.dtype);
    setSlot(t, r.requiresGrad, Py_NewRef(needsNode ? Py_True : Py_False));
    if (needsNode) {
      PyObject *signal = PyObject_GetAttr(r.runtime, r.signalNow);
      if (!signal) {
        Py_DECREF(t);
        return nullptr;
      }
      PyObject *node = r.nodeType->tp_alloc(r.nodeType, 0);
      if (!node) {
        Py_DECREF(signal);
        Py_DECREF(t);
        return nullptr;
      }
      setSlot(node, r.backward, Py_NewRef(backward));
      setSlot(node, r.inputs, Py_NewRef(operands));
      setSlot(node, r.attrs, Py_NewRef(attrs));
      setSlot(node, r.signal, signal);
      setSlot(t, r.node, node);
    }
    return t;
  } catch (py::error_already_set &e) {
    e.restore();
  } catch (py::builtin_exception &e) {
    e.set_error();
  } catch (...) {
    // The translators registered with pybind11 (ShapeError -> gt.ShapeError, ...).
    try {
      throw;
    } catch (const AxisError &e) {
      PyErr_SetString(translatedErrors.axis, e.what());
    } catch (const ShapeError &e) {
      PyErr_SetString(translatedErrors.shape, e.what());
    } catch (const DTypeError &e) {
      PyErr_SetString(translatedErrors.dtype, e.what());
    } catch (const client::OutOfMemoryError &e) {
      PyErr_SetString(translatedErrors.outOfMemory, e.what());
    } catch (const client::ConnectionError &e) {
      PyErr_SetString(PyExc_ConnectionError, e.what());
    } catch (const std::invalid_argument &e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::exception &e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  }
  return nullptr;
}

PyMethodDef recordMethod = {"record", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(record)), METH_FASTCALL,
                            "record(client, code, operands, attrs, backward) -> gt.Tensor: op `code` recorded on the "
                            "tuple of gt.Tensor `operands` with the dict `attrs`; the result holds "
                            "autograd.Node(backward, operands, attrs, signal) when it needs a gradient (backward not "
                            "None, grad mode on, a floating-point result, an operand that requires grad)."};

// ---------------------------------------------------------------- the backward pass: Client.backward
// gt.autograd's backward pass over the tape (the Nodes on the tensors): the graph walk, the
// formulas of table ops (Client.derivative's code, no Python), and the rest in Python where it
// is Python's: hooks, custom Functions' backward, slice gradients joined, gradients summed.

struct BackwardHelpers {
  py::object materialize; ///< gt._derivatives.materialize: a SliceGrad as a Tensor
  py::object accumulate;  ///< gt.autograd._accumulate(total, g)
  py::object cast;        ///< gt._tensor.cast(x, dtype)
  py::object freed;       ///< gt.autograd._freed_for(node): the node of a tensor whose graph was freed
  py::object linkReads;   ///< gt._tensor._linked_to_what_they_read(code, grads, result, inputs) (create_graph only)
  PyTypeObject *sliceGrad = nullptr;
  std::unordered_map<PyObject *, int> formulas; ///< backward function -> op code (gt._ops)
  std::unordered_map<PyObject *, py::object> freedByFormula; ///< a formula's freed node (one per op)
  std::unordered_set<PyObject *> keptOnRelease; ///< formulas whose nodes save nothing: a second backward may pass

  /// What a tensor's node becomes once the backward pass released its graph: a node that
  /// raises on a second backward and keeps the name (grad_fn=<MulBackward0>, as PyTorch's).
  /// A table formula's is made once per op (formulas live as long as the module).
  py::object freedFor(PyObject *node, PyObject *backward) {
    if (!formulas.count(backward)) return freed(py::handle(node));
    auto it = freedByFormula.find(backward);
    if (it == freedByFormula.end()) it = freedByFormula.emplace(backward, freed(py::handle(node))).first;
    return it->second;
  }
};
BackwardHelpers &backwardHelpers = *new BackwardHelpers; // never destroyed (see dtypeObjects)

/// Client.backward(roots, seeds, retain_graph, wanted, use_signal, direct): see gt.autograd._run.
py::dict runBackward(py::object self, py::sequence roots, py::sequence seeds, bool retainGraph, py::object wanted,
                     py::object useSignal, bool direct) {
  client::Client &c = self.cast<client::Client &>();
  RecordTypes &r = recordTypes;
  BackwardHelpers &h = backwardHelpers;
  auto nodeOf = [&](PyObject *t) -> PyObject * {
    PyObject *n = slot(t, r.node);
    return n && n != Py_None ? n : nullptr;
  };
  // An input of the op that made tensor `out`, as that op saw it: a tensor written in place
  // with history since (Tensor._assign) keeps its earlier states in _priors, a tuple of
  // (next id at the write, the state before it) in the order of the writes; an op recorded
  // before a write (its result's id is smaller) read the state before that write.
  auto resolve = [&](PyObject *in, uint64_t outId) -> PyObject * {
    if (!PyObject_TypeCheck(in, r.tensor)) return in;
    PyObject *priors = slot(in, r.priors);
    if (!priors || !PyTuple_Check(priors)) return in;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(priors); ++i) {
      PyObject *pair = PyTuple_GET_ITEM(priors, i);
      if (outId < PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(pair, 0))) return PyTuple_GET_ITEM(pair, 1);
    }
    return in;
  };
  // The inputs of the node of tensor `out` as a tuple (gt makes them tuples; any other
  // sequence is copied into one), each as that op saw it (resolve).
  auto inputsOf = [&](PyObject *out, PyObject *node) -> py::tuple {
    PyObject *in = slot(node, r.inputs);
    py::tuple ins;
    if (in && PyTuple_Check(in)) {
      ins = py::reinterpret_borrow<py::tuple>(in);
    } else if (!in || in == Py_None) {
      return py::tuple();
    } else {
      PyObject *copy = PySequence_Tuple(in);
      if (!copy) throw py::error_already_set();
      ins = py::reinterpret_steal<py::tuple>(copy);
    }
    uint64_t outId = 0;
    for (size_t i = 0; i < ins.size(); ++i) {
      PyObject *x = ins[i].ptr();
      if (!PyObject_TypeCheck(x, r.tensor)) continue;
      PyObject *priors = slot(x, r.priors);
      if (!priors || !PyTuple_Check(priors)) continue;
      if (!outId) { // (the result's id orders its op among the writes, unless _made does: values changed
        PyObject *made = slot(out, r.made); // under the same node, x.data's write, or a node made by no op, clone)
        outId = made && PyLong_Check(made) ? PyLong_AsUnsignedLongLong(made) : tensorId(out);
      }
      if (resolve(x, outId) == x) continue;
      py::tuple seen(ins.size()); // an earlier state: the tuple as the op saw it
      for (size_t j = 0; j < ins.size(); ++j) seen[j] = py::reinterpret_borrow<py::object>(resolve(ins[j].ptr(), outId));
      return seen;
    }
    return ins;
  };
  // Topological order of the graph above the roots (iterative DFS), holding every tensor in it.
  std::vector<py::object> order;
  std::unordered_set<PyObject *> seen;
  std::vector<std::pair<PyObject *, bool>> stack;
  auto isTensor = [&](PyObject *o) { return PyObject_TypeCheck(o, r.tensor) != 0; };
  if (!r.tensor) throw std::logic_error("gt._C.set_record_types was not called");
  if (py::len(roots) != py::len(seeds)) throw std::invalid_argument("backward: one seed per root");
  for (size_t i = py::len(roots); i-- > 0;) {
    PyObject *root = py::object(roots[i]).ptr();
    if (!isTensor(root)) throw py::type_error("backward: a root is not a gt.Tensor");
    stack.push_back({root, false});
  }
  while (!stack.empty()) {
    auto [t, done] = stack.back();
    stack.pop_back();
    if (done) {
      order.push_back(py::reinterpret_borrow<py::object>(t));
      continue;
    }
    if (!seen.insert(t).second) continue;
    stack.push_back({t, true});
    if (PyObject *node = nodeOf(t))
      for (py::handle input : inputsOf(t, node)) {
        PyObject *in = input.ptr();
        if (isTensor(in) && requiresGrad(in) && !seen.count(in)) stack.push_back({in, false});
      }
  }
  auto isWanted = [&](PyObject *t) {
    return PySet_Contains(wanted.ptr(), py::int_(reinterpret_cast<uintptr_t>(t)).ptr()) == 1;
  };
  // With `wanted`: only what lies on a path to a wanted tensor (order: inputs first).
  std::unordered_set<PyObject *> needed;
  if (!wanted.is_none())
    for (const py::object &t : order) {
      bool on = isWanted(t.ptr());
      if (PyObject *node = nodeOf(t.ptr()); node && !on)
        for (py::handle input : inputsOf(t.ptr(), node)) on |= needed.count(input.ptr()) > 0;
      if (on) needed.insert(t.ptr());
    }

  std::unordered_map<PyObject *, py::object> grads;
  auto add = [&](PyObject *t, py::object g) {
    auto [it, fresh] = grads.try_emplace(t, g);
    if (!fresh) it->second = h.accumulate(it->second, g);
  };
  for (size_t i = 0; i < py::len(roots); ++i) add(py::object(roots[i]).ptr(), py::object(seeds[i]));
  py::dict captured;
  PyObject *lastSignal = nullptr;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    PyObject *t = it->ptr();
    auto found = grads.find(t);
    if (found == grads.end()) continue;
    py::object g = std::move(found->second);
    grads.erase(found);
    if (Py_TYPE(g.ptr()) == h.sliceGrad) g = h.materialize(g); // the gradients of slices of t, joined
    // A gradient has its tensor's dtype (PyTorch's engine casts too): under autocast a
    // bfloat16 product's gradient can arrive in float32.
    DType want = c.typeOf(tensorId(t)).dtype;
    if (c.typeOf(tensorId(g.ptr())).dtype != want && isFloating(want)) g = h.cast(g, dtypeObject(want));
    PyObject *hooks = slot(t, r.hooks);
    if (hooks && PyDict_Check(hooks) && PyDict_Size(hooks) > 0) {
      gradLocation.reset(); // a hook's ops carry its own lines
      py::list each = py::reinterpret_borrow<py::dict>(hooks).attr("values")();
      for (py::handle hook : each) {
        py::object replaced = py::reinterpret_borrow<py::object>(hook)(g);
        if (!replaced.is_none()) g = replaced;
      }
    }
    PyObject *node = nodeOf(t);
    auto accumulateGrad = [&] {
      PyObject *current = slot(t, r.grad);
      if (!current || current == Py_None) {
        setSlot(t, r.grad, py::object(g).release().ptr());
      } else {
        PyObject *sum = PyNumber_Add(current, g.ptr());
        if (!sum) throw py::error_already_set();
        if (!gradEnabled && Py_TYPE(current) == r.tensor && Py_TYPE(sum) == r.tensor && slot(current, r.node) == Py_None) {
          // Without create_graph the sum goes into the existing .grad object, as PyTorch adds
          // in place: a script holding `g = p.grad` sees the sum (Tensor._rebind counts the write).
          py::object owned = py::reinterpret_steal<py::object>(sum);
          py::reinterpret_borrow<py::object>(current).attr("_rebind")(py::reinterpret_borrow<py::object>(slot(sum, r.h)));
        } else {
          setSlot(t, r.grad, sum);
        }
      }
    };
    if (!wanted.is_none()) {
      if (isWanted(t)) captured[py::int_(reinterpret_cast<uintptr_t>(t))] = g;
    } else if (!node) { // a leaf: accumulate
      accumulateGrad();
      continue;
    } else if (slot(t, r.retainsGrad) == Py_True) {
      accumulateGrad();
    }
    if (!node) continue;
    if (!wanted.is_none() && isWanted(t)) { // autograd.grad: a wanted tensor's node runs only if another lies above it
      bool above = false;
      for (py::handle input : inputsOf(t, node)) above |= needed.count(input.ptr()) > 0;
      if (!above) continue; // (its graph is left as it is: another grad may pass through it)
    }
    // Gradient ops carry the forward op's signal, marked as backward (gt.signal), and its line.
    PyObject *signal = slot(node, r.signal);
    if (signal != lastSignal) {
      useSignal(py::reinterpret_borrow<py::object>(signal ? signal : Py_None));
      lastSignal = signal;
    }
    gradLocation = c.locationOf(tensorId(t));
    py::object backward = py::reinterpret_borrow<py::object>(slot(node, r.backward));
    py::tuple ins = inputsOf(t, node);
    py::object attrs = py::reinterpret_borrow<py::object>(slot(node, r.attrs) ? slot(node, r.attrs) : Py_None);
    py::object results;
    if (auto f = h.formulas.find(backward.ptr()); f != h.formulas.end()) {
      results = derivative(self, f->second, g, *it, ins, attrs, direct);
      if (gradEnabled && h.linkReads) // create_graph: gradients linked to the forward tensors their formulas read
        results = py::tuple(h.linkReads(f->second, results, *it, ins));
    } else
      results = backward(g, *it, ins, attrs);
    size_t k = 0;
    for (py::handle ig : results) {
      if (k >= ins.size()) break;
      PyObject *in = ins[k++].ptr();
      if (ig.is_none() || !isTensor(in) || !requiresGrad(in) || (!wanted.is_none() && !needed.count(in))) continue;
      add(in, py::reinterpret_borrow<py::object>(ig));
    }
    if (!retainGraph && !h.keptOnRelease.count(backward.ptr())) // release the saved tensors (a node that saves none
      setSlot(t, r.node, h.freedFor(node, backward.ptr()).release().ptr()); // stays, as PyTorch's CatBackward0)
  }
  if (!retainGraph) // the earlier states, once no op of this graph can read them
    for (const py::object &t : order)
      if (PyObject *priors = slot(t.ptr(), r.priors); priors && priors != Py_None) setSlot(t.ptr(), r.priors, Py_NewRef(Py_None));
  return captured;
}
} // namespace

void bindRaw(py::module_ &m); // raw.cpp

PYBIND11_MODULE(_C, m) {
  m.doc() = "GT's C++ core: the client session and the op table";

  static py::exception<client::RemoteError> remoteError(m, "RemoteError", PyExc_RuntimeError);
  // PyTorch raises RuntimeError for shape and dtype errors and IndexError for a bad dim; NumPy
  // raises ValueError / TypeError / AxisError(ValueError, IndexError). GT's are both.
  auto newError = [&](const char *name, std::initializer_list<PyObject *> bases, const char *doc) {
    py::tuple t(bases.size());
    size_t i = 0;
    for (PyObject *b : bases) t[i++] = py::reinterpret_borrow<py::object>(b);
    PyObject *cls = PyErr_NewExceptionWithDoc((std::string("gt._C.") + name).c_str(), doc, t.ptr(), nullptr);
    m.attr(name) = py::reinterpret_borrow<py::object>(cls);
    return cls;
  };
  static PyObject *shapeError = newError("ShapeError", {PyExc_RuntimeError, PyExc_ValueError},
                                         "A shape rule was violated (a RuntimeError, as PyTorch, and a ValueError).");
  static PyObject *axisError = newError("AxisError", {PyExc_IndexError, shapeError},
                                        "A dim is out of range (an IndexError, as PyTorch, and a ShapeError).");
  static PyObject *dtypeError = newError("DTypeError", {PyExc_RuntimeError, PyExc_TypeError},
                                         "An op does not accept a dtype (a RuntimeError, as PyTorch, and a TypeError).");
  static PyObject *outOfMemory = newError("OutOfMemoryError", {PyExc_RuntimeError},
                                          "A tensor is larger than the session may hold on the workers "
                                          "(a RuntimeError, as torch.OutOfMemoryError).");
  translatedErrors.shape = shapeError;
  translatedErrors.axis = axisError;
  translatedErrors.dtype = dtypeError;
  translatedErrors.outOfMemory = outOfMemory;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const AxisError &e) {
      PyErr_SetString(axisError, e.what());
    } catch (const ShapeError &e) {
      PyErr_SetString(shapeError, e.what());
    } catch (const DTypeError &e) {
      PyErr_SetString(dtypeError, e.what());
    } catch (const client::OutOfMemoryError &e) {
      PyErr_SetString(outOfMemory, e.what());
    } catch (const client::ConnectionError &e) {
      PyErr_SetString(PyExc_ConnectionError, e.what());
    } catch (const client::RemoteError &e) {
      PyErr_SetString(remoteError.ptr(), e.what());
    }
  });

  handleType = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&handleSpec));
  if (!handleType) throw py::error_already_set();
  m.attr("Handle") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(handleType));
  m.def("set_dtypes", [](py::dict byCode) {
    dtypeObjects.clear();
    for (auto [code, d] : byCode) {
      size_t i = code.cast<size_t>();
      if (i >= dtypeObjects.size()) dtypeObjects.resize(i + 1);
      dtypeObjects[i] = py::reinterpret_borrow<py::object>(d);
    }
  }, "gt.dtypes registers its dtype objects by code: Client.op and upload_tensor return them.");
  m.attr("max_concat_operands") = kMaxConcatOperands;
  bindRaw(m);
  m.def("set_package_dir", [](std::string dir) { packageDir = std::move(dir); },
        "Frames under this directory are skipped when naming the user's line.");
  m.def("user_location", &userLocation, "The user's current 'file.py:line'.");
  m.def("set_autograd_types", [](py::object tensor, py::object op, py::object scalarAs, py::object sliceGrad) {
    autogradTypes = AutogradTypes{std::move(tensor), std::move(op), std::move(scalarAs), std::move(sliceGrad)};
  }, "gt registers what Client.derivative makes: gt.Tensor, gt._tensor._op, gt._tensor._scalar_as and "
     "gt._derivatives.SliceGrad.");
  m.def("set_record_types", [](py::object tensor, py::object node, py::module_ runtime) {
    RecordTypes r;
    r.tensor = reinterpret_cast<PyTypeObject *>(tensor.inc_ref().ptr()); // kept for the process
    r.nodeType = reinterpret_cast<PyTypeObject *>(node.inc_ref().ptr());
    r.runtime = runtime.inc_ref().ptr();
    r.signalNow = PyUnicode_InternFromString("_signal_now");
    r.h = slotOffset(tensor.ptr(), "_h");
    r.shape = slotOffset(tensor.ptr(), "shape");
    r.dtype = slotOffset(tensor.ptr(), "dtype");
    r.requiresGrad = slotOffset(tensor.ptr(), "requires_grad");
    r.grad = slotOffset(tensor.ptr(), "grad");
    r.node = slotOffset(tensor.ptr(), "_node");
    r.host = slotOffset(tensor.ptr(), "_host");
    r.hooks = slotOffset(tensor.ptr(), "_hooks");
    r.retainsGrad = slotOffset(tensor.ptr(), "_retains_grad");
    r.priors = slotOffset(tensor.ptr(), "_priors");
    r.made = slotOffset(tensor.ptr(), "_made");
    r.backward = slotOffset(node.ptr(), "backward");
    r.inputs = slotOffset(node.ptr(), "inputs");
    r.attrs = slotOffset(node.ptr(), "attrs");
    r.signal = slotOffset(node.ptr(), "signal");
    recordTypes = r;
  }, "gt registers gt.Tensor, autograd.Node and gt._runtime for record().");
  m.attr("_SizeBase") = sizeBaseType();
  m.attr("precise_sum_min") = client::kPreciseSumMin; // gt.sum / gt.mean's float64 threshold
  m.def("set_size_type", [](py::object size) {
    auto *type = reinterpret_cast<PyTypeObject *>(size.ptr());
    if (!PyType_Check(size.ptr()) || !PyType_IsSubtype(type, &PyTuple_Type) ||
        type->tp_basicsize != PyTuple_Type.tp_basicsize)
      throw std::invalid_argument("set_size_type: expected a tuple subclass with __slots__ = ()");
    sizeType = reinterpret_cast<PyTypeObject *>(size.inc_ref().ptr()); // kept for the process
  }, "gt registers gt.Size: the shapes of the tensors the client core makes are gt.Size tuples.");
  m.add_object("record", py::reinterpret_steal<py::object>(PyCFunction_New(&recordMethod, nullptr)));
  m.def("is_grad_enabled", [] { return gradEnabled; }, "Whether ops record autograd history on this thread.");
  m.def("set_grad_enabled", [](bool on) {
    bool previous = gradEnabled;
    gradEnabled = on;
    return previous;
  }, "Sets whether ops record autograd history on this thread; returns the previous setting.");
  m.def("set_backward_helpers", [](py::object materialize, py::object accumulate, py::object cast, py::object freed,
                                   py::object sliceGrad) {
    BackwardHelpers &h = backwardHelpers;
    h.materialize = std::move(materialize);
    h.accumulate = std::move(accumulate);
    h.cast = std::move(cast);
    h.freed = std::move(freed);
    h.sliceGrad = reinterpret_cast<PyTypeObject *>(sliceGrad.inc_ref().ptr());
  }, "gt.autograd registers what Client.backward calls in Python.");
  m.def("set_create_graph_link", [](py::object fn) { backwardHelpers.linkReads = std::move(fn); },
        "gt._tensor registers what links create_graph's gradients to the forward tensors their formulas read.");
  m.def("register_formula", [](py::object fn, int code) {
    backwardHelpers.formulas[fn.inc_ref().ptr()] = code; // kept: the key must stay this object
  }, "gt._ops registers each op's backward function: Client.backward runs its formulas itself.");
  m.def("keep_on_release", [](py::object fn) {
    backwardHelpers.keptOnRelease.insert(fn.inc_ref().ptr()); // kept: the key must stay this object
  }, "Marks a registered formula whose node saves no tensor: a backward without retain_graph leaves it in place, "
     "so a second backward may pass through it (PyTorch raises only where saved tensors were freed).");
  m.def("has_derivatives", [](int code) { return client::hasDerivatives(OpCode(code)); },
        "Whether the derivative table has formulas for op code `code`.");
  m.def("last_location", [] { return lastLocation; }, "The 'file.py:line' the last op issued carried.");
  m.def("op_attrs", [](const std::string &name) {
    const OpInfo *info = lookupOp(name);
    if (!info) throw std::invalid_argument("unknown op '" + name + "'");
    py::list out;
    for (const AttrSpec &s : info->attrs)
      if (s.place != AttrPlace::MlirOnly) out.append(s.name);
    return out;
  }, "The attribute names op `name` takes (its spec's, in order).");
  m.def("op_code", [](const std::string &name) {
    const OpInfo *info = lookupOp(name);
    if (!info) throw std::invalid_argument("unknown op '" + name + "'");
    return int(info->code);
  });
  m.def("dtype_code", [](const std::string &name) {
    auto d = parseDType(name);
    if (!d) throw DTypeError("unknown dtype '" + name + "' (use float32, float64, float16, bfloat16, int32, int64 or bool)");
    return int(*d);
  });
  m.def("dtype_name", [](int code) { return std::string(dtypeName(DType(code))); });
  m.def("normalize_axes", [](std::vector<int64_t> axes, int64_t rank) { return normalizeAxes(axes, rank); },
        "Non-negative, sorted, unique axes; empty means all. Raises ValueError.");
  m.def("promote_types", [](int a, int b) { return int(promoteTypes(DType(a), DType(b))); },
        "The dtype code that arithmetic on dtype codes a and b gives.");
  m.def("broadcast_shapes", [](Shape a, Shape b) { return broadcastShapes(a, b); });

  py::class_<client::Monitor>(m, "Monitor", "gt top's connection to a dispatcher (no session).")
      .def(py::init<const std::string &, int, const std::string &, double, const std::string &>(), py::arg("host"),
           py::arg("port"), py::arg("token") = "", py::arg("timeout") = 5.0, py::arg("tls_ca") = "",
           py::call_guard<py::gil_scoped_release>())
      .def("poll", [](client::Monitor &m) {
        client::Monitor::Snapshot s;
        {
          py::gil_scoped_release release;
          s = m.poll();
        }
        py::dict d, dispatcher;
        for (auto &[name, value] : s.dispatcher) dispatcher[py::str(name)] = value;
        py::list workers, sessions;
        for (auto &w : s.workers) {
          py::dict stats, usage;
          for (auto &[name, value] : w.stats) stats[py::str(name)] = value;
          for (auto &[id, u] : w.sessions) usage[py::int_(id)] = py::make_tuple(u.first, u.second);
          workers.append(py::dict(py::arg("index") = w.index, py::arg("device") = w.device, py::arg("alive") = w.alive,
                                  py::arg("answered") = w.answered, py::arg("stats") = stats, py::arg("sessions") = usage));
        }
        for (auto &x : s.sessions)
          sessions.append(py::dict(py::arg("id") = x.id, py::arg("name") = x.name, py::arg("label") = x.label,
                                   py::arg("weight") = x.weight, py::arg("open_seconds") = x.openSeconds,
                                   py::arg("instructions") = x.instructions, py::arg("upload_bytes") = x.uploadBytes,
                                   py::arg("fetch_bytes") = x.fetchBytes, py::arg("errors") = x.errors,
                                   py::arg("last_error") = x.lastError));
        d["dispatcher"] = dispatcher;
        d["workers"] = workers;
        d["sessions"] = sessions;
        return d;
      }, "One reading of Dispatcher.monitor: {'dispatcher': {counter: value}, 'workers': [...], 'sessions': [...]}.");

  py::class_<client::Client>(m, "Client")
      .def(py::init<const std::string &, int, const std::string &, double, const std::string &>(), py::arg("host"),
           py::arg("port"), py::arg("token") = "", py::arg("timeout") = 5.0, py::arg("tls_ca") = "",
           py::call_guard<py::gil_scoped_release>())
      .def("emit",
           [](client::Client &c, int op, const std::vector<uint64_t> &operands, const py::dict &attrs) {
             auto [id, t] = recordOp(c, op, operands, attrs);
             return typeTuple(id, t);
           },
           py::arg("op"), py::arg("operands"), py::arg("attrs") = py::dict(),
           "Records op(operands) with `attrs` (the names the op's spec declares: ops/*.yaml) and returns "
           "(id, shape, dtype code). Raises ValueError for an attribute the op does not declare.")
      .def("op",
           [](py::object self, int op, const std::vector<uint64_t> &operands, const py::dict &attrs) {
             client::Client &c = self.cast<client::Client &>();
             auto [id, t] = recordOp(c, op, operands, attrs);
             return handleTuple(self, c, id, t);
           },
           py::arg("op"), py::arg("operands"), py::arg("attrs") = py::dict(),
           "As emit, for gt.Tensor: returns (Handle, shape, gt.dtype); the Handle frees the tensor when "
           "it goes.")
      .def("op_foreach",
           [](py::object self, int op, const std::vector<std::vector<uint64_t>> &operands, const py::dict &attrs) {
             client::Client &c = self.cast<client::Client &>();
             size_t n = 0;
             for (const auto &ids : operands) n = std::max(n, ids.size());
             for (const auto &ids : operands)
               if (ids.size() != n && ids.size() != 1)
                 throw std::invalid_argument("foreach: operand lists of " + std::to_string(ids.size()) + " and " +
                                             std::to_string(n) + " tensors");
             if (op < 0 || op >= int(OpCode::NumOps)) throw std::invalid_argument("unknown op code " + std::to_string(op));
             OpAttrs a = attrs.empty() ? OpAttrs{} : attrsFromPython(OpCode(op), attrs);
             lastLocation = gradLocation ? *gradLocation : userLocation();
             py::list out(n);
             std::vector<uint64_t> args(operands.size());
             for (size_t i = 0; i < n; ++i) {
               for (size_t k = 0; k < operands.size(); ++k) args[k] = operands[k][operands[k].size() == 1 ? 0 : i];
               // A bad element raises at the user's line; the results recorded before it are
               // freed with the list that held them.
               auto [id, t] = c.emit(OpCode(op), args, OpAttrs(a), {}, lastLocation);
               out[i] = handleTuple(self, c, id, t);
             }
             return out;
           },
           py::arg("op"), py::arg("operands"), py::arg("attrs") = py::dict(),
           "op on the i-th tensor of each operand list, for each i (torch._foreach_*'s loop, in C++): "
           "`operands` holds one list of ids per operand, of n ids or of 1 (the same tensor for every i). "
           "Returns n (Handle, shape, gt.dtype). Raises as op for the first element that fails, and "
           "ValueError for lists of different lengths.")
      .def("upload_tensor", [](py::object self, py::buffer data, Shape shape, int dtype) {
        client::Client &c = self.cast<client::Client &>();
        auto [id, t] = recordUpload(c, data, std::move(shape), dtype);
        return handleTuple(self, c, id, t);
      }, "As upload, for gt.Tensor: returns (Handle, shape, gt.dtype).")
      .def("upload", [](client::Client &c, py::buffer data, Shape shape, int dtype) {
        auto [id, t] = recordUpload(c, data, std::move(shape), dtype);
        return typeTuple(id, t);
      }, "Uploads a C-contiguous buffer as a tensor of `shape` and dtype code `dtype`.")
      .def("next_id", &client::Client::nextId,
           "The id the next recorded op's result gets (tensors recorded earlier have smaller ids).")
      .def("release", &client::Client::release)
      .def("set_meta", &client::Client::setMeta, py::arg("on"),
           "While on, every op makes a meta tensor (a shape and a dtype, no values; gt.device('meta')), "
           "as does any op with a meta operand. Returns the previous setting.")
      .def("is_meta", &client::Client::isMeta, py::arg("id"), "Whether tensor `id` is a meta tensor.")
      .def("flush", &client::Client::flush, py::call_guard<py::gil_scoped_release>())
      .def("fetch", [](client::Client &c, uint64_t id) {
        client::FetchedTensor t;
        {
          py::gil_scoped_release release;
          t = c.fetch(id);
        }
        return py::make_tuple(py::bytes(t.bytes), py::tuple(py::cast(t.type.shape)), int(t.type.dtype));
      }, "Waits for the tensor; returns (bytes, shape, dtype). Raises RemoteError (a RuntimeError).")
      .def("sync", &client::Client::sync, py::call_guard<py::gil_scoped_release>())
      .def("read_path", &client::Client::readPath,
           "How fetches travel: 'direct (worker N at ADDRESS)', 'not yet asked', or 'through the dispatcher: WHY'.")
      .def("tape", [](client::Client &c) {
        py::list out;
        for (const client::TapeEntry &e : c.tape()) {
          py::dict d;
          d["op"] = opInfo(e.op).mnemonic;
          d["id"] = e.result;
          d["inputs"] = e.operands;
          d["shape"] = py::tuple(py::cast(e.type.shape));
          d["dtype"] = dtypeName(e.type.dtype);
          d["location"] = e.location;
          d["time"] = e.seconds;
          d["text"] = client::Client::describe(e);
          out.append(d);
        }
        return out;
      }, "The session's last instructions (at most 10000), oldest first, as dicts.")
      .def("num_workers", &client::Client::numWorkers, py::call_guard<py::gil_scoped_release>())
      .def("limits", [](client::Client &c) {
        const client::Limits &l = c.limits();
        py::dict d;
        d["max_batch_instructions"] = l.maxBatchInstructions;
        d["max_message_bytes"] = l.maxMessageBytes;
        d["session_memory_bytes"] = l.sessionMemoryBytes;
        d["workers"] = l.workers;
        return d;
      }, "What the dispatcher lets this session send and hold (refreshed by num_workers()).")
      .def("stats", [](client::Client &c) {
        client::Stats s;
        {
          py::gil_scoped_release release;
          s = c.stats();
        }
        auto toDict = [](const std::map<std::string, double> &values) {
          py::dict d;
          for (auto &[name, value] : values) {
            // Counters are integers; only milliseconds are fractional.
            if (value == double(int64_t(value)) && name.find("_ms") == std::string::npos) d[py::str(name)] = int64_t(value);
            else d[py::str(name)] = value;
          }
          return d;
        };
        py::dict d = toDict(s.values);
        d["notes"] = s.notes;
        py::dict byWorker;
        for (auto &[index, values] : s.byWorker) byWorker[py::int_(index)] = toDict(values);
        d["by_worker"] = byWorker;
        return d;
      })
      .def("start_trace", &client::Client::startTrace, py::call_guard<py::gil_scoped_release>(),
           "gt.profiler: the dispatcher and every worker start recording this session's work.")
      .def("stop_trace", [](client::Client &c) {
        std::vector<client::Client::ProcessTrace> traces;
        {
          py::gil_scoped_release release;
          traces = c.stopTrace();
        }
        py::list out;
        for (auto &t : traces) {
          py::list events;
          for (auto &e : t.events) events.append(py::make_tuple(e.name, e.category, e.startNs, e.durationNs, e.args));
          out.append(py::dict(py::arg("pid") = t.pid, py::arg("label") = t.label, py::arg("offset_ns") = t.offsetNs,
                              py::arg("rtt_ns") = t.rttNs, py::arg("events") = events));
        }
        return out;
      }, "Syncs, stops the recording and returns [{'pid', 'label', 'offset_ns', 'rtt_ns', 'events': "
         "[(name, category, start_ns, duration_ns, args_json)]}], the dispatcher first; times on this "
         "client's time.perf_counter_ns() clock.")
      .def("flushes", [](client::Client &c) {
        py::list out;
        for (auto &e : c.flushes()) out.append(py::make_tuple(e.startNs, e.durationNs, e.args));
        return out;
      }, "The batches sent while traced: [(start_ns, duration_ns, args_json)] on time.perf_counter_ns().")
      .def("dispatcher_offset_ns", &client::Client::dispatcherOffsetNs, py::call_guard<py::gil_scoped_release>(),
           "(the dispatcher's clock minus this client's, the round trip it was measured in), ns.")
      .def("load_config", &client::Client::loadConfig, py::arg("yaml"), py::arg("path"), py::arg("auto_shard_bytes") = 0,
           "Loads a sharding config (YAML text) into the session and returns the signal names it "
           "defines; ValueError names the bad line.")
      .def("set_signal", &client::Client::setSignal, py::arg("signal"), py::arg("backward") = false,
           "The signal attached to every instruction from now on ('' = none).")
      .def("signal", [](client::Client &c) { return py::make_tuple(c.signal(), c.signalIsBackward()); })
      .def("derivative", &derivative, py::arg("op"), py::arg("g"), py::arg("result"), py::arg("inputs"),
           py::arg("attrs"), py::arg("direct"),
           "The gradients of op code `op`'s `inputs` (a tuple: a gt.Tensor, None where an input does not "
           "require grad, or a gt._derivatives.SliceGrad), given the gradient `g` of its `result` and its "
           "`attrs` (the dict it was recorded with): the op's formulas from the derivative table "
           "(ops/*.yaml `grad:`). direct: the formulas' ops go straight into the session (nothing records "
           "them); else through gt._tensor._op (create_graph, gt.profiler, autocast). Raises ValueError "
           "for an op without formulas, and what the ops raise.")
      .def("backward", &runBackward, py::arg("roots"), py::arg("seeds"), py::arg("retain_graph"), py::arg("wanted"),
           py::arg("use_signal"), py::arg("direct"),
           "gt.autograd's backward pass from `roots` (gradients `seeds`) over the tensors' Nodes: "
           "wanted=None accumulates into the leaves' (and retain_grad tensors') .grad; else a set of "
           "id()s whose gradients are returned ({id: gradient}) and nothing else is touched. "
           "use_signal(node_signal) is called when the nodes' signal changes; direct: as derivative's. "
           "Raises what the formulas, hooks and custom backward functions raise.")
      .def("set_grad_location", [](client::Client &c, uint64_t id) {
        if (id == 0) gradLocation.reset();
        else gradLocation = c.locationOf(id);
      }, py::arg("id"),
         "From now on ops carry the location of the op that made tensor `id` (its gradient ops are "
         "being issued); 0: the user's line again.");
}
