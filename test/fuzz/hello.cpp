// libFuzzer harness: decode_hello on any bytes, and hello_cpus::decode on what follows a hello.
// Invariants: nothing is read outside the input; a hello is accepted only from 96 bytes or more,
// with the right magic and version, a known kind and address family 4 or 6; re-encoding it
// gives back its bytes (the reserved ones aside), and so does re-encoding its sequel; error
// texts are bounded.

#include <gcl/transport/tcp/wire.hpp>

#include <array>
#include <cstring>

#include "check.hpp"

using namespace gcl::detail;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  auto in = fuzz_input(data, size);
  bool gcl_peer = is_gcl_hello(in);
  auto d = decode_hello(in);
  if (!d) {
    GCL_FUZZ_CHECK(!d.error.empty() && d.error.size() < 200);
    return 0;
  }
  GCL_FUZZ_CHECK(gcl_peer && size >= hello_size);
  auto const& h = d.value;
  GCL_FUZZ_CHECK(h.magic == hello_magic && h.version == wire_version);
  GCL_FUZZ_CHECK(h.kind == hello_kind::join || h.kind == hello_kind::peer);
  GCL_FUZZ_CHECK(h.family == 4 || h.family == 6);

  std::array<std::byte, hello_size> out{}, expected{};
  h.encode(out.data());
  std::memcpy(expected.data(), in.data(), hello_size);
  for (std::size_t i = 27; i < 32; ++i) expected[i] = std::byte{0};  // reserved
  for (std::size_t i = 48; i < 64; ++i) expected[i] = std::byte{0};
  GCL_FUZZ_CHECK(out == expected);
  auto again = decode_hello(out);
  GCL_FUZZ_CHECK(again && again.value.rank == h.rank && again.value.size == h.size &&
                 again.value.token == h.token && again.value.port == h.port &&
                 again.value.address == h.address && again.value.key == h.key &&
                 again.value.flags == h.flags);

  // The sequel of a join hello (rank 0 reads it after a join hello of its version): any bytes
  // decode.
  if (size >= hello_size + hello_cpus_size) {
    auto const sequel = in.subspan(hello_size).first<hello_cpus_size>();
    auto const cpus = hello_cpus::decode(sequel);
    std::array<std::byte, hello_cpus_size> back{};
    cpus.encode(back.data());
    GCL_FUZZ_CHECK(std::memcmp(back.data(), sequel.data(), hello_cpus_size) == 0);
  }
  return 0;
}
