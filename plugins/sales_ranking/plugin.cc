// Exports SalesRanking as libsales_ranking.so, plugin "sales_ranking".
#include <warren/sdk.h>

#include "sales_ranking.h"

WARREN_PLUGIN(livraria::SalesRanking, "sales_ranking", "1.0.0")
