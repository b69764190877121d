#!/usr/bin/env python3
"""Writes the seed corpus of the wire decoders' fuzz harnesses: corpus/<decoder>/<name>.

Valid messages as gcl sends them, and a few nasty ones (a refusal whose text has no NUL, huge
lengths, unknown enums, wrong sizes). Little-endian, like the hosts gcl is tested on (on a
big-endian host the seeds are still inputs, only with a wrong magic). Rerun after changing
the wire format:  python3 test/fuzz/make_corpus.py
"""
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FRAME_MAGIC, HELLO_MAGIC, REPLY_MAGIC = 0x314C4347, 0x484C4347, 0x524C4347
# The wire version as wire.hpp says it, not a copy of it here (a copy stayed at 6 while the
# wire went to 7 and 8, and the seeds were refused at the version check).
with open(os.path.join(HERE, "..", "..", "include", "gcl", "transport", "tcp", "wire.hpp")) as f:
    VERSION = int(re.search(r"wire_version = (\d+);", f.read()).group(1))


def write(decoder, name, data):
    d = os.path.join(HERE, "corpus", decoder)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def name(s, n):
    return s.encode()[: n - 1].ljust(n, b"\0")


def frame(type_=1, tag=0, source=0, kind=0, dtype=0, esize=1, root=-1, seq=0, count=0,
          op=b"", alg=b"", length=0, magic=FRAME_MAGIC, version=VERSION, query=0):
    return (struct.pack("<IHBBIiBBHiQQ", magic, version, type_, query, tag, source, kind, dtype,
                        esize, root, seq, count)
            + (op if len(op) == 12 else name(op.decode(), 12))
            + (alg if len(alg) == 20 else name(alg.decode(), 20))
            + struct.pack("<Q", length))


def hello(kind=1, family=4, rank=1, size=4, token=0x1234567890ABCDEF, port=41234,
          address=bytes([127, 0, 0, 1]), magic=HELLO_MAGIC, version=VERSION, flags=1,
          key=b""):
    b = struct.pack("<IHBBiiQHB", magic, version, kind, family, rank, size, token, port, flags)
    return b.ljust(32, b"\0") + address.ljust(16, b"\0") + b"\0" * 16 + key.ljust(32, b"\0")


def reply(status=0, text=b""):
    return struct.pack("<II", REPLY_MAGIC, status) + text[:119].ljust(120, b"\0")


def entry(family=4, port=41234, address=bytes([127, 0, 0, 1]), flags=0, key=b""):
    return (struct.pack("<BBH", family, flags, port) + b"\0" * 4 + address.ljust(16, b"\0")
            + key.ljust(32, b"\0"))


V6_LOOPBACK = bytes(15) + b"\1"

# frame headers
write("frame_header", "data_send_recv", frame(tag=7, source=1, length=8))
write("frame_header", "data_all_reduce",
      frame(tag=1 << 31, source=2, kind=1, dtype=9, esize=4, seq=3, count=1000, op=b"sum",
            alg=b"ring", length=4000))
write("frame_header", "data_broadcast_root",
      frame(tag=1 << 31, source=1, kind=3, dtype=10, esize=8, root=0, seq=1, count=16,
            alg=b"tree", length=128))
write("frame_header", "bye", frame(type_=2, source=3))
write("frame_header", "abort", frame(type_=3, tag=6, source=1, length=120))
write("frame_header", "send_recv_2_to_the_40", frame(tag=7, source=1, length=1 << 40))
write("frame_header", "all_reduce_2_to_the_40",
      frame(source=1, kind=1, dtype=9, esize=4, count=10, op=b"sum", alg=b"ring",
            length=1 << 40))
write("frame_header", "abort_2_to_the_40", frame(type_=3, tag=6, source=1, length=1 << 40))
write("frame_header", "bye_with_payload", frame(type_=2, source=1, length=5))
write("frame_header", "count_overflow",
      frame(kind=1, dtype=14, esize=65535, count=(1 << 64) - 1, length=(1 << 64) - 1))
