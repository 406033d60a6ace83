// Exports Scripted as libscripted.so, plugin "scripted".
#include <warren/sdk.h>

#include "scripted.h"

WARREN_PLUGIN(warren::test_plugins::Scripted, "scripted", "1.0.0")
