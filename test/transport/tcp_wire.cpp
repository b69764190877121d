#define BOOST_TEST_MODULE transport_tcp_wire
#include <boost/test/unit_test.hpp>

// The TCP transport's wire decoders (include/gcl/transport/tcp/wire.hpp) on chosen bytes: what
// they accept, and for what they refuse, the text. test/fuzz runs the same decoders on random
// bytes.

#include <gcl/transport/tcp/cores.hpp>
#include <gcl/transport/tcp/wire.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace gcl::detail;

namespace {

bool contains(std::string const& s, std::string const& part) {
  return s.find(part) != std::string::npos;
}

std::array<std::byte, frame_header_size> encoded(frame_header const& h) {
  std::array<std::byte, frame_header_size> b{};
  h.encode(b.data());
  return b;
}

frame_header all_reduce_header(std::uint64_t count, std::uint64_t length) {
  frame_header h;
  h.source = 1;
  h.call = gcl::make_call_info<float>(gcl::call_kind::all_reduce, count, -1, "sum", "ring");
  h.call.sequence = 1;
  h.length = length;
  return h;
}

std::array<std::byte, reply_size> reply_bytes(std::uint32_t status, std::string const& text) {
  return encode_reply(status, text);
}

}  // namespace

BOOST_AUTO_TEST_CASE(frame_header_round_trips_and_is_refused_for_each_defect) {
  auto h = all_reduce_header(1000, 4000);
  h.tag = 0x80000002u;
  auto b = encoded(h);
  auto d = decode_frame_header(b);
  BOOST_TEST_REQUIRE(bool(d), d.error);
  BOOST_TEST((d.value.call == h.call));
  BOOST_TEST(d.value.length == 4000u);
  BOOST_TEST(d.value.tag == 0x80000002u);
  BOOST_TEST(d.value.source == 1);
  BOOST_TEST(d.value.query == 0);
  frame_header reply;
  reply.type = frame_type::status_reply;
  reply.query = 200;  // the number of the query it answers, in byte 7
  BOOST_TEST(std::to_integer<int>(encoded(reply)[7]) == 200);
  BOOST_TEST(decode_frame_header(encoded(reply)).value.query == 200);

  BOOST_TEST(decode_frame_header(std::span(b).first(79)).error ==
             "a frame header is 80 bytes, got 79");
  auto with = [&](std::size_t at, std::uint8_t v) {
    auto c = b;
    c[at] = std::byte{v};
    return decode_frame_header(c).error;
  };
  BOOST_TEST(contains(with(0, 0x47 ^ 1), "wrong frame magic"), with(0, 0x47 ^ 1));
  BOOST_TEST(with(4, 9) ==
             "frame of wire version 9, this rank speaks " + std::to_string(wire_version));
  BOOST_TEST(with(6, 0) == "unknown frame type 0");
  BOOST_TEST(bool(decode_frame_header(encoded(frame_header{}))));
  BOOST_TEST(with(6, 4).empty());  // status_query
  BOOST_TEST(with(6, 5).empty());  // status_reply
  BOOST_TEST(with(6, 6) == "unknown frame type 6");
  auto const last = static_cast<std::uint8_t>(gcl::last_call_kind);  // split, 18
  BOOST_TEST(with(16, last).empty());
  BOOST_TEST(with(16, static_cast<std::uint8_t>(last + 1)) ==
             "unknown call kind " + std::to_string(last + 1));
  BOOST_TEST(with(17, 15) == "unknown element type 15");
  BOOST_TEST(with(40 + 11, 'x') == "operator name is not NUL-terminated");
  BOOST_TEST(with(52 + 19, 'x') == "algorithm name is not NUL-terminated");
  BOOST_TEST(bool(decode_frame_header(encoded(frame_header{}))));  // defaults are valid
}

