// Exports OrdersProjection as liborders_projection.so, plugin "orders_projection".
#include <warren/sdk.h>

#include "orders_projection.h"

WARREN_PLUGIN(livraria::OrdersProjection, "orders_projection", "1.0.0")
