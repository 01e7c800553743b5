// HTTPS for the HttpServer (server_tls.cpp): the TLS context made from
// ServerOptions' certificate and key, and the detector that tells a TLS
// client from plain HTTP sent to the HTTPS port. Apart from the acceptor so
// that everything about certificates and handshakes is in one place.
#pragma once

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "core/result.hpp"
#include "web/server_state.hpp"

namespace hpo::web {

// TLS 1.2 and newer with the certificate chain and key of ServerOptions, put
// in st->tls; nothing when neither file is set. kInvalidArgument naming
// --tls-cert or --tls-key when they cannot be loaded.
Status load_tls(ServerState* st);

// Reads the first bytes of an accepted connection on an HTTPS port and hands
// it to a TLS Session, or answers plain HTTP with a 400; remembered for stop().
void start_tls_detector(boost::asio::ip::tcp::socket&& socket, ServerState* st,
                        std::unique_ptr<LiveSlot> live);

}  // namespace hpo::web
