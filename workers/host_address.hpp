// The address this host uses to reach another: the pool's other hosts reach
// it there too (in the usual flat cluster network), so a worker's default
// --address for the ranks of data-parallel trials that span hosts.
#pragma once

#include <string>

namespace hpo::workers {

// The local IPv4/IPv6 address of the route to host:port (a UDP socket
// connected there; nothing is sent), as text; "" when there is no route or
// the host does not resolve.
std::string address_towards(const std::string& host, int port);

}  // namespace hpo::workers
