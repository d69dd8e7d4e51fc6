// collkit._core: the private compiled module. One binding file per area; the public face is the
// typed Python package around it.
#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "collkit/error.hpp"

namespace nb = nanobind;

namespace {
PyObject* g_base = nullptr;
PyObject* g_kinds[4] = {nullptr, nullptr, nullptr, nullptr};

PyObject* new_exception(nb::module_& m, const char* name, PyObject* base, const char* doc) {
  std::string full = std::string("collkit._core.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(full.c_str(), doc, base, nullptr);
  m.attr(name) = nb::handle(t);
  return t;
}
}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "collkit's compiled core (private: use the collkit package)";
  g_base = new_exception(m, "CollkitError", PyExc_ValueError, "Base of every collkit error.");
  using collkit::ErrorKind;
  g_kinds[static_cast<int>(ErrorKind::invalid_argument)] = new_exception(
      m, "InvalidArgumentError", g_base, "A P, count, rank or parameter that cannot be used.");
  g_kinds[static_cast<int>(ErrorKind::name)] =
      new_exception(m, "AlgorithmNameError", g_base, "A malformed or unknown algorithm name.");
  g_kinds[static_cast<int>(ErrorKind::format)] =
      new_exception(m, "ScheduleFormatError", g_base, "A schedule text that does not parse.");
  g_kinds[static_cast<int>(ErrorKind::unsupported)] =
      new_exception(m, "UnsupportedError", g_base, "A request this algorithm cannot serve.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const collkit::Error& e) {
      PyErr_SetString(g_kinds[static_cast<int>(e.kind())], e.what());
    }
  });
  collkit::py::bind_schedule(m);
  collkit::py::bind_registry(m);
  collkit::py::bind_verify(m);
  collkit::py::bind_text(m);
  collkit::py::bind_rm(m);
  collkit::py::bind_sim(m);
  collkit::py::bind_alltoall(m);
  collkit::py::bind_tuning(m);
}
