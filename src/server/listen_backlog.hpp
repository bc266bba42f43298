#pragma once

namespace tessera {

// Debian's cpp-httplib 0.11 is compiled with a listen backlog of 5, so a burst of new
// connections overflows the accept queue and clients wait a second for a SYN retry.
// Linux lets listen() be called again on a listening socket to change its backlog: this
// finds this process's listening TCP socket on `port` and raises its backlog to
// `backlog`. Returns false if no such socket was found.
bool raise_listen_backlog(int port, int backlog);

}  // namespace tessera
