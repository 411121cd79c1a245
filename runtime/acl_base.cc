// acl_base.h's functions, which CANN's libascendcl exports (so they belong to
// the library actgrad_acl_cpu): element sizes and the last error's message.
#include "acl/acl_base.h"
#include "runtime/error.h"
#include "runtime/raw_enum.h"

using actgrad::rt::RawEnum;

extern "C" {

size_t aclDataTypeSize(aclDataType t) {
  switch (RawEnum(t)) {  // any int may arrive here: no enum load
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;
  }
}

// The runtime's and the aclnn ops' messages (runtime/error.h) are one
// thread-local record.
const char* aclGetRecentErrMsg(void) { return actgrad::rt::RecentError(); }

}  // extern "C"
