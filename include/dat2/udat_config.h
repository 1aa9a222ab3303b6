/*
 * udat_config.h - API version and thread-safety level a uDAPL consumer asks for.
 *
 * dat_ia_open() (a macro, see dat.h) passes these to dat_ia_openv(); the registry
 * only opens an IA whose dat.conf entry names the same version and thread safety,
 * which is why deployed entries read "u2.0 nonthreadsafe".
 */
#ifndef _UDAT_CONFIG_H_
#define _UDAT_CONFIG_H_

#define DAT_VERSION_MAJOR 2
#define DAT_VERSION_MINOR 0

/*
 * The reference implementation asks for a non-thread-safe provider; a consumer
 * that needs a thread-safe one defines DAT_THREADSAFE to DAT_TRUE before
 * including any DAT header.
 */
#ifndef DAT_THREADSAFE
#define DAT_THREADSAFE DAT_FALSE
#endif

/* Extensions are part of the ABI (DAT_PROVIDER slot, extension event data). */
#ifndef DAT_EXTENSIONS
#define DAT_EXTENSIONS 1
#endif

#endif /* _UDAT_CONFIG_H_ */