BOOST_AUTO_TEST_CASE(frame_problem_bounds_collectives_aborts_and_byes) {
  // 10 floats on 2 ranks: at most 80 bytes of data, but control messages up to 64 KiB pass.
  BOOST_TEST(frame_length_limit(all_reduce_header(10, 0).call, 2) == control_message_allowance);
  BOOST_TEST(frame_problem(all_reduce_header(10, 40), 2).empty());
  BOOST_TEST(frame_problem(all_reduce_header(10, control_message_allowance), 2).empty());
  auto too_long = frame_problem(all_reduce_header(10, std::uint64_t{1} << 40), 2);
  BOOST_TEST(too_long ==
             "a frame of 1099511627776 bytes for all_reduce #1 (ring, sum, 10 x float32), more "
             "than the 65536 bytes its call allows (count x element size x world size 2)");
  // Above the allowance the bound is the call's own: 100000 floats x 3 ranks.
  BOOST_TEST(frame_length_limit(all_reduce_header(100000, 0).call, 3) == 1200000u);
  BOOST_TEST(frame_problem(all_reduce_header(100000, 1200000), 3).empty());
  BOOST_TEST(!frame_problem(all_reduce_header(100000, 1200001), 3).empty());
  // count x size x P overflows 64 bits: saturates instead of wrapping to a small bound.
  auto huge = all_reduce_header(std::uint64_t{1} << 62, std::numeric_limits<std::uint64_t>::max());
  BOOST_TEST(frame_length_limit(huge.call, 8) == std::numeric_limits<std::uint64_t>::max());
  BOOST_TEST(frame_problem(huge, 8).empty());
  // A variable-count collective's count is a digest of the counts, not a size: no bound of its
  // own (a small digest must not refuse a large block).
  auto varcount = all_reduce_header(3, std::uint64_t{1} << 30);
  varcount.call.kind = gcl::call_kind::all_gatherv;
  BOOST_TEST(frame_length_limit(varcount.call, 2) == std::numeric_limits<std::uint64_t>::max());
  BOOST_TEST(frame_problem(varcount, 2).empty());
  // Point-to-point frames have no bound of their own (the receiver allocates step by step).
  frame_header p2p;
  p2p.length = std::uint64_t{1} << 40;
  BOOST_TEST(frame_problem(p2p, 2).empty());

  frame_header abort_frame;
  abort_frame.type = frame_type::abort;
  abort_frame.length = abort_text_limit;
  BOOST_TEST(frame_problem(abort_frame, 2).empty());
  abort_frame.length = std::uint64_t{1} << 40;
  BOOST_TEST(frame_problem(abort_frame, 2) ==
             "an abort frame of 1099511627776 bytes (at most 65536 are allowed)");
  frame_header bye;
  bye.type = frame_type::bye;
  BOOST_TEST(frame_problem(bye, 2).empty());
  bye.length = 5;
  BOOST_TEST(frame_problem(bye, 2) ==
             "a bye frame that claims a payload of 5 bytes (it carries none)");
}

BOOST_AUTO_TEST_CASE(hello_is_checked_for_magic_version_kind_and_family) {
  hello h;
  h.kind = hello_kind::peer;
  h.family = 6;
  h.rank = 3;
  h.size = 4;
  h.token = token_hash("job");
  h.address[15] = 1;
  h.key[0] = 0xab;
  h.key[31] = 0xcd;
  h.flags = hello_shares_cores;
  std::array<std::byte, hello_size> b{};
  h.encode(b.data());
  auto d = decode_hello(b);
  BOOST_TEST_REQUIRE(bool(d), d.error);
  BOOST_TEST((d.value.key == h.key));  // the host key (hybrid_transport)
  BOOST_TEST(d.value.flags == hello_shares_cores);
  BOOST_TEST(d.value.rank == 3);
  BOOST_TEST(d.value.size == 4);
  BOOST_TEST(d.value.token == token_hash("job"));
  BOOST_TEST((d.value.address == h.address));
  BOOST_TEST(is_gcl_hello(b));

  BOOST_TEST(decode_hello(std::span(b).first(10)).error == "a hello is 96 bytes, got 10");
  auto with = [&](std::size_t at, std::uint8_t v) {
    auto c = b;
    c[at] = std::byte{v};
    return decode_hello(c).error;
  };
  BOOST_TEST(with(0, 0) == "not a gcl peer (wrong magic)");
  BOOST_TEST(with(4, 9) ==
             "speaks gcl wire version 9, this rank speaks " + std::to_string(wire_version));
  BOOST_TEST(with(6, 3) == "unknown hello kind 3");
  BOOST_TEST(with(7, 5) == "address family 5 (neither 4 nor 6)");
  std::array<std::byte, 8> garbage{std::byte{'g'}, std::byte{'a'}};
  BOOST_TEST(!is_gcl_hello(garbage));
  BOOST_TEST(!is_gcl_hello(std::span(b).first(3)));
}

