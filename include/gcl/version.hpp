#pragma once

/// gcl's version: the one source, parsed by CMake (project version) and by conanfile.py.
#define GCL_VERSION_MAJOR 0
#define GCL_VERSION_MINOR 1
#define GCL_VERSION_PATCH 0

namespace gcl {
/// The version as a number, `major * 10000 + minor * 100 + patch`, for `static_assert`s:
/// `static_assert(gcl::version >= 100);`
inline constexpr int version =
    GCL_VERSION_MAJOR * 10000 + GCL_VERSION_MINOR * 100 + GCL_VERSION_PATCH;
}  // namespace gcl
