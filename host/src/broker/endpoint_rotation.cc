// See endpoint_rotation.h.
#include "broker/endpoint_rotation.h"

namespace warren::broker {

EndpointRotation::EndpointRotation(std::size_t endpoints) : count_(endpoints) {
  if (count_ == 0)
    throw std::invalid_argument("no broker endpoint to connect to");
}

}  // namespace warren::broker
