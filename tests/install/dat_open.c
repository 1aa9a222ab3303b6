/*
 * dat_open.c - a consumer of the installed libdat2: lists the IAs of the static
 * registry (the dat.conf DAT_OVERRIDE names), then opens the IA named on the
 * command line through the provider that line names, prints the provider's name
 * and closes it. Exit 0 on success.
 */
#include <dat2/udat.h>
#include <stdio.h>
#include <string.h>

enum { kMaxProviders = 16 };

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s IA_NAME\n", argv[0]);
        return 2;
    }
    DAT_PROVIDER_INFO infos[kMaxProviders];
    DAT_PROVIDER_INFO *list[kMaxProviders];
    for (int i = 0; i < kMaxProviders; ++i)
        list[i] = &infos[i];
    DAT_COUNT count = 0;
    if (dat_registry_list_providers(kMaxProviders, &count, list) != DAT_SUCCESS) return 1;
    for (DAT_COUNT i = 0; i < count; ++i)
        printf("listed %s\n", infos[i].ia_name);

    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_RETURN status = dat_ia_open(argv[1], 8, &async_evd, &ia);
    if (status != DAT_SUCCESS) {
        const char *major = "?";
        const char *minor = "?";
        dat_strerror(status, &major, &minor);
        fprintf(stderr, "dat_ia_open(%s): %s %s\n", argv[1], major, minor);
        return 1;
    }
    DAT_PROVIDER_ATTR attr;
    memset(&attr, 0, sizeof attr);
    if (dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &attr) != DAT_SUCCESS) return 1;
    printf("opened %s: provider %s\n", argv[1], attr.provider_name);
    return dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG) == DAT_SUCCESS ? 0 : 1;
}
