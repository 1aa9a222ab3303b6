/*
 * udat_vendor_specific.h - room for vendor additions to the user-level DAT interface.
 *
 * softrnic adds nothing here; udat.h includes this file where vendor attributes
 * would go.
 */
#ifndef _UDAT_VENDOR_SPECIFIC_H_
#define _UDAT_VENDOR_SPECIFIC_H_

#include "dat_vendor_specific.h"

#endif /* _UDAT_VENDOR_SPECIFIC_H_ */
