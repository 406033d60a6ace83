// Exports OrderEmail as liborder_email.so, plugin "order_email".
#include <warren/sdk.h>

#include "order_email.h"

WARREN_PLUGIN(livraria::OrderEmail, "order_email", "1.0.0")
