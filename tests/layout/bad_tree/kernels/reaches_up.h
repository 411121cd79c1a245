#include "tools/tune/tuner.h"
