/*
 * dat_platform_specific.h - host types under the DAT 2.0 interface (POSIX hosts).
 *
 * softrnic's rendition of the uDAPL 2.0 headers (DAT Collaborative, 2007), kept
 * binary- and source-compatible with the OFED/Debian dat2 headers that existing
 * uDAPL programs were compiled against. docs/spec-deviations.md ("uDAPL headers")
 * lists every place the printed specification and the deployed headers differ.
 *
 * Only POSIX hosts are described here: the fixed-width types come from
 * <stdint.h>, addresses are the host's struct sockaddr.
 */
#ifndef _DAT_PLATFORM_SPECIFIC_H_
#define _DAT_PLATFORM_SPECIFIC_H_

#if defined(_WIN32) || defined(_WIN64)
#error "softrnic's dat2 headers describe POSIX hosts only"
#endif

/* Consumers of the deployed headers get these for free; keep them coming. */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Buffer alignment that gives the best transfer performance (bytes). */
#ifndef DAT_OPTIMAL_ALIGNMENT
#define DAT_OPTIMAL_ALIGNMENT 256
#endif

#ifndef UINT64_C
#define UINT64_C(c) c##ULL
#endif

/* Host-order integers, pointers and counts used throughout the interface. */
typedef uint32_t DAT_UINT32;
typedef uint64_t DAT_UINT64;
typedef unsigned long long DAT_UVERYLONG; /* widest native unsigned integer */
typedef void *DAT_PVOID;
typedef int DAT_COUNT;
typedef DAT_UINT64 DAT_PADDR;
typedef int DAT_FD; /* a file descriptor (CNO proxies) */

/* Socket-style communicator of a CSP or an endpoint: the socket(2) triple. */
typedef struct dat_comm {
    int domain;
    int type;
    int protocol;
} DAT_COMM;

/* IA addresses are the host's socket addresses; the caller owns the storage. */
typedef struct sockaddr DAT_SOCK_ADDR;
typedef struct sockaddr_in6 DAT_SOCK_ADDR6;
#define DAT_AF_INET AF_INET
#define DAT_AF_INET6 AF_INET6

/* IA handles handed out by the registry are small integers. */
#define DAT_IA_HANDLE_TO_UL(a) (unsigned long)(a)
#define DAT_UL_TO_IA_HANDLE(a) (DAT_IA_HANDLE)(a)

/* Calling convention and export markers: nothing special on POSIX. */
#define DAT_API
#define DAT_EXPORT extern

/* Parameter-direction annotations some consumers write in their own code. */
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
#ifndef INOUT
#define INOUT
#endif

#endif /* _DAT_PLATFORM_SPECIFIC_H_ */
