#!/usr/bin/env python3
"""Write the seed corpus of fuzz_handshake (protocol version 3) and of
fuzz_chan (a channel's consumer, its operations as fuzz_chan.c says), and
the tags of fuzz_msg's PEER frames.

The fuzz blade's secret is "fuzz-secret-0123" and a socketless session's
nonce is zero (smart__blade_session_feed), so a seed can hold a valid AUTH:
HMAC-SHA-256(secret, "SMART-AUTH-3" | label | dialer nonce | listener nonce
| HELLO payload), label 2 (wire/auth.h).  Usage: make-corpus.py [CORPUS_DIR]
(default: tests/fuzz/corpus beside this script).
"""
import hashlib
import hmac
import os
import struct
import sys

SECRET = b"fuzz-secret-0123"
ND = bytes(range(32))
NL = bytes(32)
QPC = bytes.fromhex("010000000800000053484d5101000000")  # QP_CONNECT payload


def frame(t, p, flags=0):
    return b"SMRT" + struct.pack("<HHI", t, flags, len(p)) + p


def hello_pl(transport=b"shm", version=3, nonce=ND):
    return struct.pack("<HB5x", version, len(transport)) + nonce + transport


def v2_hello(secret, transport=b"shm"):
    return frame(1, struct.pack("<HBxHxx", 2, len(transport), len(secret)) +
                 transport + secret)


def proof(label, msg, key=SECRET):
    return hmac.new(key, b"SMART-AUTH-3" + bytes([label]) + ND + NL + msg,
                    hashlib.sha256).digest()


def hello(transport=b"shm"):
    return frame(1, hello_pl(transport))


def auth(transport=b"shm", label=2, key=SECRET):
    return frame(11, proof(label, hello_pl(transport), key))


def tagged(t, p, seq, label=7):
    """A frame after the AUTH: its tag covers type, sequence, payload."""
    pre = struct.pack("<HQ", t, seq)
    tag = hmac.new(SECRET, b"SMART-AUTH-3" + bytes([label]) + ND + NL + pre +
                   p, hashlib.sha256).digest()
    return frame(t, p + tag)


def error(status, msg):
    return frame(3, struct.pack("<iHH", status, 3, len(msg)) + msg)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus")
    d = os.path.join(root, "fuzz_handshake")
    good = hello() + auth()
    qp = tagged(4, QPC, 0)
    seeds = {
        "hello_good": hello(),
        "hello_auth": good,
        "auth_wrong_secret": hello() + auth(key=b"fuzz-secret-0124"),
        "auth_reflected": hello() + auth(label=1),
        "auth_before_hello": auth(),
        "auth_twice": good + auth(),
        "auth_truncated": hello() + auth()[:-1],
        "hello_bad_transport": hello(b"verbs") + auth(b"verbs"),
        "hello_v2": v2_hello(SECRET),
        "hello_v2_long_secret": v2_hello(b"s" * 4096),
        "hello_trailing": frame(1, hello_pl() + b"x"),
        "hello_twice": hello() + hello(),
        "client_refuses_challenge": hello() + error(-11, b"blade proof refused"),
        "bad_flags": frame(1, hello_pl(), flags=1),
        "session_full": good + qp + tagged(6, struct.pack("<I", 0), 1) +
        tagged(7, b"", 2),
        "session_pipelined": good + b"".join(
            tagged(4, struct.pack("<I", i) + QPC[4:], i - 1)
            for i in range(1, 9)),
        "session_bad_tag": good + frame(4, QPC + bytes(32)),
        "session_replayed_qp": good + qp + qp,
        "session_untagged_bye": good + frame(7, bytes(32)),
        "bye_only": frame(7, bytes(32)),
    }
    for old in ("hello_no_secret", "hello_wrong_secret", "hello_long_secret"):
        if os.path.exists(os.path.join(d, old)):
            os.remove(os.path.join(d, old))
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    # fuzz_msg: a PEER frame's payload ends with its 32-byte tag
    for name in ("peer_connect", "peer_accept"):
        path = os.path.join(root, "fuzz_msg", name)
        with open(path, "rb") as f:
            data = f.read()
        blob, rblob = struct.unpack_from("<HH", data, 12)
        if len(data) == 20 + blob + rblob:
            with open(path, "wb") as f:
                f.write(data + bytes(range(0x80, 0xa0)))
    chan_seeds(root)


# fuzz_chan: shape byte, then operations (tests/fuzz/fuzz_chan.c)
def c_landed(imm, length, by_imm=1):
    return struct.pack("<BIIB", 0, imm, length, by_imm)


def c_write(off, data):
    return struct.pack("<BIH", 1, off, len(data)) + data


NEXT, RELEASE = b"\x02", b"\x03"


def c_good(length, user):
    return struct.pack("<BHQ", 4, length, user)


def c_torn(length, user, at, x):
    return struct.pack("<BHQHB", 5, length, user, at, x)


def c_misnamed(length, user, delta):
    return struct.pack("<BHQB", 6, length, user, delta)


def chan_seeds(root):
    d = os.path.join(root, "fuzz_chan")
    os.makedirs(d, exist_ok=True)
    take = NEXT + RELEASE
    seeds = {
        # IMM, 2 slots of 4096: a stream, the ring held whole, full slots
        "imm_stream": b"\x00" + c_good(100, 1) + take + c_good(7, 2) +
        c_good(4080, 3) + NEXT + NEXT + RELEASE + RELEASE + c_good(0, 4) +
        take,
        # FOOTER, 4 slots of 8192
        "footer_stream": b"\x0b" + c_good(64, 9) + take + c_good(8168, 10) +
        NEXT + c_good(1, 11) + NEXT + RELEASE + RELEASE,
        "imm_wrong_slot": b"\x00" + c_landed(1 << 20, 80) + NEXT,
        "imm_too_long": b"\x00" + c_landed(0, 4097) + NEXT,
        "imm_by_send": b"\x00" + c_landed(0, 80, 0) + NEXT,
        "imm_overrun": b"\x00" + c_good(8, 1) + c_good(8, 2) + c_good(8, 3) +
        NEXT,
        "imm_hdr_len": b"\x00" + c_good(64, 1) + c_write(0, b"\xff\x0f") +
        NEXT,
        "imm_hdr_zero": b"\x00" + c_good(64, 1) + c_write(4, b"\x01") + NEXT,
        "footer_torn": b"\x01" + c_torn(64, 5, 3, 0x40) + NEXT + NEXT + NEXT,
        "footer_bad_len": b"\x01" + c_write(4096 - 24, struct.pack(
            "<QIIQ", 0, 0xffff, 0, 1)) + NEXT,
        "footer_far_seq": b"\x01" + c_write(4096 - 8, struct.pack(
            "<Q", 99)) + NEXT,
        "release_first": b"\x00" + RELEASE + NEXT + RELEASE,
        "imm_misnamed": b"\x00" + c_misnamed(64, 1, 1) + NEXT,
        "footer_misnamed": b"\x01" + c_misnamed(64, 1, 2) + NEXT,
        "footer_misnamed_old": b"\x03" + c_good(8, 1) + take +
        c_misnamed(8, 2, 3) + NEXT,
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
