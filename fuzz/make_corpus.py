#!/usr/bin/env python3
"""Writes the fuzz seed corpora from the iWARP brief's section 8 vectors.

fuzz/corpus/fpdu/*: byte 0 = options (bit 0 CRC, bit 1 RFC 7306, bits 2-7 chunk seed),
byte 1 = receive cap selector (0 = 65535), then FPDU bytes (see fpdu_decoder_fuzz.cpp).
fuzz/corpus/mpa/*: byte 0 = bit 0 Reply expected, bits 1-7 chunk seed, then the frame
(see mpa_startup_fuzz.cpp). Run from anywhere; rewrites the files in place.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REQ = "4d50412049442052 6571204672616d65"
REP = "4d50412049442052 6570204672616d65"

FPDU = {
    "v09_write_rtr_crc": "000e c140 00000001 0000000000000000 ebd34c5f",
    "v09_write_rtr_nocrc": "000e c140 00000001 0000000000000000 00000000",
    "v10_read_rtr": "002e 4141 00000000 00000001 00000001 00000000 00000000 0000000000000000"
                    " 00000000 00000001 0000000000000000 ba10e3c9",
    "v11_read_resp0": "000e c142 00000000 0000000000000000 6975d6ca",
    "v12_send_hello": "0017 4143 00000000 00000000 00000001 00000000 68656c6c6f 000000 b990b10c",
    "v13_send_inv": "0013 4144 abcdef01 00000000 00000001 00000000 78 000000 bd34de32",
    "v14_read_req": "002e 4141 00000000 00000001 00000001 00000000 00001111 0000000000002000"
                    " 00000008 00002222 0000000000003000 26425da6",
    "v14_read_resp": "0016 c142 00001111 0000000000002000 4142434445464748 e491c320",
    "v20_terminate_hdr": "002a 4147 00000000 00000002 00000001 00000000 1202c000 0076 4143"
                         " 00000000 00000000 00000004 00000000 096f36ad",
    "v21_terminate_ulp": "0016 4147 00000000 00000002 00000001 00000000 00ff0000 51896a8c",
    "v21_terminate_op": "0016 4147 00000000 00000002 00000001 00000000 02060000 6f77b973",
    "v23_fetchadd": "0046 414a 00000000 00000001 00000002 00000000 00000000 00000007 00001234"
                    " 0000000000010000 0000000000000005 0000000000000000 0000000000000000"
                    " 0000000000000000 8e7e7aee",
    "v23_cmpswap": "0046 414a 00000000 00000001 00000003 00000000 00000002 00000008 00001234"
                   " 0000000000010008 0000000000000099 ffffffffffffffff 0000000000000042"
                   " ffffffffffffffff 929b0208",
    "v23_atomic_resp": "001e 414b 00000000 00000003 00000001 00000000 00000007"
                       " 0000000000000041 1420b003",
    "v23_immediate": "001a 4148 00000000 00000000 00000002 00000000 0102030405060708 a98a5e54",
}

MPA = {
    "v02_siw_request": (0, REQ + "10020004 00100010"),
    "v03_chelsio_request": (0, REQ + "50020004 80014001"),
    "v04_siw_reply": (1, REP + "50020004 80014001"),
    "v06_reject_rev1": (1, REP + "20010000"),
    "v07_reject_markers": (1, REP + "70020004 00000000"),
    "v07_marker_request": (0, REQ + "d0020004 00100010"),
    "v08_pd513": (0, REQ + "00010201" + "00" * 16),
    "v08_rev3": (0, REQ + "00030000"),
    "pd_request": (0, REQ + "1002000b 00100010 01020304050607"),
    # An initiator's view: siw Reply followed at once by a responder FPDU.
    "reply_then_fpdu": (1, REP + "50020004 80014001" + FPDU["v09_write_rtr_crc"]),
}


def unhex(s):
    return bytes.fromhex(s.replace(" ", ""))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    fdir = os.path.join(HERE, "corpus", "fpdu")
    mdir = os.path.join(HERE, "corpus", "mpa")
    os.makedirs(fdir, exist_ok=True)
    os.makedirs(mdir, exist_ok=True)
    stream = b""
    for i, (name, hx) in enumerate(FPDU.items()):
        crc = 0 if name.endswith("nocrc") else 1
        write(os.path.join(fdir, name), bytes([crc | 2 | (i << 2), 0]) + unhex(hx))
        stream += unhex(hx) if crc else b""
    write(os.path.join(fdir, "all_crc_stream"), bytes([1 | 2 | (5 << 2), 0]) + stream)
    write(os.path.join(fdir, "all_stream_cap1454"), bytes([1 | 2, 1]) + stream)
    for i, (name, (kind, hx)) in enumerate(MPA.items()):
        write(os.path.join(mdir, name), bytes([kind | (i << 1)]) + unhex(hx))


if __name__ == "__main__":
    main()