write("frame_header", "names_not_terminated", frame(op=b"x" * 12, alg=b"y" * 20))
write("frame_header", "unknown_enums", frame(type_=9, kind=200, dtype=77))
write("frame_header", "short", frame()[:40])
write("frame_header", "status_query", frame(type_=4, source=2, query=3))
write("frame_header", "status_query_with_payload", frame(type_=4, source=2, length=1 << 40))
write("frame_header", "status_reply_waiting",
      frame(type_=5, tag=1 | (3 << 1), source=1, kind=1, dtype=9, esize=4, seq=10, count=1000,
            op=b"sum", alg=b"ring", query=3))

# status replies: the first byte is the job size the reader expects, then the frame header
write("status", "in_all_reduce_waiting_for_2",
      bytes([4]) + frame(type_=5, tag=1 | (3 << 1), source=1, kind=1, dtype=9, esize=4, seq=10,
                         count=1000, op=b"sum", alg=b"ring"))
write("status", "idle", bytes([2]) + frame(type_=5, source=1))
write("status", "waits_for_rank_4_of_4", bytes([4]) + frame(type_=5, tag=5 << 1, source=1))
write("status", "all_ones_tag", bytes([4]) + frame(type_=5, tag=0xFFFFFFFF, source=1))
write("status", "with_payload", bytes([4]) + frame(type_=5, source=1, length=1 << 40))
write("status", "not_a_status", bytes([4]) + frame(tag=7, source=1, length=8))

# hellos
write("hello", "join_v4", hello())
write("hello", "peer_v6", hello(kind=2, family=6, rank=3, address=V6_LOOPBACK, port=0))
write("hello", "join_any_address", hello(address=b""))
write("hello", "family_9", hello(family=9))
write("hello", "kind_7", hello(kind=7))
write("hello", "version_7", hello(version=7))
write("hello", "join_shares_cores_with_key", hello(flags=3, key=bytes(range(1, 33))))
# a join hello and its sequel: the machine (boot id) and the CPU bitmap (CPUs 0 and 9)
write("hello", "join_with_cpus", hello() + bytes(range(1, 17)) + b"\x01\x02" + b"\0" * 126)
write("hello", "garbage", b"garbage\n")

# replies
write("reply", "accepted", reply())
write("reply", "accepted_with_table",
      reply() + entry(port=0, address=b"") + entry() + entry(6, 40000, V6_LOOPBACK))
write("reply", "refused_wrong_token",
      reply(5, b"gcl: rank 0: refused: wrong job token (GCL_TOKEN differs)"))
write("reply", "refused_timeout",
      reply(3, b"rank 0 timed out after 30 s waiting for ranks 2, 3 to join"))
# The reply that made the rendezvous read past its buffer: a refusal whose text fills the
# reply without a NUL (and, second, runs on through where the address table would be).
write("reply", "long_refusal", struct.pack("<II", REPLY_MAGIC, 5) + b"A" * 120)
write("reply", "long_refusal_over_table", struct.pack("<II", REPLY_MAGIC, 5) + b"A" * 168)
write("reply", "status_99", reply(99, b"who knows"))
write("reply", "control_characters", reply(5, b"\x1b[2J\x1b[31mred\x07\tbell\x7f"))
write("reply", "short", reply()[:100])

# address tables: the first byte is the job size the reader expects
write("table", "two_ranks", bytes([2]) + entry(port=0, address=b"") + entry())
write("table", "four_ranks_mixed",
      bytes([4]) + entry(port=29500) + entry(6, 41000, V6_LOOPBACK)
      + entry(4, 41001, bytes([10, 0, 0, 3])) + entry(6, 41002, bytes([0xFD, 0, 0x77]) + bytes(12) + b"\2"))
write("table", "shares_cores_and_keys",
      bytes([3]) + entry(port=0, flags=1) + entry(key=b"\7" * 32) + entry(flags=255, key=b"\7" * 32))
write("table", "family_5", bytes([2]) + entry(port=0) + entry(family=5))
write("table", "port_0", bytes([3]) + entry(port=0) + entry() + entry(port=0))
write("table", "one_entry_short", bytes([3]) + entry() + entry())
