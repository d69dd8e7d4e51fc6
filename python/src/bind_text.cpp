#include "bindings.hpp"
namespace collkit::py {
void bind_text(nanobind::module_&) {}
}  // namespace collkit::py
