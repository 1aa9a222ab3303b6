#!/usr/bin/env python3
"""Writes the fuzz seed corpora from the iWARP brief's section 8 vectors.

fuzz/corpus/fpdu/*: byte 0 = options (bit 0 CRC, bit 1 RFC 7306, bits 2-7 chunk seed),
byte 1 = receive cap selector (0 = 65535), then FPDU bytes (see fpdu_decoder_fuzz.cpp).
fuzz/corpus/mpa/*: byte 0 = bit 0 Reply expected, bits 1-7 chunk seed, then the frame
(see mpa_startup_fuzz.cpp).
fuzz/corpus/mad/*: whole 256-byte MADs of each class (see mad_fuzz.cpp), from the layouts
pinned by tests/mad/.
fuzz/corpus/dat_conf/*: dat.conf text: the lines the provider ships (src/api/dat/provider/
dat.conf.in), Debian's, the quoting and comment forms dat_conf.hpp describes, a line over
the length limit.
Run from anywhere; rewrites the files in place. The shm_ring and shm_hello corpora are
written by the production encoders instead: build shm_corpus_gen (fuzz/CMakeLists.txt) and
run `shm_corpus_gen fuzz/corpus`.
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

PORT_INFO = ("0102030405060708 fe80000000000000 0a0b 0c0d 11223344 5566 7788 99a1a2a3"
             " 34528517 5c49b1b2 b364b34a c1c2c3c4 c5c62092 11dee1e2 00f1f2f3 00000000")
PATH_RECORD = ("0102030405060708 101112131415161718191a1b1c1d1e1f"
               " 202122232425262728292a2b2c2d2e2f 3132 3334 8abcde47 48c98a8b 000d8450 d2570000"
               " 00000000")
MCMEMBER = ("101112131415161718191a1b1c1d1e1f 202122232425262728292a2b2c2d2e2f 31323334 c001"
            " 8439 8a8b 50d2 abcdef47 21800000")
CM_REQ = ("11223344 00000000 0102030405060708 1112131415161718 00000000 21222324"
          " 31323334 35363738 414243ab 51525375 80014e9b 61626364"
          " 707172737475767778797a7b7c7d7e7f 808182838485868788898a8b8c8d8e8f abcde02a 9192a898"
          " 65666768 a0a1a2a3a4a5a6a7a8a9aaabacadaeaf b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
          " 12345005 c1c230f8")

# Whole MADs: header, then the class's layout; each is padded with zeros to 256 bytes.
MAD = {
    "smp_dr_portinfo_getresp": "01810181 80000203 0000000000000001 0015 0000 00000001"
                               " 0000000000000000 ffff 0102" + " 00" * 28 + " " + PORT_INFO
                               + " 00010200" + " 00" * 60 + " 00020100",
    "smp_lid_nodeinfo_get": "01010101 00000000 0000000000000002 0011 0000 00000000",
    "sa_pathrecord_getresp": "01030281 00000000 0000000000000003 0035 0000 00000000"
                             " 00000000 00000000 00000000 0000 0000 00000000000030cc"
                             + " " + PATH_RECORD,
    "sa_mcmember_set": "01030202 00000000 0000000000000004 0038 0000 00000000"
                       " 00000000 00000000 00000000 0000 0000 000000000001d0c7"
                       + " " + MCMEMBER,
    "sa_nodes_rmpp_data": "01030292 00000000 0000000000000005 0011 0000 00000000"
                          " 0101 97 00 00000001 000000c8 0000000000000000 000e 0000"
                          " 0000000000000000",
    "cm_req": "01070203 00000000 0000000000000006 0010 0000 00000000 " + CM_REQ,
    "cm_rej": "01070203 00000000 0000000000000007 0012 0000 00000000"
              " 01020304 05060708 8090001c",
    "cm_sidr_rep": "01070203 00000000 0000000000000008 0018 0000 00000000"
                   " 01020304 02480000 21222300 3132333435363738 41424344",
    "pma_portcounters": "01040181 00000000 0000000000000009 0012 0000 00000000" + " 00" * 40
                        + " 00010203 04050607 08090a0b 0c0d0e0f 101100ab 00001415 21222324"
                          " 31323334 41424344 51525354 61626364",
}

DAT_CONF = {
    "shipped": open(os.path.join(HERE, "..", "src", "api", "dat", "provider", "dat.conf.in"))
    .read().replace("@DAPL_LIB@", "libdaplsoftrnic.so.2"),
    "debian": 'ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""\n'
              'ofa-v2-mlx4_0-1 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0'
              ' "mlx4_0 1" ""\n'
              'OpenIB-cma u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 "ib0 0" ""\n',
    "quoting": '# header\n\n'
               '  a k1.12 threadsafe nondefault /x/lib.so my.prov.3.4 "say \\"hi\\" \\\\ #no"'
               ' plain # trailing\n'
               'b\tu2.0\tnonthreadsafe\tdefault\tl.so\tp.1.0\t""\t""\r\n'
               'c u2.0 nonthreadsafe default l.so p.1.0 unquoted ""',
    "malformed": 'short u2.0 nonthreadsafe default\n'
                 'quote u2.0 nonthreadsafe default l.so p.1.0 "unterminated ""\n'
                 'ver u2.0 nonthreadsafe default l.so dapl.x.0 "" ""\n'
                 'api u999999999.0 nonthreadsafe default l.so p.1.0 "" ""\n',
    # A line just over kMaxConfLineLength between two good ones (and libFuzzer's -max_len
    # grows to the longest seed, so lines that long are explored at all).
    "long_line": 'a u2.0 nonthreadsafe default l.so p.1.0 "" ""\n'
                 'long u2.0 nonthreadsafe default l.so p.1.0 "' + "x" * (16 * 1024) + '" ""\n'
                 'b u2.0 nonthreadsafe default l.so p.1.0 "" ""\n',
}


def unhex(s):
    return bytes.fromhex(s.replace(" ", ""))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    fdir = os.path.join(HERE, "corpus", "fpdu")
    mdir = os.path.join(HERE, "corpus", "mpa")
    madir = os.path.join(HERE, "corpus", "mad")
    os.makedirs(fdir, exist_ok=True)
    os.makedirs(mdir, exist_ok=True)
    os.makedirs(madir, exist_ok=True)
    stream = b""
    for i, (name, hx) in enumerate(FPDU.items()):
        crc = 0 if name.endswith("nocrc") else 1
        write(os.path.join(fdir, name), bytes([crc | 2 | (i << 2), 0]) + unhex(hx))
        stream += unhex(hx) if crc else b""
    write(os.path.join(fdir, "all_crc_stream"), bytes([1 | 2 | (5 << 2), 0]) + stream)
    write(os.path.join(fdir, "all_stream_cap1454"), bytes([1 | 2, 1]) + stream)
    for i, (name, (kind, hx)) in enumerate(MPA.items()):
        write(os.path.join(mdir, name), bytes([kind | (i << 1)]) + unhex(hx))
    for name, hx in MAD.items():
        mad = unhex(hx)
        assert len(mad) <= 256, name
        write(os.path.join(madir, name), mad + bytes(256 - len(mad)))
    ddir = os.path.join(HERE, "corpus", "dat_conf")
    os.makedirs(ddir, exist_ok=True)
    for name, text in DAT_CONF.items():
        write(os.path.join(ddir, name), text.encode())


if __name__ == "__main__":
    main()
