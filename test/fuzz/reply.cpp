// libFuzzer harness: decode_reply on any bytes (what a rank reads from whoever answers its
// hello, rank 0 or a peer, honest or not).
// Invariants: nothing is read outside the input (the text of a reply without a NUL once made
// the rendezvous read past its buffer); a reply is accepted only from 128 bytes or more, with
// the right magic and a status of 0 or a gcl::errc; its text is shorter than the reply's text
// field, without NUL or control characters; encoding the decoded reply and decoding it again
// gives the same reply.

#include <gcl/transport/tcp/wire.hpp>

#include <array>

#include "check.hpp"

using namespace gcl::detail;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  auto in = fuzz_input(data, size);
  auto d = decode_reply(in);
  if (!d) {
    GCL_FUZZ_CHECK(!d.error.empty() && d.error.size() < 200);
    return 0;
  }
  GCL_FUZZ_CHECK(size >= reply_size);
  auto const& r = d.value;
  GCL_FUZZ_CHECK(r.status <= reply_status_max);
  GCL_FUZZ_CHECK(r.text.size() < reply_text_room);
  for (char c : r.text) GCL_FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);

  std::array<std::byte, reply_size> const out = encode_reply(r.status, r.text);
  auto again = decode_reply(out);
  GCL_FUZZ_CHECK(again && again.value.status == r.status && again.value.text == r.text);
  return 0;
}