// What follows a join hello: its machine and CPUs, byte for byte; any bytes decode.
BOOST_AUTO_TEST_CASE(hello_cpus_carry_the_machine_and_every_cpu_up_to_1023) {
  hello_cpus h;
  h.machine[0] = 0x12;
  h.machine[15] = 0x34;
  std::vector<int> const cpus{0, 9, 64, 1023};
  h.cpus = cpu_bitmap(cpus);
  BOOST_TEST(h.cpus[0] == 0x01);
  BOOST_TEST(h.cpus[1] == 0x02);    // CPU 9
  BOOST_TEST(h.cpus[8] == 0x01);    // CPU 64
  BOOST_TEST(h.cpus[127] == 0x80);  // CPU 1023
  std::array<std::byte, hello_cpus_size> b{};
  h.encode(b.data());
  auto d = hello_cpus::decode(b);
  BOOST_TEST((d.machine == h.machine));
  BOOST_TEST((d.cpus == h.cpus));
  // A CPU the bitmap cannot hold makes the whole mask unknown (all zero), never a smaller one.
  std::vector<int> const beyond{1, 1024};
  BOOST_TEST((cpu_bitmap(beyond) == std::array<std::uint8_t, 128>{}));
  BOOST_TEST((cpu_bitmap({}) == std::array<std::uint8_t, 128>{}));
}

namespace {

hello_cpus rank_on(std::uint8_t machine, std::vector<int> const& cpus) {
  hello_cpus h;
  h.machine[0] = machine;
  h.cpus = cpu_bitmap(cpus);
  return h;
}

// Per rank: "2" (more than two to a CPU), "c" (two to a CPU: crowds the cores), "s" (shares
// them), "-" (none of these), "u" (unjudged), "!" (a judgement that contradicts itself).
std::string judged(std::vector<hello_cpus> const& ranks) {
  std::string out;
  for (auto const& j : judge_cores(ranks)) {
    bool const coherent =
        !j || ((!j->over_two_per_cpu || j->crowds_cores) && (!j->crowds_cores || j->shares_cores));
    out += !coherent             ? '!'
           : !j                  ? 'u'
           : j->over_two_per_cpu ? '2'
           : j->crowds_cores     ? 'c'
           : j->shares_cores     ? 's'
                                 : '-';
  }
  return out;
}

}  // namespace

// Ranks share cores when a machine's ranks outnumber the CPUs their masks allow together.
BOOST_AUTO_TEST_CASE(ranks_share_cores_when_a_machine_has_more_of_them_than_their_cpus) {
  // Bound to a CPU each (mpirun's default at two ranks): not shared, though each mask has one.
  BOOST_TEST(judged({rank_on(1, {0}), rank_on(1, {1})}) == "--");
  // Bound to the same CPU, or all free on one: shared.
  BOOST_TEST(judged({rank_on(1, {0}), rank_on(1, {0})}) == "cc");
  BOOST_TEST(judged({rank_on(1, {0, 1}), rank_on(1, {0, 1}), rank_on(1, {0, 1})}) == "sss");
  // Five ranks on two CPUs: more than two to a CPU; four: two, crowded but not more.
  std::vector<hello_cpus> five(5, rank_on(1, {0, 1}));
  BOOST_TEST(judged(five) == "22222");
  five.pop_back();
  BOOST_TEST(judged(five) == "cccc");
  // Machines apart: each counted alone (two ranks of machine 2 on its CPU 0 share it).
  BOOST_TEST(judged({rank_on(1, {0}), rank_on(2, {0}), rank_on(2, {0}), rank_on(1, {1})}) ==
             "-cc-");
  // A rank of a machine that did not give its CPUs (or its machine): that machine unjudged.
  BOOST_TEST(judged({rank_on(1, {0}), rank_on(1, {}), rank_on(2, {0})}) == "uu-");
  BOOST_TEST(judged({rank_on(0, {0}), rank_on(1, {0})}) == "u-");
}

BOOST_AUTO_TEST_CASE(reply_text_is_bounded_and_must_end_inside_the_reply) {
  auto ok = decode_reply(reply_bytes(0, ""));
  BOOST_TEST_REQUIRE(bool(ok), ok.error);
  BOOST_TEST(ok.value.status == 0u);
  BOOST_TEST(ok.value.text.empty());

  auto refused = decode_reply(reply_bytes(5, "gcl: rank 0: refused: wrong job token"));
  BOOST_TEST_REQUIRE(bool(refused), refused.error);
  BOOST_TEST(refused.value.status == 5u);
  BOOST_TEST(refused.value.text == "gcl: rank 0: refused: wrong job token");

  // The longest text a reply holds: 119 bytes and its NUL.
  auto longest = decode_reply(reply_bytes(3, std::string(119, 'A')));
  BOOST_TEST_REQUIRE(bool(longest), longest.error);
  BOOST_TEST(longest.value.text == std::string(119, 'A'));

  // A refusal whose text fills the reply with no NUL, followed by more non-zero bytes (as a
  // reader of reply + address table sees it): refused, nothing read beyond the reply.
  std::vector<std::byte> long_refusal(reply_size + 48, std::byte{'A'});
  put(long_refusal.data(), reply_magic);
  put(long_refusal.data() + 4, std::uint32_t{5});
  auto d = decode_reply(long_refusal);
  BOOST_TEST(!d);
  BOOST_TEST(d.error == "reply text is not NUL-terminated within its 120 bytes");

  BOOST_TEST(decode_reply(reply_bytes(99, "x")).error == "reply status 99 is not a gcl error code");
  auto accepted = reply_bytes(0, "");
  BOOST_TEST(decode_reply(std::span(accepted).first(100)).error == "a reply is 128 bytes, got 100");
  auto not_reply = reply_bytes(0, "");
  not_reply[0] = std::byte{0};
  BOOST_TEST(decode_reply(not_reply).error == "not a gcl reply (wrong magic)");
  auto escapes = decode_reply(reply_bytes(5, "\x1b[2Jred\a"));
  BOOST_TEST_REQUIRE(bool(escapes), escapes.error);
  BOOST_TEST(escapes.value.text == "?[2Jred?");
}

