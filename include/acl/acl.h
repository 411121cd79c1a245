/* actgrad: CANN's umbrella header, as a CANN program includes it. */
#ifndef ACTGRAD_ACL_ACL_H_
#define ACTGRAD_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#define ACL_MAJOR_VERSION 8
#define ACL_MINOR_VERSION 0
#define ACL_PATCH_VERSION 0

#endif
