/*
 * it_open.c - a consumer of the installed libitapi: lists the IT-API interfaces, opens the
 * first one as an IA, queries it and frees it. Prints "interface NAME" per interface and
 * "opened NAME: N spigots". Exit 0 on success.
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <stdio.h>

int main(void) {
    it_interface_t ifs[8];
    size_t n = 8, total = 0;
    it_ia_handle_t ia;
    it_ia_info_t *info = NULL;
    size_t i;

    it_interface_list(ifs, &n, &total);
    if (n == 0) return 1;
    for (i = 0; i < n; ++i) printf("interface %s\n", ifs[i].name);
    if (it_ia_create(ifs[0].name, ifs[0].major_version, ifs[0].minor_version, &ia) != IT_SUCCESS)
        return 1;
    if (it_ia_query(ia, &info) != IT_SUCCESS || info == NULL) return 1;
    printf("opened %s: %lu spigots\n", ifs[0].name, (unsigned long)info->num_spigots);
    it_ia_info_free(info);
    return it_ia_free(ia) == IT_SUCCESS ? 0 : 1;
}