BOOST_AUTO_TEST_CASE(address_table_entries_are_checked_naming_the_rank) {
  std::vector<table_entry> entries(3);
  entries[1] = {4, 41000, {127, 0, 0, 1}};
  entries[1].flags = table_shares_cores;
  entries[2].family = 6;
  entries[2].port = 41001;
  entries[2].address[15] = 1;
  entries[2].key[5] = 7;
  std::vector<std::byte> b(table_entry_size * 3);
  encode_table(b.data(), entries);
  auto d = decode_table(b, 3);
  BOOST_TEST_REQUIRE(bool(d), d.error);
  BOOST_TEST((d.value[2].key == entries[2].key));
  BOOST_TEST((d.value[1].key == entries[1].key));
  BOOST_TEST(d.value.size() == 3u);
  BOOST_TEST(d.value[1].port == 41000);
  BOOST_TEST(d.value[2].family == 6);
  BOOST_TEST((d.value[2].address == entries[2].address));
  BOOST_TEST(d.value[1].flags == table_shares_cores);
  BOOST_TEST(d.value[2].flags == 0);

  BOOST_TEST(decode_table(b, 4).error == "the address table of 4 ranks is 224 bytes, got 168");
  BOOST_TEST(decode_table({}, 0).error == "an address table for 0 ranks");
  auto bad_family = b;
  bad_family[table_entry_size * 2] = std::byte{9};
  BOOST_TEST(decode_table(bad_family, 3).error ==
             "the address table gives rank 2 address family 9 (neither 4 nor 6)");
  auto no_port = b;
  put(no_port.data() + table_entry_size + 2, std::uint16_t{0});
  BOOST_TEST(decode_table(no_port, 3).error == "the address table gives rank 1 port 0");
}

BOOST_AUTO_TEST_CASE(status_frames_carry_no_payload_and_name_a_rank_of_the_job) {
  frame_header query;
  query.type = frame_type::status_query;
  BOOST_TEST(frame_problem(query, 4).empty());
  query.length = 1;
  BOOST_TEST(frame_problem(query, 4) ==
             "a status query that claims a payload of 1 bytes (it carries none)");

  frame_header st;
  st.type = frame_type::status_reply;
  for (int waiting_for = -1; waiting_for < 4; ++waiting_for)
    for (bool in_call : {false, true}) {
      st.tag = encode_status_tag({in_call, waiting_for});
      auto d = decode_status(st, 4);
      BOOST_TEST_REQUIRE(bool(d), d.error);
      BOOST_TEST(d.value.in_call == in_call);
      BOOST_TEST(d.value.waiting_for == waiting_for);
      BOOST_TEST(frame_problem(st, 4).empty());
    }
  st.tag = encode_status_tag({true, 4});  // rank 4 of a job of 4
  BOOST_TEST(decode_status(st, 4).error ==
             "a status reply that says its rank waits for rank 4 (the job has 4 ranks)");
  BOOST_TEST(frame_problem(st, 4) == decode_status(st, 4).error);
  st.tag = 0xffffffffu;
  BOOST_TEST(decode_status(st, 4).error ==
             "a status reply that says its rank waits for rank 2147483646 (the job has 4 ranks)");
  st.tag = 0;
  st.length = std::uint64_t{1} << 40;
  BOOST_TEST(decode_status(st, 4).error ==
             "a status reply that claims a payload of 1099511627776 bytes (it carries none)");
  frame_header data;
  BOOST_TEST(decode_status(data, 4).error == "not a status reply (frame type 1)");
}
