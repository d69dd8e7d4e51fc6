#include "bindings.hpp"
namespace collkit::py {
void bind_verify(nanobind::module_&) {}
}  // namespace collkit::py
