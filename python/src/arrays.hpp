// numpy arrays from C++ vectors (moved to the heap, owned by a capsule) and back.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <vector>

namespace collkit::py {

template <typename T>
nanobind::ndarray<nanobind::numpy, T, nanobind::ndim<1>> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  nanobind::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nanobind::ndarray<nanobind::numpy, T, nanobind::ndim<1>>(heap->data(), {heap->size()},
                                                                  owner);
}

template <typename T>
using In1 =
    nanobind::ndarray<const T, nanobind::ndim<1>, nanobind::c_contig, nanobind::device::cpu>;

}  // namespace collkit::py
