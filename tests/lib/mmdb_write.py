#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""
mmdb_write.py: a small writer of MaxMind DB files, for tests.

MaxMind's own test databases are not packaged in Debian, so the tests write the .mmdb files
they read. This implements the parts of the MaxMind DB format spec, version 2.0
(https://maxmind.github.io/MaxMind-DB/), that a reader needs:

  search tree   a binary trie over the address bits, one node = two records (left: bit 0,
                right: bit 1) of 24, 28 or 32 bits, big-endian; a record < node_count is a
                node, == node_count is "no data", > node_count points into the data section
                (offset = record - node_count - 16)
  separator     16 zero bytes
  data section  each distinct record once: maps, UTF-8 strings, unsigned integers,
                booleans, doubles and arrays in the spec's control-byte encoding
  metadata      "\\xab\\xcd\\xefMaxMind.com", then a map: node_count, record_size,
                ip_version, database_type, languages, binary_format_major/minor_version,
                build_epoch, description

An IPv6 database keeps IPv4 at ::/96, as MaxMind's do; --ipv4-aliases also points
::ffff:0:0/96 and 2002::/16 at that subtree (as MaxMind's databases do), so a reader that
walks the tree must skip the aliases.

Usage: mmdb_write.py [--ip-version 4|6] [--record-size 24|28|32] [--type NAME]
                     [--ipv4-aliases] OUT.mmdb < NETWORKS.json
NETWORKS.json: [{"network": "198.51.100.0/24", "data": {"autonomous_system_number": 64500,
                 "connection_type": "Cellular", "is_hosting_provider": true}}, ...]
JSON integers are written as uint32 (uint64 when larger), as MaxMind's ASN fields are.
Less specific networks may be given in any order with more specific ones inside them: the
more specific one wins where they overlap, as in a real database.
"""
import argparse
import ipaddress
import json
import struct
import sys
import time

T_POINTER, T_STRING, T_DOUBLE, T_BYTES, T_UINT16, T_UINT32, T_MAP = 1, 2, 3, 4, 5, 6, 7
T_INT32, T_UINT64, T_UINT128, T_ARRAY, T_BOOL, T_FLOAT = 8, 9, 10, 11, 14, 15


class Typed:
    """A value with an explicit MaxMind type (the metadata's fields need exact ones)."""

    def __init__(self, kind, value):
        self.kind, self.value = kind, value


def control(kind, size):
    """The control byte(s): 3 bits of type (0 = extended), 5 bits of size, extensions."""
    if size < 29:
        sbits, ext = size, b""
    elif size < 29 + 256:
        sbits, ext = 29, bytes([size - 29])
    elif size < 285 + 65536:
        sbits, ext = 30, struct.pack(">H", size - 285)
    else:
        sbits, ext = 31, struct.pack(">I", size - 65821)[1:]
    if kind <= 7:
        return bytes([(kind << 5) | sbits]) + ext
    # Extended: type 0 in the control byte, then the type minus 7, then the size bytes.
    return bytes([sbits, kind - 7]) + ext


def uint_bytes(v):
    out = b""
    while v:
        out = bytes([v & 0xFF]) + out
        v >>= 8
    return out


def encode(v):
    if isinstance(v, Typed):
        if v.kind in (T_UINT16, T_UINT32, T_UINT64, T_UINT128):
            b = uint_bytes(v.value)
            return control(v.kind, len(b)) + b
        raise ValueError("typed %d" % v.kind)
    if isinstance(v, bool):
        return control(T_BOOL, 1 if v else 0)
    if isinstance(v, int):
        if v < 0:
            raise ValueError("negative integers are not written")
        b = uint_bytes(v)
        return control(T_UINT32 if v < 1 << 32 else T_UINT64, len(b)) + b
    if isinstance(v, float):
        return control(T_DOUBLE, 8) + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return control(T_STRING, len(b)) + b
    if isinstance(v, dict):
        out = control(T_MAP, len(v))
        for k, x in v.items():
            out += encode(str(k)) + encode(x)
        return out
    if isinstance(v, list):
        return control(T_ARRAY, len(v)) + b"".join(encode(x) for x in v)
    raise ValueError("cannot encode %r" % (v,))


class Node:
    __slots__ = ("kids",)

    def __init__(self):
        self.kids = [None, None]  # None: no data; Node; or ("data", offset)


def bits_of(net, v6):
    """The network's address bits, as the tree walks them."""
    if net.version == 4 and v6:
        return 128, (int(net.network_address)), 96 + net.prefixlen
    width = 32 if net.version == 4 else 128
    return width, int(net.network_address), net.prefixlen


def insert(root, width, addr, plen, leaf):
    node = root
    for i in range(plen):
        bit = (addr >> (width - 1 - i)) & 1
        if i == plen - 1:
            node.kids[bit] = leaf
            return
        kid = node.kids[bit]
        if not isinstance(kid, Node):
            # Empty, or a less specific network: split it so both halves keep its data.
            n = Node()
            n.kids = [kid, kid]
            node.kids[bit] = kid = n
        node = kid
    raise ValueError("a /0 network cannot be written")


def node_at(root, width, addr, plen, create):
    node = root
    for i in range(plen):
        bit = (addr >> (width - 1 - i)) & 1
        kid = node.kids[bit]
        if not isinstance(kid, Node):
            if not create:
                return None
            n = Node()
            n.kids = [kid, kid]
            node.kids[bit] = kid = n
        node = kid
    return node


def set_at(root, width, addr, plen, target):
    parent = node_at(root, width, addr, plen - 1, True)
    parent.kids[(addr >> (width - plen)) & 1] = target


def write(networks, ip_version=6, record_size=28, db_type="sluice-test", aliases=False):
    v6 = ip_version == 6
    data, offsets = b"", {}
    root = Node()
    # Less specific first: a later, longer network splits the leaf it lands in.
    nets = []
    for e in networks:
        net = ipaddress.ip_network(e["network"], strict=True)
        if net.version == 6 and not v6:
            raise ValueError("%s in an IPv4 database" % net)
        nets.append((net, e["data"]))
    nets.sort(key=lambda x: bits_of(x[0], v6)[2])
    for net, d in nets:
        key = json.dumps(d, sort_keys=True)
        if key not in offsets:
            offsets[key] = len(data)
            data += encode(d)
        width, addr, plen = bits_of(net, v6)
        insert(root, width, addr, plen, ("data", offsets[key]))
    if v6 and aliases:
        v4 = node_at(root, 128, 0, 96, True)
        set_at(root, 128, 0xFFFF << 32, 96, v4)
        set_at(root, 128, 0x2002 << 112, 16, v4)
    # Number the nodes breadth-first, each once (an alias is the same node object).
    order, seen, i = [root], {id(root): 0}, 0
    while i < len(order):
        for k in order[i].kids:
            if isinstance(k, Node) and id(k) not in seen:
                seen[id(k)] = len(order)
                order.append(k)
        i += 1
    count = len(order)
    if count + 16 + len(data) >= 1 << record_size:
        raise ValueError("too big for %d-bit records" % record_size)

    def rec(k):
        if k is None:
            return count
        if isinstance(k, Node):
            return seen[id(k)]
        return count + 16 + k[1]

    tree = bytearray()
    for n in order:
        left, right = rec(n.kids[0]), rec(n.kids[1])
        if record_size == 24:
            tree += left.to_bytes(3, "big") + right.to_bytes(3, "big")
        elif record_size == 28:
            tree += (left & 0xFFFFFF).to_bytes(3, "big")
            tree.append(((left >> 24) << 4) | (right >> 24))
            tree += (right & 0xFFFFFF).to_bytes(3, "big")
        elif record_size == 32:
            tree += left.to_bytes(4, "big") + right.to_bytes(4, "big")
        else:
            raise ValueError("record size %d" % record_size)
    meta = {
        "binary_format_major_version": Typed(T_UINT16, 2),
        "binary_format_minor_version": Typed(T_UINT16, 0),
        "build_epoch": Typed(T_UINT64, int(time.time())),
        "database_type": db_type,
        "description": {"en": "written by sluice's tests/lib/mmdb_write.py"},
        "ip_version": Typed(T_UINT16, ip_version),
        "languages": ["en"],
        "node_count": Typed(T_UINT32, count),
        "record_size": Typed(T_UINT16, record_size),
    }
    return bytes(tree) + b"\0" * 16 + data + b"\xab\xcd\xefMaxMind.com" + encode(meta)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("out")
    ap.add_argument("--ip-version", type=int, default=6, choices=(4, 6))
    ap.add_argument("--record-size", type=int, default=28, choices=(24, 28, 32))
    ap.add_argument("--type", default="sluice-test")
    ap.add_argument("--ipv4-aliases", action="store_true")
    a = ap.parse_args()
    blob = write(json.load(sys.stdin), a.ip_version, a.record_size, a.type, a.ipv4_aliases)
    with open(a.out, "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    main()
