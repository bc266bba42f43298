#pragma once

// Why an HTTP call got no answer, in words a user can act on. cpp-httplib reports a failed
// call as one enum value ("Connection", "Read", ...); for a connection that could not be
// made, no_answer_reason() connects to the address once more itself to name the operating
// system's reason (connection refused, no route to host, timed out, unknown host).
//
// Stateless; safe to call from any thread.

#include <httplib.h>

#include <string>

namespace tessera {

// "could not connect to 127.0.0.1:8000: Connection refused (is a tessera server
// listening there?)", "the connection closed before an answer came (read failed)", ...
std::string no_answer_reason(httplib::Error error, const std::string& host, int port);

}  // namespace tessera
