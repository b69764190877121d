// libFuzzer harness: decode_frame_header and frame_problem on any bytes.
// Invariants: nothing is read outside the input (AddressSanitizer); a header is accepted only
// from 80 bytes or more, with known enums and NUL-terminated names; re-encoding an accepted
// header gives back the bytes it came from; an accepted length respects the limits
// frame_problem promises (status frames: none, and a status reply names a rank of the job);
// error texts are bounded.

#include <gcl/transport/tcp/wire.hpp>

#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <limits>

#include "check.hpp"

using namespace gcl::detail;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  auto in = fuzz_input(data, size);
  auto d = decode_frame_header(in);
  if (!d) {
    GCL_FUZZ_CHECK(!d.error.empty() && d.error.size() < 200);
    return 0;
  }
  GCL_FUZZ_CHECK(size >= frame_header_size);
  auto const& h = d.value;
  GCL_FUZZ_CHECK(h.magic == frame_magic && h.version == wire_version);
  GCL_FUZZ_CHECK(h.type == frame_type::data || h.type == frame_type::bye ||
                 h.type == frame_type::abort || h.type == frame_type::status_query ||
                 h.type == frame_type::status_reply);
  GCL_FUZZ_CHECK(h.call.kind <= gcl::last_call_kind && h.call.type <= gcl::dtype::other);
  GCL_FUZZ_CHECK(std::memchr(h.call.op, 0, sizeof h.call.op) != nullptr);
  GCL_FUZZ_CHECK(std::memchr(h.call.algorithm, 0, sizeof h.call.algorithm) != nullptr);

  std::array<std::byte, frame_header_size> out{}, expected{};
  h.encode(out.data());
  std::memcpy(expected.data(), in.data(), frame_header_size);
  GCL_FUZZ_CHECK(out == expected);
  auto again = decode_frame_header(out);
  GCL_FUZZ_CHECK(again && again.value.call == h.call && again.value.length == h.length &&
                 again.value.tag == h.tag && again.value.source == h.source &&
                 again.value.query == h.query);

  auto text = gcl::describe(h.call);  // what error messages show: must not overrun the names
  GCL_FUZZ_CHECK(text.size() < 200);

  for (int world : {1, 2, 3, 1000, INT_MAX}) {
    auto limit = frame_length_limit(h.call, world);
    GCL_FUZZ_CHECK(limit >= control_message_allowance);
    auto problem = frame_problem(h, world);
    GCL_FUZZ_CHECK(problem.size() < 400);
    if (!problem.empty()) continue;
    if (h.type == frame_type::bye || h.type == frame_type::status_query ||
        h.type == frame_type::status_reply)
      GCL_FUZZ_CHECK(h.length == 0);
    if (h.type == frame_type::status_reply) {
      auto st = decode_status(h, world);
      GCL_FUZZ_CHECK(st && st.value.waiting_for >= -1 && st.value.waiting_for < world);
    }
    if (h.type == frame_type::abort) GCL_FUZZ_CHECK(h.length <= abort_text_limit);
    if (h.type == frame_type::data && h.call.kind != gcl::call_kind::point_to_point) {
      GCL_FUZZ_CHECK(h.length <= limit);
      // A variable-count collective's count is a digest of its counts: no bound of its own.
      if (gcl::has_variable_counts(h.call.kind)) {
        GCL_FUZZ_CHECK(limit == std::numeric_limits<std::uint64_t>::max());
        continue;
      }
      // The limit is the exact product when that does not overflow (long double is exact
      // enough to tell an overflow from a fit here).
      long double exact = static_cast<long double>(h.call.count) * h.call.element_size * world;
      if (h.length > control_message_allowance) GCL_FUZZ_CHECK(h.length <= exact);
    }
  }
  return 0;
}
