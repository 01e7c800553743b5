// Serving one accepted connection of the HttpServer (http_session.cpp): the
// Session, a template over the stream type, stays inside http_session.cpp;
// the acceptor (plain HTTP) and the TLS detector (HTTPS) start one through
// these two entry points.
#pragma once

#include <memory>

#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "web/server_state.hpp"

namespace hpo::web {

// Makes the connection's Session, remembers it for stop() and starts reading.
// `buffer`: bytes already read from the connection (the TLS detector's).
void start_session(boost::beast::tcp_stream&& stream, boost::beast::flat_buffer buffer,
                   ServerState* st, std::unique_ptr<LiveSlot> live);
// The same over TLS: the Session handshakes before its first read.
void start_session(boost::beast::ssl_stream<boost::beast::tcp_stream>&& stream,
                   boost::beast::flat_buffer buffer, ServerState* st,
                   std::unique_ptr<LiveSlot> live);

}  // namespace hpo::web
