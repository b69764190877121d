// libFuzzer harness: decode_status (what a status_reply frame says) on any bytes. The first
// byte is the job size the reader expects, the rest a frame header; its tag is also tried as
// the tag of a well-formed status reply, so that the tag itself gets fuzzed whatever the rest.
// Invariants: nothing is read outside the input; a status is accepted only from a status reply
// without payload, and names a rank of the job or none (-1); re-encoding it gives back the tag;
// frame_problem agrees with decode_status; error texts are bounded.

#include <gcl/transport/tcp/wire.hpp>

#include "check.hpp"

using namespace gcl::detail;

namespace {

void check_status(frame_header const& h, int world) {
  auto d = decode_status(h, world);
  if (h.type == frame_type::status_reply) GCL_FUZZ_CHECK(frame_problem(h, world) == d.error);
  if (!d) {
    GCL_FUZZ_CHECK(!d.error.empty() && d.error.size() < 200);
    return;
  }
  GCL_FUZZ_CHECK(h.type == frame_type::status_reply && h.length == 0);
  GCL_FUZZ_CHECK(d.value.waiting_for >= -1 && d.value.waiting_for < world);
  GCL_FUZZ_CHECK(encode_status_tag(d.value) == h.tag);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  auto in = fuzz_input(data, size);
  if (in.empty()) return 0;
  int const world = data[0];
  auto header = decode_frame_header(in.subspan(1));
  if (header) check_status(header.value, world);
  if (in.size() >= 5) {
    frame_header h;
    h.type = frame_type::status_reply;
    h.tag = get<std::uint32_t>(in.data() + 1);
    check_status(h, world);
    check_status(h, world * 1000);
  }
  return 0;
}
