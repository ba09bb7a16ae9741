"""contextd's JSON-RPC layer, owned end to end (pygls is no longer in the message path).

- `framing.py`     Content-Length frames: tolerant headers, a maximum size, resynchronizing
- `messages.py`    envelopes: request, notification, response or invalid, and error codes
- `connection.py`  one peer: lifecycle, dispatch, exactly one reply per id, our own requests
- `daemon.py`      what connections share: the sessions, settings, who hears which session
- `listen.py`      stdio (one client), TCP and Unix sockets (many), the idle grace period
- `shared.py`      `contextd serve --shared`: the per-user daemon, started on demand
"""
