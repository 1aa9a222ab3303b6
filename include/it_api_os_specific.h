/*
 * it_api_os_specific.h - the operating-system dependent part of IT-API 2.1.
 *
 * softrnic's own rendition of Appendix G.2 of The Open Group "Interconnect
 * Transport API (IT-API)" Version 2.1 for Linux.  <it_api.h> includes
 * it; a program may include it on its own for IT_NO_ADDR and
 * IT_INTERFACE_NAME_SIZE.  Decisions that differ from the printed header are
 * recorded in docs/spec-deviations.md.
 */
#ifndef IT_API_IT_API_OS_SPECIFIC_H_
#define IT_API_IT_API_OS_SPECIFIC_H_

/* The system headers the IT-API types are built from: struct in_addr and
 * struct in6_addr (network addresses, GIDs), size_t, NULL and the exact-width
 * integers. */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* "No address": the addr argument of it_lmr_create when the LMR is described by
 * an I/O buffer list, or an LMR with Relative Addressing and no base address
 * (IT-API L1004-L1006). */
#define IT_NO_ADDR NULL

/* Size of it_interface_t.name, terminating NUL included (IT-API L6080-L6082, L21804). */
#define IT_INTERFACE_NAME_SIZE 128

#endif /* IT_API_IT_API_OS_SPECIFIC_H_ */
