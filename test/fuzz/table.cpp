// libFuzzer harness: decode_table on any bytes. The first byte is the job size the reader
// expects (so wrong sizes are tried too), the rest the table; the rest is also decoded as a
// table of as many entries as it holds whole, so that valid tables are common.
// Invariants: nothing is read outside the input; a table is accepted only if it has exactly
// one entry per rank, each of family 4 or 6, every rank but 0 with a port; re-encoding it
// gives back its bytes (the reserved ones aside); error texts are bounded.

#include <gcl/transport/tcp/wire.hpp>

#include <cstring>
#include <vector>

#include "check.hpp"

using namespace gcl::detail;

namespace {

void check_table(std::span<std::byte const> bytes, int world) {
  auto d = decode_table(bytes, world);
  if (!d) {
    GCL_FUZZ_CHECK(!d.error.empty() && d.error.size() < 200);
    return;
  }
  GCL_FUZZ_CHECK(world >= 1);
  GCL_FUZZ_CHECK(d.value.size() == static_cast<std::size_t>(world));
  GCL_FUZZ_CHECK(bytes.size() == table_entry_size * d.value.size());
  for (std::size_t i = 0; i < d.value.size(); ++i) {
    GCL_FUZZ_CHECK(d.value[i].family == 4 || d.value[i].family == 6);
    GCL_FUZZ_CHECK(i == 0 || d.value[i].port != 0);
  }
  std::vector<std::byte> out(bytes.size()), expected(bytes.begin(), bytes.end());
  encode_table(out.data(), d.value);
  for (std::size_t i = 0; i < d.value.size(); ++i)  // reserved: bytes 4..7 (byte 1: flags)
    std::memset(expected.data() + table_entry_size * i + 4, 0, 4);
  GCL_FUZZ_CHECK(out == expected);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  auto in = fuzz_input(data, size);
  if (in.empty()) return 0;
  auto rest = in.subspan(1);
  check_table(rest, static_cast<int>(data[0]));
  check_table(rest, static_cast<int>(rest.size() / table_entry_size));
  return 0;
}
