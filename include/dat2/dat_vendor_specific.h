/*
 * dat_vendor_specific.h - room for vendor additions to the common DAT interface.
 *
 * softrnic adds nothing here; the file exists because consumers and providers
 * include it by name.
 */
#ifndef _DAT_VENDOR_SPECIFIC_H_
#define _DAT_VENDOR_SPECIFIC_H_

#endif /* _DAT_VENDOR_SPECIFIC_H_ */
