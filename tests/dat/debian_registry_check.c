/*
 * debian_registry_check.c - Debian's libdat2.so.2 drives softrnic's test provider.
 *
 *   debian_registry_check LIBDAT2 PROVIDER
 *
 * Built against softrnic's dat2 headers and not linked with any libdat2: it
 * loads Debian's registry with dlopen, points it at a dat.conf naming the test
 * provider, and checks open, dispatch, close, unknown names and strerror. This
 * shows the headers' ABI and the provider contract match the deployed
 * registry. Exit 0 on success, 1 on a failed check, 77 when LIBDAT2 is missing.
 */
#include <dat2/dat_registry.h>
#include <dat2/udat.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_provider.h"

static int failures;
static char conf[4096]; /* the temporary dat.conf, removed at exit */

static void remove_conf(void) {
    if (conf[0] != '\0') unlink(conf);
}

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                              \
        }                                                                            \
    } while (0)

typedef DAT_RETURN (*openv_fn)(const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *, DAT_IA_HANDLE *,
                               DAT_UINT32, DAT_UINT32, DAT_BOOLEAN);
typedef DAT_RETURN (*close_fn)(DAT_IA_HANDLE, DAT_CLOSE_FLAGS);
typedef DAT_RETURN (*query_fn)(DAT_IA_HANDLE, DAT_EVD_HANDLE *, DAT_IA_ATTR_MASK, DAT_IA_ATTR *,
                               DAT_PROVIDER_ATTR_MASK, DAT_PROVIDER_ATTR *);
typedef DAT_RETURN (*pz_create_fn)(DAT_IA_HANDLE, DAT_PZ_HANDLE *);
typedef DAT_RETURN (*pz_free_fn)(DAT_PZ_HANDLE);
typedef DAT_RETURN (*strerror_fn)(DAT_RETURN, const char **, const char **);

/* dlsym returns an object pointer; ISO C has no cast to a function pointer,
 * so the bits are copied (the POSIX-sanctioned way). */
#define LOAD(var, library, name)                    \
    do {                                            \
        void *address_ = symbol((library), (name)); \
        memcpy(&(var), &address_, sizeof(var));     \
    } while (0)

static void *symbol(void *library, const char *name) {
    void *address = dlsym(library, name);
    if (address == NULL) {
        fprintf(stderr, "missing symbol %s\n", name);
        exit(1);
    }
    return address;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBDAT2 PROVIDER\n", argv[0]);
        return 1;
    }
    if (access(argv[1], R_OK) != 0) {
        printf("SKIP: %s is not installed\n", argv[1]);
        return 77;
    }

    const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(conf, sizeof conf, "%s/dat-debian-XXXXXX", tmp);
    int fd = mkstemp(conf);
    if (fd < 0) return 1;
    atexit(remove_conf);
    FILE *out = fdopen(fd, "w");
    fprintf(out, "# written by debian_registry_check\n");
    fprintf(out, "broken line\n");
    fprintf(out, "deb0 u2.0 nonthreadsafe default %s softrnic.0.1 \"dev 0\" \"\"\n", argv[2]);
    fclose(out);
    setenv("DAT_OVERRIDE", conf, 1);

    void *registry = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (registry == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    openv_fn ia_openv;
    close_fn ia_close;
    query_fn ia_query;
    pz_create_fn pz_create;
    pz_free_fn pz_free;
    strerror_fn str_error;
    LOAD(ia_openv, registry, "dat_ia_openv");
    LOAD(ia_close, registry, "dat_ia_close");
    LOAD(ia_query, registry, "dat_ia_query");
    LOAD(pz_create, registry, "dat_pz_create");
    LOAD(pz_free, registry, "dat_pz_free");
    LOAD(str_error, registry, "dat_strerror");

    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_RETURN status =
        ia_openv("deb0", 8, &evd, &ia, DAT_VERSION_MAJOR, DAT_VERSION_MINOR, DAT_THREADSAFE);
    CHECK(status == DAT_SUCCESS);

    /* The registry loaded the provider; keep it loaded to read its counters. */
    void *provider = dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD);
    CHECK(provider != NULL);
    if (provider == NULL || status != DAT_SUCCESS) return 1;
    DAT_TEST_PROVIDER_STATE_FUNC_T state_of;
    LOAD(state_of, provider, DAT_TEST_PROVIDER_STATE_FUNC);
    DAT_TEST_PROVIDER_STATE *state = state_of();
    CHECK(state->init_calls == 1);
    CHECK(strcmp(state->last_init_info.ia_name, "deb0") == 0);
    CHECK(state->last_init_info.dapl_version_major == 2);
    CHECK(strcmp(state->last_init_params, "dev 0") == 0);
    CHECK(state->open_calls == 1);
    CHECK(state->last_open_qlen == 8);

    DAT_PROVIDER_ATTR attr;
    memset(&attr, 0, sizeof attr);
    CHECK(ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &attr) == DAT_SUCCESS);
    CHECK(strcmp(attr.provider_name, "dat_test_provider") == 0);

    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    CHECK(pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK(strcmp(state->last_slot, "pz_create_func") == 0);
    CHECK(state->last_handle != ia); /* the registry passed the provider's own handle */
    CHECK(pz_free(pz) == DAT_SUCCESS);

    CHECK(ia_close(ia, DAT_CLOSE_ABRUPT_FLAG) == DAT_SUCCESS);
    CHECK(state->close_calls == 1);
    CHECK(state->fini_calls == 1);
    CHECK(DAT_GET_TYPE(ia_close(ia, DAT_CLOSE_ABRUPT_FLAG)) == DAT_INVALID_HANDLE);

    status = ia_openv("not-configured", 8, &evd, &ia, 2, 0, DAT_FALSE);
    CHECK(DAT_GET_TYPE(status) == DAT_PROVIDER_NOT_FOUND);
    const char *major = NULL;
    const char *minor = NULL;
    CHECK(str_error(status, &major, &minor) == DAT_SUCCESS);
    CHECK(major != NULL && strcmp(major, "DAT_PROVIDER_NOT_FOUND") == 0);

    dlclose(provider);
    if (failures == 0) printf("PASS: Debian's libdat2.so.2 drove the softrnic test provider\n");
    return failures == 0 ? 0 : 1;
}
