/*
 * dat_registry.h - what a DAT provider sees of the registry (libdat2).
 *
 * Providers include this (consumers do not). The registry loads a provider
 * library named in dat.conf on the first dat_ia_open of one of its IA names,
 * calls its exported dat_provider_init(), which registers a DAT_PROVIDER for
 * exactly that name; dat_provider_fini() runs after the last close, before
 * the library is unloaded, and should remove the registration again.
 */
#ifndef _DAT_REGISTRY_H_
#define _DAT_REGISTRY_H_

#if !defined(_UDAT_H_) && !defined(_KDAT_H_)
#include "udat.h"
#endif

#include "udat_redirection.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Register / unregister the table serving one (IA name, version, thread
 * safety). The info must equal what consumers ask dat_ia_openv for. */
extern DAT_RETURN DAT_API dat_registry_add_provider(const DAT_PROVIDER *,
                                                    const DAT_PROVIDER_INFO *);
extern DAT_RETURN DAT_API dat_registry_remove_provider(const DAT_PROVIDER *,
                                                       const DAT_PROVIDER_INFO *);

/* The entry points a loadable provider exports, by name. */
#define DAT_PROVIDER_INIT_FUNC_NAME dat_provider_init
#define DAT_PROVIDER_FINI_FUNC_NAME dat_provider_fini
#define DAT_PROVIDER_INIT_FUNC_STR "dat_provider_init"
#define DAT_PROVIDER_FINI_FUNC_STR "dat_provider_fini"

/* init(info, instance data: the dat.conf "ia_params" string) */
typedef void(DAT_API *DAT_PROVIDER_INIT_FUNC)(const DAT_PROVIDER_INFO *, const char *);
typedef void(DAT_API *DAT_PROVIDER_FINI_FUNC)(const DAT_PROVIDER_INFO *);

/* Whether two IAs share hardware (for consumer-built high availability). */
typedef enum dat_ha_relationship {
    DAT_HA_FALSE,
    DAT_HA_TRUE,
    DAT_HA_UNKNOWN,     /* a provider cannot tell */
    DAT_HA_CONFLICTING, /* the two providers disagree */
    DAT_HA_EXTENSION_BASE
} DAT_HA_RELATIONSHIP;

extern DAT_RETURN DAT_API dat_registry_providers_related(const DAT_NAME_PTR, const DAT_NAME_PTR,
                                                         DAT_HA_RELATIONSHIP *);

#ifdef __cplusplus
}
#endif

#endif /* _DAT_REGISTRY_H_ */
