#!/usr/bin/env python3
"""Write the seed corpus of fuzz_handshake (protocol version 3) and the
tags of fuzz_msg's PEER frames.

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


if __name__ == "__main__":
    main()
