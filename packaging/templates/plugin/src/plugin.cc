// Exports MyPlugin as libmy_plugin.so, plugin "my_plugin" (the name a worker's `plugin` names).
#include <warren/sdk.h>

#include "my_plugin.h"

WARREN_PLUGIN(my_plugin::MyPlugin, "my_plugin", "1.0.0")
