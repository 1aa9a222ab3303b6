/*
 * rnicpi_open.c - a consumer of the installed libsoftrnic: creates a software RNIC
 * instance, opens it through RNICPI and prints the instance's name and what
 * ri_rnic_query reports as its vendor information. Exit 0 on success.
 */
#include <softrnic/softrnic.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const char *name = "install-check";
    ri_vp_handle_t vp;
    ri_rnic_handle_t rnic;
    ri_err_data_t err;
    uint_t size = 0;

    if (softrnic_vp_create(name, &vp) != RI_RET_SUCCESS) return 1;
    if (ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, NULL, &err) != RI_RET_SUCCESS) return 1;
    if (ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, NULL, NULL, &err) != RI_RET_SUCCESS)
        return 1;

    /* The first call reports the size the attributes need (RI_RET_BUFFER_TOO_SMALL). */
    ri_rnic_query(rnic, RI_QUERY_RNIC_PORT_INFO, NULL, &size, &err);
    ri_rnic_attr_t *attr = malloc(size);
    if (attr == NULL ||
        ri_rnic_query(rnic, RI_QUERY_RNIC_PORT_INFO, attr, &size, &err) != RI_RET_SUCCESS)
        return 1;
    printf("rnic %s: %s, %u QPs\n", name, attr->addl_vendor_info, attr->max_qps);

    free(attr);
    if (ri_rnic_free_hdl(vp, rnic, &err) != RI_RET_SUCCESS) return 1;
    if (ri_rnic_close(vp, &err) != RI_RET_SUCCESS) return 1;
    return softrnic_vp_destroy(vp) == RI_RET_SUCCESS ? 0 : 1;
}
