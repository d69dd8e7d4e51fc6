// One function per binding area; module.cpp calls them all.
#pragma once
#include <nanobind/nanobind.h>

namespace collkit::py {
void bind_schedule(nanobind::module_& m);
void bind_registry(nanobind::module_& m);
void bind_verify(nanobind::module_& m);
void bind_text(nanobind::module_& m);
void bind_rm(nanobind::module_& m);
void bind_sim(nanobind::module_& m);
void bind_alltoall(nanobind::module_& m);
void bind_tuning(nanobind::module_& m);
}  // namespace collkit::py
