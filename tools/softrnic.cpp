// The `softrnic` command: information about the software RNIC and a perftest-like benchmark
// of its transports (tools/bench/): the in-process loopback transport, and TCP/iWARP
// between two processes (on this machine, or on two hosts with --server/--connect), read
// against raw TCP measured in the same run.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "bench/cli.hpp"
#include "doctor.hpp"
#include "info.hpp"
#include "loopback_session.hpp"
#include "stats.hpp"

using namespace softrnic::tools;
namespace sb = softrnic::bench;

namespace {

void usage(FILE *out) {
    std::fprintf(
        out,
        "usage: softrnic <command> [options]\n"
        "commands:\n"
        "  bench   measure send/recv ping-pong, RDMA write and RDMA read: latency p50/p99,\n"
        "          bandwidth with a window of operations in flight, message rate\n"
        "  info    print the attributes ri_rnic_query reports for each kind of instance:\n"
        "          an iWARP RNIC, and an InfiniBand HCA with its ports (state, LIDs, GIDs,\n"
        "          P_Keys)\n"
        "  info --env\n"
        "          list every SOFTRNIC_* environment variable: default, value now, meaning\n"
        "          (info and info --env take --json for one JSON object on stdout)\n"
        "  stats [PID...] [--json]\n"
        "          the counters of running processes that use softrnic (each keeps them in\n"
        "          /dev/shm/softrnic-stats.PID unless SOFTRNIC_STATS=0): completions by\n"
        "          operation and bytes, errors, async events, objects, connections by\n"
        "          transport, TCP bytes, shm doorbells, wake-ups. Without PIDs, every process\n"
        "  doctor [--connections N] [--port N] [--json]\n"
        "          check this machine for what softrnic needs, each missing thing with its\n"
        "          fix: cross-memory attach between processes, sealed memfd segments and\n"
        "          pidfds, descriptors for N connections (default 1000), locked memory,\n"
        "          dat.conf ($DAT_OVERRIDE or /etc/dat.conf) naming a provider that loads,\n"
        "          bench's ports N..N+2 (default 18515) free; exit 1 when something fails\n"
        "  dat-conf [--prefix P] [--interface IF]\n"
        "          print the dat.conf lines of the softrnic DAT provider (IA names softrnic,\n"
        "          softrnic-tcp, softrnic-shm) for an install prefix (default: this build\n"
        "          tree's library) and interface (default lo)\n"
        "\n"
        "bench, where it runs:\n"
        "  (nothing)          two processes on this machine: this command starts a server\n"
        "                     process (itself, on 127.0.0.1 and an ephemeral port) and is\n"
        "                     its client\n"
        "  --server [ADDR]    be the server for one client; listen on ADDR (default: all\n"
        "                     IPv4 addresses)\n"
        "  --connect HOST     be the client of a server started with --server on HOST\n"
        "  --port N           server control port (default %u); the connection manager\n"
        "                     listens on N+1 and the raw TCP reference on N+2. 0: all\n"
        "                     ephemeral (the server prints the control port)\n"
        "  --transport T      auto (default): shm for the two processes started on this\n"
        "                     host, tcp with --server/--connect\n"
        "                     shm: shared memory between two processes (CMA single copy)\n"
        "                     tcp: TCP/iWARP (connection manager, MPA v2) between two processes,\n"
        "                     with the raw TCP ping-pong/stream references and ratios\n"
        "                     loopback: in-process, two RNIC instances in this process\n"
        "bench, what it measures:\n"
        "  --size N[,N...]    message sizes in bytes, repeatable\n"
        "                     (default 8,64,4096,65536,1048576)\n"
        "  --ops LIST         any of send,write,read (default all three)\n"
        "  --iters N          operations per measurement (default: sized by --time)\n"
        "  --time S           seconds per measurement when --iters is not given (default 0.2)\n"
        "  --window N         operations in flight in bandwidth runs (default 32)\n"
        "  --connections N    instead of the data tests: connection set-up, N connections\n"
        "                     (1-10000) between the two processes per round, as Debian's\n"
        "                     dtestcm does through uDAPL: the client connects in bursts,\n"
        "                     each connection's QP goes to RTS as it is established; the\n"
        "                     server takes each request in turn and accepts it. Reported:\n"
        "                     client time per connection (p50/p99 columns: the round's mean)\n"
        "                     and connections per second (Mmsg/s column, in millions)\n"
        "  --burst B          connects issued before waiting for their outcomes (default\n"
        "                     100, dtestcm's)\n"
        "  --bw-wait W        how bandwidth runs wait for completions: yield (default:\n"
        "                     busy-poll ri_cq_poll, sched_yield() when it comes back empty)\n"
        "                     or spin (busy-poll only)\n"
        "  --lat-wait W       the same for ping-pongs and single reads: spin (default, like\n"
        "                     the raw TCP reference) or yield (diagnostic: how much of the\n"
        "                     latency is the scheduler preempting a spinning thread), or\n"
        "                     memory: spin, and the RDMA Write ping-pong polls only the\n"
        "                     last byte of the peer's write, taking its own write's\n"
        "                     completion right after posting it (dtest -W, perftest)\n"
        "  --rounds N         repeat the whole list N times, alternating its order, and report\n"
        "                     medians (default 3 for two-process runs, 1 for loopback)\n"
        "  --no-ref           skip the raw TCP references (and the ratios)\n"
        "  --crc              ask for MPA CRC32c on the TCP transport (default off)\n"
        "  --json             machine-readable output on stdout\n"
        "  --no-progress      never draw the progress bar (it is drawn on stderr only when\n"
        "                     stderr is a terminal and the run takes more than a second)\n"
        "\n"
        "Latency is one-way (round trip / 2) for the send/recv and RDMA write ping-pongs,\n"
        "whose waiting side busy-polls, and a round trip for RDMA read; GB/s = 1e9 bytes/s.\n"
        "Two-process runs also measure a raw TCP ping-pong (8 B, busy-poll) and a raw TCP\n"
        "stream (1 MiB) in the same processes, interleaved with the softrnic rows, and print\n"
        "latency ratio = softrnic 8 B send ping-pong / raw TCP ping-pong (target <= 1.3) and\n"
        "bandwidth ratio = softrnic 1 MiB RDMA write / raw TCP stream (target >= 0.85).\n",
        static_cast<unsigned>(sb::kDefaultPort));
}

int bench(const sb::Options &o) {
    if (o.transport == "loopback") {
        if (o.role != sb::Role::Both) {
            std::fprintf(stderr,
                         "softrnic: transport 'loopback' is in-process only: no --server or "
                         "--connect\n");
            return 2;
        }
        if (o.connections) {
            std::fprintf(stderr,
                         "softrnic: --connections measures connection set-up between two "
                         "processes: not with transport 'loopback'\n");
            return 2;
        }
        return sb::run_loopback(o);
    }
    if (o.transport != "auto" && o.transport != "tcp" && o.transport != "shm") {
        std::fprintf(stderr, "softrnic: unknown transport '%s' (auto|tcp|loopback|shm)\n",
                     o.transport.c_str());
        return 2;
    }
    if (o.role == sb::Role::Server) return sb::run_server(o);
    return sb::run_client(o);
}

// The dat.conf line format Debian's libdat2 reads: IA name, API version, thread safety,
// default flag, library path, provider version, instance data (interface and port), and
// platform data.
int dat_conf(int argc, char **argv) {
    std::string prefix, iface = "lo";
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if ((a == "--prefix" || a == "--interface") && i + 1 < argc) {
            (a == "--prefix" ? prefix : iface) = argv[++i];
        } else {
            std::fprintf(stderr, "softrnic dat-conf: unknown or incomplete option '%s'\n",
                         a.c_str());
            return 2;
        }
    }
    std::string lib = prefix.empty()
                          ? std::string(SOFTRNIC_DAPL_BUILD_LIB)
                          : prefix + "/" + SOFTRNIC_INSTALL_LIBDIR + "/libdaplsoftrnic.so.2";
    for (const char *name : {"softrnic", "softrnic-tcp", "softrnic-shm"})
        std::printf("%s u2.0 nonthreadsafe default %s dapl.2.0 \"%s 0\" \"\"\n", name, lib.c_str(),
                    iface.c_str());
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    std::string cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        usage(stdout);
        return 0;
    }
    if (cmd == "dat-conf") return dat_conf(argc, argv);
    if (cmd == "doctor") return doctor(argc, argv);
    if (cmd == "stats") return stats(argc, argv);
    if (cmd == "info") {
        bool env = false, json = false;
        for (int i = 2; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--env") {
                env = true;
            } else if (a == "--json") {
                json = true;
            } else {
                std::fprintf(stderr, "softrnic info: unknown option '%s' (--env, --json)\n",
                             a.c_str());
                return 2;
            }
        }
        try {
            return env ? info_env(json) : info(json);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "softrnic info: %s\n", e.what());
            return 1;
        }
    }
    sb::Options o;
    bool sizes_given = false;
    bool role_given = false;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "softrnic: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        auto bad = [&](const std::string &v) {
            std::fprintf(stderr, "softrnic: bad value '%s' for %s\n", v.c_str(), a.c_str());
            return 2;
        };
        uint64_t n = 0;
        if (a == "--json") {
            o.json = true;
        } else if (a == "--size") {
            if (!sizes_given) o.sizes.clear();
            sizes_given = true;
            std::string v = value();
            for (const std::string &tok : sb::split_list(v)) {
                if (!sb::parse_u64(tok, n) || n == 0 || n > (1ull << 30)) return bad(tok);
                o.sizes.push_back(static_cast<size_t>(n));
            }
        } else if (a == "--ops") {
            o.ops.clear();
            std::string v = value();
            for (const std::string &tok : sb::split_list(v)) {
                if (tok == "send")
                    o.ops.push_back(sb::Op::Send);
                else if (tok == "write")
                    o.ops.push_back(sb::Op::Write);
                else if (tok == "read")
                    o.ops.push_back(sb::Op::Read);
                else
                    return bad(tok);
            }
        } else if (a == "--iters") {
            std::string v = value();
            if (!sb::parse_u64(v, n) || n == 0) return bad(v);
            o.iters = n;
        } else if (a == "--time") {
            std::string v = value();
            char *end = nullptr;
            o.seconds = std::strtod(v.c_str(), &end);
            if (!end || *end || !(o.seconds > 0) || o.seconds > 600) return bad(v);
        } else if (a == "--window") {
            std::string v = value();
            if (!sb::parse_u64(v, n) || n == 0 || n > 1024) return bad(v);
            o.window = static_cast<unsigned>(n);
        } else if (a == "--connections") {
            std::string v = value();
            if (!sb::parse_u64(v, n) || n == 0 || n > 10000) return bad(v);
            o.connections = static_cast<uint32_t>(n);
        } else if (a == "--burst") {
            std::string v = value();
            if (!sb::parse_u64(v, n) || n == 0 || n > 10000) return bad(v);
            o.burst = static_cast<uint32_t>(n);
        } else if (a == "--bw-wait") {
            std::string v = value();
            if (v != "yield" && v != "spin") return bad(v);
            o.wait.bw_yield = v == "yield";
        } else if (a == "--lat-wait") {
            std::string v = value();
            if (v != "yield" && v != "spin" && v != "memory") return bad(v);
            o.wait.lat_yield = v == "yield";
            o.wait.lat_memory = v == "memory";
        } else if (a == "--rounds") {
            std::string v = value();
            if (!sb::parse_u64(v, n) || n == 0 || n > 1000) return bad(v);
            o.rounds = static_cast<unsigned>(n);
        } else if (a == "--transport") {
            o.transport = value();
        } else if (a == "--server") {
            if (role_given) return bad(a);
            role_given = true;
            o.role = sb::Role::Server;
            if (i + 1 < argc && argv[i + 1][0] != '-') o.host = argv[++i];
        } else if (a == "--connect") {
            if (role_given) return bad(a);
            role_given = true;
            o.role = sb::Role::Client;
            o.host = value();
        } else if (a == "--port") {
            std::string v = value();
            if (!sb::parse_u64(v, n) || n > 65533) return bad(v);
            o.port = static_cast<uint16_t>(n);
            o.port_set = true;
        } else if (a == "--ready-fd") {  // internal: the server a plain `bench` spawns
            std::string v = value();
            if (!sb::parse_u64(v, n) || n > 1u << 20) return bad(v);
            o.ready_fd = static_cast<int>(n);
        } else if (a == "--no-ref") {
            o.refs = false;
        } else if (a == "--crc") {
            o.crc = true;
        } else if (a == "--no-progress") {
            o.progress = false;
        } else if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else {
            std::fprintf(stderr, "softrnic: unknown option '%s' (see softrnic --help)\n",
                         a.c_str());
            return 2;
        }
    }
    if (o.ready_fd >= 0 && o.role != sb::Role::Server) {
        std::fprintf(stderr, "softrnic: --ready-fd is only for --server\n");
        return 2;
    }
    try {
        if (cmd == "bench") return bench(o);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "softrnic: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "softrnic: unknown command '%s'\n", cmd.c_str());
    usage(stderr);
    return 2;
}
